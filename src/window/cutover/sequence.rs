//! The cutover's phases in order: the dry run, the phases up to the delete, and the
//! forward half after it.

use super::*;
use crate::window::steps::table;

/// `--dry-run`: every write sent with dryRun=All, in the order the cutover would.
pub(super) async fn dry_run(
    cluster: &Cluster,
    ev: &dyn Emit,
    j: &Journal,
    secret: &Option<Value>,
    detach: Option<(Vec<Value>, Vec<Value>)>,
    opts: &CutoverOptions,
) -> Result<Outcome, Error> {
    let skip = &opts.skip_dry_run_webhooks;
    let name = j.gateway.as_str();
    if let Some((h, since)) = lock::holder(cluster, name).await? {
        ev.emit(Event::Note(format!(
            "the lock of {name} is held by {h} since {since}: a real run would be refused"
        )));
    }
    stored::write(cluster, j, true).await?;
    ev.emit(Event::Step(format!(
        "dry run: journal ConfigMap {} admitted",
        journal::object_name(name)
    )));
    if let (Some(s), Some((removed, kept))) = (secret, detach) {
        let rv = s
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        objects::set_owner_references(cluster, &j.psk_secret, rv, &kept, true).await?;
        ev.emit(Event::Step(format!(
            "dry run: PSK Secret {} would be detached ({} ownerReference(s) removed)",
            j.psk_secret,
            removed.len()
        )));
    }
    let mut skipped = Vec::new();
    for t in &j.targets {
        match objects::apply(cluster, t, true).await {
            Ok(_) => {}
            Err(e) => match skippable(&e, skip) {
                Some(w) => skipped.push((target_label(t), w)),
                None => return Err(e.into()),
            },
        }
    }
    for (label, w) in &skipped {
        ev.emit(Event::Warning(format!(
            "dry run: {label} not validated by admission webhook {w}, which cannot dry-run (--skip-dry-run-webhook {w})"
        )));
    }
    ev.emit(Event::Step(format!(
        "dry run: {} target(s) admitted by server-side apply",
        j.targets.len() - skipped.len()
    )));
    delete::delete(
        cluster,
        Target::OldGateway {
            fip: &j.floating_ip,
        },
        name,
        |o| scope::same_as_recorded(o, j.old_uid.as_deref(), &j.spec_fingerprint),
        true,
    )
    .await?;
    ev.emit(Event::Step(format!(
        "dry run: delete of IPsecGateway {name} admitted"
    )));
    // What the real run checks right before its delete: every tunnel up.
    if let Ok(Ok(sas)) = fetch::sas(cluster, name).await {
        let b = Baseline::from_sas(&sas, &now(), "");
        let expected = j.expected_peers();
        let down: Vec<&str> = b.down(&expected).iter().map(|p| p.name.as_str()).collect();
        if !down.is_empty() {
            let then = if opts.allow_tunnels_down {
                "a real run would go on (--allow-tunnels-down) and not compare it after the window"
            } else {
                "a real run would stop right before the delete, nothing deleted, unless --allow-tunnels-down"
            };
            ev.emit(Event::Warning(format!(
                "dry run: {} of the {} tunnel(s) of IPsecGateway {name} are down now ({}): {then}",
                down.len(),
                expected.len(),
                down.join(", ")
            )));
        }
    }
    ev.emit(Event::Info("dry run: nothing was changed".into()));
    Ok(Outcome::DryRun)
}

/// The steps from the journal's phase to `Done`.
pub(super) async fn phases(
    w: &mut Window<'_>,
    opts: &CutoverOptions,
    old: Option<&IPsecGateway>,
    guard: Option<&Guard>,
) -> Result<Outcome, Error> {
    match forward(w, opts, old, guard).await {
        Ok(Outcome::Done) => {
            // Done: hand the gateway back to its GitOps owner (issue 11 item 2).
            super::super::gitops::restore(w, "IPsecGateway", opts.gitops.resume).await?;
            Ok(Outcome::Done)
        }
        Ok(code) => Ok(code),
        // Another run holds the lock now: it decides; no advice that would fight it.
        // (A lock that could not be checked for want of an answer is an outage like any
        // other: it gets the advice below.)
        Err(
            e @ Error::Lock(
                crate::cluster::lock::LockError::Lost { .. }
                | crate::cluster::lock::LockError::Held { .. },
            ),
        ) => Err(e),
        Err(e) if w.journal.phase.past_delete() => {
            let message = crate::window::error::error_line(&e);
            w.record_error(&message).await;
            let (name, ns) = (w.name().to_string(), w.ns().to_string());
            // Only a verdict about the new gateway is a reason to roll back: an API
            // server that did not answer says nothing about it, and rolling back a
            // working gateway is an outage and may lose its addresses (issue 9 item 0).
            let no_answer = matches!(&e, Error::Cluster(k) if k.no_answer());
            if opts.rollback_on_failure && no_answer {
                w.ev.emit(Event::Warning(
                    "--rollback-on-failure: not rolling back, the API server did not answer, which says nothing about the new gateway".into(),
                ));
            }
            if opts.rollback_on_failure && !no_answer {
                w.ev.emit(Event::RollingBack {
                    phase: w.journal.phase,
                });
                w.journal.cutover_failure =
                    Some(format!("at phase {}: {message}", w.journal.phase));
                let t = super::super::rollback::roll_back(
                    w,
                    &opts.timeouts,
                    super::super::Choices {
                        initiate: opts.initiate,
                        ..Default::default()
                    },
                )
                .await?;
                super::super::gitops::restore(w, "VPNGateway", false).await?;
                w.ev.emit(Event::Finished {
                    operation: Operation::Rollback,
                    journal: Box::new(w.journal.clone()),
                    verify: t.rows,
                });
                return Err(Error::Stop {
                    code: e.exit_code(),
                    message: format!("the cutover of {name} -n {ns} failed and was rolled back"),
                    hint: Some(crate::window::error::hint!(
                        "the failure is above and in the journal (lastError); `{}` checks the restored gateway",
                        crate::window::error::Run::verify(&name, &ns)
                    )),
                });
            }
            // The advice follows what the cluster shows, not the phase: an IPsecGateway
            // that exists again (re-created by someone) is not "deleted".
            // One being deleted counts when it is not the journal's own (still unwinding
            // at `deleting`): a re-created one holds the floating IP until it is gone.
            let old_back = match objects::get(w.cluster, "IPsecGateway", &name).await {
                Ok(Some(o))
                    if o.pointer("/metadata/deletionTimestamp").is_none()
                        || o.pointer("/metadata/uid").and_then(Value::as_str)
                            != w.journal.old_uid.as_deref() =>
                {
                    Some(o)
                }
                _ => None,
            };
            // A VPNGateway the window applied and someone deleted: resuming would wait
            // for a gateway that is not there; going back is the way (issue 11 item 3).
            let new_gone = w.journal.phase >= Phase::Applied
                && !steps::targets_intact(w.cluster, &w.journal.targets).await;
            if let Some(obj) = &old_back {
                return Err(old_back_stop(w, obj, &message).await);
            }
            let hint = if contention::is_contention(&e) {
                // Its own way on: delete the claimant while it pins the floating IP; a
                // rollback now would be refused for the same claimant (a21r R12).
                e.hint().unwrap_or_default()
            } else if new_gone {
                e.hint().unwrap_or_else(|| crate::window::error::hint!(
                    "the VPNGateway or a VPNPeer is not as the window applied it: `{}` restores the IPsecGateway from the journal",
                    crate::window::error::Run::rollback(&name, &ns)
                ))
            } else if w.journal.phase == Phase::Deleting {
                crate::window::error::hint!(
                    "the IPsecGateway's delete was sent and its unwind has not finished{}. Going on (`{}`) and going back (`{}`) both wait for that unwind first; going on keeps the choice open",
                    e.hint()
                        .map(|h| crate::window::error::hint!(" ({})", h))
                        .unwrap_or_default(),
                    crate::window::error::Run::cutover(&name, &ns),
                    crate::window::error::Run::rollback(&name, &ns)
                )
            } else {
                crate::window::error::hint!(
                    "the IPsecGateway is deleted; restore it with `{}`, or fix the cause and resume with `{}`{}",
                    crate::window::error::Run::rollback(&name, &ns),
                    crate::window::error::Run::cutover(&name, &ns),
                    e.hint()
                        .map(|h| crate::window::error::hint!(" ({})", h))
                        .unwrap_or_default()
                )
            };
            Err(Error::Stop {
                code: e.exit_code(),
                message: format!(
                    "cutover of {name} -n {ns} stopped at phase {}: {message}",
                    w.journal.phase
                ),
                hint: Some(hint),
            })
        }
        Err(e) => Err(e),
    }
}

/// The phases from the journal's to `done`: the GitOps owners suspended, then the table
/// [`phases::CUTOVER`] walked by the runner of every table; the rows from the apply on run watched.
pub(super) async fn forward(
    w: &mut Window<'_>,
    opts: &CutoverOptions,
    old: Option<&IPsecGateway>,
    guard: Option<&Guard>,
) -> Result<Outcome, Error> {
    // Before anything of the gateway changes: suspend its GitOps owners (issue 11).
    if w.journal.phase < Phase::Done {
        super::super::gitops::pause(w, "cutover").await?;
    }
    let mut cx = phases::Ctx { opts, old, guard };
    let (before, after) = table::split_watched(phases::CUTOVER);
    table::run(w, &mut cx, before).await?;

    // From here the old gateway is gone: if anything re-creates it, every wait below
    // stops at once (issue 9 item 3).
    let (cluster, name) = (w.cluster, w.name().to_string());
    let targets = w.journal.targets.clone();
    // The owners the journal records, in their real namespaces: a stop's suspend command
    // for an owner its markers name without one (a21k N12).
    let owners: Vec<_> = w.journal.gitops.iter().map(|r| r.owner.clone()).collect();
    // Boxed: the steps after the delete are a large future, and the sentinels around it
    // would otherwise sit on the caller's stack with it (a debug build's wave of them).
    let rest = Box::pin(async {
        table::run(w, &mut cx, after).await?;
        Ok(Outcome::Done)
    });
    steps::unless_interfered(cluster, &name, &targets, rest)
        .await
        .map_err(|e| steps::in_owner_namespace(e, &owners))
}
