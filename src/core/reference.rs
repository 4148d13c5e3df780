//! Pinned values judged against the reference the user approved, pure (DESIGN.md §4.7;
//! issue 9 item 1).
//!
//! The reference is the journal's targets (the VPNGateway and VPNPeers a cutover
//! applies) or its old manifest (the IPsecGateway a rollback re-creates), or the plan's
//! targets when `--plan DIR` is given. The live object is never its own reference: a
//! virtual IP changed by another field manager after the apply would otherwise pass as
//! "pinned". Every difference names the field, both values and the field manager that
//! last wrote it (from metadata.managedFields).
//!
//! Layer 2 (rules): imports only from layers 0 to 2; see docs/architecture.md.

use serde_json::Value;

use crate::core::verify::{Row, Verdict};

/// The pinned fields of each kind, as paths into the object. `[]` marks a list whose
/// items are matched by their `name` (exposures, tunnels); a path without it compares
/// the whole value (lists of subnets and proposals keep their order: DESIGN.md §3).
fn pinned_paths(kind: &str) -> &'static [&'static str] {
    match kind {
        "VPNGateway" => &[
            "spec.endpoint.floatingIP",
            "spec.serviceCIDR",
            "spec.exposures[].virtualIP",
            "spec.ipsec.ike.version",
            "spec.ipsec.ike.proposals",
        ],
        "VPNPeer" => &[
            "spec.gatewayRef.name",
            "spec.ipsec.peer.address",
            "spec.ipsec.peer.id",
            "spec.ipsec.remoteSubnets",
            "spec.ipsec.pskSecretRef",
            "spec.ipsec.esp.proposals",
            "spec.authorization",
        ],
        "IPsecGateway" => &[
            "spec.endpoint.floatingIP",
            "spec.auth.pskSecretRef",
            "spec.ike.version",
            "spec.ike.proposals",
            "spec.exposures[].virtualIP",
            "spec.tunnels[].peer.address",
            "spec.tunnels[].peer.id",
            "spec.tunnels[].remoteSubnets",
            "spec.tunnels[].esp.proposals",
        ],
        _ => &[],
    }
}

/// Every `(field path as shown, value)` that `path` selects in `obj`; a `[]` segment
/// expands to each named item (`spec.exposures[crm].virtualIP`).
fn select(obj: &Value, path: &str) -> Vec<(String, Value)> {
    fn go(v: &Value, segs: &[&str], shown: String, out: &mut Vec<(String, Value)>) {
        let Some((first, rest)) = segs.split_first() else {
            out.push((shown, v.clone()));
            return;
        };
        if let Some(list) = first.strip_suffix("[]") {
            for item in v.get(list).and_then(Value::as_array).into_iter().flatten() {
                let name = item["name"].as_str().unwrap_or("?");
                go(item, rest, format!("{shown}.{list}[{name}]"), out);
            }
        } else {
            let next = v.get(*first).unwrap_or(&Value::Null);
            go(next, rest, format!("{shown}.{first}"), out);
        }
    }
    let segs: Vec<&str> = path.split('.').collect();
    let mut out = Vec::new();
    go(obj, &segs, String::new(), &mut out);
    out.into_iter()
        .map(|(p, v)| (p.trim_start_matches('.').to_string(), v))
        .collect()
}

/// Every pinned field of `obj` (by its kind) and its value, as `verify` compares them:
/// what a change record lists (issue 12 item 4).
pub fn pinned_values(obj: &Value) -> Vec<(String, Value)> {
    let kind = obj["kind"].as_str().unwrap_or_default();
    pinned_paths(kind)
        .iter()
        .flat_map(|p| select(obj, p))
        .collect()
}

/// Whether two pinned values are the same: addresses and networks compared parsed
/// (`2001:DB8::1` is `2001:db8::1`), lists item by item, anything else as JSON.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => crate::core::addr::same_in_family(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        _ => a == b,
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::Null => "<unset>".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The field manager that owns `path` (shown form, `spec.exposures[crm].virtualIP`) of
/// `obj` according to its managedFields, preferring a manager other than vpnmig and the
/// latest write; `None` when none is recorded.
pub fn last_writer(obj: &Value, path: &str) -> Option<String> {
    let entries = obj.pointer("/metadata/managedFields")?.as_array()?;
    let segs: Vec<String> = path
        .split('.')
        .map(|s| s.split('[').next().unwrap_or(s).to_string())
        .collect();
    let owns = |fields: &Value| {
        let mut node = fields;
        for seg in &segs {
            match node.get(format!("f:{seg}")) {
                // Owned as a whole here (a leaf, or an atomic list or map).
                Some(n)
                    if n.as_object()
                        .is_none_or(|o| o.is_empty() || o.contains_key(".")) =>
                {
                    return true;
                }
                Some(n) => node = n,
                None => {
                    // Items of a keyed list: any item entry counts.
                    return node.as_object().is_some_and(|o| {
                        o.keys().any(|k| k.starts_with("k:") || k.starts_with("i:"))
                    });
                }
            }
        }
        true
    };
    let mut owners: Vec<&Value> = entries
        .iter()
        .filter(|e| e.get("fieldsV1").is_some_and(owns))
        .collect();
    owners.sort_by_key(|e| {
        (
            e["manager"].as_str() != Some(crate::core::scope::FIELD_MANAGER),
            e["time"].as_str().unwrap_or_default().to_string(),
        )
    });
    // vpnmig applied the reference's value: if it is the only owner recorded, whoever
    // changed the field did not record themselves (a write path without managedFields).
    owners
        .last()
        .filter(|e| e["manager"].as_str() != Some(crate::core::scope::FIELD_MANAGER))
        .map(|e| {
            format!(
                "{} ({}{})",
                e["manager"].as_str().unwrap_or("?"),
                e["operation"].as_str().unwrap_or("?"),
                e["time"]
                    .as_str()
                    .map(|t| format!(", {t}"))
                    .unwrap_or_default()
            )
        })
}

/// Compare the live object with its reference (`recorded`, both as JSON) on every
/// pinned field of its kind. `source` names the reference in the message (`the
/// journal`, `the plan`). One `pinned` row per difference, or one row saying how many
/// pinned fields match; a missing live object is one failing row.
pub fn compare(recorded: &Value, live: Option<&Value>, source: &str) -> Vec<Row> {
    let kind = recorded["kind"].as_str().unwrap_or_default();
    let name = recorded
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let ns = recorded
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let object = format!("{kind} {ns}/{name}");
    let row = |what: String, verdict, detail: String| Row {
        check: "pinned",
        object: object.clone(),
        what,
        verdict,
        detail,
    };
    let Some(live) = live else {
        return vec![row(
            "pinned fields".into(),
            Verdict::Fail,
            format!("the object does not exist; {source} has it"),
        )];
    };
    let mut rows = Vec::new();
    let mut checked = 0;
    for path in pinned_paths(kind) {
        let want = select(recorded, path);
        let seen = select(live, path);
        for (field, w) in &want {
            checked += 1;
            let s = seen
                .iter()
                .find(|(f, _)| f == field)
                .map(|(_, v)| v.clone())
                .unwrap_or(Value::Null);
            if !same(w, &s) {
                let by = last_writer(live, field)
                    .map(|m| format!("; last written by field manager {m}"))
                    .unwrap_or_else(|| "; the writer is not recorded in managedFields".into());
                rows.push(row(
                    field.clone(),
                    Verdict::Fail,
                    format!("{}, {source} pins {}{by}", show(&s), show(w)),
                ));
            }
        }
        // An item the reference does not have (an exposure or tunnel added since).
        for (field, s) in &seen {
            if !want.iter().any(|(f, _)| f == field) {
                checked += 1;
                rows.push(row(
                    field.clone(),
                    Verdict::Fail,
                    format!("{}, not in {source}", show(s)),
                ));
            }
        }
    }
    if rows.is_empty() {
        rows.push(row(
            "pinned fields".into(),
            Verdict::Ok,
            format!("{checked} field(s) as {source} pins them"),
        ));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gateway(vip: &str, cidr: &str) -> Value {
        json!({
            "kind": "VPNGateway",
            "metadata": {"name": "acme", "namespace": "tenant-acme"},
            "spec": {
                "endpoint": {"floatingIP": "198.51.100.23"},
                "serviceCIDR": cidr,
                "exposures": [{"name": "crm", "virtualIP": vip}],
                "ipsec": {"ike": {"version": 2, "proposals": ["aes256-sha256-modp2048"]}}
            }
        })
    }

    #[test]
    fn a_virtual_ip_changed_by_another_manager_fails_naming_both_values_and_the_manager() {
        let recorded = gateway("10.250.3.10", "10.250.3.0/24");
        let mut live = gateway("10.250.3.99", "10.250.3.0/24");
        live["metadata"]["managedFields"] = json!([
            {"manager": "vpnmig", "operation": "Apply", "time": "2026-11-30T02:00:00Z",
             "fieldsV1": {"f:spec": {"f:exposures": {}, "f:serviceCIDR": {}}}},
            {"manager": "ops", "operation": "Apply", "time": "2026-11-30T02:05:00Z",
             "fieldsV1": {"f:spec": {"f:exposures": {}}}}
        ]);
        let rows = compare(&recorded, Some(&live), "the journal");
        assert_eq!(
            rows,
            [Row {
                check: "pinned",
                object: "VPNGateway tenant-acme/acme".into(),
                what: "spec.exposures[crm].virtualIP".into(),
                verdict: Verdict::Fail,
                detail: "10.250.3.99, the journal pins 10.250.3.10; last written by field manager ops (Apply, 2026-11-30T02:05:00Z)".into(),
            }]
        );
    }

    #[test]
    fn the_same_addresses_spelled_differently_match() {
        let recorded = gateway("fd00:250:3::10", "fd00:250:3::/64");
        let live = gateway("FD00:0250:0003:0::10", "fd00:250:3:0::/64");
        let rows = compare(&recorded, Some(&live), "the journal");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].verdict, Verdict::Ok, "{rows:?}");
        assert_eq!(rows[0].detail, "5 field(s) as the journal pins them");
    }

    #[test]
    fn an_ipv4_mapped_ipv6_value_is_not_its_ipv4_address() {
        assert!(same(
            &json!("::FFFF:10.60.0.0/112"),
            &json!("::ffff:a3c:0/112")
        ));
        assert!(!same(&json!("::ffff:203.0.113.66"), &json!("203.0.113.66")));
        assert!(!same(
            &json!("::ffff:10.60.0.0/112"),
            &json!("10.60.0.0/16")
        ));
        assert!(same(&json!(["2001:DB8::/32"]), &json!(["2001:db8:0::/32"])));
    }

    #[test]
    fn an_added_exposure_a_removed_pin_and_a_missing_object_fail() {
        let recorded = gateway("10.250.3.10", "10.250.3.0/24");
        let mut live = gateway("10.250.3.10", "10.250.3.0/24");
        live["spec"]["exposures"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "erp", "virtualIP": "10.250.3.11"}));
        live["spec"].as_object_mut().unwrap().remove("serviceCIDR");
        let details: Vec<(String, String)> = compare(&recorded, Some(&live), "the plan")
            .into_iter()
            .map(|r| (r.what, r.detail))
            .collect();
        assert_eq!(
            details,
            [
                (
                    "spec.serviceCIDR".to_string(),
                    "<unset>, the plan pins 10.250.3.0/24; the writer is not recorded in managedFields".to_string()
                ),
                (
                    "spec.exposures[erp].virtualIP".to_string(),
                    "10.250.3.11, not in the plan".to_string()
                ),
            ]
        );
        let missing = compare(&recorded, None, "the journal");
        assert_eq!(missing[0].verdict, Verdict::Fail);
        assert_eq!(
            missing[0].detail,
            "the object does not exist; the journal has it"
        );
    }

    #[test]
    fn a_peers_identity_subnets_psk_and_grants_are_pinned() {
        let recorded = json!({
            "kind": "VPNPeer",
            "metadata": {"name": "acme", "namespace": "tenant-acme"},
            "spec": {"gatewayRef": {"name": "acme"}, "ipsec": {
                "peer": {"address": "203.0.113.10", "id": "fw.acme.example"},
                "remoteSubnets": ["10.20.0.0/16"],
                "pskSecretRef": {"name": "acme-psk", "key": "psk"},
                "esp": {"proposals": ["aes256gcm16-modp2048"]}}}
        });
        let mut live = recorded.clone();
        live["spec"]["ipsec"]["remoteSubnets"] = json!(["10.20.0.0/17"]);
        live["spec"]["ipsec"]["pskSecretRef"]["name"] = json!("other-psk");
        live["spec"]["authorization"] = json!({"exposures": ["crm"]});
        let whats: Vec<String> = compare(&recorded, Some(&live), "the journal")
            .into_iter()
            .map(|r| r.what)
            .collect();
        assert_eq!(
            whats,
            [
                "spec.ipsec.remoteSubnets",
                "spec.ipsec.pskSecretRef",
                "spec.authorization"
            ]
        );
    }
}
