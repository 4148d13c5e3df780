//! `vpnmig verify NAME` end to end: the verdicts must match the cluster's real state. Each
//! row runs on the emulator and on the real control plane (tests/live/bed.rs).

mod live;

use std::time::Duration;

use live::ACME;
use live::bed::{
    Bed, CONFIGMAP, IPSECGATEWAY, NAMESPACE, Row, SECRET, Scenario, VPNGATEWAY, VPNPEER, eventually,
};
use serde_json::{Value, json};
use vpnmig_sandbox::SettingsFile;
use vpnmig_sandbox::api::auth::{Rule, User};

fn acme() -> Scenario {
    Scenario::new(ACME, SettingsFile::default())
}

/// acme with a user `viewer` who may get and list everything, and nothing else.
fn acme_with_a_viewer() -> Scenario {
    Scenario::new(
        ACME,
        SettingsFile {
            users: vec![User::with_rules(
                "viewer",
                vec![Rule::new(&["get", "list"], &["*"])],
            )],
            ..Default::default()
        },
    )
}

/// acme whose peer address the spec spells `2001:DB8:5:0::10` (strongSwan prints
/// `2001:db8:5::10`).
fn acme_noncanonical_ipv6() -> Scenario {
    let scenario = ACME.replace("address: 203.0.113.10", "address: \"2001:DB8:5:0::10\"");
    assert_ne!(scenario, ACME, "the fixture names the peer address");
    Scenario::new(
        Box::leak(scenario.into_boxed_str()),
        SettingsFile::default(),
    )
}

crate::rows! {
    /// a21m B15, B18: a merged source that also defines the old gateway under another
    /// name, with the same floating IP.
    a_second_gateway_claiming_the_floating_ip_is_not_healthy: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(claimed_by(b, CLAIMANTS[0])),
    },
    /// A VPNGateway of another name (a second migration's target on the same address).
    a_vpngateway_of_another_name_claiming_the_floating_ip_is_not_healthy: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(claimed_by(b, CLAIMANTS[1])),
    },
    /// An IPsecGateway in another namespace.
    a_claimant_in_another_namespace_is_not_healthy: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(claimed_by(b, CLAIMANTS[2])),
    },
    /// The same address spelled as its host network (`198.51.100.23/32`): compared as
    /// an address (core::addr), never as text.
    a_claimant_spelling_the_floating_ip_differently_is_not_healthy: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(claimed_by(b, CLAIMANTS[3])),
    },
    a_baseline_then_a_healthy_cutover: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(a_baseline_then_a_healthy_cutover(b)),
    },
    a_peer_established_but_unauthorized_is_dark: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(a_peer_established_but_unauthorized_is_dark(b)),
    },
    a_peer_down_fails_and_wait_times_out: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(a_peer_down_fails_and_wait_times_out(b)),
    },
    narrower_grants_fail_and_a_refused_exec_is_not_a_verdict: Row {
        scenario: acme_with_a_viewer,
        only: None,
        after: None,
        steps: |b| Box::pin(narrower_grants_fail_and_a_refused_exec_is_not_a_verdict(b)),
    },
    /// Issue 9 item 4: addresses are compared parsed, never as text.
    a_noncanonical_ipv6_peer_address_matches_swanctls_canonical_form: Row {
        scenario: acme_noncanonical_ipv6,
        only: None,
        after: None,
        steps: |b| Box::pin(a_noncanonical_ipv6_peer_address_matches_swanctls_canonical_form(b)),
    },
    /// Issue 9 item 6.
    stale_conditions_without_observed_generation_are_not_current: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(stale_conditions_without_observed_generation_are_not_current(b)),
    },
    /// Issue 12 item 1.
    baseline_records_the_data_plane_outside_a_window: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(baseline_records_the_data_plane_outside_a_window(b)),
    },
    /// Issue 21 item 1, round 4, kind C (a22 F7).
    verify_compares_the_psk_with_the_journal: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(verify_compares_the_psk_with_the_journal(b)),
    },
}

/// Cut acme over by hand through the API: delete the old gateway, wait until it is gone,
/// create the planned targets (with `edit` applied to the peer).
async fn cut_over(b: &Bed, edit: impl FnOnce(&mut Value)) {
    let r = b.step(&["plan", "acme", "-o", "json"], 0, &[]).await;
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    b.delete_until_gone(IPSECGATEWAY, "tenant-acme", "acme", 30)
        .await;
    b.put(
        VPNGATEWAY,
        "tenant-acme",
        plan["targets"]["gateway"].clone(),
    )
    .await;
    let mut peer = plan["targets"]["peers"][0].clone();
    edit(&mut peer);
    b.put(VPNPEER, "tenant-acme", peer).await;
}

fn rows(stdout: &str) -> Vec<Value> {
    serde_json::from_str::<Value>(stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// A gateway other than acme that claims acme's floating IP: its kind (`IPsecGateway` is
/// the old spec, `VPNGateway` the migrated one's), namespace, name, and how its floating
/// IP spells acme's (`None`: as acme's).
#[derive(Clone, Copy)]
struct Claimant {
    kind: &'static str,
    ns: &'static str,
    name: &'static str,
    spelled: Option<&'static str>,
}

/// One row each (a21m B15, B18; issue 21 kind 3).
const CLAIMANTS: [Claimant; 4] = [
    Claimant {
        kind: "IPsecGateway",
        ns: "tenant-acme",
        name: "acme-legacy",
        spelled: None,
    },
    Claimant {
        kind: "VPNGateway",
        ns: "tenant-acme",
        name: "acme-twin",
        spelled: None,
    },
    Claimant {
        kind: "IPsecGateway",
        ns: "tenant-other",
        name: "acme",
        spelled: None,
    },
    Claimant {
        kind: "IPsecGateway",
        ns: "tenant-other",
        name: "acme-copy",
        spelled: Some("198.51.100.23/32"),
    },
];

/// HEALTHY after a cutover; then the claimant `c` is created (the old spec, or the
/// migrated gateway's, under its name and namespace, its floating IP pinned to acme's as
/// `c` spells it): NOT HEALTHY, one failed row naming it and its delete, the other rows as
/// they were; deleted, HEALTHY again.
async fn claimed_by(b: &Bed, c: Claimant) {
    let old = b.get(IPSECGATEWAY, "tenant-acme", "acme").await.unwrap();
    let fip = old["spec"]["endpoint"]["floatingIP"]
        .as_str()
        .unwrap()
        .to_string();
    cut_over(b, |_| {}).await;
    let healthy = || async { b.vpnmig(&["verify", "acme", "-o", "json"]).await.code == 0 };
    eventually(30, "verify HEALTHY after the cutover", healthy).await;
    let before = rows(&b.vpnmig(&["verify", "acme", "-o", "json"]).await.stdout);
    assert!(
        before.iter().all(|r| r["check"] != "floating IP"),
        "{before:?}"
    );
    if c.ns != "tenant-acme" {
        b.put(NAMESPACE, "", json!({"metadata": {"name": c.ns}}))
            .await;
    }
    let (kind, mut spec) = if c.kind == "IPsecGateway" {
        (IPSECGATEWAY, old["spec"].clone())
    } else {
        let gw = b.get(VPNGATEWAY, "tenant-acme", "acme").await.unwrap();
        (VPNGATEWAY, gw["spec"].clone())
    };
    if let Some(other) = c.spelled {
        spec["endpoint"]["floatingIP"] = json!(other);
    }
    assert_eq!(
        spec["endpoint"]["floatingIP"]
            .as_str()
            .map(|f| f.starts_with(&fip)),
        Some(true),
        "{spec}"
    );
    b.put(
        kind,
        c.ns,
        json!({"metadata": {"name": c.name, "namespace": c.ns}, "spec": spec}),
    )
    .await;
    let r = b.vpnmig(&["verify", "acme", "-o", "json"]).await;
    assert_eq!(r.code, 5, "{}\n{}", r.stdout, r.stderr);
    let after = rows(&r.stdout);
    let claimed: Vec<&Value> = after
        .iter()
        .filter(|r| r["check"] == "floating IP")
        .collect();
    assert_eq!(claimed.len(), 1, "{after:?}");
    assert_eq!(claimed[0]["verdict"], "fail");
    assert_eq!(claimed[0]["object"], "VPNGateway tenant-acme/acme");
    assert_eq!(
        claimed[0]["what"],
        format!("{fip} claimed by no other gateway")
    );
    let detail = claimed[0]["detail"].as_str().unwrap();
    for words in [
        format!("{} {}/{} also claims it", c.kind, c.ns, c.name),
        "AlreadyAssociated".to_string(),
        format!(
            "`kubectl delete {} {} -n {}`",
            c.kind.to_lowercase(),
            c.name,
            c.ns
        ),
    ] {
        assert!(detail.contains(&words), "missing {words:?} in {detail}");
    }
    // Every other row failed no more than before.
    let failed = |rows: &[Value]| {
        rows.iter()
            .filter(|r| r["verdict"] == "fail" && r["check"] != "floating IP")
            .count()
    };
    assert_eq!(failed(&after), failed(&before), "{after:?}");
    let text = b.vpnmig(&["verify", "acme"]).await;
    assert_eq!(text.code, 5);
    assert!(text.stdout.contains("NOT HEALTHY"), "{}", text.stdout);

    b.delete_until_gone(kind, c.ns, c.name, 30).await;
    eventually(30, "verify HEALTHY once the claimant is gone", healthy).await;
}

async fn a_baseline_then_a_healthy_cutover(b: &Bed) {
    let r = b.vpnmig(&["verify", "acme"]).await;
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("IPsecGateway tenant-acme/acme"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.ends_with("HEALTHY\n"), "{}", r.stdout);

    cut_over(b, |_| {}).await;
    let r = b
        .vpnmig(&["verify", "acme", "--wait", "--timeout", "30s", "-o", "json"])
        .await;
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let rows = rows(&r.stdout);
    let what: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["check"].as_str().unwrap(), r["verdict"].as_str().unwrap()))
        .collect();
    assert_eq!(
        what,
        [
            ("condition", "ok"),
            ("condition", "ok"),
            ("pinned", "ok"),
            ("pinned", "ok"),
            ("pinned", "ok"),
            ("authorization", "ok"),
            ("tunnel", "ok")
        ]
    );
    assert_eq!(
        rows[6]["detail"],
        "IKE SA #1 ESTABLISHED, CHILD SAs cover 10.20.0.0/16"
    );
}

async fn a_peer_established_but_unauthorized_is_dark(b: &Bed) {
    cut_over(b, |p| {
        p["spec"]["authorization"] = json!({"exposures": ["nosuch"]})
    })
    .await;
    // Wait for the tunnel to come up, then check.
    let mut last = String::new();
    for _ in 0..100 {
        let r = b.vpnmig(&["verify", "acme", "-o", "json"]).await;
        last = r.stdout.clone();
        if rows(&r.stdout)
            .iter()
            .any(|r| r["detail"].as_str().is_some_and(|d| d.contains("DARK")))
        {
            assert_eq!(r.code, 5);
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never reported dark: {last}");
}

async fn a_peer_down_fails_and_wait_times_out(b: &Bed) {
    b.fault("vpngateway/tenant-acme/acme", |g| g.psk_mismatch = true);
    cut_over(b, |_| {}).await;
    let r = b
        .vpnmig(&["verify", "acme", "--wait", "--timeout", "3s"])
        .await;
    assert_eq!(r.code, 6, "{}\n{}", r.stdout, r.stderr);
    assert!(r.says("waiting "), "progress is shown: {}", r.stderr);
    assert!(
        r.says("vpnmig: timed out after 3s waiting for acme to be healthy"),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout
            .contains("no IKE SA with remote 'fw.acme.example' @ 203.0.113.10"),
        "{}",
        r.stdout
    );
    let r = b.vpnmig(&["verify", "acme"]).await;
    assert_eq!(r.code, 5);
    assert!(
        r.stdout.ends_with("NOT HEALTHY: 1 check(s) failed\n"),
        "{}",
        r.stdout
    );
}

async fn narrower_grants_fail_and_a_refused_exec_is_not_a_verdict(b: &Bed) {
    cut_over(b, |p| p["spec"]["authorization"] = json!({"exposures": []})).await;
    let mut last = String::new();
    for _ in 0..100 {
        let r = b.vpnmig(&["verify", "acme", "-o", "json"]).await;
        last = r.stdout.clone();
        let rows = rows(&r.stdout);
        if rows
            .iter()
            .any(|r| r["check"] == "tunnel" && r["verdict"] == "ok")
        {
            let reach = rows.iter().find(|r| r["check"] == "reach").unwrap();
            assert_eq!(
                reach["detail"],
                "not granted: crm (it reached them before the migration)"
            );
            assert_eq!(r.code, 5);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(last.contains("\"reach\""), "{last}");
    // Without pods/exec the gateway's health is unknown: exit 1, not "unhealthy".
    let r = b
        .vpnmig(&["verify", "acme", "--context", "vpnmig-sandbox-viewer"])
        .await;
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.says("error: forbidden: cannot create pods/exec"),
        "{}",
        r.stderr
    );
}

/// Issue 9 item 4: the spec spells the peer address `2001:DB8:5:0::10`, strongSwan (and
/// the sandbox's swanctl) prints `2001:db8:5::10`. The tunnel is up, so verify must say
/// so: addresses are compared parsed, never as text.
async fn a_noncanonical_ipv6_peer_address_matches_swanctls_canonical_form(b: &Bed) {
    let r = b
        .vpnmig(&["verify", "acme", "--wait", "--timeout", "20s", "-o", "json"])
        .await;
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let rows = rows(&r.stdout);
    let tunnel = rows.iter().find(|r| r["check"] == "tunnel").unwrap();
    assert_eq!(
        (&tunnel["verdict"], &tunnel["detail"]),
        (
            &json!("ok"),
            &json!("IKE SA #1 ESTABLISHED, CHILD SAs cover 10.20.0.0/16")
        )
    );
}

/// Issue 9 item 6: conditions without their own observedGeneration, on a status older
/// than the spec (status.observedGeneration 1, metadata.generation 2), are not current;
/// verify says why, as `kubectl wait` would judge them.
async fn stale_conditions_without_observed_generation_are_not_current(b: &Bed) {
    b.fault("tenant-acme/acme", |g| g.paused = true);
    let before = b.get(IPSECGATEWAY, "tenant-acme", "acme").await.unwrap();
    b.edit(IPSECGATEWAY, "tenant-acme", "acme", |g| {
        g["spec"]["ike"]["lifetime"] = json!("12h")
    })
    .await;
    let generation =
        b.get(IPSECGATEWAY, "tenant-acme", "acme").await.unwrap()["metadata"]["generation"]
            .as_i64()
            .unwrap();
    assert_eq!(
        generation,
        before["metadata"]["generation"].as_i64().unwrap() + 1
    );
    // The operator was paused after it started: a reconcile already under way (the real
    // control plane's workers) may still write its status once, even after ours stood for
    // a while. So: write ours, let it stand, verify, and keep verify's answer only when
    // the status is still ours afterwards (the same reasons as the operator's, so only
    // that read tells them apart); else write ours again.
    let ours = |g: &Value| {
        g["status"]["observedGeneration"] == json!(generation - 1)
            && g["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().all(|c| c["observedGeneration"].is_null()))
    };
    let mut conditions: Option<Vec<(String, String, String)>> = None;
    for _ in 0..10 {
        b.edit_status(IPSECGATEWAY, "tenant-acme", "acme", |g| {
            g["status"]["observedGeneration"] = json!(generation - 1);
            g["status"]["conditions"] = json!([
                {"type": "FIPAttached", "status": "True", "reason": "Associated", "message": "ok", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "Ready", "status": "True", "reason": "Reconciled", "message": "ok", "lastTransitionTime": "2026-01-01T00:00:00Z"}
            ]);
        })
        .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        if !ours(&b.get(IPSECGATEWAY, "tenant-acme", "acme").await.unwrap()) {
            continue;
        }
        let r = b.vpnmig(&["verify", "acme", "-o", "json"]).await;
        if !ours(&b.get(IPSECGATEWAY, "tenant-acme", "acme").await.unwrap()) {
            continue;
        }
        assert_eq!(r.code, 5, "{}\n{}", r.stdout, r.stderr);
        conditions = Some(
            rows(&r.stdout)
                .iter()
                .filter(|r| r["check"] == "condition")
                .map(|r| {
                    (
                        r["what"].as_str().unwrap().to_string(),
                        r["verdict"].as_str().unwrap().to_string(),
                        r["detail"].as_str().unwrap().to_string(),
                    )
                })
                .collect(),
        );
        break;
    }
    let conditions = conditions.expect("the paused operator kept rewriting the status");
    let stale = |t: &str| {
        (
            t.to_string(),
            "fail".to_string(),
            format!(
                "{t}=True has no observedGeneration and status.observedGeneration is {}, the object is at {generation}: stale",
                generation - 1
            ),
        )
    };
    assert_eq!(conditions, [stale("FIPAttached"), stale("Ready")]);
}

/// `verify --baseline` (issue 12 item 1): the data plane as it is, outside a window, in
/// the document a cutover keeps in its journal; nothing recorded without a journal.
async fn baseline_records_the_data_plane_outside_a_window(b: &Bed) {
    let r = b
        .vpnmig(&["verify", "acme", "--baseline", "-o", "json"])
        .await;
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["source"], "IPsecGateway tenant-acme/acme");
    let t = &doc["tunnels"][0];
    let facts =
        |v: &Value, keys: &[&str]| -> Vec<Value> { keys.iter().map(|k| v[*k].clone()).collect() };
    assert_eq!(
        facts(
            t,
            &[
                "name",
                "localAddress",
                "remoteId",
                "remoteAddress",
                "ikeVersion",
                "ikeAlgorithms",
                "natT"
            ]
        ),
        [
            json!("main"),
            json!("198.51.100.23"),
            json!("fw.acme.example"),
            json!("203.0.113.10"),
            json!(2),
            json!("AES_CBC-256/HMAC_SHA2_256_128/PRF_HMAC_SHA2_256/MODP_2048"),
            json!(false)
        ]
    );
    assert_eq!(
        facts(
            &t["children"][0],
            &[
                "name",
                "mode",
                "protocol",
                "algorithms",
                "remoteTs",
                "udpEncap"
            ]
        ),
        [
            json!("main"),
            json!("TUNNEL"),
            json!("ESP"),
            json!("AES_GCM_16-256"),
            json!(["10.20.0.0/16"]),
            json!(false)
        ]
    );
    let r = b.vpnmig(&["verify", "acme", "--baseline"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .starts_with("Data plane of IPsecGateway tenant-acme/acme at "),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(" main #1: '198.51.100.23' @ 198.51.100.23 <-> 'fw.acme.example' @ 203.0.113.10, IKEv2, AES_CBC-256/HMAC_SHA2_256_128/PRF_HMAC_SHA2_256/MODP_2048, NAT-T no\n"),
        "{}",
        r.stdout
    );
    assert!(!r.says("recorded in the journal"), "{}", r.stderr);
    assert!(
        b.get(CONFIGMAP, "tenant-acme", "vpnmig-acme")
            .await
            .is_none()
    );
}

/// Issue 21 item 1, round 4, kind C (a22 F7): after a window, `verify` compares the PSK
/// Secret's key with the journal's fingerprint (a `psk` row, never a value): green as the
/// window left it; failed, with a hint that puts the client's key back (not a rollback,
/// which reads the same Secret), once it was rotated, and once it is gone.
async fn verify_compares_the_psk_with_the_journal(b: &Bed) {
    let r = b.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let psk = |r: &live::Run| {
        rows(&r.stdout)
            .into_iter()
            .find(|r| r["check"] == "psk")
            .unwrap_or_else(|| panic!("no psk row: {}", r.stdout))
    };
    let r = b
        .vpnmig(&["verify", "acme", "--wait", "--timeout", "30s", "-o", "json"])
        .await;
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let row = psk(&r);
    assert_eq!(row["verdict"], "ok", "{row}");
    assert_eq!(row["object"], "Secret tenant-acme/acme-psk", "{row}");
    assert!(
        row["detail"].as_str().unwrap().ends_with(", as journaled"),
        "{row}"
    );
    for change in ["rotated", "deleted"] {
        if change == "rotated" {
            use base64::Engine;
            let key = base64::engine::general_purpose::STANDARD.encode("rotated-by-someone");
            b.edit(SECRET, "tenant-acme", "acme-psk", |o| {
                o["data"]["psk"] = json!(key)
            })
            .await;
        } else {
            b.delete(SECRET, "tenant-acme", "acme-psk").await;
        }
        let r = b.vpnmig(&["verify", "acme", "-o", "json"]).await;
        assert_eq!(r.code, 5, "{change}: {}\n{}", r.stdout, r.stderr);
        let row = psk(&r);
        assert_eq!(row["verdict"], "fail", "{change}: {row}");
        let detail = row["detail"].as_str().unwrap();
        if change == "rotated" {
            assert!(
                detail.contains(", the journal has hmac-sha256:"),
                "{detail}"
            );
        } else {
            assert!(detail.starts_with("the Secret is gone"), "{detail}");
        }
        assert!(r.says("put the client's key back"), "{}", r.stderr);
        assert!(r.says("a rollback cannot fix it"), "{}", r.stderr);
        assert!(!r.says("restores the IPsecGateway"), "{}", r.stderr);
        for out in [&r.stdout, &r.stderr] {
            assert!(!out.contains("cm90YXRlZC1ieS1zb21lb25l"), "{out}");
            assert!(!out.contains("rotated-by-someone"), "{out}");
        }
    }
}
