//! Authorization of VPNPeers. DESIGN.md §2:
//! "One VPNPeer on a gateway and no `authorization` block = default-allow (it reaches every
//! exposure). A second peer flips the gateway to default-deny: each peer reaches only what
//! its `authorization` grants; a grant naming an unknown exposure leaves the peer
//! `Authorized=False` while IKE may still be ESTABLISHED."
//! IPsecGateway tunnels are always authorized (the old model has no authorization).

use vpnmig::core::model::{Authorization, Exposure, ReverseExposure};

/// The `Authorized` condition of a peer: (ok, reason, message).
pub fn authorize(
    gateway: &str,
    peers_on_gateway: usize,
    auth: Option<&Authorization>,
    exposures: &[Exposure],
    reverse: &[ReverseExposure],
) -> (bool, &'static str, String) {
    let Some(auth) = auth else {
        return if peers_on_gateway <= 1 {
            (
                true,
                "DefaultAllow",
                format!("only peer of gateway {gateway}: default-allow, reaches every exposure"),
            )
        } else {
            (
                false,
                "NoGrants",
                format!(
                    "gateway {gateway} has {peers_on_gateway} peers (default-deny) and this peer has no authorization block"
                ),
            )
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
        return (
            false,
            "UnknownExposure",
            format!(
                "authorization grants {} that gateway {gateway} does not have",
                unknown.join(", ")
            ),
        );
    }
    if auth.exposures.is_empty() && auth.reverse_exposures.is_empty() && peers_on_gateway > 1 {
        return (
            false,
            "NoGrants",
            format!(
                "gateway {gateway} has {peers_on_gateway} peers (default-deny) and this peer's authorization grants nothing"
            ),
        );
    }
    (
        true,
        "Granted",
        format!(
            "granted exposures [{}], reverse exposures [{}]",
            auth.exposures.join(", "),
            auth.reverse_exposures.join(", ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exps() -> Vec<Exposure> {
        vec![Exposure {
            name: "crm".into(),
            ..Default::default()
        }]
    }

    #[test]
    fn default_allow_default_deny_and_unknown() {
        assert_eq!(authorize("acme", 1, None, &exps(), &[]).1, "DefaultAllow");
        assert_eq!(authorize("acme", 2, None, &exps(), &[]).1, "NoGrants");
        let ok = Authorization {
            exposures: vec!["crm".into()],
            reverse_exposures: vec![],
        };
        assert!(authorize("acme", 2, Some(&ok), &exps(), &[]).0);
        let bad = Authorization {
            exposures: vec!["crm".into(), "erp".into()],
            reverse_exposures: vec!["ldap".into()],
        };
        let (ok, reason, msg) = authorize("acme", 2, Some(&bad), &exps(), &[]);
        assert!(!ok);
        assert_eq!(reason, "UnknownExposure");
        assert!(
            msg.contains("exposure \"erp\"") && msg.contains("reverse exposure \"ldap\""),
            "{msg}"
        );
    }

    /// vpnmig's plan predicts this operator's answer (`vpnmig::core::operator`, issue 21
    /// item 9): the two agree on every row.
    #[test]
    fn vpnmig_predicts_the_same_answer() {
        let g = |e: &[&str], r: &[&str]| Authorization {
            exposures: e.iter().map(|s| s.to_string()).collect(),
            reverse_exposures: r.iter().map(|s| s.to_string()).collect(),
        };
        let rev = vec![ReverseExposure {
            name: "ldap".into(),
            ..Default::default()
        }];
        for n in 0..4 {
            for auth in [
                None,
                Some(g(&[], &[])),
                Some(g(&["crm"], &[])),
                Some(g(&[], &["ldap"])),
                Some(g(&["erp"], &[])),
                Some(g(&["crm"], &["nfs"])),
            ] {
                for (e, r) in [(exps(), rev.clone()), (vec![], vec![])] {
                    let sandbox = authorize("acme", n, auth.as_ref(), &e, &r);
                    let vpnmig = vpnmig::core::operator::authorize(n, auth.as_ref(), &e, &r);
                    assert_eq!(
                        (sandbox.0, sandbox.1),
                        (vpnmig.ok(), vpnmig.reason()),
                        "{n} peers, {auth:?}, {} exposures",
                        e.len()
                    );
                }
            }
        }
    }
}
