//! Durations as people write them (`--timeout 5m`): `1h30m`, `5m`, `90s`, `250ms`. The one
//! formatter of the crate, the inverse of `cli::cluster_args::parse_duration`; the caller
//! says how a fraction of a second is written ([`Rounding`]). Pure.
//!
//! Layer 0 (model, addresses, paths, parsers, YAML): imports nothing above it; see docs/architecture.md.

use std::time::Duration;

/// How a duration that is not a whole number of seconds is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    /// Under a second in milliseconds (`250ms`, `0ms`); from one second on, whole seconds
    /// with the fraction dropped (`1m30s` for 90.9 s): a timeout or an elapsed time.
    Down,
    /// Whole seconds, any fraction rounded up (`1s` for 1 ms; `0s` only for nothing): what
    /// is left of a window or needed for it, never shown as less than it is.
    Up,
}

/// `d` written the way it is read: `1h30m`, `5m`, `90s` (and `250ms` with [`Rounding::Down`]).
pub fn format(d: Duration, rounding: Rounding) -> String {
    let s = match rounding {
        Rounding::Down if d.as_millis() < 1000 => return format!("{}ms", d.as_millis()),
        Rounding::Down => d.as_secs(),
        Rounding::Up => d.as_secs() + u64::from(d.subsec_nanos() > 0),
    };
    let (h, m, s) = (s / 3600, (s % 3600) / 60, s % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || out.is_empty() {
        out.push_str(&format!("{s}s"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_written_as_read_with_their_rounding() {
        let ms = Duration::from_millis;
        let rows = [
            (ms(0), Rounding::Down, "0ms"),
            (ms(250), Rounding::Down, "250ms"),
            (ms(999), Rounding::Down, "999ms"),
            (ms(1_500), Rounding::Down, "1s"),
            (ms(90_900), Rounding::Down, "1m30s"),
            (Duration::from_secs(5400), Rounding::Down, "1h30m"),
            (Duration::from_secs(3725), Rounding::Down, "1h2m5s"),
            (Duration::ZERO, Rounding::Up, "0s"),
            (ms(1), Rounding::Up, "1s"),
            (ms(1_500), Rounding::Up, "2s"),
            (ms(89_001), Rounding::Up, "1m30s"),
            (Duration::from_secs(5400), Rounding::Up, "1h30m"),
            (Duration::from_secs(3725), Rounding::Up, "1h2m5s"),
        ];
        for (d, rounding, want) in rows {
            assert_eq!(format(d, rounding), want, "{d:?} {rounding:?}");
        }
    }
}
