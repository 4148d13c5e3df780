//! The cutover after the delete: the new gateway's waits, the data-plane baseline and its
//! comparison, and the re-check and guarded delete of the old gateway.

use super::*;

/// Right before the delete: the old gateway's data plane (`swanctl --list-sas` in its
/// pod) into the journal, what the new gateway's is compared with (issue 12 item 1).
/// SAs that cannot be read are a warning, not a stop: the tunnel wait still checks the
/// new gateway, only the comparison is missing.
///
/// A tunnel that is down right then stops the window, nothing deleted, unless
/// `allow_down` (`--allow-tunnels-down`): it has nothing to be compared with, its outage
/// did not start at the delete, and the tunnel wait after the delete would time out on it
/// with the old gateway already gone (attack finding a22 F3). A baseline recorded earlier
/// with every tunnel up is the reference instead, and does not stop it.
pub(super) async fn record_baseline(w: &mut Window<'_>, allow_down: bool) -> Result<(), Error> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    // An API server that does not answer the exec is like SAs that cannot be read: the
    // comparison is missing, the window is not stopped for it (the tunnel wait still
    // judges the new gateway).
    let sas = match fetch::sas(w.cluster, &name).await {
        Ok(r) => r,
        Err(e) => Err(e.to_string()),
    };
    match sas {
        Ok(sas) => {
            let b = Baseline::from_sas(&sas, &now(), &format!("IPsecGateway {ns}/{name}"));
            // A baseline recorded earlier (`verify --baseline`) with more tunnels up is the
            // better reference: a tunnel down right now is no reason to expect it down.
            if let Some(earlier) = &w.journal.data_plane_baseline
                && earlier.peers() > b.peers()
            {
                w.ev.emit(Event::Warning(format!(
                    "the old gateway has {} tunnel(s) up now, the baseline recorded at {} had {}: that one is kept as the reference",
                    b.peers(),
                    earlier.at,
                    earlier.peers()
                )));
                return Ok(());
            }
            w.ev.emit(Event::Step(format!(
                "recorded the data plane of IPsecGateway {ns}/{name}: {} tunnel(s), {} CHILD SA(s) (swanctl --list-sas in its pod)",
                b.peers(),
                b.tunnels.iter().map(|t| t.children.len()).sum::<usize>()
            )));
            // A tunnel down before the window has nothing to be compared with, and its
            // outage did not start at the delete (attack findings).
            let expected = w.journal.expected_peers();
            let down: Vec<String> = b
                .down(&expected)
                .iter()
                .map(|p| format!("{} ({})", p.name, p.id.as_deref().unwrap_or(&p.address)))
                .collect();
            if !down.is_empty() {
                let said = format!(
                    "only {} of the {} tunnel(s) of IPsecGateway {ns}/{name} are up right before the delete; down: {}",
                    expected.len() - down.len(),
                    expected.len(),
                    down.join(", ")
                );
                if !allow_down {
                    let e = Error::Stop {
                        code: exit::REFUSED,
                        message: format!(
                            "refusing to delete IPsecGateway {ns}/{name}: {said}. A tunnel that is down before the window cannot be shown to come back after it, and the window would wait for it with the old gateway gone; nothing was deleted: the IPsecGateway is untouched (journal phase {})",
                            w.journal.phase
                        ),
                        hint: Some(crate::window::error::hint!(
                            "bring the tunnel up first (the client's side, or `kubectl exec -n {ns} POD -c strongswan -- swanctl --initiate --child NAME` in the gateway's pod; `{}` shows each tunnel), then run the same command again; `{}` closes the journal (the IPsecGateway stays); or, to cut over with the tunnel down, `{}`",
                            crate::window::error::Run::verify(&name, &ns),
                            crate::window::error::Run::rollback(&name, &ns),
                            crate::window::error::Next::again_without("", &["--allow-tunnels-down"])
                        )),
                    };
                    w.record_error(&crate::window::error::error_line(&e)).await;
                    return Err(e);
                }
                w.ev.emit(Event::Warning(format!(
                    "{said} (--allow-tunnels-down): a tunnel that is down now is not compared after the window, and its outage began before it"
                )));
            }
            w.journal.data_plane_baseline = Some(b);
        }
        Err(why) => match &w.journal.data_plane_baseline {
            Some(earlier) => w.ev.emit(Event::Warning(format!(
                "the SAs of IPsecGateway {ns}/{name} could not be read ({why}): the baseline recorded at {} is the reference",
                earlier.at
            ))),
            None => w.ev.emit(Event::Warning(format!(
                "no data-plane baseline: the SAs of IPsecGateway {ns}/{name} could not be read ({why}); the new gateway's tunnels are verified, but not compared with the old ones"
            ))),
        },
    }
    Ok(())
}

/// The outage of the window, from the journal's history and the tunnel wait (issue 12
/// item 3): the delete to each tunnel up, and the parts between the phases.
pub(super) fn outage(
    j: &Journal,
    tunnels: &steps::Tunnels,
    initiations: &[steps::Initiation],
    initiate: bool,
) -> Outage {
    let at = |p| steps::reached(j, p);

    let peers: Vec<(String, String)> = j
        .targets
        .iter()
        .filter(|t| t["kind"] == "VPNPeer")
        .map(|t| {
            (
                t.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                t.pointer("/spec/ipsec/peer/address")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    // The last tunnel up, once every one is: with one still down the outage has not
    // ended, and "the last tunnel up" would be a false figure (attack finding).
    let last_up = (tunnels.up.len() >= peers.len())
        .then(|| tunnels.up.iter().map(|(_, t)| *t).max())
        .flatten();
    Outage {
        total_ms: steps::between(at(Phase::Deleting), last_up),
        unwind_ms: steps::between(at(Phase::Deleting), at(Phase::Deleted)),
        attach_ms: steps::between(at(Phase::Deleted), at(Phase::Attached)),
        ready_ms: steps::between(at(Phase::Attached), at(Phase::Ready)),
        tunnel_ms: steps::between(at(Phase::Ready), last_up),
        initiate,
        tunnels: steps::tunnel_outages(&peers, tunnels, initiations, at(Phase::Deleting)),
    }
}

/// Once the tunnels are up: the new gateway's data plane compared with the baseline. A
/// changed fact the client sees stops the window (exit 5) before it is done.
pub(super) async fn compare_data_plane(w: &mut Window<'_>) -> Result<(), Error> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let Some(before) = w.journal.data_plane_baseline.clone() else {
        return Ok(());
    };
    if before.tunnels.is_empty() {
        // Nothing was up to compare with: no verdict, rather than a green one.
        w.ev.emit(Event::Warning(format!(
            "data plane not compared: no tunnel of IPsecGateway {ns}/{name} was up before the delete (baseline at {})",
            before.at
        )));
        return Ok(());
    }
    let sas = match fetch::sas(w.cluster, &name).await? {
        Ok(sas) => sas,
        Err(why) => {
            w.ev.emit(Event::Warning(format!(
                "the data plane of VPNGateway {ns}/{name} could not be read ({why}): not compared with the old gateway's; `vpnmig verify {name} -n {ns}` compares it"
            )));
            return Ok(());
        }
    };
    let after = Baseline::from_sas(&sas, &now(), &format!("VPNGateway {ns}/{name}"));
    let c = dataplane::compare(&before, &after);
    w.journal.data_plane = Some(c.clone());
    w.ev.emit(Event::DataPlane(Box::new(c.clone())));
    if c.failed() {
        return Err(Error::Stop {
            code: exit::VERIFY_FAILED,
            message: format!(
                "the new gateway's data plane differs from the old one's: {}",
                c.failure_line()
            ),
            hint: Some(crate::window::error::hint!(
                "the client's side sees the change: correct the VPNPeer/VPNGateway (the journal's targets) and resume with `{}`, or go back with `{}`; the table is in the journal (dataPlane)",
                crate::window::error::Run::cutover(&name, &ns),
                crate::window::error::Run::rollback(&name, &ns)
            )),
        });
    }
    Ok(())
}

/// Right before the delete: the IPsecGateway must still be the object and the spec the
/// journal was written from (an edit while the prompt was open or since an interrupted
/// run is refused, nothing deleted), and its PSK Secret must not be owned by it again.
/// `None` when it is gone or already being deleted.
pub(super) async fn recheck(w: &mut Window<'_>) -> Result<Option<(IPsecGateway, String)>, Error> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let Some(live) = objects::get(w.cluster, "IPsecGateway", &name).await? else {
        return Ok(None);
    };
    if live.pointer("/metadata/deletionTimestamp").is_some() {
        return Ok(None);
    }
    let changed = scope::same_as_recorded(
        &live,
        w.journal.old_uid.as_deref(),
        &w.journal.spec_fingerprint,
    )
    .err();
    if let Some(why) = changed {
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!("ipsecgateway/{name} -n {ns} was not deleted: {why}"),
            hint: Some(crate::window::error::hint!(
                "nothing was deleted: `{}` closes the journal (the gateway stays), then plan again and review: `{}`",
                crate::window::error::Run::rollback(&name, &ns),
                crate::window::error::Run::plan(&name, &ns)
            )),
        });
    }
    let rv = live
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let gw: IPsecGateway = serde_json::from_value(live).map_err(|e| Error::Stop {
        code: exit::FAILURE,
        message: format!("ipsecgateway/{name} -n {ns} cannot be read: {e}"),
        hint: None,
    })?;
    w.detach_psk(&journal::Owners::of_old(&gw), "the old gateway")
        .await?;
    Ok(Some((gw, rv)))
}

/// Delete the old IPsecGateway through the one guarded delete: at the version deleted it
/// is the journal's object (uid, spec fingerprint) and pins the journal's floating IP
/// (DESIGN.md §4.8). Gone or already being deleted is fine. When the delete is refused
/// or fails, the gateway is looked at: if it is still there untouched, the journal goes
/// back to `psk-detached` and the message says nothing was deleted (issue 14 item 6).
pub(super) async fn delete_checked(w: &mut Window<'_>) -> Result<(), Error> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let checked = match recheck(w).await {
        // Refused: nothing was deleted, and the journal must not say otherwise.
        Err(
            e @ Error::Stop {
                code: exit::REFUSED,
                ..
            },
        ) => {
            w.save(Phase::PskDetached).await?;
            return Err(e);
        }
        other => other?,
    };
    if checked.is_none() {
        return Ok(());
    }
    let (uid, fingerprint) = (
        w.journal.old_uid.clone(),
        w.journal.spec_fingerprint.clone(),
    );
    let fip = w.journal.floating_ip.clone();
    let sent = delete::delete(
        w.cluster,
        Target::OldGateway { fip: &fip },
        &name,
        |o| scope::same_as_recorded(o, uid.as_deref(), &fingerprint),
        false,
    )
    .await;
    let Err(e) = sent else { return Ok(()) };
    // What happened, from what the cluster shows now, not from what was intended.
    let untouched = matches!(
        objects::get(w.cluster, "IPsecGateway", &name).await,
        Ok(Some(o)) if o.pointer("/metadata/deletionTimestamp").is_none()
            && o.pointer("/metadata/uid").and_then(Value::as_str) == uid.as_deref()
    );
    if !untouched {
        return Err(e.into());
    }
    w.save(Phase::PskDetached).await?;
    let hint = e.hint();
    let e = Error::from(e);
    Err(Error::Stop {
        code: e.exit_code(),
        message: format!(
            "{}; ipsecgateway/{name} -n {ns} is still there and untouched: nothing was deleted, the tunnel stays up",
            crate::window::error::error_line(&e)
        ),
        hint: Some(match hint {
            Some(h) => crate::window::error::hint!(
                "{}; then `{}` resumes (journal phase psk-detached)",
                h,
                crate::window::error::Run::cutover(&name, &ns)
            ),
            None => crate::window::error::hint!(
                "once the cause is fixed, `{}` resumes (journal phase psk-detached); `{}` closes the journal and keeps the IPsecGateway",
                crate::window::error::Run::cutover(&name, &ns),
                crate::window::error::Run::rollback(&name, &ns)
            ),
        }),
    })
}
