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
    /// Port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
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
    let sandbox = Sandbox::start(Config {
        scenario: objects,
        settings,
        port: args.port,
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
    // Never clobber a real kubeconfig: only a previous sandbox's may be replaced.
    if let Ok(existing) = std::fs::read_to_string(&args.kubeconfig) {
        let ours = serde_saphyr::from_str::<serde_json::Value>(&existing)
            .ok()
            .and_then(|v| v["clusters"].as_array().cloned())
            .is_some_and(|c| c.iter().all(|c| c["name"] == "vpnmig-sandbox"));
        if !ours {
            return Err(format!(
                "{}: holds another kubeconfig; refusing to overwrite it (pass another --kubeconfig path)",
                args.kubeconfig.display()
            ));
        }
    }
    sandbox
        .write_kubeconfig(&args.kubeconfig)
        .map_err(|e| format!("{}: {e}", args.kubeconfig.display()))?;
    let path = std::path::absolute(&args.kubeconfig).unwrap_or(args.kubeconfig.clone());
    eprintln!(
        "vpnmig-sandbox: serving {} (namespace {}); Ctrl-C stops it",
        sandbox.url(),
        sandbox.namespace
    );
    println!("export KUBECONFIG={}", path.display());
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| e.to_string())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
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
