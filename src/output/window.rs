//! The text of a cutover and a rollback: what will happen (shown before the prompt),
//! the drift and blockers that refuse it, and the final report (text or JSON).

use serde_json::{Value, json};

use crate::core::duration::{self, Rounding};
use crate::core::journal::{self, Drift, Journal};
use crate::core::plan::Plan;
use crate::core::verify::Row;
use crate::output::progress::elapsed;
use crate::output::style::{BAD, HEADING, paint};

/// The bound of each wait, as the summaries show them.
#[derive(Clone, Copy, Debug)]
pub struct Waits {
    pub delete: std::time::Duration,
    pub attach: std::time::Duration,
    pub tunnel: std::time::Duration,
}

/// `-o` of cutover and rollback.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// The outcome, the outage and the verify table.
    #[default]
    Text,
    /// `{operation, namespace, gateway, phase, outageMs, journal, verify}`.
    Json,
}

/// The drift between a saved plan and the cluster, one line each (a diff for targets).
pub fn drift(drift: &[Drift]) -> String {
    let mut out = paint(HEADING, "Drift between the saved plan and the cluster:") + "\n";
    for d in drift {
        if d.what == "targets" && d.saved == "see diff" {
            out.push_str("  targets differ:\n");
            for line in d.live.lines() {
                out.push_str(&format!("    {line}\n"));
            }
        } else {
            out.push_str(&format!(
                "  {}: saved {}, now {}\n",
                d.what, d.saved, d.live
            ));
        }
    }
    out
}

/// The blockers that stop a cutover, one paragraph each.
pub fn blockers(plan: &Plan) -> Vec<String> {
    journal::blocking(plan)
        .into_iter()
        .map(|(id, f)| match f {
            None => format!("{} {id}\n", paint(BAD, "BLOCKER")),
            Some(f) => format!(
                "{} {id}: {} {}: {}\n    seen {}, wanted {}\n{}",
                paint(BAD, "BLOCKER"),
                f.object,
                f.path,
                f.message,
                f.seen,
                f.wanted,
                f.fix
                    .as_ref()
                    .map(|x| format!("    fix: {x}\n"))
                    .unwrap_or_default()
            ),
        })
        .collect()
}

/// The pinned values the targets carry: what the client's firewall depends on.
fn pinned(targets: &[Value]) -> String {
    let mut out = String::new();
    let s = |v: &Value, p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("<unset>")
            .to_string()
    };
    for t in targets {
        let name = s(t, "/metadata/name");
        if t["kind"] == "VPNGateway" {
            out.push_str(&format!(
                "  pinned     floating IP {}, service CIDR {}\n",
                s(t, "/spec/endpoint/floatingIP"),
                s(t, "/spec/serviceCIDR")
            ));
            for e in t["spec"]["exposures"].as_array().into_iter().flatten() {
                if let Some(vip) = e["virtualIP"].as_str() {
                    out.push_str(&format!(
                        "             exposure {} virtual IP {vip}\n",
                        s(e, "/name")
                    ));
                }
            }
        } else {
            let subnets: Vec<&str> = t["spec"]["ipsec"]["remoteSubnets"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            out.push_str(&format!(
                "             peer {name}: {} (id {}), remote subnets {}, PSK Secret {} key {}\n",
                s(t, "/spec/ipsec/peer/address"),
                s(t, "/spec/ipsec/peer/id"),
                subnets.join(", "),
                s(t, "/spec/ipsec/pskSecretRef/name"),
                s(t, "/spec/ipsec/pskSecretRef/key"),
            ));
        }
    }
    out
}

fn waits(t: &Waits) -> String {
    format!(
        "  waits      delete ≤ {}, FIPAttached / Ready / Authorized ≤ {} each, tunnels ≤ {}\n",
        duration::format(t.delete, Rounding::Down),
        duration::format(t.attach, Rounding::Down),
        duration::format(t.tunnel, Rounding::Down)
    )
}

fn names(j_targets: &[Value]) -> String {
    j_targets
        .iter()
        .map(|t| {
            format!(
                "{} {}",
                t["kind"].as_str().unwrap_or("?"),
                t["metadata"]["name"].as_str().unwrap_or("?")
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The heading of a summary and where it acts.
fn head(title: &str, context: &str, ns: &str) -> String {
    paint(HEADING, title) + &format!("\n  where      context {context}, namespace {ns}\n")
}

/// What a cutover will do, shown before the prompt.
pub fn cutover_summary(
    context: &str,
    plan: &Plan,
    detach: Option<usize>,
    bundle: &std::path::Path,
    t: &Waits,
) -> String {
    let ns = plan.source.namespace.as_deref().unwrap_or_default();
    let name = &plan.source.name;
    let targets: Vec<Value> = plan.targets.objects().into_iter().map(|(_, v)| v).collect();
    let mut out = head(&format!("Cutover of IPsecGateway {ns}/{name}"), context, ns);
    out.push_str(&format!(
        "  delete     IPsecGateway {name} (uid {}, generation {}): the tunnel goes down here\n",
        plan.source.uid.as_deref().unwrap_or("?"),
        plan.source
            .generation
            .map(|g| g.to_string())
            .unwrap_or("?".into())
    ));
    out.push_str(&format!(
        "  create     {} (server-side apply, field manager vpnmig)\n",
        names(&targets)
    ));
    out.push_str(&pinned(&targets));
    if let Some(fp) = &plan.source.psk_fingerprint {
        out.push_str(&format!(
            "             PSK fingerprint {fp} (the key itself is never shown)\n"
        ));
    }
    if let Some(n) = detach {
        out.push_str(&format!(
            "  PSK        the Secret is owned by the old gateway: {n} ownerReference(s) removed first (recorded in the journal)\n"
        ));
    }
    out.push_str(&format!(
        "  journal    ConfigMap {ns}/{} and bundle {}\n",
        journal::object_name(name),
        bundle.display()
    ));
    if let Some(cidr) = plan.targets.gateway.spec.service_cidr.as_deref() {
        out.push_str(&format!(
            "  rollback   restores the IPsecGateway verbatim; that kind cannot pin its serviceCIDR, so it keeps {cidr} only if the operator hands it out again\n"
        ));
    }
    out.push_str(&waits(t));
    out
}

/// What resuming a cutover will do.
pub fn resume_summary(context: &str, j: &Journal, t: &Waits) -> String {
    let mut out = head(
        &format!(
            "Resuming the cutover of {}/{} from phase {}",
            j.namespace, j.gateway, j.phase
        ),
        context,
        &j.namespace,
    );
    if let Some(e) = j.history.last() {
        out.push_str(&format!(
            "  last step  {} at {} by {}\n",
            e.phase, e.at, e.by
        ));
    }
    if let Some(err) = &j.last_error {
        out.push_str(&format!("  stopped on {err}\n"));
    }
    out.push_str(&format!(
        "  create     {} (from the journal)\n",
        names(&j.targets)
    ));
    out.push_str(&pinned(&j.targets));
    out.push_str(&waits(t));
    out
}

/// What `cutover --forward` will do.
pub fn forward_summary(context: &str, j: &Journal, t: &Waits) -> String {
    let mut out = head(
        &format!(
            "Cutting {}/{} over again, to the journal's targets",
            j.namespace, j.gateway
        ),
        context,
        &j.namespace,
    );
    if let Some(err) = &j.last_error {
        out.push_str(&format!("  why        the rollback stopped on: {err}\n"));
    }
    out.push_str(&format!(
        "  delete     IPsecGateway {} (the re-created one, uid {})\n",
        j.gateway,
        j.old_uid.as_deref().unwrap_or("?")
    ));
    out.push_str(&format!(
        "  create     {} (from the journal)\n",
        names(&j.targets)
    ));
    out.push_str(&pinned(&j.targets));
    out.push_str(&waits(t));
    out
}

/// What a rollback will do.
///
/// `peers`: the VPNPeers this rollback will delete, as judged before the prompt (the
/// journal's, less any left alone, plus any extra named by `--delete-extra-peers`);
/// `None` when the new objects are already gone.
pub fn rollback_summary(context: &str, j: &Journal, peers: Option<&[String]>, t: &Waits) -> String {
    let mut out = head(
        &format!(
            "Rollback of {}/{} (journal phase {})",
            j.namespace, j.gateway, j.phase
        ),
        context,
        &j.namespace,
    );
    match peers {
        Some(peers) => out.push_str(&format!(
            "  delete     VPNGateway {}{} (if present); the floating IP {} is pinned, so it is only disassociated\n",
            j.gateway,
            peers.iter().map(|p| format!(", VPNPeer {p}")).collect::<String>(),
            j.floating_ip
        )),
        None => out.push_str("  delete     nothing: the new objects are already gone\n"),
    }
    out.push_str(&format!(
        "  create     IPsecGateway {} from the saved manifest (uid was {}), unless it still exists\n",
        j.gateway,
        j.old_uid.as_deref().unwrap_or("?")
    ));
    if let (Some(cidr), _) = j.pinned_addresses() {
        out.push_str(&format!(
            "  addresses  that kind cannot pin its serviceCIDR: it gets {cidr} back only if the operator hands it out again (checked before the tunnels)\n"
        ));
    }
    out.push_str(&waits(t));
    out
}

/// The final report, as wide as stdout.
pub fn report(operation: &str, j: &Journal, rows: &[Row], format: Format) -> String {
    report_width(operation, j, rows, format, crate::output::width::detect())
}

/// The final report, its verify table in lines of at most `width` columns.
pub fn report_width(
    operation: &str,
    j: &Journal,
    rows: &[Row],
    format: Format,
    width: usize,
) -> String {
    let cm = format!("{}/{}", j.namespace, journal::object_name(&j.gateway));
    match format {
        Format::Json => {
            let doc = json!({
                "operation": operation,
                "namespace": j.namespace,
                "gateway": j.gateway,
                "phase": j.phase,
                "outageMs": if operation == "cutover" { j.outage_ms } else { None },
                "journal": format!("ConfigMap {cm}"),
                "verify": rows,
            });
            let mut doc = doc;
            let outage = if operation == "cutover" {
                j.outage.as_ref()
            } else {
                j.rollback_outage.as_ref()
            };
            if let Some(o) = outage {
                doc["outage"] = json!(o);
            }
            if let Some(c) = j.data_plane.as_ref().filter(|_| operation == "cutover") {
                doc["dataPlane"] = json!(c);
            }
            serde_json::to_string_pretty(&doc).expect("reports serialize") + "\n"
        }
        Format::Text => {
            let mut out = paint(
                HEADING,
                format!("{operation} of {}/{}: {}", j.namespace, j.gateway, j.phase),
            ) + "\n";
            if operation == "cutover" {
                // After a resume the first tunnel is seen when the resumed run looks: the
                // figure is then an upper bound.
                let runs: std::collections::BTreeSet<&str> =
                    j.history.iter().map(|e| e.by.as_str()).collect();
                let bound = if runs.len() > 1 { "at most " } else { "" };
                out.push_str(&match (j.outage.as_ref(), j.outage_ms) {
                    (Some(o), _) => crate::output::dataplane::outage(o, bound),
                    (None, Some(ms)) => format!(
                        "  outage     {bound}{} (from the delete of the IPsecGateway to the first ESTABLISHED tunnel)\n",
                        elapsed(std::time::Duration::from_millis(ms))
                    ),
                    (None, None) => "  outage     not measured (the delete time or the first tunnel was not seen)\n".into(),
                });
            } else if let Some(o) = &j.rollback_outage {
                out.push_str(&crate::output::dataplane::outage(o, ""));
            }
            out.push_str(&format!("  journal    ConfigMap {cm}, phase {}\n", j.phase));
            let mut out = crate::output::width::hanging(&out, width);
            out.push('\n');
            out.push_str(&crate::output::verify::render(rows, width));
            if let Some(c) = j.data_plane.as_ref().filter(|_| operation == "cutover") {
                out.push('\n');
                out.push_str(&crate::output::dataplane::render_width(c, width));
            }
            out
        }
    }
}
