//! Paginated lists of the operator's objects (500 a page, like kubectl's chunking), so a
//! cluster with thousands of gateways is read in bounded requests.

use kube::api::{Api, ListParams};
use kube::core::NamespaceResourceScope;
use serde::de::DeserializeOwned;

use super::{Cluster, KubeError};

/// Objects per page.
pub const PAGE: u32 = 500;

/// Every object of type `K` in `namespace` (`None`: all namespaces), page by page.
pub async fn all<K>(cluster: &Cluster, namespace: Option<&str>) -> Result<Vec<K>, KubeError>
where
    K: kube::Resource<Scope = NamespaceResourceScope> + Clone + DeserializeOwned + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = match namespace {
        Some(ns) => Api::namespaced(cluster.client.clone(), ns),
        None => Api::all(cluster.client.clone()),
    };
    let plural = K::plural(&Default::default()).to_string();
    let mut items = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().limit(PAGE);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = cluster
            .call("list", &plural, namespace, || api.list(&lp))
            .await?;
        items.extend(page.items);
        match page.metadata.continue_ {
            Some(t) if !t.is_empty() => token = Some(t),
            _ => return Ok(items),
        }
    }
}
