//! No verdict from silence (issue 9 item 0; DESIGN.md §4.9): with the API server gone,
//! every live command fails (exit 1, or 6 for a wait that ran out) with kubectl-like
//! wording, and none prints a verdict: no HEALTHY, no READY, no empty JSON array.

mod live;

use live::{ACME, run_vpnmig};
use vpnmig_sandbox::{Config, Sandbox, SettingsFile, scenario};

/// A kubeconfig that points at a sandbox which has stopped: connection refused.
async fn stopped_cluster() -> (tempfile::TempDir, std::path::PathBuf, String) {
    let sb = Sandbox::start(Config {
        scenario: scenario::parse(ACME).unwrap(),
        settings: SettingsFile::default(),
        port: 0,
        data_plane: None,
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    sb.write_kubeconfig(&kubeconfig).unwrap();
    let url = sb.url();
    sb.shutdown().await;
    (dir, kubeconfig, url)
}

/// One row per command: its arguments and the exit code it must end with.
const COMMANDS: &[(&[&str], i32)] = &[
    (&["status"], 1),
    (&["status", "-A"], 1),
    (&["plan", "acme"], 1),
    (&["plan", "acme", "--server-dry-run", "-o", "json"], 1),
    (&["verify", "acme"], 1),
    (&["verify", "acme", "-o", "json"], 1),
    (&["verify", "acme", "--wait", "--timeout", "5s"], 6),
    (
        &["verify", "acme", "--wait", "--timeout", "5s", "-o", "json"],
        6,
    ),
    (&["cutover", "acme", "--yes"], 1),
    (&["cutover", "acme", "--dry-run"], 1),
    (&["cutover", "acme", "--forward", "--yes"], 1),
    (&["rollback", "acme", "--yes"], 1),
    (&["rollback", "acme", "--dry-run"], 1),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_cluster_is_never_a_verdict() {
    let (_dir, kubeconfig, url) = stopped_cluster().await;
    for (args, code) in COMMANDS {
        let r = run_vpnmig(&kubeconfig, args).await;
        let cmd = args.join(" ");
        assert_eq!(r.code, *code, "vpnmig {cmd}\n{}\n{}", r.stdout, r.stderr);
        assert!(
            r.says(&format!("connection refused to {url} (context vpnmig-sandbox): is the cluster up, is this the right context?")),
            "vpnmig {cmd}: {}",
            r.stderr
        );
        for verdict in ["HEALTHY", "READY", "[]", "nothing to do", "no gateways"] {
            assert!(
                !r.stdout.contains(verdict),
                "vpnmig {cmd} printed {verdict}: {}",
                r.stdout
            );
        }
        assert!(
            !r.stderr.contains("ServiceError"),
            "vpnmig {cmd}: the transport's debug words: {}",
            r.stderr
        );
    }
}
