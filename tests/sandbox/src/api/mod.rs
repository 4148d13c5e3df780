//! The HTTP face of the emulator: URL grammar, verbs, authentication and authorization,
//! fault injection, and the handlers for get/list/watch/create/update/patch/delete.

pub mod auth;
pub mod discovery;
pub mod faults;
mod openapi;
mod table;
mod watch;

use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::operator::Operator;
use crate::resources::ResourceType;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::{self, ApiError};
use crate::store::{DeleteOptions, Deleted, Propagation, Store, WriteOptions};
use auth::{Group, User};
use faults::ApiFaults;

/// Everything a request handler needs.
#[derive(Clone)]
pub struct App {
    pub store: Arc<Store>,
    pub operator: Arc<Operator>,
    pub users: Arc<Vec<User>>,
    /// Groups' rules, for impersonated requests (`Impersonate-Group`).
    pub groups: Arc<Vec<Group>>,
    pub faults: Arc<RwLock<ApiFaults>>,
    /// `host:port` the server listens on.
    pub addr: String,
    /// Flips to true when the server shuts down: streams end.
    pub shutdown: tokio::sync::watch::Receiver<bool>,
    /// Requests served (every one but exec), for benchmarks that count them.
    pub requests: Arc<std::sync::atomic::AtomicU64>,
}

/// A request for a resource, parsed from the URL.
#[derive(Clone, Debug)]
pub struct Target {
    pub rt: ResourceType,
    pub ns: Option<String>,
    pub name: Option<String>,
    pub sub: Option<String>,
}

impl Target {
    /// `plural` or `plural/sub`: what RBAC and fault rules name.
    pub fn resource(&self) -> String {
        match &self.sub {
            Some(s) => format!("{}/{s}", self.rt.plural),
            None => self.rt.plural.clone(),
        }
    }
    fn ns(&self) -> &str {
        self.ns.as_deref().unwrap_or_default()
    }
}

type Query = Vec<(String, String)>;

fn param<'a>(q: &'a Query, k: &str) -> Option<&'a str> {
    q.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str())
}

fn flag(q: &Query, k: &str) -> bool {
    matches!(param(q, k), Some("true" | "1"))
}

fn json_response(code: StatusCode, v: &Value) -> Response {
    (code, [("content-type", "application/json")], v.to_string()).into_response()
}

fn ok(v: &Value) -> Response {
    json_response(StatusCode::OK, v)
}

/// Parse a request body as JSON, or YAML when the content type says so.
pub fn parse_body(headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    let ct = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    if ct.contains("protobuf") {
        return Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            "vpnmig-sandbox speaks JSON only, not protobuf: use `kubectl apply -f` (kubectl's typed `create` commands send protobuf)",
        ));
    }
    let text = std::str::from_utf8(body)
        .map_err(|_| ApiError::bad_request("request body is not UTF-8"))?;
    let parsed = if ct.contains("yaml") {
        serde_saphyr::from_str::<Value>(text).map_err(|e| e.to_string())
    } else {
        serde_json::from_str::<Value>(text).map_err(|e| e.to_string())
    };
    parsed.map_err(|e| {
        ApiError::bad_request(format!("the body of the request could not be decoded: {e}"))
    })
}

/// The fallback handler: every request that is not an exec.
pub async fn handle(
    axum::extract::State(app): axum::extract::State<App>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    app.requests
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let latency = app.faults.read().map(|f| f.latency_ms).unwrap_or(0);
    if latency > 0 {
        tokio::time::sleep(Duration::from_millis(latency)).await;
    }
    match route(&app, &method, &uri, &headers, &body) {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

fn not_found_path() -> ApiError {
    ApiError::new(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
}

fn route(
    app: &App,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let path = uri.path().trim_end_matches('/');
    let query: Query = serde_urlencoded::from_str(uri.query().unwrap_or(""))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    match path {
        "/version" => return Ok(ok(&discovery::version())),
        "/healthz" | "/livez" | "/readyz" => return Ok((StatusCode::OK, "ok").into_response()),
        _ => {}
    }
    let attributes = auth::Attributes::of(method.as_str(), uri.path(), uri.query());
    let user = auth::identify(&app.users, &app.groups, headers, &attributes)?;
    let accept = headers
        .get("accept")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let types = app.store.types();
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (group, version, rest): (&str, &str, &[&str]) = match segs.as_slice() {
        ["api"] if discovery::wants_aggregated(accept) => {
            return Ok(aggregated(&discovery::aggregated(&types, true)));
        }
        ["api"] => return Ok(ok(&discovery::core_versions(&app.addr))),
        ["apis"] if discovery::wants_aggregated(accept) => {
            return Ok(aggregated(&discovery::aggregated(&types, false)));
        }
        ["apis"] => return Ok(ok(&discovery::group_list(&types))),
        ["openapi", "v3"] => return Ok(ok(&openapi::root(&types))),
        ["openapi", "v3", gv @ ..] => {
            return openapi::group_version(&types, &gv.join("/"))
                .map(|d| ok(&d))
                .ok_or_else(not_found_path);
        }
        ["apis", g] => {
            return discovery::group(&types, g)
                .map(|d| ok(&d))
                .ok_or_else(not_found_path);
        }
        ["api", "v1"] => {
            return discovery::resource_list(&types, "", "v1")
                .map(|d| ok(&d))
                .ok_or_else(not_found_path);
        }
        ["apis", g, v] => {
            return discovery::resource_list(&types, g, v)
                .map(|d| ok(&d))
                .ok_or_else(not_found_path);
        }
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", g, v, rest @ ..] => (g, v, rest),
        _ => return Err(not_found_path()),
    };
    let (ns, plural, name, sub) = match rest {
        ["namespaces", ns, plural, tail @ ..] if !matches!(*plural, "status" | "finalize") => (
            Some(*ns),
            *plural,
            tail.first().copied(),
            tail.get(1).copied(),
        ),
        [plural, tail @ ..] => (None, *plural, tail.first().copied(), tail.get(1).copied()),
        [] => return Err(not_found_path()),
    };
    let rt = app
        .store
        .resource(group, version, plural)
        .ok_or_else(not_found_path)?;
    let target = Target {
        ns: ns.map(str::to_string).filter(|_| rt.namespaced),
        name: name.map(str::to_string),
        sub: sub.map(str::to_string),
        rt,
    };
    if target.rt.namespaced && target.ns.is_none() && target.name.is_some() {
        return Err(not_found_path());
    }
    let verb = match (method, &target.name) {
        (&Method::GET, None) if flag(&query, "watch") => "watch",
        (&Method::GET, None) => "list",
        (&Method::GET, Some(_)) => "get",
        (&Method::POST, None) => "create",
        (&Method::PUT, Some(_)) => "update",
        (&Method::PATCH, Some(_)) => "patch",
        (&Method::DELETE, Some(_)) => "delete",
        (&Method::DELETE, None) => "deletecollection",
        _ => {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({method} {path})"
            )));
        }
    };
    if target.sub.as_deref().is_some_and(|s| s != "status") {
        return Err(not_found_path());
    }
    // Every authenticated user may ask what it may do, as on a real cluster (the
    // system:basic-user binding), unless the settings take that away.
    let self_review = target.rt.plural == "selfsubjectaccessreviews"
        && verb == "create"
        && !user.without_basic_user;
    if !self_review && !user.allows(verb, &target.resource(), target.ns.as_deref()) {
        return Err(auth::forbidden(
            &user,
            verb,
            &target.rt.plural,
            target.sub.as_deref(),
            &target.rt.group,
            target.name.as_deref(),
            target.ns.as_deref(),
        ));
    }
    if let Some(e) = app
        .faults
        .write()
        .ok()
        .and_then(|mut f| f.take_error(verb, &target.resource()))
    {
        return Err(e);
    }
    if matches!(verb, "create" | "update" | "patch") {
        crate::limits::check_body(body)?;
    }
    if matches!(verb, "create" | "update" | "patch" | "delete") {
        let dry_run = param(&query, "dryRun") == Some("All")
            || (verb == "delete" && delete_body_dry_run(headers, body));
        if let Ok(f) = app.faults.read() {
            f.admit(verb, &target.resource(), dry_run, body)?;
        }
    }
    let wopts = WriteOptions {
        dry_run: param(&query, "dryRun") == Some("All"),
        strict: param(&query, "fieldValidation") == Some("Strict"),
        keep_status: false,
        field_manager: Some(field_manager(&query, headers)?),
    };
    let status_sub = target.sub.as_deref() == Some("status");
    match verb {
        "get" => {
            let obj = app.store.get(
                &target.rt,
                target.ns(),
                target.name.as_deref().unwrap_or_default(),
            )?;
            if table::wanted(accept) {
                return Ok(ok(&table::table(
                    &target.rt,
                    &[obj],
                    app.store.resource_version(),
                )));
            }
            Ok(ok(&obj))
        }
        "list" => list(app, &target, &query, table::wanted(accept)),
        "watch" => watch::watch(app, &target, &query),
        "create" if target.rt.plural == "selfsubjectaccessreviews" => Ok(json_response(
            StatusCode::CREATED,
            &access_review(&user, parse_body(headers, body)?),
        )),
        "create" => {
            let obj = parse_body(headers, body)?;
            let created = app.store.create(&target.rt, target.ns(), obj, &wopts)?;
            Ok(json_response(StatusCode::CREATED, &created))
        }
        "update" => {
            let obj = parse_body(headers, body)?;
            Ok(ok(&app.store.update(
                &target.rt,
                target.ns(),
                target.name.as_deref().unwrap_or_default(),
                obj,
                status_sub,
                &wopts,
            )?))
        }
        "patch" => patch(
            app, &user, &target, &query, headers, body, status_sub, &wopts,
        ),
        "delete" => delete(app, &target, &query, headers, body),
        _ => delete_collection(app, &target, &query),
    }
}

/// The field manager of a write, as kube-apiserver names it: `fieldManager`, else the
/// User-Agent up to its first `/` (`kubectl/v1.34.1 (linux/amd64) kubernetes/abc` →
/// `kubectl`). kubectl passes its own names (`kubectl-client-side-apply`, `kubectl-edit`,
/// `kubectl-patch`, …); kube-rs passes none unless told, and sends no User-Agent, so
/// the manager is `unknown` (what kube-apiserver records for an empty one, as the real
/// control plane showed). A `fieldManager` over 128 characters is refused.
fn field_manager(query: &Query, headers: &HeaderMap) -> Result<String, ApiError> {
    let Some(manager) = param(query, "fieldManager").filter(|m| !m.is_empty()) else {
        // The derived name is cut to fit, never refused.
        let derived: String = headers
            .get("user-agent")
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default()
            .split('/')
            .next()
            .unwrap_or_default()
            .chars()
            .filter(|c| !c.is_control())
            .take(128)
            .collect();
        return Ok(if derived.is_empty() {
            "unknown".into()
        } else {
            derived
        });
    };
    if manager.chars().count() > 128 {
        return Err(ApiError::invalid(
            "PatchOptions",
            "meta.k8s.io",
            "",
            vec![status::Cause {
                reason: "FieldValueTooLong",
                message: "Too long: may not be more than 128 bytes".into(),
                field: "fieldManager".into(),
            }],
        ));
    }
    Ok(manager.to_string())
}

fn aggregated(v: &Value) -> Response {
    (
        StatusCode::OK,
        [("content-type", discovery::AGGREGATED)],
        v.to_string(),
    )
        .into_response()
}

fn selectors(t: &Target, query: &Query) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let fields = FieldSelector::parse(param(query, "fieldSelector").unwrap_or(""))?;
    // Custom resources support only the metadata fields, like the real server.
    if t.rt.from_crd
        && let Some(bad) = fields
            .paths()
            .find(|p| !matches!(*p, "metadata.name" | "metadata.namespace"))
    {
        return Err(ApiError::bad_request(format!(
            "field label not supported: {bad}"
        )));
    }
    Ok((
        LabelSelector::parse(param(query, "labelSelector").unwrap_or(""))?,
        fields,
    ))
}

fn list(app: &App, t: &Target, query: &Query, as_table: bool) -> Result<Response, ApiError> {
    use base64::Engine;
    let (labels, fields) = selectors(t, query)?;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let after = match param(query, "continue").filter(|c| !c.is_empty()) {
        Some(token) => Some(
            b64.decode(token)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| ApiError::bad_request("invalid continue token"))?,
        ),
        None => None,
    };
    let limit = param(query, "limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    // Only the page is copied out of the store (`Store::list_page`).
    let (items, matched, rv) = app.store.list_page(
        &t.rt,
        t.ns.as_deref(),
        |namespace, name, o| {
            after
                .as_deref()
                .is_none_or(|a| key_after(namespace, name, a))
                && labels.matches(o)
                && fields.matches(o)
        },
        limit,
    );
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if let Some(limit) = limit
        && matched > limit
    {
        metadata["continue"] = json!(b64.encode(object_key(items.last().expect("limit > 0"))));
        metadata["remainingItemCount"] = json!(matched - limit);
    }
    if as_table {
        let mut tbl = table::table(&t.rt, &items, rv);
        tbl["metadata"] = metadata;
        return Ok(ok(&tbl));
    }
    // The page's objects are moved in, not serialized into a copy as `json!` would.
    let mut list = json!({"apiVersion": t.rt.api_version(), "kind": format!("{}List", t.rt.kind), "metadata": metadata});
    list["items"] = Value::Array(items);
    Ok(ok(&list))
}

/// Whether [`object_key`] of the object `namespace`/`name` sorts after `after`, without
/// building it (each page compares every object of the type with its token).
fn key_after(namespace: &str, name: &str, after: &str) -> bool {
    namespace
        .bytes()
        .chain(std::iter::once(b'/'))
        .chain(name.bytes())
        .cmp(after.bytes())
        == std::cmp::Ordering::Greater
}

/// `namespace/name`: the order lists are served in, and what continue tokens hold.
fn object_key(o: &Value) -> String {
    let s = |p: &str| {
        o.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    format!("{}/{}", s("/metadata/namespace"), s("/metadata/name"))
}

#[allow(clippy::too_many_arguments)]
fn patch(
    app: &App,
    user: &User,
    t: &Target,
    query: &Query,
    headers: &HeaderMap,
    body: &[u8],
    status_sub: bool,
    wopts: &WriteOptions,
) -> Result<Response, ApiError> {
    let ct = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let name = t.name.as_deref().unwrap_or_default();
    let media = ct.split(';').next().unwrap_or("").trim();
    let result = match media {
        "application/apply-patch+yaml" | "application/apply-patch+json" => {
            let manager = param(query, "fieldManager")
                .filter(|m| !m.is_empty())
                .ok_or_else(|| {
                    ApiError::invalid(
                        "PatchOptions",
                        "meta.k8s.io",
                        "",
                        vec![status::Cause {
                            reason: "FieldValueRequired",
                            message: "Required value: is required for apply patch".into(),
                            field: "fieldManager".into(),
                        }],
                    )
                })?;
            let text = std::str::from_utf8(body)
                .map_err(|_| ApiError::bad_request("request body is not UTF-8"))?;
            let applied: Value = serde_saphyr::from_str(text)
                .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
            if applied
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .is_some_and(|n| n != name)
            {
                return Err(ApiError::bad_request(
                    "the name of the object does not match the name on the URL",
                ));
            }
            // An apply that creates the object needs `create` as well as `patch`, as
            // kube-apiserver's patch handler asks its authorizer before creating. Its
            // refusal reads like any other (v1.37's `withAuthorization`:
            // `ForbiddenStatusError` of the create; older servers left the message after
            // `is forbidden: ` empty). (The sandbox looks the object up just before
            // applying; the real server decides inside the same storage update.)
            if !status_sub
                && !user.allows("create", &t.resource(), t.ns.as_deref())
                && app.store.get(&t.rt, t.ns(), name).is_err()
            {
                return Err(auth::forbidden(
                    user,
                    "create",
                    &t.rt.plural,
                    t.sub.as_deref(),
                    &t.rt.group,
                    Some(name),
                    t.ns.as_deref(),
                ));
            }
            app.store.apply(
                &t.rt,
                t.ns(),
                name,
                applied,
                manager,
                flag(query, "force"),
                status_sub,
                wopts,
            )?
        }
        "application/json-patch+json" => {
            let p: json_patch::Patch = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))?;
            app.store.modify(&t.rt, t.ns(), name, status_sub, wopts, |cur| {
                let mut v = cur.clone();
                json_patch::patch(&mut v, &p).map_err(|e| ApiError::new(422, "Invalid", format!("the server rejected our request due to an error in our request: {e}")))?;
                Ok(v)
            })?
        }
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
            let p: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("invalid merge patch: {e}")))?;
            app.store
                .modify(&t.rt, t.ns(), name, status_sub, wopts, |cur| {
                    let mut v = cur.clone();
                    json_patch::merge(&mut v, &p);
                    Ok(v)
                })?
        }
        other => return Err(ApiError::unsupported_media_type(other)),
    };
    Ok(ok(&result))
}

/// Whether a delete's `DeleteOptions` body asks for a dry run.
fn delete_body_dry_run(headers: &HeaderMap, body: &[u8]) -> bool {
    !body.is_empty()
        && parse_body(headers, body).is_ok_and(|b| {
            b.get("dryRun")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|v| v == "All"))
        })
}

fn delete(
    app: &App,
    t: &Target,
    query: &Query,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let opts_body = if body.is_empty() {
        json!({})
    } else {
        parse_body(headers, body)?
    };
    let policy = param(query, "propagationPolicy")
        .or_else(|| opts_body.get("propagationPolicy").and_then(Value::as_str));
    let dry_run = param(query, "dryRun") == Some("All")
        || opts_body
            .get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|v| v == "All"));
    let opts = DeleteOptions {
        dry_run,
        propagation: match policy {
            Some("Orphan") => Propagation::Orphan,
            Some("Foreground") => Propagation::Foreground,
            _ => Propagation::Background,
        },
        precondition_uid: opts_body
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string),
        precondition_rv: opts_body
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string),
    };
    let name = t.name.as_deref().unwrap_or_default();
    Ok(match app.store.delete(&t.rt, t.ns(), name, &opts)? {
        Deleted::Pending(obj) => ok(&obj),
        Deleted::Gone(obj) => {
            let uid = obj
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or_default();
            ok(&status::success(name, &t.rt.group, &t.rt.plural, uid))
        }
    })
}

fn delete_collection(app: &App, t: &Target, query: &Query) -> Result<Response, ApiError> {
    let (labels, fields) = selectors(t, query)?;
    let (items, _) = app.store.list(&t.rt, t.ns.as_deref());
    let opts = DeleteOptions {
        dry_run: param(query, "dryRun") == Some("All"),
        ..DeleteOptions::default()
    };
    for o in items
        .iter()
        .filter(|o| labels.matches(o) && fields.matches(o))
    {
        let ns = o
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = o
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match app.store.delete(&t.rt, ns, name, &opts) {
            Ok(_) | Err(ApiError { code: 404, .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(ok(
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}),
    ))
}

/// Answer a SelfSubjectAccessReview from the user's rules.
fn access_review(user: &User, mut review: Value) -> Value {
    let attrs = review
        .pointer("/spec/resourceAttributes")
        .cloned()
        .unwrap_or(json!({}));
    let s = |k: &str| {
        attrs
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let resource = if s("subresource").is_empty() {
        s("resource")
    } else {
        format!("{}/{}", s("resource"), s("subresource"))
    };
    let ns = s("namespace");
    let allowed = user.allows(
        &s("verb"),
        &resource,
        (!ns.is_empty()).then_some(ns.as_str()),
    );
    review["status"] = json!({"allowed": allowed, "reason": if allowed { "allowed by the sandbox's token rules" } else { "no rule of this token allows it" }});
    review["apiVersion"] = json!("authorization.k8s.io/v1");
    review["kind"] = json!("SelfSubjectAccessReview");
    review
}
