//! The verify report as text: one row per check, then the verdict line. Shared by
//! `vpnmig verify` and the final report of a cutover or rollback.

use comfy_table::{ContentArrangement, Table, presets};

use crate::core::verify::{self, Row, Verdict};

/// The table and its verdict line.
pub fn render(rows: &[Row]) -> String {
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    table.set_header(["CHECK", "OBJECT", "WHAT", "VERDICT", "DETAIL"]);
    for r in rows {
        let verdict = if r.verdict == Verdict::Ok {
            "ok"
        } else {
            "FAIL"
        };
        table.add_row([r.check, &r.object, &r.what, verdict, &r.detail]);
    }
    let mut out: String = table
        .to_string()
        .lines()
        .map(|l| format!("{}\n", l.trim_end()))
        .collect();
    let failed = rows.iter().filter(|r| r.verdict == Verdict::Fail).count();
    out.push_str(&if verify::healthy(rows) {
        "HEALTHY\n".to_string()
    } else if rows.is_empty() {
        "NOT HEALTHY: nothing was checked\n".to_string()
    } else {
        format!("NOT HEALTHY: {failed} check(s) failed\n")
    });
    out
}
