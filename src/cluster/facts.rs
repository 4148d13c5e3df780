//! Reading what a live plan needs: the IPsecGateway verbatim, its PSK Secret, the new
//! objects if they exist, every other gateway, the API server's dry run, and the
//! permissions cutover and rollback need. The decisions are `core::live`'s.

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};

use super::{Cluster, KubeError, list};
use crate::core::input::Source;
use crate::core::live::{DryRunError, Facts, NEEDS, OtherGateway};
use crate::core::model::{IPsecGateway, VPNGateway, VPNPeer};
use crate::core::plan::Plan;

/// Why the live gateway could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Kube(#[from] KubeError),
    #[error(transparent)]
    Input(#[from] crate::core::input::InputError),
}

/// The gateway `name` in the cluster's namespace, with its PSK Secret if it exists.
pub async fn source(cluster: &Cluster, name: &str) -> Result<Source, SourceError> {
    let ns = cluster.namespace.as_str();
    let ar = ApiResource::erase::<IPsecGateway>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), ns, &ar);
    let what = format!("ipsecgateway/{name}");
    let Some(obj) = cluster
        .call("get", &what, Some(ns), || api.get_opt(name))
        .await?
    else {
        return Err(cluster.not_found(what).await.into());
    };
    source_of(
        cluster,
        serde_json::to_value(&obj).expect("objects serialize"),
    )
    .await
}

/// An IPsecGateway already read (`raw`, e.g. from a list) with its PSK Secret, read from
/// its namespace: one `get` per gateway.
pub async fn source_of(cluster: &Cluster, raw: serde_json::Value) -> Result<Source, SourceError> {
    let ns = raw
        .pointer("/metadata/namespace")
        .and_then(|v| v.as_str())
        .unwrap_or(cluster.namespace.as_str())
        .to_string();
    let ns = ns.as_str();
    let secret_name = raw
        .pointer("/spec/auth/pskSecretRef/name")
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string();
    let secrets: Api<Secret> = Api::namespaced(cluster.client.clone(), ns);
    // A Secret we may not read is a finding (the plan goes on), not the end of the plan.
    let (secret, secret_error) = if secret_name.is_empty() {
        (None, None)
    } else {
        match cluster
            .call("get", &format!("secret/{secret_name}"), Some(ns), || {
                secrets.get_opt(&secret_name)
            })
            .await
        {
            Ok(s) => (s, None),
            Err(e) => (None, Some(refusal(e)?)),
        }
    };
    let secrets = secret
        .map(|s| vec![serde_json::to_value(&s).expect("secrets serialize")])
        .unwrap_or_default();
    let mut source = Source::from_live(
        raw,
        &format!("context {}, namespace {ns}", cluster.context),
        secrets,
    )?;
    source.secret_error = secret_error;
    Ok(source)
}

/// A call's failure as a fact the checks judge, or the end of the command. Only a
/// refusal (401, 403) is an answer a check can turn into a finding; a server that was
/// not reached, gave no answer in time or failed after the retries said nothing, and
/// "could not ask" is never a verdict (issue 9 item 0; DESIGN.md §4.9): exit 1.
pub(crate) fn refusal(e: KubeError) -> Result<String, KubeError> {
    match e {
        KubeError::Forbidden { .. } | KubeError::Unauthorized { .. } => Ok(e.to_string()),
        e => Err(e),
    }
}

/// Every gateway of either kind in all namespaces but `me` (namespace, name): `Err(why)`
/// when they could not be listed (a refusal, said, never read as "none").
pub async fn other_gateways(
    cluster: &Cluster,
    me: &(String, String),
) -> Result<Result<Vec<OtherGateway>, String>, KubeError> {
    let others = async {
        let old: Vec<IPsecGateway> = list::all(cluster, None).await?;
        let new: Vec<VPNGateway> = list::all(cluster, None).await?;
        let key = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
            (
                m.namespace.clone().unwrap_or_default(),
                m.name.clone().unwrap_or_default(),
            )
        };
        let out: Vec<OtherGateway> = old
            .iter()
            .filter(|g| &key(&g.metadata) != me)
            .map(OtherGateway::from_ipsec)
            .chain(
                new.iter()
                    .filter(|g| &key(&g.metadata) != me)
                    .map(OtherGateway::from_vpn),
            )
            .collect();
        Ok::<_, KubeError>(out)
    }
    .await;
    Ok(match others {
        Ok(o) => Ok(o),
        Err(e) => Err(refusal(e)?),
    })
}

/// What the live checks need to know about `plan`'s surroundings.
pub async fn facts(
    cluster: &Cluster,
    plan: &Plan,
    server_dry_run: bool,
) -> Result<Facts, KubeError> {
    let ns = cluster.namespace.as_str();
    let mut existing = Vec::new();
    for (label, _) in plan.targets.objects() {
        let (kind, name) = label.split_once('/').unwrap_or_default();
        let ar = if kind == "VPNGateway" {
            ApiResource::erase::<VPNGateway>(&())
        } else {
            ApiResource::erase::<VPNPeer>(&())
        };
        let api: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), ns, &ar);
        if let Some(live) = cluster
            .call(
                "get",
                &format!("{}/{name}", kind.to_lowercase()),
                Some(ns),
                || api.get_opt(name),
            )
            .await?
        {
            // Cleaned like a saved manifest, so a diff shows what the plan would change.
            existing.push((
                label.clone(),
                crate::core::plan::clean_old_manifest(
                    &serde_json::to_value(&live).expect("objects serialize"),
                ),
            ));
        }
    }

    let me = (
        plan.source.namespace.clone().unwrap_or_default(),
        plan.source.name.clone(),
    );
    let others = other_gateways(cluster, &me).await?;

    let dry_run = if server_dry_run {
        let mut results = Vec::new();
        let pp = PatchParams::apply("vpnmig").force().dry_run();
        for (label, obj) in plan.targets.objects() {
            let (kind, name) = label.split_once('/').unwrap_or_default();
            let ar = if kind == "VPNGateway" {
                ApiResource::erase::<VPNGateway>(&())
            } else {
                ApiResource::erase::<VPNPeer>(&())
            };
            let api: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), ns, &ar);
            // Through the one retry policy (issue 9 item 8): a 5xx or no answer is retried,
            // and a call that still could not be made is "could not ask" (exit 1), never
            // a check that failed. Only the API's refusal of the object is a verdict.
            let what = format!("{} {name} (server-side dry run)", kind.to_lowercase());
            let patch = Patch::Apply(&obj);
            let outcome = match cluster
                .call("apply", &what, Some(ns), || api.patch(name, &pp, &patch))
                .await
            {
                Ok(_) => None,
                Err(KubeError::Api {
                    answer: kube::Error::Api(s),
                    ..
                }) if s.code < 500 => Some(DryRunError {
                    webhook_cannot_dry_run: crate::core::live::webhook_without_dry_run(&s.message),
                    message: s.message.clone(),
                }),
                Err(e) => return Err(e),
            };
            results.push((label.clone(), outcome));
        }
        Some(results)
    } else {
        None
    };

    let permissions = match permissions(cluster).await {
        Ok(p) => Ok(p),
        Err(e) => Err(refusal(e)?),
    };
    let schema = crds_schema(cluster, plan).await?;
    // The VPNPeers that already name the gateway: the operator counts them as its peers
    // (issue 21 item 9).
    let peer_ar = ApiResource::erase::<VPNPeer>(&());
    let strays = match list::raw(cluster, &peer_ar, Some(ns), None).await {
        Ok(peers) => {
            let peers: Vec<serde_json::Value> = peers
                .iter()
                .map(|p| serde_json::to_value(p).expect("objects serialize"))
                .collect();
            let targets: Vec<String> = plan
                .targets
                .peers
                .iter()
                .filter_map(|p| p.metadata.name.clone())
                .collect();
            Ok(crate::core::live::strays(
                &peers,
                ns,
                &plan.source.name,
                &targets,
            ))
        }
        Err(e) => Err(refusal(e)?),
    };
    Ok(Facts {
        existing,
        others,
        dry_run,
        permissions,
        schema,
        strays,
    })
}

/// Validate each target against the storage version schema of the cluster's CRD.
async fn crds_schema(
    cluster: &Cluster,
    plan: &Plan,
) -> Result<Result<Vec<(String, crate::core::schema::Report)>, String>, KubeError> {
    Ok(crd_schemas(cluster)
        .await?
        .map(|schemas| crate::core::schema::validate_targets(&plan.targets, &schemas)))
}

/// The storage version schemas of the VPNGateway and VPNPeer CRDs, each read once;
/// `Ok(Err(why))` when the API server refused to tell or a CRD has no versions.
pub async fn crd_schemas(
    cluster: &Cluster,
) -> Result<Result<crate::core::schema::TargetSchemas, String>, KubeError> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client.clone());
    let mut found = Vec::new();
    for crd_name in ["vpngateways.vpn.bnerd.net", "vpnpeers.vpn.bnerd.net"] {
        let crd = match cluster
            .call(
                "get",
                &format!("customresourcedefinition {crd_name}"),
                None,
                || crds.get(crd_name),
            )
            .await
        {
            Ok(crd) => crd,
            Err(e) => return Ok(Err(refusal(e)?)),
        };
        let Some(version) = crd
            .spec
            .versions
            .iter()
            .find(|v| v.storage)
            .or(crd.spec.versions.first())
        else {
            return Ok(Err(format!("{crd_name} has no versions")));
        };
        found.push(
            version
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref())
                .map(|s| serde_json::to_value(s).expect("schemas serialize")),
        );
    }
    let peer = found.pop().flatten();
    let gateway = found.pop().flatten();
    Ok(Ok(crate::core::schema::TargetSchemas { gateway, peer }))
}

/// SelfSubjectAccessReviews of `needs` (a window's asks beyond `core::live::NEEDS`, each in
/// its own namespace or in all): `(need, allowed)` as [`permissions`] answers.
pub async fn allowed(
    cluster: &Cluster,
    needs: &[crate::core::live::Need],
) -> Result<Vec<(String, bool)>, KubeError> {
    reviews(
        cluster,
        needs.iter().map(|n| {
            (
                n.display(),
                ResourceAttributes {
                    namespace: n.namespace.clone(),
                    verb: Some(n.verb.to_string()),
                    group: Some(n.group.clone()),
                    resource: Some(n.resource.clone()),
                    name: n.name.clone(),
                    ..Default::default()
                },
            )
        }),
    )
    .await
}

/// How many SelfSubjectAccessReviews are asked at once: the answers are independent, and
/// asked one after the other a window's 30-odd took a second of its preflight when the
/// API server was busy (a 100-gateway wave, `cargo bench --bench wave`).
const REVIEWS_IN_FLIGHT: usize = 8;

/// A SelfSubjectAccessReview of each `(label, attributes)`: `(label, allowed)` in the
/// order given; the first error ends it. The first is asked alone, the others
/// [`REVIEWS_IN_FLIGHT`] at a time once it was answered: a cluster that refuses or does
/// not answer the reviews is told so once, as when they were asked one by one.
async fn reviews(
    cluster: &Cluster,
    mut asks: impl Iterator<Item = (String, ResourceAttributes)>,
) -> Result<Vec<(String, bool)>, KubeError> {
    use futures::{StreamExt, TryStreamExt};
    let reviews: Api<SelfSubjectAccessReview> = Api::all(cluster.client.clone());
    let (reviews, pp) = (&reviews, &PostParams::default());
    let ask = |(label, attributes): (String, ResourceAttributes)| async move {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(attributes),
                ..Default::default()
            },
            ..Default::default()
        };
        let r = cluster
            .call("create", "selfsubjectaccessreview", None, || {
                reviews.create(pp, &review)
            })
            .await?;
        Ok::<_, KubeError>((label, r.status.is_some_and(|s| s.allowed)))
    };
    let Some(first) = asks.next() else {
        return Ok(Vec::new());
    };
    let mut out = vec![ask(first).await?];
    let rest: Vec<(String, bool)> = futures::stream::iter(asks)
        .map(ask)
        .buffered(REVIEWS_IN_FLIGHT)
        .try_collect()
        .await?;
    out.extend(rest);
    Ok(out)
}

/// SelfSubjectAccessReviews of everything cutover and rollback do (`core::live::NEEDS`)
/// in the cluster's namespace: `(need, allowed)`; `Err` when they could not be asked
/// (refused, or no answer: through [`Cluster::call`]'s one retry policy).
pub async fn permissions(cluster: &Cluster) -> Result<Vec<(String, bool)>, KubeError> {
    let ns = cluster.namespace.as_str();
    reviews(
        cluster,
        NEEDS.iter().map(|(verb, group, resource, sub)| {
            let need = if sub.is_empty() {
                format!("{verb} {resource}")
            } else {
                format!("{verb} {resource}/{sub}")
            };
            (
                format!("{need} in namespace {ns}"),
                ResourceAttributes {
                    namespace: Some(ns.to_string()),
                    verb: Some(verb.to_string()),
                    group: Some(group.to_string()),
                    resource: Some(resource.to_string()),
                    subresource: (!sub.is_empty()).then(|| sub.to_string()),
                    ..Default::default()
                },
            )
        }),
    )
    .await
}
