//! Starting a sandbox in-process and talking to it with kube-rs, a client nobody here
//! wrote. Every wait is bounded.
#![allow(dead_code)]

pub mod bed;
pub mod real;

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use vpnmig_sandbox::{Sandbox, SettingsFile, scenario};

pub const ACME: &str = include_str!("../../../../fixtures/clusters/acme.yaml");

/// Start a sandbox with `scenario_yaml` and `settings`.
pub async fn start(scenario_yaml: &str, settings: SettingsFile) -> Sandbox {
    let objects = scenario::parse(scenario_yaml).expect("scenario parses");
    Sandbox::start(vpnmig_sandbox::Config {
        scenario: objects,
        settings,
        port: 0,
        data_plane: None,
    })
    .await
    .expect("sandbox starts")
}

/// A kube-rs client for the sandbox's context `context` (None: the admin's).
pub async fn client(sb: &Sandbox, context: Option<&str>) -> Client {
    let kc = Kubeconfig::from_yaml(&sb.kubeconfig()).expect("kubeconfig parses");
    let opts = KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    let config = Config::from_custom_kubeconfig(kc, &opts)
        .await
        .expect("kubeconfig loads");
    Client::try_from(config).expect("client builds")
}

/// Run `f` with a time limit; panics with `what` when it runs out.
pub async fn within<T>(secs: u64, what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .unwrap_or_else(|_| panic!("timed out after {secs}s: {what}"))
}

/// Poll `check` every 20 ms until it returns `Some`, for at most `secs` seconds.
pub async fn eventually<T, F, Fut>(secs: u64, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    within(secs, what, async {
        loop {
            if let Some(v) = check().await {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

/// The API status code of a kube error.
pub fn code(e: &kube::Error) -> u16 {
    match e {
        kube::Error::Api(s) => s.code,
        other => panic!("not an API error: {other:?}"),
    }
}

pub fn cm(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>()},
        "data": {"k": "v"}
    }))
    .unwrap()
}

/// `metadata.managedFields` entries of `manager` (operation, fieldsV1).
pub fn entries_of(obj: &serde_json::Value, manager: &str) -> Vec<(String, serde_json::Value)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["manager"] == manager)
        .map(|e| {
            (
                e["operation"].as_str().unwrap().to_string(),
                e["fieldsV1"].clone(),
            )
        })
        .collect()
}

/// The `Status` of a refused request: code, reason, message and its causes as
/// (reason, message, field).
pub fn refusal(e: &kube::Error) -> (u16, String, String, Vec<(String, String, String)>) {
    let kube::Error::Api(s) = e else {
        panic!("not an API error: {e:?}")
    };
    let causes = s
        .details
        .as_ref()
        .map(|d| {
            d.causes
                .iter()
                .map(|c| (c.reason.clone(), c.message.clone(), c.field.clone()))
                .collect()
        })
        .unwrap_or_default();
    (s.code, s.reason.clone(), s.message.clone(), causes)
}
