//! Every scenario in fixtures/clusters/ loads and converges, and the example settings
//! file parses and validates: what the README tells a new user to run works.

mod common;

use common::{eventually, start};
use serde_json::Value;
use vpnmig_sandbox::SettingsFile;

fn scenarios() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/clusters");
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "yaml")
                && !p
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("settings-")
        })
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn every_scenario_loads_and_its_gateways_become_ready() {
    let all = scenarios();
    assert!(all.len() >= 2, "{all:?}");
    for (file, text) in all {
        let sb = start(&text, SettingsFile::default()).await;
        let rt = sb
            .store
            .resource("ipsec.bnerd.net", "v1alpha1", "ipsecgateways")
            .unwrap();
        let (gateways, _) = sb.store.list(&rt, None);
        assert!(!gateways.is_empty(), "{file} has a gateway");
        for g in gateways {
            let ns = g["metadata"]["namespace"].as_str().unwrap().to_string();
            let name = g["metadata"]["name"].as_str().unwrap().to_string();
            eventually(5, &format!("{file}: {ns}/{name} Ready"), || {
                let obj = sb.store.get(&rt, &ns, &name).ok();
                async move {
                    obj.and_then(|o| o["status"]["conditions"].as_array().cloned())
                        .filter(|c| {
                            c.iter()
                                .any(|c| c["type"] == "Ready" && c["status"] == "True")
                        })
                        .map(|_| ())
                }
            })
            .await;
        }
        sb.shutdown().await;
    }
}

#[tokio::test]
async fn the_owned_psk_secret_goes_with_its_gateway() {
    let text = scenarios()
        .into_iter()
        .find(|(f, _)| f.starts_with("initech"))
        .unwrap()
        .1;
    let sb = start(&text, SettingsFile::default()).await;
    let secrets = sb.store.resource("", "v1", "secrets").unwrap();
    let gws = sb
        .store
        .resource("ipsec.bnerd.net", "v1alpha1", "ipsecgateways")
        .unwrap();
    let secret = sb
        .store
        .get(&secrets, "tenant-initech", "initech-psk")
        .unwrap();
    assert_eq!(
        secret["metadata"]["ownerReferences"][0]["uid"],
        sb.store.get(&gws, "tenant-initech", "initech").unwrap()["metadata"]["uid"]
    );
    assert!(
        secret.pointer("/data/psk").is_some_and(Value::is_string)
            && secret.get("stringData").is_none()
    );
    sb.store
        .delete(&gws, "tenant-initech", "initech", &Default::default())
        .unwrap();
    eventually(5, "secret collected", || {
        let gone = sb
            .store
            .get(&secrets, "tenant-initech", "initech-psk")
            .is_err();
        async move { gone.then_some(()) }
    })
    .await;
    sb.shutdown().await;
}

#[test]
fn the_example_settings_parse_and_validate() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/clusters/settings-realistic.yaml"
    ))
    .unwrap();
    let s: SettingsFile = serde_saphyr::from_str(&text).unwrap();
    s.operator.validate().unwrap();
    assert_eq!(
        (s.operator.finalizer_delay_ms, s.operator.peer_retry_ms),
        (2000, 5000)
    );
    assert_eq!(s.users[0].name, "viewer");
}

/// The initech scenario's settings (README): valid, its pool is initech's /24, and its
/// fault knobs name the initech gateway.
#[test]
fn the_initech_settings_parse_and_fit_the_initech_scenario() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/clusters/settings-initech.yaml"
    ))
    .unwrap();
    assert!(text.contains("serviceCidrPool: 10.250.41.0/24"), "{text}");
    assert!(text.contains("tenant-initech/initech:"), "{text}");
    let s: SettingsFile = serde_saphyr::from_str(&text).unwrap();
    s.operator.validate().unwrap();
}
