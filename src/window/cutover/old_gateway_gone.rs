//! A cutover that finds no old IPsecGateway: what is there instead (a migrated gateway
//! whose journal was lost, a rolled-back window's journal, a local bundle, or nothing),
//! and, for a window before its delete, what stands in its place and the ways on. Said
//! by `cutover` and `status`.
//!
//! Layer: the window engine (`src/window/`), part of `window::cutover`.

use super::*;

/// No IPsecGateway and no journal: say what is there instead (a migrated gateway whose
/// journal was lost, or nothing) and name the local bundle when this machine has one
/// (issue 14 items 7 and 9).
pub(super) async fn no_old_gateway(
    cluster: &Cluster,
    name: &str,
    e: crate::cluster::KubeError,
    previous: Option<&Journal>,
) -> Error {
    let ns = cluster.namespace.as_str();
    let new = objects::get(cluster, "VPNGateway", name).await;
    // A rolled-back window whose IPsecGateway is gone since: its journal is there, so
    // never "no journal" (a21e 6, 11); the rollback re-creates it from the journal.
    if let Some(j) = previous.filter(|j| j.phase == Phase::RolledBack)
        && let Ok(new) = &new
    {
        let state = j.left(None, new.as_ref());
        if let Some(text) = j.left_text(state) {
            return Error::Stop {
                code: exit::REFUSED,
                message: format!("{text}: nothing to cut over; nothing was changed"),
                hint: if state == journal::Left::Gone {
                    Some(crate::window::error::hint!(
                        "`{}` re-creates it from the journal (floating IP pinned), then `{}` starts over",
                        crate::window::error::Run::rollback(name, ns),
                        crate::window::error::Run::cutover(name, ns)
                    ))
                } else {
                    j.left_todo(state).map(Into::into)
                },
            };
        }
    }
    // The journal is there, before the delete: the IPsecGateway went outside the window
    // (a21m B16: an early merge, pruned; the stop said "its journal … is gone").
    if let Some(j) = previous.filter(|j| !j.phase.past_delete() && !j.phase.finished()) {
        let (what, ways) = gone_before_the_delete(cluster, j, false).await;
        return Error::Stop {
            code: exit::REFUSED,
            message: format!("{what}: nothing to cut over; nothing was changed"),
            hint: Some(ways.into()),
        };
    }
    let lost = crate::state::lost_journal_hint(&cluster.server, ns, name);
    // vpnmig never applied it: no cutover, no journal ever existed (a21p E16, an early
    // merge before any window); said as `status` says it, never "roll back from the
    // bundle its cutover wrote".
    if previous.is_none()
        && let Ok(Some(gw)) = &new
        && let Some(by) = crate::window::early::never_applied(gw)
    {
        return Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "{name} -n {ns} is migrated outside a vpnmig window: IPsecGateway {name} does not exist, and {} (uid {}): nothing to cut over; nothing was changed",
                crate::window::early::outside_text(gw, name, ns, &by),
                gw.pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .unwrap_or("?"),
            ),
            hint: Some(crate::window::early::way_back_outside(name, ns).into()),
        };
    }
    match new {
        Ok(Some(gw)) => Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "{name} -n {ns} is migrated: VPNGateway {name} exists (uid {}) and IPsecGateway {name} does not, but its journal (ConfigMap {}) is gone: nothing to cut over",
                gw.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("?"),
                journal::object_name(name)
            ),
            hint: Some(crate::window::error::hint!(
                "`{}` checks it; to go back, {}",
                crate::window::error::Run::verify(name, ns),
                lost.unwrap_or_else(|| format!(
                    "roll back from the bundle its cutover wrote: `vpnmig rollback {name} -n {ns} --plan DIR`"
                ))
            )),
        },
        _ => match lost {
            Some(hint) => Error::Stop {
                code: exit::FAILURE,
                message: format!(
                    "{e}, and there is no journal of it (ConfigMap {}): a window may have lost its journal",
                    journal::object_name(name)
                ),
                hint: Some(hint.into()),
            },
            None => Error::Cluster(e),
        },
    }
}

/// What is true of window `j` before its delete (phase `started`, `psk-detached`) whose
/// IPsecGateway is gone (`deleting`: going) all the same: vpnmig deleted nothing, someone
/// else did (a GitOps prune after an early merge, a hand); what stands in its place, and
/// the ways on. Said by `cutover` and `status` instead of "the journal is gone" and
/// "nothing was deleted … untouched" (a21m B16).
pub(crate) async fn gone_before_the_delete(
    cluster: &Cluster,
    j: &Journal,
    deleting: bool,
) -> (String, String) {
    let (name, ns) = (j.gateway.as_str(), j.namespace.as_str());
    let new =
        crate::cluster::gitops::get_kept(cluster, "vpn.bnerd.net/v1alpha1", "VPNGateway", ns, name)
            .await;
    // None of its name: another VPNGateway may stand in its place (a21p E10: the merged
    // source named it otherwise); it serves the tunnel then, never "the tunnel is down".
    let other = match &new {
        Ok(None) => crate::window::early::stand_in(cluster, j).await,
        _ => None,
    };
    let written = |gw: &Value| {
        crate::core::gitops::writer(gw)
            .map(|w| format!("written by {w}"))
            .unwrap_or_else(|| "no field manager other than vpnmig's and the operator's".into())
    };
    let stands = match (&new, &other) {
        (Ok(Some(gw)), _) => format!(
            "vpngateway/{name} -n {ns} exists (uid {}, {}), which this window did not apply",
            gw.pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or("?"),
            written(gw)
        ),
        (Ok(None), Some((gw, why))) => format!(
            "no VPNGateway {name} exists, but vpngateway/{} -n {} stands in its place (uid {}, {}; {why}): the client's tunnel is served by it, under a name the plan does not have",
            gw.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("?"),
            gw.pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or(ns),
            gw.pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or("?"),
            written(gw)
        ),
        (Ok(None), None) => "no VPNGateway exists either: the client's tunnel is down".to_string(),
        (Err(e), _) => format!("whether a VPNGateway exists cannot be read ({e})"),
    };
    let ways = if let Some((gw, _)) = &other {
        let peers = j.peer_names();
        // Moved to another namespace (a21q Q04): the namespace is what differs, not the
        // name ("VPNGateway acme (not acme)").
        let (names, not) = match gw.pointer("/metadata/namespace").and_then(Value::as_str) {
            Some(other) if other != ns => (
                format!("names and namespace, all in {ns}"),
                format!("in namespace {ns}, not in {other}"),
            ),
            _ => (
                "names".to_string(),
                format!(
                    "not {}",
                    gw.pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                ),
            ),
        };
        format!(
            "the repository's source must define the plan's {names}: VPNGateway {name} ({not}), {} with spec.gatewayRef.name {name}, and spec.ipsec.pskSecretRef {}; fix the repository (the owner then prunes the stand-in and applies them), then `vpnmig cutover {name} -n {ns}` finishes the window with what the owner's source applied, once every pinned value equals the plan's; or, to go back, revert the merge and let the owner sync it, then `vpnmig rollback {name} -n {ns}`",
            if peers.is_empty() {
                "its VPNPeers".to_string()
            } else {
                format!("VPNPeer {}", peers.join(", "))
            },
            j.psk_secret
        )
    } else if matches!(&new, Ok(Some(gw)) if crate::core::gitops::writer(gw).is_some_and(|w| w.starts_with("a GitOps")))
    {
        format!(
            "`vpnmig cutover {name} -n {ns}` finishes the window with what the owner's source applied, once every pinned value equals the plan's; a rollback needs the merge reverted first"
        )
    } else {
        format!(
            "`vpnmig verify {name} -n {ns}` checks what is live; `vpnmig rollback {name} -n {ns}` goes back from the journal"
        )
    };
    (
        format!(
            "the window of {ns}/{name} is at journal phase {} (its journal, ConfigMap {ns}/{}, is there and holds the IPsecGateway's manifest): vpnmig deleted nothing, but ipsecgateway/{name} -n {ns} is {}: deleted outside the window (a GitOps owner's prune after the repository change was merged early, or by hand); {stands}",
            j.phase,
            journal::object_name(name),
            if deleting { "being deleted" } else { "gone" }
        ),
        ways,
    )
}
