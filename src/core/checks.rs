//! Pre-flight checks on a translated plan (pure). Each check has a stable id, a severity
//! and, for every problem, a [`Finding`] naming the object, field path, value seen, value
//! wanted and the command that fixes it. Blockers stop a cutover; warnings do not.
//!
//! Sources: DESIGN.md §4 invariants (FIP never released) and §3 (names, grants); the
//! runbook's "What must stay pinned" (serviceCIDR, traffic selectors, allowlist).
//!
//! Layer 2 (rules): imports only from layers 0 to 2; see docs/architecture.md.

use std::collections::HashSet;
use std::net::IpAddr;

use crate::core::addr;
use crate::core::allowlist::Allowlist;
use crate::core::finding::{CheckResult, Finding, Severity, finding, result};
use crate::core::input::Source;
use crate::core::model::condition;
use crate::core::proposal::{self, SaKind};
use crate::core::psk;
use crate::core::report::{FieldRow, Rule, Verdict};
use crate::core::translate::Targets;
use ipnet::IpNet;

/// What every check reads.
pub struct Inputs<'a> {
    pub source: &'a Source,
    pub targets: &'a Targets,
    pub fields: &'a [FieldRow],
    pub allowlist: &'a Allowlist,
}

impl Inputs<'_> {
    fn name(&self) -> &str {
        self.source
            .gateway
            .metadata
            .name
            .as_deref()
            .unwrap_or_default()
    }
    fn ns_flag(&self) -> String {
        self.source
            .gateway
            .metadata
            .namespace
            .as_deref()
            .map(|n| format!(" -n {n}"))
            .unwrap_or_default()
    }
    fn old_object(&self) -> String {
        object(
            "IPsecGateway",
            self.source.gateway.metadata.namespace.as_deref(),
            self.name(),
        )
    }
    fn service_cidr(&self) -> Option<IpNet> {
        let s = self
            .source
            .gateway
            .status
            .as_ref()?
            .service_cidr
            .as_deref()?;
        s.parse::<IpNet>().ok().filter(|n| n.trunc() == *n)
    }
    /// How to see the fixed gateway again: export it again for a file's plan, plan
    /// again for a live one (attack finding: a live plan advised a re-export).
    fn again(&self) -> String {
        if self.source.is_live() {
            format!(
                "plan again: `vpnmig plan {}{}`",
                self.name(),
                self.ns_flag()
            )
        } else {
            format!(
                "export again: `kubectl get ipsecgateway {}{} -o yaml > {}.yaml`",
                self.name(),
                self.ns_flag(),
                self.name()
            )
        }
    }
}

fn object(kind: &str, ns: Option<&str>, name: &str) -> String {
    match ns {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

fn shown(v: Option<&str>) -> String {
    match v {
        None => "<unset>".into(),
        Some("") => "\"\" (empty)".into(),
        Some(s) => s.to_string(),
    }
}

type CheckFn = fn(&Inputs) -> Result<Vec<Finding>, String>;

/// Every check, in the order they are reported: (id, severity, title, function). The
/// function returns the findings, or `Err(reason)` when it cannot be evaluated.
pub const CHECKS: &[(&str, Severity, &str, CheckFn)] = &[
    (
        "unknown-fields",
        Severity::Blocker,
        "every field of the old spec is known to vpnmig",
        unknown_fields,
    ),
    (
        "values-identical",
        Severity::Blocker,
        "every pinned and copied value reads back identical from the targets",
        values_identical,
    ),
    (
        "fip-pinned",
        Severity::Blocker,
        "floating IP pinned in spec and equal to status.floatingIP",
        fip_pinned,
    ),
    (
        "psk-secret",
        Severity::Blocker,
        "the PSK Secret exists and has the key",
        psk_secret,
    ),
    (
        "psk-owner",
        Severity::Warning,
        "the PSK Secret survives the old gateway's delete (cutover detaches it where it is owned)",
        psk_owner,
    ),
    (
        "not-deleting",
        Severity::Blocker,
        "the old gateway is not already being deleted",
        not_deleting,
    ),
    (
        "service-cidr",
        Severity::Blocker,
        "serviceCIDR present in status and a valid network",
        service_cidr,
    ),
    (
        "tunnels",
        Severity::Blocker,
        "at least one tunnel to migrate",
        tunnels,
    ),
    (
        "remote-subnets",
        Severity::Blocker,
        "remote subnets are valid networks outside the serviceCIDR",
        remote_subnets,
    ),
    (
        "peer-address",
        Severity::Blocker,
        "each peer address is an IP address or DNS name",
        peer_address,
    ),
    (
        "proposal-syntax",
        Severity::Blocker,
        "IKE and ESP proposals are valid strongSwan syntax",
        proposal_syntax,
    ),
    (
        "proposal-allowlist",
        Severity::Blocker,
        "IKE and ESP proposals are in the operator's allowlist",
        proposal_allowlist,
    ),
    (
        "target-names",
        Severity::Blocker,
        "new object names are valid DNS-1123 subdomains and unique",
        target_names,
    ),
    (
        "peer-name-length",
        Severity::Warning,
        "every VPNPeer name fits a label value (63 characters)",
        peer_name_length,
    ),
    (
        "authorization-grants",
        Severity::Blocker,
        "the operator would authorize every VPNPeer (grants name existing exposures; several peers are default-deny)",
        authorization_grants,
    ),
    (
        "exposure-targets",
        Severity::Blocker,
        "exposure targets have an address and a port from 1 to 65535",
        exposure_targets,
    ),
    (
        "virtual-ips",
        Severity::Blocker,
        "every exposure keeps its virtual IP, inside the serviceCIDR",
        virtual_ips,
    ),
    (
        "status-current",
        Severity::Warning,
        "status describes the current spec (observedGeneration = generation)",
        status_current,
    ),
    (
        "source-ready",
        Severity::Warning,
        "the old gateway is FIPAttached and Ready",
        source_ready,
    ),
    (
        "ike-version",
        Severity::Warning,
        "IKEv2 (IKEv1 is deprecated)",
        ike_version,
    ),
    (
        "namespace",
        Severity::Warning,
        "the source names its namespace",
        namespace,
    ),
    (
        "owner-references",
        Severity::Warning,
        "the old gateway has no owner the new objects would lack",
        owner_references,
    ),
    (
        "gitops",
        Severity::Warning,
        "no Helm, Argo CD or Flux marker on the old gateway",
        gitops,
    ),
    (
        GITOPS_SYNC,
        Severity::Blocker,
        "no Argo CD or Flux sync of the old gateway or its PSK Secret",
        gitops_sync,
    ),
];

/// The check a cutover with `--gitops pause|ignore` has answered (issue 11 item 2).
pub const GITOPS_SYNC: &str = "gitops-sync";

/// Run every check in [`CHECKS`].
pub fn run(inputs: &Inputs) -> Vec<CheckResult> {
    CHECKS
        .iter()
        .map(|(id, severity, title, f)| {
            // Live, status that lags the spec or a gateway that is not Ready means the
            // values read from status cannot be trusted: those warnings block.
            let severity =
                if inputs.source.is_live() && matches!(*id, "status-current" | "source-ready") {
                    Severity::Blocker
                } else {
                    *severity
                };
            result(id, severity, title, f(inputs))
        })
        .collect()
}

fn not_deleting(i: &Inputs) -> Result<Vec<Finding>, String> {
    Ok(match &i.source.gateway.metadata.deletion_timestamp {
        Some(t) => vec![finding(
            &i.old_object(),
            "metadata.deletionTimestamp",
            t.0.to_string(),
            "<unset>",
            "the old gateway is already being deleted: its finalizer unwind has started and, if its FIP is not pinned, the address may be released",
            Some("do not plan from this export: find out who deleted it (`kubectl get events`), and if it must be restored, re-apply it from a bundle's old-ipsecgateway.yaml once it is gone".into()),
        )],
        None => vec![],
    })
}

/// Field managers of GitOps controllers and Helm (issue 9 item 3; issue 11 item 1).
pub const GITOPS_MANAGERS: &[&str] = &[
    "argocd-controller",
    "argocd-application-controller",
    "kustomize-controller",
    "helm-controller",
    "helm",
];

fn gitops(i: &Inputs) -> Result<Vec<Finding>, String> {
    let meta = &i.source.gateway.metadata;
    let markers: Vec<String> = meta
        .annotations
        .iter()
        .flatten()
        .filter(|(k, _)| {
            k.as_str() != crate::core::translate::LAST_APPLIED
                && crate::core::translate::not_carried(true, k).is_some()
        })
        .chain(
            meta.labels
                .iter()
                .flatten()
                .filter(|(k, _)| crate::core::translate::not_carried(false, k).is_some()),
        )
        .map(|(k, v)| format!("{k}={v}"))
        // Argo CD's default tracking label before 3.0 (carried: it is also a common label
        // of the user's; issue 9 item 3).
        .chain(
            meta.labels
                .iter()
                .flatten()
                .filter(|(k, _)| k.as_str() == "app.kubernetes.io/instance")
                .map(|(k, v)| format!("{k}={v} (Argo CD's label tracking, if it is Argo CD's)")),
        )
        // The controllers' own field managers (kubectl apply --server-side by Argo CD,
        // Flux's kustomize-controller and helm-controller, Helm).
        .chain(
            i.source
                .raw
                .pointer("/metadata/managedFields")
                .and_then(serde_json::Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|m| m["manager"].as_str())
                .filter(|m| GITOPS_MANAGERS.contains(m))
                .map(|m| format!("field manager {m}")),
        )
        .collect();
    Ok(if markers.is_empty() {
        vec![]
    } else {
        vec![finding(
            &i.old_object(),
            "metadata",
            markers.join(", "),
            "no GitOps or Helm ownership",
            "a GitOps tool or Helm manages the old gateway: after the delete it may re-create it (and fight for the floating IP) or prune the new objects; its ownership markers are not carried (the field report lists each)",
            Some("before the window, suspend its sync (e.g. `argocd app set APP --sync-policy none`, `flux suspend kustomization NAME`) and change the source repository to the new manifests".into()),
        )]
    })
}

/// Argo CD or Flux syncs the old gateway or its PSK Secret (issue 11 items 1 and 2):
/// their self-heal re-creates the IPsecGateway after the delete (and takes the floating
/// IP back), their prune deletes the new objects. A cutover needs `--gitops pause` or
/// `--gitops ignore`.
fn gitops_sync(i: &Inputs) -> Result<Vec<Finding>, String> {
    use crate::core::gitops;
    let name = i.name();
    let ns_flag = i.ns_flag();
    let secret_name = &i.source.gateway.spec.auth.psk_secret_ref.name;
    let secret = i.source.secrets.iter().find(|s| {
        s.pointer("/metadata/name")
            .and_then(serde_json::Value::as_str)
            == Some(secret_name)
    });
    let ns = i.source.gateway.metadata.namespace.as_deref();
    let objects = std::iter::once((i.old_object(), &i.source.raw))
        .chain(secret.map(|s| (object("Secret", ns, secret_name), s)));
    let mut out = Vec::new();
    for (object, raw) in objects {
        for m in gitops::reconciling(&gitops::detect(raw)) {
            let owner = m
                .owner
                .as_ref()
                .map(|o| format!(" ({})", o.display()))
                .unwrap_or_default();
            out.push(finding(
                &object,
                "metadata",
                m.evidence.join(", "),
                "no Argo CD or Flux sync during the window",
                format!(
                    "{}{owner} syncs it: its self-heal re-creates the IPsecGateway after the delete and the old operator takes the floating IP back, its prune deletes the new objects",
                    m.tool.label()
                ),
                Some(format!(
                    "let vpnmig suspend it for the window and restore it after: `vpnmig cutover {name}{ns_flag} --gitops pause`; or suspend it yourself and pass `--gitops ignore`. docs/gitops.md: merge the repository change (`vpnmig plan {name}{ns_flag} --gitops-repo DIR`) before the sync is restored"
                )),
            ));
        }
    }
    Ok(out)
}

fn unknown_fields(i: &Inputs) -> Result<Vec<Finding>, String> {
    let fix = format!(
        "remove the field from the IPsecGateway (`kubectl edit ipsecgateway {}{}`) if the operator ignores it, or report it so vpnmig's model (docs/model.md) learns where it goes",
        i.name(),
        i.ns_flag()
    );
    Ok(i.fields
        .iter()
        .filter(|r| r.rule == Rule::Unknown)
        .map(|r| {
            finding(
                &i.old_object(),
                r.from.to_string(),
                r.value.to_string(),
                "a field of the IPsecGateway model",
                "unknown field: it has no place in VPNGateway/VPNPeer and would be lost",
                Some(fix.clone()),
            )
        })
        .collect())
}

fn values_identical(i: &Inputs) -> Result<Vec<Finding>, String> {
    Ok(i.fields
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Differs | Verdict::Missing))
        .map(|r| {
            let seen = r
                .new_value
                .as_ref()
                .map_or("<missing>".to_string(), |v| v.to_string());
            let msg = format!(
                "{} would change from {} ({}) to {}",
                r.field, r.value, r.from, seen
            );
            let to = r.to.as_ref().map(|p| p.to_string()).unwrap_or_default();
            finding(
                r.target.as_deref().unwrap_or_default(),
                to,
                seen,
                r.value.to_string(),
                msg,
                None,
            )
        })
        .collect())
}

fn fip_pinned(i: &Inputs) -> Result<Vec<Finding>, String> {
    let gw = &i.source.gateway;
    let status_fip = gw
        .status
        .as_ref()
        .and_then(|s| s.floating_ip.as_deref())
        .filter(|s| !s.is_empty());
    let obj = i.old_object();
    let path = "spec.endpoint.floatingIP";
    let mut out = Vec::new();
    match (gw.spec.endpoint.pinned_fip(), status_fip) {
        (None, Some(live)) => out.push(finding(
            &obj,
            path,
            shown(gw.spec.endpoint.floating_ip.as_deref()),
            live,
            format!("the floating IP is not pinned: deleting the old gateway would release {live} to the pool and the client's firewall would lose it"),
            Some(format!(
                "kubectl patch ipsecgateway {}{} --type merge -p '{{\"spec\":{{\"endpoint\":{{\"floatingIP\":\"{live}\"}}}}}}'  # then wait for Ready and {}",
                i.name(),
                i.ns_flag(),
                i.again()
            )),
        )),
        (None, None) => out.push(finding(
            &obj,
            path,
            shown(gw.spec.endpoint.floating_ip.as_deref()),
            "the associated floating IP",
            "the floating IP is neither pinned in spec nor reported in status.floatingIP",
            Some(format!("wait for FIPAttached=True (`kubectl get ipsecgateway {}{} -o yaml`), pin status.floatingIP in spec.endpoint.floatingIP, then {}", i.name(), i.ns_flag(), i.again())),
        )),
        (Some(pinned), live) => {
            if pinned.parse::<IpAddr>().is_err() {
                out.push(finding(&obj, path, pinned, "an IPv4 or IPv6 address", "the pinned floating IP is not an IP address", Some(format!("kubectl edit ipsecgateway {}{}", i.name(), i.ns_flag()))));
            } else if let Some(live) = live.filter(|l| !addr::same_addr(l, pinned)) {
                out.push(finding(
                    &obj,
                    "status.floatingIP",
                    live,
                    pinned,
                    format!("spec pins {pinned} but the operator reports {live} associated: the pin has not been reconciled"),
                    Some(format!("wait until status.floatingIP shows {pinned} and Ready=True, then {}", i.again())),
                ));
            }
        }
    }
    Ok(out)
}

fn psk_secret(i: &Inputs) -> Result<Vec<Finding>, String> {
    let r = &i.source.gateway.spec.auth.psk_secret_ref;
    let ns = i.source.gateway.metadata.namespace.as_deref();
    let Some(secret) = psk::find(&i.source.secrets, ns, &r.name) else {
        if let Some(why) = &i.source.secret_error {
            return Ok(vec![finding(
                &object("Secret", ns, &r.name),
                "",
                "<cannot read>",
                format!("a readable Secret with key `{}`", r.key),
                format!(
                    "the PSK Secret could not be read, so its key and owners are unchecked: {why}"
                ),
                Some("plan with a context that may get secrets in this namespace".into()),
            )]);
        }
        if i.source.is_live() {
            return Ok(vec![finding(
                &object("Secret", ns, &r.name),
                "",
                "<not found>",
                format!("a Secret with key `{}`", r.key),
                "the PSK Secret the gateway references does not exist: no VPNPeer could authenticate",
                Some(format!(
                    "find the client's PSK and recreate the Secret, or correct spec.auth.pskSecretRef (`kubectl edit ipsecgateway {}{}`)",
                    i.name(),
                    i.ns_flag()
                )),
            )]);
        }
        return Err(format!(
            "Secret {} is not in the input; `kubectl get ipsecgateway/{} secret/{}{} -o yaml` exports both",
            r.name,
            i.name(),
            r.name,
            i.ns_flag()
        ));
    };
    let obj = object("Secret", ns, &r.name);
    let mut out = Vec::new();
    match psk::problem(secret, &r.key) {
        None => {}
        Some(psk::KeyProblem::Missing) => out.push(finding(
            &obj,
            format!("data.{}", r.key),
            format!("keys {:?}", psk::keys(secret)),
            format!("a key `{}`", r.key),
            "the PSK Secret has no such key: every VPNPeer would reference a missing key and no tunnel would come up",
            Some(format!("correct spec.auth.pskSecretRef.key (`kubectl edit ipsecgateway {}{}`) or the Secret, then {}", i.name(), i.ns_flag(), i.again())),
        )),
        // The key is there: say what is wrong with its value, never the value itself.
        Some(p) => out.push(finding(
            &obj,
            format!("data.{}", r.key),
            p.describe(&r.key),
            "a non-empty PSK, base64-encoded in data (or plain in stringData)",
            format!("{}: no VPNPeer could authenticate with it", p.describe(&r.key)),
            Some(format!(
                "re-export the Secret as the cluster holds it (`kubectl get secret {}{} -o yaml`), or put the key in stringData",
                r.name,
                i.ns_flag()
            )),
        )),
    }
    Ok(out)
}

/// DESIGN.md §4.2: a PSK Secret the old gateway (or the children its unwind deletes)
/// owns would be garbage-collected with it. `vpnmig cutover` detaches it, explicitly:
/// the summary says so before the confirmation and the journal records what it removed.
/// A warning, so that the plan, `status` and `cutover` give one answer; by hand, the fix
/// is the same patch, removing only those references.
fn psk_owner(i: &Inputs) -> Result<Vec<Finding>, String> {
    let r = &i.source.gateway.spec.auth.psk_secret_ref;
    let ns = i.source.gateway.metadata.namespace.as_deref();
    let Some(secret) = psk::find(&i.source.secrets, ns, &r.name) else {
        return Err(format!(
            "whether Secret {} is owned by the old gateway: it was not read (see psk-secret)",
            r.name
        ));
    };
    let Some(owner) = psk::owner_is_gateway(secret, &i.source.gateway) else {
        return Ok(Vec::new());
    };
    let refs = secret
        .pointer("/metadata/ownerReferences")
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default();
    // JSON patch ops removing only the references to the gateway, last index first, each
    // guarded by a test of its uid.
    let mut ops = Vec::new();
    for (idx, rf) in refs.iter().enumerate().rev() {
        let one = serde_json::json!({"metadata": {"ownerReferences": [rf]}});
        if psk::owner_is_gateway(&one, &i.source.gateway).is_some() {
            if let Some(uid) = rf.get("uid").and_then(serde_json::Value::as_str) {
                ops.push(format!(
                    r#"{{"op":"test","path":"/metadata/ownerReferences/{idx}/uid","value":"{uid}"}}"#
                ));
            }
            ops.push(format!(
                r#"{{"op":"remove","path":"/metadata/ownerReferences/{idx}"}}"#
            ));
        }
    }
    Ok(vec![finding(
        &object("Secret", ns, &r.name),
        "metadata.ownerReferences",
        owner,
        "no ownerReference to the old gateway",
        "deleting the old gateway would garbage-collect the PSK Secret the new VPNPeers need: `vpnmig cutover` detaches it first (recorded in the journal)",
        Some(format!(
            "by hand, before the delete: kubectl patch secret {}{} --type json -p '[{}]'",
            r.name,
            i.ns_flag(),
            ops.join(",")
        )),
    )])
}

fn service_cidr(i: &Inputs) -> Result<Vec<Finding>, String> {
    let seen = i
        .source
        .gateway
        .status
        .as_ref()
        .and_then(|s| s.service_cidr.as_deref());
    let obj = i.old_object();
    let path = "status.serviceCIDR";
    Ok(match seen.map(|s| (s, s.parse::<IpNet>())) {
        None => vec![finding(
            &obj,
            path,
            "<unset>",
            "the /24 the operator allocated, e.g. 10.250.3.0/24",
            "no serviceCIDR in status: without it the VPNGateway would get the next free /24 and every exposure's virtual IP would change",
            Some(format!(
                "wait until the operator has reconciled the gateway (Ready=True, status.serviceCIDR set), then {}",
                i.again()
            )),
        )],
        Some((s, Err(_))) => vec![finding(
            &obj,
            path,
            s,
            "a network in CIDR form, e.g. 10.250.3.0/24",
            "serviceCIDR is not a CIDR",
            Some(
                "check the operator's status reporting; do not migrate until it is a network"
                    .into(),
            ),
        )],
        Some((s, Ok(n))) if n.trunc() != n => vec![finding(
            &obj,
            path,
            s,
            n.trunc().to_string(),
            "serviceCIDR has host bits set: it is not a network address",
            Some(
                "check the operator's status reporting; do not migrate until it is a network"
                    .into(),
            ),
        )],
        Some(_) => vec![],
    })
}

fn tunnels(i: &Inputs) -> Result<Vec<Finding>, String> {
    Ok(if i.source.gateway.spec.tunnels.is_empty() {
        vec![finding(
            &i.old_object(),
            "spec.tunnels",
            "[]",
            "at least one tunnel",
            "the gateway has no tunnels: there is no peer to migrate",
            None,
        )]
    } else {
        vec![]
    })
}

fn remote_subnets(i: &Inputs) -> Result<Vec<Finding>, String> {
    let cidr = i.service_cidr();
    let obj = i.old_object();
    let fix = || {
        Some(format!(
            "correct spec.tunnels[].remoteSubnets with the client (`kubectl edit ipsecgateway {}{}`), then {}",
            i.name(),
            i.ns_flag(),
            i.again()
        ))
    };
    let mut out = Vec::new();
    for (t, tunnel) in i.source.gateway.spec.tunnels.iter().enumerate() {
        if tunnel.remote_subnets.is_empty() {
            out.push(finding(
                &obj,
                format!("spec.tunnels[{t}].remoteSubnets"),
                "[]",
                "at least one network",
                "no remote subnets: IKE phase 2 needs a traffic selector",
                fix(),
            ));
        }
        for (s, subnet) in tunnel.remote_subnets.iter().enumerate() {
            let path = format!("spec.tunnels[{t}].remoteSubnets[{s}]");
            match subnet.parse::<IpNet>() {
                Err(_) => out.push(finding(
                    &obj,
                    path,
                    subnet,
                    "a network in CIDR form, e.g. 10.20.0.0/16",
                    "remote subnet is not a CIDR",
                    fix(),
                )),
                Ok(n) if n.trunc() != n => out.push(finding(
                    &obj,
                    path,
                    subnet,
                    n.trunc().to_string(),
                    "remote subnet has host bits set",
                    fix(),
                )),
                Ok(n) => {
                    let n = addr::net(subnet).unwrap_or(n);
                    if let Some(c) = cidr.filter(|c| addr::overlaps(c, &n)) {
                        out.push(finding(&obj, path, subnet, format!("a network outside the serviceCIDR {c}"), format!("remote subnet overlaps the serviceCIDR {c}: traffic to exposures would be routed into the tunnel"), fix()));
                    }
                }
            }
        }
    }
    Ok(out)
}

/// A DNS name per RFC 1123: dot-separated labels of letters, digits and hyphens, each
/// 1–63 long and not starting or ending with a hyphen, 253 at most, not all-numeric.
fn is_dns_name(s: &str) -> bool {
    let s = s.strip_suffix('.').unwrap_or(s);
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
        && !s
            .split('.')
            .next_back()
            .is_some_and(|tld| tld.chars().all(|c| c.is_ascii_digit()))
}

fn peer_address(i: &Inputs) -> Result<Vec<Finding>, String> {
    let obj = i.old_object();
    Ok(i.source
        .gateway
        .spec
        .tunnels
        .iter()
        .enumerate()
        .filter(|(_, t)| t.peer.address.parse::<IpAddr>().is_err() && !is_dns_name(&t.peer.address))
        .map(|(n, t)| {
            finding(
                &obj,
                format!("spec.tunnels[{n}].peer.address"),
                &t.peer.address,
                "an IPv4/IPv6 address or a DNS name",
                "peer address is neither an IP address nor a DNS name",
                Some(format!(
                    "correct it with the client's parameter sheet: kubectl edit ipsecgateway {}{}",
                    i.name(),
                    i.ns_flag()
                )),
            )
        })
        .collect())
}

/// Every proposal of the old spec with its path and SA type.
fn proposals<'a>(i: &'a Inputs) -> Vec<(String, &'a str, SaKind)> {
    let spec = &i.source.gateway.spec;
    let ike = spec
        .ike
        .proposals
        .iter()
        .enumerate()
        .map(|(n, p)| (format!("spec.ike.proposals[{n}]"), p.as_str(), SaKind::Ike));
    let esp = spec.tunnels.iter().enumerate().flat_map(|(t, tunnel)| {
        tunnel.esp.iter().flat_map(move |e| {
            e.proposals.iter().enumerate().map(move |(n, p)| {
                (
                    format!("spec.tunnels[{t}].esp.proposals[{n}]"),
                    p.as_str(),
                    SaKind::Esp,
                )
            })
        })
    });
    ike.chain(esp).collect()
}

fn proposal_syntax(i: &Inputs) -> Result<Vec<Finding>, String> {
    let obj = i.old_object();
    let mut out: Vec<Finding> = proposals(i)
        .into_iter()
        .filter_map(|(path, p, sa)| {
            proposal::validate(p, sa).err().map(|e| {
                finding(&obj, path, p, format!("a strongSwan {sa} proposal, e.g. {}", if sa == SaKind::Ike { "aes256-sha256-modp2048" } else { "aes256gcm16-modp2048" }), format!("not a valid {sa} proposal: {e}"), Some("agree a proposal from the allowlist with the client, set it in the IPsecGateway, and re-plan".into()))
            })
        })
        .collect();
    if i.source.gateway.spec.ike.proposals.is_empty() {
        out.push(finding(
            &obj,
            "spec.ike.proposals",
            "[]",
            "at least one proposal",
            "no IKE proposal",
            None,
        ));
    }
    Ok(out)
}

fn proposal_allowlist(i: &Inputs) -> Result<Vec<Finding>, String> {
    let obj = i.old_object();
    Ok(proposals(i)
        .into_iter()
        .filter(|(_, p, sa)| proposal::validate(p, *sa).is_ok())
        .filter(|(_, p, sa)| match sa {
            SaKind::Ike => !i.allowlist.allows_ike(p),
            SaKind::Esp => !i.allowlist.allows_esp(p),
        })
        .map(|(path, p, sa)| {
            let list = if sa == SaKind::Ike { &i.allowlist.ike } else { &i.allowlist.esp };
            match list.iter().find(|a| a.eq_ignore_ascii_case(p.trim())) {
                Some(entry) => finding(
                    &obj,
                    path,
                    format!("{p:?}"),
                    format!("{entry:?}"),
                    format!("{sa} proposal differs from the allowlist entry only in case or spaces: the new CRDs' enum is exact and would reject it at apply time"),
                    Some(format!("write it as `{entry}` in the IPsecGateway (`kubectl edit ipsecgateway {}{}`), then export and plan again", i.name(), i.ns_flag())),
                ),
                None => finding(&obj, path, p, format!("one of the approved {sa} proposals (docs/model.md, or --allowlist FILE)"), format!("{sa} proposal is not in the operator's allowlist: the new kinds reject it"), Some("agree an approved proposal with the client before the window; if the operator's list differs from vpnmig's default, pass it with --allowlist FILE".into())),
            }
        })
        .collect())
}

/// DNS-1123 subdomain: lowercase alphanumerics, `-` and `.`, alphanumeric at both ends,
/// at most 253 characters (Kubernetes object names).
fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && l.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && l.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        })
}

fn target_names(i: &Inputs) -> Result<Vec<Finding>, String> {
    let ns = i.source.gateway.metadata.namespace.as_deref();
    let mut out = Vec::new();
    let gw = i.targets.gateway.metadata.name.clone().unwrap_or_default();
    if !is_dns1123_subdomain(&gw) {
        out.push(finding(
            &object("VPNGateway", ns, &gw),
            "metadata.name",
            &gw,
            "a DNS-1123 subdomain (lowercase letters, digits, '-', '.')",
            "the gateway's name, kept for the VPNGateway (and a single tunnel's VPNPeer), is not a valid object name",
            None,
        ));
    }
    let mut seen = HashSet::new();
    for (t, p) in i.targets.peers.iter().enumerate() {
        let name = p.metadata.name.clone().unwrap_or_default();
        let obj = object("VPNPeer", ns, &name);
        // A single tunnel's peer is named like the gateway: the gateway finding covers it.
        if !is_dns1123_subdomain(&name) && i.targets.peers.len() > 1 {
            out.push(finding(&obj, "metadata.name", &name, "a DNS-1123 subdomain (lowercase letters, digits, '-', '.', at most 253)", format!("the peer name made from tunnel `{}` is not a valid object name", i.source.gateway.spec.tunnels[t].name), Some(format!("rename spec.tunnels[{t}].name in the IPsecGateway to lowercase letters, digits and '-'"))));
        }
        if !seen.insert(name.clone()) {
            out.push(finding(
                &obj,
                "metadata.name",
                &name,
                "a name no other VPNPeer of this plan has",
                "two tunnels map to the same VPNPeer name",
                None,
            ));
        }
    }
    Ok(out)
}

/// A VPNPeer name longer than a label value (issue 21 item 10: a fact of the plan, so
/// offline and live plans both warn): operators commonly select a peer's children by a
/// label holding its name.
fn peer_name_length(i: &Inputs) -> Result<Vec<Finding>, String> {
    use crate::core::limits::LABEL_VALUE_MAX;
    let ns = i.source.gateway.metadata.namespace.as_deref();
    Ok(i.targets
        .peers
        .iter()
        .enumerate()
        .filter_map(|(t, p)| {
            let n = p.metadata.name.as_deref().unwrap_or_default();
            (n.len() > LABEL_VALUE_MAX).then(|| {
                let tunnel = i.source.gateway.spec.tunnels.get(t).map_or("TUNNEL", |t| t.name.as_str());
                finding(
                    &object("VPNPeer", ns, n),
                    "metadata.name",
                    format!("{} characters", n.len()),
                    format!("at most {LABEL_VALUE_MAX}"),
                    format!("the name is longer than a label value may be ({LABEL_VALUE_MAX}): an operator that labels the peer's children with it would fail"),
                    Some(format!("choose a shorter one: `--peer-name {tunnel}=NAME` on `vpnmig plan` (recorded in the plan; the cutover uses it)")),
                )
            })
        })
        .collect())
}

fn authorization_grants(i: &Inputs) -> Result<Vec<Finding>, String> {
    let meta = &i.source.gateway.metadata;
    Ok(authorization(
        meta.namespace.as_deref(),
        meta.name.as_deref().unwrap_or_default(),
        i.targets,
        &[],
    ))
}

/// `authorization-grants` (issue 21 item 9): the operator's `Authorized` answer for each
/// VPNPeer the plan applies (`core::operator`), on a gateway whose peers are the plan's
/// and `strays` (VPNPeers the cluster already has that name the gateway in
/// `spec.gatewayRef`; only a live plan knows them). Every peer that would be
/// `Authorized=False` is a finding naming it, and each stray is one: after the delete the
/// window would wait for a Ready that never comes.
pub fn authorization(
    ns: Option<&str>,
    name: &str,
    targets: &Targets,
    strays: &[String],
) -> Vec<Finding> {
    use crate::core::operator::{Authorized, authorize};
    let gw = &targets.gateway.spec;
    let ns_flag = ns.map(|n| format!(" -n {n}")).unwrap_or_default();
    let count = targets.peers.len() + strays.len();
    let mut out = Vec::new();
    for s in strays {
        out.push(finding(
            &object("VPNPeer", ns, s),
            "spec.gatewayRef.name",
            name,
            "only the VPNPeers this plan translates from the tunnels",
            format!(
                "VPNPeer {s} already names gateway {name}: once the VPNGateway exists it is one more peer of it ({count} peers: default-deny), a peer the old gateway did not have"
            ),
            Some(format!(
                "inspect it (`kubectl get vpnpeer {s}{ns_flag} -o yaml`): if it is a leftover, delete it; if it is this gateway's peer under another name, plan with `--peer-name TUNNEL={s}`; then plan again. Nothing was changed"
            )),
        ));
    }
    let tunnels = targets.peers.len();
    for p in &targets.peers {
        let peer = p.metadata.name.as_deref().unwrap_or_default();
        let obj = object("VPNPeer", ns, peer);
        let auth = p.spec.authorization.as_ref();
        match authorize(count, auth, &gw.exposures, &gw.reverse_exposures) {
            Authorized::DefaultAllow | Authorized::Granted => {}
            Authorized::UnknownExposure(_) => {
                let auth = auth.expect("an unknown grant is in an authorization block");
                let exposures: HashSet<&str> =
                    gw.exposures.iter().map(|e| e.name.as_str()).collect();
                let reverse: HashSet<&str> = gw
                    .reverse_exposures
                    .iter()
                    .map(|e| e.name.as_str())
                    .collect();
                for (list, grants, known) in [
                    ("exposures", &auth.exposures, &exposures),
                    ("reverseExposures", &auth.reverse_exposures, &reverse),
                ] {
                    for (n, g) in grants
                        .iter()
                        .enumerate()
                        .filter(|(_, g)| !known.contains(g.as_str()))
                    {
                        out.push(finding(&obj, format!("spec.authorization.{list}[{n}]"), g, format!("one of the gateway's {list}"), "grant names an exposure the gateway does not have: the operator would answer Authorized=False (UnknownExposure)", None));
                    }
                }
            }
            Authorized::NoGrants => {
                let (seen, why, fix) = match auth {
                    None => (
                        "<unset>".to_string(),
                        "it has no authorization block, which is default-allow only for the only peer of a gateway".to_string(),
                        if strays.is_empty() {
                            format!("plan again: `vpnmig plan {name}{ns_flag}`")
                        } else {
                            format!(
                                "remove the other VPNPeer(s) naming gateway {name} (see above), then plan again: `vpnmig plan {name}{ns_flag}`"
                            )
                        },
                    ),
                    Some(_) => (
                        "{} (grants nothing)".to_string(),
                        format!(
                            "IPsecGateway {name} has no exposures and no reverse exposures, so there is nothing to grant: on the new API a peer that reaches nothing is never authorized"
                        ),
                        format!(
                            "vpnmig will not translate {tunnels} tunnels that expose nothing: add the exposures (or reverse exposures) the client's tunnels carry to the IPsecGateway (`kubectl edit ipsecgateway {name}{ns_flag}`: spec.exposures, spec.reverseExposures), wait for the operator to report their virtual IPs, then plan again. Nothing was changed"
                        ),
                    ),
                };
                out.push(finding(
                    &obj,
                    "spec.authorization",
                    seen,
                    "a grant of at least one of the gateway's exposures or reverse exposures",
                    format!(
                        "the operator would answer Authorized=False (NoGrants): the gateway would have {count} peers, so it is default-deny, and {why}; a cutover would delete the old gateway and then wait for a Ready that never comes"
                    ),
                    Some(fix),
                ));
            }
        }
    }
    out
}

fn virtual_ips(i: &Inputs) -> Result<Vec<Finding>, String> {
    let Some(cidr) = i.service_cidr() else {
        return Err("needs a valid serviceCIDR (see service-cidr)".into());
    };
    let status = i.source.gateway.status.clone().unwrap_or_default();
    let obj = i.old_object();
    let mut out = Vec::new();
    for (n, e) in i.source.gateway.spec.exposures.iter().enumerate() {
        let allocated = status
            .exposures
            .iter()
            .find(|s| s.name == e.name)
            .and_then(|s| s.virtual_ip.clone());
        let path = format!("spec.exposures[{n}].virtualIP");
        match (&e.virtual_ip, &allocated) {
            (None, None) => out.push(finding(&obj, format!("status.exposures[name={}].virtualIP", e.name), "<unset>", format!("the address the client uses, inside {cidr}"), format!("exposure `{}` has no virtual IP in spec or status: the new gateway could allocate a different one", e.name), Some(format!("wait until the operator reports status.exposures for `{}`, then {}", e.name, i.again())))),
            (Some(s), Some(a)) if !addr::same_addr(s, a) => out.push(finding(&obj, path.clone(), s, a, format!("exposure `{}`: spec asks for {s} but the operator allocated {a}; the plan keeps {a}, the address clients use now", e.name), Some(format!("set spec.exposures[].virtualIP to the allocated address (or remove it) and let the operator reconcile, then {}", i.again())))),
            _ => {}
        }
        if let Some(vip) = allocated.as_ref().or(e.virtual_ip.as_ref()) {
            // Parsed in its own family (`core::addr`): a mapped `::ffff:` address is not
            // inside an IPv4 serviceCIDR.
            match vip.trim().parse::<IpAddr>() {
                Err(_) => out.push(finding(
                    &obj,
                    path,
                    vip,
                    format!("an address inside {cidr}"),
                    "virtual IP is not an IP address",
                    None,
                )),
                Ok(ip) if !cidr.contains(&ip) => out.push(finding(
                    &obj,
                    path,
                    vip,
                    format!("an address inside {cidr}"),
                    format!(
                        "exposure `{}`: virtual IP {vip} is outside the serviceCIDR {cidr}",
                        e.name
                    ),
                    None,
                )),
                Ok(_) => {}
            }
        }
    }
    Ok(out)
}

fn exposure_targets(i: &Inputs) -> Result<Vec<Finding>, String> {
    let spec = &i.source.gateway.spec;
    let targets = spec
        .exposures
        .iter()
        .enumerate()
        .map(|(n, e)| (format!("spec.exposures[{n}].target"), &e.target));
    let reverse = spec
        .reverse_exposures
        .iter()
        .enumerate()
        .map(|(n, e)| (format!("spec.reverseExposures[{n}].target"), &e.target));
    let mut out = Vec::new();
    for (path, t) in targets.chain(reverse) {
        if t.address.trim().is_empty() {
            out.push(finding(
                &i.old_object(),
                format!("{path}.address"),
                shown(Some(&t.address)),
                "a DNS name or IP address",
                "exposure target has no address",
                None,
            ));
        }
        if t.port == 0 {
            out.push(finding(
                &i.old_object(),
                format!("{path}.port"),
                "0",
                "a port from 1 to 65535",
                "exposure target port 0 cannot be dialled",
                None,
            ));
        }
    }
    Ok(out)
}

fn status_current(i: &Inputs) -> Result<Vec<Finding>, String> {
    let generation = i.source.gateway.metadata.generation;
    let observed = i
        .source
        .gateway
        .status
        .as_ref()
        .and_then(|s| s.observed_generation);
    Ok(match (generation, observed) {
        (Some(g), Some(o)) if g != o => vec![finding(
            &i.old_object(),
            "status.observedGeneration",
            o.to_string(),
            g.to_string(),
            "the operator has not reconciled the latest spec: values taken from status may be stale",
            Some(format!("wait for the operator, then {}", i.again())),
        )],
        (Some(g), None) => vec![finding(
            &i.old_object(),
            "status.observedGeneration",
            "<unset>",
            g.to_string(),
            "status does not say which generation it describes",
            None,
        )],
        _ => vec![],
    })
}

fn source_ready(i: &Inputs) -> Result<Vec<Finding>, String> {
    let conditions = i
        .source
        .gateway
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let generation = i.source.gateway.metadata.generation;
    let status_generation = i
        .source
        .gateway
        .status
        .as_ref()
        .and_then(|s| s.observed_generation);
    Ok(["FIPAttached", "Ready"]
        .into_iter()
        .filter_map(|t| {
            let c = condition(conditions, t);
            // Judged current as `kubectl wait` does (issue 9 item 6).
            let stale = match crate::core::verify::current(conditions, t, generation, status_generation) {
                Ok(c) if c.status == "True" => return None,
                Ok(_) => None,
                Err(why) => c.map(|_| why),
            };
            let seen = c.map_or("<absent>".to_string(), |c| format!("{}{}", c.status, c.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default()));
            let message = match stale {
                Some(why) => format!("the old gateway's {t} is not current ({why}): the cutover cannot be compared with a healthy baseline"),
                None => format!("the old gateway is not {t} now: the cutover cannot be compared with a healthy baseline"),
            };
            Some(finding(&i.old_object(), format!("status.conditions[type={t}]"), seen, "True", message, None))
        })
        .collect())
}

fn ike_version(i: &Inputs) -> Result<Vec<Finding>, String> {
    Ok(match i.source.gateway.spec.ike.version {
        Some(1) => vec![finding(
            &i.old_object(),
            "spec.ike.version",
            "1",
            "2",
            "IKEv1 is carried over unchanged; plan an IKEv2 move with the client separately",
            None,
        )],
        Some(v) if v != 2 => vec![finding(
            &i.old_object(),
            "spec.ike.version",
            v.to_string(),
            "1 or 2",
            "unknown IKE version",
            None,
        )],
        _ => vec![],
    })
}

fn namespace(i: &Inputs) -> Result<Vec<Finding>, String> {
    Ok(if i.source.gateway.metadata.namespace.is_none() {
        vec![finding(&i.old_object(), "metadata.namespace", "<unset>", "the tenant namespace", "the manifest names no namespace: the bundle goes to whatever namespace kubectl defaults to", Some("export with `kubectl get ipsecgateway NAME -n NAMESPACE -o yaml`, which records it".into()))]
    } else {
        vec![]
    })
}

fn owner_references(i: &Inputs) -> Result<Vec<Finding>, String> {
    let owners = i
        .source
        .gateway
        .metadata
        .owner_references
        .as_deref()
        .unwrap_or_default();
    Ok(owners
        .iter()
        .map(|o| finding(&i.old_object(), "metadata.ownerReferences", format!("{} {}", o.kind, o.name), "no owner", format!("the old gateway is owned by {} {}: that controller may re-create it or will not manage the new objects", o.kind, o.name), Some("pause or update the owning controller before the window".into())))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        for ok in ["fw.acme.example", "vpn-1.example.com.", "localhost", "a"] {
            assert!(is_dns_name(ok), "{ok}");
        }
        for bad in [
            "",
            "-fw.example",
            "fw_acme.example",
            "203.0.113.300",
            "a..b",
            &"x".repeat(64),
        ] {
            assert!(!is_dns_name(bad), "{bad}");
        }
    }

    #[test]
    fn dns1123_subdomains() {
        for ok in ["acme", "acme-main", "acme.site-2", "0acme"] {
            assert!(is_dns1123_subdomain(ok), "{ok}");
        }
        for bad in [
            "Acme",
            "acme-Main",
            "acme_main",
            "-acme",
            "acme-",
            "",
            "a..b",
            &"a".repeat(254),
        ] {
            assert!(!is_dns1123_subdomain(bad), "{bad}");
        }
    }
}
