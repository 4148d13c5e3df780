//! `vpnmig-sandbox --scenario FILE --kubeconfig PATH [--operator-settings FILE]`: serve a
//! rehearsal cluster on 127.0.0.1 until SIGINT/SIGTERM.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use vpnmig_sandbox::{Config, Sandbox, SettingsFile, scenario};

/// A Kubernetes API emulator with a simulated gateway operator, for rehearsing a
/// vpnmig cutover on a laptop and for vpnmig's tests.
///
/// Loads the scenario, writes a kubeconfig (TLS with a generated CA, a bearer token, the
/// scenario's first tenant namespace), prints `export KUBECONFIG=…` and serves until
/// interrupted. kubectl and vpnmig then work against it as against a cluster.
#[derive(Parser, Debug)]
#[command(version, max_term_width = 100)]
struct Args {
    /// Multi-document YAML of manifests to load (Namespaces, Secrets, CRDs, gateways, …).
    #[arg(long, value_name = "FILE")]
    scenario: PathBuf,
    /// Where to write the kubeconfig.
    #[arg(long, value_name = "PATH")]
    kubeconfig: PathBuf,
    /// Operator timing and faults, API faults, extra users, and the simulated Argo CD
    /// and Flux's `gitops:` delay and faults (YAML; see the README and docs/gitops.md).
    #[arg(long, value_name = "FILE")]
    operator_settings: Option<PathBuf>,
    /// Port on 127.0.0.1 (0: any free port; the emulator only).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Which API server serves the scenario: the project's emulator (operator, GitOps
    /// controllers and fault knobs included), or a real etcd, kube-apiserver,
    /// kube-controller-manager and kwok built by tests/controlplane/build.sh (the scenario's
    /// CRDs, objects and recorded statuses are loaded through the API; the simulated
    /// operator does not run against it yet).
    #[arg(long, value_enum, default_value = "emulated")]
    control_plane: ControlPlaneKind,
    /// Which data plane answers for the gateways: the operator's imitation of swanctl, or
    /// real strongSwan daemons in network namespaces, one per gateway pod and one per
    /// client site, with a prober per site (root and Debian's strongswan-swanctl,
    /// charon-systemd and libcharon-extra-plugins; see docs/sandbox.md).
    #[arg(long, value_enum, default_value = "simulated")]
    data_plane: vpnmig_sandbox::dataplane::DataPlaneKind,
    /// Where the data plane writes `dataplane/probe.jsonl` and `dataplane/sites.json`
    /// (default: beside --kubeconfig, in `<kubeconfig>.state/`).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum ControlPlaneKind {
    Emulated,
    Real,
}

/// The project's CRDs (fixtures/crds), as the real control plane is given them.
const CRDS: [&str; 6] = [
    include_str!("../../../fixtures/crds/ipsecgateways.ipsec.bnerd.net.yaml"),
    include_str!("../../../fixtures/crds/vpngateways.vpn.bnerd.net.yaml"),
    include_str!("../../../fixtures/crds/vpnpeers.vpn.bnerd.net.yaml"),
    include_str!("../../../fixtures/crds/argocd-application.yaml"),
    include_str!("../../../fixtures/crds/flux-kustomization.yaml"),
    include_str!("../../../fixtures/crds/flux-helmrelease.yaml"),
];

/// Start the real control plane, load the CRDs and the scenario through the API (each
/// recorded status through the status subresource), write the kubeconfig and serve until
/// interrupted.
async fn run_real(args: Args, objects: Vec<serde_json::Value>) -> Result<(), String> {
    use vpnmig_sandbox::controlplane::ControlPlane;
    if args.operator_settings.is_some() {
        return Err("--operator-settings drives the emulator's operator and faults; the real control plane does not run them yet (use --control-plane emulated)".into());
    }
    if args.data_plane != vpnmig_sandbox::dataplane::DataPlaneKind::Simulated {
        return Err("--data-plane strongswan is driven by the simulated operator, which does not run against the real control plane yet (use --control-plane emulated)".into());
    }
    let kubeconfig = args.kubeconfig.clone();
    // Started on this (the main) thread, which lives as long as the process: each component
    // is told to die with the thread that started it.
    let cp = (move || -> Result<ControlPlane, String> {
        let cp = ControlPlane::start().map_err(|e| e.to_string())?;
        cp.apply(&CRDS.join("\n---\n"))?;
        cp.kubectl(&[
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd",
            "--all",
        ])?;
        let mut namespace = None;
        for o in &objects {
            let mut spec = o.clone();
            let status = spec.as_object_mut().and_then(|m| m.remove("status"));
            cp.apply(&serde_json::to_string(&spec).expect("objects serialize"))?;
            let kind = o["kind"].as_str().unwrap_or("");
            let name = o["metadata"]["name"].as_str().unwrap_or("");
            if kind == "Namespace" && namespace.is_none() {
                namespace = Some(name.to_string());
            }
            if let Some(status) = status {
                let ns = o["metadata"]["namespace"].as_str().unwrap_or("default");
                let api = o["apiVersion"].as_str().unwrap_or("");
                let group = api.split_once('/').map(|(g, _)| g).unwrap_or("");
                let target = format!("{}.{group}/{name}", kind.to_lowercase());
                let patch = serde_json::json!({ "status": status }).to_string();
                cp.kubectl(&[
                    "patch",
                    "-n",
                    ns,
                    &target,
                    "--subresource=status",
                    "--type=merge",
                    "-p",
                    &patch,
                ])?;
            }
        }
        write_kubeconfig(
            &kubeconfig,
            &cp.kubeconfig(&[&cp.admin], namespace.as_deref()),
        )?;
        Ok(cp)
    })()?;
    let path = std::path::absolute(&args.kubeconfig).unwrap_or(args.kubeconfig.clone());
    eprintln!(
        "vpnmig-sandbox: real control plane serving {} (kube-apiserver, etcd, kube-controller-manager, kwok); the simulated operator does not run against it yet; Ctrl-C stops it",
        cp.url
    );
    println!("export KUBECONFIG={}", path.display());
    wait_for_signal().await?;
    eprintln!("vpnmig-sandbox: stopping");
    drop(cp);
    Ok(())
}

/// `--state-dir`, or `<kubeconfig>.state` beside the kubeconfig.
fn state_dir(args: &Args) -> PathBuf {
    args.state_dir.clone().unwrap_or_else(|| {
        let mut p = args.kubeconfig.clone().into_os_string();
        p.push(".state");
        PathBuf::from(p)
    })
}

async fn wait_for_signal() -> Result<(), String> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| e.to_string())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    Ok(())
}

/// Write a kubeconfig owner-only, never over one that is not a sandbox's.
fn write_kubeconfig(path: &std::path::Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    if let Ok(existing) = std::fs::read_to_string(path) {
        let ours = serde_saphyr::from_str::<serde_json::Value>(&existing)
            .ok()
            .and_then(|v| v["clusters"].as_array().cloned())
            .is_some_and(|c| {
                c.iter()
                    .all(|c| c["name"] == "vpnmig-sandbox" || c["name"] == "vpnmig-controlplane")
            });
        if !ours {
            return Err(format!(
                "{}: holds another kubeconfig; refusing to overwrite it (pass another --kubeconfig path)",
                path.display()
            ));
        }
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .and_then(|()| file.write_all(text.as_bytes()))
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn read(path: &PathBuf) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

async fn run(args: Args) -> Result<(), String> {
    let objects = scenario::parse(&read(&args.scenario)?)
        .map_err(|e| format!("{}: {e}", args.scenario.display()))?;
    let settings: SettingsFile = match &args.operator_settings {
        Some(p) => {
            serde_saphyr::from_str(&read(p)?).map_err(|e| format!("{}: {e}", p.display()))?
        }
        None => SettingsFile::default(),
    };
    if args.control_plane == ControlPlaneKind::Real {
        return run_real(args, objects).await;
    }
    // A fault for a gateway the scenario does not have would silently never fire.
    let gateways: Vec<String> = objects
        .iter()
        .filter(|o| matches!(o["kind"].as_str(), Some("IPsecGateway" | "VPNGateway")))
        .map(|o| {
            format!(
                "{}/{}",
                o["metadata"]["namespace"].as_str().unwrap_or("default"),
                o["metadata"]["name"].as_str().unwrap_or("")
            )
        })
        .collect();
    for key in settings.operator.gateways.keys() {
        let bare = key
            .strip_prefix("ipsecgateway/")
            .or_else(|| key.strip_prefix("vpngateway/"))
            .unwrap_or(key);
        if !gateways.iter().any(|g| g == bare) {
            eprintln!(
                "vpnmig-sandbox: warning: operator.gateways[{key:?}] names no gateway of the scenario (yet); it applies once one with that name exists"
            );
        }
    }
    // The same for a GitOps fault of an owner the scenario does not have.
    let owners: Vec<String> = objects
        .iter()
        .filter_map(|o| {
            let tool = match o["kind"].as_str() {
                Some("Application") => "argocd",
                Some("Kustomization")
                    if o["apiVersion"]
                        .as_str()
                        .is_some_and(|a| a.starts_with("kustomize.toolkit.fluxcd.io/")) =>
                {
                    "flux"
                }
                _ => return None,
            };
            Some(format!(
                "{tool}/{}/{}",
                o["metadata"]["namespace"].as_str().unwrap_or("default"),
                o["metadata"]["name"].as_str().unwrap_or("")
            ))
        })
        .collect();
    for key in settings.gitops.owners.keys() {
        if !owners.contains(key) {
            eprintln!(
                "vpnmig-sandbox: warning: gitops.owners[{key:?}] names no Application or Kustomization of the scenario (yet); it applies once one with that name exists"
            );
        }
    }
    let data_plane = match args.data_plane {
        vpnmig_sandbox::dataplane::DataPlaneKind::Simulated => None,
        vpnmig_sandbox::dataplane::DataPlaneKind::Strongswan => Some(state_dir(&args)),
    };
    let sandbox = Sandbox::start(Config {
        scenario: objects,
        settings,
        port: args.port,
        data_plane,
    })
    .await
    .map_err(|e| {
        let mut msg = e.to_string();
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            msg.push_str(&format!(": {s}"));
            src = s.source();
        }
        msg
    })?;
    write_kubeconfig(&args.kubeconfig, &sandbox.kubeconfig())?;
    let path = std::path::absolute(&args.kubeconfig).unwrap_or(args.kubeconfig.clone());
    eprintln!(
        "vpnmig-sandbox: serving {} (namespace {}); Ctrl-C stops it",
        sandbox.url(),
        sandbox.namespace
    );
    if let Some(p) = &sandbox.data_plane {
        eprintln!(
            "vpnmig-sandbox: real data plane (strongSwan): probe log {}, topology {}",
            p.dir.join("probe.jsonl").display(),
            p.dir.join("sites.json").display()
        );
    }
    println!("export KUBECONFIG={}", path.display());
    wait_for_signal().await?;
    eprintln!("vpnmig-sandbox: stopping");
    sandbox.shutdown().await;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vpnmig-sandbox: error: {e}");
            ExitCode::FAILURE
        }
    }
}
