//! Step 2 of a restore ([`super::restore`]): the checks that decide between restoring an
//! owner and keeping it suspended. 1: no other window on it under way; 2: the PSK Secret
//! as the journal fingerprinted it; the windows whose objects its sync must leave as they
//! are; 3 and 3b: what its source defines (`source_defines`); 4: what the windows keep.

use super::*;

/// What the checks found for an owner that may be restored: the windows whose objects its
/// first sync must leave as they are (this one first, then the finished ones that relied
/// on its suspension), and the PSK Secret as it was before (uid and fingerprint).
pub(super) struct Checked<'a> {
    pub(super) windows: Vec<(crate::core::journal::Journal, &'a str)>,
    pub(super) psk_before: (Option<String>, Option<String>),
}

/// Checks 1 to 4 for owner record `o.i`, in order; [`Step::Kept`] once one keeps it
/// suspended (said, with the command). Errors: the stops (a PSK Secret gone or changed).
pub(super) async fn decide<'a>(
    w: &mut Window<'_>,
    o: &Owner<'a>,
    mut live_owner: Option<Value>,
) -> Result<Step<Checked<'a>>, Error> {
    let (i, replaced, force, verb) = (o.i, o.replaced, o.force, o.verb);
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let r = &o.r;
    // 1. The other windows on this owner, wherever their gateways are.
    let journals = match journals_for(w.cluster, live_owner.as_ref(), (&ns, &name)).await {
        Ok(j) => j,
        Err(why) => {
            w.ev.emit(Event::Warning(format!(
                "{} stays suspended: whether another window relies on its suspension cannot be read ({why}). Check by hand (`kubectl get configmaps -A -l app.kubernetes.io/managed-by=vpnmig -o yaml`: a journal whose gitops record names {} and whose phase is neither done nor rolled-back relies on it), then `vpnmig {verb} {name} -n {ns}` with a context that can list them (no restore by hand is offered: it would protect this window's PSK Secret only, not those of the windows it cannot see)",
                r.owner.display(),
                r.owner.display()
            )));
            return Ok(Step::Kept);
        }
    };
    let others = holders::holders(&journals, &r.owner, (&ns, &name));
    let busy: Vec<String> = others
        .iter()
        .filter(|h| h.in_flight())
        .map(holders::Holder::display)
        .collect();
    if !busy.is_empty() {
        w.ev.emit(Event::Warning(format!(
            "{} stays suspended: {} {} under way, and restoring its sync now would re-create what that window replaces (and take its floating IP). When every one of them is done, `vpnmig {verb} {name} -n {ns}` restores it{}",
            r.owner.display(),
            busy.join("; "),
            if busy.len() == 1 { "is" } else { "are" },
            if force {
                " (`--gitops resume` does not override another window)"
            } else {
                ""
            }
        )));
        return Ok(Step::Kept);
    }
    // 1b. Another finished window records itself as its suspender too (a21s S12: it
    // paused the owner in the moment after this window's restore re-armed it, and this
    // window's watch suspended it again as its own): handed over to that window, never
    // each waiting for the other's vouch.
    if let Some(h) = others.iter().find(|h| h.paused) {
        handing_over::to_other(
            w,
            o,
            h,
            "both journals record themselves as its one suspender (that window paused it in the moment after this window's restore re-armed it)",
        )
        .await?;
        return Ok(Step::Next);
    }
    // 2. A PSK Secret that is gone is not something a restore (or a repository
    // change) brings back with the client's key.
    let Some(secret) = crate::cluster::objects::secret(w.cluster, &w.journal.psk_secret).await?
    else {
        return Err(psk_gone_stop(&w.journal, &r.owner));
    };
    // It still holds the key the journal fingerprinted; what it holds now is what the
    // first sync is held to (attack finding 1: the sync wrote Git's stale copy).
    if let Err(e) = crate::window::steps::psk_unchanged(w.ev, &w.journal, &secret) {
        // Kind D: another Application that syncs the Secret automatically wrote it;
        // "put the key back, run again" would be undone by its self-heal at once.
        return Err(other_writer_stop(w.cluster, &r.owner, &secret, e).await);
    }
    let psk_before = psk_seen(&w.journal, &secret);
    // Argo CD: only a comparison made now proves what its sync would do; one from
    // before may predate the repository's head (a21d attack 10). vpnmig asks for a
    // refresh and reads the comparison it writes; without one, checks 3 and 4 may still
    // refuse on what they see, but they never restore on it.
    let mut stale = None;
    if r.owner.kind == "Application"
        && let Some(o) = live_owner.as_ref()
    {
        match refreshed(w.cluster, &r.owner, o).await? {
            Ok(fresh) => live_owner = Some(fresh),
            Err(why) => stale = Some(why),
        }
    }
    // The windows whose objects the restored sync must leave as they are: this one,
    // and the finished ones that relied on the suspension.
    let mut windows: Vec<(crate::core::journal::Journal, &str)> =
        vec![(w.journal.clone(), replaced)];
    for h in &others {
        if let Some(j) = journals
            .iter()
            .find(|j| j.namespace == h.namespace && j.gateway == h.gateway)
        {
            let kind = if j.phase == crate::core::journal::Phase::Done {
                "IPsecGateway"
            } else {
                "VPNGateway"
            };
            windows.push((j.clone(), kind));
        }
    }
    // Another finished window on this owner whose replaced gateway is live again
    // beside its VPNGateway: nothing is re-armed beside it, and it is named with its
    // delete (a21m B02, B11: "stays suspended", 0, and not a word of it).
    let contested = others_live_again(w.cluster, &windows[1..]).await?;
    if !contested.is_empty() {
        let one = contested.len() == 1;
        let what: Vec<String> = contested
            .iter()
            .map(|(o, _, fip)| format!(
                "{o}, which a finished window relying on its suspension replaced, is live again beside its VPNGateway and contests the floating IP {fip}"
            ))
            .collect();
        let deletes: Vec<String> = contested.iter().map(|(_, d, _)| d.clone()).collect();
        w.ev.emit(Event::Warning(format!(
            "{} stays suspended: {}; vpnmig re-arms no owner beside a contested floating IP. Delete {} ({}) once nothing re-creates {} (that window's `vpnmig cutover` names what may have), then `vpnmig {verb} {name} -n {ns}` restores it",
            r.owner.display(),
            what.join("; and "),
            if one { "it" } else { "each" },
            deletes.join("; "),
            if one { "it" } else { "them" },
        )));
        return Ok(Step::Kept);
    }
    // A HelmRelease that tracks a window's PSK Secret: its upgrade writes the chart's
    // copy over the live Secret, no annotation on a live object stops that, and the
    // cluster cannot show what the chart renders. Refused, plain or forced: the
    // user checks the chart by hand and resumes it by hand (issue 21 item 1, round 4;
    // attack 5: the chart held a stale key).
    if r.owner.kind == "HelmRelease" {
        // Every window's PSK Secret it tracks, not the first one found (a21u U04b: the
        // check named this window's key, and the resume overwrote a relying window's).
        let mut tracked = Vec::new();
        for (j, _) in &windows {
            let sec =
                live::get_kept(w.cluster, "v1", "Secret", &j.namespace, &j.psk_secret).await?;
            if sec.as_ref().is_some_and(|s| gitops::tracks(&r.owner, s)) {
                tracked.push(gitops::KeptPsk {
                    window: format!("{}/{}", j.namespace, j.gateway),
                    secret: j.psk_secret.clone(),
                    namespace: j.namespace.clone(),
                    key: j.psk_key().to_string(),
                });
            }
        }
        // Its resume is left to a person: what the windows keep gets
        // `helm.sh/resource-policy: keep` first, so a chart without the Secret leaves
        // it (a21g attack 07: the printed resume deleted the PSK Secret).
        if !tracked.is_empty() {
            tracked.sort();
            tracked.dedup();
            let kept = hand_over(w, i, &windows).await?;
            w.ev.emit(Event::Warning(format!(
                "{} stays suspended: {}; before that hand-over, {kept}",
                r.owner.display(),
                helm_psk_refusal(
                    &r.owner,
                    live_owner.as_ref(),
                    &w.journal,
                    &tracked,
                    verb,
                    &name,
                    &ns
                )
            )));
            return Ok(Step::Kept);
        }
    }
    if let Step::Kept = source_defines::still_defines(w, o, &windows, &live_owner) {
        return Ok(Step::Kept);
    }
    if let Step::Kept = source_defines::would_create_other(w, o, &windows, &live_owner).await? {
        return Ok(Step::Kept);
    }
    // 4. What the windows keep, and nothing added on their gateways.
    let mut refused = None;
    for (j, kind) in &windows {
        match keep(w, i, j, kind, live_owner.as_ref(), false).await? {
            Ok(()) => {}
            Err(why) => {
                refused = Some(why);
                break;
            }
        }
        if *kind == "IPsecGateway"
            && let Some(o) = live_owner.as_ref()
            && let Some(why) = extra_in_source(w.cluster, &r.owner, o, j, verb).await?
        {
            refused = Some(why);
            break;
        }
    }
    if let Some((why, todo)) = refused {
        w.ev.emit(Event::Warning(format!(
            "{} stays suspended: {why}. {todo}",
            r.owner.display()
        )));
        return Ok(Step::Kept);
    }
    if let Some(why) = stale {
        w.ev.emit(Event::Warning(format!(
            "{} stays suspended: {why}; a comparison from before may predate the repository's head, and only one made now proves that its sync leaves what the windows keep as it is. Refresh it: `argocd app get {} --refresh` (or `kubectl annotate application {} -n {} {}=normal --overwrite`), then `vpnmig {verb} {name} -n {ns}`",
            r.owner.display(),
            r.owner.name,
            r.owner.name,
            r.owner.namespace.as_deref().unwrap_or("argocd"),
            gitops::ARGO_REFRESH
        )));
        return Ok(Step::Kept);
    }
    Ok(Step::Go(Checked {
        windows,
        psk_before,
    }))
}
