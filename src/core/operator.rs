//! What the operator will answer for the objects a plan applies (issue 21 item 9): its
//! `Authorized` condition on each VPNPeer, decided by the rules of DESIGN.md §2, so that
//! a plan never says READY for a window the operator would refuse after the delete.
//! Pure.
//!
//! "One VPNPeer on a gateway and no `authorization` block = default-allow (it reaches every
//! exposure). A second peer flips the gateway to default-deny: each peer reaches only what
//! its `authorization` grants; a grant naming an unknown exposure leaves the peer
//! `Authorized=False`." A peer of a default-deny gateway whose authorization grants
//! nothing is `Authorized=False` too (reason `NoGrants`). The sandbox's simulated operator
//! (`tests/sandbox/src/operator/auth.rs`) decides the same; a test there compares the two
//! over one table.
//!
//! The other answers §2 describes are predicted by the checks that already read their
//! facts: `FIPAttached` (`fip-pinned`, `fip-unique`), the service CIDR taken from the pool
//! (`service-cidr`, `service-cidr-unique`), the virtual IPs (`virtual-ips`) and the
//! proposals (`proposal-allowlist`); docs/model.md maps each answer to its check.
//!
//! Layer 2 (rules): imports only from layers 0 to 2; see docs/architecture.md.

use crate::core::model::{Authorization, Exposure, ReverseExposure};

/// The operator's `Authorized` condition of one peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Authorized {
    /// The only peer, without an authorization block: reaches every exposure.
    DefaultAllow,
    /// Its authorization grants existing exposures.
    Granted,
    /// Default-deny (several peers) and the peer grants nothing: no block, or an empty one.
    NoGrants,
    /// Its authorization names exposures the gateway does not have (`exposure "x"`,
    /// `reverse exposure "y"`).
    UnknownExposure(Vec<String>),
}

impl Authorized {
    /// Whether the condition is True.
    pub fn ok(&self) -> bool {
        matches!(self, Authorized::DefaultAllow | Authorized::Granted)
    }

    /// The condition's reason, as the operator writes it.
    pub fn reason(&self) -> &'static str {
        match self {
            Authorized::DefaultAllow => "DefaultAllow",
            Authorized::Granted => "Granted",
            Authorized::NoGrants => "NoGrants",
            Authorized::UnknownExposure(_) => "UnknownExposure",
        }
    }
}

/// The `Authorized` condition of a peer with `auth`, on a gateway with `peers_on_gateway`
/// VPNPeers (every VPNPeer of the namespace whose `spec.gatewayRef.name` names it) and
/// these exposures.
pub fn authorize(
    peers_on_gateway: usize,
    auth: Option<&Authorization>,
    exposures: &[Exposure],
    reverse: &[ReverseExposure],
) -> Authorized {
    let Some(auth) = auth else {
        return if peers_on_gateway <= 1 {
            Authorized::DefaultAllow
        } else {
            Authorized::NoGrants
        };
    };
    let mut unknown = Vec::new();
    for g in &auth.exposures {
        if !exposures.iter().any(|e| e.name == *g) {
            unknown.push(format!("exposure \"{g}\""));
        }
    }
    for g in &auth.reverse_exposures {
        if !reverse.iter().any(|e| e.name == *g) {
            unknown.push(format!("reverse exposure \"{g}\""));
        }
    }
    if !unknown.is_empty() {
        return Authorized::UnknownExposure(unknown);
    }
    if auth.exposures.is_empty() && auth.reverse_exposures.is_empty() && peers_on_gateway > 1 {
        return Authorized::NoGrants;
    }
    Authorized::Granted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(name: &str) -> Exposure {
        Exposure {
            name: name.into(),
            ..Default::default()
        }
    }

    fn grants(e: &[&str], r: &[&str]) -> Authorization {
        Authorization {
            exposures: e.iter().map(|s| s.to_string()).collect(),
            reverse_exposures: r.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn each_rule_of_design_2() {
        let crm = [exp("crm")];
        let rows: Vec<(usize, Option<Authorization>, &[Exposure], &str)> = vec![
            (1, None, &crm, "DefaultAllow"),
            (1, None, &[], "DefaultAllow"),
            (2, None, &crm, "NoGrants"),
            (3, Some(grants(&[], &[])), &crm, "NoGrants"),
            (2, Some(grants(&[], &[])), &[], "NoGrants"),
            (1, Some(grants(&[], &[])), &[], "Granted"),
            (2, Some(grants(&["crm"], &[])), &crm, "Granted"),
            (2, Some(grants(&["erp"], &[])), &crm, "UnknownExposure"),
            (1, Some(grants(&["erp"], &[])), &crm, "UnknownExposure"),
            (2, Some(grants(&[], &["ldap"])), &crm, "UnknownExposure"),
        ];
        for (n, auth, exposures, want) in rows {
            assert_eq!(
                authorize(n, auth.as_ref(), exposures, &[]).reason(),
                want,
                "{n} peers, {auth:?}"
            );
        }
    }
}
