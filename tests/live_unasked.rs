//! "Could not ask" is never a verdict (issue 9 item 0), for the facts the live checks
//! read besides the gateway itself: the other gateways (fip-unique, service-cidr-unique,
//! peer-names-unique), the cluster's CRDs (schema) and the SelfSubjectAccessReviews
//! (permissions). One table row per fact and way of not being told:
//!
//! - refused (403): the check fails with a `<cannot read>` finding that names the
//!   refusal and the permission to ask for; the plan is BLOCKED (exit 4), never READY,
//!   and a cutover refuses before any change;
//! - no answer (a 503 that outlasts the retries): plan and cutover end with exit 1
//!   naming the call, and nothing changes.
//!
//! Each (fact, way) is a row run on the emulator and on the real control plane
//! (tests/live/bed.rs), where the user is a client certificate with RBAC and the 503 comes
//! from the fault proxy.

mod live;

use live::bed::{After, Bed, IPSECGATEWAY, Row, Scenario};
use live::{ACME, check};
use serde_json::Value;
use vpnmig_sandbox::SettingsFile;
use vpnmig_sandbox::api::auth::{Rule, User};
use vpnmig_sandbox::api::faults::ErrorRule;

/// A fact the live checks read, and how the sandbox withholds it.
struct Case {
    /// The checks that must fail on a refusal, in report order.
    checks: &'static [&'static str],
    /// The rules of a user who may do everything in tenant-acme but this.
    refused: fn() -> Vec<Rule>,
    /// The user is not covered by system:basic-user (may not create
    /// SelfSubjectAccessReviews without a rule).
    without_basic_user: bool,
    /// The request that gets no answer (a persistent 503): (verb, resource).
    unanswered: (&'static str, &'static str),
    /// What the refusal's finding says it could not read.
    object: &'static str,
}

fn in_acme(verbs: &[&str], resources: &[&str]) -> Rule {
    Rule {
        namespaces: vec!["tenant-acme".into()],
        ..Rule::new(verbs, resources)
    }
}

const CASES: &[(&str, Case)] = &[
    (
        "other gateways",
        Case {
            checks: &["fip-unique", "service-cidr-unique", "peer-names-unique"],
            // Namespace admin: may not list gateways in all namespaces.
            refused: || {
                vec![
                    in_acme(&["*"], &["*"]),
                    Rule::new(&["get"], &["customresourcedefinitions"]),
                    Rule::new(&["create"], &["selfsubjectaccessreviews"]),
                ]
            },
            without_basic_user: false,
            unanswered: ("list", "vpngateways"),
            object: "IPsecGateways and VPNGateways in all namespaces",
        },
    ),
    (
        "CRDs",
        Case {
            checks: &["schema"],
            refused: || {
                vec![
                    Rule::new(&["*"], &["ipsecgateways", "vpngateways", "vpnpeers"]),
                    in_acme(&["*"], &["*"]),
                    Rule::new(&["create"], &["selfsubjectaccessreviews"]),
                ]
            },
            without_basic_user: false,
            unanswered: ("get", "customresourcedefinitions"),
            object: "CustomResourceDefinitions vpngateways.vpn.bnerd.net, vpnpeers.vpn.bnerd.net",
        },
    ),
    (
        "SelfSubjectAccessReviews",
        Case {
            checks: &["permissions"],
            refused: || {
                vec![
                    Rule::new(&["*"], &["ipsecgateways", "vpngateways", "vpnpeers"]),
                    in_acme(&["*"], &["*"]),
                    Rule::new(&["get"], &["customresourcedefinitions"]),
                ]
            },
            without_basic_user: true,
            unanswered: ("create", "selfsubjectaccessreviews"),
            object: "you",
        },
    ),
];

fn failed(plan: &Value) -> Vec<&str> {
    plan["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["outcome"] == "fail")
        .map(|c| c["id"].as_str().unwrap())
        .collect()
}

/// acme with the user `limited` of `CASES[i]`.
fn refused(i: usize) -> Scenario {
    let case = &CASES[i].1;
    Scenario::new(
        ACME,
        SettingsFile {
            users: vec![User {
                without_basic_user: case.without_basic_user,
                ..User::with_rules("limited", (case.refused)())
            }],
            ..live::pool("10.250.3.0/24")
        },
    )
}

fn acme() -> Scenario {
    Scenario::new(ACME, live::pool("10.250.3.0/24"))
}

crate::rows! {
    refused_other_gateways_fail_their_checks_and_block_plan_and_cutover: Row {
        scenario: || refused(0),
        only: None,
        after: After::acme("IPsecGateway"),
        steps: |b| Box::pin(a_refused_fact_fails_its_checks_and_blocks_plan_and_cutover(b, &CASES[0])),
    },
    refused_crds_fail_their_checks_and_block_plan_and_cutover: Row {
        scenario: || refused(1),
        only: None,
        after: After::acme("IPsecGateway"),
        steps: |b| Box::pin(a_refused_fact_fails_its_checks_and_blocks_plan_and_cutover(b, &CASES[1])),
    },
    refused_access_reviews_fail_their_checks_and_block_plan_and_cutover: Row {
        scenario: || refused(2),
        only: None,
        after: After::acme("IPsecGateway"),
        steps: |b| Box::pin(a_refused_fact_fails_its_checks_and_blocks_plan_and_cutover(b, &CASES[2])),
    },
    unanswered_other_gateways_end_plan_and_cutover_with_exit_1: Row {
        scenario: acme,
        only: None,
        after: After::acme("IPsecGateway"),
        steps: |b| Box::pin(an_unanswered_fact_ends_plan_and_cutover_with_exit_1(b, &CASES[0])),
    },
    unanswered_crds_end_plan_and_cutover_with_exit_1: Row {
        scenario: acme,
        only: None,
        after: After::acme("IPsecGateway"),
        steps: |b| Box::pin(an_unanswered_fact_ends_plan_and_cutover_with_exit_1(b, &CASES[1])),
    },
    unanswered_access_reviews_end_plan_and_cutover_with_exit_1: Row {
        scenario: acme,
        only: None,
        after: After::acme("IPsecGateway"),
        steps: |b| Box::pin(an_unanswered_fact_ends_plan_and_cutover_with_exit_1(b, &CASES[2])),
    },
}

async fn a_refused_fact_fails_its_checks_and_blocks_plan_and_cutover(
    b: &Bed,
    (what, case): &(&str, Case),
) {
    let ctx = ["--context", "vpnmig-sandbox-limited"];
    let r = b
        .vpnmig(&[&["plan", "acme", "-o", "json"][..], &ctx].concat())
        .await;
    assert_eq!(r.code, 4, "{what}: {}", r.stderr);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(failed(&plan), case.checks, "{what}");
    assert_eq!(plan["blocked"], true, "{what}");
    for id in case.checks {
        let f = &check(&plan, id)["findings"][0];
        assert_eq!(f["seen"], "<cannot read>", "{what} {id}: {f}");
        assert_eq!(f["object"], case.object, "{what} {id}: {f}");
        assert!(
            f["message"]
                .as_str()
                .unwrap()
                .contains("is forbidden: User \"limited\""),
            "{what} {id}: the refusal is named: {f}"
        );
        assert!(f["fix"].as_str().unwrap().starts_with("ask for `"), "{f}");
    }

    let text = b.vpnmig(&[&["plan", "acme"][..], &ctx].concat()).await;
    assert_eq!(text.code, 4, "{what}: {}", text.stderr);
    assert!(text.stdout.contains("BLOCKED"), "{what}: {}", text.stdout);
    assert!(!text.stdout.contains("READY"), "{what}: {}", text.stdout);

    let cut = b
        .vpnmig(&[&["cutover", "acme", "--yes"][..], &ctx].concat())
        .await;
    assert_ne!(cut.code, 0, "{what}: {}", cut.stderr);
    assert!(
        [4, 7].contains(&cut.code),
        "{what}: blocked or refused, never a failure mid-way: {}\n{}",
        cut.code,
        cut.stderr
    );
    assert!(cut.says("nothing was changed"), "{what}: {}", cut.stderr);
    assert_eq!(b.phase("tenant-acme", "acme").await, None, "{what}");
    assert!(
        b.objects(IPSECGATEWAY, "tenant-acme").await.len() == 1,
        "{what}: the old gateway is untouched"
    );
}

async fn an_unanswered_fact_ends_plan_and_cutover_with_exit_1(
    b: &Bed,
    (what, case): &(&str, Case),
) {
    let (verb, resource) = case.unanswered;
    b.api_faults().write().unwrap().errors = vec![ErrorRule {
        verbs: vec![verb.into()],
        resources: vec![resource.into()],
        code: 503,
        times: None,
        retry_after_seconds: None,
    }];
    for args in [
        &["plan", "acme", "-o", "json"][..],
        &["plan", "acme"],
        &["cutover", "acme", "--yes"],
    ] {
        let r = b.vpnmig(args).await;
        assert_eq!(
            r.code, 1,
            "{what}: vpnmig {args:?}\n{}\n{}",
            r.stdout, r.stderr
        );
        assert!(!r.stdout.contains("READY"), "{what}: {}", r.stdout);
        assert!(
            r.says("503"),
            "{what}: vpnmig {args:?} names the answer: {}",
            r.stderr
        );
        assert!(
            r.says(&format!("{verb} {}", resource.trim_end_matches('s'))),
            "{what}: vpnmig {args:?} names the call: {}",
            r.stderr
        );
    }
    assert_eq!(b.phase("tenant-acme", "acme").await, None, "{what}");
    assert_eq!(
        b.objects(IPSECGATEWAY, "tenant-acme").await.len(),
        1,
        "{what}: the old gateway is untouched"
    );
    // The API answers again before the invariants are read (they list VPNGateways too).
    b.api_faults().write().unwrap().errors.clear();
}
