//! Rendering: each output format is its own renderer over the same plain structs
//! (`core::plan::Plan`). Text is for people (alignment, colour when the terminal takes
//! it); YAML is manifests for `kubectl apply -f -`; JSON is the stable plan document.

pub mod cluster;
pub mod dataplane;
pub mod diff;
pub mod events;
pub mod fleet;
pub mod manifest;
pub mod progress;
pub mod record;
pub mod repo;
pub mod style;
pub mod text;
pub mod verify;
pub mod wave;
pub mod width;
pub mod window;

/// `-o/--output`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// For people: header, pinned-values table, checks, diff, next steps.
    #[default]
    Text,
    /// The target manifests, ready for `kubectl apply -f -`.
    Yaml,
    /// The plan document (docs/plan-json.md), for scripts.
    Json,
}

/// Write `line` and a newline to stderr, each line at most as wide as stderr
/// ([`width::detect_stderr`]), continuations hanging under the text ([`width::hanging`]).
/// Every message of a run goes through here (progress, warnings, retries, summaries), so
/// a log or a ticket keeps to 100 columns (issue 10 item 5).
pub fn say(line: &str) {
    use std::io::Write;
    let text = width::hanging(line, width::detect_stderr());
    let _ = writeln!(anstream::stderr(), "{}", text.trim_end_matches('\n'));
}
