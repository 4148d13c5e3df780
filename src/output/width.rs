//! How wide text output may be, and wrapping to it (issue 10 item 5).
//!
//! The width is `COLUMNS` when it is set (tests, `COLUMNS=80 vpnmig plan …`), else the
//! terminal's when stdout is one, else [`UNKNOWN`]: a file, a pipe or a ticket keeps
//! every line at most 100 columns. Wrapping never drops a character: lines break at
//! spaces, and a word longer than a whole line (a fingerprint, a long path) is split
//! across lines, preferably after `/ : . , -`, so an address, a CIDR, an identity or a
//! fingerprint is always there to copy, whole.

/// The width when neither `COLUMNS` nor a terminal says.
pub const UNKNOWN: usize = 100;
/// Narrower than this nothing reads well; `COLUMNS=10` is taken as this.
pub const MIN: usize = 40;

/// The width of text written to stdout now.
pub fn detect() -> usize {
    choose(
        std::env::var("COLUMNS").ok().as_deref(),
        terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| usize::from(w.0)),
    )
}

/// The width of text written to stderr now (progress, summaries, errors): `COLUMNS`, else
/// stderr's terminal, else [`UNKNOWN`]. Stderr, not stdout: `vpnmig cutover -o json > f`
/// still shows its progress on the terminal at the terminal's width.
pub fn detect_stderr() -> usize {
    choose(
        std::env::var("COLUMNS").ok().as_deref(),
        terminal_size::terminal_size_of(std::io::stderr()).map(|(w, _)| usize::from(w.0)),
    )
}

/// `COLUMNS` (when it is a positive number) wins over the terminal; neither: [`UNKNOWN`].
pub fn choose(columns: Option<&str>, terminal: Option<usize>) -> usize {
    columns
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
        .or(terminal.filter(|&c| c > 0))
        .unwrap_or(UNKNOWN)
        .max(MIN)
}

/// The columns `s` takes on a terminal: ANSI escape sequences take none.
pub fn visible(s: &str) -> usize {
    units(s).iter().filter(|u| !u.starts_with('\x1b')).count()
}

/// `s` as characters and whole escape sequences (`ESC [ … final`), which never split.
fn units(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut i = 0;
    let b = s.as_bytes();
    while i < s.len() {
        let start = i;
        if b[i] == 0x1b && b.get(i + 1) == Some(&b'[') {
            i += 2;
            while i < s.len() && !(0x40..=0x7e).contains(&b[i]) {
                i += 1;
            }
            i = (i + 1).min(s.len());
        } else {
            i += s[i..].chars().next().map_or(1, char::len_utf8);
        }
        out.push(&s[start..i]);
    }
    out
}

/// `text` (one line) in lines of at most `width` columns, each ending in `\n`: the first
/// starts with `first`, the others with `rest` (their widths count). Breaks at spaces
/// (runs of spaces inside a line are kept, so aligned columns stay aligned); a word too
/// long for a line is split, never cut.
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::new();
    for line in wrap_lines(text, width, first, rest) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Each line of `text` in lines of at most `width` columns, its continuations indented
/// under where its text starts (DESIGN.md §5: stderr keeps to the width as stdout does):
/// after a label and its gap (`  delete     IPsecGateway …`), after `error: `, `hint: `,
/// `note: `, after an elapsed time (`    [2.1s] …`), after a mark (`✓ `, `! `), else two
/// columns in. Blank lines and lines that fit stay as they are.
pub fn hanging(text: &str, width: usize) -> String {
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if visible(body) <= width {
            out.push_str(line);
            continue;
        }
        let at = indent_of(body).min(width / 2);
        let (head, rest) = split_at_column(body, at);
        let lines = wrap_lines(rest, width, head, &" ".repeat(at));
        out.push_str(&lines.join("\n"));
        out.push_str(nl);
    }
    out
}

/// The column where `line`'s text starts, for its continuations (see [`hanging`]).
fn indent_of(line: &str) -> usize {
    let plain: String = units(line)
        .into_iter()
        .filter(|u| !u.starts_with('\x1b'))
        .collect();
    let chars: Vec<char> = plain.chars().collect();
    let lead = chars.iter().take_while(|c| **c == ' ').count();
    let word_end = (lead..chars.len())
        .find(|&i| chars[i] == ' ')
        .unwrap_or(chars.len());
    let word: String = chars[lead..word_end].iter().collect();
    let gap = (word_end..chars.len())
        .take_while(|&i| chars[i] == ' ')
        .count();
    let after = word_end + gap;
    if word.starts_with('[') && word.ends_with(']')
        || word.ends_with(':')
        || word.chars().count() == 1
    {
        after
    } else if gap >= 2 {
        // A label and its column (`  delete     …`).
        after
    } else {
        lead + 2
    }
}

/// `line` cut after `col` visible columns (escape sequences never split).
fn split_at_column(line: &str, col: usize) -> (&str, &str) {
    let mut cols = 0;
    let mut end = 0;
    for unit in units(line) {
        if cols == col && !unit.starts_with('\x1b') {
            break;
        }
        cols += usize::from(!unit.starts_with('\x1b'));
        end += unit.len();
    }
    line.split_at(end)
}

/// [`wrap`], as lines without their `\n`.
pub fn wrap_lines(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = first.to_string();
    // Nothing but the prefix on `line` yet. A prefix that ends inside a word (the
    // first two columns of `no vouch …`: `hanging` cuts a line whose first word is
    // short there) is text: the gap after it is kept ("novouch" was printed).
    let mut fresh = first.is_empty() || first.ends_with(char::is_whitespace);
    let mut queue: std::collections::VecDeque<Token> = tokens(text).into();
    while let Some(Token { gap, word, span }) = queue.pop_front() {
        let gap_w = if fresh { 0 } else { gap.len() };
        if visible(&line) + gap_w + visible(word) <= width {
            if !fresh {
                line.push_str(gap);
            }
            line.push_str(word);
            fresh = false;
            continue;
        }
        // A command too long for a whole line goes on lines of its own as the shell reads
        // it back (`wrap_command`: ` \` continuations, a quoted JSON patch broken after
        // its commas), never broken at a space of a quoted argument or inside a value.
        if span && visible(rest) + visible(word) > width && command_words(word).len() > 1 {
            if !fresh {
                lines.push(
                    std::mem::replace(&mut line, rest.to_string())
                        .trim_end()
                        .to_string(),
                );
            }
            let text = wrap_command(word, width, rest);
            let mut cmd: Vec<String> = text.lines().map(str::to_string).collect();
            // The first line continues the line's prefix (a label such as `fix: `).
            if fresh && let Some(first) = cmd.first_mut() {
                *first = format!("{line}{}", &first[rest.len()..]);
            }
            lines.extend(cmd);
            line = rest.to_string();
            fresh = true;
            continue;
        }
        // A word that fits on a line of its own goes there, even from a line holding only
        // a label (`  spec     ` before a fingerprint).
        if !fresh || (!line.trim().is_empty() && visible(word) <= width) {
            lines.push(
                std::mem::replace(&mut line, rest.to_string())
                    .trim_end()
                    .to_string(),
            );
        }
        // A word that fits the width but not after the indent takes less indent: an
        // address or a fingerprint is split only when no line could hold it.
        if visible(&line) + visible(word) > width
            && visible(word) <= width
            && line.trim().is_empty()
        {
            line = " ".repeat(width - visible(word));
        }
        // The word alone on a line, split while it is longer than the line.
        let mut word = word;
        loop {
            let room = width.saturating_sub(visible(&line)).max(1);
            if visible(word) <= room {
                line.push_str(word);
                fresh = false;
                break;
            }
            let (head, tail) = split_word(word, room);
            line.push_str(head);
            lines.push(std::mem::replace(&mut line, rest.to_string()));
            word = tail;
        }
    }
    if !fresh || lines.is_empty() {
        lines.push(line.trim_end().to_string());
    }
    lines
}

/// A word of prose, or a span that breaks only when it must (`span`): text in backticks,
/// or a bare `kubectl …` command up to the end, a `  #` comment or a `; `.
struct Token<'a> {
    /// The spaces before it (kept as they are when it stays on the line).
    gap: &'a str,
    word: &'a str,
    span: bool,
}

fn tokens(text: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let (mut i, mut gap_start) = (0, 0);
    while i < b.len() {
        if b[i] == b' ' {
            i += 1;
            continue;
        }
        let start = i;
        let mut span = false;
        if b[i] == b'`'
            && let Some(close) = text[i + 1..].find('`')
        {
            i += close + 2;
            span = true;
        } else if text[i..].starts_with("kubectl ") {
            let rest = &text[i..];
            let end = [rest.find("  #"), rest.find("; "), rest.find('`')]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(rest.len());
            i += rest[..end].trim_end().len();
            span = true;
        }
        // The rest of the word (punctuation after a span, or a plain word).
        while i < b.len() && b[i] != b' ' {
            i += 1;
        }
        out.push(Token {
            gap: &text[gap_start..start],
            word: &text[start..i],
            span,
        });
        gap_start = i;
    }
    out
}

/// A command's words: split at spaces outside single or double quotes.
fn command_words(cmd: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut quote: Option<char> = None;
    let mut start = None;
    for (i, c) in cmd.char_indices() {
        match (quote, c) {
            (None, ' ') => {
                if let Some(s) = start.take() {
                    out.push(&cmd[s..i]);
                }
                continue;
            }
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            _ => {}
        }
        start.get_or_insert(i);
    }
    if let Some(s) = start {
        out.push(&cmd[s..]);
    }
    out
}

/// The longest head of `word` that fits in `room` columns, ending after one of `/ : . , -`
/// when that keeps at least half the room, and the tail.
fn split_word(word: &str, room: usize) -> (&str, &str) {
    let u = units(word);
    let mut cols = 0;
    let mut end = 0; // byte offset
    let mut soft = None;
    for unit in &u {
        let w = usize::from(!unit.starts_with('\x1b'));
        if cols + w > room {
            break;
        }
        cols += w;
        end += unit.len();
        if matches!(*unit, "/" | ":" | "." | "," | "-") && cols * 2 >= room {
            soft = Some(end);
        }
    }
    let end = if end >= word.len() {
        end
    } else {
        soft.unwrap_or(end)
    };
    word.split_at(end.max(u.first().map_or(0, |f| f.len())))
}

/// A shell command in lines of at most `width` columns that paste as one command: breaks
/// at spaces outside quotes, each broken line ending in ` \`, continuations indented
/// four more than `indent`. A word longer than a line (a long path) continues with a `\`
/// right after it and its rest at the start of the next line, which the shell joins
/// back; a quoted word is never broken (the shell would keep the break).
pub fn wrap_command(cmd: &str, width: usize, indent: &str) -> String {
    let words = command_words(cmd);
    let cont = format!("{indent}    ");
    let mut out = String::new();
    let mut line = indent.to_string();
    let mut fresh = true;
    for (i, w) in words.iter().enumerate() {
        let last = i + 1 == words.len();
        // Room for " \" unless this word ends the command.
        let need = visible(&line) + usize::from(!fresh) + visible(w) + if last { 0 } else { 2 };
        if !fresh && need > width {
            out.push_str(&line);
            out.push_str(" \\\n");
            line = cont.clone();
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        // A word that fits the width but not after the indent takes less indent (a quoted
        // argument cannot be broken; the shell ignores the spaces before it).
        if line.trim().is_empty() && visible(&line) + visible(w) > width && visible(w) <= width {
            line = " ".repeat(width - visible(w));
        }
        // A single-quoted JSON document (`kubectl patch -p '[…]'`) too long for the line
        // breaks after its commas: inside the quotes the line break is part of the
        // argument, and JSON takes it as whitespace.
        if visible(&line) + visible(w) + if last { 0 } else { 2 } > width
            && let Some(pieces) = json_pieces(w)
        {
            for p in pieces {
                if !line.trim().is_empty() && visible(&line) + visible(p) + 2 > width {
                    out.push_str(&line);
                    out.push('\n');
                    line = cont.clone();
                }
                line.push_str(p);
            }
            fresh = false;
            continue;
        }
        let mut w: &str = w;
        while visible(&line) + visible(w) + 2 > width && !w.contains(['\'', '"']) {
            let room = width.saturating_sub(visible(&line) + 1);
            if room == 0 {
                break;
            }
            let (head, tail) = split_word(w, room);
            out.push_str(&line);
            out.push_str(head);
            out.push_str("\\\n");
            line = String::new();
            w = tail;
        }
        line.push_str(w);
        fresh = false;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// `'{…}'` or `'[…]'` cut after each `,`, `{`, `[` and `:` outside JSON strings (where
/// JSON allows whitespace; the pieces, in order), or `None` for any other word.
fn json_pieces(word: &str) -> Option<Vec<&str>> {
    let inner = word.strip_prefix('\'')?.strip_suffix('\'')?;
    if !(inner.starts_with('{') || inner.starts_with('[')) || inner.contains('\'') {
        return None;
    }
    let mut pieces = Vec::new();
    let (mut start, mut in_string, mut escaped) = (0, false, false);
    for (i, c) in word.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            ',' | '{' | '[' | ':' if !in_string => {
                pieces.push(&word[start..=i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    pieces.push(&word[start..]);
    Some(pieces)
}

/// Column widths for `avail` columns of content: each its `natural` width, then the
/// widest narrowed a column at a time, none below its `min` (its longest word) unless
/// even that does not fit, when the widest is narrowed further.
pub fn fit(natural: &[usize], min: &[usize], avail: usize) -> Vec<usize> {
    let mut w = natural.to_vec();
    while w.iter().sum::<usize>() > avail {
        let pick = (0..w.len())
            .filter(|&i| w[i] > min[i].min(natural[i]))
            .max_by_key(|&i| w[i])
            .or_else(|| (0..w.len()).filter(|&i| w[i] > 4).max_by_key(|&i| w[i]));
        match pick {
            Some(i) => w[i] -= 1,
            None => break,
        }
    }
    w
}

/// One row of cells in columns of `widths`, each cell wrapped in its column, two spaces
/// between columns and one before the first (comfy-table's look).
pub fn grid(cells: &[&str], widths: &[usize]) -> String {
    let cols: Vec<Vec<String>> = cells
        .iter()
        .zip(widths)
        .map(|(c, &w)| wrap_lines(c, w.max(1), "", ""))
        .collect();
    let height = cols.iter().map(Vec::len).max().unwrap_or(1);
    let mut out = String::new();
    for i in 0..height {
        let mut line = String::from(" ");
        for (c, col) in cols.iter().enumerate() {
            let cell = col.get(i).map_or("", String::as_str);
            if c > 0 {
                line.push_str("  ");
            }
            line.push_str(cell);
            line.push_str(&" ".repeat(widths[c].saturating_sub(visible(cell))));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widest(s: &str) -> usize {
        s.lines().map(visible).max().unwrap_or(0)
    }

    #[test]
    fn columns_wins_then_the_terminal_then_100() {
        assert_eq!(choose(Some("80"), Some(200)), 80);
        assert_eq!(choose(None, Some(200)), 200);
        assert_eq!(choose(Some("wide"), None), UNKNOWN);
        assert_eq!(choose(Some("0"), None), UNKNOWN);
        assert_eq!(choose(None, None), UNKNOWN);
        assert_eq!(choose(Some("12"), None), MIN);
    }

    #[test]
    fn a_long_line_whose_first_word_is_short_keeps_its_first_space() {
        // One row per first word of two letters (the cut of `hanging` falls before the
        // space): never "novouch".
        for first in ["no", "an", "is", "it"] {
            let line = format!(
                "{first} vouch recorded for kustomization/acme -n flux-system: the window of tenant-acme/acme suspended it"
            );
            let s = hanging(&line, 40);
            assert!(s.starts_with(&format!("{first} vouch ")), "{s}");
            let words: Vec<&str> = s.split_whitespace().collect();
            assert_eq!(words, line.split_whitespace().collect::<Vec<_>>(), "{s}");
        }
    }

    #[test]
    fn wraps_at_spaces_with_a_hanging_indent() {
        let s = wrap("one two three four five six", 14, "  - ", "    ");
        assert_eq!(s, "  - one two\n    three four\n    five six\n");
    }

    #[test]
    fn a_word_longer_than_a_line_is_split_never_cut() {
        let fp = "sha256:3ac364af5c633b00704a204254f1dc471057c3b37b9f79380542f5350e2e7d84";
        let s = wrap(&format!("spec {fp}"), 40, "  ", "    ");
        assert!(widest(&s) <= 40, "{s}");
        let joined: String = s.split_whitespace().collect();
        assert_eq!(joined, format!("spec{fp}"));
    }

    #[test]
    fn a_word_that_fits_the_width_is_outdented_rather_than_split() {
        let s = wrap(
            "fix: '{\"floatingIP\":\"198.51.100.170\"}'",
            34,
            "      ",
            "        ",
        );
        assert!(s.contains("'{\"floatingIP\":\"198.51.100.170\"}'"), "{s}");
        assert!(widest(&s) <= 34, "{s}");
    }

    #[test]
    fn stderr_lines_hang_under_their_text() {
        let cases = [
            (
                "  delete     IPsecGateway acme (uid f6f54e4b-ff9f-4024-be05-96dbbeb6def5, generation 1): the tunnel goes down here",
                "             ",
            ),
            (
                "error: the live IPsecGateway tenant-acme/acme no longer matches the plan in plans/acme: nothing was changed",
                "       ",
            ),
            (
                "     [0.0s] peer acme IKE SA with fw.acme.example: no IKE SA with remote 'fw.acme.example' @ 203.0.113.10",
                "            ",
            ),
            (
                "! the PSK Secret acme-psk is owned by the old gateway and will be detached before the delete, as recorded",
                "  ",
            ),
        ];
        for (line, indent) in cases {
            let s = hanging(&format!("{line}\nshort\n"), 60);
            assert!(widest(&s) <= 60, "{s}");
            let lines: Vec<&str> = s.lines().collect();
            assert_eq!(*lines.last().unwrap(), "short");
            assert!(lines.len() > 2, "{s}");
            for cont in &lines[1..lines.len() - 1] {
                assert!(
                    cont.starts_with(indent) && !cont[indent.len()..].starts_with(' '),
                    "{s}"
                );
            }
            let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
            assert_eq!(words(&s), words(&format!("{line} short")));
        }
        // A command in backticks stays whole when it fits a line.
        let hint = "hint: plan again (`vpnmig plan acme -n tenant-acme --out plans/acme --force`: --force because the bundle records the old state), review the diff, then cut over";
        let s = hanging(hint, 100);
        assert!(widest(&s) <= 100, "{s}");
        assert!(
            s.contains("`vpnmig plan acme -n tenant-acme --out plans/acme --force`"),
            "{s}"
        );
    }

    #[test]
    fn escape_codes_take_no_room_and_are_never_split() {
        let red = "\x1b[31mBLOCKER\x1b[0m";
        assert_eq!(visible(red), 7);
        let s = wrap(&format!("{red} abc def"), 11, "", "");
        assert_eq!(s, format!("{red} abc\ndef\n"));
    }

    #[test]
    fn commands_in_prose_stay_on_one_line_when_they_fit() {
        let text = "not checked: Secret acme-psk is not in the input; `kubectl get ipsecgateway/acme secret/acme-psk -n tenant-acme -o yaml` exports both";
        let s = wrap(text, 100, "  - psk-secret  ", "                ");
        assert!(widest(&s) <= 100, "{s}");
        assert!(
            s.contains("`kubectl get ipsecgateway/acme secret/acme-psk -n tenant-acme -o yaml`"),
            "{s}"
        );
        // Too long for any line: it breaks at its spaces, not inside a word.
        let s = wrap(text, 50, "  ", "    ");
        assert!(widest(&s) <= 50, "{s}");
        assert!(s.contains("secret/acme-psk"), "{s}");
    }

    #[test]
    fn commands_wrap_outside_quotes_with_continuations() {
        let cmd = "kubectl patch ipsecgateway soylent -n tenant-soylent --type merge -p '{\"spec\": {\"endpoint\": 1}}'";
        let s = wrap_command(cmd, 40, "  ");
        assert!(widest(&s) <= 40, "{s}");
        assert!(s.contains("'{\"spec\": {\"endpoint\": 1}}'"), "{s}");
        let joined = s.replace(" \\\n", " ");
        let joined: Vec<&str> = joined.split_whitespace().collect();
        let orig: Vec<&str> = cmd.split_whitespace().collect();
        assert_eq!(joined, orig);
    }

    #[test]
    fn a_long_command_in_prose_reads_back_as_the_same_argv() {
        let text = r#"fix: by hand, before the delete: kubectl patch secret initech-psk -n tenant-initech --type json -p '[{"op":"test","path":"/metadata/ownerReferences/0/uid","value":"3b0e7a52-9c1d-4f8e-b6a2-41d5e7c90f11"},{"op":"remove","path":"/metadata/ownerReferences/0"}]'"#;
        for width in [60, 80, 100] {
            let s = wrap(text, width, "    ", "      ");
            assert!(widest(&s) <= width, "{s}");
            // The uid stays whole, and the command's lines end in ` \` but its last.
            assert!(s.contains("3b0e7a52-9c1d-4f8e-b6a2-41d5e7c90f11"), "{s}");
            let cmd_start = s.find("kubectl").unwrap();
            let shell = s[cmd_start..].replace(" \\\n", " ");
            let (head, patch) = shell.split_once('\'').unwrap();
            assert_eq!(
                head.split_whitespace().collect::<Vec<_>>(),
                "kubectl patch secret initech-psk -n tenant-initech --type json -p"
                    .split_whitespace()
                    .collect::<Vec<_>>(),
                "{s}"
            );
            let patch = patch.trim_end().trim_end_matches('\'');
            let parsed: serde_json::Value = serde_json::from_str(patch).unwrap();
            assert_eq!(parsed[0]["value"], "3b0e7a52-9c1d-4f8e-b6a2-41d5e7c90f11");
        }
    }

    #[test]
    fn a_quoted_json_patch_breaks_after_its_commas_inside_the_quotes() {
        let cmd = r#"kubectl patch secret initech-psk -n tenant-initech --type json -p '[{"op":"test","path":"/metadata/ownerReferences/0/uid","value":"3b0e7a52-9c1d-4f8e-b6a2-41d5e7c90f11"},{"op":"remove","path":"/metadata/ownerReferences/0"}]'"#;
        let s = wrap_command(cmd, 60, "  ");
        assert!(widest(&s) <= 60, "{s}");
        // What the shell passes: the lines joined (` \` removed); inside the quotes the
        // breaks stay, as whitespace the JSON parser skips.
        let shell = s.replace(" \\\n", " ");
        let patch = shell.split('\'').nth(1).unwrap();
        let parsed: serde_json::Value = serde_json::from_str(patch).unwrap();
        let want: serde_json::Value =
            serde_json::from_str(cmd.split('\'').nth(1).unwrap()).unwrap();
        assert_eq!(parsed, want);
        assert_eq!(
            shell
                .split('\'')
                .next()
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>(),
            cmd.split('\'')
                .next()
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_path_longer_than_a_line_continues_mid_word_for_the_shell() {
        let cmd =
            "kubectl apply -f /tmp/a-rather-long-directory-name/with/more/old-ipsecgateway.yaml";
        let s = wrap_command(cmd, 40, "  ");
        assert!(widest(&s) <= 40, "{s}");
        // What the shell reads: backslash-newline removed.
        let shell = s.replace("\\\n", "");
        assert_eq!(
            shell.split_whitespace().collect::<Vec<_>>(),
            cmd.split_whitespace().collect::<Vec<_>>()
        );
    }
}
