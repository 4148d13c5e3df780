//! Two windows that each record themselves as the one suspender of one owner (a21s S12:
//! window B paused the owner in the milliseconds after window A's restore re-armed it; A's
//! watch then saw no sync and suspended it again as its own, both journals held it, each
//! restore waited for the other's vouch, and the advice looped). One owner has one
//! suspender: the restoring window hands it over to the other, its record then relying on
//! that window's suspension as a window that found the owner suspended does; the other
//! window's restore restores it, counting what this window replaced (and its vouch).

use super::*;

/// The other window that records itself as the suspender of `owner` now, with the owner
/// suspended live: the one this window hands the owner over to. `None` when none does,
/// the journals cannot be read, or the owner syncs (nobody's suspension holds it).
pub(super) async fn other_suspender(
    w: &Window<'_>,
    owner: &gitops::OwnerRef,
) -> Option<holders::Holder> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let Ok(Found::One(_, live_owner)) = live::find(w.cluster, owner).await else {
        return None;
    };
    if gitops::owner_state(&live_owner, "", "", "").active {
        return None;
    }
    let journals = journals_on(w.cluster, owner, (&ns, &name)).await.ok()?;
    holders::holders(&journals, owner, (&ns, &name))
        .into_iter()
        .find(|h| h.paused)
}

/// Hands owner record `o.i` over to `to`, the other window that records itself as its
/// suspender (`why`: how both came to hold it): the record relies on that window's
/// suspension from now on (nothing saved to restore, `heldBy` that window), said with the
/// window that restores it. The caller goes on to the next owner; the end of the restore
/// says who restores it and records this run's vouch (`--gitops resume`) for it.
pub(super) async fn to_other(
    w: &mut Window<'_>,
    o: &Owner<'_>,
    to: &holders::Holder,
    why: &str,
) -> Result<(), Error> {
    let r = &mut w.journal.gitops[o.i];
    r.saved = None;
    r.paused = false;
    r.relies = true;
    r.held_by = vec![format!("{}/{}", to.namespace, to.gateway)];
    r.restoring = None;
    r.pausing = None;
    r.sync_unseen = None;
    r.last_sync = None;
    journal::write(w.cluster, &w.journal, false).await?;
    w.ev.emit(Event::Warning(format!(
        "{} is suspended by {}: {why}. One owner has one suspender, so this window hands it over: its journal now relies on that window's suspension (nothing of this window's is restored over it), and that window's restore restores it once it is done, holding its first sync to what this window replaced too",
        o.r.owner.display(),
        to.display()
    )));
    Ok(())
}
