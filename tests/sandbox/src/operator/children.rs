//! The gateway workload: Deployment `<gateway>` and its Pod with a `strongswan` container
//! (DESIGN.md §2 "the gateway workload (Deployment `<gateway>` with container
//! `strongswan`) runs in the same namespace"), owned Pod → Deployment → gateway so the
//! store's garbage collector removes them with their owner, and removed first by the
//! deletion unwind ("children first, then OpenStack cleanup").
//!
//! There is no ReplicaSet: the Pod is owned by the Deployment directly, named like a
//! ReplicaSet's pod (`<gateway>-<hash>-<suffix>`), and recreated when deleted.

use std::hash::{Hash, Hasher};

use serde_json::{Value, json};

use super::api::OperatorApi;
use super::conditions::now;
use super::view::Gateway;
use crate::resources::ResourceType;

/// The container the operator runs strongSwan in.
pub const CONTAINER: &str = "strongswan";
const IMAGE: &str = "ghcr.io/bnerd/strongswan:6.0.1";
/// Kubernetes' alphabet for generated name suffixes.
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The running gateway pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    pub pod: String,
    pub pod_uid: String,
    pub pod_ip: String,
}

fn deployments(store: &dyn OperatorApi) -> Option<ResourceType> {
    store.resource("apps", "v1", "deployments")
}

fn pods(store: &dyn OperatorApi) -> Option<ResourceType> {
    store.resource("", "v1", "pods")
}

fn k8s_suffix(seed: &str, len: usize) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    seed.hash(&mut h);
    let mut x = h.finish();
    (0..len)
        .map(|_| {
            let c = ALPHABET[(x % ALPHABET.len() as u64) as usize] as char;
            x /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

/// The labels the Deployment selects its Pod by.
pub fn selector_labels(gw: &Gateway) -> Value {
    json!({"app.kubernetes.io/name": "strongswan", "app.kubernetes.io/instance": gw.name})
}

fn owner_ref(api_version: &str, kind: &str, name: &str, uid: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": true, "blockOwnerDeletion": true})
}

fn owned_by(obj: &Value, uid: &str) -> bool {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| refs.iter().any(|r| r["uid"] == uid))
}

fn container() -> Value {
    json!({
        "name": CONTAINER,
        "image": IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"name": "ike", "containerPort": 500, "protocol": "UDP"}, {"name": "ike-natt", "containerPort": 4500, "protocol": "UDP"}],
        "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}
    })
}

/// The Deployment's pod template: the container, on the node kwok runs where the API
/// server has no scheduler (the real control plane).
fn template_spec(store: &dyn OperatorApi) -> Value {
    let mut spec = json!({"containers": [container()]});
    if let Some(node) = store.pod_node() {
        spec["nodeName"] = json!(node);
    }
    spec
}

/// On a cluster that runs its own workloads: the Pod the Deployment's ReplicaSet made,
/// once it runs and has an IP. `Err` until then (its watch event wakes the gateway).
fn running_pod(
    store: &dyn OperatorApi,
    pod_rt: &ResourceType,
    gw: &Gateway,
) -> Result<Workload, String> {
    let pods_now = store
        .list(pod_rt, Some(&gw.ns))
        .map_err(|e| format!("listing Pods in {}: {}", gw.ns, e.message))?;
    let labels = selector_labels(gw);
    let ours = |p: &Value| {
        labels.as_object().is_some_and(|l| {
            l.iter()
                .all(|(k, v)| p.pointer("/metadata/labels").and_then(|x| x.get(k)) == Some(v))
        }) && p.pointer("/metadata/deletionTimestamp").is_none()
    };
    let running = pods_now.iter().filter(|p| ours(p)).find_map(|p| {
        let ip = p.pointer("/status/podIP").and_then(Value::as_str)?;
        (p.pointer("/status/phase").and_then(Value::as_str) == Some("Running")).then(|| Workload {
            pod: p
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            pod_uid: p
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            pod_ip: ip.to_string(),
        })
    });
    let w = running
        .ok_or_else(|| format!("Deployment {}/{} has no running Pod yet", gw.ns, gw.name))?;
    store.pod_running(&gw.ns, &w.pod, &w.pod_uid);
    Ok(w)
}

/// Make sure the gateway's Deployment and Pod exist and run. `Err` says why not (the
/// Deployment name is taken by another object, or the store refused).
pub fn ensure(
    store: &dyn OperatorApi,
    gw: &Gateway,
    next_ip: &mut u32,
) -> Result<Workload, String> {
    let (Some(deploy_rt), Some(pod_rt)) = (deployments(store), pods(store)) else {
        return Err("deployments or pods are not served".into());
    };
    let deploy = match store.get(&deploy_rt, &gw.ns, &gw.name) {
        Ok(d) if owned_by(&d, &gw.uid) => d,
        Ok(d) => {
            let owner = d
                .pointer("/metadata/ownerReferences/0")
                .map(|r| {
                    format!(
                        "{} {}",
                        r["kind"].as_str().unwrap_or_default(),
                        r["name"].as_str().unwrap_or_default()
                    )
                })
                .unwrap_or_else(|| "nobody".into());
            return Err(format!(
                "Deployment {}/{} exists and is owned by {owner}",
                gw.ns, gw.name
            ));
        }
        Err(_) => {
            let labels = selector_labels(gw);
            let mut all = labels.clone();
            all["app.kubernetes.io/managed-by"] = json!("bnerd-operator");
            let d = json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": gw.name, "namespace": gw.ns, "labels": all, "ownerReferences": [owner_ref(&gw.kind.api_version(), gw.kind.kind(), &gw.name, &gw.uid)]},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": labels},
                    "strategy": {"type": "Recreate"},
                    "template": {"metadata": {"labels": labels}, "spec": template_spec(store)}
                }
            });
            store
                .create(&deploy_rt, &gw.ns, d)
                .map_err(|e| format!("creating Deployment {}/{}: {}", gw.ns, gw.name, e.message))?
        }
    };
    let deploy_uid = deploy
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let hash = k8s_suffix(&deploy_uid, 10);

    if store.real_workloads() {
        return running_pod(store, &pod_rt, gw);
    }
    let pods_now = store
        .list(&pod_rt, Some(&gw.ns))
        .map_err(|e| format!("listing Pods in {}: {}", gw.ns, e.message))?;
    let pod = match pods_now.into_iter().find(|p| owned_by(p, &deploy_uid)) {
        Some(p) => p,
        None => {
            let mut labels = selector_labels(gw);
            labels["pod-template-hash"] = json!(hash);
            let name = format!(
                "{}-{hash}-{}",
                gw.name,
                k8s_suffix(&uuid::Uuid::new_v4().to_string(), 5)
            );
            let p = json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": gw.ns, "labels": labels, "ownerReferences": [owner_ref("apps/v1", "Deployment", &gw.name, &deploy_uid)]},
                "spec": {"containers": [container()], "nodeName": "sandbox-node", "restartPolicy": "Always"}
            });
            store
                .create(&pod_rt, &gw.ns, p)
                .map_err(|e| format!("creating Pod in {}: {}", gw.ns, e.message))?
        }
    };
    let pod_name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let pod_uid = pod
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let pod_ip = match pod.pointer("/status/podIP").and_then(Value::as_str) {
        Some(ip) => ip.to_string(),
        None => {
            let n = *next_ip;
            *next_ip += 1;
            let ip = format!("10.42.{}.{}", n / 250, n % 250 + 4);
            let t = now();
            let cond = |ty: &str| json!({"type": ty, "status": "True", "lastProbeTime": null, "lastTransitionTime": t});
            let status = json!({
                "phase": "Running",
                "conditions": [cond("PodReadyToStartContainers"), cond("Initialized"), cond("Ready"), cond("ContainersReady"), cond("PodScheduled")],
                "hostIP": "10.0.0.10",
                "hostIPs": [{"ip": "10.0.0.10"}],
                "podIP": ip,
                "podIPs": [{"ip": ip}],
                "startTime": t,
                "qosClass": "BestEffort",
                "containerStatuses": [{
                    "name": CONTAINER, "ready": true, "started": true, "restartCount": 0,
                    "image": IMAGE, "imageID": format!("{IMAGE}@sha256:{}", "0".repeat(64)),
                    "containerID": format!("containerd://{}", pod_uid.replace('-', "")),
                    "state": {"running": {"startedAt": t}}
                }]
            });
            store
                .modify(&pod_rt, &gw.ns, &pod_name, true, &|cur| {
                    let mut p = cur.clone();
                    p["status"] = status.clone();
                    Ok(p)
                })
                .map_err(|e| format!("Pod {}/{pod_name} status: {}", gw.ns, e.message))?;
            ip
        }
    };
    let generation = deploy
        .pointer("/metadata/generation")
        .cloned()
        .unwrap_or(json!(1));
    if deploy.pointer("/status/readyReplicas") != Some(&json!(1))
        || deploy.pointer("/status/observedGeneration") != Some(&generation)
    {
        let t = now();
        let status = json!({
            "observedGeneration": generation,
            "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability.", "lastUpdateTime": t, "lastTransitionTime": t},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": format!("ReplicaSet \"{}-{hash}\" has successfully progressed.", gw.name), "lastUpdateTime": t, "lastTransitionTime": t}
            ]
        });
        store
            .modify(&deploy_rt, &gw.ns, &gw.name, true, &|cur| {
                let mut d = cur.clone();
                d["status"] = status.clone();
                Ok(d)
            })
            .map_err(|e| format!("Deployment {}/{} status: {}", gw.ns, gw.name, e.message))?;
    }
    Ok(Workload {
        pod: pod_name,
        pod_uid,
        pod_ip,
    })
}

/// The deletion unwind's first part: delete the gateway's Pod(s), then its Deployment
/// (only objects it owns). Returns whether anything was left to delete.
pub fn delete(store: &dyn OperatorApi, gw: &Gateway) -> bool {
    let (Some(deploy_rt), Some(pod_rt)) = (deployments(store), pods(store)) else {
        return false;
    };
    let Ok(deploy) = store.get(&deploy_rt, &gw.ns, &gw.name) else {
        return false;
    };
    if !owned_by(&deploy, &gw.uid) {
        return false;
    }
    let deploy_uid = deploy
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    // A cluster's own controllers delete the ReplicaSet and its Pods after the Deployment.
    if !store.real_workloads() {
        let pods_now = store.list(&pod_rt, Some(&gw.ns)).unwrap_or_default();
        for p in pods_now.iter().filter(|p| owned_by(p, &deploy_uid)) {
            let name = p
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let _ = store.delete(&pod_rt, &gw.ns, name);
        }
    }
    let _ = store.delete(&deploy_rt, &gw.ns, &gw.name);
    true
}
