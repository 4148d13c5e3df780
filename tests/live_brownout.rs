//! API brown-outs (issue 14 item 5; DESIGN.md §4.9): every call has a deadline, retries
//! are bounded in count and time, `Retry-After` is honoured up to a cap and shown, and no
//! run is silent for more than a few seconds.
//!
//! One row per case (tests/live/bed.rs), each run on the emulator and on the real control
//! plane, where the same API fault knobs act in the fault proxy in front of kube-apiserver
//! (`vpnmig_sandbox::proxy`), switched at run time through `Bed::api_faults`.

mod live;

use std::time::Duration;

use live::ACME;
use live::bed::{After, Bed, Row, Scenario};
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

fn acme() -> Scenario {
    Scenario::new(ACME, acme_settings())
}

/// The longest silence any test here allows (the bound is 10 s).
const SILENCE: Duration = Duration::from_secs(6);

crate::rows! {
    a_persistent_503_ends_the_run_within_its_budget_and_is_never_silent: Row {
        scenario: acme,
        only: None,
        after: After::acme("IPsecGateway"),
        steps: |b| Box::pin(a_persistent_503_ends_the_run_within_its_budget_and_is_never_silent(b)),
    },
    a_long_retry_after_mid_outage_is_capped_shown_and_the_window_finishes: Row {
        scenario: acme,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(a_long_retry_after_mid_outage_is_capped_shown_and_the_window_finishes(b)),
    },
    a_persistent_503_on_a_list_ends_verify_and_status_with_exit_1: Row {
        scenario: acme,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(a_persistent_503_on_a_list_ends_verify_and_status_with_exit_1(b)),
    },
    no_answer_about_the_tunnels_pod_exec_is_no_verdict_and_no_rollback: Row {
        scenario: acme,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(no_answer_about_the_tunnels_is_no_verdict_and_no_rollback(b, "create", "pods/exec")),
    },
    no_answer_about_the_tunnels_list_pods_is_no_verdict_and_no_rollback: Row {
        scenario: acme,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(no_answer_about_the_tunnels_is_no_verdict_and_no_rollback(b, "list", "pods")),
    },
    no_answer_about_the_tunnels_get_deployments_is_no_verdict_and_no_rollback: Row {
        scenario: acme,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(no_answer_about_the_tunnels_is_no_verdict_and_no_rollback(b, "get", "deployments")),
    },
}

async fn a_persistent_503_ends_the_run_within_its_budget_and_is_never_silent(b: &Bed) {
    let _quiet = b.quiet().await;
    b.api_faults().write().unwrap().errors = vec![rule("get", "leases", 503, None, None)];
    let started = std::time::Instant::now();
    let (r, silent) = live::finish_timed(b.spawn(&["cutover", "acme", "--yes"])).await;
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
    b.api_faults().write().unwrap().errors.clear();
    assert_eq!(
        b.phase("tenant-acme", "acme").await,
        None,
        "nothing was started"
    );
}

async fn a_long_retry_after_mid_outage_is_capped_shown_and_the_window_finishes(b: &Bed) {
    let _quiet = b.quiet().await;
    let child = b.spawn(&["cutover", "acme", "--yes"]);
    b.until_phase("tenant-acme", "acme", "deleting", 30).await;
    // One 503 with Retry-After: 90 on the next journal write: the outage has begun.
    b.api_faults().write().unwrap().errors =
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
    assert_eq!(
        b.phase("tenant-acme", "acme").await.as_deref(),
        Some("done")
    );
}

/// Attack finding: a persistent 503 on listing VPNPeers once hung `verify` and `status`
/// silently for ever (kube-rs's own retry layer). Each now ends within its budget with
/// exit 1 naming the 503, and is never silent.
async fn a_persistent_503_on_a_list_ends_verify_and_status_with_exit_1(b: &Bed) {
    let _quiet = b.quiet().await;
    b.step(&["cutover", "acme", "--yes"], 0, &[]).await;
    b.api_faults().write().unwrap().errors = vec![rule("list", "vpnpeers", 503, None, None)];
    for args in [
        &["verify", "acme"][..],
        &["status"],
        &["status", "-A"],
        &["verify", "acme", "-o", "json"],
    ] {
        let started = std::time::Instant::now();
        let (r, silent) = live::finish_timed(b.spawn(args)).await;
        assert_eq!(r.code, 1, "vpnmig {args:?}\n{}\n{}", r.stdout, r.stderr);
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "vpnmig {args:?} bounded"
        );
        assert!(silent < SILENCE, "vpnmig {args:?} silent for {silent:?}");
        assert!(r.says("503"), "vpnmig {args:?}: {}", r.stderr);
        assert!(!r.stdout.contains("HEALTHY"), "{}", r.stdout);
    }
    // The invariants after the row read the VPNPeers through the API.
    b.api_faults().write().unwrap().errors.clear();
}

/// Attack finding (issue 9 item 0): a persistent 5xx on what the tunnel check needs
/// (`pods/exec`, `list pods`, `get deployments`: one row each) was a FAIL tunnel row, so
/// `verify` said NOT HEALTHY (exit 5) and `cutover --rollback-on-failure` rolled back a
/// working migration, losing its addresses. No answer says nothing about the gateway:
/// verify ends with exit 1, and the window stops at `ready` (exit 1) without rolling
/// back, with the command that resumes it, which then finishes.
async fn no_answer_about_the_tunnels_is_no_verdict_and_no_rollback(
    b: &Bed,
    verb: &str,
    resource: &str,
) {
    b.api_faults().write().unwrap().errors = vec![ErrorRule {
        verbs: vec![verb.into(), "get".into()],
        ..rule(verb, resource, 503, None, None)
    }];
    let v = b.vpnmig(&["verify", "acme"]).await;
    assert_eq!(v.code, 1, "{resource}: verify\n{}\n{}", v.stdout, v.stderr);
    assert!(
        !v.stdout.contains("NOT HEALTHY"),
        "{resource}: {}",
        v.stdout
    );

    let r = b
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
        b.phase("tenant-acme", "acme").await.as_deref(),
        Some("ready"),
        "{resource}: the window stopped where it was, nothing undone"
    );
    assert!(
        r.says("`vpnmig cutover acme -n tenant-acme --yes`"),
        "{resource}: the resume is advised: {}",
        r.stderr
    );
    b.api_faults().write().unwrap().errors.clear();
    let r = b
        .vpnmig(&["cutover", "acme", "-n", "tenant-acme", "--yes"])
        .await;
    assert_eq!(r.code, 0, "{resource}: the advised resume: {}", r.stderr);
}
