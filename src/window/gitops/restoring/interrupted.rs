//! A restore a killed run left unfinished (its patch re-armed the owner, its first sync
//! was never watched): suspended again, and what that sync did checked, before the
//! restore goes on. Used by [`super::restore`] and by the re-created owner's checks.

use super::*;

/// The window's own restore of owner record `i`, which a killed run left after its patch
/// re-armed the owner (`at`: when it started; `seen`: the policy live): the owner is
/// suspended again, as the window paused it, and the journal says the restore ended;
/// then what its unwatched sync did is looked at. Its sync re-created the gateway the
/// window replaced: a stop (exit 5) naming it, the owner suspended (a21j 07: that sync
/// contested the floating IP). A pinned field it changed: put back, and the stop that
/// says so ([`put_back`]). `None`: nothing it did is seen, and the restore goes on.
pub(in crate::window::gitops) async fn finish_interrupted(
    w: &mut Window<'_>,
    i: usize,
    replaced: &str,
    at: &str,
    seen: &str,
) -> Result<Option<Error>, Error> {
    let owner = w.journal.gitops[i].owner.clone();
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    live::patch(
        w.cluster,
        &owner,
        &gitops::pause_patch(&owner_shape(&owner)),
    )
    .await?;
    w.journal.gitops[i].restoring = None;
    w.journal.gitops[i].re_armed_at = Some(at.to_string());
    w.journal.gitops[i].last_sync = None;
    journal::write(w.cluster, &w.journal, false).await?;
    w.ev.emit(Event::Warning(format!(
        "{} was re-armed by this window's own restore (started {at}; live: {seen}), which did not finish: its run ended before the first sync was watched. Suspended again, as the window paused it; what that sync did is checked before it is restored again",
        owner.display()
    )));
    let (kept, verb) = if replaced == "IPsecGateway" {
        ("VPNGateway", "cutover")
    } else {
        ("IPsecGateway", "rollback")
    };
    if let Some(o) = crate::cluster::objects::get(w.cluster, replaced, &name).await? {
        let change = if replaced == "IPsecGateway" {
            "merge the repository change where the owner reads it"
        } else {
            "revert the repository change where the owner reads it"
        };
        return Ok(Some(Error::Stop {
            code: exit::VERIFY_FAILED,
            message: format!(
                "the {verb} of {ns}/{name} is not finished: this window's restore of {} re-armed it, and its sync re-created {} (uid {}{}) beside {}, which contests the floating IP {}: its source still defines it. vpnmig suspended it again (the journal holds it), so nothing re-creates it once it is deleted",
                owner.display(),
                object_ref(replaced, &name, &ns),
                o.pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .unwrap_or("?"),
                gitops::writer(&o)
                    .map(|who| format!(", {who}"))
                    .unwrap_or_default(),
                object_ref(kept, &name, &ns),
                w.journal.floating_ip
            ),
            hint: Some(crate::window::error::hint!(
                "delete the re-created one (`kubectl delete {} {name} -n {ns}`), {change} (its source must no longer define the {replaced}), then `vpnmig {verb} {name} -n {ns}` restores it (`--gitops resume` once it is merged and the owner's status cannot show it)",
                replaced.to_lowercase()
            )),
        }));
    }
    if let Some(stop) = put_back(w, &owner, replaced).await? {
        return Ok(Some(stop));
    }
    // Its sync created another gateway that claims the floating IP (a21m B15, B18).
    claimed(w, replaced, Some(&owner)).await
}
