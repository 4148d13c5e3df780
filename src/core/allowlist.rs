//! The operator's approved proposal allowlist (runbook: "Must still be in the approved
//! allowlist (unchanged between groups)").
//!
//! The operator's real list is not public. [`Allowlist::default`] is vpnmig's documented
//! assumption (docs/model.md, "Proposal allowlist"); `vpnmig plan --allowlist FILE`
//! replaces it with the operator's list, a YAML mapping `{ike: [...], esp: [...]}`.
//! Proposals are compared exactly, as whole strings: the new CRDs enforce the list as a
//! case-sensitive `enum`, so `AES256-…` or a padded string would be rejected at apply
//! time, in the middle of the outage.
//!
//! Layer 0 (model, addresses, paths, parsers, YAML): imports nothing above it; see docs/architecture.md.

use schemars::{Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

/// IKE proposals vpnmig assumes the operator approves.
pub const DEFAULT_IKE: &[&str] = &[
    "aes256-sha256-modp2048",
    "aes256-sha256-modp3072",
    "aes256-sha256-ecp256",
    "aes256-sha384-ecp384",
    "aes256-sha512-modp4096",
    "aes128-sha256-modp2048",
    "aes128-sha256-ecp256",
    "aes256gcm16-prfsha256-modp2048",
    "aes256gcm16-prfsha384-ecp384",
    "aes128gcm16-prfsha256-ecp256",
    "aes256gcm16-prfsha512-curve25519",
    "chacha20poly1305-prfsha256-curve25519",
];

/// ESP proposals vpnmig assumes the operator approves.
pub const DEFAULT_ESP: &[&str] = &[
    "aes256gcm16",
    "aes256gcm16-modp2048",
    "aes256gcm16-ecp384",
    "aes256gcm16-curve25519",
    "aes128gcm16-ecp256",
    "aes256-sha256",
    "aes256-sha256-modp2048",
    "aes256-sha384-ecp384",
    "aes128-sha256-modp2048",
    "chacha20poly1305-curve25519",
];

/// An allowlist of whole proposals, per SA type.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Allowlist {
    /// Approved IKE (phase 1) proposals.
    pub ike: Vec<String>,
    /// Approved ESP (CHILD SA) proposals.
    pub esp: Vec<String>,
}

impl Default for Allowlist {
    fn default() -> Self {
        Self {
            ike: DEFAULT_IKE.iter().map(|s| s.to_string()).collect(),
            esp: DEFAULT_ESP.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl Allowlist {
    /// Parse an allowlist file's text (YAML or JSON mapping `{ike: [...], esp: [...]}`).
    ///
    /// Errors: the YAML error text, with the location the parser reports.
    pub fn from_yaml(text: &str) -> Result<Self, serde_saphyr::Error> {
        serde_saphyr::from_str(text)
    }

    /// Whether an IKE proposal is approved.
    pub fn allows_ike(&self, proposal: &str) -> bool {
        contains(&self.ike, proposal)
    }

    /// Whether an ESP proposal is approved.
    pub fn allows_esp(&self, proposal: &str) -> bool {
        contains(&self.esp, proposal)
    }
}

fn contains(list: &[String], proposal: &str) -> bool {
    list.iter().any(|p| p == proposal)
}

fn proposals_schema(allowed: &[&str]) -> Schema {
    json_schema!({
        "type": "array",
        "minItems": 1,
        "items": { "type": "string", "enum": allowed },
        "description": "strongSwan proposals; only the operator's approved allowlist is accepted."
    })
}

/// Schema of `VPNGateway.spec.ipsec.ike.proposals`: the default IKE allowlist as an enum.
pub fn ike_schema(_: &mut SchemaGenerator) -> Schema {
    proposals_schema(DEFAULT_IKE)
}

/// Schema of `VPNPeer.spec.ipsec.esp.proposals`: the default ESP allowlist as an enum.
pub fn esp_schema(_: &mut SchemaGenerator) -> Schema {
    proposals_schema(DEFAULT_ESP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_exactly_like_the_crd_enum() {
        let a = Allowlist::default();
        assert!(a.allows_ike("aes256-sha256-modp2048"));
        assert!(!a.allows_ike("AES256-SHA256-MODP2048"));
        assert!(!a.allows_ike(" aes256-sha256-modp2048 "));
        assert!(!a.allows_ike("aes256-sha256"));
        assert!(a.allows_esp("aes256gcm16"));
        assert!(!a.allows_esp("3des-sha1"));
    }

    #[test]
    fn file_replaces_the_default() {
        let a = Allowlist::from_yaml("ike: [3des-sha1-modp1024]\nesp: [aes128-sha1]\n").unwrap();
        assert!(a.allows_ike("3des-sha1-modp1024"));
        assert!(!a.allows_ike("aes256-sha256-modp2048"));
        assert!(a.allows_esp("aes128-sha1"));
    }

    #[test]
    fn unknown_keys_in_the_file_are_an_error() {
        assert!(Allowlist::from_yaml("ike: []\nesp: []\nah: []\n").is_err());
    }
}
