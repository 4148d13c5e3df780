//! The cutover's phases as data: [`CUTOVER`] declares, in order, each phase the journal
//! records after the PSK detach, with what it observes before acting, its action, its
//! waits (timeout and diagnosis), how it resumes and how it is undone; `steps::table::run`
//! is the one runner that walks it, and the rollback's table too (docs/architecture.md,
//! "The window as a table of phases").
//!
//! A phase's action reads its own row: its waits' timeouts and diagnoses come from
//! `Step::waits`, so changing a wait, or adding a phase, touches this table alone.

use super::*;
use crate::window::steps::table::{self, Bound, Resume, Run, Table, Wait};

/// The cutover's table ([`CUTOVER`]).
pub struct Cutover;

impl Table for Cutover {
    type Cx<'c> = Ctx<'c>;
}

/// A row of [`CUTOVER`].
type Step = table::Step<Cutover>;

/// What a phase's action is given besides the window.
pub struct Ctx<'c> {
    pub(crate) opts: &'c CutoverOptions,
    pub(crate) old: Option<&'c IPsecGateway>,
    pub(crate) guard: Option<&'c Guard>,
}

/// The cutover after the GitOps owners are suspended, from the PSK detach to `done`.
pub static CUTOVER: &[Step] = &[
    Step {
        phase: Phase::PskDetached,
        stages: &[Stage::PskDetach],
        observes: "the PSK Secret and its ownerReferences",
        does: "removes the Secret's ownerReferences to the old gateway",
        waits: &[],
        resume: Resume::Skip,
        undo: "nothing to undo: the rollback's PskDetach frees it of the new kinds",
        watched: false,
        act: psk_detach,
        finish: None,
    },
    Step {
        phase: Phase::Deleting,
        stages: &[Stage::DryRun, Stage::Delete],
        observes: "every target's server-side dry run, the window guard, the gateway read again, its tunnels (the baseline), the GitOps owners still suspended",
        does: "records `deleting`, then sends the one guarded delete of the IPsecGateway",
        waits: &[],
        resume: Resume::Finish,
        undo: "CreateOld: the IPsecGateway re-created from the journal's manifest",
        watched: false,
        act: delete,
        finish: Some(delete_again),
    },
    Step {
        phase: Phase::Deleted,
        stages: &[],
        observes: "the IPsecGateway by the journal's uid",
        does: "nothing: keeps the PSK Secret from the unwinding gateway, then checks the Secret",
        waits: &[Wait {
            on: "the IPsecGateway gone",
            bound: Bound::Delete,
            diagnosis: Some(
                "the operator's finalizer unwind has not finished: look at the operator's logs; the finalizer is the operator's to remove",
            ),
        }],
        resume: Resume::Skip,
        undo: "CreateOld",
        watched: false,
        act: deleted,
        finish: None,
    },
    Step {
        phase: Phase::Applied,
        stages: &[Stage::Apply],
        observes: "no IPsecGateway of the name, the GitOps owners still suspended, the lock",
        does: "server-side apply of the VPNGateway and every VPNPeer",
        waits: &[],
        resume: Resume::Skip,
        undo: "DeleteNew: the VPNPeers and the VPNGateway deleted and waited for",
        watched: false,
        act: apply,
        finish: None,
    },
    Step {
        phase: Phase::Attached,
        stages: &[Stage::Attach],
        observes: "no IPsecGateway re-created (it would hold the floating IP)",
        does: "nothing",
        waits: &[Wait {
            on: "VPNGateway FIPAttached",
            bound: Bound::Attach,
            diagnosis: Some(
                "AlreadyAssociated means the floating IP is still on another port: find it with `openstack floating ip show`",
            ),
        }],
        resume: Resume::Skip,
        undo: "DeleteNew",
        watched: true,
        act: attached,
        finish: None,
    },
    Step {
        phase: Phase::Ready,
        stages: &[Stage::Ready],
        observes: "the VPNGateway's and the VPNPeers' conditions",
        does: "nothing",
        waits: &[
            Wait {
                on: "VPNGateway Ready",
                bound: Bound::Attach,
                diagnosis: None,
            },
            Wait {
                on: "every VPNPeer Authorized",
                bound: Bound::Attach,
                diagnosis: Some(
                    "a grant naming an unknown exposure leaves a peer Authorized=False: compare the authorization block with the gateway's exposures",
                ),
            },
        ],
        resume: Resume::Skip,
        undo: "DeleteNew",
        watched: true,
        act: ready,
        finish: None,
    },
    Step {
        phase: Phase::Done,
        stages: &[Stage::Tunnels],
        observes: "the SAs in the gateway's pod, verified against the journal's pinned values",
        does: "initiates each tunnel (`--initiate`); records the outage; compares the data plane with the baseline",
        waits: &[Wait {
            on: "every tunnel ESTABLISHED and verified",
            bound: Bound::Tunnel,
            diagnosis: Some(
                "the client's peer re-initiates on its own DPD/retry timer; a PSK or proposal mismatch shows in the client's logs",
            ),
        }],
        resume: Resume::Again,
        undo: "the whole rollback",
        watched: true,
        act: done,
        finish: None,
    },
];

/// Step e: the PSK Secret must not go with the old gateway.
fn psk_detach<'r>(w: &'r mut Window<'_>, cx: &'r mut Ctx<'_>, _: &'static Step) -> Run<'r> {
    Box::pin(async move {
        w.ev.emit(Event::Stage(Stage::PskDetach));
        if let Some(gw) = cx.old {
            w.detach_psk(&journal::Owners::of_old(gw), "the old gateway")
                .await?;
        }
        w.save(Phase::PskDetached).await
    })
}

/// Steps f and g: dry run; then, checked again right before it, the delete (the phase
/// is recorded before it is sent, the delete is of the very version checked).
fn delete<'r>(w: &'r mut Window<'_>, cx: &'r mut Ctx<'_>, _: &'static Step) -> Run<'r> {
    Box::pin(async move {
        let (name, ns) = (w.name().to_string(), w.ns().to_string());
        w.ev.emit(Event::Stage(Stage::DryRun));
        pre_delete_dry_run(w, cx.opts).await?;
        // The window guard once more, right before the outage begins.
        if let Some(g) = cx.guard {
            let moment = Moment::BeforeDelete {
                phase: w.journal.phase,
            };
            if let Err(e) = g.check(w.ev, &name, &ns, moment, false) {
                w.record_error(&crate::window::error::error_line(&e)).await;
                return Err(e);
            }
        }
        w.ev.emit(Event::Stage(Stage::Delete));
        let gw = recheck(w).await?;
        if gw.is_some() {
            record_baseline(w, cx.opts.allow_tunnels_down).await?;
        }
        // The GitOps owners once more, as the cluster shows them, right before the
        // outage begins: a suspension that did not hold stops here, nothing deleted.
        super::super::gitops::held(w, "cutover", std::time::Duration::ZERO).await?;
        w.save(Phase::Deleting).await?;
        if gw.is_some() {
            delete_checked(w).await?;
        }
        Ok(())
    })
}

/// Stopped between recording the phase and the delete landing: send it (again; a
/// gateway already being deleted is left to its unwind).
fn delete_again<'r>(w: &'r mut Window<'_>, _: &'r mut Ctx<'_>, _: &'static Step) -> Run<'r> {
    Box::pin(async move {
        w.ev.emit(Event::Stage(Stage::Delete));
        delete_checked(w).await
    })
}

fn deleted<'r>(w: &'r mut Window<'_>, cx: &'r mut Ctx<'_>, step: &'static Step) -> Run<'r> {
    Box::pin(async move {
        let t = &cx.opts.timeouts;
        let gone = &step.waits[0];
        let (name, ns) = (w.name().to_string(), w.ns().to_string());
        let cluster = w.cluster;
        let title = format!("delete IPsecGateway {ns}/{name}");
        // While the old gateway unwinds, nothing may make it the PSK Secret's owner again.
        let gw = match cx.old.cloned() {
            Some(g) => Some(g),
            None => objects::get(cluster, "IPsecGateway", &name)
                .await?
                .and_then(|v| serde_json::from_value::<IPsecGateway>(v).ok()),
        };
        let old_uid = w.journal.old_uid.clone();
        let names = std::slice::from_ref(&name);
        let timeout = gone.timeout(t);
        let wait = async {
            match &old_uid {
                Some(uid) => {
                    steps::wait_uid_gone(cluster, w.ev, "IPsecGateway", &name, uid, timeout, &title)
                        .await
                }
                None => {
                    steps::wait_gone(cluster, w.ev, "IPsecGateway", names, timeout, &title).await
                }
            }
        };
        // Watched while it unwinds: an edit of its spec now is neither applied nor saved
        // (a21r R06b: it was dropped silently and the window called clean).
        let last_seen = std::sync::Mutex::new(None::<Value>);
        let watch = async {
            loop {
                if let Ok(Some(o)) = objects::get(cluster, "IPsecGateway", &name).await
                    && old_uid.as_deref().is_none_or(|u| {
                        o.pointer("/metadata/uid").and_then(Value::as_str) == Some(u)
                    })
                {
                    *last_seen.lock().expect("not poisoned") = Some(o);
                }
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
        };
        let wait = async {
            tokio::select! {
                r = wait => r,
                _ = watch => unreachable!("the watch never ends"),
            }
        };
        let outcome = match &gw {
            Some(gw) => w.guarded(&journal::Owners::of_old(gw), wait).await?,
            None => wait.await?,
        };
        let seen = last_seen.lock().expect("not poisoned").take();
        if let Some(o) = seen {
            let edits = w.journal.edits_while_deleting(&o);
            if !edits.is_empty() {
                w.journal.edited_while_deleting = edits;
                if let Some(text) = w.journal.edited_while_deleting_text() {
                    w.ev.emit(Event::Warning(text));
                }
            }
        }
        if let Err(diagnosis) = outcome {
            return Err(gone.timed_out(
                t,
                w,
                &format!("ipsecgateway/{name} -n {ns} to be deleted"),
                &diagnosis,
            ));
        }
        steps::check_psk(w).await?;
        w.save(Phase::Deleted).await
    })
}

/// Step h: the apply, only while no IPsecGateway of that name exists (read again right
/// before it), and outside the watches of the rows after it, so that a stop never cuts
/// it in half: the journal says `applied` once it is (issue 21 item 3).
fn apply<'r>(w: &'r mut Window<'_>, _: &'r mut Ctx<'_>, _: &'static Step) -> Run<'r> {
    Box::pin(async move {
        let cluster = w.cluster;
        w.ev.emit(Event::Stage(Stage::Apply));
        old_still_gone(w).await?;
        // Any other gateway (either kind, any name, any namespace) that pins or holds the
        // floating IP: the new one would only ever wait at AlreadyAssociated (a21r R12).
        super::contention::fip_uncontended(w, false).await?;
        // The GitOps owners once more, right before the apply: one re-armed during the
        // delete (a parent's sync) would re-create the old gateway beside the new one.
        super::super::gitops::held(w, "cutover", std::time::Duration::ZERO).await?;
        w.check_lock().await?;
        let mut uids = Vec::new();
        for target in &w.journal.targets {
            match objects::apply(cluster, target, false).await {
                Ok(uid) => uids.push(uid),
                Err(e) if !uids.is_empty() => {
                    let applied: Vec<String> = w.journal.targets[..uids.len()]
                        .iter()
                        .map(target_label)
                        .collect();
                    let e = Error::from(e);
                    return Err(Error::Stop {
                        code: e.exit_code(),
                        message: format!(
                            "{} (already applied by this run: {}; the journal still says deleted)",
                            crate::window::error::error_line(&e),
                            applied.join(", ")
                        ),
                        hint: e.hint(),
                    });
                }
                Err(e) => return Err(e.into()),
            }
        }
        w.journal.target_uids = uids;
        w.ev.emit(Event::Step(format!(
            "applied {} (server-side apply, field manager {})",
            w.journal
                .target_names()
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            stored::FIELD_MANAGER
        )));
        w.save(Phase::Applied).await
    })
}

fn attached<'r>(w: &'r mut Window<'_>, cx: &'r mut Ctx<'_>, step: &'static Step) -> Run<'r> {
    Box::pin(async move {
        let t = &cx.opts.timeouts;
        let fip = &step.waits[0];
        let (name, ns) = (w.name().to_string(), w.ns().to_string());
        let me = [name.clone()];
        // Read once more before the floating-IP wait: a re-created IPsecGateway takes the
        // floating IP, and the wait would only ever see AlreadyAssociated.
        old_still_gone(w).await?;
        super::contention::fip_uncontended(w, true).await?;
        w.ev.emit(Event::Stage(Stage::Attach));
        let title = format!(
            "VPNGateway {ns}/{name} FIPAttached (floating IP {})",
            w.journal.floating_ip
        );
        if let Err(d) = steps::wait_conditions(
            w.cluster,
            w.ev,
            "VPNGateway",
            &me,
            &["FIPAttached"],
            fip.timeout(t),
            &title,
        )
        .await?
        {
            // One that appeared during the wait is named, not left to `openstack`.
            super::contention::fip_uncontended(w, true).await?;
            return Err(fip.timed_out(t, w, &format!("vpngateway/{name} -n {ns} FIPAttached"), &d));
        }
        w.save(Phase::Attached).await
    })
}

fn ready<'r>(w: &'r mut Window<'_>, cx: &'r mut Ctx<'_>, step: &'static Step) -> Run<'r> {
    Box::pin(async move {
        let t = &cx.opts.timeouts;
        let [ready, authorized] = [&step.waits[0], &step.waits[1]];
        let (name, ns) = (w.name().to_string(), w.ns().to_string());
        let me = [name.clone()];
        w.ev.emit(Event::Stage(Stage::Ready));
        let title = format!("VPNGateway {ns}/{name} Ready");
        if let Err(d) = steps::wait_conditions(
            w.cluster,
            w.ev,
            "VPNGateway",
            &me,
            &["Ready"],
            ready.timeout(t),
            &title,
        )
        .await?
        {
            return Err(ready.timed_out(t, w, &format!("vpngateway/{name} -n {ns} Ready"), &d));
        }
        let peers = w.journal.peer_names();
        let title = format!("VPNPeer {} Authorized", peers.join(", "));
        if let Err(d) = steps::wait_conditions(
            w.cluster,
            w.ev,
            "VPNPeer",
            &peers,
            &["Authorized"],
            authorized.timeout(t),
            &title,
        )
        .await?
        {
            return Err(authorized.timed_out(t, w, "every VPNPeer Authorized", &d));
        }
        w.save(Phase::Ready).await
    })
}

/// Step i: verify the tunnels, then the outage and the data plane into the journal.
fn done<'r>(w: &'r mut Window<'_>, cx: &'r mut Ctx<'_>, step: &'static Step) -> Run<'r> {
    Box::pin(async move {
        let opts = cx.opts;
        let t = &opts.timeouts;
        let up = &step.waits[0];
        let (name, ns) = (w.name().to_string(), w.ns().to_string());
        let cluster = w.cluster;
        w.ev.emit(Event::Stage(Stage::Tunnels));
        let initiations = if opts.initiate {
            steps::initiate(cluster, w.ev, &name, w.journal.data_plane_baseline.as_ref()).await?
        } else {
            Vec::new()
        };
        let expect = steps::Expect {
            kind: "VPNGateway",
            service_cidr: None,
            virtual_ips: Vec::new(),
            reference: w.journal.targets.clone(),
        };
        let tunnels = steps::wait_tunnels(cluster, w.ev, &name, up.timeout(t), &expect).await?;
        if let Some(d) = &tunnels.timed_out {
            return Err(up.timed_out(t, w, &format!("the tunnels of {name} -n {ns}"), d));
        }
        w.journal.outage_ms = steps::between(w.delete_sent(), tunnels.first_up);
        w.journal.outage = Some(outage(&w.journal, &tunnels, &initiations, opts.initiate));
        compare_data_plane(w).await?;
        if let Some(text) = w.journal.edited_while_deleting_text() {
            w.ev.emit(Event::Warning(text));
        }
        // The parents the window relies on, once more right before `done`: one resumed
        // during the tunnels' wait re-arms its child a moment later, which re-creates
        // the old gateway beside the new one (a21t T15: resumed 194 ms before `done`, and
        // the window ended done and HEALTHY). An owner itself re-enabled is the restore's
        // to say at `done` (a21 attack A1: exit 5, its sync re-creates the gateway).
        super::super::gitops::parents_held(w, "cutover").await?;
        w.save(Phase::Done).await?;
        w.ev.emit(Event::Finished {
            operation: Operation::Cutover,
            journal: Box::new(w.journal.clone()),
            verify: tunnels.rows,
        });
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::steps::table::testing;

    #[test]
    fn phases_ascend_and_the_watched_rows_close_the_table() {
        let (phases, watched) = testing::shape(CUTOVER);
        assert_eq!(
            phases,
            [
                Phase::PskDetached,
                Phase::Deleting,
                Phase::Deleted,
                Phase::Applied,
                Phase::Attached,
                Phase::Ready,
                Phase::Done
            ]
        );
        assert_eq!(watched, [false, false, false, false, true, true, true]);
    }

    #[test]
    fn each_wait_reads_its_bound() {
        let bounds = testing::bounds(CUTOVER);
        assert_eq!(
            bounds,
            [
                (Phase::Deleted, 1),
                (Phase::Attached, 2),
                (Phase::Ready, 2),
                (Phase::Ready, 2),
                (Phase::Done, 3)
            ]
        );
    }

    #[test]
    fn docs_show_the_table() {
        testing::assert_documented(CUTOVER, "cutover");
    }
}
