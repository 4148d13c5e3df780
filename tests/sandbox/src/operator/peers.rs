//! Simulated client peers and the IKE/CHILD SAs strongSwan in the gateway pod holds.
//! Issue 3 item 4: "a simulated client peer per tunnel/peer that re-initiates after a
//! configurable retry delay and gets an IKE SA only when the FIP is attached, the PSK
//! content matches the client's and the proposals intersect"; runbook "What must stay
//! pinned" (the client dials the FIP, authenticates with the PSK content, proposes its
//! proposals, and a traffic-selector mismatch "fails IKE Phase 2 negotiation").
//!
//! A client is keyed by (namespace, peer address, peer id). Its configuration is what the
//! settings say, and for everything they leave out, what the first gateway it established
//! an IKE SA with had (it was configured for that gateway). An IKE SA exists while:
//! the gateway pod runs, its FIP is attached and is the one the client dials, the PSK
//! Secret exists and its content is the client's (and no `pskMismatch` fault), IKE version
//! and IKE and ESP proposals intersect, and — to come up — the conditions have held for
//! `peerRetryMs` (the client re-initiates on its own retry timer) and the
//! `clientPeerNeverReturns` fault is off. One CHILD SA per remote subnet the client also
//! has, while the gateway's serviceCIDR is what the client routes into the tunnel.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use super::cidr;
use super::settings::{ClientSettings, GatewayFaults};
use super::view::{Gateway, Peer};

/// A client's identity: namespace, peer address, peer IKE id.
pub type ClientKey = (String, String, String);

/// What a client peer is configured with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    pub floating_ip: String,
    pub psk: Vec<u8>,
    pub ike_version: u8,
    pub ike_proposals: Vec<String>,
    pub esp_proposals: Vec<String>,
    /// The client's own networks (the gateway side's remote subnets).
    pub local_subnets: Vec<String>,
    /// What it routes into the tunnel (the gateway's serviceCIDR).
    pub remote_subnets: Vec<String>,
}

/// A client as tests see it (the PSK is left out).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientInfo {
    pub namespace: String,
    pub address: String,
    pub id: String,
    #[serde(rename = "floatingIP")]
    pub floating_ip: String,
    pub ike_version: u8,
    pub ike_proposals: Vec<String>,
    pub esp_proposals: Vec<String>,
    pub local_subnets: Vec<String>,
    pub remote_subnets: Vec<String>,
}

/// One CHILD SA.
#[derive(Clone, Debug)]
pub struct ChildSa {
    pub name: String,
    pub uid: u32,
    pub reqid: u32,
    pub spi_in: String,
    pub spi_out: String,
    pub proposal: String,
    pub installed: Instant,
    pub life_s: u64,
    pub local_ts: String,
    pub remote_ts: String,
}

/// One IKE SA, the gateway being the responder.
#[derive(Clone, Debug)]
pub struct IkeSa {
    pub conn: String,
    pub uid: u32,
    pub version: u8,
    pub local_id: String,
    pub local_host: String,
    pub remote_id: String,
    pub remote_host: String,
    pub spi_i: String,
    pub spi_r: String,
    pub proposal: String,
    pub established: Instant,
    pub life_s: u64,
    pub children: Vec<ChildSa>,
    /// The gateway initiated it (`swanctl --initiate`): the initiator SPI is the local one.
    pub gateway_initiated: bool,
}

/// One connection as configured in charon (what `swanctl --list-conns` prints and
/// `swanctl --initiate --child NAME` starts).
#[derive(Clone, Debug, Default)]
pub struct Conn {
    /// The peer's key (its IKE SA in [`Daemon::sas`]).
    pub key: String,
    pub name: String,
    pub version: u8,
    pub ike_life_s: u64,
    /// The floating IP (`%any` while none is attached).
    pub local: String,
    pub remote: String,
    pub remote_id: String,
    /// `(name, local selector, remote selector, ESP lifetime)` per CHILD SA.
    pub children: Vec<(String, String, String, u64)>,
    /// `clientRefusesInitiation`.
    pub refuses_initiation: bool,
}

/// strongSwan (charon) in one gateway pod: its SAs and its id counters. A new pod is a
/// new daemon: ids start again at 1.
#[derive(Clone, Debug)]
pub struct Daemon {
    pub ns: String,
    pub pod: String,
    pub pod_uid: String,
    next_ike: u32,
    next_child: u32,
    reqids: BTreeMap<String, u32>,
    /// IKE SAs by peer key.
    pub sas: BTreeMap<String, IkeSa>,
    /// The connections loaded into charon, one per peer (set on every reconcile pass).
    pub conns: Vec<Conn>,
}

impl Daemon {
    pub fn new(ns: &str, pod: &str, pod_uid: &str) -> Daemon {
        Daemon {
            ns: ns.into(),
            pod: pod.into(),
            pod_uid: pod_uid.into(),
            next_ike: 1,
            next_child: 1,
            reqids: BTreeMap::new(),
            sas: BTreeMap::new(),
            conns: Vec::new(),
        }
    }

    /// The IKE SAs in the order strongSwan lists them (by unique id).
    pub fn listed(&self) -> Vec<&IkeSa> {
        let mut v: Vec<&IkeSa> = self.sas.values().collect();
        v.sort_by_key(|s| s.uid);
        v
    }

    fn reqid(&mut self, conn: &str, child: &str) -> u32 {
        let next = self.reqids.len() as u32 + 1;
        *self.reqids.entry(format!("{conn}/{child}")).or_insert(next)
    }
}

/// What the gateway offers a peer right now.
pub struct Reach<'a> {
    pub fip: Option<&'a str>,
    pub service_cidr: Option<&'a str>,
    /// The PSK content, or why there is none.
    pub psk: Result<Vec<u8>, String>,
}

/// The `Established` condition of a peer, and when to look again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub established: bool,
    pub reason: &'static str,
    pub message: String,
    pub wake: Option<Instant>,
}

impl Outcome {
    fn down(reason: &'static str, message: String) -> Outcome {
        Outcome {
            established: false,
            reason,
            message,
            wake: None,
        }
    }
}

/// The simulated clients.
#[derive(Debug, Default)]
pub struct Clients {
    configs: BTreeMap<ClientKey, ClientConfig>,
    /// Since when everything a peer needs has held (its retry timer runs from there).
    ready_since: BTreeMap<String, Instant>,
    /// Peers the gateway initiates to in this pass (`swanctl --initiate`): no retry
    /// timer, and a client that never re-initiates still answers.
    pub initiating: std::collections::BTreeSet<String>,
    /// The last outcome per peer key: why an initiation failed.
    pub last: BTreeMap<String, Outcome>,
}

fn random_hex(n: usize) -> String {
    let mut s = String::new();
    while s.len() < n {
        s.push_str(&uuid::Uuid::new_v4().simple().to_string());
    }
    s.truncate(n);
    s
}

/// strongSwan's own SPIs for ESP start with `c`.
fn esp_spi() -> String {
    format!("c{}", random_hex(7))
}

/// Seconds of a duration like `24h`, `30m`, `3600s` or `3600`.
pub fn parse_duration(s: Option<&str>, default_s: u64) -> u64 {
    let Some(s) = s.map(str::trim).filter(|s| !s.is_empty()) else {
        return default_s;
    };
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let Ok(n) = num.parse::<u64>() else {
        return default_s;
    };
    match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86400,
        _ => default_s,
    }
}

/// The first of `ours` (the gateway's, in its order of preference) the client also has.
fn intersect(ours: &[String], theirs: &[String]) -> Option<String> {
    ours.iter()
        .find(|o| theirs.iter().any(|t| t.eq_ignore_ascii_case(o)))
        .map(|o| o.to_lowercase())
}

fn same_net(a: &str, b: &str) -> bool {
    match (cidr::parse(a), cidr::parse(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a.eq_ignore_ascii_case(b),
    }
}

fn overlay(mut c: ClientConfig, explicit: Option<&ClientSettings>) -> ClientConfig {
    let Some(e) = explicit else { return c };
    if let Some(v) = &e.floating_ip {
        c.floating_ip = v.clone();
    }
    if let Some(v) = &e.psk {
        c.psk = v.as_bytes().to_vec();
    }
    if let Some(v) = e.ike_version {
        c.ike_version = v;
    }
    if let Some(v) = &e.ike_proposals {
        c.ike_proposals = v.clone();
    }
    if let Some(v) = &e.esp_proposals {
        c.esp_proposals = v.clone();
    }
    if let Some(v) = &e.local_subnets {
        c.local_subnets = v.clone();
    }
    if let Some(v) = &e.remote_subnets {
        c.remote_subnets = v.clone();
    }
    c
}

impl Clients {
    /// Every client configured so far.
    pub fn info(&self) -> Vec<ClientInfo> {
        self.configs
            .iter()
            .map(|((ns, address, id), c)| ClientInfo {
                namespace: ns.clone(),
                address: address.clone(),
                id: id.clone(),
                floating_ip: c.floating_ip.clone(),
                ike_version: c.ike_version,
                ike_proposals: c.ike_proposals.clone(),
                esp_proposals: c.esp_proposals.clone(),
                local_subnets: c.local_subnets.clone(),
                remote_subnets: c.remote_subnets.clone(),
            })
            .collect()
    }

    /// Forget retry timers of peers not seen in this pass.
    pub fn retain_peers(&mut self, seen: &std::collections::BTreeSet<String>) {
        self.ready_since.retain(|k, _| seen.contains(k));
    }

    /// Advance one peer: bring its IKE SA up, keep it, or tear it down.
    #[allow(clippy::too_many_arguments)]
    pub fn step(
        &mut self,
        daemon: Option<&mut Daemon>,
        gw: &Gateway,
        peer: &Peer,
        reach: Reach<'_>,
        explicit: Option<&ClientSettings>,
        faults: &GatewayFaults,
        retry: Duration,
        now: Instant,
    ) -> Outcome {
        let out = self.advance(daemon, gw, peer, reach, explicit, faults, retry, now);
        self.last.insert(peer.key.clone(), out.clone());
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn advance(
        &mut self,
        daemon: Option<&mut Daemon>,
        gw: &Gateway,
        peer: &Peer,
        reach: Reach<'_>,
        explicit: Option<&ClientSettings>,
        faults: &GatewayFaults,
        retry: Duration,
        now: Instant,
    ) -> Outcome {
        let key = peer.key.clone();
        let initiated = self.initiating.contains(&key) && !faults.client_refuses_initiation;
        let Some(daemon) = daemon else {
            self.ready_since.remove(&key);
            return Outcome::down(
                "GatewayNotRunning",
                format!("the pod of gateway {} is not running", gw.name),
            );
        };
        let up = daemon.sas.contains_key(&key);
        let mut down = |reason: &'static str, message: String| {
            self.ready_since.remove(&key);
            daemon.sas.remove(&key);
            Outcome::down(reason, message)
        };
        let Some(fip) = reach.fip else {
            return down(
                "FIPNotAttached",
                format!("gateway {} has no floating IP attached", gw.name),
            );
        };
        let psk = match reach.psk {
            Ok(p) => p,
            Err(why) => return down("SecretNotFound", why),
        };
        let ckey: ClientKey = (peer.ns.clone(), peer.address.clone(), peer.id.clone());
        let candidate = ClientConfig {
            floating_ip: fip.to_string(),
            psk: psk.clone(),
            ike_version: gw.ike_version,
            ike_proposals: gw.ike_proposals.clone(),
            esp_proposals: peer.esp_proposals.clone(),
            local_subnets: peer.remote_subnets.clone(),
            remote_subnets: reach
                .service_cidr
                .map(|c| vec![c.to_string()])
                .unwrap_or_default(),
        };
        // The client stands for the customer's firewall: it is configured like the first
        // gateway seen for it (in a scenario, the existing one, at load), so a new gateway
        // with another FIP, PSK or proposal is caught rather than learned. A client seen
        // for the first time was already connected: no retry delay.
        let first_sight = !self.configs.contains_key(&ckey);
        let base = self
            .configs
            .entry(ckey.clone())
            .or_insert(candidate)
            .clone();
        let client = overlay(base.clone(), explicit);
        let who = format!("'{}' @ {}", peer.id, peer.address);
        if client.floating_ip != fip {
            return down(
                "WaitingForPeer",
                format!(
                    "no IKE_SA_INIT from {who}: the client dials {}, the gateway is at {fip}",
                    client.floating_ip
                ),
            );
        }
        if faults.client_peer_never_returns && !up && !initiated {
            return down(
                "WaitingForPeer",
                format!("no IKE_SA_INIT from {who}: the client peer does not re-initiate"),
            );
        }
        if client.ike_version != gw.ike_version {
            return down(
                "NoProposalChosen",
                format!(
                    "{who} speaks IKEv{}, the gateway IKEv{}",
                    client.ike_version, gw.ike_version
                ),
            );
        }
        let Some(ike) = intersect(&gw.ike_proposals, &client.ike_proposals) else {
            return down(
                "NoProposalChosen",
                format!(
                    "IKE proposals do not intersect: gateway [{}], {who} [{}]",
                    gw.ike_proposals.join(", "),
                    client.ike_proposals.join(", ")
                ),
            );
        };
        let Some(esp) = intersect(&peer.esp_proposals, &client.esp_proposals) else {
            return down(
                "NoProposalChosen",
                format!(
                    "ESP proposals do not intersect: gateway [{}], {who} [{}]",
                    peer.esp_proposals.join(", "),
                    client.esp_proposals.join(", ")
                ),
            );
        };
        if faults.psk_mismatch || client.psk != psk {
            return down(
                "AuthenticationFailed",
                format!("IKE_AUTH with {who} failed: pre-shared key mismatch"),
            );
        }
        if !up {
            let due = if first_sight || initiated {
                now
            } else {
                *self.ready_since.entry(key.clone()).or_insert(now) + retry
            };
            if now < due {
                let message = format!(
                    "gateway reachable; waiting for {who} to re-initiate (retry delay {}ms)",
                    retry.as_millis()
                );
                return Outcome {
                    established: false,
                    reason: "WaitingForPeer",
                    message,
                    wake: Some(due),
                };
            }
            self.ready_since.remove(&key);
            self.configs.entry(ckey).or_insert(base);
            let uid = daemon.next_ike;
            daemon.next_ike += 1;
            daemon.sas.insert(
                key.clone(),
                IkeSa {
                    conn: peer.conn.clone(),
                    uid,
                    version: gw.ike_version,
                    local_id: fip.to_string(),
                    local_host: fip.to_string(),
                    remote_id: peer.id.clone(),
                    remote_host: peer.address.clone(),
                    spi_i: random_hex(16),
                    spi_r: random_hex(16),
                    proposal: ike,
                    established: now,
                    life_s: parse_duration(gw.ike_lifetime.as_deref(), 86400),
                    children: Vec::new(),
                    gateway_initiated: initiated,
                },
            );
        }
        // CHILD SAs: one per remote subnet the client has too, while the serviceCIDR is
        // the network the client routes into the tunnel.
        let local_ts = reach
            .service_cidr
            .filter(|c| client.remote_subnets.iter().any(|r| same_net(r, c)))
            .map(|c| faults.local_ts_override.as_deref().unwrap_or(c));
        let wanted: Vec<(usize, &String)> = match local_ts {
            Some(_) => peer
                .remote_subnets
                .iter()
                .enumerate()
                .filter(|(_, s)| client.local_subnets.iter().any(|l| same_net(l, s)))
                .collect(),
            None => Vec::new(),
        };
        let several = peer.remote_subnets.len() > 1;
        let mut children =
            std::mem::take(&mut daemon.sas.get_mut(&key).expect("SA is up").children);
        children.retain(|c| {
            wanted.iter().any(|(_, s)| **s == c.remote_ts) && Some(c.local_ts.as_str()) == local_ts
        });
        for (i, subnet) in &wanted {
            if children.iter().any(|c| c.remote_ts == **subnet) {
                continue;
            }
            let name = if several {
                format!("{}-{}", peer.conn, i + 1)
            } else {
                peer.conn.clone()
            };
            let reqid = daemon.reqid(&peer.conn, subnet);
            let uid = daemon.next_child;
            daemon.next_child += 1;
            children.push(ChildSa {
                name,
                uid,
                reqid,
                spi_in: esp_spi(),
                spi_out: esp_spi(),
                proposal: esp.clone(),
                installed: now,
                life_s: parse_duration(peer.esp_lifetime.as_deref(), 3600),
                local_ts: local_ts.unwrap_or_default().to_string(),
                remote_ts: (*subnet).clone(),
            });
        }
        children.sort_by_key(|c| peer.remote_subnets.iter().position(|s| *s == c.remote_ts));
        let n = children.len();
        daemon.sas.get_mut(&key).expect("SA is up").children = children;
        if n == 0 {
            return Outcome::down(
                "TSUnacceptable",
                format!(
                    "IKE_SA with {who} ESTABLISHED but no CHILD_SA: traffic selectors {} === {} unacceptable to the peer",
                    reach.service_cidr.unwrap_or("(none)"),
                    peer.remote_subnets.join(" ")
                ),
            );
        }
        Outcome {
            established: true,
            reason: "Established",
            message: format!(
                "IKE_SA {} ESTABLISHED with {who}, {n}/{} CHILD_SAs INSTALLED",
                peer.conn,
                peer.remote_subnets.len()
            ),
            wake: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration(Some("24h"), 1), 86400);
        assert_eq!(parse_duration(Some("30m"), 1), 1800);
        assert_eq!(parse_duration(Some("90"), 1), 90);
        assert_eq!(parse_duration(Some("soon"), 7), 7);
        assert_eq!(parse_duration(None, 7), 7);
    }

    #[test]
    fn intersection_is_case_insensitive_in_gateway_order() {
        let ours = vec![
            "aes256-sha256-modp2048".to_string(),
            "AES128-sha256-modp2048".to_string(),
        ];
        assert_eq!(
            intersect(&ours, &["aes128-SHA256-modp2048".into()]).as_deref(),
            Some("aes128-sha256-modp2048")
        );
        assert_eq!(intersect(&ours, &["3des-md5-modp1024".into()]), None);
    }
}
