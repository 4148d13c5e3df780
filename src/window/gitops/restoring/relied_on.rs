//! The end of a restore ([`super::restore`]): the owners this window only relied on
//! (another window, or a person, suspended them). Never resumed here: who restores each
//! is said, and what the window keeps is protected first where nobody's restore will.

use super::*;

/// Says who restores each owner whose suspension the window relied on (issue 21 item 2);
/// with `force` (`--gitops resume`), records the vouch for those another window holds.
pub(super) async fn say_who_restores(
    w: &mut Window<'_>,
    replaced: &str,
    force: bool,
) -> Result<(), Error> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    // The owners this window relied on: who restores them (issue 21 item 2).
    for r in w.journal.gitops.clone() {
        if r.paused || !r.relies_on_suspension() {
            continue;
        }
        // Where the owner's status says its windows are (a21k N06: this namespace's
        // journals alone read as "no window suspended it", and the resume printed here
        // re-created another window's gateway).
        let journals = match journals_on(w.cluster, &r.owner, (&ns, &name)).await {
            Ok(journals) => journals,
            Err(why) => {
                // Which window holds it is unknown: never "suspended before this
                // window", never a resume. What the window keeps is protected, as
                // before any hand-over.
                let Some(i) = w.journal.gitops.iter().position(|x| x.owner == r.owner) else {
                    continue;
                };
                if force && r.relies_on_a_window() {
                    vouch_one(w, i, replaced).await?;
                }
                let kept = self_suspended(w, i, replaced).await?;
                w.ev.emit(Event::Warning(format!(
                    "{} stays suspended: {}; meanwhile {kept}",
                    r.owner.display(),
                    holders_unknown(&why)
                )));
                continue;
            }
        };
        let pausers: Vec<holders::Holder> = holders::holders(&journals, &r.owner, (&ns, &name))
            .into_iter()
            .filter(|h| h.paused)
            .collect();
        // `--gitops resume` of a window that suspended one owner and relies on another
        // window's suspension of this one: the vouch for this one too, as a window that
        // only relies on it records it (a21j 04b: every shape of reliance takes it).
        if force
            && !pausers.is_empty()
            && r.relies_on_a_window()
            && let Some(k) = w.journal.gitops.iter().position(|x| x.owner == r.owner)
        {
            vouch_one(w, k, replaced).await?;
        }
        // A HelmRelease's check by hand names every window's PSK Secret it tracks, with
        // Flux's release (a21u U04b, U04c).
        let (hr, psks) = if r.owner.kind == "HelmRelease" && pausers.is_empty() {
            let hr = match live::find(w.cluster, &r.owner).await {
                Ok(Found::One(_, o)) => Some(o),
                _ => None,
            };
            let psks = helm_psks(w.cluster, &r.owner, &w.journal, &journals).await;
            (hr, psks)
        } else {
            (None, Vec::new())
        };
        w.ev.emit(Event::Info(match pausers.first() {
            Some(h) => format!(
                "{} stays suspended: {}; that window restores it: `vpnmig {} {} -n {}`",
                r.owner.display(),
                h.display(),
                if h.phase.rolling_back() || h.phase == crate::core::journal::Phase::RolledBack {
                    "rollback"
                } else {
                    "cutover"
                },
                h.gateway,
                h.namespace
            ),
            None => {
                // Suspended by a person (`--gitops ignore`, attack 14): nobody's restore
                // checks it, so the window sets the protections a restore would, and
                // says what to check before the resume by hand.
                let Some(i) = w.journal.gitops.iter().position(|x| x.owner == r.owner) else {
                    continue;
                };
                let kept = self_suspended(w, i, replaced).await?;
                // This window suspended it and let go of it since (its policy changed, a
                // re-created owner): said so, never "suspended before this window" (a21s
                // S02a2).
                let who = match r.let_go.as_deref() {
                    Some(why) => format!(
                        "this window suspended it and let go of it ({why}), and no vpnmig window holds it now"
                    ),
                    None => "no vpnmig window suspended it (it was suspended before this window)"
                        .to_string(),
                };
                format!(
                    "{} stays suspended: {who}, so vpnmig does not resume it; {kept}. {} (docs/gitops.md, \"An owner you suspended yourself\")",
                    r.owner.display(),
                    resume_by_hand(&r.owner, replaced, &w.journal, hr.as_ref(), &psks)
                )
            }
        }));
    }
    Ok(())
}
