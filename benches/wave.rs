//! A cutover wave (issue 15 item 6, issue 25 item 5): N single-tunnel gateways with the
//! operator timings of `fixtures/clusters/settings-realistic.yaml` (no fault knobs), K
//! windows at a time, run by the real built binary. Prints the wave's wall time, one
//! gateway's window alone with the same settings (in a one-gateway cluster, and in the
//! N-gateway cluster before the wave), the ratio wave / (ceil(N/K) × one window) against
//! the issue's target of 1.3, the API requests per gateway, and each window's steps
//! (journal phases, the operator's unwind and conditions) as the cluster showed them.
//!
//! Two backends (`WAVE_CONTROL_PLANE`):
//! - `real` (the default where `tests/controlplane/build.sh` has built it): etcd,
//!   kube-apiserver, kube-controller-manager and kwok, with the simulated operator as a
//!   per-object controller (a work queue of gateway keys, several workers), as the live
//!   tests' real backend runs it (`tests/live/bed.rs`). vpnmig talks to kube-apiserver
//!   through the fault proxy (no faults set), which counts its requests. Beside vpnmig's
//!   figures: the runbook's kubectl commands (`kubectl delete`, `kubectl apply -f`,
//!   `kubectl wait --for=condition=…`, `kubectl exec … swanctl --list-sas` until
//!   ESTABLISHED) for one gateway alone and for a wave of the same gateways K at a time,
//!   in a second N-gateway cluster (the manifests from `vpnmig plan -A --out`, not timed).
//! - `emulated`: the project's API emulator with its single-pass operator.
//!
//! Run: `cargo bench --bench wave` (N = 100, K = 20: several minutes on the real control
//! plane, most of it loading the clusters); `WAVE_N=20 WAVE_K=5 cargo bench --bench wave`
//! for a smaller one; `WAVE_DATA_PLANE=strongswan` (root, Debian's strongSwan packages,
//! emulator only) runs it with real tunnels: a charon per gateway pod and per client
//! site, and prints the longest gap in each client's probe answers during the wave.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::watcher;
use serde_json::{Value, json};
use vpnmig_sandbox::store::EventKind;
use vpnmig_sandbox::{Config, Sandbox, SettingsFile};

#[path = "../tests/live/mod.rs"]
mod live;

use live::bed::{Backend, Bed, Scenario};

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

/// Where the wave runs: `WAVE_CONTROL_PLANE=real|emulated`; by default the real control
/// plane where it is built (said when it is not), the emulator with real tunnels.
fn backend() -> Backend {
    let built = vpnmig_sandbox::controlplane::built();
    match std::env::var("WAVE_CONTROL_PLANE").as_deref() {
        Ok("real") => {
            if let Err(e) = built {
                panic!("WAVE_CONTROL_PLANE=real: {e}");
            }
            assert!(
                !real_plane(),
                "WAVE_DATA_PLANE=strongswan runs on the emulator only (WAVE_CONTROL_PLANE=emulated)"
            );
            Backend::Real
        }
        Ok("emulated") => Backend::Emulated,
        Ok(other) => panic!("WAVE_CONTROL_PLANE={other}: say real or emulated"),
        Err(_) if real_plane() => {
            println!(
                "WAVE_DATA_PLANE=strongswan: on the emulator (the real tunnels run with it only)"
            );
            Backend::Emulated
        }
        Err(_) => match built {
            Ok(_) => Backend::Real,
            Err(e) => {
                println!("on the emulator, not the real control plane: {e}");
                Backend::Emulated
            }
        },
    }
}

struct Live {
    sb: Sandbox,
    kubeconfig: std::path::PathBuf,
    dir: tempfile::TempDir,
}

/// `WAVE_DATA_PLANE=strongswan`: real tunnels.
fn real_plane() -> bool {
    std::env::var("WAVE_DATA_PLANE").as_deref() == Ok("strongswan")
}

async fn start(n: usize) -> Live {
    let dir = tempfile::tempdir().unwrap();
    let sb = Sandbox::start(Config {
        scenario: scenario(n),
        settings: settings(),
        port: 0,
        data_plane: real_plane().then(|| dir.path().join("sandbox")),
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
    let kubeconfig = dir.path().join("kubeconfig");
    sb.write_kubeconfig(&kubeconfig).unwrap();
    Live {
        sb,
        kubeconfig,
        dir,
    }
}

/// The real control plane with `n` gateways loaded through its API and Ready (the live
/// tests' bed: the per-object operator, the fault proxy in front of kube-apiserver).
fn start_real(rt: &tokio::runtime::Runtime, n: usize) -> Bed {
    let yaml: Vec<String> = scenario(n)
        .iter()
        .map(|o| serde_json::to_string(o).unwrap())
        .collect();
    let t = Instant::now();
    let b = rt
        .block_on(Bed::start(
            Backend::Real,
            Scenario::built(yaml.join("\n---\n"), settings()),
        ))
        .expect("the real control plane is built");
    println!(
        "  ({n}-gateway control plane started, loaded and Ready in {:.0} s)",
        secs(t.elapsed())
    );
    b
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

/// When each step of one gateway's window happened, as the cluster showed it.
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

/// Record in `marks` what object `o` of `plural` (`deleted`: its removal) says of a
/// window's steps, at `now` unless already recorded.
fn mark(marks: &mut BTreeMap<String, Marks>, plural: &str, deleted: bool, o: &Value, now: Instant) {
    let ns = o["metadata"]["namespace"].as_str().unwrap_or_default();
    let name = o["metadata"]["name"].as_str().unwrap_or_default();
    let mut set = |gw: &str, step: &'static str| {
        marks
            .entry(format!("{ns}/{gw}"))
            .or_default()
            .entry(step)
            .or_insert(now);
    };
    match plural {
        "leases" => {
            if let Some(gw) = name.strip_prefix("vpnmig-") {
                set(gw, "lease");
            }
        }
        "configmaps" => {
            if let (Some(gw), Some(phase)) =
                (name.strip_prefix("vpnmig-"), o["data"]["phase"].as_str())
                && let Some(step) = STEPS.iter().find(|s| **s == phase)
            {
                set(gw, step);
            }
        }
        "ipsecgateways" if deleted => set(name, "gone"),
        "vpngateways" => {
            if condition_true(o, "FIPAttached") {
                set(name, "fip");
            }
            if condition_true(o, "Ready") {
                set(name, "ready-op");
            }
        }
        _ => {}
    }
}

/// Per gateway `ns/name`, when each of [`STEPS`] first happened in the emulator's store;
/// recorded until `stop`.
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
            mark(
                &mut marks,
                &e.gvr.plural,
                e.kind == EventKind::Deleted,
                &e.object,
                now,
            );
        }
    }
}

/// The same from kube-apiserver's watches (as cluster-admin, directly, not through the
/// proxy that counts vpnmig's requests): `ready` is sent once every watch has listed
/// what is there (only later events are marks); recorded until `stop`.
async fn watch_marks_real(
    client: kube::Client,
    ready: tokio::sync::oneshot::Sender<()>,
    stop: tokio::sync::oneshot::Receiver<()>,
) -> BTreeMap<String, Marks> {
    let kinds: [(&str, &str, &str, &str, Option<&str>); 4] = [
        ("coordination.k8s.io", "v1", "leases", "Lease", None),
        (
            "",
            "v1",
            "configmaps",
            "ConfigMap",
            Some("app.kubernetes.io/managed-by=vpnmig"),
        ),
        (
            "ipsec.bnerd.net",
            "v1alpha1",
            "ipsecgateways",
            "IPsecGateway",
            None,
        ),
        (
            "vpn.bnerd.net",
            "v1alpha1",
            "vpngateways",
            "VPNGateway",
            None,
        ),
    ];
    let streams = kinds.map(|(group, version, plural, kind, labels)| {
        let ar = ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: if group.is_empty() {
                version.into()
            } else {
                format!("{group}/{version}")
            },
            kind: kind.into(),
            plural: plural.into(),
        };
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        let mut cfg = watcher::Config::default();
        if let Some(l) = labels {
            cfg = cfg.labels(l);
        }
        watcher(api, cfg).map(move |e| (plural, e)).boxed()
    });
    let mut events = futures::stream::select_all(streams);
    let mut marks: BTreeMap<String, Marks> = BTreeMap::new();
    let (mut listed, mut ready) = (0, Some(ready));
    tokio::pin!(stop);
    loop {
        let (plural, e) = tokio::select! {
            _ = &mut stop => return marks,
            e = events.next() => match e { Some(e) => e, None => return marks },
        };
        let now = Instant::now();
        match e {
            Ok(watcher::Event::InitDone) => {
                listed += 1;
                if listed == kinds.len()
                    && let Some(r) = ready.take()
                {
                    let _ = r.send(());
                }
            }
            Ok(watcher::Event::Apply(o)) => mark(
                &mut marks,
                plural,
                false,
                &serde_json::to_value(o).unwrap(),
                now,
            ),
            Ok(watcher::Event::Delete(o)) => mark(
                &mut marks,
                plural,
                true,
                &serde_json::to_value(o).unwrap(),
                now,
            ),
            // What was there before (a watch listing again after an error included).
            Ok(watcher::Event::Init | watcher::Event::InitApply(_)) | Err(_) => {}
        }
    }
}

/// CPU seconds used so far by this process (the simulated operator, its watches, the fault
/// proxy, the GitOps controllers) and by each process it started directly (etcd,
/// kube-apiserver, kube-controller-manager, kwok), by command name; a child's count has
/// its own ended children (kwok's: the `swanctl` each pod exec runs, which asks the
/// operator). vpnmig runs under `/usr/bin/time`: measured apart.
fn cpu_by_process() -> BTreeMap<String, f64> {
    let me = std::process::id().to_string();
    let mut out = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let pid = e.file_name().to_string_lossy().to_string();
        if !pid.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid … utime stime …`: fields after the comm's `)`.
        let Some((head, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let comm = head.split_once(" (").map(|(_, c)| c).unwrap_or("?");
        let f: Vec<&str> = rest.split_whitespace().collect();
        let (Some(ppid), Some(u), Some(s), Some(cu), Some(cs)) =
            (f.get(1), f.get(11), f.get(12), f.get(13), f.get(14))
        else {
            continue;
        };
        if pid == me || *ppid == me {
            let n = |x: &str| x.parse::<f64>().unwrap_or(0.0);
            let mut ticks = n(u) + n(s);
            if pid != me {
                ticks += n(cu) + n(cs);
            }
            let name = if pid == me { "bench process" } else { comm };
            *out.entry(name.to_string()).or_default() += ticks / 100.0;
        }
    }
    out
}

/// The CPU each process used between `before` and `after`, the most first.
fn cpu_used(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>) -> String {
    let mut v: Vec<(&String, f64)> = after
        .iter()
        .map(|(k, a)| (k, a - before.get(k).copied().unwrap_or(0.0)))
        .filter(|(_, d)| *d >= 0.05)
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v.iter()
        .map(|(k, d)| format!("{k} {d:.1} s"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What one run of vpnmig took: wall time, API requests, marks per gateway, stdout, and
/// the process's CPU seconds (user + system) and peak RSS in KiB (from `/usr/bin/time`).
struct Observed {
    wall: Duration,
    requests: u64,
    marks: BTreeMap<String, Marks>,
    stdout: Vec<u8>,
    cpu: Option<f64>,
    /// The simulated operator's reconciles during the run (passes over every gateway on
    /// the emulator, one gateway key each on the real control plane).
    operator: vpnmig_sandbox::operator::PassStats,
    /// vpnmig's requests by verb, resource and scope (`in NS` or `in all`), the most
    /// first; on the real control plane (the proxy's log).
    kinds: Vec<(String, usize)>,
    /// The CPU the cluster's processes used during the run, and the load average after.
    cluster_cpu: String,
}

fn since(
    before: vpnmig_sandbox::operator::PassStats,
    now: vpnmig_sandbox::operator::PassStats,
) -> vpnmig_sandbox::operator::PassStats {
    vpnmig_sandbox::operator::PassStats {
        passes: now.passes - before.passes,
        busy: now.busy - before.busy,
        longest: now.longest,
        cpu: now.cpu - before.cpu,
    }
}

/// `vpnmig ARGS` on a blocking thread.
async fn run_blocking(
    kc: &Path,
    cwd: &Path,
    args: &[&str],
) -> (std::process::Output, Duration, Option<f64>, Option<u64>) {
    let (kc, cwd) = (kc.to_path_buf(), cwd.to_path_buf());
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        vpnmig(&kc, &cwd, &args)
    })
    .await
    .unwrap()
}

fn observed(rt: &tokio::runtime::Runtime, l: &Live, args: &[&str]) -> Observed {
    let before = l.sb.requests.load(Ordering::Relaxed);
    let passes = l.sb.operator.pass_stats();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (marks, (out, wall, cpu, _)) = rt.block_on(async {
        let observer = watch_marks(&l.sb, rx);
        let run = async {
            let r = run_blocking(&l.kubeconfig, l.dir.path(), args).await;
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
        operator: since(passes, l.sb.operator.pass_stats()),
        kinds: Vec::new(),
        cluster_cpu: String::new(),
    }
}

/// The requests of `log` by verb, resource and whether they name one namespace or all,
/// the most first.
fn by_kind(log: &[vpnmig_sandbox::proxy::Logged]) -> Vec<(String, usize)> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for l in log {
        let scope = if l.namespace.is_some() { "ns" } else { "all" };
        *counts
            .entry(format!("{} {} ({scope})", l.verb, l.resource))
            .or_default() += 1;
    }
    let mut v: Vec<(String, usize)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

/// [`observed`] on the real control plane.
fn observed_real(
    rt: &tokio::runtime::Runtime,
    b: &Bed,
    admin: &kube::Client,
    args: &[&str],
) -> Observed {
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
    let observer = rt.spawn(watch_marks_real(admin.clone(), ready_tx, stop_rx));
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(60), ready_rx)
            .await
            .expect("the watches list within 60 s")
            .expect("the observer runs")
    });
    let before = b.api_requests();
    let logged = b.proxy_log().map_or(0, |l| l.len());
    let passes = b.operator.pass_stats();
    let cpu_before = cpu_by_process();
    let (out, wall, cpu, _) = rt.block_on(run_blocking(&b.kubeconfig, b.cwd(), args));
    let cluster_cpu = format!(
        "{}; load average {}",
        cpu_used(&cpu_before, &cpu_by_process()),
        load()
    );
    let requests = b.api_requests() - before;
    let kinds = by_kind(&b.proxy_log().unwrap_or_default()[logged..]);
    let operator = since(passes, b.operator.pass_stats());
    // The watch events of the run's last writes arrive within moments.
    std::thread::sleep(Duration::from_millis(500));
    let _ = stop_tx.send(());
    let marks = rt.block_on(observer).unwrap();
    Observed {
        wall,
        requests,
        marks,
        stdout: out.stdout,
        cpu,
        operator,
        kinds,
        cluster_cpu,
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

fn show(what: &str, o: &Observed, operator: &str) {
    println!(
        "  {what:<44} {:6.1} s, {} API requests, vpnmig CPU {}",
        secs(o.wall),
        o.requests,
        o.cpu.map_or("?".into(), |c| format!("{c:.1} s"))
    );
    println!(
        "    {operator}: {} reconciles, busy {:.1} s ({:.0}% of the wall time, {:.1} s of it CPU), longest {:.0} ms",
        o.operator.passes,
        secs(o.operator.busy),
        100.0 * secs(o.operator.busy) / secs(o.wall),
        secs(o.operator.cpu),
        o.operator.longest.as_secs_f64() * 1000.0
    );
    println!("    steps (median/max s): {}", steps(&o.marks));
    if !o.cluster_cpu.is_empty() {
        println!("    CPU of the cluster during it: {}", o.cluster_cpu);
    }
    if !o.kinds.is_empty() {
        let top: Vec<String> = o
            .kinds
            .iter()
            .take(10)
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        println!("    requests by kind: {}", top.join(", "));
    }
}

/// The wave's own figures from its JSON document: done and skipped-done counts, each
/// window's time and outage.
fn wave_summary(stdout: &[u8]) -> (usize, usize, Vec<f64>, Vec<f64>) {
    let doc: Value = serde_json::from_slice(stdout).unwrap();
    let gateways = doc["gateways"].as_array().unwrap();
    let count = |r: &str| gateways.iter().filter(|g| g["result"] == r).count();
    let ms = |key: &str| -> Vec<f64> {
        gateways
            .iter()
            .filter(|g| g["result"] == "done")
            .filter_map(|g| g[key].as_f64())
            .map(|v| v / 1000.0)
            .collect()
    };
    (
        count("done"),
        count("skipped-done"),
        ms("elapsedMs"),
        ms("outageMs"),
    )
}

fn wave_args(k: &str) -> [&str; 11] {
    [
        "cutover",
        "-A",
        "-l",
        "tier=bronze",
        "--concurrency",
        k,
        "--max-failures",
        "1",
        "--yes",
        "-o",
        "json",
    ]
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn main() {
    let n = env_usize("WAVE_N", 100);
    let k = env_usize("WAVE_K", 20).min(n);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let _ctx = rt.enter();
    match backend() {
        Backend::Emulated => emulated(&rt, n, k),
        Backend::Real => real(&rt, n, k),
    }
    println!("  load average at the end: {}", load());
}

fn emulated(rt: &tokio::runtime::Runtime, n: usize, k: usize) {
    let s = settings();
    println!(
        "vpnmig cutover wave: {n} single-tunnel gateways, --concurrency {k}, API emulator on 127.0.0.1 (single-pass operator), release build; \
         operator as settings-realistic.yaml (finalizer {} ms, OpenStack {} ms, peer retry {} ms); load average {}",
        s.operator.finalizer_delay_ms,
        s.operator.openstack_delay_ms,
        s.operator.peer_retry_ms,
        load()
    );
    let op = "sandbox operator";
    // One window alone, in a sandbox with that one gateway.
    let alone = rt.block_on(start(1));
    let one = observed(rt, &alone, &["cutover", "gw000", "-n", "wave-00", "--yes"]);
    rt.block_on(alone.sb.shutdown());
    show("one window alone (1-gateway sandbox):", &one, op);

    let l = rt.block_on(start(n));
    // One window alone in the N-gateway sandbox: what the cluster's size costs a window.
    let last = format!("gw{:03}", n - 1);
    let last_ns = format!("wave-{:02}", (n - 1) / 10);
    if n > 1 {
        let big = observed(rt, &l, &["cutover", &last, "-n", &last_ns, "--yes"]);
        show(
            &format!("one window alone ({n}-gateway sandbox):"),
            &big,
            op,
        );
    }
    let k_s = k.to_string();
    let wave = observed(rt, &l, &wave_args(&k_s));
    let (done, skipped, each, outage) = wave_summary(&wave.stdout);
    let rounds = n.div_ceil(k);
    let ideal = rounds as f64 * secs(one.wall);
    show(
        &format!("wave ({done} done, {skipped} skipped-done):"),
        &wave,
        op,
    );
    println!("    window each: {}", spread(each));
    println!("    outage each: {}", spread(outage));
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
    if let Some(plane) = &l.sb.data_plane {
        println!(
            "    real tunnels: {}",
            probe_gaps(&plane.dir.join("probe.jsonl"))
        );
    }
    rt.block_on(l.sb.shutdown());
}

/// The runbook's commands for one gateway, as a shell script (`$KUBECTL`, `$NS`, `$GW`,
/// `$DIR` the gateway's bundle): delete the old gateway (kubectl waits until it is gone),
/// apply the new ones, wait for their conditions, then `swanctl --list-sas` in the
/// gateway's pod until the tunnel is ESTABLISHED (bounded).
const RUNBOOK: &str = r#"
set -eu
k() { "$KUBECTL" -n "$NS" "$@" >/dev/null; }
k delete ipsecgateway "$GW" --timeout=300s
k apply -f "$DIR/vpngateway.yaml" -f "$DIR/vpnpeer.yaml"
k wait --for=condition=FIPAttached "vpngateway/$GW" --timeout=300s
k wait --for=condition=Ready "vpngateway/$GW" --timeout=300s
k wait --for=condition=Authorized "vpnpeer/$GW" --timeout=300s
i=0
while [ $i -lt 600 ]; do
  if "$KUBECTL" -n "$NS" exec "deploy/$GW" -c strongswan -- swanctl --list-sas 2>/dev/null | grep -q ESTABLISHED; then
    exit 0
  fi
  i=$((i + 1))
  sleep 0.5
done
echo "$NS/$GW: never ESTABLISHED" >&2
exit 1
"#;

/// The runbook by kubectl for `gateways` (namespace, name), `k` at a time: the wall time
/// and each gateway's.
fn kubectl_wave(b: &Bed, gateways: &[(String, String)], k: usize) -> (Duration, Vec<f64>) {
    let kubectl = b.control_plane().unwrap().kubectl_path();
    let next = AtomicUsize::new(0);
    let each = std::sync::Mutex::new(Vec::new());
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..k.min(gateways.len()) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((ns, gw)) = gateways.get(i) else {
                        return;
                    };
                    let started = Instant::now();
                    let out = std::process::Command::new("timeout")
                        .args(["600", "sh", "-c", RUNBOOK])
                        .env("KUBECONFIG", &b.kubeconfig)
                        .env("KUBECTL", &kubectl)
                        .env("NS", ns)
                        .env("GW", gw)
                        .env("DIR", b.cwd().join("plans").join(ns).join(gw))
                        .output()
                        .unwrap();
                    assert!(
                        out.status.success(),
                        "the runbook by kubectl for {ns}/{gw}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    each.lock().unwrap().push(secs(started.elapsed()));
                }
            });
        }
    });
    (t.elapsed(), each.into_inner().unwrap())
}

fn real(rt: &tokio::runtime::Runtime, n: usize, k: usize) {
    let s = settings();
    println!(
        "vpnmig cutover wave: {n} single-tunnel gateways, --concurrency {k}, real control plane (etcd, kube-apiserver, kube-controller-manager, kwok) on 127.0.0.1, \
         simulated operator as a per-object controller ({} workers), release build; operator as settings-realistic.yaml (finalizer {} ms, OpenStack {} ms, peer retry {} ms); load average {}",
        vpnmig_sandbox::operator::kube::WORKERS,
        s.operator.finalizer_delay_ms,
        s.operator.openstack_delay_ms,
        s.operator.peer_retry_ms,
        load()
    );
    let op = "operator";
    let admin = |b: &Bed| {
        let path = b.control_plane().unwrap().admin_kubeconfig();
        rt.block_on(async {
            let kc = kube::config::Kubeconfig::read_from(&path).unwrap();
            let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
                .await
                .unwrap();
            kube::Client::try_from(config).unwrap()
        })
    };
    let last = format!("gw{:03}", n - 1);
    let last_ns = format!("wave-{:02}", (n - 1) / 10);
    let rounds = n.div_ceil(k);

    // One window alone, in a cluster with that one gateway.
    let b = start_real(rt, 1);
    let one = observed_real(
        rt,
        &b,
        &admin(&b),
        &["cutover", "gw000", "-n", "wave-00", "--yes"],
    );
    drop(b);
    show("one window alone (1-gateway cluster):", &one, op);

    // The runbook by kubectl, in an N-gateway cluster: one gateway alone, then the others
    // K at a time.
    let b = start_real(rt, n);
    let (plan, _, _, _) = vpnmig(
        &b.kubeconfig,
        b.cwd(),
        &[
            "plan",
            "-A",
            "-l",
            "tier=bronze",
            "--out",
            "plans",
            "-o",
            "json",
        ],
    );
    drop(plan);
    let mut all: Vec<(String, String)> = (0..n)
        .map(|i| (format!("wave-{:02}", i / 10), format!("gw{i:03}")))
        .collect();
    let alone = all.pop().unwrap();
    let before = b.api_requests();
    let (k_one, _) = kubectl_wave(&b, std::slice::from_ref(&alone), 1);
    let k_one_requests = b.api_requests() - before;
    println!(
        "  {:<44} {:6.1} s, {} API requests",
        format!("kubectl: one gateway alone ({n}-gateway cluster):"),
        secs(k_one),
        k_one_requests
    );
    let before = b.api_requests();
    let passes = b.operator.pass_stats();
    let cpu_before = cpu_by_process();
    let (k_wave, k_each) = kubectl_wave(&b, &all, k);
    let k_cpu = cpu_used(&cpu_before, &cpu_by_process());
    let k_requests = b.api_requests() - before;
    let k_ops = since(passes, b.operator.pass_stats());
    let k_rounds = all.len().div_ceil(k);
    println!(
        "  {:<44} {:6.1} s, {} API requests ({:.1} a gateway)",
        format!("kubectl: the other {} at {k} at a time:", all.len()),
        secs(k_wave),
        k_requests,
        k_requests as f64 / all.len().max(1) as f64
    );
    println!(
        "    {op}: {} reconciles, busy {:.1} s ({:.1} s of it CPU); window each: {}",
        k_ops.passes,
        secs(k_ops.busy),
        secs(k_ops.cpu),
        spread(k_each)
    );
    println!(
        "    CPU of the cluster during it: {k_cpu}; load average {}",
        load()
    );
    println!(
        "    ratio kubectl wave / (ceil({}/{k}) = {k_rounds} × kubectl alone = {:.1} s): {:.2}",
        all.len(),
        k_rounds as f64 * secs(k_one),
        secs(k_wave) / (k_rounds as f64 * secs(k_one))
    );
    drop(b);

    // vpnmig in another N-gateway cluster: one window alone, then the wave.
    let b = start_real(rt, n);
    let admin_client = admin(&b);
    if n > 1 {
        let big = observed_real(
            rt,
            &b,
            &admin_client,
            &["cutover", &last, "-n", &last_ns, "--yes"],
        );
        show(
            &format!("one window alone ({n}-gateway cluster):"),
            &big,
            op,
        );
    }
    let k_s = k.to_string();
    let wave = observed_real(rt, &b, &admin_client, &wave_args(&k_s));
    let (done, skipped, each, outage) = wave_summary(&wave.stdout);
    let ideal = rounds as f64 * secs(one.wall);
    show(
        &format!("wave ({done} done, {skipped} skipped-done):"),
        &wave,
        op,
    );
    println!("    window each: {}", spread(each));
    println!("    outage each: {}", spread(outage));
    println!(
        "  ratio wave / (ceil({n}/{k}) = {rounds} × one window alone = {ideal:.1} s): {:.2} (target 1.3)",
        secs(wave.wall) / ideal
    );
    println!(
        "  API requests per gateway: {:.1} in the wave ({} in all; one window alone: {}); kubectl's runbook: {:.1}",
        wave.requests as f64 / n as f64,
        wave.requests,
        one.requests,
        k_requests as f64 / all.len().max(1) as f64
    );
    println!(
        "  vpnmig wave / kubectl wave: {:.2} ({:.1} s / {:.1} s; the kubectl wave has {} gateways)",
        secs(wave.wall) / secs(k_wave),
        secs(wave.wall),
        secs(k_wave),
        all.len()
    );
    drop(b);
}

/// Per client site, the longest time between two answers in its probe log (the outage
/// the client saw), summarised across sites.
fn probe_gaps(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut last: BTreeMap<String, jiff::Timestamp> = BTreeMap::new();
    let mut gap: BTreeMap<String, f64> = BTreeMap::new();
    for line in text.lines() {
        let Ok(p) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if p["ok"] != true {
            continue;
        }
        let (Some(site), Some(t)) = (
            p["site"].as_str(),
            p["t"]
                .as_str()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok()),
        ) else {
            continue;
        };
        if let Some(prev) = last.insert(site.to_string(), t) {
            let d = t.duration_since(prev).as_secs_f64();
            let g = gap.entry(site.to_string()).or_default();
            *g = g.max(d);
        }
    }
    let answered_after = gap.len();
    format!(
        "{answered_after} client sites answered; longest gap between answers per site: {}",
        spread(gap.into_values().collect())
    )
}
