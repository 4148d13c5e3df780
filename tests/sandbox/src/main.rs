//! `vpnmig-sandbox --scenario FILE --kubeconfig PATH [--operator-settings FILE]`: serve a
//! rehearsal cluster on 127.0.0.1 until SIGINT/SIGTERM.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use vpnmig_sandbox::operator::Operator;
use vpnmig_sandbox::operator::kube::{ExecHook, KubeApi};
use vpnmig_sandbox::{Config, Sandbox, SettingsFile, scenario};

/// A Kubernetes API emulator with a simulated gateway operator, for rehearsing a
/// vpnmig cutover on a laptop and for vpnmig's tests.
///
/// Loads the scenario, writes a kubeconfig (TLS with a generated CA; a bearer token on the
/// emulator, a client certificate on the real control plane; the scenario's first tenant
/// namespace), prints `export KUBECONFIG=…` and serves until
/// interrupted. kubectl and vpnmig then work against it as against a cluster.
#[derive(Parser, Debug)]
#[command(
    version,
    max_term_width = 100,
    subcommand_negates_reqs = true,
    args_conflicts_with_subcommands = true
)]
struct Args {
    #[command(subcommand)]
    command: Option<Cmd>,
    /// Multi-document YAML of manifests to load (Namespaces, Secrets, CRDs, gateways, …).
    #[arg(long, value_name = "FILE", required = true)]
    scenario: Option<PathBuf>,
    /// Where to write the kubeconfig.
    #[arg(long, value_name = "PATH", required = true)]
    kubeconfig: Option<PathBuf>,
    /// Operator timing and faults, API faults, extra users, and the simulated Argo CD
    /// and Flux's `gitops:` delay and faults (YAML; see the README and docs/gitops.md).
    /// With `--control-plane real`, only its `operator:` part and its `api:` faults (in a
    /// fault proxy in front of kube-apiserver; not `api.webhooks`).
    #[arg(long, value_name = "FILE")]
    operator_settings: Option<PathBuf>,
    /// Port on 127.0.0.1 (0: any free port; the emulator only).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Which API server serves the scenario: the project's emulator (operator, GitOps
    /// controllers and fault knobs included), or a real etcd, kube-apiserver,
    /// kube-controller-manager and kwok built by tests/controlplane/build.sh (the scenario's
    /// CRDs, objects and recorded statuses are loaded through the API, and the simulated
    /// operator and the simulated Argo CD and Flux run against it as controllers, their
    /// fault knobs included; the API fault knobs through a proxy in front of it).
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

#[derive(clap::Subcommand, Debug)]
enum Cmd {
    /// Run the simulated gateway operator as a controller against a cluster (your kind or
    /// k3d, or a real control plane) until interrupted. The cluster needs the CRDs of
    /// fixtures/crds; the gateway pods run the image the operator names, so pod exec into
    /// them answers only where a kwok node runs them (see docs/sandbox.md).
    Operator {
        /// The kubeconfig (default: $KUBECONFIG, then ~/.kube/config).
        #[arg(long, value_name = "PATH")]
        kubeconfig: Option<PathBuf>,
        /// The kubeconfig's context (default: its current one).
        #[arg(long)]
        context: Option<String>,
        /// Operator timing and faults (the `operator:` part of a settings file).
        #[arg(long, value_name = "FILE")]
        operator_settings: Option<PathBuf>,
        /// How many reconciles run at once.
        #[arg(long, default_value_t = vpnmig_sandbox::operator::kube::WORKERS)]
        workers: usize,
        /// Put gateway pods on this node (a cluster without a scheduler).
        #[arg(long)]
        node: Option<String>,
    },
    /// Answer one pod exec as the running sandbox's operator (what the `swanctl` kwok
    /// runs calls; not for people).
    #[command(hide = true)]
    ExecAnswer {
        #[arg(long)]
        socket: PathBuf,
        #[arg(long)]
        namespace: String,
        #[arg(long)]
        pod: String,
        #[arg(long)]
        container: String,
        #[arg(last = true)]
        command: Vec<String>,
    },
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum ControlPlaneKind {
    Emulated,
    Real,
}

/// Start the real control plane, load the CRDs and the scenario through the API (each
/// recorded status through the status subresource), write the kubeconfig and serve until
/// interrupted.
async fn run_real(
    args: Args,
    objects: Vec<serde_json::Value>,
    settings: SettingsFile,
) -> Result<(), String> {
    use vpnmig_sandbox::controlplane::ControlPlane;
    // The operator's and the GitOps controllers' parts run here, the API faults (but
    // webhooks) in the fault proxy in front of kube-apiserver; users, webhooks and the
    // collector's pace are the emulator's.
    let on_real = SettingsFile {
        operator: settings.operator.clone(),
        gitops: settings.gitops.clone(),
        api: vpnmig_sandbox::api::faults::ApiFaults {
            webhooks: Vec::new(),
            ..settings.api.clone()
        },
        ..SettingsFile::default()
    };
    if settings != on_real {
        return Err("--operator-settings: only its `operator:`, `gitops:` and `api:` parts (but `api.webhooks`) apply to the real control plane; its users, webhooks and gc are the emulator's (use --control-plane emulated)".into());
    }
    settings
        .operator
        .validate()
        .map_err(|e| format!("--operator-settings: {e}"))?;
    settings
        .api
        .validate()
        .map_err(|e| format!("--operator-settings: {e}"))?;
    settings
        .gitops
        .validate()
        .map_err(|e| format!("--operator-settings: {e}"))?;
    // The fault proxy only when there are faults to apply: it costs each request a hop
    // (docs/sandbox.md has the figures), and this binary has no run-time switch of them.
    let faulted = settings.api != vpnmig_sandbox::api::faults::ApiFaults::default();
    let kubeconfig = kubeconfig_arg(&args);
    // Started on this (the main) thread, which lives as long as the process: each component
    // is told to die with the thread that started it.
    let (cp, namespace) = (|| -> Result<(ControlPlane, Option<String>), String> {
        let cp = ControlPlane::start().map_err(|e| e.to_string())?;
        let namespace = vpnmig_sandbox::controlplane::load(&cp, &objects)?;
        Ok((cp, namespace))
    })()?;
    let proxy = if faulted {
        let faults = std::sync::Arc::new(std::sync::RwLock::new(settings.api.clone()));
        let p = vpnmig_sandbox::proxy::Proxy::start(&cp.url, &cp.ca_pem, &[&cp.admin], faults)
            .await
            .map_err(|e| format!("the fault proxy: {e}"))?;
        write_kubeconfig(
            &kubeconfig,
            &cp.kubeconfig_at(&p.url(), p.ca_pem(), &[&cp.admin], namespace.as_deref()),
        )?;
        Some(p)
    } else {
        write_kubeconfig(
            &kubeconfig,
            &cp.kubeconfig(&[&cp.admin], namespace.as_deref()),
        )?;
        None
    };
    // The simulated operator, as a controller over the API; pod exec into its gateway
    // pods comes back here through kwok and the `swanctl` in exec/.
    let started = std::time::Instant::now();
    let client = kube_client(Some(&cp.admin_kubeconfig()), None).await?;
    let client_for_gitops = client.clone();
    let api = KubeApi::new(client.clone())
        .with_node(vpnmig_sandbox::controlplane::NODE_NAME)
        .with_exec(ExecHook {
            work_dir: cp.dir().to_path_buf(),
            path: cp.exec_path(),
        });
    let plane = match args.data_plane {
        vpnmig_sandbox::dataplane::DataPlaneKind::Simulated => None,
        vpnmig_sandbox::dataplane::DataPlaneKind::Strongswan => {
            let o = &settings.operator;
            let timing = vpnmig_sandbox::dataplane::Timing {
                retransmit_timeout_s: o.client_retransmit_ms as f64 / 1000.0,
                retransmit_tries: 2,
            };
            let p = vpnmig_sandbox::dataplane::Bed::start(&state_dir(&args), timing)?;
            eprintln!(
                "vpnmig-sandbox: real data plane (strongSwan): probe log {}, topology {}",
                p.dir.join("probe.jsonl").display(),
                p.dir.join("sites.json").display()
            );
            Some(p)
        }
    };
    let op = Operator::start_kube(
        api,
        client,
        settings.operator,
        vpnmig_sandbox::operator::kube::WORKERS,
        plane.clone(),
    );
    let socket = cp.dir().join("exec.sock");
    let listener = tokio::net::UnixListener::bind(&socket)
        .map_err(|e| format!("{}: {e}", socket.display()))?;
    tokio::spawn(vpnmig_sandbox::operator::kube::serve_exec(
        std::sync::Arc::downgrade(&op),
        listener,
    ));
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    write_executable(
        &cp.exec_dir().join("swanctl"),
        &vpnmig_sandbox::operator::kube::swanctl_script(&exe, &socket),
    )?;
    // Ready when every gateway of the scenario had its first reconcile (bounded).
    let gateways = objects
        .iter()
        .filter(|o| matches!(o["kind"].as_str(), Some("IPsecGateway" | "VPNGateway")))
        .count() as u64;
    let deadline = started + std::time::Duration::from_secs(30);
    while op.pass_stats().passes < gateways && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // The simulated Argo CD and Flux, as controllers over the API (they act once the
    // scenario holds an Application, Kustomization or HelmRelease).
    let gitops_started = std::time::Instant::now();
    let gitops = vpnmig_sandbox::gitops::Gitops::start_kube(
        vpnmig_sandbox::gitops::kube::KubeGitopsApi::new(client_for_gitops.clone()),
        client_for_gitops,
        settings.gitops,
    )
    .await;
    // Ready when kube-apiserver no longer holds a create of the scenario's custom resources
    // (2 s after their CRDs' Established, `ControlPlane::until_crds_settled`).
    tokio::time::sleep(cp.until_crds_settled()).await;
    let path = std::path::absolute(&kubeconfig).unwrap_or(kubeconfig.clone());
    if let Some(p) = &proxy {
        eprintln!(
            "vpnmig-sandbox: the kubeconfig points at the fault proxy {} in front of kube-apiserver (the settings' api: faults)",
            p.url()
        );
    }
    eprintln!(
        "vpnmig-sandbox: real control plane serving {} (kube-apiserver, etcd, kube-controller-manager, kwok); simulated operator running as a controller ({} reconciles in {} ms); simulated Argo CD and Flux as controllers (first pass in {} ms); Ctrl-C stops it",
        cp.url,
        op.pass_stats().passes,
        started.elapsed().as_millis(),
        gitops_started.elapsed().as_millis()
    );
    println!("export KUBECONFIG={}", path.display());
    wait_for_signal().await?;
    eprintln!("vpnmig-sandbox: stopping");
    gitops.shutdown();
    op.shutdown();
    drop(op);
    if let Some(p) = plane {
        let _ = tokio::task::spawn_blocking(move || p.shutdown()).await;
    }
    drop(proxy);
    drop(cp);
    Ok(())
}

/// `--kubeconfig` of the serving modes (clap requires it there).
fn kubeconfig_arg(args: &Args) -> PathBuf {
    args.kubeconfig.clone().expect("clap requires --kubeconfig")
}

/// A client of the cluster `kubeconfig` (default: $KUBECONFIG, ~/.kube/config) names.
async fn kube_client(
    kubeconfig: Option<&std::path::Path>,
    context: Option<String>,
) -> Result<kube::Client, String> {
    let options = kube::config::KubeConfigOptions {
        context,
        ..Default::default()
    };
    let config = match kubeconfig {
        Some(p) => {
            let kc = kube::config::Kubeconfig::read_from(p)
                .map_err(|e| format!("{}: {e}", p.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &options).await
        }
        None => kube::Config::from_kubeconfig(&options).await,
    }
    .map_err(|e| format!("kubeconfig: {e}"))?;
    kube::Client::try_from(config).map_err(|e| format!("kube client: {e}"))
}

/// `vpnmig-sandbox operator`: the simulated operator against any cluster.
async fn run_operator(
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
    settings: Option<PathBuf>,
    workers: usize,
    node: Option<String>,
) -> Result<(), String> {
    let settings: SettingsFile = match &settings {
        Some(p) => {
            serde_saphyr::from_str(&read(p)?).map_err(|e| format!("{}: {e}", p.display()))?
        }
        None => SettingsFile::default(),
    };
    settings
        .operator
        .validate()
        .map_err(|e| format!("--operator-settings: {e}"))?;
    let client = kube_client(kubeconfig.as_deref(), context).await?;
    let version = client
        .apiserver_version()
        .await
        .map_err(|e| format!("cannot reach the cluster: {e}"))?;
    let mut api = KubeApi::new(client.clone());
    if let Some(n) = &node {
        api = api.with_node(n);
    }
    let op = Operator::start_kube(api, client, settings.operator, workers, None);
    eprintln!(
        "vpnmig-sandbox: simulated gateway operator running against Kubernetes {} ({workers} workers, field manager {}); Ctrl-C stops it",
        version.git_version,
        vpnmig_sandbox::operator::FIELD_MANAGER
    );
    wait_for_signal().await?;
    eprintln!("vpnmig-sandbox: stopping");
    op.shutdown();
    Ok(())
}

/// `vpnmig-sandbox exec-answer`: print what the sandbox answers and exit with its code.
fn exec_answer(
    socket: &std::path::Path,
    namespace: String,
    pod: String,
    container: String,
    command: Vec<String>,
) -> ExitCode {
    use std::io::Write;
    if namespace.is_empty() || pod.is_empty() {
        eprintln!("error: this pod has no simulated strongSwan (no kwok Exec names it)");
        return ExitCode::from(1);
    }
    let req = vpnmig_sandbox::operator::kube::ExecRequest {
        namespace,
        pod,
        container,
        command,
    };
    match vpnmig_sandbox::operator::kube::ask_exec(socket, &req) {
        Ok(out) => {
            let _ = std::io::stdout().write_all(out.stdout.as_bytes());
            let _ = std::io::stderr().write_all(out.stderr.as_bytes());
            ExitCode::from(u8::try_from(out.exit_code).unwrap_or(1))
        }
        Err(e) => {
            eprintln!(
                "error: the sandbox at {} did not answer: {e}",
                socket.display()
            );
            ExitCode::from(1)
        }
    }
}

fn write_executable(path: &std::path::Path, text: &str) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text)
        .and_then(|()| std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// `--state-dir`, or `<kubeconfig>.state` beside the kubeconfig.
fn state_dir(args: &Args) -> PathBuf {
    args.state_dir.clone().unwrap_or_else(|| {
        let mut p = kubeconfig_arg(args).into_os_string();
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
    if let Some(Cmd::Operator {
        kubeconfig,
        context,
        operator_settings,
        workers,
        node,
    }) = args.command
    {
        return run_operator(kubeconfig, context, operator_settings, workers, node).await;
    }
    let scenario_path = args.scenario.clone().expect("clap requires --scenario");
    let objects = scenario::parse(&read(&scenario_path)?)
        .map_err(|e| format!("{}: {e}", scenario_path.display()))?;
    let settings: SettingsFile = match &args.operator_settings {
        Some(p) => {
            serde_saphyr::from_str(&read(p)?).map_err(|e| format!("{}: {e}", p.display()))?
        }
        None => SettingsFile::default(),
    };
    if args.control_plane == ControlPlaneKind::Real {
        return run_real(args, objects, settings).await;
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
    let kubeconfig = kubeconfig_arg(&args);
    write_kubeconfig(&kubeconfig, &sandbox.kubeconfig())?;
    let path = std::path::absolute(&kubeconfig).unwrap_or(kubeconfig.clone());
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

fn main() -> ExitCode {
    let args = Args::parse();
    // Answering one exec needs no runtime, and must start fast.
    if let Some(Cmd::ExecAnswer {
        socket,
        namespace,
        pod,
        container,
        command,
    }) = args.command
    {
        return exec_answer(&socket, namespace, pod, container, command);
    }
    serve(args)
}

#[tokio::main]
async fn serve(args: Args) -> ExitCode {
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vpnmig-sandbox: error: {e}");
            ExitCode::FAILURE
        }
    }
}
