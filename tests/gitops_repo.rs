//! `vpnmig plan … --gitops-repo DIR` (issue 11 item 4): the file of a GitOps working tree
//! that defines the IPsecGateway gets the VPNGateway and VPNPeers in its place, every
//! other byte kept. Each test copies a tree of fixtures/gitops-repo/ into a temporary
//! directory (`git init` and one commit when it is to be a Git working tree) and plans
//! fixtures/clusters/acme.yaml (IPsecGateway tenant-acme/acme) against it. Review
//! snapshot changes with `cargo insta review`.

mod live;

use std::path::{Path, PathBuf};

use live::{Run, flat};
use vpnmig::core::repo::{ObjectId, documents, find};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A copy of `fixtures/gitops-repo/<fixture>` in a temporary directory.
struct Repo {
    tmp: tempfile::TempDir,
    fixture: &'static str,
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=vpnmig tests",
            "-c",
            "user.email=tests@vpnmig.invalid",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

impl Repo {
    fn new(fixture: &'static str, in_git: bool) -> Repo {
        let tmp = tempfile::tempdir().unwrap();
        let repo = Repo { tmp, fixture };
        copy_tree(&repo.original(""), &repo.dir());
        if in_git {
            git(&repo.dir(), &["init", "-q"]);
            git(&repo.dir(), &["add", "-A"]);
            git(&repo.dir(), &["commit", "-q", "-m", "tenants as they are"]);
        }
        repo
    }

    fn dir(&self) -> PathBuf {
        self.tmp.path().join("repo")
    }

    fn original(&self, file: &str) -> PathBuf {
        root()
            .join("fixtures/gitops-repo")
            .join(self.fixture)
            .join(file)
    }

    fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.dir().join(file)).unwrap()
    }

    /// `vpnmig plan -f …/fixtures/clusters/acme.yaml --gitops-repo repo[/sub] --out
    /// plans/acme`, run in the temporary directory (so its output names no temporary path).
    fn plan(&self, sub: &str) -> Run {
        let dir = match sub {
            "" => PathBuf::from("repo"),
            sub => Path::new("repo").join(sub),
        };
        let acme = root().join("fixtures/clusters/acme.yaml");
        let out = assert_cmd::Command::cargo_bin("vpnmig")
            .unwrap()
            .current_dir(self.tmp.path())
            .env("NO_COLOR", "1")
            .env_remove("COLUMNS")
            .args(["plan", "-f", acme.to_str().unwrap(), "--gitops-repo"])
            .arg(&dir)
            .args(["--out", "plans/acme"])
            .output()
            .unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }
}

fn acme() -> ObjectId {
    ObjectId::ipsec_gateway("tenant-acme", "acme")
}

/// The part of `after` that replaced the gateway's document in `before`, once the bytes
/// before and after that document are shown to be the same in both.
fn replaced<'a>(before: &str, after: &'a str, inherited: Option<&str>) -> &'a str {
    let doc = find(before, &acme(), inherited).unwrap();
    assert_eq!(doc.len(), 1, "the fixture defines acme once");
    let content = documents(before)[doc[0]].content.clone();
    let (head, tail) = (&before[..content.start], &before[content.end..]);
    assert!(
        after.starts_with(head),
        "the bytes before the gateway changed"
    );
    assert!(after.ends_with(tail), "the bytes after the gateway changed");
    &after[head.len()..after.len() - tail.len()]
}

#[test]
fn the_defining_file_gets_the_new_manifests_and_keeps_every_other_byte() {
    for (fixture, file, inherited) in [
        ("plain", "tenants/acme.yaml", None),
        (
            "kustomize",
            "tenants/acme/gateway.yaml",
            Some("tenant-acme"),
        ),
    ] {
        let repo = Repo::new(fixture, true);
        let before = repo.read(file);
        let r = repo.plan("");
        assert_eq!(r.code, 0, "{fixture}: {}", r.stderr);
        let after = repo.read(file);
        let new = replaced(&before, &after, inherited);
        assert!(!new.contains("IPsecGateway"), "{fixture}");
        insta::assert_snapshot!(format!("rewritten_{fixture}"), after);
        insta::assert_snapshot!(format!("stderr_{fixture}"), r.stderr);
        // Only that file changed, and nothing was committed.
        let status = git(&repo.dir(), &["status", "--porcelain"]);
        assert_eq!(status.trim(), format!("M {file}"), "{fixture}");
        // Planned again: already done, nothing changes.
        let again = repo.plan("");
        assert_eq!(again.code, 0, "{fixture}: {}", again.stderr);
        assert!(
            again.says("already defines the VPNGateway"),
            "{}",
            again.stderr
        );
        assert_eq!(repo.read(file), after, "{fixture}");
    }
}

#[test]
fn a_file_without_a_namespace_keeps_none_so_the_kustomization_still_sets_it() {
    let repo = Repo::new("kustomize", true);
    assert_eq!(repo.plan("").code, 0);
    let after = repo.read("tenants/acme/gateway.yaml");
    assert!(!after.contains("namespace:"), "{after}");
    // The plain file named it: so do the new objects (and the Service after them).
    let repo = Repo::new("plain", true);
    assert_eq!(repo.plan("").code, 0);
    assert_eq!(
        repo.read("tenants/acme.yaml")
            .matches("namespace: tenant-acme\n")
            .count(),
        3
    );
}

#[test]
fn refusals_name_what_was_searched_and_change_nothing() {
    // (fixture, sub-directory given, file changed and not committed, what the error says)
    for (fixture, sub, dirty, says) in [
        (
            "plain",
            "",
            Some("tenants/acme.yaml"),
            "tenants/acme.yaml: has uncommitted changes: the repository was not changed",
        ),
        (
            "both",
            "",
            None,
            "IPsecGateway tenant-acme/acme is defined in old.yaml, but new.yaml already defines the VPNGateway",
        ),
        (
            "helm",
            "",
            None,
            "IPsecGateway tenant-acme/acme is only in Helm template(s) charts/acme/templates/gateway.yaml: reported, not edited",
        ),
        (
            "twice",
            "",
            None,
            "is defined more than once: a/gateway.yaml (document 1), b/gateway.yaml (document 1)",
        ),
        (
            "shared",
            "",
            None,
            "IPsecGateway tenant-acme/acme is defined in base/gateway.yaml, a base built by overlays/prod/kustomization.yaml, overlays/staging/kustomization.yaml",
        ),
        (
            "shared",
            "base",
            None,
            "IPsecGateway tenant-acme/acme is defined in gateway.yaml, a base built by ../overlays/prod/kustomization.yaml, ../overlays/staging/kustomization.yaml",
        ),
        (
            "kustomize",
            "tenants/globex",
            None,
            "no file defines IPsecGateway tenant-acme/acme: searched 1 YAML file(s) (1 kustomization(s))",
        ),
    ] {
        let repo = Repo::new(fixture, true);
        if let Some(f) = dirty {
            let text = repo.read(f) + "# a change of someone's, not committed\n";
            std::fs::write(repo.dir().join(f), text).unwrap();
        }
        let before = git(&repo.dir(), &["status", "--porcelain"]);
        let r = repo.plan(sub);
        assert_eq!(r.code, 1, "{fixture}: {}", r.stderr);
        let error = r.error().unwrap_or_default();
        assert!(error.contains(says), "{fixture}: {}", r.stderr);
        assert!(r.hint().is_some(), "{fixture}: {}", r.stderr);
        assert_eq!(
            git(&repo.dir(), &["status", "--porcelain"]),
            before,
            "{fixture}"
        );
    }
}

#[test]
fn outside_git_the_rewritten_file_goes_beside_the_bundle() {
    let repo = Repo::new("plain", false);
    let r = repo.plan("");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        repo.read("tenants/acme.yaml"),
        std::fs::read_to_string(repo.original("tenants/acme.yaml")).unwrap(),
        "a tree without Git is not changed"
    );
    let beside =
        std::fs::read_to_string(repo.tmp.path().join("plans/acme.vpngateway.yaml")).unwrap();
    replaced(&repo.read("tenants/acme.yaml"), &beside, None);
    assert!(
        r.says("not in a Git working tree, so tenants/acme.yaml was left alone"),
        "{}",
        r.stderr
    );
    assert!(r.says("to plans/acme.vpngateway.yaml"), "{}", r.stderr);
}

crate::rows! {
    /// A plan against the cluster, of a gateway Argo CD manages: the gitops check says
    /// so, and the repository's file is rewritten regardless. (Nothing in the cluster
    /// changes: acme is still the IPsecGateway after.)
    live_plan_of_a_gitops_managed_gateway_rewrites_the_repository: live::bed::Row {
        scenario: || live::bed::Scenario::new(
            include_str!("../fixtures/clusters/acme-argocd.yaml"),
            vpnmig_sandbox::SettingsFile::default(),
        ),
        only: None,
        after: live::bed::After::acme("IPsecGateway"),
        steps: |b| Box::pin(live_plan_of_a_gitops_managed_gateway_rewrites_the_repository(b)),
    },
}

async fn live_plan_of_a_gitops_managed_gateway_rewrites_the_repository(b: &live::bed::Bed) {
    let repo = Repo::new("plain", true);
    let dir = repo.dir();
    let r = b
        .vpnmig(&["plan", "acme", "--gitops-repo", dir.to_str().unwrap()])
        .await;
    // The gateway is Argo CD's: the gitops check says so; the plan is made regardless.
    assert!(r.stdout.contains("gitops"), "{}: {}", b.backend, r.stdout);
    assert!(
        flat(&r.stdout).contains("field manager argocd-controller"),
        "{}: {}",
        b.backend,
        r.stdout
    );
    assert!(r.says("tenants/acme.yaml: IPsecGateway tenant-acme/acme replaced by VPNGateway/acme, VPNPeer/acme"), "{}: {}", b.backend, r.stderr);
    assert_eq!(
        git(&dir, &["status", "--porcelain"]).trim(),
        "M tenants/acme.yaml",
        "{}",
        b.backend
    );
}

// ---------------------------------------------------------------------------------------
// The kustomize graph (issue 21 item 5): layouts written by `layout()` from one row each,
// checked with the real kustomize (`kubectl kustomize`): every kustomization that is not a
// Component is built before and after the plan; only the rows' builds may change, and
// only in the gateway's documents.

/// acme's gateway without a namespace: the kustomizations give it one.
const GATEWAY: &str = include_str!("../fixtures/gitops-repo/kustomize/tenants/acme/gateway.yaml");

/// A ConfigMap, so that a build holds more than the gateway.
const SETTINGS: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: acme-settings}\ndata: {region: eu}\n";

/// A Flux Kustomization that builds overlays/prod.
const FLUX_PROD: &str = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: acme, namespace: flux-system}\nspec: {path: ./overlays/prod, sourceRef: {kind: GitRepository, name: fleet}}\n";

/// One layout: files (`@gateway` and `@settings` stand for the texts above), symlinks
/// (`link → target`, a target starting with `@outside/` is a file in a directory beside
/// the repository), the sub-directory given to `--gitops-repo`, and what must happen.
struct Layout {
    name: &'static str,
    files: &'static [(&'static str, &'static str)],
    links: &'static [(&'static str, &'static str)],
    sub: &'static str,
    outcome: Outcome,
}

enum Outcome {
    /// `file` (the real file) is rewritten; `builds` (kustomization folders) are the only
    /// builds whose output may change.
    Rewritten {
        file: &'static str,
        builds: &'static [&'static str],
        says: &'static str,
    },
    /// Refused with an error that contains `says`; nothing changes.
    Refused { says: &'static str },
}

const COMPONENT: &str =
    "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources:\n- gateway.yaml\n";

/// Write `l` into `<tmp>/repo` (and `<tmp>/outside`), `git init` and commit it.
fn layout(l: &Layout) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    for (path, text) in l.files {
        let text = text
            .replace("@gateway", GATEWAY)
            .replace("@settings", SETTINGS);
        let (root, path) = match path.strip_prefix("@outside/") {
            Some(p) => (tmp.path().join("outside"), p),
            None => (repo.clone(), *path),
        };
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    for (link, target) in l.links {
        let link = repo.join(link);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        let target = match target.strip_prefix("@outside/") {
            Some(p) => tmp.path().join("outside").join(p),
            None => PathBuf::from(target),
        };
        std::os::unix::fs::symlink(target, link).unwrap();
    }
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "as deployed"]);
    tmp
}

/// `plan -f fixtures/clusters/acme.yaml --gitops-repo repo/<sub>` in `tmp`.
fn plan_in(tmp: &Path, sub: &str) -> Run {
    let acme = root().join("fixtures/clusters/acme.yaml");
    let out = assert_cmd::Command::cargo_bin("vpnmig")
        .unwrap()
        .current_dir(tmp)
        .env("NO_COLOR", "1")
        .env_remove("COLUMNS")
        .args(["plan", "-f", acme.to_str().unwrap(), "--gitops-repo"])
        .arg(Path::new("repo").join(sub))
        .args(["--out", "plans/acme"])
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Every folder of `repo` with a kustomization file that is not a Component, relative.
fn kustomize_builds(repo: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![repo.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let ft = e.file_type().unwrap();
            let name = e.file_name().to_string_lossy().to_string();
            if ft.is_dir() && name != ".git" {
                todo.push(e.path());
            } else if ft.is_file()
                && ["kustomization.yaml", "kustomization.yml", "Kustomization"]
                    .contains(&name.as_str())
                && !std::fs::read_to_string(e.path())
                    .unwrap()
                    .contains("kind: Component")
            {
                let rel = d.strip_prefix(repo).unwrap().display().to_string();
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// `kubectl kustomize` of each folder (load restrictor off, as Flux builds), or `None`
/// when kubectl is missing.
fn build_all(repo: &Path, builds: &[String]) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for b in builds {
        let r = std::process::Command::new("kubectl")
            .args(["kustomize", "--load-restrictor", "LoadRestrictionsNone"])
            .arg(repo.join(b))
            .output();
        let r = match r {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => panic!("kubectl: {e}"),
        };
        assert!(
            r.status.success(),
            "kubectl kustomize {b}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        out.push(String::from_utf8(r.stdout).unwrap());
    }
    Some(out)
}

/// The documents of a build as (kind, namespace/name, the document).
fn objects(build: &str) -> Vec<(String, String, serde_json::Value)> {
    documents(build)
        .iter()
        .map(|d| &build[d.whole.clone()])
        .filter(|t| !t.trim().is_empty())
        .map(|t| {
            let v: serde_json::Value = serde_saphyr::from_str(t).unwrap();
            let s = |p: &str| {
                v.pointer(p)
                    .and_then(|x| x.as_str())
                    .unwrap_or_default()
                    .to_string()
            };
            (
                s("/kind"),
                format!("{}/{}", s("/metadata/namespace"), s("/metadata/name")),
                v,
            )
        })
        .collect()
}

/// `after` is `before` with IPsecGateway tenant-acme/acme replaced by VPNGateway
/// tenant-acme/acme and its VPNPeers, every other object identical. In a base below the
/// kustomization that sets the namespace, they have none.
fn only_the_gateway_changed(layout: &str, build: &str, before: &str, after: &str) {
    let acme = |n: &str, prefix: bool| {
        ["tenant-acme/acme", "/acme"]
            .iter()
            .any(|w| if prefix { n.starts_with(w) } else { n == *w })
    };
    let is_new = |(k, n, _): &&(String, String, serde_json::Value)| {
        (k == "VPNGateway" && acme(n, false)) || (k == "VPNPeer" && acme(n, true))
    };
    let is_old =
        |(k, n, _): &&(String, String, serde_json::Value)| k == "IPsecGateway" && acme(n, false);
    let (before, after) = (objects(before), objects(after));
    let old: Vec<_> = before.iter().filter(is_old).collect();
    assert_eq!(old.len(), 1, "{layout}: {build} built the old gateway once");
    let new: Vec<_> = after.iter().filter(is_new).collect();
    assert!(
        new.iter().any(|(k, _, _)| k == "VPNGateway") && new.iter().any(|(k, _, _)| k == "VPNPeer"),
        "{layout}: {build} builds the VPNGateway and VPNPeer: {new:?}"
    );
    let rest_before: Vec<_> = before.iter().filter(|o| !is_old(o)).collect();
    let rest_after: Vec<_> = after.iter().filter(|o| !is_new(o)).collect();
    assert_eq!(
        rest_before, rest_after,
        "{layout}: {build}: another object changed"
    );
}

#[test]
fn the_kustomize_graph_decides_what_is_rewritten_and_no_other_build_changes() {
    let layouts = [
        Layout {
            name: "a Component used by two overlays",
            files: &[
                ("components/vpn/kustomization.yaml", COMPONENT),
                ("components/vpn/gateway.yaml", "@gateway"),
                ("base/kustomization.yaml", "resources: [settings.yaml]\n"),
                ("base/settings.yaml", "@settings"),
                (
                    "overlays/prod/kustomization.yaml",
                    "namespace: tenant-acme\nresources: [../../base]\ncomponents: [../../components/vpn]\n",
                ),
                (
                    "overlays/staging/kustomization.yaml",
                    "namespace: tenant-acme-staging\nresources: [../../base]\ncomponents: [../../components/vpn]\n",
                ),
            ],
            links: &[],
            sub: "",
            outcome: Outcome::Refused {
                says: "is defined in components/vpn/gateway.yaml, a resource of the kustomize Component components/vpn, built by overlays/prod/kustomization.yaml, overlays/staging/kustomization.yaml",
            },
        },
        Layout {
            name: "a Component used by one overlay",
            files: &[
                ("components/vpn/kustomization.yaml", COMPONENT),
                ("components/vpn/gateway.yaml", "@gateway"),
                ("base/kustomization.yaml", "resources: [settings.yaml]\n"),
                ("base/settings.yaml", "@settings"),
                (
                    "overlays/prod/kustomization.yaml",
                    "namespace: tenant-acme\nresources: [../../base]\ncomponents: [../../components/vpn]\n",
                ),
                (
                    "overlays/staging/kustomization.yaml",
                    "namespace: tenant-acme-staging\nresources: [../../base]\n",
                ),
            ],
            links: &[],
            sub: "",
            outcome: Outcome::Rewritten {
                file: "components/vpn/gateway.yaml",
                builds: &["overlays/prod"],
                says: "components/vpn/gateway.yaml (a resource of components/vpn/kustomization.yaml; built by overlays/prod/kustomization.yaml alone)",
            },
        },
        Layout {
            name: "a legacy `bases:` shared by two overlays, planned from the base",
            files: &[
                ("base/kustomization.yaml", "resources: [gateway.yaml]\n"),
                ("base/gateway.yaml", "@gateway"),
                (
                    "overlays/prod/kustomization.yaml",
                    "namespace: tenant-acme\nbases: [../../base]\n",
                ),
                (
                    "overlays/dr/kustomization.yaml",
                    "namespace: tenant-acme\nbases: [../../base]\n",
                ),
            ],
            links: &[],
            sub: "base",
            outcome: Outcome::Refused {
                says: "is defined in gateway.yaml, a base built by ../overlays/dr/kustomization.yaml, ../overlays/prod/kustomization.yaml",
            },
        },
        Layout {
            name: "a base reached by two clusters through a nested overlay chain",
            files: &[
                ("base/kustomization.yaml", "resources: [gateway.yaml]\n"),
                ("base/gateway.yaml", "@gateway"),
                (
                    "tenants/acme/kustomization.yaml",
                    "namespace: tenant-acme\nresources: [../../base, settings.yaml]\n",
                ),
                ("tenants/acme/settings.yaml", "@settings"),
                (
                    "regions/eu/kustomization.yaml",
                    "resources: [../../tenants/acme]\n",
                ),
                (
                    "clusters/fra/kustomization.yaml",
                    "resources: [../../regions/eu]\n",
                ),
                (
                    "clusters/ams/kustomization.yaml",
                    "resources: [../../tenants/acme]\n",
                ),
            ],
            links: &[],
            sub: "",
            outcome: Outcome::Refused {
                says: "a base built by clusters/ams/kustomization.yaml, clusters/fra/kustomization.yaml",
            },
        },
        Layout {
            name: "a nested overlay chain to one cluster",
            files: &[
                ("base/kustomization.yaml", "resources: [gateway.yaml]\n"),
                ("base/gateway.yaml", "@gateway"),
                (
                    "tenants/acme/kustomization.yaml",
                    "namespace: tenant-acme\nresources: [../../base, settings.yaml]\n",
                ),
                ("tenants/acme/settings.yaml", "@settings"),
                (
                    "clusters/fra/kustomization.yaml",
                    "resources: [../../tenants/acme]\n",
                ),
            ],
            links: &[],
            sub: "",
            outcome: Outcome::Rewritten {
                file: "base/gateway.yaml",
                builds: &["base", "tenants/acme", "clusters/fra"],
                says: "base/gateway.yaml (a resource of base/kustomization.yaml; built by clusters/fra/kustomization.yaml alone)",
            },
        },
        Layout {
            name: "a strategic-merge patch file aimed at the gateway (`patches:`)",
            files: &[
                (
                    "tenants/acme/kustomization.yaml",
                    "namespace: tenant-acme\nresources: [gateway.yaml]\npatches:\n- path: fip.yaml\n",
                ),
                ("tenants/acme/gateway.yaml", "@gateway"),
                (
                    "tenants/acme/fip.yaml",
                    "apiVersion: ipsec.bnerd.net/v1alpha1\nkind: IPsecGateway\nmetadata: {name: acme}\nspec: {endpoint: {network: public}}\n",
                ),
            ],
            links: &[],
            sub: "",
            outcome: Outcome::Refused {
                says: "and the build tenants/acme/kustomization.yaml also changes it with tenants/acme/kustomization.yaml patches[0] (fip.yaml)",
            },
        },
        Layout {
            name: "an inline `patchesStrategicMerge` in the overlay above",
            files: &[
                (
                    "tenants/acme/kustomization.yaml",
                    "resources: [gateway.yaml]\n",
                ),
                ("tenants/acme/gateway.yaml", "@gateway"),
                (
                    "clusters/prod/kustomization.yaml",
                    "namespace: tenant-acme\nresources: [../../tenants/acme]\npatchesStrategicMerge:\n- |-\n  apiVersion: ipsec.bnerd.net/v1alpha1\n  kind: IPsecGateway\n  metadata: {name: acme}\n  spec: {endpoint: {network: public}}\n",
                ),
            ],
            links: &[],
            sub: "",
            outcome: Outcome::Refused {
                says: "also changes it with clusters/prod/kustomization.yaml patchesStrategicMerge[0]",
            },
        },
        Layout {
            name: "a `patchesJson6902` target and a regex `patches` target",
            files: &[
                (
                    "tenants/acme/kustomization.yaml",
                    "namespace: tenant-acme\nresources: [gateway.yaml]\npatchesJson6902:\n- target: {group: ipsec.bnerd.net, version: v1alpha1, kind: IPsecGateway, name: acme}\n  path: ike.json\npatches:\n- target: {kind: 'IPsec.*', name: 'ac.*'}\n  patch: '[{\"op\": \"add\", \"path\": \"/metadata/labels/tier\", \"value\": \"gold\"}]'\n",
                ),
                ("tenants/acme/gateway.yaml", "@gateway"),
                (
                    "tenants/acme/ike.json",
                    "[{\"op\": \"replace\", \"path\": \"/spec/ike/lifetime\", \"value\": \"24h\"}]\n",
                ),
            ],
            links: &[],
            sub: "",
            outcome: Outcome::Refused {
                says: "tenants/acme/kustomization.yaml patches[0], tenants/acme/kustomization.yaml patchesJson6902[0] (ike.json)",
            },
        },
        Layout {
            name: "a patch aimed at another kind, and a generator whose input holds an old copy",
            files: &[
                (
                    "tenants/acme/kustomization.yaml",
                    "namespace: tenant-acme\nresources: [gateway.yaml, settings.yaml]\npatches:\n- target: {kind: ConfigMap, name: acme-settings}\n  patch: '[{\"op\": \"add\", \"path\": \"/data/tier\", \"value\": \"gold\"}]'\nconfigMapGenerator:\n- name: acme-archive\n  files: [old-gateway.yaml=archive/gateway.yaml]\n",
                ),
                ("tenants/acme/gateway.yaml", "@gateway"),
                ("tenants/acme/settings.yaml", "@settings"),
                ("tenants/acme/archive/gateway.yaml", "@gateway"),
            ],
            links: &[],
            sub: "",
            outcome: Outcome::Rewritten {
                file: "tenants/acme/gateway.yaml",
                builds: &["tenants/acme"],
                says: "tenants/acme/gateway.yaml (a resource of tenants/acme/kustomization.yaml)",
            },
        },
        Layout {
            name: "a `replacements` entry that reads the gateway",
            files: &[
                (
                    "tenants/acme/kustomization.yaml",
                    "namespace: tenant-acme\nresources: [gateway.yaml, settings.yaml]\nreplacements:\n- source: {kind: IPsecGateway, name: acme, fieldPath: spec.endpoint.floatingIP}\n  targets:\n  - select: {kind: ConfigMap, name: acme-settings}\n    fieldPaths: [data.region]\n",
                ),
                ("tenants/acme/gateway.yaml", "@gateway"),
                ("tenants/acme/settings.yaml", "@settings"),
            ],
            links: &[],
            sub: "",
            outcome: Outcome::Refused {
                says: "also changes it with tenants/acme/kustomization.yaml replacements[0]",
            },
        },
        Layout {
            name: "a name prefix on the chain",
            files: &[
                (
                    "tenants/acme/kustomization.yaml",
                    "namespace: tenant-acme\nnamePrefix: ac\nresources: [gateway.yaml]\n",
                ),
                (
                    "tenants/acme/gateway.yaml",
                    "apiVersion: ipsec.bnerd.net/v1alpha1\nkind: IPsecGateway\nmetadata: {name: me}\nspec: {endpoint: {floatingIP: 198.51.100.23}}\n",
                ),
            ],
            links: &[],
            sub: "",
            outcome: Outcome::Refused {
                says: "is defined in tenants/acme/gateway.yaml as me, renamed by namePrefix \"ac\" in tenants/acme/kustomization.yaml",
            },
        },
        Layout {
            name: "a symlinked defining file, its target inside the tree",
            files: &[
                ("shared/acme-gateway.yaml", "@gateway"),
                (
                    "tenants/acme/kustomization.yaml",
                    "namespace: tenant-acme\nresources: [gateway.yaml]\n",
                ),
            ],
            links: &[(
                "tenants/acme/gateway.yaml",
                "../../shared/acme-gateway.yaml",
            )],
            sub: "tenants",
            outcome: Outcome::Rewritten {
                file: "shared/acme-gateway.yaml",
                builds: &["tenants/acme"],
                says: "../shared/acme-gateway.yaml (the target of the symlink acme/gateway.yaml, which is kept; a resource of acme/kustomization.yaml)",
            },
        },
        Layout {
            name: "one file symlinked into two tenants' plain folders",
            files: &[("shared/acme-gateway.yaml", "@gateway")],
            links: &[
                ("clusters/prod/acme.yaml", "../../shared/acme-gateway.yaml"),
                ("clusters/dr/acme.yaml", "../../shared/acme-gateway.yaml"),
            ],
            sub: "clusters/prod",
            outcome: Outcome::Refused {
                says: "reached by ../dr/acme.yaml (a symlink to it), acme.yaml (a symlink to it)",
            },
        },
        Layout {
            name: "a symlinked defining file, its target outside the tree",
            files: &[
                ("@outside/acme.yaml", "@gateway"),
                (
                    "tenants/acme/kustomization.yaml",
                    "namespace: tenant-acme\nresources: [gateway.yaml]\n",
                ),
            ],
            links: &[("tenants/acme/gateway.yaml", "@outside/acme.yaml")],
            sub: "",
            outcome: Outcome::Refused {
                says: "is defined in tenants/acme/gateway.yaml, a symlink to",
            },
        },
        Layout {
            name: "a symlinked folder outside the tree",
            files: &[
                (
                    "@outside/acme/kustomization.yaml",
                    "namespace: tenant-acme\nresources: [gateway.yaml]\n",
                ),
                ("@outside/acme/gateway.yaml", "@gateway"),
                (
                    "clusters/prod/kustomization.yaml",
                    "resources: [../../tenants/acme]\n",
                ),
            ],
            links: &[("tenants/acme", "@outside/acme")],
            sub: "",
            outcome: Outcome::Refused {
                says: "symlinked folder(s) outside the working tree, not searched: tenants/acme",
            },
        },
        Layout {
            name: "a file its folder's kustomization does not list, beside the one it does",
            files: &[
                (
                    "tenants/acme/kustomization.yaml",
                    "namespace: tenant-acme\nresources: [gateway.yaml]\n",
                ),
                ("tenants/acme/gateway.yaml", "@gateway"),
                ("tenants/acme/gateway-old.yaml", "@gateway"),
            ],
            links: &[],
            sub: "",
            outcome: Outcome::Rewritten {
                file: "tenants/acme/gateway.yaml",
                builds: &["tenants/acme"],
                says: "tenants/acme/gateway.yaml (a resource of tenants/acme/kustomization.yaml)",
            },
        },
        Layout {
            name: "only a file its folder's kustomization does not list",
            files: &[
                (
                    "tenants/acme/kustomization.yaml",
                    "namespace: tenant-acme\nresources: [settings.yaml]\n",
                ),
                ("tenants/acme/settings.yaml", "@settings"),
                ("tenants/acme/gateway.yaml", "@gateway"),
            ],
            links: &[],
            sub: "",
            outcome: Outcome::Refused {
                says: "not definitions: tenants/acme/gateway.yaml (not listed by the kustomization in its folder)",
            },
        },
        Layout {
            name: "a symlinked folder built by one cluster",
            files: &[
                (
                    "tenants/acme/kustomization.yaml",
                    "namespace: tenant-acme\nresources: [gateway.yaml]\n",
                ),
                ("tenants/acme/gateway.yaml", "@gateway"),
                ("clusters/prod/kustomization.yaml", "resources: [acme]\n"),
            ],
            links: &[("clusters/prod/acme", "../../tenants/acme")],
            sub: "",
            outcome: Outcome::Rewritten {
                file: "tenants/acme/gateway.yaml",
                builds: &["tenants/acme", "clusters/prod"],
                says: "built by clusters/prod/kustomization.yaml alone",
            },
        },
        Layout {
            name: "a symlinked folder built by two clusters",
            files: &[
                (
                    "tenants/acme/kustomization.yaml",
                    "namespace: tenant-acme\nresources: [gateway.yaml]\n",
                ),
                ("tenants/acme/gateway.yaml", "@gateway"),
                ("clusters/prod/kustomization.yaml", "resources: [acme]\n"),
                ("clusters/dr/kustomization.yaml", "resources: [acme]\n"),
            ],
            links: &[
                ("clusters/prod/acme", "../../tenants/acme"),
                ("clusters/dr/acme", "../../tenants/acme"),
            ],
            sub: "clusters/prod",
            outcome: Outcome::Refused {
                says: "a base built by ../dr/kustomization.yaml, kustomization.yaml",
            },
        },
        Layout {
            name: "a Flux Kustomization that builds the base as well as the overlay",
            files: &[
                ("base/kustomization.yaml", "resources: [gateway.yaml]\n"),
                ("base/gateway.yaml", "@gateway"),
                (
                    "overlays/prod/kustomization.yaml",
                    "namespace: tenant-acme\nresources: [../../base]\n",
                ),
                ("clusters/prod/flux.yaml", FLUX_PROD),
                (
                    "clusters/prod/flux-base.yaml",
                    "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: acme-base, namespace: flux-system}\nspec: {path: ./base, targetNamespace: tenant-acme, sourceRef: {kind: GitRepository, name: fleet}}\n",
                ),
            ],
            links: &[],
            sub: "",
            outcome: Outcome::Refused {
                says: "a base built by overlays/prod/kustomization.yaml, the Flux Kustomization flux-system/acme-base (path base)",
            },
        },
        Layout {
            name: "a Flux Kustomization that builds the overlay alone",
            files: &[
                ("base/kustomization.yaml", "resources: [gateway.yaml]\n"),
                ("base/gateway.yaml", "@gateway"),
                (
                    "overlays/prod/kustomization.yaml",
                    "namespace: tenant-acme\nresources: [../../base]\n",
                ),
                ("clusters/prod/flux.yaml", FLUX_PROD),
            ],
            links: &[],
            sub: "",
            outcome: Outcome::Rewritten {
                file: "base/gateway.yaml",
                builds: &["base", "overlays/prod"],
                says: "built by overlays/prod/kustomization.yaml alone",
            },
        },
        Layout {
            name: "a Component one overlay lists and a Flux Kustomization adds to another",
            files: &[
                ("components/vpn/kustomization.yaml", COMPONENT),
                ("components/vpn/gateway.yaml", "@gateway"),
                (
                    "overlays/prod/kustomization.yaml",
                    "namespace: tenant-acme\nresources: [settings.yaml]\ncomponents: [../../components/vpn]\n",
                ),
                ("overlays/prod/settings.yaml", "@settings"),
                (
                    "overlays/staging/kustomization.yaml",
                    "namespace: tenant-acme-staging\nresources: [settings.yaml]\n",
                ),
                ("overlays/staging/settings.yaml", "@settings"),
                (
                    "clusters/staging/flux.yaml",
                    "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: staging, namespace: flux-system}\nspec: {path: ./overlays/staging, components: [../../components/vpn], sourceRef: {kind: GitRepository, name: fleet}}\n",
                ),
            ],
            links: &[],
            sub: "",
            outcome: Outcome::Refused {
                says: "a resource of the kustomize Component components/vpn, built by overlays/prod/kustomization.yaml, the Flux Kustomization flux-system/staging (path overlays/staging)",
            },
        },
        Layout {
            name: "two Argo CD Applications, one recursing into the other's folder",
            files: &[
                ("apps/acme/gateway.yaml", "@gateway"),
                (
                    "argocd/all.yaml",
                    "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: all, namespace: argocd}\nspec:\n  source: {repoURL: 'https://git.example.org/fleet.git', path: apps, directory: {recurse: true}}\n",
                ),
                (
                    "argocd/acme.yaml",
                    "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: acme, namespace: argocd}\nspec:\n  source: {repoURL: 'https://git.example.org/fleet.git', path: apps/acme}\n",
                ),
            ],
            links: &[],
            sub: "apps",
            outcome: Outcome::Refused {
                says: "reached by the Argo CD Application argocd/acme (path acme), the Argo CD Application argocd/all (path .)",
            },
        },
        Layout {
            name: "an Argo CD Application on the parent folder, not recursing",
            files: &[
                ("apps/acme/gateway.yaml", "@gateway"),
                (
                    "argocd/all.yaml",
                    "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: all, namespace: argocd}\nspec:\n  source: {repoURL: 'https://git.example.org/fleet.git', path: apps}\n",
                ),
                (
                    "argocd/acme.yaml",
                    "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: acme, namespace: argocd}\nspec:\n  source: {repoURL: 'https://git.example.org/fleet.git', path: apps/acme}\n",
                ),
            ],
            links: &[],
            sub: "",
            outcome: Outcome::Rewritten {
                file: "apps/acme/gateway.yaml",
                builds: &[],
                says: "apps/acme/gateway.yaml: IPsecGateway tenant-acme/acme replaced by",
            },
        },
        Layout {
            name: "kustomization.yml and Kustomization file names",
            files: &[
                (
                    "tenants/acme/kustomization.yml",
                    "namespace: tenant-acme\nresources: [gateway.yaml]\n",
                ),
                ("tenants/acme/gateway.yaml", "@gateway"),
                (
                    "clusters/prod/Kustomization",
                    "resources: [../../tenants/acme]\n",
                ),
            ],
            links: &[],
            sub: "",
            outcome: Outcome::Rewritten {
                file: "tenants/acme/gateway.yaml",
                builds: &["tenants/acme", "clusters/prod"],
                says: "tenants/acme/gateway.yaml (a resource of tenants/acme/kustomization.yml; built by clusters/prod/Kustomization alone)",
            },
        },
        Layout {
            name: "a Kustomization file name shared by two clusters",
            files: &[
                (
                    "tenants/acme/Kustomization",
                    "namespace: tenant-acme\nresources: [gateway.yaml]\n",
                ),
                ("tenants/acme/gateway.yaml", "@gateway"),
                (
                    "clusters/prod/kustomization.yml",
                    "resources: [../../tenants/acme]\n",
                ),
                (
                    "clusters/dr/Kustomization",
                    "resources: [../../tenants/acme]\n",
                ),
            ],
            links: &[],
            sub: "tenants/acme",
            outcome: Outcome::Refused {
                says: "a base built by ../../clusters/dr/Kustomization, ../../clusters/prod/kustomization.yml",
            },
        },
    ];
    let mut not_compared = Vec::new();
    for l in &layouts {
        let name = l.name;
        let tmp = layout(l);
        let repo = tmp.path().join("repo");
        let folders = kustomize_builds(&repo);
        let before = build_all(&repo, &folders);
        let outside_before = std::fs::read_to_string(tmp.path().join("outside/acme.yaml")).ok();
        let r = plan_in(tmp.path(), l.sub);
        let after = build_all(&repo, &folders);
        let status = git(&repo, &["status", "--porcelain"]);
        match &l.outcome {
            Outcome::Refused { says } => {
                assert_eq!(r.code, 1, "{name}: {}", r.stderr);
                let error = r.error().unwrap_or_default();
                assert!(error.contains(says), "{name}: {}", r.stderr);
                assert!(r.hint().is_some(), "{name}: {}", r.stderr);
                assert_eq!(status, "", "{name}: the repository changed");
                assert_eq!(
                    std::fs::read_to_string(tmp.path().join("outside/acme.yaml")).ok(),
                    outside_before,
                    "{name}"
                );
                assert_eq!(before, after, "{name}: a build changed");
            }
            Outcome::Rewritten { file, builds, says } => {
                assert_eq!(r.code, 0, "{name}: {}", r.stderr);
                assert!(r.says(says), "{name}: {}", r.stderr);
                assert_eq!(
                    status.trim(),
                    format!("M {file}"),
                    "{name}: only {file} changed"
                );
                // Every symlink stays a symlink to the same target.
                for (link, target) in l.links {
                    assert_eq!(
                        std::fs::read_link(repo.join(link)).unwrap(),
                        PathBuf::from(target),
                        "{name}: {link}"
                    );
                }
                if let (Some(before), Some(after)) = (&before, &after) {
                    for ((folder, b), a) in folders.iter().zip(before).zip(after) {
                        if builds.contains(&folder.as_str()) {
                            only_the_gateway_changed(name, folder, b, a);
                        } else {
                            assert_eq!(b, a, "{name}: the build of {folder} changed");
                        }
                    }
                }
            }
        }
        if before.is_none() {
            not_compared.push(name);
        }
    }
    if !not_compared.is_empty() {
        eprintln!(
            "NOT RUN: kubectl is not on PATH, so `kubectl kustomize` did not compare the builds before and after for: {}",
            not_compared.join("; ")
        );
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have kubectl: the kustomize build comparison did not run"
        );
    }
}
