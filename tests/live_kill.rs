//! A cutover SIGKILLed at each phase boundary, then resumed, and (separately) rolled
//! back: DESIGN.md §4.6, "an interrupted cutover or rollback can be resumed or reversed
//! from any step". The kill lands the moment the journal records the phase (the test
//! watches the sandbox's store); every API request is slowed by 20 ms so the process
//! cannot have landed its next write by then.

mod live;

use std::time::Duration;

use live::{ACME, Live, start};
use vpnmig_sandbox::SettingsFile;

const PHASES: [&str; 7] = [
    "started",
    "psk-detached",
    "deleting",
    "deleted",
    "applied",
    "attached",
    "ready",
];

fn settings() -> SettingsFile {
    let mut s = SettingsFile::default();
    // Every /24 but acme's taken: a re-created IPsecGateway gets its own back.
    s.operator.service_cidr_pool = "10.250.3.0/24".into();
    s.operator.finalizer_delay_ms = 100;
    s.operator.peer_retry_ms = 200;
    s.api.latency_ms = 20;
    s
}

fn phase(l: &Live) -> Option<String> {
    live::phase(l, "tenant-acme", "acme")
}

/// Start a cutover and SIGKILL it the moment the journal records `at`.
async fn kill_at(l: &Live, at: &str) {
    let mut changes = l.sb.store.subscribe();
    let mut child = l.spawn(&["cutover", "acme", "--yes"]);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if phase(l).as_deref() == Some(at) {
            child.kill().unwrap();
            break;
        }
        assert!(
            tokio::time::timeout_at(deadline, changes.changed())
                .await
                .is_ok(),
            "the cutover never reached {at} (journal phase {:?})",
            phase(l)
        );
    }
    let r = live::finish(child).await;
    assert_eq!(r.code, -1, "killed by a signal: {}", r.stderr);
    assert_eq!(phase(l).as_deref(), Some(at), "killed at the boundary");
}

/// DESIGN.md §4 after a resumed cutover or a rollback: `live::invariants`, with the PSK
/// fingerprint taken before the window.
fn settled(l: &Live, psk: &str, kind: &str) {
    live::invariants(
        l,
        "tenant-acme",
        "acme",
        "198.51.100.23",
        psk,
        kind,
        &["acme"],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_each_phase_then_resumed() {
    for at in PHASES {
        let l = start(ACME, settings()).await;
        let psk = live::psk_fingerprint(&l, "tenant-acme", "acme-psk");
        kill_at(&l, at).await;
        eprintln!("killed at {at}");
        let r = l
            .vpnmig(&[
                "cutover",
                "acme",
                "--yes",
                "--timeout-tunnel",
                "20s",
                "--timeout-attach",
                "20s",
                "--timeout-delete",
                "20s",
            ])
            .await;
        assert_eq!(r.code, 0, "resume after a kill at {at}:\n{}", r.stderr);
        assert!(
            r.says("taking over the lock of ") && r.says("on this host is no longer running"),
            "{at}: {}",
            r.stderr
        );
        if PHASES.iter().position(|p| *p == at) >= PHASES.iter().position(|p| *p == "deleting") {
            assert!(
                r.says(&format!(
                    "Resuming the cutover of tenant-acme/acme from phase {at}"
                )),
                "{at}: {}",
                r.stderr
            );
        }
        settled(&l, &psk, "VPNGateway");
        l.sb.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_each_phase_then_rolled_back() {
    for at in PHASES {
        let l = start(ACME, settings()).await;
        let psk = live::psk_fingerprint(&l, "tenant-acme", "acme-psk");
        kill_at(&l, at).await;
        let r = l.vpnmig(&["rollback", "acme", "--yes"]).await;
        assert_eq!(r.code, 0, "rollback after a kill at {at}:\n{}", r.stderr);
        assert!(
            r.says(&format!(
                "Rollback of tenant-acme/acme (journal phase {at})"
            )),
            "{at}: {}",
            r.stderr
        );
        settled(&l, &psk, "IPsecGateway");
        l.sb.shutdown().await;
    }
}
