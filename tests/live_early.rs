//! A repository change merged early (the C09/C10 kind), end to end on both control planes
//! (tests/live/bed.rs): a window stopped at journal phase `started` (nothing deleted), its
//! owner syncing again (a parent re-armed it, or someone did), and the change merged: the
//! owner's sync prunes the IPsecGateway and applies the VPNGateway and VPNPeer itself.
//!
//! From there each row follows vpnmig literally, starting where the attack started
//! (`vpnmig rollback`): every `kubectl patch`/`kubectl delete` a stop quotes, then the
//! first `vpnmig cutover|rollback` it advises that was not run yet, at most 6 steps. It
//! must end done (the cutover adopts what the owner applied, every pinned value equal to
//! the plan's) — or, where the merged source differs from the plan in a pinned value, in
//! a refusal naming the object, the field, both values and that the source must be fixed.
//! No step may delete the VPNPeer while no IPsecGateway exists, and the PSK Secret keeps
//! its key throughout. On the code before it, the rollback's advice looped (`--gitops
//! pause`, then `kubectl delete vpnpeer …` or `--delete-extra-peers`) and deleted the
//! client's only VPNPeer.
//!
//! | row | owner | parent |
//! |---|---|---|
//! | flux_parent | Kustomization acme | Kustomization verbund |
//! | argo_parent | Application acme | Application wurzel (app-of-apps) |
//! | flux_alone | Kustomization acme | none (re-enabled by a person) |
//! | argo_alone | Application acme | none (re-enabled by a person) |
//! | flux_parent_differs | as flux_parent, the merged VPNPeer's remoteSubnets differ | |
//! | argo_alone_differs | as argo_alone, the same | |
//! | flux_alone_reverse_exposure | as flux_alone, the merged VPNGateway adds reverseExposures (refused) | |
//! | argo_alone_claimed | as argo_alone, a VPNGateway in another namespace claims the floating IP (refused, adopted once deleted) | |
//! | argo_parent_renamed | as argo_parent, merged as VPNGateway acme-neu (a21p E10): refused naming it, fixed, done | |
//! | argo_parent_moved | as argo_parent, merged into namespace acme-vpn (a21q Q04): status ties the stand-in to the window and names where the key is live | |
//! | flux_alone_renamed_unannotated | as flux_alone, merged as vpn-acme without the migrated-from annotation | |
//! | argo_no_window | Application acme, the rewrite merged before any window (a21p E16): refused, nothing deleted | none |
//! | flux_parent_no_window | Kustomization acme under verbund, the same | |
//! | argo_no_window_renamed | as argo_no_window, merged as acme-neu (a21q Q12): the bundle's rollback names the stand-in | none |
//! | flux_parent_no_window_renamed | as flux_parent_no_window, merged as vpn-acme | none |
//! | by_hand_no_window | no GitOps: the bundle's objects applied by hand before any window | none |
//! | rollback_pause_parent | Kustomization acme under verbund, after done: `rollback --gitops pause` stops on the active parent, before any delete; followed: rolled back |
//! | flux_hand_apply_as_the_controller | as flux_parent, nothing merged: the objects applied by hand as kustomize-controller, adopted but never recorded as the merge (a21o D04) |
//! | flux_merge_by_another_owner | as flux_parent, the merge moves the new objects to Kustomization acme-neu: credited to it, the owner their markers name (a21o D14) |

mod live;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use live::bed::{
    self, APPLICATION, Bed, CONFIGMAP, IPSECGATEWAY, KUSTOMIZATION, Kind, NAMESPACE, SECRET,
    Scenario, VPNGATEWAY, VPNPEER,
};
use serde_json::{Value, json};

const NS: &str = "tenant-acme";
const ARGO: &str = include_str!("../fixtures/clusters/acme-argocd.yaml");
const FLUX: &str = include_str!("../fixtures/clusters/acme-flux.yaml");

/// The acme Application as its parent's source defines it.
const ACME_APP: &str = "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: acme
  namespace: argocd
spec:
  project: default
  source:
    repoURL: https://git.example.net/platform/tenants.git
    path: tenants/acme
    targetRevision: main
  destination:
    server: https://kubernetes.default.svc
    namespace: tenant-acme
  syncPolicy:
    automated:
      selfHeal: true
      prune: true
";

/// The acme Kustomization as its parent's source defines it (`suspend: false`).
const ACME_KS: &str = "apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: acme
  namespace: flux-system
spec:
  interval: 10m
  path: ./tenants/acme
  prune: true
  suspend: false
  sourceRef:
    kind: GitRepository
    name: platform
  targetNamespace: tenant-acme
";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Tool {
    Flux,
    Argo,
}

impl Tool {
    fn kind(self) -> Kind {
        match self {
            Tool::Flux => KUSTOMIZATION,
            Tool::Argo => APPLICATION,
        }
    }
    fn ns(self) -> &'static str {
        match self {
            Tool::Flux => "flux-system",
            Tool::Argo => "argocd",
        }
    }
    async fn suspended(self, b: &Bed, name: &str) -> bool {
        let o = b
            .get(self.kind(), self.ns(), name)
            .await
            .expect("the owner");
        match self {
            Tool::Argo => o["spec"]["syncPolicy"]["automated"].is_null(),
            Tool::Flux => o["spec"]["suspend"] == true,
        }
    }
    /// Re-enable `name` as a person does (`flux resume`, `argocd app set … automated`).
    async fn resume(self, b: &Bed, name: &str) {
        b.edit(self.kind(), self.ns(), name, |o| match self {
            Tool::Argo => {
                o["spec"]["syncPolicy"]["automated"] = json!({"selfHeal": true, "prune": true})
            }
            Tool::Flux => o["spec"]["suspend"] = Value::Bool(false),
        })
        .await;
    }
}

/// `acme`'s cluster for `tool`, with a parent level `parent` (same tool) whose source
/// holds the acme owner (its sync puts the owner's policy back).
fn scenario(tool: Tool, parent: Option<&str>) -> Scenario {
    let mut s = live::pool("10.250.3.0/24");
    s.gitops.self_heal_delay_ms = 200;
    let base = match tool {
        Tool::Flux => FLUX,
        Tool::Argo => ARGO,
    };
    let Some(p) = parent else {
        return Scenario::new(base, s);
    };
    let (live_def, child) = match tool {
        Tool::Flux => (
            format!(
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {p}\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./{p}\n  prune: false\n  sourceRef: {{kind: GitRepository, name: platform}}\n"
            ),
            ACME_KS,
        ),
        Tool::Argo => (
            format!(
                "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {p}\n  namespace: argocd\nspec:\n  project: default\n  source: {{repoURL: 'https://git.example.net/platform/{p}.git', path: {p}}}\n  destination: {{server: 'https://kubernetes.default.svc', namespace: argocd}}\n  syncPolicy:\n    automated: {{selfHeal: true}}\n"
            ),
            ACME_APP,
        ),
    };
    let indented: String = child.lines().map(|l| format!("    {l}\n")).collect();
    Scenario::built(
        format!(
            "{base}\n---\n{}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {p}-source\n  namespace: {}\ndata:\n  manifests: |\n{indented}",
            live_def.trim_end(),
            tool.ns()
        ),
        s,
    )
}

/// kubectl, as a person runs it: the control plane's build, else the one on the PATH.
fn kubectl_bin() -> std::path::PathBuf {
    vpnmig_sandbox::controlplane::built()
        .map(|d| d.join("kubectl"))
        .unwrap_or_else(|_| "kubectl".into())
}

/// Run `command` (a shell command line, as a hint prints it) with the bed's kubeconfig;
/// bounded to 60 s. Panics when it fails.
async fn shell(b: &Bed, command: &str) {
    let bin = kubectl_bin();
    let path = format!(
        "{}:{}",
        bin.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = std::process::Command::new("sh");
    c.args(["-c", command])
        .env("KUBECONFIG", &b.kubeconfig)
        .env("PATH", path);
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || c.output().unwrap()),
    )
    .await
    .unwrap_or_else(|_| panic!("`{command}` ran for more than 60 s"))
    .unwrap();
    assert!(
        out.status.success(),
        "`{command}` on the {}: {}",
        b.backend,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Everything a stop says from its `hint:` on (empty when it has none).
fn hint_of(r: &live::Run) -> String {
    r.stderr
        .find("\nhint: ")
        .map(|at| r.stderr[at + 7..].to_string())
        .unwrap_or_default()
}

/// The source of the acme owner, planned with `--gitops-repo`: the rewrite (the merge).
async fn plan_rewrite(b: &Bed, tool: Tool) -> String {
    bed::eventually(30, "the controller applies the IPsecGateway", || async {
        b.get(IPSECGATEWAY, NS, "acme").await.is_some()
    })
    .await;
    let source = b.get(CONFIGMAP, tool.ns(), "acme-source").await.unwrap()["data"]["manifests"]
        .as_str()
        .unwrap()
        .to_string();
    let repo = live::repo_in(b.cwd(), &source);
    b.step(
        &[
            "plan",
            "acme",
            "-n",
            NS,
            "--out",
            "plans/acme",
            "--gitops-repo",
            repo.to_str().unwrap(),
        ],
        4,
        &[],
    )
    .await;
    let rewritten = std::fs::read_to_string(repo.join("tenants/acme.yaml")).unwrap();
    assert!(!rewritten.contains("kind: IPsecGateway"), "{rewritten}");
    assert!(rewritten.contains("kind: VPNPeer"), "{rewritten}");
    rewritten
}

/// The window stopped at `started` with nothing deleted and the owner syncing: a parent
/// re-armed it (`parent`), or, without one, a person re-enabled it while the pause was
/// read back.
async fn stopped_at_started(b: &Bed, tool: Tool, parent: bool) {
    let on = b.backend;
    let cut = ["cutover", "acme", "-n", NS, "--gitops", "pause", "--yes"];
    if parent {
        b.step(&cut, 7, &["no gateway was deleted"]).await;
    } else {
        let stop = Arc::new(AtomicBool::new(false));
        let r = {
            let toggler = async {
                while !stop.load(Ordering::Relaxed) {
                    if tool.suspended(b, "acme").await {
                        tool.resume(b, "acme").await;
                    }
                    tokio::time::sleep(Duration::from_millis(40)).await;
                }
            };
            let run = async {
                let r = b.vpnmig(&cut).await;
                stop.store(true, Ordering::Relaxed);
                r
            };
            tokio::join!(toggler, run).1
        };
        assert_eq!(r.code, 7, "{on}: {}", r.stderr);
        assert!(r.says("no gateway was deleted"), "{on}: {}", r.stderr);
    }
    assert_eq!(
        b.phase(NS, "acme").await.as_deref(),
        Some("started"),
        "{on}"
    );
    assert!(b.get(IPSECGATEWAY, NS, "acme").await.is_some(), "{on}");
}

/// Merge `manifests`: the owner (syncing) prunes the IPsecGateway and applies the new
/// objects itself.
async fn merge(b: &Bed, tool: Tool, manifests: &str) {
    merge_as(b, tool, manifests, "acme").await
}

/// [`merge`] of a source whose VPNGateway is named `gateway`: the owner prunes the
/// IPsecGateway (and any other VPNGateway its source no longer defines) and applies the
/// new objects; the floating IP is on `gateway` after.
async fn merge_as(b: &Bed, tool: Tool, manifests: &str, gateway: &str) {
    b.edit(CONFIGMAP, tool.ns(), "acme-source", |o| {
        o["data"]["manifests"] = json!(manifests)
    })
    .await;
    b.gitops.kick();
    bed::eventually(
        40,
        "the owner prunes the IPsecGateway and applies the VPNGateway and VPNPeer",
        || async {
            b.get(IPSECGATEWAY, NS, "acme").await.is_none()
                && b.objects(VPNGATEWAY, NS).await.len() == 1
                && b.get(VPNGATEWAY, NS, gateway).await.is_some()
                && b.get(VPNPEER, NS, "acme").await.is_some()
        },
    )
    .await;
    fip_on(b, gateway).await;
}

/// Wait until the operator associated acme's floating IP with VPNGateway `gateway`.
async fn fip_on(b: &Bed, gateway: &str) {
    let want = format!("VPNGateway {NS}/{gateway}");
    bed::eventually(40, &format!("198.51.100.23 on {want}"), || async {
        b.operator.floating_ips().associated.get("198.51.100.23") == Some(&want)
    })
    .await;
}

/// `rewritten` with its VPNGateway named `to` and every VPNPeer's gatewayRef naming it
/// (a21p E10); without vpnmig's migrated-from annotation on the VPNGateway unless
/// `annotated`.
fn renamed(rewritten: &str, to: &str, annotated: bool) -> String {
    let docs: Vec<String> = rewritten
        .split("\n---")
        .filter(|d| !d.trim().is_empty())
        .map(|d| {
            let mut o: Value = serde_saphyr::from_str(d).unwrap();
            match o["kind"].as_str() {
                Some("VPNGateway") => {
                    o["metadata"]["name"] = json!(to);
                    if !annotated {
                        let a = o["metadata"]["annotations"].as_object_mut().unwrap();
                        assert!(a.remove("vpnmig.bnerd.net/migrated-from").is_some(), "{o}");
                    }
                }
                Some("VPNPeer") => o["spec"]["gatewayRef"]["name"] = json!(to),
                _ => {}
            }
            serde_json::to_string(&o).unwrap()
        })
        .collect();
    assert!(docs.iter().any(|d| d.contains(to)), "{rewritten}");
    docs.join("\n---\n")
}

/// The first advised `vpnmig cutover|rollback …` of `hint` not run yet.
fn next_command(hint: &str, tried: &[String]) -> Option<Vec<String>> {
    live::advised(hint).into_iter().find(|args| {
        matches!(
            args.first().map(String::as_str),
            Some("cutover" | "rollback")
        ) && !tried.contains(&args.join(" "))
    })
}

/// Follow vpnmig from `rollback` (at most 6 steps): each stop's `kubectl patch`/`kubectl
/// delete` commands, then its first untried `vpnmig cutover|rollback`. After every step
/// the VPNPeer exists while no IPsecGateway does, and the PSK Secret keeps its key.
/// Returns the last run (exit 0, or a refusal naming no untried command) and the commands.
async fn follow(b: &Bed, psk: &str) -> (live::Run, Vec<String>) {
    let on = b.backend;
    let mut args: Vec<String> = ["rollback", "acme", "-n", NS, "--yes"]
        .map(String::from)
        .to_vec();
    let mut tried = Vec::new();
    for _ in 0..6 {
        let r = b.run_advised(&args, &["--yes"]).await;
        tried.push(args.join(" "));
        let old = b.get(IPSECGATEWAY, NS, "acme").await;
        assert!(
            old.is_some() || b.get(VPNPEER, NS, "acme").await.is_some(),
            "{on}: `vpnmig {}` left no VPNPeer while no IPsecGateway exists:\n{}",
            args.join(" "),
            r.stderr
        );
        assert!(
            b.get(SECRET, NS, "acme-psk").await.is_some(),
            "{on}: the PSK Secret is gone"
        );
        assert_eq!(b.psk_fingerprint(NS, "acme-psk").await, psk, "{on}");
        // No way back that keeps an IPsecGateway while none exists: the rollback refuses
        // in an early merge, and says the revert comes first (the adoption's parent stop
        // said "closes the journal and keeps the IPsecGateway").
        let text = live::flat(&r.stderr);
        if old.is_none() {
            assert!(
                !text.contains("keeps the IPsecGateway"),
                "{on}: `vpnmig {}` offers to keep an IPsecGateway that does not exist: {text}",
                args.join(" ")
            );
            if r.code != 0 && text.contains("would not hold") {
                assert!(
                    text.contains("the repository change was merged early and no IPsecGateway exists, so the rollback refuses"),
                    "{on}: {text}"
                );
            }
        }
        if r.code == 0 {
            return (r, tried);
        }
        let hint = hint_of(&r);
        for c in live::flat(&hint).split('`').skip(1).step_by(2) {
            if c.starts_with("kubectl patch ") || c.starts_with("kubectl delete ") {
                shell(b, c).await;
                tried.push(c.to_string());
                assert!(
                    b.get(IPSECGATEWAY, NS, "acme").await.is_some()
                        || b.get(VPNPEER, NS, "acme").await.is_some(),
                    "{on}: `{c}` deleted the client's only VPNPeer while no IPsecGateway exists"
                );
            }
        }
        match next_command(&hint, &tried) {
            Some(next) => args = next,
            None => return (r, tried),
        }
    }
    panic!("{on}: not ended after 6 steps: {tried:?}");
}

/// What is wrong with the early merge, if anything.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Bad {
    /// Exactly the plan's rewrite.
    No,
    /// The merged VPNPeer's remote subnet is not the plan's.
    Subnet,
    /// The merged VPNGateway adds a `reverseExposures` entry the plan does not set: a path
    /// into the client's network the old gateway never had (a21o D25).
    Reverse,
    /// Exactly the plan's, but a VPNGateway of another name in another namespace claims
    /// the floating IP (`/32`) beside it (a21o D24).
    Claimed,
    /// The merged source names the VPNGateway otherwise (the first: the name; the second:
    /// whether it keeps vpnmig's migrated-from annotation) and its VPNPeer names that one:
    /// it stands in the plan's place with the floating IP, serving the tunnel (a21p E10).
    /// Refused with what stands in and that the source must define the plan's names; the
    /// repository fixed, followed to done.
    Renamed(&'static str, bool),
}

/// The row: stopped at `started`, merged early (`bad`: what is wrong with the merge, if
/// anything), then followed from `rollback`.
async fn early_merge(b: &Bed, tool: Tool, parent: bool, bad: Bad) {
    let on = b.backend;
    let rewritten = plan_rewrite(b, tool).await;
    stopped_at_started(b, tool, parent).await;
    let psk = b.psk_fingerprint(NS, "acme-psk").await;
    let merged = match bad {
        Bad::Subnet => {
            let m = rewritten.replacen("10.20.0.0/16", "10.99.0.0/16", 1);
            assert_ne!(m, rewritten, "the plan's remote subnet is in the rewrite");
            m
        }
        Bad::Reverse => {
            let m = rewritten.replacen(
                "  exposures:\n  - name: crm\n",
                "  reverseExposures:\n  - name: client-db\n    target:\n      address: 10.20.5.5\n      port: 5432\n    protocol: TCP\n  exposures:\n  - name: crm\n",
                1,
            );
            assert_ne!(
                m, rewritten,
                "the VPNGateway's exposures are in the rewrite"
            );
            m
        }
        Bad::Renamed(to, annotated) => renamed(&rewritten, to, annotated),
        Bad::No | Bad::Claimed => rewritten.clone(),
    };
    if let Bad::Renamed(to, annotated) = bad {
        merge_as(b, tool, &merged, to).await;
        return renamed_merge(b, tool, &psk, &rewritten, to, annotated).await;
    }
    merge(b, tool, &merged).await;
    if bad == Bad::Claimed {
        if b.get(NAMESPACE, "", "fremd").await.is_none() {
            b.put(NAMESPACE, "", json!({"metadata": {"name": "fremd"}}))
                .await;
        }
        let mut spec = b.get(VPNGATEWAY, NS, "acme").await.unwrap()["spec"].clone();
        spec["endpoint"]["floatingIP"] = json!("198.51.100.23/32");
        b.put(
            VPNGATEWAY,
            "fremd",
            json!({
                "apiVersion": "vpn.bnerd.net/v1alpha1",
                "kind": "VPNGateway",
                "metadata": {"name": "anderer", "namespace": "fremd"},
                "spec": spec,
            }),
        )
        .await;
    }
    let (r, tried) = follow(b, &psk).await;
    eprintln!("{on}: followed {tried:?}; the last run said:\n{}", r.stderr);
    let j = b.journal(NS, "acme").await.expect("the journal");
    if bad == Bad::Claimed {
        // Refused before anything was adopted: never "done" or HEALTHY beside it.
        assert_ne!(r.code, 0, "{on}: {tried:?}");
        let text = live::flat(&r.stderr);
        for says in [
            "another gateway claims the floating IP 198.51.100.23: vpngateway/anderer -n fremd (floating IP 198.51.100.23/32; `kubectl delete vpngateway anderer -n fremd`)",
            "nothing was adopted",
        ] {
            assert!(text.contains(says), "{on}: missing `{says}` in {text}");
        }
        for never in ["HEALTHY", ": done"] {
            assert!(!r.stdout.contains(never), "{on}: {never} in {}", r.stdout);
        }
        assert_eq!(j["phase"], "started", "{on}: {j}");
        // The hint's delete was followed; the same cutover then adopts them.
        assert!(
            tried
                .iter()
                .any(|c| c == "kubectl delete vpngateway anderer -n fremd"),
            "{on}: {tried:?}"
        );
        bed::eventually(30, "the claimant is gone", || async {
            b.get(VPNGATEWAY, "fremd", "anderer").await.is_none()
        })
        .await;
        b.step(&["cutover", "acme", "-n", NS, "--yes"], 0, &[])
            .await;
        let j = b.journal(NS, "acme").await.expect("the journal");
        assert_eq!(j["phase"], "done", "{on}: {j}");
        return;
    }
    if bad != Bad::No {
        assert_ne!(r.code, 0, "{on}: {tried:?}");
        let text = live::flat(&r.stderr);
        let field = if bad == Bad::Subnet {
            "VPNPeer tenant-acme/acme spec.ipsec.remoteSubnets: [\"10.99.0.0/16\"], the plan pins [\"10.20.0.0/16\"]"
        } else {
            "VPNGateway tenant-acme/acme spec.reverseExposures: [{\"name\":\"client-db\""
        };
        for says in [field, "the source must be fixed", "nothing was adopted"] {
            assert!(text.contains(says), "{on}: missing `{says}` in {text}");
        }
        if bad == Bad::Reverse {
            assert!(text.contains("the plan does not set it"), "{on}: {text}");
        }
        // A clear refusal: it names no command already tried.
        for args in live::advised(&hint_of(&r)) {
            assert!(
                !tried.contains(&args.join(" ")),
                "{on}: {args:?} again in {}",
                r.stderr
            );
        }
        assert_eq!(j["phase"], "started", "{on}: {j}");
        assert!(b.get(VPNPEER, NS, "acme").await.is_some(), "{on}");
        assert!(
            !tried.iter().any(|c| c.contains("delete-extra-peers")),
            "{on}: {tried:?}"
        );
        return;
    }
    assert_eq!(r.code, 0, "{on}: {tried:?}\n{}", r.stderr);
    assert_eq!(j["phase"], "done", "{on}: {j}");
    let by = j["appliedBySource"].as_str().unwrap_or_default();
    let owner = match tool {
        Tool::Flux => "kustomization/acme -n flux-system's sync",
        Tool::Argo => "application/acme -n argocd's sync",
    };
    assert!(by.contains(owner), "{on}: {j}");
    assert!(
        tried.iter().any(|c| c.starts_with("cutover")),
        "{on}: {tried:?}"
    );
    assert!(
        !tried
            .iter()
            .any(|c| c.starts_with("kubectl delete vpnpeer")),
        "{on}: {tried:?}"
    );
    // The owner restored as at a normal done (its status read the merge), its parent
    // still suspended: vpnmig never resumes a parent.
    assert!(!tool.suspended(b, "acme").await, "{on}: acme restored: {j}");
    assert!(!j["gitops"][0]["restoredAt"].is_null(), "{on}: {j}");
    if parent {
        let p = match tool {
            Tool::Flux => "verbund",
            Tool::Argo => "wurzel",
        };
        assert!(tool.suspended(b, p).await, "{on}: {p} stays suspended");
    }
    // The objects are the owner's, as it applied them, adopted by their uids.
    let peer = b.get(VPNPEER, NS, "acme").await.unwrap();
    assert_eq!(j["targetUids"][1], peer["metadata"]["uid"], "{on}: {j}");
}

/// [`Bad::Renamed`]: merged under the name `to`, the client served through it. Followed
/// from `rollback`, every command refuses before any change, naming `to` as what stands
/// in, that it serves the tunnel and that the source must define the plan's names; never
/// "the tunnel is down" nor "nothing was deleted … untouched" (the IPsecGateway was
/// pruned). The repository fixed as told, followed again: done.
async fn renamed_merge(b: &Bed, tool: Tool, psk: &str, rewritten: &str, to: &str, annotated: bool) {
    let on = b.backend;
    let stands = format!("vpngateway/{to} -n {NS} stands in its place");
    let why = if annotated {
        "it carries vpnmig's migrated-from annotation for acme and holds the window's floating IP 198.51.100.23"
    } else {
        "it holds the window's floating IP 198.51.100.23"
    };
    let names = format!(
        "the repository's source must define the plan's names: VPNGateway acme (not {to}), VPNPeer acme with spec.gatewayRef.name acme, and spec.ipsec.pskSecretRef acme-psk"
    );
    let never = [
        "the client's tunnel is down",
        "nothing was deleted",
        "untouched",
        "keeps the IPsecGateway",
    ];
    let (r, tried) = follow(b, psk).await;
    eprintln!("{on}: followed {tried:?}; the last run said:\n{}", r.stderr);
    assert_eq!(r.code, 7, "{on}: {tried:?}\n{}", r.stderr);
    let text = live::flat(&r.stderr);
    for says in [
        stands.as_str(),
        why,
        "the client's tunnel is served by it",
        names.as_str(),
        "nothing was changed",
    ] {
        assert!(text.contains(says), "{on}: missing `{says}` in {text}");
    }
    for n in never {
        assert!(!text.contains(n), "{on}: `{n}` in {text}");
    }
    assert!(
        !tried.iter().any(|c| c.contains("delete-extra-peers")),
        "{on}: {tried:?}"
    );
    // cutover and verify say the same, each on its own.
    let cut = b
        .step(
            &["cutover", "acme", "-n", NS, "--yes"],
            7,
            &[&stands, &names],
        )
        .await;
    let ver = b
        .step(&["verify", "acme", "-n", NS], 5, &[&stands, why])
        .await;
    let st = b.vpnmig(&["status", "-n", NS]).await;
    let said = live::flat(&format!("{}\n{}", st.stdout, st.stderr));
    assert!(said.contains(&stands), "{on}: {said}");
    // The stand-in's own line names the window it stands in for, not a migration of its own.
    if annotated {
        assert!(
            said.contains(&format!("vpngateway/{to} -n {NS} carries vpnmig's migrated-from annotation for acme, but vpnmig never applied it (written by field manager")),
            "{on}: {said}"
        );
        assert!(
            said.contains("it stands in the place of the window of tenant-acme/acme"),
            "{on}: {said}"
        );
    }
    assert!(
        !said.contains(&format!("ipsecgateway/{to}")),
        "{on}: {said}"
    );
    for (what, r) in [("cutover", &cut), ("verify", &ver), ("status", &st)] {
        let text = live::flat(&format!("{}\n{}", r.stdout, r.stderr));
        for n in never {
            assert!(!text.contains(n), "{on}: `{n}` in {what}: {text}");
        }
    }
    // Nothing changed: the journal at `started`, the stand-in and the VPNPeer live, the
    // floating IP on the stand-in, the key unchanged.
    assert_eq!(
        b.phase(NS, "acme").await.as_deref(),
        Some("started"),
        "{on}"
    );
    assert!(b.get(VPNGATEWAY, NS, to).await.is_some(), "{on}");
    assert!(b.get(VPNPEER, NS, "acme").await.is_some(), "{on}");
    fip_on(b, to).await;
    assert_eq!(b.psk_fingerprint(NS, "acme-psk").await, psk, "{on}");
    // The repository fixed as told (the plan's rewrite): the owner prunes the stand-in and
    // applies the plan's names; followed, the window ends done with them.
    merge_as(b, tool, rewritten, "acme").await;
    let (r, tried) = follow(b, psk).await;
    assert_eq!(r.code, 0, "{on}: {tried:?}\n{}", r.stderr);
    assert_eq!(b.phase(NS, "acme").await.as_deref(), Some("done"), "{on}");
    assert!(b.get(VPNGATEWAY, NS, to).await.is_none(), "{on}");
}

/// An early merge into another namespace (a21q Q04): the window stopped at `started`, the
/// merged source puts the VPNGateway, VPNPeer and PSK Secret into namespace `acme-vpn`
/// (same names, the floating IP pinned). `status -A` ties the stand-in to the window (by
/// the floating IP it holds and its migrated-from annotation), never "no journal ever
/// existed" while the window's journal is there; the PSK Secret gone from tenant-acme is
/// said with where the same key is live (by fingerprint, never the value). On the code
/// before: "no journal ever existed", and "must be re-created" naming only tenant-acme.
async fn moved_merge(b: &Bed, tool: Tool) {
    let on = b.backend;
    let rewritten = plan_rewrite(b, tool).await;
    stopped_at_started(b, tool, true).await;
    let moved: Vec<String> = std::iter::once(
        r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"acme-vpn"}}"#.to_string(),
    )
    .chain(
        rewritten
            .split("\n---")
            .filter(|d| !d.trim().is_empty())
            .map(|d| {
                let mut o: Value = serde_saphyr::from_str(d).unwrap();
                if matches!(
                    o["kind"].as_str(),
                    Some("VPNGateway" | "VPNPeer" | "Secret")
                ) {
                    o["metadata"]["namespace"] = json!("acme-vpn");
                }
                serde_json::to_string(&o).unwrap()
            }),
    )
    .collect();
    assert!(
        moved.iter().any(|d| d.contains("\"Secret\"")),
        "{on}: {rewritten}"
    );
    b.edit(CONFIGMAP, tool.ns(), "acme-source", |o| {
        o["data"]["manifests"] = json!(moved.join("\n---\n"))
    })
    .await;
    b.gitops.kick();
    bed::eventually(
        40,
        "the owner prunes tenant-acme and applies acme-vpn",
        || async {
            b.get(IPSECGATEWAY, NS, "acme").await.is_none()
                && b.get(SECRET, NS, "acme-psk").await.is_none()
                && b.get(VPNGATEWAY, "acme-vpn", "acme").await.is_some()
                && b.get(VPNPEER, "acme-vpn", "acme").await.is_some()
                && b.get(SECRET, "acme-vpn", "acme-psk").await.is_some()
        },
    )
    .await;
    bed::eventually(40, "198.51.100.23 on VPNGateway acme-vpn/acme", || async {
        b.operator.floating_ips().associated.get("198.51.100.23")
            == Some(&"VPNGateway acme-vpn/acme".to_string())
    })
    .await;
    let st = b.vpnmig(&["status", "-A"]).await;
    let said = live::flat(&format!("{}\n{}", st.stdout, st.stderr));
    eprintln!("{on}: status -A said:\n{}\n{}", st.stdout, st.stderr);
    for says in [
        "vpngateway/acme -n acme-vpn",
        "it stands in the place of the window of tenant-acme/acme",
        "holds the window's floating IP 198.51.100.23",
        "its journal, ConfigMap tenant-acme/vpnmig-acme, is there",
        // The key the window fingerprinted is live in the stand-in's namespace.
        "the key the journal fingerprinted is live in secret/acme-psk -n acme-vpn",
        "the repository's source must define the plan's names and namespace, all in tenant-acme: VPNGateway acme (in namespace tenant-acme, not in acme-vpn)",
    ] {
        assert!(said.contains(says), "{on}: missing `{says}` in {said}");
    }
    for never in [
        "no journal ever existed",
        "(not acme)",
        "the client's tunnel is down",
        "it must be re-created with the client's pre-shared key",
        "rehearsal-only-not-a-real-key",
        "cmVoZWFyc2Fs",
    ] {
        assert!(!said.contains(never), "{on}: `{never}` in {said}");
    }
    assert_eq!(
        b.phase(NS, "acme").await.as_deref(),
        Some("started"),
        "{on}"
    );
}

/// How an early merge before any window came in (a21p E16).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Outside {
    /// The plan's rewrite merged; `Tool`'s owner syncs it.
    Merged(Tool),
    /// No GitOps: a person deleted the IPsecGateway and applied the bundle's
    /// VPNGateway and VPNPeer with kubectl.
    ByHand,
}

/// An early merge before any window (a21p E16): only `vpnmig plan --out` ran, no journal
/// ever existed, and the VPNGateway and VPNPeer came from the repository (or a hand), not
/// from vpnmig. `cutover --plan` says so and never advises a rollback from the bundle;
/// `rollback --plan … --delete-extra-peers` and `rollback --delete-extra-peers` refuse
/// before any change (no journal written, the VPNPeer and the floating IP where they
/// were), naming the VPNGateway, its writer and the way back (revert the merge).
async fn no_window(b: &Bed, how: Outside) {
    let on = b.backend;
    let plans = b.cwd().join("plans/acme");
    let plans = plans.to_str().unwrap();
    let by = match how {
        Outside::Merged(tool) => {
            let rewritten = plan_rewrite(b, tool).await;
            merge(b, tool, &rewritten).await;
            fip_on(b, "acme").await;
            match tool {
                Tool::Flux => "written by field manager kustomize-controller",
                Tool::Argo => "written by field manager argocd-controller",
            }
        }
        Outside::ByHand => {
            let r = b.vpnmig(&["plan", "acme", "-n", NS, "--out", plans]).await;
            assert!(
                std::path::Path::new(plans).join("vpngateway.yaml").exists(),
                "{on}: {}",
                r.stderr
            );
            b.delete_until_gone(IPSECGATEWAY, NS, "acme", 40).await;
            shell(
                b,
                &format!("kubectl apply -f {plans}/vpngateway.yaml -f {plans}/vpnpeer.yaml"),
            )
            .await;
            fip_on(b, "acme").await;
            "written by field manager kubectl-client-side-apply"
        }
    };
    let psk = b.psk_fingerprint(NS, "acme-psk").await;
    let peer = b.uid(VPNPEER, NS, "acme").await.expect("the VPNPeer");
    let outside = [
        "vpngateway/acme -n tenant-acme carries vpnmig's migrated-from annotation, but vpnmig never applied it",
        by,
        "no journal ever existed and nothing vpnmig recorded rolls it back",
        "to go back, revert the merge in the repository",
        "nothing was changed",
    ];
    let cut = b
        .step(
            &[
                "cutover", "acme", "-n", NS, "--plan", plans, "--gitops", "pause", "--yes",
            ],
            7,
            &["acme -n tenant-acme is migrated outside a vpnmig window"],
        )
        .await;
    let mut runs = vec![("cutover --plan", cut)];
    for args in [
        vec![
            "rollback",
            "acme",
            "-n",
            NS,
            "--plan",
            plans,
            "--yes",
            "--delete-extra-peers",
        ],
        vec![
            "rollback",
            "acme",
            "-n",
            NS,
            "--yes",
            "--delete-extra-peers",
        ],
        vec![
            "rollback", "acme", "-n", NS, "--plan", plans, "--gitops", "pause", "--yes",
        ],
    ] {
        let r = b
            .step(&args, 7, &["no journal of acme -n tenant-acme"])
            .await;
        runs.push(("rollback", r));
    }
    for (what, r) in &runs {
        let text = live::flat(&r.stderr);
        for says in outside {
            assert!(
                text.contains(says),
                "{on}: {what}: missing `{says}` in {text}"
            );
        }
        for never in ["its cutover wrote", "--plan DIR", "--delete-extra-peers`"] {
            assert!(!text.contains(never), "{on}: {what}: `{never}` in {text}");
        }
        // Its advice names no cutover or rollback to run: they refuse here.
        assert_eq!(next_command(&hint_of(r), &[]), None, "{on}: {what}: {text}");
        // Before any change: no journal, the client's VPNPeer as it was.
        assert!(b.journal(NS, "acme").await.is_none(), "{on}: {what}");
        assert_eq!(
            b.uid(VPNPEER, NS, "acme").await.as_ref(),
            Some(&peer),
            "{on}: {what}"
        );
        assert_eq!(b.psk_fingerprint(NS, "acme-psk").await, psk, "{on}: {what}");
    }
    let st = b.vpnmig(&["status", "-n", NS]).await;
    assert!(
        live::flat(&format!("{}\n{}", st.stdout, st.stderr))
            .contains("to go back, revert the merge in the repository"),
        "{on}: {}\n{}",
        st.stdout,
        st.stderr
    );
}

/// An early merge before any window under another name (a21q Q12): only `vpnmig plan
/// --out` ran; the merged source names the VPNGateway `to` (annotated), so neither kind of
/// the plan's name exists. `rollback --plan` from the bundle refuses before any change,
/// naming the stand-in and the way back (revert the merge), never a window that "ended
/// done" nor "tunnels are down" (on the code before: both, and a `vpnmig report` advised
/// that has no journal to read).
async fn no_window_renamed(b: &Bed, tool: Tool, to: &str) {
    let on = b.backend;
    let plans = b.cwd().join("plans/acme");
    let plans = plans.to_str().unwrap();
    let rewritten = plan_rewrite(b, tool).await;
    merge_as(b, tool, &renamed(&rewritten, to, true), to).await;
    fip_on(b, to).await;
    assert!(
        b.get(IPSECGATEWAY, NS, "acme").await.is_none(),
        "{on}: pruned"
    );
    let psk = b.psk_fingerprint(NS, "acme-psk").await;
    let peer = b.uid(VPNPEER, NS, "acme").await.expect("the VPNPeer");
    for args in [
        vec!["rollback", "acme", "-n", NS, "--plan", plans, "--yes"],
        vec![
            "rollback", "acme", "-n", NS, "--plan", plans, "--gitops", "pause", "--yes",
        ],
    ] {
        let r = b.step(&args, 7, &[]).await;
        let text = live::flat(&r.stderr);
        for says in [
            "no journal of acme -n tenant-acme",
            &format!("vpngateway/{to} -n tenant-acme stands in its place"),
            "it carries vpnmig's migrated-from annotation for acme and holds the window's floating IP 198.51.100.23",
            "the client's tunnel is served by it",
            "nothing was changed",
            "to go back, revert the merge in the repository",
        ] {
            assert!(
                text.contains(says),
                "{on}: {args:?}: missing `{says}` in {text}"
            );
        }
        for never in [
            "ended done",
            "tunnels are down",
            "vpnmig report",
            "rolling back from the bundle",
        ] {
            assert!(!text.contains(never), "{on}: {args:?}: `{never}` in {text}");
        }
        assert_eq!(next_command(&hint_of(&r), &[]), None, "{on}: {text}");
        assert!(
            b.journal(NS, "acme").await.is_none(),
            "{on}: a journal written"
        );
        assert_eq!(
            b.uid(VPNPEER, NS, "acme").await.as_ref(),
            Some(&peer),
            "{on}"
        );
        assert_eq!(b.psk_fingerprint(NS, "acme-psk").await, psk, "{on}");
    }
    fip_on(b, to).await;
}

/// Item 3: after done, the owner's parent active, `rollback --gitops pause` stops on the
/// parent before any delete (the VPNGateway and VPNPeer still there, the owner's own
/// suspension not claimed as holding); its advice followed, the rollback ends.
async fn rollback_pause_stops_on_the_parent(b: &Bed) {
    let on = b.backend;
    let rewritten = plan_rewrite(b, Tool::Flux).await;
    // Done first: the parent suspended by hand, as its stop asks.
    b.edit(KUSTOMIZATION, "flux-system", "verbund", |o| {
        o["spec"]["suspend"] = Value::Bool(true)
    })
    .await;
    b.step(
        &["cutover", "acme", "-n", NS, "--gitops", "pause", "--yes"],
        0,
        &[],
    )
    .await;
    assert_eq!(b.phase(NS, "acme").await.as_deref(), Some("done"), "{on}");
    // Merged, the parent resumed by someone: it syncs acme's Kustomization again.
    b.edit(CONFIGMAP, "flux-system", "acme-source", |o| {
        o["data"]["manifests"] = json!(rewritten)
    })
    .await;
    Tool::Flux.resume(b, "verbund").await;
    Tool::Flux.resume(b, "acme").await;
    b.gitops.kick();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let r = b
        .step(
            &["rollback", "acme", "-n", NS, "--gitops", "pause", "--yes"],
            7,
            &["kustomization/verbund -n flux-system"],
        )
        .await;
    let text = live::flat(&r.stderr);
    assert!(
        text.contains("the VPNGateway and VPNPeers still there are not deleted"),
        "{on}: {text}"
    );
    assert!(b.get(VPNPEER, NS, "acme").await.is_some(), "{on}");
    assert!(b.get(VPNGATEWAY, NS, "acme").await.is_some(), "{on}");
    // Followed: the parent suspended, the merge reverted, the rollback run again.
    let hint = hint_of(&r);
    for c in live::flat(&hint).split('`').skip(1).step_by(2) {
        if c.starts_with("kubectl patch ") {
            shell(b, c).await;
        }
    }
    let next = bed::advised(&hint, "rollback acme");
    let r = b.run_advised(&next, &["--yes"]).await;
    assert_eq!(r.code, 0, "{on}: {}", r.stderr);
    assert_eq!(
        b.phase(NS, "acme").await.as_deref(),
        Some("rolled-back"),
        "{on}"
    );
}

/// The plan's VPNGateway and VPNPeer of `rewritten` (the merged source), each as parsed.
fn new_objects(rewritten: &str) -> Vec<Value> {
    vpnmig_sandbox::scenario::parse(rewritten)
        .expect("the rewrite parses")
        .into_iter()
        .filter(|d| d["kind"] == "VPNGateway" || d["kind"] == "VPNPeer")
        .collect()
}

/// a21o D04: stopped at `started` (Flux, the parent re-armed acme), nothing merged. The
/// operator suspends the parent and acme by hand, deletes the IPsecGateway and applies the
/// plan's VPNGateway and VPNPeer by hand as `kustomize-controller` with Flux's labels. The
/// cutover adopts them (every pinned value is the plan's) but never records the merge of a
/// source never changed: its text and the journal's `appliedBySource` say the field manager
/// and that it is not proven to be acme's sync. On the code before it, both said
/// "kustomization/acme -n flux-system's sync of its source … the repository change was
/// merged before the window's delete".
async fn a_hand_apply_as_the_controller_is_not_a_merge(b: &Bed) {
    let on = b.backend;
    let rewritten = plan_rewrite(b, Tool::Flux).await;
    stopped_at_started(b, Tool::Flux, true).await;
    for name in ["verbund", "acme"] {
        b.edit(KUSTOMIZATION, "flux-system", name, |o| {
            o["spec"]["suspend"] = Value::Bool(true)
        })
        .await;
    }
    b.delete_until_gone(IPSECGATEWAY, NS, "acme", 30).await;
    for mut o in new_objects(&rewritten) {
        o["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/name"] = json!("acme");
        o["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/namespace"] = json!("flux-system");
        o["metadata"]["namespace"] = json!(NS);
        let kind = if o["kind"] == "VPNGateway" {
            VPNGATEWAY
        } else {
            VPNPEER
        };
        b.apply_as(kind, NS, "kustomize-controller", o).await;
    }
    let r = b
        .step(&["cutover", "acme", "-n", NS, "--yes"], 0, &[])
        .await;
    let text = live::flat(&r.stderr);
    let hand = "applied by field manager kustomize-controller, as kustomization/acme -n flux-system's sync writes (not proven to be its sync of a merged source";
    for says in [
        hand,
        "the cluster does not show that the repository change was merged",
    ] {
        assert!(text.contains(says), "{on}: `{says}` missing in: {text}");
    }
    assert!(!text.contains("'s sync of its source"), "{on}: {text}");
    let j = b.journal(NS, "acme").await.expect("the journal");
    assert_eq!(j["phase"], "done", "{on}: {j}");
    let by = j["appliedBySource"].as_str().unwrap_or_default();
    assert!(by.contains("field manager kustomize-controller, as kustomization/acme -n flux-system's sync writes (not proven"), "{on}: {j}");
    assert!(!by.contains("'s sync of its source"), "{on}: {j}");
}

/// a21o D14: stopped at `started` (Flux, the parent re-armed acme); the merge moves the new
/// objects to another Kustomization, `acme-neu` (its source holds the plan's VPNGateway and
/// VPNPeer, which carry its labels), and acme's source keeps the Secret only. Followed from
/// `rollback`, the cutover adopts them as applied by `acme-neu`'s sync, the owner their
/// markers name, in its text and the journal's `appliedBySource`. On the code before it,
/// both named acme, the owner the window paused.
async fn a_merge_by_another_owner_is_credited_to_it(b: &Bed) {
    let on = b.backend;
    let rewritten = plan_rewrite(b, Tool::Flux).await;
    stopped_at_started(b, Tool::Flux, true).await;
    let psk = b.psk_fingerprint(NS, "acme-psk").await;
    let new: Vec<String> = new_objects(&rewritten)
        .iter()
        .map(|o| serde_json::to_string(o).unwrap())
        .collect();
    b.put(
        CONFIGMAP,
        "flux-system",
        json!({"metadata": {"name": "acme-neu-source", "namespace": "flux-system"},
               "data": {"manifests": new.join("\n---\n")}}),
    )
    .await;
    let ks = vpnmig_sandbox::scenario::parse(&ACME_KS.replace("name: acme\n", "name: acme-neu\n"))
        .unwrap()
        .remove(0);
    b.put(KUSTOMIZATION, "flux-system", ks).await;
    let kept: Vec<&str> = rewritten
        .split("\n---\n")
        .filter(|d| !d.contains("kind: VPNGateway") && !d.contains("kind: VPNPeer"))
        .collect();
    merge(b, Tool::Flux, &kept.join("\n---\n")).await;
    let gw = b.get(VPNGATEWAY, NS, "acme").await.unwrap();
    assert_eq!(
        gw["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/name"], "acme-neu",
        "{on}: {gw}"
    );
    let (r, tried) = follow(b, &psk).await;
    assert_eq!(r.code, 0, "{on}: {tried:?}\n{}", r.stderr);
    let j = b.journal(NS, "acme").await.expect("the journal");
    assert_eq!(j["phase"], "done", "{on}: {j}");
    let by = j["appliedBySource"].as_str().unwrap_or_default();
    assert!(
        by.contains("kustomization/acme-neu -n flux-system's sync"),
        "{on}: {j}"
    );
    assert!(
        !by.contains("kustomization/acme -n flux-system's sync"),
        "{on}: {j}"
    );
}

crate::rows! {
    /// Flux, a parent Kustomization re-armed acme before the delete; merged early.
    flux_parent: bed::Row {
        scenario: || scenario(Tool::Flux, Some("verbund")),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(early_merge(b, Tool::Flux, true, Bad::No)),
    },
    /// Argo CD, an app-of-apps re-armed acme before the delete; merged early.
    argo_parent: bed::Row {
        scenario: || scenario(Tool::Argo, Some("wurzel")),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(early_merge(b, Tool::Argo, true, Bad::No)),
    },
    /// Flux, no parent: a person re-enabled acme while the pause was read back.
    flux_alone: bed::Row {
        scenario: || scenario(Tool::Flux, None),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(early_merge(b, Tool::Flux, false, Bad::No)),
    },
    /// Argo CD, no parent: the same.
    argo_alone: bed::Row {
        scenario: || scenario(Tool::Argo, None),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(early_merge(b, Tool::Argo, false, Bad::No)),
    },
    /// Flux with its parent, the merged VPNPeer's remote subnet not the plan's: refused.
    flux_parent_differs: bed::Row {
        scenario: || scenario(Tool::Flux, Some("verbund")),
        only: None,
        // Ends at `started` beside the owner's objects, on purpose (the source is wrong).
        after: None,
        steps: |b| Box::pin(early_merge(b, Tool::Flux, true, Bad::Subnet)),
    },
    /// Argo CD alone, the same.
    argo_alone_differs: bed::Row {
        scenario: || scenario(Tool::Argo, None),
        only: None,
        after: None,
        steps: |b| Box::pin(early_merge(b, Tool::Argo, false, Bad::Subnet)),
    },
    /// Flux alone, the merged VPNGateway adds a reverseExposures entry: refused (a21o D25).
    flux_alone_reverse_exposure: bed::Row {
        scenario: || scenario(Tool::Flux, None),
        only: None,
        after: None,
        steps: |b| Box::pin(early_merge(b, Tool::Flux, false, Bad::Reverse)),
    },
    /// Argo CD alone, an exact merge beside a VPNGateway in another namespace claiming
    /// the floating IP: refused, then adopted once it is deleted (a21o D24).
    argo_alone_claimed: bed::Row {
        scenario: || scenario(Tool::Argo, None),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(early_merge(b, Tool::Argo, false, Bad::Claimed)),
    },
    /// Argo CD under wurzel, merged under another name (`acme-neu`, annotated): refused
    /// naming the stand-in; the source fixed: done (a21p E10).
    argo_parent_renamed: bed::Row {
        scenario: || scenario(Tool::Argo, Some("wurzel")),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(early_merge(b, Tool::Argo, true, Bad::Renamed("acme-neu", true))),
    },
    /// Argo CD under wurzel, merged into namespace acme-vpn (a21q Q04): status ties the
    /// stand-in to the window and names where the key is live.
    argo_parent_moved: bed::Row {
        scenario: || scenario(Tool::Argo, Some("wurzel")),
        only: None,
        after: None,
        steps: |b| Box::pin(moved_merge(b, Tool::Argo)),
    },
    /// Flux alone, merged as `vpn-acme` without the migrated-from annotation: found by the
    /// floating IP it holds.
    flux_alone_renamed_unannotated: bed::Row {
        scenario: || scenario(Tool::Flux, None),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(early_merge(b, Tool::Flux, false, Bad::Renamed("vpn-acme", false))),
    },
    /// Argo CD, the plan's rewrite merged before any window (a21p E16).
    argo_no_window: bed::Row {
        scenario: || scenario(Tool::Argo, None),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(no_window(b, Outside::Merged(Tool::Argo))),
    },
    /// Argo CD, merged before any window as `acme-neu` (a21q Q12): the bundle's
    /// rollback refuses naming the stand-in.
    argo_no_window_renamed: bed::Row {
        scenario: || scenario(Tool::Argo, None),
        only: None,
        after: None,
        steps: |b| Box::pin(no_window_renamed(b, Tool::Argo, "acme-neu")),
    },
    /// Flux under verbund, merged before any window as `vpn-acme`.
    flux_parent_no_window_renamed: bed::Row {
        scenario: || scenario(Tool::Flux, Some("verbund")),
        only: None,
        after: None,
        steps: |b| Box::pin(no_window_renamed(b, Tool::Flux, "vpn-acme")),
    },
    /// Flux under verbund, the same.
    flux_parent_no_window: bed::Row {
        scenario: || scenario(Tool::Flux, Some("verbund")),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(no_window(b, Outside::Merged(Tool::Flux))),
    },
    /// No GitOps: the bundle's VPNGateway and VPNPeer applied by hand with kubectl.
    by_hand_no_window: bed::Row {
        scenario: || Scenario::new(include_str!("../fixtures/clusters/acme.yaml"), live::pool("10.250.3.0/24")),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(no_window(b, Outside::ByHand)),
    },
    /// Flux under verbund, done: `rollback --gitops pause` stops on the active parent.
    rollback_pause_parent: bed::Row {
        scenario: || scenario(Tool::Flux, Some("verbund")),
        only: None,
        after: None,
        steps: |b| Box::pin(rollback_pause_stops_on_the_parent(b)),
    },
    /// a21o D04: a hand apply as kustomize-controller is adopted, never recorded as a merge.
    flux_hand_apply_as_the_controller: bed::Row {
        scenario: || scenario(Tool::Flux, Some("verbund")),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_hand_apply_as_the_controller_is_not_a_merge(b)),
    },
    /// a21o D14: a merge applied by another Kustomization is credited to it.
    flux_merge_by_another_owner: bed::Row {
        scenario: || scenario(Tool::Flux, Some("verbund")),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_merge_by_another_owner_is_credited_to_it(b)),
    },
}
