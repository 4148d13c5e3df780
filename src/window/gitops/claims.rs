//! Another gateway claiming a finished window's floating IP (a21m B15, B18: a merged
//! source that defined the new objects plus the old gateway under another name, with the
//! same floating IP; the restore said "synced: … as it was" and the next cutover
//! "complete" while the operator left that gateway at `AlreadyAssociated`). Any gateway
//! but the window's own (an IPsecGateway of any name, in any namespace; a VPNGateway of
//! another name) that claims it is treated like the replaced gateway live again: nothing
//! is restored, vouched for, let go of or said complete beside it. Layer: the window
//! engine (`src/window/`), part of `window::gitops`; it reads the cluster and changes
//! nothing.

use super::*;
use crate::window::error::Verb;

/// A gateway other than the window's own that claims its floating IP: its kind, name,
/// namespace, the floating IP as it spells it, and the object as read.
#[derive(Clone, Debug)]
pub(crate) struct Claimant {
    pub kind: &'static str,
    pub name: String,
    pub namespace: String,
    pub fip: String,
    pub obj: Value,
    /// Whether it pins and/or holds the floating IP (a21r R12).
    pub claim: crate::core::live::FipClaim,
}

impl Claimant {
    /// `ipsecgateway/NAME -n NS`.
    pub fn display(&self) -> String {
        object_ref(self.kind, &self.name, &self.namespace)
    }

    /// The command that deletes it.
    pub fn delete(&self) -> String {
        format!(
            "kubectl delete {} {} -n {}",
            self.kind.to_lowercase(),
            self.name,
            self.namespace
        )
    }

    /// Its uid and who wrote it: `uid U, written by field manager M` (a GitOps owner's
    /// marker where one names it).
    pub fn who(&self) -> String {
        let uid = self.obj["metadata"]["uid"].as_str().unwrap_or("?");
        let by = gitops::writer(&self.obj).unwrap_or_else(|| {
            crate::core::scope::managers(&self.obj)
                .first()
                .map(|m| format!("field manager {m}"))
                .unwrap_or_else(|| "no field manager it records".into())
        });
        format!("uid {uid}, written by {by}")
    }

    /// `ipsecgateway/N -n NS (uid U, written by M) holds it … / pins it …`.
    pub fn shown(&self) -> String {
        format!("{} ({}) {}", self.display(), self.who(), self.claim.said())
    }

    /// The way out that keeps floating IP `fip` for the client.
    pub fn way_out(&self, fip: &str) -> String {
        format!(
            "{}: {}",
            self.display(),
            self.claim
                .way_out(self.kind, &self.name, &self.namespace, fip)
        )
    }
}

/// The floating IPs the window's gateway claims: the journal's, and the live gateway's of
/// the kind the window left (`left`: VPNGateway after a cutover, IPsecGateway after a
/// rollback; pinned, else its status's).
async fn window_fips(
    cluster: &Cluster,
    j: &crate::core::journal::Journal,
    left: &str,
) -> Result<Vec<String>, Error> {
    let mut fips: Vec<String> = Vec::new();
    let mut add = |f: &str| {
        let f = f.trim();
        if !f.is_empty() && !fips.iter().any(|x| crate::core::addr::same_in_family(x, f)) {
            fips.push(f.to_string());
        }
    };
    add(&j.floating_ip);
    let mut there = cluster.clone();
    there.namespace = j.namespace.clone();
    if let Some(gw) = crate::cluster::objects::get(&there, left, &j.gateway).await? {
        for p in ["/spec/endpoint/floatingIP", "/status/floatingIP"] {
            if let Some(f) = gw.pointer(p).and_then(Value::as_str) {
                add(f);
            }
        }
    }
    Ok(fips)
}

/// Every gateway of `kind` (all namespaces; where that list is refused, the window's
/// namespace, with why the others were not read), verbatim. `Err(why)`: neither could be
/// listed.
async fn gateways(
    cluster: &Cluster,
    kind: &'static str,
    ns: &str,
) -> Result<Result<(Vec<Value>, Option<String>), String>, Error> {
    use kube::api::ApiResource;
    let ar = if kind == "IPsecGateway" {
        ApiResource::erase::<crate::core::model::IPsecGateway>(&())
    } else {
        ApiResource::erase::<crate::core::model::VPNGateway>(&())
    };
    let (all, partial) = match crate::cluster::list::raw(cluster, &ar, None, None).await {
        Ok(items) => (items, None),
        Err(e) => {
            let all_refused = crate::cluster::facts::refusal(e)?;
            match crate::cluster::list::raw(cluster, &ar, Some(ns), None).await {
                Ok(items) => (items, Some(all_refused)),
                Err(e) => {
                    let here = crate::cluster::facts::refusal(e)?;
                    return Ok(Err(format!("{all_refused}; {here}")));
                }
            }
        }
    };
    Ok(Ok((
        all.into_iter()
            .map(|o| serde_json::to_value(o).expect("objects serialize"))
            .collect(),
        partial,
    )))
}

/// The gateways other than window `j`'s own (either kind, any name, any namespace the
/// cluster lets vpnmig list) that claim its floating IP, compared as addresses
/// (`2001:DB8::A` is `2001:db8::a`, `192.0.2.7/32` is `192.0.2.7`; never across families).
/// One being deleted claims it still (its finalizer holds the association). `Err(why)`:
/// the gateways could not be listed (a refusal, said, never read as "none"); with the
/// claimants, why the other namespaces were not read when only the window's could be.
pub(crate) async fn claimants(
    cluster: &Cluster,
    j: &crate::core::journal::Journal,
    left: &str,
) -> Result<Result<(Vec<Claimant>, Option<String>), String>, Error> {
    let fips = window_fips(cluster, j, left).await?;
    claimants_of(cluster, (&j.namespace, &j.gateway), &fips).await
}

/// The gateways other than `me` (namespace, name; either kind) that pin or hold any of
/// `fips` (a21r R12: one that neither pins nor holds it anymore is no claimant; one that
/// pins another address but holds this one is). `Err(why)`: they could not be listed.
pub(crate) async fn claimants_of(
    cluster: &Cluster,
    me: (&str, &str),
    fips: &[String],
) -> Result<Result<(Vec<Claimant>, Option<String>), String>, Error> {
    if fips.is_empty() {
        return Ok(Ok((Vec::new(), None)));
    }
    let mut out = Vec::new();
    let mut unread = None;
    for kind in ["IPsecGateway", "VPNGateway"] {
        let items = match gateways(cluster, kind, me.0).await? {
            Ok((items, partial)) => {
                unread = unread.or(partial);
                items
            }
            Err(why) => return Ok(Err(why)),
        };
        for o in items {
            let name = o["metadata"]["name"].as_str().unwrap_or_default();
            let namespace = o["metadata"]["namespace"].as_str().unwrap_or_default();
            if (namespace, name) == me {
                // The window's own: the VPNGateway it made, or the replaced gateway live
                // again (`live_again` says that one).
                continue;
            }
            let claim = crate::core::live::FipClaim::of(&o, fips);
            if !claim.any() {
                continue;
            }
            let field = if claim.pins {
                "/spec/endpoint/floatingIP"
            } else {
                "/status/floatingIP"
            };
            let fip = o
                .pointer(field)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim()
                .to_string();
            out.push(Claimant {
                kind,
                name: name.to_string(),
                namespace: namespace.to_string(),
                fip,
                obj: o.clone(),
                claim,
            });
        }
    }
    Ok(Ok((out, unread)))
}

/// The stop (exit 5) for a finished window (`replaced`: `IPsecGateway`, a cutover) beside
/// which another gateway claims the floating IP: each one named with its uid, who wrote
/// it (field manager), the address it claims, the owners that may have created it and its
/// delete; what syncs it now is to be suspended first. `None`: none claims it. A list
/// that was refused is said (a warning) and stops nothing: the same-named gateway is
/// still checked, and `vpnmig verify` fails its floating-IP row then. `paused_again`: the
/// owner whose first sync created it, which the restore suspends again (not advised).
pub(crate) async fn claimed(
    w: &Window<'_>,
    replaced: &str,
    paused_again: Option<&gitops::OwnerRef>,
) -> Result<Option<Error>, Error> {
    claimed_or(w, replaced, paused_again, true).await
}

/// [`claimed`] as the first-sync watch asks it, twice a second: a refused list is said
/// once, by the run's own check, not at every look.
pub(crate) async fn claimed_quietly(
    w: &Window<'_>,
    replaced: &str,
    paused_again: Option<&gitops::OwnerRef>,
) -> Result<Option<Error>, Error> {
    claimed_or(w, replaced, paused_again, false).await
}

async fn claimed_or(
    w: &Window<'_>,
    replaced: &str,
    paused_again: Option<&gitops::OwnerRef>,
    say_refusal: bool,
) -> Result<Option<Error>, Error> {
    // The kind the finished window left, and what it was: a cutover left the VPNGateway,
    // a rollback the IPsecGateway (a21n C11: a reverted source that also defined a
    // VPNGateway of another name with the same floating IP; the rollback's restore said
    // "as it was" and verify HEALTHY).
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let (left, finished, again) = if replaced == "IPsecGateway" {
        (
            "VPNGateway",
            format!("the cutover of {ns}/{name} is done"),
            Verb::Cutover,
        )
    } else {
        (
            "IPsecGateway",
            format!("the rollback of {ns}/{name} is finished"),
            Verb::Rollback,
        )
    };
    let shown = object_ref(left, &name, &ns);
    let found = match claimants(w.cluster, &w.journal, left).await? {
        Ok((found, unread)) => {
            if let Some(why) = unread.filter(|_| say_refusal && found.is_empty()) {
                w.ev.emit(Event::Warning(format!(
                    "no gateway in namespace {ns} claims the floating IP {} of {shown}, but the other namespaces could not be listed ({why}); `vpnmig verify {name} -n {ns}` with a context that can list them checks it",
                    w.journal.floating_ip
                )));
            }
            found
        }
        Err(_) if !say_refusal => return Ok(None),
        Err(why) => {
            w.ev.emit(Event::Warning(format!(
                "whether another gateway claims the floating IP {} of {shown} could not be checked: the gateways could not be listed ({why}); `vpnmig verify {name} -n {ns}` with a context that can list them checks it",
                w.journal.floating_ip
            )));
            return Ok(None);
        }
    };
    if found.is_empty() {
        return Ok(None);
    }
    let mut said = Vec::new();
    let mut suspends: Vec<String> = Vec::new();
    for c in &found {
        let (mays, sus) = may_have_re_created(w, &c.obj).await?;
        for s in sus {
            let again = paused_again.is_some_and(|o| {
                s == format!("`{}`", gitops::pause_command(o)) || s == suspend_command(o)
            });
            if !again && !suspends.contains(&s) {
                suspends.push(s);
            }
        }
        let uid = c.obj["metadata"]["uid"].as_str().unwrap_or("?");
        let writer = gitops::writer(&c.obj)
            .map(|who| format!(", written by {who}"))
            .unwrap_or_else(|| {
                format!(
                    ", written by {}",
                    crate::core::scope::managers(&c.obj)
                        .first()
                        .map(|m| format!("field manager {m}"))
                        .unwrap_or_else(|| "no field manager it records".into())
                )
            });
        let owners = if mays.is_empty() {
            format!(
                "no owner's markers name it (created by hand? `kubectl get {} {} -n {} -o yaml --show-managed-fields` says who wrote it)",
                c.kind.to_lowercase(),
                c.name,
                c.namespace
            )
        } else {
            format!("may have created it: {}", mays.join("; "))
        };
        said.push(format!(
            "{} (uid {uid}{writer}) claims {}; {owners}",
            c.display(),
            c.fip
        ));
    }
    let deletes: Vec<String> = found.iter().map(|c| format!("`{}`", c.delete())).collect();
    let first = if suspends.is_empty() {
        String::new()
    } else {
        format!(
            "suspend what syncs it now first ({}), or it creates it once more; then ",
            suspends.join("; ")
        )
    };
    Ok(Some(Error::Stop {
        code: exit::VERIFY_FAILED,
        message: format!(
            "{}, but another gateway claims its floating IP {} beside {shown}: the operator attaches it to one of them and leaves the other at FIPAttached=False (AlreadyAssociated), and which one the client's firewall reaches is not certain; vpnmig restores, vouches for and lets go of no owner, and calls nothing complete, while it is live: {}",
            finished,
            w.journal.floating_ip,
            said.join("; and ")
        ),
        hint: Some(crate::window::error::hint!(
            "{first}delete it ({}) and make sure the repository no longer defines it (nor any other gateway with floating IP {}); then `{}` goes on (`{}` checks the floating IP, `{}` names the owners)",
            deletes.join("; "),
            w.journal.floating_ip,
            crate::window::error::Run::new(again, Some(&name), &ns),
            crate::window::error::Run::verify(&name, &ns),
            crate::window::error::Run::status(&ns)
        )),
    }))
}

/// The IPsecGateways owner `o`'s status lists (Argo CD `status.resources` without
/// `requiresPruning`; Flux `status.inventory.entries`), as (namespace, name), that are not
/// `skip` (the windows' own, which check 3 of the restore reads) and not live: its first
/// sync would create each, and its floating IP cannot be read before it exists. A status
/// that cannot tell lists none (check 3 says so for the windows' own).
pub(crate) async fn would_create(
    cluster: &Cluster,
    o: &Value,
    skip: &[(String, String)],
) -> Result<Vec<(String, String)>, Error> {
    if gitops::status_blind(o).is_some() {
        return Ok(Vec::new());
    }
    let owner_ns = o["metadata"]["namespace"].as_str().unwrap_or_default();
    let mut listed: Vec<(String, String)> = Vec::new();
    if o["kind"] == "Application" {
        for r in o
            .pointer("/status/resources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if r["kind"] == "IPsecGateway"
                && r["group"]
                    .as_str()
                    .is_none_or(|g| g == crate::core::model::OLD_GROUP)
                && r["requiresPruning"].as_bool() != Some(true)
            {
                listed.push((
                    r["namespace"].as_str().unwrap_or(owner_ns).to_string(),
                    r["name"].as_str().unwrap_or_default().to_string(),
                ));
            }
        }
    } else {
        let suffix = format!("_{}_IPsecGateway", crate::core::model::OLD_GROUP);
        for e in o
            .pointer("/status/inventory/entries")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(id) = e["id"].as_str() else { continue };
            let Some(rest) = id.strip_suffix(&suffix) else {
                continue;
            };
            if let Some((ns, name)) = rest.split_once('_') {
                listed.push((ns.to_string(), name.to_string()));
            }
        }
    }
    let mut out = Vec::new();
    for (ns, name) in listed {
        if name.is_empty()
            || skip.contains(&(ns.clone(), name.clone()))
            || out.contains(&(ns.clone(), name.clone()))
        {
            continue;
        }
        let live = live::get_kept(
            cluster,
            &format!(
                "{}/{}",
                crate::core::model::OLD_GROUP,
                crate::core::model::VERSION
            ),
            "IPsecGateway",
            &ns,
            &name,
        )
        .await?;
        if live.is_none() {
            out.push((ns, name));
        }
    }
    Ok(out)
}

/// The other finished cutovers among `others` (windows on one owner and what each
/// replaced) whose replaced IPsecGateway is live again beside their VPNGateway: each as
/// `(ipsecgateway/NAME -n NS, its delete, the floating IP)` (a21m B02, B11: the sibling's
/// run said 0 "stays suspended" and did not name it).
pub(crate) async fn others_live_again(
    cluster: &Cluster,
    others: &[(crate::core::journal::Journal, &str)],
) -> Result<Vec<(String, String, String)>, Error> {
    use crate::core::model::{NEW_GROUP, OLD_GROUP, VERSION};
    let mut out = Vec::new();
    for (j, kind) in others {
        if *kind != "IPsecGateway" || j.phase != Phase::Done {
            continue;
        }
        let (ns, gw) = (j.namespace.as_str(), j.gateway.as_str());
        let old = live::get_kept(
            cluster,
            &format!("{OLD_GROUP}/{VERSION}"),
            "IPsecGateway",
            ns,
            gw,
        )
        .await?
        .filter(|o| o.pointer("/metadata/deletionTimestamp").is_none());
        if old.is_none() {
            continue;
        }
        let new = live::get_kept(
            cluster,
            &format!("{NEW_GROUP}/{VERSION}"),
            "VPNGateway",
            ns,
            gw,
        )
        .await?;
        if new.is_some() {
            out.push((
                object_ref("IPsecGateway", gw, ns),
                format!("`kubectl delete ipsecgateway {gw} -n {ns}`"),
                j.floating_ip.clone(),
            ));
        }
    }
    Ok(out)
}
