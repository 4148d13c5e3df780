//! The size, name and metadata limits kube-apiserver (v1.32, the version the sandbox
//! reports) and its etcd apply to every write, with the real messages:
//!
//! - object names: a DNS-1123 subdomain (≤ 253 characters, no per-segment limit) for
//!   every kind the sandbox serves except Namespace, whose name is a DNS-1123 label
//!   (≤ 63) — `NameIsDNSSubdomain` / `ValidateNamespaceName` in k8s.io/apimachinery;
//! - labels: keys are qualified names (`IsQualifiedName`), values ≤ 63 characters of
//!   `(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?` (`IsValidLabelValue`);
//! - annotations: keys are qualified names (checked lowercased, as the real server does),
//!   keys + values ≤ 256 KiB in total (`TotalAnnotationSizeLimitB`);
//! - ConfigMap data + binaryData, Secret data: ≤ 1 MiB (`MaxSecretSize`);
//! - the stored object: ≤ 1.5 MiB, etcd's default `--max-request-bytes`;
//! - a request body: ≤ 3 MiB (kube-apiserver's `MaxRequestBodyBytes`), else 413.
//!
//! Where it differs: etcd measures the object as kube-apiserver encodes it (protobuf for
//! built-in kinds, JSON for custom resources) plus a few bytes of request framing; the
//! sandbox measures its own compact JSON, so a built-in object near 1.5 MiB may be
//! refused here a little earlier than on a real cluster.

use serde_json::Value;

use crate::status::{ApiError, Cause};

/// `validation.DNS1123SubdomainMaxLength`.
pub const SUBDOMAIN_MAX: usize = 253;
/// `validation.DNS1123LabelMaxLength`, `qualifiedNameMaxLength`, `LabelValueMaxLength`.
pub const LABEL_MAX: usize = 63;
/// `TotalAnnotationSizeLimitB`: 256 KiB of annotation keys and values.
pub const ANNOTATIONS_MAX: usize = 256 * 1024;
/// `core.MaxSecretSize`: 1 MiB of ConfigMap or Secret data.
pub const DATA_MAX: usize = 1024 * 1024;
/// etcd's default `--max-request-bytes`: 1.5 MiB.
pub const ETCD_REQUEST_MAX: usize = 1024 * 1024 * 3 / 2;
/// kube-apiserver's `MaxRequestBodyBytes`: 3 MiB.
pub const REQUEST_BODY_MAX: usize = 3 * 1024 * 1024;

const SUBDOMAIN_FMT: &str = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// `validation.MaxLenError`: in characters, as kube-apiserver v1.37 says it of names.
fn max_len(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// What kube-apiserver v1.37 says of a label value that is too long: in bytes (seen on the
/// real control plane, tests/sandbox/tests/fidelity.rs).
fn max_bytes(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

/// `validation.RegexError`, with its double space before each further example.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let eg: String = examples
        .iter()
        .map(|e| format!("'{e}', "))
        .collect::<Vec<_>>()
        .join(" or ");
    format!("{msg} (e.g. {eg}regex used for validation is '{fmt}')")
}

/// `field.TooLong`'s detail as of v1.32 (before: "must have at most N bytes").
pub fn too_long(max: usize) -> String {
    format!("Too long: may not be more than {max} bytes")
}

fn is_label_chars(s: &str) -> bool {
    !s.is_empty()
        && s.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// `validation.IsDNS1123Subdomain`: at most 253 characters of dot-separated labels. A
/// segment may be longer than 63: only the whole is bounded.
pub fn dns1123_subdomain(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > SUBDOMAIN_MAX {
        errs.push(max_len(SUBDOMAIN_MAX));
    }
    if !v.split('.').all(is_label_chars) {
        errs.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `validation.IsDNS1123Label`: at most 63 characters.
pub fn dns1123_label(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > LABEL_MAX {
        errs.push(max_len(LABEL_MAX));
    }
    if !is_label_chars(v) && !v.is_empty() && v.split('.').all(is_label_chars) {
        // apimachinery: a valid subdomain that is no label can only have dots.
        errs.push("must not contain dots".into());
    } else if !is_label_chars(v) {
        errs.push(regex_error(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
            LABEL_FMT,
            &["my-name", "123-abc"],
        ));
    }
    errs
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn is_qualified_chars(s: &str) -> bool {
    let edge = |c: char| c.is_ascii_alphanumeric();
    !s.is_empty()
        && s.starts_with(edge)
        && s.ends_with(edge)
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// `validation.IsQualifiedName`: `[prefix/]name`, the prefix a DNS-1123 subdomain, the
/// name at most 63 characters of `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
pub fn qualified_name(v: &str) -> Vec<String> {
    qualified_name_of(v, "a qualified name")
}

/// A label key: a qualified name, named as kube-apiserver v1.37 names it ("a valid label
/// key", seen on the real control plane).
pub fn label_key(v: &str) -> Vec<String> {
    qualified_name_of(v, "a valid label key")
}

fn qualified_name_of(v: &str, what: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = v.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "{what} {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_MSG,
                    QUALIFIED_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".into());
    } else if name.len() > LABEL_MAX {
        errs.push(format!("name part {}", max_len(LABEL_MAX)));
    }
    if !is_qualified_chars(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_MSG,
                QUALIFIED_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `validation.IsValidLabelValue`: empty, or at most 63 characters of the qualified-name
/// alphabet. Dots are allowed anywhere inside; there is no per-segment rule.
pub fn label_value(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > LABEL_MAX {
        errs.push(max_bytes(LABEL_MAX));
    }
    if !v.is_empty() && !is_qualified_chars(v) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            &format!("({QUALIFIED_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

fn invalid(field: &str, value: &str, msg: String) -> Cause {
    Cause {
        reason: "FieldValueInvalid",
        message: format!("Invalid value: \"{value}\": {msg}"),
        field: field.into(),
    }
}

fn too_long_cause(field: &str, max: usize) -> Cause {
    Cause {
        reason: "FieldValueTooLong",
        message: too_long(max),
        field: field.into(),
    }
}

/// The name errors of `ValidateObjectMeta`: a Namespace's name is a DNS-1123 label,
/// every other kind the sandbox serves has DNS-1123 subdomain names.
pub fn name_causes(kind: &str, name: &str) -> Vec<Cause> {
    let errs = if kind == "Namespace" {
        dns1123_label(name)
    } else {
        dns1123_subdomain(name)
    };
    errs.into_iter()
        .map(|m| invalid("metadata.name", name, m))
        .collect()
}

fn string_map(obj: &Value, pointer: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = obj
        .pointer(pointer)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    // Go iterates maps in random order; the sandbox reports in key order.
    v.sort();
    v
}

/// `ValidateLabels` and `ValidateAnnotations` of `ValidateObjectMeta`, in its order.
pub fn metadata_causes(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (k, v) in string_map(obj, "/metadata/labels") {
        for m in label_key(&k) {
            causes.push(invalid("metadata.labels", &k, m));
        }
        for m in label_value(&v) {
            causes.push(invalid("metadata.labels", &v, m));
        }
    }
    let annotations = string_map(obj, "/metadata/annotations");
    for (k, _) in &annotations {
        for m in qualified_name(&k.to_lowercase()) {
            causes.push(invalid("metadata.annotations", k, m));
        }
    }
    let total: usize = annotations.iter().map(|(k, v)| k.len() + v.len()).sum();
    if total > ANNOTATIONS_MAX {
        causes.push(too_long_cause("metadata.annotations", ANNOTATIONS_MAX));
    }
    causes
}

fn decoded_len(s: &str) -> usize {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map(|b| b.len())
        .unwrap_or(s.len())
}

/// `ValidateConfigMap` / `ValidateSecret`'s size rule: the values of ConfigMap `data`
/// plus the decoded values of `binaryData` (field `[]`, the whole object), or the decoded
/// values of Secret `data` (field `data`), at most 1 MiB. Keys do not count.
pub fn data_causes(kind: &str, obj: &Value) -> Vec<Cause> {
    let values = |p: &str| -> Vec<String> {
        obj.pointer(p)
            .and_then(Value::as_object)
            .map(|m| {
                m.values()
                    .map(|v| v.as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let (total, field) = match kind {
        "ConfigMap" => (
            values("/data").iter().map(String::len).sum::<usize>()
                + values("/binaryData")
                    .iter()
                    .map(|v| decoded_len(v))
                    .sum::<usize>(),
            "[]",
        ),
        "Secret" => (values("/data").iter().map(|v| decoded_len(v)).sum(), "data"),
        _ => return Vec::new(),
    };
    if total > DATA_MAX {
        vec![too_long_cause(field, DATA_MAX)]
    } else {
        Vec::new()
    }
}

/// etcd refuses a write of more than 1.5 MiB; kube-apiserver passes its error on as an
/// internal error with no reason: `500`, `etcdserver: request is too large`.
pub fn check_stored_size(obj: &Value) -> Result<(), ApiError> {
    let size = serde_json::to_vec(obj).map(|b| b.len()).unwrap_or(0);
    if size > ETCD_REQUEST_MAX {
        return Err(ApiError::new(500, "", "etcdserver: request is too large"));
    }
    Ok(())
}

/// kube-apiserver reads at most 3 MiB of a request body: `413 RequestEntityTooLarge`,
/// `Request entity too large: limit is 3145728`.
pub fn check_body(body: &[u8]) -> Result<(), ApiError> {
    if body.len() > REQUEST_BODY_MAX {
        return Err(ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {REQUEST_BODY_MAX}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subdomains_bound_the_whole_not_each_segment() {
        let long_segment = format!("{}.example.com", "a".repeat(100));
        assert!(dns1123_subdomain(&long_segment).is_empty());
        assert_eq!(
            dns1123_subdomain(&"a".repeat(254)),
            ["must be no more than 253 characters"]
        );
        assert_eq!(
            dns1123_subdomain("Acme"),
            [
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(
            dns1123_label(&"a".repeat(64)),
            ["must be no more than 63 characters"]
        );
        assert_eq!(dns1123_label("a.b"), ["must not contain dots"]);
    }

    #[test]
    fn qualified_names_and_label_values_follow_apimachinery() {
        for ok in [
            "simple",
            "UpperCase123",
            "now.with.dots/simple",
            "1.2.3.4/5678",
            "vpn.bnerd.net/migrated-from",
        ] {
            assert!(qualified_name(ok).is_empty(), "{ok}");
        }
        assert_eq!(qualified_name("only/one/slash").len(), 1);
        assert_eq!(
            qualified_name(&"a".repeat(64)),
            ["name part must be no more than 63 characters"]
        );
        assert_eq!(qualified_name("/x"), ["prefix part must be non-empty"]);
        assert_eq!(
            qualified_name("cantendwithadash-"),
            [
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ]
        );
        // Label values: empty is fine, dots anywhere inside, 63 at most overall.
        for ok in [
            "",
            "a",
            "a.b.c",
            "A_b-c.D",
            &"x".repeat(63),
            &format!("{}.b", "a".repeat(61)),
        ] {
            assert!(label_value(ok).is_empty(), "{ok}");
        }
        assert_eq!(
            label_value(&"a".repeat(64)),
            ["must be no more than 63 bytes"]
        );
        assert_eq!(
            label_value("-x"),
            [
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
            ]
        );
    }

    #[test]
    fn data_counts_values_not_keys_and_decodes_binary() {
        let cm = |n: usize| serde_json::json!({"data": {"k": "x".repeat(n)}});
        assert!(data_causes("ConfigMap", &cm(DATA_MAX)).is_empty());
        let c = data_causes("ConfigMap", &cm(DATA_MAX + 1));
        assert_eq!(
            (c[0].field.as_str(), c[0].message.as_str()),
            ("[]", "Too long: may not be more than 1048576 bytes")
        );
        assert!(data_causes("Lease", &cm(DATA_MAX + 1)).is_empty());
    }
}
