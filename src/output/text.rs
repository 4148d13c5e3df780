//! The text renderer of a plan: header, pinned-values table, checks, diff, next steps.

use std::fmt::Write as _;

use comfy_table::{ContentArrangement, Table, presets};
use serde_json::Value;

use crate::core::finding::{Outcome, Severity};
use crate::core::plan::Plan;
use crate::core::report::{Rule, Verdict};
use crate::output::diff::ObjectDiff;
use crate::output::style::{BAD, DIM, HEADING, OK, WARN, paint};
use crate::output::width::{grid, visible, wrap, wrap_command, wrap_lines};

/// Where the diff was taken against, for its heading.
pub enum DiffBase<'a> {
    Nothing,
    Bundle(&'a str),
    /// The live objects of the targets' names (`vpnmig plan NAME`).
    Live,
}

/// A value as a person reads it: strings bare, everything else as JSON.
pub fn value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<unset>".into(),
        other => other.to_string(),
    }
}

/// The whole text report in lines of at most `width` columns (`output::width`).
/// `bundle`: the directory written, if any.
pub fn render_plan(
    plan: &Plan,
    diffs: &[ObjectDiff],
    base: DiffBase,
    bundle: Option<&str>,
    width: usize,
) -> String {
    let mut out = String::new();
    let s = &plan.source;
    let id = match &s.namespace {
        Some(ns) => format!("{ns}/{}", s.name),
        None => s.name.clone(),
    };
    out.push_str(&wrap(
        &format!("{} IPsecGateway {id}", paint(HEADING, "Plan for")),
        width,
        "",
        "  ",
    ));
    let head = |out: &mut String, label: &str, text: &str| {
        out.push_str(&wrap(text, width, &format!("  {label:<9}"), HANG));
    };
    head(&mut out, "from", &s.origin.to_string());
    head(
        &mut out,
        "source",
        &format!(
            "uid {}, resourceVersion {}, generation {}",
            s.uid.as_deref().unwrap_or("<none>"),
            s.resource_version.as_deref().unwrap_or("<none>"),
            s.generation.map_or("<none>".into(), |g| g.to_string())
        ),
    );
    head(&mut out, "spec", &s.spec_fingerprint);
    if let Some(psk) = &s.psk_fingerprint {
        // The note goes whole onto the next line rather than break in two.
        let line = format!("{psk} (fingerprint only)");
        if HANG.len() + visible(&line) <= width {
            head(&mut out, "psk", &line);
        } else {
            head(&mut out, "psk", psk);
            let _ = writeln!(out, "{HANG}(fingerprint only)");
        }
    }
    let targets: Vec<String> = crate::output::manifest::targets(plan)
        .into_iter()
        .map(|(l, _)| l)
        .collect();
    head(&mut out, "targets", &targets.join(", "));

    // Pinned values, plus any row that did not arrive whatever its rule.
    let _ = writeln!(out);
    for line in wrap_lines(
        "Pinned values (must stay byte-for-byte identical)",
        width,
        "",
        "  ",
    ) {
        let _ = writeln!(out, "{}", paint(HEADING, line));
    }
    let rows: Vec<Pinned> = plan
        .fields
        .iter()
        .filter(|r| {
            r.rule == Rule::Pinned || matches!(r.verdict, Verdict::Differs | Verdict::Missing)
        })
        .map(|r| {
            let to = match (&r.target, &r.to) {
                (Some(t), Some(p)) => format!("{t} {p}"),
                _ => "-".into(),
            };
            let verdict = match r.verdict {
                Verdict::Identical if r.from.to_string() == "status.floatingIP" => {
                    "identical (NOT pinned in spec: see fip-pinned)".to_string()
                }
                Verdict::Identical => "identical".to_string(),
                Verdict::Differs => format!(
                    "DIFFERS: {}",
                    r.new_value.as_ref().map(value).unwrap_or_default()
                ),
                Verdict::Missing => "MISSING".into(),
                Verdict::Derived => "derived".into(),
                Verdict::Dropped => "dropped".into(),
            };
            Pinned {
                field: r.field.clone(),
                from: r.from.to_string(),
                to,
                value: value(&r.value),
                verdict,
            }
        })
        .collect();
    out.push_str(&pinned_table(&rows, width));
    let sum = &plan.summary;
    let counts_line = format!(
        "{} pinned, {} copied, {} derived, {} not carried, {} unknown (every row: -o json, .fields)",
        sum.pinned, sum.copied, sum.derived, sum.not_carried, sum.unknown
    );
    for line in wrap_lines(&counts_line, width, "", "") {
        let _ = writeln!(out, "{}", paint(DIM, line));
    }
    let dropped: Vec<String> = plan
        .fields
        .iter()
        .filter(|r| r.rule == Rule::NotCarried)
        .map(|r| r.from.to_string())
        .collect();
    if !dropped.is_empty() {
        let text = format!("not carried: {}", dropped.join(", "));
        for line in wrap_lines(&text, width, "", "  ") {
            let _ = writeln!(out, "{}", paint(DIM, line));
        }
    }

    let _ = writeln!(out, "\n{}", paint(HEADING, "Checks"));
    let id_width = plan.checks.iter().map(|c| c.id.len()).max().unwrap_or(0);
    for c in &plan.checks {
        let (mark, tag) = match (c.outcome, c.severity) {
            (Outcome::Pass, _) => (paint(OK, "✓"), String::new()),
            (Outcome::Skipped, _) => (paint(DIM, "-"), paint(DIM, "not checked: ")),
            (Outcome::Fail, Severity::Blocker) => (paint(BAD, "✗"), paint(BAD, "BLOCKER ")),
            (Outcome::Fail, Severity::Warning) => (paint(WARN, "!"), paint(WARN, "warning ")),
        };
        // A skipped check shows why, not its title: the title would read as a claim.
        let text = match &c.skipped {
            Some(why) => why.clone(),
            None => c.title.to_string(),
        };
        // The text hangs under itself while that leaves room, else under the findings.
        let first = format!("  {mark} {:id_width$}  ", c.id);
        let rest = if 4 + id_width + 2 <= width / 2 {
            " ".repeat(4 + id_width + 2)
        } else {
            " ".repeat(6)
        };
        out.push_str(&wrap(&format!("{tag}{text}"), width, &first, &rest));
        for f in &c.findings {
            out.push_str(&wrap(
                &format!(
                    "{} {}: seen {}, wanted {}",
                    f.object, f.path, f.seen, f.wanted
                ),
                width,
                "      ",
                "        ",
            ));
            out.push_str(&wrap(&f.message, width, "      ", "        "));
            if let Some(fix) = &f.fix {
                out.push_str(&wrap(&format!("fix: {fix}"), width, "      ", "        "));
            }
        }
    }

    let heading = match base {
        DiffBase::Nothing => "Diff (against nothing: no previous bundle)".to_string(),
        DiffBase::Bundle(dir) => format!("Diff (against the previous bundle in {dir})"),
        DiffBase::Live => "Diff (against the live objects, like kubectl diff)".to_string(),
    };
    let _ = writeln!(out);
    for line in wrap_lines(&heading, width, "", "  ") {
        let _ = writeln!(out, "{}", paint(HEADING, line));
    }
    let changed: Vec<&ObjectDiff> = diffs.iter().filter(|d| d.changed()).collect();
    if changed.is_empty() {
        let _ = writeln!(out, "  no changes");
    }
    for d in changed {
        out.push_str(&d.render_width(width));
    }

    let _ = writeln!(out);
    let counts = format!(
        "{} blocker{}, {} warning{}",
        sum.blockers,
        plural(sum.blockers),
        sum.warnings,
        plural(sum.warnings)
    );
    let say = |out: &mut String, text: &str| out.push_str(&wrap(text, width, "", "  "));
    if plan.blocked {
        say(
            &mut out,
            &format!(
                "{} {counts}: fix the blockers above, then plan again.",
                paint(BAD, "BLOCKED:")
            ),
        );
    } else {
        say(&mut out, &format!("{} {counts}.", paint(OK, "READY:")));
    }
    if plan.already_migrated {
        say(
            &mut out,
            &format!(
                "{} the VPNGateway and VPNPeers already exist exactly as planned.",
                paint(OK, "ALREADY MIGRATED:")
            ),
        );
    }
    match bundle {
        Some(dir) => {
            say(
                &mut out,
                &format!(
                    "Bundle written to {dir}/ ({})",
                    crate::bundle::FILES.join(", ")
                ),
            );
            if !plan.blocked {
                next_steps(&mut out, plan, dir, width);
            }
        }
        None => say(
            &mut out,
            "Nothing written: pass --out DIR to write the bundle and get the commands for the window.",
        ),
    }
    out
}

/// The commands for the window: vpnmig's, then the runbook's steps 2, 3 and rollback by
/// hand with the bundle's files (what vpnmig automates, for a cluster it cannot reach).
/// A command too long for the width continues with ` \`, so it still pastes as one.
fn next_steps(out: &mut String, plan: &Plan, dir: &str, width: usize) {
    let ns_name = plan
        .source
        .namespace
        .clone()
        .unwrap_or_else(|| "<namespace>".into());
    let ns = format!(" -n {ns_name}");
    let gw = &plan.source.name;
    let peers: Vec<&str> = plan
        .targets
        .peers
        .iter()
        .filter_map(|p| p.metadata.name.as_deref())
        .collect();
    let cidr = plan
        .targets
        .gateway
        .spec
        .service_cidr
        .as_deref()
        .unwrap_or("<unknown>");
    let cmd = |out: &mut String, c: &str| out.push_str(&wrap_command(c, width, "  "));
    let note = |out: &mut String, t: &str| out.push_str(&wrap(t, width, "    ", "     "));
    let _ = writeln!(out, "\nAt the window:");
    cmd(out, &format!("vpnmig cutover {gw}{ns} --plan {dir}"));
    note(
        out,
        "(lock, drift check, journal, delete, apply, wait for each condition, verify)",
    );
    cmd(out, &format!("vpnmig rollback {gw}{ns}"));
    note(out, "(if it must be undone: from the journal)");
    out.push_str(&wrap(
        "By hand (the runbook's step 2, without the checks and waits):",
        width,
        "",
        "  ",
    ));
    if let Some(f) = plan
        .checks
        .iter()
        .find(|c| c.id == "psk-owner")
        .and_then(|c| c.findings.first())
        && let Some(fix) = f.fix.as_deref()
    {
        cmd(out, fix.trim_start_matches("by hand, before the delete: "));
    }
    cmd(out, &format!("kubectl delete ipsecgateway {gw}{ns}"));
    cmd(
        out,
        &format!("kubectl apply -f {dir}/vpngateway.yaml -f {dir}/vpnpeer.yaml"),
    );
    let _ = writeln!(out, "Verify (runbook step 3):");
    cmd(
        out,
        &format!("kubectl get vpngateway {gw}{ns} -o jsonpath='{{.status.conditions}}'"),
    );
    for p in &peers {
        cmd(
            out,
            &format!("kubectl get vpnpeer {p}{ns} -o jsonpath='{{.status.conditions}}'"),
        );
    }
    cmd(
        out,
        &format!("kubectl exec{ns} deploy/{gw} -c strongswan -- swanctl --list-sas"),
    );
    let _ = writeln!(out, "Rollback:");
    cmd(
        out,
        &format!(
            "kubectl delete vpnpeer {}{ns} && kubectl delete vpngateway {gw}{ns}",
            peers.join(" ")
        ),
    );
    cmd(
        out,
        &format!("kubectl apply -f {dir}/old-ipsecgateway.yaml"),
    );
    out.push_str(&wrap(
        &format!(
            "The old kind cannot pin its service CIDR: check that status.serviceCIDR is {cidr} again."
        ),
        width,
        "  ",
        "  ",
    ));
}

/// One row of the pinned-values table.
struct Pinned {
    field: String,
    /// The old path.
    from: String,
    /// `Kind/name new.path`, or `-`.
    to: String,
    value: String,
    verdict: String,
}

/// Continuation lines of the header fields (`  from     …`).
const HANG: &str = "           ";

/// The pinned values: one line per row when that fits the width (comfy-table);
/// otherwise each row's field, value and verdict in wrapped columns, with its old and
/// new paths on the lines below across the whole width; narrower still (a value would
/// not fit its column whole), the value goes on a line of its own too. A value is never
/// cut.
fn pinned_table(rows: &[Pinned], width: usize) -> String {
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    table.set_header(["FIELD", "OLD PATH → NEW PATH", "VALUE", "VERDICT"]);
    for r in rows {
        table.add_row([
            r.field.clone(),
            format!("{} → {}", r.from, r.to),
            r.value.clone(),
            r.verdict.clone(),
        ]);
    }
    let one_line: Vec<String> = table
        .to_string()
        .lines()
        .map(|l| l.trim_end().to_string())
        .collect();
    if one_line.iter().all(|l| visible(l) <= width) {
        return one_line.iter().map(|l| format!("{l}\n")).collect();
    }

    // Columns: the value as wide as the widest value (so none is split) while the field
    // keeps 12 columns and the verdict 9 ("identical"); the verdict takes what is left up
    // to its widest, the field the rest.
    let widest = |f: fn(&Pinned) -> &str, head: &str| {
        rows.iter()
            .map(|r| visible(f(r)))
            .chain([visible(head)])
            .max()
            .unwrap_or(0)
    };
    let avail = width.saturating_sub(1 + 2 + 2);
    let value_w = widest(|r| &r.value, "VALUE")
        .min(avail.saturating_sub(12 + 9))
        .max(5);
    let verdicts = widest(|r| &r.verdict, "VERDICT");
    let field_w = widest(|r| &r.field, "FIELD")
        .min(avail.saturating_sub(value_w + verdicts.min(12)))
        .max(8);
    let verdict_w = avail
        .saturating_sub(value_w + field_w)
        .clamp(7, verdicts.max(7));
    let mut out = String::new();
    if widest(|r| &r.value, "VALUE") > value_w {
        // A value would not fit its column whole: each goes on its own line.
        let field_w = widest(|r| &r.field, "FIELD").min(avail.saturating_sub(verdicts.min(12)));
        let widths = [
            field_w,
            avail.saturating_sub(field_w).clamp(7, verdicts.max(7)),
        ];
        out.push_str(&grid(&["FIELD", "VERDICT"], &widths));
        let _ = writeln!(out, "   VALUE\n   OLD PATH → NEW PATH");
        for r in rows {
            out.push_str(&grid(&[&r.field, &r.verdict], &widths));
            out.push_str(&wrap(&r.value, width, "   ", "   "));
            for line in wrap_lines(&format!("{} → {}", r.from, r.to), width, "   ", "     ") {
                let _ = writeln!(out, "{}", paint(DIM, line));
            }
        }
        return out;
    }
    let widths = [field_w, value_w, verdict_w];
    out.push_str(&grid(&["FIELD", "VALUE", "VERDICT"], &widths));
    let _ = writeln!(out, "   OLD PATH → NEW PATH");
    for r in rows {
        out.push_str(&grid(&[&r.field, &r.value, &r.verdict], &widths));
        for line in wrap_lines(&format!("{} → {}", r.from, r.to), width, "   ", "     ") {
            let _ = writeln!(out, "{}", paint(DIM, line));
        }
    }
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
