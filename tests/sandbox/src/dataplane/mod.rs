//! The real data plane (`vpnmig-sandbox --data-plane strongswan`, issue 22): strongSwan
//! daemons in network namespaces for every gateway pod and every client site.
//!
//! Topology: one "internet" namespace routes between point-to-point veth links, one per
//! gateway pod and one per client site (a /30 each from 198.18.0.0/15, the benchmarking
//! range, so that no scenario address collides). A floating IP is
//! a /32 on the eth0 of the one gateway namespace it is associated with, and the internet
//! routes it there: it moves when the association moves. A client site's peer address is
//! a /32 on its eth0; its own subnets are addresses on its `lo`. Each gateway namespace
//! holds its exposures' virtual IPs on `lo`, with a listener per exposure.
//!
//! The simulated operator says what it wants ([`Desired`]: the gateway pods it runs with
//! their `swanctl.conf`, and the client sites, each configured once from the
//! IPsecGateway's values as first loaded) and a worker thread makes it so, then reads back
//! each gateway's SAs with `swanctl --list-sas` ([`Seen`]). Namespaces are named
//! `vpnmig-<pid>-<n>-…`; those of a process that is gone are removed at the next start.

pub mod charon;
pub mod netns;
pub mod probe;

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::json;

pub use charon::{Behaviour, ChildConf, ConnConf, Timing};

pub const CHARON: &str = "/usr/sbin/charon-systemd";
pub const SWANCTL: &str = "/usr/sbin/swanctl";

/// Which data plane the sandbox runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum DataPlaneKind {
    /// The operator's imitation of swanctl (no root needed).
    #[default]
    Simulated,
    /// strongSwan daemons in network namespaces (root, Debian's strongSwan packages).
    Strongswan,
}

/// One gateway pod, as the operator runs it.
#[derive(Clone, Debug, PartialEq)]
pub struct GatewayPlane {
    pub uid: String,
    pub pod_uid: String,
    /// `IPsecGateway` or `VPNGateway`.
    pub kind: String,
    pub ns: String,
    pub name: String,
    pub pod: String,
    /// The floating IP associated with this gateway, if any.
    pub fip: Option<String>,
    /// `(exposure, virtual IP, port)`.
    pub exposures: Vec<(String, String, u16)>,
    pub conns: Vec<ConnConf>,
}

/// One client site: the customer's firewall for one tunnel.
#[derive(Clone, Debug, PartialEq)]
pub struct SitePlane {
    /// `namespace/peer address/peer id`.
    pub key: String,
    pub ns: String,
    pub gateway: String,
    pub tunnel: String,
    pub address: String,
    /// The client's own networks (an address of each goes on `lo`).
    pub subnets: Vec<String>,
    /// `(exposure, virtual IP, port)` the client uses.
    pub targets: Vec<(String, String, u16)>,
    pub conn: ConnConf,
    /// The fault knobs that shape how it behaves (applied to a running site).
    pub behaviour: Behaviour,
    /// Behind NAT (`clientBehindNat`, part of the site as first configured): its charon
    /// has a private address, translated to `address` by the internet.
    pub behind_nat: bool,
}

/// Everything the operator wants running.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Desired {
    pub gateways: Vec<GatewayPlane>,
    pub sites: Vec<SitePlane>,
}

/// What the gateway's charon shows for one connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// An IKE SA ESTABLISHED with at least one CHILD SA INSTALLED.
    pub established: bool,
    /// The last failure charon logged for it: `(reason, log line)`.
    pub failure: Option<(&'static str, String)>,
}

struct Shared {
    desired: Mutex<(u64, Desired)>,
    cv: Condvar,
    stop: AtomicBool,
    /// `pod uid → connection → what was seen`.
    seen: Mutex<BTreeMap<String, BTreeMap<String, Seen>>>,
    /// `(namespace, pod) → (VICI URI, strongswan.conf)` for `kubectl exec … swanctl`.
    vici: Mutex<BTreeMap<(String, String), (String, PathBuf)>>,
    notify: Mutex<Option<Arc<tokio::sync::Notify>>>,
    /// Bumped whenever `seen` changes.
    seen_version: std::sync::atomic::AtomicU64,
    client_timing: Timing,
}

/// The running data plane.
pub struct Bed {
    /// `<state dir>/dataplane`: probe.jsonl, sites.json, one directory per daemon.
    pub dir: PathBuf,
    pub inet: String,
    shared: Arc<Shared>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

static INSTANCE: AtomicU32 = AtomicU32::new(0);

/// The pid in a namespace name `vpnmig-<pid>-…`.
fn owner_pid(ns: &str) -> Option<u32> {
    ns.strip_prefix("vpnmig-")?.split('-').next()?.parse().ok()
}

/// Remove the namespaces (and their processes) of sandboxes that are gone.
pub fn reap_stale() -> Vec<String> {
    let mut removed = Vec::new();
    for ns in netns::list() {
        if let Some(pid) = owner_pid(&ns)
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            netns::remove(&ns);
            removed.push(ns);
        }
    }
    removed
}

impl Bed {
    /// Build the internet namespace and start the worker. `state_dir` gets `dataplane/`.
    pub fn start(state_dir: &Path, client_timing: Timing) -> Result<Arc<Bed>, String> {
        netns::available()?;
        for ns in reap_stale() {
            eprintln!("vpnmig-sandbox: removed stale network namespace {ns}");
        }
        let dir = state_dir.join("dataplane");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let prefix = format!(
            "vpnmig-{}-{}",
            std::process::id(),
            INSTANCE.fetch_add(1, Ordering::SeqCst)
        );
        let inet = format!("{prefix}-inet");
        netns::ip(&["netns", "add", &inet])?;
        netns::ip_in(&inet, &["link", "set", "lo", "up"])?;
        let fwd = std::process::Command::new("ip")
            .args(["netns", "exec", &inet, "sh", "-c"])
            .arg("echo 1 > /proc/sys/net/ipv4/ip_forward")
            .status()
            .map_err(|e| e.to_string())?;
        if !fwd.success() {
            netns::remove(&inet);
            return Err(format!("cannot enable forwarding in {inet}"));
        }
        let log = probe::Log::open(dir.join("probe.jsonl"))?;
        let shared = Arc::new(Shared {
            desired: Mutex::new((0, Desired::default())),
            cv: Condvar::new(),
            stop: AtomicBool::new(false),
            seen: Mutex::new(BTreeMap::new()),
            vici: Mutex::new(BTreeMap::new()),
            notify: Mutex::new(None),
            seen_version: std::sync::atomic::AtomicU64::new(0),
            client_timing,
        });
        let worker = {
            let (shared, dir, inet, prefix) =
                (shared.clone(), dir.clone(), inet.clone(), prefix.clone());
            std::thread::Builder::new()
                .name("dataplane".into())
                .spawn(move || Worker::new(shared, dir, inet, prefix, log).run())
                .map_err(|e| e.to_string())?
        };
        Ok(Arc::new(Bed {
            dir,
            inet,
            shared,
            worker: Mutex::new(Some(worker)),
        }))
    }

    /// Wake `notify` whenever what the daemons show changes.
    pub fn set_notify(&self, notify: Arc<tokio::sync::Notify>) {
        *self.shared.notify.lock().unwrap_or_else(|e| e.into_inner()) = Some(notify);
    }

    /// Say what should run; the worker converges on it.
    pub fn want(&self, desired: Desired) {
        let mut d = self
            .shared
            .desired
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if d.1 != desired {
            d.0 += 1;
            d.1 = desired;
            self.shared.cv.notify_all();
        }
    }

    /// Changes whenever what a charon shows changes (the operator reconciles then).
    pub fn seen_version(&self) -> u64 {
        self.shared.seen_version.load(Ordering::SeqCst)
    }

    /// Whether the charon of pod `pod_uid` runs and answers on its VICI socket.
    pub fn running(&self, pod_uid: &str) -> bool {
        self.shared
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(pod_uid)
    }

    /// What the charon of pod `pod_uid` shows for connection `conn`.
    pub fn seen(&self, pod_uid: &str, conn: &str) -> Option<Seen> {
        self.shared
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(pod_uid)?
            .get(conn)
            .cloned()
    }

    /// `swanctl ARGS` against the charon of pod `ns/pod`; `None` when it runs none.
    pub fn swanctl(&self, ns: &str, pod: &str, args: &[String]) -> Option<(String, String, i32)> {
        let (uri, conf) = self
            .shared
            .vici
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(ns.to_string(), pod.to_string()))
            .cloned()?;
        Some(
            charon::swanctl_at(&uri, &conf, args)
                .unwrap_or_else(|e| (String::new(), format!("{e}\n"), 127)),
        )
    }

    /// Stop every daemon and remove every namespace. Idempotent.
    pub fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.cv.notify_all();
        if let Some(h) = self.worker.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = h.join();
        }
    }
}

impl std::fmt::Debug for Bed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bed")
            .field("dir", &self.dir)
            .field("inet", &self.inet)
            .finish_non_exhaustive()
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A running gateway pod.
struct GatewayRt {
    spec: GatewayPlane,
    netns: String,
    link: u32,
    daemon: charon::Daemon,
    fip_here: Option<String>,
    loaded: Option<Vec<ConnConf>>,
    listeners: BTreeMap<(String, u16), probe::Worker>,
    log_pos: u64,
    /// When its SAs were last listed.
    listed: Option<std::time::Instant>,
    failures: BTreeMap<String, (&'static str, String)>,
}

/// A running client site.
struct SiteRt {
    spec: SitePlane,
    netns: String,
    link: u32,
    daemon: charon::Daemon,
    _prober: probe::Worker,
}

struct Worker {
    shared: Arc<Shared>,
    dir: PathBuf,
    inet: String,
    prefix: String,
    log: probe::Log,
    gateways: BTreeMap<String, GatewayRt>,
    sites: BTreeMap<String, SiteRt>,
    next_link: u32,
    seen_version: u64,
    /// The internet's NAT table exists.
    nat_table: bool,
}

/// The two ends of link `n`: (internet side, namespace side).
fn link_addrs(n: u32) -> (Ipv4Addr, Ipv4Addr) {
    let base = u32::from(Ipv4Addr::new(198, 18, 0, 0)) + n * 4;
    (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2))
}

/// An address inside `subnet` for the site's `lo` (its first host).
fn first_host(subnet: &str) -> Option<String> {
    let net: ipnet::IpNet = subnet.parse().ok()?;
    net.hosts().next().map(|h| h.to_string())
}

/// The reason a charon log line gives for a failed negotiation.
fn failure_of(line: &str) -> Option<&'static str> {
    let l = line.to_ascii_lowercase();
    if l.contains("mac mismatched")
        || l.contains("authentication_failed")
        || l.contains("no shared key found")
        || l.contains("authentication of") && l.contains("failed")
    {
        Some("AuthenticationFailed")
    } else if l.contains("no_proposal_chosen")
        || l.contains("no acceptable proposal")
        || l.contains("proposals unacceptable")
        || l.contains("no matching proposal")
    {
        Some("NoProposalChosen")
    } else if l.contains("ts_unacceptable")
        || l.contains("traffic selectors") && l.contains("unacceptable")
    {
        Some("TSUnacceptable")
    } else if l.contains("peer config") && l.contains("no matching")
        || l.contains("no config found")
    {
        Some("NoMatchingPeerConfig")
    } else {
        None
    }
}

/// The connection name in a log line written with `ike_name = yes` (`<main|3>`).
fn conn_of(line: &str) -> Option<&str> {
    let start = line.find('<')? + 1;
    let rest = &line[start..];
    let end = rest.find('|')?;
    let name = &rest[..end];
    (!name.is_empty() && rest[end..].find('>').is_some()).then_some(name)
}

impl Worker {
    fn new(
        shared: Arc<Shared>,
        dir: PathBuf,
        inet: String,
        prefix: String,
        log: probe::Log,
    ) -> Worker {
        Worker {
            shared,
            dir,
            inet,
            prefix,
            log,
            gateways: BTreeMap::new(),
            sites: BTreeMap::new(),
            next_link: 1,
            seen_version: 0,
            nat_table: false,
        }
    }

    fn run(mut self) {
        loop {
            let desired = {
                let d = self
                    .shared
                    .desired
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                let (d, _) = self
                    .shared
                    .cv
                    .wait_timeout_while(d, Duration::from_millis(250), |d| {
                        d.0 == self.seen_version && !self.shared.stop.load(Ordering::SeqCst)
                    })
                    .unwrap_or_else(|e| e.into_inner());
                if self.shared.stop.load(Ordering::SeqCst) {
                    break;
                }
                (d.0 != self.seen_version).then(|| d.clone())
            };
            if let Some((version, desired)) = desired {
                self.seen_version = version;
                self.apply(&desired);
            }
            self.observe();
        }
        self.teardown();
    }

    fn say(&self, what: &str) {
        eprintln!("vpnmig-sandbox: data plane: {what}");
    }

    fn new_link(&mut self, netns: &str, ifname: &str) -> Result<u32, String> {
        let n = self.next_link;
        self.next_link += 1;
        let (outer, inner) = link_addrs(n);
        netns::ip(&["netns", "add", netns])?;
        netns::ip_in(netns, &["link", "set", "lo", "up"])?;
        netns::ip_in(
            &self.inet,
            &[
                "link", "add", ifname, "type", "veth", "peer", "name", "eth0", "netns", netns,
            ],
        )?;
        netns::ip_in(
            &self.inet,
            &["addr", "add", &format!("{outer}/30"), "dev", ifname],
        )?;
        netns::ip_in(&self.inet, &["link", "set", ifname, "up"])?;
        netns::ip_in(
            netns,
            &["addr", "add", &format!("{inner}/30"), "dev", "eth0"],
        )?;
        netns::ip_in(netns, &["link", "set", "eth0", "up"])?;
        netns::ip_in(
            netns,
            &["route", "add", "default", "via", &outer.to_string()],
        )?;
        Ok(n)
    }

    fn apply(&mut self, desired: &Desired) {
        // Gateway pods that no longer run.
        let wanted: BTreeMap<&str, &GatewayPlane> = desired
            .gateways
            .iter()
            .map(|g| (g.pod_uid.as_str(), g))
            .collect();
        let gone: Vec<String> = self
            .gateways
            .keys()
            .filter(|k| !wanted.contains_key(k.as_str()))
            .cloned()
            .collect();
        for k in gone {
            if let Some(rt) = self.gateways.remove(&k) {
                self.stop_gateway(rt);
            }
        }
        // Floating IPs leave the namespace they are no longer associated with first.
        for rt in self.gateways.values_mut() {
            let want = wanted
                .get(rt.spec.pod_uid.as_str())
                .and_then(|g| g.fip.clone());
            if rt.fip_here.is_some() && rt.fip_here != want {
                let fip = rt.fip_here.take().unwrap_or_default();
                let _ = netns::ip_in(
                    &rt.netns,
                    &["addr", "del", &format!("{fip}/32"), "dev", "eth0"],
                );
                let _ = netns::ip_in(&self.inet, &["route", "del", &format!("{fip}/32")]);
            }
        }
        for g in &desired.gateways {
            if !self.gateways.contains_key(&g.pod_uid) {
                match self.start_gateway(g) {
                    Ok(rt) => {
                        self.gateways.insert(g.pod_uid.clone(), rt);
                    }
                    Err(e) => self.say(&format!("gateway {}/{}: {e}", g.ns, g.name)),
                }
            }
            let Some(rt) = self.gateways.get_mut(&g.pod_uid) else {
                continue;
            };
            rt.spec = g.clone();
            if let Err(e) = Self::converge_gateway(&self.inet, rt) {
                self.say(&format!("gateway {}/{}: {e}", g.ns, g.name));
            }
        }
        for s in &desired.sites {
            // A client site is configured once: the window never reconfigures it. Only its
            // behaviour (a fault knob) changes on a running site.
            if let Some(rt) = self.sites.get_mut(&s.key) {
                if rt.spec.behaviour != s.behaviour {
                    let restart = rt.spec.behaviour.answers != s.behaviour.answers;
                    rt.spec.behaviour = s.behaviour;
                    if let Err(e) = Self::rebehave(&self.shared, rt, restart) {
                        self.say(&format!("site {}: {e}", s.key));
                    }
                }
                continue;
            }
            match self.start_site(s) {
                Ok(rt) => {
                    self.sites.insert(s.key.clone(), rt);
                }
                Err(e) => self.say(&format!("site {}: {e}", s.key)),
            }
        }
        {
            let mut vici = self.shared.vici.lock().unwrap_or_else(|e| e.into_inner());
            vici.clear();
            for rt in self.gateways.values() {
                vici.insert(
                    (rt.spec.ns.clone(), rt.spec.pod.clone()),
                    (rt.daemon.uri(), rt.daemon.conf()),
                );
            }
        }
        self.write_sites();
    }

    fn start_gateway(&mut self, g: &GatewayPlane) -> Result<GatewayRt, String> {
        let netns = format!("{}-g{}", self.prefix, self.next_link);
        let ifname = format!("g{}", self.next_link);
        let link = match self.new_link(&netns, &ifname) {
            Ok(l) => l,
            Err(e) => {
                netns::remove(&netns);
                return Err(e);
            }
        };
        let dir = self.dir.join(format!("gw-{}-{}", g.ns, g.pod));
        let timing = Timing {
            retransmit_timeout_s: 1.0,
            retransmit_tries: 2,
        };
        let daemon = match charon::Daemon::start(&dir, &netns, timing, Behaviour::default()) {
            Ok(d) => d,
            Err(e) => {
                netns::remove(&netns);
                return Err(e);
            }
        };
        self.say(&format!(
            "{} {}/{} pod {} runs charon in network namespace {netns}",
            g.kind, g.ns, g.name, g.pod
        ));
        Ok(GatewayRt {
            spec: g.clone(),
            netns,
            link,
            daemon,
            fip_here: None,
            loaded: None,
            listeners: BTreeMap::new(),
            log_pos: 0,
            listed: None,
            failures: BTreeMap::new(),
        })
    }

    /// FIP, virtual IPs and listeners, and the loaded configuration of one gateway pod.
    fn converge_gateway(inet: &str, rt: &mut GatewayRt) -> Result<(), String> {
        let want: BTreeMap<(String, u16), String> = rt
            .spec
            .exposures
            .iter()
            .map(|(name, vip, port)| ((vip.clone(), *port), name.clone()))
            .collect();
        rt.listeners.retain(|k, _| want.contains_key(k));
        for ((vip, port), name) in &want {
            if rt.listeners.contains_key(&(vip.clone(), *port)) {
                continue;
            }
            let _ = netns::ip_in(
                &rt.netns,
                &["addr", "add", &format!("{vip}/32"), "dev", "lo"],
            );
            let addr: SocketAddr = format!("{vip}:{port}")
                .parse()
                .map_err(|e| format!("exposure {name}: {vip}:{port}: {e}"))?;
            let answer = format!(
                "{} {}/{} exposure {name}",
                rt.spec.kind, rt.spec.ns, rt.spec.name
            );
            let w = probe::listen(&rt.netns, addr, answer)?;
            rt.listeners.insert((vip.clone(), *port), w);
        }
        if rt.loaded.as_ref() != Some(&rt.spec.conns) {
            rt.daemon
                .load(&charon::swanctl_conf(&rt.spec.conns, Behaviour::default()))?;
            // A connection whose settings or key changed is restarted, as an operator that
            // rolls its pod on a configuration change would: the client must negotiate
            // again with what is configured now.
            if let Some(before) = &rt.loaded {
                for c in &rt.spec.conns {
                    if before.iter().any(|b| b.name == c.name && b != c) {
                        let _ = rt.daemon.swanctl(&[
                            "--terminate",
                            "--ike",
                            &c.name,
                            "--force",
                            "--timeout",
                            "2",
                        ]);
                    }
                }
            }
            rt.loaded = Some(rt.spec.conns.clone());
        }
        // The floating IP last: the gateway is never reachable before its connections
        // are loaded (a client answered NO_PROPOSAL_CHOSEN would not dial again).
        if rt.fip_here.is_none()
            && let Some(fip) = rt.spec.fip.clone()
        {
            netns::ip_in(
                &rt.netns,
                &["addr", "add", &format!("{fip}/32"), "dev", "eth0"],
            )?;
            let (_, inner) = link_addrs(rt.link);
            netns::ip_in(
                inet,
                &[
                    "route",
                    "replace",
                    &format!("{fip}/32"),
                    "via",
                    &inner.to_string(),
                ],
            )?;
            rt.fip_here = Some(fip);
        }
        Ok(())
    }

    fn stop_gateway(&mut self, rt: GatewayRt) {
        self.say(&format!(
            "{} {}/{} pod {} stopped; network namespace {} removed",
            rt.spec.kind, rt.spec.ns, rt.spec.name, rt.spec.pod, rt.netns
        ));
        drop(rt.listeners);
        if let Some(fip) = &rt.fip_here {
            let _ = netns::ip_in(&self.inet, &["route", "del", &format!("{fip}/32")]);
        }
        rt.daemon.stop();
        netns::remove(&rt.netns);
        self.shared
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&rt.spec.pod_uid);
    }

    /// Source-translate what leaves site link `ifname` from `private` to `public` in the
    /// internet namespace (nftables; the table is made on first use).
    fn nat(&mut self, ifname: &str, private: &str, public: &str) -> Result<(), String> {
        let nft = |args: &str| -> Result<(), String> {
            let out = std::process::Command::new("ip")
                .args(["netns", "exec", &self.inet, "nft"])
                .args(args.split(' '))
                .output()
                .map_err(|e| format!("nft (apt-get install nftables): {e}"))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "nft {args}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
        };
        if !self.nat_table {
            nft("add table ip vpnmig")?;
            nft("add chain ip vpnmig post { type nat hook postrouting priority 100 ; }")?;
            self.nat_table = true;
        }
        nft(&format!(
            "add rule ip vpnmig post iifname {ifname} ip saddr {private} snat to {public}"
        ))
    }

    fn start_site(&mut self, s: &SitePlane) -> Result<SiteRt, String> {
        let netns = format!("{}-s{}", self.prefix, self.next_link);
        let ifname = format!("s{}", self.next_link);
        let setup = |w: &mut Worker| -> Result<(u32, charon::Daemon), String> {
            let link = w.new_link(&netns, &ifname)?;
            let (_, inner) = link_addrs(link);
            if s.behind_nat {
                // Behind NAT: the site has a private address only (its link's); the
                // internet translates it to the peer address on the way out, and an
                // unsolicited packet to the peer address finds no mapping and no route.
                w.nat(&ifname, &inner.to_string(), &s.address)?;
            } else {
                netns::ip_in(
                    &netns,
                    &["addr", "add", &format!("{}/32", s.address), "dev", "eth0"],
                )?;
                netns::ip_in(
                    &w.inet,
                    &[
                        "route",
                        "replace",
                        &format!("{}/32", s.address),
                        "via",
                        &inner.to_string(),
                    ],
                )?;
            }
            for subnet in &s.subnets {
                if let Some(h) = first_host(subnet) {
                    netns::ip_in(&netns, &["addr", "add", &format!("{h}/32"), "dev", "lo"])?;
                }
            }
            let dir = w
                .dir
                .join(format!("site-{}-{}-{}", s.ns, s.gateway, s.tunnel));
            let daemon = charon::Daemon::start(&dir, &netns, w.shared.client_timing, s.behaviour)?;
            daemon.load(&charon::swanctl_conf(
                std::slice::from_ref(&s.conn),
                s.behaviour,
            ))?;
            Ok((link, daemon))
        };
        let (link, daemon) = match setup(self) {
            Ok(x) => x,
            Err(e) => {
                netns::remove(&netns);
                return Err(e);
            }
        };
        let targets: Vec<probe::Target> = s
            .targets
            .iter()
            .filter_map(|(name, vip, port)| {
                Some(probe::Target {
                    exposure: name.clone(),
                    addr: format!("{vip}:{port}").parse().ok()?,
                })
            })
            .collect();
        let site = format!("{}/{}/{}", s.ns, s.gateway, s.tunnel);
        let prober = probe::prober(&netns, site.clone(), targets, self.log.clone());
        self.say(&format!(
            "client site {site} ({}) runs charon in network namespace {netns}, dialling {}",
            s.address, s.conn.remote_addr
        ));
        Ok(SiteRt {
            spec: s.clone(),
            netns,
            link,
            daemon,
            _prober: prober,
        })
    }

    /// Apply a site's new behaviour: reload its connection, or restart its charon when
    /// the ports it listens on change.
    fn rebehave(shared: &Shared, rt: &mut SiteRt, restart: bool) -> Result<(), String> {
        if restart {
            rt.daemon
                .restart(shared.client_timing, rt.spec.behaviour)
                .map_err(|e| format!("restart: {e}"))?;
        }
        rt.daemon.load(&charon::swanctl_conf(
            std::slice::from_ref(&rt.spec.conn),
            rt.spec.behaviour,
        ))
    }

    /// Read each gateway's SAs and new log lines; publish what changed.
    fn observe(&mut self) {
        let mut changed = false;
        for rt in self.gateways.values_mut() {
            // New log lines (read from where the last look ended): the last failure per
            // connection. charon logs every SA it makes or loses, so the SAs are listed
            // again when the log grew, and at least every 2 s.
            let mut new = String::new();
            if let Ok(mut f) = std::fs::File::open(rt.daemon.log()) {
                use std::io::{Read, Seek, SeekFrom};
                let mut bytes = Vec::new();
                if f.seek(SeekFrom::Start(rt.log_pos)).is_ok() && f.read_to_end(&mut bytes).is_ok()
                {
                    rt.log_pos += bytes.len() as u64;
                    new = String::from_utf8_lossy(&bytes).into_owned();
                }
            }
            let due = rt
                .listed
                .is_none_or(|t| t.elapsed() >= Duration::from_secs(2));
            if new.is_empty() && !due {
                continue;
            }
            rt.listed = Some(std::time::Instant::now());
            {
                for line in new.lines() {
                    if let Some(reason) = failure_of(line) {
                        let msg = line.to_string();
                        match conn_of(line) {
                            Some(c) => {
                                rt.failures.insert(c.to_string(), (reason, msg));
                            }
                            None => {
                                for c in &rt.spec.conns {
                                    rt.failures.insert(c.name.clone(), (reason, msg.clone()));
                                }
                            }
                        }
                    }
                }
            }
            let sas = match rt.daemon.swanctl(&["--list-sas"]) {
                Ok((out, _, 0)) => vpnmig::core::swanctl::parse(&out).unwrap_or_default(),
                _ => continue,
            };
            let mut per_conn = BTreeMap::new();
            for c in &rt.spec.conns {
                let established = sas.ike_sas.iter().any(|s| {
                    s.name == c.name
                        && s.state == "ESTABLISHED"
                        && s.child_sas.iter().any(|ch| ch.state == "INSTALLED")
                });
                if established {
                    rt.failures.remove(&c.name);
                }
                per_conn.insert(
                    c.name.clone(),
                    Seen {
                        established,
                        failure: rt.failures.get(&c.name).cloned(),
                    },
                );
            }
            let mut seen = self.shared.seen.lock().unwrap_or_else(|e| e.into_inner());
            if seen.get(&rt.spec.pod_uid) != Some(&per_conn) {
                seen.insert(rt.spec.pod_uid.clone(), per_conn);
                changed = true;
            }
        }
        if changed {
            self.shared.seen_version.fetch_add(1, Ordering::SeqCst);
            if let Some(n) = &*self.shared.notify.lock().unwrap_or_else(|e| e.into_inner()) {
                n.notify_one();
            }
        }
    }

    /// `dataplane/sites.json`: every gateway pod and client site, where it runs.
    fn write_sites(&self) {
        let gateways: Vec<_> = self
            .gateways
            .values()
            .map(|g| {
                json!({
                    "kind": g.spec.kind, "namespace": g.spec.ns, "gateway": g.spec.name,
                    "pod": g.spec.pod, "netns": g.netns, "vici": g.daemon.vici(),
                    "floatingIP": g.fip_here, "log": g.daemon.log(),
                    "exposures": g.spec.exposures.iter().map(|(n, v, p)| json!({"name": n, "virtualIP": v, "port": p})).collect::<Vec<_>>(),
                })
            })
            .collect();
        let sites: Vec<_> = self
            .sites
            .values()
            .map(|s| {
                json!({
                    "namespace": s.spec.ns, "gateway": s.spec.gateway, "tunnel": s.spec.tunnel,
                    "site": format!("{}/{}/{}", s.spec.ns, s.spec.gateway, s.spec.tunnel),
                    "address": s.spec.address, "dials": s.spec.conn.remote_addr,
                    "netns": s.netns, "vici": s.daemon.vici(), "log": s.daemon.log(),
                })
            })
            .collect();
        let doc = json!({
            "internet": self.inet,
            "probeLog": self.log.path,
            "gateways": gateways,
            "sites": sites,
        });
        let path = self.dir.join("sites.json");
        let tmp = self.dir.join("sites.json.tmp");
        if std::fs::write(&tmp, serde_json::to_string_pretty(&doc).unwrap_or_default()).is_ok() {
            let _ = std::fs::rename(tmp, path);
        }
    }

    fn teardown(&mut self) {
        for (_, rt) in std::mem::take(&mut self.gateways) {
            self.stop_gateway(rt);
        }
        for (_, rt) in std::mem::take(&mut self.sites) {
            drop(rt._prober);
            rt.daemon.stop();
            netns::remove(&rt.netns);
            let _ = rt.link;
        }
        netns::remove(&self.inet);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_read_from_charon_log_lines() {
        let rows = [
            (
                "07[IKE] <main|1> tried 1 shared key for '198.51.100.23' - 'fw.acme.example', but MAC mismatched",
                Some("AuthenticationFailed"),
                Some("main"),
            ),
            (
                "09[IKE] <main|2> received AUTHENTICATION_FAILED notify error",
                Some("AuthenticationFailed"),
                Some("main"),
            ),
            (
                "05[IKE] <3> received proposals unacceptable",
                Some("NoProposalChosen"),
                None,
            ),
            (
                "11[IKE] <crm|4> traffic selectors 10.250.3.0/24 === 10.20.0.0/16 unacceptable",
                Some("TSUnacceptable"),
                Some("crm"),
            ),
            (
                "06[IKE] <main|1> IKE_SA main[1] established between 198.51.100.23[198.51.100.23]...203.0.113.10[fw.acme.example]",
                None,
                Some("main"),
            ),
        ];
        for (line, reason, conn) in rows {
            assert_eq!(failure_of(line), reason, "{line}");
            assert_eq!(conn_of(line), conn, "{line}");
        }
    }

    #[test]
    fn stale_namespaces_are_told_by_their_pid() {
        assert_eq!(owner_pid("vpnmig-4242-0-inet"), Some(4242));
        assert_eq!(owner_pid("vpnmig-4242-3-g7"), Some(4242));
        assert_eq!(owner_pid("other-4242"), None);
        assert_eq!(
            link_addrs(1),
            ("198.18.0.5".parse().unwrap(), "198.18.0.6".parse().unwrap())
        );
        assert_eq!(first_host("10.20.0.0/16").as_deref(), Some("10.20.0.1"));
    }
}
