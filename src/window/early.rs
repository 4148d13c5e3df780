//! A window whose repository change was merged early (C09/C10): the window stopped before
//! vpnmig applied anything (phase `started` to `deleted`, e.g. a parent re-armed the owner
//! before the delete), and the owner's sync of the merged source pruned the IPsecGateway
//! and applied the VPNGateway and VPNPeers itself. Going on adopts them (`cutover`, only
//! when every pinned value is the plan's); going back refuses before any change (the
//! source defines them, and the client's only VPNPeer is never deleted while no
//! IPsecGateway exists).

use serde_json::Value;

use crate::cluster::gitops::{self as live, Found};
use crate::cluster::{Cluster, objects};
use crate::core::gitops::{self, OwnerRef};
use crate::core::journal::{Journal, Phase};
use crate::core::verify::Verdict;
use crate::core::{reference, scope};
use crate::exit;
use crate::window::error::Error;

/// The new objects as the owner's sync applied them.
pub(crate) struct Merged {
    /// The live VPNGateway of the window's name.
    pub(crate) gateway: Value,
    /// Every live VPNPeer whose `spec.gatewayRef.name` is the gateway.
    pub(crate) peers: Vec<Value>,
    /// Who applied them: the owner and its source when known, the field managers.
    pub(crate) by: String,
    /// The owner whose controller wrote them, when one is found.
    pub(crate) owner: Option<OwnerRef>,
    /// The owner's current status (read now, not blind) lists the VPNGateway and not the
    /// IPsecGateway: its merged source is read, not assumed.
    pub(crate) proven: bool,
}

impl Merged {
    /// `vpngateway/acme, vpnpeer/acme -n tenant-acme`.
    pub(crate) fn objects(&self, ns: &str) -> String {
        let names: Vec<String> = std::iter::once(&self.gateway)
            .chain(&self.peers)
            .map(|o| {
                format!(
                    "{}/{}",
                    o["kind"].as_str().unwrap_or("?").to_lowercase(),
                    o.pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                )
            })
            .collect();
        format!("{} -n {ns}", names.join(", "))
    }
}

/// Whether `j`'s window is before its apply with nothing applied by vpnmig.
fn before_apply(j: &Journal) -> bool {
    j.phase < Phase::Applied && j.target_uids.is_empty()
}

/// The early merge of window `j`, when the cluster shows it: the window applied nothing,
/// no IPsecGateway of its name exists (not even one being deleted), and a VPNGateway of
/// its name exists that vpnmig did not make and a GitOps controller wrote.
pub(crate) async fn merged(cluster: &Cluster, j: &Journal) -> Result<Option<Merged>, Error> {
    if !before_apply(j) {
        return Ok(None);
    }
    let (ns, name) = (j.namespace.as_str(), j.gateway.as_str());
    if objects::get(cluster, "IPsecGateway", name).await?.is_some() {
        return Ok(None);
    }
    let Some(gateway) = objects::get(cluster, "VPNGateway", name).await? else {
        return Ok(None);
    };
    if scope::proof(&gateway, name, &j.target_uids).is_ok() {
        return Ok(None);
    }
    let managers: Vec<String> = scope::managers(&gateway);
    if gitops_managers(&managers).is_empty() {
        return Ok(None);
    }
    let peers: Vec<Value> = objects::list(cluster, "VPNPeer")
        .await?
        .into_iter()
        .filter(|p| p.pointer("/spec/gatewayRef/name").and_then(Value::as_str) == Some(name))
        .collect();
    // The owner whose controller wrote it: first one the markers on it name (a21o D14: a
    // merge that moved the objects to another Kustomization was credited to the paused
    // one, and the one that applied them was never named), then one the journal holds.
    let mut candidates: Vec<OwnerRef> = gitops::detect(&gateway)
        .into_iter()
        .filter_map(|m| m.owner)
        .collect();
    candidates.extend(j.gitops.iter().map(|r| r.owner.clone()));
    let mut owner = None;
    let mut proven = false;
    let mut source = String::new();
    for c in candidates {
        if !gitops::written_by(&c.kind, &gateway) {
            continue;
        }
        if let Ok(Found::One(o, obj)) = live::find(cluster, &c).await {
            let lists = |kind: &str| gitops::owner_state(&obj, kind, ns, name).source_lists;
            proven = lists("VPNGateway") == Some(true) && lists("IPsecGateway") == Some(false);
            source = source_of(&obj);
            owner = Some(o);
        } else {
            owner = Some(c);
        }
        break;
    }
    // Its sync is said only when the owner's status proves that its source defines them:
    // a field manager's name alone is anyone's to claim (a21o D04: objects applied by hand
    // as kustomize-controller were recorded as the merge of a source never changed).
    let by = if proven {
        format!(
            "{}'s sync{source} (field manager {})",
            owner.as_ref().map(OwnerRef::display).unwrap_or_default(),
            gitops_managers(&managers).join(", ")
        )
    } else {
        format!(
            "field manager {}, as {}'s sync writes (not proven to be its sync of a merged source: {}; an apply by hand under that field manager reads the same)",
            gitops_managers(&managers).join(", "),
            owner
                .as_ref()
                .map(OwnerRef::display)
                .unwrap_or_else(|| "a GitOps controller".into()),
            if owner.is_some() {
                "its status, read now, does not list the VPNGateway without the IPsecGateway"
            } else {
                "no owner that wrote them was found"
            }
        )
    };
    Ok(Some(Merged {
        gateway,
        peers,
        by,
        owner,
        proven,
    }))
}

/// The GitOps controllers' field managers among `managers`, each once.
fn gitops_managers(managers: &[String]) -> Vec<&str> {
    let mut out: Vec<&str> = managers
        .iter()
        .map(String::as_str)
        .filter(|m| gitops::ARGO_MANAGERS.contains(m) || gitops::FLUX_MANAGERS.contains(m))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// ` of its source GitRepository/platform ./tenants/acme at main@sha1:…`, or of an Argo CD
/// Application's repository, path and revision; empty when the owner does not say.
fn source_of(owner: &Value) -> String {
    let t = |p: &str| owner.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let (from, revision) = if owner["kind"] == "Application" {
        (
            format!("{} {}", t("/spec/source/repoURL"), t("/spec/source/path")),
            t("/status/sync/revision"),
        )
    } else {
        (
            format!(
                "{}/{} {}",
                t("/spec/sourceRef/kind"),
                t("/spec/sourceRef/name"),
                t("/spec/path")
            ),
            t("/status/lastAppliedRevision"),
        )
    };
    let from = from.trim();
    if from.is_empty() || from == "/" {
        return String::new();
    }
    if revision.is_empty() {
        format!(" of its source {from}")
    } else {
        format!(" of its source {from} at {revision}")
    }
}

/// Every difference between what the owner applied and the plan (the journal's targets),
/// as `verify` compares pinned values ([`reference::compare`]): `VPNPeer ns/name
/// spec.ipsec.remoteSubnets: seen, the plan pins wanted; …`; a target missing, and a peer
/// of the gateway the plan does not have (a second peer turns the gateway default-deny).
pub(crate) fn differences(j: &Journal, m: &Merged) -> Vec<String> {
    let live = |t: &Value| {
        let (kind, name) = (t["kind"].as_str(), t.pointer("/metadata/name"));
        std::iter::once(&m.gateway)
            .chain(&m.peers)
            .find(|o| o["kind"].as_str() == kind && o.pointer("/metadata/name") == name)
    };
    let mut out = Vec::new();
    for t in &j.targets {
        for row in reference::compare(t, live(t), "the plan") {
            if row.verdict != Verdict::Ok {
                out.push(format!("{} {}: {}", row.object, row.what, row.detail));
            }
        }
    }
    let planned = j.peer_names();
    for p in &m.peers {
        let n = p
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("?");
        if !planned.iter().any(|x| x == n) {
            out.push(format!(
                "VPNPeer {}/{n} spec.gatewayRef.name: {}, the plan has no such peer (a second peer turns the gateway default-deny)",
                j.namespace, j.gateway
            ));
        }
    }
    out
}

/// The way back a stop before the delete names: the rollback closes the journal.
pub(crate) fn way_back_before_delete(name: &str, ns: &str) -> String {
    format!("`vpnmig rollback {name} -n {ns}` closes the journal and keeps the IPsecGateway")
}

/// [`way_back_before_delete`] in an early merge (no IPsecGateway exists, the source
/// defines the new objects): the rollback refuses there ([`no_rollback`]), so going back
/// is the revert of the merge first.
pub(crate) fn way_back_merged(name: &str, ns: &str) -> String {
    format!(
        "going back is not `vpnmig rollback {name} -n {ns}` alone: the repository change was merged early and no IPsecGateway exists, so the rollback refuses (it never deletes the client's only VPNPeer then); revert the merge first and let the owner sync it, then `vpnmig rollback {name} -n {ns}`"
    )
}

/// A stop of the early merge's adoption (its pause: a parent re-arms the owner) with the
/// way back it names as an early merge's ([`way_back_merged`]), never "`vpnmig rollback`
/// … keeps the IPsecGateway" where none exists (a21o).
pub(crate) fn merged_way_back(e: Error, name: &str, ns: &str) -> Error {
    match e {
        Error::Stop {
            code,
            message,
            hint: Some(h),
        } => Error::Stop {
            code,
            message,
            hint: Some(h.replace_text(
                &way_back_before_delete(name, ns),
                &way_back_merged(name, ns),
            )),
        },
        other => other,
    }
}

/// The rollback's refusal in an early merge: nothing changed, the source defines the new
/// objects, so going back needs the merge reverted first; going on is the cutover.
pub(crate) fn no_rollback(j: &Journal, m: &Merged) -> Error {
    let (ns, name) = (j.namespace.as_str(), j.gateway.as_str());
    let resume_owner = match &m.owner {
        Some(o) => format!(
            "let {} sync the revert (it prunes the new objects and re-creates the IPsecGateway; resume it if it is suspended)",
            o.display()
        ),
        None => "let the owner sync the revert (it prunes the new objects and re-creates the IPsecGateway)".into(),
    };
    Error::Stop {
        code: exit::REFUSED,
        message: format!(
            "the window of {ns}/{name} is at journal phase {} and vpnmig applied nothing, but ipsecgateway/{name} -n {ns} is gone and {} were applied by {}: the repository change was merged early, and the owner's source now defines the new objects, not the IPsecGateway. A rollback would delete the client's VPNPeer while no IPsecGateway exists, and the owner would prune a re-created IPsecGateway (or re-create what the rollback deletes); nothing was changed",
            j.phase,
            m.objects(ns),
            m.by
        ),
        hint: Some(crate::window::error::hint!(
            "go on: `{}` finishes the window with these objects once every pinned value equals the plan's; or, to go back, revert the merge first and {resume_owner}, then `{}`",
            crate::window::error::Run::cutover(name, ns),
            crate::window::error::Run::rollback(name, ns)
        )),
    }
}

/// Who wrote VPNGateway `gw` when vpnmig never applied it (no `vpnmig` field manager in
/// its managedFields): `field manager argocd-controller`, or `no field manager recorded`;
/// `None` when vpnmig applied it. One check for `cutover`, `rollback` and `status` (a21p
/// E16: an early merge before any window).
pub(crate) fn never_applied(gw: &Value) -> Option<String> {
    let all = scope::managers(gw);
    if all.iter().any(|m| m == scope::FIELD_MANAGER) {
        return None;
    }
    // The operator writes its status: not who made it.
    let mut by: Vec<&str> = all
        .iter()
        .map(String::as_str)
        .filter(|m| *m != gitops::OPERATOR_MANAGER)
        .collect();
    by.dedup();
    Some(if !by.is_empty() {
        format!("field manager {}", by.join(", "))
    } else if all.is_empty() {
        "no field manager recorded".to_string()
    } else {
        format!(
            "only the operator's field manager {}",
            gitops::OPERATOR_MANAGER
        )
    })
}

/// [`never_applied`] of the live VPNGateway `ns/name`; `None` when vpnmig applied it, it
/// does not exist, or it cannot be read.
pub(crate) async fn outside_window(cluster: &Cluster, ns: &str, name: &str) -> Option<String> {
    let obj = live::get_kept(cluster, "vpn.bnerd.net/v1alpha1", "VPNGateway", ns, name)
        .await
        .ok()??;
    never_applied(&obj)
}

/// What a VPNGateway vpnmig never applied and no journal of its gateway ever recorded is,
/// as `status` says it: `vpngateway/acme -n tenant-acme carries vpnmig's migrated-from
/// annotation, but vpnmig never applied it (written by …): it came in from a repository
/// or by hand, not through a vpnmig window, so no journal ever existed and nothing vpnmig
/// recorded rolls it back`.
pub(crate) fn outside_text(gw: &Value, name: &str, ns: &str, by: &str) -> String {
    let annotated = gw
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(crate::core::translate::MIGRATED_FROM))
        .and_then(Value::as_str)
        == Some(scope::migrated_from(name).as_str());
    format!(
        "vpngateway/{name} -n {ns} {}, but vpnmig never applied it (written by {by}): it came in from a repository or by hand, not through a vpnmig window, so no journal ever existed and nothing vpnmig recorded rolls it back",
        if annotated {
            "carries vpnmig's migrated-from annotation"
        } else {
            "exists"
        }
    )
}

/// The way back from a gateway migrated outside any window ([`outside_text`]): never a
/// rollback from a bundle (there was no cutover), but the revert of the merge.
pub(crate) fn way_back_outside(name: &str, ns: &str) -> String {
    format!(
        "`vpnmig verify {name} -n {ns}` checks what it serves; to go back, revert the merge in the repository: the owner prunes the VPNGateway and its VPNPeers and re-applies ipsecgateway/{name} from its source (where it was applied by hand, re-apply the IPsecGateway by hand); a vpnmig rollback refuses here: it never deletes the client's VPNPeers of a VPNGateway vpnmig did not apply"
    )
}

/// The rollback's refusal for a gateway migrated outside any window: no journal, and the
/// VPNGateway `gw` was never applied by vpnmig (`by`). Before anything changes: no journal
/// is written, nothing is deleted, `--delete-extra-peers` or not (a21p E16).
pub(crate) fn no_rollback_outside(gw: &Value, name: &str, ns: &str, by: &str) -> Error {
    Error::Stop {
        code: exit::REFUSED,
        message: format!(
            "no journal of {name} -n {ns} (ConfigMap {}) and {} (uid {}): a rollback would delete the client's VPNPeers and could not delete a VPNGateway vpnmig never applied, leaving the tunnel down; nothing was changed",
            crate::core::journal::object_name(name),
            outside_text(gw, name, ns, by),
            gw.pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or("?"),
        ),
        hint: Some(way_back_outside(name, ns).into()),
    }
}

/// Whether VPNGateway `o` stands in the place of window `j`'s gateway ([`stand_in`]), how
/// strongly (3: the migrated-from annotation and the floating IP; 2: the floating IP; 1:
/// the annotation, in the window's namespace only) and why, in words. One test for the
/// window's commands and for `status`, which ties a VPNGateway without a journal of its
/// own to the window it stands in for (a21q Q04: moved to another namespace, it was said
/// to be migrated outside any window, "no journal ever existed").
pub(crate) fn stands_in_for(o: &Value, j: &Journal) -> Option<(u8, String)> {
    let (ns, name) = (j.namespace.as_str(), j.gateway.as_str());
    let fip = j.floating_ip.trim();
    let here = o.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns);
    if here && o.pointer("/metadata/name").and_then(Value::as_str) == Some(name) {
        return None;
    }
    let annotated = o
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(crate::core::translate::MIGRATED_FROM))
        .and_then(Value::as_str)
        == Some(scope::migrated_from(name).as_str());
    let claims = |p: &str| {
        !fip.is_empty()
            && o.pointer(p)
                .and_then(Value::as_str)
                .is_some_and(|t| crate::core::addr::same_addr(t, fip))
    };
    let fip_held = claims("/spec/endpoint/floatingIP") || claims("/status/floatingIP");
    // Elsewhere, the annotation names a gateway only by name: the floating IP proves it.
    if !here && !fip_held {
        return None;
    }
    let elsewhere = if here {
        String::new()
    } else {
        format!(
            ", in namespace {} instead of {ns}",
            o.pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("?")
        )
    };
    Some(match (annotated, fip_held) {
        (true, true) => (
            3,
            format!(
                "it carries vpnmig's migrated-from annotation for {name} and holds the window's floating IP {fip}{elsewhere}"
            ),
        ),
        (false, true) => (
            2,
            format!("it holds the window's floating IP {fip}{elsewhere}"),
        ),
        (true, false) => (
            1,
            format!("it carries vpnmig's migrated-from annotation for {name}"),
        ),
        (false, false) => return None,
    })
}

/// Another VPNGateway that stands in the place of window `j`'s gateway (a21p E10: the
/// merged source named it otherwise; a21q Q04, Q11: moved it to another namespace): in the
/// window's namespace, one that carries vpnmig's migrated-from annotation for this gateway
/// or claims the journal's floating IP; in any other namespace (the cluster-wide list,
/// when this user may read it), one that claims the floating IP. The one holding the
/// floating IP is preferred (a21q Q05: of two, the one without it was named). Returns it
/// and why it stands in; `None` when there is none or the lists fail.
pub(crate) async fn stand_in(cluster: &Cluster, j: &Journal) -> Option<(Value, String)> {
    let ns = j.namespace.as_str();
    let fip = j.floating_ip.trim();
    let judge = |o: &Value| stands_in_for(o, j);
    let best = |all: Vec<kube::api::DynamicObject>| {
        all.into_iter()
            .filter_map(|o| serde_json::to_value(o).ok())
            .filter_map(|o| judge(&o).map(|(rank, why)| (rank, o, why)))
            .max_by_key(|(rank, _, _)| *rank)
            .map(|(_, o, why)| (o, why))
    };
    let vpngateways = objects::resource("VPNGateway");
    if let Some(found) = crate::cluster::list::raw(cluster, &vpngateways, Some(ns), None)
        .await
        .ok()
        .and_then(best)
    {
        return Some(found);
    }
    if fip.is_empty() {
        return None;
    }
    crate::cluster::list::raw(cluster, &vpngateways, None, None)
        .await
        .ok()
        .and_then(best)
}

/// The rollback's refusal for a gateway no window of which the cluster shows (no journal)
/// while another VPNGateway, `gw`, stands in its place (`why`, [`stand_in`]): the
/// repository change was merged before any window, under names the plan does not have
/// (a21q Q11, Q12: the bundle's rollback said "the window … ended done at <now> … its
/// tunnels are down" of a window that never ran, and advised a `vpnmig report` that has
/// no journal to read). Before anything changes.
pub(crate) fn no_rollback_stand_in(gw: &Value, why: &str, name: &str, ns: &str) -> Error {
    let (other, other_ns) = (
        gw.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("?"),
        gw.pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("?"),
    );
    let by = never_applied(gw).unwrap_or_else(|| "vpnmig's field manager".into());
    Error::Stop {
        code: exit::REFUSED,
        message: format!(
            "no journal of {name} -n {ns} (ConfigMap {}) and neither an IPsecGateway nor a VPNGateway {name} exists in {ns}, but vpngateway/{other} -n {other_ns} stands in its place (uid {}, written by {by}; {why}): the client's tunnel is served by it; no vpnmig window of {name} is recorded, so it came in from a repository or by hand; a rollback from the bundle would re-create ipsecgateway/{name} on the floating IP it holds; nothing was changed",
            crate::core::journal::object_name(name),
            gw.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("?"),
        ),
        hint: Some(
            format!(
                "`vpnmig status -n {ns}` says what stands there; to go back, revert the merge in the repository: the owner prunes vpngateway/{other} -n {other_ns} and its VPNPeers and re-applies ipsecgateway/{name} -n {ns} from its source (where it was applied by hand, delete it and re-apply the IPsecGateway by hand)"
            )
            .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gw(managers: &[&str]) -> Value {
        json!({"kind": "VPNGateway", "metadata": {"name": "acme", "managedFields":
            managers.iter().map(|m| json!({"manager": m})).collect::<Vec<_>>()}})
    }

    #[test]
    fn never_applied_names_who_wrote_it_without_the_operator() {
        assert_eq!(never_applied(&gw(&["vpnmig", "gateway-operator"])), None);
        assert_eq!(
            never_applied(&gw(&["argocd-controller", "gateway-operator"])).as_deref(),
            Some("field manager argocd-controller")
        );
        assert_eq!(
            never_applied(&gw(&["gateway-operator"])).as_deref(),
            Some("only the operator's field manager gateway-operator")
        );
        assert_eq!(
            never_applied(&gw(&[])).as_deref(),
            Some("no field manager recorded")
        );
    }

    #[test]
    fn the_way_back_outside_a_window_names_no_command_that_refuses() {
        let w = way_back_outside("acme", "tenant-acme");
        assert!(w.contains("revert the merge in the repository"), "{w}");
        assert!(!w.contains("--plan"), "{w}");
        // Only `vpnmig verify` is quoted as a command.
        let quoted: Vec<&str> = w.split('`').skip(1).step_by(2).collect();
        assert_eq!(quoted, ["vpnmig verify acme -n tenant-acme"], "{w}");
    }
}
