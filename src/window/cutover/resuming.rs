//! The cutover's resume from a journal past the delete, and `--forward` after a rollback
//! that lost addresses.

use super::*;

/// What to do about an IPsecGateway re-created after the window's delete, found by a
/// resume: first the GitOps owner its markers name, when that owner's controller wrote it
/// (its sync re-creates it after any delete: a21i 07), with the suspension as the window
/// writes it when the window paused that owner (a21i 04b), and before it each level of
/// the chain of parents above it that puts its policy back, top-most first (a21j 01: the
/// root re-armed it, and a hint that named the owner alone looped); then the ways on and
/// back from where the window stands ([`Beside`], as the stop inside a run says them).
async fn recreated_hint(cluster: &Cluster, j: &Journal, old: &Value, beside: &Beside) -> String {
    use crate::core::gitops;
    let ways = beside.ways(j);
    let owner = gitops::reconciling(&gitops::detect(old))
        .into_iter()
        .filter_map(|m| m.owner.clone())
        .find(|o| gitops::written_by(&o.kind, old));
    match owner {
        Some(o) => {
            let ours = j
                .gitops
                .iter()
                .any(|r| gitops::same_owner(&r.owner, &o) && r.paused);
            // The chain above it, read now (one that cannot be read names none: the
            // owner's own suspension is said all the same). The owner as found, with its
            // namespace: Argo CD's markers do not name the Application's, and a command
            // without `-n` is run in the context's namespace (a21t T03c: NotFound, the
            // child stayed armed and the advice looped).
            let (o, path) = match crate::cluster::gitops::find(cluster, &o).await {
                Ok(crate::cluster::gitops::Found::One(owner, obj)) => {
                    let path = super::super::gitops::re_arming(cluster, j, &owner, &obj)
                        .await
                        .unwrap_or_default();
                    (owner, path)
                }
                _ => (o, Vec::new()),
            };
            let (by, above) = if path.is_empty() {
                (String::new(), String::new())
            } else {
                (
                    format!("; {}", super::super::gitops::re_armed_by(&path)),
                    format!(
                        "{}; then ",
                        super::super::gitops::suspend_from_the_top(&path)
                    ),
                )
            };
            let stop = if ours {
                format!(
                    "the window suspended it and its suspension did not hold{by}: {above}suspend it again as the window writes it (`{}`), so that it stays the window's and its restore puts the saved policy back",
                    gitops::pause_command(&o)
                )
            } else if path.is_empty() {
                format!(
                    "suspend it first (`{}`, or take the IPsecGateway out of its source)",
                    gitops::pause_command(&o)
                )
            } else {
                format!(
                    "{}: {above}suspend it (`{}`, or take the IPsecGateway out of its source)",
                    by.trim_start_matches("; "),
                    gitops::pause_command(&o)
                )
            };
            format!(
                "{} re-created it (its controller wrote it: {}), and its sync re-creates it after any delete: {stop}; then {ways}",
                o.display(),
                gitops::writer(old).unwrap_or_default()
            )
        }
        None => format!(
            "someone re-created it ({}): find who and make sure they do not again; then {ways}; plan again after a rollback",
            gitops::writer(old)
                .unwrap_or_else(|| "no field manager but vpnmig's and the operator's".into())
        ),
    }
}

/// A journal past the delete: go on from its phase with what it recorded (the old
/// gateway is gone: nothing is re-planned).
pub(super) async fn resume(
    cluster: &Cluster,
    held: Option<&lock::Lock>,
    opts: &CutoverOptions,
    ev: &dyn Emit,
    confirm: &mut impl Confirm,
    j: Journal,
    by: String,
) -> Result<Outcome, Error> {
    let (name, ns) = (j.gateway.clone(), j.namespace.clone());
    if let Some(old) = objects::get(cluster, "IPsecGateway", &name).await? {
        let uid = old.pointer("/metadata/uid").and_then(Value::as_str);
        let deleting = old.pointer("/metadata/deletionTimestamp").is_some();
        if uid == j.old_uid.as_deref() && !deleting && j.phase > Phase::Deleting {
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!(
                    "the journal says ipsecgateway/{name} -n {ns} was deleted (phase {}), but it is still there and not being deleted",
                    j.phase
                ),
                hint: Some(crate::window::error::hint!(
                    "the journal does not match the cluster (edited?): inspect `kubectl get configmap {} -n {ns} -o yaml`; `{}` keeps the IPsecGateway and closes it",
                    journal::object_name(&name),
                    crate::window::error::Run::rollback(&name, &ns)
                )),
            });
        }
        // A re-created one being deleted (someone took it out, its finalizer still
        // unwinding): waited for, bounded, before anything else; the window's own checks
        // then judge the cluster as it is (it stopped as "re-created during the window"
        // although it was on its way out).
        if uid != j.old_uid.as_deref()
            && deleting
            && let Some(uid) = uid
        {
            let title = format!("re-created IPsecGateway {ns}/{name} (uid {uid}) being deleted");
            if let Err(diagnosis) = steps::wait_uid_gone(
                cluster,
                ev,
                "IPsecGateway",
                &name,
                uid,
                opts.timeouts.delete,
                &title,
            )
            .await?
            {
                return Err(steps::timed_out(
                    &format!(
                        "the re-created ipsecgateway/{name} -n {ns} (uid {uid}) to be deleted"
                    ),
                    opts.timeouts.delete,
                    &diagnosis,
                    Some(recreated_hint(cluster, &j, &old, &Beside::read(cluster, &j).await).await),
                ));
            }
        }
        if uid != j.old_uid.as_deref() && !deleting {
            // What this window applied and is live beside it, named as the stop inside a
            // run names it (a21j 03: the resume's stop left them out).
            let beside = Beside::read(cluster, &j).await;
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!(
                    "the journal says ipsecgateway/{name} -n {ns} (uid {}) was deleted at phase {}, but an IPsecGateway of that name exists again (uid {}){}",
                    j.old_uid.as_deref().unwrap_or("?"),
                    j.phase,
                    uid.unwrap_or("?"),
                    beside.said()
                ),
                hint: Some(recreated_hint(cluster, &j, &old, &beside).await.into()),
            });
        }
    }
    plan_is_the_journal_s(
        opts,
        ev,
        &j,
        "",
        crate::window::error::hint!(
            "resume without --plan (the journal is what was started), or inspect `kubectl get configmap {} -n {ns} -o yaml`",
            journal::object_name(&name)
        ),
    )?;
    // The guard applies to what remains; past the delete, going on is the way out.
    let guard = match &opts.window_end {
        Some(end) if j.phase.past_delete() => {
            window_guard::not_applied(ev, end, j.phase);
            None
        }
        _ => start_guard(cluster, ev, &name, opts, j.phase).await?,
    };
    ev.emit(Event::Stage(Stage::Confirm));
    confirm
        .confirm(Ask {
            gateway: name.clone(),
            action: "resume the cutover of",
            dry_run: opts.dry_run,
            summary: Summary::Resume {
                context: cluster.context.clone(),
                journal: Box::new(j.clone()),
            },
        })
        .await?;
    if opts.dry_run {
        ev.emit(Event::Info(format!(
            "dry run: nothing was changed; without --dry-run the cutover resumes from phase {}",
            j.phase
        )));
        return Ok(Outcome::DryRun);
    }
    if let Some(g) = &guard {
        g.check(ev, &name, &ns, Moment::Confirmed, false)?;
    }
    let mut w = Window {
        cluster,
        ev,
        journal: j,
        lock: held,
        by,
    };
    phases(&mut w, opts, None, guard.as_ref()).await
}

/// `--forward`: cut the re-created IPsecGateway over to the journal's targets. The saved
/// old manifest stays the original; the object to delete is the re-created one.
pub(super) async fn forward_again(
    cluster: &Cluster,
    held: Option<&lock::Lock>,
    opts: &CutoverOptions,
    ev: &dyn Emit,
    confirm: &mut impl Confirm,
    mut j: Journal,
    by: String,
) -> Result<Outcome, Error> {
    let (name, ns) = (j.gateway.clone(), j.namespace.clone());
    let Some(live) = objects::get(cluster, "IPsecGateway", &name).await? else {
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!("--forward: there is no ipsecgateway/{name} -n {ns} to cut over"),
            hint: Some(j.phase.recovery(&name, &ns).into()),
        });
    };
    let gw: IPsecGateway = serde_json::from_value(live.clone()).map_err(|e| Error::Stop {
        code: exit::FAILURE,
        message: format!("ipsecgateway/{name} -n {ns} cannot be read: {e}"),
        hint: None,
    })?;
    // The re-created gateway must be the journal's old manifest, unedited: the targets
    // applied next are the journal's, so an edit (a tunnel added, the floating IP
    // unpinned) would be lost or, worse, let the delete release the address (issue 14
    // items 1 and 2).
    let recorded = j.old_manifest.get("spec").cloned().unwrap_or(Value::Null);
    let differences = scope::differences(&recorded, live.get("spec").unwrap_or(&Value::Null));
    if !differences.is_empty() {
        let drift: Vec<journal::Drift> = differences
            .into_iter()
            .map(|(what, saved, live)| journal::Drift { what, saved, live })
            .collect();
        let differ = drift.len();
        ev.emit(Event::Drift(drift));
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "--forward: ipsecgateway/{name} -n {ns} is not the one the journal recorded ({} field(s) differ, above): its targets would drop the edit; nothing was changed",
                differ
            ),
            hint: Some(crate::window::error::hint!(
                "undo the edit (the recorded spec is data.old-ipsecgateway.yaml of `kubectl get configmap {} -n {ns} -o yaml`) and run --forward again; or keep the edit: close the journal with `{}`, then plan the edited gateway (`{}`) and cut over from that plan",
                journal::object_name(&name),
                crate::window::error::Run::rollback(&name, &ns).with(&["--accept-new-addresses"]),
                crate::window::error::Run::plan(&name, &ns)
            )),
        });
    }
    if let Err(why) = scope::gateway_deletable(&live, &j.floating_ip) {
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "--forward: ipsecgateway/{name} -n {ns} cannot be deleted: {why}; nothing was changed"
            ),
            hint: Some(crate::window::error::hint!(
                "pin it first: {}; then run it again: `{}`",
                scope::pin_command("IPsecGateway", &name, &ns, &j.floating_ip),
                crate::window::error::Next::again(&[])
            )),
        });
    }
    j.old_uid = gw.metadata.uid.clone();
    j.spec_fingerprint = fingerprint::fingerprint(live.get("spec").unwrap_or(&Value::Null));
    j.fixed_targets = true;
    steps::require_permissions(cluster, "cut over again").await?;
    let guard = start_guard(cluster, ev, &name, opts, Phase::Started).await?;
    ev.emit(Event::Stage(Stage::Confirm));
    confirm
        .confirm(Ask {
            gateway: name.clone(),
            action: "cut over again",
            dry_run: opts.dry_run,
            summary: Summary::Forward {
                context: cluster.context.clone(),
                journal: Box::new(j.clone()),
            },
        })
        .await?;
    if opts.dry_run {
        ev.emit(Event::Info("dry run: nothing was changed".into()));
        return Ok(Outcome::DryRun);
    }
    if let Some(g) = &guard {
        g.check(ev, &name, &ns, Moment::Confirmed, false)?;
    }
    j.advance(Phase::Started, &now(), &by);
    stored::write(cluster, &j, false).await?;
    ev.emit(Event::Recorded { phase: j.phase });
    let mut w = Window {
        cluster,
        ev,
        journal: j,
        lock: held,
        by,
    };
    phases(&mut w, opts, Some(&gw), guard.as_ref()).await
}

/// `--plan DIR` on a window already started: the journal must be of that plan (a resume,
/// an adoption). Otherwise the drift is shown and the run stops (exit 4) with `hint`;
/// `tail` ends the message.
pub(super) fn plan_is_the_journal_s(
    opts: &CutoverOptions,
    ev: &dyn Emit,
    j: &Journal,
    tail: &str,
    hint: crate::window::error::Hint,
) -> Result<(), Error> {
    let Some(dir) = &opts.plan else {
        return Ok(());
    };
    let (saved, _) = bundle::read_saved(dir)?;
    let drift = journal::journal_drift(&saved, j);
    if drift.is_empty() {
        return Ok(());
    }
    ev.emit(Event::Drift(drift));
    Err(Error::Stop {
        code: exit::REFUSED,
        message: format!(
            "the journal of {} -n {} does not match the plan in {}{tail}",
            j.gateway,
            j.namespace,
            dir.display()
        ),
        hint: Some(hint),
    })
}
