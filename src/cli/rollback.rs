//! `vpnmig rollback NAME`: the runbook's rollback, from the journal. The flags, the
//! options they make, and the rendering; the steps are the window engine's
//! (`crate::window::rollback`).

use std::path::PathBuf;

use crate::cli::Error;
use crate::cli::cluster_args::ClusterArgs;
use crate::cli::wave::{self, WaveArgs};
use crate::cli::window::{self, Timeouts};
use crate::exit;
use crate::output::window as render;
use crate::window::{Choices, RollbackOptions};

/// Roll a gateway back to its IPsecGateway.
///
/// Reads the journal the cutover wrote (ConfigMap `vpnmig-NAME`; or, if it is gone, the
/// bundle in --plan DIR); takes the gateway's lock; checks the VPNGateway's floating IP is
/// pinned (so its delete only disassociates it) and asks you to type the gateway's name;
/// deletes the VPNPeers and the VPNGateway and waits until they are gone; re-creates the
/// IPsecGateway from the saved manifest; waits for FIPAttached and Ready and verifies its
/// tunnels; marks the journal rolled back.
///
/// Works after a completed cutover, a failed one, and one interrupted at any phase; run
/// it again to resume an interrupted rollback.
///
/// A wave (-l SELECTOR or --names FILE instead of NAME): every gateway with a journal
/// that the selection takes (the labels are the saved IPsecGateway's) rolled back as
/// above, at most --concurrency at a time, confirmed once; after --max-failures failed
/// windows no new one starts (docs/fleet.md).
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["name", "selector", "names"])))]
#[command(group(clap::ArgGroup::new("wave").multiple(true).args(["selector", "names"])))]
#[command(after_help = "\
Examples:
  vpnmig rollback acme -n tenant-acme
  vpnmig rollback acme -n tenant-acme --plan plans/acme --yes   # the journal ConfigMap is gone
  vpnmig rollback -n tenant-acme -l tier=bronze --concurrency 1 --yes

Exit codes: 0 rolled back, 1 failure, 5 the re-created IPsecGateway got other addresses
(its kind cannot pin its serviceCIDR: --accept-new-addresses, or cutover --forward), 6 a
wait timed out, 7 refused (lock held, no journal, the floating IP not pinned, VPNPeers it
did not create, an owner of the saved gateway gone, no --yes without a terminal), 130
interrupted. A wave: 0 every gateway rolled back (or already), 1 a window failed, 3
nothing selected, 7 a gateway locked by another run or not started, 130 interrupted
(docs/wave-json.md).")]
pub struct RollbackArgs {
    /// kubectl's cluster flags, from the top-level command (global).
    #[arg(skip)]
    pub cluster: ClusterArgs,
    /// The gateway to roll back (namespace: -n, else the context's).
    #[arg(value_name = "NAME", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub name: Option<String>,

    #[command(flatten)]
    pub wave: WaveArgs,

    /// The bundle of the cutover (`plan --out DIR`): used when the journal ConfigMap is
    /// gone; with a journal, it must be of the same gateway.
    #[arg(conflicts_with = "wave", long, value_name = "DIR")]
    pub plan: Option<PathBuf>,

    /// Do not ask for the gateway's name (needed without a terminal).
    #[arg(short = 'y', long)]
    pub yes: bool,

    /// Do every read, check, server-side dry run and the prompt; change nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Take the gateway's lock even though another run holds it.
    #[arg(conflicts_with = "wave", long)]
    pub break_lock: bool,

    /// Also delete VPNPeers that reference the gateway but were not created by the
    /// cutover (added by hand since): without it the rollback refuses, naming them, as
    /// they would be orphaned and a later cutover would find two peers (default-deny).
    #[arg(long)]
    pub delete_extra_peers: bool,

    /// Finish a rollback whose re-created IPsecGateway got another serviceCIDR or
    /// virtual IPs (the old kind cannot pin them): accept them and close the journal as
    /// rolled back. The client's side must then be changed to the new addresses.
    #[arg(long)]
    pub accept_new_addresses: bool,

    /// Re-create the IPsecGateway without the ownerReferences whose owners no longer
    /// exist (or were re-created with another uid): restored as saved, the garbage
    /// collector would delete the gateway right after the rollback. Without it the
    /// rollback refuses, naming them. The dropped references are recorded in the journal.
    #[arg(long)]
    pub drop_missing_owners: bool,

    /// Once the re-created IPsecGateway is Ready, start its tunnels from the gateway
    /// (`swanctl --initiate --child NAME` in its pod) instead of waiting for the
    /// client's retry timer; if that fails, wait for the client as without it. Not for a
    /// client that only accepts being the initiator (see docs/data-plane.md).
    #[arg(long)]
    pub initiate: bool,

    #[command(flatten)]
    pub timeouts: Timeouts,

    /// When the maintenance window ends (RFC 3339, or HH:MM in local time): a rollback
    /// expected to take longer than what is left only warns (rolling back is the safe
    /// direction).
    #[arg(long, value_name = "TIME", value_parser = window::window_end)]
    pub window_end: Option<crate::core::guard::WindowEnd>,

    /// `resume`: restore a GitOps owner the window suspended although its status still
    /// lists the VPNGateway (docs/gitops.md).
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

pub fn run(args: &RollbackArgs) -> Result<i32, Error> {
    let opts = RollbackOptions {
        plan: args.plan.clone(),
        dry_run: args.dry_run,
        break_lock: args.break_lock,
        choices: Choices {
            delete_extra_peers: args.delete_extra_peers,
            accept_new_addresses: args.accept_new_addresses,
            drop_missing_owners: args.drop_missing_owners,
            initiate: args.initiate,
        },
        timeouts: args.timeouts.engine(),
        window_end: args.window_end.clone(),
        gitops: window::gitops(&args.gitops).map_err(|m| Error::Stop {
            code: exit::USAGE,
            message: m,
            hint: None,
        })?,
    };
    if wave::asked(&args.wave, None) {
        return wave::Wave {
            cluster: &args.cluster,
            args: &args.wave,
            plan_dir: None,
            yes: args.yes,
            dry_run: args.dry_run,
            waits: args.timeouts.waits(),
            output: args.output,
            window: crate::window::wave::WindowOptions::Rollback(opts),
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
        let out = crate::window::rollback(
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
        Ok(out?)
    })?;
    Ok(exit::OK)
}
