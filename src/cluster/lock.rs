//! The per-gateway lock: a coordination.k8s.io/v1 Lease `vpnmig-<gateway>` whose holder
//! names user, host and pid, renewed while vpnmig runs (DESIGN.md §4.6: two people must
//! never run the same window at once). The decision is `core::lock`'s; this side reads
//! the Lease, keeps the time (this machine's monotonic clock, never the holder's
//! renewTime: issue 9 item 2) and says what it saw.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, DeleteParams, PostParams};

use super::{Cluster, KubeError, Notice};
use crate::core::lock::{Decision, Holder, Seen, Watch, clock_note};

/// How long a Lease stays valid without renewal: what vpnmig writes into
/// `spec.leaseDurationSeconds`, and how long another run watches a held Lease without
/// seeing it renewed before taking it over (`core::lock`; the watch uses the duration the
/// Lease declares, this one when it declares none).
pub const LEASE_SECONDS: i32 = 30;
/// How often a held Lease is read again while watching whether its holder renews it.
const WATCH_EVERY: Duration = Duration::from_secs(1);
/// How often the watch says how long it has watched (never silent for longer).
const SAY_EVERY: Duration = Duration::from_secs(3);
/// How often it is renewed (and how soon a lock taken or deleted by someone else stops
/// this run).
const RENEW_EVERY: Duration = Duration::from_secs(5);
/// A run that could not renew for this long stops, well before others may take it over.
const GIVE_UP_AFTER: Duration = Duration::from_secs(20);

/// Why the lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "gateway {gateway} is locked by {holder} since {since} (lease/{lease}, renewed {renewed}): {seen}"
    )]
    Held {
        gateway: String,
        lease: String,
        holder: String,
        since: String,
        renewed: String,
        /// What showed the holder alive (a renewal watched, a running process), or why
        /// that is not known (a lease longer than vpnmig waits).
        seen: String,
    },
    #[error("lost the lock on gateway {gateway}: lease/{lease} is now held by {holder}; stopped")]
    Lost {
        gateway: String,
        lease: String,
        holder: String,
    },
    #[error(transparent)]
    Kube(#[from] KubeError),
}

/// A held lock. Renewed in the background until [`Lock::release`].
pub struct Lock {
    api: Api<Lease>,
    cluster: Cluster,
    pub name: String,
    pub gateway: String,
    pub identity: String,
    /// Who took the lock, once the renewer sees it is not ours any more.
    lost: tokio::sync::watch::Receiver<Option<String>>,
    renewer: tokio::task::JoinHandle<()>,
}

/// The account name of `uid` in /etc/passwd, if listed.
fn passwd_name(uid: u32) -> Option<String> {
    std::fs::read_to_string("/etc/passwd")
        .ok()?
        .lines()
        .find_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            let id: u32 = f.nth(1)?.parse().ok()?;
            (id == uid).then(|| name.to_string())
        })
}

/// This process as a lock holder: `$USER` (else the uid), the host name, the pid.
pub fn me() -> Holder {
    // $USER, else $LOGNAME, else the account name of the uid from /etc/passwd (a
    // container or cron job often sets neither; issue 10 item 6), else the uid.
    let uid = rustix::process::getuid().as_raw();
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .ok()
        .filter(|u| !u.is_empty())
        .or_else(|| passwd_name(uid))
        .unwrap_or_else(|| format!("uid{uid}"));
    let host = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    // The pid namespace's inode: pids mean something only within one.
    let pidns = {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self/ns/pid").ok().map(|m| m.ino())
    };
    Holder {
        user,
        host,
        pid: std::process::id(),
        pidns,
    }
}

fn alive(pid: u32) -> bool {
    rustix::process::Pid::from_raw(pid as i32)
        .map(|p| {
            !matches!(
                rustix::process::test_kill_process(p),
                Err(rustix::io::Errno::SRCH)
            )
        })
        .unwrap_or(false)
}

fn now() -> MicroTime {
    MicroTime(jiff::Timestamp::now())
}

/// The Lease as read `at` into the watch (by this machine's monotonic clock).
fn seen(lease: &Lease, at: Duration) -> Seen {
    let spec = lease.spec.clone().unwrap_or_default();
    Seen {
        holder: spec.holder_identity,
        renew_time: spec
            .renew_time
            .or(spec.acquire_time)
            .map(|t| t.0.to_string()),
        resource_version: lease.metadata.resource_version.clone(),
        duration: Duration::from_secs(
            spec.lease_duration_seconds.unwrap_or(LEASE_SECONDS).max(0) as u64
        ),
        at,
    }
}

/// What the holder's renewTime says about its clock and this one, if anything (shown,
/// never used to decide).
fn clock(lease: &Lease) -> Option<String> {
    let spec = lease.spec.as_ref()?;
    let renewed = spec.renew_time.as_ref().or(spec.acquire_time.as_ref())?;
    let duration = spec.lease_duration_seconds.unwrap_or(LEASE_SECONDS).max(0) as u64;
    clock_note(
        renewed.0,
        jiff::Timestamp::now(),
        Duration::from_secs(duration),
    )
}

fn show(t: Option<&MicroTime>) -> String {
    t.map(|t| t.0.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| "<never>".into())
}

/// Whoever holds the Lease of `gateway` now, if anyone: `(holder, since)`.
pub async fn holder(
    cluster: &Cluster,
    gateway: &str,
) -> Result<Option<(String, String)>, KubeError> {
    let ns = cluster.namespace.as_str();
    let api: Api<Lease> = Api::namespaced(cluster.client.clone(), ns);
    let name = crate::core::journal::object_name(gateway);
    let lease = cluster
        .call("get", &format!("lease/{name}"), Some(ns), || {
            api.get_opt(&name)
        })
        .await?;
    Ok(lease.and_then(|l| {
        let spec = l.spec?;
        let h = spec.holder_identity.filter(|h| !h.is_empty())?;
        Some((h, show(spec.acquire_time.as_ref())))
    }))
}

/// A vpnmig Lease someone holds: the window of `gateway` in `namespace` is under way (or
/// its run was killed and the Lease not yet taken over).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldLease {
    pub namespace: String,
    pub gateway: String,
    pub holder: String,
    pub since: String,
}

/// Every held vpnmig Lease (label `app.kubernetes.io/managed-by=vpnmig`) in `namespace`,
/// or in every namespace (`None`). What finds a window whose journal lost its label or
/// was deleted (a21c attack 11): the Lease is renewed while the window runs.
pub async fn held(cluster: &Cluster, namespace: Option<&str>) -> Result<Vec<HeldLease>, KubeError> {
    use kube::api::ListParams;
    let api: Api<Lease> = match namespace {
        Some(ns) => Api::namespaced(cluster.client.clone(), ns),
        None => Api::all(cluster.client.clone()),
    };
    let lp = ListParams::default().labels("app.kubernetes.io/managed-by=vpnmig");
    let list = cluster
        .call("list", "leases (vpnmig locks)", namespace, || api.list(&lp))
        .await?;
    Ok(list
        .items
        .into_iter()
        .filter_map(|l| {
            let name = l.metadata.name?;
            let gateway = name.strip_prefix("vpnmig-")?.to_string();
            let spec = l.spec?;
            let holder = spec.holder_identity.filter(|h| !h.is_empty())?;
            Some(HeldLease {
                namespace: l.metadata.namespace.unwrap_or_default(),
                gateway,
                holder,
                since: show(spec.acquire_time.as_ref()),
            })
        })
        .collect())
}

/// Take the lock of `gateway`; `break_lock` takes it from a live holder too, without
/// watching. A held Lease is watched for up to one lease duration on this machine's clock
/// (a [`Notice`] every few seconds): a renewal seen, or a holder process running on
/// this host, refuses; a Lease unchanged for the whole duration, or a holder process on
/// this host that is gone, is taken over with a [`Notice`] (`core::lock`).
pub async fn acquire(
    cluster: &Cluster,
    gateway: &str,
    break_lock: bool,
) -> Result<Lock, LockError> {
    let ns = cluster.namespace.clone();
    let api: Api<Lease> = Api::namespaced(cluster.client.clone(), &ns);
    let name = crate::core::journal::object_name(gateway);
    let me = me();
    let identity = me.identity();
    let what = format!("lease/{name}");
    let fresh = |rv: Option<String>, transitions: i32| {
        let at = now();
        Lease {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(ns.clone()),
                resource_version: rv,
                labels: Some(
                    [(
                        "app.kubernetes.io/managed-by".to_string(),
                        "vpnmig".to_string(),
                    )]
                    .into_iter()
                    // A name too long for a label value must not make the lock fail
                    // (issue 14 item 8): the Lease's own name carries it.
                    .chain(
                        crate::core::limits::gateway_label(gateway)
                            .map(|g| ("vpnmig.bnerd.net/gateway".to_string(), g.to_string())),
                    )
                    .collect(),
                ),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(identity.clone()),
                lease_duration_seconds: Some(LEASE_SECONDS),
                acquire_time: Some(at.clone()),
                renew_time: Some(at),
                lease_transitions: Some(transitions),
                ..Default::default()
            }),
        }
    };
    let lease_name = format!("{name} -n {ns}");
    let holder_of = |lease: &Lease| {
        lease
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.clone())
            .unwrap_or_default()
    };
    'take: for _ in 0..3 {
        let existing = cluster
            .call("get", &what, Some(&ns), || api.get_opt(&name))
            .await?;
        let Some(mut lease) = existing else {
            let (lease, pp) = (fresh(None, 0), writes());
            match cluster
                .call("create", &what, Some(&ns), || api.create(&pp, &lease))
                .await
            {
                Ok(_) => return Ok(Lock::start(cluster, api, name, gateway, identity)),
                // Taken by another run in between, or our own create landed before a
                // retried error: read it again and judge.
                Err(e) if super::objects::status(&e) == Some(409) => continue,
                Err(e) => return Err(e.into()),
            }
        };
        // Watch the Lease on this machine's clock until the core decides (bounded by
        // core::lock::MAX_WATCH): a renewal proves the holder alive, a full lease duration
        // without one makes it stale.
        let started = std::time::Instant::now();
        let mut watch = Watch::new(seen(&lease, Duration::ZERO));
        let mut said: Option<std::time::Instant> = None;
        loop {
            match watch.decide(&me, alive) {
                Decision::Free => break,
                Decision::Stale(why) => {
                    cluster.notices.emit(Notice::LockTakenOver {
                        holder: holder_of(&lease),
                        why,
                    });
                    break;
                }
                _ if break_lock => {
                    cluster.notices.emit(Notice::LockBroken {
                        holder: holder_of(&lease),
                    });
                    break;
                }
                Decision::Held(why) => {
                    let spec = lease.spec.clone().unwrap_or_default();
                    // Nothing was seen renewing a lease too long to wait out: say that the
                    // holder is unverified rather than that it works (attack finding).
                    let claim = if why.starts_with("its lease duration") {
                        "whether another vpnmig still works on it is not known"
                    } else {
                        "another vpnmig is working on it"
                    };
                    let why = format!("{claim} ({why}");
                    return Err(LockError::Held {
                        gateway: gateway.into(),
                        lease: lease_name,
                        holder: holder_of(&lease),
                        since: show(spec.acquire_time.as_ref()),
                        renewed: show(spec.renew_time.as_ref()),
                        seen: match clock(&lease) {
                            Some(note) => format!("{why}; {note})"),
                            None => format!("{why})"),
                        },
                    });
                }
                Decision::Watching { left } => {
                    let to_go = left.as_secs_f64().ceil();
                    if said.is_none() {
                        cluster.notices.emit(Notice::LockWatching {
                            gateway: gateway.into(),
                            holder: holder_of(&lease),
                            lease: lease_name.clone(),
                            clock: clock(&lease),
                            to_go,
                        });
                        said = Some(std::time::Instant::now());
                    } else if said.is_some_and(|t| t.elapsed() >= SAY_EVERY) {
                        cluster.notices.emit(Notice::LockStillWatching {
                            lease: lease_name.clone(),
                            watched: watch.watched().as_secs(),
                            to_go,
                        });
                        said = Some(std::time::Instant::now());
                    }
                    tokio::time::sleep(WATCH_EVERY.min(left)).await;
                    // When the read was sent: the state it returns is at least that recent.
                    let at = started.elapsed();
                    match cluster
                        .call("get", &what, Some(&ns), || api.get_opt(&name))
                        .await?
                    {
                        Some(l) => {
                            watch.see(seen(&l, at));
                            lease = l;
                        }
                        // Deleted meanwhile: start again (create it).
                        None => continue 'take,
                    }
                }
            }
        }
        let spec = lease.spec.clone().unwrap_or_default();
        let next = fresh(
            lease.metadata.resource_version.clone(),
            spec.lease_transitions.unwrap_or(0) + 1,
        );
        // The resourceVersion makes this a compare-and-swap: two takers, one winner.
        let pp = writes();
        match cluster
            .call("update", &what, Some(&ns), || {
                api.replace(&name, &pp, &next)
            })
            .await
        {
            Ok(_) => return Ok(Lock::start(cluster, api, name, gateway, identity)),
            Err(e) if super::objects::status(&e) == Some(409) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(LockError::Kube(KubeError::Api {
        verb: "update".into(),
        scope: super::scope_of(&what, &ns),
        what,
        answer: kube::Error::Service(
            "the Lease kept changing while vpnmig tried to take it".into(),
        ),
    }))
}

impl Lock {
    fn start(
        cluster: &Cluster,
        api: Api<Lease>,
        name: String,
        gateway: &str,
        identity: String,
    ) -> Lock {
        let (tx, lost) = tokio::sync::watch::channel(None);
        let renewer = {
            let (api, name, identity) = (api.clone(), name.clone(), identity.clone());
            let notices = cluster.notices.clone();
            tokio::spawn(async move {
                let mut renewed = std::time::Instant::now();

                loop {
                    tokio::time::sleep(RENEW_EVERY).await;
                    // Bounded like every call: a hung API server must not keep the
                    // renewer from noticing that it has not renewed (RENEW_EVERY).
                    let read = tokio::time::timeout(RENEW_EVERY, api.get_opt(&name)).await;
                    let lease = match read {
                        Ok(Ok(Some(lease))) => Some(lease),
                        // Deleted under us: the lock is broken, someone else may take it.
                        Ok(Ok(None)) => {
                            let _ = tx.send(Some("nobody (the Lease was deleted)".into()));
                            return;
                        }
                        Ok(Err(e)) => {
                            notices.emit(Notice::LockUnread {
                                lease: name.clone(),
                                cause: super::describe(&e),
                            });
                            None
                        }
                        Err(_) => {
                            notices.emit(Notice::LockUnread {
                                lease: name.clone(),
                                cause: format!("no answer within {}s", RENEW_EVERY.as_secs()),
                            });
                            None
                        }
                    };
                    if let Some(mut lease) = lease {
                        let spec = lease.spec.get_or_insert_with(Default::default);
                        if spec.holder_identity.as_deref() != Some(&identity) {
                            let holder = spec
                                .holder_identity
                                .clone()
                                .unwrap_or_else(|| "nobody".into());
                            let _ = tx.send(Some(holder));
                            return;
                        }
                        spec.renew_time = Some(now());
                        let write = tokio::time::timeout(
                            RENEW_EVERY,
                            api.replace(&name, &writes(), &lease),
                        )
                        .await;
                        match write {
                            Ok(Ok(_)) => {
                                renewed = std::time::Instant::now();
                                continue;
                            }
                            Ok(Err(e)) => notices.emit(Notice::LockNotRenewed {
                                lease: name.clone(),
                                cause: super::describe(&e),
                            }),
                            Err(_) => notices.emit(Notice::LockNotRenewed {
                                lease: name.clone(),
                                cause: format!("no answer within {}s", RENEW_EVERY.as_secs()),
                            }),
                        }
                    }
                    // Not renewed for the whole lease duration: another run may rightly
                    // take it over, so this one must stop.
                    if renewed.elapsed() >= GIVE_UP_AFTER {
                        let _ = tx.send(Some(format!(
                            "nobody (it could not be renewed for {}s of its {LEASE_SECONDS}s)",
                            GIVE_UP_AFTER.as_secs()
                        )));
                        return;
                    }
                }
            })
        };
        Lock {
            api,
            cluster: cluster.clone(),
            name,
            gateway: gateway.into(),
            identity,
            lost,
            renewer,
        }
    }

    /// Still ours? Checked before every step that changes the cluster.
    pub async fn check(&self) -> Result<(), LockError> {
        let lease = self
            .cluster
            .call(
                "get",
                &format!("lease/{}", self.name),
                Some(&self.cluster.namespace),
                || self.api.get_opt(&self.name),
            )
            .await?;
        let holder = lease
            .and_then(|l| l.spec?.holder_identity)
            .unwrap_or_default();
        if self.lost.borrow().is_some() || holder != self.identity {
            return Err(LockError::Lost {
                gateway: self.gateway.clone(),
                lease: format!("{} -n {}", self.name, self.cluster.namespace),
                holder: if holder.is_empty() {
                    "nobody".into()
                } else {
                    holder
                },
            });
        }
        Ok(())
    }

    /// Resolves when the renewer finds the Lease held by someone else (`--break-lock`
    /// elsewhere): the run must stop at once, whatever it is waiting for.
    pub async fn lost(&self) -> LockError {
        let mut rx = self.lost.clone();
        let holder = match rx.wait_for(Option::is_some).await {
            Ok(h) => h.clone().unwrap_or_default(),
            // The renewer ended without losing the lock: never resolve.
            Err(_) => std::future::pending().await,
        };
        LockError::Lost {
            gateway: self.gateway.clone(),
            lease: format!("{} -n {}", self.name, self.cluster.namespace),
            holder,
        }
    }

    /// Stop renewing and delete the Lease if it is still ours.
    pub async fn release(&self) {
        self.renewer.abort();
        if let Ok(Some(lease)) = self.api.get_opt(&self.name).await
            && lease.spec.and_then(|s| s.holder_identity).as_deref() == Some(&self.identity)
        {
            let _ = self.api.delete(&self.name, &DeleteParams::default()).await;
        }
    }
}

/// The Lease's writes name vpnmig as their field manager, as every other write of
/// vpnmig's does: a real API server records it in `managedFields` (without one it
/// records `unknown`, seen on the real control plane).
fn writes() -> PostParams {
    PostParams {
        field_manager: Some(super::journal::FIELD_MANAGER.into()),
        ..Default::default()
    }
}
