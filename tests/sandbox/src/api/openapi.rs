//! OpenAPI v3, as much as kubectl needs: the root index and one document per
//! group-version whose PATCH operations carry `x-kubernetes-group-version-kind` and the
//! `fieldValidation` parameter, so kubectl validates on the server (`fieldValidation=
//! Strict`) instead of downloading schemas; CRD schemas for `kubectl explain`.

use serde_json::{Map, Value, json};

use crate::resources::ResourceType;

fn gv_path(t: &ResourceType) -> String {
    if t.group.is_empty() {
        format!("api/{}", t.version)
    } else {
        format!("apis/{}/{}", t.group, t.version)
    }
}

/// `/openapi/v3`: where each group-version's document is.
pub fn root(types: &[ResourceType]) -> Value {
    let mut paths = Map::new();
    for t in types {
        let p = gv_path(t);
        paths.insert(
            p.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash=sandbox")}),
        );
    }
    json!({"paths": paths})
}

fn schema_name(t: &ResourceType) -> String {
    let reversed: Vec<&str> = t.group.split('.').rev().collect();
    let prefix = if t.group.is_empty() {
        "io.k8s.api.core".to_string()
    } else {
        reversed.join(".")
    };
    format!("{prefix}.{}.{}", t.version, t.kind)
}

/// `/openapi/v3/api/v1` or `/openapi/v3/apis/{group}/{version}`.
pub fn group_version(types: &[ResourceType], gv: &str) -> Option<Value> {
    let matching: Vec<&ResourceType> = types.iter().filter(|t| gv_path(t) == gv).collect();
    if matching.is_empty() {
        return None;
    }
    let param = |name: &str| json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}});
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for t in matching {
        let gvk = json!({"group": t.group, "version": t.version, "kind": t.kind});
        let op = |verb: &str, params: Vec<Value>| {
            json!({
                "operationId": format!("{verb}{}", t.kind),
                "x-kubernetes-action": verb,
                "x-kubernetes-group-version-kind": gvk,
                "parameters": params,
                "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{}", schema_name(t))}}}}}
            })
        };
        let writes = || {
            vec![
                param("dryRun"),
                param("fieldManager"),
                param("fieldValidation"),
            ]
        };
        let mut patch_params = writes();
        patch_params.push(param("force"));
        let base = if t.namespaced {
            format!("/{}/namespaces/{{namespace}}/{}", gv_path(t), t.plural)
        } else {
            format!("/{}/{}", gv_path(t), t.plural)
        };
        paths.insert(
            base.clone(),
            json!({"get": op("list", vec![]), "post": op("post", writes())}),
        );
        paths.insert(format!("{base}/{{name}}"), json!({"get": op("get", vec![]), "put": op("put", writes()), "patch": op("patch", patch_params), "delete": op("delete", vec![param("dryRun")])}));
        let mut schema = t.schema.clone().unwrap_or_else(
            || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        );
        schema["x-kubernetes-group-version-kind"] = json!([gvk]);
        schemas.insert(schema_name(t), schema);
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0-vpnmig-sandbox"},
        "paths": paths,
        "components": {"schemas": schemas}
    }))
}
