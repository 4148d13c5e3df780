//! Fidelity with a real client nobody here wrote: the runbook's own kubectl commands
//! (/work/shared/seed/migrating-ipsecgateway-to-vpngateway.md: delete, apply, `get -o
//! jsonpath`, exec), each row run on the emulator and on the real control plane
//! (`common::bed`). Skipped (and says so) where no kubectl is on the machine.

mod common;

use std::time::{Duration, Instant};

use common::bed::{self, Backend, Bed, DEPLOYMENT, IPSECGATEWAY, Row, Scenario};
use serde_json::Value;
use vpnmig_sandbox::SettingsFile;
use vpnmig_sandbox::api::auth::{Group, Rule, User};

fn condition(conditions: &Value, type_: &str) -> String {
    conditions
        .as_array()
        .and_then(|a| a.iter().find(|c| c["type"] == type_))
        .and_then(|c| c["status"].as_str())
        .unwrap_or("<absent>")
        .to_string()
}

/// kubectl's `… deleted` lines without the namespace kubectl 1.33 and later add
/// (`… deleted from NS namespace`; the control plane's kubectl is v1.37).
fn deleted(stdout: &str, ns: &str) -> String {
    stdout.replace(&format!(" deleted from {ns} namespace\n"), " deleted\n")
}

fn acme_unwinding_in_300_ms() -> Scenario {
    let mut settings = SettingsFile::default();
    settings.operator.finalizer_delay_ms = 300;
    Scenario {
        yaml: common::ACME,
        settings,
    }
}

async fn the_runbooks_kubectl_commands(b: &Bed) {
    let ns = b.ns.as_str();
    let dir = tempfile::tempdir().unwrap();

    // Step 1 (offline): vpnmig's own translation of the live object.
    let live = common::eventually(30, "gateway Ready", || async {
        b.get(IPSECGATEWAY, "acme")
            .await
            .filter(|g| condition(&g["status"]["conditions"], "Ready") == "True")
    })
    .await;
    let source = vpnmig::core::input::load(&live.to_string(), "live", None).unwrap();
    let plan =
        vpnmig::core::full_plan::build(&source, &vpnmig::core::allowlist::Allowlist::default());
    assert!(
        !plan.blocked,
        "{:?}",
        plan.checks
            .iter()
            .filter(|c| c.blocks())
            .collect::<Vec<_>>()
    );
    // The old object as vpnmig's bundle keeps it (cleaned so that `kubectl apply` can
    // create it again): the runbook's rollback applies it.
    let old_file = dir.path().join("old-ipsecgateway.yaml");
    std::fs::write(
        &old_file,
        vpnmig::output::manifest::to_yaml(&vpnmig::core::plan::clean_old_manifest(&source.raw)),
    )
    .unwrap();
    let gw_file = dir.path().join("vpngateway.yaml");
    let peer_file = dir.path().join("vpnpeer.yaml");
    std::fs::write(
        &gw_file,
        vpnmig::output::manifest::to_yaml(&plan.targets.gateway),
    )
    .unwrap();
    std::fs::write(
        &peer_file,
        vpnmig::output::manifest::to_yaml_stream(&plan.targets.peers),
    )
    .unwrap();

    // kubectl get, with the CRD's printer columns.
    let got = b.kubectl(&["get", "ipsecgateway", "acme"]).await;
    assert_eq!(got.code, 0, "{}", got.stderr);
    let header: Vec<&str> = got
        .stdout
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "FIP", "SERVICE", "CIDR", "READY", "AGE"]);
    assert!(
        got.stdout
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("acme   198.51.100.23   10.250.3.0/24   True"),
        "{}",
        got.stdout
    );

    // Step 2: delete returns only after the finalizer unwind.
    let t = Instant::now();
    let del = b
        .kubectl(&["delete", "ipsecgateway", "acme", "-n", ns])
        .await;
    assert_eq!(
        (del.code, deleted(&del.stdout, ns).as_str()),
        (0, "ipsecgateway.ipsec.bnerd.net \"acme\" deleted\n"),
        "{}",
        del.stderr
    );
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "kubectl waited for the unwind ({:?})",
        t.elapsed()
    );
    assert!(
        b.get(IPSECGATEWAY, "acme").await.is_none(),
        "gone when kubectl returns"
    );
    assert!(
        b.get(DEPLOYMENT, "acme").await.is_none(),
        "children removed by the unwind"
    );

    let apply = b
        .kubectl(&[
            "apply",
            "-f",
            gw_file.to_str().unwrap(),
            "-f",
            peer_file.to_str().unwrap(),
        ])
        .await;
    assert_eq!(
        (apply.code, apply.stdout.as_str()),
        (
            0,
            "vpngateway.vpn.bnerd.net/acme created\nvpnpeer.vpn.bnerd.net/acme created\n"
        ),
        "{}",
        apply.stderr
    );

    // kubectl wait watches conditions.
    let wait = b
        .kubectl(&[
            "wait",
            "--for=condition=Ready",
            "vpngateway/acme",
            "-n",
            ns,
            "--timeout=30s",
        ])
        .await;
    assert_eq!(
        (wait.code, wait.stdout.as_str()),
        (0, "vpngateway.vpn.bnerd.net/acme condition met\n"),
        "{}",
        wait.stderr
    );
    let wait = b
        .kubectl(&[
            "wait",
            "--for=condition=Established",
            "vpnpeer/acme",
            "-n",
            ns,
            "--timeout=30s",
        ])
        .await;
    assert_eq!(wait.code, 0, "{}", wait.stderr);

    // Step 3: the runbook's verification commands.
    let jsonpath = |kind: &'static str, path: &'static str| async move {
        let out = b
            .kubectl(&["get", kind, "acme", "-n", ns, "-o", path])
            .await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stdout
    };
    let conditions: Value =
        serde_json::from_str(&jsonpath("vpngateway", "jsonpath={.status.conditions}").await)
            .unwrap();
    assert_eq!(
        (
            condition(&conditions, "FIPAttached"),
            condition(&conditions, "Ready")
        ),
        ("True".into(), "True".into()),
        "{conditions}"
    );
    let conditions: Value =
        serde_json::from_str(&jsonpath("vpnpeer", "jsonpath={.status.conditions}").await).unwrap();
    assert_eq!(condition(&conditions, "Authorized"), "True", "{conditions}");
    assert_eq!(
        jsonpath(
            "vpngateway",
            "jsonpath={.status.floatingIP} {.status.serviceCIDR}"
        )
        .await,
        "198.51.100.23 10.250.3.0/24"
    );

    let exec = |command: &'static [&'static str]| async move {
        let mut args = vec!["exec", "-n", ns, "deploy/acme", "-c", "strongswan", "--"];
        args.extend(command);
        b.kubectl(&args).await
    };
    let sas = exec(&["swanctl", "--list-sas"]).await;
    assert_eq!(sas.code, 0, "{}", sas.stderr);
    for want in [
        "ESTABLISHED, IKEv2",
        "remote 'fw.acme.example' @ 203.0.113.10[4500]",
        "INSTALLED, TUNNEL",
        "remote 10.20.0.0/16",
    ] {
        assert!(sas.stdout.contains(want), "{want:?} in:\n{}", sas.stdout);
    }
    // vpnmig's own reader agrees with what the simulated strongSwan printed.
    let parsed = vpnmig::core::swanctl::parse(&sas.stdout).unwrap();
    let ike = &parsed.ike_sas[0];
    assert_eq!(
        (
            ike.state.as_str(),
            ike.ike_version,
            ike.remote.id.as_str(),
            ike.remote.address.as_str()
        ),
        ("ESTABLISHED", 2, "fw.acme.example", "203.0.113.10")
    );
    assert_eq!(
        ike.child_sas
            .iter()
            .map(|c| (c.state.as_str(), c.remote_ts.clone()))
            .collect::<Vec<_>>(),
        [("INSTALLED", vec!["10.20.0.0/16".to_string()])]
    );
    // A command the container does not have.
    let bad = exec(&["frobnicate"]).await;
    match b.backend {
        Backend::Emulated => {
            assert_eq!(bad.code, 127, "exit status travels back: {}", bad.stderr)
        }
        Backend::Real => {
            // kwok runs the command on the host, without a container runtime: one not on its
            // PATH fails to start, and kube-apiserver passes kwok's error on (docs/sandbox.md,
            // "Where it differs from a cluster with kubelets").
            assert_eq!(bad.code, 1, "{}", bad.stderr);
            assert!(
                bad.stderr
                    .contains("exec: \"frobnicate\": executable file not found in $PATH"),
                "{}",
                bad.stderr
            );
        }
    }

    let gone = b.kubectl(&["get", "ipsecgateway", "-n", ns]).await;
    assert_eq!(
        gone.stderr,
        format!("No resources found in {ns} namespace.\n")
    );

    // Rollback, as the runbook writes it: `kubectl delete vpngateway <name> vpnpeer <name>`.
    // kubectl reads every word after the type as a name of that type: it deletes the
    // VPNGateway (twice: the second DELETE finds it still held by its finalizer), finds no
    // VPNGateway "vpnpeer", and leaves the VPNPeer. vpnmig's own advice is `kubectl delete
    // vpnpeer <name> && kubectl delete vpngateway <name>`.
    let del = b
        .kubectl(&["delete", "vpngateway", "acme", "vpnpeer", "acme", "-n", ns])
        .await;
    assert_eq!(
        (
            del.code,
            deleted(&del.stdout, ns).as_str(),
            del.stderr.as_str()
        ),
        (
            1,
            "vpngateway.vpn.bnerd.net \"acme\" deleted\nvpngateway.vpn.bnerd.net \"acme\" deleted\n",
            "Error from server (NotFound): vpngateways.vpn.bnerd.net \"vpnpeer\" not found\n"
        )
    );
    let peers = b.kubectl(&["get", "vpnpeer", "-n", ns, "-o", "name"]).await;
    assert_eq!(
        peers.stdout, "vpnpeer.vpn.bnerd.net/acme\n",
        "the VPNPeer is left"
    );
    let del = b.kubectl(&["delete", "vpnpeer", "acme", "-n", ns]).await;
    assert_eq!(
        (del.code, deleted(&del.stdout, ns).as_str()),
        (0, "vpnpeer.vpn.bnerd.net \"acme\" deleted\n"),
        "{}",
        del.stderr
    );
    let apply = b
        .kubectl(&["apply", "-f", old_file.to_str().unwrap()])
        .await;
    assert_eq!(
        (apply.code, apply.stdout.as_str()),
        (0, "ipsecgateway.ipsec.bnerd.net/acme created\n"),
        "{}",
        apply.stderr
    );
    let wait = b
        .kubectl(&[
            "wait",
            "--for=condition=Ready",
            "ipsecgateway/acme",
            "-n",
            ns,
            "--timeout=30s",
        ])
        .await;
    assert_eq!(wait.code, 0, "{}", wait.stderr);
    // The same floating IP; the old kind cannot pin its service CIDR, so the pool's first
    // free one (vpnmig's rollback advice says to check it).
    assert_eq!(
        jsonpath(
            "ipsecgateway",
            "jsonpath={.status.floatingIP} {.status.serviceCIDR}"
        )
        .await,
        "198.51.100.23 10.250.0.0/24"
    );
}

fn acme_with_a_viewer_and_deleters() -> Scenario {
    Scenario {
        yaml: common::ACME,
        settings: SettingsFile {
            users: vec![User::with_rules(
                "viewer",
                vec![Rule::new(&["get", "list"], &["ipsecgateways"])],
            )],
            groups: vec![Group {
                name: "deleters".into(),
                rules: vec![Rule::new(&["delete"], &["ipsecgateways"])],
            }],
            ..Default::default()
        },
    }
}

/// kubectl's own `--as`/`--as-group`: the headers a real client sends, checked as
/// kube-apiserver checks them.
async fn kubectl_impersonation_is_checked_like_kube_apiserver(b: &Bed) {
    let ns = b.ns.as_str();
    let ok = b
        .kubectl(&[
            "get",
            "ipsecgateway",
            "acme",
            "-n",
            ns,
            "--as",
            "viewer",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(
        (ok.code, ok.stdout.as_str()),
        (0, "ipsecgateway.ipsec.bnerd.net/acme\n"),
        "{}",
        ok.stderr
    );
    let no = b
        .kubectl(&["get", "vpngateways", "-n", ns, "--as", "viewer"])
        .await;
    assert_eq!(no.code, 1);
    assert!(
        no.stderr.contains(
            "User \"viewer\" cannot list resource \"vpngateways\" in API group \"vpn.bnerd.net\""
        ),
        "{}",
        no.stderr
    );
    // The group's rules count for the impersonated identity: a delete (dry run) is
    // allowed with the group and refused without it.
    let del = |groups: bool| async move {
        let mut args = vec![
            "delete",
            "ipsecgateway",
            "acme",
            "-n",
            ns,
            "--dry-run=server",
            "--as",
            "viewer",
        ];
        if groups {
            args.extend(["--as-group", "deleters"]);
        }
        b.kubectl(&args).await
    };
    let with = del(true).await;
    assert_eq!(with.code, 0, "{} {}", with.stdout, with.stderr);
    let without = del(false).await;
    assert_eq!(without.code, 1, "{}", without.stdout);
    assert!(
        without
            .stderr
            .contains("User \"viewer\" cannot delete resource \"ipsecgateways\""),
        "{}",
        without.stderr
    );
    let denied = b
        .kubectl(&[
            "get",
            "ipsecgateways",
            "-n",
            ns,
            "--context",
            "vpnmig-sandbox-viewer",
            "--as",
            "sandbox-admin",
        ])
        .await;
    assert_eq!(denied.code, 1);
    assert!(
        // kube-apiserver v1.36 and later check constrained impersonation (KEP-5284) first and
        // name its refusal: the mode's verb on the request itself.
        denied.stderr.contains(&format!("ipsecgateways.ipsec.bnerd.net is forbidden: User \"viewer\" cannot impersonate-on:user-info:list resource \"ipsecgateways\" in API group \"ipsec.bnerd.net\" in the namespace \"{ns}\"")),
        "{}",
        denied.stderr
    );
}

const ROWS: &[Row] = &[
    Row {
        name: "the runbook's kubectl commands",
        scenario: acme_unwinding_in_300_ms,
        only: None,
        steps: |b| Box::pin(the_runbooks_kubectl_commands(b)),
    },
    Row {
        name: "kubectl impersonation is checked like kube-apiserver",
        scenario: acme_with_a_viewer_and_deleters,
        only: None,
        steps: |b| Box::pin(kubectl_impersonation_is_checked_like_kube_apiserver(b)),
    },
];

fn kubectl_missing() -> bool {
    let missing = bed::kubectl_bin().is_none();
    if missing {
        eprintln!(
            "SKIPPED: no kubectl (neither the control plane's nor one on PATH); these fidelity rows need a real kubectl"
        );
    }
    missing
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_row_on_the_emulator() {
    if kubectl_missing() {
        return;
    }
    bed::emulated(ROWS).await;
}

#[test]
fn every_row_on_the_real_control_plane() {
    if kubectl_missing() {
        return;
    }
    bed::real(ROWS);
}
