//! Advice that works from the state it describes (issue 14 items 6, 7 and 9): each test
//! stops a window in some state, takes the command the stop advises from its message,
//! runs it, and asserts it succeeds.

mod live;

use live::{ACME, Live, invariants, objects, psk_fingerprint, start};
use vpnmig_sandbox::SettingsFile;

fn acme_settings() -> SettingsFile {
    live::pool("10.250.3.0/24")
}

/// The first backquoted `vpnmig …` command in `text` that starts with `prefix`, as
/// arguments (without `vpnmig`).
fn advised(text: &str, prefix: &str) -> Vec<String> {
    live::advised(text)
        .into_iter()
        .find(|args| args.join(" ").starts_with(prefix))
        .unwrap_or_else(|| panic!("no `vpnmig {prefix}…` advised in:\n{text}"))
}

async fn run_advised(l: &Live, args: &[String], more: &[&str]) -> live::Run {
    let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
    // Advice to a run with --yes has it already.
    all.extend(more.iter().filter(|m| !args.iter().any(|a| a == *m)));
    l.vpnmig(&all).await
}

fn delete_journal(l: &Live) {
    let cms = l.sb.store.resource("", "v1", "configmaps").unwrap();
    l.sb.store
        .delete(&cms, "tenant-acme", "vpnmig-acme", &Default::default())
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_journal_leads_to_the_local_bundle_from_every_command() {
    let l = start(ACME, acme_settings()).await;
    let psk = psk_fingerprint(&l, "tenant-acme", "acme-psk");
    let r = l.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    delete_journal(&l);

    // status reports the loss itself, with the bundle.
    let r = l.vpnmig(&["status"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        live::flat(&r.stdout).contains("journal missing: tenant-acme/acme was migrated by vpnmig but ConfigMap tenant-acme/vpnmig-acme is gone; this machine has the bundle of its cutover"),
        "{}",
        r.stdout
    );
    // cutover says migrated (not "ipsecgateway not found") and names the bundle.
    let r = l.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(
        r.says("acme -n tenant-acme is migrated: VPNGateway acme exists"),
        "{}",
        r.stderr
    );
    assert!(
        !r.says("ipsecgateway/acme -n tenant-acme not found"),
        "{}",
        r.stderr
    );
    let from_cutover = advised(&r.stderr, "rollback acme -n tenant-acme --plan ");
    // rollback without --plan names the same bundle, and it works.
    let r = l.vpnmig(&["rollback", "acme", "--yes"]).await;
    assert_eq!(r.code, 7, "{}", r.stderr);
    let from_rollback = advised(&r.stderr, "rollback acme -n tenant-acme --plan ");
    assert_eq!(from_cutover, from_rollback);
    let r = run_advised(&l, &from_rollback, &["--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    invariants(
        &l,
        "tenant-acme",
        "acme",
        "198.51.100.23",
        &psk,
        "IPsecGateway",
        &[],
    );
    assert!(objects(&l, "vpn.bnerd.net", "vpnpeers", "tenant-acme").is_empty());
}

/// Issue 10 item 3: a bundle that cannot be written is found before the prompt (not after
/// the confirmation), nothing is changed, and the advised `--out DIR` works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unwritable_bundle_directory_is_refused_before_anything() {
    let l = start(ACME, acme_settings()).await;
    let r = l
        .vpnmig(&["cutover", "acme", "--yes", "--out", "/proc/vpnmig-bundle"])
        .await;
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(
        r.says("cannot write the bundle to /proc/vpnmig-bundle"),
        "{}",
        r.stderr
    );
    assert!(r.says("nothing was changed"), "{}", r.stderr);
    assert!(
        !r.stderr
            .contains("Cutover of IPsecGateway tenant-acme/acme"),
        "refused before the summary: {}",
        r.stderr
    );
    assert!(live::journal(&l, "tenant-acme", "acme").is_none());
    assert!(live::core(&l, "leases", "tenant-acme", "vpnmig-acme").is_none());
    let out = l.cwd().join("bundles/acme");
    let r = l
        .vpnmig(&["cutover", "acme", "--yes", "--out", out.to_str().unwrap()])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(out.join("plan.json").is_file());
}

/// Issue 10 item 2: a wrong namespace or kubeconfig is named, not reported as something
/// else (a Lease that cannot be created, "no gateways found", "not in a cluster").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_namespace_or_kubeconfig_is_named() {
    let l = start(ACME, acme_settings()).await;
    for cmd in ["cutover", "rollback"] {
        let r = l.vpnmig(&[cmd, "acme", "-n", "tenant-nope", "--yes"]).await;
        assert_eq!(r.code, 1, "{cmd}: {}", r.stderr);
        assert!(
            r.says("no IPsecGateway, VPNGateway or journal named acme: gateway acme in namespace tenant-nope not found"),
            "{cmd}: {}",
            r.stderr
        );
        assert!(
            r.says(
                "hint: namespace tenant-nope does not exist: pass the gateway's namespace with -n"
            ),
            "{cmd}: {}",
            r.stderr
        );
        assert!(!r.stderr.contains("lease"), "{cmd}: {}", r.stderr);
    }
    // verify too (newcomer walkthrough: its hint led to `kubectl get … -n` that said
    // only "No resources found").
    let r = l.vpnmig(&["verify", "acme", "-n", "tenant-nope"]).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.says("hint: namespace tenant-nope does not exist"),
        "{}",
        r.stderr
    );
    // A namespace that exists: the hint lists what is there.
    let r = l.vpnmig(&["verify", "nosuch", "-n", "tenant-acme"]).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.says("`kubectl get ipsecgateways -n tenant-acme`"),
        "{}",
        r.stderr
    );
    let r = l.vpnmig(&["status", "-n", "tenant-nope"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.says("hint: namespace tenant-nope does not exist in context vpnmig-sandbox"),
        "{}",
        r.stderr
    );
    let missing = l.cwd().join("no-such-kubeconfig");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vpnmig"))
        .env("KUBECONFIG", &missing)
        .env("NO_COLOR", "1")
        .args(["status"])
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        live::flat(&stderr).contains(&format!(
            "KUBECONFIG names {}, which does not exist",
            missing.display()
        )),
        "{stderr}"
    );
}

/// Issue 10 item 4: after a rollback that lost its addresses (exit 5), `status` points to
/// the commands that work from there, not to a rollback that stops the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_after_a_rollback_that_lost_addresses_advises_what_works() {
    let l = start(ACME, SettingsFile::default()).await;
    assert_eq!(
        l.vpnmig(&["plan", "acme", "--out", "plans/acme"])
            .await
            .code,
        0
    );
    assert_eq!(l.vpnmig(&["cutover", "acme", "--yes"]).await.code, 0);
    assert_eq!(l.vpnmig(&["rollback", "acme", "--yes"]).await.code, 5);
    // Attack finding (issue 9 item 1): verify said HEALTHY here, although the serviceCIDR
    // and virtual IP the client's firewall names are gone. The IPsecGateway cannot pin
    // them, so they are compared with the journal's (or the plan's) in its status.
    for args in [
        &["verify", "acme"][..],
        &["verify", "acme", "--plan", "plans/acme"],
    ] {
        let v = l.vpnmig(args).await;
        assert_eq!(v.code, 5, "{args:?}\n{}\n{}", v.stdout, v.stderr);
        assert!(
            !v.stdout.contains("HEALTHY\n") || v.stdout.contains("NOT HEALTHY"),
            "{}",
            v.stdout
        );
        assert!(
            v.stdout.contains("10.250.3.0/24"),
            "{args:?}: the pinned serviceCIDR is named\n{}",
            v.stdout
        );
        assert!(
            v.stdout.contains("10.250.3.10"),
            "{args:?}: the pinned virtual IP is named\n{}",
            v.stdout
        );
    }
    let r = l.vpnmig(&["status"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        !r.stdout
            .contains("`vpnmig rollback acme -n tenant-acme` resumes"),
        "{}",
        r.stdout
    );
    let forward = advised(&r.stdout, "cutover acme -n tenant-acme --forward");
    let r = run_advised(&l, &forward, &["--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        live::phase(&l, "tenant-acme", "acme").as_deref(),
        Some("done")
    );
}

/// Issue 10 item 4: `plan NAME` after the cutover says the gateway is migrated, and the
/// command it names works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_of_a_migrated_gateway_says_so() {
    let l = start(ACME, acme_settings()).await;
    assert_eq!(l.vpnmig(&["cutover", "acme", "--yes"]).await.code, 0);
    let r = l.vpnmig(&["plan", "acme"]).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.says("acme -n tenant-acme is already migrated: VPNGateway acme exists and IPsecGateway acme does not (journal phase done)"),
        "{}",
        r.stderr
    );
    let verify = advised(&r.stderr, "verify acme");
    assert_eq!(run_advised(&l, &verify, &[]).await.code, 0);
}

/// Issue 14 item 9: a ConfigMap that only has the journal's name is not taken for a
/// journal: no advice to roll back "from the bundle" when nothing happened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_configmap_named_like_a_journal_is_said_to_be_foreign() {
    let l = start(ACME, acme_settings()).await;
    let cms = l.sb.store.resource("", "v1", "configmaps").unwrap();
    l.sb.store
        .create(
            &cms,
            "tenant-acme",
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "vpnmig-acme", "namespace": "tenant-acme"},
                "data": {"motd": "hello"}}),
            &Default::default(),
        )
        .unwrap();
    let r = l.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.says(
            "configmap/vpnmig-acme -n tenant-acme has the name of vpnmig's journal but is not one"
        ),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("roll back from the bundle"),
        "{}",
        r.stderr
    );
    assert!(r.says("nothing was changed"), "{}", r.stderr);
    assert_eq!(
        objects(&l, "ipsec.bnerd.net", "ipsecgateways", "tenant-acme").len(),
        1,
        "the gateway is untouched"
    );
}

/// Newcomer walkthrough: a rollback whose re-created IPsecGateway the operator cannot give
/// any serviceCIDR (`Ready=False ServiceCIDRExhausted`) waited out its whole timeout in
/// silence. It stops at once with the addresses it lost and the command that works
/// (`cutover --forward`), which does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_the_operator_has_no_addresses_for_stops_at_once() {
    let ns = "tenant-x";
    let scenario = live::namespace(ns)
        + &live::gateway(ns, "a", "198.51.100.61", 1, &["main"], "bronze")
        + &live::gateway(ns, "b", "198.51.100.62", 2, &["main"], "bronze");
    // The pool's only /24 is b's: nothing is left for a re-created `a`.
    let l = start(&scenario, live::pool("10.250.2.0/24")).await;
    let r = l.vpnmig(&["cutover", "a", "-n", ns, "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (r, took) = live::finish_timed(l.spawn(&["rollback", "a", "-n", ns, "--yes"])).await;
    assert_eq!(r.code, 5, "{}", r.stderr);
    assert!(
        took < std::time::Duration::from_secs(60),
        "{took:?}: {}",
        r.stderr
    );
    assert!(
        r.says("the operator has no serviceCIDR to give (ServiceCIDRExhausted)"),
        "{}",
        r.stderr
    );
    assert!(
        r.says("ipsecgateway/a -n tenant-x is back with its floating IP, but the operator allocated other addresses: serviceCIDR 10.250.1.0/24 → <none>"),
        "{}",
        r.stderr
    );
    let forward = advised(&r.stderr, "cutover a -n tenant-x --forward");
    let r = run_advised(&l, &forward, &["--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// Newcomer walkthrough: `--plan` naming a directory with no bundle said only "No such
/// file or directory"; it says which command writes one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_directory_without_a_bundle_says_how_to_write_one() {
    let l = start(ACME, SettingsFile::default()).await;
    let r = l
        .vpnmig(&["cutover", "acme", "--plan", "plans/nowhere", "--dry-run"])
        .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.error()
            .unwrap()
            .starts_with("plans/nowhere/plan.json: cannot read the saved plan"),
        "{}",
        r.stderr
    );
    assert!(
        r.hint()
            .unwrap()
            .contains("`vpnmig plan NAME -n NAMESPACE --out DIR`"),
        "{}",
        r.stderr
    );
}
