//! API brown-outs (issue 14 item 5; DESIGN.md §4.9): every call has a deadline, retries
//! are bounded in count and time, `Retry-After` is honoured up to a cap and shown, and no
//! run is silent for more than a few seconds.

mod live;

use std::time::Duration;

use live::{ACME, phase, start};
use vpnmig_sandbox::SettingsFile;
use vpnmig_sandbox::api::faults::ErrorRule;

fn rule(
    verb: &str,
    resource: &str,
    code: u16,
    times: Option<u32>,
    retry_after: Option<u64>,
) -> ErrorRule {
    ErrorRule {
        verbs: vec![verb.into()],
        resources: vec![resource.into()],
        code,
        times,
        retry_after_seconds: retry_after,
    }
}

fn acme_settings() -> SettingsFile {
    live::pool("10.250.3.0/24")
}

/// The longest silence any test here allows (the bound is 10 s).
const SILENCE: Duration = Duration::from_secs(6);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_503_ends_the_run_within_its_budget_and_is_never_silent() {
    let l = start(ACME, acme_settings()).await;
    l.sb.api_faults.write().unwrap().errors = vec![rule("get", "leases", 503, None, None)];
    let started = std::time::Instant::now();
    let (r, silent) = live::finish_timed(l.spawn(&["cutover", "acme", "--yes"])).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "bounded: {:?}",
        started.elapsed()
    );
    assert!(silent < SILENCE, "silent for {silent:?}:\n{}", r.stderr);
    assert!(r.says("API busy, retrying in"), "{}", r.stderr);
    assert!(r.says("(backoff; 4/4)"), "{}", r.stderr);
    assert!(r.says("lease/vpnmig-acme"), "{}", r.stderr);
    assert_eq!(
        phase(&l, "tenant-acme", "acme"),
        None,
        "nothing was started"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_retry_after_mid_outage_is_capped_shown_and_the_window_finishes() {
    let l = start(ACME, acme_settings()).await;
    let child = l.spawn(&["cutover", "acme", "--yes"]);
    live::eventually(30, "the delete", || {
        phase(&l, "tenant-acme", "acme").as_deref() == Some("deleting")
    })
    .await;
    // One 503 with Retry-After: 90 on the next journal write: the outage has begun.
    l.sb.api_faults.write().unwrap().errors =
        vec![rule("patch", "configmaps", 503, Some(1), Some(90))];
    let (r, silent) = live::finish_timed(child).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.says("API busy, retrying in 10s (Retry-After 90s, capped at 10s; 1/4)"),
        "{}",
        r.stderr
    );
    assert!(
        silent < SILENCE + Duration::from_secs(5),
        "silent for {silent:?}:\n{}",
        r.stderr
    );
    assert_eq!(phase(&l, "tenant-acme", "acme").as_deref(), Some("done"));
}

/// Attack finding: a persistent 503 on listing VPNPeers once hung `verify` and `status`
/// silently for ever (kube-rs's own retry layer). Each now ends within its budget with
/// exit 1 naming the 503, and is never silent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_503_on_a_list_ends_verify_and_status_with_exit_1() {
    let l = start(ACME, acme_settings()).await;
    assert_eq!(l.vpnmig(&["cutover", "acme", "--yes"]).await.code, 0);
    l.sb.api_faults.write().unwrap().errors = vec![rule("list", "vpnpeers", 503, None, None)];
    for args in [
        &["verify", "acme"][..],
        &["status"],
        &["status", "-A"],
        &["verify", "acme", "-o", "json"],
    ] {
        let started = std::time::Instant::now();
        let (r, silent) = live::finish_timed(l.spawn(args)).await;
        assert_eq!(r.code, 1, "vpnmig {args:?}\n{}\n{}", r.stdout, r.stderr);
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "vpnmig {args:?} bounded"
        );
        assert!(silent < SILENCE, "vpnmig {args:?} silent for {silent:?}");
        assert!(r.says("503"), "vpnmig {args:?}: {}", r.stderr);
        assert!(!r.stdout.contains("HEALTHY"), "{}", r.stdout);
    }
}

/// Attack finding (issue 9 item 0): a persistent 5xx on what the tunnel check needs
/// (`pods/exec`, `list pods`, `get deployments`) was a FAIL tunnel row, so `verify` said
/// NOT HEALTHY (exit 5) and `cutover --rollback-on-failure` rolled back a working
/// migration, losing its addresses. No answer says nothing about the gateway: verify ends
/// with exit 1, and the window stops at `ready` (exit 1) without rolling back, with the
/// command that resumes it, which then finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_answer_about_the_tunnels_is_no_verdict_and_no_rollback() {
    for (verb, resource) in [
        ("create", "pods/exec"),
        ("list", "pods"),
        ("get", "deployments"),
    ] {
        let l = start(ACME, acme_settings()).await;
        let psk = live::psk_fingerprint(&l, "tenant-acme", "acme-psk");
        l.sb.api_faults.write().unwrap().errors = vec![ErrorRule {
            verbs: vec![verb.into(), "get".into()],
            ..rule(verb, resource, 503, None, None)
        }];
        let v = l.vpnmig(&["verify", "acme"]).await;
        assert_eq!(v.code, 1, "{resource}: verify\n{}\n{}", v.stdout, v.stderr);
        assert!(
            !v.stdout.contains("NOT HEALTHY"),
            "{resource}: {}",
            v.stdout
        );

        let r = l
            .vpnmig(&[
                "cutover",
                "acme",
                "--yes",
                "--rollback-on-failure",
                "--timeout-tunnel",
                "3s",
            ])
            .await;
        assert_eq!(r.code, 1, "{resource}: {}", r.stderr);
        assert!(
            r.says("not rolling back, the API server did not answer"),
            "{resource}: {}",
            r.stderr
        );
        assert!(r.says("503"), "{resource}: {}", r.stderr);
        assert_eq!(
            phase(&l, "tenant-acme", "acme").as_deref(),
            Some("ready"),
            "{resource}: the window stopped where it was, nothing undone"
        );
        assert!(
            r.says("`vpnmig cutover acme -n tenant-acme --yes`"),
            "{resource}: the resume is advised: {}",
            r.stderr
        );
        l.sb.api_faults.write().unwrap().errors.clear();
        let r = l
            .vpnmig(&["cutover", "acme", "-n", "tenant-acme", "--yes"])
            .await;
        assert_eq!(r.code, 0, "{resource}: the advised resume: {}", r.stderr);
        live::invariants(
            &l,
            "tenant-acme",
            "acme",
            "198.51.100.23",
            &psk,
            "VPNGateway",
            &["acme"],
        );
        l.sb.shutdown().await;
    }
}
