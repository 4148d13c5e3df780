//! The change record (`core::record::Record`) as Markdown, HTML or JSON (`vpnmig report`;
//! issue 12 item 4; docs/report.md). Both document renderers walk the same sections
//! through [`Doc`], so Markdown and HTML say the same things in the same order.
//!
//! HTML: one self-contained page, inline CSS, no script, every value escaped (a label
//! or a message from the cluster is text, never markup).

use std::time::Duration;

use crate::core::dataplane::{CameUpBy, Outage};
use crate::core::journal::{ChainStatus, Phase};
use crate::core::record::{Outcome, Record, Step};
use crate::output::dataplane::verdict;
use crate::output::progress::elapsed;

/// `-o` of `vpnmig report`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// Markdown, for a change ticket or a wiki.
    #[default]
    Md,
    /// The record document (docs/report.md), for scripts and archives.
    Json,
    /// One self-contained HTML page (no script), for a browser or a mail.
    Html,
}

impl Format {
    /// The format a file name asks for (`.md`, `.json`, `.html`/`.htm`).
    pub fn from_path(path: &std::path::Path) -> Option<Format> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "md" | "markdown" => Some(Format::Md),
            "json" => Some(Format::Json),
            "html" | "htm" => Some(Format::Html),
            _ => None,
        }
    }
}

/// The record in `format`.
pub fn render(r: &Record, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(r).expect("records serialize") + "\n",
        Format::Md => document(r, &mut Md(String::new())),
        Format::Html => document(r, &mut Html(String::new())),
    }
}

/// What the two document formats have in common: a title, headings, key/value
/// lists, tables and paragraphs.
trait Doc {
    fn title(&mut self, text: &str);
    fn heading(&mut self, text: &str);
    fn para(&mut self, text: &str);
    fn table(&mut self, head: &[&str], rows: &[Vec<String>]);
    fn finish(&mut self) -> String;
}

struct Md(String);

/// A value as Markdown text that renders as itself, never as markup (issue 21 item 7):
/// no line breaks; `<`, `>`, `&` as entities (no HTML, no `<…>` autolink); the brackets
/// of link and image syntax (`[..](..)`, `![..](..)`, `[ref]: url`) escaped with a
/// backslash, and so are emphasis (`*`, `_` at a word's edge), code spans, strikethrough,
/// a table's `|`, a backslash, and a leading `#`; the `://` and `www.` of a bare URL are
/// broken (`:\/\/`, `www\.`) so GFM does not make it a link. Text without such
/// characters stays as it is (`AES_GCM_16-256`, `fw.acme.example`).
fn md_cell(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    for (i, &c) in chars.iter().enumerate() {
        let word = |j: Option<usize>| {
            j.and_then(|j| chars.get(j))
                .is_some_and(|c| c.is_alphanumeric())
        };
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\n' | '\r' => out.push(' '),
            '_' if word(i.checked_sub(1)) && word(Some(i + 1)) => out.push(c),
            '#' if i > 0 => out.push(c),
            '\\' | '`' | '*' | '_' | '[' | ']' | '~' | '|' | '#' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.replace("://", ":\\/\\/")
        .replace("www.", "www\\.")
        .replace("WWW.", "WWW\\.")
}

impl Doc for Md {
    fn title(&mut self, text: &str) {
        self.0.push_str(&format!("# {}\n", md_cell(text)));
    }
    fn heading(&mut self, text: &str) {
        self.0.push_str(&format!("\n## {}\n", md_cell(text)));
    }
    fn para(&mut self, text: &str) {
        self.0.push_str(&format!("\n{}\n", md_cell(text)));
    }
    fn table(&mut self, head: &[&str], rows: &[Vec<String>]) {
        self.0.push('\n');
        self.0.push_str(&format!("| {} |\n", head.join(" | ")));
        self.0.push_str(&format!(
            "|{}\n",
            head.iter().map(|_| "---|").collect::<String>()
        ));
        for row in rows {
            let cells: Vec<String> = row.iter().map(|c| md_cell(c)).collect();
            self.0.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
    }
    fn finish(&mut self) -> String {
        std::mem::take(&mut self.0)
    }
}

struct Html(String);

/// `s` as HTML text (element content and attribute values alike).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#1b1b1b;max-width:75em}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;padding:.25em .5em;\
text-align:left;vertical-align:top;font-size:.9em}th{background:#f2f2f2}\
td{font-family:ui-monospace,monospace;word-break:break-all}";

impl Doc for Html {
    fn title(&mut self, text: &str) {
        let t = escape(text);
        self.0.push_str(&format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{t}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>{t}</h1>\n"
        ));
    }
    fn heading(&mut self, text: &str) {
        self.0.push_str(&format!("<h2>{}</h2>\n", escape(text)));
    }
    fn para(&mut self, text: &str) {
        self.0.push_str(&format!("<p>{}</p>\n", escape(text)));
    }
    fn table(&mut self, head: &[&str], rows: &[Vec<String>]) {
        self.0.push_str("<table>\n");
        // A key/value table has no header row.
        if head.iter().any(|h| !h.is_empty()) {
            self.0.push_str("<tr>");
            for h in head {
                self.0.push_str(&format!("<th>{}</th>", escape(h)));
            }
            self.0.push_str("</tr>\n");
        }
        for row in rows {
            self.0.push_str("<tr>");
            for c in row {
                self.0.push_str(&format!("<td>{}</td>", escape(c)));
            }
            self.0.push_str("</tr>\n");
        }
        self.0.push_str("</table>\n");
    }
    fn finish(&mut self) -> String {
        self.0.push_str("</body>\n</html>\n");
        std::mem::take(&mut self.0)
    }
}

/// A duration in milliseconds as people read it: `85ms`, `1.2s`, `2m05s`.
fn dur(m: u64) -> String {
    if m < 1000 {
        format!("{m}ms")
    } else {
        elapsed(Duration::from_millis(m))
    }
}

fn ms(v: Option<u64>) -> String {
    v.map(dur).unwrap_or_else(|| "not known".into())
}

/// The outcome in a sentence; with what was read at report time where it contradicts it
/// or could not be read (a21o D06, D16: "done: the cutover is complete" beside another
/// gateway claiming the floating IP).
fn outcome_line(r: &Record) -> String {
    let Some(now) = r.read_at_report.as_ref().and_then(|n| n.text()) else {
        return journal_outcome(r);
    };
    let phase = match r.outcome {
        Outcome::Done => "done (the journal's phase), but the cutover is not complete",
        Outcome::RolledBack => {
            "rolled back (the journal's phase), but the IPsecGateway is not back as it was"
        }
        _ => return format!("{}; read at report time: {now}", journal_outcome(r)),
    };
    let phase = if r.read_at_report.as_ref().is_some_and(|n| !n.contradicts()) {
        match r.outcome {
            Outcome::Done => {
                "done (the journal's phase); whether the cutover is complete is not known"
            }
            _ => {
                "rolled back (the journal's phase); whether the IPsecGateway is back as it was is not known"
            }
        }
    } else {
        phase
    };
    format!("{phase}: read at report time (not covered by the hash chain), {now}")
}

/// The outcome the journal records, in a sentence.
fn journal_outcome(r: &Record) -> String {
    match r.outcome {
        Outcome::Done if r.recovery.edited_while_deleting.is_some() => {
            "done: the cutover is complete, but an edit of the old gateway made while it was being deleted is in neither the applied objects nor the saved manifest (see Recovery)".into()
        }
        Outcome::Done => "done: the cutover is complete".into(),
        // Closed before its delete (a run stopped before it, then `rollback`): nothing was
        // re-created (a21u U15: the record said "the IPsecGateway was re-created" of one the
        // rollback had said was never deleted, the same uid).
        Outcome::RolledBack if !r.timeline.iter().any(|s| s.phase == Phase::Deleting) => {
            "rolled back: the window was closed before its delete; the IPsecGateway was never deleted".into()
        }
        Outcome::RolledBack if r.recovery.cutover_failure.is_some() => {
            "rolled back: the cutover failed and the IPsecGateway was re-created".into()
        }
        Outcome::RolledBack => "rolled back: the IPsecGateway was re-created".into(),
        Outcome::Failed => format!("failed at phase {}", r.phase),
        Outcome::InProgress => format!(
            "in progress at phase {} (under way, or interrupted without a recorded failure)",
            r.phase
        ),
    }
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Which window of the gateway this is, and where the earlier ones are.
fn window_line(r: &Record) -> String {
    let mut line = if r.archived {
        format!(
            "{} (archived: a later cutover replaced its journal; `vpnmig report {} -n {}` shows the current window)",
            r.window, r.gateway, r.namespace
        )
    } else {
        r.window.to_string()
    };
    if !r.earlier_windows.is_empty() {
        line.push_str(&format!(
            "; earlier windows archived: {}",
            r.earlier_windows
                .iter()
                .map(|e| format!("{} ({}, `{}`)", e.window, e.phase, e.report))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    line
}

fn chain_line(r: &Record) -> String {
    match r.chain.status {
        ChainStatus::Broken => format!("BROKEN: {}", r.chain.text),
        _ => r.chain.text.clone(),
    }
}

fn steps_rows(steps: &[Step]) -> Vec<Vec<String>> {
    steps
        .iter()
        .map(|s| {
            vec![
                s.entry.to_string(),
                s.phase.to_string(),
                s.at.clone(),
                s.after_ms
                    .map(|m| format!("+{}", dur(m)))
                    .unwrap_or_default(),
                s.by.clone(),
            ]
        })
        .collect()
}

/// The two kinds of a window's outage: which gateway is deleted, which comes up.
struct Sides {
    deleted: &'static str,
    created: &'static str,
    /// What the attach part runs to (a rollback measures FIPAttached and Ready as one).
    attached: &'static str,
}

const CUTOVER: Sides = Sides {
    deleted: "IPsecGateway",
    created: "VPNGateway",
    attached: "gone → VPNGateway FIPAttached (the apply included)",
};
const ROLLBACK: Sides = Sides {
    deleted: "VPNGateway",
    created: "re-created IPsecGateway",
    attached: "gone → re-created IPsecGateway FIPAttached and Ready",
};

fn outage_section(d: &mut dyn Doc, title: &str, o: &Outage, sides: &Sides) {
    d.heading(title);
    d.para(&format!(
        "{} in all, from the delete of the {} to the last tunnel of the {} ESTABLISHED and INSTALLED{}.",
        ms(o.total_ms),
        sides.deleted,
        sides.created,
        // `--initiate` asked; which side brought each tunnel up is in its row (an
        // initiation that failed fell back to the client).
        match (
            o.initiate,
            o.tunnels
                .iter()
                .any(|t| t.came_up_by == crate::core::dataplane::CameUpBy::Initiation),
        ) {
            (true, true) => " (--initiate: tunnels started from the gateway where their row says so)",
            (true, false) => " (--initiate was asked, but every tunnel came up by the client)",
            _ => "",
        }
    ));
    let parts = [
        (
            "unwind",
            o.unwind_ms,
            format!("delete sent → {} gone", sides.deleted),
        ),
        ("attach", o.attach_ms, sides.attached.to_string()),
        (
            "ready",
            o.ready_ms,
            "FIPAttached → Ready (and every VPNPeer Authorized)".to_string(),
        ),
        ("tunnel", o.tunnel_ms, "Ready → last tunnel up".to_string()),
    ];
    d.table(
        &["Part", "Duration", "From → to"],
        &parts
            .into_iter()
            .map(|(part, v, what)| vec![part.to_string(), ms(v), what])
            .collect::<Vec<_>>(),
    );
    if !o.tunnels.is_empty() {
        d.table(
            &["Tunnel", "Down", "Came up by", "Gateway's initiation"],
            &o.tunnels
                .iter()
                .map(|t| {
                    vec![
                        t.peer.clone(),
                        ms(t.outage_ms),
                        match t.came_up_by {
                            CameUpBy::Initiation => "the gateway (initiation)".into(),
                            CameUpBy::Client => "the client".into(),
                        },
                        t.initiation.clone().unwrap_or_else(|| "-".into()),
                    ]
                })
                .collect::<Vec<_>>(),
        );
    }
}

fn document(r: &Record, d: &mut dyn Doc) -> String {
    let not_recorded = "not recorded";
    d.title(&format!(
        "Change record: {}/{}: {}",
        r.namespace,
        r.gateway,
        r.outcome.as_str()
    ));
    let cluster = match (&r.cluster.kube_system_uid, &r.cluster.why) {
        (Some(uid), _) => format!("{} (namespace kube-system uid {uid})", r.cluster.server),
        (None, why) => format!(
            "{} (namespace kube-system uid unknown: {})",
            r.cluster.server,
            why.as_deref().unwrap_or("not read")
        ),
    };
    let plan = match &r.approved_plan {
        Some(p) => format!(
            "{} (bundle {}): {}",
            p.fingerprint,
            p.bundle,
            if p.matched {
                "the live gateway matched it"
            } else {
                "the live gateway DID NOT match it"
            }
        ),
        None => "none: the cutover ran without --plan".into(),
    };
    let summary: Vec<(&str, String)> = vec![
        ("Outcome", outcome_line(r)),
        ("Cluster", cluster),
        (
            "Gateway",
            format!(
                "{}/{} (IPsecGateway uid {})",
                r.namespace,
                r.gateway,
                r.old_uid.as_deref().unwrap_or("not recorded")
            ),
        ),
        ("Run by", r.run_by.join("; ")),
        ("Journal", format!("{}, phase {}", r.journal, r.phase)),
        ("Window", window_line(r)),
        (
            "Hash chain",
            format!(
                "{} ({}; what it covers is below)",
                chain_line(r),
                r.chain_scope.summary
            ),
        ),
        ("Approved plan", plan),
        ("Spec fingerprint", r.spec_fingerprint.clone()),
    ];
    d.table(
        &["", ""],
        &summary
            .into_iter()
            .map(|(k, v)| vec![k.to_string(), v])
            .collect::<Vec<_>>(),
    );

    d.heading("What the hash chain proves");
    d.para(&format!("{}.", upper_first(r.chain_scope.summary)));
    d.table(
        &["The chain covers", "It does not cover"],
        &(0..r
            .chain_scope
            .covers
            .len()
            .max(r.chain_scope.does_not_cover.len()))
            .map(|i| {
                vec![
                    r.chain_scope
                        .covers
                        .get(i)
                        .copied()
                        .unwrap_or_default()
                        .to_string(),
                    r.chain_scope
                        .does_not_cover
                        .get(i)
                        .copied()
                        .unwrap_or_default()
                        .to_string(),
                ]
            })
            .collect::<Vec<_>>(),
    );

    if let Some(now) = &r.read_at_report
        && let Some(text) = now.text()
    {
        d.para(&format!("Read at report time: {}; {}.", text, now.note));
    }

    if !r.earlier_windows.is_empty() {
        d.heading("Earlier windows");
        d.para("Archived in the cluster when a new cutover replaced their journal; each record is kept whole.");
        d.table(
            &[
                "Window",
                "Phase",
                "From (UTC)",
                "To (UTC)",
                "Journal",
                "Record",
            ],
            &r.earlier_windows
                .iter()
                .map(|e| {
                    vec![
                        e.window.to_string(),
                        e.phase.to_string(),
                        e.started.clone(),
                        e.ended.clone(),
                        e.journal.clone(),
                        e.report.clone(),
                    ]
                })
                .collect::<Vec<_>>(),
        );
    }

    d.heading("Timeline");
    d.table(
        &["#", "Phase", "At (UTC)", "After", "By"],
        &steps_rows(&r.timeline),
    );

    d.heading("Pinned values");
    d.para("The approved reference (the journal's targets); the PSK only as its fingerprint.");
    d.table(
        &["Object", "Field", "Value"],
        &r.pinned
            .iter()
            .map(|p| vec![p.object.clone(), p.field.clone(), p.value.clone()])
            .collect::<Vec<_>>(),
    );

    d.heading("Checks");
    if r.checks.is_empty() {
        d.para(&format!(
            "{not_recorded} (a journal of an earlier version, or one rebuilt from a plan bundle)"
        ));
    } else {
        d.table(
            &["Check", "Severity", "Verdict", "Findings", "Makes sure"],
            &r.checks
                .iter()
                .map(|c| {
                    vec![
                        c.id.clone(),
                        c.severity.clone(),
                        c.outcome.clone(),
                        c.findings.to_string(),
                        c.title.clone(),
                    ]
                })
                .collect::<Vec<_>>(),
        );
    }

    d.heading("Data plane");
    match &r.data_plane_baseline {
        Some(b) => d.para(&format!(
            "Baseline: {} tunnel(s) of {} at {}, before the delete.",
            b.tunnels, b.source, b.at
        )),
        None => d.para(&format!("Baseline: {not_recorded}.")),
    }
    match &r.data_plane {
        Some(c) => {
            d.para(&format!(
                "{} (after: {} at {})",
                crate::output::dataplane::summary(c),
                c.after_source,
                c.after_at
            ));
            d.table(
                &["Tunnel", "Child", "Fact", "Before", "After", "Verdict"],
                &c.rows
                    .iter()
                    .map(|row| {
                        vec![
                            row.tunnel.clone(),
                            row.child.clone().unwrap_or_else(|| "-".into()),
                            row.fact.clone(),
                            row.before.clone(),
                            row.after.clone(),
                            verdict(row.verdict, row.fails).to_string(),
                        ]
                    })
                    .collect::<Vec<_>>(),
            );
            let unproven = c.unproven();
            if !unproven.is_empty() {
                d.para("What the data plane cannot prove (compared as pinned values instead):");
                d.table(
                    &["Fact", "Not proven"],
                    &unproven
                        .iter()
                        .map(|row| {
                            vec![
                                crate::output::dataplane::unproven_what(row),
                                row.unproven.clone().unwrap_or_default(),
                            ]
                        })
                        .collect::<Vec<_>>(),
                );
            }
        }
        None => d.para(&format!("Comparison: {not_recorded}.")),
    }

    match &r.outage {
        Some(o) => outage_section(d, "Outage", o, &CUTOVER),
        None => {
            d.heading("Outage");
            d.para(&match r.outage_ms {
                Some(m) => format!(
                    "{} from the delete to the first tunnel up; the parts were {not_recorded}.",
                    ms(Some(m))
                ),
                None => format!(
                    "{not_recorded}: the cutover's tunnels did not all come up, or the journal is of an earlier version."
                ),
            });
        }
    }
    if let Some(o) = &r.rollback_outage {
        outage_section(d, "Rollback outage", o, &ROLLBACK);
    }

    d.heading("Recovery");
    let mut facts: Vec<Vec<String>> = Vec::new();
    if let Some(f) = &r.recovery.cutover_failure {
        facts.push(vec!["Cutover failure".into(), f.clone()]);
    }
    if let Some(e) = &r.recovery.last_error {
        facts.push(vec!["Last error".into(), e.clone()]);
    }
    if let Some(e) = &r.recovery.edited_while_deleting {
        facts.push(vec![
            "Old gateway edited while being deleted".into(),
            e.clone(),
        ]);
    }
    if !r.recovery.psk_owner_references_removed.is_empty() {
        facts.push(vec![
            "PSK Secret ownerReferences removed".into(),
            r.recovery.psk_owner_references_removed.join(", "),
        ]);
    }
    if !r.recovery.dropped_owner_references.is_empty() {
        facts.push(vec![
            "ownerReferences left out of the re-created IPsecGateway".into(),
            r.recovery.dropped_owner_references.join(", "),
        ]);
    }
    facts.push(vec!["Next".into(), r.recovery.next.clone()]);
    d.table(&["", ""], &facts);
    if r.recovery.steps.is_empty() {
        d.para("No rollback steps were taken.");
    } else {
        d.para("Rollback steps taken:");
        d.table(
            &["#", "Phase", "At (UTC)", "After", "By"],
            &steps_rows(&r.recovery.steps),
        );
    }
    d.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escapes_every_special_character() {
        assert_eq!(
            escape(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
        assert_eq!(md_cell("a|b\n<i>"), "a\\|b &lt;i&gt;");
    }

    /// A value never becomes a link, an image or other markup in the Markdown record
    /// (issue 21 item 7). Rows: (value, its Markdown).
    #[test]
    fn markdown_escapes_link_image_and_inline_markup() {
        let table = [
            (
                "[click](https://evil.example)",
                r"\[click\](https:\/\/evil.example)",
            ),
            (
                "![x](http://evil.example/p.png)",
                r"!\[x\](http:\/\/evil.example/p.png)",
            ),
            ("<https://evil.example>", "&lt;https:\\/\\/evil.example&gt;"),
            (
                "[ref]: https://evil.example",
                r"\[ref\]: https:\/\/evil.example",
            ),
            ("see www.evil.example", r"see www\.evil.example"),
            (
                "*bold* _em_ `code` ~~gone~~",
                r"\*bold\* \_em\_ \`code\` \~\~gone\~\~",
            ),
            ("# heading", r"\# heading"),
            (r"a\b", r"a\\b"),
            ("x & y", "x &amp; y"),
            (
                "fw.acme.example @ 203.0.113.10",
                "fw.acme.example @ 203.0.113.10",
            ),
            ("AES_GCM_16-256/MODP_2048", "AES_GCM_16-256/MODP_2048"),
            ("a (b) #3", "a (b) #3"),
        ];
        for (value, md) in table {
            assert_eq!(md_cell(value), md, "{value}");
        }
    }

    #[test]
    fn the_format_comes_from_the_extension() {
        let f = |p: &str| Format::from_path(std::path::Path::new(p));
        assert_eq!(f("r.md"), Some(Format::Md));
        assert_eq!(f("r.JSON"), Some(Format::Json));
        assert_eq!(f("out/r.html"), Some(Format::Html));
        assert_eq!(f("r.txt"), None);
        assert_eq!(f("record"), None);
    }
}
