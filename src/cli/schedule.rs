//! `vpnmig schedule` (issue 25 item 2): each gateway's window as a CronJob the cluster
//! runs, with its least-privilege account and the limits on windows at once; `--prune`
//! removes those of windows done or rolled back. The manifests are `fleet::schedule`'s.

use std::path::PathBuf;

use k8s_openapi::api::batch::v1::CronJob;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PropagationPolicy,
};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::Value;

use crate::cli::cluster_args::ClusterArgs;
use crate::cli::window::Gitops;
use crate::cluster::{Cluster, list};
use crate::core::gitops::OwnerRef;
use crate::core::maintenance::{self, WindowsFile};
use crate::core::model::IPsecGateway;
use crate::core::selector::LabelSelector;
use crate::exit;
use crate::fleet::schedule::{self as sched, GATEWAY_LABEL, MANAGED_BY, Options, Scheduled};

use super::Error;

/// Write each gateway's maintenance window as a CronJob the cluster runs (docs/fleet.md).
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  vpnmig schedule -n tenant-acme --windows windows.yaml --image registry.example/vpnmig:0.1.0
  vpnmig schedule -A -l tier=bronze --image registry.example/vpnmig:0.1.0 --apply
  vpnmig schedule -A --prune                # remove the CronJobs of windows done or rolled back

A window is read from the IPsecGateway's annotation vpnmig.bnerd.net/window
(2026-12-08T02:00:00+01:00/PT1H) or from --windows FILE (docs/fleet.md). A gateway without
one ahead is named on stderr and gets no CronJob.

Exit codes: 0 written or applied, 1 the cluster could not be read or a write failed,
2 usage, 3 the windows file cannot be read.")]
pub struct ScheduleArgs {
    #[arg(skip)]
    pub cluster: ClusterArgs,
    /// All namespaces.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// Only the IPsecGateways with these labels (kubectl's syntax).
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    selector: Option<String>,
    /// A windows file: `namespace/name` or a selector to a window and an IANA time zone.
    #[arg(long, value_name = "FILE")]
    windows: Option<PathBuf>,
    /// The vpnmig image the windows run (docs/fleet.md, Containerfile).
    #[arg(long, value_name = "IMAGE", required_unless_present = "prune")]
    image: Option<String>,
    /// Print the manifests (the default without --apply).
    #[arg(short = 'o', long = "output", value_enum, conflicts_with = "apply")]
    output: Option<Format>,
    /// Apply the manifests (server-side apply, field manager vpnmig).
    #[arg(long)]
    apply: bool,
    /// Windows of one namespace that may run at once (its ResourceQuota on window pods).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    per_namespace: u32,
    /// Each window pod requests one vpnmig.bnerd.net/window-slot: the scheduler runs at
    /// most as many windows at once as the nodes advertise (docs/fleet.md).
    #[arg(long)]
    fleet_slots: bool,
    /// Passed on to each cutover.
    #[arg(long)]
    initiate: bool,
    /// Passed on to each cutover.
    #[arg(long)]
    rollback_on_failure: bool,
    /// Passed on to each cutover.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "MODE")]
    gitops: Vec<Gitops>,
    /// Remove the CronJobs (with their Jobs and pods) of windows done or rolled back.
    #[arg(long, conflicts_with_all = ["apply", "output", "windows", "image"])]
    prune: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Yaml,
}

pub fn run(args: &ScheduleArgs) -> Result<i32, Error> {
    let file = match &args.windows {
        Some(p) => Some(read_windows(p)?),
        None => None,
    };
    let selector = match &args.selector {
        Some(s) => Some(LabelSelector::parse(s).map_err(|m| Error::Stop {
            code: exit::USAGE,
            message: format!("-l {s}: {m}"),
            hint: None,
        })?),
        None => None,
    };
    crate::cli::runtime()?.block_on(async {
        let cluster = Cluster::connect(&args.cluster.options()).await?;
        let ns = (!args.all_namespaces).then_some(cluster.namespace.clone());
        if args.prune {
            return prune(&cluster, ns.as_deref()).await;
        }
        crate::output::say(&cluster.banner(args.all_namespaces));
        let gateways: Vec<IPsecGateway> = list::all(&cluster, ns.as_deref()).await?;
        let gateways: Vec<IPsecGateway> = gateways
            .into_iter()
            .filter(|g| {
                selector
                    .as_ref()
                    .is_none_or(|s| s.matches(&g.metadata.labels.clone().unwrap_or_default()))
            })
            .collect();
        let scheduled = sched::next_windows(&gateways, file.as_ref(), jiff::Timestamp::now());
        say_unscheduled(&scheduled);
        let mut opts = options(args);
        if let Some(g) = &mut opts.gitops {
            g.owners = owners(&cluster, &gateways, &scheduled).await?;
        }
        let manifests = sched::manifests(&scheduled, &opts);
        if args.apply {
            apply(&cluster, &manifests).await?;
        } else {
            crate::cli::write_stdout(&yaml(&manifests))?;
        }
        Ok(exit::OK)
    })
}

/// Read and check a windows file.
pub(crate) fn read_windows(p: &std::path::Path) -> Result<WindowsFile, Error> {
    let text = std::fs::read_to_string(p).map_err(|source| Error::Read {
        path: p.display().to_string(),
        source,
    })?;
    maintenance::parse_file(&text).map_err(|m| Error::Stop {
        code: exit::INVALID_INPUT,
        message: format!("{}: {m}", p.display()),
        hint: Some("see docs/fleet.md (\"Where a window is written\") for the file's form".into()),
    })
}

fn options(args: &ScheduleArgs) -> Options {
    let mut flags = Vec::new();
    if args.initiate {
        flags.push("--initiate".to_string());
    }
    if args.rollback_on_failure {
        flags.push("--rollback-on-failure".to_string());
    }
    if !args.gitops.is_empty() {
        use clap::ValueEnum;
        let modes: Vec<String> = args
            .gitops
            .iter()
            .filter_map(|g| g.to_possible_value().map(|v| v.get_name().to_string()))
            .collect();
        flags.push(format!("--gitops={}", modes.join(",")));
    }
    Options {
        image: args.image.clone().unwrap_or_default(),
        per_namespace: args.per_namespace,
        fleet_slots: args.fleet_slots,
        cutover_flags: flags,
        gitops: (!args.gitops.is_empty()).then(|| sched::GitopsGrants {
            suspends: args
                .gitops
                .iter()
                .any(|g| matches!(g, Gitops::Pause | Gitops::Resume)),
            owners: Default::default(),
        }),
    }
}

/// Per tenant namespace, the GitOps owners of the gateways with a window ahead and of
/// their PSK Secrets (the markers a window's `--gitops` acts on), each with the namespace
/// the cluster has it in. An owner the cluster does not have (or has in several
/// namespaces) is named on stderr: its window's preflight will name what it lacks.
async fn owners(
    cluster: &Cluster,
    gateways: &[IPsecGateway],
    scheduled: &[Scheduled],
) -> Result<std::collections::BTreeMap<String, Vec<(OwnerRef, Option<String>)>>, Error> {
    use crate::cluster::gitops::{Found, find};
    use crate::core::gitops::{detect, reconciling};
    use k8s_openapi::api::core::v1::Secret;
    let mut out: std::collections::BTreeMap<String, Vec<(OwnerRef, Option<String>)>> =
        Default::default();
    let mut unfound = Vec::new();
    for s in scheduled.iter().filter(|s| s.next.ahead().is_some()) {
        let Some(gw) = gateways.iter().find(|g| {
            g.metadata.namespace.as_deref() == Some(s.namespace.as_str())
                && g.metadata.name.as_deref() == Some(s.name.as_str())
        }) else {
            continue;
        };
        let mut objects = vec![serde_json::to_value(gw).expect("gateways serialize")];
        let secrets: Api<Secret> = Api::namespaced(cluster.client.clone(), &s.namespace);
        let secret = &gw.spec.auth.psk_secret_ref.name;
        if let Some(sec) = cluster
            .call(
                "get",
                &format!("secret/{secret}"),
                Some(&s.namespace),
                || secrets.get_metadata_opt(secret),
            )
            .await?
        {
            objects.push(serde_json::to_value(sec).expect("metadata serializes"));
        }
        for obj in &objects {
            for m in reconciling(&detect(obj)) {
                let Some(owner) = &m.owner else { continue };
                let found = match &owner.namespace {
                    Some(ns) => Some(ns.clone()),
                    None => match find(cluster, owner).await? {
                        Found::One(o, _) => o.namespace,
                        Found::None | Found::Many(_) => {
                            unfound.push(format!(
                                "  {}/{}: its owner {} is not one object of the cluster: its window's preflight will refuse",
                                s.namespace,
                                s.name,
                                owner.display()
                            ));
                            None
                        }
                    },
                };
                let list = out.entry(s.namespace.clone()).or_default();
                if !list.iter().any(|(o, f)| o == owner && *f == found) {
                    list.push((owner.clone(), found));
                }
            }
        }
    }
    if !unfound.is_empty() {
        crate::output::say(&format!(
            "--gitops: owners not granted\n{}",
            unfound.join("\n")
        ));
    }
    Ok(out)
}

/// On stderr: how many windows are scheduled, and each gateway that gets none and why.
fn say_unscheduled(scheduled: &[Scheduled]) {
    let ahead = scheduled
        .iter()
        .filter(|s| s.next.ahead().is_some())
        .count();
    let mut lines = vec![format!(
        "{ahead} of {} gateways have a window ahead",
        scheduled.len()
    )];
    for s in scheduled {
        if s.next.ahead().is_none() {
            lines.push(format!(
                "  no CronJob for {}/{}: window {}",
                s.namespace,
                s.name,
                s.next.show()
            ));
        }
    }
    crate::output::say(&lines.join("\n"));
}

/// The manifests as one YAML stream (`kubectl apply -f -` reads it).
fn yaml(manifests: &[Value]) -> String {
    manifests
        .iter()
        .map(|m| {
            format!(
                "---\n{}",
                serde_saphyr::to_string(m).expect("manifests serialize")
            )
        })
        .collect()
}

/// The plural of each kind `schedule` writes.
fn resource(m: &Value) -> (ApiResource, bool) {
    let api_version = m["apiVersion"].as_str().unwrap_or_default();
    let kind = m["kind"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let plural = match kind {
        "ServiceAccount" => "serviceaccounts",
        "Role" => "roles",
        "RoleBinding" => "rolebindings",
        "ClusterRole" => "clusterroles",
        "ClusterRoleBinding" => "clusterrolebindings",
        "ResourceQuota" => "resourcequotas",
        "PriorityClass" => "priorityclasses",
        "CronJob" => "cronjobs",
        other => unreachable!("schedule writes no {other}"),
    };
    let gvk = GroupVersionKind::gvk(group, version, kind);
    (
        ApiResource::from_gvk_with_plural(&gvk, plural),
        m["metadata"]["namespace"].is_string(),
    )
}

/// Server-side apply of each manifest in order, field manager vpnmig; stops at the first
/// refusal, saying which were applied.
async fn apply(cluster: &Cluster, manifests: &[Value]) -> Result<(), Error> {
    let pp = PatchParams::apply("vpnmig").force();
    let mut done = Vec::new();
    for m in manifests {
        let (ar, namespaced) = resource(m);
        let name = m["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let ns = m["metadata"]["namespace"].as_str();
        let api: Api<DynamicObject> = if namespaced {
            Api::namespaced_with(cluster.client.clone(), ns.unwrap_or_default(), &ar)
        } else {
            Api::all_with(cluster.client.clone(), &ar)
        };
        let what = format!("{}/{name}", ar.kind.to_lowercase());
        let patch = Patch::Apply(m);
        let r = cluster
            .call("patch", &what, ns, || api.patch(&name, &pp, &patch))
            .await;
        if let Err(e) = r {
            if !done.is_empty() {
                crate::output::say(&format!("applied before the refusal: {}", done.join(", ")));
            }
            return Err(e.into());
        }
        done.push(match ns {
            Some(n) => format!("{what} -n {n}"),
            None => what,
        });
    }
    crate::output::say(&format!(
        "applied {} objects (field manager vpnmig)",
        done.len()
    ));
    Ok(())
}

/// Delete the CronJobs vpnmig wrote whose gateway's journal says done or rolled back;
/// name the others.
async fn prune(cluster: &Cluster, ns: Option<&str>) -> Result<i32, Error> {
    let api: Api<CronJob> = match ns {
        Some(n) => Api::namespaced(cluster.client.clone(), n),
        None => Api::all(cluster.client.clone()),
    };
    let lp = ListParams::default().labels(&format!("{}={}", MANAGED_BY.0, MANAGED_BY.1));
    let jobs = cluster
        .call("list", "cronjobs", ns, || api.list(&lp))
        .await?;
    let journals = crate::cluster::journal::list_in(cluster, ns).await?;
    let dp = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        ..Default::default()
    };
    let mut lines = Vec::new();
    for cj in jobs.items {
        let (Some(cns), Some(name)) = (cj.metadata.namespace.clone(), cj.metadata.name.clone())
        else {
            continue;
        };
        let gateway = cj
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(GATEWAY_LABEL))
            .cloned()
            .unwrap_or_default();
        let phase = journals
            .journals
            .iter()
            .find(|j| j.namespace == cns && j.gateway == gateway)
            .map(|j| j.phase);
        match phase {
            Some(p) if p.finished() => {
                let api: Api<CronJob> = Api::namespaced(cluster.client.clone(), &cns);
                cluster
                    .call("delete", &format!("cronjob/{name}"), Some(&cns), || {
                        api.delete(&name, &dp)
                    })
                    .await?;
                lines.push(format!("cronjob/{name} -n {cns} deleted: window {p}"));
            }
            Some(p) => lines.push(format!("cronjob/{name} -n {cns} kept: window {p}")),
            None => lines.push(format!("cronjob/{name} -n {cns} kept: no window has run")),
        }
    }
    if lines.is_empty() {
        lines.push("no CronJobs of vpnmig's".into());
    }
    crate::cli::write_stdout(&(lines.join("\n") + "\n"))?;
    Ok(exit::OK)
}

/// `status` and `plan`: each IPsecGateway's next window in its row, where a window is
/// written anywhere (the windows file given, or an annotation on one gateway): then
/// every old-kind row names its own, `none` included.
pub(crate) fn mark_next_windows(
    rows: &mut [crate::core::status::Row],
    gateways: &[IPsecGateway],
    file: Option<&WindowsFile>,
) {
    if !written(gateways, file) {
        return;
    }
    // Sorted by namespace and name: each row finds its gateway's window by bisection,
    // not by a scan (status -A over 20,000 gateways would make 4·10⁸ comparisons).
    let next = sched::next_windows(gateways, file, jiff::Timestamp::now());
    for r in rows.iter_mut().filter(|r| r.kind == "IPsecGateway") {
        let key = (r.namespace.as_str(), r.name.as_str());
        let first = next.partition_point(|s| (s.namespace.as_str(), s.name.as_str()) < key);
        if let Some(s) = next
            .get(first)
            .filter(|s| s.namespace == r.namespace && s.name == r.name)
        {
            r.next_window = Some((&s.next).into());
        }
    }
}

/// `plan` of many: each IPsecGateway's next window in `-n`/`-A`, as a cell, where a
/// window is written (the file given, or the annotation on any gateway); else none.
pub(crate) async fn next_lines(
    cluster: &Cluster,
    all_namespaces: bool,
    windows: Option<&std::path::Path>,
) -> Result<Vec<((String, String), String)>, Error> {
    let file = windows.map(read_windows).transpose()?;
    let ns = (!all_namespaces).then_some(cluster.namespace.as_str());
    let gateways: Vec<IPsecGateway> = list::all(cluster, ns).await?;
    if !written(&gateways, file.as_ref()) {
        return Ok(Vec::new());
    }
    Ok(
        sched::next_windows(&gateways, file.as_ref(), jiff::Timestamp::now())
            .into_iter()
            .map(|s| ((s.namespace, s.name), s.next.show()))
            .collect(),
    )
}

/// Whether a window is written anywhere: the windows file given, or the annotation on one
/// of `gateways`. Where none is, `status` and `plan` add nothing.
fn written(gateways: &[IPsecGateway], file: Option<&WindowsFile>) -> bool {
    file.is_some()
        || gateways.iter().any(|g| {
            g.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(maintenance::ANNOTATION))
        })
}
