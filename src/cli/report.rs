//! `vpnmig report NAME`: a window's change record, rendered from its journal (issue 12
//! item 4; docs/report.md). Read-only. Also what `cutover --report FILE` writes and the
//! `record:` line `cutover` and `rollback` end with.

use std::path::{Path, PathBuf};

use crate::cli::Error;
use crate::cli::cluster_args::ClusterArgs;
use crate::cluster::{Cluster, objects};
use crate::core::journal::object_name;
use crate::core::record::{self, ClusterIdentity, Record};
use crate::exit;
use crate::output::record::{Format, render};

/// Print the change record of a maintenance window, from its journal.
///
/// Reads the journal (ConfigMap vpnmig-NAME in the gateway's namespace) and the cluster's
/// identity (the API server and the uid of namespace kube-system), and prints what a
/// change ticket needs: the outcome, who ran it and from where, the approved plan's
/// fingerprint and whether the live gateway matched it, every pinned value, the plan's
/// checks and their verdicts, the timeline of phases, the data-plane comparison, the
/// outage and its parts, and the recovery steps taken. Works for done, failed, rolled
/// back and in-progress windows; changes nothing.
///
/// The journal's history is hash-chained (each entry holds the SHA-256 of the one before):
/// the record says whether the chain is intact, and a broken chain (an entry edited after
/// it was written) exits 5 after printing the record. The chain proves the history is
/// internally consistent, not who wrote it: every record says what it covers and what it
/// does not. Secrets appear only as the fingerprint the journal holds.
///
/// A new cutover after a rollback archives the rolled-back window's journal in its own
/// ConfigMap (vpnmig-NAME.window-N, or that name with -2, -3, … when something else has
/// it): the record of the current window lists the earlier ones, and --window N prints the
/// record of one of them.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  vpnmig report acme -n tenant-acme                      # Markdown on stdout
  vpnmig report acme -n tenant-acme -o html --out acme-window.html
  vpnmig report acme -n tenant-acme -o json | jq '.outcome, .chain.status, .outage.totalMs'
  vpnmig report acme -n tenant-acme --window 1           # an earlier, archived window
  vpnmig cutover acme -n tenant-acme --plan plans/acme --report acme-window.md

Formats: md (default), json (docs/report.md), html (one page, inline CSS, no script).
With --out FILE and no -o, the format comes from the file's extension.

Exit codes: 0 printed, 1 no journal (or no archived window N) or the cluster could not be
read, 5 printed, but the journal's hash chain is broken (an entry was changed after it
was written), or the window ended done and a VPNGateway or VPNPeer it made live is gone.")]
pub struct ReportArgs {
    /// kubectl's cluster flags, from the top-level command (global).
    #[arg(skip)]
    pub cluster: ClusterArgs,
    /// The gateway whose window to report (namespace: -n, else the context's).
    #[arg(value_name = "NAME", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub name: String,
    /// Output format (default: md, or the extension of --out).
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<Format>,
    /// Write the record to FILE instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The record of earlier window N of the gateway (archived when a later cutover
    /// replaced its journal; the current record lists them). Default: the current window.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub window: Option<u32>,
}

/// A `--report FILE` (cutover): its format comes from its extension.
pub fn report_path(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    match Format::from_path(&p) {
        Some(_) => Ok(p),
        None => Err(format!(
            "`{s}`: name the file .md, .json or .html (the record's format comes from it)"
        )),
    }
}

/// The cluster's identity for a record.
async fn identity(cluster: &Cluster) -> ClusterIdentity {
    match objects::kube_system_uid(cluster).await {
        Ok(Some(uid)) => ClusterIdentity {
            server: cluster.server.clone(),
            kube_system_uid: Some(uid),
            why: None,
        },
        Ok(None) => ClusterIdentity {
            server: cluster.server.clone(),
            kube_system_uid: None,
            why: Some("the cluster has no namespace kube-system".into()),
        },
        Err(e) => ClusterIdentity {
            server: cluster.server.clone(),
            kube_system_uid: None,
            why: Some(e.to_string()),
        },
    }
}

/// The record of archived window `n` of `name` (`--window N`).
async fn build_archived(cluster: &Cluster, name: &str, n: u32) -> Result<Record, Error> {
    let ns = &cluster.namespace;
    // The current journal names the ConfigMap each earlier window was archived in; without
    // it (or when that one was moved), the archive's labels find it, never its name (T11).
    let current = crate::cluster::journal::read(cluster, name).await;
    let at = match &current {
        Ok(Some(j)) => j
            .earlier_windows
            .iter()
            .find(|e| e.window == n)
            .map(|e| e.config_map.clone()),
        _ => None,
    };
    let found = match &at {
        Some(at) => crate::cluster::journal::read_archived_at(cluster, name, n, at).await?,
        None => crate::cluster::journal::read_archived(cluster, name, n).await?,
    };
    let Some((j, cm)) = found else {
        let listed = match current {
            // The current window asked by its number.
            Ok(Some(j)) if j.window_number() == n => return build(cluster, name).await,
            Ok(Some(j)) if !j.earlier_windows.is_empty() => format!(
                "the archived windows of {name} are {}",
                j.earlier_windows
                    .iter()
                    .map(|e| e.window.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Ok(Some(j)) => format!(
                "{name} has no archived window: the current journal is window {}",
                j.window_number()
            ),
            _ => format!("{name} has no journal"),
        };
        return Err(Error::Stop {
            code: exit::FAILURE,
            message: format!(
                "no archived window {n} of {name} -n {ns}: no ConfigMap labelled {}={n} holds a journal of {name}; {listed}",
                crate::core::journal::ARCHIVE_LABEL
            ),
            hint: Some(format!(
                "`vpnmig report {name} -n {ns}` prints the current window and lists the archived ones"
            )),
        });
    };
    Ok(record::build_archived(&j, identity(cluster).await, &cm, n))
}

/// The change record of `name`'s window in the cluster's namespace.
pub(crate) async fn build(cluster: &Cluster, name: &str) -> Result<Record, Error> {
    let ns = &cluster.namespace;
    let Some(j) = crate::cluster::journal::read(cluster, name).await? else {
        return Err(Error::Stop {
            code: exit::FAILURE,
            message: format!(
                "no journal of {name} -n {ns}: ConfigMap {} does not exist, so there is no window to report",
                object_name(name)
            ),
            hint: Some(
                crate::cluster::journal::archive_hint(cluster, name)
                    .await
                    .unwrap_or_else(|| format!(
                        "a record is kept for each window `vpnmig cutover {name} -n {ns}` starts; `vpnmig status -n {ns} -o wide` lists the windows of the namespace"
                    )),
            ),
        });
    };
    let mut r = record::build(&j, identity(cluster).await);
    r.read_now(read_now(cluster, &j).await);
    Ok(r)
}

/// A finished window's gateway as read now, where another gateway claims its floating IP
/// (any name, any namespace, either kind; `/32` is the same address) or whether one does
/// could not be read (a refusal or an API that did not answer: said, never "none"; a21o
/// D06, D16: the record said "done: the cutover is complete" beside one). `None`: none
/// claims it, under way, or the gateway the window left is not live (`left_now` says so).
async fn read_now(
    cluster: &Cluster,
    j: &crate::core::journal::Journal,
) -> Option<record::ReadAtReport> {
    let left = j.left_kind()?;
    let name = j.gateway.as_str();
    let ns = j.namespace.as_str();
    // A done window's new objects gone since (a21p E21, E24: pruned by a restored owner's
    // first sync): the cutover is not complete, whatever the journal's phase says.
    let gone = gone_targets(cluster, j).await;
    let gw = crate::cluster::objects::get(cluster, left, name)
        .await
        .ok()
        .flatten()
        .filter(|gw| gw.pointer("/metadata/deletionTimestamp").is_none());
    let fip = gw.as_ref().and_then(floating_ip_of);
    let mut now = record::ReadAtReport {
        note: record::READ_AT_REPORT,
        gateway: format!("{}/{name} -n {ns}", left.to_lowercase()),
        floating_ip: fip.clone().unwrap_or_else(|| j.left_fip()),
        fip_claimants: Vec::new(),
        fip_claimants_unread: None,
        gone,
        psk: psk_now(cluster, j).await,
    };
    let Some(fip) = fip else {
        return now.contradicts().then_some(now);
    };
    match crate::cli::verify::fip_claimants(cluster, ns, name, &fip).await {
        Ok(Ok(others)) if others.is_empty() && !now.contradicts() => return None,
        Ok(Ok(others)) => {
            now.fip_claimants = others
                .iter()
                .map(|o| {
                    let kind = o.object.split(' ').next().unwrap_or_default().to_string();
                    record::FipClaimant {
                        delete: format!(
                            "kubectl delete {} {} -n {}",
                            kind.to_lowercase(),
                            o.name,
                            o.namespace
                        ),
                        kind,
                        namespace: o.namespace.clone(),
                        name: o.name.clone(),
                    }
                })
                .collect()
        }
        Ok(Err(why)) => {
            now.fip_claimants_unread = Some(format!(
                "the gateways of every namespace could not be listed: {why}"
            ))
        }
        Err(e) => {
            now.fip_claimants_unread = Some(format!(
                "the gateways of every namespace could not be listed: {e}"
            ))
        }
    }
    Some(now)
}

/// The window's PSK Secret as read now, when it is not as the journal fingerprinted it
/// (gone, re-created, another key; a21t T06b), with what to do. `None`: as fingerprinted,
/// nothing recorded to compare with, or it could not be read (never claimed gone from an
/// error).
async fn psk_now(cluster: &Cluster, j: &crate::core::journal::Journal) -> Option<record::Psk> {
    use crate::core::psk::Held;
    let (name, ns) = (j.gateway.as_str(), j.namespace.as_str());
    // The objects the window left take their key from the window's Secret: one pointed at
    // another Secret or key takes a key nobody compared (a21u U05a: a half-done rotation
    // pointed a VPNPeer at a Secret that does not exist; the record said complete).
    for (t, at) in j.psk_users() {
        let s = |p: &str| t.pointer(p).and_then(serde_json::Value::as_str);
        let (Some(api_version), Some(kind), Some(obj_name)) =
            (s("/apiVersion"), s("/kind"), s("/metadata/name"))
        else {
            continue;
        };
        let Ok(Some(obj)) =
            crate::cluster::gitops::get_kept(cluster, api_version, kind, ns, obj_name).await
        else {
            continue;
        };
        if let Some((secret, key)) = j.psk_moved(&obj, at) {
            let field = at.trim_start_matches('/').replace('/', ".");
            let obj_ref = crate::core::model::object_ref(kind, obj_name, ns);
            let back = crate::core::psk::ref_patch(at, &j.psk_secret, j.psk_key());
            return Some(record::Psk {
                state: format!(
                    "{obj_ref} takes its key from secret {secret} key {key} now, not from the window's secret/{} -n {ns} key {} (the client's, whose fingerprint the journal keeps)",
                    j.psk_secret,
                    j.psk_key()
                ),
                fix: format!(
                    "point its {field} back at the window's Secret (`kubectl patch {} {obj_name} -n {ns} --type merge -p '{back}'`); `vpnmig verify {name} -n {ns}` then checks the key and the tunnel",
                    kind.to_lowercase()
                ),
            });
        }
    }
    let secret = crate::cluster::objects::secret(cluster, &j.psk_secret)
        .await
        .ok()?;
    let key = j.psk_key();
    let what = format!("secret/{} -n {ns} (the PSK)", j.psk_secret);
    let verify = format!(
        "`vpnmig verify {name} -n {ns}` then compares it with the fingerprint and checks the tunnel"
    );
    let (state, fix) = match crate::core::psk::held(
        j.psk_fingerprint.as_deref(),
        j.psk_secret_uid.as_deref(),
        ns,
        &j.psk_secret,
        key,
        secret.as_ref(),
    ) {
        Held::Same { .. } | Held::RecreatedSame { .. } | Held::Unrecorded => return None,
        Held::Gone => (
            format!("{what} is gone"),
            format!(
                "it must be re-created with the client's pre-shared key, which vpnmig does not hold (the journal keeps only its fingerprint): `kubectl create secret generic {} -n {ns} --from-literal={key}=<the client's key>`; {verify}",
                j.psk_secret
            ),
        ),
        Held::Recreated { then, now } => (
            format!(
                "{what} was re-created (uid {then} → {now}) and its key cannot be compared with the journal's fingerprint"
            ),
            format!("check with the client that it holds their key; {verify}"),
        ),
        Held::Changed { .. } => (
            format!("{what} key {key} is not the one the window fingerprinted"),
            format!(
                "put the client's key back in it (the journal keeps only its fingerprint); {verify}"
            ),
        ),
    };
    Some(record::Psk { state, fix })
}

/// The new objects (VPNGateway, VPNPeers) a done window made live that the cluster no
/// longer has (or that are being deleted), as `kind/name -n ns`. Empty for a window not
/// done, and where one cannot be read (never claimed gone from an error).
async fn gone_targets(cluster: &Cluster, j: &crate::core::journal::Journal) -> Vec<String> {
    if j.phase != crate::core::journal::Phase::Done {
        return Vec::new();
    }
    let mut gone = Vec::new();
    for t in &j.targets {
        let s = |p: &str| {
            t.pointer(p)
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
        };
        let (kind, name) = (s("/kind"), s("/metadata/name"));
        if kind.is_empty() || name.is_empty() {
            continue;
        }
        // The window's objects live in its namespace, the cluster's here.
        let ns = j.namespace.as_str();
        match crate::cluster::objects::get(cluster, kind, name).await {
            Ok(None) => gone.push(crate::core::model::object_ref(kind, name, ns)),
            Ok(Some(o)) if o.pointer("/metadata/deletionTimestamp").is_some() => {
                gone.push(crate::core::model::object_ref(kind, name, ns))
            }
            _ => {}
        }
    }
    gone
}

/// What is live now of the gateway a finished window left, when it is not as it left
/// it (`core::journal::Journal::left_text`); `None` when as left, under way, or not
/// readable (the record is printed all the same).
async fn left_now(cluster: &Cluster, name: &str) -> Option<String> {
    let j = crate::cluster::journal::read(cluster, name).await.ok()??;
    j.left_kind()?;
    let old = crate::cluster::objects::get(cluster, "IPsecGateway", name)
        .await
        .ok()?;
    let new = crate::cluster::objects::get(cluster, "VPNGateway", name)
        .await
        .ok()?;
    // Done, and the IPsecGateway it replaced is live again beside the VPNGateway: the
    // record's "done" is not what the cluster shows (a21l A05: "Outcome: done" beside a
    // contested floating IP).
    if j.phase == crate::core::journal::Phase::Done
        && new.is_some()
        && old
            .as_ref()
            .is_some_and(|o| o.pointer("/metadata/deletionTimestamp").is_none())
    {
        let ns = j.namespace.as_str();
        return Some(format!(
            "the window of {ns}/{name} ended done, but ipsecgateway/{name} -n {ns}, the gateway it replaced, is live again beside vpngateway/{name} -n {ns} and contests the floating IP {}: not done as the record says; delete it (`kubectl delete ipsecgateway {name} -n {ns}`) once nothing re-creates it (`vpnmig cutover {name} -n {ns}` names what may have re-created it, `vpnmig status -n {ns}` says what to do)",
            j.floating_ip
        ));
    }
    if let Some(text) = claimed_now(cluster, &j, name, old.as_ref(), new.as_ref()).await {
        return Some(text);
    }
    let text = j.left_text(j.left(old.as_ref(), new.as_ref()))?;
    Some(format!(
        "{text}; the record is the window's, not the cluster's now: `vpnmig status -n {}` says what to do",
        j.namespace
    ))
}

/// A finished window whose floating IP another gateway claims now (any name, any
/// namespace, either kind; `/32` is the same address): the record's outcome is not what
/// the cluster shows (a21n: `report` said nothing where `cutover`, `rollback` and `verify`
/// stop or fail on it). Each one named with its delete; a refused list is said, never
/// read as "none". `None`: none claims it, or the gateway the window left is not live.
async fn claimed_now(
    cluster: &Cluster,
    j: &crate::core::journal::Journal,
    name: &str,
    old: Option<&serde_json::Value>,
    new: Option<&serde_json::Value>,
) -> Option<String> {
    let left = j.left_kind()?;
    let gw = if left == "VPNGateway" { new } else { old }?;
    let fip = floating_ip_of(gw)?;
    let ns = j.namespace.as_str();
    let (phase, again) = if left == "VPNGateway" {
        ("done", "cutover")
    } else {
        ("rolled-back", "rollback")
    };
    let claimants: Vec<String> = match crate::cli::verify::fip_claimants(cluster, ns, name, &fip)
        .await
    {
        Ok(Ok(others)) => others
            .iter()
            .map(crate::cli::verify::claimant_shown)
            .collect(),
        Ok(Err(why)) => {
            return Some(format!(
                "whether another gateway claims the floating IP {fip} of {}/{name} -n {ns} could not be read (the gateways of every namespace could not be listed: {why}); `vpnmig verify {name} -n {ns}` checks it with a context that may list them",
                left.to_lowercase()
            ));
        }
        Err(e) => {
            return Some(format!(
                "whether another gateway claims the floating IP {fip} of {}/{name} -n {ns} could not be read (the gateways of every namespace could not be listed: {e}); `vpnmig verify {name} -n {ns}` checks it with a context that may list them",
                left.to_lowercase()
            ));
        }
    };
    if claimants.is_empty() {
        return None;
    }
    Some(format!(
        "the window of {ns}/{name} ended {phase}, but another gateway claims its floating IP {fip} beside {}/{name} -n {ns}: {}; not {phase} as the record says: the operator attaches a floating IP to one gateway only. Delete it once nothing re-creates it (`vpnmig {again} {name} -n {ns}` names what may have created it, `vpnmig verify {name} -n {ns}` fails its floating-IP row until then)",
        left.to_lowercase(),
        claimants.join(", ")
    ))
}

/// The floating IP `gw` pins, else the one its status reports (trimmed; `None` when neither
/// says one).
fn floating_ip_of(gw: &serde_json::Value) -> Option<String> {
    ["/spec/endpoint/floatingIP", "/status/floatingIP"]
        .into_iter()
        .filter_map(|p| gw.pointer(p).and_then(serde_json::Value::as_str))
        .map(str::trim)
        .find(|f| !f.is_empty())
        .map(str::to_string)
}

fn write_file(path: &Path, doc: &str) -> Result<(), Error> {
    std::fs::write(path, doc).map_err(|source| Error::WriteFile {
        path: path.display().to_string(),
        source,
    })
}

/// A broken hash chain: the record was printed, the run fails.
fn broken(r: &Record) -> Error {
    Error::Stop {
        code: exit::VERIFY_FAILED,
        message: format!(
            "the history of the journal of {} -n {} is not the one vpnmig wrote: hash chain {}",
            r.gateway, r.namespace, r.chain.text
        ),
        hint: Some(format!(
            "treat the timeline as unreliable from that entry on; `kubectl get configmap {} -n {} -o yaml --show-managed-fields` shows who last wrote it",
            object_name(&r.gateway),
            r.namespace
        )),
    }
}

pub fn run(args: &ReportArgs) -> Result<i32, Error> {
    let rt = crate::cli::runtime()?;
    let (r, now) = rt.block_on(async {
        let cluster = Cluster::connect(&args.cluster.options()).await?;
        match args.window {
            Some(n) => Ok::<_, Error>((build_archived(&cluster, &args.name, n).await?, None)),
            None => {
                let r = build(&cluster, &args.name).await?;
                Ok((r, left_now(&cluster, &args.name).await))
            }
        }
    })?;
    // The record is the window's; what is live now is said beside it when it is not what
    // the window left (a21f A6: "the cutover is complete" over a gateway deleted since).
    if let Some(text) = now {
        crate::output::say(&format!("warning: {text}"));
    }
    let format = args
        .output
        .or_else(|| args.out.as_deref().and_then(Format::from_path))
        .unwrap_or_default();
    let doc = render(&r, format);
    match &args.out {
        Some(path) => {
            write_file(path, &doc)?;
            crate::output::say(&format!("record written to {}", path.display()));
        }
        None => crate::cli::write_stdout(&doc)?,
    }
    if !r.chain.intact() {
        return Err(broken(&r));
    }
    // Done, but what the window made live is gone now: printed, and the run fails, never
    // exit 0 under "the cutover is complete" (a21p E21, E24).
    if let Some(e) = incomplete(&r) {
        return Err(e);
    }
    Ok(exit::OK)
}

/// The stop of a window that ended done while a VPNGateway or VPNPeer it made live is
/// gone now (exit 5, as `report` and `verify` say it); `None` otherwise.
fn incomplete(r: &record::Record) -> Option<Error> {
    let now = r.read_at_report.as_ref()?;
    if now.gone.is_empty()
        && let Some(psk) = &now.psk
    {
        return Some(Error::Stop {
            code: exit::VERIFY_FAILED,
            message: format!(
                "the window of {}/{} ended {}, but {}: the {} is not complete, and the client's tunnel cannot authenticate with the key the window kept",
                r.namespace,
                r.gateway,
                r.phase,
                psk.state,
                if r.phase == crate::core::journal::Phase::RolledBack {
                    "rollback"
                } else {
                    "cutover"
                }
            ),
            hint: Some(psk.fix.clone()),
        });
    }
    let now = Some(now).filter(|n| !n.gone.is_empty())?;
    Some(Error::Stop {
        code: exit::VERIFY_FAILED,
        message: format!(
            "the window of {}/{} ended done, but {} {} gone now: the cutover is not complete, and the client's tunnel through {} is down",
            r.namespace,
            r.gateway,
            now.gone.join(", "),
            if now.gone.len() == 1 { "is" } else { "are" },
            if now.gone.len() == 1 { "it" } else { "them" },
        ),
        hint: Some(r.recovery.next.clone()),
    })
}

/// After a `cutover` that ended without a stop: when its window is done but a VPNGateway
/// or VPNPeer it made live is gone now (status's blocker `peer-gone`), the stop `report`
/// gives (a21q Q02c: a plain `cutover` on such a window exited 0 and said nothing of it).
/// `None` when complete, not done, or the journal cannot be read.
pub(crate) async fn incomplete_after(cluster: &Cluster, name: &str) -> Option<Error> {
    let j = crate::cluster::journal::read(cluster, name).await.ok()??;
    if j.phase != crate::core::journal::Phase::Done {
        return None;
    }
    let r = build(cluster, name).await.ok()?;
    incomplete(&r)
}

/// The end of a `cutover` or `rollback` that wrote a journal: where its record is, and
/// with `--report FILE`, the record itself (a failure to write it is said, and does not
/// change how the window ended).
pub(crate) async fn after_window(cluster: &Cluster, name: &str, file: Option<&Path>) {
    let ns = &cluster.namespace;
    let plugin = crate::cli::is_plugin(std::env::args_os().next().as_deref());
    let command = format!("vpnmig report {name} -n {ns}");
    let command = if plugin {
        crate::cli::as_plugin_text(&command)
    } else {
        command
    };
    let Some(path) = file else {
        crate::output::say(&format!("record: {command}"));
        return;
    };
    let format = Format::from_path(path).unwrap_or_default();
    let written = match build(cluster, name).await {
        Ok(r) => write_file(path, &render(&r, format)),
        Err(e) => Err(e),
    };
    match written {
        Ok(()) => crate::output::say(&format!("record: {} (again: {command})", path.display())),
        Err(e) => crate::output::say(&format!(
            "! the record was not written to {}: {}; get it with `{command} --out {}`",
            path.display(),
            crate::cli::error_line(&e),
            path.display()
        )),
    }
}
