//! Plan bundles on disk: `vpngateway.yaml`, `vpnpeer.yaml` (all peers),
//! `old-ipsecgateway.yaml` (cleaned so `kubectl apply -f` re-creates it) and `plan.json`.
//!
//! A bundle is replaced as a whole: the new one is written into a hidden directory next
//! to it and swapped in with one atomic `rename(RENAME_EXCHANGE)`, so a reader — or a
//! crash — sees either the old bundle or the new one, never a mix. Files vpnmig did not
//! write are carried over. A bundle is never replaced without `--force` when it belongs
//! to another gateway or another object of the same name, or when a READY bundle would
//! become a BLOCKED one (DESIGN.md §4.3: the old manifest is always recoverable).

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::core::plan::Plan;
use crate::output::diff::ObjectDiff;
use crate::output::manifest;

pub const GATEWAY_FILE: &str = "vpngateway.yaml";
pub const PEERS_FILE: &str = "vpnpeer.yaml";
pub const OLD_FILE: &str = "old-ipsecgateway.yaml";
pub const PLAN_FILE: &str = "plan.json";
/// Every file of a bundle.
pub const FILES: &[&str] = &[GATEWAY_FILE, PEERS_FILE, OLD_FILE, PLAN_FILE];

/// Why a bundle could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("{dir}: holds the bundle of {found}, not of {wanted}")]
    OtherGateway {
        dir: String,
        found: String,
        wanted: String,
    },
    #[error(
        "{dir}: holds the bundle of {name} uid {found}, but this input is another object of that name (uid {wanted})"
    )]
    OtherObject {
        dir: String,
        name: String,
        found: String,
        wanted: String,
    },
    #[error(
        "{dir}: holds a READY bundle; this plan is BLOCKED and would replace the pinned values it records"
    )]
    WouldBlock { dir: String },
    #[error("{dir}: has {file} but no plan.json naming a gateway, so it is not a vpnmig bundle")]
    NotABundle { dir: String, file: String },
    #[error("{dir}: is a file, not a directory")]
    NotADirectory { dir: String },
    #[error("{path}: not what vpnmig writes: {why}")]
    Unreadable { path: String, why: String },
    #[error("{path}: {action}")]
    Io {
        path: String,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl BundleError {
    /// What to do about it, one sentence.
    pub fn hint(&self) -> Option<String> {
        match self {
            BundleError::OtherGateway { .. } | BundleError::NotABundle { .. } | BundleError::OtherObject { .. } => {
                Some("choose another --out directory, or pass --force to replace its files".into())
            }
            BundleError::WouldBlock { .. } => Some("fix the blockers and plan again, write this plan to another --out directory, or pass --force".into()),
            BundleError::NotADirectory { .. } => Some("--out names the bundle directory, e.g. --out plans/acme".into()),
            BundleError::Io { action, source, .. }
                if *action == "cannot read the saved plan"
                    && source.kind() == std::io::ErrorKind::NotFound =>
            {
                Some("--plan names the directory `vpnmig plan NAME -n NAMESPACE --out DIR` wrote: plan it there first, or pass that directory".into())
            }
            BundleError::Io { .. } => None,
            BundleError::Unreadable { .. } => Some("pass the directory `vpnmig plan NAME --out DIR` wrote, unchanged".into()),
        }
    }
}

fn io(path: &Path, action: &'static str) -> impl FnOnce(std::io::Error) -> BundleError {
    let path = path.display().to_string();
    move |source| BundleError::Io {
        path,
        action,
        source,
    }
}

/// `namespace/name` of the gateway a plan is for.
pub fn gateway_id(plan: &Plan) -> String {
    match &plan.source.namespace {
        Some(ns) => format!("{ns}/{}", plan.source.name),
        None => plan.source.name.clone(),
    }
}

/// What a directory holds before the plan is written.
#[derive(Debug, Default)]
pub struct Previous {
    /// `namespace/name` from its plan.json.
    pub gateway: Option<String>,
    /// The source uid its plan.json records.
    pub uid: Option<String>,
    /// Whether its plan was blocked.
    pub blocked: Option<bool>,
    /// Its objects, `(label, YAML as vpnmig renders it)`: the targets and the old manifest.
    pub objects: Vec<(String, String)>,
}

fn old_label(name: &str) -> String {
    format!("IPsecGateway/{name} ({OLD_FILE})")
}

/// Read what `dir` holds (nothing if it does not exist). Unreadable YAML in a previous
/// bundle is not an error: the diff then shows every line as new.
pub fn read_previous(dir: &Path) -> Result<Previous, BundleError> {
    let mut prev = Previous::default();
    if dir.exists() && !dir.is_dir() {
        return Err(BundleError::NotADirectory {
            dir: dir.display().to_string(),
        });
    }
    let plan_path = dir.join(PLAN_FILE);
    if plan_path.exists() {
        let text = fs::read_to_string(&plan_path)
            .map_err(io(&plan_path, "cannot read the previous plan"))?;
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            let s = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
            prev.gateway = s("/source/name").filter(|n| !n.is_empty()).map(|name| {
                match s("/source/namespace") {
                    Some(ns) => format!("{ns}/{name}"),
                    None => name,
                }
            });
            prev.uid = s("/source/uid");
            prev.blocked = v.get("blocked").and_then(Value::as_bool);
        }
    }
    for file in [GATEWAY_FILE, PEERS_FILE, OLD_FILE] {
        let Ok(text) = fs::read_to_string(dir.join(file)) else {
            continue;
        };
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap_or_default();
        prev.objects
            .extend(docs.iter().filter(|d| !d.is_null()).map(|d| {
                let label = if file == OLD_FILE {
                    old_label(
                        d.pointer("/metadata/name")
                            .and_then(Value::as_str)
                            .unwrap_or("?"),
                    )
                } else {
                    manifest::label_of(d)
                };
                (label, manifest::to_yaml_sorted(d))
            }));
    }
    Ok(prev)
}

/// A saved bundle for cutover and rollback: `plan.json` and the old manifest from
/// `old-ipsecgateway.yaml`, both as written.
pub fn read_saved(dir: &Path) -> Result<(Value, Value), BundleError> {
    let plan_path = dir.join(PLAN_FILE);
    let text =
        fs::read_to_string(&plan_path).map_err(io(&plan_path, "cannot read the saved plan"))?;
    let plan: Value = serde_json::from_str(&text).map_err(|e| BundleError::Unreadable {
        path: plan_path.display().to_string(),
        why: e.to_string(),
    })?;
    if plan["apiVersion"] != crate::core::plan::PLAN_API_VERSION {
        return Err(BundleError::Unreadable {
            path: plan_path.display().to_string(),
            why: format!(
                "apiVersion {}, wanted {}",
                plan["apiVersion"],
                crate::core::plan::PLAN_API_VERSION
            ),
        });
    }
    let old_path = dir.join(OLD_FILE);
    let text = fs::read_to_string(&old_path)
        .map_err(io(&old_path, "cannot read the saved old manifest"))?;
    let old: Value = serde_saphyr::from_str(&text).map_err(|e| BundleError::Unreadable {
        path: old_path.display().to_string(),
        why: crate::core::input::yaml_message(&e),
    })?;
    if old["kind"] != "IPsecGateway" {
        return Err(BundleError::Unreadable {
            path: old_path.display().to_string(),
            why: format!("kind {}, wanted IPsecGateway", old["kind"]),
        });
    }
    Ok((plan, old))
}

/// Diff each target of `plan`, and the old manifest, against `previous`; objects only in
/// `previous` show as removed.
pub fn diff(plan: &Plan, old_manifest: &Value, previous: &Previous) -> Vec<ObjectDiff> {
    let mut now = manifest::targets(plan);
    // The rollback copy is shown when it replaces an earlier one, not on a first plan.
    if previous.gateway.is_some() {
        now.push((old_label(&plan.source.name), old_manifest.clone()));
    }
    let before = |label: &str| {
        previous
            .objects
            .iter()
            .find(|(l, _)| l == label)
            .map(|(_, y)| y.clone())
    };
    let mut diffs: Vec<ObjectDiff> = now
        .iter()
        .map(|(label, v)| ObjectDiff {
            object: label.clone(),
            before: before(label),
            after: Some(manifest::to_yaml_sorted(v)),
        })
        .collect();
    diffs.extend(
        previous
            .objects
            .iter()
            .filter(|(l, _)| !now.iter().any(|(t, _)| t == l))
            .map(|(l, y)| ObjectDiff {
                object: l.clone(),
                before: Some(y.clone()),
                after: None,
            }),
    );
    diffs
}

/// Refuse to write into `dir` unless it is empty, missing, or this gateway's bundle that
/// may be replaced; `force` overrides.
pub fn guard(dir: &Path, plan: &Plan, previous: &Previous, force: bool) -> Result<(), BundleError> {
    if force {
        return Ok(());
    }
    let d = dir.display().to_string();
    let wanted = gateway_id(plan);
    match &previous.gateway {
        Some(found) if *found != wanted => Err(BundleError::OtherGateway {
            dir: d,
            found: found.clone(),
            wanted,
        }),
        Some(_) => {
            if let (Some(found), Some(now)) = (&previous.uid, &plan.source.uid)
                && found != now
            {
                return Err(BundleError::OtherObject {
                    dir: d,
                    name: wanted,
                    found: found.clone(),
                    wanted: now.clone(),
                });
            }
            if previous.blocked == Some(false) && plan.blocked {
                return Err(BundleError::WouldBlock { dir: d });
            }
            Ok(())
        }
        None => match FILES.iter().find(|f| dir.join(f).exists()) {
            Some(file) => Err(BundleError::NotABundle {
                dir: d,
                file: file.to_string(),
            }),
            None => Ok(()),
        },
    }
}

/// Write the bundle for `plan` into `dir` (created with its parents if missing), as one
/// atomic swap; `old_manifest` is the cleaned old object. Returns the files' paths.
pub fn write(dir: &Path, plan: &Plan, old_manifest: &Value) -> Result<Vec<PathBuf>, BundleError> {
    if dir.exists() && !dir.is_dir() {
        return Err(BundleError::NotADirectory {
            dir: dir.display().to_string(),
        });
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(io(&parent, "cannot create the parent directory"))?;
    let stage = tempfile::Builder::new()
        .prefix(".vpnmig-bundle-")
        .tempdir_in(&parent)
        .map_err(io(&parent, "cannot create a staging directory"))?;
    // A reviewer on call must be able to read the bundle: permissions like the bundle
    // being replaced, else rwxr-xr-x (files follow the umask).
    let mode = fs::metadata(dir)
        .map(|m| m.permissions())
        .unwrap_or_else(|_| default_dir_permissions());
    fs::set_permissions(stage.path(), mode).map_err(io(stage.path(), "cannot set permissions"))?;
    let contents = [
        (GATEWAY_FILE, manifest::to_yaml(&plan.targets.gateway)),
        (PEERS_FILE, manifest::to_yaml_stream(&plan.targets.peers)),
        (OLD_FILE, manifest::to_yaml(old_manifest)),
        (
            PLAN_FILE,
            serde_json::to_string_pretty(plan).expect("plans serialize") + "\n",
        ),
    ];
    for (file, text) in &contents {
        let path = stage.path().join(file);
        fs::write(&path, text).map_err(io(&path, "cannot write"))?;
        fs::File::open(&path)
            .and_then(|f| f.sync_all())
            .map_err(io(&path, "cannot sync"))?;
    }
    if dir.exists() {
        // Carry over what vpnmig did not write, then swap the two directories at once.
        for entry in fs::read_dir(dir).map_err(io(dir, "cannot read"))? {
            let entry = entry.map_err(io(dir, "cannot read"))?;
            if !FILES.iter().any(|f| entry.file_name() == *f) {
                fs::rename(entry.path(), stage.path().join(entry.file_name()))
                    .map_err(io(&entry.path(), "cannot carry over"))?;
            }
        }
        exchange(stage.path(), dir)?;
        // `stage` now holds the previous bundle and is removed when dropped.
    } else {
        let staged = stage.keep();
        fs::rename(&staged, dir).map_err(io(dir, "cannot move the bundle into place"))?;
    }
    if let Ok(d) = fs::File::open(&parent) {
        let _ = d.sync_all();
    }
    Ok(FILES.iter().map(|f| dir.join(f)).collect())
}

#[cfg(unix)]
fn default_dir_permissions() -> fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    fs::Permissions::from_mode(0o755)
}

#[cfg(not(unix))]
fn default_dir_permissions() -> fs::Permissions {
    fs::metadata(".")
        .map(|m| m.permissions())
        .expect("the current directory exists")
}

/// Atomically swap two directories (Linux `renameat2(RENAME_EXCHANGE)`).
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> Result<(), BundleError> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE)
        .map_err(|e| io(b, "cannot swap the new bundle in")(e.into()))
}

/// Elsewhere: move the old bundle aside, move the new one in, put the old one where the
/// caller removes it. Not atomic; the old bundle is never lost.
#[cfg(not(target_os = "linux"))]
fn exchange(a: &Path, b: &Path) -> Result<(), BundleError> {
    let aside = a.with_extension("previous");
    fs::rename(b, &aside).map_err(io(b, "cannot move the previous bundle aside"))?;
    fs::rename(a, b).map_err(io(b, "cannot move the bundle into place"))?;
    fs::rename(&aside, a).map_err(io(a, "cannot move the previous bundle away"))
}

/// Whether a bundle can be written to `dir`: the directory (or, if it does not exist yet,
/// its nearest existing parent) accepts a new file. Checked before any prompt so that a
/// window never stops on a local path after the confirmation (issue 10 item 3).
pub fn check_writable(dir: &Path) -> Result<(), String> {
    let mut probe = dir.to_path_buf();
    while !probe.exists() {
        match probe.parent() {
            Some(p) if !p.as_os_str().is_empty() => probe = p.to_path_buf(),
            _ => {
                probe = PathBuf::from(".");
                break;
            }
        }
    }
    if !probe.is_dir() {
        return Err(format!("{} is not a directory", probe.display()));
    }
    tempfile::Builder::new()
        .prefix(".vpnmig-probe")
        .tempfile_in(&probe)
        .map(drop)
        .map_err(|e| format!("{} is not writable ({e})", probe.display()))
}
