//! The fleet plan as a table: one row per gateway, then the totals.

use comfy_table::{ContentArrangement, Table, presets};

use crate::core::fleet::{FleetPlan, Verdict};

/// NAMESPACE, NAME, VERDICT, BLOCKING CHECKS, WARNINGS; `-` for none. Then one line of
/// totals and where the bundles went.
pub fn render(fleet: &FleetPlan, written: Option<&str>) -> String {
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    table.set_header([
        "NAMESPACE",
        "NAME",
        "VERDICT",
        "BLOCKING CHECKS",
        "WARNINGS",
    ]);
    let list = |v: &[String]| {
        if v.is_empty() {
            "-".to_string()
        } else {
            v.join(",")
        }
    };
    for r in &fleet.gateways {
        table.add_row([
            r.namespace.clone(),
            r.name.clone(),
            match r.verdict {
                Verdict::Ready => "ready".to_string(),
                Verdict::Blocked => "blocked".to_string(),
            },
            list(&r.blocking),
            list(&r.warnings),
        ]);
    }
    let mut out: String = table
        .to_string()
        .lines()
        // comfy-table pads every cell by one space: without the first, rows start at the
        // margin as kubectl's do.
        .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l).trim_end()))
        .collect();
    let t = &fleet.totals;
    out.push_str(&format!(
        "\n{} gateway(s): {} ready, {} blocked{}\n",
        t.gateways,
        t.ready,
        t.blocked,
        if t.already_migrated > 0 {
            format!(" ({} already migrated)", t.already_migrated)
        } else {
            String::new()
        }
    ));
    if let Some(dir) = written {
        // `--out plans/` as typed: no `plans//NAMESPACE`.
        let dir = dir
            .strip_suffix('/')
            .filter(|d| !d.is_empty())
            .unwrap_or(dir);
        out.push_str(&format!(
            "Bundles written under {dir}/NAMESPACE/NAME/, summary in {dir}/fleet.json\n"
        ));
    }
    out
}
