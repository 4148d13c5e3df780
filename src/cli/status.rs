//! `vpnmig status`: every gateway of both kinds, to schedule windows.

use comfy_table::{ContentArrangement, Table, presets};

use crate::cli::Error;
use crate::cli::cluster_args::ClusterArgs;
use crate::cluster::{Cluster, list};
use crate::core::allowlist::Allowlist;
use crate::core::model::{IPsecGateway, VPNGateway, VPNPeer};
use crate::core::status::{self, Migration, Row};
use crate::exit;

/// One row per gateway, old or new kind: migrated or not, floating IP pinned,
/// tunnels/peers, Ready, and the plan's blockers.
///
/// Read-only. Lists are paginated (500 objects a request). The blockers are the checks of
/// `vpnmig plan` that need nothing but the gateway itself; `vpnmig plan -f` with the PSK
/// Secret (or the live plan) checks the rest.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  vpnmig status                 # the context's namespace
  vpnmig status -A -o json | jq '.[] | select(.migrated==\"no\" and (.blockers|length)==0) | .name'

Exit codes: 0 listed, 1 the cluster could not be read (the error names what was refused).")]
pub struct StatusArgs {
    /// kubectl's cluster flags, from the top-level command (global).
    #[arg(skip)]
    pub cluster: ClusterArgs,
    /// All namespaces.
    #[arg(short = 'A', long, conflicts_with = "namespace")]
    all_namespaces: bool,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = StatusFormat::Text)]
    output: StatusFormat,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum StatusFormat {
    /// A table.
    Text,
    /// An array of rows.
    Json,
}

/// The table.
pub fn render(rows: &[Row], all_namespaces: bool) -> String {
    if rows.is_empty() {
        return "no gateways found\n".into();
    }
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    let mut header = vec![
        "NAME", "KIND", "MIGRATED", "FIP", "PINNED", "TUNNELS", "READY", "BLOCKERS",
    ];
    if all_namespaces {
        header.insert(0, "NAMESPACE");
    }
    table.set_header(header);
    for r in rows {
        let migrated = match r.migrated {
            Migration::No => "no",
            Migration::InProgress => "IN PROGRESS",
            Migration::Yes => "yes",
        };
        let blockers = match &r.blockers {
            None => "-".to_string(),
            Some(b) if b.is_empty() => "none".to_string(),
            Some(b) => b.join(","),
        };
        let mut row = vec![
            r.name.clone(),
            r.kind.to_string(),
            migrated.into(),
            r.floating_ip.clone().unwrap_or_else(|| "<none>".into()),
            if r.fip_pinned { "yes" } else { "NO" }.into(),
            r.tunnels.to_string(),
            r.ready.clone(),
            blockers,
        ];
        if all_namespaces {
            row.insert(0, r.namespace.clone());
        }
        table.add_row(row);
    }
    table
        .to_string()
        .lines()
        .map(|l| format!("{}\n", l.trim_end()))
        .collect()
}

/// The cluster, the table's rows, and the gateways vpnmig migrated (their VPNGateway
/// carries the migrated-from annotation): `(namespace, name)`.
async fn gather(args: &StatusArgs) -> Result<(Cluster, Vec<Row>, Vec<(String, String)>), Error> {
    let cluster = Cluster::connect(&args.cluster.options()).await?;
    if args.output == StatusFormat::Text {
        eprintln!("{}", cluster.banner(args.all_namespaces));
    }
    cluster.require_operator().await?;
    let ns = (!args.all_namespaces).then_some(cluster.namespace.as_str());
    let old: Vec<IPsecGateway> = list::all(&cluster, ns).await?;
    let new: Vec<VPNGateway> = list::all(&cluster, ns).await?;
    let peers: Vec<VPNPeer> = list::all(&cluster, ns).await?;
    let rows = status::rows(
        &old,
        &new,
        &peers,
        &Allowlist::default(),
        &format!("context {}", cluster.context),
    );
    let ours = new
        .iter()
        .filter(|g| {
            g.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(crate::core::translate::MIGRATED_FROM))
        })
        .filter_map(|g| Some((g.metadata.namespace.clone()?, g.metadata.name.clone()?)))
        .collect();
    Ok((cluster, rows, ours))
}

/// Why the table is empty (issue 10 item 2): the namespace does not exist, or it has no
/// gateways, or it could not be told which.
async fn namespace_note(cluster: &Cluster) -> String {
    use k8s_openapi::api::core::v1::Namespace;
    let ns = cluster.namespace.as_str();
    let api: kube::Api<Namespace> = kube::Api::all(cluster.client.clone());
    match cluster
        .call("get", &format!("namespace {ns}"), None, || api.get_opt(ns))
        .await
    {
        Ok(None) => format!(
            "hint: namespace {ns} does not exist in context {}: pass -n NAMESPACE, or -A for all (`kubectl get ipsecgateways,vpngateways -A`)",
            cluster.context
        ),
        Ok(Some(_)) => format!(
            "hint: namespace {ns} exists but has no IPsecGateway or VPNGateway: -A lists every namespace"
        ),
        Err(e) => format!(
            "hint: no gateways in namespace {ns} (whether it exists could not be checked: {e}); -A lists every namespace"
        ),
    }
}

/// Windows under way (journals not done or rolled back), one line each with what to run.
/// Best effort: a context that may not list ConfigMaps just does not see them.
/// Gateways vpnmig migrated (`ours`: namespace, name) whose journal is gone are said too,
/// with the local bundle when this machine has one (issue 14 item 7).
async fn open_windows(
    cluster: &Cluster,
    all_namespaces: bool,
    ours: &[(String, String)],
) -> Vec<String> {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, ListParams};
    let api: Api<ConfigMap> = if all_namespaces {
        Api::all(cluster.client.clone())
    } else {
        Api::namespaced(cluster.client.clone(), &cluster.namespace)
    };
    let lp = ListParams::default().labels("app.kubernetes.io/managed-by=vpnmig");
    let list = match cluster
        .call("list", "configmaps (vpnmig journals)", None, || {
            api.list(&lp)
        })
        .await
    {
        Ok(list) => list,
        // Not being allowed to list them is no reason to hide the table; but "could not
        // ask" is said, never shown as "no window under way" (DESIGN.md §4.9).
        Err(e) => {
            return vec![format!(
                "windows under way: unknown, the journals could not be listed: {e}\n"
            )];
        }
    };
    let journals: Vec<(String, String)> = list
        .items
        .iter()
        .filter_map(|cm| {
            let name = cm.metadata.name.as_deref()?.strip_prefix("vpnmig-")?;
            Some((cm.metadata.namespace.clone()?, name.to_string()))
        })
        .collect();
    let lost = ours.iter().filter(|g| !journals.contains(g)).map(|(ns, name)| {
        format!(
            "journal missing: {ns}/{name} was migrated by vpnmig but ConfigMap {ns}/vpnmig-{name} is gone; {}\n",
            crate::state::lost_journal_hint(&cluster.server, ns, name).unwrap_or_else(|| format!(
                "a rollback needs the bundle of its cutover: `vpnmig rollback {name} -n {ns} --plan DIR`"
            ))
        )
    });
    list.items
        .iter()
        .filter_map(|cm| {
            let j =
                crate::core::journal::Journal::from_json(cm.data.as_ref()?.get("journal.json")?)
                    .ok()?;
            (!j.phase.finished()).then(|| {
                format!(
                    "window under way: {}/{} at journal phase {}: {}\n",
                    j.namespace,
                    j.gateway,
                    j.phase,
                    j.recovery()
                )
            })
        })
        .chain(lost)
        .collect()
}

pub fn run(args: &StatusArgs) -> Result<i32, Error> {
    let (rows, windows) = crate::cli::runtime()?.block_on(async {
        let (cluster, rows, ours) = gather(args).await?;
        if rows.is_empty() && !args.all_namespaces && args.output == StatusFormat::Text {
            eprintln!("{}", namespace_note(&cluster).await);
        }
        let windows = if args.output == StatusFormat::Text {
            open_windows(&cluster, args.all_namespaces, &ours).await
        } else {
            Vec::new()
        };
        Ok::<_, Error>((rows, windows))
    })?;
    let doc = match args.output {
        StatusFormat::Text => render(&rows, args.all_namespaces) + &windows.concat(),
        StatusFormat::Json => serde_json::to_string_pretty(&rows).expect("rows serialize") + "\n",
    };
    crate::cli::write_stdout(&doc)?;
    Ok(exit::OK)
}
