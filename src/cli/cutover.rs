//! `vpnmig cutover NAME`: the maintenance window (runbook steps 2 and 3). The flags, the
//! options they make, and the rendering; the steps are the window engine's
//! (`crate::window::cutover`).

use std::path::PathBuf;

use crate::cli::Error;
use crate::cli::cluster_args::ClusterArgs;
use crate::cli::wave::{self, WaveArgs};
use crate::cli::window::{self, Timeouts};
use crate::exit;
use crate::output::window as render;
use crate::window::CutoverOptions;

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
///
/// A wave (-l SELECTOR, --names FILE or --plan-dir DIR instead of NAME): every selected
/// gateway's window as above, at most --concurrency at a time, confirmed once (type the
/// number of gateways and the selection, or --yes); after --max-failures failed windows
/// no new one starts. Run the same command again to resume a wave: done gateways are
/// skipped, interrupted ones resume from their journals (docs/fleet.md).
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["name", "selector", "names", "plan_dir"])))]
#[command(group(clap::ArgGroup::new("wave").multiple(true).args(["selector", "names", "plan_dir"])))]
#[command(after_help = "\
Examples:
  vpnmig plan acme -n tenant-acme --out plans/acme          # before the window: review
  vpnmig cutover acme -n tenant-acme --plan plans/acme      # at the window
  vpnmig cutover acme -n tenant-acme --plan plans/acme --dry-run
  vpnmig cutover acme -n tenant-acme --plan plans/acme --window-end 02:00
  vpnmig cutover acme -n tenant-acme --yes --rollback-on-failure -o json
  vpnmig cutover acme -n tenant-acme --plan plans/acme --gitops pause   # Argo CD / Flux
  vpnmig cutover -n tenant-acme -l tier=bronze --concurrency 5 --max-failures 2
  vpnmig cutover -A --plan-dir plans/ --concurrency 5 --max-failures 2 --yes -o json

Exit codes: 0 done, 1 failure (an API error; the message says the phase and what to run),
4 blocked by a check, 5 done but a VPNGateway or VPNPeer it made live is gone now (as
`vpnmig report` says), 6 a wait timed out, 7 refused (lock held, drift, no --yes without
a terminal, confirmation mismatch, too little of the window left), 130 interrupted.
A wave: 0 every gateway done (or done already), 1 a window failed, 3 nothing selected,
7 a gateway locked by another run or not started (or a refusal before any window), 130
interrupted (docs/wave-json.md).")]
pub struct CutoverArgs {
    /// kubectl's cluster flags, from the top-level command (global).
    #[arg(skip)]
    pub cluster: ClusterArgs,
    /// The IPsecGateway to cut over (namespace: -n, else the context's).
    #[arg(value_name = "NAME", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub name: Option<String>,

    #[command(flatten)]
    pub wave: WaveArgs,

    /// A wave of the gateways `vpnmig plan … --out DIR` found ready (DIR/fleet.json), each
    /// cut over with its reviewed bundle DIR/NAMESPACE/NAME as --plan (-n: only that
    /// namespace's).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["name", "selector", "names"], help_heading = "Wave (many gateways)")]
    pub plan_dir: Option<PathBuf>,

    /// The bundle `vpnmig plan NAME --out DIR` wrote and you reviewed: the live gateway
    /// must still match it (uid, generation, spec fingerprint, targets), else nothing is done.
    #[arg(conflicts_with = "wave", long, value_name = "DIR")]
    pub plan: Option<PathBuf>,

    /// Where the local copy of the bundle is written before anything changes (default:
    /// --plan DIR, else the state directory: $XDG_STATE_HOME/vpnmig/windows/NAMESPACE/NAME-UID8,
    /// UID8 the start of the gateway's uid; the summary says where).
    #[arg(conflicts_with = "wave", long, value_name = "DIR")]
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
    #[arg(conflicts_with = "wave", long)]
    pub break_lock: bool,

    /// If a step after the delete fails or times out, roll back at once instead of
    /// printing the rollback command.
    #[arg(long)]
    pub rollback_on_failure: bool,

    /// Once the new VPNGateway is Ready and its peers Authorized, start the tunnels from
    /// the gateway (`swanctl --initiate --child NAME` in its pod, the CHILD SA names from
    /// the operator's configuration or the old gateway's SAs) instead of waiting for the
    /// client's retry timer; if that fails, wait for the client as without it. The report
    /// says which brought each tunnel up. Not for a client that only accepts being the
    /// initiator (see docs/data-plane.md).
    #[arg(long)]
    pub initiate: bool,

    /// Delete the old gateway although some of its tunnels are down right before the
    /// delete. Without it the cutover stops there, nothing deleted: a tunnel that is down
    /// before the window has no baseline to be compared with, and the window cannot show
    /// that it comes back.
    #[arg(long)]
    pub allow_tunnels_down: bool,

    /// After a rollback that could not give the re-created IPsecGateway its old addresses
    /// (journal phase old-applied), cut over again with the journal's targets, which pin
    /// them, instead of planning the re-created gateway (whose status has the new ones).
    #[arg(conflicts_with = "wave", long)]
    pub forward: bool,

    #[command(flatten)]
    pub timeouts: Timeouts,

    /// When the maintenance window ends: RFC 3339 (2026-11-30T22:00:00+01:00) or HH:MM
    /// in local time (the next such moment). The cutover refuses to start, and to go
    /// past the delete, when less is left than a cutover and its rollback are expected
    /// to take: the p95 of earlier windows' journals in the cluster, else the worst case
    /// of the timeouts. A cutover resumed past the delete is never refused.
    #[arg(long, value_name = "TIME", value_parser = window::window_end)]
    pub window_end: Option<crate::core::guard::WindowEnd>,

    /// Replace the built-in proposal allowlist with the operator's.
    #[arg(long, value_name = "FILE")]
    pub allowlist: Option<PathBuf>,

    /// Name the VPNPeer of tunnel TUNNEL NAME (repeatable), as `plan --peer-name` did;
    /// with --plan DIR the bundle's choice is used unless this is given.
    #[arg(long = "peer-name", conflicts_with = "wave", value_name = "TUNNEL=NAME", value_parser = crate::cli::plan::parse_peer_name)]
    pub peer_names: Vec<(String, String)>,

    /// Go on although admission webhook NAME cannot dry-run (its sideEffects are Some or
    /// Unknown), so it validates the targets only in the real apply after the delete
    /// (repeatable; every such webhook must be named).
    #[arg(long = "skip-dry-run-webhook", value_name = "NAME")]
    pub skip_dry_run_webhooks: Vec<String>,

    /// A gateway Argo CD or Flux syncs is refused unless you say how to handle its sync:
    /// pause, ignore, keep-tracking, resume (comma-separated or repeated; docs/gitops.md).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "MODE")]
    pub gitops: Vec<window::Gitops>,

    /// At the end, write the window's change record to FILE (.md, .json or .html: the
    /// format comes from the extension), as `vpnmig report NAME -o FORMAT` renders it.
    #[arg(conflicts_with = "wave", long, value_name = "FILE", value_parser = crate::cli::report::report_path)]
    pub report: Option<std::path::PathBuf>,

    /// Output format of the final report (progress always goes to stderr).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = render::Format::Text)]
    pub output: render::Format,
}

pub fn run(args: &CutoverArgs) -> Result<i32, Error> {
    // Parse, then validate: the allowlist file is read before the cluster is asked.
    let allowlist = crate::cli::plan::allowlist(args.allowlist.as_ref())?;
    let gitops = window::gitops(&args.gitops).map_err(|m| Error::Stop {
        code: exit::USAGE,
        message: m,
        hint: None,
    })?;
    let opts = CutoverOptions {
        plan: args.plan.clone(),
        out: args.out.clone(),
        dry_run: args.dry_run,
        break_lock: args.break_lock,
        rollback_on_failure: args.rollback_on_failure,
        forward: args.forward,
        timeouts: args.timeouts.engine(),
        allowlist,
        peer_names: args.peer_names.clone(),
        skip_dry_run_webhooks: args.skip_dry_run_webhooks.clone(),
        window_end: args.window_end.clone(),
        gitops,
        initiate: args.initiate,
        allow_tunnels_down: args.allow_tunnels_down,
    };
    if wave::asked(&args.wave, args.plan_dir.as_ref()) {
        return wave::Wave {
            cluster: &args.cluster,
            args: &args.wave,
            plan_dir: args.plan_dir.as_ref(),
            yes: args.yes,
            dry_run: args.dry_run,
            waits: args.timeouts.waits(),
            output: args.output,
            window: crate::window::wave::WindowOptions::Cutover(opts),
        }
        .run();
    }
    let name = args.name.as_deref().unwrap_or_default();
    let mut sink = crate::output::events::LiveView::new(args.output);
    let mut prompt = window::Prompt {
        yes: args.yes,
        waits: args.timeouts.waits(),
    };
    window::run(&args.cluster, async |cluster| {
        let out = crate::window::cutover(
            cluster,
            name,
            &opts,
            &mut sink,
            &mut prompt,
            window::interrupted(),
        )
        .await;
        // Where the window's change record is, however it ended (issue 12 item 4).
        if sink.recorded() {
            crate::cli::report::after_window(cluster, name, args.report.as_deref()).await;
        }
        out?;
        // Done, but what the window made live is gone now: never exit 0 over it
        // (a21q Q02c), as `status`, `verify` and `report` say it.
        if !opts.dry_run
            && let Some(stop) = crate::cli::report::incomplete_after(cluster, name).await
        {
            return Err(stop);
        }
        Ok(())
    })?;
    // Done, nothing to do, or a dry run that passed: every stop is an error with its code.
    Ok(exit::OK)
}
