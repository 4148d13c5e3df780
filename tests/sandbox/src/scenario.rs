//! Scenarios: multi-document YAML of ordinary manifests (Namespaces, Secrets, CRDs,
//! IPsecGateways, VPNGateways, VPNPeers, … and `kind: List`s) loaded into a store as if
//! they had been applied: CRDs first, then Namespaces, then the rest in file order.
//! Objects keep their `status` and `uid`, since scenarios are often `kubectl get -o yaml`
//! exports whose ownerReferences name those uids.

use serde_json::{Value, json};

use crate::status::ApiError;
use crate::store::{Store, WriteOptions};

/// Why a scenario could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("not valid YAML: {0}")]
    Yaml(String),
    #[error("document {doc}: {kind} is not a kind the sandbox serves (load its CRD first)")]
    UnknownKind { doc: usize, kind: String },
    #[error("document {doc} ({what}): {source}")]
    Rejected {
        doc: usize,
        what: String,
        #[source]
        source: Box<ApiError>,
    },
}

/// Parse scenario text into its objects (Lists expanded), within vpnmig's own input
/// limits (`vpnmig::core::input::LIMITS_TEXT`: fleet-sized, 20,000 gateways and more),
/// so a scenario is refused beyond them with the limit named.
pub fn parse(text: &str) -> Result<Vec<Value>, ScenarioError> {
    let docs: Vec<Value> = vpnmig::core::input::parse_documents(text, "scenario")
        .map_err(|e| ScenarioError::Yaml(e.to_string()))?;
    let mut out = Vec::new();
    for d in docs.into_iter().filter(|d| d.is_object()) {
        match d.get("items").and_then(Value::as_array) {
            Some(items) if d["kind"].as_str().is_some_and(|k| k.ends_with("List")) => {
                out.extend(items.iter().cloned())
            }
            _ => out.push(d),
        }
    }
    Ok(out)
}

fn s<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or_default()
}

/// Load objects into the store. Returns the first tenant namespace: the first Namespace
/// the scenario defines (or the first namespace an object uses), `default` if none.
pub fn load(store: &Store, objects: &[Value]) -> Result<String, ScenarioError> {
    let rank = |o: &Value| match s(o, "/kind") {
        "CustomResourceDefinition" => 0,
        "Namespace" => 1,
        _ => 2,
    };
    let mut ordered: Vec<(usize, &Value)> = objects.iter().enumerate().collect();
    ordered.sort_by_key(|(i, o)| (rank(o), *i));
    let ns_type = store
        .resource("", "v1", "namespaces")
        .expect("namespaces are built in");
    let opts = WriteOptions {
        keep_status: true,
        ..WriteOptions::default()
    };
    for ns in ["default", "kube-system"] {
        let _ = store.create(&ns_type, "", json!({"metadata": {"name": ns}}), &opts);
    }
    // The operator's CRDs are installed like in any cluster running operator v0.3.0,
    // unless the scenario brings its own.
    let crd_type = store
        .resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .expect("CRDs are built in");
    for crd in vpnmig::core::model::crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let brought = objects
            .iter()
            .any(|o| s(o, "/kind") == "CustomResourceDefinition" && s(o, "/metadata/name") == name);
        if !brought {
            let v = serde_json::to_value(&crd).expect("CRDs serialize");
            store
                .create(&crd_type, "", v, &opts)
                .map_err(|source| ScenarioError::Rejected {
                    doc: 0,
                    what: format!("built-in CRD {name}"),
                    source: Box::new(source),
                })?;
        }
    }
    let mut first_tenant = None;
    for (i, obj) in ordered {
        let doc = i + 1;
        let kind = s(obj, "/kind").to_string();
        let rt = store
            .resource_for_kind(s(obj, "/apiVersion"), &kind)
            .ok_or_else(|| ScenarioError::UnknownKind {
                doc,
                kind: format!("{} {kind}", s(obj, "/apiVersion")),
            })?;
        let ns = if rt.namespaced {
            Some(s(obj, "/metadata/namespace").to_string())
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "default".into())
        } else {
            String::new()
        };
        if kind == "Namespace"
            && first_tenant.is_none()
            && !matches!(s(obj, "/metadata/name"), "default" | "kube-system")
        {
            first_tenant = Some(s(obj, "/metadata/name").to_string());
        }
        if rt.namespaced {
            if store.get(&ns_type, "", &ns).is_err() {
                let _ = store.create(&ns_type, "", json!({"metadata": {"name": ns}}), &opts);
            }
            if first_tenant.is_none() && ns != "default" {
                first_tenant = Some(ns.clone());
            }
        }
        let mut clean = obj.clone();
        if let Some(m) = clean.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in [
                "resourceVersion",
                "managedFields",
                "creationTimestamp",
                "generation",
                "selfLink",
            ] {
                m.remove(k);
            }
        }
        let what = format!("{kind} {}", s(obj, "/metadata/name"));
        match store.create(&rt, &ns, clean, &opts) {
            Ok(_) => {}
            Err(e) if e.code == 409 && kind == "Namespace" => {}
            Err(source) => {
                return Err(ScenarioError::Rejected {
                    doc,
                    what,
                    source: Box::new(source),
                });
            }
        }
    }
    Ok(first_tenant.unwrap_or_else(|| "default".into()))
}
