//! The chain of GitOps parents above an owner the window suspends (a21i 06, 09): the
//! parents the cluster has, the chain followed level by level, the journal's records of
//! a parent the window relies on or a stop named, and the parents a stop named that read
//! suspended (the stop itself, with its fix, is in `parent_stops`). Layer: the window
//! engine (`src/window/`), part of `window::gitops`; it writes the journal and emits
//! events, never prints.

use super::*;

/// Record that the window relies on the suspension of link `l`'s parent (`parent`, as
/// read), a parent of `owner` or of a parent above it (a21i 06, 09), whose sync would
/// put the policy of the level below back once it syncs again (a21g attack 16: a parent
/// Kustomization suspended by hand, as the stop advised; resumed the next morning, it
/// re-armed the child after `done`). The journal gets a record of the parent with
/// `relies: true` before the window goes on (one a stop named is marked relied on now);
/// [`held`] reads it back until the delete, and `status` names it until the owner is
/// restored. vpnmig never resumes it.
pub(super) async fn rely_on_parent(
    w: &mut Window<'_>,
    owner: &gitops::OwnerRef,
    l: &gitops::Link,
    parent: &Value,
) -> Result<(), Error> {
    let uid = parent
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .map(str::to_string);
    let known = w.journal.gitops_parents.iter().position(|r| {
        gitops::same_owner(&r.owner, &l.parent.owner)
            && r.parent_of
                .as_ref()
                .is_some_and(|c| gitops::same_owner(c, &l.child))
    });
    match known {
        Some(i) if w.journal.gitops_parents[i].relies => return Ok(()),
        Some(i) => {
            let r = &mut w.journal.gitops_parents[i];
            r.relies = true;
            r.uid = uid;
        }
        None => w
            .journal
            .gitops_parents
            .push(Record::of_parent(&l.parent, &l.child, uid)),
    }
    journal::write(w.cluster, &w.journal, false).await?;
    let also = if l.level > 1 {
        format!(
            " (a suspension of {} alone would be undone by it)",
            l.child.display()
        )
    } else {
        String::new()
    };
    w.ev.emit(Event::Note(format!(
        "{} is itself managed by {} (found by {}), which does not put its policy back now ({}) but would once it syncs again{also}: this window relies on that suspension (its journal records it); keep it so until {} is restored after the window; vpnmig never resumes it",
        l.child.display(),
        l.parent.owner.display(),
        l.parent.evidence.join(", "),
        l.state.how,
        owner.display()
    )));
    Ok(())
}

/// The window's journal with the parent records every other window's journal holds
/// added, not relied on (`relies: false`): a link one of them remembers (a stop of
/// theirs named it, or they relied on it) is remembered for this window's chain too
/// ([`gitops::Link::remembered`]). A level a stop of another window named and a person
/// suspended as it said (`kubectl patch … --field-manager=vpnmig`) shows no more in the
/// managedFields of the level below it that its sync puts that level back; without the
/// record, this window relied on the level below only, and the resume the other window
/// advised re-armed it (a21m B07's variant). Journals that cannot be read add nothing.
pub(super) async fn remembered_anywhere(w: &Window<'_>) -> crate::core::journal::Journal {
    let mut out = w.journal.clone();
    let listed = match every_journal(w.cluster).await {
        Ok(l) => l,
        Err(why) => {
            w.ev.emit(Event::Note(format!(
                "the parents other windows' stops named are not known to this window: {why}; a parent level suspended by hand as such a stop said is relied on only where the level below still shows it"
            )));
            return out;
        }
    };
    for o in &listed {
        if (o.namespace.as_str(), o.gateway.as_str()) == (w.ns(), w.name()) {
            continue;
        }
        for p in &o.gitops_parents {
            let Some(child) = &p.parent_of else { continue };
            let known = out.gitops_parents.iter().any(|q| {
                gitops::same_owner(&q.owner, &p.owner)
                    && q.parent_of
                        .as_ref()
                        .is_some_and(|c| gitops::same_owner(c, child))
            });
            if !known {
                let mut r = p.clone();
                r.relies = false;
                out.gitops_parents.push(r);
            }
        }
    }
    out
}

/// Record in the journal each link of the chain a stop names, not relied on
/// (`relies: false`): what the next run needs to know that the parent put the level below
/// back, once the child's managedFields no longer show it (a person suspended the child,
/// and the parent above applied it back: a21i 06), and that the last stop named it.
pub(super) async fn remember_chain(
    w: &mut Window<'_>,
    chain: &[(gitops::Link, Value)],
) -> Result<(), Error> {
    let mut changed = false;
    for (l, parent) in chain {
        let known = w.journal.gitops_parents.iter().any(|r| {
            gitops::same_owner(&r.owner, &l.parent.owner)
                && r.parent_of
                    .as_ref()
                    .is_some_and(|c| gitops::same_owner(c, &l.child))
        });
        if known {
            continue;
        }
        let uid = parent
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .map(str::to_string);
        let mut r = Record::of_parent(&l.parent, &l.child, uid);
        r.relies = false;
        w.journal.gitops_parents.push(r);
        changed = true;
    }
    if changed {
        journal::write(w.cluster, &w.journal, false).await?;
    }
    Ok(())
}

/// The chain of parents above `owner` (`obj`, as read), level by level, at most
/// [`holders::PARENT_LEVELS`] levels read in full, never round a cycle: each parent the
/// cluster has whose sync puts the level below back, now or once it syncs again, or that
/// the journal remembers as doing so ([`gitops::Link`]), with its object. The chain goes
/// on above a parent that syncs as above one that is suspended: a suspension of it holds
/// only while its own parents keep it (a21i 06, 09). Past the levels read in full, each
/// level its markers name is followed on to the top (a21l A03: the level past the limit
/// was named as the top each round, and its own parent put it back each time). A parent
/// already on the chain below its child closes a cycle ([`gitops::Link::cycle`], a21l
/// A07): it is said, never followed round.
pub(crate) async fn live_chain(
    cluster: &Cluster,
    journal: &crate::core::journal::Journal,
    owner: &gitops::OwnerRef,
    obj: &Value,
) -> Result<Vec<(gitops::Link, Value)>, Error> {
    let mut out: Vec<(gitops::Link, Value)> = Vec::new();
    let mut seen: Vec<gitops::OwnerRef> = vec![owner.clone()];
    let mut level: Vec<(gitops::OwnerRef, Value)> = vec![(owner.clone(), obj.clone())];
    // Levels read in full, then levels past them followed by their markers, bounded.
    let last = holders::CHAIN_LEVELS;
    for depth in 1..=last {
        let beyond = depth > holders::PARENT_LEVELS;
        let mut next = Vec::new();
        for (child, child_obj) in &level {
            for (p, parent) in live_parents(cluster, child_obj).await? {
                let remembered = journal.gitops_parents.iter().any(|r| {
                    gitops::same_owner(&r.owner, &p.owner)
                        && r.parent_of
                            .as_ref()
                            .is_some_and(|c| gitops::same_owner(c, child))
                });
                let mut link = if beyond {
                    gitops::beyond_link(p.clone(), &parent, child, child_obj, depth)
                } else {
                    gitops::Link {
                        state: gitops::parent_state(&parent, child_obj),
                        parent: p.clone(),
                        child: child.clone(),
                        level: depth,
                        remembered,
                        cycle: false,
                    }
                };
                link.remembered = remembered;
                if seen.iter().any(|o| gitops::same_owner(o, &p.owner)) {
                    // On the chain already: a cycle when it is below this child (it
                    // applies the child, which applies it back); else one more path to a
                    // level named already.
                    if !gitops::same_owner(&p.owner, owner)
                        && below_on_chain(&out, child, &p.owner)
                        && link.matters()
                    {
                        link.cycle = true;
                        out.push((link, parent));
                    }
                    continue;
                }
                if !link.matters() {
                    continue;
                }
                seen.push(p.owner.clone());
                next.push((p.owner.clone(), parent.clone()));
                out.push((link, parent));
            }
        }
        if next.is_empty() {
            break;
        }
        level = next;
    }
    Ok(out)
}

/// Whether `p` is `child` or a level below it on the chain `out` (down to the owner).
fn below_on_chain(
    out: &[(gitops::Link, Value)],
    child: &gitops::OwnerRef,
    p: &gitops::OwnerRef,
) -> bool {
    let mut at = child.clone();
    for _ in 0..=out.len() {
        if gitops::same_owner(&at, p) {
            return true;
        }
        match out
            .iter()
            .find(|(l, _)| !l.cycle && gitops::same_owner(&l.parent.owner, &at))
        {
            Some((l, _)) => at = l.child.clone(),
            None => return false,
        }
    }
    false
}

/// The parents of an owner ([`gitops::parents`]) that the cluster has, each with its
/// object (namespace filled in). One the cluster does not have puts nothing back.
pub(crate) async fn live_parents(
    cluster: &Cluster,
    owner: &Value,
) -> Result<Vec<(gitops::Parent, Value)>, Error> {
    Ok(live::parents_of(cluster, owner).await?)
}

/// Whether parent `obj` (as read) reads suspended: it does not sync, or, an
/// ApplicationSet, it does not update its Applications.
pub(crate) fn reads_suspended(obj: &Value) -> bool {
    if obj["kind"] == "ApplicationSet" {
        return matches!(
            obj.pointer("/spec/syncPolicy/applicationsSync")
                .and_then(Value::as_str),
            Some("create-only" | "create-delete")
        );
    }
    !gitops::owner_state(obj, "", "", "").active
}

/// The parents a stop of window `j` named (its journal remembers them: a21k N11) and the
/// window never relied on, that read suspended now, each with what that means for this
/// window, skipping those `said` already names: kept suspended while the window is open (vpnmig never resumes one), and
/// resumed by the person who suspended it once the window is closed. Said by every
/// refusal and stop after the parent stop (the window guard's, a rollback's) and when a
/// rollback closes the window. A parent that cannot be read is left out.
pub(crate) async fn named_parents(
    cluster: &Cluster,
    j: &crate::core::journal::Journal,
    said: &str,
) -> Vec<String> {
    let (name, ns) = (j.gateway.as_str(), j.namespace.as_str());
    let mut out = Vec::new();
    let mut seen: Vec<&gitops::OwnerRef> = Vec::new();
    // Every window's journals, read once when a closed window names a parent: one that
    // stands above a level another window relies on is kept for it (a21m B07).
    let mut others: Option<Result<Vec<crate::core::journal::Journal>, String>> = None;
    for p in &j.gitops_parents {
        if seen.iter().any(|o| gitops::same_owner(o, &p.owner)) {
            continue;
        }
        seen.push(&p.owner);
        // A parent the window relies on (or relied on) is named by the reliance's own
        // words, with when it may be resumed: never "resume it yourself" here.
        let relied = j
            .gitops_parents
            .iter()
            .any(|q| q.relies && gitops::same_owner(&q.owner, &p.owner));
        if said.contains(&p.owner.display()) {
            continue;
        }
        // Relied on now (every member of a cycle too: a21m B03, where a refusal named
        // only the member a stop had named): said with what the reliance waits for.
        if let Some(bottom) = j
            .gitops_parents
            .iter()
            .filter(|q| gitops::same_owner(&q.owner, &p.owner))
            .find(|q| holders::parent_relied_on(j, q))
            .and_then(|q| holders::bottom_owner(j, q))
        {
            // Said only as read back: one that syncs again is named by the stops that
            // see it act.
            let reads = matches!(live::find(cluster, &p.owner).await, Ok(Found::One(_, ref obj)) if reads_suspended(obj));
            if !reads {
                continue;
            }
            out.push(format!(
                "{} stays suspended: the window of {ns}/{name} relies on its suspension until {} is restored (`vpnmig status -n {ns}` names what it waits for); vpnmig never resumes it",
                p.owner.display(),
                bottom.owner.display()
            ));
            continue;
        }
        if relied {
            continue;
        }
        let Ok(Found::One(_, obj)) = live::find(cluster, &p.owner).await else {
            continue;
        };
        if !reads_suspended(&obj) {
            continue;
        }
        if j.phase.finished() {
            if others.is_none() {
                others = Some(every_journal(cluster).await);
            }
            let needers = match others.as_ref() {
                Some(Ok(all)) => holders::needers(all, &p.owner, (ns, name)),
                Some(Err(why)) => {
                    out.push(unread_note(&p.owner, ns, name, why));
                    continue;
                }
                None => Vec::new(),
            };
            if !needers.is_empty() {
                out.push(format!(
                    "{} is suspended and this window asked for it (a stop of the window of {ns}/{name} named it); the window is closed, but it applies {} back, above what {} {} on: {}; vpnmig never resumes a parent: only then resume it yourself ({})",
                    p.owner.display(),
                    p.parent_of
                        .as_ref()
                        .map(gitops::OwnerRef::display)
                        .unwrap_or_default(),
                    needers.join(", "),
                    if needers.len() == 1 { "relies" } else { "rely" },
                    holders::keep_for(&needers),
                    resume_yourself(&p.owner)
                ));
                continue;
            }
        }
        out.push(if j.phase.finished() {
            format!(
                "{} is suspended and this window asked for it (a stop of the window of {ns}/{name} named it); the window is closed and vpnmig never resumes a parent: resume it yourself ({}) once no other window relies on it (`vpnmig status -A` names any)",
                p.owner.display(),
                resume_yourself(&p.owner)
            )
        } else {
            format!(
                "{} stays suspended for this window (a stop of the window of {ns}/{name} asked for it; the journal remembers it): keep it so while the window is open (`vpnmig cutover {name} -n {ns}` goes on, `vpnmig rollback {name} -n {ns}` closes it); vpnmig never resumes it: once the window is closed, resume it yourself ({})",
                p.owner.display(),
                resume_yourself(&p.owner)
            )
        });
    }
    out
}

/// `e` with [`named_parents`] said after its message, for a stop of window `name` whose
/// journal remembers parents a stop named (a21k N11: the window guard's refusal after a
/// parent stop never named the parent again).
pub(crate) async fn with_named_parents(cluster: &Cluster, name: &str, e: Error) -> Error {
    let Error::Stop {
        code,
        message,
        hint,
    } = e
    else {
        return e;
    };
    let notes = match crate::cluster::journal::read(cluster, name).await {
        Ok(Some(j)) if !j.gitops_parents.is_empty() => named_parents(cluster, &j, &message).await,
        _ => Vec::new(),
    };
    if notes.is_empty() {
        return Error::Stop {
            code,
            message,
            hint,
        };
    }
    Error::Stop {
        code,
        message: format!("{message}; {}", notes.join("; ")),
        hint,
    }
}
