//! What a check says: its [`Severity`], its [`Outcome`], and for every problem a
//! [`Finding`] naming the object, the field path, the value seen, the value wanted and the
//! command that fixes it. Shared by every rule that judges a plan (`core::checks`,
//! `core::limits`, `core::live`), so that none of them imports another for its vocabulary.
//! Pure.
//!
//! Layer 2 (rules): imports only from layers 0 to 2; see docs/architecture.md.

use serde::Serialize;

/// How bad a failed check is.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The cutover must not run.
    Blocker,
    /// Worth reading; does not stop a cutover.
    Warning,
}

/// Outcome of one check.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Pass,
    Fail,
    /// Could not be evaluated because an earlier check failed (see `skipped`).
    Skipped,
}

/// One problem found by a check.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// `Kind namespace/name` of the object the field is in.
    pub object: String,
    /// JSON path of the field.
    pub path: String,
    pub seen: String,
    pub wanted: String,
    pub message: String,
    /// A command or step that fixes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// The result of one check.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct CheckResult {
    pub id: &'static str,
    pub severity: Severity,
    /// What the check makes sure of, one line.
    pub title: &'static str,
    pub outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
}

impl CheckResult {
    /// Whether this result stops a cutover.
    pub fn blocks(&self) -> bool {
        self.severity == Severity::Blocker && self.outcome == Outcome::Fail
    }
}

pub(crate) fn finding(
    object: &str,
    path: impl Into<String>,
    seen: impl Into<String>,
    wanted: impl Into<String>,
    message: impl Into<String>,
    fix: Option<String>,
) -> Finding {
    Finding {
        object: object.to_string(),
        path: path.into(),
        seen: seen.into(),
        wanted: wanted.into(),
        message: message.into(),
        fix,
    }
}

/// A check's result from what it found: no findings pass, findings fail, `Err(why)`
/// means it could not be evaluated.
pub fn result(
    id: &'static str,
    severity: Severity,
    title: &'static str,
    found: Result<Vec<Finding>, String>,
) -> CheckResult {
    let (outcome, skipped, findings) = match found {
        Ok(f) if f.is_empty() => (Outcome::Pass, None, f),
        Ok(f) => (Outcome::Fail, None, f),
        Err(why) => (Outcome::Skipped, Some(why), Vec::new()),
    };
    CheckResult {
        id,
        severity,
        title,
        outcome,
        skipped,
        findings,
    }
}
