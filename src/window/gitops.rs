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
            ev.emit(Event::Note(format!(
                "{} {} syncs {what} ({}; found by {}): {}",
                m.tool.label(),
                owner.display(),
                how(&state),
                m.evidence.join(", "),
                match (mode, state.active) {
                    (Mode::Pause, true) =>
                        "vpnmig suspends it for the window and restores it at the end",
                    (Mode::Pause, false) => "it is suspended already; vpnmig leaves it as it is",
                    (Mode::Ignore, _) =>
                        "suspended by you; vpnmig stops the window if anything interferes",
                }
            )));
            out.push(Record {
                mode,
                saved: (mode == Mode::Pause && state.active).then(|| gitops::saved(&obj)),
                owner,
                evidence: m.evidence.clone(),
                paused: false,
                restored_at: None,
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
    let before_delete = w.journal.phase < Phase::Deleting;
    if before_delete {
        for r in w.journal.gitops.iter().filter(|r| r.restored_at.is_none()) {
            let Found::One(owner, obj) = live::find(w.cluster, &r.owner).await? else {
                continue;
            };
            for (p, parent) in live_parents(w.cluster, &obj).await? {
                let st = gitops::parent_state(&parent);
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
            match gitops::held(&w.journal.gitops[i], &now) {
                gitops::Held::AsLeft => {}
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
        // never reached writes back the value it still has.
        if !recorded {
            w.journal.gitops[i].paused = true;
            journal::write(w.cluster, &w.journal, false).await?;
        }
        // Sent again on every run before the delete (it is idempotent): the journal may
        // say suspended for a patch that never landed.
        live::patch(
            w.cluster,
            &owner,
            &gitops::pause_patch(&owner_shape(&owner)),
        )
        .await?;
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
    if before_delete {
        held(w, verb, SETTLE_PAUSE).await?;
    }
    Ok(())
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
            if let gitops::Held::ReEnabled { now } = gitops::held(r, &obj) {
                let parents = live_parents(w.cluster, &obj).await?;
                let active = parents
                    .iter()
                    .map(|(p, v)| (p, gitops::parent_state(v)))
                    .find(|(_, st)| st.active);
                if let Some((p, st)) = active {
                    return Err(parent_stop(w, verb, &owner, p, &st, Some(&now)));
                }
                let (name, ns) = (w.name(), w.ns());
                let writers = writers(&obj);
                return Err(Error::Stop {
                    code: exit::REFUSED,
                    message: format!(
                        "{} syncs automatically again ({now}; {writers}): the window's suspension did not hold, read back from the cluster; no gateway was deleted",
                        owner.display()
                    ),
                    hint: Some(format!(
                        "nothing in its metadata names a parent: find who re-enabled it (`kubectl get {} {} -n {} --show-managed-fields -o yaml`) and stop that, then `vpnmig {verb} {name} -n {ns} --gitops pause` again; `vpnmig rollback {name} -n {ns}` closes the journal and keeps the IPsecGateway",
                        owner.resource(),
                        owner.name,
                        owner.namespace.as_deref().unwrap_or("argocd")
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
    let ns = owner["metadata"]["namespace"].as_str();
    let mut out = Vec::new();
    for mut p in gitops::parents(owner) {
        let found = match live::find(cluster, &p.owner).await? {
            Found::One(o, v) => Some((o, v)),
            Found::Many(all) => all.into_iter().find(|(o, _)| o.namespace.as_deref() == ns),
            Found::None => None,
        };
        if let Some((o, v)) = found {
            p.owner = o;
            out.push((p, v));
        }
    }
    Ok(out)
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
        message: format!("{what}; no gateway was deleted"),
        hint: Some(format!(
            "{}, or change its source so that {} is suspended, then `vpnmig {verb} {name} -n {ns} --gitops pause` again; `vpnmig rollback {name} -n {ns}` closes the journal and keeps the IPsecGateway",
            parent_fix(&p.owner),
            owner.display()
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
    for m in gitops::reconciling(&gitops::detect(obj)) {
        let Some(wanted) = &m.owner else { continue };
        let Found::One(owner, live_obj) = live::find(w.cluster, wanted).await? else {
            continue;
        };
        let record = w.journal.gitops.iter().find(|r| r.owner == owner);
        let st = gitops::owner_state(&live_obj, "IPsecGateway", ns, name);
        let take_out = format!(
            "or take the IPsecGateway out of its source and merge that (`vpnmig plan {name} -n {ns} --gitops-repo DIR` writes the change)"
        );
        if !st.active && record.is_some_and(|r| r.paused || r.saved.is_none()) {
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
                .find(|(_, v)| gitops::parent_state(v).active)
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
            return Ok(Some((
                format!(
                    "{} re-created it: {whose} ({}{by})",
                    owner.display(),
                    how(&st)
                ),
                format!(
                    "suspend {} first ({}{}), {take_out}",
                    owner.display(),
                    suspend_command(&owner),
                    parents
                        .iter()
                        .find(|(_, v)| gitops::parent_state(v).active)
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

/// Restore every owner this window suspended, once its source (as the cluster shows it)
/// no longer defines `replaced` (`IPsecGateway` after a cutover, `VPNGateway` after a
/// rollback): restoring it before would re-create what the window just replaced. With
/// `force` (`--gitops resume`) the user says the repository is merged: restored
/// whatever the status says. What is not restored is said, with the command.
///
/// Returns how many owners are still suspended by the window.
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
        // A policy someone set since the pause is theirs: never overwritten; the journal
        // no longer holds the owner (issue 21 item 4).
        if let Found::One(_, now) = live::find(w.cluster, &r.owner).await? {
            let changed = match gitops::held(&r, &now) {
                gitops::Held::AsLeft => None,
                gitops::Held::ReEnabled { now } => Some(("re-enabled by someone else", now)),
                gitops::Held::Changed { now } => {
                    Some(("its policy changed since the window paused it", now))
                }
            };
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
        let lists = match live::find(w.cluster, &r.owner).await? {
            Found::One(_, obj) => gitops::owner_state(&obj, replaced, &ns, &name).source_lists,
            _ => None,
        };
        // Safe only when its source no longer defines what the window replaced. Whether
        // the rest of the source matches what the window made live cannot be told before
        // (Argo CD shows objects it does not track yet as OutOfSync): the first sync after
        // the restore is watched instead (`settle`).
        if lists != Some(false) && !force {
            left += 1;
            let why = match lists {
                Some(true) => format!(
                    "its source still defines {} (status of {})",
                    object_ref(replaced, &name, &ns),
                    r.owner.display()
                ),
                _ => format!(
                    "the cluster does not show whether its source still defines {}",
                    object_ref(replaced, &name, &ns)
                ),
            };
            w.ev.emit(Event::Warning(format!(
                "{} stays suspended: {why}, and restoring its sync now would re-create it (and take the floating IP). {}, then `vpnmig {verb} {name} -n {ns}` restores it once the owner's status no longer lists it (`--gitops resume`: whatever the status says), or by hand: `{}`",
                r.owner.display(),
                if replaced == "IPsecGateway" {
                    format!("Merge the repository change (`vpnmig plan {name} -n {ns} --gitops-repo DIR` writes it)")
                } else {
                    "Revert the repository change".to_string()
                },
                gitops::restore_command(&r.owner, saved)
            )));
            continue;
        }
        // The PSK Secret the owner tracks but its source no longer defines would be
        // pruned by its first sync, and its value is nowhere else (attack finding).
        if !force && let Some(why) = prunes_psk(w, &r.owner).await? {
            left += 1;
            w.ev.emit(Event::Warning(format!(
                "{} stays suspended: {why}; restoring its sync would delete the PSK Secret. Put the Secret back in the repository (or take the owner's markers off it), then `vpnmig {verb} {name} -n {ns}`",
                r.owner.display()
            )));
            continue;
        }
        live::patch(w.cluster, &r.owner, &gitops::restore_patch(saved)).await?;
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
        if let Err(e) = settle(w, &r.owner, replaced).await {
            let _ = live::patch(
                w.cluster,
                &r.owner,
                &gitops::pause_patch(&owner_shape(&r.owner)),
            )
            .await;
            return Err(Error::Stop {
                code: exit::VERIFY_FAILED,
                message: format!(
                    "{} was restored and its sync interfered, so vpnmig suspended it again: {}",
                    r.owner.display(),
                    crate::error::error_line(&e)
                ),
                hint: Some(format!(
                    "its source is not what the window made live: fix the repository, check the gateway (`vpnmig verify {name} -n {ns}`), then `vpnmig {verb} {name} -n {ns}` restores it again"
                )),
            });
        }
        w.journal.gitops[i].paused = false;
        w.journal.gitops[i].restored_at = Some(now());
        journal::write(w.cluster, &w.journal, false).await?;
        w.ev.emit(Event::Step(format!(
            "{} synced: what the window made live is as it was",
            r.owner.display()
        )));
    }
    Ok(left)
}

/// How long a restored owner's first sync is watched (bounded like every wait).
const SETTLE: std::time::Duration = std::time::Duration::from_secs(30);

/// Watch a restored owner until its status says it synced (at most [`SETTLE`]), while
/// the window's objects stay as they are: after a cutover the targets as applied and no
/// IPsecGateway; after a rollback no VPNGateway. Errors: the interference.
async fn settle(w: &Window<'_>, owner: &gitops::OwnerRef, replaced: &str) -> Result<(), Error> {
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
    // The owner lives in another namespace than the gateway, and the PSK Secret is
    // another kind: both are read, not watched, twice a second (bounded by SETTLE).
    let synced = async {
        let started = std::time::Instant::now();
        while started.elapsed() < SETTLE {
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            if crate::cluster::objects::secret(cluster, &secret)
                .await?
                .is_none()
            {
                return Err(psk_gone());
            }
            if let Found::One(_, o) = live::find(cluster, owner).await? {
                let st = gitops::owner_state(&o, replaced, cluster.namespace.as_str(), &name);
                let flux_ready = o["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                });
                if st.synced == Some(true) || (st.synced.is_none() && flux_ready) {
                    return Ok(());
                }
            }
        }
        Ok::<(), Error>(())
    };
    let old = [w.journal.old_manifest.clone()];
    if replaced == "IPsecGateway" {
        super::steps::unless_interfered(cluster, &name, &w.journal.targets, synced).await?;
    } else {
        // The IPsecGateway the rollback re-created must stay as saved, and the VPNGateway
        // gone.
        let kept = super::steps::changed(cluster, "IPsecGateway", old.iter().collect());
        tokio::select! {
            r = super::steps::unless_recreated(cluster, "VPNGateway", &name, "rollback", synced) => r?,
            e = Box::pin(kept) => return Err(e),
        }
    }
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
    if crate::cluster::objects::secret(cluster, &secret)
        .await?
        .is_none()
    {
        return Err(psk_gone());
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
    Ok(())
}

/// Why restoring `owner` would prune the PSK Secret: the Secret carries its markers (it
/// tracks it) and its status no longer lists it among what its source defines (Argo CD
/// `status.resources`, Flux `status.inventory`). `None`: it would not, or cannot be told.
async fn prunes_psk(w: &Window<'_>, owner: &gitops::OwnerRef) -> Result<Option<String>, Error> {
    let secret_name = &w.journal.psk_secret;
    let Some(secret) = crate::cluster::objects::secret(w.cluster, secret_name).await? else {
        return Ok(None);
    };
    let tracked = gitops::detect(&secret).iter().any(|m| {
        m.owner
            .as_ref()
            .is_some_and(|o| o.name == owner.name && o.kind == owner.kind)
    });
    if !tracked {
        return Ok(None);
    }
    let Found::One(_, obj) = live::find(w.cluster, owner).await? else {
        return Ok(None);
    };
    let ns = w.ns();
    let listed = match obj["kind"].as_str() {
        Some("Application") => obj
            .pointer("/status/resources")
            .and_then(Value::as_array)
            .map(|rs| {
                rs.iter()
                    .any(|r| r["kind"] == "Secret" && r["name"] == secret_name.as_str())
            }),
        _ => obj
            .pointer("/status/inventory/entries")
            .and_then(Value::as_array)
            .map(|es| {
                es.iter()
                    .any(|e| e["id"] == format!("{ns}_{secret_name}__Secret").as_str())
            }),
    };
    Ok((listed == Some(false)).then(|| {
        format!(
            "it tracks secret/{secret_name} -n {ns} (the PSK), and its source no longer defines it (status of {})",
            owner.display()
        )
    }))
}

/// A finished window (`replaced`: `IPsecGateway` done, `VPNGateway` rolled back) run
/// again while owners it suspended are still suspended: [`restore`] them now; those that
/// must stay suspended are said, each with what to do first (a warning, not an error).
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
    let Some(mode) = mode else {
        return Err(Error::Stop {
            code: exit::BLOCKED,
            message: format!(
                "{} syncs {} ({}): a rollback would have it re-created (and the IPsecGateway pruned); nothing was changed",
                gitops::summary(&managers),
                object_ref("VPNGateway", name, ns),
                syncing
                    .iter()
                    .flat_map(|m| m.evidence.iter().cloned())
                    .collect::<Vec<_>>()
                    .join(", ")
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
