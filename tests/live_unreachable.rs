//! No verdict from silence (issue 9 item 0; DESIGN.md §4.9): with the API server gone,
//! every live command fails (exit 1, or 6 for a wait that ran out) with kubectl-like
//! wording, and none prints a verdict: no HEALTHY, no READY, no empty JSON array. On the
//! emulator and the real control plane (tests/live/bed.rs rows, one run per backend).

mod live;

use live::bed::{Bed, Row, Scenario};
use live::{ACME, run_vpnmig};
use serde_json::Value;
use vpnmig_sandbox::SettingsFile;

fn acme() -> Scenario {
    Scenario::new(ACME, SettingsFile::default())
}

/// The bed's kubeconfig (its context, user and CA) with its server gone: moved to an
/// address on 127.0.0.1 where nothing listens any more (a listener bound and closed), so
/// every connection is refused, as to a stopped API server. Its path and that server's URL.
fn gone(b: &Bed) -> (std::path::PathBuf, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("https://127.0.0.1:{port}");
    let mut kc: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(&b.kubeconfig).unwrap()).unwrap();
    for c in kc["clusters"].as_array_mut().unwrap() {
        c["cluster"]["server"] = Value::String(url.clone());
    }
    let dir = b.cwd().join("gone");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("kubeconfig");
    std::fs::write(&path, serde_saphyr::to_string(&kc).unwrap()).unwrap();
    (path, url)
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

crate::rows! {
    an_unreachable_cluster_is_never_a_verdict: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(an_unreachable_cluster_is_never_a_verdict(b)),
    },
}

async fn an_unreachable_cluster_is_never_a_verdict(b: &Bed) {
    let on = b.backend;
    let (kubeconfig, url) = gone(b);
    for (args, code) in COMMANDS {
        let r = run_vpnmig(&kubeconfig, args).await;
        let cmd = args.join(" ");
        assert_eq!(
            r.code, *code,
            "{on}: vpnmig {cmd}\n{}\n{}",
            r.stdout, r.stderr
        );
        assert!(
            r.says(&format!("connection refused to {url} (context vpnmig-sandbox): is the cluster up, is this the right context?")),
            "{on}: vpnmig {cmd}: {}",
            r.stderr
        );
        for verdict in ["HEALTHY", "READY", "[]", "nothing to do", "no gateways"] {
            assert!(
                !r.stdout.contains(verdict),
                "{on}: vpnmig {cmd} printed {verdict}: {}",
                r.stdout
            );
        }
        assert!(
            !r.stderr.contains("ServiceError"),
            "{on}: vpnmig {cmd}: the transport's debug words: {}",
            r.stderr
        );
    }
}
