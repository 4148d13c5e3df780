//! Harness for end-to-end tests of live commands: a vpnmig-sandbox in-process on
//! 127.0.0.1 and the built `vpnmig` binary run against it. Every wait is bounded.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use vpnmig_sandbox::{Config, Sandbox, SettingsFile, scenario};

pub const ACME: &str = include_str!("../../fixtures/clusters/acme.yaml");
pub const INITECH: &str = include_str!("../../fixtures/clusters/initech-two-tunnels.yaml");

pub struct Live {
    pub sb: Sandbox,
    pub kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Start a sandbox with `scenario_yaml` and wait until its gateways are reconciled.
pub async fn start(scenario_yaml: &str, settings: SettingsFile) -> Live {
    let sb = Sandbox::start(Config {
        scenario: scenario::parse(scenario_yaml).unwrap(),
        settings,
        port: 0,
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
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    sb.write_kubeconfig(&kubeconfig).unwrap();
    Live {
        sb,
        kubeconfig,
        _dir: dir,
    }
}

impl Live {
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
    let kc = kubeconfig.to_path_buf();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_vpnmig"))
                .current_dir(kc.parent().expect("the kubeconfig is in a directory"))
                .env("KUBECONFIG", &kc)
                .env("NO_COLOR", "1")
                .args(&args)
                .output()
                .unwrap()
        }),
    )
    .await
    .expect("vpnmig finishes within 60 s")
    .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

impl Live {
    /// Start `vpnmig ARGS` in the background (stdout and stderr captured).
    pub fn spawn(&self, args: &[&str]) -> std::process::Child {
        std::process::Command::new(env!("CARGO_BIN_EXE_vpnmig"))
            .current_dir(self.cwd())
            .env("KUBECONFIG", &self.kubeconfig)
            .env("NO_COLOR", "1")
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }
}

/// Wait (at most 60 s) for a background vpnmig to end.
pub async fn finish(child: std::process::Child) -> Run {
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()),
    )
    .await
    .expect("vpnmig finishes within 60 s")
    .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Poll `cond` every 2 ms until it holds; panics after `secs` seconds naming `what`.
pub async fn eventually(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}
