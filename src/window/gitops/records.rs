//! The windows' records as a restore keeps them: each window's journal and the archived
//! journals of its earlier windows (issue 21 items 1 and 7). The restore protects them from
//! the owner's prune as it protects the PSK Secret ([`keep`]), whatever the owner's markers
//! say before its sync (a controller or a namespace policy can stamp its markers on every
//! ConfigMap of the namespace: a21j 05, the journal pruned), watches them through its first
//! sync ([`settle`]), and writes back from its own copies what that sync deleted anyway.

use super::*;

/// One ConfigMap that holds a window's record.
#[derive(Clone, Debug)]
pub(super) struct Kept {
    pub ns: String,
    pub name: String,
    /// What it is, as said: `the window's journal`, `the journal of the window of ns/gw`,
    /// `the archived record of window 1 of ns/gw`.
    pub what: String,
    /// The journal it holds, as read before the restore, and for an archive its window's
    /// number: what is written back if the first sync deletes it.
    pub copy: Option<(crate::core::journal::Journal, Option<u32>)>,
}

impl Kept {
    /// `configmap/vpnmig-acme -n tenant-acme (the window's journal)`.
    pub fn display(&self) -> String {
        format!(
            "{} ({})",
            object_ref("ConfigMap", &self.name, &self.ns),
            self.what
        )
    }
}

/// The ConfigMaps that hold window `j`'s records, without copies: its journal, then the
/// archives its journal lists (oldest first). `mine`: `j` is the window that runs.
pub(super) fn records_of(j: &crate::core::journal::Journal, mine: bool) -> Vec<Kept> {
    let whose = if mine {
        String::new()
    } else {
        format!(" of the window of {}/{}", j.namespace, j.gateway)
    };
    let mut out = vec![Kept {
        ns: j.namespace.clone(),
        name: crate::core::journal::object_name(&j.gateway),
        what: if mine {
            "the window's journal".into()
        } else {
            format!("the journal{whose}")
        },
        copy: None,
    }];
    for e in &j.earlier_windows {
        out.push(Kept {
            ns: j.namespace.clone(),
            name: e.config_map.clone(),
            what: format!(
                "the archived record of window {} of {}/{}",
                e.window, j.namespace, j.gateway
            ),
            copy: None,
        });
    }
    out
}

/// A cluster handle for namespace `ns` (another window's journal lives in its own).
fn in_namespace(cluster: &Cluster, ns: &str) -> Cluster {
    let mut c = cluster.clone();
    c.namespace = ns.to_string();
    c
}

/// The records of `windows` (this window first), each with the copy read now: this
/// window's journal as the run holds it, another window's as listed, an archive as the
/// cluster holds it (one that cannot be read has no copy: if the sync deletes it, that is
/// said as lost).
pub(super) async fn read_records(
    w: &Window<'_>,
    windows: &[(crate::core::journal::Journal, &str)],
) -> Vec<Kept> {
    let mut out = Vec::new();
    for (j, _) in windows {
        let mine = (j.namespace.as_str(), j.gateway.as_str()) == (w.ns(), w.name());
        for mut k in records_of(j, mine) {
            if k.name == crate::core::journal::object_name(&j.gateway) {
                k.copy = Some((if mine { w.journal.clone() } else { j.clone() }, None));
            } else if let Some(e) = j.earlier_windows.iter().find(|e| e.config_map == k.name)
                && let Ok(Some((a, _))) = journal::read_archived_at(
                    &in_namespace(w.cluster, &k.ns),
                    &j.gateway,
                    e.window,
                    &k.name,
                )
                .await
            {
                k.copy = Some((a, Some(e.window)));
            }
            out.push(k);
        }
    }
    out
}

/// The records of `records` the cluster no longer has. Errors: one that cannot be read.
pub(super) async fn records_gone<'a>(
    cluster: &Cluster,
    records: &'a [Kept],
) -> Result<Vec<&'a Kept>, Error> {
    let mut gone = Vec::new();
    for k in records {
        let obj = live::get_kept(cluster, "v1", "ConfigMap", &k.ns, &k.name).await?;
        // One being deleted is as good as gone: nothing brings it back.
        if obj
            .as_ref()
            .is_none_or(|o| o.pointer("/metadata/deletionTimestamp").is_some())
        {
            gone.push(k);
        }
    }
    Ok(gone)
}

/// During the owner's first sync: the stop when `records` are not all there, or (Argo CD)
/// when the sync put the owner's markers on one (its source does not define it: it reads
/// OutOfSync for good, and without the protection would delete it). `None`: they hold.
pub(super) async fn records_held(
    w: &Window<'_>,
    owner: &gitops::OwnerRef,
    replaced: &str,
    records: &[Kept],
) -> Result<Option<Error>, Error> {
    let gone = records_gone(w.cluster, records).await?;
    if !gone.is_empty() {
        return Ok(Some(records_gone_stop(owner, &gone)));
    }
    if owner.kind != "Application" {
        return Ok(None);
    }
    for k in records {
        let Some(obj) = live::get_kept(w.cluster, "v1", "ConfigMap", &k.ns, &k.name).await? else {
            continue;
        };
        if gitops::tracks(owner, &obj) {
            let (why, todo) =
                argo_tracks_record(owner, &obj, &k.display(), replaced, w.name(), w.ns());
            return Ok(Some(Error::Stop {
                code: exit::VERIFY_FAILED,
                message: why,
                hint: Some(todo.into()),
            }));
        }
    }
    Ok(None)
}

/// The stop when the owner's first sync deleted records (`gone`): the interference, for
/// [`settle`]; the restore then suspends the owner again and [`write_back`] says what
/// holds.
pub(super) fn records_gone_stop(owner: &gitops::OwnerRef, gone: &[&Kept]) -> Error {
    Error::Stop {
        code: exit::VERIFY_FAILED,
        message: format!(
            "{} {} deleted during {}'s first sync (pruned with its markers on {}, or deleted by someone else), and with {} the window's change record and its hash chain",
            gone.iter()
                .map(|k| k.display())
                .collect::<Vec<_>>()
                .join(", "),
            if gone.len() == 1 { "was" } else { "were" },
            owner.display(),
            if gone.len() == 1 { "it" } else { "them" },
            if gone.len() == 1 { "it" } else { "them" },
        ),
        hint: Some(crate::window::error::hint!(
            "find what put {}'s markers on {} or deleted {} (`kubectl get configmaps -n {} --show-labels`; a namespace policy, a controller that stamps its markers, one that does not honour the prune protection) and stop it",
            owner.display(),
            if gone.len() == 1 { "it" } else { "them" },
            if gone.len() == 1 { "it" } else { "them" },
            gone.first().map(|k| k.ns.as_str()).unwrap_or_default()
        )),
    }
}

/// After the restore was undone (the owner suspended again): write back each record of
/// `gone` from its copy, as it was before the restore (a journal under its name, an archive
/// under its number), and say plainly what holds and what was lost. Never an error: what
/// cannot be written back is said as lost.
pub(super) async fn write_back(w: &Window<'_>, gone: &[Kept]) -> String {
    let mut back = Vec::new();
    let mut lost = Vec::new();
    for k in gone {
        let there = in_namespace(w.cluster, &k.ns);
        let written = match &k.copy {
            // This window's journal as the run holds it now (the protections recorded
            // since the copy included).
            Some((j, None)) if (j.namespace.as_str(), j.gateway.as_str()) == (w.ns(), w.name()) => {
                journal::write(&there, &w.journal, false)
                    .await
                    .map_err(|e| e.to_string())
            }
            Some((j, None)) => journal::write(&there, j, false)
                .await
                .map_err(|e| e.to_string()),
            Some((j, Some(n))) => match journal::archive(&there, j, *n).await {
                Ok((_, name)) if name == k.name => Ok(()),
                Ok((_, name)) => Err(format!("its name is taken: it is now ConfigMap {name}")),
                Err(e) => Err(e.to_string()),
            },
            None => Err("vpnmig holds no copy of it".into()),
        };
        match written {
            Ok(()) => back.push(k.display()),
            Err(why) => lost.push(format!("{} ({why})", k.display())),
        }
    }
    let mut out = Vec::new();
    if !back.is_empty() {
        out.push(format!(
            "vpnmig wrote {} back from this run's copy, as {} before the restore, history and hash chain included (`vpnmig report {} -n {}` prints the record); the owner is suspended again, so nothing prunes {} now",
            back.join(", "),
            if back.len() == 1 { "it stood" } else { "they stood" },
            w.name(),
            w.ns(),
            if back.len() == 1 { "it" } else { "them" }
        ));
    }
    if !lost.is_empty() {
        out.push(format!(
            "lost: {} (the cluster no longer holds that record; the bundle of a cutover, on the machine that ran it, keeps the plan and the old IPsecGateway for `vpnmig rollback NAME --plan DIR`, not the record)",
            lost.join(", ")
        ));
    }
    out.join("; ")
}
