//! `vpnmig status -A` with 2,000 gateways in the sandbox (issue target: under 2 s).
//! Prints the wall time of the real binary, median of 5 runs, and the sandbox's setup.
//!
//! Run: `cargo bench --bench status`

use std::time::{Duration, Instant};

use serde_json::json;
use vpnmig_sandbox::{Config, Sandbox, SettingsFile};

const GATEWAYS: usize = 2000;

fn gateway(i: usize) -> serde_json::Value {
    json!({
        "apiVersion": "ipsec.bnerd.net/v1alpha1", "kind": "IPsecGateway",
        "metadata": {"name": format!("client-{i:04}"), "namespace": format!("tenant-{:02}", i % 50)},
        "spec": {
            "endpoint": {"floatingIP": format!("198.{}.{}.{}", 18 + i / 65536, (i / 256) % 256, i % 256), "network": "public"},
            "auth": {"pskSecretRef": {"name": "psk", "key": "psk"}},
            "ike": {"version": 2, "proposals": ["aes256-sha256-modp2048"]},
            "tunnels": [{"name": "main", "peer": {"address": "203.0.113.10"}, "remoteSubnets": [format!("10.{}.{}.0/24", 100 + i / 256, i % 256)], "esp": {"proposals": ["aes256gcm16-modp2048"]}}],
            "exposures": [{"name": "crm", "target": {"address": "crm.svc", "port": 443}, "protocol": "TCP"}]
        },
        "status": {"serviceCIDR": format!("10.{}.{}.0/24", 200 + i / 256, i % 256), "floatingIP": format!("198.{}.{}.{}", 18 + i / 65536, (i / 256) % 256, i % 256), "exposures": [{"name": "crm", "virtualIP": format!("10.{}.{}.10", 200 + i / 256, i % 256)}]}
    })
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let t = Instant::now();
    let objects: Vec<_> = (0..GATEWAYS).map(gateway).collect();
    let mut settings = SettingsFile::default();
    // The operator would need 2,000 floating IPs in its pool; the benchmark reads, it
    // does not need the operator's reconciliation of every gateway.
    settings.operator.gateways = (0..GATEWAYS)
        .map(|i| {
            (
                format!("tenant-{:02}/client-{i:04}", i % 50),
                vpnmig_sandbox::operator::settings::GatewayFaults {
                    paused: true,
                    ..Default::default()
                },
            )
        })
        .collect();
    let sb = rt
        .block_on(Sandbox::start(Config {
            scenario: objects,
            settings,
            port: 0,
        }))
        .unwrap();
    let setup = t.elapsed();
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    sb.write_kubeconfig(&kc).unwrap();

    let mut runs = Vec::new();
    let mut rows = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_vpnmig"))
            .env("KUBECONFIG", &kc)
            .args(["status", "-A", "-o", "json"])
            .output()
            .unwrap();
        runs.push(t.elapsed());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        rows = serde_json::from_slice::<serde_json::Value>(&out.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .len();
    }
    runs.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "vpnmig status -A over {GATEWAYS} IPsecGateways in 50 namespaces (sandbox on 127.0.0.1, release build)"
    );
    println!("  rows: {rows}");
    println!(
        "  wall time: median {:.0} ms, min {:.0} ms, max {:.0} ms (5 runs; target < 2000 ms)",
        ms(runs[2]),
        ms(runs[0]),
        ms(runs[4])
    );
    println!("  (sandbox setup: {:.0} ms)", ms(setup));
    rt.block_on(sb.shutdown());
}
