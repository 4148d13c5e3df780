//! A suspension the window's own stop asked for, and what a let-go says while the owner's
//! source still defines what the window replaced. Layer: the window engine
//! (`src/window/`), part of `window::gitops`; it writes the journal and emits events,
//! never prints.
//!
//! The a21n attack's C13/C12: an Argo CD owner re-armed by its app-of-apps after `done`
//! synced and re-created the IPsecGateway; the stop (exit 5) asked to suspend the parent
//! and the owner (`kubectl patch … --field-manager=vpnmig`) and to delete the gateway.
//! Followed to the letter, the next run read the sync it had itself seen as "its policy
//! changed since the window paused it", let go of the owner and called its parents "no
//! longer relied on … may be resumed" while the source still defined the gateway. Argo
//! CD's pause removes `automated`, so no managedFields entry says whose the suspension is:
//! the journal does. The stop records what it asked for and the sync it saw
//! ([`gitops::Record::asked`]); the first read-back suspended after it is that one.

use super::*;

/// The window's stop asks for the suspension of every owner it holds that syncs now
/// (the hint prints [`gitops::pause_command`] for each): recorded with the sync seen
/// now, so that the next run knows that suspension for the window's own. Not with a dry
/// run (it changes nothing, so it asks for nothing).
pub(crate) async fn record_asked(w: &mut Window<'_>) -> Result<(), Error> {
    let mut changed = false;
    for i in 0..w.journal.gitops.len() {
        let r = &w.journal.gitops[i];
        if !r.paused || r.saved.is_none() || r.restored_at.is_some() {
            continue;
        }
        let Found::One(_, obj) = live::find(w.cluster, &r.owner).await? else {
            continue;
        };
        if !gitops::owner_state(&obj, "", "", "").active {
            continue;
        }
        // The policy the re-arm set: the end of the window restores it if it is not the
        // one recorded before the pause (a21o D20), once the suspension asked for is read
        // back. What an earlier adoption replaced stays said.
        let policy = r
            .saved
            .as_ref()
            .and_then(|s| obj.pointer(&s.pointer).cloned());
        let recorded = r.asked.as_ref().and_then(|a| a.recorded.clone());
        w.journal.gitops[i].asked = Some(gitops::Asked {
            at: super::super::steps::now(),
            last_sync: gitops::last_sync(&obj),
            adopted: None,
            writer: None,
            policy,
            recorded,
        });
        changed = true;
    }
    if changed {
        journal::write(w.cluster, &w.journal, false).await?;
    }
    Ok(())
}

/// Owner record `i`, read back (`live`) as the window left it: the suspension the
/// window's own stop asked for ([`gitops::as_asked`]) is the window's again. The journal
/// records it (the sync seen now becomes the last one, `asked.adopted`), and the parents
/// above it that read suspended are relied on again, as at the pause. A sync after the
/// adoption is someone else's re-arm: nothing done here, the restore says it.
pub(crate) async fn adopt_asked(w: &mut Window<'_>, i: usize, live: &Value) -> Result<(), Error> {
    let r = w.journal.gitops[i].clone();
    // Only a suspension read back as the window left it is the one asked for: a freeze
    // set since (Argo CD's `skip-reconcile` on an owner still re-armed) is someone else's,
    // said once as a policy changed since, never first as the window's own (a21o D11).
    let Some(asked) = r
        .asked
        .clone()
        .filter(|_| gitops::as_asked(&r, live) && gitops::held(&r, live) == gitops::Held::AsLeft)
    else {
        return Ok(());
    };
    if asked.adopted.is_none() {
        let seen = gitops::last_sync(live);
        let between = match (&seen, &asked.last_sync) {
            (Some(now), Some(then)) if now != then => format!(
                " (it synced at {now} after that stop: the re-arm the stop named, before the suspension it asked for landed)"
            ),
            _ => String::new(),
        };
        // The re-arm the stop saw set another policy than the window recorded before its
        // pause (someone changed it in the parent's source, or by hand): that policy is
        // what the end of the window restores, never the one before (issue 21 item 4,
        // a21o D20: the restore put `prune: true` back over a `prune: false` set since).
        let since = r
            .saved
            .as_ref()
            .and_then(|s| gitops::policy_set_since(s, asked.policy.as_ref()).map(|v| (s, v)));
        let mut recorded = asked.recorded.clone();
        let mut set_since = String::new();
        if let Some((s, policy)) = since {
            set_since = format!(
                "; its policy was changed while the window held it: {} {} when the window paused it, {} set by the re-arm this window's stop saw at {}, so the end of the window restores {}, not the policy before (the journal records it)",
                gitops::dotted(&s.pointer),
                gitops::policy_shown(s.value.as_ref()),
                gitops::policy_shown(policy.as_ref()),
                asked.at,
                gitops::policy_shown(policy.as_ref()),
            );
            recorded = recorded.or_else(|| Some(s.value.clone()));
            if let Some(saved) = w.journal.gitops[i].saved.as_mut() {
                saved.value = policy;
            }
        }
        w.journal.gitops[i].last_sync = seen.clone();
        w.journal.gitops[i].asked = Some(gitops::Asked {
            at: asked.at.clone(),
            last_sync: seen,
            adopted: Some(super::super::steps::now()),
            writer: gitops::suspend_writer(live).filter(|_| live["kind"] != "Application"),
            policy: asked.policy.clone(),
            recorded,
        });
        journal::write(w.cluster, &w.journal, false).await?;
        w.ev.emit(Event::Note(format!(
            "{} reads back suspended as this window's stop asked at {} (`{}`){between}: the window's own suspension again (the journal holds it), not someone else's change{set_since}",
            r.owner.display(),
            asked.at,
            gitops::pause_command(&r.owner)
        )));
    }
    // Its parents, as at the pause: each level that reads suspended is relied on.
    let known = remembered_anywhere(w).await;
    let chain = live_chain(w.cluster, &known, &r.owner, live).await?;
    let links: Vec<gitops::Link> = chain.iter().map(|(l, _)| l.clone()).collect();
    if gitops::acting_top_down(&links).is_empty() {
        for (l, parent) in &chain {
            rely_on_parent(w, &r.owner, l, parent).await?;
        }
    }
    Ok(())
}

/// What the ApplicationSet that manages owner record `r` (read as `live`) defines now,
/// when it is not the policy the end of the window restores ([`gitops::manager_policy`],
/// a21p E04). `None`: no ApplicationSet manages it, it cannot tell, or it cannot be read.
pub(crate) async fn manager_policy(
    cluster: &Cluster,
    r: &Record,
    live: &Value,
) -> Option<gitops::ManagerPolicy> {
    if live["kind"] != "Application" {
        return None;
    }
    let parents = live::parents_of(cluster, live).await.ok()?;
    parents
        .iter()
        .filter(|(p, _)| p.owner.kind == "ApplicationSet")
        .find_map(|(p, set)| gitops::manager_policy(r, &p.owner, set))
}

/// What the window replaced: the IPsecGateway after a cutover, the VPNGateway after a
/// rollback.
fn replaced_of(j: &crate::core::journal::Journal) -> &'static str {
    if j.phase == Phase::RolledBack || j.phase.rolling_back() {
        "VPNGateway"
    } else {
        "IPsecGateway"
    }
}

/// For a note on a let-go of `owner` (read as `live`) or of a parent above it: its source
/// still defines what the window replaced (`true`: its status says so; an Argo CD
/// Application's comparison, a syncing Kustomization's inventory), or the cluster cannot
/// show that it does not (`false`: a suspended Kustomization's inventory is its last
/// sync's, a HelmRelease has none), with what a resume does then and what comes first.
/// `None`: its status shows the gateway gone from its source, or the owner is not read.
pub(crate) fn source_still_defines(
    j: &crate::core::journal::Journal,
    owner: &gitops::OwnerRef,
    live: Option<&Value>,
) -> Option<(bool, String)> {
    let replaced = replaced_of(j);
    let (name, ns) = (j.gateway.as_str(), j.namespace.as_str());
    let live = live?;
    let st = gitops::owner_state(live, replaced, ns, name);
    let what = format!("{}/{name} -n {ns}", replaced.to_lowercase());
    let fresh = live["kind"] == "Application" || st.active;
    let (sure, defines) = match st.source_lists {
        Some(false) if fresh => return None,
        Some(true) if fresh => (
            true,
            format!(
                "the source of {} still defines {what} (its status, read now)",
                owner.display()
            ),
        ),
        _ => (
            false,
            format!(
                "the cluster does not show that the source of {} no longer defines {what} (its status cannot tell: {})",
                owner.display(),
                gitops::status_blind(live)
                    .unwrap_or_else(|| "a suspended owner's inventory is its last sync's".into())
            ),
        ),
    };
    let change = if replaced == "IPsecGateway" {
        format!(
            "merge the repository change first (`vpnmig plan {name} -n {ns} --gitops-repo DIR` writes it)"
        )
    } else {
        format!(
            "revert the repository change first, so that its source defines ipsecgateway/{name} again"
        )
    };
    Some((
        sure,
        format!(
            "{defines}: resumed, its sync re-creates {what} beside what the window made live and contests the floating IP; {change}"
        ),
    ))
}

/// [`source_still_defines`] with the owner read now; `None` when it cannot be read.
pub(crate) async fn source_still_defines_now(
    w: &Window<'_>,
    owner: &gitops::OwnerRef,
) -> Option<String> {
    let live = match live::find(w.cluster, owner).await {
        Ok(Found::One(_, o)) => o,
        _ => return None,
    };
    source_still_defines(&w.journal, owner, Some(&live)).map(|(_, d)| d)
}

/// Every namespace's journals, or why they could not be read: listing every namespace
/// refused is said as such, never read as the gateway's namespace alone
/// ([`crate::cluster::journal::list`] falls back to it silently), as `status` says it.
pub(crate) async fn every_journal(
    cluster: &Cluster,
) -> Result<Vec<crate::core::journal::Journal>, String> {
    crate::cluster::journal::list_in(cluster, None)
        .await
        .map(|l| l.journals)
        .map_err(|e| format!("the journals of every namespace could not be listed ({e})"))
}

/// A closed window's note on a parent its stop asked for, when whether another window
/// relies on it cannot be read (`why`): kept, never "resume it yourself".
pub(crate) fn unread_note(parent: &gitops::OwnerRef, ns: &str, name: &str, why: &str) -> String {
    format!(
        "{} is suspended and this window asked for it (a stop of the window of {ns}/{name} named it); the window is closed, but whether another window relies on it cannot be read ({why}): keep it suspended until `vpnmig status -A` with a context that can list them names none; vpnmig never resumes a parent ({})",
        parent.display(),
        resume_yourself(parent)
    )
}
