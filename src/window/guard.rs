//! The window guard in the engine (`--window-end`, issue 13 item 4): the estimate from
//! the journals of earlier windows in the cluster (else the timeouts' worst case), and
//! the check at the start, after the confirmation and right before the delete. The
//! figures and the verdict are `core::guard`'s.

use super::{Emit, Event, Timeouts};
use crate::cluster::{Cluster, journal as stored};
use crate::core::guard::{self, Figures, Moment, Needed, Waits, WindowEnd};
use crate::core::journal::Phase;
use crate::exit;
use crate::window::error::{self, Error, Next};

/// A window's guard: when it ends and what the window needs.
#[derive(Clone, Debug)]
pub(crate) struct Guard {
    pub end: WindowEnd,
    pub needed: Needed,
}

impl Guard {
    /// The guard of a cutover going on from phase `from` (`rollback_only`: of a
    /// rollback): the journals of earlier windows are listed once; when they cannot be,
    /// the estimate is the timeouts' worst case, and the run says so.
    pub(crate) async fn new(
        cluster: &Cluster,
        ev: &dyn Emit,
        end: &WindowEnd,
        t: &Timeouts,
        from: Phase,
        rollback_only: bool,
    ) -> Guard {
        if let Some(note) = &end.note {
            ev.emit(Event::Warning(note.clone()));
        }
        let waits = Waits {
            delete: t.delete,
            attach: t.attach,
            tunnel: t.tunnel,
        };
        let history = match stored::list(cluster).await {
            Ok(listed) => {
                let h = guard::history(&listed.journals);
                let mut left_out = Vec::new();
                if h.resumed > 0 {
                    left_out.push(format!(
                        "{} interrupted and resumed (their time includes the pause)",
                        h.resumed
                    ));
                }
                if listed.unreadable > 0 {
                    left_out.push(format!("{} unreadable", listed.unreadable));
                }
                ev.emit(Event::Note(format!(
                    "window guard: {} journal(s) of earlier windows in {}: {} cutover(s) and {} rollback(s) measured{}",
                    h.journals,
                    listed.scope,
                    h.cutovers.len(),
                    h.rollbacks.len(),
                    if left_out.is_empty() {
                        String::new()
                    } else {
                        format!("; left out: {}", left_out.join(", "))
                    }
                )));
                h
            }
            Err(e) => {
                ev.emit(Event::Note(format!(
                    "window guard: the journals of earlier windows could not be listed ({e}): the estimate is the timeouts' worst case"
                )));
                guard::History::default()
            }
        };
        let needed = if rollback_only {
            guard::needed_rollback(&history, &waits, from)
        } else {
            guard::needed(&history, &waits, from)
        };
        Guard {
            end: end.clone(),
            needed,
        }
    }

    /// The figures now.
    pub(crate) fn figures(&self) -> Figures {
        Figures::at(&self.end, jiff::Timestamp::now(), self.needed)
    }

    /// Check a cutover of `ns/name` at `moment`: report the figures; when what is left
    /// does not cover what is needed, a dry run says a real run would be refused, and a
    /// real run is refused (exit 7).
    pub(crate) fn check(
        &self,
        ev: &dyn Emit,
        name: &str,
        ns: &str,
        moment: Moment,
        dry_run: bool,
    ) -> Result<(), Error> {
        let f = self.figures();
        ev.emit(Event::Guard {
            moment,
            figures: Box::new(f.clone()),
        });
        if f.enough() {
            return Ok(());
        }
        if dry_run {
            ev.emit(Event::Warning(format!(
                "dry run: a real run would be refused now: {} and a cutover and its rollback need {}",
                f.left_text(),
                f.needed_text()
            )));
            return Ok(());
        }
        // The commands go in as data: core formats the text, cli/ renders them.
        let mut pieces = Vec::new();
        let without = error::mark(&Next::again_without("--window-end", &[]), &mut pieces);
        let later = error::mark(
            &Next::again_without("--window-end", &["--window-end", "END"]),
            &mut pieces,
        );
        let (message, hint) = f.refusal(name, ns, moment, &later, &without);
        Err(Error::Stop {
            code: exit::REFUSED,
            message,
            hint: Some(error::Hint::from_marked(&hint, &pieces)),
        })
    }
}

/// A resume past the delete: the guard does not apply (going on, or rolling back, is the
/// way out of the window); the time left is said.
pub(crate) fn not_applied(ev: &dyn Emit, end: &WindowEnd, phase: Phase) {
    let when = guard::until(
        end,
        end.at.timestamp().duration_since(jiff::Timestamp::now()),
    );
    ev.emit(Event::Note(format!(
        "window guard: does not apply to a cutover resumed past the delete (journal phase {phase}): going on, or `vpnmig rollback`, is the way out; {when}"
    )));
}

/// `rollback --window-end`: rolling back is the safe direction, so a window too short
/// only warns.
pub(crate) fn warn_rollback(ev: &dyn Emit, g: &Guard) {
    let f = g.figures();
    ev.emit(Event::Guard {
        moment: Moment::Start,
        figures: Box::new(f.clone()),
    });
    if !f.enough() {
        ev.emit(Event::Warning(format!(
            "{} and a rollback may need {}: rolling back anyway, it is the safe direction",
            f.left_text(),
            f.needed_text()
        )));
    }
}
