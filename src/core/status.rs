//! The fleet view behind `vpnmig status`: one row per gateway, old or new kind, with
//! what a team needs to schedule windows — migrated or not, floating IP pinned, tunnels
//! or peers, Ready, and the plan's blockers (the same checks as `vpnmig plan`). Pure.
//!
//! Layer 4 (journal, records and views): imports only from layers 0 to 4; see docs/architecture.md.

use serde::Serialize;

use crate::core::allowlist::Allowlist;
use crate::core::full_plan;
use crate::core::input::Source;
use crate::core::model::{IPsecGateway, VPNGateway, VPNPeer, condition};

/// Where a gateway is in its migration.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Migration {
    /// Only the IPsecGateway exists.
    No,
    /// Both kinds exist with this name: a cutover is under way (or was left half done).
    InProgress,
    /// Only the VPNGateway exists.
    Yes,
}

/// One gateway.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    pub namespace: String,
    pub name: String,
    /// `IPsecGateway` or `VPNGateway`.
    pub kind: &'static str,
    pub migrated: Migration,
    /// The floating IP (spec's when pinned, else status's).
    #[serde(rename = "floatingIP")]
    pub floating_ip: Option<String>,
    pub fip_pinned: bool,
    /// Whether its status holds the floating IP it shows (the operator associated it):
    /// a holder must be deleted while it pins it, never unpinned (a21r R12). Not in the
    /// JSON (docs/status-json.md).
    #[serde(skip)]
    pub fip_held: bool,
    /// The service CIDR (the new kind's spec, else status's): `-o wide`.
    #[serde(rename = "serviceCIDR")]
    pub service_cidr: Option<String>,
    /// Tunnels (old kind) or VPNPeers naming the gateway (new kind).
    pub tunnels: usize,
    /// The Ready condition's status, `Unknown` when absent, `Deleting` while the object is
    /// being deleted (its conditions are stale then).
    pub ready: String,
    /// Ids of the plan's failed blocker checks (old kind only; `None` for the new kind),
    /// and, added by `vpnmig status` for either kind, `psk-changed` / `psk-gone` /
    /// `psk-re-created` / `psk-moved` / `psk-unchecked` / `psk-unprotected` when the window's PSK Secret is not as its journal
    /// fingerprinted it (issue 21 item 1).
    pub blockers: Option<Vec<&'static str>>,
    /// Who manages the object besides vpnmig and the operator (`core::gitops::cell`:
    /// `argocd:application/acme`, `flux:kustomization/tenants`, `helm`, another
    /// applier's field manager; comma-separated); `None`: nobody (issue 11 item 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
    /// The next maintenance window (old kind, where a window is written anywhere:
    /// `core::maintenance`; issue 25 item 1); set by `vpnmig status`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_window: Option<crate::core::maintenance::NextDoc>,
}

/// [`Row::managed_by`] of an object with this metadata.
fn managed_by(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Option<String> {
    let obj = serde_json::json!({ "metadata": meta });
    Some(crate::core::gitops::cell(&crate::core::gitops::detect(
        &obj,
    )))
    .filter(|s| !s.is_empty())
}

fn ready(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    status: &crate::core::model::GatewayStatus,
) -> String {
    if meta.deletion_timestamp.is_some() {
        return "Deleting".into();
    }
    condition(&status.conditions, "Ready").map_or("Unknown".into(), |c| c.status.clone())
}

fn ns_name(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> (String, String) {
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

/// Rows for every gateway of both kinds, sorted by namespace, name and kind. `context`
/// names the cluster in the plans made for the blocker column.
pub fn rows(
    old: &[IPsecGateway],
    new: &[VPNGateway],
    peers: &[VPNPeer],
    allowlist: &Allowlist,
    context: &str,
) -> Vec<Row> {
    use std::collections::{BTreeMap, BTreeSet};
    // Indexes built once, so a row costs what its namespace holds, not the whole list
    // (status -A over 20,000 gateways was quadratic).
    let old_keys: BTreeSet<(String, String)> = old.iter().map(|g| ns_name(&g.metadata)).collect();
    let new_keys: BTreeSet<(String, String)> = new.iter().map(|g| ns_name(&g.metadata)).collect();
    // Live VPNPeers by (namespace, name): the gateway each references.
    let mut peer_owner: BTreeMap<(String, String), &str> = BTreeMap::new();
    // How many VPNPeers reference each (namespace, gateway).
    let mut peer_count: BTreeMap<(String, String), usize> = BTreeMap::new();
    for p in peers {
        let ns = p.metadata.namespace.clone().unwrap_or_default();
        let gw = p.spec.gateway_ref.name.as_str();
        if let Some(n) = &p.metadata.name {
            peer_owner.insert((ns.clone(), n.clone()), gw);
        }
        *peer_count.entry((ns, gw.to_string())).or_default() += 1;
    }
    // The gateways of each namespace, for the VPNPeer name checks.
    let mut by_namespace: BTreeMap<String, Vec<crate::core::live::OtherGateway>> = BTreeMap::new();
    for o in old {
        let g = other_gateway(o);
        by_namespace.entry(g.namespace.clone()).or_default().push(g);
    }
    // Each namespace's future VPNPeer names, indexed once: a row looks up its own names
    // instead of comparing with every gateway of its namespace.
    let peer_names: BTreeMap<&str, crate::core::live::PeerNames> = by_namespace
        .iter()
        .map(|(ns, gws)| (ns.as_str(), crate::core::live::PeerNames::new(gws)))
        .collect();
    let old_row = |g: &IPsecGateway| -> Row {
        let (namespace, name) = ns_name(&g.metadata);
        let both = new_keys.contains(&(namespace.clone(), name.clone()));
        let status = g.status.clone().unwrap_or_default();
        let plan = full_plan::build(&Source::listed(g.clone(), context), allowlist);
        // The namespace's other gateways: a future VPNPeer name another one owns (or a
        // live peer of another gateway holds) blocks this one (issue 9 item 7).
        let tunnels: Vec<String> = g.spec.tunnels.iter().map(|t| t.name.clone()).collect();
        let collisions = match peer_names.get(namespace.as_str()) {
            Some(index) => index.checks(&plan, &tunnels),
            None => crate::core::live::peer_name_checks(&plan, &tunnels, &Ok(Vec::new())),
        };
        let taken = plan.targets.peers.iter().any(|p| {
            p.metadata.name.as_ref().is_some_and(|n| {
                peer_owner
                    .get(&(namespace.clone(), n.clone()))
                    .is_some_and(|gw| *gw != name)
            })
        });
        Row {
            floating_ip: g
                .spec
                .endpoint
                .pinned_fip()
                .map(str::to_string)
                .or(status.floating_ip.clone()),
            fip_pinned: g.spec.endpoint.pinned_fip().is_some(),
            fip_held: held(g.spec.endpoint.pinned_fip(), status.floating_ip.as_deref()),
            service_cidr: status.service_cidr.clone(),
            tunnels: g.spec.tunnels.len(),
            ready: ready(&g.metadata, &status),
            blockers: Some(
                plan.checks
                    .iter()
                    .chain(collisions.iter())
                    .filter(|c| c.blocks())
                    .map(|c| c.id)
                    .chain(taken.then_some("targets-free"))
                    .collect(),
            ),
            managed_by: managed_by(&g.metadata),
            kind: "IPsecGateway",
            migrated: if both {
                Migration::InProgress
            } else {
                Migration::No
            },
            namespace,
            name,
            next_window: None,
        }
    };
    // Each row plans its gateway (the translation, the field report, the journal's size):
    // the work of a fleet, spread over the machine's cores; the rows are sorted below.
    let mut out: Vec<Row> = parallel_map(old, old_row);
    for g in new {
        let (namespace, name) = ns_name(&g.metadata);
        let both = old_keys.contains(&(namespace.clone(), name.clone()));
        let status = g.status.clone().unwrap_or_default();
        out.push(Row {
            floating_ip: g
                .spec
                .endpoint
                .pinned_fip()
                .map(str::to_string)
                .or(status.floating_ip.clone()),
            fip_pinned: g.spec.endpoint.pinned_fip().is_some(),
            fip_held: held(g.spec.endpoint.pinned_fip(), status.floating_ip.as_deref()),
            service_cidr: g.spec.service_cidr.clone().or(status.service_cidr.clone()),
            tunnels: peer_count
                .get(&(namespace.clone(), name.clone()))
                .copied()
                .unwrap_or(0),
            ready: ready(&g.metadata, &status),
            blockers: None,
            managed_by: managed_by(&g.metadata),
            kind: "VPNGateway",
            migrated: if both {
                Migration::InProgress
            } else {
                Migration::Yes
            },
            namespace,
            name,
            next_window: None,
        });
    }
    out.sort_by(|a, b| (&a.namespace, &a.name, a.kind).cmp(&(&b.namespace, &b.name, b.kind)));
    mark_shared_fips(&mut out);
    out
}

/// `f` of every item, in order, on up to as many threads as the machine has cores (one
/// chunk each); a short list on this thread.
fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    /// Below this many items a thread costs more than it saves.
    const ALONE: usize = 64;
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(items.len().div_ceil(ALONE))
        .max(1);
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let f = &f;
    std::thread::scope(|s| {
        let workers: Vec<_> = items
            .chunks(items.len().div_ceil(threads))
            .map(|part| s.spawn(move || part.iter().map(f).collect::<Vec<R>>()))
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a row's work does not panic"))
            .collect()
    })
}

/// The gateways that share a floating IP with another gateway (another name, either
/// kind, any namespace): the operator attaches it to one of them, the other waits at
/// `FIPAttached=False` (`AlreadyAssociated`), and which one the client's firewall reaches
/// is not the migration's to guess. Each gets the blocker `fip-shared`. The two kinds of
/// one name (a window under way) are one gateway. Addresses compare in their family
/// (`addr::same_in_family`): `::ffff:203.0.113.10` is not `203.0.113.10`.
fn mark_shared_fips(rows: &mut [Row]) {
    use std::collections::BTreeMap;
    let key = |f: &str| {
        crate::core::addr::addr(f).map_or_else(|| f.trim().to_string(), |a| a.to_string())
    };
    let mut by_fip: BTreeMap<String, std::collections::BTreeSet<(String, String)>> =
        BTreeMap::new();
    for r in rows.iter() {
        if let Some(f) = r.floating_ip.as_deref().filter(|f| !f.trim().is_empty()) {
            by_fip
                .entry(key(f))
                .or_default()
                .insert((r.namespace.clone(), r.name.clone()));
        }
    }
    for r in rows.iter_mut() {
        let shared = r
            .floating_ip
            .as_deref()
            .filter(|f| !f.trim().is_empty())
            .is_some_and(|f| by_fip.get(&key(f)).is_some_and(|g| g.len() > 1));
        if shared {
            let b = r.blockers.get_or_insert_with(Vec::new);
            if !b.contains(&"fip-shared") {
                b.push("fip-shared");
            }
        }
    }
}

/// Whether a gateway that pins `pinned` (if any) holds that floating IP per its status
/// `status` (not pinned: whatever its status holds, it holds).
fn held(pinned: Option<&str>, status: Option<&str>) -> bool {
    let Some(st) = status.map(str::trim).filter(|f| !f.is_empty()) else {
        return false;
    };
    pinned.is_none_or(|p| crate::core::addr::same_addr(p, st))
}

/// The floating IPs several gateways claim, each with the gateways (`kind/name -n ns`)
/// that claim it, from rows marked `fip-shared`: each said with whether it holds the
/// floating IP (status) and/or pins it (spec), and the way out that keeps it (a21r R12:
/// "take it out of each gateway that must not have it" unpinned it on its holder).
pub fn shared_fips(rows: &[Row]) -> Vec<(String, Vec<String>, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>, Vec<String>)> = Vec::new();
    for r in rows.iter().filter(|r| {
        r.blockers
            .as_ref()
            .is_some_and(|b| b.contains(&"fip-shared"))
    }) {
        let fip = r.floating_ip.clone().unwrap_or_default();
        let who = crate::core::model::object_ref(r.kind, &r.name, &r.namespace);
        let claim = crate::core::live::FipClaim {
            pins: r.fip_pinned,
            holds: r.fip_held,
        };
        let way = format!(
            "{who} {}; if it must not have it: {}",
            claim.said(),
            claim.way_out(r.kind, &r.name, &r.namespace, &fip)
        );
        match out
            .iter_mut()
            .find(|(f, _, _)| crate::core::addr::same_in_family(f, &fip))
        {
            Some((_, all, ways)) => {
                all.push(who);
                ways.push(way);
            }
            None => out.push((fip, vec![who], vec![way])),
        }
    }
    out
}

/// An IPsecGateway as the VPNPeer name checks see another gateway of its namespace: the
/// names its tunnels' VPNPeers would get.
fn other_gateway(o: &IPsecGateway) -> crate::core::live::OtherGateway {
    let (ns, n) = ns_name(&o.metadata);
    let count = o.spec.tunnels.len();
    crate::core::live::OtherGateway {
        object: format!("IPsecGateway {ns}/{n}"),
        future_peers: o
            .spec
            .tunnels
            .iter()
            .map(|t| {
                (
                    t.name.clone(),
                    crate::core::translate::peer_name(&n, &t.name, count),
                )
            })
            .collect(),
        namespace: ns,
        name: n,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::finding::CheckResult;
    use crate::core::live::{OtherGateway, peer_name_checks};

    fn gateway(ns: &str, name: &str, tunnels: &[&str], i: usize) -> IPsecGateway {
        let tunnels: Vec<_> = tunnels
            .iter()
            .enumerate()
            .map(|(t, tunnel)| {
                serde_json::json!({
                    "name": tunnel,
                    "peer": {"address": "203.0.113.10"},
                    "remoteSubnets": [format!("100.{}.{}.{t}/32", 64 + i / 256, i % 256)],
                    "esp": {"proposals": ["aes256gcm16-modp2048"]}
                })
            })
            .collect();
        let (hi, lo) = ((i >> 8) & 255, i & 255);
        serde_json::from_value(serde_json::json!({
            "apiVersion": "ipsec.bnerd.net/v1alpha1", "kind": "IPsecGateway",
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "endpoint": {"floatingIP": format!("198.18.{hi}.{lo}"), "network": "public"},
                "auth": {"pskSecretRef": {"name": "psk", "key": "psk"}},
                "ike": {"version": 2, "proposals": ["aes256-sha256-modp2048"]},
                "tunnels": tunnels,
            },
            "status": {"serviceCIDR": format!("10.{hi}.{lo}.0/24"), "floatingIP": format!("198.18.{hi}.{lo}")}
        }))
        .expect("a valid IPsecGateway")
    }

    /// A namespace of 200 gateways whose VPNPeer names collide in every way the checks
    /// know (a single-tunnel gateway owning its name, two derived names, a `-2` taken
    /// so the hint offers `-3`), and a small second namespace with the same names.
    fn fleet() -> Vec<IPsecGateway> {
        let mut out = Vec::new();
        for k in 0..30 {
            let ns = "tenant-big";
            out.push(gateway(ns, &format!("gw{k}"), &["a", "b"], out.len()));
            out.push(gateway(ns, &format!("gw{k}-a"), &["main"], out.len()));
            if k % 3 == 0 {
                out.push(gateway(ns, &format!("gw{k}-a-2"), &["main"], out.len()));
            }
            out.push(gateway(ns, &format!("p{k}"), &["q-r", "s"], out.len()));
            out.push(gateway(ns, &format!("p{k}-q"), &["r", "t"], out.len()));
            out.push(gateway(ns, &format!("solo{k}"), &["main"], out.len()));
            out.push(gateway(ns, &format!("pair{k}"), &["x", "y"], out.len()));
        }
        for k in 0..3 {
            out.push(gateway(
                "tenant-small",
                &format!("gw{k}"),
                &["a", "b"],
                out.len(),
            ));
            out.push(gateway(
                "tenant-small",
                &format!("gw{k}-b"),
                &["main"],
                out.len(),
            ));
        }
        out
    }

    /// The VPNPeer name checks of every gateway as `rows` made them before the index:
    /// every other gateway of the namespace given to `peer_name_checks` as `others`.
    fn quadratic(old: &[IPsecGateway]) -> Vec<((String, String), Vec<CheckResult>)> {
        let other = other_gateway;
        old.iter()
            .map(|g| {
                let (namespace, name) = ns_name(&g.metadata);
                let plan =
                    full_plan::build(&Source::listed(g.clone(), "test"), &Allowlist::default());
                let others: Vec<OtherGateway> = old
                    .iter()
                    .map(other)
                    .filter(|o| o.namespace == namespace && o.name != name)
                    .collect();
                let tunnels: Vec<String> = g.spec.tunnels.iter().map(|t| t.name.clone()).collect();
                (
                    (namespace, name),
                    peer_name_checks(&plan, &tunnels, &Ok(others)),
                )
            })
            .collect()
    }

    #[test]
    fn the_peer_name_index_judges_a_large_namespace_as_the_quadratic_way_did() {
        let old = fleet();
        let before = quadratic(&old);
        let rows = rows(&old, &[], &[], &Allowlist::default(), "test");
        assert_eq!(rows.len(), old.len());
        let mut blocked = 0;
        for ((namespace, name), checks) in &before {
            // The same findings, word for word (the hint's free name included).
            let g = old
                .iter()
                .find(|g| ns_name(&g.metadata) == (namespace.clone(), name.clone()))
                .unwrap();
            let plan = full_plan::build(&Source::listed(g.clone(), "test"), &Allowlist::default());
            let ns_gateways: Vec<OtherGateway> = old
                .iter()
                .filter(|g| g.metadata.namespace.as_deref() == Some(namespace))
                .map(OtherGateway::from_ipsec)
                .collect();
            let tunnels: Vec<String> = g.spec.tunnels.iter().map(|t| t.name.clone()).collect();
            let index = crate::core::live::PeerNames::new(&ns_gateways);
            assert_eq!(&index.checks(&plan, &tunnels), checks, "{namespace}/{name}");
            // The same blocker ids on the row.
            let row = rows
                .iter()
                .find(|r| &r.namespace == namespace && &r.name == name)
                .unwrap();
            let blocks = checks
                .iter()
                .any(|c| c.id == "peer-names-unique" && c.blocks());
            assert_eq!(
                row.blockers
                    .as_ref()
                    .unwrap()
                    .contains(&"peer-names-unique"),
                blocks,
                "{namespace}/{name}"
            );
            blocked += usize::from(blocks);
        }
        // gw{k} (its tunnel a's name is gw{k}-a's own) and p{k}-q (p{k} sorts first)
        // in the large namespace; gw{k} in the small one.
        assert_eq!(blocked, 30 + 30 + 3);
        let hint = |ns: &str, name: &str| {
            before
                .iter()
                .find(|(k, _)| k.0 == ns && k.1 == name)
                .unwrap()
                .1[0]
                .findings[0]
                .fix
                .clone()
                .unwrap()
        };
        assert!(hint("tenant-big", "gw0").contains("--peer-name a=gw0-a-3"));
        assert!(hint("tenant-big", "gw1").contains("--peer-name a=gw1-a-2"));
    }
}
