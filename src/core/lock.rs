//! Whether a gateway's lock (a coordination.k8s.io Lease named `vpnmig-<gateway>`) may be
//! taken, decided from what the Lease says (pure). The Kubernetes side is `cluster::lock`.

use std::time::Duration;

/// Who holds (or wants) a lock: user, host, process id and the process's pid namespace
/// (containers of one pod share a host name, not their pids). Its text form is the
/// Lease's `spec.holderIdentity`: `user@host pid 4242` or `user@host pid 4242 pidns
/// 4026531836`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    pub user: String,
    pub host: String,
    pub pid: u32,
    pub pidns: Option<u64>,
}

impl Holder {
    pub fn identity(&self) -> String {
        match self.pidns {
            Some(ns) => format!("{}@{} pid {} pidns {ns}", self.user, self.host, self.pid),
            None => format!("{}@{} pid {}", self.user, self.host, self.pid),
        }
    }

    /// Read a holderIdentity written by [`Holder::identity`]; `None` for any other text
    /// (another tool's Lease, a hand edit).
    pub fn parse(identity: &str) -> Option<Holder> {
        let (identity, pidns) = match identity.rsplit_once(" pidns ") {
            Some((rest, ns)) => (rest, Some(ns.parse().ok()?)),
            None => (identity, None),
        };
        let (who, pid) = identity.rsplit_once(" pid ")?;
        let (user, host) = who.split_once('@')?;
        Some(Holder {
            user: user.into(),
            host: host.into(),
            pid: pid.parse().ok()?,
            pidns,
        })
    }
}

/// What the Lease says now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseState {
    /// `spec.holderIdentity`; empty or absent: released.
    pub holder: Option<String>,
    /// Time since `spec.renewTime` (or `acquireTime`); `None`: never renewed.
    pub since_renew: Option<Duration>,
    pub duration: Duration,
}

/// The verdict on a Lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Nobody holds it.
    Free,
    /// Somebody held it but is gone: why we may take it over.
    Stale(String),
    /// Somebody holds it.
    Held,
}

/// Decide whether `me` may take the lock. A holder is gone when the Lease was not
/// renewed within its duration (the process stopped renewing), or when it names a process
/// on this very host, in this very pid namespace, that no longer runs (`alive` answers
/// that; a SIGKILLed vpnmig is noticed at once instead of after the lease duration).
pub fn decide(state: &LeaseState, me: &Holder, alive: impl Fn(u32) -> bool) -> Decision {
    let Some(holder) = state.holder.as_deref().filter(|h| !h.is_empty()) else {
        return Decision::Free;
    };
    match state.since_renew {
        Some(age) if age > state.duration => {
            return Decision::Stale(format!(
                "not renewed for {}s (lease duration {}s)",
                age.as_secs(),
                state.duration.as_secs()
            ));
        }
        _ => {}
    }
    if let Some(h) = Holder::parse(holder)
        && h.host == me.host
        && h.pidns.is_some()
        && h.pidns == me.pidns
        && h.pid != me.pid
        && !alive(h.pid)
    {
        return Decision::Stale(format!(
            "process {} on this host is no longer running",
            h.pid
        ));
    }
    Decision::Held
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> Holder {
        Holder {
            user: "alice".into(),
            host: "bastion".into(),
            pid: 10,
            pidns: Some(1),
        }
    }

    fn state(holder: Option<&str>, age: u64) -> LeaseState {
        LeaseState {
            holder: holder.map(str::to_string),
            since_renew: Some(Duration::from_secs(age)),
            duration: Duration::from_secs(30),
        }
    }

    #[test]
    fn identity_round_trips() {
        assert_eq!(me().identity(), "alice@bastion pid 10 pidns 1");
        assert_eq!(Holder::parse("alice@bastion pid 10 pidns 1"), Some(me()));
        assert_eq!(Holder::parse("alice@bastion pid 10").unwrap().pidns, None);
        assert_eq!(Holder::parse("kube-controller-manager"), None);
    }

    #[test]
    fn decisions() {
        let alive = |_| true;
        let dead = |_| false;
        assert_eq!(decide(&state(None, 0), &me(), alive), Decision::Free);
        assert_eq!(decide(&state(Some(""), 0), &me(), alive), Decision::Free);
        assert_eq!(
            decide(&state(Some("bob@laptop pid 7"), 5), &me(), alive),
            Decision::Held
        );
        assert_eq!(
            decide(&state(Some("bob@laptop pid 7"), 31), &me(), alive),
            Decision::Stale("not renewed for 31s (lease duration 30s)".into())
        );
        // A dead pid only means something on the same host and in the same pid namespace.
        assert_eq!(
            decide(&state(Some("bob@laptop pid 7 pidns 1"), 5), &me(), dead),
            Decision::Held
        );
        assert_eq!(
            decide(&state(Some("bob@bastion pid 7 pidns 1"), 5), &me(), dead),
            Decision::Stale("process 7 on this host is no longer running".into())
        );
        assert_eq!(
            decide(&state(Some("bob@bastion pid 7 pidns 1"), 5), &me(), alive),
            Decision::Held
        );
        // Another container of the same pod (same host name, other pid namespace), or a
        // holder that did not say which: its pid means nothing here.
        assert_eq!(
            decide(&state(Some("bob@bastion pid 7 pidns 2"), 5), &me(), dead),
            Decision::Held
        );
        assert_eq!(
            decide(&state(Some("bob@bastion pid 7"), 5), &me(), dead),
            Decision::Held
        );
    }
}
