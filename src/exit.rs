//! Exit codes, one place (DESIGN.md §5). docs/exit-codes.md documents the same table;
//! a test keeps the two in step.

/// The command did what it was asked; for `plan`, no blocker.
pub const OK: i32 = 0;
/// Something failed that is not one of the cases below (I/O, an API error, a bug).
pub const FAILURE: i32 = 1;
/// The command line was wrong (unknown flag, missing argument). clap's own code.
pub const USAGE: i32 = 2;
/// The input manifest was rejected: not YAML, no IPsecGateway, a missing or mistyped
/// field, a duplicate name. Nothing was written.
pub const INVALID_INPUT: i32 = 3;
/// The plan was made (and written with `--out`) but a blocker check failed: a cutover
/// must not run until it is fixed.
pub const BLOCKED: i32 = 4;
/// `vpnmig verify` ran and the gateway is not healthy (or a window is under way); or
/// `vpnmig rollback` re-created the IPsecGateway but the operator gave it other addresses.
pub const VERIFY_FAILED: i32 = 5;
/// A wait ran out of time (`verify --wait --timeout`, a cutover or rollback step).
pub const TIMEOUT: i32 = 6;
/// vpnmig refused to act to protect something: a bundle of another gateway in `--out`,
/// a held lock, drift between plan and cluster, no TTY and no `--yes`, a confirmation
/// not typed. The message says what to pass to proceed.
pub const REFUSED: i32 = 7;

/// The command was interrupted (Ctrl-C, SIGTERM, SIGHUP): the lock is released, the
/// journal is consistent and the message says how to resume or roll back. 128 + SIGINT,
/// the shell's convention.
pub const INTERRUPTED: i32 = 130;

/// Every code with its name, in order: what `docs/exit-codes.md` lists.
pub const ALL: &[(i32, &str)] = &[
    (OK, "OK"),
    (FAILURE, "FAILURE"),
    (USAGE, "USAGE"),
    (INVALID_INPUT, "INVALID_INPUT"),
    (BLOCKED, "BLOCKED"),
    (VERIFY_FAILED, "VERIFY_FAILED"),
    (TIMEOUT, "TIMEOUT"),
    (REFUSED, "REFUSED"),
    (INTERRUPTED, "INTERRUPTED"),
];
