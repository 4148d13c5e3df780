//! The stop (with its fix) when a GitOps parent above an owner would put the owner's
//! policy back (a21i 06, 09), and the clauses it is said with: the chain that re-arms the
//! owner, its cycles, where to suspend it from, and how to resume a parent yourself.
//! Layer: the window engine (`src/window/`), part of `window::gitops`; it never prints.

use super::*;

/// How to keep a parent from putting its child's policy back, a sentence starting with
/// the verb.
pub(crate) fn parent_fix(p: &gitops::OwnerRef) -> String {
    match p.kind.as_str() {
        // With its command, as `status` and every other parent's stop (a21k N09).
        "ApplicationSet" => format!(
            "set `spec.syncPolicy.applicationsSync: create-only` on {} for the window ({}; an `ignoreApplicationDifferences` entry for `/spec/syncPolicy` is not enough where the Argo CD that runs it does not honour it: a21g 13)",
            p.display(),
            suspend_command(p)
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
        hint: Some(crate::window::error::hint!(
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
    // The path from the top-most acting link down to the owner, the owner's end first.
    let mut path = gitops::acting_path(links);
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
                // An ApplicationSet is kept by `create-only`, not a suspension (a21m B19:
                // its Flux parent put `sync` back each time, and no stop said so).
                let (does, since) = if l.child.kind == "ApplicationSet" {
                    (
                        "regenerates its Applications again",
                        "`applicationsSync` was set to `create-only` since",
                    )
                } else {
                    ("syncs again", "it was suspended since")
                };
                format!(
                    " ({} {does} although an earlier run of this window named it: if {since}, {} applied it back; {} alone does not hold)",
                    l.child.display(),
                    l.parent.owner.display(),
                    if l.child.kind == "ApplicationSet" {
                        "its `create-only`"
                    } else {
                        "suspending it"
                    }
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
    // Each level once, top-most first: a cycle's member is named once (a21l A07).
    let mut once: Vec<&gitops::Link> = Vec::new();
    for l in &acting {
        if !once
            .iter()
            .any(|o| gitops::same_owner(&o.parent.owner, &l.parent.owner))
        {
            once.push(l);
        }
    }
    let steps: Vec<String> = once
        .iter()
        .enumerate()
        .map(|(k, l)| {
            let what = parent_fix_verb(&l.parent.owner);
            if k == 0 && once.len() > 1 {
                format!("{what} first: it applies {} back", l.child.display())
            } else {
                what
            }
        })
        .collect();
    let cycles = cycles_said(links);
    let (name, ns) = (w.name(), w.ns());
    Error::Stop {
        code: exit::REFUSED,
        message: format!(
            "{}{}; so the suspension of {} would not hold; {}",
            parts.join("; and "),
            cycles
                .iter()
                .map(|c| format!("; and {c}"))
                .collect::<String>(),
            owner.display(),
            where_it_stands(w)
        ),
        hint: Some(crate::window::error::hint!(
            "{}{}, for the window (vpnmig does not restore {}), or change the sources so that {} is suspended, then `vpnmig {verb} {name} -n {ns} --gitops pause` again; {}",
            if cycles.is_empty() {
                String::new()
            } else {
                "suspend every member of each cycle, one right after the other, so that none is left syncing to put another back: ".to_string()
            },
            steps.join("; then "),
            if steps.len() == 1 { "it" } else { "them" },
            owner.display(),
            way_back(w)
        )),
    }
}

/// Each cycle of the chain `links` ([`gitops::Link::cycle`]), as a clause: its members,
/// and that each undoes a suspension of the other, so a suspension of one alone does not
/// hold (a21l A03, A07: the stop named one member as the top, and the other put it back
/// each round).
pub(crate) fn cycles_said(links: &[gitops::Link]) -> Vec<String> {
    links
        .iter()
        .filter(|l| l.cycle && l.matters())
        .map(|l| {
            let members = gitops::cycle_members(links, l);
            format!(
                "{} form a cycle: {} applies {} back, and each of them is applied back by another member, so a suspension of any one of them alone is undone; every member of the cycle is to be suspended",
                members
                    .iter()
                    .map(gitops::OwnerRef::display)
                    .collect::<Vec<_>>()
                    .join(" and "),
                l.parent.owner.display(),
                l.child.display()
            )
        })
        .collect()
}

/// The chain above `owner` (live: `obj`) whose sync puts its policy back now, top-most
/// level first ([`gitops::acting_path`]), read now and held against the journal's
/// records: what a stop names when the owner syncs again after the window suspended it
/// (a21j 01: a stop after the delete named the owner's parent only, never the root that
/// re-armed it, and following it looped). Empty: no parent acts.
pub(crate) async fn re_arming(
    cluster: &Cluster,
    journal: &crate::core::journal::Journal,
    owner: &gitops::OwnerRef,
    obj: &Value,
) -> Result<Vec<gitops::Link>, Error> {
    let links: Vec<gitops::Link> = live_chain(cluster, journal, owner, obj)
        .await?
        .into_iter()
        .map(|(l, _)| l)
        .collect();
    Ok(gitops::acting_path(&links).into_iter().cloned().collect())
}

/// `path` ([`re_arming`]) as clauses after the owner, from its parent up to the top-most
/// level: each level managed by the one above it, how that was found, and what it does.
pub(crate) fn re_armed_by(path: &[gitops::Link]) -> String {
    path.iter()
        .rev()
        .map(|l| {
            format!(
                "{} is itself managed by {} (found by {}; {}), which {}",
                l.child.display(),
                l.parent.owner.display(),
                l.parent.evidence.join(", "),
                l.state.how,
                if l.acts() {
                    "puts its policy back"
                } else {
                    "would put its policy back once it syncs again"
                }
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The suspensions `path` ([`re_arming`]) needs, top-most level first (each one's sync
/// undoes a suspension of the one below it), each with the command that makes it (vpnmig
/// restores none of them). The owner's own suspension comes after them (`; then suspend
/// …`).
pub(crate) fn suspend_from_the_top(path: &[gitops::Link]) -> String {
    // Each level once: a cycle's member closes it and is its own level too (a21l A07).
    let mut once: Vec<&gitops::Link> = Vec::new();
    for l in path {
        if !once
            .iter()
            .any(|o| gitops::same_owner(&o.parent.owner, &l.parent.owner))
        {
            once.push(l);
        }
    }
    once.iter()
        .enumerate()
        .map(|(k, l)| {
            format!(
                "{}{}{}: it applies {} back",
                if k == 0 { "" } else { "then " },
                parent_fix(&l.parent.owner),
                if k == 0 { " first" } else { "" },
                l.child.display()
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The command that resumes parent `p` by hand, in backticks (vpnmig never resumes a
/// parent: a person suspended it at a stop's request, and resumes it).
pub(crate) fn resume_yourself(p: &gitops::OwnerRef) -> String {
    let ns = p.namespace.as_deref().unwrap_or("argocd");
    match p.kind.as_str() {
        "Kustomization" => format!("`flux resume kustomization {} -n {ns}`", p.name),
        "HelmRelease" => format!("`flux resume helmrelease {} -n {ns}`", p.name),
        "ApplicationSet" => format!(
            "set `spec.syncPolicy.applicationsSync` of applicationset/{} -n {ns} back as it was",
            p.name
        ),
        _ => format!(
            "`argocd app set {ns}/{} --sync-policy automated`, with the self-heal and prune it had",
            p.name
        ),
    }
}
