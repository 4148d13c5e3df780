//! Harness for end-to-end tests of live commands: the built `vpnmig` binary run against
//! a backend started in-process (the emulator or the real control plane: the rows of
//! [`bed`]), and the helpers the rows share. Every wait is bounded. [`start`] and
//! [`Live`] (the emulator alone, its store at hand) are the benches' (benches/).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use vpnmig_sandbox::{Config, Sandbox, SettingsFile, scenario};

pub const ACME: &str = include_str!("../../fixtures/clusters/acme.yaml");
pub const INITECH: &str = include_str!("../../fixtures/clusters/initech-two-tunnels.yaml");

pub struct Live {
    pub sb: Sandbox,
    pub kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
    _fips: NoFipReleased,
}

pub mod bed;

#[path = "../common/run.rs"]
mod run;
#[allow(unused_imports)]
pub use run::{Run, advised, flat, labelled};

/// Default settings whose operator hands out only `cidr` from its serviceCIDR pool (every
/// other /24 taken by other tenants): a re-created IPsecGateway, which cannot pin its
/// serviceCIDR, gets `cidr` back, as it would in a full pool.
pub fn pool(cidr: &str) -> SettingsFile {
    let mut s = SettingsFile::default();
    s.operator.service_cidr_pool = cidr.into();
    s
}

/// Start a sandbox with `scenario_yaml` and wait until its gateways are reconciled.
pub async fn start(scenario_yaml: &str, settings: SettingsFile) -> Live {
    start_on(scenario_yaml, settings, false).await
}

/// [`start`], with the real strongSwan data plane when `strongswan` (its state directory,
/// `dataplane/probe.jsonl` and `sites.json`, in the test's directory: [`Live::plane_dir`]).
pub async fn start_on(scenario_yaml: &str, settings: SettingsFile, strongswan: bool) -> Live {
    let dir = tempfile::tempdir().unwrap();
    let sb = Sandbox::start(Config {
        scenario: scenario::parse(scenario_yaml).unwrap(),
        settings,
        port: 0,
        data_plane: strongswan.then(|| dir.path().join("sandbox")),
    })
    .await
    .unwrap();
    let rt = sb
        .store
        .resource("ipsec.bnerd.net", "v1alpha1", "ipsecgateways")
        .unwrap();
    for _ in 0..250 {
        let (all, _) = sb.store.list(&rt, None);
        if all.iter().all(|g| {
            g["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready"))
        }) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let kubeconfig = dir.path().join("kubeconfig");
    sb.write_kubeconfig(&kubeconfig).unwrap();
    Live {
        _fips: NoFipReleased(sb.operator.clone()),
        sb,
        kubeconfig,
        _dir: dir,
    }
}

/// DESIGN.md §4.1 across every bench run: whatever it did, no floating IP was released to
/// the pool. Checked when the `Live` goes away (not while a run is already failing).
pub struct NoFipReleased(std::sync::Arc<vpnmig_sandbox::operator::Operator>);

impl Drop for NoFipReleased {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let fips = self.0.floating_ips();
        assert!(
            fips.released.is_empty(),
            "a floating IP was released to the pool during this test: {:?}",
            fips.released
        );
    }
}

impl Live {
    /// The real data plane's files (`probe.jsonl`, `sites.json`).
    pub fn plane_dir(&self) -> PathBuf {
        self._dir.path().join("sandbox").join("dataplane")
    }

    /// The working directory vpnmig runs in (where default bundles land).
    pub fn cwd(&self) -> &Path {
        self._dir.path()
    }

    /// Run `vpnmig ARGS` with this sandbox's kubeconfig, on a blocking thread.
    pub async fn vpnmig(&self, args: &[&str]) -> Run {
        run_vpnmig(&self.kubeconfig, args).await
    }
}

pub async fn run_vpnmig(kubeconfig: &Path, args: &[&str]) -> Run {
    run_vpnmig_at(kubeconfig, None, args).await
}

/// [`run_vpnmig`] with `COLUMNS` set to `columns` (a terminal that wide), else unset.
pub async fn run_vpnmig_at(kubeconfig: &Path, columns: Option<usize>, args: &[&str]) -> Run {
    let kc = kubeconfig.to_path_buf();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    // Bounded: 120 s. A cutover on real strongSwan under a full run's load once took
    // more than the 60 s this was (stop 41, live_dataplane, six test threads and other
    // builds beside); every run's own waits are bounded by its timeouts too.
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_vpnmig"))
                .current_dir(kc.parent().expect("the kubeconfig is in a directory"))
                .env("KUBECONFIG", &kc)
                .env("VPNMIG_STATE_DIR", kc.parent().unwrap().join("state"))
                .env("NO_COLOR", "1")
                .env_remove("COLUMNS")
                .envs(columns.map(|c| ("COLUMNS", c.to_string())))
                .args(&args)
                .output()
                .unwrap()
        }),
    )
    .await
    .expect("vpnmig finishes within 120 s")
    .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Wait (at most 60 s) for a background vpnmig to end.
pub async fn finish(child: std::process::Child) -> Run {
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()),
    )
    .await
    .expect("vpnmig finishes within 120 s")
    .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Wait (at most 90 s) for a background vpnmig to end, timing its stderr line by line:
/// the run and the longest time it was silent (no line), from start to exit.
pub async fn finish_timed(mut child: std::process::Child) -> (Run, Duration) {
    use std::io::BufRead;
    let started = std::time::Instant::now();
    let stderr = child.stderr.take().expect("stderr is piped");
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        let mut last = std::time::Instant::now();
        let mut longest = Duration::ZERO;
        for line in std::io::BufReader::new(stderr).split(b'\n') {
            let Ok(line) = line else { break };
            longest = longest.max(last.elapsed());
            last = std::time::Instant::now();
            lines.push(String::from_utf8_lossy(&line).into_owned());
        }
        (lines.join("\n"), longest.max(last.elapsed()))
    });
    let out = tokio::time::timeout(
        Duration::from_secs(90),
        tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()),
    )
    .await
    .expect("vpnmig finishes within 90 s")
    .unwrap();
    let (stderr, longest) = reader.join().unwrap();
    let _ = started;
    (
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr,
        },
        longest,
    )
}

/// The check `id` of a plan document (`plan -o json`, plan.json).
pub fn check<'a>(plan: &'a Value, id: &str) -> &'a Value {
    plan["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id}"))
}

/// An IPsecGateway (and its PSK Secret) as scenario documents: `tunnels` by name, each
/// with its own peer; `n` numbers its addresses.
pub fn gateway(ns: &str, name: &str, fip: &str, n: usize, tunnels: &[&str], tier: &str) -> String {
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": format!("{name}-psk"), "namespace": ns},
        "type": "Opaque", "stringData": {"psk": format!("rehearsal-only-{name}")}
    });
    let tunnels: Vec<Value> = tunnels
        .iter()
        .enumerate()
        .map(|(i, t)| {
            json!({"name": t, "peer": {"address": format!("203.0.113.{}", n * 4 + i), "id": format!("fw{i}.{name}.example")},
                   "remoteSubnets": [format!("10.{}.{i}.0/24", 100 + n)],
                   "esp": {"proposals": ["aes256gcm16-modp2048"], "lifetime": "1h"}})
        })
        .collect();
    let gw = json!({
        "apiVersion": "ipsec.bnerd.net/v1alpha1", "kind": "IPsecGateway",
        "metadata": {"name": name, "namespace": ns, "labels": {"tier": tier}},
        "spec": {
            "endpoint": {"floatingIP": fip, "network": "public"},
            "auth": {"pskSecretRef": {"name": format!("{name}-psk"), "key": "psk"}},
            "ike": {"version": 2, "proposals": ["aes256-sha256-modp2048"], "lifetime": "24h"},
            "tunnels": tunnels,
            "exposures": [{"name": "crm", "target": {"address": "crm.svc", "port": 443}, "protocol": "TCP"}]
        },
        "status": {"serviceCIDR": format!("10.250.{n}.0/24"), "floatingIP": fip,
                   "exposures": [{"name": "crm", "virtualIP": format!("10.250.{n}.10")}]}
    });
    format!("---\n{secret}\n---\n{gw}\n")
}

pub fn namespace(ns: &str) -> String {
    format!(
        "---\n{}\n",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    )
}

/// Reading the real data plane's probe log (`dataplane/probe.jsonl`).
pub mod plane {
    use super::Live;
    use std::time::Duration;

    /// One line of `dataplane/probe.jsonl`.
    #[derive(Debug, Clone, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Probe {
        pub t: jiff::Timestamp,
        pub site: String,
        pub exposure: String,
        pub ok: bool,
        pub answered_by: Option<String>,
    }

    pub fn probes(l: &Live) -> Vec<Probe> {
        std::fs::read_to_string(l.plane_dir().join("probe.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    pub fn answered_by(kind: &str) -> impl Fn(&Probe) -> bool + '_ {
        move |p: &Probe| {
            p.ok && p
                .answered_by
                .as_deref()
                .is_some_and(|a| a.starts_with(&format!("{kind} tenant-acme/acme ")))
        }
    }

    /// The client's outage as its probe saw it: from the last answer of `before` to the
    /// first answer of `after`, and how many probes failed between.
    pub fn outage(all: &[Probe], before: &str, after: &str) -> (Duration, usize) {
        let first_new = all
            .iter()
            .position(answered_by(after))
            .expect("an answer from the new side");
        let last_old = all[..first_new]
            .iter()
            .rposition(answered_by(before))
            .expect("an answer from the old side before it");
        let failed = all[last_old + 1..first_new]
            .iter()
            .filter(|p| !p.ok)
            .count();
        let span = all[first_new].t.duration_since(all[last_old].t);
        (Duration::try_from(span).unwrap_or_default(), failed)
    }
}

/// A git repository `repo` under `cwd` (a bed's working directory) holding
/// `source` as tenants/acme.yaml, committed: what `plan --gitops-repo` rewrites.
pub fn repo_in(cwd: &std::path::Path, source: &str) -> std::path::PathBuf {
    let dir = cwd.join("repo");
    std::fs::create_dir_all(dir.join("tenants")).unwrap();
    std::fs::write(dir.join("tenants/acme.yaml"), source).unwrap();
    for args in [
        &["init", "-q"][..],
        &["add", "."],
        &[
            "-c",
            "user.email=t@example.net",
            "-c",
            "user.name=t",
            "commit",
            "-qm",
            "acme",
        ],
    ] {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&dir)
            .status()
            .unwrap();
        assert!(ok.success(), "git {args:?}");
    }
    dir
}
