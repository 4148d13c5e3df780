//! The window guard in the engine, in-process against the sandbox: checked again after
//! a confirmation that sat for a while (refused, nothing changed), and right before the
//! delete when the steps before it were slow (refused, nothing deleted). The CLI's side
//! is live_guard.rs.

mod live;

use std::time::Duration;

use live::{ACME, pool, start};
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

#[test]
fn the_guard_is_checked_again_after_the_prompt_and_before_the_delete() {
    // One test in this binary, set before any thread.
    let state = tempfile::tempdir().unwrap();
    unsafe { std::env::set_var("VPNMIG_STATE_DIR", state.path()) };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let l = start(ACME, pool("10.250.3.0/24")).await;
        let cluster = Cluster::connect(&ClusterOptions {
            kubeconfig: Some(l.kubeconfig.clone()),
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
            out: Some(state.path().join("bundle")),
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
            live::journal(&l, ns, "acme").is_none(),
            "nothing was written"
        );

        // The prompt is quick, but the API server turns slow before the delete (2.5 s a
        // request): the journal, the PSK detach and the dry run take the window's margin.
        let faults = l.sb.api_faults.clone();
        let mut events: Vec<Event> = Vec::new();
        let mut confirm = Slow {
            sleep: Duration::ZERO,
            then: move || faults.write().unwrap().latency_ms = 2500,
        };
        let o = CutoverOptions {
            out: Some(state.path().join("bundle")),
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
        l.sb.api_faults.write().unwrap().latency_ms = 0;
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
        let j = live::journal(&l, ns, "acme").unwrap();
        assert_eq!(j["phase"], "psk-detached");
        assert!(
            j["lastError"]
                .as_str()
                .unwrap()
                .contains("refusing to cut over"),
            "{j}"
        );
        assert_eq!(
            live::objects(&l, "ipsec.bnerd.net", "ipsecgateways", ns).len(),
            1,
            "the IPsecGateway is untouched"
        );
        assert!(
            live::core(&l, "leases", ns, "vpnmig-acme").is_none(),
            "the lock is released"
        );
    });
}
