//! `vpnmig man`: manual pages generated from the clap definitions (issue 13 item 1), so
//! they never disagree with `--help`.

use std::path::PathBuf;

use crate::cli::Error;
use crate::exit;

/// Write the manual pages: vpnmig.1 and one per subcommand (vpnmig-plan.1, …).
///
/// Without --out, the page of vpnmig itself goes to standard output (`vpnmig man | man -l -`).
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  vpnmig man --out ~/.cargo/share/man/man1 && man vpnmig-cutover
  vpnmig man | man -l -")]
pub struct ManArgs {
    /// Write every page into this directory (created if missing), one file per command.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// The pages as `(file name, roff)`: the top-level command and every subcommand, nested
/// ones included, hidden ones left out (what clap_mangen's `generate_to` writes).
pub fn pages(cmd: clap::Command) -> Result<Vec<(String, Vec<u8>)>, std::io::Error> {
    fn walk(cmd: clap::Command, out: &mut Vec<(String, Vec<u8>)>) -> Result<(), std::io::Error> {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
            walk(sub, out)?;
        }
        let man = clap_mangen::Man::new(cmd);
        let mut page = Vec::new();
        man.render(&mut page)?;
        out.push((man.get_filename(), page));
        Ok(())
    }
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    walk(cmd, &mut out)?;
    out.reverse();
    Ok(out)
}

pub fn run(args: &ManArgs, cmd: clap::Command) -> Result<i32, Error> {
    let pages = pages(cmd).map_err(|source| Error::Write { source })?;
    let Some(dir) = &args.out else {
        let (_, top) = &pages[0];
        crate::cli::write_stdout(&String::from_utf8_lossy(top))?;
        return Ok(exit::OK);
    };
    let write = |p: &PathBuf, text: &[u8]| {
        std::fs::write(p, text).map_err(|source| Error::WriteFile {
            path: p.display().to_string(),
            source,
        })
    };
    std::fs::create_dir_all(dir).map_err(|source| Error::WriteFile {
        path: dir.display().to_string(),
        source,
    })?;
    for (name, page) in &pages {
        write(&dir.join(name), page)?;
    }
    eprintln!(
        "wrote {} manual pages to {} (vpnmig.1 and one per subcommand)",
        pages.len(),
        dir.display()
    );
    Ok(exit::OK)
}
