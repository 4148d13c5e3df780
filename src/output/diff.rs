//! Unified diffs of target objects against a previous bundle (like `kubectl diff`).

use similar::TextDiff;

use crate::output::style::{ADDED, DIM, HUNK, REMOVED, paint};

/// One object's change, as YAML before and after (`None`: it did not / will not exist).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectDiff {
    /// `Kind/name`.
    pub object: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

impl ObjectDiff {
    /// Whether anything changed.
    pub fn changed(&self) -> bool {
        self.before != self.after
    }

    /// The unified diff, three lines of context, coloured; empty when nothing changed.
    pub fn render(&self) -> String {
        if !self.changed() {
            return String::new();
        }
        let (old, new) = (
            self.before.as_deref().unwrap_or(""),
            self.after.as_deref().unwrap_or(""),
        );
        let a = if self.before.is_some() {
            format!("a/{}", self.object)
        } else {
            "/dev/null".into()
        };
        let b = if self.after.is_some() {
            format!("b/{}", self.object)
        } else {
            "/dev/null".into()
        };
        let text = TextDiff::from_lines(old, new)
            .unified_diff()
            .context_radius(3)
            .header(&a, &b)
            .to_string();
        let mut out = String::new();
        for line in text.lines() {
            let styled = match line.as_bytes().first() {
                _ if line.starts_with("---") || line.starts_with("+++") => paint(DIM, line),
                Some(b'@') => paint(HUNK, line),
                Some(b'+') => paint(ADDED, line),
                Some(b'-') => paint(REMOVED, line),
                _ => line.to_string(),
            };
            out.push_str(&styled);
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_against_nothing_adds_every_line() {
        let d = ObjectDiff {
            object: "VPNPeer/acme".into(),
            before: None,
            after: Some("a: 1\nb: 2\n".into()),
        };
        let text = anstream::adapter::strip_str(&d.render()).to_string();
        assert_eq!(
            text,
            "--- /dev/null\n+++ b/VPNPeer/acme\n@@ -0,0 +1,2 @@\n+a: 1\n+b: 2\n"
        );
    }

    #[test]
    fn unchanged_objects_render_nothing() {
        let d = ObjectDiff {
            object: "x".into(),
            before: Some("a: 1\n".into()),
            after: Some("a: 1\n".into()),
        };
        assert!(!d.changed());
        assert_eq!(d.render(), "");
    }
}
