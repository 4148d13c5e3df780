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
use crate::exit;
use crate::window::error::Error;

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

/// Whether a run of a finished window (`--gitops resume`, not a dry run) may be a vouch:
/// the window suspended no owner it still holds and relies on one's suspension, in
/// whatever shape it recorded that (a21f B1, a21j 04b; the same test for `cutover` at
/// `done` and `rollback` at `rolled-back`). [`vouch`] reads who holds it. A window that
/// also suspended an owner vouches in its restore ([`restore`]).
pub(crate) fn vouches(
    j: &crate::core::journal::Journal,
    opts: &GitopsOptions,
    dry_run: bool,
) -> bool {
    opts.resume
        && !dry_run
        && !j.gitops.iter().any(|r| r.paused)
        && j.gitops.iter().any(Record::relies_on_a_window)
}

/// The owners that sync the old gateway (`old`, as read) or its PSK Secret (`secret`),
/// found in the cluster and judged against `mode`, as journal records. Runs before any
/// change.
///
/// Errors (exit 7, refused, nothing changed): `pause` and an owner that cannot be found (the
/// markers name no object the cluster has, or several); `ignore` and an owner that
/// still syncs automatically.
#[allow(clippy::too_many_arguments)]
pub async fn owners(
    cluster: &Cluster,
    ev: &dyn Emit,
    name: &str,
    old: &Value,
    secret: Option<&Value>,
    mode: Mode,
    inherited: &[Record],
    dry_run: bool,
) -> Result<Vec<Record>, Error> {
    let ns = cluster.namespace.as_str();
    let verb = if old["kind"] == "VPNGateway" {
        "rollback"
    } else {
        "cutover"
    };
    // What the window will ask of the owners and of the other windows' journals and
    // locks, asked before it reads them (not for a dry run, as the preflight): a window
    // that cannot suspend or restore its owner must not start (issue 25 item 3).
    let action = if verb == "cutover" {
        "cut over"
    } else {
        "roll back"
    };
    let mut asked_cluster = dry_run;
    let mut out: Vec<Record> = Vec::new();
    for obj in std::iter::once(old).chain(secret) {
        let managers = every_owner(cluster, ev, obj, ns).await?;
        for m in &managers {
            let what = object_ref(
                obj["kind"].as_str().unwrap_or_default(),
                obj["metadata"]["name"].as_str().unwrap_or_default(),
                ns,
            );
            // What it syncs, as the journal records it (a21s S06b: an owner of the PSK
            // Secret alone never defined the gateway).
            let synced = format!(
                "{}/{}",
                obj["kind"].as_str().unwrap_or_default().to_lowercase(),
                obj["metadata"]["name"].as_str().unwrap_or_default()
            );
            let refuse = |message: String| Error::Stop {
                code: exit::REFUSED,
                message,
                hint: Some(crate::window::error::hint!(
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
            if !dry_run {
                let mut needs = crate::core::live::owner_needs(wanted, false);
                if !asked_cluster {
                    needs.extend(gitops_cluster_needs_served(cluster).await);
                    asked_cluster = true;
                }
                super::steps::require_needs(cluster, &needs, action).await?;
            }
            let (owner, obj) = match live::find(cluster, wanted).await? {
                Found::One(o, v) => {
                    // Suspending it (and restoring it at the end) patches it, in the
                    // namespace it was found in.
                    if !dry_run && mode == Mode::Pause {
                        let patch: Vec<_> = crate::core::live::owner_needs(&o, true)
                            .into_iter()
                            .filter(|n| n.verb == "patch")
                            .collect();
                        super::steps::require_needs(cluster, &patch, action).await?;
                    }
                    (o, v)
                }
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
            if let Some(r) = out.iter_mut().find(|r| r.owner == owner) {
                if !r.syncs.contains(&synced) {
                    r.syncs.push(synced);
                }
                continue;
            }
            if let Some(r) = inherited.iter().find(|r| r.owner == owner) {
                ev.emit(Event::Note(format!(
                    "{} {} syncs {what}: suspended by an earlier run of this window (the journal records it); restored at the end",
                    m.tool.label(),
                    owner.display()
                )));
                let mut r = r.clone();
                if !r.syncs.is_empty() && !r.syncs.contains(&synced) {
                    r.syncs.push(synced);
                }
                out.push(r);
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
                    hint: Some(crate::window::error::hint!(
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
                let_go: None,
                vouched: None,
                parent_of: None,
                pausing: None,
                restoring: None,
                re_armed_at: None,
                last_sync: None,
                asked: None,
                syncs: vec![synced.clone()],
            });
        }
    }
    Ok(out)
}

/// What a window on a gateway a GitOps owner syncs reads in every namespace
/// ([`crate::core::live::gitops_cluster_needs`]), without the lists of owner kinds the
/// cluster does not serve (a cluster without Argo CD has no Applications to look for).
async fn gitops_cluster_needs_served(cluster: &Cluster) -> Vec<crate::core::live::Need> {
    let mut out = Vec::new();
    for need in crate::core::live::gitops_cluster_needs() {
        let owner_kind = crate::core::live::GITOPS_OWNER_LISTS
            .iter()
            .find(|(v, k)| crate::core::live::owner_list_need(v, k) == need);
        match owner_kind {
            Some((v, k)) if !live::serves(cluster, v, k).await => {}
            _ => out.push(need),
        }
    }
    out
}

/// Every GitOps owner of `obj` (in namespace `ns`) that reconciles: each one its markers
/// and field managers name ([`gitops::detect`]), then each Application or Kustomization
/// whose own status names it and its markers do not (a21l A08: a second Kustomization's
/// inventory listed the gateway; it was never suspended and re-created it after the
/// delete), each with the evidence it was found by. A Flux field manager no marker names
/// an owner for is dropped only where a Kustomization's inventory names it (the one
/// that wrote it); else it stays, an owner nobody can suspend (the window refuses).
/// Where the cluster refuses the lists, said, and the markers alone are used.
pub(crate) async fn every_owner(
    cluster: &Cluster,
    ev: &dyn Emit,
    obj: &Value,
    ns: &str,
) -> Result<Vec<gitops::Manager>, Error> {
    let mut managers: Vec<gitops::Manager> = gitops::reconciling(&gitops::detect(obj))
        .into_iter()
        .cloned()
        .collect();
    let kind = obj["kind"].as_str().unwrap_or_default();
    let obj_name = obj["metadata"]["name"].as_str().unwrap_or_default();
    let named = match live::naming(cluster, kind, ns, obj_name).await {
        Ok(n) => n,
        Err(e) if refusal(&e).is_some() => {
            ev.emit(Event::Note(format!(
                "the cluster does not let vpnmig list Applications and Kustomizations in every namespace ({}): an owner that only its own status names as the one that applies {} is not looked for",
                refusal(&e).map(|(a, _)| a).unwrap_or_default(),
                object_ref(kind, obj_name, ns)
            )));
            Vec::new()
        }
        Err(e) => return Err(e.into()),
    };
    for (owner, _) in &named {
        if managers.iter().any(|m| {
            m.owner
                .as_ref()
                .is_some_and(|o| gitops::same_owner(o, owner))
        }) {
            continue;
        }
        let argo = owner.kind == "Application";
        managers.push(gitops::Manager {
            tool: if argo {
                gitops::Tool::ArgoCd
            } else {
                gitops::Tool::Flux
            },
            owner: Some(owner.clone()),
            evidence: vec![format!(
                "{} of {} lists it",
                if argo {
                    "status.resources"
                } else {
                    "status.inventory"
                },
                owner.display()
            )],
        });
    }
    let by_inventory = named.iter().any(|(o, _)| o.kind == "Kustomization");
    managers.retain(|m| {
        !(m.owner.is_none()
            && m.tool == gitops::Tool::Flux
            && by_inventory
            && m.evidence
                .iter()
                .all(|e| e == "field manager kustomize-controller"))
    });
    Ok(managers)
}

use gitops::how;

mod asked;
pub(crate) mod claims;
mod journals;
mod keeping;
mod kept_refusals;
mod letting_go;
mod parent_stops;
mod parents;
mod pausing;
mod protecting;
mod putting_back;
mod re_created;
mod records;
mod restoring;
mod settling;
mod sources;
mod staying_suspended;

pub(crate) use asked::*;
pub(crate) use claims::*;
pub(crate) use journals::*;
use keeping::*;
use kept_refusals::*;
pub(crate) use letting_go::*;
pub(crate) use parent_stops::*;
pub(crate) use parents::*;
pub(crate) use pausing::*;
use protecting::*;
pub(crate) use putting_back::*;
pub(crate) use re_created::*;
use records::*;
pub(crate) use restoring::*;
pub(crate) use settling::*;
use sources::*;
pub(crate) use staying_suspended::*;

/// What keeps a parent from putting its child's policy back, as a step starting with
/// the verb: `suspend X (command)`, or for an ApplicationSet the `create-only` policy.
pub(crate) fn parent_fix_verb(p: &gitops::OwnerRef) -> String {
    if p.kind == "ApplicationSet" {
        // With its command, as every other parent's suspension (a21k N09: the first stop
        // had none to copy): one function for every stop and `status`.
        format!(
            "set `spec.syncPolicy.applicationsSync: create-only` on {} ({})",
            p.display(),
            suspend_command(p)
        )
    } else {
        format!("suspend {} ({})", p.display(), suspend_command(p))
    }
}

/// The command that suspends an owner by hand, in backticks: always
/// [`gitops::pause_command`], the suspension as vpnmig writes it (its field manager), so
/// that every place that advises one prints the same command (a21i 02: `flux suspend`
/// and a patch without `--field-manager=vpnmig` beside it; a suspension another field
/// manager wrote is later not read as the window's). An Application its markers name without a namespace is Argo CD's, in `argocd`.
pub(crate) fn suspend_command(owner: &gitops::OwnerRef) -> String {
    let mut o = owner.clone();
    if o.namespace.is_none() && o.kind == "Application" {
        o.namespace = Some("argocd".into());
    }
    format!("`{}`", gitops::pause_command(&o))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// a21i 02: every advice to suspend an owner prints the one command, as vpnmig writes
    /// a suspension (its field manager), never `flux suspend` or a patch without it.
    #[test]
    fn every_suspend_advice_is_the_pause_command() {
        for (kind, ns) in [
            ("Application", Some("argocd")),
            ("Kustomization", Some("flux-system")),
            ("HelmRelease", Some("platform")),
            ("ApplicationSet", Some("argocd")),
        ] {
            let owner = gitops::OwnerRef {
                api_version: "x/v1".into(),
                kind: kind.into(),
                namespace: ns.map(str::to_string),
                name: "hub".into(),
            };
            let said = suspend_command(&owner);
            assert_eq!(
                said,
                format!("`{}`", gitops::pause_command(&owner)),
                "{kind}"
            );
            assert!(said.contains("--field-manager=vpnmig"), "{said}");
            assert!(
                parent_fix_verb(&owner).contains("--field-manager=vpnmig")
                    || kind == "ApplicationSet",
                "{kind}"
            );
        }
        // An Application its markers name without a namespace: Argo CD's own.
        let bare = gitops::OwnerRef {
            api_version: "argoproj.io/v1alpha1".into(),
            kind: "Application".into(),
            namespace: None,
            name: "hub".into(),
        };
        assert!(
            suspend_command(&bare)
                .starts_with("`kubectl patch application hub -n argocd --field-manager=vpnmig"),
            "{}",
            suspend_command(&bare)
        );
    }
}
