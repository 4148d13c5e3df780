//! The command line: clap definitions, one module per command, errors with exit codes.
//! `main.rs` calls [`run`] and maps the result to the process exit code.

pub mod cluster_args;
pub mod complete;
mod cutover;
pub mod man;
mod parse_sas;
mod plan;
pub(crate) mod report;
mod rollback;
mod schedule;
mod status;
pub(crate) mod verify;
pub mod version;
pub(crate) mod wave;
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
  5. report    the window's change record for the ticket (md, json or html):
               vpnmig report acme -o html --out acme-window.html

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
    Report(report::ReportArgs),
    Schedule(schedule::ScheduleArgs),
    ParseSas(parse_sas::ParseSasArgs),
    Completions(complete::CompletionsArgs),
    Man(man::ManArgs),
    Version(version::VersionArgs),
}

/// Whether this run is `kubectl vpnmig` (the binary installed as `kubectl-vpnmig`), from
/// the program name.
pub fn is_plugin(argv0: Option<&std::ffi::OsStr>) -> bool {
    argv0
        .and_then(|a| std::path::Path::new(a).file_name())
        .is_some_and(|n| n == "kubectl-vpnmig")
}

/// The whole command tree, as help, man pages and completions see it: named
/// `kubectl vpnmig` as a plugin (usage lines and examples alike), with the dynamic
/// completers of gateway names and namespaces attached.
pub fn command(plugin: bool) -> clap::Command {
    use clap::CommandFactory;
    let mut cmd = Cli::command()
        .bin_name(if plugin { "kubectl vpnmig" } else { "vpnmig" })
        .mut_arg("namespace", |a| a.add(complete::namespaces()))
        .mut_arg("context", |a| {
            a.add(complete::kubeconfig_names(
                complete::KubeconfigNames::Contexts,
            ))
        })
        .mut_arg("cluster", |a| {
            a.add(complete::kubeconfig_names(
                complete::KubeconfigNames::Clusters,
            ))
        })
        .mut_arg("user", |a| {
            a.add(complete::kubeconfig_names(complete::KubeconfigNames::Users))
        });
    for (sub, arg, old_only) in [
        ("plan", "gateway", true),
        ("cutover", "name", true),
        ("verify", "name", false),
        ("rollback", "name", false),
        ("report", "name", false),
    ] {
        cmd = cmd.mut_subcommand(sub, |s| {
            s.mut_arg(arg, |a| a.add(complete::gateway_names(old_only)))
        });
    }
    if plugin { as_plugin(cmd) } else { cmd }
}

/// A text whose quoted `vpnmig cutover …` and `vpnmig rollback …` commands get `--yes`
/// when they lack it: advice to a run that was itself confirmed with `--yes` (a script,
/// no terminal) is advice that run can follow as written (newcomer walkthrough: the
/// resume it was told to run refused for want of a terminal, during the outage).
pub fn with_yes(text: &str) -> String {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"`((?:kubectl )?vpnmig (?:cutover|rollback) [^`]*)`")
            .expect("valid regex")
    });
    RE.replace_all(text, |c: &regex::Captures| {
        let cmd = &c[1];
        if cmd.split_whitespace().any(|w| w == "--yes" || w == "-y") {
            format!("`{cmd}`")
        } else {
            format!("`{cmd} --yes`")
        }
    })
    .into_owned()
}

/// Whether this run was confirmed with `--yes` (or `-y`) on its command line.
pub fn confirmed_by_flag(args: impl Iterator<Item = std::ffi::OsString>) -> bool {
    args.skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--yes" || a == "-y")
}

/// A text that names `vpnmig …` commands, naming them `kubectl vpnmig …` instead: as a
/// plugin installed by krew there may be no `vpnmig` on the PATH. Only commands: the
/// journal `vpnmig-NAME`, `managed-by=vpnmig` and `vpnmig:` stay.
pub fn as_plugin_text(text: &str) -> String {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(^|[\s`(|])vpnmig( |`|$)").expect("valid regex")
    });
    RE.replace_all(text, "${1}kubectl vpnmig$2")
        .replace("kubectl kubectl vpnmig", "kubectl vpnmig")
}

/// Examples and help that say `vpnmig …` say `kubectl vpnmig …` (issue 13 item 3).
fn as_plugin(mut cmd: clap::Command) -> clap::Command {
    let fix = |s: &clap::builder::StyledStr| as_plugin_text(&s.to_string());
    if let Some(t) = cmd.get_about().map(fix) {
        cmd = cmd.about(t);
    }
    if let Some(t) = cmd.get_long_about().map(fix) {
        cmd = cmd.long_about(t);
    }
    if let Some(t) = cmd.get_before_help().map(fix) {
        cmd = cmd.before_help(t);
    }
    if let Some(t) = cmd.get_after_help().map(fix) {
        cmd = cmd.after_help(t);
    }
    if let Some(t) = cmd.get_after_long_help().map(fix) {
        cmd = cmd.after_long_help(t);
    }
    let subs: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in subs {
        cmd = cmd.mut_subcommand(name, as_plugin);
    }
    cmd
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
    use clap::FromArgMatches;
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    // Installed as `kubectl-vpnmig`, kubectl runs it as `kubectl vpnmig`: usage, examples
    // and errors say so (issue 10 item 6, issue 13 item 3).
    let plugin = is_plugin(args.first().map(OsString::as_os_str));
    let parsed = command(plugin)
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
        Command::Report(mut args) => {
            args.cluster = cli.cluster;
            report::run(&args)
        }
        Command::Schedule(mut args) => {
            args.cluster = cli.cluster;
            schedule::run(&args)
        }
        Command::ParseSas(args) => parse_sas::run(&args),
        Command::Completions(args) => {
            complete::run(&args, if plugin { "kubectl-vpnmig" } else { "vpnmig" })
        }
        Command::Man(args) => man::run(&args, command(plugin)),
        Command::Version(args) => version::run(&args),
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

#[cfg(test)]
mod tests {
    use super::{as_plugin_text, confirmed_by_flag, with_yes};

    #[test]
    fn a_run_confirmed_with_yes_is_advised_windows_with_yes() {
        assert_eq!(
            with_yes(
                "`vpnmig cutover acme -n t` resumes; `vpnmig rollback acme -n t -y` reverses; `vpnmig status -n t`"
            ),
            "`vpnmig cutover acme -n t --yes` resumes; `vpnmig rollback acme -n t -y` reverses; `vpnmig status -n t`"
        );
        let args = |a: &[&str]| a.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert!(confirmed_by_flag(
            args(&["vpnmig", "cutover", "acme", "--yes"]).into_iter()
        ));
        assert!(!confirmed_by_flag(
            args(&["vpnmig", "cutover", "acme"]).into_iter()
        ));
        assert!(!confirmed_by_flag(
            args(&["vpnmig", "plan", "--", "--yes"]).into_iter()
        ));
    }

    #[test]
    fn as_a_plugin_commands_are_named_kubectl_vpnmig() {
        assert_eq!(
            as_plugin_text("`vpnmig rollback acme -n t` restores it; run vpnmig status"),
            "`kubectl vpnmig rollback acme -n t` restores it; run kubectl vpnmig status"
        );
        // Not commands: the journal's name, a label value, a prefix; nor twice.
        for same in [
            "ConfigMap vpnmig-acme",
            "managed-by=vpnmig",
            "vpnmig: KUBECONFIG",
            "`kubectl vpnmig plan`",
        ] {
            assert_eq!(as_plugin_text(same), same);
        }
    }
}
