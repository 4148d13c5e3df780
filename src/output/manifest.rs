//! Manifests as YAML, the way kubectl users read and apply them.

use serde::Serialize;
use serde_json::Value;

use crate::core::plan::Plan;

/// One object as a YAML document (no leading `---`).
pub fn to_yaml<T: Serialize>(obj: &T) -> String {
    let v = serde_json::to_value(obj).expect("manifests serialize to JSON");
    serde_saphyr::to_string(&v).expect("JSON values serialize to YAML")
}

/// One object as YAML with keys sorted at every level: what diffs compare, so that key
/// order (the server sorts, vpnmig writes in schema order) never shows as a change.
pub fn to_yaml_sorted(obj: &Value) -> String {
    to_yaml(&crate::core::plan::canonical(obj))
}

/// Several objects as one multi-document YAML stream, `---` between documents.
pub fn to_yaml_stream<T: Serialize>(objs: &[T]) -> String {
    objs.iter().map(to_yaml).collect::<Vec<_>>().join("---\n")
}

/// The plan's targets: the VPNGateway then every VPNPeer, as `(Kind/name, object)`.
pub fn targets(plan: &Plan) -> Vec<(String, Value)> {
    plan.targets.objects()
}

/// `Kind/name` of any object value.
pub fn label_of(v: &Value) -> String {
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("?");
    let name = v
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("?");
    format!("{kind}/{name}")
}
