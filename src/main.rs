//! The `vpnmig` binary: run the command, print any error with its hint, exit with the
//! documented code (src/exit.rs).

use std::io::Write;
use std::process::ExitCode;

use anstyle::AnsiColor;

/// mimalloc instead of the system's allocator: a plan is many small allocations, and
/// `status -A` makes one for each of 20,000 gateways (docs/fleet.md: about half of its
/// CPU time was glibc's malloc and free).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // A TAB in a shell that loaded `vpnmig completions SHELL`, or kubectl completing
    // `kubectl vpnmig …`: answer and exit.
    vpnmig::cli::complete::handle_kubectl_request();
    vpnmig::cli::complete::handle_request(vpnmig::cli::is_plugin(
        std::env::args_os().next().as_deref(),
    ));
    let code = match vpnmig::cli::run(std::env::args_os()) {
        Ok(code) => code,
        Err(err) => {
            let code = err.exit_code();
            let hint = err.hint();
            // The edge: render the whole cause chain in one line, uv-style.
            let err = anyhow::Error::new(err);
            // As `kubectl vpnmig`, the commands an error advises are named so too.
            let plugin = vpnmig::cli::is_plugin(std::env::args_os().next().as_deref());
            // Run with --yes (a script): the windows it advises are too.
            let yes = vpnmig::cli::confirmed_by_flag(std::env::args_os());
            let fix = |t: String| {
                let t = if yes { vpnmig::cli::with_yes(&t) } else { t };
                if plugin {
                    vpnmig::cli::as_plugin_text(&t)
                } else {
                    t
                }
            };
            let err = fix(format!("{err:#}"));
            let hint = hint.map(fix);
            let red = AnsiColor::Red.on_default().bold();
            let cyan = AnsiColor::Cyan.on_default().bold();
            // Each line at most as wide as stderr, continuations under the message.
            let red = format!("{red}error{red:#}: ");
            let cyan = format!("{cyan}hint{cyan:#}: ");
            let mut stderr = anstream::stderr();
            let _ = write!(stderr, "{}", labelled(&red, &err));
            if let Some(hint) = hint {
                let _ = write!(stderr, "{}", labelled(&cyan, &hint));
            }
            code
        }
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// `label` and `text` in lines no wider than stderr: the first line's continuations under
/// the text after the label, any further lines of `text` (a list) as they hang.
fn labelled(label: &str, text: &str) -> String {
    use vpnmig::output::width;
    let width = width::detect_stderr();
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    let indent = " ".repeat(width::visible(label));
    let mut out = width::wrap(first, width, label, &indent);
    if !rest.is_empty() {
        out.push_str(&width::hanging(rest, width));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}
