//! The error that ends a command or a window, with its exit code (crate::exit) and an
//! optional hint. Shared by the CLI and the window engine (`crate::window`), so the
//! engine's stops map to the same documented exit codes; `cli::Error` re-exports it.

use crate::exit;

/// An error with its causes, on one line (`what: why: root cause`), for journals and
/// wrapped messages.
pub fn error_line(e: &Error) -> String {
    let mut line = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let text = s.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = s.source();
    }
    line
}

/// An error that ends a command, with its exit code and an optional hint.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Input(#[from] crate::core::input::InputError),
    #[error(transparent)]
    Bundle(#[from] crate::bundle::BundleError),
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
    #[error(transparent)]
    Cluster(#[from] crate::cluster::KubeError),
    #[error("cannot write the output")]
    Write {
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a valid allowlist: {message}")]
    Allowlist { path: String, message: String },
    #[error(transparent)]
    Lock(#[from] crate::cluster::lock::LockError),
    #[error(transparent)]
    Journal(#[from] crate::cluster::journal::ReadError),
    #[error(transparent)]
    Delete(#[from] crate::cluster::delete::DeleteError),
    /// A cutover or rollback stopped: refused, blocked, timed out or interrupted.
    #[error("{message}")]
    Stop {
        code: i32,
        message: String,
        hint: Option<String>,
    },
}

impl Error {
    /// The process exit code for this error (crate::exit).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Input(_) | Error::Allowlist { .. } | Error::Sas { .. } => exit::INVALID_INPUT,
            Error::Bundle(crate::bundle::BundleError::Io { .. })
            | Error::Read { .. }
            | Error::WriteFile { .. }
            | Error::Write { .. }
            | Error::Cluster(_) => exit::FAILURE,
            Error::Bundle(_) => exit::REFUSED,
            Error::Lock(crate::cluster::lock::LockError::Kube(_)) | Error::Journal(_) => {
                exit::FAILURE
            }
            Error::Lock(_) => exit::REFUSED,
            Error::Delete(crate::cluster::delete::DeleteError::Refused { .. }) => exit::REFUSED,
            Error::Delete(_) => exit::FAILURE,
            Error::Stop { code, .. } => *code,
        }
    }

    /// What to do about it, rendered after the error as `hint: …`.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Input(e) => e.hint(),
            Error::Cluster(e) => e.hint(),
            Error::Sas { error, .. } => Some(error.hint()),
            Error::Bundle(e) => e.hint(),
            Error::Read { .. } | Error::WriteFile { .. } | Error::Write { .. } => None,
            Error::Allowlist { .. } => Some(
                "the file is a YAML mapping with two lists: `ike: [...]` and `esp: [...]`".into(),
            ),
            Error::Lock(crate::cluster::lock::LockError::Held { .. }) => Some(format!(
                "wait for that run to finish, then run the same command again (`{}`); if it is surely gone (its machine died), take the lock over: `{}`",
                again(&[]),
                again(&["--break-lock"])
            )),
            Error::Lock(crate::cluster::lock::LockError::Lost { .. }) => Some(
                "the lock was taken (--break-lock), deleted or expired: agree on who finishes the window before running cutover or rollback again; the journal says where it stands".into(),
            ),
            Error::Lock(crate::cluster::lock::LockError::Kube(e)) => e.hint(),
            Error::Journal(crate::cluster::journal::ReadError::Invalid { namespace, name, .. }) => Some(format!(
                "inspect it with `kubectl get configmap {name} -n {namespace} -o yaml` (the saved old manifest is under data.old-ipsecgateway.yaml); if it cannot be mended, save it, delete it, and roll back from the bundle: `vpnmig rollback GATEWAY -n {namespace} --plan DIR`"
            )),
            Error::Journal(crate::cluster::journal::ReadError::Kube(e)) => e.hint(),
            Error::Journal(crate::cluster::journal::ReadError::Foreign { namespace, name, .. }) => Some(format!(
                "nothing was changed: if it is not needed, delete or rename it (`kubectl get configmap {name} -n {namespace} -o yaml` shows what it is), then run the command again"
            )),
            Error::Delete(e) => e.hint(),
            Error::Stop { hint, .. } => hint.clone(),
        }
    }
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
