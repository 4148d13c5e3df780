//! Advice that works from the state it describes (issue 14 items 6, 7 and 9): each row
//! stops a window in some state, takes the command the stop advises from its message,
//! runs it, and asserts it succeeds. Each row runs on the emulator and on the real control
//! plane (tests/live/bed.rs).

mod live;

use live::ACME;
use live::bed::{After, Bed, CONFIGMAP, IPSECGATEWAY, Row, Scenario, VPNPEER, advised};
use vpnmig_sandbox::SettingsFile;

fn acme() -> Scenario {
    Scenario::new(ACME, live::pool("10.250.3.0/24"))
}

fn acme_default_pool() -> Scenario {
    Scenario::new(ACME, SettingsFile::default())
}

/// Two gateways in tenant-x, `a` on 10.250.1.0/24 and `b` on 10.250.2.0/24, and a pool
/// whose only /24 is b's: nothing is left for a re-created `a`.
fn two_in_a_full_pool() -> Scenario {
    let ns = "tenant-x";
    Scenario::built(
        live::namespace(ns)
            + &live::gateway(ns, "a", "198.51.100.61", 1, &["main"], "bronze")
            + &live::gateway(ns, "b", "198.51.100.62", 2, &["main"], "bronze"),
        live::pool("10.250.2.0/24"),
    )
}

crate::rows! {
    a_lost_journal_leads_to_the_local_bundle_from_every_command: Row {
        scenario: acme,
        only: None,
        after: After::acme("IPsecGateway"),
        steps: |b| Box::pin(a_lost_journal_leads_to_the_local_bundle_from_every_command(b)),
    },
    /// Issue 10 item 3: a bundle that cannot be written is found before the prompt (not
    /// after the confirmation), nothing is changed, and the advised `--out DIR` works.
    an_unwritable_bundle_directory_is_refused_before_anything: Row {
        scenario: acme,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(an_unwritable_bundle_directory_is_refused_before_anything(b)),
    },
    /// Issue 10 item 2: a wrong namespace or kubeconfig is named, not reported as
    /// something else (a Lease that cannot be created, "no gateways found", "not in a
    /// cluster").
    a_wrong_namespace_or_kubeconfig_is_named: Row {
        scenario: acme,
        only: None,
        after: After::acme("IPsecGateway"),
        steps: |b| Box::pin(a_wrong_namespace_or_kubeconfig_is_named(b)),
    },
    /// Issue 10 item 4: after a rollback that lost its addresses (exit 5), `status` points
    /// to the commands that work from there, not to a rollback that stops the same way.
    status_after_a_rollback_that_lost_addresses_advises_what_works: Row {
        scenario: acme_default_pool,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(status_after_a_rollback_that_lost_addresses_advises_what_works(b)),
    },
    /// Issue 10 item 4: `plan NAME` after the cutover says the gateway is migrated, and
    /// the command it names works.
    plan_of_a_migrated_gateway_says_so: Row {
        scenario: acme,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(plan_of_a_migrated_gateway_says_so(b)),
    },
    /// Issue 14 item 9: a ConfigMap that only has the journal's name is not taken for a
    /// journal: no advice to roll back "from the bundle" when nothing happened.
    a_foreign_configmap_named_like_a_journal_is_said_to_be_foreign: Row {
        scenario: acme,
        only: None,
        // The invariants read the journal's ConfigMap as a journal; this one is not.
        after: None,
        steps: |b| Box::pin(a_foreign_configmap_named_like_a_journal_is_said_to_be_foreign(b)),
    },
    /// Newcomer walkthrough: a rollback whose re-created IPsecGateway the operator cannot
    /// give any serviceCIDR (`Ready=False ServiceCIDRExhausted`) waited out its whole
    /// timeout in silence. It stops at once with the addresses it lost and the command
    /// that works (`cutover --forward`), which does.
    a_rollback_the_operator_has_no_addresses_for_stops_at_once: Row {
        scenario: two_in_a_full_pool,
        only: None,
        // Two gateways share tenant-x; the invariants read one gateway per namespace.
        after: None,
        steps: |b| Box::pin(a_rollback_the_operator_has_no_addresses_for_stops_at_once(b)),
    },
    /// Newcomer walkthrough: `--plan` naming a directory with no bundle said only "No
    /// such file or directory"; it says which command writes one.
    a_plan_directory_without_a_bundle_says_how_to_write_one: Row {
        scenario: acme_default_pool,
        only: None,
        after: After::acme("IPsecGateway"),
        steps: |b| Box::pin(a_plan_directory_without_a_bundle_says_how_to_write_one(b)),
    },
}

async fn a_lost_journal_leads_to_the_local_bundle_from_every_command(b: &Bed) {
    b.step(&["cutover", "acme", "--yes"], 0, &[]).await;
    b.delete(CONFIGMAP, "tenant-acme", "vpnmig-acme").await;

    // status reports the loss itself, with the bundle.
    let r = b.step(&["status"], 0, &[]).await;
    assert!(
        live::flat(&r.stdout).contains("journal missing: tenant-acme/acme was migrated by vpnmig but ConfigMap tenant-acme/vpnmig-acme is gone; this machine has the bundle of its cutover"),
        "{}",
        r.stdout
    );
    // cutover says migrated (not "ipsecgateway not found") and names the bundle.
    let r = b
        .step(
            &["cutover", "acme", "--yes"],
            7,
            &["acme -n tenant-acme is migrated: VPNGateway acme exists"],
        )
        .await;
    assert!(
        !r.says("ipsecgateway/acme -n tenant-acme not found"),
        "{}",
        r.stderr
    );
    let from_cutover = advised(&r.stderr, "rollback acme -n tenant-acme --plan ");
    // rollback without --plan names the same bundle, and it works.
    let r = b.step(&["rollback", "acme", "--yes"], 7, &[]).await;
    let from_rollback = advised(&r.stderr, "rollback acme -n tenant-acme --plan ");
    assert_eq!(from_cutover, from_rollback);
    let r = b.run_advised(&from_rollback, &["--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    // (and the invariants: one IPsecGateway on its floating IP, the PSK unchanged.)
    assert!(b.objects(VPNPEER, "tenant-acme").await.is_empty());
}

async fn an_unwritable_bundle_directory_is_refused_before_anything(b: &Bed) {
    let r = b
        .step(
            &["cutover", "acme", "--yes", "--out", "/proc/vpnmig-bundle"],
            7,
            &[
                "cannot write the bundle to /proc/vpnmig-bundle",
                "nothing was changed",
            ],
        )
        .await;
    assert!(
        !r.stderr
            .contains("Cutover of IPsecGateway tenant-acme/acme"),
        "refused before the summary: {}",
        r.stderr
    );
    assert!(b.journal("tenant-acme", "acme").await.is_none());
    assert!(b.lease("tenant-acme", "acme").await.is_none());
    let out = b.cwd().join("bundles/acme");
    b.step(
        &["cutover", "acme", "--yes", "--out", out.to_str().unwrap()],
        0,
        &[],
    )
    .await;
    assert!(out.join("plan.json").is_file());
}

async fn a_wrong_namespace_or_kubeconfig_is_named(b: &Bed) {
    for cmd in ["cutover", "rollback"] {
        let r = b
            .step(
                &[cmd, "acme", "-n", "tenant-nope", "--yes"],
                1,
                &[
                    "no IPsecGateway, VPNGateway or journal named acme: gateway acme in namespace tenant-nope not found",
                    "hint: namespace tenant-nope does not exist: pass the gateway's namespace with -n",
                ],
            )
            .await;
        assert!(!r.stderr.contains("lease"), "{cmd}: {}", r.stderr);
    }
    // verify too (newcomer walkthrough: its hint led to `kubectl get … -n` that said
    // only "No resources found").
    b.step(
        &["verify", "acme", "-n", "tenant-nope"],
        1,
        &["hint: namespace tenant-nope does not exist"],
    )
    .await;
    // A namespace that exists: the hint lists what is there.
    b.step(
        &["verify", "nosuch", "-n", "tenant-acme"],
        1,
        &["`kubectl get ipsecgateways -n tenant-acme`"],
    )
    .await;
    b.step(
        &["status", "-n", "tenant-nope"],
        0,
        &["hint: namespace tenant-nope does not exist in context vpnmig-sandbox"],
    )
    .await;
    let missing = b.cwd().join("no-such-kubeconfig");
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

async fn status_after_a_rollback_that_lost_addresses_advises_what_works(b: &Bed) {
    b.step(&["plan", "acme", "--out", "plans/acme"], 0, &[])
        .await;
    b.step(&["cutover", "acme", "--yes"], 0, &[]).await;
    b.step(&["rollback", "acme", "--yes"], 5, &[]).await;
    // Attack finding (issue 9 item 1): verify said HEALTHY here, although the serviceCIDR
    // and virtual IP the client's firewall names are gone. The IPsecGateway cannot pin
    // them, so they are compared with the journal's (or the plan's) in its status.
    for args in [
        &["verify", "acme"][..],
        &["verify", "acme", "--plan", "plans/acme"],
    ] {
        let v = b.step(args, 5, &[]).await;
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
    let r = b.step(&["status"], 0, &[]).await;
    assert!(
        !r.stdout
            .contains("`vpnmig rollback acme -n tenant-acme` resumes"),
        "{}",
        r.stdout
    );
    let forward = advised(&r.stdout, "cutover acme -n tenant-acme --forward");
    let r = b.run_advised(&forward, &["--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        b.phase("tenant-acme", "acme").await.as_deref(),
        Some("done")
    );
}

async fn plan_of_a_migrated_gateway_says_so(b: &Bed) {
    b.step(&["cutover", "acme", "--yes"], 0, &[]).await;
    let r = b
        .step(
            &["plan", "acme"],
            1,
            &["acme -n tenant-acme is already migrated: VPNGateway acme exists and IPsecGateway acme does not (journal phase done)"],
        )
        .await;
    let verify = advised(&r.stderr, "verify acme");
    assert_eq!(b.run_advised(&verify, &[]).await.code, 0);
}

async fn a_foreign_configmap_named_like_a_journal_is_said_to_be_foreign(b: &Bed) {
    b.put(
        CONFIGMAP,
        "tenant-acme",
        serde_json::json!({"metadata": {"name": "vpnmig-acme", "namespace": "tenant-acme"},
            "data": {"motd": "hello"}}),
    )
    .await;
    let r = b
        .step(
            &["cutover", "acme", "--yes"],
            1,
            &[
                "configmap/vpnmig-acme -n tenant-acme has the name of vpnmig's journal but is not one",
                "nothing was changed",
            ],
        )
        .await;
    assert!(
        !r.stderr.contains("roll back from the bundle"),
        "{}",
        r.stderr
    );
    assert_eq!(
        b.objects(IPSECGATEWAY, "tenant-acme").await.len(),
        1,
        "the gateway is untouched"
    );
}

async fn a_rollback_the_operator_has_no_addresses_for_stops_at_once(b: &Bed) {
    let ns = "tenant-x";
    b.step(&["cutover", "a", "-n", ns, "--yes"], 0, &[]).await;
    let (r, took) = live::finish_timed(b.spawn(&["rollback", "a", "-n", ns, "--yes"])).await;
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
    let r = b.run_advised(&forward, &["--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
}

async fn a_plan_directory_without_a_bundle_says_how_to_write_one(b: &Bed) {
    let r = b
        .step(
            &["cutover", "acme", "--plan", "plans/nowhere", "--dry-run"],
            1,
            &[],
        )
        .await;
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
