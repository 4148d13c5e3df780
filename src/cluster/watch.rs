//! Waiting with a watch, not a sleep loop: list the objects once (their state and a
//! resourceVersion), then watch from there and decide again on every event, until the
//! decision is done or the time is up. A watch the server closes, an expired
//! resourceVersion (410) or a dropped connection start over with a fresh list. What is
//! waited for is decided by the caller (`core::wait`); every change of that text is
//! reported through `on_change`, the live display.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, WatchEvent, WatchParams};
use serde_json::Value;

use super::{Cluster, KubeError};
use crate::core::wait::State;

/// The longest a wait stays silent: what it still waits for is said again after this,
/// even unchanged, so a log shows the wait is alive (README: "a line at least every 5 s
/// of any wait").
pub const HEARTBEAT: Duration = Duration::from_secs(5);

/// How the wait ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// Time is up; what it was still waiting for (the diagnosis).
    TimedOut(String),
    /// `decide` said no waiting can bring it ([`State::Over`]): why.
    Over(String),
}

/// Wait until `decide` is done for the objects `names` of `ar` in the cluster's
/// namespace (`None` for each one that does not exist), at most `timeout`.
pub async fn until(
    cluster: &Cluster,
    ar: &ApiResource,
    names: &[String],
    timeout: Duration,
    decide: impl Fn(&[(String, Option<&Value>)]) -> State,
    on_change: impl Fn(&str),
) -> Result<Outcome, KubeError> {
    let ns = cluster.namespace.as_str();
    let api: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), ns, ar);
    let deadline = Instant::now() + timeout;
    let fields = match names {
        [one] => format!("metadata.name={one}"),
        _ => String::new(),
    };
    let mut objects: BTreeMap<String, Value> = BTreeMap::new();
    let mut last = String::new();
    let said = std::cell::Cell::new(Instant::now());
    let judge = |objects: &BTreeMap<String, Value>, last: &mut String| {
        let view: Vec<(String, Option<&Value>)> =
            names.iter().map(|n| (n.clone(), objects.get(n))).collect();
        match decide(&view) {
            State::Done => Some(Outcome::Done),
            State::Over(why) => Some(Outcome::Over(why)),
            State::Waiting(w) => {
                if w != *last {
                    on_change(&w);
                    said.set(Instant::now());
                    *last = w;
                }
                None
            }
        }
    };
    loop {
        let lp = ListParams::default().fields(&fields);
        let list = match tokio::time::timeout_at(
            deadline.into(),
            cluster.call(
                "list",
                &format!("{} {}", ar.plural, names.join(",")),
                Some(ns),
                || api.list(&lp),
            ),
        )
        .await
        {
            Err(_) => return Ok(Outcome::TimedOut(last)),
            Ok(Ok(list)) => list,
            // A refusal does not heal by waiting.
            Ok(Err(e @ (KubeError::Forbidden { .. } | KubeError::Unauthorized { .. }))) => {
                return Err(e);
            }
            // An outage is one more thing the wait waits through, up to its deadline.
            Ok(Err(e)) => {
                let w = format!("cannot read the cluster: {e}");
                if w != last {
                    on_change(&w);
                    last = w;
                }
                tokio::time::sleep_until(
                    (Instant::now() + Duration::from_secs(1))
                        .min(deadline)
                        .into(),
                )
                .await;
                continue;
            }
        };
        objects.clear();
        for o in list.items {
            let name = o.metadata.name.clone().unwrap_or_default();
            if names.contains(&name) {
                objects.insert(name, serde_json::to_value(o).expect("objects serialize"));
            }
        }
        if let Some(end) = judge(&objects, &mut last) {
            return Ok(end);
        }
        let rv = list.metadata.resource_version.unwrap_or_default();
        let remaining = deadline.saturating_duration_since(Instant::now());
        let wp = WatchParams::default()
            .fields(&fields)
            .timeout(remaining.as_secs().clamp(1, 290) as u32);
        let stream = match api.watch(&wp, &rv).await {
            Ok(s) => s,
            Err(e) => {
                // A blip: list again shortly (bounded by the deadline).
                if Instant::now() >= deadline {
                    return Ok(Outcome::TimedOut(last));
                }
                cluster.notices.emit(super::Notice::WatchFailed {
                    plural: ar.plural.clone(),
                    cause: super::describe(&e),
                });
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let mut stream = stream.boxed();
        let opened = Instant::now();
        loop {
            let beat = (said.get() + HEARTBEAT).min(deadline);
            let next = match tokio::time::timeout_at(beat.into(), stream.try_next()).await {
                Err(_) if Instant::now() >= deadline => return Ok(Outcome::TimedOut(last)),
                // Nothing changed for HEARTBEAT: say so (a stream's next item is not lost
                // by dropping the wait for it).
                Err(_) => {
                    on_change(&last);
                    said.set(Instant::now());
                    continue;
                }
                Ok(n) => n,
            };
            match next {
                Ok(Some(WatchEvent::Added(o) | WatchEvent::Modified(o))) => {
                    let name = o.metadata.name.clone().unwrap_or_default();
                    if names.contains(&name) {
                        objects.insert(name, serde_json::to_value(o).expect("objects serialize"));
                    }
                }
                Ok(Some(WatchEvent::Deleted(o))) => {
                    objects.remove(&o.metadata.name.clone().unwrap_or_default());
                }
                Ok(Some(WatchEvent::Bookmark(_))) => continue,
                // 410 Gone and friends, the end of the stream, a broken connection: relist,
                // but not in a tight loop when the server closes every watch at once.
                Ok(Some(WatchEvent::Error(_))) | Ok(None) | Err(_) => {
                    let again = (opened + Duration::from_millis(200)).min(deadline);
                    tokio::time::sleep_until(again.into()).await;
                    break;
                }
            }
            if let Some(end) = judge(&objects, &mut last) {
                return Ok(end);
            }
        }
    }
}
