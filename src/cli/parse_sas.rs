//! `vpnmig parse-sas [FILE|-]`: read `swanctl --list-sas` (or `--raw`) output, for
//! support tickets and monitoring scripts.

use std::path::PathBuf;

use comfy_table::{ContentArrangement, Table, presets};

use crate::cli::Error;
use crate::core::swanctl::{self, Sas};
use crate::exit;

/// Read `swanctl --list-sas` output and print its IKE and CHILD SAs.
///
/// Reads strongSwan's human format (IKEv1/IKEv2, old and new SPI forms, several traffic
/// selectors per line, `-in-UDP` modes) and the `--raw` vici dump. Lines it does not
/// know are skipped; states it has not seen are kept as printed.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  kubectl exec -n tenant-acme deploy/acme -c strongswan -- swanctl --list-sas | vpnmig parse-sas
  vpnmig parse-sas ticket-4411.txt -o json | jq '.ike_sas[] | select(.state==\"ESTABLISHED\") | .name'

JSON: {\"ike_sas\":[{\"name\",\"unique_id\",\"state\",\"ike_version\",\"local\":{\"id\",\"address\",\"port\"},
\"remote\":{…},\"child_sas\":[{\"name\",\"unique_id\",\"state\",\"mode\",\"udp_encap\",\"local_ts\",\"remote_ts\"}]}]}
Empty input (no bytes, or only whitespace) reads as no SAs: swanctl prints nothing when
none exists. Non-empty text with no IKE SA in it is not swanctl output: exit 3, naming
what it is (charon not running, a kubectl/exec error, or its first line).
Exit codes: 0 read, 1 the file could not be read, 3 not swanctl output.")]
pub struct ParseSasArgs {
    /// The output to read; `-` or nothing reads standard input.
    #[arg(value_name = "FILE", default_value = "-")]
    file: PathBuf,

    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = SasFormat::Text)]
    output: SasFormat,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum SasFormat {
    /// A table, one row per IKE SA and per CHILD SA.
    Text,
    /// The document described below.
    Json,
}

/// The text rendering of parsed SAs.
pub fn render(sas: &Sas) -> String {
    if sas.ike_sas.is_empty() {
        return "no IKE SAs: nothing is up\n".into();
    }
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    table.set_header(["SA", "ID", "STATE", "TYPE", "LOCAL", "REMOTE"]);
    let endpoint = |e: &swanctl::Endpoint| match e.port {
        Some(p) => format!("'{}' @ {}[{p}]", e.id, e.address),
        None => format!("'{}' @ {}", e.id, e.address),
    };
    for ike in &sas.ike_sas {
        table.add_row([
            ike.name.clone(),
            format!("#{}", ike.unique_id),
            ike.state.clone(),
            format!("IKEv{}", ike.ike_version),
            endpoint(&ike.local),
            endpoint(&ike.remote),
        ]);
        for c in &ike.child_sas {
            let mode = if c.udp_encap {
                format!("{}-in-UDP", c.mode)
            } else {
                c.mode.clone()
            };
            table.add_row([
                format!("  {}", c.name),
                format!("#{}", c.unique_id),
                c.state.clone(),
                mode,
                c.local_ts.join(" "),
                c.remote_ts.join(" "),
            ]);
        }
    }
    table
        .to_string()
        .lines()
        .map(|l| format!("{}\n", l.trim_end()))
        .collect()
}

pub fn run(args: &ParseSasArgs) -> Result<i32, Error> {
    let shown = args.file.display().to_string();
    let text = crate::cli::plan::read(&args.file)?;
    let sas = swanctl::parse(&text).map_err(|error| Error::Sas { file: shown, error })?;
    let doc = match args.output {
        SasFormat::Text => render(&sas),
        SasFormat::Json => serde_json::to_string_pretty(&sas).expect("SAs serialize") + "\n",
    };
    crate::cli::write_stdout(&doc)?;
    Ok(exit::OK)
}
