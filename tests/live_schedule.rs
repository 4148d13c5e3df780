//! `vpnmig schedule` on the real control plane (issue 25 items 2 and 3): the manifests pass
//! server-side apply; the generated ServiceAccount runs a whole window with in-cluster
//! configuration, exactly as a pod sees it (KUBERNETES_SERVICE_HOST/PORT, a TokenRequest
//! token, the CA and the namespace in /var/run/secrets/kubernetes.io/serviceaccount/, in a
//! private mount namespace), and ends done, which `status -A` and `report` show; and with
//! any one verb taken from its Role, the preflight refuses before any change, naming the
//! verb. Real-only: the emulator has no TokenRequest and no service accounts. Needs root
//! (unshare --mount); elsewhere it prints DID NOT RUN (in-cluster run) and why.

mod live;

use std::path::Path;
use std::process::Command;

use live::ACME;
use live::Run;
use live::bed::{After, Backend, Bed, CONFIGMAP, IPSECGATEWAY, KUSTOMIZATION, Row, Scenario};
use serde_json::{Value, json};
use vpnmig_sandbox::SettingsFile;

const IMAGE: &str = "registry.example/vpnmig:0.1.0";

fn acme() -> Scenario {
    let mut s = SettingsFile::default();
    s.operator.service_cidr_pool = "10.250.3.0/24".into();
    Scenario::new(ACME, s)
}

fn kubectl() -> std::path::PathBuf {
    vpnmig_sandbox::controlplane::built()
        .expect("the real control plane is built")
        .join("kubectl")
}

fn kubectl_run(kubeconfig: &Path, args: &[&str]) -> String {
    let out = Command::new(kubectl())
        .env("KUBECONFIG", kubeconfig)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Why an in-cluster run cannot be made here, if it cannot (a private mount namespace
/// needs root).
fn cannot_run_in_cluster() -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("not root: a private mount namespace (unshare --mount) is needed to place the service-account files where a pod has them".into());
    }
    if Command::new("unshare").arg("--version").output().is_err() {
        return Some("no unshare(1)".into());
    }
    None
}

/// The shell that runs `vpnmig ARGS` as a pod of `vpnmig-window` in NAMESPACE sees the
/// cluster: a tmpfs on /run (/var/run is /run) holding the token (a TokenRequest, one hour),
/// ca.crt and namespace files; an environment of KUBERNETES_SERVICE_HOST/PORT only (no
/// KUBECONFIG, no HOME kubeconfig).
const IN_CLUSTER: &str = r#"
set -eu
mount -t tmpfs tmpfs /run
d=/run/secrets/kubernetes.io/serviceaccount
mkdir -p $d
"$KUBECTL" create token vpnmig-window -n "$NS" --duration 1h > $d/token
"$KUBECTL" config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d > $d/ca.crt
printf %s "$NS" > $d/namespace
exec env -i PATH=/usr/bin:/bin HOME=/nonexistent NO_COLOR=1 KUBERNETES_SERVICE_HOST="$HOST" KUBERNETES_SERVICE_PORT="$PORT" "$VPNMIG" "$@"
"#;

fn in_cluster(b: &Bed, ns: &str, args: &[&str]) -> Run {
    let server = kubectl_run(
        &b.kubeconfig,
        &[
            "config",
            "view",
            "--minify",
            "-o",
            "jsonpath={.clusters[0].cluster.server}",
        ],
    );
    let hostport = server.trim().trim_start_matches("https://").to_string();
    let (host, port) = hostport.rsplit_once(':').unwrap();
    let out = Command::new("timeout")
        .args([
            "120",
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            IN_CLUSTER,
            "in-cluster",
        ])
        .args(args)
        .env("KUBECONFIG", &b.kubeconfig)
        .env("KUBECTL", kubectl())
        .env("NS", ns)
        .env("HOST", host)
        .env("PORT", port)
        .env("VPNMIG", env!("CARGO_BIN_EXE_vpnmig"))
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: String::from_utf8_lossy(&out.stderr).into(),
    }
}

/// A window an hour from now, in Europe/Berlin.
fn window_ahead() -> String {
    let start = jiff::Zoned::now()
        .with_time_zone(jiff::tz::TimeZone::get("Europe/Berlin").unwrap())
        .checked_add(jiff::SignedDuration::from_hours(1))
        .unwrap();
    format!(
        "{}[Europe/Berlin]/PT2H",
        start.strftime("%Y-%m-%dT%H:%M:00%:z")
    )
}

async fn schedule_and_apply(b: &Bed) -> Value {
    let w = window_ahead();
    b.edit(IPSECGATEWAY, "tenant-acme", "acme", |g| {
        g["metadata"]["annotations"]["vpnmig.bnerd.net/window"] = json!(w);
    })
    .await;
    b.step(
        &[
            "schedule",
            "-n",
            "tenant-acme",
            "--image",
            IMAGE,
            "--rollback-on-failure",
            "--apply",
        ],
        0,
        &[
            "1 of 1 gateways have a window ahead",
            "applied 8 objects (field manager vpnmig)",
        ],
    )
    .await;
    let cj: Value = serde_json::from_str(&kubectl_run(
        &b.kubeconfig,
        &[
            "get",
            "cronjob",
            "vpnmig-window-acme",
            "-n",
            "tenant-acme",
            "-o",
            "json",
        ],
    ))
    .unwrap();
    assert_eq!(cj["spec"]["timeZone"], "Europe/Berlin");
    let args: Vec<&str> =
        cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
    assert_eq!(
        &args[..5],
        ["cutover", "acme", "-n", "tenant-acme", "--window-end"]
    );
    assert_eq!(&args[6..], ["--yes", "-o", "json", "--rollback-on-failure"]);
    let managers = kubectl_run(
        &b.kubeconfig,
        &[
            "get",
            "role",
            "vpnmig-window",
            "-n",
            "tenant-acme",
            "-o",
            "jsonpath={.metadata.managedFields[*].manager}",
        ],
    );
    assert_eq!(managers.trim(), "vpnmig");
    cj
}

async fn window_by_the_generated_account(b: &Bed) {
    if let Some(why) = cannot_run_in_cluster() {
        eprintln!("DID NOT RUN (in-cluster run): {why}");
        return;
    }
    let cj = schedule_and_apply(b).await;
    let args: Vec<String> = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
        ["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = in_cluster(b, "tenant-acme", &args);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.says("context in-cluster"), "{}", r.stderr);
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["phase"], "done", "{doc}");
    assert_eq!(
        b.phase("tenant-acme", "acme").await.as_deref(),
        Some("done")
    );
    // Run again (the CronJob's next firing): done, nothing to do, exit 0.
    let again = in_cluster(b, "tenant-acme", &args);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.says("nothing to do"), "{}", again.stderr);
    // What the job did is the journal and the change record, as a terminal's window.
    let s = b.step(&["status", "-A"], 0, &[]).await;
    let row = s
        .stdout
        .lines()
        .find(|l| l.contains(" acme "))
        .unwrap()
        .to_string();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        &cells[..4],
        ["tenant-acme", "acme", "VPNGateway", "yes"],
        "{row}"
    );
    let rep = b
        .step(&["report", "acme", "-n", "tenant-acme", "-o", "md"], 0, &[])
        .await;
    assert!(
        rep.stdout
            .contains("# Change record: tenant-acme/acme: done"),
        "{}",
        rep.stdout
    );
    // The CronJob of a window done is pruned.
    let p = b
        .step(&["schedule", "-n", "tenant-acme", "--prune"], 0, &[])
        .await;
    assert_eq!(
        p.stdout,
        "cronjob/vpnmig-window-acme -n tenant-acme deleted: window done\n"
    );
}

async fn each_verb_taken_away_is_refused_before_any_change(b: &Bed) {
    if let Some(why) = cannot_run_in_cluster() {
        eprintln!("DID NOT RUN (in-cluster run): {why}");
        return;
    }
    let cj = schedule_and_apply(b).await;
    let end = cj["metadata"]["annotations"]["vpnmig.bnerd.net/window-end"]
        .as_str()
        .unwrap()
        .to_string();
    let role: Value = serde_json::from_str(&kubectl_run(
        &b.kubeconfig,
        &[
            "get",
            "role",
            "vpnmig-window",
            "-n",
            "tenant-acme",
            "-o",
            "json",
        ],
    ))
    .unwrap();
    let rules = role["rules"].as_array().unwrap().clone();
    let before = b.get(IPSECGATEWAY, "tenant-acme", "acme").await.unwrap();
    let cluster_rules: Value = serde_json::from_str::<Value>(&kubectl_run(
        &b.kubeconfig,
        &["get", "clusterrole", "vpnmig-window-read", "-o", "json"],
    ))
    .unwrap()["rules"]
        .clone();
    let mut rows = 0;
    let mut refused_by_server: Vec<String> = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        for verb in rule["verbs"].as_array().unwrap() {
            let verb = verb.as_str().unwrap();
            let resource = rule["resources"][0].as_str().unwrap();
            let mut less = rules.clone();
            let verbs: Vec<Value> = rule["verbs"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|v| *v != verb)
                .cloned()
                .collect();
            if verbs.is_empty() {
                less.remove(i);
            } else {
                less[i]["verbs"] = json!(verbs);
            }
            let patch = json!([{"op": "replace", "path": "/rules", "value": less}]).to_string();
            kubectl_run(
                &b.kubeconfig,
                &[
                    "patch",
                    "role",
                    "vpnmig-window",
                    "-n",
                    "tenant-acme",
                    "--type=json",
                    "-p",
                    &patch,
                ],
            );
            // The account's grant is its Role and the ClusterRole of cluster-wide reads:
            // `list` of the two gateway kinds is in both, so it is taken from both.
            let cluster_wide =
                verb == "list" && matches!(resource, "ipsecgateways" | "vpngateways");
            if cluster_wide {
                cluster_role(b, |rules| {
                    rules.retain(|r| r["resources"][0] != resource);
                });
            }
            let r = in_cluster(
                b,
                "tenant-acme",
                &[
                    "cutover",
                    "acme",
                    "-n",
                    "tenant-acme",
                    "--window-end",
                    &end,
                    "--yes",
                    "-o",
                    "json",
                ],
            );
            // The preflight's SelfSubjectAccessReviews name it (exit 7); a read the
            // preflight needs first (the gateway's own `get`) is refused by the API
            // server, named as it names it (exit 1). Either way before any change.
            let by_preflight = format!("you may not {verb} {resource} in namespace tenant-acme");
            let (kind, sub) = resource.split_once('/').unwrap_or((resource, ""));
            let by_server = if sub.is_empty() {
                format!("cannot {verb} resource \"{kind}\"")
            } else {
                format!("cannot {verb} resource \"{kind}/{sub}\"")
            };
            let how = if r.code == 7 && r.says(&by_preflight) && r.says("nothing was changed") {
                "the preflight"
            } else if r.code == 1 && r.says(&by_server) {
                refused_by_server.push(format!("{verb} {resource}"));
                "the API server"
            } else {
                panic!("without {verb} {resource}: exit {}: {}", r.code, r.stderr)
            };
            if cluster_wide {
                kubectl_run(
                    &b.kubeconfig,
                    &[
                        "patch",
                        "clusterrole",
                        "vpnmig-window-read",
                        "--type=json",
                        "-p",
                        &json!([{"op": "replace", "path": "/rules", "value": cluster_rules}])
                            .to_string(),
                    ],
                );
            }
            // Nothing changed: the gateway at its version, no journal.
            let now = b.get(IPSECGATEWAY, "tenant-acme", "acme").await.unwrap();
            assert_eq!(
                now["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"],
                "without {verb} {resource}"
            );
            assert!(
                b.get(CONFIGMAP, "tenant-acme", "vpnmig-acme")
                    .await
                    .is_none()
            );
            eprintln!(
                "ROW without {verb} {resource}: refused by {how} (exit {}), nothing changed",
                r.code
            );
            rows += 1;
        }
    }
    // One row per verb the preflight checks.
    assert_eq!(rows, vpnmig::core::live::NEEDS.len());
    assert_eq!(refused_by_server, ["get ipsecgateways"]);
    let patch = json!([{"op": "replace", "path": "/rules", "value": rules}]).to_string();
    kubectl_run(
        &b.kubeconfig,
        &[
            "patch",
            "role",
            "vpnmig-window",
            "-n",
            "tenant-acme",
            "--type=json",
            "-p",
            &patch,
        ],
    );
}

/// Replace the ClusterRole vpnmig-window-read's rules with `f` of them.
fn cluster_role(b: &Bed, f: impl Fn(&mut Vec<Value>)) {
    let cr: Value = serde_json::from_str(&kubectl_run(
        &b.kubeconfig,
        &["get", "clusterrole", "vpnmig-window-read", "-o", "json"],
    ))
    .unwrap();
    let mut rules = cr["rules"].as_array().unwrap().clone();
    f(&mut rules);
    let patch = json!([{"op": "replace", "path": "/rules", "value": rules}]).to_string();
    kubectl_run(
        &b.kubeconfig,
        &[
            "patch",
            "clusterrole",
            "vpnmig-window-read",
            "--type=json",
            "-p",
            &patch,
        ],
    );
}

/// The NEXT-WINDOW cell of acme's row in `status -A`, and its line under `plan -A`.
async fn next_window_cells(b: &Bed) -> (String, String) {
    let s = b.step(&["status", "-A"], 0, &[]).await;
    let header = s.stdout.lines().next().unwrap();
    let at = header.find("NEXT-WINDOW").expect("a NEXT-WINDOW column");
    let row = s.stdout.lines().find(|l| l.contains(" acme ")).unwrap();
    let p = b.step(&["plan", "-A"], 0, &[]).await;
    let line = p
        .stdout
        .split("next windows:\n")
        .nth(1)
        .expect("plan -A names the next windows")
        .trim_end()
        .to_string();
    (row[at..].to_string(), line)
}

async fn status_and_plan_name_the_next_window(b: &Bed) {
    b.edit(IPSECGATEWAY, "tenant-acme", "acme", |g| {
        g["metadata"]["annotations"]["vpnmig.bnerd.net/window"] = json!("2026-12-08T02:00/PT1H");
    })
    .await;
    let why = "unreadable (annotation vpnmig.bnerd.net/window): `2026-12-08T02:00` has no offset and no time zone: write one (…T02:00:00+01:00) or give timeZone";
    assert_eq!(
        next_window_cells(b).await,
        (why.to_string(), format!("  tenant-acme/acme: {why}"))
    );
    b.edit(IPSECGATEWAY, "tenant-acme", "acme", |g| {
        g["metadata"]["annotations"]["vpnmig.bnerd.net/window"] =
            json!("2020-12-08T02:00:00+01:00/PT1H");
    })
    .await;
    let past = "past: 2020-12-08 02:00 → 03:00 +01:00";
    assert_eq!(
        next_window_cells(b).await,
        (past.to_string(), format!("  tenant-acme/acme: {past}"))
    );
    let w = window_ahead();
    b.edit(IPSECGATEWAY, "tenant-acme", "acme", |g| {
        g["metadata"]["annotations"]["vpnmig.bnerd.net/window"] = json!(w);
    })
    .await;
    let (cell, line) = next_window_cells(b).await;
    assert!(
        cell.ends_with(" (Europe/Berlin)") && !cell.contains("under way"),
        "{cell}"
    );
    assert_eq!(line, format!("  tenant-acme/acme: {cell}"));
    let j = b.step(&["status", "-A", "-o", "json"], 0, &[]).await;
    let doc: Value = serde_json::from_str(&j.stdout).unwrap();
    let next = &doc["gateways"][0]["nextWindow"];
    assert_eq!(next["state"], "upcoming");
    assert_eq!(next["timeZone"], "Europe/Berlin");
    assert_eq!(next["sources"], json!([{"kind": "annotation"}]));
}

const FLUX: &str = include_str!("../fixtures/clusters/acme-flux.yaml");

/// acme kept in Git and reconciled by the sandbox's Flux (self-heal after 200 ms).
fn acme_flux() -> Scenario {
    let mut s = SettingsFile::default();
    s.operator.service_cidr_pool = "10.250.3.0/24".into();
    s.gitops.self_heal_delay_ms = 200;
    Scenario::new(FLUX, s)
}

/// Whether Flux has applied acme (its field manager is on the IPsecGateway).
async fn flux_adopted(b: &Bed) {
    live::bed::eventually(
        20,
        "the sandbox's Flux applies ipsecgateway/acme",
        || async {
            b.get(IPSECGATEWAY, "tenant-acme", "acme")
                .await
                .is_some_and(|g| {
                    g["metadata"]["managedFields"]
                        .to_string()
                        .contains("kustomize-controller")
                })
        },
    )
    .await;
}

async fn kustomization(b: &Bed) -> Value {
    b.get(KUSTOMIZATION, "flux-system", "acme")
        .await
        .expect("kustomization/acme -n flux-system")
}

/// The rules of `kind` `name` (in `ns`, `""` for a ClusterRole).
fn rules(b: &Bed, kind: &str, name: &str, ns: &str) -> Vec<Value> {
    let mut args = vec!["get", kind, name, "-o", "json"];
    if !ns.is_empty() {
        args.extend(["-n", ns]);
    }
    serde_json::from_str::<Value>(&kubectl_run(&b.kubeconfig, &args)).unwrap()["rules"]
        .as_array()
        .unwrap()
        .clone()
}

/// Replace the rules of `kind` `name` (in `ns`, `""` for a ClusterRole).
fn set_rules(b: &Bed, kind: &str, name: &str, ns: &str, rules: &[Value]) {
    let patch = json!([{"op": "replace", "path": "/rules", "value": rules}]).to_string();
    let mut args = vec!["patch", kind, name, "--type=json", "-p", &patch];
    if !ns.is_empty() {
        args.extend(["-n", ns]);
    }
    kubectl_run(&b.kubeconfig, &args);
}

/// Issue 25 item 3 with `--gitops pause`: the window on a gateway a Flux Kustomization
/// syncs suspends the Kustomization (in flux-system), reads the other windows' journals
/// and locks in every namespace; the generated account holds exactly that beside its
/// Role, and each of those verbs taken away is refused by the preflight before any change.
async fn a_gitops_pause_window_by_the_generated_account(b: &Bed) {
    if let Some(why) = cannot_run_in_cluster() {
        eprintln!("DID NOT RUN (in-cluster run): {why}");
        return;
    }
    flux_adopted(b).await;
    let w = window_ahead();
    b.edit(IPSECGATEWAY, "tenant-acme", "acme", |g| {
        g["metadata"]["annotations"]["vpnmig.bnerd.net/window"] = json!(w);
    })
    .await;
    b.step(
        &[
            "schedule",
            "-n",
            "tenant-acme",
            "--image",
            IMAGE,
            "--gitops",
            "pause",
            "--apply",
        ],
        0,
        // The 8 objects of a window without --gitops, the ClusterRole of the reads in
        // every namespace (other windows' journals and locks, the owners) and its binding, the Role on the Kustomization and its binding.
        &["applied 12 objects (field manager vpnmig)"],
    )
    .await;
    let role = "vpnmig-window-gitops:tenant-acme";
    let cluster_rules = rules(b, "clusterrole", role, "");
    assert_eq!(
        cluster_rules,
        [
            json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}),
            // The owners whose own status may name the gateway (a21l A08).
            json!({"apiGroups": ["argoproj.io"], "resources": ["applications"], "verbs": ["list"]}),
            json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["list"]}),
            json!({"apiGroups": ["kustomize.toolkit.fluxcd.io"], "resources": ["kustomizations"], "verbs": ["list"]}),
        ]
    );
    let owner_rules = rules(b, "role", role, "flux-system");
    assert_eq!(
        owner_rules,
        [
            json!({"apiGroups": ["kustomize.toolkit.fluxcd.io"], "resources": ["kustomizations"], "verbs": ["get"], "resourceNames": ["acme"]}),
            json!({"apiGroups": ["kustomize.toolkit.fluxcd.io"], "resources": ["kustomizations"], "verbs": ["patch"], "resourceNames": ["acme"]}),
        ]
    );
    let cj: Value = serde_json::from_str(&kubectl_run(
        &b.kubeconfig,
        &[
            "get",
            "cronjob",
            "vpnmig-window-acme",
            "-n",
            "tenant-acme",
            "-o",
            "json",
        ],
    ))
    .unwrap();
    let args: Vec<String> = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
        ["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    assert_eq!(args.last().unwrap(), "--gitops=pause");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    // Each verb the window gets for --gitops, taken away: refused by the preflight,
    // naming it, before any change (the gateway at its version, no journal, the
    // Kustomization still syncing).
    let before = b.get(IPSECGATEWAY, "tenant-acme", "acme").await.unwrap();
    let synced = kustomization(b).await;
    assert_ne!(synced["spec"]["suspend"], true);
    let mut rows = 0;
    for (kind, ns, all) in [
        ("clusterrole", "", &cluster_rules),
        ("role", "flux-system", &owner_rules),
    ] {
        for (i, rule) in all.iter().enumerate() {
            let mut less = all.clone();
            less.remove(i);
            set_rules(b, kind, role, ns, &less);
            let verb = rule["verbs"][0].as_str().unwrap();
            let resource = rule["resources"][0].as_str().unwrap();
            let named = if ns.is_empty() {
                format!("you may not {verb} {resource} in all namespaces")
            } else {
                format!("you may not {verb} {resource} named acme in namespace {ns}")
            };
            let r = in_cluster(b, "tenant-acme", &args);
            assert!(
                r.code == 7 && r.says(&named) && r.says("nothing was changed"),
                "without {verb} {resource}: exit {}: {}",
                r.code,
                r.stderr
            );
            set_rules(b, kind, role, ns, all);
            let now = b.get(IPSECGATEWAY, "tenant-acme", "acme").await.unwrap();
            assert_eq!(
                now["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"],
                "without {verb} {resource}"
            );
            assert!(
                b.get(CONFIGMAP, "tenant-acme", "vpnmig-acme")
                    .await
                    .is_none()
            );
            assert_eq!(kustomization(b).await["spec"], synced["spec"]);
            eprintln!("ROW without {verb} {resource}: refused by the preflight, nothing changed");
            rows += 1;
        }
    }
    assert_eq!(rows, 6);

    // With every verb: the window runs to done with the account's in-cluster
    // configuration, the Kustomization suspended for it and recorded.
    let from = b.proxy_log().unwrap().len();
    let r = in_cluster(b, "tenant-acme", &args);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.says("suspended kustomization/acme -n flux-system"),
        "{}",
        r.stderr
    );
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["phase"], "done", "{doc}");
    let j = b.journal("tenant-acme", "acme").await.unwrap();
    assert_eq!(j["phase"], "done");
    assert_eq!(j["gitops"][0]["paused"], true, "{j}");
    assert_eq!(kustomization(b).await["spec"]["suspend"], true);
    // Nothing the account was refused on the way (a refusal a window tolerates would
    // hide a missing grant behind a fallback).
    let refused: Vec<String> = b.proxy_log().unwrap()[from..]
        .iter()
        .filter(|l| l.status == 403)
        .map(|l| format!("{} {} {:?}", l.verb, l.resource, l.namespace))
        .collect();
    assert!(refused.is_empty(), "refused: {refused:?}");
}

rows! {
    /// A `--gitops pause` window on a gateway a Flux Kustomization syncs, run by the
    /// generated account in-cluster, ends done; each verb `--gitops` adds, taken away, is
    /// refused by the preflight before any change, naming it.
    a_gitops_pause_window_by_the_generated_account_ends_done: Row {
        scenario: acme_flux,
        only: Some((Backend::Real, "TokenRequest, service accounts and RBAC are the real API server's")),
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(a_gitops_pause_window_by_the_generated_account(b)),
    },
    /// `status -A` and `plan -A` name each gateway's next window, or why it has none.
    status_and_plan_name_each_gateways_next_window: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(status_and_plan_name_the_next_window(b)),
    },
    /// The generated account runs a whole window with in-cluster configuration.
    a_window_run_by_the_generated_account_in_cluster_ends_done: Row {
        scenario: acme,
        only: Some((Backend::Real, "TokenRequest, service accounts and RBAC are the real API server's")),
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(window_by_the_generated_account(b)),
    },
    /// A Role without one of its verbs: the preflight refuses, naming it, before any change.
    each_verb_taken_from_the_role_is_named_and_nothing_changes: Row {
        scenario: acme,
        only: Some((Backend::Real, "TokenRequest, service accounts and RBAC are the real API server's")),
        after: After::acme("IPsecGateway"),
        steps: |b| Box::pin(each_verb_taken_away_is_refused_before_any_change(b)),
    },
}
