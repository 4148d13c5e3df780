//! Step 1 of a restore ([`super::restore`]): reading the owner and its journal record. The
//! owner is found (or gone, and let go); a restore a killed run left is finished first; a
//! policy someone set since the pause is let go, never overwritten; and nothing is
//! re-armed beside a replaced gateway live again or a claimed floating IP.

use super::*;

/// The owner of record `o.i` as it is live (`None`: it could not be read), or
/// [`Step::Next`] once the journal let go of it (gone, or its policy changed since the
/// window paused it). Updates `o.r` (the record, read again after an interrupted restore
/// is finished) and `o.force` (that restore's vouch).
pub(super) async fn owner(
    w: &mut Window<'_>,
    o: &mut Owner<'_>,
) -> Result<Step<Option<Value>>, Error> {
    let (i, replaced) = (o.i, o.replaced);
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let r = o.r.clone();
    // The vouch of this run, or of the window's own restore a killed run left
    // unfinished (kept unless what it did disproves it).
    let mut force = o.force;
    let mut live_owner = match live::find(w.cluster, &r.owner).await? {
        Found::One(_, obj) => Some(obj),
        // Gone (deleted since, attack 9): nothing to restore, nothing to protect
        // from its prune; the journal lets go of it, and every command says so.
        // What the window keeps still carries its markers: one re-created under that
        // name prunes them. Protected first, as on every let-go (a21g 12b).
        Found::None if r.owner.namespace.is_some() => {
            if let Some(stop) = live_again(w, replaced, Some((&r, None))).await? {
                return Err(stop);
            }
            if let Some(stop) = claimed(w, replaced, None).await? {
                return Err(stop);
            }
            let all = every_window_on(w, &r.owner, None, replaced).await;
            let kept = hand_over(w, i, &all).await?;
            w.journal.gitops[i].paused = false;
            w.journal.gitops[i].restored_at = Some(now());
            w.journal.gitops[i].let_go = Some(format!("{}: gone", now()));
            journal::write(w.cluster, &w.journal, false).await?;
            w.ev.emit(Event::Warning(format!(
                "{} is gone (the cluster has no {} {} in namespace {}): nothing to restore; the journal no longer holds it; before letting go, {kept}{}. Whatever syncs the objects now is someone else's (`vpnmig status -n {ns} -o wide` shows MANAGED-BY)",
                r.owner.display(),
                r.owner.kind,
                r.owner.name,
                r.owner.namespace.as_deref().unwrap_or_default(),
                under_way_note(&all[1..], &r.owner)
            )));
            parents_no_longer_relied_on(w, &r.owner, Some("it is gone"), false).await;
            unprotected_stop(w, &r.owner, &all).await?;
            return Ok(Step::Next);
        }
        _ => None,
    };
    // The window's own restore, interrupted after its patch re-armed the owner (a21j
    // 07: `status` called it "re-enabled by someone else"): suspended again, what its
    // unwatched sync did is checked, then the restore goes on as at any other run.
    if let Some(now) = live_owner.as_ref()
        && let gitops::Held::Restoring { at, now: seen } = gitops::held(&r, now)
    {
        if let Some(stop) = finish_interrupted(w, i, replaced, &at, &seen).await? {
            return Err(stop);
        }
        force = force || r.restoring.as_ref().is_some_and(|x| x.forced);
        live_owner = match live::find(w.cluster, &r.owner).await? {
            Found::One(_, obj) => Some(obj),
            _ => None,
        };
    }
    // Read back as the window left it, while the ApplicationSet that manages it now
    // defines another policy than the end would restore (a21p E04: its template set to
    // manual sync in the gap, applied by the set's controller, reads exactly as the
    // window's own suspension): manual sync is a policy changed since, let go of, never
    // re-armed over nor adopted as the suspension the window's stop asked for; another
    // policy is what the end restores.
    let cur = w.journal.gitops[i].clone();
    let manager = match live_owner.as_ref() {
        Some(now) if gitops::held(&cur, now) == gitops::Held::AsLeft => {
            manager_policy(w.cluster, &cur, now).await
        }
        _ => None,
    };
    let manual = manager.as_ref().is_some_and(gitops::ManagerPolicy::manual);
    // Suspended again as the window's own stop asked: the window's again (a21n C13).
    if let Some(now) = live_owner.as_ref().filter(|_| !manual) {
        adopt_asked(w, i, now).await?;
    }
    let r = w.journal.gitops[i].clone();
    // A policy someone set since the pause is theirs: never overwritten; the journal
    // no longer holds the owner (issue 21 item 4).
    if let Some(now) = live_owner.as_ref() {
        const CHANGED: &str = "its policy changed since the window paused it";
        let mut changed = match gitops::held(&r, now) {
            // Argo CD re-armed and suspended again since (it synced): the policy is
            // whoever did that's, never restored over (a21j 06).
            gitops::Held::AsLeft => gitops::synced_since(&r, now).map(|now| (CHANGED.into(), now)),
            gitops::Held::Restoring { .. } => None,
            gitops::Held::ReEnabled { now } => Some(("re-enabled by someone else".into(), now)),
            gitops::Held::NotPaused { since, now } => Some((
                "the window's suspension of it never landed".into(),
                format!("{now}; recorded at {since}"),
            )),
            gitops::Held::Changed { now } => Some((CHANGED.into(), now)),
            gitops::Held::Replaced { uid, now, .. } => Some((
                "it is not the object the window paused: deleted and re-created since".into(),
                format!(
                    "uid {uid}, the journal's {}; {now}",
                    r.uid.as_deref().unwrap_or("?")
                ),
            )),
        };
        // Manual sync defined by its manager since: said as such, whatever synced before.
        if let Some(m) = manager.as_ref().filter(|m| m.manual()) {
            let pointer = r
                .saved
                .as_ref()
                .map(|s| s.pointer.as_str())
                .unwrap_or_default();
            changed = Some((
                m.changed_said(),
                format!(
                    "{} {}",
                    gitops::dotted(pointer),
                    gitops::policy_shown(now.pointer(pointer))
                ),
            ));
        }
        // Re-enabled while its source (as the cluster shows it) still defines the
        // replaced gateway, or may: its next sync re-creates it beside the new one.
        // Not green, and the journal keeps holding the owner, so that `status` and a
        // re-run say so until it is suspended again or the repository is merged
        // (`--gitops resume`: the user says it is).
        // `--gitops resume` vouches that the source no longer defines it; the replaced
        // gateway live again disproves that, so no vouch lets go then (a21j 07,
        // critical: a let-go with exit 0 beside a contended floating IP).
        if let gitops::Held::ReEnabled { now: seen } | gitops::Held::NotPaused { now: seen, .. } =
            gitops::held(&r, now)
            && gitops::owner_state(now, replaced, &ns, &name).source_lists != Some(false)
        {
            let back = force
                && crate::cluster::objects::get(w.cluster, replaced, &name)
                    .await?
                    .is_some();
            if !force || back {
                record_asked(w).await?;
                return Err(reenabled_stop(w, &r.owner, now, replaced, &seen).await);
            }
        }
        // Its resume is a person's now, and nothing watches it: what the window keeps
        // gets the protections first, as on the `--gitops ignore` path (a21g attack
        // 12b: another team's later resume pruned the PSK Secret).
        // Nothing is let go while the replaced gateway is live again (a21k N09: the
        // let-go of a regenerated owner ended 0 beside a contested floating IP).
        if let Some(stop) = live_again(w, replaced, Some((&r, Some(now)))).await? {
            return Err(stop);
        }
        if let Some(stop) = claimed(w, replaced, None).await? {
            return Err(stop);
        }
        if let Some((what, seen)) = changed {
            let all = every_window_on(w, &r.owner, Some(now), replaced).await;
            let kept = hand_over(w, i, &all).await?;
            w.journal.gitops[i].paused = false;
            w.journal.gitops[i].let_go = Some(format!("{}: {what}", crate::window::steps::now()));
            journal::write(w.cluster, &w.journal, false).await?;
            let defines = source_still_defines(&w.journal, &r.owner, Some(now))
                .filter(|_| !force)
                .map(|(_, d)| format!("; {d}"))
                .unwrap_or_default();
            w.ev.emit(Event::Warning(format!(
                "{} is not restored: {what} (live: {seen}); vpnmig leaves its policy as it is, and the journal no longer holds it; before letting go, {kept}{}{defines} (`vpnmig status -n {ns}` lists them)",
                r.owner.display(),
                under_way_note(&all[1..], &r.owner)
            )));
            let why = format!("{what} (live: {seen})");
            parents_no_longer_relied_on(w, &r.owner, Some(&why), !force).await;
            unprotected_stop(w, &r.owner, &all).await?;
            return Ok(Step::Next);
        }
    }
    // Nothing is re-armed (plain, or vouched with `--gitops resume`) while the
    // replaced gateway is live again: checked before the re-arm, never after (a21k
    // R07: a vouch re-armed the owner beside the re-created gateway it had named, and
    // the next run said 0 "stays suspended").
    if let Some(stop) = live_again(w, replaced, live_owner.as_ref().map(|o| (&r, Some(o)))).await? {
        return Err(stop);
    }
    // Nor while another gateway claims the window's floating IP (a21m B15, B18).
    if let Some(stop) = claimed(w, replaced, None).await? {
        return Err(stop);
    }
    o.force = force;
    // The policy the ApplicationSet that manages it defines since the pause is what the
    // end restores (a21p E04), recorded before the restore's patch (its interrupted
    // restore reads back as the window's own) and said.
    // Read again after the adoption, which may have made a policy set since the one to
    // restore (a21o D20).
    let since = match (&manager, live_owner.as_ref()) {
        (Some(_), Some(now)) => manager_policy(w.cluster, &r, now).await,
        _ => None,
    };
    let mut r = r;
    if let Some(m) = since.filter(|m| !m.manual())
        && let Some(saved) = w.journal.gitops[i].saved.as_mut()
    {
        saved.value = m.defines.clone();
        saved.set_since = Some(m.said());
        r.saved = Some(saved.clone());
        journal::write(w.cluster, &w.journal, false).await?;
        w.ev.emit(Event::Note(format!(
            "{}: {}, so the end of the window restores {}, not the policy before (the journal records it)",
            r.owner.display(),
            m.said(),
            gitops::policy_shown(m.defines.as_ref())
        )));
    }
    // The adoption of an asked-for suspension may have replaced the policy to restore
    // with one set since (a21o D20).
    if let Some(saved) = r.saved.clone() {
        o.saved = saved;
    }
    o.r = r;
    Ok(Step::Go(live_owner))
}
