//! `vpnmig plan NAME` end to end against vpnmig-sandbox: each live check passing and
//! failing, with the values the sandbox really holds.

mod live;

use live::{ACME, INITECH, check, start};
use serde_json::{Value, json};
use vpnmig_sandbox::SettingsFile;
use vpnmig_sandbox::api::auth::{Rule, User};
use vpnmig_sandbox::store::WriteOptions;

fn failed(plan: &Value) -> Vec<String> {
    plan["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["outcome"] == "fail")
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_gateway_plans_ready_with_every_live_check() {
    let l = start(ACME, SettingsFile::default()).await;
    let r = l.vpnmig(&["plan", "acme", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}\n{}", r.stderr, r.stdout);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        plan["source"]["origin"],
        "context vpnmig-sandbox, namespace tenant-acme"
    );
    // HMAC of "rehearsal-only-not-a-real-key" keyed with the Secret's uid: the Secret was
    // read, its value never shown, and the fingerprint cannot be tested without the uid.
    let uid = live::core(&l, "secrets", "tenant-acme", "acme-psk").unwrap()["metadata"]["uid"]
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
        )
    );
    assert!(
        plan["source"]["pskFingerprint"]
            .as_str()
            .unwrap()
            .starts_with("hmac-sha256:")
    );
    assert!(!r.stdout.contains("rehearsal-only"));
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
            "{id}: {}",
            check(&plan, id)
        );
    }
    assert_eq!(check(&plan, "server-dry-run")["outcome"], "skipped");
    assert_eq!(
        plan["targets"]["gateway"]["spec"]["serviceCIDR"],
        "10.250.3.0/24"
    );
    assert_eq!(
        plan["targets"]["gateway"]["spec"]["exposures"][0]["virtualIP"],
        "10.250.3.10"
    );

    let r = l.vpnmig(&["plan", "acme", "--server-dry-run"]).await;
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(
        r.stderr
            .starts_with("context vpnmig-sandbox, server https://127.0.0.1:"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.contains("✓ server-dry-run"), "{}", r.stdout);
    // A dry run changes nothing.
    let vpngw =
        l.sb.store
            .resource("vpn.bnerd.net", "v1alpha1", "vpngateways")
            .unwrap();
    assert!(l.sb.store.get(&vpngw, "tenant-acme", "acme").is_err());
    l.sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owned_psk_secret_is_a_warning_the_cutover_resolves() {
    let l = start(INITECH, SettingsFile::default()).await;
    let r = l
        .vpnmig(&["plan", "initech", "-n", "tenant-initech", "-o", "json"])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(failed(&plan), ["psk-owner"]);
    assert_eq!(check(&plan, "psk-owner")["severity"], "warning");
    let f = &check(&plan, "psk-owner")["findings"][0];
    assert_eq!(
        (f["path"].as_str(), f["seen"].as_str()),
        (
            Some("metadata.ownerReferences"),
            Some("IPsecGateway initech")
        )
    );
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .ends_with("`vpnmig cutover` detaches it first (recorded in the journal)"),
        "{f}"
    );
    l.sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_secret_or_key_blocks() {
    let l = start(ACME, SettingsFile::default()).await;
    let secrets = l.sb.store.resource("", "v1", "secrets").unwrap();
    l.sb.store.modify(&secrets, "tenant-acme", "acme-psk", false, &WriteOptions::default(), |s| Ok(json!({"apiVersion": "v1", "kind": "Secret", "metadata": s["metadata"], "data": {"other": "eA=="}}))).unwrap();
    let plan: Value =
        serde_json::from_str(&l.vpnmig(&["plan", "acme", "-o", "json"]).await.stdout).unwrap();
    assert_eq!(
        check(&plan, "psk-secret")["findings"][0]["path"],
        "data.psk"
    );
    l.sb.store
        .delete(&secrets, "tenant-acme", "acme-psk", &Default::default())
        .unwrap();
    let plan: Value =
        serde_json::from_str(&l.vpnmig(&["plan", "acme", "-o", "json"]).await.stdout).unwrap();
    assert_eq!(
        check(&plan, "psk-secret")["findings"][0]["seen"],
        "<not found>"
    );
    l.sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn name_collisions_fip_holders_and_already_migrated() {
    let l = start(ACME, SettingsFile::default()).await;
    let vpngw =
        l.sb.store
            .resource("vpn.bnerd.net", "v1alpha1", "vpngateways")
            .unwrap();
    let opts = WriteOptions::default();
    // Another gateway holding the same floating IP.
    l.sb.store.create(&vpngw, "tenant-acme", json!({"metadata": {"name": "squatter"}, "spec": {"protocol": "ipsec", "endpoint": {"floatingIP": "198.51.100.23"}, "serviceCIDR": "10.250.99.0/24"}}), &opts).unwrap();
    // A leftover VPNGateway with the target's name but another spec.
    l.sb.store.create(&vpngw, "tenant-acme", json!({"metadata": {"name": "acme"}, "spec": {"protocol": "ipsec", "endpoint": {"floatingIP": "198.51.100.99"}}}), &opts).unwrap();
    let plan: Value =
        serde_json::from_str(&l.vpnmig(&["plan", "acme", "-o", "json"]).await.stdout).unwrap();
    assert_eq!(failed(&plan), ["targets-free", "fip-unique"]);
    assert_eq!(
        check(&plan, "fip-unique")["findings"][0]["object"],
        "VPNGateway tenant-acme/squatter"
    );

    // The targets exactly as planned: already migrated.
    l.sb.store
        .delete(&vpngw, "tenant-acme", "squatter", &Default::default())
        .unwrap();
    let targets = &plan["targets"];
    let spec = targets["gateway"]["spec"].clone();
    l.sb.store
        .modify(&vpngw, "tenant-acme", "acme", false, &opts, |g| {
            let mut g = g.clone();
            g["spec"] = spec;
            Ok(g)
        })
        .unwrap();
    let peers =
        l.sb.store
            .resource("vpn.bnerd.net", "v1alpha1", "vpnpeers")
            .unwrap();
    l.sb.store
        .create(&peers, "tenant-acme", targets["peers"][0].clone(), &opts)
        .unwrap();
    let r = l.vpnmig(&["plan", "acme"]).await;
    assert!(
        r.stdout.contains(
            "ALREADY MIGRATED: the VPNGateway and VPNPeers already exist exactly as planned."
        ),
        "{}",
        r.stdout
    );
    l.sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_status_blocks_live() {
    let mut settings = SettingsFile::default();
    settings
        .operator
        .gateway_mut("ipsecgateway/tenant-acme/acme")
        .paused = false;
    let l = start(ACME, settings).await;
    l.sb.operator
        .settings()
        .write()
        .unwrap()
        .gateway_mut("ipsecgateway/tenant-acme/acme")
        .paused = true;
    l.sb.operator.kick();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let gws =
        l.sb.store
            .resource("ipsec.bnerd.net", "v1alpha1", "ipsecgateways")
            .unwrap();
    l.sb.store
        .modify(
            &gws,
            "tenant-acme",
            "acme",
            false,
            &WriteOptions::default(),
            |g| {
                let mut g = g.clone();
                g["spec"]["endpoint"]["network"] = json!("internal");
                Ok(g)
            },
        )
        .unwrap();
    let r = l.vpnmig(&["plan", "acme", "-o", "json"]).await;
    assert_eq!(r.code, 4);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    let c = check(&plan, "status-current");
    assert_eq!(
        (c["severity"].as_str(), c["outcome"].as_str()),
        (Some("blocker"), Some("fail"))
    );
    l.sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_permissions_are_listed() {
    let settings = SettingsFile {
        users: vec![User::with_rules(
            "reader",
            vec![
                Rule::new(&["get", "list"], &["*"]),
                Rule::new(&["create"], &["selfsubjectaccessreviews"]),
            ],
        )],
        ..Default::default()
    };
    let l = start(ACME, settings).await;
    let r = l
        .vpnmig(&[
            "plan",
            "acme",
            "--context",
            "vpnmig-sandbox-reader",
            "-o",
            "json",
        ])
        .await;
    assert_eq!(r.code, 4, "{}", r.stderr);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(failed(&plan), ["permissions"]);
    let missing: Vec<&str> = check(&plan, "permissions")["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["wanted"].as_str().unwrap())
        .collect();
    assert!(
        missing.contains(&"delete ipsecgateways in namespace tenant-acme"),
        "{missing:?}"
    );
    assert!(
        missing.contains(&"create pods/exec in namespace tenant-acme"),
        "{missing:?}"
    );
    assert!(
        !missing.iter().any(|m| m.starts_with("get ")),
        "{missing:?}"
    );
    l.sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_gateway_is_a_clear_error() {
    let l = start(ACME, SettingsFile::default()).await;
    let r = l.vpnmig(&["plan", "nosuch"]).await;
    assert_eq!(r.code, 1);
    assert!(r.says("error: ipsecgateway/nosuch -n tenant-acme not found\nhint: list what there is with `kubectl get ipsecgateways -n tenant-acme`"), "{}", r.stderr);
    l.sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clusters_crd_schema_and_server_dry_run_refuse_what_the_allowlist_let_through() {
    // The operator's real list allows aes128-sha1-modp2048 (so says --allowlist), but
    // the CRD installed in the cluster does not: the live plan must catch it.
    let scenario = ACME.replace(
        "proposals: [aes256-sha256-modp2048]",
        "proposals: [aes128-sha1-modp2048]",
    );
    let l = start(&scenario, SettingsFile::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let allow = dir.path().join("allow.yaml");
    std::fs::write(
        &allow,
        "ike: [aes128-sha1-modp2048]\nesp: [aes256gcm16-modp2048]\n",
    )
    .unwrap();
    let r = l
        .vpnmig(&[
            "plan",
            "acme",
            "--allowlist",
            allow.to_str().unwrap(),
            "--server-dry-run",
            "-o",
            "json",
        ])
        .await;
    assert_eq!(r.code, 4, "{}", r.stderr);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(failed(&plan), ["server-dry-run", "schema"]);
    let f = &check(&plan, "schema")["findings"][0];
    assert_eq!(
        (f["object"].as_str(), f["path"].as_str()),
        (Some("VPNGateway/acme"), Some("spec.ipsec.ike.proposals[0]"))
    );
    assert!(
        f["seen"]
            .as_str()
            .unwrap()
            .starts_with("Unsupported value: \"aes128-sha1-modp2048\""),
        "{f}"
    );
    assert!(
        check(&plan, "server-dry-run")["findings"][0]["seen"]
            .as_str()
            .unwrap()
            .contains("spec.ipsec.ike.proposals[0]")
    );
    l.sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unpinned_fip_blocks_and_a_503_is_retried() {
    let scenario = ACME
        .replace(
            "    floatingIP: 198.51.100.23\n    network: public",
            "    network: public",
        )
        .replace("  floatingIP: 198.51.100.23\n  exposures:", "  exposures:");
    let l = start(&scenario, SettingsFile::default()).await;
    l.sb.api_faults
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
    let r = l.vpnmig(&["plan", "acme", "-o", "json"]).await;
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert_eq!(
        l.sb.api_faults.read().unwrap().errors[0].times,
        Some(0),
        "the 503 was answered and retried"
    );
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(failed(&plan), ["fip-pinned"]);
    let f = &check(&plan, "fip-pinned")["findings"][0];
    // The operator allocated one from its pool; the fix pins exactly that address.
    let allocated = f["wanted"].as_str().unwrap();
    assert!(allocated.starts_with("198.51.100.2"), "{f}");
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .contains(&format!("{{\"floatingIP\":\"{allocated}\"}}")),
        "{f}"
    );
    l.sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_secret_is_a_finding_not_the_end_of_the_plan() {
    let settings = SettingsFile {
        users: vec![User::with_rules(
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
        )],
        ..Default::default()
    };
    let l = start(ACME, settings).await;
    let r = l
        .vpnmig(&[
            "plan",
            "acme",
            "--context",
            "vpnmig-sandbox-nosecrets",
            "-o",
            "json",
        ])
        .await;
    assert_eq!(r.code, 4, "{}", r.stderr);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    let f = &check(&plan, "psk-secret")["findings"][0];
    assert_eq!(f["seen"], "<cannot read>");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("forbidden: cannot get secret/acme-psk -n tenant-acme"),
        "{f}"
    );
    assert_eq!(plan["source"]["pskFingerprint"], Value::Null);
    l.sb.shutdown().await;
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

/// Issue 10 item 6: the field rows (and so the pinned-values table) come in one order
/// from `plan NAME` and from `plan -f` of an export, whatever order its keys are in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_and_live_plans_list_the_fields_in_one_order() {
    let l = start(ACME, SettingsFile::default()).await;
    let live = l.vpnmig(&["plan", "acme", "-o", "json"]).await;
    assert_eq!(live.code, 0, "{}", live.stderr);
    let gw = live::objects(&l, "ipsec.bnerd.net", "ipsecgateways", "tenant-acme")
        .into_iter()
        .find(|o| o["metadata"]["name"] == "acme")
        .unwrap();
    let file = l.cwd().join("acme-export.json");
    std::fs::write(&file, serde_json::to_string_pretty(&reversed(&gw)).unwrap()).unwrap();
    let offline = l
        .vpnmig(&["plan", "-f", file.to_str().unwrap(), "-o", "json"])
        .await;
    assert!(offline.code == 0 || offline.code == 4, "{}", offline.stderr);
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
    assert!(live.iter().any(|r| r.0 == "floating IP"), "{live:?}");
    assert_eq!(live, offline);
}
