//! What `plan --gitops-repo` did, as lines for stderr (`output::say`).

use crate::gitops_repo::Rewrite;

/// The lines that say what was changed where, the `git diff --stat`, and what is left
/// to do. `targets` are the new objects' `Kind/name`; `blocked`: the plan is blocked.
pub fn lines(rw: &Rewrite, dir: &str, id: &str, targets: &[String], blocked: bool) -> Vec<String> {
    let mut out = Vec::new();
    let file = rw.file.display();
    // What the file is: the target of a kept symlink, a resource of a kustomization, the
    // one build that includes it.
    let mut notes = Vec::new();
    if let Some(l) = &rw.link {
        notes.push(format!(
            "the target of the symlink {}, which is kept",
            l.display()
        ));
    }
    if let Some(k) = &rw.kustomization {
        notes.push(format!("a resource of {}", k.display()));
    }
    if let Some(b) = &rw.build {
        notes.push(format!("built by {} alone", b.display()));
    }
    let via = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join("; "))
    };
    match &rw.written {
        None => out.push(format!(
            "GitOps repository {dir}: {file} already defines the VPNGateway instead of {id}: nothing changed"
        )),
        Some(w) if rw.diff_stat.is_some() => {
            out.push(format!(
                "GitOps repository {dir}: {file}{via}: {id} replaced by {}; the file's other documents and comments are unchanged (not committed):",
                targets.join(", ")
            ));
            let stat = rw.diff_stat.as_deref().unwrap_or_default();
            if stat.trim().is_empty() {
                out.push(format!(
                    "  (git shows no diff: {} is not tracked by Git)",
                    w.display()
                ));
            }
            out.extend(stat.lines().map(|l| format!("  {}", l.trim_start())));
            out.push(format!(
                "Review it with `git -C {dir} diff`; merge it when the window's cutover is done"
            ));
        }
        Some(w) => out.push(format!(
            "GitOps repository {dir}: not in a Git working tree, so {file}{via} was left alone; it is written with {id} replaced by {} to {}",
            targets.join(", "),
            w.display()
        )),
    }
    for t in &rw.helm_templates {
        out.push(format!(
            "Helm template {} also has kind IPsecGateway: reported, not edited",
            t.display()
        ));
    }
    if blocked && rw.written.is_some() {
        out.push("The plan is BLOCKED: do not merge this change before its checks pass".into());
    }
    out
}
