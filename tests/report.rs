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

fn fixture(name: &str) -> Journal {
    let path = format!("{}/fixtures/journals/{name}", env!("CARGO_MANIFEST_DIR"));
    Journal::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn identity() -> ClusterIdentity {
    ClusterIdentity {
        server: "https://k8s.example.net:6443".into(),
        kube_system_uid: Some("0b6c3b1e-5f0e-4a53-9d8f-6c1f4b1c2d3e".into()),
        why: None,
    }
}

/// Every format says what the hash chain covers and what it does not (issue 21 item 7):
/// a forged entry re-chained by someone who can write the ConfigMap reads intact, so
/// "intact" alone must never stand as proof of who did what.
#[test]
fn every_format_says_what_the_chain_cannot_prove() {
    for name in ["done.json", "failed-verify.json", "rolled-back.json"] {
        let r = build(&fixture(name), identity());
        for format in [Format::Md, Format::Html, Format::Json] {
            let doc = render(&r, format);
            for says in [
                "not who wrote it",
                "not a signature",
                "re-chained",
                "entries removed from the end",
                "the data-plane baseline and comparison",
            ] {
                assert!(doc.contains(says), "{name} {format:?}: no {says:?}");
            }
        }
    }
}

/// A new cutover after a rollback archives the earlier window: the current record lists
/// it with the command that prints it, and the archived record says it is archived.
#[test]
fn earlier_windows_are_listed_and_an_archived_record_says_so() {
    let earlier = fixture("rolled-back.json");
    let mut current = fixture("done.json");
    current
        .earlier_windows
        .push(earlier.archived_as(1, "vpnmig-acme.window-1"));
    let r = build(&current, identity());
    assert_eq!(r.window, 2);
    assert_eq!(
        r.earlier_windows[0].report,
        format!(
            "vpnmig report {} -n {} --window 1",
            current.gateway, current.namespace
        )
    );
    insta::assert_snapshot!("earlier_windows_md", render(&r, Format::Md));
    let json: serde_json::Value = serde_json::from_str(&render(&r, Format::Json)).unwrap();
    assert_eq!(json["window"], 2);
    assert_eq!(json["earlierWindows"][0]["phase"], "rolled-back");
    let archived =
        vpnmig::core::record::build_archived(&earlier, identity(), "vpnmig-acme.window-1", 1);
    let md = render(&archived, Format::Md);
    assert!(md.contains("vpnmig-acme.window-1 (archived)"), "{md}");
    assert!(
        md.contains("archived: a later cutover replaced its journal"),
        "{md}"
    );
    // The journal with its list of earlier windows reads back, and old journals (no
    // list) still read: the field is additive.
    let back = Journal::from_json(&serde_json::to_string(&current).unwrap()).unwrap();
    assert_eq!(back.earlier_windows, current.earlier_windows);
    assert!(fixture("done.json").earlier_windows.is_empty());
}

/// A value from the cluster never becomes a link, an image or markup in the Markdown
/// record (issue 21 item 7). Rows: values planted in the journal.
#[test]
fn markdown_never_carries_a_link_or_an_image_from_a_value() {
    let mut j = fixture("rolled-back.json");
    j.last_error = Some(
        "see [the runbook](https://evil.example/x) or ![logo](https://evil.example/p.png) or <https://evil.example> or www.evil.example *now* `rm -rf`"
            .into(),
    );
    j.history[1].by = "[admin](javascript:alert(1))".into();
    let md = render(&build(&j, identity()), Format::Md);
    for never in [
        "[the runbook](",
        "![logo](",
        "<https://",
        "https://evil",
        "www.evil",
        "[admin](",
        " *now* ",
        " `rm -rf`",
    ] {
        assert!(!md.contains(never), "{never:?} in the Markdown record");
    }
    let line = md.lines().find(|l| l.starts_with("| Last error")).unwrap();
    insta::assert_snapshot!("markdown_escapes_values", line);
}

/// a21u U15: a window closed by `rollback` before its delete never says the IPsecGateway
/// was re-created; one rolled back after its delete still does.
#[test]
fn a_window_closed_before_its_delete_never_says_the_gateway_was_re_created() {
    use vpnmig::core::journal::Phase;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/journals/rolled-back.json"
    );
    let full = Journal::from_json(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut early = full.clone();
    early.history.retain(|e| {
        e.phase < Phase::Deleting || e.phase.rolling_back() || e.phase == Phase::RolledBack
    });
    assert!(early.history.len() < full.history.len());
    for (j, says, never) in [
        (
            &early,
            "rolled back: the window was closed before its delete; the IPsecGateway was never deleted",
            "the IPsecGateway was re-created",
        ),
        (
            &full,
            "the IPsecGateway was re-created",
            "was never deleted",
        ),
    ] {
        let md = render(&build(j, ClusterIdentity::default()), Format::Md);
        assert!(md.contains(says), "{says}: {md}");
        assert!(!md.contains(never), "{never}: {md}");
    }
}
