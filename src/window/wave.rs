//! A wave: many gateways' windows, at most K at a time, each driven by the window engine
//! ([`cutover()`](super::cutover) or [`rollback()`](super::rollback)) exactly as the
//! one-gateway command drives it, with its own lock, journal and invariants (issue 15
//! item 3; DESIGN.md §4a: "the one-gateway commands and the wave runner are two callers
//! of it").
//!
//! The wave is confirmed once by its caller; each window gets [`Confirmed`]. The windows
//! run concurrently on the caller's task (the engine's future holds its sink in a
//! `RefCell` and is not `Send`): a [`FuturesUnordered`] of at most `concurrency` windows,
//! no spawned task.
//!
//! - When `max_failures` windows have failed, no new window starts; the running ones
//!   finish (or roll back, with the cutover's `rollback_on_failure`) and the wave stops
//!   ([`Halt::MaxFailures`]).
//! - When `stop` resolves (the caller's Ctrl-C/SIGTERM), no new window starts and every
//!   running one is interrupted through its own `stop` future, which the engine answers
//!   by stopping at a safe point and recording its phase ([`Halt::Interrupted`]).
//! - A window refused because another run holds the gateway's lock is
//!   [`WindowResult::SkippedLocked`], not a failure; one the journal says is finished
//!   already is [`WindowResult::SkippedDone`]: re-running the same wave resumes it.
//!
//! Everything is reported to a [`WaveEvents`] sink: each window's engine events tagged
//! with its gateway ([`WaveEvent::Window`]) and the wave's own.

use std::cell::RefCell;
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures::future::{FutureExt, LocalBoxFuture, Shared};
use futures::stream::{FuturesUnordered, StreamExt};
use serde::Serialize;

use super::{Confirmed, CutoverOptions, Event, Events, Operation, Outcome, RollbackOptions};
use crate::cluster::Cluster;
use crate::cluster::lock::LockError;
use crate::core::journal::Phase;
use crate::exit;
use crate::window::error::{Error, Next};

/// One gateway of a wave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub namespace: String,
    pub name: String,
    /// Its reviewed bundle (`--plan-dir DIR`: `DIR/NAMESPACE/NAME`), as `--plan`.
    pub plan: Option<PathBuf>,
}

impl Member {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// Which window each member gets, with the options of the one-gateway command.
#[derive(Clone, Debug)]
pub enum WindowOptions {
    Cutover(CutoverOptions),
    Rollback(RollbackOptions),
}

impl WindowOptions {
    pub fn operation(&self) -> Operation {
        match self {
            WindowOptions::Cutover(_) => Operation::Cutover,
            WindowOptions::Rollback(_) => Operation::Rollback,
        }
    }
}

/// What a wave is asked to do.
#[derive(Clone, Debug)]
pub struct WaveOptions {
    /// At most this many windows at a time (at least 1).
    pub concurrency: usize,
    /// After this many failed windows no new one starts (at least 1).
    pub max_failures: usize,
    pub window: WindowOptions,
    /// How a member's advice names a next action (the same command again) as a command
    /// line: `cli/` gives its renderer (`crate::error::command_line`), the engine never
    /// reads argv.
    pub render: fn(&Next) -> String,
}

/// How one gateway's window ended, as the wave counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WindowResult {
    /// Cut over (or rolled back) and verified by this run.
    Done,
    /// The journal says it is finished already: nothing was done.
    SkippedDone,
    /// Another run holds the gateway's lock: not touched, not a failure.
    SkippedLocked,
    /// `--dry-run`: every check and server-side dry run passed.
    DryRun,
    /// The window stopped with an error (blocked, refused, timed out, API failure).
    Failed,
    /// Interrupted by a signal at a safe point; the journal records where.
    Interrupted,
    /// Not started: the wave halted first.
    NotStarted,
}

impl WindowResult {
    pub fn as_str(self) -> &'static str {
        match self {
            WindowResult::Done => "done",
            WindowResult::SkippedDone => "skipped-done",
            WindowResult::SkippedLocked => "skipped-locked",
            WindowResult::DryRun => "dry-run",
            WindowResult::Failed => "failed",
            WindowResult::Interrupted => "interrupted",
            WindowResult::NotStarted => "not-started",
        }
    }
}

/// One gateway's line of the wave's summary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayReport {
    pub namespace: String,
    pub name: String,
    pub result: WindowResult,
    /// The journal's phase as this run last recorded (or found) it; None when no window
    /// of it recorded one.
    pub phase: Option<Phase>,
    /// Milliseconds from the delete of the old gateway to the first ESTABLISHED tunnel
    /// (a cutover done by this run).
    pub outage_ms: Option<u64>,
    /// How long its window ran (None: not started).
    pub elapsed_ms: Option<u64>,
    /// The exit code the one-gateway command would have ended with (None: not started).
    pub exit_code: Option<i32>,
    /// The verdict: why it stopped (the error's line), or what was found.
    pub message: Option<String>,
    /// What to do about this gateway before the wave is run again (issue 21 item 8): the
    /// command the one-gateway command names for its state (its hint), or, for a member
    /// that is gone, how to bring it back or take it out of the wave. None when running the
    /// same wave again is all it needs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
}

/// Why a wave stopped before every gateway had its window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Halt {
    /// `max_failures` windows failed.
    MaxFailures,
    /// The caller's `stop` resolved (a signal).
    Interrupted,
}

/// The wave's outcome: a report per member, in the members' order.
#[derive(Clone, Debug)]
pub struct WaveReport {
    pub operation: Operation,
    pub concurrency: usize,
    pub max_failures: usize,
    pub halted: Option<Halt>,
    pub gateways: Vec<GatewayReport>,
    pub elapsed: Duration,
}

impl WaveReport {
    /// How many gateways ended with `result`.
    pub fn count(&self, result: WindowResult) -> usize {
        self.gateways.iter().filter(|g| g.result == result).count()
    }

    /// The wave's exit code (docs/wave-json.md): 130 interrupted; 1 any window failed
    /// (the wave halted on `max_failures` or not); 7 any gateway skipped because another
    /// run holds its lock; else 0.
    pub fn exit_code(&self) -> i32 {
        if self.halted == Some(Halt::Interrupted) || self.count(WindowResult::Interrupted) > 0 {
            exit::INTERRUPTED
        } else if self.count(WindowResult::Failed) > 0 {
            exit::FAILURE
        } else if self.count(WindowResult::SkippedLocked) > 0
            || self.count(WindowResult::NotStarted) > 0
        {
            exit::REFUSED
        } else {
            exit::OK
        }
    }
}

/// What a wave reports, in order: for each member started, [`WaveEvent::Started`], its
/// engine's events as [`WaveEvent::Window`], then [`WaveEvent::Ended`]; a
/// [`WaveEvent::Halted`] when the wave stops starting windows.
#[derive(Clone, Debug)]
pub enum WaveEvent {
    /// A window begins (`running` windows including it; `left` not yet started).
    Started {
        namespace: String,
        name: String,
        running: usize,
        left: usize,
    },
    /// An event of one gateway's window.
    Window {
        namespace: String,
        name: String,
        event: Event,
    },
    /// A window ended.
    Ended(GatewayReport),
    /// No new window will start: `running` windows still finish, `not_started` never will.
    Halted {
        halt: Halt,
        running: usize,
        not_started: usize,
    },
}

/// Where a wave reports: a renderer, a recorder.
pub trait WaveEvents {
    fn event(&mut self, e: WaveEvent);
}

impl WaveEvents for Vec<WaveEvent> {
    fn event(&mut self, e: WaveEvent) {
        self.push(e);
    }
}

/// One window's sink: forwards its engine's events, tagged, to the wave's sink, and keeps
/// what the summary needs (the last phase recorded, the outage, the first info line).
struct Tagged<'w, 'e> {
    namespace: String,
    name: String,
    wave: &'w RefCell<&'e mut dyn WaveEvents>,
    phase: Option<Phase>,
    outage_ms: Option<u64>,
    info: Option<String>,
}

impl Events for Tagged<'_, '_> {
    fn event(&mut self, e: Event) {
        match &e {
            Event::Recorded { phase } => self.phase = Some(*phase),
            Event::Finished { journal, .. } => {
                self.phase = Some(journal.phase);
                self.outage_ms = journal.outage_ms;
            }
            Event::Info(line) if self.info.is_none() => self.info = Some(line.clone()),
            _ => {}
        }
        self.wave.borrow_mut().event(WaveEvent::Window {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            event: e,
        });
    }
}

/// The result of a window's run, as the wave counts it.
fn judged(result: &Result<Outcome, Error>) -> WindowResult {
    match result {
        Ok(Outcome::Done) => WindowResult::Done,
        Ok(Outcome::NothingToDo) => WindowResult::SkippedDone,
        Ok(Outcome::DryRun) => WindowResult::DryRun,
        Err(Error::Lock(LockError::Held { .. })) => WindowResult::SkippedLocked,
        Err(e) if e.exit_code() == exit::INTERRUPTED => WindowResult::Interrupted,
        Err(_) => WindowResult::Failed,
    }
}

/// What to do about a member whose window failed with `e`, before the wave runs again:
/// the one-gateway command's own advice for that state (its hint), with the wave's
/// knowledge where it has more: a member that is gone (no IPsecGateway, VPNGateway or
/// journal) cannot be cleared by running the wave again.
fn advice(e: &Error, m: &Member, render: fn(&Next) -> String) -> Option<String> {
    let (ns, name) = (&m.namespace, &m.name);
    if crate::window::error::error_line(e).starts_with(super::steps::GONE) {
        let bring_back = match &m.plan {
            Some(dir) => format!(
                "to migrate it, re-create it from its reviewed bundle (`kubectl apply -f {}`), wait for Ready, plan it again (`{}`) and run the wave again",
                dir.join("old-ipsecgateway.yaml").display(),
                render(&Next::Run(
                    crate::window::error::Run::plan(name, ns).with(&[
                        "--out",
                        &dir.display().to_string(),
                        "--force"
                    ])
                ))
            ),
            None => format!(
                "to migrate it, re-create it from a saved manifest (a bundle's old-ipsecgateway.yaml{}), wait for Ready and run the wave again",
                match e {
                    Error::Stop { hint: Some(h), .. } => format!("; {}", h.render(&render)),
                    _ => String::new(),
                }
            ),
        };
        let retire = match &m.plan {
            Some(_) => "plan the wave's directory again without it (`vpnmig plan … --out DIR --force`)".to_string(),
            None => "leave it out of the wave: run it with `--names FILE` listing the others (this wave remembers its members, docs/fleet.md)".to_string(),
        };
        return Some(format!(
            "IPsecGateway {ns}/{name} was part of this wave and is gone, with no journal: no window of vpnmig touched it, its tunnel is down, not migrated. Find out who deleted it (`kubectl get events -n {ns}`); {bring_back}; if it was retired on purpose, {retire}"
        ));
    }
    e.hint().map(|h| h.render(&render))
}

/// Run the wave of `members` (in that order) in `cluster` (each window in a clone of it
/// with the member's namespace). Never fails as a whole: each window's error is its
/// gateway's report; the caller turns the report into an exit code
/// ([`WaveReport::exit_code`]).
pub async fn run(
    cluster: &Cluster,
    members: Vec<Member>,
    opts: &WaveOptions,
    events: &mut dyn WaveEvents,
    stop: impl Future<Output = Error> + 'static,
) -> WaveReport {
    let started = Instant::now();
    let operation = opts.window.operation();
    let concurrency = opts.concurrency.max(1);
    let max_failures = opts.max_failures.max(1);
    let render = opts.render;
    let wave = RefCell::new(events);
    // One signal for the wave and every window: each window's `stop` is a clone.
    let stop: Shared<LocalBoxFuture<'static, (i32, String)>> = stop
        .map(|e| (e.exit_code(), e.to_string()))
        .boxed_local()
        .shared();

    let total = members.len();
    let mut queue = members.iter().enumerate();
    let mut reports: Vec<Option<GatewayReport>> = vec![None; total];
    let mut running = FuturesUnordered::new();
    let mut failures = 0usize;
    let mut halted: Option<Halt> = None;
    let mut signal = stop.clone();

    let window = |i: usize, m: &Member| {
        let there = Cluster {
            namespace: m.namespace.clone(),
            ..cluster.clone()
        };
        let window_stop = stop.clone();
        let opts = opts.window.clone();
        let m = m.clone();
        let wave = &wave;
        async move {
            let mut sink = Tagged {
                namespace: m.namespace.clone(),
                name: m.name.clone(),
                wave,
                phase: None,
                outage_ms: None,
                info: None,
            };
            let stop = async move {
                let (code, message) = window_stop.await;
                Error::Stop {
                    code,
                    message,
                    hint: None,
                }
            };
            let began = Instant::now();
            let result = match opts {
                WindowOptions::Cutover(mut o) => {
                    o.plan = m.plan.clone().or(o.plan);
                    Box::pin(super::cutover(
                        &there,
                        &m.name,
                        &o,
                        &mut sink,
                        &mut Confirmed,
                        stop,
                    ))
                    .await
                }
                WindowOptions::Rollback(mut o) => {
                    o.plan = m.plan.clone().or(o.plan);
                    Box::pin(super::rollback(
                        &there,
                        &m.name,
                        &o,
                        &mut sink,
                        &mut Confirmed,
                        stop,
                    ))
                    .await
                }
            };
            let verdict = judged(&result);
            // A window that stopped: its phase as the journal in the cluster has it
            // (observed, not the last event: DESIGN.md §4.10); none if it cannot be read.
            let stored = match verdict {
                WindowResult::Failed | WindowResult::Interrupted => {
                    crate::cluster::journal::read(&there, &m.name)
                        .await
                        .ok()
                        .flatten()
                        .map(|j| j.phase)
                }
                _ => None,
            };
            let phase = match (verdict, stored.or(sink.phase)) {
                (_, Some(p)) => Some(p),
                (WindowResult::SkippedDone, None) if operation == Operation::Cutover => {
                    Some(Phase::Done)
                }
                _ => None,
            };
            let message = match &result {
                Ok(Outcome::Done) => Some(format!("{} and verified", operation.as_str())),
                Ok(_) => sink.info.clone(),
                Err(e) => Some(crate::window::error::error_line(e)),
            };
            let advice = match (&result, verdict) {
                (Err(e), WindowResult::Failed) => advice(e, &m, render),
                _ => None,
            };
            let report = GatewayReport {
                namespace: m.namespace.clone(),
                name: m.name.clone(),
                result: verdict,
                phase,
                outage_ms: if verdict == WindowResult::Done {
                    sink.outage_ms
                } else {
                    None
                },
                elapsed_ms: Some(began.elapsed().as_millis() as u64),
                exit_code: Some(match &result {
                    Ok(_) => exit::OK,
                    Err(e) => e.exit_code(),
                }),
                message,
                advice,
            };
            (i, report)
        }
    };

    loop {
        while halted.is_none() && running.len() < concurrency {
            let Some((i, m)) = queue.next() else { break };
            running.push(window(i, m));
            let left = total - i - 1;
            wave.borrow_mut().event(WaveEvent::Started {
                namespace: m.namespace.clone(),
                name: m.name.clone(),
                running: running.len(),
                left,
            });
        }
        if running.is_empty() {
            break;
        }
        let not_started = |q: &std::iter::Enumerate<std::slice::Iter<'_, Member>>| q.len();
        tokio::select! {
            Some((i, report)) = running.next() => {
                if report.result == WindowResult::Failed {
                    failures += 1;
                }
                wave.borrow_mut().event(WaveEvent::Ended(report.clone()));
                reports[i] = Some(report);
                if failures >= max_failures && halted.is_none() && not_started(&queue) > 0 {
                    halted = Some(Halt::MaxFailures);
                    wave.borrow_mut().event(WaveEvent::Halted {
                        halt: Halt::MaxFailures,
                        running: running.len(),
                        not_started: not_started(&queue),
                    });
                }
            }
            _ = &mut signal, if halted != Some(Halt::Interrupted) => {
                halted = Some(Halt::Interrupted);
                wave.borrow_mut().event(WaveEvent::Halted {
                    halt: Halt::Interrupted,
                    running: running.len(),
                    not_started: not_started(&queue),
                });
            }
        }
    }
    if failures >= max_failures && halted.is_none() && queue.len() > 0 {
        halted = Some(Halt::MaxFailures);
    }
    for (i, m) in queue {
        reports[i] = Some(GatewayReport {
            namespace: m.namespace.clone(),
            name: m.name.clone(),
            result: WindowResult::NotStarted,
            phase: None,
            outage_ms: None,
            elapsed_ms: None,
            exit_code: None,
            message: None,
            advice: None,
        });
    }
    WaveReport {
        operation,
        concurrency,
        max_failures,
        halted,
        gateways: reports.into_iter().flatten().collect(),
        elapsed: started.elapsed(),
    }
}

#[cfg(test)]
mod tests;
