//! A simulated Argo CD and Flux (issue 11 item 5): what makes a GitOps-managed cluster
//! dangerous for a migration window. Their self-heal re-creates the IPsecGateway seconds
//! after vpnmig deleted it (and the old operator grabs the pinned floating IP again);
//! their prune deletes the new objects that are not in Git.
//!
//! CONTRACT (vpnmig's end-to-end tests rely on it; `docs/gitops.md` says the same):
//!
//! - Owners: every Argo CD `Application` (`applications.argoproj.io/v1alpha1`) and Flux
//!   `Kustomization` (`kustomizations.kustomize.toolkit.fluxcd.io/v1`), once the scenario
//!   brought their CRDs (`fixtures/crds/argocd-application.yaml`,
//!   `fixtures/crds/flux-kustomization.yaml`; `flux-helmrelease.yaml` is served only).
//!   A scenario without them behaves exactly as before: nothing here acts. A Flux
//!   `HelmRelease` (`helmreleases.helm.toolkit.fluxcd.io/v2`) is an owner like a
//!   Kustomization once its source ConfigMap exists (markers `helm.toolkit.fluxcd.io/name`
//!   and `/namespace`, field manager `helm-controller`, always pruning, fault key
//!   `flux/<ns>/<name>`); without one it is served only. An `ApplicationSet`
//!   (`applicationsets.argoproj.io/v1alpha1`) puts its template's `spec.syncPolicy` back on
//!   each Application that has an ownerReference to it (see [`application_sets`]).
//! - Source ("Git"): the ConfigMap `<owner>-source` in the owner's namespace, key
//!   `manifests`: multi-document YAML. A test edits it to simulate a merged change. No
//!   ConfigMap, or one that does not parse, means no action at all (never "prune
//!   everything"): the owner reports the error in its status.
//! - Namespace of a source object: its own, else Argo's `spec.destination.namespace`,
//!   else `default`; Flux's `spec.targetNamespace` overrides all (as in Flux).
//! - Active: Argo — `spec.syncPolicy.automated` is present and the annotation
//!   `argocd.argoproj.io/skip-reconcile` is not `"true"`; Flux — `spec.suspend` is not
//!   true. Prune: Argo `spec.syncPolicy.automated.prune: true`, Flux `spec.prune: true`.
//! - Drift: a source object that is missing (not one still being deleted: that is
//!   waited for), or whose live fields differ from the source's (every field the source
//!   sets, labels and annotations included, compared as a subset: fields the server
//!   added do not count); and, with prune, a tracked object that is not in the source.
//!   An Application's `spec.ignoreDifferences` entries that match an object (kind,
//!   group, and name / namespace where given) take their `jsonPointers` (and
//!   `jqPathExpressions` of the form `.a.b`) out of the comparison, as Argo CD does: a
//!   difference there reads `Synced`. Its sync still applies the whole manifest, those
//!   fields included, unless `spec.syncPolicy.syncOptions` holds
//!   `RespectIgnoreDifferences=true` (then they keep their live values).
//! - Sync: once an owner has been out of sync for `selfHealDelayMs`, every drifted
//!   object is server-side applied with field manager `argocd-controller` /
//!   `kustomize-controller` (force), stamped with the tracking markers, and the extras are
//!   deleted — except those carrying the prune protection the tool honours on a live
//!   object (Argo CD `argocd.argoproj.io/sync-options` with `Prune=false`: kept, and the
//!   Application stays OutOfSync, as Argo CD shows "requires pruning"; Flux
//!   `kustomize.toolkit.fluxcd.io/prune: disabled`, a HelmRelease's
//!   `helm.sh/resource-policy: keep`: kept and left out of the inventory).
//!   A Kustomization never applies a source object whose live copy carries
//!   `kustomize.toolkit.fluxcd.io/reconcile: disabled` or `…/ssa: Ignore` (not drift, still
//!   in its inventory), as kustomize-controller skips it. The first time an owner is
//!   seen, the source objects that exist are applied
//!   once (as by the sync that created them), so they carry the manager in
//!   `metadata.managedFields` from the start.
//! - Tracking markers: Argo — label `app.kubernetes.io/instance: <app>` and annotation
//!   `argocd.argoproj.io/tracking-id: <app>:<group>/<Kind>:<ns>/<name>`; an object
//!   carrying either (the label with the app's name, the annotation with prefix
//!   `<app>:`) is tracked. Flux — labels `kustomize.toolkit.fluxcd.io/name: <ks>` and
//!   `kustomize.toolkit.fluxcd.io/namespace: <ks-ns>`; both must match.
//! - Status (cheap, written only when it changes): Argo `status.sync.status`
//!   `Synced|OutOfSync|Unknown`, `status.health.status: Healthy` and `status.resources`
//!   (what the source defines, each with its `status` `Synced|OutOfSync`, and each
//!   tracked object the source no longer defines, `OutOfSync` with
//!   `requiresPruning: true`, as a real Argo CD lists them; refreshed also while not
//!   automated; on a source error the earlier list stays, with a `ComparisonError`
//!   condition), `status.reconciledAt` (the comparison's time: written with a changed
//!   status, after a spec change such as a restored sync policy, and when the annotation
//!   `argocd.argoproj.io/refresh` asks for it, which is then taken off, as Argo CD does)
//!   and, once it synced, `status.operationState` (`finishedAt`: when its last sync
//!   was); Flux `status.inventory.entries` (written by a sync, kept while
//!   suspended), `status.observedGeneration` (not moved while suspended) and a `Ready`
//!   condition (`ReconciliationSucceeded`, `Progressing`, `Suspended`, `SourceError`).
//!
//! Settings: the `gitops:` section of the settings file, changeable at run time through
//! [`Gitops::settings`] (noticed within [`crate::operator::TICK`]):
//!
//! ```yaml
//! gitops:
//!   selfHealDelayMs: 5000       # out of sync this long before a sync; 0 (default) = at once
//!   ignoresSuspension: false    # fault: acts although suspended / not automated / skip-reconcile
//!   relabels: false             # fault: stamps its markers on every object of a kind it knows
//!   owners:                     # the same two faults for one owner (ORed with the global ones)
//!     argocd/argocd/acme: {ignoresSuspension: true}
//!     flux/flux-system/acme: {relabels: true}
//!     argocd/argocd/root: {comparesIgnored: true}   # disregards its ignoreDifferences
//!     flux/flux-system/acme: {ignoresPruneProtection: true}   # prunes protected objects too
//! ```
//!
//! `relabels` stamps the owner's tracking markers on every object in its destination
//! namespaces (those of its source objects, and Argo's destination / Flux's
//! `targetNamespace`) whose kind is in its source or belongs to `ipsec.bnerd.net` or
//! `vpn.bnerd.net`, so with prune the new VPNGateway and VPNPeers are deleted. With
//! `ignoresSuspension`, a suspended owner prunes if its prune setting was ever seen on.
//!
//! The controller runs as its own task (like [`crate::operator`]): it reacts to store
//! events, its timers and setting changes, holds only a weak reference and ends on
//! [`Gitops::shutdown`] or when dropped. It reads and writes through [`GitopsApi`]: the
//! emulator's [`Store`] ([`Gitops::start`]), or a Kubernetes API server
//! ([`Gitops::start_kube`], [`kube`]: the real control plane, where watches and a poll of
//! at most a second stand for the store's events). The CONTRACT above holds on both.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, Weak};
use std::time::Duration;

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::operator::api::Edit;
use crate::operator::{PassStats, TICK};
use crate::resources::{Gvr, ResourceType};
use crate::status::ApiError;
use crate::store::{DeleteOptions, Store, WriteOptions};

pub mod kube;

/// Argo CD's field manager.
pub const ARGO_MANAGER: &str = "argocd-controller";
/// Flux's field manager.
pub const FLUX_MANAGER: &str = "kustomize-controller";
/// Argo CD's tracking label (label tracking, the default before 3.0).
pub const ARGO_LABEL: &str = "app.kubernetes.io/instance";
/// Argo CD's tracking annotation (annotation tracking, the default since 3.0).
pub const ARGO_TRACKING_ID: &str = "argocd.argoproj.io/tracking-id";
/// `"true"` on an Application: Argo CD leaves it alone.
pub const ARGO_SKIP_RECONCILE: &str = "argocd.argoproj.io/skip-reconcile";
/// Argo CD's per-object sync options; `Prune=false` among them: never pruned.
pub const ARGO_SYNC_OPTIONS: &str = "argocd.argoproj.io/sync-options";
/// `disabled` on an object: Flux never prunes it.
pub const FLUX_PRUNE: &str = "kustomize.toolkit.fluxcd.io/prune";
/// Flux's tracking labels.
/// `disabled` on a live object: kustomize-controller never applies it (fluxcd/pkg ssa
/// `shouldSkipApply` reads the exclusion from the *existing* in-cluster object).
pub const FLUX_RECONCILE: &str = "kustomize.toolkit.fluxcd.io/reconcile";
/// `Ignore` on a live object: the same for the `ssa` annotation.
pub const FLUX_SSA: &str = "kustomize.toolkit.fluxcd.io/ssa";
pub const FLUX_NAME_LABEL: &str = "kustomize.toolkit.fluxcd.io/name";
pub const FLUX_NAMESPACE_LABEL: &str = "kustomize.toolkit.fluxcd.io/namespace";
/// On an Application: its controller compares it again now, then takes the annotation
/// off.
pub const ARGO_REFRESH: &str = "argocd.argoproj.io/refresh";
/// The time now as the API server writes it (RFC 3339, seconds).
fn timestamp() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}
/// The ApplicationSet controller's field manager.
pub const APPSET_MANAGER: &str = "argocd-applicationset-controller";
/// Flux's helm-controller: its field manager and tracking labels.
pub const HELM_MANAGER: &str = "helm-controller";
pub const HELM_NAME_LABEL: &str = "helm.toolkit.fluxcd.io/name";
pub const HELM_NAMESPACE_LABEL: &str = "helm.toolkit.fluxcd.io/namespace";
/// The source ConfigMap of owner `X` is `X-source`; its manifests are under this key.
pub const SOURCE_SUFFIX: &str = "-source";
pub const SOURCE_KEY: &str = "manifests";

/// What the simulated Argo CD and Flux read and write, behind one trait (as the operator's
/// [`crate::operator::OperatorApi`]): the emulator's in-memory [`Store`], or a Kubernetes
/// API server through `kube::Client` ([`kube::KubeGitopsApi`]: the real control plane).
/// The simulation above it is one.
pub trait GitopsApi: Send + Sync {
    /// The served resource type of `group/version/plural`, if it is served.
    fn resource(&self, group: &str, version: &str, plural: &str) -> Option<ResourceType>;
    /// The served resource type of a manifest's `apiVersion` and `kind`.
    fn resource_for_kind(&self, api_version: &str, kind: &str) -> Option<ResourceType>;
    /// Every served type that can be listed (what prune looks for tracked objects in).
    fn types(&self) -> Vec<ResourceType>;
    fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<Value, ApiError>;
    /// The objects of a type in one namespace (`Some`) or all (`None`). Empty when they
    /// could not be read: every caller then does nothing for them (no owner acts, nothing
    /// is pruned or relabelled).
    fn list(&self, rt: &ResourceType, ns: Option<&str>) -> Vec<Value>;
    /// Read, edit and write back one object as `manager` (its status through the status
    /// subresource when `status`).
    fn modify(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        status: bool,
        manager: &str,
        edit: Edit<'_>,
    ) -> Result<Value, ApiError>;
    /// Server-side apply `obj` as `manager`, forcing conflicts (as the tools do).
    fn apply(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        obj: Value,
        manager: &str,
    ) -> Result<Value, ApiError>;
    /// Delete one object (a prune; the server's default propagation).
    fn delete(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<(), ApiError>;
    /// A pass over every owner begins: what was read in the one before is stale.
    fn begin_pass(&self) {}
    /// The served types may have changed (a CustomResourceDefinition did).
    fn types_changed(&self) {}
    /// Every object of each of `types` is about to be listed: read them now, at once.
    fn prefetch(&self, _types: &[ResourceType]) {}
}

impl GitopsApi for Store {
    fn resource(&self, group: &str, version: &str, plural: &str) -> Option<ResourceType> {
        Store::resource(self, group, version, plural)
    }
    fn resource_for_kind(&self, api_version: &str, kind: &str) -> Option<ResourceType> {
        Store::resource_for_kind(self, api_version, kind)
    }
    fn types(&self) -> Vec<ResourceType> {
        Store::types(self)
    }
    fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<Value, ApiError> {
        Store::get(self, rt, ns, name)
    }
    fn list(&self, rt: &ResourceType, ns: Option<&str>) -> Vec<Value> {
        Store::list(self, rt, ns).0
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
        let opts = WriteOptions {
            field_manager: Some(manager.into()),
            ..Default::default()
        };
        Store::modify(self, rt, ns, name, status, &opts, edit)
    }
    fn apply(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        obj: Value,
        manager: &str,
    ) -> Result<Value, ApiError> {
        Store::apply(
            self,
            rt,
            ns,
            name,
            obj,
            manager,
            true,
            false,
            &WriteOptions::default(),
        )
    }
    fn delete(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<(), ApiError> {
        Store::delete(self, rt, ns, name, &DeleteOptions::default()).map(|_| ())
    }
}

/// The `gitops:` section of the settings file. Every field has a default.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// How long an owner is out of sync before it syncs (self-heal and prune).
    pub self_heal_delay_ms: u64,
    /// Fault: every owner acts although suspended.
    pub ignores_suspension: bool,
    /// Fault: every owner stamps its markers on every object of a kind it knows.
    pub relabels: bool,
    /// The faults for one owner: key `argocd/<ns>/<name>` or `flux/<ns>/<name>`.
    pub owners: BTreeMap<String, OwnerFaults>,
}

/// Fault knobs of one owner, ORed with the global ones.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct OwnerFaults {
    pub ignores_suspension: bool,
    pub relabels: bool,
    /// Its comparison and sync disregard its `spec.ignoreDifferences` (an Argo CD that
    /// says it ignores a field yet writes it back, e.g. a parent Application whose sync
    /// replaces its children's spec).
    pub compares_ignored: bool,
    /// Fault: its prune deletes what carries the prune protection too (an object deleted
    /// anyway: a controller that does not honour it, or someone else's delete at the same
    /// moment).
    pub ignores_prune_protection: bool,
}

impl Settings {
    /// The faults in effect for the owner with key `key`.
    pub fn faults(&self, key: &str) -> OwnerFaults {
        let o = self.owners.get(key).cloned().unwrap_or_default();
        OwnerFaults {
            ignores_suspension: self.ignores_suspension || o.ignores_suspension,
            relabels: self.relabels || o.relabels,
            compares_ignored: o.compares_ignored,
            ignores_prune_protection: o.ignores_prune_protection,
        }
    }

    /// Keys must name a tool: `argocd/<ns>/<name>` or `flux/<ns>/<name>`.
    pub fn validate(&self) -> Result<(), String> {
        for k in self.owners.keys() {
            let parts: Vec<&str> = k.split('/').collect();
            if parts.len() != 3
                || !matches!(parts[0], "argocd" | "flux")
                || parts[1].is_empty()
                || parts[2].is_empty()
            {
                return Err(format!(
                    "gitops.owners[{k:?}]: the key must be argocd/<namespace>/<name> or flux/<namespace>/<name>"
                ));
            }
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tool {
    Argo,
    Flux,
    /// A Flux HelmRelease: its "chart" is its source ConfigMap too.
    Helm,
}

/// One Application or Kustomization as read in a pass.
struct Owner {
    tool: Tool,
    rt: ResourceType,
    obj: Value,
    /// The `comparesIgnored` fault is on for it.
    compares_ignored: bool,
}

fn s<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or_default()
}

impl Owner {
    fn ns(&self) -> &str {
        s(&self.obj, "/metadata/namespace")
    }
    fn name(&self) -> &str {
        s(&self.obj, "/metadata/name")
    }
    fn uid(&self) -> &str {
        s(&self.obj, "/metadata/uid")
    }
    fn key(&self) -> String {
        let tool = match self.tool {
            Tool::Argo => "argocd",
            Tool::Flux | Tool::Helm => "flux",
        };
        format!("{tool}/{}/{}", self.ns(), self.name())
    }
    fn manager(&self) -> &'static str {
        match self.tool {
            Tool::Argo => ARGO_MANAGER,
            Tool::Flux => FLUX_MANAGER,
            Tool::Helm => HELM_MANAGER,
        }
    }
    /// Not suspended.
    fn active(&self) -> bool {
        match self.tool {
            Tool::Argo => {
                // `automated: null` (a merge patch's leftover) is no policy either.
                self.obj
                    .pointer("/spec/syncPolicy/automated")
                    .is_some_and(|a| !a.is_null())
                    && s(
                        &self.obj,
                        &format!(
                            "/metadata/annotations/{}",
                            ARGO_SKIP_RECONCILE.replace('/', "~1")
                        ),
                    ) != "true"
            }
            Tool::Flux | Tool::Helm => {
                self.obj.pointer("/spec/suspend").and_then(Value::as_bool) != Some(true)
            }
        }
    }
    /// Whether an Application's `spec.syncPolicy.syncOptions` holds `option`.
    fn sync_option(&self, option: &str) -> bool {
        self.obj
            .pointer("/spec/syncPolicy/syncOptions")
            .and_then(Value::as_array)
            .is_some_and(|os| os.iter().any(|x| x.as_str() == Some(option)))
    }
    fn prune(&self) -> bool {
        let p = match self.tool {
            Tool::Argo => "/spec/syncPolicy/automated/prune",
            Tool::Flux => "/spec/prune",
            // An upgrade removes what the chart no longer renders.
            Tool::Helm => return true,
        };
        self.obj.pointer(p).and_then(Value::as_bool) == Some(true)
    }
    /// The namespace a source object without one goes to (Flux: all of them).
    fn target_ns(&self) -> Option<&str> {
        let p = match self.tool {
            Tool::Argo => "/spec/destination/namespace",
            Tool::Flux | Tool::Helm => "/spec/targetNamespace",
        };
        Some(s(&self.obj, p)).filter(|n| !n.is_empty())
    }
    fn markers(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
    ) -> (Map<String, Value>, Map<String, Value>) {
        let mut labels = Map::new();
        let mut annotations = Map::new();
        match self.tool {
            Tool::Argo => {
                labels.insert(ARGO_LABEL.into(), json!(self.name()));
                annotations.insert(
                    ARGO_TRACKING_ID.into(),
                    json!(format!(
                        "{}:{}/{}:{ns}/{name}",
                        self.name(),
                        rt.group,
                        rt.kind
                    )),
                );
            }
            Tool::Flux => {
                labels.insert(FLUX_NAME_LABEL.into(), json!(self.name()));
                labels.insert(FLUX_NAMESPACE_LABEL.into(), json!(self.ns()));
            }
            Tool::Helm => {
                labels.insert(HELM_NAME_LABEL.into(), json!(self.name()));
                labels.insert(HELM_NAMESPACE_LABEL.into(), json!(self.ns()));
            }
        }
        (labels, annotations)
    }
    /// Whether `obj` carries this owner's tracking markers.
    fn tracks(&self, obj: &Value) -> bool {
        let label = |k: &str| obj["metadata"]["labels"][k].as_str();
        match self.tool {
            Tool::Argo => {
                label(ARGO_LABEL) == Some(self.name())
                    || obj["metadata"]["annotations"][ARGO_TRACKING_ID]
                        .as_str()
                        .is_some_and(|t| t.starts_with(&format!("{}:", self.name())))
            }
            Tool::Flux => {
                label(FLUX_NAME_LABEL) == Some(self.name())
                    && label(FLUX_NAMESPACE_LABEL) == Some(self.ns())
            }
            Tool::Helm => {
                label(HELM_NAME_LABEL) == Some(self.name())
                    && label(HELM_NAMESPACE_LABEL) == Some(self.ns())
            }
        }
    }
}

/// One source object, resolved against the served types.
struct Desired {
    rt: ResourceType,
    ns: String,
    name: String,
    /// The source's object with the tracking markers stamped and `stringData` folded
    /// into `data`: what is applied and compared.
    obj: Value,
}

type ObjKey = (Gvr, String, String);

#[derive(Default)]
struct State {
    /// Owner uid → since when it is out of sync (while it may act).
    out_of_sync: HashMap<String, Instant>,
    /// Owners whose existing source objects were applied once (adoption).
    adopted: HashSet<String>,
    /// Owners whose prune setting was seen on (for `ignoresSuspension`).
    pruned_once: HashSet<String>,
    /// Application uid → its spec (all but metadata and status) as its last comparison
    /// saw it: a spec change (a restored sync policy) is compared again, as Argo CD
    /// refreshes on it.
    compared_spec: HashMap<String, Value>,
    /// Application uid → when its last sync finished (`status.operationState`).
    synced_at: HashMap<String, String>,
}

/// The running simulated Argo CD and Flux.
pub struct Gitops {
    api: Arc<dyn GitopsApi>,
    settings: RwLock<Settings>,
    state: Mutex<State>,
    wake: Arc<Notify>,
    stop: watch::Sender<bool>,
    task: Mutex<Option<JoinHandle<()>>>,
    passes: Mutex<PassStats>,
    /// Held for the whole of a pass: [`Gitops::shutdown`] waits for it, so that no pass
    /// begun before the shutdown writes after it returns.
    passing: Mutex<()>,
}

impl Gitops {
    /// Adopt what the owners already manage (one pass, before returning, so the loaded
    /// objects carry the controllers' managedFields), then start the controller task on
    /// the current tokio runtime.
    pub fn start(store: Arc<Store>, settings: Settings) -> Arc<Gitops> {
        let (stop, stop_rx) = watch::channel(false);
        let g = Gitops::new(store.clone(), settings.clone(), stop);
        g.reconcile(&settings, Instant::now());
        let handle = tokio::spawn(run(
            Arc::downgrade(&g),
            g.wake.clone(),
            store.clone(),
            store.subscribe(),
            stop_rx,
        ));
        *g.task.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
        g
    }

    /// [`Gitops::start`] over a Kubernetes API server (the real control plane): the first
    /// pass (adoption) is done before it returns; then watches of the owners, their source
    /// ConfigMaps and the kinds a window changes (Secrets, both gateway kinds, VPNPeers)
    /// wake a pass, and a pass runs at least every [`kube::POLL`] for the rest.
    /// `client` watches; `api` reads and writes.
    pub async fn start_kube(
        api: kube::KubeGitopsApi,
        client: ::kube::Client,
        settings: Settings,
    ) -> Arc<Gitops> {
        let (stop, stop_rx) = watch::channel(false);
        let g = Gitops::new(Arc::new(api), settings.clone(), stop);
        let first = g.clone();
        let _ =
            tokio::task::spawn_blocking(move || first.reconcile(&settings, Instant::now())).await;
        let handle = tokio::spawn(kube::run(Arc::downgrade(&g), client, stop_rx));
        *g.task.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
        g
    }

    fn new(api: Arc<dyn GitopsApi>, settings: Settings, stop: watch::Sender<bool>) -> Arc<Gitops> {
        Arc::new(Gitops {
            api,
            settings: RwLock::new(settings),
            state: Mutex::new(State::default()),
            wake: Arc::new(Notify::new()),
            stop,
            task: Mutex::new(None),
            passes: Mutex::new(PassStats::default()),
            passing: Mutex::new(()),
        })
    }

    /// The passes over the owners so far and the time spent in them.
    pub fn pass_stats(&self) -> PassStats {
        *self.passes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The live settings.
    pub fn settings(&self) -> &RwLock<Settings> {
        &self.settings
    }

    /// Reconcile now instead of at the next tick.
    pub fn kick(&self) {
        self.wake.notify_one();
    }

    /// Stop the controller task. Idempotent.
    ///
    /// When it returns, no pass is running and none begins: aborting the task does not
    /// stop a pass already under way on another thread, whose writes (an Application's
    /// status, a sync) would otherwise land after the caller's own (a row that freezes a
    /// status after the shutdown saw it overwritten on a loaded machine). The wait is
    /// bounded (10 s) so that a pass stuck on the API cannot hang the caller.
    pub fn shutdown(&self) {
        self.stop.send_replace(true);
        if let Some(h) = self.task.lock().unwrap_or_else(|e| e.into_inner()).take() {
            h.abort();
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            match self.passing.try_lock() {
                Ok(_) | Err(std::sync::TryLockError::Poisoned(_)) => return,
                Err(std::sync::TryLockError::WouldBlock) => {
                    std::thread::sleep(std::time::Duration::from_millis(5))
                }
            }
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One pass over every owner; returns when the next sync is due.
    fn reconcile(&self, settings: &Settings, now: Instant) -> Option<Instant> {
        let _passing = self.passing.lock().unwrap_or_else(|e| e.into_inner());
        if *self.stop.borrow() {
            return None;
        }
        let t = std::time::Instant::now();
        let next = self.pass(settings, now);
        let took = t.elapsed();
        let mut p = self.passes.lock().unwrap_or_else(|e| e.into_inner());
        p.passes += 1;
        p.busy += took;
        p.longest = p.longest.max(took);
        next
    }

    fn pass(&self, settings: &Settings, now: Instant) -> Option<Instant> {
        self.api.begin_pass();
        let mut owners = owners(&*self.api);
        for o in &mut owners {
            o.compares_ignored = settings.faults(&o.key()).compares_ignored;
        }
        let mut st = self.state();
        let live: HashSet<&str> = owners.iter().map(Owner::uid).collect();
        st.out_of_sync.retain(|u, _| live.contains(u.as_str()));
        let mut next: Option<Instant> = None;
        for o in &owners {
            if o.obj.pointer("/metadata/deletionTimestamp").is_some() {
                continue;
            }
            if let Some(due) = self.owner_pass(o, settings, &mut st, now) {
                next = Some(next.map_or(due, |n: Instant| n.min(due)));
            }
        }
        application_sets(&*self.api);
        next
    }

    fn owner_pass(
        &self,
        o: &Owner,
        settings: &Settings,
        st: &mut State,
        now: Instant,
    ) -> Option<Instant> {
        let api = &*self.api;
        let uid = o.uid().to_string();
        let faults = settings.faults(&o.key());
        // A HelmRelease without a source ConfigMap is served only, as before it acted.
        if o.tool == Tool::Helm
            && configmaps(api)
                .and_then(|rt| {
                    api.get(&rt, o.ns(), &format!("{}{SOURCE_SUFFIX}", o.name()))
                        .ok()
                })
                .is_none()
        {
            return None;
        }
        let desired = match source(api, o) {
            Ok(d) => d,
            Err(msg) => {
                st.out_of_sync.remove(&uid);
                set_status(api, o, st, Outcome::SourceError(msg), &[]);
                return None;
            }
        };
        if o.prune() {
            st.pruned_once.insert(uid.clone());
        }
        let acting = o.active() || faults.ignores_suspension;
        let prune =
            acting && (o.prune() || (faults.ignores_suspension && st.pruned_once.contains(&uid)));
        // Flux skips the apply of an object whose live copy excludes it (reconcile:
        // disabled, ssa: Ignore): neither applied nor counted as drift, but still in its
        // inventory (a skipped entry of the change set), so never pruned for it.
        if st.adopted.insert(uid.clone()) {
            for d in &desired {
                if api.get(&d.rt, &d.ns, &d.name).is_ok() && !apply_skipped(api, o, d) {
                    let _ = apply(api, o, d);
                }
            }
        }
        // What it stamped is seen by the next pass (its writes are events): on the real
        // control plane this pass's list comes from the watch's cache, which may not hold
        // the stamps yet, and a status written now said Synced without the newly tracked
        // objects (a row's flake under load, stop 40).
        if acting && faults.relabels && relabel(api, o, &desired) {
            return None;
        }
        let wanted: HashSet<ObjKey> = desired
            .iter()
            .map(|d| (d.rt.gvr(), d.ns.clone(), d.name.clone()))
            .collect();
        let drifted: Vec<&Desired> = desired
            .iter()
            .filter(|d| !apply_skipped(api, o, d) && drifts(api, o, d))
            .collect();
        let mut extras = if prune || !acting {
            extras(api, o, &wanted)
        } else {
            Vec::new()
        };
        // What carries the prune protection the tool honours is never deleted: Flux
        // leaves it out of its inventory (in sync), and so does helm-controller (an
        // upgrade that keeps a `helm.sh/resource-policy: keep` resource succeeds, and the
        // release no longer holds it); Argo CD shows it OutOfSync ("requires pruning") and
        // skips it.
        if faults.ignores_prune_protection {
            for e in &mut extras {
                e.3 = false;
            }
        }
        if o.tool != Tool::Argo {
            extras.retain(|e| !e.3);
        }
        let out_of_sync = !drifted.is_empty() || !extras.is_empty();
        let only_kept = drifted.is_empty() && extras.iter().all(|e| e.3);
        if !out_of_sync {
            st.out_of_sync.remove(&uid);
            set_status(api, o, st, Outcome::Synced, &desired);
            return None;
        }
        if !acting {
            st.out_of_sync.remove(&uid);
            set_status(api, o, st, Outcome::Suspended, &desired);
            return None;
        }
        if only_kept {
            st.out_of_sync.remove(&uid);
            set_status(api, o, st, Outcome::OutOfSync, &desired);
            return None;
        }
        let since = *st.out_of_sync.entry(uid.clone()).or_insert(now);
        let due = since + Duration::from_millis(settings.self_heal_delay_ms);
        if due > now {
            set_status(api, o, st, Outcome::OutOfSync, &desired);
            return Some(due);
        }
        st.out_of_sync.remove(&uid);
        if o.tool == Tool::Argo {
            st.synced_at.insert(uid.clone(), timestamp());
        }
        // A sync applies the drifted objects, and those whose drift ignoreDifferences
        // hides: Argo CD applies every resource of the sync, whose status cannot show it.
        for d in desired
            .iter()
            .filter(|d| drifted.iter().any(|x| std::ptr::eq(*x, *d)) || !ignored(o, d).is_empty())
        {
            let _ = apply(api, o, d);
        }
        if prune {
            for (rt, ns, name, _) in extras.into_iter().filter(|e| !e.3) {
                let _ = api.delete(&rt, &ns, &name);
            }
        }
        // The next pass (this one's writes are events) says whether it worked.
        None
    }
}

impl Drop for Gitops {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Every Application and Kustomization, when their CRDs are served.
fn owners(api: &dyn GitopsApi) -> Vec<Owner> {
    let mut out = Vec::new();
    for (tool, group, version, plural) in [
        (Tool::Argo, "argoproj.io", "v1alpha1", "applications"),
        (
            Tool::Flux,
            "kustomize.toolkit.fluxcd.io",
            "v1",
            "kustomizations",
        ),
        (Tool::Helm, "helm.toolkit.fluxcd.io", "v2", "helmreleases"),
    ] {
        let Some(rt) = api.resource(group, version, plural) else {
            continue;
        };
        for obj in api.list(&rt, None) {
            out.push(Owner {
                tool,
                rt: rt.clone(),
                obj,
                compares_ignored: false,
            });
        }
    }
    out
}

/// The ApplicationSet controller, reduced to what re-arms a paused child: once
/// `applicationsets.argoproj.io` is served, every Application with an ownerReference to an
/// ApplicationSet of its namespace gets the template's `spec.syncPolicy` back (field
/// manager `argocd-applicationset-controller`), unless the set's
/// `spec.syncPolicy.applicationsSync` is `create-only` or `create-delete`. Nothing is
/// generated or deleted.
fn application_sets(api: &dyn GitopsApi) {
    let (Some(sets), Some(apps)) = (
        api.resource("argoproj.io", "v1alpha1", "applicationsets"),
        api.resource("argoproj.io", "v1alpha1", "applications"),
    ) else {
        return;
    };
    for set in api.list(&sets, None) {
        if matches!(
            s(&set, "/spec/syncPolicy/applicationsSync"),
            "create-only" | "create-delete"
        ) {
            continue;
        }
        let (ns, name) = (s(&set, "/metadata/namespace"), s(&set, "/metadata/name"));
        let want = set
            .pointer("/spec/template/spec/syncPolicy")
            .cloned()
            .unwrap_or(Value::Null);
        for app in api.list(&apps, Some(ns)) {
            let owned = app
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|rs| {
                    rs.iter()
                        .any(|r| r["kind"] == "ApplicationSet" && r["name"] == name)
                });
            let have = app.pointer("/spec/syncPolicy").unwrap_or(&Value::Null);
            if !owned || *have == want {
                continue;
            }
            let _ = api.modify(
                &apps,
                ns,
                s(&app, "/metadata/name"),
                false,
                APPSET_MANAGER,
                &|cur| {
                    let mut new = cur.clone();
                    new["spec"]["syncPolicy"] = want.clone();
                    Ok(new)
                },
            );
        }
    }
}

fn configmaps(api: &dyn GitopsApi) -> Option<ResourceType> {
    api.resource("", "v1", "configmaps")
}

/// The owner's source objects, resolved; an error names what is wrong with the source.
fn source(api: &dyn GitopsApi, o: &Owner) -> Result<Vec<Desired>, String> {
    let cm_name = format!("{}{SOURCE_SUFFIX}", o.name());
    let cm = configmaps(api)
        .and_then(|rt| api.get(&rt, o.ns(), &cm_name).ok())
        .ok_or_else(|| format!("source ConfigMap {}/{cm_name} not found", o.ns()))?;
    let text = s(&cm, &format!("/data/{SOURCE_KEY}"));
    let objects = crate::scenario::parse(text)
        .map_err(|e| format!("source ConfigMap {}/{cm_name}: {e}", o.ns()))?;
    let mut out = Vec::new();
    for obj in objects {
        let api_version = s(&obj, "/apiVersion");
        let kind = s(&obj, "/kind");
        let name = s(&obj, "/metadata/name").to_string();
        let rt = api.resource_for_kind(api_version, kind).ok_or_else(|| {
            format!(
                "source ConfigMap {}/{cm_name}: {api_version} {kind} {name} is not served",
                o.ns()
            )
        })?;
        let ns = if !rt.namespaced {
            String::new()
        } else if let (Tool::Flux | Tool::Helm, Some(t)) = (o.tool, o.target_ns()) {
            t.to_string()
        } else {
            Some(s(&obj, "/metadata/namespace"))
                .filter(|n| !n.is_empty())
                .or_else(|| o.target_ns())
                .unwrap_or("default")
                .to_string()
        };
        let mut obj = obj.clone();
        fold_string_data(&mut obj);
        let (labels, annotations) = o.markers(&rt, &ns, &name);
        let meta = obj
            .as_object_mut()
            .ok_or("a source document is not a mapping")?
            .entry("metadata")
            .or_insert_with(|| json!({}));
        if rt.namespaced {
            meta["namespace"] = json!(ns);
        }
        for (field, add) in [("labels", labels), ("annotations", annotations)] {
            if add.is_empty() {
                continue;
            }
            let m = meta
                .as_object_mut()
                .ok_or("metadata is not a mapping")?
                .entry(field)
                .or_insert_with(|| json!({}));
            if let Some(m) = m.as_object_mut() {
                m.extend(add);
            }
        }
        out.push(Desired { rt, ns, name, obj });
    }
    Ok(out)
}

/// A Secret's `stringData` as the server stores it: base64 in `data`.
fn fold_string_data(obj: &mut Value) {
    if obj["kind"] != "Secret" {
        return;
    }
    let Some(sd) = obj.as_object_mut().and_then(|o| o.remove("stringData")) else {
        return;
    };
    let data = obj
        .as_object_mut()
        .map(|o| o.entry("data").or_insert_with(|| json!({})));
    if let (Some(Value::Object(data)), Value::Object(sd)) = (data, sd) {
        for (k, v) in sd {
            let enc =
                base64::engine::general_purpose::STANDARD.encode(v.as_str().unwrap_or_default());
            data.insert(k, json!(enc));
        }
    }
}

/// Whether every field `want` sets is in `have` with the same value (objects compared
/// key by key, everything else as a whole).
fn subset(want: &Value, have: &Value) -> bool {
    match (want, have) {
        (Value::Object(w), Value::Object(h)) => w
            .iter()
            .all(|(k, v)| h.get(k).is_some_and(|hv| subset(v, hv))),
        _ => want == have,
    }
}

/// Whether the live object is missing or differs from the source. One being deleted is
/// waited for (it is re-created once gone).
fn drifts(api: &dyn GitopsApi, o: &Owner, d: &Desired) -> bool {
    // Only a NotFound is "missing" (the emulator's store has no other read error); a read
    // that failed otherwise says nothing, and is no reason to apply.
    let live = match api.get(&d.rt, &d.ns, &d.name) {
        Ok(live) => live,
        Err(e) => return e.code == 404,
    };
    if live.pointer("/metadata/deletionTimestamp").is_some() {
        return false;
    }
    let mut want = d.obj.clone();
    if let Some(m) = want.as_object_mut() {
        m.remove("apiVersion");
        m.remove("kind");
        m.remove("status");
        if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.retain(|k, _| matches!(k.as_str(), "labels" | "annotations"));
        }
    }
    // What its ignoreDifferences names is not compared, on either side (as Argo CD
    // normalizes both before its diff).
    let mut live = live;
    for p in ignored(o, d) {
        remove_pointer(&mut want, &p);
        remove_pointer(&mut live, &p);
    }
    !subset(&want, &live)
}

fn apply(api: &dyn GitopsApi, o: &Owner, d: &Desired) -> Result<Value, crate::status::ApiError> {
    let mut obj = d.obj.clone();
    if let Some(m) = obj.as_object_mut() {
        m.remove("status");
    }
    // A sync applies the whole manifest, ignored fields included, unless the Application
    // says `RespectIgnoreDifferences=true`: then those fields keep their live values.
    if o.tool == Tool::Argo
        && o.sync_option("RespectIgnoreDifferences=true")
        && let Ok(live) = api.get(&d.rt, &d.ns, &d.name)
    {
        for p in ignored(o, d) {
            match live.pointer(&p) {
                Some(v) => set_pointer(&mut obj, &p, v.clone()),
                None => remove_pointer(&mut obj, &p),
            }
        }
    }
    api.apply(&d.rt, &d.ns, &d.name, obj, o.manager())
}

/// The JSON pointers of `o`'s `spec.ignoreDifferences` entries (Argo CD only) that match
/// `d` (group, kind, name and namespace where given); `jqPathExpressions` of the form
/// `.a.b` count as the pointer `/a/b`.
fn ignored(o: &Owner, d: &Desired) -> Vec<String> {
    if o.tool != Tool::Argo || o.compares_ignored {
        return Vec::new();
    }
    let mut out = Vec::new();
    for e in o
        .obj
        .pointer("/spec/ignoreDifferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let matches = e["kind"].as_str() == Some(d.rt.kind.as_str())
            && e["group"].as_str().unwrap_or_default() == d.rt.group
            && e["name"].as_str().is_none_or(|n| n == d.name)
            && e["namespace"].as_str().is_none_or(|n| n == d.ns);
        if !matches {
            continue;
        }
        for p in e["jsonPointers"].as_array().into_iter().flatten() {
            out.extend(p.as_str().map(str::to_string));
        }
        for q in e["jqPathExpressions"].as_array().into_iter().flatten() {
            if let Some(q) = q.as_str().and_then(|q| q.strip_prefix('.')) {
                out.push(format!("/{}", q.replace('.', "/")));
            }
        }
    }
    out
}

fn split_pointer(p: &str) -> Vec<String> {
    p.trim_start_matches('/')
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect()
}

fn remove_pointer(v: &mut Value, p: &str) {
    let parts = split_pointer(p);
    let Some((last, parents)) = parts.split_last() else {
        return;
    };
    let mut cur = v;
    for k in parents {
        match cur.get_mut(k.as_str()) {
            Some(next) => cur = next,
            None => return,
        }
    }
    if let Some(m) = cur.as_object_mut() {
        m.remove(last);
    }
}

fn set_pointer(v: &mut Value, p: &str, value: Value) {
    let parts = split_pointer(p);
    let Some((last, parents)) = parts.split_last() else {
        return;
    };
    let mut cur = v;
    for k in parents {
        if !cur.get(k.as_str()).is_some_and(Value::is_object) {
            cur[k.as_str()] = json!({});
        }
        cur = &mut cur[k.as_str()];
    }
    cur[last.as_str()] = value;
}

/// Whether a Kustomization's controller skips the apply of `d` because its live copy
/// carries `kustomize.toolkit.fluxcd.io/reconcile: disabled` or
/// `kustomize.toolkit.fluxcd.io/ssa: Ignore` (fluxcd/pkg ssa `shouldSkipApply` reads the
/// existing object; `ssa: IfNotPresent` is read from the desired object only, and is not
/// modelled). Argo CD and Helm have no such live-object exclusion.
fn apply_skipped(api: &dyn GitopsApi, o: &Owner, d: &Desired) -> bool {
    if o.tool != Tool::Flux {
        return false;
    }
    let Ok(live) = api.get(&d.rt, &d.ns, &d.name) else {
        return false;
    };
    let a = |k: &str| live["metadata"]["annotations"][k].as_str();
    a(FLUX_RECONCILE) == Some("disabled")
        || a(FLUX_SSA).is_some_and(|v| v.eq_ignore_ascii_case("ignore"))
}

/// Whether `obj` carries the prune protection `o`'s tool honours on a live object: Argo
/// CD `argocd.argoproj.io/sync-options` with the option `Prune=false`, Flux
/// `kustomize.toolkit.fluxcd.io/prune: disabled`, Helm `helm.sh/resource-policy: keep`.
fn prune_disabled(o: &Owner, obj: &Value) -> bool {
    let a = |k: &str| obj["metadata"]["annotations"][k].as_str();
    match o.tool {
        Tool::Argo => {
            a(ARGO_SYNC_OPTIONS).is_some_and(|v| v.split(',').any(|x| x.trim() == "Prune=false"))
        }
        Tool::Flux => a(FLUX_PRUNE).is_some_and(|v| v == "disabled"),
        // Helm keeps a resource its release no longer renders when it says so.
        Tool::Helm => a("helm.sh/resource-policy").is_some_and(|v| v == "keep"),
    }
}

/// Tracked objects (any served type) that are not in the source: what prune deletes,
/// each with whether it carries the prune protection (then it is not deleted).
/// Never the owners themselves nor a source ConfigMap.
fn extras(
    api: &dyn GitopsApi,
    o: &Owner,
    wanted: &HashSet<ObjKey>,
) -> Vec<(ResourceType, String, String, bool)> {
    let mut out = Vec::new();
    let types = api.types();
    api.prefetch(&types);
    for rt in types {
        let is_owner_kind = rt.group == "argoproj.io" || rt.group.ends_with(".toolkit.fluxcd.io");
        let is_cm = rt.group.is_empty() && rt.plural == "configmaps";
        for obj in api.list(&rt, None) {
            // Children of another object (the operator's Deployment and Pods copy the
            // gateway's labels) are not the tool's: Argo CD and Flux neither track nor
            // prune what has ownerReferences.
            let owned = obj
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|r| !r.is_empty());
            if owned || !o.tracks(&obj) || obj.pointer("/metadata/deletionTimestamp").is_some() {
                continue;
            }
            let ns = s(&obj, "/metadata/namespace").to_string();
            let name = s(&obj, "/metadata/name").to_string();
            if is_owner_kind || (is_cm && name.ends_with(SOURCE_SUFFIX)) {
                continue;
            }
            if !wanted.contains(&(rt.gvr(), ns.clone(), name.clone())) {
                out.push((rt.clone(), ns, name, prune_disabled(o, &obj)));
            }
        }
    }
    out
}

/// The `relabels` fault: stamp the owner's markers on every object of a kind it knows
/// in its destination namespaces. Whether it stamped any.
fn relabel(api: &dyn GitopsApi, o: &Owner, desired: &[Desired]) -> bool {
    let mut stamped = false;
    let mut namespaces: BTreeSet<String> = desired.iter().map(|d| d.ns.clone()).collect();
    if let Some(t) = o.target_ns() {
        namespaces.insert(t.to_string());
    }
    namespaces.remove("");
    let kinds: Vec<ResourceType> = api
        .types()
        .into_iter()
        .filter(|rt| {
            rt.namespaced
                && (matches!(rt.group.as_str(), "ipsec.bnerd.net" | "vpn.bnerd.net")
                    || desired.iter().any(|d| d.rt.gvr() == rt.gvr()))
        })
        .collect();
    for rt in &kinds {
        for ns in &namespaces {
            for obj in api.list(rt, Some(ns)) {
                let name = s(&obj, "/metadata/name").to_string();
                let is_source = rt.plural == "configmaps" && name.ends_with(SOURCE_SUFFIX);
                if o.tracks(&obj) || is_source {
                    continue;
                }
                let (labels, annotations) = o.markers(rt, ns, &name);
                stamped |= api
                    .modify(rt, ns, &name, false, o.manager(), &|cur| {
                        let mut new = cur.clone();
                        for (field, add) in [("labels", &labels), ("annotations", &annotations)] {
                            if add.is_empty() {
                                continue;
                            }
                            let m = &mut new["metadata"][field];
                            if !m.is_object() {
                                *m = json!({});
                            }
                            if let Some(m) = m.as_object_mut() {
                                m.extend(add.clone());
                            }
                        }
                        Ok(new)
                    })
                    .is_ok();
            }
        }
    }
    stamped
}

enum Outcome {
    Synced,
    OutOfSync,
    Suspended,
    SourceError(String),
}

/// Write the owner's status when it changes. What the source defines is in it as the
/// tools show it: Argo CD's `status.resources` (refreshed whether or not the sync is
/// automated, as Argo CD compares on every refresh), Flux's `status.inventory.entries`
/// (ids `<ns>_<name>_<group>_<Kind>`, written only by a reconcile: a suspended
/// Kustomization keeps the inventory of its last one).
fn set_status(
    api: &dyn GitopsApi,
    o: &Owner,
    state: &mut State,
    sync: Outcome,
    desired: &[Desired],
) {
    let previous = |p: &str| o.obj.pointer(p).cloned();
    let status = match o.tool {
        Tool::Argo => {
            let (sync, message) = match &sync {
                Outcome::Synced => ("Synced", None),
                Outcome::OutOfSync | Outcome::Suspended => ("OutOfSync", None),
                Outcome::SourceError(m) => ("Unknown", Some(m.clone())),
            };
            let mut st = json!({"sync": {"status": sync}, "health": {"status": "Healthy"}});
            // As a real Argo CD lists them: each source object with its own sync status,
            // and each tracked live object the source no longer defines, OutOfSync with
            // `requiresPruning: true` (argoproj/argo-cd#17188), whether or not it is
            // pruned (automated prune off, or `Prune=false` on it).
            let mut resources: Vec<Value> = desired
                .iter()
                .map(|d| json!({"group": d.rt.group, "version": d.rt.version, "kind": d.rt.kind, "namespace": d.ns, "name": d.name,
                    "status": if drifts(api, o, d) { "OutOfSync" } else { "Synced" }}))
                .collect();
            if message.is_none() {
                let wanted: HashSet<ObjKey> = desired
                    .iter()
                    .map(|d| (d.rt.gvr(), d.ns.clone(), d.name.clone()))
                    .collect();
                for (rt, ns, name, _) in extras(api, o, &wanted) {
                    resources.push(json!({"group": rt.group, "version": rt.version, "kind": rt.kind, "namespace": ns, "name": name,
                        "status": "OutOfSync", "requiresPruning": true}));
                }
            }
            match (&message, previous("/status/resources")) {
                (Some(_), Some(before)) => st["resources"] = before,
                _ => st["resources"] = json!(resources),
            }
            if let Some(m) = message {
                st["conditions"] = json!([{"type": "ComparisonError", "message": m}]);
            }
            st
        }
        Tool::Flux | Tool::Helm => {
            let (status, reason, message) = match &sync {
                Outcome::Synced => (
                    "True",
                    "ReconciliationSucceeded",
                    "Applied revision".to_string(),
                ),
                Outcome::OutOfSync => (
                    "Unknown",
                    "Progressing",
                    "Reconciliation in progress".into(),
                ),
                Outcome::Suspended => ("False", "Suspended", "Kustomization is suspended".into()),
                Outcome::SourceError(m) => ("False", "SourceError", m.clone()),
            };
            let mut st = json!({"conditions": [{"type": "Ready", "status": status, "reason": reason, "message": message}]});
            // The generation a reconcile saw; a suspended one is not reconciled, so the
            // one before stays (as in Flux).
            let observed = match &sync {
                Outcome::Suspended => previous("/status/observedGeneration"),
                _ => o.obj.pointer("/metadata/generation").cloned(),
            };
            if let Some(g) = observed {
                st["observedGeneration"] = g;
            }
            let inventory = match &sync {
                Outcome::Synced => Some(json!({"entries": desired
                    .iter()
                    .map(|d| json!({"id": format!("{}_{}_{}_{}", d.ns, d.name, d.rt.group, d.rt.kind), "v": d.rt.version}))
                    .collect::<Vec<_>>()})),
                _ => previous("/status/inventory"),
            };
            if let Some(i) = inventory {
                st["inventory"] = i;
            }
            st
        }
    };
    // Argo CD: `status.reconciledAt` is when the comparison was made, written with a
    // changed status, after a spec change (its controller refreshes on one: a restored
    // sync policy), or when the refresh annotation asks for it (taken off then, as Argo
    // CD does); `status.operationState` says when its last sync finished.
    let mut status = status;
    let refresh = o.tool == Tool::Argo
        && o.obj
            .pointer(&format!(
                "/metadata/annotations/{}",
                ARGO_REFRESH.replace('/', "~1")
            ))
            .is_some();
    if o.tool == Tool::Argo {
        // Its spec as compared, not `metadata.generation`: the Application CRD has no
        // status subresource, so on a real API server each status write moves the
        // generation too, and comparing it would make every status write the next one's
        // cause.
        let mut spec = o.obj.clone();
        if let Some(m) = spec.as_object_mut() {
            for k in ["metadata", "status", "apiVersion", "kind"] {
                m.remove(k);
            }
        }
        let seen = state
            .compared_spec
            .insert(o.uid().to_string(), spec.clone());
        if let Some(at) = state.synced_at.get(o.uid()) {
            status["operationState"] = json!({"phase": "Succeeded", "message": "successfully synced",
                "startedAt": at, "finishedAt": at, "operation": {"sync": {}}});
        }
        let mut before = o.obj.get("status").cloned().unwrap_or(Value::Null);
        if let Some(b) = before.as_object_mut() {
            b.remove("reconciledAt");
        }
        if before == status && seen == Some(spec) && !refresh {
            return;
        }
        status["reconciledAt"] = json!(timestamp());
    } else if o.obj.get("status") == Some(&status) {
        return;
    }
    if refresh {
        let _ = api.modify(&o.rt, o.ns(), o.name(), false, o.manager(), &|cur| {
            let mut new = cur.clone();
            if let Some(a) = new
                .pointer_mut("/metadata/annotations")
                .and_then(Value::as_object_mut)
            {
                a.remove(ARGO_REFRESH);
            }
            Ok(new)
        });
    }
    let _ = api.modify(
        &o.rt,
        o.ns(),
        o.name(),
        o.rt.status_subresource,
        o.manager(),
        &|cur| {
            let mut new = cur.clone();
            new["status"] = status.clone();
            Ok(new)
        },
    );
}

/// The controller loop: a pass when the store or the settings changed, or a sync is
/// due; otherwise sleep (at most [`TICK`]). Ends on shutdown or when dropped.
async fn run(
    g: Weak<Gitops>,
    wake: Arc<Notify>,
    store: Arc<Store>,
    mut changes: watch::Receiver<u64>,
    mut stop: watch::Receiver<bool>,
) {
    let mut seen_rv = 0;
    let mut seen_settings: Option<Settings> = None;
    let mut deadline: Option<Instant> = None;
    loop {
        if *stop.borrow_and_update() {
            break;
        }
        let until = {
            let Some(g) = g.upgrade() else { break };
            changes.borrow_and_update();
            let settings = g.settings.read().unwrap_or_else(|e| e.into_inner()).clone();
            let rv = store.resource_version();
            let now = Instant::now();
            let due = deadline.is_some_and(|d| d <= now);
            if seen_settings.as_ref() != Some(&settings) || due || rv != seen_rv {
                deadline = g.reconcile(&settings, now);
                seen_settings = Some(settings);
                // This pass's own writes need one more pass to be seen as synced, not more.
                seen_rv = rv;
            }
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
