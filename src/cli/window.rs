//! What `cutover` and `rollback` share on the command line: the timeout flags, the
//! typed-name confirmation, and the frame that connects, handles signals and runs the
//! window engine (`crate::window`), whose events `output::events::LiveView` renders.

use std::io::IsTerminal;
use std::time::Duration;

use crate::cli::Error;
use crate::cli::cluster_args::parse_duration;
use crate::cluster::Cluster;
use crate::exit;
use crate::output::window::{self as render, Waits};
use crate::window::error::{Error as WindowError, Next, hint};
use crate::window::{Ask, Confirm, Summary};

/// The bound of each wait (DESIGN.md §4.5).
#[derive(clap::Args, Debug, Clone)]
pub struct Timeouts {
    /// How long the delete of a gateway may take: its finalizer unwind (children, then
    /// the OpenStack cleanup that disassociates the floating IP).
    #[arg(long, value_name = "DURATION", value_parser = positive_duration, default_value = "5m")]
    pub timeout_delete: Duration,
    /// How long to wait for FIPAttached=True, and again for Ready and every VPNPeer
    /// Authorized.
    #[arg(long, value_name = "DURATION", value_parser = positive_duration, default_value = "5m")]
    pub timeout_attach: Duration,
    /// How long to wait for every tunnel to be ESTABLISHED and verified (`swanctl
    /// --list-sas` in the gateway pod). The client's peer re-initiates on its own DPD or
    /// retry timer: allow for it.
    #[arg(long, value_name = "DURATION", value_parser = positive_duration, default_value = "5m")]
    pub timeout_tunnel: Duration,
}

/// `--gitops`: how a window handles a gateway Argo CD or Flux syncs (issue 11;
/// docs/gitops.md).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gitops {
    /// Suspend the Application / Kustomization for the window (Argo CD: its automated
    /// sync removed; Flux: spec.suspend), recorded in the journal, restored at the end.
    Pause,
    /// You suspended it yourself: vpnmig checks it is, and still stops on interference.
    Ignore,
    /// The new objects carry the old one's tracking labels and annotations (only when
    /// the repository defines them already, or the controller prunes them).
    KeepTracking,
    /// Restore a suspended owner although its status still lists the object replaced
    /// (you merged the repository change; Flux does not refresh a suspended inventory).
    Resume,
}

/// The `--gitops` values as the engine's options. Errors: `pause` with `ignore`.
pub fn gitops(values: &[Gitops]) -> Result<crate::window::GitopsOptions, String> {
    use crate::core::gitops::Mode;
    let has = |g| values.contains(&g);
    if has(Gitops::Pause) && has(Gitops::Ignore) {
        return Err("--gitops pause and --gitops ignore exclude each other: pause suspends the owner, ignore says you did".into());
    }
    Ok(crate::window::GitopsOptions {
        mode: if has(Gitops::Pause) {
            Some(Mode::Pause)
        } else if has(Gitops::Ignore) {
            Some(Mode::Ignore)
        } else {
            None
        },
        keep_tracking: has(Gitops::KeepTracking),
        resume: has(Gitops::Resume),
    })
}

/// `--window-end`: RFC 3339, or HH:MM in local time meaning the next such moment
/// (`core::guard::parse_window_end`).
pub fn window_end(s: &str) -> Result<crate::core::guard::WindowEnd, String> {
    crate::core::guard::parse_window_end(s, &jiff::Zoned::now())
}

/// A duration that is not zero (a wait of nothing would only ever time out) and at most
/// a week (a window is not longer; larger values overflow the clock's arithmetic).
fn positive_duration(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err("must be more than 0 (e.g. `90s`, `5m`)".into());
    }
    if d > Duration::from_secs(7 * 24 * 3600) {
        return Err("must be at most 7 days (168h)".into());
    }
    Ok(d)
}

impl Timeouts {
    /// As the summaries show them.
    pub fn waits(&self) -> Waits {
        Waits {
            delete: self.timeout_delete,
            attach: self.timeout_attach,
            tunnel: self.timeout_tunnel,
        }
    }

    /// As the engine bounds its waits.
    pub fn engine(&self) -> crate::window::Timeouts {
        crate::window::Timeouts {
            delete: self.timeout_delete,
            attach: self.timeout_attach,
            tunnel: self.timeout_tunnel,
        }
    }
}

/// Ask the user to type the gateway's name (DESIGN.md §5: prompts only on a TTY;
/// without one, a mutating command needs `--yes`; a dry run, which changes nothing,
/// asks only on a terminal). The prompt reads on a blocking thread
/// so that Ctrl-C still ends the run at once.
pub async fn confirm(
    name: &str,
    yes: bool,
    dry_run: bool,
    action: &str,
) -> Result<(), WindowError> {
    if yes {
        return Ok(());
    }
    let tty = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if dry_run && !tty {
        // Nothing will change: a script's dry run needs no confirmation.
        crate::output::say(
            "dry run: no terminal, so no prompt (a real run would ask, or need --yes)",
        );
        return Ok(());
    }
    if !tty {
        return Err(WindowError::Stop {
            code: exit::REFUSED,
            message: format!(
                "no terminal to confirm on: refusing to {action} {name} without --yes"
            ),
            hint: Some("read the summary above, then run again with --yes".into()),
        });
    }
    let prompt = if dry_run {
        format!("(dry run: nothing will change) To {action} {name}, type its name")
    } else {
        format!("To {action} {name}, type its name")
    };
    let typed = tokio::task::spawn_blocking(move || {
        dialoguer::Input::<String>::new()
            .with_prompt(prompt)
            .allow_empty(true)
            .interact_text_on(&dialoguer::console::Term::stderr())
    })
    .await
    .expect("the prompt does not panic")
    .map_err(|e| {
        let dialoguer::Error::IO(io) = &e;
        // Ctrl-C at the prompt (issue 10 item 3): a cancellation, not a refusal.
        if io.kind() == std::io::ErrorKind::Interrupted {
            WindowError::Stop {
                code: exit::INTERRUPTED,
                message: format!("cancelled at the prompt: nothing was changed ({name})"),
                hint: None,
            }
        } else {
            WindowError::Stop {
                code: exit::REFUSED,
                message: format!("the confirmation could not be read: {e}; nothing was changed"),
                hint: Some(hint!(
                    "read the summary, then run it again with --yes: `{}`",
                    Next::again(&["--yes"])
                )),
            }
        }
    })?;
    if typed.trim() != name {
        return Err(WindowError::Stop {
            code: exit::REFUSED,
            message: format!(
                "typed `{}`, not `{name}`: nothing was changed",
                typed.trim()
            ),
            hint: None,
        });
    }
    Ok(())
}

/// The typed-name confirmation: the summary of what will happen on stderr, then the
/// prompt (or `--yes`).
pub struct Prompt {
    pub yes: bool,
    pub waits: Waits,
}

impl Confirm for Prompt {
    async fn confirm(&mut self, ask: Ask) -> Result<(), WindowError> {
        let summary = match &ask.summary {
            Summary::Cutover {
                context,
                plan,
                detach,
                out_dir,
            } => render::cutover_summary(context, plan, *detach, out_dir, &self.waits),
            Summary::Resume { context, journal } => {
                render::resume_summary(context, journal, &self.waits)
            }
            Summary::Forward { context, journal } => {
                render::forward_summary(context, journal, &self.waits)
            }
            Summary::Rollback {
                context,
                journal,
                peers,
            } => render::rollback_summary(context, journal, peers.as_deref(), &self.waits),
        };
        crate::output::say(summary.trim_end_matches('\n'));
        confirm(&ask.gateway, self.yes, ask.dry_run, ask.action).await
    }
}

/// Connect and say where, require the operator, then run the engine (`flow`) with the
/// signals that interrupt it; the runtime is dropped without waiting for a prompt still
/// blocked on the terminal (after Ctrl-C).
pub fn run<T>(
    cluster_args: &crate::cli::cluster_args::ClusterArgs,
    flow: impl for<'a> AsyncFnOnce(&'a Cluster) -> Result<T, Error>,
) -> Result<T, Error> {
    let rt = crate::cli::runtime()?;
    let out = rt.block_on(async {
        let cluster = Cluster::connect(&cluster_args.options())
            .await
            .map_err(|e| crate::window::before_any_change(e.into()))?;
        crate::output::say(&cluster.banner(false));
        cluster
            .require_operator()
            .await
            .map_err(|e| crate::window::before_any_change(e.into()))?;
        flow(&cluster).await
    });
    rt.shutdown_background();
    out
}

/// Resolves when the run is to stop: Ctrl-C, SIGTERM (a job runner, `timeout`) or SIGHUP
/// (a dropped SSH session), to the interruption that stops it (the engine releases the
/// lock and says how to go on). The handlers are installed when it is first polled: by
/// the engine, once the lock is held.
pub async fn interrupted() -> WindowError {
    use tokio::signal::unix::{SignalKind, signal};
    let (mut term, mut hup) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) {
        (Ok(term), Ok(hup)) => (term, hup),
        (Err(e), _) | (_, Err(e)) => {
            return WindowError::Stop {
                code: exit::FAILURE,
                message: format!("cannot handle SIGTERM/SIGHUP: {e}"),
                hint: None,
            };
        }
    };
    let how = tokio::select! {
        _ = tokio::signal::ctrl_c() => "SIGINT",
        _ = term.recv() => "SIGTERM",
        _ = hup.recv() => "SIGHUP",
    };
    WindowError::Stop {
        code: exit::INTERRUPTED,
        message: format!("interrupted ({how})"),
        hint: None,
    }
}
