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
    let old: Api<IPsecGateway> = Api::namespaced(cluster.client.clone(), ns);
    let old_gw = cluster
        .call("get", &format!("ipsecgateway/{name}"), Some(ns), || {
            old.get_opt(name)
        })
        .await?;
    if let Some(g) = cluster
        .call("get", &format!("vpngateway/{name}"), Some(ns), || {
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
                    observed_generation: st.observed_generation,
                    grants: p
                        .spec
                        .authorization
                        .clone()
                        .map(|a| (a.exposures, a.reverse_exposures)),
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
            exposures: g.spec.exposures.iter().map(|e| e.name.clone()).collect(),
            reverse_exposures: g
                .spec
                .reverse_exposures
                .iter()
                .map(|e| e.name.clone())
                .collect(),
            problems: lifecycle(
                g.metadata.deletion_timestamp.is_some(),
                old_gw.as_ref().map(|_| "IPsecGateway"),
            ),
        });
    }
    let Some(g) = old_gw else {
        return Err(cluster
            .not_found(format!("vpngateway or ipsecgateway {name}"))
            .await);
    };
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
                observed_generation: None,
                grants: None,
            })
            .collect(),
        exposures: Vec::new(),
        reverse_exposures: Vec::new(),
        problems: lifecycle(g.metadata.deletion_timestamp.is_some(), None),
    })
}

/// What is wrong with the object itself, in words.
fn lifecycle(deleting: bool, other_kind: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    if deleting {
        out.push(
            "being deleted (deletionTimestamp set): the finalizer unwind is running".to_string(),
        );
    }
    if let Some(kind) = other_kind {
        out.push(format!("an {kind} of the same name exists too: a cutover or rollback is half done (see `vpnmig status`)"));
    }
    out
}

/// `swanctl --list-sas` in a running pod of Deployment `name`, container `strongswan`,
/// parsed. The outer `Err` is the cluster refusing or not answering (the command fails,
/// exit 1: nothing is known about the gateway); the inner one says why the gateway's
/// SAs could not be read (no pod, swanctl failed), which is a verdict about the gateway.
pub async fn sas(cluster: &Cluster, name: &str) -> Result<Result<Sas, String>, KubeError> {
    let out = match swanctl(cluster, name, &["--list-sas"]).await? {
        Ok(o) => o,
        Err(why) => return Ok(Err(why)),
    };
    if let Some(why) = out.failed {
        return Ok(Err(format!(
            "swanctl failed in pod {}: {why} {}",
            out.pod,
            swanctl::failure(&out.stderr)
        )));
    }
    Ok(swanctl::parse(&out.stdout).map_err(|e| format!("swanctl output of pod {}: {e}", out.pod)))
}

/// What `swanctl ARGS` did in a gateway pod.
#[derive(Clone, Debug, Default)]
pub struct SwanctlRun {
    pub pod: String,
    pub stdout: String,
    pub stderr: String,
    /// `Some(message)` when it exited non-zero (the exec status's message).
    pub failed: Option<String>,
}

/// `swanctl ARGS` in a running pod of Deployment `name`, container `strongswan`. The
/// outer `Err` is the cluster refusing or not answering; the inner one says why the
/// command could not be run in the gateway (no deployment, no running pod, the exec
/// refused about the pod).
pub async fn swanctl(
    cluster: &Cluster,
    name: &str,
    args: &[&str],
) -> Result<Result<SwanctlRun, String>, KubeError> {
    let ns = cluster.namespace.as_str();
    let deployments: Api<Deployment> = Api::namespaced(cluster.client.clone(), ns);
    let Some(d) = cluster
        .call("get", &format!("deployment/{name}"), Some(ns), || {
            deployments.get_opt(name)
        })
        .await?
    else {
        return Ok(Err(format!("deployment/{name} -n {ns} not found")));
    };
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
        .await?;
    let Some(pod) = list
        .items
        .iter()
        .find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .and_then(|p| p.metadata.name.clone())
    else {
        return Ok(Err(format!("no running pod of deployment {name}")));
    };
    let params = AttachParams::default()
        .container("strongswan")
        .stdout(true)
        .stderr(true);
    let what = format!("pods/exec {pod}");
    let command: Vec<&str> = std::iter::once("swanctl")
        .chain(args.iter().copied())
        .collect();
    let mut proc = match pods.exec(&pod, command, &params).await {
        Ok(p) => p,
        Err(e) => {
            // The exec is refused (401/403), answered about the pod (another 4xx: gone,
            // no such container), or not answered at all (5xx, 429, a dropped upgrade):
            // only the second says anything about the gateway. No answer is "could not
            // ask" (exit 1 in verify, "waiting" in a window), never a failed tunnel
            // (issue 9 item 0): a window must not roll back a working gateway on it.
            use kube::client::UpgradeConnectionError::ProtocolSwitch;
            let code = match &e {
                kube::Error::Api(s) => Some(s.code),
                kube::Error::UpgradeConnection(ProtocolSwitch(c)) => Some(c.as_u16()),
                _ => None,
            };
            let message = match &e {
                kube::Error::Api(s) => s.message.clone(),
                e => e.to_string(),
            };
            return match code {
                Some(403) => Err(KubeError::Forbidden {
                    verb: "create".into(),
                    what,
                    scope: format!(" in namespace {ns}"),
                    message,
                }),
                Some(401) => Err(KubeError::Unauthorized {
                    context: cluster.context.clone(),
                    verb: "create".into(),
                    what,
                }),
                Some(c) if (400..500).contains(&c) && c != 429 => {
                    Ok(Err(format!("exec in pod {pod}: {}", super::describe(&e))))
                }
                _ => Err(KubeError::Api {
                    verb: "create".into(),
                    what,
                    scope: format!(" in namespace {ns}"),
                    answer: e,
                }),
            };
        }
    };
    let status = proc.take_status();
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(mut out) = proc.stdout()
        && let Err(e) = out.read_to_string(&mut stdout).await
    {
        return Ok(Err(format!("reading swanctl's output in pod {pod}: {e}")));
    }
    if let Some(mut err) = proc.stderr() {
        let _ = err.read_to_string(&mut stderr).await;
    }
    let mut failed = None;
    if let Some(status) = status
        && let Some(s) = status.await
        && s.status.as_deref() == Some("Failure")
    {
        failed = Some(s.message.unwrap_or_default());
    }
    let _ = proc.join().await;
    Ok(Ok(SwanctlRun {
        pod,
        stdout,
        stderr,
        failed,
    }))
}
