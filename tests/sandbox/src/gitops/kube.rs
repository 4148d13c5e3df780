//! The simulated Argo CD and Flux as controllers over a Kubernetes API server (the real
//! control plane): [`KubeGitopsApi`] is their [`GitopsApi`] through `kube::Client`, and
//! [`run`] drives the passes with `kube::runtime` watchers and a bounded poll.
//!
//! - Types: from the server's (aggregated) discovery, read at the first use and again
//!   after a CustomResourceDefinition changed (a watch of them: a CRD a scenario or a test
//!   adds later is served from its next pass on).
//! - Reads: `GET`/`LIST` through `Api<DynamicObject>`. A pass lists, once, each type the
//!   emulator serves too (its built-in kinds and every custom resource) for prune's
//!   tracked objects: the lists are kept for the pass and dropped on any write of that
//!   type.
//! - Writes: server-side apply (`PATCH` application/apply-patch+yaml, `force=true`) with
//!   the tool's field manager; a read-modify-write (status through the status subresource
//!   where the type has one) is a read and a `PUT` with the read's resourceVersion, tried
//!   again (at most [`crate::operator::kube::CONFLICT_RETRIES`] times) on 409 Conflict; a
//!   prune is a `DELETE` with the server's default propagation.
//! - Passes: the same [`super::Gitops::reconcile`] as on the emulator, run when a watched
//!   object changed, the settings changed, a self-heal is due, or [`POLL`] passed.

use std::collections::HashMap;
use std::sync::{Mutex, Weak};
use std::time::Duration;

use ::kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use ::kube::discovery::{Discovery, Scope, verbs};
use ::kube::runtime::{WatchStreamExt, watcher};
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use super::{Gitops, GitopsApi, Settings};
use crate::operator::TICK;
use crate::operator::api::{Edit, OperatorApi};
use crate::operator::kube::{CONFLICT_RETRIES, KubeApi};
use crate::resources::{Gvr, ResourceType};
use crate::status::ApiError;

/// A pass runs at least this often (what no watch covers: a tracked object of another
/// kind changed).
pub const POLL: Duration = Duration::from_secs(1);

/// What the server serves, as read by discovery.
#[derive(Default)]
struct Discovered {
    /// Read, and no CRD changed since.
    fresh: bool,
    /// Bumped by every CRD change: a discovery that began before one is not fresh.
    generation: u64,
    /// Every served version of every type.
    all: Vec<ResourceType>,
    /// What prune looks for tracked objects in: the preferred version of each type the
    /// emulator serves too (its built-in kinds, [`crate::resources::builtins`], and every
    /// custom resource), so that both backends look at the same types.
    listable: Vec<ResourceType>,
}

/// A list's type and namespace (`None`: every namespace).
type ListKey = (Gvr, Option<String>);

/// The simulated Argo CD's and Flux's access to a Kubernetes API server.
pub struct KubeGitopsApi {
    kube: KubeApi,
    client: ::kube::Client,
    discovered: Mutex<Discovered>,
    /// This pass's lists, by type and namespace.
    lists: Mutex<HashMap<ListKey, Vec<Value>>>,
}

/// Whether `group` is a custom resource's (a CRD's): Kubernetes' own groups are the core
/// group, `apps`, `batch`, `autoscaling`, `policy` and those under `.k8s.io`.
fn custom_group(group: &str) -> bool {
    !(group.is_empty()
        || matches!(group, "apps" | "batch" | "autoscaling" | "policy")
        || group.ends_with(".k8s.io"))
}

fn resource_type(ar: &ApiResource, namespaced: bool, status: bool) -> ResourceType {
    ResourceType {
        group: ar.group.clone(),
        version: ar.version.clone(),
        kind: ar.kind.clone(),
        plural: ar.plural.clone(),
        singular: ar.kind.to_lowercase(),
        short_names: Vec::new(),
        namespaced,
        status_subresource: status,
        subresources: Vec::new(),
        verbs: Vec::new(),
        schema: None,
        printer_columns: Vec::new(),
        from_crd: false,
    }
}

impl KubeGitopsApi {
    /// Over `client`, on the current tokio runtime (its calls block a thread that is not
    /// one of the runtime's workers: the passes run in `spawn_blocking`).
    pub fn new(client: ::kube::Client) -> KubeGitopsApi {
        KubeGitopsApi {
            kube: KubeApi::new(client.clone()),
            client,
            discovered: Mutex::new(Discovered::default()),
            lists: Mutex::new(HashMap::new()),
        }
    }

    /// Read discovery when never read or a CRD changed since.
    ///
    /// The lock is never held across the request: the CRD watch marks discovery stale from
    /// a runtime worker, and a worker blocked on this lock while the request waits for a
    /// worker to drive its I/O was a deadlock (a real row hung for 20 minutes under load).
    fn discover(&self) {
        let generation = {
            let d = self.discovered.lock().unwrap_or_else(|e| e.into_inner());
            if d.fresh {
                return;
            }
            d.generation
        };
        let Ok(found) = self.kube.block(
            "discovery",
            Discovery::new(self.client.clone()).run_aggregated(),
        ) else {
            return;
        };
        let (mut all, mut listable) = (Vec::new(), Vec::new());
        let builtins: Vec<(String, String)> = crate::resources::builtins()
            .into_iter()
            .map(|rt| (rt.group, rt.plural))
            .collect();
        for g in found.groups() {
            let preferred = g.preferred_version_or_latest().to_string();
            for v in g.versions() {
                for (ar, caps) in g.versioned_resources(v) {
                    let status = caps.subresources.iter().any(|(s, _)| s.plural == "status");
                    let rt = resource_type(&ar, caps.scope == Scope::Namespaced, status);
                    let served_by_the_emulator = custom_group(&rt.group)
                        || builtins.contains(&(rt.group.clone(), rt.plural.clone()));
                    if v == preferred
                        && served_by_the_emulator
                        && caps.supports_operation(verbs::LIST)
                        && caps.supports_operation(verbs::GET)
                    {
                        listable.push(rt.clone());
                    }
                    all.push(rt);
                }
            }
        }
        let mut d = self.discovered.lock().unwrap_or_else(|e| e.into_inner());
        d.all = all;
        d.listable = listable;
        d.fresh = d.generation == generation;
    }

    fn find(&self, matches: impl Fn(&ResourceType) -> bool) -> Option<ResourceType> {
        self.discover();
        let d = self.discovered.lock().unwrap_or_else(|e| e.into_inner());
        d.all.iter().find(|rt| matches(rt)).cloned()
    }

    fn written(&self, rt: &ResourceType) {
        let gvr = rt.gvr();
        self.lists
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(g, _), _| *g != gvr);
    }
}

impl GitopsApi for KubeGitopsApi {
    fn resource(&self, group: &str, version: &str, plural: &str) -> Option<ResourceType> {
        self.find(|rt| rt.group == group && rt.version == version && rt.plural == plural)
    }

    fn resource_for_kind(&self, api_version: &str, kind: &str) -> Option<ResourceType> {
        self.find(|rt| rt.api_version() == api_version && rt.kind == kind)
    }

    fn types(&self) -> Vec<ResourceType> {
        self.discover();
        self.discovered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .listable
            .clone()
    }

    fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<Value, ApiError> {
        OperatorApi::get(&self.kube, rt, ns, name)
    }

    fn list(&self, rt: &ResourceType, ns: Option<&str>) -> Vec<Value> {
        let key = (rt.gvr(), ns.map(str::to_string));
        if let Some(l) = self
            .lists
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return l.clone();
        }
        let Ok(items) = OperatorApi::list(&self.kube, rt, ns) else {
            return Vec::new();
        };
        self.lists
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, items.clone());
        items
    }

    fn modify(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        status: bool,
        manager: &str,
        edit: Edit<'_>,
    ) -> Result<Value, ApiError> {
        self.written(rt);
        let api = self.kube.api(rt, Some(ns));
        let what = format!("update {} {ns}/{name}", rt.plural);
        let pp = PostParams {
            dry_run: false,
            field_manager: Some(manager.into()),
        };
        let mut last = None;
        for _ in 0..CONFLICT_RETRIES {
            let cur = GitopsApi::get(self, rt, ns, name)?;
            let new = edit(&cur)?;
            if new == cur {
                return Ok(cur);
            }
            let o: DynamicObject = serde_json::from_value(new)
                .map_err(|e| ApiError::new(400, "BadRequest", format!("not an object: {e}")))?;
            let written = if status && rt.status_subresource {
                self.kube.block(&what, api.replace_status(name, &pp, &o))
            } else {
                self.kube.block(&what, api.replace(name, &pp, &o))
            };
            match written {
                Err(e) if e.code == 409 => last = Some(e),
                r => return r.map(|o| serde_json::to_value(o).unwrap_or(Value::Null)),
            }
        }
        Err(last.unwrap_or_else(|| ApiError::new(409, "Conflict", what)))
    }

    fn apply(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        obj: Value,
        manager: &str,
    ) -> Result<Value, ApiError> {
        self.written(rt);
        let api = self.kube.api(rt, Some(ns));
        self.kube
            .block(
                &format!("apply {} {ns}/{name}", rt.plural),
                api.patch(
                    name,
                    &PatchParams::apply(manager).force(),
                    &Patch::Apply(&obj),
                ),
            )
            .map(|o| serde_json::to_value(o).unwrap_or(Value::Null))
    }

    fn delete(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<(), ApiError> {
        self.written(rt);
        let api = self.kube.api(rt, Some(ns));
        self.kube
            .block(
                &format!("delete {} {ns}/{name}", rt.plural),
                api.delete(name, &DeleteParams::default()),
            )
            .map(|_| ())
    }

    /// The lists this pass has not read yet, read concurrently (one request each, over
    /// the one connection) and kept for the pass.
    fn prefetch(&self, types: &[ResourceType]) {
        let missing: Vec<&ResourceType> = {
            let lists = self.lists.lock().unwrap_or_else(|e| e.into_inner());
            types
                .iter()
                .filter(|rt| !lists.contains_key(&(rt.gvr(), None)))
                .collect()
        };
        let reads = missing.iter().map(|rt| {
            let api = self.kube.api(rt, None);
            async move { (rt.gvr(), api.list(&Default::default()).await) }
        });
        let Ok(read) = self.kube.block("list for prune", async {
            Ok(futures::future::join_all(reads).await)
        }) else {
            return;
        };
        let mut lists = self.lists.lock().unwrap_or_else(|e| e.into_inner());
        for (gvr, list) in read {
            let Ok(list) = list else { continue };
            let mut items: Vec<Value> = list
                .items
                .into_iter()
                .map(|o| serde_json::to_value(o).unwrap_or(Value::Null))
                .collect();
            items.sort_by_key(|v| {
                (
                    v["metadata"]["namespace"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    v["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                )
            });
            lists.insert((gvr, None), items);
        }
    }

    fn types_changed(&self) {
        let mut d = self.discovered.lock().unwrap_or_else(|e| e.into_inner());
        d.fresh = false;
        d.generation += 1;
    }

    fn begin_pass(&self) {
        self.lists.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// What wakes a pass: the owners, their sources, what a window changes, and the CRDs
/// (which also make discovery be read again).
const WATCHED: [(&str, &str, &str, &str); 10] = [
    (
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
    ),
    ("argoproj.io", "v1alpha1", "applications", "Application"),
    (
        "argoproj.io",
        "v1alpha1",
        "applicationsets",
        "ApplicationSet",
    ),
    (
        "kustomize.toolkit.fluxcd.io",
        "v1",
        "kustomizations",
        "Kustomization",
    ),
    (
        "helm.toolkit.fluxcd.io",
        "v2",
        "helmreleases",
        "HelmRelease",
    ),
    ("", "v1", "configmaps", "ConfigMap"),
    ("", "v1", "secrets", "Secret"),
    (
        "ipsec.bnerd.net",
        "v1alpha1",
        "ipsecgateways",
        "IPsecGateway",
    ),
    ("vpn.bnerd.net", "v1alpha1", "vpngateways", "VPNGateway"),
    ("vpn.bnerd.net", "v1alpha1", "vpnpeers", "VPNPeer"),
];

/// Drive `g` over `client` until it is dropped or stopped: one watcher per watched type
/// marks the state changed; a pass runs (on a blocking thread) when it changed, the
/// settings changed, a self-heal is due or [`POLL`] passed since the last one.
pub(super) async fn run(g: Weak<Gitops>, client: ::kube::Client, mut stop: watch::Receiver<bool>) {
    let changed = std::sync::Arc::new(Notify::new());
    let mut watchers = tokio::task::JoinSet::new();
    for (group, version, plural, kind) in WATCHED {
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
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        let changed = changed.clone();
        let crds = plural == "customresourcedefinitions";
        let g = g.clone();
        watchers.spawn(async move {
            // A type not served (no CRD) fails its list and is tried again with backoff;
            // the poll covers it meanwhile.
            let mut events = watcher(api, watcher::Config::default())
                .default_backoff()
                .touched_objects()
                .boxed();
            while let Some(ev) = events.next().await {
                if ev.is_ok() {
                    if crds && let Some(g) = g.upgrade() {
                        g.api.types_changed();
                    }
                    changed.notify_one();
                }
            }
        });
    }
    let mut seen_settings: Option<Settings> = None;
    let mut deadline: Option<Instant> = None;
    let mut dirty = true;
    let mut last = Instant::now();
    loop {
        if *stop.borrow_and_update() {
            break;
        }
        let (wake, until) = {
            let Some(g) = g.upgrade() else { break };
            let settings = g.settings.read().unwrap_or_else(|e| e.into_inner()).clone();
            let now = Instant::now();
            let due = deadline.is_some_and(|d| d <= now);
            if dirty || due || seen_settings.as_ref() != Some(&settings) || now >= last + POLL {
                dirty = false;
                let (g2, s2) = (g.clone(), settings.clone());
                deadline = tokio::task::spawn_blocking(move || g2.reconcile(&s2, Instant::now()))
                    .await
                    .ok()
                    .flatten();
                seen_settings = Some(settings);
                last = Instant::now();
            }
            let now = Instant::now();
            // The settings are looked at every TICK, as on the emulator.
            let until = (now + TICK).min(last + POLL);
            (g.wake.clone(), deadline.map_or(until, |d| d.min(until)))
        };
        tokio::select! {
            r = stop.changed() => if r.is_err() { break },
            _ = changed.notified() => dirty = true,
            _ = wake.notified() => dirty = true,
            _ = tokio::time::sleep_until(until) => {}
        }
    }
    watchers.shutdown().await;
}
