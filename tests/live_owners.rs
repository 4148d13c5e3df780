//! Owners and field managers across a window, end to end against vpnmig-sandbox (issue
//! 9 items 9 and 12): a rollback never restores an ownerReference whose owner is gone
//! (the garbage collector would delete the restored gateway), and an apply that
//! conflicts with another writer names that writer's field manager.

mod live;

use std::time::Duration;

use live::{ACME, eventually, invariants, journal, objects, phase, psk_fingerprint, start};
use serde_json::{Value, json};
use vpnmig_sandbox::SettingsFile;
use vpnmig_sandbox::store::WriteOptions;

const OWNED: &str = include_str!("../fixtures/clusters/acme-owned-by-configmap.yaml");
const NS: &str = "tenant-acme";
const FIP: &str = "198.51.100.23";
const ROOT_UID: &str = "0b7c1d2e-0000-4000-8000-000000000001";

fn settings() -> SettingsFile {
    let mut s = SettingsFile::default();
    s.operator.service_cidr_pool = "10.250.3.0/24".into();
    s
}

fn delete_owner(l: &live::Live) {
    let cms = l.sb.store.resource("", "v1", "configmaps").unwrap();
    l.sb.store
        .delete(&cms, NS, "tenant-root", &Default::default())
        .unwrap();
}

fn gateway_uid(l: &live::Live) -> Option<String> {
    objects(l, "ipsec.bnerd.net", "ipsecgateways", NS)
        .first()
        .map(|g| g["metadata"]["uid"].as_str().unwrap().to_string())
}

/// The fault as it was: the saved manifest re-created verbatim (what rollback did) names
/// an owner that is gone, and the garbage collector deletes the gateway afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_re_created_with_a_gone_owner_is_garbage_collected() {
    let l = start(OWNED, settings()).await;
    let r = l.vpnmig(&["cutover", "acme", "-n", NS, "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    delete_owner(&l);
    // A collector that is behind, as after a rollback that has just reported success.
    l.sb.gc.write().unwrap().paused = true;
    let j = journal(&l, NS, "acme").unwrap();
    assert_eq!(
        j["oldManifest"]["metadata"]["ownerReferences"][0]["uid"],
        ROOT_UID
    );
    let gws =
        l.sb.store
            .resource("ipsec.bnerd.net", "v1alpha1", "ipsecgateways")
            .unwrap();
    l.sb.store
        .create(&gws, NS, j["oldManifest"].clone(), &WriteOptions::default())
        .unwrap();
    assert!(gateway_uid(&l).is_some());
    l.sb.gc.write().unwrap().paused = false;
    eventually(5, "the collector deletes the re-created gateway", || {
        gateway_uid(&l).is_none()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_refuses_an_owner_that_is_gone_then_drops_it_when_told() {
    let l = start(OWNED, settings()).await;
    let psk = psk_fingerprint(&l, NS, "acme-psk");
    let r = l.vpnmig(&["cutover", "acme", "-n", NS, "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    delete_owner(&l);

    let r = l.vpnmig(&["rollback", "acme", "-n", NS, "--yes"]).await;
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(
        r.says(&format!(
            "the saved ipsecgateway/acme -n {NS} is owned by an object that no longer exists: ConfigMap tenant-root (uid {ROOT_UID}): no ConfigMap tenant-root exists"
        )),
        "{}",
        r.stderr
    );
    assert!(r.says("nothing was changed"), "{}", r.stderr);
    assert!(
        r.says(&format!(
            "`vpnmig rollback acme -n {NS} --drop-missing-owners --yes`"
        )),
        "{}",
        r.stderr
    );
    // Nothing changed: the window is still the cutover's, the new objects are there.
    assert_eq!(phase(&l, NS, "acme").as_deref(), Some("done"));
    assert_eq!(objects(&l, "vpn.bnerd.net", "vpngateways", NS).len(), 1);
    assert!(gateway_uid(&l).is_none());

    let r = l
        .vpnmig(&[
            "rollback",
            "acme",
            "-n",
            NS,
            "--yes",
            "--drop-missing-owners",
        ])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.says(&format!(
            "note: --drop-missing-owners: IPsecGateway {NS}/acme is re-created without its ownerReference to ConfigMap tenant-root (uid {ROOT_UID})"
        )),
        "{}",
        r.stderr
    );
    let j = journal(&l, NS, "acme").unwrap();
    assert_eq!(j["phase"], "rolled-back");
    assert_eq!(
        j["droppedOwnerReferences"],
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "tenant-root", "uid": ROOT_UID}])
    );
    // The record of the old gateway stays verbatim.
    assert_eq!(
        j["oldManifest"]["metadata"]["ownerReferences"][0]["name"],
        "tenant-root"
    );
    let gw = objects(&l, "ipsec.bnerd.net", "ipsecgateways", NS);
    assert_eq!(gw.len(), 1);
    assert!(gw[0]["metadata"]["ownerReferences"].is_null(), "{gw:?}");
    let uid = gateway_uid(&l).unwrap();
    // Ten passes of the collector later, the gateway is still the one re-created.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(gateway_uid(&l).as_deref(), Some(uid.as_str()));
    invariants(&l, NS, "acme", FIP, &psk, "IPsecGateway", &[]);
}

/// A `kubectl patch` of a pinned field of the VPNGateway between the cutover's applies
/// (the run stopped after the VPNGateway, before its VPNPeer): the resumed apply is
/// refused by the API server, and vpnmig's message names the field manager.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_conflict_names_the_kubectl_patch_field_manager() {
    let mut s = settings();
    s.operator.finalizer_delay_ms = 300;
    let l = start(ACME, s).await;
    let child = l.spawn(&["cutover", "acme", "-n", NS, "--yes"]);
    // After the dry run (phase deleting), every apply of a VPNPeer fails.
    eventually(20, "the delete of the old gateway", || {
        phase(&l, NS, "acme").as_deref() == Some("deleting")
    })
    .await;
    l.sb.api_faults.write().unwrap().errors = vec![vpnmig_sandbox::api::faults::ErrorRule {
        verbs: vec!["patch".into()],
        resources: vec!["vpnpeers".into()],
        code: 500,
        times: None,
        retry_after_seconds: None,
    }];
    let r = live::finish(child).await;
    assert_ne!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        phase(&l, NS, "acme").as_deref(),
        Some("deleted"),
        "{}",
        r.stderr
    );
    assert_eq!(objects(&l, "vpn.bnerd.net", "vpngateways", NS).len(), 1);
    l.sb.api_faults.write().unwrap().errors.clear();

    // `kubectl patch vpngateway acme --type merge -p '{"spec":{"serviceCIDR":…}}'`
    let gws =
        l.sb.store
            .resource("vpn.bnerd.net", "v1alpha1", "vpngateways")
            .unwrap();
    let opts = WriteOptions {
        field_manager: Some("kubectl-patch".into()),
        ..Default::default()
    };
    l.sb.store
        .modify(&gws, NS, "acme", false, &opts, |cur| {
            let mut v: Value = cur.clone();
            v["spec"]["serviceCIDR"] = json!("10.250.9.0/24");
            Ok(v)
        })
        .unwrap();

    let r = l.vpnmig(&["cutover", "acme", "-n", NS, "--yes"]).await;
    assert_ne!(r.code, 0, "{}", r.stderr);
    assert!(
        r.says("conflict with \"kubectl-patch\" using vpn.bnerd.net/v1alpha1: "),
        "{}",
        r.stderr
    );
    assert!(r.says(".spec.serviceCIDR"), "{}", r.stderr);
    // Refused, not overwritten.
    assert_eq!(
        objects(&l, "vpn.bnerd.net", "vpngateways", NS)[0]["spec"]["serviceCIDR"],
        "10.250.9.0/24"
    );
}
