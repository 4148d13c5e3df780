//! What a cutover and a rollback share: the frame around them (preflight, the lock,
//! interruption), the journal kept in step with every phase under the lock, the waits
//! with their events, and the tunnel check through the verify machinery.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Emit, Event, Stage};
use crate::cluster::lock::Lock;
use crate::cluster::{Cluster, KubeError, journal, objects, verify as fetch, watch};
use crate::core::duration::{self, Rounding};
use crate::core::journal::{Journal, Owners, Phase, PskDetach};
use crate::core::psk;
use crate::core::verify::{self, Row, Verdict};
use crate::core::wait::{self, State};
use crate::exit;
use crate::window::error::Error;

mod initiation;
mod interference;
pub(crate) mod table;
mod tunnel_wait;
mod waits;

pub use initiation::*;
pub(crate) use interference::*;
pub use tunnel_wait::*;
pub use waits::*;

/// Now, RFC 3339 UTC with milliseconds: the journal's timestamps.
pub fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// What a cutover and a rollback do around their steps: require something of the gateway
/// (`must_exist`) and every permission (not for a dry run), take the gateway's lock (not
/// for a dry run), run `flow` so that `stop` (the caller's Ctrl-C) or a lost lock stops
/// it, release the lock whatever happened, and explain an interruption.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn frame<T>(
    cluster: &Cluster,
    name: &str,
    dry_run: bool,
    break_lock: bool,
    must_exist: bool,
    action: &str,
    ev: &dyn Emit,
    stop: impl std::future::Future<Output = Error>,
    flow: impl for<'a> AsyncFnOnce(Option<&'a Lock>) -> Result<T, Error>,
) -> Result<T, Error> {
    ev.emit(Event::Stage(Stage::Preflight));
    let held = async {
        // Something of the gateway must be there (else the namespace or the name is
        // wrong: say so, not fail on creating the Lease; issue 10 item 2).
        if must_exist {
            require_something(cluster, name).await?;
        }
        // Every permission the window needs, before the lock or any prompt (issue 10
        // item 3): a window that cannot finish must not start.
        if !dry_run {
            require_permissions(cluster, action).await?;
        }
        Ok::<_, Error>(if dry_run {
            None
        } else {
            ev.emit(Event::Stage(Stage::Lock));
            Some(crate::cluster::lock::acquire(cluster, name, break_lock).await?)
        })
    }
    .await
    .map_err(before_any_change)?;
    let result = interruptible(flow(held.as_ref()), held.as_ref(), stop).await;
    if let Some(l) = &held {
        l.release().await;
    }
    after_interrupt(cluster, name, result).await
}

/// A failure before the lock is held has changed nothing. When the API server gave no
/// verdict, say so and name the command that works once it answers: the same one
/// (issue 14 item 6).
pub fn before_any_change(e: Error) -> Error {
    match e {
        Error::Cluster(k) | Error::Lock(crate::cluster::lock::LockError::Kube(k))
            if k.no_answer() =>
        {
            Error::Stop {
                code: exit::FAILURE,
                message: format!("{k}; nothing was changed"),
                hint: Some(crate::window::error::hint!(
                    "{}run the same command again once the API server answers: `{}`",
                    k.hint().map(|h| format!("{h}; then ")).unwrap_or_default(),
                    crate::window::error::Next::again(&[])
                )),
            }
        }
        e => e,
    }
}

/// How the stop of a window whose gateway is gone (no IPsecGateway, VPNGateway or
/// journal) begins: the wave names such a member with its own advice.
pub(crate) const GONE: &str = "no IPsecGateway, VPNGateway or journal named";

/// The gateway `name` exists in the namespace as either kind, or a journal of it does;
/// else a not-found error with the `-n` hint (and the bundle this machine has, if any).
pub(crate) async fn require_something(cluster: &Cluster, name: &str) -> Result<(), Error> {
    let ns = cluster.namespace.as_str();
    for kind in ["IPsecGateway", "VPNGateway"] {
        if objects::get(cluster, kind, name).await?.is_some() {
            return Ok(());
        }
    }
    if journal::read(cluster, name).await?.is_some() {
        return Ok(());
    }
    let e = cluster
        .not_found(format!("{GONE} {name}: gateway {name}"))
        .await;
    // This machine's bundle, else the record the cluster archived of an earlier window
    // (a21g 09: "not found" alone).
    let hint = match crate::state::lost_journal_hint(&cluster.server, ns, name) {
        Some(hint) => Some(hint),
        None => crate::cluster::journal::archive_hint(cluster, name).await,
    };
    Err(match hint {
        Some(hint) => Error::Stop {
            code: exit::FAILURE,
            message: e.to_string(),
            hint: Some(hint.into()),
        },
        None => e.into(),
    })
}

/// Who this run is, for the journal's history: the lock holder's identity (or, for a dry
/// run, which holds no lock, the one it would have).
pub(crate) fn identity(held: Option<&Lock>) -> String {
    held.map(|l| l.identity.clone())
        .unwrap_or_else(|| crate::cluster::lock::me().identity())
}

/// A cutover or rollback in progress: the cluster, the journal, the lock.
pub(crate) struct Window<'a> {
    pub cluster: &'a Cluster,
    /// Where the steps report.
    pub ev: &'a dyn Emit,
    pub journal: Journal,
    pub lock: Option<&'a Lock>,
    /// The lock holder's identity, written into the journal's history.
    pub by: String,
}

impl Window<'_> {
    /// Record `phase` in the journal in the cluster, after checking the lock is still ours.
    pub(crate) async fn save(&mut self, phase: Phase) -> Result<(), Error> {
        if let Some(lock) = self.lock {
            lock.check().await?;
        }
        self.journal.advance(phase, &now(), &self.by);
        journal::write(self.cluster, &self.journal, false).await?;
        self.ev.emit(Event::Recorded { phase });
        Ok(())
    }

    /// Note the failure in the journal (best effort: the run is stopping anyway).
    pub(crate) async fn record_error(&mut self, message: &str) {
        // A run that lost the lock must not write over the new holder's journal.
        if let Some(lock) = self.lock
            && lock.check().await.is_err()
        {
            return;
        }
        self.journal.last_error = Some(message.to_string());
        let _ = journal::write(self.cluster, &self.journal, false).await;
    }

    /// Remove the PSK Secret's ownerReferences to `owners` (`from` names them for the
    /// message), recording them in the journal: a Secret owned by something vpnmig is
    /// about to delete would be garbage-collected with it (DESIGN.md §4.2).
    pub(crate) async fn detach_psk(&mut self, owners: &Owners, from: &str) -> Result<(), Error> {
        let secret = self.journal.psk_secret.clone();
        let Some(s) = objects::secret(self.cluster, &secret).await? else {
            return Ok(());
        };
        let (removed, kept) = owners.split(&s);
        if removed.is_empty() {
            return Ok(());
        }
        self.check_lock().await?;
        let rv = s
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        objects::set_owner_references(self.cluster, &secret, rv, &kept, false).await?;
        self.ev.emit(Event::Step(format!(
            "PSK Secret {secret} detached from {from} ({} ownerReference(s) removed, recorded in the journal)",
            removed.len()
        )));
        self.record_detach(removed);
        Ok(())
    }

    /// Run a deletion wait while a watch keeps the PSK Secret free of ownerReferences to
    /// `owners`; what it removed goes into the journal.
    pub(crate) async fn guarded(
        &mut self,
        owners: &Owners,
        wait: impl std::future::Future<Output = Result<Result<(), String>, KubeError>>,
    ) -> Result<Result<(), String>, Error> {
        let removed = std::sync::Mutex::new(Vec::new());
        let outcome = {
            let guard =
                objects::guard_psk(self.cluster, &self.journal.psk_secret, owners, &removed);
            tokio::select! {
                r = wait => r.map_err(Error::from),
                e = guard => Err(e.into()),
            }
        };
        self.record_detach(removed.into_inner().expect("not poisoned"));
        outcome
    }

    fn record_detach(&mut self, removed: Vec<Value>) {
        if removed.is_empty() {
            return;
        }
        let record = self.journal.psk_detached.get_or_insert_with(|| PskDetach {
            secret: self.journal.psk_secret.clone(),
            removed_owner_references: Vec::new(),
        });
        record.removed_owner_references.extend(removed);
    }

    /// Check the lock is still ours before a change.
    pub(crate) async fn check_lock(&self) -> Result<(), Error> {
        if let Some(lock) = self.lock {
            lock.check().await?;
        }
        Ok(())
    }

    pub(crate) fn ns(&self) -> &str {
        &self.cluster.namespace
    }

    pub(crate) fn name(&self) -> &str {
        &self.journal.gateway
    }

    /// The time the delete of the old gateway was sent, from the journal's history.
    pub(crate) fn delete_sent(&self) -> Option<jiff::Timestamp> {
        self.journal
            .history
            .iter()
            .rev()
            .find(|e| e.phase == Phase::Deleting)
            .and_then(|e| e.at.parse().ok())
    }
}

/// After a gateway is gone: the PSK Secret is still there, with the same key (its
/// fingerprint, never its value).
pub(crate) async fn check_psk(w: &Window<'_>) -> Result<(), Error> {
    let (ns, secret) = (w.ns().to_string(), w.journal.psk_secret.clone());
    let Some(s) = objects::secret(w.cluster, &secret).await? else {
        return Err(Error::Stop {
            code: exit::FAILURE,
            message: format!("PSK Secret {ns}/{secret} is gone after the old gateway's delete"),
            hint: Some(crate::window::error::hint!(
                "re-create it from your own records (vpnmig never stores a key), then `{}` resumes",
                crate::window::error::Run::cutover(w.name(), &ns)
            )),
        });
    };
    psk_unchanged(w.ev, &w.journal, &s)
}

/// The PSK Secret `s` still holds the key the journal fingerprinted. A Secret re-created
/// since (another uid) cannot be compared, because the fingerprint is keyed by the
/// Secret's uid (`core::psk::fingerprint`): say so and go on, the tunnels coming up are
/// then the proof that it holds the client's key. Used by the windows after a delete and
/// by rollback before its first change.
pub(crate) fn psk_unchanged(ev: &dyn Emit, journal: &Journal, s: &Value) -> Result<(), Error> {
    let (ns, secret) = (journal.namespace.as_str(), journal.psk_secret.as_str());
    let uid = s.pointer("/metadata/uid").and_then(Value::as_str);
    let keyed = !journal
        .psk_fingerprint
        .as_deref()
        .is_some_and(|f| f.starts_with("sha256:"));
    if let (true, Some(then), Some(now)) = (keyed, journal.psk_secret_uid.as_deref(), uid)
        && then != now
    {
        ev.emit(Event::Warning(format!(
            "PSK Secret {ns}/{secret} was re-created during the window (uid {then} → {now}): its key cannot be compared with the recorded fingerprint, which is keyed by the old Secret's uid; the tunnels coming up are the proof that it holds the client's key"
        )));
        return Ok(());
    }
    let key = journal
        .targets
        .iter()
        .find_map(|t| t.pointer("/spec/ipsec/pskSecretRef/key"))
        .and_then(Value::as_str)
        .unwrap_or("psk");
    let now = psk::fingerprint_like(journal.psk_fingerprint.as_deref(), ns, secret, key, s);
    if journal.psk_fingerprint.is_some() && now != journal.psk_fingerprint {
        return Err(Error::Stop {
            code: exit::FAILURE,
            message: format!(
                "PSK Secret {ns}/{secret} key {key} changed during the window (fingerprint {} → {})",
                journal.psk_fingerprint.as_deref().unwrap_or("?"),
                now.as_deref().unwrap_or("<no key>")
            ),
            hint: Some(crate::window::error::hint!(
                "restore the key the client uses (vpnmig never stores it; `{}`), and where a GitOps owner syncs the Secret make the repository's copy hold the same key, then run it again: `{}`",
                psk::recreate_command(ns, secret, key),
                crate::window::error::Next::again(&[])
            )),
        });
    }
    Ok(())
}

/// Before a rollback or `cutover --forward` (which skip the plan and its checks): every
/// permission the window needs, else nothing is done (a rollback that cannot re-create
/// the IPsecGateway after deleting the VPNGateway would leave no gateway at all).
pub(crate) async fn require_permissions(cluster: &Cluster, action: &str) -> Result<(), Error> {
    refuse_missing(crate::cluster::facts::permissions(cluster).await, action)
}

/// [`require_permissions`] of `needs`: what a window asks beyond `core::live::NEEDS` (a
/// GitOps owner, the other windows' journals and locks), asked when it is known.
pub(crate) async fn require_needs(
    cluster: &Cluster,
    needs: &[crate::core::live::Need],
    action: &str,
) -> Result<(), Error> {
    refuse_missing(crate::cluster::facts::allowed(cluster, needs).await, action)
}

/// The refusal (exit 7, nothing changed) naming every permission `answers` denies.
fn refuse_missing(
    answers: Result<Vec<(String, bool)>, KubeError>,
    action: &str,
) -> Result<(), Error> {
    let missing: Vec<String> = match answers {
        Ok(p) => p
            .into_iter()
            .filter(|(_, ok)| !ok)
            .map(|(n, _)| n)
            .collect(),
        // Refused: say what; no answer: "could not ask" is exit 1, never a refusal.
        Err(e @ (KubeError::Forbidden { .. } | KubeError::Unauthorized { .. })) => {
            vec![format!("(could not ask the API server: {e})")]
        }
        Err(e) => return Err(Error::Cluster(e)),
    };
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::Stop {
        code: exit::REFUSED,
        message: format!("refusing to {action}: you may not {}", missing.join("; ")),
        hint: Some(crate::window::error::hint!(
            "ask for the permissions (or use a context that has them), then run it again: `{}`; nothing was changed",
            crate::window::error::Next::again(&[])
        )),
    })
}
