//! What vpnmig remembers on this machine: where it wrote the bundle of each cutover
//! (issue 14 item 7). The journal in the cluster is the record; this index is how a lost
//! journal (a ConfigMap deleted by hand or by a namespace clean-up) still leads to the
//! local copy of the old manifest.
//!
//! Layout: `$VPNMIG_STATE_DIR`, else `$XDG_STATE_HOME/vpnmig`, else
//! `~/.local/state/vpnmig` (the XDG base directory convention); one JSON file per
//! gateway, `bundles/<namespace>/<gateway>.json`, a list of `{server, bundle, at}`.
//! Best effort: a machine where nothing can be written just remembers nothing.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One bundle written by a cutover on this machine.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Remembered {
    /// The API server the cutover ran against.
    pub server: String,
    /// The bundle directory, absolute.
    pub bundle: String,
    /// When (RFC 3339, UTC).
    pub at: String,
}

/// The state directory, if one can be named.
pub fn dir() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("VPNMIG_STATE_DIR")
        .or_else(|| env("XDG_STATE_HOME").map(|d| d.join("vpnmig")))
        .or_else(|| env("HOME").map(|h| h.join(".local/state/vpnmig")))
}

/// Where a cutover without `--out`/`--plan` writes its bundle (issue 10 item 7): one
/// directory per object under the state directory, `windows/<ns>/<gateway>-<uid8>`, so
/// rehearsals do not litter the working directory and a re-created gateway of the same
/// name never replaces the record of the first. Without a state directory, the working
/// directory as before.
pub fn bundle_dir(ns: &str, gateway: &str, uid: Option<&str>) -> PathBuf {
    let uid = uid.unwrap_or("no-uid");
    let short = &uid[..uid.len().min(8)];
    match dir() {
        Some(d) => d
            .join("windows")
            .join(ns)
            .join(format!("{gateway}-{short}")),
        None => PathBuf::from(format!("vpnmig-{ns}-{gateway}-{short}")),
    }
}

fn index(ns: &str, gateway: &str) -> Option<PathBuf> {
    Some(
        dir()?
            .join("bundles")
            .join(ns)
            .join(format!("{gateway}.json")),
    )
}

fn read(path: &Path) -> Vec<Remembered> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// Note that the cutover of `ns/gateway` on `server` wrote its bundle to `bundle`.
/// Returns the index file written, or why not (the caller says so; nothing depends on it).
pub fn remember(
    server: &str,
    ns: &str,
    gateway: &str,
    bundle: &Path,
    at: &str,
) -> Result<PathBuf, String> {
    let path = index(ns, gateway).ok_or("no state directory (HOME is not set)")?;
    let bundle = std::path::absolute(bundle).map_err(|e| e.to_string())?;
    let mut all = read(&path);
    all.retain(|r| !(r.server == server && Path::new(&r.bundle) == bundle));
    all.push(Remembered {
        server: server.into(),
        bundle: bundle.display().to_string(),
        at: at.into(),
    });
    let dir = path.parent().expect("the index is in a directory");
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let text = serde_json::to_string_pretty(&all).expect("serializes");
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// The bundles of `ns/gateway` on `server` written from this machine that still exist,
/// newest first.
pub fn recall(server: &str, ns: &str, gateway: &str) -> Vec<Remembered> {
    let Some(path) = index(ns, gateway) else {
        return Vec::new();
    };
    let mut found: Vec<Remembered> = read(&path)
        .into_iter()
        .filter(|r| {
            r.server == server
                && Path::new(&r.bundle)
                    .join(crate::bundle::PLAN_FILE)
                    .is_file()
        })
        .collect();
    found.sort_by(|a, b| b.at.cmp(&a.at));
    found
}

/// Every gateway (`namespace`, `name`) whose cutover on `server` wrote a bundle from this
/// machine that still exists, in namespace `ns` or in all (`None`): what `status` checks
/// when a gateway and its journal are both gone (a21f A9: nothing in the cluster names
/// it any more, and status was silent).
pub fn remembered_gateways(server: &str, ns: Option<&str>) -> Vec<(String, String)> {
    let Some(root) = dir().map(|d| d.join("bundles")) else {
        return Vec::new();
    };
    let namespaces: Vec<String> = match ns {
        Some(n) => vec![n.to_string()],
        None => std::fs::read_dir(&root)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .collect(),
    };
    let mut out = Vec::new();
    for n in namespaces {
        for e in std::fs::read_dir(root.join(&n))
            .into_iter()
            .flatten()
            .flatten()
        {
            let file = e.file_name();
            let Some(gw) = file.to_str().and_then(|f| f.strip_suffix(".json")) else {
                continue;
            };
            if !recall(server, &n, gw).is_empty() {
                out.push((n.clone(), gw.to_string()));
            }
        }
    }
    out.sort();
    out
}

/// What to say when the journal of `ns/gateway` is gone: the bundle this machine
/// remembers (from the state index, else the path the last journal recorded) and the
/// command that rolls back from it; `None` when there is none.
pub fn lost_journal_hint(server: &str, ns: &str, gateway: &str) -> Option<String> {
    let r = recall(server, ns, gateway).into_iter().next()?;
    Some(format!(
        "this machine has the bundle of its cutover ({}, written {}): `vpnmig rollback {gateway} -n {ns} --plan {}` restores the IPsecGateway from it",
        r.bundle, r.at, r.bundle
    ))
}

/// The members a wave of one selection took on `server` (issue 21 item 8), remembered
/// on this machine: a gateway that was part of the wave and is gone at the re-run (no
/// IPsecGateway, no journal) is still one of its members, named, never dropped from the
/// count. `selection` is the wave's operation, scope and selection, as words.
fn wave_file(server: &str, selection: &str) -> Option<PathBuf> {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{server}\n{selection}").as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    Some(dir()?.join("waves").join(format!("{hex}.json")))
}

/// What a wave's record holds.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct WaveRecord {
    pub server: String,
    pub selection: String,
    /// `namespace/name`, sorted.
    pub members: Vec<String>,
}

/// The members remembered for this wave (none when it never ran here).
pub fn wave_members(server: &str, selection: &str) -> Vec<(String, String)> {
    let Some(path) = wave_file(server, selection) else {
        return Vec::new();
    };
    let rec: WaveRecord = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    if rec.server != server || rec.selection != selection {
        return Vec::new();
    }
    rec.members
        .iter()
        .filter_map(|m| m.split_once('/'))
        .map(|(ns, n)| (ns.to_string(), n.to_string()))
        .collect()
}

/// Remember `members` (`(namespace, name)`) as this wave's; returns the file, or why it
/// could not be written (best effort, as [`remember`]).
pub fn remember_wave(
    server: &str,
    selection: &str,
    members: &[(String, String)],
) -> Result<PathBuf, String> {
    let path = wave_file(server, selection).ok_or("no state directory (HOME is not set)")?;
    let mut keys: Vec<String> = members.iter().map(|(ns, n)| format!("{ns}/{n}")).collect();
    keys.sort();
    keys.dedup();
    let rec = WaveRecord {
        server: server.to_string(),
        selection: selection.to_string(),
        members: keys,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let text = serde_json::to_string_pretty(&rec).expect("records serialize") + "\n";
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_bundle_is_recalled_newest_first_and_only_while_it_exists() {
        let tmp = tempfile::tempdir().unwrap();
        // SAFETY: tests in this module are the only ones that read VPNMIG_STATE_DIR.
        unsafe { std::env::set_var("VPNMIG_STATE_DIR", tmp.path().join("state")) };
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        for d in [&a, &b] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join(crate::bundle::PLAN_FILE), "{}").unwrap();
        }
        remember("https://k", "t", "acme", &a, "2026-11-30T01:00:00Z").unwrap();
        remember("https://k", "t", "acme", &b, "2026-11-30T02:00:00Z").unwrap();
        remember("https://other", "t", "acme", &a, "2026-11-30T03:00:00Z").unwrap();
        let got: Vec<String> = recall("https://k", "t", "acme")
            .into_iter()
            .map(|r| r.bundle)
            .collect();
        assert_eq!(got, [b.display().to_string(), a.display().to_string()]);
        std::fs::remove_dir_all(&b).unwrap();
        let hint = lost_journal_hint("https://k", "t", "acme").unwrap();
        assert!(
            hint.contains(&format!(
                "`vpnmig rollback acme -n t --plan {}`",
                a.display()
            )),
            "{hint}"
        );
        assert!(lost_journal_hint("https://k", "t", "other").is_none());
    }
}
