//! The window guard (issue 13 item 4), pure: when the maintenance window ends
//! (`--window-end`), how long a cutover and its rollback are expected to take, and
//! whether what is left of the window covers both.
//!
//! A cutover that starts must be able to fail at its last step and still be rolled back
//! before the window closes: the time needed is the expected cutover (what remains of
//! it) plus the expected rollback. Each is either the worst case the timeouts allow (the
//! sum of every wait's bound), or, when earlier windows left journals in the cluster,
//! the 95th percentile of what those windows took (never more than the worst case: a
//! run cannot outlast its timeouts). Only windows that ran in one go count: a window
//! interrupted and resumed by another run measures the pause, not the work.
//!
//! Layer 4 (journal, records and views): imports only from layers 0 to 4; see docs/architecture.md.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp, Zoned};

use crate::core::duration::{self, Rounding};
use crate::core::journal::{Entry, Journal, Phase};

/// The bound of each wait (the engine's `Timeouts`, as the core sees it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waits {
    pub delete: Duration,
    pub attach: Duration,
    pub tunnel: Duration,
}

impl Waits {
    /// A cutover's worst case: the old gateway's delete, FIPAttached, Ready, every
    /// VPNPeer Authorized (each bounded by `attach`), the tunnels.
    pub fn cutover(&self) -> Duration {
        self.delete + self.attach * 3 + self.tunnel
    }

    /// A rollback's worst case: the VPNPeers' delete, the VPNGateway's delete,
    /// FIPAttached, Ready, the tunnels.
    pub fn rollback(&self) -> Duration {
        self.delete * 2 + self.attach * 2 + self.tunnel
    }
}

/// When the maintenance window ends, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowEnd {
    /// The moment, in the local time zone.
    pub at: Zoned,
    /// As given on the command line.
    pub given: String,
    /// Said once when the reading may not be what was meant (an `HH:MM` that has passed
    /// today is tomorrow's).
    pub note: Option<String>,
}

/// Read `--window-end`: RFC 3339 (`2026-11-30T22:00:00+01:00`, `…Z`), or `HH:MM` in
/// the time zone of `now`, meaning the next such moment (today's if it is still ahead,
/// else tomorrow's).
pub fn parse_window_end(s: &str, now: &Zoned) -> Result<WindowEnd, String> {
    let given = s.trim();
    let tz = now.time_zone().clone();
    if let Some((h, m)) = hh_mm(given) {
        let today = now
            .date()
            .at(h, m, 0, 0)
            .to_zoned(tz.clone())
            .map_err(|e| format!("{given} today: {e}"))?;
        let at = if today.timestamp() > now.timestamp() {
            today
        } else {
            now.date()
                .tomorrow()
                .and_then(|d| d.at(h, m, 0, 0).to_zoned(tz))
                .map_err(|e| format!("{given} tomorrow: {e}"))?
        };
        let ahead = at.timestamp().duration_since(now.timestamp());
        let note = (ahead > SignedDuration::from_hours(12)).then(|| {
            format!(
                "--window-end {given} is tomorrow's {given} ({}, in {}): today's has passed; give an RFC 3339 time to be explicit",
                show(&at),
                duration::format(ahead.unsigned_abs(), Rounding::Up)
            )
        });
        return Ok(WindowEnd {
            at,
            given: given.to_string(),
            note,
        });
    }
    let ts: Timestamp = given.parse().map_err(|_| {
        format!(
            "`{given}` is neither an RFC 3339 time (like 2026-11-30T22:00:00+01:00 or 2026-11-30T21:00:00Z) nor HH:MM in local time (like 22:00)"
        )
    })?;
    Ok(WindowEnd {
        at: ts.to_zoned(tz),
        given: given.to_string(),
        note: None,
    })
}

/// `H:MM` or `HH:MM`, 00:00 to 23:59.
fn hh_mm(s: &str) -> Option<(i8, i8)> {
    let (h, m) = s.split_once(':')?;
    if !(1..=2).contains(&h.len()) || m.len() != 2 {
        return None;
    }
    if !h.bytes().chain(m.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m): (i8, i8) = (h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60).then_some((h, m))
}

/// What earlier windows took, from their journals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    /// Each cutover that ran from `started` to `done` in one run: when it reached each
    /// phase.
    pub cutovers: Vec<Vec<(Phase, Timestamp)>>,
    /// Each rollback that ran in one run from `rolling-back` (after the delete: one that
    /// only closed a journal before it is no measure) to `rolled-back`.
    pub rollbacks: Vec<Duration>,
    /// How many journals were read.
    pub journals: usize,
    /// Cutovers and rollbacks left out because another run resumed them.
    pub resumed: usize,
}

/// The timings of every journal in `journals`.
pub fn history<'a>(journals: impl IntoIterator<Item = &'a Journal>) -> History {
    histories(journals.into_iter().map(|j| j.history.as_slice()))
}

/// The timings of journals' `history` lists.
pub fn histories<'a>(journals: impl IntoIterator<Item = &'a [Entry]>) -> History {
    let mut h = History::default();
    for history in journals {
        h.journals += 1;
        let entries: Option<Vec<(Phase, Timestamp, &str)>> = history
            .iter()
            .map(|e| Some((e.phase, e.at.parse().ok()?, e.by.as_str())))
            .collect();
        // A journal whose timestamps do not read says nothing about durations.
        let Some(entries) = entries else { continue };
        let mut i = 0;
        while i < entries.len() {
            let (phase, _, by) = entries[i];
            let before = i.checked_sub(1).map(|p| entries[p].0);
            let end = match phase {
                Phase::Started => Phase::Done,
                Phase::RollingBack if before.is_some_and(Phase::past_delete) => Phase::RolledBack,
                _ => {
                    i += 1;
                    continue;
                }
            };
            // The segment: up to its end, or up to where another operation begins.
            let stop = entries[i + 1..]
                .iter()
                .position(|e| e.0 == end || e.0 == Phase::Started || e.0 == Phase::RollingBack)
                .map(|p| p + i + 1);
            let Some(last) = stop.filter(|&s| entries[s].0 == end) else {
                i = stop.unwrap_or(entries.len());
                continue;
            };
            let segment = &entries[i..=last];
            if segment.iter().any(|e| e.2 != by) {
                h.resumed += 1;
            } else if end == Phase::Done {
                h.cutovers
                    .push(segment.iter().map(|(p, t, _)| (*p, *t)).collect());
            } else if let Ok(d) =
                Duration::try_from(segment[segment.len() - 1].1.duration_since(segment[0].1))
            {
                h.rollbacks.push(d);
            }
            i = last + 1;
        }
    }
    h
}

/// The 95th percentile (nearest rank) of `samples`; `None` when there are none.
pub fn p95(samples: &[Duration]) -> Option<Duration> {
    let mut v = samples.to_vec();
    v.sort();
    let rank = (v.len() * 95).div_ceil(100);
    v.get(rank.checked_sub(1)?).copied()
}

/// Where an expected duration comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The worst case: the sum of the waits' bounds.
    Timeouts,
    /// The p95 of `of` earlier windows; `capped` when it exceeded the worst case the
    /// current timeouts allow, which is used instead.
    Journals { of: usize, capped: bool },
}

/// An expected duration and where it comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Estimate {
    pub duration: Duration,
    pub source: Source,
}

impl Estimate {
    fn of(samples: &[Duration], worst: Duration) -> Estimate {
        match p95(samples) {
            None => Estimate {
                duration: worst,
                source: Source::Timeouts,
            },
            Some(p) => Estimate {
                duration: p.min(worst),
                source: Source::Journals {
                    of: samples.len(),
                    capped: p > worst,
                },
            },
        }
    }

    /// `25m (worst case from the timeouts)`, `12m (p95 of 7 earlier windows)`.
    pub fn describe(&self) -> String {
        let how = match self.source {
            Source::Timeouts => "worst case from the timeouts".to_string(),
            Source::Journals { of, capped } => format!(
                "p95 of {of} earlier {}{}",
                if of == 1 {
                    "window's journal"
                } else {
                    "windows' journals"
                },
                if capped {
                    ", capped at the timeouts' worst case"
                } else {
                    ""
                }
            ),
        };
        format!("{} ({how})", duration::format(self.duration, Rounding::Up))
    }
}

/// What a window needs: what remains of the cutover (from `from`; none for a
/// rollback), and the rollback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needed {
    /// The phase the cutover goes on from (`started` for a new one).
    pub from: Phase,
    pub cutover: Option<Estimate>,
    pub rollback: Estimate,
}

impl Needed {
    pub fn total(&self) -> Duration {
        self.cutover.map_or(Duration::ZERO, |c| c.duration) + self.rollback.duration
    }
}

/// The time a cutover going on from phase `from` and its rollback are expected to take.
pub fn needed(h: &History, waits: &Waits, from: Phase) -> Needed {
    let remaining: Vec<Duration> = h
        .cutovers
        .iter()
        .filter_map(|seg| {
            let start = seg.iter().find(|(p, _)| *p == from)?.1;
            let done = seg.last()?.1;
            Duration::try_from(done.duration_since(start)).ok()
        })
        .collect();
    Needed {
        from,
        cutover: Some(Estimate::of(&remaining, waits.cutover())),
        rollback: Estimate::of(&h.rollbacks, waits.rollback()),
    }
}

/// The time a rollback (resumed from `from`, or begun) is expected to take: the guard
/// of `rollback`, which only warns.
pub fn needed_rollback(h: &History, waits: &Waits, from: Phase) -> Needed {
    Needed {
        from,
        cutover: None,
        rollback: Estimate::of(&h.rollbacks, waits.rollback()),
    }
}

/// Where in a cutover the guard is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    /// Before anything: refused means nothing was changed.
    Start,
    /// After the confirmation (which may have waited long): nothing was changed yet.
    Confirmed,
    /// Right before the delete of the IPsecGateway: the journal is written and the PSK
    /// Secret detached, nothing is deleted.
    BeforeDelete { phase: Phase },
}

/// The guard's figures at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct Figures {
    pub end: WindowEnd,
    /// Until the end; negative when it has passed.
    pub left: SignedDuration,
    pub needed: Needed,
}

impl Figures {
    pub fn at(end: &WindowEnd, now: Timestamp, needed: Needed) -> Figures {
        Figures {
            end: end.clone(),
            left: end.at.timestamp().duration_since(now),
            needed,
        }
    }

    /// Whether what is left covers what is needed.
    pub fn enough(&self) -> bool {
        self.left >= SignedDuration::try_from(self.needed.total()).unwrap_or(SignedDuration::MAX)
    }

    /// `the window ends at 2026-11-30 22:00 CET (in 31m)` / `(12m ago)`.
    pub fn left_text(&self) -> String {
        until(&self.end, self.left)
    }

    /// `50m: cutover 25m (…) + rollback 25m (…)`.
    pub fn needed_text(&self) -> String {
        let Some(cutover) = self.needed.cutover else {
            return format!(
                "{}: rollback {}",
                duration::format(self.needed.total(), Rounding::Up),
                self.needed.rollback.describe()
            );
        };
        let what = if self.needed.from == Phase::Started {
            "cutover".to_string()
        } else {
            format!("the rest of the cutover from phase {}", self.needed.from)
        };
        format!(
            "{}: {what} {} + rollback {}",
            duration::format(self.needed.total(), Rounding::Up),
            cutover.describe(),
            self.needed.rollback.describe()
        )
    }

    /// The one line a run shows: both figures and the verdict.
    pub fn summary(&self) -> String {
        format!(
            "window guard: {}; needed {}: {}",
            self.left_text(),
            self.needed_text(),
            if self.enough() {
                "enough"
            } else {
                "not enough"
            }
        )
    }

    /// The refusal of a cutover of `ns/name` at `moment`: its message and its hint.
    /// `without_guard` is the command that goes on regardless (`--window-end`
    /// omitted); `later` the same with `--window-end END` for a later window.
    pub fn refusal(
        &self,
        name: &str,
        ns: &str,
        moment: Moment,
        later: &str,
        without_guard: &str,
    ) -> (String, String) {
        let changed = match moment {
            Moment::Start | Moment::Confirmed => "nothing was changed".to_string(),
            Moment::BeforeDelete { phase } => format!(
                "nothing was deleted: the IPsecGateway is untouched and the tunnel stays up (journal phase {phase})"
            ),
        };
        let when = match moment {
            Moment::Start => "",
            Moment::Confirmed => " (checked again after the confirmation)",
            Moment::BeforeDelete { .. } => " (checked again right before the delete)",
        };
        let message = format!(
            "refusing to cut over {name} -n {ns}: {}, but a cutover and its rollback need {}{when}; {changed}",
            self.left_text(),
            self.needed_text()
        );
        let close = match moment {
            Moment::BeforeDelete { .. } => format!(
                "`vpnmig rollback {name} -n {ns}` closes the journal (the IPsecGateway stays); "
            ),
            _ => String::new(),
        };
        let hint = format!(
            "{close}cut over in a later window that leaves at least {}: at its start, `{later}`; or, to go on now without the guard, `{without_guard}`",
            duration::format(self.needed.total(), Rounding::Up)
        );
        (message, hint)
    }
}

/// `the window ends at 2026-11-30 22:00:00 CET (in 31m)` / `ended at … (12m ago)`,
/// `left` before `end`.
pub fn until(end: &WindowEnd, left: SignedDuration) -> String {
    if left.is_positive() {
        // Down to the second: what is left is never shown as more than it is.
        let left = Duration::from_secs(left.unsigned_abs().as_secs());
        format!(
            "the window ends at {} (in {})",
            show(&end.at),
            duration::format(left, Rounding::Up)
        )
    } else {
        format!(
            "the window ended at {} ({} ago)",
            show(&end.at),
            duration::format(left.unsigned_abs(), Rounding::Up)
        )
    }
}

/// A moment as people read it: `2026-11-30 22:00:00 CET`.
pub fn show(at: &Zoned) -> String {
    at.strftime("%Y-%m-%d %H:%M:%S %Z").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::tz::TimeZone;

    fn min(m: u64) -> Duration {
        Duration::from_secs(m * 60)
    }

    fn waits() -> Waits {
        Waits {
            delete: min(5),
            attach: min(5),
            tunnel: min(5),
        }
    }

    fn berlin(s: &str) -> Zoned {
        s.parse::<jiff::civil::DateTime>()
            .unwrap()
            .to_zoned(TimeZone::get("Europe/Berlin").unwrap())
            .unwrap()
    }

    /// A journal whose history is `(phase, minute, run)`, from 20:00 UTC.
    fn journal(entries: &[(Phase, u64, &str)]) -> Vec<Entry> {
        let t0: Timestamp = "2026-11-01T20:00:00Z".parse().unwrap();
        entries
            .iter()
            .map(|(phase, m, by)| Entry {
                phase: *phase,
                at: (t0 + SignedDuration::from_secs(*m as i64 * 60))
                    .strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
                    .to_string(),
                by: by.to_string(),
                prev: None,
            })
            .collect()
    }

    /// A cutover of `minutes` in one run, then (if `rollback`) a rollback of that many.
    fn window(minutes: u64, rollback: Option<u64>) -> Vec<Entry> {
        let mut e = vec![
            (Phase::Started, 0, "a"),
            (Phase::PskDetached, 0, "a"),
            (Phase::Deleting, 1, "a"),
            (Phase::Deleted, minutes / 2, "a"),
            (Phase::Done, minutes, "a"),
        ];
        if let Some(r) = rollback {
            e.push((Phase::RollingBack, minutes + 10, "b"));
            e.push((Phase::NewDeleted, minutes + 10 + r / 2, "b"));
            e.push((Phase::RolledBack, minutes + 10 + r, "b"));
        }
        journal(&e)
    }

    #[test]
    fn window_end_reads_rfc3339_and_hh_mm_as_the_next_such_moment() {
        let now = berlin("2026-11-30T21:30:00");
        for (given, want, note) in [
            ("22:00", "2026-11-30 22:00:00 CET", false),
            ("2:00", "2026-12-01 02:00:00 CET", false),
            // Across midnight: 00:15 is tomorrow's.
            ("00:15", "2026-12-01 00:15:00 CET", false),
            // Passed today: tomorrow's, and said so.
            ("21:00", "2026-12-01 21:00:00 CET", true),
            ("21:30", "2026-12-01 21:30:00 CET", true),
            (
                "2026-11-30T23:00:00+01:00",
                "2026-11-30 23:00:00 CET",
                false,
            ),
            ("2026-11-30T22:00:00Z", "2026-11-30 23:00:00 CET", false),
            // In the past: read as given (the guard then says it has passed).
            ("2026-11-30T19:00:00Z", "2026-11-30 20:00:00 CET", false),
        ] {
            let end = parse_window_end(given, &now).unwrap_or_else(|e| panic!("{given}: {e}"));
            assert_eq!(show(&end.at), want, "{given}");
            assert_eq!(end.note.is_some(), note, "{given}: {:?}", end.note);
        }
        for bad in [
            "24:00",
            "22:60",
            "2200",
            "22:0",
            "tomorrow",
            "2026-11-30T22:00:00",
            "",
        ] {
            let e = parse_window_end(bad, &now).unwrap_err();
            assert!(e.contains("RFC 3339") || e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn hh_mm_on_a_dst_night_is_a_real_moment() {
        // 2026-03-29 02:30 does not exist in Berlin: the next real moment is taken.
        let now = berlin("2026-03-29T01:00:00");
        let end = parse_window_end("02:30", &now).unwrap();
        assert_eq!(show(&end.at), "2026-03-29 03:30:00 CEST");
    }

    #[test]
    fn p95_is_the_nearest_rank() {
        assert_eq!(p95(&[]), None);
        assert_eq!(p95(&[min(7)]), Some(min(7)));
        assert_eq!(p95(&[min(9), min(7), min(8)]), Some(min(9)));
        // 20 samples: the 19th; 40: the 38th (the two outliers left out).
        let mut v: Vec<Duration> = (1..=18).map(min).collect();
        v.extend([min(100), min(200)]);
        assert_eq!(p95(&v), Some(min(100)));
        let mut v: Vec<Duration> = (1..=38).map(|_| min(10)).collect();
        v.extend([min(100), min(200)]);
        assert_eq!(p95(&v), Some(min(10)));
    }

    #[test]
    fn the_estimate_comes_from_the_journals_when_there_are_any() {
        let w = waits();
        struct Case {
            what: &'static str,
            journals: Vec<Vec<Entry>>,
            from: Phase,
            cutover: (u64, Source),
            rollback: (u64, Source),
        }
        let outliers: Vec<Vec<Entry>> = (0..38)
            .map(|_| window(10, Some(6)))
            .chain([window(24, Some(20)), window(23, Some(21))])
            .collect();
        let cases = [
            Case {
                what: "no journals: the timeouts' worst case",
                journals: vec![],
                from: Phase::Started,
                cutover: (25, Source::Timeouts),
                rollback: (25, Source::Timeouts),
            },
            Case {
                what: "a few: their p95 (the largest)",
                journals: vec![window(8, None), window(12, Some(6)), window(10, None)],
                from: Phase::Started,
                cutover: (
                    12,
                    Source::Journals {
                        of: 3,
                        capped: false,
                    },
                ),
                rollback: (
                    6,
                    Source::Journals {
                        of: 1,
                        capped: false,
                    },
                ),
            },
            Case {
                what: "outliers beyond the p95 are left out",
                journals: outliers,
                from: Phase::Started,
                cutover: (
                    10,
                    Source::Journals {
                        of: 40,
                        capped: false,
                    },
                ),
                rollback: (
                    6,
                    Source::Journals {
                        of: 40,
                        capped: false,
                    },
                ),
            },
            Case {
                what: "a p95 beyond the worst case is capped",
                journals: vec![window(90, Some(60))],
                from: Phase::Started,
                cutover: (
                    25,
                    Source::Journals {
                        of: 1,
                        capped: true,
                    },
                ),
                rollback: (
                    25,
                    Source::Journals {
                        of: 1,
                        capped: true,
                    },
                ),
            },
            Case {
                what: "a resume: what remains from its phase",
                journals: vec![window(20, None)],
                from: Phase::Deleting,
                cutover: (
                    19,
                    Source::Journals {
                        of: 1,
                        capped: false,
                    },
                ),
                rollback: (25, Source::Timeouts),
            },
        ];
        for c in cases {
            let h = histories(c.journals.iter().map(Vec::as_slice));
            let n = needed(&h, &w, c.from);
            let cutover = n.cutover.unwrap();
            assert_eq!(
                (cutover.duration, cutover.source),
                (min(c.cutover.0), c.cutover.1),
                "{}",
                c.what
            );
            assert_eq!(
                (n.rollback.duration, n.rollback.source),
                (min(c.rollback.0), c.rollback.1),
                "{}",
                c.what
            );
        }
    }

    #[test]
    fn only_windows_that_ran_in_one_go_are_measured() {
        let resumed = journal(&[
            (Phase::Started, 0, "a"),
            (Phase::Deleting, 1, "a"),
            (Phase::Deleted, 70, "b"),
            (Phase::Done, 75, "b"),
        ]);
        // Stopped and rolled back at once: no cutover; a rollback before the delete
        // only closed the journal.
        let failed = journal(&[
            (Phase::Started, 0, "a"),
            (Phase::Deleting, 1, "a"),
            (Phase::Ready, 8, "a"),
            (Phase::RollingBack, 13, "a"),
            (Phase::RolledBack, 20, "a"),
        ]);
        let closed = journal(&[
            (Phase::Started, 0, "a"),
            (Phase::PskDetached, 0, "a"),
            (Phase::RollingBack, 1, "b"),
            (Phase::RolledBack, 1, "b"),
        ]);
        let mut garbled = window(5, None);
        garbled[1].at = "yesterday".into();
        let h = histories([&resumed, &failed, &closed, &garbled].map(Vec::as_slice));
        assert_eq!(h.journals, 4);
        assert_eq!(h.resumed, 1);
        assert!(h.cutovers.is_empty(), "{h:?}");
        assert_eq!(h.rollbacks, [min(7)]);
    }

    #[test]
    fn the_verdict_says_both_figures_and_what_works() {
        let now = berlin("2026-11-30T21:30:00");
        let n = needed(&History::default(), &waits(), Phase::Started);
        for (end, enough, left) in [
            (
                "23:00",
                true,
                "the window ends at 2026-11-30 23:00:00 CET (in 1h30m)",
            ),
            (
                "22:20",
                true,
                "the window ends at 2026-11-30 22:20:00 CET (in 50m)",
            ),
            (
                "22:19",
                false,
                "the window ends at 2026-11-30 22:19:00 CET (in 49m)",
            ),
            (
                "2026-11-30T20:00:00Z",
                false,
                "the window ended at 2026-11-30 21:00:00 CET (30m ago)",
            ),
        ] {
            let end = parse_window_end(end, &now).unwrap();
            let f = Figures::at(&end, now.timestamp(), n);
            assert_eq!(f.enough(), enough, "{end:?}");
            assert_eq!(f.left_text(), left);
            let (message, hint) = f.refusal(
                "acme",
                "tenant-acme",
                Moment::Start,
                "vpnmig cutover acme --window-end END",
                "vpnmig cutover acme",
            );
            assert!(message.contains(left), "{message}");
            assert!(
                message.contains(
                    "need 50m: cutover 25m (worst case from the timeouts) + rollback 25m (worst case from the timeouts); nothing was changed"
                ),
                "{message}"
            );
            assert!(hint.contains("at least 50m"), "{hint}");
            assert!(hint.contains("`vpnmig cutover acme`"), "{hint}");
        }
        let end = parse_window_end("22:00", &now).unwrap();
        let f = Figures::at(&end, now.timestamp(), n);
        let (message, hint) = f.refusal(
            "acme",
            "tenant-acme",
            Moment::BeforeDelete {
                phase: Phase::PskDetached,
            },
            "L",
            "W",
        );
        assert!(message.contains("right before the delete"), "{message}");
        assert!(message.contains("nothing was deleted"), "{message}");
        assert!(
            hint.starts_with("`vpnmig rollback acme -n tenant-acme` closes"),
            "{hint}"
        );
    }
}
