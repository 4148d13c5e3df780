//! `vpnmig plan -A --out DIR` over 2,000 gateways in the sandbox (issue 15 item 6:
//! target under 5 s on this machine, the cost per gateway not growing with N). Prints the
//! wall time of the real binary (median of 3), the API requests it made, per gateway, at
//! 500 and at 2,000 gateways.
//!
//! Run: `cargo bench --bench plan_fleet`

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::json;
use vpnmig_sandbox::{Config, Sandbox, SettingsFile};

fn fip(i: usize) -> String {
    format!("198.{}.{}.{}", 18 + i / 65536, (i / 256) % 256, i % 256)
}

fn objects(n: usize) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for i in 0..n {
        let ns = format!("tenant-{:02}", i % 50);
        out.push(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": format!("client-{i:04}-psk"), "namespace": ns},
            "type": "Opaque", "stringData": {"psk": format!("rehearsal-only-{i}")}
        }));
        out.push(json!({
            "apiVersion": "ipsec.bnerd.net/v1alpha1", "kind": "IPsecGateway",
            "metadata": {"name": format!("client-{i:04}"), "namespace": ns},
            "spec": {
                "endpoint": {"floatingIP": fip(i), "network": "public"},
                "auth": {"pskSecretRef": {"name": format!("client-{i:04}-psk"), "key": "psk"}},
                "ike": {"version": 2, "proposals": ["aes256-sha256-modp2048"]},
                "tunnels": [{"name": "main", "peer": {"address": "203.0.113.10"}, "remoteSubnets": [format!("10.{}.{}.0/24", 100 + i / 256, i % 256)], "esp": {"proposals": ["aes256gcm16-modp2048"]}}],
                "exposures": [{"name": "crm", "target": {"address": "crm.svc", "port": 443}, "protocol": "TCP"}]
            },
            "status": {"serviceCIDR": format!("10.{}.{}.0/24", 200 + i / 256, i % 256), "floatingIP": fip(i), "exposures": [{"name": "crm", "virtualIP": format!("10.{}.{}.10", 200 + i / 256, i % 256)}]}
        }));
    }
    out
}

/// `(median wall time, requests per run, gateways planned)`.
fn measure(rt: &tokio::runtime::Runtime, n: usize) -> (Duration, u64, u64) {
    let mut settings = SettingsFile::default();
    // The benchmark reads; it does not need the operator to reconcile every gateway.
    settings.operator.gateways = (0..n)
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
            scenario: objects(n),
            settings,
            port: 0,
            data_plane: None,
        }))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    sb.write_kubeconfig(&kc).unwrap();
    let mut runs = Vec::new();
    let mut requests = 0;
    let mut planned = 0;
    for run in 0..3 {
        let out_dir = dir.path().join(format!("plans-{run}"));
        let before = sb.requests.load(Ordering::Relaxed);
        let t = Instant::now();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_vpnmig"))
            .env("KUBECONFIG", &kc)
            .args([
                "plan",
                "-A",
                "-o",
                "json",
                "--out",
                out_dir.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        runs.push(t.elapsed());
        requests = sb.requests.load(Ordering::Relaxed) - before;
        // 4: paused gateways are not Ready, so every plan is blocked (source-ready).
        assert!(
            out.status.code() == Some(0) || out.status.code() == Some(4),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let fleet: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        planned = fleet["totals"]["gateways"].as_u64().unwrap();
    }
    rt.block_on(sb.shutdown());
    runs.sort();
    (runs[1], requests, planned)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!(
        "vpnmig plan -A --out DIR (sandbox on 127.0.0.1, release build; 50 namespaces, one PSK Secret a gateway)"
    );
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    for n in [500, 2000] {
        let (wall, requests, planned) = measure(&rt, n);
        println!(
            "  {planned} gateways: wall time median {:.0} ms (3 runs), {:.2} ms per gateway; {requests} API requests ({:.2} per gateway)",
            ms(wall),
            ms(wall) / planned as f64,
            requests as f64 / planned as f64
        );
    }
    println!("  target: 2,000 gateways under 5000 ms, the cost per gateway not growing with N");
}
