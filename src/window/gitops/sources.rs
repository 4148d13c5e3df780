//! What an owner's source says: other Applications, extra peers in the source or live,
//! and the refresh.

use super::*;

/// Kind D: every other Argo CD Application whose markers are on kept object `obj`
/// (`what`) is checked like the owner: its current status must show the object `Synced`
/// and no ignoreDifferences of its may hide a difference. One that does not: `Some((why,
/// what to do))`, naming that Application and its repository copy, which must be fixed
/// first (putting the object back by hand would be undone by its next sync).
#[allow(clippy::too_many_arguments)]
pub(super) async fn other_apps(
    cluster: &Cluster,
    r: &gitops::OwnerRef,
    obj: &Value,
    customizations: &[(String, String)],
    group: &str,
    kind: &str,
    ns: &str,
    name: &str,
    what: &str,
) -> Result<Option<(String, String)>, Error> {
    for app in gitops::argo_apps_on(obj) {
        let found = match live::find(cluster, &app).await? {
            Found::One(o, v) => vec![(o, v)],
            Found::Many(all) => all,
            Found::None => Vec::new(),
        };
        for (other, v) in found {
            if r.kind == "Application" && gitops::same_owner(r, &other) {
                continue;
            }
            let automated = gitops::argo_automated(&v);
            let how = if automated {
                "it syncs automatically, so this happens whatever vpnmig does with the owner it suspended"
            } else {
                "its next sync (by hand or once automated) does it"
            };
            let shown = match gitops::argo_says(&v, group, kind, ns, name) {
                Some(gitops::ArgoSays::Synced) => {
                    match gitops::argo_ignored(&v, customizations, group, kind, ns, name) {
                        Some(rule) => format!(
                            "its {rule} hides a difference there, and its sync writes its repository's copy"
                        ),
                        None => continue,
                    }
                }
                Some(gitops::ArgoSays::OutOfSync) => {
                    "its status shows it OutOfSync: its sync overwrites it with its repository's copy".into()
                }
                Some(gitops::ArgoSays::Prunes) => {
                    "its status lists it with requiresPruning: its source no longer defines it, and its sync deletes it".into()
                }
                Some(gitops::ArgoSays::Absent) => {
                    "its status does not list it: whether its sync changes or prunes it cannot be told".into()
                }
                Some(gitops::ArgoSays::CannotTell(why)) => {
                    format!("its status cannot tell ({why})")
                }
                None => format!(
                    "its status cannot tell ({})",
                    gitops::status_blind(&v).unwrap_or_else(|| "not current".into())
                ),
            };
            return Ok(Some((
                format!(
                    "{what} carries the tracking markers of another Application, {}, and {shown}; {how}",
                    other.display()
                ),
                format!(
                    "Fix {}'s repository copy first (`argocd app diff {}`; `argocd app manifests {} --source git`), or take its markers off the object; putting the object back by hand alone is undone by its next sync. Then `vpnmig status -n {ns}` and run the window's command again",
                    other.display(),
                    gitops::argocd_app(&other),
                    gitops::argocd_app(&other)
                ),
            )));
        }
    }
    Ok(None)
}

/// The names of the VPNPeers window `j` made (its targets).
pub(super) fn made_peers(j: &crate::core::journal::Journal) -> Vec<&str> {
    j.targets
        .iter()
        .filter(|t| t["kind"] == "VPNPeer")
        .filter_map(|t| t.pointer("/metadata/name").and_then(Value::as_str))
        .collect()
}

/// A VPNPeer the owner's source defines on the gateway of finished window `j` (its
/// status: Argo CD), which the window did not make (a21d attack 6): a second peer flips the
/// gateway to default-deny, so the window's peer reaches nothing, and the tunnel goes
/// dark while its IKE SA is up. One that is live and names another gateway is no
/// concern; one that is not live yet (its sync would create it) names a gateway the
/// cluster cannot show. `Some((why, what to do))`: the owner stays suspended.
pub(super) async fn extra_in_source(
    cluster: &Cluster,
    owner: &gitops::OwnerRef,
    obj: &Value,
    j: &crate::core::journal::Journal,
    verb: &str,
) -> Result<Option<(String, String)>, Error> {
    use crate::core::model::{NEW_GROUP, VERSION};
    let (ns, gw) = (&j.namespace, &j.gateway);
    let made = made_peers(j);
    let mut found = Vec::new();
    for (peer, status) in gitops::argo_extra_peers(obj, ns, &made) {
        let api = format!("{NEW_GROUP}/{VERSION}");
        let what = object_ref("VPNPeer", &peer, ns);
        match live::get_kept(cluster, &api, "VPNPeer", ns, &peer).await? {
            Some(p) => {
                let on = p
                    .pointer("/spec/gatewayRef/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if on == gw.as_str() {
                    found.push(format!(
                        "{what} (live, spec.gatewayRef.name {gw}; status {status})"
                    ));
                }
            }
            None => found.push(format!(
                "{what} (not live: its sync would create it, and which gateway its spec.gatewayRef names the cluster cannot show; status {status})"
            )),
        }
    }
    if found.is_empty() {
        return Ok(None);
    }
    Ok(Some((
        format!(
            "its source defines {} beside the window's {} on vpngateway/{gw} -n {ns}: a second VPNPeer flips the gateway to default-deny, and a peer without an authorization block then reaches nothing (the tunnel is dark while its IKE SA is up)",
            found.join(", "),
            if made.is_empty() {
                "peers".to_string()
            } else {
                made.iter()
                    .map(|p| format!("vpnpeer/{p}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
        format!(
            "Check what the repository defines (`argocd app manifests {} --source git`; `argocd app diff {}`): take the extra VPNPeer out, or give each peer on the gateway the authorization it needs (DESIGN.md: several peers grant only what their authorization names), then `vpnmig {verb} {gw} -n {ns}`",
            gitops::argocd_app(owner),
            gitops::argocd_app(owner)
        ),
    )))
}

/// The VPNPeers live on the gateway of window `j` that it did not make: after a restored
/// sync, what the owner added (a21d attack 6). Each as `vpnpeer/NAME -n NS (written by
/// …)`.
pub(super) async fn extra_live(
    cluster: &Cluster,
    j: &crate::core::journal::Journal,
) -> Result<Vec<String>, Error> {
    let made = made_peers(j);
    let peers: Vec<crate::core::model::VPNPeer> =
        crate::cluster::list::all(cluster, Some(&j.namespace)).await?;
    Ok(peers
        .iter()
        .filter(|p| p.spec.gateway_ref.name == j.gateway)
        .filter_map(|p| p.metadata.name.as_deref())
        .filter(|n| !made.contains(n))
        .map(|n| object_ref("VPNPeer", n, &j.namespace))
        .collect())
}

/// The merge patch that asks Argo CD for a refresh (`argocd app get NAME --refresh`).
pub(super) fn refresh_patch() -> Value {
    serde_json::json!({"metadata": {"annotations": {gitops::ARGO_REFRESH: "normal"}}})
}

/// Ask Argo CD to compare Application `owner` (as read: `obj`) with its source now, and
/// wait (at most [`COMPARED_WITHIN`]) for the comparison it writes. `Ok(Ok(owner))`: the
/// owner with a status written after the request; `Ok(Err(why))`: none came.
pub(super) async fn refreshed(
    cluster: &Cluster,
    owner: &gitops::OwnerRef,
    obj: &Value,
) -> Result<Result<Value, String>, Error> {
    let mut since = gitops::status_mark(obj);
    let asked = live::patch(cluster, owner, &refresh_patch()).await;
    since.refresh_asked = asked.is_ok() && !since.refresh_asked;
    let deadline = tokio::time::Instant::now() + COMPARED_WITHIN;
    loop {
        if let Found::One(_, now) = live::find(cluster, owner).await?
            && gitops::status_after(&since, &now)
        {
            return Ok(Ok(now));
        }
        if tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    let at = obj
        .pointer("/status/reconciledAt")
        .and_then(Value::as_str)
        .map(|t| format!("its status is a comparison from {t} (status.reconciledAt)"))
        .unwrap_or_else(|| {
            "its status shows no time it was compared (no status.reconciledAt)".into()
        });
    Ok(Err(match asked {
        Ok(_) => format!(
            "{at}, and Argo CD did not compare it again within {}s after vpnmig asked it to refresh (annotation {}=normal)",
            COMPARED_WITHIN.as_secs(),
            gitops::ARGO_REFRESH
        ),
        Err(e) => format!("{at}, and vpnmig could not ask it to refresh ({e})"),
    }))
}
