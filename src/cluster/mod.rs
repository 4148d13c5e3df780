//! The thin Kubernetes layer: connecting like kubectl does, naming what was refused when
//! the API says no, retrying what is transient, and listing the operator's objects. The
//! pure core never sees a client; commands compose the two.

pub mod delete;
pub mod facts;
pub mod gitops;
pub mod journal;
pub mod list;
pub mod lock;
mod notice;
pub mod objects;
pub mod verify;
pub mod watch;

use std::path::PathBuf;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::core::model::{NEW_GROUP, OLD_GROUP, VERSION};

pub use notice::{Notice, Notices};

/// How to reach the cluster: kubectl's flags.
#[derive(Clone, Debug, Default)]
pub struct ClusterOptions {
    /// `--kubeconfig`: one file. Without it, `KUBECONFIG` (several files, merged) or
    /// `~/.kube/config`, else the in-cluster service account.
    pub kubeconfig: Option<PathBuf>,
    /// `--context`: instead of the kubeconfig's current context.
    pub context: Option<String>,
    /// `--cluster`: instead of the context's cluster.
    pub cluster: Option<String>,
    /// `--user`: instead of the context's user.
    pub user: Option<String>,
    /// `-n/--namespace`: instead of the context's namespace.
    pub namespace: Option<String>,
    /// `--as`: the user to impersonate (`Impersonate-User`).
    pub impersonate: Option<String>,
    /// `--as-group`: the groups to impersonate (`Impersonate-Group`, one header each).
    pub impersonate_groups: Vec<String>,
    /// `--request-timeout`: connect and read timeout of each request.
    pub request_timeout: Option<Duration>,
    /// Where the retries, waits and the lock's news go (rendered by
    /// `src/output/cluster.rs` in the CLI); by default nowhere.
    pub notices: Notices,
}

/// A connected cluster and where commands act.
#[derive(Clone)]
pub struct Cluster {
    pub client: Client,
    /// The context used (`in-cluster` for the service account).
    pub context: String,
    /// The API server URL.
    pub server: String,
    /// The namespace commands act on: `-n`, else the context's.
    pub namespace: String,
    /// How long one attempt of one API call may take (`--request-timeout`, else
    /// [`CALL_TIMEOUT`]).
    pub call_timeout: Duration,
    /// Where this layer's notices go (retries, waits, the lock, the PSK guard).
    pub notices: Notices,
}

/// Why the cluster could not be reached or answered no.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    #[error("cannot load the kubeconfig: {0}")]
    Config(String),
    #[error(
        "the cluster refused the credentials of context {context} (401 Unauthorized) while trying to {verb} {what}"
    )]
    Unauthorized {
        context: String,
        verb: String,
        what: String,
    },
    #[error("forbidden: cannot {verb} {what}{scope}: {message}")]
    Forbidden {
        verb: String,
        what: String,
        scope: String,
        message: String,
    },
    #[error(
        "{group_version} is served by {server} but has no kind {kind}: the operator's CRDs are not those of v0.3.0"
    )]
    KindMissing {
        kind: String,
        group_version: String,
        server: String,
    },
    /// The API server could not be reached at all: no answer is a verdict (DESIGN.md §4.9).
    #[error("{how} to {server} (context {context}): is the cluster up, is this the right context?")]
    Unreachable {
        how: String,
        server: String,
        context: String,
    },
    /// A call that got no answer within its deadline, retries included.
    #[error("{verb} {what}{scope}: {server} gave no answer within {seconds}s (retries included)")]
    Deadline {
        verb: String,
        what: String,
        scope: String,
        server: String,
        seconds: u64,
    },
    #[error("{what}{} not found", scope_of(what, namespace))]
    NotFound {
        what: String,
        namespace: String,
        /// Whether the namespace exists (None: could not be told): a wrong `-n` is the
        /// commonest cause, and `kubectl get … -n NS` would only say "No resources".
        namespace_exists: Option<bool>,
    },
    #[error(
        "{group}/{VERSION} is not served by {server}: the gateway operator v0.3.0 (which serves {NEW_GROUP} beside {OLD_GROUP}) is not installed"
    )]
    OperatorMissing { group: &'static str, server: String },
    /// The API's answer is part of the message (as `describe` renders it: the status
    /// message, code and reason, not the debug form of the whole Status).
    #[error("cannot {verb} {what}{scope}: {}", describe(answer))]
    Api {
        verb: String,
        what: String,
        scope: String,
        answer: kube::Error,
    },
}

impl KubeError {
    /// The API server gave no verdict: not reached, no answer within the deadline, or a
    /// server error (5xx, 429) that outlasted the retries. Running the same command again
    /// once it answers is the way on.
    pub fn no_answer(&self) -> bool {
        match self {
            KubeError::Unreachable { .. } | KubeError::Deadline { .. } => true,
            KubeError::Api {
                answer: kube::Error::Api(s),
                ..
            } => s.code >= 500 || s.code == 429,
            KubeError::Api { .. } => true,
            _ => false,
        }
    }

    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            KubeError::Config(m) if m.starts_with("--") && m.contains(": no such ") => Some(
                "pick one of those, or see them with `kubectl config get-contexts`".into(),
            ),
            KubeError::Config(_) => Some("set KUBECONFIG, pass --kubeconfig FILE, or run inside the cluster".into()),
            KubeError::Unauthorized { .. } => Some("log in again (your token may have expired) or pick another --context".into()),
            KubeError::Forbidden { .. } => Some("ask for the missing permission, or use a context that has it".into()),
            KubeError::OperatorMissing { .. } | KubeError::KindMissing { .. } => Some("check the context (`kubectl config current-context`) and `kubectl api-resources --api-group=vpn.bnerd.net`".into()),
            KubeError::NotFound {
                namespace,
                namespace_exists: Some(false),
                ..
            } => Some(format!(
                "namespace {namespace} does not exist: pass the gateway's namespace with -n (`kubectl get ipsecgateways,vpngateways -A` lists them all)"
            )),
            KubeError::NotFound { namespace, .. } => Some(format!("list what there is with `kubectl get ipsecgateways -n {namespace}`, or pass -n NAMESPACE")),
            KubeError::Unreachable { context, .. } => Some(format!(
                "`kubectl cluster-info --context {context}` tells whether the API server answers"
            )),
            KubeError::Deadline { .. } => Some(
                "the API server is overloaded or unreachable: look at its health (`kubectl get --raw /readyz?verbose`), or pass a longer --request-timeout".into(),
            ),
            KubeError::Api { .. } => None,
        }
    }
}

/// The one retry policy of every API call (issue 14 item 5; DESIGN.md §4.9). kube-rs's
/// own retry layer is turned off (`Config::default_retry`): it retried 503s up to 15
/// times with delays up to 1000 s, silently, under vpnmig's own attempts.
///
/// How many times a transient failure (429, 5xx, a dropped connection, an attempt that
/// did not answer in time) is tried.
const ATTEMPTS: u32 = 5;
/// How long one call may take with all its retries.
const CALL_BUDGET: Duration = Duration::from_secs(60);
/// The longest `Retry-After` honoured; a longer one is shortened to this (and said so).
const RETRY_AFTER_CAP: Duration = Duration::from_secs(10);
/// One attempt's deadline when `--request-timeout` is not given.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// While an attempt is unanswered, a line every this often: no call is silent longer.
const TICK: Duration = Duration::from_secs(5);

/// How a request failed to reach the API server at all (refused, timed out, no route,
/// name not resolved, TLS), read from the error's causes; `None` when the server
/// answered (or the cause is something else).
pub fn unreachable(e: &kube::Error) -> Option<String> {
    if !matches!(e, kube::Error::HyperError(_) | kube::Error::Service(_)) {
        return None;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut texts = Vec::new();
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            return Some(match io.kind() {
                K::ConnectionRefused => "connection refused".into(),
                K::TimedOut => "connection timed out".into(),
                K::ConnectionReset | K::ConnectionAborted => "connection reset".into(),
                K::HostUnreachable | K::NetworkUnreachable => "no route".into(),
                _ => format!("cannot connect ({io})"),
            });
        }
        texts.push(s.to_string());
        source = s.source();
    }
    let all = texts.join(": ").to_lowercase();
    if all.contains("connect")
        || all.contains("dns")
        || all.contains("timed out")
        || all.contains("elapsed")
    {
        return Some(format!(
            "cannot connect ({})",
            texts.last().map(String::as_str).unwrap_or("?")
        ));
    }
    None
}

/// A kube error as one readable line: an API status as `message (code Reason)`, not its
/// debug dump.
pub fn describe(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("{} ({} {})", s.message, s.code, s.reason),
        other => other.to_string(),
    }
}

/// The server's `Retry-After` of a refusal, in seconds (`Status.details.retryAfterSeconds`,
/// which the API server sets with the header).
fn retry_after(e: &kube::Error) -> Option<u64> {
    match e {
        kube::Error::Api(s) => s
            .details
            .as_ref()
            .map(|d| u64::from(d.retry_after_seconds))
            .filter(|s| *s > 0),
        _ => None,
    }
}

fn transient(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => s.code >= 500 || s.code == 429,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// Where a call acts, after what it acts on: ` -n NS` after one object (`secret/acme-psk
/// -n tenant-acme`, as kubectl takes it: issue 13 item 5), ` in namespace NS` after a
/// list (`list vpngateways in namespace tenant-acme`).
pub fn scope_of(what: &str, namespace: &str) -> String {
    if what.contains('/') {
        format!(" -n {namespace}")
    } else {
        format!(" in namespace {namespace}")
    }
}

impl Cluster {
    /// Load the config like kubectl and build a client. Nothing is sent yet.
    pub async fn connect(opts: &ClusterOptions) -> Result<Cluster, KubeError> {
        let kco = KubeConfigOptions {
            context: opts.context.clone(),
            cluster: opts.cluster.clone(),
            user: opts.user.clone(),
        };
        let loaded = match &opts.kubeconfig {
            Some(path) if !path.exists() => {
                return Err(KubeError::Config(format!(
                    "--kubeconfig {}: no such file",
                    path.display()
                )));
            }
            Some(path) => Some(
                Kubeconfig::read_from(path)
                    .map_err(|e| KubeError::Config(format!("{}: {e}", path.display())))?,
            ),
            None => {
                // KUBECONFIG naming files that are not there is a mistake to name, not a
                // reason to fall back to in-cluster config (issue 10 item 2).
                if let Some(list) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
                    let paths: Vec<PathBuf> = std::env::split_paths(&list)
                        .filter(|p| !p.as_os_str().is_empty())
                        .collect();
                    let missing: Vec<String> = paths
                        .iter()
                        .filter(|p| !p.exists())
                        .map(|p| p.display().to_string())
                        .collect();
                    if missing.len() == paths.len() {
                        return Err(KubeError::Config(format!(
                            "KUBECONFIG names {}, which does not exist",
                            missing.join(", ")
                        )));
                    }
                    for m in &missing {
                        opts.notices
                            .emit(Notice::KubeconfigMissing { path: m.clone() });
                    }
                    // Merged in order, the first to set a value wins (kubectl's rules);
                    // missing files skipped as kubectl skips them, unreadable ones named.
                    let mut merged = Kubeconfig::default();
                    for p in paths.iter().filter(|p| p.exists()) {
                        let kc = Kubeconfig::read_from(p)
                            .map_err(|e| KubeError::Config(format!("{}: {e}", p.display())))?;
                        merged = merged
                            .merge(kc)
                            .map_err(|e| KubeError::Config(format!("KUBECONFIG: {e}")))?;
                    }
                    Some(merged)
                } else {
                    Kubeconfig::read().ok()
                }
            }
        };
        let (mut config, context) = match loaded {
            Some(kc) => {
                let context = opts
                    .context
                    .clone()
                    .or_else(|| kc.current_context.clone())
                    .unwrap_or_default();
                // kubectl's `context "X" does not exist`, with the ones there are; likewise
                // --cluster and --user.
                let named = |flag: &str, want: &Option<String>, have: Vec<&str>| match want {
                    Some(w) if !have.contains(&w.as_str()) => Err(KubeError::Config(format!(
                        "{flag} {w}: no such {} in the kubeconfig (it has: {})",
                        &flag[2..],
                        if have.is_empty() {
                            "none".into()
                        } else {
                            have.join(", ")
                        }
                    ))),
                    _ => Ok(()),
                };
                named(
                    "--context",
                    &opts.context,
                    kc.contexts.iter().map(|c| c.name.as_str()).collect(),
                )?;
                named(
                    "--cluster",
                    &opts.cluster,
                    kc.clusters.iter().map(|c| c.name.as_str()).collect(),
                )?;
                named(
                    "--user",
                    &opts.user,
                    kc.auth_infos.iter().map(|c| c.name.as_str()).collect(),
                )?;
                let config = Config::from_custom_kubeconfig(kc, &kco)
                    .await
                    .map_err(|e| KubeError::Config(e.to_string()))?;
                (config, context)
            }
            None => (
                Config::incluster().map_err(|e| {
                    KubeError::Config(format!("no kubeconfig found and not in a cluster ({e})"))
                })?,
                "in-cluster".to_string(),
            ),
        };
        // kubectl's --as/--as-group: kube sends them as Impersonate-* headers; they replace
        // whatever the kubeconfig's user says, as with kubectl.
        if let Some(user) = &opts.impersonate {
            config.auth_info.impersonate = Some(user.clone());
            config.auth_info.impersonate_groups =
                (!opts.impersonate_groups.is_empty()).then(|| opts.impersonate_groups.clone());
        }
        if let Some(t) = opts.request_timeout {
            config.connect_timeout = Some(t);
            config.read_timeout = Some(t);
        }
        // Every retry is `call`'s, bounded and shown; none hidden in the client.
        config.default_retry = false;
        // Named as kubectl names itself: the API server's audit log shows it, and takes
        // its product (`vpnmig`) as the field manager of a write that names none.
        config.headers.push((
            http::header::USER_AGENT,
            http::HeaderValue::from_str(&format!(
                "vpnmig/{} ({}/{})",
                env!("CARGO_PKG_VERSION"),
                std::env::consts::OS,
                std::env::consts::ARCH
            ))
            .expect("a version and a platform name are header text"),
        ));
        let call_timeout = opts.request_timeout.unwrap_or(CALL_TIMEOUT);
        let namespace = opts
            .namespace
            .clone()
            .unwrap_or_else(|| config.default_namespace.clone());
        let server = config
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_string();
        let client = Client::try_from(config).map_err(|e| KubeError::Config(e.to_string()))?;
        Ok(Cluster {
            client,
            context,
            server,
            namespace,
            call_timeout,
            notices: opts.notices.clone(),
        })
    }

    /// The line every command prints first (text mode): where it acts.
    pub fn banner(&self, all_namespaces: bool) -> String {
        let ns = if all_namespaces {
            "all namespaces".to_string()
        } else {
            format!("namespace {}", self.namespace)
        };
        format!("context {}, server {}, {ns}", self.context, self.server)
    }

    /// `what` not found in the cluster's namespace, with whether that namespace exists
    /// (one more read; the hint of a wrong `-n` depends on it).
    pub async fn not_found(&self, what: String) -> KubeError {
        use k8s_openapi::api::core::v1::Namespace;
        let ns = self.namespace.clone();
        let api: kube::Api<Namespace> = kube::Api::all(self.client.clone());
        let exists = self
            .call("get", &format!("namespace/{ns}"), None, || api.get_opt(&ns))
            .await
            .ok()
            .map(|o| o.is_some());
        KubeError::NotFound {
            what,
            namespace: ns,
            namespace_exists: exists,
        }
    }

    /// Fail early, with a clear message, when the operator's groups are not served.
    pub async fn require_operator(&self) -> Result<(), KubeError> {
        let groups = self
            .call("list", "API groups", None, || self.client.list_api_groups())
            .await?;
        for group in [NEW_GROUP, OLD_GROUP] {
            let served = groups
                .groups
                .iter()
                .any(|g| g.name == group && g.versions.iter().any(|v| v.version == VERSION));
            if !served {
                return Err(KubeError::OperatorMissing {
                    group,
                    server: self.server.clone(),
                });
            }
            // The group is there; each kind vpnmig uses must be too.
            let gv = format!("{group}/{VERSION}");
            let resources = self
                .call("list", &format!("API resources of {gv}"), None, || {
                    self.client.list_api_group_resources(&gv)
                })
                .await?;
            let kinds: &[&str] = if group == NEW_GROUP {
                &["VPNGateway", "VPNPeer"]
            } else {
                &["IPsecGateway"]
            };
            if let Some(missing) = kinds
                .iter()
                .find(|k| !resources.resources.iter().any(|r| r.kind == **k))
            {
                return Err(KubeError::KindMissing {
                    kind: missing.to_string(),
                    group_version: gv,
                    server: self.server.clone(),
                });
            }
        }
        Ok(())
    }

    /// Run one API call under the retry policy ([`ATTEMPTS`], [`CALL_BUDGET`]): each
    /// attempt has a deadline (`call_timeout`) and says every [`TICK`] that it is still
    /// waiting; a transient failure is retried after a backoff or the server's
    /// `Retry-After` (capped at [`RETRY_AFTER_CAP`]), each reported as a [`Notice`]; a refusal becomes
    /// an error naming the verb, the resource and the namespace.
    pub async fn call<T, F, Fut>(
        &self,
        verb: &str,
        what: &str,
        namespace: Option<&str>,
        f: F,
    ) -> Result<T, KubeError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T, kube::Error>>,
    {
        let scope = namespace.map(|n| scope_of(what, n)).unwrap_or_default();
        let started = std::time::Instant::now();
        let mut delay = Duration::from_millis(200);
        let mut attempt = 1;
        loop {
            let left = CALL_BUDGET.saturating_sub(started.elapsed());
            let outcome = self
                .attempt(verb, what, &scope, self.call_timeout.min(left), f())
                .await;
            let e = match outcome {
                Some(Ok(v)) => return Ok(v),
                Some(Err(e)) => e,
                None => {
                    // No answer in time: a deadline, not a verdict.
                    if attempt < ATTEMPTS
                        && !CALL_BUDGET.saturating_sub(started.elapsed()).is_zero()
                    {
                        self.notices.emit(Notice::NoAnswer {
                            verb: verb.into(),
                            what: what.into(),
                            scope: scope.clone(),
                            seconds: self.call_timeout.min(left).as_secs(),
                            attempt,
                            retries: ATTEMPTS - 1,
                        });
                        attempt += 1;
                        continue;
                    }
                    return Err(KubeError::Deadline {
                        verb: verb.into(),
                        what: what.into(),
                        scope,
                        server: self.server.clone(),
                        seconds: started.elapsed().as_secs(),
                    });
                }
            };
            let left = CALL_BUDGET.saturating_sub(started.elapsed());
            if !transient(&e) || attempt >= ATTEMPTS || left.is_zero() {
                return Err(self.error(verb, what, namespace, e));
            }
            let (wait, why) = match retry_after(&e) {
                Some(s) if Duration::from_secs(s) > RETRY_AFTER_CAP => (
                    RETRY_AFTER_CAP,
                    format!("Retry-After {s}s, capped at {}s", RETRY_AFTER_CAP.as_secs()),
                ),
                Some(s) => (Duration::from_secs(s), "Retry-After".to_string()),
                None => (delay, "backoff".to_string()),
            };
            let wait = wait.min(left);
            let cause = unreachable(&e)
                .map(|how| format!("{how} to {}", self.server))
                .unwrap_or_else(|| describe(&e));
            let busy = matches!(&e, kube::Error::Api(s) if s.code == 429 || s.code == 503);
            self.notices.emit(Notice::Retrying {
                verb: verb.into(),
                what: what.into(),
                scope: scope.clone(),
                cause,
                busy,
                wait,
                why,
                attempt,
                retries: ATTEMPTS - 1,
            });
            // A long wait says so as it goes: never silent for more than a TICK.
            let until = std::time::Instant::now() + wait;
            loop {
                let left = until.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                tokio::time::sleep(left.min(TICK)).await;
                let left = until.saturating_duration_since(std::time::Instant::now());
                if !left.is_zero() {
                    self.notices.emit(Notice::RetryingIn {
                        verb: verb.into(),
                        what: what.into(),
                        scope: scope.clone(),
                        left,
                    });
                }
            }
            delay *= 2;
            attempt += 1;
        }
    }

    /// One attempt of a call, at most `deadline`, saying every [`TICK`] that it waits.
    /// `None`: no answer in time.
    async fn attempt<T>(
        &self,
        verb: &str,
        what: &str,
        scope: &str,
        deadline: Duration,
        fut: impl std::future::Future<Output = Result<T, kube::Error>>,
    ) -> Option<Result<T, kube::Error>> {
        let started = std::time::Instant::now();
        let mut fut = std::pin::pin!(fut);
        loop {
            let left = deadline.saturating_sub(started.elapsed());
            if left.is_zero() {
                return None;
            }
            match tokio::time::timeout(left.min(TICK), &mut fut).await {
                Ok(r) => return Some(r),
                Err(_) if started.elapsed() < deadline => self.notices.emit(Notice::Unanswered {
                    server: self.server.clone(),
                    verb: verb.into(),
                    what: what.into(),
                    scope: scope.into(),
                    elapsed: started.elapsed(),
                    deadline,
                }),
                Err(_) => return None,
            }
        }
    }

    /// A failed call as a [`KubeError`]: 401 and 403 name the verb, resource and
    /// namespace; anything else keeps its source.
    pub fn error(
        &self,
        verb: &str,
        what: &str,
        namespace: Option<&str>,
        e: kube::Error,
    ) -> KubeError {
        let scope = namespace.map(|n| scope_of(what, n)).unwrap_or_default();
        match e {
            kube::Error::Api(s) if s.code == 401 => KubeError::Unauthorized {
                context: self.context.clone(),
                verb: verb.into(),
                what: what.into(),
            },
            // A webhook's denial is an answer about the object, not about permissions.
            kube::Error::Api(s)
                if s.code == 403 && !s.message.starts_with("admission webhook \"") =>
            {
                KubeError::Forbidden {
                    verb: verb.into(),
                    what: what.into(),
                    scope,
                    message: s.message.clone(),
                }
            }
            answer if unreachable(&answer).is_some() => KubeError::Unreachable {
                how: unreachable(&answer).unwrap_or_default(),
                server: self.server.clone(),
                context: self.context.clone(),
            },
            answer => KubeError::Api {
                verb: verb.into(),
                what: what.into(),
                scope,
                answer,
            },
        }
    }
}
