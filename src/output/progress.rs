//! The live line of a wait (DESIGN.md §4.5): on a terminal an indicatif spinner with the
//! step and its elapsed time, and above it one line each time what is awaited changes
//! (printed whole, never cut to the terminal's width, and kept on screen as the record
//! of the states the wait went through); elsewhere (a log, CI, a pipe) the same lines
//! without the spinner. Always on stderr: stdout is the report.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::output::style::{BAD, DIM, OK, paint};

/// One step being waited on.
pub struct Step {
    title: String,
    started: Instant,
    bar: Option<ProgressBar>,
    /// The last text shown: on a terminal the spinner's clock says the wait is alive, so
    /// the same text again (the wait's heartbeat) is not printed twice.
    shown: std::cell::RefCell<String>,
}

/// `12.3s` or `2m05s`.
pub fn elapsed(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 60.0 {
        format!("{s:.1}s")
    } else {
        format!("{}m{:02}s", d.as_secs() / 60, d.as_secs() % 60)
    }
}

use crate::output::say;

impl Step {
    /// Begin a step: `title` is what it does (`delete IPsecGateway tenant-acme/acme`).
    pub fn start(title: impl Into<String>) -> Step {
        let title = title.into();
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {prefix} [{elapsed}]")
                    .expect("the template is valid"),
            );
            bar.set_prefix(title.clone());
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        });
        if bar.is_none() {
            say(&format!("… {title}"));
        }
        Step {
            title,
            started: Instant::now(),
            bar,
            shown: Default::default(),
        }
    }

    /// What the step is waiting for now.
    pub fn update(&self, waiting: &str) {
        let line = format!("    [{}] {waiting}", elapsed(self.started.elapsed()));
        let again = self.shown.replace(waiting.to_string()) == waiting;
        match &self.bar {
            Some(_) if again => {}
            // Above the spinner, so the live line stays one line whatever the width
            // (indicatif writes it as is: no colour codes).
            Some(bar) => bar.println(
                crate::output::width::hanging(&line, crate::output::width::detect_stderr())
                    .trim_end_matches('\n'),
            ),
            None => say(&paint(DIM, line)),
        }
    }

    pub fn took(&self) -> Duration {
        self.started.elapsed()
    }

    /// The step succeeded; `note` is appended.
    pub fn done(self, note: &str) {
        let line = format!(
            "{} {} ({}){}",
            paint(OK, "✓"),
            self.title,
            elapsed(self.started.elapsed()),
            if note.is_empty() {
                String::new()
            } else {
                format!(": {note}")
            }
        );
        self.finish(&line);
    }

    /// The step failed.
    pub fn failed(self, why: &str) {
        let line = format!(
            "{} {} ({}): {why}",
            paint(BAD, "✗"),
            self.title,
            elapsed(self.started.elapsed())
        );
        self.finish(&line);
    }

    fn finish(self, line: &str) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        say(line);
    }
}

impl Drop for Step {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
