//! A cutover wave (issue 15 item 6): N single-tunnel gateways on the sandbox with the
//! operator timings of `fixtures/clusters/settings-realistic.yaml` (no fault knobs), K
//! windows at a time, run by the real built binary. Prints the wave's wall time, one
//! gateway's window alone with the same settings (in a one-gateway sandbox, and in the
//! N-gateway sandbox before the wave), the ratio wave / (ceil(N/K) × one window) against
//! the target of 1.3, the API requests per gateway, and each window's time and
//! its operator unwind (delete of the IPsecGateway → gone) as the sandbox saw them.
//!
//! Run: `cargo bench --bench wave` (N = 100, K = 20: a few minutes);
//! `WAVE_N=20 WAVE_K=5 cargo bench --bench wave` for a smaller one.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use vpnmig_sandbox::store::EventKind;
use vpnmig_sandbox::{Config, Sandbox, SettingsFile};

const REALISTIC: &str = include_str!("../fixtures/clusters/settings-realistic.yaml");

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&v| v > 0)
        .unwrap_or(default)
}

/// `n` single-tunnel IPsecGateways `gw000…`, ten to a namespace, labelled `tier=bronze`,
/// each with its PSK Secret, a pinned FIP and a distinct service CIDR and peer.
fn scenario(n: usize) -> Vec<Value> {
    let mut out = Vec::new();
    for ns in 0..n.div_ceil(10) {
        out.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("wave-{ns:02}")}}));
    }
    for i in 0..n {
        let (ns, name) = (format!("wave-{:02}", i / 10), format!("gw{i:03}"));
        let fip = format!("192.0.{}.{}", 2 + i / 200, 10 + i % 200);
        out.push(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": format!("{name}-psk"), "namespace": ns},
            "type": "Opaque", "stringData": {"psk": format!("rehearsal-only-{name}")}
        }));
        out.push(json!({
            "apiVersion": "ipsec.bnerd.net/v1alpha1", "kind": "IPsecGateway",
            "metadata": {"name": name, "namespace": ns, "labels": {"tier": "bronze"}},
            "spec": {
                "endpoint": {"floatingIP": fip, "network": "public"},
                "auth": {"pskSecretRef": {"name": format!("{name}-psk"), "key": "psk"}},
                "ike": {"version": 2, "proposals": ["aes256-sha256-modp2048"], "lifetime": "24h"},
                "tunnels": [{"name": "main", "peer": {"address": format!("100.64.{}.{}", i / 250, 1 + i % 250), "id": format!("fw.{name}.example")},
                             "remoteSubnets": [format!("10.{}.{}.0/24", 100 + i / 256, i % 256)],
                             "esp": {"proposals": ["aes256gcm16-modp2048"], "lifetime": "1h"}}],
                "exposures": [{"name": "crm", "target": {"address": "crm.svc", "port": 443}, "protocol": "TCP"}]
            },
            "status": {"serviceCIDR": format!("10.{}.{}.0/24", 200 + i / 256, i % 256), "floatingIP": fip,
                       "exposures": [{"name": "crm", "virtualIP": format!("10.{}.{}.10", 200 + i / 256, i % 256)}]}
        }));
    }
    out
}

/// settings-realistic.yaml's operator timings, nothing else: no fault knobs, no API
/// latency, a service CIDR pool with room for every gateway.
fn settings() -> SettingsFile {
    let file: SettingsFile = serde_saphyr::from_str(REALISTIC).unwrap();
    let mut s = SettingsFile::default();
    s.operator.finalizer_delay_ms = file.operator.finalizer_delay_ms;
    s.operator.openstack_delay_ms = file.operator.openstack_delay_ms;
    s.operator.peer_retry_ms = file.operator.peer_retry_ms;
    s.operator.service_cidr_pool = "10.200.0.0/14".into();
    s
}

struct Live {
    sb: Sandbox,
    kubeconfig: std::path::PathBuf,
    dir: tempfile::TempDir,
}

async fn start(n: usize) -> Live {
    let sb = Sandbox::start(Config {
        scenario: scenario(n),
        settings: settings(),
        port: 0,
    })
    .await
    .unwrap();
    let rt = sb
        .store
        .resource("ipsec.bnerd.net", "v1alpha1", "ipsecgateways")
        .unwrap();
    // Every gateway reconciled and Ready before anything is timed.
    let t = Instant::now();
    loop {
        let (all, _) = sb.store.list(&rt, None);
        if all.iter().all(|g| {
            g["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
        }) {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(120), "gateways never Ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    sb.write_kubeconfig(&kubeconfig).unwrap();
    Live { sb, kubeconfig, dir }
}

fn vpnmig(kc: &Path, cwd: &Path, args: &[&str]) -> (std::process::Output, Duration) {
    let t = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vpnmig"))
        .current_dir(cwd)
        .env("KUBECONFIG", kc)
        .env("VPNMIG_STATE_DIR", cwd.join("state"))
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .unwrap();
    let wall = t.elapsed();
    assert!(
        out.status.success(),
        "vpnmig {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, wall)
}

/// Per IPsecGateway `ns/name`: when the store saw its delete request (deletionTimestamp
/// set) and when it was gone; recorded until `stop`.
async fn unwinds(
    sb: &Sandbox,
    stop: tokio::sync::oneshot::Receiver<()>,
) -> BTreeMap<String, (Option<Instant>, Option<Instant>)> {
    let mut marks: BTreeMap<String, (Option<Instant>, Option<Instant>)> = BTreeMap::new();
    let mut changes = sb.store.subscribe();
    let mut seen = sb.store.resource_version();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => return marks,
            r = changes.changed() => if r.is_err() { return marks },
        }
        let now = Instant::now();
        for e in sb.store.events_after(seen).unwrap_or_default() {
            seen = seen.max(e.rv);
            if e.gvr.plural != "ipsecgateways" {
                continue;
            }
            let o = &e.object;
            let key = format!(
                "{}/{}",
                o["metadata"]["namespace"].as_str().unwrap_or_default(),
                o["metadata"]["name"].as_str().unwrap_or_default()
            );
            let m = marks.entry(key).or_default();
            if e.kind == EventKind::Deleted {
                m.1.get_or_insert(now);
            } else if o["metadata"]["deletionTimestamp"].is_string() {
                m.0.get_or_insert(now);
            }
        }
    }
}

/// Run `args` with the sandbox observed: (wall time, API requests, unwind per gateway, stdout).
fn observed(
    rt: &tokio::runtime::Runtime,
    l: &Live,
    args: &[&str],
) -> (Duration, u64, Vec<Duration>, Vec<u8>) {
    let before = l.sb.requests.load(Ordering::Relaxed);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (marks, (out, wall)) = rt.block_on(async {
        let observer = unwinds(&l.sb, rx);
        let run = async {
            let (kc, cwd) = (l.kubeconfig.clone(), l.dir.path().to_path_buf());
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            let r = tokio::task::spawn_blocking(move || {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                vpnmig(&kc, &cwd, &args)
            })
            .await
            .unwrap();
            let _ = tx.send(());
            r
        };
        tokio::join!(observer, run)
    });
    let requests = l.sb.requests.load(Ordering::Relaxed) - before;
    let unwind: Vec<Duration> = marks
        .values()
        .filter_map(|(a, b)| Some(b.as_ref()?.saturating_duration_since(*a.as_ref()?)))
        .collect();
    (wall, requests, unwind, out.stdout)
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn spread(mut v: Vec<f64>) -> String {
    if v.is_empty() {
        return "none".into();
    }
    v.sort_by(f64::total_cmp);
    format!(
        "min {:.1} s, median {:.1} s, max {:.1} s",
        v[0],
        v[v.len() / 2],
        v[v.len() - 1]
    )
}

fn main() {
    let n = env_usize("WAVE_N", 100);
    let k = env_usize("WAVE_K", 20).min(n);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let s = settings();
    println!(
        "vpnmig cutover wave: {n} single-tunnel gateways, --concurrency {k}, sandbox on 127.0.0.1, release build; \
         operator as settings-realistic.yaml (finalizer {} ms, OpenStack {} ms, peer retry {} ms)",
        s.operator.finalizer_delay_ms, s.operator.openstack_delay_ms, s.operator.peer_retry_ms
    );

    // One window alone, in a sandbox with that one gateway.
    let alone = rt.block_on(start(1));
    let (one, one_requests, one_unwind, _) = observed(
        &rt,
        &alone,
        &["cutover", "gw000", "-n", "wave-00", "--yes"],
    );
    rt.block_on(alone.sb.shutdown());
    println!(
        "  one window alone (1-gateway sandbox):        {:6.1} s, unwind {}, {one_requests} API requests",
        secs(one),
        spread(one_unwind.iter().map(|d| secs(*d)).collect())
    );

    let l = rt.block_on(start(n));
    // One window alone in the N-gateway sandbox: what the cluster's size costs a window.
    let last = format!("gw{:03}", n - 1);
    let last_ns = format!("wave-{:02}", (n - 1) / 10);
    let (one_big, one_big_requests, one_big_unwind, _) = if n > 1 {
        observed(&rt, &l, &["cutover", &last, "-n", &last_ns, "--yes"])
    } else {
        (Duration::ZERO, 0, Vec::new(), Vec::new())
    };
    if n > 1 {
        println!(
            "  one window alone ({n}-gateway sandbox):     {:6.1} s, unwind {}, {one_big_requests} API requests",
            secs(one_big),
            spread(one_big_unwind.iter().map(|d| secs(*d)).collect())
        );
    }
    let k_s = k.to_string();
    let (wave, requests, unwind, stdout) = observed(
        &rt,
        &l,
        &[
            "cutover",
            "-A",
            "-l",
            "tier=bronze",
            "--concurrency",
            &k_s,
            "--max-failures",
            "1",
            "--yes",
            "-o",
            "json",
        ],
    );
    let doc: Value = serde_json::from_slice(&stdout).unwrap();
    let gateways = doc["gateways"].as_array().unwrap();
    let done = gateways.iter().filter(|g| g["result"] == "done").count();
    let ms = |key: &str| -> Vec<f64> {
        gateways
            .iter()
            .filter(|g| g["result"] == "done")
            .filter_map(|g| g[key].as_f64())
            .map(|v| v / 1000.0)
            .collect()
    };
    let rounds = n.div_ceil(k);
    let ideal = rounds as f64 * secs(one);
    println!(
        "  wave:                                        {:6.1} s ({done} done, {} skipped-done)",
        secs(wave),
        gateways
            .iter()
            .filter(|g| g["result"] == "skipped-done")
            .count()
    );
    println!("    window each: {}", spread(ms("elapsedMs")));
    println!("    outage each: {}", spread(ms("outageMs")));
    println!(
        "    unwind each (delete → gone): {}",
        spread(unwind.iter().map(|d| secs(*d)).collect())
    );
    println!(
        "  ratio wave / (ceil({n}/{k}) = {rounds} × one window alone = {ideal:.1} s): {:.2} (target 1.3)",
        secs(wave) / ideal
    );
    println!(
        "  API requests: {requests} for the wave, {:.1} per gateway (one window alone: {one_requests})",
        requests as f64 / n as f64
    );
    rt.block_on(l.sb.shutdown());
}
