//! Restoring the owners at `done` / `rolled-back`, only when their source defines what is
//! live then.

use super::*;

/// Restore every owner this window suspended, once it is safe (issue 11 item 2, issue 21
/// items 1 and 2):
///
/// 1. no other window that suspended it or relies on its suspension is under way (any
///    phase before `done` / `rolled-back`): its gateway would come back mid-window;
/// 2. the PSK Secret exists (gone, the stop says it must be re-created with the client's
///    key, which vpnmig does not hold);
/// 3. its source (as the cluster shows it) no longer defines `replaced` (`IPsecGateway`
///    after a cutover, `VPNGateway` after a rollback), nor what the finished windows
///    that relied on it replaced. With `force` (`--gitops resume`) the user says the
///    repository is merged: this one check is skipped, no other;
/// 4. its first sync cannot prune or change what those windows keep (their PSK Secrets,
///    the new objects, the old gateway after a rollback, and what their ownerReferences
///    name, transitively): Argo CD's entry for each must read `Synced` (an `OutOfSync`,
///    `Unknown` or missing entry, or an `ignoreDifferences` rule hiding a difference,
///    keeps it suspended); every other Application whose markers are on one is checked
///    the same; what its status shows gone from the source keeps it suspended; what the
///    cluster cannot show (a suspended Kustomization's inventory is never refreshed; a
///    HelmRelease has none) gets the prune protection its controller honours, recorded
///    in the journal before it is set and read back after.
///
/// What is not restored is said, with the command. Returns how many owners are still
/// suspended by the window.
pub(crate) async fn restore(
    w: &mut Window<'_>,
    replaced: &str,
    force: bool,
) -> Result<usize, Error> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let verb = if replaced == "IPsecGateway" {
        "cutover"
    } else {
        "rollback"
    };
    let mut left = 0;
    for i in 0..w.journal.gitops.len() {
        let r = w.journal.gitops[i].clone();
        let Some(saved) = r.saved.clone().filter(|_| r.paused) else {
            continue;
        };
        let saved = &saved;
        // The vouch of this run, or of the window's own restore a killed run left
        // unfinished (kept unless what it did disproves it).
        let mut force = force;
        let mut live_owner = match live::find(w.cluster, &r.owner).await? {
            Found::One(_, obj) => Some(obj),
            // Gone (deleted since, attack 9): nothing to restore, nothing to protect
            // from its prune; the journal lets go of it, and every command says so.
            // What the window keeps still carries its markers: one re-created under that
            // name prunes them. Protected first, as on every let-go (a21g 12b).
            Found::None if r.owner.namespace.is_some() => {
                if let Some(stop) = live_again(w, replaced, Some((&r, None))).await? {
                    return Err(stop);
                }
                if let Some(stop) = claimed(w, replaced, None).await? {
                    return Err(stop);
                }
                let all = every_window_on(w, &r.owner, None, replaced).await;
                let kept = hand_over(w, i, &all).await?;
                w.journal.gitops[i].paused = false;
                w.journal.gitops[i].restored_at = Some(now());
                w.journal.gitops[i].let_go = Some(format!("{}: gone", now()));
                journal::write(w.cluster, &w.journal, false).await?;
                w.ev.emit(Event::Warning(format!(
                    "{} is gone (the cluster has no {} {} in namespace {}): nothing to restore; the journal no longer holds it; before letting go, {kept}{}. Whatever syncs the objects now is someone else's (`vpnmig status -n {ns} -o wide` shows MANAGED-BY)",
                    r.owner.display(),
                    r.owner.kind,
                    r.owner.name,
                    r.owner.namespace.as_deref().unwrap_or_default(),
                    under_way_note(&all[1..], &r.owner)
                )));
                parents_no_longer_relied_on(w, &r.owner, Some("it is gone")).await;
                unprotected_stop(w, &r.owner, &all).await?;
                continue;
            }
            _ => None,
        };
        // The window's own restore, interrupted after its patch re-armed the owner (a21j
        // 07: `status` called it "re-enabled by someone else"): suspended again, what its
        // unwatched sync did is checked, then the restore goes on as at any other run.
        if let Some(now) = live_owner.as_ref()
            && let gitops::Held::Restoring { at, now: seen } = gitops::held(&r, now)
        {
            if let Some(stop) = finish_interrupted(w, i, replaced, &at, &seen).await? {
                return Err(stop);
            }
            force = force || r.restoring.as_ref().is_some_and(|x| x.forced);
            live_owner = match live::find(w.cluster, &r.owner).await? {
                Found::One(_, obj) => Some(obj),
                _ => None,
            };
        }
        let r = w.journal.gitops[i].clone();
        // A policy someone set since the pause is theirs: never overwritten; the journal
        // no longer holds the owner (issue 21 item 4).
        if let Some(now) = live_owner.as_ref() {
            let changed = match gitops::held(&r, now) {
                // Argo CD re-armed and suspended again since (it synced): the policy is
                // whoever did that's, never restored over (a21j 06).
                gitops::Held::AsLeft => gitops::synced_since(&r, now)
                    .map(|now| ("its policy changed since the window paused it", now)),
                gitops::Held::Restoring { .. } => None,
                gitops::Held::ReEnabled { now } => Some(("re-enabled by someone else", now)),
                gitops::Held::NotPaused { since, now } => Some((
                    "the window's suspension of it never landed",
                    format!("{now}; recorded at {since}"),
                )),
                gitops::Held::Changed { now } => {
                    Some(("its policy changed since the window paused it", now))
                }
                gitops::Held::Replaced { uid, now, .. } => Some((
                    "it is not the object the window paused: deleted and re-created since",
                    format!(
                        "uid {uid}, the journal's {}; {now}",
                        r.uid.as_deref().unwrap_or("?")
                    ),
                )),
            };
            // Re-enabled while its source (as the cluster shows it) still defines the
            // replaced gateway, or may: its next sync re-creates it beside the new one.
            // Not green, and the journal keeps holding the owner, so that `status` and a
            // re-run say so until it is suspended again or the repository is merged
            // (`--gitops resume`: the user says it is).
            // `--gitops resume` vouches that the source no longer defines it; the replaced
            // gateway live again disproves that, so no vouch lets go then (a21j 07,
            // critical: a let-go with exit 0 beside a contended floating IP).
            if let gitops::Held::ReEnabled { now: seen } | gitops::Held::NotPaused { now: seen, .. } =
                gitops::held(&r, now)
                && gitops::owner_state(now, replaced, &ns, &name).source_lists != Some(false)
            {
                let back = force
                    && crate::cluster::objects::get(w.cluster, replaced, &name)
                        .await?
                        .is_some();
                if !force || back {
                    return Err(reenabled_stop(w, &r.owner, now, replaced, &seen).await);
                }
            }
            // Its resume is a person's now, and nothing watches it: what the window keeps
            // gets the protections first, as on the `--gitops ignore` path (a21g attack
            // 12b: another team's later resume pruned the PSK Secret).
            // Nothing is let go while the replaced gateway is live again (a21k N09: the
            // let-go of a regenerated owner ended 0 beside a contested floating IP).
            if let Some(stop) = live_again(w, replaced, Some((&r, Some(now)))).await? {
                return Err(stop);
            }
            if let Some(stop) = claimed(w, replaced, None).await? {
                return Err(stop);
            }
            if let Some((what, seen)) = changed {
                let all = every_window_on(w, &r.owner, Some(now), replaced).await;
                let kept = hand_over(w, i, &all).await?;
                w.journal.gitops[i].paused = false;
                w.journal.gitops[i].let_go =
                    Some(format!("{}: {what}", super::super::steps::now()));
                journal::write(w.cluster, &w.journal, false).await?;
                w.ev.emit(Event::Warning(format!(
                    "{} is not restored: {what} (live: {seen}); vpnmig leaves its policy as it is, and the journal no longer holds it; before letting go, {kept}{} (`vpnmig status -n {ns}` lists them)",
                    r.owner.display(),
                    under_way_note(&all[1..], &r.owner)
                )));
                let why = format!("{what} (live: {seen})");
                parents_no_longer_relied_on(w, &r.owner, Some(&why)).await;
                unprotected_stop(w, &r.owner, &all).await?;
                continue;
            }
        }
        // Nothing is re-armed (plain, or vouched with `--gitops resume`) while the
        // replaced gateway is live again: checked before the re-arm, never after (a21k
        // R07: a vouch re-armed the owner beside the re-created gateway it had named, and
        // the next run said 0 "stays suspended").
        if let Some(stop) =
            live_again(w, replaced, live_owner.as_ref().map(|o| (&r, Some(o)))).await?
        {
            return Err(stop);
        }
        // Nor while another gateway claims the window's floating IP (a21m B15, B18).
        if let Some(stop) = claimed(w, replaced, None).await? {
            return Err(stop);
        }
        // 1. The other windows on this owner, wherever their gateways are.
        let journals = match journals_for(w.cluster, live_owner.as_ref(), (&ns, &name)).await {
            Ok(j) => j,
            Err(why) => {
                left += 1;
                w.ev.emit(Event::Warning(format!(
                    "{} stays suspended: whether another window relies on its suspension cannot be read ({why}). Check by hand (`kubectl get configmaps -A -l app.kubernetes.io/managed-by=vpnmig -o yaml`: a journal whose gitops record names {} and whose phase is neither done nor rolled-back relies on it), then `vpnmig {verb} {name} -n {ns}` with a context that can list them (no restore by hand is offered: it would protect this window's PSK Secret only, not those of the windows it cannot see)",
                    r.owner.display(),
                    r.owner.display()
                )));
                continue;
            }
        };
        let others = holders::holders(&journals, &r.owner, (&ns, &name));
        let busy: Vec<String> = others
            .iter()
            .filter(|h| h.in_flight())
            .map(holders::Holder::display)
            .collect();
        if !busy.is_empty() {
            left += 1;
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
            continue;
        }
        // 2. A PSK Secret that is gone is not something a restore (or a repository
        // change) brings back with the client's key.
        let Some(secret) =
            crate::cluster::objects::secret(w.cluster, &w.journal.psk_secret).await?
        else {
            return Err(psk_gone_stop(&w.journal, &r.owner));
        };
        // It still holds the key the journal fingerprinted; what it holds now is what the
        // first sync is held to (attack finding 1: the sync wrote Git's stale copy).
        if let Err(e) = super::super::steps::psk_unchanged(w.ev, &w.journal, &secret) {
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
            left += 1;
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
            continue;
        }
        // A HelmRelease that tracks a window's PSK Secret: its upgrade writes the chart's
        // copy over the live Secret, no annotation on a live object stops that, and the
        // cluster cannot show what the chart renders. Refused, plain or forced: the
        // user checks the chart by hand and resumes it by hand (issue 21 item 1, round 4;
        // attack 5: the chart held a stale key).
        if r.owner.kind == "HelmRelease" {
            let mut tracked = None;
            for (j, _) in &windows {
                let sec =
                    live::get_kept(w.cluster, "v1", "Secret", &j.namespace, &j.psk_secret).await?;
                if sec.as_ref().is_some_and(|s| gitops::tracks(&r.owner, s)) {
                    tracked = Some(j.clone());
                    break;
                }
            }
            // Its resume is left to a person: what the windows keep gets
            // `helm.sh/resource-policy: keep` first, so a chart without the Secret leaves
            // it (a21g attack 07: the printed resume deleted the PSK Secret).
            if let Some(j) = tracked {
                left += 1;
                let kept = hand_over(w, i, &windows).await?;
                w.ev.emit(Event::Warning(format!(
                    "{} stays suspended: {}; before that hand-over, {kept}",
                    r.owner.display(),
                    helm_psk_refusal(&r.owner, &j, verb, &name, &ns)
                )));
                continue;
            }
        }
        // 3. Safe only when its source no longer defines what the windows replaced.
        // Whether the rest of the source matches what the window made live is check 4's
        // (Argo CD: each kept object's entry, once it carries the owner's markers); the
        // first sync after the restore is watched all the same (`settle`). `--gitops resume`
        // vouches for this window's repository change only: what another window that
        // relied on the suspension replaced is checked all the same (attack finding A2).
        // Every window's, not only the first: advice for this window's own change alone
        // (`--gitops resume`, a restore by hand) would re-create another's gateway.
        let mut blocks = Vec::new();
        for (j, kind) in &windows {
            let mine = (j.namespace.as_str(), j.gateway.as_str()) == (ns.as_str(), name.as_str());
            // Another finished window whose user vouched for its change (a21f B1), as
            // `--gitops resume` vouches for this one's.
            if !mine
                && j.gitops
                    .iter()
                    .any(|x| gitops::same_owner(&x.owner, &r.owner) && holders::vouched(j, x))
            {
                continue;
            }
            let lists = live_owner
                .as_ref()
                .and_then(|o| gitops::owner_state(o, kind, &j.namespace, &j.gateway).source_lists);
            // The vouch is per owner: it stands in for a status that cannot show the
            // merge, never against one that shows the gateway still defined (a21k N05: the
            // vouch meant for a Flux owner re-armed an Argo CD owner over its own status).
            if mine && force && lists != Some(true) {
                continue;
            }
            let whose = if mine {
                String::new()
            } else {
                format!(
                    " (replaced by the window of {}/{}, which relied on its suspension)",
                    j.namespace, j.gateway
                )
            };
            let what = object_ref(kind, &j.gateway, &j.namespace);
            let text = match lists {
                Some(false) => continue,
                Some(true) if mine && force => format!(
                    "its source still defines {what} (status of {}, read now): `--gitops resume` vouches only for an owner whose status cannot show the merge, never over one whose own status shows the gateway defined, so this one is kept suspended",
                    r.owner.display()
                ),
                Some(true) => format!(
                    "its source still defines {what}{whose} (status of {})",
                    r.owner.display()
                ),
                None => format!(
                    "the cluster does not show whether its source still defines {what}{whose} ({})",
                    live_owner
                        .as_ref()
                        .and_then(gitops::status_blind)
                        .unwrap_or_else(|| "the owner could not be read".into())
                ),
            };
            blocks.push((text, j.clone(), *kind, mine, lists.is_none()));
        }
        if let Some((why, j, kind, mine, blind)) = blocks.first().cloned() {
            let others: Vec<String> = blocks.iter().skip(1).map(|b| b.0.clone()).collect();
            // Where the cluster cannot show another window's change, its user checks the
            // merged source by hand and says so for that window (a21f B1).
            let vouches: Vec<String> = blocks
                .iter()
                .filter(|b| !b.3 && b.4)
                .map(|b| {
                    let v = if b.2 == "IPsecGateway" {
                        "cutover"
                    } else {
                        "rollback"
                    };
                    format!(
                        "`vpnmig {v} {} -n {} --gitops resume`",
                        b.1.gateway, b.1.namespace
                    )
                })
                .collect();
            left += 1;
            let (gw, gw_ns) = (&j.gateway, &j.namespace);
            let change = if kind == "IPsecGateway" {
                format!(
                    "Merge the repository change of {gw_ns}/{gw} (`vpnmig plan {gw} -n {gw_ns} --gitops-repo DIR` writes it)"
                )
            } else {
                format!("Revert the repository change of {gw_ns}/{gw}")
            };
            let then = if mine && others.is_empty() && blind {
                // A status that cannot tell never will by waiting (a suspended
                // Kustomization's inventory is not refreshed): the user checks the merged
                // source by hand and says so (attack findings 2, 11, 12).
                format!(
                    "then check by hand that the merged source no longer defines it ({}), and only then `vpnmig {verb} {name} -n {ns} --gitops resume` restores it (it vouches for this window's change, and protects from prune what the window keeps first; no restore by hand is offered: it would skip that)",
                    gitops::render_hint(&r.owner)
                )
            } else if mine && others.is_empty() {
                // No restore by hand here: it would skip what `vpnmig` checks first (check
                // 4: what the windows keep, as the owner's status shows it; a21d attacks
                // 8 and 16).
                format!(
                    "then `vpnmig {verb} {name} -n {ns}` restores it once the owner's status no longer lists it, after checking what the windows keep (`--gitops resume` does not re-arm it while its own status lists it)"
                )
            } else if mine {
                let vouch = if vouches.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; where the cluster cannot show it, check the merged source by hand ({}), then {} records for that window that you did, and `vpnmig {verb} {name} -n {ns} --gitops resume` restores it",
                        gitops::render_hint(&r.owner),
                        vouches.join(", ")
                    )
                };
                format!(
                    "and {}: no restore is safe before each of them is in the repository too, neither `--gitops resume` (it vouches for this window's change only) nor one by hand; then `vpnmig {verb} {name} -n {ns}` restores it once the owner's status lists none of them{vouch}",
                    others.join("; and ")
                )
            } else if r.owner.kind == "Application" && !blind {
                format!(
                    "then `vpnmig {verb} {name} -n {ns}` restores it once the owner's status no longer lists it (`--gitops resume` vouches for this window's change only, not for what another window replaced)"
                )
            } else if !vouches.is_empty() {
                format!(
                    "then check by hand that the merged source no longer defines it ({}); then {} records for that window that you did (this window's `--gitops resume` vouches for its own change only), and `vpnmig {verb} {name} -n {ns} --gitops resume` restores it; no restore by hand is offered: it would skip the prune protections a restore sets first",
                    gitops::render_hint(&r.owner),
                    vouches.join(", ")
                )
            } else {
                format!(
                    "then check by hand that the merged source no longer defines it ({}); the window that suspended it restores it (`vpnmig status -n {ns}` names it; its `--gitops resume` vouches for its own change only); no restore by hand is offered: it would skip the prune protections a restore sets first",
                    gitops::render_hint(&r.owner),
                )
            };
            w.ev.emit(Event::Warning(format!(
                "{} stays suspended: {why}, and restoring its sync now would re-create it (and take the floating IP). {change}, {then}",
                r.owner.display(),
            )));
            continue;
        }
        // 3b. No other IPsecGateway its first sync would create (a21m B15: the merged
        // source defined the old gateway under another name, with the same floating IP,
        // and the restore said "as it was"). Its floating IP cannot be read before it
        // exists, so any one not live keeps the owner suspended.
        if replaced == "IPsecGateway"
            && let Some(o) = live_owner.as_ref()
        {
            let skip: Vec<(String, String)> = windows
                .iter()
                .map(|(j, _)| (j.namespace.clone(), j.gateway.clone()))
                .collect();
            let new = would_create(w.cluster, o, &skip).await?;
            if !new.is_empty() {
                left += 1;
                let what: Vec<String> = new
                    .iter()
                    .map(|(gns, gw)| object_ref("IPsecGateway", gw, gns))
                    .collect();
                w.ev.emit(Event::Warning(format!(
                    "{} stays suspended: its source defines {} (status of {}, read now), which {} not live: its first sync would create {}, and an IPsecGateway's floating IP cannot be read before it exists; one that claims {} (a copy of the old gateway under another name?) contests it with vpngateway/{name} -n {ns} (AlreadyAssociated). Take {} out of the repository, then `vpnmig {verb} {name} -n {ns}` restores it once the owner's status no longer lists {}; if {} meant and pins another floating IP, create it yourself first (`kubectl apply -f FILE`), and the restore reads its floating IP",
                    r.owner.display(),
                    what.join(", "),
                    r.owner.display(),
                    if new.len() == 1 { "is" } else { "are" },
                    if new.len() == 1 { "it" } else { "them" },
                    w.journal.floating_ip,
                    if new.len() == 1 { "it" } else { "each one that is a leftover" },
                    if new.len() == 1 { "it" } else { "them" },
                    if new.len() == 1 { "it is" } else { "one is" },
                )));
                continue;
            }
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
            left += 1;
            w.ev.emit(Event::Warning(format!(
                "{} stays suspended: {why}. {todo}",
                r.owner.display()
            )));
            continue;
        }
        if let Some(why) = stale {
            left += 1;
            w.ev.emit(Event::Warning(format!(
                "{} stays suspended: {why}; a comparison from before may predate the repository's head, and only one made now proves that its sync leaves what the windows keep as it is. Refresh it: `argocd app get {} --refresh` (or `kubectl annotate application {} -n {} {}=normal --overwrite`), then `vpnmig {verb} {name} -n {ns}`",
                r.owner.display(),
                r.owner.name,
                r.owner.name,
                r.owner.namespace.as_deref().unwrap_or("argocd"),
                gitops::ARGO_REFRESH
            )));
            continue;
        }
        // The windows' records as they are now: watched through the first sync, and
        // written back from these copies if it deletes them anyway (a21j 05).
        let records = read_records(w, &windows).await;
        // The restore is recorded before its patch (the intent), its end after: a run killed
        // in between leaves a journal that names it the window's own unfinished restore,
        // never "re-enabled by someone else" (a21j 07), and the next run finishes it.
        let re_armed_before = w.journal.gitops[i].re_armed_at.clone();
        let at = now();
        w.journal.gitops[i].restoring = Some(gitops::Restoring {
            at: at.clone(),
            forced: force,
        });
        w.journal.gitops[i].re_armed_at = Some(at);
        journal::write(w.cluster, &w.journal, false).await?;
        let restored = match live::patch(w.cluster, &r.owner, &gitops::restore_patch(saved)).await {
            Ok(o) => o,
            Err(e) => {
                let Some((how, said)) = refusal(&e) else {
                    return Err(e.into());
                };
                // Refused: it never landed, the owner stays suspended, as the window
                // paused it, and the journal holds it.
                w.journal.gitops[i].restoring = None;
                w.journal.gitops[i].re_armed_at = re_armed_before;
                journal::write(w.cluster, &w.journal, false).await?;
                left += 1;
                w.ev.emit(Event::Warning(format!(
                    "{} stays suspended: vpnmig's restore of it was refused ({how}): {said}; the owner is as the window paused it and the journal holds it (the protections set first stay). Once the policy allows the patch ({}), `vpnmig {verb} {name} -n {ns}{}` restores it; no restore by hand is offered: it would skip what the restore checks and sets first",
                    r.owner.display(),
                    if matches!(e, crate::cluster::KubeError::Forbidden { .. }) {
                        format!(
                            "a context with the permission to patch it: `kubectl auth can-i patch {}/{} -n {}` says whether one has it",
                            r.owner.resource(),
                            r.owner.name,
                            r.owner.namespace.as_deref().unwrap_or("argocd")
                        )
                    } else {
                        "the freeze lifted, or an exception for vpnmig's field manager".to_string()
                    },
                    if force { " --gitops resume" } else { "" }
                )));
                continue;
            }
        };
        // What its status shows now: "synced" is said only from a status written after
        // this (a21d attack 10). Argo CD is asked for a refresh, which its controller
        // takes off once the comparison is written.
        let mut since = gitops::status_mark(&restored);
        if r.owner.kind == "Application"
            && !since.refresh_asked
            && live::patch(w.cluster, &r.owner, &refresh_patch())
                .await
                .is_ok()
        {
            since.refresh_asked = true;
        }
        w.ev.emit(Event::Step(format!(
            "restored {} ({} as before the window); watching its first sync",
            r.owner.display(),
            saved.pointer.trim_start_matches('/').replace('/', ".")
        )));
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
            &records,
            &psk_before,
            &since,
        )
        .await
        .map_err(|e| super::super::steps::in_owner_namespace(e, std::slice::from_ref(&r.owner)));
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
            let gone: Vec<Kept> = match records_gone(w.cluster, &records).await {
                Ok(g) => g.into_iter().cloned().collect(),
                Err(_) => Vec::new(),
            };
            let records_issue = !gone.is_empty()
                || matches!(
                    records_held(w, &r.owner, replaced, &records).await,
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
            live::patch(
                w.cluster,
                &r.owner,
                &gitops::pause_patch(&owner_shape(&r.owner)),
            )
            .await?;
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
            left += 1;
            w.ev.emit(Event::Warning(format!(
                "{} stays suspended: restored, but its status did not say it synced within {}s ({why}); a later sync would be one nothing watches, and nothing would put back what it changes, so vpnmig suspended it again (the journal holds it, as the window paused it). What the windows made live is as it was. {}",
                r.owner.display(),
                SETTLE.as_secs(),
                unseen_todo(&r.owner, verb, &name, &ns)
            )));
            continue;
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
        // The parents whose suspension the window relied on for this owner: the
        // reliance ends with the restore (a21g attack 16). Said, never resumed.
        parents_no_longer_relied_on(w, &r.owner, None).await;
    }
    // The owners this window relied on: who restores them (issue 21 item 2).
    for r in w.journal.gitops.clone() {
        if r.paused || !r.relies_on_suspension() {
            continue;
        }
        // Where the owner's status says its windows are (a21k N06: this namespace's
        // journals alone read as "no window suspended it", and the resume printed here
        // re-created another window's gateway).
        let journals = match journals_on(w.cluster, &r.owner, (&ns, &name)).await {
            Ok(journals) => journals,
            Err(why) => {
                // Which window holds it is unknown: never "suspended before this
                // window", never a resume. What the window keeps is protected, as
                // before any hand-over.
                let Some(i) = w.journal.gitops.iter().position(|x| x.owner == r.owner) else {
                    continue;
                };
                if force && r.relies_on_a_window() {
                    vouch_one(w, i, replaced).await?;
                }
                let kept = self_suspended(w, i, replaced).await?;
                w.ev.emit(Event::Warning(format!(
                    "{} stays suspended: {}; meanwhile {kept}",
                    r.owner.display(),
                    holders_unknown(&why)
                )));
                continue;
            }
        };
        let pausers: Vec<holders::Holder> = holders::holders(&journals, &r.owner, (&ns, &name))
            .into_iter()
            .filter(|h| h.paused)
            .collect();
        // `--gitops resume` of a window that suspended one owner and relies on another
        // window's suspension of this one: the vouch for this one too, as a window that
        // only relies on it records it (a21j 04b: every shape of reliance takes it).
        if force
            && !pausers.is_empty()
            && r.relies_on_a_window()
            && let Some(k) = w.journal.gitops.iter().position(|x| x.owner == r.owner)
        {
            vouch_one(w, k, replaced).await?;
        }
        w.ev.emit(Event::Info(match pausers.first() {
            Some(h) => format!(
                "{} stays suspended: {}; that window restores it: `vpnmig {} {} -n {}`",
                r.owner.display(),
                h.display(),
                if h.phase.rolling_back() || h.phase == crate::core::journal::Phase::RolledBack {
                    "rollback"
                } else {
                    "cutover"
                },
                h.gateway,
                h.namespace
            ),
            None => {
                // Suspended by a person (`--gitops ignore`, attack 14): nobody's restore
                // checks it, so the window sets the protections a restore would, and
                // says what to check before the resume by hand.
                let Some(i) = w.journal.gitops.iter().position(|x| x.owner == r.owner) else {
                    continue;
                };
                let kept = self_suspended(w, i, replaced).await?;
                format!(
                    "{} stays suspended: no vpnmig window suspended it (it was suspended before this window), so vpnmig does not resume it; {kept}. {} (docs/gitops.md, \"An owner you suspended yourself\")",
                    r.owner.display(),
                    resume_by_hand(&r.owner, replaced, &w.journal, None)
                )
            }
        }));
    }
    Ok(left)
}

/// The window's own restore of owner record `i`, which a killed run left after its patch
/// re-armed the owner (`at`: when it started; `seen`: the policy live): the owner is
/// suspended again, as the window paused it, and the journal says the restore ended;
/// then what its unwatched sync did is looked at. Its sync re-created the gateway the
/// window replaced: a stop (exit 5) naming it, the owner suspended (a21j 07: that sync
/// contested the floating IP). A pinned field it changed: put back, and the stop that
/// says so ([`put_back`]). `None`: nothing it did is seen, and the restore goes on.
pub(super) async fn finish_interrupted(
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
