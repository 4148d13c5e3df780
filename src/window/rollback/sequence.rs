//! The rollback's walk: what it reads before anything changes, then the table
//! [`phases::ROLLBACK`] walked by the runner of every table, its last row watched.

use super::*;

/// The rows from the journal's phase to `rolled-back`: first, before anything changes,
/// which VPNPeers are the window's and which owners of the saved manifest are gone; then
/// [`phases::ROLLBACK`], its last row under the watch that stops it when the VPNGateway
/// comes back.
pub(super) async fn phases(
    w: &mut Window<'_>,
    t: &Timeouts,
    choices: Choices,
) -> Result<Tunnels, Error> {
    let name = w.name().to_string();
    let (cluster, ev) = (w.cluster, w.ev);
    // Which VPNPeers are this window's, judged before anything changes (and each again,
    // at its version, by the guarded delete).
    let scope = if w.journal.phase < Phase::NewDeleted {
        peer_scope(cluster, ev, &w.journal, choices.delete_extra_peers).await?
    } else {
        PeerScope::default()
    };
    // The owners the re-created gateway would name, before anything changes (also
    // under `cutover --rollback-on-failure`); a choice to drop some is recorded first:
    // with `rolling-back`, or at once when the rollback is under way.
    let dropped = missing_owners(cluster, ev, &w.journal, choices.drop_missing_owners).await?;
    let recorded = !dropped.is_empty();
    w.journal.dropped_owner_references.extend(dropped);
    if w.journal.phase.rolling_back() && recorded {
        w.check_lock().await?;
        stored::write(cluster, &w.journal, false).await?;
    }
    let mut cx = phases::Ctx {
        t,
        choices,
        scope,
        owners: None,
        tunnels: None,
    };
    let (before, after) = table::split_watched(phases::ROLLBACK);
    table::run(w, &mut cx, before).await?;
    // From here the new gateway is gone: if anything re-creates it (a GitOps self-heal
    // to a merged repository), every wait below stops at once (issue 11 item 3).
    let back = Box::pin(table::run(w, &mut cx, after));
    steps::unless_recreated(cluster, "VPNGateway", &name, "rollback", back).await?;
    Ok(cx.tunnels.expect("the last row verifies the tunnels"))
}
