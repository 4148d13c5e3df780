//! The window engine: one gateway's cutover or rollback driven through its phases, as a
//! library (DESIGN.md §4a, "the window engine (its own module)").
//!
//! Named `window` because that is the unit it drives and the word the runbook, the
//! journal and every message use: one client's maintenance window, from the lock to a
//! verified gateway. (`ops` would say nothing about what it operates; `cutover` alone
//! would leave out the rollback and the resume, which share every step.)
//!
//! Callers give a connected [`Cluster`](crate::cluster::Cluster), the gateway's name (the namespace is the
//! cluster's), plain options ([`CutoverOptions`], [`RollbackOptions`]: no clap types), an
//! event sink ([`Events`]) and a [`Confirm`]. The engine knows nothing of terminals: the
//! one-gateway commands (`cli::cutover`, `cli::rollback`) render the events with
//! the `LiveView` of `src/output/events.rs` as the live lines and the report; a wave runner could confirm once for many gateways and log
//! the events of each.
//!
//! # Phases and where they come from
//!
//! A cutover ([`cutover()`]) implements the runbook's step 2 ("At the maintenance
//! window: delete the old CR, apply the new ones") and step 3 ("Verify"), with every
//! step guarded before and waited for after (DESIGN.md §1):
//!
//! | [`Stage`] | what | DESIGN.md |
//! |---|---|---|
//! | `Preflight` | something of the gateway exists; every permission the window needs | §4.10 (a window that cannot finish must not start) |
//! | `Lock` | the gateway's Lease | §4.6 |
//! | `Plan` | plan live again, drift against `--plan`, blockers, webhooks | §4.4, §4.7 |
//! | `Confirm` | the summary and the typed name, through [`Confirm`] | §5 (prompts) |
//! | `Journal` | the journal ConfigMap and the local bundle, before any change | §4.3, §4.6 |
//! | `PskDetach` | the PSK Secret freed of ownerReferences to the old gateway | §4.2 |
//! | `DryRun` | the server-side dry run of every target right before the delete | §4.4 |
//! | `Delete` | the one guarded delete of the IPsecGateway, then its unwind | §4.8, §4.5 |
//! | `Apply` | server-side apply of the VPNGateway and VPNPeers | runbook step 2 |
//! | `Attach`, `Ready` | FIPAttached; Ready and every VPNPeer Authorized | §2, §4.5 |
//! | `Tunnels` | `verify` until healthy, pinned values against the journal | runbook step 3, §4.7, §4.9 |
//!
//! A rollback ([`rollback()`]) implements the runbook's "Rollback" section (delete the
//! new CRs, re-apply the old one from the journal, verbatim): `Preflight`, `Lock`,
//! `Confirm`, then `Start` (journal phase rolling-back), `PskDetach`, `DeleteNew`,
//! `CreateOld`, `Attach`, `Ready`, `Tunnels`. A journal past the delete resumes from its
//! phase (§4.6): the stages already recorded are skipped.
//!
//! # Events
//!
//! In order, a run reports: [`Event::Stage`] when a stage begins; for each wait
//! [`Event::WaitStarted`], [`Event::Waiting`] each time what is awaited changes (with
//! the elapsed time and what was last seen) and [`Event::WaitFinished`]; one
//! [`Event::Step`] per change made or proven (`✓` lines), [`Event::Warning`] and
//! [`Event::Note`] for what the user must know; [`Event::Recorded`] each time the journal
//! in the cluster records a phase; and at the end [`Event::Finished`] (the outcome: the
//! journal as it stands and the last verify rows) or [`Event::Stopped`] (the error is also
//! returned). Refusals before any change come with their evidence ([`Event::Drift`],
//! [`Event::Blocked`]).

mod cutover;
mod early;
pub mod error;
mod gitops;
mod guard;
pub mod plan;
mod rollback;
mod steps;
pub mod wave;

use std::cell::RefCell;
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use crate::core::allowlist::Allowlist;
use crate::core::guard::{Figures, Moment, WindowEnd};
use crate::core::journal::{Drift, Journal, Phase};
use crate::core::plan::Plan;
use crate::core::verify::Row;
use crate::window::error::Error;

pub use cutover::cutover;
pub(crate) use cutover::gone_before_the_delete;
pub use cutover::phases::{CUTOVER, Cutover};
pub(crate) use early::{outside_window, stand_in, stands_in_for, way_back_outside};
pub use gitops::GitopsOptions;
pub(crate) use gitops::{
    helm_psk_refusal, helm_psks, journals_for, manager_policy, parent_fix_verb, re_arming,
    reads_suspended as parent_reads_suspended, resume_by_hand, resume_yourself,
    source_still_defines, suspend_command, suspend_from_the_top,
};
pub use rollback::phases::{ROLLBACK, Rollback};
pub use rollback::rollback;
pub use steps::table::{Bound, Resume, Step, Table, Wait};
pub use steps::{before_any_change, now, reference_rows};

/// The bound of each wait (DESIGN.md §4.5).
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    /// The delete of a gateway: its finalizer unwind.
    pub delete: Duration,
    /// FIPAttached, and again Ready and every VPNPeer Authorized.
    pub attach: Duration,
    /// Every tunnel ESTABLISHED and verified.
    pub tunnel: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        let five = Duration::from_secs(300);
        Timeouts {
            delete: five,
            attach: five,
            tunnel: five,
        }
    }
}

/// What a cutover is asked to do beyond the gateway's name.
#[derive(Clone, Debug, Default)]
pub struct CutoverOptions {
    /// The reviewed plan bundle the live gateway must still match.
    pub plan: Option<PathBuf>,
    /// Where the local bundle is written (default: `plan`, else the state directory).
    pub out: Option<PathBuf>,
    /// Read, check, dry-run and confirm; change nothing.
    pub dry_run: bool,
    /// Take the lock although another run holds it.
    pub break_lock: bool,
    /// A failure after the delete rolls back at once.
    pub rollback_on_failure: bool,
    /// After a rollback that lost addresses: cut over again with the journal's targets.
    pub forward: bool,
    pub timeouts: Timeouts,
    /// The proposal allowlist the re-plan checks against.
    pub allowlist: Allowlist,
    /// `TUNNEL=NAME` peer names (else the bundle's, else the default).
    pub peer_names: Vec<(String, String)>,
    /// Admission webhooks that cannot dry-run, accepted by name.
    pub skip_dry_run_webhooks: Vec<String>,
    /// When the maintenance window ends: refuse to start, or to go past the delete, when
    /// what is left is less than the expected cutover plus rollback (`core::guard`).
    pub window_end: Option<WindowEnd>,
    /// A gateway Argo CD or Flux syncs: `--gitops` (issue 11).
    pub gitops: GitopsOptions,
    /// Once the new gateway is Ready and its peers Authorized, start the tunnels from
    /// the gateway (`swanctl --initiate`) instead of only waiting for the client.
    pub initiate: bool,
    /// Delete the old gateway although some of its tunnels are down right before the
    /// delete (a tunnel down before the window cannot be shown to come back after it).
    pub allow_tunnels_down: bool,
}

/// What a rollback is asked to do beyond the gateway's name.
#[derive(Clone, Debug, Default)]
pub struct RollbackOptions {
    /// The cutover's bundle, used when the journal is gone.
    pub plan: Option<PathBuf>,
    pub dry_run: bool,
    pub break_lock: bool,
    pub choices: Choices,
    pub timeouts: Timeouts,
    /// When the maintenance window ends: a rollback that may not fit only warns.
    pub window_end: Option<WindowEnd>,
    /// `--gitops resume`: restore a suspended owner whatever its status says.
    pub gitops: GitopsOptions,
}

/// What the user chose for a rollback beyond the defaults (the flags that let it go on
/// where it would otherwise refuse).
#[derive(Clone, Copy, Debug, Default)]
pub struct Choices {
    /// `--delete-extra-peers`.
    pub delete_extra_peers: bool,
    /// `--accept-new-addresses`.
    pub accept_new_addresses: bool,
    /// `--drop-missing-owners`.
    pub drop_missing_owners: bool,
    /// `--initiate`: start the tunnels from the re-created gateway once it is Ready.
    pub initiate: bool,
}

/// A stage of a window (see the module doc for what each implements).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Preflight,
    Lock,
    Plan,
    Confirm,
    Journal,
    Start,
    PskDetach,
    DryRun,
    Delete,
    Apply,
    Attach,
    Ready,
    Tunnels,
    DeleteNew,
    CreateOld,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Preflight => "preflight",
            Stage::Lock => "lock",
            Stage::Plan => "plan",
            Stage::Confirm => "confirm",
            Stage::Journal => "journal",
            Stage::Start => "start",
            Stage::PskDetach => "psk-detach",
            Stage::DryRun => "dry-run",
            Stage::Delete => "delete",
            Stage::Apply => "apply",
            Stage::Attach => "attach",
            Stage::Ready => "ready",
            Stage::Tunnels => "tunnels",
            Stage::DeleteNew => "delete-new",
            Stage::CreateOld => "create-old",
        }
    }
}

/// Which window ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Cutover,
    Rollback,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Cutover => "cutover",
            Operation::Rollback => "rollback",
        }
    }
}

/// What the engine reports, in order (module doc).
#[derive(Clone, Debug)]
pub enum Event {
    /// A stage begins.
    Stage(Stage),
    /// The journal in the cluster now records `phase`.
    Recorded { phase: Phase },
    /// A wait begins; `title` says what it waits for.
    WaitStarted { title: String },
    /// What the wait `title` still waits for (each time it changes), `elapsed` into it.
    Waiting {
        title: String,
        elapsed: Duration,
        seen: String,
    },
    /// A wait ended: `Ok(note)`, or `Err(diagnosis)` when it failed or timed out.
    WaitFinished {
        title: String,
        elapsed: Duration,
        result: Result<String, String>,
    },
    /// A change made or a precondition proven (the `✓` lines).
    Step(String),
    /// The window guard's figures at `moment` (`--window-end`): when the window ends,
    /// what is left, what is needed and from where the estimate comes.
    Guard {
        moment: Moment,
        figures: Box<Figures>,
    },
    /// Something that needs the user's eye but does not stop the window (`!`).
    Warning(String),
    /// Context the user should know (`note:`).
    Note(String),
    /// Any other line of the run: nothing to do, dry-run verdicts, where it stands.
    Info(String),
    /// A cutover failed after the delete and `rollback_on_failure` rolls it back now.
    RollingBack { phase: Phase },
    /// The live state no longer matches the approved reference: the window is refused.
    Drift(Vec<Drift>),
    /// The re-plan has blockers: the window is refused.
    Blocked(Box<Plan>),
    /// The new gateway's data plane compared with the baseline of the old one (also in
    /// the journal, `dataPlane`); emitted before [`Event::Finished`], or before the stop
    /// when a fact the client sees changed.
    DataPlane(Box<crate::core::dataplane::Comparison>),
    /// The window finished: the journal as it stands and the last verify report.
    Finished {
        operation: Operation,
        journal: Box<Journal>,
        verify: Vec<Row>,
    },
    /// The window stopped: the error's one-line `message` and its exit `code`
    /// (`crate::exit`); the error itself, with its hint, is returned.
    Stopped { code: i32, message: String },
}

/// Where the engine reports (module doc): a renderer, a recorder, a log.
pub trait Events {
    fn event(&mut self, e: Event);
}

/// A recorder: every event, in order (tests, a wave runner's log).
impl Events for Vec<Event> {
    fn event(&mut self, e: Event) {
        self.push(e);
    }
}

/// What the engine asks the caller to confirm before its first change.
#[derive(Clone, Debug)]
pub struct Ask {
    /// The gateway's name: what a person types to confirm.
    pub gateway: String,
    /// `cut over`, `resume the cutover of`, `cut over again`, `roll back`.
    pub action: &'static str,
    /// A dry run: nothing will change whatever the answer.
    pub dry_run: bool,
    /// What will happen.
    pub summary: Summary,
}

/// What will happen, for the caller to show before it confirms.
#[derive(Clone, Debug)]
pub enum Summary {
    /// A new cutover: the plan, how many PSK ownerReferences will be detached, where
    /// the bundle goes.
    Cutover {
        context: String,
        plan: Box<Plan>,
        detach: Option<usize>,
        out_dir: PathBuf,
    },
    /// A cutover resumed from its journal.
    Resume {
        context: String,
        journal: Box<Journal>,
    },
    /// `forward`: a re-created IPsecGateway cut over to the journal's targets.
    Forward {
        context: String,
        journal: Box<Journal>,
    },
    /// A rollback; `peers` the VPNPeers it deletes (None: already deleted).
    Rollback {
        context: String,
        journal: Box<Journal>,
        peers: Option<Vec<String>>,
    },
}

/// The caller's yes or no (a typed name on a terminal, `--yes`, a wave's one
/// confirmation). `Err` ends the run before any change.
pub trait Confirm {
    fn confirm(&mut self, ask: Ask) -> impl Future<Output = Result<(), Error>>;
}

/// Confirms everything (a caller that confirmed already, tests).
pub struct Confirmed;

impl Confirm for Confirmed {
    async fn confirm(&mut self, _: Ask) -> Result<(), Error> {
        Ok(())
    }
}

/// How a window ended without an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done (cutover) or rolled back: [`Event::Finished`] has the report.
    Done,
    /// The journal says it is done already.
    NothingToDo,
    /// A dry run: every check and server-side dry run passed; nothing changed.
    DryRun,
}

/// The engine's view of the caller's sink: shared by the steps and the waits (a wait
/// reports while the window also guards the PSK Secret), borrowed only to emit.
pub(crate) struct Sink<'s>(RefCell<&'s mut dyn Events>);

impl<'s> Sink<'s> {
    pub(crate) fn new(events: &'s mut dyn Events) -> Self {
        Sink(RefCell::new(events))
    }
}

/// What the steps hold of the sink: a shared handle (covariant, unlike the `&mut`
/// inside), so a wait can report while the window also guards the PSK Secret.
pub(crate) trait Emit {
    fn emit(&self, e: Event);
}

impl Emit for Sink<'_> {
    fn emit(&self, e: Event) {
        self.0.borrow_mut().event(e);
    }
}
