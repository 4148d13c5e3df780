//! Narrow terminals (issue 10 item 5): plan's text and verify's table at 60, 80 and 200
//! columns (`COLUMNS`), every line of every fixture's plan within the width, and no
//! pinned value cut by the wrapping. Review changes with `cargo insta review`.

mod common;

use common::{fixture_args, root, vpnmig_at};
use serde_json::Value;
use vpnmig::core::model::{Condition, GatewayStatus};
use vpnmig::core::swanctl::parse;
use vpnmig::core::verify::{GatewayView, PeerView, verify};

const FIXTURE: &str = "fixtures/gateways/02-two-tunnels.yaml";

fn plan_at(columns: Option<usize>, file: &str, out: Option<&std::path::Path>) -> common::Run {
    let extra = fixture_args(&root().join(file));
    let mut args = vec!["plan", "-f", file];
    args.extend(extra.iter().map(String::as_str));
    let dir = out.map(|d| d.display().to_string());
    if let Some(d) = &dir {
        args.extend(["--out", d.as_str()]);
    }
    let r = vpnmig_at(columns, &args, None);
    assert!(
        r.code == 0 || r.code == 4,
        "{file}: exit {} {}",
        r.code,
        r.stderr
    );
    r
}

fn widest(text: &str) -> (usize, String) {
    text.lines()
        .map(|l| (l.chars().count(), l.to_string()))
        .max_by_key(|(n, _)| *n)
        .unwrap_or_default()
}

#[test]
fn plan_text_at_60_80_and_200_columns() {
    for columns in [60, 80, 200] {
        let r = plan_at(Some(columns), FIXTURE, None);
        insta::assert_snapshot!(format!("plan_{columns}"), r.stdout);
    }
}

/// Every fixture, with and without a bundle (the commands for the window), at 60, 80 and
/// 100 columns and with no width at all (not a terminal: 100).
#[test]
fn no_plan_line_is_wider_than_the_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let mut fixtures: Vec<_> = std::fs::read_dir(root().join("fixtures/gateways"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    fixtures.sort();
    for path in fixtures {
        let file = path.strip_prefix(root()).unwrap().to_str().unwrap();
        for columns in [Some(60), Some(80), Some(100), None] {
            for bundle in [false, true] {
                let dir = tmp.path().join(format!(
                    "{}-{columns:?}",
                    path.file_stem().unwrap().display()
                ));
                let r = plan_at(columns, file, bundle.then_some(dir.as_path()));
                let limit = columns.unwrap_or(100);
                let (n, line) = widest(&r.stdout);
                assert!(
                    n <= limit,
                    "{file} at {columns:?} (bundle {bundle}): {n} columns:\n{line}"
                );
            }
        }
    }
}

/// The values an operator copies (addresses, CIDRs, identities, proposals) stay whole on
/// one line at every width: wrapped, never split or cut.
#[test]
fn pinned_values_are_never_split() {
    let mut fixtures: Vec<_> = std::fs::read_dir(root().join("fixtures/gateways"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    fixtures.sort();
    for path in fixtures {
        let file = path.strip_prefix(root()).unwrap().to_str().unwrap();
        let extra = fixture_args(&path);
        let mut args = vec!["plan", "-f", file, "-o", "json"];
        args.extend(extra.iter().map(String::as_str));
        let json = vpnmig_at(None, &args, None);
        let Ok(plan) = serde_json::from_str::<Value>(&json.stdout) else {
            continue; // a list or a multi-document file: covered by the width test
        };
        let values: Vec<String> = plan["fields"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == "pinned")
            .map(|f| match &f["value"] {
                Value::String(s) => s.clone(),
                v => v.to_string(),
            })
            .collect();
        assert!(!values.is_empty(), "{file}");
        for columns in [60, 80, 100] {
            let text = plan_at(Some(columns), file, None).stdout;
            for v in &values {
                assert!(
                    text.lines().any(|l| l.contains(v.as_str())),
                    "{file} at {columns}: {v} is not whole on a line"
                );
            }
        }
    }
}

/// A gateway with two peers, the second one's tunnel only partly up: every kind of row,
/// and a long detail.
fn verify_rows() -> Vec<vpnmig::core::verify::Row> {
    let ok = |t: &str| Condition {
        type_: t.into(),
        status: "True".into(),
        reason: Some("Reconciled".into()),
        observed_generation: Some(1),
        ..Default::default()
    };
    let view = GatewayView {
        object: "VPNGateway tenant-acme/acme".into(),
        generation: Some(1),
        status: GatewayStatus {
            floating_ip: Some("198.51.100.23".into()),
            service_cidr: Some("10.250.3.0/24".into()),
            conditions: vec![ok("FIPAttached"), ok("Ready")],
            ..Default::default()
        },
        pinned_fip: Some("198.51.100.23".into()),
        pinned_cidr: Some("10.250.3.0/24".into()),
        peers: vec![PeerView {
            name: "acme".into(),
            address: "203.0.113.10".into(),
            id: Some("fw.acme.example".into()),
            remote_subnets: vec!["10.20.0.0/16".into()],
            ..Default::default()
        }],
        ..Default::default()
    };
    let sas = std::fs::read_to_string(root().join("fixtures/swanctl/24-hardening-icmp-only.txt"))
        .unwrap();
    verify(&view, Ok(&parse(&sas).unwrap()))
}

#[test]
fn verify_table_at_60_80_and_200_columns() {
    let rows = verify_rows();
    for columns in [60, 80, 200] {
        let text = vpnmig::output::verify::render(&rows, columns);
        let (n, line) = widest(&text);
        assert!(n <= columns, "{columns}: {n} columns:\n{line}");
        for v in [
            "198.51.100.23",
            "10.250.3.0/24",
            "fw.acme.example",
            "10.20.0.0/16[icmp/8]",
        ] {
            assert!(
                text.lines().any(|l| l.contains(v)),
                "{columns}: {v} split:\n{text}"
            );
        }
        insta::assert_snapshot!(format!("verify_{columns}"), text);
    }
}

/// `parse-sas` on every sample: within the width, and every address whole on a line.
#[test]
fn parse_sas_fits_the_terminal() {
    let mut samples: Vec<_> = std::fs::read_dir(root().join("fixtures/swanctl"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    samples.sort();
    for path in samples {
        let file = path.strip_prefix(root()).unwrap().to_str().unwrap();
        let json = vpnmig_at(None, &["parse-sas", file, "-o", "json"], None);
        let doc: Value = serde_json::from_str(&json.stdout).unwrap();
        let addresses: Vec<String> = doc["ike_sas"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|ike| {
                [
                    ike["local"]["address"].clone(),
                    ike["remote"]["address"].clone(),
                ]
            })
            .filter_map(|a| a.as_str().map(str::to_string))
            .collect();
        for columns in [60, 80, 100] {
            let r = vpnmig_at(Some(columns), &["parse-sas", file], None);
            assert_eq!(r.code, 0, "{file}: {}", r.stderr);
            let (n, line) = widest(&r.stdout);
            assert!(n <= columns, "{file} at {columns}: {n} columns:\n{line}");
            for a in &addresses {
                assert!(
                    r.stdout.lines().any(|l| l.contains(a.as_str())),
                    "{file} at {columns}: {a} split:\n{}",
                    r.stdout
                );
            }
        }
    }
}

/// Every width from 40 to 240: verify's table stays within it and keeps each value whole.
#[test]
fn verify_table_fits_every_width() {
    let rows = verify_rows();
    for columns in 40..=240 {
        let text = vpnmig::output::verify::render(&rows, columns);
        let (n, line) = widest(&text);
        assert!(n <= columns, "{columns}: {n} columns:\n{line}");
        for v in [
            "198.51.100.23",
            "10.250.3.0/24",
            "fw.acme.example",
            "tenant-acme/acme",
        ] {
            assert!(
                text.lines().any(|l| l.contains(v)),
                "{columns}: {v} split:\n{text}"
            );
        }
    }
}

/// Every width from 40 to 120 (and every 7th to 240), every fixture that is one gateway: plan's text (with the
/// commands of a bundle and the diff) stays within it and keeps each pinned value whole.
#[test]
fn plan_text_fits_every_width() {
    use vpnmig::core::report::Rule;
    use vpnmig::output::text::{DiffBase, render_plan, value};
    let mut fixtures: Vec<_> = std::fs::read_dir(root().join("fixtures/gateways"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    fixtures.sort();
    for path in fixtures {
        let file = path.strip_prefix(root()).unwrap().to_str().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let Ok(source) = vpnmig::core::input::load(&text, file, None) else {
            continue;
        };
        let plan =
            vpnmig::core::full_plan::build(&source, &vpnmig::core::allowlist::Allowlist::default());
        let old = vpnmig::core::plan::clean_old_manifest(&source.raw);
        let diffs = vpnmig::bundle::diff(&plan, &old, &Default::default());
        let values: Vec<String> = plan
            .fields
            .iter()
            .filter(|f| f.rule == Rule::Pinned)
            .map(|f| value(&f.value))
            .collect();
        for columns in (40..=120).chain((121..=240).step_by(7)) {
            let out = render_plan(&plan, &diffs, DiffBase::Nothing, Some("plans/x"), columns);
            let out = anstream::adapter::strip_str(&out).to_string();
            let (n, line) = widest(&out);
            assert!(n <= columns, "{file} at {columns}: {n} columns:\n{line}");
            for v in &values {
                assert!(
                    v.chars().count() > columns || out.lines().any(|l| l.contains(v.as_str())),
                    "{file} at {columns}: {v} split"
                );
            }
        }
    }
}
