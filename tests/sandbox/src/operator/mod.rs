//! The simulated gateway operator (DESIGN.md §2): a controller that drives the store the
//! way the real operator drives a cluster. See the module docs of each part:
//! [`settings`] (timing, pools, faults), [`view`] (both gateway kinds and their peers),
//! [`fip`] (floating IPs), [`cidr`] (serviceCIDR, virtual IPs), [`children`] (Deployment
//! and Pod), [`auth`] (default-allow / default-deny), [`peers`] (client peers, IKE SAs),
//! [`swanctl`] (`swanctl --list-sas`), [`conditions`], and [`reconcile`] (the pass that
//! ties them together, including the deletion unwind).
//!
//! INTERFACE (used by the HTTP layer and tests; keep these signatures):
//! - `Operator::start(store, settings) -> Arc<Operator>`: spawns the controller task on the
//!   current tokio runtime; it reacts to store events (Store::subscribe/events_after) and
//!   to its own timers.
//! - `Operator::settings()`: the live settings, changeable by tests at run time (noticed
//!   within [`TICK`]; [`Operator::kick`] makes it immediate).
//! - `Operator::exec(ns, pod, container, command) -> ExecOutput`: answers a command run in
//!   a pod (used by pods/exec).
//! - `Operator::shutdown()`: stops the controller task.
//!
//! The controller task holds only a weak reference: dropping the last `Arc<Operator>`
//! also ends it.

pub mod api;
pub mod auth;
pub mod children;
pub mod cidr;
pub mod conditions;
pub mod fip;
pub mod kube;
pub mod peers;
pub mod reconcile;
pub mod settings;
pub mod swanctl;
pub mod view;

use std::sync::{Arc, Mutex, MutexGuard, RwLock, Weak};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::store::Store;

pub use api::OperatorApi;

pub use fip::FloatingIps;
pub use peers::ClientInfo;
pub use settings::{ClientSettings, GatewayFaults, Settings};
pub use view::GatewayKind;

/// How often the controller looks at the settings (and at most how long it sleeps).
pub const TICK: Duration = Duration::from_millis(25);

/// The field manager the simulated operator writes with (status, finalizers, its
/// children), as a real controller's client does: its writes show in
/// `metadata.managedFields` like any other writer's (issue 9 item 12).
pub const FIELD_MANAGER: &str = "gateway-operator";

/// Write options of the operator's own writes.
pub fn writes() -> crate::store::WriteOptions {
    crate::store::WriteOptions {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    }
}

/// What a command run in a pod printed and how it exited.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExecOutput {
    pub stdout: String,
    pub stderr: String,
    pub exit_code: i32,
}

impl ExecOutput {
    fn error(exit_code: i32, stderr: String) -> Self {
        ExecOutput {
            stdout: String::new(),
            stderr,
            exit_code,
        }
    }
}

/// How much work the controller has done: its reconcile passes and the time they took.
/// What a benchmark reads to tell a busy operator from a slow client.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassStats {
    pub passes: u64,
    pub busy: Duration,
    pub longest: Duration,
    /// The CPU time the reconciles used (their threads'): `busy` less this is waiting, on
    /// the API server or for a core.
    pub cpu: Duration,
}

/// The CPU time the calling thread has used.
pub fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// The running operator.
pub struct Operator {
    api: Arc<dyn OperatorApi>,
    passes: Mutex<PassStats>,
    settings: RwLock<Settings>,
    state: Mutex<reconcile::State>,
    /// Each gateway pod's charon as the reconciles published it (the state's, by gateway
    /// uid): what `swanctl --list-sas` in the pod answers from, as a real charon answers
    /// while its operator reconciles, without waiting for the state a reconcile holds.
    daemons: reconcile::Published,
    /// The real data plane, if any (the same as the state's).
    plane: Option<Arc<crate::dataplane::Bed>>,
    wake: Arc<Notify>,
    stop: watch::Sender<bool>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Operator {
    /// Start the controller on the current tokio runtime.
    pub fn start(store: Arc<Store>, settings: Settings) -> Arc<Operator> {
        Operator::start_with(store, settings, None)
    }

    /// Start the controller driving a real data plane (`--data-plane strongswan`): each
    /// gateway pod runs a charon in its own network namespace, and a peer's `Established`
    /// condition is what that charon shows.
    pub fn start_with(
        store: Arc<Store>,
        settings: Settings,
        plane: Option<Arc<crate::dataplane::Bed>>,
    ) -> Arc<Operator> {
        let (stop, stop_rx) = watch::channel(false);
        let wake = Arc::new(Notify::new());
        if let Some(p) = &plane {
            p.set_notify(wake.clone());
        }
        let state = reconcile::State::with_plane(plane.clone());
        let op = Arc::new(Operator {
            api: store.clone(),
            passes: Mutex::new(PassStats::default()),
            settings: RwLock::new(settings),
            daemons: state.published.clone(),
            state: Mutex::new(state),
            plane,
            wake,
            stop,
            task: Mutex::new(None),
        });
        let handle = tokio::spawn(run(
            Arc::downgrade(&op),
            op.wake.clone(),
            store.clone(),
            stop_rx,
        ));
        *op.task.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
        op
    }

    /// Start the controller over a Kubernetes API server (the real control plane, or a
    /// user's kind or k3d cluster): watches and a work queue of gateway keys with
    /// `workers` workers ([`kube::run`]). `client` is the one `api` writes with. With
    /// `plane`, the gateway pods' charons are real ones (a change of what they show wakes
    /// every gateway).
    pub fn start_kube(
        api: kube::KubeApi,
        client: ::kube::Client,
        settings: Settings,
        workers: usize,
        plane: Option<Arc<crate::dataplane::Bed>>,
    ) -> Arc<Operator> {
        let (stop, _) = watch::channel(false);
        let wake = Arc::new(Notify::new());
        if let Some(p) = &plane {
            p.set_notify(wake.clone());
        }
        let caches = api.caches();
        let state = reconcile::State::with_plane(plane.clone());
        let op = Arc::new(Operator {
            api: Arc::new(api),
            passes: Mutex::new(PassStats::default()),
            settings: RwLock::new(settings),
            daemons: state.published.clone(),
            state: Mutex::new(state),
            plane,
            wake,
            stop,
            task: Mutex::new(None),
        });
        let handle = tokio::spawn(kube::run(Arc::downgrade(&op), client, workers, caches));
        *op.task.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
        op
    }

    /// The live settings.
    pub fn settings(&self) -> &RwLock<Settings> {
        &self.settings
    }

    /// Reconcile now instead of at the next tick (e.g. right after changing settings).
    pub fn kick(&self) {
        self.wake.notify_one();
    }

    fn state(&self) -> MutexGuard<'_, reconcile::State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The simulated OpenStack floating IPs.
    pub fn floating_ips(&self) -> FloatingIps {
        let pool = self
            .settings
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .fip_pool
            .clone();
        self.state().fips.snapshot(&pool)
    }

    /// The simulated client peers configured so far (PSKs left out).
    pub fn clients(&self) -> Vec<ClientInfo> {
        self.state().clients.info()
    }

    /// Answer a command run in container `container` of pod `ns/pod`. Only `swanctl` in
    /// the `strongswan` container of a gateway pod is known.
    pub fn exec(&self, ns: &str, pod: &str, container: &str, command: &[String]) -> ExecOutput {
        let Some(pod_rt) = self.api.resource("", "v1", "pods") else {
            return ExecOutput::error(1, "error: pods are not served\n".into());
        };
        let Ok(obj) = self.api.get(&pod_rt, ns, pod) else {
            return ExecOutput::error(
                1,
                format!("Error from server (NotFound): pods \"{pod}\" not found\n"),
            );
        };
        let containers: Vec<&str> = obj
            .pointer("/spec/containers")
            .and_then(|c| c.as_array())
            .map(|a| a.iter().filter_map(|c| c["name"].as_str()).collect())
            .unwrap_or_default();
        let container = if container.is_empty() {
            containers.first().copied().unwrap_or_default()
        } else {
            container
        };
        if container != children::CONTAINER || !containers.contains(&container) {
            return ExecOutput::error(
                1,
                format!(
                    "error: unable to upgrade connection: container not found (\"{container}\")\n"
                ),
            );
        }
        let Some(cmd) = command.first() else {
            return ExecOutput::error(
                1,
                "error: you must specify at least one command for the container\n".into(),
            );
        };
        if cmd.rsplit('/').next() != Some("swanctl") {
            return ExecOutput::error(127, format!("{cmd}: command not found\n"));
        }
        if let Some(bed) = &self.plane {
            return match bed.swanctl(ns, pod, &command[1..]) {
                Some((stdout, stderr, exit_code)) => ExecOutput {
                    stdout,
                    stderr,
                    exit_code,
                },
                None => ExecOutput::error(1, "connecting to 'unix:///var/run/charon.vici' failed: No such file or directory\nError: connecting to 'default' URI failed: No such file or directory\n".into()),
            };
        }
        let initiate = match swanctl::initiate_args(&command[1..]) {
            Ok(i) => i,
            Err((stderr, code)) => return ExecOutput::error(code, stderr),
        };
        let daemon = self
            .daemons
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .find(|d| d.ns == ns && d.pod == pod)
            .cloned();
        let Some(daemon) = daemon else {
            return ExecOutput::error(1, "connecting to 'unix:///var/run/charon.vici' failed: No such file or directory\nError: connecting to 'default' URI failed: No such file or directory\n".into());
        };
        if let Some(args) = initiate {
            return self.initiate(ns, pod, &args);
        }
        let (stdout, stderr, exit_code) = swanctl::run(&command[1..], &daemon, Instant::now());
        ExecOutput {
            stdout,
            stderr,
            exit_code,
        }
    }

    /// `swanctl --initiate` in the pod: the gateway starts the peer's IKE SA now, without
    /// waiting for the client's retry timer (one reconcile pass run here); it comes up
    /// only when the FIP is attached, the PSK matches and the proposals intersect, as the
    /// client's own initiation would, and not at all with `clientRefusesInitiation`.
    fn initiate(&self, ns: &str, pod: &str, args: &swanctl::InitiateArgs) -> ExecOutput {
        let find = |st: &reconcile::State| {
            st.daemons
                .values()
                .find(|d| d.ns == ns && d.pod == pod)
                .and_then(|d| {
                    d.conns
                        .iter()
                        .find(|c| match &args.child {
                            Some(child) => c.children.iter().any(|(n, ..)| n == child),
                            None => args.ike.as_deref() == Some(c.name.as_str()),
                        })
                        .cloned()
                })
        };
        let Some(conn) = find(&self.state()) else {
            let what = match &args.child {
                Some(c) => format!("CHILD_SA config '{c}'"),
                None => format!(
                    "IKE_SA config '{}'",
                    args.ike.as_deref().unwrap_or_default()
                ),
            };
            return ExecOutput::error(1, format!("initiate failed: {what} not found\n"));
        };
        let child = args
            .child
            .clone()
            .or_else(|| conn.children.first().map(|(n, ..)| n.clone()))
            .unwrap_or_default();
        self.state().clients.initiating.insert(conn.key.clone());
        let settings = self
            .settings
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        self.reconcile(&settings, Instant::now(), &reconcile::Scope::ALL);
        let mut st = self.state();
        st.clients.initiating.remove(&conn.key);
        let reason = if conn.refuses_initiation {
            "NotResponding"
        } else {
            st.clients
                .last
                .get(&conn.key)
                .map(|o| o.reason)
                .unwrap_or("NotResponding")
        };
        let Some(daemon) = st.daemons.values().find(|d| d.ns == ns && d.pod == pod) else {
            return ExecOutput::error(1, "initiate failed: charon stopped\n".into());
        };
        let (stdout, stderr, exit_code) = swanctl::initiated(daemon, &conn, &child, reason);
        ExecOutput {
            stdout,
            stderr,
            exit_code,
        }
    }

    /// Stop the controller task. Idempotent.
    pub fn shutdown(&self) {
        self.stop.send_replace(true);
        if let Some(h) = self.task.lock().unwrap_or_else(|e| e.into_inner()).take() {
            h.abort();
        }
    }

    /// The reconcile passes so far and the time spent in them.
    pub fn pass_stats(&self) -> PassStats {
        *self.passes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One reconcile of the gateways `scope` names; returns when their next timer is due.
    fn reconcile(
        &self,
        settings: &Settings,
        now: Instant,
        scope: &reconcile::Scope,
    ) -> Option<Instant> {
        let mut st = self.state();
        let t = std::time::Instant::now();
        let cpu = thread_cpu();
        let next = reconcile::reconcile_scope(&*self.api, settings, &mut st, now, scope);
        st.publish_all();
        let took = t.elapsed();
        let cpu = thread_cpu().saturating_sub(cpu);
        let mut p = self.passes.lock().unwrap_or_else(|e| e.into_inner());
        p.passes += 1;
        p.busy += took;
        p.cpu += cpu;
        p.longest = p.longest.max(took);
        next
    }

    /// What the real data plane shows, as a version (0 without one).
    fn plane_version(&self) -> u64 {
        self.state().plane.as_ref().map_or(0, |p| p.seen_version())
    }
}

/// Whether anything the operator watches changed in the store after `rv`.
fn relevant_since(store: &Store, rv: u64) -> bool {
    let Ok(events) = store.events_after(rv) else {
        return true;
    };
    events.iter().any(|e| {
        let g = &e.gvr;
        matches!(
            g.group.as_str(),
            "ipsec.bnerd.net" | "vpn.bnerd.net" | "apiextensions.k8s.io"
        ) || (g.group.is_empty() && matches!(g.plural.as_str(), "secrets" | "pods" | "namespaces"))
            || (g.group == "apps" && g.plural == "deployments")
    })
}

impl Drop for Operator {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The controller loop: reconcile when the store changed in a way that matters, when
/// the settings changed, or when a timer is due; otherwise sleep until one of those
/// (at most [`TICK`]). Ends on shutdown or when the operator is dropped.
async fn run(
    op: Weak<Operator>,
    wake: Arc<Notify>,
    store: Arc<Store>,
    mut stop: watch::Receiver<bool>,
) {
    let mut changes = store.subscribe();
    let mut seen_rv = 0;
    let mut seen_settings: Option<Settings> = None;
    let mut seen_plane = 0;
    let mut deadline: Option<Instant> = None;
    loop {
        if *stop.borrow_and_update() {
            break;
        }
        let until = {
            let Some(op) = op.upgrade() else { break };
            changes.borrow_and_update();
            let settings = op
                .settings
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            let rv = store.resource_version();
            let now = Instant::now();
            let due = deadline.is_some_and(|d| d <= now);
            let plane = op.plane_version();
            if seen_settings.as_ref() != Some(&settings)
                || due
                || plane != seen_plane
                || (rv != seen_rv && relevant_since(&store, seen_rv))
            {
                deadline = op.reconcile(&settings, now, &reconcile::Scope::ALL);
                seen_settings = Some(settings);
                seen_plane = plane;
            }
            seen_rv = rv;
            let tick = now + TICK;
            deadline.map_or(tick, |d| d.min(tick))
        };
        tokio::select! {
            r = stop.changed() => if r.is_err() { break },
            r = changes.changed() => if r.is_err() { break },
            _ = wake.notified() => {}
            _ = tokio::time::sleep_until(until) => {}
        }
    }
}
