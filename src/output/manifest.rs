//! Manifests as YAML, the way kubectl users read and apply them.

use serde::Serialize;
use serde_json::Value;

use crate::core::plan::Plan;

pub use crate::core::yaml::{to_yaml, to_yaml_sorted};

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
