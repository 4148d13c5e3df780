//! The cutover's own latency and its wall time against the runbook's kubectl commands
//! (issue 5, item 5), on the acme scenario with the operator's delays at zero.
//!
//! Printed, median and worst of RUNS runs each:
//! - gone → created: from the IPsecGateway's final removal to the VPNGateway's creation
//!   (what vpnmig adds between the old object disappearing and the new ones appearing);
//! - condition → action: from the operator writing `FIPAttached=True` (and the last of
//!   Ready/Authorized) to vpnmig's next write (the journal's phase), i.e. how fast the
//!   watch reacts (target: under 100 ms each);
//! - the whole `vpnmig cutover --yes` against the same steps scripted with kubectl
//!   (`kubectl delete`, `kubectl apply -f`, `kubectl wait --for=condition=…`, then
//!   `kubectl exec … swanctl --list-sas` until ESTABLISHED), as a ratio.
//!
//! Times are taken in-process from the sandbox's store: the observer wakes on every
//! write. Run: `cargo bench --bench cutover` (needs `kubectl` on PATH for the ratio).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use vpnmig_sandbox::store::EventKind;
use vpnmig_sandbox::{Sandbox, SettingsFile};

#[path = "../tests/live/mod.rs"]
mod live;

const RUNS: usize = 5;

async fn sandbox() -> Sandbox {
    let mut settings = SettingsFile::default();
    settings.operator.service_cidr_pool = "10.250.3.0/24".into();
    // The tests' harness: starts the sandbox and waits (bounded) until the old gateway
    // is reconciled.
    live::start(live::ACME, settings).await.sb
}

fn condition_true(obj: &serde_json::Value, type_: &str) -> bool {
    obj["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == type_ && c["status"] == "True")
    })
}

/// When each thing of interest happened, as the store saw it.
#[derive(Default, Debug)]
struct Marks {
    old_gone: Option<Instant>,
    new_created: Option<Instant>,
    fip_attached: Option<Instant>,
    journal_attached: Option<Instant>,
    ready: Option<Instant>,
    authorized: Option<Instant>,
    journal_ready: Option<Instant>,
}

/// Watch the store until `stop` resolves, stamping `Marks`.
async fn observe(sb: &Sandbox, stop: tokio::sync::oneshot::Receiver<()>) -> Marks {
    let mut marks = Marks::default();
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
            let name = o["metadata"]["name"].as_str().unwrap_or_default();
            match (e.gvr.plural.as_str(), e.kind) {
                ("ipsecgateways", EventKind::Deleted) if name == "acme" => {
                    marks.old_gone.get_or_insert(now);
                }
                ("vpngateways", EventKind::Added) if name == "acme" => {
                    marks.new_created.get_or_insert(now);
                }
                ("vpngateways", _) if name == "acme" => {
                    if condition_true(o, "FIPAttached") {
                        marks.fip_attached.get_or_insert(now);
                    }
                    if condition_true(o, "Ready") {
                        marks.ready.get_or_insert(now);
                    }
                }
                ("vpnpeers", _) if condition_true(o, "Authorized") => {
                    marks.authorized.get_or_insert(now);
                }
                ("configmaps", _) if name == "vpnmig-acme" => match o["data"]["phase"].as_str() {
                    Some("attached") => {
                        marks.journal_attached.get_or_insert(now);
                    }
                    Some("ready") => {
                        marks.journal_ready.get_or_insert(now);
                    }
                    _ => {}
                },
                _ => {}
            }
        }
    }
}

fn run(kubeconfig: &Path, cwd: &Path, program: &str, args: &[&str]) {
    let out = Command::new(program)
        .current_dir(cwd)
        .env("KUBECONFIG", kubeconfig)
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn stats(mut v: Vec<f64>) -> String {
    v.sort_by(f64::total_cmp);
    format!(
        "median {:7.1} ms   worst {:7.1} ms",
        v[v.len() / 2],
        v[v.len() - 1]
    )
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let kubectl = Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok();
    let (mut gap, mut fip, mut ready, mut vpnmig_wall, mut kubectl_wall) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        // vpnmig
        let sb = rt.block_on(sandbox());
        let dir = tempfile::tempdir().unwrap();
        let kc = dir.path().join("kubeconfig");
        sb.write_kubeconfig(&kc).unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let marks = rt.block_on(async {
            let observer = observe(&sb, rx);
            let cutover = async {
                let t = Instant::now();
                let (kc, cwd) = (kc.clone(), dir.path().to_path_buf());
                tokio::task::spawn_blocking(move || {
                    run(
                        &kc,
                        &cwd,
                        env!("CARGO_BIN_EXE_vpnmig"),
                        &["cutover", "acme", "--yes"],
                    )
                })
                .await
                .unwrap();
                let wall = t.elapsed();
                let _ = tx.send(());
                wall
            };
            let (marks, wall) = tokio::join!(observer, cutover);
            vpnmig_wall.push(ms(wall));
            marks
        });
        let span = |a: Option<Instant>, b: Option<Instant>| {
            ms(b.expect("seen").saturating_duration_since(a.expect("seen")))
        };
        gap.push(span(marks.old_gone, marks.new_created));
        fip.push(span(marks.fip_attached, marks.journal_attached));
        ready.push(span(marks.ready.max(marks.authorized), marks.journal_ready));
        rt.block_on(sb.shutdown());

        // The runbook's commands, scripted, on a fresh sandbox.
        if kubectl {
            let sb = rt.block_on(sandbox());
            let dir = tempfile::tempdir().unwrap();
            let kc = dir.path().join("kubeconfig");
            sb.write_kubeconfig(&kc).unwrap();
            let cwd = dir.path();
            // The manifests, as `vpnmig plan --out` writes them (not timed).
            run(
                &kc,
                cwd,
                env!("CARGO_BIN_EXE_vpnmig"),
                &["plan", "acme", "--out", "b"],
            );
            let t = Instant::now();
            let k = |args: &[&str]| run(&kc, cwd, "kubectl", args);
            k(&["delete", "ipsecgateway", "acme", "-n", "tenant-acme"]);
            k(&[
                "apply",
                "-n",
                "tenant-acme",
                "-f",
                "b/vpngateway.yaml",
                "-f",
                "b/vpnpeer.yaml",
            ]);
            for (what, cond) in [
                ("vpngateway/acme", "FIPAttached"),
                ("vpngateway/acme", "Ready"),
                ("vpnpeer/acme", "Authorized"),
            ] {
                k(&[
                    "wait",
                    "-n",
                    "tenant-acme",
                    &format!("--for=condition={cond}"),
                    what,
                    "--timeout=60s",
                ]);
            }
            let mut up = false;
            for _ in 0..120 {
                let out = Command::new("kubectl")
                    .env("KUBECONFIG", &kc)
                    .args([
                        "exec",
                        "-n",
                        "tenant-acme",
                        "deploy/acme",
                        "-c",
                        "strongswan",
                        "--",
                        "swanctl",
                        "--list-sas",
                    ])
                    .output()
                    .unwrap();
                if String::from_utf8_lossy(&out.stdout).contains("ESTABLISHED") {
                    up = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(500));
            }
            assert!(up, "the scripted runbook never saw the tunnel");
            kubectl_wall.push(ms(t.elapsed()));
            rt.block_on(sb.shutdown());
        }
    }
    println!("vpnmig cutover, acme scenario, operator delays 0, {RUNS} runs, release build");
    println!(
        "  gone → created (vpnmig's added latency)     {}",
        stats(gap)
    );
    println!(
        "  FIPAttached=True → journal 'attached'        {}",
        stats(fip)
    );
    println!(
        "  Ready+Authorized → journal 'ready'           {}",
        stats(ready)
    );
    println!(
        "  vpnmig cutover wall time                     {}",
        stats(vpnmig_wall.clone())
    );
    if kubectl {
        let (mut a, mut b) = (vpnmig_wall, kubectl_wall.clone());
        a.sort_by(f64::total_cmp);
        b.sort_by(f64::total_cmp);
        println!(
            "  scripted kubectl wall time                   {}",
            stats(kubectl_wall)
        );
        println!(
            "  ratio vpnmig / kubectl (medians)             {:.2}",
            a[a.len() / 2] / b[b.len() / 2]
        );
    } else {
        println!("  kubectl not found: no ratio");
    }
}
