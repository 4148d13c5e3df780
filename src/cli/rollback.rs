//! `vpnmig rollback NAME`: the runbook's rollback, from the journal. The old IPsecGateway
//! is re-created from the saved manifest, verbatim (never translated back from the new
//! kinds), after the VPNPeers and the VPNGateway are gone.

use std::path::PathBuf;

use serde_json::Value;

use crate::bundle;
use crate::cli::Error;
use crate::cli::cluster_args::ClusterArgs;
use crate::cli::window::{self, Timeouts, Tunnels, Window, confirm, now, timed_out};
use crate::cluster::{Cluster, journal as stored, lock, objects};
use crate::core::journal::{self, Journal, Owners, Phase};
use crate::exit;
use crate::output::window as render;

/// Roll a gateway back to its IPsecGateway.
///
/// Reads the journal the cutover wrote (ConfigMap `vpnmig-NAME`; or, if it is gone, the
/// bundle in --plan DIR); takes the gateway's lock; checks the VPNGateway's floating IP is
/// pinned (so its delete only disassociates it) and asks you to type the gateway's name;
/// deletes the VPNPeers and the VPNGateway and waits until they are gone; re-creates the
/// IPsecGateway from the saved manifest; waits for FIPAttached and Ready and verifies its
/// tunnels; marks the journal rolled back.
///
/// Works after a completed cutover, a failed one, and one interrupted at any phase; run
/// it again to resume an interrupted rollback.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  vpnmig rollback acme -n tenant-acme
  vpnmig rollback acme -n tenant-acme --plan plans/acme --yes   # the journal ConfigMap is gone

Exit codes: 0 rolled back, 1 failure, 6 a wait timed out, 7 refused (lock held, no
journal, the floating IP not pinned, no --yes without a terminal), 130 interrupted.")]
pub struct RollbackArgs {
    /// The gateway to roll back (namespace: -n, else the context's).
    #[arg(value_name = "NAME", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub name: String,

    #[command(flatten)]
    pub cluster: ClusterArgs,

    /// The bundle of the cutover (`plan --out DIR`): used when the journal ConfigMap is
    /// gone; with a journal, it must be of the same gateway.
    #[arg(long, value_name = "DIR")]
    pub plan: Option<PathBuf>,

    /// Do not ask for the gateway's name (needed without a terminal).
    #[arg(short = 'y', long)]
    pub yes: bool,

    /// Do every read, check, server-side dry run and the prompt; change nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Take the gateway's lock even though another run holds it.
    #[arg(long)]
    pub break_lock: bool,

    #[command(flatten)]
    pub timeouts: Timeouts,

    /// Output format of the final report (progress always goes to stderr).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = render::Format::Text)]
    pub output: render::Format,
}

pub fn run(args: &RollbackArgs) -> Result<i32, Error> {
    window::run(
        &args.cluster,
        &args.name,
        args.dry_run,
        args.break_lock,
        async |cluster, held| rollback(cluster, held, args).await,
    )
}

async fn rollback(
    cluster: &Cluster,
    held: Option<&lock::Lock>,
    args: &RollbackArgs,
) -> Result<i32, Error> {
    let name = args.name.as_str();
    let ns = cluster.namespace.clone();
    let by = window::identity(held);
    let saved = args
        .plan
        .as_ref()
        .map(|d| bundle::read_saved(d))
        .transpose()?;
    let j = match (stored::read(cluster, name).await?, saved) {
        (Some(j), saved) => {
            if let Some((plan, _)) = saved {
                let drift = journal::journal_drift(&plan, &j);
                if !drift.is_empty() {
                    anstream::eprint!("{}", render::drift(&drift));
                    return Err(Error::Stop {
                        code: exit::REFUSED,
                        message: format!("the journal of {ns}/{name} is not of the plan in --plan"),
                        hint: Some(
                            "leave out --plan: the journal in the cluster is what the cutover did"
                                .into(),
                        ),
                    });
                }
            }
            j
        }
        (None, Some((plan, old))) => {
            let j = Journal::from_bundle(&plan, old, &now(), &by);
            if j.gateway != name || j.namespace != ns {
                return Err(Error::Stop {
                    code: exit::REFUSED,
                    message: format!(
                        "the bundle in --plan is of {}/{}, not {ns}/{name}",
                        j.namespace, j.gateway
                    ),
                    hint: None,
                });
            }
            anstream::eprintln!(
                "no journal ConfigMap {ns}/{}: rolling back from the bundle",
                journal::object_name(name)
            );
            anstream::eprintln!(
                "note: the bundle is the gateway as it was planned (uid {}, spec {}); an edit made after that plan is not in it",
                j.old_uid.as_deref().unwrap_or("?"),
                j.spec_fingerprint
            );
            j.validate().map_err(|why| Error::Stop {
                code: exit::REFUSED,
                message: format!("the bundle cannot be rolled back to: {why}"),
                hint: None,
            })?;
            j
        }
        (None, None) => {
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!(
                    "no journal of {ns}/{name} (ConfigMap {}): nothing recorded to roll back to",
                    journal::object_name(name)
                ),
                hint: Some(format!(
                    "pass the bundle of the cutover (--plan DIR), or check the namespace (`kubectl get configmaps -n {ns} -l app.kubernetes.io/managed-by=vpnmig`)"
                )),
            });
        }
    };
    if j.phase == Phase::RolledBack {
        anstream::eprintln!(
            "{ns}/{name} is already rolled back ({}): nothing to do",
            j.history.last().map(|e| e.at.as_str()).unwrap_or("?")
        );
        return Ok(exit::OK);
    }
    let fip = j
        .old_manifest
        .pointer("/spec/endpoint/floatingIP")
        .and_then(Value::as_str)
        .filter(|f| !f.is_empty());
    if fip.is_none() {
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!("the saved IPsecGateway {ns}/{name} does not pin its floating IP (spec.endpoint.floatingIP is empty): re-creating it would allocate a new one"),
            hint: Some("restore the old gateway by hand with the floating IP pinned in spec.endpoint.floatingIP".into()),
        });
    }
    new_fip_pinned(cluster, &j).await?;
    window::require_permissions(cluster, "roll back").await?;
    anstream::eprint!(
        "{}",
        render::rollback_summary(&cluster.context, &j, &args.timeouts.waits())
    );
    confirm(name, args.yes, args.dry_run, "roll back").await?;
    if args.dry_run {
        for (kind, n) in j.target_names().iter().rev() {
            objects::delete(cluster, kind, n, None, None, true).await?;
        }
        anstream::eprintln!(
            "✓ dry run: deletes of {} admitted",
            j.target_names()
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if objects::get(cluster, "IPsecGateway", name).await?.is_none() {
            objects::create(cluster, &j.old_manifest, true).await?;
            anstream::eprintln!("✓ dry run: create of IPsecGateway {name} admitted");
        }
        anstream::eprintln!("dry run: nothing was changed");
        return Ok(exit::OK);
    }
    let mut w = Window {
        cluster,
        journal: j,
        lock: held,
        by,
    };
    let t = roll_back(&mut w, &args.timeouts).await?;
    anstream::print!(
        "{}",
        render::report("rollback", &w.journal, &t.rows, args.output)
    );
    Ok(exit::OK)
}

/// The rollback steps from the journal's phase to `RolledBack` (also run by
/// `cutover --rollback-on-failure`, under the cutover's lock).
pub async fn roll_back(w: &mut Window<'_>, t: &Timeouts) -> Result<Tunnels, Error> {
    match steps(w, t).await {
        Err(e) if !matches!(e, Error::Lock(_)) => {
            let line = crate::cli::error_line(&e);
            w.record_error(&line).await;
            if matches!(e, Error::Stop { .. }) {
                return Err(e);
            }
            let (name, ns) = (w.name().to_string(), w.ns().to_string());
            Err(Error::Stop {
                code: e.exit_code(),
                message: format!(
                    "rollback of {ns}/{name} stopped at phase {}: {line}",
                    w.journal.phase
                ),
                hint: Some(format!(
                    "once the cause is fixed, `vpnmig rollback {name} -n {ns}` resumes from there{}",
                    e.hint().map(|h| format!(" ({h})")).unwrap_or_default()
                )),
            })
        }
        other => other,
    }
}

async fn steps(w: &mut Window<'_>, t: &Timeouts) -> Result<Tunnels, Error> {
    let (name, ns) = (w.name().to_string(), w.ns().to_string());
    let cluster = w.cluster;
    let again = Some(format!(
        "`vpnmig rollback {name} -n {ns}` resumes the rollback"
    ));
    if !w.journal.phase.rolling_back() {
        w.save(Phase::RollingBack).await?;
    }
    // Nothing being deleted may take the PSK Secret with it: detach it from the new
    // objects (and an old gateway still unwinding) first, then guard it while they go.
    let owners = window_owners(w).await?;
    if w.journal.phase < Phase::OldApplied {
        w.detach_psk(&owners, "the objects being deleted").await?;
    }
    if w.journal.phase < Phase::NewDeleted {
        w.check_lock().await?;
        let targets = w.journal.target_names();
        for (kind, n) in targets.iter().rev().filter(|(k, _)| k != "VPNGateway") {
            objects::delete(cluster, kind, n, None, None, false).await?;
        }
        delete_new_gateway(w).await?;
        let peers = w.journal.peer_names();
        let title = format!("delete VPNPeer {}", peers.join(", "));
        let wait = window::wait_gone(cluster, "VPNPeer", &peers, t.timeout_delete, &title);
        if let Err(d) = w.guarded(&owners, wait).await? {
            return Err(timed_out(
                "the VPNPeers to be deleted",
                t.timeout_delete,
                &d,
                again,
            ));
        }
        let title = format!("delete VPNGateway {ns}/{name}");
        let wait = window::wait_gone(
            cluster,
            "VPNGateway",
            std::slice::from_ref(&name),
            t.timeout_delete,
            &title,
        );
        if let Err(d) = w.guarded(&owners, wait).await? {
            return Err(timed_out(
                &format!("VPNGateway {ns}/{name} to be deleted"),
                t.timeout_delete,
                &d,
                again,
            ));
        }
        w.save(Phase::NewDeleted).await?;
    }
    if w.journal.phase < Phase::OldApplied {
        w.check_lock().await?;
        if let Some(old) = objects::get(cluster, "IPsecGateway", &name).await? {
            if old.pointer("/metadata/deletionTimestamp").is_some() {
                // An interrupted cutover's delete is still unwinding: let it finish first.
                let title = format!(
                    "delete of IPsecGateway {ns}/{name} (started by the cutover) to finish"
                );
                let wait = window::wait_gone(
                    cluster,
                    "IPsecGateway",
                    std::slice::from_ref(&name),
                    t.timeout_delete,
                    &title,
                );
                if let Err(d) = w.guarded(&owners, wait).await? {
                    return Err(timed_out(
                        &format!("IPsecGateway {ns}/{name} to be deleted"),
                        t.timeout_delete,
                        &d,
                        Some(format!(
                            "the operator's unwind of the old IPsecGateway has not finished and its finalizer is the operator's to remove: look at the operator's logs; once it is gone, `vpnmig rollback {name} -n {ns}` resumes"
                        )),
                    ));
                }
                create_old(w).await?;
            } else {
                anstream::eprintln!(
                    "✓ IPsecGateway {ns}/{name} is still there (uid {}): kept",
                    old.pointer("/metadata/uid")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                );
            }
        } else {
            create_old(w).await?;
        }
        window::check_psk(w).await?;
        w.save(Phase::OldApplied).await?;
    }
    let me = [name.clone()];
    let title = format!(
        "IPsecGateway {ns}/{name} FIPAttached (floating IP {})",
        w.journal.floating_ip
    );
    if let Err(d) = window::wait_conditions(
        cluster,
        "IPsecGateway",
        &me,
        &["FIPAttached"],
        t.timeout_attach,
        &title,
    )
    .await?
    {
        return Err(timed_out(
            &format!("IPsecGateway {ns}/{name} FIPAttached"),
            t.timeout_attach,
            &d,
            again,
        ));
    }
    let title = format!("IPsecGateway {ns}/{name} Ready");
    if let Err(d) = window::wait_conditions(
        cluster,
        "IPsecGateway",
        &me,
        &["Ready"],
        t.timeout_attach,
        &title,
    )
    .await?
    {
        return Err(timed_out(
            &format!("IPsecGateway {ns}/{name} Ready"),
            t.timeout_attach,
            &d,
            again,
        ));
    }
    // The old kind cannot pin its serviceCIDR: say at once if the operator gave another.
    let status = objects::get(cluster, "IPsecGateway", &name)
        .await?
        .and_then(|o| o.get("status").cloned())
        .unwrap_or_default();
    let lost = journal::lost_addresses(&w.journal, &status);
    if !lost.is_empty() {
        let message = format!(
            "IPsecGateway {ns}/{name} is back with its floating IP, but the operator allocated other addresses: {}",
            lost.join(", ")
        );
        w.record_error(&message).await;
        return Err(Error::Stop {
            code: exit::VERIFY_FAILED,
            message,
            hint: Some(format!(
                "the IPsecGateway kind has no spec field for its serviceCIDR, so a re-created one gets the next free /24 (the runbook's rollback cannot pin it). \
The client's routes and firewall name the old addresses: either change them on the client side, or move forward again with `vpnmig cutover {name} -n {ns} --forward`: the journal's VPNGateway pins them"
            )),
        });
    }
    let (service_cidr, virtual_ips) = w.journal.pinned_addresses();
    let expect = window::Expect {
        kind: "IPsecGateway",
        service_cidr,
        virtual_ips,
    };
    let tunnels = window::wait_tunnels(cluster, &name, t.timeout_tunnel, &expect).await?;
    if let Some(d) = &tunnels.timed_out {
        return Err(timed_out(
            &format!(
                "the tunnels of {ns}/{name} (journal phase {})",
                w.journal.phase
            ),
            t.timeout_tunnel,
            d,
            Some(format!(
                "the IPsecGateway is back and Ready; only its tunnels are missing. The client's peer re-initiates on its own DPD/retry timer; a PSK or proposal mismatch shows in the client's logs. `vpnmig rollback {name} -n {ns}` waits for them again"
            )),
        ));
    }
    w.save(Phase::RolledBack).await?;
    if let Some(d) = &w.journal.psk_detached {
        anstream::eprintln!(
            "note: PSK Secret {} stays detached ({} ownerReference(s) to the deleted gateway were removed by the cutover; they would point at an object that no longer exists)",
            d.secret,
            d.removed_owner_references.len()
        );
    }
    Ok(tunnels)
}

/// The live VPNGateway (if any) pins the journal's floating IP: deleting it then only
/// disassociates the address. Checked before the prompt and again right before the
/// delete (also under `cutover --rollback-on-failure`).
async fn new_fip_pinned(cluster: &Cluster, j: &Journal) -> Result<Option<(String, String)>, Error> {
    let (name, ns) = (j.gateway.as_str(), j.namespace.as_str());
    let Some(gw) = objects::get(cluster, "VPNGateway", name).await? else {
        return Ok(None);
    };
    {
        let pinned = gw
            .pointer("/spec/endpoint/floatingIP")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if pinned != j.floating_ip {
            return Err(Error::Stop {
                code: exit::REFUSED,
                message: format!(
                    "VPNGateway {ns}/{name} pins floating IP `{pinned}`, not {}: deleting it could release the address to the pool",
                    j.floating_ip
                ),
                hint: Some(format!(
                    "pin it first: kubectl patch vpngateway {name} -n {ns} --type merge -p '{{\"spec\":{{\"endpoint\":{{\"floatingIP\":\"{}\"}}}}}}'",
                    j.floating_ip
                )),
            });
        }
    }
    let s = |p: &str| {
        gw.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    Ok(Some((s("/metadata/uid"), s("/metadata/resourceVersion"))))
}

/// Delete the VPNGateway: the very version whose pinned floating IP was just checked
/// (uid and resourceVersion preconditions; a change in between is checked again).
async fn delete_new_gateway(w: &Window<'_>) -> Result<(), Error> {
    for _ in 0..5 {
        let Some((uid, rv)) = new_fip_pinned(w.cluster, &w.journal).await? else {
            return Ok(());
        };
        match objects::delete(
            w.cluster,
            "VPNGateway",
            w.name(),
            Some(&uid),
            Some(&rv),
            false,
        )
        .await
        {
            Ok(_) => return Ok(()),
            Err(e) if objects::status(&e) == Some(409) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(Error::Stop {
        code: exit::FAILURE,
        message: format!(
            "VPNGateway {}/{} kept changing between the check and the delete (5 tries)",
            w.ns(),
            w.name()
        ),
        hint: Some(format!(
            "`vpnmig rollback {} -n {}` resumes",
            w.name(),
            w.ns()
        )),
    })
}

/// What the PSK Secret must not be owned by during this rollback.
async fn window_owners(w: &Window<'_>) -> Result<Owners, Error> {
    let mut uids = Vec::new();
    for (kind, n) in w.journal.target_names() {
        if let Some(o) = objects::get(w.cluster, &kind, &n).await?
            && let Some(uid) = o.pointer("/metadata/uid").and_then(Value::as_str)
        {
            uids.push(uid.to_string());
        }
    }
    Ok(Owners::of_window(&w.journal, uids))
}

async fn create_old(w: &Window<'_>) -> Result<(), Error> {
    let created = objects::create(w.cluster, &w.journal.old_manifest, false).await?;
    anstream::eprintln!(
        "✓ IPsecGateway {}/{} {} from the saved manifest",
        w.ns(),
        w.name(),
        if created {
            "re-created"
        } else {
            "already exists"
        }
    );
    Ok(())
}
