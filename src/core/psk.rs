//! The PSK Secret, as far as a plan may look at it (DESIGN.md §4.2: "the PSK is never
//! lost or exposed"): whether it exists, has the referenced key, and would be
//! garbage-collected with the old gateway. Its value is only ever turned into a SHA-256
//! fingerprint, to prove later that the Secret still holds the same key.

use base64::Engine;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::core::model::IPsecGateway;

/// The Secret `name` in `namespace` among `secrets`, if present. A Secret without a
/// namespace matches any (a hand-written file).
pub fn find<'a>(secrets: &'a [Value], namespace: Option<&str>, name: &str) -> Option<&'a Value> {
    secrets.iter().find(|s| {
        s.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
            && match (
                s.pointer("/metadata/namespace").and_then(Value::as_str),
                namespace,
            ) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    })
}

/// The bytes stored under `key` (`data` is base64, `stringData` plain). `None` when the
/// key is absent or `data` is not base64.
pub fn value(secret: &Value, key: &str) -> Option<Vec<u8>> {
    if let Some(s) = secret
        .pointer("/stringData")
        .and_then(|d| d.get(key))
        .and_then(Value::as_str)
    {
        return Some(s.as_bytes().to_vec());
    }
    let b64 = secret
        .pointer("/data")
        .and_then(|d| d.get(key))
        .and_then(Value::as_str)?;
    base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()
}

/// The keys the Secret holds (names only: never values).
pub fn keys(secret: &Value) -> Vec<String> {
    let mut keys: Vec<String> = ["/data", "/stringData"]
        .iter()
        .filter_map(|p| secret.pointer(p).and_then(Value::as_object))
        .flat_map(|o| o.keys().cloned())
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// `sha256:<hex>` of a PSK, salted with where it lives: SHA-256 over
/// `vpnmig-psk-v1\n<namespace>/<secret>/<key>\n` followed by the key's bytes. The same
/// Secret keeps its fingerprint across a cutover (what rollback and verification compare);
/// the salt keeps plans from telling that two tenants share a key and defeats precomputed
/// tables. A weak PSK can still be guessed from it offline, so plans stay internal.
pub fn fingerprint(namespace: &str, secret: &str, key: &str, bytes: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(format!("vpnmig-psk-v1\n{namespace}/{secret}/{key}\n").as_bytes());
    h.update(bytes);
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The ownerReference that would let the Secret be garbage-collected with `gateway`:
/// one naming its uid, or (uid unknown) its kind and name, or one of the children the
/// operator deletes in the gateway's unwind (Deployment `<gateway>`, its ReplicaSets and
/// Pods `<gateway>-…`). Returns `kind name`.
pub fn owner_is_gateway(secret: &Value, gateway: &IPsecGateway) -> Option<String> {
    let refs = secret
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?;
    let uid = gateway.metadata.uid.as_deref();
    let name = gateway.metadata.name.as_deref();
    refs.iter()
        .find(|r| {
            let s = |k: &str| r.get(k).and_then(Value::as_str);
            let child = matches!(s("kind"), Some("Deployment" | "ReplicaSet" | "Pod"))
                && name.is_some_and(|n| {
                    s("name").is_some_and(|o| o == n || o.starts_with(&format!("{n}-")))
                });
            child
                || match (uid, s("uid")) {
                    (Some(u), Some(ru)) => u == ru,
                    _ => s("kind") == Some("IPsecGateway") && s("name") == name,
                }
        })
        .map(|r| {
            format!(
                "{} {}",
                r["kind"].as_str().unwrap_or("?"),
                r["name"].as_str().unwrap_or("?")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_data_and_string_data() {
        let s = json!({"data": {"psk": "c2VjcmV0"}, "stringData": {"other": "plain"}});
        assert_eq!(value(&s, "psk"), Some(b"secret".to_vec()));
        assert_eq!(value(&s, "other"), Some(b"plain".to_vec()));
        assert_eq!(value(&s, "missing"), None);
        assert_eq!(keys(&s), ["other", "psk"]);
    }

    #[test]
    fn fingerprints_are_salted_sha256() {
        // printf 'vpnmig-psk-v1\nt/acme-psk/psk\nsecret' | sha256sum
        assert_eq!(
            fingerprint("t", "acme-psk", "psk", b"secret"),
            "sha256:c6d1e508460766248d5ab6b45994c44c258f80f7adc61f185d2dac45b093aa74"
        );
        assert_ne!(
            fingerprint("t", "acme-psk", "psk", b"secret"),
            fingerprint("u", "acme-psk", "psk", b"secret"),
            "tenants sharing a key do not show it"
        );
    }
}
