//! The real control plane in tests: the project's CRDs installed and Established.

use vpnmig_sandbox::controlplane::{ControlPlane, ControlPlaneError, built};

const CRDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/crds");

/// Apply every CRD in fixtures/crds and wait until each is Established.
pub fn crds(cp: &ControlPlane) {
    let mut all = String::new();
    let mut names = Vec::new();
    for e in std::fs::read_dir(CRDS).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        let name = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("name: "))
            .unwrap()
            .to_string();
        names.push(format!("crd/{name}"));
        all.push_str(&text);
        all.push_str("\n---\n");
    }
    cp.apply(&all).unwrap();
    let mut args = vec!["wait", "--for=condition=Established", "--timeout=30s"];
    args.extend(names.iter().map(String::as_str));
    cp.kubectl(&args).unwrap();
}

/// Whether the real control plane's binaries are built; where they are not, says `DID NOT
/// RUN (real control plane)` and is false, unless `VPNMIG_REQUIRE_CONTROLPLANE` is set
/// (.ci/run sets it), where that fails.
pub fn available() -> bool {
    match built() {
        Ok(_) => true,
        Err(e @ ControlPlaneError::NotBuilt(_)) => {
            if std::env::var_os("VPNMIG_REQUIRE_CONTROLPLANE").is_some() {
                panic!("{e}");
            }
            eprintln!("DID NOT RUN (real control plane): {e}");
            false
        }
        Err(e) => panic!("{e}"),
    }
}

/// Start a real control plane, or `None` where it is not [`available`]. Call it from the
/// test's own thread: the components die with the thread that started them.
pub fn start() -> Option<ControlPlane> {
    available().then(|| ControlPlane::start().unwrap_or_else(|e| panic!("{e}")))
}
