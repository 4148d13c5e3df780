//! The rollback's phases in order: the new kinds deleted, then the old gateway back and
//! waited for.

use super::*;

pub(super) async fn phases(
    w: &mut Window<'_>,
    t: &Timeouts,
    choices: Choices,
) -> Result<Tunnels, Error> {
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
        super::super::gitops::pause(w, "rollback").await?;
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
pub(super) async fn old_back(
    w: &mut Window<'_>,
    t: &Timeouts,
    choices: Choices,
) -> Result<Tunnels, Error> {
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
            Some(obj) => super::super::gitops::still_acting(w, &obj).await?,
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
            // The addresses are what the choice accepts: the serviceCIDR and every
            // exposure's virtual IP (one added since the window has none in the journal).
            .filter(|r| {
                !(r.check == "pinned"
                    && (r.what.contains("serviceCIDR") || r.what.contains("virtualIP")))
            })
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
