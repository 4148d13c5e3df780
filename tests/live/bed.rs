//! One end-to-end test, many backends: a row (a scenario, its steps, the invariants checked
//! after) runs once on the emulator and once on the real control plane (etcd,
//! kube-apiserver, kube-controller-manager and kwok, docs/sandbox.md) with the simulated
//! operator as a controller over the API.
//!
//! # Writing a row
//!
//! ```ignore
//! rows! {
//!     /// What the row shows (the doc comment is the row's).
//!     a_cutover_ends_done: Row {
//!         scenario: || Scenario::new(ACME, acme_settings()),
//!         only: None,                       // or Some((Backend::Emulated, "why"))
//!         after: After::acme("VPNGateway"), // DESIGN.md §4 once the steps are done
//!         steps: |b| Box::pin(async move {
//!             b.step(&["cutover", "acme", "--yes"], 0, &["✓ delete IPsecGateway tenant-acme/acme"]).await;
//!         }),
//!     },
//! }
//! ```
//!
//! makes the tests `a_cutover_ends_done::emulated` and `a_cutover_ends_done::real`
//! (`cargo test --test live_cutover real` runs the real ones).
//!
//! - **Read and change the cluster through the API** ([`Bed::get`], [`Bed::objects`],
//!   [`Bed::edit`], [`Bed::delete`], [`Bed::put`]), never the emulator's store: the row then
//!   runs on both backends.
//! - **The operator's fault knobs** ([`Bed::fault`], [`Bed::operator`]) work on both: the
//!   simulated operator runs in the test's process against either API.
//! - **Users** (`settings.users`) work on both: on the real control plane each is a client
//!   certificate with a ClusterRole of its rules (a Role in each namespace of a rule that
//!   names namespaces), its context named as the emulator names it
//!   (`vpnmig-sandbox-<user>`); a user `without_basic_user` is one the cluster's
//!   `system:basic-user` binding no longer covers. **Groups** (`settings.groups`, what
//!   `--as-group` is given) too: a ClusterRole of the group's rules bound to the group.
//! - **The API fault knobs** (`settings.api` and, at run time, [`Bed::api_faults`]) work on
//!   both: on the real control plane the kubeconfig points at the fault proxy in front of
//!   kube-apiserver (`vpnmig_sandbox::proxy`), which applies the same knobs.
//! - **The simulated Argo CD and Flux** (`settings.gitops` and, at run time,
//!   [`Bed::gitops`]) work on both: on the real control plane they run in the test's
//!   process as controllers over the API, as `vpnmig-sandbox --control-plane real` runs
//!   them.
//! - **The real strongSwan data plane** ([`Scenario::strongswan`]: a charon per gateway pod
//!   and per client site, a prober per site, its files in [`Bed::plane_dir`]) works on
//!   both: on the real control plane it is handed to the simulated operator as
//!   `vpnmig-sandbox --control-plane real --data-plane strongswan` does, and pod exec
//!   reaches its charons through kwok. One such row runs at a time.
//! - **Only the emulator has** admission webhooks (`settings.api.webhooks`), the
//!   collector's pace, and its store (events,
//!   resourceVersions: [`Bed::emulator`]). A row that needs one says so:
//!   `only: Some((Backend::Emulated, "why"))`; on the real backend it prints
//!   `SKIPPED on the real control plane: why` and passes. A row whose settings hold an
//!   emulator-only part but that does not say so fails on the real backend.
//! - Where the real control plane is not built the real run prints
//!   `DID NOT RUN (real control plane)` and passes, unless `VPNMIG_REQUIRE_CONTROLPLANE` is
//!   set (by .ci/run), where that is a failure.
//! - Each (row, backend) has its own control plane (started in ~8 s) or emulator, so rows
//!   cannot see each other. No row's steps run while a real control plane starts (it takes
//!   both cores for seconds): real rows run one at a time, emulated rows beside them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, PostParams};
use serde_json::Value;
use vpnmig_sandbox::api::faults::ApiFaults;
use vpnmig_sandbox::controlplane::{ControlPlane, ControlPlaneError};
use vpnmig_sandbox::gitops::Gitops;
use vpnmig_sandbox::operator::Operator;
use vpnmig_sandbox::proxy::Proxy;
use vpnmig_sandbox::{Config, Sandbox, SettingsFile, scenario};

use super::Run;

/// Where a row runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The project's in-memory API emulator with its operator (`--control-plane emulated`).
    Emulated,
    /// etcd, kube-apiserver, kube-controller-manager and kwok, with the simulated operator
    /// as a controller over the API (`--control-plane real`).
    Real,
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Backend::Emulated => "emulator",
            Backend::Real => "real control plane",
        })
    }
}

/// What a row starts from: the objects (a scenario file's text) and the sandbox settings.
pub struct Scenario {
    pub yaml: &'static str,
    pub settings: SettingsFile,
    /// The bed is ready once every gateway has reported a Ready condition, True or not:
    /// for a scenario where one cannot be Ready (two gateways pinning one floating IP).
    /// Otherwise, on the real control plane, once every one is Ready=True.
    pub reported_is_ready: bool,
    /// The real strongSwan data plane (a charon per gateway pod and per client site in
    /// network namespaces, a prober per site), on either backend as `vpnmig-sandbox
    /// --data-plane strongswan` runs it. Its files are in [`Bed::plane_dir`].
    pub strongswan: bool,
    /// Run at the bed's start, before the backend and the data plane start (a row's
    /// turn on the real data plane held): what a row needs there before a start, such as a
    /// network namespace a killed sandbox left.
    pub before_start: Option<fn()>,
}

impl Scenario {
    pub fn new(yaml: &'static str, settings: SettingsFile) -> Scenario {
        Scenario {
            yaml,
            settings,
            reported_is_ready: false,
            strongswan: false,
            before_start: None,
        }
    }

    /// Run `f` at the bed's start ([`Scenario::before_start`]).
    pub fn before_start(self, f: fn()) -> Scenario {
        Scenario {
            before_start: Some(f),
            ..self
        }
    }

    /// On the real strongSwan data plane ([`Scenario::strongswan`]).
    pub fn strongswan(self) -> Scenario {
        Scenario {
            strongswan: true,
            ..self
        }
    }

    /// Ready once every gateway reported a Ready condition ([`Scenario::reported_is_ready`]).
    pub fn reported_is_ready(self) -> Scenario {
        Scenario {
            reported_is_ready: true,
            ..self
        }
    }

    /// A scenario whose text is built at run time (kept for the rest of the test).
    pub fn built(yaml: String, settings: SettingsFile) -> Scenario {
        Scenario::new(Box::leak(yaml.into_boxed_str()), settings)
    }
}

/// The invariants of DESIGN.md §4 checked after a row's steps ([`Bed::invariants`]): the
/// gateway `ns/name` is of `kind` with `peers`, on `fip` (or, when `None`, on the floating
/// IP its journal pins), its PSK Secret `<name>-psk` as before the steps.
pub struct After {
    pub ns: &'static str,
    pub name: &'static str,
    pub fip: Option<&'static str>,
    pub kind: &'static str,
    pub peers: &'static [&'static str],
}

impl After {
    /// acme (fixtures/clusters/acme.yaml) ends as `kind`.
    pub fn acme(kind: &'static str) -> Option<After> {
        Some(After {
            ns: "tenant-acme",
            name: "acme",
            fip: Some("198.51.100.23"),
            kind,
            peers: if kind == "VPNGateway" { &["acme"] } else { &[] },
        })
    }
}

/// A row's steps: an async block given the started bed.
pub type Steps = for<'a> fn(&'a Bed) -> BoxFuture<'a, ()>;

/// One end-to-end case, run once per [`Backend`].
pub struct Row {
    pub scenario: fn() -> Scenario,
    /// The one backend the row needs, and why (printed where it is skipped).
    pub only: Option<(Backend, &'static str)>,
    pub steps: Steps,
    /// Checked after the steps; `None` where the row ends in no settled state (say why in
    /// the row).
    pub after: Option<After>,
}

/// Held exclusively while a real control plane's processes start and its scenario loads
/// (kube-apiserver's start and the CRDs' OpenAPI take both cores for seconds), and shared by
/// a row's timed part ([`Bed::quiet`]): no start runs beside a heartbeat counted to the
/// second. Rows hold it only for those parts: held for every row's whole run, it kept each
/// real start waiting for every running row to end, with no row starting meanwhile, and
/// the cores mostly idle (live_early 120 s at 73 % CPU of the two cores' 200 % before, 92 s
/// after while other builds loaded the machine; live_cutover 496 s in CI before, 329 s
/// after, loaded the same).
static STARTING: std::sync::LazyLock<tokio::sync::RwLock<()>> =
    std::sync::LazyLock::new(|| tokio::sync::RwLock::new(()));

/// Held by a row on the real data plane for its whole run ([`Scenario::strongswan`]).
static PLANE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The longest a row may take: its wait for the real row before it, its start and stop
/// included. The rows' own waits are bounded, but a deadlock in the sandbox's controllers
/// stops the runtime that would fire their timers (a real row once hung for 20 minutes): a
/// plain thread watches instead.
const ROW_BOUND: Duration = Duration::from_secs(15 * 60);

/// Armed for one row: aborts the test binary, naming the row, when the row has not ended
/// within [`ROW_BOUND`]; dropping it (the row's end, or its panic) disarms it.
struct Watchdog(#[allow(dead_code)] std::sync::mpsc::Sender<()>);

impl Watchdog {
    fn arm(name: &str, backend: Backend) -> Watchdog {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let what = format!("row {name} on the {backend}");
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(ROW_BOUND) {
                eprintln!(
                    "{what} has not ended in {} minutes: aborting the test binary (a wait that \
                     never ends, or a deadlock in the sandbox's controllers)",
                    ROW_BOUND.as_secs() / 60
                );
                std::process::abort();
            }
        });
        Watchdog(tx)
    }
}

/// Run `row` (named `name`) on `backend`.
pub async fn run(name: &str, row: Row, backend: Backend) {
    if let Some((only, why)) = row.only
        && only != backend
    {
        eprintln!("SKIPPED on the {backend}: {name}: {why}");
        return;
    }
    let scenario = (row.scenario)();
    // One real data plane at a time (several charons, listeners and probers each; the
    // outage figures the rows print mean more on a quiet machine): taken before the
    // watchdog is armed, so a row's wait for the others is not counted in its bound.
    let _plane_turn = match scenario.strongswan {
        true => Some(PLANE.lock().await),
        false => None,
    };
    let _watchdog = Watchdog::arm(name, backend);
    let started = Instant::now();
    let Some(b) = Bed::start(backend, scenario).await else {
        return;
    };
    let ready = started.elapsed();
    let psk = match &row.after {
        Some(a) => Some(b.psk_fingerprint(a.ns, &format!("{}-psk", a.name)).await),
        None => None,
    };
    (row.steps)(&b).await;
    if let (Some(a), Some(psk)) = (&row.after, psk) {
        let fip = match a.fip {
            Some(f) => f.to_string(),
            None => b.journal(a.ns, a.name).await.expect("a journal")["floatingIP"]
                .as_str()
                .unwrap()
                .to_string(),
        };
        b.invariants(a.ns, a.name, &fip, &psk, a.kind, a.peers)
            .await;
    }
    let gitops = b.gitops.pass_stats();
    eprintln!(
        "ROW {name} on the {backend}: ready in {ready:?}, done in {:?} (GitOps controllers: {} passes, {:?} busy, the longest {:?})",
        started.elapsed(),
        gitops.passes,
        gitops.busy,
        gitops.longest
    );
    drop(b);
}

/// The API resource of `kind`.
fn api_resource((group, version, plural, kind): Kind) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: if group.is_empty() {
            version.into()
        } else {
            format!("{group}/{version}")
        },
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// `rows! { name: Row { … }, … }`: the tests `name::emulated` and `name::real` for each.
#[macro_export]
macro_rules! rows {
    ($( $(#[$doc:meta])* $name:ident : $row:expr ),* $(,)?) => {$(
        $(#[$doc])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn emulated() {
                $crate::live::bed::run(stringify!($name), $row, $crate::live::bed::Backend::Emulated).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn real() {
                $crate::live::bed::run(stringify!($name), $row, $crate::live::bed::Backend::Real).await
            }
        }
    )*};
}

/// A kind the rows read and write: (group, version, plural, kind).
pub type Kind = (&'static str, &'static str, &'static str, &'static str);
pub const IPSECGATEWAY: Kind = (
    "ipsec.bnerd.net",
    "v1alpha1",
    "ipsecgateways",
    "IPsecGateway",
);
pub const VPNGATEWAY: Kind = ("vpn.bnerd.net", "v1alpha1", "vpngateways", "VPNGateway");
pub const VPNPEER: Kind = ("vpn.bnerd.net", "v1alpha1", "vpnpeers", "VPNPeer");
pub const CONFIGMAP: Kind = ("", "v1", "configmaps", "ConfigMap");
pub const SECRET: Kind = ("", "v1", "secrets", "Secret");
pub const LEASE: Kind = ("coordination.k8s.io", "v1", "leases", "Lease");
/// The GitOps owners' kinds.
pub const APPLICATION: Kind = ("argoproj.io", "v1alpha1", "applications", "Application");
pub const KUSTOMIZATION: Kind = (
    "kustomize.toolkit.fluxcd.io",
    "v1",
    "kustomizations",
    "Kustomization",
);
pub const HELMRELEASE: Kind = (
    "helm.toolkit.fluxcd.io",
    "v2",
    "helmreleases",
    "HelmRelease",
);
/// Cluster-scoped: pass `""` as the namespace.
pub const NAMESPACE: Kind = ("", "v1", "namespaces", "Namespace");
/// Cluster-scoped: pass `""` as the namespace.
pub const CRD: Kind = (
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
);

/// A started backend with the scenario loaded and its gateways reconciled.
pub struct Bed {
    pub backend: Backend,
    pub kubeconfig: PathBuf,
    /// cluster-admin, through the API (either backend).
    pub client: kube::Client,
    /// The simulated operator, running in this process against the backend's API.
    pub operator: Arc<Operator>,
    /// The simulated Argo CD and Flux, running in this process against the backend's API.
    pub gitops: Arc<Gitops>,
    /// The emulator, on [`Backend::Emulated`].
    sb: Option<Sandbox>,
    /// The control plane and the fault proxy in front of it, on [`Backend::Real`].
    cp: Option<(ControlPlane, Proxy)>,
    /// The real data plane, when the scenario asked for it ([`Scenario::strongswan`]).
    plane: Option<Arc<vpnmig_sandbox::dataplane::Bed>>,
    dir: tempfile::TempDir,
}

impl Bed {
    /// Start `backend` with `scenario`; `None` (said on stderr) where the real control plane
    /// is not built and not required.
    pub async fn start(backend: Backend, scenario: Scenario) -> Option<Bed> {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let objects = scenario::parse(scenario.yaml).unwrap();
        let reported_is_ready = scenario.reported_is_ready;
        let gateways = objects
            .iter()
            .filter(|o| matches!(o["kind"].as_str(), Some("IPsecGateway" | "VPNGateway")))
            .count();
        // The real data plane's state directory (`dataplane/` in it), on either backend.
        let plane_state = dir.path().join("sandbox");
        if scenario.strongswan
            && let Err(why) = vpnmig_sandbox::dataplane::netns::available()
        {
            if std::env::var_os("VPNMIG_REQUIRE_DATAPLANE").is_some() {
                panic!("the real data plane is required here (VPNMIG_REQUIRE_DATAPLANE) but {why}");
            }
            eprintln!("DID NOT RUN (real data plane): {why}");
            return None;
        }
        if let Some(f) = scenario.before_start {
            f();
        }
        let (sb, cp, operator, gitops, plane) = match backend {
            Backend::Emulated => {
                let sb = Sandbox::start(Config {
                    scenario: objects,
                    settings: scenario.settings,
                    port: 0,
                    data_plane: scenario.strongswan.then(|| plane_state.clone()),
                })
                .await
                .unwrap();
                sb.write_kubeconfig(&kubeconfig).unwrap();
                let (op, gitops) = (sb.operator.clone(), sb.gitops.clone());
                let plane = sb.data_plane.clone();
                (Some(sb), None, op, gitops, plane)
            }
            Backend::Real => {
                let on_both = SettingsFile {
                    operator: scenario.settings.operator.clone(),
                    gitops: scenario.settings.gitops.clone(),
                    users: scenario.settings.users.clone(),
                    groups: scenario.settings.groups.clone(),
                    api: ApiFaults {
                        webhooks: Vec::new(),
                        ..scenario.settings.api.clone()
                    },
                    ..SettingsFile::default()
                };
                assert!(
                    scenario.settings == on_both,
                    "this row's settings have a part only the emulator has (admission webhooks, gc): mark it `only: Some((Backend::Emulated, \"why\"))`"
                );
                match vpnmig_sandbox::controlplane::built() {
                    Ok(_) => {}
                    Err(e @ ControlPlaneError::NotBuilt(_)) => {
                        if std::env::var_os("VPNMIG_REQUIRE_CONTROLPLANE").is_some() {
                            panic!("{e}");
                        }
                        eprintln!("DID NOT RUN (real control plane): {e}");
                        return None;
                    }
                    Err(e) => panic!("{e}"),
                }
                // On this (the test's) thread, which lives as long as the bed: each
                // component dies with the thread that started it.
                let (cp, ns) = {
                    let _starting = STARTING.write().await;
                    // kwok v0.8.0 crashed once during its start in a full run (its node
                    // controller's lazy CEL stage init, goroutines racing; stop 40), and
                    // etcd exited 1 once in CI (stop 40's, its log cut): a component that
                    // exits while the plane starts, before any step of the row, gets one
                    // more start, said on stderr. A second exit fails the row.
                    let cp = match ControlPlane::start() {
                        Err(e @ ControlPlaneError::Exited { .. }) => {
                            eprintln!("RETRIED the real control plane's start once: {e}");
                            ControlPlane::start().unwrap_or_else(|e| panic!("{e}"))
                        }
                        other => other.unwrap_or_else(|e| panic!("{e}")),
                    };
                    let ns = vpnmig_sandbox::controlplane::load(&cp, &objects)
                        .unwrap_or_else(|e| panic!("loading the scenario: {e}"));
                    (cp, ns)
                };
                let users = rbac_users(&cp, &scenario.settings.users);
                rbac_groups(&cp, &scenario.settings.groups);
                let mut all = vec![&cp.admin];
                all.extend(users.iter());
                // The emulator names its cluster-admin context `vpnmig-sandbox` and a user's
                // `vpnmig-sandbox-<user>`: the same here (vpnmig names the context in its
                // messages and hints).
                // Through the fault proxy, always: a row switches the API faults at run
                // time through `Bed::api_faults` as on the emulator. The operator, the
                // controllers and kwok speak to kube-apiserver directly, as the emulator's
                // operator and collector work on its store, out of the faults' reach.
                let faults = Arc::new(std::sync::RwLock::new(scenario.settings.api.clone()));
                let proxy = Proxy::start(&cp.url, &cp.ca_pem, &all, faults)
                    .await
                    .unwrap_or_else(|e| panic!("the fault proxy: {e}"));
                let text = cp
                    .kubeconfig_at(&proxy.url(), proxy.ca_pem(), &all, ns.as_deref())
                    .replace("vpnmig-controlplane", "vpnmig-sandbox");
                std::fs::write(&kubeconfig, text).unwrap();
                // The real data plane as `vpnmig-sandbox --control-plane real --data-plane
                // strongswan` starts it: the client's timing from the operator's settings.
                let plane = scenario.strongswan.then(|| {
                    let o = &scenario.settings.operator;
                    let timing = vpnmig_sandbox::dataplane::Timing {
                        retransmit_timeout_s: o.client_retransmit_ms as f64 / 1000.0,
                        retransmit_tries: 2,
                    };
                    vpnmig_sandbox::dataplane::Bed::start(&plane_state, timing)
                        .unwrap_or_else(|e| panic!("the real data plane: {e}"))
                });
                let op = real_operator(&cp, scenario.settings.operator, plane.clone()).await;
                // The simulated Argo CD and Flux, as `vpnmig-sandbox --control-plane real`
                // runs them: over the API as cluster-admin, out of the faults' reach.
                let admin = client(&cp.admin_kubeconfig()).await;
                let gitops = Gitops::start_kube(
                    vpnmig_sandbox::gitops::kube::KubeGitopsApi::new(admin.clone()),
                    admin,
                    scenario.settings.gitops,
                )
                .await;
                (None, Some((cp, proxy)), op, gitops, plane)
            }
        };
        // The rows' own reads and writes go through the API faults: without kube's retry
        // layer (15 retries of a 503 with a backoff up to 1000 s), so a harness read that
        // meets a fault fails at once instead of minutes later, as vpnmig turns it off too.
        let client = {
            let kc = kube::config::Kubeconfig::read_from(&kubeconfig).unwrap();
            let mut config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
                .await
                .unwrap();
            config.default_retry = false;
            kube::Client::try_from(config).unwrap()
        };
        let b = Bed {
            backend,
            kubeconfig,
            client,
            operator,
            gitops,
            sb,
            cp,
            plane,
            dir,
        };
        // Every gateway of the scenario, of either kind, reconciled: Ready reported (bounded). On the real
        // control plane the operator starts from the recorded status and its first
        // reconcile says Ready=False (WorkloadNotReady) until the cluster's controllers and
        // kwok run the gateway's Pod: wait for Ready=True there, as for a live cluster.
        // 60 s, and a second more a gateway past ten (a benchmark's fleet: each gateway's
        // Deployment, ReplicaSet and Pod are made by the cluster's controllers in turn).
        let limit = 60 + gateways.saturating_sub(10) as u64;
        let deadline = Instant::now() + Duration::from_secs(limit);
        loop {
            let mut all = b.all(IPSECGATEWAY).await;
            all.extend(b.all(VPNGATEWAY).await);
            let ready = all.iter().all(|g| {
                g["status"]["conditions"].as_array().is_some_and(|c| {
                    c.iter().any(|c| {
                        c["type"] == "Ready"
                            && (backend == Backend::Emulated
                                || reported_is_ready
                                || c["status"] == "True")
                    })
                })
            });
            if ready && (all.len() >= gateways || b.backend == Backend::Emulated) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the scenario's gateways were not Ready within {limit} s on the {backend}: {all:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // On the real control plane, no step before kube-apiserver stops holding a create
        // of the scenario's custom resources (2 s after their CRDs' Established: see
        // `ControlPlane::until_crds_settled`); most of it has passed by now.
        if let Some((cp, _)) = &b.cp {
            tokio::time::sleep(cp.until_crds_settled()).await;
        }
        Some(b)
    }

    /// Held by a row's timed part (a heartbeat counted to the second, a run's silence
    /// bounded): no real control plane starts beside it while the guard lives (one under
    /// way ends first).
    pub async fn quiet(&self) -> tokio::sync::RwLockReadGuard<'static, ()> {
        STARTING.read().await
    }

    /// The emulator, for a row that says `only: Some((Backend::Emulated, …))`.
    pub fn emulator(&self) -> &Sandbox {
        self.sb.as_ref().unwrap_or_else(|| {
            panic!("this row uses the emulator's own state: mark it `only: Some((Backend::Emulated, \"why\"))`")
        })
    }

    /// The API fault knobs (`settings.api` without its webhooks), changeable at run time
    /// on both backends: the emulator's own, or the fault proxy's in front of
    /// kube-apiserver.
    pub fn api_faults(&self) -> &Arc<std::sync::RwLock<ApiFaults>> {
        match (&self.sb, &self.cp) {
            (Some(sb), _) => &sb.api_faults,
            (None, Some((_, proxy))) => &proxy.faults,
            (None, None) => unreachable!("a bed has a backend"),
        }
    }

    /// The API requests vpnmig and the rows made so far: the emulator's count, or the
    /// fault proxy's in front of kube-apiserver (the operator, the GitOps controllers,
    /// kwok and the cluster's controllers speak to kube-apiserver directly, uncounted).
    pub fn api_requests(&self) -> u64 {
        use std::sync::atomic::Ordering;
        match (&self.sb, &self.cp) {
            (Some(sb), _) => sb.requests.load(Ordering::Relaxed),
            (None, Some((_, proxy))) => proxy.requests.load(Ordering::Relaxed),
            (None, None) => unreachable!("a bed has a backend"),
        }
    }

    /// Every request the fault proxy forwarded so far (verb, resource, namespace, status),
    /// on [`Backend::Real`]: what a row reads to tell which verbs a command used.
    pub fn proxy_log(&self) -> Option<Vec<vpnmig_sandbox::proxy::Logged>> {
        self.cp
            .as_ref()
            .map(|(_, proxy)| proxy.log.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// The real data plane, when the scenario asked for it ([`Scenario::strongswan`]).
    pub fn plane(&self) -> &vpnmig_sandbox::dataplane::Bed {
        self.plane
            .as_deref()
            .expect("this row's scenario has no real data plane: `Scenario::strongswan`")
    }

    /// The real data plane's files (`probe.jsonl`, `sites.json`, a directory per daemon).
    pub fn plane_dir(&self) -> PathBuf {
        self.dir.path().join("sandbox").join("dataplane")
    }

    /// Stop the operator, then the real data plane's daemons, removing its network
    /// namespaces (as the sandbox does when it stops), on either backend.
    pub async fn stop_plane(&self) {
        self.operator.shutdown();
        let p = self.plane.clone().expect("a real data plane");
        tokio::task::spawn_blocking(move || p.shutdown())
            .await
            .unwrap();
    }

    /// The real control plane, on [`Backend::Real`].
    pub fn control_plane(&self) -> Option<&ControlPlane> {
        self.cp.as_ref().map(|(cp, _)| cp)
    }

    /// The emulator store's resourceVersion now (what `events_after` reads from), on the
    /// emulator; `None` on the real control plane.
    pub fn emulator_rv(&self) -> Option<u64> {
        self.sb.as_ref().map(|sb| sb.store.resource_version())
    }

    /// The working directory vpnmig runs in (where default bundles land).
    pub fn cwd(&self) -> &Path {
        self.dir.path()
    }

    /// `vpnmig ARGS` with this bed's kubeconfig.
    pub async fn vpnmig(&self, args: &[&str]) -> Run {
        super::run_vpnmig(&self.kubeconfig, args).await
    }

    /// A step: `vpnmig ARGS` exits `code`, and says each of `says` (on stderr, as
    /// [`Run::says`] reads it).
    pub async fn step(&self, args: &[&str], code: i32, says: &[&str]) -> Run {
        let r = self.vpnmig(args).await;
        assert_eq!(
            r.code, code,
            "vpnmig {args:?} on the {}:\n{}\n{}",
            self.backend, r.stdout, r.stderr
        );
        for line in says {
            assert!(
                r.says(line),
                "vpnmig {args:?} on the {}: missing `{line}` in\n{}",
                self.backend,
                r.stderr
            );
        }
        r
    }

    /// Start `vpnmig ARGS` in the background (stdout and stderr captured).
    pub fn spawn(&self, args: &[&str]) -> std::process::Child {
        std::process::Command::new(env!("CARGO_BIN_EXE_vpnmig"))
            .current_dir(self.cwd())
            .env("KUBECONFIG", &self.kubeconfig)
            .env("VPNMIG_STATE_DIR", self.cwd().join("state"))
            .env("NO_COLOR", "1")
            .env_remove("COLUMNS")
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Run the `vpnmig` command `args` that a message advised, with `more` added (those it
    /// has already left out: advice to a run with `--yes` has it).
    pub async fn run_advised(&self, args: &[String], more: &[&str]) -> Run {
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        all.extend(more.iter().filter(|m| !args.iter().any(|a| a == *m)));
        self.vpnmig(&all).await
    }

    /// Set a fault knob of one gateway (`kind/namespace/name`) and have the operator act on
    /// it now.
    pub fn fault(
        &self,
        key: &str,
        set: impl FnOnce(&mut vpnmig_sandbox::operator::settings::GatewayFaults),
    ) {
        set(self.operator.settings().write().unwrap().gateway_mut(key));
        self.operator.kick();
    }

    fn api(&self, (group, version, plural, kind): Kind, ns: &str) -> Api<DynamicObject> {
        let ar = ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: if group.is_empty() {
                version.into()
            } else {
                format!("{group}/{version}")
            },
            kind: kind.into(),
            plural: plural.into(),
        };
        if ns.is_empty() {
            // A cluster-scoped kind (a CustomResourceDefinition, a Namespace).
            Api::all_with(self.client.clone(), &ar)
        } else {
            Api::namespaced_with(self.client.clone(), ns, &ar)
        }
    }

    /// The object, through the API (`None` when not found).
    pub async fn get(&self, kind: Kind, ns: &str, name: &str) -> Option<Value> {
        let o = self
            .api(kind, ns)
            .get_opt(name)
            .await
            .unwrap_or_else(|e| panic!("GET {} {ns}/{name}: {e}", kind.2))?;
        Some(serde_json::to_value(o).unwrap())
    }

    /// Every object of `kind` in `ns`, through the API (those being deleted too).
    pub async fn list(&self, kind: Kind, ns: &str) -> Vec<Value> {
        self.api(kind, ns)
            .list(&ListParams::default())
            .await
            .unwrap_or_else(|e| panic!("LIST {} in {ns}: {e}", kind.2))
            .items
            .into_iter()
            .map(|o| serde_json::to_value(o).unwrap())
            .collect()
    }

    async fn all(&self, (group, version, plural, kind): Kind) -> Vec<Value> {
        let ar = ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: format!("{group}/{version}"),
            kind: kind.into(),
            plural: plural.into(),
        };
        Api::<DynamicObject>::all_with(self.client.clone(), &ar)
            .list(&ListParams::default())
            .await
            .map(|l| {
                l.items
                    .into_iter()
                    .map(|o| serde_json::to_value(o).unwrap())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The live (not being deleted) objects of `kind` in `ns`.
    pub async fn objects(&self, kind: Kind, ns: &str) -> Vec<Value> {
        self.list(kind, ns)
            .await
            .into_iter()
            .filter(|o| o["metadata"]["deletionTimestamp"].is_null())
            .collect()
    }

    /// Whether the object exists with a deletionTimestamp (a finalizer holds it).
    pub async fn deleting(&self, kind: Kind, ns: &str, name: &str) -> bool {
        self.get(kind, ns, name)
            .await
            .is_some_and(|o| !o["metadata"]["deletionTimestamp"].is_null())
    }

    /// Change an object as someone else would (an Update, no field manager): `f` edits
    /// what was read; written back with its resourceVersion (again on a conflict, at most
    /// 5 times).
    pub async fn edit(&self, kind: Kind, ns: &str, name: &str, f: impl Fn(&mut Value)) {
        self.write(kind, ns, name, PostParams::default(), f).await;
    }

    /// [`Bed::edit`] by field manager `manager` (an Update, as `kubectl edit` is
    /// `kubectl-edit`).
    pub async fn edit_as(
        &self,
        kind: Kind,
        ns: &str,
        name: &str,
        manager: &str,
        f: impl Fn(&mut Value),
    ) {
        let pp = PostParams {
            field_manager: Some(manager.into()),
            ..Default::default()
        };
        self.write(kind, ns, name, pp, f).await;
    }

    async fn write(
        &self,
        kind: Kind,
        ns: &str,
        name: &str,
        pp: PostParams,
        f: impl Fn(&mut Value),
    ) {
        let api = self.api(kind, ns);
        for _ in 0..5 {
            let mut o = self.get(kind, ns, name).await.expect("the object exists");
            f(&mut o);
            let o: DynamicObject = serde_json::from_value(o).unwrap();
            match api.replace(name, &pp, &o).await {
                Ok(_) => return,
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => panic!("PUT {} {ns}/{name}: {e}", kind.2),
            }
        }
        panic!("PUT {} {ns}/{name}: a conflict five times", kind.2);
    }

    /// Create `obj` in `ns`, or replace the spec and labels of the object of its name.
    pub async fn put(&self, kind: Kind, ns: &str, obj: Value) {
        let name = obj["metadata"]["name"].as_str().unwrap().to_string();
        if self.get(kind, ns, &name).await.is_some() {
            self.edit(kind, ns, &name, |cur| {
                cur["spec"] = obj["spec"].clone();
                cur["metadata"]["labels"] = obj["metadata"]["labels"].clone();
            })
            .await;
            return;
        }
        let mut o = obj.clone();
        o["apiVersion"] = Value::String(if kind.0.is_empty() {
            kind.1.into()
        } else {
            format!("{}/{}", kind.0, kind.1)
        });
        o["kind"] = Value::String(kind.3.into());
        let o: DynamicObject = serde_json::from_value(o).unwrap();
        self.api(kind, ns)
            .create(&PostParams::default(), &o)
            .await
            .unwrap_or_else(|e| panic!("POST {} {ns}/{name}: {e}", kind.2));
    }

    /// Create `obj` in `ns` (its `metadata.name` set) by field manager `manager` (a
    /// Create, as `kubectl create` is `kubectl-create`).
    pub async fn create_as(&self, kind: Kind, ns: &str, manager: &str, obj: Value) {
        let name = obj["metadata"]["name"].as_str().unwrap().to_string();
        let mut o = obj;
        o["apiVersion"] = Value::String(if kind.0.is_empty() {
            kind.1.into()
        } else {
            format!("{}/{}", kind.0, kind.1)
        });
        o["kind"] = Value::String(kind.3.into());
        let o: DynamicObject = serde_json::from_value(o).unwrap();
        let pp = PostParams {
            field_manager: Some(manager.into()),
            ..Default::default()
        };
        self.api(kind, ns)
            .create(&pp, &o)
            .await
            .unwrap_or_else(|e| panic!("POST {} {ns}/{name} as {manager}: {e}", kind.2));
    }

    /// A JSON merge patch of the object by field manager `manager`, as `kubectl patch
    /// --type merge -p PATCH` (kubectl's manager is `kubectl-patch`).
    pub async fn patch_as(&self, kind: Kind, ns: &str, name: &str, manager: &str, patch: Value) {
        let pp = kube::api::PatchParams {
            field_manager: Some(manager.into()),
            ..Default::default()
        };
        self.api(kind, ns)
            .patch(name, &pp, &kube::api::Patch::Merge(&patch))
            .await
            .unwrap_or_else(|e| panic!("PATCH {} {ns}/{name}: {e}", kind.2));
    }

    /// A forced server-side apply of `obj` (its `apiVersion`, `kind` and `metadata.name`
    /// set) by field manager `manager`, as another tool's `kubectl apply --server-side
    /// --force-conflicts` (creates the object when it does not exist).
    pub async fn apply_as(&self, kind: Kind, ns: &str, manager: &str, obj: Value) {
        let name = obj["metadata"]["name"].as_str().unwrap().to_string();
        let pp = kube::api::PatchParams::apply(manager).force();
        self.api(kind, ns)
            .patch(&name, &pp, &kube::api::Patch::Apply(&obj))
            .await
            .unwrap_or_else(|e| panic!("APPLY {} {ns}/{name} as {manager}: {e}", kind.2));
    }

    /// The object's uid, when it exists and is not being deleted.
    pub async fn uid(&self, kind: Kind, ns: &str, name: &str) -> Option<String> {
        self.get(kind, ns, name)
            .await
            .filter(|o| o["metadata"]["deletionTimestamp"].is_null())
            .map(|o| o["metadata"]["uid"].as_str().unwrap().to_string())
    }

    /// Delete the object (the server's default propagation).
    pub async fn delete(&self, kind: Kind, ns: &str, name: &str) {
        self.api(kind, ns)
            .delete(name, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("DELETE {} {ns}/{name}: {e}", kind.2));
    }

    /// Delete the object and wait (at most `secs` seconds) until it is gone: its
    /// finalizers' unwind finished (the operator's, for a gateway).
    pub async fn delete_until_gone(&self, kind: Kind, ns: &str, name: &str, secs: u64) {
        self.delete(kind, ns, name).await;
        eventually(
            secs,
            &format!("{} {ns}/{name} to be gone after its delete", kind.2),
            || async { self.get(kind, ns, name).await.is_none() },
        )
        .await;
    }

    /// Write `f`'s edit of the object's status through the status subresource, as its
    /// controller would (again on a conflict, at most 5 times).
    pub async fn edit_status(&self, kind: Kind, ns: &str, name: &str, f: impl Fn(&mut Value)) {
        let api = self.api(kind, ns);
        for _ in 0..5 {
            let mut o = self.get(kind, ns, name).await.expect("the object exists");
            f(&mut o);
            let o: DynamicObject = serde_json::from_value(o).unwrap();
            match api.replace_status(name, &PostParams::default(), &o).await {
                Ok(_) => return,
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => panic!("PUT {}/status {ns}/{name}: {e}", kind.2),
            }
        }
        panic!("PUT {}/status {ns}/{name}: a conflict five times", kind.2);
    }

    /// A client of kube-apiserver itself (cluster-admin, not through the fault proxy), on
    /// [`Backend::Real`].
    async fn direct(&self) -> kube::Client {
        let cp = &self.cp.as_ref().expect("the real control plane").0;
        client(&cp.admin_kubeconfig()).await
    }

    /// [`Bed::get`] out of the API faults' reach, as the operator and the GitOps
    /// controllers read: the emulator's store, or kube-apiserver itself. For a row whose
    /// faults hold a gap open for vpnmig only (a latency between two of its requests) and
    /// act in it.
    pub async fn get_unfaulted(&self, kind: Kind, ns: &str, name: &str) -> Option<Value> {
        match &self.sb {
            Some(sb) => {
                let rt = sb.store.resource(kind.0, kind.1, kind.2)?;
                sb.store.get(&rt, ns, name).ok()
            }
            None => {
                let api = Api::<DynamicObject>::namespaced_with(
                    self.direct().await,
                    ns,
                    &api_resource(kind),
                );
                let o = api
                    .get_opt(name)
                    .await
                    .unwrap_or_else(|e| panic!("GET {} {ns}/{name}: {e}", kind.2))?;
                Some(serde_json::to_value(o).unwrap())
            }
        }
    }

    /// [`Bed::edit`] out of the API faults' reach ([`Bed::get_unfaulted`]).
    pub async fn edit_unfaulted(&self, kind: Kind, ns: &str, name: &str, f: impl Fn(&mut Value)) {
        match &self.sb {
            Some(sb) => {
                let rt = sb.store.resource(kind.0, kind.1, kind.2).unwrap();
                sb.store
                    .modify(&rt, ns, name, false, &Default::default(), |o| {
                        let mut o = o.clone();
                        f(&mut o);
                        Ok(o)
                    })
                    .unwrap_or_else(|e| panic!("PUT {} {ns}/{name}: {e:?}", kind.2));
            }
            None => {
                let api = Api::<DynamicObject>::namespaced_with(
                    self.direct().await,
                    ns,
                    &api_resource(kind),
                );
                for _ in 0..5 {
                    let mut o = serde_json::to_value(api.get(name).await.unwrap()).unwrap();
                    f(&mut o);
                    let o: DynamicObject = serde_json::from_value(o).unwrap();
                    match api.replace(name, &PostParams::default(), &o).await {
                        Ok(_) => return,
                        Err(kube::Error::Api(s)) if s.code == 409 => continue,
                        Err(e) => panic!("PUT {} {ns}/{name}: {e}", kind.2),
                    }
                }
                panic!("PUT {} {ns}/{name}: a conflict five times", kind.2);
            }
        }
    }

    /// Create `obj` in `ns` out of the API faults' reach ([`Bed::get_unfaulted`]).
    pub async fn create_unfaulted(&self, kind: Kind, ns: &str, obj: Value) {
        let name = obj["metadata"]["name"].as_str().unwrap().to_string();
        let mut o = obj;
        o["apiVersion"] = Value::String(api_resource(kind).api_version);
        o["kind"] = Value::String(kind.3.into());
        match &self.sb {
            Some(sb) => {
                let rt = sb.store.resource(kind.0, kind.1, kind.2).unwrap();
                sb.store
                    .create(&rt, ns, o, &Default::default())
                    .unwrap_or_else(|e| panic!("POST {} {ns}/{name}: {e:?}", kind.2));
            }
            None => {
                let o: DynamicObject = serde_json::from_value(o).unwrap();
                Api::<DynamicObject>::namespaced_with(self.direct().await, ns, &api_resource(kind))
                    .create(&PostParams::default(), &o)
                    .await
                    .unwrap_or_else(|e| panic!("POST {} {ns}/{name}: {e}", kind.2));
            }
        }
    }

    /// The journal document of gateway `name`, if written.
    pub async fn journal(&self, ns: &str, name: &str) -> Option<Value> {
        let cm = self.get(CONFIGMAP, ns, &format!("vpnmig-{name}")).await?;
        Some(serde_json::from_str(cm["data"]["journal.json"].as_str().unwrap()).unwrap())
    }

    /// The journal's phase.
    pub async fn phase(&self, ns: &str, name: &str) -> Option<String> {
        self.journal(ns, name)
            .await
            .map(|j| j["phase"].as_str().unwrap().to_string())
    }

    /// Return the moment gateway `ns/name`'s journal records phase `at` (bounded by
    /// `secs`), reading each change as it lands, out of the API faults' reach: the
    /// emulator's store, or a watch on kube-apiserver itself (not through the fault proxy).
    /// A row that kills vpnmig at a phase boundary kills it here.
    pub async fn until_phase(&self, ns: &str, name: &str, at: &str, secs: u64) {
        use futures::StreamExt;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        let cm = format!("vpnmig-{name}");
        let phase_of = |o: &Value| -> Option<String> {
            let j: Value = serde_json::from_str(o["data"]["journal.json"].as_str()?).ok()?;
            j["phase"].as_str().map(String::from)
        };
        let missed = |seen: Option<String>| {
            panic!(
                "{}: the journal of {ns}/{name} never recorded phase {at} within {secs} s (last seen {seen:?})",
                self.backend
            )
        };
        match (&self.sb, &self.cp) {
            (Some(sb), _) => {
                // Every change from the store's event log, not only the latest state: a
                // phase that lasts a few milliseconds (the emulator's operator unwinds a
                // finalizer at once) is seen even when this task runs late.
                let rt = sb.store.resource("", "v1", "configmaps").unwrap();
                let mut changes = sb.store.subscribe();
                let mut rv = sb.store.resource_version();
                let mut seen = sb.store.get(&rt, ns, &cm).ok().and_then(|o| phase_of(&o));
                loop {
                    if seen.as_deref() == Some(at) {
                        return;
                    }
                    let events = sb.store.events_after(rv).unwrap_or_else(|e| {
                        panic!("reading the emulator's events after {rv}: {e:?}")
                    });
                    for e in events {
                        rv = e.rv;
                        let o = &e.object;
                        if e.gvr.plural == "configmaps"
                            && e.gvr.group.is_empty()
                            && o["metadata"]["namespace"] == ns
                            && o["metadata"]["name"] == cm.as_str()
                        {
                            seen = phase_of(o);
                            if seen.as_deref() == Some(at) {
                                return;
                            }
                        }
                    }
                    if tokio::time::timeout_at(deadline, changes.changed())
                        .await
                        .is_err()
                    {
                        missed(seen.clone());
                    }
                }
            }
            (None, Some((cp, _))) => {
                let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
                    kube::Api::namespaced(client(&cp.admin_kubeconfig()).await, ns);
                let params =
                    kube::api::WatchParams::default().fields(&format!("metadata.name={cm}"));
                let mut events = api.watch(&params, "0").await.unwrap().boxed();
                let mut seen = None;
                loop {
                    match tokio::time::timeout_at(deadline, events.next()).await {
                        Ok(Some(Ok(
                            kube::api::WatchEvent::Added(o) | kube::api::WatchEvent::Modified(o),
                        ))) => {
                            seen = phase_of(&serde_json::to_value(&o).unwrap());
                            if seen.as_deref() == Some(at) {
                                return;
                            }
                        }
                        Ok(Some(Ok(_))) => {}
                        Ok(Some(Err(e))) => panic!("watching the journal {ns}/{cm}: {e}"),
                        Ok(None) => panic!("the watch on the journal {ns}/{cm} ended"),
                        Err(_) => missed(seen.clone()),
                    }
                }
            }
            (None, None) => unreachable!("a bed has a backend"),
        }
    }

    /// The lock of gateway `name` (its Lease), if held.
    pub async fn lease(&self, ns: &str, name: &str) -> Option<Value> {
        self.get(LEASE, ns, &format!("vpnmig-{name}")).await
    }

    /// Nothing was changed for gateway `ns/name`: no journal written, no lock left, the
    /// IPsecGateway alone in `ns` and no VPNGateway.
    pub async fn untouched(&self, ns: &str, name: &str) {
        let on = self.backend;
        assert!(
            self.journal(ns, name).await.is_none(),
            "{on}: no journal written"
        );
        assert!(self.lease(ns, name).await.is_none(), "{on}: no lock left");
        assert_eq!(self.objects(IPSECGATEWAY, ns).await.len(), 1, "{on}");
        assert!(self.objects(VPNGATEWAY, ns).await.is_empty(), "{on}");
    }

    /// The PSK Secret's salted fingerprint, as vpnmig computes it.
    pub async fn psk_fingerprint(&self, ns: &str, secret: &str) -> String {
        let s = self
            .get(SECRET, ns, secret)
            .await
            .expect("the PSK Secret exists");
        let bytes = vpnmig::core::psk::value(&s, "psk").expect("the Secret has its key");
        let uid = s["metadata"]["uid"].as_str();
        vpnmig::core::psk::fingerprint(ns, secret, "psk", uid, &bytes)
    }

    /// DESIGN.md §4, read through the API (the floating IPs from the operator's simulated
    /// OpenStack): the FIP was never released to the pool and is associated with the live
    /// gateway (`kind`); the PSK Secret exists with `psk`; the old manifest is in the
    /// journal (when one was written); exactly one gateway of one kind plus its peers
    /// exists, nothing orphaned; no lock is left.
    pub async fn invariants(
        &self,
        ns: &str,
        name: &str,
        fip: &str,
        psk: &str,
        kind: &str,
        peers: &[&str],
    ) {
        let on = self.backend;
        let fips = self.operator.floating_ips();
        assert!(
            !fips.released.contains(&fip.to_string()),
            "{on}: {fip} was released to the pool: {fips:?}"
        );
        assert_eq!(
            fips.associated.get(fip),
            Some(&format!("{kind} {ns}/{name}")),
            "{on}: {fips:?}"
        );
        assert_eq!(
            self.psk_fingerprint(ns, &format!("{name}-psk")).await,
            psk,
            "{on}"
        );
        if let Some(j) = self.journal(ns, name).await {
            let cm = self
                .get(CONFIGMAP, ns, &format!("vpnmig-{name}"))
                .await
                .unwrap();
            let old: Value =
                serde_saphyr::from_str(cm["data"]["old-ipsecgateway.yaml"].as_str().unwrap())
                    .unwrap();
            assert_eq!(old["kind"], "IPsecGateway", "{on}");
            assert_eq!(old["metadata"]["name"], name, "{on}");
            assert_eq!(old["spec"]["endpoint"]["floatingIP"], fip, "{on}");
            assert!(
                old["metadata"]["uid"].is_null() && old["status"].is_null(),
                "{on}: {old}"
            );
            assert_eq!(j["oldManifest"], old, "{on}");
        }
        let names = |v: &[Value]| -> Vec<String> {
            let mut n: Vec<String> = v
                .iter()
                .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
                .collect();
            n.sort();
            n
        };
        let old = self.objects(IPSECGATEWAY, ns).await;
        let new = self.objects(VPNGATEWAY, ns).await;
        let peer_names = names(&self.objects(VPNPEER, ns).await);
        if kind == "VPNGateway" {
            assert_eq!(names(&new), [name], "{on}: one VPNGateway");
            assert!(
                names(&old).is_empty(),
                "{on}: no IPsecGateway left: {old:?}"
            );
            assert_eq!(peer_names, peers, "{on}");
        } else {
            assert_eq!(names(&old), [name], "{on}: one IPsecGateway");
            assert!(names(&new).is_empty(), "{on}: no VPNGateway left");
            assert!(
                peer_names.is_empty(),
                "{on}: no VPNPeer orphaned: {peer_names:?}"
            );
        }
        assert!(
            self.lease(ns, name).await.is_none(),
            "{on}: the lock was released"
        );
    }
}

/// DESIGN.md §4.1 across every row: whatever it did, no floating IP was released to the
/// pool. Checked when the bed goes away (not while a row is already failing).
impl Drop for Bed {
    fn drop(&mut self) {
        self.gitops.shutdown();
        self.operator.shutdown();
        // The data plane's daemons and namespaces go with the row (idempotent).
        if let Some(p) = &self.plane {
            p.shutdown();
        }
        if std::thread::panicking() {
            return;
        }
        let fips = self.operator.floating_ips();
        assert!(
            fips.released.is_empty(),
            "a floating IP was released to the pool during this row on the {}: {:?}",
            self.backend,
            fips.released
        );
    }
}

/// The first backquoted `vpnmig …` command in `text` that starts with `prefix`, as
/// arguments (without `vpnmig`).
pub fn advised(text: &str, prefix: &str) -> Vec<String> {
    super::advised(text)
        .into_iter()
        .find(|args| args.join(" ").starts_with(prefix))
        .unwrap_or_else(|| panic!("no `vpnmig {prefix}…` advised in:\n{text}"))
}

/// Poll `cond` (async) every 20 ms until it holds; panics after `secs` seconds naming `what`.
pub async fn eventually<F, Fut>(secs: u64, what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !cond().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The emulator's `users:` as the real control plane has users: a client certificate each
/// (no groups), a ClusterRole of its rules for every namespace bound to it, and a Role of
/// its rules for some namespaces bound to it in each of them (each rule for every API
/// group, as the emulator's rules name resources without groups). Every authenticated user
/// keeps `system:basic-user` (it may create SelfSubjectAccessReviews), unless one is
/// `without_basic_user`: then the cluster's `system:basic-user` binding (to every
/// authenticated user) is replaced by one naming the users that keep it, as a hardened
/// cluster does.
fn rbac_users(
    cp: &ControlPlane,
    users: &[vpnmig_sandbox::api::auth::User],
) -> Vec<vpnmig_sandbox::controlplane::ClientCert> {
    use serde_json::json;
    let rules = |rules: &[&vpnmig_sandbox::api::auth::Rule]| -> Vec<Value> {
        rules
            .iter()
            .map(|r| json!({"apiGroups": ["*"], "resources": r.resources, "verbs": r.verbs}))
            .collect()
    };
    let apply = |user: &str, d: Value| {
        cp.apply_objects(&[d])
            .unwrap_or_else(|e| panic!("user {user}: {e}"));
    };
    let rbac = "rbac.authorization.k8s.io";
    let certs = users
        .iter()
        .map(|u| {
            let role = format!("vpnmig-user-{}", u.name);
            let subject = json!([{"apiGroup": rbac, "kind": "User", "name": u.name}]);
            let everywhere: Vec<_> = u.rules.iter().filter(|r| r.namespaces.is_empty()).collect();
            apply(
                &u.name,
                json!({"apiVersion": format!("{rbac}/v1"), "kind": "ClusterRole",
                "metadata": {"name": role}, "rules": rules(&everywhere)}),
            );
            apply(
                &u.name,
                json!({"apiVersion": format!("{rbac}/v1"), "kind": "ClusterRoleBinding",
                "metadata": {"name": role},
                "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": role},
                "subjects": subject}),
            );
            let mut namespaces: Vec<&String> =
                u.rules.iter().flat_map(|r| r.namespaces.iter()).collect();
            namespaces.sort();
            namespaces.dedup();
            for ns in namespaces {
                let here: Vec<_> = u
                    .rules
                    .iter()
                    .filter(|r| r.namespaces.contains(ns))
                    .collect();
                apply(
                    &u.name,
                    json!({"apiVersion": format!("{rbac}/v1"), "kind": "Role",
                    "metadata": {"name": role, "namespace": ns}, "rules": rules(&here)}),
                );
                apply(
                    &u.name,
                    json!({"apiVersion": format!("{rbac}/v1"), "kind": "RoleBinding",
                    "metadata": {"name": role, "namespace": ns},
                    "roleRef": {"apiGroup": rbac, "kind": "Role", "name": role},
                    "subjects": subject}),
                );
            }
            cp.client(&u.name, &[])
                .unwrap_or_else(|e| panic!("user {}: {e}", u.name))
        })
        .collect();
    if users.iter().any(|u| u.without_basic_user) {
        let keep: Vec<Value> = users
            .iter()
            .filter(|u| !u.without_basic_user)
            .map(|u| json!({"apiGroup": rbac, "kind": "User", "name": u.name}))
            .collect();
        apply(
            "without basic-user",
            json!({"apiVersion": format!("{rbac}/v1"), "kind": "ClusterRoleBinding",
                "metadata": {"name": "vpnmig-basic-users"},
                "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "system:basic-user"},
                "subjects": keep}),
        );
        cp.kubectl(&["delete", "clusterrolebinding", "system:basic-user"])
            .unwrap_or_else(|e| panic!("removing the system:basic-user binding: {e}"));
    }
    certs
}

/// The emulator's `groups:` as the real control plane has them: a ClusterRole of each
/// group's rules (each rule for every API group) bound to the group, for what a request
/// impersonating the group (`--as-group`) may do. A group's rule that names namespaces is
/// not translated yet (none does): it fails here rather than grant more.
fn rbac_groups(cp: &ControlPlane, groups: &[vpnmig_sandbox::api::auth::Group]) {
    use serde_json::json;
    let rbac = "rbac.authorization.k8s.io";
    for g in groups {
        assert!(
            g.rules.iter().all(|r| r.namespaces.is_empty()),
            "group {}: a rule for some namespaces is not translated to RBAC yet",
            g.name
        );
        let role = format!("vpnmig-group-{}", g.name);
        let rules: Vec<Value> = g
            .rules
            .iter()
            .map(|r| json!({"apiGroups": ["*"], "resources": r.resources, "verbs": r.verbs}))
            .collect();
        cp.apply_objects(&[
            json!({"apiVersion": format!("{rbac}/v1"), "kind": "ClusterRole",
                "metadata": {"name": role}, "rules": rules}),
            json!({"apiVersion": format!("{rbac}/v1"), "kind": "ClusterRoleBinding",
                "metadata": {"name": role},
                "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": role},
                "subjects": [{"apiGroup": rbac, "kind": "Group", "name": g.name}]}),
        ])
        .unwrap_or_else(|e| panic!("group {}: {e}", g.name));
    }
}

async fn client(kubeconfig: &Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// The simulated operator as a controller over the real API (as `vpnmig-sandbox
/// --control-plane real` runs it), in this process: pod exec into its gateway pods comes
/// back through kwok, the `swanctl` written into `exec/` and a unix socket.
async fn real_operator(
    cp: &ControlPlane,
    settings: vpnmig_sandbox::operator::settings::Settings,
    plane: Option<Arc<vpnmig_sandbox::dataplane::Bed>>,
) -> Arc<Operator> {
    use vpnmig_sandbox::operator::kube::{
        ExecHook, KubeApi, WORKERS, serve_exec_tcp, swanctl_bash,
    };
    let client = client(&cp.admin_kubeconfig()).await;
    let api = KubeApi::new(client.clone())
        .with_node(vpnmig_sandbox::controlplane::NODE_NAME)
        .with_exec(ExecHook {
            work_dir: cp.dir().to_path_buf(),
            path: cp.exec_path(),
        });
    let op = Operator::start_kube(api, client, settings, WORKERS, plane);
    // The sandbox's `swanctl` runs `vpnmig-sandbox exec-answer`, a binary this package does
    // not build: the same request from bash (its /dev/tcp), over TCP on 127.0.0.1. With a
    // Python one, kwok and its children used 34.4 s of CPU in a 100-gateway wave, with
    // bash 3.9 s (cargo bench --bench wave, docs/fleet.md).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(serve_exec_tcp(Arc::downgrade(&op), listener));
    let script = swanctl_bash(port);
    let path = cp.exec_dir().join("swanctl");
    std::fs::write(&path, script).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    op
}
