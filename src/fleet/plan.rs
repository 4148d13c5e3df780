//! `vpnmig plan -A | -n NS [-l SELECTOR] [--names FILE] --out DIR` and `plan -f FILE
//! --out DIR` without `--name`: every selected gateway planned, a bundle each under
//! `DIR/NAMESPACE/NAME/`, and `DIR/fleet.json`.
//!
//! The cluster is read a constant number of times whatever the fleet's size: each kind
//! listed once (page by page), the CRDs once, the permissions once per namespace; only
//! each gateway's PSK Secret is read per gateway. Everything else is pure
//! (`core::fleet`, which runs `core::live`'s checks).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use futures::StreamExt;
use kube::api::ApiResource;
use serde_json::Value;

use crate::bundle;
use crate::cluster::{Cluster, KubeError, facts, list};
use crate::core::allowlist::Allowlist;
use crate::core::fleet::{Around, FleetPlan, FleetRow, Neighbours, Selection};
use crate::core::input::Source;
use crate::core::live::OtherGateway;
use crate::core::model::{IPsecGateway, VPNGateway, VPNPeer};
use crate::core::plan::{self, Plan};
use crate::error::Error;

/// How many per-gateway reads (PSK Secrets, permission reviews) are in flight at once.
pub const IN_FLIGHT: usize = 8;

/// One selected gateway: planned, or not plannable (an invalid object).
#[derive(Debug)]
pub enum Planned {
    Plan {
        plan: Box<Plan>,
        old_manifest: Value,
    },
    Invalid {
        namespace: String,
        name: String,
        why: String,
    },
}

/// A `--names FILE` entry: `NAME` (any selected namespace) or `NAMESPACE/NAME`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct NameEntry {
    pub namespace: Option<String>,
    pub name: String,
}

impl NameEntry {
    /// Whether this entry names gateway `ns/name`.
    pub fn matches(&self, ns: &str, name: &str) -> bool {
        self.name == name && self.namespace.as_deref().is_none_or(|n| n == ns)
    }

    pub fn shown(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// `--names FILE`: one `NAME` or `NAMESPACE/NAME` a line; blank lines and `#` comments
/// are skipped.
pub fn parse_names(text: &str) -> Vec<NameEntry> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .map(|l| match l.split_once('/') {
            Some((ns, name)) => NameEntry {
                namespace: Some(ns.to_string()),
                name: name.to_string(),
            },
            None => NameEntry {
                namespace: None,
                name: l.to_string(),
            },
        })
        .collect()
}

/// What to plan from the cluster.
#[derive(Clone, Debug, Default)]
pub struct Select {
    /// `-A`; else the cluster's namespace (`-n`, else the context's).
    pub all_namespaces: bool,
    pub selector: Option<String>,
    pub names: Option<Vec<NameEntry>>,
}

impl Select {
    /// As recorded in fleet.json.
    pub fn recorded(&self, namespace: &str) -> Selection {
        Selection {
            all_namespaces: self.all_namespaces,
            namespace: (!self.all_namespaces).then(|| namespace.to_string()),
            selector: self.selector.clone(),
            names: self
                .names
                .as_ref()
                .map(|n| n.iter().map(NameEntry::shown).collect()),
        }
    }
}

fn key(raw: &Value) -> (String, String) {
    let at = |p: &str| {
        raw.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    (at("/metadata/namespace"), at("/metadata/name"))
}

/// The entries of `names` that no gateway of `found` matches.
fn missing(names: &[NameEntry], found: &[(String, String)]) -> Vec<String> {
    names
        .iter()
        .filter(|e| !found.iter().any(|(ns, n)| e.matches(ns, n)))
        .map(NameEntry::shown)
        .collect()
}

fn names_missing(missing: Vec<String>, whence: &str) -> Error {
    Error::Stop {
        code: crate::exit::INVALID_INPUT,
        message: format!(
            "--names: no IPsecGateway {} in {whence}: nothing was planned",
            missing.join(", ")
        ),
        hint: Some(
            "check the names (NAME or NAMESPACE/NAME, one a line) and the namespace (-n, -A)"
                .into(),
        ),
    }
}

/// Plan every selected gateway of the cluster.
pub async fn live(
    cluster: &Cluster,
    select: &Select,
    allowlist: &Allowlist,
) -> Result<Vec<Planned>, Error> {
    let ar = ApiResource::erase::<IPsecGateway>(&());
    let scope = (!select.all_namespaces).then_some(cluster.namespace.as_str());

    // Every gateway of the cluster, once: the uniqueness checks compare with all of them.
    let refused = |e: KubeError| facts::refusal(e).map_err(Error::from);
    let everything = match list::raw(cluster, &ar, None, None).await {
        Ok(all) => Ok(all),
        Err(e) => Err(refused(e)?),
    };
    // The selection: from that list, unless a selector asks the API server to filter
    // or the list was refused (then the selection's own scope is asked: no answer there
    // is no plan, exit 1).
    let selected: Vec<Value> = match (&everything, &select.selector) {
        (Ok(all), None) => all
            .iter()
            .map(|o| serde_json::to_value(o).expect("objects serialize"))
            .filter(|v| scope.is_none_or(|ns| key(v).0 == ns))
            .collect(),
        _ => list::raw(cluster, &ar, scope, select.selector.as_deref())
            .await?
            .iter()
            .map(|o| serde_json::to_value(o).expect("objects serialize"))
            .collect(),
    };
    let selected: Vec<Value> = match &select.names {
        Some(names) => {
            let keys: Vec<_> = selected.iter().map(key).collect();
            let gone = missing(names, &keys);
            if !gone.is_empty() {
                let whence =
                    scope.map_or("any namespace".to_string(), |ns| format!("namespace {ns}"));
                return Err(names_missing(gone, &whence));
            }
            selected
                .into_iter()
                .filter(|v| {
                    let (ns, n) = key(v);
                    names.iter().any(|e| e.matches(&ns, &n))
                })
                .collect()
        }
        None => selected,
    };
    let namespaces: BTreeSet<String> = selected.iter().map(|v| key(v).0).collect();

    // The new kinds, once each: the other gateways, and the targets that exist already.
    let new_gateways: Result<Vec<VPNGateway>, String> = match list::all(cluster, None).await {
        Ok(v) => Ok(v),
        Err(e) => Err(refused(e)?),
    };
    let neighbours: Result<Neighbours, String> = match (&everything, &new_gateways) {
        (Ok(old), Ok(new)) => Ok(Neighbours::new(
            old.iter()
                .filter_map(|o| {
                    serde_json::from_value::<IPsecGateway>(
                        serde_json::to_value(o).expect("objects serialize"),
                    )
                    .ok()
                })
                .map(|g| OtherGateway::from_ipsec(&g))
                .chain(new.iter().map(OtherGateway::from_vpn))
                .collect(),
        )),
        (Err(why), _) | (_, Err(why)) => Err(why.clone()),
    };
    let existing = existing_targets(cluster, &namespaces, new_gateways.ok()).await?;

    // Per namespace: what cutover and rollback may do there. Once: the CRDs.
    let permissions: BTreeMap<String, Result<Vec<(String, bool)>, String>> =
        futures::stream::iter(namespaces.iter().cloned())
            .map(|ns| async move {
                let there = Cluster {
                    namespace: ns.clone(),
                    ..cluster.clone()
                };
                let p = match facts::permissions(&there).await {
                    Ok(p) => Ok(p),
                    Err(e) => Err(facts::refusal(e)?),
                };
                Ok::<_, KubeError>((ns, p))
            })
            .buffered(IN_FLIGHT)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect::<Result<_, _>>()?;
    let schemas = facts::crd_schemas(cluster).await?;

    // Per gateway: its PSK Secret (a refusal is the Secret checks' finding).
    let sources: Vec<Result<Source, facts::SourceError>> = futures::stream::iter(selected)
        .map(|raw| facts::source_of(cluster, raw))
        .buffered(IN_FLIGHT)
        .collect()
        .await;

    let mut out = Vec::with_capacity(sources.len());
    for source in sources {
        let source = match source {
            Ok(s) => s,
            Err(facts::SourceError::Kube(k)) => return Err(Error::from(k)),
            Err(facts::SourceError::Input(e)) => {
                out.push(invalid(&e));
                continue;
            }
        };
        let ns = source
            .gateway
            .metadata
            .namespace
            .clone()
            .unwrap_or_default();
        let around = Around {
            existing: existing.of(&source, &ns),
            permissions: permissions
                .get(&ns)
                .cloned()
                .unwrap_or_else(|| Ok(Vec::new())),
            schemas: schemas.clone(),
            strays: Ok(existing.strays(&source, &ns)),
        };
        let plan = crate::core::fleet::plan_live(
            &source,
            allowlist,
            neighbours.as_ref().map_err(String::as_str),
            around,
        );
        out.push(planned(plan, &source));
    }
    Ok(out)
}

fn planned(plan: Plan, source: &Source) -> Planned {
    Planned::Plan {
        old_manifest: plan::clean_old_manifest(&source.raw),
        plan: Box::new(plan),
    }
}

/// A gateway of the cluster that is not a valid IPsecGateway: a row, not the end.
fn invalid(e: &crate::core::input::InputError) -> Planned {
    let text = e.to_string();
    // `IPsecGateway NS/NAME: field …` names it; the origin is the cluster.
    let name = text
        .split("IPsecGateway ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .unwrap_or("?");
    let (namespace, name) = name.split_once('/').unwrap_or(("", name));
    Planned::Invalid {
        namespace: namespace.to_string(),
        name: name.to_string(),
        why: text,
    }
}

/// The VPNGateways and VPNPeers that exist in the selected namespaces, by namespace
/// and name, cleaned like saved manifests; and the VPNPeers' names by the
/// `(namespace, spec.gatewayRef.name)` they name.
struct Existing(
    BTreeMap<(String, String, String), Value>,
    BTreeMap<(String, String), Vec<String>>,
);

impl Existing {
    /// The VPNPeers that name `source`'s gateway and are not its targets
    /// (`core::live::strays`): the operator counts them as the new gateway's peers.
    fn strays(&self, source: &Source, ns: &str) -> Vec<String> {
        let gw = source.gateway.metadata.name.clone().unwrap_or_default();
        let n = source.gateway.spec.tunnels.len();
        let targets: Vec<String> = source
            .gateway
            .spec
            .tunnels
            .iter()
            .map(|t| crate::core::translate::peer_name(&gw, &t.name, n))
            .collect();
        let mut out: Vec<String> = self
            .1
            .get(&(ns.to_string(), gw))
            .into_iter()
            .flatten()
            .filter(|p| !targets.contains(p))
            .cloned()
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The targets of `source`'s plan that exist: `(Kind/name, object)`.
    fn of(&self, source: &Source, ns: &str) -> Vec<(String, Value)> {
        let gw = source.gateway.metadata.name.clone().unwrap_or_default();
        let n = source.gateway.spec.tunnels.len();
        std::iter::once(("VPNGateway".to_string(), gw.clone()))
            .chain(source.gateway.spec.tunnels.iter().map(|t| {
                (
                    "VPNPeer".to_string(),
                    crate::core::translate::peer_name(&gw, &t.name, n),
                )
            }))
            .filter_map(|(kind, name)| {
                let obj = self.0.get(&(kind.clone(), ns.to_string(), name.clone()))?;
                Some((format!("{kind}/{name}"), obj.clone()))
            })
            .collect()
    }
}

/// Read once: cluster-wide when allowed (the VPNGateways already listed), else per
/// selected namespace. A namespace whose targets cannot be read ends the plan (exit 1),
/// as `plan NAME` does when it cannot read a target.
async fn existing_targets(
    cluster: &Cluster,
    namespaces: &BTreeSet<String>,
    gateways: Option<Vec<VPNGateway>>,
) -> Result<Existing, Error> {
    let clean = |v: Value| plan::clean_old_manifest(&v);
    let mut out = BTreeMap::new();
    let mut put = |kind: &str, v: Value| {
        let (ns, name) = key(&v);
        if namespaces.contains(&ns) {
            out.insert((kind.to_string(), ns, name), clean(v));
        }
    };
    let gateways: Vec<VPNGateway> = match gateways {
        Some(g) => g,
        None => {
            let mut all = Vec::new();
            for ns in namespaces {
                all.extend(list::all::<VPNGateway>(cluster, Some(ns)).await?);
            }
            all
        }
    };
    for g in gateways {
        put(
            "VPNGateway",
            serde_json::to_value(&g).expect("objects serialize"),
        );
    }
    let peers: Vec<VPNPeer> = match list::all(cluster, None).await {
        Ok(p) => p,
        Err(KubeError::Forbidden { .. } | KubeError::Unauthorized { .. }) => {
            let mut all = Vec::new();
            for ns in namespaces {
                all.extend(list::all::<VPNPeer>(cluster, Some(ns)).await?);
            }
            all
        }
        Err(e) => return Err(e.into()),
    };
    let mut naming: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for p in peers {
        let v = serde_json::to_value(&p).expect("objects serialize");
        let (ns, name) = key(&v);
        if let Some(gw) = v.pointer("/spec/gatewayRef/name").and_then(Value::as_str) {
            naming.entry((ns, gw.to_string())).or_default().push(name);
        }
        put("VPNPeer", v);
    }
    Ok(Existing(out, naming))
}

/// Plan every gateway of a file, offline: the collisions among them, no cluster.
pub fn offline(sources: &[Source], allowlist: &Allowlist) -> Vec<Planned> {
    let neighbours = Neighbours::new(
        sources
            .iter()
            .map(|s| OtherGateway::from_ipsec(&s.gateway))
            .collect(),
    );
    sources
        .iter()
        .map(|s| {
            planned(
                crate::core::fleet::plan_offline(s, allowlist, &neighbours),
                s,
            )
        })
        .collect()
}

/// The directory of a gateway's bundle under `out`, relative: `NAMESPACE/NAME` (a
/// gateway without a namespace, from a file: `NAME`).
fn bundle_dir(namespace: &str, name: &str) -> PathBuf {
    if namespace.is_empty() {
        PathBuf::from(name)
    } else {
        Path::new(namespace).join(name)
    }
}

/// The fleet's rows, with a bundle each under `out` when given, and `out/fleet.json`.
/// Every bundle is guarded before any is written: a refusal (another gateway's bundle,
/// a READY bundle a BLOCKED plan would replace) writes nothing and names every one.
pub fn write(
    out: Option<&Path>,
    planned: &[Planned],
    force: bool,
    origin: String,
    selection: Selection,
) -> Result<FleetPlan, Error> {
    if let Some(out) = out {
        let mut refusals = Vec::new();
        for p in planned {
            if let Planned::Plan { plan, .. } = p {
                let dir = out.join(bundle_dir(
                    plan.source.namespace.as_deref().unwrap_or_default(),
                    &plan.source.name,
                ));
                let previous = bundle::read_previous(&dir)?;
                if let Err(e) = bundle::guard(&dir, plan, &previous, force) {
                    refusals.push(e.to_string());
                }
            }
        }
        if !refusals.is_empty() {
            return Err(Error::Stop {
                code: crate::exit::REFUSED,
                message: format!(
                    "{} bundle(s) not replaced, so none was written: {}",
                    refusals.len(),
                    refusals.join("; ")
                ),
                hint: Some(
                    "choose another --out, remove those directories, or pass --force".into(),
                ),
            });
        }
    }
    // Each bundle is written and synced as `plan NAME --out` writes it; several at once,
    // so the syncs of many bundles overlap instead of queueing one by one.
    let row = |p: &Planned| -> Result<FleetRow, Error> {
        Ok(match p {
            Planned::Plan { plan, old_manifest } => {
                let rel = bundle_dir(
                    plan.source.namespace.as_deref().unwrap_or_default(),
                    &plan.source.name,
                );
                if let Some(out) = out {
                    bundle::write(&out.join(&rel), plan, old_manifest)?;
                }
                FleetRow::of(plan, out.map(|_| rel.display().to_string()))
            }
            Planned::Invalid {
                namespace,
                name,
                why,
            } => FleetRow::invalid(namespace, name, why.clone()),
        })
    };
    let chunk = planned.len().div_ceil(IN_FLIGHT).max(1);
    let rows: Vec<FleetRow> = std::thread::scope(|s| {
        let workers: Vec<_> = planned
            .chunks(chunk)
            .map(|part| s.spawn(move || part.iter().map(row).collect::<Result<Vec<_>, _>>()))
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("bundle writers do not panic"))
            .collect::<Result<Vec<Vec<_>>, _>>()
    })?
    .into_iter()
    .flatten()
    .collect();
    let fleet = FleetPlan::new(origin, selection, rows);
    if let Some(out) = out {
        let path = out.join("fleet.json");
        let doc = serde_json::to_string_pretty(&fleet).expect("fleet plans serialize") + "\n";
        std::fs::write(&path, doc).map_err(|source| Error::WriteFile {
            path: path.display().to_string(),
            source,
        })?;
    }
    Ok(fleet)
}
