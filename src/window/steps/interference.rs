//! Another writer during the window: the old gateway re-created, the targets changed,
//! and one verify round.

use super::*;

/// Run `wait` while watching that `kind/name`, which this window deleted, does not
/// appear again (issue 9 item 3): a GitOps controller's self-heal re-creating it would
/// take the pinned floating IP back, and no wait would ever end well. When it appears,
/// the wait stops at once with who wrote it (field managers, tracking labels) and what
/// to do; `verb` is the command that resumes (`cutover` or `rollback`).
pub(crate) async fn unless_recreated<T>(
    cluster: &Cluster,
    kind: &str,
    name: &str,
    verb: &str,
    wait: impl std::future::Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let names = [name.to_string()];
    let resource = objects::resource(kind);
    // Bounded like every wait: a week is longer than any window (`positive_duration`).
    let sentinel = watch::until(
        cluster,
        &resource,
        &names,
        Duration::from_secs(7 * 24 * 3600),
        |objs| match objs.first().and_then(|(_, o)| *o) {
            Some(o) if o.pointer("/metadata/deletionTimestamp").is_none() => State::Done,
            _ => State::Waiting(String::new()),
        },
        |_| {},
    );
    tokio::select! {
        r = wait => r,
        seen = sentinel => {
            match seen {
                Ok(watch::Outcome::Done) => {}
                Ok(watch::Outcome::TimedOut(_) | watch::Outcome::Over(_)) => {
                    return std::future::pending().await;
                }
                Err(e) => return Err(e.into()),
            }
            let obj = objects::get(cluster, kind, name).await?.unwrap_or_default();
            Err(recreated(cluster, kind, name, verb, &obj))
        }
    }
}

/// [`unless_recreated`] for the old IPsecGateway, and more (issue 11 item 3): once the
/// window has applied them, the new objects (`targets`, the VPNGateway and its
/// VPNPeers) must stay as applied. Someone deleting one, or changing a field of its spec
/// (a GitOps prune, a self-heal to another source, a person), stops the wait at once
/// with who wrote the object, what happened to it and the next command, instead of
/// waiting out a timeout on a lost cause.
pub(crate) async fn unless_interfered<T>(
    cluster: &Cluster,
    name: &str,
    targets: &[Value],
    wait: impl std::future::Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let sentinels = ["VPNGateway", "VPNPeer"].map(|kind| {
        let mine: Vec<&Value> = targets.iter().filter(|t| t["kind"] == kind).collect();
        changed(cluster, kind, mine)
    });
    let [gateway, peers] = sentinels;
    let (gateway, peers) = (Box::pin(gateway), Box::pin(peers));
    tokio::select! {
        r = unless_recreated(cluster, "IPsecGateway", name, "cutover", wait) => r,
        e = gateway => Err(e),
        e = peers => Err(e),
    }
}

/// Watch `targets` of `kind` until one is deleted or changed by someone else (see
/// [`unless_interfered`]); never resolves otherwise.
pub(crate) async fn changed(cluster: &Cluster, kind: &str, targets: Vec<&Value>) -> Error {
    use crate::core::gitops;
    use std::cell::RefCell;
    use std::collections::BTreeMap;
    if targets.is_empty() {
        return std::future::pending().await;
    }
    let names: Vec<String> = targets
        .iter()
        .filter_map(|t| t["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    // The last state of each object seen, to say who wrote it once it is gone, and
    // whether it was as applied then: a change is someone else's only after this run saw
    // it as applied (one made before, e.g. while the window was stopped, is the verify
    // report's to judge against the journal, exit 5).
    let last: RefCell<BTreeMap<String, (Value, bool)>> = RefCell::default();
    let what: RefCell<Option<(String, String)>> = RefCell::default();
    let sentinel = watch::until(
        cluster,
        &objects::resource(kind),
        &names,
        Duration::from_secs(7 * 24 * 3600),
        |objs| {
            for ((n, live), target) in objs.iter().zip(&targets) {
                let before = last.borrow().get(n).map(|(_, as_applied)| *as_applied);
                let happened = gitops::interfered(target, *live, before.is_some());
                let deleting =
                    live.is_none_or(|o| o.pointer("/metadata/deletionTimestamp").is_some());
                match happened {
                    Some(h) if deleting || before == Some(true) => {
                        *what.borrow_mut() = Some((n.clone(), h));
                        return State::Done;
                    }
                    _ => {}
                }
                if let Some(o) = live {
                    last.borrow_mut()
                        .insert(n.clone(), ((*o).clone(), happened.is_none()));
                }
            }
            State::Waiting(String::new())
        },
        |_| {},
    )
    .await;
    match sentinel {
        Ok(watch::Outcome::Done) => {}
        Ok(_) => return std::future::pending().await,
        Err(e) => return e.into(),
    }
    let (n, happened) = what.into_inner().unwrap_or_default();
    let now = objects::get(cluster, kind, &n).await.ok().flatten();
    let obj = now
        .or_else(|| last.borrow().get(&n).map(|(o, _)| o.clone()))
        .unwrap_or_default();
    let ns = cluster.namespace.as_str();
    let gateway = targets
        .first()
        .and_then(|t| {
            t.pointer("/spec/gatewayRef/name")
                .or(t.pointer("/metadata/name"))
        })
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Error::Stop {
        code: exit::FAILURE,
        message: format!(
            "{} {happened} by someone else during the window ({}): most often a GitOps controller's prune or self-heal",
            crate::core::model::object_ref(kind, &n, ns),
            gitops::who(&obj)
        ),
        hint: Some(crate::window::error::hint!(
            "suspend whatever syncs it (`{}` shows its MANAGED-BY; `--gitops pause` does it for the window), then `{}` restores the IPsecGateway from the journal",
            crate::window::error::Run::status(ns).with(&["-o", "wide"]),
            crate::window::error::Run::rollback(&gateway, ns)
        )),
    }
}

/// Whether every target the window applied is there as applied (none deleted, being
/// deleted, or changed in a field it set): a resume only waits, it does not apply again,
/// so with one that is not, the way out is the rollback. `false` also when it could not
/// be read.
pub(crate) async fn targets_intact(cluster: &Cluster, targets: &[Value]) -> bool {
    for t in targets {
        let (kind, name) = (
            t["kind"].as_str().unwrap_or_default(),
            t["metadata"]["name"].as_str().unwrap_or_default(),
        );
        match objects::get(cluster, kind, name).await {
            Ok(live) if crate::core::gitops::interfered(t, live.as_ref(), true).is_none() => {}
            _ => return false,
        }
    }
    true
}

/// The stop of a window whose deleted object came back.
pub(crate) fn recreated(
    cluster: &Cluster,
    kind: &str,
    name: &str,
    verb: &str,
    obj: &Value,
) -> Error {
    let ns = cluster.namespace.as_str();
    let uid = obj
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let managers = crate::core::scope::managers(obj);
    let tracking: Vec<String> = obj
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .chain(
            obj.pointer("/metadata/annotations")
                .and_then(Value::as_object)
                .into_iter()
                .flatten(),
        )
        .filter(|(k, _)| {
            k.contains("argocd.argoproj.io")
                || k.contains("toolkit.fluxcd.io")
                || k.starts_with("meta.helm.sh")
                || *k == "app.kubernetes.io/instance"
                || *k == "app.kubernetes.io/managed-by"
        })
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    let by = if managers.is_empty() {
        "no field manager recorded".to_string()
    } else {
        format!("field manager {}", managers.join(", "))
    };
    let marks = if tracking.is_empty() {
        String::new()
    } else {
        format!("; tracking metadata {}", tracking.join(", "))
    };
    // Who wrote it, from its managedFields (never guessed): a GitOps controller's sync,
    // a person with kubectl, another applier.
    let writer = crate::core::gitops::writer(obj);
    let gitops = crate::core::gitops::written_by("Application", obj)
        || crate::core::gitops::written_by("Kustomization", obj)
        || crate::core::gitops::written_by("HelmRelease", obj);
    let who = match &writer {
        Some(w) => format!("written by {w}"),
        None => "no field manager other than vpnmig's and the operator's wrote it".into(),
    };
    // The owner its markers name, suspended as vpnmig writes a suspension (a21i 02: one
    // command for one owner everywhere); a generic word only where no marker names one.
    // Of several owners its markers name, the one whose controller wrote it (a21l A01:
    // a HelmRelease re-created it, the stop named the Kustomization beside it).
    let named: Vec<crate::core::gitops::OwnerRef> = crate::core::gitops::detect(obj)
        .into_iter()
        .filter_map(|m| m.owner)
        .collect();
    let owner = named
        .iter()
        .find(|o| crate::core::gitops::written_by(&o.kind, obj))
        .or(named.first())
        .cloned();
    let first = if let Some(o) = owner.filter(|_| gitops) {
        format!(
            "suspend {} first ({})",
            o.display(),
            crate::window::suspend_command(&o)
        )
    } else if gitops {
        // No marker names it: the controller that wrote it, and where to find its owner.
        format!(
            "find the owner whose sync re-created it ({who}; no marker on it names one: `kubectl get {} {name} -n {ns} --show-managed-fields -o yaml`, and the Applications and Kustomizations whose status lists it) and suspend it first",
            kind.to_lowercase()
        )
    } else {
        format!(
            "find who created it ({who}) and make sure they do not again (`kubectl get {} {name} -n {ns} --show-managed-fields -o yaml`)",
            kind.to_lowercase()
        )
    };
    Error::Stop {
        code: exit::FAILURE,
        message: format!(
            "{} was re-created during the window (uid {uid}; {by}{marks}): {who}",
            crate::core::model::object_ref(kind, name, ns)
        ),
        hint: Some(if verb == "cutover" {
            format!(
                "{first}. Then either `vpnmig rollback {name} -n {ns}` (keeps the re-created IPsecGateway, removes the new objects) or delete the re-created IPsecGateway (`kubectl delete {} {name} -n {ns}`) and `vpnmig cutover {name} -n {ns}` resumes",
                kind.to_lowercase()
            )
            .into()
        } else {
            format!(
                "{first}, delete the re-created {kind} (`kubectl delete {} {name} -n {ns}`), then `vpnmig rollback {name} -n {ns}` resumes",
                kind.to_lowercase()
            )
            .into()
        }),
    }
}

/// One look at gateway `name` through verify, without waiting: the rows as they are.
pub(crate) async fn verify_once(
    cluster: &Cluster,
    name: &str,
    expect: &Expect,
) -> Result<Vec<Row>, Error> {
    let mut view = fetch::view(cluster, name).await?;
    expect.apply(&mut view);
    let sas = fetch::sas(cluster, name).await?;
    let mut rows = verify::verify(&view, sas.as_ref().map_err(String::as_str));
    rows.extend(reference_rows(cluster, &expect.reference, "the journal").await?);
    Ok(rows)
}

/// Milliseconds between two instants of the journal, if both are known and in order.
pub(crate) fn between(from: Option<jiff::Timestamp>, to: Option<jiff::Timestamp>) -> Option<u64> {
    let d = to?.duration_since(from?);
    u64::try_from(d.as_millis()).ok()
}

/// `e` with every suspend command of an owner its markers name without a namespace
/// (an Argo CD tracking id carries none) written for `known`, the owner the journal
/// recorded in its real namespace: a printed `kubectl patch application NAME -n argocd`
/// for an Application in another namespace fails, or patches a namesake (a21k N12).
pub(crate) fn in_owner_namespace(e: Error, known: &[crate::core::gitops::OwnerRef]) -> Error {
    let Error::Stop {
        code,
        message,
        hint: Some(mut hint),
    } = e
    else {
        return e;
    };
    for o in known.iter().filter(|o| o.namespace.is_some()) {
        let bare = crate::core::gitops::OwnerRef {
            namespace: None,
            ..o.clone()
        };
        hint = hint.replace_text(
            &crate::window::suspend_command(&bare),
            &crate::window::suspend_command(o),
        );
    }
    Error::Stop {
        code,
        message,
        hint: Some(hint),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// a21k N12: the suspend command of an Application its markers name without a
    /// namespace is written for the one the journal recorded, in its real namespace.
    #[test]
    fn a_suspend_command_names_the_recorded_namespace() {
        let owner = |ns: Option<&str>| crate::core::gitops::OwnerRef {
            api_version: "argoproj.io/v1alpha1".into(),
            kind: "Application".into(),
            namespace: ns.map(str::to_string),
            name: "fichtel-app".into(),
        };
        let bare = crate::window::suspend_command(&owner(None));
        assert!(bare.contains("-n argocd"), "{bare}");
        let e = Error::Stop {
            code: 5,
            message: "m".into(),
            hint: Some(format!("suspend application/fichtel-app first ({bare}). Then …").into()),
        };
        let Error::Stop { hint: Some(h), .. } =
            in_owner_namespace(e, &[owner(Some("gitops-kunden"))])
        else {
            panic!("a stop")
        };
        let said = h.render(&|_| String::new());
        assert!(
            said.contains(
                "kubectl patch application fichtel-app -n gitops-kunden --field-manager=vpnmig"
            ),
            "{said}"
        );
        assert!(!said.contains("-n argocd"), "{said}");
    }
}
