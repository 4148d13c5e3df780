//! The window guard in the engine, in-process against the sandbox: checked again after
//! a confirmation that sat for a while (refused, nothing changed), and right before the
//! delete when the steps before it were slow (refused, nothing deleted). The CLI's side
//! is live_guard.rs. One row, run on both backends (the emulator and the real control
//! plane, tests/live/bed.rs: the API's latency is the emulator's own knob or the fault
//! proxy's in front of kube-apiserver) in turn by the binary's one test, which sets the
//! state directory before any thread.

mod live;

use std::time::Duration;

use live::bed::{After, Backend, Bed, IPSECGATEWAY, Row, Scenario};
use live::{ACME, pool};
use vpnmig::cluster::{Cluster, ClusterOptions};
use vpnmig::core::guard::parse_window_end;
use vpnmig::window::error::Error;
use vpnmig::window::{self, Ask, Confirm, CutoverOptions, Event, Timeouts};

/// A confirmation that takes `sleep`, then runs `then`.
struct Slow<F: FnMut()> {
    sleep: Duration,
    then: F,
}

impl<F: FnMut()> Confirm for Slow<F> {
    async fn confirm(&mut self, _: Ask) -> Result<(), Error> {
        tokio::time::sleep(self.sleep).await;
        (self.then)();
        Ok(())
    }
}

/// 1 s per wait: a cutover's worst case is 5 s, a rollback's 5 s: 10 s needed.
fn opts(window_end_in: i64) -> CutoverOptions {
    let end = (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(window_end_in)).to_string();
    let second = Duration::from_secs(1);
    CutoverOptions {
        window_end: Some(parse_window_end(&end, &jiff::Zoned::now()).unwrap()),
        timeouts: Timeouts {
            delete: second,
            attach: second,
            tunnel: second,
        },
        ..Default::default()
    }
}

fn guards(events: &[Event]) -> Vec<(String, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Guard { moment, figures } => Some((format!("{moment:?}"), figures.enough())),
            _ => None,
        })
        .collect()
}

/// The row: both runs refused before the delete, so acme ends as the IPsecGateway it was.
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
                    tokio::runtime::Handle::current()
                        .block_on(checked_after_the_prompt_and_before_the_delete(b))
                })
            })
        },
    }
}

#[test]
fn the_guard_is_checked_again_after_the_prompt_and_before_the_delete() {
    // One test in this binary, set before any thread; hence the row's backends run in
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
                "the_guard_is_checked_again_after_the_prompt_and_before_the_delete",
                row(),
                backend,
            )
            .await;
        }
    });
}

async fn checked_after_the_prompt_and_before_the_delete(b: &Bed) {
    {
        let on = b.backend;
        // Timed to the second: no real control plane starts beside it.
        let _quiet = b.quiet().await;
        let cluster = Cluster::connect(&ClusterOptions {
            kubeconfig: Some(b.kubeconfig.clone()),
            namespace: Some("tenant-acme".into()),
            ..Default::default()
        })
        .await
        .unwrap();
        let ns = "tenant-acme";

        // 16 s left at the start (10 s needed), a prompt that sits 9 s: refused after it.
        let mut events: Vec<Event> = Vec::new();
        let mut confirm = Slow {
            sleep: Duration::from_secs(9),
            then: || {},
        };
        let o = CutoverOptions {
            out: Some(b.cwd().join("bundle")),
            ..opts(16)
        };
        let e = window::cutover(
            &cluster,
            "acme",
            &o,
            &mut events,
            &mut confirm,
            std::future::pending(),
        )
        .await
        .unwrap_err();
        assert_eq!(e.exit_code(), vpnmig::exit::REFUSED, "{e}");
        let line = vpnmig::error::error_line(&e);
        assert!(
            line.contains("checked again after the confirmation"),
            "{line}"
        );
        assert!(line.contains("nothing was changed"), "{line}");
        assert_eq!(
            guards(&events),
            [
                ("Start".to_string(), true),
                ("Confirmed".to_string(), false)
            ]
        );
        assert!(
            b.journal(ns, "acme").await.is_none(),
            "{on}: nothing was written"
        );

        // The prompt is quick, but the API server turns slow before the delete (2.5 s a
        // request): the journal, the PSK detach and the dry run take the window's margin.
        let faults = b.api_faults().clone();
        let mut events: Vec<Event> = Vec::new();
        let mut confirm = Slow {
            sleep: Duration::ZERO,
            then: move || faults.write().unwrap().latency_ms = 2500,
        };
        let o = CutoverOptions {
            out: Some(b.cwd().join("bundle")),
            ..opts(16)
        };
        let e = window::cutover(
            &cluster,
            "acme",
            &o,
            &mut events,
            &mut confirm,
            std::future::pending(),
        )
        .await
        .unwrap_err();
        b.api_faults().write().unwrap().latency_ms = 0;
        assert_eq!(e.exit_code(), vpnmig::exit::REFUSED, "{e}");
        let line = vpnmig::error::error_line(&e);
        assert!(
            line.contains("checked again right before the delete"),
            "{line}"
        );
        assert!(line.contains("nothing was deleted"), "{line}");
        assert_eq!(
            guards(&events),
            [
                ("Start".to_string(), true),
                ("Confirmed".to_string(), true),
                ("BeforeDelete { phase: PskDetached }".to_string(), false)
            ]
        );
        let j = b.journal(ns, "acme").await.unwrap();
        assert_eq!(j["phase"], "psk-detached");
        assert!(
            j["lastError"]
                .as_str()
                .unwrap()
                .contains("refusing to cut over"),
            "{j}"
        );
        assert_eq!(
            b.objects(IPSECGATEWAY, ns).await.len(),
            1,
            "{on}: the IPsecGateway is untouched"
        );
        assert!(
            b.lease(ns, "acme").await.is_none(),
            "{on}: the lock is released"
        );
    }
}
