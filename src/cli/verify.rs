//! `vpnmig verify NAME`: is the gateway healthy — conditions, pinned values, tunnels.

use std::time::{Duration, Instant};

use crate::cli::Error;
use crate::cli::cluster_args::{ClusterArgs, parse_duration};
use crate::cluster::{Cluster, verify as fetch};
use crate::core::dataplane::{self, Baseline};
use crate::core::duration::{self, Rounding};
use crate::core::swanctl::Sas;
use crate::core::verify::{self, Row, Verdict};
use crate::exit;
use crate::output::verify::render;

/// Check that a gateway is healthy: conditions, pinned values, tunnels.
///
/// Conditions must describe the current generation (FIPAttached, Ready, each
/// peer's Authorized); live status is compared with the pinned floating IP, service CIDR and
/// virtual IPs, and the tunnels: `swanctl --list-sas` in the gateway pod must show, per
/// peer, an ESTABLISHED IKE SA with the right remote address and identity and INSTALLED
/// CHILD SAs covering its remote subnets. A peer up but not Authorized is reported dark.
///
/// Works on a migrated gateway (VPNGateway + VPNPeers) and on an IPsecGateway, to take a
/// baseline before the window. Changes nothing.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  vpnmig verify acme -n tenant-acme
  vpnmig verify acme --wait --timeout 5m      # after a cutover: until healthy
  vpnmig verify acme --baseline               # the data plane as it is now (what cutover compares)
  set -o pipefail; vpnmig verify acme -o json | jq '.[] | select(.verdict==\"fail\")'

Exit codes: 0 healthy, 1 the cluster could not be read, 5 not healthy, 6 --wait timed out.")]
pub struct VerifyArgs {
    /// kubectl's cluster flags, from the top-level command (global).
    #[arg(skip)]
    pub cluster: ClusterArgs,
    /// The gateway (VPNGateway, else IPsecGateway) in the namespace.
    #[arg(value_name = "NAME", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    name: String,
    /// Check again every 2s until healthy or --timeout, showing what is still missing.
    #[arg(long)]
    wait: bool,
    /// How long --wait waits, e.g. `90s`, `5m`.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5m", requires = "wait")]
    timeout: Duration,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = VerifyFormat::Text)]
    output: VerifyFormat,
    /// The approved plan bundle (`plan --out DIR`): every pinned value of the live objects
    /// is compared with it. Without it, the gateway's journal (ConfigMap vpnmig-NAME) is
    /// the reference when there is one.
    #[arg(long, value_name = "DIR")]
    plan: Option<std::path::PathBuf>,
    /// Record the gateway's data plane instead of checking it: per tunnel the identities,
    /// addresses, IKE version and algorithms, NAT-T; per CHILD SA the mode, protocol,
    /// algorithms, traffic selectors and UDP encapsulation (`swanctl --list-sas` in its
    /// pod). Printed (-o json: the document cutover keeps as the journal's
    /// dataPlaneBaseline) and, when a window's journal exists that has not reached the
    /// delete, recorded in it. A cutover records one itself right before the delete.
    #[arg(long, conflicts_with_all = ["wait", "plan"])]
    baseline: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum VerifyFormat {
    /// A table, one row per check.
    Text,
    /// An array of rows.
    Json,
}

/// The approved objects the live ones are compared with, and what to call them: the
/// plan in `--plan DIR`, else the journal's (targets for a VPNGateway, the saved old
/// manifest for an IPsecGateway), else nothing (DESIGN.md §4.7; issue 9 item 1).
async fn reference(
    cluster: &Cluster,
    name: &str,
    plan: Option<&std::path::Path>,
    new_kind: bool,
) -> Result<(Vec<serde_json::Value>, String), Error> {
    if let Some(dir) = plan {
        let (plan, old) = crate::bundle::read_saved(dir)?;
        let source = format!("the plan in {}", dir.display());
        if !new_kind {
            return Ok((vec![old], source));
        }
        let mut objs = vec![plan["targets"]["gateway"].clone()];
        objs.extend(
            plan["targets"]["peers"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        );
        return Ok((objs, source));
    }
    let Some(j) = crate::cluster::journal::read(cluster, name).await? else {
        return Ok((Vec::new(), String::new()));
    };
    let objs = if new_kind {
        j.targets.clone()
    } else {
        vec![j.old_manifest.clone()]
    };
    Ok((objs, "the journal".into()))
}

/// The serviceCIDR and virtual IPs an IPsecGateway must still have, which it cannot pin
/// in its spec: those of `--plan`'s VPNGateway, or of the journal of a window under way
/// (a rollback that lost them stops at old-applied). A finished journal asks nothing: a
/// rollback with `--accept-new-addresses` closed it on purpose.
async fn expected_addresses(
    cluster: &Cluster,
    name: &str,
    plan: Option<&std::path::Path>,
) -> Result<(Option<String>, Vec<(String, String)>), Error> {
    if let Some(dir) = plan {
        let (plan, _) = crate::bundle::read_saved(dir)?;
        return Ok(crate::core::journal::pinned_addresses(
            plan.pointer("/targets/gateway"),
        ));
    }
    Ok(match crate::cluster::journal::read(cluster, name).await? {
        Some(j) if !j.phase.finished() => j.pinned_addresses(),
        _ => (None, Vec::new()),
    })
}

async fn once(
    cluster: &Cluster,
    name: &str,
    plan: Option<&std::path::Path>,
) -> Result<Vec<Row>, Error> {
    let expected = expected_addresses(cluster, name, plan).await?;
    // One `swanctl --list-sas` for the tunnel rows and the data-plane comparison: two
    // reads a moment apart could disagree (a CHILD SA rekeyed, an IKE SA closed by DPD
    // between them), and one verify must not say a tunnel is both up and missing.
    let (mut rows, sas) = once_live(cluster, name, expected).await?;
    let is_new = crate::cluster::objects::get(cluster, "VPNGateway", name)
        .await?
        .is_some();
    let (objs, source) = reference(cluster, name, plan, is_new).await?;
    rows.extend(crate::window::reference_rows(cluster, &objs, &source).await?);
    if is_new {
        rows.extend(data_plane(cluster, name, sas.as_ref()).await?);
        rows.extend(fip_row(cluster, name, "VPNGateway").await?);
    } else if crate::cluster::journal::read(cluster, name)
        .await?
        .is_some()
    {
        // The IPsecGateway a window left (rolled back) or is under way with: the same
        // row (a21n C11: a reverted source that also defined a VPNGateway of another name
        // with the same floating IP; the rollback and verify said HEALTHY).
        rows.extend(fip_row(cluster, name, "IPsecGateway").await?);
    }
    rows.extend(psk_row(cluster, name).await?);
    rows.extend(left_row(cluster, name, is_new).await?);
    Ok(rows)
}

/// A finished window whose gateway is not the kind it left, or is being deleted: one
/// failed row (a21e 6, 11; the kind that is there may itself look healthy). Nothing when
/// as left, under way, or without a journal.
async fn left_row(cluster: &Cluster, name: &str, is_new: bool) -> Result<Vec<Row>, Error> {
    let Some(j) = crate::cluster::journal::read(cluster, name).await? else {
        return Ok(Vec::new());
    };
    let Some(kind) = j.left_kind() else {
        return Ok(Vec::new());
    };
    let old = crate::cluster::objects::get(cluster, "IPsecGateway", name).await?;
    let new = if is_new {
        crate::cluster::objects::get(cluster, "VPNGateway", name).await?
    } else {
        None
    };
    Ok(j.left_text(j.left(old.as_ref(), new.as_ref()))
        .map(|detail| Row {
            check: "window",
            object: format!("{kind} {}/{name}", cluster.namespace),
            what: format!("as the window left it (journal phase {})", j.phase),
            verdict: Verdict::Fail,
            detail,
        })
        .into_iter()
        .collect())
}

/// The migrated gateway's floating IP against every other gateway of either kind in all
/// namespaces (a21m B15, B18: a merged source that also defined the old gateway under
/// another name, with the same floating IP; the operator left it at `AlreadyAssociated`,
/// `status` said `fip-shared`, and verify said HEALTHY). One failed row per other gateway
/// that claims it; a refused list is a failed row too ("could not check" is never green).
/// Nothing when the gateway has no floating IP yet (its conditions say so).
async fn fip_row(cluster: &Cluster, name: &str, kind: &str) -> Result<Vec<Row>, Error> {
    let Some(gw) = crate::cluster::objects::get(cluster, kind, name).await? else {
        return Ok(Vec::new());
    };
    let Some(fip) = [
        &gw["spec"]["endpoint"]["floatingIP"],
        &gw["status"]["floatingIP"],
    ]
    .into_iter()
    .filter_map(|v| v.as_str())
    .map(str::trim)
    .find(|f| !f.is_empty())
    .map(str::to_string) else {
        return Ok(Vec::new());
    };
    let ns = cluster.namespace.as_str();
    let row = |detail: String| Row {
        check: "floating IP",
        object: format!("{kind} {ns}/{name}"),
        what: format!("{fip} claimed by no other gateway"),
        verdict: Verdict::Fail,
        detail,
    };
    Ok(match fip_claimants(cluster, ns, name, &fip).await? {
        Err(why) => vec![row(format!(
            "could not check: the gateways of every namespace could not be listed ({why})"
        ))],
        Ok(others) => others
            .iter()
            .map(|o| {
                let kind = o.object.split(' ').next().unwrap_or_default();
                row(format!(
                    "{} also claims it: the operator attaches a floating IP to one gateway and leaves the other at FIPAttached=False (AlreadyAssociated), and which one the client's firewall reaches is not certain; if it is a leftover, `kubectl delete {} {} -n {}` and make sure the repository no longer defines it",
                    o.object,
                    kind.to_lowercase(),
                    o.name,
                    o.namespace
                ))
            })
            .collect(),
    })
}

/// The gateways other than `ns/name` (either kind, any name, any namespace) that claim
/// the floating IP `fip`, compared as addresses (`/32` is the same IP). `Ok(Err(why))`:
/// the gateways of every namespace could not be listed (a refusal, never read as "none").
/// For `verify`, `report` and `status`.
pub(crate) async fn fip_claimants(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    fip: &str,
) -> Result<Result<Vec<crate::core::live::OtherGateway>, String>, crate::cluster::KubeError> {
    let me = (ns.to_string(), name.to_string());
    Ok(crate::cluster::facts::other_gateways(cluster, &me)
        .await?
        .map(|others| {
            others
                .into_iter()
                .filter(|o| {
                    o.floating_ip
                        .as_deref()
                        .is_some_and(|t| crate::core::addr::same_addr(t, fip))
                })
                .collect()
        }))
}

/// `kind/name -n ns (`kubectl delete kind name -n ns`)` of another gateway.
pub(crate) fn claimant_shown(o: &crate::core::live::OtherGateway) -> String {
    let kind = o
        .object
        .split(' ')
        .next()
        .unwrap_or_default()
        .to_lowercase();
    format!(
        "{kind}/{} -n {} (`kubectl delete {kind} {} -n {}`)",
        o.name, o.namespace, o.name, o.namespace
    )
}

/// The PSK Secret against the fingerprint the gateway's journal holds (issue 21 item 1,
/// round 4; a22 F7): one row, failed when the key is not the one the window
/// fingerprinted, the Secret is gone or re-created, or it could not be read ("could not
/// check" is never green). No journal, or one without a fingerprint: no row. Never a value.
async fn psk_row(cluster: &Cluster, name: &str) -> Result<Vec<Row>, Error> {
    use crate::core::psk::{self, Held};
    let Some(j) = crate::cluster::journal::read(cluster, name).await? else {
        return Ok(Vec::new());
    };
    let Some(then) = j.psk_fingerprint.clone() else {
        return Ok(Vec::new());
    };
    let (ns, secret, key) = (j.namespace.as_str(), j.psk_secret.as_str(), j.psk_key());
    let row = |verdict, detail: String| Row {
        check: "psk",
        object: format!("Secret {ns}/{secret}"),
        what: format!("key {key} fingerprint"),
        verdict,
        detail,
    };
    let live = crate::cluster::gitops::get_kept(cluster, "v1", "Secret", ns, secret).await;
    let out = match live {
        Err(e) => row(
            Verdict::Fail,
            format!("could not check: the Secret could not be read ({e}); the journal has {then}"),
        ),
        Ok(live) => match psk::held(
            Some(&then),
            j.psk_secret_uid.as_deref(),
            ns,
            secret,
            key,
            live.as_ref(),
        ) {
            Held::Same { fingerprint } => row(Verdict::Ok, format!("{fingerprint}, as journaled")),
            Held::RecreatedSame {
                then: a,
                now: b,
                fingerprint,
            } => row(
                Verdict::Ok,
                format!(
                    "{fingerprint}, as journaled (the Secret was re-created, uid {a} → {b}: its key fingerprinted with the journal's uid is the journal's)"
                ),
            ),
            Held::Unrecorded => return Ok(Vec::new()),
            Held::Gone => row(
                Verdict::Fail,
                format!("the Secret is gone; the journal has {then}"),
            ),
            Held::Changed { now, .. } => row(
                Verdict::Fail,
                format!(
                    "{}, the journal has {then}{}",
                    now.as_deref().unwrap_or("no such key"),
                    live.as_ref()
                        .and_then(crate::core::gitops::writer)
                        .map(|w| format!("; last written by {w}"))
                        .unwrap_or_default()
                ),
            ),
            Held::Recreated { then: a, now: b } => row(
                Verdict::Fail,
                format!(
                    "re-created since the window (uid {a} → {b}): its key cannot be compared with the journal's {then}, which is keyed by the old Secret's uid"
                ),
            ),
        },
    };
    Ok(vec![out])
}

/// The migrated gateway's data plane compared with the baseline the cutover recorded of
/// the old one (journal `dataPlaneBaseline`; issue 12 item 1), read from `sas`, the SAs
/// the tunnel rows were read from: nothing when there is no baseline or the SAs could not
/// be read (the tunnel rows say so).
async fn data_plane(cluster: &Cluster, name: &str, sas: Option<&Sas>) -> Result<Vec<Row>, Error> {
    // A baseline without a tunnel up has nothing to compare: no row rather than a
    // green one (attack finding).
    let Some(before) = crate::cluster::journal::read(cluster, name)
        .await?
        .and_then(|j| j.data_plane_baseline)
        .filter(|b| !b.tunnels.is_empty())
    else {
        return Ok(Vec::new());
    };
    let Some(sas) = sas else {
        return Ok(Vec::new());
    };
    let object = format!("VPNGateway {}/{name}", cluster.namespace);
    let after = Baseline::from_sas(sas, &crate::window::now(), &object);
    Ok(dataplane::verify_rows(
        &dataplane::compare(&before, &after),
        &object,
    ))
}

/// `verify --baseline`: the gateway's data plane as it is now, recorded into its journal
/// when a window has one that has not reached the delete (cutover then keeps the one with
/// more tunnels).
async fn baseline(cluster: &Cluster, name: &str) -> Result<Baseline, Error> {
    let kind = if crate::cluster::objects::get(cluster, "VPNGateway", name)
        .await?
        .is_some()
    {
        "VPNGateway"
    } else {
        "IPsecGateway"
    };
    let sas = fetch::sas(cluster, name).await?.map_err(|why| Error::Stop {
        code: exit::VERIFY_FAILED,
        message: format!("the SAs of {kind} {}/{name} could not be read: {why}", cluster.namespace),
        hint: Some(format!("`kubectl exec -n {} deploy/{name} -c strongswan -- swanctl --list-sas` shows what the gateway says", cluster.namespace)),
    })?;
    let b = Baseline::from_sas(
        &sas,
        &crate::window::now(),
        &format!("{kind} {}/{name}", cluster.namespace),
    );
    if let Some(mut j) = crate::cluster::journal::read(cluster, name).await?
        && j.phase < crate::core::journal::Phase::Deleting
    {
        j.data_plane_baseline = Some(b.clone());
        crate::cluster::journal::write(cluster, &j, false).await?;
        crate::output::say(&format!(
            "recorded in the journal (ConfigMap {}/{}), phase {}",
            cluster.namespace,
            crate::core::journal::object_name(name),
            j.phase
        ));
    }
    Ok(b)
}

async fn once_live(
    cluster: &Cluster,
    name: &str,
    (cidr, vips): (Option<String>, Vec<(String, String)>),
) -> Result<(Vec<Row>, Option<Sas>), Error> {
    let mut view = match fetch::view(cluster, name).await {
        Ok(v) => v,
        // Neither kind exists: between a delete and a create, a window may be under way.
        Err(e @ crate::cluster::KubeError::NotFound { .. }) => {
            if let Ok(Some(j)) = crate::cluster::journal::read(cluster, name).await {
                // Before its delete, the IPsecGateway gone all the same: vpnmig deleted
                // nothing, someone else did; never "nothing was deleted … untouched", and
                // what stands in its place is named (a21p E10: another name).
                if !j.phase.past_delete() && !j.phase.finished() {
                    let (what, ways) =
                        crate::window::gone_before_the_delete(cluster, &j, false).await;
                    return Err(Error::Stop {
                        code: exit::VERIFY_FAILED,
                        message: what,
                        hint: Some(ways),
                    });
                }
                // A finished window whose gateway is gone since: never "no journal"
                // (a21e 6, 11).
                let message = j.left_text(j.left(None, None)).unwrap_or_else(|| format!(
                    "neither a VPNGateway nor an IPsecGateway {name} exists in namespace {}: a window is under way (journal phase {})",
                    cluster.namespace, j.phase
                ));
                return Err(Error::Stop {
                    code: exit::VERIFY_FAILED,
                    message,
                    hint: Some(
                        j.left_todo(j.left(None, None))
                            .unwrap_or_else(|| j.recovery()),
                    ),
                });
            }
            let hint =
                match crate::state::lost_journal_hint(&cluster.server, &cluster.namespace, name) {
                    Some(h) => Some(h),
                    None => crate::cluster::journal::archive_hint(cluster, name).await,
                };
            if let Some(hint) = hint {
                return Err(Error::Stop {
                    code: exit::FAILURE,
                    message: format!(
                        "{e}, and there is no journal of it: a window may have lost its journal"
                    ),
                    hint: Some(hint),
                });
            }
            return Err(e.into());
        }
        Err(e) => return Err(e.into()),
    };
    // What the kind cannot pin is still pinned (issue 9 item 1): compared with status.
    if view.pinned_cidr.is_none() {
        view.pinned_cidr = cidr;
    }
    if view.pinned_vips.is_empty() {
        view.pinned_vips = vips;
    }
    let (sas, start) = fetch::sas_and_start(cluster, name).await?;
    // A restart of the gateway's charon is a change too: what it logged before is past.
    fetch::reloaded(&mut view, start);
    let rows = verify::verify(&view, sas.as_ref().map_err(String::as_str));
    Ok((rows, sas.ok()))
}

async fn rows_async(args: &VerifyArgs) -> Result<(Vec<Row>, bool), Error> {
    let cluster = Cluster::connect(&args.cluster.options()).await?;
    let text = args.output == VerifyFormat::Text;
    if text {
        crate::output::say(&cluster.banner(false));
    }
    if !args.wait {
        cluster.require_operator().await?;
        return Ok((
            once(&cluster, &args.name, args.plan.as_deref()).await?,
            false,
        ));
    }
    // --timeout bounds the whole wait, whatever the API server does; an outage or a
    // dropped connection during the wait is one more thing still missing, not the end.
    let started = Instant::now();
    let mut rows = Vec::new();
    // Why the last attempt could not read the cluster: a wait that never read it ends
    // with that, never with an empty (and so "healthy") table (issue 9 item 0).
    let mut unread: Option<String> = None;
    loop {
        let remaining = args.timeout.saturating_sub(started.elapsed());
        if remaining.is_zero() {
            if rows.is_empty() {
                return Err(never_read(args, &cluster, unread));
            }
            return Ok((rows, true));
        }
        let attempt_started = Instant::now();
        let attempt = tokio::time::timeout(remaining, async {
            cluster.require_operator().await?;
            once(&cluster, &args.name, args.plan.as_deref()).await
        })
        .await;
        let missing: Vec<String> = match attempt {
            Err(_) => {
                if rows.is_empty() {
                    // Cut short by the deadline: name what was under way, a command in
                    // the gateway's pod rather than the API server when it was that.
                    if let Some(cmd) = fetch::exec_cut(attempt_started) {
                        return Err(Error::Stop {
                            code: exit::TIMEOUT,
                            message: format!(
                                "timed out after {} waiting for {}: {cmd} did not finish: the pod's strongSwan does not answer (the API server did)",
                                duration::format(args.timeout, Rounding::Down),
                                args.name
                            ),
                            hint: Some(format!(
                                "the gateway's health is unknown, not good: `kubectl logs -n {} deploy/{} -c strongswan` shows whether charon runs; a pod whose charon hangs needs a restart (`kubectl rollout restart -n {} deploy/{}`)",
                                cluster.namespace, args.name, cluster.namespace, args.name
                            )),
                        });
                    }
                    return Err(never_read(
                        args,
                        &cluster,
                        unread.or(Some(format!(
                            "the API server {} did not answer",
                            cluster.server
                        ))),
                    ));
                }
                return Ok((rows, true));
            }
            Ok(Ok(now)) => {
                unread = None;
                rows = now;
                if verify::healthy(&rows) {
                    return Ok((rows, false));
                }
                rows.iter()
                    .filter(|r| r.verdict == Verdict::Fail)
                    .map(|r| format!("{} {}: {}", r.object, r.what, r.detail))
                    .collect()
            }
            // Refusals do not heal by waiting.
            Ok(Err(
                e @ Error::Window(crate::window::error::Error::Cluster(
                    crate::cluster::KubeError::Forbidden { .. }
                    | crate::cluster::KubeError::Unauthorized { .. }
                    | crate::cluster::KubeError::NotFound { .. },
                )),
            )) => return Err(e),
            Ok(Err(e)) => {
                unread = Some(crate::cli::error_line(&e));
                vec![format!("cannot read the cluster: {e}")]
            }
        };
        // Progress goes to stderr in every mode: stdout stays the document.
        crate::output::say(&format!(
            "waiting {} of {}: {}",
            duration::format(started.elapsed(), Rounding::Down),
            duration::format(args.timeout, Rounding::Down),
            missing.join("; ")
        ));
        tokio::time::sleep(
            Duration::from_secs(2).min(args.timeout.saturating_sub(started.elapsed())),
        )
        .await;
    }
}

/// A `--wait` that ran out of time without one answer from the cluster: exit 6, with the
/// last reason; there is no table, because nothing was seen.
fn never_read(args: &VerifyArgs, cluster: &Cluster, why: Option<String>) -> Error {
    Error::Stop {
        code: exit::TIMEOUT,
        message: format!(
            "timed out after {} without reading {} from the cluster: {}",
            duration::format(args.timeout, Rounding::Down),
            args.name,
            why.unwrap_or_else(|| "no answer".into())
        ),
        hint: Some(format!(
            "nothing is known about the gateway's health; `kubectl cluster-info --context {}` tells whether the API server answers",
            cluster.context
        )),
    }
}

/// The rows, whether `--wait` ran out of time, and, when the gateway is not as its window
/// left it (a failed `window` row), what to do from there ([`Journal::left_todo`]): the
/// generic hint would offer a rollback that refuses (a21f A7).
///
/// [`Journal::left_todo`]: crate::core::journal::Journal::left_todo
async fn run_async(args: &VerifyArgs) -> Result<(Vec<Row>, bool, Option<String>), Error> {
    let (rows, timed_out) = rows_async(args).await?;
    let mut todo = None;
    if rows
        .iter()
        .any(|r| r.check == "window" && r.verdict == Verdict::Fail)
    {
        let cluster = Cluster::connect(&args.cluster.options()).await?;
        if let Some(j) = crate::cluster::journal::read(&cluster, &args.name).await? {
            let old = crate::cluster::objects::get(&cluster, "IPsecGateway", &args.name).await?;
            let new = crate::cluster::objects::get(&cluster, "VPNGateway", &args.name).await?;
            todo = j.left_todo(j.left(old.as_ref(), new.as_ref()));
        }
    }
    Ok((rows, timed_out, todo))
}

pub fn run(args: &VerifyArgs) -> Result<i32, Error> {
    if args.baseline {
        let b = crate::cli::runtime()?.block_on(async {
            let cluster = Cluster::connect(&args.cluster.options()).await?;
            if args.output == VerifyFormat::Text {
                crate::output::say(&cluster.banner(false));
            }
            baseline(&cluster, &args.name).await
        })?;
        let doc = match args.output {
            VerifyFormat::Text => crate::output::dataplane::baseline(&b),
            VerifyFormat::Json => {
                serde_json::to_string_pretty(&b).expect("baseline serializes") + "\n"
            }
        };
        crate::cli::write_stdout(&doc)?;
        return Ok(exit::OK);
    }
    let (rows, timed_out, todo) = crate::cli::runtime()?.block_on(run_async(args))?;
    let doc = match args.output {
        VerifyFormat::Text => render(&rows, crate::output::width::detect()),
        VerifyFormat::Json => serde_json::to_string_pretty(&rows).expect("rows serialize") + "\n",
    };
    crate::cli::write_stdout(&doc)?;
    Ok(match (verify::healthy(&rows), timed_out) {
        (true, _) => exit::OK,
        (false, true) => {
            // The cause at the timeout is what still fails, the tunnels' first.
            let mut failing: Vec<&Row> =
                rows.iter().filter(|r| r.verdict == Verdict::Fail).collect();
            failing.sort_by_key(|r| r.check != "tunnel");
            let cause = failing
                .first()
                .map(|r| format!(": {} {}: {}", r.object, r.what, r.detail))
                .unwrap_or_default();
            crate::output::say(&format!(
                "vpnmig: timed out after {} waiting for {} to be healthy{cause}",
                duration::format(args.timeout, Rounding::Down),
                args.name
            ));
            exit::TIMEOUT
        }
        (false, false) => {
            // A verdict that names what to run next, like every stop (issue 14 item 6).
            crate::output::say(&match todo {
                Some(todo) => format!("hint: {todo}"),
                None => next_steps(&rows, &args.name),
            });
            exit::VERIFY_FAILED
        }
    })
}

/// What to run after NOT HEALTHY: wait for what is still coming up, look at a window
/// under way, and (for a migrated gateway) the rollback.
fn next_steps(rows: &[Row], name: &str) -> String {
    // A key that is not the client's: only the client's key brings the tunnel back; a
    // rollback reads the same Secret and cannot fix it.
    if let Some(p) = rows
        .iter()
        .find(|r| r.check == "psk" && r.verdict == Verdict::Fail)
    {
        let (ns, secret) = p
            .object
            .trim_start_matches("Secret ")
            .split_once('/')
            .unwrap_or(("", ""));
        let key = p
            .what
            .trim_start_matches("key ")
            .trim_end_matches(" fingerprint");
        return format!(
            "hint: the PSK Secret does not hold the key the window fingerprinted: put the client's key back (`{}`; vpnmig never stores it), make the repository's copy hold it too if an owner syncs the Secret, then `vpnmig verify {name} -n {ns}`; a rollback cannot fix it (the IPsecGateway reads the same Secret)",
            crate::core::psk::recreate_command(ns, secret, key)
        );
    }
    let gateway = rows
        .iter()
        .find(|r| r.object.starts_with("VPNGateway ") || r.object.starts_with("IPsecGateway "))
        .map(|r| r.object.as_str());
    let ns = gateway
        .and_then(|o| o.split_once(' '))
        .and_then(|(_, nn)| nn.split_once('/'))
        .map(|(ns, _)| format!(" -n {ns}"))
        .unwrap_or_default();
    let rollback = if gateway.is_some_and(|o| o.starts_with("VPNGateway ")) {
        format!("; `vpnmig rollback {name}{ns}` restores the IPsecGateway")
    } else {
        String::new()
    };
    format!(
        "hint: each failed check says why (a pinned value names the field manager that changed it: set it back); `vpnmig verify {name}{ns} --wait --timeout 5m` waits for what is still coming up; `vpnmig status{ns}` says whether a window is under way (and the command that goes on) and names a gateway live again beside it{rollback}"
    )
}
