//! The tunnel wait: every tunnel ESTABLISHED and verified against the journal's pinned
//! values, through the verify machinery.

use super::*;

/// How the tunnel wait ended.
pub(crate) struct Tunnels {
    /// The last verify report.
    pub rows: Vec<Row>,
    /// When the first tunnel was seen ESTABLISHED (its CHILD SAs installed).
    pub first_up: Option<jiff::Timestamp>,
    /// When each tunnel (verify's row object, `peer NAME`) was first seen up.
    pub up: Vec<(String, jiff::Timestamp)>,
    /// `Some(diagnosis)`: the time ran out before the gateway was healthy.
    pub timed_out: Option<String>,
}

/// What the tunnel wait expects of the gateway beyond what `verify` reads from it: its
/// kind (the other kind of the same name is not the gateway this run is about), and for
/// an IPsecGateway, which cannot pin them, the serviceCIDR and virtual IPs the journal
/// recorded.
pub(crate) struct Expect {
    pub kind: &'static str,
    pub service_cidr: Option<String>,
    pub virtual_ips: Vec<(String, String)>,
    /// The approved objects (the journal's targets, or its old manifest) that the live
    /// ones must match on every pinned field (`core::reference`; issue 9 item 1).
    pub reference: Vec<Value>,
}

/// The live objects compared with each of `reference` on their pinned fields
/// (`core::reference::compare`); `source` names the reference in the rows.
pub async fn reference_rows(
    cluster: &Cluster,
    reference: &[Value],
    source: &str,
) -> Result<Vec<Row>, KubeError> {
    let mut rows = Vec::new();
    for r in reference {
        let kind = r["kind"].as_str().unwrap_or_default();
        let name = r
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let live = objects::get(cluster, kind, name).await?;
        rows.extend(crate::core::reference::compare(r, live.as_ref(), source));
    }
    Ok(rows)
}

/// A pinned value that differs from the approved reference does not heal by waiting:
/// the rows that say so, if any.
pub(super) fn reference_failures(rows: &[Row]) -> Vec<&Row> {
    rows.iter()
        .filter(|r| {
            r.check == "pinned" && r.verdict == Verdict::Fail && r.detail.contains(" pins ")
        })
        .collect()
}

impl Expect {
    pub(super) fn apply(&self, view: &mut verify::GatewayView) {
        if !view.object.starts_with(&format!("{} ", self.kind)) {
            view.problems.push(format!(
                "this run expects the {} of that name, but the cluster has {} (another run may have changed it)",
                self.kind, view.object
            ));
        }
        if view.pinned_cidr.is_none() {
            view.pinned_cidr = self.service_cidr.clone();
        }
        if view.pinned_vips.is_empty() {
            view.pinned_vips = self.virtual_ips.clone();
        }
    }
}

/// How often the tunnels are looked at: `swanctl` has nothing to watch, so this one wait
/// polls (every other wait watches).
pub(super) const TUNNEL_POLL: Duration = Duration::from_millis(500);

/// How long the SAs `swanctl --list-sas` showed stand while the gateway's conditions and
/// peers (what the operator reports of charon) stay as they were: a look in between asks
/// the API server only. Each exec is a process in the pod and a stream through the API
/// server and the kubelet; in a 100-gateway wave at concurrency 20 those were most of the
/// requests' cost (`cargo bench --bench wave`, docs/fleet.md). A change the operator
/// reports is looked at on the next look, as before.
pub(super) const SAS_STAND: Duration = Duration::from_secs(2);

/// Wait until `verify` finds gateway `name` healthy (conditions, pinned values, every
/// tunnel ESTABLISHED with its CHILD SAs), at most `timeout`. A refusal (401/403) ends
/// the wait; anything else the cluster says is one more thing still missing.
pub(crate) async fn wait_tunnels(
    cluster: &Cluster,
    ev: &dyn Emit,
    name: &str,
    timeout: Duration,
    expect: &Expect,
) -> Result<Tunnels, Error> {
    let title = format!("tunnels of {name} ESTABLISHED and verified");
    let started = Instant::now();
    ev.emit(Event::WaitStarted {
        title: title.clone(),
    });
    let finished = |result: Result<&str, &str>| {
        ev.emit(Event::WaitFinished {
            title: title.clone(),
            elapsed: started.elapsed(),
            result: result.map(str::to_string).map_err(str::to_string),
        })
    };
    let mut first_up = None;
    let mut up: Vec<(String, jiff::Timestamp)> = Vec::new();
    let mut rows = Vec::new();
    let mut last = String::new();
    // Why the latest look could not be taken (cleared by a look that was).
    let mut unread: Option<KubeError> = None;
    // The view of the last exec of swanctl, when, and what it showed.
    let mut asked: Option<(
        verify::GatewayView,
        Instant,
        Result<crate::core::swanctl::Sas, String>,
    )> = None;
    loop {
        let remaining = timeout.saturating_sub(started.elapsed());
        let attempt = tokio::time::timeout(remaining, async {
            let mut view = fetch::view(cluster, name).await?;
            expect.apply(&mut view);
            let sas = match &asked {
                Some((v, at, sas)) if *v == view && at.elapsed() < SAS_STAND => sas.clone(),
                _ => {
                    let at = Instant::now();
                    let sas = fetch::sas(cluster, name).await?;
                    asked = Some((view.clone(), at, sas.clone()));
                    sas
                }
            };
            let mut rows = verify::verify(&view, sas.as_ref().map_err(String::as_str));
            rows.extend(reference_rows(cluster, &expect.reference, "the journal").await?);
            Ok::<_, KubeError>(rows)
        })
        .await;
        let waiting = match attempt {
            // The look did not finish before the timeout (the calls were still retrying):
            // what the last finished look found stands; when no look ever finished, the
            // state is as unknown as after a look that failed.
            Err(_) if !rows.is_empty() || unread.is_some() => None,
            Err(_) => {
                unread = Some(KubeError::Deadline {
                    verb: "read".into(),
                    what: format!("the conditions and SAs of {name}"),
                    scope: format!(" in namespace {}", cluster.namespace),
                    server: cluster.server.clone(),
                    seconds: started.elapsed().as_secs(),
                });
                None
            }
            Ok(Ok(now)) => {
                unread = None;
                rows = now;
                let changed = reference_failures(&rows);
                if !changed.is_empty() {
                    let what = changed
                        .iter()
                        .map(|r| format!("{} {}: {}", r.object, r.what, r.detail))
                        .collect::<Vec<_>>()
                        .join("; ");
                    finished(Err(&what));
                    return Err(Error::Stop {
                        code: exit::VERIFY_FAILED,
                        message: format!(
                            "a pinned value differs from the journal, so the window cannot be done: {what}"
                        ),
                        hint: Some(crate::window::error::hint!(
                            "someone changed it after the apply (the field manager is named above): set it back to the journal's value (`kubectl edit`, or ask its owner), then run the same command again to resume; `vpnmig verify {name} -n {}` shows every pinned value",
                            cluster.namespace
                        )),
                    });
                }
                let seen = jiff::Timestamp::now();
                for r in rows
                    .iter()
                    .filter(|r| r.check == "tunnel" && r.verdict == Verdict::Ok)
                {
                    first_up.get_or_insert(seen);
                    if !up.iter().any(|(o, _)| *o == r.object) {
                        up.push((r.object.clone(), seen));
                    }
                }
                if verify::healthy(&rows) {
                    finished(Ok("HEALTHY"));
                    return Ok(Tunnels {
                        rows,
                        first_up,
                        up,
                        timed_out: None,
                    });
                }
                Some(
                    rows.iter()
                        .filter(|r| r.verdict == Verdict::Fail)
                        .map(|r| format!("{} {}: {}", r.object, r.what, r.detail))
                        .collect::<Vec<_>>()
                        .join("; "),
                )
            }
            Ok(Err(e @ (KubeError::Forbidden { .. } | KubeError::Unauthorized { .. }))) => {
                finished(Err(&e.to_string()));
                return Err(e.into());
            }
            Ok(Err(e)) => {
                let w = format!("cannot read the cluster: {e}");
                unread = Some(e);
                Some(w)
            }
        };
        if let Some(w) = waiting
            && w != last
        {
            ev.emit(Event::Waiting {
                title: title.clone(),
                elapsed: started.elapsed(),
                seen: w.clone(),
            });
            last = w;
        }
        if started.elapsed() >= timeout {
            finished(Err(&last));
            // The last look could not be taken: the tunnels' state is unknown, which is
            // no verdict (issue 9 item 0) and no reason to roll back.
            if let Some(e) = unread {
                return Err(e.into());
            }
            return Ok(Tunnels {
                rows,
                first_up,
                up,
                timed_out: Some(last),
            });
        }
        tokio::time::sleep(TUNNEL_POLL.min(timeout.saturating_sub(started.elapsed()))).await;
    }
}
