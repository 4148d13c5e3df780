//! Fingerprints of JSON values: `sha256:<hex>` of the value as canonical JSON, so that
//! two specs that differ only in key order have one fingerprint (the plan's source, the
//! journal's hash chain, the scope's "same as recorded"). Pure.
//!
//! Layer 1 (translation and fingerprints): imports only from layers 0 to 1; see docs/architecture.md.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::core::yaml::canonical;

/// `sha256:<hex>` of `v` as canonical JSON: object keys sorted at every level, no
/// whitespace. Equal specs give equal fingerprints whatever the key order of the input.
pub fn fingerprint(v: &Value) -> String {
    let canonical = serde_json::to_vec(&canonical(v)).expect("JSON values serialize");
    let digest = Sha256::digest(&canonical);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fingerprint_ignores_key_order_but_not_values() {
        let a = fingerprint(&json!({"a": 1, "b": {"c": [1, 2], "d": "x"}}));
        let b = fingerprint(&json!({"b": {"d": "x", "c": [1, 2]}, "a": 1}));
        let c = fingerprint(&json!({"b": {"d": "x", "c": [2, 1]}, "a": 1}));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.starts_with("sha256:") && a.len() == 7 + 64);
    }

    #[test]
    fn fingerprint_of_a_known_value() {
        // printf '{"a":1}' | sha256sum
        assert_eq!(
            fingerprint(&json!({"a": 1})),
            "sha256:015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
        );
    }
}
