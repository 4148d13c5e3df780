//! The text renderer of a plan: header, pinned-values table, checks, diff, next steps.

use std::fmt::Write as _;

use comfy_table::{ContentArrangement, Table, presets};
use serde_json::Value;

use crate::core::checks::{Outcome, Severity};
use crate::core::plan::Plan;
use crate::core::report::{Rule, Verdict};
use crate::output::diff::ObjectDiff;
use crate::output::style::{BAD, DIM, HEADING, OK, WARN, paint};

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

/// The whole text report. `bundle`: the directory written, if any.
pub fn render_plan(
    plan: &Plan,
    diffs: &[ObjectDiff],
    base: DiffBase,
    bundle: Option<&str>,
) -> String {
    let mut out = String::new();
    let s = &plan.source;
    let id = match &s.namespace {
        Some(ns) => format!("{ns}/{}", s.name),
        None => s.name.clone(),
    };
    let _ = writeln!(out, "{} IPsecGateway {id}", paint(HEADING, "Plan for"));
    let _ = writeln!(out, "  from     {}", s.origin);
    let _ = writeln!(
        out,
        "  source   uid {}, resourceVersion {}, generation {}",
        s.uid.as_deref().unwrap_or("<none>"),
        s.resource_version.as_deref().unwrap_or("<none>"),
        s.generation.map_or("<none>".into(), |g| g.to_string())
    );
    let _ = writeln!(out, "  spec     {}", s.spec_fingerprint);
    if let Some(psk) = &s.psk_fingerprint {
        let _ = writeln!(out, "  psk      {psk} (fingerprint only)");
    }
    let targets: Vec<String> = crate::output::manifest::targets(plan)
        .into_iter()
        .map(|(l, _)| l)
        .collect();
    let _ = writeln!(out, "  targets  {}", targets.join(", "));

    // Pinned values, plus any row that did not arrive whatever its rule.
    let _ = writeln!(
        out,
        "\n{}",
        paint(HEADING, "Pinned values (must stay byte-for-byte identical)")
    );
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    table.set_header(["FIELD", "OLD PATH → NEW PATH", "VALUE", "VERDICT"]);
    for r in plan.fields.iter().filter(|r| {
        r.rule == Rule::Pinned || matches!(r.verdict, Verdict::Differs | Verdict::Missing)
    }) {
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
        table.add_row([
            r.field.clone(),
            format!("{} → {to}", r.from),
            value(&r.value),
            verdict,
        ]);
    }
    for line in table.to_string().lines() {
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let sum = &plan.summary;
    let _ = writeln!(
        out,
        "{}",
        paint(
            DIM,
            format!(
                "{} pinned, {} copied, {} derived, {} not carried, {} unknown (every row: -o json, .fields)",
                sum.pinned, sum.copied, sum.derived, sum.not_carried, sum.unknown
            )
        )
    );
    let dropped: Vec<String> = plan
        .fields
        .iter()
        .filter(|r| r.rule == Rule::NotCarried)
        .map(|r| r.from.to_string())
        .collect();
    if !dropped.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            paint(DIM, format!("not carried: {}", dropped.join(", ")))
        );
    }

    let _ = writeln!(out, "\n{}", paint(HEADING, "Checks"));
    let width = plan.checks.iter().map(|c| c.id.len()).max().unwrap_or(0);
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
        let _ = writeln!(out, "  {mark} {:width$}  {tag}{text}", c.id);
        for f in &c.findings {
            let _ = writeln!(
                out,
                "      {} {}: seen {}, wanted {}",
                f.object, f.path, f.seen, f.wanted
            );
            let _ = writeln!(out, "      {}", f.message);
            if let Some(fix) = &f.fix {
                let _ = writeln!(out, "      fix: {fix}");
            }
        }
    }

    let heading = match base {
        DiffBase::Nothing => "Diff (against nothing: no previous bundle)".to_string(),
        DiffBase::Bundle(dir) => format!("Diff (against the previous bundle in {dir})"),
        DiffBase::Live => "Diff (against the live objects, like kubectl diff)".to_string(),
    };
    let _ = writeln!(out, "\n{}", paint(HEADING, heading));
    let changed: Vec<&ObjectDiff> = diffs.iter().filter(|d| d.changed()).collect();
    if changed.is_empty() {
        let _ = writeln!(out, "  no changes");
    }
    for d in changed {
        out.push_str(&d.render());
    }

    let _ = writeln!(out);
    let counts = format!(
        "{} blocker{}, {} warning{}",
        sum.blockers,
        plural(sum.blockers),
        sum.warnings,
        plural(sum.warnings)
    );
    if plan.blocked {
        let _ = writeln!(
            out,
            "{} {counts}: fix the blockers above, then plan again.",
            paint(BAD, "BLOCKED:")
        );
    } else {
        let _ = writeln!(out, "{} {counts}.", paint(OK, "READY:"));
    }
    if plan.already_migrated {
        let _ = writeln!(
            out,
            "{} the VPNGateway and VPNPeers already exist exactly as planned.",
            paint(OK, "ALREADY MIGRATED:")
        );
    }
    match bundle {
        Some(dir) => {
            let _ = writeln!(
                out,
                "Bundle written to {dir}/ ({})",
                crate::bundle::FILES.join(", ")
            );
            if !plan.blocked {
                next_steps(&mut out, plan, dir);
            }
        }
        None => {
            let _ = writeln!(
                out,
                "Nothing written: pass --out DIR to write the bundle and get the commands for the window."
            );
        }
    }
    out
}

/// The commands for the window: vpnmig's, then the runbook's steps 2, 3 and rollback by
/// hand with the bundle's files (what vpnmig automates, for a cluster it cannot reach).
fn next_steps(out: &mut String, plan: &Plan, dir: &str) {
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
    let _ = writeln!(out, "\nAt the window:");
    let _ = writeln!(
        out,
        "  vpnmig cutover {gw}{ns} --plan {dir}\n    (lock, drift check, journal, delete, apply, wait for each condition, verify)"
    );
    let _ = writeln!(
        out,
        "  vpnmig rollback {gw}{ns}\n    (if it must be undone: from the journal)"
    );
    let _ = writeln!(
        out,
        "By hand (the runbook's step 2, without the checks and waits):"
    );
    if let Some(f) = plan
        .checks
        .iter()
        .find(|c| c.id == "psk-owner")
        .and_then(|c| c.findings.first())
        && let Some(fix) = f.fix.as_deref()
    {
        let _ = writeln!(
            out,
            "  {}",
            fix.trim_start_matches("by hand, before the delete: ")
        );
    }
    let _ = writeln!(out, "  kubectl delete ipsecgateway {gw}{ns}");
    let _ = writeln!(
        out,
        "  kubectl apply -f {dir}/vpngateway.yaml -f {dir}/vpnpeer.yaml"
    );
    let _ = writeln!(out, "Verify (runbook step 3):");
    let _ = writeln!(
        out,
        "  kubectl get vpngateway {gw}{ns} -o jsonpath='{{.status.conditions}}'"
    );
    for p in &peers {
        let _ = writeln!(
            out,
            "  kubectl get vpnpeer {p}{ns} -o jsonpath='{{.status.conditions}}'"
        );
    }
    let _ = writeln!(
        out,
        "  kubectl exec{ns} deploy/{gw} -c strongswan -- swanctl --list-sas"
    );
    let _ = writeln!(out, "Rollback:");
    let _ = writeln!(
        out,
        "  kubectl delete vpnpeer {}{ns} && kubectl delete vpngateway {gw}{ns}",
        peers.join(" ")
    );
    let _ = writeln!(out, "  kubectl apply -f {dir}/old-ipsecgateway.yaml");
    let _ = writeln!(
        out,
        "  The old kind cannot pin its service CIDR: check that status.serviceCIDR is {cidr} again."
    );
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
