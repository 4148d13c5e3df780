//! The writes of a cutover and a rollback, one API call each: delete (with a uid
//! precondition), server-side apply (field manager `vpnmig`), create, and the PSK
//! Secret's ownerReferences patch. Every one may be a dry run.

use k8s_openapi::api::core::v1::Secret;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions,
};
use serde_json::{Value, json};

use super::journal::FIELD_MANAGER;
use super::{Cluster, KubeError};
use crate::core::model::{IPsecGateway, VPNGateway, VPNPeer};

/// The API resource of one of the three kinds (`IPsecGateway`, `VPNGateway`, `VPNPeer`).
pub fn resource(kind: &str) -> ApiResource {
    match kind {
        "IPsecGateway" => ApiResource::erase::<IPsecGateway>(&()),
        "VPNGateway" => ApiResource::erase::<VPNGateway>(&()),
        _ => ApiResource::erase::<VPNPeer>(&()),
    }
}

fn api(cluster: &Cluster, kind: &str) -> Api<DynamicObject> {
    Api::namespaced_with(cluster.client.clone(), &cluster.namespace, &resource(kind))
}

fn what(kind: &str, name: &str) -> String {
    format!("{}/{name}", kind.to_lowercase())
}

/// The object as JSON, if it exists.
pub async fn get(cluster: &Cluster, kind: &str, name: &str) -> Result<Option<Value>, KubeError> {
    let api = api(cluster, kind);
    let obj = cluster
        .call("get", &what(kind, name), Some(&cluster.namespace), || {
            api.get_opt(name)
        })
        .await?;
    Ok(obj.map(|o| serde_json::to_value(o).expect("objects serialize")))
}

/// Every object of `kind` in the namespace, as JSON (paged by the API's default).
pub async fn list(cluster: &Cluster, kind: &str) -> Result<Vec<Value>, KubeError> {
    let api = api(cluster, kind);
    let lp = kube::api::ListParams::default();
    let plural = format!("{}s", kind.to_lowercase());
    let list = cluster
        .call("list", &plural, Some(&cluster.namespace), || api.list(&lp))
        .await?;
    Ok(list
        .items
        .into_iter()
        .map(|o| serde_json::to_value(o).expect("objects serialize"))
        .collect())
}

/// Delete `kind/name`; with `uid`, only that very object (a re-created one of the same
/// name is left alone: 409); with `resource_version` too, only that very version of it
/// (a change since it was checked: 409). Returns whether it existed. Only
/// `cluster::delete` calls it: every delete is judged there first.
pub(super) async fn delete(
    cluster: &Cluster,
    kind: &str,
    name: &str,
    uid: Option<&str>,
    resource_version: Option<&str>,
    dry_run: bool,
) -> Result<bool, KubeError> {
    let api = api(cluster, kind);
    let dp = DeleteParams {
        dry_run,
        preconditions: uid.map(|u| Preconditions {
            uid: Some(u.to_string()),
            resource_version: resource_version.map(str::to_string),
        }),
        ..Default::default()
    };
    let what = what(kind, name);
    match cluster
        .call("delete", &what, Some(&cluster.namespace), || {
            api.delete(name, &dp)
        })
        .await
    {
        Ok(_) => Ok(true),
        Err(e) if status(&e) == Some(404) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The HTTP status of an API error the cluster layer passed through.
pub fn status(e: &KubeError) -> Option<u16> {
    match e {
        KubeError::Api {
            answer: kube::Error::Api(s),
            ..
        } => Some(s.code),
        _ => None,
    }
}

/// Server-side apply `obj` as field manager `vpnmig` (no force: a field another manager
/// owns is a conflict to look at, not to overwrite). Returns the uid of the object
/// applied (empty in a dry run of a create).
pub async fn apply(cluster: &Cluster, obj: &Value, dry_run: bool) -> Result<String, KubeError> {
    let kind = obj["kind"].as_str().unwrap_or_default();
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    let api = api(cluster, kind);
    let mut pp = PatchParams::apply(FIELD_MANAGER);
    if dry_run {
        pp = pp.dry_run();
    }
    let patch = Patch::Apply(obj);
    cluster
        .call("apply", &what(kind, name), Some(&cluster.namespace), || {
            api.patch(name, &pp, &patch)
        })
        .await
        .map(|o| o.metadata.uid.unwrap_or_default())
}

/// Server-side apply `obj` as field manager `vpnmig` with force: the fields it sets are
/// taken back from whichever manager changed them (a GitOps sync that changed what the
/// window made live, put back at once; issue 21 item 1). Returns the object after.
pub async fn apply_forced(cluster: &Cluster, obj: &Value) -> Result<Value, KubeError> {
    let kind = obj["kind"].as_str().unwrap_or_default();
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    let api = api(cluster, kind);
    let pp = PatchParams::apply(FIELD_MANAGER).force();
    let patch = Patch::Apply(obj);
    cluster
        .call("apply", &what(kind, name), Some(&cluster.namespace), || {
            api.patch(name, &pp, &patch)
        })
        .await
        .map(|o| serde_json::to_value(o).unwrap_or_default())
}

/// Create `obj` (the old gateway's saved manifest); `Ok(false)` if it already exists.
pub async fn create(cluster: &Cluster, obj: &Value, dry_run: bool) -> Result<bool, KubeError> {
    let kind = obj["kind"].as_str().unwrap_or_default();
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    let api = api(cluster, kind);
    let pp = PostParams {
        dry_run,
        field_manager: Some(FIELD_MANAGER.into()),
    };
    let body: DynamicObject = serde_json::from_value(obj.clone()).expect("manifests are objects");
    // Retried on 5xx: a create that landed before the error is a 409 on the retry.
    match cluster
        .call(
            "create",
            &what(kind, name),
            Some(&cluster.namespace),
            || api.create(&pp, &body),
        )
        .await
    {
        Ok(_) => Ok(true),
        Err(e) if status(&e) == Some(409) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The PSK Secret as JSON, if it exists.
pub async fn secret(cluster: &Cluster, name: &str) -> Result<Option<Value>, KubeError> {
    let api: Api<Secret> = Api::namespaced(cluster.client.clone(), &cluster.namespace);
    let s = cluster
        .call(
            "get",
            &format!("secret/{name}"),
            Some(&cluster.namespace),
            || api.get_opt(name),
        )
        .await?;
    Ok(s.map(|s| serde_json::to_value(s).expect("secrets serialize")))
}

/// Replace the Secret's ownerReferences with `kept`, if it is still at
/// `resource_version` (a concurrent change is a 409, not a lost update).
pub async fn set_owner_references(
    cluster: &Cluster,
    name: &str,
    resource_version: &str,
    kept: &[Value],
    dry_run: bool,
) -> Result<(), KubeError> {
    let api: Api<Secret> = Api::namespaced(cluster.client.clone(), &cluster.namespace);
    let body = json!({"metadata": {"resourceVersion": resource_version, "ownerReferences": kept}});
    let mut pp = PatchParams {
        field_manager: Some(super::journal::FIELD_MANAGER.into()),
        ..Default::default()
    };
    if dry_run {
        pp = pp.dry_run();
    }
    let patch = Patch::Merge(&body);
    cluster
        .call(
            "patch",
            &format!("secret/{name}"),
            Some(&cluster.namespace),
            || api.patch(name, &pp, &patch),
        )
        .await
        .map(|_| ())
}

/// Keep the PSK Secret `secret` free of ownerReferences to `owners` until cancelled:
/// whatever re-adds one (an operator re-adopting it, a hand edit) while the old gateway
/// unwinds, it is removed again before the garbage collector can act on it. Every
/// removed reference is pushed to `removed` and announced ([`super::Notice::PskOwnerRemoved`]). Returns only on an
/// error the guard cannot get past (a refusal); a dropped watch is reopened.
pub async fn guard_psk(
    cluster: &Cluster,
    secret: &str,
    owners: &crate::core::journal::Owners,
    removed: &std::sync::Mutex<Vec<Value>>,
) -> KubeError {
    use futures::{StreamExt, TryStreamExt};
    use kube::api::WatchParams;
    let api: Api<Secret> = Api::namespaced(cluster.client.clone(), &cluster.namespace);
    let fields = format!("metadata.name={secret}");
    loop {
        let current = match self::secret(cluster, secret).await {
            Ok(Some(s)) => s,
            // Nothing to guard (the window's own check says the Secret is missing).
            Ok(None) => return std::future::pending().await,
            Err(e) => return e,
        };
        let (gone, kept) = owners.split(&current);
        let rv = current
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if !gone.is_empty() {
            match set_owner_references(cluster, secret, &rv, &kept, false).await {
                Ok(()) => {
                    cluster.notices.emit(super::Notice::PskOwnerRemoved {
                        secret: secret.into(),
                        count: gone.len(),
                    });
                    removed.lock().expect("not poisoned").extend(gone);
                }
                Err(e @ (KubeError::Forbidden { .. } | KubeError::Unauthorized { .. })) => {
                    return e;
                }
                // A conflict (it changed again) or a blip: look again.
                Err(_) => {}
            }
            continue;
        }
        let wp = WatchParams::default().fields(&fields).timeout(290);
        match api.watch(&wp, &rv).await {
            Ok(stream) => {
                let mut stream = stream.boxed();
                // Any event (or the end of the stream) means: look again.
                let _ = stream.try_next().await;
            }
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(500)).await,
        }
    }
}

/// The uid of the object an ownerReference names (`api_version`, `kind`, `name`; in the
/// namespace unless discovery says the kind is cluster-scoped), or `None` if there is
/// none. The kinds vpnmig knows are looked up directly; any other through discovery;
/// a kind discovery does not list is guessed as `ApiResource::from_gvk` pluralises it,
/// and the second value says so (a guess that misses reads as "absent").
pub async fn owner_uid(
    cluster: &Cluster,
    api_version: &str,
    kind: &str,
    name: &str,
) -> Result<(Option<String>, Option<String>), KubeError> {
    use kube::api::GroupVersionKind;
    let known = matches!(kind, "IPsecGateway" | "VPNGateway" | "VPNPeer")
        && resource(kind).api_version == api_version;
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let mut note = None;
    let (ar, namespaced) = if known {
        (resource(kind), true)
    } else {
        match kube::discovery::pinned_kind(&cluster.client, &gvk).await {
            Ok((ar, caps)) => (ar, caps.scope == kube::discovery::Scope::Namespaced),
            Err(e)
                if status_of(&e).is_some_and(|c| c < 500)
                    || matches!(e, kube::Error::Discovery(_)) =>
            {
                let ar = ApiResource::from_gvk(&gvk);
                note = Some(format!(
                    "{kind} ({api_version}) is not listed by the cluster's discovery: looked it up as `{}`, the plural guessed from the kind",
                    ar.plural
                ));
                (ar, true)
            }
            Err(_) => {
                // Unreachable or a server error: ask through the retrying path, whose
                // error is the answer (never read as "absent").
                let (ar, caps) = cluster
                    .call(
                        "discover",
                        &format!("the resource of {kind} ({api_version})"),
                        None,
                        || kube::discovery::pinned_kind(&cluster.client, &gvk),
                    )
                    .await?;
                (ar, caps.scope == kube::discovery::Scope::Namespaced)
            }
        }
    };
    let api: Api<DynamicObject> = if namespaced {
        Api::namespaced_with(cluster.client.clone(), &cluster.namespace, &ar)
    } else {
        Api::all_with(cluster.client.clone(), &ar)
    };
    let obj = cluster
        .call(
            "get",
            &format!("{}/{name}", kind.to_lowercase()),
            namespaced.then_some(cluster.namespace.as_str()),
            || api.get_opt(name),
        )
        .await?;
    Ok((obj.and_then(|o| o.metadata.uid), note))
}

fn status_of(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// The uid of namespace `kube-system`: what tells one cluster from another in a change
/// record (issue 12 item 4), as it lives as long as the cluster. `None` if there is none.
pub async fn kube_system_uid(cluster: &Cluster) -> Result<Option<String>, KubeError> {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(cluster.client.clone());
    let ns = cluster
        .call("get", "namespace/kube-system", None, || {
            api.get_opt("kube-system")
        })
        .await?;
    Ok(ns.and_then(|n| n.metadata.uid))
}
