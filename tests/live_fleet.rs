//! `vpnmig plan -A | -n NS | -l SELECTOR | --names FILE` and `plan -f FILE` of many
//! gateways, end to end against vpnmig-sandbox (issue 15 items 2 and 4): every gateway
//! planned with the cluster read once, collisions between gateways of the same run
//! found, a bundle each and fleet.json. Rows on the emulator and on the real control plane
//! (tests/live/bed.rs).

mod live;

use live::bed::{Bed, Row, Scenario};
use live::{check, gateway, namespace};
use serde_json::{Value, json};
use vpnmig_sandbox::SettingsFile;
use vpnmig_sandbox::api::auth::{Rule, User};

/// Two namespaces; in tenant-a, gateway `a` (tunnels b and c: peer `a-b`) and gateway
/// `a-b` (one tunnel: peer `a-b`) collide on the peer name and pin the same FIP.
fn two_namespaces() -> String {
    [
        namespace("tenant-a"),
        namespace("tenant-b"),
        gateway("tenant-a", "a", "192.0.2.10", 1, &["b", "c"], "gold"),
        gateway("tenant-a", "a-b", "192.0.2.10", 2, &["main"], "gold"),
        gateway("tenant-a", "ok1", "192.0.2.11", 3, &["main"], "bronze"),
        gateway("tenant-b", "ok2", "192.0.2.12", 4, &["main"], "bronze"),
        gateway("tenant-b", "ok3", "192.0.2.13", 5, &["main"], "gold"),
    ]
    .concat()
}

fn row<'a>(fleet: &'a Value, ns: &str, name: &str) -> &'a Value {
    fleet["gateways"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["namespace"] == ns && r["name"] == name)
        .unwrap_or_else(|| panic!("no row {ns}/{name} in {fleet}"))
}

fn names(fleet: &Value) -> Vec<String> {
    fleet["gateways"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}/{}",
                r["namespace"].as_str().unwrap(),
                r["name"].as_str().unwrap()
            )
        })
        .collect()
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// [`two_namespaces`] with [`settings`]: `a` and `a-b` pin one floating IP, so one of them is
/// never Ready.
fn fleet() -> Scenario {
    Scenario::built(two_namespaces(), settings()).reported_is_ready()
}

fn settings() -> SettingsFile {
    let mut s = SettingsFile::default();
    // `a` and `a-b` pin the same FIP: whichever the operator attaches second waits.
    s.operator.fip_pool = (20..30).map(|i| format!("192.0.2.{i}")).collect();
    s
}

async fn plan_all_namespaces_finds_collisions_between_gateways_of_the_run(b: &Bed) {
    let out = b.cwd().join("plans");
    let r = b
        .vpnmig(&["plan", "-A", "--out", out.to_str().unwrap()])
        .await;
    assert_eq!(r.code, 4, "{}\n{}", r.stderr, r.stdout);
    // The table: one row per gateway, the blocked ones with their blocking checks.
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(
        lines[0].starts_with("NAMESPACE") && lines[0].contains("BLOCKING CHECKS"),
        "{}",
        r.stdout
    );
    let line = |name: &str| {
        lines
            .iter()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no row {name}: {}", r.stdout))
            .to_string()
    };
    assert!(line("ok1").contains("ready"), "{}", r.stdout);
    assert!(
        line("a").contains("blocked") && line("a").contains("fip-unique"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("5 gateway(s): 3 ready, 2 blocked"),
        "{}",
        r.stdout
    );

    let fleet: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("fleet.json")).unwrap()).unwrap();
    assert_eq!(fleet["apiVersion"], "vpnmig.bnerd.net/fleet-plan/v1");
    assert_eq!(fleet["origin"], "context vpnmig-sandbox");
    assert_eq!(fleet["selection"]["allNamespaces"], true);
    assert_eq!(
        fleet["totals"],
        json!({"gateways": 5, "ready": 3, "blocked": 2, "alreadyMigrated": 0})
    );
    assert_eq!(
        names(&fleet),
        [
            "tenant-a/a",
            "tenant-a/a-b",
            "tenant-a/ok1",
            "tenant-b/ok2",
            "tenant-b/ok3"
        ]
    );
    for (ns, name) in [
        ("tenant-a", "ok1"),
        ("tenant-b", "ok2"),
        ("tenant-b", "ok3"),
    ] {
        let r = row(&fleet, ns, name);
        assert_eq!(r["verdict"], "ready", "{r}");
        assert_eq!(r["blocking"], json!([]), "{r}");
        assert_eq!(r["bundle"], format!("{ns}/{name}"), "{r}");
    }
    // `a` loses the peer name to `a-b` (a single-tunnel gateway owns its own name), and
    // both hold the FIP: both blocked, each with the right checks.
    let a = row(&fleet, "tenant-a", "a");
    assert_eq!(a["verdict"], "blocked");
    let a_blocking = strs(&a["blocking"]);
    assert!(a_blocking.contains(&"fip-unique".to_string()), "{a}");
    assert!(a_blocking.contains(&"peer-names-unique".to_string()), "{a}");
    let ab = row(&fleet, "tenant-a", "a-b");
    assert_eq!(ab["verdict"], "blocked");
    let ab_blocking = strs(&ab["blocking"]);
    assert!(ab_blocking.contains(&"fip-unique".to_string()), "{ab}");
    assert!(
        !ab_blocking.contains(&"peer-names-unique".to_string()),
        "{ab}"
    );
    assert!(
        strs(&ab["warnings"]).contains(&"peer-names-shared".to_string()),
        "{ab}"
    );

    // One bundle each, with the findings naming the other gateway.
    let plan = |ns: &str, name: &str| -> Value {
        let p = out.join(ns).join(name);
        for f in [
            "vpngateway.yaml",
            "vpnpeer.yaml",
            "old-ipsecgateway.yaml",
            "plan.json",
        ] {
            assert!(p.join(f).is_file(), "{}", p.join(f).display());
        }
        serde_json::from_str(&std::fs::read_to_string(p.join("plan.json")).unwrap()).unwrap()
    };
    for (ns, name) in [
        ("tenant-a", "ok1"),
        ("tenant-b", "ok2"),
        ("tenant-b", "ok3"),
    ] {
        assert_eq!(plan(ns, name)["blocked"], false);
    }
    let pa = plan("tenant-a", "a");
    let fip = &check(&pa, "fip-unique")["findings"];
    assert_eq!(fip.as_array().unwrap().len(), 1, "{fip}");
    assert_eq!(fip[0]["object"], "IPsecGateway tenant-a/a-b");
    assert_eq!(fip[0]["seen"], "192.0.2.10");
    let peer = &check(&pa, "peer-names-unique")["findings"][0];
    assert_eq!(peer["object"], "VPNPeer tenant-a/a-b");
    assert!(
        peer["fix"]
            .as_str()
            .unwrap()
            .contains("--peer-name b=a-b-2"),
        "{peer}"
    );
    let pab = plan("tenant-a", "a-b");
    assert_eq!(
        check(&pab, "fip-unique")["findings"][0]["object"],
        "IPsecGateway tenant-a/a"
    );

    // The fleet plan of one gateway says what `plan NAME` says about it.
    let one = b
        .vpnmig(&["plan", "a", "-n", "tenant-a", "-o", "json"])
        .await;
    let one: Value = serde_json::from_str(&one.stdout).unwrap();
    let ids = |p: &Value| -> Vec<(String, String)> {
        p["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["id"].as_str().unwrap().into(),
                    c["outcome"].as_str().unwrap().into(),
                )
            })
            .collect()
    };
    assert_eq!(ids(&one), ids(&pa));
    assert_eq!(one["checks"], pa["checks"]);

    // -o json prints fleet.json.
    let j = b
        .vpnmig(&["plan", "-A", "-o", "json", "--out", out.to_str().unwrap()])
        .await;
    assert_eq!(j.code, 4, "{}", j.stderr);
    let printed: Value = serde_json::from_str(&j.stdout).unwrap();
    assert_eq!(printed, fleet);
}

async fn plan_selects_by_namespace_label_and_names_file(b: &Bed) {
    let json_of = |r: &live::Run| -> Value {
        serde_json::from_str(&r.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}\n{}", r.stdout, r.stderr))
    };
    // -n: one namespace, still compared with every gateway of the cluster.
    let r = b.vpnmig(&["plan", "-n", "tenant-b", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let f = json_of(&r);
    assert_eq!(names(&f), ["tenant-b/ok2", "tenant-b/ok3"]);
    assert_eq!(f["selection"]["namespace"], "tenant-b");
    assert_eq!(f["gateways"][0]["bundle"], Value::Null);

    // -l with -A: the label, in every namespace.
    let r = b
        .vpnmig(&["plan", "-A", "-l", "tier=bronze", "-o", "json"])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(names(&json_of(&r)), ["tenant-a/ok1", "tenant-b/ok2"]);

    // -l with -n: the collision with a gateway outside the selection is still found.
    let r = b
        .vpnmig(&["plan", "-n", "tenant-a", "-l", "tier=gold", "-o", "json"])
        .await;
    assert_eq!(r.code, 4, "{}", r.stderr);
    let f = json_of(&r);
    assert_eq!(names(&f), ["tenant-a/a", "tenant-a/a-b"]);

    // --names: NAME and NAMESPACE/NAME; a name that is not there plans nothing.
    let file = b.cwd().join("names.txt");
    std::fs::write(&file, "# wave 1\nok2\ntenant-a/ok1\n\n").unwrap();
    let r = b
        .vpnmig(&[
            "plan",
            "-A",
            "--names",
            file.to_str().unwrap(),
            "-o",
            "json",
        ])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(names(&json_of(&r)), ["tenant-a/ok1", "tenant-b/ok2"]);
    std::fs::write(&file, "ok2\nnope\n").unwrap();
    let r = b
        .vpnmig(&["plan", "-A", "--names", file.to_str().unwrap()])
        .await;
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.says("no IPsecGateway nope"), "{}", r.stderr);
}

/// [`fleet`] with a namespace admin of tenant-b, `limited`.
fn fleet_and_a_namespace_admin() -> Scenario {
    let mut s = settings();
    // A namespace admin of tenant-b: may not list gateways in all namespaces.
    s.users = vec![User::with_rules(
        "limited",
        vec![
            Rule {
                namespaces: vec!["tenant-b".into()],
                ..Rule::new(&["*"], &["*"])
            },
            Rule::new(&["get"], &["customresourcedefinitions"]),
        ],
    )];
    Scenario::built(two_namespaces(), s).reported_is_ready()
}

async fn a_refused_list_fails_the_uniqueness_checks_never_passes_them(b: &Bed) {
    let ctx = ["--context", "vpnmig-sandbox-limited"];
    let r = b
        .vpnmig(&[&["plan", "-n", "tenant-b", "-o", "json"][..], &ctx].concat())
        .await;
    assert_eq!(r.code, 4, "{}\n{}", r.stderr, r.stdout);
    let f: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(names(&f), ["tenant-b/ok2", "tenant-b/ok3"]);
    for g in f["gateways"].as_array().unwrap() {
        assert_eq!(g["verdict"], "blocked");
        assert_eq!(
            strs(&g["blocking"]),
            ["fip-unique", "service-cidr-unique", "peer-names-unique"],
            "{g}"
        );
    }
    // The findings, in the bundle: <cannot read>, the refusal named.
    let out = b.cwd().join("limited");
    let r = b
        .vpnmig(
            &[
                &["plan", "-n", "tenant-b", "--out", out.to_str().unwrap()][..],
                &ctx,
            ]
            .concat(),
        )
        .await;
    assert_eq!(r.code, 4, "{}", r.stderr);
    let plan: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("tenant-b/ok2/plan.json")).unwrap())
            .unwrap();
    for id in ["fip-unique", "service-cidr-unique", "peer-names-unique"] {
        let finding = &check(&plan, id)["findings"][0];
        assert_eq!(finding["seen"], "<cannot read>", "{id}: {finding}");
        assert!(
            finding["message"]
                .as_str()
                .unwrap()
                .contains("is forbidden: User \"limited\""),
            "{id}: {finding}"
        );
    }
    // All namespaces cannot be read at all: no plan, exit 1 (never a verdict).
    let r = b.vpnmig(&[&["plan", "-A"][..], &ctx].concat()).await;
    assert_eq!(r.code, 1, "{}\n{}", r.stderr, r.stdout);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
}

crate::rows! {
    plan_all_namespaces_finds_collisions: Row {
        scenario: fleet,
        only: None,
        after: None,
        steps: |b| Box::pin(plan_all_namespaces_finds_collisions_between_gateways_of_the_run(b)),
    },
    plan_selects_by_namespace_label_and_names_file: Row {
        scenario: fleet,
        only: None,
        after: None,
        steps: |b| Box::pin(plan_selects_by_namespace_label_and_names_file(b)),
    },
    a_refused_list_fails_the_uniqueness_checks: Row {
        scenario: fleet_and_a_namespace_admin,
        only: None,
        after: None,
        steps: |b| Box::pin(a_refused_list_fails_the_uniqueness_checks_never_passes_them(b)),
    },
}
