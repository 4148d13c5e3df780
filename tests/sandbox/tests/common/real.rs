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

/// Start a real control plane; `None` (said as `DID NOT RUN (real control plane)`) where
/// its binaries are not built, unless `VPNMIG_REQUIRE_CONTROLPLANE` is set (.ci/run sets
/// it), where that fails. Call it from the test's own thread: the components die with the
/// thread that started them.
pub fn start() -> Option<ControlPlane> {
    match built() {
        Ok(_) => {}
        Err(e @ ControlPlaneError::NotBuilt(_)) => {
            if std::env::var_os("VPNMIG_REQUIRE_CONTROLPLANE").is_some() {
                panic!("{e}");
            }
            eprintln!("DID NOT RUN (real control plane): {e}");
            return None;
        }
        Err(e) => panic!("{e}"),
    }
    Some(ControlPlane::start().unwrap_or_else(|e| panic!("{e}")))
}
