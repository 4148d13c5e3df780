//! The text of `vpnmig verify` (and of the report after a cutover or rollback): one row
//! per check, then the verdict line.

use comfy_table::{ContentArrangement, Table, presets};

use crate::core::verify::{self, Row, Verdict};
use crate::output::width::{fit, grid, visible, wrap};

/// The table and its verdict line in lines of at most `width` columns. One line per
/// check when the table fits (comfy-table, details wrapped in their column when the
/// others leave them 40 columns); narrower, each check's columns wrap in place and its
/// detail follows on the lines below it, across the width; narrower still, the object
/// and what go below too. Columns are never narrower
/// than their longest word (an address, an identity) while the width allows, so those
/// are wrapped whole, never cut.
pub fn render(rows: &[Row], width: usize) -> String {
    let verdict = |r: &Row| {
        if r.verdict == Verdict::Ok {
            "ok"
        } else {
            "FAIL"
        }
    };
    let head = ["CHECK", "OBJECT", "WHAT", "VERDICT"];
    let cells: Vec<[&str; 4]> = rows
        .iter()
        .map(|r| [r.check, r.object.as_str(), r.what.as_str(), verdict(r)])
        .collect();
    let natural: Vec<usize> = (0..4)
        .map(|c| {
            cells
                .iter()
                .map(|row| visible(row[c]))
                .chain([visible(head[c])])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let left = 1 + natural.iter().sum::<usize>() + 2 * 4;
    let mut out = String::new();
    if left + 40 <= width
        || left + rows.iter().map(|r| visible(&r.detail)).max().unwrap_or(0) <= width
    {
        let mut table = Table::new();
        table
            .load_preset(presets::NOTHING)
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(u16::try_from(width).unwrap_or(u16::MAX));
        table.set_header(["CHECK", "OBJECT", "WHAT", "VERDICT", "DETAIL"]);
        for r in rows {
            table.add_row([r.check, &r.object, &r.what, verdict(r), &r.detail]);
        }
        out = table
            .to_string()
            .lines()
            .map(|l| format!("{}\n", l.trim_end()))
            .collect();
    } else {
        let words = |c: usize| {
            cells
                .iter()
                .flat_map(|row| row[c].split(' '))
                .map(visible)
                .max()
                .unwrap_or(0)
        };
        let mins = [natural[0], words(1), words(2), natural[3]];
        let avail = width.saturating_sub(1 + 2 * 3);
        if mins.iter().sum::<usize>() <= avail {
            let widths = fit(&natural, &mins, avail);
            out.push_str(&grid(&head, &widths));
            out.push_str("   DETAIL\n");
            for (r, row) in rows.iter().zip(&cells) {
                out.push_str(&grid(row, &widths));
                out.push_str(&wrap(&r.detail, width, "   ", "   "));
            }
        } else {
            // Too narrow for the object and what beside each other: they go below too.
            let widths = [natural[0], natural[3]];
            out.push_str(&grid(&["CHECK", "VERDICT"], &widths));
            out.push_str("   OBJECT: WHAT\n   DETAIL\n");
            for (r, row) in rows.iter().zip(&cells) {
                out.push_str(&grid(&[row[0], row[3]], &widths));
                out.push_str(&wrap(
                    &format!("{}: {}", r.object, r.what),
                    width,
                    "   ",
                    "     ",
                ));
                out.push_str(&wrap(&r.detail, width, "   ", "   "));
            }
        }
    }
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
