//! The random-kill campaign (issue 14, "done when"; the project's own equivalent of
//! `../shared/cases/adversarial/01-random-kill/fuzz.py`): each run starts a sandbox with
//! random operator timing, API latency and dropped watches, runs a cutover (or a
//! rollback after one), SIGKILLs it at a random moment, sometimes kills the recovery
//! too, then recovers by following the advice, and checks every invariant of DESIGN.md §4:
//! the floating IP never released and on the one live gateway, the PSK Secret unchanged,
//! the journal holding the old manifest, one gateway of one kind with exactly the
//! journal's peers, no lock left, and the PSK's value in no output and no file written.
//!
//! It runs on the emulator and on the real control plane (tests/live/bed.rs: the API
//! latency and the dropped watches through the fault proxy in front of kube-apiserver).
//! Deterministic: run `seed` is the same on every machine. `VPNMIG_KILL_RUNS=N` changes
//! the count on the emulator: 24 by default (about a minute and a half on 2 cores), 85 (the
//! campaign's size) in `.ci/run`; `VPNMIG_KILL_RUNS_REAL=N` on the real control plane: 12
//! by default (each run starts its own etcd and kube-apiserver); `VPNMIG_KILL_SEED=S` runs
//! one seed on both, to replay a failure.

mod live;

use std::time::Duration;

use live::bed::{Backend, Bed, VPNGATEWAY};
use live::{ACME, INITECH};

/// Runs at once on the emulator: each waits mostly on the operator's simulated delays.
const CONCURRENT: usize = 6;
/// Runs at once on the real control plane (each run's own etcd, kube-apiserver,
/// kube-controller-manager and kwok; their starts take turns).
const CONCURRENT_REAL: usize = 3;

struct Scenario {
    yaml: &'static str,
    ns: &'static str,
    name: &'static str,
    fip: &'static str,
    psk: &'static str,
    pool: &'static str,
}

const SCENARIOS: [Scenario; 2] = [
    Scenario {
        yaml: ACME,
        ns: "tenant-acme",
        name: "acme",
        fip: "198.51.100.23",
        psk: "rehearsal-only-not-a-real-key",
        pool: "10.250.3.0/24",
    },
    Scenario {
        yaml: INITECH,
        ns: "tenant-initech",
        name: "initech",
        fip: "198.51.100.41",
        psk: "rehearsal-only-initech",
        pool: "10.250.41.0/24",
    },
];

/// One run's plan, drawn from its seed.
#[derive(Debug)]
struct Draw {
    scenario: usize,
    /// `cutover`, or `rollback` after a finished cutover.
    first: &'static str,
    /// The killed runs (the first and `kills - 1` recoveries), then the final recovery.
    ops: Vec<&'static str>,
    kill_after_ms: Vec<u64>,
    latency_ms: u64,
    drop_watches_ms: Option<u64>,
    delays_ms: (u64, u64, u64),
}

fn draw(seed: u64) -> Draw {
    let mut rng = fastrand::Rng::with_seed(seed.wrapping_mul(7919));
    let scenario = rng.usize(..2);
    let first = if rng.u8(..4) == 0 {
        "rollback"
    } else {
        "cutover"
    };
    let kills = [1, 1, 2, 3][rng.usize(..4)];
    let mut ops = vec![first];
    for _ in 1..kills {
        ops.push(if rng.bool() { "cutover" } else { "rollback" });
    }
    ops.push(match (first, rng.u8(..10)) {
        ("rollback", 0..=6) => "rollback",
        (_, n) if n % 2 == 0 => "rollback",
        _ => "cutover",
    });
    let kill_after_ms = (0..kills).map(|_| rng.u64(50..3000)).collect();
    Draw {
        scenario,
        first,
        ops,
        kill_after_ms,
        latency_ms: [0, 20, 50, 100][rng.usize(..4)],
        drop_watches_ms: [None, None, Some(300), Some(1000)][rng.usize(..4)],
        delays_ms: [(300, 300, 300), (800, 800, 500), (0, 0, 0)][rng.usize(..3)],
    }
}

/// The first backquoted `vpnmig cutover|rollback …` command in `text`.
fn advised(text: &str) -> Option<Vec<String>> {
    live::advised(text)
        .into_iter()
        .find(|a| matches!(a[0].as_str(), "cutover" | "rollback") && !a.iter().any(|w| w == "DIR"))
}

async fn run(seed: u64, backend: Backend) -> Result<String, String> {
    let d = draw(seed);
    let sc = &SCENARIOS[d.scenario];
    let mut settings = live::pool(sc.pool);
    (
        settings.operator.finalizer_delay_ms,
        settings.operator.openstack_delay_ms,
        settings.operator.peer_retry_ms,
    ) = d.delays_ms;
    settings.api.latency_ms = d.latency_ms;
    settings.api.drop_watches_after_ms = d.drop_watches_ms;
    let Some(l) = Bed::start(backend, live::bed::Scenario::new(sc.yaml, settings)).await else {
        return Ok(format!("seed {seed}: DID NOT RUN on the {backend}"));
    };
    let psk = l.psk_fingerprint(sc.ns, &format!("{}-psk", sc.name)).await;
    let mut outputs = Vec::new();
    let mut log = format!("seed {seed} on the {backend}: {d:?}\n");
    let base = |op: &str| {
        vec![
            op.to_string(),
            sc.name.into(),
            "-n".into(),
            sc.ns.into(),
            "--yes".into(),
        ]
    };

    if d.first == "rollback" {
        let (r, took) = vpnmig(&l, &base("cutover"))
            .await
            .map_err(|e| format!("{log}{e}"))?;
        log += &format!(
            "cutover before the rollback: exit {} in {took:.1?}\n",
            r.code
        );
        if r.code != 0 {
            return Err(format!("{log}{}", r.stderr));
        }
    }
    // The killed runs.
    for (op, after) in d.ops.iter().zip(&d.kill_after_ms) {
        let args = base(op);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut child = l.spawn(&args);
        tokio::time::sleep(Duration::from_millis(*after)).await;
        let killed = child.try_wait().unwrap().is_none();
        if killed {
            child.kill().unwrap();
        }
        let r = live::finish(child).await;
        log += &format!(
            "{op} killed after {after} ms: {}; journal phase {:?}\n",
            if killed {
                "killed".into()
            } else {
                format!("ended first, exit {}", r.code)
            },
            l.phase(sc.ns, sc.name).await
        );
        outputs.push(r.stdout + &r.stderr);
    }
    // The final recovery, following the advice (at most four steps).
    let mut args = base(d.ops.last().unwrap());
    args.extend(
        [
            "--timeout-delete",
            "20s",
            "--timeout-attach",
            "20s",
            "--timeout-tunnel",
            "20s",
        ]
        .map(String::from),
    );
    let mut code = -1;
    let mut longest = Duration::ZERO;
    for _ in 0..4 {
        let (r, took) = vpnmig(&l, &args).await.map_err(|e| format!("{log}{e}"))?;
        longest = longest.max(took);
        code = r.code;
        log += &format!(
            "$ vpnmig {}: exit {} in {took:.1?}\n",
            args.join(" "),
            r.code
        );
        let text = r.stdout + &r.stderr;
        outputs.push(text.clone());
        if r.code == 0 {
            break;
        }
        log += &text;
        match advised(&text) {
            Some(mut next) => {
                if !next.iter().any(|a| a == "--yes") {
                    next.push("--yes".into());
                }
                args = next;
            }
            None => return Err(format!("{log}a stop without a vpnmig command to run")),
        }
    }
    if code != 0 {
        return Err(format!(
            "{log}not settled after following the advice four times"
        ));
    }

    // Invariants.
    let kind = if l.objects(VPNGATEWAY, sc.ns).await.is_empty() {
        "IPsecGateway"
    } else {
        "VPNGateway"
    };
    let peers: Vec<String> = l
        .journal(sc.ns, sc.name)
        .await
        .map(|j| {
            j["targets"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| t["kind"] == "VPNPeer")
                .map(|t| t["metadata"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default();
    let mut peers: Vec<&str> = peers.iter().map(String::as_str).collect();
    peers.sort();
    let held = {
        use futures::FutureExt;
        std::panic::AssertUnwindSafe(l.invariants(sc.ns, sc.name, sc.fip, &psk, kind, &peers))
            .catch_unwind()
            .await
    };
    if let Err(e) = held {
        let why = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        return Err(format!("{log}invariant broken: {why}"));
    }
    if outputs.iter().any(|o| o.contains(sc.psk)) {
        return Err(format!("{log}the PSK's value was printed"));
    }
    for entry in walk(l.cwd()) {
        if std::fs::read(&entry).is_ok_and(|b| String::from_utf8_lossy(&b).contains(sc.psk)) {
            return Err(format!("{log}the PSK's value is in {}", entry.display()));
        }
    }
    drop(l);
    Ok(format!(
        "seed {seed} on the {backend}: settled as {kind} ({} kills; the longest recovery step {longest:.1?})",
        d.kill_after_ms.len()
    ))
}

/// How long one recovery step may run: three waits of 20 s (`--timeout-delete`,
/// `--timeout-attach`, `--timeout-tunnel`), the operator's delays and up to 100 ms of
/// latency per API call on the real control plane, on a loaded machine.
const STEP_BOUND: Duration = Duration::from_secs(240);

/// `vpnmig ARGS` on `l`, killed after [`STEP_BOUND`]: `Err` (with what it had printed)
/// instead of a panic in a spawned task, so the campaign names the seed and its log.
async fn vpnmig(l: &Bed, args: &[String]) -> Result<(live::Run, Duration), String> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let started = std::time::Instant::now();
    let mut child = l.spawn(&args);
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let readers = std::thread::spawn(move || {
        use std::io::Read;
        let (mut o, mut e) = (String::new(), String::new());
        let t = std::thread::spawn(move || {
            let _ = err.read_to_string(&mut e);
            e
        });
        let _ = out.read_to_string(&mut o);
        (o, t.join().unwrap_or_default())
    });
    let waited = tokio::task::spawn_blocking(move || {
        while started.elapsed() < STEP_BOUND {
            if let Some(status) = child.try_wait().unwrap() {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        Err(())
    })
    .await
    .unwrap();
    let (stdout, stderr) = tokio::task::spawn_blocking(move || readers.join().unwrap())
        .await
        .unwrap();
    match waited {
        Ok(status) => Ok((
            live::Run {
                code: status.code().unwrap_or(-1),
                stdout,
                stderr,
            },
            started.elapsed(),
        )),
        Err(()) => Err(format!(
            "$ vpnmig {}: did not end within {STEP_BOUND:?} (killed); it printed:\n{stdout}{stderr}",
            args.join(" ")
        )),
    }
}

/// Every file under `dir` (the bundles and the state directory vpnmig wrote).
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The campaign on `backend`: `runs` seeds (or the one `VPNMIG_KILL_SEED` names),
/// `concurrent` at once.
async fn campaign(backend: Backend, runs: &str, default: u64, concurrent: usize) {
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    let seeds: Vec<u64> = match env("VPNMIG_KILL_SEED") {
        Some(s) => vec![s],
        None => (0..env(runs).unwrap_or(default)).collect(),
    };
    let started = std::time::Instant::now();
    let mut failures = Vec::new();
    let mut settled = 0;
    for chunk in seeds.chunks(concurrent) {
        let runs: Vec<_> = chunk
            .iter()
            .map(|&s| (s, tokio::spawn(run(s, backend))))
            .collect();
        for (seed, r) in runs {
            let r = r
                .await
                .unwrap_or_else(|e| Err(format!("seed {seed} on the {backend}: panicked: {e}")));
            match r {
                Ok(said) if said.contains("DID NOT RUN") => {
                    eprintln!("{said}");
                    return;
                }
                Ok(said) => {
                    eprintln!("{said}");
                    settled += 1
                }
                Err(why) => failures.push(why),
            }
        }
    }
    eprintln!(
        "random-kill campaign on the {backend}: {settled} of {} runs settled with every invariant, in {:.0?}",
        seeds.len(),
        started.elapsed()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn random_kills_then_recovery_keep_every_invariant() {
    campaign(Backend::Emulated, "VPNMIG_KILL_RUNS", 24, CONCURRENT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn random_kills_then_recovery_keep_every_invariant_on_the_real_control_plane() {
    campaign(Backend::Real, "VPNMIG_KILL_RUNS_REAL", 12, CONCURRENT_REAL).await;
}
