//! A window on a gateway Argo CD or Flux syncs (issue 11 item 2): find the owner, suspend
//! it for the window (`--gitops pause`) or check the user did (`--gitops ignore`), and
//! restore it exactly at `done` / `rolled-back` — only when its source, as the cluster
//! shows it, defines what is live then, so a restored sync never re-creates the gateway
//! just replaced (and takes its floating IP back).
//!
//! Order (docs/gitops.md): the journal records each owner and the field `pause` changes
//! *before* the change; `paused` is set after the patch landed and cleared after the
//! restore landed, so an interrupted run never leaves an owner suspended without the
//! journal (and `status`) saying so.

use serde_json::Value;

use super::steps::{Window, now};
use super::{Emit, Event, Outcome};
use crate::cluster::gitops::{self as live, Found};
use crate::cluster::{Cluster, journal};
use crate::core::gitops::{self, Mode, Record};
use crate::core::holders;
use crate::core::journal::Phase;
use crate::core::model::object_ref;
use crate::error::Error;
use crate::exit;

/// What the user chose for a gateway Argo CD or Flux syncs (`--gitops`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GitopsOptions {
    /// `pause` or `ignore`; `None`: a synced gateway is refused.
    pub mode: Option<Mode>,
    /// `keep-tracking`: the new objects carry the old object's tracking metadata.
    pub keep_tracking: bool,
    /// `resume`: restore the owners although their status still lists the object
    /// replaced (Flux does not refresh a suspended Kustomization's inventory): the user
    /// says the repository change is merged.
    pub resume: bool,
}

/// The owners that sync the old gateway (`old`, as read) or its PSK Secret (`secret`),
/// found in the cluster and judged against `mode`, as journal records. Runs before any
/// change.
///
/// Errors (exit 7, refused, nothing changed): `pause` and an owner that cannot be found (the
/// markers name no object the cluster has, or several); `ignore` and an owner that
/// still syncs automatically.
pub async fn owners(
    cluster: &Cluster,
    ev: &dyn Emit,
    name: &str,
    old: &Value,
    secret: Option<&Value>,
    mode: Mode,
    inherited: &[Record],
) -> Result<Vec<Record>, Error> {
    let ns = cluster.namespace.as_str();
    let verb = if old["kind"] == "VPNGateway" {
        "rollback"
    } else {
        "cutover"
    };
    let mut out: Vec<Record> = Vec::new();
    for obj in std::iter::once(old).chain(secret) {
        for m in gitops::reconciling(&gitops::detect(obj)) {
            let what = object_ref(
                obj["kind"].as_str().unwrap_or_default(),
                obj["metadata"]["name"].as_str().unwrap_or_default(),
                ns,
            );
            let refuse = |message: String| Error::Stop {
                code: exit::REFUSED,
                message,
                hint: Some(format!(
                    "suspend its sync yourself and run `vpnmig {verb} {name} -n {ns} --gitops ignore`; docs/gitops.md says how for Argo CD and Flux"
                )),
            };
            let Some(wanted) = &m.owner else {
                if mode == Mode::Pause {
                    return Err(refuse(format!(
                        "{} syncs {what} ({}) but its markers name no owner object to suspend: nothing was changed",
                        m.tool.label(),
                        m.evidence.join(", ")
                    )));
                }
                continue;
            };
            let (owner, obj) = match live::find(cluster, wanted).await? {
                Found::One(o, v) => (o, v),
                Found::None if mode == Mode::Ignore => {
                    ev.emit(Event::Note(format!(
                        "{} names {} as the owner of {what}, and the cluster has none: nothing to watch but the objects themselves",
                        m.tool.label(),
                        wanted.display()
                    )));
                    continue;
                }
                Found::None => {
                    return Err(refuse(format!(
                        "{} names {} as the owner of {what} ({}), and the cluster has no such {}: vpnmig cannot suspend it; nothing was changed",
                        m.tool.label(),
                        wanted.display(),
                        m.evidence.join(", "),
                        wanted.kind
                    )));
                }
                Found::Many(all) => {
                    let kind = old["kind"].as_str().unwrap_or("IPsecGateway");
                    let active: Vec<String> = all
                        .iter()
                        .filter(|(_, o)| gitops::owner_state(o, kind, ns, name).active)
                        .map(|(o, _)| o.display())
                        .collect();
                    let namespaces: Vec<&str> = all
                        .iter()
                        .filter_map(|(o, _)| o.namespace.as_deref())
                        .collect();
                    // `ignore`: the user suspended it; with every one of that name
                    // suspended, whichever it is does not sync.
                    if mode == Mode::Ignore && active.is_empty() {
                        ev.emit(Event::Note(format!(
                            "{} names {} as the owner of {what}; {} {}s of that name exist (namespaces {}), every one suspended",
                            m.tool.label(),
                            wanted.display(),
                            all.len(),
                            wanted.kind,
                            namespaces.join(", ")
                        )));
                        continue;
                    }
                    return Err(refuse(format!(
                        "{} names {} as the owner of {what}, and {} {}s of that name exist (namespaces {}; syncing: {}): the markers do not say which, so vpnmig cannot suspend it; nothing was changed",
                        m.tool.label(),
                        wanted.display(),
                        all.len(),
                        wanted.kind,
                        namespaces.join(", "),
                        if active.is_empty() {
                            "none".to_string()
                        } else {
                            active.join(", ")
                        }
                    )));
                }
            };
            if out.iter().any(|r| r.owner == owner) {
                continue;
            }
            if let Some(r) = inherited.iter().find(|r| r.owner == owner) {
                ev.emit(Event::Note(format!(
                    "{} {} syncs {what}: suspended by an earlier run of this window (the journal records it); restored at the end",
                    m.tool.label(),
                    owner.display()
                )));
                out.push(r.clone());
                continue;
            }
            let kind = old["kind"].as_str().unwrap_or("IPsecGateway");
            let state = gitops::owner_state(&obj, kind, ns, name);
            if mode == Mode::Ignore && state.active {
                return Err(Error::Stop {
                    code: exit::REFUSED,
                    message: format!(
                        "--gitops ignore, but {} still syncs {what} automatically ({}): nothing was changed",
                        owner.display(),
                        how(&state)
                    ),
                    hint: Some(format!(
                        "suspend it first ({}), or let vpnmig do it: `vpnmig {verb} {name} -n {ns} --gitops pause`",
                        suspend_command(&owner)
                    )),
                });
            }
            // Suspended already (by another window, or by a person): this window relies
            // on that suspension, and its journal says so, so that no window restores
            // the owner while this one is under way (issue 21 item 2).
            let relies = !(mode == Mode::Pause && state.active);
            let held_by = if relies {
                holders_now(cluster, &owner, ns, name).await
            } else {
                Ok(Vec::new())
            };
            let reliance = reliance(&held_by);
            ev.emit(Event::Note(format!(
                "{} {} syncs {what} ({}; found by {}): {}",
                m.tool.label(),
                owner.display(),
                how(&state),
                m.evidence.join(", "),
                match (mode, state.active) {
                    (Mode::Pause, true) =>
                        "vpnmig suspends it for the window and restores it at the end".to_string(),
                    (Mode::Pause, false) => format!(
                        "it is suspended already ({reliance}): this window relies on that suspension; its journal records it, and no window restores the owner until this one is done"
                    ),
                    (Mode::Ignore, _) => format!(
                        "suspended by you ({reliance}): this window relies on that suspension (its journal records it) and stops if anything interferes"
                    ),
                }
            )));
            out.push(Record {
                mode,
                saved: (!relies).then(|| gitops::saved(&obj)),
                owner,
                evidence: m.evidence.clone(),
                paused: false,
                restored_at: None,
                relies,
                held_by: held_by
                    .unwrap_or_default()
                    .iter()
                    .filter(|h| h.holds())
                    .map(|h| format!("{}/{}", h.namespace, h.gateway))
                    .collect(),
                protected: Vec::new(),
                uid: obj
                    .pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                sync_unseen: None,
            });
        }
    }
    Ok(out)
}

use gitops::how;

/// The command that suspends an owner by hand.
fn suspend_command(owner: &gitops::OwnerRef) -> String {
    let ns = owner.namespace.as_deref().unwrap_or("argocd");
    if owner.kind == "Application" {
        format!(
            "`argocd app set {} --sync-policy none` or `kubectl patch application {} -n {ns} --type merge -p '{{\"spec\":{{\"syncPolicy\":{{\"automated\":null}}}}}}'`",
            owner.name, owner.name
        )
    } else {
        format!(
            "`flux suspend {} {} -n {ns}`",
            owner.kind.to_lowercase(),
            owner.name
        )
    }
}

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
        for r in w.journal.gitops.iter().filter(|r| r.restored_at.is_none()) {
            let Found::One(owner, obj) = live::find(w.cluster, &r.owner).await? else {
                continue;
            };
            for (p, parent) in live_parents(w.cluster, &obj).await? {
                let st = gitops::parent_state(&parent, &obj);
                if st.puts_back {
                    return Err(parent_stop(w, verb, &owner, &p, &st, None));
                }
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

/// How many times the first suspension is tried again after the owner changed between
/// the read and the patch (409), each time read again.
const PAUSE_TRIES: usize = 5;

/// The first suspension of owner record `i` by this window, as a compare-and-swap (a21d
/// attack 9: two windows of a wave, `--concurrency 2`, both found the owner syncing and
/// both recorded themselves as the one that suspended it). The owner is read again: one
/// suspended since (by another window, or a person) is relied on — the record loses
/// `saved`, says `relies` and who holds it, and this window never restores it. One still
/// syncing is recorded as suspended by this window (before the patch), then patched
/// with its `metadata.resourceVersion` as read: a write in between (another window's
/// suspension) is a 409, and the owner is read again. `Ok(true)`: this window suspended
/// it; `Ok(false)`: it relies on another's suspension.
async fn first_pause(w: &mut Window<'_>, i: usize, verb: &str) -> Result<bool, Error> {
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
const SETTLE_PAUSE: std::time::Duration = std::time::Duration::from_millis(1500);

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
fn where_it_stands(w: &Window<'_>) -> String {
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
fn way_back(w: &Window<'_>) -> String {
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
fn writers(obj: &Value) -> String {
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
fn parent_fix(p: &gitops::OwnerRef) -> String {
    match p.kind.as_str() {
        "ApplicationSet" => format!(
            "set `spec.syncPolicy.applicationsSync: create-only` on {} for the window (or have it ignore `/spec/syncPolicy` in `ignoreApplicationDifferences`)",
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
fn parent_stop(
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
                    suspend_command(&owner),
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
fn owner_shape(owner: &gitops::OwnerRef) -> Value {
    serde_json::json!({"kind": owner.kind})
}

/// Restore every owner this window suspended, once it is safe (issue 11 item 2, issue 21
/// items 1 and 2):
///
/// 1. no other window that suspended it or relies on its suspension is under way (any
///    phase before `done` / `rolled-back`): its gateway would come back mid-window;
/// 2. the PSK Secret exists (gone, the stop says it must be re-created with the client's
///    key, which vpnmig does not hold);
/// 3. its source (as the cluster shows it) no longer defines `replaced` (`IPsecGateway`
///    after a cutover, `VPNGateway` after a rollback), nor what the finished windows
///    that relied on it replaced. With `force` (`--gitops resume`) the user says the
///    repository is merged: this one check is skipped, no other;
/// 4. its first sync cannot prune or change what those windows keep (their PSK Secrets,
///    the new objects, the old gateway after a rollback, and what their ownerReferences
///    name, transitively): Argo CD's entry for each must read `Synced` (an `OutOfSync`,
///    `Unknown` or missing entry, or an `ignoreDifferences` rule hiding a difference,
///    keeps it suspended); every other Application whose markers are on one is checked
///    the same; what its status shows gone from the source keeps it suspended; what the
///    cluster cannot show (a suspended Kustomization's inventory is never refreshed; a
///    HelmRelease has none) gets the prune protection its controller honours, recorded
///    in the journal before it is set and read back after.
///
/// What is not restored is said, with the command. Returns how many owners are still
/// suspended by the window.
pub(crate) async fn restore(
    w: &mut Window<'_>,
    replaced: &str,
    force: bool,
) -> Result<usize, Error> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let verb = if replaced == "IPsecGateway" {
        "cutover"
    } else {
        "rollback"
    };
    let mut left = 0;
    for i in 0..w.journal.gitops.len() {
        let r = w.journal.gitops[i].clone();
        let Some(saved) = r.saved.as_ref().filter(|_| r.paused) else {
            continue;
        };
        let mut live_owner = match live::find(w.cluster, &r.owner).await? {
            Found::One(_, obj) => Some(obj),
            // Gone (deleted since, attack 9): nothing to restore, nothing to protect
            // from its prune; the journal lets go of it, and every command says so.
            Found::None if r.owner.namespace.is_some() => {
                w.journal.gitops[i].paused = false;
                w.journal.gitops[i].restored_at = Some(now());
                journal::write(w.cluster, &w.journal, false).await?;
                w.ev.emit(Event::Warning(format!(
                    "{} is gone (the cluster has no {} {} in namespace {}): nothing to restore; the journal no longer holds it. Whatever syncs the objects now is someone else's (`vpnmig status -n {ns} -o wide` shows MANAGED-BY)",
                    r.owner.display(),
                    r.owner.kind,
                    r.owner.name,
                    r.owner.namespace.as_deref().unwrap_or_default()
                )));
                continue;
            }
            _ => None,
        };
        // A policy someone set since the pause is theirs: never overwritten; the journal
        // no longer holds the owner (issue 21 item 4).
        if let Some(now) = live_owner.as_ref() {
            let changed = match gitops::held(&r, now) {
                gitops::Held::AsLeft => None,
                gitops::Held::ReEnabled { now } => Some(("re-enabled by someone else", now)),
                gitops::Held::Changed { now } => {
                    Some(("its policy changed since the window paused it", now))
                }
                gitops::Held::Replaced { uid, now, .. } => Some((
                    "it is not the object the window paused: deleted and re-created since",
                    format!(
                        "uid {uid}, the journal's {}; {now}",
                        r.uid.as_deref().unwrap_or("?")
                    ),
                )),
            };
            // Re-enabled while its source (as the cluster shows it) still defines the
            // replaced gateway, or may: its next sync re-creates it beside the new one.
            // Not green, and the journal keeps holding the owner, so that `status` and a
            // re-run say so until it is suspended again or the repository is merged
            // (`--gitops resume`: the user says it is).
            if let gitops::Held::ReEnabled { now: seen } = gitops::held(&r, now)
                && !force
                && gitops::owner_state(now, replaced, &ns, &name).source_lists != Some(false)
            {
                return Err(reenabled_stop(w, &r.owner, now, replaced, &seen).await);
            }
            if let Some((what, now)) = changed {
                w.journal.gitops[i].paused = false;
                journal::write(w.cluster, &w.journal, false).await?;
                w.ev.emit(Event::Warning(format!(
                    "{} is not restored: {what} (live: {now}); vpnmig leaves its policy as it is, and the journal no longer holds it",
                    r.owner.display()
                )));
                continue;
            }
        }
        // 1. The other windows on this owner, wherever their gateways are.
        let journals = match journals_for(w.cluster, live_owner.as_ref(), (&ns, &name)).await {
            Ok(j) => j,
            Err(why) => {
                left += 1;
                w.ev.emit(Event::Warning(format!(
                    "{} stays suspended: whether another window relies on its suspension cannot be read ({why}). Check by hand (`kubectl get configmaps -A -l app.kubernetes.io/managed-by=vpnmig -o yaml`: a journal whose gitops record names {} and whose phase is neither done nor rolled-back relies on it), then `vpnmig {verb} {name} -n {ns}` with a context that can list them (no restore by hand is offered: it would protect this window's PSK Secret only, not those of the windows it cannot see)",
                    r.owner.display(),
                    r.owner.display()
                )));
                continue;
            }
        };
        let others = holders::holders(&journals, &r.owner, (&ns, &name));
        let busy: Vec<String> = others
            .iter()
            .filter(|h| h.in_flight())
            .map(holders::Holder::display)
            .collect();
        if !busy.is_empty() {
            left += 1;
            w.ev.emit(Event::Warning(format!(
                "{} stays suspended: {} {} under way, and restoring its sync now would re-create what that window replaces (and take its floating IP). When every one of them is done, `vpnmig {verb} {name} -n {ns}` restores it{}",
                r.owner.display(),
                busy.join("; "),
                if busy.len() == 1 { "is" } else { "are" },
                if force {
                    " (`--gitops resume` does not override another window)"
                } else {
                    ""
                }
            )));
            continue;
        }
        // 2. A PSK Secret that is gone is not something a restore (or a repository
        // change) brings back with the client's key.
        let Some(secret) =
            crate::cluster::objects::secret(w.cluster, &w.journal.psk_secret).await?
        else {
            return Err(psk_gone_stop(&w.journal, &r.owner));
        };
        // It still holds the key the journal fingerprinted; what it holds now is what the
        // first sync is held to (attack finding 1: the sync wrote Git's stale copy).
        if let Err(e) = super::steps::psk_unchanged(w.ev, &w.journal, &secret) {
            // Kind D: another Application that syncs the Secret automatically wrote it;
            // "put the key back, run again" would be undone by its self-heal at once.
            return Err(other_writer_stop(w.cluster, &r.owner, &secret, e).await);
        }
        let psk_before = psk_seen(&w.journal, &secret);
        // Argo CD: only a comparison made now proves what its sync would do; one from
        // before may predate the repository's head (a21d attack 10). vpnmig asks for a
        // refresh and reads the comparison it writes; without one, checks 3 and 4 may still
        // refuse on what they see, but they never restore on it.
        let mut stale = None;
        if r.owner.kind == "Application"
            && let Some(o) = live_owner.as_ref()
        {
            match refreshed(w.cluster, &r.owner, o).await? {
                Ok(fresh) => live_owner = Some(fresh),
                Err(why) => stale = Some(why),
            }
        }
        // The windows whose objects the restored sync must leave as they are: this one,
        // and the finished ones that relied on the suspension.
        let mut windows: Vec<(crate::core::journal::Journal, &str)> =
            vec![(w.journal.clone(), replaced)];
        for h in &others {
            if let Some(j) = journals
                .iter()
                .find(|j| j.namespace == h.namespace && j.gateway == h.gateway)
            {
                let kind = if j.phase == crate::core::journal::Phase::Done {
                    "IPsecGateway"
                } else {
                    "VPNGateway"
                };
                windows.push((j.clone(), kind));
            }
        }
        // A HelmRelease that tracks a window's PSK Secret: its upgrade writes the chart's
        // copy over the live Secret, no annotation on a live object stops that, and the
        // cluster cannot show what the chart renders. Refused, plain or forced: the
        // user checks the chart by hand and resumes it by hand (issue 21 item 1, round 4;
        // attack 5: the chart held a stale key).
        if r.owner.kind == "HelmRelease" {
            let mut tracked = None;
            for (j, _) in &windows {
                let sec =
                    live::get_kept(w.cluster, "v1", "Secret", &j.namespace, &j.psk_secret).await?;
                if sec.as_ref().is_some_and(|s| gitops::tracks(&r.owner, s)) {
                    tracked = Some(j.clone());
                    break;
                }
            }
            if let Some(j) = tracked {
                left += 1;
                w.ev.emit(Event::Warning(format!(
                    "{} stays suspended: {}",
                    r.owner.display(),
                    helm_psk_refusal(&r.owner, &j, verb, &name, &ns)
                )));
                continue;
            }
        }
        // 3. Safe only when its source no longer defines what the windows replaced.
        // Whether the rest of the source matches what the window made live is check 4's
        // (Argo CD: each kept object's entry, once it carries the owner's markers); the
        // first sync after the restore is watched all the same (`settle`). `--gitops resume`
        // vouches for this window's repository change only: what another window that
        // relied on the suspension replaced is checked all the same (attack finding A2).
        // Every window's, not only the first: advice for this window's own change alone
        // (`--gitops resume`, a restore by hand) would re-create another's gateway.
        let mut blocks = Vec::new();
        for (j, kind) in &windows {
            let mine = (j.namespace.as_str(), j.gateway.as_str()) == (ns.as_str(), name.as_str());
            if mine && force {
                continue;
            }
            let lists = live_owner
                .as_ref()
                .and_then(|o| gitops::owner_state(o, kind, &j.namespace, &j.gateway).source_lists);
            let whose = if mine {
                String::new()
            } else {
                format!(
                    " (replaced by the window of {}/{}, which relied on its suspension)",
                    j.namespace, j.gateway
                )
            };
            let what = object_ref(kind, &j.gateway, &j.namespace);
            let text = match lists {
                Some(false) => continue,
                Some(true) => format!(
                    "its source still defines {what}{whose} (status of {})",
                    r.owner.display()
                ),
                None => format!(
                    "the cluster does not show whether its source still defines {what}{whose} ({})",
                    live_owner
                        .as_ref()
                        .and_then(gitops::status_blind)
                        .unwrap_or_else(|| "the owner could not be read".into())
                ),
            };
            blocks.push((text, j.clone(), *kind, mine, lists.is_none()));
        }
        if let Some((why, j, kind, mine, blind)) = blocks.first().cloned() {
            let others: Vec<String> = blocks.iter().skip(1).map(|b| b.0.clone()).collect();
            left += 1;
            let (gw, gw_ns) = (&j.gateway, &j.namespace);
            let change = if kind == "IPsecGateway" {
                format!(
                    "Merge the repository change of {gw_ns}/{gw} (`vpnmig plan {gw} -n {gw_ns} --gitops-repo DIR` writes it)"
                )
            } else {
                format!("Revert the repository change of {gw_ns}/{gw}")
            };
            let then = if mine && others.is_empty() && blind {
                // A status that cannot tell never will by waiting (a suspended
                // Kustomization's inventory is not refreshed): the user checks the merged
                // source by hand and says so (attack findings 2, 11, 12).
                format!(
                    "then check by hand that the merged source no longer defines it ({}), and only then `vpnmig {verb} {name} -n {ns} --gitops resume` restores it (it vouches for this window's change, and protects from prune what the window keeps first; no restore by hand is offered: it would skip that)",
                    gitops::render_hint(&r.owner)
                )
            } else if mine && others.is_empty() {
                // No restore by hand here: it would skip what `vpnmig` checks first (check
                // 4: what the windows keep, as the owner's status shows it; a21d attacks
                // 8 and 16).
                format!(
                    "then `vpnmig {verb} {name} -n {ns}` restores it once the owner's status no longer lists it (`--gitops resume`: whatever the status says), after checking what the windows keep"
                )
            } else if mine {
                format!(
                    "and {}: no restore is safe before each of them is in the repository too, neither `--gitops resume` (it vouches for this window's change only) nor one by hand; then `vpnmig {verb} {name} -n {ns}` restores it once the owner's status lists none of them",
                    others.join("; and ")
                )
            } else if r.owner.kind == "Application" && !blind {
                format!(
                    "then `vpnmig {verb} {name} -n {ns}` restores it once the owner's status no longer lists it (`--gitops resume` vouches for this window's change only, not for what another window replaced)"
                )
            } else {
                format!(
                    "then check by hand that the merged source no longer defines it ({}); the window that suspended it restores it (`vpnmig status -n {ns}` names it; its `--gitops resume` vouches for its own change only); no restore by hand is offered: it would skip the prune protections a restore sets first",
                    gitops::render_hint(&r.owner),
                )
            };
            w.ev.emit(Event::Warning(format!(
                "{} stays suspended: {why}, and restoring its sync now would re-create it (and take the floating IP). {change}, {then}",
                r.owner.display(),
            )));
            continue;
        }
        // 4. What the windows keep, and nothing added on their gateways.
        let mut refused = None;
        for (j, kind) in &windows {
            match keep(w, i, j, kind, live_owner.as_ref()).await? {
                Ok(()) => {}
                Err(why) => {
                    refused = Some(why);
                    break;
                }
            }
            if *kind == "IPsecGateway"
                && let Some(o) = live_owner.as_ref()
                && let Some(why) = extra_in_source(w.cluster, &r.owner, o, j, verb).await?
            {
                refused = Some(why);
                break;
            }
        }
        if let Some((why, todo)) = refused {
            left += 1;
            w.ev.emit(Event::Warning(format!(
                "{} stays suspended: {why}. {todo}",
                r.owner.display()
            )));
            continue;
        }
        if let Some(why) = stale {
            left += 1;
            w.ev.emit(Event::Warning(format!(
                "{} stays suspended: {why}; a comparison from before may predate the repository's head, and only one made now proves that its sync leaves what the windows keep as it is. Refresh it: `argocd app get {} --refresh` (or `kubectl annotate application {} -n {} {}=normal --overwrite`), then `vpnmig {verb} {name} -n {ns}`",
                r.owner.display(),
                r.owner.name,
                r.owner.name,
                r.owner.namespace.as_deref().unwrap_or("argocd"),
                gitops::ARGO_REFRESH
            )));
            continue;
        }
        let restored = live::patch(w.cluster, &r.owner, &gitops::restore_patch(saved)).await?;
        // What its status shows now: "synced" is said only from a status written after
        // this (a21d attack 10). Argo CD is asked for a refresh, which its controller
        // takes off once the comparison is written.
        let mut since = gitops::status_mark(&restored);
        if r.owner.kind == "Application"
            && !since.refresh_asked
            && live::patch(w.cluster, &r.owner, &refresh_patch())
                .await
                .is_ok()
        {
            since.refresh_asked = true;
        }
        w.ev.emit(Event::Step(format!(
            "restored {} ({} as before the window); watching its first sync",
            r.owner.display(),
            saved.pointer.trim_start_matches('/').replace('/', ".")
        )));
        // Its first sync is watched, and the journal says restored only once it passed:
        // a run killed meanwhile leaves the owner listed as suspended, and the next run
        // restores and watches again. If the sync re-creates the replaced gateway,
        // changes or deletes what the window made live, or deletes the PSK Secret, the
        // owner is suspended again at once.
        let settled = settle(w, &r.owner, replaced, &windows[1..], &psk_before, &since).await;
        if let Err(e) = &settled {
            let _ = live::patch(
                w.cluster,
                &r.owner,
                &gitops::pause_patch(&owner_shape(&r.owner)),
            )
            .await;
            if crate::cluster::objects::secret(w.cluster, &w.journal.psk_secret)
                .await
                .is_ok_and(|s| s.is_none())
            {
                let Error::Stop { message, hint, .. } = psk_gone_stop(&w.journal, &r.owner) else {
                    unreachable!("psk_gone_stop is a stop")
                };
                return Err(Error::Stop {
                    code: exit::VERIFY_FAILED,
                    message: format!(
                        "{} was restored and its sync interfered, so vpnmig suspended it again: {message}",
                        r.owner.display()
                    ),
                    hint,
                });
            }
            // What its sync changed of the window's objects is put back at once, as the
            // window made them live, before the floating IP is lost for good (issue 21
            // item 1, round 4: attacks 3, 12, 13).
            // The same put-back after a rollback: the IPsecGateway it re-created, from
            // the journal's saved manifest (a21d attack 14).
            if let Some(stop) = put_back(w, &r.owner, replaced).await? {
                return Err(stop);
            }
            return Err(Error::Stop {
                code: exit::VERIFY_FAILED,
                message: format!(
                    "{} was restored and its sync interfered, so vpnmig suspended it again: {}",
                    r.owner.display(),
                    crate::error::error_line(e)
                ),
                hint: Some(format!(
                    "{}its source is not what the windows made live: fix the repository, check the gateway (`vpnmig verify {name} -n {ns}`), then `vpnmig {verb} {name} -n {ns}{}` restores it again",
                    match e {
                        Error::Stop { hint: Some(h), .. } => format!("{h}; "),
                        _ => String::new(),
                    },
                    // A suspended Flux owner's status never shows the merge: the plain
                    // restore would only refuse again (attack 1's loop).
                    if r.owner.kind == "Application" {
                        ""
                    } else {
                        " --gitops resume"
                    }
                )),
            });
        }
        // Its first sync not seen within the watch (Flux `dependsOn`, a retry interval, a
        // slow source): a sync that lands later is one nothing watches, and nothing would
        // put back what it changes (a21d attack 7: a floating IP moved a few seconds
        // after the watch). Not left re-armed: suspended again, as the window paused it
        // (the journal still says paused, and now why), and said, with what to check.
        if !matches!(settled, Ok(true)) {
            let why = match live::find(w.cluster, &r.owner).await? {
                Found::One(_, o) => unseen_why(&o),
                _ => "it could not be read".to_string(),
            };
            live::patch(
                w.cluster,
                &r.owner,
                &gitops::pause_patch(&owner_shape(&r.owner)),
            )
            .await?;
            w.journal.gitops[i].sync_unseen = Some(format!("{}: {why}", now()));
            journal::write(w.cluster, &w.journal, false).await?;
            // A sync that landed between the watch's last look and the suspension.
            if let Some(stop) = put_back(w, &r.owner, replaced).await? {
                return Err(stop);
            }
            left += 1;
            w.ev.emit(Event::Warning(format!(
                "{} stays suspended: restored, but its status did not say it synced within {}s ({why}); a later sync would be one nothing watches, and nothing would put back what it changes, so vpnmig suspended it again (the journal holds it, as the window paused it). What the windows made live is as it was. {}",
                r.owner.display(),
                SETTLE.as_secs(),
                unseen_todo(&r.owner, verb, &name, &ns)
            )));
            continue;
        }
        w.journal.gitops[i].paused = false;
        w.journal.gitops[i].restored_at = Some(now());
        w.journal.gitops[i].sync_unseen = None;
        journal::write(w.cluster, &w.journal, false).await?;
        w.ev.emit(Event::Step(format!(
            "{} synced: what the window made live is as it was",
            r.owner.display()
        )));
    }
    // The owners this window relied on: who restores them (issue 21 item 2).
    for r in w.journal.gitops.clone() {
        if r.paused || !r.relies_on_suspension() {
            continue;
        }
        let Ok(journals) = journals_for(w.cluster, None, (&ns, &name)).await else {
            continue;
        };
        let pausers: Vec<holders::Holder> = holders::holders(&journals, &r.owner, (&ns, &name))
            .into_iter()
            .filter(|h| h.paused)
            .collect();
        w.ev.emit(Event::Info(match pausers.first() {
            Some(h) => format!(
                "{} stays suspended: {}; that window restores it: `vpnmig {} {} -n {}`",
                r.owner.display(),
                h.display(),
                if h.phase.rolling_back() || h.phase == crate::core::journal::Phase::RolledBack {
                    "rollback"
                } else {
                    "cutover"
                },
                h.gateway,
                h.namespace
            ),
            None => {
                // Suspended by a person (`--gitops ignore`, attack 14): nobody's restore
                // checks it, so the window sets the protections a restore would, and
                // says what to check before the resume by hand.
                let Some(i) = w.journal.gitops.iter().position(|x| x.owner == r.owner) else {
                    continue;
                };
                let kept = self_suspended(w, i, replaced).await?;
                format!(
                    "{} stays suspended: no vpnmig window suspended it (it was suspended before this window), so vpnmig does not resume it; {kept}. {} (docs/gitops.md, \"An owner you suspended yourself\")",
                    r.owner.display(),
                    resume_by_hand(&r.owner, replaced, &w.journal)
                )
            }
        }));
    }
    Ok(left)
}

/// Why a restored owner's status did not say it synced (its own words: a Flux `Ready`
/// condition, Argo CD's sync status), for [`restore`] and the journal.
fn unseen_why(owner: &Value) -> String {
    let ready = owner
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"));
    if let Some(c) = ready {
        return format!(
            "its Ready condition {} {}{}",
            c["status"].as_str().unwrap_or("?"),
            c["reason"].as_str().unwrap_or_default(),
            c["message"]
                .as_str()
                .filter(|m| !m.is_empty())
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        );
    }
    if let Some(st) = owner.pointer("/status/sync/status").and_then(Value::as_str) {
        return format!("its sync status {st}");
    }
    gitops::status_blind(owner).unwrap_or_else(|| "its status says nothing of a sync".into())
}

/// What to do about an owner whose first sync the restore did not see (the same words in
/// `status`): find why it does not sync, then restore it again with vpnmig, which watches
/// the sync (a resume by hand would skip the protections and the watch: a21e attack 15).
pub(crate) fn unseen_todo(owner: &gitops::OwnerRef, verb: &str, name: &str, ns: &str) -> String {
    let ons = owner.namespace.as_deref().unwrap_or("argocd");
    let resume = if owner.kind == "Application" {
        ""
    } else {
        " --gitops resume"
    };
    format!(
        "Find why it does not sync (`kubectl get {} {} -n {ons} -o yaml`: its Ready condition, its dependsOn, its source's Ready), then `vpnmig {verb} {name} -n {ns}{resume}` restores it and watches its first sync again, after protecting from prune what the window keeps (no resume by hand is offered: nothing would protect or watch)",
        owner.resource(),
        owner.name,
    )
}

/// How long a put-back waits for the floating IP to be on the new gateway again.
const PUT_BACK_FIP: std::time::Duration = std::time::Duration::from_secs(120);

/// After a restored owner's first sync changed a pinned field of what the window keeps
/// (the owner is suspended again already): apply each changed object again as the window
/// made it live (server-side apply, field manager vpnmig, force), wait for the floating
/// IP to be on the gateway again (bounded), and return the stop that names each field put
/// back (seen, wanted, writer) and the repository fix. What the window keeps follows
/// `replaced`: after a cutover (`IPsecGateway`) the new objects as applied, after a
/// rollback (`VPNGateway`) the IPsecGateway it re-created from the journal's saved
/// manifest — one put-back for both paths (a21d attack 14). `None`: no field differs (the
/// interference was something else: a deletion, the old gateway back).
async fn put_back(
    w: &Window<'_>,
    owner: &gitops::OwnerRef,
    replaced: &str,
) -> Result<Option<Error>, Error> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let (kept, gateway_kind, verb) = if replaced == "IPsecGateway" {
        (w.journal.targets.clone(), "VPNGateway", "cutover")
    } else {
        (
            vec![w.journal.old_manifest.clone()],
            "IPsecGateway",
            "rollback",
        )
    };
    let mut fixed = Vec::new();
    for t in &kept {
        let kind = t["kind"].as_str().unwrap_or_default();
        let tname = t["metadata"]["name"].as_str().unwrap_or_default();
        let Some(live) = crate::cluster::objects::get(w.cluster, kind, tname).await? else {
            continue;
        };
        if live.pointer("/metadata/deletionTimestamp").is_some() {
            continue;
        }
        let diffs = gitops::spec_differences(t, &live);
        if diffs.is_empty() {
            continue;
        }
        let writer = gitops::writer(&live).unwrap_or_else(|| gitops::who(&live));
        let mut obj = t.clone();
        if let Some(m) = obj.as_object_mut() {
            m.remove("status");
            if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.retain(|k, _| {
                    matches!(k.as_str(), "name" | "namespace" | "labels" | "annotations")
                });
            }
        }
        crate::cluster::objects::apply_forced(w.cluster, &obj).await?;
        let what = object_ref(kind, tname, &ns);
        let fields: Vec<String> = diffs
            .iter()
            .map(|(path, want, seen)| {
                format!("{path}: seen {seen}, wanted {want} (written by {writer})")
            })
            .collect();
        w.ev.emit(Event::Step(format!(
            "put back {what} as the window made it live (server-side apply, field manager vpnmig, force): {}",
            fields.join("; ")
        )));
        fixed.push(format!("{what} {}", fields.join("; ")));
    }
    if fixed.is_empty() {
        return Ok(None);
    }
    // The floating IP back on the new gateway: the operator re-attaches it (bounded).
    let fip = w.journal.floating_ip.clone();
    let title = format!(
        "floating IP {fip} back on {}/{name} -n {ns}",
        gateway_kind.to_lowercase()
    );
    w.ev.emit(Event::WaitStarted {
        title: title.clone(),
    });
    let started = std::time::Instant::now();
    let mut last = String::new();
    let back = loop {
        let gw = crate::cluster::objects::get(w.cluster, gateway_kind, &name).await?;
        let seen = gw
            .as_ref()
            .and_then(|g| g.pointer("/status/floatingIP"))
            .and_then(Value::as_str)
            .unwrap_or("none")
            .to_string();
        if seen == fip {
            w.ev.emit(Event::WaitFinished {
                title: title.clone(),
                elapsed: started.elapsed(),
                result: Ok(format!("status.floatingIP {fip}")),
            });
            break true;
        }
        let now = format!("status.floatingIP {seen}");
        if now != last {
            w.ev.emit(Event::Waiting {
                title: title.clone(),
                elapsed: started.elapsed(),
                seen: now.clone(),
            });
            last = now;
        }
        if started.elapsed() >= PUT_BACK_FIP {
            w.ev.emit(Event::WaitFinished {
                title: title.clone(),
                elapsed: started.elapsed(),
                result: Err(format!("{last} after {}s", PUT_BACK_FIP.as_secs())),
            });
            break false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    };
    let check = match owner.kind.as_str() {
        "Application" => format!("`argocd app diff {}`", owner.name),
        "HelmRelease" => gitops::render_hint(owner),
        _ => format!(
            "`flux diff kustomization {} -n {} --path DIR` on a checkout of the merged repository",
            owner.name,
            owner.namespace.as_deref().unwrap_or_default()
        ),
    };
    let again = if owner.kind == "Application" {
        format!("`vpnmig {verb} {name} -n {ns}`")
    } else {
        format!("`vpnmig {verb} {name} -n {ns} --gitops resume`")
    };
    let source_fix = if verb == "cutover" {
        format!(
            "`vpnmig plan {name} -n {ns} --gitops-repo DIR` writes the objects as the window made them live"
        )
    } else {
        format!(
            "the reverted repository must define ipsecgateway/{name} -n {ns} as the journal saved it, each pinned value as `vpnmig verify {name} -n {ns}` names it"
        )
    };
    Ok(Some(Error::Stop {
        code: exit::VERIFY_FAILED,
        message: format!(
            "{} was restored and its first sync changed what the window made live, so vpnmig suspended it again and put back {}; the floating IP {fip} {}",
            owner.display(),
            fixed.join("; and "),
            if back {
                format!("is on the {gateway_kind} again")
            } else {
                format!(
                    "is not back on the {gateway_kind} within {}s ({last}): check it at once (`vpnmig verify {name} -n {ns}`)",
                    PUT_BACK_FIP.as_secs()
                )
            }
        ),
        hint: Some(format!(
            "fix the repository: its merged source must define each field above as wanted ({source_fix}; {check} shows what it would still change), then {again} restores it; `vpnmig verify {name} -n {ns}` checks the gateway"
        )),
    }))
}

/// For an owner this window relied on and no vpnmig window suspended (`--gitops ignore`:
/// the user did): the protections a restore sets on what the window keeps, recorded,
/// read back and said (issue 21 item 1, round 4; attack 14). Returns what was done.
async fn self_suspended(w: &mut Window<'_>, i: usize, replaced: &str) -> Result<String, Error> {
    let owner = w.journal.gitops[i].owner.clone();
    let live_owner = match live::find(w.cluster, &owner).await? {
        Found::One(_, o) => Some(o),
        _ => None,
    };
    let j = w.journal.clone();
    if owner.kind == "HelmRelease" {
        let sec = live::get_kept(w.cluster, "v1", "Secret", &j.namespace, &j.psk_secret).await?;
        if sec.as_ref().is_some_and(|s| gitops::tracks(&owner, s)) {
            return Ok(format!(
                "it tracks secret/{} -n {} (the PSK), and no annotation on a live object keeps helm-controller's upgrade from writing the chart's copy over it",
                j.psk_secret, j.namespace
            ));
        }
    }
    let before = w.journal.gitops[i].protected.len();
    Ok(match keep(w, i, &j, replaced, live_owner.as_ref()).await? {
        Ok(()) if w.journal.gitops[i].protected.is_empty() => {
            "nothing the window keeps needs a protection from it (it tracks none of them)".into()
        }
        Ok(()) => format!(
            "the window keeps {} from it (the journal records {})",
            w.journal.gitops[i]
                .protected
                .iter()
                .map(gitops::Protected::display)
                .collect::<Vec<_>>()
                .join(", "),
            if w.journal.gitops[i].protected.len() > before {
                "them; they stay"
            } else {
                "them from an earlier run"
            }
        ),
        Err((why, what)) => format!("do not resume it yet: {why}. {what}"),
    })
}

/// At a finished window run again: each owner it relied on that no vpnmig window
/// suspended and that is still suspended is said, with the steps by hand (vpnmig never
/// resumes it, `--gitops resume` included). Best effort: what cannot be read is skipped
/// (`status` says the same).
pub(crate) async fn self_suspended_note(
    cluster: &Cluster,
    ev: &dyn Emit,
    j: &crate::core::journal::Journal,
    replaced: &str,
) {
    for r in &j.gitops {
        if r.paused || !r.relies_on_suspension() || r.restored_at.is_some() {
            continue;
        }
        let Ok(Found::One(_, obj)) = live::find(cluster, &r.owner).await else {
            continue;
        };
        if gitops::owner_state(&obj, replaced, &j.namespace, &j.gateway).active {
            continue;
        }
        let Ok(journals) = journals_for(cluster, Some(&obj), (&j.namespace, &j.gateway)).await
        else {
            continue;
        };
        if holders::holders(&journals, &r.owner, (&j.namespace, &j.gateway))
            .iter()
            .any(|h| h.paused)
        {
            continue;
        }
        ev.emit(Event::Warning(format!(
            "{} is still suspended: no vpnmig window suspended it (it was suspended before the window), so vpnmig does not resume it, `--gitops resume` included. {}",
            r.owner.display(),
            resume_by_hand(&r.owner, replaced, j)
        )));
    }
}

/// The checks and the command that resume an owner by hand after a window that relied on
/// it (`replaced`: what the window replaced, which the source must no longer define).
pub(crate) fn resume_by_hand(
    owner: &gitops::OwnerRef,
    replaced: &str,
    j: &crate::core::journal::Journal,
) -> String {
    let (ns, name) = (&j.namespace, &j.gateway);
    let ons = owner.namespace.as_deref().unwrap_or("argocd");
    let (diff, resume) = match owner.kind.as_str() {
        "Kustomization" => (
            format!(
                "`flux diff kustomization {} -n {ons} --path DIR` on a checkout of the merged repository",
                owner.name
            ),
            format!("`flux resume kustomization {} -n {ons}`", owner.name),
        ),
        "HelmRelease" => (
            gitops::helm_psk_check(owner, &j.psk_secret, ns, j.psk_key()),
            format!("`flux resume helmrelease {} -n {ons}`", owner.name),
        ),
        _ => (
            format!("`argocd app diff {}`", owner.name),
            format!(
                "`argocd app set {} --sync-policy automated` (with the --auto-prune / --self-heal it had)",
                owner.name
            ),
        ),
    };
    format!(
        "Before you resume it, check that its merged source no longer defines {}, defines the window's objects as they are live, and holds the client's key in its copy of secret/{} -n {ns}, if it has one: {diff}; then resume it: {resume}, and `vpnmig verify {name} -n {ns}`",
        object_ref(replaced, name, ns),
        j.psk_secret
    )
}

/// The stop at the end of a window whose owner `owner` (live: `obj`) was re-enabled by
/// someone else after the pause while its source still defines the replaced gateway (or
/// the cluster cannot show that it does not): its next sync re-creates the gateway the
/// window replaced, which contests the floating IP with the new one. Exit 5; the journal
/// keeps holding the owner.
async fn reenabled_stop(
    w: &Window<'_>,
    owner: &gitops::OwnerRef,
    obj: &Value,
    replaced: &str,
    seen: &str,
) -> Error {
    let (name, ns) = (w.name(), w.ns());
    let (verb, kept) = if replaced == "IPsecGateway" {
        ("cutover", "VPNGateway")
    } else {
        ("rollback", "IPsecGateway")
    };
    let lists = match gitops::owner_state(obj, replaced, ns, name).source_lists {
        Some(true) => format!(
            "its source still defines {replaced} {ns}/{name} (status of {})",
            owner.display()
        ),
        _ => format!(
            "the cluster does not show that its source no longer defines {replaced} {ns}/{name}"
        ),
    };
    let back = match crate::cluster::objects::get(w.cluster, replaced, name).await {
        Ok(Some(o)) => format!(
            "; {replaced} {ns}/{name} exists again already (uid {}{})",
            o.pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or("?"),
            gitops::writer(&o)
                .map(|who| format!(", {who}"))
                .unwrap_or_default()
        ),
        _ => String::new(),
    };
    let parents = live_parents(w.cluster, obj).await.unwrap_or_default();
    let parent = parents
        .iter()
        .find(|(_, v)| gitops::parent_state(v, obj).active)
        .map(|(p, _)| p);
    let by = parent
        .map(|p| {
            format!(
                "; it is itself managed by {} (found by {}), which put its policy back",
                p.owner.display(),
                p.evidence.join(", ")
            )
        })
        .unwrap_or_default();
    let delete = if back.is_empty() {
        String::new()
    } else {
        format!(
            ", delete the re-created one (`kubectl delete {} {name} -n {ns}`)",
            replaced.to_lowercase()
        )
    };
    Error::Stop {
        code: exit::VERIFY_FAILED,
        message: format!(
            "the {verb} of {ns}/{name} is not finished: {} syncs automatically again, re-enabled by someone else after the window suspended it (live: {seen}{by}), and {lists}: its sync re-creates the {replaced} (the operator may hand it another serviceCIDR) and contests the floating IP {} with {kept} {ns}/{name}{back}; the journal still holds it",
            owner.display(),
            w.journal.floating_ip
        ),
        hint: Some(format!(
            "suspend it again: `{}`{}{delete}, then `vpnmig {verb} {name} -n {ns}` checks the gateway and restores it once its source no longer defines the {replaced} (merge the repository change; `--gitops resume` if it is merged and the status cannot show it)",
            gitops::pause_command(owner),
            parent
                .map(|p| format!("; and {}", parent_fix(&p.owner)))
                .unwrap_or_default()
        )),
    }
}

/// Why a HelmRelease that tracks window `j`'s PSK Secret is never restored by vpnmig, and
/// the check and the resume by hand (the same words in `status`).
pub(crate) fn helm_psk_refusal(
    owner: &gitops::OwnerRef,
    j: &crate::core::journal::Journal,
    verb: &str,
    name: &str,
    ns: &str,
) -> String {
    format!(
        "it tracks secret/{} -n {} (the PSK), and its upgrade writes the chart's copy of the Secret over the live one (no annotation on a live object stops helm-controller, and the cluster cannot show what the merged chart renders): a copy holding another key would leave the client's key nowhere, so vpnmig does not restore it, neither plainly nor with `--gitops resume`. By hand: {}; vpnmig then lets go of it (`vpnmig {verb} {name} -n {ns} --gitops resume` records it as re-enabled by someone else)",
        j.psk_secret,
        j.namespace,
        gitops::helm_psk_check(owner, &j.psk_secret, &j.namespace, j.psk_key())
    )
}

/// The stop when the PSK Secret is gone: plain about what only the client can give back.
fn psk_gone_stop(j: &crate::core::journal::Journal, owner: &gitops::OwnerRef) -> Error {
    let (secret, ns, name) = (&j.psk_secret, &j.namespace, &j.gateway);
    let key = j.psk_key();
    Error::Stop {
        code: exit::VERIFY_FAILED,
        message: format!(
            "secret/{secret} -n {ns} (the PSK) is gone: it must be re-created with the client's pre-shared key, which vpnmig does not hold (the journal keeps only its fingerprint); {} stays suspended",
            owner.display()
        ),
        hint: Some(format!(
            "ask the client for the key and re-create the Secret: `kubectl create secret generic {secret} -n {ns} --from-literal={key}=<the client's key>`; `vpnmig verify {name} -n {ns}` then compares it with the fingerprint and checks the tunnel; keep the Secret in the repository (or take the owner's markers off it) before the owner is restored"
        )),
    }
}

/// The journals of every window that may hold an owner: every namespace, or, where
/// listing them all is refused, the gateway's namespace and each namespace the owner's
/// status names (`owner`). `Err`: a namespace that could not be listed.
pub(crate) async fn journals_for(
    cluster: &Cluster,
    owner: Option<&Value>,
    me: (&str, &str),
) -> Result<Vec<crate::core::journal::Journal>, String> {
    let listed = journal::list(cluster).await.map_err(|e| e.to_string())?;
    // A journal this version cannot read may be a window that relies on the owner.
    if listed.unreadable > 0 {
        return Err(format!(
            "{} ConfigMap(s) labelled app.kubernetes.io/managed-by=vpnmig in {} are not journals this version reads",
            listed.unreadable, listed.scope
        ));
    }
    let mut journals = listed.journals;
    let mut namespaces: Vec<String> = owner
        .map(|o| {
            let argo = o
                .pointer("/status/resources")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|r| r["namespace"].as_str().map(str::to_string));
            let flux = o
                .pointer("/status/inventory/entries")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|e| {
                    e["id"]
                        .as_str()
                        .and_then(|id| id.split_once('_'))
                        .map(|(ns, _)| ns.to_string())
                });
            argo.chain(flux).filter(|n| !n.is_empty()).collect()
        })
        .unwrap_or_default();
    namespaces.sort();
    namespaces.dedup();
    if listed.scope == "all namespaces" {
        // A window on this owner has its gateway where the owner's status lists objects;
        // a status that lists none says nothing: every namespace then.
        if namespaces.is_empty() {
            orphan_leases(cluster, None, &journals, me).await?;
        } else {
            for n in std::iter::once(&cluster.namespace).chain(&namespaces) {
                orphan_leases(cluster, Some(n), &journals, me).await?;
            }
        }
        return Ok(journals);
    }
    for other in namespaces.iter().filter(|n| **n != cluster.namespace) {
        let l = journal::list_in(cluster, Some(other))
            .await
            .map_err(|e| format!("journals in namespace {other}: {e}"))?;
        if l.unreadable > 0 {
            return Err(format!(
                "{} ConfigMap(s) labelled app.kubernetes.io/managed-by=vpnmig in namespace {other} are not journals this version reads",
                l.unreadable
            ));
        }
        journals.extend(l.journals);
    }
    for n in std::iter::once(&cluster.namespace).chain(&namespaces) {
        orphan_leases(cluster, Some(n), &journals, me).await?;
    }
    Ok(journals)
}

/// `Err` when a window holds its lock (`lease/vpnmig-NAME`) in `namespace` (`None`:
/// every namespace) but has no journal among `journals`: its journal lost its label or
/// was deleted while it runs, and it may rely on the owner's suspension (a21c attack
/// 11). Leases that cannot be listed are "cannot tell" too.
async fn orphan_leases(
    cluster: &Cluster,
    namespace: Option<&str>,
    journals: &[crate::core::journal::Journal],
    me: (&str, &str),
) -> Result<(), String> {
    let held = crate::cluster::lock::held(cluster, namespace)
        .await
        .map_err(|e| {
            format!(
                "the vpnmig locks (Leases) in {} cannot be listed: {e}",
                namespace.map_or("all namespaces".to_string(), |n| format!("namespace {n}"))
            )
        })?;
    let orphans: Vec<String> = held
        .iter()
        .filter(|l| (l.namespace.as_str(), l.gateway.as_str()) != me)
        .filter(|l| {
            !journals
                .iter()
                .any(|j| j.namespace == l.namespace && j.gateway == l.gateway)
        })
        .map(|l| {
            format!(
                "lease/vpnmig-{} -n {} (held by {} since {})",
                l.gateway, l.namespace, l.holder, l.since
            )
        })
        .collect();
    if orphans.is_empty() {
        return Ok(());
    }
    Err(format!(
        "a window holds its lock without a journal vpnmig can find ({}): its journal ConfigMap lost its label app.kubernetes.io/managed-by=vpnmig or was deleted while it runs, or its run was just starting. Wait for it to finish, or put the label back (`kubectl label configmap vpnmig-GATEWAY -n NS app.kubernetes.io/managed-by=vpnmig`); a lock whose holder is gone: `kubectl delete lease vpnmig-GATEWAY -n NS`",
        orphans.join(", ")
    ))
}

/// Who holds an owner, as the pause says it: the windows holding it, none, or why that
/// is unknown.
fn reliance(held_by: &Result<Vec<holders::Holder>, String>) -> String {
    match held_by {
        Ok(h) if h.iter().any(|h| h.holds()) => format!(
            "held by {}",
            h.iter()
                .filter(|h| h.holds())
                .map(holders::Holder::display)
                .collect::<Vec<_>>()
                .join("; ")
        ),
        Ok(_) => "no vpnmig window holds it".to_string(),
        Err(why) => format!("which windows hold it is unknown: {why}"),
    }
}

/// The windows other than `ns/name` that hold `owner` now. `Err`: why that is unknown.
async fn holders_now(
    cluster: &Cluster,
    owner: &gitops::OwnerRef,
    ns: &str,
    name: &str,
) -> Result<Vec<holders::Holder>, String> {
    let obj = match live::find(cluster, owner).await {
        Ok(Found::One(_, o)) => Some(o),
        _ => None,
    };
    let journals = journals_for(cluster, obj.as_ref(), (ns, name)).await?;
    Ok(holders::holders(&journals, owner, (ns, name)))
}

/// How deep the ownerReferences of a kept object are followed (issue 21 item 1, kind A):
/// a Secret made by a SealedSecret or an ExternalSecret, itself made by a generator, and
/// so on; and how many objects are looked at in all, at most.
const OWNER_DEPTH: usize = 4;
const KEPT_AT_MOST: usize = 48;

/// How long the owner's status is given to compare a kept object once vpnmig put the
/// owner's tracking markers on it (kind C): a real Argo CD refreshes on the object's
/// change within seconds.
const COMPARED_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Record the protection `record` in this window's journal (record `i`, replacing an
/// earlier one of the same object and annotation) before it is set, then set it with
/// `patch`: the object as it is after the patch, for the read-back.
async fn protect_recorded(
    w: &mut Window<'_>,
    i: usize,
    record: &gitops::Protected,
    api_version: &str,
    patch: &Value,
) -> Result<Value, Error> {
    let same = |p: &gitops::Protected| {
        (&p.kind, &p.namespace, &p.name, &p.annotation)
            == (
                &record.kind,
                &record.namespace,
                &record.name,
                &record.annotation,
            )
    };
    w.journal.gitops[i].protected.retain(|p| !same(p));
    w.journal.gitops[i].protected.push(record.clone());
    journal::write(w.cluster, &w.journal, false).await?;
    Ok(live::patch_kept(
        w.cluster,
        api_version,
        &record.kind,
        &record.namespace,
        &record.name,
        patch,
    )
    .await?)
}

/// Make sure the restored owner's first sync cannot prune or change what window `j`
/// keeps (after `replaced`: the new objects after a cutover, the old gateway after a
/// rollback; and its PSK Secret), nor what those objects have ownerReferences to (a
/// SealedSecret or ExternalSecret that made the PSK Secret: pruned, the garbage
/// collector deletes the Secret; kind A). Protection set is recorded in this window's
/// journal (record `i`) before the patch. `Ok(Err((why, what to do)))`: the owner must
/// stay suspended.
async fn keep(
    w: &mut Window<'_>,
    i: usize,
    j: &crate::core::journal::Journal,
    replaced: &str,
    owner: Option<&Value>,
) -> Result<Result<(), (String, String)>, Error> {
    let r = w.journal.gitops[i].owner.clone();
    // (apiVersion, kind, namespace, name, depth, what it keeps: the chain that leads here)
    let mut queue: Vec<(String, String, String, String, usize, String)> = vec![(
        "v1".into(),
        "Secret".into(),
        j.namespace.clone(),
        j.psk_secret.clone(),
        0,
        String::new(),
    )];
    // The window's own journal: a namespace policy that stamps an owner's markers on
    // every ConfigMap would have its sync prune it, and with it the record of the window
    // and the key's fingerprint (a21d attack 11).
    queue.push((
        "v1".into(),
        "ConfigMap".into(),
        j.namespace.clone(),
        crate::core::journal::object_name(&j.gateway),
        0,
        "the window's journal".into(),
    ));
    let objects: Vec<&Value> = if replaced == "IPsecGateway" {
        j.targets.iter().collect()
    } else {
        vec![&j.old_manifest]
    };
    for o in objects {
        let s = |p: &str| {
            o.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let ns = Some(s("/metadata/namespace"))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| j.namespace.clone());
        queue.push((
            s("/apiVersion"),
            s("/kind"),
            ns,
            s("/metadata/name"),
            0,
            String::new(),
        ));
    }
    // Argo CD's global diff customizations (argocd-cm), where Argo CD keeps them: its
    // install namespace, which with "apps in any namespace" is not the Application's
    // (a21d attack 1). Every argocd-cm the cluster has is read, and a rule in any of them
    // counts; where that cannot be told, the owner stays suspended ("cannot tell").
    let customizations: Vec<(String, String)> = match (r.kind.as_str(), r.namespace.as_deref()) {
        ("Application", Some(ons)) => match live::argocd_cms(w.cluster, ons).await {
            Ok(cms) => cms
                .iter()
                .flat_map(|(cns, cm)| {
                    cm["data"]
                        .as_object()
                        .into_iter()
                        .flatten()
                        .filter(|(k, _)| {
                            k.starts_with("resource.customizations.ignoreDifferences.")
                                || *k == "resource.customizations"
                        })
                        .map(move |(k, v)| {
                            (
                                format!("-n {cns} {k}"),
                                v.as_str().unwrap_or_default().to_string(),
                            )
                        })
                })
                .collect(),
            Err(why) => {
                return Ok(Err((
                    format!(
                        "whether Argo CD's diff customizations (ConfigMap argocd-cm, in the namespace Argo CD runs in) hide a difference of what the window keeps cannot be told: {why}"
                    ),
                    format!(
                        "Check by hand: find Argo CD's namespace (`kubectl get configmaps -A --field-selector metadata.name=argocd-cm`), and that its argocd-cm ignores no difference of the Secret or the gateway objects (`kubectl get configmap argocd-cm -n ARGOCD_NAMESPACE -o yaml`, keys resource.customizations.ignoreDifferences.* and resource.customizations); then run `vpnmig {} {} -n {}` with a context that may list ConfigMaps in all namespaces: it restores {} once its checks pass (no by-hand restore is offered: it would skip them)",
                        verb_of(replaced),
                        w.name(),
                        w.ns(),
                        r.display()
                    ),
                )));
            }
        },
        _ => Vec::new(),
    };
    let mut seen: Vec<(String, String, String)> = Vec::new();
    let mut owner = owner.cloned();
    // In order: the PSK Secret first, then the window's objects, then what owns them.
    while !queue.is_empty() {
        let (api_version, kind, ns, name, depth, chain) = queue.remove(0);
        if seen.contains(&(kind.clone(), ns.clone(), name.clone())) {
            continue;
        }
        seen.push((kind.clone(), ns.clone(), name.clone()));
        let what = kept_ref(&kind, &name, &ns);
        let what = if kind == "Secret" && depth == 0 {
            format!("{what} (the PSK)")
        } else if chain.is_empty() {
            what
        } else if depth > 0 {
            format!("{what} ({chain}: deleted, the garbage collector deletes what it owns)")
        } else {
            format!("{what} ({chain})")
        };
        let Some(obj) = live::get_kept(w.cluster, &api_version, &kind, &ns, &name).await? else {
            if depth > 0 {
                // Its dependent is still there, so the object it names should be: not
                // found is a kind vpnmig cannot read, not proof it is gone.
                return Ok(Err((
                    format!(
                        "{what} cannot be read (not found as {api_version} {kind}), and whether its sync prunes it cannot be told"
                    ),
                    format!(
                        "check by hand that {}'s source still defines it (`kubectl get {} {name}{}`; {}); {}",
                        r.display(),
                        kind.to_lowercase(),
                        ns_flag(&ns),
                        gitops::render_hint(&r),
                        not_restored(w.ns())
                    ),
                )));
            }
            continue;
        };
        // Kind A: what owns it is kept too (pruned, the garbage collector deletes it).
        // Owners beyond the depth vpnmig follows are not "safe": they are unknown (a21d
        // attack 3: a chain one level longer was restored, and the PSK collected).
        if depth >= OWNER_DEPTH && !gitops::owner_references(&obj).is_empty() {
            return Ok(Err((
                format!(
                    "{what} is owned through more than {OWNER_DEPTH} levels of ownerReferences, more than vpnmig follows: whether {}'s sync prunes one of them (and the garbage collector then deletes what the window keeps) cannot be told",
                    r.display()
                ),
                format!(
                    "check by hand that {}'s source still defines every owner in the chain (`kubectl get {} {name}{} -o jsonpath='{{.metadata.ownerReferences}}'`, then each owner's); {}",
                    r.display(),
                    kind.to_lowercase(),
                    ns_flag(&ns),
                    not_restored(w.ns())
                ),
            )));
        }
        if depth < OWNER_DEPTH {
            for (av, k, n) in gitops::owner_references(&obj) {
                // A longer chain reads as one sentence: "A is owned by B, which is
                // owned by C".
                let label = if chain.is_empty() || depth == 0 {
                    kept_ref(&kind, &name, &ns)
                } else {
                    format!("{chain}, which")
                };
                // An owner of a cluster-scoped kind (a ClusterExternalSecret) has no
                // namespace: it is read, and found in the owner's status, without one
                // (a21d attack 8).
                let ons = if live::namespaced(w.cluster, &av, &k).await {
                    ns.clone()
                } else {
                    String::new()
                };
                queue.push((
                    av,
                    k.clone(),
                    ons.clone(),
                    n.clone(),
                    depth + 1,
                    format!("{label} is owned by {}", kept_ref(&k, &n, &ons)),
                ));
            }
        }
        if seen.len() + queue.len() > KEPT_AT_MOST {
            return Ok(Err((
                format!(
                    "what the window keeps has more than {KEPT_AT_MOST} objects through their ownerReferences, more than vpnmig checks"
                ),
                format!(
                    "check by hand what {}'s sync would prune ({}); {}",
                    r.display(),
                    gitops::render_hint(&r),
                    not_restored(w.ns())
                ),
            )));
        }
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        // Kind D: another Application whose markers are on it syncs it too, whatever
        // vpnmig does with this owner.
        if let Some(why) = other_apps(
            w.cluster,
            &r,
            &obj,
            &customizations,
            group,
            &kind,
            &ns,
            &name,
            &what,
        )
        .await?
        {
            return Ok(Err(why));
        }
        let tracked = gitops::tracks(&r, &obj);
        let mut says = owner
            .as_ref()
            .and_then(|o| gitops::argo_says(o, group, &kind, &ns, &name));
        // Kind C: one its source defines but that carries none of its markers yet shows
        // OutOfSync for the markers alone (as a real Argo CD shows an object it did not
        // create). vpnmig puts on the markers the owner's sync would stamp (copied from
        // the object the window replaced), and reads the comparison again.
        if says == Some(gitops::ArgoSays::OutOfSync)
            && !tracked
            && r.kind == "Application"
            && let Some(patch) = gitops::tracking_patch(&r, &j.old_manifest, &obj)
        {
            live::patch_kept(w.cluster, &api_version, &kind, &ns, &name, &patch).await?;
            w.ev.emit(Event::Step(format!(
                    "{what}: put on {}'s tracking markers, as its sync would (its source defines it); reading its comparison again",
                    r.display()
                )));
            let deadline = tokio::time::Instant::now() + COMPARED_WITHIN;
            loop {
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                owner = match live::find(w.cluster, &r).await? {
                    Found::One(_, o) => Some(o),
                    _ => None,
                };
                says = owner
                    .as_ref()
                    .and_then(|o| gitops::argo_says(o, group, &kind, &ns, &name));
                if says != Some(gitops::ArgoSays::OutOfSync)
                    || tokio::time::Instant::now() >= deadline
                {
                    break;
                }
            }
        }
        let diff = format!("argocd app diff {}", r.name);
        let by_hand = format!(
            "Check by hand what its sync would write (`{diff} --local DIR` on the merged repository, `argocd app manifests {} --source git`)",
            r.name
        );
        let secret_words = if kind == "Secret" && depth == 0 {
            " with the key the repository holds, and the client's key would exist nowhere (vpnmig keeps only its fingerprint)"
        } else {
            ""
        };
        let status_of = format!("status of {}", r.display());
        match &says {
            Some(gitops::ArgoSays::OutOfSync) => {
                return Ok(Err((
                    format!(
                        "its source defines {what} otherwise than it is live ({status_of}: OutOfSync): restoring its sync would overwrite it{secret_words}; see what it would change with `{diff}`"
                    ),
                    format!(
                        "Make the repository define it as it is live (`{diff}` shows the difference{}), then `vpnmig {} {} -n {}`",
                        if kind == "Secret" {
                            "; vpnmig never prints a key"
                        } else {
                            ""
                        },
                        verb_of(replaced),
                        w.name(),
                        w.ns()
                    ),
                )));
            }
            Some(gitops::ArgoSays::CannotTell(how)) => {
                return Ok(Err((
                    format!(
                        "its status cannot tell whether its sync would change {what} ({how}; {status_of}): an entry that is not Synced is no proof"
                    ),
                    format!(
                        "{by_hand}; once it shows Synced, `vpnmig {} {} -n {}`",
                        verb_of(replaced),
                        w.name(),
                        w.ns()
                    ),
                )));
            }
            Some(gitops::ArgoSays::Absent) if tracked && !gitops::protected(&r.kind, &obj) => {
                return Ok(Err((
                    format!(
                        "it tracks {what}, but its status does not list it ({status_of}; a real Argo CD lists every object it tracks): whether its sync would prune it cannot be told"
                    ),
                    format!(
                        "{by_hand}; refresh it (`argocd app get {} --refresh`), then `vpnmig {} {} -n {}`",
                        r.name,
                        verb_of(replaced),
                        w.name(),
                        w.ns()
                    ),
                )));
            }
            Some(gitops::ArgoSays::Prunes) if tracked && !gitops::protected(&r.kind, &obj) => {
                return Ok(Err((
                    format!(
                        "it tracks {what}, and its source no longer defines it ({status_of}): restoring its sync would delete it"
                    ),
                    format!(
                        "Put it back in the repository (or take the owner's markers off it), then `vpnmig {} {} -n {}`",
                        verb_of(replaced),
                        w.name(),
                        w.ns()
                    ),
                )));
            }
            _ => {}
        }
        // Kind B: a difference its status hides is no proof either.
        if matches!(says, Some(gitops::ArgoSays::Synced))
            && let Some(rule) = owner
                .as_ref()
                .and_then(|o| gitops::argo_ignored(o, &customizations, group, &kind, &ns, &name))
        {
            return Ok(Err((
                format!(
                    "{rule} matches {what}: its status does not show a difference there, and its sync (without syncOptions RespectIgnoreDifferences=true) writes the repository's copy all the same{}",
                    if kind == "Secret" && depth == 0 {
                        " (the key the repository holds: the client's key would then exist nowhere, vpnmig keeps only its fingerprint)"
                    } else {
                        ""
                    }
                ),
                format!(
                    "{by_hand}; add RespectIgnoreDifferences=true to its syncOptions, then `vpnmig {} {} -n {}` (without it, {})",
                    verb_of(replaced),
                    w.name(),
                    w.ns(),
                    not_restored(w.ns())
                ),
            )));
        }
        // The PSK Secret and a Kustomization: a prune protection does not stop its apply
        // from writing Git's copy over the live key (round 4, attack 1). Its controller
        // skips an object whose live copy says `kustomize.toolkit.fluxcd.io/reconcile:
        // disabled`, tracked or not (a source that newly defines it would adopt it).
        let obj = if kind == "Secret"
            && depth == 0
            && let Some((record, patch)) = gitops::protect_overwrite(&r.kind, &obj)
        {
            let after = protect_recorded(w, i, &record, &api_version, &patch).await?;
            if !gitops::overwrite_protected(&r.kind, &after) {
                return Ok(Err((
                    format!(
                        "the annotation {}={} did not stay on {what} (a webhook or controller removed it), and without it the first sync writes the repository's copy of the Secret over the client's key",
                        record.annotation, record.value
                    ),
                    format!(
                        "find what removes it (`kubectl get secret {name} -n {ns} --show-managed-fields -o yaml`), then `vpnmig {} {} -n {}`",
                        verb_of(replaced),
                        w.name(),
                        w.ns()
                    ),
                )));
            }
            w.ev.emit(Event::Step(format!(
                "kept {what} from {}'s apply: annotation {}={} (kustomize-controller skips an object whose live copy carries it, so its sync cannot write the repository's copy over the client's key; the journal records it, and it stays: `kubectl annotate secret {name} -n {ns} {}-` removes it once the repository's copy holds the client's key)",
                r.display(),
                record.annotation,
                record.value,
                record.annotation
            )));
            after
        } else {
            obj
        };
        if !tracked || gitops::protected(&r.kind, &obj) || says.is_some() {
            continue;
        }
        // The cluster cannot show what the merged source applies: the controller is told
        // not to prune it, as it documents.
        let Some((record, patch)) = gitops::protect(&r.kind, &obj) else {
            continue;
        };
        let after = protect_recorded(w, i, &record, &api_version, &patch).await?;
        if !gitops::protected(&r.kind, &after) {
            return Ok(Err((
                format!(
                    "it tracks {what}, the cluster does not show whether its source still defines it, and the annotation {}={} did not stay on it (a webhook or controller removed it)",
                    record.annotation, record.value
                ),
                format!(
                    "Find what removes it, then `vpnmig {} {} -n {}`; or check by hand that the merged source still defines it ({}); {}",
                    verb_of(replaced),
                    w.name(),
                    w.ns(),
                    gitops::render_hint(&r),
                    not_restored(w.ns())
                ),
            )));
        }
        w.ev.emit(Event::Step(format!(
            "kept {what} from {}'s prune: annotation {}={} (the cluster does not show whether its merged source still defines it{}; the journal records it, and it stays)",
            r.display(),
            record.annotation,
            record.value,
            owner
                .as_ref()
                .and_then(gitops::status_blind)
                .map(|why| format!(": {why}"))
                .unwrap_or_default()
        )));
    }
    Ok(Ok(()))
}

/// What follows a check vpnmig cannot make itself: it does not restore the owner, and
/// says so, never "restore it by hand" (a21e: a restore by hand skipped the prune
/// protections and the watch of vpnmig's own restore, and lost a PSK and a gateway).
fn not_restored(ns: &str) -> String {
    format!(
        "vpnmig cannot check this, so it does not restore the owner: it stays suspended, the journal holds it, and the prune protections set so far stay (`vpnmig status -n {ns}` lists them). Resuming it is then yours alone, and nothing watches its first sync"
    )
}

/// `kind/name -n ns`, or `kind/name (cluster-scoped)` for an object without a namespace.
fn kept_ref(kind: &str, name: &str, ns: &str) -> String {
    if ns.is_empty() {
        format!("{}/{name} (cluster-scoped)", kind.to_ascii_lowercase())
    } else {
        object_ref(kind, name, ns)
    }
}

/// ` -n ns` for a namespaced object's kubectl command, nothing for a cluster-scoped one.
fn ns_flag(ns: &str) -> String {
    if ns.is_empty() {
        String::new()
    } else {
        format!(" -n {ns}")
    }
}

fn verb_of(replaced: &str) -> &'static str {
    if replaced == "IPsecGateway" {
        "cutover"
    } else {
        "rollback"
    }
}

/// The stop when the PSK Secret's key changed (`e`) and another Application that syncs
/// automatically carries its markers (kind D): that Application and its repository copy
/// are named as what must be fixed first, since putting the key back by hand is undone by
/// its self-heal. `e` as it is when there is none.
async fn other_writer_stop(
    cluster: &Cluster,
    owner: &gitops::OwnerRef,
    secret: &Value,
    e: Error,
) -> Error {
    let Error::Stop { code, message, .. } = &e else {
        return e;
    };
    let mut others = Vec::new();
    for app in gitops::argo_apps_on(secret) {
        let found = match live::find(cluster, &app).await {
            Ok(Found::One(o, v)) => vec![(o, v)],
            Ok(Found::Many(all)) => all,
            _ => Vec::new(),
        };
        for (o, v) in found {
            if !(owner.kind == "Application" && gitops::same_owner(owner, &o))
                && gitops::argo_automated(&v)
            {
                others.push(o);
            }
        }
    }
    let Some(other) = others.first() else {
        return e;
    };
    Error::Stop {
        code: *code,
        message: format!(
            "{message}; the Secret carries the tracking markers of {}, which syncs automatically{}: its sync writes its repository's copy of the Secret, and {} stays suspended",
            other.display(),
            gitops::writer(secret)
                .map(|w| format!(" (last written by {w})"))
                .unwrap_or_default(),
            owner.display()
        ),
        hint: Some(format!(
            "fix {}'s repository copy first: make it hold the client's key, or take the Secret out of it and its markers off the Secret (`argocd app diff {}`; `argocd app manifests {} --source git`; vpnmig never prints a key). Putting the key back by hand alone is undone by its self-heal within seconds. Then put the client's key back and run the window's command again",
            other.display(),
            other.name,
            other.name
        )),
    }
}

/// Kind D: every other Argo CD Application whose markers are on kept object `obj`
/// (`what`) is checked like the owner: its current status must show the object `Synced`
/// and no ignoreDifferences of its may hide a difference. One that does not: `Some((why,
/// what to do))`, naming that Application and its repository copy, which must be fixed
/// first (putting the object back by hand would be undone by its next sync).
#[allow(clippy::too_many_arguments)]
async fn other_apps(
    cluster: &Cluster,
    r: &gitops::OwnerRef,
    obj: &Value,
    customizations: &[(String, String)],
    group: &str,
    kind: &str,
    ns: &str,
    name: &str,
    what: &str,
) -> Result<Option<(String, String)>, Error> {
    for app in gitops::argo_apps_on(obj) {
        let found = match live::find(cluster, &app).await? {
            Found::One(o, v) => vec![(o, v)],
            Found::Many(all) => all,
            Found::None => Vec::new(),
        };
        for (other, v) in found {
            if r.kind == "Application" && gitops::same_owner(r, &other) {
                continue;
            }
            let automated = gitops::argo_automated(&v);
            let how = if automated {
                "it syncs automatically, so this happens whatever vpnmig does with the owner it suspended"
            } else {
                "its next sync (by hand or once automated) does it"
            };
            let shown = match gitops::argo_says(&v, group, kind, ns, name) {
                Some(gitops::ArgoSays::Synced) => {
                    match gitops::argo_ignored(&v, customizations, group, kind, ns, name) {
                        Some(rule) => format!(
                            "its {rule} hides a difference there, and its sync writes its repository's copy"
                        ),
                        None => continue,
                    }
                }
                Some(gitops::ArgoSays::OutOfSync) => {
                    "its status shows it OutOfSync: its sync overwrites it with its repository's copy".into()
                }
                Some(gitops::ArgoSays::Prunes) => {
                    "its status lists it with requiresPruning: its source no longer defines it, and its sync deletes it".into()
                }
                Some(gitops::ArgoSays::Absent) => {
                    "its status does not list it: whether its sync changes or prunes it cannot be told".into()
                }
                Some(gitops::ArgoSays::CannotTell(why)) => {
                    format!("its status cannot tell ({why})")
                }
                None => format!(
                    "its status cannot tell ({})",
                    gitops::status_blind(&v).unwrap_or_else(|| "not current".into())
                ),
            };
            return Ok(Some((
                format!(
                    "{what} carries the tracking markers of another Application, {}, and {shown}; {how}",
                    other.display()
                ),
                format!(
                    "Fix {}'s repository copy first (`argocd app diff {}`; `argocd app manifests {} --source git`), or take its markers off the object; putting the object back by hand alone is undone by its next sync. Then `vpnmig status -n {ns}` and run the window's command again",
                    other.display(),
                    other.name,
                    other.name
                ),
            )));
        }
    }
    Ok(None)
}

/// The names of the VPNPeers window `j` made (its targets).
fn made_peers(j: &crate::core::journal::Journal) -> Vec<&str> {
    j.targets
        .iter()
        .filter(|t| t["kind"] == "VPNPeer")
        .filter_map(|t| t.pointer("/metadata/name").and_then(Value::as_str))
        .collect()
}

/// A VPNPeer the owner's source defines on the gateway of finished window `j` (its
/// status: Argo CD), which the window did not make (a21d attack 6): a second peer flips the
/// gateway to default-deny, so the window's peer reaches nothing, and the tunnel goes
/// dark while its IKE SA is up. One that is live and names another gateway is no
/// concern; one that is not live yet (its sync would create it) names a gateway the
/// cluster cannot show. `Some((why, what to do))`: the owner stays suspended.
async fn extra_in_source(
    cluster: &Cluster,
    owner: &gitops::OwnerRef,
    obj: &Value,
    j: &crate::core::journal::Journal,
    verb: &str,
) -> Result<Option<(String, String)>, Error> {
    use crate::core::model::{NEW_GROUP, VERSION};
    let (ns, gw) = (&j.namespace, &j.gateway);
    let made = made_peers(j);
    let mut found = Vec::new();
    for (peer, status) in gitops::argo_extra_peers(obj, ns, &made) {
        let api = format!("{NEW_GROUP}/{VERSION}");
        let what = object_ref("VPNPeer", &peer, ns);
        match live::get_kept(cluster, &api, "VPNPeer", ns, &peer).await? {
            Some(p) => {
                let on = p
                    .pointer("/spec/gatewayRef/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if on == gw.as_str() {
                    found.push(format!(
                        "{what} (live, spec.gatewayRef.name {gw}; status {status})"
                    ));
                }
            }
            None => found.push(format!(
                "{what} (not live: its sync would create it, and which gateway its spec.gatewayRef names the cluster cannot show; status {status})"
            )),
        }
    }
    if found.is_empty() {
        return Ok(None);
    }
    Ok(Some((
        format!(
            "its source defines {} beside the window's {} on vpngateway/{gw} -n {ns}: a second VPNPeer flips the gateway to default-deny, and a peer without an authorization block then reaches nothing (the tunnel is dark while its IKE SA is up)",
            found.join(", "),
            if made.is_empty() {
                "peers".to_string()
            } else {
                made.iter()
                    .map(|p| format!("vpnpeer/{p}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
        format!(
            "Check what the repository defines (`argocd app manifests {} --source git`; `argocd app diff {}`): take the extra VPNPeer out, or give each peer on the gateway the authorization it needs (DESIGN.md: several peers grant only what their authorization names), then `vpnmig {verb} {gw} -n {ns}`",
            owner.name, owner.name
        ),
    )))
}

/// The VPNPeers live on the gateway of window `j` that it did not make: after a restored
/// sync, what the owner added (a21d attack 6). Each as `vpnpeer/NAME -n NS (written by
/// …)`.
async fn extra_live(
    cluster: &Cluster,
    j: &crate::core::journal::Journal,
) -> Result<Vec<String>, Error> {
    let made = made_peers(j);
    let peers: Vec<crate::core::model::VPNPeer> =
        crate::cluster::list::all(cluster, Some(&j.namespace)).await?;
    Ok(peers
        .iter()
        .filter(|p| p.spec.gateway_ref.name == j.gateway)
        .filter_map(|p| p.metadata.name.as_deref())
        .filter(|n| !made.contains(n))
        .map(|n| object_ref("VPNPeer", n, &j.namespace))
        .collect())
}

/// The merge patch that asks Argo CD for a refresh (`argocd app get NAME --refresh`).
fn refresh_patch() -> Value {
    serde_json::json!({"metadata": {"annotations": {gitops::ARGO_REFRESH: "normal"}}})
}

/// Ask Argo CD to compare Application `owner` (as read: `obj`) with its source now, and
/// wait (at most [`COMPARED_WITHIN`]) for the comparison it writes. `Ok(Ok(owner))`: the
/// owner with a status written after the request; `Ok(Err(why))`: none came.
async fn refreshed(
    cluster: &Cluster,
    owner: &gitops::OwnerRef,
    obj: &Value,
) -> Result<Result<Value, String>, Error> {
    let mut since = gitops::status_mark(obj);
    let asked = live::patch(cluster, owner, &refresh_patch()).await;
    since.refresh_asked = asked.is_ok() && !since.refresh_asked;
    let deadline = tokio::time::Instant::now() + COMPARED_WITHIN;
    loop {
        if let Found::One(_, now) = live::find(cluster, owner).await?
            && gitops::status_after(&since, &now)
        {
            return Ok(Ok(now));
        }
        if tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    let at = obj
        .pointer("/status/reconciledAt")
        .and_then(Value::as_str)
        .map(|t| format!("its status is a comparison from {t} (status.reconciledAt)"))
        .unwrap_or_else(|| {
            "its status shows no time it was compared (no status.reconciledAt)".into()
        });
    Ok(Err(match asked {
        Ok(_) => format!(
            "{at}, and Argo CD did not compare it again within {}s after vpnmig asked it to refresh (annotation {}=normal)",
            COMPARED_WITHIN.as_secs(),
            gitops::ARGO_REFRESH
        ),
        Err(e) => format!("{at}, and vpnmig could not ask it to refresh ({e})"),
    }))
}

/// How long a restored owner's first sync is watched (bounded like every wait).
const SETTLE: std::time::Duration = std::time::Duration::from_secs(30);

/// Watch a restored owner until its status says it synced (at most [`SETTLE`]), while
/// the window's objects stay as they are: after a cutover the targets as applied and no
/// IPsecGateway; after a rollback no VPNGateway. `others`: the other windows on the
/// owner and what each replaced, which must not come back either (attack finding A2: a
/// sync that re-created another window's old gateway was called "as it was"). `Ok`:
/// whether its status said it synced within [`SETTLE`]. Errors: the interference.
async fn settle(
    w: &Window<'_>,
    owner: &gitops::OwnerRef,
    replaced: &str,
    others: &[(crate::core::journal::Journal, &str)],
    psk_before: &(Option<String>, Option<String>),
    since: &gitops::StatusMark,
) -> Result<bool, Error> {
    let (cluster, name) = (w.cluster, w.name().to_string());
    let secret = w.journal.psk_secret.clone();
    let psk_gone = || Error::Stop {
        code: exit::VERIFY_FAILED,
        message: format!(
            "secret/{secret} -n {} (the PSK) was deleted by someone else during the window",
            cluster.namespace
        ),
        hint: None,
    };
    // The PSK Secret is there and holds the key it held before the restore (its
    // fingerprint, never its value): attack finding 1.
    let psk_held = || async {
        match crate::cluster::objects::secret(cluster, &secret).await? {
            None => Err(psk_gone()),
            Some(s) => match psk_changed(&w.journal, psk_before, &s) {
                Some(e) => Err(e),
                None => Ok(()),
            },
        }
    };
    // The owner lives in another namespace than the gateway, and the PSK Secret is
    // another kind: both are read, not watched, twice a second (bounded by SETTLE).
    let synced = async {
        let started = std::time::Instant::now();
        while started.elapsed() < SETTLE {
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            psk_held().await?;
            if let Some(back) = back_again(cluster, others).await? {
                return Err(back);
            }
            // Synced only as a current status says (a Flux Ready condition of the
            // generation before the restore is not this sync's), written after the
            // restore (a21d attack 10: an Argo CD status the restore never changed).
            if let Found::One(_, o) = live::find(cluster, owner).await? {
                let st = gitops::owner_state(&o, replaced, cluster.namespace.as_str(), &name);
                if st.synced == Some(true) && gitops::status_after(since, &o) {
                    return Ok(true);
                }
            }
        }
        Ok::<bool, Error>(false)
    };
    let old = [w.journal.old_manifest.clone()];
    let seen = if replaced == "IPsecGateway" {
        super::steps::unless_interfered(cluster, &name, &w.journal.targets, synced).await?
    } else {
        // The IPsecGateway the rollback re-created must stay as saved, and the VPNGateway
        // gone.
        let kept = super::steps::changed(cluster, "IPsecGateway", old.iter().collect());
        tokio::select! {
            r = super::steps::unless_recreated(cluster, "VPNGateway", &name, "rollback", synced) => r?,
            e = Box::pin(kept) => return Err(e),
        }
    };
    // Once synced, one last look: a change that landed before the watches began is not
    // an event they saw (attack finding: a sync at once raced them).
    let intact = if replaced == "IPsecGateway" {
        super::steps::targets_intact(cluster, &w.journal.targets).await
            && crate::cluster::objects::get(cluster, "IPsecGateway", &name)
                .await?
                .is_none()
    } else {
        super::steps::targets_intact(cluster, &old).await
            && crate::cluster::objects::get(cluster, "VPNGateway", &name)
                .await?
                .is_none()
    };
    psk_held().await?;
    if let Some(back) = back_again(cluster, others).await? {
        return Err(back);
    }
    // Nothing added on the window's gateway either (a21d attack 6).
    if replaced == "IPsecGateway" {
        let extra = extra_live(cluster, &w.journal).await?;
        if !extra.is_empty() {
            return Err(Error::Stop {
                code: exit::VERIFY_FAILED,
                message: format!(
                    "after its sync, {} {} on vpngateway/{name} -n {}, which the window did not make: a second VPNPeer flips the gateway to default-deny, and a peer without an authorization block then reaches nothing",
                    extra.join(", "),
                    if extra.len() == 1 { "is" } else { "are" },
                    cluster.namespace
                ),
                hint: Some(format!(
                    "take it out of the repository, then delete it (`kubectl delete {}`), and check the tunnel (`vpnmig verify {name} -n {}`)",
                    extra
                        .iter()
                        .map(|e| e.replacen('/', " ", 1))
                        .collect::<Vec<_>>()
                        .join("; kubectl delete "),
                    cluster.namespace
                )),
            });
        }
    }
    if !intact {
        return Err(Error::Stop {
            code: exit::VERIFY_FAILED,
            message: format!(
                "after its sync, the gateway is not what the window made live (`vpnmig verify {name} -n {}` says how)",
                cluster.namespace
            ),
            hint: None,
        });
    }
    Ok(seen)
}

/// The PSK Secret `s` as the restore's first sync is held to it: its uid and its key's
/// fingerprint in the journal's scheme.
fn psk_seen(j: &crate::core::journal::Journal, s: &Value) -> (Option<String>, Option<String>) {
    (
        s.pointer("/metadata/uid")
            .and_then(Value::as_str)
            .map(str::to_string),
        crate::core::psk::fingerprint_like(
            j.psk_fingerprint.as_deref(),
            &j.namespace,
            &j.psk_secret,
            j.psk_key(),
            s,
        ),
    )
}

/// The stop when the PSK Secret `s` no longer holds the key it held before the restore
/// (`before`: [`psk_seen`] then), or was re-created so that it cannot be compared.
fn psk_changed(
    j: &crate::core::journal::Journal,
    before: &(Option<String>, Option<String>),
    s: &Value,
) -> Option<Error> {
    let now = psk_seen(j, s);
    if now == *before {
        return None;
    }
    let (secret, ns, name, key) = (&j.psk_secret, &j.namespace, &j.gateway, j.psk_key());
    let what = if now.0 != before.0 {
        format!(
            "was re-created (uid {} → {}), so its key cannot be compared with the one it held",
            before.0.as_deref().unwrap_or("?"),
            now.0.as_deref().unwrap_or("?")
        )
    } else {
        format!(
            "key {key} changed (fingerprint {} → {})",
            before.1.as_deref().unwrap_or("<no key>"),
            now.1.as_deref().unwrap_or("<no key>")
        )
    };
    Some(Error::Stop {
        code: exit::VERIFY_FAILED,
        message: format!(
            "secret/{secret} -n {ns} (the PSK) {what} during the owner's first sync{}: the tunnel needs the client's key, which vpnmig does not hold (the journal keeps only its fingerprint)",
            gitops::writer(s)
                .map(|who| format!(" ({who})"))
                .unwrap_or_default()
        ),
        hint: Some(format!(
            "ask the client for the key and put it back (`kubectl create secret generic {secret} -n {ns} --from-literal={key}=<the client's key> --dry-run=client -o yaml | kubectl apply -f -`), put the same key in the repository's copy (or take the owner's markers off the Secret), then `vpnmig verify {name} -n {ns}` compares it with the fingerprint"
        )),
    })
}

/// The first of `others` (windows and what each replaced) whose replaced gateway exists
/// again, as the interference.
async fn back_again(
    cluster: &Cluster,
    others: &[(crate::core::journal::Journal, &str)],
) -> Result<Option<Error>, Error> {
    use crate::core::model::{NEW_GROUP, OLD_GROUP, VERSION};
    // Every one that is back, each named: the user deletes each (attack finding 11).
    let mut back = Vec::new();
    let mut fixes = Vec::new();
    for (j, kind) in others {
        let group = if *kind == "IPsecGateway" {
            OLD_GROUP
        } else {
            NEW_GROUP
        };
        let api = format!("{group}/{VERSION}");
        if let Some(o) = live::get_kept(cluster, &api, kind, &j.namespace, &j.gateway).await? {
            back.push(format!(
                "{} exists again (uid {}, {}), which the window of {}/{} (journal phase {}) replaced: the owner's source still defines it",
                object_ref(kind, &j.gateway, &j.namespace),
                o.pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .unwrap_or("?"),
                gitops::who(&o),
                j.namespace,
                j.gateway,
                j.phase.as_str()
            ));
            fixes.push(format!(
                "check that gateway at once (`vpnmig verify {gw} -n {ns}`); the re-created {kind} fights it for its floating IP until it is deleted (`kubectl delete {} {gw} -n {ns}`) and the repository change is merged",
                kind.to_lowercase(),
                gw = j.gateway,
                ns = j.namespace
            ));
        }
    }
    if back.is_empty() {
        return Ok(None);
    }
    Ok(Some(Error::Stop {
        code: exit::VERIFY_FAILED,
        message: back.join("; and "),
        hint: Some(fixes.join("; ")),
    }))
}

/// A finished window (`replaced`: `IPsecGateway` done, `VPNGateway` rolled back) run
/// again while owners it suspended are still suspended: [`restore`] them now; those that
/// must stay suspended are said, each with what to do first (a warning, not an error).
/// `--dry-run` on a finished window whose owners it still holds: nothing is written
/// (no protection, no policy, no journal) and no sync is started; what a real run would
/// do is said, with where to see whether it can now.
pub(crate) fn restore_dry_run(
    ev: &dyn Emit,
    j: &crate::core::journal::Journal,
    verb: &str,
) -> Outcome {
    let (name, ns) = (&j.gateway, &j.namespace);
    let held: Vec<String> = j
        .gitops
        .iter()
        .filter(|r| r.paused)
        .map(|r| r.owner.display())
        .collect();
    ev.emit(Event::Info(format!(
        "dry run: nothing was changed; the {verb} of {ns}/{name} is finished and its window still holds {} suspended. Without --dry-run, `vpnmig {verb} {name} -n {ns}` checks every window on the owner, its source and what the windows keep, and restores it only if all of that holds (its first sync then acts); `vpnmig status -n {ns}` shows what stands in the way now",
        held.join(", ")
    )));
    Outcome::DryRun
}

pub(crate) async fn restore_finished(
    mut w: Window<'_>,
    replaced: &str,
    force: bool,
) -> Result<Outcome, Error> {
    let left = restore(&mut w, replaced, force).await?;
    // Owners still suspended were each said (a warning with what to do first); the window
    // itself is finished, so a wave counts it done and a script gets 0.
    Ok(if left == 0 {
        Outcome::Done
    } else {
        Outcome::NothingToDo
    })
}

/// A rollback of a VPNGateway that Argo CD or Flux syncs (its repository merged, its
/// owner restored): refused without `--gitops` (exit 4, nothing changed), else its
/// owners are found and recorded in `journal` (replacing an earlier record of the same
/// owner) for [`pause`] to suspend before the delete and [`restore`] to put back.
pub(crate) async fn rollback_owners(
    cluster: &Cluster,
    ev: &dyn Emit,
    name: &str,
    journal: &mut crate::core::journal::Journal,
    mode: Option<Mode>,
) -> Result<(), Error> {
    let Some(gw) = crate::cluster::objects::get(cluster, "VPNGateway", name).await? else {
        return Ok(());
    };
    let managers = gitops::detect(&gw);
    let syncing = gitops::reconciling(&managers);
    if syncing.is_empty() {
        return Ok(());
    }
    let ns = cluster.namespace.as_str();
    // A rollback under way resumes with the choice its journal records (the owners it
    // suspended are still held): its own hint is `vpnmig rollback NAME --yes`, and a
    // refusal asking for `--gitops pause` again would loop (attack 7).
    let under_way = journal.phase.rolling_back();
    let mode = mode.or_else(|| {
        under_way
            .then(|| {
                journal
                    .gitops
                    .iter()
                    .find(|r| r.restored_at.is_none() && r.holds())
                    .map(|r| r.mode)
            })
            .flatten()
    });
    let Some(mode) = mode else {
        return Err(Error::Stop {
            code: exit::BLOCKED,
            message: format!(
                "{} syncs {} ({}): a rollback would have it re-created (and the IPsecGateway pruned); {}",
                gitops::summary(&managers),
                object_ref("VPNGateway", name, ns),
                syncing
                    .iter()
                    .flat_map(|m| m.evidence.iter().cloned())
                    .collect::<Vec<_>>()
                    .join(", "),
                if under_way {
                    format!(
                        "the rollback under way (journal phase {}) was not resumed, and this run changed nothing",
                        journal.phase
                    )
                } else {
                    "nothing was changed".to_string()
                }
            ),
            // The process's own command line (with its `--plan`, `--yes`, …) and the flag.
            hint: Some(format!(
                "let vpnmig suspend it for the rollback: `{}`, and revert the repository change before it is restored",
                crate::error::again_without("--gitops", &["--gitops", "pause"])
            )),
        });
    };
    let inherited: Vec<Record> = journal
        .gitops
        .iter()
        .filter(|r| r.paused)
        .cloned()
        .collect();
    for r in owners(cluster, ev, name, &gw, None, mode, &inherited).await? {
        journal.gitops.retain(|o| o.owner != r.owner);
        journal.gitops.push(r);
    }
    Ok(())
}

/// The live plan's `gitops-sync` findings, each told what its owner does now (issue 11
/// item 1: "live: find the owning Application … and read whether it self-heals/prunes"):
/// ` (live: application/acme -n argocd: syncing automatically, self-heal, prune)`.
pub async fn describe_owners(
    cluster: &Cluster,
    plan: &mut crate::core::plan::Plan,
    source: &crate::core::input::Source,
) {
    let Some(check) = plan
        .checks
        .iter_mut()
        .find(|c| c.id == crate::core::checks::GITOPS_SYNC)
    else {
        return;
    };
    if check.findings.is_empty() {
        return;
    }
    let (ns, name) = (
        cluster.namespace.as_str(),
        source.gateway.metadata.name.as_deref().unwrap_or_default(),
    );
    let secret_name = &source.gateway.spec.auth.psk_secret_ref.name;
    let secret = source
        .secrets
        .iter()
        .find(|s| s["metadata"]["name"].as_str() == Some(secret_name));
    // In the check's order: the gateway's managers, then the Secret's.
    let managers: Vec<gitops::Manager> = std::iter::once(&source.raw)
        .chain(secret)
        .flat_map(|o| {
            gitops::reconciling(&gitops::detect(o))
                .into_iter()
                .cloned()
                .collect::<Vec<_>>()
        })
        .collect();
    for (f, m) in check.findings.iter_mut().zip(managers) {
        let Some(owner) = &m.owner else { continue };
        let live = match live::find(cluster, owner).await {
            Ok(Found::One(o, v)) => format!(
                "{}: {}",
                o.display(),
                how(&gitops::owner_state(&v, "IPsecGateway", ns, name))
            ),
            Ok(Found::None) => {
                // Nothing to suspend: `pause` would be refused; `ignore` is the way
                // (attack finding: the fix advised `pause`).
                f.fix = Some(format!(
                    "vpnmig cannot suspend an owner the cluster does not have: make sure nothing syncs it, then `vpnmig cutover {name} -n {ns} --gitops ignore` (the window still stops on interference)"
                ));
                format!("the cluster has no {} {}", owner.kind, owner.name)
            }
            Ok(Found::Many(all)) => format!(
                "{} {} exists in namespaces {}",
                owner.kind,
                owner.name,
                all.iter()
                    .filter_map(|(o, _)| o.namespace.as_deref())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Err(e) => format!("{} could not be read: {e}", owner.display()),
        };
        f.message.push_str(&format!(" (live: {live})"));
    }
}
