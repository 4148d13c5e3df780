//! The rollback's last row: the re-created IPsecGateway attached, Ready, with the
//! journal's addresses, and its tunnels verified.

use super::*;

/// The re-created IPsecGateway: attached, Ready, its addresses and its tunnels.
/// Its waits are `step`'s: FIPAttached, Ready, the tunnels.
pub(super) async fn old_back(
    w: &mut Window<'_>,
    t: &Timeouts,
    choices: Choices,
    step: &'static table::Step<phases::Rollback>,
) -> Result<Tunnels, Error> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let (cluster, ev) = (w.cluster, w.ev);
    let [fip, ready_wait, up] = [&step.waits[0], &step.waits[1], &step.waits[2]];
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
        fip.timeout(t),
        &title,
    )
    .await?
    {
        return Err(fip.timed_out(
            t,
            w,
            &format!("ipsecgateway/{name} -n {ns} FIPAttached"),
            &d,
        ));
    }
    ev.emit(Event::Stage(Stage::Ready));
    let title = format!("IPsecGateway {ns}/{name} Ready");
    let ready =
        steps::wait_ready_or_no_addresses(cluster, ev, &me, ready_wait.timeout(t), &title).await?;
    // No serviceCIDR to give: the addresses are judged below (exit 5, `--forward`).
    if let Err(d) = ready.as_ref().map_err(String::as_str)
        && !d.contains(steps::NO_ADDRESSES)
    {
        return Err(ready_wait.timed_out(t, w, &format!("ipsecgateway/{name} -n {ns} Ready"), d));
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
            Some((why, first)) => crate::window::error::hint!(
                "{why}. A `--forward` now would delete it only to have it re-created (the floating IP contended): {first}; once it no longer acts, `{}` moves forward again (the journal's VPNGateway pins them)",
                crate::window::error::Run::cutover(&name, &ns).with(&["--forward"])
            ),
            None => crate::window::error::hint!(
                "either move forward again with `{}` (the journal's VPNGateway pins them)",
                crate::window::error::Run::cutover(&name, &ns).with(&["--forward"])
            ),
        };
        return Err(Error::Stop {
            code: exit::VERIFY_FAILED,
            message,
            hint: Some(crate::window::error::hint!(
                "the IPsecGateway kind has no spec field for its serviceCIDR, so a re-created one gets the next free /24 (the runbook's rollback cannot pin it). \
The client's routes and firewall name the old addresses: {}, or change them on the client side and close the journal with `{}`",
                forward,
                crate::window::error::Run::rollback(&name, &ns).with(&["--accept-new-addresses"])
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
                hint: Some(crate::window::error::hint!(
                    "`{}` shows every check",
                    crate::window::error::Run::verify(&name, &ns)
                )),
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
    let tunnels = steps::wait_tunnels(cluster, ev, &name, up.timeout(t), &expect).await?;
    w.journal.rollback_outage = Some(outage(
        &w.journal,
        &tunnels,
        &initiations,
        choices.initiate,
        tunnels_from,
    ));
    if let Some(d) = &tunnels.timed_out {
        return Err(up.timed_out(
            t,
            w,
            &format!(
                "the tunnels of {name} -n {ns} (journal phase {})",
                w.journal.phase
            ),
            d,
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
