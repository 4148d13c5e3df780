//! The command line: clap definitions, one module per command, errors with exit codes.
//! `main.rs` calls [`run`] and maps the result to the process exit code.

pub mod cluster_args;
mod cutover;
mod parse_sas;
mod plan;
mod rollback;
mod status;
pub(crate) mod verify;
pub(crate) mod window;

use std::ffi::OsString;

use clap::{Parser, Subcommand};

use crate::exit;

pub use crate::error::Error;
pub(crate) use crate::error::error_line;

const WORKFLOW: &str = "\
Workflow (one client, one maintenance window; runbook: migrating IPsecGateway to VPNGateway):
  0. status    which gateways are migrated, pinned, healthy, blocked:  vpnmig status -A
  1. plan      translate the IPsecGateway, prove every pinned value, run the checks,
               write a bundle:  vpnmig plan acme --out plans/acme
  2. cutover   at the window: lock, re-plan, journal, delete the old CR, wait, apply the
               new ones, wait for each condition and the tunnels:
               vpnmig cutover acme --plan plans/acme
  3. verify    conditions, pinned values and `swanctl --list-sas` in the gateway pod
  4. rollback  delete the new CRs, wait, re-create the old one from the journal:
               vpnmig rollback acme

An interrupted cutover or rollback resumes when run again (from any machine); the journal
is the ConfigMap vpnmig-NAME in the gateway's namespace.

Exit codes: 0 ok, 1 failure, 2 usage, 3 invalid input, 4 blocked by checks,
5 verify failed, 6 timeout, 7 refused, 130 interrupted (see docs/exit-codes.md).";

/// vpnmig: move a client's site-to-site VPN from IPsecGateway to VPNGateway + VPNPeer
/// without changing a value the client's firewall depends on.
#[derive(Parser, Debug)]
#[command(name = "vpnmig", version, max_term_width = 100, after_long_help = WORKFLOW, after_help = "Run `vpnmig --help` for the workflow and exit codes.")]
pub struct Cli {
    #[command(flatten)]
    cluster: cluster_args::ClusterArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    Status(status::StatusArgs),
    Plan(plan::PlanArgs),
    Cutover(cutover::CutoverArgs),
    Verify(verify::VerifyArgs),
    Rollback(rollback::RollbackArgs),
    ParseSas(parse_sas::ParseSasArgs),
}

/// The async runtime of a command that talks to a cluster: one thread is plenty.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| Error::Write { source })
}

/// Write a document to standard output (colour handled by `anstream`). A closed pipe
/// (`| head`) is the reader's choice; any other failure lost output and is an error.
pub(crate) fn write_stdout(doc: &str) -> Result<(), Error> {
    use std::io::Write;
    let mut stdout = anstream::stdout();
    match stdout
        .write_all(doc.as_bytes())
        .and_then(|_| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Write { source: e }),
        _ => Ok(()),
    }
}

/// Parse `args` and run the command. `Ok(code)`: the command ran (the code may still say
/// "blocked"); `Err`: it stopped with an error. Help, version and usage errors are printed
/// here and returned as their codes.
pub fn run<I, T>(args: I) -> Result<i32, Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    use clap::{CommandFactory, FromArgMatches};
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    // Installed as `kubectl-vpnmig`, kubectl runs it as `kubectl vpnmig`: usage and
    // errors say so (issue 10 item 6).
    let plugin = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .is_some_and(|n| n == "kubectl-vpnmig");
    let command = Cli::command().bin_name(if plugin { "kubectl vpnmig" } else { "vpnmig" });
    let parsed = command
        .try_get_matches_from(args)
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return Ok(if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    match cli.command {
        Command::Plan(mut args) => {
            args.cluster = cli.cluster;
            plan::run(&args)
        }
        Command::Cutover(mut args) => {
            args.cluster = cli.cluster;
            cutover::run(&args)
        }
        Command::Rollback(mut args) => {
            args.cluster = cli.cluster;
            rollback::run(&args)
        }
        Command::ParseSas(args) => parse_sas::run(&args),
        Command::Status(mut args) => {
            args.cluster = cli.cluster;
            status::run(&args)
        }
        Command::Verify(mut args) => {
            args.cluster = cli.cluster;
            verify::run(&args)
        }
    }
}
