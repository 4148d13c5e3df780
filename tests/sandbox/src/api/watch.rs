//! Watch: a chunked stream of `{"type": …, "object": …}` lines, resumable from a
//! resourceVersion (410 when too old), with `timeoutSeconds`, bookmarks,
//! `sendInitialEvents`, selectors, and the "dropped watch" fault.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures::SinkExt;
use futures::channel::mpsc;
use serde_json::{Value, json};
use tokio::time::{Instant, sleep_until};

use super::{App, Query, Target, flag, param, selectors};
use crate::status::ApiError;
use crate::store::EventKind;

/// How often bookmarks go out when the client allows them.
const BOOKMARK_EVERY: Duration = Duration::from_secs(1);
/// The server's own limit on a watch without `timeoutSeconds`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

fn line(kind: &str, object: &Value) -> Result<Bytes, Infallible> {
    let mut s = json!({"type": kind, "object": object}).to_string();
    s.push('\n');
    Ok(Bytes::from(s))
}

fn bookmark(t: &Target, rv: u64, initial_end: bool) -> Value {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    json!({"apiVersion": t.rt.api_version(), "kind": t.rt.kind, "metadata": meta})
}

pub fn watch(app: &App, t: &Target, query: &Query) -> Result<Response, ApiError> {
    let (labels, fields) = selectors(t, query)?;
    let start: Option<u64> = match param(query, "resourceVersion") {
        None | Some("") | Some("0") => None,
        Some(rv) => Some(
            rv.parse()
                .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {rv:?}")))?,
        ),
    };
    // Fail fast, with a status code, when the log no longer reaches back.
    if let Some(rv) = start {
        app.store.events_after(rv)?;
    }
    let mut timeout = param(query, "timeoutSeconds")
        .and_then(|s| s.parse().ok())
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_TIMEOUT);
    if let Some(ms) = app.faults.read().ok().and_then(|f| f.drop_watches_after_ms) {
        timeout = timeout.min(Duration::from_millis(ms));
    }
    let bookmarks = flag(query, "allowWatchBookmarks");
    let send_initial = flag(query, "sendInitialEvents");
    let (mut tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(256);
    let store = app.store.clone();
    let mut shutdown = app.shutdown.clone();
    let t = t.clone();
    tokio::spawn(async move {
        let deadline = Instant::now() + timeout;
        let mut changes = store.subscribe();
        let matches = |o: &Value| {
            t.ns.as_deref().is_none_or(|ns| {
                o.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns)
            }) && labels.matches(o)
                && fields.matches(o)
        };
        let mut last = match start {
            Some(rv) => rv,
            None => {
                let (items, rv) = store.list(&t.rt, t.ns.as_deref());
                for o in items.iter().filter(|o| matches(o)) {
                    if tx.send(line("ADDED", o)).await.is_err() {
                        return;
                    }
                }
                if send_initial
                    && tx
                        .send(line("BOOKMARK", &bookmark(&t, rv, true)))
                        .await
                        .is_err()
                {
                    return;
                }
                rv
            }
        };
        let mut next_bookmark = Instant::now() + BOOKMARK_EVERY;
        loop {
            match store.events_after(last) {
                Err(gone) => {
                    let _ = tx.send(line("ERROR", &gone.to_status())).await;
                    return;
                }
                Ok(events) => {
                    for e in events {
                        last = e.rv;
                        if e.gvr != t.rt.gvr() || !matches(&e.object) {
                            continue;
                        }
                        let kind = match e.kind {
                            EventKind::Added => "ADDED",
                            EventKind::Modified => "MODIFIED",
                            EventKind::Deleted => "DELETED",
                        };
                        if tx.send(line(kind, &e.object)).await.is_err() {
                            return;
                        }
                    }
                }
            }
            if tx.is_closed() || *shutdown.borrow() {
                return;
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                _ = sleep_until(deadline) => return,
                _ = shutdown.changed() => return,
                _ = sleep_until(next_bookmark), if bookmarks => {
                    next_bookmark = Instant::now() + BOOKMARK_EVERY;
                    if tx.send(line("BOOKMARK", &bookmark(&t, last, false))).await.is_err() {
                        return;
                    }
                }
            }
        }
    });
    Ok((
        StatusCode::OK,
        [
            ("content-type", "application/json"),
            ("cache-control", "no-cache, private"),
        ],
        Body::from_stream(rx),
    )
        .into_response())
}
