//! The cutover of a window whose repository change was merged early (C09/C10): the
//! owner's sync applied the new objects before the window's delete. They are adopted only
//! when they are what the plan applies; then the window goes on as after its own apply.

use super::*;
use crate::window::early::{self, Merged};

/// Finish window `j` with the objects its owner's source applied (`m`): refused, nothing
/// changed, when any pinned value (or any other field the plan sets) differs from the
/// plan, a peer is missing or extra, or the PSK Secret is gone or changed. Otherwise the
/// owners are suspended as before any apply (their parents checked), the objects read and
/// compared again, the journal records who applied them (`appliedBySource`, phase
/// `applied`, their uids) and the window goes on: FIPAttached, Ready, the tunnels, `done`
/// and the owners' restore.
#[allow(clippy::too_many_arguments)]
pub(super) async fn adopt(
    cluster: &Cluster,
    held: Option<&lock::Lock>,
    opts: &CutoverOptions,
    ev: &dyn Emit,
    confirm: &mut impl Confirm,
    j: Journal,
    by: String,
    m: Merged,
) -> Result<Outcome, Error> {
    let (name, ns) = (j.gateway.clone(), j.namespace.clone());
    // `--plan DIR`: the journal must be of that plan, as for any resume.
    super::resuming::plan_is_the_journal_s(
        opts,
        ev,
        &j,
        "; nothing was changed",
        crate::window::error::hint!(
            "run without --plan (the journal is what was started): `{}`",
            crate::window::error::Run::cutover(&name, &ns)
        ),
    )?;
    refuse_differences(&j, &m)?;
    let Some(secret) = objects::secret(cluster, &j.psk_secret).await? else {
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "PSK secret/{} -n {ns} does not exist: {} cannot authenticate the client; nothing was changed",
                j.psk_secret,
                m.objects(&ns)
            ),
            hint: Some(crate::window::error::hint!(
                "re-create it with the client's key from your own records (vpnmig never stores a key): `kubectl create secret generic {} -n {ns} --from-literal={}=<the client's key>`, then `{}`",
                j.psk_secret,
                j.psk_key(),
                crate::window::error::Run::cutover(&name, &ns)
            )),
        });
    };
    steps::psk_unchanged(ev, &j, &secret)?;
    refuse_claimed(cluster, ev, &j, &m).await?;
    ev.emit(Event::Warning(if m.proven {
        format!(
            "ipsecgateway/{name} -n {ns} is gone and {} were applied by {}: the repository change was merged before the window's delete (journal phase {}); every pinned value equals the plan's, so the cutover adopts them and goes on",
            m.objects(&ns),
            m.by,
            j.phase
        )
    } else {
        // a21o D04: a field manager's name alone proves no merge.
        format!(
            "ipsecgateway/{name} -n {ns} is gone and {} were applied by {}: the cluster does not show that the repository change was merged before the window's delete (journal phase {}); every pinned value equals the plan's, so the cutover adopts them and goes on, and the journal records who wrote them, not a merge",
            m.objects(&ns),
            m.by,
            j.phase
        )
    }));
    let guard = start_guard(cluster, ev, &name, opts, Phase::Applied).await?;
    ev.emit(Event::Stage(Stage::Confirm));
    confirm
        .confirm(Ask {
            gateway: name.clone(),
            action: "finish the cutover (adopting what its owner's source applied) of",
            dry_run: opts.dry_run,
            summary: Summary::Resume {
                context: cluster.context.clone(),
                journal: Box::new(j.clone()),
            },
        })
        .await?;
    if opts.dry_run {
        ev.emit(Event::Info(
            "dry run: nothing was changed; without --dry-run the cutover adopts them and waits for them as after its own apply".into(),
        ));
        return Ok(Outcome::DryRun);
    }
    if let Some(g) = &guard {
        g.check(ev, &name, &ns, Moment::Confirmed, false)?;
    }
    let mut w = Window {
        cluster,
        ev,
        journal: j,
        lock: held,
        by,
    };
    // The owners suspended and their parents checked as before any apply: a parent that
    // re-arms an owner stops here, nothing recorded as applied.
    super::super::gitops::pause(&mut w, "cutover")
        .await
        .map_err(|e| early::merged_way_back(e, &name, &ns))?;
    // The owner's status read before the pause (it synced the merge then; a suspended
    // Kustomization's inventory says nothing since).
    let (proven, first_by) = (m.proven, m.by.clone());
    // Read and compared again after the pause: what is adopted is what is live now.
    let Some(mut m) = early::merged(cluster, &w.journal).await? else {
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "the objects of {ns}/{name} changed while the owners were suspended (ipsecgateway/{name} is back, or vpngateway/{name} is gone or not the owner's); nothing was adopted"
            ),
            hint: Some(crate::window::error::hint!(
                "`vpnmig status -n {ns}` shows what is there; then `{}`",
                crate::window::error::Run::cutover(&name, &ns)
            )),
        });
    };
    // Proven before the pause (a suspended owner's status may not say it since): said so.
    if proven && !m.proven {
        m.by = first_by;
    }
    refuse_differences(&w.journal, &m)?;
    let live = |t: &Value| {
        std::iter::once(&m.gateway)
            .chain(&m.peers)
            .find(|o| o["kind"] == t["kind"] && o["metadata"]["name"] == t["metadata"]["name"])
            .and_then(|o| o.pointer("/metadata/uid").and_then(Value::as_str))
            .unwrap_or_default()
            .to_string()
    };
    w.journal.target_uids = w.journal.targets.iter().map(live).collect();
    w.journal.applied_by_source = Some(format!(
        "{}; adopted by the cutover at {} after every pinned value read equal to the plan's{}",
        m.by,
        now(),
        if proven || m.proven {
            "; the owner's status, read then, listed the VPNGateway and not the IPsecGateway"
        } else {
            ""
        }
    ));
    let by = w.by.clone();
    w.by = format!("{by} (adopted: applied by {})", m.by);
    w.save(Phase::Applied).await?;
    w.by = by;
    ev.emit(Event::Step(format!(
        "adopted {} as applied by {} (the journal records it as appliedBySource)",
        m.objects(&ns),
        m.by
    )));
    // The owner's own status read the merged source: it stands for `--gitops resume` at
    // the restore (a Kustomization suspended since shows no inventory of it).
    let mut opts = opts.clone();
    opts.gitops.resume |= proven || m.proven;
    phases(&mut w, &opts, None, guard.as_ref()).await
}

/// Refused, nothing changed, when what the owner applied is not what the plan applies.
fn refuse_differences(j: &Journal, m: &Merged) -> Result<(), Error> {
    let mut diffs = early::differences(j, m);
    // Fields the plan sets beyond the pinned ones (a DPD delay, a lifetime): the window's
    // watch after the apply stops on any of them.
    for t in &j.targets {
        let Some(live) = std::iter::once(&m.gateway)
            .chain(&m.peers)
            .find(|o| o["kind"] == t["kind"] && o["metadata"]["name"] == t["metadata"]["name"])
        else {
            continue;
        };
        let object = format!(
            "{} {}/{}",
            t["kind"].as_str().unwrap_or("?"),
            j.namespace,
            t["metadata"]["name"].as_str().unwrap_or("?")
        );
        let pinned: Vec<String> = diffs
            .iter()
            .filter_map(|d| d.strip_prefix(&format!("{object} ")))
            .filter_map(|d| d.split(':').next().map(str::to_string))
            .collect();
        // Fields the source sets that the plan does not (a21o D25: a merged
        // `reverseExposures`, a path into the client's network the old gateway never had,
        // was adopted "every pinned value equals the plan's").
        let mut extra = Vec::new();
        extra_fields(&t["spec"], &live["spec"], "spec", &mut extra);
        for (path, seen) in extra {
            diffs.push(format!("{object} {path}: {seen}, the plan does not set it"));
        }
        for (path, want, seen) in crate::core::gitops::spec_differences(t, live) {
            // Said once: a pinned field's row above names it already.
            if pinned
                .iter()
                .any(|p| path.starts_with(p.as_str()) || p.starts_with(&path))
            {
                continue;
            }
            diffs.push(format!("{object} {path}: {seen}, the plan has {want}"));
        }
    }
    if diffs.is_empty() {
        return Ok(());
    }
    let (name, ns) = (j.gateway.as_str(), j.namespace.as_str());
    Err(Error::Stop {
        code: exit::REFUSED,
        message: format!(
            "ipsecgateway/{name} -n {ns} is gone and {} were applied by {} (the repository change was merged early), but they are not what the plan applies: {}; nothing was adopted and nothing was changed",
            m.objects(ns),
            m.by,
            diffs.join("; ")
        ),
        hint: Some(crate::window::error::hint!(
            "the source must be fixed: make the repository define exactly what the plan applies (`plan --gitops-repo` wrote it; the plan's values are the targets in data.journal.json of `kubectl get configmap {} -n {ns} -o yaml`) and let {} sync it; then the same cutover adopts them. No rollback goes back from here while the source defines them",
            journal::object_name(name),
            m.owner
                .as_ref()
                .map(|o| o.display())
                .unwrap_or_else(|| "the owner".into())
        )),
    })
}

/// Each field `live` sets (not null, not empty) under `path` that `want` does not:
/// `(path, value)`. Lists of named items of the same names in the same order are walked
/// item by item (`spec.tunnels[main].dpd`).
fn extra_fields(want: &Value, live: &Value, path: &str, out: &mut Vec<(String, Value)>) {
    let empty = |v: &Value| match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    };
    match (want, live) {
        (Value::Object(w), Value::Object(l)) => {
            for (k, v) in l {
                let at = format!("{path}.{k}");
                match w.get(k) {
                    None if !empty(v) => out.push((at, v.clone())),
                    None => {}
                    Some(wv) => extra_fields(wv, v, &at, out),
                }
            }
        }
        (Value::Array(w), Value::Array(l))
            if w.len() == l.len()
                && w.iter().zip(l).all(|(a, b)| {
                    a["name"].is_string() && a["name"] == b["name"] && b.is_object()
                }) =>
        {
            for (a, b) in w.iter().zip(l) {
                let n = a["name"].as_str().unwrap_or_default();
                extra_fields(a, b, &format!("{path}[{n}]"), out);
            }
        }
        _ => {}
    }
}

/// Another gateway (any name, any namespace, either kind) that claims the window's
/// floating IP beside what the source applied: nothing is adopted (a21o D24: the adoption
/// printed "done … HEALTHY" and wrote `done`, and only then stopped on it, exit 5). A list
/// that was refused is said, and the run's own checks after the apply still stop on one.
async fn refuse_claimed(
    cluster: &Cluster,
    ev: &dyn Emit,
    j: &Journal,
    m: &Merged,
) -> Result<(), Error> {
    let (name, ns) = (j.gateway.as_str(), j.namespace.as_str());
    let found = match crate::window::gitops::claimants(cluster, j, "VPNGateway").await? {
        Ok((found, unread)) => {
            if let Some(why) = unread {
                ev.emit(Event::Warning(format!(
                    "only namespace {ns} was read for other gateways claiming the floating IP {} ({why})",
                    j.floating_ip
                )));
            }
            found
        }
        Err(why) => {
            ev.emit(Event::Warning(format!(
                "whether another gateway claims the floating IP {} cannot be read ({why})",
                j.floating_ip
            )));
            return Ok(());
        }
    };
    if found.is_empty() {
        return Ok(());
    }
    let named: Vec<String> = found
        .iter()
        .map(|c| format!("{} (floating IP {}; `{}`)", c.display(), c.fip, c.delete()))
        .collect();
    Err(Error::Stop {
        code: exit::REFUSED,
        message: format!(
            "ipsecgateway/{name} -n {ns} is gone and {} were applied by {} (the repository change was merged early), but another gateway claims the floating IP {}: {}; the operator attaches it to one gateway only, so nothing was adopted and nothing was changed",
            m.objects(ns),
            m.by,
            j.floating_ip,
            named.join(", ")
        ),
        hint: Some(crate::window::error::hint!(
            "delete it once nothing re-creates it (make sure no repository defines it): {}; then `{}` adopts them",
            found
                .iter()
                .map(|c| format!("`{}`", c.delete()))
                .collect::<Vec<_>>()
                .join(", "),
            crate::window::error::Run::cutover(name, ns)
        )),
    })
}
