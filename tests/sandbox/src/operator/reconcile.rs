//! One reconcile pass over every gateway and VPNPeer: the controller logic of DESIGN.md §2
//! ("Operator behaviour vpnmig relies on"), built from the smaller parts:
//! - the finalizer on every gateway, and the deletion unwind: "children first, then
//!   OpenStack cleanup; the object disappears only when it is done" (`unwind`);
//! - the FIP ([`super::fip`]), the serviceCIDR and virtual IPs ([`super::cidr`]), the
//!   workload ([`super::children`]), authorization ([`super::auth`]) and the client peers
//!   ([`super::peers`]);
//! - status: `floatingIP`, `serviceCIDR`, `exposures`, `observedGeneration` and the
//!   conditions `FIPAttached`/`Ready` (gateways) and `Authorized`/`Established`/`Ready`
//!   (VPNPeers) ([`super::conditions`]).
//!
//! Gateways are handled in a stable order (those whose status already claims their FIP
//! first, then IPsecGateways before VPNGateways, oldest first), so that an old gateway
//! keeps the FIP it held when the sandbox starts with both.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use base64::Engine;
use ipnet::IpNet;
use serde_json::{Value, json};
use tokio::time::Instant;
use vpnmig::core::model::{Condition, GatewayStatus, PeerStatus, SecretKeyRef, condition};

use super::api::OperatorApi;
use super::auth::authorize;
use super::children::{self, Workload};
use super::cidr;
use super::conditions::{cond, merge};
use super::fip::{Attach, Fips};
use super::peers::{Clients, Conn, Daemon, Outcome, Reach};
use super::settings::{GatewayFaults, Settings};
use super::view::{Gateway, GatewayKind, Peer};
use crate::resources::ResourceType;

/// Where a gateway's deletion unwind is.
#[derive(Debug)]
struct Unwind {
    started: Instant,
    children_gone: Option<Instant>,
}

/// What the operator remembers between passes (what OpenStack and the pods would).
#[derive(Debug, Default)]
pub struct State {
    pub fips: Fips,
    pub clients: Clients,
    /// strongSwan per gateway uid.
    pub daemons: BTreeMap<String, Daemon>,
    /// The daemons as pod exec sees them ([`State::publish`]): what `swanctl` in a pod
    /// answers from without waiting for a reconcile to let go of the state.
    pub published: Published,
    unwinds: BTreeMap<String, Unwind>,
    next_pod_ip: u32,
    /// Gateway uids seen in the last pass.
    known: BTreeSet<String>,
    /// The real data plane, when the sandbox runs one (`--data-plane strongswan`).
    pub plane: Option<std::sync::Arc<crate::dataplane::Bed>>,
    /// What each gateway pod's charon should run, by gateway uid (kept while its pod runs,
    /// also while the gateway is deleting or paused).
    plane_gateways: BTreeMap<String, crate::dataplane::GatewayPlane>,
    /// The client sites, each configured once from the first gateway seen for it.
    plane_sites: BTreeMap<String, crate::dataplane::SitePlane>,
}

/// Each gateway pod's charon (by gateway uid) as the reconciles last published it.
pub type Published = std::sync::Arc<std::sync::RwLock<BTreeMap<String, Daemon>>>;

impl State {
    /// Make gateway `uid`'s daemon as it is now what pod exec sees, before a status that
    /// tells of it is written: a client that reads `Established` and then asks `swanctl
    /// --list-sas` finds the SA, as with a real charon.
    pub fn publish(&self, uid: &str) {
        let mut p = self.published.write().unwrap_or_else(|e| e.into_inner());
        match self.daemons.get(uid) {
            Some(d) => {
                p.insert(uid.to_string(), d.clone());
            }
            None => {
                p.remove(uid);
            }
        }
    }

    /// Publish every daemon (and forget the gone ones): the end of a reconcile.
    pub fn publish_all(&self) {
        let mut p = self.published.write().unwrap_or_else(|e| e.into_inner());
        p.retain(|uid, _| self.daemons.contains_key(uid));
        for (uid, d) in &self.daemons {
            p.insert(uid.clone(), d.clone());
        }
    }

    /// A fresh state that drives the real data plane `plane` (if any).
    pub fn with_plane(plane: Option<std::sync::Arc<crate::dataplane::Bed>>) -> State {
        State {
            plane,
            ..Default::default()
        }
    }
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// The PSK content of a Secret key (`data` base64, or `stringData`).
fn read_psk(
    store: &dyn OperatorApi,
    ns: &str,
    r: Option<&SecretKeyRef>,
) -> Result<Vec<u8>, String> {
    let r = r.ok_or_else(|| "no pskSecretRef".to_string())?;
    let rt = store
        .resource("", "v1", "secrets")
        .ok_or_else(|| "secrets are not served".to_string())?;
    let secret = store
        .get(&rt, ns, &r.name)
        .map_err(|_| format!("Secret {ns}/{} not found", r.name))?;
    if let Some(v) = secret
        .get("data")
        .and_then(|d| d.get(&r.key))
        .and_then(Value::as_str)
    {
        return base64::engine::general_purpose::STANDARD
            .decode(v)
            .map_err(|_| format!("Secret {ns}/{} key {} is not base64", r.name, r.key));
    }
    if let Some(v) = secret
        .get("stringData")
        .and_then(|d| d.get(&r.key))
        .and_then(Value::as_str)
    {
        return Ok(v.as_bytes().to_vec());
    }
    Err(format!("Secret {ns}/{} has no key {}", r.name, r.key))
}

fn write_status(store: &dyn OperatorApi, rt: &ResourceType, ns: &str, name: &str, status: Value) {
    let _ = store.modify(rt, ns, name, true, &|cur| {
        let mut o = cur.clone();
        o["status"] = status.clone();
        Ok(o)
    });
}

fn set_finalizer(store: &dyn OperatorApi, rt: &ResourceType, gw: &Gateway, present: bool) {
    let f = gw.kind.finalizer();
    if gw.finalizers.iter().any(|x| x == f) == present {
        return;
    }
    let _ = store.modify(rt, &gw.ns, &gw.name, false, &|cur| {
        let mut o = cur.clone();
        let mut list: Vec<Value> = o
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        list.retain(|v| v != f);
        if present {
            list.push(json!(f));
        }
        o["metadata"]["finalizers"] = json!(list);
        Ok(o)
    });
}

/// Which gateways one reconcile acts on: every one (the emulator's pass), or those a key
/// of the work queue names (a field left `None` matches any: a Secret's change wakes every
/// gateway of its namespace).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Scope {
    pub kind: Option<GatewayKind>,
    pub ns: Option<String>,
    pub name: Option<String>,
}

impl Scope {
    /// Every gateway.
    pub const ALL: Scope = Scope {
        kind: None,
        ns: None,
        name: None,
    };

    /// One gateway.
    pub fn gateway(kind: GatewayKind, ns: &str, name: &str) -> Scope {
        Scope {
            kind: Some(kind),
            ns: Some(ns.into()),
            name: Some(name.into()),
        }
    }

    pub fn matches(&self, kind: GatewayKind, ns: &str, name: &str) -> bool {
        self.kind.is_none_or(|k| k == kind)
            && self.ns.as_deref().is_none_or(|n| n == ns)
            && self.name.as_deref().is_none_or(|n| n == name)
    }
}

/// How soon a pass that could not read the gateways or peers tries again.
const READ_RETRY: Duration = Duration::from_secs(1);

/// How soon a gateway whose floating IP could not be attached tries again.
const FIP_RETRY: Duration = Duration::from_secs(1);

/// Run one pass over every gateway. Returns when the next timer (a delay, a retry) is due.
pub fn reconcile(
    store: &dyn OperatorApi,
    settings: &Settings,
    st: &mut State,
    now: Instant,
) -> Option<Instant> {
    reconcile_scope(store, settings, st, now, &Scope::ALL)
}

/// Reconcile the gateways `scope` names (and the VPNPeers of a VPNGateway it names that
/// does not exist). What all gateways share (pinned floating IPs, serviceCIDRs in use,
/// which gateways are gone) is read from the full lists each time. Returns when the next
/// timer of these gateways is due.
pub fn reconcile_scope(
    store: &dyn OperatorApi,
    settings: &Settings,
    st: &mut State,
    now: Instant,
    scope: &Scope,
) -> Option<Instant> {
    let mut wake = None;
    let mut gateways: Vec<(ResourceType, Gateway)> = Vec::new();
    for kind in GatewayKind::ALL {
        let Some(rt) = kind.resource(store) else {
            continue;
        };
        // A list that failed is not an empty one: forgetting every gateway would release
        // their floating IPs.
        let Ok(objects) = store.list(&rt, None) else {
            return Some(now + READ_RETRY);
        };
        for obj in objects {
            match Gateway::parse(kind, &obj) {
                Ok(gw) => gateways.push((rt.clone(), gw)),
                Err(msg) => {
                    let ns = obj
                        .pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let name = obj
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if !scope.matches(kind, ns, name) {
                        continue;
                    }
                    let generation = obj
                        .pointer("/metadata/generation")
                        .and_then(Value::as_i64)
                        .unwrap_or(1);
                    let old: GatewayStatus = obj
                        .get("status")
                        .cloned()
                        .and_then(|s| serde_json::from_value(s).ok())
                        .unwrap_or_default();
                    let status = GatewayStatus {
                        conditions: merge(
                            &old.conditions,
                            vec![cond("Ready", false, "InvalidSpec", msg, generation)],
                        ),
                        ..old
                    };
                    write_status(store, &rt, ns, name, json!(status));
                }
            }
        }
    }

    // Gateways that vanished without our unwind (namespace deleted, finalizer removed by
    // hand): OpenStack forgets them.
    let present: BTreeSet<String> = gateways.iter().map(|(_, g)| g.uid.clone()).collect();
    for gone in st.known.difference(&present) {
        st.fips.cleanup(gone);
        st.daemons.remove(gone);
        st.unwinds.remove(gone);
    }
    st.known = present;

    // VPNPeers by (namespace, gateway name).
    let peer_rt = store.resource("vpn.bnerd.net", "v1alpha1", "vpnpeers");
    let mut vpn_peers: BTreeMap<(String, String), Vec<Peer>> = BTreeMap::new();
    if let Some(rt) = &peer_rt {
        let Ok(objects) = store.list(rt, None) else {
            return Some(now + READ_RETRY);
        };
        for obj in objects {
            if let Ok(p) = Peer::parse_vpn_peer(&obj) {
                let gw = p
                    .vpn_peer
                    .as_ref()
                    .map(|v| v.gateway.clone())
                    .unwrap_or_default();
                vpn_peers.entry((p.ns.clone(), gw)).or_default().push(p);
            }
        }
    }

    for (_, gw) in &gateways {
        if let Some(f) = &gw.pinned_fip {
            st.fips.reserve_pinned(f);
        }
    }
    let mut cidrs_in_use: BTreeSet<IpNet> = gateways
        .iter()
        .flat_map(|(_, g)| [g.pinned_cidr.as_deref(), g.status.service_cidr.as_deref()])
        .flatten()
        .filter_map(cidr::parse)
        .collect();

    let claims_fip = |g: &Gateway| {
        g.status.floating_ip.is_some()
            && condition(&g.status.conditions, "FIPAttached").is_some_and(|c| c.status == "True")
    };
    gateways.sort_by(|(_, a), (_, b)| {
        (!claims_fip(a), a.kind, &a.created, &a.ns, &a.name).cmp(&(
            !claims_fip(b),
            b.kind,
            &b.created,
            &b.ns,
            &b.name,
        ))
    });

    let mut seen_peers = BTreeSet::new();
    let mut handled_peer_groups = BTreeSet::new();
    for (rt, gw) in &gateways {
        let faults = settings.faults(gw.kind, &gw.ns, &gw.name);
        let peers: Vec<Peer> = match gw.kind {
            GatewayKind::IPsec => gw.peers.clone(),
            GatewayKind::Vpn => {
                handled_peer_groups.insert((gw.ns.clone(), gw.name.clone()));
                vpn_peers
                    .get(&(gw.ns.clone(), gw.name.clone()))
                    .cloned()
                    .unwrap_or_default()
            }
        };
        seen_peers.extend(peers.iter().map(|p| p.key.clone()));
        if faults.paused || !scope.matches(gw.kind, &gw.ns, &gw.name) {
            continue;
        }
        if gw.deleting {
            wake = earliest(wake, unwind(store, rt, gw, &faults, settings, st, now));
            if let Some(prt) = &peer_rt {
                for p in peers.iter().filter(|p| p.vpn_peer.is_some()) {
                    let up = st
                        .daemons
                        .get(&gw.uid)
                        .is_some_and(|d| d.sas.contains_key(&p.key));
                    let out = Outcome {
                        established: up,
                        reason: if up { "Established" } else { "GatewayDeleting" },
                        message: format!("gateway {} is being deleted", gw.name),
                        wake: None,
                    };
                    write_peer_status(store, prt, gw, p, peers.len(), &out);
                }
            }
            continue;
        }
        wake = earliest(
            wake,
            reconcile_gateway(
                store,
                rt,
                peer_rt.as_ref(),
                gw,
                &peers,
                &faults,
                settings,
                st,
                &mut cidrs_in_use,
                now,
            ),
        );
    }
    st.clients.retain_peers(&seen_peers);

    // VPNPeers whose gateway does not exist.
    if let Some(prt) = &peer_rt {
        for ((ns, gw_name), peers) in &vpn_peers {
            if handled_peer_groups.contains(&(ns.clone(), gw_name.clone()))
                || !scope.matches(GatewayKind::Vpn, ns, gw_name)
            {
                continue;
            }
            for p in peers {
                let out = Outcome {
                    established: false,
                    reason: "GatewayNotFound",
                    message: format!("VPNGateway {ns}/{gw_name} not found"),
                    wake: None,
                };
                let vp = p.vpn_peer.as_ref().expect("a VPNPeer");
                let conds = vec![
                    cond(
                        "Authorized",
                        false,
                        "GatewayNotFound",
                        &out.message,
                        vp.generation,
                    ),
                    cond(
                        "Established",
                        false,
                        out.reason,
                        &out.message,
                        vp.generation,
                    ),
                    cond("Ready", false, out.reason, &out.message, vp.generation),
                ];
                let status = PeerStatus {
                    observed_generation: Some(vp.generation),
                    conditions: merge(&vp.status.conditions, conds),
                };
                write_status(store, prt, ns, &vp.name, json!(status));
            }
        }
    }
    if let Some(bed) = &st.plane {
        let daemons = &st.daemons;
        st.plane_gateways
            .retain(|uid, g| daemons.get(uid).is_some_and(|d| d.pod_uid == g.pod_uid));
        bed.want(crate::dataplane::Desired {
            gateways: st.plane_gateways.values().cloned().collect(),
            sites: st.plane_sites.values().cloned().collect(),
        });
    }
    wake
}

/// Reconcile one live (not deleting, not paused) gateway and its peers.
#[allow(clippy::too_many_arguments)]
fn reconcile_gateway(
    store: &dyn OperatorApi,
    rt: &ResourceType,
    peer_rt: Option<&ResourceType>,
    gw: &Gateway,
    peers: &[Peer],
    faults: &GatewayFaults,
    settings: &Settings,
    st: &mut State,
    cidrs_in_use: &mut BTreeSet<IpNet>,
    now: Instant,
) -> Option<Instant> {
    let mut wake = None;
    let generation = gw.generation;
    set_finalizer(store, rt, gw, true);

    // Floating IP.
    let attach = st.fips.ensure(
        &gw.uid,
        &gw.display(),
        gw.pinned_fip.as_deref(),
        gw.status.floating_ip.as_deref(),
        &settings.fip_pool,
        faults.fip_held_by_other_port,
    );
    let (fip, fip_cond) = match &attach {
        Attach::Attached { fip, port } => (
            Some(fip.clone()),
            cond(
                "FIPAttached",
                true,
                "Associated",
                format!("floating IP {fip} associated with port {port}"),
                generation,
            ),
        ),
        Attach::AlreadyAssociated { fip, port, holder } => {
            let by = holder
                .as_ref()
                .map(|h| format!(" of {h}"))
                .unwrap_or_default();
            (
                None,
                cond(
                    "FIPAttached",
                    false,
                    "AlreadyAssociated",
                    format!(
                        "floating IP {fip} is already associated with port {port}{by}; retrying"
                    ),
                    generation,
                ),
            )
        }
        Attach::Exhausted => (
            None,
            cond(
                "FIPAttached",
                false,
                "NoFloatingIPAvailable",
                "no free floating IP in the pool; retrying",
                generation,
            ),
        ),
    };

    // Not attached (another port holds it, or the pool is empty): tried again, as the
    // operator retries, also where no event wakes this gateway (the real control plane's
    // queue wakes only the object that changed: another gateway's unwind that frees the
    // floating IP does not name this one).
    if fip.is_none() {
        wake = earliest(wake, Some(now + FIP_RETRY));
    }

    // serviceCIDR and virtual IPs.
    let service_cidr = gw
        .pinned_cidr
        .as_deref()
        .and_then(cidr::parse)
        .or_else(|| gw.status.service_cidr.as_deref().and_then(cidr::parse))
        .or_else(|| cidr::next_free_24(&settings.service_cidr_pool, cidrs_in_use));
    if let Some(c) = service_cidr {
        cidrs_in_use.insert(c);
    }
    let exposures = cidr::virtual_ips(service_cidr, &gw.exposures, &gw.status.exposures);
    let service_cidr = service_cidr.map(|c| c.to_string());

    // Workload, and strongSwan in it.
    let workload: Result<Workload, String> = children::ensure(store, gw, &mut st.next_pod_ip);
    match &workload {
        Ok(w) => {
            if st
                .daemons
                .get(&gw.uid)
                .is_none_or(|d| d.pod_uid != w.pod_uid)
            {
                st.daemons
                    .insert(gw.uid.clone(), Daemon::new(&gw.ns, &w.pod, &w.pod_uid));
            }
        }
        Err(_) => {
            st.daemons.remove(&gw.uid);
        }
    }

    // The connections charon has loaded: one per peer, a CHILD SA per remote subnet
    // (named like the ones `Clients::step` installs).
    if let Some(d) = st.daemons.get_mut(&gw.uid) {
        d.conns = peers
            .iter()
            .map(|p| {
                let several = p.remote_subnets.len() > 1;
                Conn {
                    key: p.key.clone(),
                    name: p.conn.clone(),
                    version: gw.ike_version,
                    ike_life_s: super::peers::parse_duration(gw.ike_lifetime.as_deref(), 86400),
                    local: fip.clone().unwrap_or_else(|| "%any".into()),
                    remote: p.address.clone(),
                    remote_id: p.id.clone(),
                    children: p
                        .remote_subnets
                        .iter()
                        .enumerate()
                        .map(|(i, s)| {
                            (
                                if several {
                                    format!("{}-{}", p.conn, i + 1)
                                } else {
                                    p.conn.clone()
                                },
                                service_cidr.clone().unwrap_or_else(|| "dynamic".into()),
                                s.clone(),
                                super::peers::parse_duration(p.esp_lifetime.as_deref(), 3600),
                            )
                        })
                        .collect(),
                    refuses_initiation: faults.client_refuses_initiation,
                }
            })
            .collect();
    }

    if st.plane.is_some() {
        plane_gateway(
            store,
            gw,
            peers,
            faults,
            settings,
            st,
            &fip,
            &service_cidr,
            &exposures,
        );
    }

    // Client peers.
    let retry = Duration::from_millis(settings.peer_retry_ms);
    for p in peers {
        let reach = Reach {
            fip: fip.as_deref(),
            service_cidr: service_cidr.as_deref(),
            psk: read_psk(store, &gw.ns, p.psk_ref.as_ref()),
        };
        if st.plane.is_some() {
            let out = plane_outcome(st, gw, p, &reach);
            if let (Some(prt), Some(_)) = (peer_rt, &p.vpn_peer) {
                write_peer_status(store, prt, gw, p, peers.len(), &out);
            }
            continue;
        }
        let explicit = settings.client(&p.ns, &p.address, &p.id);
        let out = st.clients.step(
            st.daemons.get_mut(&gw.uid),
            gw,
            p,
            reach,
            explicit,
            faults,
            retry,
            now,
        );
        wake = earliest(wake, out.wake);
        st.publish(&gw.uid);
        if let (Some(prt), Some(_)) = (peer_rt, &p.vpn_peer) {
            write_peer_status(store, prt, gw, p, peers.len(), &out);
        }
    }
    if let Some(d) = st.daemons.get_mut(&gw.uid) {
        d.sas.retain(|k, _| peers.iter().any(|p| p.key == *k));
    }
    st.publish(&gw.uid);

    // Gateway status.
    let what = match gw.kind {
        GatewayKind::IPsec => format!("{n}/{n} tunnels configured", n = peers.len()),
        GatewayKind::Vpn => format!("{} peers configured", peers.len()),
    };
    // On the real data plane the pod is ready when its charon answers (its readiness).
    let starting = match (&st.plane, &workload) {
        (Some(bed), Ok(w)) if !bed.running(&w.pod_uid) => Some(w.pod.clone()),
        _ => None,
    };
    let ready = match (&workload, &fip, &service_cidr) {
        (Err(e), _, _) => cond("Ready", false, "WorkloadNotReady", e.clone(), generation),
        (Ok(_), _, _) if starting.is_some() => cond(
            "Ready",
            false,
            "WorkloadNotReady",
            format!(
                "strongSwan is starting in pod {}",
                starting.as_deref().unwrap_or_default()
            ),
            generation,
        ),
        (_, None, _) => cond(
            "Ready",
            false,
            "FIPNotAttached",
            format!(
                "waiting for the floating IP: {}",
                fip_cond.message.clone().unwrap_or_default()
            ),
            generation,
        ),
        (_, _, None) => cond(
            "Ready",
            false,
            "ServiceCIDRExhausted",
            format!("no free /24 in {}", settings.service_cidr_pool),
            generation,
        ),
        _ => cond(
            "Ready",
            true,
            "Reconciled",
            format!("strongSwan running, {what}"),
            generation,
        ),
    };
    let status = GatewayStatus {
        observed_generation: Some(generation),
        floating_ip: fip,
        service_cidr,
        exposures,
        conditions: merge(&gw.status.conditions, vec![fip_cond, ready]),
    };
    write_status(store, rt, &gw.ns, &gw.name, json!(status));
    wake
}

fn write_peer_status(
    store: &dyn OperatorApi,
    rt: &ResourceType,
    gw: &Gateway,
    p: &Peer,
    peers_on_gateway: usize,
    out: &Outcome,
) {
    let Some(vp) = &p.vpn_peer else { return };
    let g = vp.generation;
    let (auth_ok, auth_reason, auth_msg) = authorize(
        &gw.name,
        peers_on_gateway,
        vp.authorization.as_ref(),
        &gw.exposures,
        &gw.reverse_exposures,
    );
    let ready = match (auth_ok, out.established) {
        (true, true) => cond(
            "Ready",
            true,
            "Ready",
            "authorized and IKE/CHILD SAs established",
            g,
        ),
        (false, _) => cond("Ready", false, auth_reason, auth_msg.clone(), g),
        (true, false) => cond("Ready", false, out.reason, out.message.clone(), g),
    };
    let conds: Vec<Condition> = vec![
        cond("Authorized", auth_ok, auth_reason, auth_msg, g),
        cond(
            "Established",
            out.established,
            out.reason,
            out.message.clone(),
            g,
        ),
        ready,
    ];
    let status = PeerStatus {
        observed_generation: Some(g),
        conditions: merge(&vp.status.conditions, conds),
    };
    write_status(store, rt, &p.ns, &vp.name, json!(status));
}

/// The deletion unwind of one gateway: after `finalizerDelayMs` (+ `slowFinalizerMs`)
/// delete the children, after `openstackDelayMs` disassociate (and, if unpinned,
/// release) the FIP, then remove the finalizer. `stuckFinalizer` holds it at the start.
fn unwind(
    store: &dyn OperatorApi,
    rt: &ResourceType,
    gw: &Gateway,
    faults: &GatewayFaults,
    settings: &Settings,
    st: &mut State,
    now: Instant,
) -> Option<Instant> {
    let u = st.unwinds.entry(gw.uid.clone()).or_insert(Unwind {
        started: now,
        children_gone: None,
    });
    if faults.stuck_finalizer {
        return None;
    }
    let children_gone = match u.children_gone {
        Some(t) => t,
        None => {
            let due = u.started
                + Duration::from_millis(settings.finalizer_delay_ms + faults.slow_finalizer_ms);
            if now < due {
                return Some(due);
            }
            children::delete(store, gw);
            u.children_gone = Some(now);
            st.daemons.remove(&gw.uid);
            st.publish(&gw.uid);
            now
        }
    };
    let due = children_gone + Duration::from_millis(settings.openstack_delay_ms);
    if now < due {
        return Some(due);
    }
    st.fips.cleanup(&gw.uid);
    set_finalizer(store, rt, gw, false);
    None
}

/// The IKE and ESP proposals as strongSwan reads them (`default` stays `default`).
fn proposals(v: &[String]) -> Vec<String> {
    if v.is_empty() {
        vec!["default".into()]
    } else {
        v.to_vec()
    }
}

/// What the real data plane should run for one live gateway: its pod's charon
/// configuration (the PSK read from the Secret now), its floating IP and exposures; and,
/// for an IPsecGateway, each tunnel's client site the first time it is complete (the
/// client's parameter sheet: configured once, never again).
#[allow(clippy::too_many_arguments)]
fn plane_gateway(
    store: &dyn OperatorApi,
    gw: &Gateway,
    peers: &[Peer],
    faults: &GatewayFaults,
    settings: &Settings,
    st: &mut State,
    fip: &Option<String>,
    service_cidr: &Option<String>,
    exposures: &[vpnmig::core::model::ExposureStatus],
) {
    use crate::dataplane::{ChildConf, ConnConf, GatewayPlane, SitePlane};
    let Some(daemon) = st.daemons.get(&gw.uid) else {
        st.plane_gateways.remove(&gw.uid);
        return;
    };
    let local_ts = faults
        .local_ts_override
        .clone()
        .or_else(|| service_cidr.clone())
        .unwrap_or_else(|| "dynamic".into());
    let ike_life = gw.ike_lifetime.clone().unwrap_or_else(|| "4h".into());
    let children_of = |p: &Peer, local: &str, initiator: bool| -> Vec<ChildConf> {
        let several = p.remote_subnets.len() > 1;
        p.remote_subnets
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let name = if several {
                    format!("{}-{}", p.conn, i + 1)
                } else {
                    p.conn.clone()
                };
                let (l, r) = if initiator {
                    (vec![s.clone()], vec![local.to_string()])
                } else {
                    (vec![local.to_string()], vec![s.clone()])
                };
                ChildConf {
                    name,
                    local_ts: l,
                    remote_ts: r,
                    esp_proposals: proposals(&p.esp_proposals),
                    rekey_time: p.esp_lifetime.clone().unwrap_or_else(|| "1h".into()),
                }
            })
            .collect()
    };
    let conns: Vec<ConnConf> = peers
        .iter()
        .map(|p| ConnConf {
            name: p.conn.clone(),
            version: gw.ike_version,
            local_addr: fip.clone().unwrap_or_else(|| "%any".into()),
            remote_addr: p.address.clone(),
            local_id: fip.clone().unwrap_or_else(|| "%any".into()),
            remote_id: p.id.clone(),
            proposals: proposals(&gw.ike_proposals),
            rekey_time: ike_life.clone(),
            // The gateway checks its peer as the spec says (`dpd.delay`): a dead client
            // is noticed, and its SAs cleared.
            dpd_delay: p.dpd_delay.clone().unwrap_or_else(|| "0s".into()),
            // pskMismatch: the gateway is given another key than the client's, for real.
            psk: read_psk(store, &gw.ns, p.psk_ref.as_ref()).ok().map(|k| {
                if faults.psk_mismatch {
                    [k.as_slice(), b"-mismatch"].concat()
                } else {
                    k
                }
            }),
            children: children_of(p, &local_ts, false),
            initiator: false,
        })
        .collect();
    let port_of = |name: &str| {
        gw.exposures
            .iter()
            .find(|e| e.name == name)
            .map(|e| e.target.port)
    };
    let exposures: Vec<(String, String, u16)> = exposures
        .iter()
        .filter_map(|e| Some((e.name.clone(), e.virtual_ip.clone()?, port_of(&e.name)?)))
        .collect();
    st.plane_gateways.insert(
        gw.uid.clone(),
        GatewayPlane {
            uid: gw.uid.clone(),
            pod_uid: daemon.pod_uid.clone(),
            kind: gw.kind.kind().into(),
            ns: gw.ns.clone(),
            name: gw.name.clone(),
            pod: daemon.pod.clone(),
            fip: fip.clone(),
            exposures: exposures.clone(),
            conns,
        },
    );
    // The client sites' behaviour follows the fault knobs of the gateway serving them.
    let behaviour = crate::dataplane::Behaviour {
        reinitiates: !faults.client_peer_never_returns,
        answers: !faults.client_refuses_initiation,
        dpd: !faults.client_dpd_off,
    };
    for p in peers {
        if let Some(site) = st
            .plane_sites
            .get_mut(&format!("{}/{}/{}", p.ns, p.address, p.id))
        {
            site.behaviour = behaviour;
        }
    }
    // The client sites themselves: from an IPsecGateway whose values are complete.
    let (GatewayKind::IPsec, Some(fip), Some(cidr)) = (gw.kind, fip, service_cidr) else {
        return;
    };
    for p in peers {
        let key = format!("{}/{}/{}", p.ns, p.address, p.id);
        if st.plane_sites.contains_key(&key) {
            continue;
        }
        let Ok(psk) = read_psk(store, &gw.ns, p.psk_ref.as_ref()) else {
            continue;
        };
        let explicit = settings.client(&p.ns, &p.address, &p.id);
        let psk = explicit
            .and_then(|c| c.psk.clone())
            .map(String::into_bytes)
            .unwrap_or(psk);
        st.plane_sites.insert(
            key.clone(),
            SitePlane {
                key,
                ns: p.ns.clone(),
                gateway: gw.name.clone(),
                tunnel: p.conn.clone(),
                address: p.address.clone(),
                subnets: p.remote_subnets.clone(),
                targets: exposures.clone(),
                behind_nat: faults.client_behind_nat,
                conn: ConnConf {
                    name: p.conn.clone(),
                    version: gw.ike_version,
                    local_addr: if faults.client_behind_nat {
                        "%any".into()
                    } else {
                        p.address.clone()
                    },
                    remote_addr: fip.clone(),
                    local_id: p.id.clone(),
                    remote_id: fip.clone(),
                    proposals: proposals(&gw.ike_proposals),
                    rekey_time: ike_life.clone(),
                    dpd_delay: format!("{}s", settings.client_dpd_ms.div_ceil(1000).max(1)),
                    psk: Some(psk),
                    children: children_of(p, cidr, true),
                    initiator: true,
                },
                behaviour,
            },
        );
    }
}

/// A peer's `Established` condition from what the real charon shows.
fn plane_outcome(st: &State, gw: &Gateway, p: &Peer, reach: &Reach<'_>) -> Outcome {
    let who = format!("'{}' @ {}", p.id, p.address);
    let Some(daemon) = st.daemons.get(&gw.uid) else {
        return Outcome {
            established: false,
            reason: "GatewayNotRunning",
            message: format!("the pod of gateway {} is not running", gw.name),
            wake: None,
        };
    };
    let down = |reason: &'static str, message: String| Outcome {
        established: false,
        reason,
        message,
        wake: None,
    };
    if reach.fip.is_none() {
        return down(
            "FIPNotAttached",
            format!("gateway {} has no floating IP attached", gw.name),
        );
    }
    if let Err(why) = &reach.psk {
        return down("SecretNotFound", why.clone());
    }
    let seen = st
        .plane
        .as_ref()
        .and_then(|b| b.seen(&daemon.pod_uid, &p.conn));
    match seen {
        Some(s) if s.established => Outcome {
            established: true,
            reason: "Established",
            message: format!(
                "IKE SA and CHILD SA with {who} established (strongSwan in pod {})",
                daemon.pod
            ),
            wake: None,
        },
        Some(crate::dataplane::Seen {
            failure: Some((reason, line)),
            ..
        }) => down(
            reason,
            format!("no IKE SA with {who}: charon logged: {line}"),
        ),
        _ => down(
            "WaitingForPeer",
            format!(
                "no IKE SA with {who} yet (strongSwan in pod {})",
                daemon.pod
            ),
        ),
    }
}
