//! The limits a real API server applies to what a window writes, checked before any
//! change (issue 14 item 8), pure. A limit first met at a journal save after the delete
//! would leave a window that can neither go on nor roll back.
//!
//! Sources (k8s.io/apimachinery validation): object names are DNS-1123 subdomains of at
//! most 253 characters; label values at most 63 characters of `[A-Za-z0-9._-]`, starting
//! and ending alphanumeric; annotations at most 256 KiB in total (`TotalAnnotationSizeLimitB`);
//! a ConfigMap's data at most 1 MiB (`MaxSecretSize`, shared by ConfigMaps).
//!
//! Layer 2 (rules): imports only from layers 0 to 2; see docs/architecture.md.

use serde_json::Value;

use crate::core::finding::{CheckResult, Finding, Severity, finding, result};

/// The most a name of an object vpnmig writes (ConfigMap, Lease, custom resources) may be.
pub const NAME_MAX: usize = 253;
/// The most a label value may be.
pub const LABEL_VALUE_MAX: usize = 63;
/// The most all annotations of one object may be, keys and values together, in bytes.
pub const ANNOTATIONS_MAX: usize = 256 * 1024;
/// The most a ConfigMap's data may be, in bytes.
pub const CONFIGMAP_DATA_MAX: usize = 1024 * 1024;
/// Room the journal keeps for what a window adds after the plan: history entries (each
/// with its hash-chain link), the plan's check verdicts (about 4.5 KiB), the
/// ownerReferences it detaches, target uids, a last error (measured: a full window with
/// a rollback adds under 16 KiB).
pub const JOURNAL_HEADROOM: usize = 64 * 1024;

/// Whether `v` is a valid label value (≤ 63 characters, `[A-Za-z0-9._-]`, alphanumeric at
/// both ends, or empty).
pub fn label_value_ok(v: &str) -> bool {
    v.is_empty()
        || (v.len() <= LABEL_VALUE_MAX
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            && v.starts_with(|c: char| c.is_ascii_alphanumeric())
            && v.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

/// The `vpnmig.bnerd.net/gateway` label of the journal and the lock: the gateway's name
/// when it can be a label value, else none (the name is in the object's own name and
/// annotation; a longer name must not make the lock fail).
pub fn gateway_label(gateway: &str) -> Option<&str> {
    label_value_ok(gateway).then_some(gateway)
}

/// Total size of an object's annotations as the API server counts it (keys + values).
pub fn annotations_size(obj: &Value) -> usize {
    obj.pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .map(|a| {
            a.iter()
                .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
                .sum()
        })
        .unwrap_or(0)
}

/// `api-limits` (blocker): the journal's names and size, and each target's name and
/// annotations, fit what a real API server accepts. `journal_bytes` is the data the
/// cutover's first journal write would hold (`cluster::journal::data_size`).
pub fn check(
    ns: &str,
    gateway: &str,
    targets: &[(String, Value)],
    journal_bytes: usize,
) -> CheckResult {
    let mut out: Vec<Finding> = Vec::new();
    let journal = format!("vpnmig-{gateway}");
    if journal.len() > NAME_MAX {
        out.push(finding(
            &format!("ConfigMap {ns}/{}…", &journal[..40]),
            "metadata.name",
            format!("{} characters", journal.len()),
            format!("at most {NAME_MAX}"),
            format!("the journal ConfigMap and the lock Lease are named vpnmig-{gateway}: longer than a Kubernetes name may be"),
            Some("a gateway name of at most 246 characters; rename is not possible in place: this gateway cannot be cut over by vpnmig".into()),
        ));
    }
    if journal_bytes + JOURNAL_HEADROOM > CONFIGMAP_DATA_MAX {
        out.push(finding(
            &format!("ConfigMap {ns}/{journal}"),
            "data",
            format!("{} KiB (+{} KiB kept for the window)", journal_bytes / 1024, JOURNAL_HEADROOM / 1024),
            format!("at most {} KiB", CONFIGMAP_DATA_MAX / 1024),
            "the journal (the old manifest and the targets, which copy the gateway's annotations) would not fit a ConfigMap: a save during the window would fail, perhaps after the delete",
            Some(format!("shrink the gateway's largest annotations (`kubectl annotate ipsecgateway {gateway} -n {ns} KEY-`), then plan again")),
        ));
    }
    for (label, obj) in targets {
        let (kind, name) = label.split_once('/').unwrap_or((label, ""));
        if name.len() > NAME_MAX {
            out.push(finding(
                &format!("{kind} {ns}/{}…", &name[..40.min(name.len())]),
                "metadata.name",
                format!("{} characters", name.len()),
                format!("at most {NAME_MAX}"),
                "longer than a Kubernetes name may be: the apply would be refused after the old gateway is deleted",
                Some(format!("choose a shorter peer name: `vpnmig plan {gateway} -n {ns} --peer-name TUNNEL=NAME`")),
            ));
        }
        let size = annotations_size(obj);
        if size > ANNOTATIONS_MAX {
            out.push(finding(
                &format!("{kind} {ns}/{name}"),
                "metadata.annotations",
                format!("{size} bytes"),
                format!("at most {ANNOTATIONS_MAX}"),
                "the annotations carried from the old gateway, with vpnmig's migrated-from, exceed what an object may hold: the apply would be refused after the delete",
                Some(format!("shrink the gateway's largest annotations (`kubectl annotate ipsecgateway {gateway} -n {ns} KEY-`), then plan again")),
            ));
        }
    }
    result(
        "api-limits",
        Severity::Blocker,
        "what the window writes fits the API server's limits (names, annotations, the journal's 1 MiB)",
        Ok(out),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_values_follow_kubernetes() {
        assert!(label_value_ok("acme"));
        assert!(label_value_ok("a.b-c_d"));
        assert!(label_value_ok(""));
        assert!(!label_value_ok(&"a".repeat(64)));
        assert!(label_value_ok(&"a".repeat(63)));
        assert!(!label_value_ok("-acme"));
        assert_eq!(gateway_label(&"g".repeat(70)), None);
    }

    #[test]
    fn a_journal_over_a_mib_and_annotations_over_256_kib_block() {
        let big = json!({"metadata": {"annotations": {"notes": "x".repeat(300 * 1024)}}});
        let c = check("t", "acme", &[("VPNPeer/acme".into(), big)], 980 * 1024);
        let fields: Vec<&str> = c.findings.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(fields, ["data", "metadata.annotations"]);
        let ok = check(
            "t",
            "acme",
            &[("VPNPeer/acme".into(), json!({}))],
            100 * 1024,
        );
        assert!(ok.findings.is_empty());
    }

    #[test]
    fn names_too_long_for_a_configmap_or_a_peer_block() {
        let long = "g".repeat(250);
        let c = check(
            "t",
            &long,
            &[(format!("VPNPeer/{long}-main"), json!({}))],
            1000,
        );
        assert_eq!(c.findings.len(), 2, "{:?}", c.findings);
    }
}
