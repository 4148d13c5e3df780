//! The operator's API as vpnmig assumes it (DESIGN.md §2, runbook "What must stay pinned").
//!
//! The operator's real CRDs are not public, so these types *are* vpnmig's contract: every
//! other module reads the shapes from here, the CRDs in `fixtures/crds/` are generated
//! from here (see [`crds`]), and `docs/model.md` writes the assumptions down. A corrected
//! schema is a change to this one file.
//!
//! IP addresses, CIDRs and durations are kept as the strings the user wrote: the checks
//! (`core::checks`) validate them and report the value seen, instead of the parser
//! refusing the whole object.
//!
//! Layer 0 (model, addresses, paths, parsers, YAML): imports nothing above it; see docs/architecture.md.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::core::allowlist;

/// Deserialize an absent or `null` list as empty, as the API server treats `null`.
fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// API group of the frozen, old kind.
pub const OLD_GROUP: &str = "ipsec.bnerd.net";
/// API group of the new kinds, served since operator v0.3.0.
pub const NEW_GROUP: &str = "vpn.bnerd.net";
/// Version served by both groups.
pub const VERSION: &str = "v1alpha1";
/// Finalizer the operator puts on every gateway (runbook step 2: "full finalizer unwind").
pub const OLD_FINALIZER: &str = "ipsec.bnerd.net/cleanup";
/// Finalizer on the new gateway kind.
pub const NEW_FINALIZER: &str = "vpn.bnerd.net/cleanup";
/// Metadata fields removed from the saved old manifest so that `kubectl apply -f`
/// re-creates the object (runbook "Rollback"; DESIGN.md §4.3).
pub const CLEANED_METADATA: &[&str] = &[
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
    "finalizers",
];

// ---------------------------------------------------------------------------------------
// Shapes shared by both groups ("the ExposureSpec/TargetSpec shapes are identical").
// ---------------------------------------------------------------------------------------

/// Where the gateway is reachable: the OpenStack floating IP and its pool.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct Endpoint {
    /// Floating IP. Set = pinned: the operator associates exactly this address and never
    /// releases it to the pool. Empty or absent = the operator allocates one from the pool
    /// and releases it again when the gateway is deleted.
    #[serde(
        rename = "floatingIP",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub floating_ip: Option<String>,
    /// External network (floating IP pool), e.g. `public`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
}

impl Endpoint {
    /// The pinned floating IP: `Some` only when set to a non-empty string.
    pub fn pinned_fip(&self) -> Option<&str> {
        self.floating_ip.as_deref().filter(|s| !s.is_empty())
    }
}

/// A key in a Secret in the object's namespace. The value is never read into a plan.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct SecretKeyRef {
    pub name: String,
    pub key: String,
}

/// The IKE peer the client runs: its address (IP or DNS name) and IKE identity.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct PeerEndpoint {
    pub address: String,
    /// IKE identity (FQDN, IP, e-mail or DN). Absent: strongSwan uses the address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// Dead peer detection. Durations are strings like `30s`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct Dpd {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<DpdAction>,
}

/// strongSwan's DPD actions.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DpdAction {
    Clear,
    Trap,
    Restart,
}

/// Transport protocol of an exposure.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum Protocol {
    #[serde(rename = "TCP")]
    Tcp,
    #[serde(rename = "UDP")]
    Udp,
}

/// An address and port (`TargetSpec`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct Target {
    pub address: String,
    pub port: u16,
}

/// A cluster service made reachable from the client side (`ExposureSpec`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct Exposure {
    pub name: String,
    /// Address inside the serviceCIDR the client dials. Absent: allocated by the operator
    /// and reported in `status.exposures[]`.
    #[serde(rename = "virtualIP", default, skip_serializing_if = "Option::is_none")]
    pub virtual_ip: Option<String>,
    pub target: Target,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
}

/// A client-side host made reachable from the cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ReverseExposure {
    pub name: String,
    pub target: Target,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
}

/// One allocated virtual IP, as the operator reports it in status.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ExposureStatus {
    pub name: String,
    #[serde(rename = "virtualIP", default, skip_serializing_if = "Option::is_none")]
    pub virtual_ip: Option<String>,
}

/// A status condition (Kubernetes API conventions: type/status/reason/message).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    /// `"True"`, `"False"` or `"Unknown"`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// An object as errors name it, the way kubectl takes it on a command line:
/// `ipsecgateway/acme -n tenant-acme` (the kind in lower case, issue 13 item 5), so the
/// name can be pasted into `kubectl get` as it is.
pub fn object_ref(kind: &str, name: &str, namespace: &str) -> String {
    format!("{}/{name} -n {namespace}", kind.to_ascii_lowercase())
}

/// Look a condition up by type.
pub fn condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Status shared by both gateway kinds.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewayStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The floating IP currently associated (pinned or allocated).
    #[serde(
        rename = "floatingIP",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub floating_ip: Option<String>,
    /// The /24 the operator allocated (or was pinned to) for exposure virtual IPs.
    #[serde(
        rename = "serviceCIDR",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub service_cidr: Option<String>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub exposures: Vec<ExposureStatus>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<Condition>,
}

// ---------------------------------------------------------------------------------------
// ipsec.bnerd.net/v1alpha1 IPsecGateway — frozen; vpnmig only reads it.
// ---------------------------------------------------------------------------------------

/// IKE (phase 1) settings of the old kind. Its proposals are plain strings in the frozen
/// CRD: the old reconciler enforced the allowlist, so objects with weak proposals exist.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct IkeSpec {
    /// IKE major version, 1 or 2. Absent: the operator's default (2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u8>,
    /// strongSwan proposals, e.g. `aes256-sha256-modp2048`.
    pub proposals: Vec<String>,
    /// IKE SA lifetime, e.g. `24h`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime: Option<String>,
}

/// ESP (CHILD SA) settings of the old kind.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct EspSpec {
    pub proposals: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime: Option<String>,
}

/// Gateway-wide authentication of the old kind.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewayAuth {
    pub psk_secret_ref: SecretKeyRef,
}

/// One site-to-site tunnel of the old kind; becomes one VPNPeer.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Tunnel {
    pub name: String,
    pub peer: PeerEndpoint,
    /// Client-side networks: the remote traffic selectors, order kept.
    pub remote_subnets: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub esp: Option<EspSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpd: Option<Dpd>,
}

/// Spec of `ipsec.bnerd.net/v1alpha1` `IPsecGateway` (DESIGN.md §2).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "ipsec.bnerd.net",
    version = "v1alpha1",
    kind = "IPsecGateway",
    plural = "ipsecgateways",
    shortname = "ipsecgw",
    namespaced,
    derive = "PartialEq",
    derive = "Default",
    status = "GatewayStatus",
    printcolumn = r#"{"name":"FIP","type":"string","jsonPath":".status.floatingIP"}"#,
    printcolumn = r#"{"name":"Service CIDR","type":"string","jsonPath":".status.serviceCIDR"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct IPsecGatewaySpec {
    pub endpoint: Endpoint,
    pub auth: GatewayAuth,
    pub ike: IkeSpec,
    pub tunnels: Vec<Tunnel>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub exposures: Vec<Exposure>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub reverse_exposures: Vec<ReverseExposure>,
}

// ---------------------------------------------------------------------------------------
// vpn.bnerd.net/v1alpha1 VPNGateway + VPNPeer — what vpnmig writes.
// ---------------------------------------------------------------------------------------

/// IKE settings of the new kind; the CRD enforces the approved allowlist as an enum.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct GatewayIke {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u8>,
    #[schemars(schema_with = "allowlist::ike_schema")]
    pub proposals: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime: Option<String>,
}

/// ESP settings of the new kind; the CRD enforces the approved allowlist as an enum.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct PeerEsp {
    #[schemars(schema_with = "allowlist::esp_schema")]
    pub proposals: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime: Option<String>,
}

/// The protocol a VPNGateway speaks. vpnmig only writes `ipsec`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VpnProtocol {
    #[default]
    Ipsec,
    Wireguard,
}

/// `VPNGateway.spec.ipsec`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct GatewayIpsec {
    pub ike: GatewayIke,
}

/// Spec of `vpn.bnerd.net/v1alpha1` `VPNGateway` (DESIGN.md §2).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "vpn.bnerd.net",
    version = "v1alpha1",
    kind = "VPNGateway",
    plural = "vpngateways",
    shortname = "vpngw",
    namespaced,
    derive = "PartialEq",
    derive = "Default",
    status = "GatewayStatus",
    printcolumn = r#"{"name":"Protocol","type":"string","jsonPath":".spec.protocol"}"#,
    printcolumn = r#"{"name":"FIP","type":"string","jsonPath":".status.floatingIP"}"#,
    printcolumn = r#"{"name":"Service CIDR","type":"string","jsonPath":".status.serviceCIDR"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct VPNGatewaySpec {
    pub protocol: VpnProtocol,
    pub endpoint: Endpoint,
    /// Pinned /24 for exposure virtual IPs. Absent: the operator takes the next free /24.
    #[serde(
        rename = "serviceCIDR",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub service_cidr: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipsec: Option<GatewayIpsec>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub exposures: Vec<Exposure>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub reverse_exposures: Vec<ReverseExposure>,
}

/// A reference to an object of a known kind in the same namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct LocalObjectRef {
    pub name: String,
}

/// `VPNPeer.spec.ipsec`: one client peer, with its own PSK reference.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PeerIpsec {
    pub peer: PeerEndpoint,
    pub remote_subnets: Vec<String>,
    pub psk_secret_ref: SecretKeyRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub esp: Option<PeerEsp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpd: Option<Dpd>,
}

/// What a peer may reach once a gateway has several peers (default-deny).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Authorization {
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub exposures: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub reverse_exposures: Vec<String>,
}

/// Status of a VPNPeer: conditions `Authorized`, `Established`, `Ready`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PeerStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<Condition>,
}

/// Spec of `vpn.bnerd.net/v1alpha1` `VPNPeer` (DESIGN.md §2).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "vpn.bnerd.net",
    version = "v1alpha1",
    kind = "VPNPeer",
    plural = "vpnpeers",
    namespaced,
    derive = "PartialEq",
    derive = "Default",
    status = "PeerStatus",
    printcolumn = r#"{"name":"Gateway","type":"string","jsonPath":".spec.gatewayRef.name"}"#,
    printcolumn = r#"{"name":"Peer","type":"string","jsonPath":".spec.ipsec.peer.address"}"#,
    printcolumn = r#"{"name":"Authorized","type":"string","jsonPath":".status.conditions[?(@.type==\"Authorized\")].status"}"#,
    printcolumn = r#"{"name":"Established","type":"string","jsonPath":".status.conditions[?(@.type==\"Established\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct VPNPeerSpec {
    pub gateway_ref: LocalObjectRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipsec: Option<PeerIpsec>,
    /// Absent on the only peer of a gateway = default-allow (reaches every exposure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<Authorization>,
}

/// The three CRDs vpnmig assumes, in the order `IPsecGateway`, `VPNGateway`, `VPNPeer`.
/// `fixtures/crds/` holds these rendered to YAML; a test keeps the two equal.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![IPsecGateway::crd(), VPNGateway::crd(), VPNPeer::crd()]
}
