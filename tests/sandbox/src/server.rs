//! The running sandbox: TLS on 127.0.0.1, the HTTP routes, the simulated operator, and
//! a kubeconfig pointing at them. Started in-process by tests (port 0) and by the binary.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, RwLock};

use axum::Router;
use axum::routing::get;
use base64::Engine;
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::api::auth::{Group, User};
use crate::api::faults::ApiFaults;
use crate::api::{self, App};
use crate::gitops::{self, Gitops};
use crate::operator::{self, Operator};
use crate::scenario::{self, ScenarioError};
use crate::store::Store;
use crate::{exec, tls};

/// The settings file (`--operator-settings FILE`): operator timing and faults, API
/// faults, extra users with limited rights, the garbage collector's pace and the
/// simulated GitOps controllers' (`gitops:`, see [`crate::gitops`]).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SettingsFile {
    #[serde(default)]
    pub operator: operator::Settings,
    #[serde(default)]
    pub api: ApiFaults,
    #[serde(default)]
    pub users: Vec<User>,
    /// Groups' rules, for requests that impersonate a member (`--as-group`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<Group>,
    #[serde(default)]
    pub gc: GcSettings,
    /// The simulated Argo CD and Flux (`crate::gitops`): self-heal delay and faults.
    #[serde(default)]
    pub gitops: gitops::Settings,
}

/// The garbage collector's pace (the `gc:` section of the settings file). Tests change
/// it at run time through [`Sandbox::gc`].
///
/// ```yaml
/// gc: {intervalMs: 50, paused: false}
/// ```
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct GcSettings {
    /// How often the collector looks for dependents whose owners are all gone. The
    /// real one reacts to informer events within about a second; here it is a poll.
    pub interval_ms: u64,
    /// Collect nothing until cleared: a collector that is behind (a backlog, a restart
    /// of kube-controller-manager), so a test can see what happens before it acts.
    pub paused: bool,
}

impl Default for GcSettings {
    fn default() -> Self {
        GcSettings {
            interval_ms: 50,
            paused: false,
        }
    }
}

/// What to start.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Objects to load before serving (see `scenario`).
    pub scenario: Vec<Value>,
    pub settings: SettingsFile,
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Run the real data plane (`--data-plane strongswan`) with its files under this
    /// state directory (`dataplane/`); `None`: the operator's imitation.
    pub data_plane: Option<std::path::PathBuf>,
}

/// Why the sandbox could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("invalid settings: {0}")]
    Settings(String),
    #[error("cannot load the scenario")]
    Scenario(#[from] ScenarioError),
    #[error("cannot set up TLS")]
    Tls(#[from] tls::TlsError),
    #[error("cannot start the strongSwan data plane: {0}")]
    DataPlane(String),
    #[error("cannot listen on 127.0.0.1:{port}")]
    Listen {
        port: u16,
        #[source]
        source: std::io::Error,
    },
}

/// A running sandbox. Dropping it without [`Sandbox::shutdown`] aborts its tasks too.
pub struct Sandbox {
    pub addr: SocketAddr,
    pub store: Arc<Store>,
    pub operator: Arc<Operator>,
    /// The simulated Argo CD and Flux; their settings are changeable at run time.
    pub gitops: Arc<Gitops>,
    /// API fault knobs, changeable at run time.
    pub api_faults: Arc<RwLock<ApiFaults>>,
    /// The garbage collector's pace, changeable at run time.
    pub gc: Arc<RwLock<GcSettings>>,
    /// The admin user's bearer token.
    pub token: String,
    /// The namespace the kubeconfig's context selects: the scenario's first tenant.
    pub namespace: String,
    /// Requests served so far (every one but exec): what a benchmark counts.
    pub requests: Arc<std::sync::atomic::AtomicU64>,
    /// The real data plane, when one runs (`Config::data_plane`).
    pub data_plane: Option<Arc<crate::dataplane::Bed>>,
    users: Arc<Vec<User>>,
    ca_pem: String,
    stop: watch::Sender<bool>,
    server: Option<JoinHandle<()>>,
    collector: Option<JoinHandle<()>>,
}

impl Sandbox {
    /// Load the scenario, start the operator and serve HTTPS on 127.0.0.1.
    pub async fn start(config: Config) -> Result<Sandbox, StartError> {
        config
            .settings
            .operator
            .validate()
            .map_err(StartError::Settings)?;
        config
            .settings
            .api
            .validate()
            .map_err(StartError::Settings)?;
        config
            .settings
            .gitops
            .validate()
            .map_err(StartError::Settings)?;
        let store = Store::new();
        let namespace = scenario::load(&store, &config.scenario)?;
        let plane = match &config.data_plane {
            Some(dir) => {
                let o = &config.settings.operator;
                let timing = crate::dataplane::Timing {
                    retransmit_timeout_s: o.client_retransmit_ms as f64 / 1000.0,
                    retransmit_tries: 2,
                };
                Some(crate::dataplane::Bed::start(dir, timing).map_err(StartError::DataPlane)?)
            }
            None => None,
        };
        let operator = Operator::start_with(
            store.clone(),
            config.settings.operator.clone(),
            plane.clone(),
        );
        let gitops = Gitops::start(store.clone(), config.settings.gitops.clone());
        let tls = tls::generate()?;
        let listener = TcpListener::bind(("127.0.0.1", config.port))
            .await
            .map_err(|source| StartError::Listen {
                port: config.port,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| StartError::Listen {
            port: config.port,
            source,
        })?;
        let token = uuid::Uuid::new_v4().simple().to_string();
        let mut users = vec![User::admin(&token)];
        users.extend(config.settings.users.iter().cloned());
        let users = Arc::new(users);
        let api_faults = Arc::new(RwLock::new(config.settings.api.clone()));
        let (stop, stopped) = watch::channel(false);
        let requests = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let app = App {
            requests: requests.clone(),
            store: store.clone(),
            operator: operator.clone(),
            users: users.clone(),
            groups: Arc::new(config.settings.groups.clone()),
            faults: api_faults.clone(),
            addr: addr.to_string(),
            shutdown: stopped.clone(),
        };
        let router = Router::new()
            .route(
                "/api/v1/namespaces/{ns}/pods/{pod}/exec",
                get(exec::exec).post(exec::exec_post),
            )
            .fallback(api::handle)
            // No 2 MiB cut-off of axum's own: kube-apiserver reads bodies up to 3 MiB, and
            // the handler refuses larger ones with its 413 (crate::limits::check_body).
            .layer(axum::extract::DefaultBodyLimit::disable())
            .with_state(app);
        let acceptor = tokio_rustls::TlsAcceptor::from(tls.server.clone());
        let server = tokio::spawn(serve(listener, acceptor, router, stopped));
        let gc = Arc::new(RwLock::new(config.settings.gc.clone()));
        let collector = tokio::spawn(collect(store.clone(), gc.clone()));
        Ok(Sandbox {
            addr,
            store,
            operator,
            gitops,
            api_faults,
            token,
            namespace,
            requests,
            data_plane: plane,
            users,
            ca_pem: tls.ca_pem,
            gc,
            stop,
            server: Some(server),
            collector: Some(collector),
        })
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The generated CA certificate (PEM).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// A kubeconfig (YAML) for the admin user, context `vpnmig-sandbox`, namespace = the
    /// scenario's first tenant; one more context per extra user, `vpnmig-sandbox-<user>`.
    pub fn kubeconfig(&self) -> String {
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
        let mut contexts = Vec::new();
        let mut users = Vec::new();
        for (i, u) in self.users.iter().enumerate() {
            let ctx = if i == 0 {
                "vpnmig-sandbox".to_string()
            } else {
                format!("vpnmig-sandbox-{}", u.name)
            };
            contexts.push(json!({"name": ctx, "context": {"cluster": "vpnmig-sandbox", "user": u.name, "namespace": self.namespace}}));
            users.push(json!({"name": u.name, "user": {"token": u.token}}));
        }
        let cfg = json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "vpnmig-sandbox", "cluster": {"server": self.url(), "certificate-authority-data": ca}}],
            "contexts": contexts,
            "users": users,
            "current-context": "vpnmig-sandbox",
            "preferences": {}
        });
        serde_saphyr::to_string(&cfg).expect("kubeconfigs serialize")
    }

    /// Write [`Sandbox::kubeconfig`] to `path` (mode 0600).
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        use std::io::Write;
        #[cfg(unix)]
        use std::os::unix::fs::OpenOptionsExt;
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        opts.mode(0o600);
        let mut file = opts.open(path)?;
        // It holds a bearer token: owner-only, also when the file existed before.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        file.write_all(self.kubeconfig().as_bytes())
    }

    /// Stop serving, end every stream and connection, stop the operator.
    pub async fn shutdown(mut self) {
        self.stop.send_replace(true);
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
        if let Some(c) = self.collector.take() {
            c.abort();
        }
        self.operator.shutdown();
        self.gitops.shutdown();
        if let Some(p) = &self.data_plane {
            let p = p.clone();
            let _ = tokio::task::spawn_blocking(move || p.shutdown()).await;
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.stop.send_replace(true);
        if let Some(server) = self.server.take() {
            server.abort();
        }
        if let Some(c) = self.collector.take() {
            c.abort();
        }
        self.operator.shutdown();
        self.gitops.shutdown();
    }
}

/// The garbage collector: every `intervalMs`, unless paused, delete the dependents
/// whose owners are all gone (`Store::collect_orphans`).
async fn collect(store: Arc<Store>, gc: Arc<RwLock<GcSettings>>) {
    loop {
        let interval = gc.read().map(|g| g.interval_ms).unwrap_or(50);
        tokio::time::sleep(std::time::Duration::from_millis(interval.max(1))).await;
        // Read after the sleep: a pause set meanwhile holds for this pass too (a stale
        // read let a loaded machine collect right after a test paused the collector).
        if !gc.read().map(|g| g.paused).unwrap_or(false) {
            store.collect_orphans();
        }
    }
}

/// The client certificate a connection presented (the first of its chain), if any: an
/// extension of every request on it (read by the fault proxy, `crate::proxy`).
#[derive(Clone, Debug, Default)]
pub struct PeerCert(pub Option<Vec<u8>>);

/// Serve `router` over TLS on `listener` until `stopped` flips: HTTP/1.1 with upgrades
/// (exec), each connection's [`PeerCert`] in its requests' extensions.
pub(crate) async fn serve(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    router: Router,
    mut stopped: watch::Receiver<bool>,
) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stopped.changed() => break,
        };
        let Ok((tcp, _)) = accepted else { continue };
        // Watch events are small writes: without this, Nagle and delayed ACKs add 40 ms.
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let router = router.clone();
        connections.spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let peer = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|c| c.first())
                .map(|c| c.to_vec());
            let router = router.layer(axum::Extension(PeerCert(peer)));
            let service = hyper_util::service::TowerToHyperService::new(router);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tls), service)
                .with_upgrades()
                .await;
        });
        while connections.try_join_next().is_some() {}
    }
    connections.abort_all();
    while connections.join_next().await.is_some() {}
}
