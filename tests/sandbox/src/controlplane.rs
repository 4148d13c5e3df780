//! A real Kubernetes control plane on 127.0.0.1: etcd, kube-apiserver,
//! kube-controller-manager and kwok (the kubelet stand-in), built from their Go modules by
//! `tests/controlplane/build.sh` into `target/controlplane/bin/`.
//!
//! What it sets up, as a small real cluster has it: a CA generated per start, the API
//! server's serving certificate, client certificates for the administrator (`system:masters`)
//! and the controller manager, RBAC authorization, a service-account signing key, the
//! default admission plugins, and one kwok Node that answers pod exec by running a local
//! command (`kwok.x-k8s.io` ClusterExec). Ports are chosen free, so two run at once.
//!
//! Every process runs in its own process group, is told to die with the thread that
//! started it (`PR_SET_PDEATHSIG`: start it from a thread that lives as long as the control
//! plane should, never from a pool's thread), and is written down in `DIR/pids`; a later
//! start kills what a SIGKILLed parent left behind before it starts anything.

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, ValidationDirective,
};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

/// The pinned binaries, and where they are.
pub const BINARIES: [&str; 5] = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kubectl",
    "kwok",
];

/// Why the control plane could not be started.
#[derive(Debug, thiserror::Error)]
pub enum ControlPlaneError {
    #[error(
        "the real control plane is not built: {0} is missing (run tests/controlplane/build.sh; a cold build takes tens of minutes)"
    )]
    NotBuilt(PathBuf),
    #[error("cannot generate the control plane's certificates")]
    Cert(#[from] rcgen::Error),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{component} did not become ready within {secs} s; its log ends:\n{log}")]
    NotReady {
        component: &'static str,
        secs: u64,
        log: String,
    },
    /// A request of the start (or of a load) that the API server refused or did not answer.
    #[error("{0}")]
    Api(String),
    #[error("{component} exited ({status}); its log ends:\n{log}")]
    Exited {
        component: &'static str,
        status: String,
        log: String,
    },
}

impl From<String> for ControlPlaneError {
    fn from(e: String) -> Self {
        ControlPlaneError::Api(e)
    }
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ControlPlaneError {
    let what = what.into();
    move |source| ControlPlaneError::Io { what, source }
}

/// `target/controlplane/bin` of this workspace, or `VPNMIG_CONTROLPLANE_BIN`.
pub fn bin_dir() -> PathBuf {
    std::env::var_os("VPNMIG_CONTROLPLANE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/controlplane/bin")
        })
}

/// The binaries' directory when every one of them is there.
pub fn built() -> Result<PathBuf, ControlPlaneError> {
    let dir = bin_dir();
    for b in BINARIES {
        if !dir.join(b).is_file() {
            return Err(ControlPlaneError::NotBuilt(dir.join(b)));
        }
    }
    Ok(dir)
}

/// A user of the cluster, authenticated by a client certificate signed by the cluster's CA.
#[derive(Clone, Debug)]
pub struct ClientCert {
    pub name: String,
    pub groups: Vec<String>,
    pub cert_pem: String,
    pub key_pem: String,
}

/// A running control plane. Dropping it stops every process and removes its directory.
pub struct ControlPlane {
    /// `https://127.0.0.1:PORT`
    pub url: String,
    pub ca_pem: String,
    pub admin: ClientCert,
    ca: Issuer<'static, KeyPair>,
    dir: tempfile::TempDir,
    bin: PathBuf,
    children: Vec<(&'static str, Child)>,
    phases: Vec<(&'static str, Duration)>,
    /// When the last Established transition of a CRD [`load`] installed is 2 s old (see
    /// [`ControlPlane::until_crds_settled`]).
    settled: std::sync::Mutex<Option<jiff::Timestamp>>,
}

/// A port free now and below the kernel's ephemeral range (`ip_local_port_range`). A port
/// the kernel hands out (`127.0.0.1:0`) is an ephemeral one: between choosing it and the
/// component binding it (kwok's comes seconds later), any outgoing connection on the host
/// (another control plane's etcd clients, a kubectl) may take it as its source port, and the
/// component fails with "address already in use" (seen with several control planes
/// starting at once). Below that range only an explicit bind can take it.
fn free_port() -> Result<u16, ControlPlaneError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEED: AtomicU64 = AtomicU64::new(0);
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768)
        .clamp(12000, 61000);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut x = SEED.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
        ^ nanos
        ^ (u64::from(std::process::id()) << 32)
        | 1;
    // Never the same port twice in one process: a bind test says only that nobody listens
    // now, not that another plane of this process (or this plane's other component) was not
    // handed it a moment ago. Four ports drawn at random from ~22,000 for each of the ~1,000
    // planes of a full run met once in a while (etcd exited 1 in CI, stop 40).
    static HANDED: std::sync::Mutex<Option<std::collections::HashSet<u16>>> =
        std::sync::Mutex::new(None);
    let mut handed = HANDED.lock().unwrap_or_else(|e| e.into_inner());
    let handed = handed.get_or_insert_with(Default::default);
    if handed.len() > usize::from(low - 10000) / 2 {
        handed.clear();
    }
    for _ in 0..200 {
        // xorshift64
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let port = 10000 + (x % u64::from(low - 10000)) as u16;
        if !handed.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            handed.insert(port);
            return Ok(port);
        }
    }
    let l = TcpListener::bind("127.0.0.1:0").map_err(io("choose a free port"))?;
    Ok(l.local_addr().map_err(io("choose a free port"))?.port())
}

fn write(path: &Path, text: &str) -> Result<(), ControlPlaneError> {
    std::fs::write(path, text).map_err(io(path.display().to_string()))
}

/// Replace `path` whole: another process's [`reap_stale`] reads the pid file at any moment
/// and must never see it empty or half written.
fn write_whole(path: &Path, text: &str) -> Result<(), ControlPlaneError> {
    let next = path.with_extension("next");
    write(&next, text)?;
    std::fs::rename(&next, path).map_err(io(path.display().to_string()))
}

fn tail(path: &Path) -> String {
    let text = match std::fs::read(path) {
        Ok(bytes) if bytes.is_empty() => return format!("({} is empty)", path.display()),
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => return format!("(cannot read {}: {e})", path.display()),
    };
    let lines: Vec<&str> = text.lines().collect();
    let last = lines[lines.len().saturating_sub(15)..].join("\n");
    // The cause first: a log's last lines are often warnings after it, and a CI printer
    // that cuts the middle of a long message cut etcd's cause away (stop 40).
    // klog's error and fatal lines start `E1207`, `F1207`; etcd's and kwok's are JSON.
    let klog = |l: &str| {
        let b = l.as_bytes();
        b.len() > 5 && matches!(b[0], b'E' | b'F') && b[1..5].iter().all(u8::is_ascii_digit)
    };
    let cause = lines.iter().rev().find(|l| {
        let low = l.to_ascii_lowercase();
        klog(l)
            || ["fatal", "panic", "\"level\":\"error\"", "already in use"]
                .iter()
                .any(|k| low.contains(k))
    });
    match cause {
        Some(cause) => format!("cause: {cause}\n{last}"),
        None => last,
    }
}

/// Kill the processes a parent that was SIGKILLed left behind: each `pids` file under the
/// state root whose directory is gone from use (its owner's pid is not alive).
fn reap_stale(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let pids = e.path().join("pids");
        let Ok(text) = std::fs::read_to_string(&pids) else {
            continue;
        };
        let mut lines = text.lines();
        let owner: Option<i32> = lines
            .next()
            .and_then(|l| l.strip_prefix("owner "))
            .and_then(|p| p.parse().ok());
        // Only a directory whose owner is named and gone is stale. One without an owner line
        // is being started (or its file is being replaced) by a live control plane: removing
        // it took that plane's certificates away, and its kube-apiserver exited 1 with its
        // log gone (seen in CI with several planes starting at once).
        let Some(owner) = owner else { continue };
        if Path::new(&format!("/proc/{owner}")).exists() {
            continue;
        }
        for pgid in lines.filter_map(|l| l.split_whitespace().nth(1)?.parse::<i32>().ok()) {
            // The whole process group: the component and anything it started.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{pgid}")])
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(e.path());
    }
}

/// The directory under which every control plane keeps its state and pid file.
pub fn state_root() -> PathBuf {
    std::env::temp_dir().join("vpnmig-controlplane")
}

impl ControlPlane {
    /// Start etcd, kube-apiserver, kube-controller-manager and kwok, and wait until the API
    /// server is ready and kwok's Node is Ready.
    pub fn start() -> Result<Self, ControlPlaneError> {
        let mut mark = Instant::now();
        let bin = built()?;
        let root = state_root();
        std::fs::create_dir_all(&root).map_err(io(root.display().to_string()))?;
        reap_stale(&root);
        let dir = tempfile::Builder::new()
            .prefix("cp-")
            .tempdir_in(&root)
            .map_err(io("create the control plane's directory"))?;
        let d = dir.path().to_path_buf();

        // Certificates: one CA signs the API server's serving certificate and every client.
        let ca_key = KeyPair::generate()?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "vpnmig-controlplane-ca");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_pem = ca_params.self_signed(&ca_key)?.pem();
        let ca = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(vec![
            "localhost".to_string(),
            "kubernetes".into(),
            "kubernetes.default".into(),
            "kubernetes.default.svc".into(),
        ])?;
        for ip in [[127, 0, 0, 1], [10, 0, 0, 1]] {
            params
                .subject_alt_names
                .push(SanType::IpAddress(std::net::IpAddr::from(ip)));
        }
        params
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        let serving = params.signed_by(&key, &ca)?;
        write(&d.join("ca.crt"), &ca_pem)?;
        write(&d.join("apiserver.crt"), &serving.pem())?;
        write(&d.join("apiserver.key"), &key.serialize_pem())?;
        // The service-account signing key (ES256), which tokens are signed and checked with.
        let sa_key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
        write(&d.join("sa.key"), &sa_key.serialize_pem())?;
        write(&d.join("sa.pub"), &sa_key.public_key_pem())?;

        let etcd_port = free_port()?;
        let peer_port = free_port()?;
        let api_port = free_port()?;
        let kwok_port = free_port()?;
        let url = format!("https://127.0.0.1:{api_port}");
        let admin = client_cert(&ca, "vpnmig-admin", &["system:masters"])?;
        let mut cp = ControlPlane {
            url,
            ca_pem,
            admin,
            ca,
            dir,
            bin,
            children: Vec::new(),
            phases: Vec::new(),
            settled: std::sync::Mutex::new(None),
        };
        write_whole(&d.join("pids"), &format!("owner {}\n", std::process::id()))?;

        cp.spawn(
            "etcd",
            &[
                "--name=vpnmig".into(),
                format!("--data-dir={}", d.join("etcd").display()),
                format!("--listen-client-urls=http://127.0.0.1:{etcd_port}"),
                format!("--advertise-client-urls=http://127.0.0.1:{etcd_port}"),
                format!("--listen-peer-urls=http://127.0.0.1:{peer_port}"),
                format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}"),
                format!("--initial-cluster=vpnmig=http://127.0.0.1:{peer_port}"),
                "--listen-metrics-urls=".into(),
                "--unsafe-no-fsync=true".into(),
                "--log-level=warn".into(),
            ],
        )?;
        let sa = d.join("sa.key").display().to_string();
        cp.spawn(
            "kube-apiserver",
            &[
                format!("--etcd-servers=http://127.0.0.1:{etcd_port}"),
                "--bind-address=127.0.0.1".into(),
                "--advertise-address=127.0.0.1".into(),
                // The `kubernetes` Service's endpoints may not be a loopback address.
                "--endpoint-reconciler-type=none".into(),
                format!("--secure-port={api_port}"),
                format!("--tls-cert-file={}", d.join("apiserver.crt").display()),
                format!(
                    "--tls-private-key-file={}",
                    d.join("apiserver.key").display()
                ),
                format!("--client-ca-file={}", d.join("ca.crt").display()),
                "--authorization-mode=RBAC".into(),
                format!("--service-account-issuer=https://127.0.0.1:{api_port}"),
                format!("--service-account-key-file={}", d.join("sa.pub").display()),
                format!("--service-account-signing-key-file={sa}"),
                "--service-cluster-ip-range=10.0.0.0/24".into(),
                "--allow-privileged=true".into(),
                "--kubelet-preferred-address-types=InternalIP".into(),
                "--profiling=false".into(),
            ],
        )?;
        let admin_kubeconfig = d.join("admin.kubeconfig");
        write(&admin_kubeconfig, &cp.kubeconfig(&[&cp.admin], None))?;
        cp.wait_ready()?;
        cp.phase("certificates, etcd and kube-apiserver ready", &mut mark);
        let kcm = client_cert(&cp.ca, "system:kube-controller-manager", &[])?;
        let kcm_kubeconfig = d.join("kcm.kubeconfig");
        write(&kcm_kubeconfig, &cp.kubeconfig(&[&kcm], None))?;
        cp.spawn(
            "kube-controller-manager",
            &[
                format!("--kubeconfig={}", kcm_kubeconfig.display()),
                "--leader-elect=false".into(),
                "--bind-address=127.0.0.1".into(),
                "--secure-port=0".into(),
                "--controllers=garbage-collector-controller,namespace-controller,deployment-controller,replicaset-controller,serviceaccount-controller,serviceaccount-token-controller".into(),
                format!("--service-account-private-key-file={sa}"),
                format!("--root-ca-file={}", d.join("ca.crt").display()),
                "--use-service-account-credentials=true".into(),
                "--profiling=false".into(),
            ],
        )?;
        // kwok: the kubelet stand-in. Its stages are the pinned module's own "fast" stages,
        // which build.sh copied beside the binary.
        let stages = std::fs::read_to_string(cp.bin.join("kwok-stages.yaml")).map_err(io(cp
            .bin
            .join("kwok-stages.yaml")
            .display()
            .to_string()))?;
        write(
            &d.join("kwok.yaml"),
            &format!("{stages}\n---\n{}", cluster_exec(&d)),
        )?;
        // kwok's namespaced `Exec` is served as a CRD: a pod's own Exec (written by the
        // operator) tells the command which pod it answers for; the ClusterExec above is
        // every other pod's.
        let exec_crd = parse_manifests(KWOK_EXEC_CRD)?;
        cp.with_admin(async |cp, a| {
            for o in &exec_crd {
                a.apply(o).await?;
            }
            cp.check_alive()?;
            wait_established(&a.client, Duration::from_secs(30)).await?;
            Ok(())
        })?;
        cp.phase("kwok's Exec CRD Established", &mut mark);
        // kwok looks the command up in its own PATH (Go's exec.Command), then runs it with
        // the ClusterExec's environment: both start with `exec/`.
        cp.spawn_env(
            "kwok",
            &[
                format!("--kubeconfig={}", admin_kubeconfig.display()),
                "--manage-all-nodes=false".into(),
                "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake".into(),
                "--node-ip=127.0.0.1".into(),
                format!("--node-port={kwok_port}"),
                format!("--server-address=127.0.0.1:{kwok_port}"),
                format!("--config={}", d.join("kwok.yaml").display()),
                "--enable-crds=Exec".into(),
            ],
            &[("PATH", exec_path(&d))],
        )?;
        let node = parse_manifests(NODE)?;
        cp.with_admin(async |cp, a| {
            a.apply(&node[0]).await?;
            cp.wait_node_ready(&a.client).await
        })?;
        cp.phase("kwok's Node Ready", &mut mark);
        Ok(cp)
    }

    fn phase(&mut self, what: &'static str, since: &mut Instant) {
        let now = Instant::now();
        self.phases.push((what, now - *since));
        *since = now;
    }

    /// How long until kube-apiserver no longer holds a create of the custom resources of
    /// the CRDs [`load`] installed: it holds each create (a `POST`, not a server-side apply)
    /// for 2 s while the CRD's Established condition is under 2 s old by its
    /// `lastTransitionTime` (apiextensions-apiserver's customresource_handler.go,
    /// "justCreated"). A bed waits it out before its row's steps, as a cluster's CRDs are
    /// never seconds old when an engineer runs vpnmig; zero once passed.
    pub fn until_crds_settled(&self) -> Duration {
        let settled = *self.settled.lock().unwrap_or_else(|e| e.into_inner());
        settled
            .and_then(|at| Duration::try_from(at.duration_since(jiff::Timestamp::now())).ok())
            .unwrap_or(Duration::ZERO)
    }

    fn note_established(&self, latest: Option<jiff::Timestamp>) {
        let Some(latest) = latest else { return };
        let at = latest + jiff::SignedDuration::from_secs(2);
        let mut settled = self.settled.lock().unwrap_or_else(|e| e.into_inner());
        *settled = Some(settled.map_or(at, |s| s.max(at)));
    }

    /// How long each phase of [`ControlPlane::start`] took, in order (the start's benchmark,
    /// `cargo bench -p vpnmig-sandbox --bench start`, prints them).
    pub fn start_phases(&self) -> &[(&'static str, Duration)] {
        &self.phases
    }

    fn spawn(&mut self, component: &'static str, args: &[String]) -> Result<(), ControlPlaneError> {
        self.spawn_env(component, args, &[])
    }

    fn spawn_env(
        &mut self,
        component: &'static str,
        args: &[String],
        env: &[(&str, String)],
    ) -> Result<(), ControlPlaneError> {
        use std::os::unix::process::CommandExt;
        let log = self.dir.path().join(format!("{component}.log"));
        let file = std::fs::File::create(&log).map_err(io(log.display().to_string()))?;
        let mut cmd = Command::new(self.bin.join(component));
        cmd.args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(file.try_clone().map_err(io("log"))?)
            .stderr(file)
            .process_group(0);
        // SAFETY: prctl is async-signal-safe; the closure allocates nothing.
        unsafe {
            cmd.pre_exec(|| {
                rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::KILL,
                ))
                .map_err(std::io::Error::from)
            });
        }
        let child = cmd.spawn().map_err(io(format!("start {component}")))?;
        let pids = self.dir.path().join("pids");
        let mut text = std::fs::read_to_string(&pids).unwrap_or_default();
        text.push_str(&format!("{component} {}\n", child.id()));
        write_whole(&pids, &text)?;
        self.children.push((component, child));
        Ok(())
    }

    fn check_alive(&mut self) -> Result<(), ControlPlaneError> {
        for (component, child) in &mut self.children {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(ControlPlaneError::Exited {
                    component,
                    status: status.to_string(),
                    log: tail(&self.dir.path().join(format!("{component}.log"))),
                });
            }
        }
        Ok(())
    }

    /// Run `f` with the administrator's [`Applier`] on a runtime of its own, in a thread of
    /// its own, and wait for it: see [`blocking`]. The components must still be spawned by
    /// the caller's thread (`PR_SET_PDEATHSIG`), so only the requests move.
    fn with_admin<T: Send>(
        &mut self,
        f: impl AsyncFnOnce(&mut Self, &mut Applier) -> Result<T, ControlPlaneError> + Send,
    ) -> Result<T, ControlPlaneError> {
        let kubeconfig = self.kubeconfig(&[&self.admin], None);
        blocking(move || async move {
            let mut a = Applier::new(&kubeconfig).await?;
            f(self, &mut a).await
        })?
    }

    fn wait_ready(&mut self) -> Result<(), ControlPlaneError> {
        self.with_admin(async |cp, a| {
            let started = Instant::now();
            let limit = Duration::from_secs(120);
            loop {
                cp.check_alive()?;
                let req = hyper::Request::get("/readyz")
                    .body(Vec::new())
                    .expect("a GET of /readyz builds");
                let out = tokio::time::timeout(REQUEST_TIMEOUT, a.client.request_text(req)).await;
                if matches!(out, Ok(Ok(ref text)) if text.trim() == "ok") {
                    return Ok(());
                }
                if started.elapsed() > limit {
                    let log = tail(&cp.dir.path().join("kube-apiserver.log"));
                    return Err(ControlPlaneError::NotReady {
                        component: "kube-apiserver",
                        secs: limit.as_secs(),
                        log,
                    });
                }
                tokio::time::sleep(POLL).await;
            }
        })
    }

    async fn wait_node_ready(&mut self, client: &kube::Client) -> Result<(), ControlPlaneError> {
        let nodes: Api<DynamicObject> = Api::all_with(
            client.clone(),
            &ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "Node")),
        );
        let started = Instant::now();
        let limit = Duration::from_secs(60);
        loop {
            self.check_alive()?;
            let node = tokio::time::timeout(REQUEST_TIMEOUT, nodes.get(NODE_NAME)).await;
            if let Ok(Ok(node)) = node
                && condition_true(&node.data, "Ready")
            {
                return Ok(());
            }
            if started.elapsed() > limit {
                let log = tail(&self.dir.path().join("kwok.log"));
                return Err(ControlPlaneError::NotReady {
                    component: "kwok",
                    secs: limit.as_secs(),
                    log,
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// A client certificate for `name` in `groups`, signed by this cluster's CA.
    pub fn client(&self, name: &str, groups: &[&str]) -> Result<ClientCert, ControlPlaneError> {
        client_cert(&self.ca, name, groups)
    }

    /// A kubeconfig with one context per user (the first is current), in `namespace`.
    pub fn kubeconfig(&self, users: &[&ClientCert], namespace: Option<&str>) -> String {
        self.kubeconfig_at(&self.url, &self.ca_pem, users, namespace)
    }

    /// [`ControlPlane::kubeconfig`] for a server in front of kube-apiserver (the fault
    /// proxy, `crate::proxy`) at `server`, whose serving CA is `server_ca_pem`.
    pub fn kubeconfig_at(
        &self,
        server: &str,
        server_ca_pem: &str,
        users: &[&ClientCert],
        namespace: Option<&str>,
    ) -> String {
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let contexts: Vec<_> = users
            .iter()
            .enumerate()
            .map(|(i, u)| {
                let name = if i == 0 {
                    "vpnmig-controlplane".to_string()
                } else {
                    format!("vpnmig-controlplane-{}", u.name)
                };
                let mut ctx = serde_json::json!({"cluster": "vpnmig-controlplane", "user": u.name});
                if let Some(ns) = namespace {
                    ctx["namespace"] = ns.into();
                }
                serde_json::json!({"name": name, "context": ctx})
            })
            .collect();
        let users: Vec<_> = users
            .iter()
            .map(|u| serde_json::json!({"name": u.name, "user": {"client-certificate-data": b64(&u.cert_pem), "client-key-data": b64(&u.key_pem)}}))
            .collect();
        let cfg = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "vpnmig-controlplane", "cluster": {"server": server, "certificate-authority-data": b64(server_ca_pem)}}],
            "contexts": contexts,
            "users": users,
            "current-context": "vpnmig-controlplane",
            "preferences": {}
        });
        serde_saphyr::to_string(&cfg).expect("kubeconfigs serialize")
    }

    /// The administrator's kubeconfig, written by `start`.
    pub fn admin_kubeconfig(&self) -> PathBuf {
        self.dir.path().join("admin.kubeconfig")
    }

    /// The control plane's own directory (logs, certificates, the exec socket).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `PATH` of a command kwok runs for a pod exec: [`ControlPlane::exec_dir`] first.
    pub fn exec_path(&self) -> String {
        exec_path(self.dir.path())
    }

    /// The directory first on the PATH of every command kwok runs for a pod exec.
    pub fn exec_dir(&self) -> PathBuf {
        self.dir.path().join("exec")
    }

    /// Where each component's log is.
    pub fn log(&self, component: &str) -> PathBuf {
        self.dir.path().join(format!("{component}.log"))
    }

    /// The built kubectl.
    pub fn kubectl_path(&self) -> PathBuf {
        self.bin.join("kubectl")
    }

    /// Run the built kubectl as the administrator; stdout, or stderr as the error.
    pub fn kubectl(&self, args: &[&str]) -> Result<String, String> {
        self.kubectl_stdin(args, "").map_err(|e| e.to_string())
    }

    fn kubectl_stdin(&self, args: &[&str], stdin: &str) -> Result<String, ControlPlaneError> {
        use std::io::Write;
        let mut child = Command::new(self.kubectl_path())
            .arg(format!(
                "--kubeconfig={}",
                self.admin_kubeconfig().display()
            ))
            .arg("--request-timeout=10s")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(io("run kubectl"))?;
        if let Some(mut i) = child.stdin.take() {
            let _ = i.write_all(stdin.as_bytes());
        }
        let out = child.wait_with_output().map_err(io("run kubectl"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(ControlPlaneError::Io {
                what: format!("kubectl {}", args.join(" ")),
                source: std::io::Error::other(
                    String::from_utf8_lossy(&out.stderr).trim().to_string(),
                ),
            })
        }
    }

    /// Apply `objects` in order as [`ControlPlane::apply`] does (server-side as the
    /// administrator, field manager `vpnmig-sandbox`, strict field validation), in this
    /// process: no kubectl process each. An error names the object.
    pub fn apply_objects(&self, objects: &[serde_json::Value]) -> Result<(), String> {
        self.with_applier(async |a| {
            for o in objects {
                a.apply(o).await?;
            }
            Ok(())
        })
    }

    /// Apply manifests (server-side, as the administrator).
    pub fn apply(&self, yaml: &str) -> Result<String, String> {
        self.kubectl_stdin(
            &[
                "apply",
                "--server-side",
                "--field-manager=vpnmig-sandbox",
                "-f",
                "-",
            ],
            yaml,
        )
        .map_err(|e| match e {
            ControlPlaneError::Io { source, .. } => source.to_string(),
            e => e.to_string(),
        })
    }

    /// Stop every process (SIGKILL to each process group) and wait for it. The cluster is
    /// thrown away with its directory, so nothing is owed a graceful stop: on SIGTERM
    /// kube-apiserver drained its watches for up to a minute (measured 60.2 s), and every
    /// real row of the tests waited 5 s for it before the SIGKILL it now gets at once.
    pub fn stop(&mut self) {
        for (_, child) in self.children.iter_mut().rev() {
            let _ = rustix::process::kill_process_group(
                rustix::process::Pid::from_raw(child.id() as i32).expect("a child's pid is not 0"),
                rustix::process::Signal::KILL,
            );
            let _ = child.kill();
            let _ = child.wait();
        }
        self.children.clear();
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.stop();
    }
}

fn client_cert(
    ca: &Issuer<'static, KeyPair>,
    name: &str,
    groups: &[&str],
) -> Result<ClientCert, ControlPlaneError> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(DnType::CommonName, name);
    for g in groups {
        params.distinguished_name.push(DnType::OrganizationName, *g);
    }
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, ca)?;
    Ok(ClientCert {
        name: name.to_string(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// kwok's `Exec` CRD, from the pinned kwok module (kustomize/crd/bases).
const KWOK_EXEC_CRD: &str = include_str!("../../controlplane/kwok/exec-crd.yaml");

/// The one Node kwok manages.
pub const NODE_NAME: &str = "vpnmig-node";
const NODE: &str = r#"apiVersion: v1
kind: Node
metadata:
  name: vpnmig-node
  annotations:
    kwok.x-k8s.io/node: fake
  labels:
    kubernetes.io/hostname: vpnmig-node
    type: kwok
spec:
  taints: []
"#;

/// Every container's exec runs the requested command on this host, in the control plane's
/// directory, with its `exec/` directory first on the PATH: a test puts a `swanctl` there to
/// answer as the pod's strongSwan.
fn exec_path(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.join("exec").display(),
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
    )
}

fn cluster_exec(dir: &Path) -> String {
    let _ = std::fs::create_dir_all(dir.join("exec"));
    let path = exec_path(dir);
    format!(
        r#"apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata:
  name: vpnmig-exec
spec:
  execs:
  - local:
      workDir: {}
      envs:
      - name: PATH
        value: {}
"#,
        dir.display(),
        path
    )
}

/// The project's CRDs (fixtures/crds), as the real control plane is given them.
pub const CRDS: [&str; 6] = [
    include_str!("../../../fixtures/crds/ipsecgateways.ipsec.bnerd.net.yaml"),
    include_str!("../../../fixtures/crds/vpngateways.vpn.bnerd.net.yaml"),
    include_str!("../../../fixtures/crds/vpnpeers.vpn.bnerd.net.yaml"),
    include_str!("../../../fixtures/crds/argocd-application.yaml"),
    include_str!("../../../fixtures/crds/flux-kustomization.yaml"),
    include_str!("../../../fixtures/crds/flux-helmrelease.yaml"),
];

/// Load a scenario through the API: the CRDs (waited for until Established), then each
/// object in order (server-side apply as the administrator) and its recorded status through
/// the status subresource. Returns the scenario's first Namespace.
///
/// A scenario is often an export: the server gives each object its own uid, so an
/// `ownerReference` to an object of the scenario is pointed at that object's new uid (its
/// apiVersion, kind and name are the same); one left at the export's uid would be dangling,
/// and the garbage collector deletes the dependent (the emulator keeps the export's uids).
/// The owner must come before its dependents in the scenario.
///
/// Its requests are the administrator's, made in this process (see [`blocking`]): until
/// 2026-12-07 each object cost a `kubectl apply` and each status a `kubectl patch`.
pub fn load(cp: &ControlPlane, objects: &[serde_json::Value]) -> Result<Option<String>, String> {
    let (latest, namespace) = cp.with_applier(async |a| {
        let latest = crds(a).await?;
        Ok((latest, scenario_objects(a, objects).await?))
    })?;
    cp.note_established(latest);
    Ok(namespace)
}

/// [`load`]'s first part: the project's CRDs ([`CRDS`]), applied and waited for until every
/// CRD of the cluster is Established.
pub fn load_crds(cp: &ControlPlane) -> Result<(), String> {
    let latest = cp.with_applier(async |a| crds(a).await)?;
    cp.note_established(latest);
    Ok(())
}

/// [`load`]'s second part: the scenario's objects, once their CRDs are Established.
pub fn load_objects(
    cp: &ControlPlane,
    objects: &[serde_json::Value],
) -> Result<Option<String>, String> {
    cp.with_applier(async |a| scenario_objects(a, objects).await)
}

impl ControlPlane {
    /// Run `f` with the administrator's [`Applier`], as [`ControlPlane::with_admin`] does,
    /// for what needs no `&mut` of the control plane.
    fn with_applier<T: Send>(
        &self,
        f: impl AsyncFnOnce(&mut Applier) -> Result<T, String> + Send,
    ) -> Result<T, String> {
        let kubeconfig = self.kubeconfig(&[&self.admin], None);
        blocking(move || async move {
            let mut a = Applier::new(&kubeconfig).await?;
            f(&mut a).await
        })?
    }
}

/// The longest one request of the start or the load may take (kubectl's
/// `--request-timeout=10s` before).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a wait of the start or the load asks again (kubectl's every 250 ms before).
const POLL: Duration = Duration::from_millis(50);

/// Run the future `f` makes to its end on a runtime of its own, in a thread of its own, and
/// wait for it. The control plane is started and loaded from plain threads and from a
/// runtime's (tests/live/bed.rs), where no runtime can be blocked on; the runtime lives
/// and ends in the thread.
fn blocking<T: Send, F: std::future::Future<Output = T>>(
    f: impl FnOnce() -> F + Send,
) -> Result<T, String> {
    std::thread::scope(|s| {
        s.spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("a runtime for the control plane's requests: {e}"))?;
            Ok(rt.block_on(f()))
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// Whether `o` has the condition `kind` with status True.
fn condition_true(o: &serde_json::Value, kind: &str) -> bool {
    o["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == kind && c["status"] == "True"))
}

/// The documents of a manifest (`---`-separated, or a List's items).
fn parse_manifests(text: &str) -> Result<Vec<serde_json::Value>, ControlPlaneError> {
    crate::scenario::parse(text).map_err(|e| ControlPlaneError::Api(e.to_string()))
}

/// The administrator's writer of manifests, as `kubectl apply --server-side
/// --field-manager=vpnmig-sandbox -f -` and `kubectl patch --subresource=status
/// --type=merge` were: server-side apply with strict field validation and no forced
/// conflicts, a namespaced object without a namespace in `default`, and each kind's
/// resource and scope found by discovery, once per apiVersion.
pub(crate) struct Applier {
    client: kube::Client,
    /// apiVersion → its resources (kind, resource, namespaced).
    discovered: HashMap<String, Vec<(ApiResource, bool)>>,
}

impl Applier {
    /// A client with kubectl's bounds: no retries of its own, each request at most
    /// [`REQUEST_TIMEOUT`].
    async fn new(kubeconfig: &str) -> Result<Applier, String> {
        let fail = |e: &dyn std::fmt::Display| format!("the administrator's client: {e}");
        let kc = kube::config::Kubeconfig::from_yaml(kubeconfig).map_err(|e| fail(&e))?;
        let mut config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .map_err(|e| fail(&e))?;
        config.default_retry = false;
        config.connect_timeout = Some(REQUEST_TIMEOUT);
        config.read_timeout = Some(REQUEST_TIMEOUT);
        config.write_timeout = Some(REQUEST_TIMEOUT);
        let client = kube::Client::try_from(config).map_err(|e| fail(&e))?;
        Ok(Applier {
            client,
            discovered: HashMap::new(),
        })
    }

    /// The resource of `kind` in `api_version`, and whether it is namespaced. A CRD's kind
    /// is in discovery a moment after the CRD is Established: asked again for up to 10 s,
    /// as kubectl asks again after "no matches for kind".
    async fn resource(
        &mut self,
        api_version: &str,
        kind: &str,
    ) -> Result<(ApiResource, bool), String> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gv = kube::core::GroupVersion::gv(group, version);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if !self.discovered.contains_key(api_version) {
                let asked = tokio::time::timeout(
                    REQUEST_TIMEOUT,
                    kube::discovery::pinned_group(&self.client, &gv),
                )
                .await;
                if let Ok(Ok(g)) = asked {
                    let all = g
                        .versioned_resources(version)
                        .into_iter()
                        .map(|(r, caps)| {
                            let namespaced = caps.scope == kube::discovery::Scope::Namespaced;
                            (r, namespaced)
                        })
                        .collect();
                    self.discovered.insert(api_version.to_string(), all);
                }
            }
            let found = self
                .discovered
                .get(api_version)
                .and_then(|all| all.iter().find(|(r, _)| r.kind == kind));
            if let Some(found) = found {
                return Ok(found.clone());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "the server has no kind {kind} in {api_version} (discovery of /{}{api_version})",
                    if group.is_empty() { "api/" } else { "apis/" }
                ));
            }
            self.discovered.remove(api_version);
            tokio::time::sleep(POLL).await;
        }
    }

    /// The API of `o`'s kind in `o`'s namespace (`default` where it names none).
    async fn api(&mut self, o: &serde_json::Value) -> Result<Api<DynamicObject>, String> {
        let api_version = o["apiVersion"].as_str().unwrap_or("");
        let kind = o["kind"].as_str().unwrap_or("");
        let (r, namespaced) = self.resource(api_version, kind).await?;
        Ok(if namespaced {
            let ns = o["metadata"]["namespace"].as_str().unwrap_or("default");
            Api::namespaced_with(self.client.clone(), ns, &r)
        } else {
            Api::all_with(self.client.clone(), &r)
        })
    }

    /// Server-side apply `o` as `vpnmig-sandbox`; the object the server holds then. An error
    /// names the object.
    async fn apply(&mut self, o: &serde_json::Value) -> Result<serde_json::Value, String> {
        let name = o["metadata"]["name"].as_str().unwrap_or("");
        let what = describe(o);
        let api = self.api(o).await.map_err(|e| format!("{what}: {e}"))?;
        let params = PatchParams {
            field_manager: Some("vpnmig-sandbox".into()),
            field_validation: Some(ValidationDirective::Strict),
            ..PatchParams::default()
        };
        let applied =
            tokio::time::timeout(REQUEST_TIMEOUT, api.patch(name, &params, &Patch::Apply(o)))
                .await
                .map_err(|_| format!("{what}: no answer within {} s", REQUEST_TIMEOUT.as_secs()))?
                .map_err(|e| format!("{what}: {e}"))?;
        serde_json::to_value(applied).map_err(|e| format!("{what}: {e}"))
    }

    /// Merge `status` into `o`'s status subresource as `kubectl patch --subresource=status
    /// --type=merge` did (its field manager `kubectl-patch` kept: vpnmig names a field's
    /// last writer, and the rows' scenarios were loaded so).
    async fn patch_status(
        &mut self,
        o: &serde_json::Value,
        status: serde_json::Value,
    ) -> Result<(), String> {
        let name = o["metadata"]["name"].as_str().unwrap_or("");
        let what = format!("{}'s status", describe(o));
        let api = self.api(o).await.map_err(|e| format!("{what}: {e}"))?;
        let params = PatchParams {
            field_manager: Some("kubectl-patch".into()),
            ..PatchParams::default()
        };
        let patch = Patch::Merge(serde_json::json!({ "status": status }));
        tokio::time::timeout(REQUEST_TIMEOUT, api.patch_status(name, &params, &patch))
            .await
            .map_err(|_| format!("{what}: no answer within {} s", REQUEST_TIMEOUT.as_secs()))?
            .map_err(|e| format!("{what}: {e}"))?;
        Ok(())
    }
}

/// `Kind namespace/name` (`Kind name` for one without a namespace).
fn describe(o: &serde_json::Value) -> String {
    let kind = o["kind"].as_str().unwrap_or("");
    let name = o["metadata"]["name"].as_str().unwrap_or("");
    match o["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// Wait until every CRD of the cluster is Established (as `kubectl wait
/// --for=condition=Established crd --all` did), for at most `limit`; the latest of their
/// Established conditions' `lastTransitionTime`s.
async fn wait_established(
    client: &kube::Client,
    limit: Duration,
) -> Result<Option<jiff::Timestamp>, String> {
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk(&GroupVersionKind::gvk(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
        )),
    );
    let started = Instant::now();
    loop {
        let listed = tokio::time::timeout(REQUEST_TIMEOUT, crds.list(&Default::default())).await;
        let (pending, latest): (Vec<String>, _) = match listed {
            Ok(Ok(list)) => (
                list.items
                    .iter()
                    .filter(|c| !condition_true(&c.data, "Established"))
                    .map(|c| c.metadata.name.clone().unwrap_or_default())
                    .collect(),
                list.items
                    .iter()
                    .filter_map(|c| {
                        c.data["status"]["conditions"]
                            .as_array()?
                            .iter()
                            .find(|c| c["type"] == "Established")?["lastTransitionTime"]
                            .as_str()?
                            .parse::<jiff::Timestamp>()
                            .ok()
                    })
                    .max(),
            ),
            Ok(Err(e)) => (vec![format!("(the list failed: {e})")], None),
            Err(_) => (vec!["(the list had no answer)".into()], None),
        };
        if pending.is_empty() {
            return Ok(latest);
        }
        if started.elapsed() > limit {
            return Err(format!(
                "CRDs not Established within {} s: {}",
                limit.as_secs(),
                pending.join(", ")
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The project's CRDs applied, then every CRD of the cluster Established (60 s at most);
/// the latest Established transition.
async fn crds(a: &mut Applier) -> Result<Option<jiff::Timestamp>, String> {
    for text in CRDS {
        for o in parse_manifests(text).map_err(|e| e.to_string())? {
            a.apply(&o).await?;
        }
    }
    wait_established(&a.client, Duration::from_secs(60)).await
}

/// [`load`]'s objects, in order. An ownerReference to an object the scenario loads later
/// is left out of the first apply and put back once its owner exists (with the uid the
/// server gave it): the garbage collector deletes a dependent whose owner's uid matches
/// no object, and an export lists a dependent before its owner as often as after (an
/// ApplicationSet's Application was deleted under a row that way, once the collector
/// had discovered the set's CRD).
async fn scenario_objects(
    a: &mut Applier,
    objects: &[serde_json::Value],
) -> Result<Option<String>, String> {
    type Key = (String, String, String, String);
    let key_of = |o: &serde_json::Value| -> Key {
        let s = |p: &str| {
            o.pointer(p)
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string()
        };
        (
            s("/metadata/namespace"),
            s("/apiVersion"),
            s("/kind"),
            s("/metadata/name"),
        )
    };
    // Every object the scenario loads, by its key and by its export's uid.
    let later: std::collections::HashSet<Key> = objects.iter().map(key_of).collect();
    let mut exported: HashMap<String, Key> = objects
        .iter()
        .filter_map(|o| Some((o.pointer("/metadata/uid")?.as_str()?.to_string(), key_of(o))))
        .collect();
    let mut namespace = None;
    // (namespace, apiVersion, kind, name) → the uid the server gave it.
    let mut uids: HashMap<Key, String> = HashMap::new();
    // Objects applied without some of their ownerReferences: the whole object, to apply
    // again at the end.
    let mut deferred: Vec<serde_json::Value> = Vec::new();
    for o in objects {
        let mut spec = o.clone();
        let status = spec.as_object_mut().and_then(|m| m.remove("status"));
        let key = key_of(o);
        let ns = key.0.clone();
        let mut full = None;
        if let Some(meta) = spec["metadata"].as_object_mut() {
            for server_owned in ["uid", "resourceVersion", "creationTimestamp", "generation"] {
                meta.remove(server_owned);
            }
            if let Some(refs) = meta
                .get_mut("ownerReferences")
                .and_then(|r| r.as_array_mut())
            {
                let mut now = Vec::new();
                let mut waits = false;
                for r in refs.iter() {
                    let owner = owner_key(&ns, r, &exported);
                    match uids.get(&owner) {
                        Some(uid) => {
                            let mut r = r.clone();
                            r["uid"] = serde_json::Value::String(uid.clone());
                            now.push(r);
                        }
                        None if later.contains(&owner) => waits = true,
                        // Not in the scenario: as exported (dangling, as the test wants).
                        None => now.push(r.clone()),
                    }
                }
                if waits {
                    full = Some(refs.clone());
                }
                *refs = now;
            }
        }
        let applied = a.apply(&spec).await?;
        let uid = applied["metadata"]["uid"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if let Some(old) = o["metadata"]["uid"].as_str() {
            exported.insert(old.to_string(), key.clone());
        }
        uids.insert(key.clone(), uid.trim().to_string());
        if key.2 == "Namespace" && namespace.is_none() {
            namespace = Some(key.3.clone());
        }
        if let Some(status) = status {
            a.patch_status(&spec, status).await?;
        }
        if let Some(refs) = full {
            spec["metadata"]["ownerReferences"] = serde_json::Value::Array(refs);
            deferred.push(spec);
        }
    }
    for mut spec in deferred {
        let ns = key_of(&spec).0;
        if let Some(refs) = spec
            .pointer_mut("/metadata/ownerReferences")
            .and_then(|r| r.as_array_mut())
        {
            for r in refs.iter_mut() {
                if let Some(uid) = uids.get(&owner_key(&ns, r, &exported)) {
                    r["uid"] = serde_json::Value::String(uid.clone());
                }
            }
        }
        a.apply(&spec).await?;
    }
    Ok(namespace)
}

/// The scenario's key of the owner an ownerReference names: by the export's uid where
/// the scenario has it, else by its namespace, apiVersion, kind and name.
fn owner_key(
    ns: &str,
    r: &serde_json::Value,
    exported: &HashMap<String, (String, String, String, String)>,
) -> (String, String, String, String) {
    let s = |p: &str| r[p].as_str().unwrap_or("").to_string();
    r["uid"]
        .as_str()
        .and_then(|u| exported.get(u).cloned())
        .unwrap_or_else(|| (ns.to_string(), s("apiVersion"), s("kind"), s("name")))
}

#[cfg(test)]
mod tests {
    use super::reap_stale;

    /// Each pid file a reaper may find, and whether its directory is taken as stale.
    #[test]
    fn only_a_directory_whose_named_owner_is_gone_is_reaped() {
        let root = tempfile::tempdir().unwrap();
        // pid_max is at most 2^22: no process has this pid.
        let gone = 4_194_305;
        let rows: &[(&str, Option<String>, bool)] = &[
            (
                "owner-alive",
                Some(format!("owner {}\n", std::process::id())),
                true,
            ),
            ("owner-gone", Some(format!("owner {gone}\n")), false),
            // Being written, or a start between its directory and its pid file.
            ("pids-empty", Some(String::new()), true),
            ("no-pids", None, true),
        ];
        for (name, pids, _) in rows {
            let d = root.path().join(name);
            std::fs::create_dir(&d).unwrap();
            if let Some(text) = pids {
                std::fs::write(d.join("pids"), text).unwrap();
            }
        }
        reap_stale(root.path());
        for (name, _, kept) in rows {
            assert_eq!(root.path().join(name).exists(), *kept, "{name}");
        }
    }
}
