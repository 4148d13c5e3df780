//! Golden tests of the change record (`vpnmig report`; issue 12 item 4): each journal in
//! `fixtures/journals/` (left by the windows of `tests/live_report.rs`) rendered as
//! Markdown, JSON and HTML, for a fixed cluster identity. The HTML is checked for what a
//! browser must never run: no script, no event handler, every value escaped.

use vpnmig::core::journal::Journal;
use vpnmig::core::record::{ClusterIdentity, Record, build};
use vpnmig::output::record::{Format, render};

fn record(path: &std::path::Path) -> Record {
    let text = std::fs::read_to_string(path).unwrap();
    let j = Journal::from_json(&text).unwrap();
    build(
        &j,
        ClusterIdentity {
            server: "https://k8s.example.net:6443".into(),
            kube_system_uid: Some("0b6c3b1e-5f0e-4a53-9d8f-6c1f4b1c2d3e".into()),
            why: None,
        },
    )
}

#[test]
fn every_journal_renders_in_every_format() {
    insta::glob!(
        concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/journals"),
        "*.json",
        |path| {
            let r = record(path);
            assert_eq!(r.chain.text.split(' ').next(), Some("intact"), "{path:?}");
            for (format, ext) in [
                (Format::Md, "md"),
                (Format::Json, "json"),
                (Format::Html, "html"),
            ] {
                let doc = render(&r, format);
                if format == Format::Html {
                    let lower = doc.to_lowercase();
                    for never in ["<script", "javascript:", " onerror=", " onload=", "<iframe"] {
                        assert!(!lower.contains(never), "{path:?}: {never}");
                    }
                }
                insta::assert_snapshot!(ext, doc);
            }
        }
    );
}

#[test]
fn markup_in_a_journal_is_text_in_the_record() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/journals/rolled-back.json"
    );
    let mut j = Journal::from_json(&std::fs::read_to_string(path).unwrap()).unwrap();
    j.last_error = Some(r#"<img src=x onerror="alert(1)"> & <script>alert(2)</script>"#.into());
    let r = build(&j, ClusterIdentity::default());
    let html = render(&r, Format::Html);
    assert!(
        !html.contains("<script") && !html.contains("<img"),
        "{html}"
    );
    assert!(
        html.contains("&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; &lt;script&gt;alert(2)&lt;/script&gt;"),
        "{html}"
    );
    let md = render(&r, Format::Md);
    assert!(!md.contains("<script") && !md.contains("<img"), "{md}");
    // Without the uid of kube-system, the record says it does not know it.
    assert!(md.contains("namespace kube-system uid unknown"), "{md}");
}

#[test]
fn a_journal_of_an_earlier_version_is_said_to_be_unchained() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/journals/done.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for e in v["history"].as_array_mut().unwrap() {
        e.as_object_mut().unwrap().remove("prev");
    }
    for key in [
        "historyHead",
        "checks",
        "approvedPlan",
        "outage",
        "dataPlane",
    ] {
        v.as_object_mut().unwrap().remove(key);
    }
    let j = Journal::from_json(&v.to_string()).unwrap();
    let md = render(&build(&j, ClusterIdentity::default()), Format::Md);
    for says in [
        "not chained (journal from an earlier version)",
        "none: the cutover ran without --plan",
        "## Checks\n\nnot recorded",
        "Comparison: not recorded.",
    ] {
        assert!(md.contains(says), "no {says:?} in\n{md}");
    }
}
