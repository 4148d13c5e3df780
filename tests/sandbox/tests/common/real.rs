//! The real control plane in tests: the project's CRDs installed and Established.

use vpnmig_sandbox::controlplane::ControlPlane;

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
