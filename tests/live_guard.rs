//! The window guard (`--window-end`, issue 13 item 4) end to end against vpnmig-sandbox:
//! a window too short is refused with both figures and nothing changed; one long enough
//! proceeds; earlier windows' journals in the cluster change the estimate; a dry run
//! reports without refusing; a rollback only warns. Each row runs on the emulator and on
//! the real control plane (tests/live/bed.rs).

mod live;

use live::bed::{After, Bed, CONFIGMAP, Row, Scenario};
use live::{ACME, flat};
use serde_json::{Value, json};

const NS: &str = "tenant-acme";

/// RFC 3339 `secs` seconds from now.
fn from_now(secs: i64) -> String {
    (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(secs)).to_string()
}

fn acme() -> Scenario {
    Scenario::new(ACME, live::pool("10.250.3.0/24"))
}

crate::rows! {
    a_window_too_short_is_refused_with_both_figures_and_nothing_changed: Row {
        scenario: acme,
        only: None,
        after: After::acme("IPsecGateway"),
        steps: |b| Box::pin(a_window_too_short_is_refused_with_both_figures_and_nothing_changed(b)),
    },
    earlier_windows_journals_give_the_estimate: Row {
        scenario: acme,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(earlier_windows_journals_give_the_estimate(b)),
    },
    a_resume_past_the_delete_is_never_refused: Row {
        scenario: acme,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(a_resume_past_the_delete_is_never_refused(b)),
    },
}

/// A finished journal of gateway `name` (another tenant's window): a cutover of
/// `cutover` seconds and a rollback of `rollback` seconds after it, each in one run.
fn finished_journal(name: &str, cutover: i64, rollback: Option<i64>) -> Value {
    let t0 = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(48);
    let at = |s: i64| (t0 + jiff::SignedDuration::from_secs(s)).to_string();
    let mut history = vec![
        json!({"phase": "started", "at": at(0), "by": "ops@laptop pid 1"}),
        json!({"phase": "psk-detached", "at": at(1), "by": "ops@laptop pid 1"}),
        json!({"phase": "deleting", "at": at(2), "by": "ops@laptop pid 1"}),
        json!({"phase": "deleted", "at": at(cutover / 2), "by": "ops@laptop pid 1"}),
        json!({"phase": "done", "at": at(cutover), "by": "ops@laptop pid 1"}),
    ];
    let mut phase = "done";
    if let Some(r) = rollback {
        let s = cutover + 600;
        history.push(json!({"phase": "rolling-back", "at": at(s), "by": "ops@laptop pid 2"}));
        history.push(json!({"phase": "rolled-back", "at": at(s + r), "by": "ops@laptop pid 2"}));
        phase = "rolled-back";
    }
    let fip = "198.51.100.99";
    let doc = json!({
        "apiVersion": "vpnmig.bnerd.net/journal/v1",
        "namespace": NS,
        "gateway": name,
        "phase": phase,
        "oldUid": "0000",
        "specFingerprint": "sha256:0",
        "floatingIP": fip,
        "pskSecret": format!("{name}-psk"),
        "pskFingerprint": null,
        "oldManifest": {"apiVersion": "ipsec.bnerd.net/v1alpha1", "kind": "IPsecGateway",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"endpoint": {"floatingIP": fip}}},
        "targets": [
            {"apiVersion": "vpn.bnerd.net/v1alpha1", "kind": "VPNGateway",
             "metadata": {"name": name, "namespace": NS},
             "spec": {"endpoint": {"floatingIP": fip}}},
            {"apiVersion": "vpn.bnerd.net/v1alpha1", "kind": "VPNPeer",
             "metadata": {"name": name, "namespace": NS},
             "spec": {"gatewayRef": {"name": name},
                      "ipsec": {"pskSecretRef": {"name": format!("{name}-psk"), "key": "psk"}}}}
        ],
        "outageMs": cutover * 1000 / 2,
        "history": history,
    });
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": format!("vpnmig-{name}"), "namespace": NS,
                     "labels": {"app.kubernetes.io/managed-by": "vpnmig"}},
        "data": {"journal.json": serde_json::to_string(&doc).unwrap(), "phase": phase},
    })
}

async fn a_window_too_short_is_refused_with_both_figures_and_nothing_changed(b: &Bed) {
    // Default timeouts (5m each): cutover 25m + rollback 25m = 50m needed.
    let end = from_now(20 * 60);
    let r = b
        .vpnmig(&["cutover", "acme", "--yes", "--window-end", &end])
        .await;
    assert_eq!(r.code, 7, "{}", r.stderr);
    let err = flat(&r.stderr);
    for want in [
        "error: refusing to cut over acme -n tenant-acme: the window ends at",
        "(in 19m",
        "a cutover and its rollback need 50m: cutover 25m (worst case from the timeouts) + rollback 25m (worst case from the timeouts); nothing was changed",
        "at least 50m",
        // The command that works: a later window, or the guard left out.
        "--window-end END`",
        "`vpnmig cutover acme --yes`",
        "0 journal(s) of earlier windows in all namespaces",
    ] {
        assert!(err.contains(want), "missing `{want}` in\n{}", r.stderr);
    }
    b.untouched(NS, "acme").await;

    // A window that has ended.
    let r = b
        .vpnmig(&["cutover", "acme", "--yes", "--window-end", &from_now(-300)])
        .await;
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(
        flat(&r.stderr).contains("the window ended at"),
        "{}",
        r.stderr
    );
    b.untouched(NS, "acme").await;

    // A dry run reports the figures without refusing.
    let r = b
        .vpnmig(&["cutover", "acme", "--dry-run", "--window-end", &end])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let err = flat(&r.stderr);
    assert!(err.contains("✗ window guard: the window ends at"), "{err}");
    assert!(
        err.contains("dry run: a real run would be refused now"),
        "{err}"
    );
    b.untouched(NS, "acme").await;

    // Shorter timeouts lower the worst case: 1m each is 5m + 5m.
    let r = b
        .vpnmig(&[
            "cutover",
            "acme",
            "--yes",
            "--window-end",
            &end,
            "--timeout-delete",
            "1m",
            "--timeout-attach",
            "1m",
            "--timeout-tunnel",
            "1m",
        ])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let err = flat(&r.stderr);
    assert!(
        err.contains("needed 10m: cutover 5m (worst case from the timeouts) + rollback 5m (worst case from the timeouts): enough"),
        "{err}"
    );
    assert!(err.contains("(before the delete)"), "checked again: {err}");
    assert_eq!(b.journal(NS, "acme").await.unwrap()["phase"], "done");

    // A rollback with too little of the window left only warns: it is the safe direction.
    let r = b
        .vpnmig(&["rollback", "acme", "--yes", "--window-end", &from_now(60)])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let err = flat(&r.stderr);
    assert!(
        err.contains("and a rollback may need 25m: rollback 25m (worst case from the timeouts): rolling back anyway, it is the safe direction"),
        "{err}"
    );
    assert_eq!(b.journal(NS, "acme").await.unwrap()["phase"], "rolled-back");
}

async fn earlier_windows_journals_give_the_estimate(b: &Bed) {
    let end = from_now(15 * 60);
    let r = b
        .vpnmig(&["cutover", "acme", "--yes", "--window-end", &end])
        .await;
    assert_eq!(r.code, 7, "50m needed by the timeouts: {}", r.stderr);
    b.untouched(NS, "acme").await;

    // Three earlier windows: cutovers of 2m, 3m and 4m; one rolled back in 3m; one
    // interrupted and resumed (left out).
    b.put(CONFIGMAP, NS, finished_journal("beta", 120, None))
        .await;
    b.put(CONFIGMAP, NS, finished_journal("gamma", 180, Some(180)))
        .await;
    b.put(CONFIGMAP, NS, finished_journal("delta", 240, None))
        .await;
    let mut resumed = finished_journal("epsilon", 3600, None);
    let mut doc: Value =
        serde_json::from_str(resumed["data"]["journal.json"].as_str().unwrap()).unwrap();
    doc["history"][3]["by"] = json!("ops@other pid 9");
    resumed["data"]["journal.json"] = json!(doc.to_string());
    b.put(CONFIGMAP, NS, resumed).await;

    let r = b
        .vpnmig(&["cutover", "acme", "--yes", "--window-end", &end])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let err = flat(&r.stderr);
    for want in [
        "4 journal(s) of earlier windows in all namespaces: 3 cutover(s) and 1 rollback(s) measured; left out: 1 interrupted and resumed",
        "needed 7m: cutover 4m (p95 of 3 earlier windows' journals) + rollback 3m (p95 of 1 earlier window's journal): enough",
    ] {
        assert!(err.contains(want), "missing `{want}` in\n{}", r.stderr);
    }
    assert_eq!(b.journal(NS, "acme").await.unwrap()["phase"], "done");
}

async fn a_resume_past_the_delete_is_never_refused(b: &Bed) {
    // Stop the cutover after the delete: the new gateway's FIP is held elsewhere.
    b.fault("vpngateway/tenant-acme/acme", |g| {
        g.fip_held_by_other_port = true
    });
    let r = b
        .vpnmig(&["cutover", "acme", "--yes", "--timeout-attach", "1s"])
        .await;
    assert_eq!(r.code, 6, "{}", r.stderr);
    assert_eq!(b.journal(NS, "acme").await.unwrap()["phase"], "applied");
    b.operator.settings().write().unwrap().gateways.clear();
    b.operator.kick();

    // The window has ended: resuming is the way out, not refused.
    let r = b
        .vpnmig(&["cutover", "acme", "--yes", "--window-end", &from_now(-60)])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let err = flat(&r.stderr);
    assert!(
        err.contains("window guard: does not apply to a cutover resumed past the delete (journal phase applied)"),
        "{err}"
    );
    assert_eq!(b.journal(NS, "acme").await.unwrap()["phase"], "done");
}
