//! `vpnmig plan NAME` end to end: each live check passing and failing, with the values the
//! cluster really holds, on the emulator and the real control plane (tests/live/bed.rs
//! rows, one run per backend).

mod live;

use live::bed::{Bed, IPSECGATEWAY, Row, SECRET, Scenario, VPNGATEWAY, VPNPEER};
use live::{ACME, INITECH, check};
use serde_json::{Value, json};
use vpnmig_sandbox::SettingsFile;
use vpnmig_sandbox::api::auth::{Rule, User};

fn failed(plan: &Value) -> Vec<String> {
    plan["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["outcome"] == "fail")
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

/// `vpnmig ARGS` ends with `code`; its stdout, a plan document.
async fn plan(b: &Bed, args: &[&str], code: i32) -> Value {
    let r = b.vpnmig(args).await;
    assert_eq!(r.code, code, "{}: {}\n{}", b.backend, r.stderr, r.stdout);
    serde_json::from_str(&r.stdout).unwrap()
}

fn acme() -> Scenario {
    Scenario::new(ACME, SettingsFile::default())
}

fn initech() -> Scenario {
    Scenario::new(INITECH, SettingsFile::default())
}

/// acme with its operator reconciling it (un-paused), so a row can pause it later.
fn acme_reconciled() -> Scenario {
    let mut settings = SettingsFile::default();
    settings
        .operator
        .gateway_mut("ipsecgateway/tenant-acme/acme")
        .paused = false;
    Scenario::new(ACME, settings)
}

/// acme with one user of the rules `rules`.
fn acme_with_user(user: &str, rules: Vec<Rule>) -> Scenario {
    Scenario::new(
        ACME,
        SettingsFile {
            users: vec![User::with_rules(user, rules)],
            ..Default::default()
        },
    )
}

/// acme with a user who may get and list everything and change nothing.
fn acme_and_a_reader() -> Scenario {
    acme_with_user(
        "reader",
        vec![
            Rule::new(&["get", "list"], &["*"]),
            Rule::new(&["create"], &["selfsubjectaccessreviews"]),
        ],
    )
}

/// acme with a user who may read the gateways and CRDs but no Secret.
fn acme_and_a_user_without_secrets() -> Scenario {
    acme_with_user(
        "nosecrets",
        vec![Rule::new(
            &["get", "list"],
            &[
                "ipsecgateways",
                "vpngateways",
                "vpnpeers",
                "customresourcedefinitions",
            ],
        )],
    )
}

/// acme on IKE proposals the operator's real list allows (so says `--allowlist`) and the
/// cluster's CRD does not.
fn acme_on_a_proposal_the_crd_refuses() -> Scenario {
    Scenario::built(
        ACME.replace(
            "proposals: [aes256-sha256-modp2048]",
            "proposals: [aes128-sha1-modp2048]",
        ),
        SettingsFile::default(),
    )
}

/// acme without a pinned floating IP: the operator allocates one from its pool.
fn acme_unpinned() -> Scenario {
    Scenario::built(
        ACME.replace(
            "    floatingIP: 198.51.100.23\n    network: public",
            "    network: public",
        )
        .replace("  floatingIP: 198.51.100.23\n  exposures:", "  exposures:"),
        SettingsFile::default(),
    )
}

crate::rows! {
    a_healthy_gateway_plans_ready_with_every_live_check: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(a_healthy_gateway_plans_ready_with_every_live_check(b)),
    },
    an_owned_psk_secret_is_a_warning_the_cutover_resolves: Row {
        scenario: initech,
        only: None,
        after: None,
        steps: |b| Box::pin(an_owned_psk_secret_is_a_warning_the_cutover_resolves(b)),
    },
    a_missing_secret_or_key_blocks: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(a_missing_secret_or_key_blocks(b)),
    },
    name_collisions_fip_holders_and_already_migrated: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(name_collisions_fip_holders_and_already_migrated(b)),
    },
    stale_status_blocks_live: Row {
        scenario: acme_reconciled,
        only: None,
        after: None,
        steps: |b| Box::pin(stale_status_blocks_live(b)),
    },
    missing_permissions_are_listed: Row {
        scenario: acme_and_a_reader,
        only: None,
        after: None,
        steps: |b| Box::pin(missing_permissions_are_listed(b)),
    },
    an_unknown_gateway_is_a_clear_error: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(async move {
            b.step(&["plan", "nosuch"], 1, &["error: ipsecgateway/nosuch -n tenant-acme not found\nhint: list what there is with `kubectl get ipsecgateways -n tenant-acme`"]).await;
        }),
    },
    the_clusters_crd_schema_and_server_dry_run_refuse_what_the_allowlist_let_through: Row {
        scenario: acme_on_a_proposal_the_crd_refuses,
        only: None,
        after: None,
        steps: |b| Box::pin(the_clusters_crd_schema_and_server_dry_run_refuse_what_the_allowlist_let_through(b)),
    },
    an_unpinned_fip_blocks_and_a_503_is_retried: Row {
        scenario: acme_unpinned,
        only: None,
        after: None,
        steps: |b| Box::pin(an_unpinned_fip_blocks_and_a_503_is_retried(b)),
    },
    an_unreadable_secret_is_a_finding_not_the_end_of_the_plan: Row {
        scenario: acme_and_a_user_without_secrets,
        only: None,
        after: None,
        steps: |b| Box::pin(an_unreadable_secret_is_a_finding_not_the_end_of_the_plan(b)),
    },
    /// Issue 10 item 6: the field rows (and so the pinned-values table) come in one order
    /// from `plan NAME` and from `plan -f` of an export, whatever order its keys are in.
    offline_and_live_plans_list_the_fields_in_one_order: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(offline_and_live_plans_list_the_fields_in_one_order(b)),
    },
}

async fn a_healthy_gateway_plans_ready_with_every_live_check(b: &Bed) {
    let on = b.backend;
    let r = b.vpnmig(&["plan", "acme", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{on}: {}\n{}", r.stderr, r.stdout);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        plan["source"]["origin"], "context vpnmig-sandbox, namespace tenant-acme",
        "{on}"
    );
    // HMAC of "rehearsal-only-not-a-real-key" keyed with the Secret's uid: the Secret was
    // read, its value never shown, and the fingerprint cannot be tested without the uid.
    let uid = b.get(SECRET, "tenant-acme", "acme-psk").await.unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        plan["source"]["pskFingerprint"],
        vpnmig::core::psk::fingerprint(
            "tenant-acme",
            "acme-psk",
            "psk",
            Some(&uid),
            b"rehearsal-only-not-a-real-key"
        ),
        "{on}"
    );
    assert!(
        plan["source"]["pskFingerprint"]
            .as_str()
            .unwrap()
            .starts_with("hmac-sha256:"),
        "{on}"
    );
    assert!(!r.stdout.contains("rehearsal-only"), "{on}");
    for id in [
        "psk-secret",
        "status-current",
        "source-ready",
        "targets-free",
        "fip-unique",
        "service-cidr-unique",
        "permissions",
    ] {
        assert_eq!(
            check(&plan, id)["outcome"],
            "pass",
            "{on}: {id}: {}",
            check(&plan, id)
        );
    }
    assert_eq!(check(&plan, "server-dry-run")["outcome"], "skipped", "{on}");
    assert_eq!(
        plan["targets"]["gateway"]["spec"]["serviceCIDR"], "10.250.3.0/24",
        "{on}"
    );
    assert_eq!(
        plan["targets"]["gateway"]["spec"]["exposures"][0]["virtualIP"], "10.250.3.10",
        "{on}"
    );

    let r = b.vpnmig(&["plan", "acme", "--server-dry-run"]).await;
    assert_eq!(r.code, 0, "{on}: {}", r.stdout);
    assert!(
        r.stderr
            .starts_with("context vpnmig-sandbox, server https://127.0.0.1:"),
        "{on}: {}",
        r.stderr
    );
    assert!(r.stdout.contains("✓ server-dry-run"), "{on}: {}", r.stdout);
    // A dry run changes nothing.
    assert!(
        b.get(VPNGATEWAY, "tenant-acme", "acme").await.is_none(),
        "{on}: a dry run created a VPNGateway"
    );
}

async fn an_owned_psk_secret_is_a_warning_the_cutover_resolves(b: &Bed) {
    let on = b.backend;
    let plan = plan(
        b,
        &["plan", "initech", "-n", "tenant-initech", "-o", "json"],
        0,
    )
    .await;
    assert_eq!(failed(&plan), ["psk-owner"], "{on}");
    assert_eq!(check(&plan, "psk-owner")["severity"], "warning", "{on}");
    let f = &check(&plan, "psk-owner")["findings"][0];
    assert_eq!(
        (f["path"].as_str(), f["seen"].as_str()),
        (
            Some("metadata.ownerReferences"),
            Some("IPsecGateway initech")
        ),
        "{on}"
    );
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .ends_with("`vpnmig cutover` detaches it first (recorded in the journal)"),
        "{on}: {f}"
    );
}

async fn a_missing_secret_or_key_blocks(b: &Bed) {
    let on = b.backend;
    b.edit(SECRET, "tenant-acme", "acme-psk", |s| {
        s["data"] = json!({"other": "eA=="});
        s.as_object_mut().unwrap().remove("stringData");
    })
    .await;
    let plan: Value =
        serde_json::from_str(&b.vpnmig(&["plan", "acme", "-o", "json"]).await.stdout).unwrap();
    assert_eq!(
        check(&plan, "psk-secret")["findings"][0]["path"],
        "data.psk",
        "{on}"
    );
    b.delete(SECRET, "tenant-acme", "acme-psk").await;
    let plan: Value =
        serde_json::from_str(&b.vpnmig(&["plan", "acme", "-o", "json"]).await.stdout).unwrap();
    assert_eq!(
        check(&plan, "psk-secret")["findings"][0]["seen"],
        "<not found>",
        "{on}"
    );
}

async fn name_collisions_fip_holders_and_already_migrated(b: &Bed) {
    let on = b.backend;
    // Another gateway holding the same floating IP.
    b.put(VPNGATEWAY, "tenant-acme", json!({"metadata": {"name": "squatter"}, "spec": {"protocol": "ipsec", "endpoint": {"floatingIP": "198.51.100.23"}, "serviceCIDR": "10.250.99.0/24"}})).await;
    // A leftover VPNGateway with the target's name but another spec.
    b.put(VPNGATEWAY, "tenant-acme", json!({"metadata": {"name": "acme"}, "spec": {"protocol": "ipsec", "endpoint": {"floatingIP": "198.51.100.99"}}})).await;
    let plan: Value =
        serde_json::from_str(&b.vpnmig(&["plan", "acme", "-o", "json"]).await.stdout).unwrap();
    assert_eq!(failed(&plan), ["targets-free", "fip-unique"], "{on}");
    assert_eq!(
        check(&plan, "fip-unique")["findings"][0]["object"],
        "VPNGateway tenant-acme/squatter",
        "{on}"
    );

    // The targets exactly as planned: already migrated.
    b.delete(VPNGATEWAY, "tenant-acme", "squatter").await;
    let targets = &plan["targets"];
    b.put(
        VPNGATEWAY,
        "tenant-acme",
        json!({"metadata": {"name": "acme"}, "spec": targets["gateway"]["spec"]}),
    )
    .await;
    b.put(VPNPEER, "tenant-acme", targets["peers"][0].clone())
        .await;
    let r = b.vpnmig(&["plan", "acme"]).await;
    assert!(
        r.stdout.contains(
            "ALREADY MIGRATED: the VPNGateway and VPNPeers already exist exactly as planned."
        ),
        "{on}: {}\n{}",
        r.stdout,
        r.stderr
    );
}

async fn stale_status_blocks_live(b: &Bed) {
    let on = b.backend;
    b.operator
        .settings()
        .write()
        .unwrap()
        .gateway_mut("ipsecgateway/tenant-acme/acme")
        .paused = true;
    b.operator.kick();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    b.edit(IPSECGATEWAY, "tenant-acme", "acme", |g| {
        g["spec"]["endpoint"]["network"] = json!("internal");
    })
    .await;
    let plan = plan(b, &["plan", "acme", "-o", "json"], 4).await;
    let c = check(&plan, "status-current");
    assert_eq!(
        (c["severity"].as_str(), c["outcome"].as_str()),
        (Some("blocker"), Some("fail")),
        "{on}: {c}"
    );
}

async fn missing_permissions_are_listed(b: &Bed) {
    let on = b.backend;
    let plan = plan(
        b,
        &[
            "plan",
            "acme",
            "--context",
            "vpnmig-sandbox-reader",
            "-o",
            "json",
        ],
        4,
    )
    .await;
    assert_eq!(failed(&plan), ["permissions"], "{on}");
    let missing: Vec<&str> = check(&plan, "permissions")["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["wanted"].as_str().unwrap())
        .collect();
    assert!(
        missing.contains(&"delete ipsecgateways in namespace tenant-acme"),
        "{on}: {missing:?}"
    );
    assert!(
        missing.contains(&"create pods/exec in namespace tenant-acme"),
        "{on}: {missing:?}"
    );
    assert!(
        !missing.iter().any(|m| m.starts_with("get ")),
        "{on}: {missing:?}"
    );
}

async fn the_clusters_crd_schema_and_server_dry_run_refuse_what_the_allowlist_let_through(b: &Bed) {
    let on = b.backend;
    let allow = b.cwd().join("allow.yaml");
    std::fs::write(
        &allow,
        "ike: [aes128-sha1-modp2048]\nesp: [aes256gcm16-modp2048]\n",
    )
    .unwrap();
    let plan = plan(
        b,
        &[
            "plan",
            "acme",
            "--allowlist",
            allow.to_str().unwrap(),
            "--server-dry-run",
            "-o",
            "json",
        ],
        4,
    )
    .await;
    assert_eq!(failed(&plan), ["server-dry-run", "schema"], "{on}");
    let f = &check(&plan, "schema")["findings"][0];
    assert_eq!(
        (f["object"].as_str(), f["path"].as_str()),
        (Some("VPNGateway/acme"), Some("spec.ipsec.ike.proposals[0]")),
        "{on}"
    );
    assert!(
        f["seen"]
            .as_str()
            .unwrap()
            .starts_with("Unsupported value: \"aes128-sha1-modp2048\""),
        "{on}: {f}"
    );
    assert!(
        check(&plan, "server-dry-run")["findings"][0]["seen"]
            .as_str()
            .unwrap()
            .contains("spec.ipsec.ike.proposals[0]"),
        "{on}: {}",
        check(&plan, "server-dry-run")
    );
}

async fn an_unpinned_fip_blocks_and_a_503_is_retried(b: &Bed) {
    let on = b.backend;
    b.api_faults()
        .write()
        .unwrap()
        .errors
        .push(vpnmig_sandbox::api::faults::ErrorRule {
            verbs: vec!["get".into()],
            resources: vec!["ipsecgateways".into()],
            code: 503,
            times: Some(1),
            retry_after_seconds: Some(1),
        });
    let plan = plan(b, &["plan", "acme", "-o", "json"], 4).await;
    assert_eq!(
        b.api_faults().read().unwrap().errors[0].times,
        Some(0),
        "{on}: the 503 was answered and retried"
    );
    assert_eq!(failed(&plan), ["fip-pinned"], "{on}");
    let f = &check(&plan, "fip-pinned")["findings"][0];
    // The operator allocated one from its pool; the fix pins exactly that address.
    let allocated = f["wanted"].as_str().unwrap();
    assert!(allocated.starts_with("198.51.100.2"), "{on}: {f}");
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .contains(&format!("{{\"floatingIP\":\"{allocated}\"}}")),
        "{on}: {f}"
    );
}

async fn an_unreadable_secret_is_a_finding_not_the_end_of_the_plan(b: &Bed) {
    let on = b.backend;
    let plan = plan(
        b,
        &[
            "plan",
            "acme",
            "--context",
            "vpnmig-sandbox-nosecrets",
            "-o",
            "json",
        ],
        4,
    )
    .await;
    let f = &check(&plan, "psk-secret")["findings"][0];
    assert_eq!(f["seen"], "<cannot read>", "{on}: {f}");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("forbidden: cannot get secret/acme-psk -n tenant-acme"),
        "{on}: {f}"
    );
    assert_eq!(plan["source"]["pskFingerprint"], Value::Null, "{on}");
}

/// `v` with every object's keys in reverse order: an export whose author ordered the
/// keys differently from the API server.
fn reversed(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .rev()
                .map(|(k, c)| (k.clone(), reversed(c)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(reversed).collect()),
        other => other.clone(),
    }
}

async fn offline_and_live_plans_list_the_fields_in_one_order(b: &Bed) {
    let on = b.backend;
    let live = b.vpnmig(&["plan", "acme", "-o", "json"]).await;
    assert_eq!(live.code, 0, "{on}: {}", live.stderr);
    let gw = b
        .get(IPSECGATEWAY, "tenant-acme", "acme")
        .await
        .expect("acme exists");
    let file = b.cwd().join("acme-export.json");
    std::fs::write(&file, serde_json::to_string_pretty(&reversed(&gw)).unwrap()).unwrap();
    let offline = b
        .vpnmig(&["plan", "-f", file.to_str().unwrap(), "-o", "json"])
        .await;
    assert!(
        offline.code == 0 || offline.code == 4,
        "{on}: {}",
        offline.stderr
    );
    let rows = |doc: &str| -> Vec<(String, String, String)> {
        let plan: Value = serde_json::from_str(doc).unwrap();
        plan["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["field"].as_str().unwrap_or_default().to_string(),
                    f["from"].as_str().unwrap_or_default().to_string(),
                    f["target"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    };
    let (live, offline) = (rows(&live.stdout), rows(&offline.stdout));
    assert!(live.iter().any(|r| r.0 == "floating IP"), "{on}: {live:?}");
    assert_eq!(live, offline, "{on}");
}
