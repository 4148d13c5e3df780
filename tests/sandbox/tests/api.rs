//! API fidelity, driven with kube-rs: discovery, CRUD with conflicts, validation, dry
//! run, server-side apply, status subresources, finalizers, garbage collection, paging,
//! selectors, watches, auth and RBAC, fault knobs, exec.

mod common;

use std::collections::BTreeMap;

use common::{ACME, client, code, eventually, start, within};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::api::{
    Api, AttachParams, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::discovery::Discovery;
use kube::runtime::watcher;
use serde_json::json;
use vpnmig::core::model::{IPsecGateway, VPNGateway};
use vpnmig_sandbox::SettingsFile;
use vpnmig_sandbox::api::auth::{Rule, User};
use vpnmig_sandbox::api::faults::{ErrorRule, SideEffects, Webhook};

const NS: &str = "tenant-acme";

fn cm(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>()},
        "data": {"k": "v"}
    }))
    .unwrap()
}

#[tokio::test]
async fn discovery_serves_the_operator_kinds() {
    let sb = start(ACME, SettingsFile::default()).await;
    let c = client(&sb, None).await;
    let d = within(10, "discovery", Discovery::new(c).run())
        .await
        .unwrap();
    let mut found = Vec::new();
    for g in d.groups() {
        for (ar, caps) in g.recommended_resources() {
            if ar.group.ends_with("bnerd.net") {
                found.push((
                    ar.api_version.clone(),
                    ar.kind.clone(),
                    ar.plural.clone(),
                    caps.scope == kube::discovery::Scope::Namespaced,
                ));
            }
        }
    }
    found.sort();
    assert_eq!(
        found,
        [
            (
                "ipsec.bnerd.net/v1alpha1".to_string(),
                "IPsecGateway".to_string(),
                "ipsecgateways".to_string(),
                true
            ),
            (
                "vpn.bnerd.net/v1alpha1".into(),
                "VPNGateway".into(),
                "vpngateways".into(),
                true
            ),
            (
                "vpn.bnerd.net/v1alpha1".into(),
                "VPNPeer".into(),
                "vpnpeers".into(),
                true
            ),
        ]
    );
    sb.shutdown().await;
}

#[tokio::test]
async fn crud_with_optimistic_concurrency() {
    let sb = start(ACME, SettingsFile::default()).await;
    let api: Api<ConfigMap> = Api::namespaced(client(&sb, None).await, NS);
    let created = api
        .create(&PostParams::default(), &cm("a", &[]))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
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
    sb.shutdown().await;
}

#[tokio::test]
async fn custom_resources_are_validated_against_the_crd_schema() {
    let sb = start(ACME, SettingsFile::default()).await;
    let api: Api<VPNGateway> = Api::namespaced(client(&sb, None).await, NS);
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
    sb.shutdown().await;
}

#[tokio::test]
async fn dry_run_changes_nothing() {
    let sb = start(ACME, SettingsFile::default()).await;
    let api: Api<ConfigMap> = Api::namespaced(client(&sb, None).await, NS);
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let out = api.create(&pp, &cm("dry", &[])).await.unwrap();
    assert_eq!(out.metadata.name.as_deref(), Some("dry"));
    assert_eq!(code(&api.get("dry").await.unwrap_err()), 404);
    sb.shutdown().await;
}

#[tokio::test]
async fn server_side_apply_owns_conflicts_and_removes_dropped_fields() {
    let sb = start(ACME, SettingsFile::default()).await;
    let api: Api<ConfigMap> = Api::namespaced(client(&sb, None).await, NS);
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
    sb.shutdown().await;
}

#[tokio::test]
async fn status_is_a_subresource_and_spec_changes_bump_generation() {
    // A Deployment nobody reconciles: the simulated operator only touches its own.
    let sb = start(ACME, SettingsFile::default()).await;
    let api: Api<Deployment> = Api::namespaced(client(&sb, None).await, NS);
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "plain"},
        "spec": {"selector": {"matchLabels": {"app": "plain"}}, "template": {"metadata": {"labels": {"app": "plain"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &d).await.unwrap();
    let gen0 = created.metadata.generation.unwrap();
    let after_status = api
        .patch_status(
            "plain",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"observedGeneration": 99}})),
        )
        .await
        .unwrap();
    assert_eq!(after_status.status.unwrap().observed_generation, Some(99));
    assert_eq!(after_status.metadata.generation, Some(gen0));
    // Status sent to the main resource is ignored; a spec change bumps the generation.
    let main = api
        .patch(
            "plain",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"observedGeneration": 1}, "spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(main.status.unwrap().observed_generation, Some(99));
    assert_eq!(main.metadata.generation, Some(gen0 + 1));
    // A metadata-only change does not.
    let labelled = api
        .patch(
            "plain",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(labelled.metadata.generation, Some(gen0 + 1));
    sb.shutdown().await;
}

#[tokio::test]
async fn finalizers_hold_deletion_and_watch_sees_it_end() {
    let sb = start(ACME, SettingsFile::default()).await;
    let api: Api<ConfigMap> = Api::namespaced(client(&sb, None).await, NS);
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
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
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
    sb.shutdown().await;
}

#[tokio::test]
async fn owner_references_are_garbage_collected_or_orphaned() {
    let sb = start(ACME, SettingsFile::default()).await;
    let c = client(&sb, None).await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), NS);
    let secrets: Api<Secret> = Api::namespaced(c, NS);
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
        let got = secrets.get_opt(dependent).await.unwrap();
        assert_eq!(got.is_some(), survives, "{dependent}");
        if let Some(s) = got {
            assert!(s.metadata.owner_references.unwrap_or_default().is_empty());
        }
    }
    sb.shutdown().await;
}

#[tokio::test]
async fn lists_page_and_filter() {
    let sb = start(ACME, SettingsFile::default()).await;
    let api: Api<ConfigMap> = Api::namespaced(client(&sb, None).await, NS);
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
    sb.shutdown().await;
}

#[tokio::test]
async fn the_runtime_watcher_follows_changes() {
    let sb = start(ACME, SettingsFile::default()).await;
    let api: Api<ConfigMap> = Api::namespaced(client(&sb, None).await, NS);
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
    sb.shutdown().await;
}

#[tokio::test]
async fn tokens_are_authenticated_and_rules_enforced() {
    let settings = SettingsFile {
        users: vec![User::with_rules(
            "viewer",
            vec![Rule::new(&["get", "list"], &["ipsecgateways"])],
        )],
        ..Default::default()
    };
    let sb = start(ACME, settings).await;
    let viewer: Api<IPsecGateway> =
        Api::namespaced(client(&sb, Some("vpnmig-sandbox-viewer")).await, NS);
    assert!(viewer.get("acme").await.is_ok());
    let err = viewer
        .delete("acme", &DeleteParams::default())
        .await
        .unwrap_err();
    let kube::Error::Api(s) = &err else { panic!() };
    assert_eq!(s.code, 403);
    assert_eq!(
        s.message,
        "ipsecgateways.ipsec.bnerd.net \"acme\" is forbidden: User \"viewer\" cannot delete resource \"ipsecgateways\" in API group \"ipsec.bnerd.net\" in the namespace \"tenant-acme\""
    );
    let secrets: Api<Secret> =
        Api::namespaced(client(&sb, Some("vpnmig-sandbox-viewer")).await, NS);
    assert_eq!(code(&secrets.get("acme-psk").await.unwrap_err()), 403);

    let kc = sb.kubeconfig().replace(&sb.token, "wrong-token");
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(&kc).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    let anon: Api<IPsecGateway> = Api::namespaced(kube::Client::try_from(config).unwrap(), NS);
    assert_eq!(code(&anon.get("acme").await.unwrap_err()), 401);
    sb.shutdown().await;
}

#[tokio::test]
async fn fault_knobs_fail_requests_then_recover() {
    let sb = start(ACME, SettingsFile::default()).await;
    let rule = |verb: &str, code: u16| ErrorRule {
        verbs: vec![verb.into()],
        resources: vec!["ipsecgateways".into()],
        code,
        times: Some(1),
        retry_after_seconds: Some(1),
    };
    sb.api_faults.write().unwrap().errors.extend([
        rule("list", 500),
        rule("get", 429),
        rule("patch", 503),
    ]);
    let api: Api<IPsecGateway> = Api::namespaced(client(&sb, None).await, NS);
    let err = api.list(&ListParams::default()).await.unwrap_err();
    let kube::Error::Api(s) = &err else { panic!() };
    assert_eq!((s.code, s.reason.as_str()), (500, "InternalError"));
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
    // kube-rs retries 429 and 503 by itself, honouring Retry-After: the faults were hit
    // once each and the calls still succeed.
    assert!(api.get("acme").await.is_ok());
    assert!(
        api.patch(
            "acme",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}}))
        )
        .await
        .is_ok()
    );
    assert!(
        sb.api_faults
            .read()
            .unwrap()
            .errors
            .iter()
            .all(|r| r.times == Some(0)),
        "every fault fired"
    );

    // Dropped watches end on their own.
    sb.api_faults.write().unwrap().drop_watches_after_ms = Some(200);
    let rv = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let stream = api.watch(&WatchParams::default(), &rv).await.unwrap();
    let drained = within(5, "dropped watch ends", stream.collect::<Vec<_>>()).await;
    assert!(drained.is_empty());
    sb.shutdown().await;
}

#[tokio::test]
async fn exec_reports_exit_status_and_output() {
    let sb = start(ACME, SettingsFile::default()).await;
    let pods: Api<Pod> = Api::namespaced(client(&sb, None).await, NS);
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "shell"}, "spec": {"containers": [{"name": "strongswan", "image": "strongswan"}]}})).unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let mut p = within(
        10,
        "exec",
        pods.exec(
            "shell",
            ["no-such-command", "--x"],
            &AttachParams::default().container("strongswan").stderr(true),
        ),
    )
    .await
    .unwrap();
    let status = p.take_status().unwrap();
    let mut stderr = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut p.stderr().unwrap(), &mut stderr)
        .await
        .unwrap();
    let status = within(10, "exec status", status).await.unwrap();
    assert_eq!(status.reason.as_deref(), Some("NonZeroExitCode"));
    let exit = status
        .details
        .and_then(|d| d.causes)
        .and_then(|c| {
            c.into_iter()
                .find(|c| c.reason.as_deref() == Some("ExitCode"))
        })
        .and_then(|c| c.message);
    assert_eq!(exit.as_deref(), Some("127"));
    assert_eq!(stderr, "no-such-command: command not found\n");
    within(10, "join", p.join()).await.unwrap();
    sb.shutdown().await;
}

#[tokio::test]
async fn scenario_objects_keep_their_status_and_crds_are_installed() {
    let sb = start(ACME, SettingsFile::default()).await;
    let api: Api<IPsecGateway> = Api::namespaced(client(&sb, None).await, NS);
    let gw = eventually(5, "gateway", || async {
        api.get_opt("acme").await.unwrap()
    })
    .await;
    assert_eq!(
        gw.status.unwrap().service_cidr.as_deref(),
        Some("10.250.3.0/24")
    );
    assert_eq!(sb.namespace, "tenant-acme");
    sb.shutdown().await;
}

#[tokio::test]
async fn garbage_collection_follows_the_real_collector() {
    let sb = start(ACME, SettingsFile::default()).await;
    let c = client(&sb, None).await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), NS);
    let secrets: Api<Secret> = Api::namespaced(c, NS);
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
    let left = secrets
        .get("shared")
        .await
        .unwrap()
        .metadata
        .owner_references
        .unwrap();
    assert_eq!(
        left.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        ["b"]
    );
    cms.delete("b", &DeleteParams::default()).await.unwrap();
    assert!(secrets.get_opt("shared").await.unwrap().is_none());

    // Orphan on an owner held by a finalizer: the dependent survives the finalizer's end.
    let mut held = cm("held", &[]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    let held = cms.create(&PostParams::default(), &held).await.unwrap();
    let dep: Secret = serde_json::from_value(json!({"metadata": {"name": "dep", "ownerReferences": [owner("held", &held.metadata.uid)]}})).unwrap();
    secrets.create(&PostParams::default(), &dep).await.unwrap();
    let marked = cms
        .delete("held", &DeleteParams::orphan())
        .await
        .unwrap()
        .left()
        .unwrap();
    // Like the real collector: the orphan finalizer is handled at once (the dependent
    // loses its reference), the owner's own finalizer still holds it.
    assert_eq!(marked.metadata.finalizers.unwrap(), ["example.com/hold"]);
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
        json!({"metadata": {"name": "slow", "ownerReferences": [owner("fg", &f.metadata.uid)]}}),
    )
    .unwrap();
    slow.metadata.finalizers = Some(vec!["example.com/slow".into()]);
    secrets.create(&PostParams::default(), &slow).await.unwrap();
    cms.delete("fg", &DeleteParams::foreground()).await.unwrap();
    assert!(
        cms.get_opt("fg").await.unwrap().is_some(),
        "waits for its dependent"
    );
    assert!(
        secrets
            .get("slow")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    secrets
        .patch(
            "slow",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    assert!(cms.get_opt("fg").await.unwrap().is_none());
    sb.shutdown().await;
}

#[tokio::test]
async fn secrets_fold_string_data_into_data() {
    let sb = start(ACME, SettingsFile::default()).await;
    let secrets: Api<Secret> = Api::namespaced(client(&sb, None).await, NS);
    let s = secrets.get("acme-psk").await.unwrap();
    let data = s.data.unwrap();
    assert_eq!(data["psk"].0, b"rehearsal-only-not-a-real-key");
    sb.shutdown().await;
}

#[tokio::test]
async fn deleting_a_namespace_respects_the_finalizers_inside() {
    let sb = start(ACME, SettingsFile::default()).await;
    let c = client(&sb, None).await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), NS);
    let mut held = cm("held", &[]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(c);
    nss.delete(NS, &DeleteParams::default()).await.unwrap();
    let ns = nss.get(NS).await.unwrap();
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Terminating"));
    assert!(
        cms.get("held")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually(5, "namespace gone", || async {
        nss.get_opt(NS).await.unwrap().is_none().then_some(())
    })
    .await;
    sb.shutdown().await;
}

#[tokio::test]
async fn malformed_bodies_and_selectors_are_refused_not_crashed() {
    let sb = start(ACME, SettingsFile::default()).await;
    let c = client(&sb, None).await;
    let gws: Api<IPsecGateway> = Api::namespaced(c.clone(), NS);
    let err = gws
        .patch("acme", &PatchParams::default(), &Patch::Merge(json!([1])))
        .await
        .unwrap_err();
    assert_eq!(code(&err), 400);
    let err = gws
        .patch(
            "acme",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": "oops"}})),
        )
        .await
        .unwrap_err();
    assert_eq!(code(&err), 422);
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), NS);
    assert_eq!(
        code(
            &cms.create(&PostParams::default(), &cm("UPPER", &[]))
                .await
                .unwrap_err()
        ),
        422
    );
    assert_eq!(
        code(
            &cms.list(&ListParams::default().labels("bad=selector!!"))
                .await
                .unwrap_err()
        ),
        400
    );
    assert_eq!(
        code(
            &gws.list(&ListParams::default().fields("spec.foo=bar"))
                .await
                .unwrap_err()
        ),
        400
    );
    assert!(gws.get("acme").await.is_ok(), "the server is still up");
    sb.shutdown().await;
}

/// `metadata.managedFields` entries of `manager` (operation, fieldsV1).
fn entries_of(obj: &serde_json::Value, manager: &str) -> Vec<(String, serde_json::Value)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["manager"] == manager)
        .map(|e| {
            (
                e["operation"].as_str().unwrap().to_string(),
                e["fieldsV1"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn every_write_records_its_update_manager_like_the_real_server() {
    let sb = start(ACME, SettingsFile::default()).await;
    let api: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client(&sb, None).await,
        NS,
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
        json!({"f:data": {"f:x": {}, "f:y": {}}, "f:metadata": {"f:labels": {"f:team": {}}}})
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
            json!({"f:data": {"f:y": {}}, "f:metadata": {"f:labels": {"f:team": {}}}})
        )]
    );
    // No fieldManager: the User-Agent's product, as kube-apiserver derives it.
    let agent = kube::Client::try_from({
        let kc = kube::config::Kubeconfig::from_yaml(&sb.kubeconfig()).unwrap();
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
    let by_agent: Api<kube::api::DynamicObject> =
        Api::namespaced_with(agent, NS, &kube::api::ApiResource::erase::<ConfigMap>(&()));
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
    sb.shutdown().await;
}

#[tokio::test]
async fn server_side_apply_conflicts_with_update_managers_and_force_takes_over() {
    let sb = start(ACME, SettingsFile::default()).await;
    let api: Api<ConfigMap> = Api::namespaced(client(&sb, None).await, NS);
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
        status.message.starts_with(
            "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using v1 at "
        ),
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
    sb.shutdown().await;
}

#[tokio::test]
async fn the_garbage_collector_deletes_dependents_whose_owners_are_all_gone() {
    let sb = start(ACME, SettingsFile::default()).await;
    let c = client(&sb, None).await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), NS);
    let secrets: Api<Secret> = Api::namespaced(c, NS);
    let alive = cms
        .create(&PostParams::default(), &cm("alive", &[]))
        .await
        .unwrap();
    let owner = |name: &str, uid: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid});
    let secret = |name: &str, refs: serde_json::Value| -> Secret {
        serde_json::from_value(json!({"metadata": {"name": name, "ownerReferences": refs}}))
            .unwrap()
    };
    let gone = "0b7c1d2e-0000-4000-8000-00000000dead";
    // Created with an owner that does not exist: collected.
    secrets
        .create(
            &PostParams::default(),
            &secret("dangling", json!([owner("nobody", gone)])),
        )
        .await
        .unwrap();
    // Named owner exists, but with another uid: just as absent.
    secrets
        .create(
            &PostParams::default(),
            &secret("stale-uid", json!([owner("alive", gone)])),
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
                json!([owner("nobody", gone), owner("alive", &alive_uid)]),
            ),
        )
        .await
        .unwrap();
    // An owner of a kind nobody serves cannot be judged: kept, like the real collector.
    secrets
        .create(
            &PostParams::default(),
            &secret("unknown-kind", json!([{"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": gone}])),
        )
        .await
        .unwrap();
    for name in ["dangling", "stale-uid"] {
        eventually(5, name, || async {
            secrets.get_opt(name).await.unwrap().is_none().then_some(())
        })
        .await;
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
    sb.shutdown().await;
}

#[tokio::test]
async fn a_paused_garbage_collector_acts_once_resumed() {
    let mut settings = SettingsFile::default();
    settings.gc.paused = true;
    let sb = start(ACME, settings).await;
    let secrets: Api<Secret> = Api::namespaced(client(&sb, None).await, NS);
    let s: Secret = serde_json::from_value(json!({"metadata": {"name": "later", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "nobody", "uid": "0b7c1d2e-0000-4000-8000-00000000dead"}]}})).unwrap();
    secrets.create(&PostParams::default(), &s).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(secrets.get_opt("later").await.unwrap().is_some());
    sb.gc.write().unwrap().paused = false;
    eventually(5, "collected once resumed", || async {
        secrets
            .get_opt("later")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    sb.shutdown().await;
}

/// The `Status` of a refused request: code, reason, message and its causes as
/// (reason, message, field).
fn refusal(e: &kube::Error) -> (u16, String, String, Vec<(String, String, String)>) {
    let kube::Error::Api(s) = e else {
        panic!("not an API error: {e:?}")
    };
    let causes = s
        .details
        .as_ref()
        .map(|d| {
            d.causes
                .iter()
                .map(|c| (c.reason.clone(), c.message.clone(), c.field.clone()))
                .collect()
        })
        .unwrap_or_default();
    (s.code, s.reason.clone(), s.message.clone(), causes)
}

fn cm_with(name: &str, data: &[(&str, String)]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "data": data.iter().map(|(k, v)| (k.to_string(), v.clone())).collect::<BTreeMap<_, _>>()
    }))
    .unwrap()
}

#[tokio::test]
async fn object_sizes_are_bounded_like_a_real_server() {
    use k8s_openapi::api::coordination::v1::Lease;
    let sb = start(ACME, SettingsFile::default()).await;
    let c = client(&sb, None).await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), NS);
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
    let secrets: Api<Secret> = Api::namespaced(c.clone(), NS);
    let big = base64::engine::general_purpose::STANDARD.encode(vec![7u8; 1024 * 1024 + 1]);
    let secret: Secret =
        serde_json::from_value(json!({"metadata": {"name": "big"}, "data": {"k": big}})).unwrap();
    let err = secrets.create(&pp, &secret).await.unwrap_err();
    assert_eq!(
        refusal(&err).2,
        "Secret \"big\" is invalid: data: Too long: may not be more than 1048576 bytes"
    );

    // An object etcd will not store (over 1.5 MiB): the apiserver passes etcd's error on.
    let leases: Api<Lease> = Api::namespaced(c.clone(), NS);
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
    sb.shutdown().await;
}

#[tokio::test]
async fn labels_and_annotations_follow_apimachinery_and_nothing_stricter() {
    let sb = start(ACME, SettingsFile::default()).await;
    let cms: Api<ConfigMap> = Api::namespaced(client(&sb, None).await, NS);
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
                "ConfigMap \"long\" is invalid: metadata.labels: Invalid value: \"{v64}\": must be no more than 63 characters"
            ),
            vec![(
                "FieldValueInvalid".into(),
                format!("Invalid value: \"{v64}\": must be no more than 63 characters"),
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
        "ConfigMap \"slashes\" is invalid: metadata.labels: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
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
    sb.shutdown().await;
}

#[tokio::test]
async fn names_are_dns_subdomains_for_every_kind_but_namespaces() {
    use k8s_openapi::api::coordination::v1::Lease;
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
    let sb = start(ACME, SettingsFile::default()).await;
    let c = client(&sb, None).await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), NS);
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
    let leases: Api<Lease> = Api::namespaced(c.clone(), NS);
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
    let peers: Api<DynamicObject> = Api::namespaced_with(c.clone(), NS, &ar);
    let peer: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "vpn.bnerd.net/v1alpha1", "kind": "VPNPeer",
        "metadata": {"name": "acme_branch"}, "spec": {}
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
        "Namespace \"tenant.acme\" is invalid: metadata.name: Invalid value: \"tenant.acme\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    );
    sb.shutdown().await;
}

#[tokio::test]
async fn a_terminating_namespace_refuses_creates_but_not_updates_or_deletes() {
    let sb = start(ACME, SettingsFile::default()).await;
    let c = client(&sb, None).await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), NS);
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
    nss.delete(NS, &DeleteParams::default()).await.unwrap();

    let expected = (
        403,
        "Forbidden".to_string(),
        "configmaps \"late\" is forbidden: unable to create new content in namespace tenant-acme because it is being terminated".to_string(),
        vec![(
            "NamespaceTerminating".to_string(),
            "namespace tenant-acme is being terminated".to_string(),
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
    cms.patch(
        "second",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually(5, "second gone", || async {
        cms.get_opt("second").await.unwrap().is_none().then_some(())
    })
    .await;
    sb.shutdown().await;
}

#[tokio::test]
async fn server_side_apply_that_creates_needs_create_permission() {
    let settings = SettingsFile {
        users: vec![
            User::with_rules(
                "patcher",
                vec![Rule::new(&["get", "patch"], &["configmaps"])],
            ),
            User::with_rules(
                "creator",
                vec![Rule::new(&["get", "patch", "create"], &["configmaps"])],
            ),
        ],
        ..Default::default()
    };
    let sb = start(ACME, settings).await;
    let admin: Api<ConfigMap> = Api::namespaced(client(&sb, None).await, NS);
    admin
        .create(&PostParams::default(), &cm("exists", &[]))
        .await
        .unwrap();
    let doc = |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"applied": "yes"}});
    let patcher: Api<ConfigMap> =
        Api::namespaced(client(&sb, Some("vpnmig-sandbox-patcher")).await, NS);
    let err = patcher
        .patch(
            "new",
            &PatchParams::apply("vpnmig"),
            &Patch::Apply(doc("new")),
        )
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&err),
        (
            403,
            "Forbidden".into(),
            "configmaps \"new\" is forbidden: ".into(),
            vec![]
        )
    );
    assert_eq!(code(&admin.get("new").await.unwrap_err()), 404);
    // Patching what exists needs only patch.
    let applied = patcher
        .patch(
            "exists",
            &PatchParams::apply("vpnmig"),
            &Patch::Apply(doc("exists")),
        )
        .await
        .unwrap();
    assert_eq!(applied.data.unwrap()["applied"], "yes");
    let creator: Api<ConfigMap> =
        Api::namespaced(client(&sb, Some("vpnmig-sandbox-creator")).await, NS);
    creator
        .patch(
            "new",
            &PatchParams::apply("vpnmig"),
            &Patch::Apply(doc("new")),
        )
        .await
        .unwrap();
    sb.shutdown().await;
}

#[tokio::test]
async fn admission_webhooks_refuse_dry_runs_and_deny_like_the_real_server() {
    let settings: SettingsFile = serde_saphyr::from_str(
        r#"
api:
  webhooks:
  - {name: cm-policy.example.net, resources: [configmaps], verbs: [create, patch], sideEffects: Unknown}
  - {name: side.example.net, resources: [secrets], verbs: ["*"], sideEffects: Some}
"#,
    )
    .unwrap();
    let sb = start(ACME, settings).await;
    let c = client(&sb, None).await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), NS);
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    // A dry run that matches a webhook with sideEffects Unknown or Some: 400, named.
    let e = cms.create(&dry, &cm("w", &[])).await.unwrap_err();
    assert_eq!(
        refusal(&e),
        (
            400,
            "BadRequest".into(),
            "admission webhook \"cm-policy.example.net\" does not support dry run".into(),
            vec![]
        )
    );
    let secrets: Api<Secret> = Api::namespaced(c.clone(), NS);
    let s: Secret = serde_json::from_value(json!({"metadata": {"name": "s"}})).unwrap();
    let e = secrets.create(&dry, &s).await.unwrap_err();
    assert_eq!(
        refusal(&e).2,
        "admission webhook \"side.example.net\" does not support dry run"
    );
    // The real request is admitted; a verb the webhook does not name is not matched.
    cms.create(&PostParams::default(), &cm("w", &[]))
        .await
        .unwrap();
    let dry_apply = PatchParams::apply("t").dry_run();
    let e = cms
        .patch("w", &dry_apply, &Patch::Apply(cm("w", &[("a", "b")])))
        .await
        .unwrap_err();
    assert_eq!(code(&e), 400);
    cms.delete(
        "w",
        &DeleteParams {
            dry_run: true,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    // A dry-run delete of a secret matches `*` and is refused (the option is in the body).
    secrets.create(&PostParams::default(), &s).await.unwrap();
    let e = secrets
        .delete(
            "s",
            &DeleteParams {
                dry_run: true,
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(code(&e), 400);

    // At run time, through the same lock as the fault rules: one webhook that can
    // dry-run and denies (called for dry runs too), one that denies without a message.
    {
        let mut f = sb.api_faults.write().unwrap();
        f.webhooks = vec![
            Webhook {
                name: "freeze.example.net".into(),
                resources: vec!["configmaps".into()],
                verbs: vec!["patch".into()],
                side_effects: SideEffects::NoneOnDryRun,
                deny: true,
                message: Some("configmaps are frozen".into()),
            },
            Webhook {
                name: "quiet.example.net".into(),
                resources: vec!["configmaps".into()],
                verbs: vec!["delete".into()],
                side_effects: SideEffects::None,
                deny: true,
                message: None,
            },
        ];
    }
    for pp in [PatchParams::apply("t").dry_run(), PatchParams::apply("t")] {
        let e = cms
            .patch("w", &pp, &Patch::Apply(cm("w", &[("a", "b")])))
            .await
            .unwrap_err();
        assert_eq!(
            refusal(&e),
            (
                403,
                "Forbidden".into(),
                "admission webhook \"freeze.example.net\" denied the request: configmaps are frozen"
                    .into(),
                vec![]
            )
        );
    }
    assert_eq!(
        cms.get("w").await.unwrap().metadata.labels,
        Some(BTreeMap::new()),
        "the denied apply changed nothing"
    );
    let e = cms.delete("w", &DeleteParams::default()).await.unwrap_err();
    assert_eq!(
        refusal(&e).2,
        "admission webhook \"quiet.example.net\" denied the request without explanation"
    );
    // Creates are not matched by a webhook for patch and delete.
    cms.create(&PostParams::default(), &cm("x", &[]))
        .await
        .unwrap();
    sb.api_faults.write().unwrap().webhooks.clear();
    cms.delete("w", &DeleteParams::default()).await.unwrap();
    sb.shutdown().await;
}

#[test]
fn webhooks_with_a_verb_that_is_no_write_are_refused() {
    let settings: Result<SettingsFile, _> =
        serde_saphyr::from_str("api: {webhooks: [{name: w, resources: ['*'], verbs: [get]}]}");
    let err = settings.unwrap().api.validate().unwrap_err();
    assert_eq!(
        err,
        "api.webhooks[0].verbs: `get` is not a write verb (*, create, update, patch, delete)"
    );
}

/// Issue 9 item 12: the simulated operator's writes (status, finalizer, children) carry
/// its field manager, as a real controller's do, so a test sees who wrote what.
#[tokio::test]
async fn the_operator_writes_with_its_own_field_manager() {
    let sb = start(ACME, SettingsFile::default()).await;
    let rt = sb
        .store
        .resource("ipsec.bnerd.net", "v1alpha1", "ipsecgateways")
        .unwrap();
    let mut gw = serde_json::Value::Null;
    for _ in 0..200 {
        gw = sb.store.get(&rt, NS, "acme").unwrap();
        if !entries_of(&gw, vpnmig_sandbox::operator::FIELD_MANAGER).is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let fields: Vec<serde_json::Value> = entries_of(&gw, "gateway-operator")
        .into_iter()
        .map(|(op, f)| {
            assert_eq!(op, "Update");
            f
        })
        .collect();
    assert!(
        fields.iter().any(|f| f.get("f:status").is_some()),
        "the status is the operator's: {fields:?}"
    );
    assert!(
        fields
            .iter()
            .any(|f| f.pointer("/f:metadata/f:finalizers").is_some()),
        "the finalizer is the operator's: {fields:?}"
    );
    sb.shutdown().await;
}
