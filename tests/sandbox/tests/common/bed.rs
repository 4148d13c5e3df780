//! One table of rows, two backends, for the sandbox's own tests (`kubectl.rs`, `api.rs`):
//! each row runs once on the emulator and once on the real control plane (etcd,
//! kube-apiserver, kube-controller-manager and kwok, built by tests/controlplane/build.sh),
//! as `tests/live/bed.rs` does for vpnmig's end-to-end suite.
//!
//! - A [`Row`] is a name, the scenario (objects and settings) it starts from, `only` (the
//!   one backend it needs and why, printed where it is skipped) and its steps, given the
//!   started [`Bed`].
//! - The steps talk to the backend through the API: kube-rs ([`Bed::client`],
//!   [`Bed::client_for`]) and kubectl ([`Bed::kubectl`]). [`Bed::emulator`] is the
//!   emulator itself (its store, its collector's pace), for a row that says
//!   `only: Some((Backend::Emulated, "why"))`. [`Bed::api_faults`] and [`Bed::operator`]
//!   work on both.
//! - On the emulator each row has an emulator of its own: its scenario, settings, users and
//!   operator.
//! - On the real control plane the rows of a test binary share one control plane (a start
//!   takes ~8 s) and run one after the other. Each row gets a namespace of its own (the
//!   scenario's first Namespace, renamed `<namespace>-<row>` everywhere in the scenario),
//!   loaded through the API with its recorded statuses; its users as client certificates
//!   with a Role of their rules in that namespace (a group's rules bound to the group); the
//!   fault proxy in front of kube-apiserver with the settings' `api:` faults; and the
//!   simulated operator as a controller with the row's `operator:` settings, pod exec
//!   answered through kwok. The kubeconfig names its contexts as the emulator's do
//!   (`vpnmig-sandbox`, `vpnmig-sandbox-<user>`). After the row its gateways and peers are
//!   deleted, its operator stops once they are gone (their finalizers unwound), and its
//!   namespace is deleted, so no row sees another's objects.
//! - A row whose settings hold a part only the emulator has (admission webhooks, the
//!   collector's pace) and that does not say so fails on the real control plane.
//! - Where the real control plane is not built the real run prints `DID NOT RUN (real
//!   control plane)` and passes, unless `VPNMIG_REQUIRE_CONTROLPLANE` is set (.ci/run).
//! - `VPNMIG_ROW=TEXT` runs only the rows whose name contains TEXT.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams};
use serde_json::{Value, json};
use vpnmig_sandbox::api::auth::{Group, User};
use vpnmig_sandbox::api::faults::ApiFaults;
use vpnmig_sandbox::controlplane::{ClientCert, ControlPlane, NODE_NAME};
use vpnmig_sandbox::operator::Operator;
use vpnmig_sandbox::operator::kube::{ExecHook, KubeApi, WORKERS, serve_exec, swanctl_script};
use vpnmig_sandbox::proxy::Proxy;
use vpnmig_sandbox::{Sandbox, SettingsFile, scenario};

/// Where a row runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The project's API emulator with its operator (`--control-plane emulated`).
    Emulated,
    /// etcd, kube-apiserver, kube-controller-manager and kwok, with the simulated operator
    /// as a controller over the API (`--control-plane real`).
    Real,
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Backend::Emulated => "emulated",
            Backend::Real => "real",
        })
    }
}

/// What a row starts from: the objects (a scenario file's text) and the sandbox settings.
pub struct Scenario {
    pub yaml: &'static str,
    pub settings: SettingsFile,
}

/// A row's steps: an async block given the started bed.
pub type Steps = for<'a> fn(&'a Bed) -> BoxFuture<'a, ()>;

/// One behaviour, run once per [`Backend`].
pub struct Row {
    pub name: &'static str,
    pub scenario: fn() -> Scenario,
    /// The one backend the row needs, and why (printed where it is skipped).
    pub only: Option<(Backend, &'static str)>,
    pub steps: Steps,
}

/// A started backend with the row's scenario loaded and its gateways reconciled.
pub struct Bed {
    pub backend: Backend,
    /// The scenario's namespace (on the real control plane, the row's own).
    pub ns: String,
    /// cluster-admin's kubeconfig (its current context), with one context per user.
    pub kubeconfig: PathBuf,
    /// cluster-admin, through the API (kube's default retries on).
    pub client: kube::Client,
    sb: Option<Sandbox>,
    real: Option<RealRow>,
    dir: tempfile::TempDir,
}

/// What a row on the real control plane runs beside it.
struct RealRow {
    proxy: Proxy,
    operator: Arc<Operator>,
    exec: tokio::task::JoinHandle<()>,
    /// cluster-admin straight to kube-apiserver (out of the faults' reach).
    admin: kube::Client,
}

/// What kubectl did.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Bed {
    /// The emulator, for a row that says `only: Some((Backend::Emulated, …))`.
    pub fn emulator(&self) -> &Sandbox {
        self.sb.as_ref().unwrap_or_else(|| {
            panic!("this row uses the emulator's own state: mark it `only: Some((Backend::Emulated, \"why\"))`")
        })
    }

    /// The API fault knobs, changeable at run time on both backends: the emulator's own,
    /// or the fault proxy's in front of kube-apiserver.
    pub fn api_faults(&self) -> &Arc<RwLock<ApiFaults>> {
        match (&self.sb, &self.real) {
            (Some(sb), _) => &sb.api_faults,
            (None, Some(r)) => &r.proxy.faults,
            (None, None) => unreachable!("a bed has a backend"),
        }
    }

    /// The simulated operator (the emulator's, or the controller over the real API).
    pub fn operator(&self) -> &Arc<Operator> {
        match (&self.sb, &self.real) {
            (Some(sb), _) => &sb.operator,
            (None, Some(r)) => &r.operator,
            (None, None) => unreachable!("a bed has a backend"),
        }
    }

    /// The kubeconfig's text.
    pub fn kubeconfig_yaml(&self) -> String {
        std::fs::read_to_string(&self.kubeconfig).unwrap()
    }

    /// A client for the kubeconfig's context `context` (`vpnmig-sandbox-<user>`).
    pub async fn client_for(&self, context: &str) -> kube::Client {
        client_from(&self.kubeconfig_yaml(), Some(context)).await
    }

    /// kubectl `args` with this bed's kubeconfig, on a blocking thread (the emulator serves
    /// in this process), bounded at 60 s.
    pub async fn kubectl(&self, args: &[&str]) -> Out {
        let bin = kubectl_bin().expect("kubectl: check kubectl_bin() before the rows");
        let kubeconfig = self.kubeconfig.clone();
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let what = format!("kubectl {}", args.join(" "));
        let run = tokio::task::spawn_blocking(move || {
            std::process::Command::new(bin)
                .env("KUBECONFIG", &kubeconfig)
                .env_remove("KUBECTL_EXTERNAL_DIFF")
                .args(&args)
                .output()
                .expect("kubectl runs")
        });
        let out = super::within(60, &what, run).await.unwrap();
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into(),
            stderr: String::from_utf8_lossy(&out.stderr).into(),
        }
    }

    /// The object `plural` (of `group/version`) `name` in the row's namespace, as JSON
    /// (`None` when not found).
    pub async fn get(&self, (group, version, plural): Kind, name: &str) -> Option<Value> {
        let api = dynamic(&self.client, (group, version, plural), &self.ns);
        api.get_opt(name)
            .await
            .unwrap_or_else(|e| panic!("GET {plural} {}/{name}: {e}", self.ns))
            .map(|o| serde_json::to_value(o).unwrap())
    }

    /// Every object of a kind in the row's namespace.
    pub async fn list(&self, kind: Kind) -> Vec<Value> {
        list(&self.client, kind, &self.ns).await
    }
}

/// (group, version, plural).
pub type Kind = (&'static str, &'static str, &'static str);
pub const IPSECGATEWAY: Kind = ("ipsec.bnerd.net", "v1alpha1", "ipsecgateways");
pub const VPNGATEWAY: Kind = ("vpn.bnerd.net", "v1alpha1", "vpngateways");
pub const VPNPEER: Kind = ("vpn.bnerd.net", "v1alpha1", "vpnpeers");
pub const DEPLOYMENT: Kind = ("apps", "v1", "deployments");

fn dynamic(client: &kube::Client, (group, version, plural): Kind, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: if group.is_empty() {
            version.into()
        } else {
            format!("{group}/{version}")
        },
        // Only the path matters for reads and deletes.
        kind: String::new(),
        plural: plural.into(),
    };
    Api::namespaced_with(client.clone(), ns, &ar)
}

async fn list(client: &kube::Client, kind: Kind, ns: &str) -> Vec<Value> {
    dynamic(client, kind, ns)
        .list(&ListParams::default())
        .await
        .unwrap_or_else(|e| panic!("LIST {} in {ns}: {e}", kind.2))
        .items
        .into_iter()
        .map(|o| serde_json::to_value(o).unwrap())
        .collect()
}

async fn client_from(kubeconfig: &str, context: Option<&str>) -> kube::Client {
    let kc = kube::config::Kubeconfig::from_yaml(kubeconfig).expect("kubeconfig parses");
    let opts = kube::config::KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kc, &opts)
        .await
        .expect("kubeconfig loads");
    kube::Client::try_from(config).expect("client builds")
}

/// The kubectl the rows run: the control plane's own (the served version's) where it is
/// built, else the one on PATH; `None` where there is none.
pub fn kubectl_bin() -> Option<PathBuf> {
    if let Ok(dir) = vpnmig_sandbox::controlplane::built() {
        return Some(dir.join("kubectl"));
    }
    std::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success())
        .then(|| PathBuf::from("kubectl"))
}

fn selected(rows: &[Row]) -> impl Iterator<Item = (usize, &Row)> {
    let only = std::env::var("VPNMIG_ROW").ok();
    rows.iter()
        .enumerate()
        .filter(move |(_, r)| only.as_deref().is_none_or(|o| r.name.contains(o)))
}

/// Run a row's steps, bounded at 90 s; why it failed.
async fn steps(backend: Backend, row: &Row, bed: &Bed) -> Result<(), String> {
    let started = Instant::now();
    let run = std::panic::AssertUnwindSafe((row.steps)(bed)).catch_unwind();
    let result = match tokio::time::timeout(Duration::from_secs(90), run).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(p)) => Err(p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()),
        Err(_) => Err("timed out after 90 s".into()),
    };
    match &result {
        Ok(()) => eprintln!(
            "{backend}: ok      {} ({} ms)",
            row.name,
            started.elapsed().as_millis()
        ),
        Err(why) => eprintln!("{backend}: FAILED  {}: {why}", row.name),
    }
    result
}

fn skipped(row: &Row, backend: Backend) -> bool {
    match row.only {
        Some((only, why)) if only != backend => {
            eprintln!("{backend}: SKIPPED {}: {why}", row.name);
            true
        }
        _ => false,
    }
}

/// Every object of the scenario that is a gateway has its Ready condition (on the real
/// control plane: Ready=True, once the cluster's controllers and kwok run its Pod, as on
/// a live cluster), bounded at 60 s.
async fn reconciled(bed: &Bed, gateways: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut all = bed.list(IPSECGATEWAY).await;
        all.extend(bed.list(VPNGATEWAY).await);
        let ready = all.len() >= gateways
            && all.iter().all(|g| {
                g["status"]["conditions"].as_array().is_some_and(|c| {
                    c.iter().any(|c| {
                        c["type"] == "Ready"
                            && (bed.backend == Backend::Emulated || c["status"] == "True")
                    })
                })
            });
        if ready {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the scenario's gateways were not reconciled within 60 s on the {} backend: {all:?}",
            bed.backend
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn gateways(objects: &[Value]) -> usize {
    objects
        .iter()
        .filter(|o| matches!(o["kind"].as_str(), Some("IPsecGateway" | "VPNGateway")))
        .count()
}

/// Every row on the emulator, each with an emulator of its own; panics naming each row
/// that failed.
pub async fn emulated(rows: &[Row]) {
    let mut failed = Vec::new();
    for (_, row) in selected(rows) {
        if skipped(row, Backend::Emulated) {
            continue;
        }
        let sc = (row.scenario)();
        let count = gateways(&scenario::parse(sc.yaml).unwrap());
        let sb = super::start(sc.yaml, sc.settings).await;
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        sb.write_kubeconfig(&kubeconfig).unwrap();
        let mut bed = Bed {
            backend: Backend::Emulated,
            ns: sb.namespace.clone(),
            client: super::client(&sb, None).await,
            kubeconfig,
            sb: Some(sb),
            real: None,
            dir,
        };
        reconciled(&bed, count).await;
        if let Err(why) = steps(Backend::Emulated, row, &bed).await {
            failed.push(format!("{}: {why}", row.name));
        }
        bed.sb.take().unwrap().shutdown().await;
    }
    assert!(
        failed.is_empty(),
        "rows failed on the emulator:\n{}",
        failed.join("\n")
    );
}

/// Every row on one real control plane, started on this (the test's) thread, which lives
/// as long as it; panics naming each row that failed.
pub fn real(rows: &[Row]) {
    let started = Instant::now();
    let Some(mut cp) = super::real::start() else {
        return;
    };
    eprintln!(
        "real: control plane started in {} ms",
        started.elapsed().as_millis()
    );
    // Pod exec into a gateway pod: kwok runs the `swanctl` in exec/, which asks the row's
    // operator over this socket (`vpnmig-sandbox exec-answer`).
    let socket = cp.dir().join("exec.sock");
    let script = cp.exec_dir().join("swanctl");
    std::fs::write(
        &script,
        swanctl_script(Path::new(env!("CARGO_BIN_EXE_vpnmig-sandbox")), &socket),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (failed, setup, teardown) = rt.block_on(async {
        let mut failed = Vec::new();
        let (mut setup, mut teardown) = (Duration::ZERO, Duration::ZERO);
        for (i, row) in selected(rows) {
            if skipped(row, Backend::Real) {
                continue;
            }
            let t = Instant::now();
            let bed = start_real(&cp, i, (row.scenario)(), &socket).await;
            setup += t.elapsed();
            if let Err(why) = steps(Backend::Real, row, &bed).await {
                failed.push(format!("{}: {why}", row.name));
            }
            let t = Instant::now();
            let stopped = stop_real(bed).await;
            teardown += t.elapsed();
            if let Err(why) = stopped {
                eprintln!("real: FAILED  {} (its teardown): {why}", row.name);
                failed.push(format!("{} (its teardown): {why}", row.name));
            }
        }
        (failed, setup, teardown)
    });
    drop(rt);
    cp.stop();
    eprintln!(
        "real: {} ms in all: the control plane's start and stop, the rows' setup ({} ms: namespace, scenario, users, proxy, operator, gateways Ready) and teardown ({} ms)",
        started.elapsed().as_millis(),
        setup.as_millis(),
        teardown.as_millis()
    );
    assert!(
        failed.is_empty(),
        "rows failed on the real control plane:\n{}",
        failed.join("\n")
    );
}

async fn start_real(cp: &ControlPlane, i: usize, sc: Scenario, socket: &Path) -> Bed {
    let on_real = SettingsFile {
        operator: sc.settings.operator.clone(),
        gitops: sc.settings.gitops.clone(),
        users: sc.settings.users.clone(),
        groups: sc.settings.groups.clone(),
        api: ApiFaults {
            webhooks: Vec::new(),
            ..sc.settings.api.clone()
        },
        ..SettingsFile::default()
    };
    assert!(
        sc.settings == on_real,
        "this row's settings have a part only the emulator has (admission webhooks, the collector's pace): mark it `only: Some((Backend::Emulated, \"why\"))`"
    );
    let first = scenario::parse(sc.yaml).unwrap();
    let scenario_ns = first
        .iter()
        .find(|o| o["kind"] == "Namespace")
        .and_then(|o| o["metadata"]["name"].as_str())
        .map(str::to_string);
    let (ns, mut objects) = match &scenario_ns {
        Some(n) => {
            let ns = format!("{n}-{i}");
            (
                ns.clone(),
                scenario::parse(&sc.yaml.replace(n, &ns)).unwrap(),
            )
        }
        None => (format!("row-{i}"), first),
    };
    if scenario_ns.is_none() {
        objects.insert(
            0,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        );
    }
    let count = gateways(&objects);
    let users = tokio::task::block_in_place(|| {
        vpnmig_sandbox::controlplane::load(cp, &objects)
            .unwrap_or_else(|e| panic!("loading the scenario: {e}"));
        rbac(cp, &ns, &sc.settings.users, &sc.settings.groups)
    });
    let mut all = vec![&cp.admin];
    all.extend(users.iter());
    let faults = Arc::new(RwLock::new(on_real.api.clone()));
    let proxy = Proxy::start(&cp.url, &cp.ca_pem, &all, faults)
        .await
        .unwrap_or_else(|e| panic!("the fault proxy: {e}"));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let text = cp
        .kubeconfig_at(&proxy.url(), proxy.ca_pem(), &all, Some(&ns))
        .replace("vpnmig-controlplane", "vpnmig-sandbox");
    std::fs::write(&kubeconfig, &text).unwrap();
    let admin = client_from(
        &std::fs::read_to_string(cp.admin_kubeconfig()).unwrap(),
        None,
    )
    .await;
    // The simulated operator, as `vpnmig-sandbox --control-plane real` runs it: over the API
    // as cluster-admin, its gateway pods on kwok's node, pod exec answered here.
    let api = KubeApi::new(admin.clone())
        .with_node(NODE_NAME)
        .with_exec(ExecHook {
            work_dir: cp.dir().to_path_buf(),
            path: cp.exec_path(),
        });
    let operator = Operator::start_kube(api, admin.clone(), sc.settings.operator, WORKERS, None);
    let _ = std::fs::remove_file(socket);
    let listener = tokio::net::UnixListener::bind(socket).unwrap();
    let exec = tokio::spawn(serve_exec(Arc::downgrade(&operator), listener));
    let bed = Bed {
        backend: Backend::Real,
        ns,
        client: client_from(&text, None).await,
        kubeconfig,
        sb: None,
        real: Some(RealRow {
            proxy,
            operator,
            exec,
            admin,
        }),
        dir,
    };
    // A new namespace gets its `default` ServiceAccount from the controller manager a
    // moment later; a Pod created before it is refused.
    let sa = dynamic(&bed.client, ("", "v1", "serviceaccounts"), &bed.ns);
    super::eventually(30, "the namespace's default ServiceAccount", || async {
        sa.get_opt("default").await.ok().flatten().map(|_| ())
    })
    .await;
    reconciled(&bed, count).await;
    bed
}

/// Delete the row's gateways and peers and wait (bounded at 60 s) until they are gone (the
/// operator unwound their finalizers); then stop the operator and the proxy, and delete the
/// row's namespace (the namespace controller empties it later: nothing left in it is the
/// operator's). The namespace alone would take ~10 s: the namespace controller deletes
/// the custom resources only after its discovery pass and the built-in kinds.
async fn stop_real(bed: Bed) -> Result<(), String> {
    let r = bed.real.as_ref().unwrap();
    let kinds = [VPNPEER, VPNGATEWAY, IPSECGATEWAY];
    for kind in kinds {
        for o in list(&r.admin, kind, &bed.ns).await {
            let name = o["metadata"]["name"].as_str().unwrap_or_default();
            match dynamic(&r.admin, kind, &bed.ns)
                .delete(name, &DeleteParams::background())
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(format!("DELETE {} {}/{name}: {e}", kind.2, bed.ns)),
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let result = loop {
        let mut left = Vec::new();
        for kind in kinds {
            left.extend(
                list(&r.admin, kind, &bed.ns)
                    .await
                    .into_iter()
                    .map(|o| format!("{} {}", kind.2, o["metadata"]["name"])),
            );
        }
        if left.is_empty() {
            break Ok(());
        }
        if Instant::now() > deadline {
            break Err(format!(
                "still in namespace {} 60 s after their deletion: {left:?}",
                bed.ns
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let r = bed.real.unwrap();
    r.operator.shutdown();
    r.exec.abort();
    drop(r.proxy);
    let namespaces = Api::<DynamicObject>::all_with(
        r.admin.clone(),
        &ApiResource {
            group: String::new(),
            version: "v1".into(),
            api_version: "v1".into(),
            kind: "Namespace".into(),
            plural: "namespaces".into(),
        },
    );
    namespaces
        .delete(&bed.ns, &DeleteParams::background())
        .await
        .map_err(|e| format!("DELETE namespace {}: {e}", bed.ns))?;
    result
}

/// The emulator's users and groups as the real control plane has them, in `ns`: a client
/// certificate per user (no groups), and a Role of each user's or group's rules (for every
/// API group, as the emulator's rules name resources without groups) bound to it.
fn rbac(cp: &ControlPlane, ns: &str, users: &[User], groups: &[Group]) -> Vec<ClientCert> {
    let rbac = "rbac.authorization.k8s.io";
    let bind = |role: &str, subject: Value, rules: &[vpnmig_sandbox::api::auth::Rule]| {
        assert!(
            rules.iter().all(|r| r.namespaces.is_empty()),
            "{role}: a rule for some namespaces only (this harness gives a row one namespace)"
        );
        let rules: Vec<Value> = rules
            .iter()
            .map(|r| json!({"apiGroups": ["*"], "resources": r.resources, "verbs": r.verbs}))
            .collect();
        for doc in [
            json!({"apiVersion": format!("{rbac}/v1"), "kind": "Role",
                "metadata": {"name": role, "namespace": ns}, "rules": rules}),
            json!({"apiVersion": format!("{rbac}/v1"), "kind": "RoleBinding",
                "metadata": {"name": role, "namespace": ns},
                "roleRef": {"apiGroup": rbac, "kind": "Role", "name": role},
                "subjects": [subject]}),
        ] {
            cp.apply(&doc.to_string())
                .unwrap_or_else(|e| panic!("{role}: {e}"));
        }
    };
    for g in groups {
        bind(
            &format!("vpnmig-group-{}", g.name),
            json!({"apiGroup": rbac, "kind": "Group", "name": g.name}),
            &g.rules,
        );
    }
    users
        .iter()
        .map(|u| {
            assert!(
                !u.without_basic_user,
                "user {}: without_basic_user changes the whole cluster (not for a shared control plane)",
                u.name
            );
            bind(
                &format!("vpnmig-user-{}", u.name),
                json!({"apiGroup": rbac, "kind": "User", "name": u.name}),
                &u.rules,
            );
            cp.client(&u.name, &[])
                .unwrap_or_else(|e| panic!("user {}: {e}", u.name))
        })
        .collect()
}
