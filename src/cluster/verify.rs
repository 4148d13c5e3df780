//! Reading what verification needs: the gateway (new kind, else old), its peers, and
//! `swanctl --list-sas` from the gateway pod's `strongswan` container, through the
//! Kubernetes exec API. The verdicts are `core::verify`'s.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams, ListParams};
use tokio::io::AsyncReadExt;

use super::{Cluster, KubeError};
use crate::core::model::{IPsecGateway, VPNGateway, VPNPeer};
use crate::core::swanctl::{self, Sas};
use crate::core::verify::{GatewayView, PeerView};

/// The gateway `name`: its VPNGateway and VPNPeers if migrated, else the IPsecGateway
/// (a baseline before the window).
pub async fn view(cluster: &Cluster, name: &str) -> Result<GatewayView, KubeError> {
    let ns = cluster.namespace.as_str();
    let new: Api<VPNGateway> = Api::namespaced(cluster.client.clone(), ns);
    if let Some(g) = cluster
        .call("get", &format!("vpngateway {name}"), Some(ns), || {
            new.get_opt(name)
        })
        .await?
    {
        let peers: Api<VPNPeer> = Api::namespaced(cluster.client.clone(), ns);
        let lp = ListParams::default();
        let all = cluster
            .call("list", "vpnpeers", Some(ns), || peers.list(&lp))
            .await?;
        let peers = all
            .items
            .into_iter()
            .filter(|p| p.spec.gateway_ref.name == name)
            .map(|p| {
                let ipsec = p.spec.ipsec.clone().unwrap_or_default();
                let st = p.status.clone().unwrap_or_default();
                PeerView {
                    name: p.metadata.name.clone().unwrap_or_default(),
                    address: ipsec.peer.address,
                    id: ipsec.peer.id,
                    remote_subnets: ipsec.remote_subnets,
                    conditions: Some((st.conditions, p.metadata.generation)),
                }
            })
            .collect();
        return Ok(GatewayView {
            object: format!("VPNGateway {ns}/{name}"),
            generation: g.metadata.generation,
            status: g.status.clone().unwrap_or_default(),
            pinned_fip: g.spec.endpoint.pinned_fip().map(str::to_string),
            pinned_cidr: g.spec.service_cidr.clone(),
            pinned_vips: g
                .spec
                .exposures
                .iter()
                .filter_map(|e| e.virtual_ip.clone().map(|v| (e.name.clone(), v)))
                .collect(),
            peers,
        });
    }
    let old: Api<IPsecGateway> = Api::namespaced(cluster.client.clone(), ns);
    let g = cluster
        .call("get", &format!("ipsecgateway {name}"), Some(ns), || {
            old.get_opt(name)
        })
        .await?
        .ok_or_else(|| KubeError::NotFound {
            what: format!("vpngateway or ipsecgateway {name}"),
            namespace: ns.to_string(),
        })?;
    Ok(GatewayView {
        object: format!("IPsecGateway {ns}/{name}"),
        generation: g.metadata.generation,
        status: g.status.clone().unwrap_or_default(),
        pinned_fip: g.spec.endpoint.pinned_fip().map(str::to_string),
        pinned_cidr: None,
        pinned_vips: g
            .spec
            .exposures
            .iter()
            .filter_map(|e| e.virtual_ip.clone().map(|v| (e.name.clone(), v)))
            .collect(),
        peers: g
            .spec
            .tunnels
            .iter()
            .map(|t| PeerView {
                name: t.name.clone(),
                address: t.peer.address.clone(),
                id: t.peer.id.clone(),
                remote_subnets: t.remote_subnets.clone(),
                conditions: None,
            })
            .collect(),
    })
}

/// `swanctl --list-sas` in a running pod of Deployment `name`, container `strongswan`,
/// parsed. `Err` says why the SAs could not be read.
pub async fn sas(cluster: &Cluster, name: &str) -> Result<Sas, String> {
    let ns = cluster.namespace.as_str();
    let deployments: Api<Deployment> = Api::namespaced(cluster.client.clone(), ns);
    let d = cluster
        .call("get", &format!("deployment {name}"), Some(ns), || {
            deployments.get_opt(name)
        })
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("deployment {name} not found in namespace {ns}"))?;
    let selector = d
        .spec
        .selector
        .match_labels
        .unwrap_or_default()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), ns);
    let lp = ListParams::default().labels(&selector);
    let list = cluster
        .call("list", "pods", Some(ns), || pods.list(&lp))
        .await
        .map_err(|e| e.to_string())?;
    let pod = list
        .items
        .iter()
        .find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .and_then(|p| p.metadata.name.clone())
        .ok_or_else(|| format!("no running pod of deployment {name}"))?;
    let params = AttachParams::default()
        .container("strongswan")
        .stdout(true)
        .stderr(true);
    let mut proc = pods
        .exec(&pod, ["swanctl", "--list-sas"], &params)
        .await
        .map_err(|e| format!("exec in pod {pod}: {e}"))?;
    let status = proc.take_status();
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(mut out) = proc.stdout() {
        out.read_to_string(&mut stdout)
            .await
            .map_err(|e| e.to_string())?;
    }
    if let Some(mut err) = proc.stderr() {
        let _ = err.read_to_string(&mut stderr).await;
    }
    if let Some(status) = status
        && let Some(s) = status.await
        && s.status.as_deref() == Some("Failure")
    {
        return Err(format!(
            "swanctl failed in pod {pod}: {} {}",
            s.message.unwrap_or_default(),
            stderr.trim()
        ));
    }
    let _ = proc.join().await;
    swanctl::parse(&stdout).map_err(|e| format!("swanctl output of pod {pod}: {e}"))
}
