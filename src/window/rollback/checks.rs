//! What the rollback checks on its way: the outage, the new floating IP pinned, the
//! GitOps owners, the new kind gone and settled, the old gateway re-created, the peers in scope.

use super::*;

/// A rollback's outage: from the delete of the new gateway (journal phase rolling-back)
/// through its unwind, the re-created IPsecGateway's floating IP and readiness (one part,
/// `attach`, up to `tunnels_from`), to each tunnel up; how each came back.
pub(super) fn outage(
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
pub(super) async fn new_fip_pinned(cluster: &Cluster, j: &Journal) -> Result<(), Error> {
    let (name, ns) = (j.gateway.as_str(), j.namespace.as_str());
    let Some(gw) = objects::get(cluster, "VPNGateway", name).await? else {
        return Ok(());
    };
    // The rule every delete applies (`core::scope`), asked before the prompt.
    crate::core::scope::gateway_deletable(&gw, &j.floating_ip).map_err(|why| Error::Stop {
        code: exit::REFUSED,
        message: format!("vpngateway/{name} -n {ns} cannot be deleted: {why}; nothing was changed"),
        hint: Some(crate::window::error::hint!(
            "pin it first: {}; then run it again: `{}`",
            crate::core::scope::pin_command("VPNGateway", name, ns, &j.floating_ip),
            crate::window::error::Next::again(&[])
        )),
    })
}

/// No other gateway (another name, either kind, any namespace) claims the floating IP the
/// re-created IPsecGateway pins: deleting the VPNGateway would let the operator associate
/// it with that one, and the re-created gateway would wait at `AlreadyAssociated` for
/// ever (a21f C1, A5: a rollback handed the client's floating IP to another gateway, and
/// its advice, "run it again", looped). Checked before anything changes; gateways that
/// could not be listed are "could not ask", a refusal too.
pub(super) async fn fip_unclaimed(cluster: &Cluster, j: &Journal) -> Result<(), Error> {
    let (name, ns) = (j.gateway.as_str(), j.namespace.as_str());
    let fip = j.old_fip();
    let fips = [fip.clone()];
    let found = crate::window::gitops::claims::claimants_of(cluster, (ns, name), &fips).await?;
    let claims = match found {
        Ok((claims, None)) => claims,
        Ok((_, Some(why))) | Err(why) => {
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
    // A holder must be deleted while its spec pins the floating IP (DESIGN §2: deleted
    // unpinned, its cleanup releases it to the pool); one that only pins it holds
    // nothing and may be unpinned (a21r R12: "take it out of its spec" unpinned it on
    // its holder, and the check, which read status too, refused identically after).
    Err(Error::Stop {
        code: exit::REFUSED,
        message: format!(
            "floating IP {fip}, which the journal of {ns}/{name} pins for the client, is claimed by {} too ({}): the rollback would delete what holds it now and the operator could associate it with that gateway, while the re-created IPsecGateway waits at AlreadyAssociated; nothing was changed",
            claims
                .iter()
                .map(|c| format!("{} {}/{}", c.kind, c.namespace, c.name))
                .collect::<Vec<_>>()
                .join(" and "),
            claims
                .iter()
                .map(|c| c.shown())
                .collect::<Vec<_>>()
                .join("; ")
        ),
        hint: Some(crate::window::error::hint!(
            "{} (in its repository first where Argo CD or Flux syncs it); then `{}`",
            claims
                .iter()
                .map(|c| c.way_out(&fip))
                .collect::<Vec<_>>()
                .join("; "),
            crate::window::error::Run::rollback(name, ns)
        )),
    })
}

/// What the PSK Secret must not be owned by during this rollback.
pub(super) async fn window_owners(w: &Window<'_>) -> Result<Owners, Error> {
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
pub(super) async fn missing_owners(
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
            hint: Some(crate::window::error::hint!(
                "either restore the owner with its uid (e.g. from a backup), or run `{}` to re-create the gateway without these references (recorded in the journal); whatever owned it then no longer manages it",
                crate::window::error::Run::rollback(name, ns).with(&["--drop-missing-owners"])
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
pub(super) const SETTLE: std::time::Duration = std::time::Duration::from_millis(1500);

/// [`new_kind_gone`] right before the IPsecGateway is re-created; where the journal
/// names a GitOps owner, read again for [`SETTLE`] (every 100 ms), so that an owner that
/// ignores its suspension is caught before anything is re-created beside what it brings
/// back (a single read lost that race on a loaded machine).
pub(super) async fn settled(w: &Window<'_>, peers: &[String]) -> Result<(), Error> {
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
pub(super) async fn new_kind_gone(
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
    let acting = super::super::gitops::still_acting(w, first_obj)
        .await
        .ok()
        .flatten();
    let cause = acting
        .as_ref()
        .map(|(why, _)| format!("; {why}"))
        .unwrap_or_default();
    let first = match &acting {
        Some((_, first)) => {
            crate::window::error::hint!("{first}; until then every delete is undone. Then: ")
        }
        None => crate::window::error::hint!(
            "find who re-created it and make sure nothing syncs it (`{}` shows its MANAGED-BY). Then: ",
            crate::window::error::Run::status(&ns).with(&["-o", "wide"])
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
        hint: Some(crate::window::error::hint!(
            "{}delete what came back (`kubectl delete {delete} -n {ns}`), then `{}` resumes and re-creates the IPsecGateway from the journal",
            first,
            crate::window::error::Run::rollback(&name, &ns)
        )),
    })
}

pub(super) async fn create_old(w: &Window<'_>) -> Result<(), Error> {
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
pub(super) struct PeerScope {
    /// To delete: proven the window's, or extras named by --delete-extra-peers.
    pub(super) peers: Vec<String>,
    /// The uids that count as the window's: the journal's, and the extras consented to.
    pub(super) recorded: Vec<String>,
    /// Left alone (another gateway's, or under a journal name but not the window's).
    pub(super) foreign: Vec<(String, String)>,
}

/// Sort the namespace's VPNPeers for a rollback of the journal's gateway. Peers that
/// reference it but were not made by the window refuse the rollback (nothing changed)
/// unless `delete_extras`.
pub(super) async fn peer_scope(
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
            hint: Some(crate::window::error::hint!(
                "keep what they configure elsewhere, then either delete them yourself (`kubectl delete vpnpeer {} -n {ns}`) or run the rollback again with --delete-extra-peers: `{}`",
                extras
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
                crate::window::error::Next::again(&["--delete-extra-peers"])
            )),
        });
    }
    // A VPNGateway vpnmig never applied and this journal never recorded (a journal an
    // earlier run wrote from a bundle for an early merge, a21p E16): its peers are the
    // client's, and the rollback could not delete the gateway after them.
    if let Some(gw) = objects::get(cluster, "VPNGateway", name).await?
        && let Some(by) = crate::window::early::never_applied(&gw)
        && !gw
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .is_some_and(|u| j.target_uids.iter().any(|r| r == u))
    {
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "--delete-extra-peers deletes no VPNPeer of vpngateway/{name} -n {ns}: vpnmig never applied it (written by {by}) and the journal does not record it, so the rollback could not delete it after its peers and the client's tunnel would be down; nothing was deleted"
            ),
            hint: Some(crate::window::way_back_outside(name, ns).into()),
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
