//! Admission webhooks end to end (issue 9 item 8): a webhook that cannot dry-run is one
//! verdict in plan and cutover (a warning naming it; cutover goes on only with
//! `--skip-dry-run-webhook NAME`), and a webhook's refusal anywhere in the window says
//! what was (not) deleted and a command that works, which each test then runs.

mod live;

use live::{
    ACME, Live, core, eventually, finish, invariants, journal, objects, phase, psk_fingerprint,
    start,
};
use vpnmig_sandbox::SettingsFile;
use vpnmig_sandbox::api::faults::{SideEffects, Webhook};

const ACME_FIP: &str = "198.51.100.23";
const POLICY: &str = "vpngateway-policy.example.net";

fn settings() -> SettingsFile {
    let mut s = SettingsFile::default();
    s.operator.service_cidr_pool = "10.250.3.0/24".into();
    s
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
fn untouched(l: &Live) {
    assert_eq!(
        objects(l, "ipsec.bnerd.net", "ipsecgateways", "tenant-acme").len(),
        1,
        "the IPsecGateway is still there"
    );
    assert!(objects(l, "vpn.bnerd.net", "vpngateways", "tenant-acme").is_empty());
    assert!(objects(l, "vpn.bnerd.net", "vpnpeers", "tenant-acme").is_empty());
    let fips = l.sb.operator.floating_ips();
    assert!(fips.released.is_empty(), "{fips:?}");
    assert!(
        core(l, "leases", "tenant-acme", "vpnmig-acme").is_none(),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_that_cannot_dry_run_warns_in_plan_and_stops_cutover_until_skipped_by_name() {
    let mut s = settings();
    s.api.webhooks.push(policy(SideEffects::Unknown, false));
    let l = start(ACME, s).await;
    let psk = psk_fingerprint(&l, "tenant-acme", "acme-psk");

    let r = l.vpnmig(&["plan", "acme", "--server-dry-run"]).await;
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
    let r = l.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(
        r.says(&format!(
            "admission webhook {POLICY} cannot dry-run (sideEffects Some or Unknown)"
        )),
        "{}",
        r.stderr
    );
    assert!(r.says("nothing was changed"), "{}", r.stderr);
    assert!(journal(&l, "tenant-acme", "acme").is_none());
    untouched(&l);
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
    let r = l
        .vpnmig(&[
            "cutover",
            "acme",
            "--yes",
            "--skip-dry-run-webhook",
            "other.example.net",
        ])
        .await;
    assert_eq!(r.code, 7, "{}", r.stderr);
    untouched(&l);

    // `--dry-run` with the flag: every dry run, the webhook's skipped and said so.
    let r = l
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
    assert!(journal(&l, "tenant-acme", "acme").is_none());
    untouched(&l);

    // The advised command, as printed (with --yes, as the run it was advised to had).
    let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let r = l.vpnmig(&args).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.says(&format!(
            "! server-side dry run: VPNGateway/acme not validated by admission webhook {POLICY}, which cannot dry-run (skipped: --skip-dry-run-webhook {POLICY})"
        )),
        "{}",
        r.stderr
    );
    assert_eq!(phase(&l, "tenant-acme", "acme").as_deref(), Some("done"));
    invariants(
        &l,
        "tenant-acme",
        "acme",
        ACME_FIP,
        &psk,
        "VPNGateway",
        &["acme"],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_met_first_by_the_pre_delete_dry_run_stops_with_nothing_deleted() {
    // Slow requests, so the webhook can be installed after the plan's dry run and
    // before the one right before the delete (a webhook configuration applied during
    // the window).
    let mut s = settings();
    s.api.latency_ms = 100;
    let l = start(ACME, s).await;
    let child = l.spawn(&["cutover", "acme", "--yes"]);
    eventually(30, "the journal", || {
        journal(&l, "tenant-acme", "acme").is_some()
    })
    .await;
    l.sb.api_faults
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
    let j = journal(&l, "tenant-acme", "acme").unwrap();
    assert_eq!(j["phase"], "psk-detached");
    assert!(j["lastError"].as_str().unwrap().contains(POLICY), "{j}");
    untouched(&l);

    l.sb.api_faults.write().unwrap().latency_ms = 0;
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
    let r = l.vpnmig(&args).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(phase(&l, "tenant-acme", "acme").as_deref(), Some("done"));
    let fips = l.sb.operator.floating_ips();
    assert!(!fips.released.contains(&ACME_FIP.to_string()), "{fips:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_that_denies_the_real_apply_after_the_delete_says_what_to_run() {
    let mut s = settings();
    s.api.latency_ms = 100;
    let l = start(ACME, s).await;
    let psk = psk_fingerprint(&l, "tenant-acme", "acme-psk");
    let child = l.spawn(&["cutover", "acme", "--yes"]);
    // Installed once the dry run has passed: only the real apply meets it.
    eventually(30, "phase deleting", || {
        phase(&l, "tenant-acme", "acme").as_deref() == Some("deleting")
    })
    .await;
    l.sb.api_faults
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
    let fips = l.sb.operator.floating_ips();
    assert!(!fips.released.contains(&ACME_FIP.to_string()), "{fips:?}");

    // The cause fixed (the webhook admits it now), the advised resume works.
    l.sb.api_faults.write().unwrap().webhooks.clear();
    l.sb.api_faults.write().unwrap().latency_ms = 0;
    let r = l
        .vpnmig(&["cutover", "acme", "-n", "tenant-acme", "--yes"])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(phase(&l, "tenant-acme", "acme").as_deref(), Some("done"));
    invariants(
        &l,
        "tenant-acme",
        "acme",
        ACME_FIP,
        &psk,
        "VPNGateway",
        &["acme"],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_refused_by_the_pre_delete_dry_run_stops_with_nothing_deleted_and_resumes() {
    let mut s = settings();
    s.api.latency_ms = 100;
    let l = start(ACME, s).await;
    let psk = psk_fingerprint(&l, "tenant-acme", "acme-psk");
    let child = l.spawn(&["cutover", "acme", "--yes"]);
    eventually(30, "the journal", || {
        journal(&l, "tenant-acme", "acme").is_some()
    })
    .await;
    // A webhook that can dry-run (called for dry runs) and denies.
    l.sb.api_faults
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
        phase(&l, "tenant-acme", "acme").as_deref(),
        Some("psk-detached")
    );
    untouched(&l);

    l.sb.api_faults.write().unwrap().webhooks.clear();
    l.sb.api_faults.write().unwrap().latency_ms = 0;
    let r = l
        .vpnmig(&["cutover", "acme", "-n", "tenant-acme", "--yes"])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    invariants(
        &l,
        "tenant-acme",
        "acme",
        ACME_FIP,
        &psk,
        "VPNGateway",
        &["acme"],
    );
}
