//! What a run of vpnmig produced, and how tests read its messages: stderr keeps every
//! line within the width (100 columns without a terminal, issue 10 item 5), so a message
//! may continue on the lines below; tests compare its words, not where it was wrapped.

/// What a run of vpnmig produced.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// `text` with every run of whitespace (line breaks and wrapping indents included) as one
/// space, and shell continuations joined.
pub fn flat(text: &str) -> String {
    // A command wrapped for the shell (` \` at a line's end) reads back as one line.
    text.replace(" \\\n", " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

impl Run {
    /// Whether stderr says `words`, in this order, wherever its lines were wrapped.
    pub fn says(&self, words: &str) -> bool {
        flat(&self.stderr).contains(&flat(words))
    }

    /// The `error:` message (its wrapped lines joined), without the label.
    pub fn error(&self) -> Option<String> {
        labelled(&self.stderr, "error: ")
    }

    /// The `hint:` (its wrapped lines joined), without the label.
    pub fn hint(&self) -> Option<String> {
        labelled(&self.stderr, "hint: ")
    }
}

/// The text after the first line starting with `label`, with the lines that continue it
/// (indented by exactly the label's width) joined back.
pub fn labelled(text: &str, label: &str) -> Option<String> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with(label));
    let mut out = lines.next()?[label.len()..].to_string();
    let indent = " ".repeat(label.len());
    for l in lines {
        match l.strip_prefix(&indent) {
            // A shell continuation (` \`) inside it reads back as one line too.
            Some(rest) if !rest.starts_with(' ') || out.ends_with(" \\") => {
                if let Some(cut) = out.strip_suffix(" \\") {
                    out.truncate(cut.len());
                }
                out.push(' ');
                out.push_str(rest.trim_start());
            }
            _ => break,
        }
    }
    Some(out)
}

/// Every `vpnmig …` command `text` quotes in backticks, as argv without `vpnmig`, in
/// order (a command wrapped across lines is read whole).
pub fn advised(text: &str) -> Vec<Vec<String>> {
    flat(text)
        .split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|quoted| quoted.strip_prefix("vpnmig "))
        .map(|c| c.split_whitespace().map(str::to_string).collect())
        .collect()
}
