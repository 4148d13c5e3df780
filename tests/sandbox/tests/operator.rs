//! The simulated operator against the store (DESIGN.md §2, issue 3 items 4 and 5): one
//! test per behaviour vpnmig relies on and per fault knob. Every wait is bounded.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use tokio::time::Instant;
use vpnmig_sandbox::operator::{ExecOutput, GatewayFaults, Operator, Settings};
use vpnmig_sandbox::resources::ResourceType;
use vpnmig_sandbox::store::{DeleteOptions, EventKind, Store, WriteOptions};

const NS: &str = "tenant-acme";
const FIP: &str = "198.51.100.23";
const CIDR: &str = "10.250.3.0/24";
const WAIT: Duration = Duration::from_secs(5);

// ---- test bed ---------------------------------------------------------------------------

struct Bed {
    store: Arc<Store>,
    op: Arc<Operator>,
}

impl Drop for Bed {
    fn drop(&mut self) {
        self.op.shutdown();
    }
}

fn rt(store: &Store, plural: &str) -> ResourceType {
    let (group, version) = match plural {
        "ipsecgateways" => ("ipsec.bnerd.net", "v1alpha1"),
        "vpngateways" | "vpnpeers" => ("vpn.bnerd.net", "v1alpha1"),
        "deployments" => ("apps", "v1"),
        _ => ("", "v1"),
    };
    store
        .resource(group, version, plural)
        .unwrap_or_else(|| panic!("{plural} not served"))
}

impl Bed {
    fn new(settings: Settings) -> Bed {
        let store = Store::new();
        let crd_rt = store
            .resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .unwrap();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/crds");
        for f in [
            "ipsecgateways.ipsec.bnerd.net.yaml",
            "vpngateways.vpn.bnerd.net.yaml",
            "vpnpeers.vpn.bnerd.net.yaml",
        ] {
            let text = std::fs::read_to_string(dir.join(f)).unwrap();
            let crd: Value = serde_saphyr::from_str(&text).unwrap();
            store
                .create(&crd_rt, "", crd, &WriteOptions::default())
                .unwrap();
        }
        let ns_rt = rt(&store, "namespaces");
        store
            .create(
                &ns_rt,
                "",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
                &WriteOptions::default(),
            )
            .unwrap();
        let op = Operator::start(store.clone(), settings);
        Bed { store, op }
    }

    fn apply(&self, obj: Value) -> Value {
        let rt = self
            .store
            .resource_for_kind(
                obj["apiVersion"].as_str().unwrap(),
                obj["kind"].as_str().unwrap(),
            )
            .unwrap();
        self.store
            .create(&rt, NS, obj, &WriteOptions::default())
            .unwrap()
    }

    fn get(&self, plural: &str, name: &str) -> Option<Value> {
        self.store.get(&rt(&self.store, plural), NS, name).ok()
    }

    fn delete(&self, plural: &str, name: &str) {
        self.store
            .delete(
                &rt(&self.store, plural),
                NS,
                name,
                &DeleteOptions::default(),
            )
            .unwrap();
    }

    fn edit(&self, plural: &str, name: &str, f: impl FnOnce(&mut Value)) {
        self.store
            .modify(
                &rt(&self.store, plural),
                NS,
                name,
                false,
                &WriteOptions::default(),
                |cur| {
                    let mut o = cur.clone();
                    f(&mut o);
                    Ok(o)
                },
            )
            .unwrap();
    }

    fn cond(&self, plural: &str, name: &str, type_: &str) -> Option<Value> {
        let obj = self.get(plural, name)?;
        obj.pointer("/status/conditions")?
            .as_array()?
            .iter()
            .find(|c| c["type"] == type_)
            .cloned()
    }

    /// Wait (at most 5 s) until `f` answers.
    async fn until<T>(&self, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        let polled = tokio::time::timeout(WAIT, async {
            loop {
                if let Some(v) = f() {
                    return v;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        polled.unwrap_or_else(|_| panic!("timed out waiting for {what}"))
    }

    /// Wait until condition `type_` of `plural/name` has `status` (and `reason`, if given).
    async fn wait_cond(
        &self,
        plural: &str,
        name: &str,
        type_: &str,
        status: &str,
        reason: Option<&str>,
    ) -> Value {
        let what = format!("{plural}/{name} {type_}={status} {reason:?}");
        let got = tokio::time::timeout(WAIT, async {
            loop {
                if let Some(c) = self
                    .cond(plural, name, type_)
                    .filter(|c| c["status"] == status && reason.is_none_or(|r| c["reason"] == r))
                {
                    return c;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        got.unwrap_or_else(|_| {
            panic!(
                "timed out waiting for {what}; last: {:?}",
                self.get(plural, name)
                    .and_then(|o| o.get("status").cloned())
            )
        })
    }

    async fn gone(&self, plural: &str, name: &str) {
        self.until(&format!("{plural}/{name} to be gone"), || {
            self.get(plural, name).is_none().then_some(())
        })
        .await
    }

    /// The gateway pod (the one owned by Deployment `gw`).
    fn pod(&self, gw: &str) -> Option<String> {
        let deploy_uid = self
            .get("deployments", gw)?
            .pointer("/metadata/uid")?
            .as_str()?
            .to_string();
        let (pods, _) = self.store.list(&rt(&self.store, "pods"), Some(NS));
        pods.iter()
            .find(|p| {
                p.pointer("/metadata/ownerReferences/0/uid")
                    .and_then(Value::as_str)
                    == Some(&deploy_uid)
            })
            .and_then(|p| p.pointer("/metadata/name")?.as_str().map(str::to_string))
    }

    async fn wait_pod(&self, gw: &str) -> String {
        self.until(&format!("the pod of {gw}"), || self.pod(gw))
            .await
    }

    fn exec(&self, pod: &str, cmd: &[&str]) -> ExecOutput {
        let cmd: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
        self.op.exec(NS, pod, "strongswan", &cmd)
    }

    async fn list_sas(&self, gw: &str) -> String {
        let pod = self.wait_pod(gw).await;
        let out = self.exec(&pod, &["swanctl", "--list-sas"]);
        assert_eq!(out.exit_code, 0, "{out:?}");
        out.stdout
    }
}

fn settings(f: impl FnOnce(&mut Settings)) -> Settings {
    let mut s = Settings::default();
    f(&mut s);
    s
}

// ---- objects ---------------------------------------------------------------------------

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn psk_secret(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS}, "type": "Opaque", "data": {"psk": b64(value)}})
}

fn tunnel(name: &str, address: &str, id: &str, subnets: &[&str]) -> Value {
    json!({"name": name, "peer": {"address": address, "id": id}, "remoteSubnets": subnets, "esp": {"proposals": ["aes256gcm16-modp2048"], "lifetime": "1h"}})
}

fn ipsec_gw(name: &str, fip: Option<&str>, tunnels: Vec<Value>) -> Value {
    json!({
        "apiVersion": "ipsec.bnerd.net/v1alpha1", "kind": "IPsecGateway",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "endpoint": {"floatingIP": fip.unwrap_or(""), "network": "public"},
            "auth": {"pskSecretRef": {"name": "acme-psk", "key": "psk"}},
            "ike": {"version": 2, "proposals": ["aes256-sha256-modp2048"], "lifetime": "24h"},
            "tunnels": tunnels,
            "exposures": [{"name": "crm", "target": {"address": "crm.tenant-acme.svc", "port": 443}, "protocol": "TCP"}]
        }
    })
}

fn vpn_gw(name: &str, fip: Option<&str>, cidr: Option<&str>) -> Value {
    let mut spec = json!({
        "protocol": "ipsec",
        "endpoint": {"network": "public"},
        "ipsec": {"ike": {"version": 2, "proposals": ["aes256-sha256-modp2048"], "lifetime": "24h"}},
        "exposures": [
            {"name": "crm", "target": {"address": "crm.tenant-acme.svc", "port": 443}, "protocol": "TCP"},
            {"name": "erp", "target": {"address": "erp.tenant-acme.svc", "port": 8443}, "protocol": "TCP"}
        ],
        "reverseExposures": [{"name": "ldap", "target": {"address": "10.20.1.5", "port": 636}, "protocol": "TCP"}]
    });
    if let Some(f) = fip {
        spec["endpoint"]["floatingIP"] = json!(f);
    }
    if let Some(c) = cidr {
        spec["serviceCIDR"] = json!(c);
    }
    json!({"apiVersion": "vpn.bnerd.net/v1alpha1", "kind": "VPNGateway", "metadata": {"name": name, "namespace": NS}, "spec": spec})
}

fn vpn_peer(
    name: &str,
    gw: &str,
    address: &str,
    subnets: &[&str],
    authorization: Option<Value>,
) -> Value {
    let mut p = json!({
        "apiVersion": "vpn.bnerd.net/v1alpha1", "kind": "VPNPeer",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "gatewayRef": {"name": gw},
            "ipsec": {
                "peer": {"address": address, "id": format!("fw-{name}.example")},
                "remoteSubnets": subnets,
                "pskSecretRef": {"name": "acme-psk", "key": "psk"},
                "esp": {"proposals": ["aes256gcm16-modp2048"], "lifetime": "1h"}
            }
        }
    });
    if let Some(a) = authorization {
        p["spec"]["authorization"] = a;
    }
    p
}

/// The text of `swanctl --list-sas` with what changes from run to run (SPIs, seconds)
/// replaced: `SPI_i`, `cSPI,`, `Ns`.
fn shape(text: &str) -> String {
    let hex = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit());
    // Traffic counters grow with time (the simulated client sends all the time): their
    // shape is kept, their figures are not.
    let counters = |line: &str| -> String {
        let t = line.trim_start();
        match line.split_once(',') {
            Some((spi, rest)) if t.starts_with("in ") || t.starts_with("out ") => format!(
                "{spi}, N bytes, N packets{}",
                if rest.trim_end().ends_with("ago") {
                    ", Ns ago"
                } else {
                    ""
                }
            ),
            _ => line.to_string(),
        }
    };
    text.lines()
        .map(counters)
        .map(|line| {
            line.split(' ')
                .map(|w| {
                    if w.len() >= 18
                        && hex(&w[..16])
                        && matches!(&w[16..], "_i" | "_i*" | "_r" | "_r*")
                    {
                        format!("SPI{}", &w[16..])
                    } else if w.len() == 9
                        && w.starts_with('c')
                        && w.ends_with(',')
                        && hex(&w[1..8])
                    {
                        "cSPI,".to_string()
                    } else if w.ends_with('s')
                        && w.len() > 1
                        && w[..w.len() - 1].chars().all(|c| c.is_ascii_digit())
                    {
                        "Ns".to_string()
                    } else if w.ends_with("s,")
                        && w.len() > 2
                        && w[..w.len() - 2].chars().all(|c| c.is_ascii_digit())
                    {
                        "Ns,".to_string()
                    } else {
                        w.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .map(|l| l + "\n")
        .collect()
}

/// One old-style gateway `acme` with one tunnel, its PSK and a pinned FIP and CIDR.
fn old_acme(bed: &Bed) {
    bed.apply(psk_secret("acme-psk", "correct horse"));
    bed.apply(ipsec_gw(
        "acme",
        Some(FIP),
        vec![tunnel(
            "main",
            "203.0.113.10",
            "fw.acme.example",
            &["10.20.0.0/16"],
        )],
    ));
}

/// The VPNGateway + VPNPeer `acme` that `old_acme` migrates to: same FIP, the /24 the old
/// gateway was allocated (pinned), the same peer address and id.
fn new_acme(bed: &Bed, psk_secret: &str) {
    bed.apply(vpn_gw("acme", Some(FIP), Some("10.250.0.0/24")));
    let mut peer = vpn_peer("acme", "acme", "203.0.113.10", &["10.20.0.0/16"], None);
    peer["spec"]["ipsec"]["peer"]["id"] = json!("fw.acme.example");
    peer["spec"]["ipsec"]["pskSecretRef"]["name"] = json!(psk_secret);
    bed.apply(peer);
}

// ---- finalizer, FIP, CIDR, VIPs, conditions ---------------------------------------------

#[tokio::test]
async fn finalizer_is_added_to_both_kinds() {
    let bed = Bed::new(Settings::default());
    old_acme(&bed);
    bed.apply(vpn_gw("beta", None, None));
    for (plural, name, f) in [
        ("ipsecgateways", "acme", "ipsec.bnerd.net/cleanup"),
        ("vpngateways", "beta", "vpn.bnerd.net/cleanup"),
    ] {
        bed.until(&format!("finalizer on {plural}/{name}"), || {
            let obj = bed.get(plural, name)?;
            obj.pointer("/metadata/finalizers")?
                .as_array()?
                .iter()
                .any(|x| x == f)
                .then_some(())
        })
        .await;
    }
}

#[tokio::test]
async fn pinned_fip_is_kept_on_delete_unpinned_is_released_to_the_pool() {
    let bed = Bed::new(settings(|s| {
        s.fip_pool = vec!["198.51.100.200".into(), "198.51.100.201".into()]
    }));
    bed.apply(vpn_gw("free", None, None));
    bed.apply(vpn_gw("pinned", Some("198.51.100.201"), None));
    bed.wait_cond(
        "vpngateways",
        "free",
        "FIPAttached",
        "True",
        Some("Associated"),
    )
    .await;
    bed.wait_cond(
        "vpngateways",
        "pinned",
        "FIPAttached",
        "True",
        Some("Associated"),
    )
    .await;
    assert_eq!(
        bed.get("vpngateways", "free").unwrap()["status"]["floatingIP"],
        "198.51.100.200"
    );
    assert_eq!(
        bed.get("vpngateways", "pinned").unwrap()["status"]["floatingIP"],
        "198.51.100.201"
    );
    assert!(bed.op.floating_ips().free.is_empty());

    bed.delete("vpngateways", "free");
    bed.delete("vpngateways", "pinned");
    bed.gone("vpngateways", "free").await;
    bed.gone("vpngateways", "pinned").await;
    let fips = bed.op.floating_ips();
    assert_eq!(
        fips.free,
        vec!["198.51.100.200"],
        "only the unpinned FIP goes back to the pool: {fips:?}"
    );
    assert!(fips.reserved.contains(&"198.51.100.201".to_string()));
    assert!(fips.associated.is_empty(), "{fips:?}");

    // A new unpinned gateway gets the released one; the pinned one stays the project's.
    bed.apply(vpn_gw("next", None, None));
    bed.wait_cond("vpngateways", "next", "FIPAttached", "True", None)
        .await;
    assert_eq!(
        bed.get("vpngateways", "next").unwrap()["status"]["floatingIP"],
        "198.51.100.200"
    );
}

#[tokio::test]
async fn already_associated_while_the_old_gateway_holds_the_pinned_fip_then_attached() {
    let bed = Bed::new(Settings::default());
    old_acme(&bed);
    bed.wait_cond("ipsecgateways", "acme", "Ready", "True", None)
        .await;
    bed.apply(vpn_gw("acme-new", Some(FIP), Some(CIDR)));
    let c = bed
        .wait_cond(
            "vpngateways",
            "acme-new",
            "FIPAttached",
            "False",
            Some("AlreadyAssociated"),
        )
        .await;
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("IPsecGateway tenant-acme/acme"),
        "{c}"
    );
    bed.wait_cond(
        "vpngateways",
        "acme-new",
        "Ready",
        "False",
        Some("FIPNotAttached"),
    )
    .await;
    // It keeps retrying, and attaches as soon as the old gateway's unwind let go.
    bed.delete("ipsecgateways", "acme");
    bed.gone("ipsecgateways", "acme").await;
    bed.wait_cond(
        "vpngateways",
        "acme-new",
        "FIPAttached",
        "True",
        Some("Associated"),
    )
    .await;
    bed.wait_cond("vpngateways", "acme-new", "Ready", "True", None)
        .await;
    assert_eq!(
        bed.get("vpngateways", "acme-new").unwrap()["status"]["floatingIP"],
        FIP
    );
}

#[tokio::test]
async fn service_cidr_next_free_24_kept_and_pinned() {
    let bed = Bed::new(Settings::default());
    bed.apply(vpn_gw("a", None, None));
    bed.until("a's serviceCIDR", || {
        bed.get("vpngateways", "a")?
            .pointer("/status/serviceCIDR")
            .cloned()
    })
    .await;
    bed.apply(vpn_gw("pinned", None, Some("10.250.1.0/24")));
    bed.apply(vpn_gw("b", None, None));
    let cidr = |n: &str| {
        bed.get("vpngateways", n).and_then(|o| {
            o.pointer("/status/serviceCIDR")?
                .as_str()
                .map(str::to_string)
        })
    };
    bed.until("all serviceCIDRs", || {
        Some((cidr("a")?, cidr("pinned")?, cidr("b")?))
    })
    .await;
    assert_eq!(cidr("a").unwrap(), "10.250.0.0/24");
    assert_eq!(cidr("pinned").unwrap(), "10.250.1.0/24");
    assert_eq!(
        cidr("b").unwrap(),
        "10.250.2.0/24",
        "the next free /24 skips the pinned one"
    );
    // Once allocated, status keeps it even when an earlier /24 frees up.
    bed.delete("vpngateways", "a");
    bed.gone("vpngateways", "a").await;
    bed.edit("vpngateways", "b", |o| {
        o["metadata"]["labels"] = json!({"touched": "yes"})
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(cidr("b").unwrap(), "10.250.2.0/24");
}

#[tokio::test]
async fn exposure_virtual_ips_are_allocated_inside_the_service_cidr() {
    let bed = Bed::new(Settings::default());
    let mut gw = vpn_gw("acme", Some(FIP), Some(CIDR));
    gw["spec"]["exposures"][1]["virtualIP"] = json!("10.250.3.10");
    bed.apply(gw);
    let exposures = bed
        .until("status.exposures", || {
            bed.get("vpngateways", "acme")?
                .pointer("/status/exposures")
                .cloned()
        })
        .await;
    assert_eq!(
        exposures,
        json!([{"name": "crm", "virtualIP": "10.250.3.11"}, {"name": "erp", "virtualIP": "10.250.3.10"}])
    );
}

#[tokio::test]
async fn conditions_carry_reason_message_transition_time_and_observed_generation() {
    let bed = Bed::new(Settings::default());
    bed.apply(psk_secret("acme-psk", "k"));
    bed.apply(vpn_gw("acme", Some(FIP), Some(CIDR)));
    bed.apply(vpn_peer(
        "acme",
        "acme",
        "203.0.113.10",
        &["10.20.0.0/16"],
        None,
    ));
    let before = bed
        .wait_cond("vpngateways", "acme", "Ready", "True", Some("Reconciled"))
        .await;
    let fip_before = bed
        .wait_cond("vpngateways", "acme", "FIPAttached", "True", None)
        .await;
    for c in [&before, &fip_before] {
        for field in ["reason", "message", "lastTransitionTime"] {
            assert!(
                c[field].as_str().is_some_and(|s| !s.is_empty()),
                "{field} in {c}"
            );
        }
        assert_eq!(c["observedGeneration"], 1);
    }
    for t in ["Authorized", "Established", "Ready"] {
        let c = bed.wait_cond("vpnpeers", "acme", t, "True", None).await;
        assert_eq!(c["observedGeneration"], 1, "{c}");
    }
    tokio::time::sleep(Duration::from_millis(1100)).await;
    bed.edit("vpngateways", "acme", |o| {
        o["spec"]["exposures"][0]["target"]["port"] = json!(8443)
    });
    assert_eq!(
        bed.get("vpngateways", "acme").unwrap()["metadata"]["generation"],
        2
    );
    bed.until("observedGeneration 2", || {
        (bed.get("vpngateways", "acme")?
            .pointer("/status/observedGeneration")?
            == 2)
            .then_some(())
    })
    .await;
    let after = bed.cond("vpngateways", "acme", "Ready").unwrap();
    assert_eq!(after["observedGeneration"], 2);
    assert_eq!(
        after["lastTransitionTime"], before["lastTransitionTime"],
        "no flip, no new transition time"
    );
    assert_eq!(
        bed.cond("vpngateways", "acme", "FIPAttached").unwrap()["observedGeneration"],
        2
    );
}

// ---- authorization ------------------------------------------------------------------------

#[tokio::test]
async fn single_peer_without_authorization_is_default_allow() {
    let bed = Bed::new(Settings::default());
    bed.apply(psk_secret("acme-psk", "k"));
    bed.apply(vpn_gw("acme", Some(FIP), Some(CIDR)));
    bed.apply(vpn_peer(
        "acme",
        "acme",
        "203.0.113.10",
        &["10.20.0.0/16"],
        None,
    ));
    bed.wait_cond(
        "vpnpeers",
        "acme",
        "Authorized",
        "True",
        Some("DefaultAllow"),
    )
    .await;
    bed.wait_cond("vpnpeers", "acme", "Established", "True", None)
        .await;
    bed.wait_cond("vpnpeers", "acme", "Ready", "True", None)
        .await;
}

#[tokio::test]
async fn two_peers_flip_the_gateway_to_default_deny() {
    let bed = Bed::new(Settings::default());
    bed.apply(psk_secret("acme-psk", "k"));
    bed.apply(vpn_gw("acme", Some(FIP), Some(CIDR)));
    bed.apply(vpn_peer(
        "acme-hq",
        "acme",
        "203.0.113.10",
        &["10.20.0.0/16"],
        Some(json!({"exposures": ["crm", "erp"], "reverseExposures": ["ldap"]})),
    ));
    bed.apply(vpn_peer(
        "acme-branch",
        "acme",
        "203.0.113.11",
        &["10.21.0.0/16"],
        None,
    ));
    bed.wait_cond("vpnpeers", "acme-hq", "Authorized", "True", Some("Granted"))
        .await;
    let c = bed
        .wait_cond(
            "vpnpeers",
            "acme-branch",
            "Authorized",
            "False",
            Some("NoGrants"),
        )
        .await;
    assert!(
        c["message"].as_str().unwrap().contains("default-deny"),
        "{c}"
    );
    bed.wait_cond(
        "vpnpeers",
        "acme-branch",
        "Ready",
        "False",
        Some("NoGrants"),
    )
    .await;
    // Back to one peer: default-allow again.
    bed.delete("vpnpeers", "acme-hq");
    bed.wait_cond(
        "vpnpeers",
        "acme-branch",
        "Authorized",
        "True",
        Some("DefaultAllow"),
    )
    .await;
}

#[tokio::test]
async fn a_grant_naming_an_unknown_exposure_is_unauthorized_while_established() {
    let bed = Bed::new(Settings::default());
    bed.apply(psk_secret("acme-psk", "k"));
    bed.apply(vpn_gw("acme", Some(FIP), Some(CIDR)));
    bed.apply(vpn_peer(
        "acme-hq",
        "acme",
        "203.0.113.10",
        &["10.20.0.0/16"],
        Some(json!({"exposures": ["crm", "crn"]})),
    ));
    bed.apply(vpn_peer(
        "acme-branch",
        "acme",
        "203.0.113.11",
        &["10.21.0.0/16"],
        Some(json!({"exposures": ["crm"]})),
    ));
    let c = bed
        .wait_cond(
            "vpnpeers",
            "acme-hq",
            "Authorized",
            "False",
            Some("UnknownExposure"),
        )
        .await;
    assert!(c["message"].as_str().unwrap().contains("\"crn\""), "{c}");
    bed.wait_cond("vpnpeers", "acme-hq", "Established", "True", None)
        .await;
    bed.wait_cond(
        "vpnpeers",
        "acme-hq",
        "Ready",
        "False",
        Some("UnknownExposure"),
    )
    .await;
    bed.wait_cond("vpnpeers", "acme-branch", "Ready", "True", None)
        .await;
    assert!(
        bed.list_sas("acme").await.contains("acme-hq: #"),
        "IKE is up for the unauthorized peer"
    );
}

// ---- deletion -------------------------------------------------------------------------------

#[tokio::test]
async fn deletion_unwinds_children_first_then_fip_then_finalizer_and_collects_the_psk_secret() {
    let bed = Bed::new(settings(|s| {
        s.finalizer_delay_ms = 50;
        s.openstack_delay_ms = 300;
    }));
    let gw = bed.apply(ipsec_gw(
        "acme",
        Some(FIP),
        vec![tunnel(
            "main",
            "203.0.113.10",
            "fw.acme.example",
            &["10.20.0.0/16"],
        )],
    ));
    let mut secret = psk_secret("acme-psk", "k");
    secret["metadata"]["ownerReferences"] = json!([{"apiVersion": "ipsec.bnerd.net/v1alpha1", "kind": "IPsecGateway", "name": "acme", "uid": gw["metadata"]["uid"]}]);
    bed.apply(secret);
    bed.wait_cond("ipsecgateways", "acme", "Ready", "True", None)
        .await;
    let pod = bed.wait_pod("acme").await;
    let start_rv = bed.store.resource_version();

    bed.delete("ipsecgateways", "acme");
    bed.gone("deployments", "acme").await;
    assert!(
        bed.get("pods", &pod).is_none(),
        "the pod went with its deployment"
    );
    assert!(
        bed.get("ipsecgateways", "acme").is_some(),
        "the gateway waits for the OpenStack part"
    );
    assert_eq!(
        bed.op
            .floating_ips()
            .associated
            .get(FIP)
            .map(String::as_str),
        Some("IPsecGateway tenant-acme/acme")
    );
    bed.gone("ipsecgateways", "acme").await;
    bed.gone("secrets", "acme-psk").await;
    let fips = bed.op.floating_ips();
    assert!(
        fips.associated.is_empty() && fips.reserved.contains(&FIP.to_string()),
        "disassociated, not released: {fips:?}"
    );

    let deleted = |plural: &str, name: &str| {
        bed.store
            .events_after(start_rv)
            .unwrap()
            .iter()
            .find(|e| {
                e.kind == EventKind::Deleted
                    && e.gvr.plural == plural
                    && e.object["metadata"]["name"] == name
            })
            .map(|e| e.rv)
            .unwrap_or_else(|| panic!("no DELETED event for {plural}/{name}"))
    };
    let (p, d, g, s) = (
        deleted("pods", &pod),
        deleted("deployments", "acme"),
        deleted("ipsecgateways", "acme"),
        deleted("secrets", "acme-psk"),
    );
    assert!(
        p < d && d < g && g < s,
        "pod {p} < deployment {d} < gateway {g} < secret {s}"
    );
}

// ---- faults -------------------------------------------------------------------------------------

#[tokio::test]
async fn fault_stuck_finalizer_holds_the_gateway_until_cleared() {
    let bed = Bed::new(settings(|s| {
        s.gateway_mut("tenant-acme/acme").stuck_finalizer = true
    }));
    old_acme(&bed);
    bed.wait_cond("ipsecgateways", "acme", "Ready", "True", None)
        .await;
    bed.delete("ipsecgateways", "acme");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let obj = bed.get("ipsecgateways", "acme").expect("still there");
    assert!(obj.pointer("/metadata/deletionTimestamp").is_some());
    assert_eq!(
        obj["metadata"]["finalizers"],
        json!(["ipsec.bnerd.net/cleanup"])
    );
    assert!(
        bed.get("deployments", "acme").is_some(),
        "the unwind did not even start"
    );
    bed.op
        .settings()
        .write()
        .unwrap()
        .gateway_mut("tenant-acme/acme")
        .stuck_finalizer = false;
    bed.gone("ipsecgateways", "acme").await;
}

#[tokio::test]
async fn fault_slow_finalizer_delays_the_unwind() {
    let bed = Bed::new(settings(|s| {
        s.gateway_mut("ipsecgateway/tenant-acme/acme")
            .slow_finalizer_ms = 400
    }));
    old_acme(&bed);
    bed.wait_cond("ipsecgateways", "acme", "Ready", "True", None)
        .await;
    let t0 = Instant::now();
    bed.delete("ipsecgateways", "acme");
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(
        bed.get("deployments", "acme").is_some(),
        "children are still there while the finalizer is slow"
    );
    bed.gone("ipsecgateways", "acme").await;
    assert!(
        t0.elapsed() >= Duration::from_millis(400),
        "{:?}",
        t0.elapsed()
    );
}

#[tokio::test]
async fn fault_fip_held_by_other_port_until_cleared() {
    let bed = Bed::new(settings(|s| {
        s.gateway_mut("tenant-acme/acme").fip_held_by_other_port = true
    }));
    bed.apply(vpn_gw("acme", Some(FIP), Some(CIDR)));
    let c = bed
        .wait_cond(
            "vpngateways",
            "acme",
            "FIPAttached",
            "False",
            Some("AlreadyAssociated"),
        )
        .await;
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("already associated with port"),
        "{c}"
    );
    assert!(
        bed.get("vpngateways", "acme")
            .unwrap()
            .pointer("/status/floatingIP")
            .is_none()
    );
    bed.op
        .settings()
        .write()
        .unwrap()
        .gateway_mut("tenant-acme/acme")
        .fip_held_by_other_port = false;
    bed.wait_cond(
        "vpngateways",
        "acme",
        "FIPAttached",
        "True",
        Some("Associated"),
    )
    .await;
}

#[tokio::test]
async fn fault_client_peer_never_returns_after_the_cutover() {
    let bed = Bed::new(settings(|s| {
        s.gateway_mut("vpngateway/tenant-acme/acme")
            .client_peer_never_returns = true
    }));
    old_acme(&bed);
    let old = bed
        .until("the old tunnel's SA", || {
            let out = bed
                .exec(&bed.pod("acme")?, &["swanctl", "--list-sas"])
                .stdout;
            (!out.is_empty()).then_some(out)
        })
        .await;
    assert!(old.starts_with("main: #1, ESTABLISHED"), "{old}");
    bed.delete("ipsecgateways", "acme");
    bed.gone("ipsecgateways", "acme").await;
    new_acme(&bed, "acme-psk");
    let c = bed
        .wait_cond(
            "vpnpeers",
            "acme",
            "Established",
            "False",
            Some("WaitingForPeer"),
        )
        .await;
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("does not re-initiate"),
        "{c}"
    );
    bed.wait_cond("vpngateways", "acme", "Ready", "True", None)
        .await;
    assert_eq!(bed.list_sas("acme").await, "");
    bed.op
        .settings()
        .write()
        .unwrap()
        .gateway_mut("vpngateway/tenant-acme/acme")
        .client_peer_never_returns = false;
    bed.wait_cond("vpnpeers", "acme", "Established", "True", None)
        .await;
}

#[tokio::test]
async fn fault_psk_mismatch_means_no_sa() {
    let bed = Bed::new(settings(|s| {
        s.gateway_mut("tenant-acme/acme").psk_mismatch = true
    }));
    bed.apply(psk_secret("acme-psk", "k"));
    bed.apply(vpn_gw("acme", Some(FIP), Some(CIDR)));
    bed.apply(vpn_peer(
        "acme",
        "acme",
        "203.0.113.10",
        &["10.20.0.0/16"],
        None,
    ));
    let c = bed
        .wait_cond(
            "vpnpeers",
            "acme",
            "Established",
            "False",
            Some("AuthenticationFailed"),
        )
        .await;
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("pre-shared key mismatch"),
        "{c}"
    );
    assert_eq!(bed.list_sas("acme").await, "");
    bed.op
        .settings()
        .write()
        .unwrap()
        .gateway_mut("tenant-acme/acme")
        .psk_mismatch = false;
    bed.wait_cond("vpnpeers", "acme", "Established", "True", None)
        .await;
}

#[tokio::test]
async fn fault_paused_operator_does_nothing_for_the_gateway() {
    let bed = Bed::new(settings(|s| {
        s.gateway_mut("tenant-acme/acme").paused = true
    }));
    bed.apply(vpn_gw("acme", Some(FIP), Some(CIDR)));
    bed.apply(vpn_gw("other", None, None));
    bed.wait_cond("vpngateways", "other", "Ready", "True", None)
        .await;
    let obj = bed.get("vpngateways", "acme").unwrap();
    assert!(
        obj.get("status").is_none() && obj.pointer("/metadata/finalizers").is_none(),
        "{obj}"
    );
    assert!(bed.get("deployments", "acme").is_none());
    bed.op
        .settings()
        .write()
        .unwrap()
        .gateway_mut("tenant-acme/acme")
        .paused = false;
    bed.wait_cond("vpngateways", "acme", "Ready", "True", None)
        .await;
    // Paused while deleting: the finalizer stays until unpaused.
    bed.op
        .settings()
        .write()
        .unwrap()
        .gateway_mut("tenant-acme/acme")
        .paused = true;
    tokio::time::sleep(Duration::from_millis(60)).await;
    bed.delete("vpngateways", "acme");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(bed.get("vpngateways", "acme").is_some());
    assert!(bed.get("deployments", "acme").is_some());
    bed.op
        .settings()
        .write()
        .unwrap()
        .gateway_mut("tenant-acme/acme")
        .paused = false;
    bed.gone("vpngateways", "acme").await;
}

// ---- client peers ---------------------------------------------------------------------------

#[tokio::test]
async fn the_client_re_initiates_after_its_retry_delay() {
    let bed = Bed::new(settings(|s| s.peer_retry_ms = 400));
    bed.apply(psk_secret("acme-psk", "k"));
    bed.apply(vpn_gw("acme", Some(FIP), Some(CIDR)));
    let peer = || vpn_peer("acme", "acme", "203.0.113.10", &["10.20.0.0/16"], None);
    bed.apply(peer());
    // A client seen for the first time was already connected: it is up at once.
    bed.wait_cond("vpnpeers", "acme", "Established", "True", None)
        .await;
    // Its tunnel goes away (the peer is re-created, as in a cutover): the client
    // re-initiates only after its retry delay.
    bed.delete("vpnpeers", "acme");
    bed.gone("vpnpeers", "acme").await;
    let t0 = Instant::now();
    bed.apply(peer());
    bed.wait_cond(
        "vpnpeers",
        "acme",
        "Established",
        "False",
        Some("WaitingForPeer"),
    )
    .await;
    bed.wait_cond("vpnpeers", "acme", "Established", "True", None)
        .await;
    assert!(
        t0.elapsed() >= Duration::from_millis(400),
        "{:?}",
        t0.elapsed()
    );
}

/// `swanctl --initiate` in the pod (issue 12 item 2): the gateway starts the tunnel at
/// once instead of waiting for the client's retry timer, but only when strongSwan would
/// get it up (FIP attached, PSK matching, proposals intersecting), with its error lines
/// otherwise; `--list-conns` names the CHILD SAs.
#[tokio::test]
async fn swanctl_initiate_brings_the_tunnel_up_at_once_when_strongswan_would() {
    let bed = Bed::new(settings(|s| s.peer_retry_ms = 60_000));
    bed.apply(psk_secret("acme-psk", "k"));
    bed.apply(vpn_gw("acme", Some(FIP), Some(CIDR)));
    let peer = || vpn_peer("acme", "acme", "203.0.113.10", &["10.20.0.0/16"], None);
    bed.apply(peer());
    bed.wait_cond("vpnpeers", "acme", "Established", "True", None)
        .await;
    // The tunnel goes away; the client would be back only after a minute.
    bed.delete("vpnpeers", "acme");
    bed.gone("vpnpeers", "acme").await;
    bed.apply(peer());
    bed.wait_cond(
        "vpnpeers",
        "acme",
        "Established",
        "False",
        Some("WaitingForPeer"),
    )
    .await;
    let pod = bed.wait_pod("acme").await;
    let conns = bed.exec(&pod, &["swanctl", "--list-conns"]);
    assert_eq!(conns.exit_code, 0);
    assert!(
        conns.stdout.contains(&format!(
            "acme: IKEv2, no reauthentication, rekeying every 77760s\n  local:  {FIP}\n  remote: 203.0.113.10\n"
        )),
        "{}",
        conns.stdout
    );
    assert!(
        conns
            .stdout
            .contains("  acme: TUNNEL, rekeying every 3240s\n")
    );
    let initiate = |child: &str| {
        bed.exec(
            &pod,
            &["swanctl", "--initiate", "--child", child, "--timeout", "10"],
        )
    };
    let fault = |f: &dyn Fn(&mut GatewayFaults)| {
        f(bed
            .op
            .settings()
            .write()
            .unwrap()
            .gateway_mut(&format!("{NS}/acme")));
    };
    let failed = |child: &str| format!("initiate failed: establishing CHILD_SA '{child}' failed\n");
    // (fault, stdout line, stderr)
    type Fault<'a> = &'a dyn Fn(&mut GatewayFaults);
    let table: [(Fault, &str, String); 2] = [
        (
            &|f| f.psk_mismatch = true,
            "[IKE] received AUTHENTICATION_FAILED notify error",
            failed("acme"),
        ),
        (
            &|f| f.client_refuses_initiation = true,
            "[IKE] establishing IKE_SA failed, peer not responding",
            failed("acme"),
        ),
    ];
    for (set, line, stderr) in table {
        fault(set);
        let out = initiate("acme");
        assert_eq!((out.exit_code, out.stderr.clone()), (1, stderr), "{line}");
        assert!(out.stdout.contains(line), "{}", out.stdout);
        fault(&|f| *f = Default::default());
    }
    let out = initiate("nope");
    assert_eq!(
        (out.exit_code, out.stderr.as_str()),
        (1, "initiate failed: CHILD_SA config 'nope' not found\n")
    );
    let t0 = Instant::now();
    let out = initiate("acme");
    assert_eq!(out.exit_code, 0, "{out:?}");
    assert!(out.stdout.ends_with("initiate completed successfully\n"));
    assert!(
        out.stdout
            .contains(&format!("and TS {CIDR} === 10.20.0.0/16\n"))
    );
    bed.wait_cond("vpnpeers", "acme", "Established", "True", None)
        .await;
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    // The gateway initiated: its SPI is the initiator's.
    let head = bed
        .list_sas("acme")
        .await
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert!(head.contains("_i* ") && head.ends_with("_r"), "{head}");
    // A peer whose configuration changed the selector: the CHILD SA is negotiated with it.
    fault(&|f| f.local_ts_override = Some("10.0.0.0/8".into()));
    bed.op.kick();
    bed.until("the CHILD SA with the other selector", || {
        Some(()).filter(|_| {
            bed.exec(&pod, &["swanctl", "--list-sas"])
                .stdout
                .contains("    local  10.0.0.0/8\n")
        })
    })
    .await;
}

#[tokio::test]
async fn the_client_keeps_the_config_of_the_first_gateway_it_talked_to() {
    let bed = Bed::new(Settings::default());
    old_acme(&bed);
    bed.until("the old tunnel's SA", || {
        let out = bed
            .exec(&bed.pod("acme")?, &["swanctl", "--list-sas"])
            .stdout;
        (!out.is_empty()).then_some(())
    })
    .await;
    let clients = bed.op.clients();
    assert_eq!(clients.len(), 1);
    assert_eq!(
        (
            clients[0].floating_ip.as_str(),
            clients[0].local_subnets.clone()
        ),
        (FIP, vec!["10.20.0.0/16".to_string()])
    );
    bed.delete("ipsecgateways", "acme");
    bed.gone("ipsecgateways", "acme").await;
    // New gateway, same FIP and CIDR, but a Secret with other content: the client's PSK
    // no longer matches.
    bed.apply(psk_secret("acme-psk-new", "battery staple"));
    new_acme(&bed, "acme-psk-new");
    bed.wait_cond(
        "vpnpeers",
        "acme",
        "Established",
        "False",
        Some("AuthenticationFailed"),
    )
    .await;
    // Point it at the old Secret (same content): up.
    bed.edit("vpnpeers", "acme", |o| {
        o["spec"]["ipsec"]["pskSecretRef"]["name"] = json!("acme-psk")
    });
    bed.wait_cond("vpnpeers", "acme", "Established", "True", None)
        .await;
    // IKE proposals the client does not have: NO_PROPOSAL_CHOSEN.
    bed.edit("vpngateways", "acme", |o| {
        o["spec"]["ipsec"]["ike"]["proposals"] = json!(["aes256gcm16-prfsha384-ecp384"])
    });
    bed.wait_cond(
        "vpnpeers",
        "acme",
        "Established",
        "False",
        Some("NoProposalChosen"),
    )
    .await;
    bed.edit("vpngateways", "acme", |o| {
        o["spec"]["ipsec"]["ike"]["proposals"] =
            json!(["aes256gcm16-prfsha384-ecp384", "aes256-sha256-modp2048"])
    });
    bed.wait_cond("vpnpeers", "acme", "Established", "True", None)
        .await;
    // A serviceCIDR the client does not route: IKE up, no CHILD SA.
    bed.edit("vpngateways", "acme", |o| {
        o["spec"]["serviceCIDR"] = json!("10.250.9.0/24")
    });
    bed.wait_cond(
        "vpnpeers",
        "acme",
        "Established",
        "False",
        Some("TSUnacceptable"),
    )
    .await;
    let sas = bed.list_sas("acme").await;
    assert!(
        sas.starts_with("acme: #") && !sas.contains("INSTALLED"),
        "{sas}"
    );
}

// ---- swanctl ----------------------------------------------------------------------------------

#[tokio::test]
async fn swanctl_list_sas_one_peer() {
    let bed = Bed::new(Settings::default());
    old_acme(&bed);
    let pod = bed.wait_pod("acme").await;
    let out = bed
        .until("an SA", || {
            Some(bed.exec(&pod, &["swanctl", "--list-sas"]).stdout).filter(|s| !s.is_empty())
        })
        .await;
    assert_eq!(
        shape(&out),
        "main: #1, ESTABLISHED, IKEv2, SPI_i SPI_r*
  local  '198.51.100.23' @ 198.51.100.23[4500]
  remote 'fw.acme.example' @ 203.0.113.10[4500]
  AES_CBC-256/HMAC_SHA2_256_128/PRF_HMAC_SHA2_256/MODP_2048
  established Ns ago, rekeying in Ns
  main: #1, reqid 1, INSTALLED, TUNNEL, ESP:AES_GCM_16-256
    installed Ns ago, rekeying in Ns, expires in Ns
    in  cSPI, N bytes, N packets, Ns ago
    out cSPI, N bytes, N packets, Ns ago
    local  10.250.0.0/24
    remote 10.20.0.0/16
"
    );
    assert!(
        out.contains("established 0s ago, rekeying in 77760s")
            || out.contains("established 1s ago"),
        "{out}"
    );
}

#[tokio::test]
async fn swanctl_list_sas_two_peers_and_a_mismatched_psk_has_no_sa() {
    let bed = Bed::new(Settings::default());
    bed.apply(psk_secret("acme-psk", "k"));
    bed.apply(psk_secret("other-psk", "wrong"));
    bed.apply(vpn_gw("acme", Some(FIP), Some(CIDR)));
    bed.apply(vpn_peer(
        "acme-hq",
        "acme",
        "203.0.113.10",
        &["10.20.0.0/16"],
        Some(json!({"exposures": ["crm"]})),
    ));
    bed.wait_cond("vpnpeers", "acme-hq", "Established", "True", None)
        .await;
    bed.apply(vpn_peer(
        "acme-branch",
        "acme",
        "203.0.113.11",
        &["10.21.0.0/16"],
        Some(json!({"exposures": ["erp"]})),
    ));
    bed.wait_cond("vpnpeers", "acme-branch", "Established", "True", None)
        .await;
    let out = bed.list_sas("acme").await;
    let heads: Vec<&str> = out.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(heads.len(), 2, "{out}");
    assert!(
        heads[0].starts_with("acme-hq: #1, ESTABLISHED, IKEv2, ")
            && heads[1].starts_with("acme-branch: #2, ESTABLISHED, IKEv2, "),
        "{out}"
    );
    assert!(
        out.contains("  acme-hq: #1, reqid 1, INSTALLED, TUNNEL, ESP:AES_GCM_16-256\n"),
        "{out}"
    );
    assert!(
        out.contains("  acme-branch: #2, reqid 2, INSTALLED, TUNNEL, ESP:AES_GCM_16-256\n"),
        "{out}"
    );
    assert!(
        out.contains("  remote 'fw-acme-branch.example' @ 203.0.113.11[4500]\n"),
        "{out}"
    );

    // A third peer whose client was configured with another PSK: no SA for it.
    bed.op
        .settings()
        .write()
        .unwrap()
        .clients
        .push(vpnmig_sandbox::operator::ClientSettings {
            namespace: NS.into(),
            address: "203.0.113.12".into(),
            psk: Some("not the secret".into()),
            ..Default::default()
        });
    bed.apply(vpn_peer(
        "acme-lab",
        "acme",
        "203.0.113.12",
        &["10.22.0.0/16"],
        Some(json!({"exposures": ["crm"]})),
    ));
    bed.wait_cond(
        "vpnpeers",
        "acme-lab",
        "Established",
        "False",
        Some("AuthenticationFailed"),
    )
    .await;
    let out = bed.list_sas("acme").await;
    assert!(!out.contains("acme-lab"), "{out}");
    assert_eq!(out.lines().filter(|l| !l.starts_with(' ')).count(), 2);
}

#[tokio::test]
async fn swanctl_one_child_sa_per_remote_subnet_and_raw() {
    let bed = Bed::new(Settings::default());
    bed.apply(psk_secret("acme-psk", "k"));
    bed.apply(ipsec_gw(
        "acme",
        Some(FIP),
        vec![tunnel(
            "main",
            "203.0.113.10",
            "fw.acme.example",
            &["10.20.0.0/16", "192.168.20.0/24"],
        )],
    ));
    let pod = bed.wait_pod("acme").await;
    let out = bed
        .until("an SA", || {
            Some(bed.exec(&pod, &["swanctl", "--list-sas"]).stdout).filter(|s| !s.is_empty())
        })
        .await;
    let shaped = shape(&out);
    assert!(
        shaped.ends_with(
            "  main-1: #1, reqid 1, INSTALLED, TUNNEL, ESP:AES_GCM_16-256
    installed Ns ago, rekeying in Ns, expires in Ns
    in  cSPI, N bytes, N packets, Ns ago
    out cSPI, N bytes, N packets, Ns ago
    local  10.250.0.0/24
    remote 10.20.0.0/16
  main-2: #2, reqid 2, INSTALLED, TUNNEL, ESP:AES_GCM_16-256
    installed Ns ago, rekeying in Ns, expires in Ns
    in  cSPI, N bytes, N packets, Ns ago
    out cSPI, N bytes, N packets, Ns ago
    local  10.250.0.0/24
    remote 192.168.20.0/24
"
        ),
        "{out}"
    );
    let raw = bed.exec(&pod, &["swanctl", "--list-sas", "--raw"]);
    assert_eq!(raw.exit_code, 0);
    let lines: Vec<&str> = raw.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", raw.stdout);
    assert!(lines[0].starts_with("list-sa event {main {uniqueid=1 version=2 state=ESTABLISHED local-host=198.51.100.23 local-port=4500 local-id=198.51.100.23 remote-host=203.0.113.10 remote-port=4500 remote-id=fw.acme.example "), "{}", lines[0]);
    assert!(lines[0].contains(" encr-alg=AES_CBC encr-keysize=256 integ-alg=HMAC_SHA2_256_128 prf-alg=PRF_HMAC_SHA2_256 dh-group=MODP_2048 established="), "{}", lines[0]);
    assert!(lines[0].contains("child-sas {main-1-1 {name=main-1 uniqueid=1 reqid=1 state=INSTALLED mode=TUNNEL protocol=ESP spi-in=c"), "{}", lines[0]);
    assert!(
        lines[0].contains("local-ts=[10.250.0.0/24] remote-ts=[192.168.20.0/24]}}}}"),
        "{}",
        lines[0]
    );
    assert_eq!(lines[1], "list-sas reply {}");
}

#[tokio::test]
async fn exec_answers_only_swanctl_in_an_existing_gateway_pod() {
    let bed = Bed::new(Settings::default());
    old_acme(&bed);
    let pod = bed.wait_pod("acme").await;
    let out = bed.exec(&pod, &["ls", "/"]);
    assert_eq!(
        (out.exit_code, out.stderr.as_str()),
        (127, "ls: command not found\n")
    );
    let out = bed.exec(&pod, &["swanctl", "--load-all"]);
    assert_eq!(out.exit_code, 1);
    assert!(out.stderr.contains("usage:"), "{out:?}");
    let out = bed.exec(&pod, &["swanctl"]);
    assert_eq!(out.exit_code, 1);
    let out = bed.exec("acme-nope-12345", &["swanctl", "--list-sas"]);
    assert_eq!(out.exit_code, 1);
    assert!(out.stderr.contains("not found"), "{out:?}");
    let out = bed.op.exec(
        NS,
        &pod,
        "sidecar",
        &["swanctl".to_string(), "--list-sas".to_string()],
    );
    assert_eq!(out.exit_code, 1);
    assert!(out.stderr.contains("container not found"), "{out:?}");
    // A deleted pod is recreated (like a ReplicaSet would) and strongSwan in it starts
    // counting again.
    bed.until("SA", || {
        (!bed.exec(&pod, &["swanctl", "-l"]).stdout.is_empty()).then_some(())
    })
    .await;
    bed.delete("pods", &pod);
    let new_pod = bed
        .until("a new pod", || bed.pod("acme").filter(|p| *p != pod))
        .await;
    let out = bed
        .until("SA in the new pod", || {
            Some(bed.exec(&new_pod, &["swanctl", "--list-sas"]).stdout).filter(|s| !s.is_empty())
        })
        .await;
    assert!(out.starts_with("main: #1, "), "{out}");
}

// ---- steady state ---------------------------------------------------------------------------

#[tokio::test]
async fn objects_loaded_with_status_keep_their_fip_cidr_and_virtual_ips() {
    let bed = Bed::new(Settings::default());
    bed.apply(psk_secret("acme-psk", "k"));
    let mut gw = ipsec_gw(
        "acme",
        None,
        vec![tunnel(
            "main",
            "203.0.113.10",
            "fw.acme.example",
            &["10.20.0.0/16"],
        )],
    );
    gw["status"] = json!({
        "floatingIP": "198.51.100.170",
        "serviceCIDR": "10.250.41.0/24",
        "exposures": [{"name": "crm", "virtualIP": "10.250.41.10"}],
        "conditions": [{"type": "FIPAttached", "status": "True", "reason": "Associated", "message": "m", "lastTransitionTime": "2025-08-19T07:02:13Z"}]
    });
    let rt = rt(&bed.store, "ipsecgateways");
    bed.store
        .create(
            &rt,
            NS,
            gw,
            &WriteOptions {
                keep_status: true,
                ..Default::default()
            },
        )
        .unwrap();
    let c = bed
        .wait_cond("ipsecgateways", "acme", "Ready", "True", None)
        .await;
    assert_eq!(c["observedGeneration"], 1);
    let status = bed.get("ipsecgateways", "acme").unwrap()["status"].clone();
    assert_eq!(
        status["floatingIP"], "198.51.100.170",
        "an unpinned FIP the operator allocated before is kept"
    );
    assert_eq!(status["serviceCIDR"], "10.250.41.0/24");
    assert_eq!(
        status["exposures"],
        json!([{"name": "crm", "virtualIP": "10.250.41.10"}])
    );
    assert_eq!(
        bed.cond("ipsecgateways", "acme", "FIPAttached").unwrap()["lastTransitionTime"],
        "2025-08-19T07:02:13Z"
    );
    // Pinning it (vpnmig's fix for an unpinned FIP) keeps it attached and stops it from
    // being released.
    bed.edit("ipsecgateways", "acme", |o| {
        o["spec"]["endpoint"]["floatingIP"] = json!("198.51.100.170")
    });
    bed.until("generation 2 observed", || {
        (bed.get("ipsecgateways", "acme")?
            .pointer("/status/observedGeneration")?
            == 2)
            .then_some(())
    })
    .await;
    bed.delete("ipsecgateways", "acme");
    bed.gone("ipsecgateways", "acme").await;
    let fips = bed.op.floating_ips();
    assert!(
        fips.reserved.contains(&"198.51.100.170".to_string()) && fips.allocated.is_empty(),
        "{fips:?}"
    );
}

#[tokio::test]
async fn the_operator_is_quiet_once_everything_converged() {
    let bed = Bed::new(settings(|s| s.peer_retry_ms = 100));
    old_acme(&bed);
    bed.apply(vpn_gw("beta", None, None));
    bed.apply(vpn_peer(
        "beta-hq",
        "beta",
        "203.0.113.20",
        &["10.30.0.0/16"],
        Some(json!({"exposures": ["crm"]})),
    ));
    bed.apply(vpn_peer(
        "beta-branch",
        "beta",
        "203.0.113.21",
        &["10.31.0.0/16"],
        None,
    ));
    bed.wait_cond("ipsecgateways", "acme", "Ready", "True", None)
        .await;
    bed.wait_cond("vpnpeers", "beta-hq", "Established", "True", None)
        .await;
    bed.wait_cond(
        "vpnpeers",
        "beta-branch",
        "Authorized",
        "False",
        Some("NoGrants"),
    )
    .await;
    bed.wait_cond("vpnpeers", "beta-branch", "Established", "True", None)
        .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let rv = bed.store.resource_version();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let events = bed.store.events_after(rv).unwrap();
    assert!(
        events.is_empty(),
        "no writes without a change: {:?}",
        events
            .iter()
            .map(|e| (&e.gvr.plural, &e.object["metadata"]["name"]))
            .collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn a_new_gateway_with_another_psk_is_caught_not_learned() {
    // The client is configured from the existing gateway (the customer's firewall
    // does not change at the window): a new gateway with another PSK never comes up.
    let bed = Bed::new(Settings::default());
    old_acme(&bed);
    bed.until("the old tunnel's SA", || {
        let out = bed
            .exec(&bed.pod("acme")?, &["swanctl", "--list-sas"])
            .stdout;
        (!out.is_empty()).then_some(())
    })
    .await;
    bed.delete("ipsecgateways", "acme");
    bed.gone("ipsecgateways", "acme").await;
    bed.apply(psk_secret("typo-psk", "correct horse battery"));
    new_acme(&bed, "typo-psk");
    bed.wait_cond(
        "vpnpeers",
        "acme",
        "Established",
        "False",
        Some("AuthenticationFailed"),
    )
    .await;
    assert_eq!(bed.list_sas("acme").await, "");
}

// ---- the operator's kube::Client backend, against the emulator's HTTP API ---------------

#[path = "common/mod.rs"]
mod common;

/// `KubeApi` (the operator over a Kubernetes API server) keeps another writer's change:
/// a read-modify-write whose PUT lost the race (409) is read and edited again, bounded;
/// a status write goes through the status subresource (a spec change in it is dropped);
/// its writes carry the operator's field manager; a missing object is NotFound, not a
/// write. Rows, each one call of `modify`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_api_retries_a_lost_race_and_writes_status_through_the_subresource() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use vpnmig_sandbox::operator::OperatorApi;
    use vpnmig_sandbox::operator::kube::KubeApi;
    let mut settings = vpnmig_sandbox::SettingsFile::default();
    // The emulator's own operator leaves acme alone: the only writers are the rows'.
    settings.operator.gateway_mut("tenant-acme/acme").paused = true;
    let sb = common::start(common::ACME, settings).await;
    let api = KubeApi::new(common::client(&sb, None).await);
    let store = sb.store.clone();
    let rows = tokio::task::spawn_blocking(move || {
        let rt = api
            .resource("ipsec.bnerd.net", "v1alpha1", "ipsecgateways")
            .unwrap();
        let mut rows = Vec::new();
        // A race lost once: another writer labels it between the read and the PUT.
        let calls = AtomicUsize::new(0);
        let raced = api.modify(&rt, NS, "acme", false, &|cur| {
            if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                store
                    .modify(&rt, NS, "acme", false, &WriteOptions::default(), |o| {
                        let mut o = o.clone();
                        o["metadata"]["labels"]["other-writer"] = json!("was-here");
                        Ok(o)
                    })
                    .unwrap();
            }
            let mut o = cur.clone();
            o["metadata"]["annotations"] = json!({"example.com/touched": "yes"});
            Ok(o)
        });
        rows.push(("lost race", raced, calls.load(Ordering::SeqCst)));
        // Always losing: bounded.
        let calls = AtomicUsize::new(0);
        let always = api.modify(&rt, NS, "acme", false, &|cur| {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            store
                .modify(&rt, NS, "acme", false, &WriteOptions::default(), |o| {
                    let mut o = o.clone();
                    o["metadata"]["labels"]["round"] = json!(n.to_string());
                    Ok(o)
                })
                .unwrap();
            let mut o = cur.clone();
            o["metadata"]["annotations"]["example.com/never"] = json!("written");
            Ok(o)
        });
        rows.push(("always losing", always, calls.load(Ordering::SeqCst)));
        // Status through the subresource; the spec change beside it is not written.
        let calls = AtomicUsize::new(0);
        let status = api.modify(&rt, NS, "acme", true, &|cur| {
            calls.fetch_add(1, Ordering::SeqCst);
            let mut o = cur.clone();
            o["status"]["floatingIP"] = json!("198.51.100.99");
            o["spec"]["endpoint"]["floatingIP"] = json!("198.51.100.99");
            Ok(o)
        });
        rows.push(("status", status, calls.load(Ordering::SeqCst)));
        let calls = AtomicUsize::new(0);
        let missing = api.modify(&rt, NS, "nope", false, &|cur| {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(cur.clone())
        });
        rows.push(("missing", missing, calls.load(Ordering::SeqCst)));
        rows
    })
    .await
    .unwrap();
    let managers = |o: &Value| -> Vec<String> {
        o["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                format!(
                    "{} {}",
                    m["manager"].as_str().unwrap(),
                    m["operation"].as_str().unwrap()
                )
            })
            .collect()
    };
    for (what, got, calls) in rows {
        match what {
            "lost race" => {
                let o = got.unwrap();
                assert_eq!(calls, 2, "{what}");
                assert_eq!(
                    o["metadata"]["labels"]["other-writer"], "was-here",
                    "{what}: {o}"
                );
                assert_eq!(
                    o["metadata"]["annotations"]["example.com/touched"], "yes",
                    "{what}: {o}"
                );
                assert!(
                    managers(&o).contains(&"gateway-operator Update".to_string()),
                    "{what}: {o}"
                );
            }
            "always losing" => {
                let e = got.unwrap_err();
                assert_eq!(
                    (e.code, calls),
                    (409, vpnmig_sandbox::operator::kube::CONFLICT_RETRIES),
                    "{what}: {e:?}"
                );
            }
            "status" => {
                let o = got.unwrap();
                assert_eq!(calls, 1, "{what}");
                assert_eq!(o["status"]["floatingIP"], "198.51.100.99", "{what}: {o}");
                assert_eq!(o["spec"]["endpoint"]["floatingIP"], FIP, "{what}: {o}");
            }
            "missing" => {
                let e = got.unwrap_err();
                assert_eq!(
                    (e.code, e.reason, calls),
                    (404, "NotFound", 0),
                    "{what}: {e:?}"
                );
            }
            _ => unreachable!(),
        }
    }
    sb.shutdown().await;
}
