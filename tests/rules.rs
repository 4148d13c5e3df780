//! One test per translation rule (DESIGN.md §3) and per check (issue: "pure checks"),
//! each with the real expected values.

mod common;

use common::{Gw, tunnel};
use serde_json::{Value, json};
use vpnmig::core::allowlist::Allowlist;
use vpnmig::core::checks::{self, Inputs};
use vpnmig::core::finding::{CheckResult, Outcome, Severity};
use vpnmig::core::full_plan::build;
use vpnmig::core::plan::Plan;
use vpnmig::core::report::{Rule, Verdict};

fn check<'a>(plan: &'a Plan, id: &str) -> &'a CheckResult {
    plan.checks
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no check {id}"))
}

fn gw_json(plan: &Plan) -> Value {
    serde_json::to_value(&plan.targets.gateway).unwrap()
}

fn peer_json(plan: &Plan, i: usize) -> Value {
    serde_json::to_value(&plan.targets.peers[i]).unwrap()
}

// ---- translation rules ---------------------------------------------------------------

#[test]
fn pinned_gateway_values_arrive_unchanged() {
    let plan = Gw::new("acme").plan();
    let gw = gw_json(&plan);
    assert_eq!(gw["apiVersion"], "vpn.bnerd.net/v1alpha1");
    assert_eq!(gw["kind"], "VPNGateway");
    assert_eq!(gw["metadata"]["name"], "acme");
    assert_eq!(gw["metadata"]["namespace"], "tenant-test");
    assert_eq!(gw["spec"]["protocol"], "ipsec");
    assert_eq!(
        gw["spec"]["endpoint"],
        json!({"floatingIP": "198.51.100.50", "network": "public"})
    );
    assert_eq!(gw["spec"]["serviceCIDR"], "10.250.9.0/24");
    assert_eq!(
        gw["spec"]["ipsec"]["ike"],
        json!({"version": 2, "proposals": ["aes256-sha256-modp2048"], "lifetime": "24h"})
    );
    assert_eq!(
        gw["spec"]["exposures"],
        json!([{"name": "web", "virtualIP": "10.250.9.10", "target": {"address": "web.tenant-test.svc", "port": 443}, "protocol": "TCP"}])
    );
    assert!(
        !plan.blocked,
        "{:#?}",
        plan.checks
            .iter()
            .filter(|c| c.blocks())
            .collect::<Vec<_>>()
    );
}

#[test]
fn virtual_ips_are_pinned_by_exposure_name_not_position() {
    let plan = Gw::new("acme")
        .set("/spec/exposures", json!([
            {"name": "a", "target": {"address": "a.svc", "port": 80}, "protocol": "TCP"},
            {"name": "b", "target": {"address": "b.svc", "port": 53}, "protocol": "UDP"}
        ]))
        .set("/status/exposures", json!([{"name": "b", "virtualIP": "10.250.9.22"}, {"name": "a", "virtualIP": "10.250.9.11"}]))
        .plan();
    let gw = gw_json(&plan);
    assert_eq!(gw["spec"]["exposures"][0]["virtualIP"], "10.250.9.11");
    assert_eq!(gw["spec"]["exposures"][1]["virtualIP"], "10.250.9.22");
    let row = plan
        .fields
        .iter()
        .find(|r| r.from.to_string() == "status.exposures[0].virtualIP")
        .unwrap();
    assert_eq!(
        row.to.as_ref().unwrap().to_string(),
        "spec.exposures[1].virtualIP"
    );
    assert_eq!(row.verdict, Verdict::Identical);
}

#[test]
fn one_tunnel_gives_one_peer_named_like_the_gateway_without_authorization() {
    let plan = Gw::new("acme").plan();
    assert_eq!(plan.targets.peers.len(), 1);
    let p = peer_json(&plan, 0);
    assert_eq!(p["kind"], "VPNPeer");
    assert_eq!(p["metadata"]["name"], "acme");
    assert_eq!(p["spec"]["gatewayRef"], json!({"name": "acme"}));
    assert_eq!(
        p["spec"].get("authorization"),
        None,
        "default-allow: no authorization block"
    );
    assert_eq!(
        p["spec"]["ipsec"],
        json!({
            "peer": {"address": "203.0.113.50", "id": "main.client.example"},
            "remoteSubnets": ["10.60.0.0/16"],
            "pskSecretRef": {"name": "acme-psk", "key": "psk"},
            "esp": {"proposals": ["aes256gcm16-modp2048"], "lifetime": "1h"},
            "dpd": {"delay": "30s", "timeout": "150s", "action": "restart"}
        })
    );
}

#[test]
fn several_tunnels_give_prefixed_peers_each_granted_everything() {
    let plan = Gw::new("acme")
        .tunnels(vec![tunnel("hq", "203.0.113.1", &["10.1.0.0/16", "10.3.0.0/16", "10.2.0.0/16"]), tunnel("branch", "203.0.113.2", &["10.9.0.0/24"])])
        .set("/spec/reverseExposures", json!([{"name": "ldap", "target": {"address": "10.1.0.5", "port": 636}, "protocol": "TCP"}]))
        .plan();
    let names: Vec<_> = plan
        .targets
        .peers
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["acme-hq", "acme-branch"]);
    for i in 0..2 {
        let p = peer_json(&plan, i);
        assert_eq!(
            p["spec"]["authorization"],
            json!({"exposures": ["web"], "reverseExposures": ["ldap"]})
        );
        assert_eq!(
            p["spec"]["ipsec"]["pskSecretRef"],
            json!({"name": "acme-psk", "key": "psk"}),
            "PSK ref on every peer"
        );
    }
    // Traffic selectors keep their order.
    assert_eq!(
        peer_json(&plan, 0)["spec"]["ipsec"]["remoteSubnets"],
        json!(["10.1.0.0/16", "10.3.0.0/16", "10.2.0.0/16"])
    );
    assert_eq!(
        peer_json(&plan, 1)["spec"]["ipsec"]["peer"]["address"],
        "203.0.113.2"
    );
    assert_eq!(
        gw_json(&plan)["spec"]["reverseExposures"][0]["name"],
        "ldap"
    );
    assert!(!plan.blocked);
}

#[test]
fn user_metadata_is_carried_and_server_metadata_is_not() {
    let plan = Gw::new("acme")
        .set("/metadata/annotations", json!({"kubectl.kubernetes.io/last-applied-configuration": "{}", "ops/ticket": "NET-1"}))
        .plan();
    for obj in [gw_json(&plan), peer_json(&plan, 0)] {
        let m = &obj["metadata"];
        assert_eq!(m["labels"], json!({"client": "acme"}));
        assert_eq!(
            m["annotations"],
            json!({"ops/ticket": "NET-1", "vpnmig.bnerd.net/migrated-from": "ipsecgateways.ipsec.bnerd.net/acme"})
        );
        for server in [
            "uid",
            "resourceVersion",
            "generation",
            "finalizers",
            "managedFields",
            "creationTimestamp",
        ] {
            assert_eq!(m.get(server), None, "{server} not carried");
        }
    }
    let not_carried: Vec<String> = plan
        .fields
        .iter()
        .filter(|r| r.rule == Rule::NotCarried)
        .map(|r| r.from.to_string())
        .collect();
    assert_eq!(
        not_carried,
        [
            r#"metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]"#,
            "metadata.uid",
            "metadata.resourceVersion",
            "metadata.generation",
            "metadata.finalizers"
        ]
    );
}

#[test]
fn every_spec_leaf_is_accounted_for_and_unknown_ones_block() {
    let plan = Gw::new("acme")
        .set("/spec/tunnels/0/mtu", json!(1400))
        .set("/spec/logLevel", json!("debug"))
        .plan();
    let unknown: Vec<String> = plan
        .fields
        .iter()
        .filter(|r| r.rule == Rule::Unknown)
        .map(|r| r.from.to_string())
        .collect();
    // Keys in alphabetical order, whatever the document's (issue 10 item 6).
    assert_eq!(unknown, ["spec.logLevel", "spec.tunnels[0].mtu"]);
    let c = check(&plan, "unknown-fields");
    assert_eq!(c.outcome, Outcome::Fail);
    assert_eq!(
        c.findings
            .iter()
            .map(|f| f.path.as_str())
            .collect::<Vec<_>>(),
        ["spec.logLevel", "spec.tunnels[0].mtu"]
    );
    assert_eq!(c.findings[1].seen, "1400");
    assert!(plan.blocked);
}

#[test]
fn every_target_leaf_is_explained_by_a_report_row() {
    let plan = Gw::new("acme")
        .tunnels(vec![
            tunnel("a", "203.0.113.1", &["10.1.0.0/16"]),
            tunnel("b", "203.0.113.2", &["10.2.0.0/16"]),
        ])
        .plan();
    let objects = vpnmig::output::manifest::targets(&plan);
    for (label, obj) in objects {
        let mut leaves = Vec::new();
        leaves_of(&obj, String::new(), &mut leaves);
        for leaf in leaves
            .iter()
            .filter(|l| !l.starts_with("apiVersion") && !l.starts_with("kind"))
        {
            let explained = plan.fields.iter().any(|r| {
                r.target.as_deref() == Some(label.as_str())
                    && r.to
                        .as_ref()
                        .is_some_and(|t| leaf.starts_with(&t.to_string()))
            });
            assert!(explained, "{label} {leaf} has no row in the field report");
        }
    }
}

fn leaves_of(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => o.iter().for_each(|(k, c)| {
            leaves_of(
                c,
                if at.is_empty() {
                    k.clone()
                } else if k.contains(['.', '/']) {
                    format!("{at}[{k:?}]")
                } else {
                    format!("{at}.{k}")
                },
                out,
            )
        }),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, c)| leaves_of(c, format!("{at}[{i}]"), out)),
        _ => out.push(at),
    }
}

// ---- checks --------------------------------------------------------------------------

#[test]
fn unpinned_fip_blocks_with_the_patch_that_pins_it() {
    let plan = Gw::new("acme").unpinned().plan();
    let c = check(&plan, "fip-pinned");
    assert!(c.blocks());
    let f = &c.findings[0];
    assert_eq!(
        (
            f.object.as_str(),
            f.path.as_str(),
            f.seen.as_str(),
            f.wanted.as_str()
        ),
        (
            "IPsecGateway tenant-test/acme",
            "spec.endpoint.floatingIP",
            "<unset>",
            "198.51.100.50"
        )
    );
    assert!(f.fix.as_ref().unwrap().starts_with(r#"kubectl patch ipsecgateway acme -n tenant-test --type merge -p '{"spec":{"endpoint":{"floatingIP":"198.51.100.50"}}}'"#), "{:?}", f.fix);
    // The plan still shows the FIP the new gateway would need, taken from status.
    assert_eq!(
        gw_json(&plan)["spec"]["endpoint"]["floatingIP"],
        "198.51.100.50"
    );
    let row = plan
        .fields
        .iter()
        .find(|r| r.from.to_string() == "status.floatingIP")
        .unwrap();
    assert_eq!(row.rule, Rule::Pinned);
}

#[test]
fn empty_fip_counts_as_unpinned() {
    let plan = Gw::new("acme")
        .set("/spec/endpoint/floatingIP", json!(""))
        .plan();
    assert_eq!(check(&plan, "fip-pinned").findings[0].seen, "\"\" (empty)");
}

#[test]
fn pinned_fip_must_equal_status() {
    let plan = Gw::new("acme")
        .set("/status/floatingIP", json!("198.51.100.99"))
        .plan();
    let f = &check(&plan, "fip-pinned").findings[0];
    assert_eq!(
        (f.path.as_str(), f.seen.as_str(), f.wanted.as_str()),
        ("status.floatingIP", "198.51.100.99", "198.51.100.50")
    );
    let plan = Gw::new("acme")
        .set("/spec/endpoint/floatingIP", json!("198.51.100.500"))
        .plan();
    assert_eq!(
        check(&plan, "fip-pinned").findings[0].wanted,
        "an IPv4 or IPv6 address"
    );
}

#[test]
fn service_cidr_must_be_present_and_a_network() {
    let plan = Gw::new("acme").remove("/status/serviceCIDR").plan();
    let c = check(&plan, "service-cidr");
    assert!(c.blocks());
    assert_eq!(c.findings[0].path, "status.serviceCIDR");
    assert_eq!(c.findings[0].seen, "<unset>");
    assert_eq!(check(&plan, "virtual-ips").outcome, Outcome::Skipped);
    assert_eq!(gw_json(&plan)["spec"].get("serviceCIDR"), None);

    let plan = Gw::new("acme")
        .set("/status/serviceCIDR", json!("10.250.9.7/24"))
        .plan();
    let f = &check(&plan, "service-cidr").findings[0];
    assert_eq!(
        (f.seen.as_str(), f.wanted.as_str()),
        ("10.250.9.7/24", "10.250.9.0/24")
    );
    let plan = Gw::new("acme")
        .set("/status/serviceCIDR", json!("ten-two-fifty"))
        .plan();
    assert!(check(&plan, "service-cidr").blocks());
}

#[test]
fn remote_subnets_must_be_networks_outside_the_service_cidr() {
    let plan = Gw::new("acme")
        .tunnels(vec![tunnel(
            "main",
            "203.0.113.50",
            &[
                "10.60.0.0/16",
                "10.250.0.0/16",
                "10.61.1.5/24",
                "bogus",
                "2001:db8:5::/48",
            ],
        )])
        .plan();
    let c = check(&plan, "remote-subnets");
    let got: Vec<(&str, &str, &str)> = c
        .findings
        .iter()
        .map(|f| (f.path.as_str(), f.seen.as_str(), f.wanted.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (
                "spec.tunnels[0].remoteSubnets[1]",
                "10.250.0.0/16",
                "a network outside the serviceCIDR 10.250.9.0/24"
            ),
            (
                "spec.tunnels[0].remoteSubnets[2]",
                "10.61.1.5/24",
                "10.61.1.0/24"
            ),
            (
                "spec.tunnels[0].remoteSubnets[3]",
                "bogus",
                "a network in CIDR form, e.g. 10.20.0.0/16"
            ),
        ]
    );
}

#[test]
fn peer_address_is_an_ip_or_a_dns_name() {
    for ok in ["203.0.113.7", "2001:db8::7", "vpn.client.example"] {
        let plan = Gw::new("acme")
            .set("/spec/tunnels/0/peer/address", json!(ok))
            .plan();
        assert_eq!(check(&plan, "peer-address").outcome, Outcome::Pass, "{ok}");
    }
    for bad in ["203.0.113.300", "vpn client", "fw_1.example"] {
        let plan = Gw::new("acme")
            .set("/spec/tunnels/0/peer/address", json!(bad))
            .plan();
        let f = &check(&plan, "peer-address").findings[0];
        assert_eq!(
            (f.path.as_str(), f.seen.as_str()),
            ("spec.tunnels[0].peer.address", bad)
        );
    }
}

#[test]
fn proposals_are_checked_for_syntax_then_allowlist() {
    let plan = Gw::new("acme")
        .set(
            "/spec/ike/proposals",
            json!(["3des-sha1-modp1024", "aes256-sha256-modp2048"]),
        )
        .set(
            "/spec/tunnels/0/esp/proposals",
            json!(["aes256-foo512", "aes128-sha1"]),
        )
        .plan();
    let syntax = check(&plan, "proposal-syntax");
    assert_eq!(syntax.findings.len(), 1);
    assert_eq!(syntax.findings[0].path, "spec.tunnels[0].esp.proposals[0]");
    assert_eq!(
        syntax.findings[0].message,
        "not a valid ESP proposal: unknown algorithm keyword `foo512`"
    );
    let allow = check(&plan, "proposal-allowlist");
    let paths: Vec<_> = allow
        .findings
        .iter()
        .map(|f| (f.path.as_str(), f.seen.as_str()))
        .collect();
    assert_eq!(
        paths,
        [
            ("spec.ike.proposals[0]", "3des-sha1-modp1024"),
            ("spec.tunnels[0].esp.proposals[1]", "aes128-sha1")
        ]
    );

    // The operator's own list replaces the default.
    let custom = Allowlist {
        ike: vec!["3des-sha1-modp1024".into(), "aes256-sha256-modp2048".into()],
        esp: vec!["aes128-sha1".into()],
    };
    let plan = build(
        &Gw::new("acme")
            .set("/spec/ike/proposals", json!(["3des-sha1-modp1024"]))
            .set("/spec/tunnels/0/esp/proposals", json!(["aes128-sha1"]))
            .source(),
        &custom,
    );
    assert_eq!(check(&plan, "proposal-allowlist").outcome, Outcome::Pass);
}

#[test]
fn target_names_must_be_dns1123() {
    let plan = Gw::new("acme")
        .tunnels(vec![
            tunnel("Main_1", "203.0.113.1", &["10.1.0.0/16"]),
            tunnel("b", "203.0.113.2", &["10.2.0.0/16"]),
        ])
        .plan();
    let c = check(&plan, "target-names");
    assert_eq!(c.findings.len(), 1);
    assert_eq!(
        (c.findings[0].object.as_str(), c.findings[0].seen.as_str()),
        ("VPNPeer tenant-test/acme-Main_1", "acme-Main_1")
    );
}

#[test]
fn authorization_grants_must_name_existing_exposures() {
    let gw = Gw::new("acme").tunnels(vec![
        tunnel("a", "203.0.113.1", &["10.1.0.0/16"]),
        tunnel("b", "203.0.113.2", &["10.2.0.0/16"]),
    ]);
    let source = gw.source();
    let mut plan = gw.plan();
    assert_eq!(check(&plan, "authorization-grants").outcome, Outcome::Pass);
    plan.targets.peers[1]
        .spec
        .authorization
        .as_mut()
        .unwrap()
        .exposures
        .push("crm".into());
    let results = checks::run(&Inputs {
        source: &source,
        targets: &plan.targets,
        fields: &plan.fields,
        allowlist: &Allowlist::default(),
    });
    let c = results
        .iter()
        .find(|c| c.id == "authorization-grants")
        .unwrap();
    assert_eq!(c.findings.len(), 1);
    assert_eq!(
        (
            c.findings[0].object.as_str(),
            c.findings[0].path.as_str(),
            c.findings[0].seen.as_str()
        ),
        (
            "VPNPeer tenant-test/acme-b",
            "spec.authorization.exposures[1]",
            "crm"
        )
    );
}

/// Issue 21 item 9: the plan predicts the operator's `Authorized` answer (DESIGN.md §2)
/// for every VPNPeer it applies, offline from the targets and live with the VPNPeers that
/// already name the gateway. One row per case: (name, tunnels, exposures, reverse
/// exposures, VPNPeers already naming the gateway, the findings as (object, path)).
#[test]
fn the_plan_predicts_whether_the_operator_authorizes_each_peer() {
    use vpnmig::core::live::authorization_check;
    let exp = |n: &str| json!({"name": n, "target": {"address": format!("{n}.svc"), "port": 443}, "protocol": "TCP"});
    let rev = |n: &str| json!({"name": n, "target": {"address": "10.20.1.5", "port": 636}, "protocol": "TCP"});
    let t = |n: &str, i: u8| tunnel(n, &format!("203.0.113.{i}"), &[&format!("10.{i}.0.0/16")]);
    type Row<'a> = (
        &'a str,
        Vec<Value>,
        Vec<Value>,
        Vec<Value>,
        Vec<&'a str>,
        Vec<(&'a str, &'a str)>,
    );
    let rows: Vec<Row> = vec![
        (
            "one tunnel, nothing exposed: default-allow",
            vec![t("main", 1)],
            vec![],
            vec![],
            vec![],
            vec![],
        ),
        (
            "two tunnels, exposures: each granted",
            vec![t("a", 1), t("b", 2)],
            vec![exp("web")],
            vec![],
            vec![],
            vec![],
        ),
        (
            "three tunnels, reverse exposures only: each granted",
            vec![t("a", 1), t("b", 2), t("c", 3)],
            vec![],
            vec![rev("ldap")],
            vec![],
            vec![],
        ),
        (
            "two tunnels, nothing exposed: NoGrants for each (the case)",
            vec![t("a", 1), t("b", 2)],
            vec![],
            vec![],
            vec![],
            vec![
                ("VPNPeer tenant-test/acme-a", "spec.authorization"),
                ("VPNPeer tenant-test/acme-b", "spec.authorization"),
            ],
        ),
        (
            "four tunnels, nothing exposed",
            vec![t("w", 1), t("x", 2), t("y", 3), t("z", 4)],
            vec![],
            vec![],
            vec![],
            vec![
                ("VPNPeer tenant-test/acme-w", "spec.authorization"),
                ("VPNPeer tenant-test/acme-x", "spec.authorization"),
                ("VPNPeer tenant-test/acme-y", "spec.authorization"),
                ("VPNPeer tenant-test/acme-z", "spec.authorization"),
            ],
        ),
        (
            "one tunnel and a VPNPeer already naming the gateway: default-deny, NoGrants",
            vec![t("main", 1)],
            vec![exp("web")],
            vec![],
            vec!["acme-old"],
            vec![
                ("VPNPeer tenant-test/acme-old", "spec.gatewayRef.name"),
                ("VPNPeer tenant-test/acme", "spec.authorization"),
            ],
        ),
        (
            "two tunnels granted, and a stray peer: the stray is named",
            vec![t("a", 1), t("b", 2)],
            vec![exp("web")],
            vec![],
            vec!["gitops-made"],
            vec![("VPNPeer tenant-test/gitops-made", "spec.gatewayRef.name")],
        ),
    ];
    for (what, tunnels, exposures, reverse, strays, want) in rows {
        let gw = Gw::new("acme")
            .tunnels(tunnels)
            .set("/spec/exposures", Value::Array(exposures.clone()))
            .set("/spec/reverseExposures", Value::Array(reverse))
            .set(
                "/status/exposures",
                Value::Array(
                    exposures
                        .iter()
                        .enumerate()
                        .map(|(i, e)| json!({"name": e["name"], "virtualIP": format!("10.250.9.{}", 10 + i)}))
                        .collect(),
                ),
            );
        let plan = gw.plan();
        let offline = check(&plan, "authorization-grants");
        let live = authorization_check(&plan, &Ok(strays.iter().map(|s| s.to_string()).collect()));
        let got = |c: &CheckResult| -> Vec<(String, String)> {
            c.findings
                .iter()
                .map(|f| (f.object.clone(), f.path.clone()))
                .collect()
        };
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(o, p)| (o.to_string(), p.to_string()))
            .collect();
        assert_eq!(got(&live), want, "{what} (live)");
        assert_eq!(live.blocks(), !want.is_empty(), "{what} (live)");
        // Offline knows no VPNPeer of the cluster: the same answer wherever none exists.
        if strays.is_empty() {
            assert_eq!(got(offline), want, "{what} (offline)");
            assert_eq!(
                plan.blocked,
                !want.is_empty(),
                "{what}: {:#?}",
                plan.checks
                    .iter()
                    .filter(|c| c.blocks())
                    .collect::<Vec<_>>()
            );
        }
        for f in offline
            .findings
            .iter()
            .chain(&live.findings)
            .filter(|f| f.path == "spec.authorization")
        {
            assert!(
                f.message.contains("Authorized=False (NoGrants)")
                    && f.message.contains("default-deny"),
                "{what}: {}",
                f.message
            );
            assert!(
                f.fix.as_deref().is_some_and(|x| x.contains("plan")),
                "{what}: {:?}",
                f.fix
            );
        }
    }
    // The VPNPeers could not be listed: never a pass.
    let plan = Gw::new("acme").plan();
    let c = authorization_check(&plan, &Err("403 forbidden".into()));
    assert!(c.blocks());
    assert_eq!(c.findings[0].seen, "<cannot read>");
}

#[test]
fn virtual_ips_must_exist_agree_and_sit_inside_the_service_cidr() {
    let plan = Gw::new("acme").set("/status/exposures", json!([])).plan();
    let f = &check(&plan, "virtual-ips").findings[0];
    assert_eq!(
        (f.path.as_str(), f.seen.as_str()),
        ("status.exposures[name=web].virtualIP", "<unset>")
    );

    let plan = Gw::new("acme")
        .set("/status/exposures/0/virtualIP", json!("10.251.0.10"))
        .plan();
    assert_eq!(
        check(&plan, "virtual-ips").findings[0].message,
        "exposure `web`: virtual IP 10.251.0.10 is outside the serviceCIDR 10.250.9.0/24"
    );

    let plan = Gw::new("acme")
        .set("/spec/exposures/0/virtualIP", json!("10.250.9.99"))
        .plan();
    let f = &check(&plan, "virtual-ips").findings[0];
    assert_eq!(
        (f.seen.as_str(), f.wanted.as_str()),
        ("10.250.9.99", "10.250.9.10")
    );
    // The plan keeps the address clients use now, and the report says the spec value changes.
    assert_eq!(
        gw_json(&plan)["spec"]["exposures"][0]["virtualIP"],
        "10.250.9.10"
    );
    let row = plan
        .fields
        .iter()
        .find(|r| r.from.to_string() == "spec.exposures[0].virtualIP")
        .unwrap();
    assert_eq!(
        (row.verdict, row.new_value.clone()),
        (Verdict::Differs, Some(json!("10.250.9.10")))
    );
    assert!(check(&plan, "values-identical").blocks());
}

#[test]
fn stale_or_unhealthy_sources_are_warnings_not_blockers() {
    let plan = Gw::new("acme")
        .set("/status/observedGeneration", json!(2))
        .set(
            "/status/conditions/1",
            json!({"type": "Ready", "status": "False", "reason": "Reconciling"}),
        )
        .set("/spec/ike/version", json!(1))
        .plan();
    for id in ["status-current", "source-ready", "ike-version"] {
        let c = check(&plan, id);
        assert_eq!(
            (c.severity, c.outcome),
            (Severity::Warning, Outcome::Fail),
            "{id}"
        );
    }
    assert_eq!(
        check(&plan, "source-ready").findings[0].seen,
        "False (Reconciling)"
    );
    assert!(!plan.blocked);
    assert_eq!(plan.summary.warnings, 3);
}

#[test]
fn plan_identifies_its_source_for_drift_detection() {
    let plan = Gw::new("acme").plan();
    let s = serde_json::to_value(&plan.source).unwrap();
    assert_eq!(s["uid"], "0e7c55a4-1111-4c2b-9d3e-5f6a7b8c9d0e");
    assert_eq!(s["resourceVersion"], "1000");
    assert_eq!(s["generation"], 3);
    assert_eq!(s["namespace"], "tenant-test");
    assert_eq!(
        plan.source.spec_fingerprint,
        vpnmig::core::fingerprint::fingerprint(&Gw::new("acme").0["spec"])
    );
    let other = Gw::new("acme")
        .set("/spec/tunnels/0/remoteSubnets", json!(["10.60.0.0/17"]))
        .plan();
    assert_ne!(plan.source.spec_fingerprint, other.source.spec_fingerprint);
}

#[test]
fn exposure_targets_need_a_port() {
    let plan = Gw::new("acme")
        .set("/spec/exposures/0/target/port", json!(0))
        .plan();
    let f = &check(&plan, "exposure-targets").findings[0];
    assert_eq!(
        (f.path.as_str(), f.seen.as_str()),
        ("spec.exposures[0].target.port", "0")
    );
    assert!(plan.blocked);
}

#[test]
fn proposals_must_match_the_allowlist_exactly_like_the_crd_enum() {
    let plan = Gw::new("acme")
        .set("/spec/ike/proposals", json!(["AES256-SHA256-MODP2048"]))
        .set(
            "/spec/tunnels/0/esp/proposals",
            json!([" aes256gcm16-modp2048 "]),
        )
        .plan();
    assert_eq!(check(&plan, "proposal-syntax").outcome, Outcome::Pass);
    let c = check(&plan, "proposal-allowlist");
    let got: Vec<(&str, &str)> = c
        .findings
        .iter()
        .map(|f| (f.seen.as_str(), f.wanted.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("\"AES256-SHA256-MODP2048\"", "\"aes256-sha256-modp2048\""),
            ("\" aes256gcm16-modp2048 \"", "\"aes256gcm16-modp2048\"")
        ]
    );
    assert!(plan.blocked);
}

fn with_secret(gw: &Gw, secret: serde_json::Value) -> Plan {
    let text = format!(
        "{}\n---\n{}",
        gw.yaml(),
        serde_json::to_string(&secret).unwrap()
    );
    let source = vpnmig::core::input::load(&text, "test.yaml", None).unwrap();
    build(&source, &Allowlist::default())
}

#[test]
fn psk_secret_owned_by_the_gateway_warns_and_its_value_is_only_fingerprinted() {
    let gw = Gw::new("acme");
    let owned = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "acme-psk", "namespace": "tenant-test",
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "vault-sync", "uid": "c-1"},
            {"apiVersion": "ipsec.bnerd.net/v1alpha1", "kind": "IPsecGateway", "name": "acme", "uid": "0e7c55a4-1111-4c2b-9d3e-5f6a7b8c9d0e"}]},
        "data": {"psk": "c2VjcmV0"}});
    let plan = with_secret(&gw, owned);
    let c = check(&plan, "psk-owner");
    assert_eq!(c.severity, Severity::Warning);
    let f = &c.findings[0];
    assert_eq!(
        (f.object.as_str(), f.path.as_str(), f.seen.as_str()),
        (
            "Secret tenant-test/acme-psk",
            "metadata.ownerReferences",
            "IPsecGateway acme"
        )
    );
    // The by-hand patch removes only the gateway's reference, guarded by its uid.
    assert_eq!(
        f.fix.as_deref(),
        Some(
            r#"by hand, before the delete: kubectl patch secret acme-psk -n tenant-test --type json -p '[{"op":"test","path":"/metadata/ownerReferences/1/uid","value":"0e7c55a4-1111-4c2b-9d3e-5f6a7b8c9d0e"},{"op":"remove","path":"/metadata/ownerReferences/1"}]'"#
        )
    );
    assert_eq!(check(&plan, "psk-secret").outcome, Outcome::Pass);
    assert!(
        !plan.blocked,
        "cutover detaches it: a warning, not a blocker"
    );
    // printf 'vpnmig-psk-v1\ntenant-test/acme-psk/psk\nsecret' | sha256sum; the value
    // itself appears nowhere in the plan.
    assert_eq!(
        plan.source.psk_fingerprint.as_deref(),
        Some("sha256:aa4d7c8680f60610272a94bdb92c029a6d418986b055c6a4990279383f490305")
    );
    let json = serde_json::to_string(&plan).unwrap();
    assert!(!json.contains("c2VjcmV0") && !json.contains("\"secret\""));
}

#[test]
fn psk_secret_without_the_key_blocks_and_absence_skips() {
    let gw = Gw::new("acme");
    let plan = with_secret(
        &gw,
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "acme-psk", "namespace": "tenant-test"}, "data": {"other": "eA=="}}),
    );
    let f = &check(&plan, "psk-secret").findings[0];
    assert_eq!(
        (f.path.as_str(), f.seen.as_str(), f.wanted.as_str()),
        ("data.psk", "keys [\"other\"]", "a key `psk`")
    );
    assert_eq!(plan.source.psk_fingerprint, None);
    let plan = Gw::new("acme").plan();
    let c = check(&plan, "psk-secret");
    assert_eq!(c.outcome, Outcome::Skipped);
    assert!(
        c.skipped
            .as_ref()
            .unwrap()
            .starts_with("Secret acme-psk is not in the input"),
        "{:?}",
        c.skipped
    );
}

#[test]
fn a_gateway_being_deleted_blocks() {
    let plan = Gw::new("acme")
        .set("/metadata/deletionTimestamp", json!("2026-11-29T02:00:00Z"))
        .plan();
    let c = check(&plan, "not-deleting");
    assert!(c.blocks());
    assert_eq!(c.findings[0].seen, "2026-11-29T02:00:00Z");
}

#[test]
fn gitops_markers_warn_and_are_not_carried() {
    let plan = Gw::new("acme")
        .set("/metadata/annotations", json!({"meta.helm.sh/release-name": "vpn", "argocd.argoproj.io/tracking-id": "app:ipsec.bnerd.net/IPsecGateway:t/acme", "ops/ticket": "NET-1"}))
        .set("/metadata/labels", json!({"app.kubernetes.io/managed-by": "Helm", "client": "acme", "kustomize.toolkit.fluxcd.io/name": "tenants"}))
        .plan();
    let c = check(&plan, "gitops");
    assert_eq!((c.severity, c.outcome), (Severity::Warning, Outcome::Fail));
    assert_eq!(
        c.findings[0].seen,
        "argocd.argoproj.io/tracking-id=app:ipsec.bnerd.net/IPsecGateway:t/acme, meta.helm.sh/release-name=vpn, app.kubernetes.io/managed-by=Helm, kustomize.toolkit.fluxcd.io/name=tenants"
    );
    for obj in [gw_json(&plan), peer_json(&plan, 0)] {
        assert_eq!(obj["metadata"]["labels"], json!({"client": "acme"}));
        assert_eq!(
            obj["metadata"]["annotations"],
            json!({"ops/ticket": "NET-1", "vpnmig.bnerd.net/migrated-from": "ipsecgateways.ipsec.bnerd.net/acme"})
        );
    }
    // The rollback copy keeps them: the old object goes back to its tool.
    let cleaned = vpnmig::core::plan::clean_old_manifest(
        &Gw::new("acme")
            .set(
                "/metadata/annotations",
                json!({"meta.helm.sh/release-name": "vpn"}),
            )
            .0,
    );
    assert_eq!(
        cleaned["metadata"]["annotations"],
        json!({"meta.helm.sh/release-name": "vpn"})
    );
}

#[test]
fn unknown_fields_that_look_secret_are_not_shown() {
    let plan = Gw::new("acme")
        .set("/spec/auth/psk", json!("SUPERSECRETPSKVALUE"))
        .set("/spec/tunnels/0/mtu", json!(1400))
        .plan();
    let seen: Vec<&str> = check(&plan, "unknown-fields")
        .findings
        .iter()
        .map(|f| f.seen.as_str())
        .collect();
    assert_eq!(
        seen,
        ["\"<not shown: the name suggests a secret>\"", "1400"]
    );
    assert!(
        !serde_json::to_string(&plan)
            .unwrap()
            .contains("SUPERSECRETPSKVALUE")
    );
}

#[test]
fn explicit_nulls_are_absent_values() {
    let plan = Gw::new("acme")
        .set("/spec/endpoint/network", json!(null))
        .set("/spec/tunnels/0/peer/id", json!(null))
        .set("/spec/tunnels/0/dpd", json!(null))
        .set("/spec/reverseExposures", json!(null))
        .plan();
    assert!(
        !plan.blocked,
        "{:#?}",
        plan.checks
            .iter()
            .filter(|c| c.blocks())
            .collect::<Vec<_>>()
    );
    assert_eq!(
        gw_json(&plan)["spec"]["endpoint"],
        json!({"floatingIP": "198.51.100.50"})
    );
}

#[test]
fn a_psk_secret_owned_by_the_gateways_deployment_also_warns() {
    let gw = Gw::new("acme");
    let owned = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "acme-psk", "namespace": "tenant-test",
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "acme", "uid": "d-1"}]},
        "data": {"psk": "c2VjcmV0"}});
    let plan = with_secret(&gw, owned);
    assert_eq!(
        check(&plan, "psk-owner").findings[0].seen,
        "Deployment acme"
    );
    let other = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "acme-psk", "namespace": "tenant-test",
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "vault-sync", "uid": "c-1"}]},
        "data": {"psk": "c2VjcmV0"}});
    assert_eq!(
        check(&with_secret(&gw, other), "psk-owner").outcome,
        Outcome::Pass
    );
}

/// Issue 9 item 4: pinned addresses compare parsed. The same floating IP and virtual IP
/// spelled differently in spec and status are no finding (and the spec's spelling is
/// what the VPNGateway pins); a different address still is.
#[test]
fn addresses_spelled_differently_are_the_same_address() {
    let plan = Gw::new("acme")
        .set("/spec/endpoint/floatingIP", json!("2001:DB8:5:0::23"))
        .set("/status/floatingIP", json!("2001:db8:5::23"))
        .set("/status/serviceCIDR", json!("fd00:250:9::/64"))
        .set("/spec/exposures/0/virtualIP", json!("FD00:250:9::A"))
        .set("/status/exposures/0/virtualIP", json!("fd00:250:9::a"))
        .plan();
    for id in ["fip-pinned", "virtual-ips", "values-identical"] {
        let c = check(&plan, id);
        assert_eq!(c.outcome, Outcome::Pass, "{id}: {:#?}", c.findings);
    }
    assert_eq!(
        gw_json(&plan)["spec"]["exposures"][0]["virtualIP"],
        "FD00:250:9::A"
    );
    let plan = Gw::new("acme")
        .set("/spec/endpoint/floatingIP", json!("2001:DB8:5:0::23"))
        .set("/status/floatingIP", json!("2001:db8:5::24"))
        .plan();
    let f = &check(&plan, "fip-pinned").findings[0];
    assert_eq!(
        (f.path.as_str(), f.seen.as_str(), f.wanted.as_str()),
        ("status.floatingIP", "2001:db8:5::24", "2001:DB8:5:0::23")
    );
}

/// Issue 9 item 4: a remote subnet overlapping the serviceCIDR is found whatever the
/// spelling (IPv6 upper case, zero-compressed or not).
#[test]
fn remote_subnet_overlap_with_the_service_cidr_is_found_parsed() {
    let plan = Gw::new("acme")
        .set("/status/serviceCIDR", json!("fd00:250:9::/64"))
        .set("/spec/exposures", json!([]))
        .set("/status/exposures", json!([]))
        .tunnels(vec![tunnel(
            "main",
            "203.0.113.50",
            &["FD00:250:0:0::/32", "fd00:251::/48"],
        )])
        .plan();
    let got: Vec<(&str, &str)> = check(&plan, "remote-subnets")
        .findings
        .iter()
        .map(|f| (f.path.as_str(), f.seen.as_str()))
        .collect();
    assert_eq!(
        got,
        [("spec.tunnels[0].remoteSubnets[0]", "FD00:250:0:0::/32")]
    );
}

/// Issue 9 item 4: uniqueness in the cluster is judged on addresses: another gateway
/// holding the same floating IP in another spelling, or a service CIDR overlapping this
/// one, is found; a different address is not.
#[test]
fn fip_and_service_cidr_uniqueness_compare_parsed() {
    use vpnmig::core::live::{Facts, OtherGateway, checks as live_checks};
    let plan = Gw::new("acme")
        .set("/spec/endpoint/floatingIP", json!("2001:db8:5::23"))
        .set("/status/floatingIP", json!("2001:db8:5::23"))
        .plan();
    let other = |name: &str, fip: &str, cidr: &str| OtherGateway {
        object: format!("VPNGateway t/{name}"),
        floating_ip: Some(fip.into()),
        service_cidr: Some(cidr.into()),
        ..Default::default()
    };
    let facts = Facts {
        existing: Vec::new(),
        others: Ok(vec![
            other("same-fip", "2001:DB8:5:0::23", "10.250.77.0/24"),
            other("wide-cidr", "2001:db8:5::99", "10.250.0.0/16"),
            other("unrelated", "2001:db8:5::98", "10.250.10.0/24"),
        ]),
        dry_run: None,
        permissions: Ok(Vec::new()),
        schema: Ok(Vec::new()),
        strays: Ok(Vec::new()),
    };
    let (results, _) = live_checks(&plan, &facts);
    let found = |id: &str| -> Vec<(String, String)> {
        results
            .iter()
            .find(|c| c.id == id)
            .unwrap()
            .findings
            .iter()
            .map(|f| (f.object.clone(), f.message.clone()))
            .collect()
    };
    assert_eq!(
        found("fip-unique"),
        [(
            "VPNGateway t/same-fip".to_string(),
            "VPNGateway t/same-fip also holds floating IP 2001:DB8:5:0::23 (this gateway's: 2001:db8:5::23): the new gateway would sit at AlreadyAssociated or clash".to_string()
        )]
    );
    assert_eq!(
        found("service-cidr-unique"),
        [(
            "VPNGateway t/wide-cidr".to_string(),
            "VPNGateway t/wide-cidr also holds service CIDR 10.250.0.0/16 (this gateway's: 10.250.9.0/24): the new gateway would sit at AlreadyAssociated or clash".to_string()
        )]
    );
}

/// Issue 9 item 6: the plan's source-ready check judges the old gateway's conditions as
/// `kubectl wait` does: True without its own observedGeneration, on a status older than
/// the spec, is not a current True.
#[test]
fn source_ready_does_not_take_stale_conditions_as_current() {
    let plan = Gw::new("acme")
        .set("/status/observedGeneration", json!(2))
        .set(
            "/status/conditions/1",
            json!({"type": "Ready", "status": "True", "reason": "Reconciled"}),
        )
        .plan();
    let c = check(&plan, "source-ready");
    let got: Vec<(&str, &str, &str)> = c
        .findings
        .iter()
        .map(|f| (f.path.as_str(), f.seen.as_str(), f.message.as_str()))
        .collect();
    assert_eq!(
        got,
        [(
            "status.conditions[type=Ready]",
            "True (Reconciled)",
            "the old gateway's Ready is not current (Ready=True has no observedGeneration and status.observedGeneration is 2, the object is at 3: stale): the cutover cannot be compared with a healthy baseline"
        )]
    );
}

/// Issue 14 item 8: the journal copies the gateway's annotations into the old manifest
/// and every target. One 200 KB annotation with two tunnels would exceed a ConfigMap's
/// 1 MiB at a save during the window: the plan blocks it before any change.
#[test]
fn a_journal_that_would_not_fit_a_configmap_blocks_the_plan() {
    let big = "x".repeat(200 * 1024);
    let plan = Gw::new("acme")
        .set(
            "/metadata/annotations",
            json!({"notes.example/runbook": big}),
        )
        .tunnels(vec![
            common::tunnel("main", "203.0.113.50", &["10.60.0.0/16"]),
            common::tunnel("dr", "203.0.113.51", &["10.61.0.0/16"]),
        ])
        .plan();
    let c = plan.checks.iter().find(|c| c.id == "api-limits").unwrap();
    assert!(c.blocks(), "{c:?}");
    assert_eq!(c.findings.len(), 1, "{:?}", c.findings);
    assert_eq!(c.findings[0].path, "data");
    assert!(c.findings[0].message.contains("would not fit a ConfigMap"));
    assert!(plan.blocked);
    // One tunnel with the same annotation still fits.
    let one = Gw::new("acme")
        .set(
            "/metadata/annotations",
            json!({"notes.example/runbook": "x".repeat(150 * 1024)}),
        )
        .plan();
    assert!(
        !one.checks
            .iter()
            .find(|c| c.id == "api-limits")
            .unwrap()
            .blocks()
    );
}

/// Issue 9 item 3: the gitops check also sees Argo CD's field manager and its default
/// tracking label, and Flux's controllers by their field managers.
#[test]
fn gitops_markers_include_argo_cd_and_flux_field_managers_and_the_instance_label() {
    for (pointer, value, seen) in [
        (
            "/metadata/managedFields",
            json!([{"manager": "argocd-controller", "operation": "Apply"}]),
            "field manager argocd-controller",
        ),
        (
            "/metadata/managedFields",
            json!([{"manager": "kustomize-controller", "operation": "Apply"}]),
            "field manager kustomize-controller",
        ),
        (
            "/metadata/labels",
            json!({"app.kubernetes.io/instance": "tenants"}),
            "app.kubernetes.io/instance=tenants",
        ),
    ] {
        let plan = Gw::new("acme").set(pointer, value).plan();
        let c = plan.checks.iter().find(|c| c.id == "gitops").unwrap();
        assert_eq!(c.outcome, Outcome::Fail, "{seen}: {c:?}");
        assert!(
            c.findings[0].seen.contains(seen),
            "{seen}: {:?}",
            c.findings[0].seen
        );
    }
    let plain = Gw::new("acme")
        .set(
            "/metadata/managedFields",
            json!([{"manager": "kubectl-client-side-apply"}]),
        )
        .plan();
    assert_eq!(
        plain
            .checks
            .iter()
            .find(|c| c.id == "gitops")
            .unwrap()
            .outcome,
        Outcome::Pass
    );
}

/// Issue 9 item 8: the webhook's name is read from kube-apiserver's dry-run refusal,
/// whatever the name; other refusals (a denial, a validation error) name no webhook.
#[test]
fn the_webhook_that_cannot_dry_run_is_named_from_the_refusal() {
    use vpnmig::core::live::webhook_without_dry_run;
    assert_eq!(
        webhook_without_dry_run(
            "admission webhook \"vpngateway-policy.example.net\" does not support dry run"
        )
        .as_deref(),
        Some("vpngateway-policy.example.net")
    );
    assert_eq!(
        webhook_without_dry_run(
            "cannot apply vpnpeer x: admission webhook \"gk-validating.gatekeeper.sh\" does not support dry run (400 BadRequest)"
        )
        .as_deref(),
        Some("gk-validating.gatekeeper.sh")
    );
    assert_eq!(
        webhook_without_dry_run(
            "admission webhook \"policy.example.net\" denied the request: no dry run here"
        ),
        None
    );
    assert_eq!(webhook_without_dry_run("does not support dry run"), None);
    assert_eq!(
        webhook_without_dry_run("admission webhook \"\" does not support dry run"),
        None
    );
}

/// Issue 9 item 8: every webhook that cannot dry-run must be named by a flag; each is
/// reported once, in the order seen.
#[test]
fn every_webhook_that_cannot_dry_run_must_be_skipped_by_name() {
    use vpnmig::core::live::{skip_flags, unskipped_webhooks};
    let seen = ["b.example.net", "a.example.net", "b.example.net"];
    assert_eq!(
        unskipped_webhooks(seen, &[]),
        ["b.example.net", "a.example.net"]
    );
    assert_eq!(
        unskipped_webhooks(seen, &["a.example.net".into()]),
        ["b.example.net"]
    );
    assert!(unskipped_webhooks(seen, &["a.example.net".into(), "b.example.net".into()]).is_empty());
    assert_eq!(
        skip_flags(&["b".into(), "a".into()]),
        "--skip-dry-run-webhook b --skip-dry-run-webhook a"
    );
}

/// Issue 21 item 10: offline and live plans give the same checks wherever the offline plan
/// has the facts. Each input is planned offline (`plan -f`) and judged as the live plan
/// judges it (`core::live::judge`, which `plan NAME`, the fleet plan and the cutover run)
/// with a cluster that holds nothing else: every offline check is in the live plan with
/// the same outcome and findings (object, path, seen, wanted), and the live plan adds
/// only the checks that need a cluster fact.
#[test]
fn offline_and_live_plans_give_the_same_checks_where_both_have_the_facts() {
    use vpnmig::core::live::{Facts, judge};
    // The checks that need what only a cluster knows (listed, so that a new live-only
    // check that needs no cluster fact fails here until it runs offline too).
    const CLUSTER_FACTS: &[&str] = &[
        "targets-free",
        "fip-unique",
        "service-cidr-unique",
        "server-dry-run",
        "dry-run-webhooks",
        "schema",
        "schema-unevaluated",
        "permissions",
        "peer-names-unique",
        "peer-names-shared",
    ];
    let t = |n: &str, i: u8| tunnel(n, &format!("203.0.113.{i}"), &[&format!("10.{i}.0.0/16")]);
    let long = "a-tunnel-name-long-enough-that-the-peer-name-passes-sixty-three";
    let rows: Vec<(&str, Gw)> = vec![
        ("healthy", Gw::new("acme")),
        ("a VPNPeer name longer than 63 (the case)", Gw::new("acme").tunnels(vec![t(long, 1), t("b", 2)])),
        ("a gateway name that makes every peer name too long", Gw::new(&"g".repeat(60)).tunnels(vec![t("main", 1), t("backup", 2)])),
        ("two tunnels, nothing exposed", Gw::new("acme").tunnels(vec![t("a", 1), t("b", 2)]).set("/spec/exposures", json!([])).set("/status/exposures", json!([]))),
        ("IKEv1", Gw::new("acme").set("/spec/ike/version", json!(1))),
        ("status behind the spec", Gw::new("acme").set("/metadata/generation", json!(4))),
        ("unpinned floating IP", Gw::new("acme").unpinned()),
        ("owned by another object", Gw::new("acme").set("/metadata/ownerReferences", json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "u"}]))),
        ("Argo CD's tracking", Gw::new("acme").set("/metadata/annotations", json!({"argocd.argoproj.io/tracking-id": "app:ipsec.bnerd.net/IPsecGateway:tenant-test/acme"}))),
        ("a proposal outside the allowlist", Gw::new("acme").set("/spec/ike/proposals", json!(["3des-md5-modp1024"]))),
    ];
    let key = |c: &CheckResult| {
        (
            c.outcome,
            c.findings
                .iter()
                .map(|f| {
                    (
                        f.object.clone(),
                        f.path.clone(),
                        f.seen.clone(),
                        f.wanted.clone(),
                    )
                })
                .collect::<Vec<_>>(),
        )
    };
    for (what, gw) in rows {
        let offline = gw.plan();
        let mut live = gw.plan();
        let tunnels: Vec<String> = gw
            .source()
            .gateway
            .spec
            .tunnels
            .iter()
            .map(|t| t.name.clone())
            .collect();
        judge(
            &mut live,
            &tunnels,
            &Facts {
                existing: Vec::new(),
                others: Ok(Vec::new()),
                dry_run: Some(Vec::new()),
                permissions: Ok(Vec::new()),
                schema: Ok(Vec::new()),
                strays: Ok(Vec::new()),
            },
        );
        for c in &offline.checks {
            let l = live
                .checks
                .iter()
                .find(|l| l.id == c.id)
                .unwrap_or_else(|| panic!("{what}: {} not in the live plan", c.id));
            assert_eq!(key(l), key(c), "{what}: {}", c.id);
        }
        let added: Vec<&str> = live
            .checks
            .iter()
            .map(|c| c.id)
            .filter(|id| !offline.checks.iter().any(|c| c.id == *id))
            .collect();
        for id in &added {
            assert!(
                CLUSTER_FACTS.contains(id),
                "{what}: {id} runs only live but needs no cluster fact"
            );
        }
        let warned = |p: &Plan| -> Vec<&str> {
            p.checks
                .iter()
                .filter(|c| c.severity == Severity::Warning && c.outcome == Outcome::Fail)
                .map(|c| c.id)
                .collect()
        };
        let live_warned: Vec<&str> = warned(&live)
            .into_iter()
            .filter(|id| {
                !CLUSTER_FACTS.contains(id) && !matches!(*id, "status-current" | "source-ready")
            })
            .collect();
        // Live, a stale or unhealthy source blocks rather than warns (its status is what the
        // plan pins): the same finding, a stronger severity.
        let offline_warned: Vec<&str> = warned(&offline)
            .into_iter()
            .filter(|id| !matches!(*id, "status-current" | "source-ready"))
            .collect();
        assert_eq!(live_warned, offline_warned, "{what}");
    }
    // The case: the name too long is warned about offline.
    let plan = Gw::new("acme").tunnels(vec![t(long, 1), t("b", 2)]).plan();
    let c = check(&plan, "peer-name-length");
    assert_eq!(c.outcome, Outcome::Fail);
    assert_eq!(
        c.findings[0].object,
        format!("VPNPeer tenant-test/acme-{long}")
    );
    assert_eq!(c.findings[0].seen, format!("{} characters", 5 + long.len()));
}
