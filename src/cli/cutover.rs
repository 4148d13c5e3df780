//! `vpnmig cutover NAME`: the maintenance window (runbook steps 2 and 3). Every step is
//! checked before and waited for after, recorded in the journal, and idempotent, so a
//! run that stops anywhere is resumed by running the command again (DESIGN.md §4).

use std::path::PathBuf;

use serde_json::Value;

use crate::bundle;
use crate::cli::Error;
use crate::cli::cluster_args::ClusterArgs;
use crate::cli::window::{self, Timeouts, Window, confirm, now, timed_out};
use crate::cluster::delete::{self, Target};
use crate::cluster::{Cluster, journal as stored, lock, objects};
use crate::core::journal::{self, Journal, Phase};
use crate::core::model::IPsecGateway;
use crate::core::{live, plan, scope};
use crate::exit;
use crate::output::window as render;

/// Cut a gateway over: delete the IPsecGateway, apply its VPNGateway and VPNPeers.
///
/// In order, each step proven before the next: take the gateway's lock (a Lease); plan
/// live again (with --plan DIR, the gateway must still match that plan); refuse on any
/// blocker; show what will be deleted and created and the pinned values, and ask you to
/// type the gateway's name; write the journal (a ConfigMap `vpnmig-NAME` with the old
/// manifest and the targets) and the local bundle; detach the PSK Secret if the old
/// gateway owns it; have the API server dry-run the targets; delete the IPsecGateway
/// and wait until it is gone (its finalizers shown); apply the targets (server-side
/// apply, field manager vpnmig); wait for FIPAttached, Ready, every peer Authorized and
/// the tunnels ESTABLISHED; print the verify report and the outage.
///
/// Interrupted (Ctrl-C, a lost connection, a dead laptop): run it again, from any machine,
/// to resume from the recorded phase, or run `vpnmig rollback NAME`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  vpnmig plan acme -n tenant-acme --out plans/acme          # before the window: review
  vpnmig cutover acme -n tenant-acme --plan plans/acme      # at the window
  vpnmig cutover acme -n tenant-acme --plan plans/acme --dry-run
  vpnmig cutover acme -n tenant-acme --yes --rollback-on-failure -o json

Exit codes: 0 done, 1 failure (an API error; the message says the phase and what to run),
4 blocked by a check, 6 a wait timed out, 7 refused (lock held, drift, no --yes without
a terminal, confirmation mismatch), 130 interrupted.")]
pub struct CutoverArgs {
    /// kubectl's cluster flags, from the top-level command (global).
    #[arg(skip)]
    pub cluster: ClusterArgs,
    /// The IPsecGateway to cut over (namespace: -n, else the context's).
    #[arg(value_name = "NAME", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub name: String,

    /// The bundle `vpnmig plan NAME --out DIR` wrote and you reviewed: the live gateway
    /// must still match it (uid, generation, spec fingerprint, targets), else nothing is done.
    #[arg(long, value_name = "DIR")]
    pub plan: Option<PathBuf>,

    /// Where the local copy of the bundle is written before anything changes (default:
    /// --plan DIR, else the state directory: $XDG_STATE_HOME/vpnmig/windows/NAMESPACE/NAME-UID8,
    /// UID8 the start of the gateway's uid; the summary says where).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Do not ask for the gateway's name (needed without a terminal).
    #[arg(short = 'y', long)]
    pub yes: bool,

    /// Do every read, check, server-side dry run and the prompt; change nothing (no lock,
    /// no journal, no bundle).
    #[arg(long)]
    pub dry_run: bool,

    /// Take the gateway's lock even though another run holds it. Only when that run is
    /// surely gone.
    #[arg(long)]
    pub break_lock: bool,

    /// If a step after the delete fails or times out, roll back at once instead of
    /// printing the rollback command.
    #[arg(long)]
    pub rollback_on_failure: bool,

    /// After a rollback that could not give the re-created IPsecGateway its old addresses
    /// (journal phase old-applied), cut over again with the journal's targets, which pin
    /// them, instead of planning the re-created gateway (whose status has the new ones).
    #[arg(long)]
    pub forward: bool,

    #[command(flatten)]
    pub timeouts: Timeouts,

    /// Replace the built-in proposal allowlist with the operator's.
    #[arg(long, value_name = "FILE")]
    pub allowlist: Option<PathBuf>,

    /// Name the VPNPeer of tunnel TUNNEL NAME (repeatable), as `plan --peer-name` did;
    /// with --plan DIR the bundle's choice is used unless this is given.
    #[arg(long = "peer-name", value_name = "TUNNEL=NAME", value_parser = crate::cli::plan::parse_peer_name)]
    pub peer_names: Vec<(String, String)>,

    /// Go on although admission webhook NAME cannot dry-run (its sideEffects are Some or
    /// Unknown), so it validates the targets only in the real apply after the delete
    /// (repeatable; every such webhook must be named).
    #[arg(long = "skip-dry-run-webhook", value_name = "NAME")]
    pub skip_dry_run_webhooks: Vec<String>,

    /// Output format of the final report (progress always goes to stderr).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = render::Format::Text)]
    pub output: render::Format,
}

pub fn run(args: &CutoverArgs) -> Result<i32, Error> {
    window::run(
        &args.cluster,
        &args.name,
        args.dry_run,
        args.break_lock,
        true,
        if args.forward {
            "cut over again"
        } else {
            "cut over"
        },
        async |cluster, held| cutover(cluster, held, args).await,
    )
}

async fn cutover(
    cluster: &Cluster,
    held: Option<&lock::Lock>,
    args: &CutoverArgs,
) -> Result<i32, Error> {
    let name = args.name.as_str();
    let ns = cluster.namespace.clone();
    let by = window::identity(held);
    let previous = stored::read(cluster, name).await?;
    match &previous {
        Some(j)
            if j.phase == Phase::Done
                && objects::get(cluster, "VPNGateway", name).await?.is_none() =>
        {
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!(
                    "the journal says the cutover of {ns}/{name} is done, but VPNGateway {name} does not exist (deleted since?)"
                ),
                hint: Some(format!(
                    "`vpnmig rollback {name} -n {ns}` restores the IPsecGateway from the journal; `vpnmig status` shows what is there"
                )),
            });
        }
        Some(j) if j.phase == Phase::Done => {
            anstream::eprintln!(
                "the cutover of {ns}/{name} is already done (journal ConfigMap {ns}/{}, {}): nothing to do",
                journal::object_name(name),
                j.history.last().map(|e| e.at.as_str()).unwrap_or("?")
            );
            anstream::eprintln!("{}", Phase::Done.recovery(name, &ns));
            return Ok(exit::OK);
        }
        Some(j) if j.phase == Phase::OldApplied && args.forward => {
            return forward_again(cluster, held, args, j.clone(), by).await;
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
                    "a rollback of {ns}/{name} is under way (journal phase {}{}): a cutover now would fight it",
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
            return resume(cluster, held, args, j.clone(), by).await;
        }
        _ => {}
    }

    let allowlist = crate::cli::plan::allowlist(args.allowlist.as_ref())?;
    // The plan's own server-side dry run (facts) is the first one; another follows right
    // before the delete.
    // The peer names chosen at plan time (`plan --peer-name`) come with the bundle
    // unless the flag names them here.
    let mut chosen = args.peer_names.clone();
    if let Some(dir) = &args.plan
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
        match crate::cli::plan::live_plan(cluster, name, &allowlist, true, &chosen).await {
            Err(Error::Cluster(e @ crate::cluster::KubeError::NotFound { .. })) => {
                return Err(no_old_gateway(cluster, name, e).await);
            }
            other => other?,
        };
    if let Some(dir) = &args.plan {
        let (saved, _) = bundle::read_saved(dir)?;
        let drift = journal::drift(&saved, &plan);
        if !drift.is_empty() {
            anstream::eprint!("{}", render::drift(&drift));
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!(
                    "the live IPsecGateway {ns}/{name} no longer matches the plan in {}: nothing was changed",
                    dir.display()
                ),
                hint: Some(format!(
                    "plan again (`vpnmig plan {name} -n {ns} --out {} --force`: --force because the bundle records the old state), review the diff, then cut over",
                    dir.display()
                )),
            });
        }
    }
    let blocking = render::blockers(&plan);
    if !blocking.is_empty() {
        anstream::eprint!("{}", blocking.join(""));
        return Err(Error::Stop {
            code: exit::BLOCKED,
            message: format!("{} blocker(s): nothing was changed", blocking.len()),
            hint: Some(format!(
                "`vpnmig plan {name} -n {ns}` shows every check and its fix"
            )),
        });
    }
    // The plan's dry run found webhooks that cannot dry-run: one verdict with the plan's
    // warning, decided before anything changes (issue 9 item 8).
    let unskipped =
        live::unskipped_webhooks(live::webhooks_in_plan(&plan), &args.skip_dry_run_webhooks);
    if !unskipped.is_empty() {
        return Err(webhooks_refused(
            name,
            &ns,
            &unskipped,
            "nothing was changed",
            args,
        ));
    }
    let secret = objects::secret(cluster, &plan_psk_secret(&source.gateway)).await?;
    let detach = secret
        .as_ref()
        .map(|s| journal::detach_owners(s, &source.gateway))
        .filter(|(removed, _)| !removed.is_empty());
    let out_dir = args
        .out
        .clone()
        .or_else(|| args.plan.clone())
        .unwrap_or_else(|| crate::state::bundle_dir(&ns, name, plan.source.uid.as_deref()));
    // Every local path before the prompt (issue 10 item 3).
    if !args.dry_run {
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
    anstream::eprint!(
        "{}",
        render::cutover_summary(
            &cluster.context,
            &plan,
            detach.as_ref().map(|d| d.0.len()),
            &out_dir,
            &args.timeouts.waits()
        )
    );
    confirm(name, args.yes, args.dry_run, "cut over").await?;

    let old_manifest = plan::clean_old_manifest(&source.raw);
    let fip = source
        .gateway
        .spec
        .endpoint
        .pinned_fip()
        .unwrap_or_default()
        .to_string();
    let mut j = Journal::new(&plan, old_manifest.clone(), fip, &now(), &by);
    j.psk_secret_uid = secret
        .as_ref()
        .and_then(|s| s.pointer("/metadata/uid"))
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(prev) = previous.as_ref().filter(|p| p.phase != Phase::RolledBack) {
        // Resuming before the delete: keep what the first run detached.
        j.psk_detached = prev.psk_detached.clone();
    }

    if args.dry_run {
        return dry_run(cluster, &j, &secret, detach, &args.skip_dry_run_webhooks).await;
    }

    // Step d: the journal, locally and in the cluster, before anything is touched.
    let prev_bundle = bundle::read_previous(&out_dir)?;
    bundle::guard(&out_dir, &plan, &prev_bundle, false)?;
    bundle::write(&out_dir, &plan, &old_manifest)?;
    // Where the bundle is, for the day the journal is lost (issue 14 item 7).
    if let Err(why) = crate::state::remember(&cluster.server, &ns, name, &out_dir, &now()) {
        anstream::eprintln!("note: this machine cannot remember where the bundle is ({why})");
    }
    stored::write(cluster, &j, false).await?;
    anstream::eprintln!(
        "✓ journal written: ConfigMap {ns}/{} (phase started) and bundle {}",
        journal::object_name(name),
        out_dir.display()
    );
    let mut w = Window {
        cluster,
        journal: j,
        lock: held,
        by,
    };
    let gateway = source.gateway.clone();
    steps(&mut w, args, Some(&gateway)).await
}

/// No IPsecGateway and no journal: say what is there instead (a migrated gateway whose
/// journal was lost, or nothing) and name the local bundle when this machine has one
/// (issue 14 items 7 and 9).
async fn no_old_gateway(cluster: &Cluster, name: &str, e: crate::cluster::KubeError) -> Error {
    let ns = cluster.namespace.as_str();
    let lost = crate::state::lost_journal_hint(&cluster.server, ns, name);
    match objects::get(cluster, "VPNGateway", name).await {
        Ok(Some(gw)) => Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "{ns}/{name} is migrated: VPNGateway {name} exists (uid {}) and IPsecGateway {name} does not, but its journal (ConfigMap {}) is gone: nothing to cut over",
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
    args: &CutoverArgs,
    j: Journal,
    by: String,
) -> Result<i32, Error> {
    let (name, ns) = (j.gateway.clone(), j.namespace.clone());
    if let Some(old) = objects::get(cluster, "IPsecGateway", &name).await? {
        let uid = old.pointer("/metadata/uid").and_then(Value::as_str);
        let deleting = old.pointer("/metadata/deletionTimestamp").is_some();
        if uid == j.old_uid.as_deref() && !deleting && j.phase > Phase::Deleting {
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!(
                    "the journal says IPsecGateway {ns}/{name} was deleted (phase {}), but it is still there and not being deleted",
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
                    "the journal says IPsecGateway {ns}/{name} (uid {}) was deleted at phase {}, but an IPsecGateway of that name exists again (uid {})",
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
    if let Some(dir) = &args.plan {
        let (saved, _) = bundle::read_saved(dir)?;
        let drift = journal::journal_drift(&saved, &j);
        if !drift.is_empty() {
            anstream::eprint!("{}", render::drift(&drift));
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!(
                    "the journal of {ns}/{name} does not match the plan in {}",
                    dir.display()
                ),
                hint: Some(format!(
                    "resume without --plan (the journal is what was started), or inspect `kubectl get configmap {} -n {ns} -o yaml`",
                    journal::object_name(&name)
                )),
            });
        }
    }
    anstream::eprint!(
        "{}",
        render::resume_summary(&cluster.context, &j, &args.timeouts.waits())
    );
    confirm(&name, args.yes, args.dry_run, "resume the cutover of").await?;
    if args.dry_run {
        anstream::eprintln!(
            "dry run: nothing was changed; without --dry-run the cutover resumes from phase {}",
            j.phase
        );
        return Ok(exit::OK);
    }
    let mut w = Window {
        cluster,
        journal: j,
        lock: held,
        by,
    };
    steps(&mut w, args, None).await
}

/// `--forward`: cut the re-created IPsecGateway over to the journal's targets. The saved
/// old manifest stays the original; the object to delete is the re-created one.
async fn forward_again(
    cluster: &Cluster,
    held: Option<&lock::Lock>,
    args: &CutoverArgs,
    mut j: Journal,
    by: String,
) -> Result<i32, Error> {
    let (name, ns) = (j.gateway.clone(), j.namespace.clone());
    let Some(live) = objects::get(cluster, "IPsecGateway", &name).await? else {
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!("--forward: there is no IPsecGateway {ns}/{name} to cut over"),
            hint: Some(j.phase.recovery(&name, &ns)),
        });
    };
    let gw: IPsecGateway = serde_json::from_value(live.clone()).map_err(|e| Error::Stop {
        code: exit::FAILURE,
        message: format!("IPsecGateway {ns}/{name} cannot be read: {e}"),
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
        anstream::eprint!("{}", render::drift(&drift));
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "--forward: IPsecGateway {ns}/{name} is not the one the journal recorded ({} field(s) differ, above): its targets would drop the edit; nothing was changed",
                drift.len()
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
                "--forward: IPsecGateway {ns}/{name} cannot be deleted: {why}; nothing was changed"
            ),
            hint: Some(format!(
                "pin it first: {}",
                scope::pin_command("IPsecGateway", &name, &ns, &j.floating_ip)
            )),
        });
    }
    j.old_uid = gw.metadata.uid.clone();
    j.spec_fingerprint = plan::fingerprint(live.get("spec").unwrap_or(&Value::Null));
    j.fixed_targets = true;
    window::require_permissions(cluster, "cut over again").await?;
    anstream::eprint!(
        "{}",
        render::forward_summary(&cluster.context, &j, &args.timeouts.waits())
    );
    confirm(&name, args.yes, args.dry_run, "cut over again").await?;
    if args.dry_run {
        anstream::eprintln!("dry run: nothing was changed");
        return Ok(exit::OK);
    }
    j.advance(Phase::Started, &now(), &by);
    stored::write(cluster, &j, false).await?;
    let mut w = Window {
        cluster,
        journal: j,
        lock: held,
        by,
    };
    steps(&mut w, args, Some(&gw)).await
}

/// `--dry-run`: every write sent with dryRun=All, in the order the cutover would.
async fn dry_run(
    cluster: &Cluster,
    j: &Journal,
    secret: &Option<Value>,
    detach: Option<(Vec<Value>, Vec<Value>)>,
    skip: &[String],
) -> Result<i32, Error> {
    let name = j.gateway.as_str();
    if let Some((h, since)) = lock::holder(cluster, name).await? {
        anstream::eprintln!(
            "note: the lock of {name} is held by {h} since {since}: a real run would be refused"
        );
    }
    stored::write(cluster, j, true).await?;
    anstream::eprintln!(
        "✓ dry run: journal ConfigMap {} admitted",
        journal::object_name(name)
    );
    if let (Some(s), Some((removed, kept))) = (secret, detach) {
        let rv = s
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        objects::set_owner_references(cluster, &j.psk_secret, rv, &kept, true).await?;
        anstream::eprintln!(
            "✓ dry run: PSK Secret {} would be detached ({} ownerReference(s) removed)",
            j.psk_secret,
            removed.len()
        );
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
        anstream::eprintln!(
            "! dry run: {label} not validated by admission webhook {w}, which cannot dry-run (--skip-dry-run-webhook {w})"
        );
    }
    anstream::eprintln!(
        "✓ dry run: {} target(s) admitted by server-side apply",
        j.targets.len() - skipped.len()
    );
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
    anstream::eprintln!("✓ dry run: delete of IPsecGateway {name} admitted");
    anstream::eprintln!("dry run: nothing was changed");
    Ok(exit::OK)
}

/// The steps from the journal's phase to `Done`.
async fn steps(
    w: &mut Window<'_>,
    args: &CutoverArgs,
    old: Option<&IPsecGateway>,
) -> Result<i32, Error> {
    match forward(w, args, old).await {
        Ok(code) => Ok(code),
        // Another run holds the lock now: it decides; no advice that would fight it.
        Err(e @ Error::Lock(_)) => Err(e),
        Err(e) if w.journal.phase.past_delete() => {
            let message = crate::cli::error_line(&e);
            w.record_error(&message).await;
            let (name, ns) = (w.name().to_string(), w.ns().to_string());
            // Only a verdict about the new gateway is a reason to roll back: an API
            // server that did not answer says nothing about it, and rolling back a
            // working gateway is an outage and may lose its addresses (issue 9 item 0).
            let no_answer = matches!(&e, Error::Cluster(k) if k.no_answer());
            if args.rollback_on_failure && no_answer {
                anstream::eprintln!(
                    "! --rollback-on-failure: not rolling back, the API server did not answer, which says nothing about the new gateway"
                );
            }
            if args.rollback_on_failure && !no_answer {
                anstream::eprintln!(
                    "✗ cutover stopped at phase {}; --rollback-on-failure: rolling back",
                    w.journal.phase
                );
                w.journal.cutover_failure =
                    Some(format!("at phase {}: {message}", w.journal.phase));
                let t =
                    crate::cli::rollback::roll_back(w, &args.timeouts, Default::default()).await?;
                anstream::print!(
                    "{}",
                    render::report("rollback", &w.journal, &t.rows, args.output)
                );
                return Err(Error::Stop {
                    code: e.exit_code(),
                    message: format!("the cutover of {ns}/{name} failed and was rolled back"),
                    hint: Some(format!(
                        "the failure is above and in the journal (lastError); `vpnmig verify {name} -n {ns}` checks the restored gateway"
                    )),
                });
            }
            // The advice follows what the cluster shows, not the phase: an IPsecGateway
            // that exists again (re-created by someone) is not "deleted".
            let old_back = matches!(
                objects::get(w.cluster, "IPsecGateway", &name).await,
                Ok(Some(o)) if o.pointer("/metadata/deletionTimestamp").is_none()
            );
            let hint = if old_back {
                e.hint().unwrap_or_else(|| format!(
                    "IPsecGateway {ns}/{name} exists again: `vpnmig rollback {name} -n {ns}` keeps it and removes the new objects"
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
                    "cutover of {ns}/{name} stopped at phase {}: {message}",
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
    args: &CutoverArgs,
    old: Option<&IPsecGateway>,
) -> Result<i32, Error> {
    let t = &args.timeouts;
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let cluster = w.cluster;

    // Step e: the PSK Secret must not go with the old gateway.
    if w.journal.phase < Phase::PskDetached {
        if let Some(gw) = old {
            w.detach_psk(&journal::Owners::of_old(gw), "the old gateway")
                .await?;
        }
        w.save(Phase::PskDetached).await?;
    }

    // Steps f and g: dry run; then, checked again right before it, the delete (the phase
    // is recorded before it is sent, the delete is of the very version checked).
    if w.journal.phase < Phase::Deleting {
        pre_delete_dry_run(w, args).await?;
        let gw = recheck(w).await?;
        w.save(Phase::Deleting).await?;
        if gw.is_some() {
            delete_checked(w).await?;
        }
    } else if w.journal.phase == Phase::Deleting {
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
        let wait = window::wait_gone(
            cluster,
            "IPsecGateway",
            std::slice::from_ref(&name),
            t.timeout_delete,
            &title,
        );
        let outcome = match &gw {
            Some(gw) => w.guarded(&journal::Owners::of_old(gw), wait).await?,
            None => wait.await?,
        };
        if let Err(diagnosis) = outcome {
            return Err(timed_out(
                &format!("IPsecGateway {ns}/{name} to be deleted"),
                t.timeout_delete,
                &diagnosis,
                Some("the operator's finalizer unwind has not finished: look at the operator's logs; the finalizer is the operator's to remove".into()),
            ));
        }
        window::check_psk(w).await?;
        w.save(Phase::Deleted).await?;
    }

    // From here the old gateway is gone: if anything re-creates it, every wait below
    // stops at once (issue 9 item 3).
    window::unless_recreated(
        cluster,
        "IPsecGateway",
        &name,
        "cutover",
        after_delete(w, args),
    )
    .await
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
    args: &CutoverArgs,
) -> Error {
    let mut all = args.skip_dry_run_webhooks.clone();
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
async fn pre_delete_dry_run(w: &mut Window<'_>, args: &CutoverArgs) -> Result<(), Error> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let mut skipped = Vec::new();
    let mut unskipped = Vec::new();
    for target in &w.journal.targets {
        match objects::apply(w.cluster, target, true).await {
            Ok(_) => {}
            Err(e) => {
                if let Some(webhook) = skippable(&e, &args.skip_dry_run_webhooks) {
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
            args,
        );
        w.record_error(&crate::cli::error_line(&err)).await;
        return Err(err);
    }
    for (label, webhook) in &skipped {
        anstream::eprintln!(
            "! server-side dry run: {label} not validated by admission webhook {webhook}, which cannot dry-run (skipped: --skip-dry-run-webhook {webhook}); the real apply is its check"
        );
    }
    anstream::eprintln!(
        "✓ server-side dry run: {} target(s) admitted",
        w.journal.targets.len() - skipped.len()
    );
    Ok(())
}

/// Steps h and i: apply, wait for each condition in turn, verify the tunnels.
async fn after_delete(w: &mut Window<'_>, args: &CutoverArgs) -> Result<i32, Error> {
    let t = &args.timeouts;
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let cluster = w.cluster;
    // Step h: apply, then wait for each condition in turn.
    if w.journal.phase < Phase::Applied {
        w.check_lock().await?;
        let mut uids = Vec::new();
        for target in &w.journal.targets {
            uids.push(objects::apply(cluster, target, false).await?);
        }
        w.journal.target_uids = uids;
        anstream::eprintln!(
            "✓ applied {} (server-side apply, field manager {})",
            w.journal
                .target_names()
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            stored::FIELD_MANAGER
        );
        w.save(Phase::Applied).await?;
    }
    let me = [name.clone()];
    if w.journal.phase < Phase::Attached {
        let title = format!(
            "VPNGateway {ns}/{name} FIPAttached (floating IP {})",
            w.journal.floating_ip
        );
        if let Err(d) = window::wait_conditions(
            cluster,
            "VPNGateway",
            &me,
            &["FIPAttached"],
            t.timeout_attach,
            &title,
        )
        .await?
        {
            return Err(timed_out(&format!("VPNGateway {ns}/{name} FIPAttached"), t.timeout_attach, &d, Some(
                "AlreadyAssociated means the floating IP is still on another port: find it with `openstack floating ip show`".into())));
        }
        w.save(Phase::Attached).await?;
    }
    if w.journal.phase < Phase::Ready {
        let title = format!("VPNGateway {ns}/{name} Ready");
        if let Err(d) = window::wait_conditions(
            cluster,
            "VPNGateway",
            &me,
            &["Ready"],
            t.timeout_attach,
            &title,
        )
        .await?
        {
            return Err(timed_out(
                &format!("VPNGateway {ns}/{name} Ready"),
                t.timeout_attach,
                &d,
                None,
            ));
        }
        let peers = w.journal.peer_names();
        let title = format!("VPNPeer {} Authorized", peers.join(", "));
        if let Err(d) = window::wait_conditions(
            cluster,
            "VPNPeer",
            &peers,
            &["Authorized"],
            t.timeout_attach,
            &title,
        )
        .await?
        {
            return Err(timed_out("every VPNPeer Authorized", t.timeout_attach, &d, Some(
                "a grant naming an unknown exposure leaves a peer Authorized=False: compare the authorization block with the gateway's exposures".into())));
        }
        w.save(Phase::Ready).await?;
    }
    let expect = window::Expect {
        kind: "VPNGateway",
        service_cidr: None,
        virtual_ips: Vec::new(),
        reference: w.journal.targets.clone(),
    };
    let tunnels = window::wait_tunnels(cluster, &name, t.timeout_tunnel, &expect).await?;
    if let Some(d) = &tunnels.timed_out {
        return Err(timed_out(&format!("the tunnels of {ns}/{name}"), t.timeout_tunnel, d, Some(
            "the client's peer re-initiates on its own DPD/retry timer; a PSK or proposal mismatch shows in the client's logs".into())));
    }
    w.journal.outage_ms = window::between(w.delete_sent(), tunnels.first_up);
    w.save(Phase::Done).await?;
    anstream::print!(
        "{}",
        render::report("cutover", &w.journal, &tunnels.rows, args.output)
    );
    Ok(exit::OK)
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
            message: format!("IPsecGateway {ns}/{name} was not deleted: {why}"),
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
        message: format!("IPsecGateway {ns}/{name} cannot be read: {e}"),
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
            "{}; IPsecGateway {ns}/{name} is still there and untouched: nothing was deleted, the tunnel stays up",
            crate::cli::error_line(&e)
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
