//! Objects as YAML: the encoding of the manifests the journal keeps and the drift
//! compares. Pure (values to text); `output::manifest` re-exports it for the renderers.

use serde::Serialize;
use serde_json::Value;

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
