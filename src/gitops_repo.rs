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
    /// The file that defines the gateway, relative to DIR (`../…` when a symlink under
    /// DIR points to it elsewhere in the working tree).
    pub file: PathBuf,
    /// The symlink under DIR through which the file was found (kept as it is: its
    /// target is what was rewritten), relative to DIR.
    pub link: Option<PathBuf>,
    /// The kustomization whose `resources:` list the file, relative to DIR.
    pub kustomization: Option<PathBuf>,
    /// The one kustomize build (a kustomization no other one uses) that includes the
    /// file, when it is not `kustomization` itself, relative to DIR.
    pub build: Option<PathBuf>,
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
        "--gitops-repo {dir}: {id} is defined in {file}, {how} {}: rewriting it would change every one of them; the repository was not changed",
        overlays.join(", ")
    )]
    SharedBase {
        dir: String,
        id: String,
        file: String,
        /// "a base built by", "a resource of the kustomize Component X, used by", …
        how: String,
        overlays: Vec<String>,
    },
    #[error(
        "--gitops-repo {dir}: {id} is defined in {link}, a symlink to {target}, outside the working tree {tree}: the repository was not changed"
    )]
    SymlinkOutside {
        dir: String,
        id: String,
        link: String,
        target: String,
        tree: String,
    },
    #[error(
        "--gitops-repo {dir}: {id} is defined in {file}, and the build {build} also changes it with {}: after the rewrite they would aim at a kind its build no longer has (a strategic-merge patch that matches nothing breaks `kustomize build`, a targeted one silently stops applying); the repository was not changed",
        patches.join(", ")
    )]
    Patched {
        dir: String,
        id: String,
        file: String,
        build: String,
        patches: Vec<String>,
    },
    #[error(
        "--gitops-repo {dir}: {id} is defined in {file} as {name}, renamed by {}: the new VPNPeers' gatewayRef would not follow the rename; the repository was not changed",
        renames.join(", ")
    )]
    Renamed {
        dir: String,
        id: String,
        file: String,
        name: String,
        renames: Vec<String>,
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
            RepoError::SharedBase { .. } => "move the gateway out of the shared base (or component) into this cluster's overlay by hand, then run it again; the bundle's vpngateway.yaml and vpnpeer.yaml are what goes in its place".into(),
            RepoError::SymlinkOutside { .. } => "run it on the repository that holds the symlink's target, or replace the symlink by a copy of the file (committed) and run it again".into(),
            RepoError::Patched { .. } => "fold each patch into the gateway's manifest (or drop it) by hand and commit, then run it again; the bundle's vpngateway.yaml and vpnpeer.yaml carry the values the cluster has now".into(),
            RepoError::Renamed { .. } => "put the gateway's manifest, with its full name, in this cluster's overlay outside the renaming kustomization by hand, then run it again".into(),
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

/// One file found by [`walk`]: the path it was reached by and the file it is (symlinks
/// resolved).
#[derive(Clone, Debug)]
struct Found {
    path: PathBuf,
    real: PathBuf,
}

/// What [`walk`] found: the files, and the symlinked folders it did not enter because
/// they lead outside the working tree.
struct Walk {
    files: Vec<Found>,
    outside: Vec<PathBuf>,
}

/// Every file under `dir` (sorted), skipping [`SKIPPED_DIRS`]. Symlinks are followed: to
/// files anywhere (a definition outside `tree` is refused by name), to folders inside
/// `tree` only (each real folder once, so a link to an ancestor ends).
fn walk(dir: &Path, tree: &Path) -> Result<Walk, RepoError> {
    let mut out = Walk {
        files: Vec::new(),
        outside: Vec::new(),
    };
    let mut seen_dirs = std::collections::HashSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(real_dir) = d.canonicalize() else {
            continue;
        };
        if !real_dir.starts_with(tree) {
            out.outside.push(d);
            continue;
        }
        if !seen_dirs.insert(real_dir) {
            continue;
        }
        for entry in std::fs::read_dir(&d).map_err(io(&d, "cannot read the directory"))? {
            let entry = entry.map_err(io(&d, "cannot read the directory"))?;
            let path = entry.path();
            let Ok(ft) = entry.file_type() else { continue };
            if SKIPPED_DIRS.iter().any(|s| entry.file_name() == *s) {
                continue;
            }
            if ft.is_dir() || (ft.is_symlink() && path.is_dir()) {
                stack.push(path);
            } else if (ft.is_file() || (ft.is_symlink() && path.is_file()))
                && let Ok(real) = path.canonicalize()
            {
                out.files.push(Found { path, real });
            }
        }
    }
    out.files.sort_by(|a, b| a.path.cmp(&b.path));
    out.outside.sort();
    Ok(out)
}

fn is_manifest(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    name.ends_with(".yaml") || name.ends_with(".yml") || name == "Kustomization"
}

fn is_kustomization(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| repo::KUSTOMIZATION_FILES.contains(&n))
}

/// `a/b/../c` → `a/c`, without touching the file system (what kustomize does before it
/// resolves symlinks).
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

/// `path` relative to `dir`, with `..` where it is not under it (both absolute).
fn relative(path: &Path, dir: &Path) -> PathBuf {
    if let Ok(p) = path.strip_prefix(dir) {
        return p.to_path_buf();
    }
    let (a, b): (Vec<_>, Vec<_>) = (path.components().collect(), dir.components().collect());
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common == 0 {
        return path.to_path_buf();
    }
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &a[common..] {
        out.push(c);
    }
    out
}

/// How a kustomization reaches a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Via {
    /// `resources:` / `bases:`: built.
    Resource,
    /// `components:`: built by whoever uses the kustomization.
    Component,
    /// A patch, a generator's input, a transformer's configuration: read, not built.
    Input,
}

/// One kustomize build that includes a file: the kustomization no other one uses, the
/// chain from the kustomization that lists the file up to it, and what the chain does
/// to the file's objects.
#[derive(Clone, Debug)]
struct Build {
    root: PathBuf,
    /// Kustomization files, the one listing the file first.
    chain: Vec<PathBuf>,
    namespace: Option<String>,
    /// `namePrefix` / `nameSuffix` on the chain (`field in file: value`).
    renames: Vec<String>,
    prefix: String,
    suffix: String,
}

/// The kustomize graph of the tree, on real paths (symlinks resolved, as kustomize
/// resolves them).
#[derive(Default)]
struct Kustomize {
    /// kustomization file → what it says.
    parsed: HashMap<PathBuf, repo::Kustomization>,
    /// directory → its kustomization file.
    dirs: HashMap<PathBuf, PathBuf>,
    /// file or directory → every kustomization that names it, and how.
    refs: HashMap<PathBuf, Vec<(PathBuf, Via)>>,
}

impl Kustomize {
    fn build(files: &[Found]) -> Kustomize {
        let mut k = Kustomize::default();
        for f in files.iter().filter(|f| is_kustomization(&f.path)) {
            if k.parsed.contains_key(&f.real) {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&f.real) else {
                continue;
            };
            let Ok(parsed) = repo::kustomization(&text) else {
                continue;
            };
            let base = f.real.parent().unwrap_or(Path::new("")).to_path_buf();
            let resolve = |r: &str| {
                let p = normalize(&base.join(r));
                p.canonicalize().unwrap_or(p)
            };
            let mut named = Vec::new();
            named.extend(parsed.resources.iter().map(|r| (resolve(r), Via::Resource)));
            named.extend(
                parsed
                    .components
                    .iter()
                    .map(|r| (resolve(r), Via::Component)),
            );
            named.extend(
                parsed
                    .patches
                    .iter()
                    .filter_map(|p| p.path.as_deref())
                    .chain(parsed.inputs.iter().map(String::as_str))
                    .map(|r| (resolve(r), Via::Input)),
            );
            for (p, via) in named {
                k.refs.entry(p).or_default().push((f.real.clone(), via));
            }
            k.dirs.entry(base).or_insert_with(|| f.real.clone());
            k.parsed.insert(f.real.clone(), parsed);
        }
        k
    }

    /// How `path` is named: built (a resource), or only read (a patch, an input), or not
    /// named by any kustomization.
    fn named(&self, path: &Path) -> (bool, bool) {
        let refs = self.refs.get(path).map(Vec::as_slice).unwrap_or_default();
        (
            refs.iter().any(|(_, v)| *v == Via::Resource),
            refs.iter().any(|(_, v)| *v == Via::Input),
        )
    }

    /// The kustomizations that use the one in directory `dir` (as a resource, a base or
    /// a component).
    fn users(&self, kustomization: &Path) -> Vec<PathBuf> {
        let Some(dir) = kustomization.parent() else {
            return Vec::new();
        };
        self.refs
            .get(dir)
            .into_iter()
            .flatten()
            .filter(|(_, v)| *v != Via::Input)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Every build that includes `file`, by every path up the graph (bounded). A
    /// kustomize Component nobody uses is built by nobody.
    fn builds(&self, file: &Path) -> Vec<Build> {
        let mut out = Vec::new();
        let mut todo: Vec<Build> = self
            .refs
            .get(file)
            .into_iter()
            .flatten()
            .filter(|(_, v)| *v == Via::Resource)
            .map(|(k, _)| Build {
                root: k.clone(),
                chain: Vec::new(),
                namespace: None,
                renames: Vec::new(),
                prefix: String::new(),
                suffix: String::new(),
            })
            .collect();
        let mut steps = 0;
        while let Some(mut b) = todo.pop() {
            steps += 1;
            if steps > 10_000 || b.chain.contains(&b.root) {
                continue;
            }
            let k = b.root.clone();
            let Some(parsed) = self.parsed.get(&k) else {
                continue;
            };
            // The kustomization's own namespace wins over its components' (they are
            // applied first), which win over what came from below.
            let from = b
                .chain
                .last()
                .and_then(|c| c.parent())
                .map(Path::to_path_buf);
            let component_ns = parsed
                .components
                .iter()
                .filter_map(|c| {
                    let dir = normalize(&k.parent().unwrap_or(Path::new("")).join(c));
                    let dir = dir.canonicalize().unwrap_or(dir);
                    (Some(&dir) != from.as_ref())
                        .then(|| self.dirs.get(&dir))
                        .flatten()
                })
                .filter_map(|c| self.parsed.get(c).and_then(|p| p.namespace.clone()))
                .next_back();
            if let Some(ns) = parsed.namespace.clone().or(component_ns) {
                b.namespace = Some(ns);
            }
            for (field, value) in [
                ("namePrefix", &parsed.name_prefix),
                ("nameSuffix", &parsed.name_suffix),
            ] {
                if let Some(v) = value {
                    b.renames.push(format!("{field} {v:?} in {}", k.display()));
                    if field == "namePrefix" {
                        b.prefix = format!("{v}{}", b.prefix);
                    } else {
                        b.suffix.push_str(v);
                    }
                }
            }
            b.chain.push(k.clone());
            let users = self.users(&k);
            if users.is_empty() {
                if !parsed.component {
                    out.push(b);
                }
                continue;
            }
            for u in users {
                let mut next = b.clone();
                next.root = u;
                todo.push(next);
            }
        }
        out.sort_by(|a, b| (&a.root, &a.chain).cmp(&(&b.root, &b.chain)));
        out
    }

    /// Every kustomization `root` builds from (itself, its resources', bases' and
    /// components' kustomizations, transitively).
    fn closure(&self, root: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut todo = vec![root.to_path_buf()];
        while let Some(k) = todo.pop() {
            if out.contains(&k) || out.len() > 10_000 {
                continue;
            }
            let Some(parsed) = self.parsed.get(&k) else {
                continue;
            };
            let base = k.parent().unwrap_or(Path::new("")).to_path_buf();
            for r in parsed.resources.iter().chain(&parsed.components) {
                let p = normalize(&base.join(r));
                let p = p.canonicalize().unwrap_or(p);
                if let Some(sub) = self.dirs.get(&p) {
                    todo.push(sub.clone());
                }
            }
            out.push(k);
        }
        out.sort();
        out
    }

    /// What in the build of `root` changes `id` besides its definition: patches aimed at
    /// it, and `replacements` / `vars` that name its kind.
    fn patches_of(
        &self,
        root: &Path,
        id: &ObjectId,
        shown: impl Fn(&Path) -> String,
    ) -> Vec<String> {
        let mut out = Vec::new();
        for k in self.closure(root) {
            let Some(parsed) = self.parsed.get(&k) else {
                continue;
            };
            let base = k.parent().unwrap_or(Path::new("")).to_path_buf();
            let read = |p: &str| std::fs::read_to_string(base.join(p)).ok();
            for p in &parsed.patches {
                let body = p
                    .inline
                    .clone()
                    .or_else(|| p.path.as_deref().and_then(read));
                if repo::patch_targets(p, body.as_deref(), id) {
                    out.push(match &p.path {
                        Some(path) => format!("{} {} ({path})", shown(&k), p.field),
                        None => format!("{} {}", shown(&k), p.field),
                    });
                }
            }
            for r in &parsed.references {
                let (field, text) = match r {
                    repo::Reference::Inline { field, text } => (field, Some(text.clone())),
                    repo::Reference::File { field, path } => (field, read(path)),
                };
                // A file that cannot be read may name it: counted.
                if text.is_none_or(|t| t.contains(id.kind.as_str())) {
                    out.push(format!("{} {field}", shown(&k)));
                }
            }
        }
        out
    }
}

/// A folder a GitOps object in the tree builds on its own (see
/// [`repo::declared_builds`]).
struct Declared {
    who: String,
    dir: PathBuf,
    recurse: bool,
    /// The Components it adds to its build.
    components: Vec<PathBuf>,
}

/// The fetch URLs of the working tree's remotes (none outside Git).
fn remotes(dir: &Path) -> Vec<String> {
    git(dir, &["remote", "-v"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
        .collect()
}

/// Every Flux Kustomization and Argo CD Application among the tree's manifests, with
/// the folder it builds (relative to the top of the tree, where the GitOps tool's source
/// starts).
fn declared_builds(all: &[Found], tree: &Path, remotes: &[String]) -> Vec<Declared> {
    let mut out = Vec::new();
    for f in all {
        if is_kustomization(&f.path)
            || std::fs::metadata(&f.real).map_or(true, |m| m.len() > MAX_FILE)
        {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&f.real) else {
            continue;
        };
        if !text.contains("kustomize.toolkit.fluxcd.io") && !text.contains("argoproj.io") {
            continue;
        }
        for d in repo::documents(&text) {
            let body = &text[d.whole.clone()];
            if !body.contains("kustomize.toolkit.fluxcd.io") && !body.contains("argoproj.io") {
                continue;
            }
            let Ok(v) = serde_saphyr::from_str::<Value>(body) else {
                continue;
            };
            for b in repo::declared_builds(&v, remotes) {
                let dir = normalize(&tree.join(&b.path));
                out.push(Declared {
                    who: b.who,
                    components: b
                        .components
                        .iter()
                        .map(|c| {
                            let c = normalize(&dir.join(c));
                            c.canonicalize().unwrap_or(c)
                        })
                        .collect(),
                    dir,
                    recurse: b.recurse,
                });
            }
        }
    }
    out
}

/// A document that defines the gateway.
struct Definition {
    found: Found,
    text: String,
    doc: usize,
    builds: Vec<Build>,
    /// The builds in which it is the gateway (namespace and name).
    matched: Vec<Build>,
}

/// Find the file under `dir` that defines `id` and put `objects` (the new VPNGateway and
/// VPNPeers) in its place. In a Git working tree the file is rewritten (it must have no
/// uncommitted changes) and `git diff --stat` taken; elsewhere the rewritten file is
/// written to `beside/<gateway>.vpngateway.yaml` and DIR is left alone.
///
/// The kustomize graph of the whole working tree decides what a file is and who builds
/// it: `resources`, the legacy `bases` and `components` are built; patches and the inputs
/// of generators and transformers are not definitions. Refused when another build (a
/// second overlay, a second user of a Component, a second symlink) would change too, when
/// a patch or a replacement of the build aims at the gateway, when the build renames it,
/// and when the file is a symlink to outside the working tree. A symlink inside it is
/// kept: its target is rewritten.
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
    // The kustomize graph of the whole working tree: a base under DIR may be built by
    // overlays outside it (attack finding: `--gitops-repo repo/base` rewrote a shared
    // base).
    let tree = git(dir, &["rev-parse", "--show-toplevel"])
        .ok()
        .and_then(|t| PathBuf::from(t.trim()).canonicalize().ok())
        .unwrap_or_else(|| dir.to_path_buf());
    let walked = walk(dir, &tree)?;
    let files: Vec<Found> = walked
        .files
        .into_iter()
        .filter(|f| is_manifest(&f.path))
        .collect();
    let all: Vec<Found> = if tree.as_path() == dir {
        files.clone()
    } else {
        walk(&tree, &tree)?
            .files
            .into_iter()
            .filter(|f| is_manifest(&f.path))
            .collect()
    };
    let kustomize = Kustomize::build(&all);
    let show = |p: &Path| match relative(p, dir).display().to_string() {
        s if s.is_empty() => ".".to_string(),
        s => s,
    };
    let new_id = ObjectId::vpn_gateway(&id.namespace, &id.name);
    let mut found: Vec<Definition> = Vec::new();
    let mut already = Vec::new();
    let mut helm = Vec::new();
    let mut unreadable = Vec::new();
    let mut skipped = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for f in &files {
        if kustomize.parsed.contains_key(&f.real)
            || is_kustomization(&f.path)
            || !seen.insert(f.real.clone())
            || std::fs::metadata(&f.real)
                .map(|m| m.len() > MAX_FILE)
                .unwrap_or(true)
        {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&f.real) else {
            continue;
        };
        let rel = relative(&f.path, dir);
        let components: Vec<&str> = rel.iter().filter_map(|c| c.to_str()).collect();
        if repo::is_helm_template(&components, &text) {
            if repo::template_mentions(&text, id) {
                helm.push(rel);
            }
            continue;
        }
        // A patch or a generator's input is read by kustomize, not built: never a
        // definition (a strategic-merge patch looks like one).
        let (built, read) = kustomize.named(&f.real);
        if read && !built {
            if text.contains(id.kind.as_str()) {
                skipped.push(format!("{} (a patch or generator input)", rel.display()));
            }
            continue;
        }
        // In a kustomization's folder, a file it does not list is built by nobody.
        let unlisted = f
            .real
            .parent()
            .is_some_and(|p| kustomize.dirs.contains_key(p));
        if unlisted && !built {
            if text.contains(id.kind.as_str()) {
                skipped.push(format!(
                    "{} (not listed by the kustomization in its folder)",
                    rel.display()
                ));
            }
            continue;
        }
        let builds = kustomize.builds(&f.real);
        // Each build the file is in gives it a namespace and maybe a name prefix; a
        // file in no build keeps its own.
        let mut docs: Vec<(usize, Vec<Build>)> = Vec::new();
        let mut add = |d: usize, b: Option<&Build>| match docs.iter_mut().find(|(x, _)| *x == d) {
            Some((_, bs)) => bs.extend(b.cloned()),
            None => docs.push((d, b.cloned().into_iter().collect())),
        };
        if builds.is_empty() {
            match repo::find(&text, id, None) {
                Ok(ds) => ds.into_iter().for_each(|d| add(d, None)),
                Err(e) => unreadable.push(format!("{}: {e}", rel.display())),
            }
        }
        for b in &builds {
            let Some(name) = id
                .name
                .strip_prefix(b.prefix.as_str())
                .and_then(|n| n.strip_suffix(b.suffix.as_str()))
                .filter(|n| !n.is_empty())
            else {
                continue;
            };
            let as_built = ObjectId {
                name: name.to_string(),
                ..id.clone()
            };
            match repo::find(&text, &as_built, b.namespace.as_deref()) {
                Ok(ds) => ds.into_iter().for_each(|d| add(d, Some(b))),
                Err(e) => unreadable.push(format!("{}: {e}", rel.display())),
            }
        }
        for (doc, matched) in docs {
            found.push(Definition {
                found: f.clone(),
                text: text.clone(),
                doc,
                builds: builds.clone(),
                matched,
            });
        }
        let ns = builds.iter().find_map(|b| b.namespace.clone());
        if repo::find(&text, &new_id, ns.as_deref()).is_ok_and(|d| !d.is_empty()) {
            already.push(rel);
        }
    }
    unreadable.sort();
    unreadable.dedup();
    let helm_templates = helm.clone();
    let def = match found.len() {
        0 if !already.is_empty() => {
            return Ok(Rewrite {
                file: already.remove(0),
                link: None,
                kustomization: None,
                build: None,
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
                .filter(|f| kustomize.parsed.contains_key(&f.real))
                .count();
            let mut notes = Vec::new();
            if !unreadable.is_empty() {
                notes.push(format!("not valid YAML: {}", unreadable.join("; ")));
            }
            if !skipped.is_empty() {
                notes.push(format!("not definitions: {}", skipped.join(", ")));
            }
            if !walked.outside.is_empty() {
                notes.push(format!(
                    "symlinked folder(s) outside the working tree, not searched: {}",
                    walked
                        .outside
                        .iter()
                        .map(|p| show(p))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            return Err(RepoError::NotFound {
                dir: shown,
                id: id.to_string(),
                files: files.len() - in_dir,
                kustomizations: in_dir,
                unreadable: notes.iter().map(|n| format!("; {n}")).collect(),
            });
        }
        1 if !already.is_empty() => {
            return Err(RepoError::Both {
                dir: shown,
                id: id.to_string(),
                file: show(&found[0].found.path),
                file_new: already[0].display().to_string(),
            });
        }
        1 => found.remove(0),
        _ => {
            return Err(RepoError::Ambiguous {
                dir: shown,
                id: id.to_string(),
                places: found
                    .iter()
                    .map(|d| format!("{} (document {})", show(&d.found.path), d.doc + 1))
                    .collect(),
            });
        }
    };
    let file = def.found.real.clone();
    let link = (def.found.path != file).then(|| def.found.path.clone());
    // A symlink to outside the working tree: the file is not the repository's to change.
    if !file.starts_with(&tree) {
        return Err(RepoError::SymlinkOutside {
            dir: shown,
            id: id.to_string(),
            link: show(&def.found.path),
            target: file.display().to_string(),
            tree: tree.display().to_string(),
        });
    }
    // Every build that includes the file, and every symlink to it that kustomize does
    // not account for (a folder applied as it is): one of them only.
    let mut users: Vec<String> = Vec::new();
    for b in &def.builds {
        let r = show(&b.root);
        if !users.contains(&r) {
            users.push(r);
        }
    }
    // The file and each symlink to it in a plain folder (applied as it is); one in a
    // kustomization's folder is built only if listed, and a build above accounts for it.
    let plain: Vec<&Found> = all
        .iter()
        .filter(|f| f.real == file)
        .filter(|f| {
            f.path
                .parent()
                .and_then(|p| p.canonicalize().ok())
                .is_none_or(|p| !kustomize.dirs.contains_key(&p))
        })
        .collect();
    // What the Flux Kustomizations and Argo CD Applications of the tree build: a
    // kustomization on the file's way up that is not its top is one more build; a
    // plain folder that holds the file (or a link to it) is one.
    let mut covered: Vec<&Path> = Vec::new();
    for d in declared_builds(&all, &tree, &remotes(dir)) {
        let real = d.dir.canonicalize().unwrap_or_else(|_| d.dir.clone());
        let label = format!("the {} (path {})", d.who, show(&d.dir));
        // A Component it adds: its build is one more unless it is the file's own.
        let adds = d.components.iter().any(|c| {
            kustomize.dirs.get(c).is_some_and(|ck| {
                def.builds.iter().any(|b| b.chain.contains(ck))
                    && kustomize
                        .dirs
                        .get(&real)
                        .is_none_or(|k| !def.builds.iter().any(|b| &b.root == k))
            })
        });
        match kustomize.dirs.get(&real) {
            Some(_) if adds => users.push(label),
            Some(k) => {
                let on_chain = def.builds.iter().any(|b| b.chain.contains(k));
                let is_root = def.builds.iter().any(|b| &b.root == k);
                if on_chain && !is_root {
                    users.push(label);
                }
            }
            None if adds => users.push(label),
            None => {
                let holds = |p: &Path, top: &Path| match p.parent() {
                    Some(parent) if !d.recurse => parent == top,
                    _ => p.starts_with(top),
                };
                let inside: Vec<&Path> = plain
                    .iter()
                    .filter(|f| holds(&f.path, &d.dir) || holds(&f.real, &real))
                    .map(|f| f.path.as_path())
                    .collect();
                let root_inside = def.builds.iter().any(|b| b.root.starts_with(&real));
                let chain_inside = def
                    .builds
                    .iter()
                    .any(|b| b.chain.iter().any(|k| k.starts_with(&real)));
                if !inside.is_empty() || (chain_inside && !root_inside) {
                    users.push(label);
                    covered.extend(inside);
                }
            }
        }
    }
    for l in plain.iter().filter(|f| f.path != file) {
        if !covered.contains(&l.path.as_path()) {
            users.push(format!("{} (a symlink to it)", show(&l.path)));
        }
    }
    if users.len() > 1 {
        let component = def
            .builds
            .iter()
            .flat_map(|b| &b.chain)
            .find(|k| kustomize.parsed.get(*k).is_some_and(|p| p.component));
        return Err(RepoError::SharedBase {
            dir: shown,
            id: id.to_string(),
            file: show(&file),
            how: match component {
                Some(c) => format!(
                    "a resource of the kustomize Component {}, built by",
                    show(c.parent().unwrap_or(c))
                ),
                None if def.builds.is_empty() => "reached by".into(),
                None => "a base built by".into(),
            },
            overlays: users,
        });
    }
    if let Some(b) = def.matched.first() {
        if !b.renames.is_empty() {
            return Err(RepoError::Renamed {
                dir: shown,
                id: id.to_string(),
                file: show(&file),
                name: id
                    .name
                    .strip_prefix(b.prefix.as_str())
                    .and_then(|n| n.strip_suffix(b.suffix.as_str()))
                    .unwrap_or(&id.name)
                    .to_string(),
                renames: b
                    .renames
                    .iter()
                    .map(|r| {
                        // "namePrefix "x" in /abs/kustomization.yaml": the path shown relative.
                        match r.rsplit_once(" in ") {
                            Some((what, k)) => format!("{what} in {}", show(Path::new(k))),
                            None => r.clone(),
                        }
                    })
                    .collect(),
            });
        }
        let patches = kustomize.patches_of(&b.root, id, |p| show(p));
        if !patches.is_empty() {
            return Err(RepoError::Patched {
                dir: shown,
                id: id.to_string(),
                file: show(&file),
                build: show(&b.root),
                patches,
            });
        }
    }
    let (text, doc) = (&def.text, def.doc);
    let docs = repo::documents(text);
    let document = &docs[doc];
    let namespaced = repo::has_namespace(text, document);
    let new_text = repo::replace(text, document, &repo::render(objects, namespaced));
    let rel = relative(&file, dir);
    let (written, diff_stat) = if in_work_tree(dir) {
        let spec = file.display().to_string();
        let status = git(dir, &["status", "--porcelain", "--", &spec])?;
        if !status.trim().is_empty() && !status.starts_with("??") {
            return Err(RepoError::Dirty {
                file: file.display().to_string(),
            });
        }
        // The real file: a symlink to it stays a symlink.
        write_atomically(&file, &new_text)?;
        let stat = git(dir, &["diff", "--stat", "--", &spec])?;
        (Some(file.clone()), Some(stat))
    } else {
        let target = beside.join(format!("{}.vpngateway.yaml", id.name));
        std::fs::create_dir_all(beside).map_err(io(beside, "cannot create the directory"))?;
        write_atomically(&target, &new_text)?;
        (Some(target), None)
    };
    let nearest = def.matched.first().and_then(|b| b.chain.first().cloned());
    let root = def
        .matched
        .first()
        .map(|b| b.root.clone())
        .filter(|r| Some(r) != nearest.as_ref());
    Ok(Rewrite {
        file: rel,
        link: link.map(|l| relative(&l, dir)),
        kustomization: nearest.map(|o| relative(&o, dir)),
        build: root.map(|o| relative(&o, dir)),
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
