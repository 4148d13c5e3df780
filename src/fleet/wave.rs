//! Which gateways a wave takes (issue 15 item 3): `-l SELECTOR`, `--names FILE` or
//! `--plan-dir DIR`, in `-n NS` or `-A`.
//!
//! A wave re-run after part of it is done must find the same gateways, though the done
//! ones have no IPsecGateway any more: so a cutover wave selects among the IPsecGateways
//! *and* the gateways with a journal (ConfigMap `vpnmig-NAME`, labelled
//! `app.kubernetes.io/managed-by=vpnmig`), matching the selector against the labels of
//! the live IPsecGateway, else of the old manifest the journal saved (the approved
//! reference, DESIGN.md §4.7). A rollback wave selects among the journals only (a
//! rollback restores from one). `--names` entries are read as `plan --names` reads them
//! ([`super::plan::parse_names`]).

use std::collections::BTreeMap;
use std::path::Path;

use kube::api::ApiResource;
use serde_json::Value;

use super::plan::NameEntry;
use crate::cluster::{Cluster, journal, list};
use crate::core::journal::Phase;
use crate::core::model::IPsecGateway;
use crate::core::selector::LabelSelector;
use crate::error::Error;
use crate::window::Operation;
use crate::window::wave::Member;

/// What to take from the cluster.
#[derive(Clone, Debug, Default)]
pub struct Select {
    /// `-A`; else the cluster's namespace.
    pub all_namespaces: bool,
    pub selector: Option<LabelSelector>,
    pub names: Option<Vec<NameEntry>>,
}

fn labels_of(obj: &Value) -> BTreeMap<String, String> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// The members of a wave of `operation`, sorted by namespace then name. Every `--names`
/// entry must name a candidate (exit 3 otherwise, as `plan --names`).
pub async fn select(
    cluster: &Cluster,
    select: &Select,
    operation: Operation,
) -> Result<Vec<Member>, Error> {
    let scope = (!select.all_namespaces).then_some(cluster.namespace.as_str());
    // (namespace, name) -> labels
    let mut candidates: BTreeMap<(String, String), BTreeMap<String, String>> = BTreeMap::new();
    if operation == Operation::Cutover {
        let ar = ApiResource::erase::<IPsecGateway>(&());
        for o in list::raw(cluster, &ar, scope, None).await? {
            let v = serde_json::to_value(&o).expect("objects serialize");
            let at = |p: &str| {
                v.pointer(p)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            candidates.insert(
                (at("/metadata/namespace"), at("/metadata/name")),
                labels_of(&v),
            );
        }
    }
    for j in journal::list_in(cluster, scope).await?.journals {
        // A cutover wave does not take back a gateway rolled back and gone since.
        if operation == Operation::Cutover && j.phase == Phase::RolledBack {
            continue;
        }
        candidates
            .entry((j.namespace.clone(), j.gateway.clone()))
            .or_insert_with(|| labels_of(&j.old_manifest));
    }
    if let Some(names) = &select.names {
        let missing: Vec<String> = names
            .iter()
            .filter(|e| !candidates.keys().any(|(ns, n)| e.matches(ns, n)))
            .map(NameEntry::shown)
            .collect();
        if !missing.is_empty() {
            let whence = scope.map_or("any namespace".to_string(), |ns| format!("namespace {ns}"));
            let what = match operation {
                Operation::Cutover => "IPsecGateway or journal",
                Operation::Rollback => "journal",
            };
            return Err(Error::Stop {
                code: crate::exit::INVALID_INPUT,
                message: format!(
                    "--names: no {what} of {} in {whence}: nothing was done",
                    missing.join(", ")
                ),
                hint: Some(
                    "check the names (NAME or NAMESPACE/NAME, one a line) and the namespace (-n, -A)"
                        .into(),
                ),
            });
        }
    }
    Ok(candidates
        .into_iter()
        .filter(|((ns, n), labels)| {
            select.selector.as_ref().is_none_or(|s| s.matches(labels))
                && select
                    .names
                    .as_ref()
                    .is_none_or(|names| names.iter().any(|e| e.matches(ns, n)))
        })
        .map(|((namespace, name), _)| Member {
            namespace,
            name,
            plan: None,
        })
        .collect())
}

/// The gateways `DIR/fleet.json` lists as ready (in `namespace` when given), each with its
/// bundle `DIR/NAMESPACE/NAME` as its `--plan` (docs/fleet-json.md), and how many it lists
/// as blocked (not taken), of which how many only by `gitops-sync`. With `gitops_answered` (the wave's `--gitops pause|ignore`), a
/// gateway whose only blocker is `gitops-sync` is taken too, as `cutover NAME --plan DIR
/// --gitops pause` takes it (a21g 14: such a wave said "no gateway selected").
pub fn from_plan_dir(
    dir: &Path,
    namespace: Option<&str>,
    gitops_answered: bool,
) -> Result<(Vec<Member>, usize, usize), Error> {
    let path = dir.join("fleet.json");
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(&path).map_err(|source| Error::Read {
        path: shown.clone(),
        source,
    })?;
    let invalid = |why: String| Error::Stop {
        code: crate::exit::INVALID_INPUT,
        message: format!("{shown}: {why}"),
        hint: Some("write it again with `vpnmig plan -A --out DIR` (or -n, -l, --names)".into()),
    };
    let doc: Value = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
    if doc["apiVersion"] != "vpnmig.bnerd.net/fleet-plan/v1" {
        return Err(invalid(format!(
            "not a fleet plan (apiVersion {}, wanted vpnmig.bnerd.net/fleet-plan/v1)",
            doc["apiVersion"]
        )));
    }
    let rows = doc["gateways"]
        .as_array()
        .ok_or_else(|| invalid("no `gateways` list".into()))?;
    let (mut members, mut blocked, mut gitops_only) = (Vec::new(), 0, 0);
    for r in rows {
        let (Some(ns), Some(name)) = (r["namespace"].as_str(), r["name"].as_str()) else {
            return Err(invalid(format!("a row without namespace or name: {r}")));
        };
        if namespace.is_some_and(|want| want != ns) {
            continue;
        }
        let only_gitops = r["blocking"]
            .as_array()
            .is_some_and(|b| b.len() == 1 && b[0] == crate::core::checks::GITOPS_SYNC)
            && r.get("error").is_none();
        if r["verdict"] != "ready" && !(gitops_answered && only_gitops) {
            blocked += 1;
            gitops_only += usize::from(only_gitops);
            continue;
        }
        let bundle = r["bundle"]
            .as_str()
            .map_or_else(|| Path::new(ns).join(name), |b| Path::new(b).to_path_buf());
        members.push(Member {
            namespace: ns.to_string(),
            name: name.to_string(),
            plan: Some(dir.join(bundle)),
        });
    }
    members.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    Ok((members, blocked, gitops_only))
}
