//! Step 3 of a restore ([`super::restore`]): the restore itself. The windows' records are
//! copied, the intent is written to the journal, then the patch that puts the owner's
//! policy back as before the window; a refused patch keeps the owner suspended.

use super::*;

/// Re-arms owner record `o.i` (the journal records the intent first): the copies of the
/// windows' records and the owner's status mark from which its first sync is watched, or
/// [`Step::Kept`] when the patch was refused (said, with the command).
pub(super) async fn re_arm(
    w: &mut Window<'_>,
    o: &Owner<'_>,
    windows: &[(crate::core::journal::Journal, &str)],
) -> Result<Step<(Vec<Kept>, gitops::StatusMark)>, Error> {
    let (i, force, verb) = (o.i, o.force, o.verb);
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let (r, saved) = (&o.r, &o.saved);
    // The windows' records as they are now: watched through the first sync, and
    // written back from these copies if it deletes them anyway (a21j 05).
    let records = read_records(w, windows).await;
    // The restore is recorded before its patch (the intent), its end after: a run killed
    // in between leaves a journal that names it the window's own unfinished restore,
    // never "re-enabled by someone else" (a21j 07), and the next run finishes it.
    let re_armed_before = w.journal.gitops[i].re_armed_at.clone();
    let at = now();
    w.journal.gitops[i].restoring = Some(gitops::Restoring {
        at: at.clone(),
        forced: force,
    });
    w.journal.gitops[i].re_armed_at = Some(at);
    journal::write(w.cluster, &w.journal, false).await?;
    let restored = match live::patch(w.cluster, &r.owner, &gitops::restore_patch(saved)).await {
        Ok(o) => o,
        Err(e) => {
            let Some((how, said)) = refusal(&e) else {
                return Err(e.into());
            };
            // Refused: it never landed, the owner stays suspended, as the window
            // paused it, and the journal holds it.
            w.journal.gitops[i].restoring = None;
            w.journal.gitops[i].re_armed_at = re_armed_before;
            journal::write(w.cluster, &w.journal, false).await?;
            w.ev.emit(Event::Warning(format!(
                "{} stays suspended: vpnmig's restore of it was refused ({how}): {said}; the owner is as the window paused it and the journal holds it (the protections set first stay). Once the policy allows the patch ({}), `vpnmig {verb} {name} -n {ns}{}` restores it; no restore by hand is offered: it would skip what the restore checks and sets first",
                r.owner.display(),
                if matches!(e, crate::cluster::KubeError::Forbidden { .. }) {
                    format!(
                        "a context with the permission to patch it: `kubectl auth can-i patch {}/{} -n {}` says whether one has it",
                        r.owner.resource(),
                        r.owner.name,
                        r.owner.namespace.as_deref().unwrap_or("argocd")
                    )
                } else {
                    "the freeze lifted, or an exception for vpnmig's field manager".to_string()
                },
                if force { " --gitops resume" } else { "" }
            )));
            return Ok(Step::Kept);
        }
    };
    // What its status shows now: "synced" is said only from a status written after
    // this (a21d attack 10). Argo CD is asked for a refresh, which its controller
    // takes off once the comparison is written.
    let mut since = gitops::status_mark(&restored);
    if r.owner.kind == "Application"
        && !since.refresh_asked
        && live::patch(w.cluster, &r.owner, &refresh_patch())
            .await
            .is_ok()
    {
        since.refresh_asked = true;
    }
    // A policy set since the pause (adopted with the suspension the window's stop asked
    // for) is what was restored: said, with the one before that it did not put back
    // (a21o D20).
    let field = gitops::dotted(&saved.pointer);
    let set_since = saved.set_since.as_ref();
    let how = match r.asked.as_ref().and_then(|a| a.recorded.as_ref()) {
        // One the owner's manager defines since (a21p E04).
        _ if set_since.is_some() => format!(
            "{field} {} as {}: a restore never overwrites a policy changed since",
            gitops::policy_shown(saved.value.as_ref()),
            set_since.map(String::as_str).unwrap_or_default()
        ),
        Some(before) if gitops::policy_set_since(saved, before.as_ref()).is_some() => format!(
            "{field} {} as it was set since the window paused it, not the {} recorded before the window: a restore never overwrites a policy changed since",
            gitops::policy_shown(saved.value.as_ref()),
            gitops::policy_shown(before.as_ref())
        ),
        _ => format!("{field} as before the window"),
    };
    w.ev.emit(Event::Step(format!(
        "restored {} ({how}); watching its first sync",
        r.owner.display(),
    )));
    Ok(Step::Go((records, since)))
}
