//! The translation: one IPsecGateway (with its status) → one VPNGateway and one VPNPeer
//! per tunnel. Pure; the rules are DESIGN.md §3 and the runbook's "What must stay pinned".
//!
//! The translation is total: an old gateway that fails a check (unpinned FIP, no
//! serviceCIDR yet) still translates, so that the plan can be shown and marked blocked.
//! Whether each value arrived unchanged is proven separately by `core::report`, which
//! walks the verbatim source instead of these typed structs.
//!
//! Layer 1 (translation and fingerprints): imports only from layers 0 to 1; see docs/architecture.md.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde_json::Value;

use crate::core::model::{
    Authorization, GatewayIke, GatewayIpsec, IPsecGateway, LocalObjectRef, PeerEsp, PeerIpsec,
    VPNGateway, VPNGatewaySpec, VPNPeer, VPNPeerSpec, VpnProtocol,
};

/// Annotation vpnmig sets on every target: which object it was migrated from.
pub const MIGRATED_FROM: &str = "vpnmig.bnerd.net/migrated-from";

/// Annotations that are server- or client-tool state, never the user's: not carried.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Whether a label or annotation of the old gateway is a tool's ownership marker, and so
/// not carried: Helm, Argo CD or Flux would otherwise adopt, prune or overwrite the new
/// objects. Returns the reason; `None` means it is the user's and is carried.
pub fn not_carried(annotation: bool, key: &str) -> Option<&'static str> {
    match key {
        LAST_APPLIED if annotation => {
            Some("kubectl's record of the old object; kubectl apply writes a new one")
        }
        "meta.helm.sh/release-name" | "meta.helm.sh/release-namespace" if annotation => {
            Some("Helm's ownership of the old object: Helm would adopt or delete the new objects")
        }
        "argocd.argoproj.io/tracking-id" if annotation => Some(
            "Argo CD's tracking of the old object: Argo CD would prune the new objects as not in Git",
        ),
        "app.kubernetes.io/managed-by" if !annotation => {
            Some("names the tool managing the old object; vpnmig creates the new ones")
        }
        "argocd.argoproj.io/instance" if !annotation => Some(
            "Argo CD's tracking of the old object: Argo CD would prune the new objects as not in Git",
        ),
        k if !annotation
            && (k.starts_with("kustomize.toolkit.fluxcd.io/")
                || k.starts_with("helm.toolkit.fluxcd.io/")) =>
        {
            Some(
                "Flux's ownership of the old object: Flux would prune or overwrite the new objects",
            )
        }
        _ => None,
    }
}

/// Argo CD's label tracking: `app.kubernetes.io/instance` on an object an Argo CD field
/// manager wrote (issue 11 item 1). Alone the label is a common label of the user's and
/// is carried.
pub const ARGO_INSTANCE: &str = "Argo CD's label tracking of the old object (an Argo CD field manager wrote it): Argo CD would prune the new objects as not in Git";

/// Like [`not_carried`], knowing whether an Argo CD field manager wrote the object
/// (`argo`): then `app.kubernetes.io/instance` is its tracking label and not carried.
pub fn not_carried_by(argo: bool, annotation: bool, key: &str) -> Option<&'static str> {
    not_carried(annotation, key).or_else(|| {
        (argo && !annotation && key == "app.kubernetes.io/instance").then_some(ARGO_INSTANCE)
    })
}

/// Argo CD's field managers (here, not in `core::gitops`, which builds on this module's
/// list of what is not carried).
pub const ARGO_MANAGERS: &[&str] = &["argocd-controller", "argocd-application-controller"];

/// Whether an Argo CD field manager wrote the object whose managed fields are `managers`.
pub fn argo_wrote<'a>(mut managers: impl Iterator<Item = &'a str>) -> bool {
    managers.any(|m| ARGO_MANAGERS.contains(&m))
}

/// The objects a migration creates.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Targets {
    pub gateway: VPNGateway,
    /// One per `spec.tunnels[]` entry, in the same order.
    pub peers: Vec<VPNPeer>,
}

impl Targets {
    /// The VPNGateway then every VPNPeer, each as `(Kind/name, JSON value)`: the form the
    /// field report reads values back from and the renderers print.
    pub fn objects(&self) -> Vec<(String, Value)> {
        let gw = &self.gateway;
        std::iter::once(labelled("VPNGateway", &gw.metadata.name, gw))
            .chain(
                self.peers
                    .iter()
                    .map(|p| labelled("VPNPeer", &p.metadata.name, p)),
            )
            .collect()
    }
}

fn labelled<T: Serialize>(kind: &str, name: &Option<String>, obj: &T) -> (String, Value) {
    let v = serde_json::to_value(obj).expect("targets serialize to JSON");
    (format!("{kind}/{}", name.as_deref().unwrap_or_default()), v)
}

/// Name of the VPNPeer for tunnel `tunnel` (DESIGN.md §3): the gateway's own name for a
/// single-tunnel gateway, `<gateway>-<tunnel>` when it has several.
pub fn peer_name(gateway: &str, tunnel: &str, tunnel_count: usize) -> String {
    if tunnel_count == 1 {
        gateway.to_string()
    } else {
        format!("{gateway}-{tunnel}")
    }
}

/// Translate the old gateway. Values taken from status: `serviceCIDR`, each exposure's
/// allocated `virtualIP`, and the `floatingIP` when spec does not pin one (the checks
/// block that case; it is filled in here so the plan shows what would be needed).
pub fn translate(old: &IPsecGateway) -> Targets {
    translate_named(old, &BTreeMap::new())
}

/// [`translate`], with the VPNPeer of each tunnel named in `names` (tunnel name → peer
/// name; `plan --peer-name TUNNEL=NAME`) named so instead of by [`peer_name`]: the way
/// out of a name another gateway owns (issue 9 item 7).
pub fn translate_named(old: &IPsecGateway, names: &BTreeMap<String, String>) -> Targets {
    let name = old.metadata.name.clone().unwrap_or_default();
    let status = old.status.clone().unwrap_or_default();
    let spec = &old.spec;

    let mut endpoint = spec.endpoint.clone();
    if endpoint.pinned_fip().is_none() {
        endpoint.floating_ip = status.floating_ip.clone();
    }
    let exposures = spec
        .exposures
        .iter()
        .map(|e| {
            let allocated = status
                .exposures
                .iter()
                .find(|s| s.name == e.name)
                .and_then(|s| s.virtual_ip.clone());
            let mut e = e.clone();
            // The spec's spelling is kept when it is the address the operator allocated
            // (`FD00::A` and `fd00::a`): values stay byte-for-byte identical, and the
            // addresses are compared parsed (issue 9 item 4).
            e.virtual_ip = match (allocated, e.virtual_ip) {
                (Some(a), Some(s)) if crate::core::addr::same_addr(&a, &s) => Some(s),
                (a, s) => a.or(s),
            };
            e
        })
        .collect();

    let gateway = VPNGateway::new(
        &name,
        VPNGatewaySpec {
            protocol: VpnProtocol::Ipsec,
            endpoint,
            service_cidr: status.service_cidr.clone(),
            ipsec: Some(GatewayIpsec {
                ike: GatewayIke {
                    version: spec.ike.version,
                    proposals: spec.ike.proposals.clone(),
                    lifetime: spec.ike.lifetime.clone(),
                },
            }),
            exposures,
            reverse_exposures: spec.reverse_exposures.clone(),
        },
    );
    let gateway = VPNGateway {
        metadata: target_meta(old, &name),
        ..gateway
    };

    let several = spec.tunnels.len() > 1;
    let authorization = several.then(|| Authorization {
        exposures: spec.exposures.iter().map(|e| e.name.clone()).collect(),
        reverse_exposures: spec
            .reverse_exposures
            .iter()
            .map(|e| e.name.clone())
            .collect(),
    });
    let peers = spec
        .tunnels
        .iter()
        .map(|t| {
            let peer_name = names
                .get(&t.name)
                .cloned()
                .unwrap_or_else(|| peer_name(&name, &t.name, spec.tunnels.len()));
            let peer = VPNPeer::new(
                &peer_name,
                VPNPeerSpec {
                    gateway_ref: LocalObjectRef { name: name.clone() },
                    ipsec: Some(PeerIpsec {
                        peer: t.peer.clone(),
                        remote_subnets: t.remote_subnets.clone(),
                        psk_secret_ref: spec.auth.psk_secret_ref.clone(),
                        esp: t.esp.as_ref().map(|e| PeerEsp {
                            proposals: e.proposals.clone(),
                            lifetime: e.lifetime.clone(),
                        }),
                        dpd: t.dpd.clone(),
                    }),
                    authorization: authorization.clone(),
                },
            );
            VPNPeer {
                metadata: target_meta(old, &peer_name),
                ..peer
            }
        })
        .collect();

    Targets { gateway, peers }
}

/// Metadata of a target: name, the source's namespace, the user's labels and annotations,
/// and the [`MIGRATED_FROM`] annotation. Nothing the server set is carried.
fn target_meta(old: &IPsecGateway, name: &str) -> ObjectMeta {
    let source = old.metadata.name.as_deref().unwrap_or_default();
    let argo = argo_wrote(
        old.metadata
            .managed_fields
            .iter()
            .flatten()
            .filter_map(|m| m.manager.as_deref()),
    );
    let mut annotations: BTreeMap<String, String> = old
        .metadata
        .annotations
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| not_carried(true, k).is_none())
        .collect();
    let labels: BTreeMap<String, String> = old
        .metadata
        .labels
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| not_carried_by(argo, false, k).is_none())
        .collect();
    annotations.insert(
        MIGRATED_FROM.to_string(),
        format!("ipsecgateways.ipsec.bnerd.net/{source}"),
    );
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: old.metadata.namespace.clone(),
        labels: Some(labels).filter(|l| !l.is_empty()),
        annotations: Some(annotations),
        ..ObjectMeta::default()
    }
}
