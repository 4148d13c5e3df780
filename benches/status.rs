//! `vpnmig status -A` with 2,000 gateways in the sandbox (issue target: under 2 s), or
//! `STATUS_N` of them (issue 25 item 5: 20,000 under 5 s with bounded memory). Prints the
//! wall time of the real binary (median of 5 runs), its peak RSS and CPU time (user +
//! sys, from `/usr/bin/time`), the sandbox's own CPU time while serving each run,
//! the API requests of one run (the lists are paged: `limit` 500 and `continue`), and
//! beside them the same figures for `kubectl get ipsecgateways -A -o json` against the
//! same sandbox, timed the same way (5 runs, no warm-up, the median): what the API and
//! the listing alone cost. Then the sandbox's setup.
//!
//! Setup: the objects are loaded into the emulator with their statuses, the operator
//! pauses every gateway, and once serving, the emulator's operator, GitOps controllers
//! and garbage collector are stopped: the benchmark only reads, and their ticks would
//! walk every object (a core a real API server would not take). Loading 20,000 gateways
//! so takes seconds (about 9.5 minutes when the operator reconciled them).
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
    settings.gc.paused = true;
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
    // Nothing runs beside the API server while vpnmig and kubectl read: the benchmark
    // only reads, and the emulator's controllers would otherwise walk every object on
    // their ticks (the garbage collector every 50 ms, the operator every 25 ms), taking
    // a core a real API server would not.
    sb.operator.shutdown();
    sb.gitops.shutdown();
    let setup = t.elapsed();
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    sb.write_kubeconfig(&kc).unwrap();

    // vpnmig and kubectl, timed the same way: wall time of the process, peak RSS from
    // `/usr/bin/time`, the API requests the sandbox served, 5 runs each, no warm-up.
    let vpnmig = timed(
        &sb,
        &kc,
        dir.path(),
        env!("CARGO_BIN_EXE_vpnmig"),
        &["status", "-A", "-o", "json"],
    );
    let out = vpnmig.output.as_ref().expect("vpnmig runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // docs/status-json.md: an object whose `gateways` are the rows.
    let rows = serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["gateways"]
        .as_array()
        .unwrap()
        .len();
    // What the API itself costs: the same listing of the IPsecGateways by kubectl
    // (which pages at 500 too, `--chunk-size`), decoded and printed as JSON.
    let kubectl = timed(
        &sb,
        &kc,
        dir.path(),
        "kubectl",
        &["get", "ipsecgateways", "-A", "-o", "json"],
    );
    let listed = kubectl
        .output
        .as_ref()
        .filter(|o| o.status.success())
        .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
        .map(|v| v["items"].as_array().map_or(0, Vec::len));
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "vpnmig status -A over {gateways} IPsecGateways in 50 namespaces (sandbox on 127.0.0.1, release build)"
    );
    println!("  rows: {rows}");
    vpnmig.print("vpnmig status -A -o json", Some(target_ms));
    match listed {
        Some(n) => {
            println!("  beside it, {n} objects listed:");
            kubectl.print("kubectl get ipsecgateways -A -o json", None);
        }
        None => println!("  kubectl: not run (not on PATH, or it failed)"),
    }
    println!(
        "  (lists paged {} objects a request: {} pages of IPsecGateways)",
        vpnmig::cluster::list::PAGE,
        gateways.div_ceil(vpnmig::cluster::list::PAGE as usize)
    );
    println!("  (sandbox setup: {:.0} ms)", ms(setup));
    rt.block_on(sb.shutdown());
}

/// Five runs of one command against the sandbox.
struct Timed {
    runs: Vec<Duration>,
    rss_kib: Vec<u64>,
    /// Each run's CPU time (user + system, from `/usr/bin/time`), sorted.
    cpu: Vec<Duration>,
    /// The CPU time this process (the sandbox serving the API) used during each run,
    /// sorted.
    served: Vec<Duration>,
    requests: u64,
    /// The last run's output, if the command could be started.
    output: Option<std::process::Output>,
}

impl Timed {
    fn print(&self, what: &str, target_ms: Option<u64>) {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        if self.runs.is_empty() {
            return;
        }
        let target = target_ms.map_or(String::new(), |t| format!("; target < {t} ms"));
        println!(
            "  {what}: wall time median {:.0} ms, min {:.0} ms, max {:.0} ms ({} runs{target})",
            ms(self.runs[self.runs.len() / 2]),
            ms(self.runs[0]),
            ms(self.runs[self.runs.len() - 1]),
            self.runs.len()
        );
        match self.rss_kib.iter().max() {
            Some(max) => println!(
                "    peak RSS {:.1} MiB (largest of {} runs); CPU (user + sys) median {:.0} ms, min {:.0} ms, max {:.0} ms; API requests of one run: {}",
                *max as f64 / 1024.0,
                self.rss_kib.len(),
                ms(self.cpu[self.cpu.len() / 2]),
                ms(self.cpu[0]),
                ms(self.cpu[self.cpu.len() - 1]),
                self.requests
            ),
            None => println!(
                "    peak RSS: /usr/bin/time not found; API requests of one run: {}",
                self.requests
            ),
        }
        if !self.served.is_empty() {
            println!(
                "    the sandbox serving it: CPU median {:.0} ms, min {:.0} ms, max {:.0} ms",
                ms(self.served[self.served.len() / 2]),
                ms(self.served[0]),
                ms(self.served[self.served.len() - 1]),
            );
        }
    }
}

fn timed(
    sb: &Sandbox,
    kc: &std::path::Path,
    dir: &std::path::Path,
    program: &str,
    args: &[&str],
) -> Timed {
    let time = std::path::Path::new("/usr/bin/time").exists();
    let report = dir.join("time.txt");
    let mut t = Timed {
        runs: Vec::new(),
        rss_kib: Vec::new(),
        cpu: Vec::new(),
        served: Vec::new(),
        requests: 0,
        output: None,
    };
    for _ in 0..5 {
        let _ = std::fs::remove_file(&report);
        let mut cmd = if time {
            let mut c = std::process::Command::new("/usr/bin/time");
            c.arg("-o").arg(&report).args(["-f", "%M %U %S", program]);
            c
        } else {
            std::process::Command::new(program)
        };
        let before = sb.requests.load(Ordering::Relaxed);
        let serving = own_cpu();
        let start = Instant::now();
        let Ok(out) = cmd
            .env("KUBECONFIG", kc)
            // kubectl's discovery cache, private to this run of the benchmark.
            .env("KUBECACHEDIR", dir.join("kube-cache"))
            .args(args)
            .output()
        else {
            return t;
        };
        t.runs.push(start.elapsed());
        if let (Some(a), Some(b)) = (serving, own_cpu()) {
            t.served.push(b.saturating_sub(a));
        }
        t.requests = sb.requests.load(Ordering::Relaxed) - before;
        // The last line is ours: "%M %U %S" (a failed command's status comes first).
        let line = std::fs::read_to_string(&report).unwrap_or_default();
        let fields: Vec<&str> = line
            .lines()
            .last()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        if let [kib, user, sys] = fields[..]
            && let (Ok(kib), Ok(user), Ok(sys)) =
                (kib.parse::<u64>(), user.parse::<f64>(), sys.parse::<f64>())
        {
            t.rss_kib.push(kib);
            t.cpu.push(Duration::from_secs_f64(user + sys));
        }
        let failed = !out.status.success();
        t.output = Some(out);
        if failed {
            break;
        }
    }
    t.runs.sort();
    t.cpu.sort();
    t.served.sort();
    t
}

/// This process's CPU time so far (user + system, `/proc/self/stat`, in clock ticks of
/// 10 ms): the sandbox's, as nothing else runs in it while a command is timed.
fn own_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // After the command name's closing parenthesis: state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}
