//! Golden tests: `vpnmig plan` on every fixture in fixtures/gateways/, as text and as
//! the generated manifests (-o yaml), with the exit code. Review changes with
//! `cargo insta review`.

mod common;

use common::{fixture_args, root, vpnmig};

fn run(path: &std::path::Path, format: &str) -> String {
    let rel = path
        .strip_prefix(root())
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let extra = fixture_args(path);
    let mut args = vec!["plan", "-f", rel.as_str(), "-o", format];
    args.extend(extra.iter().map(String::as_str));
    let r = vpnmig(&args, None);
    assert!(
        r.code == 0 || r.code == 4,
        "{rel}: exit {} stderr {}",
        r.code,
        r.stderr
    );
    format!(
        "exit: {}\nstderr: {}\n---\n{}",
        r.code,
        r.stderr.trim_end(),
        r.stdout
    )
}

#[test]
fn text_output_for_every_fixture() {
    insta::glob!(
        concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/gateways"),
        "*.yaml",
        |path| {
            insta::assert_snapshot!("text", run(path, "text"));
        }
    );
}

#[test]
fn manifests_for_every_fixture() {
    insta::glob!(
        concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/gateways"),
        "*.yaml",
        |path| {
            insta::assert_snapshot!("yaml", run(path, "yaml"));
        }
    );
}
