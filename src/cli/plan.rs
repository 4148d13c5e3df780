//! `vpnmig plan -f FILE`: translate, check and diff an exported IPsecGateway, offline.

use std::io::{Read, Write};
use std::path::PathBuf;

use crate::bundle;
use crate::cli::Error;
use crate::cli::cluster_args::ClusterArgs;
use crate::cluster::Cluster;
use crate::core::allowlist::Allowlist;
use crate::core::{full_plan, input, plan};
use crate::exit;
use crate::output::{Format, manifest, text};
use crate::window::plan::{live_plan, peer_names};

/// Translate an IPsecGateway into VPNGateway + VPNPeers and check it.
///
/// Live (`vpnmig plan NAME`): reads the gateway and its PSK Secret from the cluster
/// (never showing the key) and adds the checks only a cluster can answer: the Secret
/// exists, has the key and would survive the old gateway; status is current and Ready;
/// the new names are free (or already hold exactly the plan); no other gateway holds the
/// floating IP or service CIDR; your permissions for cutover and rollback; with
/// --server-dry-run, the API server's verdict. Changes nothing.
///
/// Offline (`-f FILE`): reads the object as `kubectl get ipsecgateway NAME -o yaml`
/// writes it (one object, several documents, or a List). Nothing is sent to a cluster.
///
/// Both print the pinned-values table, the checks that would block a cutover and a diff
/// of each new object; with --out, they write the plan bundle.
///
/// Many (`-A`, `-n NS`, `-l SELECTOR`, `--names FILE` without NAME; or `-f FILE` of
/// several gateways without --name): every gateway planned with the cluster read once,
/// collisions between them found too, a bundle each under `DIR/NAMESPACE/NAME/`, and a
/// summary table and `DIR/fleet.json` (docs/fleet-json.md).
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  vpnmig plan acme -n tenant-acme --out plans/acme --server-dry-run
  kubectl get ipsecgateway acme -n tenant-acme -o yaml > acme.yaml
  vpnmig plan -f acme.yaml --out plans/acme
  vpnmig plan -f all-gateways.yaml --name acme -o json | jq .checks
  vpnmig plan -f acme.yaml -o yaml | kubectl apply --dry-run=server -f -
  vpnmig plan -A --out plans/                  # every gateway: plans/NS/NAME/, plans/fleet.json
  vpnmig plan -n tenant-acme -l tier=bronze --out plans/
  vpnmig plan acme --out plans/acme --gitops-repo ~/src/platform   # then review `git diff`
  kubectl get ipsecgateways -A -o yaml > all.yaml && vpnmig plan -f all.yaml --out plans/

Exit codes: 0 ready (many: every gateway), 1 failure (a file could not be read or
written, the cluster could not be read, --gitops-repo found no one file to edit),
2 usage, 3 invalid input, 4 blocked by a check (many: any gateway) (plan still shown
and written; -o yaml marks the manifests), 7 refused to replace a bundle (another
gateway or object, or a READY bundle by a BLOCKED plan; --force overrides).")]
pub struct PlanArgs {
    /// kubectl's cluster flags, from the top-level command (global).
    #[arg(skip)]
    pub cluster: ClusterArgs,
    /// The IPsecGateway in the cluster (namespace: -n, else the context's).
    #[arg(value_name = "NAME", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    gateway: Option<String>,

    /// Every IPsecGateway of every namespace (many: a bundle each under --out).
    #[arg(short = 'A', long, conflicts_with_all = ["gateway", "file"])]
    all_namespaces: bool,

    /// Only the IPsecGateways with these labels (`tier=bronze,region in (fra1)`), of the
    /// namespace or of all with -A.
    #[arg(short = 'l', long, value_name = "SELECTOR", conflicts_with_all = ["gateway", "file"])]
    selector: Option<String>,

    /// Only the IPsecGateways named in FILE: one `NAME` or `NAMESPACE/NAME` a line
    /// (`#` comments); each must exist.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["gateway", "file"])]
    names: Option<PathBuf>,

    /// Manifest file with the IPsecGateway (YAML or JSON; `-` reads standard input).
    /// Offline: nothing is sent to a cluster.
    #[arg(
        short = 'f',
        long = "file",
        visible_alias = "filename",
        value_name = "PATH"
    )]
    file: Option<PathBuf>,

    /// Live: also have the API server validate and admit the targets (server-side apply
    /// with dryRun=All); nothing is changed.
    #[arg(long, requires = "gateway")]
    server_dry_run: bool,

    /// Which IPsecGateway, when the file holds several (NAME or NAMESPACE/NAME). Without
    /// it, every gateway of the file is planned.
    #[arg(long, value_name = "NAME")]
    name: Option<String>,

    /// Write the bundle here: vpngateway.yaml, vpnpeer.yaml, old-ipsecgateway.yaml,
    /// plan.json. The diff is taken against what it holds.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,

    /// Replace a bundle of another gateway (or unknown files) in --out.
    #[arg(long, requires = "out")]
    force: bool,

    /// Output format: text for people, yaml for the new manifests, json for the plan.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Text)]
    output: Format,

    /// Replace the built-in proposal allowlist with the operator's (YAML: `ike: [...]`,
    /// `esp: [...]`).
    #[arg(long, value_name = "FILE")]
    allowlist: Option<PathBuf>,

    /// A windows file (docs/fleet.md): with it, or where a gateway carries the window
    /// annotation, the plan of many names each gateway's next window after its table.
    #[arg(long, value_name = "FILE")]
    windows: Option<PathBuf>,

    /// Name the VPNPeer of tunnel TUNNEL NAME instead of the derived name (repeatable):
    /// the way out when another gateway of the namespace owns the derived one. Recorded
    /// in the plan; a cutover from the bundle uses it.
    #[arg(long = "peer-name", value_name = "TUNNEL=NAME", value_parser = parse_peer_name)]
    pub peer_names: Vec<(String, String)>,

    /// Put the new manifests into the GitOps repository checked out at DIR: the file
    /// that defines this IPsecGateway (plain YAML or a kustomize resource) gets the
    /// VPNGateway and VPNPeers in its place, every other document and comment kept;
    /// prints `git diff --stat`. Nothing is committed. Outside a Git working tree the
    /// rewritten file is written beside the bundle instead (docs/gitops.md).
    #[arg(long, value_name = "DIR")]
    gitops_repo: Option<PathBuf>,
}

/// `TUNNEL=NAME` of `--peer-name`.
pub(crate) fn parse_peer_name(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((t, n)) if !t.is_empty() && !n.is_empty() => Ok((t.to_string(), n.to_string())),
        _ => Err("expected TUNNEL=NAME, e.g. `--peer-name b=a-b-2`".into()),
    }
}

/// Read a file (`-`: standard input) as UTF-8 text. A file that is there but is not text
/// is invalid input, not an I/O failure.
pub(crate) fn read(path: &PathBuf) -> Result<String, Error> {
    let shown = path.display().to_string();
    let mut bytes = Vec::new();
    let res = if shown == "-" {
        std::io::stdin().read_to_end(&mut bytes).map(|_| ())
    } else {
        std::fs::read(path).map(|b| bytes = b)
    };
    res.map_err(|source| Error::Read {
        path: shown.clone(),
        source,
    })?;
    // UTF-8, or UTF-16/UTF-32 with a BOM, decoded like kubectl does (issue 9 item 11).
    input::decode(&bytes, &shown).map_err(Error::from)
}

/// Read the live gateway and its surroundings, plan, and add the live checks.
async fn live(
    args: &PlanArgs,
    name: &str,
    allowlist: &Allowlist,
) -> Result<(input::Source, plan::Plan, Vec<(String, serde_json::Value)>), Error> {
    let cluster = Cluster::connect(&args.cluster.options()).await?;
    if args.output == Format::Text {
        crate::output::say(&cluster.banner(false));
    }
    cluster.require_operator().await?;
    let planned = live_plan(
        &cluster,
        name,
        allowlist,
        args.server_dry_run,
        &args.peer_names,
    )
    .await;
    match planned {
        // No IPsecGateway: say what is there instead (issue 10 item 4).
        Err(crate::window::error::Error::Cluster(
            e @ crate::cluster::KubeError::NotFound { .. },
        )) => Err(migrated_or(&cluster, name, e).await),
        other => Ok(other?),
    }
}

/// `plan NAME` of a gateway that is already migrated: say so, and what checks it.
async fn migrated_or(cluster: &Cluster, name: &str, e: crate::cluster::KubeError) -> Error {
    let ns = cluster.namespace.as_str();
    let Ok(Some(_)) = crate::cluster::objects::get(cluster, "VPNGateway", name).await else {
        return Error::from(e);
    };
    let phase = match crate::cluster::journal::read(cluster, name).await {
        Ok(Some(j)) => format!("journal phase {}", j.phase),
        Ok(None) => "no journal".into(),
        Err(_) => "journal unreadable".into(),
    };
    Error::Stop {
        code: crate::exit::FAILURE,
        message: format!(
            "{name} -n {ns} is already migrated: VPNGateway {name} exists and IPsecGateway {name} does not ({phase}); there is nothing to plan"
        ),
        hint: Some(format!(
            "`vpnmig verify {name} -n {ns}` checks it; `vpnmig status -n {ns}` shows every gateway"
        )),
    }
}

/// `--gitops-repo DIR`: the new manifests in the old one's place in the repository (or
/// beside the bundle outside a Git working tree), and what was done, on stderr.
fn gitops_repo(
    dir: &std::path::Path,
    source: &input::Source,
    plan: &plan::Plan,
    out: Option<&std::path::Path>,
) -> Result<(), Error> {
    let meta = &source.gateway.metadata;
    let id = crate::core::repo::ObjectId::ipsec_gateway(
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    );
    let targets = manifest::targets(plan);
    let objects: Vec<serde_json::Value> = targets.iter().map(|(_, v)| v.clone()).collect();
    let beside = match out.and_then(std::path::Path::parent) {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let rw = crate::gitops_repo::rewrite(dir, &id, &objects, &beside).map_err(|e| Error::Stop {
        code: exit::FAILURE,
        hint: e.hint(),
        message: match std::error::Error::source(&e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        },
    })?;
    let labels: Vec<String> = targets.into_iter().map(|(l, _)| l).collect();
    let shown_id = if id.namespace.is_empty() {
        format!("IPsecGateway {}", id.name)
    } else {
        id.to_string()
    };
    for line in crate::output::repo::lines(
        &rw,
        &dir.display().to_string(),
        &shown_id,
        &labels,
        plan.blocked,
    ) {
        crate::output::say(&line);
    }
    Ok(())
}

/// `-n` with `-f`, as kubectl does (issue 9 item 13): a file that names another
/// namespace is refused; a file that names none takes `-n`'s.
fn with_namespace(
    source: &mut input::Source,
    namespace: Option<&str>,
    file: &str,
) -> Result<(), Error> {
    let Some(wanted) = namespace else {
        return Ok(());
    };
    match source.gateway.metadata.namespace.as_deref() {
        Some(ns) if ns != wanted => Err(Error::Stop {
            code: crate::exit::INVALID_INPUT,
            message: format!(
                "the namespace of IPsecGateway {} in {file} is {ns}, not -n {wanted}: nothing was planned",
                source.gateway.metadata.name.as_deref().unwrap_or("?")
            ),
            hint: Some(format!(
                "leave out -n (the file says {ns}), or pass -n {ns}"
            )),
        }),
        Some(_) => Ok(()),
        None => {
            source.gateway.metadata.namespace = Some(wanted.to_string());
            if let Some(meta) = source
                .raw
                .get_mut("metadata")
                .and_then(|m| m.as_object_mut())
            {
                meta.insert(
                    "namespace".into(),
                    serde_json::Value::String(wanted.to_string()),
                );
            }
            Ok(())
        }
    }
}

/// The allowlist from `--allowlist FILE`, else the built-in one.
pub(crate) fn allowlist(path: Option<&PathBuf>) -> Result<Allowlist, Error> {
    match path {
        Some(p) => Allowlist::from_yaml(&read(p)?).map_err(|e| Error::Allowlist {
            path: p.display().to_string(),
            message: input::yaml_message(&e),
        }),
        None => Ok(Allowlist::default()),
    }
}

/// Whether this is the plan of many: no NAME, and a selection (-A, -n, -l, --names).
fn selects_many(args: &PlanArgs) -> bool {
    args.gateway.is_none()
        && args.file.is_none()
        && (args.all_namespaces
            || args.selector.is_some()
            || args.names.is_some()
            || args.cluster.namespace.is_some())
}

fn usage(message: &str) -> Error {
    Error::Stop {
        code: exit::USAGE,
        message: message.to_string(),
        hint: Some("see `vpnmig plan --help`".into()),
    }
}

/// The plan of many, from the cluster or a file: bundles, fleet.json, the table.
fn run_fleet(
    args: &PlanArgs,
    allowlist: &Allowlist,
    sources: Option<(Vec<input::Source>, String)>,
) -> Result<i32, Error> {
    use crate::fleet::plan as fleet;
    if !args.peer_names.is_empty() {
        return Err(usage(
            "--peer-name is for one gateway: plan it by NAME (or -f FILE --name NAME)",
        ));
    }
    if args.gitops_repo.is_some() {
        return Err(usage(
            "--gitops-repo is for one gateway: plan it by NAME (or -f FILE --name NAME)",
        ));
    }
    if args.output == Format::Yaml {
        return Err(usage(
            "-o yaml is for one gateway's manifests; for many, use -o json (fleet.json) or --out DIR",
        ));
    }
    // Each gateway's next window (text only), where a window is written.
    let mut next: Vec<((String, String), String)> = Vec::new();
    let (planned, origin, selection) = match sources {
        Some((sources, file)) => (
            fleet::offline(&sources, allowlist),
            file,
            crate::core::fleet::Selection::default(),
        ),
        None => {
            let names = match &args.names {
                Some(p) => Some(fleet::parse_names(&read(p)?)),
                None => None,
            };
            let select = fleet::Select {
                all_namespaces: args.all_namespaces,
                selector: args.selector.clone(),
                names,
            };
            crate::cli::runtime()?.block_on(async {
                let cluster = Cluster::connect(&args.cluster.options()).await?;
                if args.output == Format::Text {
                    crate::output::say(&cluster.banner(args.all_namespaces));
                }
                cluster.require_operator().await?;
                let planned = fleet::live(&cluster, &select, allowlist).await?;
                if args.output == Format::Text {
                    next = crate::cli::schedule::next_lines(
                        &cluster,
                        args.all_namespaces,
                        args.windows.as_deref(),
                    )
                    .await?;
                }
                Ok::<_, Error>((
                    planned,
                    format!("context {}", cluster.context),
                    select.recorded(&cluster.namespace),
                ))
            })?
        }
    };
    let summary = fleet::write(args.out.as_deref(), &planned, args.force, origin, selection)?;
    let doc = match args.output {
        Format::Json => {
            serde_json::to_string_pretty(&summary).expect("fleet plans serialize") + "\n"
        }
        _ => {
            let written = args.out.as_ref().map(|d| d.display().to_string());
            let mut text = crate::output::fleet::render(&summary, written.as_deref());
            let lines: Vec<String> = summary
                .gateways
                .iter()
                .filter_map(|g| {
                    next.iter()
                        .find(|(k, _)| k.0 == g.namespace && k.1 == g.name)
                        .map(|(_, w)| format!("  {}/{}: {w}\n", g.namespace, g.name))
                })
                .collect();
            if !lines.is_empty() {
                text.push_str("\nnext windows:\n");
                text.extend(lines);
            }
            text
        }
    };
    crate::cli::write_stdout(&doc)?;
    Ok(if summary.blocked() {
        exit::BLOCKED
    } else {
        exit::OK
    })
}

pub fn run(args: &PlanArgs) -> Result<i32, Error> {
    let allowlist = allowlist(args.allowlist.as_ref())?;
    if selects_many(args) {
        return run_fleet(args, &allowlist, None);
    }
    // A file of several gateways without --name: the plan of many (a file that is not
    // valid is left to the one-gateway path, whose errors say what is wrong with it).
    let mut text = None;
    if let (None, Some(path), None) = (&args.gateway, &args.file, &args.name) {
        let file = path.display().to_string();
        let read_text = read(path)?;
        if let Ok(sources) = input::load_all(&read_text, &file)
            && sources.len() > 1
        {
            let wanted = args.cluster.namespace.as_deref();
            let mut sources: Vec<input::Source> = sources
                .into_iter()
                .filter(|s| {
                    wanted.is_none_or(|w| {
                        s.gateway
                            .metadata
                            .namespace
                            .as_deref()
                            .is_none_or(|ns| ns == w)
                    })
                })
                .collect();
            for s in &mut sources {
                with_namespace(s, wanted, &file)?;
            }
            return run_fleet(args, &allowlist, Some((sources, file)));
        }
        text = Some(read_text);
    }
    let mut live_objects = Vec::new();
    let (source, plan, file) = match (&args.gateway, &args.file) {
        (Some(name), _) => {
            let (source, plan, existing) =
                crate::cli::runtime()?.block_on(live(args, name, &allowlist))?;
            live_objects = existing;
            (source, plan, format!("vpnmig plan {name}"))
        }
        (None, Some(path)) => {
            let file = path.display().to_string();
            let text = match text.take() {
                Some(t) => t,
                None => read(path)?,
            };
            let mut source = input::load(&text, &file, args.name.as_deref())?;
            with_namespace(&mut source, args.cluster.namespace.as_deref(), &file)?;
            let names = peer_names(&args.peer_names, &source.gateway)?;
            let plan = full_plan::build_named(&source, &allowlist, &names);
            (source, plan, format!("vpnmig plan -f {file}"))
        }
        (None, None) => {
            return Err(usage(
                "nothing to plan: give NAME, -f FILE, or a selection of many (-A, -n NAMESPACE, -l SELECTOR, --names FILE)",
            ));
        }
    };

    let previous = match &args.out {
        Some(dir) => bundle::read_previous(dir)?,
        None => bundle::Previous::default(),
    };
    let old_manifest = plan::clean_old_manifest(&source.raw);
    // Like `kubectl diff`: against the live objects when they exist, else the bundle.
    let diffs = if live_objects.is_empty() {
        bundle::diff(&plan, &old_manifest, &previous)
    } else {
        let live = bundle::Previous {
            objects: live_objects
                .iter()
                .map(|(l, v)| (l.clone(), manifest::to_yaml_sorted(v)))
                .collect(),
            ..Default::default()
        };
        bundle::diff(&plan, &old_manifest, &live)
    };
    let written = match &args.out {
        Some(dir) => {
            bundle::guard(dir, &plan, &previous, args.force)?;
            bundle::write(dir, &plan, &old_manifest)?;
            Some(dir.display().to_string())
        }
        None => None,
    };

    let doc = match args.output {
        Format::Text => {
            let base = match (&args.out, previous.gateway.is_some()) {
                _ if !live_objects.is_empty() => text::DiffBase::Live,
                (Some(_), true) => text::DiffBase::Bundle(written.as_deref().unwrap_or_default()),
                _ => text::DiffBase::Nothing,
            };
            text::render_plan(
                &plan,
                &diffs,
                base,
                written.as_deref(),
                crate::output::width::detect(),
            )
        }
        Format::Yaml => {
            let objects: Vec<_> = manifest::targets(&plan)
                .into_iter()
                .map(|(_, v)| v)
                .collect();
            let stream = manifest::to_yaml_stream(&objects);
            if plan.blocked {
                // kubectl ignores comments; people and reviewers of a pipeline do not.
                format!(
                    "# vpnmig: this plan is BLOCKED by {} check(s): do not apply these manifests.\n# Run `{file}` for the checks.\n{stream}",
                    plan.summary.blockers
                )
            } else {
                stream
            }
        }
        Format::Json => serde_json::to_string_pretty(&plan).expect("plans serialize") + "\n",
    };
    crate::cli::write_stdout(&doc)?;
    if plan.blocked && args.output != Format::Text {
        let _ = writeln!(
            anstream::stderr(),
            "vpnmig: plan is BLOCKED by {} check(s); see .checks in -o json",
            plan.summary.blockers
        );
    }
    if let Some(dir) = &args.gitops_repo {
        gitops_repo(dir, &source, &plan, args.out.as_deref())?;
    }
    Ok(if plan.blocked {
        exit::BLOCKED
    } else {
        exit::OK
    })
}
