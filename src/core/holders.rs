//! Which other windows hold a GitOps owner (issue 21 item 2), read from their journals:
//! each that suspended it and has not restored it, and each that relies on its
//! suspension. An owner is restored only when none of them is under way. Pure.
//!
//! Layer 4 (journal, records and views): imports only from layers 0 to 4; see docs/architecture.md.

use crate::core::gitops::{OwnerRef, same_owner};
use crate::core::journal::{Journal, Phase};

/// Another window that holds an owner (issue 21 item 2).
#[derive(Clone, Debug, PartialEq)]
pub struct Holder {
    pub namespace: String,
    pub gateway: String,
    pub phase: Phase,
    /// It suspended the owner (and restores it); else it relies on the suspension.
    pub paused: bool,
    /// Finished, and its user vouched that the owner's merged source no longer defines
    /// what it replaced ([`crate::core::gitops::Record::vouched`]).
    pub vouched: bool,
}

impl Holder {
    /// Between its start and `done` / `rolled-back`.
    pub fn in_flight(&self) -> bool {
        !self.phase.finished()
    }

    /// It holds the owner now: it suspended it, or relies on it and is not finished.
    pub fn holds(&self) -> bool {
        self.paused || self.in_flight()
    }

    /// `the window of tenant/acme (journal phase deleting, relies on its suspension)`.
    pub fn display(&self) -> String {
        format!(
            "the window of {}/{} (journal phase {}, {})",
            self.namespace,
            self.gateway,
            self.phase.as_str(),
            if self.paused {
                "suspended it"
            } else {
                "relies on its suspension"
            }
        )
    }
}

/// The windows among `journals` other than `me` (`namespace`, `gateway`) that hold
/// `owner`: each that suspended it and has not restored it, and each that relies (or
/// relied) on its suspension. One that is not finished ([`Holder::in_flight`]) must
/// finish before the owner is restored; one that relied on it and is finished no longer
/// needs it, but what it replaced must not come back with the restore either.
pub fn holders(journals: &[Journal], owner: &OwnerRef, me: (&str, &str)) -> Vec<Holder> {
    let mut out = Vec::new();
    for j in journals {
        if (j.namespace.as_str(), j.gateway.as_str()) == me {
            continue;
        }
        for r in j.gitops.iter().filter(|r| same_owner(&r.owner, owner)) {
            if r.paused || r.relies_on_suspension() {
                out.push(Holder {
                    namespace: j.namespace.clone(),
                    gateway: j.gateway.clone(),
                    phase: j.phase,
                    paused: r.paused,
                    vouched: vouched(j, r),
                });
                break;
            }
        }
    }
    out.sort_by(|a, b| (&a.namespace, &a.gateway).cmp(&(&b.namespace, &b.gateway)));
    out
}

/// The window among `journals` that suspended `owner` and let go of it since (its policy
/// changed, re-enabled by someone else, re-created, gone; [`crate::core::gitops::Record::let_go`]),
/// said as `the window of NS/GW suspended it and let go of it (WHEN: WHY)`: who suspended
/// an owner no window holds any more, never "no vpnmig window suspended it" (a21h 03, 07;
/// a21i 01, 07, R07).
pub fn let_go_by(journals: &[Journal], owner: &OwnerRef) -> Option<String> {
    journals.iter().find_map(|j| {
        j.gitops
            .iter()
            .find(|r| same_owner(&r.owner, owner) && r.let_go.is_some())
            .map(|r| {
                format!(
                    "the window of {}/{} suspended it and let go of it ({})",
                    j.namespace,
                    j.gateway,
                    r.let_go.as_deref().unwrap_or_default()
                )
            })
    })
}

/// `X still relies on it: keep it suspended until its owner is restored too` (or the plural)
/// for the windows `still` that rely on a parent's suspension: one sentence for `status` and
/// the restore's note.
pub fn keep_for(still: &[String]) -> String {
    let one = still.len() == 1;
    format!(
        "{} still {} on it: keep it suspended until {} restored too",
        still.join(", "),
        if one { "relies" } else { "rely" },
        if one {
            "its owner is"
        } else {
            "their owners are"
        }
    )
}

/// What window `j`'s phase replaced: `IPsecGateway` at `done`, `VPNGateway` at
/// `rolled-back`; `None` for a window under way.
pub fn replaced_kind(j: &Journal) -> Option<&'static str> {
    match j.phase {
        Phase::Done => Some("IPsecGateway"),
        Phase::RolledBack => Some("VPNGateway"),
        _ => None,
    }
}

/// Whether `r` (a record of window `j`) holds a vouch for what `j` replaced as it is now:
/// finished, and vouched for that kind.
pub fn vouched(j: &Journal, r: &crate::core::gitops::Record) -> bool {
    replaced_kind(j).is_some_and(|k| r.vouched.as_ref().is_some_and(|v| v.no_longer_defines == k))
}

pub use crate::core::gitops::{CHAIN_LEVELS, PARENT_LEVELS};

/// Whether window `j` still relies on the suspension of the parent `p` (a record of
/// `j.gitops_parents`): while the owner at the bottom of its chain is held by the
/// window, i.e. the window suspended it and has not restored it, or relies on its
/// suspension and is not finished. Once that owner is restored (or the window finished
/// relying on another's suspension of it), the reliance ends: the parent may be resumed.
/// A parent of a parent (`parent_of` another record of `gitops_parents`) is relied on
/// while the record below it is (a21i 06, 09); a record a stop named but the window
/// never relied on (`relies` false) is not.
pub fn parent_relied_on(j: &Journal, p: &crate::core::gitops::Record) -> bool {
    p.relies && bottom_owner(j, p).is_some_and(|r| owner_held(j, r))
}

/// Whether the window holds owner record `r` so that a parent's suspension still counts:
/// it suspended it and has not restored it, or relies on its suspension and is not
/// finished.
fn owner_held(j: &Journal, r: &crate::core::gitops::Record) -> bool {
    r.restored_at.is_none() && (r.paused || (r.relies_on_suspension() && !j.phase.finished()))
}

/// The owner (a record of `j.gitops`) at the bottom of parent record `p`'s chain: its
/// `parent_of`, or, for a parent of a parent, an owner below the record it manages
/// (relied on or only named by a stop: a re-run carries both over), at most
/// [`CHAIN_LEVELS`] levels down ([`bottom_of`]). `None`: the chain ends in nothing the
/// window holds as an owner.
pub fn bottom_owner<'a>(
    j: &'a Journal,
    p: &crate::core::gitops::Record,
) -> Option<&'a crate::core::gitops::Record> {
    bottom_of(&j.gitops, &j.gitops_parents, p)
}

/// The owner among `owners` at the bottom of parent record `p`'s chain through the
/// parent records `parents`, level by level down from `p.parent_of` (every path, each
/// level once: a21m B03, B05: a member of a cycle above the owner was followed round the
/// cycle and back up to itself, never down the path to the owner, and so was "relied on
/// by no window" while the owner was held), at most [`CHAIN_LEVELS`] levels down. Of
/// several owners on the nearest level, one the window holds ([`owner_held`] as far as
/// the records say) first. A cycle of parents that manages no owner ends in `None`.
pub fn bottom_of<'a>(
    owners: &'a [crate::core::gitops::Record],
    parents: &[crate::core::gitops::Record],
    p: &crate::core::gitops::Record,
) -> Option<&'a crate::core::gitops::Record> {
    let start = p.parent_of.as_ref()?;
    let mut seen: Vec<&OwnerRef> = vec![start];
    let mut level: Vec<&OwnerRef> = vec![start];
    // Every level followed: a parent named past those read in full (a21k N07, a21l A03)
    // is recorded.
    for _ in 0..=CHAIN_LEVELS {
        let found: Vec<&crate::core::gitops::Record> = owners
            .iter()
            .filter(|r| level.iter().any(|c| same_owner(&r.owner, c)))
            .collect();
        if let Some(r) = found
            .iter()
            .find(|r| r.restored_at.is_none() && (r.paused || r.relies_on_suspension()))
            .or(found.first())
        {
            return Some(r);
        }
        let mut next: Vec<&OwnerRef> = Vec::new();
        for c in &level {
            for q in parents.iter().filter(|q| same_owner(&q.owner, c)) {
                if let Some(below) = q.parent_of.as_ref()
                    && !seen.iter().any(|o| same_owner(o, below))
                {
                    seen.push(below);
                    next.push(below);
                }
            }
        }
        if next.is_empty() {
            return None;
        }
        level = next;
    }
    None
}

/// [`needing`], each window said as `the window of NS/NAME (journal phase P)`: what a
/// note or `status` names beside a parent it keeps suspended for them.
pub fn needers(journals: &[Journal], parent: &OwnerRef, me: (&str, &str)) -> Vec<String> {
    needing(journals, parent, me)
        .iter()
        .map(|o| {
            format!(
                "the window of {}/{} (journal phase {})",
                o.namespace, o.gateway, o.phase
            )
        })
        .collect()
}

/// The windows among `journals` other than `me` (`namespace`, `gateway`) that need
/// `parent` kept suspended: each that relies on it ([`parent_relied_on`]), and each that
/// relies on a level it stands above, or holds an owner below it (a21m B07: a parent
/// whose stop a rolled-back window named stood above the parent the next window relied
/// on; "resume it yourself" was offered for it, and its resume re-armed both levels
/// below it and the owner). What stands below `parent` is read from every journal's
/// parent records (`parent_of`), level by level, each level once, at most
/// [`CHAIN_LEVELS`] levels down. Sorted, each window once.
pub fn needing<'a>(
    journals: &'a [Journal],
    parent: &OwnerRef,
    me: (&str, &str),
) -> Vec<&'a Journal> {
    let others: Vec<&Journal> = journals
        .iter()
        .filter(|j| (j.namespace.as_str(), j.gateway.as_str()) != me)
        .collect();
    let mut out: Vec<&Journal> = Vec::new();
    let mut seen: Vec<&OwnerRef> = vec![parent];
    let mut level: Vec<&OwnerRef> = vec![parent];
    for depth in 0..=CHAIN_LEVELS {
        for o in &others {
            let relies = level.iter().any(|x| {
                o.gitops_parents
                    .iter()
                    .any(|q| same_owner(&q.owner, x) && parent_relied_on(o, q))
                    // An owner below it that the window holds (never `parent` itself:
                    // an owner's own holders are said by [`holders`]).
                    || (depth > 0
                        && o.gitops
                            .iter()
                            .any(|r| same_owner(&r.owner, x) && owner_held(o, r)))
            });
            if relies && !out.iter().any(|k| std::ptr::eq(*k, *o)) {
                out.push(o);
            }
        }
        let mut next: Vec<&OwnerRef> = Vec::new();
        for x in &level {
            for q in journals
                .iter()
                .flat_map(|j| j.gitops_parents.iter())
                .filter(|q| same_owner(&q.owner, x))
            {
                if let Some(c) = q.parent_of.as_ref()
                    && !seen.iter().any(|o| same_owner(o, c))
                {
                    seen.push(c);
                    next.push(c);
                }
            }
        }
        if next.is_empty() {
            break;
        }
        level = next;
    }
    out.sort_by(|a, b| (&a.namespace, &a.gateway).cmp(&(&b.namespace, &b.gateway)));
    out
}

/// The parent records of `j` above `owner`, level by level (its parents first, then
/// theirs), relied on or not, at most [`CHAIN_LEVELS`] levels, each once.
pub fn parents_above<'a>(j: &'a Journal, owner: &OwnerRef) -> Vec<&'a crate::core::gitops::Record> {
    let mut out: Vec<&crate::core::gitops::Record> = Vec::new();
    let mut level: Vec<&OwnerRef> = vec![owner];
    for _ in 0..=CHAIN_LEVELS {
        let mut next = Vec::new();
        for c in &level {
            for p in j.gitops_parents.iter() {
                if p.parent_of.as_ref().is_some_and(|x| same_owner(x, c))
                    && !same_owner(&p.owner, owner)
                    && !out.iter().any(|q| std::ptr::eq(*q, p))
                {
                    out.push(p);
                    next.push(&p.owner);
                }
            }
        }
        if next.is_empty() {
            break;
        }
        level = next;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::gitops::{ARGO_APPLICATION, Mode, Record, Saved};
    use serde_json::json;

    fn owner(kind: &str) -> OwnerRef {
        assert_eq!(kind, "Application");
        OwnerRef {
            api_version: ARGO_APPLICATION.into(),
            kind: kind.into(),
            namespace: Some("argocd".into()),
            name: "werra".into(),
        }
    }

    fn window(gw: &str, phase: Phase, paused: bool, relies: bool) -> Journal {
        let mut j = Journal::from_bundle(
            &json!({"source": {"name": gw, "namespace": "kunde"}, "targets": {"gateway": {}, "peers": []}}),
            json!({"kind": "IPsecGateway", "metadata": {"name": gw}}),
            "2026-01-01T00:00:00Z",
            "me",
        );
        j.phase = phase;
        let mut o = owner("Application");
        if relies {
            // As a window found it: the namespace filled in.
            o.namespace = Some("argocd".into());
        }
        j.gitops.push(Record {
            mode: Mode::Pause,
            owner: o,
            evidence: Vec::new(),
            saved: (!relies).then(|| Saved {
                pointer: "/spec/syncPolicy/automated".into(),
                value: Some(json!({"prune": true})),
                set_since: None,
            }),
            paused,
            restored_at: None,
            relies,
            held_by: Vec::new(),
            protected: Vec::new(),
            uid: None,
            sync_unseen: None,
            let_go: None,
            vouched: None,
            parent_of: None,
            pausing: None,
            restoring: None,
            re_armed_at: None,
            last_sync: None,
            asked: None,
            syncs: Vec::new(),
        });
        j
    }

    /// Issue 21 item 2: one owner, several windows. Who holds it, seen from window `a`
    /// (the one that suspended it), and whether it may be restored now (no holder under
    /// way).
    #[test]
    fn an_owner_is_restored_only_when_no_window_on_it_is_under_way() {
        use crate::core::journal::Phase::*;
        type Row = (
            &'static str,
            Vec<(&'static str, Phase, bool, bool)>,
            Vec<&'static str>,
            bool,
        );
        let rows: Vec<Row> = vec![
            // what, windows (gateway, phase, paused, relies), holders seen by a, restorable
            ("one window", vec![("a", Done, true, false)], vec![], true),
            (
                "first done first: b deleting",
                vec![("a", Done, true, false), ("b", Deleting, false, true)],
                vec!["b"],
                false,
            ),
            (
                "first done first: b started, nothing deleted yet",
                vec![("a", Done, true, false), ("b", Started, false, true)],
                vec!["b"],
                false,
            ),
            (
                "second done first: a in flight, b done",
                vec![("a", Applied, true, false), ("b", Done, false, true)],
                vec!["b"],
                true,
            ),
            (
                "both done",
                vec![("a", Done, true, false), ("b", Done, false, true)],
                vec!["b"],
                true,
            ),
            (
                "three windows: c still applying",
                vec![
                    ("a", Done, true, false),
                    ("b", Done, false, true),
                    ("c", Applied, false, true),
                ],
                vec!["b", "c"],
                false,
            ),
            (
                "three windows: b rolling back",
                vec![
                    ("a", Done, true, false),
                    ("b", RollingBack, false, true),
                    ("c", Done, false, true),
                ],
                vec!["b", "c"],
                false,
            ),
            (
                "three windows, all done",
                vec![
                    ("a", Done, true, false),
                    ("b", Done, false, true),
                    ("c", RolledBack, false, true),
                ],
                vec!["b", "c"],
                true,
            ),
            (
                "a window of an earlier version: no relies, nothing saved",
                vec![("a", Done, true, false), ("b", Deleted, false, false)],
                vec!["b"],
                false,
            ),
        ];
        for (what, windows, holders_seen, restorable) in rows {
            let journals: Vec<_> = windows
                .iter()
                .map(|(gw, phase, paused, relies)| {
                    let mut j = window(gw, *phase, *paused, *relies);
                    if !*paused && !*relies {
                        // Earlier versions wrote no `relies` and no `saved` for an owner
                        // found suspended.
                        j.gitops[0].saved = None;
                    }
                    j
                })
                .collect();
            let h = holders(&journals, &owner("Application"), ("kunde", "a"));
            assert_eq!(
                h.iter().map(|h| h.gateway.as_str()).collect::<Vec<_>>(),
                holders_seen,
                "{what}"
            );
            assert_eq!(!h.iter().any(Holder::in_flight), restorable, "{what}");
        }
        // Seen from b (it relies): a holds it, whatever a's phase.
        let journals = vec![
            window("a", Done, true, false),
            window("b", Deleting, false, true),
        ];
        let h = holders(&journals, &owner("Application"), ("kunde", "b"));
        assert_eq!(h.len(), 1);
        assert!(h[0].paused && h[0].holds() && !h[0].in_flight());
        assert_eq!(
            h[0].display(),
            "the window of kunde/a (journal phase done, suspended it)"
        );
        // Another owner of the same name and kind elsewhere is not this one.
        let mut other = window("b", Deleting, false, true);
        other.gitops[0].owner.namespace = Some("argocd-2".into());
        assert!(holders(&[other], &owner("Application"), ("kunde", "a")).is_empty());
    }

    /// A chain of parents (a21i 06, 09): a parent of a parent is relied on while the
    /// owner at the bottom is held, never round a cycle, never past [`CHAIN_LEVELS`], and
    /// never for a record a stop named that the window did not rely on.
    #[test]
    fn a_parent_of_a_parent_is_relied_on_while_the_owner_below_is_held() {
        use crate::core::gitops::{Parent, Record};
        use crate::core::journal::Phase::*;
        let flux = |name: &str| OwnerRef {
            api_version: "kustomize.toolkit.fluxcd.io/v1".into(),
            kind: "Kustomization".into(),
            namespace: Some("flux-system".into()),
            name: name.into(),
        };
        let link = |parent: &str, child: &str, relies: bool| {
            let mut r = Record::of_parent(
                &Parent {
                    owner: flux(parent),
                    evidence: vec![],
                },
                &flux(child),
                None,
            );
            r.relies = relies;
            r
        };
        let with = |phase, paused: bool, links: Vec<Record>| {
            let mut j = window("a", phase, paused, !paused);
            j.gitops[0].owner = flux("apps");
            j.gitops_parents = links;
            j
        };
        type Row = (
            &'static str,
            Phase,
            bool,
            Vec<(&'static str, &'static str, bool)>,
            Vec<bool>,
        );
        let rows: Vec<Row> = vec![
            // what, phase, paused, links (parent, child, relies), relied on (each link)
            (
                "one level",
                Done,
                true,
                vec![("tenants", "apps", true)],
                vec![true],
            ),
            (
                "grandparent",
                Done,
                true,
                vec![("tenants", "apps", true), ("clusters", "tenants", true)],
                vec![true, true],
            ),
            (
                "great-grandparent",
                Deleting,
                true,
                vec![
                    ("tenants", "apps", true),
                    ("clusters", "tenants", true),
                    ("root", "clusters", true),
                ],
                vec![true, true, true],
            ),
            (
                "named by a stop only: neither it nor what is above it",
                Started,
                true,
                vec![("tenants", "apps", false), ("clusters", "tenants", false)],
                vec![false, false],
            ),
            (
                "a relier finished: the reliance ended at every level",
                Done,
                false,
                vec![("tenants", "apps", true), ("clusters", "tenants", true)],
                vec![false, false],
            ),
            (
                // a21m B03: kreis-a applies the owner and kreis-b, kreis-b applies
                // kreis-c, kreis-c applies kreis-a. Every member is relied on while the
                // owner is held, the one that closes the cycle too.
                "a 3-cycle above the owner: every member",
                Done,
                true,
                vec![
                    ("a", "apps", true),
                    ("c", "a", true),
                    ("b", "c", true),
                    ("a", "b", true),
                ],
                vec![true, true, true, true],
            ),
            (
                "a 4-cycle above the owner, recorded in another order",
                Deleting,
                true,
                vec![
                    ("b", "c", true),
                    ("a", "b", true),
                    ("d", "a", true),
                    ("a", "apps", true),
                    ("c", "d", true),
                ],
                vec![true, true, true, true, true],
            ),
            (
                "a 3-cycle a stop named only: none of it",
                Started,
                true,
                vec![
                    ("a", "apps", false),
                    ("c", "a", false),
                    ("b", "c", false),
                    ("a", "b", false),
                ],
                vec![false, false, false, false],
            ),
            (
                "a 3-cycle of a relier that finished: none of it",
                Done,
                false,
                vec![
                    ("a", "apps", true),
                    ("c", "a", true),
                    ("b", "c", true),
                    ("a", "b", true),
                ],
                vec![false, false, false, false],
            ),
            (
                "a cycle above the owner holds nothing",
                Done,
                true,
                vec![("x", "y", true), ("y", "x", true)],
                vec![false, false],
            ),
            (
                // Followed past the levels read in full by their markers, to the top
                // (a21l A03: level 10 put level 9 back), and no further than CHAIN_LEVELS.
                "a chain longer than CHAIN_LEVELS ends",
                Done,
                true,
                (1..=CHAIN_LEVELS + 2)
                    .map(|k| {
                        let name = |k: usize| -> &'static str {
                            if k == 0 {
                                "apps"
                            } else {
                                Box::leak(format!("l{k}").into_boxed_str())
                            }
                        };
                        (name(k), name(k - 1), true)
                    })
                    .collect(),
                (1..=CHAIN_LEVELS + 2)
                    .map(|k| k <= CHAIN_LEVELS + 1)
                    .collect(),
            ),
        ];
        for (what, phase, paused, links, relied) in rows {
            let j = with(
                phase,
                paused,
                links.iter().map(|(p, c, r)| link(p, c, *r)).collect(),
            );
            let seen: Vec<bool> = j
                .gitops_parents
                .iter()
                .map(|p| parent_relied_on(&j, p))
                .collect();
            assert_eq!(seen, relied, "{what}");
        }
        // Restored: nothing above it is relied on any more; all of it is above it.
        let mut j = with(
            Done,
            true,
            vec![
                link("tenants", "apps", true),
                link("clusters", "tenants", true),
            ],
        );
        let above: Vec<&str> = parents_above(&j, &flux("apps"))
            .iter()
            .map(|p| p.owner.name.as_str())
            .collect();
        assert_eq!(above, ["tenants", "clusters"]);
        j.gitops[0].restored_at = Some("2026-01-02T00:00:00Z".into());
        assert!(!j.gitops_parents.iter().any(|p| parent_relied_on(&j, p)));
        // Another owner's parents are not above this one.
        assert!(parents_above(&j, &flux("other")).is_empty());
        // A restored 3-cycle: no member relied on, every one of them above the owner.
        let mut j = with(
            Done,
            true,
            vec![
                link("a", "apps", true),
                link("c", "a", true),
                link("b", "c", true),
                link("a", "b", true),
            ],
        );
        let above: Vec<&str> = parents_above(&j, &flux("apps"))
            .iter()
            .map(|p| p.owner.name.as_str())
            .collect();
        assert_eq!(above, ["a", "c", "b", "a"]);
        j.gitops[0].restored_at = Some("2026-01-02T00:00:00Z".into());
        assert!(!j.gitops_parents.iter().any(|p| parent_relied_on(&j, p)));
    }

    /// a21m B07: the chain gipfel → hang → the owner. Window 1 (a stop named both, then a
    /// rollback that deleted nothing dropped its owner record) carries both levels over
    /// to window 2 by window 2's owners; and with window 2 relying on hang, gipfel is
    /// needed by window 2 wherever it is recorded, never "left" for a resume.
    #[test]
    fn a_level_above_a_relied_on_parent_is_needed_by_the_window_below() {
        use crate::core::gitops::{Parent, Record};
        use crate::core::journal::Phase::*;
        let flux = |name: &str| OwnerRef {
            api_version: "kustomize.toolkit.fluxcd.io/v1".into(),
            kind: "Kustomization".into(),
            namespace: Some("fx-berg".into()),
            name: name.into(),
        };
        let link = |parent: &str, child: &str, relies: bool| {
            let mut r = Record::of_parent(
                &Parent {
                    owner: flux(parent),
                    evidence: vec![],
                },
                &flux(child),
                None,
            );
            r.relies = relies;
            r
        };
        let named = vec![link("gipfel", "hang", false), link("hang", "tal", false)];
        // Window 1, rolled back at `started`: no owner record.
        let mut one = window("one", RolledBack, true, false);
        one.gitops.clear();
        one.gitops_parents = named.clone();
        // Window 2 holds tal (paused).
        let mut two = window("two", Done, true, false);
        two.gitops[0].owner = flux("tal");
        for p in &one.gitops_parents {
            assert!(bottom_owner(&one, p).is_none(), "window 1 holds no owner");
            assert_eq!(
                bottom_of(&two.gitops, &one.gitops_parents, p).map(|r| r.owner.name.as_str()),
                Some("tal"),
                "{} carried over by window 2's owner",
                p.owner.name
            );
        }
        // Window 2 relies on hang only (as the code before it recorded): gipfel stands
        // above it, so window 2 needs it; hang is needed by window 2 too.
        two.gitops_parents = vec![link("hang", "tal", true)];
        let journals = vec![one.clone(), two.clone()];
        for parent in ["gipfel", "hang"] {
            let who: Vec<&str> = needing(&journals, &flux(parent), ("kunde", "one"))
                .iter()
                .map(|j| j.gateway.as_str())
                .collect();
            assert_eq!(who, ["two"], "{parent}");
        }
        // Window 2 restored tal: nothing needs gipfel or hang any more.
        let mut restored = two.clone();
        restored.gitops[0].restored_at = Some("2026-01-02T00:00:00Z".into());
        restored.gitops[0].paused = false;
        let journals = vec![one.clone(), restored];
        assert!(needing(&journals, &flux("gipfel"), ("kunde", "one")).is_empty());
        // An owner held below it (no parent record in window 2 at all): needed too.
        let mut bare = two.clone();
        bare.gitops_parents.clear();
        let journals = vec![one.clone(), bare];
        let who: Vec<&str> = needing(&journals, &flux("gipfel"), ("kunde", "one"))
            .iter()
            .map(|j| j.gateway.as_str())
            .collect();
        assert_eq!(who, ["two"]);
        // The window itself is never its own needer.
        assert!(needing(&[two.clone()], &flux("gipfel"), ("kunde", "two")).is_empty());
    }
}
