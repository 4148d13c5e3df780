//! Fitting the kubectl ecosystem offline (issue 13 items 1, 3, 5): man pages and
//! completion scripts generated from the clap tree, `version`, the plugin name, and
//! kubectl-like errors with suggestions.

mod common;

use common::vpnmig;

/// Every (sub)command of the tree with its path, e.g. `["vpnmig", "plan"]`.
fn walk<'a>(
    cmd: &'a clap::Command,
    path: Vec<String>,
    out: &mut Vec<(Vec<String>, &'a clap::Command)>,
) {
    out.push((path.clone(), cmd));
    // clap's own `help` subcommand gets no page (clap_mangen leaves it out too).
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let mut p = path.clone();
        p.push(sub.get_name().to_string());
        walk(sub, p, out);
    }
}

/// roff escapes `-` as `\-`.
fn roff(s: &str) -> String {
    s.replace('-', "\\-")
}

#[test]
fn every_subcommand_and_flag_is_in_the_man_pages() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let r = vpnmig(&["man", "--out", out.to_str().unwrap()], None);
    assert_eq!(r.code, 0, "{}", r.stderr);

    let mut cmd = vpnmig::cli::command(false);
    cmd.build();
    let mut all = Vec::new();
    walk(&cmd, vec!["vpnmig".into()], &mut all);
    assert!(all.len() > 8, "the tree has its subcommands");
    let top = std::fs::read_to_string(out.join("vpnmig.1")).unwrap();
    for (path, sub) in &all {
        let file = out.join(format!("{}.1", path.join("-")));
        let page =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        if path.len() > 1 {
            assert!(
                top.contains(&roff(&path[1..].join("-"))),
                "vpnmig.1 lists {path:?}"
            );
        }
        for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
            if let Some(long) = arg.get_long() {
                assert!(
                    page.contains(&roff(&format!("--{long}"))),
                    "{}: --{long} missing",
                    file.display()
                );
            }
            if let Some(short) = arg.get_short() {
                assert!(
                    page.contains(&roff(&format!("-{short}"))),
                    "{}: -{short} missing",
                    file.display()
                );
            }
            if arg.is_positional() {
                let name = arg.get_value_names().unwrap()[0].to_string();
                assert!(page.contains(&name), "{}: {name} missing", file.display());
            }
        }
    }
    // Without --out: the top-level page on stdout.
    let r = vpnmig(&["man"], None);
    assert_eq!(r.code, 0);
    assert!(
        r.stdout.starts_with(".ie") && r.stdout.contains(".TH vpnmig 1"),
        "{}",
        r.stdout
    );
}

#[test]
fn completion_scripts_are_printed_for_every_shell() {
    for (shell, marker) in [
        (
            "bash",
            "complete -o nospace -o bashdefault -o nosort -F _clap_complete_vpnmig vpnmig",
        ),
        ("zsh", "#compdef vpnmig"),
        ("fish", "complete --keep-order --exclusive --command vpnmig"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "set edit:completion:arg-completer[vpnmig]"),
    ] {
        let r = vpnmig(&["completions", shell], None);
        assert_eq!(r.code, 0, "{shell}: {}", r.stderr);
        assert!(r.stdout.contains(marker), "{shell}:\n{}", r.stdout);
        assert!(
            r.stdout.contains("VPNMIG_COMPLETE"),
            "{shell}:\n{}",
            r.stdout
        );
    }
    let r = vpnmig(&["completions", "tcsh"], None);
    assert_eq!(r.code, 2);
}

#[test]
fn version_names_the_commit_and_both_apis() {
    let r = vpnmig(&["version", "-o", "json"], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    let commit = v["gitCommit"].as_str().unwrap();
    // CI builds from a clone: the commit is known there; "unknown" only outside git.
    assert!(
        commit == "unknown"
            || (commit.len() == 40 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{commit}"
    );
    assert_eq!(
        v["operatorApis"],
        serde_json::json!([
            {"role": "source", "apiVersion": "ipsec.bnerd.net/v1alpha1", "kinds": ["IPsecGateway"]},
            {"role": "target", "apiVersion": "vpn.bnerd.net/v1alpha1", "kinds": ["VPNGateway", "VPNPeer"]}
        ])
    );
    let r = vpnmig(&["version"], None);
    assert!(
        r.stdout
            .starts_with(&format!("vpnmig {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("migrates from: ipsec.bnerd.net/v1alpha1 (IPsecGateway)"),
        "{}",
        r.stdout
    );
}

/// Installed as `kubectl-vpnmig`: usage lines, examples and man pages say `kubectl vpnmig`.
#[test]
fn as_a_plugin_examples_say_kubectl_vpnmig() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("kubectl-vpnmig");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_vpnmig"), &plugin).unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(&plugin)
            .args(args)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let help = run(&["status", "--help"]);
    assert!(
        help.contains("Usage: kubectl vpnmig status [OPTIONS]"),
        "{help}"
    );
    assert!(
        help.contains("  kubectl vpnmig status -A -o wide"),
        "{help}"
    );
    // Every command named in the help is `kubectl vpnmig …` (lines may wrap between).
    let words: Vec<&str> = help.split_whitespace().collect();
    for (i, w) in words.iter().enumerate().skip(1) {
        if *w == "vpnmig" || *w == "`vpnmig" {
            assert!(
                words[i - 1].ends_with("kubectl"),
                "{:?}\n{help}",
                &words[i - 1..=i]
            );
        }
    }
    let top = run(&["--help"]);
    assert!(
        top.contains("kubectl vpnmig plan acme --out plans/acme"),
        "{top}"
    );
    // The journal's name is not a command.
    assert!(top.contains("ConfigMap vpnmig-NAME"), "{top}");
    let script = run(&["completions", "bash"]);
    assert!(script.contains("kubectl-vpnmig"), "{script}");
}

/// Errors start with `error:` like kubectl's; mistyped subcommands and flags get the
/// closest as a tip; exit code 2 (usage) unchanged.
#[test]
fn mistakes_are_errors_with_suggestions() {
    let r = vpnmig(&["stauts"], None);
    assert_eq!(r.code, 2);
    assert!(r.stderr.starts_with("error: "), "{}", r.stderr);
    assert!(
        r.says("similar subcommand exists: 'status'"),
        "{}",
        r.stderr
    );
    let r = vpnmig(&["status", "--all-namespace"], None);
    assert_eq!(r.code, 2);
    assert!(r.stderr.starts_with("error: "), "{}", r.stderr);
    assert!(
        r.says("similar argument exists: '--all-namespaces'"),
        "{}",
        r.stderr
    );
    let r = vpnmig(&["cutover", "acme", "--rollback-on-fail"], None);
    assert_eq!(r.code, 2);
    assert!(r.says("'--rollback-on-failure'"), "{}", r.stderr);
    let r = vpnmig(&["plan", "-f", "/nonexistent.yaml"], None);
    assert_ne!(r.code, 0);
    assert!(r.stderr.starts_with("error: "), "{}", r.stderr);
}
