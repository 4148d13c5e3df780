//! GitOps-aware windows end to end against vpnmig-sandbox (issue 11): interference during
//! each wait stops the window at once (item 3), and a gateway Argo CD or Flux syncs is
//! refused without `--gitops`, suspended and restored with `--gitops pause` (items 2, 5, 6).
//!
//! Interference rows are a table: each names the wait the window is in (the phase the
//! journal has recorded when the test interferes), what is done to which object, and the
//! words the stop must say. Every run is bounded: the waits have 5-minute timeouts, so a
//! window that does not stop on the watch event fails the 60-second harness bound.

mod live;

use std::time::Duration;

use live::{ACME, Live, eventually, objects, phase, start};
use serde_json::{Value, json};
use vpnmig_sandbox::SettingsFile;
use vpnmig_sandbox::store::WriteOptions;

const NS: &str = "tenant-acme";

/// The operator as in a real window: the client re-initiates a while after the gateway is
/// reachable, so the tunnels wait lasts long enough to interfere with.
fn slow_client() -> SettingsFile {
    let mut s = live::pool("10.250.3.0/24");
    s.operator.peer_retry_ms = 30_000;
    s
}

fn by(manager: &str) -> WriteOptions {
    WriteOptions {
        field_manager: Some(manager.into()),
        ..Default::default()
    }
}

/// What a test does to the cluster while the window waits.
#[derive(Clone, Copy, Debug)]
enum Interference {
    /// Delete the VPNGateway (an Argo CD / Flux prune).
    DeleteGateway,
    /// Delete the VPNPeer.
    DeletePeer,
    /// Change the VPNGateway's floating IP (a self-heal to another source, a person).
    ChangeGateway,
    /// Re-create the IPsecGateway from the journal (a self-heal of the old object).
    RecreateOld,
}

impl Interference {
    fn apply(self, l: &Live) {
        let store = &l.sb.store;
        let vpngw = store
            .resource("vpn.bnerd.net", "v1alpha1", "vpngateways")
            .unwrap();
        let peers = store
            .resource("vpn.bnerd.net", "v1alpha1", "vpnpeers")
            .unwrap();
        let old = store
            .resource("ipsec.bnerd.net", "v1alpha1", "ipsecgateways")
            .unwrap();
        let who = by("argocd-controller");
        match self {
            Interference::DeleteGateway => {
                store
                    .delete(&vpngw, NS, "acme", &Default::default())
                    .unwrap();
            }
            Interference::DeletePeer => {
                let name = objects(l, "vpn.bnerd.net", "vpnpeers", NS)[0]["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string();
                store
                    .delete(&peers, NS, &name, &Default::default())
                    .unwrap();
            }
            Interference::ChangeGateway => {
                store
                    .modify(&vpngw, NS, "acme", false, &who, |o| {
                        let mut o = o.clone();
                        o["spec"]["endpoint"]["floatingIP"] = json!("198.51.100.99");
                        o["metadata"]["labels"] = json!({"app.kubernetes.io/instance": "acme"});
                        Ok(o)
                    })
                    .unwrap();
            }
            Interference::RecreateOld => {
                let j = live::journal(l, NS, "acme").unwrap();
                let mut m = j["oldManifest"].clone();
                m["metadata"]["labels"] = json!({"app.kubernetes.io/instance": "acme"});
                store.create(&old, NS, m, &who).unwrap();
            }
        }
    }
}

/// Start a cutover, wait until its journal records `at` (`applied`: the operator ignores
/// the new gateway, so the window waits for FIPAttached; `ready`: the tunnels wait),
/// interfere, and return how it ended.
async fn interfere(at: &str, what: Interference) -> (Live, live::Run) {
    let l = start(ACME, slow_client()).await;
    if at == "applied" {
        // The operator does nothing for the new gateway: the window waits for FIPAttached.
        live::fault(&l, "vpngateway/tenant-acme/acme", |f| f.paused = true);
    }
    let child = l.spawn(&["cutover", "acme", "-n", NS, "--yes"]);
    eventually(30, &format!("the window reaches {at}"), || {
        phase(&l, NS, "acme").as_deref() == Some(at)
    })
    .await;
    // Inside the wait that follows the phase.
    tokio::time::sleep(Duration::from_millis(300)).await;
    what.apply(&l);
    let r = live::finish(child).await;
    (l, r)
}

macro_rules! interference {
    ($($test:ident: $at:literal, $what:expr, $says:expr;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() {
            let (l, r) = interfere($at, $what).await;
            assert_eq!(r.code, 1, "{}", r.stderr);
            for words in $says {
                assert!(r.says(words), "missing {words:?} in:\n{}", r.stderr);
            }
            // Where it stands and the way back are named, and the journal kept the cause.
            assert!(
                live::advised(&r.stderr).iter().any(|c| c[..4] == ["rollback", "acme", "-n", NS]),
                "{}",
                r.stderr
            );
            let j = live::journal(&l, NS, "acme").unwrap();
            assert!(j["lastError"].as_str().unwrap().contains($says[0]), "{j}");
        }
    )*};
}

interference! {
    a_pruned_vpngateway_stops_the_attach_wait:
        "applied", Interference::DeleteGateway,
        ["vpngateway/acme -n tenant-acme was deleted by someone else"];
    a_self_healed_ipsecgateway_stops_the_attach_wait:
        "applied", Interference::RecreateOld,
        ["ipsecgateway/acme -n tenant-acme was re-created during the window"];
    a_pruned_vpngateway_stops_the_tunnels_wait:
        "ready", Interference::DeleteGateway,
        ["vpngateway/acme -n tenant-acme is being deleted by someone else", "most often a GitOps controller's prune"];
    a_pruned_vpnpeer_stops_the_tunnels_wait:
        "ready", Interference::DeletePeer,
        ["was deleted by someone else"];
    a_changed_vpngateway_stops_the_wait_naming_the_field_and_the_writer:
        "ready", Interference::ChangeGateway,
        ["vpngateway/acme -n tenant-acme was changed (spec.endpoint.floatingIP: applied \"198.51.100.23\", now \"198.51.100.99\")", "field manager", "argocd-controller", "Argo CD (application/acme)"];
    a_self_healed_ipsecgateway_stops_the_tunnels_wait:
        "ready", Interference::RecreateOld,
        ["was re-created during the window", "argocd-controller"];
}

/// A VPNGateway re-created during a rollback (a self-heal to a merged repository) stops
/// the rollback's waits at once too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vpngateway_re_created_during_a_rollback_stops_it() {
    let mut s = slow_client();
    s.operator.peer_retry_ms = 0;
    let l = start(ACME, s).await;
    let r = l.vpnmig(&["cutover", "acme", "-n", NS, "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j = live::journal(&l, NS, "acme").unwrap();
    l.sb.operator.settings().write().unwrap().peer_retry_ms = 30_000;
    let child = l.spawn(&["rollback", "acme", "-n", NS, "--yes"]);
    eventually(30, "the rollback re-creates the IPsecGateway", || {
        phase(&l, NS, "acme").as_deref() == Some("old-applied")
    })
    .await;
    let vpngw =
        l.sb.store
            .resource("vpn.bnerd.net", "v1alpha1", "vpngateways")
            .unwrap();
    let mut gw: Value = j["targets"][0].clone();
    gw["metadata"]["labels"] = json!({"kustomize.toolkit.fluxcd.io/name": "tenants", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"});
    l.sb.store
        .create(&vpngw, NS, gw, &by("kustomize-controller"))
        .unwrap();
    let r = live::finish(child).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.says("vpngateway/acme -n tenant-acme was re-created during the window"),
        "{}",
        r.stderr
    );
    assert!(r.says("kustomize-controller"), "{}", r.stderr);
}
