//! The window engine as a library (`vpnmig::window`), driven in-process against the
//! sandbox with a recording sink: the ordered events of a dry run, of a run the caller
//! declines, of one successful cutover and of the rollback after it, and what the engine
//! asked to confirm. The CLI's rendering of
//! the same runs is covered by live_cutover.rs. One row, run on both backends (the
//! emulator and the real control plane, tests/live/bed.rs) in turn by the binary's one
//! test, which sets the state directory before any thread.

mod live;

use std::sync::{Arc, Mutex};

use live::bed::{After, Backend, Bed, Row, Scenario};
use live::{ACME, pool};
use vpnmig::cluster::{Cluster, ClusterOptions};
use vpnmig::core::journal::Phase;
use vpnmig::window::error::Error;
use vpnmig::window::{
    self, Ask, Confirm, CutoverOptions, Event, Events, Operation, Outcome, RollbackOptions, Summary,
};

/// One log for the events and the confirmations, so their order is recorded too (as a
/// wave runner would see it).
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Event>>>, Arc<Mutex<Vec<String>>>);

impl Recorder {
    fn log(&self) -> Vec<String> {
        self.1.lock().unwrap().clone()
    }

    fn events(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }
}

impl Events for Recorder {
    fn event(&mut self, e: Event) {
        self.1.lock().unwrap().push(line(&e));
        self.0.lock().unwrap().push(e);
    }
}

impl Confirm for Recorder {
    async fn confirm(&mut self, ask: Ask) -> Result<(), Error> {
        let what = match &ask.summary {
            Summary::Cutover { plan, .. } => format!("cutover of {}", plan.source.name),
            Summary::Resume { .. } => "resume".into(),
            Summary::Forward { .. } => "forward".into(),
            Summary::Rollback { peers, .. } => format!("rollback deleting {peers:?}"),
        };
        self.1.lock().unwrap().push(format!(
            "confirm {} {} ({what}, dry run {})",
            ask.action, ask.gateway, ask.dry_run
        ));
        Ok(())
    }
}

/// A caller that declines, as a wave runner would for a gateway it skips.
struct Refuse;

impl Confirm for Refuse {
    async fn confirm(&mut self, _: Ask) -> Result<(), Error> {
        Err(Error::Stop {
            code: vpnmig::exit::REFUSED,
            message: "not now: nothing was changed".into(),
            hint: None,
        })
    }
}

/// The events that give a run its shape; the lines in between (steps, notes) are
/// checked separately.
fn line(e: &Event) -> String {
    match e {
        Event::Stage(s) => format!("stage {}", s.as_str()),
        Event::Recorded { phase } => format!("recorded {phase}"),
        Event::WaitStarted { title } => format!("wait {title}"),
        Event::WaitFinished { title, result, .. } => match result {
            Ok(note) => format!("waited {title}: {note}"),
            Err(d) => format!("wait failed {title}: {d}"),
        },
        Event::Finished {
            operation, journal, ..
        } => format!("finished {} at {}", operation.as_str(), journal.phase),
        Event::Stopped { message, .. } => format!("stopped: {message}"),
        Event::Step(_) => "step".into(),
        Event::Waiting { .. } => "waiting".into(),
        Event::Warning(w) => format!("warning {w}"),
        Event::Note(n) => format!("note {n}"),
        Event::Info(i) => format!("info {i}"),
        Event::RollingBack { phase } => format!("rolling back at {phase}"),
        Event::Guard { figures, .. } => format!(
            "guard {}",
            if figures.enough() { "enough" } else { "short" }
        ),
        Event::Drift(_) => "drift".into(),
        Event::Blocked(_) => "blocked".into(),
        Event::DataPlane(c) => format!("data plane failed {}", c.failed()),
    }
}

/// The shape: everything but the step lines and the live updates of a wait.
fn shape(log: &[String]) -> Vec<&str> {
    log.iter()
        .map(String::as_str)
        .filter(|l| *l != "step" && *l != "waiting")
        .collect()
}

/// The row: acme cut over and rolled back, so it ends as the IPsecGateway it was.
fn row() -> Row {
    Row {
        scenario: || Scenario::new(ACME, pool("10.250.3.0/24")),
        only: None,
        after: After::acme("IPsecGateway"),
        // The engine's future is not Send (its sink is a RefCell): driven on this worker,
        // handed over as a blocking one, while the sandbox's controllers run on the others.
        steps: |b| {
            Box::pin(async move {
                tokio::task::block_in_place(|| {
                    tokio::runtime::Handle::current().block_on(a_cutover_then_a_rollback(b))
                })
            })
        },
    }
}

#[test]
fn a_cutover_then_a_rollback_report_their_phases_in_order() {
    // One test in this binary, set before any thread: the bundle index goes to a temp
    // directory, not the home of whoever runs the tests. Hence the row's backends run in
    // turn here rather than as two tests (`rows!`) beside each other.
    let state = tempfile::tempdir().unwrap();
    unsafe { std::env::set_var("VPNMIG_STATE_DIR", state.path()) };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for backend in [Backend::Emulated, Backend::Real] {
            live::bed::run(
                "a_cutover_then_a_rollback_report_their_phases_in_order",
                row(),
                backend,
            )
            .await;
        }
    });
}

async fn a_cutover_then_a_rollback(b: &Bed) {
    {
        let on = b.backend;
        let cluster = Cluster::connect(&ClusterOptions {
            kubeconfig: Some(b.kubeconfig.clone()),
            namespace: Some("tenant-acme".into()),
            ..Default::default()
        })
        .await
        .unwrap();
        let out = b.cwd().join("bundle");
        let no_journal = || async { b.journal("tenant-acme", "acme").await.is_none() };

        // A dry run: every check and server-side dry run, no lock, nothing changed.
        let mut rec = Recorder::default();
        let mut confirm = rec.clone();
        let opts = CutoverOptions {
            out: Some(out.clone()),
            dry_run: true,
            ..Default::default()
        };
        let outcome = window::cutover(
            &cluster,
            "acme",
            &opts,
            &mut rec,
            &mut confirm,
            std::future::pending(),
        )
        .await;
        let log = rec.log();
        assert_eq!(outcome.unwrap(), Outcome::DryRun, "{log:#?}");
        assert_eq!(
            shape(&log),
            [
                "stage preflight",
                "stage plan",
                "stage confirm",
                "confirm cut over acme (cutover of acme, dry run true)",
                "info dry run: nothing was changed",
            ]
        );
        assert!(no_journal().await, "{on}");

        // A caller that says no: the run stops before any change.
        let mut rec = Recorder::default();
        let opts = CutoverOptions {
            out: Some(out.clone()),
            ..Default::default()
        };
        let outcome = window::cutover(
            &cluster,
            "acme",
            &opts,
            &mut rec,
            &mut Refuse,
            std::future::pending(),
        )
        .await;
        let log = rec.log();
        let Err(Error::Stop { code, .. }) = outcome else {
            panic!("not refused: {outcome:?}")
        };
        assert_eq!(code, vpnmig::exit::REFUSED);
        assert_eq!(
            shape(&log),
            [
                "stage preflight",
                "stage lock",
                "stage plan",
                "stage confirm",
                "stopped: not now: nothing was changed",
            ]
        );
        assert!(no_journal().await, "{on}");

        // The cutover.
        let mut rec = Recorder::default();
        let mut confirm = rec.clone();
        let opts = CutoverOptions {
            out: Some(out.clone()),
            ..Default::default()
        };
        let outcome = window::cutover(
            &cluster,
            "acme",
            &opts,
            &mut rec,
            &mut confirm,
            std::future::pending(),
        )
        .await;
        let log = rec.log();
        assert_eq!(outcome.unwrap(), Outcome::Done, "{log:#?}");
        assert_eq!(
            shape(&log),
            [
                "stage preflight",
                "stage lock",
                "stage plan",
                "stage confirm",
                "confirm cut over acme (cutover of acme, dry run false)",
                "stage journal",
                "recorded started",
                "stage psk-detach",
                "recorded psk-detached",
                "stage dry-run",
                "stage delete",
                "recorded deleting",
                "wait delete IPsecGateway tenant-acme/acme",
                "waited delete IPsecGateway tenant-acme/acme: gone",
                "recorded deleted",
                "stage apply",
                "recorded applied",
                "stage attach",
                "wait VPNGateway tenant-acme/acme FIPAttached (floating IP 198.51.100.23)",
                "waited VPNGateway tenant-acme/acme FIPAttached (floating IP 198.51.100.23): FIPAttached",
                "recorded attached",
                "stage ready",
                "wait VPNGateway tenant-acme/acme Ready",
                "waited VPNGateway tenant-acme/acme Ready: Ready",
                "wait VPNPeer acme Authorized",
                "waited VPNPeer acme Authorized: Authorized",
                "recorded ready",
                "stage tunnels",
                "wait tunnels of acme ESTABLISHED and verified",
                "waited tunnels of acme ESTABLISHED and verified: HEALTHY",
                "data plane failed false",
                "recorded done",
                "finished cutover at done",
            ]
        );
        let events = rec.events();
        let steps: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                Event::Step(s) => Some(s.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(steps.len(), 4, "{steps:#?}");
        assert!(steps[0].starts_with(
            "journal written: ConfigMap tenant-acme/vpnmig-acme (phase started) and bundle "
        ));
        assert_eq!(
            steps[1..],
            [
                "server-side dry run: 2 target(s) admitted",
                "recorded the data plane of IPsecGateway tenant-acme/acme: 1 tunnel(s), 1 CHILD SA(s) (swanctl --list-sas in its pod)",
                "applied VPNGateway acme, VPNPeer acme (server-side apply, field manager vpnmig)",
            ]
        );
        let Some(Event::Finished {
            operation,
            journal,
            verify,
        }) = events.last()
        else {
            panic!("the last event is not Finished: {:?}", events.last())
        };
        assert_eq!(*operation, Operation::Cutover);
        assert_eq!(journal.phase, Phase::Done);
        assert_eq!(journal.floating_ip, "198.51.100.23");
        assert!(journal.outage_ms.is_some());
        assert!(vpnmig::core::verify::healthy(verify), "{verify:#?}");

        // The rollback, from the journal the cutover wrote.
        let mut rec = Recorder::default();
        let mut confirm = rec.clone();
        let outcome = window::rollback(
            &cluster,
            "acme",
            &RollbackOptions::default(),
            &mut rec,
            &mut confirm,
            std::future::pending(),
        )
        .await;
        let log = rec.log();
        assert_eq!(outcome.unwrap(), Outcome::Done, "{log:#?}");
        assert_eq!(
            shape(&log),
            [
                "stage preflight",
                "stage lock",
                "stage confirm",
                "confirm roll back acme (rollback deleting Some([\"acme\"]), dry run false)",
                "stage start",
                "recorded rolling-back",
                "stage psk-detach",
                "stage delete-new",
                "wait delete VPNPeer acme",
                "waited delete VPNPeer acme: gone",
                "wait delete VPNGateway tenant-acme/acme",
                "waited delete VPNGateway tenant-acme/acme: gone",
                "recorded new-deleted",
                "stage create-old",
                "recorded old-applied",
                "stage attach",
                "wait IPsecGateway tenant-acme/acme FIPAttached (floating IP 198.51.100.23)",
                "waited IPsecGateway tenant-acme/acme FIPAttached (floating IP 198.51.100.23): FIPAttached",
                "stage ready",
                "wait IPsecGateway tenant-acme/acme Ready",
                "waited IPsecGateway tenant-acme/acme Ready: Ready",
                "stage tunnels",
                "wait tunnels of acme ESTABLISHED and verified",
                "waited tunnels of acme ESTABLISHED and verified: HEALTHY",
                "recorded rolled-back",
                "finished rollback at rolled-back",
            ]
        );
        let events = rec.events();
        assert!(
            events.iter().any(|e| matches!(e, Event::Step(s)
                if s == "IPsecGateway tenant-acme/acme re-created from the saved manifest")),
            "{events:#?}"
        );
        let Some(Event::Finished {
            operation, journal, ..
        }) = events.last()
        else {
            panic!("the last event is not Finished: {:?}", events.last())
        };
        assert_eq!(*operation, Operation::Rollback);
        assert_eq!(journal.phase, Phase::RolledBack);
    }
}
