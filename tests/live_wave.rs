//! `vpnmig cutover|rollback -l SELECTOR | --names FILE | --plan-dir DIR` (a wave, issue 15
//! item 3), end to end on the emulator and on the real control plane (tests/live/bed.rs
//! rows): K windows at a time, a halt after F failures that leaves the rest untouched, a
//! wave killed and re-run that does nothing twice, two waves on one gateway, a wave rolled
//! back. After each row, no floating IP was released (DESIGN.md §4.1).

mod live;

use std::time::Duration;

use live::bed::{Bed, IPSECGATEWAY, LEASE, Row, Scenario, VPNGATEWAY, eventually};
use live::{Run, gateway, namespace};
use serde_json::Value;
use vpnmig_sandbox::SettingsFile;

/// `n` single-tunnel gateways `gw01…` labelled `tier=bronze`, each in its own namespace
/// `w-gw01…` when `own_namespace`, else all in `tenant-w`; FIP 192.0.2.(10+i), service
/// CIDR 10.250.(i-1).0/24.
fn fleet(n: usize, own_namespace: bool) -> String {
    let ns = |i: usize| {
        if own_namespace {
            format!("w-gw{i:02}")
        } else {
            "tenant-w".to_string()
        }
    };
    let mut docs: Vec<String> = (1..=n).map(|i| namespace(&ns(i))).collect();
    docs.sort();
    docs.dedup();
    for i in 1..=n {
        docs.push(gateway(
            &ns(i),
            &format!("gw{i:02}"),
            &format!("192.0.2.{}", 10 + i),
            i - 1,
            &["main"],
            "bronze",
        ));
    }
    docs.concat()
}

fn settings(finalizer_ms: u64) -> SettingsFile {
    let mut s = SettingsFile::default();
    s.operator.finalizer_delay_ms = finalizer_ms;
    // A re-created IPsecGateway (rollback) gets the lowest free /24: its own, when the
    // wave rolls back one at a time in the order of the CIDRs.
    s.operator.service_cidr_pool = "10.250.0.0/20".into();
    s
}

/// Three gateways; gw03 does not pin its floating IP: its plan is blocked.
fn gw03_unpinned() -> Scenario {
    let yaml = fleet(3, false).replace(
        r#"{"floatingIP":"192.0.2.13","network":"public"}"#,
        r#"{"network":"public"}"#,
    );
    Scenario::built(yaml, settings(0))
}

/// Issue 21 item 9: `bare` (two tunnels, no exposures), `solo` (one tunnel, and a VPNPeer
/// `solo-early` already names its gateway) and `fine`.
fn unauthorized_members() -> Scenario {
    let bare = gateway("tenant-w", "bare", "192.0.2.21", 1, &["hq", "branch"], "bronze")
        .replace(
            r#""exposures":[{"name":"crm","target":{"address":"crm.svc","port":443},"protocol":"TCP"}]"#,
            r#""exposures":[]"#,
        )
        .replace(r#""exposures":[{"name":"crm","virtualIP":"10.250.1.10"}]"#, r#""exposures":[]"#);
    assert!(!bare.contains("crm"), "{bare}");
    let stray = serde_json::json!({
        "apiVersion": "vpn.bnerd.net/v1alpha1", "kind": "VPNPeer",
        "metadata": {"name": "solo-early", "namespace": "tenant-w"},
        "spec": {"gatewayRef": {"name": "solo"}, "ipsec": {"peer": {"address": "203.0.113.99"},
                 "remoteSubnets": ["10.99.0.0/16"], "pskSecretRef": {"name": "solo-psk", "key": "psk"}}}
    });
    let yaml = [
        namespace("tenant-w"),
        bare,
        gateway("tenant-w", "solo", "192.0.2.22", 2, &["main"], "bronze"),
        format!("---\n{stray}\n"),
        gateway("tenant-w", "fine", "192.0.2.23", 3, &["a", "b"], "bronze"),
    ]
    .concat();
    Scenario::built(yaml, settings(0))
}

fn json(r: &Run) -> Value {
    serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("{e}: not JSON:\n{}\n{}", r.stdout, r.stderr))
}

/// `namespace/name` → result, from a wave summary.
fn results(doc: &Value) -> Vec<(String, String)> {
    doc["gateways"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                format!(
                    "{}/{}",
                    g["namespace"].as_str().unwrap(),
                    g["name"].as_str().unwrap()
                ),
                g["result"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn result_of(doc: &Value, key: &str) -> String {
    results(doc)
        .into_iter()
        .find(|(k, _)| k == key)
        .unwrap_or_else(|| panic!("no {key} in {doc}"))
        .1
}

/// (an IPsecGateway `ns/name` is live, a VPNGateway `ns/name` is live).
async fn kinds(b: &Bed, ns: &str, name: &str) -> (bool, bool) {
    (
        b.get(IPSECGATEWAY, ns, name)
            .await
            .is_some_and(|o| o["metadata"]["deletionTimestamp"].is_null()),
        b.get(VPNGATEWAY, ns, name)
            .await
            .is_some_and(|o| o["metadata"]["deletionTimestamp"].is_null()),
    )
}

/// (name, journal phase) of `gw01`…`gwNN` in `tenant-w`.
async fn phases(b: &Bed, n: usize) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for i in 1..=n {
        let name = format!("gw{i:02}");
        let phase = b.phase("tenant-w", &name).await;
        out.push((name, phase));
    }
    out
}

/// DESIGN.md §4.1 for every gateway of a wave: no floating IP was released to the pool.
fn no_fip_released(b: &Bed) {
    let fips = b.operator.floating_ips();
    assert!(
        fips.released.is_empty(),
        "{}: a floating IP was released to the pool: {:?}",
        b.backend,
        fips.released
    );
}

async fn a_wave_halts_after_max_failures_and_leaves_the_rest_untouched(b: &Bed) {
    // gw01 and gw02: the new gateway's FIP stays held by a foreign port, so the attach
    // never happens and their windows time out after the delete.
    for key in ["vpngateway/tenant-w/gw01", "vpngateway/tenant-w/gw02"] {
        b.fault(key, |f| f.fip_held_by_other_port = true);
    }
    let wave = [
        "cutover",
        "-n",
        "tenant-w",
        "-l",
        "tier=bronze",
        "--concurrency",
        "2",
        "--max-failures",
        "2",
        "--timeout-attach",
        "2s",
    ];

    // Usage and confirmation, before anything: NAME and a selection exclude each other;
    // without a terminal a wave needs --yes (exit 7), and nothing is changed.
    let r = b
        .vpnmig(&["cutover", "gw03", "-n", "tenant-w", "-l", "tier=bronze"])
        .await;
    assert_eq!(r.code, 2, "{}", r.stderr);
    let r = b.vpnmig(&wave).await;
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(r.says("without --yes"), "{}", r.stderr);
    for i in 1..=10 {
        assert!(
            b.journal("tenant-w", &format!("gw{i:02}")).await.is_none(),
            "refused: no journal"
        );
    }

    let started = std::time::Instant::now();
    let r = b
        .vpnmig(&[&wave[..], &["--yes", "-o", "json"]].concat())
        .await;
    let took = started.elapsed();
    assert_eq!(r.code, 1, "{}\n{}", r.stderr, r.stdout);
    let doc = json(&r);
    assert_eq!(doc["apiVersion"], "vpnmig.bnerd.net/wave/v1");
    assert_eq!(doc["operation"], "cutover");
    assert_eq!(doc["halted"], "max-failures");
    assert_eq!(doc["exitCode"], 1);
    assert_eq!(
        (doc["concurrency"].as_u64(), doc["maxFailures"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(doc["totals"]["gateways"], 10);
    assert_eq!(doc["totals"]["failed"], 2, "{doc}");
    for g in doc["gateways"].as_array().unwrap() {
        let name = g["name"].as_str().unwrap();
        match g["result"].as_str().unwrap() {
            "failed" => {
                assert!(["gw01", "gw02"].contains(&name), "{g}");
                assert_eq!(g["exitCode"], 6, "the attach timed out: {g}");
                assert_eq!(g["phase"], "applied", "{g}");
                assert!(
                    g["message"].as_str().unwrap().contains("FIPAttached"),
                    "{g}"
                );
            }
            // Started while the first failure was not yet the second: finished.
            "done" => {
                assert_eq!(g["phase"], "done", "{g}");
                assert!(g["outageMs"].as_u64().is_some(), "{g}");
                assert_eq!(kinds(b, "tenant-w", name).await, (false, true), "{name}");
            }
            "not-started" => {
                assert_eq!(
                    (g["phase"].clone(), g["exitCode"].clone()),
                    (Value::Null, Value::Null)
                );
                // Untouched: still an IPsecGateway, no journal, no lock.
                assert_eq!(kinds(b, "tenant-w", name).await, (true, false), "{name}");
                assert!(b.journal("tenant-w", name).await.is_none(), "{name}");
                assert!(
                    b.get(LEASE, "tenant-w", &format!("vpnmig-{name}"))
                        .await
                        .is_none()
                );
            }
            other => panic!("unexpected result {other}: {g}"),
        }
    }
    // At most two windows at a time, and the halt came early: most were never started.
    assert!(doc["totals"]["notStarted"].as_u64().unwrap() >= 6, "{doc}");
    assert!(r.says("--max-failures reached"), "{}", r.stderr);
    assert!(
        r.says("tenant-w/gw01: ✗ stopped (exit 6)"),
        "progress lines name their gateway: {}",
        r.stderr
    );
    eprintln!("a wave of 10 at concurrency 2 halted after {took:?}");
}

async fn a_wave_killed_and_run_again_resumes_and_does_nothing_twice(b: &Bed) {
    let wave = [
        "cutover",
        "-n",
        "tenant-w",
        "-l",
        "tier=bronze",
        "--concurrency",
        "2",
        "--yes",
        "-o",
        "json",
    ];
    let mut child = b.spawn(&wave);
    // SIGKILL with two done and one mid-window (its IPsecGateway being deleted).
    eventually(60, "two gateways done and one deleting", || async move {
        let p = phases(b, 6).await;
        p.iter()
            .filter(|(_, p)| p.as_deref() == Some("done"))
            .count()
            >= 2
            && p.iter().any(|(_, p)| p.as_deref() == Some("deleting"))
    })
    .await;
    child.kill().unwrap();
    let _ = live::finish(child).await;
    let after_kill = phases(b, 6).await;
    let before: Vec<String> = after_kill
        .iter()
        .filter(|(_, p)| p.as_deref() == Some("done"))
        .map(|(n, _)| n.clone())
        .collect();
    assert!(before.len() < 6, "killed mid-wave: {before:?}");
    let mid: Vec<String> = after_kill
        .iter()
        .filter(|(_, p)| p.as_deref().is_some_and(|p| p != "done"))
        .map(|(n, _)| n.clone())
        .collect();
    assert!(!mid.is_empty(), "a window was cut off mid-way");

    // The same command again: the done ones are skipped, the rest (interrupted or not
    // started) are cut over; the dead run's locks are taken over.
    let r = b.vpnmig(&wave).await;
    assert_eq!(r.code, 0, "{}\n{}", r.stderr, r.stdout);
    let doc = json(&r);
    assert_eq!(doc["halted"], Value::Null);
    for (key, result) in results(&doc) {
        let name = key.split('/').nth(1).unwrap();
        let expected = if before.iter().any(|b| b == name) {
            "skipped-done"
        } else {
            "done"
        };
        assert_eq!(result, expected, "{key}: {doc}");
        assert_eq!(b.phase("tenant-w", name).await.as_deref(), Some("done"));
        assert_eq!(kinds(b, "tenant-w", name).await, (false, true), "{name}");
    }
    assert_eq!(
        doc["totals"]["skippedDone"].as_u64(),
        Some(before.len() as u64),
        "{doc}"
    );
    // The windows cut off resumed from their journals: one journal, one delete.
    for name in &mid {
        let j = b.journal("tenant-w", name).await.unwrap();
        let deletes = j["history"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["phase"] == "deleting")
            .count();
        assert_eq!(deletes, 1, "{name}: {j}");
    }
    // A third run finds everything done.
    let r = b.vpnmig(&wave).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(json(&r)["totals"]["skippedDone"], 6);
}

async fn two_waves_on_one_gateway_one_skips_it_as_locked(b: &Bed) {
    // gw02's unwind is slow: the first wave holds its lock a few seconds.
    b.fault("ipsecgateway/tenant-w/gw02", |f| f.slow_finalizer_ms = 4000);
    let names_a = b.cwd().join("a.txt");
    std::fs::write(&names_a, "# wave A\ntenant-w/gw02\n").unwrap();
    let names_b = b.cwd().join("b.txt");
    std::fs::write(&names_b, "gw02\ngw03\n").unwrap();

    let a = b.spawn(&[
        "cutover",
        "-n",
        "tenant-w",
        "--names",
        names_a.to_str().unwrap(),
        "--yes",
        "-o",
        "json",
    ]);
    eventually(30, "wave A holds gw02's lock", || async move {
        b.phase("tenant-w", "gw02").await.as_deref() == Some("deleting")
    })
    .await;
    let wave_b = b
        .vpnmig(&[
            "cutover",
            "-n",
            "tenant-w",
            "--names",
            names_b.to_str().unwrap(),
            "--concurrency",
            "2",
            "--yes",
            "-o",
            "json",
        ])
        .await;
    let b_doc = json(&wave_b);
    assert_eq!(
        result_of(&b_doc, "tenant-w/gw02"),
        "skipped-locked",
        "{b_doc}"
    );
    assert_eq!(result_of(&b_doc, "tenant-w/gw03"), "done", "{b_doc}");
    assert_eq!(b_doc["totals"]["failed"], 0, "a held lock is not a failure");
    assert_eq!(
        wave_b.code, 7,
        "a gateway left to another run: {}",
        wave_b.stderr
    );
    let a = live::finish(a).await;
    assert_eq!(a.code, 0, "{}", a.stderr);
    assert_eq!(result_of(&json(&a), "tenant-w/gw02"), "done");
    assert_eq!(
        kinds(b, "tenant-w", "gw01").await,
        (true, false),
        "in neither wave"
    );
}

async fn a_completed_wave_of_three_is_rolled_back_as_a_wave(b: &Bed) {
    let mut gateways: Vec<(String, String, String, String)> = Vec::new();
    for i in 1..=3 {
        let (ns, name) = (format!("w-gw{i:02}"), format!("gw{i:02}"));
        let psk = b.psk_fingerprint(&ns, &format!("{name}-psk")).await;
        gateways.push((ns, name, format!("192.0.2.{}", 10 + i), psk));
    }
    let r = b
        .vpnmig(&[
            "cutover",
            "-A",
            "-l",
            "tier=bronze",
            "--concurrency",
            "3",
            "--yes",
        ])
        .await;
    assert_eq!(r.code, 0, "{}\n{}", r.stderr, r.stdout);
    assert!(
        r.stdout.contains("cutover of 3 gateway(s): 3 done"),
        "{}",
        r.stdout
    );
    for (ns, name, fip, psk) in &gateways {
        b.invariants(ns, name, fip, psk, "VPNGateway", &[name])
            .await;
    }

    // The rollback wave selects by the journals (the saved manifests' labels). One at a
    // time: each re-created IPsecGateway gets its own serviceCIDR back from the pool.
    let started = std::time::Instant::now();
    let r = b
        .vpnmig(&[
            "rollback",
            "-A",
            "-l",
            "tier=bronze",
            "--concurrency",
            "1",
            "--yes",
            "-o",
            "json",
        ])
        .await;
    assert_eq!(r.code, 0, "{}\n{}", r.stderr, r.stdout);
    let doc = json(&r);
    assert_eq!(doc["operation"], "rollback");
    assert_eq!(doc["totals"]["done"], 3, "{doc}");
    for g in doc["gateways"].as_array().unwrap() {
        assert_eq!(g["phase"], "rolled-back", "{g}");
    }
    for (ns, name, fip, psk) in &gateways {
        b.invariants(ns, name, fip, psk, "IPsecGateway", &[]).await;
        assert_eq!(b.phase(ns, name).await.as_deref(), Some("rolled-back"));
    }
    // Again: every one is rolled back already.
    let r = b
        .vpnmig(&["rollback", "-A", "-l", "tier=bronze", "--yes", "-o", "json"])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(json(&r)["totals"]["skippedDone"], 3);
    assert!(started.elapsed() < Duration::from_secs(60));
}

async fn sigterm_stops_starting_windows_and_the_running_ones_stop_safely(b: &Bed) {
    // gw01's unwind never finishes until cleared: the signal lands while it is deleting.
    b.fault("ipsecgateway/tenant-w/gw01", |f| f.stuck_finalizer = true);
    let wave = [
        "cutover",
        "-n",
        "tenant-w",
        "-l",
        "tier=bronze",
        "--concurrency",
        "2",
        "--max-failures",
        "3",
        "--yes",
        "-o",
        "json",
    ];
    let child = b.spawn(&wave);
    eventually(30, "gw01 deleting", || async move {
        b.phase("tenant-w", "gw01").await.as_deref() == Some("deleting")
    })
    .await;
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let r = live::finish(child).await;
    assert_eq!(r.code, 130, "{}\n{}", r.stderr, r.stdout);
    let doc = json(&r);
    assert_eq!(doc["halted"], "interrupted", "{doc}");
    let gw01 = &doc["gateways"][0];
    assert_eq!(
        (gw01["result"].as_str(), gw01["phase"].as_str()),
        (Some("interrupted"), Some("deleting")),
        "{gw01}"
    );
    assert!(
        b.get(LEASE, "tenant-w", "vpnmig-gw01").await.is_none(),
        "the interrupted window released its lock"
    );
    for (key, result) in results(&doc) {
        let name = key.split('/').nth(1).unwrap();
        if result == "not-started" {
            assert_eq!(kinds(b, "tenant-w", name).await, (true, false), "{name}");
            assert!(b.journal("tenant-w", name).await.is_none(), "{name}");
        }
    }
    assert!(doc["totals"]["notStarted"].as_u64().unwrap() >= 1, "{doc}");
    assert!(
        live::flat(&r.stderr).contains("run the same command again to resume it"),
        "{}",
        r.stderr
    );

    // The unwind finishes; the same command resumes gw01 and does the rest.
    b.operator.settings().write().unwrap().gateways.clear();
    b.operator.kick();
    let r = b.vpnmig(&wave).await;
    assert_eq!(r.code, 0, "{}\n{}", r.stderr, r.stdout);
    let doc = json(&r);
    assert_eq!(result_of(&doc, "tenant-w/gw01"), "done", "{doc}");
    for i in 1..=6 {
        assert_eq!(
            b.phase("tenant-w", &format!("gw{i:02}")).await.as_deref(),
            Some("done")
        );
    }
}

async fn a_wave_from_a_fleet_plan_takes_the_ready_gateways_with_their_bundles(b: &Bed) {
    let plans = b.cwd().join("plans");
    let r = b
        .vpnmig(&["plan", "-n", "tenant-w", "--out", plans.to_str().unwrap()])
        .await;
    assert_eq!(r.code, 4, "gw03 is blocked: {}", r.stdout);

    // -A and -n exclude each other (usage).
    let r = b
        .vpnmig(&[
            "cutover",
            "-A",
            "-n",
            "tenant-w",
            "-l",
            "tier=bronze",
            "--yes",
        ])
        .await;
    assert_eq!(r.code, 2, "{}", r.stderr);

    // A dry run first: no terminal, no prompt needed; every window checked, nothing changed.
    let r = b
        .vpnmig(&[
            "cutover",
            "--plan-dir",
            plans.to_str().unwrap(),
            "--dry-run",
            "-o",
            "json",
        ])
        .await;
    assert_eq!(r.code, 0, "{}\n{}", r.stderr, r.stdout);
    assert_eq!(json(&r)["totals"]["dryRun"], 2, "{}", r.stdout);
    for name in ["gw01", "gw02", "gw03"] {
        assert!(
            b.journal("tenant-w", name).await.is_none(),
            "dry run: {name}"
        );
    }

    let r = b
        .vpnmig(&[
            "cutover",
            "--plan-dir",
            plans.to_str().unwrap(),
            "--concurrency",
            "2",
            "--yes",
            "-o",
            "json",
        ])
        .await;
    assert_eq!(r.code, 0, "{}\n{}", r.stderr, r.stdout);
    let doc = json(&r);
    assert_eq!(
        results(&doc),
        [
            ("tenant-w/gw01".to_string(), "done".to_string()),
            ("tenant-w/gw02".to_string(), "done".to_string())
        ]
    );
    assert!(
        r.says("1 gateway(s) of") && r.says("are blocked"),
        "{}",
        r.stderr
    );
    // Each window was cut over from its reviewed bundle (the local copy is the bundle).
    for name in ["gw01", "gw02"] {
        let bundle = plans.join("tenant-w").join(name);
        assert!(
            r.says(&format!("bundle {}", bundle.display())),
            "{name}: {}",
            r.stderr
        );
    }
    assert_eq!(
        kinds(b, "tenant-w", "gw03").await,
        (true, false),
        "blocked: untouched"
    );
    assert!(b.journal("tenant-w", "gw03").await.is_none());
}

async fn a_failed_window_of_a_wave_rolls_back_with_rollback_on_failure(b: &Bed) {
    b.fault("vpngateway/tenant-w/gw01", |f| {
        f.fip_held_by_other_port = true
    });
    let r = b
        .vpnmig(&[
            "cutover",
            "-n",
            "tenant-w",
            "-l",
            "tier=bronze",
            "--timeout-attach",
            "2s",
            "--rollback-on-failure",
            "--yes",
        ])
        .await;
    assert_eq!(r.code, 1, "{}\n{}", r.stderr, r.stdout);
    // The table: gw01 failed and rolled back; the wave stopped after it (F = 1).
    let row = |name: &str| -> Vec<String> {
        r.stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no row {name}: {}", r.stdout))
            .split_whitespace()
            .take(4)
            .map(str::to_string)
            .collect()
    };
    assert_eq!(row("gw01"), ["tenant-w", "gw01", "failed", "rolled-back"]);
    assert_eq!(row("gw02"), ["tenant-w", "gw02", "not-started", "-"]);
    assert!(
        r.stdout
            .contains("cutover of 3 gateway(s): 1 failed, 2 not-started")
            && r.stdout
                .contains("halted: 1 failure(s) reached --max-failures 1"),
        "{}",
        r.stdout
    );
    assert!(
        r.says("--rollback-on-failure: rolling back"),
        "{}",
        r.stderr
    );
    for name in ["gw01", "gw02", "gw03"] {
        assert_eq!(kinds(b, "tenant-w", name).await, (true, false), "{name}");
    }
}

/// What happens to gw02 between the wave's plan (or first run) and its run (issue 21 item
/// 8): a stop that running the same command again cannot clear.
#[derive(Clone, Copy, Debug)]
enum Member {
    /// `--plan-dir`: its spec is edited after the plan (drift).
    Drifted,
    /// `--plan-dir`: it is deleted after the plan.
    DeletedAfterPlan,
    /// `-l`: it is deleted after a first run that took it (and stopped before it).
    DeletedBetweenRuns,
}

/// Each member's stop is named with a command for its own state; a gateway of the wave
/// that is gone is named and never dropped from the count; following the advice and
/// running the wave again finishes it (drift). One row per [`Member`].
async fn a_wave_names_a_command_per_gateway_that_running_it_again_cannot_clear(
    b: &Bed,
    row: Member,
) {
    {
        let plans = b.cwd().join("plans");
        let plan_dir = plans.to_str().unwrap().to_string();
        let wave: Vec<&str> = match row {
            Member::Drifted | Member::DeletedAfterPlan => {
                let r = b
                    .vpnmig(&["plan", "-n", "tenant-w", "--out", &plan_dir])
                    .await;
                assert_eq!(r.code, 0, "{row:?}: {}", r.stdout);
                vec![
                    "cutover",
                    "--plan-dir",
                    &plan_dir,
                    "--max-failures",
                    "3",
                    "--yes",
                    "-o",
                    "json",
                ]
            }
            Member::DeletedBetweenRuns => vec![
                "cutover",
                "-n",
                "tenant-w",
                "-l",
                "tier=bronze",
                "--max-failures",
                "3",
                "--yes",
                "-o",
                "json",
            ],
        };
        match row {
            Member::Drifted => {
                b.edit(IPSECGATEWAY, "tenant-w", "gw02", |o| {
                    o["spec"]["ike"]["lifetime"] = "8h".into();
                })
                .await;
            }
            Member::DeletedAfterPlan => {
                b.delete(IPSECGATEWAY, "tenant-w", "gw02").await;
            }
            Member::DeletedBetweenRuns => {
                // A first run that takes all three and stops before gw02: a dry run does
                // not remember, so a real run with gw01 only would not either; the wave's
                // members are remembered when it starts.
                let now = jiff::Timestamp::now()
                    .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
                    .to_string();
                for gw in ["gw02", "gw03"] {
                    let lease = serde_json::json!({
                        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                        "metadata": {"name": format!("vpnmig-{gw}"), "labels": {"app.kubernetes.io/managed-by": "vpnmig"}},
                        "spec": {"holderIdentity": "alice@laptop pid 4242", "leaseDurationSeconds": 600,
                                 "acquireTime": now, "renewTime": now},
                    });
                    b.put(LEASE, "tenant-w", lease).await;
                }
                let r = b.vpnmig(&wave).await;
                let doc = json(&r);
                assert_eq!(
                    result_of(&doc, "tenant-w/gw02"),
                    "skipped-locked",
                    "{row:?}: {}",
                    r.stdout
                );
                for gw in ["gw02", "gw03"] {
                    b.delete(LEASE, "tenant-w", &format!("vpnmig-{gw}")).await;
                }
                b.delete(IPSECGATEWAY, "tenant-w", "gw02").await;
            }
        }
        if !matches!(row, Member::Drifted) {
            eventually(20, "gw02 gone", || async move {
                kinds(b, "tenant-w", "gw02").await == (false, false)
            })
            .await;
        }
        let r = b.vpnmig(&wave).await;
        assert_eq!(r.code, 1, "{row:?}: {}\n{}", r.stdout, r.stderr);
        let doc = json(&r);
        assert_eq!(
            doc["totals"]["gateways"], 3,
            "{row:?}: gw02 is counted: {}",
            r.stdout
        );
        assert_eq!(result_of(&doc, "tenant-w/gw02"), "failed", "{row:?}");
        let gw02 = doc["gateways"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == "gw02")
            .unwrap();
        let advice = gw02["advice"]
            .as_str()
            .unwrap_or_else(|| panic!("{row:?}: no advice: {gw02}"));
        let bundle = plans.join("tenant-w").join("gw02");
        let want = match row {
            Member::Drifted => format!(
                "`vpnmig plan gw02 -n tenant-w --out {} --force`",
                bundle.display()
            ),
            Member::DeletedAfterPlan => format!(
                "`kubectl apply -f {}`",
                bundle.join("old-ipsecgateway.yaml").display()
            ),
            Member::DeletedBetweenRuns => "--names FILE".to_string(),
        };
        assert!(advice.contains(&want), "{row:?}: {advice}");
        assert!(
            r.says("tenant-w/gw02: ") && r.says(&want),
            "{row:?}: {}",
            r.stderr
        );
        // The others are done; only gw02 is not.
        for gw in ["gw01", "gw03"] {
            assert!(
                matches!(
                    result_of(&doc, &format!("tenant-w/{gw}")).as_str(),
                    "done" | "skipped-done"
                ),
                "{row:?}: {gw}"
            );
        }
        if let Member::Drifted = row {
            // The advice, followed, clears it: plan again, then the same wave.
            let r = b
                .vpnmig(&[
                    "plan",
                    "gw02",
                    "-n",
                    "tenant-w",
                    "--out",
                    bundle.to_str().unwrap(),
                    "--force",
                ])
                .await;
            assert_eq!(r.code, 0, "{}", r.stderr);
            let r = b.vpnmig(&wave).await;
            assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
            assert_eq!(result_of(&json(&r), "tenant-w/gw02"), "done");
        }
    }
}

/// Issue 21 item 9, for each member of a wave: a gateway of two tunnels that exposes
/// nothing (its VPNPeers would grant nothing on a default-deny gateway) and a
/// single-tunnel gateway whose name a VPNPeer already names (a second peer: default-deny,
/// the translated peer grants nothing) are blocked by the fleet plan, and the wave's
/// windows stop them before anything is deleted; the healthy member is cut over.
async fn the_fleet_plan_and_the_wave_block_members_the_operator_would_not_authorize(b: &Bed) {
    let r = b.vpnmig(&["plan", "-n", "tenant-w", "-o", "json"]).await;
    assert_eq!(r.code, 4, "{}\n{}", r.stdout, r.stderr);
    let doc = json(&r);
    let blocking = |name: &str| -> Value {
        doc["gateways"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == name)
            .unwrap()["blocking"]
            .clone()
    };
    assert_eq!(
        blocking("bare"),
        serde_json::json!(["authorization-grants"])
    );
    assert_eq!(
        blocking("solo"),
        serde_json::json!(["authorization-grants"])
    );
    assert_eq!(blocking("fine"), serde_json::json!([]));

    let r = b
        .vpnmig(&[
            "cutover",
            "-n",
            "tenant-w",
            "-l",
            "tier=bronze",
            "--max-failures",
            "3",
            "--yes",
            "-o",
            "json",
        ])
        .await;
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let doc = json(&r);
    assert_eq!(result_of(&doc, "tenant-w/fine"), "done", "{}", r.stdout);
    for name in ["bare", "solo"] {
        assert_eq!(
            result_of(&doc, &format!("tenant-w/{name}")),
            "failed",
            "{}",
            r.stdout
        );
        let g = doc["gateways"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == name)
            .unwrap();
        assert_eq!(g["exitCode"], 4, "{name}: {g}");
        assert_eq!(
            kinds(b, "tenant-w", name).await,
            (true, false),
            "{name}: nothing deleted or applied"
        );
    }
}

fn fleet_of(n: usize) -> Scenario {
    Scenario::built(fleet(n, false), settings(0))
}

/// A row per wave case, run on the emulator and on the real control plane; after its steps,
/// no floating IP of the fleet was released to the pool.
macro_rules! waves {
    ($( $(#[$doc:meta])* $name:ident: $scenario:expr => $steps:expr ),* $(,)?) => {
        crate::rows! {$(
            $(#[$doc])*
            $name: Row {
                scenario: $scenario,
                only: None,
                after: None,
                steps: |b| Box::pin(async move {
                    $steps(b).await;
                    no_fip_released(b);
                }),
            },
        )*}
    };
}

waves! {
    a_wave_halts_after_max_failures: || fleet_of(10)
        => a_wave_halts_after_max_failures_and_leaves_the_rest_untouched,
    /// Each window takes a while (the unwind), so the kill lands mid-wave.
    a_wave_killed_and_run_again: || Scenario::built(fleet(6, false), settings(400))
        => a_wave_killed_and_run_again_resumes_and_does_nothing_twice,
    two_waves_on_one_gateway: || fleet_of(3) => two_waves_on_one_gateway_one_skips_it_as_locked,
    a_completed_wave_rolled_back: || Scenario::built(fleet(3, true), settings(0))
        => a_completed_wave_of_three_is_rolled_back_as_a_wave,
    sigterm_stops_starting_windows: || fleet_of(6)
        => sigterm_stops_starting_windows_and_the_running_ones_stop_safely,
    a_wave_from_a_fleet_plan: gw03_unpinned
        => a_wave_from_a_fleet_plan_takes_the_ready_gateways_with_their_bundles,
    a_failed_window_rolls_back: || fleet_of(3)
        => a_failed_window_of_a_wave_rolls_back_with_rollback_on_failure,
    a_drifted_member_is_named: || fleet_of(3)
        => |b| a_wave_names_a_command_per_gateway_that_running_it_again_cannot_clear(b, Member::Drifted),
    a_member_deleted_after_the_plan_is_named: || fleet_of(3)
        => |b| a_wave_names_a_command_per_gateway_that_running_it_again_cannot_clear(b, Member::DeletedAfterPlan),
    a_member_deleted_between_runs_is_named: || fleet_of(3)
        => |b| a_wave_names_a_command_per_gateway_that_running_it_again_cannot_clear(b, Member::DeletedBetweenRuns),
    members_the_operator_would_not_authorize: unauthorized_members
        => the_fleet_plan_and_the_wave_block_members_the_operator_would_not_authorize,
}
