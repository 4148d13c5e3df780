//! Step 4 of a restore ([`super::restore`]): the owner's first sync after its restore,
//! watched. A sync that interferes suspends it again and stops (what it changed put back,
//! a record it deleted written back); a sync not seen within the watch suspends it again;
//! a sync that passed lets the journal say restored.

use super::*;

/// Watches the first sync of owner record `o.i`: [`Step::Go`] once it passed and the
/// journal says restored, [`Step::Kept`] when it was not seen (suspended again, said).
/// Errors: the stop when it interfered (the owner suspended again).
pub(super) async fn watch(
    w: &mut Window<'_>,
    o: &Owner<'_>,
    checked: &Checked<'_>,
    records: &[Kept],
    since: &gitops::StatusMark,
) -> Result<Step<()>, Error> {
    let (i, replaced, verb) = (o.i, o.replaced, o.verb);
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let r = &o.r;
    let (windows, psk_before) = (&checked.windows, &checked.psk_before);
    // Its first sync is watched, and the journal says restored only once it passed:
    // a run killed meanwhile leaves the owner listed as suspended, and the next run
    // restores and watches again. If the sync re-creates the replaced gateway,
    // changes or deletes what the window made live, or deletes the PSK Secret, the
    // owner is suspended again at once.
    let settled = settle(
        w,
        &r.owner,
        replaced,
        &windows[1..],
        records,
        psk_before,
        since,
    )
    .await
    .map_err(|e| crate::window::steps::in_owner_namespace(e, std::slice::from_ref(&r.owner)));
    if let Err(e) = &settled {
        let paused_again = live::patch(
            w.cluster,
            &r.owner,
            &gitops::pause_patch(&owner_shape(&r.owner)),
        )
        .await
        .is_ok();
        // A record its sync deleted is written back from the copy, now that nothing
        // prunes it; what was lost and what holds is said in the stop (a21j 05: the
        // journal pruned, and "as it was").
        let gone: Vec<Kept> = match records_gone(w.cluster, records).await {
            Ok(g) => g.into_iter().cloned().collect(),
            Err(_) => Vec::new(),
        };
        let records_issue = !gone.is_empty()
            || matches!(
                records_held(w, &r.owner, replaced, records).await,
                Ok(Some(_))
            );
        let said = if gone.is_empty() {
            String::new()
        } else {
            format!("; {}", write_back(w, &gone).await)
        };
        // The restore's intent ends once the owner is suspended again (after a record
        // its sync deleted was seen and written back: this write would re-create the
        // journal without a word).
        if paused_again {
            w.journal.gitops[i].restoring = None;
            w.journal.gitops[i].last_sync = None;
            journal::write(w.cluster, &w.journal, false).await?;
        }
        let with_said = |e: Error| match e {
            Error::Stop {
                code,
                message,
                hint,
            } => Error::Stop {
                code,
                message: format!("{message}{said}"),
                hint,
            },
            e => e,
        };
        if crate::cluster::objects::secret(w.cluster, &w.journal.psk_secret)
            .await
            .is_ok_and(|s| s.is_none())
        {
            let Error::Stop { message, hint, .. } = psk_gone_stop(&w.journal, &r.owner) else {
                unreachable!("psk_gone_stop is a stop")
            };
            return Err(with_said(Error::Stop {
                code: exit::VERIFY_FAILED,
                message: format!(
                    "{} was restored and its sync interfered, so vpnmig suspended it again: {message}",
                    r.owner.display()
                ),
                hint,
            }));
        }
        // What its sync changed of the window's objects is put back at once, as the
        // window made them live, before the floating IP is lost for good (issue 21
        // item 1, round 4: attacks 3, 12, 13).
        // The same put-back after a rollback: the IPsecGateway it re-created, from
        // the journal's saved manifest (a21d attack 14).
        if let Some(stop) = put_back(w, &r.owner, replaced).await? {
            return Err(with_said(stop));
        }
        return Err(with_said(Error::Stop {
            code: exit::VERIFY_FAILED,
            message: format!(
                "{} was restored and its sync interfered, so vpnmig suspended it again: {}",
                r.owner.display(),
                crate::window::error::error_line(e)
            ),
            hint: Some(crate::window::error::hint!(
                "{}{}check the gateway (`{}`), then `vpnmig {verb} {name} -n {ns}{}` restores it again",
                match e {
                    Error::Stop { hint: Some(h), .. } => crate::window::error::hint!("{}; ", h),
                    _ => Default::default(),
                },
                // What the sync did to the windows' records is not the repository's
                // doing: the hint of the stop says what to fix.
                if records_issue {
                    ""
                } else {
                    "its source is not what the windows made live: fix the repository, "
                },
                crate::window::error::Run::verify(&name, &ns),
                // A suspended Flux owner's status never shows the merge: the plain
                // restore would only refuse again (attack 1's loop).
                if r.owner.kind == "Application" {
                    ""
                } else {
                    " --gitops resume"
                }
            )),
        }));
    }
    // Its first sync not seen within the watch (Flux `dependsOn`, a retry interval, a
    // slow source): a sync that lands later is one nothing watches, and nothing would
    // put back what it changes (a21d attack 7: a floating IP moved a few seconds
    // after the watch). Not left re-armed: suspended again, as the window paused it
    // (the journal still says paused, and now why), and said, with what to check.
    if !matches!(settled, Ok(true)) {
        let why = match live::find(w.cluster, &r.owner).await? {
            Found::One(_, o) => unseen_why(&o),
            _ => "it could not be read".to_string(),
        };
        // Suspended meanwhile by another window's `--gitops pause` (a21s S12: it found the
        // owner this restore had just re-armed syncing, and recorded itself as its
        // suspender): that window holds it, and this one hands it over instead of
        // suspending it again as its own (each would wait for the other's vouch for ever).
        let other = handing_over::other_suspender(w, &r.owner).await;
        if other.is_none() {
            live::patch(
                w.cluster,
                &r.owner,
                &gitops::pause_patch(&owner_shape(&r.owner)),
            )
            .await?;
        }
        w.journal.gitops[i].sync_unseen = Some(format!("{}: {why}", now()));
        w.journal.gitops[i].restoring = None;
        w.journal.gitops[i].last_sync = None;
        journal::write(w.cluster, &w.journal, false).await?;
        // A sync that landed between the watch's last look and the suspension.
        if let Some(stop) = put_back(w, &r.owner, replaced).await? {
            return Err(stop);
        }
        // Nor "as it was" beside a gateway it created that claims the floating IP.
        if let Some(stop) = claimed(w, replaced, Some(&r.owner)).await? {
            return Err(stop);
        }
        if let Some(h) = other {
            let at = w.journal.gitops[i].re_armed_at.clone().unwrap_or_default();
            handing_over::to_other(
                w,
                o,
                &h,
                &format!(
                    "this window's restore re-armed it at {at}, that window suspended it since for its own window, and its status did not say it synced within {}s ({why})",
                    SETTLE.as_secs()
                ),
            )
            .await?;
            return Ok(Step::Next);
        }
        w.ev.emit(Event::Warning(format!(
            "{} stays suspended: restored, but its status did not say it synced within {}s ({why}); a later sync would be one nothing watches, and nothing would put back what it changes, so vpnmig suspended it again (the journal holds it, as the window paused it). What the windows made live is as it was. {}",
            r.owner.display(),
            SETTLE.as_secs(),
            unseen_todo(&r.owner, verb, &name, &ns)
        )));
        return Ok(Step::Kept);
    }
    w.journal.gitops[i].paused = false;
    w.journal.gitops[i].restored_at = Some(now());
    w.journal.gitops[i].sync_unseen = None;
    w.journal.gitops[i].restoring = None;
    journal::write(w.cluster, &w.journal, false).await?;
    w.ev.emit(Event::Step(format!(
        "{} synced: what the window made live is as it was",
        r.owner.display()
    )));
    if replaced == "IPsecGateway" {
        lift_defined(w, i, &r.owner).await?;
    }
    // The parents whose suspension the window relied on for this owner: the
    // reliance ends with the restore (a21g attack 16). Said, never resumed.
    parents_no_longer_relied_on(w, &r.owner, None, false).await;
    Ok(Step::Go(()))
}

/// After a first sync that passed: the prune protection the restore set on a new object of
/// the window (a21p E21, E24: the owner's status could not show that its merged source
/// defines it) is taken off again where the owner's status, written by that sync, now
/// lists it as an object it applies (Flux's inventory, Argo CD's resources): its prune is
/// the repository's again, as for any object the repository defines. One its status does
/// not list keeps it, and is said: the repository should define it. A patch refused is
/// said; the protection then stays, recorded.
async fn lift_defined(w: &mut Window<'_>, i: usize, owner: &gitops::OwnerRef) -> Result<(), Error> {
    let o = match live::find(w.cluster, owner).await? {
        Found::One(_, o) => o,
        _ => return Ok(()),
    };
    let (key, _) = gitops::prune_protection(&owner.kind);
    let targets: Vec<(String, String, String)> = w
        .journal
        .targets
        .iter()
        .map(|t| {
            let s = |p: &str| {
                t.pointer(p)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            (s("/apiVersion"), s("/kind"), s("/metadata/name"))
        })
        .collect();
    // Every new gateway object this restore protected, whichever window made it: one
    // owner over two windows protects the other window's too, and its protection comes
    // off the same way once the first sync lists it (a21q Q08b: it stayed for good).
    let records: Vec<gitops::Protected> = w.journal.gitops[i]
        .protected
        .iter()
        .filter(|p| p.annotation == key)
        .cloned()
        .collect();
    let mut kept = Vec::new();
    for p in records {
        let mine = targets
            .iter()
            .find(|(_, k, n)| *k == p.kind && *n == p.name)
            .filter(|_| p.namespace == w.journal.namespace);
        let api_version = match mine {
            Some((api_version, _, _)) => api_version.clone(),
            None if matches!(p.kind.as_str(), "VPNGateway" | "VPNPeer") => {
                format!("{}/v1alpha1", crate::core::model::NEW_GROUP)
            }
            None => continue,
        };
        let api_version = &api_version;
        let what = kept_ref(&p.kind, &p.name, &p.namespace);
        if !gitops::status_names(&o, &p.kind, &p.namespace, &p.name) {
            kept.push(what);
            continue;
        }
        let patch = serde_json::json!({"metadata": {"annotations": {key: p.before.clone()}}});
        match live::patch_kept(w.cluster, api_version, &p.kind, &p.namespace, &p.name, &patch).await {
            Ok(_) => {
                unrecord(w, i, &p).await?;
                w.ev.emit(Event::Step(format!(
                    "took {}={} off {what} again: {}'s first sync lists it as an object its merged source defines, so its prune is the repository's again",
                    p.annotation,
                    p.value,
                    owner.display()
                )));
            }
            Err(e) => w.ev.emit(Event::Warning(format!(
                "{}={} stays on {what} (its merged source defines it, but the annotation could not be taken off: {}); `kubectl annotate {} {} -n {} {}-` takes it off",
                p.annotation,
                p.value,
                e,
                p.kind.to_lowercase(),
                p.name,
                p.namespace,
                p.annotation
            ))),
        }
    }
    // A HelmRelease lists no inventory: what its chart defines cannot be told, never
    // "not defined" (a21q Q07).
    if !kept.is_empty() && owner.kind == "HelmRelease" {
        let protected: Vec<&gitops::Protected> = w.journal.gitops[i]
            .protected
            .iter()
            .filter(|p| {
                p.annotation == key && kept.contains(&kept_ref(&p.kind, &p.name, &p.namespace))
            })
            .collect();
        let (release, release_ns) = gitops::helm_release(&o);
        w.ev.emit(Event::Warning(format!(
            "{} {} kept from {}'s prune ({key}={}): {}",
            kept.join(", "),
            if kept.len() == 1 { "stays" } else { "stay" },
            owner.display(),
            gitops::prune_protection(&owner.kind).1,
            gitops::helm_kept_check(&release, &release_ns, &protected)
        )));
        return Ok(());
    }
    // An owner of the PSK Secret alone never applied the gateway: its repository is not
    // where the new objects belong (a21s S06b); the protection stays against a sync that
    // stamps its markers on them.
    if !kept.is_empty() && !w.journal.gitops[i].syncs_gateway() {
        let them = if kept.len() == 1 { "it" } else { "them" };
        w.ev.emit(Event::Note(format!(
            "{} {} not defined by the merged source of {}, which synced only {} for this window (its markers were never on the gateway): its repository need not define {them}; the prune protection stays on {them}, so that a sync that stamps its markers on every object of the namespace cannot prune {them}",
            kept.join(", "),
            if kept.len() == 1 { "is" } else { "are" },
            owner.display(),
            w.journal.gitops[i].syncs.join(", "),
        )));
        return Ok(());
    }
    if !kept.is_empty() {
        w.ev.emit(Event::Warning(format!(
            "{} {} not defined by the merged source of {} (its status after the sync does not list {}): the prune protection stays on {}, and the repository should define {} as the window made {} live (the plan's rewrite does)",
            kept.join(", "),
            if kept.len() == 1 { "is" } else { "are" },
            owner.display(),
            if kept.len() == 1 { "it" } else { "them" },
            if kept.len() == 1 { "it" } else { "them" },
            if kept.len() == 1 { "it" } else { "them" },
            if kept.len() == 1 { "it" } else { "them" },
        )));
    }
    Ok(())
}
