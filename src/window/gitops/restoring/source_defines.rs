//! Checks 3 and 3b of a restore ([`super::restore`]): what the owner's source, as the
//! cluster shows it, still defines. An owner whose source still defines (or may define)
//! what a window replaced, or another IPsecGateway its first sync would create, stays
//! suspended, and the stop says what to change in the repository.

use super::*;

/// Check 3: [`Step::Kept`] (said) while the owner's source still defines, or may define,
/// what this window or a finished window that relied on its suspension replaced.
pub(super) fn still_defines(
    w: &Window<'_>,
    o: &Owner<'_>,
    windows: &[(crate::core::journal::Journal, &str)],
    live_owner: &Option<Value>,
) -> Step<()> {
    let (force, verb) = (o.force, o.verb);
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let r = &o.r;
    // 3. Safe only when its source no longer defines what the windows replaced.
    // Whether the rest of the source matches what the window made live is check 4's
    // (Argo CD: each kept object's entry, once it carries the owner's markers); the
    // first sync after the restore is watched all the same (`settle`). `--gitops resume`
    // vouches for this window's repository change only: what another window that
    // relied on the suspension replaced is checked all the same (attack finding A2).
    // Every window's, not only the first: advice for this window's own change alone
    // (`--gitops resume`, a restore by hand) would re-create another's gateway.
    let mut blocks = Vec::new();
    for (j, kind) in windows {
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
        // An owner found syncing only that window's PSK Secret never applied its gateway
        // (its markers were not on it): its source is not where the repository change
        // goes (a21s S06b), unless its own status shows the gateway defined now.
        let record = if mine {
            Some(r)
        } else {
            j.gitops
                .iter()
                .find(|x| gitops::same_owner(&x.owner, &r.owner))
        };
        let lists = live_owner
            .as_ref()
            .and_then(|o| gitops::owner_state(o, kind, &j.namespace, &j.gateway).source_lists);
        // Unless its own status shows the gateway defined now.
        if record.is_some_and(|x| !x.syncs_gateway()) && lists != Some(true) {
            continue;
        }
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
        return Step::Kept;
    }
    Step::Go(())
}

/// Check 3b: [`Step::Kept`] (said) while the owner's source defines an IPsecGateway that is
/// not live, after a cutover: its floating IP cannot be read before it exists.
pub(super) async fn would_create_other(
    w: &Window<'_>,
    o: &Owner<'_>,
    windows: &[(crate::core::journal::Journal, &str)],
    live_owner: &Option<Value>,
) -> Result<Step<()>, Error> {
    let (replaced, verb) = (o.replaced, o.verb);
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let r = &o.r;
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
            return Ok(Step::Kept);
        }
    }
    Ok(Step::Go(()))
}
