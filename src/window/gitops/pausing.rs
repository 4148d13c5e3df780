//! Suspending the owners for the window (`--gitops pause`): the first pause, its
//! refusals, and what it records; `staying_suspended` checks they stay suspended.

use super::*;

/// Suspend every owner the journal says `pause` and is not suspended yet; each patch is
/// recorded (`paused`) right after it lands. Before the delete, what manages each owner
/// itself is looked at first (a parent whose sync puts the policy back stops the window,
/// nothing deleted), and after the patches every owner is read back from the cluster for
/// a while ([`held`]): a suspension is what the owner shows, not what the patch answered
/// (issue 21 item 4).
pub(crate) async fn pause(w: &mut Window<'_>, verb: &str) -> Result<(), Error> {
    // Until the apply, an owner that syncs again can still be stopped before anything new
    // is live: its parents are checked and its suspension read back on every run.
    let before_apply = before_change(&w.journal);
    if before_apply {
        let owners: Vec<gitops::OwnerRef> = w
            .journal
            .gitops
            .iter()
            .filter(|r| r.restored_at.is_none())
            .map(|r| r.owner.clone())
            .collect();
        // What every window's journal remembers of the parents: a level another
        // window's stop named, suspended by hand since, shows no more in the managedFields
        // below it that it puts that level back (a21m B07).
        let known = remembered_anywhere(w).await;
        for wanted in owners {
            let Found::One(owner, obj) = live::find(w.cluster, &wanted).await? else {
                continue;
            };
            // The whole chain of parents above it, not one level only (a21i 06, 09: the
            // parent's own parent put its policy back, and the stop looped on it).
            let chain = live_chain(w.cluster, &known, &owner, &obj).await?;
            let links: Vec<gitops::Link> = chain.iter().map(|(l, _)| l.clone()).collect();
            if !gitops::acting_top_down(&links).is_empty() {
                let stop = chain_stop(w, verb, &owner, &links, None);
                remember_chain(w, &chain).await?;
                return Err(stop);
            }
            for (l, parent) in &chain {
                rely_on_parent(w, &owner, l, parent).await?;
            }
        }
    }
    for i in 0..w.journal.gitops.len() {
        let r = &w.journal.gitops[i];
        let Some(saved) = &r.saved else { continue };
        if r.restored_at.is_some() {
            continue;
        }
        let (owner, pointer, recorded) = (r.owner.clone(), saved.pointer.clone(), r.paused);
        // Read back as the window left it: nothing to send (a policy that refuses every
        // patch of the owner, a21j 08, would refuse an idempotent one too).
        let mut as_left = false;
        // Suspended by an earlier run: read back first. A policy someone set since is
        // theirs: one that does not sync is left as it is (relied on, never restored
        // over); one that syncs again is suspended again, and its policy is what the end
        // of the window restores (issue 21 item 4).
        if recorded && let Found::One(_, now) = live::find(w.cluster, &owner).await? {
            let uid_now = now
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .map(str::to_string);
            // Deleted and re-created since: not the object the window paused. One that
            // does not sync is left as it is (relied on); one that does is suspended like
            // one re-enabled, its own policy what the end restores (attack 4).
            let held = match gitops::held(&w.journal.gitops[i], &now) {
                gitops::Held::Replaced { uid, active, now } => {
                    let then = w.journal.gitops[i].uid.clone().unwrap_or_default();
                    w.journal.gitops[i].uid = uid_now.clone();
                    let what = format!(
                        "deleted and re-created since the window paused it (uid {uid}, the journal's {then})"
                    );
                    if active {
                        gitops::Held::ReEnabled {
                            now: format!("{now}; {what}"),
                        }
                    } else {
                        gitops::Held::Changed {
                            now: format!("{now}; {what}"),
                        }
                    }
                }
                other => other,
            };
            match held {
                gitops::Held::AsLeft => as_left = true,
                gitops::Held::Replaced { .. } => {}
                // The window's own pause, recorded and never landed (a21j 08): sent
                // again below, not someone else's re-enable.
                gitops::Held::NotPaused { .. } => {}
                // The window's own restore, interrupted after its patch (a21j 07): the
                // owner is suspended again below, as the window paused it.
                gitops::Held::Restoring { at, .. } => {
                    w.journal.gitops[i].restoring = None;
                    w.journal.gitops[i].last_sync = None;
                    journal::write(w.cluster, &w.journal, false).await?;
                    w.ev.emit(Event::Note(format!(
                        "{} was re-armed by this window's own restore (started {at}), which did not finish: suspended again for the window",
                        owner.display()
                    )));
                }
                gitops::Held::Changed { now: seen } => {
                    w.journal.gitops[i].saved = None;
                    w.journal.gitops[i].paused = false;
                    // The journal keeps that the window suspended it and let go of it
                    // (a21s S02a2: it later said "it was suspended before the window").
                    w.journal.gitops[i].let_go = Some(format!(
                        "{}: its policy changed since the window paused it (live: {seen})",
                        crate::window::steps::now()
                    ));
                    journal::write(w.cluster, &w.journal, false).await?;
                    let defines = source_still_defines(&w.journal, &owner, Some(&now))
                        .map(|(_, d)| format!("; {d}"))
                        .unwrap_or_default();
                    w.ev.emit(Event::Warning(format!(
                        "{}: its policy changed since the window paused it (live: {seen}); it does not sync, so vpnmig leaves it as it is and will not restore over it{defines}",
                        owner.display()
                    )));
                    continue;
                }
                gitops::Held::ReEnabled { now: seen } => {
                    // Re-armed by an active parent: suspended again, the parent would
                    // only re-arm it once more, after the read-back (a re-run is no
                    // answer to it). Stopped, naming the parent, before anything new is
                    // applied.
                    if before_apply {
                        let chain = live_chain(w.cluster, &w.journal, &owner, &now).await?;
                        let links: Vec<gitops::Link> =
                            chain.iter().map(|(l, _)| l.clone()).collect();
                        if !gitops::acting_top_down(&links).is_empty() {
                            let stop = chain_stop(w, verb, &owner, &links, Some(&seen));
                            remember_chain(w, &chain).await?;
                            return Err(stop);
                        }
                        let parents = live_parents(w.cluster, &now).await?;
                        if let Some((p, st)) = parents
                            .iter()
                            .map(|(p, v)| (p, gitops::parent_state(v, &now)))
                            .find(|(_, st)| st.active)
                        {
                            return Err(parent_stop(w, verb, &owner, p, &st, Some(&seen)));
                        }
                    }
                    if let Some(s) = w.journal.gitops[i].saved.as_mut() {
                        let set = now.pointer(&pointer).cloned();
                        // Said by the restore that puts it back, never "as before the
                        // window" (a21t T14).
                        if set != s.value {
                            s.set_since = Some(format!(
                                "someone else set it during the window (the window recorded {} before its pause)",
                                gitops::policy_shown(s.value.as_ref())
                            ));
                        }
                        s.value = set;
                    }
                    journal::write(w.cluster, &w.journal, false).await?;
                    w.ev.emit(Event::Warning(format!(
                        "{} was re-enabled by someone else since the window paused it (live: {seen}): suspended again for the window; the end of the window restores that policy, not the one before",
                        owner.display()
                    )));
                }
            }
        }
        // Recorded as suspended before the patch is sent: a run killed in between leaves
        // a journal that says so (and `status` lists it); restoring an owner the patch
        // never reached writes back the value it still has. The first suspension is a
        // compare-and-swap ([`first_pause`]): another window may have suspended it
        // since this one found it syncing.
        if !recorded {
            if !first_pause(w, i, verb).await? {
                continue;
            }
        } else if !as_left {
            // Sent again on every run before the delete (it is idempotent): the journal
            // may say suspended for a patch that never landed.
            match live::patch(
                w.cluster,
                &owner,
                &gitops::pause_patch(&owner_shape(&owner)),
            )
            .await
            {
                Ok(answer) => landed(w, i, &answer).await?,
                // Gone since the window paused it (a21s S11a: renamed during the delete,
                // the run that resumes after the stop sent the patch to a deleted owner,
                // 404, and stopped there): nothing to suspend. The read-back below names
                // an owner that took its place; the end of the window lets go of it.
                Err(e) if crate::cluster::objects::status(&e) == Some(404) => {
                    w.ev.emit(Event::Note(format!(
                        "{} is gone (deleted since the window paused it): nothing to suspend again; the end of the window lets go of it",
                        owner.display()
                    )));
                    continue;
                }
                Err(e) if refusal(&e).is_none() && !e.no_answer() => return Err(e.into()),
                Err(e) => {
                    // Never landed (the record is only the intent): the window does not
                    // hold it. Landed before and re-enabled since: it still does.
                    if refusal(&e).is_some() && w.journal.gitops[i].pausing.is_some() {
                        w.journal.gitops[i].paused = false;
                        w.journal.gitops[i].pausing = None;
                        journal::write(w.cluster, &w.journal, false).await?;
                    }
                    return Err(pause_refused(w, &owner, e, verb));
                }
            }
        }
        w.ev.emit(Event::Step(format!(
            "suspended {} for the window ({} {}; the journal records it to restore at the end)",
            owner.display(),
            if owner.kind == "Application" {
                "removed"
            } else {
                "set"
            },
            gitops::dotted(&pointer)
        )));
    }
    if before_apply {
        held(w, verb, SETTLE_PAUSE).await?;
        // Before the delete only: a sync after it is one the window did not allow.
        if w.journal.phase < Phase::Deleting {
            settled_sync(w).await?;
        }
    }
    Ok(())
}

/// Argo CD: the last sync of each owner the window suspended, read again once the pause
/// settled and before anything is deleted (a sync its controller began as the pause landed
/// is no sync since the pause: nothing it applies is gone yet). A later one is the fact
/// that it was re-armed meanwhile (a21j 06, [`gitops::held`]).
async fn settled_sync(w: &mut Window<'_>) -> Result<(), Error> {
    let mut changed = false;
    for i in 0..w.journal.gitops.len() {
        let r = &w.journal.gitops[i];
        if !r.paused || r.restored_at.is_some() || r.owner.kind != "Application" {
            continue;
        }
        let Found::One(_, obj) = live::find(w.cluster, &r.owner).await? else {
            continue;
        };
        if gitops::owner_state(&obj, "", "", "").active {
            continue;
        }
        let seen = gitops::last_sync(&obj);
        if seen != w.journal.gitops[i].last_sync {
            w.journal.gitops[i].last_sync = seen;
            changed = true;
        }
    }
    if changed {
        journal::write(w.cluster, &w.journal, false).await?;
    }
    Ok(())
}

/// How many times the first suspension is tried again after the owner changed between
/// the read and the patch (409), each time read again.
pub(super) const PAUSE_TRIES: usize = 5;

/// The first suspension of owner record `i` by this window, as a compare-and-swap (a21d
/// attack 9: two windows of a wave, `--concurrency 2`, both found the owner syncing and
/// both recorded themselves as the one that suspended it). The owner is read again: one
/// suspended since (by another window, or a person) is relied on — the record loses
/// `saved`, says `relies` and who holds it, and this window never restores it. One still
/// syncing is recorded as suspended by this window (before the patch), then patched
/// with its `metadata.resourceVersion` as read: a write in between (another window's
/// suspension) is a 409, and the owner is read again. `Ok(true)`: this window suspended
/// it; `Ok(false)`: it relies on another's suspension.
pub(super) async fn first_pause(w: &mut Window<'_>, i: usize, verb: &str) -> Result<bool, Error> {
    let owner = w.journal.gitops[i].owner.clone();
    let (ns, name) = (w.ns().to_string(), w.name().to_string());
    let kind = w.journal.old_manifest["kind"]
        .as_str()
        .unwrap_or("IPsecGateway")
        .to_string();
    for _ in 0..PAUSE_TRIES {
        let obj = match live::find(w.cluster, &owner).await? {
            Found::One(_, o) => Some(o),
            _ => None,
        };
        if let Some(o) = obj.as_ref()
            && !gitops::owner_state(o, &kind, &ns, &name).active
        {
            let held_by = holders_now(w.cluster, &owner, &ns, &name).await;
            let reliance = reliance(&held_by);
            let r = &mut w.journal.gitops[i];
            r.saved = None;
            r.paused = false;
            r.relies = true;
            r.held_by = held_by
                .unwrap_or_default()
                .iter()
                .filter(|h| h.holds())
                .map(|h| format!("{}/{}", h.namespace, h.gateway))
                .collect();
            journal::write(w.cluster, &w.journal, false).await?;
            w.ev.emit(Event::Note(format!(
                "{} was suspended since this window found it syncing ({}; {reliance}): this window relies on that suspension and does not record it as its own; its journal records it, and no window restores the owner until this one is done",
                owner.display(),
                how(&gitops::owner_state(o, &kind, &ns, &name))
            )));
            return Ok(false);
        }
        w.journal.gitops[i].paused = true;
        w.journal.gitops[i].pausing = Some(now());
        journal::write(w.cluster, &w.journal, false).await?;
        let mut patch = gitops::pause_patch(&owner_shape(&owner));
        if let Some(rv) = obj
            .as_ref()
            .and_then(|o| o.pointer("/metadata/resourceVersion"))
            .and_then(Value::as_str)
            && let Some(m) = patch.as_object_mut()
        {
            m.insert(
                "metadata".into(),
                serde_json::json!({"resourceVersion": rv}),
            );
        }
        match live::patch(w.cluster, &owner, &patch).await {
            Ok(answer) => {
                landed(w, i, &answer).await?;
                restore_under_way(w, &owner).await;
                return Ok(true);
            }
            Err(e) if crate::cluster::objects::status(&e) == Some(409) => continue,
            Err(e) if refusal(&e).is_none() && !e.no_answer() => return Err(e.into()),
            Err(e) => {
                // Refused (a webhook, RBAC, validation): it never landed, and the window
                // does not hold the owner; the journal says so before the stop (a21j 08:
                // the intent left behind was read as "re-enabled by someone else").
                // Unanswered: whether it landed is unknown, and the intent stays.
                if refusal(&e).is_some() {
                    w.journal.gitops[i].paused = false;
                    w.journal.gitops[i].pausing = None;
                    journal::write(w.cluster, &w.journal, false).await?;
                }
                return Err(pause_refused(w, &owner, e, verb));
            }
        }
    }
    Err(Error::Stop {
        code: exit::REFUSED,
        message: format!(
            "{} changed {PAUSE_TRIES} times between vpnmig's read and its suspension (409 Conflict each time): something writes it continuously, and whether this window or another suspended it cannot be told; {}",
            owner.display(),
            where_it_stands(w)
        ),
        hint: Some(crate::window::error::hint!(
            "find who writes it (`kubectl get {} {} -n {} --show-managed-fields -o yaml`), then `vpnmig {verb} {name} -n {ns} --gitops pause` again",
            owner.resource(),
            owner.name,
            owner.namespace.as_deref().unwrap_or("argocd")
        )),
    })
}

/// After this window's first suspension of `owner` landed: another window whose restore
/// re-armed it moments ago and still watches its first sync (a21s S12) is named. That
/// restore sees this suspension and hands the owner over to this window (one owner, one
/// suspender), its journal then relying on this one's.
async fn restore_under_way(w: &mut Window<'_>, owner: &gitops::OwnerRef) {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let Ok(journals) = journals_on(w.cluster, owner, (&ns, &name)).await else {
        return;
    };
    for j in &journals {
        if (j.namespace.as_str(), j.gateway.as_str()) == (ns.as_str(), name.as_str()) {
            continue;
        }
        if let Some(at) = j
            .gitops
            .iter()
            .filter(|r| gitops::same_owner(&r.owner, owner) && r.paused)
            .find_map(|r| r.restoring.as_ref().map(|x| x.at.clone()))
        {
            w.ev.emit(Event::Note(format!(
                "{} was re-armed by the restore of the window of {}/{} (started {at}), which still watches its first sync: this window's suspension holds it now; that restore hands the owner over to this window when it reads it suspended, and its journal then relies on this one's (`vpnmig status -n {}` shows it)",
                owner.display(),
                j.namespace,
                j.gateway,
                j.namespace
            )));
        }
    }
}

/// How long the owners are read back after the pause, before the window goes on: a
/// parent's self-heal or another controller answers a change within this.
pub(super) const SETTLE_PAUSE: std::time::Duration = std::time::Duration::from_millis(1500);

/// The smallest owner object the pause patch is chosen by.
pub(super) fn owner_shape(owner: &gitops::OwnerRef) -> Value {
    serde_json::json!({"kind": owner.kind})
}

/// The window's pause of owner record `i` landed (`answer`: the owner as the patch wrote
/// it): the intent becomes the fact, and for Argo CD the last sync seen then is recorded
/// (a sync started after it is one the window did not allow: a21j 06).
pub(super) async fn landed(w: &mut Window<'_>, i: usize, answer: &Value) -> Result<(), Error> {
    let r = &mut w.journal.gitops[i];
    let sync = gitops::last_sync(answer);
    if r.pausing.is_none() && (sync.is_none() || r.last_sync.is_some()) {
        return Ok(());
    }
    r.pausing = None;
    if r.last_sync.is_none() {
        r.last_sync = sync;
    }
    journal::write(w.cluster, &w.journal, false).await?;
    Ok(())
}

/// How the API refused a write and what it said, when it answered with a refusal (a
/// webhook's denial, RBAC, a validation): `(how, said)`, `how` the code and reason (and
/// RBAC when it was), `said` the API's message, which names a webhook that denied it.
/// `None`: no verdict (no answer, a server error, a conflict) or the object is gone.
pub(crate) fn refusal(e: &crate::cluster::KubeError) -> Option<(String, String)> {
    use crate::cluster::KubeError;
    match e {
        KubeError::Forbidden { message, .. } => {
            Some(("403 Forbidden, by RBAC".into(), message.clone()))
        }
        KubeError::Api {
            answer: kube::Error::Api(s),
            ..
        } if (400..500).contains(&s.code) && !matches!(s.code, 404 | 409 | 429) => {
            Some((format!("{} {}", s.code, s.reason), s.message.clone()))
        }
        _ => None,
    }
}

/// How to suspend `owner` where a policy refuses vpnmig's patch: through its definition in
/// the repository, or its tool with a context the policy allows.
pub(super) fn suspend_where_allowed(owner: &gitops::OwnerRef) -> String {
    if owner.kind == "Application" {
        format!(
            "remove `spec.syncPolicy.automated` from its definition in the repository that deploys it, or {} with a context the policy allows",
            suspend_command(owner)
        )
    } else {
        format!(
            "set `spec.suspend: true` in its definition in the repository that deploys it, or {} with a context the policy allows",
            suspend_command(owner)
        )
    }
}

/// The stop when the window's suspension of `owner` failed before the delete: what was
/// refused and by whom (as the API says), that nothing was deleted, and the ways on (a21j
/// 08: a bare "cannot patch … 403" with no hint). An unanswered patch (no verdict) says
/// that whether it landed is unknown.
pub(super) fn pause_refused(
    w: &Window<'_>,
    owner: &gitops::OwnerRef,
    e: crate::cluster::KubeError,
    verb: &str,
) -> Error {
    let (name, ns) = (w.name(), w.ns());
    let Some((how, said)) = refusal(&e) else {
        return Error::Stop {
            code: exit::FAILURE,
            message: format!(
                "the suspension of {} got no verdict ({e}): whether it landed is unknown, and the journal records it as sent; {}",
                owner.display(),
                where_it_stands(w)
            ),
            hint: Some(crate::window::error::hint!(
                "`vpnmig {verb} {name} -n {ns}` sends it again and reads it back before anything else; {}",
                way_back(w)
            )),
        };
    };
    let permission = if matches!(e, crate::cluster::KubeError::Forbidden { .. }) {
        format!(
            "with the permission to patch {} (`kubectl auth can-i patch {}/{} -n {}` says whether a context has it)",
            owner.display(),
            owner.resource(),
            owner.name,
            owner.namespace.as_deref().unwrap_or("argocd")
        )
    } else {
        "once the policy allows it (the freeze lifted, or an exception for vpnmig's field manager)"
            .to_string()
    };
    Error::Stop {
        code: exit::REFUSED,
        message: format!(
            "vpnmig's suspension of {} was refused ({how}): {said}; it still syncs, the window did not suspend it (its journal says so), and {}",
            owner.display(),
            where_it_stands(w)
        ),
        hint: Some(crate::window::error::hint!(
            "{permission}: `vpnmig {verb} {name} -n {ns} --gitops pause` suspends it and goes on; or suspend it yourself ({}), then `vpnmig {verb} {name} -n {ns} --gitops ignore`; {}",
            suspend_where_allowed(owner),
            way_back(w)
        )),
    }
}

/// Whether the window changes nothing an owner's sync would undo before its owners hold:
/// a cutover before its apply, a rollback before its deletes (`rolling-back`: a rollback's
/// `--gitops pause` checks the parents as a cutover's does, C09/C10).
fn before_change(j: &crate::core::journal::Journal) -> bool {
    j.phase < Phase::Applied || j.phase == Phase::RollingBack
}
