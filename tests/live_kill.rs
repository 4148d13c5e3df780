//! A cutover SIGKILLed at each phase boundary, then resumed, and (separately) rolled
//! back: DESIGN.md §4.6, "an interrupted cutover or rollback can be resumed or reversed
//! from any step". The kill lands the moment the journal records the phase (the test
//! watches the sandbox's store); every API request is slowed by 20 ms so the process
//! cannot have landed its next write by then.

mod live;

use std::time::Duration;

use live::{ACME, Live, start};
use serde_json::Value;
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

fn get(l: &Live, group: &str, version: &str, plural: &str, name: &str) -> Option<Value> {
    let rt = l.sb.store.resource(group, version, plural).unwrap();
    l.sb.store.get(&rt, "tenant-acme", name).ok()
}

fn phase(l: &Live) -> Option<String> {
    let cm = get(l, "", "v1", "configmaps", "vpnmig-acme")?;
    let j: Value = serde_json::from_str(cm["data"]["journal.json"].as_str()?).ok()?;
    j["phase"].as_str().map(str::to_string)
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

/// The invariants after a resumed cutover or a rollback (see tests/live_cutover.rs).
fn settled(l: &Live, kind: &str) {
    let fips = l.sb.operator.floating_ips();
    assert!(
        !fips.released.contains(&"198.51.100.23".to_string()),
        "{fips:?}"
    );
    assert_eq!(
        fips.associated.get("198.51.100.23"),
        Some(&format!("{kind} tenant-acme/acme"))
    );
    let secret = get(l, "", "v1", "secrets", "acme-psk").expect("the PSK Secret survives");
    let psk = vpnmig::core::psk::value(&secret, "psk").unwrap();
    assert_eq!(psk, b"rehearsal-only-not-a-real-key");
    let old = get(l, "ipsec.bnerd.net", "v1alpha1", "ipsecgateways", "acme");
    let new = get(l, "vpn.bnerd.net", "v1alpha1", "vpngateways", "acme");
    let peer = get(l, "vpn.bnerd.net", "v1alpha1", "vpnpeers", "acme");
    if kind == "VPNGateway" {
        assert!(old.is_none() && new.is_some() && peer.is_some());
    } else {
        assert!(old.is_some() && new.is_none() && peer.is_none());
    }
    let cm = get(l, "", "v1", "configmaps", "vpnmig-acme").expect("the journal stays");
    assert!(
        cm["data"]["old-ipsecgateway.yaml"]
            .as_str()
            .unwrap()
            .contains("floatingIP: \"198.51.100.23\"")
    );
    assert!(
        get(l, "coordination.k8s.io", "v1", "leases", "vpnmig-acme").is_none(),
        "the lock is released"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_each_phase_then_resumed() {
    for at in PHASES {
        let l = start(ACME, settings()).await;
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
            r.stderr.contains("taking over the lock of ")
                && r.stderr.contains("on this host is no longer running"),
            "{at}: {}",
            r.stderr
        );
        if PHASES.iter().position(|p| *p == at) >= PHASES.iter().position(|p| *p == "deleting") {
            assert!(
                r.stderr.contains(&format!(
                    "Resuming the cutover of tenant-acme/acme from phase {at}"
                )),
                "{at}: {}",
                r.stderr
            );
        }
        settled(&l, "VPNGateway");
        l.sb.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_each_phase_then_rolled_back() {
    for at in PHASES {
        let l = start(ACME, settings()).await;
        kill_at(&l, at).await;
        let r = l.vpnmig(&["rollback", "acme", "--yes"]).await;
        assert_eq!(r.code, 0, "rollback after a kill at {at}:\n{}", r.stderr);
        assert!(
            r.stderr.contains(&format!(
                "Rollback of tenant-acme/acme (journal phase {at})"
            )),
            "{at}: {}",
            r.stderr
        );
        settled(&l, "IPsecGateway");
        l.sb.shutdown().await;
    }
}
