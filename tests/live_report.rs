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

/// Gateways `kells` (re-created by its rollback, so it has the pool's serviceCIDR) and
/// `kells.window-1` (a DNS-subdomain name, which the operator accepts) in tenant-acme.
fn kells() -> Scenario {
    Scenario::built(
        [
            live::namespace("tenant-acme"),
            live::gateway(
                "tenant-acme",
                "kells",
                "198.51.100.30",
                3,
                &["main"],
                "gold",
            ),
            live::gateway(
                "tenant-acme",
                "kells.window-1",
                "198.51.100.31",
                4,
                &["main"],
                "gold",
            ),
        ]
        .concat(),
        {
            let mut s = live::pool("10.250.3.0/24");
            // May get anything, list nothing: a window's Role has no `list configmaps`.
            s.groups = vec![vpnmig_sandbox::api::auth::Group {
                name: "getters".into(),
                rules: vec![vpnmig_sandbox::api::auth::Rule::new(&["get"], &["*"])],
            }];
            s
        },
    )
}

/// The names of the objects of `kind` in tenant-acme, sorted.
async fn names(b: &Bed, kind: live::bed::Kind) -> Vec<String> {
    let mut n: Vec<String> = b
        .objects(kind, "tenant-acme")
        .await
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    n.sort();
    n
}

/// `vpnmig ARGS -o json`, parsed, after exit 0.
async fn json(b: &Bed, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let r = b.vpnmig(&all).await;
    assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", r.stdout))
}

/// Cut `gateway` over, roll it back and cut it over again: the record of its first
/// window before the second cutover, and the second cutover's run.
async fn twice(b: &Bed, gateway: &str) -> (Value, Run) {
    let r = b.vpnmig(&["cutover", gateway, "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = b.vpnmig(&["rollback", gateway, "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let before = json(b, &["report", gateway]).await;
    assert_eq!(before["outcome"], "rolled-back");
    let r = b.vpnmig(&["cutover", gateway, "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    (before, r)
}

/// `gateway`'s record says window 2, its window 1 archived in ConfigMap `archive`
/// (labelled 1), and `--window 1` prints `before` whole.
async fn second_window_with_the_first_archived(
    b: &Bed,
    gateway: &str,
    archive: &str,
    before: &Value,
) {
    let cm = b
        .get(CONFIGMAP, "tenant-acme", archive)
        .await
        .unwrap_or_else(|| panic!("no configmap {archive}"));
    assert_eq!(
        cm["metadata"]["labels"]["vpnmig.bnerd.net/archived-window"],
        "1"
    );
    assert!(cm["data"].get("journal.json").is_none());
    let now = json(b, &["report", gateway]).await;
    assert_eq!(
        (&now["outcome"], &now["window"]),
        (&"done".into(), &2.into()),
        "{now}"
    );
    assert_eq!(now["earlierWindows"].as_array().unwrap().len(), 1, "{now}");
    assert_eq!(now["earlierWindows"][0]["window"], 1, "{now}");
    assert_eq!(
        now["earlierWindows"][0]["report"],
        format!("vpnmig report {gateway} -n tenant-acme --window 1")
    );
    let archived = json(b, &["report", gateway, "--window", "1"]).await;
    assert_eq!(
        (&archived["outcome"], &archived["archived"]),
        (&"rolled-back".into(), &true.into())
    );
    assert_eq!(archived["timeline"], before["timeline"]);
    assert_eq!(archived["recovery"]["steps"], before["recovery"]["steps"]);
    // No window 2 archived, nor a window 3.
    let r = b.vpnmig(&["report", gateway, "--window", "3"]).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.error()
            .unwrap()
            .contains(&format!("the archived windows of {gateway} are 1;"))
            || r.error()
                .unwrap()
                .ends_with(&format!("the archived windows of {gateway} are 1")),
        "{}",
        r.stderr
    );
}

async fn a_gateway_named_like_an_archive_keeps_its_journal_and_the_other_its_numbers(b: &Bed) {
    // kells.window-1's own journal is vpnmig-kells.window-1.
    let r = b.vpnmig(&["cutover", "kells.window-1", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let own = json(b, &["report", "kells.window-1"]).await;
    assert_eq!(
        (&own["outcome"], &own["window"]),
        (&"done".into(), &1.into())
    );

    let (before, r) = twice(b, "kells").await;
    assert!(
        r.says("is archived as ConfigMap tenant-acme/vpnmig-kells.window-1-2"),
        "{}",
        r.stderr
    );
    second_window_with_the_first_archived(b, "kells", "vpnmig-kells.window-1-2", &before).await;

    // kells.window-1's journal is its own still, read as such.
    let cm = b
        .get(CONFIGMAP, "tenant-acme", "vpnmig-kells.window-1")
        .await
        .unwrap();
    assert!(
        cm["metadata"]["labels"]
            .get("vpnmig.bnerd.net/archived-window")
            .is_none(),
        "{cm}"
    );
    let j: Value = serde_json::from_str(cm["data"]["journal.json"].as_str().unwrap()).unwrap();
    assert_eq!(
        (&j["gateway"], &j["phase"]),
        (&"kells.window-1".into(), &"done".into())
    );
    let again = json(b, &["report", "kells.window-1"]).await;
    assert_eq!(again["timeline"], own["timeline"]);
    assert_eq!(
        (&again["outcome"], &again["window"]),
        (&"done".into(), &1.into())
    );
    assert!(
        again
            .get("earlierWindows")
            .is_none_or(|e| e.as_array().unwrap().is_empty()),
        "{again}"
    );
    // kells.window-1 has no archive: its journal is none of kells's.
    let r = b
        .vpnmig(&["report", "kells.window-1", "--window", "2"])
        .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.error()
            .unwrap()
            .contains("kells.window-1 has no archived window: the current journal is window 1"),
        "{}",
        r.stderr
    );
    // status: both done, nothing under way, no archive taken for a window or a gateway.
    let r = b.vpnmig(&["status"]).await;
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        !r.stdout.contains("window-1-2") && !r.stderr.contains("window-1-2"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    for gateway in ["kells", "kells.window-1"] {
        assert!(
            r.stdout
                .lines()
                .any(|l| l.split_whitespace().any(|w| w == gateway) && l.contains("VPNGateway")),
            "{gateway}: {}",
            r.stdout
        );
    }
    // Both ended as VPNGateways, each with its peer, no lock held.
    assert_eq!(
        names(b, live::bed::VPNGATEWAY).await,
        ["kells", "kells.window-1"]
    );
    assert!(names(b, live::bed::IPSECGATEWAY).await.is_empty());
    assert_eq!(
        names(b, live::bed::VPNPEER).await,
        ["kells", "kells.window-1"]
    );
    for gateway in ["kells", "kells.window-1"] {
        assert!(b.lease("tenant-acme", gateway).await.is_none(), "{gateway}");
    }

    // Without kells's journal (lost), its archive is found by its labels, or, by an
    // account that may not list ConfigMaps, by the names an archive takes: never
    // kells.window-1's journal, which has the first of them.
    b.delete(CONFIGMAP, "tenant-acme", "vpnmig-kells").await;
    let getter = ["--as", "nobody", "--as-group", "getters"];
    // That account may list nothing.
    let r = b
        .vpnmig(&["status", "--as", "nobody", "--as-group", "getters"])
        .await;
    assert!(
        r.code != 0 && r.says("cannot list resource"),
        "{}",
        r.stderr
    );
    for who in [&[][..], &getter[..]] {
        let mut args = vec!["report", "kells", "--window", "1"];
        args.extend(who);
        let archived = json(b, &args).await;
        assert_eq!(archived["timeline"], before["timeline"], "{who:?}");
        assert_eq!(archived["archived"], true, "{who:?}");
        let mut args = vec!["report", "kells"];
        args.extend(who);
        let r = b.vpnmig(&args).await;
        assert_eq!(r.code, 1, "{who:?}: {}", r.stderr);
        assert!(
            r.hint().unwrap_or_default().contains(
                "the cluster keeps the record of its window 1 (ConfigMap tenant-acme/vpnmig-kells.window-1-2): `vpnmig report kells -n tenant-acme --window 1` shows it"
            ),
            "{who:?}: {}",
            r.stderr
        );
        // kells.window-1's own record, read by the same account.
        let mut args = vec!["report", "kells.window-1"];
        args.extend(who);
        let own_now = json(b, &args).await;
        assert_eq!(own_now["timeline"], own["timeline"], "{who:?}");
    }
}

async fn an_archive_under_a_gateways_journal_name_is_never_its_journal(b: &Bed) {
    let (before, r) = twice(b, "kells").await;
    assert!(
        r.says("is archived as ConfigMap tenant-acme/vpnmig-kells.window-1"),
        "{}",
        r.stderr
    );
    second_window_with_the_first_archived(b, "kells", "vpnmig-kells.window-1", &before).await;

    // Gateway kells.window-1 has that name for its journal: its report and its cutover
    // say whose record it is, read nothing of it as a window, change nothing.
    let archive = b
        .get(CONFIGMAP, "tenant-acme", "vpnmig-kells.window-1")
        .await
        .unwrap();
    let gw = b
        .get(live::bed::IPSECGATEWAY, "tenant-acme", "kells.window-1")
        .await
        .unwrap();
    for args in [
        &["report", "kells.window-1"][..],
        &["cutover", "kells.window-1", "--yes"][..],
    ] {
        let r = b.vpnmig(args).await;
        assert_ne!(r.code, 0, "{args:?}: {}", r.stderr);
        assert!(
            r.error().unwrap().contains(
                "configmap/vpnmig-kells.window-1 -n tenant-acme has the name of the journal of kells.window-1 but holds the archived record of window 1 of kells"
            ),
            "{args:?}: {}",
            r.stderr
        );
        assert!(
            r.hint()
                .unwrap_or_default()
                .contains("`vpnmig report kells -n tenant-acme --window 1`")
                || args[0] == "report",
            "{args:?}: {}",
            r.stderr
        );
    }
    let after = b
        .get(CONFIGMAP, "tenant-acme", "vpnmig-kells.window-1")
        .await
        .unwrap();
    assert_eq!(after["data"], archive["data"]);
    assert_eq!(after["metadata"]["labels"], archive["metadata"]["labels"]);
    let gw_after = b
        .get(live::bed::IPSECGATEWAY, "tenant-acme", "kells.window-1")
        .await
        .unwrap();
    assert_eq!(gw_after["metadata"]["uid"], gw["metadata"]["uid"]);
    assert_eq!(gw_after["spec"], gw["spec"]);
    // kells's archive is still its window 1.
    let archived = json(b, &["report", "kells", "--window", "1"]).await;
    assert_eq!(archived["timeline"], before["timeline"]);
    assert_eq!(names(b, live::bed::VPNGATEWAY).await, ["kells"]);
    assert_eq!(names(b, live::bed::IPSECGATEWAY).await, ["kells.window-1"]);
    assert_eq!(names(b, live::bed::VPNPEER).await, ["kells"]);
    for gateway in ["kells", "kells.window-1"] {
        assert!(b.lease("tenant-acme", gateway).await.is_none(), "{gateway}");
    }
}

async fn a_configmap_squatting_on_the_archive_name_moves_the_name_not_the_number(b: &Bed) {
    assert_eq!(b.vpnmig(&["cutover", "acme", "--yes"]).await.code, 0);
    let r = b.vpnmig(&["rollback", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let before = json(b, &["report", "acme"]).await;
    // Someone's ConfigMap under the name acme's first archive would take.
    b.create_as(
        CONFIGMAP,
        "tenant-acme",
        "helm",
        serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "vpnmig-acme.window-1", "namespace": "tenant-acme"},
            "data": {"squatter": "yes"}
        }),
    )
    .await;
    // The dry run says where the archive would go.
    let r = b.vpnmig(&["cutover", "acme", "--dry-run"]).await;
    assert!(
        r.says("as window 1 in ConfigMap tenant-acme/vpnmig-acme.window-1-2"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    let r = b.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.says("is archived as ConfigMap tenant-acme/vpnmig-acme.window-1-2"),
        "{}",
        r.stderr
    );
    second_window_with_the_first_archived(b, "acme", "vpnmig-acme.window-1-2", &before).await;
    // The squatter is as it was.
    let cm = b
        .get(CONFIGMAP, "tenant-acme", "vpnmig-acme.window-1")
        .await
        .unwrap();
    assert_eq!(cm["data"], serde_json::json!({"squatter": "yes"}));
    assert!(cm["metadata"].get("labels").is_none(), "{cm}");
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
    /// T11 (issue 21 item 7): gateways `kells` and `kells.window-1` in one namespace; the
    /// name `vpnmig-kells.window-1` is kells.window-1's own journal, so kells's first
    /// archive takes another name, under its own number 1. On the code before, kells's
    /// archive was numbered 2 and its record said window 3.
    a_gateway_named_like_an_archive_keeps_its_journal_and_the_other_its_numbers: Row {
        scenario: kells,
        only: None,
        // The invariants read one gateway a namespace; the steps check both.
        after: None,
        steps: |b| Box::pin(a_gateway_named_like_an_archive_keeps_its_journal_and_the_other_its_numbers(b)),
    },
    /// T11, the other direction: kells's archive took `vpnmig-kells.window-1` first; a
    /// cutover of gateway `kells.window-1` never reads it as its journal nor overwrites it.
    an_archive_under_a_gateways_journal_name_is_never_its_journal: Row {
        scenario: kells,
        only: None,
        // The invariants read one gateway a namespace; the steps check both.
        after: None,
        steps: |b| Box::pin(an_archive_under_a_gateways_journal_name_is_never_its_journal(b)),
    },
    /// T11, another member of the kind: an unrelated ConfigMap squats on
    /// `vpnmig-acme.window-1` before the first archive. On the code before, acme's archive
    /// was numbered 2.
    a_configmap_squatting_on_the_archive_name_moves_the_name_not_the_number: Row {
        scenario: acme,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(a_configmap_squatting_on_the_archive_name_moves_the_name_not_the_number(b)),
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
    /// a21u U05a: a VPNPeer pointed at a Secret that does not exist after done.
    a_done_window_whose_peer_takes_a_missing_secret_is_not_reported_complete: Row {
        scenario: acme,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(a_done_window_whose_peer_moved_off_its_psk_is_not_reported_complete(b, Moved::MissingSecret)),
    },
    /// a21u U16a: at a key the window's Secret does not have.
    a_done_window_whose_peer_takes_a_missing_key_is_not_reported_complete: Row {
        scenario: acme,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(a_done_window_whose_peer_moved_off_its_psk_is_not_reported_complete(b, Moved::MissingKey)),
    },
    /// a21u U16b: at another Secret that exists, with another key in it.
    a_done_window_whose_peer_takes_another_secret_is_not_reported_complete: Row {
        scenario: acme,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(a_done_window_whose_peer_moved_off_its_psk_is_not_reported_complete(b, Moved::AnotherSecret)),
    },
}

/// `report acme` in markdown and JSON on a done window whose PSK is not as it left it:
/// both exit 5; the error names `state` (the start of `readAtReport.psk.state`) and
/// `fix`; the outcome is "not complete", never "complete". Returns both runs.
async fn reported_not_complete(b: &Bed, state: &str, fix: &str) -> (Run, Run) {
    let md = b.step(&["report", "acme", "-o", "md"], 5, &[]).await;
    let err = live::flat(&md.stderr);
    assert!(
        err.contains(&format!(
            "the window of tenant-acme/acme ended done, but {state}"
        )),
        "{err}"
    );
    assert!(err.contains(fix), "{err}");
    let out = live::flat(&md.stdout);
    assert!(
        out.contains("done (the journal's phase), but the cutover is not complete"),
        "{out}"
    );
    assert!(!out.contains("done: the cutover is complete"), "{out}");
    let json = b.step(&["report", "acme", "-o", "json"], 5, &[]).await;
    let doc: Value = serde_json::from_str(&json.stdout).expect("the record is JSON");
    assert!(
        doc["readAtReport"]["psk"]["state"]
            .as_str()
            .is_some_and(|s| s.starts_with(state)),
        "{doc}"
    );
    (md, json)
}

/// Where a VPNPeer is pointed, off the window's PSK Secret, after done (a21u U05a, U16).
#[derive(Clone, Copy)]
enum Moved {
    /// At a Secret that does not exist (a half-done rotation).
    MissingSecret,
    /// At a key the Secret does not have.
    MissingKey,
    /// At another Secret that exists and holds another key.
    AnotherSecret,
}

/// a21u U05a (critical): a done window whose VPNPeer takes its key from another Secret or
/// key than the window's is never "the cutover is complete": `report` (every format) and
/// a re-run of `cutover` say which object takes its key from where, with the patch that
/// points it back, and exit 5; once it points back, the record is complete again. On the
/// code before, report exited 0 with "done: the cutover is complete" and the re-run said
/// "nothing to do".
async fn a_done_window_whose_peer_moved_off_its_psk_is_not_reported_complete(b: &Bed, how: Moved) {
    b.step(&["cutover", "acme", "--yes"], 0, &[]).await;
    let (secret, key) = match how {
        Moved::MissingSecret => ("acme-ike-rotated", "psk"),
        Moved::MissingKey => ("acme-psk", "psk-2027"),
        Moved::AnotherSecret => ("acme-ike-2027", "psk"),
    };
    if let Moved::AnotherSecret = how {
        b.put(
            live::bed::SECRET,
            "tenant-acme",
            serde_json::json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": secret, "namespace": "tenant-acme"},
                "data": {"psk": "YW5vdGhlci1rZXktMjAyNw=="}}),
        )
        .await;
    }
    let point = |name: &'static str, key: &'static str| {
        move |p: &mut Value| {
            p["spec"]["ipsec"]["pskSecretRef"] = serde_json::json!({"name": name, "key": key});
        }
    };
    b.edit(
        live::bed::VPNPEER,
        "tenant-acme",
        "acme",
        point(secret, key),
    )
    .await;
    let state = format!(
        "vpnpeer/acme -n tenant-acme takes its key from secret {secret} key {key} now, not from the window's secret/acme-psk -n tenant-acme key psk"
    );
    let back = r#"kubectl patch vpnpeer acme -n tenant-acme --type merge -p '{"spec":{"ipsec":{"pskSecretRef":{"name":"acme-psk","key":"psk"}}}}'"#;
    let (md, json) = reported_not_complete(b, &state, back).await;
    b.step(&["report", "acme", "-o", "html"], 5, &[]).await;
    let again = b
        .step(&["cutover", "acme", "--yes"], 5, &[&state[..]])
        .await;
    assert!(!again.says("nothing to do"), "{}", again.stderr);
    for run in [&md, &json, &again] {
        assert!(
            !run.stdout.contains("YW5vdGhlci1rZXktMjAyNw")
                && !run.stderr.contains("YW5vdGhlci1rZXktMjAyNw"),
            "no key is printed"
        );
    }
    // Pointed back as the fix says: complete again.
    b.edit(
        live::bed::VPNPEER,
        "tenant-acme",
        "acme",
        point("acme-psk", "psk"),
    )
    .await;
    let md = b.step(&["report", "acme", "-o", "md"], 0, &[]).await;
    assert!(
        live::flat(&md.stdout).contains("done: the cutover is complete"),
        "{}",
        md.stdout
    );
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
    let fix = if gone {
        "kubectl create secret generic acme-psk -n tenant-acme --from-literal=psk=<the client's key>"
    } else {
        "put the client's key back in it"
    };
    let (md, json) = reported_not_complete(b, &state, fix).await;
    assert!(
        live::flat(&md.stderr).contains(&format!("{state}: the cutover is not complete")),
        "{}",
        md.stderr
    );
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
