//! Plan bundles on disk: `vpngateway.yaml`, `vpnpeer.yaml` (all peers),
//! `old-ipsecgateway.yaml` (cleaned so `kubectl apply -f` re-creates it) and `plan.json`.
//!
//! Writes are atomic per file (temporary file in the same directory, then rename) and
//! `plan.json` is written last, so a bundle with a `plan.json` is complete. A directory
//! holding another gateway's bundle, or files vpnmig did not write, is never overwritten
//! without `--force` (DESIGN.md §4.3: the old manifest is always recoverable).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::core::plan::Plan;
use crate::output::diff::ObjectDiff;
use crate::output::manifest;

pub const GATEWAY_FILE: &str = "vpngateway.yaml";
pub const PEERS_FILE: &str = "vpnpeer.yaml";
pub const OLD_FILE: &str = "old-ipsecgateway.yaml";
pub const PLAN_FILE: &str = "plan.json";
/// Every file of a bundle, in the order they are written.
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
    #[error("{dir}: has {file} but no readable plan.json, so it is not a vpnmig bundle")]
    NotABundle { dir: String, file: String },
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
            BundleError::OtherGateway { .. } | BundleError::NotABundle { .. } => {
                Some("choose another --out directory, or pass --force to replace its files".into())
            }
            BundleError::Io { .. } => None,
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
    /// Its target objects, `(Kind/name, YAML as vpnmig renders it)`.
    pub objects: Vec<(String, String)>,
}

/// Read what `dir` holds (nothing if it does not exist). Unreadable YAML in a previous
/// bundle is not an error: the diff then shows every line as new.
pub fn read_previous(dir: &Path) -> Result<Previous, BundleError> {
    let mut prev = Previous::default();
    let plan_path = dir.join(PLAN_FILE);
    if plan_path.exists() {
        let text = fs::read_to_string(&plan_path)
            .map_err(io(&plan_path, "cannot read the previous plan"))?;
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            let name = v
                .pointer("/source/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            prev.gateway = Some(
                match v.pointer("/source/namespace").and_then(Value::as_str) {
                    Some(ns) => format!("{ns}/{name}"),
                    None => name.to_string(),
                },
            );
        }
    }
    for file in [GATEWAY_FILE, PEERS_FILE] {
        let Ok(text) = fs::read_to_string(dir.join(file)) else {
            continue;
        };
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap_or_default();
        prev.objects.extend(
            docs.iter()
                .filter(|d| !d.is_null())
                .map(|d| (manifest::label_of(d), manifest::to_yaml(d))),
        );
    }
    Ok(prev)
}

/// Diff each target of `plan` against `previous`; objects only in `previous` show as
/// removed.
pub fn diff(plan: &Plan, previous: &Previous) -> Vec<ObjectDiff> {
    let targets = manifest::targets(plan);
    let mut diffs: Vec<ObjectDiff> = targets
        .iter()
        .map(|(label, v)| ObjectDiff {
            object: label.clone(),
            before: previous
                .objects
                .iter()
                .find(|(l, _)| l == label)
                .map(|(_, y)| y.clone()),
            after: Some(manifest::to_yaml(v)),
        })
        .collect();
    diffs.extend(
        previous
            .objects
            .iter()
            .filter(|(l, _)| !targets.iter().any(|(t, _)| t == l))
            .map(|(l, y)| ObjectDiff {
                object: l.clone(),
                before: Some(y.clone()),
                after: None,
            }),
    );
    diffs
}

/// Refuse to write into `dir` if it holds another gateway's bundle or stray bundle files,
/// unless `force`.
pub fn guard(dir: &Path, plan: &Plan, previous: &Previous, force: bool) -> Result<(), BundleError> {
    if force {
        return Ok(());
    }
    let wanted = gateway_id(plan);
    match &previous.gateway {
        Some(found) if *found != wanted => Err(BundleError::OtherGateway {
            dir: dir.display().to_string(),
            found: found.clone(),
            wanted,
        }),
        Some(_) => Ok(()),
        None => match FILES.iter().find(|f| dir.join(f).exists()) {
            Some(file) => Err(BundleError::NotABundle {
                dir: dir.display().to_string(),
                file: file.to_string(),
            }),
            None => Ok(()),
        },
    }
}

/// Write the bundle for `plan` into `dir` (created if missing); `old_manifest` is the
/// cleaned old object. Returns the paths written, `plan.json` last.
pub fn write(dir: &Path, plan: &Plan, old_manifest: &Value) -> Result<Vec<PathBuf>, BundleError> {
    fs::create_dir_all(dir).map_err(io(dir, "cannot create the bundle directory"))?;
    let contents = [
        (GATEWAY_FILE, manifest::to_yaml(&plan.targets.gateway)),
        (PEERS_FILE, manifest::to_yaml_stream(&plan.targets.peers)),
        (OLD_FILE, manifest::to_yaml(old_manifest)),
        (
            PLAN_FILE,
            serde_json::to_string_pretty(plan).expect("plans serialize") + "\n",
        ),
    ];
    let mut written = Vec::new();
    for (file, text) in contents {
        let path = dir.join(file);
        let mut tmp = tempfile::NamedTempFile::new_in(dir)
            .map_err(io(dir, "cannot create a temporary file"))?;
        tmp.write_all(text.as_bytes())
            .map_err(io(&path, "cannot write"))?;
        tmp.as_file().sync_all().map_err(io(&path, "cannot sync"))?;
        tmp.persist(&path)
            .map_err(|e| io(&path, "cannot rename into place")(e.error))?;
        written.push(path);
    }
    Ok(written)
}
