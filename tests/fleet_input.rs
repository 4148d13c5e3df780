//! Fleet-sized inputs (issue 15 item 4): a `kubectl get ipsecgateways -A -o yaml` export
//! of thousands of gateways is read within the documented limits, refused beyond them
//! with the limit named, and planned whole without --name (offline: the collisions
//! among the file's gateways, a bundle each and fleet.json).

mod common;

use std::fmt::Write;

use common::vpnmig;
use serde_json::Value;

/// One gateway as kubectl's `-o yaml` writes an item of a List (server fields and all).
fn item(out: &mut String, i: usize, fip: &str) {
    let ns = format!("tenant-{:03}", i % 200);
    let _ = write!(
        out,
        r#"- apiVersion: ipsec.bnerd.net/v1alpha1
  kind: IPsecGateway
  metadata:
    creationTimestamp: "2026-03-02T10:00:00Z"
    finalizers:
    - ipsec.bnerd.net/cleanup
    generation: 4
    labels:
      tier: bronze
    name: client-{i:05}
    namespace: {ns}
    resourceVersion: "{rv}"
    uid: 6f1c2a9e-0000-4000-8000-{i:012}
  spec:
    auth:
      pskSecretRef:
        key: psk
        name: client-{i:05}-psk
    endpoint:
      floatingIP: {fip}
      network: public
    exposures:
    - name: crm
      protocol: TCP
      target:
        address: crm.{ns}.svc
        port: 443
    ike:
      lifetime: 24h
      proposals:
      - aes256-sha256-modp2048
      version: 2
    tunnels:
    - dpd:
        action: restart
        delay: 30s
        timeout: 150s
      esp:
        lifetime: 1h
        proposals:
        - aes256gcm16-modp2048
      name: main
      peer:
        address: 203.0.113.10
        id: fw.client-{i:05}.example
      remoteSubnets:
      - 10.20.0.0/16
  status:
    conditions:
    - status: "True"
      type: FIPAttached
    - status: "True"
      type: Ready
    exposures:
    - name: crm
      virtualIP: 10.{a}.{b}.10
    floatingIP: {fip}
    observedGeneration: 4
    serviceCIDR: 10.{a}.{b}.0/24
"#,
        rv = 1000 + i,
        a = 100 + i / 256,
        b = i % 256,
    );
}

fn fip(i: usize) -> String {
    format!("100.{}.{}.{}", 64 + i / 65536, (i / 256) % 256, i % 256)
}

/// An export of `n` gateways as one List, as `kubectl get ipsecgateways -A -o yaml`.
fn export(n: usize, fip_of: impl Fn(usize) -> String) -> String {
    let mut out = String::from("apiVersion: v1\nitems:\n");
    for i in 0..n {
        item(&mut out, i, &fip_of(i));
    }
    out.push_str("kind: List\nmetadata:\n  resourceVersion: \"\"\n");
    out
}

#[test]
fn an_export_of_3000_gateways_is_read_with_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("all.yaml");
    let text = export(3000, fip);
    assert!(text.len() > 2_500_000, "{} bytes", text.len());
    std::fs::write(&file, &text).unwrap();
    let r = vpnmig(
        &[
            "plan",
            "-f",
            file.to_str().unwrap(),
            "--name",
            "tenant-034/client-02234",
            "-o",
            "json",
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("budget"), "{}", r.stderr);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(plan["source"]["name"], "client-02234");
    assert_eq!(
        plan["source"]["origin"]
            .as_str()
            .unwrap()
            .split(" document")
            .next(),
        Some(file.to_str().unwrap())
    );
}

#[test]
fn an_export_is_planned_whole_without_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("all.yaml");
    // Gateways 7 and 407 pin the same floating IP.
    std::fs::write(
        &file,
        export(600, |i| if i == 407 { fip(7) } else { fip(i) }),
    )
    .unwrap();
    let out = dir.path().join("plans");
    let r = vpnmig(
        &[
            "plan",
            "-f",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "-o",
            "json",
        ],
        None,
    );
    assert_eq!(r.code, 4, "{}", r.stderr);
    let fleet: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("fleet.json")).unwrap()).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&r.stdout).unwrap(), fleet);
    assert_eq!(fleet["totals"]["gateways"], 600);
    assert_eq!(fleet["totals"]["blocked"], 2);
    assert_eq!(fleet["origin"], file.to_str().unwrap());
    let blocked: Vec<&Value> = fleet["gateways"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["verdict"] == "blocked")
        .collect();
    let names: Vec<&str> = blocked
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["client-00007", "client-00407"]);
    for g in blocked {
        assert_eq!(g["blocking"], serde_json::json!(["fip-unique"]), "{g}");
    }
    assert!(out.join("tenant-007/client-00007/plan.json").is_file());
    assert!(out.join("tenant-199/client-00599/vpnpeer.yaml").is_file());
}

#[test]
fn a_file_of_two_gateways_plans_both_offline() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plans");
    let r = vpnmig(
        &[
            "plan",
            "-f",
            "fixtures/two-gateways.yaml",
            "--out",
            &format!("{}/", out.display()),
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stderr, r.stdout);
    // `--out DIR/` as a shell completes it: the paths shown have no `//`.
    assert!(
        common::flat(&r.stdout).contains(&format!(
            "Bundles written under {0}/NAMESPACE/NAME/, summary in {0}/fleet.json",
            out.display()
        )),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("2 gateway(s): 2 ready, 0 blocked"),
        "{}",
        r.stdout
    );
    for name in ["acme", "acme-dr"] {
        let plan: Value = serde_json::from_str(
            &std::fs::read_to_string(out.join("tenant-acme").join(name).join("plan.json")).unwrap(),
        )
        .unwrap();
        // Offline: the file's collisions, none of the checks only a cluster answers.
        let ids: Vec<&str> = plan["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        assert!(
            ids.contains(&"fip-unique") && ids.contains(&"peer-names-unique"),
            "{ids:?}"
        );
        assert!(
            !ids.contains(&"permissions") && !ids.contains(&"targets-free"),
            "{ids:?}"
        );
    }
    // --name still picks one.
    let r = vpnmig(
        &[
            "plan",
            "-f",
            "fixtures/two-gateways.yaml",
            "--name",
            "acme-dr",
            "-o",
            "json",
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn beyond_the_limit_the_error_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("storm.yaml");
    let docs = vpnmig::core::input::MAX_DOCUMENTS + 1;
    std::fs::write(&file, "--- {}\n".repeat(docs)).unwrap();
    let r = vpnmig(&["plan", "-f", file.to_str().unwrap()], None);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.says("too large for vpnmig's input limit (64 MiB, 100,000 YAML documents"),
        "{}",
        r.stderr
    );
    assert!(r.says("more than 100000 YAML documents"), "{}", r.stderr);
    assert!(r.says("hint: split the export"), "{}", r.stderr);
    assert!(!r.stderr.contains("budget breached"), "{}", r.stderr);
}

#[test]
fn the_sandbox_loads_a_scenario_past_1024_documents() {
    let mut text = String::new();
    for i in 0..1500 {
        let _ = writeln!(
            text,
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}, namespace: default}}"
        );
    }
    let objects = vpnmig_sandbox::scenario::parse(&text).unwrap();
    assert_eq!(objects.len(), 1500);
    let err = vpnmig_sandbox::scenario::parse(&"--- {}\n".repeat(100_001)).unwrap_err();
    assert!(err.to_string().contains("100,000 YAML documents"), "{err}");
}

/// The wave scenario (docs/fleet.md) is what its script writes, and plans offline: 60
/// gateways, every one ready (no collision among them).
#[test]
fn the_fleet_scenario_is_what_its_script_writes_and_plans_ready() {
    let dir = common::root().join("fixtures/clusters");
    let out = std::process::Command::new("sh")
        .arg("fleet.sh")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    let file = dir.join("fleet-60.yaml");
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        std::fs::read_to_string(&file).unwrap(),
        "run `sh fleet.sh > fleet-60.yaml` in fixtures/clusters"
    );
    let r = vpnmig(&["plan", "-f", file.to_str().unwrap(), "-o", "json"], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let fleet: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(fleet["totals"]["gateways"], 60);
    assert_eq!(fleet["totals"]["ready"], 60, "{}", fleet["totals"]);
}
