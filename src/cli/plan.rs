//! `vpnmig plan -f FILE`: translate, check and diff an exported IPsecGateway, offline.

use std::io::{Read, Write};
use std::path::PathBuf;

use crate::bundle;
use crate::cli::Error;
use crate::core::allowlist::Allowlist;
use crate::core::{input, plan};
use crate::exit;
use crate::output::{Format, manifest, text};

/// Translate an exported IPsecGateway into VPNGateway + VPNPeers and check it.
///
/// Reads the object as `kubectl get ipsecgateway NAME -o yaml` writes it (one object,
/// several documents, or a List). Prints the pinned-values table, the checks that would
/// block a cutover and a diff of each new object; with --out, writes the plan bundle.
/// Nothing is sent to a cluster.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  kubectl get ipsecgateway acme -n tenant-acme -o yaml > acme.yaml
  vpnmig plan -f acme.yaml --out plans/acme
  vpnmig plan -f all-gateways.yaml --name acme -o json | jq .checks
  vpnmig plan -f acme.yaml -o yaml | kubectl apply --dry-run=server -f -

Exit codes: 0 ready, 1 failure (a file could not be read or written), 2 usage,
3 invalid input, 4 blocked by a check (plan still shown and written; -o yaml marks
the manifests), 7 refused to replace a bundle (another gateway or object, or a READY
bundle by a BLOCKED plan; --force overrides).")]
pub struct PlanArgs {
    /// Manifest file with the IPsecGateway (YAML or JSON; `-` reads standard input).
    #[arg(
        short = 'f',
        long = "file",
        visible_alias = "filename",
        value_name = "PATH"
    )]
    file: PathBuf,

    /// Which IPsecGateway, when the file holds several (NAME or NAMESPACE/NAME).
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
    String::from_utf8(bytes).map_err(|e| {
        let message = format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        );
        Error::Input(input::InputError::Syntax {
            file: shown,
            message,
        })
    })
}

pub fn run(args: &PlanArgs) -> Result<i32, Error> {
    let allowlist = match &args.allowlist {
        Some(p) => Allowlist::from_yaml(&read(p)?).map_err(|e| Error::Allowlist {
            path: p.display().to_string(),
            message: input::yaml_message(&e),
        })?,
        None => Allowlist::default(),
    };
    let file = args.file.display().to_string();
    let source = input::load(&read(&args.file)?, &file, args.name.as_deref())?;
    let plan = plan::build(&source, &allowlist);

    let previous = match &args.out {
        Some(dir) => bundle::read_previous(dir)?,
        None => bundle::Previous::default(),
    };
    let old_manifest = plan::clean_old_manifest(&source.raw);
    let diffs = bundle::diff(&plan, &old_manifest, &previous);
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
                (Some(_), true) => text::DiffBase::Bundle(written.as_deref().unwrap_or_default()),
                _ => text::DiffBase::Nothing,
            };
            text::render_plan(&plan, &diffs, base, written.as_deref())
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
                    "# vpnmig: this plan is BLOCKED by {} check(s): do not apply these manifests.\n# Run `vpnmig plan -f {file}` for the checks.\n{stream}",
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
    Ok(if plan.blocked {
        exit::BLOCKED
    } else {
        exit::OK
    })
}
