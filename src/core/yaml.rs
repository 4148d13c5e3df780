//! Objects as YAML: the encoding of the manifests the journal keeps and the drift
//! compares, and JSON values in canonical key order (what the drift compares and
//! `core::fingerprint` hashes). Pure (values to text); the renderers in `src/output/`
//! re-export it.
//!
//! Layer 0 (model, addresses, paths, parsers, YAML): imports nothing above it; see docs/architecture.md.

use serde::Serialize;
use serde_json::{Map, Value};

/// One object as a YAML document (no leading `---`).
pub fn to_yaml<T: Serialize>(obj: &T) -> String {
    let v = serde_json::to_value(obj).expect("manifests serialize to JSON");
    serde_saphyr::to_string(&v).expect("JSON values serialize to YAML")
}

/// One object as YAML with keys sorted at every level: what diffs compare, so that key
/// order (the server sorts, vpnmig writes in schema order) never shows as a change.
pub fn to_yaml_sorted(obj: &Value) -> String {
    to_yaml(&canonical(obj))
}

/// `v` with object keys sorted at every level.
pub fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&o[k])))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}
