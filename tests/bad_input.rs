//! Bad input gets one clear error naming file, document and field path, exit code 3
//! (src/exit.rs INVALID_INPUT), never a panic and never a partial bundle.

mod common;

use common::{Gw, root, vpnmig};

#[test]
fn every_bad_fixture_is_rejected_with_a_clear_error() {
    insta::glob!(
        concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/bad"),
        "*.yaml",
        |path| {
            let rel = path
                .strip_prefix(root())
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            let out = tempfile::tempdir().unwrap();
            let out_dir = out.path().join("bundle");
            let r = vpnmig(
                &["plan", "-f", &rel, "--out", out_dir.to_str().unwrap()],
                None,
            );
            assert_eq!(r.code, 3, "{rel}: {}", r.stderr);
            assert_eq!(r.stdout, "", "{rel}: nothing on stdout");
            assert!(r.stderr.starts_with("error: "), "{rel}: {}", r.stderr);
            assert!(
                r.says(&rel),
                "{rel}: the error names the file: {}",
                r.stderr
            );
            assert!(r.says("\nhint: "), "{rel}: a hint follows: {}", r.stderr);
            assert!(!r.stderr.contains("panicked"), "{rel}");
            assert!(!out_dir.exists(), "{rel}: nothing written");
            insta::assert_snapshot!(r.stderr);
        }
    );
}

#[test]
fn a_mistyped_field_is_named_by_its_path() {
    let gw = Gw::new("acme").set("/spec/tunnels/0/remoteSubnets", serde_json::json!(42));
    let r = vpnmig(&["plan", "-f", "-"], Some(&gw.yaml()));
    assert_eq!(r.code, 3);
    assert_eq!(
        r.error().unwrap(),
        "standard input document 1: IPsecGateway tenant-test/acme: field `spec.tunnels[0].remoteSubnets`: invalid type: integer `42`, expected a sequence"
    );
}

#[test]
fn a_secret_is_named_by_kind_and_name_never_by_value() {
    let secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: acme-psk, namespace: t}\ndata: {psk: c3VwZXJzZWNyZXQ=}\nstringData: {psk: supersecret}\n";
    let r = vpnmig(&["plan", "-f", "-"], Some(secret));
    assert_eq!(r.code, 3);
    assert!(
        r.says("document 1 is a Secret t/acme-psk (v1)"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("supersecret") && !r.stderr.contains("c3VwZXJzZWNyZXQ="),
        "{}",
        r.stderr
    );
}

#[test]
fn a_missing_file_is_a_failure_not_invalid_input() {
    let r = vpnmig(&["plan", "-f", "does/not/exist.yaml"], None);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .starts_with("error: does/not/exist.yaml: cannot read: "),
        "{}",
        r.stderr
    );
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(vpnmig(&["plan"], None).code, 2);
    assert_eq!(vpnmig(&["plan", "-f", "x", "-o", "table"], None).code, 2);
    assert_eq!(vpnmig(&["frobnicate"], None).code, 2);
}

#[test]
fn a_bad_allowlist_file_is_invalid_input() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("allow.yaml");
    std::fs::write(&path, "ike: [a]\nah: [b]\n").unwrap();
    let r = vpnmig(
        &[
            "plan",
            "-f",
            "fixtures/gateways/01-single-tunnel.yaml",
            "--allowlist",
            path.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.says("not a valid allowlist"), "{}", r.stderr);
}

#[test]
fn a_file_that_is_not_text_is_invalid_input() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("binary.yaml");
    std::fs::write(&path, b"apiVersion: v1\n\xff\xfe\n").unwrap();
    let r = vpnmig(&["plan", "-f", path.to_str().unwrap()], None);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.says("not UTF-8 text (invalid byte at offset 15)"),
        "{}",
        r.stderr
    );
}

#[test]
fn serde_type_names_do_not_leak_into_messages() {
    let r = vpnmig(
        &["plan", "-f", "-"],
        Some(
            "apiVersion: ipsec.bnerd.net/v1alpha1\nkind: IPsecGateway\nmetadata: {name: a}\nspec: []\n",
        ),
    );
    assert_eq!(r.code, 3);
    assert_eq!(
        r.stderr.lines().next().unwrap(),
        "error: standard input document 1: IPsecGateway a: field `spec`: invalid length 0, expected a mapping"
    );
}

#[test]
fn allowlist_errors_never_quote_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("allow.yaml");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Secret\ndata:\n  psk: U1VQRVJTRUNSRVQ=\n",
    )
    .unwrap();
    let r = vpnmig(
        &[
            "plan",
            "-f",
            "fixtures/gateways/01-single-tunnel.yaml",
            "--allowlist",
            path.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(r.code, 3);
    assert!(!r.stderr.contains("U1VQRVJTRUNSRVQ="), "{}", r.stderr);
    // One error and one hint, each maybe wrapped: no other line starts at column 0.
    assert_eq!(
        r.stderr.lines().filter(|l| !l.starts_with(' ')).count(),
        2,
        "one error line and one hint: {}",
        r.stderr
    );
    assert!(r.error().is_some() && r.hint().is_some(), "{}", r.stderr);
}

#[test]
fn an_empty_list_says_so() {
    let r = vpnmig(
        &["plan", "-f", "-"],
        Some("apiVersion: v1\nkind: List\nitems: []\nmetadata: {resourceVersion: \"\"}\n"),
    );
    assert_eq!(r.code, 3);
    assert!(r.says("document 1 is a List with no items: was the export run in the right namespace and context?"), "{}", r.stderr);
}

#[test]
fn the_same_gateway_twice_is_named_as_repeated() {
    let gw = Gw::new("acme").yaml();
    let r = vpnmig(
        &["plan", "-f", "-", "--name", "tenant-test/acme"],
        Some(&format!("{gw}\n---\n{gw}")),
    );
    assert_eq!(r.code, 3);
    assert!(
        r.error().unwrap().starts_with(
            "-: IPsecGateway tenant-test/acme appears 2 times (standard input document 1, standard input document 2)"
        ),
        "{}",
        r.stderr
    );
}

#[test]
fn output_that_cannot_be_written_fails() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("vpnmig"))
        .current_dir(root())
        .args([
            "plan",
            "-f",
            "fixtures/gateways/01-single-tunnel.yaml",
            "-o",
            "yaml",
        ])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: cannot write the output: "));
}

/// Issue 9 item 11: Windows PowerShell 5's `kubectl get ... > FILE` writes UTF-16 LE with
/// a BOM (fixtures/encodings/, from ../shared/cases/hardening/). kubectl reads it, and so
/// does plan: the same plan as from the UTF-8 fixture it encodes.
#[test]
fn a_utf16le_bom_powershell_export_plans_like_its_utf8_original() {
    let utf16 = vpnmig(
        &[
            "plan",
            "-f",
            "fixtures/encodings/utf16le-bom-powershell-export.yaml",
            "-o",
            "yaml",
        ],
        None,
    );
    let utf8 = vpnmig(
        &[
            "plan",
            "-f",
            "fixtures/gateways/01-single-tunnel.yaml",
            "-o",
            "yaml",
        ],
        None,
    );
    assert_eq!(utf8.code, 0, "{}", utf8.stderr);
    assert_eq!(
        (utf16.code, utf16.stderr.as_str()),
        (utf8.code, utf8.stderr.as_str())
    );
    assert_eq!(utf16.stdout, utf8.stdout);
}

/// Issue 9 item 11: bytes that are not text in the encoding found are invalid input
/// naming that encoding, with a hint that converts the file (not the command that
/// produced it).
#[test]
fn a_broken_utf16_file_names_its_encoding_and_how_to_convert_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.yaml");
    let mut bytes =
        std::fs::read(root().join("fixtures/encodings/utf16le-bom-powershell-export.yaml"))
            .unwrap();
    bytes.pop();
    std::fs::write(&path, &bytes).unwrap();
    let r = vpnmig(&["plan", "-f", path.to_str().unwrap()], None);
    assert_eq!(r.code, 3, "{}", r.stderr);
    let shown = path.to_str().unwrap();
    assert_eq!(
        common::flat(&r.stderr),
        format!(
            "error: {shown}: not UTF-16 text: an odd number of bytes ({}), the file is cut short (encoding found: UTF-16 LE (BOM)) hint: convert it to UTF-8 and plan from the copy: `iconv -f UTF-16 -t UTF-8 {shown} > gateway.utf8.yaml` (or in PowerShell: `Get-Content {shown} | Set-Content -Encoding utf8 gateway.utf8.yaml`); from Windows PowerShell, export with `| Out-File -Encoding utf8 NAME.yaml` rather than `> NAME.yaml`",
            bytes.len()
        )
    );
}

/// Issue 9 item 13: `-n` with `-f` behaves as kubectl's: a file of another namespace is
/// refused, a file without one takes `-n`'s.
#[test]
fn a_namespace_flag_that_contradicts_the_file_is_refused_and_fills_a_missing_one() {
    let r = vpnmig(
        &[
            "plan",
            "-f",
            "fixtures/gateways/01-single-tunnel.yaml",
            "-n",
            "other",
        ],
        None,
    );
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.says("the namespace of IPsecGateway acme in fixtures/gateways/01-single-tunnel.yaml is tenant-acme, not -n other"),
        "{}",
        r.stderr
    );
    let text =
        std::fs::read_to_string(root().join("fixtures/gateways/01-single-tunnel.yaml")).unwrap();
    let without: String = text
        .lines()
        .filter(|l| l.trim() != "namespace: tenant-acme")
        .map(|l| format!("{l}\n"))
        .collect();
    let r = vpnmig(
        &["plan", "-f", "-", "-n", "tenant-x", "-o", "yaml"],
        Some(&without),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("namespace: tenant-x"), "{}", r.stdout);
}

/// Issue 9 item 13: a PSK Secret whose value is not base64 is named so, never echoed.
#[test]
fn a_psk_value_that_is_not_base64_is_named_never_echoed() {
    let doc = "apiVersion: v1\nkind: Secret\nmetadata: {name: acme-psk, namespace: tenant-acme}\ndata: {psk: 'not-base64!!'}\n---\n";
    let gw =
        std::fs::read_to_string(root().join("fixtures/gateways/01-single-tunnel.yaml")).unwrap();
    let r = vpnmig(&["plan", "-f", "-"], Some(&format!("{doc}{gw}")));
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("data.psk of the PSK Secret is not valid base64"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("not-base64!!") && !r.stderr.contains("not-base64!!"));
    assert!(!r.stdout.contains("no such key"), "{}", r.stdout);
}
