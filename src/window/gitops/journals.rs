//! Other windows' journals and leases: who holds an owner, the Helm PSK refusal.

use super::*;

/// Why a HelmRelease that tracks the PSK Secrets `psks` (of window `j` and of the other
/// windows holding or relying on it) is never restored by vpnmig, and the check and the
/// resume by hand (the same words in `status`). `hr`: the live HelmRelease.
pub(crate) fn helm_psk_refusal(
    owner: &gitops::OwnerRef,
    hr: Option<&Value>,
    j: &crate::core::journal::Journal,
    psks: &[gitops::KeptPsk],
    verb: &str,
    name: &str,
    ns: &str,
) -> String {
    let me = format!("{}/{}", j.namespace, j.gateway);
    let tracked: Vec<String> = psks
        .iter()
        .map(|p| {
            if p.window == me {
                format!("{} (the PSK)", p.object())
            } else {
                format!("{} (the PSK of the window of {})", p.object(), p.window)
            }
        })
        .collect();
    let one = psks.len() == 1;
    format!(
        "it tracks {}, and its upgrade writes the chart's copy of {} over the live one (no annotation on a live object stops helm-controller, and the cluster cannot show what the merged chart renders): a copy holding another key would leave the client's key nowhere, so vpnmig does not restore it, neither plainly nor with `--gitops resume`. By hand: {}; vpnmig then lets go of it (`vpnmig {verb} {name} -n {ns} --gitops resume` records it as re-enabled by someone else)",
        tracked.join(" and "),
        if one { "the Secret" } else { "each Secret" },
        gitops::helm_psk_check(owner, hr, psks)
    )
}

/// The PSK Secrets a HelmRelease `owner` tracks among those of window `j` and of every
/// other window among `journals` that holds or relies on it: what its resume may write
/// over (a21u U04b). A Secret that cannot be read counts (it may be tracked); one that is
/// gone does not. None tracked: window `j`'s own, as before. Another owner: none (no
/// read).
pub(crate) async fn helm_psks(
    cluster: &Cluster,
    owner: &gitops::OwnerRef,
    j: &crate::core::journal::Journal,
    journals: &[crate::core::journal::Journal],
) -> Vec<gitops::KeptPsk> {
    if owner.kind != "HelmRelease" {
        return Vec::new();
    }
    let kept = |j: &crate::core::journal::Journal| gitops::KeptPsk {
        window: format!("{}/{}", j.namespace, j.gateway),
        secret: j.psk_secret.clone(),
        namespace: j.namespace.clone(),
        key: j.psk_key().to_string(),
    };
    let mut windows = vec![j];
    for h in holders::holders(journals, owner, (&j.namespace, &j.gateway)) {
        if let Some(o) = journals
            .iter()
            .find(|o| o.namespace == h.namespace && o.gateway == h.gateway)
        {
            windows.push(o);
        }
    }
    let mut out = Vec::new();
    for w in windows {
        let tracked =
            match live::get_kept(cluster, "v1", "Secret", &w.namespace, &w.psk_secret).await {
                Ok(Some(sec)) => gitops::tracks(owner, &sec),
                Ok(None) => false,
                Err(_) => true,
            };
        if tracked {
            out.push(kept(w));
        }
    }
    if out.is_empty() {
        out.push(kept(j));
    }
    out.sort();
    out.dedup();
    out
}

/// The stop when the PSK Secret is gone: plain about what only the client can give back.
pub(super) fn psk_gone_stop(j: &crate::core::journal::Journal, owner: &gitops::OwnerRef) -> Error {
    let (secret, ns, name) = (&j.psk_secret, &j.namespace, &j.gateway);
    let key = j.psk_key();
    Error::Stop {
        code: exit::VERIFY_FAILED,
        message: format!(
            "secret/{secret} -n {ns} (the PSK) is gone: it must be re-created with the client's pre-shared key, which vpnmig does not hold (the journal keeps only its fingerprint); {} stays suspended",
            owner.display()
        ),
        hint: Some(crate::window::error::hint!(
            "ask the client for the key and re-create the Secret: `kubectl create secret generic {secret} -n {ns} --from-literal={key}=<the client's key>`; `{}` then compares it with the fingerprint and checks the tunnel; keep the Secret in the repository (or take the owner's markers off it) before the owner is restored",
            crate::window::error::Run::verify(name, ns)
        )),
    }
}

/// The journals of every window that may hold an owner: every namespace, or, where
/// listing them all is refused, the gateway's namespace and each namespace the owner's
/// status names (`owner`). `Err`: a namespace that could not be listed.
pub(crate) async fn journals_for(
    cluster: &Cluster,
    owner: Option<&Value>,
    me: (&str, &str),
) -> Result<Vec<crate::core::journal::Journal>, String> {
    let listed = journal::list(cluster).await.map_err(|e| e.to_string())?;
    // A journal this version cannot read may be a window that relies on the owner.
    if listed.unreadable > 0 {
        return Err(format!(
            "{} ConfigMap(s) labelled app.kubernetes.io/managed-by=vpnmig in {} are not journals this version reads",
            listed.unreadable, listed.scope
        ));
    }
    let mut journals = listed.journals;
    let mut namespaces: Vec<String> = owner
        .map(|o| {
            let argo = o
                .pointer("/status/resources")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|r| r["namespace"].as_str().map(str::to_string));
            let flux = o
                .pointer("/status/inventory/entries")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|e| {
                    e["id"]
                        .as_str()
                        .and_then(|id| id.split_once('_'))
                        .map(|(ns, _)| ns.to_string())
                });
            argo.chain(flux).filter(|n| !n.is_empty()).collect()
        })
        .unwrap_or_default();
    // Where the owner applies to (Flux `spec.targetNamespace`, Argo CD
    // `spec.destination.namespace`): a window on it may be there before its status lists
    // anything.
    if let Some(o) = owner {
        for p in ["/spec/targetNamespace", "/spec/destination/namespace"] {
            if let Some(n) = o.pointer(p).and_then(Value::as_str) {
                namespaces.push(n.to_string());
            }
        }
    }
    namespaces.sort();
    namespaces.dedup();
    if listed.scope == "all namespaces" {
        // A window on this owner has its gateway where the owner's status lists objects;
        // a status that lists none says nothing: every namespace then.
        if namespaces.is_empty() {
            orphan_leases(cluster, None, &journals, me).await?;
        } else {
            for n in std::iter::once(&cluster.namespace).chain(&namespaces) {
                orphan_leases(cluster, Some(n), &journals, me).await?;
            }
        }
        return Ok(journals);
    }
    // Journals are listed in one namespace only, and no owner says where else a window on
    // it may be: which windows hold it is unknown, never "none" (a21k N06).
    if owner.is_none() {
        return Err(format!(
            "journals can be listed in {} only, and the owner could not be read to find the namespaces of the windows on it",
            listed.scope
        ));
    }
    for other in namespaces.iter().filter(|n| **n != cluster.namespace) {
        let l = journal::list_in(cluster, Some(other))
            .await
            .map_err(|e| format!("journals in namespace {other}: {e}"))?;
        if l.unreadable > 0 {
            return Err(format!(
                "{} ConfigMap(s) labelled app.kubernetes.io/managed-by=vpnmig in namespace {other} are not journals this version reads",
                l.unreadable
            ));
        }
        journals.extend(l.journals);
    }
    for n in std::iter::once(&cluster.namespace).chain(&namespaces) {
        orphan_leases(cluster, Some(n), &journals, me).await?;
    }
    Ok(journals)
}

/// `Err` when a window holds its lock (`lease/vpnmig-NAME`) in `namespace` (`None`:
/// every namespace) but has no journal among `journals`: its journal lost its label or
/// was deleted while it runs, and it may rely on the owner's suspension (a21c attack
/// 11). Leases that cannot be listed are "cannot tell" too.
pub(super) async fn orphan_leases(
    cluster: &Cluster,
    namespace: Option<&str>,
    journals: &[crate::core::journal::Journal],
    me: (&str, &str),
) -> Result<(), String> {
    let held = crate::cluster::lock::held(cluster, namespace)
        .await
        .map_err(|e| {
            format!(
                "the vpnmig locks (Leases) in {} cannot be listed: {e}",
                namespace.map_or("all namespaces".to_string(), |n| format!("namespace {n}"))
            )
        })?;
    let orphans: Vec<String> = held
        .iter()
        .filter(|l| (l.namespace.as_str(), l.gateway.as_str()) != me)
        .filter(|l| {
            !journals
                .iter()
                .any(|j| j.namespace == l.namespace && j.gateway == l.gateway)
        })
        .map(|l| {
            format!(
                "lease/vpnmig-{} -n {} (held by {} since {})",
                l.gateway, l.namespace, l.holder, l.since
            )
        })
        .collect();
    if orphans.is_empty() {
        return Ok(());
    }
    Err(format!(
        "a window holds its lock without a journal vpnmig can find ({}): its journal ConfigMap lost its label app.kubernetes.io/managed-by=vpnmig or was deleted while it runs, or its run was just starting. Wait for it to finish, or put the label back (`kubectl label configmap vpnmig-GATEWAY -n NS app.kubernetes.io/managed-by=vpnmig`); a lock whose holder is gone: `kubectl delete lease vpnmig-GATEWAY -n NS`",
        orphans.join(", ")
    ))
}

/// Who holds an owner, as the pause says it: the windows holding it, none, or why that
/// is unknown.
pub(super) fn reliance(held_by: &Result<Vec<holders::Holder>, String>) -> String {
    match held_by {
        Ok(h) if h.iter().any(|h| h.holds()) => format!(
            "held by {}",
            h.iter()
                .filter(|h| h.holds())
                .map(holders::Holder::display)
                .collect::<Vec<_>>()
                .join("; ")
        ),
        Ok(_) => "no vpnmig window holds it".to_string(),
        Err(why) => format!("which windows hold it is unknown: {why}"),
    }
}

/// The windows other than `ns/name` that hold `owner` now. `Err`: why that is unknown.
pub(super) async fn holders_now(
    cluster: &Cluster,
    owner: &gitops::OwnerRef,
    ns: &str,
    name: &str,
) -> Result<Vec<holders::Holder>, String> {
    let journals = journals_on(cluster, owner, (ns, name)).await?;
    Ok(holders::holders(&journals, owner, (ns, name)))
}

/// [`journals_for`] with the owner read live first: the journals of every window that may
/// hold `owner`, wherever its status says they are. `Err`: why that is unknown (a21k N06:
/// a window's closing text read "journals of this namespace only" as "no window").
pub(crate) async fn journals_on(
    cluster: &Cluster,
    owner: &gitops::OwnerRef,
    me: (&str, &str),
) -> Result<Vec<crate::core::journal::Journal>, String> {
    let obj = match live::find(cluster, owner).await {
        Ok(Found::One(_, o)) => Some(o),
        _ => None,
    };
    journals_for(cluster, obj.as_ref(), me).await
}

/// What a window says of an owner it relies on when which window suspended it cannot be
/// read (`why`): the words `status` uses, never a resume (a21k N06).
pub(crate) fn holders_unknown(why: &str) -> String {
    format!(
        "which window suspended it cannot be read ({why}): no resume by hand is offered while a window may hold it; `vpnmig status -A` with a context that may list the journals names them"
    )
}
