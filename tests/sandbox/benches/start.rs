//! How long one real bed takes to start, phase by phase, as the live rows start it
//! (tests/live/bed.rs): the control plane's processes (`ControlPlane::start`), the project's
//! CRDs Established, the scenario's objects, the simulated operator's gateways Ready=True,
//! and what is left of the 2 s after the CRDs' Established (the live bed waits for it).
//! The simulated Argo CD and Flux, which the live bed starts too, are not. Prints each run
//! and the median of each phase.
//!
//! Run: `cargo bench -p vpnmig-sandbox --bench start` (the real control plane built:
//! tests/controlplane/build.sh). `START_RUNS` (default 5) runs; `START_SCENARIO` (default
//! fixtures/clusters/acme-argocd.yaml, an Application and its gateway) the scenario.

use std::sync::Arc;
use std::time::{Duration, Instant};

use vpnmig_sandbox::controlplane::{self, ControlPlane};
use vpnmig_sandbox::operator::Operator;
use vpnmig_sandbox::operator::kube::{ExecHook, KubeApi, WORKERS, serve_exec_tcp, swanctl_bash};
use vpnmig_sandbox::scenario;

async fn client(kubeconfig: &std::path::Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// Every IPsecGateway and VPNGateway of the cluster.
async fn gateways(client: &kube::Client) -> Vec<serde_json::Value> {
    use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
    let mut all = Vec::new();
    for (group, kind) in [
        ("ipsec.bnerd.net", "IPsecGateway"),
        ("vpn.bnerd.net", "VPNGateway"),
    ] {
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(group, "v1alpha1", kind));
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        if let Ok(list) = api.list(&Default::default()).await {
            all.extend(list.items.iter().map(|o| serde_json::to_value(o).unwrap()));
        }
    }
    all
}

async fn one(objects: &[serde_json::Value], gateways_wanted: usize) -> Vec<(String, Duration)> {
    let mut phases = Vec::new();
    let started = Instant::now();
    let cp = ControlPlane::start().unwrap_or_else(|e| panic!("{e}"));
    for (what, took) in cp.start_phases() {
        phases.push((what.to_string(), *took));
    }
    let mut mark = Instant::now();
    controlplane::load_crds(&cp).unwrap();
    phases.push(("the project's CRDs Established".into(), mark.elapsed()));
    mark = Instant::now();
    controlplane::load_objects(&cp, objects).unwrap();
    phases.push((
        format!("the scenario's {} objects", objects.len()),
        mark.elapsed(),
    ));
    mark = Instant::now();
    // The operator as tests/live/bed.rs starts it.
    let client = client(&cp.admin_kubeconfig()).await;
    let api = KubeApi::new(client.clone())
        .with_node(controlplane::NODE_NAME)
        .with_exec(ExecHook {
            work_dir: cp.dir().to_path_buf(),
            path: cp.exec_path(),
        });
    let op: Arc<Operator> = Operator::start_kube(
        api,
        client.clone(),
        vpnmig_sandbox::operator::settings::Settings::default(),
        WORKERS,
        None,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(serve_exec_tcp(Arc::downgrade(&op), listener));
    let path = cp.exec_dir().join("swanctl");
    std::fs::write(&path, swanctl_bash(port)).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(60 + gateways_wanted as u64);
    loop {
        let all = gateways(&client).await;
        let ready = all.len() >= gateways_wanted
            && all.iter().all(|g| {
                g["status"]["conditions"].as_array().is_some_and(|c| {
                    c.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
            });
        if ready {
            break;
        }
        assert!(Instant::now() < deadline, "gateways not Ready: {all:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    phases.push(("the operator's gateways Ready=True".into(), mark.elapsed()));
    // As the live bed waits before a row's steps (`ControlPlane::until_crds_settled`).
    let settle = cp.until_crds_settled();
    tokio::time::sleep(settle).await;
    phases.push(("the CRDs 2 s past Established".into(), settle));
    phases.push(("in all".into(), started.elapsed()));
    op.shutdown();
    drop(op);
    drop(cp);
    phases
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs: usize = std::env::var("START_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let file = std::env::var("START_SCENARIO").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/clusters/acme-argocd.yaml"
        )
        .to_string()
    });
    let objects = scenario::parse(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let wanted = objects
        .iter()
        .filter(|o| matches!(o["kind"].as_str(), Some("IPsecGateway" | "VPNGateway")))
        .count();
    println!(
        "{runs} real bed starts of {file} ({} objects)",
        objects.len()
    );
    let mut all: Vec<Vec<(String, Duration)>> = Vec::new();
    for i in 0..runs {
        // The components die with the thread that started them: this one, the whole run.
        let phases = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(one(&objects, wanted))
        });
        let line: Vec<String> = phases
            .iter()
            .map(|(w, d)| format!("{w} {:.2} s", d.as_secs_f64()))
            .collect();
        println!("run {}: {}", i + 1, line.join("; "));
        all.push(phases);
    }
    println!("median of {runs} runs:");
    for (i, (what, _)) in all[0].iter().enumerate() {
        let mut v: Vec<Duration> = all.iter().map(|p| p[i].1).collect();
        v.sort();
        println!(
            "  {what:<48} {:>6.2} s   (min {:.2} s, max {:.2} s)",
            v[v.len() / 2].as_secs_f64(),
            v[0].as_secs_f64(),
            v[v.len() - 1].as_secs_f64()
        );
    }
}
