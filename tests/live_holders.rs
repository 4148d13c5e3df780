//! Who holds a GitOps owner, and what a window says and protects when that is unknown or
//! taken over (issue 21 items 1, 2 and 4; a21k N03, N06). Each row runs on the emulator
//! and on the real control plane (tests/live/bed.rs).
//!
//! - **Holders unknown** (a21k N06): another window (in a namespace the user may not read)
//!   suspended the owner; a window that relies on it, run with a context that may not list
//!   the journals (or the Leases) there, never says "no vpnmig window suspended it" and
//!   never hands out a resume: it says what `status` says, and protects what it keeps.
//! - **Suspension taken over** (a21k N03): after a window's pause, another team writes the
//!   owner's policy (Flux `spec.suspend` by its own field manager, an Argo CD freeze) or
//!   re-enables it. `status` names the vpnmig run that protects what the window keeps and
//!   lets go, and warns that a resume before it may delete the client's key; after that
//!   run, the other team's resume of a source without the PSK Secret leaves it.

mod live;

use std::time::Duration;

use live::bed::{
    self, APPLICATION, After, Bed, CONFIGMAP, IPSECGATEWAY, KUSTOMIZATION, Kind, Row, SECRET,
    Scenario, VPNGATEWAY,
};
use serde_json::{Value, json};
use vpnmig_sandbox::SettingsFile;
use vpnmig_sandbox::api::auth::{Rule, User};

const NS: &str = "tenant-acme";
/// Where the other window's gateway is.
const OTHER: &str = "tenant-other";
const ARGO: &str = include_str!("../fixtures/clusters/acme-argocd.yaml");
const FLUX: &str = include_str!("../fixtures/clusters/acme-flux.yaml");
/// The restricted user's context.
const ONCALL: &str = "vpnmig-sandbox-oncall";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Tool {
    Argo,
    Flux,
}

impl Tool {
    fn kind(self) -> Kind {
        match self {
            Tool::Argo => APPLICATION,
            Tool::Flux => KUSTOMIZATION,
        }
    }
    /// The namespace of the owner `acme`.
    fn owner_ns(self) -> &'static str {
        match self {
            Tool::Argo => "argocd",
            Tool::Flux => "flux-system",
        }
    }
    fn shown(self) -> &'static str {
        match self {
            Tool::Argo => "application/acme -n argocd",
            Tool::Flux => "kustomization/acme -n flux-system",
        }
    }
    async fn owner(self, b: &Bed) -> Value {
        b.get(self.kind(), self.owner_ns(), "acme")
            .await
            .expect("the owner exists")
    }
    fn suspended(self, o: &Value) -> bool {
        match self {
            Tool::Argo => o["spec"]["syncPolicy"]["automated"].is_null(),
            Tool::Flux => o["spec"]["suspend"] == true,
        }
    }
    /// The merge patch that suspends it, as vpnmig's pause writes it.
    fn pause(self) -> Value {
        match self {
            Tool::Argo => json!({"spec": {"syncPolicy": {"automated": null}}}),
            Tool::Flux => json!({"spec": {"suspend": true}}),
        }
    }
    /// The annotation and value that keep an object from this owner's prune.
    fn prune_protection(self) -> (&'static str, &'static str) {
        match self {
            Tool::Argo => ("argocd.argoproj.io/sync-options", "Prune=false"),
            Tool::Flux => ("kustomize.toolkit.fluxcd.io/prune", "disabled"),
        }
    }
    /// "Git": the source ConfigMap's manifests.
    async fn source(self, b: &Bed) -> String {
        b.get(CONFIGMAP, self.owner_ns(), "acme-source")
            .await
            .unwrap()["data"]["manifests"]
            .as_str()
            .unwrap()
            .to_string()
    }
    async fn merge(self, b: &Bed, manifests: &str) {
        b.edit(CONFIGMAP, self.owner_ns(), "acme-source", |o| {
            o["data"]["manifests"] = json!(manifests)
        })
        .await;
        b.gitops.kick();
    }
    /// Whether the owner's status lists an object in namespace `ns`.
    async fn lists_namespace(self, b: &Bed, ns: &str) -> bool {
        let o = self.owner(b).await;
        match self {
            Tool::Argo => o["status"]["resources"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| r["namespace"] == ns),
            Tool::Flux => o["status"]["inventory"]["entries"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|e| {
                    e["id"]
                        .as_str()
                        .is_some_and(|id| id.starts_with(&format!("{ns}_")))
                }),
        }
    }
}

/// The scenario of `tool` (self-heal after 200 ms), its source also holding a ConfigMap in
/// [`OTHER`] (the other window's namespace, which the owner's status then names; Flux's
/// `targetNamespace` dropped so that each object keeps its own namespace), and the users.
fn scenario(tool: Tool, users: Vec<User>) -> Scenario {
    let base = match tool {
        Tool::Argo => ARGO,
        Tool::Flux => FLUX,
    };
    let marker = "  manifests: |\n";
    let at = base.find(marker).expect("the source ConfigMap") + marker.len();
    let note = "    apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: other-note\n      namespace: tenant-other\n    data:\n      team: other\n    ---\n";
    let mut yaml = format!("{}{note}{}", &base[..at], &base[at..]);
    yaml = yaml.replace("  targetNamespace: tenant-acme\n", "");
    yaml.push_str("\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: tenant-other\n");
    let mut s: SettingsFile = live::pool("10.250.3.0/24");
    s.gitops.self_heal_delay_ms = 200;
    s.users = users;
    Scenario::built(yaml, s)
}

/// A user who may do anything in acme's namespace and the owner's, and read gateways,
/// peers, namespaces and CRDs everywhere (what `plan` asks for), plus `more`.
/// (Argo CD: Applications in every namespace, where vpnmig looks for the ones that manage
/// the gateway.)
fn oncall(tool: Tool, more: Vec<Rule>) -> Vec<User> {
    let mut rules = vec![
        Rule {
            verbs: vec!["*".into()],
            resources: vec!["*".into()],
            namespaces: vec![NS.into(), tool.owner_ns().into()],
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
    ];
    if tool == Tool::Argo {
        rules.push(Rule::new(&["get", "list", "watch"], &["applications"]));
    }
    rules.extend(more);
    vec![User::with_rules("oncall", rules)]
}

/// It may read the journals in [`OTHER`], not its Leases.
fn journals_there() -> Vec<Rule> {
    vec![Rule {
        verbs: vec!["get".into(), "list".into(), "watch".into()],
        resources: vec!["configmaps".into()],
        namespaces: vec![OTHER.into()],
    }]
}

fn flux_journals_forbidden() -> Scenario {
    scenario(Tool::Flux, oncall(Tool::Flux, Vec::new()))
}
fn argo_journals_forbidden() -> Scenario {
    scenario(Tool::Argo, oncall(Tool::Argo, Vec::new()))
}
fn flux_lease_forbidden() -> Scenario {
    scenario(Tool::Flux, oncall(Tool::Flux, journals_there()))
}
fn argo_lease_forbidden() -> Scenario {
    scenario(Tool::Argo, oncall(Tool::Argo, journals_there()))
}
fn flux_admin() -> Scenario {
    scenario(Tool::Flux, Vec::new())
}
fn argo_admin() -> Scenario {
    scenario(Tool::Argo, Vec::new())
}

crate::rows! {
    /// a21k N06 on Flux: the journals of the window that suspended the owner cannot be
    /// listed (ConfigMaps forbidden in its namespace).
    flux_journals_forbidden_give_no_resume: Row {
        scenario: flux_journals_forbidden,
        only: None,
        after: After::acme("IPsecGateway"),
        steps: |b| Box::pin(holders_unknown(b, Tool::Flux, "list configmaps in all namespaces")),
    },
    /// The same on Argo CD.
    argo_journals_forbidden_give_no_resume: Row {
        scenario: argo_journals_forbidden,
        only: None,
        after: After::acme("IPsecGateway"),
        steps: |b| Box::pin(holders_unknown(b, Tool::Argo, "list configmaps in all namespaces")),
    },
    /// The journals there can be read, the Leases (a window whose journal is not written
    /// yet) cannot: still unknown, on Flux.
    flux_lease_forbidden_gives_no_resume: Row {
        scenario: flux_lease_forbidden,
        only: None,
        after: After::acme("IPsecGateway"),
        steps: |b| Box::pin(holders_unknown(b, Tool::Flux, "list leases in all namespaces")),
    },
    /// The same on Argo CD.
    argo_lease_forbidden_gives_no_resume: Row {
        scenario: argo_lease_forbidden,
        only: None,
        after: After::acme("IPsecGateway"),
        steps: |b| Box::pin(holders_unknown(b, Tool::Argo, "list leases in all namespaces")),
    },
    /// a21k N03: another team claims Flux's `spec.suspend` with its own field manager
    /// (server-side apply), then lifts it after the PSK moved out of Git.
    flux_suspend_claimed_by_another_manager_keeps_the_key: Row {
        scenario: flux_admin,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(taken_over(b, Tool::Flux, TakeOver::Claimed)),
    },
    /// Another team freezes the Argo CD Application (skip-reconcile), then lifts the
    /// freeze and arms automated sync with prune after the PSK moved out of Git.
    argo_frozen_by_another_team_keeps_the_key: Row {
        scenario: argo_admin,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(taken_over(b, Tool::Argo, TakeOver::Claimed)),
    },
    /// Re-enabled by someone else after the merge (the source still holds the PSK
    /// Secret), then the PSK moves out of Git: that sync must not prune it (Flux).
    flux_re_enabled_by_someone_else_keeps_the_key: Row {
        scenario: flux_admin,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(taken_over(b, Tool::Flux, TakeOver::ReEnabled)),
    },
    /// The same on Argo CD (automated sync with prune set again by another team).
    argo_re_enabled_by_someone_else_keeps_the_key: Row {
        scenario: argo_admin,
        only: None,
        after: After::acme("VPNGateway"),
        steps: |b| Box::pin(taken_over(b, Tool::Argo, TakeOver::ReEnabled)),
    },
}

/// The owner synced the scenario: the IPsecGateway carries its markers and its status
/// names [`OTHER`].
async fn adopted(b: &Bed, tool: Tool) {
    bed::eventually(20, "the owner syncs acme and tenant-other", || async {
        let g = b.get(IPSECGATEWAY, NS, "acme").await;
        let marked = g.is_some_and(|g| {
            g["metadata"]["managedFields"]
                .to_string()
                .contains("-controller")
                || g["metadata"]["annotations"]["argocd.argoproj.io/tracking-id"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("acme:"))
        });
        marked && tool.lists_namespace(b, OTHER).await && tool.lists_namespace(b, NS).await
    })
    .await;
}

/// The journal of a window on gateway `other` in [`OTHER`], under way (phase ready), that
/// suspended `tool`'s owner acme: written as vpnmig writes it, from the done window of
/// `fixtures/journals/`.
async fn other_window(b: &Bed, tool: Tool) {
    let mut j: Value =
        serde_json::from_str(include_str!("../fixtures/journals/done.json")).unwrap();
    j["gateway"] = json!("other");
    j["namespace"] = json!(OTHER);
    j["phase"] = json!("ready");
    j["oldManifest"]["metadata"]["namespace"] = json!(OTHER);
    j["oldManifest"]["metadata"]["name"] = json!("other");
    for t in j["targets"].as_array_mut().unwrap() {
        t["metadata"]["name"] = json!("other");
        t["metadata"]["namespace"] = json!(OTHER);
        if t["kind"] == "VPNPeer" {
            t["spec"]["gatewayRef"]["name"] = json!("other");
        }
    }
    let (g, v, _, kind) = tool.kind();
    j["gitops"] = json!([{"mode": "pause",
        "owner": {"apiVersion": format!("{g}/{v}"), "kind": kind, "namespace": tool.owner_ns(), "name": "acme"},
        "evidence": [],
        "saved": match tool {
            Tool::Argo => json!({"pointer": "/spec/syncPolicy/automated", "value": {"selfHeal": true, "prune": true}}),
            Tool::Flux => json!({"pointer": "/spec/suspend", "value": false}),
        },
        "paused": true}]);
    b.put(
        CONFIGMAP,
        OTHER,
        json!({"metadata": {"name": "vpnmig-other", "namespace": OTHER,
            "labels": {"app.kubernetes.io/managed-by": "vpnmig"}},
            "data": {"journal.json": j.to_string(), "phase": "ready"}}),
    )
    .await;
}

/// a21k N06: the owner is suspended by a window the user cannot see (`why`: the verb the
/// refusal names); acme's window would rely on it. The window's preflight asks for the
/// other windows' journals and locks (the reads `schedule --gitops` grants), so the run is
/// refused before any change: it never gets to an end that could hand out a resume.
/// `status` with that context offers no resume.
/// (The window's end says the same when the reads are refused only later; that path has
/// unit tests, not a row: the preflight stops every user this bed can make.)
async fn holders_unknown(b: &Bed, tool: Tool, why: &str) {
    adopted(b, tool).await;
    other_window(b, tool).await;
    b.patch_as(tool.kind(), tool.owner_ns(), "acme", "vpnmig", tool.pause())
        .await;
    assert!(tool.suspended(&tool.owner(b).await));
    let cut = [
        "cutover",
        "acme",
        "-n",
        NS,
        "--gitops",
        "pause",
        "--yes",
        "--context",
        ONCALL,
    ];
    let r = b.step(&cut, 7, &[]).await;
    for words in [
        "refusing to cut over: you may not",
        why,
        "nothing was changed",
    ] {
        assert!(
            r.says(words),
            "{}: missing {words:?} in:\n{}",
            b.backend,
            r.stderr
        );
    }
    no_resume(b, &r.stderr);
    assert!(
        b.get(IPSECGATEWAY, NS, "acme").await.is_some(),
        "{}: the IPsecGateway is kept",
        b.backend
    );
    assert!(b.get(SECRET, NS, "acme-psk").await.is_some());
    assert!(tool.suspended(&tool.owner(b).await));
    // `status` with that context: acme has no window yet, and no resume is offered.
    let r = b
        .vpnmig(&["status", "-n", NS, "-o", "wide", "--context", ONCALL])
        .await;
    assert!(
        live::flat(&r.stdout).contains("acme IPsecGateway no"),
        "{}: {}\n{}",
        b.backend,
        r.stdout,
        r.stderr
    );
    no_resume(b, &r.stdout);
    assert!(tool.suspended(&tool.owner(b).await));
}

/// No "suspended before the window", no resume of any shape.
fn no_resume(b: &Bed, text: &str) {
    let t = live::flat(text);
    for words in [
        "no vpnmig window suspended it",
        "flux resume",
        "kubectl patch application",
        "\"automated\"",
        "--gitops resume",
    ] {
        assert!(!t.contains(words), "{}: {words:?} in:\n{text}", b.backend);
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum TakeOver {
    /// Another team writes the owner's policy as its own while it stays suspended.
    Claimed,
    /// Another team re-enables it after the merge (the source still holds the key).
    ReEnabled,
}

/// The window's new objects, as the merged source defines them, with or without the PSK
/// Secret (as the scenario's source holds it).
async fn merged(b: &Bed, tool: Tool, with_secret: bool) -> String {
    let j = b.journal(NS, "acme").await.expect("the journal");
    let mut docs: Vec<String> = Vec::new();
    if with_secret {
        let source = tool.source(b).await;
        let secret = source
            .split("\n---\n")
            .find(|d| d.contains("kind: Secret") && d.contains("name: acme-psk"))
            .expect("the source's Secret")
            .to_string();
        docs.push(secret);
    }
    for t in j["targets"].as_array().unwrap() {
        docs.push(serde_json::to_string(t).unwrap());
    }
    docs.join("\n---\n")
}

/// Bounded: the owner's status shows a sync (Argo CD: a comparison after `last_sync`, its
/// `reconciledAt` before) of what its source now defines: the VPNGateway listed, and the
/// PSK Secret no longer among what it applies.
async fn synced_without_the_secret(b: &Bed, tool: Tool, last_sync: Value) {
    bed::eventually(
        30,
        "the owner syncs its source without the PSK Secret",
        || async {
            let o = tool.owner(b).await;
            match tool {
                Tool::Flux => {
                    let inv = o["status"]["inventory"].to_string();
                    o["status"]["conditions"][0]["status"] == "True"
                        && inv.contains("_VPNGateway")
                        && !inv.contains("acme-psk")
                }
                Tool::Argo => {
                    let rs = o["status"]["resources"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default();
                    rs.iter()
                        .any(|r| r["kind"] == "VPNGateway" && r["status"] == "Synced")
                        && o["status"]["reconciledAt"] != last_sync
                        && rs
                            .iter()
                            .filter(|r| r["kind"] == "Secret")
                            .all(|r| r["requiresPruning"] == true)
                }
            }
        },
    )
    .await;
    // One more round of the controller after that status.
    b.gitops.kick();
    tokio::time::sleep(Duration::from_millis(1500)).await;
}

/// a21k N03: the window's suspension taken over by another team (`how`). `status` names
/// the run that protects what the window keeps and lets go, and warns that a resume before
/// it may delete the client's key; that run protects; the other team's later resume of a
/// source without the PSK Secret leaves the Secret.
async fn taken_over(b: &Bed, tool: Tool, how: TakeOver) {
    adopted(b, tool).await;
    b.step(
        &["cutover", "acme", "-n", NS, "--gitops", "pause", "--yes"],
        0,
        &[],
    )
    .await;
    assert!(tool.suspended(&tool.owner(b).await));
    match how {
        TakeOver::Claimed => {
            match tool {
                // `kubectl apply --server-side --field-manager=team-storage
                // --force-conflicts`: the same value, the team's now.
                Tool::Flux => {
                    let ar = kube::api::ApiResource {
                        group: KUSTOMIZATION.0.into(),
                        version: KUSTOMIZATION.1.into(),
                        api_version: format!("{}/{}", KUSTOMIZATION.0, KUSTOMIZATION.1),
                        kind: KUSTOMIZATION.3.into(),
                        plural: KUSTOMIZATION.2.into(),
                    };
                    let api: kube::Api<kube::api::DynamicObject> =
                        kube::Api::namespaced_with(b.client.clone(), "flux-system", &ar);
                    api.patch(
                        "acme",
                        &kube::api::PatchParams::apply("team-storage").force(),
                        &kube::api::Patch::Apply(json!({
                            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
                            "kind": "Kustomization",
                            "metadata": {"name": "acme", "namespace": "flux-system"},
                            "spec": {"suspend": true}
                        })),
                    )
                    .await
                    .expect("the other team's apply");
                }
                Tool::Argo => {
                    b.patch_as(
                        APPLICATION,
                        "argocd",
                        "acme",
                        "kubectl-annotate",
                        json!({"metadata": {"annotations": {"argocd.argoproj.io/skip-reconcile": "true"}}}),
                    )
                    .await
                }
            }
            // The repository change merged, the PSK moved out of Git.
            let m = merged(b, tool, false).await;
            tool.merge(b, &m).await;
        }
        TakeOver::ReEnabled => {
            let m = merged(b, tool, true).await;
            tool.merge(b, &m).await;
            resume_as_other_team(b, tool).await;
            bed::eventually(
                30,
                "the re-enabled owner syncs the merged source",
                || async {
                    let o = tool.owner(b).await;
                    let listed = match tool {
                        Tool::Flux => o["status"]["inventory"].to_string(),
                        Tool::Argo => o["status"]["resources"].to_string(),
                    };
                    listed.contains("VPNGateway") && !listed.contains("IPsecGateway")
                },
            )
            .await;
        }
    }
    assert!(b.get(SECRET, NS, "acme-psk").await.is_some());
    // `status` names the run that hands over, and the risk until it has run.
    let r = b.vpnmig(&["status", "-n", NS, "-o", "wide"]).await;
    let out = live::flat(&r.stdout);
    for words in [
        "`vpnmig cutover acme -n tenant-acme` protects what the window keeps from it (secret/acme-psk -n tenant-acme, the PSK",
        "then lets go of it",
        &format!(
            "Until that has run, whoever resumes {} may delete the client's pre-shared key Secret secret/acme-psk -n tenant-acme",
            tool.shown()
        ),
    ] {
        assert!(
            out.contains(words),
            "{}: missing {words:?} in:\n{out}",
            b.backend
        );
    }
    // Followed: it protects, then lets go.
    let (key, value) = tool.prune_protection();
    b.step(
        &["cutover", "acme", "-n", NS, "--yes"],
        0,
        &[
            "before letting go",
            &format!("secret/acme-psk -n tenant-acme ({key}={value})"),
        ],
    )
    .await;
    let psk = b.get(SECRET, NS, "acme-psk").await.expect("the PSK Secret");
    assert!(
        psk["metadata"]["annotations"][key]
            .as_str()
            .is_some_and(|v| v.contains(value)),
        "{}: {psk}",
        b.backend
    );
    // The other team's resume of a source without the PSK Secret: it stays.
    let last_sync = tool.owner(b).await["status"]["reconciledAt"].clone();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    match how {
        TakeOver::Claimed => resume_as_other_team(b, tool).await,
        TakeOver::ReEnabled => {
            let m = merged(b, tool, false).await;
            tool.merge(b, &m).await;
        }
    }
    synced_without_the_secret(b, tool, last_sync).await;
    assert!(
        b.get(SECRET, NS, "acme-psk").await.is_some(),
        "{}: the resume pruned the client's key",
        b.backend
    );
    assert!(b.get(VPNGATEWAY, NS, "acme").await.is_some());
    assert!(b.get(IPSECGATEWAY, NS, "acme").await.is_none());
}

/// The other team resumes the owner (Flux `flux resume`; Argo CD: its freeze lifted and
/// automated sync with prune set), with its controller's field manager.
async fn resume_as_other_team(b: &Bed, tool: Tool) {
    match tool {
        Tool::Flux => {
            b.patch_as(
                KUSTOMIZATION,
                "flux-system",
                "acme",
                "flux",
                json!({"spec": {"suspend": false}}),
            )
            .await
        }
        Tool::Argo => {
            b.patch_as(
                APPLICATION,
                "argocd",
                "acme",
                "argocd-server",
                json!({"metadata": {"annotations": {"argocd.argoproj.io/skip-reconcile": null}},
                    "spec": {"syncPolicy": {"automated": {"prune": true, "selfHeal": true}}}}),
            )
            .await
        }
    }
    b.gitops.kick();
}
