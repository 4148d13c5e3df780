//! The owners of a GitOps sync in the cluster (issue 11 items 1 and 2): find the Argo CD
//! `Application` or Flux `Kustomization` / `HelmRelease` that the markers of an object
//! name (`core::gitops::detect`), and patch it (suspend, restore) with vpnmig's field
//! manager. One API call each; what to patch is decided in `core::gitops`.

use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::GroupVersionKind;
use serde_json::Value;

use super::journal::FIELD_MANAGER;
use super::objects::status;
use super::{Cluster, KubeError};
use crate::core::gitops::OwnerRef;

/// The API resource of an owner kind (`Application`, `Kustomization`, `HelmRelease`).
fn resource(owner: &OwnerRef) -> ApiResource {
    let (group, version) = owner
        .api_version
        .split_once('/')
        .unwrap_or(("", owner.api_version.as_str()));
    let gvk = GroupVersionKind::gvk(group, version, &owner.kind);
    ApiResource::from_gvk_with_plural(&gvk, &format!("{}s", owner.kind.to_lowercase()))
}

fn to_value(o: DynamicObject) -> Value {
    serde_json::to_value(o).expect("objects serialize")
}

/// The owner object, with its namespace filled in: read from its namespace when the
/// markers name it, else found by name among all namespaces (an Argo CD Application
/// lives in the Argo CD control plane's namespace, which the tracking metadata does not
/// name). `Ok(None)`: no such object, or its kind is not served (the CRD is missing).
///
/// Errors: a refusal or no answer from the API server.
pub async fn find(cluster: &Cluster, owner: &OwnerRef) -> Result<Found, KubeError> {
    let ar = resource(owner);
    let plural = ar.plural.clone();
    let found = match &owner.namespace {
        Some(ns) => {
            let api: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), ns, &ar);
            let got = cluster
                .call("get", &format!("{plural}/{}", owner.name), Some(ns), || {
                    api.get_opt(&owner.name)
                })
                .await;
            match got {
                Ok(o) => o.map(to_value),
                Err(e) if status(&e) == Some(404) => None,
                Err(e) => return Err(e),
            }
        }
        None => {
            let api: Api<DynamicObject> = Api::all_with(cluster.client.clone(), &ar);
            let lp = ListParams::default().fields(&format!("metadata.name={}", owner.name));
            let list = match cluster.call("list", &plural, None, || api.list(&lp)).await {
                Ok(l) => l.items,
                Err(e) if status(&e) == Some(404) => Vec::new(),
                Err(e) => return Err(e),
            };
            let mut items: Vec<Value> = list
                .into_iter()
                .map(to_value)
                .filter(|o| o["metadata"]["name"] == owner.name.as_str())
                .collect();
            if items.len() > 1 {
                return Ok(Found::Many(
                    items
                        .into_iter()
                        .map(|o| {
                            let mut owner = owner.clone();
                            owner.namespace =
                                o["metadata"]["namespace"].as_str().map(str::to_string);
                            (owner, o)
                        })
                        .collect(),
                ));
            }
            items.pop()
        }
    };
    Ok(match found {
        Some(o) => {
            let mut owner = owner.clone();
            owner.namespace = o["metadata"]["namespace"].as_str().map(str::to_string);
            Found::One(owner, o)
        }
        None => Found::None,
    })
}

/// What [`find`] found.
#[derive(Debug)]
pub enum Found {
    /// No such object, or its kind is not served.
    None,
    /// The owner (namespace filled in) and the object.
    One(OwnerRef, Value),
    /// Objects of that name in several namespaces (each with its namespace filled in):
    /// the markers do not say which.
    Many(Vec<(OwnerRef, Value)>),
}

/// Apply a JSON merge patch (RFC 7386) to the owner, as field manager `vpnmig`; returns
/// the owner as it is after.
pub async fn patch(cluster: &Cluster, owner: &OwnerRef, patch: &Value) -> Result<Value, KubeError> {
    let ar = resource(owner);
    let ns = owner.namespace.as_deref().unwrap_or_default();
    let api: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), ns, &ar);
    let pp = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    let p = Patch::Merge(patch);
    cluster
        .call(
            "patch",
            &format!("{}/{}", ar.plural, owner.name),
            Some(ns),
            || api.patch(&owner.name, &pp, &p),
        )
        .await
        .map(to_value)
}

/// The API resource of any object by its `apiVersion` and `kind` (plural: the kind in
/// lower case with an `s`, as for every kind a window keeps).
fn resource_of(api_version: &str, kind: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    ApiResource::from_gvk_with_plural(&gvk, &format!("{}s", kind.to_lowercase()))
}

/// The API of kept objects of `ar` in namespace `ns`; `""`: a cluster-scoped kind (an
/// owner in an ownerReference chain, e.g. a ClusterExternalSecret; a21d attack 8).
fn kept_api(cluster: &Cluster, ns: &str, ar: &ApiResource) -> Api<DynamicObject> {
    if ns.is_empty() {
        Api::all_with(cluster.client.clone(), ar)
    } else {
        Api::namespaced_with(cluster.client.clone(), ns, ar)
    }
}

/// An object a window keeps (its PSK Secret, a new object, the old gateway), read in
/// its own namespace (`""`: cluster-scoped); `None`: it does not exist. A Secret is returned as it is read:
/// callers look at its metadata only.
pub async fn get_kept(
    cluster: &Cluster,
    api_version: &str,
    kind: &str,
    ns: &str,
    name: &str,
) -> Result<Option<Value>, KubeError> {
    let ar = resource_of(api_version, kind);
    let api = kept_api(cluster, ns, &ar);
    let got = cluster
        .call(
            "get",
            &format!("{}/{name}", ar.plural),
            Some(ns).filter(|n| !n.is_empty()),
            || api.get_opt(name),
        )
        .await;
    match got {
        Ok(o) => Ok(o.map(to_value)),
        Err(e) if status(&e) == Some(404) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Apply a JSON merge patch to an object a window keeps (its metadata: the prune
/// protection), as field manager `vpnmig`; returns the object as it is after.
pub async fn patch_kept(
    cluster: &Cluster,
    api_version: &str,
    kind: &str,
    ns: &str,
    name: &str,
    patch: &Value,
) -> Result<Value, KubeError> {
    let ar = resource_of(api_version, kind);
    let api = kept_api(cluster, ns, &ar);
    let pp = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    let p = Patch::Merge(patch);
    cluster
        .call(
            "patch",
            &format!("{}/{name}", ar.plural),
            Some(ns).filter(|n| !n.is_empty()),
            || api.patch(name, &pp, &p),
        )
        .await
        .map(to_value)
}

/// The parents of a GitOps owner ([`crate::core::gitops::parents`]) that the cluster
/// has, each with its object (namespace filled in). A parent its markers name without a
/// namespace (an Argo CD Application in the control plane's namespace, which the child
/// in another namespace does not name) is found by name in every namespace; several of
/// that name are each a candidate (issue 21 item 4: the one that puts the policy back is
/// never missed). One the cluster does not have puts nothing back.
///
/// Errors: a refusal or no answer from the API server.
pub async fn parents_of(
    cluster: &Cluster,
    owner: &Value,
) -> Result<Vec<(crate::core::gitops::Parent, Value)>, KubeError> {
    let mut out = Vec::new();
    for p in crate::core::gitops::parents(owner) {
        let found = match find(cluster, &p.owner).await? {
            Found::One(o, v) => vec![(o, v)],
            Found::Many(all) => all,
            Found::None => Vec::new(),
        };
        let label_only = crate::core::gitops::by_instance_label_only(&p, owner);
        for (o, v) in found {
            // The instance label alone on a HelmRelease or Kustomization: an Application
            // whose status lists what it applies, without it, does not apply it.
            if label_only && crate::core::gitops::lists_resource(&v, owner) == Some(false) {
                continue;
            }
            let mut p = p.clone();
            p.owner = o;
            out.push((p, v));
        }
    }
    Ok(out)
}

/// Every ConfigMap `argocd-cm` whose diff customizations may apply to an Application in
/// namespace `app_ns` (a21d attack 1): Argo CD reads it in its own install namespace,
/// which is not the Application's with "apps in any namespace". Each as (namespace,
/// ConfigMap). Where vpnmig may list ConfigMaps in all namespaces, every `argocd-cm` of
/// the cluster (an empty list: Argo CD runs without one, so no global rule); else the
/// Application's namespace and `argocd`, read by name.
///
/// `Err`: why it cannot be told where Argo CD keeps it (the list refused and neither
/// namespace holds one or may be read, or no answer).
pub async fn argocd_cms(cluster: &Cluster, app_ns: &str) -> Result<Vec<(String, Value)>, String> {
    use k8s_openapi::api::core::v1::ConfigMap;
    let all: Api<ConfigMap> = Api::all(cluster.client.clone());
    let lp = ListParams::default().fields("metadata.name=argocd-cm");
    let listed = cluster
        .call("list", "configmaps named argocd-cm", None, || all.list(&lp))
        .await;
    let refused = match listed {
        Ok(l) => {
            return Ok(l
                .items
                .into_iter()
                .filter(|c| c.metadata.name.as_deref() == Some("argocd-cm"))
                .map(|c| {
                    (
                        c.metadata.namespace.clone().unwrap_or_default(),
                        serde_json::to_value(c).expect("configmaps serialize"),
                    )
                })
                .collect());
        }
        Err(e) if matches!(e, KubeError::Forbidden { .. }) || status(&e) == Some(403) => e,
        Err(e) => return Err(format!("listing ConfigMaps named argocd-cm failed: {e}")),
    };
    let mut found = Vec::new();
    let mut unread = Vec::new();
    let mut namespaces = vec![app_ns];
    if app_ns != "argocd" {
        namespaces.push("argocd");
    }
    for ns in namespaces {
        match get_kept(cluster, "v1", "ConfigMap", ns, "argocd-cm").await {
            Ok(Some(cm)) => found.push((ns.to_string(), cm)),
            Ok(None) => {}
            Err(e) => unread.push(format!("namespace {ns}: {e}")),
        }
    }
    if found.is_empty() || !unread.is_empty() {
        return Err(format!(
            "ConfigMaps named argocd-cm cannot be listed in all namespaces ({refused}), and {}",
            if unread.is_empty() && app_ns == "argocd" {
                "namespace argocd has none: Argo CD runs in another namespace, which vpnmig cannot find".to_string()
            } else if unread.is_empty() {
                format!(
                    "neither namespace {app_ns} nor argocd has one: Argo CD runs in another namespace, which vpnmig cannot find"
                )
            } else {
                format!(
                    "it cannot be read where Argo CD may keep it ({})",
                    unread.join("; ")
                )
            }
        ));
    }
    Ok(found)
}

/// Whether objects of `kind` (`api_version`) are namespaced, as the cluster's discovery
/// says; the kinds a window keeps (core `v1`, vpnmig's own) without asking. `true` when
/// discovery does not list the kind (a read of it then says it cannot be found).
pub async fn namespaced(cluster: &Cluster, api_version: &str, kind: &str) -> bool {
    if api_version == "v1" || api_version.starts_with("vpn.bnerd.net/") {
        return true;
    }
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    match kube::discovery::pinned_kind(&cluster.client, &gvk).await {
        Ok((_, caps)) => caps.scope == kube::discovery::Scope::Namespaced,
        Err(_) => true,
    }
}

/// Whether the cluster serves `kind` (`api_version`), as its discovery says (a kind it
/// does not serve has no objects to look for, and no permission to ask for).
pub async fn serves(cluster: &Cluster, api_version: &str, kind: &str) -> bool {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    kube::discovery::pinned_kind(&cluster.client, &gvk)
        .await
        .is_ok()
}

/// Every owner of a kind (`Application`, `Kustomization`) whose own status names `kind
/// ns/name` as an object it applies ([`crate::core::gitops::status_names`]), in every
/// namespace: an owner the object's markers no longer name (a21l A08: a second
/// Kustomization's inventory listed the gateway, the labels named the first one only).
/// A kind the cluster does not serve has none.
///
/// Errors: a refusal (the list is not allowed) or no answer from the API server.
pub async fn naming(
    cluster: &Cluster,
    kind: &str,
    ns: &str,
    name: &str,
) -> Result<Vec<(OwnerRef, Value)>, KubeError> {
    let mut out = Vec::new();
    for &(api_version, owner_kind) in crate::core::live::GITOPS_OWNER_LISTS {
        let shape = OwnerRef {
            api_version: api_version.into(),
            kind: owner_kind.into(),
            namespace: None,
            name: String::new(),
        };
        let ar = resource(&shape);
        let plural = ar.plural.clone();
        let api: Api<DynamicObject> = Api::all_with(cluster.client.clone(), &ar);
        let lp = ListParams::default();
        let items = match cluster.call("list", &plural, None, || api.list(&lp)).await {
            Ok(l) => l.items,
            Err(e) if status(&e) == Some(404) => Vec::new(),
            Err(e) => return Err(e),
        };
        for o in items.into_iter().map(to_value) {
            if crate::core::gitops::status_names(&o, kind, ns, name) {
                let owner = OwnerRef {
                    namespace: o["metadata"]["namespace"].as_str().map(str::to_string),
                    name: o["metadata"]["name"].as_str().unwrap_or_default().into(),
                    ..shape.clone()
                };
                out.push((owner, o));
            }
        }
    }
    Ok(out)
}
