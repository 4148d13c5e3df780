//! `vpnmig status` end to end: the built binary against the emulator and the real control
//! plane (tests/live/bed.rs rows, one run per backend).

mod live;

use live::bed::{Bed, CONFIGMAP, CRD, Row, SECRET, Scenario, VPNGATEWAY, VPNPEER, eventually};
use live::{ACME, INITECH};
use serde_json::{Value, json};
use vpnmig_sandbox::SettingsFile;
use vpnmig_sandbox::api::auth::{Rule, User};
use vpnmig_sandbox::api::faults::ErrorRule;

const EXTRA: &str = r#"
apiVersion: ipsec.bnerd.net/v1alpha1
kind: IPsecGateway
metadata: {name: soylent, namespace: tenant-acme}
spec:
  endpoint: {network: public}
  auth: {pskSecretRef: {name: acme-psk, key: psk}}
  ike: {version: 2, proposals: [aes256-sha256-modp2048]}
  tunnels:
  - {name: main, peer: {address: 203.0.113.70}, remoteSubnets: [10.70.0.0/16], esp: {proposals: [aes256gcm16-modp2048]}}
---
apiVersion: vpn.bnerd.net/v1alpha1
kind: VPNGateway
metadata: {name: globex, namespace: tenant-acme}
spec:
  protocol: ipsec
  endpoint: {floatingIP: 198.51.100.60}
  serviceCIDR: 10.250.60.0/24
  ipsec: {ike: {version: 2, proposals: [aes256-sha256-modp2048]}}
---
apiVersion: vpn.bnerd.net/v1alpha1
kind: VPNPeer
metadata: {name: globex, namespace: tenant-acme}
spec:
  gatewayRef: {name: globex}
  ipsec: {peer: {address: 203.0.113.60}, remoteSubnets: [10.60.0.0/16], pskSecretRef: {name: acme-psk, key: psk}}
"#;

/// acme, initech and three more: an IPsecGateway without a pinned floating IP, and a
/// VPNGateway with its peer.
fn three_tenants() -> Scenario {
    let yaml = format!("{ACME}\n---\n{INITECH}\n---\n{EXTRA}");
    Scenario::new(Box::leak(yaml.into_boxed_str()), SettingsFile::default())
}

/// The same, with a user who may list and get only IPsecGateways.
fn three_tenants_and_a_lister() -> Scenario {
    let yaml = format!("{ACME}\n---\n{INITECH}\n---\n{EXTRA}");
    let settings = SettingsFile {
        users: vec![User::with_rules(
            "lister",
            vec![Rule::new(&["list", "get"], &["ipsecgateways"])],
        )],
        ..Default::default()
    };
    Scenario::new(Box::leak(yaml.into_boxed_str()), settings)
}

fn acme() -> Scenario {
    Scenario::new(ACME, SettingsFile::default())
}

/// acme, in a serviceCIDR pool that hands its /24 back to a rollback's IPsecGateway.
fn acme_in_its_pool() -> Scenario {
    Scenario::new(ACME, live::pool("10.250.3.0/24"))
}

/// acme with two users who cannot read what the PSK check needs: `no-secrets` (no
/// Secrets) and `no-peer-get` (lists VPNPeers but may not get one: which Secret it takes
/// its key from is not known).
fn acme_with_partial_readers() -> Scenario {
    let reads = |extra: &'static str| {
        let mut r = vec![
            "ipsecgateways",
            "vpngateways",
            "configmaps",
            "namespaces",
            "customresourcedefinitions",
            "deployments",
            "pods",
            "leases",
        ];
        r.push(extra);
        r
    };
    let settings = SettingsFile {
        users: vec![
            User::with_rules(
                "no-secrets",
                vec![
                    Rule::new(&["get", "list", "watch"], &reads("vpnpeers")),
                    Rule::new(&["create"], &["selfsubjectaccessreviews"]),
                ],
            ),
            User::with_rules(
                "no-peer-get",
                vec![
                    Rule::new(&["get", "list", "watch"], &reads("secrets")),
                    Rule::new(&["list", "watch"], &["vpnpeers"]),
                    Rule::new(&["create"], &["selfsubjectaccessreviews"]),
                ],
            ),
        ],
        ..Default::default()
    };
    Scenario::new(ACME, settings)
}

crate::rows! {
    /// A refusal names the user and the resource; a transient 500 is retried and said;
    /// a group the cluster no longer serves names the operator version that serves it.
    refusals_and_transient_errors_are_named: Row {
        scenario: three_tenants_and_a_lister,
        only: None,
        after: None,
        steps: |b| Box::pin(refusals_and_transient_errors_are_named(b)),
    },
    status_lists_both_kinds_with_their_blockers: Row {
        scenario: three_tenants,
        only: None,
        after: None,
        steps: |b| Box::pin(status_lists_both_kinds_with_their_blockers(b)),
    },
    /// Issue 10 item 8: kubectl's cluster flags go before the subcommand too.
    cluster_flags_before_the_subcommand_are_accepted: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(cluster_flags_before_the_subcommand_are_accepted(b)),
    },
    /// Issue 21 item 1, round 4, kind C: `status` checks each window's PSK Secret against
    /// its journal, whatever holds an owner (here none: a window with no GitOps at all). A
    /// Secret it may not read is "could not check", a blocker, never green; a key changed
    /// since is the blocker `psk-changed` with the re-create command (the journal's key
    /// name). Never a value.
    status_checks_each_window_s_psk_against_its_journal: Row {
        scenario: acme_with_partial_readers,
        only: None,
        after: None,
        steps: |b| Box::pin(status_checks_each_window_s_psk_against_its_journal(b)),
    },
    /// A gateway on another floating IP than the one its window left is no green line (a22
    /// F4: `PINNED yes` over a floating IP changed by hand): the row gets the blocker
    /// `fip-changed`, in the text and in `-o json`, with the line that says which address
    /// the journal pins and what to put back.
    status_says_a_floating_ip_changed_since_the_window: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(status_says_a_floating_ip_changed_since_the_window(b)),
    },
    /// A VPNPeer pointed at another Secret since the window (a21d attack 13: a late sync
    /// pointed it at the repository's Secret with an old key) is no green line either: the
    /// key the journal fingerprinted is not the one the tunnel uses. Blocker `psk-moved`.
    status_says_a_vpnpeer_that_takes_its_key_from_another_secret: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(status_says_a_vpnpeer_that_takes_its_key_from_another_secret(b)),
    },
    /// a21f A9: a finished window's gateway and its journal deleted together (by hand, a
    /// namespace clean-up): nothing in the cluster names the gateway any more, and `status`
    /// was silent. It names it from this machine's bundle, with the rollback that restores
    /// the IPsecGateway from it.
    status_names_a_gateway_deleted_with_its_journal: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(status_names_a_gateway_deleted_with_its_journal(b)),
    },
    /// a21g 15: a VPNGateway that carries vpnmig's migrated-from annotation but that
    /// vpnmig never applied (the repository change merged before any window: the GitOps
    /// controller applied the bundle's objects) is not "journal missing": no window ran.
    /// a21g 09: a gateway and its journal deleted, seen from a machine without its
    /// bundle: `verify`, `report` and `rollback` name the record the cluster archived of
    /// its earlier window instead of "no journal" alone.
    commands_name_the_archived_window_of_a_gateway_without_a_journal: Row {
        scenario: acme_in_its_pool,
        only: None,
        after: None,
        steps: |b| Box::pin(commands_name_the_archived_window_of_a_gateway_without_a_journal(b)),
    },
    status_tells_a_gateway_migrated_outside_a_window: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(status_tells_a_gateway_migrated_outside_a_window(b)),
    },
    /// A rollback stopped on a VPNGateway vpnmig did not create for the window (re-created
    /// by hand since, or an older vpnmig's rollback from the bundle of a gateway migrated
    /// outside any window: a21p E16's journal at `rolling-back`): the rollback, `status`
    /// and `cutover` name the way on (delete it, then the rollback resumes); followed,
    /// the rollback ends. On the code before: "once the cause is fixed … resumes", and a
    /// rollback run again stopped the same way.
    a_rollback_stopped_on_a_vpngateway_vpnmig_did_not_create_names_the_way_on: Row {
        scenario: acme_in_its_pool,
        only: None,
        after: None,
        steps: |b| Box::pin(a_rollback_stopped_on_a_vpngateway_vpnmig_did_not_create_names_the_way_on(b)),
    },
}

async fn status_tells_a_gateway_migrated_outside_a_window(b: &Bed) {
    let r = b.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    // beta's VPNGateway, as a repository would hold it, applied by someone else.
    let mut gw = b.get(VPNGATEWAY, "tenant-acme", "acme").await.unwrap();
    let spec = gw["spec"].take();
    b.put(
        VPNGATEWAY,
        "tenant-acme",
        json!({"metadata": {"name": "beta", "namespace": "tenant-acme",
            "annotations": {"vpnmig.bnerd.net/migrated-from": "ipsecgateways.ipsec.bnerd.net/beta"}},
            "spec": spec}),
    )
    .await;
    let r = b.vpnmig(&["status"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = live::flat(&r.stdout);
    assert!(
        text.contains("migrated outside a vpnmig window: tenant-acme/beta: vpngateway/beta -n tenant-acme carries vpnmig's migrated-from annotation, but vpnmig never applied it (written by field manager "),
        "{}",
        r.stdout
    );
    assert!(
        !text.contains("journal missing: tenant-acme/beta"),
        "{}",
        r.stdout
    );
    // acme's own window, vpnmig-applied, stays as it was: no line for it.
    assert!(
        !text.contains("tenant-acme/acme was migrated"),
        "{}",
        r.stdout
    );
    let doc: Value =
        serde_json::from_str(&b.vpnmig(&["status", "-o", "json"]).await.stdout).unwrap();
    assert_eq!(doc["lostJournals"][0]["gateway"], "beta", "{doc}");
    assert_eq!(doc["lostJournals"][0]["outsideWindow"], true, "{doc}");
}

async fn status_names_a_gateway_deleted_with_its_journal(b: &Bed) {
    let r = b.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = b.vpnmig(&["status", "-o", "json"]).await;
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["lostJournals"], json!([]), "as the window left it");

    b.delete(VPNGATEWAY, "tenant-acme", "acme").await;
    b.delete(CONFIGMAP, "tenant-acme", "vpnmig-acme").await;
    eventually(60, "VPNGateway acme gone", || async {
        b.get(VPNGATEWAY, "tenant-acme", "acme").await.is_none()
    })
    .await;

    let r = b.vpnmig(&["status"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = live::flat(&r.stdout);
    assert!(
        text.contains("gateway and journal missing: tenant-acme/acme had a vpnmig window, but neither an IPsecGateway nor a VPNGateway acme exists in namespace tenant-acme, and ConfigMap tenant-acme/vpnmig-acme is gone: the client's tunnels are down"),
        "{}",
        r.stdout
    );
    assert!(
        text.contains("this machine has the bundle of its cutover (")
            && text.contains("`vpnmig rollback acme -n tenant-acme --plan "),
        "{}",
        r.stdout
    );
    let r = b.vpnmig(&["status", "-A", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    let lost = doc["lostJournals"].as_array().unwrap();
    assert_eq!(lost.len(), 1, "{}", r.stdout);
    assert_eq!(
        (
            &lost[0]["namespace"],
            &lost[0]["gateway"],
            &lost[0]["gatewayGone"]
        ),
        (&json!("tenant-acme"), &json!("acme"), &json!(true))
    );
}

async fn status_lists_both_kinds_with_their_blockers(b: &Bed) {
    let r = b.step(&["status"], 0, &[]).await;
    // One line: the context, the server of the kubeconfig, the namespace.
    let server = std::fs::read_to_string(&b.kubeconfig)
        .unwrap()
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: ").map(str::to_string))
        .unwrap();
    let server = server.trim_matches('"').to_string();
    assert!(
        r.stderr.starts_with("context vpnmig-")
            && r.stderr
                .ends_with(&format!(", server {server}, namespace tenant-acme\n"))
            && r.stderr.lines().count() == 1,
        "{}",
        r.stderr
    );
    let lines: Vec<Vec<&str>> = r
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        [
            "NAME", "KIND", "MIGRATED", "FIP", "PINNED", "TUNNELS", "READY", "BLOCKERS"
        ]
    );
    assert_eq!(
        lines[1],
        [
            "acme",
            "IPsecGateway",
            "no",
            "198.51.100.23",
            "yes",
            "1",
            "True",
            "none"
        ]
    );
    assert_eq!(
        lines[2],
        [
            "globex",
            "VPNGateway",
            "yes",
            "198.51.100.60",
            "yes",
            "1",
            "True",
            "-"
        ]
    );
    assert_eq!(
        lines[3][..5],
        ["soylent", "IPsecGateway", "no", "198.51.100.200", "NO"]
    );
    assert!(lines[3][7].contains("fip-pinned"), "{:?}", lines[3]);

    let r = b.vpnmig(&["status", "-A", "-o", "json"]).await;
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (0, ""),
        "JSON mode prints nothing else"
    );
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    let rows = &doc["gateways"];
    assert_eq!(doc["windows"], json!([]), "no window under way");
    assert_eq!(doc["lostJournals"], json!([]));
    assert_eq!(doc.get("windowsUnknown"), None, "the journals were listed");
    let mut initech = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "initech")
        .unwrap()
        .clone();
    // Who wrote it: the real control plane keeps managedFields (the scenario's loader
    // applied it); the emulator's loader writes none.
    let by = initech.as_object_mut().unwrap().remove("managedBy");
    assert_eq!(
        by,
        (b.backend == live::bed::Backend::Real).then(|| json!("vpnmig-sandbox")),
        "{initech}"
    );
    assert_eq!(
        initech,
        json!({"namespace": "tenant-initech", "name": "initech", "kind": "IPsecGateway", "migrated": "no", "floatingIP": "198.51.100.41", "fipPinned": true, "serviceCIDR": "10.250.41.0/24", "tunnels": 2, "ready": "True", "blockers": []})
    );
    assert_eq!(rows.as_array().unwrap().len(), 4);
}

async fn refusals_and_transient_errors_are_named(b: &Bed) {
    let r = b
        .step(&["status", "--context", "vpnmig-sandbox-lister"], 1, &[])
        .await;
    assert!(r.says("error: forbidden: cannot list vpngateways in namespace tenant-acme: vpngateways.vpn.bnerd.net is forbidden: User \"lister\" cannot list resource \"vpngateways\""), "{}", r.stderr);

    b.api_faults().write().unwrap().errors.push(ErrorRule {
        verbs: vec!["list".into()],
        resources: vec!["ipsecgateways".into()],
        code: 500,
        times: Some(2),
        retry_after_seconds: None,
    });
    let r = b.step(&["status"], 0, &[]).await;
    assert_eq!(r.stderr.matches("retrying in").count(), 2, "{}", r.stderr);

    // The objects first, each through its finalizer unwind: the real API server's CRD
    // finalizer re-checks for instances with an exponential back-off, so a CRD deleted
    // over objects that take seconds to unwind may take twice that to go (CI: over 30 s).
    for kind in [VPNPEER, VPNGATEWAY] {
        for o in b.list(kind, "").await {
            let (ns, name) = (
                o["metadata"]["namespace"].as_str().unwrap().to_string(),
                o["metadata"]["name"].as_str().unwrap().to_string(),
            );
            if o["metadata"]["deletionTimestamp"].is_null() {
                b.delete(kind, &ns, &name).await;
            }
        }
    }
    eventually(60, "the VPNGateways and VPNPeers gone", || async {
        b.list(VPNGATEWAY, "").await.is_empty() && b.list(VPNPEER, "").await.is_empty()
    })
    .await;
    b.delete(CRD, "", "vpngateways.vpn.bnerd.net").await;
    b.delete(CRD, "", "vpnpeers.vpn.bnerd.net").await;
    // The real API server stops serving a deleted CRD's version once it is gone.
    eventually(60, "the CRDs gone", || async {
        b.get(CRD, "", "vpngateways.vpn.bnerd.net").await.is_none()
            && b.get(CRD, "", "vpnpeers.vpn.bnerd.net").await.is_none()
    })
    .await;
    let mut last = String::new();
    for _ in 0..100 {
        let r = b.vpnmig(&["status"]).await;
        if r.code == 1 && r.says("vpn.bnerd.net/v1alpha1 is not served by") {
            assert!(r.says("the gateway operator v0.3.0"), "{}", r.stderr);
            return;
        }
        last = format!("{}\n{}", r.code, r.stderr);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("status never said the group is not served: {last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_cluster_config_is_a_clear_error() {
    let out = tokio::task::spawn_blocking(|| {
        std::process::Command::new(env!("CARGO_BIN_EXE_vpnmig"))
            .env("KUBECONFIG", "/nonexistent/kubeconfig")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .args(["status"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    // The path KUBECONFIG names is what is wrong (issue 10 item 2).
    assert!(
        err.starts_with(
            "error: cannot load the kubeconfig: KUBECONFIG names /nonexistent/kubeconfig, which does not exist"
        ),
        "{err}"
    );
    assert!(err.contains("hint: set KUBECONFIG"), "{err}");
    // No KUBECONFIG and no ~/.kube/config, outside a cluster.
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_vpnmig"))
            .env_remove("KUBECONFIG")
            .env("HOME", &home_path)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .args(["status"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with(
            "error: cannot load the kubeconfig: no kubeconfig found and not in a cluster"
        ),
        "{err}"
    );
}

async fn cluster_flags_before_the_subcommand_are_accepted(b: &Bed) {
    let kc = b.kubeconfig.to_str().unwrap().to_string();
    let r = b
        .vpnmig(&[
            "--kubeconfig",
            &kc,
            "-n",
            "tenant-acme",
            "status",
            "-o",
            "json",
        ])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rows: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(rows["gateways"][0]["name"], "acme", "{}", r.stdout);
    let r = b.vpnmig(&["-n", "tenant-nope", "status"]).await;
    assert!(
        r.says("namespace tenant-nope does not exist"),
        "{}",
        r.stderr
    );
    let r = b
        .vpnmig(&["--kubeconfig", "/nonexistent/kc", "status"])
        .await;
    assert_eq!(r.code, 1);
    assert!(
        r.says("--kubeconfig /nonexistent/kc: no such file"),
        "{}",
        r.stderr
    );
}

async fn status_checks_each_window_s_psk_against_its_journal(b: &Bed) {
    let r = b.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let row = |stdout: &str| -> String {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with("acme "))
            .unwrap_or_default()
            .to_string()
    };
    // As the window left it: no PSK blocker.
    let r = b.vpnmig(&["status"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains("psk-"), "{}", r.stdout);
    // A context that may not read Secrets: could not check, not green.
    let r = b
        .vpnmig(&["status", "--context", "vpnmig-sandbox-no-secrets"])
        .await;
    assert!(
        row(&r.stdout).contains("psk-unchecked"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    assert!(
        live::flat(&r.stdout).contains("PSK not checked: secret/acme-psk -n tenant-acme of the window of tenant-acme/acme: could not check it"),
        "{}",
        r.stdout
    );
    let r = b
        .vpnmig(&["status", "--context", "vpnmig-sandbox-no-peer-get"])
        .await;
    assert!(
        row(&r.stdout).contains("psk-unchecked"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    assert!(
        live::flat(&r.stdout).contains(
            "could not check which Secret vpnpeer/acme -n tenant-acme takes its key from"
        ),
        "{}",
        r.stdout
    );
    // The key rotated by hand after `done`.
    {
        use base64::Engine;
        let key = base64::engine::general_purpose::STANDARD.encode("another-key-by-hand");
        b.edit(SECRET, "tenant-acme", "acme-psk", |o| {
            o["data"]["psk"] = json!(key)
        })
        .await;
    }
    let r = b.vpnmig(&["status"]).await;
    assert!(row(&r.stdout).contains("psk-changed"), "{}", r.stdout);
    let flat = live::flat(&r.stdout);
    assert!(
        flat.contains("key psk is not the one the window fingerprinted"),
        "{flat}"
    );
    assert!(
        flat.contains("kubectl create secret generic acme-psk -n tenant-acme --from-literal=psk=<the client's key>"),
        "{flat}"
    );
    assert!(!flat.contains("YW5vdGhlci1rZXktYnktaGFuZA"), "{flat}");
    assert!(!flat.contains("another-key-by-hand"), "{flat}");
    let r = b.vpnmig(&["status", "-o", "json"]).await;
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["pskProblems"][0]["state"], "changed", "{doc}");
    let gw = doc["gateways"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "acme")
        .unwrap();
    assert_eq!(gw["blockers"], json!(["psk-changed"]), "{gw}");
}

async fn status_says_a_floating_ip_changed_since_the_window(b: &Bed) {
    let r = b.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    // field written, value, synced by Flux, blocker expected, the fix advised
    let by_hand = "put spec.endpoint.floatingIP back to 198.51.100.23;";
    let in_git = "flux:kustomization/edge syncs it, so a fix in the cluster alone is undone by its next sync: put spec.endpoint.floatingIP back to 198.51.100.23 in the repository's copy first";
    let rows: &[(&str, &str, bool, bool, &str)] = &[
        ("as the window left it", "198.51.100.23", false, false, ""),
        ("changed by hand", "198.51.100.99", false, true, by_hand),
        // a21e attack 15: the advised fix in the cluster was undone by the owner's sync.
        (
            "changed by a Flux sync",
            "198.51.100.98",
            true,
            true,
            in_git,
        ),
    ];
    for (what, fip, flux, blocked, fix) in rows {
        b.edit(VPNGATEWAY, "tenant-acme", "acme", |o| {
            o["spec"]["endpoint"]["floatingIP"] = json!(fip);
            if *flux {
                o["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/name"] = json!("edge");
                o["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/namespace"] =
                    json!("flux-system");
            }
        })
        .await;
        let r = b.vpnmig(&["status"]).await;
        assert_eq!(r.code, 0, "{what}: {}", r.stderr);
        let flat = live::flat(&r.stdout);
        assert_eq!(
            flat.contains("fip-changed"),
            *blocked,
            "{what}: {}",
            r.stdout
        );
        assert_eq!(
            flat.contains(&format!("floating IP not as the window left it: vpngateway/acme -n tenant-acme has {fip}, the journal of the window pins 198.51.100.23")),
            *blocked,
            "{what}: {}",
            r.stdout
        );
        if *blocked {
            assert!(flat.contains(fix), "{what}: {}", r.stdout);
        }
        let r = b.vpnmig(&["status", "-o", "json"]).await;
        let doc: Value = serde_json::from_str(&r.stdout).unwrap();
        let row = doc["gateways"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == "acme")
            .cloned()
            .unwrap();
        assert_eq!(
            row["blockers"].to_string().contains("fip-changed"),
            *blocked,
            "{what}: {row}"
        );
    }
}

async fn status_says_a_vpnpeer_that_takes_its_key_from_another_secret(b: &Bed) {
    let r = b.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    // secret name, key, blocker expected
    let rows: &[(&str, &str, bool)] = &[
        ("acme-psk", "psk", false),
        ("acme-psk-from-git", "psk", true),
        ("acme-psk", "psk-old", true),
    ];
    for (secret, key, blocked) in rows {
        b.edit(VPNPEER, "tenant-acme", "acme", |o| {
            o["spec"]["ipsec"]["pskSecretRef"] = json!({"name": secret, "key": key})
        })
        .await;
        let r = b.vpnmig(&["status"]).await;
        let flat = live::flat(&r.stdout);
        assert_eq!(
            flat.contains("psk-moved"),
            *blocked,
            "{secret}/{key}: {}",
            r.stdout
        );
        assert_eq!(
            flat.contains(&format!("vpnpeer/acme -n tenant-acme takes its key from secret {secret} key {key} now, not from the window's secret acme-psk key psk")),
            *blocked,
            "{secret}/{key}: {}",
            r.stdout
        );
    }
}

async fn commands_name_the_archived_window_of_a_gateway_without_a_journal(b: &Bed) {
    // Window 1 (cut over, rolled back), then window 2 archives it and ends done.
    b.step(&["cutover", "acme", "--yes"], 0, &[]).await;
    b.step(&["rollback", "acme", "--yes"], 0, &[]).await;
    b.step(&["cutover", "acme", "--yes"], 0, &[]).await;
    assert!(
        b.get(CONFIGMAP, "tenant-acme", "vpnmig-acme.window-1")
            .await
            .is_some()
    );
    b.delete(VPNGATEWAY, "tenant-acme", "acme").await;
    b.delete(CONFIGMAP, "tenant-acme", "vpnmig-acme").await;
    eventually(60, "VPNGateway acme gone", || async {
        b.get(VPNGATEWAY, "tenant-acme", "acme").await.is_none()
    })
    .await;
    // Another machine: no bundle of it here.
    let state = b.cwd().join("state");
    assert!(
        state.is_dir(),
        "the bed's state directory: {}",
        state.display()
    );
    std::fs::remove_dir_all(&state).unwrap();
    let archived = "the cluster keeps the record of its window 1 (ConfigMap tenant-acme/vpnmig-acme.window-1): `vpnmig report acme -n tenant-acme --window 1` shows it";
    for args in [
        &["verify", "acme"][..],
        &["report", "acme"][..],
        &["rollback", "acme", "--yes"][..],
    ] {
        let r = b.vpnmig(args).await;
        assert_ne!(r.code, 0, "{args:?}: {}", r.stderr);
        assert!(r.says(archived), "{args:?}: {}", r.stderr);
    }
    b.step(&["report", "acme", "--window", "1"], 0, &[]).await;
}

async fn a_rollback_stopped_on_a_vpngateway_vpnmig_did_not_create_names_the_way_on(b: &Bed) {
    let r = b.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    // Re-created by hand: another uid, written by kubectl, not in the journal.
    let gw = b.get(VPNGATEWAY, "tenant-acme", "acme").await.unwrap();
    b.delete_until_gone(VPNGATEWAY, "tenant-acme", "acme", 30)
        .await;
    b.put(
        VPNGATEWAY,
        "tenant-acme",
        json!({"metadata": {"name": "acme", "namespace": "tenant-acme",
            "annotations": gw["metadata"]["annotations"].clone()},
            "spec": gw["spec"].clone()}),
    )
    .await;
    let way = "vpnmig deletes no VPNGateway it did not create for the window; to go back, delete vpngateway/acme -n tenant-acme yourself (`kubectl delete vpngateway acme -n tenant-acme`; where a GitOps owner syncs it, revert the merge in the repository instead: its prune deletes it), then `vpnmig rollback acme -n tenant-acme";
    for _ in 0..2 {
        let r = b
            .step(
                &["rollback", "acme", "--yes"],
                7,
                &["was not created by vpnmig for it", way],
            )
            .await;
        assert!(r.says("stopped at phase rolling-back"), "{}", r.stderr);
    }
    let st = b.vpnmig(&["status"]).await;
    let text = live::flat(&st.stdout);
    assert!(
        text.contains("window under way: tenant-acme/acme at journal phase rolling-back: a rollback has not finished: it stopped on vpngateway/acme -n tenant-acme, which vpnmig did not create for the window;"),
        "{text}"
    );
    assert!(text.contains(way), "{text}");
    b.step(
        &["cutover", "acme", "--yes"],
        7,
        &["a cutover now would fight it", way],
    )
    .await;
    // Followed: deleted by hand, the rollback resumes and ends.
    b.delete_until_gone(VPNGATEWAY, "tenant-acme", "acme", 30)
        .await;
    b.step(&["rollback", "acme", "--yes"], 0, &[]).await;
    assert_eq!(
        b.phase("tenant-acme", "acme").await.as_deref(),
        Some("rolled-back")
    );
}
