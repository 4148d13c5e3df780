//! The API behaviours the emulator claims, each a row run once per backend: the emulator
//! (`--control-plane emulated`) and the real control plane (etcd, kube-apiserver and
//! kube-controller-manager built by tests/controlplane/build.sh; `--control-plane real`).
//! A row gets its own namespace and a cluster-admin kube-rs client, and asserts what a real
//! cluster does: where the two differed, the emulator was fixed or the row waits the way a
//! client of a real cluster must (docs/sandbox.md, "Where the emulator differs").
//!
//! Where the real control plane is not built, its run says `DID NOT RUN (real control
//! plane)` and passes, unless `VPNMIG_REQUIRE_CONTROLPLANE=1` (set by .ci/run).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{ACME, client, cm, code, entries_of, eventually, refusal, start, within};
use futures::future::BoxFuture;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::watcher;
use serde_json::json;
use vpnmig::core::model::VPNGateway;
use vpnmig_sandbox::SettingsFile;

/// What a row gets: a client with cluster-admin rights, its own namespace, and the
/// kubeconfig (YAML) the client was made from.
#[derive(Clone)]
struct Backend {
    client: kube::Client,
    ns: String,
    kubeconfig: String,
}

type Row = (&'static str, fn(Backend) -> BoxFuture<'static, ()>);

/// Run every row against `client`, each in a new namespace, each bounded; the names and
/// panic messages of the rows that failed.
async fn run_rows(backend: &str, client: kube::Client, kubeconfig: String) -> Vec<String> {
    let nss: Api<Namespace> = Api::all(client.clone());
    let mut failed = Vec::new();
    for (i, (name, row)) in ROWS.iter().enumerate() {
        let ns = format!("fidelity-{i}");
        let body: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
        nss.create(&PostParams::default(), &body)
            .await
            .unwrap_or_else(|e| panic!("{backend}: create namespace {ns}: {e}"));
        let b = Backend {
            client: client.clone(),
            ns,
            kubeconfig: kubeconfig.clone(),
        };
        let started = std::time::Instant::now();
        match tokio::time::timeout(Duration::from_secs(60), tokio::spawn(row(b))).await {
            Ok(Ok(())) => eprintln!(
                "{backend}: ok      {name} ({} ms)",
                started.elapsed().as_millis()
            ),
            Ok(Err(e)) => {
                let why = e.try_into_panic().map_or_else(
                    |e| e.to_string(),
                    |p| {
                        p.downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default()
                    },
                );
                eprintln!("{backend}: FAILED  {name}: {why}");
                failed.push(format!("{name}: {why}"));
            }
            Err(_) => {
                eprintln!("{backend}: FAILED  {name}: timed out after 60 s");
                failed.push(format!("{name}: timed out after 60 s"));
            }
        }
    }
    failed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_row_on_the_emulator() {
    let sb = start(ACME, SettingsFile::default()).await;
    let failed = run_rows("emulated", client(&sb, None).await, sb.kubeconfig()).await;
    sb.shutdown().await;
    assert!(
        failed.is_empty(),
        "rows failed on the emulator:\n{}",
        failed.join("\n")
    );
}

#[test]
fn every_row_on_the_real_control_plane() {
    let Some(mut cp) = common::real::start() else {
        return;
    };
    common::real::crds(&cp);
    let kubeconfig = std::fs::read_to_string(cp.admin_kubeconfig()).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let failed = rt.block_on(async {
        let kc = kube::config::Kubeconfig::from_yaml(&kubeconfig).unwrap();
        let config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .unwrap();
        run_rows(
            "real",
            kube::Client::try_from(config).unwrap(),
            kubeconfig.clone(),
        )
        .await
    });
    cp.stop();
    assert!(
        failed.is_empty(),
        "rows failed on the real control plane:\n{}",
        failed.join("\n")
    );
}

/// Take every finalizer off `name`, as the controller that set them would.
async fn release<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
}

/// Wait (at most `secs`) until `name` is gone; `what` names the wait if it runs out.
async fn gone<K>(api: &Api<K>, name: &str, secs: u64, what: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    eventually(secs, what, || async {
        api.get_opt(name).await.unwrap().is_none().then_some(())
    })
    .await;
}

fn cm_with(name: &str, data: &[(&str, String)]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "data": data.iter().map(|(k, v)| (k.to_string(), v.clone())).collect::<BTreeMap<_, _>>()
    }))
    .unwrap()
}

async fn crud_with_optimistic_concurrency(b: Backend) {
    let api: Api<ConfigMap> = Api::namespaced(b.client.clone(), &b.ns);
    let created = api
        .create(&PostParams::default(), &cm("a", &[]))
        .await
        .unwrap();
    // A ConfigMap has no generation on a real server (only kinds with a spec and status,
    // and custom resources, do).
    assert_eq!(created.metadata.generation, None);
    assert!(created.metadata.uid.is_some() && created.metadata.creation_timestamp.is_some());
    assert_eq!(
        code(
            &api.create(&PostParams::default(), &cm("a", &[]))
                .await
                .unwrap_err()
        ),
        409
    );

    let mut stale = created.clone();
    let mut fresh = created.clone();
    fresh.data = Some(BTreeMap::from([("k".to_string(), "v2".to_string())]));
    api.replace("a", &PostParams::default(), &fresh)
        .await
        .unwrap();
    stale.data = Some(BTreeMap::from([("k".to_string(), "v3".to_string())]));
    let err = api
        .replace("a", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    assert_eq!(code(&err), 409);
    assert!(
        err.to_string().contains("the object has been modified"),
        "{err}"
    );

    let patched = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"x": "y"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        patched.data.unwrap().get("x").map(String::as_str),
        Some("y")
    );
    let jp: json_patch::Patch =
        serde_json::from_value(json!([{"op": "replace", "path": "/data/k", "value": "z"}]))
            .unwrap();
    let patched = api
        .patch("a", &PatchParams::default(), &Patch::<()>::Json(jp))
        .await
        .unwrap();
    assert_eq!(
        patched.data.unwrap().get("k").map(String::as_str),
        Some("z")
    );

    assert!(
        api.delete("a", &DeleteParams::default())
            .await
            .unwrap()
            .is_right()
    );
    assert_eq!(code(&api.get("a").await.unwrap_err()), 404);
}

async fn custom_resources_are_validated_against_the_crd_schema(b: Backend) {
    let api: Api<VPNGateway> = Api::namespaced(b.client.clone(), &b.ns);
    let bad: VPNGateway = serde_json::from_value(json!({
        "apiVersion": "vpn.bnerd.net/v1alpha1", "kind": "VPNGateway", "metadata": {"name": "bad"},
        "spec": {"protocol": "ipsec", "endpoint": {}, "ipsec": {"ike": {"proposals": ["3des-sha1-modp1024"]}}}
    }))
    .unwrap();
    let err = api.create(&PostParams::default(), &bad).await.unwrap_err();
    let kube::Error::Api(status) = &err else {
        panic!("{err:?}")
    };
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert!(
        status
            .message
            .contains("spec.ipsec.ike.proposals[0]: Unsupported value: \"3des-sha1-modp1024\""),
        "{}",
        status.message
    );
}

async fn dry_run_changes_nothing(b: Backend) {
    let api: Api<ConfigMap> = Api::namespaced(b.client.clone(), &b.ns);
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let out = api.create(&pp, &cm("dry", &[])).await.unwrap();
    assert_eq!(out.metadata.name.as_deref(), Some("dry"));
    assert_eq!(code(&api.get("dry").await.unwrap_err()), 404);
}

async fn server_side_apply_owns_conflicts_and_removes_dropped_fields(b: Backend) {
    let api: Api<ConfigMap> = Api::namespaced(b.client.clone(), &b.ns);
    let doc = |data: serde_json::Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": data});
    let a = PatchParams::apply("manager-a");
    api.patch("ssa", &a, &Patch::Apply(doc(json!({"x": "1", "y": "2"}))))
        .await
        .unwrap();
    let err = api
        .patch(
            "ssa",
            &PatchParams::apply("manager-b"),
            &Patch::Apply(doc(json!({"x": "other"}))),
        )
        .await
        .unwrap_err();
    assert_eq!(code(&err), 409);
    assert!(
        err.to_string()
            .contains("conflict with \"manager-a\": .data.x"),
        "{err}"
    );
    let forced = api
        .patch(
            "ssa",
            &PatchParams::apply("manager-b").force(),
            &Patch::Apply(doc(json!({"x": "other"}))),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["x"], "other");
    // manager-a no longer applies y: it goes; x now belongs to manager-b and stays.
    let after = api
        .patch("ssa", &a, &Patch::Apply(doc(json!({}))))
        .await
        .unwrap();
    assert_eq!(
        after.data.unwrap_or_default(),
        BTreeMap::from([("x".to_string(), "other".to_string())])
    );
    let managers: Vec<String> = after
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert_eq!(managers, ["manager-a", "manager-b"]);
}

async fn finalizers_hold_deletion_and_watch_sees_it_end(b: Backend) {
    let api: Api<ConfigMap> = Api::namespaced(b.client.clone(), &b.ns);
    let mut obj = cm("held", &[]);
    obj.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &obj).await.unwrap();
    let pending = api.delete("held", &DeleteParams::default()).await.unwrap();
    let marked = pending.left().expect("still there");
    assert!(marked.metadata.deletion_timestamp.is_some());
    let rv = marked.metadata.resource_version.clone().unwrap();
    let mut stream = api
        .watch(
            &WatchParams::default()
                .fields("metadata.name=held")
                .timeout(10),
            &rv,
        )
        .await
        .unwrap()
        .boxed();
    release(&api, "held").await;
    let mut kinds = Vec::new();
    within(10, "watch DELETED", async {
        while let Some(ev) = stream.try_next().await.unwrap() {
            match ev {
                WatchEvent::Modified(_) => kinds.push("MODIFIED"),
                WatchEvent::Deleted(_) => {
                    kinds.push("DELETED");
                    break;
                }
                _ => {}
            }
        }
    })
    .await;
    assert_eq!(kinds.last(), Some(&"DELETED"));
    assert_eq!(code(&api.get("held").await.unwrap_err()), 404);
}

async fn owner_references_are_garbage_collected_or_orphaned(b: Backend) {
    let c = b.client.clone();
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), &b.ns);
    let secrets: Api<Secret> = Api::namespaced(c, &b.ns);
    for (owner, dependent, policy, survives) in [
        ("o1", "d1", None, false),
        ("o2", "d2", Some("Orphan"), true),
    ] {
        let o = cms
            .create(&PostParams::default(), &cm(owner, &[]))
            .await
            .unwrap();
        let s: Secret = serde_json::from_value(json!({"metadata": {"name": dependent, "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": o.metadata.uid}]}})).unwrap();
        secrets.create(&PostParams::default(), &s).await.unwrap();
        let dp = DeleteParams {
            propagation_policy: policy.map(|p| {
                if p == "Orphan" {
                    kube::api::PropagationPolicy::Orphan
                } else {
                    kube::api::PropagationPolicy::Background
                }
            }),
            ..Default::default()
        };
        cms.delete(owner, &dp).await.unwrap();
        // The collector acts after the delete has returned, as kube-controller-manager's.
        let got = eventually(10, dependent, || async {
            let got = secrets.get_opt(dependent).await.unwrap();
            let settled = match &got {
                None => !survives,
                Some(s) => {
                    survives
                        && s.metadata
                            .owner_references
                            .as_ref()
                            .is_none_or(Vec::is_empty)
                }
            };
            settled.then_some(got)
        })
        .await;
        assert_eq!(got.is_some(), survives, "{dependent}");
        if let Some(s) = got {
            assert!(s.metadata.owner_references.unwrap_or_default().is_empty());
        }
    }
}

async fn lists_page_and_filter(b: Backend) {
    let api: Api<ConfigMap> = Api::namespaced(b.client.clone(), &b.ns);
    for i in 0..5 {
        api.create(
            &PostParams::default(),
            &cm(
                &format!("p{i}"),
                &[("tier", if i % 2 == 0 { "even" } else { "odd" })],
            ),
        )
        .await
        .unwrap();
    }
    let mut names = Vec::new();
    let mut lp = ListParams::default().limit(2);
    let mut pages = 0;
    loop {
        let page = api.list(&lp).await.unwrap();
        pages += 1;
        names.extend(page.items.iter().filter_map(|c| c.metadata.name.clone()));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => lp = lp.continue_token(&token),
            _ => break,
        }
    }
    assert_eq!(
        (pages, names),
        (
            3,
            vec![
                "p0".to_string(),
                "p1".into(),
                "p2".into(),
                "p3".into(),
                "p4".into()
            ]
        )
    );
    let odd: Vec<String> = api
        .list(&ListParams::default().labels("tier=odd"))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(odd, ["p1", "p3"]);
    let one: Vec<String> = api
        .list(&ListParams::default().fields("metadata.name=p4"))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(one, ["p4"]);
}

async fn the_runtime_watcher_follows_changes(b: Backend) {
    let api: Api<ConfigMap> = Api::namespaced(b.client.clone(), &b.ns);
    let mut events = watcher(api.clone(), watcher::Config::default().labels("w=1")).boxed();
    within(10, "initial list", async {
        while let Some(e) = events.try_next().await.unwrap() {
            if matches!(e, watcher::Event::InitDone) {
                break;
            }
        }
    })
    .await;
    api.create(&PostParams::default(), &cm("watched", &[("w", "1")]))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("ignored", &[("w", "2")]))
        .await
        .unwrap();
    let seen = within(10, "apply event", async {
        loop {
            if let Some(watcher::Event::Apply(o)) = events.try_next().await.unwrap() {
                return o.metadata.name.unwrap();
            }
        }
    })
    .await;
    assert_eq!(seen, "watched");
}

async fn garbage_collection_follows_the_real_collector(b: Backend) {
    let c = b.client.clone();
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), &b.ns);
    let secrets: Api<Secret> = Api::namespaced(c, &b.ns);
    let owner = |name: &str, uid: &Option<String>| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid});

    // Two owners: deleting one only drops its reference.
    let a = cms
        .create(&PostParams::default(), &cm("a", &[]))
        .await
        .unwrap();
    let b = cms
        .create(&PostParams::default(), &cm("b", &[]))
        .await
        .unwrap();
    let shared: Secret = serde_json::from_value(json!({"metadata": {"name": "shared", "ownerReferences": [owner("a", &a.metadata.uid), owner("b", &b.metadata.uid)]}})).unwrap();
    secrets
        .create(&PostParams::default(), &shared)
        .await
        .unwrap();
    cms.delete("a", &DeleteParams::default()).await.unwrap();
    // The collector acts after the delete returned (kube-controller-manager's does).
    let left = eventually(10, "shared loses a's reference", || async {
        let refs = secrets
            .get("shared")
            .await
            .unwrap()
            .metadata
            .owner_references
            .unwrap();
        (refs.len() == 1).then_some(refs)
    })
    .await;
    assert_eq!(
        left.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        ["b"]
    );
    cms.delete("b", &DeleteParams::default()).await.unwrap();
    eventually(10, "shared collected", || async {
        secrets
            .get_opt("shared")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;

    // Orphan on an owner held by a finalizer: the dependent survives the finalizer's end.
    let mut held = cm("held", &[]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    let held = cms.create(&PostParams::default(), &held).await.unwrap();
    let dep: Secret = serde_json::from_value(json!({"metadata": {"name": "dep", "ownerReferences": [owner("held", &held.metadata.uid)]}})).unwrap();
    secrets.create(&PostParams::default(), &dep).await.unwrap();
    assert!(
        cms.delete("held", &DeleteParams::orphan())
            .await
            .unwrap()
            .is_left()
    );
    // Like the real collector: the orphan finalizer is handled soon after (the dependent
    // loses its reference), the owner's own finalizer still holds it.
    let finalizers = eventually(10, "the orphan finalizer handled", || async {
        let f = cms.get("held").await.unwrap().metadata.finalizers?;
        (!f.iter().any(|f| f == "orphan")).then_some(f)
    })
    .await;
    assert_eq!(finalizers, ["example.com/hold"]);
    assert!(
        secrets
            .get("dep")
            .await
            .unwrap()
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Json::<()>(
            serde_json::from_value(json!([{"op": "remove", "path": "/metadata/finalizers/0"}]))
                .unwrap(),
        ),
    )
    .await
    .unwrap();
    assert!(cms.get_opt("held").await.unwrap().is_none());
    let kept = secrets.get("dep").await.unwrap();
    assert!(
        kept.metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );

    // Foreground: the owner waits for its dependents.
    let f = cms
        .create(&PostParams::default(), &cm("fg", &[]))
        .await
        .unwrap();
    let mut slow: Secret = serde_json::from_value(
        json!({"metadata": {"name": "slow", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "fg", "uid": f.metadata.uid, "blockOwnerDeletion": true}]}}),
    )
    .unwrap();
    slow.metadata.finalizers = Some(vec!["example.com/slow".into()]);
    secrets.create(&PostParams::default(), &slow).await.unwrap();
    cms.delete("fg", &DeleteParams::foreground()).await.unwrap();
    eventually(10, "the dependent deleted", || async {
        secrets
            .get("slow")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .map(|_| ())
    })
    .await;
    assert!(
        cms.get_opt("fg").await.unwrap().is_some(),
        "waits for its dependent"
    );
    release(&secrets, "slow").await;
    gone(&cms, "fg", 10, "the owner gone once its dependent is").await;
}

async fn deleting_a_namespace_respects_the_finalizers_inside(b: Backend) {
    let c = b.client.clone();
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), &b.ns);
    let mut held = cm("held", &[]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(c);
    nss.delete(&b.ns, &DeleteParams::default()).await.unwrap();
    let ns = nss.get(&b.ns).await.unwrap();
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Terminating"));
    // The namespace controller deletes what is inside after the namespace's delete
    // returned.
    eventually(10, "held marked for deletion", || async {
        cms.get("held")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .map(|_| ())
    })
    .await;
    release(&cms, "held").await;
    gone(&nss, &b.ns, 30, "namespace gone").await;
}

async fn every_write_records_its_update_manager_like_the_real_server(b: Backend) {
    let api: Api<kube::api::DynamicObject> = Api::namespaced_with(
        b.client.clone(),
        &b.ns,
        &kube::api::ApiResource::erase::<ConfigMap>(&()),
    );
    let as_json = |o: kube::api::DynamicObject| serde_json::to_value(o).unwrap();
    // Create with a fieldManager: an Update entry of every field it set.
    let body: kube::api::DynamicObject = serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mf", "labels": {"team": "a"}}, "data": {"x": "1", "y": "2"}})).unwrap();
    let created = as_json(
        api.create(
            &PostParams {
                field_manager: Some("kubectl-create".into()),
                ..Default::default()
            },
            &body,
        )
        .await
        .unwrap(),
    );
    let entry = created["metadata"]["managedFields"][0].clone();
    assert_eq!(entry["manager"], "kubectl-create");
    assert_eq!(entry["operation"], "Update");
    assert_eq!(entry["apiVersion"], "v1");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert!(entry["time"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert_eq!(
        entry["fieldsV1"],
        json!({"f:data": {".": {}, "f:x": {}, "f:y": {}}, "f:metadata": {"f:labels": {".": {}, "f:team": {}}}})
    );
    // A merge patch as `kubectl patch` sends it: kubectl-patch owns what it changed, and
    // kubectl-create keeps only what nobody changed since.
    let patched = as_json(
        api.patch(
            "mf",
            &PatchParams {
                field_manager: Some("kubectl-patch".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"data": {"x": "9"}})),
        )
        .await
        .unwrap(),
    );
    assert_eq!(
        entries_of(&patched, "kubectl-patch"),
        [("Update".to_string(), json!({"f:data": {"f:x": {}}}))]
    );
    assert_eq!(
        entries_of(&patched, "kubectl-create"),
        [(
            "Update".to_string(),
            json!({"f:data": {".": {}, "f:y": {}}, "f:metadata": {"f:labels": {".": {}, "f:team": {}}}})
        )]
    );
    // No fieldManager: the User-Agent's product, as kube-apiserver derives it.
    let agent = kube::Client::try_from({
        let kc = kube::config::Kubeconfig::from_yaml(&b.kubeconfig).unwrap();
        let mut c =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .unwrap();
        c.headers.push((
            axum::http::header::USER_AGENT,
            axum::http::HeaderValue::from_static("my-controller/v2.1 (linux/amd64)"),
        ));
        c
    })
    .unwrap();
    let by_agent: Api<kube::api::DynamicObject> = Api::namespaced_with(
        agent,
        &b.ns,
        &kube::api::ApiResource::erase::<ConfigMap>(&()),
    );
    let edited = as_json(
        by_agent
            .patch(
                "mf",
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"z": "3"}})),
            )
            .await
            .unwrap(),
    );
    assert_eq!(
        entries_of(&edited, "my-controller"),
        [("Update".to_string(), json!({"f:data": {"f:z": {}}}))]
    );
}

async fn server_side_apply_conflicts_with_update_managers_and_force_takes_over(b: Backend) {
    let api: Api<ConfigMap> = Api::namespaced(b.client.clone(), &b.ns);
    let doc = |data: serde_json::Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa-upd"}, "data": data});
    api.patch(
        "ssa-upd",
        &PatchParams::apply("vpnmig"),
        &Patch::Apply(doc(json!({"x": "1", "y": "2"}))),
    )
    .await
    .unwrap();
    // `kubectl edit` changes x: the field moves to kubectl-edit.
    api.patch(
        "ssa-upd",
        &PatchParams {
            field_manager: Some("kubectl-edit".into()),
            ..Default::default()
        },
        &Patch::Merge(json!({"data": {"x": "edited"}})),
    )
    .await
    .unwrap();
    let err = api
        .patch(
            "ssa-upd",
            &PatchParams::apply("vpnmig"),
            &Patch::Apply(doc(json!({"x": "1", "y": "2"}))),
        )
        .await
        .unwrap_err();
    assert_eq!(code(&err), 409);
    let kube::Error::Api(status) = &err else {
        panic!("{err}")
    };
    assert!(
        status
            .message
            .starts_with("Apply failed with 1 conflict: conflict with \"kubectl-edit\" using v1: "),
        "{}",
        status.message
    );
    assert!(status.message.ends_with(": .data.x"), "{}", status.message);
    let causes = status
        .details
        .as_ref()
        .map(|d| d.causes.clone())
        .unwrap_or_default();
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert_eq!(causes[0].reason, "FieldManagerConflict");
    assert_eq!(causes[0].field, ".data.x");
    assert!(causes[0].message.contains("\"kubectl-edit\""), "{causes:?}");
    // Applying the value kubectl-edit set is no conflict (shared ownership).
    api.patch(
        "ssa-upd",
        &PatchParams::apply("vpnmig"),
        &Patch::Apply(doc(json!({"x": "edited", "y": "2"}))),
    )
    .await
    .unwrap();
    // force: vpnmig takes x over; kubectl-edit owns nothing and its entry goes.
    let forced = api
        .patch(
            "ssa-upd",
            &PatchParams::apply("vpnmig").force(),
            &Patch::Apply(doc(json!({"x": "1", "y": "2"}))),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["x"], "1");
    let managers: Vec<(String, String)> = forced
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .map(|m| (m.manager.unwrap(), m.operation.unwrap()))
        .collect();
    assert_eq!(managers, [("vpnmig".to_string(), "Apply".to_string())]);
}

async fn the_garbage_collector_deletes_dependents_whose_owners_are_all_gone(b: Backend) {
    let c = b.client.clone();
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), &b.ns);
    let secrets: Api<Secret> = Api::namespaced(c, &b.ns);
    let alive = cms
        .create(&PostParams::default(), &cm("alive", &[]))
        .await
        .unwrap();
    let owner = |name: &str, uid: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid});
    let secret = |name: &str, refs: serde_json::Value| -> Secret {
        serde_json::from_value(json!({"metadata": {"name": name, "ownerReferences": refs}}))
            .unwrap()
    };
    let missing = "0b7c1d2e-0000-4000-8000-00000000dead";
    // Created with an owner that does not exist: collected.
    secrets
        .create(
            &PostParams::default(),
            &secret("dangling", json!([owner("nobody", missing)])),
        )
        .await
        .unwrap();
    // Named owner exists, but with another uid: just as absent.
    secrets
        .create(
            &PostParams::default(),
            &secret("stale-uid", json!([owner("alive", missing)])),
        )
        .await
        .unwrap();
    // One owner left: only the dangling reference goes.
    let alive_uid = alive.metadata.uid.clone().unwrap();
    secrets
        .create(
            &PostParams::default(),
            &secret(
                "half",
                json!([owner("nobody", missing), owner("alive", &alive_uid)]),
            ),
        )
        .await
        .unwrap();
    // An owner of a kind nobody serves cannot be judged: kept, like the real collector.
    secrets
        .create(
            &PostParams::default(),
            &secret("unknown-kind", json!([{"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": missing}])),
        )
        .await
        .unwrap();
    for name in ["dangling", "stale-uid"] {
        gone(&secrets, name, 5, name).await;
    }
    let refs = eventually(5, "half loses its dangling reference", || async {
        let refs = secrets
            .get("half")
            .await
            .unwrap()
            .metadata
            .owner_references?;
        (refs.len() == 1).then_some(refs)
    })
    .await;
    assert_eq!(refs[0].uid, alive_uid);
    assert!(secrets.get_opt("unknown-kind").await.unwrap().is_some());
}

async fn object_sizes_are_bounded_like_a_real_server(b: Backend) {
    use k8s_openapi::api::coordination::v1::Lease;
    let c = b.client.clone();
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), &b.ns);
    let pp = PostParams::default();
    // 1 MiB of data values is the limit (keys do not count), split over two keys.
    let half = 512 * 1024;
    cms.create(
        &pp,
        &cm_with("full", &[("a", "x".repeat(half)), ("b", "y".repeat(half))]),
    )
    .await
    .unwrap();
    let err = cms
        .create(
            &pp,
            &cm_with(
                "over",
                &[("a", "x".repeat(half)), ("b", "y".repeat(half + 1))],
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&err),
        (
            422,
            "Invalid".into(),
            "ConfigMap \"over\" is invalid: []: Too long: may not be more than 1048576 bytes"
                .into(),
            vec![(
                "FieldValueTooLong".into(),
                "Too long: may not be more than 1048576 bytes".into(),
                "[]".into()
            )]
        )
    );
    assert_eq!(code(&cms.get("over").await.unwrap_err()), 404);
    // Growing an existing one past the limit is refused the same way, and changes nothing.
    let err = cms
        .patch(
            "full",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"c": "z"}})),
        )
        .await
        .unwrap_err();
    assert_eq!(refusal(&err).0, 422);
    assert!(
        cms.get("full")
            .await
            .unwrap()
            .data
            .unwrap()
            .keys()
            .eq(["a", "b"])
    );

    // Secrets: the decoded bytes of data.
    use base64::Engine;
    let secrets: Api<Secret> = Api::namespaced(c.clone(), &b.ns);
    let big = base64::engine::general_purpose::STANDARD.encode(vec![7u8; 1024 * 1024 + 1]);
    let secret: Secret =
        serde_json::from_value(json!({"metadata": {"name": "big"}, "data": {"k": big}})).unwrap();
    let err = secrets.create(&pp, &secret).await.unwrap_err();
    assert_eq!(
        refusal(&err).2,
        "Secret \"big\" is invalid: data: Too long: may not be more than 1048576 bytes"
    );

    // An object etcd will not store (over 1.5 MiB): the apiserver passes etcd's error on.
    let leases: Api<Lease> = Api::namespaced(c.clone(), &b.ns);
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": "huge"},
        "spec": {"holderIdentity": "h".repeat(1600 * 1024)}
    }))
    .unwrap();
    let err = leases.create(&pp, &lease).await.unwrap_err();
    assert_eq!(
        refusal(&err),
        (
            500,
            String::new(),
            "etcdserver: request is too large".into(),
            vec![]
        )
    );
    assert_eq!(code(&leases.get("huge").await.unwrap_err()), 404);

    // A body over 3 MiB is not read at all.
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": "huger"},
        "spec": {"holderIdentity": "h".repeat(3 * 1024 * 1024)}
    }))
    .unwrap();
    let err = leases.create(&pp, &lease).await.unwrap_err();
    assert_eq!(
        refusal(&err),
        (
            413,
            "RequestEntityTooLarge".into(),
            "Request entity too large: limit is 3145728".into(),
            vec![]
        )
    );
}

async fn labels_and_annotations_follow_apimachinery_and_nothing_stricter(b: Backend) {
    let cms: Api<ConfigMap> = Api::namespaced(b.client.clone(), &b.ns);
    let pp = PostParams::default();
    // What a real server accepts: 63 characters, dots anywhere, upper case, a prefixed key.
    let v63 = format!("{}.{}", "a".repeat(31), "B".repeat(31));
    cms.create(
        &pp,
        &cm(
            "fine",
            &[
                ("vpn.bnerd.net/gateway", v63.as_str()),
                ("Example_Key", "a.b.c"),
                ("empty", ""),
            ],
        ),
    )
    .await
    .unwrap();

    let v64 = "g".repeat(64);
    let err = cms
        .create(&pp, &cm("long", &[("vpn.bnerd.net/lock", v64.as_str())]))
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&err),
        (
            422,
            "Invalid".into(),
            format!(
                "ConfigMap \"long\" is invalid: metadata.labels: Invalid value: \"{v64}\": must be no more than 63 bytes"
            ),
            vec![(
                "FieldValueInvalid".into(),
                format!("Invalid value: \"{v64}\": must be no more than 63 bytes"),
                "metadata.labels".into()
            )]
        )
    );
    let err = cms
        .create(&pp, &cm("slashes", &[("a/b/c", "v")]))
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&err).2,
        "ConfigMap \"slashes\" is invalid: metadata.labels: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
    );

    // Annotations: keys and values together at most 256 KiB.
    let with_annotation = |name: &str, len: usize| -> ConfigMap {
        serde_json::from_value(json!({
            "metadata": {"name": name, "annotations": {"k": "a".repeat(len - 1)}}
        }))
        .unwrap()
    };
    cms.create(&pp, &with_annotation("at-limit", 262_144))
        .await
        .unwrap();
    let err = cms
        .create(&pp, &with_annotation("over-limit", 262_145))
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&err),
        (
            422,
            "Invalid".into(),
            "ConfigMap \"over-limit\" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes".into(),
            vec![(
                "FieldValueTooLong".into(),
                "Too long: may not be more than 262144 bytes".into(),
                "metadata.annotations".into()
            )]
        )
    );
}

async fn names_are_dns_subdomains_for_every_kind_but_namespaces(b: Backend) {
    use k8s_openapi::api::coordination::v1::Lease;
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
    let c = b.client.clone();
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), &b.ns);
    let pp = PostParams::default();
    // A segment longer than 63 is fine: only the whole name is bounded (253).
    let long_segment = format!("{}.example", "s".repeat(100));
    cms.create(&pp, &cm(&long_segment, &[])).await.unwrap();
    let n253 = format!("{}.{}", "a".repeat(126), "b".repeat(126));
    cms.create(&pp, &cm(&n253, &[])).await.unwrap();
    let n254 = "a".repeat(254);
    let err = cms.create(&pp, &cm(&n254, &[])).await.unwrap_err();
    assert_eq!(
        refusal(&err).2,
        format!(
            "ConfigMap \"{n254}\" is invalid: metadata.name: Invalid value: \"{n254}\": must be no more than 253 characters"
        )
    );
    let subdomain_rule = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    let leases: Api<Lease> = Api::namespaced(c.clone(), &b.ns);
    let lease: Lease =
        serde_json::from_value(json!({"metadata": {"name": "Acme-Lock"}, "spec": {}})).unwrap();
    let err = leases.create(&pp, &lease).await.unwrap_err();
    assert_eq!(
        refusal(&err),
        (
            422,
            "Invalid".into(),
            format!(
                "Lease.coordination.k8s.io \"Acme-Lock\" is invalid: metadata.name: Invalid value: \"Acme-Lock\": {subdomain_rule}"
            ),
            vec![(
                "FieldValueInvalid".into(),
                format!("Invalid value: \"Acme-Lock\": {subdomain_rule}"),
                "metadata.name".into()
            )]
        )
    );
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "vpn.bnerd.net",
        "v1alpha1",
        "VPNPeer",
    ));
    let peers: Api<DynamicObject> = Api::namespaced_with(c.clone(), &b.ns, &ar);
    let peer: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "vpn.bnerd.net/v1alpha1", "kind": "VPNPeer",
        "metadata": {"name": "acme_branch"}, "spec": {"gatewayRef": {"name": "acme"}}
    }))
    .unwrap();
    let err = peers.create(&pp, &peer).await.unwrap_err();
    assert_eq!(
        refusal(&err).2,
        format!(
            "VPNPeer.vpn.bnerd.net \"acme_branch\" is invalid: metadata.name: Invalid value: \"acme_branch\": {subdomain_rule}"
        )
    );
    // Namespaces are DNS-1123 labels: 63 at most, no dots.
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(c);
    let ns: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(json!({"metadata": {"name": "tenant.acme"}})).unwrap();
    let err = nss.create(&pp, &ns).await.unwrap_err();
    assert_eq!(
        refusal(&err).2,
        "Namespace \"tenant.acme\" is invalid: metadata.name: Invalid value: \"tenant.acme\": must not contain dots"
    );
}

async fn a_terminating_namespace_refuses_creates_but_not_updates_or_deletes(b: Backend) {
    let c = b.client.clone();
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), &b.ns);
    let mut held = cm("held", &[]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();
    cms.create(&PostParams::default(), &cm("other", &[]))
        .await
        .unwrap();
    let other_held = {
        let mut o = cm("second", &[]);
        o.metadata.finalizers = Some(vec!["example.com/hold".into()]);
        o
    };
    cms.create(&PostParams::default(), &other_held)
        .await
        .unwrap();
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(c);
    nss.delete(&b.ns, &DeleteParams::default()).await.unwrap();

    let expected = (
        403,
        "Forbidden".to_string(),
        format!(
            "configmaps \"late\" is forbidden: unable to create new content in namespace {} because it is being terminated",
            b.ns
        ),
        vec![(
            "NamespaceTerminating".to_string(),
            format!("namespace {} is being terminated", b.ns),
            "metadata.namespace".to_string(),
        )],
    );
    let err = cms
        .create(&PostParams::default(), &cm("late", &[]))
        .await
        .unwrap_err();
    assert_eq!(refusal(&err), expected);
    // A server-side apply that would create is refused the same way.
    let err = cms
        .patch(
            "late",
            &PatchParams::apply("vpnmig"),
            &Patch::Apply(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late"}}),
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(refusal(&err), expected);
    // Objects already there can still be changed, and deleted.
    let patched = cms
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"seen": "yes"}}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.metadata.labels.unwrap()["seen"], "yes");
    release(&cms, "second").await;
    gone(&cms, "second", 30, "second gone").await;
}

/// kube-apiserver's custom resource strategy: without a status subresource every change
/// but metadata's moves `metadata.generation`, a status write too (as with Argo CD's
/// Application, whose CRD has none: found by the simulated Argo CD on the real control
/// plane, whose status writes moved it).
/// The API of `Widget` (a CRD of the rows' own, created once, without a status subresource
/// and with a schema that keeps unknown fields, as Argo CD's Application is).
async fn widgets(b: &Backend) -> Api<kube::api::DynamicObject> {
    // On the emulator the simulated Argo CD writes every Application's status: not this
    // kind's.
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.fidelity.vpnmig.example"},
        "spec": {"group": "fidelity.vpnmig.example", "scope": "Namespaced",
            "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    let crds: Api<kube::api::DynamicObject> = Api::all_with(
        b.client.clone(),
        &kube::api::ApiResource::erase::<
            k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        >(&()),
    );
    match crds
        .create(
            &PostParams::default(),
            &serde_json::from_value(crd).unwrap(),
        )
        .await
    {
        Ok(_) => {}
        Err(e) if code(&e) == 409 => {}
        Err(e) => panic!("create the Widget CRD: {e}"),
    }
    let ar = kube::api::ApiResource {
        group: "fidelity.vpnmig.example".into(),
        version: "v1".into(),
        api_version: "fidelity.vpnmig.example/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    Api::namespaced_with(b.client.clone(), &b.ns, &ar)
}

async fn a_status_write_moves_the_generation_without_a_status_subresource(b: Backend) {
    // A CRD without a status subresource, as Argo CD's Application is.
    let widgets = widgets(&b).await;
    let body: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "fidelity.vpnmig.example/v1", "kind": "Widget",
        "metadata": {"name": "gen"}, "spec": {"size": 1}
    }))
    .unwrap();
    // Served once the CRD is Established (bounded).
    let created = eventually(30, "the Widget CRD is served", || async {
        widgets.create(&PostParams::default(), &body).await.ok()
    })
    .await;
    assert_eq!(created.metadata.generation, Some(1));
    let mut o = created;
    o.data["status"] = json!({"sync": {"status": "Synced"}});
    let written = widgets
        .replace("gen", &PostParams::default(), &o)
        .await
        .unwrap();
    assert_eq!(written.data["status"]["sync"]["status"], "Synced");
    assert_eq!(written.metadata.generation, Some(2), "a status write");
    // A label only: metadata, no move.
    let mut o = written;
    o.metadata.labels = Some([("team".to_string(), "a".to_string())].into());
    let written = widgets
        .replace("gen", &PostParams::default(), &o)
        .await
        .unwrap();
    assert_eq!(written.metadata.generation, Some(2), "a label");
}

/// A write that only removes fields owns none of them: its manager has no entry, on the
/// emulator as on kube-apiserver (a21j 06: Argo CD's pause removes `automated`, and a
/// colleague's re-enable removed again by `argocd-server` leaves no trace in
/// managedFields; the emulator kept an entry owning the emptied map).
async fn a_write_that_only_removes_fields_leaves_its_manager_no_entry(b: Backend) {
    let widgets = widgets(&b).await;
    let body: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "fidelity.vpnmig.example/v1", "kind": "Widget",
        "metadata": {"name": "policy"},
        "spec": {"size": 1, "policy": {"automated": {"prune": true, "selfHeal": true}}}
    }))
    .unwrap();
    let as_json = |o: kube::api::DynamicObject| serde_json::to_value(o).unwrap();
    let by = |m: &str| PatchParams {
        field_manager: Some(m.into()),
        ..Default::default()
    };
    eventually(30, "the Widget CRD is served", || async {
        widgets
            .create(
                &PostParams {
                    field_manager: Some("creator".into()),
                    ..Default::default()
                },
                &body,
            )
            .await
            .ok()
    })
    .await;
    // The pause: `automated` removed, `policy` left empty.
    let paused = as_json(
        widgets
            .patch(
                "policy",
                &by("pauser"),
                &Patch::Merge(json!({"spec": {"policy": {"automated": null}}})),
            )
            .await
            .unwrap(),
    );
    assert_eq!(paused["spec"]["policy"], json!({}), "{paused}");
    assert_eq!(entries_of(&paused, "pauser"), [], "{paused}");
    // Re-enabled by someone: theirs.
    let armed = as_json(
        widgets
            .patch(
                "policy",
                &by("argocd-server"),
                &Patch::Merge(json!({"spec": {"policy": {"automated": {"prune": false}}}})),
            )
            .await
            .unwrap(),
    );
    let entries = entries_of(&armed, "argocd-server");
    assert_eq!(entries.len(), 1, "{armed}");
    assert!(
        entries[0].1["f:spec"]["f:policy"]["f:automated"]
            .get("f:prune")
            .is_some(),
        "{armed}"
    );
    // Removed again (`argocd app set --sync-policy none`): no entry left.
    let removed = as_json(
        widgets
            .patch(
                "policy",
                &by("argocd-server"),
                &Patch::<()>::Json(
                    serde_json::from_value(
                        json!([{"op": "remove", "path": "/spec/policy/automated"}]),
                    )
                    .unwrap(),
                ),
            )
            .await
            .unwrap(),
    );
    assert_eq!(removed["spec"]["policy"], json!({}), "{removed}");
    assert_eq!(entries_of(&removed, "argocd-server"), [], "{removed}");
}

const ROWS: &[Row] = &[
    (
        "a write that only removes fields leaves its manager no entry",
        |b| Box::pin(a_write_that_only_removes_fields_leaves_its_manager_no_entry(b)),
    ),
    (
        "a status write moves the generation without a status subresource",
        |b| Box::pin(a_status_write_moves_the_generation_without_a_status_subresource(b)),
    ),
    ("crud with optimistic concurrency", |b| {
        Box::pin(crud_with_optimistic_concurrency(b))
    }),
    (
        "custom resources are validated against the crd schema",
        |b| Box::pin(custom_resources_are_validated_against_the_crd_schema(b)),
    ),
    ("dry run changes nothing", |b| {
        Box::pin(dry_run_changes_nothing(b))
    }),
    (
        "server side apply owns conflicts and removes dropped fields",
        |b| {
            Box::pin(server_side_apply_owns_conflicts_and_removes_dropped_fields(
                b,
            ))
        },
    ),
    ("finalizers hold deletion and watch sees it end", |b| {
        Box::pin(finalizers_hold_deletion_and_watch_sees_it_end(b))
    }),
    ("owner references are garbage collected or orphaned", |b| {
        Box::pin(owner_references_are_garbage_collected_or_orphaned(b))
    }),
    ("lists page and filter", |b| {
        Box::pin(lists_page_and_filter(b))
    }),
    ("the runtime watcher follows changes", |b| {
        Box::pin(the_runtime_watcher_follows_changes(b))
    }),
    ("garbage collection follows the real collector", |b| {
        Box::pin(garbage_collection_follows_the_real_collector(b))
    }),
    ("deleting a namespace respects the finalizers inside", |b| {
        Box::pin(deleting_a_namespace_respects_the_finalizers_inside(b))
    }),
    (
        "every write records its update manager like the real server",
        |b| {
            Box::pin(every_write_records_its_update_manager_like_the_real_server(
                b,
            ))
        },
    ),
    (
        "server side apply conflicts with update managers and force takes over",
        |b| Box::pin(server_side_apply_conflicts_with_update_managers_and_force_takes_over(b)),
    ),
    (
        "the garbage collector deletes dependents whose owners are all gone",
        |b| Box::pin(the_garbage_collector_deletes_dependents_whose_owners_are_all_gone(b)),
    ),
    ("object sizes are bounded like a real server", |b| {
        Box::pin(object_sizes_are_bounded_like_a_real_server(b))
    }),
    (
        "labels and annotations follow apimachinery and nothing stricter",
        |b| Box::pin(labels_and_annotations_follow_apimachinery_and_nothing_stricter(b)),
    ),
    (
        "names are dns subdomains for every kind but namespaces",
        |b| Box::pin(names_are_dns_subdomains_for_every_kind_but_namespaces(b)),
    ),
    (
        "a terminating namespace refuses creates but not updates or deletes",
        |b| Box::pin(a_terminating_namespace_refuses_creates_but_not_updates_or_deletes(b)),
    ),
];
