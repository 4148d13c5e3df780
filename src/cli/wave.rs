//! `vpnmig cutover|rollback (-l SELECTOR | --names FILE | --plan-dir DIR) [-n NS | -A]
//! --concurrency K --max-failures F`: a wave (issue 15 item 3). The selection flags shared
//! by both commands, the one confirmation, and the frame that runs the wave runner
//! (`crate::window::wave`) and renders it (`output::wave`).

use std::io::IsTerminal;
use std::path::PathBuf;

use crate::cli::Error;
use crate::cli::cluster_args::ClusterArgs;
use crate::cluster::Cluster;
use crate::core::selector::LabelSelector;
use crate::exit;
use crate::fleet::wave::{self as select, Select};
use crate::output::wave as render;
use crate::output::window::{Format, Waits};
use crate::window::wave::{self, Member, WaveEvents, WaveOptions, WindowOptions};

/// The selection of many and the pace of the wave, shared by `cutover` and `rollback`.
#[derive(clap::Args, Debug, Clone)]
pub struct WaveArgs {
    /// A wave: every gateway with these labels (`tier=bronze,region in (fra1)`), of the
    /// namespace or of all with -A. A gateway already cut over is still found (by its
    /// journal, whose saved manifest has the labels), so the same command resumes.
    #[arg(short = 'l', long, value_name = "SELECTOR", value_parser = selector, conflicts_with = "name", help_heading = "Wave (many gateways)")]
    pub selector: Option<LabelSelector>,

    /// A wave of the gateways named in FILE: one `NAME` or `NAMESPACE/NAME` a line (`#`
    /// comments); each must exist.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "name",
        help_heading = "Wave (many gateways)"
    )]
    pub names: Option<PathBuf>,

    /// The wave's gateways in every namespace (with -l or --names).
    #[arg(
        short = 'A',
        long,
        conflicts_with = "name",
        help_heading = "Wave (many gateways)"
    )]
    pub all_namespaces: bool,

    /// At most K windows at a time.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64), help_heading = "Wave (many gateways)")]
    pub concurrency: u16,

    /// Start no new window once F windows have failed (the running ones finish).
    #[arg(long, value_name = "F", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..), help_heading = "Wave (many gateways)")]
    pub max_failures: u32,
}

fn selector(s: &str) -> Result<LabelSelector, String> {
    LabelSelector::parse(s)
}

/// Where the wave's gateways come from.
pub enum Source {
    /// `-l` and/or `--names`, in `-n` or `-A`.
    Cluster(Select),
    /// `--plan-dir DIR`: the ready gateways of `DIR/fleet.json`.
    PlanDir(PathBuf),
}

/// A wave as the commands give it.
pub struct Wave<'a> {
    pub cluster: &'a ClusterArgs,
    pub args: &'a WaveArgs,
    pub plan_dir: Option<&'a PathBuf>,
    pub yes: bool,
    pub dry_run: bool,
    pub waits: Waits,
    pub output: Format,
    pub window: WindowOptions,
}

/// Whether the command line asks for a wave.
pub fn asked(args: &WaveArgs, plan_dir: Option<&PathBuf>) -> bool {
    args.selector.is_some() || args.names.is_some() || plan_dir.is_some()
}

fn usage(message: String, cmd: &str) -> Error {
    Error::Stop {
        code: exit::USAGE,
        message,
        hint: Some(format!("see `vpnmig {cmd} --help`")),
    }
}

impl Wave<'_> {
    /// What the wave is, in the words a person types to confirm it: the selector, the
    /// names file or the plan directory.
    fn label(&self) -> String {
        let mut parts = Vec::new();
        if let Some(dir) = self.plan_dir {
            parts.push(dir.display().to_string());
        }
        if let Some(s) = &self.args.selector {
            parts.push(s.as_str().to_string());
        }
        if let Some(f) = &self.args.names {
            parts.push(f.display().to_string());
        }
        parts.join(" ")
    }

    fn source(&self) -> Result<Source, Error> {
        let op = self.window.operation().as_str();
        if self.args.all_namespaces && self.cluster.namespace.is_some() {
            return Err(usage(
                "-A and -n exclude each other: the wave is of one namespace or of all".into(),
                op,
            ));
        }
        if let Some(dir) = self.plan_dir {
            return Ok(Source::PlanDir(dir.clone()));
        }
        let names = match &self.args.names {
            Some(p) => Some(crate::fleet::plan::parse_names(&crate::cli::plan::read(p)?)),
            None => None,
        };
        Ok(Source::Cluster(Select {
            all_namespaces: self.args.all_namespaces,
            selector: self.args.selector.clone(),
            names,
        }))
    }

    /// The wave's selection in words, as its record on this machine is keyed: the
    /// operation, the scope and the selection (the names file's entries, not its path).
    fn selection_key(&self, cluster: &Cluster, s: &Select) -> String {
        let scope = if s.all_namespaces {
            "-A".to_string()
        } else {
            format!("-n {}", cluster.namespace)
        };
        let names = s.names.as_ref().map(|n| {
            let mut v: Vec<String> = n.iter().map(crate::fleet::plan::NameEntry::shown).collect();
            v.sort();
            v.join(",")
        });
        format!(
            "{} {scope} -l {} --names {}",
            self.window.operation().as_str(),
            s.selector.as_ref().map_or("", |l| l.as_str()),
            names.unwrap_or_default()
        )
    }

    /// `found` with every member an earlier run of the same wave took (issue 21 item 8):
    /// one that is gone now is kept, so its window names it and the wave does not say
    /// "done" without it. The union is remembered for the next run (not by a dry run).
    fn with_remembered(
        &self,
        cluster: &Cluster,
        s: &Select,
        mut found: Vec<Member>,
    ) -> Vec<Member> {
        let key = self.selection_key(cluster, s);
        let mut gone = Vec::new();
        for (namespace, name) in crate::state::wave_members(&cluster.server, &key) {
            if !found
                .iter()
                .any(|m| m.namespace == namespace && m.name == name)
            {
                gone.push(format!("{namespace}/{name}"));
                found.push(Member {
                    namespace,
                    name,
                    plan: None,
                });
            }
        }
        found.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        if !gone.is_empty() {
            crate::output::say(&format!(
                "note: {} gateway(s) this wave took before are not selected now (no IPsecGateway, no journal): kept in the wave and named: {}",
                gone.len(),
                gone.join(", ")
            ));
        }
        if !self.dry_run {
            let all: Vec<(String, String)> = found
                .iter()
                .map(|m| (m.namespace.clone(), m.name.clone()))
                .collect();
            if let Err(why) = crate::state::remember_wave(&cluster.server, &key, &all) {
                crate::output::say(&format!(
                    "note: this wave's members could not be remembered on this machine ({why}): a member deleted before the next run would not be named by it"
                ));
            }
        }
        found
    }

    /// Select, confirm once, run the windows, print the summary; the wave's exit code
    /// (`WaveReport::exit_code`, docs/wave-json.md).
    pub fn run(self) -> Result<i32, Error> {
        let source = self.source()?;
        let operation = self.window.operation();
        let rt = crate::cli::runtime()?;
        let out = rt.block_on(async {
            let cluster = Cluster::connect(&self.cluster.options())
                .await
                .map_err(|e| crate::window::before_any_change(e.into()))?;
            // A fleet plan's directory spans its namespaces, as `-A` does.
            let all = match &source {
                Source::Cluster(s) => s.all_namespaces,
                Source::PlanDir(_) => true,
            };
            crate::output::say(&cluster.banner(all));
            cluster
                .require_operator()
                .await
                .map_err(|e| crate::window::before_any_change(e.into()))?;
            let members: Vec<Member> = match &source {
                Source::Cluster(s) => {
                    let found = select::select(&cluster, s, operation).await?;
                    self.with_remembered(&cluster, s, found)
                }
                Source::PlanDir(dir) => {
                    let answered = matches!(&self.window, WindowOptions::Cutover(c) if c.gitops.mode.is_some());
                    let (members, blocked, gitops_only) = select::from_plan_dir(
                        dir,
                        self.cluster.namespace.as_deref(),
                        answered,
                    )?;
                    if blocked > 0 {
                        crate::output::say(&format!(
                            "note: {blocked} gateway(s) of {}/fleet.json are blocked: not in this wave{}",
                            dir.display(),
                            if gitops_only > 0 {
                                format!(
                                    " ({gitops_only} of them blocked only by gitops-sync, which `--gitops pause` or `--gitops ignore` answers: with it they join the wave)"
                                )
                            } else {
                                String::new()
                            }
                        ));
                    }
                    members
                }
            };
            if members.is_empty() {
                return Err(Error::Stop {
                    code: exit::INVALID_INPUT,
                    message: format!("no gateway selected by {}: nothing was done", self.label()),
                    hint: Some("check the selection (-l, --names, --plan-dir) and the namespace (-n, -A); `vpnmig status -A` lists the gateways".into()),
                });
            }
            let keys: Vec<String> = members.iter().map(Member::key).collect();
            let summary = render::summary(
                operation,
                &cluster.context,
                &keys,
                self.args.concurrency as usize,
                self.args.max_failures as usize,
                &self.waits,
                self.dry_run,
            );
            crate::output::say(summary.trim_end_matches('\n'));
            confirm(
                &format!("{} {}", members.len(), self.label()),
                self.yes,
                self.dry_run,
                operation.as_str(),
            )
            .await?;
            let opts = WaveOptions {
                concurrency: self.args.concurrency as usize,
                max_failures: self.args.max_failures as usize,
                window: self.window.clone(),
                render: crate::error::command_line,
            };
            let mut sink: Box<dyn WaveEvents> = if std::io::stderr().is_terminal() {
                Box::new(render::Board::new(members.len()))
            } else {
                Box::new(render::Log::new(members.len()))
            };
            let report = wave::run(
                &cluster,
                members,
                &opts,
                sink.as_mut(),
                crate::cli::window::interrupted(),
            )
            .await;
            drop(sink);
            Ok::<_, Error>(report)
        });
        rt.shutdown_background();
        let report = out?;
        crate::cli::write_stdout(&render::render(&report, self.dry_run, self.output))?;
        let code = report.exit_code();
        let own: Vec<&wave::GatewayReport> = report
            .gateways
            .iter()
            .filter(|g| g.advice.is_some())
            .collect();
        if !own.is_empty() {
            // Running the same command again cannot clear these (issue 21 item 8): each
            // gets the command for its own state, as the one-gateway command names it.
            let mut text = format!(
                "vpnmig: {} gateway(s) stopped where running the same command again is not enough: do what each line says first (the command the one-gateway command names for its state)",
                own.len()
            );
            for g in &own {
                text.push_str(&format!(
                    "\n  {}/{}: {}",
                    g.namespace,
                    g.name,
                    g.advice.as_deref().unwrap_or_default()
                ));
            }
            text.push_str(&format!(
                "\nthen run the same command again to resume the wave (done gateways are skipped, interrupted ones resume from their journals): `{}`",
                crate::error::again(&[])
            ));
            crate::output::say(&text);
        } else if code != exit::OK {
            crate::output::say(&format!(
                "vpnmig: the wave stopped before every gateway was done; run the same command again to resume it (done gateways are skipped, interrupted ones resume from their journals): `{}`",
                crate::error::again(&[])
            ));
        }
        Ok(code)
    }
}

/// The wave's one confirmation (DESIGN.md §5): on a terminal, the number of gateways and
/// the selection typed (`12 app=bronze`); without one, `--yes` (a dry run needs none).
async fn confirm(expected: &str, yes: bool, dry_run: bool, action: &str) -> Result<(), Error> {
    // `roll back` the verb, `rollback` the noun.
    let action = if action == "rollback" {
        "roll back"
    } else {
        action
    };
    if yes {
        return Ok(());
    }
    let tty = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if dry_run && !tty {
        crate::output::say(
            "dry run: no terminal, so no prompt (a real run would ask, or need --yes)",
        );
        return Ok(());
    }
    if !tty {
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!(
                "no terminal to confirm on: refusing to {action} this wave without --yes"
            ),
            hint: Some("read the summary above, then run again with --yes".into()),
        });
    }
    let prompt = format!(
        "{}To {action} these gateways, type `{expected}`",
        if dry_run {
            "(dry run: nothing will change) "
        } else {
            ""
        }
    );
    let typed = tokio::task::spawn_blocking(move || {
        dialoguer::Input::<String>::new()
            .with_prompt(prompt)
            .allow_empty(true)
            .interact_text_on(&dialoguer::console::Term::stderr())
    })
    .await
    .expect("the prompt does not panic")
    .map_err(|e| {
        let dialoguer::Error::IO(io) = &e;
        // Ctrl-C at the prompt: a cancellation, not a refusal (as for one gateway).
        let code = if io.kind() == std::io::ErrorKind::Interrupted {
            exit::INTERRUPTED
        } else {
            exit::REFUSED
        };
        Error::Stop {
            code,
            message: format!("the confirmation was not read ({e}): nothing was changed"),
            hint: None,
        }
    })?;
    let typed = typed.split_whitespace().collect::<Vec<_>>().join(" ");
    if typed != expected.split_whitespace().collect::<Vec<_>>().join(" ") {
        return Err(Error::Stop {
            code: exit::REFUSED,
            message: format!("typed `{typed}`, not `{expected}`: nothing was changed"),
            hint: None,
        });
    }
    Ok(())
}
