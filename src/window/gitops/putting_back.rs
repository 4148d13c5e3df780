//! Putting a restored owner back: the floating IP awaited, an owner suspended by itself,
//! and the by-hand resume when vpnmig cannot make it.

use super::*;

/// How long a put-back waits for the floating IP to be on the new gateway again.
pub(super) const PUT_BACK_FIP: std::time::Duration = std::time::Duration::from_secs(120);

/// After a restored owner's first sync changed a pinned field of what the window keeps
/// (the owner is suspended again already): apply each changed object again as the window
/// made it live (server-side apply, field manager vpnmig, force), wait for the floating
/// IP to be on the gateway again (bounded), and return the stop that names each field put
/// back (seen, wanted, writer) and the repository fix. What the window keeps follows
/// `replaced`: after a cutover (`IPsecGateway`) the new objects as applied, after a
/// rollback (`VPNGateway`) the IPsecGateway it re-created from the journal's saved
/// manifest — one put-back for both paths (a21d attack 14). `None`: no field differs (the
/// interference was something else: a deletion, the old gateway back).
pub(super) async fn put_back(
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
        "Application" => format!("`argocd app diff {}`", gitops::argocd_app(owner)),
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
        hint: Some(crate::window::error::hint!(
            "fix the repository: its merged source must define each field above as wanted ({source_fix}; {check} shows what it would still change), then {again} restores it; `{}` checks the gateway",
            crate::window::error::Run::verify(&name, &ns)
        )),
    }))
}

/// For an owner this window relied on and no vpnmig window suspended (`--gitops ignore`:
/// the user did): the protections a restore sets on what the window keeps, recorded,
/// read back and said (issue 21 item 1, round 4; attack 14). Returns what was done.
pub(super) async fn self_suspended(
    w: &mut Window<'_>,
    i: usize,
    replaced: &str,
) -> Result<String, Error> {
    let j = w.journal.clone();
    hand_over(w, i, &[(j, replaced)]).await
}

/// Before vpnmig stops holding owner record `i` or leaves its resume to a person (an
/// owner suspended by hand, a HelmRelease that tracks the PSK Secret, a policy changed
/// since, re-enabled by someone else, deleted and re-created, gone; a21g attacks 07, 12b:
/// a person's later resume pruned the PSK Secret): the prune protections its controller
/// honours on what `windows` keep (each window's journal and what it replaced), set
/// with the restore's own [`keep`] (hand-over: whatever the owner's status says now),
/// recorded in the journal before the patch, read back and said. Returns what was done,
/// for the message; a protection refused or taken off is said, never claimed.
pub(super) async fn hand_over(
    w: &mut Window<'_>,
    i: usize,
    windows: &[(crate::core::journal::Journal, &str)],
) -> Result<String, Error> {
    let owner = w.journal.gitops[i].owner.clone();
    let live_owner = match live::find(w.cluster, &owner).await? {
        Found::One(_, o) => Some(o),
        _ => None,
    };
    let before = w.journal.gitops[i].protected.len();
    let mut refused = Vec::new();
    for (j, replaced) in windows {
        if let Err((why, what)) = keep(w, i, j, replaced, live_owner.as_ref(), true).await? {
            refused.push(format!("{why}. {what}"));
        }
    }
    let mut psk_tracked = Vec::new();
    for (j, _) in windows {
        let sec = live::get_kept(w.cluster, "v1", "Secret", &j.namespace, &j.psk_secret).await?;
        if sec.as_ref().is_some_and(|s| gitops::tracks(&owner, s)) {
            psk_tracked.push((j.psk_secret.clone(), j.namespace.clone(), sec));
        }
    }
    let (key, value) = gitops::prune_protection(&owner.kind);
    // The windows' records are protected whatever the owner tracks (a21j 05): said apart,
    // after what the owner tracks.
    let names: Vec<(String, String)> = windows
        .iter()
        .flat_map(|(j, _)| records_of(j, false))
        .map(|k| (k.ns, k.name))
        .collect();
    let is_record = |p: &&gitops::Protected| {
        p.kind == "ConfigMap" && names.contains(&(p.namespace.clone(), p.name.clone()))
    };
    let records: Vec<String> = w.journal.gitops[i]
        .protected
        .iter()
        .filter(is_record)
        .map(gitops::Protected::display)
        .collect();
    let protected: Vec<&gitops::Protected> = w.journal.gitops[i]
        .protected
        .iter()
        .filter(|p| !is_record(p))
        .collect();
    let mut out = if protected.is_empty() && refused.is_empty() && psk_tracked.is_empty() {
        "nothing the window keeps needs a protection from it (it tracks none of them)".to_string()
    } else if protected.is_empty() {
        // Refused, or a tracked PSK Secret left bare: never "it tracks none" (a21i 11).
        "no protection from it holds on what the window keeps".to_string()
    } else {
        format!(
            "the window keeps {} from it (the journal records {})",
            protected
                .iter()
                .map(|p| p.display())
                .collect::<Vec<_>>()
                .join(", "),
            if w.journal.gitops[i].protected.len() > before {
                "them; they stay"
            } else {
                "them from an earlier run"
            }
        )
    };
    if !records.is_empty() {
        out.push_str(&format!(
            "; its records are kept from it too, whatever it tracks: {}",
            records.join(", ")
        ));
    }
    for (secret, ns, sec) in &psk_tracked {
        let kept = sec
            .as_ref()
            .is_some_and(|s| gitops::protected(&owner.kind, s));
        out.push_str(&if kept {
            format!(
                "; a resume of a {} without secret/{secret} -n {ns} (the PSK) would delete the client's key: {key}={value} keeps it, as long as it stays on the Secret",
                if owner.kind == "HelmRelease" {
                    "chart"
                } else {
                    "source"
                }
            )
        } else {
            format!(
                "; secret/{secret} -n {ns} (the PSK) does not carry {key}={value}: a resume of a {} without it deletes the client's key",
                if owner.kind == "HelmRelease" {
                    "chart"
                } else {
                    "source"
                }
            )
        });
        if owner.kind == "HelmRelease" {
            out.push_str(
                "; no annotation on a live object keeps helm-controller's upgrade from writing the chart's copy over it",
            );
        }
    }
    if !refused.is_empty() {
        out.push_str(&format!(
            "; do not resume it yet: {}",
            refused.join("; and ")
        ));
    }
    Ok(out)
}

/// At a finished window run again: each owner it relied on that no vpnmig window
/// suspended and that is still suspended is said, with the steps by hand (vpnmig never
/// resumes it, `--gitops resume` included). Best effort: an owner that cannot be read is
/// skipped (`status` says the same); journals that cannot be read are said, never taken
/// for "no window suspended it" (a21k N06).
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
        let journals = match journals_for(cluster, Some(&obj), (&j.namespace, &j.gateway)).await {
            Ok(journals) => journals,
            // Unknown is never "nobody" (a21k N06): said as `status` says it.
            Err(why) => {
                ev.emit(Event::Warning(format!(
                    "{} is still suspended: {}",
                    r.owner.display(),
                    holders_unknown(&why)
                )));
                continue;
            }
        };
        if holders::holders(&journals, &r.owner, (&j.namespace, &j.gateway))
            .iter()
            .any(|h| h.paused)
        {
            continue;
        }
        // A window that suspended it and let go of it is who suspended it (a21i R07).
        let who = holders::let_go_by(&journals, &r.owner).unwrap_or_else(|| {
            "no vpnmig window suspended it (it was suspended before the window)".into()
        });
        ev.emit(Event::Warning(format!(
            "{} is still suspended: {who}, so vpnmig does not resume it, `--gitops resume` included. {}",
            r.owner.display(),
            resume_by_hand(
                &r.owner,
                replaced,
                j,
                Some(&obj),
                &helm_psks(cluster, &r.owner, j, &journals).await
            )
        )));
    }
}

/// The checks and the command that resume an owner by hand after a window that relied on
/// it (`replaced`: what the window replaced, which the source must no longer define).
/// `psks`: for a HelmRelease, the PSK Secrets it tracks of every window on it
/// ([`helm_psks`]); empty: window `j`'s own.
pub(crate) fn resume_by_hand(
    owner: &gitops::OwnerRef,
    replaced: &str,
    j: &crate::core::journal::Journal,
    live: Option<&Value>,
    psks: &[gitops::KeptPsk],
) -> String {
    let (ns, name) = (&j.namespace, &j.gateway);
    let ons = owner.namespace.as_deref().unwrap_or("argocd");
    // The argocd CLI names an Application outside Argo CD's own namespace as
    // `<namespace>/<name>` (apps in any namespace; a21l A04: the bare name targets `argocd`).
    let app = gitops::argocd_app(owner);
    let (diff, resume) = match owner.kind.as_str() {
        "Kustomization" => (
            format!(
                "`flux diff kustomization {} -n {ons} --path DIR` on a checkout of the merged repository",
                owner.name
            ),
            format!("`flux resume kustomization {} -n {ons}`", owner.name),
        ),
        "HelmRelease" => (
            if psks.is_empty() {
                gitops::helm_psk_check(
                    owner,
                    live,
                    &[gitops::KeptPsk {
                        window: format!("{ns}/{name}"),
                        secret: j.psk_secret.clone(),
                        namespace: ns.clone(),
                        key: j.psk_key().to_string(),
                    }],
                )
            } else {
                gitops::helm_psk_check(owner, live, psks)
            },
            format!("`flux resume helmrelease {} -n {ons}`", owner.name),
        ),
        // Automated already, held by a freeze only (a21i R03: "argocd app set …
        // --sync-policy automated" was handed out over a policy that already was): the
        // resume is lifting the freeze.
        _ if live.is_some_and(|o| {
            o.pointer("/spec/syncPolicy/automated")
                .is_some_and(|a| !a.is_null())
                && o.pointer("/metadata/annotations/argocd.argoproj.io~1skip-reconcile")
                    .and_then(Value::as_str)
                    == Some("true")
        }) =>
        {
            (
                format!("`argocd app diff {app}`"),
                format!(
                    "its policy is automated already and only the freeze holds it: lift the freeze (`kubectl annotate application {} -n {ons} argocd.argoproj.io/skip-reconcile-`)",
                    owner.name
                ),
            )
        }
        _ => (
            format!("`argocd app diff {app}`"),
            format!(
                "`argocd app set {app} --sync-policy automated` (with the --auto-prune / --self-heal it had)"
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
pub(super) async fn reenabled_stop(
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
    // The chain above it that puts its policy back now, top-most first (a21j 01); else,
    // one level, a parent that syncs.
    let path = re_arming(w.cluster, &w.journal, owner, obj)
        .await
        .unwrap_or_default();
    let parents = if path.is_empty() {
        live_parents(w.cluster, obj).await.unwrap_or_default()
    } else {
        Vec::new()
    };
    let parent = parents
        .iter()
        .find(|(_, v)| gitops::parent_state(v, obj).active)
        .map(|(p, _)| p);
    let by = if path.is_empty() {
        parent
            .map(|p| {
                format!(
                    "; it is itself managed by {} (found by {}), which put its policy back",
                    p.owner.display(),
                    p.evidence.join(", ")
                )
            })
            .unwrap_or_default()
    } else {
        format!("; {}", re_armed_by(&path))
    };
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
        hint: Some(crate::window::error::hint!(
            "{}suspend it again: `{}`{}{delete}, then `vpnmig {verb} {name} -n {ns}` checks the gateway and restores it once its source no longer defines the {replaced} (merge the repository change; `--gitops resume` if it is merged and the status cannot show it)",
            if path.is_empty() {
                String::new()
            } else {
                format!("{}; then ", suspend_from_the_top(&path))
            },
            gitops::pause_command(owner),
            parent
                .map(|p| format!("; and {}", parent_fix(&p.owner)))
                .unwrap_or_default()
        )),
    }
}
