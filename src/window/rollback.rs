//! The rollback (the runbook's "Rollback" section), from the journal: the old
//! IPsecGateway is re-created from the saved manifest, verbatim (never translated back
//! from the new kinds), after the VPNPeers and the VPNGateway are gone. Stages and
//! events: the module doc of `crate::window`.

use std::future::Future;

use serde_json::Value;

use super::steps::{self, Tunnels, Window, now, timed_out};
use super::{
    Ask, Choices, Confirm, Emit, Event, Events, Operation, Outcome, RollbackOptions, Sink, Stage,
    Summary, Timeouts,
};
use crate::bundle;
use crate::cluster::delete::{self, Target};
use crate::cluster::{Cluster, journal as stored, lock, objects};
use crate::core::journal::{self, Journal, Owners, Phase};
use crate::core::scope::{self, PeerFate};
use crate::error::Error;
use crate::exit;

/// Roll gateway `name` (in the cluster's namespace) back to its IPsecGateway: read the
/// journal (or, if it is gone, the bundle in `opts.plan`), take the lock, check the
/// VPNGateway's floating IP is pinned, ask `confirm` with the summary, delete the
/// VPNPeers and the VPNGateway and wait until they are gone, re-create the IPsecGateway
/// from the saved manifest, wait for FIPAttached and Ready, verify its tunnels, and mark
/// the journal rolled back. Works after a completed, failed or interrupted cutover, and
/// resumes an interrupted rollback. `stop` and `events` as for [`super::cutover()`].
pub async fn rollback(
    cluster: &Cluster,
    name: &str,
    opts: &RollbackOptions,
    events: &mut dyn Events,
    confirm: &mut impl Confirm,
    stop: impl Future<Output = Error>,
) -> Result<Outcome, Error> {
    let ev = Sink::new(events);
    // On the heap: the whole window is one large future, and a caller may run it on a
    // thread with a small stack (a test's, a tokio worker's).
    let result = Box::pin(steps::frame(
        cluster,
        name,
        opts.dry_run,
        opts.break_lock,
        // From a bundle, nothing of the gateway need be left.
        opts.plan.is_none(),
        "roll back",
        &ev,
        stop,
        async |held| Box::pin(run(cluster, held, name, opts, &ev, confirm)).await,
    ))
    .await;
    if let Err(e) = &result {
        ev.emit(Event::Stopped {
            code: e.exit_code(),
            message: crate::error::error_line(e),
        });
    }
    result
}

async fn run(
    cluster: &Cluster,
    held: Option<&lock::Lock>,
    name: &str,
    opts: &RollbackOptions,
    ev: &dyn Emit,
    confirm: &mut impl Confirm,
) -> Result<Outcome, Error> {
    let ns = cluster.namespace.clone();
    let by = steps::identity(held);
    let saved = opts
        .plan
        .as_ref()
        .map(|d| bundle::read_saved(d))
        .transpose()?;
    let j = match (stored::read(cluster, name).await?, saved) {
        (Some(j), saved) => {
            if let Some((plan, _)) = saved {
                let drift = journal::journal_drift(&plan, &j);
                if !drift.is_empty() {
                    ev.emit(Event::Drift(drift));
                    return Err(Error::Stop {
                        code: exit::REFUSED,
                        message: format!(
                            "the journal of {name} -n {ns} is not of the plan in --plan"
                        ),
                        hint: Some(
                            "leave out --plan: the journal in the cluster is what the cutover did"
                                .into(),
                        ),
                    });
                }
            }
            j
        }
        (None, Some((plan, old))) => {
            let j = Journal::from_bundle(&plan, old, &now(), &by);
            if j.gateway != name || j.namespace != ns {
                return Err(Error::Stop {
                    code: exit::REFUSED,
                    message: format!(
                        "the bundle in --plan is of {1} -n {0}, not {name} -n {ns}",
                        j.namespace, j.gateway
                    ),
                    hint: None,
                });
            }
            ev.emit(Event::Info(format!(
                "no journal ConfigMap {ns}/{}: rolling back from the bundle",
                journal::object_name(name)
            )));
            ev.emit(Event::Note(format!(
                "the bundle is the gateway as it was planned (uid {}, spec {}); an edit made after that plan is not in it",
                j.old_uid.as_deref().unwrap_or("?"),
                j.spec_fingerprint
            )));
            j.validate().map_err(|why| Error::Stop {
                code: exit::REFUSED,
                message: format!("the bundle cannot be rolled back to: {why}"),
                hint: None,
            })?;
            j
        }
        (None, None) => {
            // A cutover stopped before its journal (killed while planning, refused) left
            // the old gateway as it was: that is the state a rollback ends in, so there is
            // nothing to do, not a refusal without a way on (issue 14 item 6).
            let old = objects::get(cluster, "IPsecGateway", name).await?;
            let untouched = old
                .as_ref()
                .is_some_and(|o| o.pointer("/metadata/deletionTimestamp").is_none());
            if untouched && objects::get(cluster, "VPNGateway", name).await?.is_none() {
                ev.emit(Event::Info(format!(
                    "IPsecGateway {ns}/{name} is live and no window of it was started (no journal ConfigMap {}, no VPNGateway): nothing to roll back",
                    journal::object_name(name)
                )));
                return Ok(Outcome::NothingToDo);
            }
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!(
                    "no journal of {name} -n {ns} (ConfigMap {}): nothing recorded to roll back to",
                    journal::object_name(name)
                ),
                hint: Some(crate::state::lost_journal_hint(&cluster.server, &ns, name).unwrap_or_else(|| format!(
                    "pass the bundle of the cutover (--plan DIR), or check the namespace (`kubectl get configmaps -n {ns} -l app.kubernetes.io/managed-by=vpnmig`)"
                ))),
            });
        }
    };
    // Rolled back: is the IPsecGateway it left still there? One gone since (pruned,
    // deleted by hand) is never "nothing to do" (a21e 6, 11): it is re-created from the
    // journal, as the rollback did, with every check of a rollback before it.
    let mut j = j;
    if j.phase == Phase::RolledBack {
        let old = objects::get(cluster, "IPsecGateway", name).await?;
        let new = objects::get(cluster, "VPNGateway", name).await?;
        let state = j.left(old.as_ref(), new.as_ref());
        if let Some(text) = j.left_text(state) {
            reopen(&mut j, state, text, ev, &by)?;
        }
    }
    if j.phase == Phase::RolledBack && j.gitops.iter().any(|r| r.paused) {
        // Rolled back, and an owner it suspended waits for the repository to define the
        // IPsecGateway again.
        if opts.dry_run {
            return Ok(super::gitops::restore_dry_run(ev, &j, "rollback"));
        }
        let w = Window {
            cluster,
            ev,
            journal: j.clone(),
            lock: held,
            by,
        };
        return super::gitops::restore_finished(w, "VPNGateway", opts.gitops.resume).await;
    }
    if j.phase == Phase::RolledBack {
        ev.emit(Event::Info(format!(
            "{ns}/{name} is already rolled back ({}): nothing to do",
            j.history.last().map(|e| e.at.as_str()).unwrap_or("?")
        )));
        return Ok(Outcome::NothingToDo);
    }
    let fip = j
        .old_manifest
        .pointer("/spec/endpoint/floatingIP")
        .and_then(Value::as_str)
        .filter(|f| !f.is_empty());
    if fip.is_none() {
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!("the saved ipsecgateway/{name} -n {ns} does not pin its floating IP (spec.endpoint.floatingIP is empty): re-creating it would allocate a new one"),
            hint: Some("restore the old gateway by hand with the floating IP pinned in spec.endpoint.floatingIP".into()),
        });
    }
    new_fip_pinned(cluster, &j).await?;
    if j.phase < Phase::OldApplied {
        fip_unclaimed(cluster, &j).await?;
    }
    steps::require_permissions(cluster, "roll back").await?;
    // The VPNGateway the rollback deletes may be synced by now (a merged repository, a
    // restored owner): the same choice as a cutover, before any change (issue 11).
    super::gitops::rollback_owners(cluster, ev, name, &mut j, opts.gitops.mode).await?;
    // Every precondition before the first change (issue 14 item 6): the PSK Secret the
    // re-created gateway authenticates with, and which VPNPeers the rollback may delete.
    // At every phase, a re-created gateway already there too: a rollback that closes its
    // journal over a key that is not the client's would be a false "rolled back" (a21f A2,
    // A4).
    let psk = objects::secret(cluster, &j.psk_secret).await?;
    if let Some(s) = &psk {
        // A key rotated during the window would fail the re-created gateway's tunnels:
        // refuse before the first change, not after the re-create.
        steps::psk_unchanged(ev, &j, s).map_err(|e| match e {
            Error::Stop { message, hint, .. } => Error::Stop {
                code: exit::REFUSED,
                message: format!("{message}; nothing was changed"),
                hint,
            },
            e => e,
        })?;
    }
    if psk.is_none() {
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "PSK secret/{} -n {ns} does not exist: the re-created IPsecGateway could not authenticate its peers; nothing was changed",
                j.psk_secret
            ),
            hint: Some(format!(
                "re-create the Secret from your own records (vpnmig never stores a key): `kubectl create secret generic {} -n {ns} --from-literal={}=<the client's key>`, then run the rollback again: `{}`",
                j.psk_secret,
                j.psk_key(),
                crate::error::again(&[])
            )),
        });
    }
    if !opts.choices.drop_missing_owners {
        missing_owners(cluster, ev, &j, false).await?;
    }
    let scope = if j.phase < Phase::NewDeleted {
        let s = peer_scope(cluster, ev, &j, opts.choices.delete_extra_peers).await?;
        for (peer, why) in &s.foreign {
            ev.emit(Event::Note(format!(
                "VPNPeer {ns}/{peer} is left alone: {why}"
            )));
        }
        s
    } else {
        PeerScope::default()
    };
    // `--window-end`: rolling back is the safe direction; a window too short only warns.
    if let Some(end) = &opts.window_end {
        let g = super::guard::Guard::new(cluster, ev, end, &opts.timeouts, j.phase, true).await;
        super::guard::warn_rollback(ev, &g);
    }
    ev.emit(Event::Stage(Stage::Confirm));
    confirm
        .confirm(Ask {
            gateway: name.to_string(),
            action: "roll back",
            dry_run: opts.dry_run,
            summary: Summary::Rollback {
                context: cluster.context.clone(),
                journal: Box::new(j.clone()),
                peers: (j.phase < Phase::NewDeleted).then(|| scope.peers.clone()),
            },
        })
        .await?;
    if opts.dry_run {
        let mut admitted = Vec::new();
        for n in &scope.peers {
            let target = Target::Peer {
                gateway: name,
                recorded: &scope.recorded,
            };
            if let delete::Outcome::Sent { .. } =
                delete::delete(cluster, target, n, |_| Ok(()), true).await?
            {
                admitted.push(format!("VPNPeer {n}"));
            }
        }
        let target = Target::NewGateway {
            fip: &j.floating_ip,
            recorded: &scope.recorded,
        };
        if let delete::Outcome::Sent { .. } =
            delete::delete(cluster, target, name, |_| Ok(()), true).await?
        {
            admitted.push(format!("VPNGateway {name}"));
        }
        ev.emit(Event::Step(format!(
            "dry run: deletes admitted: {}",
            if admitted.is_empty() {
                "none (nothing of the new kinds exists)".to_string()
            } else {
                admitted.join(", ")
            }
        )));
        if objects::get(cluster, "IPsecGateway", name).await?.is_none() {
            let mut j = j.clone();
            j.dropped_owner_references
                .extend(missing_owners(cluster, ev, &j, opts.choices.drop_missing_owners).await?);
            objects::create(cluster, &j.manifest_to_create(), true).await?;
            ev.emit(Event::Step(format!(
                "dry run: create of IPsecGateway {name} admitted"
            )));
        }
        ev.emit(Event::Info("dry run: nothing was changed".into()));
        return Ok(Outcome::DryRun);
    }
    let mut w = Window {
        cluster,
        ev,
        journal: j,
        lock: held,
        by,
    };
    let t = roll_back(&mut w, &opts.timeouts, opts.choices).await?;
    // Rolled back: hand the old gateway back to its GitOps owner (issue 11 item 2).
    super::gitops::restore(&mut w, "VPNGateway", opts.gitops.resume).await?;
    ev.emit(Event::Finished {
        operation: Operation::Rollback,
        journal: Box::new(w.journal.clone()),
        verify: t.rows,
    });
    Ok(Outcome::Done)
}

/// A rolled-back window whose IPsecGateway is not as it left it (`state`, said in
/// `text`): gone, it is re-created from the journal as the rollback did (the journal goes
/// back to `new-deleted`, in memory until the re-create is recorded, so a refusal or a
/// "no" at the prompt writes nothing). Being deleted, or replaced by a VPNGateway the
/// window did not leave, or synced by a GitOps owner no window holds: refused, nothing
/// changed, with what to do.
fn reopen(
    j: &mut Journal,
    state: journal::Left,
    text: String,
    ev: &dyn Emit,
    by: &str,
) -> Result<(), Error> {
    let (name, ns) = (j.gateway.clone(), j.namespace.clone());
    match state {
        journal::Left::Terminating => {
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!("{text}; nothing was changed"),
                hint: Some(format!(
                    "once it is gone (`kubectl get ipsecgateway {name} -n {ns} -w`), `vpnmig rollback {name} -n {ns}` re-creates it from the journal with its floating IP pinned; find out who deleted it first (`kubectl get events -n {ns}`)"
                )),
            });
        }
        journal::Left::OtherKind => {
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!("{text}; nothing was changed"),
                hint: Some(format!(
                    "find out who made it (`kubectl get vpngateway {name} -n {ns} --show-managed-fields -o yaml`); `vpnmig verify {name} -n {ns}` checks what it serves. vpnmig deletes only what its own window made, and re-creates the IPsecGateway only where neither kind exists"
                )),
            });
        }
        journal::Left::Gone => {}
        journal::Left::AsLeft | journal::Left::UnderWay => return Ok(()),
    }
    // An owner that syncs the old gateway and that no window holds suspended pruned it
    // (its source no longer defines it) and would prune a re-created one again.
    let held =
        |o: &crate::core::gitops::OwnerRef| j.gitops.iter().any(|r| r.paused && &r.owner == o);
    let syncing: Vec<String> = crate::core::gitops::detect(&j.old_manifest)
        .iter()
        .filter(|m| m.tool.reconciles())
        .filter(|m| m.owner.as_ref().is_none_or(|o| !held(o)))
        .map(|m| match &m.owner {
            Some(o) => o.display(),
            None => m.tool.label(),
        })
        .collect();
    if !syncing.is_empty() {
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "{text}; {} syncs it, so a re-created one would be pruned again while its source does not define it; nothing was changed",
                syncing.join(", ")
            ),
            hint: Some(format!(
                "put ipsecgateway/{name} back in the repository as the journal keeps it (its floating IP pinned: `vpnmig report {name} -n {ns}` shows the window); its owner then re-creates it; `vpnmig verify {name} -n {ns}` checks it"
            )),
        });
    }
    ev.emit(Event::Warning(format!(
        "{text}: the rollback re-creates it from the journal (floating IP pinned, PSK checked against its fingerprint)"
    )));
    j.advance(
        Phase::NewDeleted,
        &now(),
        &format!("{by} (the IPsecGateway the rollback left is gone)"),
    );
    Ok(())
}

/// The rollback steps from the journal's phase to `RolledBack` (also run by
/// `cutover --rollback-on-failure`, under the cutover's lock).
pub async fn roll_back(
    w: &mut Window<'_>,
    t: &Timeouts,
    choices: Choices,
) -> Result<Tunnels, Error> {
    match phases(w, t, choices).await {
        Err(e) if !matches!(e, Error::Lock(_)) => {
            let line = crate::error::error_line(&e);
            w.record_error(&line).await;
            if matches!(e, Error::Stop { .. }) {
                return Err(e);
            }
            let (name, ns) = (w.name().to_string(), w.ns().to_string());
            Err(Error::Stop {
                code: e.exit_code(),
                message: format!(
                    "rollback of {name} -n {ns} stopped at phase {}: {line}",
                    w.journal.phase
                ),
                hint: Some(format!(
                    "once the cause is fixed, `vpnmig rollback {name} -n {ns}` resumes from there{}",
                    e.hint().map(|h| format!(" ({h})")).unwrap_or_default()
                )),
            })
        }
        other => other,
    }
}

async fn phases(w: &mut Window<'_>, t: &Timeouts, choices: Choices) -> Result<Tunnels, Error> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let (cluster, ev) = (w.cluster, w.ev);
    let again = Some(format!(
        "`vpnmig rollback {name} -n {ns}` resumes the rollback"
    ));
    // Which VPNPeers are this window's, judged before anything changes (and each again,
    // at its version, by the guarded delete).
    let scope = if w.journal.phase < Phase::NewDeleted {
        peer_scope(cluster, ev, &w.journal, choices.delete_extra_peers).await?
    } else {
        PeerScope::default()
    };
    // The owners the re-created gateway would name, before anything changes (also
    // under `cutover --rollback-on-failure`); a choice to drop some is recorded first.
    let dropped = missing_owners(cluster, ev, &w.journal, choices.drop_missing_owners).await?;
    let recorded = !dropped.is_empty();
    w.journal.dropped_owner_references.extend(dropped);
    if !w.journal.phase.rolling_back() {
        ev.emit(Event::Stage(Stage::Start));
        w.save(Phase::RollingBack).await?;
    } else if recorded {
        w.check_lock().await?;
        stored::write(cluster, &w.journal, false).await?;
    }
    // Suspend the owners that sync the new objects before they are deleted.
    if w.journal.phase < Phase::NewDeleted {
        super::gitops::pause(w, "rollback").await?;
    }
    // Nothing being deleted may take the PSK Secret with it: detach it from the new
    // objects (and an old gateway still unwinding) first, then guard it while they go.
    let owners = window_owners(w).await?;
    if w.journal.phase < Phase::OldApplied {
        ev.emit(Event::Stage(Stage::PskDetach));
        w.detach_psk(&owners, "the objects being deleted").await?;
    }
    if w.journal.phase < Phase::NewDeleted {
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
            let wait = steps::wait_uids_gone(cluster, ev, "VPNPeer", &peer_uids, t.delete, &title);
            if let Err(d) = w.guarded(&owners, wait).await? {
                return Err(timed_out(
                    "the VPNPeers to be deleted",
                    t.delete,
                    &d,
                    again.clone(),
                ));
            }
        }
        new_kind_gone(w, &scope.peers, &before).await?;
        let title = format!("delete VPNGateway {ns}/{name}");
        let gw_uid = uids("VPNGateway");
        let wait = steps::wait_uids_gone(cluster, ev, "VPNGateway", &gw_uid, t.delete, &title);
        if let Err(d) = w.guarded(&owners, wait).await? {
            return Err(timed_out(
                &format!("vpngateway/{name} -n {ns} to be deleted"),
                t.delete,
                &d,
                again,
            ));
        }
        new_kind_gone(w, &scope.peers, &[]).await?;
        w.save(Phase::NewDeleted).await?;
    }
    if w.journal.phase < Phase::OldApplied {
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
                    t.delete,
                    &title,
                );
                if let Err(d) = w.guarded(&owners, wait).await? {
                    return Err(timed_out(
                        &format!("ipsecgateway/{name} -n {ns} to be deleted"),
                        t.delete,
                        &d,
                        Some(format!(
                            "the operator's unwind of the old IPsecGateway has not finished and its finalizer is the operator's to remove: look at the operator's logs; once it is gone, `vpnmig rollback {name} -n {ns}` resumes"
                        )),
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
        w.save(Phase::OldApplied).await?;
    } else if objects::get(cluster, "IPsecGateway", &name)
        .await?
        .is_none()
    {
        // Re-created by this rollback and gone since (a GitOps prune, a person): the
        // journal's manifest is still what goes back (attack finding: a resume waited
        // for a gateway it would never create).
        ev.emit(Event::Warning(format!(
            "IPsecGateway {ns}/{name}, re-created by this rollback, is gone: re-creating it from the journal"
        )));
        ev.emit(Event::Stage(Stage::CreateOld));
        w.check_lock().await?;
        settled(w, &scope.peers).await?;
        create_old(w).await?;
        steps::check_psk(w).await?;
    }
    // From here the new gateway is gone: if anything re-creates it (a GitOps self-heal
    // to a merged repository), every wait below stops at once (issue 11 item 3).
    steps::unless_recreated(
        cluster,
        "VPNGateway",
        &name,
        "rollback",
        Box::pin(old_back(w, t, choices)),
    )
    .await
}

/// The re-created IPsecGateway: attached, Ready, its addresses and its tunnels.
async fn old_back(w: &mut Window<'_>, t: &Timeouts, choices: Choices) -> Result<Tunnels, Error> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let (cluster, ev) = (w.cluster, w.ev);
    let again = Some(format!(
        "`vpnmig rollback {name} -n {ns}` resumes the rollback"
    ));
    let me = [name.clone()];
    ev.emit(Event::Stage(Stage::Attach));
    let title = format!(
        "IPsecGateway {ns}/{name} FIPAttached (floating IP {})",
        w.journal.floating_ip
    );
    if let Err(d) = steps::wait_conditions(
        cluster,
        ev,
        "IPsecGateway",
        &me,
        &["FIPAttached"],
        t.attach,
        &title,
    )
    .await?
    {
        return Err(timed_out(
            &format!("ipsecgateway/{name} -n {ns} FIPAttached"),
            t.attach,
            &d,
            again,
        ));
    }
    ev.emit(Event::Stage(Stage::Ready));
    let title = format!("IPsecGateway {ns}/{name} Ready");
    let ready = steps::wait_ready_or_no_addresses(cluster, ev, &me, t.attach, &title).await?;
    // No serviceCIDR to give: the addresses are judged below (exit 5, `--forward`).
    if let Err(d) = ready.as_ref().map_err(String::as_str)
        && !d.contains(steps::NO_ADDRESSES)
    {
        return Err(timed_out(
            &format!("ipsecgateway/{name} -n {ns} Ready"),
            t.attach,
            d,
            again,
        ));
    }
    // The old kind cannot pin its serviceCIDR: say at once if the operator gave another.
    let status = objects::get(cluster, "IPsecGateway", &name)
        .await?
        .and_then(|o| o.get("status").cloned())
        .unwrap_or_default();
    let lost = journal::lost_addresses(&w.journal, &status);
    if !lost.is_empty() && choices.accept_new_addresses {
        ev.emit(Event::Note(format!(
            "--accept-new-addresses: IPsecGateway {ns}/{name} keeps the addresses the operator gave it ({}); the client's side must be changed to them",
            lost.join(", ")
        )));
    } else if !lost.is_empty() {
        let message = format!(
            "ipsecgateway/{name} -n {ns} is back with its floating IP, but the operator allocated other addresses: {}",
            lost.join(", ")
        );
        w.record_error(&message).await;
        // An owner that still acts on the re-created gateway (ignoring its suspension,
        // re-enabled) would undo a `--forward`'s delete: that advice would loop until it
        // stops (issue 21 item 3).
        let acting = match objects::get(cluster, "IPsecGateway", &name).await? {
            Some(obj) => super::gitops::still_acting(w, &obj).await?,
            None => None,
        };
        let forward = match acting {
            Some((why, first)) => format!(
                "{why}. A `--forward` now would delete it only to have it re-created (the floating IP contended): {first}; once it no longer acts, `vpnmig cutover {name} -n {ns} --forward` moves forward again (the journal's VPNGateway pins them)"
            ),
            None => format!(
                "either move forward again with `vpnmig cutover {name} -n {ns} --forward` (the journal's VPNGateway pins them)"
            ),
        };
        return Err(Error::Stop {
            code: exit::VERIFY_FAILED,
            message,
            hint: Some(format!(
                "the IPsecGateway kind has no spec field for its serviceCIDR, so a re-created one gets the next free /24 (the runbook's rollback cannot pin it). \
The client's routes and firewall name the old addresses: {forward}, or change them on the client side and close the journal with `vpnmig rollback {name} -n {ns} --accept-new-addresses`"
            )),
        });
    }
    let (service_cidr, virtual_ips) = if choices.accept_new_addresses {
        (None, Vec::new())
    } else {
        w.journal.pinned_addresses()
    };
    // The saved manifest is the reference of a gateway this window re-created; one that
    // was never deleted (same uid) is kept as it is, edits and all.
    let live_uid = objects::get(cluster, "IPsecGateway", &name)
        .await?
        .and_then(|o| {
            o.pointer("/metadata/uid")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
    let reference = if live_uid.is_some() && live_uid != w.journal.old_uid {
        vec![w.journal.old_manifest.clone()]
    } else {
        Vec::new()
    };
    ev.emit(Event::Stage(Stage::Tunnels));
    let expect = steps::Expect {
        kind: "IPsecGateway",
        service_cidr,
        virtual_ips,
        reference,
    };
    if live_uid.is_some() && live_uid == w.journal.old_uid {
        // The window stopped before its delete: the IPsecGateway was never deleted, so its
        // tunnels are as the window found them, and none of them is this rollback's to
        // bring back. A tunnel down before the window (the cutover's stop for it says
        // "`vpnmig rollback` closes the journal") would otherwise hold the journal open
        // for ever (n23 finding 1: every command it then advised failed).
        let rows = steps::verify_once(cluster, &name, &expect).await?;
        w.save(Phase::RolledBack).await?;
        ev.emit(Event::Note(format!(
            "IPsecGateway {ns}/{name} was never deleted (uid {}): its tunnels are as the window found them and were not waited for; `vpnmig verify {name} -n {ns}` shows them",
            live_uid.as_deref().unwrap_or("?")
        )));
        return Ok(Tunnels {
            rows,
            first_up: None,
            up: Vec::new(),
            timed_out: None,
        });
    }
    if choices.accept_new_addresses && !lost.is_empty() {
        // The client still dials the old addresses: its tunnels come up only after it is
        // changed, which no wait here can bring about. Close the journal, show the state
        // as it is, and say what checks the tunnels later.
        let rows = steps::verify_once(cluster, &name, &expect).await?;
        w.save(Phase::RolledBack).await?;
        ev.emit(Event::Note(format!(
            "the tunnels were not waited for: they come up once the client uses the new addresses; `vpnmig verify {name} -n {ns} --wait` checks them"
        )));
        // Only the tunnels may be missing here: anything else failed is not healthy,
        // whatever the choice to close the journal (a21f A2: exit 0 under NOT HEALTHY).
        let failed: Vec<String> = rows
            .iter()
            .filter(|r| r.verdict == crate::core::verify::Verdict::Fail)
            .filter(|r| !matches!(r.check, "tunnel" | "reach"))
            .map(|r| format!("{} {} {}: {}", r.check, r.object, r.what, r.detail))
            .collect();
        if !failed.is_empty() {
            return Err(Error::Stop {
                code: exit::VERIFY_FAILED,
                message: format!(
                    "the journal is closed (rolled-back, as --accept-new-addresses asks), but IPsecGateway {ns}/{name} is not healthy beyond its tunnels: {}",
                    failed.join("; ")
                ),
                hint: Some(format!("`vpnmig verify {name} -n {ns}` shows every check")),
            });
        }
        return Ok(Tunnels {
            rows,
            first_up: None,
            up: Vec::new(),
            timed_out: None,
        });
    }
    let tunnels_from = jiff::Timestamp::now();
    let initiations = if choices.initiate {
        steps::initiate(cluster, ev, &name, w.journal.data_plane_baseline.as_ref()).await?
    } else {
        Vec::new()
    };
    let tunnels = steps::wait_tunnels(cluster, ev, &name, t.tunnel, &expect).await?;
    w.journal.rollback_outage = Some(outage(
        &w.journal,
        &tunnels,
        &initiations,
        choices.initiate,
        tunnels_from,
    ));
    if let Some(d) = &tunnels.timed_out {
        return Err(timed_out(
            &format!(
                "the tunnels of {name} -n {ns} (journal phase {})",
                w.journal.phase
            ),
            t.tunnel,
            d,
            Some(format!(
                "the IPsecGateway is back and Ready; only its tunnels are missing. The client's peer re-initiates on its own DPD/retry timer; a PSK or proposal mismatch shows in the client's logs. `vpnmig rollback {name} -n {ns}` waits for them again"
            )),
        ));
    }
    w.save(Phase::RolledBack).await?;
    if let Some(d) = &w.journal.psk_detached {
        ev.emit(Event::Note(format!(
            "PSK Secret {} stays detached ({} ownerReference(s) to the deleted gateway were removed by the cutover; they would point at an object that no longer exists)",
            d.secret,
            d.removed_owner_references.len()
        )));
    }
    Ok(tunnels)
}

/// A rollback's outage: from the delete of the new gateway (journal phase rolling-back)
/// through its unwind, the re-created IPsecGateway's floating IP and readiness (one part,
/// `attach`, up to `tunnels_from`), to each tunnel up; how each came back.
fn outage(
    j: &Journal,
    tunnels: &Tunnels,
    initiations: &[steps::Initiation],
    initiate: bool,
    tunnels_from: jiff::Timestamp,
) -> crate::core::dataplane::Outage {
    let at = |p| steps::reached(j, p);

    let peers: Vec<(String, String)> = j
        .old_manifest
        .pointer("/spec/tunnels")
        .and_then(Value::as_array)
        .map(|ts| {
            ts.iter()
                .map(|t| {
                    let s = |p: &str| {
                        t.pointer(p)
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string()
                    };
                    (s("/name"), s("/peer/address"))
                })
                .collect()
        })
        .unwrap_or_default();
    // The last tunnel up, once every one is: with one still down the outage has not
    // ended, and "the last tunnel up" would be a false figure (attack finding).
    let last_up = (tunnels.up.len() >= peers.len())
        .then(|| tunnels.up.iter().map(|(_, t)| *t).max())
        .flatten();
    crate::core::dataplane::Outage {
        total_ms: steps::between(at(Phase::RollingBack), last_up),
        unwind_ms: steps::between(at(Phase::RollingBack), at(Phase::NewDeleted)),
        attach_ms: steps::between(at(Phase::NewDeleted), Some(tunnels_from)),
        ready_ms: None,
        tunnel_ms: steps::between(Some(tunnels_from), last_up),
        initiate,
        tunnels: steps::tunnel_outages(&peers, tunnels, initiations, at(Phase::RollingBack)),
    }
}

/// The live VPNGateway (if any) pins the journal's floating IP: deleting it then only
/// disassociates the address. Checked before the prompt and again right before the
/// delete (also under `cutover --rollback-on-failure`).
async fn new_fip_pinned(cluster: &Cluster, j: &Journal) -> Result<(), Error> {
    let (name, ns) = (j.gateway.as_str(), j.namespace.as_str());
    let Some(gw) = objects::get(cluster, "VPNGateway", name).await? else {
        return Ok(());
    };
    // The rule every delete applies (`core::scope`), asked before the prompt.
    crate::core::scope::gateway_deletable(&gw, &j.floating_ip).map_err(|why| Error::Stop {
        code: exit::REFUSED,
        message: format!("vpngateway/{name} -n {ns} cannot be deleted: {why}; nothing was changed"),
        hint: Some(format!(
            "pin it first: {}; then run it again: `{}`",
            crate::core::scope::pin_command("VPNGateway", name, ns, &j.floating_ip),
            crate::error::again(&[])
        )),
    })
}

/// No other gateway (another name, either kind, any namespace) claims the floating IP the
/// re-created IPsecGateway pins: deleting the VPNGateway would let the operator associate
/// it with that one, and the re-created gateway would wait at `AlreadyAssociated` for
/// ever (a21f C1, A5: a rollback handed the client's floating IP to another gateway, and
/// its advice, "run it again", looped). Checked before anything changes; gateways that
/// could not be listed are "could not ask", a refusal too.
async fn fip_unclaimed(cluster: &Cluster, j: &Journal) -> Result<(), Error> {
    let (name, ns) = (j.gateway.as_str(), j.namespace.as_str());
    let fip = j
        .old_manifest
        .pointer("/spec/endpoint/floatingIP")
        .and_then(Value::as_str)
        .unwrap_or(&j.floating_ip)
        .to_string();
    let me = (ns.to_string(), name.to_string());
    let claims: Vec<String> = match crate::cluster::facts::other_gateways(cluster, &me).await? {
        Ok(others) => others
            .iter()
            .filter(|o| {
                o.floating_ip
                    .as_deref()
                    .is_some_and(|f| crate::core::addr::same_addr(f, &fip))
            })
            .map(|o| o.object.clone())
            .collect(),
        Err(why) => {
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!(
                    "whether another gateway claims floating IP {fip} cannot be told: the gateways of all namespaces could not be listed ({why}); a rollback while one does would hand it the client's address; nothing was changed"
                ),
                hint: Some(
                    "ask for `list ipsecgateways,vpngateways` in all namespaces (a ClusterRole), or roll back with a context that has it".into(),
                ),
            });
        }
    };
    if claims.is_empty() {
        return Ok(());
    }
    Err(Error::Stop {
        code: exit::REFUSED,
        message: format!(
            "floating IP {fip}, which the journal of {ns}/{name} pins for the client, is claimed by {} too: the rollback would delete what holds it now and the operator could associate it with that gateway, while the re-created IPsecGateway waits at AlreadyAssociated; nothing was changed",
            claims.join(" and ")
        ),
        hint: Some(format!(
            "find out why {} claims it (`kubectl get ipsecgateways,vpngateways -A -o wide`); take the floating IP out of its spec (in its repository first where Argo CD or Flux syncs it), then `vpnmig rollback {name} -n {ns}`",
            if claims.len() == 1 { "it" } else { "they" }
        )),
    })
}

/// What the PSK Secret must not be owned by during this rollback.
async fn window_owners(w: &Window<'_>) -> Result<Owners, Error> {
    let mut uids = Vec::new();
    for (kind, n) in w.journal.target_names() {
        if let Some(o) = objects::get(w.cluster, &kind, &n).await?
            && let Some(uid) = o.pointer("/metadata/uid").and_then(Value::as_str)
        {
            uids.push(uid.to_string());
        }
    }
    Ok(Owners::of_window(&w.journal, uids))
}

/// The ownerReferences of the saved old manifest whose owners are gone (issue 9 item 9),
/// checked only while the IPsecGateway is still to be re-created: absent, or another
/// object of that name (another uid). None: `Ok(vec![])`. Some and `drop`: they are
/// announced and returned (to be recorded and left out of the create). Some without
/// `drop`: a refusal naming them, before anything changed.
async fn missing_owners(
    cluster: &Cluster,
    ev: &dyn Emit,
    j: &Journal,
    drop: bool,
) -> Result<Vec<Value>, Error> {
    let (name, ns) = (j.gateway.as_str(), j.namespace.as_str());
    if j.phase >= Phase::OldApplied {
        return Ok(Vec::new());
    }
    let live = objects::get(cluster, "IPsecGateway", name).await?;
    if live.is_some_and(|o| o.pointer("/metadata/deletionTimestamp").is_none()) {
        // Kept as it is, not re-created: its owners are its own business.
        return Ok(Vec::new());
    }
    let mut missing = Vec::new();
    for owner in j.old_owners() {
        let (uid, note) =
            objects::owner_uid(cluster, &owner.api_version, &owner.kind, &owner.name).await?;
        if let Some(note) = note {
            ev.emit(Event::Note(note));
        }
        let seen = uid.map_or(journal::OwnerSeen::Absent, journal::OwnerSeen::Uid);
        if let Some(why) = journal::owner_missing(&owner, &seen) {
            missing.push((owner, why));
        }
    }
    if missing.is_empty() {
        return Ok(Vec::new());
    }
    let list = missing
        .iter()
        .map(|(_, why)| why.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    if !drop {
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "the saved ipsecgateway/{name} -n {ns} is owned by {} that no longer exist{}: {list}. Re-created with these ownerReferences, it would be deleted by the garbage collector right after the rollback; nothing was changed",
                if missing.len() == 1 {
                    "an object"
                } else {
                    "objects"
                },
                if missing.len() == 1 { "s" } else { "" },
            ),
            hint: Some(format!(
                "either restore the owner with its uid (e.g. from a backup), or run `vpnmig rollback {name} -n {ns} --drop-missing-owners` to re-create the gateway without these references (recorded in the journal); whatever owned it then no longer manages it"
            )),
        });
    }
    for (_, why) in &missing {
        ev.emit(Event::Note(format!(
            "--drop-missing-owners: IPsecGateway {ns}/{name} is re-created without its ownerReference to {why}; recorded in the journal"
        )));
    }
    Ok(missing.into_iter().map(|(o, _)| o.raw).collect())
}

/// How long the new kind must stay gone, right before the IPsecGateway is re-created,
/// when a GitOps owner syncs it: a controller that ignores its suspension re-creates what
/// was deleted within moments of the delete, and a single read can come just before that.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(1500);

/// [`new_kind_gone`] right before the IPsecGateway is re-created; where the journal
/// names a GitOps owner, read again for [`SETTLE`] (every 100 ms), so that an owner that
/// ignores its suspension is caught before anything is re-created beside what it brings
/// back (a single read lost that race on a loaded machine).
async fn settled(w: &Window<'_>, peers: &[String]) -> Result<(), Error> {
    new_kind_gone(w, peers, &[]).await?;
    if w.journal.gitops.is_empty() {
        return Ok(());
    }
    let until = tokio::time::Instant::now() + SETTLE;
    while tokio::time::Instant::now() < until {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        new_kind_gone(w, peers, &[]).await?;
    }
    w.ev.emit(Event::Step(format!(
        "nothing re-created VPNGateway {}/{} within {} s of its delete ({} syncs it)",
        w.ns(),
        w.name(),
        SETTLE.as_secs_f32(),
        w.journal
            .gitops
            .iter()
            .map(|r| r.owner.display())
            .collect::<Vec<_>>()
            .join(", ")
    )));
    Ok(())
}

/// Right before the IPsecGateway is re-created, and after each delete wait, the new
/// kind is read again by name (issue 21 item 3, attack 10): a VPNGateway or VPNPeer of
/// the window's names that exists (other than the one still being deleted, `before`:
/// kind, name, uid before the delete) was re-created and holds or claims the floating
/// IP, so nothing is re-created beside it. The stop names each object live, who wrote
/// it, the owner that still acts, and what to do with each.
async fn new_kind_gone(
    w: &Window<'_>,
    peers: &[String],
    before: &[(String, String, Option<String>)],
) -> Result<(), Error> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let mut names: Vec<(String, String)> = vec![("VPNGateway".into(), name.clone())];
    for (k, n) in w
        .journal
        .target_names()
        .into_iter()
        .chain(peers.iter().map(|n| ("VPNPeer".to_string(), n.clone())))
    {
        if !names.contains(&(k.clone(), n.clone())) {
            names.push((k, n));
        }
    }
    let mut live: Vec<(String, String, Value)> = Vec::new();
    for (kind, n) in names {
        let Some(obj) = objects::get(w.cluster, &kind, &n).await? else {
            continue;
        };
        // A VPNPeer of the name that references another gateway is that gateway's, left
        // alone (the peer scope says so): not the new kind of this window.
        if kind == "VPNPeer"
            && obj.pointer("/spec/gatewayRef/name").and_then(Value::as_str) != Some(&name)
        {
            continue;
        }
        let uid = obj.pointer("/metadata/uid").and_then(Value::as_str);
        let deleting = before.iter().any(|(k, bn, bu)| {
            *k == kind && *bn == n && bu.as_deref().is_some_and(|b| Some(b) == uid)
        });
        if !deleting {
            live.push((kind, n, obj));
        }
    }
    let Some((_, _, first_obj)) = live
        .iter()
        .find(|(k, _, _)| k == "VPNGateway")
        .or(live.first())
    else {
        return Ok(());
    };
    let each: Vec<String> = live
        .iter()
        .map(|(k, n, o)| {
            format!(
                "{} (uid {}, {})",
                crate::core::model::object_ref(k, n, &ns),
                o.pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .unwrap_or("?"),
                crate::core::gitops::writer(o)
                    .map(|w| format!("written by {w}"))
                    .unwrap_or_else(|| "no field manager but vpnmig's and the operator's".into())
            )
        })
        .collect();
    let acting = super::gitops::still_acting(w, first_obj)
        .await
        .ok()
        .flatten();
    let cause = acting
        .as_ref()
        .map(|(why, _)| format!("; {why}"))
        .unwrap_or_default();
    let first = match &acting {
        Some((_, first)) => format!("{first}; until then every delete is undone. Then: "),
        None => format!(
            "find who re-created it and make sure nothing syncs it (`vpnmig status -n {ns} -o wide` shows its MANAGED-BY). Then: "
        ),
    };
    let delete = live
        .iter()
        .map(|(k, n, _)| format!("{}/{n}", k.to_lowercase()))
        .collect::<Vec<_>>()
        .join(" ");
    let old = if w.journal.phase >= Phase::OldApplied {
        format!(
            "; the IPsecGateway this rollback re-created earlier is {}",
            match objects::get(w.cluster, "IPsecGateway", &name).await? {
                Some(o) => format!(
                    "live (uid {})",
                    o.pointer("/metadata/uid")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                ),
                None => "gone (the journal still holds its manifest)".into(),
            }
        )
    } else {
        String::new()
    };
    Err(Error::Stop {
        code: exit::FAILURE,
        message: format!(
            "rollback of {name} -n {ns} stopped before re-creating IPsecGateway {ns}/{name} (journal phase {}; nothing was re-created now): {} exists again after this rollback deleted it{}{cause}{old}",
            w.journal.phase,
            each.join(", "),
            if live.iter().any(|(k, _, _)| k == "VPNGateway") {
                format!(
                    ", and would contend for the floating IP {}",
                    w.journal.floating_ip
                )
            } else {
                String::new()
            }
        ),
        hint: Some(format!(
            "{first}delete what came back (`kubectl delete {delete} -n {ns}`), then `vpnmig rollback {name} -n {ns}` resumes and re-creates the IPsecGateway from the journal"
        )),
    })
}

async fn create_old(w: &Window<'_>) -> Result<(), Error> {
    let ev = w.ev;
    let created = objects::create(w.cluster, &w.journal.manifest_to_create(), false).await?;
    ev.emit(Event::Step(format!(
        "IPsecGateway {}/{} {} from the saved manifest",
        w.ns(),
        w.name(),
        if created {
            "re-created"
        } else {
            "already exists"
        }
    )));
    Ok(())
}

/// The VPNPeers a rollback deletes, and those it leaves alone (DESIGN.md §4.8; issue 14
/// items 3 and 4).
#[derive(Default)]
struct PeerScope {
    /// To delete: proven the window's, or extras named by --delete-extra-peers.
    peers: Vec<String>,
    /// The uids that count as the window's: the journal's, and the extras consented to.
    recorded: Vec<String>,
    /// Left alone (another gateway's, or under a journal name but not the window's).
    foreign: Vec<(String, String)>,
}

/// Sort the namespace's VPNPeers for a rollback of the journal's gateway. Peers that
/// reference it but were not made by the window refuse the rollback (nothing changed)
/// unless `delete_extras`.
async fn peer_scope(
    cluster: &Cluster,
    ev: &dyn Emit,
    j: &Journal,
    delete_extras: bool,
) -> Result<PeerScope, Error> {
    let (name, ns) = (j.gateway.as_str(), j.namespace.as_str());
    let all = objects::list(cluster, "VPNPeer").await?;
    let mut out = PeerScope {
        recorded: j.target_uids.clone(),
        ..Default::default()
    };
    let mut extras = Vec::new();
    for fate in scope::sort_peers(&all, name, &j.peer_names(), &j.target_uids) {
        match fate {
            PeerFate::Delete { name, .. } => out.peers.push(name),
            PeerFate::Foreign { name, why } => out.foreign.push((name, why)),
            PeerFate::Extra { name, why } => extras.push((name, why)),
        }
    }
    if extras.is_empty() {
        return Ok(out);
    }
    if !delete_extras {
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "{} VPNPeer(s) reference gateway {name} -n {ns} but were not created by its cutover: {}. A rollback would leave them orphaned, and a later cutover would find more than one peer (default-deny); {}",
                extras.len(),
                extras
                    .iter()
                    .map(|(n, why)| format!("{n} ({why})"))
                    .collect::<Vec<_>>()
                    .join("; "),
                if j.phase.rolling_back() {
                    format!(
                        "this run changed nothing, and the rollback under way (journal phase {}) was not resumed",
                        j.phase
                    )
                } else {
                    "nothing was changed".to_string()
                }
            ),
            hint: Some(format!(
                "keep what they configure elsewhere, then either delete them yourself (`kubectl delete vpnpeer {} -n {ns}`) or run the rollback again with --delete-extra-peers: `{}`",
                extras
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
                crate::error::again(&["--delete-extra-peers"])
            )),
        });
    }
    for (n, _) in extras {
        if let Some(uid) = all
            .iter()
            .find(|p| p.pointer("/metadata/name").and_then(Value::as_str) == Some(&n))
            .and_then(|p| p.pointer("/metadata/uid").and_then(Value::as_str))
        {
            out.recorded.push(uid.to_string());
        }
        ev.emit(Event::Note(format!(
            "VPNPeer {ns}/{n} is not the cutover's; deleting it as --delete-extra-peers asks"
        )));
        out.peers.push(n);
    }
    Ok(out)
}
