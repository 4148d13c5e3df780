//! The `vpnmig` binary: run the command, print any error with its hint, exit with the
//! documented code (src/exit.rs).

use std::io::Write;
use std::process::ExitCode;

use anstyle::AnsiColor;

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
            let fix = |t: String| {
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
            let mut stderr = anstream::stderr();
            let _ = writeln!(stderr, "{red}error{red:#}: {err}");
            if let Some(hint) = hint {
                let _ = writeln!(stderr, "{cyan}hint{cyan:#}: {hint}");
            }
            code
        }
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
