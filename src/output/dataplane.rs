//! The data-plane comparison table and the outage lines of a window's report
//! (`core::dataplane`; issue 12 items 1 and 3).

use std::time::Duration;

use crate::core::dataplane::{CameUpBy, Comparison, FactVerdict, Outage};
use crate::output::progress::elapsed;

/// A fact's verdict as the table and the change record write it.
pub(crate) fn verdict(v: FactVerdict, fails: bool) -> &'static str {
    match (v, fails) {
        (FactVerdict::Identical, _) => "identical",
        (FactVerdict::Changed, true) => "CHANGED",
        (FactVerdict::Changed, false) => "changed (path)",
        (FactVerdict::Expected, _) => "expected to change",
        (FactVerdict::Missing, _) => "MISSING",
        (FactVerdict::Added, _) => "added",
    }
}

/// The comparison as a table (one row per fact) and its verdict line, as wide as the
/// terminal; see [`render_width`].
pub fn render(c: &Comparison) -> String {
    render_width(c, crate::output::width::detect())
}

/// The comparison in lines of at most `width` columns: one table row per fact when the
/// table fits; narrower, the facts grouped under their tunnel and CHILD SA, one line
/// each (`local traffic selectors: CHANGED, 10.250.3.0/24 → 10.250.0.0/16`), wrapped.
pub fn render_width(c: &Comparison, width: usize) -> String {
    use crate::output::width::wrap;
    let table = render_table(c);
    if table
        .lines()
        .all(|l| crate::output::width::visible(l) <= width)
    {
        return table + &wrap(&summary(c), width, "", "  ") + &unproven(c, width);
    }
    let mut out = wrap(
        &format!(
            "Data plane: {} before the delete ({}) compared with {} ({})",
            c.before_source, c.before_at, c.after_source, c.after_at
        ),
        width,
        "",
        "  ",
    );
    let mut tunnel = None;
    let mut child = None;
    for r in &c.rows {
        if tunnel != Some(&r.tunnel) {
            out.push_str(&wrap(&r.tunnel, width, " ", "   "));
            tunnel = Some(&r.tunnel);
            child = None;
        }
        if r.child.is_some() && child != Some(&r.child) {
            out.push_str(&wrap(
                &format!("CHILD SA {}", r.child.as_deref().unwrap_or_default()),
                width,
                "   ",
                "     ",
            ));
            child = Some(&r.child);
        }
        let value = if r.before == r.after {
            r.before.clone()
        } else {
            format!("{} → {}", r.before, r.after)
        };
        let indent = if r.child.is_some() { "     " } else { "   " };
        out.push_str(&wrap(
            &format!("{}: {}, {value}", r.fact, verdict(r.verdict, r.fails)),
            width,
            indent,
            &format!("{indent}    "),
        ));
    }
    out.push_str(&wrap(&summary(c), width, "", "  "));
    out.push_str(&unproven(c, width));
    out
}

/// One line per fact the data plane cannot prove (the PFS group of a CHILD SA that has
/// not been rekeyed), wrapped to `width`.
pub fn unproven(c: &Comparison, width: usize) -> String {
    c.unproven()
        .iter()
        .map(|r| {
            crate::output::width::wrap(
                &format!(
                    "not proven: {}: {}",
                    unproven_what(r),
                    r.unproven.as_deref().unwrap_or_default()
                ),
                width,
                "",
                "  ",
            )
        })
        .collect()
}

/// `fw @ 198.18.0.31 CHILD main ESP algorithms`: which fact a caveat is about.
pub(crate) fn unproven_what(r: &crate::core::dataplane::FactRow) -> String {
    match &r.child {
        Some(child) => format!("{} CHILD {child} {}", r.tunnel, r.fact),
        None => format!("{} {}", r.tunnel, r.fact),
    }
}

fn render_table(c: &Comparison) -> String {
    let head = ["TUNNEL", "CHILD", "FACT", "BEFORE", "AFTER", "VERDICT"];
    let cells: Vec<[String; 6]> = c
        .rows
        .iter()
        .map(|r| {
            [
                r.tunnel.clone(),
                r.child.clone().unwrap_or_else(|| "-".into()),
                r.fact.clone(),
                r.before.clone(),
                r.after.clone(),
                verdict(r.verdict, r.fails).to_string(),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..6)
        .map(|i| {
            cells
                .iter()
                .map(|row| row[i].chars().count())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |row: [&str; 6]| {
        let mut l = String::from(" ");
        for (i, cell) in row.iter().enumerate() {
            if i + 1 < row.len() {
                l.push_str(&format!("{cell:<w$}  ", w = widths[i]));
            } else {
                l.push_str(cell);
            }
        }
        l.trim_end().to_string() + "\n"
    };
    let mut out = format!(
        "Data plane: {} before the delete ({}) compared with {} ({})\n",
        c.before_source, c.before_at, c.after_source, c.after_at
    );
    out.push_str(&line(head));
    for row in &cells {
        out.push_str(&line([
            &row[0], &row[1], &row[2], &row[3], &row[4], &row[5],
        ]));
    }
    out
}

/// `data plane: identical (14 facts identical, 6 expected to change)` or the failures.
pub fn summary(c: &Comparison) -> String {
    let (same, changed, expected, missing, added) = c.counts();
    let mut parts = vec![format!("{same} identical")];
    if changed > 0 {
        parts.push(format!("{changed} changed"));
    }
    if missing > 0 {
        parts.push(format!("{missing} missing"));
    }
    if added > 0 {
        parts.push(format!("{added} added"));
    }
    parts.push(format!("{expected} expected to change"));
    let unproven = c.unproven().len();
    if unproven > 0 {
        parts.push(format!("{unproven} not proven (a DH group not shown)"));
    }
    if c.failed() {
        format!(
            "data plane: CHANGED ({}): {}",
            parts.join(", "),
            c.failure_line()
        )
    } else if changed + missing + added == 0 {
        format!("data plane: identical ({})", parts.join(", "))
    } else {
        format!(
            "data plane: nothing the client sees changed ({})",
            parts.join(", ")
        )
    }
}

fn ms(v: Option<u64>) -> String {
    v.map(|m| elapsed(Duration::from_millis(m)))
        .unwrap_or_else(|| "?".into())
}

/// The outage lines of a report: the total with its parts, then one line per tunnel.
pub fn outage(o: &Outage, bound: &str) -> String {
    let mut out = format!(
        "  outage     {bound}{} = unwind {} + attach {} + ready {} + tunnel {} (the delete of the old gateway to the last tunnel ESTABLISHED and INSTALLED{})\n",
        ms(o.total_ms),
        ms(o.unwind_ms),
        ms(o.attach_ms),
        ms(o.ready_ms),
        ms(o.tunnel_ms),
        if o.initiate { "; --initiate" } else { "" }
    );
    for t in &o.tunnels {
        let by = match t.came_up_by {
            CameUpBy::Initiation => "initiated by the gateway",
            CameUpBy::Client => "initiated by the client",
        };
        let tried = match (&t.initiation, t.came_up_by) {
            (Some(answer), CameUpBy::Client) => format!(" (the gateway's initiation: {answer})"),
            _ => String::new(),
        };
        out.push_str(&format!(
            "  tunnel     {} down {}, {by}{tried}\n",
            t.peer,
            ms(t.outage_ms)
        ));
    }
    out
}

/// A baseline as text: one block per tunnel (`vpnmig verify --baseline`).
pub fn baseline(b: &crate::core::dataplane::Baseline) -> String {
    let mut out = format!(
        "Data plane of {} at {}: {} tunnel(s){}\n",
        b.source,
        b.at,
        b.peers(),
        if b.tunnels.len() > b.peers() {
            format!(", {} IKE SAs (several for one peer)", b.tunnels.len())
        } else {
            String::new()
        }
    );
    for t in &b.tunnels {
        out.push_str(&format!(
            "  {} #{}: '{}' @ {} <-> '{}' @ {}, IKEv{}, {}, NAT-T {}\n",
            t.name,
            t.unique_id,
            t.local_id,
            t.local_address,
            t.remote_id,
            t.remote_address,
            t.ike_version,
            t.ike_algorithms,
            if t.nat_t { "yes" } else { "no" }
        ));
        for c in &t.children {
            out.push_str(&format!(
                "    {} #{}: {}{} {}:{}, {} === {}\n",
                c.name,
                c.unique_id,
                c.mode,
                if c.udp_encap { "-in-UDP" } else { "" },
                c.protocol,
                c.algorithms,
                c.local_ts.join(" "),
                c.remote_ts.join(" ")
            ));
        }
    }
    out
}
