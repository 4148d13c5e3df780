//! The rollback (the runbook's "Rollback" section), from the journal: the old
//! IPsecGateway is re-created from the saved manifest, verbatim (never translated back
//! from the new kinds), after the VPNPeers and the VPNGateway are gone. Stages and
//! events: the module doc of `crate::window`.

use std::future::Future;

use serde_json::Value;

use super::steps::{self, Tunnels, Window, now};
use super::{
    Ask, Choices, Confirm, Emit, Event, Events, Operation, Outcome, RollbackOptions, Sink, Stage,
    Summary, Timeouts,
};
use crate::bundle;
use crate::cluster::delete::{self, Target};
use crate::cluster::{Cluster, journal as stored, lock, objects};
use crate::core::journal::{self, Journal, Owners, Phase};
use crate::core::scope::{self, PeerFate};
use crate::exit;
use crate::window::error::Error;

mod back;
mod checks;
pub(super) mod phases;
mod sequence;

use super::steps::table;
use back::*;
use checks::*;
use sequence::*;

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
    // A stop says the parents a stop of this window named stay suspended (a21k N11).
    let result = match result {
        Err(e @ Error::Stop { .. }) if !opts.dry_run => {
            Err(super::gitops::with_named_parents(cluster, name, e).await)
        }
        other => other,
    };
    if let Err(e) = &result {
        ev.emit(Event::Stopped {
            code: e.exit_code(),
            message: crate::window::error::error_line(e),
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
    let stored = stored::read(cluster, name).await?;
    // No journal, and a VPNGateway vpnmig never applied (a21p E16: an early merge before
    // any window, or one made by hand): no cutover ever ran, so nothing recorded rolls it
    // back, from a bundle or not. Refused before anything changes: no journal written,
    // no VPNPeer deleted (`--delete-extra-peers` or not).
    if stored.is_none()
        && let Some(gw) = objects::get(cluster, "VPNGateway", name).await?
        && let Some(by) = super::early::never_applied(&gw)
    {
        return Err(super::early::no_rollback_outside(&gw, name, &ns, &by));
    }
    let j = match (stored, saved) {
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
            // Neither kind of its name, and another VPNGateway stands in its place: no
            // window of it ever finished here, whatever the bundle says (a21q Q11, Q12).
            if objects::get(cluster, "IPsecGateway", name).await?.is_none()
                && objects::get(cluster, "VPNGateway", name).await?.is_none()
                && let Some((gw, why)) = super::early::stand_in(cluster, &j).await
            {
                return Err(super::early::no_rollback_stand_in(&gw, &why, name, &ns));
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
            let hint = match crate::state::lost_journal_hint(&cluster.server, &ns, name) {
                Some(h) => h,
                None => match crate::cluster::journal::archive_hint(cluster, name).await {
                    Some(h) => h,
                    None => format!(
                        "pass the bundle of the cutover (--plan DIR), or check the namespace (`kubectl get configmaps -n {ns} -l app.kubernetes.io/managed-by=vpnmig`)"
                    ),
                },
            };
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!(
                    "no journal of {name} -n {ns} (ConfigMap {}): nothing recorded to roll back to",
                    journal::object_name(name)
                ),
                hint: Some(hint.into()),
            });
        }
    };
    // Merged early (C09/C10): the source defines the new objects; refused before any change.
    if let Some(m) = super::early::merged(cluster, &j).await? {
        return Err(super::early::no_rollback(&j, &m));
    }
    // Merged early under another name (a21p E10): before the delete, no IPsecGateway and
    // no VPNGateway of its name, but another VPNGateway stands in its place and serves the
    // tunnel. A rollback would stop on it (it holds the floating IP) with advice that
    // loops: the source comes first, said before any change.
    if !j.phase.past_delete()
        && !j.phase.finished()
        && objects::get(cluster, "IPsecGateway", name).await?.is_none()
        && objects::get(cluster, "VPNGateway", name).await?.is_none()
        && super::early::stand_in(cluster, &j).await.is_some()
    {
        let (what, ways) = super::gone_before_the_delete(cluster, &j, false).await;
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!("{what}: nothing to roll back yet; nothing was changed"),
            hint: Some(ways.into()),
        });
    }
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
    // `--gitops resume` on a rolled-back window that relies on an owner another window
    // suspended: the user vouches for this window's repository change (a21f B1).
    if j.phase == Phase::RolledBack && super::gitops::vouches(&j, &opts.gitops, opts.dry_run) {
        let mut w = Window {
            cluster,
            ev,
            journal: j.clone(),
            lock: held,
            by: by.clone(),
        };
        if super::gitops::vouch(&mut w, "VPNGateway").await? {
            return Ok(Outcome::Done);
        }
    }
    if j.phase == Phase::RolledBack {
        let paused = j.gitops.iter().any(|r| r.paused);
        if paused && opts.dry_run {
            return Ok(super::gitops::restore_dry_run(ev, &j, "rollback"));
        }
        let w = Window {
            cluster,
            ev,
            journal: j.clone(),
            lock: held,
            by,
        };
        if paused {
            // Rolled back, and an owner it suspended waits for the repository to define
            // the IPsecGateway again.
            return super::gitops::restore_finished(w, "VPNGateway", opts.gitops.resume).await;
        }
        // Another gateway claims the floating IP beside the re-created IPsecGateway: not
        // "nothing to do" (a21o D15): each named with its delete, exit 5, as the restore's
        // and the done cutover's run stop on it.
        if let Some(stop) = super::gitops::claimed(&w, "VPNGateway", None).await? {
            return Err(stop);
        }
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
    // Past the delete, and neither kind exists now: pruned by an owner that syncs it and
    // that no window holds? Then a re-created IPsecGateway goes the same way (a21f A8: at
    // `done`, Argo CD pruned the VPNGateway, the rollback re-created the IPsecGateway,
    // and Argo CD pruned that too).
    if j.phase >= Phase::Deleted
        && j.phase != Phase::RolledBack
        && objects::get(cluster, "VPNGateway", name).await?.is_none()
        && objects::get(cluster, "IPsecGateway", name).await?.is_none()
        && let Some(text) = j.left_text(journal::Left::Gone).or_else(|| {
            Some(format!(
                "the window of {ns}/{name} is at phase {} and neither an IPsecGateway nor a VPNGateway {name} exists",
                j.phase
            ))
        })
        && let Some(e) = pruned_again(&j, &text, &suspended_live(cluster, &j).await?)
    {
        return Err(e);
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
            hint: Some(crate::window::error::hint!(
                "re-create the Secret from your own records (vpnmig never stores a key): `kubectl create secret generic {} -n {ns} --from-literal={}=<the client's key>`, then run the rollback again: `{}`",
                j.psk_secret,
                j.psk_key(),
                crate::window::error::Next::again(&[])
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
    // A window that deleted nothing (stopped at `started`, before its delete) applied
    // nothing an owner could sync: the rollback suspends no owner the window never
    // suspended, and so never asks to revert a repository change that was not made
    // (a21k N11: it suspended the owner, then asked for a revert and `--gitops resume`).
    let mut j = j;
    if j.phase < Phase::Deleting && !j.phase.rolling_back() {
        j.gitops
            .retain(|r| r.paused || r.saved.is_none() || r.restored_at.is_some());
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
    // The parents the user suspended at a stop's request: the window is closed, and
    // vpnmig never resumes them (a21k N11: left suspended, named by nothing).
    for note in super::gitops::named_parents(cluster, &w.journal, "").await {
        ev.emit(Event::Warning(note));
    }
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
    match state {
        journal::Left::Terminating | journal::Left::OtherKind => {
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!("{text}; nothing was changed"),
                hint: j.left_todo(state).map(Into::into),
            });
        }
        journal::Left::Gone => {}
        journal::Left::AsLeft | journal::Left::UnderWay => return Ok(()),
    }
    if let Some(e) = pruned_again(j, &text, &[]) {
        return Err(e);
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

/// Neither kind of a finished window's gateway exists: an owner that syncs the old
/// gateway and that no window holds suspended (nor the user, with `--gitops ignore`)
/// pruned it or its VPNGateway (its source defines neither) and would prune a re-created
/// IPsecGateway again. Refused, nothing changed, with the repository as the way back
/// (a21e 6, 11 at `rolled-back`; a21f A8 at `done`: the rollback re-created it and Argo
/// CD pruned it again at once).
fn pruned_again(
    j: &Journal,
    text: &str,
    suspended: &[crate::core::gitops::OwnerRef],
) -> Option<Error> {
    let syncing = j.unheld_syncers_but(suspended);
    if syncing.is_empty() {
        return None;
    }
    Some(Error::Stop {
        code: exit::REFUSED,
        message: format!(
            "{text}; {} syncs it, so a re-created one would be pruned again while its source does not define it; nothing was changed",
            syncing.join(", ")
        ),
        hint: Some(j.repository_todo().into()),
    })
}

/// The owners the old gateway's markers name that read suspended live (Argo CD: no
/// `automated`; Flux: `suspend: true`), whoever suspended them: they prune nothing, so a
/// re-created IPsecGateway is not pruned again by them (a21s S02c: an owner the window let
/// go of, suspended again as its stop advised, was named as one that "syncs it").
async fn suspended_live(
    cluster: &Cluster,
    j: &Journal,
) -> Result<Vec<crate::core::gitops::OwnerRef>, Error> {
    let mut out = Vec::new();
    for m in crate::core::gitops::detect(&j.old_manifest) {
        let Some(o) = m.owner else { continue };
        if let crate::cluster::gitops::Found::One(_, obj) =
            crate::cluster::gitops::find(cluster, &o).await?
            && !crate::core::gitops::owner_state(&obj, "", "", "").active
        {
            out.push(o);
        }
    }
    Ok(out)
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
            let line = crate::window::error::error_line(&e);
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
                hint: Some(crate::window::error::hint!(
                    "once the cause is fixed, `{}` resumes from there{}",
                    crate::window::error::Run::rollback(&name, &ns),
                    e.hint()
                        .map(|h| crate::window::error::hint!(" ({})", h))
                        .unwrap_or_default()
                )),
            })
        }
        other => other,
    }
}
