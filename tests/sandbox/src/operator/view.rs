//! One view of both gateway kinds (DESIGN.md §2: "Deleting either gateway kind …", the
//! same rules for `ipsec.bnerd.net` and `vpn.bnerd.net`) and of the client peers they
//! terminate: an `IPsecGateway`'s `spec.tunnels[]`, a `VPNGateway`'s `VPNPeer`s. The
//! shapes come from `vpnmig::core::model`, so a corrected schema changes this file only.

use serde_json::Value;
use vpnmig::core::model::{
    Authorization, Exposure, GatewayStatus, IPsecGatewaySpec, PeerStatus, ReverseExposure,
    SecretKeyRef, VPNGatewaySpec, VPNPeerSpec,
};

use super::api::OperatorApi;
use crate::resources::ResourceType;

/// Which gateway kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GatewayKind {
    /// `ipsec.bnerd.net/v1alpha1` `IPsecGateway` (old, frozen).
    IPsec,
    /// `vpn.bnerd.net/v1alpha1` `VPNGateway` (new).
    Vpn,
}

impl GatewayKind {
    pub const ALL: [GatewayKind; 2] = [GatewayKind::IPsec, GatewayKind::Vpn];

    pub fn kind(self) -> &'static str {
        match self {
            GatewayKind::IPsec => "IPsecGateway",
            GatewayKind::Vpn => "VPNGateway",
        }
    }

    pub fn group(self) -> &'static str {
        match self {
            GatewayKind::IPsec => "ipsec.bnerd.net",
            GatewayKind::Vpn => "vpn.bnerd.net",
        }
    }

    pub fn plural(self) -> &'static str {
        match self {
            GatewayKind::IPsec => "ipsecgateways",
            GatewayKind::Vpn => "vpngateways",
        }
    }

    pub fn api_version(self) -> String {
        format!("{}/v1alpha1", self.group())
    }

    /// The finalizer the operator puts on this kind.
    pub fn finalizer(self) -> &'static str {
        match self {
            GatewayKind::IPsec => vpnmig::core::model::OLD_FINALIZER,
            GatewayKind::Vpn => vpnmig::core::model::NEW_FINALIZER,
        }
    }

    /// The kind prefix of a fault key in the settings (`ipsecgateway/ns/name`).
    pub fn settings_prefix(self) -> &'static str {
        match self {
            GatewayKind::IPsec => "ipsecgateway",
            GatewayKind::Vpn => "vpngateway",
        }
    }

    pub fn from_settings_prefix(s: &str) -> Option<GatewayKind> {
        GatewayKind::ALL
            .into_iter()
            .find(|k| k.settings_prefix().eq_ignore_ascii_case(s))
    }

    /// The served resource type, if its CRD exists.
    pub fn resource(self, store: &dyn OperatorApi) -> Option<ResourceType> {
        store.resource(self.group(), "v1alpha1", self.plural())
    }
}

/// A gateway of either kind, as the operator reconciles it.
#[derive(Clone, Debug)]
pub struct Gateway {
    pub kind: GatewayKind,
    pub ns: String,
    pub name: String,
    pub uid: String,
    pub generation: i64,
    pub created: String,
    pub deleting: bool,
    pub finalizers: Vec<String>,
    pub pinned_fip: Option<String>,
    /// `VPNGateway.spec.serviceCIDR` (an IPsecGateway has none).
    pub pinned_cidr: Option<String>,
    pub ike_version: u8,
    pub ike_proposals: Vec<String>,
    pub ike_lifetime: Option<String>,
    pub exposures: Vec<Exposure>,
    pub reverse_exposures: Vec<ReverseExposure>,
    pub status: GatewayStatus,
    /// The client peers: tunnels of an IPsecGateway (VPNPeers are added by the caller).
    pub peers: Vec<Peer>,
}

impl Gateway {
    /// `IPsecGateway tenant-acme/acme`.
    pub fn display(&self) -> String {
        format!("{} {}/{}", self.kind.kind(), self.ns, self.name)
    }

    /// Parse a stored object; `Err` names what does not fit the model.
    pub fn parse(kind: GatewayKind, obj: &Value) -> Result<Gateway, String> {
        let meta = |f: &str| {
            obj.pointer(&format!("/metadata/{f}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        let status: GatewayStatus = obj
            .get("status")
            .cloned()
            .and_then(|s| serde_json::from_value(s).ok())
            .unwrap_or_default();
        let mut gw = Gateway {
            kind,
            ns: meta("namespace"),
            name: meta("name"),
            uid: meta("uid"),
            generation: obj
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(1),
            created: meta("creationTimestamp"),
            deleting: obj
                .pointer("/metadata/deletionTimestamp")
                .is_some_and(|v| !v.is_null()),
            finalizers: obj
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|f| f.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            pinned_fip: None,
            pinned_cidr: None,
            ike_version: 2,
            ike_proposals: Vec::new(),
            ike_lifetime: None,
            exposures: Vec::new(),
            reverse_exposures: Vec::new(),
            status,
            peers: Vec::new(),
        };
        match kind {
            GatewayKind::IPsec => {
                let spec: IPsecGatewaySpec = serde_json::from_value(spec)
                    .map_err(|e| format!("{}: spec: {e}", gw.display()))?;
                gw.pinned_fip = spec.endpoint.pinned_fip().map(str::to_string);
                gw.ike_version = spec.ike.version.unwrap_or(2);
                gw.ike_proposals = spec.ike.proposals;
                gw.ike_lifetime = spec.ike.lifetime;
                gw.exposures = spec.exposures;
                gw.reverse_exposures = spec.reverse_exposures;
                gw.peers = spec
                    .tunnels
                    .into_iter()
                    .map(|t| Peer {
                        key: format!("{}/tunnel/{}", gw.uid, t.name),
                        conn: t.name,
                        ns: gw.ns.clone(),
                        id: t
                            .peer
                            .id
                            .clone()
                            .filter(|i| !i.is_empty())
                            .unwrap_or_else(|| t.peer.address.clone()),
                        address: t.peer.address,
                        remote_subnets: t.remote_subnets,
                        psk_ref: Some(spec.auth.psk_secret_ref.clone()),
                        esp_proposals: t
                            .esp
                            .as_ref()
                            .map(|e| e.proposals.clone())
                            .unwrap_or_else(|| vec!["default".into()]),
                        esp_lifetime: t.esp.and_then(|e| e.lifetime),
                        dpd_delay: t.dpd.and_then(|d| d.delay),
                        vpn_peer: None,
                    })
                    .collect();
            }
            GatewayKind::Vpn => {
                let spec: VPNGatewaySpec = serde_json::from_value(spec)
                    .map_err(|e| format!("{}: spec: {e}", gw.display()))?;
                gw.pinned_fip = spec.endpoint.pinned_fip().map(str::to_string);
                gw.pinned_cidr = spec.service_cidr.filter(|c| !c.is_empty());
                if let Some(ipsec) = spec.ipsec {
                    gw.ike_version = ipsec.ike.version.unwrap_or(2);
                    gw.ike_proposals = ipsec.ike.proposals;
                    gw.ike_lifetime = ipsec.ike.lifetime;
                }
                gw.exposures = spec.exposures;
                gw.reverse_exposures = spec.reverse_exposures;
            }
        }
        if gw.ike_proposals.is_empty() {
            gw.ike_proposals = vec!["default".into()];
        }
        Ok(gw)
    }
}

/// The VPNPeer object behind a client peer.
#[derive(Clone, Debug)]
pub struct VpnPeerObject {
    pub name: String,
    pub uid: String,
    pub generation: i64,
    pub gateway: String,
    pub authorization: Option<Authorization>,
    pub status: PeerStatus,
}

/// One client peer of a gateway: a tunnel of an IPsecGateway or a VPNPeer.
#[derive(Clone, Debug)]
pub struct Peer {
    /// Stable key of this peer's IKE SA: `<gateway uid>/tunnel/<name>` or `vpnpeer/<uid>`.
    pub key: String,
    /// The strongSwan connection name: the tunnel or VPNPeer name.
    pub conn: String,
    pub ns: String,
    pub address: String,
    /// IKE identity (the address when none is set).
    pub id: String,
    pub remote_subnets: Vec<String>,
    pub psk_ref: Option<SecretKeyRef>,
    pub esp_proposals: Vec<String>,
    pub esp_lifetime: Option<String>,
    /// `dpd.delay` of the tunnel or VPNPeer (the real data plane's `dpd_delay`).
    pub dpd_delay: Option<String>,
    pub vpn_peer: Option<VpnPeerObject>,
}

impl Peer {
    /// Parse a stored VPNPeer.
    pub fn parse_vpn_peer(obj: &Value) -> Result<Peer, String> {
        let meta = |f: &str| {
            obj.pointer(&format!("/metadata/{f}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let (ns, name, uid) = (meta("namespace"), meta("name"), meta("uid"));
        let spec: VPNPeerSpec =
            serde_json::from_value(obj.get("spec").cloned().unwrap_or(Value::Null))
                .map_err(|e| format!("VPNPeer {ns}/{name}: spec: {e}"))?;
        let status: PeerStatus = obj
            .get("status")
            .cloned()
            .and_then(|s| serde_json::from_value(s).ok())
            .unwrap_or_default();
        let ipsec = spec.ipsec.unwrap_or_default();
        Ok(Peer {
            key: format!("vpnpeer/{uid}"),
            conn: name.clone(),
            ns,
            id: ipsec
                .peer
                .id
                .clone()
                .filter(|i| !i.is_empty())
                .unwrap_or_else(|| ipsec.peer.address.clone()),
            address: ipsec.peer.address,
            remote_subnets: ipsec.remote_subnets,
            psk_ref: Some(ipsec.psk_secret_ref).filter(|r| !r.name.is_empty()),
            esp_proposals: ipsec
                .esp
                .as_ref()
                .map(|e| e.proposals.clone())
                .unwrap_or_else(|| vec!["default".into()]),
            esp_lifetime: ipsec.esp.and_then(|e| e.lifetime),
            dpd_delay: ipsec.dpd.and_then(|d| d.delay),
            vpn_peer: Some(VpnPeerObject {
                name,
                uid,
                generation: obj
                    .pointer("/metadata/generation")
                    .and_then(Value::as_i64)
                    .unwrap_or(1),
                gateway: spec.gateway_ref.name,
                authorization: spec.authorization,
                status,
            }),
        })
    }
}
