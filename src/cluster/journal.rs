//! The journal in the cluster: ConfigMap `vpnmig-<gateway>` in the gateway's namespace,
//! written with server-side apply (field manager `vpnmig`) before anything is touched and
//! after every step. Keys: `journal.json` (the document, `core::journal::Journal`),
//! `phase`, and `old-ipsecgateway.yaml` (the saved old manifest, ready for
//! `kubectl apply -f -`).

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use super::{Cluster, KubeError};
use crate::core::journal::{
    ARCHIVE_KEY, ARCHIVE_LABEL, Archived, Journal, Slot, archive_name, archive_names, archived,
    object_name, slot,
};

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
    /// The ConfigMap of the journal's name holds another gateway's archived window: a
    /// gateway named with a dot (`kells.window-1`) has the journal name the archive of
    /// `kells`'s window 1 took first (T11). Never read as this gateway's journal, never
    /// overwritten.
    #[error(
        "configmap/{name} -n {namespace} has the name of the journal of {of} but holds the archived record of window {window} of {gateway}: vpnmig will not read, overwrite or delete it"
    )]
    Archive {
        namespace: String,
        name: String,
        of: String,
        gateway: String,
        window: u32,
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
    // An archive is found by its labels, never by its name: one whose name is this
    // gateway's journal's is another gateway's record (T11).
    if let Archived::Of { window, journal } =
        archived(cm.metadata.labels.as_ref(), cm.data.as_ref())
    {
        return Err(ReadError::Archive {
            namespace: ns.into(),
            name,
            of: gateway.into(),
            gateway: journal.gateway,
            window,
        });
    }
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

/// Where the archive of `journal` as window `first` goes: the window's number and the
/// ConfigMap's name, and whether that ConfigMap is already this journal's archive (a run
/// stopped between the archive and the new journal). Reads each name it tries
/// ([`archive_names`], `get` only: a window's Role may not list ConfigMaps). A name taken
/// by something else (another gateway's journal, which `vpnmig-kells.window-1` is for
/// gateway `kells.window-1`, or any other object) moves to the next name, never to
/// another number (T11); only another archived window of the same gateway under that
/// number (its journal was lost and its windows counted again) moves to the next number.
pub async fn archive_slot(
    cluster: &Cluster,
    journal: &Journal,
    first: u32,
) -> Result<(u32, String, bool), ArchiveError> {
    let ns = cluster.namespace.as_str();
    let mut n = first;
    let mut numbers = 0;
    'number: while numbers < 100 {
        numbers += 1;
        for name in archive_names(&journal.gateway, n) {
            let held = get_configmap(cluster, &name).await.map_err(|e| match e {
                ReadError::Kube(k) => ArchiveError::Kube(k),
                other => ArchiveError::NoName(other.to_string()),
            })?;
            let held = held.map(|cm| archived(cm.metadata.labels.as_ref(), cm.data.as_ref()));
            match slot(held.as_ref(), journal, n) {
                Slot::Free => return Ok((n, name, false)),
                Slot::Same { window } => return Ok((window, name, true)),
                Slot::Numbered => {
                    n = n.saturating_add(1);
                    continue 'number;
                }
                Slot::Taken => {}
            }
        }
        return Err(ArchiveError::NoName(format!(
            "no free name for the archive of window {n} of {} -n {ns}: configmaps {} to {} are all taken by other objects",
            journal.gateway,
            archive_name(&journal.gateway, n),
            archive_names(&journal.gateway, n)
                .last()
                .unwrap_or_default()
        )));
    }
    Err(ArchiveError::NoName(format!(
        "no free number for the archive of the journal of {} -n {ns}: windows {first} to {n} are archived already",
        journal.gateway
    )))
}

/// Archive `journal` (a finished window that a new cutover is about to replace) in its own
/// ConfigMap (issue 21 item 7), as window `first` (its real number; see [`archive_slot`]
/// for the name, and the one case the number moves): key `archived-journal.json` (not
/// `journal.json`: no version reads it as a window under way), labels
/// `vpnmig.bnerd.net/archived-window=N` and the gateway's (where a label holds it), which
/// the readers find it by. Returns the window's number and the ConfigMap's name.
pub async fn archive(
    cluster: &Cluster,
    journal: &Journal,
    first: u32,
) -> Result<(u32, String), ArchiveError> {
    let ns = cluster.namespace.as_str();
    let api: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), ns);
    let text = serde_json::to_string_pretty(journal).expect("journals serialize");
    // A create, not an apply: a name another writer takes between the read and the write
    // (gateway kells.window-1's first journal) is answered 409 and the name read again,
    // never merged into (T11).
    let mut tries = 0;
    loop {
        tries += 1;
        let (n, name, there) = archive_slot(cluster, journal, first).await?;
        if there {
            return Ok((n, name));
        }
        let mut labels = serde_json::Map::new();
        labels.insert("app.kubernetes.io/managed-by".into(), json!("vpnmig"));
        labels.insert(ARCHIVE_LABEL.into(), json!(n.to_string()));
        if let Some(g) = crate::core::limits::gateway_label(&journal.gateway) {
            labels.insert("vpnmig.bnerd.net/gateway".into(), json!(g));
        }
        let cm: ConfigMap = serde_json::from_value(json!({
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
        }))
        .expect("a ConfigMap");
        let pp = kube::api::PostParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        match cluster
            .call("create", &format!("configmap/{name}"), Some(ns), || {
                api.create(&pp, &cm)
            })
            .await
        {
            Ok(_) => return Ok((n, name)),
            Err(KubeError::Api {
                answer: kube::Error::Api(s),
                ..
            }) if s.code == 409 && tries < 5 => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Why a journal could not be archived.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error(transparent)]
    Kube(#[from] KubeError),
    #[error("{0}")]
    NoName(String),
}

/// The archives of `gateway` in the cluster's namespace, window `only` or every one, as
/// (window, journal, ConfigMap name), by window then name. Found by their labels
/// (`list`), each checked by the `gateway` of the journal it holds (the gateway label is
/// absent for a long name); where listing ConfigMaps is forbidden (a window's Role), by
/// reading the names an archive takes ([`archive_names`]) until one is missing. Never a
/// gateway's own journal, whatever its name (T11).
async fn archives(
    cluster: &Cluster,
    gateway: &str,
    only: Option<u32>,
) -> Result<Vec<(u32, Journal, String)>, ReadError> {
    use kube::api::ListParams;
    let ns = cluster.namespace.as_str();
    let api: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), ns);
    let mut selector = format!("app.kubernetes.io/managed-by=vpnmig,{ARCHIVE_LABEL}");
    if let Some(n) = only {
        selector.push_str(&format!("={n}"));
    }
    if let Some(g) = crate::core::limits::gateway_label(gateway) {
        selector.push_str(&format!(",vpnmig.bnerd.net/gateway={g}"));
    }
    // An archive of `gateway` (of window `only`), or what says why it cannot be read.
    let keep = |cm: ConfigMap| -> Result<Option<(u32, Journal, String)>, ReadError> {
        let name = cm.metadata.name.clone().unwrap_or_default();
        let held = archived(cm.metadata.labels.as_ref(), cm.data.as_ref());
        if !held.of(gateway) || only.is_some_and(|n| held.window() != Some(n)) {
            return Ok(None);
        }
        match held {
            Archived::Of { window, journal } => Ok(Some((window, *journal, name))),
            Archived::Unreadable { why, .. } => Err(ReadError::Invalid {
                namespace: ns.into(),
                name,
                why,
            }),
            Archived::No => Ok(None),
        }
    };
    let mut found: Vec<(u32, Journal, String)> = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default()
            .labels(&selector)
            .limit(super::list::PAGE);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        match cluster
            .call("list", "configmaps (vpnmig archives)", Some(ns), || {
                api.list(&lp)
            })
            .await
        {
            Ok(page) => {
                for cm in page.items {
                    found.extend(keep(cm)?);
                }
                match page.metadata.continue_ {
                    Some(t) if !t.is_empty() => token = Some(t),
                    _ => break,
                }
            }
            Err(KubeError::Forbidden { .. }) => {
                found.clear();
                let numbers = match only {
                    Some(n) => n..=n,
                    None => 1..=100,
                };
                for n in numbers {
                    // The numbers end where nothing has the first name of one (an
                    // archive an older version numbered past a taken name is still
                    // found: that name is taken).
                    let mut any = false;
                    for name in archive_names(gateway, n) {
                        let Some(cm) = get_configmap(cluster, &name).await? else {
                            break;
                        };
                        any = true;
                        found.extend(keep(cm)?);
                    }
                    if !any {
                        break;
                    }
                }
                break;
            }
            Err(e) => return Err(e.into()),
        }
    }
    let order = |name: &str, n: u32| archive_names(gateway, n).position(|c| c == name);
    found.sort_by(|a, b| (a.0, order(&a.2, a.0), &a.2).cmp(&(b.0, order(&b.2, b.0), &b.2)));
    Ok(found)
}

/// The archived journal of window `n` of `gateway`, if there is one, and its ConfigMap's
/// name: found by its labels, never by its name ([`archives`]).
pub async fn read_archived(
    cluster: &Cluster,
    gateway: &str,
    n: u32,
) -> Result<Option<(Journal, String)>, ReadError> {
    Ok(archives(cluster, gateway, Some(n))
        .await?
        .into_iter()
        .next()
        .map(|(_, j, name)| (j, name)))
}

/// The archived journal of window `n` of `gateway` in ConfigMap `name` (what a journal's
/// `earlierWindows` recorded), if that ConfigMap is that archive; else the one its labels
/// find ([`read_archived`]: it was moved or written back under another name).
pub async fn read_archived_at(
    cluster: &Cluster,
    gateway: &str,
    n: u32,
    name: &str,
) -> Result<Option<(Journal, String)>, ReadError> {
    if let Some(cm) = get_configmap(cluster, name).await? {
        match archived(cm.metadata.labels.as_ref(), cm.data.as_ref()) {
            Archived::Of { window, journal } if window == n && journal.gateway == gateway => {
                return Ok(Some((*journal, name.to_string())));
            }
            Archived::Unreadable {
                window,
                gateway: Some(g),
                why,
            } if window == n && g == gateway => {
                return Err(ReadError::Invalid {
                    namespace: cluster.namespace.clone(),
                    name: name.to_string(),
                    why,
                });
            }
            _ => {}
        }
    }
    read_archived(cluster, gateway, n).await
}

/// The newest archived window of `gateway` in the cluster's namespace (found by its
/// labels, [`archives`]) and its ConfigMap's name, `None` when none is there or it cannot
/// be read: what a command that finds no journal names (a21g 09: `verify`, `rollback` and
/// `report` said "no journal" while the cluster kept an earlier window's record).
pub async fn newest_archive(cluster: &Cluster, gateway: &str) -> Option<(u32, String)> {
    archives(cluster, gateway, None)
        .await
        .ok()?
        .into_iter()
        .last()
        .map(|(n, _, name)| (n, name))
}

/// What to say of a gateway with no journal whose earlier window the cluster archived:
/// the record's command and where its saved IPsecGateway is; `None` without an archive.
pub async fn archive_hint(cluster: &Cluster, gateway: &str) -> Option<String> {
    let (n, name) = newest_archive(cluster, gateway).await?;
    let ns = &cluster.namespace;
    Some(format!(
        "the cluster keeps the record of its window {n} (ConfigMap {ns}/{name}): `vpnmig report {gateway} -n {ns} --window {n}` shows it, with the IPsecGateway that window saved (its oldManifest); a rollback needs the bundle of its cutover (`--plan DIR`), which a machine that ran it keeps"
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
