//! The window layer's error: what stopped a cutover or rollback, its exit code
//! (crate::exit), and a hint whose next action is data ([`Next`]), not a command line.
//! The engine names the action ("the same command again", "without `--window-end`");
//! `cli/` renders it from the process's own command line (`crate::error::command_line`),
//! so nothing below `cli/` reads argv.

use std::fmt::Display;

use crate::exit;

/// An error with its causes, on one line (`what: why: root cause`), for journals and
/// wrapped messages.
pub fn error_line(e: &dyn std::error::Error) -> String {
    let mut line = e.to_string();
    let mut source = e.source();
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

/// The next action a hint names, as data: `cli/` turns it into the command line to print.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// The same command again: without the flag `without` and its value (when set),
    /// then with the flags `add` where absent.
    Again {
        without: Option<&'static str>,
        add: Vec<&'static str>,
    },
    /// Another vpnmig command on one gateway (or, for `status`, one namespace).
    Run(Run),
}

/// A vpnmig command a hint names: `vpnmig VERB [NAME] -n NAMESPACE [FLAGS]` once `cli/`
/// renders it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    pub verb: Verb,
    /// The gateway; `None` for a command on the namespace (`status`).
    pub name: Option<String>,
    pub namespace: String,
    /// Flags after the namespace, each word apart (`["--out", "DIR", "--force"]`).
    pub flags: Vec<String>,
}

/// The subcommand of a [`Run`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Plan,
    Cutover,
    Rollback,
    Verify,
    Status,
    Report,
}

impl Verb {
    /// The subcommand's name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Plan => "plan",
            Verb::Cutover => "cutover",
            Verb::Rollback => "rollback",
            Verb::Verify => "verify",
            Verb::Status => "status",
            Verb::Report => "report",
        }
    }
}

impl Run {
    /// `vpnmig VERB [NAME] -n NS`.
    pub fn new(verb: Verb, name: Option<&str>, namespace: &str) -> Run {
        Run {
            verb,
            name: name.map(str::to_string),
            namespace: namespace.to_string(),
            flags: Vec::new(),
        }
    }

    /// `vpnmig plan NAME -n NS`.
    pub fn plan(name: &str, namespace: &str) -> Run {
        Run::new(Verb::Plan, Some(name), namespace)
    }

    /// `vpnmig cutover NAME -n NS`: the window goes on (resumes) from its journal.
    pub fn cutover(name: &str, namespace: &str) -> Run {
        Run::new(Verb::Cutover, Some(name), namespace)
    }

    /// `vpnmig rollback NAME -n NS`: the window goes back.
    pub fn rollback(name: &str, namespace: &str) -> Run {
        Run::new(Verb::Rollback, Some(name), namespace)
    }

    /// `vpnmig verify NAME -n NS`: every check of the gateway.
    pub fn verify(name: &str, namespace: &str) -> Run {
        Run::new(Verb::Verify, Some(name), namespace)
    }

    /// `vpnmig status -n NS`: the namespace's gateways and windows.
    pub fn status(namespace: &str) -> Run {
        Run::new(Verb::Status, None, namespace)
    }

    /// `vpnmig report NAME -n NS`: the change record of the gateway's window.
    pub fn report(name: &str, namespace: &str) -> Run {
        Run::new(Verb::Report, Some(name), namespace)
    }

    /// The same command with `flags` after the namespace.
    pub fn with(mut self, flags: &[&str]) -> Run {
        self.flags.extend(flags.iter().map(|f| f.to_string()));
        self
    }
}

impl Next {
    /// The same command again, with `add` flags added where absent.
    pub fn again(add: &[&'static str]) -> Next {
        Next::Again {
            without: None,
            add: add.to_vec(),
        }
    }

    /// The same command again without the flag `flag` and its value, then `add`.
    pub fn again_without(flag: &'static str, add: &[&'static str]) -> Next {
        Next::Again {
            without: Some(flag),
            add: add.to_vec(),
        }
    }
}

/// A hint: text with next actions in it, rendered by the caller that knows the command
/// line ([`Hint::render`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hint(Vec<Part>);

/// One piece of a [`Hint`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Text(String),
    Next(Next),
}

const OPEN: char = '\u{E000}';
const CLOSE: char = '\u{E001}';

impl Hint {
    /// The pieces in order.
    pub fn parts(&self) -> &[Part] {
        &self.0
    }

    /// The text, with each next action rendered by `next`.
    pub fn render(&self, next: &dyn Fn(&Next) -> String) -> String {
        self.0
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.clone(),
                Part::Next(n) => next(n),
            })
            .collect()
    }

    /// The same hint with `from` replaced by `to` in its text (never in a next action).
    pub fn replace_text(&self, from: &str, to: &str) -> Hint {
        Hint(
            self.0
                .iter()
                .map(|p| match p {
                    Part::Text(t) => Part::Text(t.replace(from, to)),
                    Part::Next(n) => Part::Next(n.clone()),
                })
                .collect(),
        )
    }

    fn push_text(&mut self, t: &str) {
        if t.is_empty() {
            return;
        }
        match self.0.last_mut() {
            Some(Part::Text(s)) => s.push_str(t),
            _ => self.0.push(Part::Text(t.to_string())),
        }
    }

    fn append(&mut self, other: &Hint) {
        for p in &other.0 {
            match p {
                Part::Text(t) => self.push_text(t),
                Part::Next(n) => self.0.push(Part::Next(n.clone())),
            }
        }
    }

    /// The hint [`hint!`] formatted: `text` with a marker where each of `pieces` goes.
    #[doc(hidden)]
    pub fn from_marked(text: &str, pieces: &[Hint]) -> Hint {
        let mut hint = Hint::default();
        let mut rest = text;
        while let Some(open) = rest.find(OPEN) {
            hint.push_text(&rest[..open]);
            let after = &rest[open + OPEN.len_utf8()..];
            let close = after.find(CLOSE).expect("a hint marker is closed");
            let index: usize = after[..close].parse().expect("a hint marker's index");
            hint.append(&pieces[index]);
            rest = &after[close + CLOSE.len_utf8()..];
        }
        hint.push_text(rest);
        hint
    }
}

impl From<String> for Hint {
    fn from(text: String) -> Hint {
        let mut hint = Hint::default();
        hint.push_text(&text);
        hint
    }
}

impl From<&str> for Hint {
    fn from(text: &str) -> Hint {
        Hint::from(text.to_string())
    }
}

impl From<Next> for Hint {
    fn from(next: Next) -> Hint {
        Hint(vec![Part::Next(next)])
    }
}

/// An argument of [`hint!`]: text (anything displayed) or a piece of a hint ([`Next`],
/// [`Hint`]), which goes in as data.
#[doc(hidden)]
pub trait HintArg {
    fn piece(self, pieces: &mut Vec<Hint>) -> String;
}

impl<T: Display + ?Sized> HintArg for &T {
    fn piece(self, _: &mut Vec<Hint>) -> String {
        self.to_string()
    }
}

impl HintArg for &Next {
    fn piece(self, pieces: &mut Vec<Hint>) -> String {
        pieces.push(Hint::from(self.clone()));
        format!("{OPEN}{}{CLOSE}", pieces.len() - 1)
    }
}

impl HintArg for &Hint {
    fn piece(self, pieces: &mut Vec<Hint>) -> String {
        pieces.push(self.clone());
        format!("{OPEN}{}{CLOSE}", pieces.len() - 1)
    }
}

impl HintArg for &Run {
    fn piece(self, pieces: &mut Vec<Hint>) -> String {
        Next::Run(self.clone()).piece(pieces)
    }
}

impl HintArg for &&Run {
    fn piece(self, pieces: &mut Vec<Hint>) -> String {
        (*self).piece(pieces)
    }
}

impl HintArg for &&Next {
    fn piece(self, pieces: &mut Vec<Hint>) -> String {
        (*self).piece(pieces)
    }
}

impl HintArg for &&Hint {
    fn piece(self, pieces: &mut Vec<Hint>) -> String {
        (*self).piece(pieces)
    }
}

/// The text that stands for `next` in a text a lower layer formats (the core's texts
/// take commands as `&str`), put back as data by [`Hint::from_marked`] with `pieces`.
pub fn mark(next: &Next, pieces: &mut Vec<Hint>) -> String {
    next.piece(pieces)
}

/// A [`Hint`] from a format string, like `format!`: positional arguments that are a
/// [`Next`] or a [`Hint`] go in as data, the others as their text.
macro_rules! hint {
    ($fmt:literal $(, $arg:expr)* $(,)?) => {{
        #[allow(unused_mut)]
        let mut pieces: Vec<$crate::window::error::Hint> = Vec::new();
        let text = format!($fmt $(, $crate::window::error::HintArg::piece(&$arg, &mut pieces))*);
        $crate::window::error::Hint::from_marked(&text, &pieces)
    }};
}
pub(crate) use hint;

/// An error that ends a window, with its exit code and an optional hint.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Input(#[from] crate::core::input::InputError),
    #[error(transparent)]
    Bundle(#[from] crate::bundle::BundleError),
    #[error(transparent)]
    Cluster(#[from] crate::cluster::KubeError),
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
        hint: Option<Hint>,
    },
}

impl Error {
    /// The process exit code for this error (crate::exit).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Input(_) => exit::INVALID_INPUT,
            Error::Bundle(crate::bundle::BundleError::Io { .. }) => exit::FAILURE,
            Error::Bundle(_) => exit::REFUSED,
            Error::Cluster(_) => exit::FAILURE,
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
    pub fn hint(&self) -> Option<Hint> {
        match self {
            Error::Input(e) => e.hint().map(Hint::from),
            Error::Cluster(e) => e.hint().map(Hint::from),
            Error::Bundle(e) => e.hint().map(Hint::from),
            Error::Lock(crate::cluster::lock::LockError::Held { .. }) => Some(hint!(
                "wait for that run to finish, then run the same command again (`{}`); if it is surely gone (its machine died), take the lock over: `{}`",
                Next::again(&[]),
                Next::again(&["--break-lock"])
            )),
            Error::Lock(crate::cluster::lock::LockError::Lost { .. }) => Some(
                "the lock was taken (--break-lock), deleted or expired: agree on who finishes the window before running cutover or rollback again; the journal says where it stands".into(),
            ),
            Error::Lock(crate::cluster::lock::LockError::Kube(e)) => e.hint().map(Hint::from),
            Error::Journal(crate::cluster::journal::ReadError::Invalid { namespace, name, .. }) => Some(hint!(
                "inspect it with `kubectl get configmap {name} -n {namespace} -o yaml` (the saved old manifest is under data.old-ipsecgateway.yaml); if it cannot be mended, save it, delete it, and roll back from the bundle: `vpnmig rollback GATEWAY -n {namespace} --plan DIR`"
            )),
            Error::Journal(crate::cluster::journal::ReadError::Kube(e)) => {
                e.hint().map(Hint::from)
            }
            Error::Journal(crate::cluster::journal::ReadError::Foreign { namespace, name, .. }) => Some(hint!(
                "nothing was changed: if it is not needed, delete or rename it (`kubectl get configmap {name} -n {namespace} -o yaml` shows what it is), then run the command again"
            )),
            Error::Journal(crate::cluster::journal::ReadError::Archive { namespace, name, gateway, window, .. }) => Some(hint!(
                "nothing was changed: `vpnmig report {gateway} -n {namespace} --window {window}` prints that record; to free the name, copy it under another name with its labels and data (`kubectl get configmap {name} -n {namespace} -o yaml`, a new metadata.name, `kubectl create -f -`), delete it, then run the command again (the record is found by its labels)"
            )),
            Error::Delete(e) => e.hint().map(Hint::from),
            Error::Stop { hint, .. } => hint.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hint_keeps_its_next_actions_as_data_in_order() {
        let inner = hint!("first `{}`", Next::again(&["--yes"]));
        let h = hint!(
            "{} then {}: `{}` ({})",
            inner,
            "text",
            Next::again_without("--window-end", &[]),
            7
        );
        assert_eq!(
            h.parts(),
            &[
                Part::Text("first `".into()),
                Part::Next(Next::again(&["--yes"])),
                Part::Text("` then text: `".into()),
                Part::Next(Next::again_without("--window-end", &[])),
                Part::Text("` (7)".into()),
            ]
        );
        let shown = h.render(&|n| match n {
            Next::Again { without: None, .. } => "A".into(),
            Next::Again { .. } => "B".into(),
            Next::Run(_) => "C".into(),
        });
        assert_eq!(shown, "first `A` then text: `B` (7)");
    }
}
