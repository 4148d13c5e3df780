//! Admission webhooks end to end (issue 9 item 8): a webhook that cannot dry-run is one
//! verdict in plan and cutover (a warning naming it; cutover goes on only with
//! `--skip-dry-run-webhook NAME`), and a webhook's refusal anywhere in the window says
//! what was (not) deleted and a command that works, which each test then runs.
//!
//! Rows of tests/live/bed.rs, each marked for the emulator only: admission webhooks are
//! the emulator's knob (`settings.api.webhooks`); on the real control plane they would be
//! a `ValidatingWebhookConfiguration` answered by an HTTPS server the bed does not have
//! yet (docs/sandbox.md, "Not through the proxy").

mod live;

use live::bed::{
    After, Backend, Bed, IPSECGATEWAY, Row, Scenario, VPNGATEWAY, VPNPEER, eventually,
};
use live::{ACME, finish};
use vpnmig_sandbox::SettingsFile;
use vpnmig_sandbox::api::faults::{SideEffects, Webhook};

const ACME_FIP: &str = "198.51.100.23";
const POLICY: &str = "vpngateway-policy.example.net";

fn settings() -> SettingsFile {
    let mut s = SettingsFile::default();
    s.operator.service_cidr_pool = "10.250.3.0/24".into();
    s
}

/// Why every row here runs on the emulator only.
const WEBHOOKS: &str = "admission webhooks are the emulator's (settings.api.webhooks): the real control plane would need a ValidatingWebhookConfiguration and an HTTPS webhook server the bed does not have yet";

/// acme with the policy webhook installed from the start, unable to dry-run.
fn acme_behind_a_webhook_that_cannot_dry_run() -> Scenario {
    let mut s = settings();
    s.api.webhooks.push(policy(SideEffects::Unknown, false));
    Scenario::new(ACME, s)
}

/// acme behind slow requests (100 ms each), so a webhook can be installed at a chosen
/// point of a window under way (a webhook configuration applied during the window).
fn acme_slow() -> Scenario {
    let mut s = settings();
    s.api.latency_ms = 100;
    Scenario::new(ACME, s)
}

crate::rows! {
    a_webhook_that_cannot_dry_run_warns_in_plan_and_stops_cutover_until_skipped_by_name: Row {
        scenario: acme_behind_a_webhook_that_cannot_dry_run,
        only: Some((Backend::Emulated, WEBHOOKS)),
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(a_webhook_that_cannot_dry_run_warns_in_plan_and_stops_cutover_until_skipped_by_name(b)),
    },
    a_webhook_met_first_by_the_pre_delete_dry_run_stops_with_nothing_deleted: Row {
        scenario: acme_slow,
        only: Some((Backend::Emulated, WEBHOOKS)),
        after: None,
        steps: |b| Box::pin(a_webhook_met_first_by_the_pre_delete_dry_run_stops_with_nothing_deleted(b)),
    },
    a_webhook_that_denies_the_real_apply_after_the_delete_says_what_to_run: Row {
        scenario: acme_slow,
        only: Some((Backend::Emulated, WEBHOOKS)),
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(a_webhook_that_denies_the_real_apply_after_the_delete_says_what_to_run(b)),
    },
    a_target_refused_by_the_pre_delete_dry_run_stops_with_nothing_deleted_and_resumes: Row {
        scenario: acme_slow,
        only: Some((Backend::Emulated, WEBHOOKS)),
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(a_target_refused_by_the_pre_delete_dry_run_stops_with_nothing_deleted_and_resumes(b)),
    },
}

/// The webhook of the field report: VPNGateways and VPNPeers, sideEffects Unknown.
fn policy(side_effects: SideEffects, deny: bool) -> Webhook {
    Webhook {
        name: POLICY.into(),
        resources: vec!["vpngateways".into(), "vpnpeers".into()],
        verbs: vec!["create".into(), "update".into(), "patch".into()],
        side_effects,
        deny,
        message: deny.then(|| "peers need a change ticket".to_string()),
        annotations: Vec::new(),
    }
}

/// Nothing of the window happened: the IPsecGateway is there, no target exists, the
/// floating IP was never released.
async fn untouched(b: &Bed) {
    assert_eq!(
        b.objects(IPSECGATEWAY, "tenant-acme").await.len(),
        1,
        "the IPsecGateway is still there"
    );
    assert!(b.objects(VPNGATEWAY, "tenant-acme").await.is_empty());
    assert!(b.objects(VPNPEER, "tenant-acme").await.is_empty());
    let fips = b.operator.floating_ips();
    assert!(fips.released.is_empty(), "{fips:?}");
    assert!(
        b.lease("tenant-acme", "acme").await.is_none(),
        "lock released"
    );
}

/// The command in the `hint:` line, between backticks, as argv (without `vpnmig`).
fn advised(stderr: &str) -> Vec<String> {
    let hint = live::labelled(stderr, "hint: ").unwrap_or_else(|| panic!("no hint in {stderr}"));
    live::advised(&hint)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no `vpnmig …` in the hint: {hint}"))
}

async fn a_webhook_that_cannot_dry_run_warns_in_plan_and_stops_cutover_until_skipped_by_name(
    b: &Bed,
) {
    let r = b.vpnmig(&["plan", "acme", "--server-dry-run"]).await;
    // The plan's text is wrapped to 100 columns: its sentences read joined.
    let out = live::flat(&format!("{}\n{}", r.stdout, r.stderr));
    assert_eq!(r.code, 0, "a warning, not a blocker: {out}");
    assert!(
        out.contains(&format!(
            "admission webhook {POLICY} cannot dry-run, so it has not validated VPNGateway/acme"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("--skip-dry-run-webhook {POLICY}")),
        "{out}"
    );
    assert!(!out.contains("BLOCKER server-dry-run"), "{out}");

    // Without the flag: refused before anything changes, the webhook named.
    let r = b.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(
        r.says(&format!(
            "admission webhook {POLICY} cannot dry-run (sideEffects Some or Unknown)"
        )),
        "{}",
        r.stderr
    );
    assert!(r.says("nothing was changed"), "{}", r.stderr);
    assert!(b.journal("tenant-acme", "acme").await.is_none());
    untouched(b).await;
    let cmd = advised(&r.stderr);
    assert_eq!(
        cmd,
        [
            "cutover",
            "acme",
            "-n",
            "tenant-acme",
            "--skip-dry-run-webhook",
            POLICY,
            "--yes"
        ]
    );

    // A flag naming another webhook is not enough.
    let r = b
        .vpnmig(&[
            "cutover",
            "acme",
            "--yes",
            "--skip-dry-run-webhook",
            "other.example.net",
        ])
        .await;
    assert_eq!(r.code, 7, "{}", r.stderr);
    untouched(b).await;

    // `--dry-run` with the flag: every dry run, the webhook's skipped and said so.
    let r = b
        .vpnmig(&[
            "cutover",
            "acme",
            "--yes",
            "--dry-run",
            "--skip-dry-run-webhook",
            POLICY,
        ])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.says(&format!(
            "! dry run: VPNPeer/acme not validated by admission webhook {POLICY}, which cannot dry-run (--skip-dry-run-webhook {POLICY})"
        )),
        "{}",
        r.stderr
    );
    assert!(r.says("dry run: nothing was changed"), "{}", r.stderr);
    assert!(b.journal("tenant-acme", "acme").await.is_none());
    untouched(b).await;

    // The advised command, as printed (with --yes, as the run it was advised to had).
    let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let r = b.vpnmig(&args).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.says(&format!(
            "! server-side dry run: VPNGateway/acme not validated by admission webhook {POLICY}, which cannot dry-run (skipped: --skip-dry-run-webhook {POLICY})"
        )),
        "{}",
        r.stderr
    );
    assert_eq!(
        b.phase("tenant-acme", "acme").await.as_deref(),
        Some("done")
    );
    // The invariants: the row's `after`.
}

async fn a_webhook_met_first_by_the_pre_delete_dry_run_stops_with_nothing_deleted(b: &Bed) {
    // Slow requests (the scenario), so the webhook can be installed after the plan's dry
    // run and before the one right before the delete.
    let child = b.spawn(&["cutover", "acme", "--yes"]);
    eventually(30, "the journal", || async {
        b.journal("tenant-acme", "acme").await.is_some()
    })
    .await;
    b.api_faults()
        .write()
        .unwrap()
        .webhooks
        .push(policy(SideEffects::Some, false));
    let r = finish(child).await;
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(
        r.says(&format!(
            "admission webhook {POLICY} cannot dry-run (sideEffects Some or Unknown)"
        )),
        "{}",
        r.stderr
    );
    assert!(
        r.says("nothing was deleted (journal phase psk-detached)"),
        "{}",
        r.stderr
    );
    let j = b.journal("tenant-acme", "acme").await.unwrap();
    assert_eq!(j["phase"], "psk-detached");
    assert!(j["lastError"].as_str().unwrap().contains(POLICY), "{j}");
    untouched(b).await;

    b.api_faults().write().unwrap().latency_ms = 0;
    // Advice to a run with --yes carries it.
    let args = advised(&r.stderr);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(
        args,
        [
            "cutover",
            "acme",
            "-n",
            "tenant-acme",
            "--skip-dry-run-webhook",
            POLICY,
            "--yes"
        ]
    );
    let r = b.vpnmig(&args).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        b.phase("tenant-acme", "acme").await.as_deref(),
        Some("done")
    );
    let fips = b.operator.floating_ips();
    assert!(!fips.released.contains(&ACME_FIP.to_string()), "{fips:?}");
}

async fn a_webhook_that_denies_the_real_apply_after_the_delete_says_what_to_run(b: &Bed) {
    let child = b.spawn(&["cutover", "acme", "--yes"]);
    // Installed once the dry run has passed: only the real apply meets it.
    eventually(30, "phase deleting", || async {
        b.phase("tenant-acme", "acme").await.as_deref() == Some("deleting")
    })
    .await;
    b.api_faults()
        .write()
        .unwrap()
        .webhooks
        .push(policy(SideEffects::None, true));
    let r = finish(child).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.says(&format!(
            "admission webhook \"{POLICY}\" denied the request: peers need a change ticket"
        )),
        "{}",
        r.stderr
    );
    assert!(
        r.says("cutover of acme -n tenant-acme stopped at phase deleted"),
        "{}",
        r.stderr
    );
    assert!(
        r.says(
            "the IPsecGateway is deleted; restore it with `vpnmig rollback acme -n tenant-acme --yes`, or fix the cause and resume with `vpnmig cutover acme -n tenant-acme --yes`"
        ),
        "{}",
        r.stderr
    );
    let fips = b.operator.floating_ips();
    assert!(!fips.released.contains(&ACME_FIP.to_string()), "{fips:?}");

    // The cause fixed (the webhook admits it now), the advised resume works.
    b.api_faults().write().unwrap().webhooks.clear();
    b.api_faults().write().unwrap().latency_ms = 0;
    let r = b
        .vpnmig(&["cutover", "acme", "-n", "tenant-acme", "--yes"])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        b.phase("tenant-acme", "acme").await.as_deref(),
        Some("done")
    );
    // The invariants: the row's `after`.
}

async fn a_target_refused_by_the_pre_delete_dry_run_stops_with_nothing_deleted_and_resumes(
    b: &Bed,
) {
    let child = b.spawn(&["cutover", "acme", "--yes"]);
    eventually(30, "the journal", || async {
        b.journal("tenant-acme", "acme").await.is_some()
    })
    .await;
    // A webhook that can dry-run (called for dry runs) and denies.
    b.api_faults()
        .write()
        .unwrap()
        .webhooks
        .push(policy(SideEffects::NoneOnDryRun, true));
    let r = finish(child).await;
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(
        r.says(&format!(
            "the pre-delete server-side dry run of VPNGateway/acme failed: cannot apply vpngateway/acme -n tenant-acme: admission webhook \"{POLICY}\" denied the request: peers need a change ticket"
        )),
        "{}",
        r.stderr
    );
    assert!(
        r.says("nothing was deleted (journal phase psk-detached)"),
        "{}",
        r.stderr
    );
    assert!(
        r.says(
            "hint: the API server refuses the target as it stands: fix the cause; nothing was deleted: `vpnmig cutover acme -n tenant-acme --yes` resumes"
        ),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("missing permission"), "{}", r.stderr);
    assert_eq!(
        b.phase("tenant-acme", "acme").await.as_deref(),
        Some("psk-detached")
    );
    untouched(b).await;

    b.api_faults().write().unwrap().webhooks.clear();
    b.api_faults().write().unwrap().latency_ms = 0;
    let r = b
        .vpnmig(&["cutover", "acme", "-n", "tenant-acme", "--yes"])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The invariants: the row's `after`.
}
