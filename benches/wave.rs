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
        data_plane: None,
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
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "gateways never Ready"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    sb.write_kubeconfig(&kubeconfig).unwrap();
    Live {
        sb,
        kubeconfig,
        dir,
    }
}

/// Run the built vpnmig (under `/usr/bin/time` when there is one): its output, wall
/// time, CPU seconds and peak RSS (KiB).
pub fn vpnmig(
    kc: &Path,
    cwd: &Path,
    args: &[&str],
) -> (std::process::Output, Duration, Option<f64>, Option<u64>) {
    let timed = Path::new("/usr/bin/time").exists();
    let report = cwd.join("time.txt");
    let mut cmd = if timed {
        let mut c = std::process::Command::new("/usr/bin/time");
        c.arg("-o")
            .arg(&report)
            .args(["-f", "%U %S %M", env!("CARGO_BIN_EXE_vpnmig")]);
        c
    } else {
        std::process::Command::new(env!("CARGO_BIN_EXE_vpnmig"))
    };
    let t = Instant::now();
    let out = cmd
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
    let (mut cpu, mut rss) = (None, None);
    if timed && let Ok(text) = std::fs::read_to_string(&report) {
        let f: Vec<&str> = text.split_whitespace().rev().take(3).collect();
        if let [m, s, u] = f[..] {
            cpu = Some(u.parse::<f64>().unwrap_or(0.0) + s.parse::<f64>().unwrap_or(0.0));
            rss = m.parse().ok();
        }
    }
    (out, wall, cpu, rss)
}

/// When each step of one gateway's window happened, as the store saw it.
type Marks = BTreeMap<&'static str, Instant>;

/// The steps, in order: the window's Lease, the journal's phases, the operator's answers.
const STEPS: [&str; 11] = [
    "lease", "started", "deleting", "gone", "deleted", "applied", "fip", "attached", "ready-op",
    "ready", "done",
];

fn condition_true(o: &Value, type_: &str) -> bool {
    o["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == type_ && c["status"] == "True")
    })
}

/// Per gateway `ns/name`, when each of [`STEPS`] first happened; recorded until `stop`.
async fn watch_marks(
    sb: &Sandbox,
    stop: tokio::sync::oneshot::Receiver<()>,
) -> BTreeMap<String, Marks> {
    let mut marks: BTreeMap<String, Marks> = BTreeMap::new();
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
            let o = &e.object;
            let ns = o["metadata"]["namespace"].as_str().unwrap_or_default();
            let name = o["metadata"]["name"].as_str().unwrap_or_default();
            let mut mark = |gw: &str, step: &'static str| {
                marks
                    .entry(format!("{ns}/{gw}"))
                    .or_default()
                    .entry(step)
                    .or_insert(now);
            };
            match e.gvr.plural.as_str() {
                "leases" => {
                    if let Some(gw) = name.strip_prefix("vpnmig-") {
                        mark(gw, "lease");
                    }
                }
                "configmaps" => {
                    if let (Some(gw), Some(phase)) =
                        (name.strip_prefix("vpnmig-"), o["data"]["phase"].as_str())
                        && let Some(step) = STEPS.iter().find(|s| **s == phase)
                    {
                        mark(gw, step);
                    }
                }
                "ipsecgateways" if e.kind == EventKind::Deleted => mark(name, "gone"),
                "vpngateways" => {
                    if condition_true(o, "FIPAttached") {
                        mark(name, "fip");
                    }
                    if condition_true(o, "Ready") {
                        mark(name, "ready-op");
                    }
                }
                _ => {}
            }
        }
    }
}

/// What one run of vpnmig took: wall time, API requests, marks per gateway, stdout, and
/// the process's CPU seconds (user + system) and peak RSS in KiB (from `/usr/bin/time`).
struct Observed {
    wall: Duration,
    requests: u64,
    marks: BTreeMap<String, Marks>,
    stdout: Vec<u8>,
    cpu: Option<f64>,
    /// The sandbox operator's reconcile passes during the run.
    operator: vpnmig_sandbox::operator::PassStats,
}

fn observed(rt: &tokio::runtime::Runtime, l: &Live, args: &[&str]) -> Observed {
    let before = l.sb.requests.load(Ordering::Relaxed);
    let passes = l.sb.operator.pass_stats();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (marks, (out, wall, cpu, _)) = rt.block_on(async {
        let observer = watch_marks(&l.sb, rx);
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
    Observed {
        wall,
        requests: l.sb.requests.load(Ordering::Relaxed) - before,
        marks,
        stdout: out.stdout,
        cpu,
        operator: {
            let p = l.sb.operator.pass_stats();
            vpnmig_sandbox::operator::PassStats {
                passes: p.passes - passes.passes,
                busy: p.busy - passes.busy,
                longest: p.longest,
            }
        },
    }
}

/// The median time of each step after the one before, over the gateways that have both.
fn steps(marks: &BTreeMap<String, Marks>) -> String {
    let mut out = Vec::new();
    for w in STEPS.windows(2) {
        let v: Vec<f64> = marks
            .values()
            .filter_map(|m| Some(secs(m.get(w[1])?.saturating_duration_since(*m.get(w[0])?))))
            .collect();
        if !v.is_empty() {
            let mut v = v;
            v.sort_by(f64::total_cmp);
            out.push(format!(
                "{}→{} {:.2}/{:.2}",
                w[0],
                w[1],
                v[v.len() / 2],
                v[v.len() - 1]
            ));
        }
    }
    out.join(", ")
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

    let show = |what: &str, o: &Observed| {
        println!(
            "  {what:<40} {:6.1} s, {} API requests, vpnmig CPU {}",
            secs(o.wall),
            o.requests,
            o.cpu.map_or("?".into(), |c| format!("{c:.1} s"))
        );
        println!(
            "    sandbox operator: {} reconcile passes, busy {:.1} s ({:.0}% of the wall time), longest pass {:.0} ms",
            o.operator.passes,
            secs(o.operator.busy),
            100.0 * secs(o.operator.busy) / secs(o.wall),
            o.operator.longest.as_secs_f64() * 1000.0
        );
        println!("    steps (median/max s): {}", steps(&o.marks));
    };
    // One window alone, in a sandbox with that one gateway.
    let alone = rt.block_on(start(1));
    let one = observed(&rt, &alone, &["cutover", "gw000", "-n", "wave-00", "--yes"]);
    rt.block_on(alone.sb.shutdown());
    show("one window alone (1-gateway sandbox):", &one);

    let l = rt.block_on(start(n));
    // One window alone in the N-gateway sandbox: what the cluster's size costs a window.
    let last = format!("gw{:03}", n - 1);
    let last_ns = format!("wave-{:02}", (n - 1) / 10);
    if n > 1 {
        let big = observed(&rt, &l, &["cutover", &last, "-n", &last_ns, "--yes"]);
        show(&format!("one window alone ({n}-gateway sandbox):"), &big);
    }
    let k_s = k.to_string();
    let wave = observed(
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
    let doc: Value = serde_json::from_slice(&wave.stdout).unwrap();
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
    let ideal = rounds as f64 * secs(one.wall);
    show(
        &format!(
            "wave ({done} done, {} skipped-done):",
            gateways
                .iter()
                .filter(|g| g["result"] == "skipped-done")
                .count()
        ),
        &wave,
    );
    println!("    window each: {}", spread(ms("elapsedMs")));
    println!("    outage each: {}", spread(ms("outageMs")));
    println!(
        "  ratio wave / (ceil({n}/{k}) = {rounds} × one window alone = {ideal:.1} s): {:.2} (target 1.3)",
        secs(wave.wall) / ideal
    );
    println!(
        "  API requests per gateway: {:.1} in the wave ({} in all; one window alone: {})",
        wave.requests as f64 / n as f64,
        wave.requests,
        one.requests
    );
    rt.block_on(l.sb.shutdown());
}
