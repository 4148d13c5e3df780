//! Whether a gateway's lock (a coordination.k8s.io Lease named `vpnmig-<gateway>`) may be
//! taken, decided from what the Lease says and how it changed while this machine watched
//! it (pure). The Kubernetes side, which reads the Lease and keeps the time, is
//! `cluster::lock`.
//!
//! Staleness is judged on the observer's own clock only (issue 9 item 2): the holder's
//! `renewTime` was written with the holder's clock, which may run minutes ahead of or
//! behind this one, so it is never subtracted from this machine's time. Like client-go's
//! leader election (`tools/leaderelection/leaderelection.go`: `observedRecord`,
//! `observedTime`, `isLeaseValid`), a run that finds the Lease held watches it: a change of
//! holder, `renewTime` or resourceVersion proves the holder alive; only a Lease unchanged
//! for one full lease duration, measured by this machine's monotonic clock, is stale. The
//! Lease API says the same of `leaseDurationSeconds`: "a duration that candidates for a
//! lease need to wait to force acquire it ... measured against the time of last observed
//! renewTime".
//!
//! Layer 2 (rules): imports only from layers 0 to 2; see docs/architecture.md.

use std::time::Duration;

/// The shortest watch of a held Lease, whatever duration it declares: two of a vpnmig
/// holder's renewals (every 5 s), so a live vpnmig is always seen renewing.
pub const MIN_WATCH: Duration = Duration::from_secs(10);
/// The longest: a Lease declaring a longer duration is not waited out but refused (its
/// holder may renew that rarely; `--break-lock` takes it). Keeps every wait bounded.
pub const MAX_WATCH: Duration = Duration::from_secs(300);

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

/// One read of the Lease, as this machine saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// `spec.holderIdentity`; empty or absent: released.
    pub holder: Option<String>,
    /// `spec.renewTime` (else `acquireTime`) as written, by the holder's clock: compared
    /// only with itself, for a change.
    pub renew_time: Option<String>,
    /// `metadata.resourceVersion`: any write by the holder changes it.
    pub resource_version: Option<String>,
    /// `spec.leaseDurationSeconds` (vpnmig's own when absent).
    pub duration: Duration,
    /// When this machine read it, by its monotonic clock, from the start of the watch.
    pub at: Duration,
}

impl Seen {
    fn held(&self) -> bool {
        self.holder.as_deref().is_some_and(|h| !h.is_empty())
    }

    /// The same record as `other` (holder, renewTime, resourceVersion): not renewed.
    fn same_record(&self, other: &Seen) -> bool {
        self.holder == other.holder
            && self.renew_time == other.renew_time
            && self.resource_version == other.resource_version
    }
}

/// A held Lease watched by this machine: the first read and every change seen since
/// (client-go's `observedRecord` and `observedTime`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watch {
    first: Seen,
    last: Seen,
    /// Changes of holder, renewTime or resourceVersion seen between reads.
    renewals: u32,
}

/// The verdict on a Lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Nobody holds it.
    Free,
    /// Somebody held it but is gone: why it may be taken over.
    Stale(String),
    /// Somebody holds it: what showed it.
    Held(String),
    /// Not known yet: read it again within `left` (a change decides at once).
    Watching { left: Duration },
}

/// How long to watch a held Lease that declares `duration` before calling it stale:
/// the duration itself, at least [`MIN_WATCH`]; `None` above [`MAX_WATCH`].
pub fn watch_for(duration: Duration) -> Option<Duration> {
    (duration <= MAX_WATCH).then(|| duration.max(MIN_WATCH))
}

impl Watch {
    /// Start watching from the first read.
    pub fn new(first: Seen) -> Watch {
        Watch {
            last: first.clone(),
            first,
            renewals: 0,
        }
    }

    /// Record a later read.
    pub fn see(&mut self, next: Seen) {
        if !next.same_record(&self.last) {
            self.renewals += 1;
        }
        self.last = next;
    }

    /// The latest read.
    pub fn last(&self) -> &Seen {
        &self.last
    }

    /// How long this machine has watched, by its own clock.
    pub fn watched(&self) -> Duration {
        self.last.at.saturating_sub(self.first.at)
    }

    /// Decide whether `me` may take the lock, from what was seen so far. In order:
    /// - released (no holder): free;
    /// - a holder on this very host, in this very pid namespace (its identity says so,
    ///   see [`Holder::parse`]): its process decides, whatever the times say (`alive`
    ///   answers); a live one is never taken over, a gone one (a SIGKILLed vpnmig) at once;
    /// - any change of holder, renewTime or resourceVersion while watched: held;
    /// - unchanged for [`watch_for`] the lease duration by this machine's clock: stale;
    /// - else keep watching. The holder's renewTime is never compared with this
    ///   machine's time (issue 9 item 2).
    pub fn decide(&self, me: &Holder, alive: impl Fn(u32) -> bool) -> Decision {
        let last = &self.last;
        if !last.held() {
            return Decision::Free;
        }
        if let Some(h) = last.holder.as_deref().and_then(Holder::parse)
            && h.host == me.host
            && h.pidns.is_some()
            && h.pidns == me.pidns
        {
            // This process is not the holder yet, so a holder with its pid is gone.
            return if h.pid != me.pid && alive(h.pid) {
                Decision::Held(format!(
                    "process {} runs on this host, in this pid namespace",
                    h.pid
                ))
            } else {
                Decision::Stale(format!(
                    "process {} on this host is no longer running",
                    h.pid
                ))
            };
        }
        let watched = self.watched();
        if self.renewals > 0 {
            return Decision::Held(format!(
                "renewed {} in the last {} s, watched on this machine's clock",
                times(self.renewals),
                secs_up(watched)
            ));
        }
        let Some(window) = watch_for(last.duration) else {
            return Decision::Held(format!(
                "its lease duration of {} s is longer than vpnmig waits for a Lease to expire ({} s)",
                last.duration.as_secs(),
                MAX_WATCH.as_secs()
            ));
        };
        if watched >= window {
            return Decision::Stale(format!(
                "not renewed in the {} s this machine watched it, on its own clock (lease duration {} s)",
                watched.as_secs(),
                last.duration.as_secs()
            ));
        }
        Decision::Watching {
            left: window - watched,
        }
    }
}

/// What the holder's renewTime says about the two clocks, for people only (never used to
/// decide): a renewTime in the future of this machine, or older than the lease duration.
pub fn clock_note(
    renew_time: jiff::Timestamp,
    now: jiff::Timestamp,
    duration: Duration,
) -> Option<String> {
    let ahead = renew_time.as_second() - now.as_second();
    if ahead > 0 {
        Some(format!(
            "renewTime is {ahead} s ahead of this machine's clock"
        ))
    } else if (-ahead) as u64 > duration.as_secs() {
        Some(format!(
            "renewTime is {} s behind this machine's clock",
            -ahead
        ))
    } else {
        None
    }
}

fn times(n: u32) -> String {
    match n {
        1 => "once".into(),
        n => format!("{n} times"),
    }
}

/// Whole seconds, rounded up (a watch of 0.4 s is "in the last 1 s").
fn secs_up(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
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

    const ALIVE: fn(u32) -> bool = |_| true;
    const DEAD: fn(u32) -> bool = |_| false;

    /// A read of a Lease held by `holder` (duration 30 s), with `renew` as renewTime and
    /// `rv` as resourceVersion, made `at` seconds into the watch.
    fn seen(holder: Option<&str>, renew: &str, rv: &str, at: f64) -> Seen {
        Seen {
            holder: holder.map(str::to_string),
            renew_time: Some(renew.into()),
            resource_version: Some(rv.into()),
            duration: Duration::from_secs(30),
            at: Duration::from_secs_f64(at),
        }
    }

    const BOB: &str = "bob@laptop pid 7 pidns 1";
    const T0: &str = "2026-11-29T02:04:13.000000Z";
    const T1: &str = "2026-11-29T02:04:18.000000Z";

    /// `first`, then one read per `(renewTime, resourceVersion, at)`.
    fn watch(holder: &str, reads: &[(&str, &str, f64)]) -> Watch {
        let (r, v, at) = reads[0];
        let mut w = Watch::new(seen(Some(holder), r, v, at));
        for &(r, v, at) in &reads[1..] {
            w.see(seen(Some(holder), r, v, at));
        }
        w
    }

    #[test]
    fn identity_round_trips() {
        assert_eq!(me().identity(), "alice@bastion pid 10 pidns 1");
        assert_eq!(Holder::parse("alice@bastion pid 10 pidns 1"), Some(me()));
        assert_eq!(Holder::parse("alice@bastion pid 10").unwrap().pidns, None);
        assert_eq!(Holder::parse("kube-controller-manager"), None);
    }

    #[test]
    fn a_released_lease_is_free() {
        for holder in [None, Some("")] {
            let w = Watch::new(seen(holder, T0, "1", 0.0));
            assert_eq!(w.decide(&me(), ALIVE), Decision::Free);
        }
        // Released while watched.
        let mut w = watch(BOB, &[(T0, "1", 0.0)]);
        w.see(seen(Some(""), T0, "2", 1.0));
        assert_eq!(w.decide(&me(), ALIVE), Decision::Free);
    }

    #[test]
    fn a_lease_of_another_host_is_watched_for_its_duration_before_anything_is_decided() {
        // First read: nothing is known, whatever its renewTime says.
        let w = watch(BOB, &[(T0, "1", 0.0)]);
        assert_eq!(
            w.decide(&me(), ALIVE),
            Decision::Watching {
                left: Duration::from_secs(30)
            }
        );
        let w = watch(BOB, &[(T0, "1", 0.0), (T0, "1", 29.5)]);
        assert_eq!(
            w.decide(&me(), DEAD),
            Decision::Watching {
                left: Duration::from_millis(500)
            }
        );
    }

    #[test]
    fn unchanged_for_a_full_lease_duration_on_this_clock_is_stale() {
        let w = watch(BOB, &[(T0, "1", 0.0), (T0, "1", 10.0), (T0, "1", 30.0)]);
        assert_eq!(
            w.decide(&me(), ALIVE),
            Decision::Stale(
                "not renewed in the 30 s this machine watched it, on its own clock (lease duration 30 s)"
                    .into()
            )
        );
        // The watch runs from the first read, not from the start of the clock.
        let w = watch(BOB, &[(T0, "1", 4.0), (T0, "1", 33.0)]);
        assert_eq!(
            w.decide(&me(), ALIVE),
            Decision::Watching {
                left: Duration::from_secs(1)
            }
        );
    }

    #[test]
    fn a_renewal_seen_while_watching_means_alive() {
        // renewTime changed (and with it the resourceVersion).
        let w = watch(BOB, &[(T0, "1", 0.0), (T0, "1", 1.0), (T1, "2", 2.2)]);
        assert_eq!(
            w.decide(&me(), ALIVE),
            Decision::Held("renewed once in the last 3 s, watched on this machine's clock".into())
        );
        // Only the resourceVersion changed (a holder whose clock stands still).
        let w = watch(BOB, &[(T0, "1", 0.0), (T0, "2", 5.0), (T0, "3", 10.0)]);
        assert_eq!(
            w.decide(&me(), ALIVE),
            Decision::Held(
                "renewed 2 times in the last 10 s, watched on this machine's clock".into()
            )
        );
        // Taken by a third run meanwhile: held, by the new holder.
        let mut w = watch(BOB, &[(T0, "1", 0.0)]);
        w.see(seen(Some("carol@ci pid 3"), T1, "2", 1.0));
        assert!(matches!(w.decide(&me(), ALIVE), Decision::Held(_)));
        assert_eq!(w.last().holder.as_deref(), Some("carol@ci pid 3"));
    }

    #[test]
    fn skew_ahead_or_behind_decides_nothing() {
        let now = jiff::Timestamp::from_second(1_795_000_000).unwrap();
        let ahead = now + jiff::SignedDuration::from_secs(118);
        let behind = now - jiff::SignedDuration::from_secs(120);
        // The holder's clock 118 s ahead of this machine's, 120 s behind (issue 9 item 2's
        // example: a taker whose clock runs 2 minutes ahead sees a renewTime 2 minutes
        // old, which the old rule called stale at once), or equal: the same verdicts,
        // since renewTime is only compared with itself.
        for renew in [ahead, behind, now] {
            let (r0, r1) = (
                renew.to_string(),
                (renew + jiff::SignedDuration::from_secs(5)).to_string(),
            );
            let renewed = watch(BOB, &[(&r0, "1", 0.0), (&r1, "2", 5.0)]);
            assert_eq!(
                renewed.decide(&me(), ALIVE),
                Decision::Held(
                    "renewed once in the last 5 s, watched on this machine's clock".into()
                ),
                "{renew}"
            );
            let early = watch(BOB, &[(&r0, "1", 0.0), (&r0, "1", 3.0)]);
            assert_eq!(
                early.decide(&me(), ALIVE),
                Decision::Watching {
                    left: Duration::from_secs(27)
                },
                "{renew}"
            );
            let silent = watch(BOB, &[(&r0, "1", 0.0), (&r0, "1", 31.0)]);
            assert!(
                matches!(silent.decide(&me(), ALIVE), Decision::Stale(_)),
                "{renew}"
            );
        }
    }

    #[test]
    fn a_renew_time_in_the_future_is_shown_never_used() {
        let now = jiff::Timestamp::from_second(1_795_000_000).unwrap();
        let d = Duration::from_secs(30);
        let secs = |s: i64| now + jiff::SignedDuration::from_secs(s);
        assert_eq!(
            clock_note(secs(118), now, d).as_deref(),
            Some("renewTime is 118 s ahead of this machine's clock")
        );
        assert_eq!(
            clock_note(secs(-120), now, d).as_deref(),
            Some("renewTime is 120 s behind this machine's clock")
        );
        // Within the lease duration in the past: nothing to say.
        assert_eq!(clock_note(secs(-3), now, d), None);
        assert_eq!(clock_note(now, now, d), None);
    }

    #[test]
    fn a_live_process_on_this_host_and_pid_namespace_is_never_stale() {
        let same = "bob@bastion pid 7 pidns 1";
        // Not renewed for far longer than its duration: still held while pid 7 runs.
        let w = watch(same, &[(T0, "1", 0.0), (T0, "1", 600.0)]);
        assert_eq!(
            w.decide(&me(), ALIVE),
            Decision::Held("process 7 runs on this host, in this pid namespace".into())
        );
        // A gone one (a SIGKILLed vpnmig) is taken over at once, without a watch.
        let w = watch(same, &[(T0, "1", 0.0)]);
        assert_eq!(
            w.decide(&me(), DEAD),
            Decision::Stale("process 7 on this host is no longer running".into())
        );
        // A holder with this process's own pid is an earlier process, gone.
        let w = watch("bob@bastion pid 10 pidns 1", &[(T0, "1", 0.0)]);
        assert_eq!(
            w.decide(&me(), ALIVE),
            Decision::Stale("process 10 on this host is no longer running".into())
        );
    }

    #[test]
    fn a_pid_means_nothing_on_another_host_or_pid_namespace() {
        // Another host, another container of the same pod (same host name, other pid
        // namespace), or a holder that did not say which: its pid is not looked at, the
        // Lease is watched.
        for holder in [
            "bob@laptop pid 7 pidns 1",
            "bob@bastion pid 7 pidns 2",
            "bob@bastion pid 7",
            "kube-controller-manager",
        ] {
            let w = watch(holder, &[(T0, "1", 0.0), (T0, "1", 2.0)]);
            assert_eq!(
                w.decide(&me(), DEAD),
                Decision::Watching {
                    left: Duration::from_secs(28)
                },
                "{holder}"
            );
        }
    }

    #[test]
    fn the_watch_is_bounded_by_the_declared_duration() {
        assert_eq!(
            watch_for(Duration::from_secs(30)),
            Some(Duration::from_secs(30))
        );
        assert_eq!(watch_for(Duration::from_secs(0)), Some(MIN_WATCH));
        assert_eq!(watch_for(Duration::from_secs(300)), Some(MAX_WATCH));
        assert_eq!(watch_for(Duration::from_secs(301)), None);
        let mut s = seen(Some(BOB), T0, "1", 0.0);
        s.duration = Duration::from_secs(3600);
        assert_eq!(
            Watch::new(s).decide(&me(), ALIVE),
            Decision::Held(
                "its lease duration of 3600 s is longer than vpnmig waits for a Lease to expire (300 s)"
                    .into()
            )
        );
        // A declared 2 s is watched 10 s: a vpnmig holder renews every 5 s.
        let mut s = seen(Some(BOB), T0, "1", 0.0);
        s.duration = Duration::from_secs(2);
        let mut w = Watch::new(s.clone());
        s.at = Duration::from_secs(9);
        w.see(s);
        assert_eq!(
            w.decide(&me(), ALIVE),
            Decision::Watching {
                left: Duration::from_secs(1)
            }
        );
    }
}
