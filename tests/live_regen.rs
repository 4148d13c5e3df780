//! A finished window whose replaced IPsecGateway is live again (issue 21 kinds 3 and 4;
//! the a21k attack's R07, N05, N09 and N12): no run of the window ends 0 beside it, and
//! none restores, vouches for or lets go of an owner while it is live. Every run (the
//! plain `cutover`, `--gitops resume`, the let-go of an owner re-created or changed
//! since) stops with exit 5 naming the re-created gateway and its delete; a vouch is per
//! owner; hints name an Application's real namespace; `status` attributes a gateway
//! re-created after vpnmig's own restore to that restore, and never promises a restore
//! that the run lets go.
//!
//! Rows on both control planes (tests/live/bed.rs), one per case of the table below.

mod live;

use live::bed::{
    self, APPLICATION, Bed, CONFIGMAP, IPSECGATEWAY, KUSTOMIZATION, Kind, NAMESPACE, Scenario,
    VPNGATEWAY,
};
use live::repo_in;
use serde_json::{Value, json};

const NS: &str = "tenant-acme";
const ARGO: &str = include_str!("../fixtures/clusters/acme-argocd.yaml");
const FLUX: &str = include_str!("../fixtures/clusters/acme-flux.yaml");
const CUT: &[&str] = &["cutover", "acme", "-n", NS, "--yes"];
const RESUME: &[&str] = &["cutover", "acme", "-n", NS, "--yes", "--gitops", "resume"];
const DELETE: &str = "`kubectl delete ipsecgateway acme -n tenant-acme`";
const LIVE_AGAIN: &str =
    "the gateway it replaced, is live again beside vpngateway/acme -n tenant-acme";

/// An owner `acme`: an Argo CD Application in `ns`, or the Flux Kustomization in
/// flux-system.
#[derive(Clone, Copy, Debug)]
enum Owner {
    Argo(&'static str),
    Flux,
}

impl Owner {
    fn kind(self) -> Kind {
        match self {
            Owner::Argo(_) => APPLICATION,
            Owner::Flux => KUSTOMIZATION,
        }
    }
    fn ns(self) -> &'static str {
        match self {
            Owner::Argo(ns) => ns,
            Owner::Flux => "flux-system",
        }
    }
    fn shown(self) -> String {
        match self {
            Owner::Argo(ns) => format!("application/acme -n {ns}"),
            Owner::Flux => "kustomization/acme -n flux-system".into(),
        }
    }
    async fn get(self, b: &Bed) -> Value {
        b.get(self.kind(), self.ns(), "acme")
            .await
            .expect("the owner exists")
    }
    async fn suspended(self, b: &Bed) -> bool {
        let o = self.get(b).await;
        match self {
            Owner::Argo(_) => o["spec"]["syncPolicy"]["automated"].is_null(),
            Owner::Flux => o["spec"]["suspend"] == true,
        }
    }
    async fn source(self, b: &Bed) -> String {
        b.get(CONFIGMAP, self.ns(), "acme-source").await.unwrap()["data"]["manifests"]
            .as_str()
            .unwrap()
            .to_string()
    }
    /// Merge a repository change: the source becomes `manifests`; an Argo CD owner's
    /// status then no longer lists the IPsecGateway.
    async fn merge(self, b: &Bed, manifests: &str) {
        b.edit(CONFIGMAP, self.ns(), "acme-source", |o| {
            o["data"]["manifests"] = json!(manifests)
        })
        .await;
        b.gitops.kick();
        if let Owner::Argo(_) = self {
            bed::eventually(
                30,
                "the Application no longer lists the IPsecGateway",
                || async {
                    !self.get(b).await["status"]["resources"]
                        .to_string()
                        .contains("IPsecGateway")
                },
            )
            .await;
        }
    }
    /// Its controller has applied the IPsecGateway (Flux: its field manager is on it;
    /// Argo CD: its status lists it Synced).
    async fn adopted(self, b: &Bed) {
        bed::eventually(20, "the GitOps controller applies acme", || async {
            let Some(g) = b.get(IPSECGATEWAY, NS, "acme").await else {
                return false;
            };
            match self {
                Owner::Flux => g["metadata"]["managedFields"]
                    .to_string()
                    .contains("kustomize-controller"),
                Owner::Argo(_) => self.get(b).await["status"]["resources"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|r| r["kind"] == "IPsecGateway" && r["status"] == "Synced"),
            }
        })
        .await;
    }
}

/// acme's Argo CD fixture with the Application (and its source) in `ns`.
fn argo_text(ns: &str) -> String {
    ARGO.replace("namespace: argocd", &format!("namespace: {ns}"))
        .replace("\n  name: argocd\n", &format!("\n  name: {ns}\n"))
}

fn settings() -> vpnmig_sandbox::SettingsFile {
    let mut s = live::pool("10.250.3.0/24");
    s.gitops.self_heal_delay_ms = 200;
    s
}

fn argo_elsewhere() -> Scenario {
    Scenario::built(argo_text("apps-west"), settings())
}

fn flux() -> Scenario {
    Scenario::new(FLUX, settings())
}

/// a21k N05: acme defined by the Flux Kustomization and by an Argo CD Application in
/// `argo-ops` (a move between GitOps tools that left both in place).
fn argo_and_flux() -> Scenario {
    let argo = argo_text("argo-ops");
    let extra: Vec<&str> = argo
        .split("\n---\n")
        .filter(|d| {
            d.contains("kind: CustomResourceDefinition")
                || d.contains("kind: Application\n")
                || (d.contains("kind: Namespace") && d.contains("name: argo-ops"))
                || d.contains("name: acme-source")
        })
        .collect();
    let marks = "    kustomize.toolkit.fluxcd.io/namespace: flux-system\n";
    let flux = FLUX
        .replace(
            &format!("{marks}type: Opaque"),
            &format!("{marks}    app.kubernetes.io/instance: acme\n  annotations:\n    argocd.argoproj.io/tracking-id: acme:/Secret:tenant-acme/acme-psk\ntype: Opaque"),
        )
        .replace(
            &format!("{marks}spec:"),
            &format!("{marks}    app.kubernetes.io/instance: acme\n  annotations:\n    argocd.argoproj.io/tracking-id: acme:ipsec.bnerd.net/IPsecGateway:tenant-acme/acme\nspec:"),
        );
    Scenario::built(
        format!("{flux}\n---\n{}\n", extra.join("\n---\n")),
        settings(),
    )
}

/// Plan with the repository rewrite of `owner`'s source, cut over with `--gitops pause`
/// (done, not merged); returns the rewritten source (the merge).
async fn done_unmerged(b: &Bed, owner: Owner) -> String {
    owner.adopted(b).await;
    let repo = repo_in(b.cwd(), &owner.source(b).await);
    let dir = repo.to_str().unwrap();
    b.step(
        &[
            "plan",
            "acme",
            "-n",
            NS,
            "--out",
            "plans/acme",
            "--gitops-repo",
            dir,
        ],
        4,
        &[],
    )
    .await;
    let rewritten = std::fs::read_to_string(repo.join("tenants/acme.yaml")).unwrap();
    b.step(
        &[
            "cutover",
            "acme",
            "-n",
            NS,
            "--plan",
            "plans/acme",
            "--gitops",
            "pause",
            "--yes",
        ],
        0,
        &[],
    )
    .await;
    assert_eq!(b.phase(NS, "acme").await.as_deref(), Some("done"));
    rewritten
}

async fn old_back(b: &Bed) {
    bed::eventually(30, "the IPsecGateway is re-created", || async {
        b.get(IPSECGATEWAY, NS, "acme").await.is_some()
    })
    .await;
}

/// The stop every run gives while the replaced gateway is live: exit 5, the gateway and
/// its delete named, the owner neither re-armed (its restore's time unchanged) nor let go.
async fn every_run_stops(b: &Bed, owner: Owner, runs: &[&[&str]], more: &[&str]) {
    let before = b.journal(NS, "acme").await.unwrap()["gitops"][0]["reArmedAt"].clone();
    for args in runs {
        let mut says = vec![LIVE_AGAIN, DELETE, "contests the floating IP 198.51.100.23"];
        says.extend(more);
        let r = b.step(args, 5, &says).await;
        assert!(!r.says("-n argocd"), "{}", r.stderr);
        let j = b.journal(NS, "acme").await.unwrap();
        assert_eq!(j["phase"], "done", "{j}");
        assert_eq!(j["gitops"][0]["paused"], true, "never let go: {j}");
        assert!(j["gitops"][0]["letGo"].is_null(), "never let go: {j}");
        assert_eq!(
            j["gitops"][0]["reArmedAt"], before,
            "never re-armed beside it: {j}"
        );
        assert!(b.get(IPSECGATEWAY, NS, "acme").await.is_some());
        let _ = owner;
    }
}

async fn status(b: &Bed) -> String {
    live::flat(&b.vpnmig(&["status", "-n", NS]).await.stdout)
}

/// R07's kind without a kill: done, not merged, `--gitops resume` (the vouch) re-arms the
/// Flux owner and its sync re-creates the IPsecGateway (stopped, suspended again). The
/// next vouch and the plain run each stop on the live gateway, and `status` names
/// vpnmig's own restore, not a controller that ignores its suspension. Deleted and
/// merged, the vouch restores it.
async fn a_vouch_re_created_it_then_every_run_stops(b: &Bed) {
    let owner = Owner::Flux;
    let merged = done_unmerged(b, owner).await;
    b.step(
        RESUME,
        5,
        &["was restored and its sync interfered, so vpnmig suspended it again"],
    )
    .await;
    old_back(b).await;
    let j = b.journal(NS, "acme").await.unwrap();
    assert!(j["gitops"][0]["reArmedAt"].is_string(), "{j}");
    every_run_stops(
        b,
        owner,
        &[RESUME, CUT],
        &["vpnmig's own restore re-armed it at"],
    )
    .await;
    restore_attributed(b, owner).await;
    b.delete(IPSECGATEWAY, NS, "acme").await;
    owner.merge(b, &merged).await;
    b.step(
        RESUME,
        0,
        &["synced: what the window made live is as it was"],
    )
    .await;
    assert!(b.get(IPSECGATEWAY, NS, "acme").await.is_none());
}

/// `status` after a gateway re-created while vpnmig's own restore had the owner re-armed.
async fn restore_attributed(b: &Bed, owner: Owner) {
    let st = status(b).await;
    assert!(
        st.contains(&format!(
            "GitOps sync suspended again after the window's own restore re-created the old gateway: {}",
            owner.shown()
        )),
        "{st}"
    );
    assert!(st.contains("had it re-armed"), "{st}");
    assert!(st.contains(DELETE), "{st}");
    assert!(!st.contains("ignores its suspension"), "{st}");
}

/// R07 itself: the restore killed -9 right after it re-armed the owner; its sync (3 s
/// later) re-creates the IPsecGateway. The first run stops (held before), then the wrong
/// vouch (the merge on the wrong branch) and the plain run after it: each exit 5, never
/// a re-arm, never "stays suspended" with 0.
async fn a_killed_restore_then_a_wrong_vouch_never_ends_0(b: &Bed) {
    let owner = Owner::Flux;
    let merged = done_unmerged(b, owner).await;
    b.gitops.settings().write().unwrap().self_heal_delay_ms = 3000;
    let mut child = b.spawn(RESUME);
    bed::eventually(30, "the restore re-arms the owner", || async {
        !owner.suspended(b).await
    })
    .await;
    child.kill().unwrap();
    let _ = child.wait();
    old_back(b).await;
    b.step(
        CUT,
        5,
        &["re-armed it, and its sync re-created ipsecgateway/acme -n tenant-acme"],
    )
    .await;
    assert!(owner.suspended(b).await);
    every_run_stops(b, owner, &[RESUME, CUT, RESUME], &[]).await;
    assert!(owner.suspended(b).await);
    restore_attributed(b, owner).await;
    b.gitops.settings().write().unwrap().self_heal_delay_ms = 200;
    b.delete(IPSECGATEWAY, NS, "acme").await;
    owner.merge(b, &merged).await;
    b.step(
        RESUME,
        0,
        &["synced: what the window made live is as it was"],
    )
    .await;
}

/// Made up, Argo CD in another namespace (`apps-west`): after done, a sync by hand
/// re-creates the IPsecGateway while the Application stays suspended. The plain run
/// (which said "stays suspended", 0) and the vouch stop on it; deleted and merged, the
/// plain run restores it.
async fn re_created_after_done_beside_a_suspended_application(b: &Bed) {
    let owner = Owner::Argo("apps-west");
    let merged = done_unmerged(b, owner).await;
    let mut old = b.journal(NS, "acme").await.unwrap()["oldManifest"].clone();
    old["metadata"]["labels"]["app.kubernetes.io/instance"] = json!("acme");
    b.put(IPSECGATEWAY, NS, old).await;
    every_run_stops(
        b,
        owner,
        &[CUT, RESUME],
        &["application/acme -n apps-west stays suspended as the window paused it"],
    )
    .await;
    assert!(owner.suspended(b).await);
    let j = b.journal(NS, "acme").await.unwrap();
    assert!(j["gitops"][0]["reArmedAt"].is_null(), "never re-armed: {j}");
    let st = status(b).await;
    assert!(st.contains(DELETE), "{st}");
    assert!(!st.contains("-n argocd"), "{st}");
    b.delete(IPSECGATEWAY, NS, "acme").await;
    owner.merge(b, &merged).await;
    b.step(
        CUT,
        0,
        &["application/acme -n apps-west synced: what the window made live is as it was"],
    )
    .await;
}

/// a21k N09's kind, without an ApplicationSet: the Application (in `apps-west`) deleted
/// and re-created automated since the pause; its sync re-creates the IPsecGateway.
/// `status` says the run lets go of it (never "restores it") and names the delete; the
/// let-go stops on the live gateway with the suspend command in the Application's real
/// namespace; suspended and deleted as advised, the run lets go of it (0).
async fn a_re_created_application_is_not_let_go_beside_its_gateway(b: &Bed) {
    let owner = Owner::Argo("apps-west");
    done_unmerged(b, owner).await;
    let app = owner.get(b).await;
    b.delete_until_gone(APPLICATION, "apps-west", "acme", 20)
        .await;
    let mut again = json!({"metadata": {"name": "acme", "namespace": "apps-west"}, "spec": app["spec"].clone()});
    again["spec"]["syncPolicy"]["automated"] = json!({"selfHeal": true, "prune": true});
    b.put(APPLICATION, "apps-west", again).await;
    b.gitops.kick();
    old_back(b).await;
    let st = status(b).await;
    assert!(
        st.contains("`vpnmig cutover acme -n tenant-acme` lets go of it in the journal"),
        "{st}"
    );
    assert!(st.contains(DELETE), "{st}");
    assert!(
        !st.contains("restores it once the repository change is merged"),
        "{st}"
    );
    every_run_stops(
        b,
        owner,
        &[CUT],
        &[
            "application/acme -n apps-west is not as the window paused it",
            "kubectl patch application acme -n apps-west --field-manager=vpnmig",
        ],
    )
    .await;
    // As advised: suspend it, delete the re-created gateway, run again.
    b.patch_as(
        APPLICATION,
        "apps-west",
        "acme",
        "vpnmig",
        json!({"spec": {"syncPolicy": {"automated": null}}}),
    )
    .await;
    b.delete(IPSECGATEWAY, NS, "acme").await;
    b.step(
        CUT,
        0,
        &["application/acme -n apps-west is not restored: it is not the object the window paused"],
    )
    .await;
    let j = b.journal(NS, "acme").await.unwrap();
    assert!(j["gitops"][0]["letGo"].is_string(), "{j}");
    assert!(b.get(IPSECGATEWAY, NS, "acme").await.is_none());
}

/// Made up, Flux: a colleague resumes the Kustomization (`flux resume`: its sync
/// re-creates the IPsecGateway) and suspends it again; its policy changed since. The
/// let-go (which ended 0 beside the gateway) stops on it, plain and vouched; deleted and
/// merged, the run lets go of it.
async fn a_policy_changed_since_is_not_let_go_beside_its_gateway(b: &Bed) {
    let owner = Owner::Flux;
    let merged = done_unmerged(b, owner).await;
    for suspend in [false, true] {
        b.patch_as(
            KUSTOMIZATION,
            "flux-system",
            "acme",
            "flux",
            json!({"spec": {"suspend": suspend}}),
        )
        .await;
        b.gitops.kick();
        if !suspend {
            old_back(b).await;
        }
    }
    every_run_stops(
        b,
        owner,
        &[CUT, RESUME],
        &["kustomization/acme -n flux-system is not as the window paused it"],
    )
    .await;
    b.delete(IPSECGATEWAY, NS, "acme").await;
    owner.merge(b, &merged).await;
    b.step(
        CUT,
        0,
        &["kustomization/acme -n flux-system is not restored: its policy changed since the window paused it"],
    )
    .await;
    assert!(b.get(IPSECGATEWAY, NS, "acme").await.is_none());
}

/// a21k N05: two owners over one gateway. Only the Flux repository is merged; the vouch
/// (`--gitops resume`) restores the Kustomization, whose status cannot show the merge,
/// and keeps the Application in `argo-ops`, whose own status shows the IPsecGateway
/// defined, suspended, saying why. Nothing re-creates the gateway. The Argo CD merge,
/// then the plain run restores it.
async fn a_vouch_is_per_owner(b: &Bed) {
    let (argo, flux) = (Owner::Argo("argo-ops"), Owner::Flux);
    argo.adopted(b).await;
    let merged = done_unmerged(b, flux).await;
    let j = b.journal(NS, "acme").await.unwrap();
    assert_eq!(j["gitops"].as_array().unwrap().len(), 2, "{j}");
    assert!(argo.suspended(b).await && flux.suspended(b).await);
    flux.merge(b, &merged).await;
    let r = b
        .step(
            RESUME,
            0,
            &[
                "application/acme -n argo-ops stays suspended: its source still defines ipsecgateway/acme -n tenant-acme (status of application/acme -n argo-ops, read now): `--gitops resume` vouches only for an owner whose status cannot show the merge",
                "kustomization/acme -n flux-system synced: what the window made live is as it was",
            ],
        )
        .await;
    assert!(!r.says("-n argocd"), "{}", r.stderr);
    assert!(argo.suspended(b).await, "the vouch never re-arms it");
    assert!(!flux.suspended(b).await);
    assert!(b.get(IPSECGATEWAY, NS, "acme").await.is_none());
    argo.merge(b, &merged).await;
    b.step(
        CUT,
        0,
        &["application/acme -n argo-ops synced: what the window made live is as it was"],
    )
    .await;
    assert!(!argo.suspended(b).await);
    assert!(b.get(IPSECGATEWAY, NS, "acme").await.is_none());
}

/// The end of a row that leaves the re-created IPsecGateway live: each owner suspended
/// (`suspend`: the Flux Kustomization suspended as a person would), then the gateway
/// deleted as advised and gone, as the row's end state asks.
async fn delete_as_advised(b: &Bed, suspend: bool) {
    if suspend {
        b.patch_as(
            KUSTOMIZATION,
            "flux-system",
            "acme",
            "flux",
            json!({"spec": {"suspend": true}}),
        )
        .await;
    }
    b.delete_until_gone(IPSECGATEWAY, NS, "acme", 30).await;
}

/// a21l A01/A08's kind, each made up: after done (the owner the window paused stays
/// suspended), another owner's sync re-creates the IPsecGateway: a HelmRelease in
/// `hr-acme`, or a second Kustomization in `flux-legacy` (its markers on the gateway).
/// The plain run (0 "stays suspended" before) and the vouch (it re-armed first) each stop
/// with exit 5 naming that owner too, not only the one the window paused; nothing is
/// re-armed or let go.
async fn another_owner_re_created_it(b: &Bed, labels: Value, named: &str) {
    let owner = Owner::Flux;
    done_unmerged(b, owner).await;
    let mut old = b.journal(NS, "acme").await.unwrap()["oldManifest"].clone();
    let marks = old["metadata"]["labels"].as_object_mut().unwrap();
    marks.retain(|k, _| !k.contains("toolkit.fluxcd.io"));
    for (k, v) in labels.as_object().unwrap() {
        marks.insert(k.clone(), v.clone());
    }
    b.put(IPSECGATEWAY, NS, old).await;
    every_run_stops(
        b,
        owner,
        &[CUT, RESUME, CUT],
        &[
            "may have re-created it: ",
            named,
            "kustomization/acme -n flux-system (the window paused it; live: suspended)",
        ],
    )
    .await;
    assert!(owner.suspended(b).await, "never re-armed beside it");
    delete_as_advised(b, false).await;
}

async fn a_helmrelease_re_created_it(b: &Bed) {
    another_owner_re_created_it(
        b,
        json!({"helm.toolkit.fluxcd.io/name": "acme-chart", "helm.toolkit.fluxcd.io/namespace": "hr-acme"}),
        "helmrelease/acme-chart -n hr-acme",
    )
    .await;
}

async fn a_second_kustomization_re_created_it(b: &Bed) {
    another_owner_re_created_it(
        b,
        json!({"kustomize.toolkit.fluxcd.io/name": "legacy", "kustomize.toolkit.fluxcd.io/namespace": "flux-legacy"}),
        "kustomization/legacy -n flux-legacy",
    )
    .await;
}

/// a21l A05's kind, made up: the Kustomization deleted and re-created with prune off
/// (another uid, syncing); its sync re-creates the IPsecGateway. The let-go stops on it;
/// suspended and deleted, the run lets go of it (0). Then it is resumed and re-creates
/// the gateway once more: the journal says done and holds no owner, yet every run
/// (plain, vouched) stops with exit 5, naming the owner it let go of, never "already
/// done" or "the cutover is complete"; `report` says the gateway is live again.
async fn re_created_after_the_let_go_never_says_complete(b: &Bed) {
    let owner = Owner::Flux;
    done_unmerged(b, owner).await;
    let ks = owner.get(b).await;
    b.delete_until_gone(KUSTOMIZATION, "flux-system", "acme", 20)
        .await;
    let mut again = json!({"metadata": {"name": "acme", "namespace": "flux-system"}, "spec": ks["spec"].clone()});
    again["spec"]["suspend"] = json!(false);
    again["spec"]["prune"] = json!(false);
    b.put(KUSTOMIZATION, "flux-system", again).await;
    b.gitops.kick();
    old_back(b).await;
    every_run_stops(
        b,
        owner,
        &[CUT, RESUME],
        &["kustomization/acme -n flux-system is not as the window paused it"],
    )
    .await;
    b.patch_as(
        KUSTOMIZATION,
        "flux-system",
        "acme",
        "flux",
        json!({"spec": {"suspend": true}}),
    )
    .await;
    b.delete(IPSECGATEWAY, NS, "acme").await;
    b.step(
        CUT,
        0,
        &["kustomization/acme -n flux-system is not restored: it is not the object the window paused"],
    )
    .await;
    b.patch_as(
        KUSTOMIZATION,
        "flux-system",
        "acme",
        "flux",
        json!({"spec": {"suspend": false}}),
    )
    .await;
    b.gitops.kick();
    old_back(b).await;
    for args in [CUT, RESUME, CUT] {
        let r = b
            .step(
                args,
                5,
                &[
                    LIVE_AGAIN,
                    DELETE,
                    "may have re-created it: kustomization/acme -n flux-system",
                    "kubectl patch kustomization acme -n flux-system",
                ],
            )
            .await;
        assert!(!r.says("already done"), "{}", r.stderr);
        assert!(!r.says("the cutover is complete"), "{}", r.stderr);
        let j = b.journal(NS, "acme").await.unwrap();
        assert_eq!(j["phase"], "done", "{j}");
    }
    b.step(
        &["report", "acme", "-n", NS],
        0,
        &[
            "ended done, but ipsecgateway/acme -n tenant-acme, the gateway it replaced, is live again",
            "not done as the record says",
            DELETE,
        ],
    )
    .await;
    delete_as_advised(b, true).await;
}

/// a21l A06's kind, Flux: `--gitops resume` interrupted with Ctrl-C (SIGINT) right after
/// its re-arm, its sync (3 s later) re-creates the IPsecGateway. The interrupted run says
/// the window's own restore is unfinished (never "the cutover is complete"); the next
/// run calls it so (never "re-enabled by someone else"), suspends it again and stops
/// (exit 5); every run after stops too; nothing is let go.
async fn ctrl_c_after_the_re_arm(b: &Bed) {
    let owner = Owner::Flux;
    done_unmerged(b, owner).await;
    b.gitops.settings().write().unwrap().self_heal_delay_ms = 3000;
    let child = b.spawn(RESUME);
    bed::eventually(30, "the restore re-arms the owner", || async {
        !owner.suspended(b).await
    })
    .await;
    let ok = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let out = child.wait_with_output().unwrap();
    let err = live::flat(&String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(!err.contains("the cutover is complete"), "{err}");
    assert!(
        err.contains("this window's own restore of kustomization/acme -n flux-system re-armed it and did not finish"),
        "{err}"
    );
    old_back(b).await;
    let st = status(b).await;
    assert!(!st.contains("re-enabled by someone else"), "{st}");
    let r = b
        .step(
            CUT,
            5,
            &["re-armed it, and its sync re-created ipsecgateway/acme -n tenant-acme"],
        )
        .await;
    assert!(!r.says("re-enabled by someone else"), "{}", r.stderr);
    assert!(owner.suspended(b).await);
    every_run_stops(b, owner, &[RESUME, CUT], &[]).await;
    b.gitops.settings().write().unwrap().self_heal_delay_ms = 200;
    delete_as_advised(b, false).await;
}

/// Argo CD in `apps-west`, made up: merged, the plain run's restore killed -9 right after
/// its re-arm; a bad merge then puts the old gateway back in the source, and the re-armed
/// Application's sync re-creates the IPsecGateway. The next run names the window's own
/// restore, unfinished (never "re-enabled by someone else"), suspends it again and stops
/// (exit 5); every run after stops too, and nothing is let go.
async fn an_argo_killed_restore_then_a_revert(b: &Bed) {
    let owner = Owner::Argo("apps-west");
    let merged = done_unmerged(b, owner).await;
    let original = owner.source(b).await;
    owner.merge(b, &merged).await;
    b.gitops.settings().write().unwrap().self_heal_delay_ms = 3000;
    let mut child = b.spawn(CUT);
    bed::eventually(30, "the restore re-arms the owner", || async {
        !owner.suspended(b).await
    })
    .await;
    child.kill().unwrap();
    let _ = child.wait();
    // A bad merge puts the old gateway's document back beside the new objects.
    let gateway = original
        .split("\n---\n")
        .find(|d| d.contains("kind: IPsecGateway"))
        .expect("the source defined the IPsecGateway")
        .to_string();
    let wrong = format!("{}\n---\n{gateway}\n", merged.trim_end());
    b.edit(CONFIGMAP, owner.ns(), "acme-source", |o| {
        o["data"]["manifests"] = json!(wrong)
    })
    .await;
    b.gitops.kick();
    old_back(b).await;
    let st = status(b).await;
    assert!(!st.contains("re-enabled by someone else"), "{st}");
    let r = b
        .step(
            CUT,
            5,
            &[
                "was re-armed by this window's own restore",
                "re-armed it, and its sync re-created ipsecgateway/acme -n tenant-acme",
            ],
        )
        .await;
    assert!(!r.says("re-enabled by someone else"), "{}", r.stderr);
    assert!(!r.says("-n argocd"), "{}", r.stderr);
    assert!(owner.suspended(b).await);
    every_run_stops(b, owner, &[RESUME, CUT], &[]).await;
    assert!(owner.suspended(b).await);
    b.gitops.settings().write().unwrap().self_heal_delay_ms = 200;
    delete_as_advised(b, false).await;
}

/// A gateway other than acme that claims acme's floating IP (a21m B15, B18): its kind,
/// namespace and name, and its floating IP as it spells acme's.
#[derive(Clone, Copy)]
struct Claim {
    kind: Kind,
    ns: &'static str,
    name: &'static str,
    fip: &'static str,
}

impl Claim {
    fn shown(self) -> String {
        format!(
            "{}/{} -n {}",
            self.kind.3.to_lowercase(),
            self.name,
            self.ns
        )
    }
    fn delete(self) -> String {
        format!(
            "`kubectl delete {} {} -n {}`",
            self.kind.3.to_lowercase(),
            self.name,
            self.ns
        )
    }
    /// The object: the old gateway's spec (an IPsecGateway) or the migrated one's (a
    /// VPNGateway), under its name, its floating IP pinned as it spells it.
    async fn object(self, b: &Bed) -> Value {
        let mut spec = if self.kind == IPSECGATEWAY {
            b.journal(NS, "acme").await.unwrap()["oldManifest"]["spec"].clone()
        } else {
            match b.get(VPNGATEWAY, NS, "acme").await {
                Some(g) => g["spec"].clone(),
                // Rolled back: the VPNGateway the cutover applied, from the journal.
                None => b.journal(NS, "acme").await.unwrap()["targets"][0]["spec"].clone(),
            }
        };
        spec["endpoint"]["floatingIP"] = json!(self.fip);
        json!({
            "apiVersion": format!("{}/{}", self.kind.0, self.kind.1),
            "kind": self.kind.3,
            "metadata": {"name": self.name, "namespace": self.ns},
            "spec": spec,
        })
    }
    async fn live(self, b: &Bed) -> Option<Value> {
        b.get(self.kind, self.ns, self.name).await
    }
    /// Its namespace, created when the scenario has none.
    async fn namespace(self, b: &Bed) {
        if b.get(NAMESPACE, "", self.ns).await.is_none() {
            b.put(NAMESPACE, "", json!({"metadata": {"name": self.ns}}))
                .await;
        }
    }
    async fn gone(self, b: &Bed) {
        b.delete(self.kind, self.ns, self.name).await;
        bed::eventually(30, "the claimant is gone", || async {
            self.live(b).await.is_none()
        })
        .await;
    }
}

/// The stop every run of the finished window gives while `c` claims the floating IP:
/// exit 5 naming it, the address, who wrote it (`writer`), the owners (`more`) and its
/// delete; never "as it was" or "complete"; the owner neither re-armed nor let go.
async fn every_run_stops_on_the_claim(b: &Bed, c: Claim, runs: &[&[&str]], more: &[&str]) {
    let before = b.journal(NS, "acme").await.unwrap()["gitops"][0]["reArmedAt"].clone();
    for args in runs {
        let shown = c.shown();
        let delete = c.delete();
        let mut says = vec![
            "the cutover of tenant-acme/acme is done, but another gateway claims its floating IP 198.51.100.23 beside vpngateway/acme -n tenant-acme",
            "AlreadyAssociated",
            shown.as_str(),
            delete.as_str(),
            "written by",
        ];
        says.extend(more);
        let r = b.step(args, 5, &says).await;
        for never in ["as it was", "the cutover is complete", "already done"] {
            assert!(!r.says(never), "{never:?} in {}", r.stderr);
        }
        let j = b.journal(NS, "acme").await.unwrap();
        assert_eq!(j["phase"], "done", "{j}");
        assert_eq!(j["gitops"][0]["paused"], true, "never let go: {j}");
        assert!(j["gitops"][0]["letGo"].is_null(), "never let go: {j}");
        assert_eq!(
            j["gitops"][0]["reArmedAt"], before,
            "never re-armed beside it: {j}"
        );
        assert!(c.live(b).await.is_some());
    }
    // The record is the window's; `report` says the cluster's now beside it.
    let (shown, delete) = (c.shown(), c.delete());
    b.step(
        &["report", "acme", "-n", NS],
        0,
        &[
            "warning: the window of tenant-acme/acme ended done, but another gateway claims its floating IP 198.51.100.23 beside vpngateway/acme -n tenant-acme",
            &shown,
            &delete,
            "not done as the record says",
        ],
    )
    .await;
    // `status` advises on the owner the window holds: the claimant's delete first (a21n
    // C01: it advised the restore beside it and named none).
    let st = live::flat(&b.vpnmig(&["status", "-A"]).await.stdout);
    let first = format!(
        "another gateway claims the floating IP 198.51.100.23 of tenant-acme/acme: {} (`kubectl delete {} {} -n {}`): delete it once nothing re-creates it",
        c.shown(),
        c.kind.3.to_lowercase(),
        c.name,
        c.ns
    );
    assert!(st.contains(&first), "{first:?} not in:\n{st}");
}

/// The source `merged` plus the claimant `c` (a JSON document is YAML).
async fn with_claim(b: &Bed, merged: &str, c: Claim) -> String {
    format!("{}\n---\n{}\n", merged.trim_end(), c.object(b).await)
}

/// a21m B18's kind (Flux, the vouch), one row per claimant the owner's merged source
/// defines beside the new objects: its first sync creates it. `--gitops resume` (which
/// said "synced: … as it was", 0) stops (exit 5) naming it, the controller that wrote it
/// and its delete, and suspends the owner again; every run after stops the same. The
/// source fixed and the claimant deleted, the vouch restores it.
async fn a_flux_sync_created_a_claimant(b: &Bed, c: Claim) {
    let owner = Owner::Flux;
    let merged = done_unmerged(b, owner).await;
    c.namespace(b).await;
    let bad = with_claim(b, &merged, c).await;
    owner.merge(b, &bad).await;
    let shown = c.shown();
    let delete = c.delete();
    let r = b
        .step(
            RESUME,
            5,
            &[
                "kustomization/acme -n flux-system was restored and its sync interfered, so vpnmig suspended it again",
                "another gateway claims its floating IP 198.51.100.23",
                &shown,
                "field manager kustomize-controller",
                "may have created it: kustomization/acme -n flux-system",
                &delete,
            ],
        )
        .await;
    assert!(!r.says("as it was"), "{}", r.stderr);
    assert!(owner.suspended(b).await, "suspended again");
    let created = c.live(b).await.expect("its sync created it");
    assert!(
        created["metadata"]["managedFields"]
            .to_string()
            .contains("kustomize-controller"),
        "{created}"
    );
    every_run_stops_on_the_claim(
        b,
        c,
        &[CUT, RESUME, CUT],
        &["may have created it: kustomization/acme -n flux-system"],
    )
    .await;
    assert!(owner.suspended(b).await);
    owner.merge(b, &merged).await;
    c.gone(b).await;
    b.step(
        RESUME,
        0,
        &["kustomization/acme -n flux-system synced: what the window made live is as it was"],
    )
    .await;
    assert!(c.live(b).await.is_none());
    assert!(b.get(IPSECGATEWAY, NS, "acme").await.is_none());
}

async fn flux_a_renamed_copy(b: &Bed) {
    a_flux_sync_created_a_claimant(
        b,
        Claim {
            kind: IPSECGATEWAY,
            ns: NS,
            name: "acme-legacy",
            fip: "198.51.100.23",
        },
    )
    .await;
}

async fn flux_a_vpngateway_spelled_otherwise(b: &Bed) {
    a_flux_sync_created_a_claimant(
        b,
        Claim {
            kind: VPNGATEWAY,
            ns: NS,
            name: "acme-twin",
            fip: "198.51.100.23/32",
        },
    )
    .await;
}

/// a21m B15's kind (Argo CD in apps-west, the plain run): the merged source defines a
/// renamed copy of the old gateway beside the new objects. Before the re-arm, the
/// Application's status lists it, not live: the run keeps it suspended (never "as it
/// was"), and nothing creates it. Then someone applies an IPsecGateway `acme` in
/// `apps-west` by hand on the same address: every run stops (exit 5) naming it. Fixed
/// (the source merged without the copy, the claimant deleted), the plain run restores it.
async fn an_argo_source_with_a_renamed_copy(b: &Bed) {
    let owner = Owner::Argo("apps-west");
    let merged = done_unmerged(b, owner).await;
    let copy = Claim {
        kind: IPSECGATEWAY,
        ns: NS,
        name: "acme-legacy",
        fip: "198.51.100.23",
    };
    let bad = with_claim(b, &merged, copy).await;
    b.edit(CONFIGMAP, owner.ns(), "acme-source", |o| {
        o["data"]["manifests"] = json!(bad)
    })
    .await;
    b.gitops.kick();
    bed::eventually(30, "the Application lists acme-legacy", || async {
        owner.get(b).await["status"]["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|r| r["name"] == "acme-legacy")
    })
    .await;
    let r = b
        .step(
            CUT,
            0,
            &[
                "application/acme -n apps-west stays suspended: its source defines ipsecgateway/acme-legacy -n tenant-acme (status of application/acme -n apps-west, read now), which is not live: its first sync would create it",
                "contests it with vpngateway/acme -n tenant-acme (AlreadyAssociated)",
            ],
        )
        .await;
    assert!(!r.says("as it was"), "{}", r.stderr);
    assert!(owner.suspended(b).await, "never re-armed");
    assert!(copy.live(b).await.is_none(), "nothing created it");
    // By hand, in another namespace, under the window's own name.
    let by_hand = Claim {
        kind: IPSECGATEWAY,
        ns: "apps-west",
        name: "acme",
        fip: "198.51.100.23",
    };
    let obj = by_hand.object(b).await;
    b.put(IPSECGATEWAY, by_hand.ns, obj).await;
    every_run_stops_on_the_claim(
        b,
        by_hand,
        &[CUT, RESUME],
        &["may have created it: application/acme -n apps-west (the window paused it; live: suspended)"],
    )
    .await;
    let st = live::flat(&b.vpnmig(&["status", "-A"]).await.stdout);
    assert!(st.contains("fip-shared"), "{st}");
    owner.merge(b, &merged).await;
    by_hand.gone(b).await;
    b.step(
        CUT,
        0,
        &["application/acme -n apps-west synced: what the window made live is as it was"],
    )
    .await;
    assert!(copy.live(b).await.is_none());
}

/// a21n C11's kind (the rollback's restore): after done, the source is left as it was
/// (it defines the old gateway) plus a VPNGateway `acme-neu` pinning the window's floating
/// IP. The rollback's restore (Flux: `--gitops resume`; Argo CD: the plain run) said
/// "synced: … as it was" and verify HEALTHY beside it. Now its first sync's claimant stops
/// it (exit 5) naming the VPNGateway, its delete and the owner, which is suspended again;
/// every rollback after stops the same; verify of the IPsecGateway fails its floating-IP
/// row. The source fixed and the claimant deleted, the rollback restores the owner.
async fn a_rollback_s_sync_created_a_claimant(b: &Bed, owner: Owner, rollback: &[&str]) {
    let _ = done_unmerged(b, owner).await;
    let reverted = owner.source(b).await;
    let c = Claim {
        kind: VPNGATEWAY,
        ns: NS,
        name: "acme-neu",
        fip: "198.51.100.23",
    };
    let bad = with_claim(b, &reverted, c).await;
    b.edit(CONFIGMAP, owner.ns(), "acme-source", |o| {
        o["data"]["manifests"] = json!(bad)
    })
    .await;
    let (shown, delete) = (c.shown(), c.delete());
    let says = [
        "the rollback of tenant-acme/acme is finished, but another gateway claims its floating IP 198.51.100.23 beside ipsecgateway/acme -n tenant-acme",
        shown.as_str(),
        delete.as_str(),
        "may have created it",
    ];
    for _ in 0..2 {
        let r = b.step(rollback, 5, &says).await;
        for never in ["as it was", "already rolled back"] {
            assert!(!r.says(never), "{never:?} in {}", r.stderr);
        }
        assert!(owner.suspended(b).await, "suspended again");
        assert!(c.live(b).await.is_some(), "its sync created it");
        let j = b.journal(NS, "acme").await.unwrap();
        assert_eq!(j["phase"], "rolled-back", "{j}");
    }
    b.step(
        &["report", "acme", "-n", NS],
        0,
        &[
            "warning: the window of tenant-acme/acme ended rolled-back, but another gateway claims its floating IP 198.51.100.23 beside ipsecgateway/acme -n tenant-acme",
            shown.as_str(),
            delete.as_str(),
            "not rolled-back as the record says",
        ],
    )
    .await;
    let st = live::flat(&b.vpnmig(&["status", "-A"]).await.stdout);
    let first = format!(
        "another gateway claims the floating IP 198.51.100.23 of tenant-acme/acme: {shown} ({delete}): delete it once nothing re-creates it, else every `vpnmig rollback acme -n tenant-acme` stops on it"
    );
    assert!(st.contains(&first), "{first:?} not in:\n{st}");
    let v = b.vpnmig(&["verify", "acme", "-n", NS]).await;
    assert_eq!(v.code, 5, "{}{}", v.stdout, v.stderr);
    let shown_v = live::flat(&v.stdout);
    assert!(
        shown_v.contains("VPNGateway tenant-acme/acme-neu also claims it"),
        "{shown_v}"
    );
    b.edit(CONFIGMAP, owner.ns(), "acme-source", |o| {
        o["data"]["manifests"] = json!(reverted)
    })
    .await;
    c.gone(b).await;
    let r = b.step(rollback, 0, &["as it was"]).await;
    assert!(!r.says("another gateway claims"), "{}", r.stderr);
    assert!(!owner.suspended(b).await, "restored");
    assert!(c.live(b).await.is_none());
}

async fn flux_a_rollback_s_claimant(b: &Bed) {
    a_rollback_s_sync_created_a_claimant(
        b,
        Owner::Flux,
        &["rollback", "acme", "-n", NS, "--yes", "--gitops", "resume"],
    )
    .await;
}

async fn argo_a_rollback_s_claimant(b: &Bed) {
    a_rollback_s_sync_created_a_claimant(
        b,
        Owner::Argo("apps-west"),
        &["rollback", "acme", "-n", NS, "--yes"],
    )
    .await;
}

/// How the finished window of a21o D06, D15, D16, D17 came about: GitOps (`done_unmerged`,
/// then the rollback's own run where it is rolled back) or none (`cutover --yes`).
#[derive(Clone, Copy)]
enum Ended {
    Done(Option<Owner>),
    RolledBack(Option<Owner>),
}

fn plain() -> Scenario {
    Scenario::new(live::ACME, settings())
}

/// acme without GitOps, with `here-only`, who may read everything in tenant-acme only.
fn plain_and_a_namespace_reader() -> Scenario {
    let mut s = settings();
    let mut here = vpnmig_sandbox::api::auth::Rule::new(&["get", "list", "watch"], &["*"]);
    here.namespaces = vec![NS.to_string()];
    s.users = vec![vpnmig_sandbox::api::auth::User::with_rules(
        "here-only",
        vec![
            here,
            vpnmig_sandbox::api::auth::Rule::new(
                &["get", "list", "watch"],
                &["namespaces", "customresourcedefinitions"],
            ),
            vpnmig_sandbox::api::auth::Rule::new(&["create"], &["selfsubjectaccessreviews"]),
        ],
    )];
    Scenario::new(live::ACME, s)
}

async fn end(b: &Bed, how: Ended) {
    match how {
        Ended::Done(Some(o)) | Ended::RolledBack(Some(o)) => {
            let _ = done_unmerged(b, o).await;
        }
        Ended::Done(None) | Ended::RolledBack(None) => {
            b.step(CUT, 0, &[]).await;
        }
    }
    match how {
        Ended::RolledBack(Some(Owner::Flux)) => {
            b.step(
                &["rollback", "acme", "-n", NS, "--yes", "--gitops", "resume"],
                0,
                &[],
            )
            .await;
        }
        Ended::RolledBack(_) => {
            b.step(&["rollback", "acme", "-n", NS, "--yes"], 0, &[])
                .await;
        }
        Ended::Done(_) => {}
    }
    let want = match how {
        Ended::Done(_) => "done",
        Ended::RolledBack(_) => "rolled-back",
    };
    assert_eq!(b.phase(NS, "acme").await.as_deref(), Some(want));
}

/// a21o D06, D15, D16, D17: a finished window, then another gateway in another namespace
/// under another name claims its floating IP (by hand, spelled `/32`). The change record
/// (md, json, `--out` md/html/json) says so in its outcome, its next step and beside what
/// the hash chain covers, with each claimant's delete, and JSON has `readAtReport`;
/// `status -n tenant-acme` names it with its delete (text) and `fipClaimedElsewhere`
/// (json), the row blocked `fip-shared`; a rolled-back window's rollback stops on it
/// (exit 5) instead of "nothing to do". The claimant deleted, all of it is gone.
async fn a_claimant_elsewhere(b: &Bed, how: Ended, c: Claim) {
    end(b, how).await;
    c.namespace(b).await;
    b.put(c.kind, c.ns, c.object(b).await).await;
    let done = matches!(how, Ended::Done(_));
    let (shown, delete) = (c.shown(), c.delete());
    let named = format!("{shown} ({delete})");
    let journal_says = if done {
        "done: the cutover is complete"
    } else {
        "rolled back: the IPsecGateway was re-created"
    };
    // The record, on stdout.
    let r = b.vpnmig(&["report", "acme", "-n", NS]).await;
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // Markdown escapes the backticks of a command.
    let md = live::flat(&r.stdout).replace('\\', "");
    for want in [
        named.as_str(),
        "read at report time (not covered by the hash chain), another gateway claims the floating IP",
        "Read at report time: another gateway claims the floating IP",
        "the hash chain does not cover it",
    ] {
        assert!(md.contains(&live::flat(want)), "{want:?} not in:\n{md}");
    }
    for never in [journal_says, "reverses it", "the IPsecGateway is back:"] {
        assert!(!md.contains(never), "{never:?} in:\n{md}");
    }
    // JSON: machine-readable.
    let r = b.vpnmig(&["report", "acme", "-n", NS, "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    let kind = c.kind.3;
    assert_eq!(
        doc["readAtReport"]["fipClaimants"],
        json!([{"kind": kind, "namespace": c.ns, "name": c.name,
                "delete": format!("kubectl delete {} {} -n {}", kind.to_lowercase(), c.name, c.ns)}]),
        "{doc}"
    );
    assert_eq!(doc["readAtReport"]["floatingIP"], "198.51.100.23", "{doc}");
    assert!(doc["readAtReport"]["fipClaimantsUnread"].is_null(), "{doc}");
    assert!(
        doc["recovery"]["next"]
            .as_str()
            .unwrap()
            .contains(delete.trim_matches('`')),
        "{doc}"
    );
    // --out FILE, each format.
    for ext in ["md", "html", "json"] {
        let file = format!("record.{ext}");
        b.step(&["report", "acme", "-n", NS, "--out", &file], 0, &[])
            .await;
        let text = std::fs::read_to_string(b.cwd().join(&file)).unwrap();
        for want in [
            c.name,
            c.ns,
            "read at report time",
            "the hash chain does not cover it",
        ] {
            assert!(text.contains(want), "{want:?} not in {file}:\n{text}");
        }
        assert!(!text.contains(journal_says), "{file}:\n{text}");
    }
    // status -n: the claimant of another namespace, with its delete.
    let st = b.vpnmig(&["status", "-n", NS]).await;
    assert_eq!(st.code, 0, "{}", st.stderr);
    let text = live::flat(&st.stdout);
    assert!(text.contains(&named), "{named:?} not in:\n{text}");
    assert!(text.contains("fip-shared"), "{text}");
    let st = b.vpnmig(&["status", "-n", NS, "-o", "json"]).await;
    let doc: Value = serde_json::from_str(&st.stdout).unwrap();
    let left = if done { "VPNGateway" } else { "IPsecGateway" };
    assert_eq!(doc["fipClaimedElsewhere"][0]["gateway"], "acme", "{doc}");
    assert_eq!(doc["fipClaimedElsewhere"][0]["kind"], left, "{doc}");
    assert_eq!(
        doc["fipClaimedElsewhere"][0]["claimedBy"][0]["name"], c.name,
        "{doc}"
    );
    let row = doc["gateways"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "acme" && r["kind"] == left)
        .unwrap_or_else(|| panic!("no {left} row: {doc}"));
    assert!(row["blockers"].to_string().contains("fip-shared"), "{row}");
    if !done {
        let r = b
            .step(
                &["rollback", "acme", "-n", NS, "--yes"],
                5,
                &[
                    "the rollback of tenant-acme/acme is finished, but another gateway claims its floating IP",
                    &shown,
                    &delete,
                ],
            )
            .await;
        assert!(!r.says("nothing to do"), "{}", r.stderr);
        assert_eq!(b.phase(NS, "acme").await.as_deref(), Some("rolled-back"));
    }
    // Deleted: nothing of it is said any more.
    c.gone(b).await;
    let r = b.vpnmig(&["report", "acme", "-n", NS, "-o", "json"]).await;
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(doc["readAtReport"].is_null(), "{doc}");
    let r = b.vpnmig(&["report", "acme", "-n", NS]).await;
    assert!(live::flat(&r.stdout).contains(journal_says), "{}", r.stdout);
    let st = b.vpnmig(&["status", "-n", NS, "-o", "json"]).await;
    let doc: Value = serde_json::from_str(&st.stdout).unwrap();
    assert!(doc["fipClaimedElsewhere"].is_null(), "{doc}");
    if !done {
        b.step(
            &["rollback", "acme", "-n", NS, "--yes"],
            0,
            &["nothing to do"],
        )
        .await;
    }
}

const ANDERER: Claim = Claim {
    kind: IPSECGATEWAY,
    ns: "fremd",
    name: "anderer",
    fip: "198.51.100.23/32",
};
const DIEB: Claim = Claim {
    kind: VPNGATEWAY,
    ns: "fremd",
    name: "dieb",
    fip: "198.51.100.23/32",
};

/// A refused cluster-wide list (a user who may read tenant-acme only): `status -n` and the
/// record say that whether another gateway claims the floating IP could not be read;
/// never "none".
async fn a_refused_cluster_wide_list_is_said(b: &Bed) {
    end(b, Ended::Done(None)).await;
    let ctx = ["--context", "vpnmig-sandbox-here-only"];
    let st = b
        .vpnmig(&[&ctx[..], &["status", "-n", NS, "-o", "json"]].concat())
        .await;
    let doc: Value = serde_json::from_str(&st.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", st.stdout, st.stderr));
    assert_eq!(doc["fipClaimedElsewhere"][0]["gateway"], "acme", "{doc}");
    assert!(doc["fipClaimedElsewhere"][0]["unread"].is_string(), "{doc}");
    let st = b.vpnmig(&[&ctx[..], &["status", "-n", NS]].concat()).await;
    let text = live::flat(&st.stdout);
    assert!(
        text.contains("floating IP 198.51.100.23 of vpngateway/acme -n tenant-acme: whether a gateway of another namespace claims it is unknown"),
        "{text}\n{}",
        st.stderr
    );
    let r = b
        .vpnmig(&[&ctx[..], &["report", "acme", "-n", NS, "-o", "json"]].concat())
        .await;
    let doc: Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", r.stdout, r.stderr));
    assert!(
        doc["readAtReport"]["fipClaimantsUnread"].is_string(),
        "{doc}"
    );
    let r = b
        .vpnmig(&[&ctx[..], &["report", "acme", "-n", NS]].concat())
        .await;
    let md = live::flat(&r.stdout);
    assert!(
        md.contains("whether the cutover is complete is not known"),
        "{md}"
    );
    assert!(!md.contains("done: the cutover is complete"), "{md}");
}

crate::rows! {
    /// a21o D06: Flux, done, IPsecGateway fremd/anderer claims 198.51.100.23/32.
    a_done_flux_window_s_record_names_an_ipsecgateway_elsewhere: bed::Row {
        scenario: flux,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_claimant_elsewhere(b, Ended::Done(Some(Owner::Flux)), ANDERER)),
    },
    /// a21o D16's kind: Argo CD in apps-west, done, VPNGateway fremd/dieb.
    a_done_argo_window_s_record_names_a_vpngateway_elsewhere: bed::Row {
        scenario: argo_elsewhere,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_claimant_elsewhere(b, Ended::Done(Some(Owner::Argo("apps-west"))), DIEB)),
    },
    /// a21o D17: no GitOps, done, IPsecGateway fremd/acme-alt.
    a_done_window_without_gitops_names_a_claimant_elsewhere: bed::Row {
        scenario: plain,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_claimant_elsewhere(b, Ended::Done(None), Claim { name: "acme-alt", ..ANDERER })),
    },
    /// a21o D15: Argo CD in apps-west, rolled back, VPNGateway fremd/dieb.
    a_rolled_back_argo_window_names_a_vpngateway_elsewhere: bed::Row {
        scenario: argo_elsewhere,
        only: None,
        after: bed::After::acme("IPsecGateway"),
        steps: |b| Box::pin(a_claimant_elsewhere(b, Ended::RolledBack(Some(Owner::Argo("apps-west"))), DIEB)),
    },
    /// Flux, rolled back (the vouch), IPsecGateway fremd/anderer.
    a_rolled_back_flux_window_names_an_ipsecgateway_elsewhere: bed::Row {
        scenario: flux,
        only: None,
        after: bed::After::acme("IPsecGateway"),
        steps: |b| Box::pin(a_claimant_elsewhere(b, Ended::RolledBack(Some(Owner::Flux)), ANDERER)),
    },
    /// No GitOps, rolled back, VPNGateway fremd/dieb.
    a_rolled_back_window_without_gitops_names_a_vpngateway_elsewhere: bed::Row {
        scenario: plain,
        only: None,
        after: bed::After::acme("IPsecGateway"),
        steps: |b| Box::pin(a_claimant_elsewhere(b, Ended::RolledBack(None), DIEB)),
    },
    /// A user who may read tenant-acme only: the cluster-wide list refused is said.
    a_refused_cluster_wide_claimant_list_is_said: bed::Row {
        scenario: plain_and_a_namespace_reader,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_refused_cluster_wide_list_is_said(b)),
    },
    /// Flux, a vouch's sync re-created the gateway: every run after stops on it.
    a_vouch_s_re_created_gateway_stops_every_run_after: bed::Row {
        scenario: flux,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_vouch_re_created_it_then_every_run_stops(b)),
    },
    /// Flux, a killed restore and a wrong vouch (a21k R07).
    a_killed_restore_and_a_wrong_vouch_never_end_0: bed::Row {
        scenario: flux,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_killed_restore_then_a_wrong_vouch_never_ends_0(b)),
    },
    /// Argo CD in apps-west, re-created after done by a sync by hand.
    a_gateway_re_created_after_done_stops_the_plain_run_and_the_vouch: bed::Row {
        scenario: argo_elsewhere,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(re_created_after_done_beside_a_suspended_application(b)),
    },
    /// Argo CD in apps-west, the Application re-created automated (a21k N09's kind).
    a_re_created_owner_is_not_let_go_beside_its_gateway: bed::Row {
        scenario: argo_elsewhere,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_re_created_application_is_not_let_go_beside_its_gateway(b)),
    },
    /// Flux resumed and suspended again by a colleague: a policy changed since.
    a_changed_policy_is_not_let_go_beside_its_gateway: bed::Row {
        scenario: flux,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_policy_changed_since_is_not_let_go_beside_its_gateway(b)),
    },
    /// Argo CD in argo-ops and Flux over one gateway (a21k N05).
    two_owners_a_vouch_re_arms_only_the_owner_it_stands_for: bed::Row {
        scenario: argo_and_flux,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_vouch_is_per_owner(b)),
    },
    /// Flux, a HelmRelease's sync re-created the gateway after done (a21l A01's kind).
    a_helmrelease_s_re_created_gateway_names_it: bed::Row {
        scenario: flux,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_helmrelease_re_created_it(b)),
    },
    /// Flux, a second Kustomization re-created the gateway after done (a21l A08's kind).
    a_second_kustomization_s_re_created_gateway_names_it: bed::Row {
        scenario: flux,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(a_second_kustomization_re_created_it(b)),
    },
    /// Flux, re-created with prune off, let go, then re-creating the gateway (a21l A05).
    re_created_after_the_let_go_never_complete: bed::Row {
        scenario: flux,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(re_created_after_the_let_go_never_says_complete(b)),
    },
    /// Flux, Ctrl-C right after the restore's re-arm (a21l A06).
    ctrl_c_after_the_re_arm_is_the_window_s_own_restore: bed::Row {
        scenario: flux,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(ctrl_c_after_the_re_arm(b)),
    },
    /// Argo CD in apps-west, a killed restore, then a revert re-creates (a21l A02's kind).
    an_argo_killed_restore_is_the_window_s_own_unfinished: bed::Row {
        scenario: argo_elsewhere,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(an_argo_killed_restore_then_a_revert(b)),
    },
    /// Flux, the merged source also defines the old gateway as acme-legacy (a21m B18).
    a_flux_sync_creating_a_renamed_copy_stops_the_vouch: bed::Row {
        scenario: flux,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(flux_a_renamed_copy(b)),
    },
    /// Flux, the merged source also defines a VPNGateway acme-twin on `198.51.100.23/32`
    /// (made up; the Kustomization's targetNamespace puts it beside acme).
    a_flux_sync_creating_a_vpngateway_of_another_name_stops_the_vouch: bed::Row {
        scenario: flux,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(flux_a_vpngateway_spelled_otherwise(b)),
    },
    /// Argo CD in apps-west, a renamed copy in the source, then a claimant by hand
    /// (a21m B15).
    an_argo_source_with_a_renamed_copy_is_never_as_it_was: bed::Row {
        scenario: argo_elsewhere,
        only: None,
        after: bed::After::acme("VPNGateway"),
        steps: |b| Box::pin(an_argo_source_with_a_renamed_copy(b)),
    },
    /// Flux, the rollback's vouch: the reverted source also defines a VPNGateway on the
    /// floating IP (a21n C11).
    a_rollback_s_claimant_stops_flux: bed::Row {
        scenario: flux,
        only: None,
        after: bed::After::acme("IPsecGateway"),
        steps: |b| Box::pin(flux_a_rollback_s_claimant(b)),
    },
    /// Argo CD in apps-west, the plain rollback: the same (a21n C11).
    a_rollback_s_claimant_stops_argo: bed::Row {
        scenario: argo_elsewhere,
        only: None,
        after: bed::After::acme("IPsecGateway"),
        steps: |b| Box::pin(argo_a_rollback_s_claimant(b)),
    },
}
