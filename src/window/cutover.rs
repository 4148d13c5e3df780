//! The cutover (runbook steps 2 and 3): every step checked before and waited for after,
//! recorded in the journal, and idempotent, so a run that stops anywhere is resumed by
//! running it again (DESIGN.md §4.6). Stages and events: the module doc of
//! `crate::window`.

use std::future::Future;

use serde_json::Value;

use super::guard::{self as window_guard, Guard};
use super::steps::{self, Window, now};
use super::{
    Ask, Confirm, CutoverOptions, Emit, Event, Events, Operation, Outcome, Sink, Stage, Summary,
};
use crate::bundle;
use crate::cluster::delete::{self, Target};
use crate::cluster::{Cluster, journal as stored, lock, objects, verify as fetch};
use crate::core::dataplane::{self, Baseline, Outage};
use crate::core::guard::Moment;
use crate::core::journal::{self, Journal, Phase};
use crate::core::model::IPsecGateway;
use crate::core::{fingerprint, live, plan, scope};
use crate::exit;
use crate::window::error::Error;

mod adopting;
mod contention;
mod deleting;
mod finished;
mod old_gateway_gone;
pub(super) mod phases;
mod resuming;
mod sequence;
mod verifying;

use deleting::*;
use finished::*;
pub(crate) use old_gateway_gone::gone_before_the_delete;
use old_gateway_gone::no_old_gateway;
use resuming::*;
use sequence::*;
use verifying::*;

/// Cut gateway `name` (in the cluster's namespace) over: take its lock, plan it live
/// again (with `opts.plan`, the gateway must still match that plan), refuse on any
/// blocker, ask `confirm` with the summary, write the journal and the local bundle,
/// detach the PSK Secret, dry-run the targets, delete the IPsecGateway and wait until it
/// is gone, apply the targets, wait for FIPAttached, Ready, every peer Authorized and the
/// tunnels ESTABLISHED. A journal past the delete is resumed from its phase; after a
/// rollback that lost addresses, `opts.forward` cuts over again with its targets.
///
/// `stop` ends the run where it is when it resolves, with the error it resolves to (the
/// caller's Ctrl-C: a `Stop` with `exit::INTERRUPTED`, which the engine completes with
/// where the journal stands); the lock is released whatever happened. Everything the run does is reported to `events`; the
/// error that stops it is returned (and reported as [`Event::Stopped`]).
pub async fn cutover(
    cluster: &Cluster,
    name: &str,
    opts: &CutoverOptions,
    events: &mut dyn Events,
    confirm: &mut impl Confirm,
    stop: impl Future<Output = Error>,
) -> Result<Outcome, Error> {
    let ev = Sink::new(events);
    let action = if opts.forward {
        "cut over again"
    } else {
        "cut over"
    };
    // On the heap: the whole window is one large future, and a caller may run it on a
    // thread with a small stack (a test's, a tokio worker's).
    let result = Box::pin(steps::frame(
        cluster,
        name,
        opts.dry_run,
        opts.break_lock,
        true,
        action,
        &ev,
        stop,
        async |held| Box::pin(run(cluster, held, name, opts, &ev, confirm)).await,
    ))
    .await;
    // Every refusal or stop after a parent stop says the parent stays suspended for the
    // window, and who resumes it (a21k N11).
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
    opts: &CutoverOptions,
    ev: &dyn Emit,
    confirm: &mut impl Confirm,
) -> Result<Outcome, Error> {
    let ns = cluster.namespace.clone();
    let by = steps::identity(held);
    let previous = stored::read(cluster, name).await?;
    // A run over the finished window's journal, as its own lock holder.
    let window = |j: &crate::core::journal::Journal| Window {
        cluster,
        ev,
        journal: j.clone(),
        lock: held,
        by: by.clone(),
    };
    // The one check every run of a finished window goes through first: the replaced
    // IPsecGateway live again beside the VPNGateway stops it (exit 5) before any vouch,
    // restore, let-go or "nothing to do" (issue 21 kind 3; a21l A01, A02, A05, A06, A08).
    if let Some(j) = &previous
        && j.phase == Phase::Done
    {
        let mut w = window(j);
        if let Some(stop) =
            super::gitops::finished_beside_live(&mut w, "IPsecGateway", opts.dry_run).await?
        {
            return Err(stop);
        }
    }
    // `--gitops resume` at `done` on a window that relies on an owner another window
    // suspended: the user vouches for this window's repository change (a21f B1). One no
    // vpnmig window suspended goes on as any finished window (the note on an owner
    // suspended by hand).
    if let Some(j) = &previous
        && j.phase == Phase::Done
        && super::gitops::vouches(j, &opts.gitops, opts.dry_run)
    {
        let mut w = window(j);
        // No vouch beside the replaced gateway live again: it disproves it (a21k R07).
        if let Some(stop) = super::gitops::live_again(&w, "IPsecGateway", None).await? {
            return Err(stop);
        }
        if super::gitops::vouch(&mut w, "IPsecGateway").await? {
            return Ok(Outcome::Done);
        }
    }
    // Merged early: the owner's sync applied the new objects before the delete (C09/C10).
    if let Some(j) = &previous
        && let Some(m) = super::early::merged(cluster, j).await?
    {
        return adopting::adopt(cluster, held, opts, ev, confirm, j.clone(), by, m).await;
    }
    match &previous {
        Some(j)
            if j.phase == Phase::Done
                && objects::get(cluster, "VPNGateway", name).await?.is_none() =>
        {
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!(
                    "the journal says the cutover of {name} -n {ns} is done, but VPNGateway {name} does not exist (deleted since?)"
                ),
                hint: Some(crate::window::error::hint!(
                    "`{}` restores the IPsecGateway from the journal; `vpnmig status` shows what is there",
                    crate::window::error::Run::rollback(name, &ns)
                )),
            });
        }
        Some(j) if j.phase == Phase::Done && j.gitops.iter().any(|r| r.paused) => {
            // Done, and an owner it suspended waits for the repository change. A dry run
            // rehearses nothing of the restore: it writes (protections, the owner's
            // policy, the journal) and its first sync acts (attack: `--dry-run` re-armed
            // an owner whose source still defined the old gateway).
            if opts.dry_run {
                return Ok(super::gitops::restore_dry_run(ev, j, "cutover"));
            }
            let w = window(j);
            return super::gitops::restore_finished(w, "IPsecGateway", opts.gitops.resume).await;
        }
        Some(j) if j.phase == Phase::Done => {
            // "Nothing to do" only over the gateway the window left: its floating IP and
            // the client's key as the journal recorded them (a21f A1: exit 0 and "the
            // cutover is complete" over a VPNGateway re-created on another address).
            let problems = not_as_left(cluster, j).await?;
            if !problems.is_empty() {
                return Err(Error::Stop {
                    code: exit::VERIFY_FAILED,
                    message: format!(
                        "the cutover of {ns}/{name} is done (journal ConfigMap {ns}/{}), but the gateway is not as it left it: {}",
                        journal::object_name(name),
                        problems.join("; ")
                    ),
                    hint: Some(crate::window::error::hint!(
                        "`{}` shows every check; `{}` says what to put back",
                        crate::window::error::Run::verify(name, &ns),
                        crate::window::error::Run::status(&ns)
                    )),
                });
            }
            ev.emit(Event::Info(format!(
                "the cutover of {ns}/{name} is already done (journal ConfigMap {ns}/{}, {}): nothing to do",
                journal::object_name(name),
                j.history.last().map(|e| e.at.as_str()).unwrap_or("?")
            )));
            ev.emit(Event::Info(Phase::Done.recovery(name, &ns)));
            // An owner the window relied on and no vpnmig window suspended (`--gitops
            // ignore`): still suspended, and vpnmig never resumes it, `--gitops resume`
            // included; said with the steps by hand, never silently (attack 14).
            super::gitops::self_suspended_note(cluster, ev, j, "IPsecGateway").await;
            return Ok(Outcome::NothingToDo);
        }
        Some(j) if j.phase == Phase::OldApplied && opts.forward => {
            return forward_again(cluster, held, opts, ev, confirm, j.clone(), by).await;
        }
        Some(j) if j.phase.rolling_back() => {
            // The journal's own advice at `rolling-back`: stopped on a VPNGateway vpnmig did
            // not create, running the rollback again is no way on (a21p E16's journal).
            let mut hint = crate::window::error::Hint::from(if j.phase == Phase::RollingBack {
                j.recovery()
            } else {
                j.phase.recovery(name, &ns)
            });
            if j.phase == Phase::OldApplied {
                hint = crate::window::error::hint!(
                    "{}; if the rollback reported lost addresses, `{}` cuts over again with the journal's targets, which pin them",
                    hint,
                    crate::window::error::Run::cutover(name, &ns).with(&["--forward"])
                );
            }
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!(
                    "a rollback of {name} -n {ns} is under way (journal phase {}{}): a cutover now would fight it",
                    j.phase,
                    j.last_error
                        .as_deref()
                        .map(|e| format!(", stopped on: {e}"))
                        .unwrap_or_default()
                ),
                hint: Some(hint),
            });
        }
        Some(j) if j.phase.past_delete() || (j.fixed_targets && !j.phase.finished()) => {
            return resume(cluster, held, opts, ev, confirm, j.clone(), by).await;
        }
        _ => {}
    }

    // The window guard, before anything (issue 13 item 4).
    let guard = start_guard(cluster, ev, name, opts, Phase::Started).await?;
    ev.emit(Event::Stage(Stage::Plan));
    // The plan's own server-side dry run (facts) is the first one; another follows right
    // before the delete.
    // The peer names chosen at plan time (`plan --peer-name`) come with the bundle
    // unless the flag names them here.
    let mut chosen = opts.peer_names.clone();
    if let Some(dir) = &opts.plan
        && chosen.is_empty()
    {
        let (saved, _) = bundle::read_saved(dir)?;
        chosen = saved["peerNames"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(t, n)| Some((t.clone(), n.as_str()?.to_string())))
            .collect();
    }
    let (source, plan, _) =
        match super::plan::live_plan(cluster, name, &opts.allowlist, true, &chosen).await {
            Err(Error::Cluster(e @ crate::cluster::KubeError::NotFound { .. })) => {
                return Err(no_old_gateway(cluster, name, e, previous.as_ref()).await);
            }
            other => other?,
        };
    let mut approved = None;
    if let Some(dir) = &opts.plan {
        let (saved, _) = bundle::read_saved(dir)?;
        let drift = journal::drift(&saved, &plan);
        // What the change record says of the reviewed plan (issue 12 item 4).
        approved = Some(journal::ApprovedPlan {
            bundle: dir.display().to_string(),
            fingerprint: fingerprint::fingerprint(&saved),
            matched: drift.is_empty(),
        });
        if !drift.is_empty() {
            ev.emit(Event::Drift(drift));
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!(
                    "the live ipsecgateway/{name} -n {ns} no longer matches the plan in {}: nothing was changed",
                    dir.display()
                ),
                hint: Some(crate::window::error::hint!(
                    "plan again (`{}`: --force because the bundle records the old state), review the diff, then cut over",
                    crate::window::error::Run::plan(name, &ns).with(&[
                        "--out",
                        &dir.display().to_string(),
                        "--force"
                    ])
                )),
            });
        }
    }
    // Owners an earlier run of this window suspended (stopped before the delete): still
    // this window's to restore, whatever this run's flags (issue 11 item 2).
    let inherited: Vec<crate::core::gitops::Record> = previous
        .iter()
        .flat_map(|p| p.gitops.iter().filter(|r| r.paused).cloned())
        .collect();
    // The mode the earlier run answered the gitops-sync blocker with, whether it suspended
    // an owner or relied on another window's suspension (a21u U23: a relying window killed
    // before its delete was resumed as status advised, without `--gitops pause`, and
    // stopped on the blocker it had answered; exit 4).
    let mode = opts
        .gitops
        .mode
        .or(inherited.first().map(|r| r.mode))
        .or(previous
            .iter()
            .flat_map(|p| p.gitops.iter())
            .find(|r| r.relies)
            .map(|r| r.mode));
    // `--gitops pause|ignore` answers the gitops-sync blocker (issue 11 item 2).
    let blocking = journal::blocking(&plan)
        .iter()
        .filter(|(id, _)| mode.is_none() || *id != crate::core::checks::GITOPS_SYNC)
        .count();
    if blocking > 0 {
        ev.emit(Event::Blocked(Box::new(plan.clone())));
        return Err(Error::Stop {
            code: exit::BLOCKED,
            message: format!("{blocking} blocker(s): nothing was changed"),
            hint: Some(crate::window::error::hint!(
                "`{}` shows every check and its fix",
                crate::window::error::Run::plan(name, &ns)
            )),
        });
    }
    // The plan's dry run found webhooks that cannot dry-run: one verdict with the plan's
    // warning, decided before anything changes (issue 9 item 8).
    let unskipped =
        live::unskipped_webhooks(live::webhooks_in_plan(&plan), &opts.skip_dry_run_webhooks);
    if !unskipped.is_empty() {
        return Err(webhooks_refused(
            name,
            &ns,
            &unskipped,
            "nothing was changed",
            opts,
        ));
    }
    let secret = objects::secret(cluster, &plan_psk_secret(&source.gateway)).await?;
    let detach = secret
        .as_ref()
        .map(|s| journal::detach_owners(s, &source.gateway))
        .filter(|(removed, _)| !removed.is_empty());
    let mut owners = match mode {
        Some(mode) => {
            super::gitops::owners(
                cluster,
                ev,
                name,
                &source.raw,
                secret.as_ref(),
                mode,
                &inherited,
                opts.dry_run,
            )
            .await?
        }
        None => Vec::new(),
    };
    for r in inherited {
        owners.retain(|o| o.owner != r.owner);
        owners.push(r);
    }
    let out_dir = opts
        .out
        .clone()
        .or_else(|| opts.plan.clone())
        .unwrap_or_else(|| crate::state::bundle_dir(&ns, name, plan.source.uid.as_deref()));
    // Every local path before the prompt (issue 10 item 3).
    if !opts.dry_run {
        bundle::check_writable(&out_dir).map_err(|why| Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "cannot write the bundle to {}: {why}; nothing was changed",
                out_dir.display()
            ),
            hint: Some(crate::window::error::hint!(
                "run from a directory you can write, or pass `--out DIR`: `{}`",
                crate::window::error::Run::cutover(name, &ns).with(&["--out", "DIR"])
            )),
        })?;
    }
    ev.emit(Event::Stage(Stage::Confirm));
    confirm
        .confirm(Ask {
            gateway: name.to_string(),
            action: "cut over",
            dry_run: opts.dry_run,
            summary: Summary::Cutover {
                context: cluster.context.clone(),
                plan: Box::new(plan.clone()),
                detach: detach.as_ref().map(|d| d.0.len()),
                out_dir: out_dir.clone(),
            },
        })
        .await?;
    // The prompt may have sat for a while.
    if let Some(g) = &guard
        && !opts.dry_run
    {
        g.check(ev, name, &ns, Moment::Confirmed, false)?;
    }

    let old_manifest = plan::clean_old_manifest(&source.raw);
    let fip = source
        .gateway
        .spec
        .endpoint
        .pinned_fip()
        .unwrap_or_default()
        .to_string();
    let mut j = Journal::new(&plan, old_manifest.clone(), fip, &now(), &by);
    j.approved_plan = approved;
    j.psk_secret_uid = secret
        .as_ref()
        .and_then(|s| s.pointer("/metadata/uid"))
        .and_then(Value::as_str)
        .map(str::to_string);
    j.gitops = owners;
    // The parents an earlier run relied on for an owner this window holds again: the
    // reliance goes on (a21h 13: after a rollback, a second window took over the child's
    // suspension but not the reliance on its parent, whose part in the child's policy its
    // managedFields no longer show once a pause wrote it; `status` fell silent, and the
    // parent's resume re-created the gateways).
    if let Some(prev) = &previous {
        for p in &prev.gitops_parents {
            // A parent of a parent goes on with the owner at the bottom of its chain
            // (a21i 06, 09), read against this window's owners: a rollback of a window
            // that deleted nothing keeps no record of the owner it never suspended, and
            // the parents its stop named were dropped with it (a21m B07: the level above
            // the relied-on parent was forgotten, and its resume re-armed the owner).
            let child_held = crate::core::holders::bottom_of(&j.gitops, &prev.gitops_parents, p)
                .is_some_and(|b| b.restored_at.is_none());
            let known = j
                .gitops_parents
                .iter()
                .any(|q| q.owner == p.owner && q.parent_of == p.parent_of);
            if child_held && !known {
                j.gitops_parents.push(p.clone());
            }
        }
    }
    if opts.gitops.keep_tracking {
        for t in &mut j.targets {
            crate::core::gitops::keep_tracking(t, &source.raw);
        }
    }
    if let Some(prev) = previous.as_ref().filter(|p| p.phase != Phase::RolledBack) {
        // Resuming before the delete: keep what the first run detached.
        j.psk_detached = prev.psk_detached.clone();
    }
    // The gateway's earlier windows stay listed in every journal that follows them.
    if let Some(prev) = &previous {
        j.earlier_windows = prev.earlier_windows.clone();
    }

    if opts.dry_run {
        if let Some(prev) = previous.as_ref().filter(|p| p.phase == Phase::RolledBack) {
            // Where it would go, read as the archive reads it (a name taken by another
            // gateway's journal is passed over, the number stays the window's: T11).
            let said = match stored::archive_slot(cluster, prev, prev.window_number()).await {
                Ok((n, archived, _)) => format!(
                    "as window {n} in ConfigMap {ns}/{archived} before it writes its own journal (`vpnmig report {name} -n {ns} --window {n}` then prints it)"
                ),
                Err(e) => {
                    format!("before it writes its own journal, but could not read where: {e}")
                }
            };
            ev.emit(Event::Info(format!(
                "the cutover would archive the record of the rolled-back window {said}"
            )));
        }
        return dry_run(cluster, ev, &j, &secret, detach, opts).await;
    }

    // Step d: the journal, locally and in the cluster, before anything is touched.
    ev.emit(Event::Stage(Stage::Journal));
    let prev_bundle = bundle::read_previous(&out_dir)?;
    bundle::guard(&out_dir, &plan, &prev_bundle, false)?;
    bundle::write(&out_dir, &plan, &old_manifest)?;
    // Where the bundle is, for the day the journal is lost (issue 14 item 7).
    if let Err(why) = crate::state::remember(&cluster.server, &ns, name, &out_dir, &now()) {
        ev.emit(Event::Note(format!(
            "this machine cannot remember where the bundle is ({why})"
        )));
    }
    // A rolled-back window is finished: its journal is its record. It is archived in its
    // own ConfigMap before the new journal replaces it, never lost without a word
    // (issue 21 item 7); a failure to archive stops here, nothing touched.
    if let Some(prev) = previous.as_ref().filter(|p| p.phase == Phase::RolledBack) {
        let (n, archived) = stored::archive(cluster, prev, prev.window_number())
            .await
            .map_err(|e| Error::Stop {
                code: exit::FAILURE,
                message: format!(
                    "the record of the rolled-back window of {name} -n {ns} (ConfigMap {}) could not be archived before the new cutover replaces it: {e}; nothing was changed",
                    journal::object_name(name)
                ),
                hint: Some(crate::window::error::hint!(
                    "keep it first: `{}`, then run the same command again",
                    crate::window::error::Run::report(name, &ns)
                        .with(&["--out", &format!("{name}-window-{}.md", prev.window_number())])
                )),
            })?;
        j.earlier_windows.push(prev.archived_as(n, &archived));
        ev.emit(Event::Step(format!(
            "the record of the earlier window ({}, {} to {}) is archived as ConfigMap {ns}/{archived}: `vpnmig report {name} -n {ns} --window {n}`",
            prev.phase,
            prev.history.first().map(|e| e.at.as_str()).unwrap_or("?"),
            prev.history.last().map(|e| e.at.as_str()).unwrap_or("?"),
        )));
    }
    stored::write(cluster, &j, false).await?;
    ev.emit(Event::Recorded { phase: j.phase });
    ev.emit(Event::Step(format!(
        "journal written: ConfigMap {ns}/{} (phase started) and bundle {}",
        journal::object_name(name),
        out_dir.display()
    )));
    let mut w = Window {
        cluster,
        ev,
        journal: j,
        lock: held,
        by,
    };
    let gateway = source.gateway.clone();
    phases(&mut w, opts, Some(&gateway), guard.as_ref()).await
}

/// The guard of a cutover going on from phase `from` (`--window-end`), checked at the
/// start: a window too short is refused before anything is changed.
async fn start_guard(
    cluster: &Cluster,
    ev: &dyn Emit,
    name: &str,
    opts: &CutoverOptions,
    from: Phase,
) -> Result<Option<Guard>, Error> {
    let Some(end) = &opts.window_end else {
        return Ok(None);
    };
    let g = Guard::new(cluster, ev, end, &opts.timeouts, from, false).await;
    g.check(ev, name, &cluster.namespace, Moment::Start, opts.dry_run)?;
    Ok(Some(g))
}

/// The PSK Secret the old gateway references.
fn plan_psk_secret(g: &IPsecGateway) -> String {
    g.spec.auth.psk_secret_ref.name.clone()
}
