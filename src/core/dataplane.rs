//! The data plane before and after a window (issue 12 item 1), pure.
//!
//! A [`Baseline`] is what `swanctl --list-sas` in a gateway's pod says about every tunnel
//! that is up: per IKE SA the local and remote identity and address, the IKE version, the
//! negotiated IKE algorithms and NAT traversal; per installed CHILD SA the mode, the
//! protocol, the negotiated algorithms, the local and remote traffic selectors and UDP
//! encapsulation. Cutover records one from the old gateway before the delete; after the
//! new tunnels are up, one is read from the new gateway and [`compare`]d with it, fact by
//! fact: identical, changed (both values), or expected to change (SPIs, unique ids, the
//! connection and CHILD SA names the operator chose). A changed fact that the client's
//! side would see (an identity, an address, the IKE version, an algorithm, a traffic
//! selector, the mode, the protocol) or a tunnel that is gone fails the comparison; a
//! change of NAT traversal or UDP encapsulation is reported but does not fail it (it
//! follows the network path, not the configuration). Timers (established, rekeying,
//! expires) and counters (bytes, packets) are not read at all.
//!
//! Layer 2 (rules): imports only from layers 0 to 2; see docs/architecture.md.

use serde::{Deserialize, Serialize};

use crate::core::addr;
use crate::core::swanctl::{IkeSa, Sas};

/// The data-plane facts of one gateway at one moment.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Baseline {
    /// When `swanctl --list-sas` was read (RFC 3339, UTC).
    pub at: String,
    /// What it was read from: `Kind namespace/name`.
    pub source: String,
    /// One per remote peer with an ESTABLISHED IKE SA, in swanctl's order.
    pub tunnels: Vec<TunnelFacts>,
}

/// A peer a gateway should have a tunnel with: a VPNPeer's (or a tunnel's) name, its
/// `peer.address` and `peer.id`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpectedPeer {
    pub name: String,
    pub address: String,
    pub id: Option<String>,
}

/// One tunnel: an ESTABLISHED IKE SA and its INSTALLED CHILD SAs.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TunnelFacts {
    /// The IKE connection name (the operator's choice: expected to change).
    pub name: String,
    /// strongSwan's unique id of the IKE SA (expected to change).
    pub unique_id: u64,
    /// IKE SPIs, initiator then responder (expected to change).
    pub spis: Vec<String>,
    pub local_id: String,
    pub local_address: String,
    pub remote_id: String,
    pub remote_address: String,
    pub ike_version: u8,
    /// As swanctl prints them: `AES_CBC-256/HMAC_SHA2_256_128/PRF_HMAC_SHA2_256/MODP_2048`.
    pub ike_algorithms: String,
    /// NAT traversal (ESP in UDP) in use.
    pub nat_t: bool,
    pub children: Vec<ChildFacts>,
}

/// One INSTALLED CHILD SA.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ChildFacts {
    /// The CHILD SA name: what `swanctl --initiate --child NAME` takes.
    pub name: String,
    pub unique_id: u64,
    /// SPIs, inbound then outbound (expected to change).
    pub spis: Vec<String>,
    /// `TUNNEL`, `TRANSPORT`, `BEET`.
    pub mode: String,
    /// `ESP` or `AH`.
    pub protocol: String,
    /// `AES_GCM_16-256`, `AES_CBC-128/HMAC_SHA2_256_128`.
    pub algorithms: String,
    pub local_ts: Vec<String>,
    pub remote_ts: Vec<String>,
    pub udp_encap: bool,
}

impl Baseline {
    /// The facts of `sas`: every ESTABLISHED IKE SA, and every REKEYING one with CHILD
    /// SAs still installed, with their INSTALLED CHILD SAs. Several IKE SAs of one peer
    /// (simultaneous initiation, a reconnect, a re-authentication) are all kept, in
    /// swanctl's order: each is compared (issue 21 item 6).
    pub fn from_sas(sas: &Sas, at: &str, source: &str) -> Baseline {
        let tunnels = sas
            .ike_sas
            .iter()
            .filter(|s| {
                s.state == "ESTABLISHED"
                    || (s.state == "REKEYING" && s.child_sas.iter().any(|c| c.state == "INSTALLED"))
            })
            .map(tunnel_facts)
            .collect();
        Baseline {
            at: at.into(),
            source: source.into(),
            tunnels,
        }
    }

    /// The CHILD SA names, in order, each once: what a gateway-side initiation can start.
    pub fn child_names(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in self.tunnels.iter().flat_map(|t| &t.children) {
            if !out.contains(&c.name) {
                out.push(c.name.clone());
            }
        }
        out
    }

    /// The peers of `expected` with no IKE SA here: the tunnels that are down when this
    /// was read, in `expected`'s order. A peer is matched as `verify` matches it: its
    /// identity (its address when it has none), and its address when that is an IP
    /// address (a DNS name is not what swanctl prints).
    pub fn down<'a>(&self, expected: &'a [ExpectedPeer]) -> Vec<&'a ExpectedPeer> {
        expected
            .iter()
            .filter(|p| {
                let want_id = p.id.as_deref().unwrap_or(&p.address);
                let address_is_ip = addr::addr(&p.address).is_some();
                !self.tunnels.iter().any(|t| {
                    addr::same_identity(&t.remote_id, want_id)
                        && (!address_is_ip || addr::same_addr(&t.remote_address, &p.address))
                })
            })
            .collect()
    }

    /// How many peers are up: IKE SAs of one remote address and identity count once.
    pub fn peers(&self) -> usize {
        peers(&self.tunnels).len()
    }
}

/// Whether two IKE SAs are of one peer: the same remote address and identity, each in
/// its own family (`core::addr`).
fn same_peer(a: &TunnelFacts, b: &TunnelFacts) -> bool {
    addr::same_addr(&a.remote_address, &b.remote_address)
        && addr::same_identity(&a.remote_id, &b.remote_id)
}

/// The IKE SAs grouped by peer, in order of first appearance.
fn peers(tunnels: &[TunnelFacts]) -> Vec<Vec<&TunnelFacts>> {
    let mut out: Vec<Vec<&TunnelFacts>> = Vec::new();
    for t in tunnels {
        match out.iter_mut().find(|g| same_peer(g[0], t)) {
            Some(g) => g.push(t),
            None => out.push(vec![t]),
        }
    }
    out
}

fn tunnel_facts(sa: &IkeSa) -> TunnelFacts {
    let spis = |(a, b): &(String, String)| {
        [a, b]
            .into_iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect()
    };
    TunnelFacts {
        name: sa.name.clone(),
        unique_id: sa.unique_id,
        spis: spis(&sa.spis),
        local_id: sa.local.id.clone(),
        local_address: sa.local.address.clone(),
        remote_id: sa.remote.id.clone(),
        remote_address: sa.remote.address.clone(),
        ike_version: sa.ike_version,
        ike_algorithms: sa.algorithms.clone(),
        nat_t: sa.nat_t,
        children: sa
            .child_sas
            .iter()
            .filter(|c| c.state == "INSTALLED")
            .map(|c| ChildFacts {
                name: c.name.clone(),
                unique_id: c.unique_id,
                spis: spis(&c.spis),
                mode: c.mode.clone(),
                protocol: c.protocol.clone(),
                algorithms: c.algorithms.clone(),
                local_ts: c.local_ts.clone(),
                remote_ts: c.remote_ts.clone(),
                udp_encap: c.udp_encap,
            })
            .collect(),
    }
}

/// How one fact compares.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum FactVerdict {
    /// The same before and after.
    Identical,
    /// Different; `FactRow::fails` says whether that fails the comparison.
    Changed,
    /// Different by nature (SPIs, unique ids, names the operator chose): not compared.
    Expected,
    /// In the baseline, not after (a tunnel or CHILD SA that did not come back).
    Missing,
    /// After, not in the baseline (reported, does not fail).
    Added,
}

/// One row of the comparison table.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct FactRow {
    /// The tunnel: `remote-id @ remote-address` as in the baseline.
    pub tunnel: String,
    /// The CHILD SA's name in the baseline; `None` for an IKE SA fact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<String>,
    /// `local identity`, `ESP algorithms`, `local traffic selectors`, …
    pub fact: String,
    /// The value in the baseline (`-` when there is none).
    pub before: String,
    /// The value after (`-` when there is none).
    pub after: String,
    pub verdict: FactVerdict,
    /// This row fails the comparison (a changed identity, address, version, algorithm,
    /// selector, mode or protocol, or something missing).
    pub fails: bool,
    /// What this row cannot prove, in words: the PFS group of a CHILD SA that has not
    /// been rekeyed (strongSwan shows a CHILD SA's DH group only after a rekey with a key
    /// exchange). Absent in journals of earlier versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unproven: Option<String>,
}

/// The baseline compared with the gateway after the window.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// `Baseline::at` and `Baseline::source` of the two sides.
    pub before_at: String,
    pub before_source: String,
    pub after_at: String,
    pub after_source: String,
    pub rows: Vec<FactRow>,
}

impl Comparison {
    /// Whether any row fails.
    pub fn failed(&self) -> bool {
        self.rows.iter().any(|r| r.fails)
    }

    /// The rows that fail.
    pub fn failures(&self) -> Vec<&FactRow> {
        self.rows.iter().filter(|r| r.fails).collect()
    }

    /// How many rows have each verdict: (identical, changed, expected, missing, added).
    pub fn counts(&self) -> (usize, usize, usize, usize, usize) {
        let n = |v| self.rows.iter().filter(|r| r.verdict == v).count();
        (
            n(FactVerdict::Identical),
            n(FactVerdict::Changed),
            n(FactVerdict::Expected),
            n(FactVerdict::Missing),
            n(FactVerdict::Added),
        )
    }

    /// The rows with something the data plane cannot prove ([`FactRow::unproven`]).
    pub fn unproven(&self) -> Vec<&FactRow> {
        self.rows.iter().filter(|r| r.unproven.is_some()).collect()
    }

    /// The failing rows in one sentence: `acme @ 203.0.113.10 CHILD acme: local traffic
    /// selectors 10.250.3.0/24 → 10.250.0.0/16`.
    pub fn failure_line(&self) -> String {
        self.failures()
            .iter()
            .map(|r| {
                let child = r
                    .child
                    .as_deref()
                    .map(|c| format!(" CHILD {c}"))
                    .unwrap_or_default();
                format!("{}{child}: {} {} → {}", r.tunnel, r.fact, r.before, r.after)
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// How a tunnel came back after the delete.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum CameUpBy {
    /// `swanctl --initiate` in the new gateway's pod brought it up (`--initiate`).
    Initiation,
    /// The client's peer re-initiated on its own retry timer.
    Client,
}

/// The outage of one tunnel.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TunnelOutage {
    /// The peer: the VPNPeer's name (cutover) or the tunnel's (rollback).
    pub peer: String,
    /// From the delete of the old gateway (the last moment its SA could carry packets)
    /// to the first look that found this tunnel ESTABLISHED with its CHILD SAs
    /// INSTALLED; `None` if it was never seen up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage_ms: Option<u64>,
    pub came_up_by: CameUpBy,
    /// What the gateway-side initiation answered when one was tried (swanctl's last
    /// line, e.g. `initiate completed successfully` or `initiate failed: …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initiation: Option<String>,
}

/// The outage of a window, in parts. The parts follow each other: the old gateway's
/// finalizer unwind (delete sent → gone), the new gateway's floating IP (gone →
/// `FIPAttached`, the apply included), its readiness (→ `Ready` and every peer
/// `Authorized`), and the tunnels (→ the last tunnel up). A part is `None` when one of its
/// ends is not known (a window resumed from a journal of an earlier version).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Outage {
    /// The delete to the last tunnel up: the sum of the parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unwind_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attach_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tunnel_ms: Option<u64>,
    /// The window was run with `--initiate`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub initiate: bool,
    pub tunnels: Vec<TunnelOutage>,
}

/// The comparison as rows of `vpnmig verify` (check `data plane`): one per failing fact,
/// then one for the whole (ok when nothing the client sees changed). `object` names the
/// gateway compared (`VPNGateway ns/name`).
pub fn verify_rows(c: &Comparison, object: &str) -> Vec<crate::core::verify::Row> {
    use crate::core::verify::{Row, Verdict};
    let mut rows: Vec<Row> = c
        .failures()
        .iter()
        .map(|r| Row {
            check: "data plane",
            object: format!("tunnel {}", r.tunnel),
            what: match &r.child {
                Some(child) => format!("CHILD SA {child} {}", r.fact),
                None => r.fact.clone(),
            },
            verdict: Verdict::Fail,
            detail: match r.verdict {
                FactVerdict::Missing => format!("{} before the window, not up now", r.before),
                _ => format!("{} before the window, {} now", r.before, r.after),
            },
        })
        .collect();
    for r in c.unproven() {
        rows.push(Row {
            check: "data plane",
            object: format!("tunnel {}", r.tunnel),
            what: match &r.child {
                Some(child) => format!("CHILD SA {child} {}: not proven", r.fact),
                None => format!("{}: not proven", r.fact),
            },
            verdict: Verdict::Ok,
            detail: r.unproven.clone().unwrap_or_default(),
        });
    }
    let (same, changed, expected, missing, added) = c.counts();
    rows.push(Row {
        check: "data plane",
        object: object.to_string(),
        what: format!("compared with {} at {}", c.before_source, c.before_at),
        verdict: if c.failed() {
            Verdict::Fail
        } else {
            Verdict::Ok
        },
        detail: format!(
            "{same} identical, {changed} changed, {missing} missing, {added} added, {expected} expected to change (SPIs, unique ids, names)"
        ),
    });
    rows
}

fn flag(b: bool) -> String {
    if b { "yes" } else { "no" }.into()
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "-".into()
    } else {
        v.join(" ")
    }
}

/// Selectors as sets, each parsed in its own family (`addr::selector_key`).
fn same_selectors(a: &[String], b: &[String]) -> bool {
    let norm = |v: &[String]| {
        let mut v: Vec<String> = v.iter().map(|s| addr::selector_key(s)).collect();
        v.sort();
        v.dedup();
        v
    };
    norm(a) == norm(b)
}

/// Whether an algorithm name as swanctl prints it is a key exchange method: a DH group
/// (`MODP_2048`, `ECP_384`, `ECP_256_BP`, `CURVE_25519`, `CURVE_448`) or a post-quantum
/// or additional one (`ML_KEM_768`, `KE1_ML_KEM_768`, `NTRU_128`, `NEWHOPE_128`).
fn is_key_exchange(part: &str) -> bool {
    let p = part.to_ascii_uppercase();
    [
        "MODP_", "ECP_", "CURVE_", "NTRU_", "NEWHOPE_", "ML_KEM", "MLKEM", "FRODO", "KYBER",
    ]
    .iter()
    .any(|k| p.starts_with(k))
        || (p.starts_with("KE") && p[2..].starts_with(|c: char| c.is_ascii_digit()))
}

/// Algorithms as printed, split into what the SA always shows (encryption, integrity,
/// PRF, ESN) and its key exchange methods, which a CHILD SA shows only after a rekey
/// with PFS.
fn split_algorithms(s: &str) -> (Vec<&str>, Vec<&str>) {
    s.split('/')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .partition(|p| !is_key_exchange(p))
}

/// Compare negotiated algorithms on what both sides can show (issue 21 item 6): the
/// algorithms every SA shows must be equal; key exchange methods are compared when both
/// sides show them, and a side that does not (a CHILD SA created with its IKE SA and not
/// rekeyed since) is not a change, but it proves nothing: the second value says what is
/// not proven, in words. `group` names the key exchange (`PFS group`, `DH group`).
fn compare_algorithms(before: &str, after: &str, group: &str, why: &str) -> (bool, Option<String>) {
    let (b, bk) = split_algorithms(before);
    let (a, ak) = split_algorithms(after);
    let shown = |k: &[&str]| k.join("/");
    let unproven = match (bk.is_empty(), ak.is_empty()) {
        (false, false) => None,
        (false, true) => Some(format!(
            "{group} {} before, not shown now ({why}): not proven by the data plane; the proposals are checked as pinned values",
            shown(&bk)
        )),
        (true, false) => Some(format!(
            "{group} not shown before, {} now ({why}): not proven by the data plane; the proposals are checked as pinned values",
            shown(&ak)
        )),
        (true, true) => Some(format!(
            "{group} shown on neither side ({why}): not proven by the data plane; the proposals are checked as pinned values"
        )),
    };
    let same = b == a && (bk.is_empty() || ak.is_empty() || bk == ak);
    (same, unproven)
}

struct Rows<'a> {
    tunnel: &'a str,
    child: Option<&'a str>,
    out: &'a mut Vec<FactRow>,
}

impl Rows<'_> {
    fn push(
        &mut self,
        fact: &str,
        before: String,
        after: String,
        verdict: FactVerdict,
        fails: bool,
    ) {
        self.out.push(FactRow {
            tunnel: self.tunnel.to_string(),
            child: self.child.map(str::to_string),
            fact: fact.into(),
            before,
            after,
            verdict,
            fails,
            unproven: None,
        });
    }

    /// Say what the last row cannot prove.
    fn unproven(&mut self, why: Option<String>) {
        if let Some(r) = self.out.last_mut() {
            r.unproven = why;
        }
    }

    /// A compared fact: identical when `same`, else changed (failing if `fails`).
    fn fact(&mut self, fact: &str, before: String, after: String, same: bool, fails: bool) {
        let verdict = if same {
            FactVerdict::Identical
        } else {
            FactVerdict::Changed
        };
        self.push(fact, before, after, verdict, fails && !same);
    }

    /// A fact expected to change: shown, never compared.
    fn expected(&mut self, fact: &str, before: String, after: String) {
        self.push(fact, before, after, FactVerdict::Expected, false);
    }
}

/// Why a CHILD SA may not show its PFS group.
const PFS_WHY: &str = "a CHILD SA shows its DH group only after a rekey with a key exchange";

/// The counterpart of peer `b` (its IKE SAs) among the peers `after` not yet `used`:
/// same remote address and identity, else the same address, else the same identity,
/// else the same connection name.
fn counterpart(b: &[&TunnelFacts], after: &[Vec<&TunnelFacts>], used: &[bool]) -> Option<usize> {
    let b = b[0];
    let tests: [&dyn Fn(&TunnelFacts) -> bool; 4] = [
        &|a| same_peer(a, b),
        &|a| addr::same_addr(&a.remote_address, &b.remote_address),
        &|a| addr::same_identity(&a.remote_id, &b.remote_id),
        &|a| a.name == b.name,
    ];
    tests.iter().find_map(|t| {
        after
            .iter()
            .enumerate()
            .find(|(i, a)| !used[*i] && a.iter().any(|a| t(a)))
            .map(|(i, _)| i)
    })
}

/// The counterpart of CHILD SA `b`: the same remote selectors, else the same local ones,
/// else the same name, else the one at the same position.
fn child_counterpart(
    b: &ChildFacts,
    pos: usize,
    after: &[&ChildFacts],
    used: &[bool],
) -> Option<usize> {
    type Test<'a> = &'a dyn Fn(usize, &ChildFacts) -> bool;
    let tests: [Test; 4] = [
        &|_, a| same_selectors(&a.remote_ts, &b.remote_ts),
        &|_, a| same_selectors(&a.local_ts, &b.local_ts),
        &|_, a| a.name == b.name,
        &|i, _| i == pos,
    ];
    tests.iter().find_map(|t| {
        after
            .iter()
            .enumerate()
            .find(|(i, a)| !used[*i] && t(*i, a))
            .map(|(i, _)| i)
    })
}

/// Two CHILD SAs with the same selectors on both sides: duplicates of one tunnel (a
/// simultaneous initiation leaves one on each IKE SA until charon deletes one).
fn same_child(a: &ChildFacts, b: &ChildFacts) -> bool {
    same_selectors(&a.local_ts, &b.local_ts) && same_selectors(&a.remote_ts, &b.remote_ts)
}

/// The IKE facts of `a` that differ from `b` and would fail: how far apart two IKE SAs
/// are, to pair each IKE SA with the closest one of the other side.
fn ike_distance(b: &TunnelFacts, a: &TunnelFacts) -> usize {
    [
        addr::same_identity(&b.local_id, &a.local_id),
        addr::same_addr(&b.local_address, &a.local_address),
        addr::same_identity(&b.remote_id, &a.remote_id),
        addr::same_addr(&b.remote_address, &a.remote_address),
        b.ike_version == a.ike_version,
        compare_algorithms(&b.ike_algorithms, &a.ike_algorithms, "", "").0,
    ]
    .iter()
    .filter(|same| !**same)
    .count()
}

/// Pair the IKE SAs of one peer, before and after: each before SA with an unused after
/// SA (the closest, then one that carries CHILD SAs, then the first); an SA left over on
/// either side (a duplicate after a simultaneous initiation, a second SA of a
/// re-authentication) with the closest of the other side. Every IKE SA is compared.
fn pair_ike_sas<'a>(
    before: &[&'a TunnelFacts],
    after: &[&'a TunnelFacts],
) -> Vec<(&'a TunnelFacts, &'a TunnelFacts)> {
    let closest = |b: &TunnelFacts, from: &[&'a TunnelFacts], used: Option<&[bool]>| {
        from.iter()
            .enumerate()
            .filter(|(i, _)| used.is_none_or(|u| !u[*i]))
            .min_by_key(|(_, a)| (ike_distance(b, a), a.children.is_empty()))
            .map(|(i, _)| i)
    };
    let mut used = vec![false; after.len()];
    let mut pairs = Vec::new();
    for b in before {
        let i = closest(b, after, Some(&used))
            .inspect(|i| used[*i] = true)
            .or_else(|| closest(b, after, None));
        if let Some(i) = i {
            pairs.push((*b, after[i]));
        }
    }
    for a in after
        .iter()
        .enumerate()
        .filter(|(i, _)| !used[*i])
        .map(|(_, a)| a)
    {
        if let Some(j) = before
            .iter()
            .enumerate()
            .min_by_key(|(_, b)| (ike_distance(b, a), b.children.is_empty()))
            .map(|(j, _)| j)
        {
            pairs.push((before[j], *a));
        }
    }
    pairs
}

/// The IKE SA facts of one pair.
fn ike_rows(r: &mut Rows, b: &TunnelFacts, a: &TunnelFacts) {
    r.fact(
        "local identity",
        b.local_id.clone(),
        a.local_id.clone(),
        addr::same_identity(&b.local_id, &a.local_id),
        true,
    );
    r.fact(
        "local address",
        b.local_address.clone(),
        a.local_address.clone(),
        addr::same_addr(&b.local_address, &a.local_address),
        true,
    );
    r.fact(
        "remote identity",
        b.remote_id.clone(),
        a.remote_id.clone(),
        addr::same_identity(&b.remote_id, &a.remote_id),
        true,
    );
    r.fact(
        "remote address",
        b.remote_address.clone(),
        a.remote_address.clone(),
        addr::same_addr(&b.remote_address, &a.remote_address),
        true,
    );
    r.fact(
        "IKE version",
        format!("IKEv{}", b.ike_version),
        format!("IKEv{}", a.ike_version),
        b.ike_version == a.ike_version,
        true,
    );
    let (same, unproven) = compare_algorithms(
        &b.ike_algorithms,
        &a.ike_algorithms,
        "DH group",
        "swanctl did not print it",
    );
    r.fact(
        "IKE algorithms",
        b.ike_algorithms.clone(),
        a.ike_algorithms.clone(),
        same,
        true,
    );
    r.unproven(unproven);
    r.fact(
        "NAT-T",
        flag(b.nat_t),
        flag(a.nat_t),
        b.nat_t == a.nat_t,
        false,
    );
    r.expected("connection name", b.name.clone(), a.name.clone());
    r.expected(
        "IKE unique id",
        format!("#{}", b.unique_id),
        format!("#{}", a.unique_id),
    );
    r.expected("IKE SPIs", list(&b.spis), list(&a.spis));
}

/// The CHILD SA facts of one pair.
fn child_rows(r: &mut Rows, bc: &ChildFacts, ac: &ChildFacts) {
    r.fact(
        "mode",
        bc.mode.clone(),
        ac.mode.clone(),
        bc.mode == ac.mode,
        true,
    );
    r.fact(
        "protocol",
        bc.protocol.clone(),
        ac.protocol.clone(),
        bc.protocol == ac.protocol,
        true,
    );
    let (same, unproven) = compare_algorithms(&bc.algorithms, &ac.algorithms, "PFS group", PFS_WHY);
    r.fact(
        "ESP algorithms",
        bc.algorithms.clone(),
        ac.algorithms.clone(),
        same,
        true,
    );
    r.unproven(unproven);
    r.fact(
        "local traffic selectors",
        list(&bc.local_ts),
        list(&ac.local_ts),
        same_selectors(&bc.local_ts, &ac.local_ts),
        true,
    );
    r.fact(
        "remote traffic selectors",
        list(&bc.remote_ts),
        list(&ac.remote_ts),
        same_selectors(&bc.remote_ts, &ac.remote_ts),
        true,
    );
    r.fact(
        "UDP encapsulation",
        flag(bc.udp_encap),
        flag(ac.udp_encap),
        bc.udp_encap == ac.udp_encap,
        false,
    );
    r.expected("CHILD SA name", bc.name.clone(), ac.name.clone());
    r.expected(
        "CHILD unique id",
        format!("#{}", bc.unique_id),
        format!("#{}", ac.unique_id),
    );
    r.expected("CHILD SPIs", list(&bc.spis), list(&ac.spis));
}

fn child_line(c: &ChildFacts) -> String {
    format!(
        "#{} INSTALLED {} === {}",
        c.unique_id,
        list(&c.local_ts),
        list(&c.remote_ts)
    )
}

/// Compare the data plane `after` a window with the `before` baseline, fact by fact:
/// peer by peer, every IKE SA of a peer with its counterpart, and the CHILD SAs of all
/// the peer's IKE SAs together (a simultaneous initiation may leave the CHILD SA on the
/// second IKE SA listed).
pub fn compare(before: &Baseline, after: &Baseline) -> Comparison {
    let mut out = Vec::new();
    let (bpeers, apeers) = (peers(&before.tunnels), peers(&after.tunnels));
    let mut used = vec![false; apeers.len()];
    for bp in &bpeers {
        let b0 = bp[0];
        let label = format!("{} @ {}", b0.remote_id, b0.remote_address);
        let Some(i) = counterpart(bp, &apeers, &used) else {
            for b in bp {
                Rows {
                    tunnel: &label,
                    child: None,
                    out: &mut out,
                }
                .push(
                    "IKE SA",
                    format!("#{} ESTABLISHED", b.unique_id),
                    "-".into(),
                    FactVerdict::Missing,
                    true,
                );
            }
            continue;
        };
        used[i] = true;
        let ap = &apeers[i];
        let several = bp.len() > 1 || ap.len() > 1;
        for (b, a) in pair_ike_sas(bp, ap) {
            let tunnel = if several {
                format!("{label} (IKE SA #{} → #{})", b.unique_id, a.unique_id)
            } else {
                label.clone()
            };
            ike_rows(
                &mut Rows {
                    tunnel: &tunnel,
                    child: None,
                    out: &mut out,
                },
                b,
                a,
            );
        }
        let bchildren: Vec<&ChildFacts> = bp.iter().flat_map(|t| &t.children).collect();
        let achildren: Vec<&ChildFacts> = ap.iter().flat_map(|t| &t.children).collect();
        let mut cused = vec![false; achildren.len()];
        let mut matched: Vec<Option<usize>> = Vec::new();
        for (pos, bc) in bchildren.iter().enumerate() {
            let mut r = Rows {
                tunnel: &label,
                child: Some(&bc.name),
                out: &mut out,
            };
            // A duplicate of a CHILD SA already matched is compared with the same one.
            let dup = bchildren[..pos]
                .iter()
                .zip(&matched)
                .find_map(|(earlier, m)| m.filter(|_| same_child(earlier, bc)));
            let j = dup.or_else(|| {
                child_counterpart(bc, pos, &achildren, &cused).inspect(|j| cused[*j] = true)
            });
            matched.push(j);
            let Some(j) = j else {
                r.push(
                    "CHILD SA",
                    child_line(bc),
                    "-".into(),
                    FactVerdict::Missing,
                    true,
                );
                continue;
            };
            child_rows(&mut r, bc, achildren[j]);
        }
        for ac in achildren
            .iter()
            .enumerate()
            .filter(|(j, _)| !cused[*j])
            .map(|(_, c)| c)
        {
            let mut r = Rows {
                tunnel: &label,
                child: Some(&ac.name),
                out: &mut out,
            };
            // A duplicate after: compared with the CHILD SA it duplicates.
            match bchildren.iter().find(|bc| same_child(ac, bc)) {
                Some(bc) => child_rows(&mut r, bc, ac),
                None => r.push(
                    "CHILD SA",
                    "-".into(),
                    child_line(ac),
                    FactVerdict::Added,
                    false,
                ),
            }
        }
    }
    for ap in apeers
        .iter()
        .enumerate()
        .filter(|(i, _)| !used[*i])
        .map(|(_, a)| a)
    {
        for a in ap {
            Rows {
                tunnel: &format!("{} @ {}", a.remote_id, a.remote_address),
                child: None,
                out: &mut out,
            }
            .push(
                "IKE SA",
                "-".into(),
                format!("#{} ESTABLISHED", a.unique_id),
                FactVerdict::Added,
                false,
            );
        }
    }
    Comparison {
        before_at: before.at.clone(),
        before_source: before.source.clone(),
        after_at: after.at.clone(),
        after_source: after.source.clone(),
        rows: out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::swanctl::parse;

    /// The shared samples (fixtures/swanctl/, the same files as ../shared/samples/).
    const SAMPLES: [(&str, &str); 7] = [
        (
            "01",
            include_str!(
                "../../fixtures/swanctl/01-strongswan2086-host-host-udp-tcp-selectors.txt"
            ),
        ),
        (
            "04",
            include_str!("../../fixtures/swanctl/04-submariner360-responder-two-ts-per-line.txt"),
        ),
        (
            "05",
            include_str!("../../fixtures/swanctl/05-open5gs550-empty-output.txt"),
        ),
        (
            "06",
            include_str!("../../fixtures/swanctl/06-strongswan1539-connecting-half-open.txt"),
        ),
        (
            "08",
            include_str!("../../fixtures/swanctl/08-strongswan-docs-home-net-initiator.txt"),
        ),
        (
            "10",
            include_str!("../../fixtures/swanctl/10-chromeos-l2tp-ikev1-transport-in-udp.txt"),
        ),
        (
            "15",
            include_str!("../../fixtures/swanctl/15-vyos-raw-single-ike.txt"),
        ),
    ];

    fn sample(n: &str) -> &'static str {
        SAMPLES.iter().find(|(k, _)| *k == n).unwrap().1
    }

    fn facts(text: &str) -> Baseline {
        Baseline::from_sas(&parse(text).unwrap(), "t", "IPsecGateway ns/acme")
    }

    /// Rows that are not identical, as `(fact, before, after, verdict, fails)`.
    fn differences(c: &Comparison) -> Vec<(String, String, String, FactVerdict, bool)> {
        c.rows
            .iter()
            .filter(|r| r.verdict != FactVerdict::Identical)
            .filter(|r| r.verdict != FactVerdict::Expected || r.before != r.after)
            .map(|r| {
                (
                    r.fact.clone(),
                    r.before.clone(),
                    r.after.clone(),
                    r.verdict,
                    r.fails,
                )
            })
            .collect()
    }

    #[test]
    fn which_expected_peers_are_down() {
        let up = |id: &str, address: &str| TunnelFacts {
            remote_id: id.into(),
            remote_address: address.into(),
            ..Default::default()
        };
        let b = Baseline {
            tunnels: vec![
                up("hq.example", "203.0.113.41"),
                up("198.51.100.7", "198.51.100.7"),
            ],
            ..Default::default()
        };
        let peer = |address: &str, id: Option<&str>| ExpectedPeer {
            name: "p".into(),
            address: address.into(),
            id: id.map(str::to_string),
        };
        // (expected peer, down?)
        let table = [
            (peer("203.0.113.41", Some("hq.example")), false),
            // The same identity from another address is another peer.
            (peer("203.0.113.99", Some("hq.example")), true),
            // Another identity from the same address.
            (peer("203.0.113.41", Some("branch.example")), true),
            // A DNS name as the address: matched by identity only.
            (peer("vpn.hq.example", Some("hq.example")), false),
            // No identity: the address is the identity.
            (peer("198.51.100.7", None), false),
            (peer("198.51.100.8", None), true),
        ];
        for (p, down) in table {
            let expected = [p.clone()];
            assert_eq!(!b.down(&expected).is_empty(), down, "{p:?}");
        }
    }

    #[test]
    fn the_facts_of_each_sample() {
        /// (sample, tunnels, IKE algorithms, NAT-T, then the first CHILD SA's mode,
        /// protocol, algorithms, local and remote selectors, UDP encapsulation)
        type Facts = (&'static str, usize, &'static str, bool, &'static str);
        type Child = (&'static str, &'static str, &'static str, &'static str, bool);
        let table: [(Facts, Child); 5] = [
            (
                (
                    "01",
                    1,
                    "AES_GCM_16-256/PRF_HMAC_SHA2_384/ECP_384",
                    false,
                    "TUNNEL",
                ),
                (
                    "ESP",
                    "AES_GCM_16-256",
                    "192.168.100.3/32[udp]",
                    "192.168.100.1/32[udp]",
                    false,
                ),
            ),
            (
                (
                    "04",
                    1,
                    "AES_GCM_16-128/PRF_HMAC_SHA2_256/MODP_2048",
                    true,
                    "TUNNEL",
                ),
                (
                    "ESP",
                    "AES_GCM_16-128",
                    "169.254.2.0/24 172.17.0.10/32",
                    "169.254.3.0/24 172.17.0.7/32",
                    true,
                ),
            ),
            (
                (
                    "08",
                    1,
                    "AES_CBC-128/HMAC_SHA2_256_128/PRF_HMAC_SHA2_256/CURVE_25519",
                    false,
                    "TUNNEL",
                ),
                (
                    "ESP",
                    "AES_GCM_16-128",
                    "192.168.0.100/32",
                    "10.1.0.0/16",
                    false,
                ),
            ),
            (
                (
                    "10",
                    1,
                    "AES_CBC-128/HMAC_SHA2_256_128/PRF_HMAC_SHA2_256/MODP_3072",
                    true,
                    "TRANSPORT",
                ),
                (
                    "ESP",
                    "AES_CBC-128/HMAC_SHA2_256_128",
                    "192.168.1.2/32[udp/l2tp]",
                    "203.0.113.4/32[udp/l2tp]",
                    true,
                ),
            ),
            (
                (
                    "15",
                    1,
                    "AES_CBC-256/HMAC_SHA2_256_128/PRF_HMAC_SHA2_256/ECP_256",
                    false,
                    "TUNNEL",
                ),
                (
                    "ESP",
                    "AES_CBC-256/HMAC_SHA2_256_128",
                    "10.244.1.0/24",
                    "10.244.2.0/24",
                    false,
                ),
            ),
        ];
        for ((n, tunnels, ike, nat, mode), (proto, esp, local, remote, udp)) in table {
            let b = facts(sample(n));
            assert_eq!(b.tunnels.len(), tunnels, "sample {n}");
            let t = &b.tunnels[0];
            assert_eq!(
                (t.ike_algorithms.as_str(), t.nat_t),
                (ike, nat),
                "sample {n}"
            );
            let c = &t.children[0];
            assert_eq!(
                (
                    c.mode.as_str(),
                    c.protocol.as_str(),
                    c.algorithms.as_str(),
                    list(&c.local_ts).as_str(),
                    list(&c.remote_ts).as_str(),
                    c.udp_encap
                ),
                (mode, proto, esp, local, remote, udp),
                "sample {n}"
            );
            assert_eq!(t.spis.len(), 2, "sample {n}");
            assert_eq!(c.spis.len(), 2, "sample {n}");
        }
        // Nothing up: no tunnel (05 is empty, 06 only CONNECTING).
        assert!(facts(sample("05")).tunnels.is_empty());
        assert!(facts(sample("06")).tunnels.is_empty());
        assert_eq!(
            facts(sample("01")).child_names(),
            ["udpTunnel", "tcpTunnel"]
        );
        let raw = &facts(sample("15")).tunnels[0];
        assert_eq!(raw.spis, ["94fe0de3ab9ca06a", "9c1f4b059b81071d"]);
        assert_eq!(raw.children[0].spis, ["cafe0be1", "c351239f"]);
        let human = &facts(sample("08")).tunnels[0];
        assert_eq!(human.spis, ["6fd55d95f66b4a67", "cea64d4a303e0ca2"]);
        assert_eq!(human.children[0].spis, ["c8931e89", "cee78125"]);
    }

    #[test]
    fn every_sample_compared_with_itself_is_identical() {
        for (n, text) in SAMPLES {
            let b = facts(text);
            let c = compare(&b, &b);
            assert!(!c.failed(), "sample {n}: {:?}", c.failures());
            assert!(differences(&c).is_empty(), "sample {n}");
            assert_eq!(c.counts().1 + c.counts().3, 0, "sample {n}");
        }
    }

    #[test]
    fn spis_unique_ids_and_names_are_expected_to_change() {
        let after = sample("08")
            .replace("home: #1", "acme: #7")
            .replace("net: #1", "acme-net: #3")
            .replace("6fd55d95f66b4a67", "0123456789abcdef")
            .replace("c8931e89", "c0000001");
        let c = compare(&facts(sample("08")), &facts(&after));
        assert!(!c.failed());
        assert_eq!(
            differences(&c)
                .iter()
                .map(|d| (d.0.as_str(), d.1.as_str(), d.2.as_str(), d.3, d.4))
                .collect::<Vec<_>>(),
            [
                (
                    "connection name",
                    "home",
                    "acme",
                    FactVerdict::Expected,
                    false
                ),
                ("IKE unique id", "#1", "#7", FactVerdict::Expected, false),
                (
                    "IKE SPIs",
                    "6fd55d95f66b4a67 cea64d4a303e0ca2",
                    "0123456789abcdef cea64d4a303e0ca2",
                    FactVerdict::Expected,
                    false
                ),
                (
                    "CHILD SA name",
                    "net",
                    "acme-net",
                    FactVerdict::Expected,
                    false
                ),
                ("CHILD unique id", "#1", "#3", FactVerdict::Expected, false),
                (
                    "CHILD SPIs",
                    "c8931e89 cee78125",
                    "c0000001 cee78125",
                    FactVerdict::Expected,
                    false
                ),
            ]
        );
    }

    #[test]
    fn what_the_client_sees_fails_and_what_the_path_decides_does_not() {
        // (what changes in sample 08, the fact, before, after, fails)
        let table = [
            (
                "remote 10.1.0.0/16",
                "remote 10.1.0.0/24",
                "remote traffic selectors",
                "10.1.0.0/16",
                "10.1.0.0/24",
                true,
            ),
            (
                "local  192.168.0.100/32",
                "local  192.168.0.0/24",
                "local traffic selectors",
                "192.168.0.100/32",
                "192.168.0.0/24",
                true,
            ),
            (
                "ESP:AES_GCM_16-128",
                "ESP:AES_GCM_16-256",
                "ESP algorithms",
                "AES_GCM_16-128",
                "AES_GCM_16-256",
                true,
            ),
            (
                "CURVE_25519",
                "MODP_2048",
                "IKE algorithms",
                "AES_CBC-128/HMAC_SHA2_256_128/PRF_HMAC_SHA2_256/CURVE_25519",
                "AES_CBC-128/HMAC_SHA2_256_128/PRF_HMAC_SHA2_256/MODP_2048",
                true,
            ),
            (
                "remote 'moon.example.net'",
                "remote 'sun.example.net'",
                "remote identity",
                "moon.example.net",
                "sun.example.net",
                true,
            ),
            (
                "local  'user1@example.com'",
                "local  'user2@example.com'",
                "local identity",
                "user1@example.com",
                "user2@example.com",
                true,
            ),
            (
                "@ 192.168.0.100[4500]",
                "@ 192.168.0.101[4500]",
                "local address",
                "192.168.0.100",
                "192.168.0.101",
                true,
            ),
            ("IKEv2", "IKEv1", "IKE version", "IKEv2", "IKEv1", true),
            (
                "INSTALLED, TUNNEL,",
                "INSTALLED, TRANSPORT,",
                "mode",
                "TUNNEL",
                "TRANSPORT",
                true,
            ),
            (
                "INSTALLED, TUNNEL,",
                "INSTALLED, TUNNEL-in-UDP,",
                "UDP encapsulation",
                "no",
                "yes",
                false,
            ),
        ];
        for (from, to, fact, before, after, fails) in table {
            let changed = sample("08").replace(from, to);
            assert_ne!(changed, sample("08"), "{from}");
            let c = compare(&facts(sample("08")), &facts(&changed));
            let d: Vec<_> = differences(&c)
                .into_iter()
                .filter(|d| d.3 != FactVerdict::Expected)
                .collect();
            let want = (
                fact.to_string(),
                before.to_string(),
                after.to_string(),
                FactVerdict::Changed,
                fails,
            );
            assert!(d.contains(&want), "{fact}: {d:?}");
            assert_eq!(c.failed(), fails, "{fact}");
            if fails {
                assert!(
                    c.failure_line()
                        .contains(&format!("{fact} {before} → {after}")),
                    "{}",
                    c.failure_line()
                );
            }
        }
    }

    #[test]
    fn a_tunnel_or_child_that_did_not_come_back_fails() {
        let c = compare(&facts(sample("01")), &facts(sample("05")));
        assert!(c.failed());
        assert_eq!(c.rows.len(), 1);
        assert_eq!(
            (
                c.rows[0].tunnel.as_str(),
                c.rows[0].fact.as_str(),
                c.rows[0].verdict
            ),
            (
                "192.168.100.1 @ 192.168.100.1",
                "IKE SA",
                FactVerdict::Missing
            )
        );
        // Only one of the two CHILD SAs came back.
        let one: String = sample("01")
            .lines()
            .take(11)
            .map(|l| format!("{l}\n"))
            .collect();
        let c = compare(&facts(sample("01")), &facts(&one));
        let missing: Vec<_> = c
            .failures()
            .iter()
            .map(|r| (r.child.clone(), r.verdict))
            .collect();
        assert_eq!(
            missing,
            [(Some("tcpTunnel".to_string()), FactVerdict::Missing)]
        );
        // An extra tunnel after is reported, not a failure.
        let c = compare(&facts(sample("05")), &facts(sample("08")));
        assert!(!c.failed());
        assert_eq!(c.rows[0].verdict, FactVerdict::Added);
    }

    /// ESP and IKE algorithms compare what both sides can show (issue 21 item 6): a DH
    /// group shown on one side only (a CHILD SA rekeyed with PFS against a fresh one) is
    /// not a change, and the row says what it cannot prove. Rows: (ESP before, ESP after,
    /// changed?, what the row says it cannot prove).
    #[test]
    fn algorithms_compare_what_both_sides_show() {
        let table: [(&str, &str, bool, Option<&str>); 12] = [
            // The given member: the baseline's CHILD SA was rekeyed with PFS.
            (
                "AES_GCM_16-256/MODP_2048",
                "AES_GCM_16-256",
                false,
                Some("PFS group MODP_2048 before, not shown now"),
            ),
            (
                "AES_GCM_16-128",
                "AES_GCM_16-128/ECP_384",
                false,
                Some("PFS group not shown before, ECP_384 now"),
            ),
            (
                "AES_CBC-256/HMAC_SHA2_256_128/MODP_3072",
                "AES_CBC-256/HMAC_SHA2_256_128",
                false,
                Some("PFS group MODP_3072 before"),
            ),
            (
                "AES_CBC-128/HMAC_SHA1_96/CURVE_25519",
                "AES_CBC-128/HMAC_SHA1_96",
                false,
                Some("CURVE_25519 before"),
            ),
            (
                "AES_CBC-128/HMAC_SHA2_256_128/ECP_256_BP",
                "AES_CBC-128/HMAC_SHA2_256_128",
                false,
                Some("ECP_256_BP before"),
            ),
            // Both fresh: identical, and the PFS group is proven by neither.
            (
                "AES_GCM_16-256",
                "AES_GCM_16-256",
                false,
                Some("PFS group shown on neither side"),
            ),
            // Both rekeyed with PFS: compared, nothing unproven.
            (
                "AES_GCM_16-256/MODP_2048",
                "AES_GCM_16-256/MODP_2048",
                false,
                None,
            ),
            (
                "AES_GCM_16-256/MODP_2048",
                "AES_GCM_16-256/MODP_4096",
                true,
                None,
            ),
            (
                "AES_CBC-128/HMAC_SHA2_256_128/ECP_256",
                "AES_CBC-128/HMAC_SHA2_256_128/CURVE_25519",
                true,
                None,
            ),
            // What every CHILD SA shows still fails when it changes, group or not.
            (
                "AES_CBC-128/HMAC_SHA2_256_128/MODP_2048",
                "AES_CBC-256/HMAC_SHA2_256_128",
                true,
                Some("MODP_2048 before"),
            ),
            (
                "AES_CBC-128/HMAC_SHA2_256_128",
                "AES_CBC-128/HMAC_SHA1_96",
                true,
                Some("shown on neither side"),
            ),
            (
                "AES_GCM_16-256/ESN",
                "AES_GCM_16-256",
                true,
                Some("neither"),
            ),
        ];
        for (before, after, changed, unproven) in table {
            let side = |alg: &str| {
                facts(&sample("08").replace("ESP:AES_GCM_16-128", &format!("ESP:{alg}")))
            };
            let c = compare(&side(before), &side(after));
            let row = c.rows.iter().find(|r| r.fact == "ESP algorithms").unwrap();
            assert_eq!(
                (row.verdict == FactVerdict::Changed, row.fails, c.failed()),
                (changed, changed, changed),
                "{before} → {after}"
            );
            assert_eq!((row.before.as_str(), row.after.as_str()), (before, after));
            match unproven {
                Some(want) => {
                    let said = row.unproven.as_deref().unwrap_or_default();
                    assert!(said.contains(want), "{before} → {after}: {said}");
                    assert!(said.contains("not proven by the data plane"), "{said}");
                    // Said in verify too, as a row that does not fail.
                    let rows = verify_rows(&c, "VPNGateway ns/acme");
                    assert!(
                        rows.iter()
                            .any(|v| v.what == "CHILD SA net ESP algorithms: not proven"
                                && v.verdict == crate::core::verify::Verdict::Ok
                                && v.detail.contains(want)),
                        "{rows:?}"
                    );
                }
                None => assert_eq!(row.unproven, None, "{before} → {after}"),
            }
        }
        // IKE algorithms: the same rule; a changed DH group of the IKE SA fails.
        for (before, after, changed) in [
            ("CURVE_25519", "CURVE_25519", false),
            ("CURVE_25519", "MODP_2048", true),
            ("CURVE_25519", "ECP_256", true),
        ] {
            let side = |g: &str| {
                facts(&sample("08").replace(
                    "PRF_HMAC_SHA2_256/CURVE_25519",
                    &format!("PRF_HMAC_SHA2_256/{g}"),
                ))
            };
            let c = compare(&side(before), &side(after));
            let row = c.rows.iter().find(|r| r.fact == "IKE algorithms").unwrap();
            assert_eq!(
                (row.fails, row.unproven.is_none()),
                (changed, true),
                "{after}"
            );
        }
    }

    /// An IPv4-mapped IPv6 address or identity is IPv6 to strongSwan and the kernel:
    /// never identical to the IPv4 one (issue 21 item 6). Rows: (what is mapped in the
    /// baseline, the fact that must read CHANGED).
    #[test]
    fn an_ipv4_mapped_value_is_a_change_of_family() {
        let table = [
            // The given members: remote address, local address, local identity.
            (
                "@ 192.168.0.1[4500]",
                "@ ::ffff:192.168.0.1[4500]",
                "remote address",
            ),
            (
                "@ 192.168.0.100[4500]",
                "@ ::ffff:192.168.0.100[4500]",
                "local address",
            ),
            (
                "local  'user1@example.com'",
                "local  '::ffff:192.168.0.100'",
                "local identity",
            ),
            // Members of our own: the remote identity, both selectors.
            (
                "remote 'moon.example.net'",
                "remote '::ffff:192.168.0.1'",
                "remote identity",
            ),
            (
                "local  192.168.0.100/32",
                "local  ::ffff:192.168.0.100/128",
                "local traffic selectors",
            ),
            (
                "remote 10.1.0.0/16",
                "remote ::ffff:10.1.0.0/112",
                "remote traffic selectors",
            ),
        ];
        for (from, to, fact) in table {
            let ipv4 = sample("08")
                .replace("local  'user1@example.com'", "local  '192.168.0.100'")
                .replace("remote 'moon.example.net'", "remote '192.168.0.1'");
            let (from, to) = (
                from.replace("user1@example.com", "192.168.0.100")
                    .replace("moon.example.net", "192.168.0.1"),
                to,
            );
            let mapped = ipv4.replace(&from, to);
            assert_ne!(mapped, ipv4, "{from}");
            for (before, after) in [(&mapped, &ipv4), (&ipv4, &mapped)] {
                let c = compare(&facts(before), &facts(after));
                assert!(c.failed(), "{fact}: {:?}", differences(&c));
                assert!(
                    c.failures()
                        .iter()
                        .any(|r| r.fact == fact && r.verdict == FactVerdict::Changed),
                    "{fact}: {:?}",
                    c.failures()
                );
            }
            // The mapped form in another IPv6 spelling is the same address.
            let spelled = mapped
                .replace("::ffff:192.168.0.100", "::FFFF:c0a8:64")
                .replace("::ffff:192.168.0.1", "0:0:0:0:0:FFFF:c0a8:1");
            assert!(
                !compare(&facts(&mapped), &facts(&spelled)).failed(),
                "{fact}"
            );
        }
    }

    /// One IKE SA in swanctl's form, with at most one CHILD SA.
    fn ike_sa(uid: u64, state: &str, ike: &str, child: Option<(u64, &str, &str)>) -> String {
        let mut s = format!(
            "home: #{uid}, {state}, IKEv2, {uid:016x}_i* cea64d4a303e0ca2_r\n  local  'user1@example.com' @ 192.168.0.100[4500]\n  remote 'moon.example.net' @ 192.168.0.1[4500]\n  {ike}\n  established 1s ago, rekeying in 14043s\n"
        );
        if let Some((cuid, esp, remote)) = child {
            s.push_str(&format!(
                "  net: #{cuid}, reqid 1, INSTALLED, TUNNEL, ESP:{esp}\n    installed 1s ago, rekeying in 3397s, expires in 3959s\n    in  c{cuid:07x},     84 bytes,     1 packets,     0s ago\n    out d{cuid:07x},     84 bytes,     1 packets,     0s ago\n    local  192.168.0.100/32\n    remote {remote}\n"
            ));
        }
        s
    }

    /// Every IKE SA of a peer is compared, whatever the order swanctl lists them in:
    /// duplicates, simultaneous initiation, a first SA without CHILD SAs (issue 21 item
    /// 6). Rows: (before, after, fails?, a failing fact or "").
    #[test]
    fn every_ike_sa_of_a_peer_is_compared() {
        const IKE: &str = "AES_CBC-128/HMAC_SHA2_256_128/PRF_HMAC_SHA2_256/CURVE_25519";
        const OTHER: &str = "AES_CBC-256/HMAC_SHA2_256_128/PRF_HMAC_SHA2_256/MODP_2048";
        let one = ike_sa(
            1,
            "ESTABLISHED",
            IKE,
            Some((1, "AES_GCM_16-128", "10.1.0.0/16")),
        );
        let bare = |uid| ike_sa(uid, "ESTABLISHED", IKE, None);
        let with = |uid, cuid| {
            ike_sa(
                uid,
                "ESTABLISHED",
                IKE,
                Some((cuid, "AES_GCM_16-128", "10.1.0.0/16")),
            )
        };
        let table: Vec<(&str, String, String, bool, &str)> = vec![
            ("one and one", one.clone(), with(7, 3), false, ""),
            // Simultaneous initiation: the first IKE SA listed lost the CHILD SA.
            (
                "after: first without CHILD",
                one.clone(),
                bare(7) + &with(8, 3),
                false,
                "",
            ),
            (
                "after: second without CHILD",
                one.clone(),
                with(7, 3) + &bare(8),
                false,
                "",
            ),
            (
                "before: first without CHILD",
                bare(1) + &with(2, 1),
                with(7, 3),
                false,
                "",
            ),
            // Both IKE SAs keep a CHILD SA of the same selectors until charon deletes one.
            (
                "after: duplicate CHILD SAs",
                one.clone(),
                with(7, 3) + &with(8, 4),
                false,
                "",
            ),
            (
                "before: duplicate CHILD SAs",
                with(1, 1) + &with(2, 2),
                with(7, 3),
                false,
                "",
            ),
            // A second IKE SA with other algorithms (a re-authentication): compared.
            (
                "after: second IKE SA with other algorithms",
                one.clone(),
                with(7, 3) + &ike_sa(8, "ESTABLISHED", OTHER, None),
                true,
                "IKE algorithms",
            ),
            (
                "after: first IKE SA with other algorithms",
                one.clone(),
                ike_sa(6, "ESTABLISHED", OTHER, None) + &with(7, 3),
                true,
                "IKE algorithms",
            ),
            (
                "before: second IKE SA with other algorithms",
                one.clone() + &ike_sa(2, "ESTABLISHED", OTHER, None),
                with(7, 3),
                true,
                "IKE algorithms",
            ),
            // A CHILD SA on the second IKE SA that differs is found and compared.
            (
                "after: the CHILD SA of the second differs",
                one.clone(),
                bare(7)
                    + &ike_sa(
                        8,
                        "ESTABLISHED",
                        IKE,
                        Some((3, "AES_GCM_16-128", "10.1.0.0/24")),
                    ),
                true,
                "remote traffic selectors",
            ),
            // REKEYING without installed CHILD SAs is not a tunnel up.
            (
                "after: REKEYING without CHILD SAs, then ESTABLISHED",
                one.clone(),
                ike_sa(6, "REKEYING", OTHER, None) + &with(7, 3),
                false,
                "",
            ),
            (
                "after: only an IKE SA without CHILD SAs",
                one.clone(),
                bare(7),
                true,
                "CHILD SA",
            ),
        ];
        for (what, before, after, fails, fact) in table {
            let (b, a) = (facts(&before), facts(&after));
            assert_eq!((b.peers(), a.peers()), (1, 1), "{what}");
            let c = compare(&b, &a);
            assert_eq!(c.failed(), fails, "{what}: {:?}", c.failures());
            assert!(
                !c.rows.iter().any(|r| r.verdict == FactVerdict::Added),
                "{what}: {:?}",
                differences(&c)
            );
            if fails {
                assert!(
                    c.failures().iter().any(|r| r.fact == fact),
                    "{what}: {:?}",
                    c.failures()
                );
            }
            // Every ESTABLISHED IKE SA of either side has its IKE algorithms compared.
            let compared = c.rows.iter().filter(|r| r.fact == "IKE algorithms").count();
            assert_eq!(compared, b.tunnels.len().max(a.tunnels.len()), "{what}");
        }
        // The labels name the IKE SAs when a peer has several.
        let c = compare(&facts(&one), &facts(&(bare(7) + &with(8, 3))));
        let labels: Vec<&str> = c
            .rows
            .iter()
            .filter(|r| r.fact == "IKE version")
            .map(|r| r.tunnel.as_str())
            .collect();
        assert_eq!(
            labels,
            [
                "moon.example.net @ 192.168.0.1 (IKE SA #1 → #8)",
                "moon.example.net @ 192.168.0.1 (IKE SA #1 → #7)"
            ]
        );
        assert_eq!(facts(&(with(1, 1) + &with(2, 2))).child_names(), ["net"]);
    }

    #[test]
    fn the_human_form_and_the_raw_form_give_the_same_facts() {
        let human = "VyOS-B: #1, ESTABLISHED, IKEv2, 94fe0de3ab9ca06a_i* 9c1f4b059b81071d_r
  local  '10.1.5.10' @ 10.1.5.10[4500]
  remote '10.1.8.10' @ 10.1.8.10[4500]
  AES_CBC-256/HMAC_SHA2_256_128/PRF_HMAC_SHA2_256/ECP_256
  established 1866s ago, rekeying in 26451s
  VyOS-B-tunnel-1: #1, reqid 1, INSTALLED, TUNNEL, ESP:AES_CBC-256/HMAC_SHA2_256_128
    installed 1866s ago, rekeying in 1206s, expires in 1734s
    in  cafe0be1,    588 bytes,     7 packets
    out c351239f,    588 bytes,     7 packets
    local  10.244.1.0/24
    remote 10.244.2.0/24
";
        assert_eq!(facts(human), facts(sample("15")));
    }
}
