//! After the restore: the owner settled (or why its first sync went unseen, and what to do
//! then), the PSK compared, the dry run and the finish of a restore, and the owners of a
//! rollback.

use super::*;

/// How long a restored owner's first sync is watched (bounded like every wait).
pub(super) const SETTLE: std::time::Duration = std::time::Duration::from_secs(30);

/// Watch a restored owner until its status says it synced (at most [`SETTLE`]), while
/// the window's objects stay as they are: after a cutover the targets as applied and no
/// IPsecGateway; after a rollback no VPNGateway. `others`: the other windows on the
/// owner and what each replaced, which must not come back either (attack finding A2: a
/// sync that re-created another window's old gateway was called "as it was"). `records`:
/// the windows' journals and archived records, which must stay (a21j 05: the journal
/// pruned, and the restore said "as it was"), and, for Argo CD, must not become the
/// owner's. `Ok`: whether its status said it synced within [`SETTLE`]. Errors: the
/// interference.
pub(super) async fn settle(
    w: &Window<'_>,
    owner: &gitops::OwnerRef,
    replaced: &str,
    others: &[(crate::core::journal::Journal, &str)],
    records: &[Kept],
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
            if let Some(stop) = records_held(w, owner, replaced, records).await? {
                return Err(stop);
            }
            if let Some(stop) = new_objects_tracked(w, owner, replaced).await? {
                return Err(stop);
            }
            // Another gateway its sync created that claims the window's floating IP (a21m
            // B15, B18: a renamed copy of the old gateway, and "as it was").
            if let Some(stop) = claimed_quietly(w, replaced, Some(owner)).await? {
                return Err(stop);
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
        super::super::steps::unless_interfered(cluster, &name, &w.journal.targets, synced).await?
    } else {
        // The IPsecGateway the rollback re-created must stay as saved, and the VPNGateway
        // gone.
        let kept = super::super::steps::changed(cluster, "IPsecGateway", old.iter().collect());
        tokio::select! {
            r = super::super::steps::unless_recreated(cluster, "VPNGateway", &name, "rollback", synced) => r?,
            e = Box::pin(kept) => return Err(e),
        }
    };
    // Once synced, one last look: a change that landed before the watches began is not
    // an event they saw (attack finding: a sync at once raced them).
    let intact = if replaced == "IPsecGateway" {
        super::super::steps::targets_intact(cluster, &w.journal.targets).await
            && crate::cluster::objects::get(cluster, "IPsecGateway", &name)
                .await?
                .is_none()
    } else {
        super::super::steps::targets_intact(cluster, &old).await
            && crate::cluster::objects::get(cluster, "VPNGateway", &name)
                .await?
                .is_none()
    };
    psk_held().await?;
    if let Some(back) = back_again(cluster, others).await? {
        return Err(back);
    }
    if let Some(stop) = records_held(w, owner, replaced, records).await? {
        return Err(stop);
    }
    if let Some(stop) = new_objects_tracked(w, owner, replaced).await? {
        return Err(stop);
    }
    if let Some(stop) = claimed_quietly(w, replaced, Some(owner)).await? {
        return Err(stop);
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
                hint: Some(crate::window::error::hint!(
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

/// During an Argo CD Application's first sync after a cutover: the stop when the sync put
/// its markers on a new object of the window that carries vpnmig's prune protection and
/// that its source does not define (its status: requires pruning; a21p E21). Kept, but the
/// Application reads OutOfSync for good: said at once, never a watch that times out.
/// `None`: none is.
pub(super) async fn new_objects_tracked(
    w: &Window<'_>,
    owner: &gitops::OwnerRef,
    replaced: &str,
) -> Result<Option<Error>, Error> {
    if owner.kind != "Application" || replaced != "IPsecGateway" {
        return Ok(None);
    }
    let Found::One(_, o) = live::find(w.cluster, owner).await? else {
        return Ok(None);
    };
    for t in &w.journal.targets {
        let s = |p: &str| t.pointer(p).and_then(Value::as_str).unwrap_or_default();
        let (api_version, kind, name) = (s("/apiVersion"), s("/kind"), s("/metadata/name"));
        let ns = Some(s("/metadata/namespace"))
            .filter(|n| !n.is_empty())
            .unwrap_or(w.journal.namespace.as_str());
        let Some(obj) = live::get_kept(w.cluster, api_version, kind, ns, name).await? else {
            continue;
        };
        if !gitops::tracks(owner, &obj) || !gitops::protected(&owner.kind, &obj) {
            continue;
        }
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        if matches!(
            gitops::argo_says(&o, group, kind, ns, name),
            Some(gitops::ArgoSays::Prunes)
        ) {
            let (why, todo) = argo_tracks_new(
                owner,
                &obj,
                &kept_ref(kind, name, ns),
                replaced,
                w.name(),
                w.ns(),
            );
            return Ok(Some(Error::Stop {
                code: exit::VERIFY_FAILED,
                message: why,
                hint: Some(todo.into()),
            }));
        }
    }
    Ok(None)
}

/// Why a restored owner's status did not say it synced (its own words: a Flux `Ready`
/// condition, Argo CD's sync status), for [`restore`] and the journal.
pub(super) fn unseen_why(owner: &Value) -> String {
    // Argo CD's own terms: its sync status, its last operation, and what it tracks that
    // its source does not define (a21q Q08b: it was worded as Flux's Ready condition).
    if owner["kind"] == "Application"
        && let Some(st) = owner.pointer("/status/sync/status").and_then(Value::as_str)
    {
        let op = owner
            .pointer("/status/operationState")
            .and_then(|o| o["phase"].as_str().map(|p| (p, o["message"].as_str())))
            .map(|(p, m)| {
                format!(
                    "; its last operation {p}{}",
                    m.filter(|m| !m.is_empty())
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                )
            })
            .unwrap_or_default();
        let pruning: Vec<String> = owner
            .pointer("/status/resources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|r| r["requiresPruning"].as_bool() == Some(true))
            .map(|r| {
                let s = |k: &str| r[k].as_str().unwrap_or_default();
                crate::core::model::object_ref(s("kind"), s("name"), s("namespace"))
            })
            .collect();
        let pruning = match pruning.len() {
            0 => String::new(),
            n => format!(
                "; it tracks {}, which its source does not define (requiresPruning): the prune protection keeps its sync from deleting {}, but the Application then reads OutOfSync (requires pruning) for good",
                pruning.join(", "),
                if n == 1 { "it" } else { "them" }
            ),
        };
        return format!("its sync status {st}{op}{pruning}");
    }
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
    let find = if owner.kind == "Application" {
        format!(
            "Find why it does not sync (`kubectl get {} {} -n {ons} -o yaml`: its status.sync.status, its status.operationState, and each entry of status.resources with requiresPruning: tracked, but not defined by its source; `argocd app diff {}` shows them); what it tracks and its source does not define: put it in the repository as the window made it live (the plan's rewrite defines it), or take its markers off",
            owner.resource(),
            owner.name,
            gitops::argocd_app(owner)
        )
    } else {
        format!(
            "Find why it does not sync (`kubectl get {} {} -n {ons} -o yaml`: its Ready condition, its dependsOn, its source's Ready)",
            owner.resource(),
            owner.name,
        )
    };
    format!(
        "{find}, then `vpnmig {verb} {name} -n {ns}{resume}` restores it and watches its first sync again, after protecting from prune what the window keeps (no resume by hand is offered: nothing would protect or watch)"
    )
}

/// The PSK Secret `s` as the restore's first sync is held to it: its uid and its key's
/// fingerprint in the journal's scheme.
pub(super) fn psk_seen(
    j: &crate::core::journal::Journal,
    s: &Value,
) -> (Option<String>, Option<String>) {
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
pub(super) fn psk_changed(
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
        hint: Some(crate::window::error::hint!(
            "ask the client for the key and put it back (`kubectl create secret generic {secret} -n {ns} --from-literal={key}=<the client's key> --dry-run=client -o yaml | kubectl apply -f -`), put the same key in the repository's copy (or take the owner's markers off the Secret), then `{}` compares it with the fingerprint",
            crate::window::error::Run::verify(name, ns)
        )),
    })
}

/// The first of `others` (windows and what each replaced) whose replaced gateway exists
/// again, as the interference.
pub(super) async fn back_again(
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
            let withdrawn = withdraw_vouch(cluster, j).await;
            back.push(format!(
                "{} exists again (uid {}, {}), which the window of {}/{} (journal phase {}) replaced: the owner's source still defines it{withdrawn}",
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
        hint: Some(fixes.join("; ").into()),
    }))
}

/// The cluster disproved what the user of window `j` vouched (a21f B1): its replaced
/// gateway is back at the owner's first sync. The vouch is withdrawn from its journal (read
/// again, in its own namespace), so that `status` names the window again and the advised
/// restore does not re-create it once more (a21g 10: the disproven vouch stayed, and the
/// advised command looped on the floating IP). Returns the words said.
async fn withdraw_vouch(cluster: &Cluster, j: &crate::core::journal::Journal) -> String {
    if !j.gitops.iter().any(|r| r.vouched.is_some()) {
        return String::new();
    }
    let mut there = cluster.clone();
    there.namespace = j.namespace.clone();
    let fresh = match journal::read(&there, &j.gateway).await {
        Ok(Some(f)) => f,
        Ok(None) => return String::new(),
        Err(e) => {
            return format!(
                " (its user vouched that it does not: that vouch could not be withdrawn from its journal ({e}); do not rely on it)"
            );
        }
    };
    let mut fresh = fresh;
    for r in &mut fresh.gitops {
        r.vouched = None;
    }
    match journal::write(&there, &fresh, false).await {
        Ok(()) => {
            " (its user vouched that it does not: that vouch is withdrawn from its journal)".into()
        }
        Err(e) => format!(
            " (its user vouched that it does not: that vouch could not be withdrawn from its journal ({e}); do not rely on it)"
        ),
    }
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
            hint: Some(crate::window::error::hint!(
                "let vpnmig suspend it for the rollback: `{}`, and revert the repository change before it is restored",
                crate::window::error::Next::again_without("--gitops", &["--gitops", "pause"])
            )),
        });
    };
    let inherited: Vec<Record> = journal
        .gitops
        .iter()
        .filter(|r| r.paused)
        .cloned()
        .collect();
    // A rollback has asked every other permission already (`require_permissions`).
    for r in owners(cluster, ev, name, &gw, None, mode, &inherited, false).await? {
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
    let (ns, name) = (
        cluster.namespace.as_str(),
        source.gateway.metadata.name.as_deref().unwrap_or_default(),
    );
    let Some(check) = failing_sync_check(plan) else {
        return;
    };
    // The owners only their own status names (a21l A08: a second Kustomization's
    // inventory lists the gateway): each one more finding, as the window holds it.
    // Looked for where a GitOps tool marks the gateway (a gateway no tool marks makes no
    // extra calls).
    let extra = status_only_owners(cluster, &source.raw, ns).await;
    if !extra.is_empty() {
        let object = crate::core::model::object_ref("IPsecGateway", name, ns);
        for (o, v, evidence) in &extra {
            check.findings.push(crate::core::finding::Finding {
                object: object.clone(),
                path: "metadata".into(),
                seen: evidence.clone(),
                wanted: "no Argo CD or Flux sync during the window".into(),
                message: format!(
                    "{} ({}) syncs it, and no marker on it says so: its self-heal re-creates the IPsecGateway after the delete and the old operator takes the floating IP back, its prune deletes the new objects (live: {}: {})",
                    if o.kind == "Application" { "Argo CD" } else { "Flux" },
                    o.display(),
                    o.display(),
                    how(&gitops::owner_state(v, "IPsecGateway", ns, name))
                ),
                fix: Some(format!(
                    "let vpnmig suspend it for the window and restore it after: `vpnmig cutover {name} -n {ns} --gitops pause` (it suspends every owner named here); or suspend it yourself ({}) and pass `--gitops ignore`. docs/gitops.md: merge the repository change (`vpnmig plan {name} -n {ns} --gitops-repo DIR`) before the sync is restored",
                    crate::window::suspend_command(o)
                )),
            });
        }
        check.outcome = crate::core::finding::Outcome::Fail;
        crate::core::live::extend(plan, Vec::new());
    }
    let Some(check) = failing_sync_check(plan) else {
        return;
    };
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

/// The plan's `gitops-sync` check, when it has findings (a GitOps tool marks the gateway).
fn failing_sync_check(
    plan: &mut crate::core::plan::Plan,
) -> Option<&mut crate::core::finding::CheckResult> {
    plan.checks
        .iter_mut()
        .find(|c| c.id == crate::core::checks::GITOPS_SYNC)
        .filter(|c| !c.findings.is_empty())
}

/// The Applications and Kustomizations whose own status names the gateway `raw` and whose
/// markers on it do not ([`every_owner`]'s extra owners): (owner, object, evidence). A
/// refused or failed list finds none (the window says so when it runs).
async fn status_only_owners(
    cluster: &Cluster,
    raw: &Value,
    ns: &str,
) -> Vec<(gitops::OwnerRef, Value, String)> {
    let name = raw["metadata"]["name"].as_str().unwrap_or_default();
    let Ok(named) = live::naming(cluster, "IPsecGateway", ns, name).await else {
        return Vec::new();
    };
    let marked: Vec<gitops::OwnerRef> = gitops::detect(raw)
        .into_iter()
        .filter_map(|m| m.owner)
        .collect();
    named
        .into_iter()
        .filter(|(o, _)| !marked.iter().any(|m| gitops::same_owner(m, o)))
        .map(|(o, v)| {
            let evidence = format!(
                "{} of {} lists it",
                if o.kind == "Application" {
                    "status.resources"
                } else {
                    "status.inventory"
                },
                o.display()
            );
            (o, v, evidence)
        })
        .collect()
}
