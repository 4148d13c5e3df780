//! The help text teaches the workflow, and the exit-code table in docs matches src/exit.rs.

mod common;

use common::{root, vpnmig};

#[test]
fn top_level_help_teaches_the_workflow() {
    let r = vpnmig(&["--help"], None);
    assert_eq!(r.code, 0);
    insta::assert_snapshot!(r.stdout);
}

#[test]
fn plan_help_has_examples_and_exit_codes() {
    let r = vpnmig(&["plan", "--help"], None);
    assert_eq!(r.code, 0);
    insta::assert_snapshot!(r.stdout);
}

#[test]
fn docs_exit_codes_match_the_code() {
    let doc = std::fs::read_to_string(root().join("docs/exit-codes.md")).unwrap();
    let rows: Vec<(i32, String)> = doc
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            Some((cells.get(1)?.parse().ok()?, cells.get(2)?.to_string()))
        })
        .collect();
    let code: Vec<(i32, String)> = vpnmig::exit::ALL
        .iter()
        .map(|(c, n)| (*c, n.to_string()))
        .collect();
    assert_eq!(rows, code);
}

#[test]
fn version_prints_the_crate_version() {
    let r = vpnmig(&["--version"], None);
    assert_eq!(r.stdout, format!("vpnmig {}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn cutover_and_rollback_help_teach_the_window() {
    for cmd in ["cutover", "rollback"] {
        let r = vpnmig(&[cmd, "--help"], None);
        assert_eq!(r.code, 0);
        insta::assert_snapshot!(format!("{cmd}_help"), r.stdout);
    }
}

/// Issue 12 item 4: `report` says what a record holds, its formats and exit codes.
#[test]
fn report_help_teaches_the_record() {
    let r = vpnmig(&["report", "--help"], None);
    assert_eq!(r.code, 0);
    insta::assert_snapshot!(r.stdout);
}

/// Issue 10 item 6: installed as `kubectl-vpnmig`, usage says `kubectl vpnmig`.
#[test]
fn as_a_kubectl_plugin_usage_says_kubectl_vpnmig() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("kubectl-vpnmig");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_vpnmig"), &plugin).unwrap();
    let out = std::process::Command::new(&plugin)
        .args(["status", "--bogus"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("Usage: kubectl vpnmig status [OPTIONS]"),
        "{err}"
    );
    assert!(!err.contains("kubectl-vpnmig"), "{err}");
}
