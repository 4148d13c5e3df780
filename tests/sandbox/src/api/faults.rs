//! API fault knobs: errors on chosen verbs/resources (429 with Retry-After, 500, 503),
//! added latency, and watch connections dropped. Settable in the settings file and at
//! run time (`Sandbox::api_faults`).

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
