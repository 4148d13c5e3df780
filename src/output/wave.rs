//! A wave (issue 15 item 3) as people and scripts see it: the summary shown before the
//! one confirmation, the progress on stderr while windows run, and the final summary on
//! stdout (a table and totals, or the JSON document of docs/wave-json.md).
//!
//! Progress: elsewhere than a terminal (a log, CI, a pipe) one line per event, each
//! prefixed with the gateway's `namespace/name` ([`Log`]); on a terminal an indicatif
//! `MultiProgress` with a header (done, failed, running, left) and one live line per
//! running window: the journal's phase, its stage or what its wait waits for, and the
//! elapsed time
//! ([`Board`]). The lines that record what was done (`✓`, `!`, `✗`) are printed above it.

use std::collections::BTreeMap;
use std::time::Duration;

use comfy_table::{ContentArrangement, Table, presets};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

use crate::core::duration::{self, Rounding};
use crate::output::progress::elapsed;
use crate::output::window::{Format, Waits};
use crate::window::wave::{GatewayReport, Halt, WaveEvent, WaveEvents, WaveReport, WindowResult};
use crate::window::{Event, Operation};

/// `apiVersion` of the wave summary document.
pub const API_VERSION: &str = "vpnmig.bnerd.net/wave/v1";

/// What the user confirms: the gateways, K, F and the timeouts.
pub fn summary(
    operation: Operation,
    context: &str,
    members: &[String],
    concurrency: usize,
    max_failures: usize,
    waits: &Waits,
    dry_run: bool,
) -> String {
    let mut out = format!(
        "Wave: {}{} of {} gateway(s) in context {context}, {concurrency} at a time; no new window after {max_failures} failure(s)\n",
        if dry_run { "dry run of the " } else { "" },
        operation.as_str(),
        members.len(),
    );
    out.push_str(&format!(
        "Each window: its own lock, journal and checks; timeouts delete {}, attach {}, tunnel {}\n",
        duration::format(waits.delete, Rounding::Down),
        duration::format(waits.attach, Rounding::Down),
        duration::format(waits.tunnel, Rounding::Down)
    ));
    for m in members {
        out.push_str(&format!("  {m}\n"));
    }
    out
}

/// One event of a window as a line without its gateway (None: no line of its own).
fn line(e: &Event) -> Option<String> {
    Some(match e {
        Event::Stage(s) => format!("stage {}", s.as_str()),
        Event::Recorded { phase } => format!("journal phase {phase}"),
        Event::WaitStarted { title } => format!("… {title}"),
        Event::Waiting {
            title,
            elapsed: t,
            seen,
        } => format!("    [{}] {title}: {seen}", elapsed(*t)),
        Event::WaitFinished {
            title,
            elapsed: t,
            result,
        } => match result {
            Ok(note) if note.is_empty() => format!("✓ {title} ({})", elapsed(*t)),
            Ok(note) => format!("✓ {title} ({}): {note}", elapsed(*t)),
            Err(why) => format!("✗ {title} ({}): {why}", elapsed(*t)),
        },
        Event::Step(l) => format!("✓ {l}"),
        Event::Warning(l) => format!("! {l}"),
        Event::Note(l) => format!("note: {l}"),
        Event::Info(l) => l.clone(),
        Event::RollingBack { phase } => {
            format!("✗ cutover stopped at phase {phase}; --rollback-on-failure: rolling back")
        }
        Event::Guard { figures, .. } => {
            let mark = if figures.enough() { "✓" } else { "✗" };
            format!("{mark} {}", figures.summary())
        }
        Event::Drift(d) => crate::output::window::drift(d).trim_end().to_string(),
        Event::Blocked(plan) => crate::output::window::blockers(plan)
            .join("")
            .trim_end()
            .to_string(),
        Event::DataPlane(c) => crate::output::dataplane::summary(c),
        Event::Finished {
            operation, journal, ..
        } => format!(
            "{} finished: journal phase {}{}",
            operation.as_str(),
            journal.phase,
            journal
                .outage_ms
                .filter(|_| *operation == Operation::Cutover)
                .map(|ms| format!(", outage {}", elapsed(Duration::from_millis(ms))))
                .unwrap_or_default()
        ),
        Event::Stopped { code, message } => format!("✗ stopped (exit {code}): {message}"),
    })
}

fn halted_line(halt: Halt, running: usize, not_started: usize) -> String {
    match halt {
        Halt::MaxFailures => format!(
            "wave: --max-failures reached: no new window starts; {running} running finish, {not_started} not started"
        ),
        Halt::Interrupted => format!(
            "wave: interrupted: no new window starts; {running} running stop at a safe point, {not_started} not started"
        ),
    }
}

/// The counters of the header.
#[derive(Default)]
struct Counts {
    total: usize,
    done: usize,
    /// Skipped: done already, or locked by another run.
    skipped: usize,
    dry_run: usize,
    failed: usize,
    other: usize,
    running: usize,
}

impl Counts {
    fn header(&self) -> String {
        let left = self.total.saturating_sub(
            self.done + self.skipped + self.dry_run + self.failed + self.other + self.running,
        );
        // As the summary counts them: a dry run or a skip is not "done".
        let finished = if self.dry_run > 0 {
            format!("{} dry-run", self.dry_run)
        } else {
            format!("{} done", self.done)
        };
        format!(
            "wave: {finished}, {} skipped, {} failed, {} other, {} running, {} left",
            self.skipped, self.failed, self.other, self.running, left
        )
    }

    fn ended(&mut self, r: &GatewayReport) {
        self.running = self.running.saturating_sub(1);
        match r.result {
            WindowResult::Done => self.done += 1,
            WindowResult::SkippedDone | WindowResult::SkippedLocked => self.skipped += 1,
            WindowResult::DryRun => self.dry_run += 1,
            WindowResult::Failed => self.failed += 1,
            _ => self.other += 1,
        }
    }
}

fn ended_line(r: &GatewayReport) -> String {
    format!(
        "→ {}{}{}",
        r.result.as_str(),
        r.phase.map(|p| format!(" (phase {p})")).unwrap_or_default(),
        r.message
            .as_deref()
            .map(|m| format!(": {m}"))
            .unwrap_or_default()
    )
}

/// Plain progress: one line per event on stderr, `namespace/name: …`.
pub struct Log {
    counts: Counts,
}

impl Log {
    pub fn new(total: usize) -> Log {
        Log {
            counts: Counts {
                total,
                ..Default::default()
            },
        }
    }
}

impl WaveEvents for Log {
    fn event(&mut self, e: WaveEvent) {
        match e {
            WaveEvent::Started {
                namespace, name, ..
            } => {
                self.counts.running += 1;
                crate::output::say(&format!("{namespace}/{name}: window starts"));
            }
            WaveEvent::Window {
                namespace,
                name,
                event,
            } => {
                if let Some(l) = line(&event) {
                    for l in l.lines() {
                        crate::output::say(&format!("{namespace}/{name}: {l}"));
                    }
                }
            }
            WaveEvent::Ended(r) => {
                self.counts.ended(&r);
                crate::output::say(&format!("{}/{}: {}", r.namespace, r.name, ended_line(&r)));
                crate::output::say(&self.counts.header());
            }
            WaveEvent::Halted {
                halt,
                running,
                not_started,
            } => crate::output::say(&halted_line(halt, running, not_started)),
        }
    }
}

/// Terminal progress: a header and one live line per running window.
pub struct Board {
    multi: MultiProgress,
    header: ProgressBar,
    /// Per running window: its line and the journal phase it last recorded.
    bars: BTreeMap<String, (ProgressBar, Option<crate::core::journal::Phase>)>,
    counts: Counts,
}

impl Board {
    pub fn new(total: usize) -> Board {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let header = multi.add(ProgressBar::new(total as u64));
        header.set_style(
            ProgressStyle::with_template("{wide_msg} [{elapsed}]").expect("the template is valid"),
        );
        let counts = Counts {
            total,
            ..Default::default()
        };
        header.set_message(counts.header());
        header.enable_steady_tick(Duration::from_millis(200));
        Board {
            multi,
            header,
            bars: BTreeMap::new(),
            counts,
        }
    }

    fn say(&self, line: String) {
        let _ = self.multi.println(line);
    }

    /// The live line of `key`: `phase P · ` (once the journal has one), then `what`.
    fn show(&self, key: &str, what: String) {
        if let Some((bar, phase)) = self.bars.get(key) {
            match phase {
                Some(p) => bar.set_message(format!("phase {p} · {what}")),
                None => bar.set_message(what),
            }
        }
    }
}

impl WaveEvents for Board {
    fn event(&mut self, e: WaveEvent) {
        match e {
            WaveEvent::Started {
                namespace, name, ..
            } => {
                self.counts.running += 1;
                let bar = self.multi.add(ProgressBar::no_length());
                bar.set_style(
                    // Cut to the terminal's width: one line per window, always.
                    ProgressStyle::with_template("  {spinner} {prefix} [{elapsed}] {wide_msg}")
                        .expect("the template is valid"),
                );
                bar.set_prefix(format!("{namespace}/{name}"));
                bar.set_message("starting");
                bar.enable_steady_tick(Duration::from_millis(100));
                self.bars.insert(format!("{namespace}/{name}"), (bar, None));
                self.header.set_message(self.counts.header());
            }
            WaveEvent::Window {
                namespace,
                name,
                event,
            } => {
                let key = format!("{namespace}/{name}");
                match &event {
                    Event::Stage(s) => self.show(&key, s.as_str().to_string()),
                    Event::WaitStarted { title } => self.show(&key, title.clone()),
                    Event::Waiting {
                        title,
                        elapsed: t,
                        seen,
                    } => self.show(&key, format!("{title} [{}]: {seen}", elapsed(*t))),
                    Event::Recorded { phase } => {
                        if let Some((_, p)) = self.bars.get_mut(&key) {
                            *p = Some(*phase);
                        }
                    }
                    Event::Stopped { .. } => {}
                    _ => {
                        if let Some(l) = line(&event) {
                            for l in l.lines() {
                                self.say(format!("{key}: {l}"));
                            }
                        }
                    }
                }
            }
            WaveEvent::Ended(r) => {
                let key = format!("{}/{}", r.namespace, r.name);
                if let Some((b, _)) = self.bars.remove(&key) {
                    b.finish_and_clear();
                    self.multi.remove(&b);
                }
                self.counts.ended(&r);
                self.say(format!("{key}: {}", ended_line(&r)));
                self.header.set_message(self.counts.header());
            }
            WaveEvent::Halted {
                halt,
                running,
                not_started,
            } => self.say(halted_line(halt, running, not_started)),
        }
    }
}

impl Drop for Board {
    fn drop(&mut self) {
        for (b, _) in self.bars.values() {
            b.finish_and_clear();
        }
        self.header.finish_and_clear();
    }
}

/// The final summary: a table (NAMESPACE, NAME, RESULT, PHASE, OUTAGE, MESSAGE) and the
/// totals, or the JSON document (docs/wave-json.md).
pub fn render(report: &WaveReport, dry_run: bool, format: Format) -> String {
    let totals = |r: WindowResult| report.count(r);
    match format {
        Format::Json => {
            let doc = json!({
                "apiVersion": API_VERSION,
                "toolVersion": env!("CARGO_PKG_VERSION"),
                "operation": report.operation.as_str(),
                "dryRun": dry_run,
                "concurrency": report.concurrency,
                "maxFailures": report.max_failures,
                "halted": report.halted,
                "exitCode": report.exit_code(),
                "elapsedMs": report.elapsed.as_millis() as u64,
                "totals": {
                    "gateways": report.gateways.len(),
                    "done": totals(WindowResult::Done),
                    "skippedDone": totals(WindowResult::SkippedDone),
                    "skippedLocked": totals(WindowResult::SkippedLocked),
                    "dryRun": totals(WindowResult::DryRun),
                    "failed": totals(WindowResult::Failed),
                    "interrupted": totals(WindowResult::Interrupted),
                    "notStarted": totals(WindowResult::NotStarted),
                },
                "gateways": report.gateways,
            });
            serde_json::to_string_pretty(&doc).expect("wave reports serialize") + "\n"
        }
        Format::Text => {
            let mut table = Table::new();
            // The MESSAGE column wraps within stdout's width (100 columns off a terminal).
            table
                .load_preset(presets::NOTHING)
                .set_content_arrangement(ContentArrangement::Dynamic)
                .set_width(u16::try_from(crate::output::width::detect() + 1).unwrap_or(u16::MAX));
            table.set_header(["NAMESPACE", "NAME", "RESULT", "PHASE", "OUTAGE", "MESSAGE"]);
            for g in &report.gateways {
                table.add_row([
                    g.namespace.clone(),
                    g.name.clone(),
                    g.result.as_str().to_string(),
                    g.phase.map_or("-".to_string(), |p| p.to_string()),
                    g.outage_ms
                        .map_or("-".to_string(), |ms| elapsed(Duration::from_millis(ms))),
                    g.message.clone().unwrap_or_else(|| "-".into()),
                ]);
            }
            let mut out: String = table
                .to_string()
                .lines()
                .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l).trim_end()))
                .collect();
            let mut parts = Vec::new();
            for r in [
                WindowResult::Done,
                WindowResult::SkippedDone,
                WindowResult::SkippedLocked,
                WindowResult::DryRun,
                WindowResult::Failed,
                WindowResult::Interrupted,
                WindowResult::NotStarted,
            ] {
                let n = totals(r);
                if n > 0 {
                    parts.push(format!("{n} {}", r.as_str()));
                }
            }
            out.push_str(&format!(
                "\n{} of {} gateway(s): {} ({}){}\n",
                report.operation.as_str(),
                report.gateways.len(),
                if parts.is_empty() {
                    "none".to_string()
                } else {
                    parts.join(", ")
                },
                elapsed(report.elapsed),
                match report.halted {
                    Some(Halt::MaxFailures) => format!(
                        "; halted: {} failure(s) reached --max-failures {}",
                        totals(WindowResult::Failed),
                        report.max_failures
                    ),
                    Some(Halt::Interrupted) => "; halted: interrupted".to_string(),
                    None => String::new(),
                }
            ));
            // What each gateway that the same command cannot clear needs (issue 21 item 8).
            let own: Vec<_> = report
                .gateways
                .iter()
                .filter(|g| g.advice.is_some())
                .collect();
            if !own.is_empty() {
                out.push_str("\nbefore running it again:\n");
                for g in own {
                    out.push_str(&format!(
                        "  {}/{}: {}\n",
                        g.namespace,
                        g.name,
                        g.advice.as_deref().unwrap_or_default()
                    ));
                }
            }
            out
        }
    }
}
