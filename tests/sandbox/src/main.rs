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
    /// Operator timing and faults, API faults and extra users (YAML; see the README).
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
