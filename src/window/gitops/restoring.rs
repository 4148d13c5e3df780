//! Restoring the owners at `done` / `rolled-back`, only when their source defines what is
//! live then. [`restore`] runs the steps for each owner the window suspended, in order:
//! `reading` (the owner and its journal record), `deciding` (checks 1 to 4, with
//! `source_defines` for checks 3 and 3b), `re_arming` (the patch), `first_sync` (the watch);
//! then `relied_on` for the owners it only relied on. `interrupted` finishes a restore a
//! killed run left.

use super::*;

mod deciding;
mod first_sync;
mod handing_over;
mod interrupted;
mod re_arming;
mod reading;
mod relied_on;
mod source_defines;

use deciding::Checked;
pub(super) use interrupted::*;

/// One owner's restore, as each step reads it: its record in the journal (`i`, `r`), the
/// policy the window saved, what the window replaced, the verb that restores it, and the
/// vouch of `--gitops resume` (or of the window's own restore a killed run left).
struct Owner<'a> {
    i: usize,
    r: Record,
    saved: gitops::Saved,
    replaced: &'a str,
    verb: &'static str,
    force: bool,
}

/// What a step decided for one owner.
enum Step<T> {
    /// Go on to the next step, with what this one found.
    Go(T),
    /// The journal let go of the owner (said): on to the next owner.
    Next,
    /// The owner stays suspended (said, with the command): counted, on to the next owner.
    Kept,
}

/// Restore every owner this window suspended, once it is safe (issue 11 item 2, issue 21
/// items 1 and 2):
///
/// 1. no other window that suspended it or relies on its suspension is under way (any
///    phase before `done` / `rolled-back`): its gateway would come back mid-window;
/// 2. the PSK Secret exists (gone, the stop says it must be re-created with the client's
///    key, which vpnmig does not hold);
/// 3. its source (as the cluster shows it) no longer defines `replaced` (`IPsecGateway`
///    after a cutover, `VPNGateway` after a rollback), nor what the finished windows
///    that relied on it replaced. With `force` (`--gitops resume`) the user says the
///    repository is merged: this one check is skipped, no other;
/// 4. its first sync cannot prune or change what those windows keep (their PSK Secrets,
///    the new objects, the old gateway after a rollback, and what their ownerReferences
///    name, transitively): Argo CD's entry for each must read `Synced` (an `OutOfSync`,
///    `Unknown` or missing entry, or an `ignoreDifferences` rule hiding a difference,
///    keeps it suspended); every other Application whose markers are on one is checked
///    the same; what its status shows gone from the source keeps it suspended; what the
///    cluster cannot show (a suspended Kustomization's inventory is never refreshed; a
///    HelmRelease has none) gets the prune protection its controller honours, recorded
///    in the journal before it is set and read back after.
///
/// What is not restored is said, with the command. Returns how many owners are still
/// suspended by the window.
pub(crate) async fn restore(
    w: &mut Window<'_>,
    replaced: &str,
    force: bool,
) -> Result<usize, Error> {
    let verb = if replaced == "IPsecGateway" {
        "cutover"
    } else {
        "rollback"
    };
    let mut left = 0;
    for i in 0..w.journal.gitops.len() {
        let r = w.journal.gitops[i].clone();
        let Some(saved) = r.saved.clone().filter(|_| r.paused) else {
            continue;
        };
        let mut o = Owner {
            i,
            r,
            saved,
            replaced,
            verb,
            force,
        };
        let live_owner = match reading::owner(w, &mut o).await? {
            Step::Go(live_owner) => live_owner,
            Step::Next => continue,
            Step::Kept => {
                left += 1;
                continue;
            }
        };
        let checked = match deciding::decide(w, &o, live_owner).await? {
            Step::Go(checked) => checked,
            Step::Next => continue,
            Step::Kept => {
                left += 1;
                continue;
            }
        };
        let (records, since) = match re_arming::re_arm(w, &o, &checked.windows).await? {
            Step::Go(found) => found,
            Step::Next => continue,
            Step::Kept => {
                left += 1;
                continue;
            }
        };
        match first_sync::watch(w, &o, &checked, &records, &since).await? {
            Step::Go(()) | Step::Next => {}
            Step::Kept => left += 1,
        }
    }
    relied_on::say_who_restores(w, replaced, force).await?;
    Ok(left)
}
