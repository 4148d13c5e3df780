//! The fault proxy: the emulator's API fault knobs ([`ApiFaults`]: errors by verb and
//! resource with their code, count and Retry-After, latency, dropped watches) in front of
//! the real kube-apiserver (`crate::controlplane`), switchable at run time through the same
//! handle the emulator has (`Arc<RwLock<ApiFaults>>`, `Sandbox::api_faults`).
//!
//! It listens on 127.0.0.1 with the sandbox's own TLS (`crate::tls`, the emulator's serving
//! stack in `crate::server`) and forwards every request to kube-apiserver as a stream:
//! bodies both ways, watches, and upgraded connections (pod exec) byte for byte.
//!
//! **Identity.** A client keeps its own identity, so kube-apiserver's authentication and
//! RBAC decide as they would without the proxy: a client certificate is read off the TLS
//! connection and the request goes on over a connection that presents that same
//! certificate (the proxy is handed the users' keys when it starts: it speaks only for users
//! it was given); a bearer token (a ServiceAccount's) goes on unchanged in its header.
//! Impersonating them from one privileged identity instead would make the proxy's
//! `impersonate` permission part of every decision, and a client's own `--as` could not
//! be forwarded (impersonation does not nest).
//!
//! **Which request is which**: the verb and resource are derived from the method, path and
//! query as kube-apiserver's `RequestInfoFactory` does: `GET` of a collection is `list`,
//! with `watch` set (other than `false`/`0`) `watch`; `DELETE` of a collection is
//! `deletecollection`; `namespaces/NS/status|finalize` is the namespace's subresource;
//! a subresource is `plural/sub`. Pod `exec`, `attach` and `portforward` are `create`
//! whatever the method (a websocket upgrade is a GET; kube-apiserver authorizes it as
//! `create` too), as the emulator names them. Discovery, `/version`, `/healthz` and
//! `/openapi` are never faulted, as in the emulator.
//!
//! **Order.** Latency is added before anything, as in the emulator. An injected error is
//! answered before kube-apiserver sees the request, so before authentication and RBAC: a
//! request the user may not make gets the injected error here and a 403 on the emulator
//! (no row combines the two).

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use http_body_util::BodyExt;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::api::faults::ApiFaults;
use crate::controlplane::ClientCert;
use crate::server::PeerCert;
use crate::status::ApiError;
use crate::tls;

type Upstream = Client<HttpsConnector<HttpConnector>, Body>;

/// Why the proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("cannot set up the proxy's TLS")]
    Tls(#[from] tls::TlsError),
    #[error("cannot configure TLS to kube-apiserver")]
    Rustls(#[from] rustls::Error),
    #[error("cannot read a certificate or key: {0}")]
    Pem(String),
    #[error("cannot listen on 127.0.0.1")]
    Listen(#[source] std::io::Error),
}

/// A running fault proxy. Dropping it stops it.
pub struct Proxy {
    pub addr: SocketAddr,
    /// The API fault knobs, changeable at run time (as `Sandbox::api_faults`).
    pub faults: Arc<RwLock<ApiFaults>>,
    /// Requests forwarded or answered so far.
    pub requests: Arc<std::sync::atomic::AtomicU64>,
    /// Every request that names a resource, in order, with its answer's status: what a
    /// test or benchmark reads to tell exactly which verbs a command used.
    pub log: Arc<std::sync::Mutex<Vec<Logged>>>,
    ca_pem: String,
    stop: watch::Sender<bool>,
    server: Option<JoinHandle<()>>,
}

/// One request the proxy saw (one naming a resource: discovery, `/version` and OpenAPI
/// are left out).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Logged {
    pub verb: String,
    /// `plural` or `plural/sub`.
    pub resource: String,
    /// The namespace in its path; `None`: every namespace, or a cluster-scoped kind.
    pub namespace: Option<String>,
    /// The status of the answer (kube-apiserver's, or the injected error's).
    pub status: u16,
}

#[derive(Clone)]
struct Hop {
    /// `https://127.0.0.1:PORT` of kube-apiserver.
    upstream: Arc<str>,
    /// Each user's certificate (DER) and a client that presents it.
    users: Arc<Vec<(Vec<u8>, Upstream)>>,
    /// A client without a certificate: bearer tokens, anonymous requests.
    anonymous: Upstream,
    faults: Arc<RwLock<ApiFaults>>,
    requests: Arc<std::sync::atomic::AtomicU64>,
    log: Arc<std::sync::Mutex<Vec<Logged>>>,
}

fn upstream_client(ca_pem: &str, user: Option<&ClientCert>) -> Result<Upstream, ProxyError> {
    let pem = |e: rustls::pki_types::pem::Error| ProxyError::Pem(e.to_string());
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(c.map_err(pem)?)?;
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("ring supports the default TLS versions")
    .with_root_certificates(roots);
    let config = match user {
        None => builder.with_no_client_auth(),
        Some(u) => {
            let chain = CertificateDer::pem_slice_iter(u.cert_pem.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(pem)?;
            let key = PrivateKeyDer::from_pem_slice(u.key_pem.as_bytes()).map_err(pem)?;
            builder.with_client_auth_cert(chain, key)?
        }
    };
    // Exec frames and watch events are small writes: without nodelay, Nagle and delayed
    // ACKs hold each for up to 40 ms (the server side sets it too, `crate::server`).
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    http.enforce_http(false);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_only()
        .enable_http1()
        .wrap_connector(http);
    Ok(Client::builder(TokioExecutor::new()).build(https))
}

impl Proxy {
    /// Serve on a free port of 127.0.0.1 in front of `upstream` (kube-apiserver, whose CA is
    /// `ca_pem`), speaking for `users` (client certificates signed by that CA), with `faults`.
    pub async fn start(
        upstream: &str,
        ca_pem: &str,
        users: &[&ClientCert],
        faults: Arc<RwLock<ApiFaults>>,
    ) -> Result<Proxy, ProxyError> {
        let mut known = Vec::new();
        for u in users {
            let der = CertificateDer::from_pem_slice(u.cert_pem.as_bytes())
                .map_err(|e| ProxyError::Pem(e.to_string()))?;
            known.push((der.to_vec(), upstream_client(ca_pem, Some(u))?));
        }
        let requests = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let log = Arc::new(std::sync::Mutex::new(Vec::new()));
        let hop = Hop {
            upstream: upstream.trim_end_matches('/').into(),
            users: Arc::new(known),
            anonymous: upstream_client(ca_pem, None)?,
            faults: faults.clone(),
            requests: requests.clone(),
            log: log.clone(),
        };
        let tls = tls::generate_for_clients(Some(ca_pem))?;
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(ProxyError::Listen)?;
        let addr = listener.local_addr().map_err(ProxyError::Listen)?;
        let router = Router::new()
            .fallback(forward)
            .layer(axum::extract::DefaultBodyLimit::disable())
            .with_state(hop);
        let (stop, stopped) = watch::channel(false);
        let acceptor = tokio_rustls::TlsAcceptor::from(tls.server.clone());
        let server = tokio::spawn(crate::server::serve(listener, acceptor, router, stopped));
        Ok(Proxy {
            addr,
            faults,
            requests,
            log,
            ca_pem: tls.ca_pem,
            stop,
            server: Some(server),
        })
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The CA of the proxy's serving certificate (PEM), for a kubeconfig.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.send_replace(true);
        if let Some(s) = self.server.take() {
            s.abort();
        }
    }
}

/// The verb and resource (`plural` or `plural/sub`) of a request, as kube-apiserver's
/// RequestInfoFactory derives them; `None` for a request that names no resource
/// (discovery, `/version`, health, OpenAPI).
pub fn request_info(method: &str, uri: &Uri) -> Option<(String, String)> {
    let segs: Vec<&str> = uri
        .path()
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let mut rest: &[&str] = match segs.as_slice() {
        ["api", _version, rest @ ..] => rest,
        ["apis", _group, _version, rest @ ..] => rest,
        _ => return None,
    };
    // The old `/watch/` prefix: a watch whatever the query says.
    let mut watch_path = false;
    if rest.first() == Some(&"watch") {
        watch_path = true;
        rest = &rest[1..];
    }
    if let ["namespaces", _ns, tail @ ..] = rest
        && !tail.is_empty()
        && !matches!(tail[0], "status" | "finalize")
    {
        rest = tail;
    }
    let (plural, name, sub) = match rest {
        [] => return None,
        [plural] => (*plural, None, None),
        [plural, name] => (*plural, Some(*name), None),
        [plural, name, sub, ..] => (*plural, Some(*name), Some(*sub)),
    };
    let resource = match sub {
        Some(s) => format!("{plural}/{s}"),
        None => plural.to_string(),
    };
    let watch_query = uri.query().is_some_and(|q| {
        serde_urlencoded::from_str::<Vec<(String, String)>>(q)
            .unwrap_or_default()
            .iter()
            .find(|(k, _)| k == "watch")
            .is_some_and(|(_, v)| !matches!(v.to_ascii_lowercase().as_str(), "false" | "0"))
    });
    if plural == "pods" && matches!(sub, Some("exec" | "attach" | "portforward")) {
        return Some(("create".into(), resource));
    }
    let verb = match (method, name) {
        _ if watch_path => "watch",
        ("GET" | "HEAD", None) if watch_query => "watch",
        ("GET" | "HEAD", None) => "list",
        ("GET" | "HEAD", Some(_)) => "get",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", None) => "deletecollection",
        ("DELETE", Some(_)) => "delete",
        _ => return None,
    };
    Some((verb.into(), resource))
}

/// The namespace a request's path names (`/api/v1/namespaces/NS/…`,
/// `/apis/G/V/namespaces/NS/…`), not a Namespace object itself.
fn path_namespace(uri: &Uri) -> Option<String> {
    let segs: Vec<&str> = uri.path().trim_matches('/').split('/').collect();
    let rest = match segs.as_slice() {
        ["api", _, rest @ ..] => rest,
        ["apis", _, _, rest @ ..] => rest,
        _ => return None,
    };
    let rest = rest.strip_prefix(&["watch"]).unwrap_or(rest);
    match rest {
        ["namespaces", ns, _, ..] => Some((*ns).to_string()),
        _ => None,
    }
}

async fn forward(
    State(hop): State<Hop>,
    peer: axum::Extension<PeerCert>,
    req: Request,
) -> Response {
    let info = request_info(req.method().as_str(), req.uri());
    let namespace = path_namespace(req.uri());
    let log = hop.log.clone();
    let resp = forward_one(State(hop), peer, req).await;
    if let Some((verb, resource)) = info {
        log.lock().unwrap_or_else(|e| e.into_inner()).push(Logged {
            verb,
            resource,
            namespace,
            status: resp.status().as_u16(),
        });
    }
    resp
}

async fn forward_one(
    State(hop): State<Hop>,
    axum::Extension(PeerCert(peer)): axum::Extension<PeerCert>,
    mut req: Request,
) -> Response {
    hop.requests
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let latency = hop.faults.read().map(|f| f.latency_ms).unwrap_or(0);
    if latency > 0 {
        tokio::time::sleep(Duration::from_millis(latency)).await;
    }
    let info = request_info(req.method().as_str(), req.uri());
    if let Some((verb, resource)) = &info
        && let Some(e) = hop
            .faults
            .write()
            .ok()
            .and_then(|mut f| f.take_error(verb, resource))
    {
        return e.into_response();
    }
    let client = match &peer {
        None => &hop.anonymous,
        Some(der) => match hop.users.iter().find(|(c, _)| c == der) {
            Some((_, c)) => c,
            None => {
                return ApiError::new(
                    401,
                    "Unauthorized",
                    "vpnmig-sandbox fault proxy: this client certificate is not one of the users it was started for",
                )
                .into_response();
            }
        },
    };
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let uri: Uri = match format!("{}{path}", hop.upstream).parse() {
        Ok(u) => u,
        Err(e) => return ApiError::bad_request(format!("{e}")).into_response(),
    };
    let upgrade = req.headers().contains_key(axum::http::header::UPGRADE);
    let client_side = upgrade.then(|| hyper::upgrade::on(&mut req));
    let (mut parts, body) = req.into_parts();
    parts.uri = uri;
    parts.headers.remove(axum::http::header::HOST);
    parts.extensions = Default::default();
    let sent = axum::http::Request::from_parts(parts, body);
    let mut resp = match client.request(sent).await {
        Ok(r) => r,
        Err(e) => {
            return ApiError::new(
                503,
                "ServiceUnavailable",
                format!("vpnmig-sandbox fault proxy: kube-apiserver did not answer: {e}"),
            )
            .into_response();
        }
    };
    if resp.status() == StatusCode::SWITCHING_PROTOCOLS
        && let Some(client_side) = client_side
    {
        let server_side = hyper::upgrade::on(&mut resp);
        tokio::spawn(async move {
            if let (Ok(c), Ok(s)) = (client_side.await, server_side.await) {
                let _ =
                    tokio::io::copy_bidirectional(&mut TokioIo::new(c), &mut TokioIo::new(s)).await;
            }
        });
        let (parts, _) = resp.into_parts();
        return Response::from_parts(parts, Body::empty());
    }
    let (mut parts, incoming) = resp.into_parts();
    let drop_after = hop.faults.read().ok().and_then(|f| f.drop_watches_after_ms);
    match (info.as_ref().map(|(v, _)| v.as_str()), drop_after) {
        (Some("watch"), Some(ms)) if parts.status.is_success() => {
            // The watch ends (its chunked body finishes) that long after it began, as the
            // emulator ends it; kube-apiserver's own stream is dropped with it.
            parts.headers.remove(axum::http::header::CONTENT_LENGTH);
            let stream = incoming
                .into_data_stream()
                .take_until(tokio::time::sleep(Duration::from_millis(ms)));
            Response::from_parts(parts, Body::from_stream(stream))
        }
        _ => Response::from_parts(parts, Body::new(incoming)),
    }
}

#[cfg(test)]
mod tests {
    use super::request_info;

    fn info(method: &str, path: &str) -> Option<(String, String)> {
        request_info(method, &path.parse().unwrap())
    }

    fn is(verb: &str, resource: &str) -> Option<(String, String)> {
        Some((verb.into(), resource.into()))
    }

    #[test]
    fn the_namespace_of_a_path() {
        let ns = |p: &str| super::path_namespace(&p.parse().unwrap());
        assert_eq!(ns("/api/v1/namespaces/t/configmaps"), Some("t".into()));
        assert_eq!(
            ns("/api/v1/watch/namespaces/t/configmaps/x"),
            Some("t".into())
        );
        assert_eq!(
            ns("/apis/vpn.bnerd.net/v1alpha1/namespaces/t/vpngateways/a/status"),
            Some("t".into())
        );
        assert_eq!(ns("/api/v1/configmaps"), None);
        assert_eq!(ns("/api/v1/namespaces/t"), None);
        assert_eq!(ns("/api/v1/namespaces"), None);
    }

    #[test]
    fn verbs_and_resources_are_derived_as_kube_apiserver_does() {
        let rows = [
            (
                "GET",
                "/api/v1/namespaces/t/configmaps",
                is("list", "configmaps"),
            ),
            (
                "GET",
                "/api/v1/namespaces/t/configmaps?watch=true&resourceVersion=1",
                is("watch", "configmaps"),
            ),
            (
                "GET",
                "/api/v1/namespaces/t/configmaps?watch=1",
                is("watch", "configmaps"),
            ),
            (
                "GET",
                "/api/v1/namespaces/t/configmaps?watch=false",
                is("list", "configmaps"),
            ),
            (
                "GET",
                "/api/v1/watch/namespaces/t/configmaps",
                is("watch", "configmaps"),
            ),
            (
                "GET",
                "/api/v1/namespaces/t/configmaps/x",
                is("get", "configmaps"),
            ),
            (
                "POST",
                "/api/v1/namespaces/t/configmaps",
                is("create", "configmaps"),
            ),
            (
                "PUT",
                "/api/v1/namespaces/t/configmaps/x",
                is("update", "configmaps"),
            ),
            (
                "PATCH",
                "/api/v1/namespaces/t/configmaps/x?fieldManager=m",
                is("patch", "configmaps"),
            ),
            (
                "DELETE",
                "/api/v1/namespaces/t/configmaps/x",
                is("delete", "configmaps"),
            ),
            (
                "DELETE",
                "/api/v1/namespaces/t/configmaps",
                is("deletecollection", "configmaps"),
            ),
            (
                "PATCH",
                "/apis/vpn.bnerd.net/v1alpha1/namespaces/t/vpngateways/a/status",
                is("patch", "vpngateways/status"),
            ),
            (
                "GET",
                "/apis/ipsec.bnerd.net/v1alpha1/ipsecgateways",
                is("list", "ipsecgateways"),
            ),
            ("GET", "/api/v1/namespaces", is("list", "namespaces")),
            ("GET", "/api/v1/namespaces/t", is("get", "namespaces")),
            (
                "PUT",
                "/api/v1/namespaces/t/finalize",
                is("update", "namespaces/finalize"),
            ),
            (
                "GET",
                "/api/v1/namespaces/t/pods/p/exec?command=swanctl",
                is("create", "pods/exec"),
            ),
            (
                "POST",
                "/api/v1/namespaces/t/pods/p/exec?command=swanctl",
                is("create", "pods/exec"),
            ),
            (
                "GET",
                "/api/v1/namespaces/t/pods/p/log",
                is("get", "pods/log"),
            ),
            (
                "POST",
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                is("create", "selfsubjectaccessreviews"),
            ),
            ("GET", "/api", None),
            ("GET", "/apis", None),
            ("GET", "/apis/vpn.bnerd.net/v1alpha1", None),
            ("GET", "/api/v1", None),
            ("GET", "/version", None),
            ("GET", "/openapi/v3/apis/vpn.bnerd.net/v1alpha1", None),
        ];
        for (method, path, want) in rows {
            assert_eq!(info(method, path), want, "{method} {path}");
        }
    }
}
