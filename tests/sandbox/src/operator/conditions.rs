//! Status conditions as the Kubernetes API conventions (and DESIGN.md §4.5's diagnoses)
//! want them: type, status, reason, message, `lastTransitionTime` that moves only when
//! the status flips, and `observedGeneration`.

use vpnmig::core::model::Condition;

/// RFC 3339 now, as the API server writes timestamps.
pub fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// A condition without its transition time (filled in by [`merge`]).
pub fn cond(
    type_: &str,
    ok: bool,
    reason: &str,
    message: impl Into<String>,
    generation: i64,
) -> Condition {
    Condition {
        type_: type_.into(),
        status: if ok { "True" } else { "False" }.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_transition_time: None,
        observed_generation: Some(generation),
    }
}

/// The new conditions, keeping each old `lastTransitionTime` whose status did not change.
pub fn merge(old: &[Condition], new: Vec<Condition>) -> Vec<Condition> {
    let t = now();
    new.into_iter()
        .map(|mut c| {
            c.last_transition_time = match old.iter().find(|o| o.type_ == c.type_) {
                Some(o) if o.status == c.status && o.last_transition_time.is_some() => {
                    o.last_transition_time.clone()
                }
                _ => Some(t.clone()),
            };
            c
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_time_moves_only_on_flip() {
        let mut old = cond("Ready", true, "A", "a", 1);
        old.last_transition_time = Some("2020-01-01T00:00:00Z".into());
        let same = merge(
            std::slice::from_ref(&old),
            vec![cond("Ready", true, "B", "b", 2)],
        );
        assert_eq!(
            same[0].last_transition_time.as_deref(),
            Some("2020-01-01T00:00:00Z")
        );
        let flipped = merge(&[old], vec![cond("Ready", false, "B", "b", 2)]);
        assert_ne!(
            flipped[0].last_transition_time.as_deref(),
            Some("2020-01-01T00:00:00Z")
        );
    }
}
