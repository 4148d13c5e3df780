//! fixtures/crds/ holds the three CRDs rendered from src/core/model.rs. They must never
//! drift apart: this test compares them, and `VPNMIG_BLESS=1 cargo test --test crds`
//! rewrites the files after an intended model change.

use std::path::Path;

use serde_json::Value;
use vpnmig::core::model::crds;
use vpnmig::output::manifest::to_yaml;

#[test]
fn fixture_crds_match_the_model() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/crds");
    for crd in crds() {
        let name = crd.metadata.name.clone().unwrap();
        let path = dir.join(format!("{name}.yaml"));
        let rendered = to_yaml(&crd);
        if std::env::var_os("VPNMIG_BLESS").is_some() {
            std::fs::write(&path, &rendered).unwrap();
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(
            on_disk,
            rendered,
            "{} is stale: run VPNMIG_BLESS=1 cargo test --test crds",
            path.display()
        );
    }
}

fn schema(crd_name: &str) -> Value {
    let crd = crds()
        .into_iter()
        .find(|c| c.metadata.name.as_deref() == Some(crd_name))
        .unwrap();
    let v = serde_json::to_value(&crd.spec.versions[0]).unwrap();
    v["schema"]["openAPIV3Schema"].clone()
}

#[test]
fn new_kinds_enforce_the_allowlist_as_an_enum() {
    let gw = schema("vpngateways.vpn.bnerd.net");
    let ike = &gw["properties"]["spec"]["properties"]["ipsec"]["properties"]["ike"]["properties"]["proposals"];
    assert_eq!(ike["items"]["enum"][0], "aes256-sha256-modp2048");
    assert_eq!(
        ike["items"]["enum"].as_array().unwrap().len(),
        vpnmig::core::allowlist::DEFAULT_IKE.len()
    );
    let peer = schema("vpnpeers.vpn.bnerd.net");
    let esp = &peer["properties"]["spec"]["properties"]["ipsec"]["properties"]["esp"]["properties"]
        ["proposals"];
    assert_eq!(esp["items"]["enum"][0], "aes256gcm16");
    // The frozen old kind validated proposals in its reconciler, not in the schema.
    let old = schema("ipsecgateways.ipsec.bnerd.net");
    assert!(
        old["properties"]["spec"]["properties"]["ike"]["properties"]["proposals"]["items"]
            .get("enum")
            .is_none()
    );
}

#[test]
fn crds_have_required_fields_status_and_printer_columns() {
    let old = schema("ipsecgateways.ipsec.bnerd.net");
    let required: Vec<&str> = old["properties"]["spec"]["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(required, ["auth", "endpoint", "ike", "tunnels"]);
    for crd in crds() {
        let v = &crd.spec.versions[0];
        assert!(
            v.subresources
                .as_ref()
                .and_then(|s| s.status.as_ref())
                .is_some(),
            "{:?} has a status subresource",
            crd.metadata.name
        );
        let cols: Vec<&str> = v
            .additional_printer_columns
            .as_ref()
            .unwrap()
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert!(cols.contains(&"Age"), "{cols:?}");
        assert_eq!(crd.spec.scope, "Namespaced");
    }
}
