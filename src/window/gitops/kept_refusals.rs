//! What the restore's checks of the kept objects (`keeping`) say: the refusal for a record
//! an Argo CD application tracks, the small texts the refusals share (a kept object's
//! reference, the namespace flag, the verb), and the stop when another writer holds the
//! PSK Secret.

use super::*;

/// The refusal for a record (`what`, object `obj`) Argo CD application `r` tracks, and the
/// command that takes its markers off (those it carries).
pub(super) fn argo_tracks_record(
    r: &gitops::OwnerRef,
    obj: &Value,
    what: &str,
    replaced: &str,
    name: &str,
    ns: &str,
) -> (String, String) {
    (
        format!(
            "{} tracks {what} (its markers are on it, and its source does not define it): the prune protection keeps its sync from deleting it, but the Application then reads OutOfSync (requires pruning) for good, and its first sync is never seen done",
            r.display()
        ),
        format!(
            "Take its markers off ({}) and stop what puts them on (a namespace policy, a controller that stamps them), then `vpnmig {} {name} -n {ns}`",
            markers_off(obj),
            verb_of(replaced)
        ),
    )
}

/// The commands that take Argo CD's tracking markers off `obj` (those it carries).
fn markers_off(obj: &Value) -> String {
    let name_of = obj["metadata"]["name"].as_str().unwrap_or_default();
    let ons = obj["metadata"]["namespace"].as_str().unwrap_or_default();
    let kind = obj["kind"]
        .as_str()
        .unwrap_or("configmap")
        .to_ascii_lowercase();
    let mut off = Vec::new();
    for l in ["app.kubernetes.io/instance", "argocd.argoproj.io/instance"] {
        if obj["metadata"]["labels"].get(l).is_some() {
            off.push(format!("`kubectl label {kind} {name_of} -n {ons} {l}-`"));
        }
    }
    if obj["metadata"]["annotations"]
        .get("argocd.argoproj.io/tracking-id")
        .is_some()
    {
        off.push(format!(
            "`kubectl annotate {kind} {name_of} -n {ons} argocd.argoproj.io/tracking-id-`"
        ));
    }
    off.join(", ")
}

/// The refusal (and, after a restore, the stop) for a new object of the window (`what`,
/// object `obj`) that Argo CD application `r` tracks although its source does not define
/// it (a21p E21: a sync stamped its markers on it): the prune protection vpnmig set keeps
/// it, but the Application reads OutOfSync for good. The repository should define it.
pub(super) fn argo_tracks_new(
    r: &gitops::OwnerRef,
    obj: &Value,
    what: &str,
    replaced: &str,
    name: &str,
    ns: &str,
) -> (String, String) {
    (
        format!(
            "{} tracks {what}, a new object of the window (its markers are on it), and its source does not define it: the prune protection vpnmig set keeps its sync from deleting it (and the client's tunnel with it), but the Application then reads OutOfSync (requires pruning) for good, and its first sync is never seen done",
            r.display()
        ),
        format!(
            "Put it in the repository as the window made it live (the plan's rewrite defines it), or take its markers off ({}) and stop what puts them on (a namespace policy, a controller that stamps them); then `vpnmig {} {name} -n {ns}`",
            markers_off(obj),
            verb_of(replaced)
        ),
    )
}

/// What follows a check vpnmig cannot make itself: it does not restore the owner, and
/// says so, never "restore it by hand" (a21e: a restore by hand skipped the prune
/// protections and the watch of vpnmig's own restore, and lost a PSK and a gateway).
pub(super) fn not_restored(ns: &str) -> String {
    format!(
        "vpnmig cannot check this, so it does not restore the owner: it stays suspended, the journal holds it, and the prune protections set so far stay (`vpnmig status -n {ns}` lists them). Resuming it is then yours alone, and nothing watches its first sync"
    )
}

/// `kind/name -n ns`, or `kind/name (cluster-scoped)` for an object without a namespace.
pub(super) fn kept_ref(kind: &str, name: &str, ns: &str) -> String {
    if ns.is_empty() {
        format!("{}/{name} (cluster-scoped)", kind.to_ascii_lowercase())
    } else {
        object_ref(kind, name, ns)
    }
}

/// ` -n ns` for a namespaced object's kubectl command, nothing for a cluster-scoped one.
pub(super) fn ns_flag(ns: &str) -> String {
    if ns.is_empty() {
        String::new()
    } else {
        format!(" -n {ns}")
    }
}

pub(super) fn verb_of(replaced: &str) -> &'static str {
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
pub(super) async fn other_writer_stop(
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
        hint: Some(crate::window::error::hint!(
            "fix {}'s repository copy first: make it hold the client's key, or take the Secret out of it and its markers off the Secret (`argocd app diff {}`; `argocd app manifests {} --source git`; vpnmig never prints a key). Putting the key back by hand alone is undone by its self-heal within seconds. Then put the client's key back and run the window's command again",
            other.display(),
            gitops::argocd_app(other),
            gitops::argocd_app(other)
        )),
    }
}
