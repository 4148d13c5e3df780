//! Unified diffs of target objects against a previous bundle (like `kubectl diff`).

use similar::TextDiff;

use crate::output::style::{ADDED, DIM, HUNK, REMOVED, paint};
use crate::output::width::wrap_lines;

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
        self.render_width(usize::MAX)
    }

    /// [`Self::render`] in lines of at most `width` columns: a long line continues on
    /// the next with its own diff mark, two columns deeper than its YAML indent (how
    /// YAML continues a plain value), so every character is still there.
    pub fn render_width(&self, width: usize) -> String {
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
            let style = match line.as_bytes().first() {
                _ if line.starts_with("---") || line.starts_with("+++") => Some(DIM),
                Some(b'@') => Some(HUNK),
                Some(b'+') => Some(ADDED),
                Some(b'-') => Some(REMOVED),
                _ => None,
            };
            let pieces = if line.chars().count() <= width {
                vec![line.to_string()]
            } else {
                let mark = line.get(..1).unwrap_or_default();
                let body = line.get(1..).unwrap_or_default();
                let indent = body.len() - body.trim_start().len();
                let first = format!("{mark}{}", &body[..indent]);
                let rest = format!("{mark}{}", " ".repeat(indent + 2));
                wrap_lines(body.trim_start(), width, &first, &rest)
            };
            for piece in pieces {
                match style {
                    Some(s) => out.push_str(&paint(s, piece)),
                    None => out.push_str(&piece),
                }
                out.push('\n');
            }
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
    fn long_lines_continue_under_their_yaml_indent() {
        let d = ObjectDiff {
            object: "VPNGateway/acme".into(),
            before: None,
            after: Some(
                "metadata:\n  annotations:\n    vpnmig.bnerd.net/migrated-from: ipsecgateways.ipsec.bnerd.net/acme\n".into(),
            ),
        };
        let text = anstream::adapter::strip_str(&d.render_width(50)).to_string();
        assert!(
            text.ends_with(
                "+    vpnmig.bnerd.net/migrated-from:\n+      ipsecgateways.ipsec.bnerd.net/acme\n"
            ),
            "{text}"
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
