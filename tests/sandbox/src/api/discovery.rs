//! Discovery: `/version`, `/api`, `/apis`, per-group and per-group-version documents, and
//! the aggregated form (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`) that kubectl
//! asks for first.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::resources::ResourceType;

/// The media type of aggregated discovery, as negotiated by `Accept`.
pub const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether the client asked for aggregated discovery.
pub fn wants_aggregated(accept: &str) -> bool {
    accept.split(',').any(|a| {
        a.contains("as=APIGroupDiscoveryList") && a.contains("v=v2") && !a.contains("v2beta1")
    })
}

pub fn version() -> Value {
    json!({
        "major": "1", "minor": "32", "gitVersion": "v1.32.0-vpnmig-sandbox", "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23", "compiler": "gc", "platform": "linux/amd64"
    })
}

/// `/api`.
pub fn core_versions(addr: &str) -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr}]})
}

/// Groups (without the core group) with their versions, preferred first.
fn groups(types: &[ResourceType]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for t in types.iter().filter(|t| !t.group.is_empty()) {
        let v = out.entry(t.group.clone()).or_default();
        if !v.contains(&t.version) {
            v.push(t.version.clone());
        }
    }
    out
}

fn group_doc(group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({"name": group, "versions": vs, "preferredVersion": vs[0]})
}

/// `/apis`.
pub fn group_list(types: &[ResourceType]) -> Value {
    let groups: Vec<Value> = groups(types)
        .iter()
        .map(|(g, vs)| group_doc(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`.
pub fn group(types: &[ResourceType], group: &str) -> Option<Value> {
    let gs = groups(types);
    let mut doc = group_doc(group, gs.get(group)?);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

/// `/api/v1` or `/apis/{group}/{version}`.
pub fn resource_list(types: &[ResourceType], group: &str, version: &str) -> Option<Value> {
    let matching: Vec<&ResourceType> = types
        .iter()
        .filter(|t| t.group == group && t.version == version)
        .collect();
    if matching.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let resources: Vec<Value> = matching
        .iter()
        .flat_map(|t| t.discovery_entries())
        .collect();
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

/// Aggregated discovery for the core group (`core = true`, `/api`) or all others (`/apis`).
pub fn aggregated(types: &[ResourceType], core: bool) -> Value {
    let mut by_group: BTreeMap<String, BTreeMap<String, Vec<&ResourceType>>> = BTreeMap::new();
    for t in types.iter().filter(|t| t.group.is_empty() == core) {
        by_group
            .entry(t.group.clone())
            .or_default()
            .entry(t.version.clone())
            .or_default()
            .push(t);
    }
    let items: Vec<Value> = by_group
        .iter()
        .map(|(g, versions)| {
            let vs: Vec<Value> = versions
                .iter()
                .map(|(v, ts)| {
                    let resources: Vec<Value> = ts
                        .iter()
                        .map(|t| {
                            let mut subs = Vec::new();
                            if t.status_subresource {
                                subs.push(json!({"subresource": "status", "responseKind": {"group": t.group, "version": t.version, "kind": t.kind}, "verbs": ["get", "patch", "update"]}));
                            }
                            for s in &t.subresources {
                                subs.push(json!({"subresource": s, "responseKind": {"group": "", "version": "v1", "kind": "PodExecOptions"}, "verbs": ["create", "get"]}));
                            }
                            let mut r = json!({
                                "resource": t.plural,
                                "responseKind": {"group": t.group, "version": t.version, "kind": t.kind},
                                "scope": if t.namespaced { "Namespaced" } else { "Cluster" },
                                "singularResource": t.singular,
                                "verbs": t.verbs,
                            });
                            if !t.short_names.is_empty() {
                                r["shortNames"] = json!(t.short_names);
                            }
                            if !subs.is_empty() {
                                r["subresources"] = json!(subs);
                            }
                            r
                        })
                        .collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            json!({"metadata": {"name": g, "creationTimestamp": null}, "versions": vs})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}
