//! Fidelity with a real client nobody here wrote: the runbook's own kubectl commands,
//! run against the sandbox. Skipped (and says so) where kubectl is not on the machine.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{ACME, start, within};
use serde_json::Value;
use vpnmig_sandbox::SettingsFile;

const NS: &str = "tenant-acme";

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Run kubectl on a blocking thread, so the in-process server keeps serving.
async fn kubectl(kubeconfig: &Path, args: &[&str]) -> Out {
    let kubeconfig = kubeconfig.to_path_buf();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let what = format!("kubectl {}", args.join(" "));
    let run = tokio::task::spawn_blocking(move || {
        Command::new("kubectl")
            .env("KUBECONFIG", &kubeconfig)
            .env_remove("KUBECTL_EXTERNAL_DIFF")
            .args(&args)
            .output()
            .expect("kubectl runs")
    });
    let out = within(60, &what, run).await.unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: String::from_utf8_lossy(&out.stderr).into(),
    }
}

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn condition(conditions: &Value, type_: &str) -> String {
    conditions
        .as_array()
        .and_then(|a| a.iter().find(|c| c["type"] == type_))
        .and_then(|c| c["status"].as_str())
        .unwrap_or("<absent>")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runbooks_kubectl_commands_work_against_the_sandbox() {
    if !kubectl_available() {
        eprintln!("SKIPPED: kubectl is not on PATH; this fidelity test needs a real kubectl");
        return;
    }
    let mut settings = SettingsFile::default();
    settings.operator.finalizer_delay_ms = 300;
    let sb = start(ACME, settings).await;
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    sb.write_kubeconfig(&kc).unwrap();

    // Step 1 (offline): vpnmig's own translation of the live object.
    let gw_rt = sb
        .store
        .resource("ipsec.bnerd.net", "v1alpha1", "ipsecgateways")
        .unwrap();
    let live = common::eventually(5, "gateway reconciled", || {
        let live = sb.store.get(&gw_rt, NS, "acme").ok();
        async move { live.filter(|g| condition(&g["status"]["conditions"], "Ready") == "True") }
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
    let got = kubectl(&kc, &["get", "ipsecgateway", "acme"]).await;
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
    let del = kubectl(&kc, &["delete", "ipsecgateway", "acme", "-n", NS]).await;
    assert_eq!(
        (del.code, del.stdout.as_str()),
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
        sb.store.get(&gw_rt, NS, "acme").is_err(),
        "gone when kubectl returns"
    );
    let deploy_rt = sb.store.resource("apps", "v1", "deployments").unwrap();
    assert!(
        sb.store.get(&deploy_rt, NS, "acme").is_err(),
        "children removed by the unwind"
    );

    let apply = kubectl(
        &kc,
        &[
            "apply",
            "-f",
            gw_file.to_str().unwrap(),
            "-f",
            peer_file.to_str().unwrap(),
        ],
    )
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
    let wait = kubectl(
        &kc,
        &[
            "wait",
            "--for=condition=Ready",
            "vpngateway/acme",
            "-n",
            NS,
            "--timeout=30s",
        ],
    )
    .await;
    assert_eq!(
        (wait.code, wait.stdout.as_str()),
        (0, "vpngateway.vpn.bnerd.net/acme condition met\n"),
        "{}",
        wait.stderr
    );
    let wait = kubectl(
        &kc,
        &[
            "wait",
            "--for=condition=Established",
            "vpnpeer/acme",
            "-n",
            NS,
            "--timeout=30s",
        ],
    )
    .await;
    assert_eq!(wait.code, 0, "{}", wait.stderr);

    // Step 3: the runbook's verification commands.
    let gw = kubectl(
        &kc,
        &[
            "get",
            "vpngateway",
            "acme",
            "-n",
            NS,
            "-o",
            "jsonpath={.status.conditions}",
        ],
    )
    .await;
    let conditions: Value = serde_json::from_str(&gw.stdout).unwrap();
    assert_eq!(
        (
            condition(&conditions, "FIPAttached"),
            condition(&conditions, "Ready")
        ),
        ("True".into(), "True".into()),
        "{conditions}"
    );
    let peer = kubectl(
        &kc,
        &[
            "get",
            "vpnpeer",
            "acme",
            "-n",
            NS,
            "-o",
            "jsonpath={.status.conditions}",
        ],
    )
    .await;
    let conditions: Value = serde_json::from_str(&peer.stdout).unwrap();
    assert_eq!(condition(&conditions, "Authorized"), "True", "{conditions}");
    let fip = kubectl(
        &kc,
        &[
            "get",
            "vpngateway",
            "acme",
            "-n",
            NS,
            "-o",
            "jsonpath={.status.floatingIP} {.status.serviceCIDR}",
        ],
    )
    .await;
    assert_eq!(fip.stdout, "198.51.100.23 10.250.3.0/24");

    let sas = kubectl(
        &kc,
        &[
            "exec",
            "-n",
            NS,
            "deploy/acme",
            "-c",
            "strongswan",
            "--",
            "swanctl",
            "--list-sas",
        ],
    )
    .await;
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
    let bad = kubectl(
        &kc,
        &[
            "exec",
            "-n",
            NS,
            "deploy/acme",
            "-c",
            "strongswan",
            "--",
            "frobnicate",
        ],
    )
    .await;
    assert_eq!(bad.code, 127, "exit status travels back: {}", bad.stderr);

    let gone = kubectl(&kc, &["get", "ipsecgateway", "-n", NS]).await;
    assert_eq!(
        gone.stderr,
        "No resources found in tenant-acme namespace.\n"
    );
    sb.shutdown().await;
}

/// kubectl's own `--as`/`--as-group` against the sandbox's impersonation: the headers a
/// real client sends are the ones it checks, with kube-apiserver's answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_impersonation_is_checked_like_kube_apiserver() {
    use vpnmig_sandbox::api::auth::{Group, Rule, User};
    if !kubectl_available() {
        eprintln!("SKIPPED: kubectl is not on PATH; this fidelity test needs a real kubectl");
        return;
    }
    let settings = SettingsFile {
        users: vec![User::with_rules(
            "viewer",
            vec![Rule::new(&["get", "list"], &["ipsecgateways"])],
        )],
        groups: vec![Group {
            name: "deleters".into(),
            rules: vec![Rule::new(&["delete"], &["ipsecgateways"])],
        }],
        ..Default::default()
    };
    let sb = start(ACME, settings).await;
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    sb.write_kubeconfig(&kc).unwrap();

    let ok = kubectl(
        &kc,
        &[
            "get",
            "ipsecgateway",
            "acme",
            "-n",
            NS,
            "--as",
            "viewer",
            "-o",
            "name",
        ],
    )
    .await;
    assert_eq!(
        (ok.code, ok.stdout.as_str()),
        (0, "ipsecgateway.ipsec.bnerd.net/acme\n"),
        "{}",
        ok.stderr
    );
    let no = kubectl(&kc, &["get", "vpngateways", "-n", NS, "--as", "viewer"]).await;
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
    let del = |groups: bool| {
        let mut args = vec![
            "delete",
            "ipsecgateway",
            "acme",
            "-n",
            NS,
            "--dry-run=server",
            "--as",
            "viewer",
        ];
        if groups {
            args.extend(["--as-group", "deleters"]);
        }
        let kc = kc.clone();
        async move { kubectl(&kc, &args).await }
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
    let denied = kubectl(
        &kc,
        &[
            "get",
            "ipsecgateways",
            "-n",
            NS,
            "--context",
            "vpnmig-sandbox-viewer",
            "--as",
            "sandbox-admin",
        ],
    )
    .await;
    assert_eq!(denied.code, 1);
    assert!(
        // kube-apiserver v1.36 and later check constrained impersonation (KEP-5284) first and
        // name its refusal: the mode's verb on the request itself.
        denied.stderr.contains("ipsecgateways.ipsec.bnerd.net is forbidden: User \"viewer\" cannot impersonate-on:user-info:list resource \"ipsecgateways\" in API group \"ipsec.bnerd.net\" in the namespace \"tenant-acme\""),
        "{}",
        denied.stderr
    );
    sb.shutdown().await;
}
