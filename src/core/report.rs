//! The field report: every leaf of the old spec, each status value used and each metadata
//! key, with the rule applied (pinned, copied, derived, not carried, unknown) and a
//! verdict computed by reading the value back out of the rendered target.
//!
//! This walks the *verbatim* source (`Source::raw`), not the typed model, so a field the
//! model does not know cannot be lost without a row saying so (DESIGN.md §3: "Every field
//! of the old spec is accounted for"). The rule table is [`map_spec`]; it states the
//! runbook's "What must stay pinned" table path by path.
//!
//! Layer 1 (translation and fingerprints): imports only from layers 0 to 1; see docs/architecture.md.

use serde::Serialize;
use serde_json::Value;

use crate::core::addr;
use crate::core::model::{CLEANED_METADATA, IPsecGateway};
use crate::core::path::{JsonPath, Seg};
use crate::core::translate::{LAST_APPLIED, MIGRATED_FROM, Targets, not_carried_by};

/// What happens to a source value.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// Must arrive byte-for-byte: the client's firewall or parameter sheet depends on it.
    Pinned,
    /// Copied as is (DPD timers, exposure targets, network, labels).
    Copied,
    /// A new value computed from old ones (peer names, grants, gatewayRef).
    Derived,
    /// Deliberately not carried: server-set or tool state.
    NotCarried,
    /// A field vpnmig does not know: reported and blocking, never dropped silently.
    Unknown,
}

/// Whether the value arrived.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Read back from the target and equal to the source value.
    Identical,
    /// Present in the target with another value.
    Differs,
    /// Not present in the target.
    Missing,
    /// Computed; `newValue` holds the result.
    Derived,
    /// Not carried, by rule or because unknown.
    Dropped,
}

/// One row of the field report.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FieldRow {
    /// Human label, e.g. `tunnel main: peer address`.
    pub field: String,
    pub rule: Rule,
    /// Path in the IPsecGateway.
    pub from: JsonPath,
    /// The target object, `Kind name`; `None` when not carried.
    pub target: Option<String>,
    /// Path in the target object.
    pub to: Option<JsonPath>,
    /// The source value (for derived rows: what it was derived from).
    pub value: Value,
    /// The value read from the target, when it is not identical to `value`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_value: Option<Value>,
    pub verdict: Verdict,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Which target(s) a source value goes to.
#[derive(Clone, Copy, Debug)]
enum Dest {
    Gateway,
    Peer(usize),
    AllPeers,
    All,
}

struct Mapping {
    rule: Rule,
    dest: Dest,
    to: String,
    field: String,
}

/// Borrowed form of a path segment, for slice patterns.
#[derive(Clone, Copy)]
enum T<'a> {
    K(&'a str),
    I(usize),
}
use T::{I, K};

fn m(rule: Rule, dest: Dest, to: impl Into<String>, field: impl Into<String>) -> Option<Mapping> {
    Some(Mapping {
        rule,
        dest,
        to: to.into(),
        field: field.into(),
    })
}

/// The rule table for `spec` leaves (paths relative to `spec`). `None`: unknown field.
fn map_spec(p: &[T], old: &IPsecGateway) -> Option<Mapping> {
    use Dest::*;
    use Rule::*;
    let tunnel = |i: usize| {
        old.spec
            .tunnels
            .get(i)
            .map_or(String::new(), |t| t.name.clone())
    };
    let exposure = |i: usize| {
        old.spec
            .exposures
            .get(i)
            .map_or(String::new(), |e| e.name.clone())
    };
    let reverse = |i: usize| {
        old.spec
            .reverse_exposures
            .get(i)
            .map_or(String::new(), |e| e.name.clone())
    };
    match *p {
        [K("endpoint"), K("floatingIP")] => {
            m(Pinned, Gateway, "spec.endpoint.floatingIP", "floating IP")
        }
        [K("endpoint"), K("network")] => m(Copied, Gateway, "spec.endpoint.network", "FIP network"),
        [K("auth"), K("pskSecretRef"), K(k @ ("name" | "key"))] => m(
            Pinned,
            AllPeers,
            format!("spec.ipsec.pskSecretRef.{k}"),
            format!("PSK Secret {k}"),
        ),
        [K("ike"), K(k @ ("version" | "lifetime"))] => m(
            Pinned,
            Gateway,
            format!("spec.ipsec.ike.{k}"),
            format!("IKE {k}"),
        ),
        [K("ike"), K("proposals")] => {
            m(Pinned, Gateway, "spec.ipsec.ike.proposals", "IKE proposals")
        }
        [K("ike"), K("proposals"), I(j)] => m(
            Pinned,
            Gateway,
            format!("spec.ipsec.ike.proposals[{j}]"),
            "IKE proposal",
        ),
        [K("tunnels"), I(i), K("name")] => m(
            Derived,
            Peer(i),
            "metadata.name",
            format!("tunnel {}: name", tunnel(i)),
        ),
        [K("tunnels"), I(i), K("peer"), K(k @ ("address" | "id"))] => m(
            Pinned,
            Peer(i),
            format!("spec.ipsec.peer.{k}"),
            format!("tunnel {}: peer {k}", tunnel(i)),
        ),
        [K("tunnels"), I(i), K("remoteSubnets")] => m(
            Pinned,
            Peer(i),
            "spec.ipsec.remoteSubnets",
            format!("tunnel {}: remote subnets", tunnel(i)),
        ),
        [K("tunnels"), I(i), K("remoteSubnets"), I(j)] => m(
            Pinned,
            Peer(i),
            format!("spec.ipsec.remoteSubnets[{j}]"),
            format!("tunnel {}: remote subnet", tunnel(i)),
        ),
        [K("tunnels"), I(i), K("esp"), K("lifetime")] => m(
            Pinned,
            Peer(i),
            "spec.ipsec.esp.lifetime",
            format!("tunnel {}: ESP lifetime", tunnel(i)),
        ),
        [K("tunnels"), I(i), K("esp"), K("proposals")] => m(
            Pinned,
            Peer(i),
            "spec.ipsec.esp.proposals",
            format!("tunnel {}: ESP proposals", tunnel(i)),
        ),
        [K("tunnels"), I(i), K("esp"), K("proposals"), I(j)] => m(
            Pinned,
            Peer(i),
            format!("spec.ipsec.esp.proposals[{j}]"),
            format!("tunnel {}: ESP proposal", tunnel(i)),
        ),
        [K("tunnels"), I(i), K("esp") | K("dpd")] => {
            let k = if matches!(p[2], K("esp")) {
                "esp"
            } else {
                "dpd"
            };
            m(
                Copied,
                Peer(i),
                format!("spec.ipsec.{k}"),
                format!("tunnel {}: {k}", tunnel(i)),
            )
        }
        [
            K("tunnels"),
            I(i),
            K("dpd"),
            K(k @ ("delay" | "timeout" | "action")),
        ] => m(
            Copied,
            Peer(i),
            format!("spec.ipsec.dpd.{k}"),
            format!("tunnel {}: DPD {k}", tunnel(i)),
        ),
        [K(list @ ("exposures" | "reverseExposures"))] => {
            m(Copied, Gateway, format!("spec.{list}"), list)
        }
        [K("exposures"), I(i), K("virtualIP")] => m(
            Pinned,
            Gateway,
            format!("spec.exposures[{i}].virtualIP"),
            format!("exposure {}: virtual IP", exposure(i)),
        ),
        [
            K(list @ ("exposures" | "reverseExposures")),
            I(i),
            K(k @ ("name" | "protocol")),
        ] => {
            let what = if list == "exposures" {
                format!("exposure {}", exposure(i))
            } else {
                format!("reverse exposure {}", reverse(i))
            };
            m(
                Copied,
                Gateway,
                format!("spec.{list}[{i}].{k}"),
                format!("{what}: {k}"),
            )
        }
        [
            K(list @ ("exposures" | "reverseExposures")),
            I(i),
            K("target"),
            K(k @ ("address" | "port")),
        ] => {
            let what = if list == "exposures" {
                format!("exposure {}", exposure(i))
            } else {
                format!("reverse exposure {}", reverse(i))
            };
            m(
                Copied,
                Gateway,
                format!("spec.{list}[{i}].target.{k}"),
                format!("{what}: target {k}"),
            )
        }
        _ => None,
    }
}

/// Server-set metadata: never carried to a new object. What the saved old manifest drops
/// ([`CLEANED_METADATA`]), plus the old object's owners and name prefix.
fn server_metadata() -> impl Iterator<Item = &'static str> {
    CLEANED_METADATA
        .iter()
        .copied()
        .chain(["ownerReferences", "generateName"])
}

/// Build the field report for `raw` (the verbatim source object) against `targets`.
pub fn field_report(raw: &Value, old: &IPsecGateway, targets: &Targets) -> Vec<FieldRow> {
    let docs = targets.objects();
    let peers = targets.peers.len();
    let expand = |dest: Dest| -> Vec<usize> {
        match dest {
            Dest::Gateway => vec![0],
            Dest::Peer(i) => vec![i + 1],
            Dest::AllPeers => (1..=peers).collect(),
            Dest::All => (0..=peers).collect(),
        }
    };
    let mut rows = Vec::new();
    let mut push = |field: String,
                    rule: Rule,
                    from: JsonPath,
                    dest: Option<(Dest, JsonPath)>,
                    value: &Value,
                    reason: Option<&str>| {
        let Some((dest, to)) = dest else {
            let verdict = Verdict::Dropped;
            rows.push(FieldRow {
                field,
                rule,
                from,
                target: None,
                to: None,
                value: value.clone(),
                new_value: None,
                verdict,
                reason: reason.map(str::to_string),
            });
            return;
        };
        for t in expand(dest) {
            let (target, doc) = &docs[t];
            let found = to.get(doc);
            let (verdict, new_value) = match (rule, found) {
                (Rule::Derived, f) => (Verdict::Derived, f.cloned()),
                (_, Some(v)) if v == value || same_address(v, value) => (Verdict::Identical, None),
                (_, None) if value.is_null() || is_empty_container(value) => {
                    (Verdict::Identical, None)
                }
                (_, None) => (Verdict::Missing, None),
                (_, Some(v)) => (Verdict::Differs, Some(v.clone())),
            };
            rows.push(FieldRow {
                field: field.clone(),
                rule,
                from: from.clone(),
                target: Some(target.clone()),
                to: Some(to.clone()),
                value: value.clone(),
                new_value,
                verdict,
                reason: reason.map(str::to_string),
            });
        }
    };

    // spec: every leaf, through the rule table.
    let spec_root = JsonPath::parse("spec");
    let mut leaves = Vec::new();
    if let Some(spec) = raw.get("spec") {
        collect_leaves(spec, &JsonPath::default(), &mut leaves);
    }
    for (rel, value) in &leaves {
        let toks: Vec<T> = rel
            .0
            .iter()
            .map(|s| match s {
                Seg::Key(k) => K(k),
                Seg::Index(i) => I(*i),
            })
            .collect();
        let from = JsonPath(spec_root.0.iter().chain(rel.0.iter()).cloned().collect());
        match map_spec(&toks, old) {
            None if matches!(toks[..], [K("tunnels")]) => push(
                "tunnels".into(),
                Rule::NotCarried,
                from,
                None,
                value,
                Some("no tunnels: no VPNPeer is created"),
            ),
            // An empty or null value carries nothing, known path or not.
            None if value.is_null() || is_empty_container(value) => {}
            Some(mp) => push(
                mp.field,
                mp.rule,
                from,
                Some((mp.dest, JsonPath::parse(&mp.to))),
                value,
                None,
            ),
            None => {
                let shown = if looks_secret(rel) {
                    Value::String("<not shown: the name suggests a secret>".into())
                } else {
                    value.clone()
                };
                push(
                    format!("unknown field {from}"),
                    Rule::Unknown,
                    from,
                    None,
                    &shown,
                    Some("not in vpnmig's model of IPsecGateway (docs/model.md); it would be lost"),
                )
            }
        }
    }

    // status values the translation uses.
    let status = raw.get("status").cloned().unwrap_or(Value::Null);
    if let Some(cidr) = status.get("serviceCIDR").filter(|v| !v.is_null()) {
        push(
            "service CIDR".into(),
            Rule::Pinned,
            JsonPath::parse("status.serviceCIDR"),
            Some((Dest::Gateway, JsonPath::parse("spec.serviceCIDR"))),
            cidr,
            None,
        );
    }
    let status_fip = status.get("floatingIP").filter(|v| !v.is_null());
    if let (None, Some(fip)) = (old.spec.endpoint.pinned_fip(), status_fip) {
        let reason =
            Some("spec does not pin the floating IP; taken from status (blocked: pin it first)");
        push(
            "floating IP".into(),
            Rule::Pinned,
            JsonPath::parse("status.floatingIP"),
            Some((Dest::Gateway, JsonPath::parse("spec.endpoint.floatingIP"))),
            fip,
            reason,
        );
    }
    for (k, s) in status
        .get("exposures")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let (Some(name), Some(vip)) = (s.get("name").and_then(Value::as_str), s.get("virtualIP"))
        else {
            continue;
        };
        let from = JsonPath::parse(&format!("status.exposures[{k}].virtualIP"));
        match old.spec.exposures.iter().position(|e| e.name == name) {
            Some(i) => push(
                format!("exposure {name}: virtual IP"),
                Rule::Pinned,
                from,
                Some((
                    Dest::Gateway,
                    JsonPath::parse(&format!("spec.exposures[{i}].virtualIP")),
                )),
                vip,
                None,
            ),
            None => push(
                format!("exposure {name}: virtual IP"),
                Rule::NotCarried,
                from,
                None,
                vip,
                Some("status names an exposure that spec no longer has"),
            ),
        }
    }

    // metadata.
    let meta = raw.get("metadata").cloned().unwrap_or(Value::Null);
    let md = JsonPath::parse("metadata");
    if let Some(name) = meta.get("name") {
        push(
            "name".into(),
            Rule::Copied,
            md.key("name"),
            Some((Dest::Gateway, md.key("name"))),
            name,
            None,
        );
        for i in 0..peers {
            push(
                "gateway reference".into(),
                Rule::Derived,
                md.key("name"),
                Some((Dest::Peer(i), JsonPath::parse("spec.gatewayRef.name"))),
                name,
                None,
            );
        }
        push(
            "migrated-from annotation".into(),
            Rule::Derived,
            md.key("name"),
            Some((Dest::All, md.key("annotations").key(MIGRATED_FROM))),
            name,
            None,
        );
    }
    if let Some(ns) = meta.get("namespace") {
        push(
            "namespace".into(),
            Rule::Copied,
            md.key("namespace"),
            Some((Dest::All, md.key("namespace"))),
            ns,
            None,
        );
    }
    let argo = crate::core::translate::argo_wrote(
        meta.get("managedFields")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| m["manager"].as_str()),
    );
    for (what, key) in [("label", "labels"), ("annotation", "annotations")] {
        for (k, v) in meta
            .get(key)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let path = md.key(key).key(k);
            if let Some(reason) = not_carried_by(argo, key == "annotations", k) {
                let shown = if k == LAST_APPLIED {
                    Value::String("<omitted>".into())
                } else {
                    v.clone()
                };
                push(
                    format!("{what} {k}"),
                    Rule::NotCarried,
                    path,
                    None,
                    &shown,
                    Some(reason),
                );
            } else {
                push(
                    format!("{what} {k}"),
                    Rule::Copied,
                    path.clone(),
                    Some((Dest::All, path)),
                    v,
                    None,
                );
            }
        }
    }
    for key in server_metadata() {
        if let Some(v) = meta.get(key) {
            let shown = if v.is_array() || v.is_object() {
                Value::String("<omitted>".into())
            } else {
                v.clone()
            };
            let reason = if key == "ownerReferences" {
                "points at the old object's owners; if a controller owns the gateway, adopt the new one explicitly"
            } else {
                "set by the API server or the operator for the new object"
            };
            push(
                format!("metadata {key}"),
                Rule::NotCarried,
                md.key(key),
                None,
                &shown,
                Some(reason),
            );
        }
    }

    // values with no single source leaf.
    let kind = Value::String("IPsecGateway".into());
    push(
        "protocol".into(),
        Rule::Derived,
        JsonPath::parse("kind"),
        Some((Dest::Gateway, JsonPath::parse("spec.protocol"))),
        &kind,
        None,
    );
    if peers > 1 {
        for (list, names) in [
            (
                "exposures",
                old.spec
                    .exposures
                    .iter()
                    .map(|e| &e.name)
                    .collect::<Vec<_>>(),
            ),
            (
                "reverseExposures",
                old.spec.reverse_exposures.iter().map(|e| &e.name).collect(),
            ),
        ] {
            for (j, name) in names.into_iter().enumerate() {
                let from = JsonPath::parse(&format!("spec.{list}[{j}].name"));
                let to = JsonPath::parse(&format!("spec.authorization.{list}[{j}]"));
                push(
                    format!("authorization grant {name}"),
                    Rule::Derived,
                    from,
                    Some((Dest::AllPeers, to)),
                    &Value::String(name.clone()),
                    None,
                );
            }
        }
    }
    rows
}

/// Whether two values are the same IP address or network spelled differently
/// (`FD00::A` and `fd00::a`): the address arrives, so the value is identical for the
/// client's firewall (issue 9 item 4: addresses are compared parsed, never as text).
fn same_address(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_str(), b.as_str()) else {
        return false;
    };
    if addr::addr(a).is_some() {
        return addr::same_addr(a, b);
    }
    a.contains('/') && addr::net(a).is_some() && addr::same_net(a, b)
}

/// Whether a path's keys suggest a credential (`psk`, `password`, `token`, …): the value
/// of such an unknown field is never printed or written.
fn looks_secret(path: &JsonPath) -> bool {
    const WORDS: &[&str] = &[
        "psk",
        "secret",
        "password",
        "passwd",
        "token",
        "credential",
        "privatekey",
        "private_key",
        "key",
    ];
    path.0.iter().any(|s| matches!(s, Seg::Key(k) if { let k = k.to_ascii_lowercase(); WORDS.iter().any(|w| k.contains(w)) }))
}

fn is_empty_container(v: &Value) -> bool {
    matches!(v, Value::Array(a) if a.is_empty()) || matches!(v, Value::Object(o) if o.is_empty())
}

/// Scalars and empty containers below `v`, depth first, in document order.
/// The leaves of `v`, keys in alphabetical order and list items in theirs: the rows come
/// in one order whether the object was read from a file (its author's key order) or
/// from the API server (the server's), issue 10 item 6.
fn collect_leaves(v: &Value, at: &JsonPath, out: &mut Vec<(JsonPath, Value)>) {
    match v {
        Value::Object(o) if !o.is_empty() => {
            let mut keys: Vec<(&String, &Value)> = o.iter().collect();
            keys.sort_by(|a, b| a.0.cmp(b.0));
            keys.into_iter()
                .for_each(|(k, c)| collect_leaves(c, &at.key(k), out))
        }
        Value::Array(a) if !a.is_empty() => a
            .iter()
            .enumerate()
            .for_each(|(i, c)| collect_leaves(c, &at.index(i), out)),
        _ => out.push((at.clone(), v.clone())),
    }
}
