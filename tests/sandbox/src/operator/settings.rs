//! Operator settings (the `operator:` section of `vpnmig-sandbox --operator-settings
//! FILE`, YAML): the timing of the operator's work (DESIGN.md §2 "finalizer unwind …
//! children first, then OpenStack cleanup"), its pools ("an unpinned gateway takes a new
//! FIP from the pool; an unpinned serviceCIDR takes the next free /24"), the simulated
//! client peers and the operator fault knobs of issue 3 item 5 (the API faults are the
//! HTTP layer's). Tests change them at run time through `Operator::settings()`; the
//! operator notices the change within one tick ([`super::TICK`]) and reconciles again.
//!
//! ```yaml
//! finalizerDelayMs: 200        # deletion: wait before removing the owned children
//! openstackDelayMs: 500        # deletion: wait after the children before the FIP is disassociated
//! peerRetryMs: 1000            # a client peer re-initiates this long after the gateway is reachable
//! clientDpdMs: 1000            # real data plane: the client sites' DPD interval
//! clientRetransmitMs: 500      # real data plane: the client sites' IKE retransmit timeout
//! fipPool: [198.51.100.200, 198.51.100.201]
//! serviceCidrPool: 10.250.0.0/16
//! gateways:                    # faults; key `ns/name` (both kinds) or `vpngateway/ns/name`
//!   tenant-acme/acme: {stuckFinalizer: true}
//!   vpngateway/tenant-acme/acme: {pskMismatch: true}
//!   vpngateway/tenant-acme/other: {localTsOverride: 10.250.0.0/16, clientRefusesInitiation: true}
//! clients:                     # optional: a client peer configured explicitly
//! - {namespace: tenant-acme, address: 203.0.113.10, psk: "other secret"}
//! ```
//!
//! Defaults make everything immediate (all delays 0 ms) so tests are fast.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::Ipv4Net;
use serde::{Deserialize, Serialize};

use super::view::GatewayKind;

/// Operator settings. Every field has a default; unknown fields are an error.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// Deletion unwind: milliseconds after `deletionTimestamp` before the owned children
    /// (Deployment, Pod) are deleted.
    pub finalizer_delay_ms: u64,
    /// Deletion unwind: milliseconds after the children are gone before the OpenStack part
    /// (FIP disassociation, release of an unpinned FIP) and the finalizer removal.
    pub openstack_delay_ms: u64,
    /// How long a client peer waits, once its gateway is reachable (FIP attached, pod
    /// running, PSK and proposals right), before it re-initiates and the IKE SA comes up.
    pub peer_retry_ms: u64,
    /// Real data plane (`--data-plane strongswan`): the client sites' DPD interval, in
    /// milliseconds (their charon notices a lost gateway after this and its retransmits).
    pub client_dpd_ms: u64,
    /// Real data plane: the client sites' IKE retransmission timeout in milliseconds
    /// (two tries per keying attempt; they retry for ever).
    pub client_retransmit_ms: u64,
    /// The OpenStack floating IP pool unpinned gateways allocate from, in order.
    pub fip_pool: Vec<String>,
    /// The range unpinned serviceCIDRs are taken from, one /24 at a time.
    pub service_cidr_pool: String,
    /// Fault knobs per gateway. Key `namespace/name` applies to both kinds of that name;
    /// `ipsecgateway/namespace/name` or `vpngateway/namespace/name` to one kind (and wins).
    pub gateways: BTreeMap<String, GatewayFaults>,
    /// Client peers configured explicitly. A client not listed here (or a field left out)
    /// is configured like the first gateway it established an IKE SA with.
    pub clients: Vec<ClientSettings>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            finalizer_delay_ms: 0,
            openstack_delay_ms: 0,
            peer_retry_ms: 0,
            client_dpd_ms: 1000,
            client_retransmit_ms: 500,
            fip_pool: (200..210).map(|i| format!("198.51.100.{i}")).collect(),
            service_cidr_pool: "10.250.0.0/16".into(),
            gateways: BTreeMap::new(),
            clients: Vec::new(),
        }
    }
}

/// Fault knobs of one gateway. All off by default.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct GatewayFaults {
    /// The deletion unwind never starts: the object keeps its finalizer and
    /// `deletionTimestamp` until this is cleared.
    pub stuck_finalizer: bool,
    /// Extra milliseconds before the unwind removes the children.
    pub slow_finalizer_ms: u64,
    /// The gateway's FIP is associated with a foreign port (not a gateway) until cleared:
    /// `FIPAttached=False`, reason `AlreadyAssociated`.
    pub fip_held_by_other_port: bool,
    /// The client peers of this gateway never re-initiate: an IKE SA that is up stays up,
    /// one that is down never comes back.
    pub client_peer_never_returns: bool,
    /// The client peers authenticate with a different PSK: IKE_AUTH fails, no IKE SA.
    pub psk_mismatch: bool,
    /// The operator does nothing at all for this gateway (no status, no children, no
    /// finalizer handling) until cleared.
    pub paused: bool,
    /// The CHILD SAs of this gateway's peers are negotiated with this local traffic
    /// selector instead of the serviceCIDR (a peer whose configuration changed the
    /// selector, e.g. `10.250.0.0/16` where the old gateway had `10.250.3.0/24`; issue 12).
    /// It must still cover the serviceCIDR for the tunnel to come up.
    pub local_ts_override: Option<String>,
    /// The client peers never answer the gateway's own initiation (a client behind NAT,
    /// or one that only accepts being the initiator): `swanctl --initiate` gives up after
    /// its retransmits; the client's own re-initiation still works.
    pub client_refuses_initiation: bool,
    /// Real data plane only: the client peers run without DPD: they come back after the
    /// old gateway's DELETE, but never notice a gateway that vanished without one. The
    /// imitation ignores it.
    pub client_dpd_off: bool,
    /// Real data plane only, read when a client site is first configured: the client sits
    /// behind NAT (its charon has a private address the internet translates to the peer
    /// address): NAT-T, and the gateway's own initiation finds no mapping. The imitation
    /// ignores it.
    pub client_behind_nat: bool,
}

/// A client peer configured explicitly. It is matched by namespace, address and (if
/// given) IKE id; every field left out is taken from the first gateway it talks to.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientSettings {
    pub namespace: String,
    /// The peer address (`tunnels[].peer.address` / `VPNPeer.spec.ipsec.peer.address`).
    pub address: String,
    /// The peer's IKE id; absent = any.
    #[serde(default)]
    pub id: Option<String>,
    /// The floating IP the client dials.
    #[serde(default, rename = "floatingIP")]
    pub floating_ip: Option<String>,
    /// The PSK the client authenticates with.
    #[serde(default)]
    pub psk: Option<String>,
    /// IKE major version the client speaks.
    #[serde(default)]
    pub ike_version: Option<u8>,
    #[serde(default)]
    pub ike_proposals: Option<Vec<String>>,
    #[serde(default)]
    pub esp_proposals: Option<Vec<String>>,
    /// The client's own networks (the gateway's remote subnets).
    #[serde(default)]
    pub local_subnets: Option<Vec<String>>,
    /// What the client routes into the tunnel (the gateway's serviceCIDR).
    #[serde(default)]
    pub remote_subnets: Option<Vec<String>>,
}

impl Settings {
    /// Parse a settings file. An empty file is the defaults.
    pub fn from_yaml(text: &str) -> Result<Settings, String> {
        let settings: Settings = if text
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
        {
            Settings::default()
        } else {
            serde_saphyr::from_str(text).map_err(|e| format!("operator settings: {e}"))?
        };
        settings.validate()?;
        Ok(settings)
    }

    /// Read and parse a settings file.
    pub fn from_file(path: &std::path::Path) -> Result<Settings, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("operator settings {}: {e}", path.display()))?;
        Settings::from_yaml(&text)
    }

    /// Check the values a YAML parser cannot: addresses, the pool CIDR, fault keys.
    pub fn validate(&self) -> Result<(), String> {
        for ip in &self.fip_pool {
            ip.parse::<IpAddr>()
                .map_err(|_| format!("operator settings: fipPool: `{ip}` is not an IP address"))?;
        }
        let pool: Ipv4Net = self.service_cidr_pool.parse().map_err(|_| {
            format!(
                "operator settings: serviceCidrPool: `{}` is not an IPv4 CIDR",
                self.service_cidr_pool
            )
        })?;
        if pool.prefix_len() > 24 {
            return Err(format!(
                "operator settings: serviceCidrPool: `{pool}` is smaller than a /24"
            ));
        }
        for key in self.gateways.keys() {
            let parts: Vec<&str> = key.split('/').collect();
            let ok = match parts.as_slice() {
                [ns, name] => !ns.is_empty() && !name.is_empty(),
                [kind, ns, name] => {
                    GatewayKind::from_settings_prefix(kind).is_some()
                        && !ns.is_empty()
                        && !name.is_empty()
                }
                _ => false,
            };
            if !ok {
                return Err(format!(
                    "operator settings: gateways: key `{key}` is not `namespace/name` or `ipsecgateway|vpngateway/namespace/name`"
                ));
            }
        }
        Ok(())
    }

    /// The faults in effect for a gateway: the kind-specific entry, else the `ns/name` one.
    pub fn faults(&self, kind: GatewayKind, ns: &str, name: &str) -> GatewayFaults {
        self.gateways
            .get(&format!("{}/{ns}/{name}", kind.settings_prefix()))
            .or_else(|| self.gateways.get(&format!("{ns}/{name}")))
            .cloned()
            .unwrap_or_default()
    }

    /// The fault entry under `key` (`ns/name` or `vpngateway/ns/name`), created if absent:
    /// `settings.write().unwrap().gateway_mut("tenant-acme/acme").paused = true`.
    pub fn gateway_mut(&mut self, key: &str) -> &mut GatewayFaults {
        self.gateways.entry(key.to_string()).or_default()
    }

    /// The explicit configuration of a client peer, if any.
    pub fn client(&self, ns: &str, address: &str, id: &str) -> Option<&ClientSettings> {
        self.clients.iter().find(|c| {
            c.namespace == ns && c.address == address && c.id.as_deref().is_none_or(|i| i == id)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example() {
        let s = Settings::from_yaml(
            "finalizerDelayMs: 200\nopenstackDelayMs: 500\npeerRetryMs: 1000\nfipPool: [198.51.100.200]\n\
             gateways:\n  tenant-acme/acme: {stuckFinalizer: true}\n  vpngateway/tenant-acme/acme: {pskMismatch: true}\n\
             clients:\n- {namespace: tenant-acme, address: 203.0.113.10, psk: x}\n",
        )
        .unwrap();
        assert_eq!(s.finalizer_delay_ms, 200);
        assert_eq!(s.service_cidr_pool, "10.250.0.0/16");
        assert!(
            s.faults(GatewayKind::IPsec, "tenant-acme", "acme")
                .stuck_finalizer
        );
        let new = s.faults(GatewayKind::Vpn, "tenant-acme", "acme");
        assert!(new.psk_mismatch && !new.stuck_finalizer);
        assert_eq!(
            s.client("tenant-acme", "203.0.113.10", "fw")
                .unwrap()
                .psk
                .as_deref(),
            Some("x")
        );
    }

    #[test]
    fn rejects_unknown_fields_and_bad_values() {
        assert!(Settings::from_yaml("finalizerDelay: 1\n").is_err());
        assert!(Settings::from_yaml("gateways: {a/b: {stuck: true}}\n").is_err());
        assert!(Settings::from_yaml("fipPool: [nope]\n").is_err());
        assert!(Settings::from_yaml("gateways: {acme: {}}\n").is_err());
        assert_eq!(
            Settings::from_yaml("# nothing\n").unwrap(),
            Settings::default()
        );
    }
}
