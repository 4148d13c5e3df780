//! What each wait of a cutover or rollback waits for, decided from the objects as the
//! watch delivers them (pure). Every wait has a live display of what it still waits for
//! and, on timeout, that same text is the diagnosis (DESIGN.md §4.5): which finalizers
//! are left, which condition is missing and its reason and message.
//!
//! Layer 2 (rules): imports only from layers 0 to 2; see docs/architecture.md.

use serde_json::Value;

/// Done, or still waiting for what the text says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    Done,
    Waiting(String),
    /// The wait is over without what it waited for: no waiting can change it (the
    /// operator says so); the text says why.
    Over(String),
}

impl State {
    pub fn done(&self) -> bool {
        *self == State::Done
    }
}

/// The object is gone. While it is there: its finalizers and whether the deletion has
/// started (`deletionTimestamp`).
pub fn gone(label: &str, obj: Option<&Value>) -> State {
    let Some(o) = obj else { return State::Done };
    let finalizers: Vec<&str> = o
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let deleting = o.pointer("/metadata/deletionTimestamp").is_some();
    let fins = if finalizers.is_empty() {
        "no finalizers".to_string()
    } else {
        format!("finalizers: {}", finalizers.join(", "))
    };
    State::Waiting(if deleting {
        format!("{label} still present, being deleted; {fins}")
    } else {
        format!("{label} still present, deletion not started; {fins}")
    })
}

/// Every object gone; while not, what [`gone`] says of each one left.
pub fn all_gone(objects: &[(String, Option<&Value>)]) -> State {
    let waiting: Vec<String> = objects
        .iter()
        .filter_map(|(label, o)| match gone(label, *o) {
            State::Done => None,
            State::Waiting(w) | State::Over(w) => Some(w),
        })
        .collect();
    if waiting.is_empty() {
        State::Done
    } else {
        State::Waiting(waiting.join("; "))
    }
}

/// Condition `type_` of `obj` is `True` for the object's current generation, judged as
/// `kubectl wait` judges it ([`crate::core::verify::current`], issue 9 item 6). While it
/// is not: its status, reason and message as the operator wrote them, or why it is not
/// current.
pub fn condition(label: &str, obj: Option<&Value>, type_: &str) -> State {
    let Some(o) = obj else {
        return State::Waiting(format!("{label} does not exist"));
    };
    let conditions: Vec<crate::core::model::Condition> = o
        .pointer("/status/conditions")
        .cloned()
        .and_then(|c| serde_json::from_value(c).ok())
        .unwrap_or_default();
    let generation = o.pointer("/metadata/generation").and_then(Value::as_i64);
    let status_generation = o
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64);
    match crate::core::verify::current(&conditions, type_, generation, status_generation) {
        Ok(c) if c.status == "True" => State::Done,
        Ok(c) => State::Waiting(format!(
            "{label} {type_}={} reason {}{}",
            c.status,
            c.reason.as_deref().unwrap_or("-"),
            c.message
                .as_deref()
                .filter(|m| !m.is_empty())
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        )),
        Err(why) => State::Waiting(format!("{label}: {why}")),
    }
}

/// Every condition of `types` on every object: the first not yet true.
pub fn all(objects: &[(String, Option<&Value>)], types: &[&str]) -> State {
    let mut missing = Vec::new();
    for (label, obj) in objects {
        for t in types {
            if let State::Waiting(w) = condition(label, *obj, t) {
                missing.push(w);
            }
        }
    }
    if missing.is_empty() {
        State::Done
    } else {
        State::Waiting(missing.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gone_shows_finalizers() {
        assert_eq!(gone("IPsecGateway t/acme", None), State::Done);
        let o = json!({"metadata": {"finalizers": ["ipsec.bnerd.net/cleanup"], "deletionTimestamp": "2026-11-29T02:00:00Z"}});
        assert_eq!(
            gone("IPsecGateway t/acme", Some(&o)),
            State::Waiting("IPsecGateway t/acme still present, being deleted; finalizers: ipsec.bnerd.net/cleanup".into())
        );
        let o = json!({"metadata": {}});
        assert_eq!(
            gone("x", Some(&o)),
            State::Waiting("x still present, deletion not started; no finalizers".into())
        );
    }

    #[test]
    fn all_gone_lists_what_is_left() {
        let o = json!({"metadata": {"finalizers": ["vpn.bnerd.net/cleanup"], "deletionTimestamp": "t"}});
        assert_eq!(all_gone(&[("VPNPeer a".into(), None)]), State::Done);
        assert_eq!(
            all_gone(&[("VPNPeer a".into(), None), ("VPNPeer b".into(), Some(&o))]),
            State::Waiting(
                "VPNPeer b still present, being deleted; finalizers: vpn.bnerd.net/cleanup".into()
            )
        );
    }

    #[test]
    fn conditions_count_for_the_current_generation_and_show_the_reason() {
        let gw = |status: &str, reason: &str, observed: i64| {
            json!({"metadata": {"generation": 2}, "status": {"conditions": [
                {"type": "FIPAttached", "status": status, "reason": reason,
                 "message": "198.51.100.23 is associated with port p-1", "observedGeneration": observed}
            ]}})
        };
        assert_eq!(
            condition("VPNGateway t/acme", Some(&gw("False", "AlreadyAssociated", 2)), "FIPAttached"),
            State::Waiting("VPNGateway t/acme FIPAttached=False reason AlreadyAssociated: 198.51.100.23 is associated with port p-1".into())
        );
        assert_eq!(
            condition("g", Some(&gw("True", "Attached", 1)), "FIPAttached"),
            State::Waiting("g: FIPAttached describes generation 1, the object is at 2".into())
        );
        assert_eq!(
            condition("g", Some(&gw("True", "Attached", 2)), "FIPAttached"),
            State::Done
        );
        assert_eq!(
            condition("g", Some(&gw("True", "Attached", 2)), "Ready"),
            State::Waiting("g: Ready not reported".into())
        );
        assert_eq!(
            condition("g", None, "Ready"),
            State::Waiting("g does not exist".into())
        );
    }

    /// Issue 9 item 6: a condition without its own observedGeneration is judged by
    /// status.observedGeneration, and with neither it is not current.
    #[test]
    fn a_stale_status_without_condition_generations_is_not_done() {
        let gw =
            |status: serde_json::Value| json!({"metadata": {"generation": 2}, "status": status});
        let stale = gw(
            json!({"observedGeneration": 1, "conditions": [{"type": "Ready", "status": "True"}]}),
        );
        assert_eq!(
            condition("g", Some(&stale), "Ready"),
            State::Waiting("g: Ready=True has no observedGeneration and status.observedGeneration is 1, the object is at 2: stale".into())
        );
        let fresh = gw(
            json!({"observedGeneration": 2, "conditions": [{"type": "Ready", "status": "True"}]}),
        );
        assert_eq!(condition("g", Some(&fresh), "Ready"), State::Done);
        let unknown = gw(json!({"conditions": [{"type": "Ready", "status": "True"}]}));
        assert_eq!(
            condition("g", Some(&unknown), "Ready"),
            State::Waiting("g: Ready=True is not known to be current: neither the condition nor the status has an observedGeneration (the object is at 2)".into())
        );
        // The condition's own observedGeneration wins over the status's.
        let own = gw(
            json!({"observedGeneration": 1, "conditions": [{"type": "Ready", "status": "True", "observedGeneration": 2}]}),
        );
        assert_eq!(condition("g", Some(&own), "Ready"), State::Done);
    }

    #[test]
    fn all_lists_every_missing_condition() {
        let ok = json!({"metadata": {"generation": 1}, "status": {"observedGeneration": 1, "conditions": [{"type": "Authorized", "status": "True"}]}});
        let no = json!({"metadata": {"generation": 1}, "status": {"observedGeneration": 1, "conditions": [{"type": "Authorized", "status": "False", "reason": "UnknownExposure"}]}});
        assert_eq!(
            all(&[("p1".into(), Some(&ok))], &["Authorized"]),
            State::Done
        );
        assert_eq!(
            all(
                &[
                    ("p1".into(), Some(&ok)),
                    ("p2".into(), Some(&no)),
                    ("p3".into(), None)
                ],
                &["Authorized"]
            ),
            State::Waiting("p2 Authorized=False reason UnknownExposure; p3 does not exist".into())
        );
    }
}
