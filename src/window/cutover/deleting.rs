//! The cutover's guards around the one delete: the old gateway back or still gone, the
//! server-side dry run of the targets right before the delete, and the webhooks that refuse it.

use super::*;

/// What a window past its delete has live beside an IPsecGateway of its name that exists
/// again (issue 21 item 3; a21j 03): each object it applied that the cluster has, read
/// now. The stop inside a run ([`old_back_stop`]) and a resume's stop say it alike, each
/// object named with what to do with it.
pub(super) struct Beside {
    /// The journal says the targets were applied.
    applied: bool,
    /// `Kind name` of each target the cluster has (the journal's list where it could
    /// not be read).
    live: Vec<String>,
    /// `Kind name` of each target the journal records.
    all: Vec<String>,
}

impl Beside {
    /// Read what window `j` applied that the cluster has now.
    pub(super) async fn read(cluster: &Cluster, j: &Journal) -> Beside {
        let all: Vec<String> = j
            .target_names()
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let applied = j.phase >= Phase::Applied;
        let mut live = Vec::new();
        if applied {
            for ((kind, name), label) in j.target_names().iter().zip(&all) {
                match objects::get(cluster, kind, name).await {
                    Ok(None) => {}
                    Ok(Some(o)) if o.pointer("/metadata/deletionTimestamp").is_some() => {}
                    // Could not ask: named as applied (no verdict from silence).
                    _ => live.push(label.clone()),
                }
            }
        }
        Beside { applied, live, all }
    }

    /// Whether both kinds are live: the IPsecGateway and what this window applied.
    pub(super) fn both_live(&self) -> bool {
        !self.live.is_empty()
    }

    /// The clause after the stop's message: what this window applied and where it is.
    pub(super) fn said(&self) -> String {
        if self.both_live() {
            format!(
                "; this window applied {}, which are live beside it",
                self.live.join(", ")
            )
        } else if self.applied {
            format!(
                "; this window applied {}, none of which the cluster has now",
                self.all.join(", ")
            )
        } else {
            String::new()
        }
    }

    /// The ways on and back from here.
    pub(super) fn ways(&self, j: &Journal) -> String {
        let (name, ns) = (&j.gateway, &j.namespace);
        let delete = format!("`kubectl delete ipsecgateway {name} -n {ns}`");
        if self.both_live() {
            format!(
                "{} (applied by this window) contend with it for the floating IP {}: `vpnmig rollback {name} -n {ns}` deletes them and keeps the re-created IPsecGateway (its addresses are then checked), or delete the re-created IPsecGateway ({delete}) and `vpnmig cutover {name} -n {ns}` resumes the waits",
                self.live.join(", "),
                j.floating_ip
            )
        } else {
            let keep = format!(
                "`vpnmig rollback {name} -n {ns}` keeps the re-created IPsecGateway and closes the journal (its addresses are checked: a re-created one may get another serviceCIDR)"
            );
            if self.applied {
                keep
            } else {
                format!(
                    "{keep}, or delete it ({delete}) and `vpnmig cutover {name} -n {ns}` resumes with the apply"
                )
            }
        }
    }
}

/// The stop of a window past the delete while an IPsecGateway of its name exists again
/// (issue 21 item 3): where it stands (nothing new applied, or each object applied and
/// live beside it: [`Beside`]), who re-created it when an owner still acts (ignoring its
/// suspension, re-enabled, re-armed by a parent above it), and only then the ways out,
/// which would fight that owner until it stops.
pub(super) async fn old_back_stop(w: &Window<'_>, obj: &Value, message: &str) -> Error {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let acting = super::super::gitops::still_acting(w, obj)
        .await
        .ok()
        .flatten();
    let cause = acting
        .as_ref()
        .map(|(why, _)| format!("; {why}"))
        .unwrap_or_default();
    let first = match &acting {
        Some((_, first)) => format!(
            "{first}; until then a rollback or a resume fights it (each delete undone, the floating IP contended). Then: "
        ),
        // No owner acts now: who wrote it, from its managedFields.
        None => match crate::core::gitops::writer(obj) {
            Some(who)
                if ["Application", "Kustomization", "HelmRelease"]
                    .iter()
                    .any(|k| crate::core::gitops::written_by(k, obj)) =>
            {
                format!(
                    "make sure nothing syncs it first: it was written by {who} (`vpnmig status -n {ns} -o wide` shows its MANAGED-BY). Then: "
                )
            }
            Some(who) => format!(
                "find who created it ({who}) and make sure they do not again, and that nothing syncs it (`vpnmig status -n {ns} -o wide` shows its MANAGED-BY). Then: "
            ),
            None => format!(
                "make sure nothing syncs it first (`vpnmig status -n {ns} -o wide` shows its MANAGED-BY). Then: "
            ),
        },
    };
    let beside = Beside::read(w.cluster, &w.journal).await;
    let message = if beside.both_live() {
        format!(
            "cutover of {name} -n {ns} stopped at phase {} with both kinds live: {message}{cause}{}",
            w.journal.phase,
            beside.said()
        )
    } else if beside.applied {
        format!(
            "cutover of {name} -n {ns} stopped at phase {}: {message}{cause}{}",
            w.journal.phase,
            beside.said()
        )
    } else {
        format!(
            "cutover of {name} -n {ns} stopped after the delete, before the apply (journal phase {}; nothing new was applied): {message}{cause}",
            w.journal.phase
        )
    };
    Error::Stop {
        code: exit::FAILURE,
        message,
        hint: Some(crate::window::error::hint!(
            "{first}{}",
            beside.ways(&w.journal)
        )),
    }
}

/// After the delete finished, no IPsecGateway of the gateway's name may exist: one that
/// does was re-created (a new uid; a GitOps self-heal, a person) and holds the floating IP,
/// so nothing new is applied and no wait begins (issue 21 item 3). The stop's advice is
/// [`phases`]'s (it reads the cluster: what was applied, who acts).
pub(super) async fn old_still_gone(w: &Window<'_>) -> Result<(), Error> {
    let name = w.name().to_string();
    match objects::get(w.cluster, "IPsecGateway", &name).await? {
        None => Ok(()),
        Some(obj) => Err(steps::in_owner_namespace(
            steps::recreated(w.cluster, "IPsecGateway", &name, "cutover", &obj),
            &w.journal
                .gitops
                .iter()
                .map(|r| r.owner.clone())
                .collect::<Vec<_>>(),
        )),
    }
}

/// `Kind/name` of a target manifest.
pub(super) fn target_label(t: &Value) -> String {
    format!(
        "{}/{}",
        t["kind"].as_str().unwrap_or("?"),
        t.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("?")
    )
}

/// The webhook of a dry-run refusal by a webhook that cannot dry-run, when
/// `--skip-dry-run-webhook` names it.
pub(super) fn skippable(e: &crate::cluster::KubeError, skip: &[String]) -> Option<String> {
    let crate::cluster::KubeError::Api {
        answer: kube::Error::Api(s),
        ..
    } = e
    else {
        return None;
    };
    live::webhook_without_dry_run(&s.message).filter(|w| skip.contains(w))
}

/// The refusal of a cutover that meets webhooks that cannot dry-run and are not skipped.
pub(super) fn webhooks_refused(
    name: &str,
    ns: &str,
    webhooks: &[String],
    changed: &str,
    opts: &CutoverOptions,
) -> Error {
    let mut all = opts.skip_dry_run_webhooks.clone();
    all.extend(webhooks.iter().cloned());
    Error::Stop {
        code: exit::REFUSED,
        message: format!(
            "admission webhook{} {} cannot dry-run (sideEffects Some or Unknown): the pre-delete server-side dry run cannot validate the targets, and the real apply, after the IPsecGateway is deleted, may be refused; {changed}",
            if webhooks.len() == 1 { "" } else { "s" },
            webhooks.join(", "),
        ),
        hint: Some(crate::window::error::hint!(
            "to go on and let the real apply be the webhook's check: `vpnmig cutover {name} -n {ns} {}`",
            live::skip_flags(&all)
        )),
    }
}

/// Step f: the server-side dry run of every target right before the delete. A refusal
/// stops the window before anything is deleted; a webhook that cannot dry-run is
/// skipped only when `--skip-dry-run-webhook` names it.
pub(super) async fn pre_delete_dry_run(
    w: &mut Window<'_>,
    opts: &CutoverOptions,
) -> Result<(), Error> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let mut skipped = Vec::new();
    let mut unskipped = Vec::new();
    for target in &w.journal.targets {
        match objects::apply(w.cluster, target, true).await {
            Ok(_) => {}
            Err(e) => {
                if let Some(webhook) = skippable(&e, &opts.skip_dry_run_webhooks) {
                    skipped.push((target_label(target), webhook));
                    continue;
                }
                let cannot = match &e {
                    crate::cluster::KubeError::Api {
                        answer: kube::Error::Api(s),
                        ..
                    } => live::webhook_without_dry_run(&s.message),
                    _ => None,
                };
                if let Some(webhook) = cannot {
                    unskipped.push(webhook);
                    continue;
                }
                let refused = matches!(&e, crate::cluster::KubeError::Api { answer: kube::Error::Api(s), .. } if s.code < 500);
                let message = format!(
                    "the pre-delete server-side dry run of {} failed: {e}",
                    target_label(target)
                );
                w.record_error(&message).await;
                return Err(Error::Stop {
                    code: if refused {
                        exit::BLOCKED
                    } else {
                        exit::FAILURE
                    },
                    message: format!(
                        "{message}; nothing was deleted (journal phase {})",
                        w.journal.phase
                    ),
                    hint: Some(if refused {
                        format!(
                            "the API server refuses the target as it stands: fix the cause; {}",
                            w.journal.phase.recovery(&name, &ns)
                        )
                        .into()
                    } else {
                        crate::window::error::hint!(
                            "{}{}",
                            e.hint()
                                .map(|h| crate::window::error::hint!("{}; ", h))
                                .unwrap_or_default(),
                            w.journal.phase.recovery(&name, &ns)
                        )
                    }),
                });
            }
        }
    }
    let unskipped = live::unskipped_webhooks(unskipped.iter().map(String::as_str), &[]);
    if !unskipped.is_empty() {
        let err = webhooks_refused(
            &name,
            &ns,
            &unskipped,
            &format!("nothing was deleted (journal phase {})", w.journal.phase),
            opts,
        );
        w.record_error(&crate::window::error::error_line(&err))
            .await;
        return Err(err);
    }
    for (label, webhook) in &skipped {
        w.ev.emit(Event::Warning(format!(
            "server-side dry run: {label} not validated by admission webhook {webhook}, which cannot dry-run (skipped: --skip-dry-run-webhook {webhook}); the real apply is its check"
        )));
    }
    w.ev.emit(Event::Step(format!(
        "server-side dry run: {} target(s) admitted",
        w.journal.targets.len() - skipped.len()
    )));
    Ok(())
}
