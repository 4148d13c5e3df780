//! The fault proxy in front of the real kube-apiserver (`vpnmig_sandbox::proxy`, issue 23
//! item 4): it keeps each client's identity (RBAC decides as without it), forwards
//! upgrades (pod exec through kwok) and watches, and applies the emulator's API fault
//! knobs, switched at run time through the same handle.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

mod common;

use common::real::start;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, WatchParams};
use vpnmig_sandbox::api::faults::{ApiFaults, ErrorRule};
use vpnmig_sandbox::controlplane::ControlPlane;
use vpnmig_sandbox::proxy::Proxy;

fn rule(verb: &str, resource: &str, code: u16, times: Option<u32>) -> ErrorRule {
    ErrorRule {
        verbs: vec![verb.into()],
        resources: vec![resource.into()],
        code,
        times,
        retry_after_seconds: None,
    }
}

async fn client(kubeconfig: &str, context: &str) -> kube::Client {
    let kc = kube::config::Kubeconfig::from_yaml(kubeconfig).unwrap();
    let options = kube::config::KubeConfigOptions {
        context: Some(context.into()),
        ..Default::default()
    };
    let mut config = kube::Config::from_custom_kubeconfig(kc, &options)
        .await
        .unwrap();
    // kube-rs retries a 429 on its own by default: the test reads the answer itself.
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}

/// `kubectl ARGS` with `kubeconfig` (a file in `dir`): (success, stdout, stderr).
fn kubectl(cp: &ControlPlane, dir: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(cp.kubectl_path())
        .arg(format!("--kubeconfig={}", dir.join("kubeconfig").display()))
        .arg("--request-timeout=20s")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_fault_proxy_keeps_identities_forwards_exec_and_watches_and_applies_the_knobs() {
    // On this thread: the components die with the thread that started them.
    let Some(cp) = start() else { return };
    cp.apply(
        r#"apiVersion: v1
kind: Namespace
metadata: {name: tenant-acme}
---
apiVersion: v1
kind: Pod
metadata: {name: acme-0, namespace: tenant-acme}
spec:
  nodeName: vpnmig-node
  containers:
  - {name: strongswan, image: strongswan.invalid/charon:5.9}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ro}
rules:
- {apiGroups: [""], resources: [configmaps, namespaces], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ro}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ro}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: ro}
"#,
    )
    .unwrap();
    std::fs::write(
        cp.exec_dir().join("swanctl"),
        "#!/bin/sh\necho \"swanctl answered: $*\"\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            cp.exec_dir().join("swanctl"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
    cp.kubectl(&[
        "wait",
        "-n",
        "tenant-acme",
        "pod/acme-0",
        "--for=condition=Ready",
        "--timeout=30s",
    ])
    .unwrap();
    let ro = cp.client("ro", &[]).unwrap();
    let stranger = cp.client("stranger", &["system:masters"]).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(RwLock::new(ApiFaults::default()));
    let proxy = rt
        .block_on(Proxy::start(
            &cp.url,
            &cp.ca_pem,
            &[&cp.admin, &ro],
            faults.clone(),
        ))
        .unwrap();
    let kubeconfig = cp.kubeconfig_at(
        &proxy.url(),
        proxy.ca_pem(),
        &[&cp.admin, &ro, &stranger],
        Some("tenant-acme"),
    );
    std::fs::write(dir.path().join("kubeconfig"), &kubeconfig).unwrap();
    let k = |args: &[&str]| kubectl(&cp, dir.path(), args);

    // Identities: the administrator, and a user whose Role only reads, refused by the real
    // RBAC in its own name; a certificate the proxy holds no key for is not forwarded.
    let (ok, out, err) = k(&["get", "ns", "tenant-acme", "-o", "name"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "namespace/tenant-acme");
    let (ok, _, err) = k(&[
        "--context",
        "vpnmig-controlplane-ro",
        "create",
        "configmap",
        "x",
        "--from-literal=a=b",
    ]);
    assert!(!ok);
    assert!(
        err.contains("User \"ro\" cannot create resource \"configmaps\""),
        "{err}"
    );
    let (ok, _, err) = k(&["--context", "vpnmig-controlplane-ro", "get", "configmaps"]);
    assert!(ok, "{err}");
    let (ok, _, err) = k(&["--context", "vpnmig-controlplane-stranger", "get", "ns"]);
    assert!(!ok);
    assert!(
        err.contains("not one of the users it was started for"),
        "{err}"
    );

    // Pod exec: the upgraded connection is forwarded both ways.
    let (ok, out, err) = k(&[
        "exec",
        "acme-0",
        "-c",
        "strongswan",
        "--",
        "swanctl",
        "--list-sas",
    ]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "swanctl answered: --list-sas");

    // Errors by verb and resource, switched at run time. A refused exec (kubectl tries a
    // websocket, then falls back to SPDY: each is `create pods/exec`).
    faults.write().unwrap().errors = vec![rule("create", "pods/exec", 503, None)];
    let (ok, _, err) = k(&["exec", "acme-0", "-c", "strongswan", "--", "swanctl"]);
    assert!(!ok);
    assert!(err.contains("unable to handle the request"), "{err}");
    // Counted down: once, then spent.
    faults.write().unwrap().errors = vec![rule("get", "namespaces", 500, Some(1))];
    let (ok, _, err) = k(&["get", "ns", "tenant-acme"]);
    assert!(!ok);
    assert!(err.contains("injected fault"), "{err}");
    assert!(k(&["get", "ns", "tenant-acme"]).0, "the rule is spent");
    assert!(k(&["get", "configmaps"]).0, "list is not get");
    assert!(
        faults
            .read()
            .unwrap()
            .errors
            .iter()
            .all(|e| e.times == Some(0)),
        "{:?}",
        faults.read().unwrap().errors
    );
    faults.write().unwrap().errors = vec![rule("list", "configmaps", 503, None)];
    let (ok, _, err) = k(&["get", "configmaps"]);
    assert!(!ok, "{err}");
    faults.write().unwrap().errors.clear();
    assert!(k(&["get", "configmaps"]).0);

    rt.block_on(async {
        let admin = client(&kubeconfig, "vpnmig-controlplane").await;
        // A 429 with Retry-After, as the emulator answers it.
        faults.write().unwrap().errors = vec![ErrorRule {
            retry_after_seconds: Some(7),
            ..rule("get", "configmaps", 429, Some(1))
        }];
        let req =
            axum::http::Request::get("/api/v1/namespaces/tenant-acme/configmaps/kube-root-ca.crt")
                .body(Vec::new())
                .unwrap();
        let e = admin.request_text(req).await.expect_err("the injected 429");
        assert!(
            matches!(&e, kube::Error::Api(s) if s.code == 429 && s.reason == "TooManyRequests"),
            "{e:?}"
        );
        faults.write().unwrap().errors.clear();

        // A watch is ended that long after it began (its own timeout is 60 s).
        faults.write().unwrap().drop_watches_after_ms = Some(300);
        let cms: Api<ConfigMap> = Api::namespaced(admin.clone(), "tenant-acme");
        let started = Instant::now();
        let stream = cms
            .watch(&WatchParams::default().timeout(60), "0")
            .await
            .unwrap();
        let events = tokio::time::timeout(Duration::from_secs(20), stream.count())
            .await
            .expect("the dropped watch ends");
        eprintln!(
            "a watch dropped after 300 ms ended after {:?} with {events} event(s)",
            started.elapsed()
        );
        assert!(events >= 1, "the initial events came through");
        faults.write().unwrap().drop_watches_after_ms = None;

        // Latency: figures, not an assertion.
        let direct = {
            let cfg = kube::Config::from_custom_kubeconfig(
                kube::config::Kubeconfig::from_yaml(&cp.kubeconfig(&[&cp.admin], None)).unwrap(),
                &Default::default(),
            )
            .await
            .unwrap();
            kube::Client::try_from(cfg).unwrap()
        };
        // Alternating rounds, so neither side has the warmer server.
        for round in 0..3 {
            for (name, c) in [("direct", &direct), ("through the proxy", &admin)] {
                let ns: Api<Namespace> = Api::all(c.clone());
                ns.get("tenant-acme").await.unwrap();
                let n = 200;
                let t = Instant::now();
                for _ in 0..n {
                    ns.get("tenant-acme").await.unwrap();
                }
                eprintln!("round {round}: {n} GETs {name}: {:?} each", t.elapsed() / n);
            }
        }
        faults.write().unwrap().latency_ms = 50;
        let ns: Api<Namespace> = Api::all(admin.clone());
        let t = Instant::now();
        ns.get("tenant-acme").await.unwrap();
        let slow = t.elapsed();
        eprintln!("a GET with latency 50 ms: {slow:?}");
        assert!(slow >= Duration::from_millis(50), "{slow:?}");
    });
    drop(proxy);
}
