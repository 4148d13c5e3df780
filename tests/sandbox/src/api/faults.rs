//! API fault knobs: errors on chosen verbs/resources (429 with Retry-After, 500, 503),
//! added latency, and watch connections dropped. Settable in the settings file and at
//! run time (`Sandbox::api_faults`). Validating admission webhooks live here too
//! (`api.webhooks`): they are the other way a real API server refuses a write.

use serde::{Deserialize, Serialize};

use crate::status::ApiError;

/// Fail matching requests with `code`, `times` times (absent: until removed).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ErrorRule {
    /// Verbs (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`; `*` = any).
    pub verbs: Vec<String>,
    /// Resources (`plural` or `plural/subresource`; `*` = any).
    pub resources: Vec<String>,
    /// 429, 500 or 503.
    pub code: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,
    /// Seconds for `Retry-After` (429 and 503).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u64>,
}

/// All API fault knobs.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiFaults {
    #[serde(default)]
    pub errors: Vec<ErrorRule>,
    /// Added to every request, in milliseconds.
    #[serde(default)]
    pub latency_ms: u64,
    /// Close every watch stream this many milliseconds after it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop_watches_after_ms: Option<u64>,
    /// Validating admission webhooks, consulted on writes in list order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub webhooks: Vec<Webhook>,
}

/// `sideEffects` of a webhook configuration (admissionregistration.k8s.io/v1).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub enum SideEffects {
    #[default]
    None,
    NoneOnDryRun,
    Some,
    Unknown,
}

/// A validating admission webhook, answered in process: what kube-apiserver's
/// dispatcher makes of a `ValidatingWebhookConfiguration` entry.
///
/// ```yaml
/// api:
///   webhooks:
///   - {name: vpngateway-policy.example.net, resources: [vpngateways, vpnpeers],
///      verbs: [create, update, patch], sideEffects: Unknown}
///   - {name: deny.example.net, resources: [vpnpeers], verbs: [patch], deny: true,
///      message: "peers are frozen"}
///   - {name: flux-annotations.example.net, resources: [configmaps], verbs: [patch],
///      deny: true, annotations: [kustomize.toolkit.fluxcd.io/prune]}   # only writes setting it
/// ```
///
/// A request that matches (verb and resource, `*` = any) is refused as the real server
/// does: a dry run (`dryRun=All`) with sideEffects `Some` or `Unknown` is 400
/// BadRequest `admission webhook "NAME" does not support dry run` (the webhook is not
/// called); otherwise a webhook with `deny` refuses with 403 Forbidden `admission
/// webhook "NAME" denied the request: MESSAGE` (dry runs included: the webhook is called
/// for them when it declares None/NoneOnDryRun). Verbs are the request's own: `patch`
/// (server-side apply included) is matched by `patch`, not by `update` or `create`.
/// Simplification: the sandbox consults webhooks before the object is validated and
/// looked up, the real server after (a 404 or 422 would come first there).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Webhook {
    pub name: String,
    /// Resources (`plural` or `plural/subresource`; `*` = any).
    pub resources: Vec<String>,
    /// Verbs (`create`, `update`, `patch`, `delete`; `*` = any).
    pub verbs: Vec<String>,
    #[serde(default)]
    pub side_effects: SideEffects,
    /// Refuse every matching request it is called for.
    #[serde(default)]
    pub deny: bool,
    /// The webhook's reason for a denial.
    #[serde(default)]
    pub message: Option<String>,
    /// Only a write whose body sets one of these annotations (a policy on them, as a
    /// Kyverno `metadata.annotations` pattern refuses them); empty: every write.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotations: Vec<String>,
}

impl Webhook {
    fn matches(&self, verb: &str, resource: &str, body: &[u8]) -> bool {
        let any = |list: &[String], x: &str| list.iter().any(|v| v == "*" || v == x);
        any(&self.verbs, verb)
            && any(&self.resources, resource)
            && (self.annotations.is_empty() || {
                let doc: serde_json::Value = serde_json::from_slice(body)
                    .ok()
                    .or_else(|| {
                        std::str::from_utf8(body)
                            .ok()
                            .and_then(|t| serde_saphyr::from_str(t).ok())
                    })
                    .unwrap_or_default();
                self.annotations.iter().any(|a| {
                    doc.pointer("/metadata/annotations")
                        .and_then(|m| m.get(a))
                        .is_some_and(|v| !v.is_null())
                })
            })
    }
}

impl ApiFaults {
    /// Reject rules that could never fire: unknown codes or verbs.
    pub fn validate(&self) -> Result<(), String> {
        const VERBS: &[&str] = &[
            "*",
            "get",
            "list",
            "watch",
            "create",
            "update",
            "patch",
            "delete",
            "deletecollection",
        ];
        const WRITES: &[&str] = &["*", "create", "update", "patch", "delete"];
        for (i, w) in self.webhooks.iter().enumerate() {
            if w.name.is_empty() {
                return Err(format!("api.webhooks[{i}].name: must not be empty"));
            }
            if let Some(v) = w.verbs.iter().find(|v| !WRITES.contains(&v.as_str())) {
                return Err(format!(
                    "api.webhooks[{i}].verbs: `{v}` is not a write verb ({})",
                    WRITES.join(", ")
                ));
            }
        }
        for (i, r) in self.errors.iter().enumerate() {
            if !matches!(r.code, 429 | 500 | 503) {
                return Err(format!(
                    "api.errors[{i}].code: {} is not one of 429, 500, 503",
                    r.code
                ));
            }
            if let Some(v) = r.verbs.iter().find(|v| !VERBS.contains(&v.as_str())) {
                return Err(format!(
                    "api.errors[{i}].verbs: `{v}` is not a verb ({})",
                    VERBS.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// The refusal of the first webhook that refuses `verb` on `resource` (a dry run
    /// when `dry_run`; `body`: the request's, for a webhook on annotations), as
    /// kube-apiserver words it.
    pub fn admit(
        &self,
        verb: &str,
        resource: &str,
        dry_run: bool,
        body: &[u8],
    ) -> Result<(), ApiError> {
        for w in self
            .webhooks
            .iter()
            .filter(|w| w.matches(verb, resource, body))
        {
            if dry_run && matches!(w.side_effects, SideEffects::Some | SideEffects::Unknown) {
                return Err(ApiError::bad_request(format!(
                    "admission webhook \"{}\" does not support dry run",
                    w.name
                )));
            }
            if w.deny {
                let denied = format!("admission webhook \"{}\" denied the request", w.name);
                return Err(ApiError::new(
                    403,
                    "Forbidden",
                    match w.message.as_deref().filter(|m| !m.is_empty()) {
                        Some(m) => format!("{denied}: {m}"),
                        None => format!("{denied} without explanation"),
                    },
                ));
            }
        }
        Ok(())
    }

    /// The error to answer `verb` on `resource` with, if a rule matches; counts it down.
    pub fn take_error(&mut self, verb: &str, resource: &str) -> Option<ApiError> {
        let any = |list: &[String], x: &str| list.iter().any(|v| v == "*" || v == x);
        let idx = self.errors.iter().position(|r| {
            any(&r.verbs, verb) && any(&r.resources, resource) && r.times != Some(0)
        })?;
        let rule = &mut self.errors[idx];
        if let Some(t) = rule.times.as_mut() {
            *t -= 1;
        }
        let (reason, message) = match rule.code {
            429 => (
                "TooManyRequests",
                "the server has received too many requests and has asked us to try again later",
            ),
            503 => (
                "ServiceUnavailable",
                "the server is currently unable to handle the request",
            ),
            _ => (
                "InternalError",
                "an error on the server (\"injected fault\") has prevented the request from succeeding",
            ),
        };
        let mut e = ApiError::new(rule.code, reason, message);
        e.retry_after = rule
            .retry_after_seconds
            .filter(|_| matches!(rule.code, 429 | 503));
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A webhook on annotations refuses only a write whose body sets one of them (JSON or
    /// YAML), not the other writes of the same resource.
    #[test]
    fn a_webhook_on_annotations_refuses_only_writes_that_set_them() {
        let f = ApiFaults {
            webhooks: vec![Webhook {
                name: "flux-annotations.example.net".into(),
                resources: vec!["configmaps".into()],
                verbs: vec!["patch".into()],
                side_effects: SideEffects::None,
                deny: true,
                message: None,
                annotations: vec!["kustomize.toolkit.fluxcd.io/prune".into()],
            }],
            ..Default::default()
        };
        let sets =
            br#"{"metadata":{"annotations":{"kustomize.toolkit.fluxcd.io/prune":"disabled"}}}"#;
        assert!(f.admit("patch", "configmaps", false, sets).is_err());
        let yaml = b"metadata:\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n";
        assert!(f.admit("patch", "configmaps", false, yaml).is_err());
        // Another annotation, a removal (null), no body: admitted.
        let other = br#"{"metadata":{"annotations":{"vpnmig.bnerd.net/recover":"x"}}}"#;
        assert!(f.admit("patch", "configmaps", false, other).is_ok());
        let removal = br#"{"metadata":{"annotations":{"kustomize.toolkit.fluxcd.io/prune":null}}}"#;
        assert!(f.admit("patch", "configmaps", false, removal).is_ok());
        assert!(f.admit("patch", "configmaps", false, b"").is_ok());
        assert!(f.admit("patch", "secrets", false, sets).is_ok());
    }
}
