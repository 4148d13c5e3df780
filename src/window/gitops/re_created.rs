//! Why the old gateway exists again after the window deleted it (issue 21 item 3): the
//! GitOps owner that still acts, read now and held against the journal, and what must
//! stop it before a rollback or a resume. Layer: the window engine (`src/window/`), part
//! of `window::gitops`; it reads the cluster and changes nothing.

use super::*;

/// Why the old gateway `obj` exists again after the window deleted it (issue 21 item
/// 3): each GitOps owner its markers name, read now and held against the journal.
/// `Some((why, first))`: an owner that still acts (`why`), and what must stop it before
/// any rollback or resume, which would otherwise fight it (`first`). `None`: nothing
/// names an owner that acts now.
pub(crate) async fn still_acting(
    w: &Window<'_>,
    obj: &Value,
) -> Result<Option<(String, String)>, Error> {
    let (name, ns) = (w.name(), w.ns());
    let kind = obj["kind"].as_str().unwrap_or("IPsecGateway");
    let obj_name = obj["metadata"]["name"].as_str().unwrap_or(name);
    for m in gitops::reconciling(&gitops::detect(obj)) {
        let Some(wanted) = &m.owner else { continue };
        let Found::One(owner, live_obj) = live::find(w.cluster, wanted).await? else {
            continue;
        };
        let record = w.journal.gitops.iter().find(|r| r.owner == owner);
        let st = gitops::owner_state(&live_obj, kind, ns, obj_name);
        // Only its controller's field manager says it wrote the object: its labels do
        // not (vpnmig's own re-create from the saved manifest carries them).
        let wrote = gitops::written_by(&owner.kind, obj);
        let take_out = if kind == "IPsecGateway" {
            format!(
                "or take the IPsecGateway out of its source and merge that (`vpnmig plan {name} -n {ns} --gitops-repo DIR` writes the change)"
            )
        } else {
            format!(
                "or revert the repository change so that its source defines IPsecGateway {ns}/{name} again instead of the {kind}"
            )
        };
        // The chain above it that puts its policy back now, top-most level first: a
        // suspension of the owner alone is undone by it (a21j 01: the root re-armed
        // during the unwind, and a stop that named only the owner's parent looped).
        let path = re_arming(w.cluster, &w.journal, &owner, &live_obj).await?;
        if !st.active
            && path.is_empty()
            && wrote
            && record.is_some_and(|r| r.paused || r.saved.is_none())
        {
            let field = record
                .and_then(|r| r.saved.as_ref())
                .map(|s| {
                    format!(
                        "{} {}",
                        gitops::dotted(&s.pointer),
                        live_obj.pointer(&s.pointer).cloned().unwrap_or(Value::Null)
                    )
                })
                .unwrap_or_else(|| "suspended".into());
            // Written by a person too (a `kubectl patch` that re-enabled it for a while,
            // then suspended again?): both are said, as `status` says them (a21g 04: "stop
            // argocd-application-controller" over a colleague's re-enable).
            let hands = gitops::hand_writers(&live_obj);
            if !hands.is_empty() {
                return Ok(Some((
                    format!(
                        "{} re-created it; it reads back suspended ({field}), and the owner itself was written by {} too: someone may have re-enabled it for a while and suspended it again (its sync re-created the gateway in between), or its controller ignores its suspension",
                        owner.display(),
                        hands.join(", ")
                    ),
                    format!(
                        "find out which first (`kubectl get {} {} -n {} --show-managed-fields -o yaml`): keep it suspended for the window if it was re-enabled, else stop its controller; then {take_out}",
                        owner.resource(),
                        owner.name,
                        owner.namespace.as_deref().unwrap_or("argocd")
                    ),
                )));
            }
            return Ok(Some((
                format!(
                    "{} re-created it although it reads back suspended ({field}, as the window left it): its controller ignores its suspension, and vpnmig cannot hold it off",
                    owner.display()
                ),
                format!(
                    "make {} stop acting first: stop its controller ({}), {take_out}",
                    owner.display(),
                    if owner.kind == "Application" {
                        "argocd-application-controller"
                    } else if owner.kind == "HelmRelease" {
                        "helm-controller"
                    } else {
                        "kustomize-controller"
                    }
                ),
            )));
        }
        if st.active || !path.is_empty() {
            let parents = if path.is_empty() {
                live_parents(w.cluster, &live_obj).await?
            } else {
                Vec::new()
            };
            // No link of the chain acts, but a parent syncs: named as before (one level).
            let parent = parents
                .iter()
                .find(|(_, v)| gitops::parent_state(v, &live_obj).active)
                .map(|(p, _)| p);
            let by = if !path.is_empty() {
                format!("; {}", re_armed_by(&path))
            } else {
                parent
                    .map(|p| {
                        format!(
                            "; it is itself managed by {} (found by {}), which puts its policy back",
                            p.owner.display(),
                            p.evidence.join(", ")
                        )
                    })
                    .unwrap_or_default()
            };
            let whose = match (record.is_some(), st.active) {
                (true, true) => "the window suspended it, and it syncs automatically again",
                (true, false) => {
                    "the window suspended it, and a parent above it puts its policy back"
                }
                (false, _) => "it syncs automatically and this window did not suspend it",
            };
            let did = if wrote {
                "re-created it".to_string()
            } else {
                format!(
                    "may re-create it (its field manager did not write this one: {})",
                    gitops::writer(obj).unwrap_or_else(|| "vpnmig or the operator did".into())
                )
            };
            // The window's own suspension, written as the window writes it, so that it
            // stays the window's and its restore puts the saved policy back (a21i 04b:
            // `flux suspend` here read as "policy changed since", the window let go, and
            // a resume by hand was handed out).
            let suspend = if record.is_some() {
                format!(
                    "`{}`: written as vpnmig writes it, the suspension stays the window's, and its restore puts the saved policy back",
                    gitops::pause_command(&owner)
                )
            } else {
                suspend_command(&owner)
            };
            let first = if path.is_empty() {
                format!(
                    "suspend {} first ({suspend}{}), {take_out}",
                    owner.display(),
                    parent
                        .map(|p| format!("; and {}", parent_fix(&p.owner)))
                        .unwrap_or_default()
                )
            } else {
                // Top-most first, the owner last: each level's sync undoes a suspension
                // of the one below it.
                format!(
                    "{}; then suspend {} ({suspend}); or {}",
                    suspend_from_the_top(&path),
                    owner.display(),
                    take_out.trim_start_matches("or ")
                )
            };
            return Ok(Some((
                format!("{} {did}: {whose} ({}{by})", owner.display(), how(&st)),
                first,
            )));
        }
    }
    Ok(None)
}
