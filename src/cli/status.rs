//! `vpnmig status`: every gateway of both kinds, to schedule windows.

use comfy_table::{ContentArrangement, Table, presets};
use serde::Serialize;

use crate::cli::Error;
use crate::cli::cluster_args::ClusterArgs;
use crate::cluster::{Cluster, list};
use crate::core::allowlist::Allowlist;
use crate::core::holders;
use crate::core::model::{IPsecGateway, VPNGateway, VPNPeer};
use crate::core::status::{self, Migration, Row};
use crate::exit;

/// One row per gateway, old or new kind: migrated or not, floating IP pinned,
/// tunnels/peers, Ready, and the plan's blockers.
///
/// Read-only. Lists are paginated (500 objects a request). The blockers are the checks of
/// `vpnmig plan` that need nothing but the gateway itself; `vpnmig plan -f` with the PSK
/// Secret (or the live plan) checks the rest.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  vpnmig status                 # the context's namespace
  vpnmig status -A -o wide      # every namespace, with service CIDR and window phase
  vpnmig status -o name         # ipsecgateway.ipsec.bnerd.net/acme, as kubectl writes it
  set -o pipefail; vpnmig status -A -o json | jq '.gateways[] | select(.migrated==\"no\" and (.blockers|length)==0) | .name'

-o json and -o yaml: {gateways, windows, lostJournals, windowsUnknown}; docs/status-json.md.

Exit codes: 0 listed, 1 the cluster could not be read, or only in part (the journals:
the windows under way are then unknown; what was read is printed, as kubectl get does).")]
pub struct StatusArgs {
    /// kubectl's cluster flags, from the top-level command (global).
    #[arg(skip)]
    pub cluster: ClusterArgs,
    /// All namespaces.
    #[arg(short = 'A', long, conflicts_with = "namespace")]
    all_namespaces: bool,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = StatusFormat::Text)]
    output: StatusFormat,
    /// Leave out the header line of the table (text and wide), as kubectl's --no-headers.
    #[arg(long)]
    no_headers: bool,
    /// After the table, print each gateway again whenever it changes (a watch on the
    /// three kinds and the journals, not polling), until --timeout or Ctrl-C. With -o
    /// json, one document a line on each change; with -o yaml, one `---` document.
    #[arg(short = 'w', long)]
    watch: bool,
    /// How long --watch runs.
    #[arg(long, value_name = "DURATION", requires = "watch", default_value = "1h", value_parser = crate::cli::cluster_args::parse_duration)]
    timeout: std::time::Duration,
    /// A windows file (docs/fleet.md): with it, or where a gateway carries the window
    /// annotation, a NEXT-WINDOW column (JSON: `nextWindow`).
    #[arg(long, value_name = "FILE")]
    windows: Option<std::path::PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum StatusFormat {
    /// A table, then the windows under way.
    Text,
    /// The table with the service CIDR and the phase of a window under way.
    Wide,
    /// `kind.group/name`, one a line (kubectl's -o name).
    Name,
    /// One object: gateways, windows under way, lost journals (docs/status-json.md).
    Json,
    /// The same document as YAML.
    Yaml,
}

/// `status -o json` / `-o yaml` (docs/status-json.md).
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct StatusDoc<'a> {
    /// One row per gateway, old or new kind.
    pub gateways: &'a [Row],
    /// Windows under way: journals neither done nor rolled back.
    pub windows: &'a [Window],
    /// Gateways vpnmig migrated whose journal ConfigMap is gone.
    pub lost_journals: &'a [LostJournal],
    /// GitOps owners a window suspended and has not restored (issue 11 item 2).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub suspended_owners: &'a [Suspended],
    /// Parents of GitOps owners (an app-of-apps Application, an ApplicationSet, a parent
    /// Kustomization) whose suspension a window relies on until its owner is restored
    /// (a21g attack 16): one per window, with what to keep and, when it syncs again,
    /// that it re-arms the owner.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub relied_on_parents: &'a [ReliedParent],
    /// Objects a restore protected from their GitOps owner's prune (issue 21 item 1),
    /// from the journals: `secret/acme-psk -n tenant-acme
    /// (kustomize.toolkit.fluxcd.io/prune=disabled) by the window of tenant-acme/acme`.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub prune_protected: &'a [String],
    /// GitOps owners a window let go of without restoring them (its policy changed since,
    /// re-enabled by someone else, deleted and re-created, gone): their resume is a
    /// person's, and what the window keeps stays protected only while the annotations in
    /// `pruneProtected` stay (a21g attacks 07, 12b).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub let_go_owners: &'a [String],
    /// Each window whose PSK Secret is not as its journal fingerprinted it (gone, another
    /// key, re-created, or not readable): a blocker, with the command that puts the
    /// client's key back (issue 21 item 1). Never a value.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub psk_problems: &'a [PskProblem],
    /// Each finished window whose gateway is gone since, or only as the other kind: the
    /// client's tunnels are down (a21e 6, 11). Never a green table over a lost gateway.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub gone_gateways: &'a [GoneGateway],
    /// `-n` only: each finished window's gateway whose floating IP a gateway of another
    /// namespace claims, with each claimant and its delete, or why the gateways of every
    /// namespace could not be listed (a21o D15, D17: `-A` named them from its rows, `-n`
    /// did not). Its row has the blocker `fip-shared`, as under `-A`.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub fip_claimed_elsewhere: &'a [ClaimedElsewhere],
    /// Why the windows are not known (the journals could not be listed); absent when they
    /// were. Never read an empty `windows` as "none under way" when this is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows_unknown: Option<&'a str>,
}

/// A finished window's gateway whose floating IP a gateway of another namespace claims
/// (`status -n`; see [`StatusDoc::fip_claimed_elsewhere`]).
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClaimedElsewhere {
    pub namespace: String,
    pub gateway: String,
    /// The kind the window left (`VPNGateway` after done, `IPsecGateway` after rolled back).
    pub kind: &'static str,
    #[serde(rename = "floatingIP")]
    pub floating_ip: String,
    /// The gateways of other namespaces that claim it.
    pub claimed_by: Vec<crate::core::record::FipClaimant>,
    /// Set: the gateways of every namespace could not be listed (never read as "none").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unread: Option<String>,
}

/// A window under way, from its journal.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Window {
    pub namespace: String,
    pub gateway: String,
    /// The journal's phase, e.g. `old-deleted`.
    pub phase: String,
    /// What to run from here.
    pub recovery: String,
}

/// A GitOps owner (Argo CD Application, Flux Kustomization) a window suspended and has
/// not restored, from the journal.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Suspended {
    pub namespace: String,
    pub gateway: String,
    /// The journal's phase.
    pub phase: String,
    /// `application/acme -n argocd`.
    pub owner: String,
    /// What resumes it: vpnmig's command, and the `kubectl patch` that restores it by hand.
    pub resume: String,
    /// `true`: this window did not suspend the owner, it relies on its suspension (found
    /// it suspended); the owner is restored only once no such window is under way.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub relies: bool,
    /// The other windows under way that rely on the owner's suspension
    /// (`namespace/gateway (phase)`): it is not restored before they are done.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub relied_on_by: Vec<String>,
    /// The owner as the cluster shows it now, against the journal (issue 21 item 4):
    /// `suspended` (as the window left it), `re-enabled` (syncing again, by someone
    /// else), `changed` (its policy changed since the window paused it), `ignoring`
    /// (suspended, yet it re-created the old gateway after the delete), `gone`,
    /// `unknown` (it could not be read), `not-paused` (syncing: the window's pause was
    /// recorded and never landed, a21j 08), `restoring` (syncing: re-armed by the
    /// window's own restore, which did not finish, a21j 07), `suspended-again` (a finished
    /// window restored it and it reads suspended again, a21m B12).
    pub live: String,
    /// What the cluster shows, in words (empty when as the window left it).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub live_detail: String,
}

/// A parent of a GitOps owner whose suspension a window relies on (its journal's
/// `gitopsParents`), until the window's owner is restored (a21g attack 16).
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ReliedParent {
    pub namespace: String,
    pub gateway: String,
    /// The journal's phase.
    pub phase: String,
    /// `kustomization/tenants -n flux-system`.
    pub parent: String,
    /// The owner it manages: `kustomization/poessneck -n flux-system`.
    pub owner: String,
    /// `suspended` (as the window relies on it), `re-enabled` (its sync would put the
    /// owner's policy back now: by someone else, vpnmig never resumes it), `gone`,
    /// `unknown` (it could not be read), `let-go` (still suspended, but the window let go
    /// of the owner below it and no longer relies on it: a21i 10), `named` (a stop of an
    /// open window asked for it), `left` (still suspended, and no window relies on it any
    /// more: its owner restored, its window closed; a21l A04, A06), `kept` (still
    /// suspended, no longer this window's, but it applies back a level another window
    /// relies on or an owner it holds: its resume would re-arm that; a21m B07).
    pub live: String,
    /// What to do, in words.
    pub advice: String,
}

/// A window's PSK Secret that is not as the journal fingerprinted it.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PskProblem {
    pub namespace: String,
    pub gateway: String,
    /// `secret/acme-psk -n tenant-acme`.
    pub secret: String,
    /// `gone`, `changed`, `re-created`, `unchecked` (it could not be read).
    pub state: String,
    /// What was seen (fingerprints, uids, the error), and what to do.
    pub detail: String,
}

/// The blocker id of a [`PskProblem`] on its gateway's row.
fn psk_blocker(state: &str) -> &'static str {
    match state {
        "gone" => "psk-gone",
        "changed" => "psk-changed",
        "re-created" => "psk-re-created",
        "moved" => "psk-moved",
        "unprotected" => "psk-unprotected",
        _ => "psk-unchecked",
    }
}

/// Every row whose window's PSK Secret is not as its journal fingerprinted it gets the
/// blocker: never a green line over a lost key.
fn mark_psk(rows: &mut [Row], windows: &Windows) {
    for p in &windows.psk {
        for r in rows
            .iter_mut()
            .filter(|r| r.namespace == p.namespace && r.name == p.gateway)
        {
            let b = r.blockers.get_or_insert_with(Vec::new);
            let id = psk_blocker(&p.state);
            if !b.contains(&id) {
                b.push(id);
            }
        }
    }
}

/// Every row whose floating IP is not the one its finished window left gets the blocker
/// `fip-changed`, and a line: the client dials the journal's address, so a gateway on
/// another one is no green line (a22 F4: PINNED yes over a floating IP changed by hand).
fn mark_fip(rows: &mut [Row], windows: &mut Windows) {
    for (ns, gateway, kind, want) in &windows.pins {
        for r in rows
            .iter_mut()
            .filter(|r| &r.namespace == ns && &r.name == gateway && r.kind == *kind)
        {
            let seen = r.floating_ip.as_deref().unwrap_or("none");
            if crate::core::addr::same_in_family(seen, want) {
                continue;
            }
            let b = r.blockers.get_or_insert_with(Vec::new);
            if !b.contains(&"fip-changed") {
                b.push("fip-changed");
            }
            // A GitOps controller that syncs the gateway undoes a fix made only in the
            // cluster (a21e attack 15): the repository's copy first.
            let fix = match r.managed_by.as_deref() {
                Some(by) if by.contains("argocd:") || by.contains("flux:") => format!(
                    "{by} syncs it, so a fix in the cluster alone is undone by its next sync: put spec.endpoint.floatingIP back to {want} in the repository's copy first, then in the cluster"
                ),
                _ => format!("put spec.endpoint.floatingIP back to {want}"),
            };
            windows.fip.push(format!(
                "floating IP not as the window left it: {} has {seen}, the journal of the window pins {want} (the client's firewall dials {want}): {fix}; `vpnmig verify {gateway} -n {ns}` shows what else differs",
                crate::core::model::object_ref(kind, gateway, ns)
            ));
        }
    }
}

/// The PSK Secret of journal `j` against its fingerprint (issue 21 item 1, round 4):
/// `None` when it holds the key the journal fingerprinted (or the journal recorded none).
async fn psk_problem(cluster: &Cluster, j: &crate::core::journal::Journal) -> Option<PskProblem> {
    use crate::core::psk::{self, Held};
    use serde_json::Value;
    let (ns, name, secret, key) = (&j.namespace, &j.gateway, &j.psk_secret, j.psk_key());
    let put_back = psk::recreate_command(ns, secret, key);
    // The live gateway objects take their key from the journal's Secret: a sync (or a
    // person) that pointed them at another Secret is a key not checked here (a21d attack
    // 13: a late sync pointed the VPNPeer at Git's Secret with an old key; status was
    // green and the tunnel failed).
    for (t, at) in j.psk_users() {
        let (Some(api_version), Some(kind), Some(obj_name)) = (
            t["apiVersion"].as_str(),
            t["kind"].as_str(),
            t.pointer("/metadata/name").and_then(Value::as_str),
        ) else {
            continue;
        };
        let obj = match crate::cluster::gitops::get_kept(cluster, api_version, kind, ns, obj_name)
            .await
        {
            Ok(Some(obj)) => obj,
            // Gone: the gateway's own row says so; no key is taken from it.
            Ok(None) => continue,
            // Which Secret it takes its key from is not known: not checked, never green.
            Err(e) => {
                return Some(PskProblem {
                    namespace: ns.clone(),
                    gateway: name.clone(),
                    secret: format!("secret/{secret} -n {ns}"),
                    state: "unchecked".into(),
                    detail: format!(
                        "could not check which Secret {} takes its key from: it could not be read ({e}); check with a context that may read it (`vpnmig verify {name} -n {ns}`)",
                        crate::core::model::object_ref(kind, obj_name, ns)
                    ),
                });
            }
        };
        if let Some(uses) = j.psk_moved(&obj, at) {
            return Some(PskProblem {
                namespace: ns.clone(),
                gateway: name.clone(),
                secret: format!("secret/{secret} -n {ns}"),
                state: "moved".into(),
                detail: format!(
                    "{} takes its key from secret {} key {} now, not from the window's secret {secret} key {key}, whose key the journal fingerprinted (the client's){}: point {} back at {secret}, then `vpnmig verify {name} -n {ns}`",
                    crate::core::model::object_ref(kind, obj_name, ns),
                    uses.0,
                    uses.1,
                    crate::core::gitops::writer(&obj)
                        .map(|w| format!("; last written by {w}"))
                        .unwrap_or_default(),
                    at.trim_start_matches('/').replace('/', ".")
                ),
            });
        }
    }
    let live = crate::cluster::gitops::get_kept(cluster, "v1", "Secret", ns, secret).await;
    let (state, detail) = match live {
        Err(e) => (
            "unchecked",
            format!(
                "could not check it: it could not be read ({e}); check with a context that may read it (`vpnmig verify {name} -n {ns}` compares its key with the journal's fingerprint)"
            ),
        ),
        Ok(live) => match psk::held(
            j.psk_fingerprint.as_deref(),
            j.psk_secret_uid.as_deref(),
            ns,
            secret,
            key,
            live.as_ref(),
        ) {
            // Re-created with the same key (compared under the journal's uid): as the
            // window left it, no blocker (a21d: it was psk-re-created for ever).
            Held::Same { .. } | Held::RecreatedSame { .. } | Held::Unrecorded => return None,
            Held::Gone => (
                "gone",
                match psk_live_elsewhere(cluster, j).await {
                    Some(there) => format!(
                        "it is gone from {ns}, but {there}: the key is not lost, nothing needs re-creating from the client; the repository's source must define secret/{secret} -n {ns} as the plan does, then `vpnmig verify {name} -n {ns}`"
                    ),
                    None => format!(
                        "it is gone: it must be re-created with the client's pre-shared key, which vpnmig does not hold (the journal keeps only its fingerprint): `kubectl create secret generic {secret} -n {ns} --from-literal={key}=<the client's key>`, then `vpnmig verify {name} -n {ns}`"
                    ),
                },
            ),
            Held::Changed { then, now } => (
                "changed",
                format!(
                    "key {key} is not the one the window fingerprinted ({then}; live: {}{}): the tunnel needs the client's key; put it back (`{put_back}`), make the repository's copy hold it too if an owner syncs the Secret, then `vpnmig verify {name} -n {ns}`",
                    now.as_deref().unwrap_or("no such key"),
                    live.as_ref()
                        .and_then(crate::core::gitops::writer)
                        .map(|w| format!(", last written by {w}"))
                        .unwrap_or_default()
                ),
            ),
            Held::Recreated { then, now } => (
                "re-created",
                format!(
                    "it was re-created since the window (uid {then} → {now}): its key cannot be compared with the journal's fingerprint, which is keyed by the old Secret's uid; `vpnmig verify {name} -n {ns}` shows whether the tunnel comes up with it; if not, put the client's key back (`{put_back}`)"
                ),
            ),
        },
    };
    Some(PskProblem {
        namespace: ns.clone(),
        gateway: name.clone(),
        secret: format!("secret/{secret} -n {ns}"),
        state: state.into(),
        detail,
    })
}

/// The window's PSK Secret, tracked by a GitOps owner a window let go of (its resume is a
/// person's, and nothing watches its first sync) that is still suspended, without that
/// owner's prune protection (refused by a webhook or RBAC, or taken off): a resume of a
/// source without the Secret deletes the client's key (a21i 11, 12: the let-go said so
/// once, `status` said nothing, `verify` was green, and the unfreeze pruned the keys).
/// A blocker (`psk-unprotected`) on the gateway's row until the protection holds.
async fn unprotected_psk(
    cluster: &Cluster,
    j: &crate::core::journal::Journal,
    parsed: &[crate::core::journal::Journal],
) -> Option<PskProblem> {
    use crate::core::gitops;
    let (ns, name, secret) = (&j.namespace, &j.gateway, &j.psk_secret);
    // Each owner let go, once, with the first window that let go of it.
    let mut let_go: Vec<(&gitops::Record, &crate::core::journal::Journal)> = Vec::new();
    for other in parsed {
        for r in other
            .gitops
            .iter()
            .filter(|r| r.let_go.is_some() && !r.paused)
        {
            if !let_go
                .iter()
                .any(|(x, _)| gitops::same_owner(&x.owner, &r.owner))
            {
                let_go.push((r, other));
            }
        }
    }
    if let_go.is_empty() {
        return None;
    }
    let sec = crate::cluster::gitops::get_kept(cluster, "v1", "Secret", ns, secret)
        .await
        .ok()??;
    for (r, by) in let_go {
        if !gitops::unprotected(&r.owner, &sec) {
            continue;
        }
        // Syncing again with the Secret still there: its source defines it (or the
        // controller keeps it); the danger is past.
        let o = match crate::cluster::gitops::find(cluster, &r.owner).await {
            Ok(crate::cluster::gitops::Found::One(_, o)) => o,
            Ok(_) => continue,
            // Whether it still waits suspended is not known: never silent, not green.
            Err(e) => {
                return Some(PskProblem {
                    namespace: ns.clone(),
                    gateway: name.clone(),
                    secret: format!("secret/{secret} -n {ns}"),
                    state: "unchecked".into(),
                    detail: format!(
                        "{} tracks it and was let go by the window of {}/{}, and the Secret does not carry its prune protection; whether {} still waits suspended could not be read ({e}): check with a context that may read it (`vpnmig status -n {ns}`) before anyone resumes it",
                        r.owner.display(),
                        by.namespace,
                        by.gateway,
                        r.owner.display()
                    ),
                });
            }
        };
        if gitops::owner_state(&o, "IPsecGateway", ns, name).active {
            continue;
        }
        let (key, value) = gitops::prune_protection(&r.owner.kind);
        return Some(PskProblem {
            namespace: ns.clone(),
            gateway: name.clone(),
            secret: format!("secret/{secret} -n {ns}"),
            state: "unprotected".into(),
            detail: format!(
                "{} tracks it and was let go by the window of {}/{} ({}), so its resume is a person's, and the Secret does not carry {key}={value}: a resume of a {} without it deletes the client's key, which vpnmig does not hold. Do not resume {} before the protection holds: `kubectl annotate secret {secret} -n {ns} {key}={value}` with a context the cluster's policy allows (or put the Secret back in its repository); this line goes once it holds",
                r.owner.display(),
                by.namespace,
                by.gateway,
                r.let_go.as_deref().unwrap_or_default(),
                if r.owner.kind == "HelmRelease" {
                    "chart"
                } else {
                    "source"
                },
                r.owner.display()
            ),
        });
    }
    None
}

/// A finished window whose gateway is not the kind it left: gone, or only the other kind.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GoneGateway {
    pub namespace: String,
    pub gateway: String,
    /// The journal's phase: `done` or `rolled-back`.
    pub phase: String,
    /// The kind the window left: `VPNGateway` or `IPsecGateway`.
    pub kind: String,
    /// What is there instead: `nothing`, or the other kind.
    pub now: String,
    /// What was seen and what to do.
    pub detail: String,
}

/// A gateway vpnmig migrated whose journal is gone.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LostJournal {
    pub namespace: String,
    pub gateway: String,
    /// How to roll back without it.
    pub hint: String,
    /// Neither an IPsecGateway nor a VPNGateway of this name exists either: only an
    /// archived record in the cluster or this machine's bundle still names it (a21f A9).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub gateway_gone: bool,
    /// The VPNGateway carries vpnmig's migrated-from annotation, but vpnmig never applied
    /// it (no `vpnmig` field manager): it came in from a repository or by hand, and no
    /// window's journal ever existed (a21g 15: "journal missing" was false there).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub outside_window: bool,
}

/// What `status` knows of windows: under way, journals lost, or why it could not tell.
#[derive(Debug, Default, Clone, PartialEq)]
struct Windows {
    open: Vec<Window>,
    lost: Vec<LostJournal>,
    suspended: Vec<Suspended>,
    parents: Vec<ReliedParent>,
    protected: Vec<String>,
    /// The owners finished windows let go of, as said (see [`StatusDoc::let_go_owners`]).
    let_go: Vec<String>,
    psk: Vec<PskProblem>,
    /// The floating IP each finished window left on the kind it ended with: `(namespace,
    /// gateway, kind, floating IP)` (a VPNGateway's after `done`, the IPsecGateway's after
    /// `rolled-back`).
    pins: Vec<(String, String, &'static str, String)>,
    /// A gateway whose floating IP is not the one its window left: the lines said.
    fip: Vec<String>,
    /// The VPNPeers each finished cutover made: `(namespace, gateway, peer names)`.
    made: Vec<(String, String, Vec<String>)>,
    /// A gateway with VPNPeers its window did not make: the lines said.
    extra: Vec<String>,
    /// Each floating IP several gateways claim, with them (`core::status::shared_fips`).
    shared: Vec<(String, Vec<String>, Vec<String>)>,
    /// The finished cutovers whose replaced IPsecGateway is live again beside their
    /// VPNGateway (both kinds of one name): the lines said, unless another line names its
    /// delete already (a21m B02, B11: `status -A` named neither it nor its delete).
    live_again: Vec<(String, String)>,
    /// `-n`: the finished windows' floating IPs a gateway of another namespace claims.
    elsewhere: Vec<ClaimedElsewhere>,
    /// The finished windows, for [`mark_left`].
    finished: Vec<crate::core::journal::Journal>,
    /// The finished windows whose gateway is gone since (or only the other kind).
    gone: Vec<GoneGateway>,
    unknown: Option<String>,
}

impl Windows {
    /// The lines the text table is followed by.
    fn lines(&self) -> String {
        let mut out = String::new();
        if let Some(e) = &self.unknown {
            out.push_str(&format!(
                "windows under way: unknown, the journals could not be listed: {e}\n"
            ));
        }
        for w in &self.open {
            out.push_str(&format!(
                "window under way: {}/{} at journal phase {}: {}\n",
                w.namespace, w.gateway, w.phase, w.recovery
            ));
        }
        for s in &self.suspended {
            let head = match s.live.as_str() {
                "re-enabled" => "GitOps sync re-enabled by someone else",
                "changed" => "GitOps policy changed since the window paused it",
                "gone" => "GitOps owner gone",
                "re-created" => "GitOps owner deleted and re-created since the window paused it",
                "unknown" => "GitOps sync suspended (not read back)",
                "ignoring" => "GitOps sync suspended but still acting",
                "restore-re-created" => {
                    "GitOps sync suspended again after the window's own restore re-created the old gateway"
                }
                "not-paused" => "GitOps sync not suspended (the window's pause did not land)",
                "restoring" => "GitOps sync re-armed by the window's own restore, unfinished",
                "suspended-again" => "GitOps sync suspended again after the window restored it",
                _ => "GitOps sync suspended",
            };
            let detail = if s.live_detail.is_empty() {
                String::new()
            } else {
                format!("; live: {}", s.live_detail)
            };
            if s.relies {
                out.push_str(&format!(
                    "{head}: {} (relied on by the window of {}/{}, journal phase {}{detail}); {}\n",
                    s.owner, s.namespace, s.gateway, s.phase, s.resume
                ));
                continue;
            }
            let relied = if s.relied_on_by.is_empty() {
                String::new()
            } else {
                format!("; relied on by the window of {}", s.relied_on_by.join(", "))
            };
            out.push_str(&format!(
                "{head}: {} (by the window of {}/{}, journal phase {}{relied}{detail}); {}\n",
                s.owner, s.namespace, s.gateway, s.phase, s.resume
            ));
        }
        for p in &self.parents {
            let head = match p.live.as_str() {
                "re-enabled" => "GitOps parent re-enabled by someone else",
                "gone" => "GitOps parent gone",
                "unknown" => "GitOps parent relied on (not read back)",
                "let-go" => "GitOps parent no longer relied on",
                "named" => "GitOps parent suspended at a window's request",
                "left" => "GitOps parent left suspended",
                "kept" => "GitOps parent kept for another window",
                _ => "GitOps parent relied on",
            };
            let by = if p.live == "let-go" {
                "was relied on"
            } else if p.live == "named" {
                "asked for"
            } else if p.live == "left" || p.live == "kept" {
                "named"
            } else {
                "relied on"
            };
            out.push_str(&format!(
                "{head}: {} (manages {}; {by} by the window of {}/{}, journal phase {}): {}\n",
                p.parent, p.owner, p.namespace, p.gateway, p.phase, p.advice
            ));
        }
        for g in &self.gone {
            out.push_str(&format!("gateway gone: {}\n", g.detail));
        }
        for (delete, line) in &self.live_again {
            if !out.contains(delete.as_str()) {
                out.push_str(line);
                out.push('\n');
            }
        }
        for (fip, who, ways) in &self.shared {
            out.push_str(&format!(
                "floating IP {fip} claimed by {}: the operator attaches it to one of them, the others wait at FIPAttached=False (AlreadyAssociated); {} (in the repository first where Argo CD or Flux syncs it; never unpin it on the one that holds it: deleted unpinned, its cleanup releases it to the pool), then `vpnmig verify NAME -n NAMESPACE` for the one the client's firewall dials\n",
                who.join(" and "),
                ways.join("; ")
            ));
        }
        for c in &self.elsewhere {
            let gw = format!("{}/{} -n {}", c.kind.to_lowercase(), c.gateway, c.namespace);
            if let Some(why) = &c.unread {
                out.push_str(&format!(
                    "floating IP {} of {gw}: whether a gateway of another namespace claims it is unknown, the gateways of every namespace could not be listed ({why}); `vpnmig verify {} -n {}` with a context that can list them checks it\n",
                    c.floating_ip, c.gateway, c.namespace
                ));
                continue;
            }
            if c.claimed_by.iter().all(|o| out.contains(&o.delete)) {
                continue;
            }
            out.push_str(&format!(
                "floating IP {} of {gw}, which its finished window left, claimed by {} too: the operator attaches it to one of them, the others wait at FIPAttached=False (AlreadyAssociated); delete each that must not have it once nothing re-creates it, while its spec still pins the floating IP (one that holds it unpinned: pin it again first, deleted unpinned its cleanup releases it to the pool; one that only pins it holds nothing) (in its repository first where Argo CD or Flux syncs it), then `vpnmig verify {} -n {}`\n",
                c.floating_ip,
                c.claimed_by
                    .iter()
                    .map(crate::core::record::FipClaimant::shown)
                    .collect::<Vec<_>>()
                    .join(" and "),
                c.gateway,
                c.namespace
            ));
        }
        for line in self.fip.iter().chain(&self.extra) {
            out.push_str(line);
            out.push('\n');
        }
        for p in &self.psk {
            let head = if p.state == "unchecked" {
                "PSK not checked"
            } else if p.state == "unprotected" {
                "PSK not protected"
            } else {
                "PSK not as the window left it"
            };
            out.push_str(&format!(
                "{head}: {} of the window of {}/{}: {}\n",
                p.secret, p.namespace, p.gateway, p.detail
            ));
        }
        for l in &self.let_go {
            out.push_str(&format!("GitOps owner let go: {l}\n"));
        }
        for p in &self.protected {
            if p.contains(crate::core::gitops::FLUX_RECONCILE.0) {
                out.push_str(&format!(
                    "kept from the owner's apply: {p} (kustomize-controller never writes it, not even the repository's copy of the key)\n"
                ));
                continue;
            }
            out.push_str(&format!(
                "kept from prune: {p} (the owner never prunes it; remove the annotation when it is meant to go)\n"
            ));
        }
        for l in &self.lost {
            if l.outside_window {
                out.push_str(&format!(
                    "migrated outside a vpnmig window: {}/{}: {}\n",
                    l.namespace, l.gateway, l.hint
                ));
                continue;
            }
            if l.gateway_gone {
                out.push_str(&format!(
                    "gateway and journal missing: {ns}/{name} had a vpnmig window, but neither an IPsecGateway nor a VPNGateway {name} exists in namespace {ns}, and ConfigMap {ns}/vpnmig-{name} is gone: the client's tunnels are down; find out who deleted them (`kubectl get events -n {ns}`); {}\n",
                    l.hint,
                    ns = l.namespace,
                    name = l.gateway
                ));
                continue;
            }
            out.push_str(&format!(
                "journal missing: {ns}/{name} was migrated by vpnmig but ConfigMap {ns}/vpnmig-{name} is gone; {}\n",
                l.hint,
                ns = l.namespace,
                name = l.gateway
            ));
        }
        out
    }

    fn phase_of(&self, r: &Row) -> Option<&str> {
        self.open
            .iter()
            .find(|w| w.namespace == r.namespace && w.gateway == r.name)
            .map(|w| w.phase.as_str())
    }
}

/// How a table is drawn: wide adds columns; headers may be left out.
#[derive(Clone, Copy, Debug, Default)]
pub struct TableStyle {
    pub all_namespaces: bool,
    pub wide: bool,
    pub no_headers: bool,
}

/// The table (`phase`: the journal phase of a window under way, for -o wide).
pub fn render(rows: &[Row], style: TableStyle, phase: &dyn Fn(&Row) -> Option<String>) -> String {
    if rows.is_empty() {
        return "no gateways found\n".into();
    }
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    let mut header = vec![
        "NAME", "KIND", "MIGRATED", "FIP", "PINNED", "TUNNELS", "READY", "BLOCKERS",
    ];
    // Who manages each gateway (issue 11 item 1): across namespaces, and in wide.
    let managed = style.all_namespaces || style.wide;
    if managed {
        header.push("MANAGED-BY");
    }
    if style.wide {
        header.extend(["SERVICE-CIDR", "WINDOW"]);
    }
    // Where a maintenance window is written anywhere (issue 25 item 1).
    let next = rows.iter().any(|r| r.next_window.is_some());
    if next {
        header.push("NEXT-WINDOW");
    }
    if style.all_namespaces {
        header.insert(0, "NAMESPACE");
    }
    if !style.no_headers {
        table.set_header(header);
    }
    for r in rows {
        let migrated = match r.migrated {
            Migration::No => "no",
            Migration::InProgress => "IN PROGRESS",
            Migration::Yes => "yes",
        };
        let window = phase(r);
        let blockers = match &r.blockers {
            // The checks judge a gateway before its window: during one, its own delete
            // would read as `not-deleting` (newcomer walkthrough).
            _ if window.is_some() => "-".to_string(),
            None => "-".to_string(),
            Some(b) if b.is_empty() => "none".to_string(),
            Some(b) => b.join(","),
        };
        let mut row = vec![
            r.name.clone(),
            r.kind.to_string(),
            migrated.into(),
            r.floating_ip.clone().unwrap_or_else(|| "<none>".into()),
            if r.fip_pinned { "yes" } else { "NO" }.into(),
            r.tunnels.to_string(),
            r.ready.clone(),
            blockers,
        ];
        if managed {
            row.push(r.managed_by.clone().unwrap_or_else(|| "-".into()));
        }
        if style.wide {
            row.push(r.service_cidr.clone().unwrap_or_else(|| "<none>".into()));
            row.push(window.unwrap_or_else(|| "-".into()));
        }
        if next {
            row.push(
                r.next_window
                    .as_ref()
                    .map_or("-".into(), |n| n.text.clone()),
            );
        }
        if style.all_namespaces {
            row.insert(0, r.namespace.clone());
        }
        table.add_row(row);
    }
    table
        .to_string()
        .lines()
        .map(|l| format!("{}\n", l.trim_end()))
        .collect()
}

/// `-o name`: `kind.group/name`, as `kubectl get -o name` writes it.
pub fn names(rows: &[Row]) -> String {
    rows.iter()
        .map(|r| {
            let group = if r.kind == "IPsecGateway" {
                crate::core::model::OLD_GROUP
            } else {
                crate::core::model::NEW_GROUP
            };
            format!("{}.{group}/{}\n", r.kind.to_lowercase(), r.name)
        })
        .collect()
}

/// The cluster, the table's rows, and the gateways vpnmig migrated (their VPNGateway
/// carries the migrated-from annotation): `(namespace, name)`.
#[allow(clippy::type_complexity)]
async fn gather(
    args: &StatusArgs,
) -> Result<(Cluster, Vec<Row>, Vec<(String, String)>, Vec<Peer>), Error> {
    let cluster = Cluster::connect(&args.cluster.options()).await?;
    if matches!(args.output, StatusFormat::Text | StatusFormat::Wide) {
        crate::output::say(&cluster.banner(args.all_namespaces));
    }
    cluster.require_operator().await?;
    let (rows, ours, peers) =
        read_rows(&cluster, args.all_namespaces, args.windows.as_deref()).await?;
    Ok((cluster, rows, ours, peers))
}

/// The rows of the namespace (or all) and the gateways vpnmig migrated.
async fn read_rows(
    cluster: &Cluster,
    all_namespaces: bool,
    windows: Option<&std::path::Path>,
) -> Result<(Vec<Row>, Vec<(String, String)>, Vec<Peer>), Error> {
    let ns = (!all_namespaces).then_some(cluster.namespace.as_str());
    let old: Vec<IPsecGateway> = list::all(cluster, ns).await?;
    let new: Vec<VPNGateway> = list::all(cluster, ns).await?;
    let peers: Vec<VPNPeer> = list::all(cluster, ns).await?;
    let mut rows = status::rows(
        &old,
        &new,
        &peers,
        &Allowlist::default(),
        &format!("context {}", cluster.context),
    );
    let file = windows
        .map(crate::cli::schedule::read_windows)
        .transpose()?;
    crate::cli::schedule::mark_next_windows(&mut rows, &old, file.as_ref());
    let ours = new
        .iter()
        .filter(|g| {
            g.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(crate::core::translate::MIGRATED_FROM))
        })
        .filter_map(|g| Some((g.metadata.namespace.clone()?, g.metadata.name.clone()?)))
        .collect();
    let peers = peers
        .iter()
        .filter_map(|p| {
            Some(Peer {
                namespace: p.metadata.namespace.clone()?,
                name: p.metadata.name.clone()?,
                gateway: p.spec.gateway_ref.name.clone(),
            })
        })
        .collect();
    Ok((rows, ours, peers))
}

/// A live VPNPeer and the gateway it names.
#[derive(Debug, Clone, PartialEq)]
struct Peer {
    namespace: String,
    name: String,
    gateway: String,
}

/// Every VPNGateway row whose finished window made fewer VPNPeers than now name it gets
/// the blocker `extra-peer`, and a line naming each peer it did not make (a21d attack 6:
/// a second peer flips the gateway to default-deny; the window's peer without an
/// authorization block then reaches nothing, and READY stayed True).
fn mark_extra(rows: &mut [Row], windows: &mut Windows, peers: &[Peer]) {
    // A VPNPeer the window made that is gone while its VPNGateway is live (a21p E21: the
    // first sync of a restored owner pruned it): the blocker `peer-gone`, and a line.
    for (ns, gateway, made) in &windows.made {
        let gone: Vec<&String> = made
            .iter()
            .filter(|m| !peers.iter().any(|p| &p.namespace == ns && &p.name == *m))
            .collect();
        let mut row = false;
        for r in rows
            .iter_mut()
            .filter(|r| &r.namespace == ns && &r.name == gateway && r.kind == "VPNGateway")
        {
            row = true;
            if gone.is_empty() {
                continue;
            }
            let b = r.blockers.get_or_insert_with(Vec::new);
            if !b.contains(&"peer-gone") {
                b.push("peer-gone");
            }
        }
        if gone.is_empty() || !row {
            continue;
        }
        windows.extra.push(format!(
            "VPNPeer{} the window made on vpngateway/{gateway} -n {ns} {} gone: {} (deleted since the window ended done, e.g. pruned by the first sync of a GitOps owner whose source does not define {}): the client's tunnel through {} is down and the cutover is not complete. Put {} back in the repository as the window made {} (the plan's rewrite defines {}; the bundle's vpnpeer.yaml holds {}) and apply {}, or `vpnmig rollback {gateway} -n {ns} --yes` goes back to the IPsecGateway from the journal; then `vpnmig verify {gateway} -n {ns}`",
            if gone.len() == 1 { "" } else { "s" },
            if gone.len() == 1 { "is" } else { "are" },
            gone.iter()
                .map(|p| format!("vpnpeer/{p}"))
                .collect::<Vec<_>>()
                .join(", "),
            if gone.len() == 1 { "it" } else { "them" },
            if gone.len() == 1 { "it" } else { "them" },
            if gone.len() == 1 { "it" } else { "them" },
            if gone.len() == 1 { "it" } else { "them" },
            if gone.len() == 1 { "it" } else { "them" },
            if gone.len() == 1 { "it" } else { "them" },
            if gone.len() == 1 { "it" } else { "them" },
        ));
    }
    for (ns, gateway, made) in &windows.made {
        let extra: Vec<&Peer> = peers
            .iter()
            .filter(|p| &p.namespace == ns && &p.gateway == gateway && !made.contains(&p.name))
            .collect();
        if extra.is_empty() {
            continue;
        }
        for r in rows
            .iter_mut()
            .filter(|r| &r.namespace == ns && &r.name == gateway && r.kind == "VPNGateway")
        {
            let b = r.blockers.get_or_insert_with(Vec::new);
            if !b.contains(&"extra-peer") {
                b.push("extra-peer");
            }
        }
        windows.extra.push(format!(
            "VPNPeers the window did not make on vpngateway/{gateway} -n {ns}: {} (the window made {}): with more than one peer the gateway is default-deny, and a peer reaches only what its authorization grants; take the extra ones out of the repository and delete them (`kubectl delete vpnpeer NAME -n {ns}`), or grant each what it needs, then `vpnmig verify {gateway} -n {ns}`",
            extra
                .iter()
                .map(|p| format!("vpnpeer/{}", p.name))
                .collect::<Vec<_>>()
                .join(", "),
            if made.is_empty() {
                "none".to_string()
            } else {
                made.iter()
                    .map(|p| format!("vpnpeer/{p}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ));
    }
}

/// Why the table is empty (issue 10 item 2): the namespace does not exist, or it has no
/// gateways, or it could not be told which.
async fn namespace_note(cluster: &Cluster) -> String {
    use k8s_openapi::api::core::v1::Namespace;
    let ns = cluster.namespace.as_str();
    let api: kube::Api<Namespace> = kube::Api::all(cluster.client.clone());
    match cluster
        .call("get", &format!("namespace {ns}"), None, || api.get_opt(ns))
        .await
    {
        Ok(None) => format!(
            "hint: namespace {ns} does not exist in context {}: pass -n NAMESPACE, or -A for all (`kubectl get ipsecgateways,vpngateways -A`)",
            cluster.context
        ),
        Ok(Some(_)) => format!(
            "hint: namespace {ns} exists but has no IPsecGateway or VPNGateway: -A lists every namespace"
        ),
        Err(e) => format!(
            "hint: no gateways in namespace {ns} (whether it exists could not be checked: {e}); -A lists every namespace"
        ),
    }
}

/// Windows under way (journals not done or rolled back), each with what to run.
/// Best effort: a context that may not list ConfigMaps just does not see them, and says
/// so (`unknown`), never "no window under way" (DESIGN.md §4.9).
/// Gateways vpnmig migrated (`ours`: namespace, name) whose journal is gone are said too,
/// with the local bundle when this machine has one (issue 14 item 7).
async fn open_windows(
    cluster: &Cluster,
    all_namespaces: bool,
    ours: &[(String, String)],
    rows: &[Row],
) -> Windows {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, ListParams};
    let api: Api<ConfigMap> = if all_namespaces {
        Api::all(cluster.client.clone())
    } else {
        Api::namespaced(cluster.client.clone(), &cluster.namespace)
    };
    // Page by page, as the gateways are read (`list::PAGE` a request): a fleet's journals
    // are as many as its migrated gateways.
    let mut items: Vec<ConfigMap> = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default()
            .labels("app.kubernetes.io/managed-by=vpnmig")
            .limit(list::PAGE);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        match cluster
            .call("list", "configmaps (vpnmig journals)", None, || {
                api.list(&lp)
            })
            .await
        {
            Ok(page) => {
                items.extend(page.items);
                match page.metadata.continue_ {
                    Some(t) if !t.is_empty() => token = Some(t),
                    _ => break,
                }
            }
            Err(e) => {
                return Windows {
                    unknown: Some(e.to_string()),
                    ..Default::default()
                };
            }
        }
    }
    // An archived earlier window (issue 21 item 7) is a record, not a window: `report
    // NAME --window N` reads it. Known by its label, its gateway the journal it holds (or
    // its gateway label), never by its name: `vpnmig-kells.window-1` may be the own
    // journal of gateway `kells.window-1` (T11).
    let archived = |cm: &ConfigMap| {
        cm.metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key(crate::core::journal::ARCHIVE_LABEL))
    };
    let mut named: Vec<(String, String)> = items
        .iter()
        .filter(|cm| archived(cm))
        .filter_map(|cm| {
            let gateway =
                match crate::core::journal::archived(cm.metadata.labels.as_ref(), cm.data.as_ref())
                {
                    crate::core::journal::Archived::Of { journal, .. } => journal.gateway,
                    crate::core::journal::Archived::Unreadable { gateway, .. } => gateway?,
                    crate::core::journal::Archived::No => return None,
                };
            Some((cm.metadata.namespace.clone()?, gateway))
        })
        .collect();
    items.retain(|cm| !archived(cm));
    let journals: Vec<(String, String)> = items
        .iter()
        .filter_map(|cm| {
            let name = cm.metadata.name.as_deref()?.strip_prefix("vpnmig-")?;
            Some((cm.metadata.namespace.clone()?, name.to_string()))
        })
        .collect();
    // Each journal parsed once, for the stand-ins, the windows under way and the
    // suspended owners.
    let parsed: Vec<crate::core::journal::Journal> = items
        .iter()
        .filter_map(|cm| {
            crate::core::journal::Journal::from_json(cm.data.as_ref()?.get("journal.json")?).ok()
        })
        .collect();
    // The journals of every namespace, read once when a namespace's status needs them: a
    // stand-in may sit in another namespace than its window (a21q Q04).
    let mut elsewhere: Option<Vec<crate::core::journal::Journal>> = None;
    let mut lost = Vec::new();
    for (ns, name) in ours.iter().filter(|g| !journals.contains(g)) {
        let hint = crate::state::lost_journal_hint(&cluster.server, ns, name);
        // No bundle on this machine: was it ever a vpnmig window's? Its VPNGateway's
        // field managers say whether vpnmig applied it.
        let outside = match &hint {
            Some(_) => None,
            None => crate::window::outside_window(cluster, ns, name).await,
        };
        // It stands in the place of a window's gateway (a21p E10: its migrated-from
        // annotation names that gateway; a21q Q04: it holds that window's floating IP in
        // another namespace): said with that window, not as a migration of its own, and
        // never "no journal ever existed" while that window's journal is there.
        if let Some(by) = &outside
            && let Some(gw) = crate::cluster::gitops::get_kept(
                cluster,
                "vpn.bnerd.net/v1alpha1",
                "VPNGateway",
                ns,
                name,
            )
            .await
            .ok()
            .flatten()
        {
            let tie = |js: &[crate::core::journal::Journal]| {
                let mut all: Vec<(u8, String, String, String)> = js
                    .iter()
                    .filter_map(|j| {
                        crate::window::stands_in_for(&gw, j)
                            .map(|(rank, why)| (rank, j.namespace.clone(), j.gateway.clone(), why))
                    })
                    .collect();
                all.sort_by_key(|t| std::cmp::Reverse(t.0));
                all
            };
            let mut candidates = tie(&parsed);
            if candidates.is_empty() && !all_namespaces {
                if elsewhere.is_none() {
                    elsewhere = Some(all_journals(cluster).await);
                }
                candidates = tie(elsewhere.as_deref().unwrap_or_default());
            }
            // It stands in a window's place only where that window's gateway is gone:
            // beside it, it is a claimant of its floating IP (said as such), not a
            // stand-in.
            let mut tied = None;
            for c in candidates {
                let mut present = false;
                for (api, kind) in [
                    ("ipsec.bnerd.net/v1alpha1", "IPsecGateway"),
                    ("vpn.bnerd.net/v1alpha1", "VPNGateway"),
                ] {
                    present |= !matches!(
                        crate::cluster::gitops::get_kept(cluster, api, kind, &c.1, &c.2).await,
                        Ok(None)
                    );
                }
                if !present {
                    tied = Some(c);
                    break;
                }
            }
            if let Some((_, jns, of, why)) = tied {
                let annotated = gw
                    .pointer("/metadata/annotations")
                    .and_then(|a| a.get(crate::core::translate::MIGRATED_FROM))
                    .and_then(serde_json::Value::as_str)
                    == Some(crate::core::scope::migrated_from(&of).as_str());
                lost.push(LostJournal {
                    namespace: ns.clone(),
                    gateway: name.clone(),
                    hint: format!(
                        "vpngateway/{name} -n {ns} {}, but vpnmig never applied it (written by {by}): it stands in the place of the window of {jns}/{of} ({why}; its journal, ConfigMap {jns}/vpnmig-{of}, is there); the repository's source must define the plan's names and namespace, vpngateway/{of} -n {jns}, as the plan does: see that window",
                        if annotated {
                            format!("carries vpnmig's migrated-from annotation for {of}")
                        } else {
                            "exists".to_string()
                        }
                    ),
                    gateway_gone: false,
                    outside_window: true,
                });
                continue;
            }
        }
        lost.push(LostJournal {
            namespace: ns.clone(),
            gateway: name.clone(),
            hint: match (hint, &outside) {
                (Some(h), _) => h,
                // Every gateway here carries the migrated-from annotation: the text of
                // `cutover` and `rollback` (a21p E16), one check for all three.
                (None, Some(by)) => format!(
                    "vpngateway/{name} -n {ns} carries vpnmig's migrated-from annotation, but vpnmig never applied it (written by {by}): it came in from a repository or by hand, not through a vpnmig window, so no journal ever existed and nothing vpnmig recorded rolls it back; {}",
                    crate::window::way_back_outside(name, ns)
                ),
                (None, None) => format!(
                    "a rollback needs the bundle of its cutover: `vpnmig rollback {name} -n {ns} --plan DIR`"
                ),
            },
            gateway_gone: false,
            outside_window: outside.is_some(),
        });
    }
    // A gateway whose journal and gateway are both gone (a21f A9: deleted together, or
    // the namespace emptied): only an archived record of an earlier window, or this
    // machine's bundle, still names it. Never silent: the client's tunnels are gone.
    let scope = (!all_namespaces).then_some(cluster.namespace.as_str());
    named.extend(crate::state::remembered_gateways(&cluster.server, scope));
    named.sort();
    named.dedup();
    for (ns, name) in named {
        let present = rows.iter().any(|r| r.namespace == ns && r.name == name);
        if present
            || journals.contains(&(ns.clone(), name.clone()))
            || ours.contains(&(ns.clone(), name.clone()))
        {
            continue;
        }
        lost.push(LostJournal {
            hint: crate::state::lost_journal_hint(&cluster.server, &ns, &name).unwrap_or_else(|| {
                format!(
                    "`vpnmig report {name} -n {ns} --window 1` shows what the first window recorded; a rollback needs the bundle of its cutover: `vpnmig rollback {name} -n {ns} --plan DIR`"
                )
            }),
            namespace: ns,
            gateway: name,
            gateway_gone: true,
            outside_window: false,
        });
    }
    let mut open = Vec::new();
    for j in parsed.iter().filter(|j| !j.phase.finished()) {
        open.push(Window {
            namespace: j.namespace.clone(),
            gateway: j.gateway.clone(),
            phase: j.phase.to_string(),
            recovery: recovery(cluster, j).await,
        });
    }
    let suspended = suspended_owners(cluster, &parsed).await;
    let parents = relied_parents(cluster, &parsed).await;
    // The release each HelmRelease that keeps a new object installs: a HelmRelease lists
    // no inventory, so whether its chart defines the object is checked by hand (a21q Q07).
    let mut releases: Vec<(crate::core::gitops::OwnerRef, (String, String))> = Vec::new();
    for r in parsed.iter().flat_map(|j| &j.gitops) {
        if r.owner.kind == "HelmRelease"
            && !r.protected.is_empty()
            && !releases.iter().any(|(o, _)| o == &r.owner)
            && let Ok(crate::cluster::gitops::Found::One(_, o)) =
                crate::cluster::gitops::find(cluster, &r.owner).await
        {
            releases.push((r.owner.clone(), crate::core::gitops::helm_release(&o)));
        }
    }
    // Every window in scope, whether or not an owner is held: its PSK Secret as the
    // journal fingerprinted it (attacks 1, 5, 6, 14: a key lost after `done` was silent).
    let mut psk = Vec::new();
    for j in &parsed {
        if let Some(p) = psk_problem(cluster, j).await {
            psk.push(p);
        } else if let Some(p) = unprotected_psk(cluster, j, &parsed).await {
            psk.push(p);
        }
    }
    // A protection on a PSK Secret that is gone protects nothing: never said as kept
    // (a21t T06s: "kept from prune" beside "it is gone").
    let gone: Vec<&str> = psk
        .iter()
        .filter(|p| p.state == "gone")
        .map(|p| p.secret.as_str())
        .collect();
    let gone = &gone;
    let releases = &releases;
    let protected = parsed
        .iter()
        .flat_map(|j| {
            j.gitops.iter().flat_map(move |r| {
                r.protected
                    .iter()
                    .filter(move |p| {
                        !(p.kind == "Secret"
                            && gone.contains(
                                &crate::core::model::object_ref("Secret", &p.name, &p.namespace)
                                    .as_str(),
                            ))
                    })
                    .map(move |p| {
                    let helm = (r.owner.kind == "HelmRelease"
                        && p.annotation == crate::core::gitops::prune_protection("HelmRelease").0
                        && matches!(p.kind.as_str(), "VPNGateway" | "VPNPeer"))
                    .then(|| {
                        let (release, ns) = releases
                            .iter()
                            .find(|(o, _)| o == &r.owner)
                            .map(|(_, rel)| rel.clone())
                            .unwrap_or_else(|| (r.owner.name.clone(), r.owner.namespace.clone().unwrap_or_default()));
                        format!("; {}", crate::core::gitops::helm_kept_check(&release, &ns, &[p]))
                    });
                    let remove = if let Some(helm) = helm {
                        helm
                    } else if crate::core::gitops::keeps_from_overwrite(p) {
                        format!(
                            "; once the repository's copy holds the client's key, `kubectl annotate {} {} -n {} {}-` removes it",
                            p.kind.to_lowercase(),
                            p.name,
                            p.namespace,
                            p.annotation
                        )
                    } else {
                        String::new()
                    };
                    // The PSK Secret's prune protection: plain about what it is for
                    // (a21g attacks 07, 12b: a resume without it deleted the key).
                    let psk = if !crate::core::gitops::keeps_from_overwrite(p)
                        && p.kind == "Secret"
                        && (p.namespace.as_str(), p.name.as_str())
                            == (j.namespace.as_str(), j.psk_secret.as_str())
                    {
                        format!(
                            "; it is the PSK: a resume of {} with a {} without this Secret deletes the client's key unless the annotation stays",
                            r.owner.display(),
                            if r.owner.kind == "HelmRelease" {
                                "chart"
                            } else {
                                "source"
                            }
                        )
                    } else {
                        String::new()
                    };
                    format!(
                        "{} by the window of {}/{}, from {}{remove}{psk}",
                        p.display(),
                        j.namespace,
                        j.gateway,
                        r.owner.display()
                    )
                })
            })
        })
        .collect();
    // The owners a finished window let go of: their resume is a person's (a21g 12b:
    // `status` said nothing more, and the other team's resume pruned the PSK Secret).
    // Its source still defining what the window replaced is said as on every let-go
    // line: a resume before the merge re-creates it (a21o D29: a colleague's freeze after
    // `done`, let go, and nothing here said so).
    let mut let_go = Vec::new();
    for j in &parsed {
        for r in j.gitops.iter().filter(|r| !r.paused) {
            let Some(why) = r.let_go.as_ref() else {
                continue;
            };
            let kept = r.protected.len();
            use crate::cluster::gitops::{Found, find};
            let defines = match find(cluster, &r.owner).await {
                Ok(Found::One(_, o)) => {
                    match crate::window::source_still_defines(j, &r.owner, Some(&o)) {
                        Some((true, d)) => format!(" Do not resume it yet: {d}."),
                        Some((false, d)) => format!(
                            " Do not resume it before its source no longer defines what the window replaced: {d}."
                        ),
                        None => String::new(),
                    }
                }
                _ => String::new(),
            };
            let_go.push(format!(
                    "{} (by the window of {}/{}, journal phase {}; {why}): vpnmig no longer holds it and never resumes it; its resume is a person's, and nothing watches its first sync.{defines} {}",
                    r.owner.display(),
                    j.namespace,
                    j.gateway,
                    j.phase,
                    if kept == 0 {
                        "The window set no protection from it (it tracks nothing the window keeps, or the protection was refused: a \"PSK not protected\" line below names each key left bare); check its source before any resume".to_string()
                    } else {
                        format!(
                            "The window set {kept} protection(s) from it (\"kept from …\" below): keep them; a resume of a source or chart without secret/{} -n {} deletes the client's key unless the protection stays",
                            j.psk_secret, j.namespace
                        )
                    }
            ));
        }
    }
    let mut suspended: Vec<Suspended> = suspended;
    for s in &mut suspended {
        let record = parsed
            .iter()
            .filter(|j| j.namespace == s.namespace && j.gateway == s.gateway)
            .flat_map(|j| j.gitops.iter().map(move |r| (j, r)))
            .find(|(_, r)| r.paused && r.owner.display() == s.owner);
        if let Some((j, r)) = record {
            read_back(cluster, j, r, s).await;
            if s.live == "suspended" || s.live == "changed" {
                ignoring(cluster, j, r, s).await;
            }
        }
    }
    let fip_of = |o: &serde_json::Value| {
        o.pointer("/spec/endpoint/floatingIP")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
    };
    let pins = parsed
        .iter()
        .filter_map(|j| {
            let (kind, fip) = match j.phase {
                crate::core::journal::Phase::Done => (
                    "VPNGateway",
                    j.targets
                        .iter()
                        .find(|t| t["kind"] == "VPNGateway")
                        .and_then(fip_of)?,
                ),
                crate::core::journal::Phase::RolledBack => {
                    ("IPsecGateway", fip_of(&j.old_manifest)?)
                }
                _ => return None,
            };
            Some((j.namespace.clone(), j.gateway.clone(), kind, fip))
        })
        .collect();
    let made = parsed
        .iter()
        .filter(|j| j.phase == crate::core::journal::Phase::Done)
        .map(|j| {
            (
                j.namespace.clone(),
                j.gateway.clone(),
                j.targets
                    .iter()
                    .filter(|t| t["kind"] == "VPNPeer")
                    .filter_map(|t| {
                        t.pointer("/metadata/name")
                            .and_then(serde_json::Value::as_str)
                    })
                    .map(str::to_string)
                    .collect(),
            )
        })
        .collect();
    Windows {
        open,
        lost,
        suspended,
        parents,
        protected,
        let_go,
        psk,
        pins,
        fip: Vec::new(),
        made,
        // An edit of the old gateway made while it was being deleted (a21r R06b).
        extra: parsed
            .iter()
            .filter_map(|j| j.edited_while_deleting_text())
            .collect(),
        finished: parsed.into_iter().filter(|j| j.phase.finished()).collect(),
        gone: Vec::new(),
        shared: Vec::new(),
        live_again: Vec::new(),
        elsewhere: Vec::new(),
        unknown: None,
    }
}

/// Every finished window whose gateway the table does not show as the kind it left is
/// said, with what to do; the row of the other kind, if any, gets the blocker
/// `gateway-gone` (a21e 6, 11: a rolled-back gateway pruned after its window, and the
/// table, `status` and `verify` were silent or said "no journal").
/// The finished cutovers whose replaced IPsecGateway is live again beside their
/// VPNGateway (both kinds of one name in `rows`): each named with its delete, whichever
/// owner (or none) the window holds (a21m B02, B11: another window's restore or a person
/// re-created it, and `status -A` named neither).
fn mark_live_again(rows: &[Row], windows: &mut Windows) {
    for j in &windows.finished {
        if j.phase != crate::core::journal::Phase::Done {
            continue;
        }
        let (ns, name) = (j.namespace.as_str(), j.gateway.as_str());
        let both = rows.iter().any(|r| {
            r.namespace == ns && r.name == name && r.migrated == status::Migration::InProgress
        }) || (rows
            .iter()
            .any(|r| r.namespace == ns && r.name == name && r.kind == "IPsecGateway")
            && rows
                .iter()
                .any(|r| r.namespace == ns && r.name == name && r.kind == "VPNGateway"));
        if !both {
            continue;
        }
        let delete = format!("`kubectl delete ipsecgateway {name} -n {ns}`");
        let line = format!(
            "gateway live again: ipsecgateway/{name} -n {ns}, which the finished cutover of {ns}/{name} replaced, is live beside vpngateway/{name} -n {ns} and contests the floating IP {}: delete it ({delete}) once nothing re-creates it (`vpnmig cutover {name} -n {ns}` names what may have); until then every run of that window stops on it (exit 5), and no restore of an owner it shares re-arms it",
            j.floating_ip
        );
        if !windows.live_again.iter().any(|(d, _)| d == &delete) {
            windows.live_again.push((delete, line));
        }
    }
}

/// `-n`: the gateways of other namespaces that claim a finished window's floating IP,
/// read cluster-wide once (one list per kind, not per window); each window's row gets
/// the blocker `fip-shared`, as under `-A`, where its rows hold every gateway (a21o D15,
/// D17: `-n` named none, its check saw the listed rows only). A refused or unanswered
/// list is said for each window, never read as "none".
async fn mark_claimed_elsewhere(cluster: &Cluster, rows: &mut [Row], windows: &mut Windows) {
    windows.elsewhere.clear();
    let here = cluster.namespace.as_str();
    let pins: Vec<_> = windows
        .pins
        .iter()
        .filter(|(_, _, _, fip)| !fip.trim().is_empty())
        .cloned()
        .collect();
    if pins.is_empty() {
        return;
    }
    let all = match crate::cluster::facts::other_gateways(cluster, &(String::new(), String::new()))
        .await
    {
        Ok(Ok(all)) => Ok(all),
        Ok(Err(why)) => Err(why),
        Err(e) => Err(e.to_string()),
    };
    for (ns, gateway, kind, fip) in pins {
        let (claimed_by, unread) = match &all {
            Err(why) => (Vec::new(), Some(why.clone())),
            Ok(all) => (
                all.iter()
                    .filter(|o| o.namespace != here && o.namespace != ns)
                    .filter(|o| {
                        o.floating_ip
                            .as_deref()
                            .is_some_and(|f| crate::core::addr::same_addr(f, &fip))
                    })
                    .map(|o| {
                        let k = o.object.split(' ').next().unwrap_or_default().to_string();
                        crate::core::record::FipClaimant {
                            delete: format!(
                                "kubectl delete {} {} -n {}",
                                k.to_lowercase(),
                                o.name,
                                o.namespace
                            ),
                            kind: k,
                            namespace: o.namespace.clone(),
                            name: o.name.clone(),
                        }
                    })
                    .collect(),
                None,
            ),
        };
        if claimed_by.is_empty() && unread.is_none() {
            continue;
        }
        if !claimed_by.is_empty() {
            for r in rows
                .iter_mut()
                .filter(|r| r.namespace == ns && r.name == gateway && r.kind == kind)
            {
                let b = r.blockers.get_or_insert_with(Vec::new);
                if !b.contains(&"fip-shared") {
                    b.push("fip-shared");
                }
            }
        }
        windows.elsewhere.push(ClaimedElsewhere {
            namespace: ns,
            gateway,
            kind,
            floating_ip: fip,
            claimed_by,
            unread,
        });
    }
}

fn mark_left(rows: &mut [Row], windows: &mut Windows) {
    let present = serde_json::json!({});
    for j in &windows.finished {
        let (ns, name) = (j.namespace.as_str(), j.gateway.as_str());
        let row = |kind: &str| {
            rows.iter()
                .any(|r| r.namespace == ns && r.name == name && r.kind == kind)
                .then_some(&present)
        };
        let state = j.left(row("IPsecGateway"), row("VPNGateway"));
        let Some(text) = j.left_text(state) else {
            continue;
        };
        let kind = j.left_kind().unwrap_or_default();
        let now = match state {
            crate::core::journal::Left::OtherKind => {
                let other = if kind == "VPNGateway" {
                    "IPsecGateway"
                } else {
                    "VPNGateway"
                };
                for r in rows
                    .iter_mut()
                    .filter(|r| r.namespace == ns && r.name == name && r.kind == other)
                {
                    let b = r.blockers.get_or_insert_with(Vec::new);
                    if !b.contains(&"gateway-gone") {
                        b.push("gateway-gone");
                    }
                }
                other.to_string()
            }
            _ => "nothing".to_string(),
        };
        let todo = j.left_todo(state).unwrap_or_default();
        // Another gateway claiming its floating IP now: a re-create would wait at
        // AlreadyAssociated, and the rollback refuses (a21f A5).
        let fip = j.left_fip();
        let squatters: Vec<String> = rows
            .iter()
            .filter(|r| !(r.namespace == ns && r.name == name))
            .filter(|r| {
                r.floating_ip
                    .as_deref()
                    .is_some_and(|f| crate::core::addr::same_addr(f, &fip))
            })
            .map(|r| crate::core::model::object_ref(r.kind, &r.name, &r.namespace))
            .collect();
        let todo = if squatters.is_empty() {
            todo
        } else {
            format!(
                "{} claims floating IP {fip} now, so a re-created gateway would wait at AlreadyAssociated: find out why and take it out of that gateway's spec (in its repository first where Argo CD or Flux syncs it); then {todo}",
                squatters.join(" and ")
            )
        };
        windows.gone.push(GoneGateway {
            namespace: ns.to_string(),
            gateway: name.to_string(),
            phase: j.phase.to_string(),
            kind: kind.to_string(),
            now,
            detail: format!("{text}: {todo}"),
        });
    }
}

/// Every parent of a GitOps owner whose suspension a window relies on (a21g attack 16;
/// issue 21 items 2 and 4): the window went on only because the parent does not sync,
/// and its sync would put the owner's policy back. Named until the owner is restored and
/// the window finished ([`crate::core::holders::parent_relied_on`]); one that syncs again
/// meanwhile is said (its sync re-arms the owner), never silence. vpnmig never resumes a
/// parent it did not suspend.
async fn relied_parents(
    cluster: &Cluster,
    parsed: &[crate::core::journal::Journal],
) -> Vec<ReliedParent> {
    use crate::cluster::gitops::{Found, find};
    use crate::core::gitops;
    use crate::core::journal::Phase;
    let mut out = Vec::new();
    for j in parsed {
        let (ns, name) = (j.namespace.as_str(), j.gateway.as_str());
        for p in j
            .gitops_parents
            .iter()
            .filter(|p| crate::core::holders::parent_relied_on(j, p))
        {
            let Some(child) = &p.parent_of else { continue };
            // A member of a cycle is a parent of two levels (the owner's, and the
            // member's it applies back): named once per window (a21m B05).
            if out.iter().any(|o: &ReliedParent| {
                o.namespace == ns && o.gateway == name && o.parent == p.owner.display()
            }) {
                continue;
            }
            // The owner at the bottom of the parent's chain (a parent of a parent: a21i
            // 06, 09): what the reliance waits for.
            let Some(bottom) = crate::core::holders::bottom_owner(j, p) else {
                continue;
            };
            let paused = bottom.paused;
            let flux = bottom.owner.kind != "Application";
            let resume = if flux { " --gitops resume" } else { "" };
            let until = if !paused {
                format!(
                    "this window is done and the window that suspended {} restored it",
                    bottom.owner.display()
                )
            } else if j.phase == Phase::Done {
                format!(
                    "the repository change is merged and `vpnmig cutover {name} -n {ns}{resume}` restored {}",
                    bottom.owner.display()
                )
            } else if j.phase == Phase::RolledBack {
                format!(
                    "the repository change is reverted and `vpnmig rollback {name} -n {ns}{resume}` restored {}",
                    bottom.owner.display()
                )
            } else if j.phase.rolling_back() {
                format!(
                    "the rollback (`vpnmig rollback {name} -n {ns}`) finished and restored {}",
                    bottom.owner.display()
                )
            } else {
                format!(
                    "the window finished (`vpnmig cutover {name} -n {ns}` goes on, `vpnmig rollback {name} -n {ns}` goes back) and restored {}",
                    bottom.owner.display()
                )
            };
            let keep = if p.owner.kind == "ApplicationSet" {
                format!(
                    "keep `spec.syncPolicy.applicationsSync: create-only` on {} until {until}; then set it back yourself",
                    p.owner.display()
                )
            } else {
                format!(
                    "keep {} suspended until {until}; then resume it yourself",
                    p.owner.display()
                )
            };
            let keep = format!("{keep} (vpnmig never resumes a parent it did not suspend)");
            let (live, advice) = match (find(cluster, &p.owner).await, find(cluster, child).await) {
                (Ok(Found::One(_, parent)), Ok(Found::One(_, owner))) => {
                    let (acts, st) = gitops::relied_parent_acts(&parent, &owner);
                    // A relied-on parent above it that syncs too applies it back over a
                    // suspension of it alone: that one first (a21i 06, 09).
                    let mut first = String::new();
                    for q in j.gitops_parents.iter().filter(|q| {
                        q.relies
                            && q.parent_of
                                .as_ref()
                                .is_some_and(|c| gitops::same_owner(c, &p.owner))
                    }) {
                        if let Ok(Found::One(_, above)) = find(cluster, &q.owner).await
                            && gitops::relied_parent_acts(&above, &parent).0
                        {
                            first = format!(
                                "{} first (it applies {} back, over a suspension of it alone); then ",
                                crate::window::parent_fix_verb(&q.owner),
                                p.owner.display()
                            );
                        }
                    }
                    if acts {
                        (
                            "re-enabled",
                            format!(
                                "re-enabled by someone else while the window of {ns}/{name} relies on it (now {}): its sync re-arms the child {}, which re-creates what the window replaced and contests the floating IP; {first}{} again, and {keep}",
                                st.how,
                                child.display(),
                                crate::window::parent_fix_verb(&p.owner)
                            ),
                        )
                    } else {
                        ("suspended", keep)
                    }
                }
                (Err(e), _) | (_, Err(e)) => {
                    ("unknown", format!("it could not be read ({e}): {keep}"))
                }
                (Ok(Found::One(..)), Ok(_)) => (
                    "suspended",
                    format!(
                        "the cluster has no {} now; resumed, its sync may create it again as its source defines it: {keep}",
                        child.display()
                    ),
                ),
                (Ok(_), Ok(_)) => (
                    "gone",
                    format!(
                        "the cluster has no {} {} now: nothing of it re-arms {}",
                        p.owner.kind,
                        p.owner.name,
                        child.display()
                    ),
                ),
            };
            out.push(ReliedParent {
                namespace: ns.to_string(),
                gateway: name.to_string(),
                phase: j.phase.to_string(),
                parent: p.owner.display(),
                owner: child.display(),
                live: live.to_string(),
                advice,
            });
        }
        // The parents the window relied on for an owner it let go of since (its policy
        // changed, re-enabled, re-created, gone): no longer relied on, but suspended for
        // the window, and nothing else would name them again (a21i 10). Named while they
        // read suspended, with what their resume does now.
        for p in j.gitops_parents.iter().filter(|p| p.relies) {
            let Some(child) = &p.parent_of else { continue };
            // A member of a cycle: once per window (a21m B05).
            if out.iter().any(|o: &ReliedParent| {
                o.namespace == ns && o.gateway == name && o.parent == p.owner.display()
            }) {
                continue;
            }
            let Some(bottom) = crate::core::holders::bottom_owner(j, p) else {
                continue;
            };
            let Some(why) = bottom.let_go.as_deref() else {
                continue;
            };
            if crate::core::holders::parent_relied_on(j, p) {
                continue;
            }
            let (Ok(Found::One(_, parent)), Ok(Found::One(_, below))) =
                (find(cluster, &p.owner).await, find(cluster, child).await)
            else {
                continue;
            };
            if gitops::relied_parent_acts(&parent, &below).0 {
                continue;
            }
            let still: Vec<String> = parsed
                .iter()
                .filter(|o| (o.namespace.as_str(), o.gateway.as_str()) != (ns, name))
                .filter(|o| {
                    o.gitops_parents.iter().any(|q| {
                        gitops::same_owner(&q.owner, &p.owner)
                            && crate::core::holders::parent_relied_on(o, q)
                    })
                })
                .map(|o| {
                    format!(
                        "the window of {}/{} (journal phase {})",
                        o.namespace, o.gateway, o.phase
                    )
                })
                .collect();
            let b = bottom.owner.display();
            // Its child's source still defines what the window replaced (or the owner
            // cannot be read): its resume re-creates it; never "may be resumed" (a21n C13).
            let defines = match find(cluster, &bottom.owner).await {
                Ok(Found::One(_, o)) => {
                    crate::window::source_still_defines(j, &bottom.owner, Some(&o))
                }
                Ok(_) => None,
                Err(e) => Some((
                    true,
                    format!(
                        "{b} could not be read ({e}), so whether its source still defines what the window replaced is unknown: check that first"
                    ),
                )),
            };
            let todo = match (&defines, still.is_empty()) {
                (Some((true, d)), true) => {
                    format!("do not resume it yet: its sync re-arms {b}, and {d}")
                }
                (Some((true, d)), false) => format!(
                    "do not resume it yet: its sync re-arms {b}, and {d}; and {}",
                    holders::keep_for(&still)
                ),
                (Some((false, d)), true) => format!(
                    "no other vpnmig window relies on it: it may be resumed when its own repository is as it should be, and not before the source of {b} no longer defines what the window replaced: {d}"
                ),
                (Some((false, d)), false) => format!("{}; and {d}", holders::keep_for(&still)),
                (None, true) => "no other vpnmig window relies on it: it may be resumed when its own repository is as it should be".to_string(),
                (None, false) => holders::keep_for(&still),
            };
            out.push(ReliedParent {
                namespace: ns.to_string(),
                gateway: name.to_string(),
                phase: j.phase.to_string(),
                parent: p.owner.display(),
                owner: child.display(),
                live: "let-go".into(),
                advice: format!(
                    "the window let go of {b} ({why}) and no longer relies on its suspension; {todo}; resumed, its sync writes the policy of {b} back as the source has it, over the one set since, so resume it only when whoever set that agrees (vpnmig never resumes a parent it did not suspend)"
                ),
            });
        }
        // The parents a stop of a window still open named (a21k N11: suspended by hand as
        // the stop asked, then the window was deferred, and nothing named them again):
        // named while they read suspended, until the window is closed.
        if !j.phase.finished() {
            let mut named: Vec<&gitops::OwnerRef> = Vec::new();
            for p in j.gitops_parents.iter().filter(|p| !p.relies) {
                let Some(child) = &p.parent_of else { continue };
                if named.iter().any(|o| gitops::same_owner(o, &p.owner))
                    || j.gitops_parents
                        .iter()
                        .any(|q| q.relies && gitops::same_owner(&q.owner, &p.owner))
                {
                    continue;
                }
                named.push(&p.owner);
                let Ok(Found::One(_, parent)) = find(cluster, &p.owner).await else {
                    continue;
                };
                let suspended = if parent["kind"] == "ApplicationSet" {
                    !gitops::parent_state(&parent, &serde_json::Value::Null).puts_back
                } else {
                    !gitops::owner_state(&parent, "", "", "").active
                };
                if !suspended {
                    continue;
                }
                out.push(ReliedParent {
                    namespace: ns.to_string(),
                    gateway: name.to_string(),
                    phase: j.phase.to_string(),
                    parent: p.owner.display(),
                    owner: child.display(),
                    live: "named".into(),
                    advice: format!(
                        "a stop of this window asked for its suspension, and it reads suspended: keep it so while the window is open (`vpnmig cutover {name} -n {ns}` goes on, `vpnmig rollback {name} -n {ns}` closes it); vpnmig never resumes it: once the window is closed, resume it yourself ({})",
                        crate::window::resume_yourself(&p.owner)
                    ),
                });
            }
        }
    }
    // The parents a window relied on or a stop of it named, that no window relies on any
    // more (its owner restored, the window closed) and that still read suspended: nothing
    // else names them, and vpnmig never resumes one (a21l A04, A06: forgotten after the
    // rollback of a window that deleted nothing, after a finished restore). Named, with
    // the command that resumes them, until they are resumed.
    // Every namespace's journals, read once and only when such a parent is found: a
    // window elsewhere that relies on it still holds it (a21j 04a's kind).
    // A refused list is said ("unknown"), never read as "no other window".
    let mut everywhere: Option<Result<Vec<crate::core::journal::Journal>, String>> = None;
    for j in parsed {
        let (ns, name) = (j.namespace.as_str(), j.gateway.as_str());
        for p in &j.gitops_parents {
            let Some(child) = &p.parent_of else { continue };
            let shown = p.owner.display();
            let relied = |o: &crate::core::journal::Journal| {
                o.gitops_parents.iter().any(|q| {
                    gitops::same_owner(&q.owner, &p.owner)
                        && crate::core::holders::parent_relied_on(o, q)
                })
            };
            if out.iter().any(|o: &ReliedParent| o.parent == shown) || parsed.iter().any(relied) {
                continue;
            }
            let Ok(Found::One(_, parent)) = find(cluster, &p.owner).await else {
                continue;
            };
            if !crate::window::parent_reads_suspended(&parent) {
                continue;
            }
            if everywhere.is_none() {
                // Every namespace's, or none: `journal::list` falls back to one namespace
                // when that is refused, which would read as "no window elsewhere".
                everywhere = Some(
                    crate::cluster::journal::list_in(cluster, None)
                        .await
                        .map(|l| l.journals)
                        .map_err(|e| e.to_string()),
                );
            }
            let all = match everywhere.as_ref() {
                Some(Ok(e)) if !e.is_empty() => e.as_slice(),
                Some(Err(why)) => {
                    out.push(ReliedParent {
                        namespace: ns.to_string(),
                        gateway: name.to_string(),
                        phase: j.phase.to_string(),
                        parent: shown,
                        owner: child.display(),
                        live: "unknown".into(),
                        advice: format!(
                            "suspended for this window, and whether another window relies on it cannot be read (the journals of every namespace could not be listed: {why}): keep it suspended until `vpnmig status -A` with a context that can list them names none; vpnmig never resumes a parent ({})",
                            crate::window::resume_yourself(&p.owner)
                        ),
                    });
                    continue;
                }
                _ => parsed,
            };
            if all.iter().any(relied) {
                continue;
            }
            // Above a level another window relies on (or an owner it holds): its resume
            // would put that level back (a21m B07), so it is kept, never "left".
            let needers = holders::needers(all, &p.owner, (ns, name));
            if !needers.is_empty() {
                out.push(ReliedParent {
                    namespace: ns.to_string(),
                    gateway: name.to_string(),
                    phase: j.phase.to_string(),
                    parent: shown,
                    owner: child.display(),
                    live: "kept".into(),
                    advice: format!(
                        "suspended for this window, and it applies {} back, above what {} {} on: its resume re-arms that; {}; vpnmig never resumes a parent: only then resume it yourself ({})",
                        child.display(),
                        needers.join(", "),
                        if needers.len() == 1 { "relies" } else { "rely" },
                        holders::keep_for(&needers),
                        crate::window::resume_yourself(&p.owner)
                    ),
                });
                continue;
            }
            let why = match crate::core::holders::bottom_owner(j, p) {
                Some(r) if r.restored_at.is_some() => format!("{} is restored", r.owner.display()),
                _ if j.phase.finished() => "the window is closed".to_string(),
                _ => format!("{} is not held", child.display()),
            };
            out.push(ReliedParent {
                namespace: ns.to_string(),
                gateway: name.to_string(),
                phase: j.phase.to_string(),
                parent: shown,
                owner: child.display(),
                live: "left".into(),
                advice: format!(
                    "suspended for this window, and no vpnmig window relies on it any more ({why}); it still reads suspended, and vpnmig never resumes a parent: resume it yourself ({}) when its own repository is as it should be",
                    crate::window::resume_yourself(&p.owner)
                ),
            });
        }
    }
    out
}

/// Each window among `all` (other than `me`) that suspended `owner` and holds it, with the
/// command that finishes it and restores the owner: who a relying window must wait for,
/// wherever its namespace is (a21j 04a: a namespace-scoped `status` missed the suspender
/// in another namespace and printed a resume by hand that contended a floating IP).
fn pausers(
    all: &[crate::core::journal::Journal],
    owner: &crate::core::gitops::OwnerRef,
    me: (&str, &str),
) -> Vec<String> {
    use crate::core::journal::Phase;
    holders::holders(all, owner, me)
        .iter()
        .filter(|h| h.paused)
        .map(|h| {
            // A window rolling back is finished by its rollback, never by a cutover
            // (a21d E).
            let verb = if h.phase == Phase::RolledBack || h.phase.rolling_back() {
                "rollback"
            } else {
                "cutover"
            };
            format!(
                "the window of {}/{} (journal phase {}) suspended it and restores it (`vpnmig {verb} {} -n {}`) once no window relies on it",
                h.namespace,
                h.gateway,
                h.phase.as_str(),
                h.gateway,
                h.namespace
            )
        })
        .collect()
}

/// Every GitOps owner a window holds (issue 21 item 2): each a window suspended and has
/// not restored, with the windows under way that rely on it; and each a window under
/// way relies on that no listed window suspended. The advice never offers a restore
/// while a window relies on the owner, nor `--gitops resume` when the PSK Secret is gone.
async fn suspended_owners(
    cluster: &Cluster,
    parsed: &[crate::core::journal::Journal],
) -> Vec<Suspended> {
    use crate::core::gitops;
    use crate::core::journal::Phase;
    let mut out = Vec::new();
    for j in parsed {
        let (ns, name) = (&j.namespace, &j.gateway);
        for r in &j.gitops {
            let holders = holders::holders(parsed, &r.owner, (ns, name));
            // Restored by a finished window and suspended again since (a stop's advice
            // to suspend it, followed; a21m B12: named nowhere after that, it never
            // synced again): no window holds it, so it is named with its resume until
            // it is resumed.
            if !r.paused
                && j.phase.finished()
                && let Some(at) = &r.restored_at
                && !holders.iter().any(|h| h.paused)
                && let Ok(crate::cluster::gitops::Found::One(_, o)) =
                    crate::cluster::gitops::find(cluster, &r.owner).await
                && !gitops::owner_state(&o, "IPsecGateway", ns, name).active
            {
                let replaced = if j.phase == Phase::RolledBack {
                    "VPNGateway"
                } else {
                    "IPsecGateway"
                };
                out.push(Suspended {
                    namespace: ns.clone(),
                    gateway: name.clone(),
                    phase: j.phase.to_string(),
                    owner: r.owner.display(),
                    resume: format!(
                        "no vpnmig window holds it, and vpnmig never resumes it. {}",
                        crate::window::resume_by_hand(
                            &r.owner,
                            replaced,
                            j,
                            Some(&o),
                            &crate::window::helm_psks(cluster, &r.owner, j, parsed).await
                        )
                    ),
                    relies: false,
                    relied_on_by: Vec::new(),
                    live: "suspended-again".into(),
                    live_detail: format!("suspended again after the window restored it at {at}"),
                });
                continue;
            }
            if !r.paused {
                // A finished window that relied on an owner no vpnmig window suspended
                // (`--gitops ignore`: the engineer did): while it is still suspended, it
                // is listed with what to check before the resume by hand (attack 14).
                if j.phase.finished()
                    && r.relies_on_suspension()
                    && r.restored_at.is_none()
                    && !holders.iter().any(|h| h.paused)
                {
                    let replaced = if j.phase == Phase::RolledBack {
                        "VPNGateway"
                    } else {
                        "IPsecGateway"
                    };
                    if let Ok(crate::cluster::gitops::Found::One(_, o)) =
                        crate::cluster::gitops::find(cluster, &r.owner).await
                        && !gitops::owner_state(&o, replaced, ns, name).active
                    {
                        // Every namespace's journals, where the restore looks: a window
                        // elsewhere that suspended it and holds it is who resumes it,
                        // and no resume by hand is offered then (a21j 04a).
                        let all = match crate::window::journals_for(cluster, Some(&o), (ns, name))
                            .await
                        {
                            Ok(all) => all,
                            Err(why) => {
                                out.push(Suspended {
                                    namespace: ns.clone(),
                                    gateway: name.clone(),
                                    phase: j.phase.to_string(),
                                    owner: r.owner.display(),
                                    resume: format!(
                                        "which window suspended it cannot be read ({why}): no resume by hand is offered while a window may hold it; `vpnmig status -A` with a context that may list the journals names them"
                                    ),
                                    relies: true,
                                    relied_on_by: Vec::new(),
                                    live: "suspended".into(),
                                    live_detail: String::new(),
                                });
                                continue;
                            }
                        };
                        let by = pausers(&all, &r.owner, (ns, name));
                        if !by.is_empty() {
                            out.push(Suspended {
                                namespace: ns.clone(),
                                gateway: name.clone(),
                                phase: j.phase.to_string(),
                                owner: r.owner.display(),
                                resume: format!(
                                    "{}; do not resume it by hand: its sync would re-create what that window replaces",
                                    by.join("; ")
                                ),
                                relies: true,
                                relied_on_by: Vec::new(),
                                live: "suspended".into(),
                                live_detail: String::new(),
                            });
                            continue;
                        }
                        // The window that suspended it may have let go of it since
                        // (its policy changed, re-enabled, re-created): that is who
                        // suspended it, not nobody (a21h 03, 07).
                        let let_go = holders::let_go_by(&all, &r.owner).map(|l| {
                            format!("{l}: vpnmig no longer holds it and does not resume it")
                        });
                        let who = let_go.unwrap_or_else(|| {
                            "no vpnmig window suspended it (it was suspended before the window): vpnmig does not resume it".to_string()
                        });
                        // Its PSK Secret carries the owner's markers and not its prune
                        // protection: no resume by hand is handed out, whatever the
                        // source holds (a21i 11: "if it has one" passed a source without
                        // the Secret, and the resume pruned the key).
                        let bare = match crate::cluster::gitops::get_kept(
                            cluster,
                            "v1",
                            "Secret",
                            ns,
                            &j.psk_secret,
                        )
                        .await
                        {
                            Ok(Some(sec)) => gitops::unprotected(&r.owner, &sec),
                            _ => false,
                        };
                        let then = if bare {
                            let (key, value) = gitops::prune_protection(&r.owner.kind);
                            format!(
                                "Do not resume it yet: secret/{} -n {ns} (the PSK) carries its markers and not {key}={value}, so a resume of a source without it deletes the client's key, which vpnmig does not hold: `kubectl annotate secret {} -n {ns} {key}={value}` first (with a context the cluster's policy allows), or put the Secret in its repository; `vpnmig status -n {ns}` then gives the checks before its resume",
                                j.psk_secret, j.psk_secret
                            )
                        } else {
                            crate::window::resume_by_hand(
                                &r.owner,
                                replaced,
                                j,
                                Some(&o),
                                &crate::window::helm_psks(cluster, &r.owner, j, &all).await,
                            )
                        };
                        out.push(Suspended {
                            namespace: ns.clone(),
                            gateway: name.clone(),
                            phase: j.phase.to_string(),
                            owner: r.owner.display(),
                            resume: format!("{who}. {then}"),
                            relies: true,
                            relied_on_by: Vec::new(),
                            live: "suspended".into(),
                            live_detail: String::new(),
                        });
                    }
                    continue;
                }
                // Relied on, by a window under way, and suspended by no listed window.
                if j.phase.finished()
                    || !r.relies_on_suspension()
                    || holders.iter().any(|h| h.paused)
                {
                    continue;
                }
                // The window that suspended it may be in another namespace (second
                // attack, 4): look where the restore looks before saying nobody did.
                let owner_obj = match crate::cluster::gitops::find(cluster, &r.owner).await {
                    Ok(crate::cluster::gitops::Found::One(_, o)) => Some(o),
                    _ => None,
                };
                let resume = match crate::window::journals_for(
                    cluster,
                    owner_obj.as_ref(),
                    (ns, name),
                )
                .await
                {
                    Ok(all) => {
                        let by = pausers(&all, &r.owner, (ns, name));
                        // A window that suspended it and let go of it since (its policy
                        // changed, re-enabled, re-created, gone): that is who suspended
                        // it, not nobody (a21i 01, 07).
                        let let_go = holders::let_go_by(&all, &r.owner).map(|l| {
                            format!("{l}: vpnmig no longer holds it, and nothing vpnmig does resumes or keeps it suspended")
                        });
                        if !by.is_empty() {
                            by.join("; ")
                        } else if let Some(l) = let_go {
                            l
                        } else {
                            "no vpnmig window suspended it: it stays suspended until whoever suspended it resumes it, after this window is done".to_string()
                        }
                    }
                    Err(why) => format!(
                        "which window suspended it cannot be read ({why}); it stays suspended until this window is done"
                    ),
                };
                // The live owner, read back (a21i 01, 07: "not read back … stays
                // suspended" after the owner synced again and re-created the gateway).
                let (live, live_detail, resume) = match owner_obj.as_ref() {
                    Some(o) if gitops::owner_state(o, "IPsecGateway", ns, name).active => (
                        "re-enabled",
                        "it syncs automatically again".to_string(),
                        format!(
                            "{resume}; it syncs again while this window is under way: a source that still defines ipsecgateway/{name} -n {ns} re-creates it beside the new objects and contests the floating IP: suspend it again (`{}`) before `vpnmig cutover {name} -n {ns}` goes on or `vpnmig rollback {name} -n {ns}` goes back",
                            gitops::pause_command(&r.owner)
                        ),
                    ),
                    Some(o) => {
                        let hands = gitops::hand_writers(o);
                        (
                            "suspended",
                            if hands.is_empty() {
                                String::new()
                            } else {
                                format!("its policy last written by {}", hands.join(", "))
                            },
                            format!(
                                "{resume}; it must stay suspended until this window is done: `vpnmig cutover {name} -n {ns}` goes on, `vpnmig rollback {name} -n {ns}` goes back"
                            ),
                        )
                    }
                    None => ("unknown", String::new(), resume),
                };
                out.push(Suspended {
                    namespace: ns.clone(),
                    gateway: name.clone(),
                    phase: j.phase.to_string(),
                    owner: r.owner.display(),
                    resume,
                    relies: true,
                    relied_on_by: Vec::new(),
                    live: live.into(),
                    live_detail,
                });
                continue;
            }
            // The other windows on the owner wherever their gateways are, as the restore
            // finds them (attack finding A9): every namespace where journals may be
            // listed, else the namespaces the owner's status names.
            let owner_obj = match crate::cluster::gitops::find(cluster, &r.owner).await {
                Ok(crate::cluster::gitops::Found::One(_, o)) => Some(o),
                _ => None,
            };
            let (holders, unread, all) =
                match crate::window::journals_for(cluster, owner_obj.as_ref(), (ns, name)).await {
                    Ok(mut all) => {
                        all.retain(|a| {
                            !parsed
                                .iter()
                                .any(|p| p.namespace == a.namespace && p.gateway == a.gateway)
                        });
                        all.extend(parsed.iter().cloned());
                        (holders::holders(&all, &r.owner, (ns, name)), None, all)
                    }
                    Err(why) => (holders, Some(why), parsed.to_vec()),
                };
            let relied_on_by: Vec<String> = holders
                .iter()
                .filter(|h| h.in_flight())
                .map(|h| format!("{}/{} ({})", h.namespace, h.gateway, h.phase.as_str()))
                .collect();
            // What each finished window on the owner replaced: its source must no longer
            // define it before a restore (attack finding A2). Said as what must be true,
            // never as a fact the journal's phase cannot show (a21s S01b: "merged" before
            // anything was merged).
            // A window whose user vouched for its change (a21f B1) counts as merged.
            let vouch_cmds: Vec<String> = holders
                .iter()
                .filter(|h| !h.in_flight() && !h.vouched)
                .map(|h| {
                    let v = if h.phase == Phase::Done {
                        "cutover"
                    } else {
                        "rollback"
                    };
                    format!(
                        "`vpnmig {v} {} -n {} --gitops resume`",
                        h.gateway, h.namespace
                    )
                })
                .collect();
            let finished: Vec<String> = holders
                .iter()
                .filter(|h| !h.in_flight() && !h.vouched)
                .map(|h| {
                    let (kind, change) = if h.phase == Phase::Done {
                        ("ipsecgateway", "merged")
                    } else {
                        ("vpngateway", "reverted")
                    };
                    format!(
                        "{}/{} ({}: its repository change must be {change}, so that the source no longer defines {kind}/{} -n {})",
                        h.namespace,
                        h.gateway,
                        h.phase.as_str(),
                        h.gateway,
                        h.namespace
                    )
                })
                .collect();
            // A PSK Secret that is gone: no restore brings the client's key back. One the
            // owner tracks and its merged source no longer defines: a restore would
            // delete it, so the restore refuses (attack finding A8).
            let secret =
                crate::cluster::gitops::get_kept(cluster, "v1", "Secret", ns, &j.psk_secret).await;
            let psk_gone = matches!(secret, Ok(None));
            let psk_unlisted = match (&secret, owner_obj.as_ref()) {
                (Ok(Some(sec)), Some(o)) => {
                    gitops::unprotected(&r.owner, sec)
                        && gitops::source_defines(o, "", "Secret", ns, &j.psk_secret) == Some(false)
                }
                _ => false,
            };
            // One its source defines otherwise (Argo CD: OutOfSync): a restore would
            // overwrite the client's key with the repository's copy (attack finding 1).
            let psk_differs = matches!(secret, Ok(Some(_)))
                && owner_obj.as_ref().is_some_and(|o| {
                    gitops::source_differs(o, "", "Secret", ns, &j.psk_secret) == Some(true)
                });
            // A HelmRelease that tracks the PSK Secret: its upgrade writes the chart's copy
            // over the key, so vpnmig never restores it (issue 21 item 1, round 4).
            // Every window's PSK Secret it tracks, each named in the check by hand (a21u
            // U04b: the check named this window's key only, and the resume overwrote a
            // relying window's); as the restore says it.
            let helm_tracked: Vec<gitops::KeptPsk> = if r.owner.kind == "HelmRelease" {
                crate::window::helm_psks(cluster, &r.owner, j, &all)
                    .await
                    .into_iter()
                    .filter(|p| {
                        p.window != format!("{ns}/{name}")
                            || matches!(&secret, Ok(Some(sec)) if gitops::tracks(&r.owner, sec))
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let helm_psk = !helm_tracked.is_empty();
            let psk_changed = psk_problem(cluster, j)
                .await
                .filter(|p| matches!(p.state.as_str(), "changed" | "re-created"));
            let key = j.psk_key();
            // Flux does not refresh a suspended owner's inventory, and an Argo CD status
            // with a ComparisonError (or sync Unknown) cannot tell either: only the user
            // can say the repository is merged (attack findings 2, 11, 12).
            let argo_blind = owner_obj
                .as_ref()
                .and_then(gitops::status_blind)
                .filter(|_| r.owner.kind == "Application");
            let resume = if r.owner.kind == "Application" && argo_blind.is_none() {
                ""
            } else {
                " --gitops resume"
            };
            // An Application is restored by `vpnmig` once its status shows it safe; a
            // restore by hand would skip what vpnmig checks first (check 4: each kept
            // object's entry, OutOfSync, requiresPruning, what owns it; a21d attacks 8
            // and 16), so none is offered for it. A Flux owner's status cannot show it
            // (never refreshed while suspended): the by-hand restore comes after the
            // check by hand, protecting every window's PSK Secret.
            // No restore by hand is offered, for any owner: vpnmig's own restore first
            // protects from prune what the windows keep (the PSK Secrets and what owns
            // them, the new objects, a re-created IPsecGateway); a printed command would
            // skip that (a21d attacks 8, 16; a21e attacks 6, 9, 10, 11, 15).
            let by_hand = String::new();
            let verb = if j.phase == Phase::RolledBack || j.phase.rolling_back() {
                "rollback"
            } else {
                "cutover"
            };
            // What the finished window keeps (the new objects after `done`, the old
            // gateway after `rolled-back`), as an Application's status shows it: one its
            // source defines otherwise, or no longer defines, is what the restore refuses
            // for (check 4), so it is what `status` names, never "then … restores it"
            // (a21d attack 16: a reverted IPsecGateway with remoteSubnets /17).
            let kept_differs = owner_obj
                .as_ref()
                .filter(|_| r.owner.kind == "Application" && j.phase.finished())
                .and_then(|o| {
                    let kept: Vec<&serde_json::Value> = if j.phase == Phase::RolledBack {
                        vec![&j.old_manifest]
                    } else {
                        j.targets.iter().collect()
                    };
                    // Only what carries the owner's markers as the window made it live
                    // (the old gateway; new objects with `--gitops keep-tracking`): a new
                    // object without them shows OutOfSync for the markers alone, which
                    // the restore puts on before it compares again.
                    kept.into_iter().filter(|t| gitops::tracks(&r.owner, t)).find_map(|t| {
                        let kind = t["kind"].as_str()?;
                        let n = t.pointer("/metadata/name")?.as_str()?;
                        let group = t["apiVersion"]
                            .as_str()
                            .and_then(|a| a.rsplit_once('/'))
                            .map_or("", |(g, _)| g);
                        let what = crate::core::model::object_ref(kind, n, ns);
                        let change = if j.phase == Phase::RolledBack {
                            "the reverted repository must define it as the journal saved it"
                        } else {
                            "the merged repository must define it as the window made it live"
                        };
                        let said = match gitops::argo_says(o, group, kind, ns, n)? {
                            gitops::ArgoSays::OutOfSync => format!(
                                "its source defines {what} otherwise than it is live (status of {}: OutOfSync): a restore would overwrite it",
                                r.owner.display()
                            ),
                            gitops::ArgoSays::Prunes => format!(
                                "its source no longer defines {what} (status of {}: requiresPruning): a restore would delete it",
                                r.owner.display()
                            ),
                            _ => return None,
                        };
                        Some(format!(
                            "{said}; {change} (`argocd app diff {}` shows the difference; `vpnmig verify {name} -n {ns}` names each pinned value), then `vpnmig {verb} {name} -n {ns}` restores it",
                            crate::core::gitops::argocd_app(&r.owner)
                        ))
                    })
                });
            let elsewhere = if psk_gone {
                psk_live_elsewhere(cluster, j).await
            } else {
                None
            };
            let how = if let Some(there) = elsewhere {
                format!(
                    "secret/{} -n {ns} (the PSK) is gone from {ns}, but {there}: the key is not lost, nothing needs re-creating from the client; the repository's source must define secret/{} -n {ns} as the plan does; keep the owner suspended until it does, then `vpnmig {verb} {name} -n {ns}` restores it",
                    j.psk_secret, j.psk_secret
                )
            } else if psk_gone {
                format!(
                    "secret/{} -n {ns} (the PSK) is gone: it must be re-created with the client's pre-shared key, which vpnmig does not hold (`kubectl create secret generic {} -n {ns} --from-literal={key}=<the client's key>`), then `vpnmig verify {name} -n {ns}`; keep the owner suspended until the Secret is in its repository (or carries none of its markers), then `vpnmig {verb} {name} -n {ns}` restores it",
                    j.psk_secret, j.psk_secret
                )
            } else if let Some(p) = psk_changed.as_ref() {
                format!(
                    "secret/{} -n {ns} (the PSK) {}; no restore is offered before the key is back and the owner's source holds the same key",
                    j.psk_secret, p.detail
                )
            } else if helm_psk {
                crate::window::helm_psk_refusal(
                    &r.owner,
                    owner_obj.as_ref(),
                    j,
                    &helm_tracked,
                    verb,
                    name,
                    ns,
                )
            } else if psk_unlisted {
                format!(
                    "its source no longer defines secret/{} -n {ns} (the PSK, data key `{key}`) although it tracks it (status of {}): a restore would delete it; put the Secret back in the repository (or take the owner's markers off it), then `vpnmig {verb} {name} -n {ns}` restores it",
                    j.psk_secret,
                    r.owner.display()
                )
            } else if psk_differs {
                format!(
                    "its source defines secret/{} -n {ns} (the PSK, data key `{key}`) otherwise than it is live (status of {}: OutOfSync): a restore would overwrite the client's key with the repository's copy; make the repository's copy hold the client's key (`argocd app diff {}` shows the difference; vpnmig never prints a key), then `vpnmig {verb} {name} -n {ns}` restores it",
                    j.psk_secret,
                    r.owner.display(),
                    crate::core::gitops::argocd_app(&r.owner)
                )
            } else if let Some(why) = kept_differs {
                why
            } else if !relied_on_by.is_empty() {
                format!(
                    "not restored while a window that relies on it is under way; when they are done, `vpnmig {verb} {name} -n {ns}` restores it"
                )
            } else if let Some(why) = unread {
                format!(
                    "whether another window relies on it cannot be read ({why}): check by hand (`kubectl get configmaps -A -l app.kubernetes.io/managed-by=vpnmig -o yaml`: a journal whose gitops record names {} relies on it), then `vpnmig {verb} {name} -n {ns}` with a context that can list them",
                    r.owner.display()
                )
            } else {
                let own = match j.phase {
                    Phase::Done => "merge the repository change",
                    Phase::RolledBack => "revert the repository change",
                    _ => "",
                };
                if own.is_empty() && j.phase.rolling_back() {
                    // A rollback under way goes on only as a rollback: a cutover does not
                    // resume it (a21d E).
                    format!(
                        "the rollback restores it when it finishes: `vpnmig rollback {name} -n {ns}` goes on; do not restore it by hand before: its sync would re-create what the rollback takes out"
                    )
                } else if own.is_empty() {
                    // Never by hand while the window is under way: its sync would re-create
                    // the old gateway beside the new one (second attack, 7).
                    format!(
                        "the window restores it when it finishes: `vpnmig cutover {name} -n {ns}` goes on, `vpnmig rollback {name} -n {ns}` goes back; do not restore it by hand before: its sync would re-create what the window replaces"
                    )
                } else if finished.is_empty() {
                    let check = argo_blind
                        .as_ref()
                        .map(|why| {
                            format!(
                                ", check by hand that its source no longer defines the replaced gateway ({why}: {})",
                                gitops::render_hint(&r.owner)
                            )
                        })
                        .unwrap_or_default();
                    format!(
                        "{own}{check}, then `vpnmig {verb} {name} -n {ns}{resume}` restores it{by_hand}"
                    )
                } else if r.owner.kind == "Application" && argo_blind.is_none() {
                    format!(
                        "{own}; what each window that relied on it changed must be in the repository too: {}; then `vpnmig {verb} {name} -n {ns}` restores it once the owner's status lists none of them (`--gitops resume` vouches for this window's change only)",
                        finished.join("; ")
                    )
                } else if r.owner.kind == "Application" {
                    // Its status cannot tell (a ComparisonError, a stale comparison): no
                    // restore by hand skips what vpnmig checks (a21d attacks 8, 16).
                    format!(
                        "{own}; what each window that relied on it changed must be in the repository too: {}; its status cannot show it now ({}): refresh it (`argocd app get {} --refresh`), then `vpnmig {verb} {name} -n {ns}` restores it once the owner's status lists none of them (`--gitops resume` vouches for this window's change only)",
                        finished.join("; "),
                        argo_blind.as_deref().unwrap_or_default(),
                        r.owner.name
                    )
                } else {
                    format!(
                        "{own}; what each window that relied on it changed must be in the repository too: {}; the cluster cannot show it (a suspended owner's status is not refreshed) and `--gitops resume` vouches for this window's change only: check by hand ({}), then {} records for each of those windows that you did, and `vpnmig {verb} {name} -n {ns} --gitops resume` restores it; no restore by hand is offered: it would skip the prune protections a restore sets first (every window's PSK Secret and what owns it, the new objects, a re-created IPsecGateway)",
                        finished.join("; "),
                        gitops::render_hint(&r.owner),
                        vouch_cmds.join(", "),
                    )
                }
            };
            // The last restore re-armed it, did not see its first sync, and suspended it
            // again (a21d attack 7): said first, with what to check.
            let how = match &r.sync_unseen {
                Some(when) => format!(
                    "the last restore re-armed it and did not see its first sync ({when}), so vpnmig suspended it again: find why it does not sync (`kubectl get {} {} -n {} -o yaml`: its Ready condition, its dependsOn, its source) before it is restored; {how}",
                    r.owner.resource(),
                    r.owner.name,
                    r.owner.namespace.as_deref().unwrap_or("argocd")
                ),
                None => how,
            };
            out.push(Suspended {
                namespace: ns.clone(),
                gateway: name.clone(),
                phase: j.phase.to_string(),
                owner: r.owner.display(),
                resume: how,
                relies: false,
                relied_on_by,
                live: "unknown".into(),
                live_detail: String::new(),
            });
        }
    }
    out
}

/// Where the key journal `j` fingerprinted is live while its PSK Secret is gone from the
/// window's namespace: the Secret of that name beside a VPNGateway that stands in the
/// window's place in another namespace (a21q Q04: the merged source moved them; status
/// said only "must be re-created with the client's key"). Compared with the journal's
/// fingerprint as the window's Secret; said by fingerprint, never the value. `None`
/// where there is none, it holds another key, or it cannot be read.
async fn psk_live_elsewhere(
    cluster: &Cluster,
    j: &crate::core::journal::Journal,
) -> Option<String> {
    use crate::core::psk::{self, Held};
    let (gw, _) = crate::window::stand_in(cluster, j).await?;
    let other = gw.pointer("/metadata/namespace")?.as_str()?;
    if other == j.namespace {
        return None;
    }
    let live = crate::cluster::gitops::get_kept(cluster, "v1", "Secret", other, &j.psk_secret)
        .await
        .ok()??;
    let fingerprint = match psk::held(
        j.psk_fingerprint.as_deref(),
        j.psk_secret_uid.as_deref(),
        &j.namespace,
        &j.psk_secret,
        j.psk_key(),
        Some(&live),
    ) {
        Held::Same { fingerprint } | Held::RecreatedSame { fingerprint, .. } => fingerprint,
        _ => return None,
    };
    Some(format!(
        "the key the journal fingerprinted is live in secret/{} -n {other} (key {}; fingerprinted as the window's Secret it is the journal's {fingerprint}), beside vpngateway/{} -n {other}, which stands in the window's place",
        j.psk_secret,
        j.psk_key(),
        gw.pointer("/metadata/name")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("?"),
    ))
}

/// The journals of every namespace (a stand-in's window may be in another one, a21q
/// Q04); none where this user may not list them.
async fn all_journals(cluster: &Cluster) -> Vec<crate::core::journal::Journal> {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, ListParams};
    let api: Api<ConfigMap> = Api::all(cluster.client.clone());
    let lp = ListParams::default().labels("app.kubernetes.io/managed-by=vpnmig");
    cluster
        .call(
            "list",
            "configmaps (vpnmig journals, all namespaces)",
            None,
            || api.list(&lp),
        )
        .await
        .map(|l| {
            l.items
                .iter()
                .filter_map(|cm| {
                    crate::core::journal::Journal::from_json(cm.data.as_ref()?.get("journal.json")?)
                        .ok()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The old gateway of a window past the delete, when one of its name exists again (another
/// uid than the journal's, not the journal's own still unwinding): someone re-created it.
/// The other gateways that claim a finished window's floating IP, as the start of the
/// advice on the owner it holds: each named with its delete, or that the list was
/// refused. `None`: under way, none claims it, or the API did not answer.
async fn claimed_by_others(
    cluster: &Cluster,
    j: &crate::core::journal::Journal,
    finished: bool,
    verb: &str,
) -> Option<String> {
    if !finished || j.floating_ip.trim().is_empty() {
        return None;
    }
    let (ns, name, fip) = (&j.namespace, &j.gateway, j.floating_ip.trim());
    Some(
        match crate::cli::verify::fip_claimants(cluster, ns, name, fip)
            .await
            .ok()?
        {
            Ok(others) if others.is_empty() => return None,
            Ok(others) => format!(
                "another gateway claims the floating IP {fip} of {ns}/{name}: {}: delete it once nothing re-creates it, else every `vpnmig {verb} {name} -n {ns}` stops on it (exit 5); ",
                others
                    .iter()
                    .map(crate::cli::verify::claimant_shown)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Err(why) => format!(
                "whether another gateway claims the floating IP {fip} of {ns}/{name} cannot be read (the gateways of every namespace could not be listed: {why}); "
            ),
        },
    )
}

async fn recreated_old(
    cluster: &Cluster,
    j: &crate::core::journal::Journal,
) -> Option<serde_json::Value> {
    if !j.phase.past_delete() {
        return None;
    }
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        cluster.client.clone(),
        &j.namespace,
        &crate::cluster::objects::resource("IPsecGateway"),
    );
    let got = cluster
        .call(
            "get",
            &format!("ipsecgateways/{}", j.gateway),
            Some(&j.namespace),
            || api.get_opt(&j.gateway),
        )
        .await;
    let obj = serde_json::to_value(got.ok()??).ok()?;
    let uid = obj
        .pointer("/metadata/uid")
        .and_then(serde_json::Value::as_str);
    (uid.is_some() && uid != j.old_uid.as_deref()).then_some(obj)
}

/// What goes on from a window under way: the journal's advice, and first, when an
/// IPsecGateway of its name was re-created after the delete (issue 21, attack A7), that
/// it must go (and who wrote it) before a resume, which would otherwise apply beside it.
async fn recovery(cluster: &Cluster, j: &crate::core::journal::Journal) -> String {
    let plain = j.recovery();
    if j.phase.rolling_back() {
        return plain;
    }
    let (name, ns) = (&j.gateway, &j.namespace);
    // Before the delete, the journal's advice says the IPsecGateway is untouched: only
    // while it is live (a21m B16: pruned by an early merge, it was said "untouched").
    if !j.phase.past_delete() && !j.phase.finished() {
        let Ok(old) = crate::cluster::gitops::get_kept(
            cluster,
            "ipsec.bnerd.net/v1alpha1",
            "IPsecGateway",
            ns,
            name,
        )
        .await
        else {
            return plain;
        };
        if old
            .as_ref()
            .is_some_and(|o| o.pointer("/metadata/deletionTimestamp").is_none())
        {
            return plain;
        }
        let (what, ways) = crate::window::gone_before_the_delete(cluster, j, old.is_some()).await;
        return format!("{what}: {ways}");
    }
    let Some(obj) = recreated_old(cluster, j).await else {
        return plain;
    };
    format!(
        "ipsecgateway/{name} -n {ns} exists again (uid {}, {}): stop whoever re-created it, then delete it (`kubectl delete ipsecgateway {name} -n {ns}`) before `vpnmig cutover {name} -n {ns}` resumes; `vpnmig rollback {name} -n {ns}` keeps it instead and closes the journal (its addresses are checked)",
        obj.pointer("/metadata/uid")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("?"),
        crate::core::gitops::writer(&obj)
            .map(|w| format!("written by {w}"))
            .unwrap_or_else(|| "no field manager other than vpnmig's and the operator's".into())
    )
}

/// The IPsecGateway of a window's name, when a rollback phase kept it (`old-applied` and
/// after): `None` otherwise, or when it is gone or cannot be read.
async fn kept_old(
    cluster: &Cluster,
    j: &crate::core::journal::Journal,
) -> Option<serde_json::Value> {
    if !(j.phase.rolling_back() || j.phase == crate::core::journal::Phase::RolledBack) {
        return None;
    }
    crate::cluster::gitops::get_kept(
        cluster,
        "ipsec.bnerd.net/v1alpha1",
        "IPsecGateway",
        &j.namespace,
        &j.gateway,
    )
    .await
    .ok()
    .flatten()
}

/// An owner that reads back suspended but re-created the window's old gateway after its
/// delete (the IPsecGateway of the name exists with another uid than the journal's, and
/// carries the owner's markers): its controller ignores its suspension (issue 21 item 3).
async fn ignoring(
    cluster: &Cluster,
    j: &crate::core::journal::Journal,
    r: &crate::core::gitops::Record,
    s: &mut Suspended,
) {
    use crate::core::gitops;
    // A policy changed since is said as such; only Argo CD's sync since the pause (a21j
    // 06) may be a controller that ignores its suspension as well.
    if s.live == "changed" {
        let synced = match crate::cluster::gitops::find(cluster, &r.owner).await {
            Ok(crate::cluster::gitops::Found::One(_, o)) => gitops::synced_since(r, &o).is_some(),
            _ => false,
        };
        if !synced {
            return;
        }
    }
    let mut re_created = true;
    let obj = match recreated_old(cluster, j).await {
        Some(obj) => obj,
        // The gateway a rollback kept (old-applied, rolled-back: the journal's uid is the
        // kept one's now), written by the controller since the window started while the
        // owner reads suspended: still acting; said for as long as the window holds the
        // owner, not only until the rollback (a21g 11: status forgot it, and a plain
        // `--forward` fought the owner).
        None => {
            let since = j.history.first().map(|e| e.at.as_str()).unwrap_or_default();
            let Some(obj) = kept_old(cluster, j)
                .await
                .filter(|o| gitops::written_by_since(&r.owner.kind, o, since))
            else {
                return;
            };
            re_created = false;
            obj
        }
    };
    let uid = obj
        .pointer("/metadata/uid")
        .and_then(serde_json::Value::as_str);
    let marked = gitops::detect(&obj).iter().any(|m| {
        m.owner
            .as_ref()
            .is_some_and(|o| o.kind == r.owner.kind && o.name == r.owner.name)
    });
    // Its markers alone are no evidence: vpnmig's own rollback re-creates the old
    // gateway from the saved manifest, labels and all. Its controller's field manager is.
    let wrote = gitops::written_by(&r.owner.kind, &obj);
    // Re-created after the window's own restore re-armed the owner (the journal records
    // when), and suspended again by vpnmig since: that restore's sync did it, not a
    // controller that ignores its suspension (a21k R07, N05).
    let created = obj
        .pointer("/metadata/creationTimestamp")
        .and_then(serde_json::Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let re_armed = r
        .re_armed_at
        .as_deref()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    if re_created
        && wrote
        && let (Some(c), Some(at)) = (created, re_armed)
        && c.as_second() >= at.as_second()
    {
        let (gw, ns) = (&j.gateway, &j.namespace);
        s.live = "restore-re-created".into();
        s.live_detail = format!(
            "ipsecgateway/{gw} -n {ns} exists again (uid {}, created {c}), re-created by its sync while the window's own restore (started {at}) had it re-armed; vpnmig suspended it again and it reads back suspended (its controller honours the suspension; its source still defined the gateway)",
            uid.unwrap_or("?")
        );
        s.resume = format!(
            "delete the re-created one (`kubectl delete ipsecgateway {gw} -n {ns}`), merge the repository change so that its source no longer defines it, then `vpnmig cutover {gw} -n {ns}` restores it once its status no longer lists it (`--gitops resume` where the status cannot show the merge); while the gateway is live every run stops on it (exit 5)"
        );
        return;
    }
    if marked && wrote {
        // The owner written by someone else since (a person's `kubectl patch`): it may have
        // been re-enabled for a while and suspended again (second attack, 3), not a
        // controller that ignores its suspension; both are said.
        let hands = match crate::cluster::gitops::find(cluster, &r.owner).await {
            Ok(crate::cluster::gitops::Found::One(_, o)) => gitops::hand_writers(&o),
            _ => Vec::new(),
        };
        // Argo CD synced since the pause and reads suspended again (a21j 06): re-armed for
        // a while, or a controller that ignores its suspension; both are said.
        let synced = (s.live == "changed").then(|| s.live_detail.clone());
        s.live = "ignoring".into();
        if let Some(detail) = synced {
            s.live_detail = format!(
                "it reads back suspended, yet ipsecgateway/{} -n {} exists again (uid {}), written by its controller (managedFields), and {detail}: someone may have re-enabled it for a while and suspended it again, or its controller ignores its suspension; find out before anything else, or every way forward or back fights it",
                j.gateway,
                j.namespace,
                uid.unwrap_or("?")
            );
            return;
        }
        if !hands.is_empty() {
            s.live_detail = format!(
                "it reads back suspended, yet ipsecgateway/{} -n {} exists again (uid {}), written by its controller (managedFields); the owner itself was written by {} too: someone may have re-enabled it for a while and suspended it again, or its controller ignores its suspension; find out before anything else, or every way forward or back fights it",
                j.gateway,
                j.namespace,
                uid.unwrap_or("?"),
                hands.join(", ")
            );
            return;
        }
        s.live_detail = format!(
            "it reads back suspended, yet ipsecgateway/{} -n {} exists again (uid {}), written by its controller (managedFields): its controller ignores its suspension; stop it first (its controller, or the repository change), or every way forward or back fights it",
            j.gateway,
            j.namespace,
            uid.unwrap_or("?")
        );
    }
}

/// The owner a journal records as suspended, read from the cluster and compared with
/// the record (issue 21 item 4): a suspension is what the owner shows. One re-enabled or
/// changed since is said so, and no restore that would overwrite that policy is offered.
async fn read_back(
    cluster: &Cluster,
    j: &crate::core::journal::Journal,
    r: &crate::core::gitops::Record,
    s: &mut Suspended,
) {
    use crate::cluster::gitops::{Found, find};
    use crate::core::gitops::{self, Held};
    let (ns, name) = (s.namespace.clone(), s.gateway.clone());
    let (owner, obj) = match find(cluster, &r.owner).await {
        Ok(Found::One(owner, obj)) => (owner, obj),
        Ok(_) => {
            s.live = "gone".into();
            s.live_detail = format!("the cluster has no {} {}", r.owner.kind, r.owner.name);
            // The same as the restore says (attack 9): nothing to restore, and the
            // finished window's run lets go of it in the journal.
            s.resume = match s.phase.as_str() {
                "done" => format!(
                    "nothing to restore; `vpnmig cutover {name} -n {ns}` lets go of it in the journal"
                ),
                "rolled-back" => format!(
                    "nothing to restore; `vpnmig rollback {name} -n {ns}` lets go of it in the journal"
                ),
                _ => format!(
                    "nothing to restore; `vpnmig cutover {name} -n {ns}` or `vpnmig rollback {name} -n {ns}` still finish the window"
                ),
            };
            return;
        }
        Err(e) => {
            s.live_detail = format!("it could not be read: {e}");
            return;
        }
    };
    // Its parents as the cluster has them (namespace filled in: an Argo CD parent in the
    // control plane's namespace is not the child's), the one syncing first.
    let mut parents = crate::cluster::gitops::parents_of(cluster, &obj)
        .await
        .unwrap_or_default();
    parents.sort_by_key(|(_, v)| !gitops::parent_state(v, &obj).active);
    let parent = parents
        .first()
        .map(|(p, _)| {
            format!(
                ", managed itself by {} ({})",
                p.owner.display(),
                p.evidence.join(", ")
            )
        })
        .unwrap_or_default();
    let finished = matches!(s.phase.as_str(), "done" | "rolled-back");
    // The chain above it that puts its policy back now, top-most level first, as the
    // window's stops name it (a21j 01: the owner and its parent suspended again, the root
    // above them re-armed both). Else one level, the parent that syncs.
    let path = crate::window::re_arming(cluster, j, &owner, &obj)
        .await
        .unwrap_or_default();
    let (above, suspend_parent) = if path.is_empty() {
        (
            String::new(),
            parents
                .first()
                .map(|(p, _)| format!(" and `{}`", gitops::pause_command(&p.owner)))
                .unwrap_or_default(),
        )
    } else {
        (
            format!("{}; then ", crate::window::suspend_from_the_top(&path)),
            String::new(),
        )
    };
    // The window can no longer guarantee that the owner stays suspended: whoever resumes
    // it may prune what the window keeps. The run that protects it first and lets go is
    // named, and the risk said (a21k N03: nothing was named, and the other team's later
    // resume pruned the PSK Secret).
    let verb = if s.phase == "rolled-back" {
        "rollback"
    } else {
        "cutover"
    };
    let hand_over = format!(
        "`vpnmig {verb} {name} -n {ns}` protects what the window keeps from it (secret/{psk} -n {ns}, the PSK; {kept}; the journal and its records), then lets go of it. Until that has run, whoever resumes {owner} may delete the client's pre-shared key Secret secret/{psk} -n {ns} (a source without it prunes it), which vpnmig cannot re-create: it does not hold the key",
        psk = j.psk_secret,
        kept = if s.phase == "rolled-back" {
            "the IPsecGateway"
        } else {
            "the new objects"
        },
        owner = r.owner.display(),
    );
    let keep = if finished {
        format!("vpnmig does not restore over it: the policy stays as it is now. {hand_over}")
    } else {
        format!(
            "it may re-create the old gateway or prune the new objects, and the window still holds it: {above}suspend it{} again before `vpnmig cutover {name} -n {ns}` or `vpnmig rollback {name} -n {ns}` (`{}`{suspend_parent}); vpnmig does not restore over a policy changed since: the window's end protects what it keeps (secret/{} -n {ns}, the PSK; the journal and its records), then lets go of it. Until then, whoever resumes it may delete the client's pre-shared key Secret, which vpnmig cannot re-create",
            if path.is_empty() && !parents.is_empty() {
                " (and its parent)"
            } else {
                ""
            },
            gitops::pause_command(&r.owner),
            j.psk_secret
        )
    };
    // Re-enabled after a finished window while its source still defines (or may define)
    // the gateway the window replaced: its sync re-creates it, and the journal keeps
    // holding the owner until it is suspended again or the repository is merged.
    let replaced = if s.phase == "rolled-back" {
        "VPNGateway"
    } else {
        "IPsecGateway"
    };
    let recreates =
        finished && gitops::owner_state(&obj, replaced, &ns, &name).source_lists != Some(false);
    // The gateway the finished cutover replaced, live again beside its VPNGateway: every
    // run of the window stops on it (exit 5) until it is deleted (a21k N09: the advice
    // named no delete, and promised a restore the run would not do).
    let back = if finished && replaced == "IPsecGateway" {
        recreated_old(cluster, j).await.map(|o| {
            format!(
                "ipsecgateway/{name} -n {ns} exists again beside the VPNGateway (uid {}) and contests the floating IP: delete it (`kubectl delete ipsecgateway {name} -n {ns}`) once nothing re-creates it, else every `vpnmig {verb} {name} -n {ns}` stops on it (exit 5); ",
                o.pointer("/metadata/uid")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("?")
            )
        })
    } else {
        None
    };
    // Another gateway claiming the floating IP beside the finished window (any name, any
    // namespace, either kind): its delete comes first too (a21n C01: the restore advised
    // beside it, the claimant not named).
    let back = match (back, claimed_by_others(cluster, j, finished, verb).await) {
        (Some(a), Some(b)) => Some(format!("{a}{b}")),
        (a, b) => a.or(b),
    };
    let reenabled = if recreates {
        format!(
            "its source still defines {replaced} {ns}/{name} (or the cluster cannot show that it does not): its sync re-creates it and contests the floating IP; the journal still holds it: {above}suspend it again (`{}`{suspend_parent}), {}then `vpnmig {verb} {name} -n {ns}` restores it once the repository change is merged",
            gitops::pause_command(&r.owner),
            back.as_deref().unwrap_or_default()
        )
    } else {
        keep.clone()
    };
    match gitops::held(r, &obj) {
        // A finished window's Argo CD owner that synced since the pause: re-armed and
        // suspended again meanwhile, a policy changed since (a21j 06), as its restore
        // reads it.
        Held::AsLeft if finished && let Some(now) = gitops::synced_since(r, &obj) => {
            s.live = "changed".into();
            s.live_detail = format!("{now}{parent}");
            s.resume = keep;
        }
        Held::AsLeft => {
            s.live = "suspended".into();
            // The ApplicationSet that manages it defines another policy now than the one
            // the end would restore (a21p E04): manual sync is a policy changed since,
            // never re-armed over; another one is what the end restores.
            match crate::window::manager_policy(cluster, r, &obj).await {
                Some(m) if m.manual() => {
                    s.live = "changed".into();
                    s.live_detail = format!("{}{parent}", m.changed_said());
                    s.resume = format!(
                        "vpnmig does not re-enable automated sync over it: the window's end leaves it as its manager defines it. {hand_over}"
                    );
                }
                Some(m) => {
                    s.live_detail = format!(
                        "{}: the end of the window restores {}, not the policy before",
                        m.said(),
                        gitops::policy_shown(m.defines.as_ref())
                    );
                }
                None => {}
            }
            // The replaced gateway live again beside a finished window: its delete comes
            // first, whoever re-created it (a21k R07: a restore's advice without it).
            if let Some(back) = &back {
                s.resume = format!("{back}{}", s.resume);
            }
        }
        // The window's own pause, recorded and never landed (a21j 08: a webhook refused
        // it): not someone else's re-enable, and nothing was suspended to restore.
        Held::NotPaused { since, now } => {
            s.live = "not-paused".into();
            s.live_detail = format!("{now}{parent}");
            s.resume = format!(
                "the window recorded its suspension at {since} and it never landed (the run stopped at its patch, or the API refused it); the window deletes nothing while it syncs: `vpnmig cutover {name} -n {ns}` sends it again first (and says why if it is refused), `vpnmig rollback {name} -n {ns}` closes the journal"
            );
        }
        // The window's own restore, interrupted after its patch (a21j 07).
        Held::Restoring { at, now } => {
            s.live = "restoring".into();
            s.live_detail = format!("{now}{parent}");
            s.resume = format!(
                "the window's restore started at {at} re-armed it and did not finish (its first sync was not watched): `vpnmig {verb} {name} -n {ns}` finishes it: it suspends it again, checks what that sync did (a re-created {replaced}, a changed field) and restores it once that is safe"
            );
        }
        Held::ReEnabled { now } => {
            s.live = "re-enabled".into();
            s.live_detail = format!("{now}{parent}");
            s.resume = if finished {
                reenabled
            } else {
                // What the run does with it (pausing.rs): suspends it again and adopts the
                // policy set since, which the window's end restores. A hand suspension
                // first would leave the window no record of that policy, and its end
                // would put back the one before (a21t T14: status said "lets go of it",
                // the run adopted it).
                let first = if !above.is_empty() {
                    above.clone()
                } else {
                    parents
                        .first()
                        .map(|(p, _)| {
                            format!(
                                "suspend its parent {} first (`{}`); then ",
                                p.owner.display(),
                                gitops::pause_command(&p.owner)
                            )
                        })
                        .unwrap_or_default()
                };
                format!(
                    "it may re-create the old gateway or prune the new objects, and the window still holds it: {first}run `vpnmig cutover {name} -n {ns}` or `vpnmig rollback {name} -n {ns}` now: its first step suspends it again for the window, and the window's end restores the policy set since (the live one above), not the one the window recorded before its pause. Do not suspend it by hand instead: the window would keep no record of that policy, and its end would put back the one before. Until a run has suspended it, whoever resumes it may delete the client's pre-shared key Secret secret/{} -n {ns}, which vpnmig cannot re-create",
                    j.psk_secret
                )
            };
        }
        Held::Changed { now } => {
            s.live = "changed".into();
            s.live_detail = format!("{now}{parent}");
            s.resume = if finished {
                keep
            } else {
                // It does not sync: the run lets go of it (pausing.rs). A hand suspension
                // would make it read as the window's own again, and the end would restore
                // the policy recorded before over the one set since.
                format!(
                    "it does not sync, so the window's next run (`vpnmig cutover {name} -n {ns}` or `vpnmig rollback {name} -n {ns}`) leaves it as it is and lets go of it: vpnmig does not restore over a policy changed since. Do not suspend it by hand for the window: it would read as the window's own suspension again, and the window's end would put back the policy recorded before its pause. Whoever turns its sync on before the window ends may re-create the old gateway, prune the new objects or delete the client's pre-shared key Secret secret/{} -n {ns}, which vpnmig cannot re-create",
                    j.psk_secret
                )
            };
        }
        // Not the object the window paused (attack 4): its policy is whoever re-created
        // it's; nothing is restored over it.
        Held::Replaced { uid, active, now } => {
            s.live = "re-created".into();
            s.live_detail = format!(
                "uid {uid}, the journal's {}; {now}{parent}",
                r.uid.as_deref().unwrap_or("?")
            );
            // A finished window lets go of it (it is not the object the window paused),
            // never restores it: said as such, with the delete of a re-created gateway
            // first (a21k N09: "restores it", then a let-go with exit 0).
            s.resume = if finished && (back.is_some() || (active && recreates)) {
                let stop_it = if active && recreates {
                    format!(
                        "its source still defines {replaced} {ns}/{name} (or the cluster cannot show that it does not), and its sync re-creates it: {above}suspend it (`{}`{suspend_parent}) until the repository change is merged; ",
                        gitops::pause_command(&r.owner)
                    )
                } else {
                    String::new()
                };
                format!(
                    "{stop_it}{}then `vpnmig {verb} {name} -n {ns}` lets go of it in the journal (it is not the object the window paused: nothing is restored over it, its policy stays as it is), after protecting what the window keeps",
                    back.as_deref().unwrap_or_default()
                )
            } else if active && recreates {
                reenabled
            } else if finished {
                format!(
                    "vpnmig does not restore another object, and leaves its policy as it is. {hand_over}"
                )
            } else {
                keep
            };
        }
    }
}

pub fn run(args: &StatusArgs) -> Result<i32, Error> {
    let text = matches!(args.output, StatusFormat::Text | StatusFormat::Wide);
    crate::cli::runtime()?.block_on(async {
        let (cluster, mut rows, ours, peers) = gather(args).await?;
        if rows.is_empty() && !args.all_namespaces && text {
            crate::output::say(&namespace_note(&cluster).await);
        }
        let windows = open_windows(&cluster, args.all_namespaces, &ours, &rows).await;
        let mut windows = windows;
        mark_psk(&mut rows, &windows);
        mark_fip(&mut rows, &mut windows);
        mark_extra(&mut rows, &mut windows, &peers);
        mark_left(&mut rows, &mut windows);
        mark_live_again(&rows, &mut windows);
        windows.shared = status::shared_fips(&rows);
        if !args.all_namespaces {
            mark_claimed_elsewhere(&cluster, &mut rows, &mut windows).await;
        }
        crate::cli::write_stdout(&print(args, &rows, &windows, true))?;
        // Part of the answer could not be read: print what was, and fail as
        // `kubectl get A,B` does when B is refused (exit 1), so a script never reads
        // "no window under way" from a listing it was not given (issue 9 item 0).
        let unknown = windows.unknown.clone();
        if args.watch {
            watch(args, &cluster, rows, windows).await?;
        }
        if let Some(e) = unknown {
            return Err(Error::Stop {
                code: exit::FAILURE,
                message: format!(
                    "which windows are under way is unknown: the journals (ConfigMaps labelled app.kubernetes.io/managed-by=vpnmig) could not be listed: {e}"
                ),
                hint: Some(
                    "ask for `list configmaps` in the namespace (or in all, with -A), or use a context that has it; the gateways above are complete".into(),
                ),
            });
        }
        Ok::<_, Error>(())
    })?;
    Ok(exit::OK)
}

/// The output of one state: the whole table (`first`), or, under --watch, what changed
/// since (done by the caller, which passes only the changed rows).
fn print(args: &StatusArgs, rows: &[Row], windows: &Windows, first: bool) -> String {
    let doc = || StatusDoc {
        gateways: rows,
        windows: &windows.open,
        lost_journals: &windows.lost,
        suspended_owners: &windows.suspended,
        relied_on_parents: &windows.parents,
        prune_protected: &windows.protected,
        let_go_owners: &windows.let_go,
        psk_problems: &windows.psk,
        gone_gateways: &windows.gone,
        fip_claimed_elsewhere: &windows.elsewhere,
        windows_unknown: windows.unknown.as_deref(),
    };
    let style = TableStyle {
        all_namespaces: args.all_namespaces,
        wide: args.output == StatusFormat::Wide,
        no_headers: args.no_headers || !first,
    };
    match args.output {
        StatusFormat::Text | StatusFormat::Wide => {
            // The table is kubectl's, a row a line; the sentences below it fit the width.
            let lines =
                crate::output::width::hanging(&windows.lines(), crate::output::width::detect());
            if rows.is_empty() && !first {
                return lines;
            }
            render(rows, style, &|r| windows.phase_of(r).map(str::to_string)) + &lines
        }
        StatusFormat::Name => {
            // Only names on stdout; what is under way still reaches the operator.
            let lines = windows.lines();
            if !lines.is_empty() {
                crate::output::say(lines.trim_end_matches('\n'));
            }
            names(rows)
        }
        // Under --watch, one compact document a line (JSON lines).
        StatusFormat::Json if args.watch => {
            serde_json::to_string(&doc()).expect("rows serialize") + "\n"
        }
        StatusFormat::Json => serde_json::to_string_pretty(&doc()).expect("rows serialize") + "\n",
        StatusFormat::Yaml if args.watch => {
            "---\n".to_string() + &serde_saphyr::to_string(&doc()).expect("rows serialize")
        }
        StatusFormat::Yaml => serde_saphyr::to_string(&doc()).expect("rows serialize"),
    }
}

/// `--watch`: watch the three kinds and the journals from the resourceVersion read before
/// the last listing; on any event, list again and print what changed (rows that are new
/// or differ, gateways gone with READY `Deleted`, the windows when they changed). A
/// watch that ends or fails is opened again after a fresh listing. Ends at --timeout.
async fn watch(
    args: &StatusArgs,
    cluster: &Cluster,
    mut rows: Vec<Row>,
    mut windows: Windows,
) -> Result<(), Error> {
    let deadline = tokio::time::Instant::now() + args.timeout;
    let first = rows.clone();
    // Changes between the first listing and the first watch are caught by reading the
    // resourceVersions first, then listing again, then watching from them.
    loop {
        let versions = match tokio::time::timeout_at(deadline, versions(cluster, args)).await {
            Err(_) => break,
            Ok(v) => v?,
        };
        let (mut now, ours, peers) =
            read_rows(cluster, args.all_namespaces, args.windows.as_deref()).await?;
        let mut now_windows = open_windows(cluster, args.all_namespaces, &ours, &now).await;
        mark_psk(&mut now, &now_windows);
        mark_fip(&mut now, &mut now_windows);
        mark_extra(&mut now, &mut now_windows, &peers);
        mark_left(&mut now, &mut now_windows);
        mark_live_again(&now, &mut now_windows);
        now_windows.shared = status::shared_fips(&now);
        if !args.all_namespaces {
            mark_claimed_elsewhere(cluster, &mut now, &mut now_windows).await;
        }
        let changed = changes(&rows, &now);
        let windows_changed = now_windows != windows;
        if !changed.is_empty() || windows_changed {
            let shown = if windows_changed {
                now_windows.clone()
            } else {
                Windows::default()
            };
            let out = match args.output {
                StatusFormat::Json | StatusFormat::Yaml => print(args, &now, &now_windows, false),
                StatusFormat::Text | StatusFormat::Wide if !changed.is_empty() => {
                    // Laid out with the first table's rows, so the columns stay under
                    // its header; only the changed rows' lines are printed.
                    let style = TableStyle {
                        all_namespaces: args.all_namespaces,
                        wide: args.output == StatusFormat::Wide,
                        no_headers: args.no_headers,
                    };
                    let table = render(&[&first[..], &changed[..]].concat(), style, &|r| {
                        now_windows.phase_of(r).map(str::to_string)
                    });
                    let skip = table.lines().count() - changed.len();
                    table
                        .lines()
                        .skip(skip)
                        .map(|l| format!("{l}\n"))
                        .collect::<String>()
                        + &shown.lines()
                }
                _ => print(args, &changed, &shown, false),
            };
            crate::cli::write_stdout(&out)?;
        }
        rows = now;
        windows = now_windows;
        match tokio::time::timeout_at(deadline, next_event(cluster, args, &versions)).await {
            Err(_) => break,
            // An event: list again. A watch that ended or failed: list again too, after a
            // pause, so a server that closes every watch at once is not hammered.
            Ok(true) => {}
            Ok(false) => {
                if tokio::time::timeout_at(
                    deadline,
                    tokio::time::sleep(std::time::Duration::from_secs(1)),
                )
                .await
                .is_err()
                {
                    break;
                }
            }
        }
    }
    crate::output::say(&format!(
        "watch ended after {} (--timeout)",
        crate::core::duration::format(args.timeout, crate::core::duration::Rounding::Down)
    ));
    Ok(())
}

/// Rows that are new or changed in `now`, then those gone from it (READY `Deleted`).
fn changes(before: &[Row], now: &[Row]) -> Vec<Row> {
    use std::collections::BTreeMap;
    // Rows of another gateway never compare equal: each row is compared with the rows of
    // its own gateway only (a fleet's table on every event was rows² comparisons).
    fn key(r: &Row) -> (&str, &str, &str) {
        (r.namespace.as_str(), r.name.as_str(), r.kind)
    }
    fn index(rows: &[Row]) -> BTreeMap<(&str, &str, &str), Vec<&Row>> {
        let mut by: BTreeMap<(&str, &str, &str), Vec<&Row>> = BTreeMap::new();
        for r in rows {
            by.entry(key(r)).or_default().push(r);
        }
        by
    }
    let (was, is) = (index(before), index(now));
    let mut out: Vec<Row> = now
        .iter()
        .filter(|r| !was.get(&key(r)).is_some_and(|b| b.contains(r)))
        .cloned()
        .collect();
    out.extend(
        before
            .iter()
            .filter(|b| !is.contains_key(&key(b)))
            .map(|b| Row {
                ready: "Deleted".into(),
                ..b.clone()
            }),
    );
    out
}

/// The current resourceVersion of each watched collection (one object listed, for its
/// list's resourceVersion).
async fn versions(cluster: &Cluster, args: &StatusArgs) -> Result<[String; 4], Error> {
    use k8s_openapi::api::core::v1::ConfigMap;
    let ns = (!args.all_namespaces).then_some(cluster.namespace.as_str());
    Ok([
        version::<IPsecGateway>(cluster, ns, None).await?,
        version::<VPNGateway>(cluster, ns, None).await?,
        version::<VPNPeer>(cluster, ns, None).await?,
        version::<ConfigMap>(cluster, ns, Some(JOURNALS)).await?,
    ])
}

/// The label of vpnmig's journals (and locks).
const JOURNALS: &str = "app.kubernetes.io/managed-by=vpnmig";

fn api<K>(cluster: &Cluster, ns: Option<&str>) -> kube::Api<K>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    match ns {
        Some(ns) => kube::Api::namespaced(cluster.client.clone(), ns),
        None => kube::Api::all(cluster.client.clone()),
    }
}

async fn version<K>(
    cluster: &Cluster,
    ns: Option<&str>,
    labels: Option<&str>,
) -> Result<String, Error>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api = api::<K>(cluster, ns);
    let mut lp = kube::api::ListParams::default().limit(1);
    if let Some(l) = labels {
        lp = lp.labels(l);
    }
    let plural = K::plural(&Default::default()).to_string();
    let list = cluster
        .call("list", &plural, ns, || api.list_metadata(&lp))
        .await?;
    Ok(list.metadata.resource_version.unwrap_or_default())
}

/// Wait for the first event of any of the four watches: `true` for a change, `false`
/// when a watch ended, failed or could not be opened (list again, then watch again).
async fn next_event(cluster: &Cluster, args: &StatusArgs, versions: &[String; 4]) -> bool {
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    let ns = (!args.all_namespaces).then_some(cluster.namespace.as_str());
    let streams = vec![
        changed::<IPsecGateway>(cluster, ns, None, &versions[0]).boxed(),
        changed::<VPNGateway>(cluster, ns, None, &versions[1]).boxed(),
        changed::<VPNPeer>(cluster, ns, None, &versions[2]).boxed(),
        changed::<ConfigMap>(cluster, ns, Some(JOURNALS), &versions[3]).boxed(),
    ];
    futures::stream::select_all(streams)
        .next()
        .await
        .unwrap_or(false)
}

/// One watch as a stream of verdicts: `true` per change (added, modified, deleted),
/// `false` when it fails or ends. Bookmarks are not changes.
fn changed<K>(
    cluster: &Cluster,
    ns: Option<&str>,
    labels: Option<&str>,
    version: &str,
) -> impl futures::Stream<Item = bool> + Send + 'static
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
    K::DynamicType: Default,
{
    use futures::StreamExt;
    use kube::api::{WatchEvent, WatchParams};
    let api = api::<K>(cluster, ns);
    let mut wp = WatchParams::default().timeout(290);
    if let Some(l) = labels {
        wp = wp.labels(l);
    }
    let version = version.to_string();
    futures::stream::once(async move { api.watch(&wp, &version).await }).flat_map(|opened| {
        match opened {
            Ok(events) => events
                .filter_map(|e| async move {
                    match e {
                        Ok(WatchEvent::Bookmark(_)) => None,
                        Ok(WatchEvent::Error(_)) | Err(_) => Some(false),
                        Ok(_) => Some(true),
                    }
                })
                .chain(futures::stream::once(async { false }))
                .boxed(),
            Err(_) => futures::stream::once(async { false }).boxed(),
        }
    })
}
