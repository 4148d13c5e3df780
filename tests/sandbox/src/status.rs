//! API errors as the real server returns them: a `kind: Status` body with reason, code,
//! details and, for validation failures, field causes.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

pub use vpnmig::core::schema::Cause;

/// An error answer of the API server.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    /// `details.name`, `details.group`, `details.kind`.
    pub details: Option<Box<(String, String, String)>>,
    pub causes: Vec<Cause>,
    /// `Retry-After` in seconds (429, 503).
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            causes: Vec::new(),
            retry_after: None,
        }
    }

    fn with_details(mut self, name: &str, group: &str, kind: &str) -> Self {
        self.details = Some(Box::new((
            name.to_string(),
            group.to_string(),
            kind.to_string(),
        )));
        self
    }

    /// `404 NotFound`: `secrets "acme-psk" not found`.
    pub fn not_found(plural: &str, group: &str, name: &str) -> Self {
        let what = qualified(plural, group);
        ApiError::new(404, "NotFound", format!("{what} \"{name}\" not found"))
            .with_details(name, group, plural)
    }

    /// `409 AlreadyExists`.
    pub fn already_exists(plural: &str, group: &str, name: &str) -> Self {
        let what = qualified(plural, group);
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{what} \"{name}\" already exists"),
        )
        .with_details(name, group, plural)
    }

    /// `409 Conflict` on a stale resourceVersion.
    pub fn conflict(plural: &str, group: &str, name: &str, why: &str) -> Self {
        let what = qualified(plural, group);
        ApiError::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {what} \"{name}\": {why}"),
        )
        .with_details(name, group, plural)
    }

    /// `422 Invalid` with field causes: `ConfigMap "x" is invalid: data: …` (a core kind
    /// is not qualified), several causes in brackets as Go's error aggregate prints them.
    pub fn invalid(kind: &str, group: &str, name: &str, causes: Vec<Cause>) -> Self {
        let mut list = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect::<Vec<_>>()
            .join(", ");
        if causes.len() > 1 {
            list = format!("[{list}]");
        }
        let what = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let mut e = ApiError::new(
            422,
            "Invalid",
            format!("{what} \"{name}\" is invalid: {list}"),
        )
        .with_details(name, group, kind);
        e.causes = causes;
        e
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message)
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        ApiError::new(405, "MethodNotAllowed", message)
    }

    pub fn gone(message: impl Into<String>) -> Self {
        ApiError::new(410, "Expired", message)
    }

    pub fn unsupported_media_type(ct: &str) -> Self {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got {ct})"
            ),
        )
    }

    /// The `kind: Status` body.
    pub fn to_status(&self) -> Value {
        let mut details = serde_json::Map::new();
        if let Some((name, group, kind)) = self.details.as_deref() {
            details.insert("name".into(), json!(name));
            if !group.is_empty() {
                details.insert("group".into(), json!(group));
            }
            details.insert("kind".into(), json!(kind));
        }
        if !self.causes.is_empty() {
            details.insert(
                "causes".into(),
                self.causes
                    .iter()
                    .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                    .collect(),
            );
        }
        if let Some(s) = self.retry_after {
            details.insert("retryAfterSeconds".into(), json!(s));
        }
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        // An error the server has no reason for (an etcd error passed on) has none.
        if self.reason.is_empty()
            && let Some(o) = status.as_object_mut()
        {
            o.remove("reason");
        }
        if !details.is_empty() {
            status["details"] = Value::Object(details);
        }
        status
    }
}

/// `plural.group`, or `plural` for the core group.
pub fn qualified(plural: &str, group: &str) -> String {
    if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = (
            code,
            [("content-type", "application/json")],
            self.to_status().to_string(),
        )
            .into_response();
        if let Some(s) = self.retry_after {
            resp.headers_mut().insert("retry-after", s.into());
        }
        resp
    }
}

/// A success `Status`, as returned for an immediate delete.
pub fn success(name: &str, group: &str, plural: &str, uid: &str) -> Value {
    let mut details = json!({"name": name, "kind": plural, "uid": uid});
    if !group.is_empty() {
        details["group"] = json!(group);
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}
