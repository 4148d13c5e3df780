//! A migration plan: the translation, its field report, the checks and what identifies
//! the source, assembled from a [`Source`]. Pure. Serialized as `plan.json` and as the
//! output of `vpnmig plan -o json`; the schema is documented in docs/plan-json.md and
//! versioned by [`PLAN_API_VERSION`].
//!
//! Layer 3 (the plan): imports only from layers 0 to 3; see docs/architecture.md.

use serde::Serialize;
use serde_json::Value;

use crate::core::allowlist::Allowlist;
use crate::core::checks::{self, Inputs};
use crate::core::finding::{CheckResult, Outcome, Severity};
use crate::core::fingerprint::fingerprint;
use crate::core::input::Source;
use crate::core::model::CLEANED_METADATA;
use crate::core::psk;
use crate::core::report::{FieldRow, field_report};
use crate::core::translate::Targets;

/// Schema identifier written into every plan; bumped on incompatible changes.
pub const PLAN_API_VERSION: &str = "vpnmig.bnerd.net/plan/v1";

/// What the plan was made from: enough to detect drift before a cutover (DESIGN.md §4.4).
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SourceInfo {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub generation: Option<i64>,
    /// `sha256:<hex>` of the spec as canonical JSON (keys sorted, no whitespace).
    pub spec_fingerprint: String,
    /// `sha256:<hex>` of the PSK, when the Secret was part of the input (never the value).
    pub psk_fingerprint: Option<String>,
    /// Where it was read from: a file and document, or a cluster.
    pub origin: String,
}

/// The plan document.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// Always [`PLAN_API_VERSION`].
    pub api_version: &'static str,
    /// vpnmig's version that made the plan.
    pub tool_version: &'static str,
    pub source: SourceInfo,
    /// True when any blocker check failed: a cutover must not run.
    pub blocked: bool,
    /// Live plans only: the VPNGateway and VPNPeers already exist exactly as planned.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub already_migrated: bool,
    pub summary: Summary,
    pub fields: Vec<FieldRow>,
    pub checks: Vec<CheckResult>,
    pub targets: Targets,
    /// Peer names chosen with `--peer-name TUNNEL=NAME` (tunnel → VPNPeer name), instead
    /// of the derived ones; a cutover from this plan uses the same.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub peer_names: std::collections::BTreeMap<String, String>,
}

/// Counts for people and scripts.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub blockers: usize,
    pub warnings: usize,
    pub pinned: usize,
    pub copied: usize,
    pub derived: usize,
    pub not_carried: usize,
    pub unknown: usize,
}

/// Translate, report and check `source` against `allowlist`, with peer names chosen for
/// some tunnels (`core::translate::translate_named`). Every check but `api-limits`, which
/// measures the journal the window would write: `core::full_plan::build` adds it, and is
/// what commands call.
pub fn assemble(
    source: &Source,
    allowlist: &Allowlist,
    peer_names: &std::collections::BTreeMap<String, String>,
) -> Plan {
    let targets = crate::core::translate::translate_named(&source.gateway, peer_names);
    let fields = field_report(&source.raw, &source.gateway, &targets);
    let checks = checks::run(&Inputs {
        source,
        targets: &targets,
        fields: &fields,
        allowlist,
    });
    let meta = &source.gateway.metadata;
    let count = |r| fields.iter().filter(|f| f.rule == r).count();
    use crate::core::report::Rule;
    let summary = Summary {
        blockers: checks.iter().filter(|c| c.blocks()).count(),
        warnings: checks
            .iter()
            .filter(|c| c.severity == Severity::Warning && c.outcome == Outcome::Fail)
            .count(),
        pinned: count(Rule::Pinned),
        copied: count(Rule::Copied),
        derived: count(Rule::Derived),
        not_carried: count(Rule::NotCarried),
        unknown: count(Rule::Unknown),
    };
    Plan {
        api_version: PLAN_API_VERSION,
        tool_version: env!("CARGO_PKG_VERSION"),
        source: SourceInfo {
            api_version: source
                .raw
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            kind: "IPsecGateway".into(),
            namespace: meta.namespace.clone(),
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
            generation: meta.generation,
            spec_fingerprint: fingerprint(source.raw.get("spec").unwrap_or(&Value::Null)),
            psk_fingerprint: {
                let r = &source.gateway.spec.auth.psk_secret_ref;
                psk::find(&source.secrets, meta.namespace.as_deref(), &r.name).and_then(|s| {
                    psk::fingerprint_like(
                        None,
                        meta.namespace.as_deref().unwrap_or_default(),
                        &r.name,
                        &r.key,
                        s,
                    )
                })
            },
            origin: source.origin.to_string(),
        },
        blocked: summary.blockers > 0,
        already_migrated: false,
        summary,
        fields,
        checks,
        targets,
        peer_names: peer_names.clone(),
    }
}

/// The old object, verbatim but for `status`, the server-set metadata in
/// [`CLEANED_METADATA`] and the last-applied annotation: what rollback re-applies. Never
/// translated back from the new kinds. Unknown spec fields are kept.
pub fn clean_old_manifest(raw: &Value) -> Value {
    let mut v = raw.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("status");
    }
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in CLEANED_METADATA {
            meta.remove(*k);
        }
        if let Some(ann) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            // Only kubectl's record goes: Helm/Argo CD markers stay, so a rollback gives
            // the old object back to the tool that managed it.
            ann.remove(crate::core::translate::LAST_APPLIED);
            if ann.is_empty() {
                meta.remove("annotations");
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cleaning_keeps_spec_and_user_metadata() {
        let raw = json!({
            "apiVersion": "ipsec.bnerd.net/v1alpha1", "kind": "IPsecGateway",
            "metadata": {"name": "acme", "namespace": "t", "uid": "u", "resourceVersion": "1",
                "generation": 2, "finalizers": ["ipsec.bnerd.net/cleanup"], "managedFields": [],
                "labels": {"client": "acme"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "spec": {"x": {"y": 1}}, "status": {"serviceCIDR": "10.0.0.0/24"}
        });
        assert_eq!(
            clean_old_manifest(&raw),
            json!({
                "apiVersion": "ipsec.bnerd.net/v1alpha1", "kind": "IPsecGateway",
                "metadata": {"name": "acme", "namespace": "t", "labels": {"client": "acme"}},
                "spec": {"x": {"y": 1}}
            })
        );
    }
}
