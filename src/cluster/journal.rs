//! The journal in the cluster: ConfigMap `vpnmig-<gateway>` in the gateway's namespace,
//! written with server-side apply (field manager `vpnmig`) before anything is touched and
//! after every step. Keys: `journal.json` (the document, `core::journal::Journal`),
//! `phase`, and `old-ipsecgateway.yaml` (the saved old manifest, ready for
//! `kubectl apply -f -`).

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use super::{Cluster, KubeError};
use crate::core::journal::{ARCHIVE_KEY, ARCHIVE_LABEL, Journal, archive_name, object_name};

/// The field manager of every write vpnmig makes.
pub use crate::core::scope::FIELD_MANAGER;

/// Why a journal could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Kube(#[from] KubeError),
    #[error("configmap/{name} -n {namespace} is not a vpnmig journal this version can read: {why}")]
    Invalid {
        namespace: String,
        name: String,
        why: String,
    },
    /// A ConfigMap of the journal's name that vpnmig never wrote (no managed-by label, no
    /// journal.json): not evidence that any window happened (issue 14 item 9).
    #[error(
        "configmap/{name} -n {namespace} has the name of vpnmig's journal but is not one (written by {writers}, no journal.json): vpnmig will not read, overwrite or delete it"
    )]
    Foreign {
        namespace: String,
        name: String,
        writers: String,
    },
}

/// The ConfigMap `name` in the cluster's namespace, if there is one (a journal or an
/// archived window's).
async fn get_configmap(cluster: &Cluster, name: &str) -> Result<Option<ConfigMap>, ReadError> {
    let ns = cluster.namespace.as_str();
    let api: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), ns);
    Ok(cluster
        .call("get", &format!("configmap/{name}"), Some(ns), || {
            api.get_opt(name)
        })
        .await?)
}

/// The journal of `gateway`, if there is one.
pub async fn read(cluster: &Cluster, gateway: &str) -> Result<Option<Journal>, ReadError> {
    let ns = cluster.namespace.as_str();
    let name = object_name(gateway);
    let Some(cm) = get_configmap(cluster, &name).await? else {
        return Ok(None);
    };
    let ours = cm
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("app.kubernetes.io/managed-by"))
        .is_some_and(|v| v == "vpnmig");
    let has_journal = cm
        .data
        .as_ref()
        .is_some_and(|d| d.contains_key("journal.json"));
    if !ours && !has_journal {
        let writers: Vec<String> = cm
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .filter_map(|m| m.manager.clone())
            .collect();
        return Err(ReadError::Foreign {
            namespace: ns.into(),
            name,
            writers: if writers.is_empty() {
                "an unrecorded writer".into()
            } else {
                writers.join(", ")
            },
        });
    }
    let text = cm
        .data
        .as_ref()
        .and_then(|d| d.get("journal.json"))
        .ok_or_else(|| ReadError::Invalid {
            namespace: ns.into(),
            name: name.clone(),
            why: "no key journal.json".into(),
        })?;
    Journal::from_json(text)
        .map(Some)
        .map_err(|why| ReadError::Invalid {
            namespace: ns.into(),
            name,
            why,
        })
}

/// Write `journal` (create or update). With `dry_run`, the API server validates and
/// admits it but stores nothing.
pub async fn write(cluster: &Cluster, journal: &Journal, dry_run: bool) -> Result<(), KubeError> {
    let ns = cluster.namespace.as_str();
    let name = object_name(&journal.gateway);
    let api: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), ns);
    let cm = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": match crate::core::limits::gateway_label(&journal.gateway) {
                Some(g) => json!({"app.kubernetes.io/managed-by": "vpnmig", "vpnmig.bnerd.net/gateway": g}),
                // Too long for a label value (issue 14 item 8): the ConfigMap's name has it.
                None => json!({"app.kubernetes.io/managed-by": "vpnmig"}),
            },
            "annotations": {
                "vpnmig.bnerd.net/recover": format!("vpnmig rollback {} -n {ns}", journal.gateway),
            },
        },
        "data": {
            "journal.json": serde_json::to_string_pretty(journal).expect("journals serialize"),
            "phase": journal.phase.as_str(),
            "old-ipsecgateway.yaml": crate::core::yaml::to_yaml(&journal.old_manifest),
        }
    });
    let mut pp = PatchParams::apply(FIELD_MANAGER).force();
    if dry_run {
        pp = pp.dry_run();
    }
    let patch = Patch::Apply(&cm);
    cluster
        .call("apply", &format!("configmap/{name}"), Some(ns), || {
            api.patch(&name, &pp, &patch)
        })
        .await
        .map(|_| ())
}

/// Archive `journal` (a finished window that a new cutover is about to replace) in its own
/// ConfigMap `vpnmig-NAME.window-N`, N from `first` on (issue 21 item 7): key
/// `archived-journal.json` (not `journal.json`: no version reads it as a window under
/// way), label `vpnmig.bnerd.net/archived-window=N`. An archive of the same journal
/// already there (a run stopped between the archive and the new journal) is used again;
/// another one under that number moves to the next number (at most 100 tries). Returns
/// the window's number and the ConfigMap's name.
pub async fn archive(
    cluster: &Cluster,
    journal: &Journal,
    first: u32,
) -> Result<(u32, String), ArchiveError> {
    let ns = cluster.namespace.as_str();
    let api: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), ns);
    let text = serde_json::to_string_pretty(journal).expect("journals serialize");
    for n in first..first.saturating_add(100) {
        let name = archive_name(&journal.gateway, n);
        let existing = cluster
            .call("get", &format!("configmap/{name}"), Some(ns), || {
                api.get_opt(&name)
            })
            .await?;
        if let Some(cm) = existing {
            let same = cm
                .data
                .as_ref()
                .and_then(|d| d.get(ARCHIVE_KEY))
                .and_then(|t| Journal::from_json(t).ok())
                .is_some_and(|a| {
                    a.history_head == journal.history_head && a.history == journal.history
                });
            if same {
                return Ok((n, name));
            }
            continue;
        }
        let mut labels = serde_json::Map::new();
        labels.insert("app.kubernetes.io/managed-by".into(), json!("vpnmig"));
        labels.insert(ARCHIVE_LABEL.into(), json!(n.to_string()));
        if let Some(g) = crate::core::limits::gateway_label(&journal.gateway) {
            labels.insert("vpnmig.bnerd.net/gateway".into(), json!(g));
        }
        let cm = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": labels,
                "annotations": {
                    "vpnmig.bnerd.net/record": format!("vpnmig report {} -n {ns} --window {n}", journal.gateway),
                },
            },
            "data": {
                ARCHIVE_KEY: text,
                "phase": journal.phase.as_str(),
            }
        });
        let pp = PatchParams::apply(FIELD_MANAGER).force();
        let patch = Patch::Apply(&cm);
        cluster
            .call("apply", &format!("configmap/{name}"), Some(ns), || {
                api.patch(&name, &pp, &patch)
            })
            .await?;
        return Ok((n, name));
    }
    Err(ArchiveError::NoName(format!(
        "no free name for the archive of the journal of {} -n {ns}: configmaps {} to {} are taken by other journals",
        journal.gateway,
        archive_name(&journal.gateway, first),
        archive_name(&journal.gateway, first.saturating_add(99))
    )))
}

/// Why a journal could not be archived.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error(transparent)]
    Kube(#[from] KubeError),
    #[error("{0}")]
    NoName(String),
}

/// The archived journal of window `n` of `gateway`, if there is one.
pub async fn read_archived(
    cluster: &Cluster,
    gateway: &str,
    n: u32,
) -> Result<Option<(Journal, String)>, ReadError> {
    let ns = cluster.namespace.as_str();
    let name = archive_name(gateway, n);
    let Some(cm) = get_configmap(cluster, &name).await? else {
        return Ok(None);
    };
    let text = cm
        .data
        .as_ref()
        .and_then(|d| d.get(ARCHIVE_KEY))
        .ok_or_else(|| ReadError::Invalid {
            namespace: ns.into(),
            name: name.clone(),
            why: format!("no key {ARCHIVE_KEY}"),
        })?;
    let j = Journal::from_json(text).map_err(|why| ReadError::Invalid {
        namespace: ns.into(),
        name: name.clone(),
        why,
    })?;
    if j.gateway != gateway {
        return Err(ReadError::Invalid {
            namespace: ns.into(),
            name,
            why: format!("it archives a window of {}, not of {gateway}", j.gateway),
        });
    }
    Ok(Some((j, name)))
}

/// The number of the newest archived window of `gateway` in the cluster's namespace
/// (`vpnmig-NAME.window-N`), `None` when none is there or it cannot be read: what a
/// command that finds no journal names (a21g 09: `verify`, `rollback` and `report` said
/// "no journal" while the cluster kept an earlier window's record). At most 100 reads.
pub async fn newest_archive(cluster: &Cluster, gateway: &str) -> Option<u32> {
    let mut newest = None;
    for n in 1..=100 {
        match get_configmap(cluster, &archive_name(gateway, n)).await {
            Ok(Some(_)) => newest = Some(n),
            _ => break,
        }
    }
    newest
}

/// What to say of a gateway with no journal whose earlier window the cluster archived:
/// the record's command and where its saved IPsecGateway is; `None` without an archive.
pub async fn archive_hint(cluster: &Cluster, gateway: &str) -> Option<String> {
    let n = newest_archive(cluster, gateway).await?;
    let ns = &cluster.namespace;
    Some(format!(
        "the cluster keeps the record of its window {n} (ConfigMap {ns}/{}): `vpnmig report {gateway} -n {ns} --window {n}` shows it, with the IPsecGateway that window saved (its oldManifest); a rollback needs the bundle of its cutover (`--plan DIR`), which a machine that ran it keeps",
        archive_name(gateway, n)
    ))
}

/// The journals of earlier windows, for the window guard's estimate.
#[derive(Debug, Default)]
pub struct Listed {
    pub journals: Vec<Journal>,
    /// Where they were listed: `all namespaces`, or the namespace when listing every
    /// namespace was refused.
    pub scope: String,
    /// ConfigMaps with vpnmig's label that are not journals this version reads.
    pub unreadable: usize,
}

/// Every vpnmig journal (ConfigMaps labelled `app.kubernetes.io/managed-by=vpnmig`) in
/// every namespace, or, when that is forbidden, in the cluster's namespace; page by page.
pub async fn list(cluster: &Cluster) -> Result<Listed, KubeError> {
    match list_in(cluster, None).await {
        Err(KubeError::Forbidden { .. }) => {
            let ns = cluster.namespace.clone();
            let mut l = list_in(cluster, Some(&ns)).await?;
            l.scope = format!("namespace {ns}");
            Ok(l)
        }
        other => other,
    }
}

/// The journals of one namespace (`Some`) or of every namespace (`None`), page by page.
pub async fn list_in(cluster: &Cluster, namespace: Option<&str>) -> Result<Listed, KubeError> {
    use kube::api::ListParams;
    let api: Api<ConfigMap> = match namespace {
        Some(ns) => Api::namespaced(cluster.client.clone(), ns),
        None => Api::all(cluster.client.clone()),
    };
    let mut listed = Listed {
        scope: "all namespaces".into(),
        ..Default::default()
    };
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default()
            .labels("app.kubernetes.io/managed-by=vpnmig")
            .limit(super::list::PAGE);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = cluster
            .call("list", "configmaps (vpnmig journals)", namespace, || {
                api.list(&lp)
            })
            .await?;
        for cm in page.items {
            // An archived window (issue 21 item 7) is not a journal of a window under
            // way; `report --window N` reads it.
            if cm
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(ARCHIVE_LABEL))
            {
                continue;
            }
            match cm
                .data
                .as_ref()
                .and_then(|d| d.get("journal.json"))
                .map(|t| Journal::from_json(t))
            {
                Some(Ok(j)) => listed.journals.push(j),
                _ => listed.unreadable += 1,
            }
        }
        match page.metadata.continue_ {
            Some(t) if !t.is_empty() => token = Some(t),
            _ => return Ok(listed),
        }
    }
}
