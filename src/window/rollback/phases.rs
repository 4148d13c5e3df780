//! The rollback's phases as data: [`ROLLBACK`] declares, in order, each phase the journal
//! records, with what it observes before acting, its action, its waits (timeout and
//! diagnosis), how it resumes and what takes it back; `steps::table::run`, the cutover's
//! runner, walks it (docs/architecture.md, "The window as a table of phases").
//!
//! A phase's action reads its own row: its waits' timeouts and diagnoses come from
//! `Step::waits`, so changing a wait, or adding a phase, touches this table alone.

use super::*;
use crate::window::steps::table::{self, Bound, Resume, Run, Table, Wait};

/// The rollback's table ([`ROLLBACK`]).
pub struct Rollback;

impl Table for Rollback {
    type Cx<'c> = Ctx<'c>;
}

type Step = table::Step<Rollback>;

/// What a phase's action is given besides the window.
pub struct Ctx<'c> {
    pub(super) t: &'c Timeouts,
    pub(super) choices: Choices,
    /// The VPNPeers the rollback deletes, judged before anything changes.
    pub(super) scope: PeerScope,
    /// What the PSK Secret must not be owned by while the window's objects go: read by
    /// the `new-deleted` row (its action or, at its phase, its finish).
    pub(super) owners: Option<Owners>,
    /// The re-created gateway's tunnels, as the last row verified them.
    pub(super) tunnels: Option<Tunnels>,
}

/// The hint of a wait whose stop a rollback run again resumes.
const RESUMES: &str = "`{rollback}` resumes the rollback";

/// The rollback, from `rolling-back` to `rolled-back`. Before its first row, the
/// rollback reads the VPNPeers it may delete and the saved manifest's owners that are
/// gone (`sequence::phases`), so that a refusal changes nothing.
pub static ROLLBACK: &[Step] = &[
    Step {
        phase: Phase::RollingBack,
        stages: &[Stage::Start],
        observes: "the VPNPeers it may delete and the saved manifest's ownerReferences whose owners are gone, read before the first row (a refusal changes nothing)",
        does: "records `rolling-back` (with the ownerReferences `--drop-missing-owners` drops), then suspends the GitOps owners that sync the new kinds",
        waits: &[],
        resume: Resume::Finish,
        undo: "resumed, not undone: `vpnmig rollback` runs on from its phase; the GitOps owners stay suspended until `rolled-back` hands them back",
        watched: false,
        act: start,
        finish: Some(pause),
    },
    Step {
        phase: Phase::NewDeleted,
        stages: &[Stage::PskDetach, Stage::DeleteNew],
        observes: "the window's objects that own the PSK Secret, the lock, the uids of the VPNPeers in scope and the VPNGateway before the delete, the new kind read again by name after each wait",
        does: "detaches the PSK Secret from the objects being deleted, then sends the guarded deletes of the VPNPeers in scope and the VPNGateway and waits for them while the PSK Secret is guarded",
        waits: &[
            Wait {
                on: "the VPNPeers gone",
                bound: Bound::Delete,
                diagnosis: Some(RESUMES),
            },
            Wait {
                on: "the VPNGateway gone",
                bound: Bound::Delete,
                diagnosis: Some(RESUMES),
            },
        ],
        resume: Resume::Finish,
        undo: "resumed, not undone: the journal keeps the targets the new kinds were applied from",
        watched: false,
        act: delete_new,
        finish: Some(detach),
    },
    Step {
        phase: Phase::OldApplied,
        stages: &[Stage::CreateOld],
        observes: "the lock, the IPsecGateway of the name (the journal's, one still unwinding, another), the new kind still gone (for `SETTLE` where a GitOps owner syncs it), the PSK Secret against the journal's fingerprint",
        does: "re-creates the IPsecGateway from the journal's manifest once the cutover's delete of it has unwound, or keeps the one there",
        waits: &[Wait {
            on: "the old IPsecGateway's unwind finished",
            bound: Bound::Delete,
            diagnosis: Some(
                "the operator's unwind of the old IPsecGateway has not finished and its finalizer is the operator's to remove: look at the operator's logs; once it is gone, `{rollback}` resumes",
            ),
        }],
        resume: Resume::Finish,
        undo: "Forward: `vpnmig cutover --forward` cuts the re-created IPsecGateway over to the journal's targets again",
        watched: false,
        act: create,
        finish: Some(create_again),
    },
    Step {
        phase: Phase::RolledBack,
        stages: &[Stage::Attach, Stage::Ready, Stage::Tunnels],
        observes: "the IPsecGateway's conditions and its addresses against the journal's, the SAs in its pod",
        does: "initiates each tunnel (`--initiate`); records the rollback's outage; closes the journal",
        waits: &[
            Wait {
                on: "IPsecGateway FIPAttached",
                bound: Bound::Attach,
                diagnosis: Some(RESUMES),
            },
            Wait {
                on: "IPsecGateway Ready",
                bound: Bound::Attach,
                diagnosis: Some(RESUMES),
            },
            Wait {
                on: "every tunnel ESTABLISHED and verified",
                bound: Bound::Tunnel,
                diagnosis: Some(
                    "the IPsecGateway is back and Ready; only its tunnels are missing. The client's peer re-initiates on its own DPD/retry timer; a PSK or proposal mismatch shows in the client's logs. `{rollback}` waits for them again",
                ),
            },
        ],
        resume: Resume::Again,
        undo: "a new cutover: the journal is closed; the GitOps owners are handed back",
        watched: true,
        act: back,
        finish: None,
    },
];

/// The rollback under way in the journal, then its GitOps owners suspended.
fn start<'r>(w: &'r mut Window<'_>, cx: &'r mut Ctx<'_>, step: &'static Step) -> Run<'r> {
    Box::pin(async move {
        w.ev.emit(Event::Stage(Stage::Start));
        w.save(Phase::RollingBack).await?;
        pause(w, cx, step).await
    })
}

/// Suspend the owners that sync the new objects before they are deleted.
fn pause<'r>(w: &'r mut Window<'_>, _: &'r mut Ctx<'_>, _: &'static Step) -> Run<'r> {
    Box::pin(async move { super::super::gitops::pause(w, "rollback").await })
}

/// Nothing being deleted may take the PSK Secret with it: detach it from the new objects
/// (and an old gateway still unwinding) first, then guard it while they go.
fn detach<'r>(w: &'r mut Window<'_>, cx: &'r mut Ctx<'_>, _: &'static Step) -> Run<'r> {
    Box::pin(async move {
        let owners = window_owners(w).await?;
        w.ev.emit(Event::Stage(Stage::PskDetach));
        w.detach_psk(&owners, "the objects being deleted").await?;
        cx.owners = Some(owners);
        Ok(())
    })
}

/// The PSK Secret detached, then the VPNPeers in scope and the VPNGateway deleted and
/// waited for.
fn delete_new<'r>(w: &'r mut Window<'_>, cx: &'r mut Ctx<'_>, step: &'static Step) -> Run<'r> {
    Box::pin(async move {
        detach(w, cx, step).await?;
        let t = cx.t;
        let [peers_gone, gateway_gone] = [&step.waits[0], &step.waits[1]];
        let (scope, owners) = (&cx.scope, cx.owners.as_ref().expect("detach read them"));
        let (name, ns) = (w.name().to_string(), w.ns().to_string());
        let (cluster, ev) = (w.cluster, w.ev);
        ev.emit(Event::Stage(Stage::DeleteNew));
        w.check_lock().await?;
        // The uids before the delete: one of the name with another uid afterwards was
        // re-created, not a delete that has not started (attack 7).
        let mut before: Vec<(String, String, Option<String>)> = Vec::new();
        for (kind, n) in scope
            .peers
            .iter()
            .map(|n| ("VPNPeer", n))
            .chain(std::iter::once(("VPNGateway", &name)))
        {
            let uid = objects::get(cluster, kind, n).await?.and_then(|o| {
                o.pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            });
            before.push((kind.to_string(), n.clone(), uid));
        }
        let uids = |kind: &str| -> Vec<(String, Option<String>)> {
            before
                .iter()
                .filter(|(k, _, _)| k == kind)
                .map(|(_, n, u)| (n.clone(), u.clone()))
                .collect()
        };
        for n in &scope.peers {
            let target = Target::Peer {
                gateway: &name,
                recorded: &scope.recorded,
            };
            delete::delete(cluster, target, n, |_| Ok(()), false).await?;
        }
        let target = Target::NewGateway {
            fip: &w.journal.floating_ip,
            recorded: &scope.recorded,
        };
        delete::delete(cluster, target, &name, |_| Ok(()), false).await?;
        let peers = scope.peers.clone();
        // Nothing to wait for when no VPNPeer was the window's to delete.
        if !peers.is_empty() {
            let title = format!("delete VPNPeer {}", peers.join(", "));
            let peer_uids = uids("VPNPeer");
            let timeout = peers_gone.timeout(t);
            let wait = steps::wait_uids_gone(cluster, ev, "VPNPeer", &peer_uids, timeout, &title);
            if let Err(d) = w.guarded(owners, wait).await? {
                return Err(peers_gone.timed_out(t, w, "the VPNPeers to be deleted", &d));
            }
        }
        new_kind_gone(w, &scope.peers, &before).await?;
        let title = format!("delete VPNGateway {ns}/{name}");
        let gw_uid = uids("VPNGateway");
        let timeout = gateway_gone.timeout(t);
        let wait = steps::wait_uids_gone(cluster, ev, "VPNGateway", &gw_uid, timeout, &title);
        if let Err(d) = w.guarded(owners, wait).await? {
            return Err(gateway_gone.timed_out(
                t,
                w,
                &format!("vpngateway/{name} -n {ns} to be deleted"),
                &d,
            ));
        }
        new_kind_gone(w, &scope.peers, &[]).await?;
        w.save(Phase::NewDeleted).await
    })
}

/// The IPsecGateway re-created from the journal (after an unwinding one is gone), or the
/// one there kept.
fn create<'r>(w: &'r mut Window<'_>, cx: &'r mut Ctx<'_>, step: &'static Step) -> Run<'r> {
    Box::pin(async move {
        let t = cx.t;
        let unwound = &step.waits[0];
        let (scope, owners) = (
            &cx.scope,
            cx.owners.as_ref().expect("new-deleted read them"),
        );
        let (name, ns) = (w.name().to_string(), w.ns().to_string());
        let (cluster, ev) = (w.cluster, w.ev);
        ev.emit(Event::Stage(Stage::CreateOld));
        w.check_lock().await?;
        if let Some(old) = objects::get(cluster, "IPsecGateway", &name).await? {
            if old.pointer("/metadata/deletionTimestamp").is_some() {
                // An interrupted cutover's delete is still unwinding: let it finish first.
                let title = format!(
                    "delete of IPsecGateway {ns}/{name} (started by the cutover) to finish"
                );
                let wait = steps::wait_gone(
                    cluster,
                    ev,
                    "IPsecGateway",
                    std::slice::from_ref(&name),
                    unwound.timeout(t),
                    &title,
                );
                if let Err(d) = w.guarded(owners, wait).await? {
                    return Err(unwound.timed_out(
                        t,
                        w,
                        &format!("ipsecgateway/{name} -n {ns} to be deleted"),
                        &d,
                    ));
                }
                settled(w, &scope.peers).await?;
                create_old(w).await?;
            } else {
                let uid = old
                    .pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                if Some(uid) == w.journal.old_uid.as_deref() {
                    ev.emit(Event::Step(format!(
                        "IPsecGateway {ns}/{name} is still there (uid {uid}): kept"
                    )));
                } else {
                    ev.emit(Event::Warning(format!(
                        "IPsecGateway {ns}/{name} exists, but it is not the object the journal recorded (uid {uid}, the journal's {}): kept as it is, and judged below",
                        w.journal.old_uid.as_deref().unwrap_or("?")
                    )));
                }
            }
        } else {
            settled(w, &scope.peers).await?;
            create_old(w).await?;
        }
        steps::check_psk(w).await?;
        w.save(Phase::OldApplied).await
    })
}

/// At `old-applied`: the IPsecGateway this rollback re-created, gone since (a GitOps
/// prune, a person), is re-created from the journal's manifest again (attack finding: a
/// resume waited for a gateway it would never create).
fn create_again<'r>(w: &'r mut Window<'_>, cx: &'r mut Ctx<'_>, _: &'static Step) -> Run<'r> {
    Box::pin(async move {
        // The reads of `window_owners`, which every run made before its PSK step until
        // the rollback was a table: their answer is not used past `new-deleted`.
        window_owners(w).await?;
        let (name, ns) = (w.name().to_string(), w.ns().to_string());
        let (cluster, ev) = (w.cluster, w.ev);
        if objects::get(cluster, "IPsecGateway", &name)
            .await?
            .is_none()
        {
            ev.emit(Event::Warning(format!(
                "IPsecGateway {ns}/{name}, re-created by this rollback, is gone: re-creating it from the journal"
            )));
            ev.emit(Event::Stage(Stage::CreateOld));
            w.check_lock().await?;
            settled(w, &cx.scope.peers).await?;
            create_old(w).await?;
            steps::check_psk(w).await?;
        }
        Ok(())
    })
}

/// The re-created IPsecGateway: attached, Ready, its addresses and its tunnels.
fn back<'r>(w: &'r mut Window<'_>, cx: &'r mut Ctx<'_>, step: &'static Step) -> Run<'r> {
    Box::pin(async move {
        cx.tunnels = Some(old_back(w, cx.t, cx.choices, step).await?);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::steps::table::testing;

    #[test]
    fn phases_ascend_and_the_last_row_is_watched() {
        let (phases, watched) = testing::shape(ROLLBACK);
        assert_eq!(
            phases,
            [
                Phase::RollingBack,
                Phase::NewDeleted,
                Phase::OldApplied,
                Phase::RolledBack
            ]
        );
        assert_eq!(watched, [false, false, false, true]);
    }

    #[test]
    fn each_wait_reads_its_bound() {
        let bounds = testing::bounds(ROLLBACK);
        assert_eq!(
            bounds,
            [
                (Phase::NewDeleted, 1),
                (Phase::NewDeleted, 1),
                (Phase::OldApplied, 1),
                (Phase::RolledBack, 2),
                (Phase::RolledBack, 2),
                (Phase::RolledBack, 3)
            ]
        );
    }

    #[test]
    fn docs_show_the_table() {
        testing::assert_documented(ROLLBACK, "rollback");
    }
}
