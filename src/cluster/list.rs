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
    pages(cluster, &api, &plural, namespace, None).await
}

/// Every object of the kind `ar` in `namespace` (`None`: all namespaces) matching the
/// label `selector`, verbatim (unknown fields kept), page by page.
pub async fn raw(
    cluster: &Cluster,
    ar: &kube::api::ApiResource,
    namespace: Option<&str>,
    selector: Option<&str>,
) -> Result<Vec<kube::api::DynamicObject>, KubeError> {
    let api: Api<kube::api::DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(cluster.client.clone(), ns, ar),
        None => Api::all_with(cluster.client.clone(), ar),
    };
    pages(cluster, &api, &ar.plural, namespace, selector).await
}

async fn pages<K>(
    cluster: &Cluster,
    api: &Api<K>,
    plural: &str,
    namespace: Option<&str>,
    selector: Option<&str>,
) -> Result<Vec<K>, KubeError>
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut items = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().limit(PAGE);
        if let Some(s) = selector {
            lp = lp.labels(s);
        }
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = cluster
            .call("list", plural, namespace, || api.list(&lp))
            .await?;
        items.extend(page.items);
        match page.metadata.continue_ {
            Some(t) if !t.is_empty() => token = Some(t),
            _ => return Ok(items),
        }
    }
}
