//! Interruption and tunnel initiation: a wait that a Ctrl-C ends, the initiate of each
//! tunnel, the outages measured and the time a journal phase was reached.

use super::*;

/// Run `flow`; when `stop` resolves (the caller's Ctrl-C, SIGTERM, SIGHUP: to the error
/// that stops the run, `exit::INTERRUPTED` for an interruption) or another run takes the
/// lock, stop it where it is (every step is idempotent and
/// the journal is written before and after each one).
pub(super) async fn interruptible<T>(
    flow: impl std::future::Future<Output = Result<T, Error>>,
    lock: Option<&Lock>,
    stop: impl std::future::Future<Output = Error>,
) -> Result<T, Error> {
    let lost = async {
        match lock {
            Some(l) => l.lost().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        r = flow => r,
        e = lost => Err(Error::Lock(e)),
        e = stop => Err(e),
    }
}

/// After an interrupted run: say where the journal stands and how to go on.
pub(super) async fn after_interrupt<T>(
    cluster: &Cluster,
    name: &str,
    result: Result<T, Error>,
) -> Result<T, Error> {
    match result {
        Err(Error::Stop {
            code: exit::INTERRUPTED,
            message,
            ..
        }) => {
            let ns = cluster.namespace.as_str();
            let (message, hint) = match journal::read(cluster, name).await {
                // The window's own restore of an owner, interrupted after its intent was
                // recorded (its patch may have re-armed it, its first sync unwatched):
                // never "the cutover is complete" (a21l A06); the next run suspends it
                // again, checks what that sync did and restores it watching it.
                Ok(Some(j))
                    if j.phase.finished() && j.gitops.iter().any(|r| r.restoring.is_some()) =>
                {
                    let r = j
                        .gitops
                        .iter()
                        .find(|r| r.restoring.is_some())
                        .expect("checked above");
                    let again = if j.phase == crate::core::journal::Phase::Done {
                        crate::window::error::Run::cutover(name, ns)
                    } else {
                        crate::window::error::Run::rollback(name, ns)
                    };
                    (
                        format!(
                            "{message}; the journal of {name} -n {ns} is at phase {}, but this window's own restore of {} re-armed it and did not finish: its first sync is not watched",
                            j.phase,
                            r.owner.display()
                        ),
                        crate::window::error::hint!(
                            "`{}` suspends it again as the window paused it, checks what that sync did (a re-created gateway, what the window keeps) and restores it watching its first sync; until then `{}` says the restore is unfinished",
                            again,
                            crate::window::error::Run::status(ns)
                        ),
                    )
                }
                Ok(Some(j)) => {
                    // What was interrupted and what is true first, then the commands.
                    let rec = j.recovery();
                    let rec = rec
                        .strip_prefix("the tunnel is down or unverified: ")
                        .unwrap_or(&rec);
                    (
                        format!(
                            "{message}; the journal of {name} -n {ns} is at phase {}",
                            j.phase
                        ),
                        crate::window::error::hint!(
                            "{} (phase {}): {rec}",
                            j.phase.interrupted(),
                            j.phase
                        ),
                    )
                }
                Ok(None) => (
                    format!("{message} before the journal was written: nothing was changed"),
                    crate::window::error::hint!(
                        "run `{}` again when ready",
                        crate::window::error::Run::cutover(name, ns)
                    ),
                ),
                Err(e) => (
                    format!("{message}; the journal could not be read: {e}"),
                    crate::window::error::hint!(
                        "`{}` resumes from the journal; `{}` reverses",
                        crate::window::error::Run::cutover(name, ns),
                        crate::window::error::Run::rollback(name, ns)
                    ),
                ),
            };
            Err(Error::Stop {
                code: exit::INTERRUPTED,
                message,
                hint: Some(hint),
            })
        }
        // The API server stopped answering mid-window (a journal write, a lock renewal
        // check): where the journal stands and the commands, never a bare error.
        Err(Error::Cluster(k) | Error::Lock(crate::cluster::lock::LockError::Kube(k)))
            if k.no_answer() =>
        {
            let ns = cluster.namespace.as_str();
            let hint = match journal::read(cluster, name).await {
                Ok(Some(j)) => crate::window::error::hint!(
                    "the journal of {name} -n {ns} is at phase {}; once the API server answers: {}",
                    j.phase,
                    j.recovery()
                ),
                Ok(None) => crate::window::error::hint!(
                    "no journal was written, so nothing was changed: run the same command again once the API server answers: `{}`",
                    crate::window::error::Next::again(&[])
                ),
                Err(_) => crate::window::error::hint!(
                    "once the API server answers, `{}` resumes from the journal and `{}` reverses",
                    crate::window::error::Run::cutover(name, ns),
                    crate::window::error::Run::rollback(name, ns)
                ),
            };
            Err(Error::Stop {
                code: exit::FAILURE,
                message: k.to_string(),
                hint: Some(hint),
            })
        }
        // The lock was lost mid-window (not renewed through an API outage, taken with
        // --break-lock, deleted): say where the journal stands and the commands, as for
        // an interruption, not only that the lock is gone (attack finding).
        Err(Error::Lock(e @ crate::cluster::lock::LockError::Lost { .. })) => {
            let ns = cluster.namespace.as_str();
            let nobody = matches!(&e, crate::cluster::lock::LockError::Lost { holder, .. } if holder.starts_with("nobody"));
            let who = if nobody {
                "nobody holds it now (it could not be renewed, most often because the API server did not answer): once it answers, "
            } else {
                "another run holds it now: agree on who finishes the window; then "
            };
            let hint = match journal::read(cluster, name).await {
                Ok(Some(j)) => crate::window::error::hint!(
                    "the journal of {name} -n {ns} is at phase {}; {who}{}",
                    j.phase,
                    j.recovery()
                ),
                _ => crate::window::error::hint!(
                    "{who}`{}` resumes from the journal; `{}` reverses",
                    crate::window::error::Run::cutover(name, ns),
                    crate::window::error::Run::rollback(name, ns)
                ),
            };
            Err(Error::Stop {
                code: exit::REFUSED,
                message: e.to_string(),
                hint: Some(hint),
            })
        }
        other => other,
    }
}

/// One gateway-side initiation (`--initiate`, issue 12 item 2).
#[derive(Clone, Debug)]
pub(crate) struct Initiation {
    /// The remote address of the connection the CHILD SA belongs to.
    pub address: String,
    pub child: String,
    pub ok: bool,
    /// swanctl's last line (`initiate completed successfully`, `initiate failed: …`).
    pub answer: String,
}

/// How long one `swanctl --initiate` may take in the pod: long enough for IKE_SA_INIT
/// and IKE_AUTH with a few retransmits, short enough that a client that does not answer
/// leaves the rest of the tunnel wait to its own retry.
pub const INITIATE_TIMEOUT_S: u64 = 10;

/// Start the tunnels from gateway `name` (`swanctl --initiate --child NAME --timeout N`
/// in its pod), every CHILD SA at once. The CHILD SA names come from the operator's
/// configuration (`swanctl --list-conns` in the pod), else from `fallback` (the old
/// gateway's SAs in the baseline). A CHILD SA already installed (the client was first) is
/// left alone. A failed initiation is a warning: the wait for the client goes on.
pub(crate) async fn initiate(
    cluster: &Cluster,
    ev: &dyn Emit,
    name: &str,
    fallback: Option<&crate::core::dataplane::Baseline>,
) -> Result<Vec<Initiation>, Error> {
    use crate::core::swanctl;
    // Initiation is an optimisation: a cluster that does not answer here is left to the
    // tunnel wait, which judges it (issue 9 item 0), never a reason to stop.
    let listed = match fetch::swanctl(cluster, name, &["--list-conns"]).await {
        Ok(Ok(run)) if run.failed.is_none() => swanctl::list_conns(&run.stdout)
            .into_iter()
            .flat_map(|c| {
                let address = c.remote_addrs.first().cloned().unwrap_or_default();
                c.children
                    .into_iter()
                    .map(move |child| (address.clone(), child))
            })
            .collect(),
        _ => Vec::new(),
    };
    let children: Vec<(String, String)> = if listed.is_empty() {
        fallback
            .map(|b| {
                b.tunnels
                    .iter()
                    .flat_map(|t| {
                        t.children
                            .iter()
                            .map(|c| (t.remote_address.clone(), c.name.clone()))
                    })
                    .collect()
            })
            .unwrap_or_default()
    } else {
        listed
    };
    if children.is_empty() {
        ev.emit(Event::Warning(format!(
            "--initiate: no CHILD SA to initiate (swanctl --list-conns in the pod of {name} named none and there is no baseline of the old gateway's SAs); waiting for the client"
        )));
        return Ok(Vec::new());
    }
    let installed: Vec<String> = match fetch::sas(cluster, name).await {
        Ok(Ok(sas)) => sas
            .ike_sas
            .iter()
            .filter(|s| s.state == "ESTABLISHED")
            .flat_map(|s| &s.child_sas)
            .filter(|c| c.state == "INSTALLED")
            .map(|c| c.name.clone())
            .collect(),
        _ => Vec::new(),
    };
    let todo: Vec<(String, String)> = children
        .into_iter()
        .filter(|(_, c)| !installed.contains(c))
        .collect();
    let timeout = INITIATE_TIMEOUT_S.to_string();
    let args: Vec<[&str; 5]> = todo
        .iter()
        .map(|(_, child)| ["--initiate", "--child", child, "--timeout", &timeout])
        .collect();
    let runs =
        futures::future::join_all(args.iter().map(|a| fetch::swanctl(cluster, name, a))).await;
    let mut out = Vec::new();
    for ((address, child), run) in todo.into_iter().zip(runs) {
        let last = |t: &str| {
            t.lines()
                .rev()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or_default()
                .to_string()
        };
        let (ok, answer) = match run {
            Ok(Ok(r)) if r.failed.is_none() => (true, last(&r.stdout)),
            Ok(Ok(r)) => {
                let e = last(&r.stderr);
                (false, if e.is_empty() { last(&r.stdout) } else { e })
            }
            Ok(Err(why)) => (false, why),
            Err(e) => (false, format!("the cluster did not run it: {e}")),
        };
        if ok {
            ev.emit(Event::Step(format!(
                "initiated CHILD SA {child} from the gateway (swanctl --initiate --child {child} --timeout {timeout}): {answer}"
            )));
        } else {
            ev.emit(Event::Warning(format!(
                "--initiate: CHILD SA {child} could not be initiated from the gateway: {answer}; waiting for the client to initiate"
            )));
        }
        out.push(Initiation {
            address,
            child,
            ok,
            answer,
        });
    }
    Ok(out)
}

/// The tunnels' part of the outage: for each `(peer, address)`, from `from` (the delete)
/// to when it was first seen up, and whether the gateway's initiation brought it up.
pub(crate) fn tunnel_outages(
    peers: &[(String, String)],
    tunnels: &Tunnels,
    initiations: &[Initiation],
    from: Option<jiff::Timestamp>,
) -> Vec<crate::core::dataplane::TunnelOutage> {
    use crate::core::dataplane::{CameUpBy, TunnelOutage};
    peers
        .iter()
        .map(|(peer, address)| {
            let mine: Vec<&Initiation> = initiations
                .iter()
                .filter(|i| crate::core::addr::same_addr(&i.address, address))
                .collect();
            let up = tunnels
                .up
                .iter()
                .find(|(o, _)| *o == format!("peer {peer}"))
                .map(|(_, t)| *t);
            TunnelOutage {
                peer: peer.clone(),
                outage_ms: between(from, up),
                came_up_by: if !mine.is_empty() && mine.iter().all(|i| i.ok) {
                    CameUpBy::Initiation
                } else {
                    CameUpBy::Client
                },
                initiation: (!mine.is_empty()).then(|| {
                    mine.iter()
                        .map(|i| format!("{}: {}", i.child, i.answer))
                        .collect::<Vec<_>>()
                        .join("; ")
                }),
            }
        })
        .collect()
}

/// When the journal last reached `phase`.
pub(crate) fn reached(j: &Journal, phase: Phase) -> Option<jiff::Timestamp> {
    j.history
        .iter()
        .rev()
        .find(|e| e.phase == phase)
        .and_then(|e| e.at.parse().ok())
}
