//! A cutover SIGKILLed at each phase boundary, then resumed, and (separately) rolled
//! back: DESIGN.md §4.6, "an interrupted cutover or rollback can be resumed or reversed
//! from any step". One row per phase and way on, run on the emulator and on the real
//! control plane (tests/live/bed.rs). The kill lands the moment the journal records the
//! phase ([`Bed::until_phase`]: the emulator's store, or a watch on kube-apiserver itself);
//! every API request vpnmig makes is slowed by 20 ms (the emulator's, or the fault proxy's
//! latency), so the process cannot have landed its next write by then.

mod live;

use live::ACME;
use live::bed::{After, Bed, Row, Scenario};
use vpnmig_sandbox::SettingsFile;

fn scenario() -> Scenario {
    let mut s = SettingsFile::default();
    // Every /24 but acme's taken: a re-created IPsecGateway gets its own back.
    s.operator.service_cidr_pool = "10.250.3.0/24".into();
    s.operator.finalizer_delay_ms = 100;
    s.operator.peer_retry_ms = 200;
    s.api.latency_ms = 20;
    Scenario::new(ACME, s)
}

/// Start a cutover and SIGKILL it the moment the journal records `at`.
async fn kill_at(b: &Bed, at: &str) {
    let mut child = b.spawn(&["cutover", "acme", "--yes"]);
    b.until_phase("tenant-acme", "acme", at, 30).await;
    child.kill().unwrap();
    let r = live::finish(child).await;
    assert_eq!(r.code, -1, "killed by a signal: {}", r.stderr);
    assert_eq!(
        b.phase("tenant-acme", "acme").await.as_deref(),
        Some(at),
        "killed at the boundary"
    );
}

/// Killed at `at`, then the same cutover again: it takes the dead run's lock over, resumes
/// from the phase (from `deleting` on: the earlier phases start over) and ends done.
async fn resumed(b: &Bed, at: &str) {
    kill_at(b, at).await;
    let r = b
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
    if ["deleting", "deleted", "applied", "attached", "ready"].contains(&at) {
        assert!(
            r.says(&format!(
                "Resuming the cutover of tenant-acme/acme from phase {at}"
            )),
            "{at}: {}",
            r.stderr
        );
    }
}

/// Killed at `at`, then rolled back: the old gateway back as it was.
async fn rolled_back(b: &Bed, at: &str) {
    kill_at(b, at).await;
    let r = b.vpnmig(&["rollback", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "rollback after a kill at {at}:\n{}", r.stderr);
    assert!(
        r.says(&format!(
            "Rollback of tenant-acme/acme (journal phase {at})"
        )),
        "{at}: {}",
        r.stderr
    );
}

/// A row per phase: killed there, then `$way` (resumed or rolled back), ending `$kind`.
macro_rules! killed {
    ($( $name:ident: $way:ident at $at:literal ends $kind:literal ),* $(,)?) => {
        crate::rows! {$(
            $name: Row {
                scenario,
                only: None,
                after: After::acme($kind),
                steps: |b| Box::pin($way(b, $at)),
            },
        )*}
    };
}

killed! {
    killed_at_started_then_resumed: resumed at "started" ends "VPNGateway",
    killed_at_psk_detached_then_resumed: resumed at "psk-detached" ends "VPNGateway",
    killed_at_deleting_then_resumed: resumed at "deleting" ends "VPNGateway",
    killed_at_deleted_then_resumed: resumed at "deleted" ends "VPNGateway",
    killed_at_applied_then_resumed: resumed at "applied" ends "VPNGateway",
    killed_at_attached_then_resumed: resumed at "attached" ends "VPNGateway",
    killed_at_ready_then_resumed: resumed at "ready" ends "VPNGateway",
    killed_at_started_then_rolled_back: rolled_back at "started" ends "IPsecGateway",
    killed_at_psk_detached_then_rolled_back: rolled_back at "psk-detached" ends "IPsecGateway",
    killed_at_deleting_then_rolled_back: rolled_back at "deleting" ends "IPsecGateway",
    killed_at_deleted_then_rolled_back: rolled_back at "deleted" ends "IPsecGateway",
    killed_at_applied_then_rolled_back: rolled_back at "applied" ends "IPsecGateway",
    killed_at_attached_then_rolled_back: rolled_back at "attached" ends "IPsecGateway",
    killed_at_ready_then_rolled_back: rolled_back at "ready" ends "IPsecGateway",
}
