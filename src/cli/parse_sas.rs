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
  set -o pipefail; vpnmig parse-sas ticket-4411.txt -o json | jq '.ike_sas[] | select(.state==\"ESTABLISHED\") | .name'

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

/// The text rendering of parsed SAs, as wide as stdout.
pub fn render(sas: &Sas) -> String {
    render_width(sas, crate::output::width::detect())
}

/// The text rendering of parsed SAs in lines of at most `width` columns: a table, one
/// row per IKE and CHILD SA, when it fits; else each SA on a line with its local and
/// remote ends (or traffic selectors) on the lines below, wrapped at spaces, so an
/// address, an identity or a selector is never split.
pub fn render_width(sas: &Sas, width: usize) -> String {
    if sas.ike_sas.is_empty() {
        return "no IKE SAs: nothing is up\n".into();
    }
    let table = table(sas);
    if table
        .lines()
        .all(|l| crate::output::width::visible(l) <= width)
    {
        return table;
    }
    let wrap = crate::output::width::wrap;
    let mut out = String::new();
    for ike in &sas.ike_sas {
        out.push_str(&wrap(
            &format!(
                "{}  #{}  {}  IKEv{}",
                ike.name, ike.unique_id, ike.state, ike.ike_version
            ),
            width,
            " ",
            "   ",
        ));
        out.push_str(&wrap(
            &endpoint(&ike.local),
            width,
            "   local  ",
            "          ",
        ));
        out.push_str(&wrap(
            &endpoint(&ike.remote),
            width,
            "   remote ",
            "          ",
        ));
        for c in &ike.child_sas {
            out.push_str(&wrap(
                &format!("{}  #{}  {}  {}", c.name, c.unique_id, c.state, mode(c)),
                width,
                "   ",
                "     ",
            ));
            out.push_str(&wrap(
                &c.local_ts.join(" "),
                width,
                "     local  ",
                "            ",
            ));
            out.push_str(&wrap(
                &c.remote_ts.join(" "),
                width,
                "     remote ",
                "            ",
            ));
        }
    }
    out
}

fn endpoint(e: &swanctl::Endpoint) -> String {
    match e.port {
        Some(p) => format!("'{}' @ {}[{p}]", e.id, e.address),
        None => format!("'{}' @ {}", e.id, e.address),
    }
}

fn mode(c: &swanctl::ChildSa) -> String {
    if c.udp_encap {
        format!("{}-in-UDP", c.mode)
    } else {
        c.mode.clone()
    }
}

/// The one-line-per-SA table.
fn table(sas: &Sas) -> String {
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    table.set_header(["SA", "ID", "STATE", "TYPE", "LOCAL", "REMOTE"]);
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
            table.add_row([
                format!("  {}", c.name),
                format!("#{}", c.unique_id),
                c.state.clone(),
                mode(c),
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
