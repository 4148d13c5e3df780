//! The journal in the cluster: ConfigMap `vpnmig-<gateway>` in the gateway's namespace,
//! written with server-side apply (field manager `vpnmig`) before anything is touched and
//! after every step. Keys: `journal.json` (the document, `core::journal::Journal`),
//! `phase`, and `old-ipsecgateway.yaml` (the saved old manifest, ready for
//! `kubectl apply -f -`).

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use super::{Cluster, KubeError};
use crate::core::journal::{Journal, object_name};

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

/// The journal of `gateway`, if there is one.
pub async fn read(cluster: &Cluster, gateway: &str) -> Result<Option<Journal>, ReadError> {
    let ns = cluster.namespace.as_str();
    let name = object_name(gateway);
    let api: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), ns);
    let Some(cm) = cluster
        .call("get", &format!("configmap/{name}"), Some(ns), || {
            api.get_opt(&name)
        })
        .await?
    else {
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
