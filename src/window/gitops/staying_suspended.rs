//! Checking the owners stay suspended through the window (after the pause and right
//! before the delete): each read back, and the stop that names what re-enabled one (a
//! parent, another controller, the field managers that wrote it) and where the window
//! stands.

use super::*;

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
        parents_held(w, verb).await?;
        let mut gone = Vec::new();
        for r in w.journal.gitops.iter().filter(holds) {
            let Found::One(owner, obj) = live::find(w.cluster, &r.owner).await? else {
                gone.push(r.owner.clone());
                continue;
            };
            let again = match gitops::held(r, &obj) {
                // Syncing, whoever armed it: the delete never follows.
                gitops::Held::ReEnabled { now }
                | gitops::Held::NotPaused { now, .. }
                | gitops::Held::Restoring { now, .. } => Some(now),
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
                    hint: Some(crate::window::error::hint!(
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
        if !gone.is_empty()
            && let Some(stop) = took_over(w, verb, &gone).await?
        {
            return Err(stop);
        }
        if started.elapsed() >= settle {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

/// The parents whose suspension the window relies on, read back like the owners (a21g
/// attack 16): one that would put an owner's policy back now stops the window before its
/// sync re-arms the owner (exit 7), naming the chain from its top-most level that acts.
/// Part of [`held`]; also read alone right before `done` (a21t T15: a parent resumed
/// during the tunnels' wait re-armed its child a moment after `done`, and the window ended
/// done and HEALTHY with the old gateway back).
pub(crate) async fn parents_held(w: &Window<'_>, verb: &str) -> Result<(), Error> {
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
            // The whole chain above the owner at its bottom, from the top-most level
            // that acts (a21j: the root re-armed the middle level, and a stop that
            // named the middle level alone was undone by the root).
            if let Some(bottom) = crate::core::holders::bottom_owner(&w.journal, pr)
                && let Found::One(o, bottom_obj) = live::find(w.cluster, &bottom.owner).await?
            {
                let links: Vec<gitops::Link> = live_chain(w.cluster, &w.journal, &o, &bottom_obj)
                    .await?
                    .into_iter()
                    .map(|(l, _)| l)
                    .collect();
                if gitops::acting_top_down(&links)
                    .first()
                    .is_some_and(|top| top.level > 1)
                {
                    return Err(chain_stop(w, verb, &o, &links, None));
                }
            }
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
                hint: Some(crate::window::error::hint!(
                    "{}, then `vpnmig {verb} {name} -n {ns} --gitops pause` again; {}",
                    parent_fix(&pr.owner),
                    way_back(w)
                )),
            });
        }
    }
    Ok(())
}

/// An owner the window holds is gone (`gone`, deleted since the pause), and another owner
/// that syncs automatically has put its markers on the window's PSK Secret: the owner was
/// renamed or replaced during the window (a21s S11a: the held Kustomization deleted, an
/// unsuspended copy on the same source created; the cutover applied, said done, and the
/// new owner re-created the old gateway within a second). The stop names the new owner,
/// its markers, and its suspension, before anything new is applied. `None`: no such
/// owner.
async fn took_over(
    w: &Window<'_>,
    verb: &str,
    gone: &[gitops::OwnerRef],
) -> Result<Option<Error>, Error> {
    let (name, ns) = (w.name(), w.ns());
    let secret = &w.journal.psk_secret;
    let Some(psk) = live::get_kept(w.cluster, "v1", "Secret", ns, secret).await? else {
        return Ok(None);
    };
    for m in gitops::detect(&psk) {
        let Some(o) = m.owner.filter(|_| m.tool.reconciles()) else {
            continue;
        };
        if w.journal
            .gitops
            .iter()
            .any(|r| gitops::same_owner(&r.owner, &o))
        {
            continue;
        }
        let Found::One(owner, obj) = live::find(w.cluster, &o).await? else {
            continue;
        };
        let st = gitops::owner_state(&obj, "", "", "");
        if !st.active {
            continue;
        }
        let gone: Vec<String> = gone.iter().map(gitops::OwnerRef::display).collect();
        return Ok(Some(Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "{} the window suspended {} gone (deleted since the window paused it), and {} syncs automatically ({}) and carries its markers on secret/{secret} -n {ns}, the window's PSK Secret ({}): it took over the source that defines the gateway, and no window holds it; {}",
                gone.join(", "),
                if gone.len() == 1 { "is" } else { "are" },
                owner.display(),
                how(&st),
                m.evidence.join(", "),
                where_it_stands(w)
            ),
            hint: Some(crate::window::error::hint!(
                "suspend it ({}), then `vpnmig {verb} {name} -n {ns}` goes on; vpnmig never resumes an owner no window suspended: resume it yourself once its source no longer defines ipsecgateway/{name} -n {ns}; {}",
                gitops::pause_command(&owner),
                way_back(w)
            )),
        }));
    }
    Ok(None)
}

/// Where a window stopped by an owner that syncs again stands: before the delete, or
/// after it with nothing new applied; a rollback before its deletes.
pub(super) fn where_it_stands(w: &Window<'_>) -> String {
    if w.journal.phase == Phase::RollingBack {
        return "the rollback sends no delete before the owners hold (journal phase rolling-back): the VPNGateway and VPNPeers still there are not deleted".into();
    }
    if w.journal.phase < Phase::Deleting {
        "no gateway was deleted".into()
    } else if applied(w) {
        // The parents are read again right before `done` (a21t T15): a stop there is
        // after the apply, and names what it applied (a21u U03: "nothing new was applied"
        // at phase ready, with the VPNGateway Ready and the tunnel up).
        format!(
            "the old gateway was deleted and this window applied {}, which are live (journal phase {}): its sync would re-create the IPsecGateway, which contests the floating IP with them; keep them and suspend it again, or roll back, which deletes them",
            applied_objects(w),
            w.journal.phase
        )
    } else {
        format!(
            "the old gateway was deleted and nothing new was applied (journal phase {}): its sync would re-create the IPsecGateway and take the floating IP",
            w.journal.phase
        )
    }
}

/// Whether the window's journal is past its apply (and not rolling back).
fn applied(w: &Window<'_>) -> bool {
    matches!(
        w.journal.phase,
        Phase::Applied | Phase::Attached | Phase::Ready | Phase::Done
    )
}

/// The objects the window applied, from its journal's targets: `VPNGateway acme, VPNPeer
/// acme`.
fn applied_objects(w: &Window<'_>) -> String {
    w.journal
        .targets
        .iter()
        .filter_map(|t| {
            Some(format!(
                "{} {}",
                t["kind"].as_str()?,
                t.pointer("/metadata/name")?.as_str()?
            ))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The way back for [`where_it_stands`].
pub(super) fn way_back(w: &Window<'_>) -> String {
    let (name, ns) = (w.name(), w.ns());
    if w.journal.phase == Phase::RollingBack {
        format!(
            "until then the rollback stays at journal phase rolling-back, and `vpnmig status -n {ns}` names {name} as under way"
        )
    } else if w.journal.phase < Phase::Deleting {
        crate::window::early::way_back_before_delete(name, ns)
    } else if applied(w) {
        format!(
            "`vpnmig rollback {name} -n {ns}` deletes {} and re-creates the IPsecGateway from the journal instead (suspend the owner first there too)",
            applied_objects(w)
        )
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
