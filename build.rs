//! Records the git commit the binary is built from, for `vpnmig version` (issue 13 item
//! 3). Outside a git checkout (a source tarball, `cargo install` from a registry) it is
//! "unknown": never a reason for the build to fail.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// Tell cargo to run this again when `p` changes; a path that does not exist would make
/// it run on every build, so only existing ones.
fn watch(p: Option<String>) {
    if let Some(p) = p.filter(|p| std::path::Path::new(p).exists()) {
        println!("cargo:rerun-if-changed={p}");
    }
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=VPNMIG_GIT_COMMIT={commit}");
    // Run again when HEAD moves (a commit, a checkout), not on every source change. In a
    // worktree these paths live under the common git directory, which git names for us.
    for path in ["HEAD", "packed-refs"] {
        watch(git(&[
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            path,
        ]));
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch(git(&[
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            &branch,
        ]));
    }
    println!("cargo:rerun-if-changed=build.rs");
}
