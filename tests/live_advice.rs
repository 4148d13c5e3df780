//! Every stop names a command that works from the state it leaves (issue 14 item 6).
//!
//! One row per stop cause: a signal at each phase of a cutover and of a rollback, each
//! operator fault knob, API faults at the moments that matter, and the refusals before
//! any change. Each row stops a window in the sandbox, then a robot operator follows the
//! advice as a person at 2 a.m. would: it takes a `vpnmig …` command quoted in the
//! message (preferring the row's direction: resume forward or roll back), runs it, and
//! repeats while the command stops with further advice, at most [`STEPS`] times. The row
//! passes when the chain ends with exit 0 in a settled state (DESIGN.md §4: one gateway
//! of one kind with the pinned FIP and the PSK, nothing orphaned, no lock) and no
//! floating IP was ever released. Each row runs on the emulator and on the real control
//! plane (tests/live/bed.rs; API faults through the fault proxy in front of
//! kube-apiserver).
//!
//! `Then::Clear` rows model a cause that goes away (the brown-out ends, the person fixes
//! the finalizer) before the advice is followed; `Then::Keep` rows follow the advice
//! with the fault still there, which only a rollback can get out of.
//!
//! The table here is the source of docs/cutover.md's recovery table: a new stop cause
//! gets a row here and a line there.

mod live;

use futures::future::BoxFuture;
use live::bed::{Bed, LEASE, Row, SECRET, Scenario, VPNGATEWAY};
use live::{ACME, Run};
use vpnmig_sandbox::SettingsFile;
use vpnmig_sandbox::api::faults::ErrorRule;
use vpnmig_sandbox::operator::settings::GatewayFaults;

/// How many advised commands the robot follows before the row fails.
const STEPS: usize = 4;

/// The window that is stopped.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Window {
    /// `cutover acme` of the untouched gateway.
    Cutover,
    /// `rollback acme` after a finished cutover.
    Rollback,
}

/// What stops it.
#[derive(Clone, Copy, Debug)]
enum Stop {
    /// SIGINT the moment the journal records this phase.
    Interrupt(&'static str),
    /// An operator fault knob on a gateway (settings key) from the start, with the flags
    /// that make its wait short.
    Operator(
        &'static str,
        fn(&mut GatewayFaults),
        &'static [&'static str],
    ),
    /// A persistent API error on (verb, resource) from the moment the journal records the
    /// phase (`None`: from the start), with the flags that bound its wait.
    Api(
        Option<&'static str>,
        &'static str,
        &'static str,
        u16,
        &'static [&'static str],
    ),
    /// Something done to the cluster before the window; the fix undoes it.
    Before(Act, Act),
    /// Something done to the cluster the moment the journal records the phase, while the
    /// window runs on; the fix undoes it.
    During(&'static str, Act, Act),
}

/// Something done to the cluster through the API (either backend).
type Act = for<'a> fn(&'a Bed) -> BoxFuture<'a, ()>;

/// Whether the cause is still there when the advice is followed.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Then {
    Clear,
    Keep,
}

/// Which advised command the robot prefers when a stop offers both.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Prefer {
    Forward,
    Back,
}

fn acme() -> Scenario {
    Scenario::new(ACME, settings())
}

fn settings() -> SettingsFile {
    let mut s = live::pool("10.250.3.0/24");
    s.operator.finalizer_delay_ms = 50;
    s.operator.peer_retry_ms = 100;
    // Every request slowed a little, so a signal lands inside the phase it is aimed at.
    s.api.latency_ms = 10;
    s
}

fn clear_faults(b: &Bed) {
    b.operator.settings().write().unwrap().gateways.clear();
    b.operator.kick();
    b.api_faults().write().unwrap().errors.clear();
}

/// Every backquoted `vpnmig …` command in `text` that can be run as written (no
/// placeholder such as DIR or NAME), as arguments without `vpnmig`.
fn advised(text: &str) -> Vec<Vec<String>> {
    live::advised(text)
        .into_iter()
        .filter(|args| {
            !args.iter().any(|a| {
                a.contains('<')
                    || a.contains('…')
                    || (a.len() > 1 && a.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
            })
        })
        .collect()
}

/// The command the robot runs next, as a person would: not one that just stopped the
/// same way (with `--yes` added, as the robot runs it); of the rest, the first of the
/// preferred direction, else the first that changes something (cutover, rollback), else
/// the first.
fn pick(advice: &[Vec<String>], prefer: Prefer, tried: &[Vec<String>]) -> Vec<String> {
    let verb = match prefer {
        Prefer::Forward => "cutover",
        Prefer::Back => "rollback",
    };
    let advice: Vec<Vec<String>> = advice
        .iter()
        .map(|a| with_yes(a.clone()))
        .filter(|a| !tried.contains(a))
        .collect();
    advice
        .iter()
        .find(|a| a[0] == verb)
        .or_else(|| {
            advice
                .iter()
                .find(|a| a[0] == "cutover" || a[0] == "rollback")
        })
        .or(advice.first())
        .cloned()
        .unwrap_or_default()
}

/// `cutover` and `rollback` need `--yes` without a terminal.
fn with_yes(mut args: Vec<String>) -> Vec<String> {
    if matches!(args[0].as_str(), "cutover" | "rollback") && !args.contains(&"--yes".into()) {
        args.push("--yes".into());
    }
    args
}

/// Start `vpnmig ARGS` in the background and return it the moment the journal records
/// phase `at` (at most 30 s).
async fn spawn_until(b: &Bed, args: &[&str], at: &str) -> std::process::Child {
    let child = b.spawn(args);
    b.until_phase("tenant-acme", "acme", at, 30).await;
    child
}

/// Run the window, stopping it at `stop`; returns the stopped run.
async fn stopped(b: &Bed, window: Window, stop: Stop) -> Run {
    let args: &[&str] = match window {
        Window::Cutover => &["cutover", "acme", "--yes"],
        Window::Rollback => &["rollback", "acme", "--yes"],
    };
    match stop {
        Stop::Interrupt(at) => {
            let child = spawn_until(b, args, at).await;
            let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
            rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
            live::finish(child).await
        }
        Stop::Operator(key, set, flags) => {
            b.fault(key, set);
            b.vpnmig(&[args, flags].concat()).await
        }
        Stop::Api(at, verb, resource, code, flags) => {
            let args = &[args, flags].concat();
            let rule = ErrorRule {
                verbs: vec![verb.into()],
                resources: vec![resource.into()],
                code,
                times: None,
                retry_after_seconds: None,
            };
            let Some(at) = at else {
                b.api_faults().write().unwrap().errors = vec![rule];
                return b.vpnmig(args).await;
            };
            let child = spawn_until(b, args, at).await;
            b.api_faults().write().unwrap().errors = vec![rule];
            live::finish(child).await
        }
        Stop::Before(break_it, _) => {
            break_it(b).await;
            b.vpnmig(args).await
        }
        Stop::During(at, break_it, _) => {
            let child = spawn_until(b, args, at).await;
            break_it(b).await;
            live::finish(child).await
        }
    }
}

/// One row: stop the window, follow the advice, assert a settled state.
async fn row(b: &Bed, window: Window, stop: Stop, then: Then, prefer: Prefer) {
    let psk = b.psk_fingerprint("tenant-acme", "acme-psk").await;
    if window == Window::Rollback {
        let r = b.vpnmig(&["cutover", "acme", "--yes"]).await;
        assert_eq!(r.code, 0, "the cutover before the rollback: {}", r.stderr);
    }
    let first = stopped(b, window, stop).await;
    let mut transcript = format!(
        "$ vpnmig {window:?} (stopped by {stop:?})\nexit {}\n{}{}",
        first.code, first.stdout, first.stderr
    );
    let mut psk = psk;
    if then == Then::Clear {
        clear_faults(b);
        if let Stop::Before(_, fix) | Stop::During(_, _, fix) = stop {
            fix(b).await;
            // A restored Secret has another uid, so another keyed fingerprint.
            psk = b.psk_fingerprint("tenant-acme", "acme-psk").await;
        }
    }
    let mut run = first;
    let mut steps = 0;
    // What the robot ran: a command that stopped the same way after the cause was
    // cleared is not run twice.
    let mut tried: Vec<Vec<String>> = Vec::new();
    while run.code != 0 {
        assert!(
            steps < STEPS,
            "still stopped after following {STEPS} advised commands:\n{transcript}"
        );
        let advice = advised(&format!("{}\n{}", run.stdout, run.stderr));
        assert!(
            !advice.is_empty(),
            "a stop (exit {}) that names no runnable vpnmig command:\n{transcript}",
            run.code
        );
        let next = pick(&advice, prefer, &tried);
        assert!(
            !next.is_empty(),
            "every command the stop names was run already and stopped the same way:\n{transcript}"
        );
        tried.push(next.clone());
        let args: Vec<&str> = next.iter().map(String::as_str).collect();
        run = b.vpnmig(&args).await;
        transcript += &format!(
            "\n$ vpnmig {}\nexit {}\n{}{}",
            args.join(" "),
            run.code,
            run.stdout,
            run.stderr
        );
        steps += 1;
    }
    // Settled: whichever kind the advice led to, the invariants hold for it.
    let kind = if b.objects(VPNGATEWAY, "tenant-acme").await.is_empty() {
        "IPsecGateway"
    } else {
        "VPNGateway"
    };
    let settled = {
        use futures::FutureExt;
        std::panic::AssertUnwindSafe(b.invariants(
            "tenant-acme",
            "acme",
            "198.51.100.23",
            &psk,
            kind,
            &["acme"],
        ))
        .catch_unwind()
        .await
    };
    assert!(settled.is_ok(), "not settled after:\n{transcript}");
    if then == Then::Keep {
        assert_eq!(
            kind, "IPsecGateway",
            "a kept fault is got out of by a rollback:\n{transcript}"
        );
    }
    let fips = b.operator.floating_ips();
    assert!(
        fips.released.is_empty(),
        "a floating IP was released to the pool: {:?}\n{transcript}",
        fips.released
    );
}

/// One row per stop, named after it (ripgrep's `rgtest!` style), run on both backends.
macro_rules! stop {
    ($name:ident, $window:ident, $stop:expr, $then:ident, $prefer:ident) => {
        crate::rows! {
            $name: Row {
                scenario: acme,
                only: None,
                after: None,
                steps: |b| Box::pin(row(b, Window::$window, $stop, Then::$then, Prefer::$prefer)),
            },
        }
    };
}

// Signals at each phase of a cutover, followed forward and back.
stop!(
    sigint_cutover_started_forward,
    Cutover,
    Stop::Interrupt("started"),
    Clear,
    Forward
);
stop!(
    sigint_cutover_psk_detached_back,
    Cutover,
    Stop::Interrupt("psk-detached"),
    Clear,
    Back
);
stop!(
    sigint_cutover_deleting_forward,
    Cutover,
    Stop::Interrupt("deleting"),
    Clear,
    Forward
);
stop!(
    sigint_cutover_deleting_back,
    Cutover,
    Stop::Interrupt("deleting"),
    Clear,
    Back
);
stop!(
    sigint_cutover_deleted_back,
    Cutover,
    Stop::Interrupt("deleted"),
    Clear,
    Back
);
stop!(
    sigint_cutover_applied_forward,
    Cutover,
    Stop::Interrupt("applied"),
    Clear,
    Forward
);
stop!(
    sigint_cutover_attached_back,
    Cutover,
    Stop::Interrupt("attached"),
    Clear,
    Back
);
stop!(
    sigint_cutover_ready_forward,
    Cutover,
    Stop::Interrupt("ready"),
    Clear,
    Forward
);
// Signals at each phase of a rollback.
stop!(
    sigint_rollback_rolling_back_back,
    Rollback,
    Stop::Interrupt("rolling-back"),
    Clear,
    Back
);
stop!(
    sigint_rollback_new_deleted_back,
    Rollback,
    Stop::Interrupt("new-deleted"),
    Clear,
    Back
);
stop!(
    sigint_rollback_old_applied_back,
    Rollback,
    Stop::Interrupt("old-applied"),
    Clear,
    Back
);
stop!(
    sigint_rollback_new_deleted_forward,
    Rollback,
    Stop::Interrupt("new-deleted"),
    Clear,
    Forward
);

// Every operator fault knob: cleared by the person, then the advice; kept, then back.
stop!(
    stuck_finalizer_on_the_old_gateway_cleared,
    Cutover,
    Stop::Operator(
        "ipsecgateway/tenant-acme/acme",
        |f| f.stuck_finalizer = true,
        &["--timeout-delete", "1s"]
    ),
    Clear,
    Forward
);
stop!(
    slow_finalizer_on_the_old_gateway_cleared,
    Cutover,
    Stop::Operator(
        "ipsecgateway/tenant-acme/acme",
        |f| f.slow_finalizer_ms = 5000,
        &["--timeout-delete", "1s"]
    ),
    Clear,
    Back
);
stop!(
    fip_held_by_another_port_kept,
    Cutover,
    Stop::Operator(
        "vpngateway/tenant-acme/acme",
        |f| f.fip_held_by_other_port = true,
        &["--timeout-attach", "1s"]
    ),
    Keep,
    Back
);
stop!(
    fip_held_by_another_port_cleared,
    Cutover,
    Stop::Operator(
        "vpngateway/tenant-acme/acme",
        |f| f.fip_held_by_other_port = true,
        &["--timeout-attach", "1s"]
    ),
    Clear,
    Forward
);
stop!(
    client_peer_never_returns_kept,
    Cutover,
    Stop::Operator(
        "vpngateway/tenant-acme/acme",
        |f| f.client_peer_never_returns = true,
        &["--timeout-tunnel", "1s"]
    ),
    Keep,
    Back
);
stop!(
    psk_mismatch_kept,
    Cutover,
    Stop::Operator(
        "vpngateway/tenant-acme/acme",
        |f| f.psk_mismatch = true,
        &["--timeout-tunnel", "1s"]
    ),
    Keep,
    Back
);
stop!(
    paused_operator_cleared,
    Cutover,
    Stop::Operator(
        "vpngateway/tenant-acme/acme",
        |f| f.paused = true,
        &["--timeout-attach", "1s"]
    ),
    Clear,
    Forward
);
stop!(
    stuck_finalizer_on_the_new_gateway_during_rollback_cleared,
    Rollback,
    Stop::Operator(
        "vpngateway/tenant-acme/acme",
        |f| f.stuck_finalizer = true,
        &["--timeout-delete", "1s"]
    ),
    Clear,
    Back
);

// API faults that outlast the retries, at the moments that matter; the brown-out ends.
stop!(
    api_503_on_the_lock_forward,
    Cutover,
    Stop::Api(None, "get", "leases", 503, &[]),
    Clear,
    Forward
);
stop!(
    api_500_on_the_delete_back,
    Cutover,
    Stop::Api(None, "delete", "ipsecgateways", 500, &[]),
    Clear,
    Back
);
stop!(
    api_503_on_the_journal_after_the_delete_forward,
    Cutover,
    Stop::Api(Some("deleted"), "patch", "configmaps", 503, &[]),
    Clear,
    Forward
);
stop!(
    api_503_on_the_journal_after_the_delete_back,
    Cutover,
    Stop::Api(Some("deleted"), "patch", "configmaps", 503, &[]),
    Clear,
    Back
);
stop!(
    api_503_on_the_apply_forward,
    Cutover,
    Stop::Api(Some("deleted"), "patch", "vpngateways", 503, &[]),
    Clear,
    Forward
);
stop!(
    api_503_on_listing_peers_in_verify_forward,
    Cutover,
    Stop::Api(
        Some("ready"),
        "list",
        "vpnpeers",
        503,
        &["--timeout-tunnel", "5s"]
    ),
    Clear,
    Forward
);
stop!(
    api_500_on_re_creating_the_old_gateway_back,
    Rollback,
    Stop::Api(Some("new-deleted"), "create", "ipsecgateways", 500, &[]),
    Clear,
    Back
);

// Refusals before any change.
fn delete_psk(b: &Bed) -> BoxFuture<'_, ()> {
    Box::pin(b.delete(SECRET, "tenant-acme", "acme-psk"))
}
/// The Secret as the person re-creates it from their records: same name, same key.
fn restore_psk(b: &Bed) -> BoxFuture<'_, ()> {
    use base64::Engine;
    let s = serde_json::json!({
        "type": "Opaque",
        "metadata": {"name": "acme-psk", "namespace": "tenant-acme"},
        "data": {"psk": base64::engine::general_purpose::STANDARD.encode("rehearsal-only-not-a-real-key")},
    });
    Box::pin(b.put(SECRET, "tenant-acme", s))
}

fn held_lock(b: &Bed) -> BoxFuture<'_, ()> {
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string();
    let lease = serde_json::json!({
        "metadata": {"name": "vpnmig-acme", "labels": {"app.kubernetes.io/managed-by": "vpnmig"}},
        "spec": {"holderIdentity": "alice@laptop pid 4242", "leaseDurationSeconds": 2,
                 "acquireTime": now, "renewTime": now},
    });
    Box::pin(b.put(LEASE, "tenant-acme", lease))
}
/// A Lease longer than vpnmig waits out, which nothing renews (attack finding: it was
/// called "another vpnmig is working on it").
fn held_long_lock(b: &Bed) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        held_lock(b).await;
        b.edit(LEASE, "tenant-acme", "vpnmig-acme", |o| {
            o["spec"]["leaseDurationSeconds"] = serde_json::json!(3600)
        })
        .await;
    })
}
fn nothing(_: &Bed) -> BoxFuture<'_, ()> {
    Box::pin(async {})
}

stop!(
    psk_secret_deleted_before_rollback_restored,
    Rollback,
    Stop::Before(delete_psk, restore_psk),
    Clear,
    Back
);
stop!(
    lock_held_by_someone_else,
    Cutover,
    Stop::Before(held_lock, nothing),
    Clear,
    Forward
);

/// The same key in a re-created Secret (new uid): not a change, the window goes on.
fn recreate_psk(b: &Bed) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        delete_psk(b).await;
        restore_psk(b).await;
    })
}
/// The PSK Secret's key `psk` set to `key` (its text; stored base64 as the server does).
async fn set_psk(b: &Bed, key: &str) {
    use base64::Engine;
    let enc = base64::engine::general_purpose::STANDARD.encode(key);
    b.edit(SECRET, "tenant-acme", "acme-psk", |o| {
        o["data"]["psk"] = serde_json::json!(enc)
    })
    .await;
}
/// Another key (a rotation during the unwind); the fix puts the client's key back.
fn rotate_psk(b: &Bed) -> BoxFuture<'_, ()> {
    Box::pin(set_psk(b, "rotated"))
}
fn unrotate_psk(b: &Bed) -> BoxFuture<'_, ()> {
    Box::pin(set_psk(b, "rehearsal-only-not-a-real-key"))
}
stop!(
    psk_secret_recreated_with_the_same_key_during_the_delete,
    Cutover,
    Stop::During("deleting", recreate_psk, nothing),
    Clear,
    Forward
);
stop!(
    psk_rotated_during_the_delete_restored_forward,
    Cutover,
    Stop::During("deleting", rotate_psk, unrotate_psk),
    Clear,
    Forward
);
stop!(
    psk_rotated_during_the_delete_restored_back,
    Cutover,
    Stop::During("deleting", rotate_psk, unrotate_psk),
    Clear,
    Back
);
stop!(
    a_long_lock_nothing_renews,
    Cutover,
    Stop::Before(held_long_lock, nothing),
    Clear,
    Forward
);

/// Attack finding: an API outage long enough that the Lease could not be renewed ended
/// the window with "lost the lock" and no command. The operator is held at the attach so
/// the window is still waiting when the lock runs out.
fn outage_during_the_attach(b: &Bed) -> BoxFuture<'_, ()> {
    b.fault("vpngateway/tenant-acme/acme", |f| f.paused = true);
    b.api_faults().write().unwrap().errors = vec![ErrorRule {
        verbs: vec!["update".into(), "get".into()],
        resources: vec!["leases".into()],
        code: 503,
        times: None,
        retry_after_seconds: None,
    }];
    Box::pin(async {})
}
stop!(
    lock_lost_in_an_outage_forward,
    Cutover,
    Stop::During("applied", outage_during_the_attach, nothing),
    Clear,
    Forward
);
stop!(
    lock_lost_in_an_outage_back,
    Cutover,
    Stop::During("applied", outage_during_the_attach, nothing),
    Clear,
    Back
);
