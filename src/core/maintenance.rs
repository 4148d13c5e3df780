//! Where a gateway's maintenance window is written, and which is its next one (issue 25
//! item 1). Two places: the IPsecGateway's annotation `vpnmig.bnerd.net/window` (an ISO
//! 8601 interval, `2026-12-08T02:00:00+01:00/PT1H`), and a windows file that maps
//! `namespace/name` or a label selector to an interval and an IANA time zone. A gateway
//! with no window, an unreadable one, two that disagree or one that is over is named as
//! such ([`Next`]), never given a guessed one. Dates, zones and ISO 8601 durations are
//! jiff's; this module only says which text means which moment. Pure.
//!
//! Which source wins, the most specific first: a file entry naming the gateway, then the
//! annotation, then the file's selector entries. Two sources of the same rank that give
//! different intervals are a conflict; an unreadable annotation is not replaced by a
//! selector entry of the file.
//!
//! Layer 0 (model, addresses, paths, parsers, YAML): imports nothing above it; see docs/architecture.md.

use std::collections::BTreeMap;

use jiff::civil::DateTime;
use jiff::fmt::temporal::Pieces;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Span, Timestamp, Zoned};
use serde::{Deserialize, Serialize};

use crate::core::selector::LabelSelector;

/// The annotation on an IPsecGateway that holds its window.
pub const ANNOTATION: &str = "vpnmig.bnerd.net/window";

/// The longest window vpnmig schedules (a maintenance window is not longer).
pub const LONGEST: SignedDuration = SignedDuration::from_hours(7 * 24);

/// A maintenance window: from `start` (in the zone it was written in) to `end`.
#[derive(Clone, Debug, PartialEq)]
pub struct Interval {
    pub start: Zoned,
    pub end: Zoned,
    /// As written (the annotation's value, or the file's `window`).
    pub given: String,
}

impl Interval {
    /// How long the window is.
    pub fn length(&self) -> SignedDuration {
        self.end.timestamp().duration_since(self.start.timestamp())
    }

    /// `2026-12-08 02:00 → 03:00 +01:00 (Europe/Berlin)`: the end's date is written only
    /// when it is not the start's.
    pub fn show(&self) -> String {
        let end = if self.end.date() == self.start.date() {
            self.end.strftime("%H:%M").to_string()
        } else {
            self.end.strftime("%Y-%m-%d %H:%M").to_string()
        };
        let zone = self
            .start
            .time_zone()
            .iana_name()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        format!(
            "{} → {end} {}{zone}",
            self.start.strftime("%Y-%m-%d %H:%M"),
            self.start.strftime("%:z")
        )
    }

    /// The end as `--window-end` takes it (RFC 3339 with the start's offset).
    pub fn end_rfc3339(&self) -> String {
        self.end.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
    }
}

/// Read an interval: `START/DURATION` or `START/END` (ISO 8601). START and END are
/// `2026-12-08T02:00:00+01:00` (an offset), `2026-12-08T02:00:00+01:00[Europe/Berlin]`
/// (RFC 9557), or, where `zone` is given (a windows file's `timeZone`), a local
/// `2026-12-08T02:00`. DURATION is ISO 8601 (`PT1H`, `PT90M`, `P1DT2H`). A local time
/// that does not exist or happens twice in the zone (a DST change) is refused: the
/// offset says which is meant. An offset that is not the zone's at that moment is
/// refused too.
pub fn parse_interval(text: &str, zone: Option<&str>) -> Result<Interval, String> {
    let given = text.trim();
    // The `/` between the two parts, not one inside a zone annotation's brackets.
    let mut depth = 0i32;
    let slash = given.char_indices().find_map(|(i, c)| {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            '/' if depth == 0 => return Some(i),
            _ => {}
        }
        None
    });
    let (a, b) = slash
        .map(|i| (&given[..i], &given[i + 1..]))
        .ok_or_else(|| {
            format!("`{given}` is not START/DURATION (like 2026-12-08T02:00:00+01:00/PT1H)")
        })?;
    let start = moment(a.trim(), zone)?;
    let b = b.trim();
    let end = if b.starts_with(['P', 'p']) {
        let span: Span = b
            .parse()
            .map_err(|e| format!("`{b}` is not an ISO 8601 duration (like PT1H): {e}"))?;
        start
            .checked_add(span)
            .map_err(|e| format!("{a} + {b}: {e}"))?
    } else {
        let z = start.time_zone().iana_name().or(zone);
        let end = moment(b, z)?;
        end.with_time_zone(start.time_zone().clone())
    };
    let length = end.timestamp().duration_since(start.timestamp());
    if length <= SignedDuration::ZERO {
        return Err(format!("`{given}`: the window must end after it starts"));
    }
    if length > LONGEST {
        return Err(format!("`{given}`: a window is at most 7 days long"));
    }
    Ok(Interval {
        start,
        end,
        given: given.to_string(),
    })
}

/// One moment of an interval, in the zone it names (or `zone`), else at its offset.
fn moment(text: &str, zone: Option<&str>) -> Result<Zoned, String> {
    let p = Pieces::parse(text).map_err(|e| {
        format!("`{text}` is not an ISO 8601 date and time (like 2026-12-08T02:00:00+01:00): {e}")
    })?;
    let Some(time) = p.time() else {
        return Err(format!("`{text}` has no time of day (like T02:00)"));
    };
    let civil: DateTime = p.date().to_datetime(time);
    let annotated = p.to_time_zone().map_err(|e| format!("`{text}`: {e}"))?;
    let named = match zone {
        Some(z) => Some(TimeZone::get(z).map_err(|e| format!("time zone `{z}`: {e}"))?),
        None => None,
    };
    if let (Some(a), Some(n)) = (&annotated, &named)
        && a.iana_name() != n.iana_name()
    {
        return Err(format!(
            "`{text}` names another time zone than timeZone {}",
            zone.unwrap_or_default()
        ));
    }
    let offset = p.to_numeric_offset();
    match (annotated.or(named), offset) {
        (Some(tz), Some(off)) => {
            let at = civil
                .to_zoned(TimeZone::fixed(off))
                .map_err(|e| format!("`{text}`: {e}"))?
                .with_time_zone(tz.clone());
            if at.offset() != off {
                return Err(format!(
                    "`{text}`: {} is {} at that moment, not {off}",
                    tz.iana_name().unwrap_or("the time zone"),
                    at.offset()
                ));
            }
            Ok(at)
        }
        (Some(tz), None) => {
            let amb = tz.to_ambiguous_zoned(civil);
            let name = tz.iana_name().unwrap_or("the time zone").to_string();
            let kind = amb.offset();
            if matches!(kind, jiff::tz::AmbiguousOffset::Gap { .. }) {
                return Err(format!(
                    "`{text}` does not exist in {name} (the clocks skip it): write the offset you mean"
                ));
            }
            if matches!(kind, jiff::tz::AmbiguousOffset::Fold { .. }) {
                return Err(format!(
                    "`{text}` happens twice in {name} (the clocks go back): write the offset you mean"
                ));
            }
            amb.unambiguous().map_err(|e| format!("`{text}`: {e}"))
        }
        (None, Some(off)) => civil
            .to_zoned(TimeZone::fixed(off))
            .map_err(|e| format!("`{text}`: {e}")),
        (None, None) => Err(format!(
            "`{text}` has no offset and no time zone: write one (…T02:00:00+01:00) or give timeZone"
        )),
    }
}

/// A windows file as written (YAML or JSON).
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawFile {
    windows: Vec<RawEntry>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawEntry {
    /// `namespace/name`.
    gateway: Option<String>,
    /// A label selector (kubectl's syntax).
    selector: Option<String>,
    /// With `selector`: only this namespace (else every namespace).
    namespace: Option<String>,
    window: String,
    time_zone: String,
}

/// Which gateways an entry of the windows file is for.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    Gateway {
        namespace: String,
        name: String,
    },
    Selector {
        selector: LabelSelector,
        namespace: Option<String>,
    },
}

/// One entry of a windows file, read.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// 1-based, as the file's reader counts them.
    pub number: usize,
    pub target: Target,
    pub interval: Interval,
}

/// A windows file, read: every entry valid, or the file is refused.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct WindowsFile {
    pub entries: Vec<Entry>,
}

/// Read a windows file. Every entry names a gateway (`namespace/name`) or a selector
/// (optionally with a `namespace`), a `window` and a `timeZone`; an entry that cannot be
/// read refuses the whole file, naming the entry (it is the operator's own file: fix it,
/// rather than schedule the rest with a hole).
pub fn parse_file(text: &str) -> Result<WindowsFile, String> {
    let raw: RawFile = serde_saphyr::from_str(text).map_err(|e| format!("{e}"))?;
    let mut entries = Vec::new();
    for (i, e) in raw.windows.into_iter().enumerate() {
        let number = i + 1;
        let fail = |m: String| format!("windows[{number}]: {m}");
        let target = match (&e.gateway, &e.selector) {
            (Some(g), None) => {
                if e.namespace.is_some() {
                    return Err(fail(
                        "`namespace` goes with `selector`; `gateway` is namespace/name".into(),
                    ));
                }
                let (ns, name) = g
                    .split_once('/')
                    .filter(|(a, b)| !a.is_empty() && !b.is_empty() && !b.contains('/'))
                    .ok_or_else(|| fail(format!("gateway `{g}` is not namespace/name")))?;
                Target::Gateway {
                    namespace: ns.to_string(),
                    name: name.to_string(),
                }
            }
            (None, Some(s)) => Target::Selector {
                selector: LabelSelector::parse(s).map_err(fail)?,
                namespace: e.namespace.clone(),
            },
            _ => return Err(fail("give one of `gateway` or `selector`".into())),
        };
        let interval = parse_interval(&e.window, Some(&e.time_zone)).map_err(fail)?;
        entries.push(Entry {
            number,
            target,
            interval,
        });
    }
    Ok(WindowsFile { entries })
}

/// Where a gateway's window was read from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Source {
    /// The IPsecGateway's annotation `vpnmig.bnerd.net/window`.
    Annotation,
    /// The windows file's entry `entry` (1-based), for `what` (`namespace/name` or the
    /// selector).
    File { entry: usize, what: String },
}

impl Source {
    pub fn show(&self) -> String {
        match self {
            Source::Annotation => format!("annotation {ANNOTATION}"),
            Source::File { entry, what } => format!("windows file entry {entry} ({what})"),
        }
    }
}

/// A gateway's next window, or why it has none.
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    /// Ahead (`open`: under way now).
    Window {
        interval: Interval,
        source: Source,
        open: bool,
    },
    /// Nowhere written.
    None,
    /// Written, but not readable.
    Unreadable {
        source: Source,
        text: String,
        why: String,
    },
    /// Over: it ended before now.
    Past { interval: Interval, source: Source },
    /// Two sources of the same rank give different windows.
    Conflict { windows: Vec<(Source, String)> },
}

impl Next {
    /// One cell: `2026-12-08 02:00 → 03:00 +01:00 (Europe/Berlin)`, `none`, `past: …`,
    /// `unreadable: …`, `conflict: …`.
    pub fn show(&self) -> String {
        match self {
            Next::Window { interval, open, .. } => {
                if *open {
                    format!("{} (under way)", interval.show())
                } else {
                    interval.show()
                }
            }
            Next::None => "none".into(),
            Next::Unreadable { source, why, .. } => {
                format!("unreadable ({}): {why}", source.show())
            }
            Next::Past { interval, .. } => format!("past: {}", interval.show()),
            Next::Conflict { windows } => format!(
                "conflict: {}",
                windows
                    .iter()
                    .map(|(s, w)| format!("{w} ({})", s.show()))
                    .collect::<Vec<_>>()
                    .join(" vs ")
            ),
        }
    }

    /// The window to schedule, if there is one ahead.
    pub fn ahead(&self) -> Option<&Interval> {
        match self {
            Next::Window { interval, .. } => Some(interval),
            _ => None,
        }
    }
}

/// The JSON form of [`Next`] (docs/status-json.md, `nextWindow`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NextDoc {
    /// `upcoming`, `open`, `none`, `unreadable`, `past`, `conflict`.
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<Source>,
    /// The cell as text shows it.
    pub text: String,
}

impl From<&Next> for NextDoc {
    fn from(n: &Next) -> NextDoc {
        let rfc = |z: &Zoned| z.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string();
        let (state, iv, sources) = match n {
            Next::Window {
                interval,
                source,
                open,
            } => (
                if *open { "open" } else { "upcoming" },
                Some(interval),
                vec![source.clone()],
            ),
            Next::None => ("none", None, vec![]),
            Next::Unreadable { source, .. } => ("unreadable", None, vec![source.clone()]),
            Next::Past { interval, source } => ("past", Some(interval), vec![source.clone()]),
            Next::Conflict { windows } => (
                "conflict",
                None,
                windows.iter().map(|(s, _)| s.clone()).collect(),
            ),
        };
        NextDoc {
            state,
            start: iv.map(|i| rfc(&i.start)),
            end: iv.map(|i| rfc(&i.end)),
            time_zone: iv.and_then(|i| i.start.time_zone().iana_name().map(str::to_string)),
            sources,
            text: n.show(),
        }
    }
}

/// The next window of gateway `namespace/name` with `labels` and its window annotation
/// (`None`: not annotated), from the annotation and `file`, at `now`.
pub fn resolve(
    namespace: &str,
    name: &str,
    labels: &BTreeMap<String, String>,
    annotation: Option<&str>,
    file: Option<&WindowsFile>,
    now: Timestamp,
) -> Next {
    let entries = file.map(|f| f.entries.as_slice()).unwrap_or_default();
    let named: Vec<&Entry> = entries
        .iter()
        .filter(|e| {
            matches!(&e.target, Target::Gateway { namespace: n, name: g } if n == namespace && g == name)
        })
        .collect();
    let selected: Vec<&Entry> = entries
        .iter()
        .filter(|e| match &e.target {
            Target::Selector {
                selector,
                namespace: ns,
            } => ns.as_deref().is_none_or(|n| n == namespace) && selector.matches(labels),
            Target::Gateway { .. } => false,
        })
        .collect();
    let from_file = |e: &Entry| {
        let what = match &e.target {
            Target::Gateway { namespace, name } => format!("{namespace}/{name}"),
            Target::Selector { selector, .. } => selector.as_str().to_string(),
        };
        (
            Source::File {
                entry: e.number,
                what,
            },
            e.interval.clone(),
        )
    };
    let rank: Vec<(Source, Interval)> = if !named.is_empty() {
        named.into_iter().map(from_file).collect()
    } else if let Some(text) = annotation {
        match parse_interval(text, None) {
            Ok(i) => vec![(Source::Annotation, i)],
            Err(why) => {
                return Next::Unreadable {
                    source: Source::Annotation,
                    text: text.to_string(),
                    why,
                };
            }
        }
    } else {
        selected.into_iter().map(from_file).collect()
    };
    let Some((source, interval)) = rank.first().cloned() else {
        return Next::None;
    };
    let same = |a: &Interval, b: &Interval| {
        a.start.timestamp() == b.start.timestamp() && a.end.timestamp() == b.end.timestamp()
    };
    if rank.iter().any(|(_, i)| !same(i, &interval)) {
        return Next::Conflict {
            windows: rank.into_iter().map(|(s, i)| (s, i.given)).collect(),
        };
    }
    if interval.end.timestamp() <= now {
        return Next::Past { interval, source };
    }
    let open = interval.start.timestamp() <= now;
    Next::Window {
        interval,
        source,
        open,
    }
}

/// When a CronJob starts a window, in cron's terms: `(schedule, timeZone)`. The first
/// whole minute at or after the start, once a year on that date; in the window's IANA
/// zone where its wall clock reads that minute once (most of the time), else in UTC
/// (a start at an offset only, or next to a DST change, where cron in the zone would
/// skip or repeat it).
pub fn cron(start: &Zoned) -> (String, String) {
    let up = if start.second() == 0 && start.subsec_nanosecond() == 0 {
        start.clone()
    } else {
        start
            .with()
            .second(0)
            .subsec_nanosecond(0)
            .build()
            .and_then(|z| z.checked_add(SignedDuration::from_mins(1)))
            .unwrap_or_else(|_| start.clone())
    };
    let line = |z: &Zoned| format!("{} {} {} {} *", z.minute(), z.hour(), z.day(), z.month());
    let tz = up.time_zone();
    if let Some(name) = tz.iana_name()
        && name != "UTC"
        && !tz.to_ambiguous_zoned(up.datetime()).is_ambiguous()
    {
        return (line(&up), name.to_string());
    }
    let utc = up.with_time_zone(TimeZone::UTC);
    (line(&utc), "Etc/UTC".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-12-01T12:00:00Z".parse().unwrap()
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn intervals_read_as_written_or_refused_with_the_reason() {
        // (text, zone, Ok(show) | Err(part of the reason))
        let rows: &[(&str, Option<&str>, Result<&str, &str>)] = &[
            (
                "2026-12-08T02:00:00+01:00/PT1H",
                None,
                Ok("2026-12-08 02:00 → 03:00 +01:00"),
            ),
            (
                "2026-12-08T02:00:00Z/PT90M",
                None,
                Ok("2026-12-08 02:00 → 03:30 +00:00 (UTC)"),
            ),
            (
                "2026-12-08T23:30:00+01:00/PT1H",
                None,
                Ok("2026-12-08 23:30 → 2026-12-09 00:30 +01:00"),
            ),
            (
                "2026-12-08T02:00:00+01:00/2026-12-08T04:00:00+01:00",
                None,
                Ok("2026-12-08 02:00 → 04:00 +01:00"),
            ),
            (
                "2026-12-08T02:00:00+01:00[Europe/Berlin]/PT1H",
                None,
                Ok("2026-12-08 02:00 → 03:00 +01:00 (Europe/Berlin)"),
            ),
            (
                "2026-12-08T02:00/PT1H",
                Some("Europe/Berlin"),
                Ok("2026-12-08 02:00 → 03:00 +01:00 (Europe/Berlin)"),
            ),
            (
                "2026-07-08T02:00/PT2H",
                Some("Europe/Berlin"),
                Ok("2026-07-08 02:00 → 04:00 +02:00 (Europe/Berlin)"),
            ),
            (
                "2026-12-08T02:00+01:00/PT1H",
                Some("Europe/Berlin"),
                Ok("2026-12-08 02:00 → 03:00 +01:00 (Europe/Berlin)"),
            ),
            (
                "2026-12-08T21:00/P1DT1H",
                Some("America/New_York"),
                Ok("2026-12-08 21:00 → 2026-12-09 22:00 -05:00 (America/New_York)"),
            ),
            // Across the end of summer time: a 3-hour window is 3 hours.
            (
                "2026-10-25T01:00/PT3H",
                Some("Europe/Berlin"),
                Ok("2026-10-25 01:00 → 03:00 +02:00 (Europe/Berlin)"),
            ),
            (
                "2026-12-08T02:00/PT1H",
                None,
                Err("no offset and no time zone"),
            ),
            (
                "2026-07-08T02:00+01:00/PT1H",
                Some("Europe/Berlin"),
                Err("Europe/Berlin is +02 at that moment, not +01"),
            ),
            (
                "2026-03-29T02:30/PT1H",
                Some("Europe/Berlin"),
                Err("does not exist in Europe/Berlin"),
            ),
            (
                "2026-10-25T02:30/PT1H",
                Some("Europe/Berlin"),
                Err("happens twice in Europe/Berlin"),
            ),
            (
                "2026-12-08T02:00/PT1H",
                Some("Mars/Olympus"),
                Err("time zone `Mars/Olympus`"),
            ),
            (
                "2026-12-08T02:00:00+01:00",
                None,
                Err("is not START/DURATION"),
            ),
            (
                "2026-12-08T02:00:00+01:00/1h",
                None,
                Err("not an ISO 8601 date and time"),
            ),
            (
                "2026-12-08T02:00:00+01:00/PT0S",
                None,
                Err("must end after it starts"),
            ),
            ("2026-12-08T02:00:00+01:00/P8D", None, Err("at most 7 days")),
            ("2026-12-08/PT1H", Some("UTC"), Err("no time of day")),
            ("tomorrow/PT1H", None, Err("not an ISO 8601 date and time")),
        ];
        for (text, zone, want) in rows {
            let got = parse_interval(text, *zone).map(|i| i.show());
            match (want, &got) {
                (Ok(w), Ok(g)) => assert_eq!(g, w, "{text}"),
                (Err(w), Err(g)) => assert!(g.contains(w), "{text}: {g}"),
                _ => panic!("{text} {zone:?}: want {want:?}, got {got:?}"),
            }
        }
    }

    const FILE: &str = "
windows:
  - gateway: tenant-acme/acme
    window: 2026-12-08T02:00/PT1H
    timeZone: Europe/Berlin
  - selector: tier=bronze
    namespace: tenant-fra1
    window: 2026-12-09T01:00/PT2H
    timeZone: Europe/Berlin
  - selector: region=us
    window: 2026-12-09T21:00/PT2H
    timeZone: America/New_York
  - selector: tier=gold
    window: 2026-12-10T01:00/PT2H
    timeZone: Europe/Berlin
";

    #[test]
    fn each_gateway_gets_its_window_or_is_named_without_one() {
        let file = parse_file(FILE).unwrap();
        let bronze = labels(&[("tier", "bronze")]);
        let gold_us = labels(&[("tier", "gold"), ("region", "us")]);
        // (namespace, name, labels, annotation, with the file, the cell)
        type Case<'a> = (
            &'a str,
            &'a str,
            BTreeMap<String, String>,
            Option<&'a str>,
            bool,
            &'a str,
        );
        let rows: Vec<Case> = vec![
            (
                "tenant-acme",
                "acme",
                labels(&[]),
                None,
                true,
                "2026-12-08 02:00 → 03:00 +01:00 (Europe/Berlin)",
            ),
            // The file's entry naming the gateway wins over its annotation.
            (
                "tenant-acme",
                "acme",
                labels(&[]),
                Some("2026-12-20T02:00:00Z/PT1H"),
                true,
                "2026-12-08 02:00 → 03:00 +01:00 (Europe/Berlin)",
            ),
            (
                "tenant-fra1",
                "gw01",
                bronze.clone(),
                None,
                true,
                "2026-12-09 01:00 → 03:00 +01:00 (Europe/Berlin)",
            ),
            // The selector entry is for tenant-fra1 only.
            ("tenant-fra2", "gw01", bronze.clone(), None, true, "none"),
            // The annotation wins over a selector entry.
            (
                "tenant-fra1",
                "gw02",
                bronze.clone(),
                Some("2026-12-11T03:00:00+01:00/PT1H"),
                true,
                "2026-12-11 03:00 → 04:00 +01:00",
            ),
            (
                "tenant-fra1",
                "gw03",
                bronze.clone(),
                Some("2026-12-11T03:00/PT1H"),
                true,
                "unreadable (annotation vpnmig.bnerd.net/window): `2026-12-11T03:00` has no offset and no time zone: write one (…T02:00:00+01:00) or give timeZone",
            ),
            (
                "tenant-x",
                "gw04",
                gold_us.clone(),
                None,
                true,
                "conflict: 2026-12-09T21:00/PT2H (windows file entry 3 (region=us)) vs 2026-12-10T01:00/PT2H (windows file entry 4 (tier=gold))",
            ),
            (
                "tenant-x",
                "gw05",
                labels(&[]),
                Some("2026-11-30T02:00:00+01:00/PT1H"),
                false,
                "past: 2026-11-30 02:00 → 03:00 +01:00",
            ),
            (
                "tenant-x",
                "gw06",
                labels(&[]),
                Some("2026-12-01T12:30:00+01:00/PT1H"),
                false,
                "2026-12-01 12:30 → 13:30 +01:00 (under way)",
            ),
            ("tenant-x", "gw07", labels(&[]), None, false, "none"),
        ];
        for (ns, name, l, ann, with_file, want) in rows {
            let got = resolve(ns, name, &l, ann, with_file.then_some(&file), now());
            assert_eq!(got.show(), want, "{ns}/{name}");
        }
    }

    #[test]
    fn a_windows_file_with_one_bad_entry_is_refused_naming_it() {
        let rows: &[(&str, &str)] = &[
            (
                "windows:\n  - gateway: acme\n    window: 2026-12-08T02:00/PT1H\n    timeZone: UTC\n",
                "windows[1]: gateway `acme` is not namespace/name",
            ),
            (
                "windows:\n  - gateway: a/b\n    selector: x=y\n    window: 2026-12-08T02:00/PT1H\n    timeZone: UTC\n",
                "windows[1]: give one of `gateway` or `selector`",
            ),
            (
                "windows:\n  - gateway: a/b\n    window: 2026-12-08T02:00/PT1H\n    timeZone: UTC\n  - selector: x=y\n    window: 2026-12-08T02:00/PT1H\n    timeZone: Europe/Nowhere\n",
                "windows[2]: time zone `Europe/Nowhere`",
            ),
            (
                "windows:\n  - gateway: a/b\n    window: 2026-12-08T02:00/PT1H\n",
                "missing field `timeZone`",
            ),
            (
                "windows:\n  - gateway: a/b\n    window: 2026-12-08T02:00/PT1H\n    timezone: UTC\n",
                "unknown field `timezone`",
            ),
        ];
        for (text, want) in rows {
            let got = parse_file(text).unwrap_err();
            assert!(got.contains(want), "{text}: {got}");
        }
    }

    #[test]
    fn cron_starts_the_window_in_its_zone_or_in_utc() {
        let rows: &[(&str, Option<&str>, (&str, &str))] = &[
            (
                "2026-12-08T02:00/PT1H",
                Some("Europe/Berlin"),
                ("0 2 8 12 *", "Europe/Berlin"),
            ),
            (
                "2026-12-08T02:00:30/PT1H",
                Some("Europe/Berlin"),
                ("1 2 8 12 *", "Europe/Berlin"),
            ),
            (
                "2026-12-08T02:00:00+01:00/PT1H",
                None,
                ("0 1 8 12 *", "Etc/UTC"),
            ),
            (
                "2026-12-31T23:30:00-05:00/PT1H",
                None,
                ("30 4 1 1 *", "Etc/UTC"),
            ),
            (
                "2026-10-25T02:30+01:00/PT1H",
                Some("Europe/Berlin"),
                ("30 1 25 10 *", "Etc/UTC"),
            ),
        ];
        for (text, zone, (sched, tz)) in rows {
            let i = parse_interval(text, *zone).unwrap();
            assert_eq!(
                cron(&i.start),
                (sched.to_string(), tz.to_string()),
                "{text}"
            );
        }
    }

    #[test]
    fn the_json_form_says_the_state_and_the_moments() {
        let file = parse_file(FILE).unwrap();
        let n = resolve(
            "tenant-acme",
            "acme",
            &BTreeMap::new(),
            None,
            Some(&file),
            now(),
        );
        insta::assert_json_snapshot!(NextDoc::from(&n));
        let n = resolve("tenant-x", "gw", &BTreeMap::new(), Some("bad"), None, now());
        insta::assert_json_snapshot!(NextDoc::from(&n));
    }
}
