//! The simulated Argo CD and Flux (issue 11 item 5) against the store, on the scenarios
//! vpnmig's end-to-end tests use (fixtures/clusters/acme-argocd.yaml, acme-flux.yaml).
//! Each test runs for both tools; every wait is bounded.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;
use vpnmig_sandbox::gitops::{self, Gitops, Settings};
use vpnmig_sandbox::resources::ResourceType;
use vpnmig_sandbox::scenario;
use vpnmig_sandbox::store::{DeleteOptions, Store, WriteOptions};

const NS: &str = "tenant-acme";
const WAIT: Duration = Duration::from_secs(5);
/// How long "does not happen" is watched for.
const QUIET: Duration = Duration::from_millis(300);

#[derive(Clone, Copy, Debug)]
enum Tool {
    Argo,
    Flux,
}

const TOOLS: [Tool; 2] = [Tool::Argo, Tool::Flux];

impl Tool {
    fn scenario(self) -> &'static str {
        match self {
            Tool::Argo => "acme-argocd.yaml",
            Tool::Flux => "acme-flux.yaml",
        }
    }
    fn manager(self) -> &'static str {
        match self {
            Tool::Argo => gitops::ARGO_MANAGER,
            Tool::Flux => gitops::FLUX_MANAGER,
        }
    }
    fn owner_ns(self) -> &'static str {
        match self {
            Tool::Argo => "argocd",
            Tool::Flux => "flux-system",
        }
    }
    fn owner_key(self) -> String {
        match self {
            Tool::Argo => "argocd/argocd/acme".into(),
            Tool::Flux => "flux/flux-system/acme".into(),
        }
    }
    /// The owner's tracking labels.
    fn labels(self) -> Value {
        match self {
            Tool::Argo => json!({gitops::ARGO_LABEL: "acme"}),
            Tool::Flux => {
                json!({gitops::FLUX_NAME_LABEL: "acme", gitops::FLUX_NAMESPACE_LABEL: "flux-system"})
            }
        }
    }
    /// Turn the owner's automation off (`on = false`) or on, as `argocd app set
    /// --sync-policy none` / `flux suspend` would.
    fn set_active(self, store: &Store, on: bool) {
        let (rt, ns) = match self {
            Tool::Argo => (
                rt(store, "argoproj.io", "v1alpha1", "applications"),
                "argocd",
            ),
            Tool::Flux => (
                rt(store, "kustomize.toolkit.fluxcd.io", "v1", "kustomizations"),
                "flux-system",
            ),
        };
        store
            .modify(&rt, ns, "acme", false, &WriteOptions::default(), |cur| {
                let mut new = cur.clone();
                match self {
                    Tool::Argo if on => {
                        new["spec"]["syncPolicy"]["automated"] =
                            json!({"selfHeal": true, "prune": true})
                    }
                    // As a JSON merge patch `{"automated": null}` may leave it.
                    Tool::Argo => new["spec"]["syncPolicy"]["automated"] = Value::Null,
                    Tool::Flux => new["spec"]["suspend"] = json!(!on),
                }
                Ok(new)
            })
            .unwrap();
    }
}

fn rt(store: &Store, group: &str, version: &str, plural: &str) -> ResourceType {
    store
        .resource(group, version, plural)
        .unwrap_or_else(|| panic!("{plural} not served"))
}

struct Bed {
    store: Arc<Store>,
    gitops: Arc<Gitops>,
}

impl Drop for Bed {
    fn drop(&mut self) {
        self.gitops.shutdown();
    }
}

fn fixture(path: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures")
            .join(path),
    )
    .unwrap()
}

impl Bed {
    fn new(file: &str, settings: Settings) -> Bed {
        let store = Store::new();
        let objects = scenario::parse(&fixture(&format!("clusters/{file}"))).unwrap();
        scenario::load(&store, &objects).unwrap();
        let gitops = Gitops::start(store.clone(), settings);
        Bed { store, gitops }
    }

    fn gw_rt(&self) -> ResourceType {
        rt(&self.store, "ipsec.bnerd.net", "v1alpha1", "ipsecgateways")
    }

    fn gateway(&self) -> Option<Value> {
        self.store.get(&self.gw_rt(), NS, "acme").ok()
    }

    fn delete_gateway(&self) {
        self.store
            .delete(&self.gw_rt(), NS, "acme", &DeleteOptions::default())
            .unwrap();
    }

    fn cm_rt(&self) -> ResourceType {
        rt(&self.store, "", "v1", "configmaps")
    }

    fn create(&self, plural: &str, obj: Value) {
        let rt = rt(&self.store, "", "v1", plural);
        self.store
            .create(&rt, NS, obj, &WriteOptions::default())
            .unwrap();
    }

    fn get(&self, plural: &str, name: &str) -> Option<Value> {
        self.store
            .get(&rt(&self.store, "", "v1", plural), NS, name)
            .ok()
    }

    fn set(&self, f: impl FnOnce(&mut Settings)) {
        f(&mut self.gitops.settings().write().unwrap());
        self.gitops.kick();
    }

    /// Replace the source's manifests (a merged change in Git).
    fn set_source(&self, tool: Tool, f: impl FnOnce(&str) -> String) {
        let name = format!("acme{}", gitops::SOURCE_SUFFIX);
        self.store
            .modify(
                &self.cm_rt(),
                tool.owner_ns(),
                &name,
                false,
                &WriteOptions::default(),
                |cur| {
                    let mut new = cur.clone();
                    let text = f(cur["data"][gitops::SOURCE_KEY].as_str().unwrap());
                    new["data"][gitops::SOURCE_KEY] = json!(text);
                    Ok(new)
                },
            )
            .unwrap();
    }
}

async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < until, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn never(what: &str, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + QUIET;
    while Instant::now() < until {
        assert!(!cond(), "happened although it must not: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn managers(obj: &Value) -> Vec<String> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["manager"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn fixtures_load_with_the_tools_markers_and_field_manager() {
    for tool in TOOLS {
        let bed = Bed::new(tool.scenario(), Settings::default());
        let gw = bed.gateway().unwrap();
        assert!(
            managers(&gw).contains(&tool.manager().to_string()),
            "{tool:?}: {gw}"
        );
        for (k, v) in tool.labels().as_object().unwrap() {
            assert_eq!(&gw["metadata"]["labels"][k], v, "{tool:?}");
        }
        // The PSK is the one the client knows, also after the tool applied it.
        let psk = bed.get("secrets", "acme-psk").unwrap();
        assert_eq!(
            psk["data"]["psk"],
            "cmVoZWFyc2FsLW9ubHktbm90LWEtcmVhbC1rZXk="
        );
        assert_eq!(gw["status"]["floatingIP"], "198.51.100.23", "status kept");
    }
}

#[test]
fn the_scenarios_bring_the_crd_fixtures_unchanged() {
    let crd =
        |f: &str| -> Value { serde_saphyr::from_str(&fixture(&format!("crds/{f}"))).unwrap() };
    for (scenario_file, crds) in [
        ("acme-argocd.yaml", vec!["argocd-application.yaml"]),
        (
            "acme-flux.yaml",
            vec!["flux-kustomization.yaml", "flux-helmrelease.yaml"],
        ),
    ] {
        let objects = scenario::parse(&fixture(&format!("clusters/{scenario_file}"))).unwrap();
        for f in crds {
            assert!(
                objects.contains(&crd(f)),
                "{scenario_file} lacks {f} as it is"
            );
        }
    }
}

#[tokio::test]
async fn self_heal_recreates_a_deleted_gateway() {
    for tool in TOOLS {
        let bed = Bed::new(tool.scenario(), Settings::default());
        let uid = bed.gateway().unwrap()["metadata"]["uid"].clone();
        bed.delete_gateway();
        eventually("the gateway is back", || {
            bed.gateway().is_some_and(|g| g["metadata"]["uid"] != uid)
        })
        .await;
        let gw = bed.gateway().unwrap();
        assert_eq!(
            gw["spec"]["endpoint"]["floatingIP"], "198.51.100.23",
            "{tool:?}"
        );
        assert!(managers(&gw).contains(&tool.manager().to_string()));
    }
}

#[tokio::test]
async fn self_heal_waits_for_the_delay() {
    for tool in TOOLS {
        let bed = Bed::new(
            tool.scenario(),
            Settings {
                self_heal_delay_ms: 600,
                ..Settings::default()
            },
        );
        bed.delete_gateway();
        let deleted = Instant::now();
        never("re-created before the delay", || bed.gateway().is_some()).await;
        eventually("the gateway is back", || bed.gateway().is_some()).await;
        assert!(deleted.elapsed() >= Duration::from_millis(600), "{tool:?}");
    }
}

#[tokio::test]
async fn self_heal_reverts_drift_of_spec_and_labels() {
    for tool in TOOLS {
        let bed = Bed::new(tool.scenario(), Settings::default());
        bed.store
            .modify(
                &bed.gw_rt(),
                NS,
                "acme",
                false,
                &WriteOptions::default(),
                |cur| {
                    let mut new = cur.clone();
                    new["spec"]["endpoint"]["network"] = json!("other");
                    new["metadata"]["labels"]["client"] = json!("someone-else");
                    Ok(new)
                },
            )
            .unwrap();
        eventually("the drift is reverted", || {
            bed.gateway().is_some_and(|g| {
                g["spec"]["endpoint"]["network"] == "public"
                    && g["metadata"]["labels"]["client"] == "acme"
            })
        })
        .await;
    }
}

#[tokio::test]
async fn suspended_owner_leaves_a_deleted_gateway_deleted() {
    for tool in TOOLS {
        let bed = Bed::new(tool.scenario(), Settings::default());
        tool.set_active(&bed.store, false);
        bed.delete_gateway();
        never("re-created while suspended", || bed.gateway().is_some()).await;
        // Resuming the owner brings it back: the source still has it.
        tool.set_active(&bed.store, true);
        eventually("re-created once resumed", || bed.gateway().is_some()).await;
    }
}

#[tokio::test]
async fn argo_skip_reconcile_annotation_suspends_too() {
    let bed = Bed::new(Tool::Argo.scenario(), Settings::default());
    let apps = rt(&bed.store, "argoproj.io", "v1alpha1", "applications");
    bed.store
        .modify(
            &apps,
            "argocd",
            "acme",
            false,
            &WriteOptions::default(),
            |cur| {
                let mut new = cur.clone();
                new["metadata"]["annotations"] = json!({gitops::ARGO_SKIP_RECONCILE: "true"});
                Ok(new)
            },
        )
        .unwrap();
    bed.delete_gateway();
    never("re-created while skip-reconcile", || {
        bed.gateway().is_some()
    })
    .await;
}

#[tokio::test]
async fn ignores_suspension_fault_recreates_anyway() {
    for (tool, global) in [
        (Tool::Argo, true),
        (Tool::Flux, true),
        (Tool::Argo, false),
        (Tool::Flux, false),
    ] {
        let bed = Bed::new(tool.scenario(), Settings::default());
        tool.set_active(&bed.store, false);
        bed.set(|s| {
            if global {
                s.ignores_suspension = true;
            } else {
                s.owners
                    .entry(tool.owner_key())
                    .or_default()
                    .ignores_suspension = true;
            }
        });
        bed.delete_gateway();
        eventually("re-created although suspended", || bed.gateway().is_some()).await;
    }
}

#[tokio::test]
async fn prune_deletes_tracked_objects_not_in_the_source() {
    for tool in TOOLS {
        let bed = Bed::new(tool.scenario(), Settings::default());
        bed.create(
            "configmaps",
            json!({"metadata": {"name": "tracked-extra", "labels": tool.labels()}}),
        );
        bed.create("configmaps", json!({"metadata": {"name": "untracked"}}));
        eventually("the tracked extra is pruned", || {
            bed.get("configmaps", "tracked-extra").is_none()
        })
        .await;
        assert!(bed.get("configmaps", "untracked").is_some(), "{tool:?}");
        // Removing the gateway from the source prunes it (a merged change in Git).
        bed.set_source(tool, |text| text.split("---").next().unwrap().to_string());
        eventually("the gateway is pruned", || bed.gateway().is_none()).await;
        assert!(
            bed.get("secrets", "acme-psk").is_some(),
            "still in the source"
        );
    }
}

/// Issue 21 item 1: what carries the prune protection the tool honours on a live object
/// is never pruned (Argo CD `argocd.argoproj.io/sync-options` with `Prune=false` among
/// other options; Flux `kustomize.toolkit.fluxcd.io/prune: disabled`): Argo CD shows the
/// Application OutOfSync ("requires pruning"), Flux leaves it out of its inventory.
/// Another value of the same annotation protects nothing.
#[tokio::test]
async fn prune_protection_keeps_tracked_objects_not_in_the_source() {
    for tool in TOOLS {
        let (key, keep, other) = match tool {
            Tool::Argo => (
                gitops::ARGO_SYNC_OPTIONS,
                "ServerSideApply=true, Prune=false",
                "Prune=true",
            ),
            Tool::Flux => (gitops::FLUX_PRUNE, "disabled", "enabled"),
        };
        let bed = Bed::new(tool.scenario(), Settings::default());
        bed.create(
            "configmaps",
            json!({"metadata": {"name": "kept", "labels": tool.labels(), "annotations": {key: keep}}}),
        );
        bed.create(
            "configmaps",
            json!({"metadata": {"name": "not-kept", "labels": tool.labels(), "annotations": {key: other}}}),
        );
        // The PSK Secret leaves the source (moved to another repository), protected.
        let secrets = rt(&bed.store, "", "v1", "secrets");
        bed.store
            .modify(
                &secrets,
                NS,
                "acme-psk",
                false,
                &WriteOptions::default(),
                |cur| {
                    let mut new = cur.clone();
                    new["metadata"]["annotations"][key] = json!(keep);
                    Ok(new)
                },
            )
            .unwrap();
        bed.set_source(tool, |text| {
            text.split("\n---")
                .filter(|d| !d.contains("kind: Secret"))
                .collect::<Vec<_>>()
                .join("\n---")
        });
        eventually("the unprotected extra is pruned", || {
            bed.get("configmaps", "not-kept").is_none()
        })
        .await;
        never("a protected object pruned", || {
            bed.get("configmaps", "kept").is_none() || bed.get("secrets", "acme-psk").is_none()
        })
        .await;
        let (g, v, p) = match tool {
            Tool::Argo => ("argoproj.io", "v1alpha1", "applications"),
            Tool::Flux => ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations"),
        };
        let owner = bed
            .store
            .get(&rt(&bed.store, g, v, p), tool.owner_ns(), "acme")
            .unwrap();
        match tool {
            Tool::Argo => assert_eq!(owner["status"]["sync"]["status"], "OutOfSync", "{owner}"),
            Tool::Flux => {
                assert_eq!(
                    owner["status"]["conditions"][0]["status"], "True",
                    "{owner}"
                );
                assert!(
                    !owner["status"]["inventory"]
                        .to_string()
                        .contains("acme-psk"),
                    "{owner}"
                );
            }
        }
    }
}

#[tokio::test]
async fn without_prune_tracked_extras_stay() {
    let bed = Bed::new(Tool::Flux.scenario(), Settings::default());
    let ks = rt(
        &bed.store,
        "kustomize.toolkit.fluxcd.io",
        "v1",
        "kustomizations",
    );
    bed.store
        .modify(
            &ks,
            "flux-system",
            "acme",
            false,
            &WriteOptions::default(),
            |cur| {
                let mut new = cur.clone();
                new["spec"]["prune"] = json!(false);
                Ok(new)
            },
        )
        .unwrap();
    bed.create(
        "configmaps",
        json!({"metadata": {"name": "tracked-extra", "labels": Tool::Flux.labels()}}),
    );
    never("pruned without prune", || {
        bed.get("configmaps", "tracked-extra").is_none()
    })
    .await;
}

#[tokio::test]
async fn relabels_fault_stamps_known_kinds_and_prune_then_deletes_them() {
    for tool in TOOLS {
        let bed = Bed::new(tool.scenario(), Settings::default());
        // A Secret is a kind of the source, a ConfigMap is not.
        bed.create(
            "secrets",
            json!({"metadata": {"name": "other"}, "type": "Opaque"}),
        );
        bed.create("configmaps", json!({"metadata": {"name": "bystander"}}));
        never("deleted without the fault", || {
            bed.get("secrets", "other").is_none()
        })
        .await;
        bed.set(|s| s.owners.entry(tool.owner_key()).or_default().relabels = true);
        eventually("the relabelled Secret is pruned", || {
            bed.get("secrets", "other").is_none()
        })
        .await;
        let bystander = bed.get("configmaps", "bystander").unwrap();
        assert!(
            bystander["metadata"]["labels"].is_null(),
            "{tool:?}: {bystander}"
        );
    }
}

#[tokio::test]
async fn scenarios_without_gitops_crds_are_left_alone() {
    let bed = Bed::new("acme.yaml", Settings::default());
    bed.delete_gateway();
    never("re-created without any GitOps tool", || {
        bed.gateway().is_some()
    })
    .await;
}

#[tokio::test]
async fn owner_status_follows_sync() {
    let bed = Bed::new(Tool::Argo.scenario(), Settings::default());
    let apps = rt(&bed.store, "argoproj.io", "v1alpha1", "applications");
    let sync =
        || bed.store.get(&apps, "argocd", "acme").unwrap()["status"]["sync"]["status"].clone();
    eventually("Synced", || sync() == "Synced").await;
    Tool::Argo.set_active(&bed.store, false);
    bed.delete_gateway();
    eventually("OutOfSync", || sync() == "OutOfSync").await;
}

#[test]
fn settings_parse_and_validate_owner_keys() {
    let s: vpnmig_sandbox::SettingsFile = serde_saphyr::from_str(
        "gitops:\n  selfHealDelayMs: 5000\n  ignoresSuspension: true\n  owners:\n    argocd/argocd/acme: {relabels: true}\n",
    )
    .unwrap();
    assert_eq!(s.gitops.self_heal_delay_ms, 5000);
    assert!(s.gitops.faults("argocd/argocd/acme").relabels);
    assert!(!s.gitops.faults("flux/flux-system/acme").relabels);
    assert!(s.gitops.faults("flux/flux-system/acme").ignores_suspension);
    assert!(s.gitops.validate().is_ok());
    let bad: Settings = serde_saphyr::from_str("owners:\n  acme: {relabels: true}\n").unwrap();
    assert!(
        bad.validate()
            .unwrap_err()
            .contains("argocd/<namespace>/<name>")
    );
}

/// The whole sandbox, the gateway operator included: the danger of issue 11. The deleted
/// gateway goes through its finalizer unwind (the tool waits for it), comes back after
/// the self-heal delay, and holds the pinned floating IP again.
#[tokio::test]
async fn with_the_operator_the_recreated_gateway_takes_the_floating_ip_back() {
    let mut settings = vpnmig_sandbox::SettingsFile::default();
    settings.gitops.self_heal_delay_ms = 200;
    settings.operator.finalizer_delay_ms = 100;
    let sb = vpnmig_sandbox::Sandbox::start(vpnmig_sandbox::Config {
        scenario: scenario::parse(&fixture("clusters/acme-argocd.yaml")).unwrap(),
        settings,
        port: 0,
        data_plane: None,
    })
    .await
    .unwrap();
    let gws = rt(&sb.store, "ipsec.bnerd.net", "v1alpha1", "ipsecgateways");
    let ready = |g: &Value| {
        g["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
    };
    let get = || sb.store.get(&gws, NS, "acme").ok();
    eventually("Ready", || get().is_some_and(|g| ready(&g))).await;
    let uid = get().unwrap()["metadata"]["uid"].clone();
    sb.store
        .delete(&gws, NS, "acme", &DeleteOptions::default())
        .unwrap();
    eventually("re-created and Ready", || {
        get().is_some_and(|g| g["metadata"]["uid"] != uid && ready(&g))
    })
    .await;
    assert_eq!(get().unwrap()["status"]["floatingIP"], "198.51.100.23");
    assert!(sb.operator.floating_ips().released.is_empty());
    sb.shutdown().await;
}

impl Bed {
    fn from_text(text: &str, settings: Settings) -> Bed {
        let store = Store::new();
        let objects = scenario::parse(text).unwrap();
        scenario::load(&store, &objects).unwrap();
        let gitops = Gitops::start(store.clone(), settings);
        Bed { store, gitops }
    }
}

/// acme-flux.yaml with a HelmRelease acme in place of the Kustomization (its chart: the
/// source ConfigMap), the objects carrying the helm-controller's labels.
fn helm_scenario() -> String {
    let s = fixture("clusters/acme-flux.yaml")
        .replace(gitops::FLUX_NAME_LABEL, gitops::HELM_NAME_LABEL)
        .replace(gitops::FLUX_NAMESPACE_LABEL, gitops::HELM_NAMESPACE_LABEL)
        .replacen(
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n",
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\n",
            1,
        );
    assert!(s.contains("kind: HelmRelease\n"));
    s
}

/// A HelmRelease with a source ConfigMap re-creates what it renders, is suspended by
/// `spec.suspend`, and obeys the `ignoresSuspension` knob of its key; one without a
/// source is served only (no status written, nothing applied).
#[tokio::test]
async fn a_helmrelease_with_a_source_syncs_like_a_kustomization() {
    for ignoring in [false, true] {
        let mut settings = Settings::default();
        if ignoring {
            settings
                .owners
                .entry("flux/flux-system/acme".into())
                .or_default()
                .ignores_suspension = true;
        }
        let bed = Bed::from_text(&helm_scenario(), settings);
        eventually("the helm-controller applies the gateway", || {
            bed.gateway()
                .is_some_and(|g| managers(&g).contains(&gitops::HELM_MANAGER.to_string()))
        })
        .await;
        let hr = rt(&bed.store, "helm.toolkit.fluxcd.io", "v2", "helmreleases");
        bed.store
            .modify(
                &hr,
                "flux-system",
                "acme",
                false,
                &WriteOptions::default(),
                |c| {
                    let mut n = c.clone();
                    n["spec"]["suspend"] = json!(true);
                    Ok(n)
                },
            )
            .unwrap();
        bed.delete_gateway();
        if ignoring {
            eventually("re-created although suspended", || bed.gateway().is_some()).await;
        } else {
            never("re-created while suspended", || bed.gateway().is_some()).await;
        }
    }
    // Without `<name>-source` it is served only, as before.
    let text = helm_scenario().replace("name: acme-source", "name: other-source");
    let bed = Bed::from_text(&text, Settings::default());
    let hr = rt(&bed.store, "helm.toolkit.fluxcd.io", "v2", "helmreleases");
    never("a HelmRelease without a source acts", || {
        bed.store
            .get(&hr, "flux-system", "acme")
            .is_ok_and(|o| o.get("status").is_some())
    })
    .await;
}

/// An ApplicationSet puts its template's `spec.syncPolicy` back on the Applications it
/// owns (an ownerReference), unless its policy is `create-only`.
#[tokio::test]
async fn an_application_set_puts_its_template_sync_policy_back() {
    const UID: &str = "6d1f3c52-0d5e-4c57-9a3e-appset000001";
    for policy in ["sync", "create-only"] {
        let owned = fixture("clusters/acme-argocd.yaml").replacen(
            "kind: Application\nmetadata:\n  name: acme\n  namespace: argocd\n",
            &format!("kind: Application\nmetadata:\n  name: acme\n  namespace: argocd\n  ownerReferences:\n  - {{apiVersion: argoproj.io/v1alpha1, kind: ApplicationSet, name: tenants, uid: {UID}}}\n"),
            1,
        );
        let text = format!(
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
metadata: {{name: tenants, namespace: argocd, uid: {UID}}}
spec:
  syncPolicy: {{applicationsSync: {policy}}}
  template:
    spec:
      syncPolicy:
        automated: {{selfHeal: true, prune: true}}
"
        );
        let bed = Bed::from_text(&text, Settings::default());
        Tool::Argo.set_active(&bed.store, false);
        let apps = rt(&bed.store, "argoproj.io", "v1alpha1", "applications");
        let armed = || {
            bed.store.get(&apps, "argocd", "acme").is_ok_and(|a| {
                a["spec"]["syncPolicy"]["automated"] == json!({"selfHeal": true, "prune": true})
            })
        };
        if policy == "sync" {
            eventually("the ApplicationSet puts automated back", armed).await;
            let app = bed.store.get(&apps, "argocd", "acme").unwrap();
            assert!(
                managers(&app).contains(&gitops::APPSET_MANAGER.to_string()),
                "{app}"
            );
        } else {
            never(
                "a create-only ApplicationSet updates its Application",
                armed,
            )
            .await;
        }
    }
}

/// Issue 21 item 1, kind B: an Application's `ignoreDifferences` hides a difference from
/// its status (the Secret reads `Synced` although the source holds another key), and its
/// sync still writes the source's copy, unless `RespectIgnoreDifferences=true`.
#[tokio::test]
async fn ignore_differences_hide_a_difference_that_a_sync_still_writes() {
    const LIVE: &str = "cmVoZWFyc2FsLW9ubHktbm90LWEtcmVhbC1rZXk=";
    for respect in [false, true] {
        let bed = Bed::new(Tool::Argo.scenario(), Settings::default());
        let apps = rt(&bed.store, "argoproj.io", "v1alpha1", "applications");
        let secret_status = |bed: &Bed| {
            let app = bed.store.get(&apps, "argocd", "acme").unwrap();
            app["status"]["resources"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|r| r["kind"] == "Secret")
                .map(|r| r["status"].clone())
        };
        Tool::Argo.set_active(&bed.store, false);
        bed.store
            .modify(
                &apps,
                "argocd",
                "acme",
                false,
                &WriteOptions::default(),
                |cur| {
                    let mut new = cur.clone();
                    new["spec"]["ignoreDifferences"] =
                        json!([{"group": "", "kind": "Secret", "jsonPointers": ["/data"]}]);
                    if respect {
                        new["spec"]["syncPolicy"]["syncOptions"] =
                            json!(["RespectIgnoreDifferences=true"]);
                    }
                    Ok(new)
                },
            )
            .unwrap();
        // Git's copy holds another key, and a difference elsewhere makes a sync happen.
        bed.set_source(Tool::Argo, |m| {
            m.replace(LIVE, "c3RhbGUtY29weS1ub3QtdGhlLWNsaWVudHMta2V5")
                .replace("client: acme", "client: acme-drift")
        });
        bed.gitops.kick();
        eventually("the Secret reads Synced although its key differs", || {
            secret_status(&bed) == Some(json!("Synced"))
        })
        .await;
        assert_eq!(bed.get("secrets", "acme-psk").unwrap()["data"]["psk"], LIVE);
        Tool::Argo.set_active(&bed.store, true);
        bed.gitops.kick();
        if respect {
            eventually("the sync ran", || {
                bed.gateway().unwrap()["metadata"]["labels"]["client"] == "acme-drift"
            })
            .await;
            never("the key overwritten", || {
                bed.get("secrets", "acme-psk").unwrap()["data"]["psk"] != LIVE
            })
            .await;
        } else {
            eventually("the sync writes the source's key", || {
                bed.get("secrets", "acme-psk").unwrap()["data"]["psk"] != LIVE
            })
            .await;
        }
    }
}

/// Argo CD's comparison time (a21d attack 10): `status.reconciledAt` is written at start,
/// not again while nothing changes (no churn), again after a spec change (a restored
/// sync policy) and when the refresh annotation asks, which is then taken off; a sync
/// leaves `status.operationState.finishedAt`.
#[tokio::test]
async fn argo_writes_when_it_compared_and_honours_the_refresh_annotation() {
    let bed = Bed::new(Tool::Argo.scenario(), Settings::default());
    let apps = rt(&bed.store, "argoproj.io", "v1alpha1", "applications");
    let app = || bed.store.get(&apps, "argocd", "acme").unwrap();
    eventually("a first comparison time", || {
        app()["status"]["reconciledAt"].is_string()
    })
    .await;
    let rv = app()["metadata"]["resourceVersion"].clone();
    never("the status is written again while nothing changes", || {
        app()["metadata"]["resourceVersion"] != rv
    })
    .await;
    // Set back to an old time: each of the next two must write a new one.
    let old = json!("2020-01-01T00:00:00Z");
    let age = |bed: &Bed| {
        bed.store
            .modify(
                &apps,
                "argocd",
                "acme",
                true,
                &WriteOptions::default(),
                |cur| {
                    let mut new = cur.clone();
                    new["status"]["reconciledAt"] = old.clone();
                    Ok(new)
                },
            )
            .unwrap();
    };
    age(&bed);
    bed.store
        .modify(
            &apps,
            "argocd",
            "acme",
            false,
            &WriteOptions::default(),
            |cur| {
                let mut new = cur.clone();
                new["metadata"]["annotations"][gitops::ARGO_REFRESH] = json!("normal");
                Ok(new)
            },
        )
        .unwrap();
    eventually("compared again, the annotation taken off", || {
        let a = app();
        a["status"]["reconciledAt"] != old
            && a["metadata"]["annotations"][gitops::ARGO_REFRESH].is_null()
    })
    .await;
    age(&bed);
    Tool::Argo.set_active(&bed.store, false);
    eventually("compared again after the spec change", || {
        app()["status"]["reconciledAt"] != old
    })
    .await;
    // A sync: the deleted gateway re-created once re-armed, its time in operationState.
    Tool::Argo.set_active(&bed.store, true);
    bed.delete_gateway();
    eventually("the gateway is back", || bed.gateway().is_some()).await;
    eventually("the sync's finish time", || {
        app()["status"]["operationState"]["finishedAt"].is_string()
    })
    .await;
    assert_eq!(app()["status"]["operationState"]["phase"], "Succeeded");
}
