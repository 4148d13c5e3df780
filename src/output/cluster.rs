//! The Kubernetes layer's notices ([`Notice`]) as the lines a run writes on stderr:
//! retries, waits, the lock, the PSK Secret's guard. `cluster/` emits them; this is the
//! only place that words them.

use std::time::Duration;

use crate::cluster::{Notice, Notices};

/// Where `cli/` sends the Kubernetes layer's notices: each as its line on stderr
/// ([`super::say`]), the moment it happens.
pub fn notices() -> Notices {
    Notices::new(|n| super::say(&line(&n)))
}

/// One notice as its line.
pub fn line(n: &Notice) -> String {
    match n {
        Notice::KubeconfigMissing { path } => {
            format!("vpnmig: KUBECONFIG names {path}, which does not exist: ignored")
        }
        Notice::NoAnswer {
            verb,
            what,
            scope,
            seconds,
            attempt,
            retries,
        } => format!(
            "vpnmig: {verb} {what}{scope}: no answer within {seconds}s; trying again ({attempt}/{retries})"
        ),
        Notice::Retrying {
            verb,
            what,
            scope,
            cause,
            busy,
            wait,
            why,
            attempt,
            retries,
        } => format!(
            "vpnmig: {verb} {what}{scope} failed ({cause}); {}retrying in {} ({why}; {attempt}/{retries})",
            if *busy { "API busy, " } else { "" },
            if *wait < Duration::from_secs(1) {
                format!("{}ms", wait.as_millis())
            } else {
                format!("{}s", wait.as_secs())
            },
        ),
        Notice::RetryingIn {
            verb,
            what,
            scope,
            left,
        } => format!(
            "vpnmig: {verb} {what}{scope}: retrying in {}s",
            left.as_secs().max(1)
        ),
        Notice::Unanswered {
            server,
            verb,
            what,
            scope,
            elapsed,
            deadline,
        } => format!(
            "vpnmig: waiting for {server} to answer {verb} {what}{scope} ({}s of {}s)",
            elapsed.as_secs(),
            deadline.as_secs()
        ),
        Notice::WatchFailed { plural, cause } => {
            format!("vpnmig: watch {plural} failed ({cause}); listing again")
        }
        Notice::LockWatching {
            gateway,
            holder,
            lease,
            clock,
            to_go,
        } => format!(
            "vpnmig: gateway {gateway} is locked by {holder} (lease/{lease}{}); watching it for up to {to_go} s, by this machine's clock, to see whether it is still renewed",
            clock.as_ref().map(|n| format!(", {n}")).unwrap_or_default(),
        ),
        Notice::LockStillWatching {
            lease,
            watched,
            to_go,
        } => format!(
            "vpnmig: lease/{lease} not renewed in the {watched} s watched so far; {to_go} s to go"
        ),
        Notice::LockTakenOver { holder, why } => {
            format!("vpnmig: taking over the lock of {holder}: {why}")
        }
        Notice::LockBroken { holder } => {
            format!("vpnmig: --break-lock: taking the lock from {holder}")
        }
        Notice::LockUnread { lease, cause } => {
            format!("vpnmig: could not read the lock (Lease {lease}): {cause}")
        }
        Notice::LockNotRenewed { lease, cause } => {
            format!("vpnmig: could not renew the lock (Lease {lease}): {cause}")
        }
        Notice::PskOwnerRemoved { secret, count } => format!(
            "! PSK Secret {secret} was given an ownerReference to a gateway being deleted: removed ({count} reference(s), recorded in the journal)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each notice as the line the Kubernetes layer wrote itself before it emitted events
    /// (issue 24 item 3: the same bytes).
    #[test]
    fn each_notice_is_the_line_it_always_was() {
        fn s(x: &str) -> String {
            x.to_string()
        }
        let (verb, what, scope) = (s("get"), s("secret/acme-psk"), s(" -n tenant-acme"));
        let rows: Vec<(Notice, &str)> = vec![
            (
                Notice::KubeconfigMissing {
                    path: s("/tmp/none"),
                },
                "vpnmig: KUBECONFIG names /tmp/none, which does not exist: ignored",
            ),
            (
                Notice::NoAnswer {
                    verb: verb.clone(),
                    what: what.clone(),
                    scope: scope.clone(),
                    seconds: 30,
                    attempt: 1,
                    retries: 4,
                },
                "vpnmig: get secret/acme-psk -n tenant-acme: no answer within 30s; trying again (1/4)",
            ),
            (
                Notice::Retrying {
                    verb: verb.clone(),
                    what: what.clone(),
                    scope: scope.clone(),
                    cause: s("boom (503 ServiceUnavailable)"),
                    busy: true,
                    wait: Duration::from_millis(400),
                    why: s("backoff"),
                    attempt: 2,
                    retries: 4,
                },
                "vpnmig: get secret/acme-psk -n tenant-acme failed (boom (503 ServiceUnavailable)); API busy, retrying in 400ms (backoff; 2/4)",
            ),
            (
                Notice::Retrying {
                    verb: verb.clone(),
                    what: what.clone(),
                    scope: String::new(),
                    cause: s("connection refused to https://k"),
                    busy: false,
                    wait: Duration::from_millis(10_500),
                    why: s("Retry-After 60s, capped at 10s"),
                    attempt: 3,
                    retries: 4,
                },
                "vpnmig: get secret/acme-psk failed (connection refused to https://k); retrying in 10s (Retry-After 60s, capped at 10s; 3/4)",
            ),
            (
                Notice::RetryingIn {
                    verb: verb.clone(),
                    what: what.clone(),
                    scope: scope.clone(),
                    left: Duration::from_millis(300),
                },
                "vpnmig: get secret/acme-psk -n tenant-acme: retrying in 1s",
            ),
            (
                Notice::Unanswered {
                    server: s("https://k"),
                    verb,
                    what,
                    scope,
                    elapsed: Duration::from_millis(5_900),
                    deadline: Duration::from_secs(30),
                },
                "vpnmig: waiting for https://k to answer get secret/acme-psk -n tenant-acme (5s of 30s)",
            ),
            (
                Notice::WatchFailed {
                    plural: s("vpnpeers"),
                    cause: s("gone (410 Expired)"),
                },
                "vpnmig: watch vpnpeers failed (gone (410 Expired)); listing again",
            ),
            (
                Notice::LockWatching {
                    gateway: s("acme"),
                    holder: s("bob@bastion pid 7"),
                    lease: s("vpnmig-acme"),
                    clock: Some(s("its clock is 2m ahead")),
                    to_go: 30.0,
                },
                "vpnmig: gateway acme is locked by bob@bastion pid 7 (lease/vpnmig-acme, its clock is 2m ahead); watching it for up to 30 s, by this machine's clock, to see whether it is still renewed",
            ),
            (
                Notice::LockWatching {
                    gateway: s("acme"),
                    holder: s("bob"),
                    lease: s("vpnmig-acme"),
                    clock: None,
                    to_go: 12.0,
                },
                "vpnmig: gateway acme is locked by bob (lease/vpnmig-acme); watching it for up to 12 s, by this machine's clock, to see whether it is still renewed",
            ),
            (
                Notice::LockStillWatching {
                    lease: s("vpnmig-acme"),
                    watched: 3,
                    to_go: 27.0,
                },
                "vpnmig: lease/vpnmig-acme not renewed in the 3 s watched so far; 27 s to go",
            ),
            (
                Notice::LockTakenOver {
                    holder: s("bob"),
                    why: s("not renewed for 30 s"),
                },
                "vpnmig: taking over the lock of bob: not renewed for 30 s",
            ),
            (
                Notice::LockBroken { holder: s("bob") },
                "vpnmig: --break-lock: taking the lock from bob",
            ),
            (
                Notice::LockUnread {
                    lease: s("vpnmig-acme"),
                    cause: s("no answer within 5s"),
                },
                "vpnmig: could not read the lock (Lease vpnmig-acme): no answer within 5s",
            ),
            (
                Notice::LockNotRenewed {
                    lease: s("vpnmig-acme"),
                    cause: s("conflict (409 Conflict)"),
                },
                "vpnmig: could not renew the lock (Lease vpnmig-acme): conflict (409 Conflict)",
            ),
            (
                Notice::PskOwnerRemoved {
                    secret: s("acme-psk"),
                    count: 2,
                },
                "! PSK Secret acme-psk was given an ownerReference to a gateway being deleted: removed (2 reference(s), recorded in the journal)",
            ),
        ];
        for (notice, want) in rows {
            assert_eq!(line(&notice), want, "{notice:?}");
        }
    }
}
