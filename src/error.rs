//! The CLI's error: the window's ([`crate::window::error::Error`]) and the CLI's own
//! (files, output, the allowlist, the SAs), each with its exit code (crate::exit) and
//! an optional hint. The window names its next action as data; [`command_line`] renders
//! it from this process's own command line, the only place that reads argv.
//! `cli::Error` re-exports it.

use crate::exit;
use crate::window::error::Next;

pub use crate::window::error::error_line;

/// An error that ends a command, with its exit code and an optional hint.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The window's error (also the cluster's, the journal's, the lock's and the input's).
    #[error(transparent)]
    Window(#[from] crate::window::error::Error),
    #[error("{path}: cannot read")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: cannot write")]
    WriteFile {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: {}", error.described())]
    Sas {
        file: String,
        error: crate::core::swanctl::SwanctlError,
    },
    #[error("cannot write the output")]
    Write {
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a valid allowlist: {message}")]
    Allowlist { path: String, message: String },
    /// A command stopped: refused, blocked or invalid.
    #[error("{message}")]
    Stop {
        code: i32,
        message: String,
        hint: Option<String>,
    },
}

/// The lower layers' errors reach the CLI through the window's.
macro_rules! through_window {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Error {
                Error::Window(e.into())
            }
        }
    )*};
}
through_window!(
    crate::bundle::BundleError,
    crate::core::input::InputError,
    crate::cluster::KubeError,
    crate::cluster::lock::LockError,
    crate::cluster::journal::ReadError,
    crate::cluster::delete::DeleteError
);

impl Error {
    /// The process exit code for this error (crate::exit).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Window(e) => e.exit_code(),
            Error::Allowlist { .. } | Error::Sas { .. } => exit::INVALID_INPUT,
            Error::Read { .. } | Error::WriteFile { .. } | Error::Write { .. } => exit::FAILURE,
            Error::Stop { code, .. } => *code,
        }
    }

    /// What to do about it, rendered after the error as `hint: …`, with the window's
    /// next actions as command lines ([`command_line`]).
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Window(e) => e.hint().map(|h| h.render(&command_line)),
            Error::Sas { error, .. } => Some(error.hint()),
            Error::Read { .. } | Error::WriteFile { .. } | Error::Write { .. } => None,
            Error::Allowlist { .. } => Some(
                "the file is a YAML mapping with two lists: `ike: [...]` and `esp: [...]`".into(),
            ),
            Error::Stop { hint, .. } => hint.clone(),
        }
    }
}

/// The command line of the next action `next`, from this process's own command line.
pub fn command_line(next: &Next) -> String {
    match next {
        Next::Again { without, add } => again_without(without.unwrap_or(""), add),
        Next::Run(run) => run_line(run),
    }
}

/// The command line of a [`crate::window::error::Run`]: `vpnmig VERB [NAME] -n NS [FLAGS]`.
pub fn run_line(run: &crate::window::error::Run) -> String {
    let mut words = vec!["vpnmig", run.verb.as_str()];
    words.extend(run.name.as_deref());
    words.extend(["-n", run.namespace.as_str()]);
    words.extend(run.flags.iter().map(String::as_str));
    words.join(" ")
}

/// This process's own command line as `vpnmig ARGS`, with `extra` flags added where
/// absent: what a hint that says "run it again" quotes, so every stop names a command
/// that works from the state it leaves (issue 14 item 6). An argument that a shell would
/// split or expand is single-quoted.
pub fn again(extra: &[&str]) -> String {
    again_without("", extra)
}

/// [`again`] without the flag `flag` and its value (`--flag V` or `--flag=V`), then
/// `extra`: the command line that leaves out one choice (`--window-end`).
pub fn again_without(flag: &str, extra: &[&str]) -> String {
    let mut args: Vec<String> = Vec::new();
    let mut skip = false;
    for a in std::env::args().skip(1) {
        if skip {
            skip = false;
            continue;
        }
        if !flag.is_empty() && a == flag {
            skip = true;
            continue;
        }
        if !flag.is_empty() && a.starts_with(&format!("{flag}=")) {
            continue;
        }
        args.push(a);
    }
    again_from(args, extra)
}

fn again_from(mut args: Vec<String>, extra: &[&str]) -> String {
    for e in extra {
        if !args.iter().any(|a| a == e) {
            args.push(e.to_string());
        }
    }
    let quoted: Vec<String> = args
        .iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect();
    format!("vpnmig {}", quoted.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::error::Run;

    /// Each next action a window names is printed as the command line that runs it.
    #[test]
    fn a_next_action_is_printed_as_its_command_line() {
        let rows = [
            (
                Run::cutover("acme", "tenant-acme"),
                "vpnmig cutover acme -n tenant-acme",
            ),
            (
                Run::rollback("acme", "tenant-acme").with(&["--accept-new-addresses"]),
                "vpnmig rollback acme -n tenant-acme --accept-new-addresses",
            ),
            (
                Run::plan("acme", "tenant-acme").with(&["--out", "plans/acme", "--force"]),
                "vpnmig plan acme -n tenant-acme --out plans/acme --force",
            ),
            (Run::verify("acme", "t"), "vpnmig verify acme -n t"),
            (
                Run::status("t").with(&["-o", "wide"]),
                "vpnmig status -n t -o wide",
            ),
            (
                Run::report("acme", "t").with(&["--out", "acme-window-1.md"]),
                "vpnmig report acme -n t --out acme-window-1.md",
            ),
        ];
        for (run, line) in rows {
            assert_eq!(command_line(&Next::Run(run.clone())), line, "{run:?}");
        }
    }
}
