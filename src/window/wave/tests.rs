//! Unit tests of the wave runner (moved out of `wave.rs` to keep it short).

use super::*;

fn report(results: &[WindowResult], halted: Option<Halt>) -> WaveReport {
    WaveReport {
        operation: Operation::Cutover,
        concurrency: 2,
        max_failures: 1,
        halted,
        gateways: results
            .iter()
            .enumerate()
            .map(|(i, r)| GatewayReport {
                namespace: "t".into(),
                name: format!("gw{i}"),
                result: *r,
                phase: None,
                outage_ms: None,
                elapsed_ms: None,
                exit_code: None,
                message: None,
                advice: None,
            })
            .collect(),
        elapsed: Duration::ZERO,
    }
}

#[test]
fn a_wave_exits_with_its_worst_result() {
    use WindowResult::*;
    for (results, halted, code) in [
        (vec![Done, SkippedDone, DryRun], None, exit::OK),
        (vec![Done, SkippedLocked], None, exit::REFUSED),
        (
            vec![Failed, NotStarted],
            Some(Halt::MaxFailures),
            exit::FAILURE,
        ),
        (vec![Failed, SkippedLocked], None, exit::FAILURE),
        (
            vec![Done, Interrupted, NotStarted],
            Some(Halt::Interrupted),
            exit::INTERRUPTED,
        ),
        (
            vec![Done, NotStarted],
            Some(Halt::Interrupted),
            exit::INTERRUPTED,
        ),
    ] {
        assert_eq!(report(&results, halted).exit_code(), code, "{results:?}");
    }
}

#[test]
fn a_held_lock_is_skipped_not_failed() {
    let held = Err(Error::Lock(LockError::Held {
        gateway: "gw".into(),
        lease: "t/vpnmig-gw".into(),
        holder: "someone".into(),
        since: "now".into(),
        renewed: "now".into(),
        seen: "renewed".into(),
    }));
    assert_eq!(judged(&held), WindowResult::SkippedLocked);
    let interrupted = Err(Error::Stop {
        code: exit::INTERRUPTED,
        message: "interrupted (SIGTERM)".into(),
        hint: None,
    });
    assert_eq!(judged(&interrupted), WindowResult::Interrupted);
    let timeout = Err(Error::Stop {
        code: exit::TIMEOUT,
        message: "timed out".into(),
        hint: None,
    });
    assert_eq!(judged(&timeout), WindowResult::Failed);
    assert_eq!(judged(&Ok(Outcome::NothingToDo)), WindowResult::SkippedDone);
}
