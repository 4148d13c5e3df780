//! Every GitOps owner of a gateway is found and held (issue 21 kinds 2 and 3; the a21l
//! attack's A01 and A08): a gateway two owners apply (a Kustomization and a HelmRelease;
//! two Kustomizations in different namespaces; an Application and a HelmRelease; an owner
//! only its own inventory names) has every one of them listed by `plan`, suspended by
//! `--gitops pause` and held by the journal, so none re-creates the gateway after the
//! delete. A re-created gateway stops the window naming the owner whose controller wrote
//! it, with its suspend command and the delete of the gateway.
//!
//! Rows on both control planes (tests/live/bed.rs), one per case.

mod live;

use live::bed::{
    self, APPLICATION, Bed, CONFIGMAP, HELMRELEASE, IPSECGATEWAY, KUSTOMIZATION, Kind, Scenario,
};
use live::repo_in;
use serde_json::{Value, json};

const NS: &str = "tenant-acme";
const ARGO: &str = include_str!("../fixtures/clusters/acme-argocd.yaml");
const FLUX: &str = include_str!("../fixtures/clusters/acme-flux.yaml");
const PAUSE: &[&str] = &["cutover", "acme", "-n", NS, "--gitops", "pause", "--yes"];
const PLAN: &[&str] = &["plan", "acme", "-n", NS, "--out", "plans/acme"];

fn settings() -> vpnmig_sandbox::SettingsFile {
    let mut s = live::pool("10.250.3.0/24");
    s.gitops.self_heal_delay_ms = 200;
    s
}

/// The Flux fixture's source of acme (its Secret and IPsecGateway), as a `manifests:`
/// block indented for a ConfigMap.
fn acme_manifests() -> &'static str {
    let at = FLUX
        .find("  manifests: |\n")
        .expect("the Flux fixture has a source");
    &FLUX[at..]
}

/// An owner `kind name` in `ns` (created) rendering acme from a source ConfigMap of its own.
fn owner_text(kind: &str, name: &str, ns: &str, suspended: bool) -> String {
    let spec = match kind {
        "HelmRelease" => "  interval: 30m\n  targetNamespace: tenant-acme\n  chart:\n    spec:\n      chart: tenant-vpn\n      sourceRef:\n        kind: HelmRepository\n        name: internal\n".to_string(),
        _ => "  interval: 10m\n  path: ./legacy\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: platform\n  targetNamespace: tenant-acme\n".to_string(),
    };
    let api = if kind == "HelmRelease" {
        "helm.toolkit.fluxcd.io/v2"
    } else {
        "kustomize.toolkit.fluxcd.io/v1"
    };
    // A suspended one has no source here: it never applies acme, only its inventory
    // (set by the row) names it.
    if suspended {
        return format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n---\napiVersion: {api}\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n{spec}  suspend: true\n"
        );
    }
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n---\napiVersion: {api}\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n{spec}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-source\n  namespace: {ns}\ndata:\n{}",
        acme_manifests()
    )
}

/// A01's kind: the Flux Kustomization flux-system/acme and a HelmRelease charts/acme-chart.
fn kustomization_and_helmrelease() -> Scenario {
    Scenario::built(
        format!(
            "{FLUX}\n---\n{}",
            owner_text("HelmRelease", "acme-chart", "charts", false)
        ),
        settings(),
    )
}

/// A08's kind: the Kustomization flux-system/acme and a second one, legacy-ops/legacy.
fn two_kustomizations() -> Scenario {
    Scenario::built(
        format!(
            "{FLUX}\n---\n{}",
            owner_text("Kustomization", "legacy", "legacy-ops", false)
        ),
        settings(),
    )
}

/// Three owners: an Argo CD Application argocd/acme, a HelmRelease charts/acme-chart and
/// a Kustomization legacy-ops/legacy.
fn application_helmrelease_and_kustomization() -> Scenario {
    let crds: Vec<&str> = FLUX
        .split("\n---\n")
        .filter(|d| d.contains("kind: CustomResourceDefinition"))
        .collect();
    Scenario::built(
        format!(
            "{ARGO}\n---\n{}\n---\n{}\n---\n{}",
            crds.join("\n---\n"),
            owner_text("HelmRelease", "acme-chart", "charts", false),
            owner_text("Kustomization", "legacy", "legacy-ops", false)
        ),
        settings(),
    )
}

/// The Kustomization flux-system/acme, and a suspended one, legacy-ops/legacy, that no
/// marker on acme names (its inventory does, set by the row).
fn an_owner_only_its_inventory_names() -> Scenario {
    Scenario::built(
        format!(
            "{FLUX}\n---\n{}",
            owner_text("Kustomization", "legacy", "legacy-ops", true)
        ),
        settings(),
    )
}

/// Until each of `managers` is among acme's field managers (each owner applied it once).
async fn applied_by(b: &Bed, managers: &[&str]) {
    bed::eventually(30, "every owner applies acme", || async {
        let Some(g) = b.get(IPSECGATEWAY, NS, "acme").await else {
            return false;
        };
        let fields = g["metadata"]["managedFields"].to_string();
        managers.iter().all(|m| fields.contains(m))
    })
    .await;
}

async fn suspended(b: &Bed, kind: Kind, ns: &str, name: &str) -> bool {
    let o = b.get(kind, ns, name).await.expect("the owner exists");
    if kind == APPLICATION {
        o["spec"]["syncPolicy"]["automated"].is_null()
    } else {
        o["spec"]["suspend"] == true
    }
}

/// The owners the journal holds, as `kind/name -n ns`.
async fn held(b: &Bed) -> Vec<String> {
    let j = b.journal(NS, "acme").await.expect("a journal");
    j["gitops"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            format!(
                "{}/{} -n {}",
                r["owner"]["kind"]
                    .as_str()
                    .unwrap_or_default()
                    .to_lowercase(),
                r["owner"]["name"].as_str().unwrap_or_default(),
                r["owner"]["namespace"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

/// The plan blocks on every owner in `owners`; the pause suspends each and the journal
/// holds each; the window ends done and nothing re-creates the IPsecGateway.
async fn every_owner_paused_and_held(b: &Bed, owners: &[(Kind, &str, &str)]) {
    let plan = b.step(PLAN, 4, &[]).await;
    let text = live::flat(&plan.stdout);
    for (kind, ns, name) in owners {
        let shown = format!("{}/{name} -n {ns}", kind.3.to_lowercase());
        assert!(
            text.contains(&shown),
            "the plan names {shown}:\n{}",
            plan.stdout
        );
    }
    let r = b.step(PAUSE, 0, &[]).await;
    let holds = held(b).await;
    for (kind, ns, name) in owners {
        let shown = format!("{}/{name} -n {ns}", kind.3.to_lowercase());
        assert!(
            r.says(&format!("{shown} syncs")) || r.says(&format!("suspended {shown}")),
            "the window names {shown}:\n{}",
            r.stderr
        );
        assert!(
            suspended(b, *kind, ns, name).await,
            "{shown} is suspended:\n{}",
            r.stderr
        );
        assert!(
            holds.contains(&shown),
            "the journal holds {shown}: {holds:?}"
        );
    }
    assert_eq!(b.phase(NS, "acme").await.as_deref(), Some("done"));
    // Every owner asked to sync now: none re-creates the gateway (the invariants after
    // the row look again).
    b.gitops.kick();
    assert!(
        b.get(IPSECGATEWAY, NS, "acme").await.is_none(),
        "no owner re-creates the replaced IPsecGateway"
    );
}

async fn a_helmrelease_beside_a_kustomization(b: &Bed) {
    applied_by(b, &["kustomize-controller", "helm-controller"]).await;
    every_owner_paused_and_held(
        b,
        &[
            (KUSTOMIZATION, "flux-system", "acme"),
            (HELMRELEASE, "charts", "acme-chart"),
        ],
    )
    .await;
}

async fn two_kustomizations_in_two_namespaces(b: &Bed) {
    // Both have synced it: each one's inventory lists it (the markers name one of them).
    both_inventories(b).await;
    every_owner_paused_and_held(
        b,
        &[
            (KUSTOMIZATION, "flux-system", "acme"),
            (KUSTOMIZATION, "legacy-ops", "legacy"),
        ],
    )
    .await;
}

async fn a_helmrelease_beside_an_application_and_a_kustomization(b: &Bed) {
    applied_by(
        b,
        &[
            "argocd-controller",
            "helm-controller",
            "kustomize-controller",
        ],
    )
    .await;
    every_owner_paused_and_held(
        b,
        &[
            (APPLICATION, "argocd", "acme"),
            (HELMRELEASE, "charts", "acme-chart"),
            (KUSTOMIZATION, "legacy-ops", "legacy"),
        ],
    )
    .await;
}

async fn an_owner_known_only_by_its_inventory(b: &Bed) {
    applied_by(b, &["kustomize-controller"]).await;
    b.edit_status(KUSTOMIZATION, "legacy-ops", "legacy", |o| {
        o["status"] = json!({"inventory": {"entries": [
            {"id": "tenant-acme_acme_ipsec.bnerd.net_IPsecGateway", "v": "v1alpha1"}
        ]}})
    })
    .await;
    let g = b.get(IPSECGATEWAY, NS, "acme").await.unwrap();
    assert!(
        !g["metadata"]["labels"].to_string().contains("legacy"),
        "no marker names it: {g}"
    );
    let plan = b.step(PLAN, 4, &[]).await;
    assert!(
        live::flat(&plan.stdout)
            .contains("status.inventory of kustomization/legacy -n legacy-ops lists it"),
        "{}",
        plan.stdout
    );
    let r = b.step(PAUSE, 0, &[]).await;
    assert!(
        r.says("kustomization/legacy -n legacy-ops syncs ipsecgateway/acme -n tenant-acme"),
        "{}",
        r.stderr
    );
    let j = b.journal(NS, "acme").await.unwrap();
    let legacy: Vec<&Value> = j["gitops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["owner"]["name"] == "legacy")
        .collect();
    assert_eq!(legacy.len(), 1, "the journal holds it: {j}");
    assert_eq!(
        legacy[0]["relies"], true,
        "the window relies on its suspension: {j}"
    );
    assert!(suspended(b, KUSTOMIZATION, "legacy-ops", "legacy").await);
    assert!(suspended(b, KUSTOMIZATION, "flux-system", "acme").await);
}

/// A08's flow: both Kustomizations held; only acme's repository change merged; the
/// vouch (`--gitops resume`) restores both, and legacy's sync re-creates the gateway. The
/// stop names legacy (the owner whose sync wrote it), its suspend command as vpnmig writes
/// it, and the delete of the gateway; never a generic `flux suspend`.
async fn a_re_created_gateway_names_the_owner_that_wrote_it(b: &Bed) {
    both_inventories(b).await;
    let source = b
        .get(CONFIGMAP, "flux-system", "acme-source")
        .await
        .unwrap()["data"]["manifests"]
        .as_str()
        .unwrap()
        .to_string();
    let repo = repo_in(b.cwd(), &source);
    let dir = repo.to_str().unwrap();
    let mut plan = PLAN.to_vec();
    plan.extend(["--gitops-repo", dir]);
    b.step(&plan, 4, &[]).await;
    let rewritten = std::fs::read_to_string(repo.join("tenants/acme.yaml")).unwrap();
    assert!(!rewritten.contains("kind: IPsecGateway"), "{rewritten}");
    b.step(PAUSE, 0, &[]).await;
    b.edit(CONFIGMAP, "flux-system", "acme-source", |o| {
        o["data"]["manifests"] = json!(rewritten)
    })
    .await;
    let r = b
        .step(
            &["cutover", "acme", "-n", NS, "--yes", "--gitops", "resume"],
            5,
            &[
                "kustomization/legacy -n legacy-ops was restored and its sync interfered",
                "tracking metadata kustomize.toolkit.fluxcd.io/name=legacy",
                "suspend kustomization/legacy -n legacy-ops first (`kubectl patch kustomization legacy -n legacy-ops --field-manager=vpnmig",
                "`kubectl delete ipsecgateway acme -n tenant-acme`",
            ],
        )
        .await;
    assert!(!r.says("flux suspend"), "{}", r.stderr);
    assert!(!r.says("suspend that sync first"), "{}", r.stderr);
}

/// B12's kind: the Kustomization flux-system/acme (the gateway and its PSK) and a
/// HelmRelease charts/acme-chart whose chart renders the gateway only.
fn kustomization_and_gateway_only_helmrelease() -> Scenario {
    let full = owner_text("HelmRelease", "acme-chart", "charts", false);
    let secret_doc = full
        .find("    apiVersion: v1\n    kind: Secret\n")
        .expect("the source's Secret");
    let gateway_doc = secret_doc
        + full[secret_doc..]
            .find("    ---\n")
            .expect("the Secret's end")
        + "    ---\n".len();
    let gateway_only = format!("{}{}", &full[..secret_doc], &full[gateway_doc..]);
    assert!(!gateway_only.contains("kind: Secret"), "{gateway_only}");
    Scenario::built(format!("{FLUX}\n---\n{gateway_only}"), settings())
}

/// a21m B12: a Kustomization and a HelmRelease apply acme; only the Kustomization's
/// repository change is merged. The vouch restores both, and the HelmRelease re-creates
/// the gateway and is suspended again. The next stop names the HelmRelease (its
/// controller wrote the gateway) and never asks for the restored Kustomization's
/// suspension: its status says its source no longer defines the gateway. Followed
/// literally (the delete), the window ends with the Kustomization syncing. Suspended by
/// hand all the same (as the stop before said), `status` names it with its resume until
/// it is resumed. On the code before it, the stop asked for the Kustomization's
/// suspension, and once that was done nothing named it any more.
async fn a_re_create_by_one_of_two_owners_names_the_writer_and_keeps_the_other_named(b: &Bed) {
    applied_by(b, &["kustomize-controller", "helm-controller"]).await;
    let source = b
        .get(CONFIGMAP, "flux-system", "acme-source")
        .await
        .unwrap()["data"]["manifests"]
        .as_str()
        .unwrap()
        .to_string();
    let repo = repo_in(b.cwd(), &source);
    let mut plan = PLAN.to_vec();
    plan.extend(["--gitops-repo", repo.to_str().unwrap()]);
    b.step(&plan, 4, &[]).await;
    let rewritten = std::fs::read_to_string(repo.join("tenants/acme.yaml")).unwrap();
    assert!(!rewritten.contains("kind: IPsecGateway"), "{rewritten}");
    b.step(PAUSE, 0, &[]).await;
    b.edit(CONFIGMAP, "flux-system", "acme-source", |o| {
        o["data"]["manifests"] = json!(rewritten)
    })
    .await;
    b.step(
        &["cutover", "acme", "-n", NS, "--yes", "--gitops", "resume"],
        5,
        &["helmrelease/acme-chart -n charts was restored and its sync interfered"],
    )
    .await;
    assert!(suspended(b, HELMRELEASE, "charts", "acme-chart").await);
    assert!(!suspended(b, KUSTOMIZATION, "flux-system", "acme").await);
    bed::eventually(30, "the Kustomization's inventory without acme", || async {
        b.get(KUSTOMIZATION, "flux-system", "acme")
            .await
            .is_some_and(|k| {
                k["status"]["inventory"].is_object()
                    && !k["status"]["inventory"]
                        .to_string()
                        .contains("tenant-acme_acme_ipsec.bnerd.net_IPsecGateway")
            })
    })
    .await;
    let plain = ["cutover", "acme", "-n", NS, "--yes"];
    let r = b
        .step(
            &plain,
            5,
            &[
                "field manager helm-controller",
                "kustomization/acme -n flux-system (the window restored it; live: syncing automatically, self-heal, prune; not what re-created it: its status says its source no longer defines the gateway, and kustomize-controller did not write this one)",
                "`kubectl delete ipsecgateway acme -n tenant-acme`",
            ],
        )
        .await;
    let flat = live::flat(&r.stderr);
    assert!(
        !flat.contains("kubectl patch kustomization acme"),
        "the restored Kustomization is not asked to be suspended: {flat}"
    );
    assert!(!flat.contains("suspend what syncs it now first"), "{flat}");
    // Followed literally: the delete, then the advised cutover.
    b.delete(IPSECGATEWAY, NS, "acme").await;
    b.step(&plain, 0, &[]).await;
    assert!(!suspended(b, KUSTOMIZATION, "flux-system", "acme").await);
    assert!(suspended(b, HELMRELEASE, "charts", "acme-chart").await);
    // Suspended by hand as vpnmig writes it (what the stop used to ask): named with its
    // resume until it is resumed.
    b.patch_as(
        KUSTOMIZATION,
        "flux-system",
        "acme",
        "vpnmig",
        json!({"spec": {"suspend": true}}),
    )
    .await;
    let st = live::flat(&b.step(&["status", "-n", NS], 0, &[]).await.stdout);
    for says in [
        "GitOps sync suspended again after the window restored it: kustomization/acme -n flux-system (by the window of tenant-acme/acme, journal phase done; live: suspended again after the window restored it at",
        "no vpnmig window holds it, and vpnmig never resumes it. Before you resume it",
        "`flux resume kustomization acme -n flux-system`",
        "helmrelease/acme-chart -n charts",
    ] {
        assert!(st.contains(says), "missing `{says}` in: {st}");
    }
    b.edit(KUSTOMIZATION, "flux-system", "acme", |o| {
        o["spec"]["suspend"] = json!(false)
    })
    .await;
    let st = live::flat(&b.step(&["status", "-n", NS], 0, &[]).await.stdout);
    assert!(
        !st.contains("kustomization/acme -n flux-system (by the window"),
        "resumed: named no more: {st}"
    );
}

/// Until each Kustomization's inventory lists acme (both synced it).
async fn both_inventories(b: &Bed) {
    applied_by(b, &["kustomize-controller"]).await;
    for (ns, name) in [("flux-system", "acme"), ("legacy-ops", "legacy")] {
        bed::eventually(30, "each Kustomization's inventory lists acme", || async {
            b.get(KUSTOMIZATION, ns, name).await.is_some_and(|k| {
                k["status"]["inventory"]
                    .to_string()
                    .contains("tenant-acme_acme_ipsec.bnerd.net_IPsecGateway")
            })
        })
        .await;
    }
}

/// The Argo CD fixture's source of the PSK Secret (a document of `manifests:`).
const SOURCE_SECRET: &str = "    apiVersion: v1
    kind: Secret
    metadata:
      name: acme-psk
      namespace: tenant-acme
    type: Opaque
    data:
      psk: cmVoZWFyc2FsLW9ubHktbm90LWEtcmVhbC1rZXk=   # the live Secret's value, unchanged
    ---
";

/// a21s S06b's kind: acme's IPsecGateway is Argo CD's (argocd/acme), and its PSK Secret
/// alone a Kustomization's (flux-keys/keys, a keys repository of its own, without
/// targetNamespace): the Secret carries its markers, not Argo CD's.
fn a_keys_only_kustomization() -> Scenario {
    let argo = ARGO
        .replace(
            "    app.kubernetes.io/instance: acme\n  annotations:\n    argocd.argoproj.io/tracking-id: acme:/Secret:tenant-acme/acme-psk\n",
            "    kustomize.toolkit.fluxcd.io/name: keys\n    kustomize.toolkit.fluxcd.io/namespace: flux-keys\n",
        )
        .replace(SOURCE_SECRET, "");
    assert_eq!(
        argo.matches("kustomize.toolkit.fluxcd.io/name: keys")
            .count(),
        1,
        "the Secret's markers are the keys Kustomization's"
    );
    assert!(
        !argo.contains(SOURCE_SECRET),
        "Argo CD's source has no Secret"
    );
    let crd = FLUX
        .split("\n---\n")
        .find(|d| d.contains("name: kustomizations.kustomize.toolkit.fluxcd.io"))
        .expect("the Flux fixture has the Kustomization CRD");
    let keys = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: flux-keys\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: keys\n  namespace: flux-keys\nspec:\n  interval: 10m\n  path: ./keys\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: keys\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keys-source\n  namespace: flux-keys\ndata:\n  manifests: |\n{}",
        SOURCE_SECRET.trim_end().trim_end_matches("---").trim_end()
    );
    Scenario::built(format!("{argo}\n---\n{crd}\n---\n{keys}\n"), settings())
}

/// a21s S06b: the owner of the PSK Secret alone never applied the gateway, so its restore
/// at `done` does not wait for its source to stop defining the IPsecGateway (it never
/// did; before, it stayed suspended until a `--gitops resume`), and its repository is not
/// told to define the new objects (the prune protection stays on them all the same).
async fn the_owner_of_the_psk_alone_is_restored_at_done(b: &Bed) {
    applied_by(b, &["argocd-controller"]).await;
    bed::eventually(
        30,
        "the keys Kustomization applies the PSK Secret",
        || async {
            b.get(live::bed::SECRET, NS, "acme-psk")
                .await
                .is_some_and(|s| {
                    s["metadata"]["managedFields"]
                        .to_string()
                        .contains("kustomize-controller")
                })
        },
    )
    .await;
    let plan = b.step(PLAN, 4, &[]).await;
    assert!(
        live::flat(&plan.stdout).contains("kustomization/keys -n flux-keys"),
        "the plan names the Secret's owner:\n{}",
        plan.stdout
    );
    let r = b.step(PAUSE, 0, &[]).await;
    assert_eq!(b.phase(NS, "acme").await.as_deref(), Some("done"));
    let j = b.journal(NS, "acme").await.expect("a journal");
    let keys = j["gitops"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|g| g["owner"]["name"] == "keys")
        .expect("the journal holds the keys Kustomization");
    assert_eq!(keys["syncs"], json!(["secret/acme-psk"]), "{j}");
    let app = j["gitops"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|g| g["owner"]["name"] == "acme")
        .expect("the journal holds the Application");
    assert_eq!(app["syncs"], json!(["ipsecgateway/acme"]), "{j}");
    // The Application's source still defines the IPsecGateway (not merged): it stays
    // suspended. The keys Kustomization never defined it: restored.
    assert!(suspended(b, APPLICATION, "argocd", "acme").await);
    assert!(
        r.says("restored kustomization/keys -n flux-keys"),
        "{}",
        r.stderr
    );
    assert!(
        !suspended(b, KUSTOMIZATION, "flux-keys", "keys").await,
        "{}",
        r.stderr
    );
    assert!(
        !r.says("the cluster does not show whether its source still defines"),
        "{}",
        r.stderr
    );
    assert!(!r.says("the repository should define"), "{}", r.stderr);
    assert!(!r.says("once the repository defines it"), "{}", r.stderr);
    assert!(
        r.says("kustomization/keys -n flux-keys synced only secret/acme-psk for this window, so its repository need not define it, and the protection stays"),
        "{}",
        r.stderr
    );
    assert!(
        r.says("which synced only secret/acme-psk for this window (its markers were never on the gateway): its repository need not define them; the prune protection stays on them"),
        "{}",
        r.stderr
    );
}

crate::rows! {
    /// a21l A01: a Kustomization and a HelmRelease apply acme.
    a_helmrelease_beside_a_kustomization_is_paused_too: bed::Row {
        scenario: kustomization_and_helmrelease,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_helmrelease_beside_a_kustomization(b)),
    },
    /// a21l A08's kind: two Kustomizations in two namespaces apply acme.
    a_second_kustomization_in_another_namespace_is_paused_too: bed::Row {
        scenario: two_kustomizations,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(two_kustomizations_in_two_namespaces(b)),
    },
    /// An Argo CD Application, a HelmRelease and a Kustomization apply acme.
    three_owners_of_two_tools_are_all_paused: bed::Row {
        scenario: application_helmrelease_and_kustomization,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_helmrelease_beside_an_application_and_a_kustomization(b)),
    },
    /// A suspended Kustomization only its inventory names: listed and relied on.
    an_owner_only_its_inventory_names_is_listed_and_held: bed::Row {
        scenario: an_owner_only_its_inventory_names,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(an_owner_known_only_by_its_inventory(b)),
    },
    /// a21m B12: after a two-owner re-create, the stop names the writer, and a restored
    /// owner suspended since stays named until resumed.
    a_re_create_by_one_of_two_owners_names_the_writer_and_keeps_the_other_named: bed::Row {
        scenario: kustomization_and_gateway_only_helmrelease,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_re_create_by_one_of_two_owners_names_the_writer_and_keeps_the_other_named(b)),
    },
    /// A08's flow: the interference stop names the owner that re-created the gateway.
    a_re_created_gateway_names_the_owner_that_wrote_it: bed::Row {
        scenario: two_kustomizations,
        only: None,
        // Ends with the re-created IPsecGateway live beside the VPNGateway, on purpose.
        after: None,
        steps: |b| Box::pin(a_re_created_gateway_names_the_owner_that_wrote_it(b)),
    },
    /// a21s S06b: an owner of the PSK Secret alone is restored at `done` without a
    /// `--gitops resume`, and its repository is never told to define the new objects.
    the_owner_of_the_psk_alone_is_restored_at_done: bed::Row {
        scenario: a_keys_only_kustomization,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(the_owner_of_the_psk_alone_is_restored_at_done(b)),
    },
}
