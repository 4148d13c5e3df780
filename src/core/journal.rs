//! The cutover journal and its state machine (DESIGN.md §4.3 and §4.6), pure.
//!
//! A journal is written into the cluster (ConfigMap `vpnmig-<gateway>`, see
//! `cluster::journal`) *before* anything is changed, and again after every step, so that
//! an interrupted cutover or rollback can be resumed or reversed from any machine. It
//! holds the old IPsecGateway cleaned of server fields (what rollback re-creates,
//! verbatim, never translated back), the targets (what cutover applies after the old
//! object is gone, never re-translated from a source that no longer exists), the PSK
//! Secret's fingerprint (never its value) and the ownerReferences vpnmig removed from it.
//!
//! Layer 4 (journal, records and views): imports only from layers 0 to 4; see docs/architecture.md.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::core::addr;

/// Schema identifier of the journal document; bumped on incompatible changes.
pub const JOURNAL_API_VERSION: &str = "vpnmig.bnerd.net/journal/v1";

/// What is live of the gateway a finished window left ([`Journal::left`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Left {
    /// A window is under way: nothing was left yet.
    UnderWay,
    /// The kind the window left exists (its values are `verify`'s to compare).
    AsLeft,
    /// It exists with a deletionTimestamp.
    Terminating,
    /// It is gone and the other kind of its name exists.
    OtherKind,
    /// Neither kind of its name exists.
    Gone,
}

/// The ConfigMap (and Lease) name of a gateway's journal (and lock).
pub fn object_name(gateway: &str) -> String {
    format!("vpnmig-{gateway}")
}

/// The last step completed, in the order they happen. Cutover runs `Started` →
/// `Done`; rollback `RollingBack` → `RolledBack`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Journal written, nothing in the cluster changed yet.
    Started,
    /// The PSK Secret's ownerReferences to the old gateway removed (or none were there).
    PskDetached,
    /// The delete of the IPsecGateway was sent: the outage has begun.
    Deleting,
    /// The IPsecGateway is gone (its finalizer unwind finished; the pinned FIP is free).
    Deleted,
    /// VPNGateway and VPNPeers applied (server-side apply, field manager `vpnmig`).
    Applied,
    /// The VPNGateway reports `FIPAttached=True`.
    Attached,
    /// The VPNGateway is Ready and every VPNPeer Authorized.
    Ready,
    /// Tunnels ESTABLISHED and verified: the cutover is complete.
    Done,
    /// A rollback began: the new objects may be partly deleted.
    RollingBack,
    /// The VPNPeers and VPNGateway are gone.
    NewDeleted,
    /// The old IPsecGateway was re-created from the saved manifest.
    OldApplied,
    /// The old IPsecGateway is FIPAttached, Ready and its tunnels verified.
    RolledBack,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Started => "started",
            Phase::PskDetached => "psk-detached",
            Phase::Deleting => "deleting",
            Phase::Deleted => "deleted",
            Phase::Applied => "applied",
            Phase::Attached => "attached",
            Phase::Ready => "ready",
            Phase::Done => "done",
            Phase::RollingBack => "rolling-back",
            Phase::NewDeleted => "new-deleted",
            Phase::OldApplied => "old-applied",
            Phase::RolledBack => "rolled-back",
        }
    }

    /// Whether a cutover sent the delete of the old IPsecGateway (it may be gone).
    pub fn past_delete(self) -> bool {
        (Phase::Deleting..=Phase::Done).contains(&self)
    }

    /// Whether the operation recorded is over (nothing to resume).
    pub fn finished(self) -> bool {
        matches!(self, Phase::Done | Phase::RolledBack)
    }

    /// Whether a rollback is under way.
    pub fn rolling_back(self) -> bool {
        self >= Phase::RollingBack && self != Phase::RolledBack
    }

    /// What is true when a run is interrupted in this phase (a21k N01: Ctrl-C during
    /// `deleting` said "the tunnel is down or unverified", which says neither what was
    /// interrupted nor what stands).
    pub fn interrupted(self) -> &'static str {
        match self {
            Phase::Started | Phase::PskDetached => {
                "interrupted before the delete: nothing was deleted, the IPsecGateway serves the tunnel as before"
            }
            Phase::Deleting => {
                "interrupted while the IPsecGateway's delete unwinds: the delete was sent, so the old tunnel is going down or down, and nothing new is applied yet"
            }
            Phase::Deleted => {
                "interrupted after the IPsecGateway was gone and before the apply: no gateway serves the tunnel now"
            }
            Phase::Applied => {
                "interrupted while the applied VPNGateway waits for its floating IP: the tunnel is down"
            }
            Phase::Attached => {
                "interrupted while the VPNGateway, which holds the floating IP, becomes Ready: the tunnel is down"
            }
            Phase::Ready => {
                "interrupted while the tunnels come up on the Ready VPNGateway: the tunnel is down or unverified"
            }
            Phase::Done => "interrupted after the cutover was complete",
            Phase::RollingBack | Phase::NewDeleted | Phase::OldApplied => {
                "interrupted during the rollback: the IPsecGateway may not be back yet"
            }
            Phase::RolledBack => "interrupted after the rollback was complete",
        }
    }

    /// What to run after an interruption in this phase (the README's recovery table).
    pub fn recovery(self, name: &str, ns: &str) -> String {
        let cutover = format!("vpnmig cutover {name} -n {ns}");
        let rollback = format!("vpnmig rollback {name} -n {ns}");
        match self {
            Phase::Started | Phase::PskDetached => format!(
                "nothing was deleted: `{cutover}` resumes; `{rollback}` closes the journal (the IPsecGateway is untouched)"
            ),
            Phase::Deleting | Phase::Deleted | Phase::Applied | Phase::Attached | Phase::Ready => {
                format!(
                    "the tunnel is down or unverified: `{cutover}` resumes from `{}`; `{rollback}` restores the IPsecGateway from the journal",
                    self.as_str()
                )
            }
            Phase::Done => format!(
                "the cutover is complete: `vpnmig verify {name} -n {ns}`; `{rollback}` reverses it"
            ),
            Phase::RollingBack | Phase::NewDeleted | Phase::OldApplied => {
                format!("a rollback has not finished: `{rollback}` resumes it")
            }
            Phase::RolledBack => format!(
                "the IPsecGateway is back: `vpnmig verify {name} -n {ns}`; a new `{cutover}` starts over"
            ),
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of the journal's history: a phase reached, when (RFC 3339, UTC) and by whom.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub phase: Phase,
    pub at: String,
    pub by: String,
    /// `sha256:<hex>` of the previous entry ([`Entry::digest`]): the history is a hash
    /// chain, so an entry edited by hand after the fact shows (`vpnmig report`; issue 12
    /// item 4). `None` on the first entry and in journals of earlier versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev: Option<String>,
}

impl Entry {
    /// `sha256:<hex>` of this entry's canonical JSON (keys sorted, `prev` included).
    pub fn digest(&self) -> String {
        crate::core::fingerprint::fingerprint(
            &serde_json::to_value(self).expect("entries serialize"),
        )
    }
}

/// Whether the history's hash chain holds ([`Journal::chain`]).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ChainStatus {
    /// Every entry after the first holds the digest of the one before, and the last one
    /// is the journal's `historyHead`.
    Intact,
    /// An entry was changed, removed or inserted after it was written.
    Broken,
    /// No entry is chained: the journal was written by an earlier version.
    NotChained,
    /// The entries written by an earlier version are not chained; those after are, and
    /// hold.
    PartlyChained,
}

/// The verdict on the history's hash chain.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Chain {
    pub status: ChainStatus,
    /// `Broken`: the first entry found changed (0-based); `PartlyChained`: the first
    /// chained entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<usize>,
    /// That entry's phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// The verdict in words: `intact (9 entries)`, `broken at entry 3 (phase deleted)`, …
    pub text: String,
}

impl Chain {
    pub fn intact(&self) -> bool {
        self.status != ChainStatus::Broken
    }
}

/// One check of the plan the cutover ran from, and its verdict (issue 12 item 4).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CheckVerdict {
    pub id: String,
    /// `blocker` or `warning`.
    pub severity: String,
    pub title: String,
    /// `pass`, `fail` or `skipped`.
    pub outcome: String,
    /// How many findings it reported.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub findings: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl CheckVerdict {
    /// The checks of `plan`, as recorded.
    pub fn of_plan(plan: &crate::core::plan::Plan) -> Vec<CheckVerdict> {
        plan.checks
            .iter()
            .map(|c| CheckVerdict {
                id: c.id.into(),
                severity: word(&c.severity),
                title: c.title.into(),
                outcome: word(&c.outcome),
                findings: c.findings.len(),
            })
            .collect()
    }
}

/// A serde enum as the word it serializes to.
fn word<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The reviewed plan a cutover ran from (`cutover --plan DIR`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ApprovedPlan {
    /// The bundle directory, as given.
    pub bundle: String,
    /// `sha256:<hex>` of the bundle's `plan.json` (canonical JSON, keys sorted).
    pub fingerprint: String,
    /// The live gateway matched the plan (no drift) when the cutover started. A plan
    /// that did not match refuses the cutover before the journal is written, so a
    /// journal records `false` only if a later version chooses to go on.
    pub matched: bool,
}

/// The ownerReferences removed from the PSK Secret so it survives the old gateway.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PskDetach {
    pub secret: String,
    pub removed_owner_references: Vec<Value>,
}

/// The journal document (`journal.json` in the ConfigMap).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Journal {
    /// Always [`JOURNAL_API_VERSION`].
    pub api_version: String,
    pub namespace: String,
    pub gateway: String,
    pub phase: Phase,
    /// uid of the IPsecGateway the cutover started from.
    pub old_uid: Option<String>,
    /// The plan's `source.specFingerprint` of that object.
    pub spec_fingerprint: String,
    /// The pinned floating IP (what must end on the live gateway).
    #[serde(rename = "floatingIP")]
    pub floating_ip: String,
    /// PSK Secret `name` and salted fingerprint (see `core::psk::fingerprint`).
    pub psk_secret: String,
    pub psk_fingerprint: Option<String>,
    /// The uid of the PSK Secret the fingerprint was keyed with: a Secret re-created
    /// during the window (same name, new uid) cannot be compared with the fingerprint, and
    /// is said to be re-created rather than changed. Absent in journals of earlier
    /// versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psk_secret_uid: Option<String>,
    /// The old IPsecGateway cleaned of server fields: what rollback re-creates.
    pub old_manifest: Value,
    /// The VPNGateway, then the VPNPeers: what cutover applies.
    pub targets: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psk_detached: Option<PskDetach>,
    /// The Argo CD / Flux owners of the old gateway and its PSK Secret, and what
    /// `--gitops pause` changed on each (issue 11 item 2): restored at `done` /
    /// `rolled-back`, listed by `status` while suspended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gitops: Vec<crate::core::gitops::Record>,
    /// The parents of those owners (an app-of-apps Application, an ApplicationSet, a
    /// parent Kustomization) whose suspension the window relies on: each does not sync
    /// now, by anything but this window, and its sync would put an owner's policy back
    /// (a21g attack 16). `relies: true`, `parentOf` the owner; read back with the owners
    /// until the delete, named by `status` until the owner is restored. vpnmig never
    /// resumes one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gitops_parents: Vec<crate::core::gitops::Record>,
    /// Milliseconds from the delete of the old gateway to the first ESTABLISHED tunnel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage_ms: Option<u64>,
    /// The targets come from an earlier journal (`cutover --forward`): a resumed run
    /// applies them, never a new plan of the live gateway.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fixed_targets: bool,
    /// The uids of the targets as applied (VPNGateway, then VPNPeers): what proves an
    /// object is this window's when it is deleted (DESIGN.md §4.8). Empty before the
    /// apply and in journals written by earlier versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_uids: Vec<String>,
    /// ownerReferences of the old manifest left out of the re-created IPsecGateway
    /// because their owners no longer existed (`rollback --drop-missing-owners`; issue 9
    /// item 9): restored verbatim, the garbage collector would delete the gateway.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped_owner_references: Vec<Value>,
    /// The failure that made `cutover --rollback-on-failure` roll back: kept through the
    /// rollback's phases (which clear `lastError`) so the record says why (issue 14
    /// item 9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cutover_failure: Option<String>,
    /// The old IPsecGateway's spec as edited while it was being deleted (terminating,
    /// its finalizer unwinding): each field that differs from the saved old manifest.
    /// Neither applied nor saved; said by the cutover's end, `status` and `report`
    /// (a21r R06b). Absent in journals of earlier versions and when nothing changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edited_while_deleting: Vec<SpecEdit>,
    /// The data plane of the old gateway, read from `swanctl --list-sas` in its pod right
    /// before the delete (issue 12 item 1): what the new gateway's tunnels are compared
    /// with. Absent in journals of earlier versions and when the old gateway had no
    /// readable SAs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_plane_baseline: Option<crate::core::dataplane::Baseline>,
    /// The new gateway's data plane compared with the baseline, once its tunnels are up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_plane: Option<crate::core::dataplane::Comparison>,
    /// The outage, per tunnel and in parts, and how each tunnel came back (by the
    /// gateway's initiation or by the client; issue 12 items 2 and 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage: Option<crate::core::dataplane::Outage>,
    /// How the re-created IPsecGateway's tunnels came back in a rollback (the tunnel
    /// part and each tunnel; `rollback --initiate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_outage: Option<crate::core::dataplane::Outage>,
    /// The last failure, if the run stopped on one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The checks of the plan the cutover started from, with their verdicts (issue 12
    /// item 4). Empty in journals of earlier versions and those rebuilt from a bundle.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckVerdict>,
    /// The reviewed plan the cutover ran from (`--plan DIR`); absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_plan: Option<ApprovedPlan>,
    pub history: Vec<Entry>,
    /// [`Entry::digest`] of the last history entry: the end of the hash chain, so that
    /// an edit of the last entry shows too. Absent in journals of earlier versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_head: Option<String>,
    /// Earlier windows of this gateway whose journals were archived when a new cutover
    /// started after their rollback (issue 21 item 7), oldest first. Absent in journals
    /// of earlier versions and of a gateway's first window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_windows: Vec<EarlierWindow>,
    /// The new objects were applied by a GitOps owner's sync of the merged repository
    /// change, not by vpnmig: the change was merged early, before the window's delete,
    /// and the owner pruned the IPsecGateway (C09/C10). The cutover adopted them after
    /// every pinned value read equal to the plan's: who applied them, from which source,
    /// and when the window adopted them. Absent when vpnmig applied them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_by_source: Option<String>,
}

/// A window whose journal was archived in its own ConfigMap before a new window replaced
/// it (`vpnmig report NAME --window N` renders its record).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct EarlierWindow {
    /// The window's number: 1 for the gateway's first window.
    pub window: u32,
    /// The ConfigMap that holds its journal (key `archived-journal.json`): the name it got
    /// ([`archive_names`]; `vpnmig-NAME.window-N` unless that was taken).
    pub config_map: String,
    /// Its phase when it was archived (`rolled-back`).
    pub phase: Phase,
    /// Its first and last history entries' times.
    pub started: String,
    pub ended: String,
    /// Its `historyHead`, so the archive can be matched with the journal it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_head: Option<String>,
}

/// The name the archive of window `n` of `gateway` takes first: the journal's name and
/// `.window-N`. Only a name, never where a window's number or gateway is read from: a
/// gateway may itself be named with a dot (the operator accepts DNS-subdomain names), so
/// `vpnmig-kells.window-1` can be the own journal of gateway `kells.window-1` (T11), or
/// any other object. An archive's number is its label [`ARCHIVE_LABEL`], its gateway the
/// `gateway` of the journal it holds under [`ARCHIVE_KEY`].
pub fn archive_name(gateway: &str, n: u32) -> String {
    format!("{}.window-{n}", object_name(gateway))
}

/// How many names the archive of one window may try ([`archive_names`]).
pub const ARCHIVE_NAMES: u32 = 100;

/// The names the archive of window `n` of `gateway` may take, in the order it tries them:
/// [`archive_name`], then it with `-2`, `-3`, … when a name is taken by something else
/// (another gateway's journal, another object). The window's number stays `n` whichever
/// name it gets.
pub fn archive_names(gateway: &str, n: u32) -> impl Iterator<Item = String> {
    let first = archive_name(gateway, n);
    (1..=ARCHIVE_NAMES).map(move |k| {
        if k == 1 {
            first.clone()
        } else {
            format!("{first}-{k}")
        }
    })
}

/// What a ConfigMap holds, as an archive reader sees it (its labels and data).
#[derive(Clone, Debug, PartialEq)]
pub enum Archived {
    /// The archive of window `window` (its label) of the journal it holds.
    Of { window: u32, journal: Box<Journal> },
    /// Labelled the archive of window `window`, but its journal cannot be read (`why`);
    /// `gateway` is its gateway label, when it has one.
    Unreadable {
        window: u32,
        gateway: Option<String>,
        why: String,
    },
    /// No archive: a gateway's own journal (key `journal.json`), or anything else.
    No,
}

impl Archived {
    /// Whether it is (or claims to be) an archive of `gateway`.
    pub fn of(&self, gateway: &str) -> bool {
        match self {
            Archived::Of { journal, .. } => journal.gateway == gateway,
            Archived::Unreadable { gateway: g, .. } => g.as_deref() == Some(gateway),
            Archived::No => false,
        }
    }

    /// Its window's number, when it is an archive.
    pub fn window(&self) -> Option<u32> {
        match self {
            Archived::Of { window, .. } | Archived::Unreadable { window, .. } => Some(*window),
            Archived::No => None,
        }
    }
}

/// What the ConfigMap with `labels` and `data` holds: an archive is labelled
/// [`ARCHIVE_LABEL`] with its window's number and holds no `journal.json`; its journal is
/// under [`ARCHIVE_KEY`]. Its name says nothing.
pub fn archived(
    labels: Option<&std::collections::BTreeMap<String, String>>,
    data: Option<&std::collections::BTreeMap<String, String>>,
) -> Archived {
    let Some(window) = labels
        .and_then(|l| l.get(ARCHIVE_LABEL))
        .and_then(|v| v.parse::<u32>().ok())
    else {
        return Archived::No;
    };
    if data.is_some_and(|d| d.contains_key("journal.json")) {
        return Archived::No;
    }
    let gateway = labels
        .and_then(|l| l.get("vpnmig.bnerd.net/gateway"))
        .cloned();
    match data.and_then(|d| d.get(ARCHIVE_KEY)) {
        None => Archived::Unreadable {
            window,
            gateway,
            why: format!("no key {ARCHIVE_KEY}"),
        },
        Some(text) => match Journal::from_json(text) {
            Ok(j) => Archived::Of {
                window,
                journal: Box::new(j),
            },
            Err(why) => Archived::Unreadable {
                window,
                gateway,
                why,
            },
        },
    }
}

/// What the archive of `journal` as window `n` does with a name whose ConfigMap holds
/// `held` (`None`: no ConfigMap has it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Free: the archive is written there.
    Free,
    /// This journal's archive is already there (a run stopped between the archive and the
    /// new journal), as window `window`: used again.
    Same { window: u32 },
    /// Another window of the same gateway is archived there under number `n` (its journal
    /// was lost and its windows counted again from 1): the archive takes the next number,
    /// so that a gateway's archives never share one.
    Numbered,
    /// Something else has the name (another gateway's journal or archive, any other
    /// object): the archive tries the next name, under the same number.
    Taken,
}

/// The [`Slot`] a name is for the archive of `journal` as window `n`.
pub fn slot(held: Option<&Archived>, journal: &Journal, n: u32) -> Slot {
    match held {
        None => Slot::Free,
        Some(Archived::Of { window, journal: a }) if a.gateway == journal.gateway => {
            if a.history_head == journal.history_head && a.history == journal.history {
                Slot::Same { window: *window }
            } else if *window == n {
                Slot::Numbered
            } else {
                Slot::Taken
            }
        }
        Some(_) => Slot::Taken,
    }
}

impl Journal {
    /// The objects a finished window left that take their key from the PSK Secret, each
    /// with the pointer of its `pskSecretRef`: the VPNPeers of a done window, the
    /// IPsecGateway of a rolled-back one; none while the window is under way.
    pub fn psk_users(&self) -> Vec<(&Value, &'static str)> {
        match self.phase {
            Phase::Done => self
                .targets
                .iter()
                .filter(|t| t["kind"] == "VPNPeer")
                .map(|t| (t, "/spec/ipsec/pskSecretRef"))
                .collect(),
            Phase::RolledBack => vec![(&self.old_manifest, "/spec/auth/pskSecretRef")],
            _ => Vec::new(),
        }
    }

    /// Whether `live`, one of [`Journal::psk_users`] as read now, takes its key from
    /// another Secret or key than the window's (whose key the journal fingerprinted): the
    /// Secret and key it names, `(none)` for a field it lacks (a21d attack 13, a21u U05a:
    /// a half-done rotation pointed a VPNPeer at a Secret that does not exist, and the
    /// record said "the cutover is complete").
    pub fn psk_moved(&self, live: &Value, at: &str) -> Option<(String, String)> {
        let key = self.psk_key();
        let name = live.pointer(&format!("{at}/name")).and_then(Value::as_str);
        let uses_key = live.pointer(&format!("{at}/key")).and_then(Value::as_str);
        (name != Some(self.psk_secret.as_str()) || uses_key.is_some_and(|k| k != key)).then(|| {
            (
                name.unwrap_or("(none)").to_string(),
                uses_key.unwrap_or(key).to_string(),
            )
        })
    }

    /// The key of the PSK in its Secret, as the window's objects name it (`psk` when
    /// neither says).
    pub fn psk_key(&self) -> &str {
        self.targets
            .iter()
            .find_map(|t| t.pointer("/spec/ipsec/pskSecretRef/key"))
            .or_else(|| self.old_manifest.pointer("/spec/auth/pskSecretRef/key"))
            .and_then(serde_json::Value::as_str)
            .unwrap_or("psk")
    }

    /// This window's number among the gateway's windows: one after the last archived.
    pub fn window_number(&self) -> u32 {
        self.earlier_windows.last().map_or(1, |e| e.window + 1)
    }

    /// What a new window's journal records of this one once it is archived as window
    /// `n` in ConfigMap `config_map`.
    pub fn archived_as(&self, n: u32, config_map: &str) -> EarlierWindow {
        EarlierWindow {
            window: n,
            config_map: config_map.to_string(),
            phase: self.phase,
            started: self
                .history
                .first()
                .map(|e| e.at.clone())
                .unwrap_or_default(),
            ended: self
                .history
                .last()
                .map(|e| e.at.clone())
                .unwrap_or_default(),
            history_head: self.history_head.clone(),
        }
    }
}

/// The key of an archived journal in its ConfigMap: not `journal.json`, so that no
/// version of vpnmig reads an archive as a window under way.
pub const ARCHIVE_KEY: &str = "archived-journal.json";

/// The label that marks an archived journal; its value is the window's number.
pub const ARCHIVE_LABEL: &str = "vpnmig.bnerd.net/archived-window";

/// One ownerReference of the saved old manifest, as the rollback checks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    /// The reference as saved.
    pub raw: Value,
}

impl std::fmt::Display for OwnerRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} (uid {})", self.kind, self.name, self.uid)
    }
}

/// What the cluster holds under an ownerReference's apiVersion/kind/name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnerSeen {
    /// Nothing of that name.
    Absent,
    /// An object of that name, with this uid.
    Uid(String),
}

/// An owner the re-created object would reference but that is gone: absent, or
/// re-created since (another uid), which the garbage collector treats the same.
pub fn owner_missing(r: &OwnerRef, seen: &OwnerSeen) -> Option<String> {
    match seen {
        OwnerSeen::Absent => Some(format!("{r}: no {} {} exists", r.kind, r.name)),
        OwnerSeen::Uid(u) if *u != r.uid => Some(format!(
            "{r}: the {} {} that exists now is another object (uid {u})",
            r.kind, r.name
        )),
        OwnerSeen::Uid(_) => None,
    }
}

/// The PSK Secret the VPNPeer targets reference (all reference the old gateway's).
fn psk_secret_of(targets: &[Value]) -> String {
    targets
        .iter()
        .find_map(|t| t.pointer("/spec/ipsec/pskSecretRef/name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A blank journal at [`Phase::Started`]: every field empty but the API version. The
/// builders ([`Journal::new`], [`Journal::from_bundle`]) and the tests fill in what they
/// know and take the rest from here (`..Journal::default()`), so a new field is added in
/// one place.
impl Default for Journal {
    fn default() -> Journal {
        Journal {
            api_version: JOURNAL_API_VERSION.into(),
            phase: Phase::Started,
            namespace: Default::default(),
            gateway: Default::default(),
            old_uid: Default::default(),
            spec_fingerprint: Default::default(),
            floating_ip: Default::default(),
            psk_secret: Default::default(),
            psk_fingerprint: Default::default(),
            psk_secret_uid: Default::default(),
            old_manifest: Default::default(),
            targets: Default::default(),
            psk_detached: Default::default(),
            gitops: Default::default(),
            gitops_parents: Default::default(),
            outage_ms: Default::default(),
            fixed_targets: Default::default(),
            target_uids: Default::default(),
            dropped_owner_references: Default::default(),
            cutover_failure: Default::default(),
            edited_while_deleting: Default::default(),
            data_plane_baseline: Default::default(),
            data_plane: Default::default(),
            outage: Default::default(),
            rollback_outage: Default::default(),
            last_error: Default::default(),
            checks: Default::default(),
            approved_plan: Default::default(),
            history: Default::default(),
            history_head: Default::default(),
            earlier_windows: Default::default(),
            applied_by_source: Default::default(),
        }
    }
}

impl Journal {
    /// A new journal in phase `Started`.
    pub fn new(
        plan: &crate::core::plan::Plan,
        old_manifest: Value,
        floating_ip: String,
        now: &str,
        by: &str,
    ) -> Journal {
        let targets: Vec<Value> = plan.targets.objects().into_iter().map(|(_, v)| v).collect();
        let psk_secret = psk_secret_of(&targets);
        Journal {
            namespace: plan.source.namespace.clone().unwrap_or_default(),
            gateway: plan.source.name.clone(),
            phase: Phase::Started,
            old_uid: plan.source.uid.clone(),
            spec_fingerprint: plan.source.spec_fingerprint.clone(),
            floating_ip,
            psk_secret,
            psk_fingerprint: plan.source.psk_fingerprint.clone(),
            old_manifest,
            targets,
            checks: CheckVerdict::of_plan(plan),
            ..Journal::default()
        }
        .first(Phase::Started, now, by)
    }

    /// The journal with its first history entry (`phase` at `now` by `by`).
    fn first(mut self, phase: Phase, now: &str, by: &str) -> Journal {
        self.history.clear();
        self.advance(phase, now, by);
        self
    }

    /// A journal rebuilt from a saved bundle (`plan.json` and the old manifest), for a
    /// rollback when the one in the cluster is gone. Its phase is `Done`: the state of
    /// the cluster is found out by the rollback itself.
    pub fn from_bundle(plan: &Value, old_manifest: Value, now: &str, by: &str) -> Journal {
        let s = |p: &str| plan.pointer(p).and_then(Value::as_str).map(str::to_string);
        let mut targets = vec![plan["targets"]["gateway"].clone()];
        targets.extend(
            plan["targets"]["peers"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        );
        let psk_secret = psk_secret_of(&targets);
        Journal {
            namespace: s("/source/namespace").unwrap_or_default(),
            gateway: s("/source/name").unwrap_or_default(),
            phase: Phase::Done,
            old_uid: s("/source/uid"),
            spec_fingerprint: s("/source/specFingerprint").unwrap_or_default(),
            floating_ip: old_manifest
                .pointer("/spec/endpoint/floatingIP")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            psk_secret,
            psk_fingerprint: s("/source/pskFingerprint"),
            old_manifest,
            targets,
            ..Journal::default()
        }
        .first(
            Phase::Done,
            now,
            &format!("{by} (rebuilt from a plan bundle)"),
        )
    }

    /// What to run from where this journal stands: [`Phase::recovery`], except that a
    /// rollback that stopped on lost addresses (the re-created IPsecGateway got another
    /// serviceCIDR) is not resumed by running it again, which would stop the same way
    /// (issue 10 item 4).
    pub fn recovery(&self) -> String {
        let (name, ns) = (self.gateway.as_str(), self.namespace.as_str());
        let lost = self
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("the operator allocated other addresses"));
        // Stopped on a VPNGateway vpnmig did not create for the window: running the
        // rollback again stops the same way until it is gone (a21p E16's journal).
        let not_created = self.last_error.as_deref().is_some_and(|e| {
            e.contains(&format!("vpngateway/{name} -n {ns} was not deleted"))
                && e.contains("was not created by vpnmig for it")
        });
        if self.phase == Phase::RollingBack && not_created {
            return format!(
                "a rollback has not finished: it stopped on vpngateway/{name} -n {ns}, which vpnmig did not create for the window; {}",
                crate::core::scope::not_created_way_on(name, ns)
            );
        }
        if self.phase == Phase::OldApplied && lost {
            return format!(
                "the re-created IPsecGateway got other addresses than the client knows: `vpnmig cutover {name} -n {ns} --forward` cuts over again to the journal's targets, which pin the old ones; or change the client's side and close the journal with `vpnmig rollback {name} -n {ns} --accept-new-addresses`"
            );
        }
        self.phase.recovery(name, ns)
    }

    /// Record reaching `phase`: a history entry chained to the one before.
    pub fn advance(&mut self, phase: Phase, now: &str, by: &str) {
        self.phase = phase;
        self.last_error = None;
        let entry = Entry {
            phase,
            at: now.into(),
            by: by.into(),
            prev: self.history.last().map(Entry::digest),
        };
        self.history_head = Some(entry.digest());
        self.history.push(entry);
    }

    /// Whether the history's hash chain holds: each entry's `prev` is the digest of the
    /// entry before, and `historyHead` that of the last. The first entry found changed is
    /// named; entries of an earlier version (no `prev`) are said to be unchained.
    pub fn chain(&self) -> Chain {
        let h = &self.history;
        let n = h.len();
        let broken = |i: usize| Chain {
            status: ChainStatus::Broken,
            entry: Some(i),
            phase: h.get(i).map(|e| e.phase),
            text: match h.get(i) {
                Some(e) => format!(
                    "broken at entry {i} (phase {}): it was changed after it was written, or an entry was removed or inserted there",
                    e.phase
                ),
                None => {
                    "broken: the history is empty but the journal records its last entry".into()
                }
            },
        };
        // The first entry that is chained: the ones before were written by an earlier
        // version (a window resumed by this one).
        let first = (1..n).find(|&i| h[i].prev.is_some());
        if first.is_none() && self.history_head.is_none() {
            return Chain {
                status: ChainStatus::NotChained,
                entry: None,
                phase: None,
                text: "not chained (journal from an earlier version)".into(),
            };
        }
        let from = first.unwrap_or(n);
        if from == n && n > 1 {
            // A head, but the last entry holds no link: its `prev` was taken out.
            return broken(n - 1);
        }
        for i in from..n {
            // An entry written by this version must hold the digest of the one before: one
            // without it lost its link; one with another digest follows a changed entry.
            match h[i].prev.as_deref() {
                None => return broken(i),
                Some(d) if d != h[i - 1].digest() => return broken(i - 1),
                Some(_) => {}
            }
        }
        match (&self.history_head, h.last()) {
            (Some(head), Some(last)) if *head == last.digest() => {}
            (Some(_), Some(_)) => return broken(n - 1),
            (Some(_), None) => return broken(0),
            // Chained entries and no head: the head was taken out, so an edit of the last
            // entry would not show (attack finding).
            (None, _) if from < n => return broken(n - 1),
            (None, _) => {}
        }
        // The phase the journal says is the last entry's: a phase edited without an entry
        // (a failed window made to read `done`) is not the history's.
        if let Some(last) = h.last()
            && last.phase != self.phase
        {
            return Chain {
                status: ChainStatus::Broken,
                entry: Some(n - 1),
                phase: Some(last.phase),
                text: format!(
                    "broken: the journal says phase {}, but its last entry (entry {}) is phase {}",
                    self.phase,
                    n - 1,
                    last.phase
                ),
            };
        }
        let unchained = from.saturating_sub(1);
        if unchained > 0 && from < n {
            return Chain {
                status: ChainStatus::PartlyChained,
                entry: Some(from),
                phase: Some(h[from].phase),
                text: format!(
                    "intact from entry {from} (phase {}); the {unchained} entries before are not chained (written by an earlier version)",
                    h[from].phase
                ),
            };
        }
        Chain {
            status: ChainStatus::Intact,
            entry: None,
            phase: None,
            text: format!("intact ({n} entries)"),
        }
    }

    /// The ownerReferences of the old manifest a re-created IPsecGateway would carry
    /// (those not already dropped).
    pub fn old_owners(&self) -> Vec<OwnerRef> {
        let s = |r: &Value, f: &str| {
            r.get(f)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        self.old_manifest
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|r| !self.dropped_owner_references.contains(r))
            .map(|r| OwnerRef {
                api_version: s(r, "apiVersion"),
                kind: s(r, "kind"),
                name: s(r, "name"),
                uid: s(r, "uid"),
                raw: r.clone(),
            })
            .collect()
    }

    /// What a rollback creates: the old manifest, verbatim but for the ownerReferences
    /// recorded as dropped (an empty list is left out).
    pub fn manifest_to_create(&self) -> Value {
        let mut m = self.old_manifest.clone();
        if self.dropped_owner_references.is_empty() {
            return m;
        }
        if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
            let kept: Vec<Value> = meta
                .get("ownerReferences")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|r| !self.dropped_owner_references.contains(r))
                .cloned()
                .collect();
            if kept.is_empty() {
                meta.remove("ownerReferences");
            } else {
                meta.insert("ownerReferences".into(), Value::Array(kept));
            }
        }
        m
    }

    /// The kind a finished window left live: the VPNGateway after `done`, the
    /// IPsecGateway after `rolled-back`; `None` while one is under way.
    pub fn left_kind(&self) -> Option<&'static str> {
        match self.phase {
            Phase::Done => Some("VPNGateway"),
            Phase::RolledBack => Some("IPsecGateway"),
            _ => None,
        }
    }

    /// The floating IP the saved IPsecGateway pins (what a rollback re-creates it on),
    /// else the journal's.
    pub fn old_fip(&self) -> String {
        self.old_manifest
            .pointer("/spec/endpoint/floatingIP")
            .and_then(Value::as_str)
            .unwrap_or(&self.floating_ip)
            .to_string()
    }

    /// The floating IP of the kind a window left: the VPNGateway's (the journal's) after
    /// `done`, the saved IPsecGateway's otherwise.
    pub fn left_fip(&self) -> String {
        if self.left_kind() == Some("VPNGateway") {
            self.floating_ip.clone()
        } else {
            self.old_fip()
        }
    }

    /// What the cluster shows of the gateway a finished window left, from the live
    /// objects of its name (`old`: the IPsecGateway, `new`: the VPNGateway). A gateway
    /// gone after its window is never a green verdict: its tunnels are down and the
    /// client's firewall dials a floating IP nothing holds (a21e attacks 6 and 11: a
    /// rolled-back gateway pruned, and `status` and `verify` said nothing or "no journal").
    pub fn left(&self, old: Option<&Value>, new: Option<&Value>) -> Left {
        let Some(kind) = self.left_kind() else {
            return Left::UnderWay;
        };
        let (mine, other) = if kind == "VPNGateway" {
            (new, old)
        } else {
            (old, new)
        };
        match mine {
            Some(o) if o.pointer("/metadata/deletionTimestamp").is_some() => Left::Terminating,
            Some(_) => Left::AsLeft,
            None if other.is_some() => Left::OtherKind,
            None => Left::Gone,
        }
    }

    /// One sentence on a finished window whose gateway is not as it left it (`state`
    /// from [`Journal::left`]), naming the journal, the kind, its floating IP and when
    /// the window ended; `None` when it is as left (or a window is under way).
    pub fn left_text(&self, state: Left) -> Option<String> {
        let kind = self.left_kind()?;
        let (name, ns) = (self.gateway.as_str(), self.namespace.as_str());
        let when = self.history.last().map(|e| e.at.as_str()).unwrap_or("?");
        let what = crate::core::model::object_ref(kind, name, ns);
        let fip = self.left_fip();
        let ended = format!(
            "the window of {ns}/{name} ended {} at {when} leaving {what} on floating IP {fip} (journal ConfigMap {ns}/{})",
            self.phase,
            object_name(name)
        );
        let other = if kind == "VPNGateway" {
            "IPsecGateway"
        } else {
            "VPNGateway"
        };
        Some(match state {
            Left::AsLeft | Left::UnderWay => return None,
            Left::Gone => format!(
                "{ended}, and neither an IPsecGateway nor a VPNGateway {name} exists now: the gateway is gone, its tunnels are down, and the floating IP the client's firewall dials is no longer its own"
            ),
            Left::Terminating => format!(
                "{ended}, and it is being deleted now (deletionTimestamp set): its tunnels go down when its finalizer ends"
            ),
            Left::OtherKind => format!(
                "{ended}, and it is gone: only {} exists, which the window did not leave",
                crate::core::model::object_ref(other, name, ns)
            ),
        })
    }

    /// The GitOps owners that sync this window's gateway (the old gateway's markers name
    /// them) and that no window holds: suspended by it (`paused`), or by its user
    /// (`--gitops ignore`, not let go since). Where neither kind of the gateway exists
    /// after the window, such an owner pruned it (its source defines neither) and would
    /// prune a re-created one again (a21f A8). Named as vpnmig names owners.
    pub fn unheld_syncers(&self) -> Vec<String> {
        self.unheld_syncers_but(&[])
    }

    /// [`Journal::unheld_syncers`] less the owners `suspended` (read suspended live: they
    /// sync nothing, whoever suspended them). a21s S02c: an owner the window let go of
    /// (re-enabled by someone during the delete), suspended again as the stop advised, was
    /// still named as one that "syncs it", and the rollback refused for good.
    pub fn unheld_syncers_but(&self, suspended: &[crate::core::gitops::OwnerRef]) -> Vec<String> {
        use crate::core::gitops::{Mode, OwnerRef, detect, same_owner};
        let held = |o: &OwnerRef| {
            self.gitops.iter().any(|r| {
                &r.owner == o && (r.paused || (r.mode == Mode::Ignore && r.restored_at.is_none()))
            })
        };
        detect(&self.old_manifest)
            .iter()
            .filter(|m| m.tool.reconciles())
            .filter(|m| m.owner.as_ref().is_none_or(|o| !held(o)))
            .filter(|m| {
                m.owner
                    .as_ref()
                    .is_none_or(|o| !suspended.iter().any(|s| same_owner(s, o)))
            })
            .map(|m| match &m.owner {
                Some(o) => o.display(),
                None => m.tool.label(),
            })
            .collect()
    }

    /// Where an owner that syncs the gateway pruned it ([`Journal::unheld_syncers`]):
    /// the repository is the way back, with the copy that pins the client's addresses. At
    /// `done` that is the VPNGateway and its VPNPeers as the window applied them (an
    /// IPsecGateway cannot pin its serviceCIDR: a21g 03, re-created it got another /24);
    /// otherwise the IPsecGateway as the journal keeps it.
    pub fn repository_todo(&self) -> String {
        let (name, ns) = (self.gateway.as_str(), self.namespace.as_str());
        if self.phase == Phase::Done {
            format!(
                "put vpngateway/{name} and its VPNPeers back in the repository as the window applied them (they pin its floating IP, serviceCIDR and virtual IPs: `vpnmig report {name} -n {ns}` shows them); its owner then re-creates them; `vpnmig verify {name} -n {ns}` checks them. A rollback would re-create an IPsecGateway its owner prunes again, so vpnmig refuses it"
            )
        } else {
            format!(
                "put ipsecgateway/{name} back in the repository as the journal keeps it (its floating IP pinned: `vpnmig report {name} -n {ns}` shows the window); its owner then re-creates it; `vpnmig verify {name} -n {ns}` checks it"
            )
        }
    }

    /// What to do when the gateway is not as the window left it (`state` from
    /// [`Journal::left`]): one advice, the same in `status`, `verify`, `cutover` and the
    /// rollback's refusal, so that following it never comes back to where it started
    /// (a21f A7: over a VPNGateway that appeared after a rollback, `verify` advised the
    /// rollback, the rollback refused and sent back to `verify`). `None` when it is as
    /// left (or a window is under way).
    pub fn left_todo(&self, state: Left) -> Option<String> {
        let kind = self.left_kind()?;
        let (name, ns) = (self.gateway.as_str(), self.namespace.as_str());
        let back = if self.phase == Phase::RolledBack {
            format!(
                "`vpnmig rollback {name} -n {ns}` re-creates it from the journal with its floating IP pinned"
            )
        } else {
            format!("`vpnmig rollback {name} -n {ns}` restores the IPsecGateway from the journal")
        };
        Some(match state {
            Left::AsLeft | Left::UnderWay => return None,
            Left::Terminating => format!(
                "once it is gone (`kubectl get {} {name} -n {ns} -w`), {back}; find out who deleted it first (`kubectl get events -n {ns}`)",
                kind.to_lowercase()
            ),
            Left::Gone if !self.unheld_syncers().is_empty() => format!(
                "{} syncs it and its source defines neither kind now: {}",
                self.unheld_syncers().join(", "),
                self.repository_todo()
            ),
            Left::Gone => format!("find out who deleted it (`kubectl get events -n {ns}`); {back}"),
            Left::OtherKind if self.phase == Phase::RolledBack => format!(
                "vpnmig deletes only what its own window made, so no vpnmig command removes vpngateway/{name} -n {ns}; find out who made it (`kubectl get vpngateway {name} -n {ns} --show-managed-fields -o yaml`). To go back to the IPsecGateway, its maker removes it (from the repository where a GitOps owner syncs it, else `kubectl delete vpngateway {name} -n {ns}`), then {back}. To keep it, `vpnmig verify {name} -n {ns}` checks what it serves; this journal goes on saying the window left an IPsecGateway"
            ),
            Left::OtherKind => format!(
                "find out who made ipsecgateway/{name} -n {ns} (`kubectl get ipsecgateway {name} -n {ns} --show-managed-fields -o yaml`); `vpnmig verify {name} -n {ns}` checks what it serves"
            ),
        })
    }

    /// `(Kind, name)` of each target, VPNGateway first.
    pub fn target_names(&self) -> Vec<(String, String)> {
        self.targets
            .iter()
            .map(|t| {
                (
                    t["kind"].as_str().unwrap_or_default().to_string(),
                    t["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                )
            })
            .collect()
    }

    /// The serviceCIDR and `(exposure, virtual IP)`s the VPNGateway target pins: what the
    /// old gateway had in its status.
    pub fn pinned_addresses(&self) -> (Option<String>, Vec<(String, String)>) {
        pinned_addresses(self.targets.iter().find(|t| t["kind"] == "VPNGateway"))
    }

    /// The VPNPeer names.
    pub fn peer_names(&self) -> Vec<String> {
        self.target_names()
            .into_iter()
            .filter(|(k, _)| k == "VPNPeer")
            .map(|(_, n)| n)
            .collect()
    }

    /// The peers the new gateway must have a tunnel with: each VPNPeer target's name,
    /// `spec.ipsec.peer.address` and `spec.ipsec.peer.id`.
    pub fn expected_peers(&self) -> Vec<crate::core::dataplane::ExpectedPeer> {
        let text = |t: &Value, p: &str| t.pointer(p).and_then(Value::as_str).map(str::to_string);
        self.targets
            .iter()
            .filter(|t| t["kind"] == "VPNPeer")
            .map(|t| crate::core::dataplane::ExpectedPeer {
                name: text(t, "/metadata/name").unwrap_or_default(),
                address: text(t, "/spec/ipsec/peer/address").unwrap_or_default(),
                id: text(t, "/spec/ipsec/peer/id"),
            })
            .collect()
    }

    /// Read `journal.json`. A document that is not a journal of this version, or one
    /// that does not hold together ([`Journal::validate`]), is an error naming what was
    /// seen.
    pub fn from_json(text: &str) -> Result<Journal, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let seen = v["apiVersion"].as_str().unwrap_or("<none>");
        if seen != JOURNAL_API_VERSION {
            return Err(format!(
                "apiVersion {seen}, this vpnmig reads {JOURNAL_API_VERSION}"
            ));
        }
        let j: Journal = serde_json::from_value(v).map_err(|e| e.to_string())?;
        j.validate()?;
        Ok(j)
    }

    /// What a journal must say of itself before anything is applied or re-created from
    /// it (a hand edit, a truncated write): the old manifest is this IPsecGateway and pins
    /// `floatingIP`; the targets are this VPNGateway, pinning the same floating IP, and
    /// its VPNPeers, each referencing it and the PSK Secret.
    pub fn validate(&self) -> Result<(), String> {
        let s = |v: &Value, p: &str| {
            v.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let fip = self.floating_ip.as_str();
        if fip.is_empty() {
            return Err("floatingIP is empty".into());
        }
        let old = &self.old_manifest;
        if s(old, "/kind") != "IPsecGateway" || s(old, "/metadata/name") != self.gateway {
            return Err(format!("oldManifest is not IPsecGateway {}", self.gateway));
        }
        // Addresses compare parsed (issue 9 item 4).
        if !addr::same_addr(&s(old, "/spec/endpoint/floatingIP"), fip) {
            return Err(format!("oldManifest does not pin floatingIP {fip}"));
        }
        let Some((gw, peers)) = self.targets.split_first() else {
            return Err("targets is empty".into());
        };
        if s(gw, "/kind") != "VPNGateway" || s(gw, "/metadata/name") != self.gateway {
            return Err(format!("targets[0] is not VPNGateway {}", self.gateway));
        }
        if !addr::same_addr(&s(gw, "/spec/endpoint/floatingIP"), fip) {
            return Err(format!(
                "targets[0] (the VPNGateway) does not pin floatingIP {fip}"
            ));
        }
        if peers.is_empty() {
            return Err("targets has no VPNPeer".into());
        }
        for (i, p) in peers.iter().enumerate() {
            let at = i + 1;
            if s(p, "/kind") != "VPNPeer" || s(p, "/spec/gatewayRef/name") != self.gateway {
                return Err(format!(
                    "targets[{at}] is not a VPNPeer of gateway {}",
                    self.gateway
                ));
            }
            if s(p, "/spec/ipsec/pskSecretRef/name") != self.psk_secret {
                return Err(format!(
                    "targets[{at}] does not reference PSK Secret {}",
                    self.psk_secret
                ));
            }
        }
        Ok(())
    }
}

/// One field of the old gateway's spec edited while it was being deleted (a21r R06b).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SpecEdit {
    /// The field path (`spec.tunnels[0].remoteSubnets[1]`).
    pub path: String,
    /// Its value as last seen on the terminating gateway (`<none>`: removed).
    pub seen: String,
    /// Its value in the saved old manifest (`<none>`: absent there).
    pub saved: String,
}

impl Journal {
    /// The edits of `live`'s spec (the old gateway as read while it is being deleted)
    /// against the saved old manifest, when its spec fingerprint is no longer the
    /// journal's; none when it is (or `live` is another object than the journal's).
    pub fn edits_while_deleting(&self, live: &Value) -> Vec<SpecEdit> {
        let spec = live.get("spec").unwrap_or(&Value::Null);
        if let Some(uid) = self.old_uid.as_deref()
            && live.pointer("/metadata/uid").and_then(Value::as_str) != Some(uid)
        {
            return Vec::new();
        }
        if crate::core::fingerprint::fingerprint(spec) == self.spec_fingerprint {
            return Vec::new();
        }
        let saved = self.old_manifest.get("spec").unwrap_or(&Value::Null);
        crate::core::scope::differences(saved, spec)
            .into_iter()
            .map(|(path, saved, seen)| SpecEdit { path, seen, saved })
            .collect()
    }

    /// [`Journal::edited_while_deleting`] said, with the way to carry it over; `None`:
    /// nothing was edited.
    pub fn edited_while_deleting_text(&self) -> Option<String> {
        if self.edited_while_deleting.is_empty() {
            return None;
        }
        let (name, ns) = (self.gateway.as_str(), self.namespace.as_str());
        let fields: Vec<String> = self
            .edited_while_deleting
            .iter()
            .map(|e| format!("{} {} (saved: {})", e.path, e.seen, e.saved))
            .collect();
        Some(format!(
            "ipsecgateway/{name} -n {ns} was edited while it was being deleted: {}; the edit is neither in what was applied nor in the saved old manifest (data.old-ipsecgateway.yaml of configmap {} -n {ns}), it is dropped; if it was meant, carry it over by hand to vpngateway/{name} -n {ns} and its VPNPeers (in the repository first where Argo CD or Flux syncs them)",
            fields.join("; "),
            object_name(name)
        ))
    }
}

/// One difference between a saved plan and the live one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Drift {
    /// What differs, as a `plan.json` path (`source.uid`, `targets`).
    pub what: String,
    pub saved: String,
    pub live: String,
}

/// Compare a saved `plan.json` with the live plan (DESIGN.md §4.4): the same object
/// (uid), the same spec (generation and spec fingerprint) and the same targets. The
/// resourceVersion is not compared: the operator's status writes change it without
/// changing what the plan was made from.
pub fn drift(saved: &Value, live: &crate::core::plan::Plan) -> Vec<Drift> {
    let live_v = serde_json::to_value(live).expect("plans serialize");
    let mut out = Vec::new();
    let show = |v: &Value| match v {
        Value::Null => "<none>".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    for path in [
        "/source/namespace",
        "/source/name",
        "/source/uid",
        "/source/generation",
        "/source/specFingerprint",
        "/source/pskFingerprint",
    ] {
        let a = saved.pointer(path).cloned().unwrap_or(Value::Null);
        let b = live_v.pointer(path).cloned().unwrap_or(Value::Null);
        if a != b {
            out.push(Drift {
                what: path[1..].replace('/', "."),
                saved: show(&a),
                live: show(&b),
            });
        }
    }
    let a = saved.pointer("/targets").cloned().unwrap_or(Value::Null);
    let b = live_v.pointer("/targets").cloned().unwrap_or(Value::Null);
    if a != b {
        let (sa, sb) = (
            crate::core::yaml::to_yaml_sorted(&a),
            crate::core::yaml::to_yaml_sorted(&b),
        );
        let diff = similar::TextDiff::from_lines(&sa, &sb)
            .unified_diff()
            .context_radius(1)
            .header("saved plan", "live plan")
            .to_string();
        out.push(Drift {
            what: "targets".into(),
            saved: "see diff".into(),
            live: diff,
        });
    }
    out
}

/// What the re-created old gateway lost: its serviceCIDR and virtual IPs as the
/// operator allocated them now (`status`) against what the journal recorded. The
/// IPsecGateway kind has no spec field for its serviceCIDR, so a re-created one gets the
/// operator's next free /24 (DESIGN.md §2) unless that is the same one. One line per
/// value that changed; empty when nothing did.
pub fn lost_addresses(j: &Journal, status: &Value) -> Vec<String> {
    let (cidr, vips) = j.pinned_addresses();
    let mut out = Vec::new();
    let now = status.get("serviceCIDR").and_then(Value::as_str);
    // Compared parsed (issue 9 item 4): the operator may print what it allocated in
    // another spelling than the one recorded.
    if let Some(c) = &cidr
        && !now.is_some_and(|n| addr::same_net(n, c))
    {
        out.push(format!("serviceCIDR {c} → {}", now.unwrap_or("<none>")));
    }
    for (name, vip) in vips {
        let now = status
            .get("exposures")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|e| e["name"] == name.as_str())
            .and_then(|e| e["virtualIP"].as_str());
        if !now.is_some_and(|n| addr::same_addr(n, &vip)) {
            out.push(format!(
                "exposure {name} virtual IP {vip} → {}",
                now.unwrap_or("<none>")
            ));
        }
    }
    out
}

/// Compare a saved `plan.json` with a journal: the same object (uid) and the same
/// targets. Used when the source is gone (a resumed cutover, a rollback).
pub fn journal_drift(saved: &Value, j: &Journal) -> Vec<Drift> {
    let mut out = Vec::new();
    let uid = saved.pointer("/source/uid").and_then(Value::as_str);
    if uid != j.old_uid.as_deref() {
        out.push(Drift {
            what: "source.uid".into(),
            saved: uid.unwrap_or("<none>").into(),
            live: j.old_uid.clone().unwrap_or_else(|| "<none>".into()),
        });
    }
    let mut targets = vec![saved["targets"]["gateway"].clone()];
    targets.extend(
        saved["targets"]["peers"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    );
    if targets != j.targets {
        out.push(Drift {
            what: "targets".into(),
            saved: format!("{} object(s)", targets.len()),
            live: format!("{} object(s) in the journal, not equal", j.targets.len()),
        });
    }
    out
}

/// The blocker checks of `plan` that stop a cutover, one entry per finding: `(check id,
/// finding)`; `None` for a failed check without findings.
pub fn blocking(
    plan: &crate::core::plan::Plan,
) -> Vec<(&'static str, Option<&crate::core::finding::Finding>)> {
    let mut out = Vec::new();
    for c in plan.checks.iter().filter(|c| c.blocks()) {
        if c.findings.is_empty() {
            out.push((c.id, None));
        }
        out.extend(c.findings.iter().map(|f| (c.id, Some(f))));
    }
    out
}

/// What a PSK Secret must not be owned by during a window, or it would be
/// garbage-collected when vpnmig deletes a gateway: the gateway of either kind (by uid,
/// or by kind and name), its VPNPeers, and the children the operator's unwind deletes
/// (Deployment `<gateway>`, its ReplicaSets and Pods `<gateway>-…`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Owners {
    pub gateway: String,
    pub uids: Vec<String>,
    pub peers: Vec<String>,
}

impl Owners {
    /// The old gateway (cutover).
    pub fn of_old(gateway: &crate::core::model::IPsecGateway) -> Owners {
        Owners {
            gateway: gateway.metadata.name.clone().unwrap_or_default(),
            uids: gateway.metadata.uid.iter().cloned().collect(),
            peers: Vec::new(),
        }
    }

    /// The objects a rollback deletes: the VPNGateway and VPNPeers (`uids` of those
    /// that exist) and, should it still be unwinding, the old gateway.
    pub fn of_window(j: &Journal, uids: Vec<String>) -> Owners {
        let mut uids = uids;
        uids.extend(j.old_uid.iter().cloned());
        Owners {
            gateway: j.gateway.clone(),
            uids,
            peers: j.peer_names(),
        }
    }

    /// Whether one ownerReference ties the Secret to these objects.
    pub fn ties(&self, r: &Value) -> bool {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
        let (kind, name, uid) = (s("kind"), s("name"), s("uid"));
        (!uid.is_empty() && self.uids.iter().any(|u| u == uid))
            || (matches!(kind, "IPsecGateway" | "VPNGateway") && name == self.gateway)
            || (kind == "VPNPeer" && self.peers.iter().any(|p| p == name))
            || (matches!(kind, "Deployment" | "ReplicaSet" | "Pod")
                && (name == self.gateway || name.starts_with(&format!("{}-", self.gateway))))
    }

    /// The Secret's ownerReferences split into `(to remove, to keep)`.
    pub fn split(&self, secret: &Value) -> (Vec<Value>, Vec<Value>) {
        secret
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .partition(|r| self.ties(r))
    }
}

/// The ownerReferences of `secret` that tie it to the old gateway, and the list that
/// remains without them.
pub fn detach_owners(
    secret: &Value,
    gateway: &crate::core::model::IPsecGateway,
) -> (Vec<Value>, Vec<Value>) {
    Owners::of_old(gateway).split(secret)
}

/// The serviceCIDR and `(exposure, virtual IP)`s a VPNGateway target (journal or plan)
/// pins: what the old gateway had in its status, and what an IPsecGateway, which cannot
/// pin them, must still have after a rollback (runbook, "Rollback").
pub fn pinned_addresses(gw: Option<&Value>) -> (Option<String>, Vec<(String, String)>) {
    let cidr = gw
        .and_then(|g| g.pointer("/spec/serviceCIDR"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let vips = gw
        .and_then(|g| g.pointer("/spec/exposures"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            Some((
                e["name"].as_str()?.to_string(),
                e["virtualIP"].as_str()?.to_string(),
            ))
        })
        .collect();
    (cidr, vips)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A rolled-back window's journal of gateway `gateway` (the fixture, renamed).
    fn rolled_back(gateway: &str) -> Journal {
        let mut j =
            Journal::from_json(include_str!("../../fixtures/journals/rolled-back.json")).unwrap();
        j.gateway = gateway.into();
        j
    }

    fn map(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// T11: a gateway named with a dot has the journal name an archive of another gateway
    /// takes first; what a ConfigMap is comes from its label and keys, never its name.
    #[test]
    fn an_archive_is_known_by_its_label_and_key_never_its_name() {
        assert_eq!(archive_name("kells", 1), object_name("kells.window-1"));
        let names: Vec<String> = archive_names("kells", 1).take(3).collect();
        assert_eq!(
            names,
            [
                "vpnmig-kells.window-1",
                "vpnmig-kells.window-1-2",
                "vpnmig-kells.window-1-3"
            ]
        );
        assert_eq!(archive_names("kells", 1).count(), ARCHIVE_NAMES as usize);
        // The fixture's gateway (acme): a journal that validates.
        let kells = rolled_back("acme");
        let text = serde_json::to_string(&kells).unwrap();
        let labels = map(&[
            ("app.kubernetes.io/managed-by", "vpnmig"),
            (ARCHIVE_LABEL, "1"),
            ("vpnmig.bnerd.net/gateway", "acme"),
        ]);
        // acme's archive.
        let a = archived(Some(&labels), Some(&map(&[(ARCHIVE_KEY, &text)])));
        assert!(matches!(a, Archived::Of { .. }), "{a:?}");
        assert!(a.of("acme") && !a.of("acme.window-1"));
        assert_eq!(a.window(), Some(1));
        // Gateway acme.window-1's own journal, under the same name: no archive of anyone.
        let own = rolled_back("acme.window-1");
        let own_text = serde_json::to_string(&own).unwrap();
        let journal = archived(
            Some(&map(&[
                ("app.kubernetes.io/managed-by", "vpnmig"),
                ("vpnmig.bnerd.net/gateway", "acme.window-1"),
            ])),
            Some(&map(&[("journal.json", &own_text)])),
        );
        assert_eq!(journal, Archived::No);
        assert!(!journal.of("acme") && !journal.of("acme.window-1"));
        // A label alone on a journal does not make it an archive.
        assert_eq!(
            archived(Some(&labels), Some(&map(&[("journal.json", &own_text)]))),
            Archived::No
        );
        // Anything else under the name.
        assert_eq!(
            archived(None, Some(&map(&[("squatter", "x")]))),
            Archived::No
        );
        // Labelled, its journal unreadable: its gateway label says whose.
        let broken = archived(Some(&labels), Some(&map(&[(ARCHIVE_KEY, "{")])));
        assert!(broken.of("acme") && !broken.of("acme.window-1"));
        assert_eq!(broken.window(), Some(1));
        // A long gateway name has no gateway label: the journal inside says whose.
        let no_label = archived(
            Some(&map(&[(ARCHIVE_LABEL, "2")])),
            Some(&map(&[(ARCHIVE_KEY, &text)])),
        );
        assert!(matches!(no_label, Archived::Of { .. }) && no_label.of("acme"));
        assert_eq!(no_label.window(), Some(2));
    }

    /// T11: the number archived is the window's own; a name taken by something else moves
    /// the archive to the next name, never to the next number.
    #[test]
    fn a_taken_name_moves_the_archive_to_another_name_not_another_number() {
        let kells = rolled_back("kells");
        // Free.
        assert_eq!(slot(None, &kells, 1), Slot::Free);
        // Gateway kells.window-1's journal, or any other object: the next name, same number.
        assert_eq!(slot(Some(&Archived::No), &kells, 1), Slot::Taken);
        // Another gateway's archive (say a gateway named kells.window-1.window-… is not
        // ours either).
        let other = Archived::Of {
            window: 1,
            journal: Box::new(rolled_back("kells.window-1")),
        };
        assert_eq!(slot(Some(&other), &kells, 1), Slot::Taken);
        // Its own archive, from a run stopped after it: used again, under its number.
        let same = Archived::Of {
            window: 1,
            journal: Box::new(kells.clone()),
        };
        assert_eq!(slot(Some(&same), &kells, 1), Slot::Same { window: 1 });
        // Another window of kells archived under number 1 (its journal was lost and the
        // windows counted again): the next number, as the gateway's history says.
        let mut earlier = kells.clone();
        earlier.history_head = Some("sha256:other".into());
        let earlier = Archived::Of {
            window: 1,
            journal: Box::new(earlier),
        };
        assert_eq!(slot(Some(&earlier), &kells, 1), Slot::Numbered);
        // ...and under another number: only a name taken.
        assert_eq!(slot(Some(&earlier), &kells, 2), Slot::Taken);
        // An unreadable archive: taken, never overwritten.
        let broken = Archived::Unreadable {
            window: 1,
            gateway: Some("kells".into()),
            why: "x".into(),
        };
        assert_eq!(slot(Some(&broken), &kells, 1), Slot::Taken);
    }

    #[test]
    fn phases_order_and_serialize_in_kebab_case() {
        assert!(Phase::Started < Phase::Deleting && Phase::Deleting < Phase::Done);
        assert!(Phase::Deleting.past_delete() && !Phase::PskDetached.past_delete());
        assert!(!Phase::RolledBack.past_delete() && !Phase::RollingBack.past_delete());
        assert!(Phase::NewDeleted.rolling_back() && !Phase::RolledBack.rolling_back());
        assert_eq!(
            serde_json::to_value(Phase::PskDetached).unwrap(),
            json!("psk-detached")
        );
        for p in [Phase::Started, Phase::Ready, Phase::RolledBack] {
            assert_eq!(serde_json::to_value(p).unwrap(), json!(p.as_str()));
        }
    }

    #[test]
    fn recovery_names_the_commands() {
        let r = Phase::Applied.recovery("acme", "tenant-acme");
        assert!(r.contains("`vpnmig cutover acme -n tenant-acme` resumes from `applied`"));
        assert!(r.contains("`vpnmig rollback acme -n tenant-acme` restores"));
        assert!(
            Phase::OldApplied
                .recovery("a", "b")
                .contains("a rollback has not finished: `vpnmig rollback a -n b` resumes")
        );
    }

    #[test]
    fn an_edit_during_the_unwind_is_named_field_by_field() {
        let mut j = Journal {
            namespace: "t".into(),
            gateway: "acme".into(),
            phase: Phase::Deleting,
            old_uid: Some("u".into()),
            spec_fingerprint: "sha256:x".into(),
            floating_ip: "198.51.100.23".into(),
            psk_secret: "acme-psk".into(),
            old_manifest: json!({"kind": "IPsecGateway", "metadata": {"name": "acme"}, "spec": {"endpoint": {"floatingIP": "198.51.100.23"}}}),
            ..Journal::default()
        };
        j.spec_fingerprint = crate::core::fingerprint::fingerprint(&j.old_manifest["spec"]);
        let mut live = j.old_manifest.clone();
        live["metadata"]["uid"] = json!("u");
        // Unchanged: nothing to say.
        assert!(j.edits_while_deleting(&live).is_empty());
        live["spec"]["endpoint"]["network"] = json!("public");
        live["spec"]["endpoint"]["floatingIP"] = json!("198.51.100.99");
        let edits = j.edits_while_deleting(&live);
        assert_eq!(
            edits,
            [
                SpecEdit {
                    path: "spec.endpoint.floatingIP".into(),
                    seen: "198.51.100.99".into(),
                    saved: "198.51.100.23".into()
                },
                SpecEdit {
                    path: "spec.endpoint.network".into(),
                    seen: "public".into(),
                    saved: "<none>".into()
                }
            ]
        );
        // Another object of the name (another uid) is not the journal's.
        let mut other = live.clone();
        other["metadata"]["uid"] = json!("v");
        assert!(j.edits_while_deleting(&other).is_empty());
        assert_eq!(j.edited_while_deleting_text(), None);
        j.edited_while_deleting = edits;
        let text = j.edited_while_deleting_text().unwrap();
        assert!(text.starts_with("ipsecgateway/acme -n t was edited while it was being deleted: spec.endpoint.floatingIP 198.51.100.99 (saved: 198.51.100.23); spec.endpoint.network public (saved: <none>); the edit is neither in what was applied nor in the saved old manifest (data.old-ipsecgateway.yaml of configmap vpnmig-acme -n t)"), "{text}");
        // Recorded, it round-trips; absent, the key is not written.
        let json_text = serde_json::to_string(&j).unwrap();
        assert!(
            json_text.contains("\"editedWhileDeleting\":[{\"path\":\"spec.endpoint.floatingIP\"")
        );
        assert_eq!(serde_json::from_str::<Journal>(&json_text).unwrap(), j);
        j.edited_while_deleting.clear();
        assert!(
            !serde_json::to_string(&j)
                .unwrap()
                .contains("editedWhileDeleting")
        );
    }

    #[test]
    fn a_journal_that_does_not_hold_together_is_refused() {
        let gw = json!({"apiVersion": "vpn.bnerd.net/v1alpha1", "kind": "VPNGateway", "metadata": {"name": "acme"},
            "spec": {"endpoint": {"floatingIP": "198.51.100.23"}}});
        let peer = json!({"apiVersion": "vpn.bnerd.net/v1alpha1", "kind": "VPNPeer", "metadata": {"name": "acme"},
            "spec": {"gatewayRef": {"name": "acme"}, "ipsec": {"pskSecretRef": {"name": "acme-psk", "key": "psk"}}}});
        let mut j = Journal {
            namespace: "t".into(),
            gateway: "acme".into(),
            phase: Phase::Deleting,
            old_uid: Some("u".into()),
            spec_fingerprint: "sha256:x".into(),
            floating_ip: "198.51.100.23".into(),
            psk_secret: "acme-psk".into(),
            old_manifest: json!({"kind": "IPsecGateway", "metadata": {"name": "acme"}, "spec": {"endpoint": {"floatingIP": "198.51.100.23"}}}),
            targets: vec![gw, peer],
            ..Journal::default()
        };
        assert_eq!(j.validate(), Ok(()));
        let text = serde_json::to_string(&j).unwrap();
        assert_eq!(Journal::from_json(&text).unwrap(), j);
        // A journal of an earlier version (no data plane, no outage parts) still loads,
        // and one without them is written without their keys.
        for key in ["dataPlaneBaseline", "dataPlane", "outage", "rollbackOutage"] {
            assert!(!text.contains(&format!("\"{key}\"")), "{key} in {text}");
        }
        // With them, it round-trips.
        let mut with = j.clone();
        with.data_plane_baseline = Some(crate::core::dataplane::Baseline {
            at: "2026-11-29T02:00:01.000Z".into(),
            source: "IPsecGateway tenant-acme/acme".into(),
            tunnels: Vec::new(),
        });
        with.data_plane = Some(crate::core::dataplane::compare(
            with.data_plane_baseline.as_ref().unwrap(),
            &Default::default(),
        ));
        with.outage = Some(crate::core::dataplane::Outage {
            total_ms: Some(1020),
            tunnels: vec![crate::core::dataplane::TunnelOutage {
                peer: "acme".into(),
                outage_ms: Some(1020),
                came_up_by: crate::core::dataplane::CameUpBy::Initiation,
                initiation: None,
            }],
            ..Default::default()
        });
        let text = serde_json::to_string(&with).unwrap();
        assert!(text.contains(r#""cameUpBy":"initiation""#), "{text}");
        assert_eq!(Journal::from_json(&text).unwrap(), with);
        j.targets[0]["spec"]["endpoint"]["floatingIP"] = json!("");
        assert_eq!(
            j.validate(),
            Err("targets[0] (the VPNGateway) does not pin floatingIP 198.51.100.23".into())
        );
        j.targets[0]["spec"]["endpoint"]["floatingIP"] = json!("198.51.100.23");
        j.targets[1]["spec"]["gatewayRef"]["name"] = json!("other");
        assert_eq!(
            j.validate(),
            Err("targets[1] is not a VPNPeer of gateway acme".into())
        );
        j.targets.truncate(1);
        assert_eq!(j.validate(), Err("targets has no VPNPeer".into()));
        j.old_manifest["spec"]["endpoint"]["floatingIP"] = json!("198.51.100.99");
        assert_eq!(
            j.validate(),
            Err("oldManifest does not pin floatingIP 198.51.100.23".into())
        );
    }

    /// Issue 9 item 4: what a re-created gateway lost is judged on addresses, not on how
    /// the operator spells them.
    #[test]
    fn lost_addresses_compare_parsed() {
        let gw = json!({"apiVersion": "vpn.bnerd.net/v1alpha1", "kind": "VPNGateway", "metadata": {"name": "acme"},
            "spec": {"endpoint": {"floatingIP": "2001:DB8:5:0::23"}, "serviceCIDR": "FD00:250:9:0::/64",
                     "exposures": [{"name": "crm", "virtualIP": "FD00:250:9::A"}, {"name": "ldap", "virtualIP": "10.250.3.11"}]}});
        let j = Journal {
            namespace: "t".into(),
            gateway: "acme".into(),
            phase: Phase::OldApplied,
            spec_fingerprint: "sha256:x".into(),
            floating_ip: "2001:db8:5::23".into(),
            psk_secret: "acme-psk".into(),
            old_manifest: json!({"kind": "IPsecGateway", "metadata": {"name": "acme"}, "spec": {"endpoint": {"floatingIP": "2001:DB8:5::23"}}}),
            targets: vec![gw],
            ..Journal::default()
        };
        let status = json!({"serviceCIDR": "fd00:250:9::/64", "exposures": [
            {"name": "crm", "virtualIP": "fd00:250:9::a"}, {"name": "ldap", "virtualIP": "10.250.3.12"}]});
        assert_eq!(
            lost_addresses(&j, &status),
            ["exposure ldap virtual IP 10.250.3.11 → 10.250.3.12"]
        );
        // The floating IP spelled otherwise in the old manifest is the same pin.
        let mut ok = j.clone();
        ok.targets.push(json!({"kind": "VPNPeer", "spec": {"gatewayRef": {"name": "acme"}, "ipsec": {"pskSecretRef": {"name": "acme-psk"}}}}));
        assert_eq!(ok.validate(), Ok(()));
    }

    #[test]
    fn other_versions_are_refused() {
        let e = Journal::from_json(r#"{"apiVersion":"vpnmig.bnerd.net/journal/v0"}"#).unwrap_err();
        assert_eq!(
            e,
            "apiVersion vpnmig.bnerd.net/journal/v0, this vpnmig reads vpnmig.bnerd.net/journal/v1"
        );
        assert!(Journal::from_json("{").unwrap_err().starts_with("not JSON"));
    }

    #[test]
    fn detaches_only_references_to_the_gateway() {
        let gw: crate::core::model::IPsecGateway = serde_json::from_value(json!({
            "apiVersion": "ipsec.bnerd.net/v1alpha1", "kind": "IPsecGateway",
            "metadata": {"name": "acme", "namespace": "t", "uid": "u-1"},
            "spec": {"endpoint": {}, "auth": {"pskSecretRef": {"name": "s", "key": "psk"}},
                     "ike": {"version": 2, "proposals": []}, "tunnels": []}
        }))
        .unwrap();
        let secret = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "ipsec.bnerd.net/v1alpha1", "kind": "IPsecGateway", "name": "acme", "uid": "u-1"},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "keep", "uid": "u-2"},
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "acme", "uid": "u-3"}
        ]}});
        let (removed, kept) = detach_owners(&secret, &gw);
        assert_eq!(
            removed
                .iter()
                .map(|r| r["uid"].as_str().unwrap())
                .collect::<Vec<_>>(),
            ["u-1", "u-3"]
        );
        assert_eq!(
            kept,
            [json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "keep", "uid": "u-2"})]
        );
    }

    #[test]
    fn dropped_owner_references_are_left_out_of_the_re_created_manifest_only() {
        let root = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "tenant-root", "uid": "u-root"});
        let keep =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "keep", "uid": "u-keep"});
        let mut j = Journal::from_bundle(
            &json!({"source": {"name": "acme", "namespace": "t"}, "targets": {"gateway": {}, "peers": []}}),
            json!({"kind": "IPsecGateway", "metadata": {"name": "acme", "ownerReferences": [root, keep]}}),
            "2026-01-01T00:00:00Z",
            "me",
        );
        let names = |j: &Journal| {
            j.old_owners()
                .iter()
                .map(|o| o.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&j), ["tenant-root", "keep"]);
        assert_eq!(j.manifest_to_create(), j.old_manifest);
        j.dropped_owner_references.push(root.clone());
        assert_eq!(names(&j), ["keep"]);
        assert_eq!(
            j.manifest_to_create()["metadata"]["ownerReferences"],
            json!([keep])
        );
        assert_eq!(
            j.old_manifest["metadata"]["ownerReferences"][0], root,
            "the record stays verbatim"
        );
        j.dropped_owner_references.push(keep);
        assert!(
            j.manifest_to_create()["metadata"]
                .get("ownerReferences")
                .is_none()
        );
        let text = serde_json::to_value(&j).unwrap();
        assert_eq!(text["droppedOwnerReferences"][0]["name"], "tenant-root");
    }

    /// A journal of five entries, chained as `advance` writes them.
    fn chained() -> Journal {
        let mut j = Journal::from_bundle(
            &json!({"source": {"name": "acme", "namespace": "t"}, "targets": {"gateway": {}, "peers": []}}),
            json!({"kind": "IPsecGateway", "metadata": {"name": "acme"}}),
            "2026-01-01T00:00:00Z",
            "me",
        );
        for (i, p) in [
            Phase::RollingBack,
            Phase::NewDeleted,
            Phase::OldApplied,
            Phase::RolledBack,
        ]
        .into_iter()
        .enumerate()
        {
            j.advance(
                p,
                &format!("2026-01-01T00:0{}:00Z", i + 1),
                "alice@box pid 7",
            );
        }
        j
    }

    /// A finished window's gateway against what it left (a21e 6, 11): one row per live
    /// state, for each phase; only as-left (and a window under way) says nothing.
    #[test]
    fn a_finished_window_says_when_the_gateway_it_left_is_gone() {
        let live = json!({"metadata": {"name": "acme"}});
        let ending =
            json!({"metadata": {"name": "acme", "deletionTimestamp": "2026-01-01T00:09:00Z"}});
        let mut rolled_back = chained();
        rolled_back.old_manifest = json!({"kind": "IPsecGateway", "metadata": {"name": "acme"}, "spec": {"endpoint": {"floatingIP": "198.51.100.23"}}});
        let mut done = rolled_back.clone();
        done.phase = Phase::Done;
        done.floating_ip = "198.51.100.23".into();
        let mut under_way = rolled_back.clone();
        under_way.phase = Phase::OldApplied;
        // (journal, old, new, state, words in the text)
        type Case<'a> = (
            &'a Journal,
            Option<&'a Value>,
            Option<&'a Value>,
            Left,
            &'a [&'a str],
        );
        let rows: [Case; 9] = [
            (&rolled_back, Some(&live), None, Left::AsLeft, &[]),
            (
                &rolled_back,
                None,
                None,
                Left::Gone,
                &[
                    "ended rolled-back at 2026-01-01T00:04:00Z leaving ipsecgateway/acme -n t on floating IP 198.51.100.23",
                    "neither an IPsecGateway nor a VPNGateway acme exists now",
                    "journal ConfigMap t/vpnmig-acme",
                ],
            ),
            (
                &rolled_back,
                Some(&ending),
                None,
                Left::Terminating,
                &["being deleted now"],
            ),
            (
                &rolled_back,
                None,
                Some(&live),
                Left::OtherKind,
                &["only vpngateway/acme -n t exists, which the window did not leave"],
            ),
            (&done, None, Some(&live), Left::AsLeft, &[]),
            (
                &done,
                Some(&live),
                None,
                Left::OtherKind,
                &[
                    "ended done",
                    "leaving vpngateway/acme -n t on floating IP 198.51.100.23",
                    "only ipsecgateway/acme -n t exists",
                ],
            ),
            (&done, None, None, Left::Gone, &["the gateway is gone"]),
            (
                &done,
                None,
                Some(&ending),
                Left::Terminating,
                &["being deleted now"],
            ),
            (&under_way, None, None, Left::UnderWay, &[]),
        ];
        for (i, (j, old, new, want, words)) in rows.into_iter().enumerate() {
            let got = j.left(old, new);
            assert_eq!(got, want, "row {i}");
            let text = j.left_text(got);
            assert_eq!(text.is_some(), !words.is_empty(), "row {i}: {text:?}");
            for w in words {
                assert!(
                    text.as_deref().unwrap_or_default().contains(w),
                    "row {i}: {w:?} not in {text:?}"
                );
            }
        }
    }

    /// Issue 12 item 4: each history entry holds the digest of the one before; an entry
    /// changed afterwards is named by index and phase.
    #[test]
    fn the_history_is_a_hash_chain_and_an_edit_is_named() {
        let j = chained();
        assert_eq!(j.history[0].prev, None);
        assert_eq!(j.history[1].prev, Some(j.history[0].digest()));
        assert_eq!(j.chain().status, ChainStatus::Intact);
        assert_eq!(j.chain().text, "intact (5 entries)");
        // It survives the trip through the ConfigMap.
        let back: Journal = serde_json::from_value(serde_json::to_value(&j).unwrap()).unwrap();
        assert_eq!(back.chain().status, ChainStatus::Intact);

        let broken_at = |edit: &dyn Fn(&mut Journal)| {
            let mut t = j.clone();
            edit(&mut t);
            let c = t.chain();
            assert_eq!(c.status, ChainStatus::Broken, "{}", c.text);
            (c.entry.unwrap(), c.phase.unwrap().as_str())
        };
        type Edit<'a> = &'a dyn Fn(&mut Journal);
        let cases: [(&str, Edit, (usize, &str)); 8] = [
            (
                "who",
                &|t| t.history[2].by = "mallory".into(),
                (2, "new-deleted"),
            ),
            (
                "when",
                &|t| t.history[0].at = "2025-12-31T23:00:00Z".into(),
                (0, "done"),
            ),
            (
                "the last entry",
                &|t| t.history[4].phase = Phase::Done,
                (4, "done"),
            ),
            (
                "an entry removed",
                &|t| {
                    t.history.remove(2);
                },
                (1, "rolling-back"),
            ),
            (
                "a link removed",
                &|t| t.history[4].prev = None,
                (4, "rolled-back"),
            ),
            // Attack findings: the head taken out, then the last entry edited; the last
            // entry popped and its link made the head; the phase edited alone.
            (
                "the head removed and the last entry edited",
                &|t| {
                    t.history_head = None;
                    t.history[4].by = "mallory".into();
                },
                (4, "rolled-back"),
            ),
            (
                "the last entry popped, its link made the head",
                &|t| {
                    let last = t.history.pop().unwrap();
                    t.history_head = last.prev;
                },
                (3, "old-applied"),
            ),
            (
                "the phase edited",
                &|t| t.phase = Phase::Done,
                (4, "rolled-back"),
            ),
        ];
        for (what, edit, want) in cases {
            assert_eq!(broken_at(edit), want, "{what}");
        }
        assert!(
            j.clone().chain().intact()
                && broken_at(&|t| t.history[3].by = "x".into()) == (3, "old-applied")
        );
    }

    #[test]
    fn a_journal_of_an_earlier_version_is_not_chained() {
        let mut j = chained();
        for e in &mut j.history {
            e.prev = None;
        }
        j.history_head = None;
        let c = j.chain();
        assert_eq!(c.status, ChainStatus::NotChained);
        assert_eq!(c.text, "not chained (journal from an earlier version)");
        // Resumed by this version: chained from there on.
        j.advance(Phase::Done, "2026-01-01T01:00:00Z", "bob@host pid 9");
        let c = j.chain();
        assert_eq!((c.status, c.entry), (ChainStatus::PartlyChained, Some(5)));
        assert!(
            c.text
                .starts_with("intact from entry 5 (phase done); the 4 entries before"),
            "{}",
            c.text
        );
        assert!(c.intact());
    }

    #[test]
    fn an_owner_is_missing_when_absent_or_re_created_with_another_uid() {
        let r = OwnerRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "tenant-root".into(),
            uid: "u-1".into(),
            raw: json!({}),
        };
        assert_eq!(owner_missing(&r, &OwnerSeen::Uid("u-1".into())), None);
        assert_eq!(
            owner_missing(&r, &OwnerSeen::Absent).as_deref(),
            Some("ConfigMap tenant-root (uid u-1): no ConfigMap tenant-root exists")
        );
        assert_eq!(
            owner_missing(&r, &OwnerSeen::Uid("u-2".into())).as_deref(),
            Some(
                "ConfigMap tenant-root (uid u-1): the ConfigMap tenant-root that exists now is another object (uid u-2)"
            )
        );
    }
}
