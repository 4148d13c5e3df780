//! The simulated operator as a controller over a Kubernetes API server (the real control
//! plane, or a user's kind or k3d cluster): [`KubeApi`] is its [`OperatorApi`] through
//! `kube::Client`, and [`run`] drives the reconciles with `kube::runtime` watchers and a
//! work queue of gateway keys served by several workers.
//!
//! - Reads: `GET`/`LIST` through `Api<DynamicObject>` of the resource's group, version and
//!   plural.
//! - Writes: field manager [`super::FIELD_MANAGER`]; a read-modify-write is a read and a
//!   `PUT` with the read's resourceVersion, retried (bounded) on 409 Conflict; status
//!   through the status subresource (every type the operator writes status to has one),
//!   finalizers through the object itself; deletes with background propagation, so the
//!   cluster's garbage collector removes what the Deployment owns.
//! - Workloads: the cluster runs them. The operator creates the Deployment; the
//!   deployment and replicaset controllers make the Pod and kwok (or a kubelet) runs it.
//! - Reconciles: one per gateway key ([`Scope`]), woken by a watch event of the gateway,
//!   of a VPNPeer naming it, of its Pod, or of a Secret in its namespace, and by the
//!   operator's own timers (the wake a reconcile returns is the key's requeue).
//! - Reads come from the watches' caches (`kube::runtime::reflector`), as a controller's
//!   informers serve them, once each has listed: every IPsecGateway, VPNGateway, VPNPeer
//!   and Secret, the operator's own Deployments and Pods (the watches' label selectors).
//!   An object a cache does not have is asked of the API server; a read-modify-write
//!   starts from the cache's copy and, on a conflict (a stale copy), reads the API
//!   server's. The API server's reads each reconcile made (three `LIST`s of the whole
//!   cluster, then a GET per object) made the operator, whose reconciles take turns on
//!   its state, the bottleneck of a 100-gateway wave (`cargo bench --bench wave`,
//!   docs/fleet.md).
//!
//! The reconcile logic is the emulator's ([`super::reconcile::reconcile_scope`]); the
//! operator's state (floating IPs, strongSwan daemons, client peers) is one, so the
//! workers take turns on it while the queue keeps the keys apart.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::api::{Edit, OperatorApi};
use super::reconcile::Scope;
use super::view::GatewayKind;
use super::{Operator, Settings, TICK};
use crate::resources::ResourceType;
use crate::status::ApiError;

/// How many times a read-modify-write is tried when it keeps losing races (409).
pub const CONFLICT_RETRIES: usize = 5;
/// How many reconciles may wait on the operator's state at once.
pub const WORKERS: usize = 4;
/// How long one API request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// Where pod exec is answered by a local command (kwok's `Exec`): each gateway pod gets an
/// `Exec` naming it, so the command knows which pod it answers for.
#[derive(Clone, Debug)]
pub struct ExecHook {
    /// The working directory of the command.
    pub work_dir: PathBuf,
    /// Its `PATH` (the directory holding the `swanctl` that calls back first).
    pub path: String,
}

/// A watch's cache of every object of one type, and whether it has listed them yet.
#[derive(Clone)]
pub(super) struct Cache {
    store: reflector::Store<DynamicObject>,
    listed: Arc<AtomicBool>,
}

/// The caches of the types [`run`] watches in full (by plural), shared by [`KubeApi`]
/// (which reads them) and [`run`] (which fills them).
pub(super) type Caches = Arc<Mutex<BTreeMap<String, Cache>>>;

/// The operator's access to a Kubernetes API server.
pub struct KubeApi {
    client: kube::Client,
    handle: tokio::runtime::Handle,
    node: Option<String>,
    exec: Option<ExecHook>,
    exec_done: Mutex<HashSet<(String, String)>>,
    caches: Caches,
}

impl KubeApi {
    /// Over `client`, on the current tokio runtime (its calls block a thread that is not
    /// one of the runtime's workers: the reconciles run in `spawn_blocking`).
    pub fn new(client: kube::Client) -> KubeApi {
        KubeApi {
            client,
            handle: tokio::runtime::Handle::current(),
            node: None,
            exec: None,
            exec_done: Mutex::new(HashSet::new()),
            caches: Caches::default(),
        }
    }

    /// The watch cache of `plural`, once it has listed; `None` otherwise (the caller asks
    /// the API server).
    fn cache(&self, plural: &str) -> Option<Cache> {
        let cache = self
            .caches
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(plural)
            .cloned()?;
        cache.listed.load(Ordering::Acquire).then_some(cache)
    }

    /// The objects of `plural` (in `ns`, or every namespace) from its watch's cache. A type
    /// watched with a label selector (the operator's Pods and Deployments) has only those:
    /// what the operator lists of them. Without `metadata.managedFields`, which the
    /// operator never reads (a reconcile lists the whole cluster: copying every object's
    /// field history was most of its time).
    fn cached(&self, plural: &str, ns: Option<&str>) -> Option<Vec<Value>> {
        let cache = self.cache(plural)?;
        Some(
            cache
                .store
                .state()
                .iter()
                .filter(|o| ns.is_none_or(|n| o.metadata.namespace.as_deref() == Some(n)))
                .map(|o| listed_value(o))
                .collect(),
        )
    }

    /// The object from the API server (not the cache).
    fn get_live(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<Value, ApiError> {
        let api = self.api(rt, Some(ns));
        self.block(&format!("get {} {ns}/{name}", rt.plural), api.get(name))
            .map(to_value)
    }

    /// The caches [`run`] fills for this API's reads.
    pub(super) fn caches(&self) -> Caches {
        self.caches.clone()
    }

    /// Put gateway pods on `node` (a cluster without a scheduler).
    pub fn with_node(mut self, node: &str) -> KubeApi {
        self.node = Some(node.into());
        self
    }

    /// Write a kwok `Exec` for each gateway pod.
    pub fn with_exec(mut self, hook: ExecHook) -> KubeApi {
        self.exec = Some(hook);
        self
    }

    pub(crate) fn api(&self, rt: &ResourceType, ns: Option<&str>) -> Api<DynamicObject> {
        let ar = ApiResource {
            group: rt.group.clone(),
            version: rt.version.clone(),
            api_version: rt.api_version(),
            kind: rt.kind.clone(),
            plural: rt.plural.clone(),
        };
        match ns {
            Some(ns) if rt.namespaced => Api::namespaced_with(self.client.clone(), ns, &ar),
            _ => Api::all_with(self.client.clone(), &ar),
        }
    }

    pub(crate) fn block<T>(
        &self,
        what: &str,
        f: impl std::future::Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, ApiError> {
        self.handle
            .block_on(async { tokio::time::timeout(REQUEST_TIMEOUT, f).await })
            .map_err(|_| ApiError::new(504, "Timeout", format!("{what}: no answer in time")))?
            .map_err(|e| api_error(what, e))
    }
}

/// A kube error as the API's status.
fn api_error(what: &str, e: kube::Error) -> ApiError {
    match e {
        kube::Error::Api(s) => {
            let reason = match s.reason.as_str() {
                "NotFound" => "NotFound",
                "AlreadyExists" => "AlreadyExists",
                "Conflict" => "Conflict",
                "Invalid" => "Invalid",
                "Forbidden" => "Forbidden",
                "Gone" | "Expired" => "Expired",
                "TooManyRequests" => "TooManyRequests",
                _ => "InternalError",
            };
            ApiError::new(s.code, reason, s.message)
        }
        e => ApiError::new(503, "ServiceUnavailable", format!("{what}: {e}")),
    }
}

fn to_value(o: DynamicObject) -> Value {
    serde_json::to_value(o).unwrap_or(Value::Null)
}

/// A cached object as a list item: every field but `metadata.managedFields`.
fn listed_value(o: &DynamicObject) -> Value {
    let m = &o.metadata;
    let meta = kube::api::ObjectMeta {
        name: m.name.clone(),
        namespace: m.namespace.clone(),
        uid: m.uid.clone(),
        resource_version: m.resource_version.clone(),
        generation: m.generation,
        creation_timestamp: m.creation_timestamp.clone(),
        deletion_timestamp: m.deletion_timestamp.clone(),
        deletion_grace_period_seconds: m.deletion_grace_period_seconds,
        finalizers: m.finalizers.clone(),
        labels: m.labels.clone(),
        annotations: m.annotations.clone(),
        owner_references: m.owner_references.clone(),
        generate_name: m.generate_name.clone(),
        managed_fields: None,
        self_link: None,
    };
    let mut v = o.data.clone();
    if let Value::Object(map) = &mut v {
        if let Some(t) = &o.types {
            map.insert("apiVersion".into(), Value::String(t.api_version.clone()));
            map.insert("kind".into(), Value::String(t.kind.clone()));
        }
        map.insert(
            "metadata".into(),
            serde_json::to_value(meta).unwrap_or(Value::Null),
        );
    }
    v
}

fn from_value(v: &Value) -> Result<DynamicObject, ApiError> {
    serde_json::from_value(v.clone())
        .map_err(|e| ApiError::new(400, "BadRequest", format!("not an object: {e}")))
}

fn post_params() -> PostParams {
    PostParams {
        dry_run: false,
        field_manager: Some(super::FIELD_MANAGER.into()),
    }
}

/// The dynamic type of `rt`'s objects, as its watch cache keys them.
fn cache_type(rt: &ResourceType) -> ApiResource {
    ApiResource {
        group: rt.group.clone(),
        version: rt.version.clone(),
        api_version: rt.api_version(),
        kind: rt.kind.clone(),
        plural: rt.plural.clone(),
    }
}

/// The types the operator reads and writes, as the CRDs and the core API serve them.
fn known(group: &str, version: &str, plural: &str) -> Option<ResourceType> {
    let (kind, status) = match (group, version, plural) {
        ("ipsec.bnerd.net", "v1alpha1", "ipsecgateways") => ("IPsecGateway", true),
        ("vpn.bnerd.net", "v1alpha1", "vpngateways") => ("VPNGateway", true),
        ("vpn.bnerd.net", "v1alpha1", "vpnpeers") => ("VPNPeer", true),
        ("", "v1", "secrets") => ("Secret", false),
        ("", "v1", "pods") => ("Pod", true),
        ("apps", "v1", "deployments") => ("Deployment", true),
        ("kwok.x-k8s.io", "v1alpha1", "execs") => ("Exec", true),
        _ => return None,
    };
    Some(ResourceType {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        short_names: Vec::new(),
        namespaced: true,
        status_subresource: status,
        subresources: Vec::new(),
        verbs: Vec::new(),
        schema: None,
        printer_columns: Vec::new(),
        from_crd: !group.is_empty() && group != "apps",
    })
}

impl OperatorApi for KubeApi {
    fn resource(&self, group: &str, version: &str, plural: &str) -> Option<ResourceType> {
        known(group, version, plural)
    }

    fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<Value, ApiError> {
        // From the watch's cache when it has it; one it does not have (not yet seen, or
        // outside a watch's selector) is asked of the API server.
        if let Some(cache) = self.cache(&rt.plural) {
            let key = reflector::ObjectRef::new_with(name, cache_type(rt)).within(ns);
            if let Some(o) = cache.store.get(&key) {
                return Ok(to_value(o.as_ref().clone()));
            }
        }
        self.get_live(rt, ns, name)
    }

    fn list(&self, rt: &ResourceType, ns: Option<&str>) -> Result<Vec<Value>, ApiError> {
        let mut items: Vec<Value> = match self.cached(&rt.plural, ns) {
            Some(items) => items,
            None => {
                let api = self.api(rt, ns);
                let list = self.block(
                    &format!("list {}", rt.plural),
                    api.list(&ListParams::default()),
                )?;
                list.items.into_iter().map(to_value).collect()
            }
        };
        let key = |v: &Value| {
            (
                v.pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                v.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            )
        };
        items.sort_by_key(key);
        Ok(items)
    }

    fn create(&self, rt: &ResourceType, ns: &str, obj: Value) -> Result<Value, ApiError> {
        let api = self.api(rt, Some(ns));
        let o = from_value(&obj)?;
        self.block(
            &format!("create {} in {ns}", rt.plural),
            api.create(&post_params(), &o),
        )
        .map(to_value)
    }

    fn modify(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        status: bool,
        edit: Edit<'_>,
    ) -> Result<Value, ApiError> {
        let api = self.api(rt, Some(ns));
        let what = format!("update {} {ns}/{name}", rt.plural);
        let mut last = None;
        for attempt in 0..CONFLICT_RETRIES {
            // The cache's copy first (written with its resourceVersion: a stale one is a
            // conflict), the API server's after a conflict.
            let cur = if attempt == 0 {
                self.get(rt, ns, name)?
            } else {
                self.get_live(rt, ns, name)?
            };
            let new = edit(&cur)?;
            if new == cur {
                return Ok(cur);
            }
            let o = from_value(&new)?;
            let written = if status && rt.status_subresource {
                self.block(&what, api.replace_status(name, &post_params(), &o))
            } else {
                self.block(&what, api.replace(name, &post_params(), &o))
            };
            match written {
                Err(e) if e.code == 409 => last = Some(e),
                r => return r.map(to_value),
            }
        }
        Err(last.unwrap_or_else(|| ApiError::new(409, "Conflict", what)))
    }

    fn delete(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<(), ApiError> {
        let api = self.api(rt, Some(ns));
        self.block(
            &format!("delete {} {ns}/{name}", rt.plural),
            api.delete(name, &DeleteParams::background()),
        )
        .map(|_| ())
    }

    fn real_workloads(&self) -> bool {
        true
    }

    fn pod_node(&self) -> Option<String> {
        self.node.clone()
    }

    fn pod_running(&self, ns: &str, pod: &str, uid: &str) {
        let Some(hook) = &self.exec else { return };
        let key = (ns.to_string(), pod.to_string());
        if self
            .exec_done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&key)
        {
            return;
        }
        let rt = known("kwok.x-k8s.io", "v1alpha1", "execs").expect("a known type");
        let exec = json!({
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "Exec",
            // Owned by the Pod: the garbage collector removes it with the Pod.
            "metadata": {"name": pod, "namespace": ns, "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": uid}
            ]},
            "spec": {"execs": [{
                "containers": [super::children::CONTAINER],
                "local": {
                    "workDir": hook.work_dir.display().to_string(),
                    "envs": [
                        {"name": "PATH", "value": hook.path},
                        {"name": "VPNMIG_POD_NAMESPACE", "value": ns},
                        {"name": "VPNMIG_POD_NAME", "value": pod},
                    ]
                }
            }]}
        });
        // Server-side apply, not a create: kube-apiserver holds every create of a custom
        // resource for 2 s while its CRD's Established condition is under 2 s old
        // (apiextensions-apiserver's customresource_handler.go, "justCreated"), and kwok's
        // Exec CRD is that young when a fresh control plane's first gateway Pod runs: each
        // real bed's first reconcile waited 2.0 s on it (`cargo bench -p vpnmig-sandbox
        // --bench start`). An apply is not held, and is the same write otherwise.
        let api = self.api(&rt, Some(ns));
        let params = kube::api::PatchParams::apply(super::FIELD_MANAGER);
        let applied = self.block(
            &format!("apply execs {ns}/{pod}"),
            api.patch(pod, &params, &kube::api::Patch::Apply(&exec)),
        );
        match applied {
            Ok(_) => {}
            // Another manager's Exec of that name holds the fields.
            Err(e) if e.code == 409 => {}
            Err(_) => return,
        }
        self.exec_done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key);
    }
}

/// The work queue: gateway keys and when each is due. A key being reconciled is not
/// handed to a second worker; a trigger meanwhile leaves it due for after.
#[derive(Default)]
struct Queue {
    due: Mutex<(BTreeMap<Scope, Instant>, HashSet<Scope>)>,
    notify: Notify,
}

impl Queue {
    fn add(&self, scope: Scope, at: Instant) {
        let mut q = self.due.lock().unwrap_or_else(|e| e.into_inner());
        let e = q.0.entry(scope).or_insert(at);
        *e = (*e).min(at);
        drop(q);
        self.notify.notify_waiters();
    }

    /// The next due key not being worked on (now marked as worked on), or when to look
    /// again.
    fn take(&self, now: Instant) -> Result<Scope, Instant> {
        let mut q = self.due.lock().unwrap_or_else(|e| e.into_inner());
        let (due, running) = &mut *q;
        let next = due
            .iter()
            .filter(|(s, _)| !running.contains(*s))
            .min_by_key(|(_, t)| **t)
            .map(|(s, t)| (s.clone(), *t));
        match next {
            Some((s, t)) if t <= now => {
                due.remove(&s);
                running.insert(s.clone());
                Ok(s)
            }
            Some((_, t)) => Err(t.min(now + TICK * 40)),
            None => Err(now + TICK * 40),
        }
    }

    fn done(&self, scope: &Scope) {
        self.due
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .1
            .remove(scope);
        self.notify.notify_waiters();
    }
}

/// The keys an object's change wakes.
fn keys_of(kind: &str, obj: &DynamicObject) -> Vec<Scope> {
    let ns = obj.metadata.namespace.clone().unwrap_or_default();
    let name = obj.metadata.name.clone().unwrap_or_default();
    let label = |k: &str| obj.metadata.labels.as_ref().and_then(|l| l.get(k)).cloned();
    match kind {
        "IPsecGateway" => vec![Scope::gateway(GatewayKind::IPsec, &ns, &name)],
        "VPNGateway" => vec![Scope::gateway(GatewayKind::Vpn, &ns, &name)],
        "VPNPeer" => obj
            .data
            .pointer("/spec/gatewayRef/name")
            .and_then(Value::as_str)
            .map(|g| vec![Scope::gateway(GatewayKind::Vpn, &ns, g)])
            .unwrap_or_default(),
        "Pod" | "Deployment" => label("app.kubernetes.io/instance")
            .map(|g| {
                vec![Scope {
                    kind: None,
                    ns: Some(ns),
                    name: Some(g),
                }]
            })
            .unwrap_or_default(),
        "Secret" => vec![Scope {
            kind: None,
            ns: Some(ns),
            name: None,
        }],
        _ => Vec::new(),
    }
}

/// What the operator watches, and with which selector.
const WATCHED: [(&str, &str, &str, Option<&str>); 6] = [
    ("ipsec.bnerd.net", "v1alpha1", "ipsecgateways", None),
    ("vpn.bnerd.net", "v1alpha1", "vpngateways", None),
    ("vpn.bnerd.net", "v1alpha1", "vpnpeers", None),
    ("", "v1", "pods", Some("app.kubernetes.io/name=strongswan")),
    (
        "apps",
        "v1",
        "deployments",
        Some("app.kubernetes.io/managed-by=bnerd-operator"),
    ),
    ("", "v1", "secrets", None),
];

/// Drive `op` over `client` until the operator is dropped or the task is aborted: one
/// watcher per watched type feeds the queue (and, for a type watched in full, its cache in
/// `caches`), `workers` workers reconcile its keys, and a change of the settings wakes
/// every gateway.
pub(super) async fn run(op: Weak<Operator>, client: kube::Client, workers: usize, caches: Caches) {
    let queue = Arc::new(Queue::default());
    let mut tasks = tokio::task::JoinSet::new();
    for (group, version, plural, selector) in WATCHED {
        let rt = known(group, version, plural).expect("a known type");
        let ar = ApiResource {
            group: rt.group.clone(),
            version: rt.version.clone(),
            api_version: rt.api_version(),
            kind: rt.kind.clone(),
            plural: rt.plural.clone(),
        };
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        let mut cfg = watcher::Config::default();
        if let Some(s) = selector {
            cfg = cfg.labels(s);
        }
        let queue = queue.clone();
        // Every watched type keeps its cache, which the reconciles read; a key is queued
        // after the cache has the change.
        let writer = reflector::store::Writer::new(ar.clone());
        let listed = Arc::new(AtomicBool::new(false));
        caches.lock().unwrap_or_else(|e| e.into_inner()).insert(
            plural.to_string(),
            Cache {
                store: writer.as_reader(),
                listed: listed.clone(),
            },
        );
        tasks.spawn(async move {
            let mut events = reflector(writer, watcher(api, cfg).default_backoff()).boxed();
            while let Some(ev) = events.next().await {
                let obj = match ev {
                    Ok(watcher::Event::InitDone) => {
                        listed.store(true, Ordering::Release);
                        continue;
                    }
                    Ok(
                        watcher::Event::Apply(o)
                        | watcher::Event::InitApply(o)
                        | watcher::Event::Delete(o),
                    ) => o,
                    Ok(watcher::Event::Init) | Err(_) => continue,
                };
                for k in keys_of(&rt.kind, &obj) {
                    queue.add(k, Instant::now());
                }
            }
        });
    }
    for _ in 0..workers.max(1) {
        let (op, queue) = (op.clone(), queue.clone());
        tasks.spawn(async move {
            loop {
                let notified = queue.notify.notified();
                match queue.take(Instant::now()) {
                    Ok(scope) => {
                        let Some(o) = op.upgrade() else { break };
                        let settings = o.settings.read().unwrap_or_else(|e| e.into_inner()).clone();
                        let s = scope.clone();
                        let next = tokio::task::spawn_blocking(move || {
                            o.reconcile(&settings, Instant::now(), &s)
                        })
                        .await
                        .ok()
                        .flatten();
                        queue.done(&scope);
                        if let Some(at) = next {
                            queue.add(scope, at);
                        }
                    }
                    Err(until) => {
                        tokio::select! {
                            _ = notified => {}
                            _ = tokio::time::sleep_until(until) => {}
                        }
                    }
                }
            }
        });
    }
    // Settings changed (or the operator was kicked): every gateway.
    let mut seen: Option<Settings> = None;
    loop {
        let Some(o) = op.upgrade() else { break };
        let now = o.settings.read().unwrap_or_else(|e| e.into_inner()).clone();
        let wake = o.wake.clone();
        drop(o);
        if seen.as_ref() != Some(&now) {
            queue.add(Scope::ALL, Instant::now());
            seen = Some(now);
        }
        tokio::select! {
            _ = wake.notified() => queue.add(Scope::ALL, Instant::now()),
            _ = tokio::time::sleep(TICK) => {}
        }
    }
    tasks.shutdown().await;
}

/// One pod exec, as `vpnmig-sandbox exec-answer` asks the running sandbox for it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ExecRequest {
    pub namespace: String,
    pub pod: String,
    pub container: String,
    pub command: Vec<String>,
}

/// Answer pod exec over a unix socket (one JSON request and one JSON answer per
/// connection) as the operator's pods would: what kwok runs for `kubectl exec` calls back
/// here. Ends when the operator is dropped.
pub async fn serve_exec(op: Weak<Operator>, listener: tokio::net::UnixListener) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    while let Ok((mut conn, _)) = listener.accept().await {
        let op = op.clone();
        tokio::spawn(async move {
            let mut buf = Vec::new();
            let read = tokio::time::timeout(
                REQUEST_TIMEOUT,
                (&mut conn).take(1 << 20).read_to_end(&mut buf),
            )
            .await;
            let answer = match (read, serde_json::from_slice::<ExecRequest>(&buf)) {
                (Ok(Ok(_)), Ok(req)) => match op.upgrade() {
                    Some(o) => tokio::task::spawn_blocking(move || {
                        o.exec(&req.namespace, &req.pod, &req.container, &req.command)
                    })
                    .await
                    .unwrap_or_else(|e| super::ExecOutput::error(1, format!("{e}\n"))),
                    None => super::ExecOutput::error(1, "the operator stopped\n".into()),
                },
                _ => super::ExecOutput::error(1, "a malformed exec request\n".into()),
            };
            let text = serde_json::to_vec(&answer).unwrap_or_default();
            let _ = conn.write_all(&text).await;
            let _ = conn.shutdown().await;
        });
    }
}

/// [`serve_exec`] over TCP on 127.0.0.1, in a framing a shell reads and writes with bash's
/// `/dev/tcp` (what [`swanctl_bash`] does: a pod exec then costs a shell, not an
/// interpreter's start). Request: the namespace, the pod, the number of words of the
/// command and each word (`swanctl` first), a line each (no argument of `swanctl` holds a
/// newline). Answer: a line
/// `EXIT STDOUT_BYTES STDERR_BYTES`, then stdout, then stderr.
pub async fn serve_exec_tcp(op: Weak<Operator>, listener: tokio::net::TcpListener) {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    while let Ok((conn, _)) = listener.accept().await {
        let op = op.clone();
        tokio::spawn(async move {
            let (read, mut write) = conn.into_split();
            let mut lines = BufReader::new(read.take(1 << 20)).lines();
            let request = tokio::time::timeout(REQUEST_TIMEOUT, async {
                let namespace = lines.next_line().await.ok()??;
                let pod = lines.next_line().await.ok()??;
                let n: usize = lines.next_line().await.ok()??.trim().parse().ok()?;
                let mut command = Vec::new();
                for _ in 0..n.min(64) {
                    command.push(lines.next_line().await.ok()??);
                }
                Some(ExecRequest {
                    namespace,
                    pod,
                    container: super::children::CONTAINER.into(),
                    command,
                })
            })
            .await;
            let answer = match (request, op.upgrade()) {
                (Ok(Some(req)), Some(o)) => tokio::task::spawn_blocking(move || {
                    o.exec(&req.namespace, &req.pod, &req.container, &req.command)
                })
                .await
                .unwrap_or_else(|e| super::ExecOutput::error(1, format!("{e}\n"))),
                (_, None) => super::ExecOutput::error(1, "the operator stopped\n".into()),
                _ => super::ExecOutput::error(1, "a malformed exec request\n".into()),
            };
            let head = format!(
                "{} {} {}\n",
                answer.exit_code,
                answer.stdout.len(),
                answer.stderr.len()
            );
            let _ = write.write_all(head.as_bytes()).await;
            let _ = write.write_all(answer.stdout.as_bytes()).await;
            let _ = write.write_all(answer.stderr.as_bytes()).await;
            let _ = write.shutdown().await;
        });
    }
}

/// The `swanctl` kwok finds first on its PATH where [`serve_exec_tcp`] listens on `port`:
/// bash alone (its `/dev/tcp`), asking as the pod the kwok `Exec` names.
pub fn swanctl_bash(port: u16) -> String {
    format!(
        r#"#!/bin/bash
# Written by vpnmig-sandbox: answers as the gateway pod's simulated strongSwan.
export LC_ALL=C
ns=${{VPNMIG_POD_NAMESPACE:-}} pod=${{VPNMIG_POD_NAME:-}}
if [ -z "$ns" ] || [ -z "$pod" ]; then
  echo "error: this pod has no simulated strongSwan (no kwok Exec names it)" >&2
  exit 1
fi
set -- swanctl "$@"
exec 3<>/dev/tcp/127.0.0.1/{port} || exit 1
{{ printf '%s\n%s\n%s\n' "$ns" "$pod" "$#"; for a in "$@"; do printf '%s\n' "$a"; done; }} >&3
read -r code olen elen <&3 || {{ echo "error: the sandbox did not answer" >&2; exit 1; }}
out= err=
[ "$olen" -gt 0 ] && IFS= read -r -d '' -N "$olen" out <&3
[ "$elen" -gt 0 ] && IFS= read -r -d '' -N "$elen" err <&3
printf '%s' "$out"
printf '%s' "$err" >&2
exit "$code"
"#
    )
}

/// Ask the sandbox listening on `socket` to answer one exec (blocking, bounded).
pub fn ask_exec(socket: &std::path::Path, req: &ExecRequest) -> std::io::Result<super::ExecOutput> {
    use std::io::{Read, Write};
    let mut conn = std::os::unix::net::UnixStream::connect(socket)?;
    conn.set_read_timeout(Some(REQUEST_TIMEOUT * 2))?;
    conn.set_write_timeout(Some(REQUEST_TIMEOUT))?;
    conn.write_all(&serde_json::to_vec(req).map_err(std::io::Error::other)?)?;
    conn.shutdown(std::net::Shutdown::Write)?;
    let mut buf = Vec::new();
    conn.read_to_end(&mut buf)?;
    serde_json::from_slice(&buf).map_err(std::io::Error::other)
}

/// The `swanctl` kwok finds first on its PATH: it asks the sandbox (`exe exec-answer`) to
/// answer as the pod the `Exec` names.
pub fn swanctl_script(exe: &std::path::Path, socket: &std::path::Path) -> String {
    let q = |p: &std::path::Path| format!("'{}'", p.display().to_string().replace('\'', r"'\''"));
    format!(
        "#!/bin/sh\n# Written by vpnmig-sandbox: answers as the gateway pod's simulated strongSwan.\nexec {} exec-answer --socket {} --namespace \"$VPNMIG_POD_NAMESPACE\" --pod \"$VPNMIG_POD_NAME\" --container strongswan -- swanctl \"$@\"\n",
        q(exe),
        q(socket)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> DynamicObject {
        serde_json::from_value(v).unwrap()
    }

    /// Each watched kind wakes the gateway it belongs to. A VPNPeer names its gateway in
    /// `spec.gatewayRef.name` (fixtures/crds): keyed by a field the schema has not, a
    /// peer's own changes woke nothing, and a peer applied after its gateway's last
    /// reconcile waited for an unrelated change (the random-kill campaign's seed 21 on
    /// the real control plane: Authorized never reported in 4 minutes).
    #[test]
    fn a_change_wakes_the_gateway_it_belongs_to() {
        let rows: [(&str, Value, Vec<Scope>); 4] = [
            (
                "VPNPeer",
                serde_json::json!({"metadata": {"name": "p1", "namespace": "t"},
                    "spec": {"gatewayRef": {"name": "acme"}}}),
                vec![Scope::gateway(GatewayKind::Vpn, "t", "acme")],
            ),
            (
                "VPNPeer",
                serde_json::json!({"metadata": {"name": "p1", "namespace": "t"}, "spec": {}}),
                vec![],
            ),
            (
                "IPsecGateway",
                serde_json::json!({"metadata": {"name": "acme", "namespace": "t"}}),
                vec![Scope::gateway(GatewayKind::IPsec, "t", "acme")],
            ),
            (
                "Pod",
                serde_json::json!({"metadata": {"name": "acme-x", "namespace": "t",
                    "labels": {"app.kubernetes.io/instance": "acme"}}}),
                vec![Scope {
                    kind: None,
                    ns: Some("t".into()),
                    name: Some("acme".into()),
                }],
            ),
        ];
        for (kind, o, want) in rows {
            assert_eq!(keys_of(kind, &obj(o.clone())), want, "{kind} {o}");
        }
    }
}
