//! `vpnmig plan -A --out DIR` over 2,000 gateways in the sandbox (issue 15 item 6 and
//! issue 25 item 5: target under 5 s on this machine, the cost per gateway not growing
//! with N). Prints the wall time of the real binary (median of 3), the API requests it
//! made, per gateway, at 500 and at 2,000 gateways; and beside it `kubectl get
//! ipsecgateways,secrets -A -o json` against the same sandbox, timed the same way (3
//! runs, no warm-up, the median): the objects the plan reads (it lists the gateways and
//! reads each one's PSK Secret), listed and printed, what the API alone costs.
//!
//! Setup: the operator pauses every gateway and, once the emulator serves, its
//! operator, GitOps controllers and garbage collector are stopped: the benchmark only
//! reads the cluster, and their ticks would walk every object beside it.
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

/// `(median wall time, requests per run, gateways planned)` of vpnmig, and kubectl's
/// `(median wall time, requests per run)` when it ran.
#[allow(clippy::type_complexity)]
fn measure(
    rt: &tokio::runtime::Runtime,
    n: usize,
) -> ((Duration, u64, u64), Option<(Duration, u64)>) {
    let mut settings = SettingsFile::default();
    settings.gc.paused = true;
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
    // Nothing runs beside the API server while vpnmig and kubectl read: the benchmark
    // only reads, and the emulator's controllers would otherwise walk every object on
    // their ticks (the garbage collector every 50 ms, the operator every 25 ms), taking
    // a core a real API server would not.
    sb.operator.shutdown();
    sb.gitops.shutdown();
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
    runs.sort();
    let kubectl = kubectl(&sb, &kc, dir.path());
    rt.block_on(sb.shutdown());
    ((runs[1], requests, planned), kubectl)
}

/// `kubectl get ipsecgateways,secrets -A -o json`, 3 runs as vpnmig's: the median wall
/// time and the requests of one run; `None` when kubectl is not there or failed.
fn kubectl(sb: &Sandbox, kc: &std::path::Path, dir: &std::path::Path) -> Option<(Duration, u64)> {
    let mut runs = Vec::new();
    let mut requests = 0;
    for _ in 0..3 {
        let before = sb.requests.load(Ordering::Relaxed);
        let t = Instant::now();
        let out = std::process::Command::new("kubectl")
            .env("KUBECONFIG", kc)
            // kubectl's discovery cache, private to this run of the benchmark.
            .env("KUBECACHEDIR", dir.join("kube-cache"))
            .args(["get", "ipsecgateways,secrets", "-A", "-o", "json"])
            .output()
            .ok()?;
        runs.push(t.elapsed());
        requests = sb.requests.load(Ordering::Relaxed) - before;
        if !out.status.success() {
            return None;
        }
    }
    runs.sort();
    Some((runs[1], requests))
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
        let ((wall, requests, planned), kubectl) = measure(&rt, n);
        println!(
            "  {planned} gateways: wall time median {:.0} ms (3 runs), {:.2} ms per gateway; {requests} API requests ({:.2} per gateway)",
            ms(wall),
            ms(wall) / planned as f64,
            requests as f64 / planned as f64
        );
        match kubectl {
            Some((wall, requests)) => println!(
                "    beside it, kubectl get ipsecgateways,secrets -A -o json: wall time median {:.0} ms (3 runs); {requests} API requests",
                ms(wall)
            ),
            None => println!("    kubectl: not run (not on PATH, or it failed)"),
        }
    }
    println!("  target: 2,000 gateways under 5000 ms, the cost per gateway not growing with N");
}
