//! What the Kubernetes layer reports as it goes: retries and waits of API calls, the lock
//! watched, taken or not renewed, the PSK Secret's guard, a dropped watch. Nothing here
//! writes to a terminal (issue 24 item 3): each is a [`Notice`] handed to the caller's
//! [`Notices`], and `src/output/cluster.rs` renders it as one line on stderr.

use std::sync::Arc;
use std::time::Duration;

/// One thing the Kubernetes layer has to say, as data.
#[derive(Clone, Debug, PartialEq)]
pub enum Notice {
    /// `KUBECONFIG` names `path`, which does not exist: skipped, as kubectl skips it.
    KubeconfigMissing { path: String },
    /// An attempt of `verb what` got no answer within `seconds`: tried again (`attempt`
    /// of `retries`).
    NoAnswer {
        verb: String,
        what: String,
        /// ` -n NS` or ` in namespace NS` (`cluster::scope_of`), or empty.
        scope: String,
        seconds: u64,
        attempt: u32,
        retries: u32,
    },
    /// A transient failure (`cause`), tried again after `wait` (`why`: backoff,
    /// `Retry-After`, capped); `busy` when the API server said 429 or 503.
    Retrying {
        verb: String,
        what: String,
        scope: String,
        cause: String,
        busy: bool,
        wait: Duration,
        why: String,
        attempt: u32,
        retries: u32,
    },
    /// A retry still waited for: `left` to go.
    RetryingIn {
        verb: String,
        what: String,
        scope: String,
        left: Duration,
    },
    /// An attempt still unanswered after `elapsed` of its `deadline`.
    Unanswered {
        server: String,
        verb: String,
        what: String,
        scope: String,
        elapsed: Duration,
        deadline: Duration,
    },
    /// A watch could not be opened (`cause`): listed again.
    WatchFailed { plural: String, cause: String },
    /// The lock of `gateway` is held by `holder` (`lease/NAME`, the holder's clock noted):
    /// watched for up to `to_go` seconds to see whether it is renewed.
    LockWatching {
        gateway: String,
        holder: String,
        lease: String,
        clock: Option<String>,
        to_go: f64,
    },
    /// The watched Lease was not renewed in the `watched` seconds so far; `to_go` left.
    LockStillWatching {
        lease: String,
        watched: u64,
        to_go: f64,
    },
    /// The lock of `holder` is stale (`why`): taken over.
    LockTakenOver { holder: String, why: String },
    /// `--break-lock`: the lock taken from `holder`.
    LockBroken { holder: String },
    /// The renewer could not read the Lease (`cause`).
    LockUnread { lease: String, cause: String },
    /// The renewer could not renew the Lease (`cause`).
    LockNotRenewed { lease: String, cause: String },
    /// Something gave the PSK Secret `secret` `count` ownerReference(s) to a gateway being
    /// deleted: removed again (and recorded in the journal).
    PskOwnerRemoved { secret: String, count: usize },
}

/// Where the Kubernetes layer's notices go: a renderer (`src/output/cluster.rs`), a
/// recorder, or nowhere ([`Notices::default`]). Cloned into every [`Cluster`](super::Cluster)
/// and into the lock's renewer task.
#[derive(Clone)]
pub struct Notices(Arc<dyn Fn(Notice) + Send + Sync>);

impl Notices {
    pub fn new(f: impl Fn(Notice) + Send + Sync + 'static) -> Self {
        Notices(Arc::new(f))
    }

    pub fn emit(&self, n: Notice) {
        (self.0)(n);
    }
}

/// Nowhere: a library caller that wants no notices (tests, the sandbox).
impl Default for Notices {
    fn default() -> Self {
        Notices::new(|_| {})
    }
}

impl std::fmt::Debug for Notices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Notices")
    }
}
