//! What a window may delete (DESIGN.md §4.1 and §4.8; issue 14 items 1, 3 and 4), pure.
//!
//! vpnmig deletes three kinds of object and nothing else: the old `IPsecGateway`, the new
//! `VPNGateway` and its `VPNPeer`s. Each rule here is judged on the object *as read*, and
//! the cluster layer (`cluster::delete`) deletes exactly that version (uid and
//! resourceVersion preconditions), so what was judged is what goes.
//!
//! - A gateway of either kind is deleted only while its spec pins the window's floating IP
//!   (`spec.endpoint.floatingIP` set and equal to the journal's): the operator's cleanup
//!   disassociates a pinned FIP and releases an unpinned one to the pool (DESIGN.md §2).
//! - A VPNPeer is deleted only if it names this gateway in `spec.gatewayRef.name` *and*
//!   the window can prove it made it: its uid is recorded in the journal, or it carries
//!   vpnmig's field manager and the migrated-from annotation of this gateway.
//!
//! Layer 2 (rules): imports only from layers 0 to 2; see docs/architecture.md.

use serde_json::Value;

use crate::core::translate::MIGRATED_FROM;

/// The field manager vpnmig writes with (server-side apply, creates).
pub const FIELD_MANAGER: &str = "vpnmig";

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Whether a gateway (`IPsecGateway` or `VPNGateway`, as JSON) may be deleted by a window
/// whose journal pins `fip`: its spec must pin that floating IP.
///
/// Errors: why not, naming the field, the value seen and the value wanted.
pub fn gateway_deletable(obj: &Value, fip: &str) -> Result<(), String> {
    let pinned = text(obj, "/spec/endpoint/floatingIP");
    if fip.is_empty() {
        return Err("the journal records no floating IP to check it against".into());
    }
    if pinned.is_empty() {
        return Err(format!(
            "spec.endpoint.floatingIP is not set (wanted {fip}): the operator's cleanup would release the floating IP to the pool"
        ));
    }
    if !crate::core::addr::same_in_family(pinned, fip) {
        return Err(format!(
            "spec.endpoint.floatingIP is {pinned}, not the window's {fip}: deleting it could release an address the client depends on"
        ));
    }
    Ok(())
}

/// The `kubectl patch` that pins `fip` on `kind/name -n ns`: what to run when
/// [`gateway_deletable`] refuses for an unpinned or other floating IP.
pub fn pin_command(kind: &str, name: &str, ns: &str, fip: &str) -> String {
    format!(
        "kubectl patch {} {name} -n {ns} --type merge -p '{{\"spec\":{{\"endpoint\":{{\"floatingIP\":\"{fip}\"}}}}}}'",
        kind.to_lowercase()
    )
}

/// How a VPNPeer was proven to belong to the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proof {
    /// Its uid is one the journal recorded when the window applied it.
    JournalUid,
    /// vpnmig's field manager wrote it and its migrated-from annotation names this gateway.
    CreatedForGateway,
}

/// The migrated-from annotation value of the targets of `gateway` (see
/// `core::translate::target_meta`).
pub fn migrated_from(gateway: &str) -> String {
    format!("ipsecgateways.ipsec.bnerd.net/{gateway}")
}

/// The field managers that wrote `obj` (metadata.managedFields[].manager).
pub fn managers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m["manager"].as_str().map(str::to_string))
        .collect()
}

/// Whether a new object (a VPNPeer or the VPNGateway, as JSON) belongs to the window of
/// `gateway`, and how that is known; `recorded` are the uids the journal recorded when
/// it applied its targets.
///
/// Errors: why it is not the window's to delete (DESIGN.md §4.8): a VPNPeer's gatewayRef
/// names another gateway (a VPNGateway: it has another name), or nothing proves vpnmig
/// made it for this one.
pub fn proof(obj: &Value, gateway: &str, recorded: &[String]) -> Result<Proof, String> {
    if text(obj, "/kind") == "VPNGateway" {
        let name = text(obj, "/metadata/name");
        if name != gateway {
            return Err(format!("it is VPNGateway `{name}`, not `{gateway}`"));
        }
    } else {
        let gateway_ref = text(obj, "/spec/gatewayRef/name");
        if gateway_ref != gateway {
            return Err(format!(
                "its spec.gatewayRef.name is `{gateway_ref}`, not `{gateway}`: it belongs to another gateway"
            ));
        }
    }
    let uid = text(obj, "/metadata/uid");
    if !uid.is_empty() && recorded.iter().any(|r| r == uid) {
        return Ok(Proof::JournalUid);
    }
    let annotation = text(
        obj,
        &format!("/metadata/annotations/{}", escape(MIGRATED_FROM)),
    );
    let ours = managers(obj).iter().any(|m| m == FIELD_MANAGER);
    if ours && annotation == migrated_from(gateway) {
        return Ok(Proof::CreatedForGateway);
    }
    let mut why = Vec::new();
    if !ours {
        let by = managers(obj);
        why.push(if by.is_empty() {
            "no field manager recorded".to_string()
        } else {
            format!("written by {}", by.join(", "))
        });
    }
    if annotation != migrated_from(gateway) {
        why.push(if annotation.is_empty() {
            format!("no {MIGRATED_FROM} annotation")
        } else {
            format!("{MIGRATED_FROM} is `{annotation}`")
        });
    }
    Err(format!(
        "it references {gateway} but was not created by vpnmig for it ({}; uid {} is not in the journal)",
        why.join("; "),
        if uid.is_empty() { "?" } else { uid }
    ))
}

/// The way on from a rollback stopped on a VPNGateway vpnmig did not create for the window
/// ([`proof`] failed): vpnmig deletes none such, so the rollback cannot pass it, and a
/// journal left at `rolling-back` (an older vpnmig's rollback from the bundle of a gateway
/// migrated outside any window, a21p E16) had no command that went on. Delete it by hand
/// (or revert the merge where a GitOps owner syncs it), then the rollback resumes.
pub fn not_created_way_on(name: &str, ns: &str) -> String {
    format!(
        "vpnmig deletes no VPNGateway it did not create for the window; to go back, delete vpngateway/{name} -n {ns} yourself (`kubectl delete vpngateway {name} -n {ns}`; where a GitOps owner syncs it, revert the merge in the repository instead: its prune deletes it), then `vpnmig rollback {name} -n {ns}` resumes and re-creates the IPsecGateway from the journal"
    )
}

/// A JSON pointer segment for a key that contains `/` or `~` (RFC 6901).
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// What a rollback does with each VPNPeer that exists: the journal's own peers and every
/// peer whose gatewayRef names the gateway.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerFate {
    /// Proven the window's: deleted (at the version read).
    Delete { name: String, proof: Proof },
    /// References this gateway but the window did not make it: a rollback refuses (the
    /// next cutover would count two peers and go default-deny) unless told to delete it.
    Extra { name: String, why: String },
    /// Not this gateway's (the journal's name, another gateway's object): left alone.
    Foreign { name: String, why: String },
}

/// Sort the live VPNPeers of the namespace (`peers`, as JSON) into what a rollback of
/// `gateway` deletes, refuses over, and leaves alone. Peers that neither have one of the
/// journal's names (`names`) nor reference the gateway are not listed.
pub fn sort_peers(
    peers: &[Value],
    gateway: &str,
    names: &[String],
    recorded: &[String],
) -> Vec<PeerFate> {
    let mut out = Vec::new();
    for p in peers {
        let name = text(p, "/metadata/name").to_string();
        let references = text(p, "/spec/gatewayRef/name") == gateway;
        if !references && !names.contains(&name) {
            continue;
        }
        out.push(match proof(p, gateway, recorded) {
            Ok(proof) => PeerFate::Delete { name, proof },
            Err(why) if references => PeerFate::Extra { name, why },
            Err(why) => PeerFate::Foreign { name, why },
        });
    }
    out
}

/// Whether the live object is the one the journal recorded: the same uid (when the
/// journal has one) and the same spec fingerprint. Acting on anything else would act on
/// an edit nobody reviewed (issue 14 item 2). Errors: what changed, both values.
pub fn same_as_recorded(live: &Value, uid: Option<&str>, fingerprint: &str) -> Result<(), String> {
    let live_uid = text(live, "/metadata/uid");
    if let Some(uid) = uid
        && live_uid != uid
    {
        return Err(format!("it is another object now (uid {uid} → {live_uid})"));
    }
    let now = crate::core::fingerprint::fingerprint(live.get("spec").unwrap_or(&Value::Null));
    if now != fingerprint {
        return Err(format!(
            "its spec changed since the journal was written (fingerprint {fingerprint} → {now})"
        ));
    }
    Ok(())
}

/// Every leaf where `live` differs from `recorded` (two specs as JSON), as
/// `(path, recorded, live)` with `<none>` for a side that lacks it: the diff a refusal
/// shows (issue 14 item 2).
pub fn differences(recorded: &Value, live: &Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    walk("spec", recorded, live, &mut out);
    out
}

fn walk(path: &str, a: &Value, b: &Value, out: &mut Vec<(String, String, String)>) {
    let show = |v: &Value| match v {
        Value::Null => "<none>".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let (va, vb) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                walk(&format!("{path}.{k}"), va, vb, out);
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            for i in 0..x.len().max(y.len()) {
                let (va, vb) = (
                    x.get(i).unwrap_or(&Value::Null),
                    y.get(i).unwrap_or(&Value::Null),
                );
                walk(&format!("{path}[{i}]"), va, vb, out);
            }
        }
        _ if a != b => out.push((path.to_string(), show(a), show(b))),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gateway(fip: Option<&str>) -> Value {
        let mut g =
            json!({"kind": "IPsecGateway", "metadata": {"name": "acme"}, "spec": {"endpoint": {}}});
        if let Some(f) = fip {
            g["spec"]["endpoint"]["floatingIP"] = json!(f);
        }
        g
    }

    fn peer(name: &str, gateway_ref: &str, manager: &str, from: Option<&str>, uid: &str) -> Value {
        let mut p = json!({
            "kind": "VPNPeer",
            "metadata": {"name": name, "uid": uid, "managedFields": [{"manager": manager, "operation": "Apply"}]},
            "spec": {"gatewayRef": {"name": gateway_ref}}
        });
        if let Some(f) = from {
            p["metadata"]["annotations"] = json!({MIGRATED_FROM: migrated_from(f)});
        }
        p
    }

    #[test]
    fn a_gateway_that_pins_the_journals_fip_may_be_deleted() {
        assert_eq!(
            gateway_deletable(&gateway(Some("198.51.100.23")), "198.51.100.23"),
            Ok(())
        );
        // The same address spelled differently is the same address.
        assert_eq!(
            gateway_deletable(&gateway(Some("2001:DB8:0::17")), "2001:db8::17"),
            Ok(())
        );
    }

    #[test]
    fn an_unpinned_gateway_is_never_deleted() {
        let e = gateway_deletable(&gateway(None), "198.51.100.23").unwrap_err();
        assert!(
            e.contains("spec.endpoint.floatingIP is not set (wanted 198.51.100.23)"),
            "{e}"
        );
        let e = gateway_deletable(&gateway(Some("")), "198.51.100.23").unwrap_err();
        assert!(e.contains("not set"), "{e}");
    }

    #[test]
    fn a_gateway_pinning_another_fip_is_never_deleted() {
        let e = gateway_deletable(&gateway(Some("198.51.100.99")), "198.51.100.23").unwrap_err();
        assert!(
            e.contains("is 198.51.100.99, not the window's 198.51.100.23"),
            "{e}"
        );
        assert!(gateway_deletable(&gateway(Some("198.51.100.23")), "").is_err());
    }

    #[test]
    fn a_peer_is_the_windows_by_journal_uid_or_by_manager_and_annotation() {
        let recorded = vec!["u-1".to_string()];
        let by_uid = peer("acme", "acme", "kubectl-edit", None, "u-1");
        assert_eq!(proof(&by_uid, "acme", &recorded), Ok(Proof::JournalUid));
        let ours = peer("acme", "acme", "vpnmig", Some("acme"), "u-2");
        assert_eq!(
            proof(&ours, "acme", &recorded),
            Ok(Proof::CreatedForGateway)
        );
    }

    #[test]
    fn another_gateways_peer_is_never_the_windows() {
        // Issue 14 item 3: gateway `acme-branch`'s own peer has the name gateway `acme`'s
        // tunnel `branch` would give; its gatewayRef says whose it is.
        let theirs = peer(
            "acme-branch",
            "acme-branch",
            "vpnmig",
            Some("acme-branch"),
            "u-9",
        );
        let e = proof(&theirs, "acme", &["u-9".into()]).unwrap_err();
        assert!(
            e.contains("gatewayRef.name is `acme-branch`, not `acme`"),
            "{e}"
        );
    }

    #[test]
    fn a_peer_added_by_hand_is_not_the_windows() {
        let by_hand = peer(
            "acme-extra",
            "acme",
            "kubectl-client-side-apply",
            None,
            "u-3",
        );
        let e = proof(&by_hand, "acme", &[]).unwrap_err();
        assert!(e.contains("written by kubectl-client-side-apply"), "{e}");
        assert!(
            e.contains("no vpnmig.bnerd.net/migrated-from annotation"),
            "{e}"
        );
        // vpnmig's manager but migrated from another gateway (copied by hand): not proof.
        let copied = peer("acme-2", "acme", "vpnmig", Some("other"), "u-4");
        let e = proof(&copied, "acme", &[]).unwrap_err();
        assert!(
            e.contains("is `ipsecgateways.ipsec.bnerd.net/other`"),
            "{e}"
        );
    }

    #[test]
    fn differences_name_every_changed_leaf() {
        let recorded =
            json!({"endpoint": {"floatingIP": "198.51.100.23"}, "tunnels": [{"name": "main"}]});
        let live = json!({"endpoint": {}, "tunnels": [{"name": "main"}, {"name": "branch2"}]});
        assert_eq!(
            differences(&recorded, &live),
            [
                (
                    "spec.endpoint.floatingIP".to_string(),
                    "198.51.100.23".to_string(),
                    "<none>".to_string()
                ),
                (
                    "spec.tunnels[1]".to_string(),
                    "<none>".to_string(),
                    r#"{"name":"branch2"}"#.to_string()
                ),
            ]
        );
        assert!(differences(&recorded, &recorded).is_empty());
    }

    #[test]
    fn a_vpngateway_is_the_windows_only_under_its_own_name() {
        let mut gw = peer("acme", "", "vpnmig", Some("acme"), "u-5");
        gw["kind"] = json!("VPNGateway");
        assert_eq!(proof(&gw, "acme", &[]), Ok(Proof::CreatedForGateway));
        let e = proof(&gw, "acme-branch", &["u-5".into()]).unwrap_err();
        assert!(
            e.contains("it is VPNGateway `acme`, not `acme-branch`"),
            "{e}"
        );
        let mut by_hand = peer("acme", "", "kubectl-client-side-apply", None, "u-6");
        by_hand["kind"] = json!("VPNGateway");
        assert!(proof(&by_hand, "acme", &[]).is_err());
    }

    #[test]
    fn peers_are_sorted_into_delete_extra_and_foreign() {
        let peers = vec![
            peer("acme", "acme", "vpnmig", Some("acme"), "u-1"),
            peer(
                "acme-branch",
                "acme-branch",
                "vpnmig",
                Some("acme-branch"),
                "u-2",
            ),
            peer("acme-extra", "acme", "kubectl-edit", None, "u-3"),
            peer("unrelated", "initech", "vpnmig", Some("initech"), "u-4"),
        ];
        let names = vec!["acme".to_string(), "acme-branch".to_string()];
        let fates = sort_peers(&peers, "acme", &names, &[]);
        let short: Vec<(&str, &str)> = fates
            .iter()
            .map(|f| match f {
                PeerFate::Delete { name, .. } => (name.as_str(), "delete"),
                PeerFate::Extra { name, .. } => (name.as_str(), "extra"),
                PeerFate::Foreign { name, .. } => (name.as_str(), "foreign"),
            })
            .collect();
        assert_eq!(
            short,
            [
                ("acme", "delete"),
                ("acme-branch", "foreign"),
                ("acme-extra", "extra")
            ]
        );
    }
}
