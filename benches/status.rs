//! `vpnmig status -A` with 2,000 gateways in the sandbox (issue target: under 2 s), or
//! `STATUS_N` of them (issue 15 item 4: 20,000 under 5 s). Prints the wall time of the
//! real binary (median of 5 runs), its peak RSS (from `/usr/bin/time`), the API requests
//! of one run (the lists are paged: `limit` 500 and `continue`), and the sandbox's setup.
//!
//! Run: `cargo bench --bench status`; `STATUS_N=20000 cargo bench --bench status`.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::json;
use vpnmig_sandbox::{Config, Sandbox, SettingsFile};

/// Distinct addresses for up to 65,536 gateways.
fn gateway(i: usize) -> serde_json::Value {
    let (hi, lo) = ((i >> 8) & 255, i & 255);
    json!({
        "apiVersion": "ipsec.bnerd.net/v1alpha1", "kind": "IPsecGateway",
        "metadata": {"name": format!("client-{i:04}"), "namespace": format!("tenant-{:02}", i % 50)},
        "spec": {
            "endpoint": {"floatingIP": format!("198.{}.{}.{}", 18 + i / 65536, (i / 256) % 256, i % 256), "network": "public"},
            "auth": {"pskSecretRef": {"name": "psk", "key": "psk"}},
            "ike": {"version": 2, "proposals": ["aes256-sha256-modp2048"]},
            "tunnels": [{"name": "main", "peer": {"address": "203.0.113.10"}, "remoteSubnets": [format!("100.{}.{hi}.{lo}/32", 64 + (i >> 16))], "esp": {"proposals": ["aes256gcm16-modp2048"]}}],
            "exposures": [{"name": "crm", "target": {"address": "crm.svc", "port": 443}, "protocol": "TCP"}]
        },
        "status": {"serviceCIDR": format!("10.{hi}.{lo}.0/24"), "floatingIP": format!("198.{}.{}.{}", 18 + i / 65536, (i / 256) % 256, i % 256), "exposures": [{"name": "crm", "virtualIP": format!("10.{hi}.{lo}.10")}]}
    })
}

fn main() {
    let gateways: usize = std::env::var("STATUS_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0 && n <= 65536)
        .unwrap_or(2000);
    let target_ms = if gateways > 2000 { 5000 } else { 2000 };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let t = Instant::now();
    let objects: Vec<_> = (0..gateways).map(gateway).collect();
    let mut settings = SettingsFile::default();
    // The operator would need 2,000 floating IPs in its pool; the benchmark reads, it
    // does not need the operator's reconciliation of every gateway.
    settings.operator.gateways = (0..gateways)
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
            data_plane: None,
        }))
        .unwrap();
    let setup = t.elapsed();
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    sb.write_kubeconfig(&kc).unwrap();

    let timed = std::path::Path::new("/usr/bin/time").exists();
    let report = dir.path().join("time.txt");
    let mut runs = Vec::new();
    let mut rss_kib = Vec::new();
    let mut rows = 0;
    let mut requests = 0;
    for _ in 0..5 {
        let mut cmd = if timed {
            let mut c = std::process::Command::new("/usr/bin/time");
            c.arg("-o")
                .arg(&report)
                .args(["-f", "%M", env!("CARGO_BIN_EXE_vpnmig")]);
            c
        } else {
            std::process::Command::new(env!("CARGO_BIN_EXE_vpnmig"))
        };
        let before = sb.requests.load(Ordering::Relaxed);
        let t = Instant::now();
        let out = cmd
            .env("KUBECONFIG", &kc)
            .args(["status", "-A", "-o", "json"])
            .output()
            .unwrap();
        runs.push(t.elapsed());
        requests = sb.requests.load(Ordering::Relaxed) - before;
        if let Some(kib) = std::fs::read_to_string(&report)
            .ok()
            .and_then(|t| t.split_whitespace().last()?.parse::<u64>().ok())
        {
            rss_kib.push(kib);
        }
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // docs/status-json.md: an object whose `gateways` are the rows.
        rows = serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["gateways"]
            .as_array()
            .unwrap()
            .len();
    }
    runs.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "vpnmig status -A over {gateways} IPsecGateways in 50 namespaces (sandbox on 127.0.0.1, release build)"
    );
    println!("  rows: {rows}");
    println!(
        "  wall time: median {:.0} ms, min {:.0} ms, max {:.0} ms (5 runs; target < {target_ms} ms)",
        ms(runs[2]),
        ms(runs[0]),
        ms(runs[4])
    );
    rss_kib.sort();
    match rss_kib.last() {
        Some(max) => println!(
            "  peak RSS of the vpnmig process: {:.1} MiB (largest of {} runs)",
            *max as f64 / 1024.0,
            rss_kib.len()
        ),
        None => println!("  peak RSS: /usr/bin/time not found"),
    }
    println!(
        "  API requests of one run: {requests} (lists paged {} objects a request: {} pages of IPsecGateways)",
        vpnmig::cluster::list::PAGE,
        gateways.div_ceil(vpnmig::cluster::list::PAGE as usize)
    );
    println!("  (sandbox setup: {:.0} ms)", ms(setup));
    rt.block_on(sb.shutdown());
}
