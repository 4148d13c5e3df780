//! Shared test harness: run the real `vpnmig` binary (ripgrep's TestCommand style) and
//! build gateways in code ("with two tunnels", "unpinned") instead of copying YAML.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::{Value, json};

/// The crate root: tests run vpnmig from here with relative fixture paths, so the paths
/// printed in snapshots are stable.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

mod run;
#[allow(unused_imports)]
pub use run::{Run, advised, flat, labelled};

/// Run `vpnmig ARGS` from the crate root, without colour, with `stdin` as input, at the
/// width of no terminal (100 columns: `COLUMNS` from the caller's shell is removed).
pub fn vpnmig(args: &[&str], stdin: Option<&str>) -> Run {
    vpnmig_at(None, args, stdin)
}

/// [`vpnmig`] with `COLUMNS` set to `columns` (a terminal that wide).
pub fn vpnmig_at(columns: Option<usize>, args: &[&str], stdin: Option<&str>) -> Run {
    let mut cmd = Command::cargo_bin("vpnmig").unwrap();
    cmd.current_dir(root()).env("NO_COLOR", "1").args(args);
    match columns {
        Some(c) => cmd.env("COLUMNS", c.to_string()),
        None => cmd.env_remove("COLUMNS"),
    };
    if let Some(s) = stdin {
        cmd.write_stdin(s);
    }
    let out = cmd.output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Extra arguments a fixture asks for on a `# vpnmig-args: …` line.
pub fn fixture_args(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("# vpnmig-args:"))
        .map(|a| a.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// A healthy, pinned, single-tunnel IPsecGateway as `kubectl get -o yaml` returns it.
pub struct Gw(pub Value);

impl Gw {
    pub fn new(name: &str) -> Self {
        Gw(json!({
            "apiVersion": "ipsec.bnerd.net/v1alpha1",
            "kind": "IPsecGateway",
            "metadata": {
                "name": name, "namespace": "tenant-test", "uid": "0e7c55a4-1111-4c2b-9d3e-5f6a7b8c9d0e",
                "resourceVersion": "1000", "generation": 3, "finalizers": ["ipsec.bnerd.net/cleanup"],
                "labels": {"client": name}
            },
            "spec": {
                "endpoint": {"floatingIP": "198.51.100.50", "network": "public"},
                "auth": {"pskSecretRef": {"name": format!("{name}-psk"), "key": "psk"}},
                "ike": {"version": 2, "proposals": ["aes256-sha256-modp2048"], "lifetime": "24h"},
                "tunnels": [tunnel("main", "203.0.113.50", &["10.60.0.0/16"])],
                "exposures": [{"name": "web", "target": {"address": "web.tenant-test.svc", "port": 443}, "protocol": "TCP"}]
            },
            "status": {
                "observedGeneration": 3, "floatingIP": "198.51.100.50", "serviceCIDR": "10.250.9.0/24",
                "exposures": [{"name": "web", "virtualIP": "10.250.9.10"}],
                "conditions": [
                    {"type": "FIPAttached", "status": "True", "reason": "Associated", "observedGeneration": 3},
                    {"type": "Ready", "status": "True", "reason": "Reconciled", "observedGeneration": 3}
                ]
            }
        }))
    }

    /// Set the value at a JSON pointer, creating nothing: the parent must exist.
    pub fn set(mut self, pointer: &str, v: Value) -> Self {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let p = self
            .0
            .pointer_mut(parent)
            .unwrap_or_else(|| panic!("no {parent}"));
        match p {
            Value::Array(a) => a[key.parse::<usize>().unwrap()] = v,
            Value::Object(o) => {
                o.insert(key.to_string(), v);
            }
            _ => panic!("{parent} is not a container"),
        }
        self
    }

    /// Remove the value at a JSON pointer.
    pub fn remove(mut self, pointer: &str) -> Self {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        if let Some(o) = self.0.pointer_mut(parent).and_then(Value::as_object_mut) {
            o.remove(key);
        }
        self
    }

    pub fn tunnels(self, tunnels: Vec<Value>) -> Self {
        self.set("/spec/tunnels", Value::Array(tunnels))
    }

    pub fn unpinned(self) -> Self {
        self.remove("/spec/endpoint/floatingIP")
    }

    pub fn yaml(&self) -> String {
        serde_json::to_string_pretty(&self.0).unwrap()
    }

    /// Load through the same entry point as `vpnmig plan -f`.
    pub fn source(&self) -> vpnmig::core::input::Source {
        vpnmig::core::input::load(&self.yaml(), "test.yaml", None).unwrap()
    }

    pub fn plan(&self) -> vpnmig::core::plan::Plan {
        vpnmig::core::full_plan::build(
            &self.source(),
            &vpnmig::core::allowlist::Allowlist::default(),
        )
    }
}

pub fn tunnel(name: &str, address: &str, subnets: &[&str]) -> Value {
    json!({
        "name": name,
        "peer": {"address": address, "id": format!("{name}.client.example")},
        "remoteSubnets": subnets,
        "esp": {"proposals": ["aes256gcm16-modp2048"], "lifetime": "1h"},
        "dpd": {"delay": "30s", "timeout": "150s", "action": "restart"}
    })
}
