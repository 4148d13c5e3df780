//! The parents of a GitOps owner, end to end on both control planes (tests/live/bed.rs;
//! issue 21 kind 4, "a suspension is a fact; parents are named"; the a21k attack's N07,
//! N11 and minors). Each row is one case of a table; where the point is the advice, the
//! row follows it to the letter, as a person at a shell would, until the window is done.
//!
//! - A chain of parents deeper than vpnmig used to follow (5 and 6 Flux levels, a
//!   HelmRelease at the top) is followed to its top; a chain deeper than vpnmig follows
//!   (9 Argo CD Applications) says so, names the marker of the level past the last it
//!   read, and puts that level's suspension first. Followed literally: done.
//! - A window deferred by `--window-end` after a parent stop (Flux, Argo CD): every
//!   refusal after it and `status` name the parent, and the rollback that closes the
//!   window (it deleted nothing) suspends no owner, asks for no revert, and says the
//!   parent is the user's to resume.
//! - The ApplicationSet parent stop has a command to copy; Ctrl-C during `deleting` says
//!   what was interrupted.

mod live;

use std::time::Duration;

use live::bed::{
    self, APPLICATION, Bed, CONFIGMAP, HELMRELEASE, IPSECGATEWAY, KUSTOMIZATION, Kind, SECRET,
    Scenario, VPNGATEWAY,
};
use serde_json::Value;

const NS: &str = "tenant-acme";
const ARGO: &str = include_str!("../fixtures/clusters/acme-argocd.yaml");
const FLUX: &str = include_str!("../fixtures/clusters/acme-flux.yaml");
const ACME: &str = include_str!("../fixtures/clusters/acme.yaml");

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

/// The acme Kustomization as its parent's source defines it (`suspend: false`: the
/// parent's apply puts a suspension back).
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

/// `parent` (its YAML) and its source ConfigMap holding `child`.
fn with_parent(base: &str, parent: &str, ns: &str, name: &str, child: &str) -> String {
    let indented: String = child.lines().map(|l| format!("    {l}\n")).collect();
    format!(
        "{base}\n---\n{parent}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-source\n  namespace: {ns}\ndata:\n  manifests: |\n{indented}"
    )
}

/// A Flux level `name` of `kind` (Kustomization, HelmRelease) in `flux-system`; as its
/// parent's source defines it (`in_source`), it sets `suspend: false`.
fn flux_level(kind: Kind, name: &str, in_source: bool) -> String {
    format!(
        "apiVersion: {}/{}\nkind: {}\nmetadata:\n  name: {name}\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./{name}\n  prune: false\n{}  sourceRef: {{kind: GitRepository, name: platform}}\n",
        kind.0,
        kind.1,
        kind.3,
        if in_source { "  suspend: false\n" } else { "" }
    )
}

/// An Argo CD Application `name` (self-heal) in `argocd` that applies Applications.
fn argo_level(name: &str) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  namespace: argocd\nspec:\n  project: default\n  source: {{repoURL: 'https://git.example.net/platform/{name}.git', path: {name}}}\n  destination: {{server: 'https://kubernetes.default.svc', namespace: argocd}}\n  syncPolicy:\n    automated: {{selfHeal: true}}\n"
    )
}

/// One level of a chain: its kind and name (namespace: `flux-system` for Flux, `argocd`
/// for Argo CD).
type Level = (Kind, &'static str);

fn level_ns((kind, _): Level) -> &'static str {
    if kind == APPLICATION {
        "argocd"
    } else {
        "flux-system"
    }
}

fn shown(l: Level) -> String {
    format!("{}/{} -n {}", l.0.3.to_lowercase(), l.1, level_ns(l))
}

/// The chain `levels` (top-most first) above acme: each level's source holds the one
/// below it, the last one's acme (an Application under an Argo CD top, else a
/// Kustomization).
fn chain(levels: &[Level]) -> String {
    chain_over(levels[0].0 == APPLICATION, levels)
}

/// [`chain`] above acme of either tool (`argo`: an Application, else a Kustomization),
/// whatever the levels' tools (a21l A04: an Argo CD app-of-apps over a Flux owner).
fn chain_over(argo: bool, levels: &[Level]) -> String {
    let mut base = if argo { ARGO } else { FLUX }.to_string();
    if !argo && levels.iter().any(|l| l.0 == APPLICATION) {
        // Argo CD's kind (the Argo CD cluster's first document) and namespace.
        let crd = ARGO.split("\n---\n").next().expect("the Application CRD");
        base = format!(
            "{crd}\n---\n{base}\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: argocd\n"
        );
    }
    let mut child = if argo { ACME_APP } else { ACME_KS }.to_string();
    for &(kind, name) in levels.iter().rev() {
        let (live, def, ns) = if kind == APPLICATION {
            (argo_level(name), argo_level(name), "argocd")
        } else {
            (
                flux_level(kind, name, false),
                flux_level(kind, name, true),
                "flux-system",
            )
        };
        base = with_parent(&base, live.trim_end(), ns, name, &child);
        child = def;
    }
    base
}

/// A cycle above acme's Kustomization (a21l A07): HelmRelease `ring` applies acme and
/// Kustomization `kreis`, and `kreis` applies `ring` back.
fn cycle() -> String {
    let kreis = flux_level(KUSTOMIZATION, "kreis", true);
    let ring = flux_level(HELMRELEASE, "ring", true);
    let base = with_parent(
        FLUX,
        flux_level(HELMRELEASE, "ring", false).trim_end(),
        "flux-system",
        "ring",
        &format!("{ACME_KS}---\n{kreis}"),
    );
    with_parent(
        &base,
        flux_level(KUSTOMIZATION, "kreis", false).trim_end(),
        "flux-system",
        "kreis",
        &ring,
    )
}

fn scenario(yaml: String) -> Scenario {
    let mut s = live::pool("10.250.3.0/24");
    s.gitops.self_heal_delay_ms = 200;
    s.users = vec![oncall(&yaml)];
    Scenario::built(yaml, s)
}

/// The kubeconfig context of [`oncall`].
const ONCALL: &str = "vpnmig-sandbox-oncall";

/// An on-call engineer who may do anything in the gateway's namespace and the GitOps
/// tools' and read the gateways everywhere, but may not list the journals (ConfigMaps) of
/// every namespace: whether a window elsewhere relies on a parent cannot be read. Its
/// namespaces are those of the scenario `yaml` (a real RoleBinding needs its namespace).
fn oncall(yaml: &str) -> vpnmig_sandbox::api::auth::User {
    use vpnmig_sandbox::api::auth::{Rule, User};
    let mut namespaces = vec![NS.to_string()];
    for tool in ["flux-system", "argocd"] {
        if yaml.contains(&format!("namespace: {tool}")) {
            namespaces.push(tool.to_string());
        }
    }
    User::with_rules(
        "oncall",
        vec![
            Rule {
                verbs: vec!["*".into()],
                resources: vec!["*".into()],
                namespaces,
            },
            Rule::new(
                &["get", "list", "watch"],
                &[
                    "namespaces",
                    "customresourcedefinitions",
                    "ipsecgateways",
                    "vpngateways",
                    "vpnpeers",
                ],
            ),
        ],
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

/// Every `kubectl patch …` a hint quotes, run as printed and in its order. Returns them.
async fn follow_hint(b: &Bed, hint: &str) -> Vec<String> {
    let flat = live::flat(hint);
    let mut ran = Vec::new();
    for c in flat.split('`').skip(1).step_by(2) {
        if c.starts_with("kubectl patch ") {
            shell(b, c).await;
            ran.push(c.to_string());
        }
    }
    ran
}

/// Everything a stop says from its `hint:` on.
fn hint_of(r: &live::Run) -> String {
    let at = r
        .stderr
        .find("\nhint: ")
        .unwrap_or_else(|| panic!("no hint in:\n{}", r.stderr));
    r.stderr[at + 7..].to_string()
}

/// Resume `parent`, which re-arms the owner, and wait (bounded) until the re-armed owner
/// re-creates the IPsecGateway.
async fn resumed_re_creating_the_gateway(b: &Bed, parent: Level) {
    resume(b, parent).await;
    bed::eventually(
        30,
        "the re-armed owner re-creates the IPsecGateway",
        || async { b.get(IPSECGATEWAY, NS, "acme").await.is_some() },
    )
    .await;
}

/// Whether `level` reads suspended (Argo CD: no `automated`; Flux: `suspend: true`).
async fn suspended(b: &Bed, l: Level) -> bool {
    let o = b
        .get(l.0, level_ns(l), l.1)
        .await
        .expect("the level exists");
    if l.0 == APPLICATION {
        o["spec"]["syncPolicy"]["automated"].is_null()
    } else {
        o["spec"]["suspend"] == true
    }
}

/// The labels and annotations of `obj`, as text.
fn markers(obj: &Value) -> String {
    format!(
        "{}{}",
        obj["metadata"]["labels"], obj["metadata"]["annotations"]
    )
}

/// The controllers applied the whole chain: acme's IPsecGateway, and each level (acme
/// too) carrying its parent's markers.
async fn chain_applied(b: &Bed, owner: Level, levels: &[Level]) {
    bed::eventually(30, "the controller applies the IPsecGateway", || async {
        !b.objects(IPSECGATEWAY, NS).await.is_empty()
    })
    .await;
    let mut below = owner;
    for &l in levels.iter().rev() {
        bed::eventually(30, &format!("{} applies {}", l.1, below.1), || async {
            b.get(below.0, level_ns(below), below.1)
                .await
                .is_some_and(|o| markers(&o).contains(l.1))
        })
        .await;
        below = l;
    }
}

/// Where `needle` is in `hay`, or a panic naming what is missing.
fn at(hay: &str, needle: &str, on: bed::Backend) -> usize {
    hay.find(needle)
        .unwrap_or_else(|| panic!("{on}: `{needle}` missing in: {hay}"))
}

/// A chain above acme (`levels`, top-most first): the stop before the delete names the
/// top-most level first with its command (`past`: the chain goes on past the levels
/// vpnmig follows, and the level named first is the one whose marker the last level read
/// carries), then every level below it; followed literally, round after round (at most
/// 3), the window ends done and every level reads suspended. On the code before it, the
/// stop named the fourth level as the top and the rounds looped.
async fn a_chain_is_named_from_its_top_and_its_advice_ends_done(
    b: &Bed,
    owner: Level,
    levels: &[Level],
    past: bool,
    says: &[String],
) {
    let on = b.backend;
    chain_applied(b, owner, levels).await;
    let cut = ["cutover", "acme", "-n", NS, "--gitops", "pause", "--yes"];
    let r = b.step(&cut, 7, &["no gateway was deleted"]).await;
    nothing_deleted(b).await;
    let flat = live::flat(&r.stderr);
    for words in says {
        assert!(flat.contains(words), "{on}: missing `{words}` in: {flat}");
    }
    let hint = live::flat(&hint_of(&r));
    // Each level asked to be suspended, the top-most first, each with its command.
    let mut from = 0;
    for &l in levels {
        let asks = format!("suspend {}", shown(l));
        let k = at(&hint[from..], &asks, on);
        from += k + asks.len();
        let command = format!(
            "kubectl patch {} {} -n {} --field-manager=vpnmig",
            l.0.3.to_lowercase(),
            l.1,
            level_ns(l)
        );
        assert!(
            hint[from..]
                .trim_start()
                .starts_with(&format!("(`{command}"))
                || hint[from..]
                    .trim_start()
                    .starts_with(&format!("for the window (`{command}")),
            "{on}: {asks}'s command after it: {hint}"
        );
    }
    if past {
        let (top, read) = (levels[0], levels[1]);
        for words in [
            format!("{} is itself managed by {}", shown(read), shown(top)),
            "it is past the 8 levels of parents vpnmig follows, and the chain may go on above it: suspend it and every level above it first".to_string(),
        ] {
            assert!(flat.contains(&words), "{on}: missing `{words}` in: {flat}");
        }
    }
    let mut last = r;
    let mut rounds = 0;
    loop {
        rounds += 1;
        assert!(
            rounds <= 3,
            "{on}: not done after 3 rounds:\n{}",
            last.stderr
        );
        let hint = hint_of(&last);
        let ran = follow_hint(b, &hint).await;
        assert!(!ran.is_empty(), "{on}: nothing to do in: {hint}");
        let next = bed::advised(&hint, "cutover acme");
        let r = b.run_advised(&next, &["--yes"]).await;
        if r.code == 0 {
            break;
        }
        assert_ne!(
            live::flat(&r.stderr),
            live::flat(&last.stderr),
            "{on}: the identical stop twice"
        );
        last = r;
    }
    assert_eq!(b.phase(NS, "acme").await.as_deref(), Some("done"), "{on}");
    tokio::time::sleep(Duration::from_millis(800)).await;
    for &l in levels.iter().chain([&owner]) {
        assert!(suspended(b, l).await, "{on}: {} syncs again", shown(l));
    }
    // `status` names every level the window relies on, the one past the limit too.
    let r = b.step(&["status", "-n", NS], 0, &[]).await;
    let flat = live::flat(&r.stdout);
    for &l in levels {
        let relied = format!("GitOps parent relied on: {}", shown(l));
        assert!(
            flat.contains(&relied),
            "{on}: missing `{relied}` in: {flat}"
        );
    }
}

const FLUX_FIVE: [Level; 5] = [
    (KUSTOMIZATION, "ozean"),
    (KUSTOMIZATION, "meer"),
    (KUSTOMIZATION, "bucht"),
    (KUSTOMIZATION, "hafen"),
    (KUSTOMIZATION, "kai"),
];
const HELM_OVER_FIVE: [Level; 6] = [
    (HELMRELEASE, "sockel"),
    (KUSTOMIZATION, "turm"),
    (KUSTOMIZATION, "etage"),
    (KUSTOMIZATION, "flur"),
    (KUSTOMIZATION, "zimmer"),
    (KUSTOMIZATION, "nische"),
];
const ARGO_NINE: [Level; 9] = [
    (APPLICATION, "gipfel"),
    (APPLICATION, "grat"),
    (APPLICATION, "hang"),
    (APPLICATION, "alm"),
    (APPLICATION, "wald"),
    (APPLICATION, "lichtung"),
    (APPLICATION, "bach"),
    (APPLICATION, "weiher"),
    (APPLICATION, "steg"),
];
const ARGO_OVER_HELM: [Level; 2] = [(APPLICATION, "stapel"), (HELMRELEASE, "basis")];
const FLUX_OVER_HELM: [Level; 2] = [(KUSTOMIZATION, "ringks"), (HELMRELEASE, "chart")];
const RING: Level = (HELMRELEASE, "ring");
const KREIS: Level = (KUSTOMIZATION, "kreis");
/// Ten levels: two past the eight vpnmig reads in full, the top one the ninth's own
/// parent (a21l A03: the ninth was named as the top each round, the tenth put it back).
const ARGO_TEN: [Level; 10] = [
    (APPLICATION, "himmel"),
    (APPLICATION, "gipfel"),
    (APPLICATION, "grat"),
    (APPLICATION, "hang"),
    (APPLICATION, "alm"),
    (APPLICATION, "wald"),
    (APPLICATION, "lichtung"),
    (APPLICATION, "bach"),
    (APPLICATION, "weiher"),
    (APPLICATION, "steg"),
];
const ACME_KS_OWNER: Level = (KUSTOMIZATION, "acme");
const ACME_APP_OWNER: Level = (APPLICATION, "acme");

// ---------------------------------------------------------------------------------------
// Above a HelmRelease, and round a cycle (a21l A03, A07).

/// What a stop before the delete leaves: exit 7 said it, the IPsecGateway and its PSK
/// Secret are as they were, nothing new is applied.
async fn nothing_deleted(b: &Bed) {
    let on = b.backend;
    assert!(
        b.get(IPSECGATEWAY, NS, "acme").await.is_some(),
        "{on}: the IPsecGateway was deleted"
    );
    assert!(
        b.get(SECRET, NS, "acme-psk").await.is_some(),
        "{on}: the PSK Secret was deleted"
    );
    assert!(
        b.objects(VPNGATEWAY, NS).await.is_empty(),
        "{on}: a VPNGateway was applied"
    );
}

/// A chain of mixed tools above acme's Kustomization whose level above a HelmRelease is
/// known by the HelmRelease's own markers only (an Argo CD Application by its tracking
/// label and annotation, a Kustomization by its kustomize.toolkit labels): the stop names
/// that level first, nothing is deleted, and followed literally the window ends done.
async fn above_a_helm_release_is_named_and_ends_done(b: &Bed, levels: &[Level]) {
    let helm = levels[levels.len() - 1];
    let above = levels[levels.len() - 2];
    let managed = format!("{} is itself managed by {}", shown(helm), shown(above));
    a_chain_is_named_from_its_top_and_its_advice_ends_done(
        b,
        ACME_KS_OWNER,
        levels,
        false,
        &[managed],
    )
    .await;
}

/// A HelmRelease and a Kustomization each applying the other above acme: the stop names
/// both as a cycle and asks for every member's suspension, each once; nothing is
/// deleted; followed literally, it never says the identical stop twice, never names one
/// member alone as the top, and ends done with both suspended.
async fn a_cycle_is_named_as_one_and_ends_done(b: &Bed) {
    let on = b.backend;
    chain_applied(b, ACME_KS_OWNER, &[KREIS, RING]).await;
    bed::eventually(30, "ring applies kreis", || async {
        b.get(KREIS.0, level_ns(KREIS), KREIS.1)
            .await
            .is_some_and(|o| markers(&o).contains("ring"))
    })
    .await;
    let cut = ["cutover", "acme", "-n", NS, "--gitops", "pause", "--yes"];
    let mut last = b.step(&cut, 7, &["no gateway was deleted"]).await;
    nothing_deleted(b).await;
    let flat = live::flat(&last.stderr);
    let cycle = format!("{} and {} form a cycle", shown(KREIS), shown(RING));
    assert!(flat.contains(&cycle), "{on}: missing `{cycle}` in: {flat}");
    let hint = live::flat(&hint_of(&last));
    assert!(
        hint.starts_with("suspend every member of each cycle, one right after the other"),
        "{on}: {hint}"
    );
    for l in [RING, KREIS] {
        let asks = format!("suspend {} (`kubectl patch", shown(l));
        assert_eq!(
            hint.matches(&asks).count(),
            1,
            "{on}: `{asks}` once in: {hint}"
        );
    }
    let mut rounds = 0;
    loop {
        rounds += 1;
        assert!(
            rounds <= 3,
            "{on}: not done after 3 rounds:\n{}",
            last.stderr
        );
        let hint = hint_of(&last);
        let ran = follow_hint(b, &hint).await;
        assert!(!ran.is_empty(), "{on}: nothing to do in: {hint}");
        let next = bed::advised(&hint, "cutover acme");
        let r = b.run_advised(&next, &["--yes"]).await;
        if r.code == 0 {
            break;
        }
        assert_eq!(r.code, 7, "{on}: {}", r.stderr);
        nothing_deleted(b).await;
        let flat = live::flat(&r.stderr);
        assert_ne!(
            flat,
            live::flat(&last.stderr),
            "{on}: the identical stop twice"
        );
        assert!(
            flat.contains(&cycle),
            "{on}: the cycle is not named again: {flat}"
        );
        last = r;
    }
    assert_eq!(b.phase(NS, "acme").await.as_deref(), Some("done"), "{on}");
    for l in [RING, KREIS, ACME_KS_OWNER] {
        assert!(suspended(b, l).await, "{on}: {} syncs again", shown(l));
    }
    assert!(
        b.get(SECRET, NS, "acme-psk").await.is_some(),
        "{on}: the PSK Secret was deleted"
    );
}

/// Argo CD app-of-apps parent `wurzel` of acme's Application, in namespace `gitops-root`
/// (apps in any namespace; a21l A04).
fn argo_parent_elsewhere() -> String {
    let moved = chain(&[(APPLICATION, "wurzel")])
        .replace(
            "name: wurzel\n  namespace: argocd",
            "name: wurzel\n  namespace: gitops-root",
        )
        .replace(
            "name: wurzel-source\n  namespace: argocd",
            "name: wurzel-source\n  namespace: gitops-root",
        );
    format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: gitops-root\n---\n{moved}")
}

/// The parent stop names the Application in its own namespace with its command; followed,
/// and the window closed by a rollback (nothing deleted), the argocd command that resumes
/// the parent names it as `gitops-root/wurzel`, never by its bare name (which the argocd
/// CLI looks for in `argocd`).
async fn an_argo_parent_elsewhere_is_named_in_its_namespace(b: &Bed) {
    let on = b.backend;
    chain_applied(b, ACME_APP_OWNER, &[]).await;
    bed::eventually(30, "wurzel applies acme", || async {
        b.get(APPLICATION, "argocd", "acme")
            .await
            .is_some_and(|o| markers(&o).contains("wurzel"))
    })
    .await;
    let cut = ["cutover", "acme", "-n", NS, "--gitops", "pause", "--yes"];
    let r = b
        .step(&cut, 7, &["application/wurzel -n gitops-root"])
        .await;
    nothing_deleted(b).await;
    let hint = hint_of(&r);
    let ran = follow_hint(b, &hint).await;
    assert_eq!(
        ran,
        [
            "kubectl patch application wurzel -n gitops-root --field-manager=vpnmig --type merge -p '{\"spec\":{\"syncPolicy\":{\"automated\":null}}}'"
        ],
        "{on}"
    );
    let r = b
        .step(&["rollback", "acme", "-n", NS, "--yes"], 0, &[])
        .await;
    let flat = live::flat(&r.stderr);
    let resume = "`argocd app set gitops-root/wurzel --sync-policy automated`";
    assert!(flat.contains(resume), "{on}: missing {resume} in: {flat}");
    for bare in ["argocd app set wurzel", "argocd app diff wurzel"] {
        assert!(!flat.contains(bare), "{on}: `{bare}` in: {flat}");
    }
    nothing_deleted(b).await;
}

// ---------------------------------------------------------------------------------------
// A window deferred by `--window-end` after a parent stop (a21k N11).

fn from_now(secs: i64) -> String {
    (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(secs)).to_string()
}

/// The parent stop, done as it says; then the window is deferred (the guard refuses a
/// window too short), and every refusal, `status` and the rollback that closes the window
/// name the parent; the rollback (nothing was deleted) suspends no owner and asks for no
/// revert. On the code before it, the guard's refusal never named the parent.
async fn a_deferred_window_names_its_parent_until_closed(b: &Bed, owner: Level, parent: Level) {
    let on = b.backend;
    chain_applied(b, owner, &[parent]).await;
    let far = from_now(2 * 3600);
    let cut = [
        "cutover",
        "acme",
        "-n",
        NS,
        "--gitops",
        "pause",
        "--yes",
        "--window-end",
        &far,
    ];
    let r = b.step(&cut, 7, &["no gateway was deleted"]).await;
    let ran = follow_hint(b, &hint_of(&r)).await;
    assert_eq!(ran.len(), 1, "{on}: {ran:?}");
    assert!(suspended(b, parent).await, "{on}");
    // Time ran out: the guard refuses, and says the parent stays suspended for the window.
    let near = from_now(4 * 60);
    let mut late = cut;
    late[8] = &near;
    let stays = format!("{} stays suspended for this window", shown(parent));
    let r = b
        .step(
            &late,
            7,
            &["refusing to cut over acme -n tenant-acme", &stays],
        )
        .await;
    let flat = live::flat(&r.stderr);
    assert!(
        flat.contains("vpnmig never resumes it: once the window is closed, resume it yourself"),
        "{on}: {flat}"
    );
    // `status` names it while the window is open.
    let r = b.step(&["status", "-n", NS], 0, &[]).await;
    let named = format!(
        "GitOps parent suspended at a window's request: {}",
        shown(parent)
    );
    assert!(live::flat(&r.stdout).contains(&named), "{on}: {}", r.stdout);
    // The rollback closes it: nothing to suspend, nothing to revert, the parent named.
    let r = b
        .step(&["rollback", "acme", "-n", NS, "--yes"], 0, &[])
        .await;
    let flat = live::flat(&r.stderr);
    for never in [
        format!("suspended {} for the window", shown(owner)),
        "Revert the repository change".to_string(),
        "revert the repository change".to_string(),
    ] {
        assert!(!flat.contains(&never), "{on}: `{never}` in: {flat}");
    }
    let closed = format!(
        "{} is suspended and this window asked for it",
        shown(parent)
    );
    assert!(
        flat.contains(&closed),
        "{on}: missing `{closed}` in: {flat}"
    );
    assert!(flat.contains("resume it yourself ("), "{on}: {flat}");
    assert_eq!(
        b.phase(NS, "acme").await.as_deref(),
        Some("rolled-back"),
        "{on}"
    );
    // The owner was never suspended; the parent is the user's.
    assert!(!suspended(b, owner).await, "{on}: the owner was suspended");
    assert!(
        suspended(b, parent).await,
        "{on}: vpnmig resumed the parent"
    );
    // Closed: `status` no longer holds the window open over it, but names it, with its
    // command, while it reads suspended (a21l A04: named by nothing after the rollback),
    // and asks for no revert.
    let r = b.step(&["status", "-n", NS], 0, &[]).await;
    let flat = live::flat(&r.stdout);
    assert!(!flat.contains(&named), "{on}: {flat}");
    let left = format!(
        "GitOps parent left suspended: {} (manages {}; named by the window of tenant-acme/acme, journal phase rolled-back): suspended for this window, and no vpnmig window relies on it any more (the window is closed)",
        shown(parent),
        shown(owner)
    );
    let command = if parent.0 == APPLICATION {
        format!(
            "(`argocd app set argocd/{} --sync-policy automated`",
            parent.1
        )
    } else {
        format!("(`flux resume kustomization {} -n flux-system`)", parent.1)
    };
    for says in [&left, &command] {
        assert!(flat.contains(says), "{on}: missing `{says}` in: {flat}");
    }
    assert!(!flat.to_lowercase().contains("revert"), "{on}: {flat}");
    // As a user who may not list the journals of every namespace: whether another window
    // relies on it cannot be read, so it is not offered as left (a refused list is never
    // read as "no other window").
    let r = b
        .step(&["status", "-n", NS, "--context", ONCALL], 0, &[])
        .await;
    let flat = live::flat(&r.stdout);
    let unread = format!(
        "GitOps parent relied on (not read back): {} (manages {}; relied on by the window of tenant-acme/acme, journal phase rolled-back): suspended for this window, and whether another window relies on it cannot be read",
        shown(parent),
        shown(owner)
    );
    assert!(
        flat.contains(&unread),
        "{on}: missing `{unread}` in: {flat}"
    );
    assert!(!flat.contains("left suspended"), "{on}: {flat}");
    // Resumed by hand: named no more.
    if parent.0 == APPLICATION {
        b.edit(parent.0, level_ns(parent), parent.1, |o| {
            o["spec"]["syncPolicy"]["automated"] = serde_json::json!({"selfHeal": true})
        })
        .await;
    } else {
        b.edit(parent.0, level_ns(parent), parent.1, |o| {
            o["spec"]["suspend"] = Value::Bool(false)
        })
        .await;
    }
    let r = b.step(&["status", "-n", NS], 0, &[]).await;
    assert!(
        !live::flat(&r.stdout).contains("GitOps parent"),
        "{on}: {}",
        r.stdout
    );
}

// ---------------------------------------------------------------------------------------
// A restore interrupted right after its re-arm, under a Flux parent (a21l A06).

/// The parent stop, done as it says, then done; merged (acme's source no longer defines
/// the IPsecGateway); `--gitops resume` interrupted (SIGINT) right after its re-arm. The
/// interrupted run and `status` say the window's own restore is unfinished (never "the
/// cutover is complete", never "re-enabled by someone else"); the advised run finishes it,
/// watching the first sync; the parent, still suspended, is named with its resume command
/// by that run and by `status` until it is resumed. On the code before it, `status` fell
/// silent about the parent once the restore finished.
async fn an_interrupted_restore_is_finished_and_its_parent_named_until_resumed(b: &Bed) {
    let on = b.backend;
    let (owner, parent) = (ACME_KS_OWNER, (KUSTOMIZATION, "verbund"));
    chain_applied(b, owner, &[parent]).await;
    let cut = ["cutover", "acme", "-n", NS, "--gitops", "pause", "--yes"];
    let r = b.step(&cut, 7, &["no gateway was deleted"]).await;
    let hint = hint_of(&r);
    assert_eq!(follow_hint(b, &hint).await.len(), 1, "{on}: {hint}");
    let r = b
        .run_advised(&bed::advised(&hint, "cutover acme"), &["--yes"])
        .await;
    assert_eq!(r.code, 0, "{on}: {}", r.stderr);
    assert_eq!(b.phase(NS, "acme").await.as_deref(), Some("done"), "{on}");
    // Merged: acme's source keeps the Secret, no IPsecGateway.
    merged_without_ipsecgateway(b, "flux-system").await;
    // The re-armed owner's first sync comes 3 s after the re-arm: the interrupt is before it.
    b.gitops.settings().write().unwrap().self_heal_delay_ms = 3000;
    let resume = ["cutover", "acme", "-n", NS, "--gitops", "resume", "--yes"];
    let child = b.spawn(&resume);
    bed::eventually(30, "the restore re-arms the owner", || async {
        !suspended(b, owner).await
    })
    .await;
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let r = live::finish(child).await;
    assert_eq!(r.code, 130, "{on}: {}", r.stderr);
    let err = live::flat(&r.stderr);
    assert!(!err.contains("the cutover is complete"), "{on}: {err}");
    assert!(
        err.contains("this window's own restore of kustomization/acme -n flux-system re-armed it and did not finish"),
        "{on}: {err}"
    );
    b.gitops.settings().write().unwrap().self_heal_delay_ms = 200;
    let st = live::flat(&b.step(&["status", "-n", NS], 0, &[]).await.stdout);
    for says in [
        "GitOps sync re-armed by the window's own restore, unfinished: kustomization/acme -n flux-system",
        "GitOps parent relied on: kustomization/verbund -n flux-system",
    ] {
        assert!(st.contains(says), "{on}: missing `{says}` in: {st}");
    }
    assert!(!st.contains("re-enabled by someone else"), "{on}: {st}");
    // The advised run finishes the restore as a restore: its first sync watched.
    let next = bed::advised(&hint_of(&r), "cutover acme");
    let r = b.run_advised(&next, &["--yes"]).await;
    assert_eq!(r.code, 0, "{on}: {}", r.stderr);
    let out = live::flat(&format!("{}{}", r.stdout, r.stderr));
    let resume_it = "`flux resume kustomization verbund -n flux-system`";
    for says in [
        "watching its first sync".to_string(),
        "synced: what the window made live is as it was".to_string(),
        format!(
            "kustomization/verbund -n flux-system: this window no longer relies on its suspension (kustomization/acme -n flux-system is restored); resume it when its own repository is as it should be: {resume_it}"
        ),
    ] {
        assert!(out.contains(&says), "{on}: missing `{says}` in: {out}");
    }
    for never in ["re-enabled by someone else", "is not restored", "let go"] {
        assert!(!out.contains(never), "{on}: `{never}` in: {out}");
    }
    assert!(
        !suspended(b, owner).await,
        "{on}: the owner stays suspended"
    );
    assert!(
        suspended(b, parent).await,
        "{on}: vpnmig resumed the parent"
    );
    assert!(b.get(IPSECGATEWAY, NS, "acme").await.is_none(), "{on}");
    // `status` names the parent with its command while it reads suspended.
    let left = "GitOps parent left suspended: kustomization/verbund -n flux-system (manages kustomization/acme -n flux-system; named by the window of tenant-acme/acme, journal phase done): suspended for this window, and no vpnmig window relies on it any more (kustomization/acme -n flux-system is restored)";
    let st = live::flat(&b.step(&["status", "-n", NS], 0, &[]).await.stdout);
    for says in [left, resume_it] {
        assert!(st.contains(says), "{on}: missing `{says}` in: {st}");
    }
    // Resumed: named no more.
    b.edit(KUSTOMIZATION, "flux-system", "verbund", |o| {
        o["spec"]["suspend"] = Value::Bool(false)
    })
    .await;
    let st = live::flat(&b.step(&["status", "-n", NS], 0, &[]).await.stdout);
    assert!(!st.contains("GitOps parent"), "{on}: {st}");
}

// ---------------------------------------------------------------------------------------
// Minors: the ApplicationSet parent stop's command (a21k N09's first stop), Ctrl-C during
// `deleting` (a21k N01).

/// Application acme generated by ApplicationSet `standorte` (an ownerReference to it).
fn application_set() -> String {
    let owned = ARGO.replacen(
        "kind: Application\nmetadata:\n  name: acme\n  namespace: argocd\n",
        "kind: Application\nmetadata:\n  name: acme\n  namespace: argocd\n  ownerReferences:\n  - {apiVersion: argoproj.io/v1alpha1, kind: ApplicationSet, name: standorte, uid: 6d1f3c52-0d5e-4c57-9a3e-appset000002}\n",
        1,
    );
    assert_ne!(owned, ARGO);
    format!(
        "{owned}\n---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: applicationsets.argoproj.io}}
spec:
  group: argoproj.io
  names: {{kind: ApplicationSet, listKind: ApplicationSetList, plural: applicationsets, singular: applicationset}}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {{name: standorte, namespace: argocd, uid: 6d1f3c52-0d5e-4c57-9a3e-appset000002}}
spec:
  generators: [{{list: {{elements: [{{tenant: acme}}]}}}}]
  template:
    metadata: {{name: '{{{{tenant}}}}'}}
    spec:
      project: default
      syncPolicy:
        automated: {{selfHeal: true, prune: true}}
"
    )
}

/// The ApplicationSet stop quotes the patch that sets `create-only` (as `status` does);
/// run as printed, the window goes on to done. On the code before it, the stop had no
/// command.
async fn an_application_set_stop_has_a_command_that_ends_done(b: &Bed) {
    let on = b.backend;
    bed::eventually(30, "the IPsecGateway", || async {
        !b.objects(IPSECGATEWAY, NS).await.is_empty()
    })
    .await;
    let cut = ["cutover", "acme", "-n", NS, "--gitops", "pause", "--yes"];
    let r = b
        .step(&cut, 7, &["applicationset/standorte -n argocd"])
        .await;
    let hint = hint_of(&r);
    let patch = "kubectl patch applicationset standorte -n argocd --field-manager=vpnmig --type merge -p '{\"spec\":{\"syncPolicy\":{\"applicationsSync\":\"create-only\"}}}'";
    assert!(
        live::flat(&hint).contains(&format!("`{patch}`")),
        "{on}: {hint}"
    );
    let ran = follow_hint(b, &hint).await;
    assert_eq!(ran, [patch], "{on}");
    let next = bed::advised(&hint, "cutover acme");
    let r = b.run_advised(&next, &["--yes"]).await;
    assert_eq!(r.code, 0, "{on}: {}", r.stderr);
    assert_eq!(b.phase(NS, "acme").await.as_deref(), Some("done"), "{on}");
}

/// The ApplicationSet's kind (served by [`application_set`]'s CRD).
const APPLICATIONSET: Kind = (
    "argoproj.io",
    "v1alpha1",
    "applicationsets",
    "ApplicationSet",
);
const STANDORTE: &str = "applicationset/standorte -n argocd";

/// The ApplicationSet `standorte` as its parent's source defines it: `applicationsSync:
/// sync`, so the parent's apply puts `sync` back over a `create-only` set by hand.
const STANDORTE_DEF: &str = "apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: standorte
  namespace: argocd
spec:
  generators: [{list: {elements: [{tenant: acme}]}}]
  syncPolicy: {applicationsSync: sync}
  template:
    metadata: {name: '{{tenant}}'}
    spec:
      project: default
      syncPolicy:
        automated: {selfHeal: true, prune: true}
";

/// [`application_set`] with `parent` (a Flux Kustomization or HelmRelease, or an Argo CD
/// Application) above the ApplicationSet: its source holds [`STANDORTE_DEF`] (a21m B19:
/// Flux `set-ks` applied `tenant-set`, and no stop named it).
fn set_under(parent: Level) -> String {
    let mut base = application_set();
    if parent.0 != APPLICATION {
        // Flux's kinds (the Flux cluster's first two documents) and namespace.
        let crds: Vec<&str> = FLUX.split("\n---\n").take(2).collect();
        base = format!(
            "{base}\n---\n{}\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: flux-system\n",
            crds.join("\n---\n")
        );
    }
    let (live, ns) = if parent.0 == APPLICATION {
        (argo_level(parent.1), "argocd")
    } else {
        (flux_level(parent.0, parent.1, false), "flux-system")
    };
    with_parent(&base, live.trim_end(), ns, parent.1, STANDORTE_DEF)
}

/// `applicationsSync` of the ApplicationSet, as read.
async fn applications_sync(b: &Bed) -> String {
    b.get(APPLICATIONSET, "argocd", "standorte")
        .await
        .expect("the ApplicationSet exists")["spec"]["syncPolicy"]["applicationsSync"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// a21m B19: `parent` applies the ApplicationSet that owns acme's Application. The stop
/// names the chain above the ApplicationSet, the parent's suspension first, then the
/// set's `create-only`. `set_alone_first`: the ApplicationSet's patch alone is run first
/// (what every stop said before): the parent puts `sync` back, and the next stop says
/// that it applied it back, never the identical stop. Followed literally: done, and
/// `status` names both as relied on. On the code before it, the parent was never named
/// and the rounds looped.
async fn a_parent_above_an_application_set_is_named_first_and_ends_done(
    b: &Bed,
    parent: Level,
    set_alone_first: bool,
) {
    let on = b.backend;
    bed::eventually(30, "the IPsecGateway", || async {
        !b.objects(IPSECGATEWAY, NS).await.is_empty()
    })
    .await;
    bed::eventually(30, "the parent applies the ApplicationSet", || async {
        b.get(APPLICATIONSET, "argocd", "standorte")
            .await
            .is_some_and(|o| markers(&o).contains(parent.1))
    })
    .await;
    let cut = ["cutover", "acme", "-n", NS, "--gitops", "pause", "--yes"];
    let first = b.step(&cut, 7, &["no gateway was deleted"]).await;
    nothing_deleted(b).await;
    let flat = live::flat(&first.stderr);
    let managed = format!("{STANDORTE} is itself managed by {}", shown(parent));
    assert!(
        flat.contains(&managed),
        "{on}: missing `{managed}` in: {flat}"
    );
    let hint = live::flat(&hint_of(&first));
    let parent_first = at(&hint, &format!("suspend {}", shown(parent)), on);
    let set_then = at(
        &hint,
        &format!("set `spec.syncPolicy.applicationsSync: create-only` on {STANDORTE}"),
        on,
    );
    assert!(parent_first < set_then, "{on}: the parent first: {hint}");
    let mut last = first;
    if set_alone_first {
        let patch = live::flat(&hint_of(&last))
            .split('`')
            .find(|c| c.starts_with("kubectl patch applicationset standorte"))
            .expect("the ApplicationSet's patch")
            .to_string();
        shell(b, &patch).await;
        bed::eventually(20, "the parent puts `sync` back", || async {
            applications_sync(b).await == "sync"
        })
        .await;
        let r = b.step(&cut, 7, &["no gateway was deleted"]).await;
        let flat = live::flat(&r.stderr);
        assert_ne!(
            flat,
            live::flat(&last.stderr),
            "{on}: the identical stop twice"
        );
        let again = format!(
            "({STANDORTE} regenerates its Applications again although an earlier run of this window named it: if `applicationsSync` was set to `create-only` since, {} applied it back; its `create-only` alone does not hold)",
            shown(parent)
        );
        assert!(flat.contains(&again), "{on}: missing `{again}` in: {flat}");
        let hint = live::flat(&hint_of(&r));
        assert!(
            at(&hint, &format!("suspend {}", shown(parent)), on)
                < at(&hint, "applicationsSync: create-only` on", on),
            "{on}: the parent first: {hint}"
        );
        last = r;
    }
    let mut rounds = 0;
    loop {
        rounds += 1;
        assert!(
            rounds <= 3,
            "{on}: not done after 3 rounds:\n{}",
            last.stderr
        );
        let hint = hint_of(&last);
        let ran = follow_hint(b, &hint).await;
        assert!(!ran.is_empty(), "{on}: nothing to do in: {hint}");
        let next = bed::advised(&hint, "cutover acme");
        let r = b.run_advised(&next, &["--yes"]).await;
        if r.code == 0 {
            break;
        }
        assert_ne!(
            live::flat(&r.stderr),
            live::flat(&last.stderr),
            "{on}: the identical stop twice"
        );
        last = r;
    }
    assert_eq!(b.phase(NS, "acme").await.as_deref(), Some("done"), "{on}");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(
        suspended(b, parent).await,
        "{on}: {} syncs again",
        shown(parent)
    );
    assert_eq!(applications_sync(b).await, "create-only", "{on}");
    let st = live::flat(&b.step(&["status", "-n", NS], 0, &[]).await.stdout);
    for l in [shown(parent), STANDORTE.to_string()] {
        let relied = format!("GitOps parent relied on: {l}");
        assert!(st.contains(&relied), "{on}: missing `{relied}` in: {st}");
    }
}

/// a21m B16: a parent stop leaves the window at `started` (nothing deleted); the
/// repository change is merged early, and the owner's sync prunes the IPsecGateway and
/// applies the VPNGateway itself. `status` says the journal is there and the gateway is
/// gone (never "the IPsecGateway is untouched"), with the cutover as the way on (C09/C10:
/// it adopts what the owner applied); the cutover never says "its journal … is gone" and
/// stops on the parent first. On the code before it, both said the opposite.
async fn an_early_merge_before_the_delete_is_said_as_it_is(b: &Bed) {
    let on = b.backend;
    bed::eventually(30, "the IPsecGateway", || async {
        !b.objects(IPSECGATEWAY, NS).await.is_empty()
    })
    .await;
    let source = b
        .get(CONFIGMAP, "flux-system", "acme-source")
        .await
        .unwrap()["data"]["manifests"]
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
    let cut = ["cutover", "acme", "-n", NS, "--gitops", "pause", "--yes"];
    b.step(&cut, 7, &["no gateway was deleted"]).await;
    assert_eq!(
        b.phase(NS, "acme").await.as_deref(),
        Some("started"),
        "{on}"
    );
    b.edit(CONFIGMAP, "flux-system", "acme-source", |o| {
        o["data"]["manifests"] = Value::String(rewritten.clone())
    })
    .await;
    bed::eventually(
        30,
        "the owner prunes the IPsecGateway and applies the VPNGateway",
        || async {
            b.get(IPSECGATEWAY, NS, "acme").await.is_none()
                && b.get(VPNGATEWAY, NS, "acme").await.is_some()
        },
    )
    .await;
    assert!(
        b.journal(NS, "acme").await.is_some(),
        "{on}: the journal is there"
    );
    let st = live::flat(&b.step(&["status", "-n", NS], 0, &[]).await.stdout);
    assert!(
        st.contains("window under way: tenant-acme/acme at journal phase started: the window of tenant-acme/acme is at journal phase started (its journal, ConfigMap tenant-acme/vpnmig-acme, is there and holds the IPsecGateway's manifest): vpnmig deleted nothing, but ipsecgateway/acme -n tenant-acme is gone"),
        "{on}: {st}"
    );
    // The way on is the cutover, which adopts what the owner applied (C09/C10), never
    // the rollback that would delete the client's only VPNPeer.
    assert!(
        st.contains("`vpnmig cutover acme -n tenant-acme` finishes the window with what the owner's source applied"),
        "{on}: {st}"
    );
    // The cutover goes on from there: the parent still re-arms the owner, so it stops
    // on it first, nothing adopted (tests/live_early.rs follows it to done).
    let r = b
        .step(
            &["cutover", "acme", "-n", NS, "--yes"],
            7,
            &["kustomization/verbund -n flux-system"],
        )
        .await;
    assert!(
        !live::flat(&r.stderr).contains("is gone: nothing to cut over"),
        "{on}: {}",
        r.stderr
    );
    assert_eq!(
        b.phase(NS, "acme").await.as_deref(),
        Some("started"),
        "{on}"
    );
    assert!(!st.contains("the IPsecGateway is untouched"), "{on}: {st}");
}

/// Ctrl-C while the old gateway's delete unwinds: the hint says what was interrupted and
/// what is true, then the command; the command ends done. On the code before it, the hint
/// began "the tunnel is down or unverified".
async fn ctrl_c_during_the_delete_says_what_was_interrupted(b: &Bed) {
    let on = b.backend;
    b.fault("ipsecgateway/tenant-acme/acme", |f| {
        f.stuck_finalizer = true
    });
    let child = b.spawn(&["cutover", "acme", "--yes"]);
    bed::eventually(20, "the delete", || async {
        b.deleting(IPSECGATEWAY, NS, "acme").await
    })
    .await;
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let r = live::finish(child).await;
    assert_eq!(r.code, 130, "{on}: {}", r.stderr);
    let hint = live::flat(&hint_of(&r));
    assert!(
        hint.starts_with(
            "interrupted while the IPsecGateway's delete unwinds: the delete was sent, so the old tunnel is going down or down, and nothing new is applied yet (phase deleting): `vpnmig cutover acme -n tenant-acme --yes` resumes from `deleting`"
        ),
        "{on}: {hint}"
    );
    b.fault("ipsecgateway/tenant-acme/acme", |f| {
        f.stuck_finalizer = false
    });
    let next = bed::advised(&hint, "cutover acme");
    let r = b.run_advised(&next, &["--yes"]).await;
    assert_eq!(r.code, 0, "{on}: {}", r.stderr);
}

// ---------------------------------------------------------------------------------------
// A cycle of parents relied on whole, and a level above another window's relied-on
// parent (a21m B03, B05, B07).

/// A cycle of `members` above acme (`argo`: an Application, else a Kustomization): the
/// first member applies acme and the second, each member the next, the last the first.
fn cycle_over(argo: bool, members: &[Level]) -> String {
    let mut base = chain_over(argo, &[]);
    // `chain_over` with no level is the cluster alone; the members' own tools' kinds.
    if !argo && members.iter().any(|l| l.0 == APPLICATION) {
        let crd = ARGO.split("\n---\n").next().expect("the Application CRD");
        base = format!(
            "{crd}\n---\n{base}\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: argocd\n"
        );
    }
    let def = |l: Level| {
        if l.0 == APPLICATION {
            argo_level(l.1)
        } else {
            flux_level(l.0, l.1, true)
        }
    };
    for (k, &m) in members.iter().enumerate() {
        let next = def(members[(k + 1) % members.len()]);
        let holds = if k == 0 {
            format!("{}---\n{next}", if argo { ACME_APP } else { ACME_KS })
        } else {
            next
        };
        let live = if m.0 == APPLICATION {
            argo_level(m.1)
        } else {
            flux_level(m.0, m.1, false)
        };
        base = with_parent(&base, live.trim_end(), level_ns(m), m.1, &holds);
    }
    base
}

/// Every `kubectl patch …` and `kubectl delete …` a hint quotes, run as printed and in its
/// order. Returns them. `plain`: each `kubectl patch` without its `--field-manager=vpnmig`, as a person who
/// shortens it runs it (kubectl's own manager, `kubectl-patch`).
async fn follow_all_as(b: &Bed, hint: &str, plain: bool) -> Vec<String> {
    let flat = live::flat(hint);
    let mut ran = Vec::new();
    for c in flat.split('`').skip(1).step_by(2) {
        if c.starts_with("kubectl patch ") || c.starts_with("kubectl delete ") {
            let c = if plain {
                c.replace(" --field-manager=vpnmig", "")
            } else {
                c.to_string()
            };
            shell(b, &c).await;
            ran.push(c);
        }
    }
    ran
}

/// Resume `l` as a person does (`flux resume`, `argocd app set … --sync-policy automated`).
async fn resume(b: &Bed, l: Level) {
    b.edit(l.0, level_ns(l), l.1, |o| {
        if l.0 == APPLICATION {
            o["spec"]["syncPolicy"]["automated"] = serde_json::json!({"selfHeal": true});
        } else {
            o["spec"]["suspend"] = Value::Bool(false);
        }
    })
    .await;
}

/// The command `status` and the restore give to resume `l` by hand.
fn resume_command(l: Level) -> String {
    match l.0.3 {
        "Application" => format!("`argocd app set argocd/{} --sync-policy automated`", l.1),
        k => format!("`flux resume {} {} -n flux-system`", k.to_lowercase(), l.1),
    }
}

/// Follow the stops from `first` literally (every `kubectl` command of the hint in its
/// order, then the advised `vpnmig cutover`), at most 3 rounds, until a run ends 0; never
/// the identical stop twice. Returns the last run.
async fn follow_to_the_end(b: &Bed, first: live::Run, extra: &[&str]) -> live::Run {
    follow_to_the_end_as(b, first, extra, false).await
}

/// [`follow_to_the_end`], each patch `plain` ([`follow_all_as`]).
async fn follow_to_the_end_as(b: &Bed, first: live::Run, extra: &[&str], plain: bool) -> live::Run {
    let on = b.backend;
    let mut last = first;
    for round in 1..=3 {
        let hint = hint_of(&last);
        let ran = follow_all_as(b, &hint, plain).await;
        assert!(!ran.is_empty(), "{on}: nothing to do in: {hint}");
        let next = bed::advised(&hint, "cutover acme");
        let r = b.run_advised(&next, extra).await;
        if r.code == 0 {
            return r;
        }
        assert_ne!(
            live::flat(&r.stderr),
            live::flat(&last.stderr),
            "{on}: the identical stop twice (round {round})"
        );
        last = r;
    }
    panic!("{on}: not done after 3 rounds:\n{}", last.stderr);
}

/// a21m B03, B05: a cycle of parents above acme (`owner`; `members`, the first applying
/// acme). The stop names the cycle; followed, the window ends done relying on every
/// member (its journal records each, `relies: true`), and `status` names each as relied
/// on, none "left suspended", none with a resume. A member resumed by someone re-arms the
/// cycle and acme, which re-creates the IPsecGateway: the finished window's stop (exit 5)
/// names the members that act, each with its command, before acme's own suspension;
/// followed literally, it ends (never the identical stop, at most 3 rounds) with the
/// IPsecGateway gone, every member suspended and still relied on (Argo CD too: a21n C13,
/// where that run let go of acme, "its policy changed since"). After the merge and the
/// restore, every member is named "left suspended" with its resume. On the code before
/// it, the third member was forgotten (Flux) or called "left … no vpnmig window relies on
/// it" (Argo CD) while acme was held, and the stop after the re-arm named acme only and
/// looped.
async fn a_cycle_is_relied_on_whole_and_named_to_the_end(b: &Bed, owner: Level, members: &[Level]) {
    let on = b.backend;
    let mut levels: Vec<Level> = members[1..].to_vec();
    levels.push(members[0]);
    chain_applied(b, owner, &levels).await;
    let (first, second) = (members[0], members[1]);
    bed::eventually(30, "the first member applies the second", || async {
        b.get(second.0, level_ns(second), second.1)
            .await
            .is_some_and(|o| markers(&o).contains(first.1))
    })
    .await;
    let cut = ["cutover", "acme", "-n", NS, "--gitops", "pause", "--yes"];
    let r = b.step(&cut, 7, &["no gateway was deleted"]).await;
    let flat = live::flat(&r.stderr);
    assert!(flat.contains("form a cycle"), "{on}: {flat}");
    follow_to_the_end(b, r, &["--yes"]).await;
    assert_eq!(b.phase(NS, "acme").await.as_deref(), Some("done"), "{on}");
    // The journal relies on every member.
    let j = b.journal(NS, "acme").await.expect("the journal");
    let parents = j["gitopsParents"].as_array().cloned().unwrap_or_default();
    for &m in members {
        assert!(
            parents
                .iter()
                .any(|p| p["owner"]["name"] == m.1 && p["relies"] == true),
            "{on}: {} not relied on in {parents:?}",
            m.1
        );
    }
    assert!(
        parents.iter().all(|p| p["relies"] == true),
        "{on}: {parents:?}"
    );
    let st = live::flat(&b.step(&["status", "-n", NS], 0, &[]).await.stdout);
    for &m in members {
        let relied = format!("GitOps parent relied on: {}", shown(m));
        assert_eq!(
            st.matches(&relied).count(),
            1,
            "{on}: `{relied}` once in: {st}"
        );
        assert!(
            !st.contains(&resume_command(m)),
            "{on}: a resume of {}: {st}",
            m.1
        );
    }
    for never in ["left suspended", "no vpnmig window relies on it"] {
        assert!(!st.contains(never), "{on}: `{never}` in: {st}");
    }
    // Someone resumes a member: the cycle and acme are re-armed, the gateway is back.
    resume(b, members[members.len() - 1]).await;
    bed::eventually(
        30,
        "the re-armed cycle re-creates the IPsecGateway",
        || async { b.get(IPSECGATEWAY, NS, "acme").await.is_some() },
    )
    .await;
    let plain = ["cutover", "acme", "-n", NS, "--yes"];
    let r = b.step(&plain, 5, &[]).await;
    let hint = live::flat(&hint_of(&r));
    let own = format!("kubectl patch {} acme -n ", owner.0.3.to_lowercase());
    let owner_at = at(&hint, &own, on);
    for &m in members {
        let asks = format!("suspend {} for the window (`kubectl patch", shown(m));
        let k = at(&hint, &asks, on);
        assert!(
            k < owner_at,
            "{on}: {} after acme's suspension: {hint}",
            m.1
        );
    }
    let ended = follow_to_the_end(b, r, &["--yes"]).await;
    // Longer than a sync's delay: a member left syncing would have re-armed acme by now.
    tokio::time::sleep(Duration::from_millis(4000)).await;
    assert!(
        b.get(IPSECGATEWAY, NS, "acme").await.is_none(),
        "{on}: the IPsecGateway is back"
    );
    for &m in members.iter().chain([&owner]) {
        assert!(suspended(b, m).await, "{on}: {} syncs again", shown(m));
    }
    // acme suspended again as the stop asked is the window's suspension again, Argo CD
    // too (a21n C13: the run that ended let go of it, "its policy changed since the
    // window paused it", and with it the reliance on every member): every member is still
    // relied on, none "no longer relied on".
    let out = live::flat(&format!("{}{}", ended.stdout, ended.stderr));
    assert!(!out.contains("policy changed since"), "{on}: {out}");
    let st = live::flat(&b.step(&["status", "-n", NS], 0, &[]).await.stdout);
    for &m in members {
        let relied = format!("GitOps parent relied on: {}", shown(m));
        assert_eq!(
            st.matches(&relied).count(),
            1,
            "{on}: `{relied}` once in: {st}"
        );
    }
    for never in ["no longer relied on", "may be resumed", "left suspended"] {
        assert!(!st.contains(never), "{on}: `{never}` in: {st}");
    }
    // Merged, restored: every member left suspended, each with its resume.
    merged_without_ipsecgateway(b, level_ns(owner)).await;
    let restore = ["cutover", "acme", "-n", NS, "--gitops", "resume", "--yes"];
    let r = b.step(&restore, 0, &[]).await;
    assert!(
        !suspended(b, owner).await,
        "{on}: acme stays suspended: {}\nafter: {}{}",
        r.stderr,
        ended.stdout,
        ended.stderr
    );
    let st = live::flat(&b.step(&["status", "-n", NS], 0, &[]).await.stdout);
    for &m in members {
        let left = format!("GitOps parent left suspended: {}", shown(m));
        assert_eq!(st.matches(&left).count(), 1, "{on}: `{left}` once in: {st}");
        assert!(
            st.contains(&resume_command(m)),
            "{on}: no resume of {}: {st}",
            m.1
        );
        assert!(suspended(b, m).await, "{on}: vpnmig resumed {}", m.1);
    }
}

/// a21m B07: the chain `levels` (top-most first) above acme. Window 1's stop names every
/// level, they are suspended as it says, and its rollback (nothing deleted) closes it.
/// Window 2 then ends done relying on every level, the top too (its journal, `status
/// -A`), and nothing offers the top's resume while window 2 relies on the level below
/// it. On the code before it, window 2 relied on the lowest level only, and the top's
/// resume (advised by window 1) re-armed the levels below it and acme.
async fn a_level_above_a_relied_on_parent_is_relied_on_by_the_next_window(
    b: &Bed,
    owner: Level,
    levels: &[Level],
) {
    let on = b.backend;
    chain_applied(b, owner, levels).await;
    let cut = ["cutover", "acme", "-n", NS, "--gitops", "pause", "--yes"];
    let r = b.step(&cut, 7, &["no gateway was deleted"]).await;
    let ran = follow_hint(b, &hint_of(&r)).await;
    assert_eq!(ran.len(), levels.len(), "{on}: {}", r.stderr);
    let r = b
        .step(&["rollback", "acme", "-n", NS, "--yes"], 0, &[])
        .await;
    let out = live::flat(&format!("{}{}", r.stdout, r.stderr));
    assert!(out.contains(&resume_command(levels[0])), "{on}: {out}");
    nothing_deleted(b).await;
    // Window 2.
    let r = b.vpnmig(&cut).await;
    let r = if r.code == 7 {
        follow_to_the_end(b, r, &["--yes"]).await
    } else {
        r
    };
    assert_eq!(r.code, 0, "{on}: {}", r.stderr);
    assert_eq!(b.phase(NS, "acme").await.as_deref(), Some("done"), "{on}");
    let j = b.journal(NS, "acme").await.expect("the journal");
    let parents = j["gitopsParents"].as_array().cloned().unwrap_or_default();
    for &l in levels {
        assert!(
            parents
                .iter()
                .any(|p| p["owner"]["name"] == l.1 && p["relies"] == true),
            "{on}: {} not relied on by window 2: {parents:?}",
            l.1
        );
    }
    let st = live::flat(&b.step(&["status", "-A"], 0, &[]).await.stdout);
    for &l in levels {
        let relied = format!("GitOps parent relied on: {}", shown(l));
        assert!(st.contains(&relied), "{on}: missing `{relied}` in: {st}");
        assert!(
            !st.contains(&resume_command(l)),
            "{on}: a resume of {}: {st}",
            l.1
        );
    }
    assert!(!st.contains("left suspended"), "{on}: {st}");
    for &l in levels.iter().chain([&owner]) {
        assert!(suspended(b, l).await, "{on}: {} syncs", shown(l));
    }
}

const KREIS3: [Level; 3] = [
    (KUSTOMIZATION, "kreis-a"),
    (KUSTOMIZATION, "kreis-b"),
    (KUSTOMIZATION, "kreis-c"),
];
const RUHR3: [Level; 3] = [
    (APPLICATION, "ruhr-eins"),
    (APPLICATION, "ruhr-zwei"),
    (APPLICATION, "ruhr-drei"),
];
/// Four members of two kinds: Kustomizations and a HelmRelease.
const MIXED4: [Level; 4] = [
    (KUSTOMIZATION, "rad-a"),
    (HELMRELEASE, "rad-b"),
    (KUSTOMIZATION, "rad-c"),
    (KUSTOMIZATION, "rad-d"),
];
const BERG: [Level; 2] = [(KUSTOMIZATION, "gipfel"), (KUSTOMIZATION, "hang")];
/// The same with a HelmRelease in the middle.
const BERG_HELM: [Level; 2] = [(KUSTOMIZATION, "gipfel"), (HELMRELEASE, "hang")];

fn cycle_scenario(yaml: String) -> Scenario {
    let mut s = scenario(yaml);
    // The members are suspended one right after the other, as the hint says: up to five
    // kubectl runs, which a loaded machine with the real control plane spreads over more
    // than a second.
    s.settings.gitops.self_heal_delay_ms = 3000;
    s
}

crate::rows! {
    /// a21m B03: a Flux 3-cycle above acme.
    a_flux_three_cycle_is_relied_on_whole_and_named_to_the_end: bed::Row {
        scenario: || cycle_scenario(cycle_over(false, &KREIS3)),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_cycle_is_relied_on_whole_and_named_to_the_end(b, ACME_KS_OWNER, &KREIS3)),
    },
    /// a21m B05: an Argo CD 3-cycle above acme.
    an_argo_three_cycle_is_relied_on_whole_and_named_to_the_end: bed::Row {
        scenario: || cycle_scenario(cycle_over(true, &RUHR3)),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_cycle_is_relied_on_whole_and_named_to_the_end(b, ACME_APP_OWNER, &RUHR3)),
    },
    /// A 4-cycle of Kustomizations and a HelmRelease above acme.
    a_mixed_four_cycle_is_relied_on_whole_and_named_to_the_end: bed::Row {
        scenario: || cycle_scenario(cycle_over(false, &MIXED4)),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_cycle_is_relied_on_whole_and_named_to_the_end(b, ACME_KS_OWNER, &MIXED4)),
    },
    /// a21m B07: gipfel → hang → acme; window 1 rolled back, window 2 relies on both.
    a_level_above_the_parent_is_relied_on_by_the_next_window: bed::Row {
        scenario: || scenario(chain(&BERG)),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_level_above_a_relied_on_parent_is_relied_on_by_the_next_window(b, ACME_KS_OWNER, &BERG)),
    },
    /// The same with a HelmRelease in the middle.
    a_level_above_a_helm_release_parent_is_relied_on_by_the_next_window: bed::Row {
        scenario: || scenario(chain(&BERG_HELM)),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_level_above_a_relied_on_parent_is_relied_on_by_the_next_window(b, ACME_KS_OWNER, &BERG_HELM)),
    },
}

crate::rows! {
    /// Five Flux levels above the owner (a21k N07's layout, names of its own): followed to
    /// its top, not cut at the fourth level.
    five_flux_levels_are_named_from_the_top_and_end_done: bed::Row {
        scenario: || scenario(chain(&FLUX_FIVE)),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_chain_is_named_from_its_top_and_its_advice_ends_done(b, ACME_KS_OWNER, &FLUX_FIVE, false, &[])),
    },
    /// Six levels, a HelmRelease at the top over five Kustomizations.
    a_helm_release_over_five_flux_levels_is_named_first_and_ends_done: bed::Row {
        scenario: || scenario(chain(&HELM_OVER_FIVE)),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_chain_is_named_from_its_top_and_its_advice_ends_done(b, ACME_KS_OWNER, &HELM_OVER_FIVE, false, &[])),
    },
    /// Nine Argo CD Applications above acme, one past the eight levels vpnmig follows:
    /// the stop says so and names the ninth by the marker on the eighth, first.
    an_argo_chain_past_the_levels_followed_says_so_and_ends_done: bed::Row {
        scenario: || scenario(chain(&ARGO_NINE)),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_chain_is_named_from_its_top_and_its_advice_ends_done(b, ACME_APP_OWNER, &ARGO_NINE, true, &[])),
    },
    /// a21l A03: an Argo CD Application above a HelmRelease, known by the HelmRelease's
    /// own tracking label and annotation.
    an_argo_application_above_a_helm_release_is_named_and_ends_done: bed::Row {
        scenario: || scenario(chain_over(false, &ARGO_OVER_HELM)),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(above_a_helm_release_is_named_and_ends_done(b, &ARGO_OVER_HELM)),
    },
    /// a21l A07: a Flux Kustomization above a HelmRelease, known by its kustomize.toolkit
    /// labels on the HelmRelease.
    a_kustomization_above_a_helm_release_is_named_and_ends_done: bed::Row {
        scenario: || scenario(chain(&FLUX_OVER_HELM)),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(above_a_helm_release_is_named_and_ends_done(b, &FLUX_OVER_HELM)),
    },
    /// a21l A07: a HelmRelease ↔ Kustomization cycle above the owner.
    a_helm_release_kustomization_cycle_is_named_as_a_cycle_and_ends_done: bed::Row {
        scenario: || {
            let mut s = scenario(cycle());
            // Both members are suspended one right after the other, as the hint says.
            s.settings.gitops.self_heal_delay_ms = 1000;
            s
        },
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_cycle_is_named_as_one_and_ends_done(b)),
    },
    /// a21l A03: two levels past the eight read in full; the one past the limit has its
    /// own parent, which is followed by its markers and named first.
    an_argo_chain_two_past_the_levels_followed_names_its_top_and_ends_done: bed::Row {
        scenario: || scenario(chain(&ARGO_TEN)),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_chain_is_named_from_its_top_and_its_advice_ends_done(b, ACME_APP_OWNER, &ARGO_TEN, true, &[])),
    },
    /// a21l A04's minor: an Argo CD parent outside `argocd` is named in its namespace by
    /// every command, the argocd CLI's too.
    an_argo_parent_in_another_namespace_is_named_there: bed::Row {
        scenario: || scenario(argo_parent_elsewhere()),
        only: None,
        after: bed::After::acme("IPsecGateway"),
        steps: |b| Box::pin(an_argo_parent_elsewhere_is_named_in_its_namespace(b)),
    },
    /// a21k N11 with a Flux parent `verbund`.
    a_deferred_window_names_its_flux_parent_until_the_rollback_closes_it: bed::Row {
        scenario: || scenario(chain(&[(KUSTOMIZATION, "verbund")])),
        only: None,
        after: bed::After::acme("IPsecGateway"),
        steps: |b| Box::pin(a_deferred_window_names_its_parent_until_closed(b, ACME_KS_OWNER, (KUSTOMIZATION, "verbund"))),
    },
    /// a21l A04: an Argo CD app-of-apps parent `wurzel` over a Flux owner.
    a_deferred_window_names_its_argo_parent_over_a_flux_owner_until_the_rollback_closes_it: bed::Row {
        scenario: || scenario(chain_over(false, &[(APPLICATION, "wurzel")])),
        only: None,
        after: bed::After::acme("IPsecGateway"),
        steps: |b| Box::pin(a_deferred_window_names_its_parent_until_closed(b, ACME_KS_OWNER, (APPLICATION, "wurzel"))),
    },
    /// The same with an Argo CD app-of-apps parent `wurzel`.
    a_deferred_window_names_its_argo_parent_until_the_rollback_closes_it: bed::Row {
        scenario: || scenario(chain(&[(APPLICATION, "wurzel")])),
        only: None,
        after: bed::After::acme("IPsecGateway"),
        steps: |b| Box::pin(a_deferred_window_names_its_parent_until_closed(b, ACME_APP_OWNER, (APPLICATION, "wurzel"))),
    },
    /// a21l A06: `--gitops resume` interrupted right after its re-arm, a Flux parent above.
    an_interrupted_restore_is_finished_and_its_flux_parent_named_until_resumed: bed::Row {
        scenario: || scenario(chain(&[(KUSTOMIZATION, "verbund")])),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(an_interrupted_restore_is_finished_and_its_parent_named_until_resumed(b)),
    },
    /// a21k N09's first stop: an ApplicationSet parent.
    an_application_set_stop_has_a_command_to_copy: bed::Row {
        scenario: || scenario(application_set()),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(an_application_set_stop_has_a_command_that_ends_done(b)),
    },
    /// a21m B19: a Flux Kustomization applies the ApplicationSet (`applicationsSync:
    /// sync` in its source); the set's `create-only` alone is undone, and said so.
    a_kustomization_above_an_application_set_is_named_first_and_ends_done: bed::Row {
        scenario: || scenario(set_under((KUSTOMIZATION, "mandant"))),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_parent_above_an_application_set_is_named_first_and_ends_done(b, (KUSTOMIZATION, "mandant"), true)),
    },
    /// a21m B19: an Argo CD app-of-apps applies the ApplicationSet.
    an_argo_application_above_an_application_set_is_named_first_and_ends_done: bed::Row {
        scenario: || scenario(set_under((APPLICATION, "wurzel"))),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_parent_above_an_application_set_is_named_first_and_ends_done(b, (APPLICATION, "wurzel"), false)),
    },
    /// a21m B19: a HelmRelease applies the ApplicationSet (field manager helm-controller).
    a_helm_release_above_an_application_set_is_named_first_and_ends_done: bed::Row {
        scenario: || scenario(set_under((HELMRELEASE, "sockel"))),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_parent_above_an_application_set_is_named_first_and_ends_done(b, (HELMRELEASE, "sockel"), false)),
    },
    /// a21m B16: an early merge prunes the IPsecGateway of a window at `started`.
    an_early_merge_before_the_delete_is_said_as_it_is: bed::Row {
        scenario: || scenario(chain(&[(KUSTOMIZATION, "verbund")])),
        only: None,
        // Ends with the window open at `started` beside the owner's VPNGateway, on purpose.
        after: None,
        steps: |b| Box::pin(an_early_merge_before_the_delete_is_said_as_it_is(b)),
    },
    /// a21k N01: Ctrl-C during `deleting`.
    ctrl_c_during_deleting_says_what_was_interrupted: bed::Row {
        scenario: || Scenario::new(ACME, live::pool("10.250.3.0/24")),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(ctrl_c_during_the_delete_says_what_was_interrupted(b)),
    },
}

// ---------------------------------------------------------------------------------------
// A re-arm after `done`, its stop followed to the letter (a21n C13/C12, C14).

/// The journal's record of acme, the owner.
async fn owner_record(b: &Bed) -> Value {
    let j = b.journal(NS, "acme").await.expect("the journal");
    j["gitops"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["owner"]["name"] == "acme")
        .cloned()
        .unwrap_or_else(|| panic!("{}: no record of acme in {j}", b.backend))
}

/// The repository change merged: acme's source (ConfigMap `acme-source` in `ns`) keeps
/// every document but the IPsecGateway.
async fn merged_without_ipsecgateway(b: &Bed, ns: &str) {
    b.edit(CONFIGMAP, ns, "acme-source", |o| {
        let kept: Vec<&str> = o["data"]["manifests"]
            .as_str()
            .unwrap()
            .split("\n---\n")
            .filter(|d| !d.contains("kind: IPsecGateway"))
            .collect();
        o["data"]["manifests"] = Value::String(kept.join("\n---\n"));
    })
    .await;
}

/// `status -n NS -o json`, parsed, with its text.
async fn status_json(b: &Bed) -> (Value, String) {
    let r = b.step(&["status", "-n", NS, "-o", "json"], 0, &[]).await;
    let doc: Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("{}: status -o json: {e}: {}", b.backend, r.stdout));
    (doc, r.stdout)
}

/// The chain `levels` (top-most first) above acme, relied on, the window done with acme
/// kept suspended (its source still defines the IPsecGateway: not merged).
async fn done_relying_on(b: &Bed, owner: Level, levels: &[Level]) {
    let on = b.backend;
    chain_applied(b, owner, levels).await;
    let cut = ["cutover", "acme", "-n", NS, "--gitops", "pause", "--yes"];
    let r = b.step(&cut, 7, &["no gateway was deleted"]).await;
    follow_to_the_end(b, r, &["--yes"]).await;
    assert_eq!(b.phase(NS, "acme").await.as_deref(), Some("done"), "{on}");
    assert!(suspended(b, owner).await, "{on}: acme restored unmerged");
}

/// a21n C13/C12: after `done`, the top level is resumed by someone; it re-arms the levels
/// below and acme, whose sync re-creates the IPsecGateway. The next cutover stops (exit
/// 5) asking to suspend the levels and acme (`kubectl patch … --field-manager=vpnmig`) and
/// to delete the gateway; followed to the letter (at most 3 rounds, never the identical
/// stop), the window ends 0 and holds acme again: its journal records the re-pause
/// (`asked.adopted` for Argo CD) and relies on every level; `status -o json` shows acme
/// suspended and every level relied on, nothing "no longer relied on" or "may be resumed";
/// nothing syncs, the gateway stays gone. On the code before it (Argo CD), the run let go
/// of acme ("its policy changed since the window paused it") and `status` called each
/// level "no longer relied on … may be resumed" while acme's source still defined the
/// gateway.
async fn a_re_arm_after_done_followed_to_the_letter_is_the_window_s_again(
    b: &Bed,
    owner: Level,
    levels: &[Level],
) {
    a_re_arm_after_done_followed_is_the_window_s_again(b, owner, levels, false).await;
}

/// [`a_re_arm_after_done_followed_to_the_letter_is_the_window_s_again`]; `plain`: each
/// patch run without its `--field-manager=vpnmig` (a21o D07, D09: Flux read that
/// suspension as "its policy changed since" and let go of acme while its source still
/// defined the gateway).
async fn a_re_arm_after_done_followed_is_the_window_s_again(
    b: &Bed,
    owner: Level,
    levels: &[Level],
    plain: bool,
) {
    let on = b.backend;
    done_relying_on(b, owner, levels).await;
    resume(b, levels[0]).await;
    bed::eventually(
        30,
        "the re-armed owner re-creates the IPsecGateway",
        || async { b.get(IPSECGATEWAY, NS, "acme").await.is_some() },
    )
    .await;
    let r = b
        .step(&["cutover", "acme", "-n", NS, "--yes"], 5, &[])
        .await;
    let ended = follow_to_the_end_as(b, r, &["--yes"], plain).await;
    let out = live::flat(&format!("{}{}", ended.stdout, ended.stderr));
    for never in [
        "policy changed since",
        "is not restored",
        "no longer relies on its suspension",
        "may be resumed",
    ] {
        assert!(!out.contains(never), "{on}: `{never}` in: {out}");
    }
    // Longer than a sync's delay: a level left syncing would have re-armed acme by now.
    tokio::time::sleep(Duration::from_millis(4000)).await;
    assert!(
        b.get(IPSECGATEWAY, NS, "acme").await.is_none(),
        "{on}: the IPsecGateway is back"
    );
    for &l in levels.iter().chain([&owner]) {
        assert!(suspended(b, l).await, "{on}: {} syncs again", shown(l));
    }
    let rec = owner_record(b).await;
    assert_eq!(rec["paused"], true, "{on}: {rec}");
    assert!(rec["letGo"].is_null(), "{on}: let go: {rec}");
    assert!(rec["restoredAt"].is_null(), "{on}: {rec}");
    if owner.0 == APPLICATION {
        assert!(rec["asked"]["adopted"].is_string(), "{on}: {rec}");
        assert_eq!(rec["lastSync"], rec["asked"]["lastSync"], "{on}: {rec}");
    }
    let j = b.journal(NS, "acme").await.expect("the journal");
    let parents = j["gitopsParents"].as_array().cloned().unwrap_or_default();
    for &l in levels {
        assert!(
            parents
                .iter()
                .any(|p| p["owner"]["name"] == l.1 && p["relies"] == true),
            "{on}: {} not relied on: {parents:?}",
            l.1
        );
    }
    let (doc, text) = status_json(b).await;
    assert!(!text.contains("may be resumed"), "{on}: {text}");
    let owners = doc["suspendedOwners"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        owners
            .iter()
            .any(|o| o["owner"] == shown(owner) && o["live"] == "suspended"),
        "{on}: acme not held suspended: {owners:?}"
    );
    let relied = doc["reliedOnParents"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for &l in levels {
        assert!(
            relied
                .iter()
                .any(|p| p["parent"] == shown(l) && p["live"] == "suspended"),
            "{on}: {} not relied on in {relied:?}",
            shown(l)
        );
    }
    assert!(
        relied.iter().all(|p| p["live"] != "let-go"),
        "{on}: {relied:?}"
    );
}

/// The genuine change: after `done`, someone else re-arms acme alone (its levels stay
/// suspended), it syncs and re-creates the IPsecGateway, and they suspend it again their
/// own way (Argo CD: an edit; Flux: another field manager) and delete the gateway, with
/// no vpnmig stop in between. The next cutover still lets go of acme, "its policy changed
/// since the window paused it", and now says that acme's source still defines
/// ipsecgateway/acme and that the merge comes first; `status` says so for each level
/// (Argo CD, whose comparison shows the source: "do not resume it yet", never "may be
/// resumed"; Flux, whose suspended inventory cannot show it: not before the source no
/// longer defines it). a21n C14: before it, none of that was said.
async fn a_change_by_someone_else_after_done_is_let_go_naming_the_source(
    b: &Bed,
    owner: Level,
    levels: &[Level],
) {
    let on = b.backend;
    done_relying_on(b, owner, levels).await;
    resumed_re_creating_the_gateway(b, owner).await;
    if owner.0 == APPLICATION {
        b.edit(owner.0, level_ns(owner), owner.1, |o| {
            o["spec"]["syncPolicy"]
                .as_object_mut()
                .unwrap()
                .remove("automated");
        })
        .await;
    } else {
        b.patch_as(
            owner.0,
            level_ns(owner),
            owner.1,
            "flux-client-side-apply",
            serde_json::json!({"spec": {"suspend": true}}),
        )
        .await;
    }
    b.delete_until_gone(IPSECGATEWAY, NS, "acme", 30).await;
    let r = b.vpnmig(&["cutover", "acme", "-n", NS, "--yes"]).await;
    let out = live::flat(&format!("{}{}", r.stdout, r.stderr));
    for says in [
        "its policy changed since the window paused it",
        "ipsecgateway/acme -n tenant-acme",
        "merge the repository change first",
    ] {
        assert!(out.contains(says), "{on}: `{says}` missing in: {out}");
    }
    assert!(!out.contains("may be resumed"), "{on}: {out}");
    let rec = owner_record(b).await;
    assert!(rec["letGo"].is_string(), "{on}: not let go: {rec}");
    let st = live::flat(&b.step(&["status", "-n", NS], 0, &[]).await.stdout);
    for &l in levels {
        let no_longer = format!("GitOps parent no longer relied on: {}", shown(l));
        assert!(
            st.contains(&no_longer),
            "{on}: `{no_longer}` missing in: {st}"
        );
    }
    for says in [
        "ipsecgateway/acme -n tenant-acme",
        "merge the repository change first",
    ] {
        assert!(st.contains(says), "{on}: `{says}` missing in: {st}");
    }
    if owner.0 == APPLICATION {
        // Argo CD's comparison shows the source: never "may be resumed".
        assert!(st.contains("do not resume it yet"), "{on}: {st}");
        assert!(!st.contains("may be resumed"), "{on}: {st}");
    } else {
        // A suspended Kustomization's inventory cannot show it: a resume only after the
        // source no longer defines it.
        let not_before = format!(
            "not before the source of {} no longer defines what the window replaced",
            shown(owner)
        );
        assert!(
            st.contains(&not_before),
            "{on}: `{not_before}` missing in: {st}"
        );
    }
}

/// a21o D20: after `done`, someone changes acme's policy in its parent's source (Argo CD:
/// `prune: false`) and resumes the parent: acme is re-armed with that policy and
/// re-creates the IPsecGateway. The stop (exit 5) followed to the letter, the window
/// holds acme again and says the policy was changed while it held it, and that the end
/// restores that one; its journal's saved policy is it. Merged and restored, acme syncs
/// with `prune: false` (the source's), never the `prune: true` the window recorded before
/// its pause, and the restore says so. On the code before it, the restore put `prune:
/// true` back without a word.
async fn a_policy_set_in_the_gap_is_what_the_restore_puts_back(b: &Bed, parent: Level) {
    let on = b.backend;
    let owner = ACME_APP_OWNER;
    done_relying_on(b, owner, &[parent]).await;
    b.edit(
        CONFIGMAP,
        level_ns(parent),
        &format!("{}-source", parent.1),
        |o| {
            let m = o["data"]["manifests"].as_str().unwrap().to_string();
            assert!(m.contains("prune: true"), "{m}");
            o["data"]["manifests"] = Value::String(m.replace("prune: true", "prune: false"));
        },
    )
    .await;
    resumed_re_creating_the_gateway(b, parent).await;
    let acme = b.get(owner.0, level_ns(owner), owner.1).await.unwrap();
    assert_eq!(
        acme["spec"]["syncPolicy"]["automated"]["prune"], false,
        "{on}: the parent re-armed acme with another policy: {acme}"
    );
    let r = b
        .step(&["cutover", "acme", "-n", NS, "--yes"], 5, &[])
        .await;
    let ended = follow_to_the_end(b, r, &["--yes"]).await;
    let out = live::flat(&format!("{}{}", ended.stdout, ended.stderr));
    for says in [
        "its policy was changed while the window held it",
        "spec.syncPolicy.automated {\"prune\":true,\"selfHeal\":true} when the window paused it",
        "{\"prune\":false,\"selfHeal\":true} set by the re-arm",
        "the end of the window restores {\"prune\":false,\"selfHeal\":true}, not the policy before",
    ] {
        assert!(out.contains(says), "{on}: `{says}` missing in: {out}");
    }
    assert!(!out.contains("is not restored"), "{on}: {out}");
    let rec = owner_record(b).await;
    assert_eq!(rec["paused"], true, "{on}: {rec}");
    assert_eq!(
        rec["saved"]["value"],
        serde_json::json!({"selfHeal": true, "prune": false}),
        "{on}: {rec}"
    );
    assert!(suspended(b, owner).await, "{on}: acme syncs again");
    // Merged; the restore puts back the policy set since, and says so.
    merged_without_ipsecgateway(b, level_ns(owner)).await;
    let restore = ["cutover", "acme", "-n", NS, "--gitops", "resume", "--yes"];
    let r = b.step(&restore, 0, &[]).await;
    let out = live::flat(&format!("{}{}", r.stdout, r.stderr));
    for says in [
        "restored application/acme -n argocd (spec.syncPolicy.automated {\"prune\":false,\"selfHeal\":true} as it was set since the window paused it, not the {\"prune\":true,\"selfHeal\":true} recorded before the window",
        "a restore never overwrites a policy changed since",
    ] {
        assert!(out.contains(says), "{on}: `{says}` missing in: {out}");
    }
    let acme = b.get(owner.0, level_ns(owner), owner.1).await.unwrap();
    assert_eq!(
        acme["spec"]["syncPolicy"]["automated"],
        serde_json::json!({"selfHeal": true, "prune": false}),
        "{on}: the restore overwrote the policy set since: {acme}"
    );
}

/// a21o D20, Flux: after `done`, the parent is resumed, re-arms acme, which re-creates
/// the IPsecGateway, and the stop (exit 5) asks for acme's suspension. Someone then sets
/// `suspend: true` on acme in the parent's source: the parent's sync suspends it
/// (kustomize-controller writes the field). The parent suspended and the gateway deleted
/// by hand, the next cutover never takes that suspension for the one its stop asked for:
/// "its policy changed since the window paused it" (written by kustomize-controller), let
/// go, and acme stays suspended as its source says; nothing restores `suspend: false`
/// over it. On the code before it, the run adopted it as the window's own ("not someone
/// else's change"), and the restore after the merge would have resumed it.
async fn a_suspension_set_in_the_source_is_never_the_window_s(b: &Bed, parent: Level) {
    let on = b.backend;
    let owner = ACME_KS_OWNER;
    done_relying_on(b, owner, &[parent]).await;
    resumed_re_creating_the_gateway(b, parent).await;
    b.step(&["cutover", "acme", "-n", NS, "--yes"], 5, &[])
        .await;
    b.edit(
        CONFIGMAP,
        level_ns(parent),
        &format!("{}-source", parent.1),
        |o| {
            let m = o["data"]["manifests"].as_str().unwrap().to_string();
            assert!(m.contains("suspend: false"), "{m}");
            o["data"]["manifests"] = Value::String(m.replace("suspend: false", "suspend: true"));
        },
    )
    .await;
    b.gitops.kick();
    bed::eventually(30, "the parent's sync suspends acme", || async {
        suspended(b, owner).await
    })
    .await;
    b.patch_as(
        parent.0,
        level_ns(parent),
        parent.1,
        "vpnmig",
        serde_json::json!({"spec": {"suspend": true}}),
    )
    .await;
    b.delete_until_gone(IPSECGATEWAY, NS, "acme", 30).await;
    let r = b.vpnmig(&["cutover", "acme", "-n", NS, "--yes"]).await;
    let out = live::flat(&format!("{}{}", r.stdout, r.stderr));
    for says in [
        "its policy changed since the window paused it",
        "written since by kustomize-controller",
        "ipsecgateway/acme -n tenant-acme",
    ] {
        assert!(out.contains(says), "{on}: `{says}` missing in: {out}");
    }
    assert!(!out.contains("not someone else's change"), "{on}: {out}");
    let rec = owner_record(b).await;
    assert!(rec["letGo"].is_string(), "{on}: not let go: {rec}");
    assert!(suspended(b, owner).await, "{on}: acme resumed");
}

/// a21o D29: after `done` (acme's source still defines the IPsecGateway), a colleague
/// freezes acme their own way (Argo CD: `skip-reconcile` and another policy; Flux:
/// `spec.suspend` written as `flux`); the cutover lets go of it. `status`'s line for the
/// owner let go (text and `letGoOwners`) says that the cluster cannot show that its
/// source no longer defines ipsecgateway/acme, that a resume re-creates it, and the merge
/// first. On the code before it, that line said only "its
/// resume is a person's".
async fn a_let_go_owner_says_its_source_still_defines_the_gateway(
    b: &Bed,
    owner: Level,
    parent: Level,
) {
    let on = b.backend;
    done_relying_on(b, owner, &[parent]).await;
    if owner.0 == APPLICATION {
        b.patch_as(
            owner.0,
            level_ns(owner),
            owner.1,
            "colleague",
            serde_json::json!({
                "metadata": {"annotations": {"argocd.argoproj.io/skip-reconcile": "true"}},
                "spec": {"syncPolicy": {"automated": {"selfHeal": false, "prune": false}}}
            }),
        )
        .await;
    } else {
        // Resumed and suspended again as `flux`: its sync re-created the gateway, which
        // the colleague deletes (a suspension of the same value leaves no writer).
        resumed_re_creating_the_gateway(b, owner).await;
        b.patch_as(
            owner.0,
            level_ns(owner),
            owner.1,
            "flux",
            serde_json::json!({"spec": {"suspend": true}}),
        )
        .await;
        b.delete_until_gone(IPSECGATEWAY, NS, "acme", 30).await;
    }
    b.vpnmig(&["cutover", "acme", "-n", NS, "--yes"]).await;
    let rec = owner_record(b).await;
    assert!(rec["letGo"].is_string(), "{on}: not let go: {rec}");
    let st = live::flat(&b.step(&["status", "-n", NS], 0, &[]).await.stdout);
    let at = st
        .find("GitOps owner let go:")
        .unwrap_or_else(|| panic!("{on}: no let-go line in: {st}"));
    let line = st[at..].split("kept from").next().unwrap_or_default();
    let (doc, _) = status_json(b).await;
    let json = doc["letGoOwners"][0]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // Neither status can tell (Argo CD's freeze stops the refresh of its status; a
    // suspended Kustomization's inventory is its last sync's): not before the source no
    // longer defines it.
    let first = format!(
        "Do not resume it before its source no longer defines what the window replaced: the cluster does not show that the source of {} no longer defines ipsecgateway/acme -n tenant-acme",
        shown(owner)
    );
    for says in [
        first.as_str(),
        "resumed, its sync re-creates ipsecgateway/acme -n tenant-acme",
        "merge the repository change first",
    ] {
        assert!(line.contains(says), "{on}: `{says}` missing in: {line}");
        assert!(
            live::flat(&json).contains(says),
            "{on}: `{says}` missing in letGoOwners: {json}"
        );
    }
}

/// a21o D11: after `done`, the parent is resumed, re-arms acme, which re-creates the
/// IPsecGateway; the stop (exit 5) asks for the parent's and acme's suspension. The user
/// suspends the parent only; a colleague freezes acme with `skip-reconcile` (its
/// `automated` left as the re-arm set it); the gateway is deleted. The next cutover says
/// one thing: its policy changed since the window paused it (the freeze), let go of;
/// never first that it "reads back suspended as this window's stop asked … not someone
/// else's change". On the code before it, both were said in the same run.
async fn a_freeze_after_the_stop_is_said_once_as_someone_else_s(b: &Bed, parent: Level) {
    let on = b.backend;
    let owner = ACME_APP_OWNER;
    done_relying_on(b, owner, &[parent]).await;
    resumed_re_creating_the_gateway(b, parent).await;
    b.step(&["cutover", "acme", "-n", NS, "--yes"], 5, &[])
        .await;
    b.patch_as(
        parent.0,
        level_ns(parent),
        parent.1,
        "vpnmig",
        serde_json::json!({"spec": {"syncPolicy": {"automated": null}}}),
    )
    .await;
    b.patch_as(
        owner.0,
        level_ns(owner),
        owner.1,
        "colleague",
        serde_json::json!({"metadata": {"annotations": {"argocd.argoproj.io/skip-reconcile": "true"}}}),
    )
    .await;
    b.delete_until_gone(IPSECGATEWAY, NS, "acme", 30).await;
    let r = b.vpnmig(&["cutover", "acme", "-n", NS, "--yes"]).await;
    let out = live::flat(&format!("{}{}", r.stdout, r.stderr));
    for says in [
        "its policy changed since the window paused it",
        "argocd.argoproj.io/skip-reconcile=true (a freeze)",
    ] {
        assert!(out.contains(says), "{on}: `{says}` missing in: {out}");
    }
    for never in [
        "not someone else's change",
        "reads back suspended as this window's stop asked",
    ] {
        assert!(!out.contains(never), "{on}: `{never}` in: {out}");
    }
    let rec = owner_record(b).await;
    assert!(rec["letGo"].is_string(), "{on}: not let go: {rec}");
    assert!(rec["asked"]["adopted"].is_null(), "{on}: adopted: {rec}");
}

/// An Argo CD app-of-apps of two levels, and a Flux one.
/// a21p E04: acme generated by ApplicationSet `standorte`; the window done (the set kept
/// `create-only` as its stop asked), acme suspended, its source not merged. When
/// `re_armed`, a person puts the set back to syncing, its template re-arms acme, which
/// re-creates the IPsecGateway, and the cutover stops (exit 5). In the gap a colleague
/// changes the template's `spec.syncPolicy.automated` to `automated` (`Null`: removed,
/// manual sync); re-armed, the set's controller applies it to acme. The stop followed to
/// the letter, merged, and the cutover run: nothing re-enables a policy over the
/// template's. Manual sync: acme is let go of, "its policy changed since the window paused
/// it: its manager … now defines manual sync", in the cutover's text, the journal and
/// `status -o json`'s `letGoOwners`, never adopted as "the window's own suspension", and it
/// stays without `automated`. Another policy: `status` says the end restores it, and the
/// restore puts it back and says so. On the code before it, the restore put back the
/// `{"prune":true,"selfHeal":true}` recorded before the pause over the template's.
/// [`application_set`] with a second list generator that has its own template setting
/// `syncPolicy` (a21q Q03): the set cannot tell the policy it gives acme.
fn application_set_per_generator() -> String {
    let one = "  generators: [{list: {elements: [{tenant: acme}]}}]\n";
    let two = "  generators: [{list: {elements: [{tenant: acme}]}}, {list: {elements: [{tenant: luebeck}], template: {metadata: {}, spec: {project: default, syncPolicy: {automated: {prune: false}}}}}}]\n";
    let base = application_set();
    assert!(base.contains(one), "{base}");
    base.replacen(one, two, 1)
}

/// A set that cannot tell the policy it gives the owner (a generator's own template):
/// whether the team changed it in the gap cannot be told, so `status` says so and the
/// end lets go of the owner instead of re-arming `automated` with prune (a21q Q03: it
/// re-armed over the template's manual sync).
async fn a_set_that_cannot_tell_its_policy_is_never_restored_over(b: &Bed) {
    let on = b.backend;
    let owner = ACME_APP_OWNER;
    bed::eventually(30, "the IPsecGateway", || async {
        !b.objects(IPSECGATEWAY, NS).await.is_empty()
    })
    .await;
    let cut = ["cutover", "acme", "-n", NS, "--gitops", "pause", "--yes"];
    let r = b.step(&cut, 7, &[STANDORTE]).await;
    let end = follow_to_the_end(b, r, &["--yes"]).await;
    assert_eq!(b.phase(NS, "acme").await.as_deref(), Some("done"), "{on}");
    let why = "whether its policy changed since the window paused it cannot be told: its manager applicationset/standorte -n argocd defines its policy where vpnmig cannot read it for this Application (a generator's own template sets syncPolicy)";
    // The end of the window reads the set and lets go of acme at once: nothing it could
    // restore later is known to be the team's policy.
    let out = live::flat(&format!("{}{}", end.stdout, end.stderr));
    let says = format!("application/acme -n argocd is not restored: {why}");
    assert!(out.contains(&says), "{on}: `{says}` missing in: {out}");
    assert!(!out.contains("restored application/acme"), "{on}: {out}");
    assert!(suspended(b, owner).await, "{on}: acme re-armed");
    let (doc, _) = status_json(b).await;
    let let_go = doc["letGoOwners"].as_array().cloned().unwrap_or_default();
    assert!(
        let_go.iter().any(|l| l
            .as_str()
            .is_some_and(|l| l.starts_with("application/acme -n argocd") && l.contains(why))),
        "{on}: {let_go:?}"
    );
    let rec = owner_record(b).await;
    assert!(
        rec["letGo"].as_str().is_some_and(|l| l.contains(why)),
        "{on}: {rec}"
    );
    // Merged: the cutover never re-arms it either.
    merged_without_ipsecgateway(b, level_ns(owner)).await;
    let r = b
        .step(&["cutover", "acme", "-n", NS, "--yes"], 0, &[])
        .await;
    let out = live::flat(&format!("{}{}", r.stdout, r.stderr));
    assert!(!out.contains("restored application/acme"), "{on}: {out}");
    let acme = b.get(owner.0, level_ns(owner), owner.1).await.unwrap();
    assert!(
        acme["spec"]["syncPolicy"]["automated"].is_null(),
        "{on}: automated sync re-enabled over a policy vpnmig cannot read: {acme}"
    );
}

async fn a_template_policy_set_in_the_gap_is_never_restored_over(
    b: &Bed,
    automated: Value,
    re_armed: bool,
) {
    let on = b.backend;
    let owner = ACME_APP_OWNER;
    bed::eventually(30, "the IPsecGateway", || async {
        !b.objects(IPSECGATEWAY, NS).await.is_empty()
    })
    .await;
    let cut = ["cutover", "acme", "-n", NS, "--gitops", "pause", "--yes"];
    let r = b.step(&cut, 7, &[STANDORTE]).await;
    let mut out = live::flat(&follow_to_the_end(b, r, &["--yes"]).await.stderr);
    assert_eq!(b.phase(NS, "acme").await.as_deref(), Some("done"), "{on}");
    assert!(suspended(b, owner).await, "{on}: acme restored unmerged");
    let stop = if re_armed {
        b.edit(APPLICATIONSET, "argocd", "standorte", |o| {
            o["spec"].as_object_mut().unwrap().remove("syncPolicy");
        })
        .await;
        bed::eventually(
            30,
            "the re-armed acme re-creates the IPsecGateway",
            || async { b.get(IPSECGATEWAY, NS, "acme").await.is_some() },
        )
        .await;
        Some(
            b.step(&["cutover", "acme", "-n", NS, "--yes"], 5, &[])
                .await,
        )
    } else {
        None
    };
    b.edit(APPLICATIONSET, "argocd", "standorte", |o| {
        let policy = o["spec"]["template"]["spec"]["syncPolicy"]
            .as_object_mut()
            .unwrap();
        if automated.is_null() {
            policy.remove("automated");
        } else {
            policy.insert("automated".into(), automated.clone());
        }
    })
    .await;
    if let Some(stop) = stop {
        bed::eventually(
            30,
            "the set's controller applies its template to acme",
            || async {
                let acme = b.get(owner.0, level_ns(owner), owner.1).await.unwrap();
                acme["spec"]["syncPolicy"]["automated"] == automated
            },
        )
        .await;
        let ended = follow_to_the_end(b, stop, &["--yes"]).await;
        out = format!(
            "{out} {}",
            live::flat(&format!("{}{}", ended.stdout, ended.stderr))
        );
    }
    let manual = automated.is_null();
    let shown = serde_json::to_string(&automated).unwrap();
    let defines = if manual {
        "its manager applicationset/standorte -n argocd now defines manual sync (spec.template.spec.syncPolicy.automated absent), not the {\"prune\":true,\"selfHeal\":true} the window recorded before its pause".to_string()
    } else {
        format!(
            "its manager applicationset/standorte -n argocd now defines spec.template.spec.syncPolicy.automated {shown}, not the {{\"prune\":true,\"selfHeal\":true}} the window recorded before its pause"
        )
    };
    let (doc, _) = status_json(b).await;
    if manual && re_armed {
        let let_go = doc["letGoOwners"].as_array().cloned().unwrap_or_default();
        assert!(
            let_go
                .iter()
                .any(|l| l.as_str().is_some_and(|l| l.contains(&defines))),
            "{on}: {let_go:?}"
        );
    } else if manual {
        let owners = doc["suspendedOwners"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            owners
                .iter()
                .any(|o| o["owner"] == "application/acme -n argocd"
                    && o["live"] == "changed"
                    && o["liveDetail"]
                        .as_str()
                        .is_some_and(|d| d.contains(&defines))),
            "{on}: {owners:?}"
        );
    } else if !re_armed {
        // (Re-armed, the stop may have seen the template's policy on acme already: the
        // adoption makes it the one to restore, a21o D20, said then.)
        let owners = doc["suspendedOwners"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let restores = format!("the end of the window restores {shown}, not the policy before");
        assert!(
            owners
                .iter()
                .any(|o| o["owner"] == "application/acme -n argocd"
                    && o["live"] == "suspended"
                    && o["liveDetail"]
                        .as_str()
                        .is_some_and(|d| d.contains(&defines) && d.contains(&restores))),
            "{on}: {owners:?}"
        );
    }
    // Merged; the cutover restores, or has let go.
    merged_without_ipsecgateway(b, level_ns(owner)).await;
    let restore = ["cutover", "acme", "-n", NS, "--gitops", "resume", "--yes"];
    let r = b.step(&restore, 0, &[]).await;
    let out = format!("{out} {}", live::flat(&format!("{}{}", r.stdout, r.stderr)));
    let rec = owner_record(b).await;
    let acme = b.get(owner.0, level_ns(owner), owner.1).await.unwrap();
    if manual {
        let says = format!(
            "application/acme -n argocd is not restored: its policy changed since the window paused it: {defines} (live: spec.syncPolicy.automated absent)"
        );
        assert!(out.contains(&says), "{on}: `{says}` missing in: {out}");
        assert!(!out.contains("restored application/acme"), "{on}: {out}");
        assert!(!out.contains("not someone else's change"), "{on}: {out}");
        assert!(
            rec["letGo"].as_str().is_some_and(|l| l.contains(&defines)),
            "{on}: {rec}"
        );
        assert!(
            acme["spec"]["syncPolicy"]["automated"].is_null(),
            "{on}: the restore re-enabled automated sync over the template's manual sync: {acme}"
        );
    } else {
        let says = if re_armed {
            format!("restored application/acme -n argocd (spec.syncPolicy.automated {shown} as ")
        } else {
            format!(
                "restored application/acme -n argocd (spec.syncPolicy.automated {shown} as {defines}: a restore never overwrites a policy changed since"
            )
        };
        assert!(out.contains(&says), "{on}: `{says}` missing in: {out}");
        assert!(
            out.contains("a restore never overwrites a policy changed since"),
            "{on}: {out}"
        );
        assert!(rec["letGo"].is_null(), "{on}: {rec}");
        assert_eq!(rec["saved"]["value"], automated, "{on}: {rec}");
        assert_eq!(
            acme["spec"]["syncPolicy"]["automated"], automated,
            "{on}: the restore overwrote the template's policy: {acme}"
        );
    }
}

const DACH: [Level; 2] = [(APPLICATION, "dach"), (APPLICATION, "etage")];
const OBEN: [Level; 2] = [(KUSTOMIZATION, "oben"), (KUSTOMIZATION, "mitte")];

/// a21t T15: the parent the window relies on (suspended as the first stop advised) is
/// resumed by someone during the tunnels' wait, and its controller re-arms the owner only
/// later (its self-heal delay: the moment the attack saw fall after `done`). The window
/// reads the parents once more right before `done` and stops there, naming the parent,
/// never "done" and HEALTHY with the old gateway re-created a moment later (on the code
/// before, exit 0 and phase done).
async fn a_parent_resumed_before_done_stops_the_window_before_done(
    b: &Bed,
    owner: Level,
    parent: Level,
) {
    let on = b.backend;
    chain_applied(b, owner, &[parent]).await;
    let cut = ["cutover", "acme", "-n", NS, "--gitops", "pause", "--yes"];
    let r = b.step(&cut, 7, &["no gateway was deleted"]).await;
    assert!(r.says(&shown(parent)), "{on}: {}", r.stderr);
    // The stop's advice, as a person follows it: the parent suspended, then its command.
    let hint = hint_of(&r);
    assert!(!follow_hint(b, &hint).await.is_empty(), "{on}: {hint}");
    assert!(suspended(b, parent).await, "{on}: {hint}");
    let mut again: Vec<String> = bed::advised(&hint, "cutover acme");
    if !again.iter().any(|a| a == "--yes") {
        again.push("--yes".into());
    }
    // The client re-initiates 4 s after the gateway is reachable: the tunnels' wait is
    // when the parent is resumed; its controller acts a minute later.
    b.operator.settings().write().unwrap().peer_retry_ms = 4000;
    let child = b.spawn(&again.iter().map(String::as_str).collect::<Vec<_>>());
    // Applied, attached or ready (each may last a moment only): the tunnels' wait.
    let applied = async || {
        matches!(
            b.phase(NS, "acme").await.as_deref(),
            Some("applied" | "attached" | "ready")
        )
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !applied().await && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    if !applied().await {
        let r = live::finish(child).await;
        panic!(
            "{on}: the window never reached applied ({}): {}",
            r.code, r.stderr
        );
    }
    b.gitops.settings().write().unwrap().self_heal_delay_ms = 60_000;
    resume(b, parent).await;
    let r = live::finish(child).await;
    let err = live::flat(&r.stderr);
    assert_ne!(r.code, 0, "{on}: {err}");
    assert!(
        err.contains(&format!(
            "{} manages {} (found by",
            shown(parent),
            shown(owner)
        )) && err
            .contains("was re-enabled by someone else while this window relies on its suspension"),
        "{on}: {err}"
    );
    assert!(!err.contains("acme: done"), "{on}: {err}");
    // After the apply: what it applied is named, never "nothing new was applied" (a21u U03).
    assert!(
        err.contains("the old gateway was deleted and this window applied VPNGateway acme, VPNPeer acme, which are live (journal phase"),
        "{on}: {err}"
    );
    assert!(!err.contains("nothing new was applied"), "{on}: {err}");
    assert_ne!(b.phase(NS, "acme").await.as_deref(), Some("done"), "{on}");
    assert!(
        suspended(b, owner).await,
        "{on}: the owner is still suspended"
    );
    assert!(b.get(IPSECGATEWAY, NS, "acme").await.is_none(), "{on}");
}

crate::rows! {
    /// a21t T15: a Flux parent resumed during the tunnels' wait stops the window before done.
    a_flux_parent_resumed_before_done_stops_the_window: bed::Row {
        scenario: || scenario(chain(&[(KUSTOMIZATION, "verbund")])),
        only: None,
        // Stopped at ready: the new objects live, the old gateway gone, the owner held.
        after: None,
        steps: |b| Box::pin(a_parent_resumed_before_done_stops_the_window_before_done(b, ACME_KS_OWNER, (KUSTOMIZATION, "verbund"))),
    },
    /// The same with an Argo CD app-of-apps `wurzel`.
    an_argo_parent_resumed_before_done_stops_the_window: bed::Row {
        scenario: || scenario(chain(&[(APPLICATION, "wurzel")])),
        only: None,
        after: None,
        steps: |b| Box::pin(a_parent_resumed_before_done_stops_the_window_before_done(b, ACME_APP_OWNER, (APPLICATION, "wurzel"))),
    },
    /// a21n C13: an Argo CD app-of-apps `wurzel` re-arms acme after done.
    an_argo_re_arm_after_done_followed_is_the_window_s_again: bed::Row {
        scenario: || scenario(chain(&[(APPLICATION, "wurzel")])),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_re_arm_after_done_followed_to_the_letter_is_the_window_s_again(b, ACME_APP_OWNER, &[(APPLICATION, "wurzel")])),
    },
    /// The same with a Flux parent Kustomization `verbund`.
    a_flux_re_arm_after_done_followed_is_the_window_s_again: bed::Row {
        scenario: || scenario(chain(&[(KUSTOMIZATION, "verbund")])),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_re_arm_after_done_followed_to_the_letter_is_the_window_s_again(b, ACME_KS_OWNER, &[(KUSTOMIZATION, "verbund")])),
    },
    /// The same, each patch run without `--field-manager=vpnmig` (a21o D09).
    a_flux_re_arm_after_done_followed_with_plain_patches_is_the_window_s_again: bed::Row {
        scenario: || scenario(chain(&[(KUSTOMIZATION, "verbund")])),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_re_arm_after_done_followed_is_the_window_s_again(b, ACME_KS_OWNER, &[(KUSTOMIZATION, "verbund")], true)),
    },
    /// A chain of two Argo CD Applications above acme.
    an_argo_chain_re_arm_after_done_followed_is_the_window_s_again: bed::Row {
        scenario: || cycle_scenario(chain(&DACH)),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_re_arm_after_done_followed_to_the_letter_is_the_window_s_again(b, ACME_APP_OWNER, &DACH)),
    },
    /// A chain of two Flux Kustomizations above acme.
    a_flux_chain_re_arm_after_done_followed_is_the_window_s_again: bed::Row {
        scenario: || cycle_scenario(chain(&OBEN)),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_re_arm_after_done_followed_to_the_letter_is_the_window_s_again(b, ACME_KS_OWNER, &OBEN)),
    },
    /// a21n C14: acme re-armed and suspended again by someone else (Argo CD).
    an_argo_change_by_someone_else_after_done_is_let_go_naming_the_source: bed::Row {
        scenario: || scenario(chain(&[(APPLICATION, "wurzel")])),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_change_by_someone_else_after_done_is_let_go_naming_the_source(b, ACME_APP_OWNER, &[(APPLICATION, "wurzel")])),
    },
    /// The same with Flux (`flux-client-side-apply` writes the suspension).
    a_flux_change_by_someone_else_after_done_is_let_go_naming_the_source: bed::Row {
        scenario: || scenario(chain(&[(KUSTOMIZATION, "verbund")])),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_change_by_someone_else_after_done_is_let_go_naming_the_source(b, ACME_KS_OWNER, &[(KUSTOMIZATION, "verbund")])),
    },
    /// a21o D20: a policy set in the parent's source in the gap is what the restore puts
    /// back (Argo CD `prune: false`).
    an_argo_policy_set_in_the_gap_is_what_the_restore_puts_back: bed::Row {
        scenario: || scenario(chain(&[(APPLICATION, "giebel")])),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_policy_set_in_the_gap_is_what_the_restore_puts_back(b, (APPLICATION, "giebel"))),
    },
    /// a21o D20, Flux: `suspend: true` set in the parent's source after the stop is never
    /// the window's suspension.
    a_flux_suspension_set_in_the_source_is_never_the_window_s: bed::Row {
        scenario: || scenario(chain(&[(KUSTOMIZATION, "giebel")])),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_suspension_set_in_the_source_is_never_the_window_s(b, (KUSTOMIZATION, "giebel"))),
    },
    /// a21o D29: the let-go line of `status` says the source still defines the gateway
    /// (Argo CD: a colleague's freeze).
    an_argo_let_go_owner_says_its_source_still_defines_the_gateway: bed::Row {
        scenario: || scenario(chain(&[(APPLICATION, "giebel")])),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_let_go_owner_says_its_source_still_defines_the_gateway(b, ACME_APP_OWNER, (APPLICATION, "giebel"))),
    },
    /// The same with Flux (`spec.suspend` written as `flux`).
    a_flux_let_go_owner_says_its_source_still_defines_the_gateway: bed::Row {
        scenario: || scenario(chain(&[(KUSTOMIZATION, "giebel")])),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_let_go_owner_says_its_source_still_defines_the_gateway(b, ACME_KS_OWNER, (KUSTOMIZATION, "giebel"))),
    },
    /// a21o D11: a colleague's freeze after the stop is said once, as someone else's.
    an_argo_freeze_after_the_stop_is_said_once_as_someone_else_s: bed::Row {
        scenario: || scenario(chain(&[(APPLICATION, "giebel")])),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_freeze_after_the_stop_is_said_once_as_someone_else_s(b, (APPLICATION, "giebel"))),
    },
    /// a21p E04: the ApplicationSet's template set to manual sync in the gap after the
    /// stop: let go of, never re-armed over.
    an_application_set_template_set_to_manual_after_the_stop_is_let_go: bed::Row {
        scenario: || scenario(application_set()),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_template_policy_set_in_the_gap_is_never_restored_over(b, Value::Null, true)),
    },
    /// The same, set while the set is `create-only` (nothing re-armed, no stop).
    an_application_set_template_set_to_manual_while_held_is_let_go: bed::Row {
        scenario: || scenario(application_set()),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_template_policy_set_in_the_gap_is_never_restored_over(b, Value::Null, false)),
    },
    /// The template's `selfHeal` removed after the stop: the restore puts `{prune: true}`.
    an_application_set_template_without_self_heal_after_the_stop_is_what_the_restore_puts_back: bed::Row {
        scenario: || scenario(application_set()),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_template_policy_set_in_the_gap_is_never_restored_over(b, serde_json::json!({"prune": true}), true)),
    },
    /// a21q Q03: a set whose second generator has its own template cannot tell the
    /// policy it gives acme: never re-armed over, let go of and said.
    an_application_set_that_cannot_tell_its_policy_is_never_restored_over: bed::Row {
        scenario: || scenario(application_set_per_generator()),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_set_that_cannot_tell_its_policy_is_never_restored_over(b)),
    },
    /// The template set to `automated: {prune: false}` while the set is `create-only`.
    an_application_set_template_without_prune_while_held_is_what_the_restore_puts_back: bed::Row {
        scenario: || scenario(application_set()),
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_template_policy_set_in_the_gap_is_never_restored_over(b, serde_json::json!({"prune": false}), false)),
    },
}
