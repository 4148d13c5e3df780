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
            "{first}delete the re-created one (`kubectl delete ipsecgateway {name} -n {ns}`) and make sure the repository no longer defines it (`{}` writes the change); then `{}` goes on (`{}` names the owners, `{}` checks the gateway)",
            crate::window::error::Run::plan(name, ns).with(&["--gitops-repo", "DIR"]),
            crate::window::error::Run::cutover(name, ns),
            crate::window::error::Run::status(ns),
            crate::window::error::Run::verify(name, ns)
        )),
    }))
}

/// The one check every run of a finished window goes through before anything else
/// (`cutover`'s entry, before its vouch, restore, let-go or "nothing to do"; issue 21
/// kind 3, a21l A01, A02, A05, A06, A08): the IPsecGateway it replaced, live again
/// beside its VPNGateway, stops the run with exit 5, naming the gateway, the contested
/// floating IP, its delete and every owner that may have re-created it (its markers
/// on the live gateway, and every owner the journal names, held or let go), whatever
/// the journal says of them. Nothing is restored, vouched for, let go of or said
/// "complete" beside it. The window's own restore, interrupted after its re-arm, is
/// said as such and suspended again (not with `dry_run`: a dry run changes nothing).
pub(crate) async fn finished_beside_live(
    w: &mut Window<'_>,
    replaced: &str,
    dry_run: bool,
) -> Result<Option<Error>, Error> {
    if replaced != "IPsecGateway" {
        return Ok(None);
    }
    let name = w.name().to_string();
    if crate::cluster::objects::get(w.cluster, "VPNGateway", &name)
        .await?
        .is_none()
    {
        return Ok(None);
    }
    let old = crate::cluster::objects::get(w.cluster, "IPsecGateway", &name)
        .await?
        .filter(|o| o.pointer("/metadata/deletionTimestamp").is_none());
    let Some(old) = old else {
        // Another gateway (any name, either kind, any namespace) claiming the window's
        // floating IP stops the run as the replaced one does (a21m B15, B18: "synced: …
        // as it was", then "complete", beside a renamed copy of the old gateway). The
        // window's own restore, interrupted after its re-arm, is suspended again first.
        let Some(stop) = claimed(w, replaced, None).await? else {
            return Ok(None);
        };
        if !dry_run {
            for i in 0..w.journal.gitops.len() {
                let r = w.journal.gitops[i].clone();
                if !r.paused || r.saved.is_none() {
                    continue;
                }
                let Found::One(_, now) = live::find(w.cluster, &r.owner).await? else {
                    continue;
                };
                if let gitops::Held::Restoring { at, now: seen } = gitops::held(&r, &now)
                    && let Some(stop) = finish_interrupted(w, i, replaced, &at, &seen).await?
                {
                    return Ok(Some(stop));
                }
            }
        }
        return Ok(Some(stop));
    };
    let (mays, suspends) = may_have_re_created(w, &old).await?;
    let named = |e: Error| named_owners(e, &mays, &suspends);
    // The window's own restore, killed or interrupted after its re-arm (the journal's
    // restore intent): never "re-enabled by someone else"; suspended again as the window
    // paused it, and the advice is a restore that watches the first sync.
    for i in 0..w.journal.gitops.len() {
        let r = w.journal.gitops[i].clone();
        if !r.paused || r.saved.is_none() {
            continue;
        }
        let Found::One(_, now) = live::find(w.cluster, &r.owner).await? else {
            continue;
        };
        if let gitops::Held::Restoring { at, now: seen } = gitops::held(&r, &now) {
            if dry_run {
                return Ok(live_again(w, replaced, Some((&r, Some(&now))))
                    .await?
                    .map(named));
            }
            if let Some(stop) = finish_interrupted(w, i, replaced, &at, &seen).await? {
                return Ok(Some(named(stop)));
            }
        }
    }
    // The record the window holds (paused), as read now; else the journal holds none.
    let held = w.journal.gitops.iter().find(|r| r.paused).cloned();
    let stop = match &held {
        Some(r) => {
            let now = match live::find(w.cluster, &r.owner).await? {
                Found::One(_, o) => Some(o),
                _ => None,
            };
            live_again(w, replaced, Some((r, now.as_ref()))).await?
        }
        None => live_again(w, replaced, None).await?,
    };
    if stop.is_some() && !dry_run {
        record_asked(w).await?;
    }
    Ok(stop.map(named))
}

/// Every owner that may have re-created `old` (the replaced gateway, live): each one
/// its markers name (labels, tracking annotations, field managers), found live where
/// the cluster shows it, and each one the window's journal names, held or let go.
/// Returns the owners said, and the commands that suspend those that sync now.
pub(super) async fn may_have_re_created(
    w: &Window<'_>,
    old: &Value,
) -> Result<(Vec<String>, Vec<String>), Error> {
    let mut said: Vec<String> = Vec::new();
    let mut suspends: Vec<String> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    // Each owner its markers name: a Flux Kustomization's and a HelmRelease's labels
    // both, each its own owner (the gateway's markers may name both: a21l A01).
    let mut marked: Vec<gitops::Manager> = Vec::new();
    for m in gitops::detect(old) {
        if !matches!(m.tool, gitops::Tool::Flux) {
            marked.push(m);
            continue;
        }
        let labels = |k: &str| {
            old.pointer("/metadata/labels")
                .and_then(|l| l.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let mut each = Vec::new();
        for (prefix, kind, api_version) in [
            ("kustomize", "Kustomization", gitops::FLUX_KUSTOMIZATION),
            ("helm", "HelmRelease", gitops::FLUX_HELMRELEASE),
        ] {
            let Some(n) = labels(&format!("{prefix}.toolkit.fluxcd.io/name")) else {
                continue;
            };
            let namespace = labels(&format!("{prefix}.toolkit.fluxcd.io/namespace"));
            let mut evidence = vec![format!("label {prefix}.toolkit.fluxcd.io/name={n}")];
            evidence.extend(
                m.evidence
                    .iter()
                    .filter(|e| e.starts_with("field manager"))
                    .cloned(),
            );
            each.push(gitops::Manager {
                tool: gitops::Tool::Flux,
                owner: Some(gitops::OwnerRef {
                    api_version: api_version.into(),
                    kind: kind.into(),
                    namespace,
                    name: n,
                }),
                evidence,
            });
        }
        if each.is_empty() {
            marked.push(m);
        } else {
            marked.extend(each);
        }
    }
    for m in marked {
        let Some(wanted) = &m.owner else {
            if !m.evidence.is_empty() {
                said.push(format!(
                    "a sync whose owner its markers do not name ({})",
                    m.evidence.join(", ")
                ));
            }
            continue;
        };
        let (owner, state) = match live::find(w.cluster, wanted).await? {
            Found::One(owner, o) => {
                let st = gitops::owner_state(&o, "IPsecGateway", w.ns(), w.name());
                (owner, Some(gitops::how(&st)))
            }
            _ => (wanted.clone(), None),
        };
        let shown = owner.display();
        if seen.contains(&shown) {
            continue;
        }
        seen.push(shown.clone());
        let held = w
            .journal
            .gitops
            .iter()
            .any(|r| gitops::same_owner(&r.owner, &owner));
        let command = if held {
            format!("`{}`", gitops::pause_command(&owner))
        } else {
            suspend_command(&owner)
        };
        let chain = chain_first(w, &owner, &command).await?;
        if let Some((by, first)) = &chain {
            suspends.push(first.clone());
            said.push(format!(
                "{shown} ({}; {}; {by})",
                m.evidence.join(", "),
                state
                    .map(|s| format!("live: {s}"))
                    .unwrap_or_else(|| "not found live".into())
            ));
            continue;
        }
        if state.as_deref().is_some_and(|s| s != "suspended") {
            suspends.push(command);
        }
        said.push(format!(
            "{shown} ({}; {})",
            m.evidence.join(", "),
            state
                .map(|s| format!("live: {s}"))
                .unwrap_or_else(|| "not found live".into())
        ));
    }
    for r in &w.journal.gitops {
        let shown = r.owner.display();
        if seen.contains(&shown) {
            continue;
        }
        seen.push(shown.clone());
        let what = if r.paused {
            "the window paused it".to_string()
        } else if let Some(why) = &r.let_go {
            format!("the window let go of it: {why}")
        } else if r.restored_at.is_some() {
            "the window restored it".to_string()
        } else {
            "the window recorded it".to_string()
        };
        if let Found::One(owner, o) = live::find(w.cluster, &r.owner).await? {
            let st = gitops::owner_state(&o, "IPsecGateway", w.ns(), w.name());
            // Only an owner that may have written it is asked to be suspended: its
            // controller wrote the gateway, or its status does not say that its source no
            // longer defines it (a21m B12: the restored Kustomization, whose merged source
            // no longer defines the gateway, was named instead of the HelmRelease that
            // wrote it, and following it left the Kustomization suspended and unnamed).
            let wrote = gitops::written_by(&owner.kind, old);
            let may = wrote || st.source_lists != Some(false);
            let command = if r.paused {
                format!("`{}`", gitops::pause_command(&owner))
            } else {
                suspend_command(&owner)
            };
            if may && let Some((by, first)) = chain_first(w, &owner, &command).await? {
                suspends.push(first);
                said.push(format!(
                    "{shown} ({what}; live: {}; {by})",
                    gitops::how(&st)
                ));
                continue;
            }
            if st.active && may {
                suspends.push(command);
            }
            let not_it = if st.active && !may {
                format!(
                    "; not what re-created it: its status says its source no longer defines the gateway, and {} did not write this one",
                    gitops::controller_managers(&owner.kind).join(" or ")
                )
            } else {
                String::new()
            };
            said.push(format!(
                "{shown} ({what}; live: {}{not_it})",
                gitops::how(&st)
            ));
        } else {
            said.push(format!("{shown} ({what}; gone now)"));
        }
    }
    Ok((said, suspends))
}

/// The chain of parents above `owner` that puts its policy back now ([`re_arming`]),
/// when one does: the levels that act, said as clauses ([`re_armed_by`]), and their
/// suspensions top-most first, then the owner's (`command`), as the `--gitops pause`
/// stop names them (a21m B03, B05, B07: after a chain member was resumed, the stop of a
/// finished window named only the owner, which its parent put back each round, and
/// following it looped). `None`: no parent acts.
async fn chain_first(
    w: &Window<'_>,
    owner: &gitops::OwnerRef,
    command: &str,
) -> Result<Option<(String, String)>, Error> {
    let Found::One(_, obj) = live::find(w.cluster, owner).await? else {
        return Ok(None);
    };
    let path = re_arming(w.cluster, &w.journal, owner, &obj).await?;
    if path.is_empty() {
        return Ok(None);
    }
    Ok(Some((
        re_armed_by(&path),
        format!(
            "{}; then suspend {} ({command})",
            suspend_from_the_top(&path),
            owner.display()
        ),
    )))
}

/// `stop` with the owners that may have re-created the gateway, and the suspension of
/// those that sync now first in its hint (a chain above one: its levels top-most first).
fn named_owners(stop: Error, mays: &[String], suspends: &[String]) -> Error {
    match stop {
        Error::Stop {
            code,
            message,
            hint,
        } => {
            let message = if mays.is_empty() {
                format!(
                    "{message}; no owner's markers name it (re-created by hand? `kubectl get ipsecgateway -o yaml --show-managed-fields` says who wrote it)"
                )
            } else {
                format!("{message}; may have re-created it: {}", mays.join("; "))
            };
            let hint = match hint {
                Some(h) if !suspends.is_empty() => Some(crate::window::error::hint!(
                    "suspend what syncs it now first ({}), or it re-creates it once more; then {}",
                    suspends.join("; "),
                    h
                )),
                h => h,
            };
            Error::Stop {
                code,
                message,
                hint,
            }
        }
        e => e,
    }
}
