//! The cutover (runbook steps 2 and 3): every step checked before and waited for after,
//! recorded in the journal, and idempotent, so a run that stops anywhere is resumed by
//! running it again (DESIGN.md §4.6). Stages and events: the module doc of
//! `crate::window`.

use std::future::Future;

use serde_json::Value;

use super::guard::{self as window_guard, Guard};
use super::steps::{self, Window, now, timed_out};
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
use crate::error::Error;
use crate::exit;

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
    if let Err(e) = &result {
        ev.emit(Event::Stopped {
            code: e.exit_code(),
            message: crate::error::error_line(e),
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
                hint: Some(format!(
                    "`vpnmig rollback {name} -n {ns}` restores the IPsecGateway from the journal; `vpnmig status` shows what is there"
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
            let w = Window {
                cluster,
                ev,
                journal: j.clone(),
                lock: held,
                by,
            };
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
                    hint: Some(format!(
                        "`vpnmig verify {name} -n {ns}` shows every check; `vpnmig status -n {ns}` says what to put back"
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
            let mut hint = j.phase.recovery(name, &ns);
            if j.phase == Phase::OldApplied {
                hint.push_str(&format!(
                    "; if the rollback reported lost addresses, `vpnmig cutover {name} -n {ns} --forward` cuts over again with the journal's targets, which pin them"
                ));
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
                hint: Some(format!(
                    "plan again (`vpnmig plan {name} -n {ns} --out {} --force`: --force because the bundle records the old state), review the diff, then cut over",
                    dir.display()
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
    let mode = opts.gitops.mode.or(inherited.first().map(|r| r.mode));
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
            hint: Some(format!(
                "`vpnmig plan {name} -n {ns}` shows every check and its fix"
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
            hint: Some(format!(
                "run from a directory you can write, or pass `--out DIR`: `vpnmig cutover {name} -n {ns} --out DIR`"
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
            ev.emit(Event::Info(format!(
                "the cutover would archive the record of the rolled-back window as ConfigMap {ns}/{} before it writes its own journal (`vpnmig report {name} -n {ns} --window {}` then prints it)",
                journal::archive_name(name, prev.window_number()),
                prev.window_number()
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
                hint: Some(format!(
                    "keep it first: `vpnmig report {name} -n {ns} --out {name}-window-{}.md`, then run the same command again",
                    prev.window_number()
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

/// What differs between a done window's VPNGateway and PSK Secret and what its journal
/// recorded: the floating IP (compared in its family), the VPNGateway's uid, the key's
/// fingerprint. Empty when as left.
async fn not_as_left(cluster: &Cluster, j: &Journal) -> Result<Vec<String>, Error> {
    use crate::core::psk::Held;
    let (name, ns) = (j.gateway.as_str(), j.namespace.as_str());
    let mut out = Vec::new();
    if let Some(gw) = objects::get(cluster, "VPNGateway", name).await? {
        let fip = gw
            .pointer("/spec/endpoint/floatingIP")
            .and_then(Value::as_str)
            .unwrap_or("none");
        if !crate::core::addr::same_in_family(fip, &j.floating_ip) {
            out.push(format!(
                "vpngateway/{name} -n {ns} has floating IP {fip}, the journal pins {} (the client's firewall dials it)",
                j.floating_ip
            ));
        }
    }
    let secret = objects::secret(cluster, &j.psk_secret).await?;
    let held = crate::core::psk::held(
        j.psk_fingerprint.as_deref(),
        j.psk_secret_uid.as_deref(),
        ns,
        &j.psk_secret,
        j.psk_key(),
        secret.as_ref(),
    );
    let what = format!("secret/{} -n {ns} (the PSK)", j.psk_secret);
    match held {
        Held::Same { .. } | Held::RecreatedSame { .. } | Held::Unrecorded => {}
        Held::Gone => out.push(format!("{what} is gone")),
        Held::Recreated { then, now } => out.push(format!(
            "{what} was re-created (uid {then} → {now}) and its key cannot be compared with the journal's fingerprint"
        )),
        Held::Changed { .. } => out.push(format!(
            "{what} key {} is not the one the window fingerprinted",
            j.psk_key()
        )),
    }
    Ok(out)
}

/// No IPsecGateway and no journal: say what is there instead (a migrated gateway whose
/// journal was lost, or nothing) and name the local bundle when this machine has one
/// (issue 14 items 7 and 9).
async fn no_old_gateway(
    cluster: &Cluster,
    name: &str,
    e: crate::cluster::KubeError,
    previous: Option<&Journal>,
) -> Error {
    let ns = cluster.namespace.as_str();
    let new = objects::get(cluster, "VPNGateway", name).await;
    // A rolled-back window whose IPsecGateway is gone since: its journal is there, so
    // never "no journal" (a21e 6, 11); the rollback re-creates it from the journal.
    if let Some(j) = previous.filter(|j| j.phase == Phase::RolledBack)
        && let Ok(new) = &new
    {
        let state = j.left(None, new.as_ref());
        if let Some(text) = j.left_text(state) {
            return Error::Stop {
                code: exit::REFUSED,
                message: format!("{text}: nothing to cut over; nothing was changed"),
                hint: Some(if state == journal::Left::Gone {
                    format!(
                        "`vpnmig rollback {name} -n {ns}` re-creates it from the journal (floating IP pinned), then `vpnmig cutover {name} -n {ns}` starts over"
                    )
                } else {
                    format!(
                        "find out who made the VPNGateway (`kubectl get vpngateway {name} -n {ns} --show-managed-fields -o yaml`); `vpnmig verify {name} -n {ns}` checks what it serves"
                    )
                }),
            };
        }
    }
    let lost = crate::state::lost_journal_hint(&cluster.server, ns, name);
    match new {
        Ok(Some(gw)) => Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "{name} -n {ns} is migrated: VPNGateway {name} exists (uid {}) and IPsecGateway {name} does not, but its journal (ConfigMap {}) is gone: nothing to cut over",
                gw.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("?"),
                journal::object_name(name)
            ),
            hint: Some(format!(
                "`vpnmig verify {name} -n {ns}` checks it; to go back, {}",
                lost.unwrap_or_else(|| format!(
                    "roll back from the bundle its cutover wrote: `vpnmig rollback {name} -n {ns} --plan DIR`"
                ))
            )),
        },
        _ => match lost {
            Some(hint) => Error::Stop {
                code: exit::FAILURE,
                message: format!(
                    "{e}, and there is no journal of it (ConfigMap {}): a window may have lost its journal",
                    journal::object_name(name)
                ),
                hint: Some(hint),
            },
            None => Error::Cluster(e),
        },
    }
}

/// The PSK Secret the old gateway references.
fn plan_psk_secret(g: &IPsecGateway) -> String {
    g.spec.auth.psk_secret_ref.name.clone()
}

/// A journal past the delete: go on from its phase with what it recorded (the old
/// gateway is gone: nothing is re-planned).
async fn resume(
    cluster: &Cluster,
    held: Option<&lock::Lock>,
    opts: &CutoverOptions,
    ev: &dyn Emit,
    confirm: &mut impl Confirm,
    j: Journal,
    by: String,
) -> Result<Outcome, Error> {
    let (name, ns) = (j.gateway.clone(), j.namespace.clone());
    if let Some(old) = objects::get(cluster, "IPsecGateway", &name).await? {
        let uid = old.pointer("/metadata/uid").and_then(Value::as_str);
        let deleting = old.pointer("/metadata/deletionTimestamp").is_some();
        if uid == j.old_uid.as_deref() && !deleting && j.phase > Phase::Deleting {
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!(
                    "the journal says ipsecgateway/{name} -n {ns} was deleted (phase {}), but it is still there and not being deleted",
                    j.phase
                ),
                hint: Some(format!(
                    "the journal does not match the cluster (edited?): inspect `kubectl get configmap {} -n {ns} -o yaml`; `vpnmig rollback {name} -n {ns}` keeps the IPsecGateway and closes it",
                    journal::object_name(&name)
                )),
            });
        }
        if uid != j.old_uid.as_deref() && !deleting {
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!(
                    "the journal says ipsecgateway/{name} -n {ns} (uid {}) was deleted at phase {}, but an IPsecGateway of that name exists again (uid {})",
                    j.old_uid.as_deref().unwrap_or("?"),
                    j.phase,
                    uid.unwrap_or("?")
                ),
                hint: Some(format!(
                    "someone re-created it: `vpnmig rollback {name} -n {ns}` settles the journal on it; then plan again"
                )),
            });
        }
    }
    if let Some(dir) = &opts.plan {
        let (saved, _) = bundle::read_saved(dir)?;
        let drift = journal::journal_drift(&saved, &j);
        if !drift.is_empty() {
            ev.emit(Event::Drift(drift));
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!(
                    "the journal of {name} -n {ns} does not match the plan in {}",
                    dir.display()
                ),
                hint: Some(format!(
                    "resume without --plan (the journal is what was started), or inspect `kubectl get configmap {} -n {ns} -o yaml`",
                    journal::object_name(&name)
                )),
            });
        }
    }
    // The guard applies to what remains; past the delete, going on is the way out.
    let guard = match &opts.window_end {
        Some(end) if j.phase.past_delete() => {
            window_guard::not_applied(ev, end, j.phase);
            None
        }
        _ => start_guard(cluster, ev, &name, opts, j.phase).await?,
    };
    ev.emit(Event::Stage(Stage::Confirm));
    confirm
        .confirm(Ask {
            gateway: name.clone(),
            action: "resume the cutover of",
            dry_run: opts.dry_run,
            summary: Summary::Resume {
                context: cluster.context.clone(),
                journal: Box::new(j.clone()),
            },
        })
        .await?;
    if opts.dry_run {
        ev.emit(Event::Info(format!(
            "dry run: nothing was changed; without --dry-run the cutover resumes from phase {}",
            j.phase
        )));
        return Ok(Outcome::DryRun);
    }
    if let Some(g) = &guard {
        g.check(ev, &name, &ns, Moment::Confirmed, false)?;
    }
    let mut w = Window {
        cluster,
        ev,
        journal: j,
        lock: held,
        by,
    };
    phases(&mut w, opts, None, guard.as_ref()).await
}

/// `--forward`: cut the re-created IPsecGateway over to the journal's targets. The saved
/// old manifest stays the original; the object to delete is the re-created one.
async fn forward_again(
    cluster: &Cluster,
    held: Option<&lock::Lock>,
    opts: &CutoverOptions,
    ev: &dyn Emit,
    confirm: &mut impl Confirm,
    mut j: Journal,
    by: String,
) -> Result<Outcome, Error> {
    let (name, ns) = (j.gateway.clone(), j.namespace.clone());
    let Some(live) = objects::get(cluster, "IPsecGateway", &name).await? else {
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!("--forward: there is no ipsecgateway/{name} -n {ns} to cut over"),
            hint: Some(j.phase.recovery(&name, &ns)),
        });
    };
    let gw: IPsecGateway = serde_json::from_value(live.clone()).map_err(|e| Error::Stop {
        code: exit::FAILURE,
        message: format!("ipsecgateway/{name} -n {ns} cannot be read: {e}"),
        hint: None,
    })?;
    // The re-created gateway must be the journal's old manifest, unedited: the targets
    // applied next are the journal's, so an edit (a tunnel added, the floating IP
    // unpinned) would be lost or, worse, let the delete release the address (issue 14
    // items 1 and 2).
    let recorded = j.old_manifest.get("spec").cloned().unwrap_or(Value::Null);
    let differences = scope::differences(&recorded, live.get("spec").unwrap_or(&Value::Null));
    if !differences.is_empty() {
        let drift: Vec<journal::Drift> = differences
            .into_iter()
            .map(|(what, saved, live)| journal::Drift { what, saved, live })
            .collect();
        let differ = drift.len();
        ev.emit(Event::Drift(drift));
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "--forward: ipsecgateway/{name} -n {ns} is not the one the journal recorded ({} field(s) differ, above): its targets would drop the edit; nothing was changed",
                differ
            ),
            hint: Some(format!(
                "undo the edit (the recorded spec is data.old-ipsecgateway.yaml of `kubectl get configmap {} -n {ns} -o yaml`) and run --forward again; or keep the edit: close the journal with `vpnmig rollback {name} -n {ns} --accept-new-addresses`, then plan the edited gateway (`vpnmig plan {name} -n {ns}`) and cut over from that plan",
                journal::object_name(&name)
            )),
        });
    }
    if let Err(why) = scope::gateway_deletable(&live, &j.floating_ip) {
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "--forward: ipsecgateway/{name} -n {ns} cannot be deleted: {why}; nothing was changed"
            ),
            hint: Some(format!(
                "pin it first: {}; then run it again: `{}`",
                scope::pin_command("IPsecGateway", &name, &ns, &j.floating_ip),
                crate::error::again(&[])
            )),
        });
    }
    j.old_uid = gw.metadata.uid.clone();
    j.spec_fingerprint = fingerprint::fingerprint(live.get("spec").unwrap_or(&Value::Null));
    j.fixed_targets = true;
    steps::require_permissions(cluster, "cut over again").await?;
    let guard = start_guard(cluster, ev, &name, opts, Phase::Started).await?;
    ev.emit(Event::Stage(Stage::Confirm));
    confirm
        .confirm(Ask {
            gateway: name.clone(),
            action: "cut over again",
            dry_run: opts.dry_run,
            summary: Summary::Forward {
                context: cluster.context.clone(),
                journal: Box::new(j.clone()),
            },
        })
        .await?;
    if opts.dry_run {
        ev.emit(Event::Info("dry run: nothing was changed".into()));
        return Ok(Outcome::DryRun);
    }
    if let Some(g) = &guard {
        g.check(ev, &name, &ns, Moment::Confirmed, false)?;
    }
    j.advance(Phase::Started, &now(), &by);
    stored::write(cluster, &j, false).await?;
    ev.emit(Event::Recorded { phase: j.phase });
    let mut w = Window {
        cluster,
        ev,
        journal: j,
        lock: held,
        by,
    };
    phases(&mut w, opts, Some(&gw), guard.as_ref()).await
}

/// `--dry-run`: every write sent with dryRun=All, in the order the cutover would.
async fn dry_run(
    cluster: &Cluster,
    ev: &dyn Emit,
    j: &Journal,
    secret: &Option<Value>,
    detach: Option<(Vec<Value>, Vec<Value>)>,
    opts: &CutoverOptions,
) -> Result<Outcome, Error> {
    let skip = &opts.skip_dry_run_webhooks;
    let name = j.gateway.as_str();
    if let Some((h, since)) = lock::holder(cluster, name).await? {
        ev.emit(Event::Note(format!(
            "the lock of {name} is held by {h} since {since}: a real run would be refused"
        )));
    }
    stored::write(cluster, j, true).await?;
    ev.emit(Event::Step(format!(
        "dry run: journal ConfigMap {} admitted",
        journal::object_name(name)
    )));
    if let (Some(s), Some((removed, kept))) = (secret, detach) {
        let rv = s
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        objects::set_owner_references(cluster, &j.psk_secret, rv, &kept, true).await?;
        ev.emit(Event::Step(format!(
            "dry run: PSK Secret {} would be detached ({} ownerReference(s) removed)",
            j.psk_secret,
            removed.len()
        )));
    }
    let mut skipped = Vec::new();
    for t in &j.targets {
        match objects::apply(cluster, t, true).await {
            Ok(_) => {}
            Err(e) => match skippable(&e, skip) {
                Some(w) => skipped.push((target_label(t), w)),
                None => return Err(e.into()),
            },
        }
    }
    for (label, w) in &skipped {
        ev.emit(Event::Warning(format!(
            "dry run: {label} not validated by admission webhook {w}, which cannot dry-run (--skip-dry-run-webhook {w})"
        )));
    }
    ev.emit(Event::Step(format!(
        "dry run: {} target(s) admitted by server-side apply",
        j.targets.len() - skipped.len()
    )));
    delete::delete(
        cluster,
        Target::OldGateway {
            fip: &j.floating_ip,
        },
        name,
        |o| scope::same_as_recorded(o, j.old_uid.as_deref(), &j.spec_fingerprint),
        true,
    )
    .await?;
    ev.emit(Event::Step(format!(
        "dry run: delete of IPsecGateway {name} admitted"
    )));
    // What the real run checks right before its delete: every tunnel up.
    if let Ok(Ok(sas)) = fetch::sas(cluster, name).await {
        let b = Baseline::from_sas(&sas, &now(), "");
        let expected = j.expected_peers();
        let down: Vec<&str> = b.down(&expected).iter().map(|p| p.name.as_str()).collect();
        if !down.is_empty() {
            let then = if opts.allow_tunnels_down {
                "a real run would go on (--allow-tunnels-down) and not compare it after the window"
            } else {
                "a real run would stop right before the delete, nothing deleted, unless --allow-tunnels-down"
            };
            ev.emit(Event::Warning(format!(
                "dry run: {} of the {} tunnel(s) of IPsecGateway {name} are down now ({}): {then}",
                down.len(),
                expected.len(),
                down.join(", ")
            )));
        }
    }
    ev.emit(Event::Info("dry run: nothing was changed".into()));
    Ok(Outcome::DryRun)
}

/// The steps from the journal's phase to `Done`.
async fn phases(
    w: &mut Window<'_>,
    opts: &CutoverOptions,
    old: Option<&IPsecGateway>,
    guard: Option<&Guard>,
) -> Result<Outcome, Error> {
    match forward(w, opts, old, guard).await {
        Ok(Outcome::Done) => {
            // Done: hand the gateway back to its GitOps owner (issue 11 item 2).
            super::gitops::restore(w, "IPsecGateway", opts.gitops.resume).await?;
            Ok(Outcome::Done)
        }
        Ok(code) => Ok(code),
        // Another run holds the lock now: it decides; no advice that would fight it.
        // (A lock that could not be checked for want of an answer is an outage like any
        // other: it gets the advice below.)
        Err(
            e @ Error::Lock(
                crate::cluster::lock::LockError::Lost { .. }
                | crate::cluster::lock::LockError::Held { .. },
            ),
        ) => Err(e),
        Err(e) if w.journal.phase.past_delete() => {
            let message = crate::error::error_line(&e);
            w.record_error(&message).await;
            let (name, ns) = (w.name().to_string(), w.ns().to_string());
            // Only a verdict about the new gateway is a reason to roll back: an API
            // server that did not answer says nothing about it, and rolling back a
            // working gateway is an outage and may lose its addresses (issue 9 item 0).
            let no_answer = matches!(&e, Error::Cluster(k) if k.no_answer());
            if opts.rollback_on_failure && no_answer {
                w.ev.emit(Event::Warning(
                    "--rollback-on-failure: not rolling back, the API server did not answer, which says nothing about the new gateway".into(),
                ));
            }
            if opts.rollback_on_failure && !no_answer {
                w.ev.emit(Event::RollingBack {
                    phase: w.journal.phase,
                });
                w.journal.cutover_failure =
                    Some(format!("at phase {}: {message}", w.journal.phase));
                let t = super::rollback::roll_back(
                    w,
                    &opts.timeouts,
                    super::Choices {
                        initiate: opts.initiate,
                        ..Default::default()
                    },
                )
                .await?;
                super::gitops::restore(w, "VPNGateway", false).await?;
                w.ev.emit(Event::Finished {
                    operation: Operation::Rollback,
                    journal: Box::new(w.journal.clone()),
                    verify: t.rows,
                });
                return Err(Error::Stop {
                    code: e.exit_code(),
                    message: format!("the cutover of {name} -n {ns} failed and was rolled back"),
                    hint: Some(format!(
                        "the failure is above and in the journal (lastError); `vpnmig verify {name} -n {ns}` checks the restored gateway"
                    )),
                });
            }
            // The advice follows what the cluster shows, not the phase: an IPsecGateway
            // that exists again (re-created by someone) is not "deleted".
            // One being deleted counts when it is not the journal's own (still unwinding
            // at `deleting`): a re-created one holds the floating IP until it is gone.
            let old_back = match objects::get(w.cluster, "IPsecGateway", &name).await {
                Ok(Some(o))
                    if o.pointer("/metadata/deletionTimestamp").is_none()
                        || o.pointer("/metadata/uid").and_then(Value::as_str)
                            != w.journal.old_uid.as_deref() =>
                {
                    Some(o)
                }
                _ => None,
            };
            // A VPNGateway the window applied and someone deleted: resuming would wait
            // for a gateway that is not there; going back is the way (issue 11 item 3).
            let new_gone = w.journal.phase >= Phase::Applied
                && !steps::targets_intact(w.cluster, &w.journal.targets).await;
            if let Some(obj) = &old_back {
                return Err(old_back_stop(w, obj, &message).await);
            }
            let hint = if new_gone {
                e.hint().unwrap_or_else(|| format!(
                    "the VPNGateway or a VPNPeer is not as the window applied it: `vpnmig rollback {name} -n {ns}` restores the IPsecGateway from the journal"
                ))
            } else if w.journal.phase == Phase::Deleting {
                format!(
                    "the IPsecGateway's delete was sent and its unwind has not finished{}. Going on (`vpnmig cutover {name} -n {ns}`) and going back (`vpnmig rollback {name} -n {ns}`) both wait for that unwind first; going on keeps the choice open",
                    e.hint().map(|h| format!(" ({h})")).unwrap_or_default()
                )
            } else {
                format!(
                    "the IPsecGateway is deleted; restore it with `vpnmig rollback {name} -n {ns}`, or fix the cause and resume with `vpnmig cutover {name} -n {ns}`{}",
                    e.hint().map(|h| format!(" ({h})")).unwrap_or_default()
                )
            };
            Err(Error::Stop {
                code: e.exit_code(),
                message: format!(
                    "cutover of {name} -n {ns} stopped at phase {}: {message}",
                    w.journal.phase
                ),
                hint: Some(hint),
            })
        }
        Err(e) => Err(e),
    }
}

async fn forward(
    w: &mut Window<'_>,
    opts: &CutoverOptions,
    old: Option<&IPsecGateway>,
    guard: Option<&Guard>,
) -> Result<Outcome, Error> {
    let t = &opts.timeouts;
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let cluster = w.cluster;

    // Before anything of the gateway changes: suspend its GitOps owners (issue 11).
    if w.journal.phase < Phase::Done {
        super::gitops::pause(w, "cutover").await?;
    }

    // Step e: the PSK Secret must not go with the old gateway.
    if w.journal.phase < Phase::PskDetached {
        w.ev.emit(Event::Stage(Stage::PskDetach));
        if let Some(gw) = old {
            w.detach_psk(&journal::Owners::of_old(gw), "the old gateway")
                .await?;
        }
        w.save(Phase::PskDetached).await?;
    }

    // Steps f and g: dry run; then, checked again right before it, the delete (the phase
    // is recorded before it is sent, the delete is of the very version checked).
    if w.journal.phase < Phase::Deleting {
        w.ev.emit(Event::Stage(Stage::DryRun));
        pre_delete_dry_run(w, opts).await?;
        // The window guard once more, right before the outage begins.
        if let Some(g) = guard {
            let moment = Moment::BeforeDelete {
                phase: w.journal.phase,
            };
            if let Err(e) = g.check(w.ev, &name, &ns, moment, false) {
                w.record_error(&crate::error::error_line(&e)).await;
                return Err(e);
            }
        }
        w.ev.emit(Event::Stage(Stage::Delete));
        let gw = recheck(w).await?;
        if gw.is_some() {
            record_baseline(w, opts.allow_tunnels_down).await?;
        }
        // The GitOps owners once more, as the cluster shows them, right before the
        // outage begins: a suspension that did not hold stops here, nothing deleted.
        super::gitops::held(w, "cutover", std::time::Duration::ZERO).await?;
        w.save(Phase::Deleting).await?;
        if gw.is_some() {
            delete_checked(w).await?;
        }
    } else if w.journal.phase == Phase::Deleting {
        w.ev.emit(Event::Stage(Stage::Delete));
        // Stopped between recording the phase and the delete landing: send it (again; a
        // gateway already being deleted is left to its unwind).
        delete_checked(w).await?;
    }
    if w.journal.phase < Phase::Deleted {
        let title = format!("delete IPsecGateway {ns}/{name}");
        // While the old gateway unwinds, nothing may make it the PSK Secret's owner again.
        let gw = match old.cloned() {
            Some(g) => Some(g),
            None => objects::get(cluster, "IPsecGateway", &name)
                .await?
                .and_then(|v| serde_json::from_value::<IPsecGateway>(v).ok()),
        };
        let old_uid = w.journal.old_uid.clone();
        let names = std::slice::from_ref(&name);
        let wait = async {
            match &old_uid {
                Some(uid) => {
                    steps::wait_uid_gone(
                        cluster,
                        w.ev,
                        "IPsecGateway",
                        &name,
                        uid,
                        t.delete,
                        &title,
                    )
                    .await
                }
                None => {
                    steps::wait_gone(cluster, w.ev, "IPsecGateway", names, t.delete, &title).await
                }
            }
        };
        let outcome = match &gw {
            Some(gw) => w.guarded(&journal::Owners::of_old(gw), wait).await?,
            None => wait.await?,
        };
        if let Err(diagnosis) = outcome {
            return Err(timed_out(
                &format!("ipsecgateway/{name} -n {ns} to be deleted"),
                t.delete,
                &diagnosis,
                Some("the operator's finalizer unwind has not finished: look at the operator's logs; the finalizer is the operator's to remove".into()),
            ));
        }
        steps::check_psk(w).await?;
        w.save(Phase::Deleted).await?;
    }

    // Step h: the apply, only while no IPsecGateway of that name exists (read again right
    // before it), and outside the watches below, so that a stop never cuts it in half:
    // the journal says `applied` once it is (issue 21 item 3).
    if w.journal.phase < Phase::Applied {
        w.ev.emit(Event::Stage(Stage::Apply));
        old_still_gone(w).await?;
        // The GitOps owners once more, right before the apply: one re-armed during the
        // delete (a parent's sync) would re-create the old gateway beside the new one.
        super::gitops::held(w, "cutover", std::time::Duration::ZERO).await?;
        w.check_lock().await?;
        let mut uids = Vec::new();
        for target in &w.journal.targets {
            match objects::apply(cluster, target, false).await {
                Ok(uid) => uids.push(uid),
                Err(e) if !uids.is_empty() => {
                    let applied: Vec<String> = w.journal.targets[..uids.len()]
                        .iter()
                        .map(target_label)
                        .collect();
                    let e = Error::from(e);
                    return Err(Error::Stop {
                        code: e.exit_code(),
                        message: format!(
                            "{} (already applied by this run: {}; the journal still says deleted)",
                            crate::error::error_line(&e),
                            applied.join(", ")
                        ),
                        hint: e.hint(),
                    });
                }
                Err(e) => return Err(e.into()),
            }
        }
        w.journal.target_uids = uids;
        w.ev.emit(Event::Step(format!(
            "applied {} (server-side apply, field manager {})",
            w.journal
                .target_names()
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            stored::FIELD_MANAGER
        )));
        w.save(Phase::Applied).await?;
    }

    // From here the old gateway is gone: if anything re-creates it, every wait below
    // stops at once (issue 9 item 3).
    let targets = w.journal.targets.clone();
    // Boxed: the steps after the delete are a large future, and the sentinels around it
    // would otherwise sit on the caller's stack with it (a debug build's wave of them).
    steps::unless_interfered(cluster, &name, &targets, Box::pin(after_delete(w, opts))).await
}

/// The stop of a window past the delete while an IPsecGateway of its name exists again
/// (issue 21 item 3): where it stands (nothing new applied, or each object applied and
/// live beside it), who re-created it when an owner still acts (ignoring its suspension,
/// re-enabled), and only then the ways out, which would fight that owner until it stops.
async fn old_back_stop(w: &Window<'_>, obj: &Value, message: &str) -> Error {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let applied = w.journal.phase >= Phase::Applied;
    let objs = w
        .journal
        .target_names()
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let acting = super::gitops::still_acting(w, obj).await.ok().flatten();
    let cause = acting
        .as_ref()
        .map(|(why, _)| format!("; {why}"))
        .unwrap_or_default();
    let first = match &acting {
        Some((_, first)) => format!(
            "{first}; until then a rollback or a resume fights it (each delete undone, the floating IP contended). Then: "
        ),
        // No owner acts now: who wrote it, from its managedFields.
        None => match crate::core::gitops::writer(obj) {
            Some(who)
                if ["Application", "Kustomization", "HelmRelease"]
                    .iter()
                    .any(|k| crate::core::gitops::written_by(k, obj)) =>
            {
                format!(
                    "make sure nothing syncs it first: it was written by {who} (`vpnmig status -n {ns} -o wide` shows its MANAGED-BY). Then: "
                )
            }
            Some(who) => format!(
                "find who created it ({who}) and make sure they do not again, and that nothing syncs it (`vpnmig status -n {ns} -o wide` shows its MANAGED-BY). Then: "
            ),
            None => format!(
                "make sure nothing syncs it first (`vpnmig status -n {ns} -o wide` shows its MANAGED-BY). Then: "
            ),
        },
    };
    let delete = format!("`kubectl delete ipsecgateway {name} -n {ns}`");
    let (message, ways) = if applied {
        (
            format!(
                "cutover of {name} -n {ns} stopped at phase {} with both kinds live: {message}{cause}; this window applied {objs}, which are live beside it",
                w.journal.phase
            ),
            format!(
                "{objs} (applied by this window) contend with it for the floating IP {}: `vpnmig rollback {name} -n {ns}` deletes them and keeps the re-created IPsecGateway (its addresses are then checked), or delete the re-created IPsecGateway ({delete}) and `vpnmig cutover {name} -n {ns}` resumes the waits",
                w.journal.floating_ip
            ),
        )
    } else {
        (
            format!(
                "cutover of {name} -n {ns} stopped after the delete, before the apply (journal phase {}; nothing new was applied): {message}{cause}",
                w.journal.phase
            ),
            format!(
                "`vpnmig rollback {name} -n {ns}` keeps the re-created IPsecGateway and closes the journal (its addresses are checked: a re-created one may get another serviceCIDR), or delete it ({delete}) and `vpnmig cutover {name} -n {ns}` resumes with the apply"
            ),
        )
    };
    Error::Stop {
        code: exit::FAILURE,
        message,
        hint: Some(format!("{first}{ways}")),
    }
}

/// After the delete finished, no IPsecGateway of the gateway's name may exist: one that
/// does was re-created (a new uid; a GitOps self-heal, a person) and holds the floating IP,
/// so nothing new is applied and no wait begins (issue 21 item 3). The stop's advice is
/// [`phases`]'s (it reads the cluster: what was applied, who acts).
async fn old_still_gone(w: &Window<'_>) -> Result<(), Error> {
    let name = w.name().to_string();
    match objects::get(w.cluster, "IPsecGateway", &name).await? {
        None => Ok(()),
        Some(obj) => Err(steps::recreated(
            w.cluster,
            "IPsecGateway",
            &name,
            "cutover",
            &obj,
        )),
    }
}

/// `Kind/name` of a target manifest.
fn target_label(t: &Value) -> String {
    format!(
        "{}/{}",
        t["kind"].as_str().unwrap_or("?"),
        t.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("?")
    )
}

/// The webhook of a dry-run refusal by a webhook that cannot dry-run, when
/// `--skip-dry-run-webhook` names it.
fn skippable(e: &crate::cluster::KubeError, skip: &[String]) -> Option<String> {
    let crate::cluster::KubeError::Api {
        answer: kube::Error::Api(s),
        ..
    } = e
    else {
        return None;
    };
    live::webhook_without_dry_run(&s.message).filter(|w| skip.contains(w))
}

/// The refusal of a cutover that meets webhooks that cannot dry-run and are not skipped.
fn webhooks_refused(
    name: &str,
    ns: &str,
    webhooks: &[String],
    changed: &str,
    opts: &CutoverOptions,
) -> Error {
    let mut all = opts.skip_dry_run_webhooks.clone();
    all.extend(webhooks.iter().cloned());
    Error::Stop {
        code: exit::REFUSED,
        message: format!(
            "admission webhook{} {} cannot dry-run (sideEffects Some or Unknown): the pre-delete server-side dry run cannot validate the targets, and the real apply, after the IPsecGateway is deleted, may be refused; {changed}",
            if webhooks.len() == 1 { "" } else { "s" },
            webhooks.join(", "),
        ),
        hint: Some(format!(
            "to go on and let the real apply be the webhook's check: `vpnmig cutover {name} -n {ns} {}`",
            live::skip_flags(&all)
        )),
    }
}

/// Step f: the server-side dry run of every target right before the delete. A refusal
/// stops the window before anything is deleted; a webhook that cannot dry-run is
/// skipped only when `--skip-dry-run-webhook` names it.
async fn pre_delete_dry_run(w: &mut Window<'_>, opts: &CutoverOptions) -> Result<(), Error> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let mut skipped = Vec::new();
    let mut unskipped = Vec::new();
    for target in &w.journal.targets {
        match objects::apply(w.cluster, target, true).await {
            Ok(_) => {}
            Err(e) => {
                if let Some(webhook) = skippable(&e, &opts.skip_dry_run_webhooks) {
                    skipped.push((target_label(target), webhook));
                    continue;
                }
                let cannot = match &e {
                    crate::cluster::KubeError::Api {
                        answer: kube::Error::Api(s),
                        ..
                    } => live::webhook_without_dry_run(&s.message),
                    _ => None,
                };
                if let Some(webhook) = cannot {
                    unskipped.push(webhook);
                    continue;
                }
                let refused = matches!(&e, crate::cluster::KubeError::Api { answer: kube::Error::Api(s), .. } if s.code < 500);
                let message = format!(
                    "the pre-delete server-side dry run of {} failed: {e}",
                    target_label(target)
                );
                w.record_error(&message).await;
                return Err(Error::Stop {
                    code: if refused {
                        exit::BLOCKED
                    } else {
                        exit::FAILURE
                    },
                    message: format!(
                        "{message}; nothing was deleted (journal phase {})",
                        w.journal.phase
                    ),
                    hint: Some(if refused {
                        format!(
                            "the API server refuses the target as it stands: fix the cause; {}",
                            w.journal.phase.recovery(&name, &ns)
                        )
                    } else {
                        format!(
                            "{}{}",
                            e.hint().map(|h| format!("{h}; ")).unwrap_or_default(),
                            w.journal.phase.recovery(&name, &ns)
                        )
                    }),
                });
            }
        }
    }
    let unskipped = live::unskipped_webhooks(unskipped.iter().map(String::as_str), &[]);
    if !unskipped.is_empty() {
        let err = webhooks_refused(
            &name,
            &ns,
            &unskipped,
            &format!("nothing was deleted (journal phase {})", w.journal.phase),
            opts,
        );
        w.record_error(&crate::error::error_line(&err)).await;
        return Err(err);
    }
    for (label, webhook) in &skipped {
        w.ev.emit(Event::Warning(format!(
            "server-side dry run: {label} not validated by admission webhook {webhook}, which cannot dry-run (skipped: --skip-dry-run-webhook {webhook}); the real apply is its check"
        )));
    }
    w.ev.emit(Event::Step(format!(
        "server-side dry run: {} target(s) admitted",
        w.journal.targets.len() - skipped.len()
    )));
    Ok(())
}

/// Steps h and i: apply, wait for each condition in turn, verify the tunnels.
async fn after_delete(w: &mut Window<'_>, opts: &CutoverOptions) -> Result<Outcome, Error> {
    let t = &opts.timeouts;
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let cluster = w.cluster;
    // Step h (applied before the watches began): wait for each condition in turn.
    let me = [name.clone()];
    if w.journal.phase < Phase::Attached {
        // Read once more before the floating-IP wait: a re-created IPsecGateway takes the
        // floating IP, and the wait would only ever see AlreadyAssociated.
        old_still_gone(w).await?;
        w.ev.emit(Event::Stage(Stage::Attach));
        let title = format!(
            "VPNGateway {ns}/{name} FIPAttached (floating IP {})",
            w.journal.floating_ip
        );
        if let Err(d) = steps::wait_conditions(
            cluster,
            w.ev,
            "VPNGateway",
            &me,
            &["FIPAttached"],
            t.attach,
            &title,
        )
        .await?
        {
            return Err(timed_out(&format!("vpngateway/{name} -n {ns} FIPAttached"), t.attach, &d, Some(
                "AlreadyAssociated means the floating IP is still on another port: find it with `openstack floating ip show`".into())));
        }
        w.save(Phase::Attached).await?;
    }
    if w.journal.phase < Phase::Ready {
        w.ev.emit(Event::Stage(Stage::Ready));
        let title = format!("VPNGateway {ns}/{name} Ready");
        if let Err(d) = steps::wait_conditions(
            cluster,
            w.ev,
            "VPNGateway",
            &me,
            &["Ready"],
            t.attach,
            &title,
        )
        .await?
        {
            return Err(timed_out(
                &format!("vpngateway/{name} -n {ns} Ready"),
                t.attach,
                &d,
                None,
            ));
        }
        let peers = w.journal.peer_names();
        let title = format!("VPNPeer {} Authorized", peers.join(", "));
        if let Err(d) = steps::wait_conditions(
            cluster,
            w.ev,
            "VPNPeer",
            &peers,
            &["Authorized"],
            t.attach,
            &title,
        )
        .await?
        {
            return Err(timed_out("every VPNPeer Authorized", t.attach, &d, Some(
                "a grant naming an unknown exposure leaves a peer Authorized=False: compare the authorization block with the gateway's exposures".into())));
        }
        w.save(Phase::Ready).await?;
    }
    w.ev.emit(Event::Stage(Stage::Tunnels));
    let initiations = if opts.initiate {
        steps::initiate(cluster, w.ev, &name, w.journal.data_plane_baseline.as_ref()).await?
    } else {
        Vec::new()
    };
    let expect = steps::Expect {
        kind: "VPNGateway",
        service_cidr: None,
        virtual_ips: Vec::new(),
        reference: w.journal.targets.clone(),
    };
    let tunnels = steps::wait_tunnels(cluster, w.ev, &name, t.tunnel, &expect).await?;
    if let Some(d) = &tunnels.timed_out {
        return Err(timed_out(&format!("the tunnels of {name} -n {ns}"), t.tunnel, d, Some(
            "the client's peer re-initiates on its own DPD/retry timer; a PSK or proposal mismatch shows in the client's logs".into())));
    }
    w.journal.outage_ms = steps::between(w.delete_sent(), tunnels.first_up);
    w.journal.outage = Some(outage(&w.journal, &tunnels, &initiations, opts.initiate));
    compare_data_plane(w).await?;
    w.save(Phase::Done).await?;
    w.ev.emit(Event::Finished {
        operation: Operation::Cutover,
        journal: Box::new(w.journal.clone()),
        verify: tunnels.rows,
    });
    Ok(Outcome::Done)
}

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
async fn record_baseline(w: &mut Window<'_>, allow_down: bool) -> Result<(), Error> {
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
                        hint: Some(format!(
                            "bring the tunnel up first (the client's side, or `kubectl exec -n {ns} POD -c strongswan -- swanctl --initiate --child NAME` in the gateway's pod; `vpnmig verify {name} -n {ns}` shows each tunnel), then run the same command again; `vpnmig rollback {name} -n {ns}` closes the journal (the IPsecGateway stays); or, to cut over with the tunnel down, `{}`",
                            crate::error::again_without("", &["--allow-tunnels-down"])
                        )),
                    };
                    w.record_error(&crate::error::error_line(&e)).await;
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
fn outage(
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
async fn compare_data_plane(w: &mut Window<'_>) -> Result<(), Error> {
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
            hint: Some(format!(
                "the client's side sees the change: correct the VPNPeer/VPNGateway (the journal's targets) and resume with `vpnmig cutover {name} -n {ns}`, or go back with `vpnmig rollback {name} -n {ns}`; the table is in the journal (dataPlane)"
            )),
        });
    }
    Ok(())
}

/// Right before the delete: the IPsecGateway must still be the object and the spec the
/// journal was written from (an edit while the prompt was open or since an interrupted
/// run is refused, nothing deleted), and its PSK Secret must not be owned by it again.
/// `None` when it is gone or already being deleted.
async fn recheck(w: &mut Window<'_>) -> Result<Option<(IPsecGateway, String)>, Error> {
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
            hint: Some(format!(
                "nothing was deleted: `vpnmig rollback {name} -n {ns}` closes the journal (the gateway stays), then plan again and review: `vpnmig plan {name} -n {ns}`"
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
async fn delete_checked(w: &mut Window<'_>) -> Result<(), Error> {
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
            crate::error::error_line(&e)
        ),
        hint: Some(match hint {
            Some(h) => format!(
                "{h}; then `vpnmig cutover {name} -n {ns}` resumes (journal phase psk-detached)"
            ),
            None => format!(
                "once the cause is fixed, `vpnmig cutover {name} -n {ns}` resumes (journal phase psk-detached); `vpnmig rollback {name} -n {ns}` closes the journal and keeps the IPsecGateway"
            ),
        }),
    })
}
