//! The simulated OpenStack floating IPs. DESIGN.md §2 rules implemented here:
//! - "Cleanup disassociates the FIP; it releases it to the pool only if the FIP was NOT
//!   pinned in spec" — [`Fips::cleanup`];
//! - "A gateway whose pinned FIP is still associated elsewhere sits at
//!   `FIPAttached=False` (reason `AlreadyAssociated`) and retries" — [`Fips::ensure`]
//!   answers [`Attach::AlreadyAssociated`] until the holder lets go;
//! - "An unpinned gateway takes a new FIP from the pool" — [`Fips::ensure`].
//!
//! A FIP is either free (in the pool, not reserved), reserved for the project (pinned by
//! some gateway, ever, or allocated to an unpinned one) and possibly associated with one
//! port (a gateway's, or a foreign one while the `fipHeldByOtherPort` fault is set).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

/// Who holds an association.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Holder {
    uid: String,
    owner: String,
    port: String,
}

/// The outcome of ensuring a gateway's FIP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attach {
    Attached {
        fip: String,
        port: String,
    },
    /// The FIP is on another port: a gateway's (`holder` names it) or a foreign one.
    AlreadyAssociated {
        fip: String,
        port: String,
        holder: Option<String>,
    },
    /// Unpinned and the pool has nothing free.
    Exhausted,
}

/// What the floating IPs look like (for tests and diagnostics).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FloatingIps {
    /// Pool addresses nobody reserved, in pool order.
    pub free: Vec<String>,
    /// Addresses reserved for the project: pinned by a gateway or allocated to one.
    pub reserved: Vec<String>,
    /// Unpinned allocations: FIP → gateway (`IPsecGateway ns/name`).
    pub allocated: BTreeMap<String, String>,
    /// Associations: FIP → `IPsecGateway ns/name` or `port <id>` (foreign).
    pub associated: BTreeMap<String, String>,
    /// Every FIP ever released back to the pool, in order (the invariant tests read this:
    /// a pinned FIP must never appear here).
    pub released: Vec<String>,
}

#[derive(Debug, Default)]
pub struct Fips {
    reserved: BTreeSet<String>,
    /// gateway uid → (FIP, gateway display) allocated from the pool (releasable).
    allocated: BTreeMap<String, (String, String)>,
    associated: BTreeMap<String, Holder>,
    released: Vec<String>,
}

/// A port id that looks like Neutron's, stable for a seed.
pub fn port_id(seed: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut h1 = std::collections::hash_map::DefaultHasher::new();
    seed.hash(&mut h1);
    let a = h1.finish();
    let mut h2 = std::collections::hash_map::DefaultHasher::new();
    (seed, a).hash(&mut h2);
    let b = h2.finish();
    let hex = format!("{a:016x}{b:016x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

impl Fips {
    /// Pool addresses nobody reserved or holds.
    pub fn free(&self, pool: &[String]) -> Vec<String> {
        pool.iter()
            .filter(|f| !self.reserved.contains(*f) && !self.associated.contains_key(*f))
            .cloned()
            .collect()
    }

    /// A pinned FIP is the project's for good: never handed to an unpinned gateway.
    pub fn reserve_pinned(&mut self, fip: &str) {
        self.reserved.insert(fip.to_string());
    }

    /// Make sure the gateway `uid` has its FIP: the pinned one, else the one it was
    /// allocated (or that its status reports, after a restart), else the next free one.
    pub fn ensure(
        &mut self,
        uid: &str,
        owner: &str,
        pinned: Option<&str>,
        status_fip: Option<&str>,
        pool: &[String],
        foreign_port: bool,
    ) -> Attach {
        let want = match pinned {
            Some(p) => {
                self.reserved.insert(p.to_string());
                // Pinning the FIP it was allocated makes it unreleasable; another one is given back.
                if let Some((a, _)) = self.allocated.remove(uid)
                    && a != p
                {
                    self.disassociate(uid, &a);
                    self.reserved.remove(&a);
                }
                p.to_string()
            }
            None => {
                if let Some((a, _)) = self.allocated.get(uid) {
                    a.clone()
                } else if let Some(held) = self
                    .associated
                    .iter()
                    .find(|(_, h)| h.uid == uid)
                    .map(|(f, _)| f.clone())
                {
                    // Was pinned, no longer is: it keeps what it has.
                    self.allocated
                        .insert(uid.to_string(), (held.clone(), owner.to_string()));
                    held
                } else if let Some(s) = status_fip.filter(|s| {
                    !s.is_empty()
                        && !self.reserved.contains(*s)
                        && !self.associated.contains_key(*s)
                }) {
                    self.reserved.insert(s.to_string());
                    self.allocated
                        .insert(uid.to_string(), (s.to_string(), owner.to_string()));
                    s.to_string()
                } else if let Some(f) = self.free(pool).into_iter().next() {
                    self.reserved.insert(f.clone());
                    self.allocated
                        .insert(uid.to_string(), (f.clone(), owner.to_string()));
                    f
                } else {
                    return Attach::Exhausted;
                }
            }
        };
        let stale: Vec<String> = self
            .associated
            .iter()
            .filter(|(f, h)| h.uid == uid && **f != want)
            .map(|(f, _)| f.clone())
            .collect();
        for f in stale {
            self.associated.remove(&f);
        }
        if foreign_port {
            self.disassociate(uid, &want);
            return Attach::AlreadyAssociated {
                port: port_id(&format!("foreign/{want}")),
                fip: want,
                holder: None,
            };
        }
        match self.associated.get(&want) {
            Some(h) if h.uid != uid => Attach::AlreadyAssociated {
                fip: want.clone(),
                port: h.port.clone(),
                holder: Some(h.owner.clone()),
            },
            Some(h) => Attach::Attached {
                port: h.port.clone(),
                fip: want,
            },
            None => {
                let port = port_id(uid);
                self.associated.insert(
                    want.clone(),
                    Holder {
                        uid: uid.to_string(),
                        owner: owner.to_string(),
                        port: port.clone(),
                    },
                );
                Attach::Attached { fip: want, port }
            }
        }
    }

    fn disassociate(&mut self, uid: &str, fip: &str) {
        if self.associated.get(fip).is_some_and(|h| h.uid == uid) {
            self.associated.remove(fip);
        }
    }

    /// The OpenStack part of the deletion unwind: disassociate whatever the gateway holds
    /// and release the FIP to the pool only if it was allocated (not pinned).
    pub fn cleanup(&mut self, uid: &str) {
        self.associated.retain(|_, h| h.uid != uid);
        if let Some((fip, _)) = self.allocated.remove(uid) {
            self.reserved.remove(&fip);
            self.released.push(fip);
        }
    }

    /// The FIP associated with the gateway `uid`, if any.
    pub fn attached(&self, uid: &str) -> Option<String> {
        self.associated
            .iter()
            .find(|(_, h)| h.uid == uid)
            .map(|(f, _)| f.clone())
    }

    pub fn snapshot(&self, pool: &[String]) -> FloatingIps {
        FloatingIps {
            free: self.free(pool),
            reserved: self.reserved.iter().cloned().collect(),
            allocated: self
                .allocated
                .values()
                .map(|(f, o)| (f.clone(), o.clone()))
                .collect(),
            associated: self
                .associated
                .iter()
                .map(|(f, h)| (f.clone(), h.owner.clone()))
                .collect(),
            released: self.released.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> Vec<String> {
        vec!["198.51.100.200".into(), "198.51.100.201".into()]
    }

    #[test]
    fn unpinned_is_released_and_pinned_is_not() {
        let mut f = Fips::default();
        assert!(
            matches!(f.ensure("a", "A", None, None, &pool(), false), Attach::Attached { fip, .. } if fip == "198.51.100.200")
        );
        f.cleanup("a");
        assert_eq!(f.free(&pool()), pool());
        assert!(matches!(
            f.ensure("b", "B", Some("198.51.100.200"), None, &pool(), false),
            Attach::Attached { .. }
        ));
        f.cleanup("b");
        assert_eq!(f.free(&pool()), vec!["198.51.100.201".to_string()]);
    }

    #[test]
    fn already_associated_until_the_holder_lets_go() {
        let mut f = Fips::default();
        f.ensure(
            "old",
            "IPsecGateway t/acme",
            Some("198.51.100.23"),
            None,
            &pool(),
            false,
        );
        let a = f.ensure(
            "new",
            "VPNGateway t/acme",
            Some("198.51.100.23"),
            None,
            &pool(),
            false,
        );
        assert!(
            matches!(a, Attach::AlreadyAssociated { holder: Some(h), .. } if h == "IPsecGateway t/acme")
        );
        f.cleanup("old");
        assert!(matches!(
            f.ensure(
                "new",
                "VPNGateway t/acme",
                Some("198.51.100.23"),
                None,
                &pool(),
                false
            ),
            Attach::Attached { .. }
        ));
        assert!(matches!(
            f.ensure(
                "new",
                "VPNGateway t/acme",
                Some("198.51.100.23"),
                None,
                &pool(),
                true
            ),
            Attach::AlreadyAssociated { holder: None, .. }
        ));
        assert_eq!(f.attached("new"), None);
    }
}
