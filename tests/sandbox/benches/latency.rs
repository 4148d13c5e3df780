//! How fast the emulator answers, so cutover timings measured later are vpnmig's and the
//! operator's, not the emulator's. Prints GET and watch-event latency (p50/p90/p99) over
//! HTTPS with kube-rs. Target (issue 3): p50 under 1 ms.
//!
//! Run: `cargo bench -p vpnmig-sandbox --bench latency`

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;
use vpnmig_sandbox::{Config, Sandbox, SettingsFile, scenario};

const SAMPLES: usize = 2000;

fn percentiles(mut v: Vec<Duration>) -> String {
    v.sort();
    let p = |q: f64| v[((v.len() as f64 - 1.0) * q) as usize];
    format!(
        "p50 {:>7.3} ms   p90 {:>7.3} ms   p99 {:>7.3} ms   (n={})",
        ms(p(0.5)),
        ms(p(0.9)),
        ms(p(0.99)),
        v.len()
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() {
    let objects = scenario::parse(include_str!("../../../fixtures/clusters/acme.yaml")).unwrap();
    let sb = Sandbox::start(Config {
        scenario: objects,
        settings: SettingsFile::default(),
        port: 0,
        data_plane: None,
    })
    .await
    .unwrap();
    let kc = Kubeconfig::from_yaml(&sb.kubeconfig()).unwrap();
    let client = kube::Client::try_from(
        kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .unwrap(),
    )
    .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "tenant-acme");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "bench"}, "data": {"n": "0"}})).unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();

    // Warm the connection pool.
    for _ in 0..50 {
        api.get("bench").await.unwrap();
    }
    let mut gets = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let t = Instant::now();
        api.get("bench").await.unwrap();
        gets.push(t.elapsed());
    }

    let rv = api
        .get("bench")
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = api
        .watch(&WatchParams::default().fields("metadata.name=bench"), &rv)
        .await
        .unwrap()
        .boxed();
    let mut events = Vec::with_capacity(SAMPLES / 4);
    let mut patches = Vec::with_capacity(SAMPLES / 4);
    for i in 0..SAMPLES / 4 {
        let t = Instant::now();
        tokio::time::timeout(
            Duration::from_secs(5),
            api.patch(
                "bench",
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"n": (i + 1).to_string()}})),
            ),
        )
        .await
        .expect("patch within 5 s")
        .unwrap();
        let patched = t.elapsed();
        loop {
            match tokio::time::timeout(Duration::from_secs(5), stream.next())
                .await
                .expect("event within 5 s")
            {
                Some(Ok(WatchEvent::Modified(_))) => break,
                Some(Ok(_)) => continue,
                other => panic!("watch ended after {i} events: {other:?}"),
            }
        }
        // From sending the PATCH to its event arriving on the watch.
        events.push(t.elapsed());
        patches.push(patched);
    }

    println!("vpnmig-sandbox latency over HTTPS (kube-rs client, one connection, this machine)");
    println!("  GET configmap           {}", percentiles(gets));
    println!("  PATCH configmap         {}", percentiles(patches));
    println!("  PATCH sent -> its watch event received");
    println!("                          {}", percentiles(events));
    sb.shutdown().await;
}
