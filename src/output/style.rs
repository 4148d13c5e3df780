//! The few styles vpnmig uses. Text is built with ANSI codes and written through
//! `anstream`, which strips them when the stream is not a terminal or `NO_COLOR` is set
//! (DESIGN.md §5: colour only on a TTY).

use anstyle::{AnsiColor, Style};

pub const HEADING: Style = Style::new().bold();
pub const OK: Style = AnsiColor::Green.on_default();
pub const BAD: Style = AnsiColor::Red.on_default().bold();
pub const WARN: Style = AnsiColor::Yellow.on_default().bold();
pub const DIM: Style = Style::new().dimmed();
pub const ADDED: Style = AnsiColor::Green.on_default();
pub const REMOVED: Style = AnsiColor::Red.on_default();
pub const HUNK: Style = AnsiColor::Cyan.on_default();

/// `text` wrapped in `style`'s codes.
pub fn paint(style: Style, text: impl std::fmt::Display) -> String {
    format!("{style}{text}{style:#}")
}
