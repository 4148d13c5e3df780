//! The object store: every object as JSON, one global resourceVersion counter, an event
//! log that watches replay from, and the server-side semantics that live with the data —
//! uid/generation/timestamps, optimistic concurrency, status subresources, finalizers and
//! deletionTimestamp, ownerReference garbage collection, server-side apply, CRDs that
//! start and stop serving their kinds.
//!
//! One mutex guards it all: the emulator favours being obviously right over parallelism.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value, json};
use tokio::sync::watch;

use crate::limits;
use crate::resources::{Gvr, ResourceType, builtins};
use crate::status::{ApiError, Cause};
use vpnmig::core::schema as validate;

/// How many events the log keeps for watches that resume from a resourceVersion.
const LOG_CAPACITY: usize = 200_000;

/// A change, as watch streams it.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub rv: u64,
    pub gvr: Gvr,
    pub kind: EventKind,
    pub object: Value,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Added,
    Modified,
    Deleted,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Added => "ADDED",
            EventKind::Modified => "MODIFIED",
            EventKind::Deleted => "DELETED",
        }
    }
}

/// Options of a write.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: everything but persisting.
    pub dry_run: bool,
    /// `fieldValidation=Strict`: unknown fields are an error instead of pruned.
    pub strict: bool,
    /// Keep `status` and a given `metadata.uid` on create (scenario loading: objects
    /// arrive as exported, and ownerReferences name those uids).
    pub keep_status: bool,
    /// The field manager of a create/update/patch (`fieldManager`, else the User-Agent's
    /// product): recorded in `metadata.managedFields` with operation `Update`, as
    /// kube-apiserver does. `None` (the store's in-process callers: the scenario loader,
    /// the simulated operator) records nothing.
    pub field_manager: Option<String>,
}

/// `propagationPolicy` of a delete.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

/// Options of a delete.
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    pub dry_run: bool,
    pub propagation: Propagation,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
}

/// What a delete did.
#[derive(Clone, Debug, PartialEq)]
pub enum Deleted {
    /// Finalizers remain: the object now has a deletionTimestamp.
    Pending(Value),
    /// The object is gone; its last state.
    Gone(Value),
}

type Key = (Gvr, String, String);

struct State {
    types: BTreeMap<Gvr, ResourceType>,
    objects: BTreeMap<Key, Value>,
    rv: u64,
    log: VecDeque<Event>,
    /// Server-side apply: the last configuration each manager applied, per object uid.
    applied: HashMap<(String, String), Value>,
    /// When each of those applies was made: an `Apply` entry's `time` is its last apply,
    /// not the object's last write by anyone.
    applied_at: HashMap<(String, String), String>,
    /// Fields owned by `Update` managers (create/update/patch), per (uid, manager,
    /// subresource `status`): leaf paths as [`leaves`] spells them, the value that write
    /// set, and when.
    updated: HashMap<(String, String, bool), Updated>,
}

/// What one `Update` manager owns of an object.
#[derive(Clone, Debug, Default)]
struct Updated {
    fields: BTreeMap<String, Value>,
    time: String,
}

/// The store. Cheap to share: `Arc<Store>`.
pub struct Store {
    state: Mutex<State>,
    notify: watch::Sender<u64>,
}

fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
}

fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    obj["metadata"]
        .as_object_mut()
        .expect("metadata is an object")
}

fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Everything but metadata and status: what bumps `metadata.generation`.
fn spec_part(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(o) = v.as_object_mut() {
        for k in ["metadata", "status", "apiVersion", "kind"] {
            o.remove(k);
        }
    }
    v
}

/// What bumps `metadata.generation` of `rt`: everything but metadata and status, and for a
/// custom resource without a status subresource its status too (kube-apiserver's custom
/// resource strategy counts all but metadata then: seen on the real control plane with
/// Argo CD's Application, whose status writes move its generation).
fn generation_part(rt: &ResourceType, obj: &Value) -> Value {
    if rt.from_crd && !rt.status_subresource {
        let mut v = obj.clone();
        if let Some(o) = v.as_object_mut() {
            for k in ["metadata", "apiVersion", "kind"] {
                o.remove(k);
            }
        }
        return v;
    }
    spec_part(obj)
}

impl Store {
    /// A store serving the built-in resources and nothing else.
    pub fn new() -> Arc<Store> {
        let types = builtins().into_iter().map(|t| (t.gvr(), t)).collect();
        let (notify, _) = watch::channel(1);
        Arc::new(Store {
            state: Mutex::new(State {
                types,
                objects: BTreeMap::new(),
                rv: 1,
                log: VecDeque::new(),
                applied: HashMap::new(),
                applied_at: HashMap::new(),
                updated: HashMap::new(),
            }),
            notify,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    // ---- resource types ------------------------------------------------------------

    /// Every served resource type.
    pub fn types(&self) -> Vec<ResourceType> {
        self.lock().types.values().cloned().collect()
    }

    /// The type served at `group/version/plural`.
    pub fn resource(&self, group: &str, version: &str, plural: &str) -> Option<ResourceType> {
        self.lock()
            .types
            .get(&Gvr::new(group, version, plural))
            .cloned()
    }

    /// The type of `apiVersion` + `kind`.
    pub fn resource_for_kind(&self, api_version: &str, kind: &str) -> Option<ResourceType> {
        self.lock()
            .types
            .values()
            .find(|t| t.api_version() == api_version && t.kind == kind)
            .cloned()
    }

    // ---- reads ---------------------------------------------------------------------

    /// The current resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.lock().rv
    }

    pub fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<Value, ApiError> {
        let st = self.lock();
        st.objects
            .get(&key(rt, ns, name))
            .cloned()
            .ok_or_else(|| ApiError::not_found(&rt.plural, &rt.group, name))
    }

    /// Objects of a type, in one namespace (`Some`) or all (`None`), sorted by
    /// namespace and name, with the resourceVersion they were read at.
    pub fn list(&self, rt: &ResourceType, ns: Option<&str>) -> (Vec<Value>, u64) {
        let st = self.lock();
        let items = st
            .objects
            .iter()
            .filter(|((g, n, _), _)| *g == rt.gvr() && ns.is_none_or(|ns| n == ns))
            .map(|(_, v)| v.clone())
            .collect();
        (items, st.rv)
    }

    /// One page of [`Store::list`]: of the objects it would return, those `keep` accepts,
    /// the first `limit` of them (all without one), with how many `keep` accepts in all
    /// and the resourceVersion. Only the page is copied, not every object of the type:
    /// a client paging through 20,000 objects 500 at a time would otherwise make the
    /// server copy 20,000 objects 40 times under the store's lock. `keep` is given each
    /// object's namespace (empty for a cluster-scoped kind) and name from the store's
    /// key, so a continue token is compared without looking into the object.
    pub fn list_page(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        keep: impl Fn(&str, &str, &Value) -> bool,
        limit: Option<usize>,
    ) -> (Vec<Value>, usize, u64) {
        let st = self.lock();
        let gvr = rt.gvr();
        let mut page = Vec::new();
        let mut kept = 0;
        // The type's objects are one run of the map, which is sorted by type first.
        for ((_, n, name), v) in st
            .objects
            .range((gvr.clone(), String::new(), String::new())..)
            .take_while(|((g, _, _), _)| *g == gvr)
            .filter(|((_, n, _), _)| ns.is_none_or(|ns| n == ns))
        {
            if !keep(n, name, v) {
                continue;
            }
            if limit.is_none_or(|l| kept < l) {
                page.push(v.clone());
            }
            kept += 1;
        }
        (page, kept, st.rv)
    }

    /// Events after `rv`, oldest first. `410 Expired` when the log no longer reaches back.
    pub fn events_after(&self, rv: u64) -> Result<Vec<Event>, ApiError> {
        let st = self.lock();
        if let Some(first) = st.log.front()
            && rv + 1 < first.rv
        {
            return Err(ApiError::gone(format!(
                "too old resource version: {rv} ({})",
                first.rv - 1
            )));
        }
        let start = st.log.partition_point(|e| e.rv <= rv);
        Ok(st.log.iter().skip(start).cloned().collect())
    }

    /// A receiver that changes whenever the resourceVersion does.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.notify.subscribe()
    }

    // ---- writes --------------------------------------------------------------------

    /// Create an object (POST).
    pub fn create(
        &self,
        rt: &ResourceType,
        ns: &str,
        mut obj: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        check_shape(rt, &obj)?;
        let mut st = self.lock();
        let name = match (meta_str(&obj, "name"), meta_str(&obj, "generateName")) {
            (Some(n), _) if !n.is_empty() => n.to_string(),
            (_, Some(prefix)) => format!(
                "{prefix}{}",
                &uuid::Uuid::new_v4().simple().to_string()[..5]
            ),
            _ => {
                return Err(ApiError::invalid(
                    &rt.kind,
                    &rt.group,
                    "",
                    vec![Cause {
                        reason: "FieldValueRequired",
                        message: "Required value: name or generateName is required".into(),
                        field: "metadata.name".into(),
                    }],
                ));
            }
        };
        if rt.namespaced {
            if let Some(obj_ns) = meta_str(&obj, "namespace").filter(|n| !n.is_empty() && *n != ns)
            {
                return Err(ApiError::bad_request(format!(
                    "the namespace of the provided object ({obj_ns}) does not match the namespace sent on the request ({ns})"
                )));
            }
            let ns_type = Gvr::new("", "v1", "namespaces");
            let Some(namespace) = st.objects.get(&(ns_type, String::new(), ns.to_string())) else {
                return Err(ApiError::not_found("namespaces", "", ns));
            };
            if terminating(namespace) {
                let name = meta_str(&obj, "name").unwrap_or_default();
                return Err(namespace_terminating(rt, name, ns));
            }
        }
        let k = key(rt, ns, &name);
        if st.objects.contains_key(&k) {
            return Err(ApiError::already_exists(&rt.plural, &rt.group, &name));
        }
        obj["apiVersion"] = json!(rt.api_version());
        obj["kind"] = json!(rt.kind);
        if rt.status_subresource
            && !opts.keep_status
            && let Some(o) = obj.as_object_mut()
        {
            o.remove("status");
        }
        {
            let m = meta_mut(&mut obj);
            m.insert("name".into(), json!(name));
            if rt.namespaced {
                m.insert("namespace".into(), json!(ns));
            } else {
                m.remove("namespace");
            }
            let given = m
                .get("uid")
                .and_then(Value::as_str)
                .filter(|u| opts.keep_status && !u.is_empty())
                .map(str::to_string);
            m.insert(
                "uid".into(),
                json!(given.unwrap_or_else(|| uuid::Uuid::new_v4().to_string())),
            );
            m.insert("creationTimestamp".into(), json!(now()));
            if rt.has_generation() {
                m.insert("generation".into(), json!(1));
            } else {
                m.remove("generation");
            }
            for k in [
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "resourceVersion",
            ] {
                m.remove(k);
            }
        }
        check_schema(rt, &mut obj, &name, opts.strict)?;
        defaults(rt, &mut obj);
        check_limits(rt, &obj, &name)?;
        if opts.dry_run {
            obj["metadata"]["resourceVersion"] = json!("");
            return Ok(obj);
        }
        // etcd's limit, measured before this write's managedFields entry is added.
        limits::check_stored_size(&obj)?;
        if let Some(manager) = &opts.field_manager {
            let uid = meta_str(&obj, "uid").unwrap_or_default().to_string();
            record_update(&mut st, rt, &uid, manager, false, &Value::Null, &obj);
            set_entries(&st, rt, &uid, &mut obj);
        }
        let created = commit(&mut st, &self.notify, &k, Some(obj), EventKind::Added);
        if rt.gvr() == crd_gvr() {
            serve_crd(&mut st, &self.notify, &created);
        }
        Ok(st.objects.get(&k).cloned().unwrap_or(created))
    }

    /// Replace an object (PUT), on the main resource or its status.
    pub fn update(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        obj: Value,
        status: bool,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        check_shape(rt, &obj)?;
        let mut st = self.lock();
        let current = st
            .objects
            .get(&key(rt, ns, name))
            .cloned()
            .ok_or_else(|| ApiError::not_found(&rt.plural, &rt.group, name))?;
        if let Some(rv) = meta_str(&obj, "resourceVersion").filter(|r| !r.is_empty())
            && Some(rv) != meta_str(&current, "resourceVersion")
        {
            return Err(ApiError::conflict(
                &rt.plural,
                &rt.group,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            ));
        }
        if let Some(n) = meta_str(&obj, "name").filter(|n| *n != name) {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        write(
            &mut st,
            &self.notify,
            rt,
            ns,
            name,
            &current,
            obj,
            status,
            opts,
        )
    }

    /// Read-modify-write under the lock: `f` maps the current object to the new one.
    /// What `PATCH` and the simulated operator use; never conflicts.
    pub fn modify(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        status: bool,
        opts: &WriteOptions,
        f: impl FnOnce(&Value) -> Result<Value, ApiError>,
    ) -> Result<Value, ApiError> {
        let mut st = self.lock();
        let current = st
            .objects
            .get(&key(rt, ns, name))
            .cloned()
            .ok_or_else(|| ApiError::not_found(&rt.plural, &rt.group, name))?;
        let mut new = f(&current)?;
        check_shape(rt, &new)?;
        if let Some(rv) = meta_str(&new, "resourceVersion").filter(|r| !r.is_empty())
            && Some(rv) != meta_str(&current, "resourceVersion")
        {
            return Err(ApiError::conflict(
                &rt.plural,
                &rt.group,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            ));
        }
        meta_mut(&mut new).insert(
            "resourceVersion".into(),
            json!(meta_str(&current, "resourceVersion").unwrap_or_default()),
        );
        write(
            &mut st,
            &self.notify,
            rt,
            ns,
            name,
            &current,
            new,
            status,
            opts,
        )
    }

    /// Delete an object: mark it (finalizers) or remove it and collect its dependents.
    pub fn delete(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let mut st = self.lock();
        let k = key(rt, ns, name);
        let current = st
            .objects
            .get(&k)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&rt.plural, &rt.group, name))?;
        if let Some(uid) = &opts.precondition_uid {
            let have = meta_str(&current, "uid").unwrap_or_default();
            if uid != have {
                return Err(ApiError::conflict(
                    &rt.plural,
                    &rt.group,
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {have}"
                    ),
                ));
            }
        }
        if let Some(rv) = &opts.precondition_rv {
            let have = meta_str(&current, "resourceVersion").unwrap_or_default();
            if rv != have {
                return Err(ApiError::conflict(
                    &rt.plural,
                    &rt.group,
                    name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {have}"
                    ),
                ));
            }
        }
        if opts.dry_run {
            return Ok(if finalizers(&current).is_empty() {
                Deleted::Gone(current)
            } else {
                Deleted::Pending(current)
            });
        }
        Ok(begin_delete(&mut st, &self.notify, &k, opts.propagation))
    }

    /// One pass of the garbage collector over dependents (background propagation, as
    /// kube-controller-manager's does): an object whose ownerReferences name no owner
    /// that exists — looked up by apiVersion/kind/name in the dependent's namespace (or
    /// cluster-wide for a cluster-scoped owner) and compared by uid — is deleted (its
    /// finalizers respected); one with some owners left loses only the dangling
    /// references. An owner whose kind is not served cannot be judged and counts as
    /// present (the real collector retries such a reference, never deleting on it); so
    /// does a namespaced owner of a cluster-scoped dependent. Objects being deleted are
    /// left to their own deletion. Returns the keys deleted, as `(plural, namespace,
    /// name)`.
    pub fn collect_orphans(&self) -> Vec<(String, String, String)> {
        let mut st = self.lock();
        let mut verdicts: Vec<(Key, Vec<usize>, usize)> = Vec::new();
        for (k, obj) in &st.objects {
            if obj.pointer("/metadata/deletionTimestamp").is_some() {
                continue;
            }
            let Some(refs) = obj
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .filter(|r| !r.is_empty())
            else {
                continue;
            };
            let dangling: Vec<usize> = refs
                .iter()
                .enumerate()
                .filter(|(_, r)| owner_absent(&st, &k.1, r))
                .map(|(i, _)| i)
                .collect();
            if !dangling.is_empty() {
                verdicts.push((k.clone(), dangling, refs.len()));
            }
        }
        let mut deleted = Vec::new();
        for (k, dangling, all) in verdicts {
            if dangling.len() == all {
                begin_delete(&mut st, &self.notify, &k, Propagation::Background);
                deleted.push((k.0.plural.clone(), k.1.clone(), k.2.clone()));
            } else if let Some(mut dep) = st.objects.get(&k).cloned() {
                if let Some(refs) = dep
                    .pointer_mut("/metadata/ownerReferences")
                    .and_then(Value::as_array_mut)
                {
                    let mut i = 0;
                    refs.retain(|_| {
                        i += 1;
                        !dangling.contains(&(i - 1))
                    });
                }
                commit(&mut st, &self.notify, &k, Some(dep), EventKind::Modified);
            }
        }
        deleted
    }

    /// Server-side apply (`application/apply-patch+yaml`): create or merge `applied` as
    /// `manager`'s configuration, removing what that manager applied before and no longer
    /// does; a field another manager applied with another value is a conflict unless
    /// `force`. Lists are atomic.
    #[allow(clippy::too_many_arguments)]
    pub fn apply(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        applied: Value,
        manager: &str,
        force: bool,
        status: bool,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        check_shape(rt, &applied)?;
        let current = { self.lock().objects.get(&key(rt, ns, name)).cloned() };
        let Some(current) = current else {
            if status {
                return Err(ApiError::not_found(&rt.plural, &rt.group, name));
            }
            let mut obj = applied.clone();
            meta_mut(&mut obj).insert("name".into(), json!(name));
            let as_apply = WriteOptions {
                field_manager: None,
                ..opts.clone()
            };
            let created = self.create(rt, ns, obj, &as_apply)?;
            if opts.dry_run {
                return Ok(created);
            }
            let uid = meta_str(&created, "uid").unwrap_or_default().to_string();
            let mut st = self.lock();
            st.applied_at
                .insert((uid.clone(), manager.to_string()), now());
            st.applied
                .insert((uid, manager.to_string()), applied.clone());
            return set_managed_fields(&mut st, &self.notify, rt, ns, name);
        };
        let mut st = self.lock();
        let uid = meta_str(&current, "uid").unwrap_or_default().to_string();
        let mine = leaves(&applied);
        // (who, path, how the message names who): Apply managers by name; Update
        // managers as kube-apiserver prints them, `"m" using API-VERSION at TIME`.
        let mut conflicts: Vec<(Owner, String, String)> = Vec::new();
        for ((u, m), cfg) in st.applied.iter() {
            if *u != uid || m == manager {
                continue;
            }
            for (path, v) in leaves(cfg) {
                if mine.get(&path).is_some_and(|mv| *mv != v) && !path.starts_with(".metadata.name")
                {
                    conflicts.push((Owner::Apply(m.clone()), path, format!("\"{m}\"")));
                }
            }
        }
        for ((u, m, sub), e) in st.updated.iter() {
            if *u != uid || *sub != status {
                continue;
            }
            for (path, v) in &e.fields {
                if mine.get(path).is_some_and(|mv| mv != v) {
                    // As kube-apiserver v1.37 prints it: no time (older servers
                    // added ` at TIME`).
                    let shown = format!(
                        "\"{m}\"{} using {}",
                        if *sub {
                            " with subresource \"status\""
                        } else {
                            ""
                        },
                        rt.api_version(),
                    );
                    conflicts.push((Owner::Update(m.clone(), *sub), path.clone(), shown));
                }
            }
        }
        conflicts.sort_by(|a, b| (&a.1, &a.2).cmp(&(&b.1, &b.2)));
        if !conflicts.is_empty() && !force {
            let causes: Vec<Cause> = conflicts
                .iter()
                .map(|(_, p, shown)| Cause {
                    reason: "FieldManagerConflict",
                    message: format!("conflict with {shown}"),
                    field: p.clone(),
                })
                .collect();
            let list = conflicts
                .iter()
                .map(|(_, p, shown)| format!("conflict with {shown}: {p}"))
                .collect::<Vec<_>>()
                .join("\n- ");
            let mut e = ApiError::new(
                409,
                "Conflict",
                format!(
                    "Apply failed with {} conflict{}: {list}",
                    conflicts.len(),
                    if conflicts.len() == 1 { "" } else { "s" }
                ),
            );
            e.causes = causes;
            return Err(e);
        }
        if !opts.dry_run {
            // `force`: the applier takes the fields over.
            for (owner, path, _) in &conflicts {
                match owner {
                    Owner::Apply(m) => {
                        if let Some(cfg) = st.applied.get_mut(&(uid.clone(), m.clone())) {
                            prune_path(cfg, path);
                        }
                    }
                    Owner::Update(m, sub) => {
                        if let Some(e) = st.updated.get_mut(&(uid.clone(), m.clone(), *sub)) {
                            e.fields.remove(path);
                        }
                    }
                }
            }
            st.updated.retain(|_, e| !e.fields.is_empty());
        }
        let previous = st
            .applied
            .get(&(uid.clone(), manager.to_string()))
            .map(leaves)
            .unwrap_or_default();
        let others: HashSet<String> = st
            .applied
            .iter()
            .filter(|((u, m), _)| *u == uid && m != manager)
            .flat_map(|(_, c)| leaves(c).into_keys())
            .collect();
        let mut new = current.clone();
        for path in previous
            .keys()
            .filter(|p| !mine.contains_key(*p) && !others.contains(*p))
        {
            remove_path(&mut new, path);
        }
        merge(&mut new, &applied);
        let as_apply = WriteOptions {
            field_manager: None,
            ..opts.clone()
        };
        let result = write(
            &mut st,
            &self.notify,
            rt,
            ns,
            name,
            &current,
            new,
            status,
            &as_apply,
        )?;
        if opts.dry_run {
            return Ok(result);
        }
        st.applied_at
            .insert((uid.clone(), manager.to_string()), now());
        st.applied.insert((uid, manager.to_string()), applied);
        set_managed_fields(&mut st, &self.notify, rt, ns, name)
    }
}

/// What the real server's decoding and ObjectMeta validation reject before anything
/// else: a body that is not an object, metadata fields of the wrong shape, an invalid
/// name, Secret data that is not base64 strings.
fn check_shape(rt: &ResourceType, obj: &Value) -> Result<(), ApiError> {
    let Some(o) = obj.as_object() else {
        return Err(ApiError::bad_request(format!(
            "the body of the request could not be decoded: a {} must be a JSON object",
            rt.kind
        )));
    };
    let invalid = |field: &str, message: String| {
        Err(ApiError::invalid(
            &rt.kind,
            &rt.group,
            meta_str(obj, "name").unwrap_or_default(),
            vec![Cause {
                reason: "FieldValueInvalid",
                message,
                field: field.into(),
            }],
        ))
    };
    if let Some(kind) = o
        .get("kind")
        .and_then(Value::as_str)
        .filter(|k| *k != rt.kind)
    {
        return Err(ApiError::bad_request(format!(
            "the kind of the object ({kind}) does not match the resource of the request ({})",
            rt.kind
        )));
    }
    let Some(meta) = o.get("metadata") else {
        return Ok(());
    };
    let Some(meta) = meta.as_object() else {
        return invalid(
            "metadata",
            "Invalid value: metadata must be an object".into(),
        );
    };
    for field in ["labels", "annotations"] {
        if let Some(v) = meta.get(field).filter(|v| !v.is_null())
            && !v
                .as_object()
                .is_some_and(|m| m.values().all(Value::is_string))
        {
            return invalid(
                &format!("metadata.{field}"),
                format!("Invalid value: {field} must be a map of strings"),
            );
        }
    }
    if let Some(refs) = meta.get("ownerReferences").filter(|v| !v.is_null()) {
        let ok = refs.as_array().is_some_and(|a| {
            a.iter().all(|r| {
                ["apiVersion", "kind", "name", "uid"]
                    .iter()
                    .all(|k| r.get(*k).is_some_and(Value::is_string))
            })
        });
        if !ok {
            return invalid(
                "metadata.ownerReferences",
                "Invalid value: each needs apiVersion, kind, name and uid strings".into(),
            );
        }
    }
    if let Some(name) = meta.get("name").and_then(Value::as_str) {
        let causes = limits::name_causes(&rt.kind, name);
        if !causes.is_empty() {
            return Err(ApiError::invalid(&rt.kind, &rt.group, name, causes));
        }
    }
    if rt.gvr() == secret_gvr() {
        use base64::Engine;
        if let Some(data) = o.get("data").filter(|v| !v.is_null()) {
            let ok = data.as_object().is_some_and(|m| {
                m.values().all(|v| {
                    v.as_str().is_some_and(|s| {
                        base64::engine::general_purpose::STANDARD.decode(s).is_ok()
                    })
                })
            });
            if !ok {
                return invalid(
                    "data",
                    "Invalid value: data must map keys to base64 strings".into(),
                );
            }
        }
    }
    Ok(())
}

/// The metadata and data limits of the real server's validation ([`limits`]): labels,
/// annotations, ConfigMap and Secret data size. One `422 Invalid` with every cause.
fn check_limits(rt: &ResourceType, obj: &Value, name: &str) -> Result<(), ApiError> {
    let mut causes = limits::metadata_causes(obj);
    if rt.group.is_empty() {
        causes.extend(limits::data_causes(&rt.kind, obj));
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(&rt.kind, &rt.group, name, causes))
    }
}

/// Whether a namespace is being deleted: phase `Terminating` (what the NamespaceLifecycle
/// admission plugin reads) or a deletionTimestamp.
fn terminating(namespace: &Value) -> bool {
    namespace.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
        || namespace.pointer("/metadata/deletionTimestamp").is_some()
}

/// The NamespaceLifecycle admission plugin's refusal of a create in a terminating
/// namespace: `403 Forbidden`, `configmaps "x" is forbidden: unable to create new content
/// in namespace tenant-acme because it is being terminated`, with a `NamespaceTerminating`
/// cause on `metadata.namespace`. Updates and deletes are not refused.
fn namespace_terminating(rt: &ResourceType, name: &str, ns: &str) -> ApiError {
    let what = crate::status::qualified(&rt.plural, &rt.group);
    let subject = if name.is_empty() {
        what
    } else {
        format!("{what} \"{name}\"")
    };
    let mut e = ApiError::new(
        403,
        "Forbidden",
        format!(
            "{subject} is forbidden: unable to create new content in namespace {ns} because it is being terminated"
        ),
    );
    e.details = Some(Box::new((
        name.to_string(),
        rt.group.clone(),
        rt.plural.clone(),
    )));
    e.causes = vec![Cause {
        reason: "NamespaceTerminating",
        message: format!("namespace {ns} is being terminated"),
        field: "metadata.namespace".into(),
    }];
    e
}

fn crd_gvr() -> Gvr {
    Gvr::new("apiextensions.k8s.io", "v1", "customresourcedefinitions")
}

fn key(rt: &ResourceType, ns: &str, name: &str) -> Key {
    (
        rt.gvr(),
        if rt.namespaced {
            ns.to_string()
        } else {
            String::new()
        },
        name.to_string(),
    )
}

fn check_schema(
    rt: &ResourceType,
    obj: &mut Value,
    name: &str,
    strict: bool,
) -> Result<(), ApiError> {
    let Some(schema) = &rt.schema else {
        return Ok(());
    };
    let report = validate::validate(schema, obj);
    if strict && !report.unknown.is_empty() {
        let list = report
            .unknown
            .iter()
            .map(|p| format!("unknown field \"{p}\""))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(ApiError::bad_request(format!(
            "{}.{} \"{name}\" is invalid: strict decoding error: {list}",
            rt.kind, rt.group
        )));
    }
    if !report.causes.is_empty() {
        return Err(ApiError::invalid(&rt.kind, &rt.group, name, report.causes));
    }
    Ok(())
}

/// Server defaults that clients rely on.
fn defaults(rt: &ResourceType, obj: &mut Value) {
    if rt.gvr() == secret_gvr() {
        fold_string_data(obj);
    }
    if rt.gvr() == Gvr::new("", "v1", "namespaces") && obj.pointer("/status/phase").is_none() {
        obj["status"] = json!({"phase": "Active"});
    }
}

/// Shared tail of update, modify and apply: status vs main resource, generation,
/// validation, finalization.
#[allow(clippy::too_many_arguments)]
fn write(
    st: &mut State,
    notify: &watch::Sender<u64>,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    current: &Value,
    mut new: Value,
    status: bool,
    opts: &WriteOptions,
) -> Result<Value, ApiError> {
    let k = key(rt, ns, name);
    if status {
        // Only status changes through /status.
        let mut merged = current.clone();
        match new.get("status") {
            Some(s) => merged["status"] = s.clone(),
            None => {
                if let Some(o) = merged.as_object_mut() {
                    o.remove("status");
                }
            }
        }
        new = merged;
    } else {
        if rt.status_subresource {
            match current.get("status") {
                Some(s) => new["status"] = s.clone(),
                None => {
                    if let Some(o) = new.as_object_mut() {
                        o.remove("status");
                    }
                }
            }
        }
        let m = meta_mut(&mut new);
        for (field, keep) in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "managedFields",
        ]
        .map(|f| (f, current["metadata"].get(f).cloned()))
        {
            match keep {
                Some(v) => m.insert(field.into(), v),
                None => m.remove(field),
            };
        }
        if current.pointer("/metadata/deletionTimestamp").is_some() {
            // Finalizers may only be removed once deletion started.
            let before: HashSet<String> = finalizers(current).into_iter().collect();
            let after: Vec<String> = finalizers(&new);
            if after.iter().any(|f| !before.contains(f)) {
                return Err(ApiError::invalid(&rt.kind, &rt.group, name, vec![Cause { reason: "FieldValueForbidden", message: "Forbidden: no new finalizers can be added if the object is being deleted".into(), field: "metadata.finalizers".into() }]));
            }
        }
    }
    new["apiVersion"] = json!(rt.api_version());
    new["kind"] = json!(rt.kind);
    {
        let m = meta_mut(&mut new);
        m.insert("name".into(), json!(name));
        if rt.namespaced {
            m.insert("namespace".into(), json!(ns));
        }
    }
    if !status {
        check_schema(rt, &mut new, name, opts.strict)?;
        if rt.has_generation() && generation_part(rt, &new) != generation_part(rt, current) {
            let g = current
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            new["metadata"]["generation"] = json!(g + 1);
        }
    }
    {
        let mut folded = new.clone();
        if rt.gvr() == secret_gvr() {
            fold_string_data(&mut folded);
        }
        check_limits(rt, &folded, name)?;
    }
    if opts.dry_run {
        return Ok(new);
    }
    if new == *current {
        return Ok(new);
    }
    if rt.gvr() == secret_gvr() {
        fold_string_data(&mut new);
    }
    // etcd's limit, measured before this write's managedFields entry is updated.
    limits::check_stored_size(&new)?;
    if let Some(manager) = &opts.field_manager {
        let uid = meta_str(current, "uid").unwrap_or_default().to_string();
        record_update(st, rt, &uid, manager, status, current, &new);
        set_entries(st, rt, &uid, &mut new);
    }
    let result = commit(st, notify, &k, Some(new), EventKind::Modified);
    if result.pointer("/metadata/deletionTimestamp").is_some() {
        sweep(st, notify);
        if !st.objects.contains_key(&k) {
            return Ok(result);
        }
    }
    if rt.gvr() == crd_gvr() {
        serve_crd(st, notify, &result);
    }
    Ok(st.objects.get(&k).cloned().unwrap_or(result))
}

/// Persist (or remove) and log one change; returns the stored object.
fn commit(
    st: &mut State,
    notify: &watch::Sender<u64>,
    k: &Key,
    obj: Option<Value>,
    kind: EventKind,
) -> Value {
    st.rv += 1;
    let rv = st.rv;
    let stored = match obj {
        Some(mut o) => {
            meta_mut(&mut o).insert("resourceVersion".into(), json!(rv.to_string()));
            st.objects.insert(k.clone(), o.clone());
            o
        }
        None => {
            let mut o = st.objects.remove(k).unwrap_or(Value::Null);
            if o.is_object() {
                meta_mut(&mut o).insert("resourceVersion".into(), json!(rv.to_string()));
            }
            o
        }
    };
    st.log.push_back(Event {
        rv,
        gvr: k.0.clone(),
        kind,
        object: stored.clone(),
    });
    while st.log.len() > LOG_CAPACITY {
        st.log.pop_front();
    }
    notify.send_replace(rv);
    stored
}

/// The finalizers the store itself honours, like the real garbage collector and
/// namespace controller: they hold an object until its dependents are orphaned, deleted,
/// or (for a namespace) its contents are gone.
const ORPHAN: &str = "orphan";
const FOREGROUND: &str = "foregroundDeletion";
const NAMESPACE_FINALIZER: &str = "kubernetes";

fn secret_gvr() -> Gvr {
    Gvr::new("", "v1", "secrets")
}

fn namespaces_gvr() -> Gvr {
    Gvr::new("", "v1", "namespaces")
}

/// Secrets store `stringData` merged into `data`, base64-encoded, as the real server does.
fn fold_string_data(obj: &mut Value) {
    use base64::Engine;
    let Some(sd) = obj.as_object_mut().and_then(|o| o.remove("stringData")) else {
        return;
    };
    let Some(sd) = sd.as_object().cloned() else {
        return;
    };
    if !obj.get("data").is_some_and(Value::is_object) {
        obj["data"] = json!({});
    }
    for (k, v) in sd {
        let text = v.as_str().unwrap_or_default();
        obj["data"][k] = json!(base64::engine::general_purpose::STANDARD.encode(text));
    }
}

/// Whether the owner one ownerReference names is absent: its kind is served, and no
/// object of that kind and name (in `ns` when the kind is namespaced) has its uid.
fn owner_absent(st: &State, ns: &str, r: &Value) -> bool {
    let s = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or_default();
    let Some(t) = st
        .types
        .values()
        .find(|t| t.api_version() == s("apiVersion") && t.kind == s("kind"))
    else {
        return false;
    };
    if t.namespaced && ns.is_empty() {
        return false;
    }
    let at = (
        t.gvr(),
        if t.namespaced { ns } else { "" }.to_string(),
        s("name").to_string(),
    );
    st.objects
        .get(&at)
        .is_none_or(|o| meta_str(o, "uid") != Some(s("uid")))
}

/// Keys of objects listing `uid` among their ownerReferences.
fn dependents_of(st: &State, uid: &str) -> Vec<Key> {
    st.objects
        .iter()
        .filter(|(_, v)| {
            v.pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|refs| {
                    refs.iter()
                        .any(|r| r.get("uid").and_then(Value::as_str) == Some(uid))
                })
        })
        .map(|(k, _)| k.clone())
        .collect()
}

/// Start deleting an object: with no finalizers (its own, or the ones a propagation
/// policy or a non-empty namespace needs) it goes now; otherwise it gets a
/// deletionTimestamp and [`sweep`] finishes the job when the finalizers are gone.
fn begin_delete(
    st: &mut State,
    notify: &watch::Sender<u64>,
    k: &Key,
    propagation: Propagation,
) -> Deleted {
    let Some(current) = st.objects.get(k).cloned() else {
        return Deleted::Gone(Value::Null);
    };
    if current.pointer("/metadata/deletionTimestamp").is_some() {
        return Deleted::Pending(current);
    }
    let uid = meta_str(&current, "uid").unwrap_or_default().to_string();
    let mut fins = finalizers(&current);
    let has_dependents = !dependents_of(st, &uid).is_empty();
    match propagation {
        Propagation::Orphan if has_dependents => fins.push(ORPHAN.into()),
        Propagation::Foreground if has_dependents => fins.push(FOREGROUND.into()),
        _ => {}
    }
    let contents: Vec<Key> = if k.0 == namespaces_gvr() {
        st.objects
            .keys()
            .filter(|(_, ns, _)| *ns == k.2)
            .cloned()
            .collect()
    } else {
        Vec::new()
    };
    if !contents.is_empty() {
        fins.push(NAMESPACE_FINALIZER.into());
    }
    if fins.is_empty() {
        remove(st, notify, k);
        return Deleted::Gone(current);
    }
    let mut marked = current;
    {
        let m = meta_mut(&mut marked);
        m.insert("deletionTimestamp".into(), json!(now()));
        m.insert("deletionGracePeriodSeconds".into(), json!(0));
        m.insert("finalizers".into(), json!(fins));
    }
    if k.0 == namespaces_gvr() {
        marked["status"] = json!({"phase": "Terminating"});
    }
    let marked = commit(st, notify, k, Some(marked), EventKind::Modified);
    for c in contents {
        begin_delete(st, notify, &c, Propagation::Background);
    }
    sweep(st, notify);
    match st.objects.get(k) {
        Some(o) => Deleted::Pending(o.clone()),
        None => Deleted::Gone(marked),
    }
}

/// Finish what can be finished among objects being deleted: honour the store's own
/// finalizers and remove objects whose finalizers are all gone. Repeats until nothing
/// changes.
fn sweep(st: &mut State, notify: &watch::Sender<u64>) {
    loop {
        let deleting: Vec<Key> = st
            .objects
            .iter()
            .filter(|(_, v)| v.pointer("/metadata/deletionTimestamp").is_some())
            .map(|(k, _)| k.clone())
            .collect();
        let mut progressed = false;
        for k in deleting {
            let Some(obj) = st.objects.get(&k).cloned() else {
                continue;
            };
            let uid = meta_str(&obj, "uid").unwrap_or_default().to_string();
            let mut fins = finalizers(&obj);
            let before = fins.len();
            if fins.iter().any(|f| f == ORPHAN) {
                for d in dependents_of(st, &uid) {
                    let mut dep = st.objects[&d].clone();
                    if let Some(refs) = dep
                        .pointer_mut("/metadata/ownerReferences")
                        .and_then(Value::as_array_mut)
                    {
                        refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid.as_str()));
                    }
                    commit(st, notify, &d, Some(dep), EventKind::Modified);
                }
                fins.retain(|f| f != ORPHAN);
            }
            if fins.iter().any(|f| f == FOREGROUND) {
                let deps = dependents_of(st, &uid);
                // Like kube-controller-manager's collector: every dependent is deleted,
                // but the owner waits only for those whose reference to it says
                // `blockOwnerDeletion: true` (seen on the real control plane).
                let blocking = deps.iter().any(|d| {
                    st.objects[d]
                        .pointer("/metadata/ownerReferences")
                        .and_then(Value::as_array)
                        .is_some_and(|refs| {
                            refs.iter().any(|r| {
                                r.get("uid").and_then(Value::as_str) == Some(uid.as_str())
                                    && r.get("blockOwnerDeletion") == Some(&json!(true))
                            })
                        })
                });
                if !blocking {
                    fins.retain(|f| f != FOREGROUND);
                }
                for d in deps {
                    if st
                        .objects
                        .get(&d)
                        .is_some_and(|v| v.pointer("/metadata/deletionTimestamp").is_none())
                    {
                        begin_delete(st, notify, &d, Propagation::Background);
                        progressed = true;
                    }
                }
            }
            if fins.iter().any(|f| f == NAMESPACE_FINALIZER)
                && k.0 == namespaces_gvr()
                && !st.objects.keys().any(|(_, ns, _)| *ns == k.2)
            {
                fins.retain(|f| f != NAMESPACE_FINALIZER);
            }
            if fins.is_empty() {
                remove(st, notify, &k);
                progressed = true;
            } else if fins.len() != before {
                let mut o = st.objects[&k].clone();
                meta_mut(&mut o).insert("finalizers".into(), json!(fins));
                commit(st, notify, &k, Some(o), EventKind::Modified);
                progressed = true;
            }
        }
        if !progressed {
            return;
        }
    }
}

/// Remove an object for good and collect what it owned: a dependent whose every owner
/// is gone is deleted (its finalizers respected); one with other owners left only loses
/// the reference, as the real garbage collector does.
fn remove(st: &mut State, notify: &watch::Sender<u64>, k: &Key) {
    let Some(obj) = st.objects.get(k).cloned() else {
        return;
    };
    commit(st, notify, k, None, EventKind::Deleted);
    let uid = meta_str(&obj, "uid").unwrap_or_default().to_string();
    st.applied.retain(|(u, _), _| *u != uid);
    st.applied_at.retain(|(u, _), _| *u != uid);
    st.updated.retain(|(u, _, _), _| *u != uid);
    if k.0 == crd_gvr() {
        unserve_crd(st, notify, &obj);
    }
    let live: HashSet<String> = st
        .objects
        .values()
        .filter_map(|v| meta_str(v, "uid").map(str::to_string))
        .collect();
    for d in dependents_of(st, &uid) {
        let Some(mut dep) = st.objects.get(&d).cloned() else {
            continue;
        };
        let others_alive = dep
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .is_some_and(|refs| {
                refs.iter().any(|r| {
                    r.get("uid")
                        .and_then(Value::as_str)
                        .is_some_and(|u| u != uid && live.contains(u))
                })
            });
        if others_alive {
            if let Some(refs) = dep
                .pointer_mut("/metadata/ownerReferences")
                .and_then(Value::as_array_mut)
            {
                refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid.as_str()));
            }
            commit(st, notify, &d, Some(dep), EventKind::Modified);
        } else {
            begin_delete(st, notify, &d, Propagation::Background);
        }
    }
    sweep(st, notify);
}

/// A CRD was created or changed: serve its kind and mark it Established.
fn serve_crd(st: &mut State, notify: &watch::Sender<u64>, crd: &Value) {
    let Some(rt) = ResourceType::from_crd(crd) else {
        return;
    };
    st.types.insert(rt.gvr(), rt.clone());
    let established = crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Established"));
    if !established {
        let mut c = crd.clone();
        let t = now();
        c["status"] = json!({
            "acceptedNames": {"kind": rt.kind, "plural": rt.plural, "singular": rt.singular, "listKind": format!("{}List", rt.kind), "shortNames": rt.short_names},
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": t},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": t}
            ],
            "storedVersions": [rt.version]
        });
        let name = meta_str(crd, "name").unwrap_or_default().to_string();
        commit(
            st,
            notify,
            &(crd_gvr(), String::new(), name),
            Some(c),
            EventKind::Modified,
        );
    }
}

/// A CRD was deleted: its objects go with it and its kind is no longer served.
fn unserve_crd(st: &mut State, notify: &watch::Sender<u64>, crd: &Value) {
    let Some(rt) = ResourceType::from_crd(crd) else {
        return;
    };
    let gvr = rt.gvr();
    let objs: Vec<Key> = st
        .objects
        .keys()
        .filter(|(g, _, _)| *g == gvr)
        .cloned()
        .collect();
    for k in objs {
        commit(st, notify, &k, None, EventKind::Deleted);
    }
    st.types.remove(&gvr);
}

/// Rewrite `metadata.managedFields` from the applied configurations.
fn set_managed_fields(
    st: &mut State,
    notify: &watch::Sender<u64>,
    rt: &ResourceType,
    ns: &str,
    name: &str,
) -> Result<Value, ApiError> {
    let k = key(rt, ns, name);
    let mut obj = st
        .objects
        .get(&k)
        .cloned()
        .ok_or_else(|| ApiError::not_found(&rt.plural, &rt.group, name))?;
    let uid = meta_str(&obj, "uid").unwrap_or_default().to_string();
    let before = obj["metadata"]["managedFields"].clone();
    set_entries(st, rt, &uid, &mut obj);
    if obj["metadata"]["managedFields"] == before {
        return Ok(obj);
    }
    Ok(commit(st, notify, &k, Some(obj), EventKind::Modified))
}

/// Who owns a field that an apply conflicts with.
enum Owner {
    Apply(String),
    /// An `Update` manager, and whether its entry is of the status subresource.
    Update(String, bool),
}

/// Set `metadata.managedFields` of `obj` from the store's record of its managers, in the
/// real server's format (`manager`, `operation`, `apiVersion`, `time`, `fieldsType`,
/// `fieldsV1`, and `subresource` for status writes). Sorted by manager and operation.
fn set_entries(st: &State, rt: &ResourceType, uid: &str, obj: &mut Value) {
    let mut entries: Vec<Value> = st
        .applied
        .iter()
        .filter(|((u, _), _)| u == uid)
        .map(|((u, m), cfg)| json!({"manager": m, "operation": "Apply", "apiVersion": rt.api_version(), "time": st.applied_at.get(&(u.clone(), m.clone())).cloned().unwrap_or_else(now), "fieldsType": "FieldsV1", "fieldsV1": fields_v1(cfg)}))
        .collect();
    entries.extend(
        st.updated
            .iter()
            .filter(|((u, _, _), e)| u == uid && !e.fields.is_empty())
            .map(|((_, m, sub), e)| {
                let mut entry = json!({"manager": m, "operation": "Update", "apiVersion": rt.api_version(), "time": e.time, "fieldsType": "FieldsV1", "fieldsV1": paths_v1(e.fields.keys())});
                if *sub {
                    entry["subresource"] = json!("status");
                }
                entry
            }),
    );
    entries.sort_by(|a, b| {
        (
            a["manager"].as_str(),
            a["operation"].as_str(),
            a["subresource"].as_str(),
        )
            .cmp(&(
                b["manager"].as_str(),
                b["operation"].as_str(),
                b["subresource"].as_str(),
            ))
    });
    let m = meta_mut(obj);
    if entries.is_empty() {
        m.remove("managedFields");
    } else {
        m.insert("managedFields".into(), json!(entries));
    }
}

/// Metadata the server sets or that names the object: in nobody's managedFields.
const SERVER_META: [&str; 9] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
];

/// The leaves a write of the main resource (`status` false) or of its status owns.
fn owned_leaves(rt: &ResourceType, obj: &Value, status: bool) -> BTreeMap<String, Value> {
    leaves(obj)
        .into_iter()
        .filter(|(p, _)| {
            let in_status = p == ".status" || p.starts_with(".status.");
            let server = p == ".metadata"
                || SERVER_META.iter().any(|f| {
                    p == &format!(".metadata.{f}") || p.starts_with(&format!(".metadata.{f}."))
                });
            !server
                && if status {
                    in_status
                } else {
                    !(in_status && rt.status_subresource)
                }
        })
        .collect()
}

/// Whether two leaf paths overlap (equal, or one inside the other).
fn touches(a: &str, b: &str) -> bool {
    a == b
        || a.strip_prefix(b).is_some_and(|r| r.starts_with('.'))
        || b.strip_prefix(a).is_some_and(|r| r.starts_with('.'))
}

/// Record an `Update` write by `manager` (create, update, patch) as kube-apiserver's
/// field manager does: the manager now owns every field the write set or changed, and
/// no other manager (Apply or Update) keeps a field it changed or removed. Fields the
/// write left as they were keep their owners; a manager left with none disappears.
/// Lists are atomic leaves here (the real server tracks items by merge key).
fn record_update(
    st: &mut State,
    rt: &ResourceType,
    uid: &str,
    manager: &str,
    status: bool,
    before: &Value,
    after: &Value,
) {
    let old = owned_leaves(rt, before, status);
    let new = owned_leaves(rt, after, status);
    // A map the write emptied (its fields removed, `{}` left) is no field the write set:
    // kube-apiserver takes the removed fields from their owners and gives the writer
    // nothing, so a manager whose write only removed fields owns none and its entry goes
    // (a21j 06: Argo CD's `automated` removed by `argocd-server` left an entry on the
    // emulator, none on the real server).
    let emptied = |p: &str, v: &Value| {
        v.as_object().is_some_and(serde_json::Map::is_empty)
            && p.trim_start_matches('.')
                .split('.')
                .try_fold(before, |cur, k| cur.get(k))
                .and_then(Value::as_object)
                .is_some_and(|m| !m.is_empty())
    };
    let changed: Vec<String> = new
        .iter()
        .filter(|(p, v)| old.get(*p) != Some(*v) && !emptied(p, v))
        .map(|(p, _)| p.clone())
        .collect();
    let gone: Vec<String> = old
        .keys()
        .filter(|p| !new.contains_key(*p))
        .cloned()
        .collect();
    if changed.is_empty() && gone.is_empty() {
        return;
    }
    let hit = |p: &str| changed.iter().chain(&gone).any(|c| touches(p, c));
    for ((u, _, sub), e) in st.updated.iter_mut() {
        if u == uid && *sub == status {
            e.fields.retain(|p, _| !hit(p));
        }
    }
    for ((u, _), cfg) in st.applied.iter_mut() {
        if u != uid {
            continue;
        }
        for p in leaves(cfg).into_keys().filter(|p| hit(p)) {
            prune_path(cfg, &p);
        }
    }
    // A map the write created is owned as a whole too: kube-apiserver's `".": {}`.
    // Another manager's claim on a map the write removed goes with it.
    let is_map = |v: &Value, path: &str| {
        path.trim_start_matches('.')
            .split('.')
            .try_fold(v, |cur, p| cur.get(p))
            .is_some_and(Value::is_object)
    };
    let created: Vec<String> = map_fields(rt, after)
        .into_iter()
        .filter(|m| !is_map(before, m) && changed.iter().any(|c| touches(c, m)))
        .map(|m| format!("{m}."))
        .collect();
    for ((u, _, sub), e) in st.updated.iter_mut() {
        if u == uid && *sub == status {
            e.fields.retain(|p, _| {
                p.strip_suffix('.')
                    .is_none_or(|m| is_map(after, m) && !created.contains(p))
            });
        }
    }
    let e = st
        .updated
        .entry((uid.to_string(), manager.to_string(), status))
        .or_default();
    for p in changed {
        e.fields.insert(p.clone(), new[&p].clone());
    }
    for m in created {
        e.fields.insert(m, json!({}));
    }
    e.time = now();
    st.updated.retain(|_, e| !e.fields.is_empty());
}

/// The map-typed fields of `obj` (as `.a.b` paths) that kube-apiserver's field manager
/// owns as a whole once a write creates them (`".": {}` in `fieldsV1`): labels and
/// annotations, and a ConfigMap's or Secret's data. Structs (`spec`, `metadata`) are
/// not; the maps inside a custom resource's spec are not tracked here (docs/sandbox.md).
fn map_fields(rt: &ResourceType, obj: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for m in ["labels", "annotations"] {
        if obj["metadata"][m].is_object() {
            out.push(format!(".metadata.{m}"));
        }
    }
    if rt.group.is_empty() && matches!(rt.plural.as_str(), "configmaps" | "secrets") {
        for m in ["data", "binaryData"] {
            if obj[m].is_object() {
                out.push(format!(".{m}"));
            }
        }
    }
    out
}

/// The `FieldsV1` form of leaf paths: `.spec.x` → `{"f:spec": {"f:x": {}}}`; a map
/// owned as a whole, `.data.`, → `{"f:data": {".": {}}}`.
fn paths_v1<'a>(paths: impl Iterator<Item = &'a String>) -> Value {
    let mut out = json!({});
    for p in paths {
        let mut cur = &mut out;
        for part in p.trim_start_matches('.').split('.') {
            let key = if part.is_empty() {
                ".".to_string()
            } else {
                format!("f:{part}")
            };
            cur = cur
                .as_object_mut()
                .expect("FieldsV1 nodes are objects")
                .entry(key)
                .or_insert_with(|| json!({}));
        }
    }
    out
}

/// The `FieldsV1` form of a configuration: `{"f:spec": {"f:x": {}}}`.
fn fields_v1(cfg: &Value) -> Value {
    match cfg {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                if matches!(k.as_str(), "apiVersion" | "kind") {
                    continue;
                }
                let inner = if v.is_object() {
                    fields_v1(v)
                } else {
                    json!({})
                };
                out.insert(format!("f:{k}"), inner);
            }
            Value::Object(out)
        }
        _ => json!({}),
    }
}

/// Leaves of a configuration as `.a.b` paths (lists are atomic leaves).
fn leaves(cfg: &Value) -> BTreeMap<String, Value> {
    fn walk(v: &Value, at: String, out: &mut BTreeMap<String, Value>) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, c) in m {
                    if at.is_empty() && matches!(k.as_str(), "apiVersion" | "kind") {
                        continue;
                    }
                    walk(c, format!("{at}.{k}"), out);
                }
            }
            _ => {
                out.insert(at, v.clone());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(cfg, String::new(), &mut out);
    out
}

/// [`remove_path`], then drop the objects it left empty (a configuration keeps no `{}`
/// that [`leaves`] would read as a field of its own).
fn prune_path(v: &mut Value, path: &str) {
    remove_path(v, path);
    let parts: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    for n in (1..parts.len()).rev() {
        let parent = format!(".{}", parts[..n].join("."));
        let empty = parts[..n]
            .iter()
            .try_fold(&*v, |cur, p| cur.get(*p))
            .is_some_and(|o| o.as_object().is_some_and(Map::is_empty));
        if !empty {
            return;
        }
        remove_path(v, &parent);
    }
}

fn remove_path(v: &mut Value, path: &str) {
    let parts: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    let (last, parents) = parts.split_last().expect("paths are not empty");
    let mut cur = v;
    for p in parents {
        match cur.get_mut(*p) {
            Some(next) => cur = next,
            None => return,
        }
    }
    if let Some(o) = cur.as_object_mut() {
        o.remove(*last);
    }
}

/// Deep-merge `patch` into `base`: objects merge, everything else replaces.
fn merge(base: &mut Value, patch: &Value) {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, v) in p {
                match b.get_mut(k) {
                    Some(existing) if existing.is_object() && v.is_object() => merge(existing, v),
                    _ => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, p) => *b = p.clone(),
    }
}
