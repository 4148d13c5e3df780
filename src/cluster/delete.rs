//! The one delete every path of vpnmig goes through (DESIGN.md §4.8; issue 14 items 1
//! and 3): cutover, resume, `cutover --forward`, rollback, their dry runs.
//!
//! Each attempt reads the object, judges it with the pure rules of `core::scope` (a
//! gateway must pin the window's floating IP; a VPNPeer must be proven the window's) and
//! with the caller's own check, then deletes exactly the version it judged (uid and
//! resourceVersion preconditions). A write in between is a 409 and the object is judged
//! again; nothing is ever deleted that was not judged at its current version.

use serde_json::Value;

use super::{Cluster, KubeError, objects};
use crate::core::scope;

/// How many times a 409 (the object changed between the read and the delete) is judged
/// again before giving up.
const ATTEMPTS: usize = 5;

/// What is being deleted and the rules it must pass.
#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    /// The old `IPsecGateway`: its spec must pin `fip` (the journal's).
    OldGateway { fip: &'a str },
    /// The `VPNGateway` named like the window's gateway: its spec must pin `fip`, and
    /// the window must have made it (its uid in `recorded`, or vpnmig's field manager and
    /// the migrated-from annotation of this gateway).
    NewGateway {
        fip: &'a str,
        recorded: &'a [String],
    },
    /// A VPNPeer: its gatewayRef must name `gateway` and the window must have made it.
    Peer {
        gateway: &'a str,
        recorded: &'a [String],
    },
}

impl Target<'_> {
    fn kind(&self) -> &'static str {
        match self {
            Target::OldGateway { .. } => "IPsecGateway",
            Target::NewGateway { .. } => "VPNGateway",
            Target::Peer { .. } => "VPNPeer",
        }
    }
}

/// What the delete found and did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The delete of this uid was sent (or admitted, in a dry run).
    Sent { uid: String },
    /// There was no such object.
    Gone,
    /// It was already being deleted (deletionTimestamp set): left to its finalizers.
    AlreadyDeleting,
}

/// Why nothing was deleted.
#[derive(Debug, thiserror::Error)]
pub enum DeleteError {
    /// A rule refused the object as it is now.
    #[error(
        "{} was not deleted: {why}",
        crate::core::model::object_ref(kind, name, namespace)
    )]
    Refused {
        kind: &'static str,
        namespace: String,
        name: String,
        why: String,
        /// A command that makes the object deletable, when there is one.
        fix: Option<String>,
    },
    #[error(
        "{} kept changing between the check and the delete ({ATTEMPTS} tries): nothing was deleted",
        crate::core::model::object_ref(kind, name, namespace)
    )]
    Unstable {
        kind: &'static str,
        namespace: String,
        name: String,
    },
    #[error(transparent)]
    Kube(#[from] KubeError),
}

impl DeleteError {
    /// What to do about it (rendered as `hint:`).
    pub fn hint(&self) -> Option<String> {
        match self {
            DeleteError::Refused { fix, .. } => fix.clone(),
            DeleteError::Unstable { .. } => {
                Some("something is writing it continuously: find out what (`kubectl get … -o yaml --show-managed-fields`), then run the command again".into())
            }
            DeleteError::Kube(e) => e.hint(),
        }
    }
}

/// Delete `name` if `target`'s rule and `also` accept it at the version read; `also`
/// is the caller's own check (e.g. the journal's uid and spec fingerprint), returning
/// why not. With `dry_run`, the same checks and a server-side dry-run delete.
///
/// Errors: [`DeleteError::Refused`] (nothing deleted, the rule and the values in the
/// message), [`DeleteError::Unstable`] after [`ATTEMPTS`] conflicting writes, or the
/// cluster's error.
pub async fn delete(
    cluster: &Cluster,
    target: Target<'_>,
    name: &str,
    also: impl Fn(&Value) -> Result<(), String>,
    dry_run: bool,
) -> Result<Outcome, DeleteError> {
    let kind = target.kind();
    let ns = cluster.namespace.clone();
    let refused = |why: String, fix: Option<String>| DeleteError::Refused {
        kind,
        namespace: ns.clone(),
        name: name.to_string(),
        why,
        fix,
    };
    for _ in 0..ATTEMPTS {
        let Some(obj) = objects::get(cluster, kind, name).await? else {
            return Ok(Outcome::Gone);
        };
        if obj.pointer("/metadata/deletionTimestamp").is_some() {
            return Ok(Outcome::AlreadyDeleting);
        }
        let pinned = |fip: &str| {
            scope::gateway_deletable(&obj, fip)
                .map_err(|why| refused(why, Some(scope::pin_command(kind, name, &ns, fip))))
        };
        match target {
            Target::OldGateway { fip } => pinned(fip)?,
            Target::NewGateway { fip, recorded } => {
                pinned(fip)?;
                scope::proof(&obj, name, recorded)
                    .map_err(|why| refused(why, Some(scope::not_created_way_on(name, &ns))))?;
            }
            Target::Peer { gateway, recorded } => {
                scope::proof(&obj, gateway, recorded).map_err(|why| refused(why, None))?;
            }
        }
        also(&obj).map_err(|why| refused(why, None))?;
        let s = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or_default();
        let (uid, rv) = (s("/metadata/uid"), s("/metadata/resourceVersion"));
        match objects::delete(cluster, kind, name, Some(uid), Some(rv), dry_run).await {
            Ok(true) => return Ok(Outcome::Sent { uid: uid.into() }),
            Ok(false) => return Ok(Outcome::Gone),
            Err(e) if objects::status(&e) == Some(409) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(DeleteError::Unstable {
        kind,
        namespace: ns,
        name: name.into(),
    })
}
