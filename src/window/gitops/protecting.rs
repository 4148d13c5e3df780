//! Setting the protections on what the restore keeps: each one recorded in the journal
//! before its patch, read back after, and taken off the journal again when it was refused
//! or did not stay (the annotation that keeps a Kustomization's apply off the PSK Secret,
//! and the prune protection of the owner's controller). Layer: the window engine
//! (`src/window/`), part of `window::gitops`; it writes the journal and the kept objects,
//! and emits events, never prints.

use super::*;

/// Record the protection `record` in this window's journal (record `i`, replacing an
/// earlier one of the same object and annotation) before it is set, then set it with
/// `patch`: the object as it is after the patch, for the read-back.
pub(super) async fn protect_recorded(
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
    match live::patch_kept(
        w.cluster,
        api_version,
        &record.kind,
        &record.namespace,
        &record.name,
        patch,
    )
    .await
    {
        Ok(after) => Ok(after),
        // Not set (refused by RBAC, a webhook): the journal does not claim it.
        Err(e) => {
            unrecord(w, i, record).await?;
            Err(e.into())
        }
    }
}

/// Take protection `record` off this window's journal (record `i`) again: it was not set,
/// or did not stay, and the journal (and `status`) must not claim it.
pub(super) async fn unrecord(
    w: &mut Window<'_>,
    i: usize,
    record: &gitops::Protected,
) -> Result<(), Error> {
    let n = w.journal.gitops[i].protected.len();
    w.journal.gitops[i].protected.retain(|p| p != record);
    if w.journal.gitops[i].protected.len() != n {
        journal::write(w.cluster, &w.journal, false).await?;
    }
    Ok(())
}

/// Set the protections owner record `i`'s controller honours on kept object `obj`
/// (`what`, as said): for a Kustomization and the PSK Secret (`psk`) the annotation that
/// keeps its apply from writing over it ([`gitops::protect_overwrite`]); the prune
/// protection when the owner tracks it, or may once it syncs (`prune`; `is_record`: a
/// window's journal or archived record, protected whatever its markers say now). Each is
/// recorded in the journal before the patch, read back after, and said; one that is
/// refused or does not stay is taken off the journal again and returned as why (with
/// what to do): the owner is not restored then (a21j 05). `Ok(Ok(obj))`: the object as it
/// is now. `undefined`: a new object of the window the owner's status does not show its
/// merged source to define (why, said): protected whatever its markers say now (a21p E21,
/// E24). The restore's check 4 and every hand-over ([`keep`] with `handover`) set them
/// here, and only here.
#[allow(clippy::too_many_arguments)]
pub(super) async fn protect_kept(
    w: &mut Window<'_>,
    i: usize,
    (api_version, kind, ns, name): (&str, &str, &str, &str),
    obj: Value,
    what: &str,
    psk: bool,
    prune: bool,
    is_record: bool,
    handover: bool,
    replaced: &str,
    owner: Option<&Value>,
    undefined: Option<&str>,
) -> Result<Result<Value, (String, String)>, Error> {
    let r = w.journal.gitops[i].owner.clone();
    let again = if handover {
        // The journal no longer holds the owner after a hand-over: a re-run of the
        // window does not set it again (a21i 12b: "already done: nothing to do").
        "put it in the owner's repository before anyone resumes the owner (a re-run of vpnmig does not set it: the journal no longer holds the owner)".to_string()
    } else {
        // A suspended Kustomization's or HelmRelease's status never shows the merge:
        // the plain command would only refuse at the source check (attack 1's loop).
        format!(
            "then `vpnmig {} {} -n {}{}`",
            verb_of(replaced),
            w.name(),
            w.ns(),
            if r.kind == "Application" {
                ""
            } else {
                " --gitops resume"
            }
        )
    };
    let refused = |record: &gitops::Protected, e: &Error| {
        (
            format!(
                "the annotation {}={} could not be set on {what} ({}), so nothing keeps {}'s sync from {} it",
                record.annotation,
                record.value,
                crate::window::error::error_line(e),
                r.display(),
                if gitops::keeps_from_overwrite(record) {
                    "writing over"
                } else {
                    "pruning"
                }
            ),
            format!(
                "set it with a context that may patch it (`kubectl annotate {} {name}{} {}={}`){}{again}",
                kind.to_lowercase(),
                ns_flag(ns),
                record.annotation,
                record.value,
                if handover {
                    ", or "
                } else {
                    // Not restored meanwhile (a21j 05): the window's command, run again,
                    // finds it set and goes on.
                    "; the owner stays suspended until it holds; "
                }
            ),
        )
    };
    let mut obj = obj;
    // The PSK Secret and a Kustomization: a prune protection does not stop its apply
    // from writing Git's copy over the live key (round 4, attack 1). Its controller
    // skips an object whose live copy says `kustomize.toolkit.fluxcd.io/reconcile:
    // disabled`, tracked or not (a source that newly defines it would adopt it).
    if psk && let Some((record, patch)) = gitops::protect_overwrite(&r.kind, &obj) {
        let after = match protect_recorded(w, i, &record, api_version, &patch).await {
            Ok(a) => a,
            Err(e) => return Ok(Err(refused(&record, &e))),
        };
        if !gitops::overwrite_protected(&r.kind, &after) {
            unrecord(w, i, &record).await?;
            return Ok(Err((
                format!(
                    "the annotation {}={} did not stay on {what} (a webhook or controller removed it), and without it the first sync writes the repository's copy of the Secret over the client's key",
                    record.annotation, record.value
                ),
                format!(
                    "find what removes it (`kubectl get secret {name} -n {ns} --show-managed-fields -o yaml`), {again}"
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
        obj = after;
    }
    if !prune {
        return Ok(Ok(obj));
    }
    // The cluster cannot show what the merged source applies (or, handed over, what it
    // will when a person resumes it): the controller is told not to prune it, as it
    // documents.
    let Some((record, patch)) = gitops::protect(&r.kind, &obj) else {
        return Ok(Ok(obj));
    };
    let after = match protect_recorded(w, i, &record, api_version, &patch).await {
        Ok(a) => a,
        Err(e) => return Ok(Err(refused(&record, &e))),
    };
    if !gitops::protected(&r.kind, &after) {
        unrecord(w, i, &record).await?;
        return Ok(Err((
            format!(
                "{} {what}, {}, and the annotation {}={} did not stay on it (a webhook or controller removed it)",
                if is_record || undefined.is_some() {
                    "its sync may prune"
                } else {
                    "it tracks"
                },
                if is_record {
                    "the window's record and its hash chain"
                } else if let Some(u) = undefined {
                    u
                } else if handover {
                    "its resume is left to a person"
                } else {
                    "the cluster does not show whether its source still defines it"
                },
                record.annotation,
                record.value
            ),
            if is_record {
                format!("Find what removes it, {again}; {}", not_restored(w.ns()))
            } else {
                format!(
                    "Find what removes it, {again}; or check by hand that the merged source still defines it ({}); {}",
                    gitops::render_hint(&r),
                    not_restored(w.ns())
                )
            },
        )));
    }
    let keys_only = !w.journal.gitops[i].syncs_gateway();
    let why = if let Some(u) = undefined.filter(|_| keys_only) {
        // An owner of the PSK Secret alone never applied the gateway: its repository is
        // not where the new objects belong (a21s S06b), and the protection stays.
        format!(
            "a new object of the window, and {u}: a sync that finds its markers on it (a namespace policy or a controller can stamp them on every object of the namespace) would prune it, and the client's tunnel with it; {} synced only {} for this window, so its repository need not define it, and the protection stays{}",
            r.display(),
            w.journal.gitops[i].syncs.join(", "),
            if handover {
                ""
            } else {
                "; its first sync is watched for it too"
            },
        )
    } else if let Some(u) = undefined {
        format!(
            "a new object of the window, and {u}: a sync that finds its markers on it (a namespace policy or a controller can stamp them on every object of the namespace) would prune it, and the client's tunnel with it; the repository should define it (the plan's rewrite does){}{}",
            if handover {
                ""
            } else {
                "; its first sync is watched for it too"
            },
            // Taken off by hand once the repository defines it; an Argo CD option list
            // that held other options is left to the person (only Prune=false goes).
            if record.before.is_none() {
                format!(
                    "; once the repository defines it, `kubectl annotate {} {name}{} {}-` takes it off",
                    kind.to_lowercase(),
                    ns_flag(ns),
                    record.annotation
                )
            } else {
                format!(
                    "; once the repository defines it, take {} out of its annotation {}",
                    gitops::prune_protection(&r.kind).1,
                    record.annotation
                )
            }
        )
    } else if is_record {
        format!(
            "a sync that finds its markers on it would prune it, and with it the window's record and its hash chain (a namespace policy or a controller can stamp them on every ConfigMap){}",
            if handover {
                ""
            } else {
                "; its first sync is watched for it too"
            }
        )
    } else if handover {
        format!(
            "vpnmig no longer holds {} and a person resumes it: a source or chart without it would delete it",
            r.display()
        )
    } else {
        format!(
            "the cluster does not show whether its merged source still defines it{}",
            owner
                .and_then(gitops::status_blind)
                .map(|why| format!(": {why}"))
                .unwrap_or_default()
        )
    };
    w.ev.emit(Event::Step(format!(
        "kept {what} from {}'s prune: annotation {}={} ({why}; the journal records it, and it stays)",
        r.display(),
        record.annotation,
        record.value,
    )));
    Ok(Ok(after))
}
