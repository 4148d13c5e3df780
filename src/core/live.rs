//! Checks that need what only a cluster knows, decided here from facts the cluster layer
//! fetched (pure): whether the new objects already exist (and equal the plan: already
//! migrated), whether another gateway holds the same floating IP or service CIDR, what
//! the API server's dry run said, and which permissions the cutover and rollback need.
//!
//! Layer 3 (the plan): imports only from layers 0 to 3; see docs/architecture.md.

use serde::Serialize;
use serde_json::Value;

use crate::core::addr;
use crate::core::finding::{CheckResult, Finding, Outcome, Severity, finding, result};
use crate::core::plan::Plan;

/// How a gateway claims a floating IP (a21r R12): it pins it in its spec, it holds it
/// (its status's floatingIP: the operator associated it with it), or both. Under the
/// operator's contract (DESIGN §2) a gateway's cleanup releases its floating IP to the
/// pool unless its spec pins it: a holder must be deleted while it pins it, never
/// unpinned first. One that only pins it holds nothing (it waits at AlreadyAssociated).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FipClaim {
    pub pins: bool,
    pub holds: bool,
}

impl FipClaim {
    /// How gateway `obj` (either kind, as read) claims any of `fips`, compared as
    /// addresses (`same_addr`).
    pub fn of(obj: &Value, fips: &[String]) -> FipClaim {
        let is = |p: &str| {
            obj.pointer(p)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|f| !f.is_empty())
                .is_some_and(|f| fips.iter().any(|x| addr::same_addr(x, f)))
        };
        FipClaim {
            pins: is("/spec/endpoint/floatingIP"),
            holds: is("/status/floatingIP"),
        }
    }

    /// Whether it claims it at all: one that neither pins nor holds it is no claimant.
    pub fn any(self) -> bool {
        self.pins || self.holds
    }

    /// How it claims it, said.
    pub fn said(self) -> &'static str {
        match (self.holds, self.pins) {
            (true, true) => "holds it (status.floatingIP) and pins it in spec",
            (true, false) => {
                "holds it (status.floatingIP) and does NOT pin it in spec: deleted as it is, its cleanup releases it to the pool"
            }
            (false, true) => {
                "pins it in spec and holds nothing (it waits at FIPAttached=False, AlreadyAssociated)"
            }
            (false, false) => "claims it no more",
        }
    }

    /// The way out that keeps floating IP `fip` for the client, for claimant
    /// `kind/name -n ns`: a holder keeps (or gets back) its pin and is deleted; one that
    /// only pins it is deleted or unpinned (safe: it holds nothing).
    pub fn way_out(self, kind: &str, name: &str, ns: &str, fip: &str) -> String {
        let delete = format!("`kubectl delete {} {name} -n {ns}`", kind.to_lowercase());
        match (self.holds, self.pins) {
            (true, true) => format!(
                "delete it while its spec still pins {fip} ({delete}): its cleanup then keeps the floating IP out of the pool; never take the floating IP out of its spec first, that would release it to the pool"
            ),
            (true, false) => format!(
                "pin {fip} on it again first (`{}`), then delete it ({delete}): deleted unpinned, its cleanup would release the floating IP to the pool",
                crate::core::scope::pin_command(kind, name, ns, fip)
            ),
            (false, true) => format!(
                "delete it ({delete}), or take the floating IP out of its spec (safe: it holds nothing)"
            ),
            (false, false) => String::new(),
        }
    }
}

/// Another gateway in the cluster (either kind), as far as uniqueness goes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OtherGateway {
    /// `Kind namespace/name`.
    pub object: String,
    pub floating_ip: Option<String>,
    pub service_cidr: Option<String>,
    /// An IPsecGateway not migrated yet: the VPNPeer names its own cutover would create,
    /// `(tunnel, name)` (`core::translate::peer_name`), in its namespace `namespace`.
    pub future_peers: Vec<(String, String)>,
    pub namespace: String,
    /// Its name (the gateway's, not `object`).
    pub name: String,
}

impl OtherGateway {
    /// An IPsecGateway as another gateway: its floating IP (pinned, else the status's),
    /// its service CIDR (status) and the VPNPeer names its own cutover would create.
    pub fn from_ipsec(g: &crate::core::model::IPsecGateway) -> OtherGateway {
        let st = g.status.clone().unwrap_or_default();
        let name = g.metadata.name.clone().unwrap_or_default();
        let n = g.spec.tunnels.len();
        let future_peers = g
            .spec
            .tunnels
            .iter()
            .map(|t| {
                let peer = crate::core::translate::peer_name(&name, &t.name, n);
                (t.name.clone(), peer)
            })
            .collect();
        let fip = g.spec.endpoint.pinned_fip().map(str::to_string);
        Self::of(
            "IPsecGateway",
            &g.metadata,
            fip.or(st.floating_ip),
            st.service_cidr,
            future_peers,
        )
    }

    /// A VPNGateway as another gateway (spec values first, else the status's).
    pub fn from_vpn(g: &crate::core::model::VPNGateway) -> OtherGateway {
        let st = g.status.clone().unwrap_or_default();
        let fip = g.spec.endpoint.pinned_fip().map(str::to_string);
        let cidr = g.spec.service_cidr.clone().or(st.service_cidr);
        Self::of(
            "VPNGateway",
            &g.metadata,
            fip.or(st.floating_ip),
            cidr,
            Vec::new(),
        )
    }

    fn of(
        kind: &str,
        meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
        floating_ip: Option<String>,
        service_cidr: Option<String>,
        future_peers: Vec<(String, String)>,
    ) -> OtherGateway {
        let namespace = meta.namespace.clone().unwrap_or_default();
        let name = meta.name.clone().unwrap_or_default();
        OtherGateway {
            object: format!("{kind} {namespace}/{name}"),
            floating_ip,
            service_cidr,
            future_peers,
            namespace,
            name,
        }
    }
}

/// Whose an existing object is when it is not this gateway's: a VPNPeer whose gatewayRef
/// or migrated-from annotation names another gateway, as words.
fn owner_of(obj: &Value, me: &str) -> Option<String> {
    let gateway_ref = obj.pointer("/spec/gatewayRef/name").and_then(Value::as_str);
    let from = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(crate::core::translate::MIGRATED_FROM))
        .and_then(Value::as_str)
        .and_then(|f| f.rsplit('/').next());
    match (gateway_ref, from) {
        (Some(g), _) if g != me => Some(format!(
            "the VPNPeer of gateway {g}: its spec.gatewayRef.name says so"
        )),
        (_, Some(f)) if f != me => Some(format!(
            "migrated from IPsecGateway {f}: its migrated-from annotation says so"
        )),
        _ => None,
    }
}

/// The longest label value Kubernetes accepts (`core::checks`' `peer-name-length`).
pub const LABEL_VALUE_MAX: usize = crate::core::limits::LABEL_VALUE_MAX;

/// Whether `theirs` (a gateway not migrated yet whose tunnel `their_tunnel` derives the
/// same VPNPeer name) owns the name rather than `mine` (issue 9 item 7). A single-tunnel
/// gateway's peer is named like the gateway itself, so that gateway is the name's natural
/// owner; between two derived names, the gateway whose name sorts first owns it. Every
/// gateway judges the same way, so exactly one of two colliding plans is blocked.
fn owns_before(theirs: &OtherGateway, mine: &str, my_tunnels: usize, peer: &str) -> bool {
    let their_single = theirs.future_peers.len() == 1 && theirs.name == peer;
    let my_single = my_tunnels == 1 && mine == peer;
    their_single || (!my_single && theirs.name.as_str() < mine)
}

/// `peer-names-unique` (issue 9 item 7): no VPNPeer name of this plan is also one another
/// gateway of the namespace will derive for its own cutover; a name that gateway owns
/// blocks this plan with the way out (`--peer-name`), and a name this plan owns is a
/// warning on the other gateway's behalf. `plan` holds the peer names after overrides.
pub fn peer_name_checks(
    plan: &Plan,
    tunnel_names: &[String],
    others: &Result<Vec<OtherGateway>, String>,
) -> Vec<CheckResult> {
    let ns = plan.source.namespace.clone().unwrap_or_default();
    let me = plan.source.name.as_str();
    match others {
        Err(why) => peer_name_results(vec![unlisted("VPNPeer name", why)], Vec::new()),
        Ok(others) => peer_name_checks_by(
            plan,
            tunnel_names,
            |peer| {
                others
                    .iter()
                    .filter(|o| o.namespace == ns && o.name != me)
                    .filter(|o| o.future_peers.iter().any(|(_, n)| n == peer))
                    .collect()
            },
            |name| {
                others
                    .iter()
                    .any(|o| o.future_peers.iter().any(|(_, f)| f == name))
            },
        ),
    }
}

/// The future VPNPeer names of one namespace's IPsecGateways, indexed once (`status -A`
/// over a fleet): [`PeerNames::checks`] judges a gateway exactly as [`peer_name_checks`]
/// does with every other gateway of the namespace as `others`, at the cost of the names
/// it looks up instead of the namespace's size.
#[derive(Debug, Default)]
pub struct PeerNames<'a> {
    gateways: Vec<&'a OtherGateway>,
    /// Each future VPNPeer name: the positions in `gateways` that derive it, in order,
    /// each once.
    by_name: std::collections::HashMap<&'a str, Vec<usize>>,
}

impl<'a> PeerNames<'a> {
    /// The index of `gateways`: one namespace's, in the order `others` would list them.
    pub fn new(gateways: impl IntoIterator<Item = &'a OtherGateway>) -> PeerNames<'a> {
        let mut index = PeerNames::default();
        for (i, o) in gateways.into_iter().enumerate() {
            for (_, name) in &o.future_peers {
                let at = index.by_name.entry(name.as_str()).or_default();
                if at.last() != Some(&i) {
                    at.push(i);
                }
            }
            index.gateways.push(o);
        }
        index
    }

    /// `peer-names-unique` and `peer-names-shared` of `plan`, whose gateway is one of the
    /// namespace's (it is left out of the others by name, as `status` leaves it out).
    pub fn checks(&self, plan: &Plan, tunnel_names: &[String]) -> Vec<CheckResult> {
        let ns = plan.source.namespace.clone().unwrap_or_default();
        let me = plan.source.name.as_str();
        let deriving = |name: &str| -> Vec<&OtherGateway> {
            self.by_name
                .get(name)
                .into_iter()
                .flatten()
                .map(|&i| self.gateways[i])
                .filter(|o| o.namespace == ns && o.name != me)
                .collect()
        };
        let taken = |name: &str| {
            self.by_name
                .get(name)
                .into_iter()
                .flatten()
                .any(|&i| self.gateways[i].name != me)
        };
        peer_name_checks_by(plan, tunnel_names, deriving, taken)
    }
}

/// [`peer_name_checks`] with the other gateways given by two lookups: `deriving(peer)`,
/// the other gateways of the plan's namespace that derive VPNPeer name `peer`, in the
/// order of `others`; `taken(name)`, whether any other gateway derives `name`.
fn peer_name_checks_by<'o>(
    plan: &Plan,
    tunnel_names: &[String],
    deriving: impl Fn(&str) -> Vec<&'o OtherGateway>,
    taken: impl Fn(&str) -> bool,
) -> Vec<CheckResult> {
    let ns = plan.source.namespace.clone().unwrap_or_default();
    let me = plan.source.name.as_str();
    let tunnels: Vec<String> = plan
        .targets
        .peers
        .iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect();
    let mut blocking = Vec::new();
    let mut warnings = Vec::new();
    for (i, peer) in tunnels.iter().enumerate() {
        let tunnel = tunnel_names.get(i).cloned().unwrap_or_default();
        for o in deriving(peer) {
            let Some((their_tunnel, _)) = o.future_peers.iter().find(|(_, n)| n == peer) else {
                continue;
            };
            let what = format!("VPNPeer {ns}/{peer}");
            if owns_before(o, me, tunnels.len(), peer) {
                let free = (2..)
                    .map(|k| format!("{peer}-{k}"))
                    .find(|n| !taken(n) && !tunnels.contains(n))
                    .expect("a free name exists");
                blocking.push(finding(
                    &what,
                    "metadata.name",
                    peer.clone(),
                    "a VPNPeer name no other gateway of the namespace uses",
                    format!(
                        "IPsecGateway {ns}/{} will create VPNPeer {peer} for its tunnel {their_tunnel} and owns that name: whichever migrates first takes it, and the other could never migrate",
                        o.name
                    ),
                    Some(format!(
                        "give this gateway's tunnel {tunnel} another peer name: `vpnmig plan {me} -n {ns} --peer-name {tunnel}={free}` (recorded in the plan; the cutover uses it); never delete the other gateway's peer"
                    )),
                ));
            } else {
                warnings.push(finding(
                    &what,
                    "metadata.name",
                    peer.clone(),
                    "a VPNPeer name no other gateway of the namespace uses",
                    format!(
                        "IPsecGateway {ns}/{} would derive the same name for its tunnel {their_tunnel}; this gateway owns it, so that one's plan is blocked until it picks another with --peer-name",
                        o.name
                    ),
                    None,
                ));
            }
        }
    }
    peer_name_results(blocking, warnings)
}

fn peer_name_results(blocking: Vec<Finding>, warnings: Vec<Finding>) -> Vec<CheckResult> {
    vec![
        result(
            "peer-names-unique",
            Severity::Blocker,
            "no other gateway of the namespace will create the same VPNPeer names",
            Ok(blocking),
        ),
        result(
            "peer-names-shared",
            Severity::Warning,
            "no other gateway of the namespace derives a VPNPeer name this one owns",
            Ok(warnings),
        ),
    ]
}

/// A finding for a fact that could not be read because the API server refused to tell
/// (401/403): the check fails, it is never skipped (issue 9 item 0: "could not ask" is
/// no verdict, so a plan is never READY on it). No answer at all ends the command
/// before the checks (`cluster::facts`).
fn cannot_read(object: &str, wanted: &str, message: String, fix: &str) -> Finding {
    finding(
        object,
        "",
        "<cannot read>",
        wanted,
        message,
        Some(fix.into()),
    )
}

/// [`cannot_read`] for the other gateways, which the uniqueness checks compare with.
fn unlisted(what: &str, why: &str) -> Finding {
    cannot_read(
        "IPsecGateways and VPNGateways in all namespaces",
        &format!("every other gateway's {what}"),
        format!(
            "the other gateways could not be listed, so no other gateway is known not to hold this {what}: {why}"
        ),
        "ask for `list ipsecgateways,vpngateways` in all namespaces (a ClusterRole), or plan with a context that has it",
    )
}

/// What the cluster said.
#[derive(Clone, Debug)]
pub struct Facts {
    /// Live objects with the targets' names, cleaned of status and server-set metadata:
    /// `(Kind/name, object)`; absent ones are not listed.
    pub existing: Vec<(String, Value)>,
    /// Every gateway of either kind in the cluster except the source and its targets;
    /// `Err(why)` when it could not be listed.
    pub others: Result<Vec<OtherGateway>, String>,
    /// The server-side dry run of each target, when asked for: `(Kind/name, error)`.
    pub dry_run: Option<Vec<(String, Option<DryRunError>)>>,
    /// SelfSubjectAccessReviews of what cutover and rollback need: `(need, allowed)`;
    /// `Err(why)` when they could not be asked.
    pub permissions: Result<Vec<(String, bool)>, String>,
    /// Each target validated against the cluster's CRD: `(Kind/name, report)`; `Err(why)`
    /// when the CRDs could not be read.
    pub schema: Result<Vec<(String, crate::core::schema::Report)>, String>,
    /// The VPNPeers of the namespace that already name the gateway in
    /// `spec.gatewayRef.name` and are none of the plan's targets; `Err(why)` when the
    /// VPNPeers could not be listed.
    pub strays: Result<Vec<String>, String>,
}

/// Names of the VPNPeers among `peers` (live objects) of namespace `ns` that name gateway
/// `gateway` in `spec.gatewayRef.name` and are not among `targets` (the plan's VPNPeer
/// names): what the operator would count as peers of the new gateway besides the plan's.
pub fn strays<'a>(
    peers: impl IntoIterator<Item = &'a Value>,
    ns: &str,
    gateway: &str,
    targets: &[String],
) -> Vec<String> {
    let mut out: Vec<String> = peers
        .into_iter()
        .filter(|p| {
            p.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns)
                && p.pointer("/spec/gatewayRef/name").and_then(Value::as_str) == Some(gateway)
        })
        .filter_map(|p| p.pointer("/metadata/name").and_then(Value::as_str))
        .filter(|n| !targets.iter().any(|t| t == n))
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `authorization-grants` judged again with what only the cluster knows (issue 21 item
/// 9): the VPNPeers that already name the gateway count as its peers, as the operator
/// counts them. When they could not be listed, that is a finding, never a pass.
pub fn authorization_check(plan: &Plan, strays: &Result<Vec<String>, String>) -> CheckResult {
    let (id, severity, title, _) = crate::core::checks::CHECKS
        .iter()
        .find(|(id, ..)| *id == "authorization-grants")
        .expect("authorization-grants is a check");
    let ns = plan.source.namespace.as_deref();
    let found = match strays {
        Ok(s) => crate::core::checks::authorization(ns, &plan.source.name, &plan.targets, s),
        Err(why) => vec![cannot_read(
            &format!("VPNPeers in namespace {}", ns.unwrap_or_default()),
            "every VPNPeer that names the gateway (the operator counts them as its peers)",
            format!(
                "the VPNPeers could not be listed, so how many peers the new gateway would have, and so whether each is authorized, is unknown: {why}"
            ),
            "ask for `list vpnpeers` in the namespace, or plan with a context that has it",
        )],
    };
    result(id, *severity, title, Ok(found))
}

/// A target the API server refused in the dry run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DryRunError {
    pub message: String,
    /// The name of an admission webhook that cannot dry-run: a warning, not a failure
    /// (see [`webhook_without_dry_run`]).
    pub webhook_cannot_dry_run: Option<String>,
}

/// The webhook named in kube-apiserver's refusal of a dry run by a webhook whose
/// sideEffects are `Some` or `Unknown`: `admission webhook "NAME" does not support dry
/// run` (apiserver's `webhookerrors.NewDryRunUnsupportedErr`). `None` for any other message.
pub fn webhook_without_dry_run(message: &str) -> Option<String> {
    const HEAD: &str = "admission webhook \"";
    const TAIL: &str = "\" does not support dry run";
    let start = message.find(HEAD)? + HEAD.len();
    let len = message[start..].find(TAIL)?;
    let name = &message[start..start + len];
    (!name.is_empty() && !name.contains('"')).then(|| name.to_string())
}

/// The webhooks that cannot dry-run and are not named by `--skip-dry-run-webhook`, in
/// first-seen order, each once: a cutover must not go on while this is not empty.
pub fn unskipped_webhooks<'a>(
    seen: impl IntoIterator<Item = &'a str>,
    skip: &[String],
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in seen {
        if !skip.iter().any(|s| s == w) && !out.iter().any(|o| o == w) {
            out.push(w.to_string());
        }
    }
    out
}

/// The webhooks the plan's dry run found unable to dry-run (check `dry-run-webhooks`),
/// in the order found.
pub fn webhooks_in_plan(plan: &crate::core::plan::Plan) -> Vec<&str> {
    plan.checks
        .iter()
        .filter(|c| c.id == "dry-run-webhooks")
        .flat_map(|c| &c.findings)
        .filter_map(|f| {
            let start = f.seen.find("admission webhook \"")? + "admission webhook \"".len();
            let len = f.seen[start..].find('"')?;
            webhook_without_dry_run(&f.seen).map(|_| &f.seen[start..start + len])
        })
        .collect()
}

/// `--skip-dry-run-webhook A --skip-dry-run-webhook B`: the flags that let a cutover go
/// on past these webhooks.
pub fn skip_flags(webhooks: &[String]) -> String {
    webhooks
        .iter()
        .map(|w| format!("--skip-dry-run-webhook {w}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether the live objects already are the plan.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Migrated {
    /// None of the targets exist.
    No,
    /// Every target exists and equals the plan.
    Already,
}

/// `fip-unique` and `service-cidr-unique`: no gateway of `others` (either kind, the
/// source and its targets left out) holds this plan's floating IP or a service CIDR that
/// overlaps its own. Shared by the live plan and the fleet plan (whose `others` are the
/// gateways it found could clash, `core::fleet`).
pub fn unique_checks(plan: &Plan, others: &Result<Vec<OtherGateway>, String>) -> Vec<CheckResult> {
    let mut out = Vec::new();
    let fip = plan.targets.gateway.spec.endpoint.floating_ip.clone();
    let cidr = plan.targets.gateway.spec.service_cidr.clone();
    // Compared parsed (issue 9 item 4): the same floating IP spelled another way is the
    // same address, and a service CIDR that overlaps another gateway's (a /16 holding
    // this /24) clashes as surely as an equal one.
    let unique = |what: &str,
                  mine: &Option<String>,
                  theirs: fn(&OtherGateway) -> &Option<String>,
                  clash: fn(&str, &str) -> bool|
     -> Result<Vec<Finding>, String> {
        let others = match others {
            Ok(o) => o,
            Err(why) => return Ok(vec![unlisted(what, why)]),
        };
        let Some(mine) = mine else {
            return Ok(Vec::new());
        };
        Ok(others
            .iter()
            .filter_map(|o| theirs(o).as_deref().filter(|t| clash(t, mine)).map(|t| (o, t)))
            .map(|(o, t)| finding(&o.object, "", t.to_string(), format!("a {what} no other gateway uses"), format!("{} also holds {what} {t}{}: the new gateway would sit at AlreadyAssociated or clash", o.object, if t == mine.as_str() { String::new() } else { format!(" (this gateway's: {mine})") }), Some("find out which gateway owns it before the window".into())))
            .collect())
    };
    out.push(result(
        "fip-unique",
        Severity::Blocker,
        "no other gateway holds the floating IP",
        unique("floating IP", &fip, |o| &o.floating_ip, addr::same_addr),
    ));
    out.push(result(
        "service-cidr-unique",
        Severity::Blocker,
        "no other gateway holds the service CIDR",
        unique(
            "service CIDR",
            &cidr,
            |o| &o.service_cidr,
            |a, b| match (addr::net(a), addr::net(b)) {
                (Some(x), Some(y)) => addr::overlaps(&x, &y),
                _ => a.trim() == b.trim(),
            },
        ),
    ));

    out
}

/// The live checks for `plan` and whether the targets already exist as planned.
pub fn checks(plan: &Plan, facts: &Facts) -> (Vec<CheckResult>, Migrated) {
    let ns = plan.source.namespace.clone().unwrap_or_default();
    let targets = plan.targets.objects();
    let mut clashes = Vec::new();
    let mut equal = 0;
    for (label, obj) in &targets {
        if let Some((_, live)) = facts.existing.iter().find(|(l, _)| l == label) {
            if live["spec"] == obj["spec"] {
                equal += 1;
            } else {
                let (kind, name) = label.split_once('/').unwrap_or((label, ""));
                clashes.push(finding(
                    &format!("{kind} {ns}/{name}"),
                    "spec",
                    "an existing object with another spec",
                    "no object of that name, or this plan's",
                    format!("{label} already exists and differs from the plan: applying would overwrite it{}", owner_of(live, &plan.source.name).map(|o| format!(" (it is {o})")).unwrap_or_default()),
                    Some(match owner_of(live, &plan.source.name) {
                        // Another gateway's live peer: never advise deleting it (issue 9 item 7).
                        Some(_) => format!("never delete it: give this gateway's tunnel another peer name with `vpnmig plan {} -n {ns} --peer-name TUNNEL=NAME` (recorded in the plan; the cutover uses it)", plan.source.name),
                        None => format!("inspect it (`kubectl get {} {name} -n {ns} -o yaml`); delete it if it is a leftover, then plan again", kind.to_lowercase()),
                    }),
                ));
            }
        }
    }
    let migrated = if equal == targets.len() && clashes.is_empty() {
        Migrated::Already
    } else {
        Migrated::No
    };
    let mut out = vec![result(
        "targets-free",
        Severity::Blocker,
        "no other object holds the new names",
        Ok(clashes),
    )];

    out.extend(unique_checks(plan, &facts.others));

    let dry = match &facts.dry_run {
        None => Err("not asked for; pass --server-dry-run to have the API server validate and admit the targets".to_string()),
        Some(results) => Ok(results
            .iter()
            .filter_map(|(label, e)| e.as_ref().map(|e| (label, e)))
            .filter(|(_, e)| e.webhook_cannot_dry_run.is_none())
            .map(|(label, e)| finding(label, "", e.message.clone(), "accepted", format!("the API server refused {label} in a dry run"), None))
            .collect()),
    };
    out.push(result(
        "server-dry-run",
        Severity::Blocker,
        "the API server accepts the targets (dryRun=All)",
        dry,
    ));
    if let Some(results) = &facts.dry_run {
        let webhooks: Vec<Finding> = results
            .iter()
            .filter_map(|(label, e)| {
                let e = e.as_ref()?;
                let webhook = e.webhook_cannot_dry_run.as_ref()?;
                Some(finding(
                    label,
                    "",
                    e.message.clone(),
                    "a webhook that supports dry run",
                    format!(
                        "admission webhook {webhook} cannot dry-run, so it has not validated {label}: the real apply after the delete may still be refused"
                    ),
                    Some(format!(
                        "cutover refuses until you accept that: pass `--skip-dry-run-webhook {webhook}` (or have the webhook declare sideEffects None/NoneOnDryRun)"
                    )),
                ))
            })
            .collect();
        out.push(result(
            "dry-run-webhooks",
            Severity::Warning,
            "every admission webhook could dry-run",
            Ok(webhooks),
        ));
    }

    let schema = match &facts.schema {
        Err(why) => Ok(vec![cannot_read(
            "CustomResourceDefinitions vpngateways.vpn.bnerd.net, vpnpeers.vpn.bnerd.net",
            "the CRDs the targets must satisfy",
            format!("the cluster's CRDs could not be read, so the targets are not validated against them: {why}"),
            "ask for `get customresourcedefinitions` (cluster-scoped), or plan with a context that has it",
        )]),
        Ok(reports) => Ok(reports
            .iter()
            .flat_map(|(label, r)| {
                let invalid = r.causes.iter().map(move |c| finding(label, &c.field, c.message.clone(), "valid per the cluster's CRD", format!("the cluster's CRD refuses {label}"), Some("the CRD installed differs from vpnmig's model (docs/model.md): compare `kubectl get crd -o yaml` with fixtures/crds/".into())));
                let pruned = r.unknown.iter().map(move |f| finding(label, f, "a field the CRD does not know", "a field of the CRD", format!("the cluster's CRD would silently drop {f} of {label}"), None));
                invalid.chain(pruned)
            })
            .collect()),
    };
    out.push(result(
        "schema",
        Severity::Blocker,
        "the targets satisfy the cluster's CRD schemas in what vpnmig evaluates (type, required, enum, pattern, lengths, bounds, item counts)",
        schema,
    ));
    // What vpnmig does not evaluate of the CRDs is unchecked until the API server has
    // looked (a dry run that passed did): said, never claimed (attack finding).
    let ns = ns.as_str();
    let unchecked: Vec<Finding> = match (&facts.schema, &facts.dry_run) {
        (Ok(reports), None) => reports
            .iter()
            .filter(|(_, r)| !r.not_evaluated.is_empty())
            .map(|(label, r)| {
                finding(
                    label,
                    "",
                    r.not_evaluated.join(", "),
                    "evaluated by the API server",
                    format!(
                        "the cluster's CRD has {} rule(s) vpnmig does not evaluate on {label}: unchecked until the API server looks",
                        r.not_evaluated.len()
                    ),
                    Some(format!(
                        "`vpnmig plan {} -n {ns} --server-dry-run` has the API server evaluate them (cutover always does, before any change)",
                        plan.source.name
                    )),
                )
            })
            .collect(),
        _ => Vec::new(),
    };
    out.push(result(
        "schema-unevaluated",
        Severity::Warning,
        "every rule of the cluster's CRD schemas was evaluated (by vpnmig, or by the API server's dry run)",
        Ok(unchecked),
    ));

    let perms = match &facts.permissions {
        Err(why) => Ok(vec![cannot_read(
            "you",
            "an answer to a SelfSubjectAccessReview for each permission cutover and rollback need",
            format!(
                "the API server could not be asked what you may do, so no permission is checked: {why}"
            ),
            "ask for `create selfsubjectaccessreviews` (every authenticated user has it by default: system:basic-user), or use a context that has it",
        )]),
        Ok(p) => Ok(p
            .iter()
            .filter(|(_, allowed)| !allowed)
            .map(|(need, _)| {
                finding(
                    "you",
                    "",
                    "not allowed",
                    need.clone(),
                    format!("cutover or rollback needs to {need}"),
                    Some(
                        "ask for the permission before the window, or use a context that has it"
                            .into(),
                    ),
                )
            })
            .collect()),
    };
    out.push(result(
        "permissions",
        Severity::Blocker,
        "you may do everything cutover and rollback need",
        perms,
    ));
    out.push(authorization_check(plan, &facts.strays));
    (out, migrated)
}

/// Judge `plan` with what the cluster said, as `plan NAME`, the fleet plan and the
/// cutover's re-plan do: the live checks, the VPNPeer names against the other gateways
/// (`tunnels`: the source's tunnel names, in order), the operator's authorization with
/// the VPNPeers that already exist. Returns whether the targets already exist as planned.
/// Every check of the offline plan stays, with the same findings (issue 21 item 10): the
/// live ones only add what needs the cluster.
pub fn judge(plan: &mut Plan, tunnels: &[String], facts: &Facts) -> Migrated {
    let (mut checks, migrated) = checks(plan, facts);
    checks.extend(peer_name_checks(plan, tunnels, &facts.others));
    extend(plan, checks);
    migrated
}

/// Add `extra` checks to a plan (one with the id of a check the plan has replaces it,
/// where it is) and recount its summary and verdict.
pub fn extend(plan: &mut Plan, extra: Vec<CheckResult>) {
    for c in extra {
        match plan.checks.iter_mut().find(|p| p.id == c.id) {
            Some(p) => *p = c,
            None => plan.checks.push(c),
        }
    }
    plan.summary.blockers = plan.checks.iter().filter(|c| c.blocks()).count();
    plan.summary.warnings = plan
        .checks
        .iter()
        .filter(|c| c.severity == Severity::Warning && c.outcome == Outcome::Fail)
        .count();
    plan.blocked = plan.summary.blockers > 0;
}

/// What cutover and rollback will do, as `(verb, group, resource, subresource)`: asked of
/// the API server with SelfSubjectAccessReviews.
pub const NEEDS: &[(&str, &str, &str, &str)] = &[
    // The gateways: read, wait (list + watch), delete, re-create on rollback.
    ("get", "ipsec.bnerd.net", "ipsecgateways", ""),
    ("list", "ipsec.bnerd.net", "ipsecgateways", ""),
    ("watch", "ipsec.bnerd.net", "ipsecgateways", ""),
    ("delete", "ipsec.bnerd.net", "ipsecgateways", ""),
    ("create", "ipsec.bnerd.net", "ipsecgateways", ""),
    ("get", "vpn.bnerd.net", "vpngateways", ""),
    ("list", "vpn.bnerd.net", "vpngateways", ""),
    ("watch", "vpn.bnerd.net", "vpngateways", ""),
    // Server-side apply that creates an object is authorized as a create (issue 14 item 8).
    ("create", "vpn.bnerd.net", "vpngateways", ""),
    ("patch", "vpn.bnerd.net", "vpngateways", ""),
    ("delete", "vpn.bnerd.net", "vpngateways", ""),
    ("get", "vpn.bnerd.net", "vpnpeers", ""),
    ("list", "vpn.bnerd.net", "vpnpeers", ""),
    ("watch", "vpn.bnerd.net", "vpnpeers", ""),
    ("create", "vpn.bnerd.net", "vpnpeers", ""),
    ("patch", "vpn.bnerd.net", "vpnpeers", ""),
    ("delete", "vpn.bnerd.net", "vpnpeers", ""),
    // The PSK Secret: read, detach, guard during the unwind.
    ("get", "", "secrets", ""),
    ("watch", "", "secrets", ""),
    ("patch", "", "secrets", ""),
    // The journal (server-side apply is a patch) and the lock.
    ("get", "", "configmaps", ""),
    ("create", "", "configmaps", ""),
    ("patch", "", "configmaps", ""),
    ("get", "coordination.k8s.io", "leases", ""),
    ("create", "coordination.k8s.io", "leases", ""),
    ("update", "coordination.k8s.io", "leases", ""),
    ("delete", "coordination.k8s.io", "leases", ""),
    // The tunnels: the gateway's pod and swanctl in it.
    ("get", "apps", "deployments", ""),
    ("list", "", "pods", ""),
    // Exec is a websocket upgrade, a GET: kube-apiserver 1.37 authorizes it as `get`
    // pods/exec (and, with AuthorizePodWebsocketUpgradeCreatePermission, `create` too);
    // found when the generated account of issue 25 ran a window.
    ("get", "", "pods", "exec"),
    ("create", "", "pods", "exec"),
];

/// One permission a window asks for beyond [`NEEDS`] (a window on a gateway Argo CD or
/// Flux syncs): `verb` on `resource` (a plural) of API group `group`, in `namespace`
/// (`None`: every namespace), of the object `name` (`None`: any).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Need {
    pub verb: &'static str,
    pub group: String,
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

impl Need {
    /// `patch kustomizations named acme in namespace flux-system`, `list configmaps in
    /// all namespaces`: as the preflight names what is missing.
    pub fn display(&self) -> String {
        let named = self
            .name
            .as_ref()
            .map(|n| format!(" named {n}"))
            .unwrap_or_default();
        match &self.namespace {
            Some(ns) => format!("{} {}{named} in namespace {ns}", self.verb, self.resource),
            None => format!("{} {}{named} in all namespaces", self.verb, self.resource),
        }
    }
}

/// What a window on a gateway a GitOps owner syncs (`--gitops pause|ignore`) reads in
/// every namespace, as `(verb, group, resource)`: the journals (ConfigMaps labelled
/// `app.kubernetes.io/managed-by=vpnmig`) and the locks (Leases) of the other windows,
/// which say whether one of them holds the same owner suspended (an owner syncs many
/// tenants' gateways); a window's own journal and lock are in [`NEEDS`].
pub const GITOPS_CLUSTER_READS: &[(&str, &str, &str)] = &[
    ("list", "", "configmaps"),
    ("list", "coordination.k8s.io", "leases"),
];

/// The owners a window lists in every namespace, as `(apiVersion, kind)`, to find one
/// whose own status names the gateway or its Secret where their markers do not (a21l
/// A08: a second Kustomization's inventory listed the gateway). A window that may not
/// list them cannot tell whether such an owner exists: its preflight asks for `list` on
/// each the cluster serves ([`owner_list_need`]), and `schedule --gitops` grants it.
pub const GITOPS_OWNER_LISTS: &[(&str, &str)] = &[
    (crate::core::gitops::ARGO_APPLICATION, "Application"),
    (crate::core::gitops::FLUX_KUSTOMIZATION, "Kustomization"),
];

/// `list` of one of [`GITOPS_OWNER_LISTS`] in every namespace.
pub fn owner_list_need(api_version: &str, kind: &str) -> Need {
    Need {
        verb: "list",
        group: api_version
            .split_once('/')
            .map(|(g, _)| g)
            .unwrap_or_default()
            .to_string(),
        resource: format!("{}s", kind.to_lowercase()),
        namespace: None,
        name: None,
    }
}

/// [`GITOPS_CLUSTER_READS`] as needs, then the lists of every kind of
/// [`GITOPS_OWNER_LISTS`] (what `schedule --gitops` grants; a window's preflight asks
/// only for the owner kinds its cluster serves).
pub fn gitops_cluster_needs() -> Vec<Need> {
    GITOPS_CLUSTER_READS
        .iter()
        .map(|(verb, group, resource)| Need {
            verb,
            group: group.to_string(),
            resource: resource.to_string(),
            namespace: None,
            name: None,
        })
        .chain(
            GITOPS_OWNER_LISTS
                .iter()
                .map(|(api_version, kind)| owner_list_need(api_version, kind)),
        )
        .collect()
}

/// What a window asks of the GitOps owner `owner` (an Application, Kustomization or
/// HelmRelease): read it (`get` in its namespace, or, where its markers do not name the
/// namespace, `list` by name in every namespace), and with `suspends` (`--gitops pause`,
/// and the restore at the end) `patch` it, which needs its namespace.
pub fn owner_needs(owner: &crate::core::gitops::OwnerRef, suspends: bool) -> Vec<Need> {
    let group = owner
        .api_version
        .split_once('/')
        .map(|(g, _)| g)
        .unwrap_or_default()
        .to_string();
    let resource = format!("{}s", owner.kind.to_lowercase());
    let need = |verb, namespace: Option<&String>| Need {
        verb,
        group: group.clone(),
        resource: resource.clone(),
        namespace: namespace.cloned(),
        name: Some(owner.name.clone()),
    };
    let mut out = vec![match &owner.namespace {
        Some(ns) => need("get", Some(ns)),
        None => need("list", None),
    }];
    if suspends && let Some(ns) = &owner.namespace {
        out.push(need("patch", Some(ns)));
    }
    out
}

#[cfg(test)]
mod fip_claim_tests {
    use super::*;
    use serde_json::json;

    fn gw(pinned: Option<&str>, status: Option<&str>) -> Value {
        let mut g = json!({"kind": "IPsecGateway", "metadata": {"name": "c", "namespace": "n"}, "spec": {"endpoint": {}}});
        if let Some(p) = pinned {
            g["spec"]["endpoint"]["floatingIP"] = json!(p);
        }
        if let Some(s) = status {
            g["status"] = json!({"floatingIP": s});
        }
        g
    }

    #[test]
    fn a_holder_is_told_from_one_that_only_pins_it() {
        let fips = ["198.51.100.23".to_string()];
        let both = FipClaim::of(&gw(Some("198.51.100.23/32"), Some("198.51.100.23")), &fips);
        assert_eq!(
            both,
            FipClaim {
                pins: true,
                holds: true
            }
        );
        let unpinned = FipClaim::of(&gw(None, Some("198.51.100.23")), &fips);
        assert_eq!(
            unpinned,
            FipClaim {
                pins: false,
                holds: true
            }
        );
        let waits = FipClaim::of(&gw(Some("198.51.100.23"), None), &fips);
        assert_eq!(
            waits,
            FipClaim {
                pins: true,
                holds: false
            }
        );
        // Pins another address but holds this one: a holder still.
        let other = FipClaim::of(&gw(Some("198.51.100.99"), Some("198.51.100.23")), &fips);
        assert_eq!(
            other,
            FipClaim {
                pins: false,
                holds: true
            }
        );
        // Neither: no claimant (a21r R12: the check looped on one that claimed nothing).
        let none = FipClaim::of(&gw(None, Some("198.51.100.24")), &fips);
        assert!(!none.any());

        let pin = crate::core::scope::pin_command("IPsecGateway", "c", "n", "198.51.100.23");
        let w = unpinned.way_out("IPsecGateway", "c", "n", "198.51.100.23");
        assert!(w.starts_with(&format!("pin 198.51.100.23 on it again first (`{pin}`), then delete it (`kubectl delete ipsecgateway c -n n`)")), "{w}");
        let w = both.way_out("IPsecGateway", "c", "n", "198.51.100.23");
        assert!(w.starts_with("delete it while its spec still pins 198.51.100.23 (`kubectl delete ipsecgateway c -n n`)"), "{w}");
        assert!(!w.contains("take the floating IP out of its spec ("), "{w}");
        let w = waits.way_out("VPNGateway", "c", "n", "198.51.100.23");
        assert_eq!(
            w,
            "delete it (`kubectl delete vpngateway c -n n`), or take the floating IP out of its spec (safe: it holds nothing)"
        );
    }
}
