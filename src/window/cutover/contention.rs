//! Another gateway claiming the journal's floating IP while the old one is gone (a21r
//! R12, issue 21 kind 3: a copy of the old IPsecGateway under another name, created
//! during the delete with the same pinned floating IP; the cutover applied anyway and
//! timed out at the floating-IP wait pointing at `openstack`). Checked right before the
//! apply and before the floating-IP wait, and again when that wait times out: any gateway
//! (either kind, any name, any namespace vpnmig can list) but the window's own that pins
//! or holds the floating IP stops the window, named, with the way on that keeps the
//! floating IP for the client. Layer: the window engine (`src/window/`), part of
//! `window::cutover`; it reads the cluster and changes nothing.

use super::*;
use crate::window::gitops::claims;

/// The words every stop of this module starts its message with: the cutover's stop
/// handler gives their own hint, not the generic "restore it or resume".
pub(super) const CONTENDED: &str = "another gateway claims the floating IP";

/// Whether `e` is a stop of this module.
pub(super) fn is_contention(e: &Error) -> bool {
    matches!(e, Error::Stop { message, .. } if message.starts_with(CONTENDED))
}

/// `Err`: a gateway other than the window's own claims the journal's floating IP, or
/// the gateways could not be listed at all (never read as "none"). `applied`: the new
/// objects are applied already (said so: the VPNGateway waits at AlreadyAssociated).
/// Gateways of other namespaces that could not be listed while the window's own could
/// are said (a warning) and stop nothing: the client's tunnel is down.
pub(super) async fn fip_uncontended(w: &Window<'_>, applied: bool) -> Result<(), Error> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let fip = w.journal.floating_ip.clone();
    let mut fips = vec![fip.clone()];
    let old = w.journal.old_fip();
    if !old.trim().is_empty() && !fips.iter().any(|f| crate::core::addr::same_addr(f, &old)) {
        fips.push(old);
    }
    let found = match claims::claimants_of(w.cluster, (&ns, &name), &fips).await? {
        Ok((found, unread)) => {
            if let Some(why) = unread.filter(|_| found.is_empty()) {
                w.ev.emit(Event::Warning(format!(
                    "no other gateway in namespace {ns} claims the floating IP {fip}, but the other namespaces could not be listed ({why}): one there that pins or holds it would leave the VPNGateway at AlreadyAssociated"
                )));
            }
            found
        }
        Err(why) => {
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!(
                    "{CONTENDED} {fip} or not: that cannot be told, the gateways could not be listed ({why}); nothing {} while it is not known",
                    if applied {
                        "more is waited for"
                    } else {
                        "is applied"
                    }
                ),
                hint: Some(crate::window::error::hint!(
                    "the client's tunnel is down since the delete of ipsecgateway/{name} -n {ns}; ask for `list ipsecgateways,vpngateways` in all namespaces (a ClusterRole), then `{}` goes on",
                    crate::window::error::Run::cutover(&name, &ns)
                )),
            });
        }
    };
    if found.is_empty() {
        return Ok(());
    }
    let said: Vec<String> = found.iter().map(|c| c.shown()).collect();
    // Mid-window a claimant that only pins it now holds it as soon as the operator
    // associates it (the old gateway is gone): the way on is its delete while its spec
    // still pins it, never an unpin.
    let ways: Vec<String> = found
        .iter()
        .map(|c| {
            let now = crate::core::live::FipClaim {
                holds: true,
                ..c.claim
            };
            format!(
                "{}: {}",
                c.display(),
                now.way_out(c.kind, &c.name, &c.namespace, &fip)
            )
        })
        .collect();
    Err(Error::Stop {
        code: exit::REFUSED,
        message: format!(
            "{CONTENDED} {fip} of {ns}/{name}: {}; {}; the client's tunnel is down since the delete of ipsecgateway/{name} -n {ns}",
            said.join("; and "),
            if applied {
                format!(
                    "vpngateway/{name} -n {ns} is applied and waits at FIPAttached=False (AlreadyAssociated) while it does"
                )
            } else {
                "nothing was applied: the new gateway would wait at FIPAttached=False (AlreadyAssociated) beside it".to_string()
            }
        ),
        hint: Some(crate::window::error::hint!(
            "{}; suspend first whatever syncs it, or it comes back; then `{}` goes on (`{}` goes back once it is gone); never take the floating IP out of the spec of a gateway that holds it: deleted unpinned, its cleanup releases it to the pool",
            ways.join("; "),
            crate::window::error::Run::cutover(&name, &ns).with(&["--yes"]),
            crate::window::error::Run::rollback(&name, &ns)
        )),
    })
}
