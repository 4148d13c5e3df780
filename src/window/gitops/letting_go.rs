//! Letting go of an owner, and the vouch: every window on an owner a let-go protects,
//! the note on those still under way, the stop when a PSK Secret stays unprotected from
//! the owner's prune, the parents no longer relied on once the reliance ends (restored or
//! let go of), and `--gitops resume` on a finished window that relies on an owner it does
//! not restore. Layer: the window engine (`src/window/`), part of `window::gitops`; it
//! writes the journal and emits events, never prints.

use super::*;

/// `--gitops resume` on a finished window that relies on an owner's suspension (it did
/// not suspend it, so it restores nothing): the user says that the owner's merged source
/// no longer defines what this window replaced, which a suspended owner's status cannot
/// show (a21f B1: with two windows on one Flux Kustomization, no vpnmig command could
/// restore it). Recorded in the journal (`vouched`), counted by the restore of the window
/// that suspended it. Every record `status` counts as relying takes it, whatever shape its
/// reliance was recorded in (a21j 04b: one recorded while the suspender held only its
/// Lease named no holder, and its `--gitops resume` said "nothing to do" while `status`
/// kept naming it). Returns whether anything was recorded or said: `false` when no vpnmig
/// window ever suspended an owner it relies on (a person did), which the caller's note
/// on an owner suspended by hand answers.
pub(crate) async fn vouch(w: &mut Window<'_>, replaced: &str) -> Result<bool, Error> {
    let mut said = false;
    for i in 0..w.journal.gitops.len() {
        if !w.journal.gitops[i].relies_on_a_window() {
            continue;
        }
        said |= vouch_one(w, i, replaced).await?;
    }
    Ok(said)
}

/// [`vouch`] for owner record `i`, which the window relies on: recorded when a window
/// that suspended the owner holds it now (read from the journals, wherever they are), the
/// one whose restore counts it. `Ok(false)`: no vpnmig window suspended it, nothing said.
pub(super) async fn vouch_one(w: &mut Window<'_>, i: usize, replaced: &str) -> Result<bool, Error> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let r = w.journal.gitops[i].clone();
    // No window holds it any more (the one that suspended it let go of it, or restored
    // it): nothing counts a vouch, so none is recorded (a21i R07).
    if let Ok(journals) = journals_on(w.cluster, &r.owner, (&ns, &name)).await
        && !holders::holders(&journals, &r.owner, (&ns, &name))
            .iter()
            .any(|h| h.paused)
    {
        let Some(by) = holders::let_go_by(&journals, &r.owner) else {
            return Ok(false);
        };
        w.ev.emit(Event::Info(format!(
            "no vouch recorded for {}: {by}; no vpnmig window holds it to restore it, so nothing would count it",
            r.owner.display(),
        )));
        return Ok(true);
    }
    if !holders::vouched(&w.journal, &r) {
        w.journal.gitops[i].vouched = Some(gitops::Vouched {
            no_longer_defines: replaced.to_string(),
            at: now(),
            by: w.by.clone(),
        });
        journal::write(w.cluster, &w.journal, false).await?;
    }
    w.ev.emit(Event::Info(format!(
        "recorded in the journal: you vouch that the merged source of {} no longer defines {} (this window relies on its suspension and does not restore it); the window that suspended it counts this when it restores it (`vpnmig status -n {ns}` names it and its command). Only after this window's repository change is merged: the restore re-arms the owner on your word, and a vouch its first sync disproves (the gateway back) is withdrawn",
        r.owner.display(),
        object_ref(replaced, &name, &ns)
    )));
    Ok(true)
}

/// This window (`replaced`) and every other window that holds `owner` (it suspended it
/// or relies on its suspension, finished or not), each with what it replaced: whose kept
/// objects a let-go protects (a21h 03, 07: a let-go protected only the window that ran
/// it, and the owner's later resume pruned another window's PSK Secret). Journals that
/// cannot be listed: this window only (the hand-over says what it protected).
pub(super) async fn every_window_on<'a>(
    w: &Window<'_>,
    owner: &gitops::OwnerRef,
    live_owner: Option<&Value>,
    replaced: &'a str,
) -> Vec<(crate::core::journal::Journal, &'a str)> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let mut all = vec![(w.journal.clone(), replaced)];
    let Ok(journals) = journals_for(w.cluster, live_owner, (&ns, &name)).await else {
        return all;
    };
    for h in holders::holders(&journals, owner, (&ns, &name)) {
        if let Some(j) = journals
            .iter()
            .find(|j| j.namespace == h.namespace && j.gateway == h.gateway)
        {
            // Done: the new objects are kept; rolled back or rolling back: the old
            // gateway; a cutover under way: its new objects and PSK, as at done.
            let kind =
                if j.phase == crate::core::journal::Phase::RolledBack || j.phase.rolling_back() {
                    "VPNGateway"
                } else {
                    "IPsecGateway"
                };
            all.push((j.clone(), kind));
        }
    }
    all
}

/// The windows on a let-go owner that are under way (between their start and `done` /
/// `rolled-back`), each with what the owner's resume does to it: a21i 07, the let-go said
/// nothing of a window past its delete, and the other team's resume re-created its old
/// gateway beside its VPNGateway. Empty when none is.
pub(super) fn under_way_note(
    others: &[(crate::core::journal::Journal, &str)],
    owner: &gitops::OwnerRef,
) -> String {
    let notes: Vec<String> = others
        .iter()
        .filter(|(j, _)| !j.phase.finished())
        .map(|(j, _)| {
            let (n, ns) = (&j.gateway, &j.namespace);
            if j.phase.rolling_back() {
                format!(
                    "the window of {ns}/{n} is rolling back (journal phase {}): a resume of {} before its rollback is done may prune what the rollback re-creates or bring back what it takes out; finish it first (`vpnmig rollback {n} -n {ns}`)",
                    j.phase,
                    owner.display()
                )
            } else if j.phase.past_delete() {
                format!(
                    "the window of {ns}/{n} is under way past its delete (journal phase {}): a resume of {} whose source still defines ipsecgateway/{n} re-creates it beside the new objects and contests the floating IP; finish or roll back that window first (`vpnmig cutover {n} -n {ns}` goes on, `vpnmig rollback {n} -n {ns}` goes back)",
                    j.phase,
                    owner.display()
                )
            } else {
                format!(
                    "the window of {ns}/{n} is under way (journal phase {}), and relied on the suspension: a resume of {} before it is done undoes what it relies on; finish or roll back that window first (`vpnmig cutover {n} -n {ns}` goes on, `vpnmig rollback {n} -n {ns}` goes back)",
                    j.phase,
                    owner.display()
                )
            }
        })
        .collect();
    if notes.is_empty() {
        String::new()
    } else {
        format!("; {}", notes.join("; "))
    }
}

/// After a let-go: a PSK Secret of a window on `owner` that the owner tracks and that does
/// not carry its prune protection (refused by a webhook or RBAC, taken off) is a stop
/// (exit 5), never a quiet exit 0 (a21i 11, 12, critical: the protection was refused, the
/// let-go ended with rc 0, and the owner's later resume pruned the PSK Secrets). The
/// journal already records the let-go; the stop says what not to do and how to fix it.
pub(super) async fn unprotected_stop(
    w: &Window<'_>,
    owner: &gitops::OwnerRef,
    windows: &[(crate::core::journal::Journal, &str)],
) -> Result<(), Error> {
    let (key, value) = gitops::prune_protection(&owner.kind);
    let mut bare = Vec::new();
    for (j, _) in windows {
        let sec = live::get_kept(w.cluster, "v1", "Secret", &j.namespace, &j.psk_secret).await?;
        if sec.as_ref().is_some_and(|s| gitops::unprotected(owner, s)) {
            bare.push((j.psk_secret.clone(), j.namespace.clone()));
        }
    }
    if bare.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = bare
        .iter()
        .map(|(s, ns)| format!("secret/{s} -n {ns}"))
        .collect();
    Err(Error::Stop {
        code: exit::VERIFY_FAILED,
        message: format!(
            "do not resume {}: vpnmig let go of it, but {} (the PSK, the client's key, which vpnmig does not hold) {} not protected from its prune ({key}={value} could not be set or did not stay): a resume of a source without {} deletes {}",
            owner.display(),
            names.join(", "),
            if names.len() == 1 { "is" } else { "are" },
            if names.len() == 1 { "it" } else { "them" },
            if names.len() == 1 {
                "the key"
            } else {
                "the keys"
            },
        ),
        hint: Some(crate::window::error::hint!(
            "set the protection with a context the cluster's policy allows ({}), or put the Secret back in the owner's repository first; `vpnmig status -n {}` shows it kept once it holds",
            bare.iter()
                .map(|(s, ns)| format!("`kubectl annotate secret {s} -n {ns} {key}={value}`"))
                .collect::<Vec<_>>()
                .join(", "),
            w.ns()
        )),
    })
}

/// The parents (and their parents: a21i 06, 09) whose suspension the window relied on for
/// `owner`, said when the reliance ends: the owner restored (`let_go: None`), or let go
/// of (`Some(why)`: its policy changed since, re-enabled, re-created, gone). Each note
/// says whether another window still relies on the parent; after a let-go, also that
/// the parent's sync writes the owner's policy back as its source has it, over the one
/// set since (a21i 10: nothing named the parent any more, suspended by hand for the
/// window); a let-go while the owner's source still defines what the window replaced
/// (`unmerged`: not with `--gitops resume`) says so, and that the merge comes first,
/// never "resume it when …" (a21n C14). Never resumed: vpnmig never resumes a parent it
/// did not suspend.
pub(super) async fn parents_no_longer_relied_on(
    w: &Window<'_>,
    owner: &gitops::OwnerRef,
    let_go: Option<&str>,
    unmerged: bool,
) {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let parents: Vec<Record> = holders::parents_above(&w.journal, owner)
        .into_iter()
        .filter(|p| p.relies)
        .cloned()
        .collect();
    if parents.is_empty() {
        return;
    }
    let journals = journals_for(w.cluster, None, (&ns, &name)).await;
    // Let go of while its source still defines what the window replaced: no parent's
    // resume is offered, the merge comes first (a21n C13/C12, C14).
    let defines = match let_go {
        Some(_) if unmerged => source_still_defines_now(w, owner).await,
        _ => None,
    };
    let mut said: Vec<&gitops::OwnerRef> = Vec::new();
    for p in &parents {
        // A member of a cycle is a parent of two levels: said once (a21m B03).
        if said.iter().any(|o| gitops::same_owner(o, &p.owner)) {
            continue;
        }
        said.push(&p.owner);
        // Other windows that still rely on the same parent (another child of an
        // app-of-apps, another member of a wave): it stays suspended for them (a21h 01,
        // 12: the note invited a resume that re-created their gateway).
        let still: Vec<String> = match &journals {
            // Relying on it, or on a level below it that it applies back (a21m B07).
            Ok(journals) => holders::needing(
                &[journals.as_slice(), std::slice::from_ref(&w.journal)].concat(),
                &p.owner,
                (ns.as_str(), name.as_str()),
            )
            .into_iter()
            .map(|j| {
                format!(
                    "the window of {}/{} (journal phase {})",
                    j.namespace, j.gateway, j.phase
                )
            })
            .collect(),
            Err(why) => vec![format!(
                "whichever window relies on it (the journals could not be read: {why})"
            )],
        };
        let keep = format!(
            "{} (`vpnmig status -A` names what each waits for); vpnmig never resumes a parent it did not suspend",
            holders::keep_for(&still)
        );
        let text = match let_go {
            None if still.is_empty() => format!(
                "({} is restored); resume it when its own repository is as it should be: {} (vpnmig never resumes a parent it did not suspend; `vpnmig status` names it while it reads suspended)",
                owner.display(),
                resume_yourself(&p.owner)
            ),
            None => format!("({} is restored), but {keep}", owner.display()),
            Some(why) => {
                let o = owner.display();
                let through = p
                    .parent_of
                    .as_ref()
                    .filter(|c| !gitops::same_owner(c, owner))
                    .map(|c| format!(" (through {}, which it applies)", c.display()))
                    .unwrap_or_default();
                if let Some(d) = &defines {
                    let_go_while_defined(&o, why, &through, d, &still, &keep)
                } else {
                    format!(
                        "(vpnmig let go of {o}: {why}); resumed, its sync{through} writes the policy of {o} back as the source has it, over the one set since: {}",
                        if still.is_empty() {
                            format!(
                                "no other vpnmig window relies on it; resume it when its own repository is as it should be and whoever set the policy of {o} since agrees (vpnmig never resumes a parent it did not suspend)"
                            )
                        } else {
                            format!("but {keep}")
                        }
                    )
                }
            }
        };
        w.ev.emit(Event::Note(format!(
            "{}: this window no longer relies on its suspension {text}",
            p.owner.display()
        )));
    }
}

/// The note on a parent no longer relied on after a let-go of `o` while its source still
/// defines what the window replaced (`defines`, [`source_still_defines`]): never "resume
/// it when …"; the merge comes first, and another window's reliance is said as well.
fn let_go_while_defined(
    o: &str,
    why: &str,
    through: &str,
    defines: &str,
    still: &[String],
    keep: &str,
) -> String {
    let others = if still.is_empty() {
        String::new()
    } else {
        format!("; and {keep}")
    };
    format!(
        "(vpnmig let go of {o}: {why}); do not resume it yet: its sync{through} re-arms {o}, and {defines}; only then resume it, when whoever set the policy of {o} since agrees (vpnmig never resumes a parent it did not suspend){others}"
    )
}
