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
            "IPsecGateway tenant-acme/acme is defined in gateway.yaml, a base built by overlays/prod/kustomization.yaml, overlays/staging/kustomization.yaml",
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

#[tokio::test(flavor = "multi_thread")]
async fn live_plan_of_a_gitops_managed_gateway_rewrites_the_repository() {
    let scenario =
        std::fs::read_to_string(root().join("fixtures/clusters/acme-argocd.yaml")).unwrap();
    let l = live::start(&scenario, vpnmig_sandbox::SettingsFile::default()).await;
    let repo = Repo::new("plain", true);
    let dir = repo.dir();
    let r = l
        .vpnmig(&["plan", "acme", "--gitops-repo", dir.to_str().unwrap()])
        .await;
    // The gateway is Argo CD's: the gitops check says so; the plan is made regardless.
    assert!(r.stdout.contains("gitops"), "{}", r.stdout);
    assert!(
        flat(&r.stdout).contains("field manager argocd-controller"),
        "{}",
        r.stdout
    );
    assert!(r.says("tenants/acme.yaml: IPsecGateway tenant-acme/acme replaced by VPNGateway/acme, VPNPeer/acme"), "{}", r.stderr);
    assert_eq!(
        git(&dir, &["status", "--porcelain"]).trim(),
        "M tenants/acme.yaml"
    );
}
