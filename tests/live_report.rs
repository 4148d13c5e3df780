//! `vpnmig report` end to end against vpnmig-sandbox (issue 12 item 4): a done cutover, a
//! cutover whose data plane fails verification, and a window rolled back after a failed
//! cutover each give their change record in every format; an edited journal is caught by
//! its hash chain. Each row runs on the emulator and on the real control plane
//! (tests/live/bed.rs).
//!
//! With `VPNMIG_WRITE_FIXTURES=1` the journals these windows leave on the emulator are
//! written to
//! `fixtures/journals/` (the `by` of each entry and the bundle path made stable, the chain
//! re-linked), which
//! the golden tests of `tests/report.rs` render.

mod live;

use live::bed::{After, Bed, CONFIGMAP, NAMESPACE, Row, Scenario};
use live::{ACME, Run};
use serde_json::Value;

fn acme() -> Scenario {
    Scenario::new(ACME, live::pool("10.250.3.0/24"))
}

/// A window left in the sandbox, and what its record must say.
struct Case {
    /// Fixture name (`fixtures/journals/NAME.json`).
    name: &'static str,
    outcome: &'static str,
    /// The phases of the timeline, in order.
    phases: &'static [&'static str],
    /// Text each rendering contains.
    says: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        name: "done",
        outcome: "done",
        phases: &[
            "started",
            "psk-detached",
            "deleting",
            "deleted",
            "applied",
            "attached",
            "ready",
            "done",
        ],
        says: &["the live gateway matched it", "data plane: identical"],
    },
    Case {
        name: "failed-verify",
        outcome: "failed",
        phases: &[
            "started",
            "psk-detached",
            "deleting",
            "deleted",
            "applied",
            "attached",
            "ready",
        ],
        says: &[
            "data plane: CHANGED",
            "10.250.0.0/16",
            "the cutover ran without --plan",
        ],
    },
    Case {
        name: "rolled-back",
        outcome: "rolled-back",
        phases: &[
            "started",
            "psk-detached",
            "deleting",
            "deleted",
            "applied",
            "attached",
            "ready",
            "rolling-back",
            "new-deleted",
            "old-applied",
            "rolled-back",
        ],
        says: &[
            "Cutover failure",
            "at phase ready: timed out",
            "Rollback steps taken",
        ],
    },
];

crate::rows! {
    the_done_window_has_its_record_in_every_format: Row {
        scenario: acme,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(the_window_has_its_record_in_every_format(b, &CASES[0])),
    },
    the_failed_verify_window_has_its_record_in_every_format: Row {
        scenario: acme,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(the_window_has_its_record_in_every_format(b, &CASES[1])),
    },
    the_rolled_back_window_has_its_record_in_every_format: Row {
        scenario: acme,
        only: None,
        after: After::acme("IPsecGateway"),
        steps: |b| Box::pin(the_window_has_its_record_in_every_format(b, &CASES[2])),
    },
    rollback_writes_its_record_and_an_edited_journal_breaks_the_chain: Row {
        scenario: acme,
        only: None,
        after: After::acme("IPsecGateway"),
        steps: |b| Box::pin(rollback_writes_its_record_and_an_edited_journal_breaks_the_chain(b)),
    },
    /// A cutover after a rollback is a new window: the rolled-back window's journal is
    /// archived in its own ConfigMap before it is replaced, the cutover says so, the new
    /// record lists it and `--window 1` prints it (issue 21 item 7).
    a_cutover_after_a_rollback_keeps_the_earlier_record: Row {
        scenario: acme,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(a_cutover_after_a_rollback_keeps_the_earlier_record(b)),
    },
    /// a21t T06b: the PSK Secret deleted after done.
    a_done_window_whose_psk_secret_is_gone_is_not_reported_complete: Row {
        scenario: acme,
        only: None,
        // The Secret is gone on purpose.
        after: None,
        steps: |b| Box::pin(a_done_window_without_its_psk_is_not_reported_complete(b, true)),
    },
    /// The same with another key in it.
    a_done_window_whose_psk_changed_is_not_reported_complete: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(a_done_window_without_its_psk_is_not_reported_complete(b, false)),
    },
}

/// a21t T06b (critical): a done window whose PSK Secret is gone, or holds another key,
/// is never reported "the cutover is complete" with exit 0: the record reads the Secret at
/// report time as it reads the new objects, says it (every format, never the key), and
/// `report` exits 5 with the step that puts the client's key back. On the code before,
/// exit 0 and "done: the cutover is complete".
async fn a_done_window_without_its_psk_is_not_reported_complete(b: &Bed, gone: bool) {
    b.step(&["cutover", "acme", "--yes"], 0, &[]).await;
    let secret = "secret/acme-psk -n tenant-acme (the PSK)";
    let state = if gone {
        b.delete(live::bed::SECRET, "tenant-acme", "acme-psk").await;
        format!("{secret} is gone")
    } else {
        b.edit(live::bed::SECRET, "tenant-acme", "acme-psk", |s| {
            s["data"]["psk"] = serde_json::json!("bm90LXRoZS1jbGllbnRzLWtleQ==");
            if let Some(o) = s.as_object_mut() {
                o.remove("stringData");
            }
        })
        .await;
        format!("{secret} key psk is not the one the window fingerprinted")
    };
    let md = b.step(&["report", "acme", "-o", "md"], 5, &[]).await;
    let err = live::flat(&md.stderr);
    assert!(
        err.contains(&format!(
            "the window of tenant-acme/acme ended done, but {state}: the cutover is not complete"
        )),
        "{err}"
    );
    let fix = if gone {
        "kubectl create secret generic acme-psk -n tenant-acme --from-literal=psk=<the client's key>"
    } else {
        "put the client's key back in it"
    };
    assert!(err.contains(fix), "{err}");
    let out = live::flat(&md.stdout);
    assert!(
        out.contains("done (the journal's phase), but the cutover is not complete"),
        "{out}"
    );
    assert!(!out.contains("done: the cutover is complete"), "{out}");
    let json = b.step(&["report", "acme", "-o", "json"], 5, &[]).await;
    let doc: Value = serde_json::from_str(&json.stdout).expect("the record is JSON");
    assert_eq!(doc["readAtReport"]["psk"]["state"], state.as_str(), "{doc}");
    for run in [&md, &json] {
        assert!(
            !run.stdout.contains("bm90LXRoZS1jbGllbnRzLWtleQ")
                && !run.stdout.contains("rehearsal-only"),
            "no key is printed"
        );
    }
}

/// Run the window of `case` on the bed; returns the cutover's run.
async fn window(b: &Bed, case: &Case, dir: &std::path::Path) -> Run {
    let bundle = dir.join("acme");
    let bundle = bundle.to_str().unwrap();
    let html = dir.join("acme-window.html");
    match case.name {
        "done" => {
            assert_eq!(b.vpnmig(&["plan", "acme", "--out", bundle]).await.code, 0);
            let r = b
                .vpnmig(&[
                    "cutover",
                    "acme",
                    "--plan",
                    bundle,
                    "--yes",
                    "--report",
                    html.to_str().unwrap(),
                ])
                .await;
            assert_eq!(r.code, 0, "{}", r.stderr);
            r
        }
        "failed-verify" => {
            b.fault("vpngateway/tenant-acme/acme", |f| {
                f.local_ts_override = Some("10.250.0.0/16".into())
            });
            let r = b.vpnmig(&["cutover", "acme", "--yes"]).await;
            assert_eq!(r.code, 5, "{}", r.stderr);
            r
        }
        _ => {
            b.fault("vpngateway/tenant-acme/acme", |f| f.psk_mismatch = true);
            let r = b
                .vpnmig(&[
                    "cutover",
                    "acme",
                    "--yes",
                    "--timeout-tunnel",
                    "1s",
                    "--rollback-on-failure",
                ])
                .await;
            assert_eq!(r.code, 6, "{}", r.stderr);
            r
        }
    }
}

async fn kube_system_uid(b: &Bed) -> String {
    b.get(NAMESPACE, "", "kube-system")
        .await
        .expect("the cluster has kube-system")["metadata"]["uid"]
        .as_str()
        .expect("namespaces have a uid")
        .to_string()
}

/// The journal as a fixture: the `by` of each entry made stable and the chain re-linked
/// as `advance` links it.
fn write_fixture(name: &str, j: &Value) {
    let mut j: vpnmig::core::journal::Journal = serde_json::from_value(j.clone()).unwrap();
    for i in 0..j.history.len() {
        j.history[i].by = "oncall@jump-1 pid 4242".into();
        j.history[i].prev = i.checked_sub(1).map(|p| j.history[p].digest());
    }
    j.history_head = j.history.last().map(|e| e.digest());
    if let Some(p) = &mut j.approved_plan {
        p.bundle = "plans/acme".into();
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/journals")
        .join(format!("{name}.json"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(&j).unwrap() + "\n").unwrap();
}

async fn the_window_has_its_record_in_every_format(b: &Bed, case: &Case) {
    let dir = tempfile::tempdir().unwrap();
    let cutover = window(b, case, dir.path()).await;
    let what = case.name;
    assert!(
        cutover.says("record: ") && cutover.stderr.contains("vpnmig report acme -n tenant-acme"),
        "{what}: the cutover says where its record is: {}",
        cutover.stderr
    );
    let uid = kube_system_uid(b).await;

    let r = b.vpnmig(&["report", "acme", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{what}: {}", r.stderr);
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["apiVersion"], "vpnmig.bnerd.net/record/v1");
    assert_eq!(doc["outcome"], case.outcome, "{what}");
    assert_eq!(doc["chain"]["status"], "intact", "{what}: {}", doc["chain"]);
    assert_eq!(doc["cluster"]["kubeSystemUid"], uid.as_str(), "{what}");
    assert!(
        doc["cluster"]["server"]
            .as_str()
            .unwrap()
            .starts_with("https://127.0.0.1:"),
        "{what}: {}",
        doc["cluster"]
    );
    let phases: Vec<&str> = doc["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases, case.phases, "{what}");
    assert!(
        doc["checks"].as_array().is_some_and(|c| !c.is_empty()),
        "{what}"
    );
    assert!(
        doc["runBy"][0].as_str().unwrap().contains(" pid "),
        "{what}"
    );
    assert!(!doc["pinned"].as_array().unwrap().is_empty());

    for format in ["md", "html"] {
        let r = b.vpnmig(&["report", "acme", "-o", format]).await;
        assert_eq!(r.code, 0, "{what} {format}: {}", r.stderr);
        for text in [uid.as_str(), "intact (", case.phases.last().unwrap()]
            .iter()
            .chain(case.says)
        {
            assert!(
                r.stdout.contains(text),
                "{what} {format}: no {text:?} in\n{}",
                r.stdout
            );
        }
        assert!(
            !r.stdout.to_lowercase().contains("<script"),
            "{what} {format}"
        );
    }
    if case.name == "done" {
        let page = std::fs::read_to_string(dir.path().join("acme-window.html")).unwrap();
        assert!(
            page.starts_with("<!DOCTYPE html>") && page.contains(&uid),
            "{page}"
        );
    }
    // The fixtures come from one backend, the emulator's (the golden tests render
    // them; both backends writing them at once would race).
    if std::env::var_os("VPNMIG_WRITE_FIXTURES").is_some()
        && b.backend == live::bed::Backend::Emulated
    {
        write_fixture(case.name, &b.journal("tenant-acme", "acme").await.unwrap());
    }
}

async fn rollback_writes_its_record_and_an_edited_journal_breaks_the_chain(b: &Bed) {
    assert_eq!(b.vpnmig(&["cutover", "acme", "--yes"]).await.code, 0);
    // A rollback writes its record where --report says, in the extension's format.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("acme-rollback.json");
    let r = b
        .vpnmig(&[
            "rollback",
            "acme",
            "--yes",
            "--report",
            file.to_str().unwrap(),
        ])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.says(&format!("record: {}", file.display())),
        "{}",
        r.stderr
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        (&doc["outcome"], &doc["chain"]["status"]),
        (&"rolled-back".into(), &"intact".into())
    );
    // Someone rewrites who ran the delete, with markup in it.
    b.edit(CONFIGMAP, "tenant-acme", "vpnmig-acme", |cm| {
        let mut j: Value =
            serde_json::from_str(cm["data"]["journal.json"].as_str().unwrap()).unwrap();
        j["history"][2]["by"] = "<script>alert(1)</script>".into();
        cm["data"]["journal.json"] = j.to_string().into();
    })
    .await;

    for (format, says) in [
        ("md", "BROKEN: broken at entry 2 (phase deleting)"),
        ("json", r#""status": "broken""#),
        ("html", "&lt;script&gt;alert(1)&lt;/script&gt;"),
    ] {
        let r = b.vpnmig(&["report", "acme", "-o", format]).await;
        assert_eq!(r.code, 5, "{format}: {}", r.stderr);
        assert!(
            r.stdout.contains(says),
            "{format}: no {says:?} in\n{}",
            r.stdout
        );
        assert!(
            r.error()
                .unwrap()
                .contains("hash chain broken at entry 2 (phase deleting)"),
            "{}",
            r.stderr
        );
        if format == "html" {
            assert!(!r.stdout.contains("<script"), "{}", r.stdout);
        }
    }

    // No journal: the error names the ConfigMap and the command that makes one.
    let r = b.vpnmig(&["report", "nobody"]).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.error()
            .unwrap()
            .contains("ConfigMap vpnmig-nobody does not exist"),
        "{}",
        r.stderr
    );
    assert!(
        r.hint()
            .unwrap()
            .contains("`vpnmig cutover nobody -n tenant-acme`")
    );
}

async fn a_cutover_after_a_rollback_keeps_the_earlier_record(b: &Bed) {
    assert_eq!(b.vpnmig(&["cutover", "acme", "--yes"]).await.code, 0);
    let r = b.vpnmig(&["rollback", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let before: Value =
        serde_json::from_str(&b.vpnmig(&["report", "acme", "-o", "json"]).await.stdout).unwrap();
    assert_eq!(before["outcome"], "rolled-back");

    let r = b.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.says("is archived as ConfigMap tenant-acme/vpnmig-acme.window-1"),
        "{}",
        r.stderr
    );
    let cm = b
        .get(CONFIGMAP, "tenant-acme", "vpnmig-acme.window-1")
        .await
        .expect("the archive exists");
    assert_eq!(
        cm["metadata"]["labels"]["vpnmig.bnerd.net/archived-window"],
        "1"
    );
    assert!(cm["data"].get("journal.json").is_none());

    // The current record lists the earlier window; --window 1 is the rolled-back record,
    // whole: the same timeline and rollback steps as before the new cutover.
    let now: Value =
        serde_json::from_str(&b.vpnmig(&["report", "acme", "-o", "json"]).await.stdout).unwrap();
    assert_eq!(
        (&now["outcome"], &now["window"]),
        (&"done".into(), &2.into())
    );
    assert_eq!(
        now["earlierWindows"][0]["report"],
        "vpnmig report acme -n tenant-acme --window 1"
    );
    let r = b
        .vpnmig(&["report", "acme", "--window", "1", "-o", "json"])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let archived: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(archived["outcome"], "rolled-back");
    assert_eq!(archived["archived"], true);
    assert_eq!(archived["timeline"], before["timeline"]);
    assert_eq!(archived["recovery"]["steps"], before["recovery"]["steps"]);
    let md = b.vpnmig(&["report", "acme"]).await.stdout;
    assert!(md.contains("## Earlier windows"), "{md}");

    // An archive is no window under way.
    let r = b.vpnmig(&["status"]).await;
    assert!(
        !r.stdout.contains("window-1") && !r.stderr.contains("window-1"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    // A window that is not archived is named, with the ones that are.
    let r = b.vpnmig(&["report", "acme", "--window", "7"]).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.error()
            .unwrap()
            .contains("the archived windows of acme are 1"),
        "{}",
        r.stderr
    );
}
