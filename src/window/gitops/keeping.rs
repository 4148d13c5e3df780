//! The objects the restore keeps: each followed through its ownerReferences and checked
//! against the owner's status before its first sync (the protections are set in
//! `protecting`; what the refusals say and the stop when another writer holds them are in
//! `kept_refusals`).

use super::*;

/// How deep the ownerReferences of a kept object are followed (issue 21 item 1, kind A):
/// a Secret made by a SealedSecret or an ExternalSecret, itself made by a generator, and
/// so on; and how many objects are looked at in all, at most.
pub(super) const OWNER_DEPTH: usize = 4;
pub(super) const KEPT_AT_MOST: usize = 48;

/// How long the owner's status is given to compare a kept object once vpnmig put the
/// owner's tracking markers on it (kind C): a real Argo CD refreshes on the object's
/// change within seconds.
pub(super) const COMPARED_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Make sure the restored owner's first sync cannot prune or change what window `j`
/// keeps (after `replaced`: the new objects after a cutover, the old gateway after a
/// rollback; and its PSK Secret), nor what those objects have ownerReferences to (a
/// SealedSecret or ExternalSecret that made the PSK Secret: pruned, the garbage
/// collector deletes the Secret; kind A). Protection set is recorded in this window's
/// journal (record `i`) before the patch. `Ok(Err((why, what to do)))`: the owner must
/// stay suspended.
///
/// `handover`: vpnmig does not restore the owner; it lets go of it, or leaves its resume
/// to a person (`--gitops ignore`, a HelmRelease that tracks the PSK Secret, a policy
/// changed since, an owner re-created or gone; a21g attacks 07, 12b). Nothing watches that
/// resume and the source may change before it, so every kept object the owner tracks gets
/// its prune protection whatever its status says now, before any check; a check that
/// fails does not stop the others (the first is returned: "do not resume it yet"), and no
/// tracking marker is put on anything.
pub(super) async fn keep(
    w: &mut Window<'_>,
    i: usize,
    j: &crate::core::journal::Journal,
    replaced: &str,
    owner: Option<&Value>,
    handover: bool,
) -> Result<Result<(), (String, String)>, Error> {
    let r = w.journal.gitops[i].owner.clone();
    // Handed over: what stands against a resume, collected while every object is
    // protected; otherwise the first one ends the check.
    let mut refusals: Vec<(String, String)> = Vec::new();
    macro_rules! refuse {
        ($why:expr) => {{
            let why = $why;
            if handover {
                refusals.push(why);
                continue;
            }
            return Ok(Err(why));
        }};
    }
    // (apiVersion, kind, namespace, name, depth, what it keeps: the chain that leads here)
    let mut queue: Vec<(String, String, String, String, usize, String)> = vec![(
        "v1".into(),
        "Secret".into(),
        j.namespace.clone(),
        j.psk_secret.clone(),
        0,
        String::new(),
    )];
    // The window's records, its journal and the archived journals of its earlier windows:
    // a namespace policy or a controller that stamps an owner's markers on every ConfigMap
    // would have its sync prune them, and with them the record of the window and the
    // key's fingerprint (a21d attack 11). The markers may come with the sync itself (a21j
    // 05: none before the restore, the journal pruned by its first sync), so they are
    // protected whatever the markers say now.
    let records = records_of(
        j,
        (j.namespace.as_str(), j.gateway.as_str()) == (w.ns(), w.name()),
    );
    for k in &records {
        queue.push((
            "v1".into(),
            "ConfigMap".into(),
            k.ns.clone(),
            k.name.clone(),
            0,
            k.what.clone(),
        ));
    }
    let objects: Vec<&Value> = if replaced == "IPsecGateway" {
        j.targets.iter().collect()
    } else {
        vec![&j.old_manifest]
    };
    // The new objects of a cutover (a21p E21, E24): protected from prune before the
    // restore unless the owner's current status shows that its merged source defines
    // them, whatever their markers say now. A controller or a namespace policy that
    // stamps the owner's markers on every object of the namespace brings them into its
    // inventory with the first sync, and a source without them would then delete the
    // client's gateway.
    let mut new_objects: Vec<(String, String, String)> = Vec::new();
    for o in objects {
        let s = |p: &str| {
            o.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let ns = Some(s("/metadata/namespace"))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| j.namespace.clone());
        if replaced == "IPsecGateway" {
            new_objects.push((s("/kind"), ns.clone(), s("/metadata/name")));
        }
        queue.push((
            s("/apiVersion"),
            s("/kind"),
            ns,
            s("/metadata/name"),
            0,
            String::new(),
        ));
    }
    // Argo CD's global diff customizations (argocd-cm), where Argo CD keeps them: its
    // install namespace, which with "apps in any namespace" is not the Application's
    // (a21d attack 1). Every argocd-cm the cluster has is read, and a rule in any of them
    // counts; where that cannot be told, the owner stays suspended ("cannot tell").
    let customizations: Vec<(String, String)> = match (r.kind.as_str(), r.namespace.as_deref()) {
        ("Application", Some(ons)) => match live::argocd_cms(w.cluster, ons).await {
            Ok(cms) => cms
                .iter()
                .flat_map(|(cns, cm)| {
                    cm["data"]
                        .as_object()
                        .into_iter()
                        .flatten()
                        .filter(|(k, _)| {
                            k.starts_with("resource.customizations.ignoreDifferences.")
                                || *k == "resource.customizations"
                        })
                        .map(move |(k, v)| {
                            (
                                format!("-n {cns} {k}"),
                                v.as_str().unwrap_or_default().to_string(),
                            )
                        })
                })
                .collect(),
            Err(why) => {
                let why = (
                    format!(
                        "whether Argo CD's diff customizations (ConfigMap argocd-cm, in the namespace Argo CD runs in) hide a difference of what the window keeps cannot be told: {why}"
                    ),
                    format!(
                        "Check by hand: find Argo CD's namespace (`kubectl get configmaps -A --field-selector metadata.name=argocd-cm`), and that its argocd-cm ignores no difference of the Secret or the gateway objects (`kubectl get configmap argocd-cm -n ARGOCD_NAMESPACE -o yaml`, keys resource.customizations.ignoreDifferences.* and resource.customizations); then run `vpnmig {} {} -n {}` with a context that may list ConfigMaps in all namespaces: it restores {} once its checks pass (no by-hand restore is offered: it would skip them)",
                        verb_of(replaced),
                        w.name(),
                        w.ns(),
                        r.display()
                    ),
                );
                if !handover {
                    return Ok(Err(why));
                }
                refusals.push(why);
                Vec::new()
            }
        },
        _ => Vec::new(),
    };
    let mut seen: Vec<(String, String, String)> = Vec::new();
    let mut owner = owner.cloned();
    // In order: the PSK Secret first, then the window's objects, then what owns them.
    while !queue.is_empty() {
        let (api_version, kind, ns, name, depth, chain) = queue.remove(0);
        if seen.contains(&(kind.clone(), ns.clone(), name.clone())) {
            continue;
        }
        seen.push((kind.clone(), ns.clone(), name.clone()));
        let what = kept_ref(&kind, &name, &ns);
        let what = if kind == "Secret" && depth == 0 {
            format!("{what} (the PSK)")
        } else if chain.is_empty() {
            what
        } else if depth > 0 {
            format!("{what} ({chain}: deleted, the garbage collector deletes what it owns)")
        } else {
            format!("{what} ({chain})")
        };
        let Some(obj) = live::get_kept(w.cluster, &api_version, &kind, &ns, &name).await? else {
            if depth > 0 {
                // Its dependent is still there, so the object it names should be: not
                // found is a kind vpnmig cannot read, not proof it is gone.
                refuse!((
                    format!(
                        "{what} cannot be read (not found as {api_version} {kind}), and whether its sync prunes it cannot be told"
                    ),
                    format!(
                        "check by hand that {}'s source still defines it (`kubectl get {} {name}{}`; {}); {}",
                        r.display(),
                        kind.to_lowercase(),
                        ns_flag(&ns),
                        gitops::render_hint(&r),
                        not_restored(w.ns())
                    ),
                ));
            }
            continue;
        };
        let tracked = gitops::tracks(&r, &obj);
        let record = kind == "ConfigMap"
            && depth == 0
            && records.iter().any(|k| k.ns == ns && k.name == name);
        let new_object = depth == 0
            && !record
            && new_objects.contains(&(kind.clone(), ns.clone(), name.clone()));
        // Handed over, or a record: protected first, whatever a check below finds.
        let obj = if handover || record {
            match protect_kept(
                w,
                i,
                (&api_version, &kind, &ns, &name),
                obj,
                &what,
                kind == "Secret" && depth == 0,
                tracked || record,
                record,
                handover,
                replaced,
                owner.as_ref(),
                None,
            )
            .await?
            {
                Ok(o) => o,
                Err(why) => refuse!(why),
            }
        } else {
            obj
        };
        // Kind A: what owns it is kept too (pruned, the garbage collector deletes it).
        // Owners beyond the depth vpnmig follows are not "safe": they are unknown (a21d
        // attack 3: a chain one level longer was restored, and the PSK collected).
        if depth >= OWNER_DEPTH && !gitops::owner_references(&obj).is_empty() {
            refuse!((
                format!(
                    "{what} is owned through more than {OWNER_DEPTH} levels of ownerReferences, more than vpnmig follows: whether {}'s sync prunes one of them (and the garbage collector then deletes what the window keeps) cannot be told",
                    r.display()
                ),
                format!(
                    "check by hand that {}'s source still defines every owner in the chain (`kubectl get {} {name}{} -o jsonpath='{{.metadata.ownerReferences}}'`, then each owner's); {}",
                    r.display(),
                    kind.to_lowercase(),
                    ns_flag(&ns),
                    not_restored(w.ns())
                ),
            ));
        }
        if depth < OWNER_DEPTH {
            for (av, k, n) in gitops::owner_references(&obj) {
                // A longer chain reads as one sentence: "A is owned by B, which is
                // owned by C".
                let label = if chain.is_empty() || depth == 0 {
                    kept_ref(&kind, &name, &ns)
                } else {
                    format!("{chain}, which")
                };
                // An owner of a cluster-scoped kind (a ClusterExternalSecret) has no
                // namespace: it is read, and found in the owner's status, without one
                // (a21d attack 8).
                let ons = if live::namespaced(w.cluster, &av, &k).await {
                    ns.clone()
                } else {
                    String::new()
                };
                queue.push((
                    av,
                    k.clone(),
                    ons.clone(),
                    n.clone(),
                    depth + 1,
                    format!("{label} is owned by {}", kept_ref(&k, &n, &ons)),
                ));
            }
        }
        if seen.len() + queue.len() > KEPT_AT_MOST {
            let why = (
                format!(
                    "what the window keeps has more than {KEPT_AT_MOST} objects through their ownerReferences, more than vpnmig checks"
                ),
                format!(
                    "check by hand what {}'s sync would prune ({}); {}",
                    r.display(),
                    gitops::render_hint(&r),
                    not_restored(w.ns())
                ),
            );
            if !handover {
                return Ok(Err(why));
            }
            refusals.push(why);
            break;
        }
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        // Kind D: another Application whose markers are on it syncs it too, whatever
        // vpnmig does with this owner.
        if let Some(why) = other_apps(
            w.cluster,
            &r,
            &obj,
            &customizations,
            group,
            &kind,
            &ns,
            &name,
            &what,
        )
        .await?
        {
            refuse!(why);
        }
        let mut says = owner
            .as_ref()
            .and_then(|o| gitops::argo_says(o, group, &kind, &ns, &name));
        // Kind C: one its source defines but that carries none of its markers yet shows
        // OutOfSync for the markers alone (as a real Argo CD shows an object it did not
        // create). vpnmig puts on the markers the owner's sync would stamp (copied from
        // the object the window replaced), and reads the comparison again.
        if says == Some(gitops::ArgoSays::OutOfSync)
            && !handover
            && !tracked
            && r.kind == "Application"
            && let Some(patch) = gitops::tracking_patch(&r, &j.old_manifest, &obj)
        {
            live::patch_kept(w.cluster, &api_version, &kind, &ns, &name, &patch).await?;
            w.ev.emit(Event::Step(format!(
                    "{what}: put on {}'s tracking markers, as its sync would (its source defines it); reading its comparison again",
                    r.display()
                )));
            let deadline = tokio::time::Instant::now() + COMPARED_WITHIN;
            loop {
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                owner = match live::find(w.cluster, &r).await? {
                    Found::One(_, o) => Some(o),
                    _ => None,
                };
                says = owner
                    .as_ref()
                    .and_then(|o| gitops::argo_says(o, group, &kind, &ns, &name));
                if says != Some(gitops::ArgoSays::OutOfSync)
                    || tokio::time::Instant::now() >= deadline
                {
                    break;
                }
            }
        }
        let diff = format!("argocd app diff {}", gitops::argocd_app(&r));
        let by_hand = format!(
            "Check by hand what its sync would write (`{diff} --local DIR` on the merged repository, `argocd app manifests {} --source git`)",
            gitops::argocd_app(&r)
        );
        let secret_words = if kind == "Secret" && depth == 0 {
            " with the key the repository holds, and the client's key would exist nowhere (vpnmig keeps only its fingerprint)"
        } else {
            ""
        };
        let status_of = format!("status of {}", r.display());
        match &says {
            Some(gitops::ArgoSays::OutOfSync) => {
                refuse!((
                    format!(
                        "its source defines {what} otherwise than it is live ({status_of}: OutOfSync): restoring its sync would overwrite it{secret_words}; see what it would change with `{diff}`"
                    ),
                    format!(
                        "Make the repository define it as it is live (`{diff}` shows the difference{}), then `vpnmig {} {} -n {}`",
                        if kind == "Secret" {
                            "; vpnmig never prints a key"
                        } else {
                            ""
                        },
                        verb_of(replaced),
                        w.name(),
                        w.ns()
                    ),
                ));
            }
            Some(gitops::ArgoSays::CannotTell(how)) => {
                refuse!((
                    format!(
                        "its status cannot tell whether its sync would change {what} ({how}; {status_of}): an entry that is not Synced is no proof"
                    ),
                    format!(
                        "{by_hand}; once it shows Synced, `vpnmig {} {} -n {}`",
                        verb_of(replaced),
                        w.name(),
                        w.ns()
                    ),
                ));
            }
            Some(gitops::ArgoSays::Absent) if tracked && !gitops::protected(&r.kind, &obj) => {
                refuse!((
                    format!(
                        "it tracks {what}, but its status does not list it ({status_of}; a real Argo CD lists every object it tracks): whether its sync would prune it cannot be told"
                    ),
                    format!(
                        "{by_hand}; refresh it (`argocd app get {} --refresh`), then `vpnmig {} {} -n {}`",
                        r.name,
                        verb_of(replaced),
                        w.name(),
                        w.ns()
                    ),
                ));
            }
            Some(gitops::ArgoSays::Prunes) if tracked && !gitops::protected(&r.kind, &obj) => {
                refuse!((
                    format!(
                        "it tracks {what}, and its source no longer defines it ({status_of}): restoring its sync would delete it"
                    ),
                    format!(
                        "Put it back in the repository (or take the owner's markers off it), then `vpnmig {} {} -n {}`",
                        verb_of(replaced),
                        w.name(),
                        w.ns()
                    ),
                ));
            }
            _ => {}
        }
        // Kind B: a difference its status hides is no proof either.
        if matches!(says, Some(gitops::ArgoSays::Synced))
            && let Some(rule) = owner
                .as_ref()
                .and_then(|o| gitops::argo_ignored(o, &customizations, group, &kind, &ns, &name))
        {
            refuse!((
                format!(
                    "{rule} matches {what}: its status does not show a difference there, and its sync (without syncOptions RespectIgnoreDifferences=true) writes the repository's copy all the same{}",
                    if kind == "Secret" && depth == 0 {
                        " (the key the repository holds: the client's key would then exist nowhere, vpnmig keeps only its fingerprint)"
                    } else {
                        ""
                    }
                ),
                format!(
                    "{by_hand}; add RespectIgnoreDifferences=true to its syncOptions, then `vpnmig {} {} -n {}` (without it, {})",
                    verb_of(replaced),
                    w.name(),
                    w.ns(),
                    not_restored(w.ns())
                ),
            ));
        }
        // A record Argo CD tracks (its markers on it, its source without it): the
        // protection keeps its sync from deleting it, but the Application then reads
        // OutOfSync ("requires pruning") for good, and its first sync is never seen
        // done. Its markers come off first, and what put them there is found.
        if record && tracked && !handover && r.kind == "Application" {
            refuse!(argo_tracks_record(
                &r,
                &obj,
                &what,
                replaced,
                w.name(),
                w.ns()
            ));
        }
        // A new object Argo CD tracks and protected from its prune already (an earlier
        // restore protected it, and a sync put its markers on it since): its source does
        // not define it, so the Application reads OutOfSync for good.
        if new_object
            && tracked
            && !handover
            && r.kind == "Application"
            && gitops::protected(&r.kind, &obj)
            && matches!(says, Some(gitops::ArgoSays::Prunes))
        {
            refuse!(argo_tracks_new(&r, &obj, &what, replaced, w.name(), w.ns()));
        }
        if handover || record {
            continue;
        }
        // A new object the owner's status does not show its merged source to define
        // (Argo CD: not listed; Flux, a HelmRelease: a suspended owner's status never
        // shows the merge) is protected whatever its markers say now.
        let undefined = new_object
            && !matches!(
                says,
                Some(gitops::ArgoSays::Synced | gitops::ArgoSays::OutOfSync)
            );
        let prune = (tracked && says.is_none()) || undefined;
        let prune = prune && !gitops::protected(&r.kind, &obj);
        let undefined = undefined.then(|| {
            if says.is_some() {
                format!(
                    "{} does not list it in its status: its merged source does not define it",
                    r.display()
                )
            } else {
                format!(
                    "the cluster does not show that {}'s merged source defines it{}",
                    r.display(),
                    owner
                        .as_ref()
                        .and_then(gitops::status_blind)
                        .map(|why| format!(" ({why})"))
                        .unwrap_or_default()
                )
            }
        });
        if let Err(why) = protect_kept(
            w,
            i,
            (&api_version, &kind, &ns, &name),
            obj,
            &what,
            kind == "Secret" && depth == 0,
            prune,
            false,
            false,
            replaced,
            owner.as_ref(),
            undefined.as_deref(),
        )
        .await?
        {
            return Ok(Err(why));
        }
    }
    if refusals.is_empty() {
        return Ok(Ok(()));
    }
    let todo = refusals
        .iter()
        .map(|r| r.1.clone())
        .collect::<Vec<_>>()
        .join("; and ");
    Ok(Err((
        refusals
            .into_iter()
            .map(|r| r.0)
            .collect::<Vec<_>>()
            .join("; and "),
        todo,
    )))
}
