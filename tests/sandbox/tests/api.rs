//! API fidelity, driven with kube-rs: discovery, status subresources, auth and RBAC, fault
//! knobs, exec, malformed requests, server-side apply's create check, admission webhooks,
//! the operator's field manager. Each row runs on the emulator and on the real control
//! plane (`common::bed`); a row that needs what only the emulator has (its collector's
//! pace, its admission webhooks) says so.

mod common;

use std::collections::BTreeMap;

use common::bed::{self, Backend, Bed, IPSECGATEWAY, Row, Scenario};
use common::{ACME, cm, code, entries_of, eventually, refusal, within};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::api::{
    Api, AttachParams, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams,
};
use kube::discovery::Discovery;
use serde_json::json;
use vpnmig::core::model::IPsecGateway;
use vpnmig_sandbox::SettingsFile;
use vpnmig_sandbox::api::auth::{Rule, User};
use vpnmig_sandbox::api::faults::{ErrorRule, SideEffects, Webhook};

fn acme() -> Scenario {
    Scenario {
        yaml: ACME,
        settings: SettingsFile::default(),
    }
}

async fn discovery_serves_the_operator_kinds(b: &Bed) {
    let d = within(10, "discovery", Discovery::new(b.client.clone()).run())
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
}

/// A Deployment nobody's operator reconciles. On the real control plane the deployment
/// controller writes its status (observedGeneration, replicas, conditions) whenever the
/// Deployment changes, so the row writes a status field that controller keeps as it is:
/// `collisionCount`.
async fn status_is_a_subresource_and_spec_changes_bump_generation(b: &Bed) {
    let api: Api<Deployment> = Api::namespaced(b.client.clone(), &b.ns);
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
            &Patch::Merge(json!({"status": {"collisionCount": 99}})),
        )
        .await
        .unwrap();
    assert_eq!(after_status.status.unwrap().collision_count, Some(99));
    assert_eq!(after_status.metadata.generation, Some(gen0));
    // Status sent to the main resource is ignored; a spec change bumps the generation.
    let main = api
        .patch(
            "plain",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"collisionCount": 1}, "spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(main.status.unwrap().collision_count, Some(99));
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
}

fn acme_with_a_viewer() -> Scenario {
    Scenario {
        yaml: ACME,
        settings: SettingsFile {
            users: vec![User::with_rules(
                "viewer",
                vec![Rule::new(&["get", "list"], &["ipsecgateways"])],
            )],
            ..Default::default()
        },
    }
}

async fn credentials_are_authenticated_and_rules_enforced(b: &Bed) {
    let viewer: Api<IPsecGateway> =
        Api::namespaced(b.client_for("vpnmig-sandbox-viewer").await, &b.ns);
    assert!(viewer.get("acme").await.is_ok());
    let err = viewer
        .delete("acme", &DeleteParams::default())
        .await
        .unwrap_err();
    let kube::Error::Api(s) = &err else { panic!() };
    assert_eq!(s.code, 403);
    assert_eq!(
        s.message,
        format!(
            "ipsecgateways.ipsec.bnerd.net \"acme\" is forbidden: User \"viewer\" cannot delete resource \"ipsecgateways\" in API group \"ipsec.bnerd.net\" in the namespace \"{}\"",
            b.ns
        )
    );
    let secrets: Api<Secret> = Api::namespaced(b.client_for("vpnmig-sandbox-viewer").await, &b.ns);
    assert_eq!(code(&secrets.get("acme-psk").await.unwrap_err()), 403);

    // Credentials the server does not know: a bearer token it never issued, in place of
    // each user's own (a token on the emulator, a client certificate on the real server).
    let mut kc: serde_json::Value = serde_saphyr::from_str(&b.kubeconfig_yaml()).unwrap();
    for u in kc["users"].as_array_mut().unwrap() {
        u["user"] = json!({"token": "wrong-token"});
    }
    let kc = serde_json::to_string(&kc).unwrap();
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(&kc).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    let anon: Api<IPsecGateway> = Api::namespaced(kube::Client::try_from(config).unwrap(), &b.ns);
    assert_eq!(code(&anon.get("acme").await.unwrap_err()), 401);
}

async fn fault_knobs_fail_requests_then_recover(b: &Bed) {
    let rule = |verb: &str, code: u16| ErrorRule {
        verbs: vec![verb.into()],
        resources: vec!["ipsecgateways".into()],
        code,
        times: Some(1),
        retry_after_seconds: Some(1),
    };
    b.api_faults().write().unwrap().errors.extend([
        rule("list", 500),
        rule("get", 429),
        rule("patch", 503),
    ]);
    let api: Api<IPsecGateway> = Api::namespaced(b.client.clone(), &b.ns);
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
        b.api_faults()
            .read()
            .unwrap()
            .errors
            .iter()
            .all(|r| r.times == Some(0)),
        "every fault fired"
    );

    // Dropped watches end on their own.
    b.api_faults().write().unwrap().drop_watches_after_ms = Some(200);
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
}

/// A pod without the operator's strongSwan: the command it is asked for is not there.
async fn exec_reports_exit_status_and_output(b: &Bed) {
    let pods: Api<Pod> = Api::namespaced(b.client.clone(), &b.ns);
    // On kwok's node (the real control plane has no scheduler; the emulator ignores it).
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "shell"}, "spec": {"nodeName": vpnmig_sandbox::controlplane::NODE_NAME, "containers": [{"name": "strongswan", "image": "strongswan"}]}})).unwrap();
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
    let exit = status
        .details
        .clone()
        .and_then(|d| d.causes)
        .and_then(|c| {
            c.into_iter()
                .find(|c| c.reason.as_deref() == Some("ExitCode"))
        })
        .and_then(|c| c.message);
    match b.backend {
        // As a kubelet answers: the command's exit status as a NonZeroExitCode cause.
        Backend::Emulated => {
            assert_eq!(status.reason.as_deref(), Some("NonZeroExitCode"));
            assert_eq!(exit.as_deref(), Some("127"));
            assert_eq!(stderr, "no-such-command: command not found\n");
        }
        // kwok runs the command on the host: one that is not on its PATH does not start, and
        // the stream ends with kwok's error (docs/sandbox.md, "Where it differs from a
        // cluster with kubelets").
        Backend::Real => {
            assert_eq!(
                (status.status.as_deref(), exit),
                (Some("Failure"), None),
                "{status:?}"
            );
            assert!(
                status
                    .message
                    .as_deref()
                    .unwrap_or_default()
                    .contains("exec: \"no-such-command\": executable file not found in $PATH"),
                "{status:?}"
            );
            assert_eq!(stderr, "");
        }
    }
    within(10, "join", p.join()).await.unwrap();
}

async fn scenario_objects_keep_their_status_and_crds_are_installed(b: &Bed) {
    let api: Api<IPsecGateway> = Api::namespaced(b.client.clone(), &b.ns);
    let gw = eventually(5, "gateway", || async {
        api.get_opt("acme").await.unwrap()
    })
    .await;
    assert_eq!(
        gw.status.unwrap().service_cidr.as_deref(),
        Some("10.250.3.0/24")
    );
    // The kubeconfig's namespace is the scenario's first (renamed per row on the real
    // control plane).
    let kc: serde_json::Value = serde_saphyr::from_str(&b.kubeconfig_yaml()).unwrap();
    assert_eq!(kc["contexts"][0]["context"]["namespace"], b.ns.as_str());
    match b.backend {
        Backend::Emulated => assert_eq!(b.ns, "tenant-acme"),
        Backend::Real => assert!(b.ns.starts_with("tenant-acme-"), "{}", b.ns),
    }
}

async fn secrets_fold_string_data_into_data(b: &Bed) {
    let secrets: Api<Secret> = Api::namespaced(b.client.clone(), &b.ns);
    let s = secrets.get("acme-psk").await.unwrap();
    let data = s.data.unwrap();
    assert_eq!(data["psk"].0, b"rehearsal-only-not-a-real-key");
}

async fn malformed_bodies_and_selectors_are_refused_not_crashed(b: &Bed) {
    let gws: Api<IPsecGateway> = Api::namespaced(b.client.clone(), &b.ns);
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
    let cms: Api<ConfigMap> = Api::namespaced(b.client.clone(), &b.ns);
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
}

fn acme_with_a_paused_collector() -> Scenario {
    let mut settings = SettingsFile::default();
    settings.gc.paused = true;
    Scenario {
        yaml: ACME,
        settings,
    }
}

async fn a_paused_garbage_collector_acts_once_resumed(b: &Bed) {
    let secrets: Api<Secret> = Api::namespaced(b.client.clone(), &b.ns);
    let s: Secret = serde_json::from_value(json!({"metadata": {"name": "later", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "nobody", "uid": "0b7c1d2e-0000-4000-8000-00000000dead"}]}})).unwrap();
    secrets.create(&PostParams::default(), &s).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(secrets.get_opt("later").await.unwrap().is_some());
    b.emulator().gc.write().unwrap().paused = false;
    eventually(5, "collected once resumed", || async {
        secrets
            .get_opt("later")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
}

fn acme_with_a_patcher_and_a_creator() -> Scenario {
    Scenario {
        yaml: ACME,
        settings: SettingsFile {
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
        },
    }
}

async fn server_side_apply_that_creates_needs_create_permission(b: &Bed) {
    let admin: Api<ConfigMap> = Api::namespaced(b.client.clone(), &b.ns);
    admin
        .create(&PostParams::default(), &cm("exists", &[]))
        .await
        .unwrap();
    let doc = |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"applied": "yes"}});
    let patcher: Api<ConfigMap> =
        Api::namespaced(b.client_for("vpnmig-sandbox-patcher").await, &b.ns);
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
            format!(
                "configmaps \"new\" is forbidden: User \"patcher\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"{}\"",
                b.ns
            ),
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
        Api::namespaced(b.client_for("vpnmig-sandbox-creator").await, &b.ns);
    creator
        .patch(
            "new",
            &PatchParams::apply("vpnmig"),
            &Patch::Apply(doc("new")),
        )
        .await
        .unwrap();
}

fn acme_with_webhooks() -> Scenario {
    Scenario {
        yaml: ACME,
        settings: serde_saphyr::from_str(
            r#"
api:
  webhooks:
  - {name: cm-policy.example.net, resources: [configmaps], verbs: [create, patch], sideEffects: Unknown}
  - {name: side.example.net, resources: [secrets], verbs: ["*"], sideEffects: Some}
"#,
        )
        .unwrap(),
    }
}

async fn admission_webhooks_refuse_dry_runs_and_deny_like_the_real_server(b: &Bed) {
    let cms: Api<ConfigMap> = Api::namespaced(b.client.clone(), &b.ns);
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
    let secrets: Api<Secret> = Api::namespaced(b.client.clone(), &b.ns);
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
        let mut f = b.api_faults().write().unwrap();
        f.webhooks = vec![
            Webhook {
                name: "freeze.example.net".into(),
                resources: vec!["configmaps".into()],
                verbs: vec!["patch".into()],
                side_effects: SideEffects::NoneOnDryRun,
                deny: true,
                message: Some("configmaps are frozen".into()),
                annotations: Vec::new(),
            },
            Webhook {
                name: "quiet.example.net".into(),
                resources: vec!["configmaps".into()],
                verbs: vec!["delete".into()],
                side_effects: SideEffects::None,
                deny: true,
                message: None,
                annotations: Vec::new(),
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
    b.api_faults().write().unwrap().webhooks.clear();
    cms.delete("w", &DeleteParams::default()).await.unwrap();
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
async fn the_operator_writes_with_its_own_field_manager(b: &Bed) {
    let gw = eventually(10, "the operator's managedFields entries", || async {
        b.get(IPSECGATEWAY, "acme").await.filter(|gw| {
            !entries_of(gw, vpnmig_sandbox::operator::FIELD_MANAGER).is_empty()
                && gw["metadata"]["finalizers"].is_array()
        })
    })
    .await;
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
}

const ROWS: &[Row] = &[
    Row {
        name: "discovery serves the operator kinds",
        scenario: acme,
        only: None,
        steps: |b| Box::pin(discovery_serves_the_operator_kinds(b)),
    },
    Row {
        name: "status is a subresource and spec changes bump generation",
        scenario: acme,
        only: None,
        steps: |b| Box::pin(status_is_a_subresource_and_spec_changes_bump_generation(b)),
    },
    Row {
        name: "credentials are authenticated and rules enforced",
        scenario: acme_with_a_viewer,
        only: None,
        steps: |b| Box::pin(credentials_are_authenticated_and_rules_enforced(b)),
    },
    Row {
        name: "fault knobs fail requests then recover",
        scenario: acme,
        only: None,
        steps: |b| Box::pin(fault_knobs_fail_requests_then_recover(b)),
    },
    Row {
        name: "exec reports exit status and output",
        scenario: acme,
        only: None,
        steps: |b| Box::pin(exec_reports_exit_status_and_output(b)),
    },
    Row {
        name: "scenario objects keep their status and crds are installed",
        scenario: acme,
        only: None,
        steps: |b| Box::pin(scenario_objects_keep_their_status_and_crds_are_installed(b)),
    },
    Row {
        name: "secrets fold stringData into data",
        scenario: acme,
        only: None,
        steps: |b| Box::pin(secrets_fold_string_data_into_data(b)),
    },
    Row {
        name: "malformed bodies and selectors are refused, not crashed",
        scenario: acme,
        only: None,
        steps: |b| Box::pin(malformed_bodies_and_selectors_are_refused_not_crashed(b)),
    },
    Row {
        name: "a paused garbage collector acts once resumed",
        scenario: acme_with_a_paused_collector,
        only: Some((
            Backend::Emulated,
            "the collector's pace is the emulator's knob (settings.gc); kube-controller-manager's collector cannot be paused",
        )),
        steps: |b| Box::pin(a_paused_garbage_collector_acts_once_resumed(b)),
    },
    Row {
        name: "server-side apply that creates needs create permission",
        scenario: acme_with_a_patcher_and_a_creator,
        only: None,
        steps: |b| Box::pin(server_side_apply_that_creates_needs_create_permission(b)),
    },
    Row {
        name: "admission webhooks refuse dry runs and deny like the real server",
        scenario: acme_with_webhooks,
        only: Some((
            Backend::Emulated,
            "admission webhooks are the emulator's knob (settings.api.webhooks); the real control plane has no webhook server to call",
        )),
        steps: |b| Box::pin(admission_webhooks_refuse_dry_runs_and_deny_like_the_real_server(b)),
    },
    Row {
        name: "the operator writes with its own field manager",
        scenario: acme,
        only: None,
        steps: |b| Box::pin(the_operator_writes_with_its_own_field_manager(b)),
    },
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_row_on_the_emulator() {
    bed::emulated(ROWS).await;
}

#[test]
fn every_row_on_the_real_control_plane() {
    bed::real(ROWS);
}
