//! `vpnmig plan … --gitops-repo DIR` (issue 11 item 4): find the file of a Git working
//! tree that defines the IPsecGateway, put the VPNGateway and VPNPeers in its place
//! (every other byte of the file kept) and take `git diff --stat`. The text work is
//! [`crate::core::repo`]'s; this is the walk of the tree, the kustomize resource graph,
//! the write and the `git` CLI. Outside a Git working tree nothing in DIR is changed:
//! the rewritten file goes beside the plan bundle instead.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::core::repo::{self, ObjectId};

/// Directories never searched.
pub const SKIPPED_DIRS: &[&str] = &[".git", "target", "node_modules"];

/// Files larger than this are not manifests anyone edits by hand: skipped.
const MAX_FILE: u64 = 4 << 20;

/// What `--gitops-repo` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rewrite {
    /// The file that defines the gateway, relative to DIR.
    pub file: PathBuf,
    /// The kustomization whose `resources:` list the file, relative to DIR.
    pub kustomization: Option<PathBuf>,
    /// Where the result went: the file itself (in a Git working tree), else
    /// `<gateway>.vpngateway.yaml` beside the bundle. `None`: nothing written (the file
    /// already defines the VPNGateway).
    pub written: Option<PathBuf>,
    /// `git diff --stat` of the file (in a Git working tree).
    pub diff_stat: Option<String>,
    /// Helm templates that name the kind: reported, not edited.
    pub helm_templates: Vec<PathBuf>,
}

/// Why the repository could not be rewritten.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    #[error("--gitops-repo {dir}: not a directory")]
    NotADirectory { dir: String },
    #[error(
        "--gitops-repo {dir}: no file defines {id}: searched {files} YAML file(s) ({kustomizations} kustomization(s)) for apiVersion ipsec.bnerd.net/*, kind IPsecGateway, that namespace (own or from a kustomization) and name{unreadable}"
    )]
    NotFound {
        dir: String,
        id: String,
        files: usize,
        kustomizations: usize,
        unreadable: String,
    },
    #[error("--gitops-repo {dir}: {id} is defined more than once: {}", places.join(", "))]
    Ambiguous {
        dir: String,
        id: String,
        places: Vec<String>,
    },
    #[error(
        "--gitops-repo {dir}: {id} is only in Helm template(s) {}: reported, not edited",
        files.join(", ")
    )]
    Helm {
        dir: String,
        id: String,
        files: Vec<String>,
    },
    #[error(
        "--gitops-repo {dir}: {id} is defined in {file}, but {file_new} already defines the VPNGateway: the repository was not changed"
    )]
    Both {
        dir: String,
        id: String,
        file: String,
        file_new: String,
    },
    #[error(
        "--gitops-repo {dir}: {id} is defined in {file}, a base built by {}: rewriting it would change every one of them; the repository was not changed",
        overlays.join(", ")
    )]
    SharedBase {
        dir: String,
        id: String,
        file: String,
        overlays: Vec<String>,
    },
    #[error("{file}: has uncommitted changes: the repository was not changed")]
    Dirty { file: String },
    #[error("{path}: {what}")]
    Io {
        path: String,
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("`git {args}` in {dir} failed: {stderr}")]
    Git {
        dir: String,
        args: String,
        stderr: String,
    },
}

impl RepoError {
    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            RepoError::NotADirectory { .. } => {
                "give the top of the repository's working tree (or the folder of the client's manifests)".into()
            }
            RepoError::NotFound { .. } => "check the namespace and name, or point --gitops-repo at the working tree that holds the client's manifests; the plan itself (and its bundle, with --out) is not affected".into(),
            RepoError::Ambiguous { .. } => "point --gitops-repo at the folder of the one that is deployed (e.g. the overlay of this cluster)".into(),
            RepoError::Helm { .. } => "edit the chart by hand: put the bundle's vpngateway.yaml and vpnpeer.yaml in its templates (or values) in the old gateway's place".into(),
            RepoError::Both { .. } => "remove one of the two by hand: the old gateway's manifest once the cutover is done, or the new one if the migration is not to happen yet".into(),
            RepoError::SharedBase { .. } => "move the gateway out of the shared base into this cluster's overlay by hand (or patch it there), then run it again; the bundle's vpngateway.yaml and vpnpeer.yaml are what goes in its place".into(),
            RepoError::Dirty { .. } => "commit or stash the changes first, so that the diff shows vpnmig's change alone".into(),
            RepoError::Io { .. } | RepoError::Git { .. } => return None,
        })
    }
}

fn io(path: &Path, what: &'static str) -> impl FnOnce(std::io::Error) -> RepoError + use<> {
    let path = path.display().to_string();
    move |source| RepoError::Io { path, what, source }
}

/// Run `git -C dir ARGS`; its stdout, or why not.
fn git(dir: &Path, args: &[&str]) -> Result<String, RepoError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["--no-pager", "-c", "color.ui=never"])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .map_err(io(dir, "cannot run git"))?;
    if !out.status.success() {
        return Err(RepoError::Git {
            dir: dir.display().to_string(),
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether `dir` is inside a Git working tree.
fn in_work_tree(dir: &Path) -> bool {
    git(dir, &["rev-parse", "--is-inside-work-tree"]).is_ok_and(|o| o.trim() == "true")
}

/// Every file under `dir` (sorted), skipping [`SKIPPED_DIRS`] and symlinked directories.
fn walk(dir: &Path) -> Result<Vec<PathBuf>, RepoError> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).map_err(io(&d, "cannot read the directory"))? {
            let entry = entry.map_err(io(&d, "cannot read the directory"))?;
            let path = entry.path();
            let Ok(ft) = entry.file_type() else { continue };
            if ft.is_dir() {
                if !SKIPPED_DIRS.iter().any(|s| entry.file_name() == *s) {
                    stack.push(path);
                }
            } else if ft.is_file() || (ft.is_symlink() && path.is_file()) {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn is_manifest(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    name.ends_with(".yaml") || name.ends_with(".yml") || name == "Kustomization"
}

/// `a/b/../c` → `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn relative(path: &Path, dir: &Path) -> PathBuf {
    path.strip_prefix(dir).unwrap_or(path).to_path_buf()
}

/// The kustomize graph of the tree: which kustomization lists each file, and which one
/// lists each directory (whose kustomization is then nested in it).
#[derive(Default)]
struct Kustomize {
    /// kustomization file → what it says.
    parsed: HashMap<PathBuf, repo::Kustomization>,
    /// resource file → the kustomization listing it.
    file_owner: HashMap<PathBuf, PathBuf>,
    /// directory → the kustomization listing it.
    dir_owner: HashMap<PathBuf, PathBuf>,
    /// file or directory → every kustomization listing it (a base shared by overlays
    /// has several).
    includers: HashMap<PathBuf, Vec<PathBuf>>,
}

impl Kustomize {
    fn build(files: &[PathBuf]) -> Kustomize {
        let mut k = Kustomize::default();
        for f in files {
            let is_k = f
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| repo::KUSTOMIZATION_FILES.contains(&n));
            if !is_k {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(f) else {
                continue;
            };
            let Ok(parsed) = repo::kustomization(&text) else {
                continue;
            };
            let base = f.parent().unwrap_or(Path::new(""));
            for r in &parsed.resources {
                let p = normalize(&base.join(r));
                k.includers.entry(p.clone()).or_default().push(f.clone());
                if p.is_dir() {
                    k.dir_owner.insert(p, f.clone());
                } else {
                    k.file_owner.insert(p, f.clone());
                }
            }
            k.parsed.insert(f.clone(), parsed);
        }
        k
    }

    /// The top kustomizations that build `file` (those no other kustomization lists), by
    /// every path up the graph: more than one means a base shared by overlays, whose
    /// rewrite would change every overlay (attack finding).
    fn roots(&self, file: &Path) -> Vec<PathBuf> {
        let mut roots = Vec::new();
        let mut todo: Vec<PathBuf> = self.includers.get(file).cloned().unwrap_or_default();
        let mut seen = std::collections::HashSet::new();
        while let Some(k) = todo.pop() {
            if !seen.insert(k.clone()) || seen.len() > 256 {
                continue;
            }
            let up = k
                .parent()
                .and_then(|d| self.includers.get(d))
                .cloned()
                .unwrap_or_default();
            if up.is_empty() {
                roots.push(k);
            } else {
                todo.extend(up);
            }
        }
        roots.sort();
        roots
    }

    /// The namespace kustomize gives `file`: the outermost `namespace:` on the chain of
    /// kustomizations that include it, and the nearest of them.
    fn namespace(&self, file: &Path) -> (Option<String>, Option<PathBuf>) {
        let Some(first) = self.file_owner.get(file) else {
            return (None, None);
        };
        let mut ns = None;
        let mut at = Some(first.clone());
        let mut hops = 0;
        while let Some(k) = at.take() {
            if let Some(n) = self.parsed.get(&k).and_then(|p| p.namespace.clone()) {
                ns = Some(n);
            }
            hops += 1;
            if hops > 64 {
                break;
            }
            at = k.parent().and_then(|d| self.dir_owner.get(d)).cloned();
        }
        (ns, Some(first.clone()))
    }
}

/// Find the file under `dir` that defines `id` and put `objects` (the new VPNGateway and
/// VPNPeers) in its place. In a Git working tree the file is rewritten (it must have no
/// uncommitted changes) and `git diff --stat` taken; elsewhere the rewritten file is
/// written to `beside/<gateway>.vpngateway.yaml` and DIR is left alone.
pub fn rewrite(
    dir: &Path,
    id: &ObjectId,
    objects: &[Value],
    beside: &Path,
) -> Result<Rewrite, RepoError> {
    let shown = dir.display().to_string();
    if !dir.is_dir() {
        return Err(RepoError::NotADirectory { dir: shown });
    }
    // Absolute from here, so the paths of DIR and of the whole working tree compare.
    let canonical = dir
        .canonicalize()
        .map_err(io(dir, "cannot read the directory"))?;
    let dir = canonical.as_path();
    let files: Vec<PathBuf> = walk(dir)?.into_iter().filter(|p| is_manifest(p)).collect();
    // The kustomize graph of the whole working tree: a base under DIR may be built by
    // overlays outside it (attack finding: `--gitops-repo repo/base` rewrote a shared
    // base).
    let top = git(dir, &["rev-parse", "--show-toplevel"])
        .ok()
        .and_then(|t| PathBuf::from(t.trim()).canonicalize().ok())
        .filter(|t| t != dir);
    let kustomize = match &top {
        Some(t) => Kustomize::build(
            &walk(t)?
                .into_iter()
                .filter(|p| is_manifest(p))
                .collect::<Vec<_>>(),
        ),
        None => Kustomize::build(&files),
    };
    let new_id = ObjectId::vpn_gateway(&id.namespace, &id.name);
    let mut found: Vec<(PathBuf, String, usize, Option<PathBuf>)> = Vec::new();
    let mut already = Vec::new();
    let mut helm = Vec::new();
    let mut unreadable = Vec::new();
    for f in &files {
        if kustomize.parsed.contains_key(f)
            || std::fs::metadata(f)
                .map(|m| m.len() > MAX_FILE)
                .unwrap_or(true)
        {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        let rel = relative(f, dir);
        let components: Vec<&str> = rel.iter().filter_map(|c| c.to_str()).collect();
        if repo::is_helm_template(&components, &text) {
            if repo::template_mentions(&text, id) {
                helm.push(rel);
            }
            continue;
        }
        let (ns, owner) = kustomize.namespace(f);
        match repo::find(&text, id, ns.as_deref()) {
            Ok(docs) => {
                for d in docs {
                    found.push((f.clone(), text.clone(), d, owner.clone()));
                }
            }
            Err(e) => unreadable.push(format!("{}: {e}", rel.display())),
        }
        if repo::find(&text, &new_id, ns.as_deref()).is_ok_and(|d| !d.is_empty()) {
            already.push(rel);
        }
    }
    let helm_templates = helm.clone();
    let (file, text, doc, owner) = match found.len() {
        0 if !already.is_empty() => {
            return Ok(Rewrite {
                file: already.remove(0),
                kustomization: None,
                written: None,
                diff_stat: None,
                helm_templates,
            });
        }
        0 if !helm.is_empty() => {
            return Err(RepoError::Helm {
                dir: shown,
                id: id.to_string(),
                files: helm.iter().map(|p| p.display().to_string()).collect(),
            });
        }
        0 => {
            let in_dir = files
                .iter()
                .filter(|f| kustomize.parsed.contains_key(*f))
                .count();
            return Err(RepoError::NotFound {
                dir: shown,
                id: id.to_string(),
                files: files.len() - in_dir,
                kustomizations: in_dir,
                unreadable: if unreadable.is_empty() {
                    String::new()
                } else {
                    format!("; not valid YAML: {}", unreadable.join("; "))
                },
            });
        }
        1 if !already.is_empty() => {
            return Err(RepoError::Both {
                dir: shown,
                id: id.to_string(),
                file: relative(&found[0].0, dir).display().to_string(),
                file_new: already[0].display().to_string(),
            });
        }
        1 if kustomize.roots(&found[0].0).len() > 1 => {
            return Err(RepoError::SharedBase {
                dir: shown,
                id: id.to_string(),
                file: relative(&found[0].0, dir).display().to_string(),
                overlays: kustomize
                    .roots(&found[0].0)
                    .iter()
                    .map(|k| {
                        relative(k, top.as_deref().unwrap_or(dir))
                            .display()
                            .to_string()
                    })
                    .collect(),
            });
        }
        1 => found.remove(0),
        _ => {
            return Err(RepoError::Ambiguous {
                dir: shown,
                id: id.to_string(),
                places: found
                    .iter()
                    .map(|(f, _, d, _)| {
                        format!("{} (document {})", relative(f, dir).display(), d + 1)
                    })
                    .collect(),
            });
        }
    };
    let docs = repo::documents(&text);
    let document = &docs[doc];
    let namespaced = repo::has_namespace(&text, document);
    let new_text = repo::replace(&text, document, &repo::render(objects, namespaced));
    let rel = relative(&file, dir);
    let (written, diff_stat) = if in_work_tree(dir) {
        let status = git(
            dir,
            &["status", "--porcelain", "--", &rel.display().to_string()],
        )?;
        if !status.trim().is_empty() && !status.starts_with("??") {
            return Err(RepoError::Dirty {
                file: file.display().to_string(),
            });
        }
        write_atomically(&file, &new_text)?;
        let stat = git(dir, &["diff", "--stat", "--", &rel.display().to_string()])?;
        (Some(file.clone()), Some(stat))
    } else {
        let target = beside.join(format!("{}.vpngateway.yaml", id.name));
        std::fs::create_dir_all(beside).map_err(io(beside, "cannot create the directory"))?;
        write_atomically(&target, &new_text)?;
        (Some(target), None)
    };
    Ok(Rewrite {
        file: rel,
        kustomization: owner.map(|o| relative(&o, dir)),
        written,
        diff_stat,
        helm_templates,
    })
}

/// Write `text` to `path` through a temporary file in the same directory, keeping the
/// permissions of the file it replaces.
fn write_atomically(path: &Path, text: &str) -> Result<(), RepoError> {
    use std::io::Write;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".vpnmig-")
        .tempfile_in(parent)
        .map_err(io(parent, "cannot create a temporary file"))?;
    tmp.write_all(text.as_bytes())
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(io(path, "cannot write"))?;
    if let Ok(m) = std::fs::metadata(path) {
        std::fs::set_permissions(tmp.path(), m.permissions())
            .map_err(io(path, "cannot set permissions"))?;
    }
    tmp.persist(path)
        .map_err(|e| io(path, "cannot replace")(e.error))?;
    Ok(())
}
