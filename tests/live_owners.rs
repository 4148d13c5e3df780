//! Owners and field managers across a window, end to end (issue 9 items 9 and 12): a
//! rollback never restores an ownerReference whose owner is gone (the garbage collector
//! would delete the restored gateway), and an apply that conflicts with another writer
//! names that writer's field manager. Each row runs on the emulator and on the real
//! control plane (tests/live/bed.rs).

mod live;

use std::time::Duration;

use live::ACME;
use live::bed::{
    After, Backend, Bed, CONFIGMAP, IPSECGATEWAY, Row, Scenario, VPNGATEWAY, eventually,
};
use serde_json::json;
use vpnmig_sandbox::SettingsFile;

const OWNED: &str = include_str!("../fixtures/clusters/acme-owned-by-configmap.yaml");
const NS: &str = "tenant-acme";
/// The uid the fixture gives ConfigMap tenant-root (the emulator keeps it; a real API
/// server gives every object its own: [`root_uid`]).
const ROOT_UID: &str = "0b7c1d2e-0000-4000-8000-000000000001";

fn settings() -> SettingsFile {
    live::pool("10.250.3.0/24")
}

fn owned() -> Scenario {
    Scenario::new(OWNED, settings())
}

fn acme_with_a_slow_finalizer() -> Scenario {
    let mut s = settings();
    s.operator.finalizer_delay_ms = 300;
    Scenario::new(ACME, s)
}

crate::rows! {
    /// The fault as it was: the saved manifest re-created verbatim (what rollback did)
    /// names an owner that is gone, and the garbage collector deletes the gateway
    /// afterwards.
    a_gateway_re_created_with_a_gone_owner_is_garbage_collected: Row {
        scenario: owned,
        only: Some((
            Backend::Emulated,
            "pauses the garbage collector (the collector's pace is the emulator's; the real \
             kube-controller-manager's starts collecting the CRD kinds up to ~40 s after its start)",
        )),
        after: None,
        steps: |b| Box::pin(a_gateway_re_created_with_a_gone_owner_is_garbage_collected(b)),
    },
    rollback_refuses_an_owner_that_is_gone_then_drops_it_when_told: Row {
        scenario: owned,
        only: None,
        after: After::acme("IPsecGateway"),
        steps: |b| Box::pin(rollback_refuses_an_owner_that_is_gone_then_drops_it_when_told(b)),
    },
    /// A `kubectl patch` of a pinned field of the VPNGateway between the cutover's applies
    /// (the run stopped after the VPNGateway, before its VPNPeer): the resumed apply is
    /// refused by the API server, and vpnmig's message names the field manager.
    an_apply_conflict_names_the_kubectl_patch_field_manager: Row {
        scenario: acme_with_a_slow_finalizer,
        only: None,
        // The window stops at phase deleted on purpose (no settled state).
        after: None,
        steps: |b| Box::pin(an_apply_conflict_names_the_kubectl_patch_field_manager(b)),
    },
}

/// The uid of ConfigMap tenant-root, the gateway's owner: the fixture's on the emulator,
/// the one the real API server gave it there.
async fn root_uid(b: &Bed) -> String {
    let uid = b
        .uid(CONFIGMAP, NS, "tenant-root")
        .await
        .expect("the owner exists");
    if b.backend == Backend::Emulated {
        assert_eq!(uid, ROOT_UID);
    }
    uid
}

async fn gateway_uid(b: &Bed) -> Option<String> {
    b.objects(IPSECGATEWAY, NS)
        .await
        .first()
        .map(|g| g["metadata"]["uid"].as_str().unwrap().to_string())
}

async fn a_gateway_re_created_with_a_gone_owner_is_garbage_collected(b: &Bed) {
    let root = root_uid(b).await;
    b.step(&["cutover", "acme", "-n", NS, "--yes"], 0, &[])
        .await;
    b.delete(CONFIGMAP, NS, "tenant-root").await;
    // A collector that is behind, as after a rollback that has just reported success.
    b.emulator().gc.write().unwrap().paused = true;
    let j = b.journal(NS, "acme").await.unwrap();
    assert_eq!(
        j["oldManifest"]["metadata"]["ownerReferences"][0]["uid"],
        root.as_str()
    );
    b.put(IPSECGATEWAY, NS, j["oldManifest"].clone()).await;
    assert!(gateway_uid(b).await.is_some());
    b.emulator().gc.write().unwrap().paused = false;
    eventually(
        5,
        "the collector deletes the re-created gateway",
        || async { gateway_uid(b).await.is_none() },
    )
    .await;
}

async fn rollback_refuses_an_owner_that_is_gone_then_drops_it_when_told(b: &Bed) {
    let root = root_uid(b).await;
    b.step(&["cutover", "acme", "-n", NS, "--yes"], 0, &[])
        .await;
    b.delete(CONFIGMAP, NS, "tenant-root").await;

    b.step(
        &["rollback", "acme", "-n", NS, "--yes"],
        7,
        &[
            &format!(
                "the saved ipsecgateway/acme -n {NS} is owned by an object that no longer exists: ConfigMap tenant-root (uid {root}): no ConfigMap tenant-root exists"
            ),
            "nothing was changed",
            &format!("`vpnmig rollback acme -n {NS} --drop-missing-owners --yes`"),
        ],
    )
    .await;
    // Nothing changed: the window is still the cutover's, the new objects are there.
    assert_eq!(b.phase(NS, "acme").await.as_deref(), Some("done"));
    assert_eq!(b.objects(VPNGATEWAY, NS).await.len(), 1);
    assert!(gateway_uid(b).await.is_none());

    b.step(
        &[
            "rollback",
            "acme",
            "-n",
            NS,
            "--yes",
            "--drop-missing-owners",
        ],
        0,
        &[&format!(
            "note: --drop-missing-owners: IPsecGateway {NS}/acme is re-created without its ownerReference to ConfigMap tenant-root (uid {root})"
        )],
    )
    .await;
    let j = b.journal(NS, "acme").await.unwrap();
    assert_eq!(j["phase"], "rolled-back");
    assert_eq!(
        j["droppedOwnerReferences"],
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "tenant-root", "uid": root}])
    );
    // The record of the old gateway stays verbatim.
    assert_eq!(
        j["oldManifest"]["metadata"]["ownerReferences"][0]["name"],
        "tenant-root"
    );
    let gw = b.objects(IPSECGATEWAY, NS).await;
    assert_eq!(gw.len(), 1);
    assert!(gw[0]["metadata"]["ownerReferences"].is_null(), "{gw:?}");
    let uid = gateway_uid(b).await.unwrap();
    // Ten passes of the collector later, the gateway is still the one re-created.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(gateway_uid(b).await.as_deref(), Some(uid.as_str()));
    // (and the invariants: one IPsecGateway on its floating IP, the PSK unchanged.)
}

async fn an_apply_conflict_names_the_kubectl_patch_field_manager(b: &Bed) {
    let child = b.spawn(&["cutover", "acme", "-n", NS, "--yes"]);
    // After the dry run (phase deleting), every apply of a VPNPeer fails.
    eventually(20, "the delete of the old gateway", || async {
        b.phase(NS, "acme").await.as_deref() == Some("deleting")
    })
    .await;
    b.api_faults().write().unwrap().errors = vec![vpnmig_sandbox::api::faults::ErrorRule {
        verbs: vec!["patch".into()],
        resources: vec!["vpnpeers".into()],
        code: 500,
        times: None,
        retry_after_seconds: None,
    }];
    let r = live::finish(child).await;
    assert_ne!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        b.phase(NS, "acme").await.as_deref(),
        Some("deleted"),
        "{}",
        r.stderr
    );
    assert_eq!(b.objects(VPNGATEWAY, NS).await.len(), 1);
    b.api_faults().write().unwrap().errors.clear();

    // `kubectl patch vpngateway acme --type merge -p '{"spec":{"serviceCIDR":…}}'`
    b.patch_as(
        VPNGATEWAY,
        NS,
        "acme",
        "kubectl-patch",
        json!({"spec": {"serviceCIDR": "10.250.9.0/24"}}),
    )
    .await;

    let r = b.vpnmig(&["cutover", "acme", "-n", NS, "--yes"]).await;
    assert_ne!(r.code, 0, "{}", r.stderr);
    assert!(
        r.says("conflict with \"kubectl-patch\" using vpn.bnerd.net/v1alpha1: "),
        "{}",
        r.stderr
    );
    assert!(r.says(".spec.serviceCIDR"), "{}", r.stderr);
    // Refused, not overwritten.
    assert_eq!(
        b.objects(VPNGATEWAY, NS).await[0]["spec"]["serviceCIDR"],
        "10.250.9.0/24"
    );
}
