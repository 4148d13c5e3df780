//! A window as data: the row of a table of phases ([`Step`]) and the one runner that walks
//! a table ([`run`]). The cutover's table is `cutover::phases::CUTOVER`, the rollback's
//! `rollback::phases::ROLLBACK` (docs/architecture.md, "The window as a table of phases").
//!
//! A phase's action reads its own row: its waits' timeouts and diagnoses come from
//! [`Step::waits`], so changing a wait, or adding a phase, touches its table alone.

use std::pin::Pin;
use std::time::Duration;

use super::*;
use crate::window::Timeouts;

/// A table of phases: what its actions are given besides the window.
pub trait Table: Sized + 'static {
    /// The context of one walk of the table (the options, what was read before it).
    type Cx<'c>;
}

/// A phase's action, running to the phase recorded (or to the error that stops it).
pub(crate) type Run<'r> = Pin<Box<dyn Future<Output = Result<(), Error>> + 'r>>;
pub(crate) type Act<T> = for<'r, 'w, 'c> fn(
    &'r mut Window<'w>,
    &'r mut <T as Table>::Cx<'c>,
    &'static Step<T>,
) -> Run<'r>;

/// Which bound of [`Timeouts`] a wait has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    Delete,
    Attach,
    Tunnel,
}

/// One wait of a phase: what it waits for, its bound, and what the stop says it means.
#[derive(Clone, Copy, Debug)]
pub struct Wait {
    pub on: &'static str,
    pub bound: Bound,
    /// The hint after "timed out after … waiting for …" (`None`: the diagnosis alone);
    /// `{name}` and `{ns}` stand for the gateway's name and namespace, `{cutover}` and
    /// `{rollback}` for the next action on it (a [`Run`](crate::window::error::Run)).
    pub diagnosis: Option<&'static str>,
}

impl Wait {
    pub fn timeout(&self, t: &Timeouts) -> Duration {
        match self.bound {
            Bound::Delete => t.delete,
            Bound::Attach => t.attach,
            Bound::Tunnel => t.tunnel,
        }
    }

    /// The stop of this wait run out of time after seeing `seen`, waiting for `what`, in
    /// the window of `w`.
    pub(crate) fn timed_out(&self, t: &Timeouts, w: &Window, what: &str, seen: &str) -> Error {
        let hint = self.diagnosis.map(|d| diagnosis(d, w.name(), w.ns()));
        timed_out(what, self.timeout(t), seen, hint)
    }
}

/// A wait's diagnosis for the gateway `name` in `ns`: its `{cutover}` and `{rollback}`
/// become next actions, as data ([`Wait::diagnosis`]).
fn diagnosis(d: &str, name: &str, ns: &str) -> crate::window::error::Hint {
    use crate::window::error::{Hint, Next, Run, mark};
    let mut pieces = Vec::new();
    let cutover = mark(&Next::Run(Run::cutover(name, ns)), &mut pieces);
    let rollback = mark(&Next::Run(Run::rollback(name, ns)), &mut pieces);
    let text = d
        .replace("{name}", name)
        .replace("{ns}", ns)
        .replace("{cutover}", &cutover)
        .replace("{rollback}", &rollback);
    Hint::from_marked(&text, &pieces)
}

/// How a run that finds the journal at or past a phase treats it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// Past its phase, skipped: what it did is recorded.
    Skip,
    /// At its phase (recorded before its change was sent): the change is sent again, and
    /// what the rows after it rely on is done again (`Step::finish`).
    Finish,
    /// Runs again whatever the journal says: it reads everything it checks afresh.
    Again,
}

/// One row of a table.
pub struct Step<T: Table> {
    /// The journal phase recorded when the step is done.
    pub phase: Phase,
    /// The stages it reports, in order.
    pub stages: &'static [Stage],
    /// What it reads and checks before it changes anything.
    pub observes: &'static str,
    /// What it changes.
    pub does: &'static str,
    pub waits: &'static [Wait],
    pub resume: Resume,
    /// What takes it back, or what it leaves.
    pub undo: &'static str,
    /// It runs under the watch that stops the window at once when what it deleted comes
    /// back (the cutover: `steps::unless_interfered`; the rollback:
    /// `steps::unless_recreated`): the rows at the end of the table.
    pub watched: bool,
    pub(crate) act: Act<T>,
    /// [`Resume::Finish`]: the action at its phase.
    pub(crate) finish: Option<Act<T>>,
}

/// Walk `steps` in order: a step before its phase acts; at its phase, a [`Resume::Finish`]
/// one runs its `finish`; a [`Resume::Again`] one always runs.
pub(crate) async fn run<T: Table>(
    w: &mut Window<'_>,
    cx: &mut T::Cx<'_>,
    steps: &'static [Step<T>],
) -> Result<(), Error> {
    for step in steps {
        let at = w.journal.phase;
        if at < step.phase || step.resume == Resume::Again {
            (step.act)(w, cx, step).await?;
        } else if at == step.phase
            && let Some(finish) = step.finish
        {
            finish(w, cx, step).await?;
        }
    }
    Ok(())
}

/// `steps` split before its first watched row: the rows run outside the watch, and those
/// run under it.
pub(crate) fn split_watched<T: Table>(
    steps: &'static [Step<T>],
) -> (&'static [Step<T>], &'static [Step<T>]) {
    let watched = steps.iter().position(|s| s.watched).unwrap_or(steps.len());
    steps.split_at(watched)
}

/// The table as docs/architecture.md shows it (phase, stages, waits, resume, undo).
#[cfg(test)]
pub(crate) fn markdown<T: Table>(steps: &[Step<T>]) -> String {
    let mut out = String::from(
        "| phase | stages | waits (bound) | resume | watched | undone by |\n|---|---|---|---|---|---|\n",
    );
    for s in steps {
        let stages: Vec<&str> = s.stages.iter().map(|s| s.as_str()).collect();
        let waits: Vec<String> = s
            .waits
            .iter()
            .map(|w| {
                format!(
                    "{} (`--timeout-{}`)",
                    w.on,
                    format!("{:?}", w.bound).to_lowercase()
                )
            })
            .collect();
        out.push_str(&format!(
            "| `{}` | {} | {} | {:?} | {} | {} |\n",
            s.phase.as_str(),
            if stages.is_empty() {
                "—".into()
            } else {
                stages.join(", ")
            },
            if waits.is_empty() {
                "—".into()
            } else {
                waits.join("; ")
            },
            s.resume,
            if s.watched { "yes" } else { "no" },
            s.undo.split(':').next().unwrap_or_default(),
        ));
    }
    out
}

/// What the tests of each table check alike.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// Each row's phase and whether it is watched, in order; only a row that records its
    /// phase before its change (`Resume::Finish`) has a finish.
    pub(crate) fn shape<T: Table>(steps: &[Step<T>]) -> (Vec<Phase>, Vec<bool>) {
        for s in steps {
            assert_eq!(
                s.finish.is_some(),
                s.resume == Resume::Finish,
                "{}",
                s.phase
            );
        }
        (
            steps.iter().map(|s| s.phase).collect(),
            steps.iter().map(|s| s.watched).collect(),
        )
    }

    /// Each wait's phase and its timeout in seconds, the bounds being 1 s (delete), 2 s
    /// (attach) and 3 s (tunnel).
    pub(crate) fn bounds<T: Table>(steps: &[Step<T>]) -> Vec<(Phase, u64)> {
        let t = Timeouts {
            delete: Duration::from_secs(1),
            attach: Duration::from_secs(2),
            tunnel: Duration::from_secs(3),
        };
        steps
            .iter()
            .flat_map(|s| s.waits.iter().map(|w| (s.phase, w.timeout(&t).as_secs())))
            .collect()
    }

    /// docs/architecture.md shows `steps` (the `which` table) as declared.
    pub(crate) fn assert_documented<T: Table>(steps: &[Step<T>], which: &str) {
        let docs = include_str!("../../../docs/architecture.md");
        let table = markdown(steps);
        assert!(
            docs.contains(&table),
            "docs/architecture.md does not show the {which}'s table as declared; it should read:\n{table}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::error::{Next, Part, Run};

    /// A wait's diagnosis names its next actions as data, whatever the gateway, and its
    /// `{name}`/`{ns}` as text.
    #[test]
    fn a_diagnosis_names_its_commands_as_data() {
        let rows: &[(&str, Vec<Part>)] = &[
            (
                "once it is gone, `{rollback}` resumes",
                vec![
                    Part::Text("once it is gone, `".into()),
                    Part::Next(Next::Run(Run::rollback("acme", "tenant-acme"))),
                    Part::Text("` resumes".into()),
                ],
            ),
            (
                "`{cutover}` goes on; `{rollback}` goes back ({ns}/{name})",
                vec![
                    Part::Text("`".into()),
                    Part::Next(Next::Run(Run::cutover("acme", "tenant-acme"))),
                    Part::Text("` goes on; `".into()),
                    Part::Next(Next::Run(Run::rollback("acme", "tenant-acme"))),
                    Part::Text("` goes back (tenant-acme/acme)".into()),
                ],
            ),
            (
                "look at the operator's logs",
                vec![Part::Text("look at the operator's logs".into())],
            ),
        ];
        for (template, parts) in rows {
            assert_eq!(
                diagnosis(template, "acme", "tenant-acme").parts(),
                parts.as_slice(),
                "{template}"
            );
        }
    }
}
