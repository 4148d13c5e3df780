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
        let gateway_changed = last_change(&g.metadata, &format!("VPNGateway {ns}/{name}"));
        let peers = all
            .items
            .into_iter()
            .filter(|p| p.spec.gateway_ref.name == name)
            .map(|p| {
                let changed = later(
                    last_change(
                        &p.metadata,
                        &format!(
                            "VPNPeer {ns}/{}",
                            p.metadata.name.as_deref().unwrap_or_default()
                        ),
                    ),
                    gateway_changed.clone(),
                );
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
                    dpd: ipsec.dpd.clone(),
                    changed,
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
                dpd: t.dpd.clone(),
                changed: last_change(&g.metadata, &format!("IPsecGateway {ns}/{name}")),
            })
            .collect(),
        exposures: Vec::new(),
        reverse_exposures: Vec::new(),
        problems: lifecycle(g.metadata.deletion_timestamp.is_some(), None),
    })
}

/// When the object's spec (or metadata) was last written, and by whom, from
/// `metadata.managedFields` (status writes left out), else its creation: `(RFC 3339,
/// "OBJECT by MANAGER")`.
fn last_change(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    object: &str,
) -> Option<(String, String)> {
    let writes: Vec<(jiff::Timestamp, String)> = meta
        .managed_fields
        .iter()
        .flatten()
        .filter(|m| m.subresource.as_deref() != Some("status"))
        .filter_map(|m| Some((m.time.as_ref()?.0, m.manager.clone().unwrap_or_default())))
        .collect();
    // managedFields times are whole seconds: every manager of the latest one is named.
    let latest = writes.iter().map(|(t, _)| *t).max().map(|t| {
        let mut managers: Vec<&str> = writes
            .iter()
            .filter(|(w, _)| *w == t)
            .map(|(_, m)| m.as_str())
            .collect();
        managers.dedup();
        (t, managers.join(" or "))
    });
    match latest {
        Some((t, manager)) => Some((t.to_string(), format!("{object} by {manager}"))),
        None => meta
            .creation_timestamp
            .as_ref()
            .map(|t| (t.0.to_string(), format!("{object} (created)"))),
    }
}

/// The later of two [`last_change`]s.
fn later(a: Option<(String, String)>, b: Option<(String, String)>) -> Option<(String, String)> {
    let at = |x: &(String, String)| x.0.parse::<jiff::Timestamp>().ok();
    match (a, b) {
        (Some(a), Some(b)) => Some(if at(&b) > at(&a) { b } else { a }),
        (a, b) => a.or(b),
    }
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
    Ok(sas_and_start(cluster, name).await?.0)
}

/// [`sas`], and when the pod it ran in started its strongswan container: `(RFC 3339,
/// "pod NS/POD (strongswan started)")`, a reload of charon for [`PeerView::changed`].
pub async fn sas_and_start(
    cluster: &Cluster,
    name: &str,
) -> Result<(Result<Sas, String>, Option<(String, String)>), KubeError> {
    let out = match swanctl(cluster, name, &["--list-sas"]).await? {
        Ok(o) => o,
        Err(why) => return Ok((Err(why), None)),
    };
    let start = out.started.clone().map(|t| {
        (
            t,
            format!(
                "pod {}/{} (its strongswan started)",
                cluster.namespace, out.pod
            ),
        )
    });
    if let Some(why) = out.failed {
        return Ok((Err(why), start));
    }
    Ok((
        swanctl::parse(&out.stdout).map_err(|e| format!("swanctl output of pod {}: {e}", out.pod)),
        start,
    ))
}

/// `view`'s peers with the gateway pod's start counted as a change (a reload of charon).
pub fn reloaded(view: &mut GatewayView, start: Option<(String, String)>) {
    for p in &mut view.peers {
        p.changed = later(p.changed.take(), start.clone());
    }
}

/// The last exec of swanctl: `(command, started, ended)`. A caller whose own deadline
/// cut an attempt short names it instead of blaming the API server (F2).
type Exec = (String, std::time::Instant, Option<std::time::Instant>);
static IN_FLIGHT: std::sync::Mutex<Option<Exec>> = std::sync::Mutex::new(None);

/// Records an exec in [`IN_FLIGHT`] while it lives (its end when dropped, also when the
/// caller's deadline drops it).
struct InFlight;

impl InFlight {
    fn new(what: String) -> InFlight {
        *IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((what, std::time::Instant::now(), None));
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(e) = IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            e.2 = Some(std::time::Instant::now());
        }
    }
}

/// The exec of swanctl (`kubectl exec … -- swanctl --list-sas`) that was under way when
/// an attempt begun at `since` was cut short just now: started after `since` and not
/// ended before the last 500 ms.
pub fn exec_cut(since: std::time::Instant) -> Option<String> {
    let guard = IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner());
    let (what, started, ended) = guard.as_ref()?;
    (*started >= since && ended.is_none_or(|e| e.elapsed() < std::time::Duration::from_millis(500)))
        .then(|| what.clone())
}

/// How long an exec of `swanctl ARGS` may take: its own `--timeout N` plus 10 s, else
/// 20 s (a listing takes well under a second).
fn exec_bound(args: &[&str]) -> std::time::Duration {
    let own = args
        .iter()
        .position(|a| *a == "--timeout" || *a == "-t")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse::<u64>().ok());
    std::time::Duration::from_secs(own.map_or(20, |n| n + 10))
}

/// What `swanctl ARGS` did in a gateway pod.
#[derive(Clone, Debug, Default)]
pub struct SwanctlRun {
    pub pod: String,
    pub stdout: String,
    pub stderr: String,
    /// `Some(message)` when it exited non-zero (the exec status's message).
    pub failed: Option<String>,
    /// When the pod's strongswan container started (RFC 3339), if known.
    pub started: Option<String>,
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
    let Some(running) = list
        .items
        .iter()
        .find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
    else {
        return Ok(Err(format!("no running pod of deployment {name}")));
    };
    let pod = running.metadata.name.clone().unwrap_or_default();
    let pod_started = started_at(running);
    let params = AttachParams::default()
        .container("strongswan")
        .stdout(true)
        .stderr(true);
    let what = format!("pods/exec {pod}");
    let command: Vec<&str> = std::iter::once("swanctl")
        .chain(args.iter().copied())
        .collect();
    let shown = command.join(" ");
    let bound = exec_bound(args);
    let started = std::time::Instant::now();
    // Named from the request on: a caller whose own deadline cuts this short says this
    // command, not the API server, was under way.
    let in_flight = InFlight::new(format!(
        "`kubectl exec -n {ns} {pod} -c strongswan -- {shown}`"
    ));
    let hung = |pod: &str| {
        format!(
            "`kubectl exec -n {ns} {pod} -c strongswan -- {shown}` did not finish within {}s: the pod's strongSwan does not answer (vpnmig stopped waiting)",
            bound.as_secs()
        )
    };
    let Ok(exec) = tokio::time::timeout(bound, pods.exec(&pod, command, &params)).await else {
        return Ok(Err(hung(&pod)));
    };
    let mut proc = match exec {
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
    // stdout and stderr are read together: each is a small pipe, and a command that
    // fills one (swanctl prints its usage to stderr when it cannot reach charon) while
    // the other is read blocks both for ever (F2). The whole exec is bounded.
    let out = proc.stdout();
    let err = proc.stderr();
    let read = async {
        let mut stdout = String::new();
        let mut stderr = String::new();
        let o = async {
            match out {
                Some(mut o) => o.read_to_string(&mut stdout).await.map(|_| ()),
                None => Ok(()),
            }
        };
        let e = async {
            if let Some(mut e) = err {
                let _ = e.read_to_string(&mut stderr).await;
            }
        };
        let (o, ()) = tokio::join!(o, e);
        let status = match status {
            Some(s) => s.await,
            None => None,
        };
        (o, stdout, stderr, status)
    };
    let outcome = tokio::time::timeout(bound.saturating_sub(started.elapsed()), read).await;
    drop(in_flight);
    let Ok((read, stdout, stderr, status)) = outcome else {
        proc.abort();
        return Ok(Err(hung(&pod)));
    };
    if let Err(e) = read {
        return Ok(Err(format!("reading swanctl's output in pod {pod}: {e}")));
    }
    let mut failed = None;
    if let Some(s) = status
        && s.status.as_deref() == Some("Failure")
    {
        let code = s
            .details
            .as_ref()
            .and_then(|d| d.causes.as_ref())
            .and_then(|c| c.iter().find(|c| c.reason.as_deref() == Some("ExitCode")))
            .and_then(|c| c.message.as_deref())
            .and_then(|m| m.trim().parse::<i32>().ok());
        failed = Some(match code {
            Some(code) => format!(
                "`kubectl exec -n {ns} {pod} -c strongswan -- {shown}` exited {code}: {}",
                swanctl::exit_meaning(code, &stderr)
            ),
            None => format!(
                "`kubectl exec -n {ns} {pod} -c strongswan -- {shown}` failed: {}",
                s.message.unwrap_or_default()
            ),
        });
    }
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), proc.join()).await;
    Ok(Ok(SwanctlRun {
        pod,
        stdout,
        stderr,
        failed,
        started: pod_started,
    }))
}

/// When the pod's `strongswan` container (else the pod) last started, RFC 3339: charon
/// reloaded then, and what an older one logged is not today's cause.
fn started_at(pod: &Pod) -> Option<String> {
    let st = pod.status.as_ref();
    st.and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.iter().find(|c| c.name == "strongswan"))
        .and_then(|c| c.state.as_ref()?.running.as_ref()?.started_at.as_ref())
        .or_else(|| st.and_then(|s| s.start_time.as_ref()))
        .or(pod.metadata.creation_timestamp.as_ref())
        .map(|t| t.0.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// F6: the last change is the latest of the peer's, the gateway's and the pod's
    /// (a reload of charon); the strongswan container's own start comes first.
    #[test]
    fn the_latest_change_and_the_pods_start_are_chosen() {
        let at = |t: &str, w: &str| Some((t.to_string(), w.to_string()));
        assert_eq!(
            later(
                at("2026-12-02T05:40:02Z", "VPNPeer"),
                at("2026-12-02T05:41:00Z", "pod")
            ),
            at("2026-12-02T05:41:00Z", "pod")
        );
        assert_eq!(
            later(at("2026-12-02T05:40:02Z", "VPNPeer"), None),
            at("2026-12-02T05:40:02Z", "VPNPeer")
        );
        assert_eq!(
            later(None, at("2026-12-02T05:39:00Z", "VPNGateway")),
            at("2026-12-02T05:39:00Z", "VPNGateway")
        );
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "acme-x", "creationTimestamp": "2026-12-02T05:00:00Z"},
            "status": {
                "phase": "Running",
                "startTime": "2026-12-02T05:00:01Z",
                "containerStatuses": [
                    {"name": "other", "ready": true, "restartCount": 0, "image": "i", "imageID": "",
                     "state": {"running": {"startedAt": "2026-12-02T05:50:00Z"}}},
                    {"name": "strongswan", "ready": true, "restartCount": 1, "image": "i", "imageID": "",
                     "state": {"running": {"startedAt": "2026-12-02T05:42:00Z"}}}
                ]
            }
        }))
        .unwrap();
        assert_eq!(started_at(&pod).as_deref(), Some("2026-12-02T05:42:00Z"));
        let mut bare = pod.clone();
        bare.status.as_mut().unwrap().container_statuses = None;
        assert_eq!(started_at(&bare).as_deref(), Some("2026-12-02T05:00:01Z"));
        bare.status = None;
        assert_eq!(started_at(&bare).as_deref(), Some("2026-12-02T05:00:00Z"));
    }
}
