//! Suspending the owners for the window (`--gitops pause`) and checking they stay
//! suspended and hold no parent that would undo it.

use super::*;

/// Suspend every owner the journal says `pause` and is not suspended yet; each patch is
/// recorded (`paused`) right after it lands. Before the delete, what manages each owner
/// itself is looked at first (a parent whose sync puts the policy back stops the window,
/// nothing deleted), and after the patches every owner is read back from the cluster for
/// a while ([`held`]): a suspension is what the owner shows, not what the patch answered
/// (issue 21 item 4).
pub(crate) async fn pause(w: &mut Window<'_>, verb: &str) -> Result<(), Error> {
    // Until the apply, an owner that syncs again can still be stopped before anything new
    // is live: its parents are checked and its suspension read back on every run.
    let before_apply = w.journal.phase < Phase::Applied;
    if before_apply {
        let owners: Vec<gitops::OwnerRef> = w
            .journal
            .gitops
            .iter()
            .filter(|r| r.restored_at.is_none())
            .map(|r| r.owner.clone())
            .collect();
        for wanted in owners {
            let Found::One(owner, obj) = live::find(w.cluster, &wanted).await? else {
                continue;
            };
            // The whole chain of parents above it, not one level only (a21i 06, 09: the
            // parent's own parent put its policy back, and the stop looped on it).
            let chain = live_chain(w.cluster, &w.journal, &owner, &obj).await?;
            let links: Vec<gitops::Link> = chain.iter().map(|(l, _)| l.clone()).collect();
            if !gitops::acting_top_down(&links).is_empty() {
                let stop = chain_stop(w, verb, &owner, &links, None);
                remember_chain(w, &chain).await?;
                return Err(stop);
            }
            for (l, parent) in &chain {
                rely_on_parent(w, &owner, l, parent).await?;
            }
        }
    }
    for i in 0..w.journal.gitops.len() {
        let r = &w.journal.gitops[i];
        let Some(saved) = &r.saved else { continue };
        if r.restored_at.is_some() {
            continue;
        }
        let (owner, pointer, recorded) = (r.owner.clone(), saved.pointer.clone(), r.paused);
        // Suspended by an earlier run: read back first. A policy someone set since is
        // theirs: one that does not sync is left as it is (relied on, never restored
        // over); one that syncs again is suspended again, and its policy is what the end
        // of the window restores (issue 21 item 4).
        if recorded && let Found::One(_, now) = live::find(w.cluster, &owner).await? {
            let uid_now = now
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .map(str::to_string);
            // Deleted and re-created since: not the object the window paused. One that
            // does not sync is left as it is (relied on); one that does is suspended like
            // one re-enabled, its own policy what the end restores (attack 4).
            let held = match gitops::held(&w.journal.gitops[i], &now) {
                gitops::Held::Replaced { uid, active, now } => {
                    let then = w.journal.gitops[i].uid.clone().unwrap_or_default();
                    w.journal.gitops[i].uid = uid_now.clone();
                    let what = format!(
                        "deleted and re-created since the window paused it (uid {uid}, the journal's {then})"
                    );
                    if active {
                        gitops::Held::ReEnabled {
                            now: format!("{now}; {what}"),
                        }
                    } else {
                        gitops::Held::Changed {
                            now: format!("{now}; {what}"),
                        }
                    }
                }
                other => other,
            };
            match held {
                gitops::Held::AsLeft | gitops::Held::Replaced { .. } => {}
                gitops::Held::Changed { now } => {
                    w.journal.gitops[i].saved = None;
                    w.journal.gitops[i].paused = false;
                    journal::write(w.cluster, &w.journal, false).await?;
                    w.ev.emit(Event::Warning(format!(
                        "{}: its policy changed since the window paused it (live: {now}); it does not sync, so vpnmig leaves it as it is and will not restore over it",
                        owner.display()
                    )));
                    continue;
                }
                gitops::Held::ReEnabled { now: seen } => {
                    // Re-armed by an active parent: suspended again, the parent would
                    // only re-arm it once more, after the read-back (a re-run is no
                    // answer to it). Stopped, naming the parent, before anything new is
                    // applied.
                    if before_apply {
                        let chain = live_chain(w.cluster, &w.journal, &owner, &now).await?;
                        let links: Vec<gitops::Link> =
                            chain.iter().map(|(l, _)| l.clone()).collect();
                        if !gitops::acting_top_down(&links).is_empty() {
                            let stop = chain_stop(w, verb, &owner, &links, Some(&seen));
                            remember_chain(w, &chain).await?;
                            return Err(stop);
                        }
                        let parents = live_parents(w.cluster, &now).await?;
                        if let Some((p, st)) = parents
                            .iter()
                            .map(|(p, v)| (p, gitops::parent_state(v, &now)))
                            .find(|(_, st)| st.active)
                        {
                            return Err(parent_stop(w, verb, &owner, p, &st, Some(&seen)));
                        }
                    }
                    if let Some(s) = w.journal.gitops[i].saved.as_mut() {
                        s.value = now.pointer(&pointer).cloned();
                    }
                    journal::write(w.cluster, &w.journal, false).await?;
                    w.ev.emit(Event::Warning(format!(
                        "{} was re-enabled by someone else since the window paused it (live: {seen}): suspended again for the window; the end of the window restores that policy, not the one before",
                        owner.display()
                    )));
                }
            }
        }
        // Recorded as suspended before the patch is sent: a run killed in between leaves
        // a journal that says so (and `status` lists it); restoring an owner the patch
        // never reached writes back the value it still has. The first suspension is a
        // compare-and-swap ([`first_pause`]): another window may have suspended it
        // since this one found it syncing.
        if !recorded {
            if !first_pause(w, i, verb).await? {
                continue;
            }
        } else {
            // Sent again on every run before the delete (it is idempotent): the journal
            // may say suspended for a patch that never landed.
            live::patch(
                w.cluster,
                &owner,
                &gitops::pause_patch(&owner_shape(&owner)),
            )
            .await?;
        }
        w.ev.emit(Event::Step(format!(
            "suspended {} for the window ({} {}; the journal records it to restore at the end)",
            owner.display(),
            if owner.kind == "Application" {
                "removed"
            } else {
                "set"
            },
            gitops::dotted(&pointer)
        )));
    }
    if before_apply {
        held(w, verb, SETTLE_PAUSE).await?;
    }
    Ok(())
}

/// Record that the window relies on the suspension of link `l`'s parent (`parent`, as
/// read), a parent of `owner` or of a parent above it (a21i 06, 09), whose sync would
/// put the policy of the level below back once it syncs again (a21g attack 16: a parent
/// Kustomization suspended by hand, as the stop advised; resumed the next morning, it
/// re-armed the child after `done`). The journal gets a record of the parent with
/// `relies: true` before the window goes on (one a stop named is marked relied on now);
/// [`held`] reads it back until the delete, and `status` names it until the owner is
/// restored. vpnmig never resumes it.
async fn rely_on_parent(
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

/// Record in the journal each link of the chain a stop names, not relied on
/// (`relies: false`): what the next run needs to know that the parent put the level below
/// back, once the child's managedFields no longer show it (a person suspended the child,
/// and the parent above applied it back: a21i 06), and that the last stop named it.
async fn remember_chain(w: &mut Window<'_>, chain: &[(gitops::Link, Value)]) -> Result<(), Error> {
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
/// [`holders::PARENT_LEVELS`] levels, never round a cycle: each parent the cluster has
/// whose sync puts the level below back, now or once it syncs again, or that the journal
/// remembers as doing so ([`gitops::Link`]), with its object. The chain goes on above a
/// parent that syncs as above one that is suspended: a suspension of it holds only while
/// its own parents keep it (a21i 06, 09).
pub(crate) async fn live_chain(
    cluster: &Cluster,
    journal: &crate::core::journal::Journal,
    owner: &gitops::OwnerRef,
    obj: &Value,
) -> Result<Vec<(gitops::Link, Value)>, Error> {
    let mut out: Vec<(gitops::Link, Value)> = Vec::new();
    let mut seen: Vec<gitops::OwnerRef> = vec![owner.clone()];
    let mut level: Vec<(gitops::OwnerRef, Value)> = vec![(owner.clone(), obj.clone())];
    for depth in 1..=holders::PARENT_LEVELS {
        let mut next = Vec::new();
        for (child, child_obj) in &level {
            for (p, parent) in live_parents(cluster, child_obj).await? {
                if seen.iter().any(|o| gitops::same_owner(o, &p.owner)) {
                    continue;
                }
                let remembered = journal.gitops_parents.iter().any(|r| {
                    gitops::same_owner(&r.owner, &p.owner)
                        && r.parent_of
                            .as_ref()
                            .is_some_and(|c| gitops::same_owner(c, child))
                });
                let link = gitops::Link {
                    state: gitops::parent_state(&parent, child_obj),
                    parent: p.clone(),
                    child: child.clone(),
                    level: depth,
                    remembered,
                };
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

/// How many times the first suspension is tried again after the owner changed between
/// the read and the patch (409), each time read again.
pub(super) const PAUSE_TRIES: usize = 5;

/// The first suspension of owner record `i` by this window, as a compare-and-swap (a21d
/// attack 9: two windows of a wave, `--concurrency 2`, both found the owner syncing and
/// both recorded themselves as the one that suspended it). The owner is read again: one
/// suspended since (by another window, or a person) is relied on — the record loses
/// `saved`, says `relies` and who holds it, and this window never restores it. One still
/// syncing is recorded as suspended by this window (before the patch), then patched
/// with its `metadata.resourceVersion` as read: a write in between (another window's
/// suspension) is a 409, and the owner is read again. `Ok(true)`: this window suspended
/// it; `Ok(false)`: it relies on another's suspension.
pub(super) async fn first_pause(w: &mut Window<'_>, i: usize, verb: &str) -> Result<bool, Error> {
    let owner = w.journal.gitops[i].owner.clone();
    let (ns, name) = (w.ns().to_string(), w.name().to_string());
    let kind = w.journal.old_manifest["kind"]
        .as_str()
        .unwrap_or("IPsecGateway")
        .to_string();
    for _ in 0..PAUSE_TRIES {
        let obj = match live::find(w.cluster, &owner).await? {
            Found::One(_, o) => Some(o),
            _ => None,
        };
        if let Some(o) = obj.as_ref()
            && !gitops::owner_state(o, &kind, &ns, &name).active
        {
            let held_by = holders_now(w.cluster, &owner, &ns, &name).await;
            let reliance = reliance(&held_by);
            let r = &mut w.journal.gitops[i];
            r.saved = None;
            r.paused = false;
            r.relies = true;
            r.held_by = held_by
                .unwrap_or_default()
                .iter()
                .filter(|h| h.holds())
                .map(|h| format!("{}/{}", h.namespace, h.gateway))
                .collect();
            journal::write(w.cluster, &w.journal, false).await?;
            w.ev.emit(Event::Note(format!(
                "{} was suspended since this window found it syncing ({}; {reliance}): this window relies on that suspension and does not record it as its own; its journal records it, and no window restores the owner until this one is done",
                owner.display(),
                how(&gitops::owner_state(o, &kind, &ns, &name))
            )));
            return Ok(false);
        }
        w.journal.gitops[i].paused = true;
        journal::write(w.cluster, &w.journal, false).await?;
        let mut patch = gitops::pause_patch(&owner_shape(&owner));
        if let Some(rv) = obj
            .as_ref()
            .and_then(|o| o.pointer("/metadata/resourceVersion"))
            .and_then(Value::as_str)
            && let Some(m) = patch.as_object_mut()
        {
            m.insert(
                "metadata".into(),
                serde_json::json!({"resourceVersion": rv}),
            );
        }
        match live::patch(w.cluster, &owner, &patch).await {
            Ok(_) => return Ok(true),
            Err(e) if crate::cluster::objects::status(&e) == Some(409) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(Error::Stop {
        code: exit::REFUSED,
        message: format!(
            "{} changed {PAUSE_TRIES} times between vpnmig's read and its suspension (409 Conflict each time): something writes it continuously, and whether this window or another suspended it cannot be told; {}",
            owner.display(),
            where_it_stands(w)
        ),
        hint: Some(format!(
            "find who writes it (`kubectl get {} {} -n {} --show-managed-fields -o yaml`), then `vpnmig {verb} {name} -n {ns} --gitops pause` again",
            owner.resource(),
            owner.name,
            owner.namespace.as_deref().unwrap_or("argocd")
        )),
    })
}

/// How long the owners are read back after the pause, before the window goes on: a
/// parent's self-heal or another controller answers a change within this.
pub(super) const SETTLE_PAUSE: std::time::Duration = std::time::Duration::from_millis(1500);

/// Read back, for `settle` (at least once), every owner the window suspended or relies on
/// being suspended: one that syncs on its own again stops the window before the delete
/// (exit 7, no gateway deleted), naming what manages it (a parent Application, an
/// ApplicationSet, a Kustomization) and the field managers that wrote it. Called after
/// the pause and right before the delete.
pub(crate) async fn held(
    w: &Window<'_>,
    verb: &str,
    settle: std::time::Duration,
) -> Result<(), Error> {
    let started = std::time::Instant::now();
    let holds = |r: &&Record| r.restored_at.is_none() && (r.paused || r.saved.is_none());
    // Nothing held (no GitOps owner): nothing to read back, and no time to wait.
    if !w.journal.gitops.iter().any(|r| holds(&r)) {
        return Ok(());
    }
    loop {
        // The parents whose suspension the window relies on, read back like the owners
        // (a21g attack 16): one that would put an owner's policy back now stops the
        // window before the delete, before its sync re-arms the owner.
        for pr in w
            .journal
            .gitops_parents
            .iter()
            .filter(|p| crate::core::holders::parent_relied_on(&w.journal, p))
        {
            let Some(child) = &pr.parent_of else { continue };
            let Found::One(owner, obj) = live::find(w.cluster, child).await? else {
                continue;
            };
            let Found::One(_, parent) = live::find(w.cluster, &pr.owner).await? else {
                continue;
            };
            let (acts, st) = gitops::relied_parent_acts(&parent, &obj);
            if acts {
                let (name, ns) = (w.name(), w.ns());
                return Err(Error::Stop {
                    code: exit::REFUSED,
                    message: format!(
                        "{} manages {} (found by {}) and was re-enabled by someone else while this window relies on its suspension (now {}): its sync puts back the policy the window needs suspended; {}",
                        pr.owner.display(),
                        owner.display(),
                        pr.evidence.join(", "),
                        st.how,
                        where_it_stands(w)
                    ),
                    hint: Some(format!(
                        "{}, then `vpnmig {verb} {name} -n {ns} --gitops pause` again; {}",
                        parent_fix(&pr.owner),
                        way_back(w)
                    )),
                });
            }
        }
        for r in w.journal.gitops.iter().filter(holds) {
            let Found::One(owner, obj) = live::find(w.cluster, &r.owner).await? else {
                continue;
            };
            let again = match gitops::held(r, &obj) {
                gitops::Held::ReEnabled { now } => Some(now),
                gitops::Held::Replaced {
                    uid,
                    active: true,
                    now,
                } => Some(format!(
                    "{now}; deleted and re-created since the window paused it, uid {uid}"
                )),
                _ => None,
            };
            if let Some(now) = again {
                let links: Vec<gitops::Link> = live_chain(w.cluster, &w.journal, &owner, &obj)
                    .await?
                    .into_iter()
                    .map(|(l, _)| l)
                    .collect();
                if !gitops::acting_top_down(&links).is_empty() {
                    return Err(chain_stop(w, verb, &owner, &links, Some(&now)));
                }
                let parents = live_parents(w.cluster, &obj).await?;
                let active = parents
                    .iter()
                    .map(|(p, v)| (p, gitops::parent_state(v, &obj)))
                    .find(|(_, st)| st.active);
                if let Some((p, st)) = active {
                    return Err(parent_stop(w, verb, &owner, p, &st, Some(&now)));
                }
                let (name, ns) = (w.name(), w.ns());
                let writers = writers(&obj);
                return Err(Error::Stop {
                    code: exit::REFUSED,
                    message: format!(
                        "{} syncs automatically again ({now}; {writers}): the window's suspension did not hold, read back from the cluster; {}",
                        owner.display(),
                        where_it_stands(w)
                    ),
                    hint: Some(format!(
                        "{}: find who re-enabled it (`kubectl get {} {} -n {} --show-managed-fields -o yaml`) and stop that, then `vpnmig {verb} {name} -n {ns} --gitops pause` again; {}",
                        if parents.is_empty() {
                            "no parent its metadata names is in the cluster".to_string()
                        } else {
                            format!(
                                "its parents read back not syncing ({})",
                                parents
                                    .iter()
                                    .map(|(p, _)| p.owner.display())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        },
                        owner.resource(),
                        owner.name,
                        owner.namespace.as_deref().unwrap_or("argocd"),
                        way_back(w)
                    )),
                });
            }
        }
        if started.elapsed() >= settle {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

/// Where a window stopped by an owner that syncs again stands: before the delete, or
/// after it with nothing new applied.
pub(super) fn where_it_stands(w: &Window<'_>) -> String {
    if w.journal.phase < Phase::Deleting {
        "no gateway was deleted".into()
    } else {
        format!(
            "the old gateway was deleted and nothing new was applied (journal phase {}): its sync would re-create the IPsecGateway and take the floating IP",
            w.journal.phase
        )
    }
}

/// The way back for [`where_it_stands`].
pub(super) fn way_back(w: &Window<'_>) -> String {
    let (name, ns) = (w.name(), w.ns());
    if w.journal.phase < Phase::Deleting {
        format!("`vpnmig rollback {name} -n {ns}` closes the journal and keeps the IPsecGateway")
    } else {
        format!(
            "`vpnmig rollback {name} -n {ns}` re-creates the IPsecGateway from the journal instead (suspend the owner first there too)"
        )
    }
}

/// The field managers that wrote `obj`, vpnmig's left out: who may have re-enabled it.
pub(super) fn writers(obj: &Value) -> String {
    let mut m: Vec<String> = crate::core::scope::managers(obj)
        .into_iter()
        .filter(|m| m != crate::core::scope::FIELD_MANAGER)
        .collect();
    m.sort();
    m.dedup();
    if m.is_empty() {
        "no other field manager wrote it".into()
    } else {
        format!("field managers {}", m.join(", "))
    }
}

/// The parents of an owner ([`gitops::parents`]) that the cluster has, each with its
/// object (namespace filled in). One the cluster does not have puts nothing back.
pub(crate) async fn live_parents(
    cluster: &Cluster,
    owner: &Value,
) -> Result<Vec<(gitops::Parent, Value)>, Error> {
    Ok(live::parents_of(cluster, owner).await?)
}

/// How to keep a parent from putting its child's policy back, a sentence starting with
/// the verb.
pub(super) fn parent_fix(p: &gitops::OwnerRef) -> String {
    match p.kind.as_str() {
        "ApplicationSet" => format!(
            "set `spec.syncPolicy.applicationsSync: create-only` on {} for the window (an `ignoreApplicationDifferences` entry for `/spec/syncPolicy` is not enough where the Argo CD that runs it does not honour it: a21g 13)",
            p.display()
        ),
        _ => format!(
            "suspend {} for the window ({}; vpnmig does not restore it)",
            p.display(),
            suspend_command(p)
        ),
    }
}

/// The stop for an owner whose parent puts its policy back: before the patch
/// (`now: None`, predicted from the parent's object) or after it (`now`: the owner read
/// back syncing again). No gateway was deleted either way.
pub(super) fn parent_stop(
    w: &Window<'_>,
    verb: &str,
    owner: &gitops::OwnerRef,
    p: &gitops::Parent,
    st: &gitops::ParentState,
    now: Option<&str>,
) -> Error {
    let (name, ns) = (w.name(), w.ns());
    let what = match now {
        Some(now) => format!(
            "{} syncs automatically again ({now}) after vpnmig suspended it: it is itself managed by {} (found by {}; {}), which put its policy back",
            owner.display(),
            p.owner.display(),
            p.evidence.join(", "),
            st.how
        ),
        None => format!(
            "{} is itself managed by {} (found by {}; {}): its sync puts back the policy `--gitops pause` would change, so the suspension would not hold",
            owner.display(),
            p.owner.display(),
            p.evidence.join(", "),
            st.how
        ),
    };
    Error::Stop {
        code: exit::REFUSED,
        message: format!("{what}; {}", where_it_stands(w)),
        hint: Some(format!(
            "{}, or change its source so that {} is suspended, then `vpnmig {verb} {name} -n {ns} --gitops pause` again; {}",
            parent_fix(&p.owner),
            owner.display(),
            way_back(w)
        )),
    }
}

/// The stop for an owner whose chain of parents puts its policy back (a21i 06, 09): the
/// path from the owner up to the top-most parent that acts now, each level with what it
/// does, and the suspensions to make, top-most first (each one's sync undoes the
/// suspension of the one below it). A level the window's journal says a stop named
/// before, syncing again under a parent that applies it back, is said so: a suspension of
/// it alone was undone (never the identical stop twice). One level: [`parent_stop`].
pub(super) fn chain_stop(
    w: &Window<'_>,
    verb: &str,
    owner: &gitops::OwnerRef,
    links: &[gitops::Link],
    now: Option<&str>,
) -> Error {
    let acting = gitops::acting_top_down(links);
    let Some(top) = acting.first() else {
        return Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "{}: no parent acts; {}",
                owner.display(),
                where_it_stands(w)
            ),
            hint: None,
        };
    };
    if top.level == 1 {
        return parent_stop(w, verb, owner, &top.parent, &top.state, now);
    }
    // The path from the top-most acting link down to the owner.
    let mut path: Vec<&gitops::Link> = vec![top];
    while let Some(below) = path.last().filter(|l| l.level > 1).and_then(|l| {
        links
            .iter()
            .find(|x| x.level == l.level - 1 && gitops::same_owner(&x.parent.owner, &l.child))
    }) {
        path.push(below);
    }
    path.reverse();
    let record = |l: &gitops::Link| {
        w.journal.gitops_parents.iter().find(|r| {
            gitops::same_owner(&r.owner, &l.parent.owner)
                && r.parent_of
                    .as_ref()
                    .is_some_and(|c| gitops::same_owner(c, &l.child))
        })
    };
    let mut parts = Vec::new();
    for (k, l) in path.iter().enumerate() {
        let relied = record(l).is_some_and(|r| r.relies);
        let does = if !l.acts() {
            format!(
                "{}), which does not put its policy back now but would once it syncs again",
                l.state.how
            )
        } else if relied {
            format!(
                "now {}), which was re-enabled by someone else while this window relies on its suspension",
                l.state.how
            )
        } else if l.level == 1 {
            format!(
                "{}), whose sync puts back the policy `--gitops pause` would change",
                l.state.how
            )
        } else {
            format!(
                "{}), which applies {} back: a suspension of {} is undone by it",
                l.state.how,
                l.child.display(),
                l.child.display()
            )
        };
        // The level below was named by an earlier stop and syncs again: if it was
        // suspended since, this parent applied it back.
        let again = (l.level > 1 && l.acts())
            .then(|| path.get(k.wrapping_sub(1)))
            .flatten()
            .filter(|below| below.state.active && record(below).is_some())
            .map(|_| {
                format!(
                    " ({} syncs again although an earlier run of this window named it: if it was suspended since, {} applied it back; suspending it alone does not hold)",
                    l.child.display(),
                    l.parent.owner.display()
                )
            })
            .unwrap_or_default();
        let head = match (k, now) {
            (0, Some(now)) => format!(
                "{} syncs automatically again ({now}) after vpnmig suspended it: it",
                l.child.display()
            ),
            _ => l.child.display(),
        };
        parts.push(format!(
            "{head} is itself managed by {} (found by {}; {does}{again}",
            l.parent.owner.display(),
            l.parent.evidence.join(", ")
        ));
    }
    let steps: Vec<String> = acting
        .iter()
        .enumerate()
        .map(|(k, l)| {
            let what = parent_fix_verb(&l.parent.owner);
            if k == 0 && acting.len() > 1 {
                format!("{what} first: it applies {} back", l.child.display())
            } else {
                what
            }
        })
        .collect();
    let (name, ns) = (w.name(), w.ns());
    Error::Stop {
        code: exit::REFUSED,
        message: format!(
            "{}; so the suspension of {} would not hold; {}",
            parts.join("; and "),
            owner.display(),
            where_it_stands(w)
        ),
        hint: Some(format!(
            "{}, for the window (vpnmig does not restore {}), or change the sources so that {} is suspended, then `vpnmig {verb} {name} -n {ns} --gitops pause` again; {}",
            steps.join("; then "),
            if steps.len() == 1 { "it" } else { "them" },
            owner.display(),
            way_back(w)
        )),
    }
}

/// Why the old gateway `obj` exists again after the window deleted it (issue 21 item
/// 3): each GitOps owner its markers name, read now and held against the journal.
/// `Some((why, first))`: an owner that still acts (`why`), and what must stop it before
/// any rollback or resume, which would otherwise fight it (`first`). `None`: nothing
/// names an owner that acts now.
pub(crate) async fn still_acting(
    w: &Window<'_>,
    obj: &Value,
) -> Result<Option<(String, String)>, Error> {
    let (name, ns) = (w.name(), w.ns());
    let kind = obj["kind"].as_str().unwrap_or("IPsecGateway");
    let obj_name = obj["metadata"]["name"].as_str().unwrap_or(name);
    for m in gitops::reconciling(&gitops::detect(obj)) {
        let Some(wanted) = &m.owner else { continue };
        let Found::One(owner, live_obj) = live::find(w.cluster, wanted).await? else {
            continue;
        };
        let record = w.journal.gitops.iter().find(|r| r.owner == owner);
        let st = gitops::owner_state(&live_obj, kind, ns, obj_name);
        // Only its controller's field manager says it wrote the object: its labels do
        // not (vpnmig's own re-create from the saved manifest carries them).
        let wrote = gitops::written_by(&owner.kind, obj);
        let take_out = if kind == "IPsecGateway" {
            format!(
                "or take the IPsecGateway out of its source and merge that (`vpnmig plan {name} -n {ns} --gitops-repo DIR` writes the change)"
            )
        } else {
            format!(
                "or revert the repository change so that its source defines IPsecGateway {ns}/{name} again instead of the {kind}"
            )
        };
        if !st.active && wrote && record.is_some_and(|r| r.paused || r.saved.is_none()) {
            let field = record
                .and_then(|r| r.saved.as_ref())
                .map(|s| {
                    format!(
                        "{} {}",
                        gitops::dotted(&s.pointer),
                        live_obj.pointer(&s.pointer).cloned().unwrap_or(Value::Null)
                    )
                })
                .unwrap_or_else(|| "suspended".into());
            // Written by a person too (a `kubectl patch` that re-enabled it for a while,
            // then suspended again?): both are said, as `status` says them (a21g 04: "stop
            // argocd-application-controller" over a colleague's re-enable).
            let hands = gitops::hand_writers(&live_obj);
            if !hands.is_empty() {
                return Ok(Some((
                    format!(
                        "{} re-created it; it reads back suspended ({field}), and the owner itself was written by {} too: someone may have re-enabled it for a while and suspended it again (its sync re-created the gateway in between), or its controller ignores its suspension",
                        owner.display(),
                        hands.join(", ")
                    ),
                    format!(
                        "find out which first (`kubectl get {} {} -n {} --show-managed-fields -o yaml`): keep it suspended for the window if it was re-enabled, else stop its controller; then {take_out}",
                        owner.resource(),
                        owner.name,
                        owner.namespace.as_deref().unwrap_or("argocd")
                    ),
                )));
            }
            return Ok(Some((
                format!(
                    "{} re-created it although it reads back suspended ({field}, as the window left it): its controller ignores its suspension, and vpnmig cannot hold it off",
                    owner.display()
                ),
                format!(
                    "make {} stop acting first: stop its controller ({}), {take_out}",
                    owner.display(),
                    if owner.kind == "Application" {
                        "argocd-application-controller"
                    } else if owner.kind == "HelmRelease" {
                        "helm-controller"
                    } else {
                        "kustomize-controller"
                    }
                ),
            )));
        }
        if st.active {
            let parents = live_parents(w.cluster, &live_obj).await?;
            let by = parents
                .iter()
                .find(|(_, v)| gitops::parent_state(v, &live_obj).active)
                .map(|(p, _)| {
                    format!(
                        "; it is itself managed by {} (found by {}), which puts its policy back",
                        p.owner.display(),
                        p.evidence.join(", ")
                    )
                })
                .unwrap_or_default();
            let whose = if record.is_some() {
                "the window suspended it, and it syncs automatically again"
            } else {
                "it syncs automatically and this window did not suspend it"
            };
            let did = if wrote {
                "re-created it".to_string()
            } else {
                format!(
                    "may re-create it (its field manager did not write this one: {})",
                    gitops::writer(obj).unwrap_or_else(|| "vpnmig or the operator did".into())
                )
            };
            return Ok(Some((
                format!("{} {did}: {whose} ({}{by})", owner.display(), how(&st)),
                format!(
                    "suspend {} first ({}{}), {take_out}",
                    owner.display(),
                    // The window's own suspension, written as the window writes it, so
                    // that it stays the window's and its restore puts the saved policy
                    // back (a21i 04b: `flux suspend` here read as "policy changed since",
                    // the window let go, and a resume by hand was handed out).
                    if record.is_some() {
                        format!(
                            "`{}`: written as vpnmig writes it, the suspension stays the window's, and its restore puts the saved policy back",
                            gitops::pause_command(&owner)
                        )
                    } else {
                        suspend_command(&owner)
                    },
                    parents
                        .iter()
                        .find(|(_, v)| gitops::parent_state(v, &live_obj).active)
                        .map(|(p, _)| format!("; and {}", parent_fix(&p.owner)))
                        .unwrap_or_default()
                ),
            )));
        }
    }
    Ok(None)
}

/// The smallest owner object the pause patch is chosen by.
pub(super) fn owner_shape(owner: &gitops::OwnerRef) -> Value {
    serde_json::json!({"kind": owner.kind})
}
