//! The fleet plan's pure part (issue 15 item 2): many gateways planned with checks
//! computed once for the whole cluster. The cluster (or the file) is read once; every
//! gateway's uniqueness checks compare it with the few gateways that could clash, found
//! through an index, so the cost per gateway does not grow with the fleet. The checks
//! themselves are `core::live`'s, unchanged: a fleet plan and `plan NAME` judge alike.
//!
//! Layer 4 (journal, records and views): imports only from layers 0 to 4; see docs/architecture.md.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use ipnet::IpNet;
use serde::Serialize;
use serde_json::Value;

use crate::core::addr;
use crate::core::allowlist::Allowlist;
use crate::core::finding::{Outcome, Severity};
use crate::core::full_plan;
use crate::core::input::Source;
use crate::core::live::{self, Facts, OtherGateway};
use crate::core::plan::Plan;

/// Every gateway of the cluster or file (either kind), indexed by what can clash: the
/// floating IP, the service CIDR (overlap, through each prefix length present) and the
/// namespace (VPNPeer names).
#[derive(Debug, Default)]
pub struct Neighbours {
    all: Vec<OtherGateway>,
    by_fip: HashMap<String, Vec<usize>>,
    /// Each network at its own prefix length.
    by_net: HashMap<IpNet, Vec<usize>>,
    /// Each network under every shorter prefix length present (its supernets).
    by_supernet: HashMap<IpNet, Vec<usize>>,
    /// Service CIDRs that are not networks, trimmed.
    by_cidr_text: HashMap<String, Vec<usize>>,
    /// The prefix lengths present, per family (`true`: IPv4).
    lengths: BTreeSet<(bool, u8)>,
    by_namespace: HashMap<String, Vec<usize>>,
}

/// A floating IP as compared by `addr::same_addr`: the address, else the name
/// (case-insensitive, without a trailing dot).
fn fip_key(s: &str) -> String {
    match addr::addr(s) {
        Some(a) => a.to_string(),
        None => s.trim().trim_end_matches('.').to_lowercase(),
    }
}

fn supernet(net: &IpNet, len: u8) -> Option<IpNet> {
    IpNet::new(net.addr(), len).ok().map(|n| n.trunc())
}

impl Neighbours {
    pub fn new(all: Vec<OtherGateway>) -> Neighbours {
        let mut n = Neighbours::default();
        let nets: Vec<Option<IpNet>> = all
            .iter()
            .map(|o| o.service_cidr.as_deref().and_then(addr::net))
            .collect();
        for net in nets.iter().flatten() {
            n.lengths.insert((net.addr().is_ipv4(), net.prefix_len()));
        }
        for (i, o) in all.iter().enumerate() {
            if let Some(f) = &o.floating_ip {
                n.by_fip.entry(fip_key(f)).or_default().push(i);
            }
            match (&nets[i], &o.service_cidr) {
                (Some(net), _) => {
                    n.by_net.entry(net.trunc()).or_default().push(i);
                    let v4 = net.addr().is_ipv4();
                    for &(_, len) in n
                        .lengths
                        .iter()
                        .filter(|(f, l)| *f == v4 && *l < net.prefix_len())
                    {
                        if let Some(s) = supernet(net, len) {
                            n.by_supernet.entry(s).or_default().push(i);
                        }
                    }
                }
                (None, Some(text)) => {
                    n.by_cidr_text
                        .entry(text.trim().to_string())
                        .or_default()
                        .push(i);
                }
                (None, None) => {}
            }
            n.by_namespace
                .entry(o.namespace.clone())
                .or_default()
                .push(i);
        }
        n.all = all;
        n
    }

    /// How many gateways the index holds.
    pub fn len(&self) -> usize {
        self.all.len()
    }

    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    /// The gateways that could clash with `plan` (its floating IP, an overlapping
    /// service CIDR, its namespace), in the order given to [`Neighbours::new`], without
    /// the source and its targets: what `core::live`'s checks need to know as `others`.
    pub fn for_plan(&self, plan: &Plan) -> Vec<OtherGateway> {
        let ns = plan.source.namespace.clone().unwrap_or_default();
        let me = plan.source.name.as_str();
        let spec = &plan.targets.gateway.spec;
        self.indices(
            &ns,
            spec.endpoint.floating_ip.as_deref(),
            spec.service_cidr.as_deref(),
        )
        .into_iter()
        .map(|i| &self.all[i])
        .filter(|o| !(o.namespace == ns && o.name == me))
        .cloned()
        .collect()
    }

    /// The positions of the gateways holding `fip`, a CIDR overlapping `cidr`, or in `ns`.
    fn indices(&self, ns: &str, fip: Option<&str>, cidr: Option<&str>) -> BTreeSet<usize> {
        let mut picked: BTreeSet<usize> = BTreeSet::new();
        if let Some(f) = fip {
            picked.extend(self.by_fip.get(&fip_key(f)).into_iter().flatten());
        }
        if let Some(cidr) = cidr {
            match addr::net(cidr) {
                Some(mine) => {
                    let v4 = mine.addr().is_ipv4();
                    let len = mine.prefix_len();
                    // Networks that hold mine: at each shorter-or-equal length present.
                    for &(_, l) in self.lengths.iter().filter(|(f, l)| *f == v4 && *l <= len) {
                        if let Some(s) = supernet(&mine, l) {
                            picked.extend(self.by_net.get(&s).into_iter().flatten());
                        }
                    }
                    // Networks mine holds: indexed under their supernets, when mine's
                    // length is one the index knows; else looked for one by one.
                    if self.lengths.contains(&(v4, len)) {
                        picked.extend(self.by_supernet.get(&mine.trunc()).into_iter().flatten());
                    } else {
                        picked.extend(self.all.iter().enumerate().filter_map(|(i, o)| {
                            let theirs = o.service_cidr.as_deref().and_then(addr::net)?;
                            addr::overlaps(&theirs, &mine).then_some(i)
                        }));
                    }
                }
                None => {
                    picked.extend(self.by_cidr_text.get(cidr.trim()).into_iter().flatten());
                }
            }
        }
        picked.extend(self.by_namespace.get(ns).into_iter().flatten());
        picked
    }
}

/// What the cluster said about one gateway's surroundings, besides the other gateways.
#[derive(Clone, Debug)]
pub struct Around {
    /// The targets that exist, cleaned: `(Kind/name, object)`.
    pub existing: Vec<(String, Value)>,
    /// Its namespace's SelfSubjectAccessReviews, or why they could not be asked.
    pub permissions: Result<Vec<(String, bool)>, String>,
    /// The CRD schemas, or why they could not be read.
    pub schemas: Result<crate::core::schema::TargetSchemas, String>,
    /// The VPNPeers of its namespace that name it in `spec.gatewayRef.name` and are not
    /// its targets (`core::live::strays`), or why they could not be listed.
    pub strays: Result<Vec<String>, String>,
}

/// The tunnel names of a source, in order.
fn tunnels(source: &Source) -> Vec<String> {
    source
        .gateway
        .spec
        .tunnels
        .iter()
        .map(|t| t.name.clone())
        .collect()
}

/// One gateway of a live fleet: planned and checked exactly as `plan NAME` does, with
/// `others` from the index (or why the gateways could not be listed).
pub fn plan_live(
    source: &Source,
    allowlist: &Allowlist,
    neighbours: Result<&Neighbours, &str>,
    around: Around,
) -> Plan {
    let mut plan = full_plan::build_named(source, allowlist, &BTreeMap::new());
    let others = match neighbours {
        Ok(n) => Ok(n.for_plan(&plan)),
        Err(why) => Err(why.to_string()),
    };
    let facts = Facts {
        schema: around
            .schemas
            .map(|s| crate::core::schema::validate_targets(&plan.targets, &s)),
        existing: around.existing,
        others,
        dry_run: None,
        permissions: around.permissions,
        strays: around.strays,
    };
    let migrated = live::judge(&mut plan, &tunnels(source), &facts);
    plan.already_migrated = migrated == live::Migrated::Already;
    plan
}

/// One gateway of a file, offline: the translation's checks and the collisions with the
/// file's other gateways (floating IP, service CIDR, VPNPeer names); nothing a cluster
/// would have to answer.
pub fn plan_offline(source: &Source, allowlist: &Allowlist, neighbours: &Neighbours) -> Plan {
    let mut plan = full_plan::build_named(source, allowlist, &BTreeMap::new());
    let others = Ok(neighbours.for_plan(&plan));
    let mut checks = live::unique_checks(&plan, &others);
    checks.extend(live::peer_name_checks(&plan, &tunnels(source), &others));
    live::extend(&mut plan, checks);
    plan
}

/// The version of `fleet.json`'s schema (docs/fleet-json.md).
pub const FLEET_API_VERSION: &str = "vpnmig.bnerd.net/fleet-plan/v1";

/// `fleet.json` and `plan -A -o json`: one row per gateway planned.
#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct FleetPlan {
    pub api_version: &'static str,
    pub tool_version: &'static str,
    /// Where the gateways were read: `context C` (with the selection) or the file.
    pub origin: String,
    pub selection: Selection,
    pub totals: Totals,
    pub gateways: Vec<FleetRow>,
}

/// Which gateways were asked for.
#[derive(Serialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
pub struct Selection {
    pub all_namespaces: bool,
    /// `-n`, when not all namespaces.
    pub namespace: Option<String>,
    /// `-l`.
    pub selector: Option<String>,
    /// `--names FILE`'s entries (`NAME` or `NAMESPACE/NAME`).
    pub names: Option<Vec<String>>,
}

#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    pub gateways: usize,
    pub ready: usize,
    pub blocked: usize,
    /// Gateways whose targets already exist exactly as planned (live only).
    pub already_migrated: usize,
}

/// Ready: no blocker failed. Blocked: one did (or the gateway could not be read).
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Ready,
    Blocked,
}

#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct FleetRow {
    pub namespace: String,
    pub name: String,
    pub verdict: Verdict,
    /// The ids of the blocker checks that failed, in the plan's order.
    pub blocking: Vec<String>,
    /// The ids of the warning checks that failed.
    pub warnings: Vec<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub already_migrated: bool,
    /// The bundle's directory relative to `--out` (`NAMESPACE/NAME`); null without one.
    pub bundle: Option<String>,
    /// The gateway could not be planned at all (an invalid object): why. Its verdict is
    /// blocked with the check `input`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl FleetRow {
    /// The row of a plan made.
    pub fn of(plan: &Plan, bundle: Option<String>) -> FleetRow {
        let failed = |sev: Severity| {
            plan.checks
                .iter()
                .filter(|c| c.severity == sev && c.outcome == Outcome::Fail)
                .map(|c| c.id.to_string())
                .collect::<Vec<_>>()
        };
        FleetRow {
            namespace: plan.source.namespace.clone().unwrap_or_default(),
            name: plan.source.name.clone(),
            verdict: if plan.blocked {
                Verdict::Blocked
            } else {
                Verdict::Ready
            },
            blocking: plan
                .checks
                .iter()
                .filter(|c| c.blocks())
                .map(|c| c.id.to_string())
                .collect(),
            warnings: failed(Severity::Warning),
            already_migrated: plan.already_migrated,
            bundle,
            error: None,
        }
    }

    /// The row of a gateway that could not be planned (`why`): blocked by `input`.
    pub fn invalid(namespace: &str, name: &str, why: String) -> FleetRow {
        FleetRow {
            namespace: namespace.to_string(),
            name: name.to_string(),
            verdict: Verdict::Blocked,
            blocking: vec!["input".into()],
            warnings: Vec::new(),
            already_migrated: false,
            bundle: None,
            error: Some(why),
        }
    }
}

impl FleetPlan {
    /// The summary of `rows`, sorted by namespace and name.
    pub fn new(origin: String, selection: Selection, mut rows: Vec<FleetRow>) -> FleetPlan {
        rows.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        let totals = Totals {
            gateways: rows.len(),
            ready: rows.iter().filter(|r| r.verdict == Verdict::Ready).count(),
            blocked: rows
                .iter()
                .filter(|r| r.verdict == Verdict::Blocked)
                .count(),
            already_migrated: rows.iter().filter(|r| r.already_migrated).count(),
        };
        FleetPlan {
            api_version: FLEET_API_VERSION,
            tool_version: env!("CARGO_PKG_VERSION"),
            origin,
            selection,
            totals,
            gateways: rows,
        }
    }

    /// Whether any gateway is blocked.
    pub fn blocked(&self) -> bool {
        self.totals.blocked > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn other(ns: &str, name: &str, fip: Option<&str>, cidr: Option<&str>) -> OtherGateway {
        OtherGateway {
            object: format!("IPsecGateway {ns}/{name}"),
            floating_ip: fip.map(str::to_string),
            service_cidr: cidr.map(str::to_string),
            future_peers: vec![("main".into(), name.into())],
            namespace: ns.into(),
            name: name.into(),
        }
    }

    #[test]
    fn the_index_finds_what_overlaps_at_any_prefix_length() {
        let n = Neighbours::new(vec![
            other("a", "one", Some("192.0.2.1"), Some("10.250.1.0/24")),
            other("b", "wide", None, Some("10.250.0.0/16")),
            other("c", "narrow", None, Some("10.250.1.128/25")),
            other("d", "far", Some("192.0.2.9"), Some("10.251.0.0/24")),
            other("e", "same-fip", Some("::ffff:192.0.2.1"), Some("text-cidr")),
        ]);
        let gw = |fip: &str, cidr: &str| -> Vec<String> {
            n.indices("elsewhere", Some(fip), Some(cidr))
                .into_iter()
                .map(|i| n.all[i].name.clone())
                .collect()
        };
        assert_eq!(gw("192.0.2.1", "text-cidr"), ["one", "same-fip"]);
        assert_eq!(
            gw("198.51.100.1", "10.250.1.130/32"),
            ["one", "wide", "narrow"]
        );
        // An IPv4-mapped IPv6 address is another address (`addr::same_in_family`, issue
        // 21 item 6): not the IPv4 floating IP, found only by its own spelling.
        assert_eq!(gw("192.0.2.1", "10.250.1.0/24"), ["one", "wide", "narrow"]);
        assert_eq!(gw("::FFFF:c000:201", "x"), ["same-fip"]);
        assert_eq!(gw("198.51.100.1", "10.251.0.0/24"), ["far"]);
        assert_eq!(
            gw("198.51.100.1", "10.250.0.0/16"),
            ["one", "wide", "narrow"]
        );
    }
}
