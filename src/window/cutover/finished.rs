//! A finished cutover run again: whether the gateway is as the window left it.
//!
//! Layer: the window engine (`src/window/`), part of `window::cutover`.

use super::*;

/// What differs between a done window's VPNGateway and PSK Secret and what its journal
/// recorded: the floating IP (compared in its family), the VPNGateway's uid, the key's
/// fingerprint. Empty when as left.
pub(super) async fn not_as_left(cluster: &Cluster, j: &Journal) -> Result<Vec<String>, Error> {
    use crate::core::psk::Held;
    let (name, ns) = (j.gateway.as_str(), j.namespace.as_str());
    let mut out = Vec::new();
    if let Some(gw) = objects::get(cluster, "VPNGateway", name).await? {
        let fip = gw
            .pointer("/spec/endpoint/floatingIP")
            .and_then(Value::as_str)
            .unwrap_or("none");
        if !crate::core::addr::same_in_family(fip, &j.floating_ip) {
            out.push(format!(
                "vpngateway/{name} -n {ns} has floating IP {fip}, the journal pins {} (the client's firewall dials it)",
                j.floating_ip
            ));
        }
    }
    // The gateway the window replaced, back beside the new one (an owner's sync after a
    // killed restore, a person): it contends for the floating IP, never "nothing to do"
    // (a21j 07, critical).
    if let Some(old) = objects::get(cluster, "IPsecGateway", name).await? {
        out.push(format!(
            "ipsecgateway/{name} -n {ns} exists again beside the VPNGateway (uid {}{}) and contends for the floating IP {}: stop whoever re-created it (`vpnmig status -n {ns}` names an owner that syncs it), then delete it (`kubectl delete ipsecgateway {name} -n {ns}`)",
            old.pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or("?"),
            crate::core::gitops::writer(&old)
                .map(|w| format!(", written by {w}"))
                .unwrap_or_default(),
            j.floating_ip
        ));
    }
    // Each object the window left takes its key from the window's Secret (a21u U28: a
    // VPNPeer pointed at another Secret, and the re-run said "nothing to do").
    for (t, at) in j.psk_users() {
        let (Some(kind), Some(obj_name)) = (
            t["kind"].as_str(),
            t.pointer("/metadata/name").and_then(Value::as_str),
        ) else {
            continue;
        };
        if let Some(obj) = objects::get(cluster, kind, obj_name).await?
            && let Some((secret, key)) = j.psk_moved(&obj, at)
        {
            out.push(format!(
                "{} takes its key from secret {secret} key {key} now, not from the window's secret/{} -n {ns} key {} (the client's, whose fingerprint the journal keeps): point its {} back at it (`kubectl patch {} {obj_name} -n {ns} --type merge -p '{}'`)",
                crate::core::model::object_ref(kind, obj_name, ns),
                j.psk_secret,
                j.psk_key(),
                at.trim_start_matches('/').replace('/', "."),
                kind.to_lowercase(),
                crate::core::psk::ref_patch(at, &j.psk_secret, j.psk_key())
            ));
        }
    }
    let secret = objects::secret(cluster, &j.psk_secret).await?;
    let held = crate::core::psk::held(
        j.psk_fingerprint.as_deref(),
        j.psk_secret_uid.as_deref(),
        ns,
        &j.psk_secret,
        j.psk_key(),
        secret.as_ref(),
    );
    let what = format!("secret/{} -n {ns} (the PSK)", j.psk_secret);
    match held {
        Held::Same { .. } | Held::RecreatedSame { .. } | Held::Unrecorded => {}
        Held::Gone => out.push(format!("{what} is gone")),
        Held::Recreated { then, now } => out.push(format!(
            "{what} was re-created (uid {then} → {now}) and its key cannot be compared with the journal's fingerprint"
        )),
        Held::Changed { .. } => out.push(format!(
            "{what} key {} is not the one the window fingerprinted",
            j.psk_key()
        )),
    }
    Ok(out)
}
