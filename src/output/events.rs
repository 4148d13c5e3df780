//! The window engine's events (`crate::window::Event`) as one gateway's live view: what
//! `vpnmig cutover` and `vpnmig rollback` print while they run. Each wait is its live
//! line (`output::progress`); steps, warnings and notes are lines on stderr; the final
//! report goes to stdout in the `-o` format (`output::window::report`).

use crate::output::progress::Step;
use crate::output::window::{self as render, Format};
use crate::window::{Event, Events};

/// The engine's events as the one-gateway commands show them: each wait as its live
/// line (`output::progress`), the steps, warnings and notes as lines on stderr, and the
/// final report on stdout in the `-o` format.
pub struct LiveView {
    format: Format,
    /// The wait under way.
    step: Option<Step>,
    /// This run wrote the journal (so there is a record to point to).
    recorded: bool,
}

impl LiveView {
    pub fn new(format: Format) -> Self {
        LiveView {
            format,
            step: None,
            recorded: false,
        }
    }

    /// Whether this run wrote the journal (a window started or went on).
    pub fn recorded(&self) -> bool {
        self.recorded
    }
}

impl Events for LiveView {
    fn event(&mut self, e: Event) {
        // A wait that ended in an error has no line of its own: its live line is cleared
        // before anything else is written.
        if !matches!(e, Event::Waiting { .. } | Event::WaitFinished { .. }) {
            self.step = None;
        }
        match e {
            Event::WaitStarted { title } => self.step = Some(Step::start(title)),
            Event::Waiting { seen, .. } => {
                if let Some(step) = &self.step {
                    step.update(&seen);
                }
            }
            Event::WaitFinished { result, .. } => {
                if let Some(step) = self.step.take() {
                    match result {
                        Ok(note) => step.done(&note),
                        Err(diagnosis) => step.failed(&diagnosis),
                    }
                }
            }
            Event::Step(line) => crate::output::say(&format!("✓ {line}")),
            Event::Warning(line) => crate::output::say(&format!("! {line}")),
            Event::Note(line) => crate::output::say(&format!("note: {line}")),
            Event::Info(line) => crate::output::say(&line),
            Event::RollingBack { phase } => crate::output::say(&format!(
                "✗ cutover stopped at phase {phase}; --rollback-on-failure: rolling back"
            )),
            Event::Guard { moment, figures } => {
                let again = match moment {
                    crate::core::guard::Moment::Start => "",
                    crate::core::guard::Moment::Confirmed => " (after the confirmation)",
                    crate::core::guard::Moment::BeforeDelete { .. } => " (before the delete)",
                };
                let mark = if figures.enough() { "✓" } else { "✗" };
                crate::output::say(&format!("{mark} {}{again}", figures.summary()));
            }
            Event::Drift(drift) => crate::output::say(render::drift(&drift).trim_end_matches('\n')),
            Event::Blocked(plan) => {
                crate::output::say(render::blockers(&plan).join("").trim_end_matches('\n'))
            }
            Event::DataPlane(c) if c.failed() => {
                let width = crate::output::width::detect_stderr();
                let table = crate::output::dataplane::render_width(&c, width);
                crate::output::say(table.trim_end_matches('\n'))
            }
            Event::DataPlane(c) => {
                crate::output::say(&format!("✓ {}", crate::output::dataplane::summary(&c)));
                // What the comparison cannot prove is said where the window runs too.
                let width = crate::output::width::detect_stderr();
                let unproven = crate::output::dataplane::unproven(&c, width);
                if !unproven.is_empty() {
                    crate::output::say(unproven.trim_end_matches('\n'));
                }
            }
            Event::Finished {
                operation,
                journal,
                verify,
            } => anstream::print!(
                "{}",
                render::report(operation.as_str(), &journal, &verify, self.format)
            ),
            // The stages and the journal's phases have no line of their own; the error
            // that stops a run is printed by `main`.
            Event::Recorded { .. } => self.recorded = true,
            Event::Stage(_) | Event::Stopped { .. } => {}
        }
    }
}
