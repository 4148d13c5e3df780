//! The change record of a window (`vpnmig report`; issue 12 item 4), pure: everything a
//! change ticket needs, built from the window's journal and the cluster's identity. The
//! renderers (Markdown, HTML) are in `src/output/record.rs`; JSON is this struct serialized
//! (docs/report.md).
//!
//! Nothing here reads a secret: the PSK appears as the salted fingerprint the journal
//! holds, never as a value.
//!
//! Layer 4 (journal, records and views): imports only from layers 0 to 4; see docs/architecture.md.

use serde::Serialize;
use serde_json::Value;

use crate::core::dataplane::{Comparison, Outage};
use crate::core::journal::{ApprovedPlan, Chain, CheckVerdict, Journal, Phase};

/// Schema identifier of the record document.
pub const RECORD_API_VERSION: &str = "vpnmig.bnerd.net/record/v1";

/// Which cluster the window ran in, so that a record cannot be mixed up between
/// clusters: the API server's URL and the uid of namespace `kube-system` (which lives
/// as long as the cluster).
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterIdentity {
    pub server: String,
    /// `None` when it could not be read (`why` says why).
    pub kube_system_uid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// How the window stands.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The cutover is complete (phase `done`).
    Done,
    /// The old IPsecGateway is back (phase `rolled-back`).
    RolledBack,
    /// The last run stopped on a failure (the journal's `lastError`), or the data plane
    /// differs from the old gateway's.
    Failed,
    /// Under way, or interrupted without a recorded failure.
    InProgress,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Done => "done",
            Outcome::RolledBack => "rolled back",
            Outcome::Failed => "failed",
            Outcome::InProgress => "in progress",
        }
    }
}

/// One pinned value, as the journal's reference holds it.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Pinned {
    /// `VPNGateway tenant-acme/acme`, `Secret tenant-acme/acme-psk`.
    pub object: String,
    /// The field path (`spec.exposures[crm].virtualIP`).
    pub field: String,
    /// The value: a string as is, anything else as compact JSON; `(none)` when absent.
    pub value: String,
}

/// One phase reached.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// Index in the journal's history (what the hash-chain verdict names).
    pub entry: usize,
    pub phase: Phase,
    pub at: String,
    pub by: String,
    /// Milliseconds since the entry before (`None` for the first, or when a timestamp
    /// does not parse).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_ms: Option<u64>,
}

/// The data plane the old gateway had before the delete, in short (the full facts are
/// in the journal's `dataPlaneBaseline`).
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct BaselineSummary {
    pub at: String,
    pub source: String,
    pub tunnels: usize,
}

/// What the journal's hash chain covers and what it does not: every format of the record
/// says it (issue 21 item 7), because "intact" alone reads as more than it is.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ChainScope {
    /// In one sentence.
    pub summary: &'static str,
    pub covers: Vec<&'static str>,
    pub does_not_cover: Vec<&'static str>,
}

/// The scope of the hash chain (docs/report.md, "The hash chain").
pub fn chain_scope() -> ChainScope {
    ChainScope {
        summary: "the hash chain proves the history is internally consistent, not who wrote it: it is an unkeyed SHA-256 chain, not a signature",
        covers: vec![
            "each history entry (phase, time, who) and the order of the entries, up to historyHead",
            "the journal's phase against its last entry",
        ],
        does_not_cover: vec![
            "entries appended, or rewritten and re-chained, by anyone with write access to the journal ConfigMap: such a forged history reads intact",
            "entries removed from the end with historyHead and phase set back: the chain has no anchor outside the ConfigMap (the copy of the record kept with the ticket is that anchor)",
            "the other fields of the journal: the targets and pinned values, fingerprints, checks, the data-plane baseline and comparison, the outage, lastError and the recovery",
            "the live state: `vpnmig verify` judges the gateway against the targets, whatever the journal says of itself",
        ],
    }
}

/// Another gateway (either kind, any name, any namespace) that claims the floating IP of
/// the gateway a finished window left, as read when the record was rendered.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct FipClaimant {
    /// `IPsecGateway` or `VPNGateway`.
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// The command that deletes it: `kubectl delete KIND NAME -n NS`.
    pub delete: String,
}

impl FipClaimant {
    /// `kind/name -n ns (`kubectl delete kind name -n ns`)`.
    pub fn shown(&self) -> String {
        format!(
            "{}/{} -n {} (`{}`)",
            self.kind.to_lowercase(),
            self.name,
            self.namespace,
            self.delete
        )
    }
}

/// What the record says of the cluster now, beside the journal (a21o D06, D16): read when
/// the record was rendered, neither part of the journal nor covered by its hash chain.
/// Only where it contradicts the window's outcome or could not be read; absent when no
/// other gateway claims the floating IP, and for a window under way or archived.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ReadAtReport {
    /// What this is, in one sentence.
    pub note: &'static str,
    /// The gateway the finished window left (`vpngateway/NAME -n NS` after done,
    /// `ipsecgateway/NAME -n NS` after rolled back).
    pub gateway: String,
    /// Its floating IP, as read.
    #[serde(rename = "floatingIP")]
    pub floating_ip: String,
    /// The other gateways that claim it: the window's outcome is not what the cluster shows
    /// while one does (the operator attaches a floating IP to one gateway only).
    pub fip_claimants: Vec<FipClaimant>,
    /// Set: whether another gateway claims it could not be read (the gateways of every
    /// namespace could not be listed, or the API did not answer); never read as "none".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fip_claimants_unread: Option<String>,
    /// The new objects a done window made live that are gone now (`vpnpeer/NAME -n NS`,
    /// `vpngateway/NAME -n NS`; a21p E21, E24: pruned by the first sync of a restored
    /// GitOps owner): the cutover is not complete while one is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gone: Vec<String>,
    /// The window's PSK Secret when it is not as the window fingerprinted it
    /// (`secret/NAME -n NS (the PSK) is gone`, re-created, or another key; never the key):
    /// the client's tunnel cannot come up with the key the window kept while it is (a21t
    /// T06b: the record said "the cutover is complete" over a deleted Secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psk: Option<Psk>,
}

/// The PSK Secret as read at report time ([`ReadAtReport::psk`]).
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Psk {
    /// `secret/NAME -n NS (the PSK) is gone`, or how it differs.
    pub state: String,
    /// What to do, with the command.
    pub fix: String,
}

impl ReadAtReport {
    /// Whether what was read contradicts the window's outcome: a new object gone, the PSK
    /// Secret not as fingerprinted, or another gateway claiming the floating IP.
    pub fn contradicts(&self) -> bool {
        !self.gone.is_empty() || self.psk.is_some() || !self.fip_claimants.is_empty()
    }
}

/// [`ReadAtReport::note`].
pub const READ_AT_REPORT: &str = "read from the cluster when this record was rendered, not from the journal: the hash chain does not cover it, and it may differ the next time the record is rendered";

impl ReadAtReport {
    /// The sentence the outcome and the hash-chain section carry; `None`: nothing to say.
    pub fn text(&self) -> Option<String> {
        if !self.gone.is_empty() {
            return Some(format!(
                "{} {} gone, which the window made live: the client's tunnel through {} is down",
                self.gone.join(", "),
                if self.gone.len() == 1 { "is" } else { "are" },
                if self.gone.len() == 1 { "it" } else { "them" },
            ));
        }
        if let Some(psk) = &self.psk {
            return Some(format!(
                "{}: the client's tunnel cannot authenticate with the key the window kept",
                psk.state
            ));
        }
        if let Some(why) = &self.fip_claimants_unread {
            return Some(format!(
                "whether another gateway claims the floating IP {} of {} could not be read ({why}): not known to be the only one; `vpnmig verify` with a context that can list the gateways of every namespace checks it",
                self.floating_ip, self.gateway
            ));
        }
        if self.fip_claimants.is_empty() {
            return None;
        }
        Some(format!(
            "another gateway claims the floating IP {} of {}: {}; the operator attaches a floating IP to one gateway only, and which one the client's firewall reaches is not certain: delete it once nothing re-creates it",
            self.floating_ip,
            self.gateway,
            self.fip_claimants
                .iter()
                .map(FipClaimant::shown)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

/// An earlier window of the gateway, archived when a new cutover replaced its journal.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct EarlierWindowRecord {
    pub window: u32,
    /// `ConfigMap NS/vpnmig-NAME.window-N`.
    pub journal: String,
    pub phase: Phase,
    pub started: String,
    pub ended: String,
    /// The command that renders its record.
    pub report: String,
}

/// What went wrong and what was done about it.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Recovery {
    /// The failure that made `cutover --rollback-on-failure` roll back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cutover_failure: Option<String>,
    /// The old gateway's spec edited while it was being deleted: neither applied nor
    /// saved (a21r R06b).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_while_deleting: Option<String>,
    /// The failure the last run stopped on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The rollback's phases, as taken.
    pub steps: Vec<Step>,
    /// The PSK Secret's ownerReferences vpnmig removed (`Kind name`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub psk_owner_references_removed: Vec<String>,
    /// ownerReferences left out of the re-created IPsecGateway (`Kind name`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped_owner_references: Vec<String>,
    /// What to run from here.
    pub next: String,
}

/// The change record (docs/report.md).
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// Always [`RECORD_API_VERSION`].
    pub api_version: &'static str,
    pub namespace: String,
    pub gateway: String,
    /// `ConfigMap NS/vpnmig-NAME`: where the record was read from.
    pub journal: String,
    pub cluster: ClusterIdentity,
    pub outcome: Outcome,
    /// The journal's phase.
    pub phase: Phase,
    /// Who ran the window and from where: each distinct history `by` (the lock holder,
    /// `user@host pid N`), in order of first appearance.
    pub run_by: Vec<String>,
    /// uid of the IPsecGateway the cutover started from.
    pub old_uid: Option<String>,
    /// The plan's `source.specFingerprint` of that IPsecGateway.
    pub spec_fingerprint: String,
    /// `None`: the cutover ran without `--plan` (no reviewed plan to match).
    pub approved_plan: Option<ApprovedPlan>,
    pub pinned: Vec<Pinned>,
    /// Empty: not recorded (a journal of an earlier version or one rebuilt from a bundle).
    pub checks: Vec<CheckVerdict>,
    pub timeline: Vec<Step>,
    /// Whether the history's hash chain holds.
    pub chain: Chain,
    /// What the chain covers and what it does not.
    pub chain_scope: ChainScope,
    /// This window's number among the gateway's windows (1: the first).
    pub window: u32,
    /// `true`: the record of an archived earlier window (`report --window N`).
    pub archived: bool,
    /// The gateway's earlier windows, archived in the cluster, oldest first.
    pub earlier_windows: Vec<EarlierWindowRecord>,
    pub data_plane_baseline: Option<BaselineSummary>,
    pub data_plane: Option<Comparison>,
    pub outage: Option<Outage>,
    /// The journal's single outage figure (the delete to the first tunnel up), kept for
    /// journals of versions that did not record `outage`.
    pub outage_ms: Option<u64>,
    pub rollback_outage: Option<Outage>,
    pub recovery: Recovery,
    /// The cluster now where it contradicts the outcome (another gateway claims the
    /// floating IP) or could not be read; not covered by the hash chain (a21o D06, D16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_at_report: Option<ReadAtReport>,
}

impl Record {
    /// Add what was read from the cluster now (`None`: nothing to say). Another gateway
    /// claiming the floating IP comes first in what to run next: the journal's next step
    /// ("the cutover is complete: … rollback reverses it") is not so while it does.
    pub fn read_now(&mut self, now: Option<ReadAtReport>) {
        let Some(now) = now else { return };
        let (name, ns) = (&self.gateway, &self.namespace);
        let again = if self.phase == Phase::RolledBack {
            "rollback"
        } else {
            "cutover"
        };
        if !now.gone.is_empty() {
            self.recovery.next = format!(
                "read at report time, {} {} gone (deleted since the window ended, e.g. pruned by the first sync of a GitOps owner whose source does not define {}): put {} back in the repository as the window made {} live (the plan's rewrite defines {}) and apply {}, or `vpnmig rollback {name} -n {ns} --yes` goes back to the IPsecGateway from the journal; then `vpnmig verify {name} -n {ns}`",
                now.gone.join(", "),
                if now.gone.len() == 1 { "is" } else { "are" },
                if now.gone.len() == 1 { "it" } else { "them" },
                if now.gone.len() == 1 { "it" } else { "them" },
                if now.gone.len() == 1 { "it" } else { "them" },
                if now.gone.len() == 1 { "it" } else { "them" },
                if now.gone.len() == 1 { "it" } else { "them" },
            );
        } else if let Some(psk) = &now.psk {
            self.recovery.next = format!("read at report time, {}: {}", psk.state, psk.fix);
        } else if !now.fip_claimants.is_empty() {
            self.recovery.next = format!(
                "read at report time, another gateway claims the floating IP {}: delete {} once nothing re-creates it (`vpnmig {again} {name} -n {ns}` names what may have created it and stops on it until then); then `vpnmig verify {name} -n {ns}`",
                now.floating_ip,
                now.fip_claimants
                    .iter()
                    .map(|c| format!(
                        "{}/{} -n {} (`{}`)",
                        c.kind.to_lowercase(),
                        c.name,
                        c.namespace,
                        c.delete
                    ))
                    .collect::<Vec<_>>()
                    .join(" and ")
            );
        } else if now.fip_claimants_unread.is_some() {
            self.recovery.next = format!(
                "whether another gateway claims the floating IP {} could not be read at report time: `vpnmig verify {name} -n {ns}` with a context that can list the gateways of every namespace checks it first; {}",
                now.floating_ip, self.recovery.next
            );
        }
        self.read_at_report = Some(now);
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::Null => "(none)".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn ref_name(r: &Value) -> String {
    format!(
        "{} {}",
        r["kind"].as_str().unwrap_or("?"),
        r["name"].as_str().unwrap_or("?")
    )
}

/// Milliseconds from `a` to `b` (RFC 3339), if both parse and `b` is not earlier.
fn between(a: &str, b: &str) -> Option<u64> {
    let (a, b) = (
        a.parse::<jiff::Timestamp>().ok()?,
        b.parse::<jiff::Timestamp>().ok()?,
    );
    u64::try_from(b.duration_since(a).as_millis()).ok()
}

/// The outcome of the window the journal records.
pub fn outcome(j: &Journal) -> Outcome {
    match j.phase {
        Phase::Done => Outcome::Done,
        Phase::RolledBack => Outcome::RolledBack,
        _ if j.last_error.is_some() || j.data_plane.as_ref().is_some_and(|c| c.failed()) => {
            Outcome::Failed
        }
        _ => Outcome::InProgress,
    }
}

/// Every pinned value of the journal's reference: the floating IP, each target's pinned
/// fields (`core::reference`), and the PSK Secret's fingerprint.
pub fn pinned(j: &Journal) -> Vec<Pinned> {
    let mut out = Vec::new();
    for t in &j.targets {
        let object = format!(
            "{} {}/{}",
            t["kind"].as_str().unwrap_or("?"),
            j.namespace,
            t.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("?")
        );
        for (field, value) in crate::core::reference::pinned_values(t) {
            out.push(Pinned {
                object: object.clone(),
                field,
                value: show(&value),
            });
        }
    }
    // The algorithm is the fingerprint's own prefix (`core::psk::fingerprint`), said in
    // words (n23: "salted SHA-256" beside an `hmac-sha256:` value).
    let value = j.psk_fingerprint.clone().unwrap_or_else(|| "(none)".into());
    let how = if value.starts_with("hmac-sha256:") {
        "HMAC-SHA256 keyed with the Secret's uid"
    } else if value.starts_with("sha256:") {
        "SHA-256 over the Secret's namespace, name and key name and the key"
    } else {
        "none recorded"
    };
    out.push(Pinned {
        object: format!("Secret {}/{}", j.namespace, j.psk_secret),
        field: format!("fingerprint ({how}; the key is never recorded)"),
        value,
    });
    out
}

/// The record of an archived window: `j` as read from ConfigMap `config_map`, window
/// number `n` (`vpnmig report NAME --window N`).
pub fn build_archived(j: &Journal, cluster: ClusterIdentity, config_map: &str, n: u32) -> Record {
    let mut r = build(j, cluster);
    r.journal = format!("ConfigMap {}/{config_map} (archived)", j.namespace);
    r.window = n;
    r.archived = true;
    r
}

/// Build the record of `j`, read from the cluster `cluster`.
pub fn build(j: &Journal, cluster: ClusterIdentity) -> Record {
    let timeline: Vec<Step> = j
        .history
        .iter()
        .enumerate()
        .map(|(i, e)| Step {
            entry: i,
            phase: e.phase,
            at: e.at.clone(),
            by: e.by.clone(),
            after_ms: i
                .checked_sub(1)
                .and_then(|p| between(&j.history[p].at, &e.at)),
        })
        .collect();
    let mut run_by: Vec<String> = Vec::new();
    for e in &j.history {
        if !run_by.contains(&e.by) {
            run_by.push(e.by.clone());
        }
    }
    let recovery = Recovery {
        cutover_failure: j.cutover_failure.clone(),
        edited_while_deleting: j.edited_while_deleting_text(),
        last_error: j.last_error.clone(),
        steps: timeline
            .iter()
            .filter(|s| s.phase >= Phase::RollingBack)
            .cloned()
            .collect(),
        psk_owner_references_removed: j
            .psk_detached
            .iter()
            .flat_map(|d| d.removed_owner_references.iter().map(ref_name))
            .collect(),
        dropped_owner_references: j.dropped_owner_references.iter().map(ref_name).collect(),
        next: j.recovery(),
    };
    Record {
        api_version: RECORD_API_VERSION,
        namespace: j.namespace.clone(),
        gateway: j.gateway.clone(),
        journal: format!(
            "ConfigMap {}/{}",
            j.namespace,
            crate::core::journal::object_name(&j.gateway)
        ),
        cluster,
        outcome: outcome(j),
        phase: j.phase,
        run_by,
        old_uid: j.old_uid.clone(),
        spec_fingerprint: j.spec_fingerprint.clone(),
        approved_plan: j.approved_plan.clone(),
        pinned: pinned(j),
        checks: j.checks.clone(),
        timeline,
        chain: j.chain(),
        chain_scope: chain_scope(),
        window: j.window_number(),
        archived: false,
        earlier_windows: j
            .earlier_windows
            .iter()
            .map(|e| EarlierWindowRecord {
                window: e.window,
                journal: format!("ConfigMap {}/{}", j.namespace, e.config_map),
                phase: e.phase,
                started: e.started.clone(),
                ended: e.ended.clone(),
                report: format!(
                    "vpnmig report {} -n {} --window {}",
                    j.gateway, j.namespace, e.window
                ),
            })
            .collect(),
        data_plane_baseline: j.data_plane_baseline.as_ref().map(|b| BaselineSummary {
            at: b.at.clone(),
            source: b.source.clone(),
            tunnels: b.peers(),
        }),
        data_plane: j.data_plane.clone(),
        outage: j.outage.clone(),
        outage_ms: j.outage_ms,
        rollback_outage: j.rollback_outage.clone(),
        recovery,
        read_at_report: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn journal() -> Journal {
        let gw = json!({"apiVersion": "vpn.bnerd.net/v1alpha1", "kind": "VPNGateway", "metadata": {"name": "acme"},
            "spec": {"endpoint": {"floatingIP": "198.51.100.23"}, "serviceCIDR": "10.250.3.0/24",
                     "exposures": [{"name": "crm", "virtualIP": "10.250.3.10"}],
                     "ipsec": {"ike": {"version": 2, "proposals": ["aes256-sha256-modp2048"]}}}});
        let peer = json!({"apiVersion": "vpn.bnerd.net/v1alpha1", "kind": "VPNPeer", "metadata": {"name": "acme"},
            "spec": {"gatewayRef": {"name": "acme"}, "ipsec": {"peer": {"address": "203.0.113.10", "id": "fw.acme.example"},
                     "remoteSubnets": ["10.20.0.0/16"], "pskSecretRef": {"name": "acme-psk", "key": "psk"},
                     "esp": {"proposals": ["aes256gcm16-modp2048"]}}}});
        let mut j = Journal::from_bundle(
            &json!({"source": {"name": "acme", "namespace": "tenant-acme", "uid": "u-1"},
                    "targets": {"gateway": gw, "peers": [peer]}}),
            json!({"kind": "IPsecGateway", "metadata": {"name": "acme"}, "spec": {"endpoint": {"floatingIP": "198.51.100.23"}}}),
            "2026-01-01T00:00:00Z",
            "alice@box pid 7",
        );
        j.phase = Phase::Started;
        j
    }

    #[test]
    fn the_outcome_follows_the_phase_and_the_last_error() {
        let mut j = journal();
        assert_eq!(outcome(&j), Outcome::InProgress);
        j.last_error = Some("timed out".into());
        assert_eq!(outcome(&j), Outcome::Failed);
        j.advance(Phase::RolledBack, "2026-01-01T00:01:30Z", "bob@host pid 9");
        assert_eq!(outcome(&j), Outcome::RolledBack);
        let r = build(&j, ClusterIdentity::default());
        assert_eq!(
            r.run_by,
            [
                "alice@box pid 7 (rebuilt from a plan bundle)",
                "bob@host pid 9"
            ]
        );
        assert_eq!(r.timeline[1].after_ms, Some(90_000));
        assert_eq!(r.recovery.steps.len(), 1);
    }

    #[test]
    fn pinned_values_come_from_the_reference_and_the_psk_only_as_a_fingerprint() {
        let mut j = journal();
        j.psk_fingerprint = Some("sha256:abc".into());
        let rows: Vec<(String, String, String)> = pinned(&j)
            .into_iter()
            .map(|p| (p.object, p.field, p.value))
            .collect();
        let has = |o: &str, f: &str, v: &str| {
            assert!(
                rows.contains(&(o.into(), f.into(), v.into())),
                "{o} {f} {v} in {rows:#?}"
            )
        };
        has(
            "VPNGateway tenant-acme/acme",
            "spec.endpoint.floatingIP",
            "198.51.100.23",
        );
        has(
            "VPNGateway tenant-acme/acme",
            "spec.exposures[crm].virtualIP",
            "10.250.3.10",
        );
        has(
            "VPNPeer tenant-acme/acme",
            "spec.ipsec.remoteSubnets",
            r#"["10.20.0.0/16"]"#,
        );
        has("VPNPeer tenant-acme/acme", "spec.authorization", "(none)");
        assert_eq!(rows.last().unwrap().2, "sha256:abc");
    }
}
