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

/// The gateway a finished window replaced (`replaced`: `IPsecGateway` after a cutover),
/// live again beside the window's new objects: the stop (exit 5) every run of the
/// finished window gives before it restores, vouches for or lets go of an owner, naming
/// the re-created gateway and its delete (a21k R07, N09: a plain re-run, a `--gitops
/// resume` and the let-go of a re-created owner each ended 0, or re-armed the owner,
/// beside a contested floating IP). `owner`: the record being restored or let go and
/// the owner as read now (`None`: gone). `None` when it is not live.
pub(crate) async fn live_again(
    w: &Window<'_>,
    replaced: &str,
    owner: Option<(&Record, Option<&Value>)>,
) -> Result<Option<Error>, Error> {
    if replaced != "IPsecGateway" {
        return Ok(None);
    }
    let (name, ns) = (w.name(), w.ns());
    let Some(old) = crate::cluster::objects::get(w.cluster, "IPsecGateway", name).await? else {
        return Ok(None);
    };
    if old.pointer("/metadata/deletionTimestamp").is_some() {
        return Ok(None);
    }
    let uid = old
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let writer = gitops::writer(&old)
        .map(|who| format!(", written by {who}"))
        .unwrap_or_default();
    let (state, first) = match owner {
        None => (String::new(), String::new()),
        Some((r, None)) => (
            format!(
                "; {} is gone, and the journal still holds it",
                r.owner.display()
            ),
            String::new(),
        ),
        Some((r, Some(live_owner))) => match gitops::held(r, live_owner) {
            gitops::Held::AsLeft => (
                format!(
                    "; {} stays suspended as the window paused it (the journal holds it){}",
                    r.owner.display(),
                    r.re_armed_at
                        .as_deref()
                        .map(|at| format!(
                            "; vpnmig's own restore re-armed it at {at}, and its sync re-created the gateway before it was suspended again"
                        ))
                        .unwrap_or_default()
                ),
                String::new(),
            ),
            gitops::Held::ReEnabled { now }
            | gitops::Held::Changed { now }
            | gitops::Held::NotPaused { now, .. }
            | gitops::Held::Restoring { now, .. }
            | gitops::Held::Replaced { now, .. } => (
                format!(
                    "; {} is not as the window paused it (live: {now}), and the journal still holds it",
                    r.owner.display()
                ),
                format!(
                    "if it syncs automatically, suspend it first ({}), or it re-creates the gateway once more; then ",
                    crate::window::suspend_command(&r.owner)
                ),
            ),
        },
    };
    Ok(Some(Error::Stop {
        code: exit::VERIFY_FAILED,
        message: format!(
            "the cutover of {ns}/{name} is done, but ipsecgateway/{name} -n {ns}, the gateway it replaced, is live again beside vpngateway/{name} -n {ns} (uid {uid}{writer}) and contests the floating IP {}: vpnmig restores, vouches for and lets go of no owner while it is live{state}",
            w.journal.floating_ip
        ),
        hint: Some(crate::window::error::hint!(
            "{first}delete the re-created one (`kubectl delete ipsecgateway {name} -n {ns}`) and make sure the repository no longer defines it (`vpnmig plan {name} -n {ns} --gitops-repo DIR` writes the change); then `vpnmig cutover {name} -n {ns}` goes on (`vpnmig status -n {ns}` names the owners, `vpnmig verify {name} -n {ns}` checks the gateway)"
        )),
    }))
}
