//! `vpnmig plan --out DIR`: the bundle's files, its guard against overwriting another
//! gateway's bundle, and the diff against the previous bundle.

mod common;

use std::fs;

use common::{Gw, vpnmig};
use serde_json::{Value, json};

const ONE: &str = "fixtures/gateways/01-single-tunnel.yaml";

fn read_json(p: &std::path::Path) -> Value {
    serde_json::from_str(&fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn writes_the_four_files_and_plan_json_matches_json_output() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("plans/acme");
    let r = vpnmig(
        &[
            "plan",
            "-f",
            ONE,
            "--out",
            dir.to_str().unwrap(),
            "-o",
            "json",
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "old-ipsecgateway.yaml",
            "plan.json",
            "vpngateway.yaml",
            "vpnpeer.yaml"
        ],
        "no temporary files left"
    );
    let plan = read_json(&dir.join("plan.json"));
    assert_eq!(serde_json::from_str::<Value>(&r.stdout).unwrap(), plan);
    assert_eq!(plan["apiVersion"], "vpnmig.bnerd.net/plan/v1");
    assert_eq!(plan["toolVersion"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        plan["source"]["uid"],
        "6f1c2a9e-3b7d-4e52-9a41-0d8c7e5b2f13"
    );
    assert_eq!(plan["source"]["resourceVersion"], "48213977");
    assert_eq!(plan["source"]["generation"], 4);
    assert_eq!(plan["blocked"], false);
    let gw: Value =
        serde_saphyr::from_str(&fs::read_to_string(dir.join("vpngateway.yaml")).unwrap()).unwrap();
    assert_eq!(gw, plan["targets"]["gateway"]);
}

#[test]
fn the_old_manifest_is_clean_and_plans_back_to_the_same_spec() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("b");
    assert_eq!(
        vpnmig(&["plan", "-f", ONE, "--out", dir.to_str().unwrap()], None).code,
        0
    );
    let old_text = fs::read_to_string(dir.join("old-ipsecgateway.yaml")).unwrap();
    let old: Value = serde_saphyr::from_str(&old_text).unwrap();
    assert_eq!(old.get("status"), None);
    assert_eq!(
        old["metadata"],
        json!({"annotations": {"ops.bnerd.net/ticket": "NET-4411"}, "labels": {"client": "acme", "tier": "gold"}, "name": "acme", "namespace": "tenant-acme"})
    );
    // Re-planning the saved manifest gives the same spec fingerprint: nothing was lost.
    let saved = dir.join("old-ipsecgateway.yaml");
    let r = vpnmig(&["plan", "-f", saved.to_str().unwrap(), "-o", "json"], None);
    let replanned: Value = serde_json::from_str(&r.stdout).unwrap();
    let original = read_json(&dir.join("plan.json"));
    assert_eq!(
        replanned["source"]["specFingerprint"],
        original["source"]["specFingerprint"]
    );
}

#[test]
fn multi_tunnel_peers_share_one_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("b");
    let r = vpnmig(
        &[
            "plan",
            "-f",
            "fixtures/gateways/03-three-tunnels.yaml",
            "--out",
            dir.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let peers: Vec<Value> =
        serde_saphyr::from_multiple(&fs::read_to_string(dir.join("vpnpeer.yaml")).unwrap())
            .unwrap();
    assert_eq!(peers.len(), 3);
    assert!(
        peers
            .iter()
            .all(|p| p["kind"] == "VPNPeer" && p["spec"]["authorization"].is_object())
    );
}

#[test]
fn a_second_run_diffs_against_the_first() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("b");
    let d = dir.to_str().unwrap();
    let gw = Gw::new("acme");
    assert_eq!(
        vpnmig(&["plan", "-f", "-", "--out", d], Some(&gw.yaml())).code,
        0
    );
    let again = vpnmig(&["plan", "-f", "-", "--out", d], Some(&gw.yaml()));
    assert!(
        again.stdout.contains(&format!(
            "Diff (against the previous bundle in {d})\n  no changes\n"
        )),
        "{}",
        again.stdout
    );

    let changed = gw.set("/spec/tunnels/0/remoteSubnets", json!(["10.61.0.0/16"]));
    let r = vpnmig(&["plan", "-f", "-", "--out", d], Some(&changed.yaml()));
    assert_eq!(r.code, 0);
    assert!(
        r.stdout
            .contains("--- a/VPNPeer/acme\n+++ b/VPNPeer/acme\n"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("\n-    - 10.60.0.0/16\n+    - 10.61.0.0/16\n"),
        "{}",
        r.stdout
    );
    assert!(
        !r.stdout.contains("VPNGateway/acme\n@@"),
        "the gateway did not change: {}",
        r.stdout
    );
}

#[test]
fn never_overwrites_another_gateways_bundle_without_force() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("b");
    let d = dir.to_str().unwrap();
    assert_eq!(
        vpnmig(
            &["plan", "-f", "-", "--out", d],
            Some(&Gw::new("acme").yaml())
        )
        .code,
        0
    );
    let before = fs::read_to_string(dir.join("plan.json")).unwrap();

    let r = vpnmig(
        &["plan", "-f", "-", "--out", d],
        Some(&Gw::new("globex").yaml()),
    );
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert_eq!(r.stdout, "");
    assert_eq!(
        r.stderr,
        format!(
            "error: {d}: holds the bundle of tenant-test/acme, not of tenant-test/globex\nhint: choose another --out directory, or pass --force to replace its files\n"
        )
    );
    assert_eq!(
        fs::read_to_string(dir.join("plan.json")).unwrap(),
        before,
        "untouched"
    );

    let forced = vpnmig(
        &["plan", "-f", "-", "--out", d, "--force"],
        Some(&Gw::new("globex").yaml()),
    );
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert_eq!(
        read_json(&dir.join("plan.json"))["source"]["name"],
        "globex"
    );
}

#[test]
fn stray_files_without_a_plan_are_not_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("vpngateway.yaml"), "precious: true\n").unwrap();
    let r = vpnmig(
        &["plan", "-f", ONE, "--out", tmp.path().to_str().unwrap()],
        None,
    );
    assert_eq!(r.code, 7);
    assert!(
        r.says("has vpngateway.yaml but no plan.json naming a gateway"),
        "{}",
        r.stderr
    );
    assert_eq!(
        fs::read_to_string(tmp.path().join("vpngateway.yaml")).unwrap(),
        "precious: true\n"
    );
}

#[test]
fn a_blocked_plan_is_still_written_and_marked() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("b");
    let r = vpnmig(
        &[
            "plan",
            "-f",
            "fixtures/gateways/07-unpinned-fip.yaml",
            "--out",
            dir.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(r.code, 4);
    assert!(
        r.stdout
            .contains("BLOCKED: 1 blocker, 0 warnings: fix the blockers above, then plan again."),
        "{}",
        r.stdout
    );
    let plan = read_json(&dir.join("plan.json"));
    assert_eq!(plan["blocked"], true);
    assert_eq!(plan["summary"]["blockers"], 1);
    let failed: Vec<&str> = plan["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["outcome"] == "fail")
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["fip-pinned"]);
}

#[test]
fn yaml_output_applies_as_is() {
    let r = vpnmig(
        &[
            "plan",
            "-f",
            "fixtures/gateways/02-two-tunnels.yaml",
            "-o",
            "yaml",
        ],
        None,
    );
    assert_eq!(r.code, 0);
    let docs: Vec<Value> = serde_saphyr::from_multiple(&r.stdout).unwrap();
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["VPNGateway", "VPNPeer", "VPNPeer"]);
}

#[test]
fn another_object_of_the_same_name_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("b");
    let d = d.to_str().unwrap();
    assert_eq!(
        vpnmig(
            &["plan", "-f", "-", "--out", d],
            Some(&Gw::new("acme").yaml())
        )
        .code,
        0
    );
    let other = Gw::new("acme").set(
        "/metadata/uid",
        json!("99999999-0000-0000-0000-000000000000"),
    );
    let r = vpnmig(&["plan", "-f", "-", "--out", d], Some(&other.yaml()));
    assert_eq!(r.code, 7);
    assert!(
        r.says("another object of that name (uid 99999999-0000-0000-0000-000000000000)"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_ready_bundle_is_not_replaced_by_a_blocked_plan() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("b");
    let d = dir.to_str().unwrap();
    assert_eq!(
        vpnmig(
            &["plan", "-f", "-", "--out", d],
            Some(&Gw::new("acme").yaml())
        )
        .code,
        0
    );
    // Re-planning from the bundle's own old manifest (no status) would lose the pinned values.
    let saved = dir.join("old-ipsecgateway.yaml");
    let r = vpnmig(&["plan", "-f", saved.to_str().unwrap(), "--out", d], None);
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(
        r.says("holds a READY bundle; this plan is BLOCKED"),
        "{}",
        r.stderr
    );
    assert_eq!(
        read_json(&dir.join("plan.json"))["targets"]["gateway"]["spec"]["serviceCIDR"],
        "10.250.9.0/24"
    );
}

#[test]
fn the_bundle_is_swapped_whole_readable_and_keeps_foreign_files() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("b");
    let d = dir.to_str().unwrap();
    assert_eq!(
        vpnmig(
            &["plan", "-f", "-", "--out", d],
            Some(&Gw::new("acme").yaml())
        )
        .code,
        0
    );
    fs::write(dir.join("NOTES.md"), "window booked for 02:00\n").unwrap();
    let changed = Gw::new("acme").set("/spec/tunnels/0/remoteSubnets", json!(["10.61.0.0/16"]));
    assert_eq!(
        vpnmig(&["plan", "-f", "-", "--out", d], Some(&changed.yaml())).code,
        0
    );
    assert_eq!(
        fs::read_to_string(dir.join("NOTES.md")).unwrap(),
        "window booked for 02:00\n"
    );
    assert!(
        fs::read_to_string(dir.join("vpnpeer.yaml"))
            .unwrap()
            .contains("10.61.0.0/16")
    );
    let leftovers: Vec<String> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(leftovers, ["b"], "no staging directories left behind");
    assert_eq!(
        fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o755
    );
    assert_ne!(
        fs::metadata(dir.join("plan.json"))
            .unwrap()
            .permissions()
            .mode()
            & 0o044,
        0,
        "readable by others on call"
    );
}

#[test]
fn out_pointing_at_a_file_is_refused() {
    let tmp = tempfile::NamedTempFile::new().unwrap();
    let r = vpnmig(
        &["plan", "-f", ONE, "--out", tmp.path().to_str().unwrap()],
        None,
    );
    assert_eq!(r.code, 7);
    assert!(r.says("is a file, not a directory"), "{}", r.stderr);
}

#[test]
fn blocked_yaml_output_is_marked() {
    let r = vpnmig(
        &[
            "plan",
            "-f",
            "fixtures/gateways/07-unpinned-fip.yaml",
            "-o",
            "yaml",
        ],
        None,
    );
    assert_eq!(r.code, 4);
    assert!(
        r.stdout.starts_with(
            "# vpnmig: this plan is BLOCKED by 1 check(s): do not apply these manifests.\n"
        ),
        "{}",
        r.stdout
    );
}
