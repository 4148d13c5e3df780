//! kubectl's habits (issue 13 item 2), each against the sandbox: `--context`, `--cluster`,
//! `--user`, `--kubeconfig`, `-n`, `--as`/`--as-group` (checked by the sandbox's RBAC,
//! which honours `Impersonate-User`/`Impersonate-Group` as kube-apiserver does),
//! `--request-timeout`, `KUBECONFIG` lists, `NO_COLOR`; `status -o wide|name|yaml|json`
//! and `--no-headers`; completion of gateway names and namespaces (issue 13 item 1). The
//! live ones on the emulator and the real control plane (tests/live/bed.rs rows, one run
//! per backend).

mod live;

use std::path::Path;
use std::time::{Duration, Instant};

use live::bed::{Backend, Bed, CONFIGMAP, Row, Scenario, VPNGATEWAY};
use live::{ACME, Run};
use serde_json::{Value, json};
use vpnmig_sandbox::SettingsFile;
use vpnmig_sandbox::api::auth::{Group, Rule, User};

/// Run vpnmig with exactly these environment variables (besides PATH and HOME), from a
/// temporary directory, on a blocking thread, within 60 s.
async fn run_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || {
            let dir = tempfile::tempdir().unwrap();
            let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_vpnmig"));
            cmd.current_dir(dir.path())
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("HOME", dir.path())
                .env("VPNMIG_STATE_DIR", dir.path().join("state"))
                .args(&args);
            for (k, v) in env {
                cmd.env(k, v);
            }
            cmd.output().unwrap()
        }),
    )
    .await
    .expect("vpnmig finishes within 60 s")
    .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

fn kc(b: &Bed) -> &str {
    b.kubeconfig.to_str().unwrap()
}

/// The sandbox's kubeconfig as a value, to take apart or extend.
fn kubeconfig(b: &Bed) -> Value {
    serde_saphyr::from_str(&std::fs::read_to_string(&b.kubeconfig).unwrap()).unwrap()
}

fn write(path: &Path, v: &Value) -> String {
    std::fs::write(path, serde_saphyr::to_string(v).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

fn settings() -> SettingsFile {
    SettingsFile {
        users: vec![
            // May read everything, impersonate no one.
            User::with_rules("viewer", vec![Rule::new(&["get", "list"], &["*"])]),
            // May list IPsecGateways only.
            User::with_rules(
                "lister",
                vec![Rule::new(&["get", "list"], &["ipsecgateways"])],
            ),
        ],
        groups: vec![Group {
            name: "auditors".into(),
            rules: vec![Rule::new(&["get", "list"], &["*"])],
        }],
        ..Default::default()
    }
}

fn acme() -> Scenario {
    Scenario::new(ACME, SettingsFile::default())
}

/// acme with the users viewer and lister and the group auditors ([`settings`]).
fn acme_with_users() -> Scenario {
    Scenario::new(ACME, settings())
}

/// acme, in a serviceCIDR pool that hands its /24 back to a rollback's IPsecGateway.
fn acme_in_its_pool() -> Scenario {
    Scenario::new(ACME, live::pool("10.250.3.0/24"))
}

/// acme with a user who may read the gateways and namespaces, no ConfigMap (no journal).
fn acme_and_a_gateways_only_user() -> Scenario {
    Scenario::new(
        ACME,
        SettingsFile {
            users: vec![User::with_rules(
                "gateways-only",
                vec![Rule::new(
                    &["get", "list"],
                    &["ipsecgateways", "vpngateways", "vpnpeers", "namespaces"],
                )],
            )],
            ..Default::default()
        },
    )
}

crate::rows! {
    impersonation_reaches_the_api_server: Row {
        scenario: acme_with_users,
        only: None,
        after: None,
        steps: |b| Box::pin(impersonation_reaches_the_api_server(b)),
    },
    context_cluster_user_and_kubeconfig_select_like_kubectl: Row {
        scenario: acme_with_users,
        only: None,
        after: None,
        steps: |b| Box::pin(context_cluster_user_and_kubeconfig_select_like_kubectl(b)),
    },
    /// KUBECONFIG lists several files (colon-separated) that are merged, as kubectl does:
    /// here the clusters and contexts are in one file and the users in another.
    kubeconfig_lists_are_merged: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(kubeconfig_lists_are_merged(b)),
    },
    /// --request-timeout bounds each request: a server that accepts and never answers is
    /// given up on, said so, in seconds rather than the default 30 s per attempt.
    request_timeout_bounds_a_silent_server: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(request_timeout_bounds_a_silent_server(b)),
    },
    status_prints_kubectls_formats_and_the_windows_under_way: Row {
        scenario: acme_in_its_pool,
        only: None,
        after: None,
        steps: |b| Box::pin(status_prints_kubectls_formats_and_the_windows_under_way(b)),
    },
    /// Completion asks the cluster of the line being completed for gateway names and
    /// namespaces; a silent cluster costs at most the 2 s budget and gives no candidates.
    completion_offers_live_names_within_a_budget: Row {
        scenario: acme_with_users,
        only: None,
        after: None,
        steps: |b| Box::pin(completion_offers_live_names_within_a_budget(b)),
    },
    /// Journals that cannot be listed are "unknown" in the JSON, never an empty "none".
    status_json_says_when_the_windows_are_unknown: Row {
        scenario: acme_and_a_gateways_only_user,
        only: None,
        after: None,
        steps: |b| Box::pin(status_json_says_when_the_windows_are_unknown(b)),
    },
    /// `status --watch` prints the table, then each gateway again when it changes (a watch,
    /// so the change shows at once), and ends at --timeout.
    status_watch_prints_changes_until_its_timeout: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(status_watch_prints_changes_until_its_timeout(b)),
    },
}

/// The five live commands take every cluster flag, `-o`, and `status` (the one that
/// lists) `-A`: read from the clap tree, so a new command without them fails here.
#[test]
fn every_live_command_takes_kubectls_flags() {
    let mut cmd = vpnmig::cli::command(false);
    cmd.build();
    for name in ["status", "plan", "cutover", "verify", "rollback"] {
        let sub = cmd.find_subcommand(name).unwrap();
        let longs: Vec<&str> = sub.get_arguments().filter_map(|a| a.get_long()).collect();
        for flag in [
            "kubeconfig",
            "context",
            "cluster",
            "user",
            "namespace",
            "as",
            "as-group",
            "request-timeout",
            "output",
        ] {
            assert!(longs.contains(&flag), "{name} lacks --{flag}: {longs:?}");
        }
        let shorts: Vec<char> = sub.get_arguments().filter_map(|a| a.get_short()).collect();
        assert!(shorts.contains(&'n') && shorts.contains(&'o'), "{name}");
    }
    let status = cmd.find_subcommand("status").unwrap();
    assert!(
        status
            .get_arguments()
            .any(|a| a.get_short() == Some('A') && a.get_long() == Some("all-namespaces"))
    );
}

async fn impersonation_reaches_the_api_server(b: &Bed) {
    let env = [("KUBECONFIG", kc(b))];

    // As viewer: viewer's rights, which suffice to list.
    let r = run_env(&["status", "--as", "viewer"], &env).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("acme"), "{}", r.stdout);

    // As a user with no rules: the server refuses it by that name (so the header went).
    let r = run_env(&["status", "--as", "nobody"], &env).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.says("User \"nobody\" cannot list resource"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.starts_with("context vpnmig-sandbox"),
        "{}",
        r.stderr
    );

    // The same user in a group that may read: the group's rules apply.
    let r = run_env(
        &[
            "-n",
            "tenant-acme",
            "status",
            "--as",
            "nobody",
            "--as-group",
            "auditors",
        ],
        &env,
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);

    // A context whose user may not impersonate is refused by the server.
    let r = run_env(
        &[
            "status",
            "--context",
            "vpnmig-sandbox-viewer",
            "--as",
            "sandbox-admin",
        ],
        &env,
    )
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        // kube-apiserver v1.36 and later name the constrained impersonation check
        // (KEP-5284) of the request itself; the emulator says the same (a fidelity row).
        r.says("User \"viewer\" cannot impersonate-on:user-info:"),
        "{}",
        r.stderr
    );

    // Every live command sends it: as nobody, each is refused by the server by that name.
    for args in [
        &["plan", "acme"][..],
        &["verify", "acme"],
        &["cutover", "acme", "--dry-run"],
        &["rollback", "acme", "--dry-run"],
    ] {
        let mut args = args.to_vec();
        args.extend(["--as", "nobody"]);
        let r = run_env(&args, &env).await;
        assert_ne!(r.code, 0, "{args:?}: {}", r.stdout);
        assert!(r.says("User \"nobody\" cannot"), "{args:?}: {}", r.stderr);
    }

    // --as-group needs --as, as in kubectl.
    let r = run_env(&["status", "--as-group", "auditors"], &env).await;
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.says("--as <USER>"), "{}", r.stderr);
}

async fn context_cluster_user_and_kubeconfig_select_like_kubectl(b: &Bed) {
    let dir = tempfile::tempdir().unwrap();

    // --context: that context's user.
    let r = run_env(
        &["status", "--context", "vpnmig-sandbox-lister"],
        &[("KUBECONFIG", kc(b))],
    )
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("context vpnmig-sandbox-lister, server"),
        "{}",
        r.stderr
    );
    assert!(r.says("User \"lister\""), "{}", r.stderr);

    // --user: another user of the kubeconfig in the current context.
    let r = run_env(&["status", "--user", "lister"], &[("KUBECONFIG", kc(b))]).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.says(
            "User \"lister\" cannot list resource \"vpngateways\" in API group \"vpn.bnerd.net\""
        ),
        "{}",
        r.stderr
    );

    // --cluster: another cluster of the kubeconfig (here, one that is not there).
    let gone = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = gone.local_addr().unwrap().port();
    drop(gone);
    let mut v = kubeconfig(b);
    let mut dead = v["clusters"][0].clone();
    dead["name"] = json!("dead");
    dead["cluster"]["server"] = json!(format!("https://127.0.0.1:{port}"));
    v["clusters"].as_array_mut().unwrap().push(dead);
    let two = write(&dir.path().join("two-clusters"), &v);
    let r = run_env(&["--kubeconfig", &two, "status", "--cluster", "dead"], &[]).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.says(&format!("connection refused to https://127.0.0.1:{port}")),
        "{}",
        r.stderr
    );
    let r = run_env(&["--kubeconfig", &two, "status"], &[]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);

    // --kubeconfig wins over KUBECONFIG, and -n over the context's namespace.
    let r = run_env(
        &["status", "--kubeconfig", kc(b), "-n", "tenant-other"],
        &[("KUBECONFIG", "/nonexistent")],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.says("namespace tenant-other"), "{}", r.stderr);

    // A context, cluster or user the kubeconfig does not have is named with the ones it
    // has (newcomer walkthrough: "failed to load current context: prod-fra").
    for (flag, kind) in [
        ("--context", "context"),
        ("--cluster", "cluster"),
        ("--user", "user"),
    ] {
        let r = run_env(&["status", flag, "prod-fra"], &[("KUBECONFIG", kc(b))]).await;
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(
            r.error().unwrap().starts_with(&format!(
                "cannot load the kubeconfig: {flag} prod-fra: no such {kind} in the kubeconfig (it has: "
            )),
            "{}",
            r.stderr
        );
        assert!(
            r.hint().unwrap().contains("kubectl config get-contexts"),
            "{}",
            r.stderr
        );
    }
    let r = run_env(
        &["status", "--context", "prod-fra"],
        &[("KUBECONFIG", kc(b))],
    )
    .await;
    assert!(
        r.says("(it has: vpnmig-sandbox, vpnmig-sandbox-viewer, vpnmig-sandbox-lister)"),
        "{}",
        r.stderr
    );
}

async fn kubeconfig_lists_are_merged(b: &Bed) {
    let dir = tempfile::tempdir().unwrap();
    let v = kubeconfig(b);
    let mut first = v.clone();
    first.as_object_mut().unwrap().remove("users");
    let second = json!({"apiVersion": "v1", "kind": "Config", "users": v["users"]});
    let a = write(&dir.path().join("a"), &first);
    let second = write(&dir.path().join("b"), &second);

    let list = format!("{a}:{second}");
    let r = run_env(&["status", "-o", "name"], &[("KUBECONFIG", &list)]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "ipsecgateway.ipsec.bnerd.net/acme\n");

    // A missing file in the list is named and skipped, as kubectl skips it.
    let list = format!("/nonexistent/kc:{a}:{second}");
    let r = run_env(&["status", "-o", "name"], &[("KUBECONFIG", &list)]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.says("/nonexistent/kc"), "{}", r.stderr);
}

async fn request_timeout_bounds_a_silent_server(b: &Bed) {
    let dir = tempfile::tempdir().unwrap();
    // Connections are accepted by the kernel and then never answered.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut v = kubeconfig(b);
    v["clusters"][0]["cluster"]["server"] =
        json!(format!("https://{}", silent.local_addr().unwrap()));
    let path = write(&dir.path().join("silent"), &v);
    let started = Instant::now();
    let r = run_env(
        &["status", "--request-timeout", "1s"],
        &[("KUBECONFIG", &path)],
    )
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.says("gave no answer within 1s") || r.says("connection timed out to"),
        "{}",
        r.stderr
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    drop(silent);
}

/// Colour only when asked and never under NO_COLOR (which beats CLICOLOR_FORCE).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_color_is_honoured() {
    let args = ["--kubeconfig", "/nonexistent/kc", "status"];
    let r = run_env(&args, &[("CLICOLOR_FORCE", "1")]).await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains('\u{1b}'), "forced colour: {:?}", r.stderr);
    let r = run_env(&args, &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]).await;
    assert_eq!(r.code, 1);
    assert!(!r.stderr.contains('\u{1b}'), "{:?}", r.stderr);
    assert!(r.stderr.starts_with("error: "), "{:?}", r.stderr);
    let r = run_env(
        &["status", "--bogus"],
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")],
    )
    .await;
    assert_eq!(r.code, 2);
    assert!(!r.stderr.contains('\u{1b}'), "{:?}", r.stderr);
}

async fn status_prints_kubectls_formats_and_the_windows_under_way(b: &Bed) {
    let env = [("KUBECONFIG", kc(b))];

    let r = run_env(&["status", "--no-headers"], &env).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let words: Vec<&str> = r.stdout.split_whitespace().collect();
    assert_eq!(
        words,
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

    let r = run_env(&["status", "-A", "-o", "wide"], &env).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lines: Vec<Vec<&str>> = r
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        [
            "NAMESPACE",
            "NAME",
            "KIND",
            "MIGRATED",
            "FIP",
            "PINNED",
            "TUNNELS",
            "READY",
            "BLOCKERS",
            "MANAGED-BY",
            "SERVICE-CIDR",
            "WINDOW"
        ]
    );
    assert_eq!(lines[1][0], "tenant-acme");
    // MANAGED-BY names who applied the gateway: on the real control plane the scenario is
    // loaded by a server-side apply of field manager vpnmig-sandbox
    // (`controlplane::load`); the emulator puts it in its store with no field manager.
    let loaded_by = match b.backend {
        Backend::Emulated => "-",
        Backend::Real => "vpnmig-sandbox",
    };
    assert_eq!(lines[1][9..], [loaded_by, "10.250.3.0/24", "-"]);

    let r = run_env(&["status", "-o", "yaml"], &env).await;
    assert_eq!((r.code, r.stderr.as_str()), (0, ""), "only the document");
    let doc: Value = serde_saphyr::from_str(&r.stdout).unwrap();
    assert_eq!(doc["gateways"][0]["name"], "acme");
    assert_eq!(doc["windows"], json!([]));

    // A window under way (a cutover stopped after its apply): JSON and YAML carry it
    // with what to run, as the text does (issue 10 item 4).
    let r = b.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    b.edit(CONFIGMAP, "tenant-acme", "vpnmig-acme", |cm| {
        let mut j: Value =
            serde_json::from_str(cm["data"]["journal.json"].as_str().unwrap()).unwrap();
        j["phase"] = json!("applied");
        cm["data"]["journal.json"] = json!(j.to_string());
    })
    .await;
    let text = run_env(&["status"], &env).await;
    assert!(
        text.stdout
            .contains("window under way: tenant-acme/acme at journal phase applied"),
        "{}",
        text.stdout
    );
    let r = run_env(&["status", "-o", "json"], &env).await;
    assert_eq!((r.code, r.stderr.as_str()), (0, ""), "only the document");
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["windows"].as_array().unwrap().len(), 1, "{doc}");
    let w = &doc["windows"][0];
    assert_eq!(
        (&w["namespace"], &w["gateway"], &w["phase"]),
        (&json!("tenant-acme"), &json!("acme"), &json!("applied"))
    );
    assert!(
        w["recovery"]
            .as_str()
            .unwrap()
            .contains("`vpnmig cutover acme -n tenant-acme` resumes"),
        "{w}"
    );
    let r = run_env(&["status", "-o", "wide"], &env).await;
    assert!(
        r.stdout
            .lines()
            .nth(1)
            .unwrap()
            .trim_end()
            .ends_with("applied"),
        "{}",
        r.stdout
    );
    let r = run_env(&["status", "-o", "name"], &env).await;
    assert_eq!(r.stdout, "vpngateway.vpn.bnerd.net/acme\n");
    assert!(r.says("window under way"), "{}", r.stderr);
}

async fn completion_offers_live_names_within_a_budget(b: &Bed) {
    let complete = |words: &'static [&'static str], kubeconfig: String| async move {
        let mut args = vec!["--", "vpnmig"];
        args.extend_from_slice(words);
        run_env(
            &args,
            &[("VPNMIG_COMPLETE", "fish"), ("KUBECONFIG", &kubeconfig)],
        )
        .await
    };
    let r = complete(&["cutover", ""], kc(b).into()).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.lines().any(|c| c == "acme"), "{}", r.stdout);
    let r = complete(&["verify", "-n", "tenant-acme", "a"], kc(b).into()).await;
    assert!(r.stdout.lines().any(|c| c == "acme"), "{}", r.stdout);
    let r = complete(&["status", "-n", "tenant-"], kc(b).into()).await;
    assert!(
        r.stdout.lines().any(|c| c.starts_with("tenant-acme")),
        "{}",
        r.stdout
    );
    // Contexts, clusters and users from the kubeconfig.
    let r = complete(&["status", "--context", "vpnmig-sandbox-"], kc(b).into()).await;
    assert!(
        r.stdout.lines().any(|c| c == "vpnmig-sandbox-viewer"),
        "{}",
        r.stdout
    );
    let r = complete(&["--user", ""], kc(b).into()).await;
    assert!(r.stdout.lines().any(|c| c == "lister"), "{}", r.stdout);
    // Flags come from the clap tree.
    let r = complete(&["status", "--no-h"], kc(b).into()).await;
    assert!(r.stdout.starts_with("--no-headers"), "{}", r.stdout);

    // kubectl's plugin completion: `kubectl vpnmig cutover <TAB>` runs
    // `kubectl_complete-vpnmig cutover ""` and reads cobra's answer.
    let bin = tempfile::tempdir().unwrap();
    let link = bin.path().join("kubectl_complete-vpnmig");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_vpnmig"), &link).unwrap();
    let out = std::process::Command::new(&link)
        .args(["cutover", "-n", "tenant-acme", ""])
        .env("KUBECONFIG", kc(b))
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.lines().any(|c| c == "acme"), "{stdout}");
    assert_eq!(stdout.lines().last(), Some(":4"), "{stdout}");

    let dir = tempfile::tempdir().unwrap();
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut v = kubeconfig(b);
    v["clusters"][0]["cluster"]["server"] =
        json!(format!("https://{}", silent.local_addr().unwrap()));
    let path = write(&dir.path().join("silent"), &v);
    let started = Instant::now();
    let r = complete(&["cutover", ""], path).await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.lines().any(|c| c == "acme"), "{}", r.stdout);
    drop(silent);
}

async fn status_json_says_when_the_windows_are_unknown(b: &Bed) {
    let r = run_env(
        &[
            "status",
            "-o",
            "json",
            "--context",
            "vpnmig-sandbox-gateways-only",
        ],
        &[("KUBECONFIG", kc(b))],
    )
    .await;
    // What was read is printed, and the run fails as `kubectl get A,B` does when B is
    // refused: a script must not read "no window under way" from it (attack finding).
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.says("which windows are under way is unknown"),
        "{}",
        r.stderr
    );
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["gateways"][0]["name"], "acme");
    assert_eq!(doc["windows"], json!([]));
    let why = doc["windowsUnknown"].as_str().unwrap();
    assert!(why.contains("cannot list resource \"configmaps\""), "{why}");
}

async fn status_watch_prints_changes_until_its_timeout(b: &Bed) {
    let started = Instant::now();
    let child = b.spawn(&["status", "--watch", "--timeout", "6s"]);
    let json_child = b.spawn(&["status", "-w", "--timeout", "6s", "-o", "json"]);
    // Let both print their first table and open their watches.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    b.put(
        VPNGATEWAY,
        "tenant-acme",
        json!({"metadata": {"name": "globex"},
               "spec": {"protocol": "ipsec", "endpoint": {"floatingIP": "198.51.100.60"}, "serviceCIDR": "10.250.60.0/24"}}),
    )
    .await;
    let r = live::finish(child).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(started.elapsed() < Duration::from_secs(15));
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(lines[0].trim_start().starts_with("NAME"), "{}", r.stdout);
    assert!(lines[1].trim_start().starts_with("acme"), "{}", r.stdout);
    assert!(
        lines[2..]
            .iter()
            .any(|l| l.trim_start().starts_with("globex")),
        "the new gateway is printed when it appears:\n{}",
        r.stdout
    );
    assert_eq!(
        lines.iter().filter(|l| l.contains("NAME")).count(),
        1,
        "one header"
    );
    assert!(r.says("watch ended after 6s"), "{}", r.stderr);

    let r = live::finish(json_child).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let docs: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(docs[0]["gateways"].as_array().unwrap().len(), 1);
    assert!(
        docs.last().unwrap()["gateways"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "globex"),
        "{}",
        r.stdout
    );
}
