//! The real control plane (etcd, kube-apiserver, kube-controller-manager and kwok, built by
//! tests/controlplane/build.sh): it starts, the project's CRDs really validate, the runbook's
//! kubectl commands work, RBAC refuses a restricted user, and pod exec reaches a local
//! command through kwok. Each behaviour the emulator also claims is a row here.
//!
//! Where the binaries are not built, the test says so and does not run, unless
//! `VPNMIG_REQUIRE_CONTROLPLANE=1` (set by .ci/run), where that is a failure.

use std::path::Path;

mod common;

use common::real::{available, crds, start};
use vpnmig_sandbox::controlplane::ControlPlane;

const ACME: &str = include_str!("../../../fixtures/clusters/acme.yaml");

/// The status of the scenario's gateway is the operator's to write (through the status
/// subresource); a spec apply leaves it.
fn without_status(yaml: &str) -> String {
    yaml.split("\nstatus:").next().unwrap().to_string()
}

#[test]
fn the_real_control_plane_serves_the_projects_apis_as_a_cluster_does() {
    let Some(cp) = start() else { return };
    // The pinned version is the one served.
    let version = cp.kubectl(&["version", "-o", "json"]).unwrap();
    let v: serde_json::Value = serde_json::from_str(&version).unwrap();
    let pinned = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../controlplane/versions.env"
    ))
    .unwrap();
    let k8s = pinned
        .lines()
        .find_map(|l| l.strip_prefix("K8S_VERSION="))
        .unwrap();
    assert_eq!(v["serverVersion"]["gitVersion"], k8s, "{version}");

    crds(&cp);
    cp.apply(&without_status(ACME)).unwrap();
    assert_eq!(
        cp.kubectl(&[
            "get",
            "ipsecgateway",
            "acme",
            "-n",
            "tenant-acme",
            "-o",
            "jsonpath={.spec.endpoint.floatingIP}"
        ])
        .unwrap(),
        "198.51.100.23"
    );

    // (what is sent, what the real server answers): Ok, or an error holding the text.
    let gateway = |spec_patch: &str| {
        format!(
            "apiVersion: ipsec.bnerd.net/v1alpha1\nkind: IPsecGateway\nmetadata:\n  name: probe\n  namespace: tenant-acme\nspec:\n{spec_patch}"
        )
    };
    let big = "x".repeat(1024 * 1024 + 1);
    let rows: Vec<(&str, String, Result<(), &str>)> = vec![
        (
            "a gateway the schema accepts",
            gateway(
                "  endpoint: {floatingIP: 198.51.100.99}\n  auth: {pskSecretRef: {name: acme-psk, key: psk}}\n  ike: {version: 2, proposals: [aes256-sha256-modp2048]}\n  tunnels: []\n",
            ),
            Ok(()),
        ),
        (
            "a port of the wrong type",
            gateway(
                "  exposures:\n  - name: crm\n    target: {address: crm.svc, port: https}\n    protocol: TCP\n",
            ),
            Err("spec.exposures[0].target.port"),
        ),
        (
            "a label value kube-apiserver refuses",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: badlabel\n  namespace: tenant-acme\n  labels: {client: \"not a label!\"}\n".to_string(),
            Err("metadata.labels"),
        ),
        (
            "a ConfigMap over 1 MiB",
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  namespace: tenant-acme\ndata:\n  x: {big}\n"
            ),
            Err("1048576"),
        ),
    ];
    for (what, yaml, want) in rows {
        let got = cp.apply(&yaml);
        match (want, got) {
            (Ok(()), Ok(_)) => {}
            (Err(text), Err(e)) => assert!(e.contains(text), "{what}: {e}"),
            (want, got) => panic!("{what}: wanted {want:?}, got {got:?}"),
        }
    }

    // RBAC: a user with a client certificate and a Role that reads gateways only.
    cp.apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: gw-read, namespace: tenant-acme}\nrules:\n- apiGroups: [ipsec.bnerd.net]\n  resources: [ipsecgateways]\n  verbs: [get, list]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: gw-read, namespace: tenant-acme}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: gw-read}\nsubjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: User, name: ro}\n",
    )
    .unwrap();
    let ro = cp.client("ro", &[]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ro_kc = dir.path().join("ro.kubeconfig");
    std::fs::write(&ro_kc, cp.kubeconfig(&[&ro], Some("tenant-acme"))).unwrap();
    let as_ro = |args: &[&str]| {
        std::process::Command::new(cp.kubectl_path())
            .arg(format!("--kubeconfig={}", ro_kc.display()))
            .args(args)
            .output()
            .unwrap()
    };
    let get = as_ro(&["get", "ipsecgateway", "acme", "-o", "name"]);
    assert!(get.status.success(), "{get:?}");
    let delete = as_ro(&["delete", "ipsecgateway", "acme", "--dry-run=server"]);
    assert!(!delete.status.success());
    assert!(
        String::from_utf8_lossy(&delete.stderr)
            .contains("User \"ro\" cannot delete resource \"ipsecgateways\""),
        "{delete:?}"
    );
}

fn write_exec(dir: &Path, name: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn pod_exec_reaches_a_local_command_through_kwok() {
    let Some(cp) = start() else { return };
    cp.apply(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: tenant-acme}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: acme-0, namespace: tenant-acme, labels: {app: acme}}\nspec:\n  nodeName: vpnmig-node\n  containers:\n  - {name: strongswan, image: strongswan.invalid/charon:5.9}\n",
    )
    .unwrap();
    cp.kubectl(&[
        "wait",
        "-n",
        "tenant-acme",
        "pod/acme-0",
        "--for=condition=Ready",
        "--timeout=30s",
    ])
    .unwrap();
    write_exec(
        &cp.exec_dir(),
        "swanctl",
        "#!/bin/sh\necho \"swanctl answered: $*\"\n[ \"$1\" = --fail ] && { echo 'connecting to default URI failed' >&2; exit 3; }\nexit 0\n",
    );
    let swanctl = |arg: &str| {
        cp.kubectl(&[
            "exec",
            "-n",
            "tenant-acme",
            "acme-0",
            "-c",
            "strongswan",
            "--",
            "swanctl",
            arg,
        ])
    };
    let out = swanctl("--list-sas").unwrap();
    assert_eq!(out.trim(), "swanctl answered: --list-sas");
    // A command's stderr comes back; its exit code too, but not as a kubelet says it: kwok
    // answers a non-zero exit with an InternalError status ("exit status 3") where a
    // kubelet sends NonZeroExitCode ("command terminated with exit code 3"). Listed in
    // docs/sandbox.md; a reader of exec statuses must take both.
    let e = swanctl("--fail").unwrap_err();
    assert!(e.contains("connecting to default URI failed"), "{e}");
    assert!(e.contains("exit status 3"), "{e}");
}

#[test]
fn two_control_planes_run_at_once_on_their_own_ports() {
    let Some(first) = start() else { return };
    let second = ControlPlane::start().unwrap();
    assert_ne!(first.url, second.url);
    assert!(first.kubectl(&["get", "ns", "default"]).is_ok());
    assert!(second.kubectl(&["get", "ns", "default"]).is_ok());
}

/// `vpnmig-sandbox --control-plane real` loads the scenario through the API; a SIGKILL of
/// it takes every component with it, and the next start removes what it left on disk.
/// An export's ownerReferences name the owners' uids in the cluster it came from; the real
/// server gives the owners new ones. The loader points each reference at the owner's new
/// uid, else the real collector deletes the dependent: initech's PSK Secret, owned by its
/// gateway, was gone 40 s after the start (h-rows).
#[test]
fn a_loaded_scenario_keeps_its_ownerreferences_on_the_owners_new_uids() {
    if !available() {
        return;
    }
    const INITECH: &str = include_str!("../../../fixtures/clusters/initech-two-tunnels.yaml");
    // The fixture lists the IPsecGateway before the Secret it owns; an export may list the
    // dependent first: its ownerReference is put back once the owner exists (a dangling
    // uid would have the garbage collector delete it).
    let docs: Vec<&str> = INITECH.split("\n---\n").collect();
    assert_eq!(docs.len(), 3, "namespace, gateway, secret");
    let dependent_first = [docs[0], docs[2], docs[1]].join("\n---\n");
    for (what, scenario) in [
        ("owner first", INITECH),
        ("dependent first", &dependent_first),
    ] {
        let sb = Served::start(scenario, None);
        let ns = ["-n", "tenant-initech"];
        let gw = sb.json(&["get", "ipsecgateway", "initech", ns[0], ns[1]]);
        let secret = sb.json(&["get", "secret", "initech-psk", ns[0], ns[1]]);
        let refs = secret["metadata"]["ownerReferences"].as_array().unwrap();
        assert_eq!(refs.len(), 1, "{what}: {secret}");
        assert_eq!(
            (&refs[0]["kind"], &refs[0]["name"], &refs[0]["uid"]),
            (
                &serde_json::json!("IPsecGateway"),
                &serde_json::json!("initech"),
                &gw["metadata"]["uid"]
            ),
            "{what}: {secret}"
        );
    }
}

/// `vpnmig-sandbox --control-plane real` with the settings' `api:` faults: the kubeconfig
/// points at the fault proxy in front of kube-apiserver, which refuses what a rule names
/// and forwards the rest; a settings file with a webhook is still refused there.
#[test]
fn the_sandbox_binary_serves_the_api_faults_of_its_settings_through_the_fault_proxy() {
    if !available() {
        return;
    }
    let sb = Served::start(
        ACME,
        Some("api:\n  errors:\n  - {verbs: [list], resources: [vpnpeers], code: 503}\n"),
    );
    assert!(sb.banner.contains("fault proxy"), "{}", sb.banner);
    let kc: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(&sb.kubeconfig).unwrap()).unwrap();
    let server = kc["clusters"][0]["cluster"]["server"].as_str().unwrap();
    assert!(
        sb.banner.contains(&format!("the fault proxy {server} "))
            && !sb.banner.contains(&format!("serving {server} ")),
        "the kubeconfig names the proxy, not kube-apiserver: {server}\n{}",
        sb.banner
    );
    let peers = sb.kubectl(&["get", "vpnpeers", "-n", "tenant-acme"]);
    assert!(!peers.status.success(), "{peers:?}");
    assert!(
        String::from_utf8_lossy(&peers.stderr)
            .contains("the server is currently unable to handle the request"),
        "{peers:?}"
    );
    let gw = sb.kubectl(&["get", "ipsecgateway/acme", "-n=tenant-acme", "-o=name"]);
    assert!(gw.status.success(), "{gw:?}");
    assert_eq!(
        String::from_utf8_lossy(&gw.stdout).trim(),
        "ipsecgateway.ipsec.bnerd.net/acme"
    );
    drop(sb);

    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.yaml");
    std::fs::write(
        &settings,
        "api:\n  webhooks:\n  - {name: deny.example.net, resources: [vpnpeers], verbs: [create], deny: true}\n",
    )
    .unwrap();
    let scenario = dir.path().join("acme.yaml");
    std::fs::write(&scenario, ACME).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vpnmig-sandbox"))
        .args(["--control-plane", "real", "--scenario"])
        .arg(&scenario)
        .arg("--kubeconfig")
        .arg(dir.path().join("kubeconfig"))
        .arg("--operator-settings")
        .arg(&settings)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("api.webhooks"),
        "{out:?}"
    );
}

#[test]
fn the_sandbox_binary_serves_a_scenario_and_a_sigkill_leaves_no_component_running() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    use vpnmig_sandbox::controlplane::state_root;
    if !available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    let scenario = dir.path().join("acme.yaml");
    std::fs::write(&scenario, ACME).unwrap();
    let mut sandbox = Command::new(env!("CARGO_BIN_EXE_vpnmig-sandbox"))
        .args(["--control-plane", "real", "--scenario"])
        .arg(&scenario)
        .arg("--kubeconfig")
        .arg(&kc)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(sandbox.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("export KUBECONFIG="), "{line:?}");
    // The scenario's object and its recorded status, read with the real kubectl.
    let kubectl = |args: &[&str]| {
        let out = Command::new(vpnmig_sandbox::controlplane::bin_dir().join("kubectl"))
            .arg(format!("--kubeconfig={}", kc.display()))
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(
        kubectl(&[
            "get",
            "ipsecgateway",
            "acme",
            "-o",
            "jsonpath={.status.serviceCIDR}"
        ]),
        "10.250.3.0/24"
    );
    // Its components, from the pid file of the directory it owns.
    let owned = std::fs::read_dir(state_root())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            std::fs::read_to_string(p.join("pids"))
                .is_ok_and(|t| t.starts_with(&format!("owner {}\n", sandbox.id())))
        })
        .expect("the sandbox's pid file");
    let pids: Vec<String> = std::fs::read_to_string(owned.join("pids"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
        .collect();
    assert_eq!(
        pids.len(),
        4,
        "etcd, kube-apiserver, kube-controller-manager, kwok"
    );
    sandbox.kill().unwrap();
    sandbox.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while pids.iter().any(|p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let left: Vec<_> = pids.iter().filter(|p| alive(p)).collect();
    assert!(left.is_empty(), "still running after the SIGKILL: {left:?}");
    // The next start reaps the dead owner's directory.
    let _next = ControlPlane::start().unwrap();
    assert!(!owned.exists(), "{} left behind", owned.display());
}

/// A live process, not a zombie waiting for its reaper.
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
}

/// `vpnmig-sandbox --control-plane real`, serving until dropped (SIGTERM, then SIGKILL;
/// every wait bounded).
struct Served {
    child: std::process::Child,
    kubeconfig: std::path::PathBuf,
    dir: tempfile::TempDir,
    /// From the start to the printed `export KUBECONFIG=`, the operator's first reconciles
    /// included.
    took: std::time::Duration,
    /// What the sandbox said when it was ready.
    banner: String,
}

impl Served {
    fn start(scenario: &str, operator_settings: Option<&str>) -> Served {
        Served::start_with(scenario, operator_settings, &[])
    }

    fn start_with(scenario: &str, operator_settings: Option<&str>, extra: &[&str]) -> Served {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let path = dir.path().join("scenario.yaml");
        std::fs::write(&path, scenario).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_vpnmig-sandbox"));
        cmd.args(["--control-plane", "real", "--scenario"])
            .arg(&path)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(extra);
        if let Some(s) = operator_settings {
            let p = dir.path().join("settings.yaml");
            std::fs::write(&p, s).unwrap();
            cmd.arg("--operator-settings").arg(p);
        }
        let log = dir.path().join("sandbox.log");
        let started = std::time::Instant::now();
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        // The first line comes once it serves (the control plane's own waits are bounded).
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let banner = std::fs::read_to_string(&log).unwrap();
        assert!(line.starts_with("export KUBECONFIG="), "{line:?}\n{banner}");
        Served {
            child,
            kubeconfig,
            took: started.elapsed(),
            banner,
            dir,
        }
    }

    /// The built kubectl as the administrator, in the scenario's namespace.
    fn kubectl(&self, args: &[&str]) -> std::process::Output {
        std::process::Command::new(vpnmig_sandbox::controlplane::bin_dir().join("kubectl"))
            .arg(format!("--kubeconfig={}", self.kubeconfig.display()))
            .arg("--request-timeout=20s")
            .args(args)
            .output()
            .unwrap()
    }

    fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut a = args.to_vec();
        // kubectl leaves managedFields out unless asked.
        a.extend(["-o", "json", "--show-managed-fields"]);
        let out = self.kubectl(&a);
        assert!(out.status.success(), "kubectl {args:?}: {out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// The pods of tenant-acme's gateway once the cluster has collected every earlier
    /// gateway's: one pod, and a kwok Exec for each pod of the namespace and no other (bounded at 90 s; a
    /// loaded machine's garbage collector and kwok take their time).
    fn settled_pods(&self) -> serde_json::Value {
        let names = |v: &serde_json::Value| -> Vec<String> {
            v["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
                .collect()
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
        loop {
            let pods = self.json(&[
                "get",
                "pods",
                "-n",
                "tenant-acme",
                "-l",
                "app.kubernetes.io/instance=acme",
            ]);
            let all = self.json(&["get", "pods", "-n", "tenant-acme"]);
            let execs = self.json(&["get", "execs.kwok.x-k8s.io", "-n", "tenant-acme"]);
            if names(&pods).len() == 1 && names(&execs) == names(&all) {
                return pods;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the cluster never left one gateway pod with its kwok Exec within 90 s: pods {:?}, execs {:?}",
                names(&pods),
                names(&execs)
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }

    /// `vpnmig ARGS` against it (this test binary, re-run as the vpnmig CLI: see
    /// [`vpnmig_cli`]), with its own state directory; bounded at 120 s.
    fn vpnmig(&self, args: &[&str]) -> (i32, String) {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "vpnmig_cli",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CLI_ARGS, serde_json::to_string(args).unwrap())
            .env("KUBECONFIG", &self.kubeconfig)
            .env("VPNMIG_STATE_DIR", self.dir.path().join("state"))
            .env("NO_COLOR", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while child.try_wait().unwrap().is_none() {
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("vpnmig {args:?} did not end within 120 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while self.child.try_wait().ok().flatten().is_none() && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The environment variable that makes [`vpnmig_cli`] run the vpnmig CLI (JSON list of
/// its arguments).
const CLI_ARGS: &str = "VPNMIG_REAL_CP_TEST_CLI";

/// Not a test: the vpnmig CLI (the library's `cli::run`), when this binary is re-run by
/// [`Served::vpnmig`]; this package builds no `vpnmig` binary.
#[test]
#[ignore = "not a test: the vpnmig CLI, run only when Served::vpnmig re-runs this binary"]
fn vpnmig_cli() {
    let Ok(args) = std::env::var(CLI_ARGS) else {
        return;
    };
    let args: Vec<String> = serde_json::from_str(&args).unwrap();
    let code = match vpnmig::cli::run(std::iter::once("vpnmig".to_string()).chain(args)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {:#}", anyhow_like(&e));
            e.exit_code()
        }
    };
    std::process::exit(code);
}

fn anyhow_like(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s.push_str(&format!(": {x}"));
        src = x.source();
    }
    s
}

/// The managers of an object's managedFields, as `manager operation [subresource]`.
fn managers(obj: &serde_json::Value) -> Vec<String> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|m| {
                    format!(
                        "{} {}{}",
                        m["manager"].as_str().unwrap_or(""),
                        m["operation"].as_str().unwrap_or(""),
                        m["subresource"]
                            .as_str()
                            .map(|s| format!(" {s}"))
                            .unwrap_or_default()
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Issue 23 item 3's "done when": against `vpnmig-sandbox --control-plane real` (the
/// simulated operator a controller over the real API), `vpnmig cutover` ends done; the
/// journal ConfigMap, the Lease and the new VPNGateway and VPNPeer are real API objects
/// with real managedFields; pod exec answers as the gateway's strongSwan; then `verify`,
/// `status` and a rollback, each a row.
#[test]
fn a_cutover_against_the_real_control_plane_ends_done_with_real_api_objects() {
    if !available() {
        return;
    }
    // The operator hands out only acme's serviceCIDR, so a re-created IPsecGateway (which
    // cannot pin it) gets it back, as in the emulator's rollback tests.
    let sb = Served::start(ACME, Some("operator:\n  serviceCidrPool: 10.250.3.0/24\n"));
    eprintln!("sandbox ready in {:?}: {}", sb.took, sb.banner.trim());
    assert!(
        sb.banner
            .contains("simulated operator running as a controller"),
        "{}",
        sb.banner
    );

    // "Serving" is said before the gateway's pod runs (kwok marks it Running after): the
    // cutover's baseline needs the old gateway Ready, as an engineer waits for it (CI:
    // BLOCKER source-ready, WorkloadNotReady).
    let ready = |sb: &Served| {
        sb.json(&["get", "ipsecgateway", "acme", "-n", "tenant-acme"])["status"]["conditions"]
            .as_array()
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !ready(&sb) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(ready(&sb), "IPsecGateway acme never Ready");

    // The Lease lives while the window runs: watched from before the cutover.
    let mut watch = std::process::Command::new(vpnmig_sandbox::controlplane::bin_dir().join("kubectl"))
        .arg(format!("--kubeconfig={}", sb.kubeconfig.display()))
        .args([
            "get",
            "lease",
            "-n",
            "tenant-acme",
            "--watch",
            "--request-timeout=600s",
            "-o",
            "jsonpath={.metadata.name} {.spec.holderIdentity} {.metadata.managedFields[*].manager}{\"\\n\"}",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Its lines as they come; the watch is known to be open once it has seen a probe Lease
    // (a fixed sleep was too short for kubectl's start on a loaded machine).
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let reader = {
        use std::io::BufRead;
        let out = watch.stdout.take().unwrap();
        let seen = seen.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                seen.lock().unwrap().push(line);
            }
        })
    };
    let probe = sb.dir.path().join("probe-lease.yaml");
    std::fs::write(
        &probe,
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: watch-probe\n  namespace: tenant-acme\n",
    )
    .unwrap();
    let out = sb.kubectl(&["apply", "-f", probe.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !seen
        .lock()
        .unwrap()
        .iter()
        .any(|l| l.starts_with("watch-probe "))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the Lease watch never saw the probe within 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = sb.kubectl(&["delete", "lease", "watch-probe", "-n", "tenant-acme"]);
    assert!(out.status.success(), "{out:?}");

    type Check = fn(&Served, &str);
    let rows: Vec<(&str, Vec<&str>, i32, Check)> = vec![
        (
            "cutover ends done",
            vec!["cutover", "acme", "-n", "tenant-acme", "--yes"],
            0,
            |sb, out| {
                assert!(out.contains("HEALTHY"), "{out}");
                let gw = sb.json(&["get", "vpngateway", "acme", "-n", "tenant-acme"]);
                assert_eq!(
                    gw["spec"]["endpoint"]["floatingIP"], "198.51.100.23",
                    "{gw}"
                );
                assert_eq!(gw["status"]["floatingIP"], "198.51.100.23", "{gw}");
                assert_eq!(gw["status"]["serviceCIDR"], "10.250.3.0/24", "{gw}");
                let m = managers(&gw);
                assert!(m.contains(&"vpnmig Apply".to_string()), "{m:?}");
                assert!(
                    m.contains(&"gateway-operator Update status".to_string()),
                    "{m:?}"
                );
                // The finalizer, through the API as the operator's write.
                assert!(m.contains(&"gateway-operator Update".to_string()), "{m:?}");
                assert_eq!(
                    gw["metadata"]["finalizers"][0], "vpn.bnerd.net/cleanup",
                    "{gw}"
                );
                let peer = sb.json(&["get", "vpnpeer", "acme", "-n", "tenant-acme"]);
                let m = managers(&peer);
                assert!(m.contains(&"vpnmig Apply".to_string()), "{m:?}");
                assert!(
                    m.contains(&"gateway-operator Update status".to_string()),
                    "{m:?}"
                );
                let established = peer["status"]["conditions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|c| c["type"] == "Established")
                    .cloned();
                assert_eq!(established.unwrap()["status"], "True", "{peer}");
                let cm = sb.json(&["get", "configmap", "vpnmig-acme", "-n", "tenant-acme"]);
                let journal: serde_json::Value =
                    serde_json::from_str(cm["data"]["journal.json"].as_str().unwrap()).unwrap();
                assert_eq!(journal["phase"], "done", "{journal}");
                assert!(
                    managers(&cm).iter().any(|m| m.starts_with("vpnmig ")),
                    "{:?}",
                    managers(&cm)
                );
                // The old gateway is gone: the operator's finalizer unwind let it go.
                let old = sb.kubectl(&["get", "ipsecgateway", "acme", "-n", "tenant-acme"]);
                assert!(
                    String::from_utf8_lossy(&old.stderr).contains("NotFound"),
                    "{old:?}"
                );
            },
        ),
        (
            "verify",
            vec!["verify", "acme", "-n", "tenant-acme"],
            0,
            |_, out| assert!(out.contains("HEALTHY"), "{out}"),
        ),
        (
            "status",
            vec!["status", "-n", "tenant-acme"],
            0,
            |_, out| {
                let row = out
                    .lines()
                    .find(|l| l.trim_start().starts_with("acme "))
                    .unwrap_or_default();
                assert!(
                    row.contains("VPNGateway") && row.contains("198.51.100.23"),
                    "{out}"
                );
            },
        ),
        (
            "pod exec answers as the gateway's strongSwan",
            vec![],
            0,
            |sb, _| {
                // The old gateway's pod goes with it, collected by the cluster (garbage
                // collector, then kwok): bounded, wait until the new gateway's is alone.
                let pods = sb.settled_pods();
                let pod = pods["items"][0]["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string();
                // Made by the cluster: the Deployment's ReplicaSet, run by kwok.
                assert_eq!(
                    pods["items"][0]["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet",
                    "{pods}"
                );
                let out = sb.kubectl(&[
                    "exec",
                    "-n",
                    "tenant-acme",
                    &pod,
                    "-c",
                    "strongswan",
                    "--",
                    "swanctl",
                    "--list-sas",
                ]);
                let text = String::from_utf8_lossy(&out.stdout);
                assert!(out.status.success(), "{out:?}");
                assert!(text.starts_with("acme: #"), "{text}");
                assert!(text.contains("ESTABLISHED, IKEv2"), "{text}");
                assert!(
                    text.contains("remote 'fw.acme.example' @ 203.0.113.10[4500]"),
                    "{text}"
                );
                assert!(text.contains("local  10.250.3.0/24"), "{text}");
                // The kwok Exec that names the pod is the pod's: collected with it.
                let exec = sb.json(&["get", "execs.kwok.x-k8s.io", &pod, "-n", "tenant-acme"]);
                assert_eq!(
                    exec["metadata"]["ownerReferences"][0]["kind"], "Pod",
                    "{exec}"
                );
                assert_eq!(
                    exec["metadata"]["ownerReferences"][0]["uid"],
                    pods["items"][0]["metadata"]["uid"],
                    "{exec}"
                );
            },
        ),
        (
            "rollback re-creates the IPsecGateway",
            vec!["rollback", "acme", "-n", "tenant-acme", "--yes"],
            0,
            |sb, out| {
                let gw = sb.json(&["get", "ipsecgateway", "acme", "-n", "tenant-acme"]);
                assert_eq!(gw["status"]["floatingIP"], "198.51.100.23", "{gw}\n{out}");
                assert_eq!(gw["status"]["serviceCIDR"], "10.250.3.0/24", "{gw}\n{out}");
                let gone = sb.kubectl(&["get", "vpngateway", "acme", "-n", "tenant-acme"]);
                assert!(
                    String::from_utf8_lossy(&gone.stderr).contains("NotFound"),
                    "{gone:?}"
                );
                // The VPNGateway's pod went, and its kwok Exec with it; the re-created
                // gateway's pod has its own (bounded: the collector follows).
                let names = |kind: &str| -> Vec<String> {
                    sb.json(&["get", kind, "-n", "tenant-acme"])["items"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
                        .collect()
                };
                sb.settled_pods();
                assert_eq!(names("execs.kwok.x-k8s.io"), names("pods"));
                assert_eq!(names("pods").len(), 1, "{:?}", names("pods"));
            },
        ),
    ];
    for (what, args, code, check) in rows {
        let t = std::time::Instant::now();
        let (got, out) = if args.is_empty() {
            (0, String::new())
        } else {
            sb.vpnmig(&args)
        };
        assert_eq!(got, code, "{what}: {out}");
        check(&sb, &out);
        eprintln!("{what}: {:?}", t.elapsed());
    }

    let _ = watch.kill();
    let _ = watch.wait();
    reader.join().unwrap();
    let seen = seen.lock().unwrap().join("\n");
    // Held by this host's vpnmig (`user@host pid N pidns M`), written with field manager
    // `vpnmig` (before, vpnmig's Lease writes named none and kube-apiserver recorded
    // `unknown`).
    let lease = seen
        .lines()
        .find(|l| l.starts_with("vpnmig-acme "))
        .unwrap_or_else(|| panic!("the Lease, as the watch saw it: {seen:?}"));
    let words: Vec<&str> = lease.split(' ').collect();
    assert_eq!(words[2], "pid", "{lease}");
    assert_eq!(words[4], "pidns", "{lease}");
    assert_eq!(words.last(), Some(&"vpnmig"), "{lease}");
    // Released at the end of each window, as docs/cutover.md says.
    let leases = sb.json(&["get", "lease", "-n", "tenant-acme"]);
    assert_eq!(leases["items"], serde_json::json!([]), "{leases}");
}

/// `vpnmig-sandbox operator --kubeconfig K` against a cluster it did not start (here a
/// bare real control plane, as a user's kind or k3d would be): it reconciles a gateway
/// applied without status (floating IP, serviceCIDR, Deployment, finalizer, Ready), and on
/// its deletion unwinds through the API (children, then the finalizer), so the gateway goes.
#[test]
fn the_operator_subcommand_reconciles_and_unwinds_a_gateway_on_any_cluster() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let Some(cp) = start() else { return };
    crds(&cp);
    cp.apply(&without_status(ACME)).unwrap();
    let mut op = Command::new(env!("CARGO_BIN_EXE_vpnmig-sandbox"))
        .args(["operator", "--kubeconfig"])
        .arg(cp.admin_kubeconfig())
        .args(["--node", vpnmig_sandbox::controlplane::NODE_NAME])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let get = |path: &str| {
        cp.kubectl(&[
            "get",
            "ipsecgateway",
            "acme",
            "-n",
            "tenant-acme",
            "-o",
            &format!("jsonpath={path}"),
        ])
    };
    let ready = "{.status.conditions[?(@.type==\"Ready\")].status}";
    let started = Instant::now();
    while get(ready).ok().as_deref() != Some("True") && started.elapsed() < Duration::from_secs(60)
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("IPsecGateway Ready after {:?}", started.elapsed());
    let _ = op
        .try_wait()
        .map(|s| assert!(s.is_none(), "the operator exited: {s:?}"));
    assert_eq!(get(ready).unwrap(), "True", "{:?}", get("{.status}"));
    assert_eq!(get("{.status.floatingIP}").unwrap(), "198.51.100.23");
    assert_eq!(get("{.status.serviceCIDR}").unwrap(), "10.250.0.0/24");
    assert_eq!(
        get("{.metadata.finalizers[0]}").unwrap(),
        "ipsec.bnerd.net/cleanup"
    );
    // The Deployment is the operator's; its Pod the cluster's ReplicaSet's.
    assert_eq!(
        cp.kubectl(&[
            "get",
            "deploy",
            "acme",
            "-n",
            "tenant-acme",
            "-o",
            "jsonpath={.metadata.ownerReferences[0].kind} {.metadata.managedFields[0].manager} {.status.readyReplicas}",
            "--show-managed-fields"
        ])
        .unwrap(),
        "IPsecGateway gateway-operator 1"
    );

    // Deleting it: the unwind (children, then the OpenStack cleanup, then the finalizer)
    // runs through the API, and the gateway is gone.
    cp.kubectl(&[
        "delete",
        "ipsecgateway",
        "acme",
        "-n",
        "tenant-acme",
        "--wait=true",
        "--timeout=60s",
    ])
    .unwrap();
    // The unwind deleted the Deployment (background propagation: the collector takes
    // its ReplicaSet and Pod after it).
    let deadline = Instant::now() + Duration::from_secs(30);
    let deploy = || cp.kubectl(&["get", "deploy", "acme", "-n", "tenant-acme", "-o", "name"]);
    while deploy().is_ok() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let e = deploy().unwrap_err();
    assert!(e.contains("NotFound"), "{e}");
    let _ = Command::new("kill")
        .args(["-TERM", &op.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while op.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = op.kill();
    let out = op.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("simulated gateway operator running against Kubernetes v1.37"),
        "{log}"
    );
}

/// Both planes real: `--control-plane real --data-plane strongswan`. The gateway pod's
/// charon is a real one in its network namespace, `kubectl exec … swanctl` through kwok
/// runs the real swanctl against it, and `vpnmig cutover` ends done with the data plane
/// compared, the client site's prober answered by the new gateway. Runs where both the
/// control plane is built and the data plane can run (root, Debian's strongSwan).
#[test]
fn a_cutover_with_both_planes_real_ends_done_and_the_client_is_answered_by_the_new_gateway() {
    if !available() {
        return;
    }
    if let Err(why) = vpnmig_sandbox::dataplane::netns::available() {
        if std::env::var_os("VPNMIG_REQUIRE_DATAPLANE").is_some() {
            panic!("the real data plane is required here (VPNMIG_REQUIRE_DATAPLANE) but {why}");
        }
        eprintln!("DID NOT RUN (real data plane): {why}");
        return;
    }
    let sb = Served::start_with(
        ACME,
        Some("operator:\n  serviceCidrPool: 10.250.3.0/24\n"),
        &["--data-plane", "strongswan"],
    );
    let pod = || {
        sb.json(&[
            "get",
            "pods",
            "-n",
            "tenant-acme",
            "-l",
            "app.kubernetes.io/instance=acme",
        ])["items"][0]["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    // The real charon's IKE SA with the client site comes up on its own (bounded).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let list_sas = |p: &str| {
        sb.kubectl(&[
            "exec",
            "-n",
            "tenant-acme",
            p,
            "-c",
            "strongswan",
            "--",
            "swanctl",
            "--list-sas",
        ])
    };
    let mut text = String::new();
    while std::time::Instant::now() < deadline {
        text = String::from_utf8_lossy(&list_sas(&pod()).stdout).into_owned();
        if text.contains("ESTABLISHED") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(text.contains("main: #"), "{text}");
    assert!(text.contains("ESTABLISHED, IKEv2"), "{text}");
    assert!(
        text.contains("remote 'fw.acme.example' @ 203.0.113.10"),
        "{text}"
    );

    let (code, out) = sb.vpnmig(&["cutover", "acme", "-n", "tenant-acme", "--yes"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("data plane: identical"), "{out}");
    let text = String::from_utf8_lossy(&list_sas(&pod()).stdout).into_owned();
    assert!(text.contains("acme: #"), "{text}");
    assert!(text.contains("ESTABLISHED, IKEv2"), "{text}");
    // The client site's prober: answered by the new gateway after the cutover (bounded).
    let log = || {
        std::fs::read_to_string(
            std::path::PathBuf::from(format!("{}.state", sb.kubeconfig.display()))
                .join("dataplane/probe.jsonl"),
        )
        .unwrap_or_default()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !log().contains("\"answeredBy\":\"VPNGateway tenant-acme/acme exposure crm\"")
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(
        log().contains("\"answeredBy\":\"VPNGateway tenant-acme/acme exposure crm\""),
        "{}",
        log()
    );
}
