//! Windows that cannot hurt a bystander (issue 14 items 1–4; DESIGN.md §4.8), end to end
//! against vpnmig-sandbox: no path deletes a gateway that does not pin the journal's
//! floating IP, acts on an object that differs from what the journal recorded, or
//! deletes a VPNPeer it cannot prove is the window's.

mod live;

use live::{ACME, Live, journal, objects, phase, start};
use serde_json::{Value, json};
use vpnmig_sandbox::SettingsFile;

const GLOBEX: &str = include_str!("../fixtures/clusters/globex-peer-names.yaml");

/// Change `kind/name` in the sandbox's store as another client would (a hand edit).
fn edit(l: &Live, plural: &str, ns: &str, name: &str, f: impl FnOnce(&mut Value)) {
    let group = if plural == "ipsecgateways" {
        "ipsec.bnerd.net"
    } else {
        "vpn.bnerd.net"
    };
    let rt = l.sb.store.resource(group, "v1alpha1", plural).unwrap();
    let mut obj = l.sb.store.get(&rt, ns, name).unwrap();
    f(&mut obj);
    l.sb.store
        .update(&rt, ns, name, obj, false, &Default::default())
        .unwrap();
}

fn names(objs: &[Value]) -> Vec<String> {
    let mut n: Vec<String> = objs
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    n.sort();
    n
}

/// A cutover of acme, then a rollback that loses the serviceCIDR (the default pool hands
/// out another /24): the journal is at old-applied, where `cutover --forward` applies.
async fn acme_rolled_back_with_lost_addresses() -> Live {
    let l = start(ACME, SettingsFile::default()).await;
    let r = l.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = l.vpnmig(&["rollback", "acme", "--yes"]).await;
    assert_eq!(r.code, 5, "{}", r.stderr);
    assert_eq!(
        phase(&l, "tenant-acme", "acme").as_deref(),
        Some("old-applied")
    );
    l
}

/// What must hold after a refused `--forward`: the re-created IPsecGateway is still
/// there, nothing of the new kinds exists, the floating IP was never released.
fn forward_refused_nothing_changed(l: &Live, fip: &str) {
    let fips = l.sb.operator.floating_ips();
    assert!(fips.released.is_empty(), "FIP released: {fips:?}");
    assert_eq!(
        names(&objects(
            l,
            "ipsec.bnerd.net",
            "ipsecgateways",
            "tenant-acme"
        )),
        ["acme"]
    );
    assert!(objects(l, "vpn.bnerd.net", "vpngateways", "tenant-acme").is_empty());
    assert!(!fips.free.contains(&fip.to_string()), "{fips:?}");
    assert_eq!(
        phase(l, "tenant-acme", "acme").as_deref(),
        Some("old-applied")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forward_never_deletes_a_recreated_gateway_whose_fip_was_unpinned() {
    let l = acme_rolled_back_with_lost_addresses().await;
    edit(&l, "ipsecgateways", "tenant-acme", "acme", |g| {
        g["spec"]["endpoint"]
            .as_object_mut()
            .unwrap()
            .remove("floatingIP");
    });
    let r = l.vpnmig(&["cutover", "acme", "--forward", "--yes"]).await;
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(
        r.says("--forward: ipsecgateway/acme -n tenant-acme is not the one the journal recorded (1 field(s) differ, above)"),
        "{}",
        r.stderr
    );
    assert!(r.says("spec.endpoint.floatingIP"), "{}", r.stderr);
    assert!(r.says("198.51.100.23"), "{}", r.stderr);
    forward_refused_nothing_changed(&l, "198.51.100.23");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forward_never_drops_an_edit_of_the_recreated_gateway() {
    let l = acme_rolled_back_with_lost_addresses().await;
    // An exposure added to the re-created gateway (a tunnel added is the same kind:
    // `core::scope` unit tests; here its client could never connect).
    edit(&l, "ipsecgateways", "tenant-acme", "acme", |g| {
        g["spec"]["exposures"].as_array_mut().unwrap().push(json!({
            "name": "erp", "protocol": "TCP",
            "target": {"address": "erp.tenant-acme.svc", "port": 8443}
        }));
    });
    let r = l.vpnmig(&["cutover", "acme", "--forward", "--yes"]).await;
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(r.says("spec.exposures[1]"), "{}", r.stderr);
    assert!(r.says("erp.tenant-acme.svc"), "{}", r.stderr);
    assert!(
        r.says("close the journal with `vpnmig rollback acme -n tenant-acme --accept-new-addresses --yes`, then plan the edited gateway"),
        "{}",
        r.stderr
    );
    forward_refused_nothing_changed(&l, "198.51.100.23");
    // The advice works from here: the rollback closes the journal and keeps the edited
    // gateway (nothing of the new kinds to delete), and a new plan is of the edit.
    let r = l
        .vpnmig(&["rollback", "acme", "--yes", "--accept-new-addresses"])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.says("note: the tunnels were not waited for: they come up once the client uses the new addresses; `vpnmig verify acme -n tenant-acme --wait` checks them"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.contains("NOT HEALTHY"), "{}", r.stdout);
    assert_eq!(
        phase(&l, "tenant-acme", "acme").as_deref(),
        Some("rolled-back"),
        "{}",
        r.stderr
    );
    let gw = &objects(&l, "ipsec.bnerd.net", "ipsecgateways", "tenant-acme")[0];
    assert_eq!(gw["spec"]["exposures"][1]["name"], "erp");
    let r = l.vpnmig(&["plan", "acme", "-o", "json"]).await;
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    let exposures = &plan["targets"]["gateway"]["spec"]["exposures"];
    assert_eq!(exposures[1]["name"], "erp", "{}", r.stdout);
}

/// globex (tunnels main, east) and globex-east (one tunnel) both name a peer globex-east.
async fn globex_east_migrated_and_a_globex_bundle() -> (Live, tempfile::TempDir) {
    let s = live::pool("10.250.62.0/24");
    let l = start(GLOBEX, s).await;
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("globex.json");
    let rt =
        l.sb.store
            .resource("ipsec.bnerd.net", "v1alpha1", "ipsecgateways")
            .unwrap();
    let old = l.sb.store.get(&rt, "tenant-globex", "globex").unwrap();
    std::fs::write(&export, serde_json::to_string(&old).unwrap()).unwrap();
    let bundle = dir.path().join("globex");
    let r = l
        .vpnmig(&[
            "plan",
            "-f",
            export.to_str().unwrap(),
            "--out",
            bundle.to_str().unwrap(),
        ])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = l
        .vpnmig(&["cutover", "globex-east", "-n", "tenant-globex", "--yes"])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    (l, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_from_a_bundle_never_deletes_another_gateways_peer() {
    let (l, dir) = globex_east_migrated_and_a_globex_bundle().await;
    let bundle = dir.path().join("globex");
    let before = objects(&l, "vpn.bnerd.net", "vpnpeers", "tenant-globex");
    assert_eq!(names(&before), ["globex-east"]);
    let uid = before[0]["metadata"]["uid"].clone();

    let r = l
        .vpnmig(&[
            "rollback",
            "globex",
            "-n",
            "tenant-globex",
            "--plan",
            bundle.to_str().unwrap(),
            "--yes",
        ])
        .await;
    assert!(
        r.says("note: VPNPeer tenant-globex/globex-east is left alone: its spec.gatewayRef.name is `globex-east`, not `globex`"),
        "{}",
        r.stderr
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let after = objects(&l, "vpn.bnerd.net", "vpnpeers", "tenant-globex");
    assert_eq!(
        names(&after),
        ["globex-east"],
        "the bystander's peer is kept"
    );
    assert_eq!(after[0]["metadata"]["uid"], uid, "the very same object");
    assert!(l.sb.operator.floating_ips().released.is_empty());
    let r = l
        .vpnmig(&["verify", "globex-east", "-n", "tenant-globex"])
        .await;
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_refuses_over_a_peer_it_did_not_create_and_deletes_it_only_when_asked() {
    let s = live::pool("10.250.3.0/24");
    let l = start(ACME, s).await;
    let r = l.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    // Someone adds a second peer by hand after the window.
    let rt =
        l.sb.store
            .resource("vpn.bnerd.net", "v1alpha1", "vpnpeers")
            .unwrap();
    let mut extra = l.sb.store.get(&rt, "tenant-acme", "acme").unwrap();
    extra["metadata"] = json!({"name": "acme-lab", "namespace": "tenant-acme"});
    extra["spec"]["ipsec"]["peer"]["address"] = json!("203.0.113.77");
    l.sb.store
        .create(&rt, "tenant-acme", extra, &Default::default())
        .unwrap();

    let r = l.vpnmig(&["rollback", "acme", "--yes"]).await;
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(
        r.says("1 VPNPeer(s) reference gateway acme -n tenant-acme but were not created by its cutover: acme-lab"),
        "{}",
        r.stderr
    );
    assert!(r.says("nothing was changed"), "{}", r.stderr);
    assert!(r.says("--delete-extra-peers"), "{}", r.stderr);
    assert_eq!(phase(&l, "tenant-acme", "acme").as_deref(), Some("done"));
    assert_eq!(
        names(&objects(&l, "vpn.bnerd.net", "vpnpeers", "tenant-acme")),
        ["acme", "acme-lab"]
    );

    // The advised command works.
    let r = l
        .vpnmig(&["rollback", "acme", "--yes", "--delete-extra-peers"])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(objects(&l, "vpn.bnerd.net", "vpnpeers", "tenant-acme").is_empty());
    assert_eq!(
        phase(&l, "tenant-acme", "acme").as_deref(),
        Some("rolled-back")
    );
    assert!(l.sb.operator.floating_ips().released.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_journal_records_the_uids_of_what_the_window_applied() {
    let s = live::pool("10.250.3.0/24");
    let l = start(ACME, s).await;
    let r = l.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j = journal(&l, "tenant-acme", "acme").unwrap();
    let gw = &objects(&l, "vpn.bnerd.net", "vpngateways", "tenant-acme")[0];
    let peer = &objects(&l, "vpn.bnerd.net", "vpnpeers", "tenant-acme")[0];
    assert_eq!(
        j["targetUids"],
        json!([gw["metadata"]["uid"], peer["metadata"]["uid"]])
    );
}

/// Issue 9 item 1: the reference is the journal, never the live object. A window
/// interrupted after the apply, whose VPNGateway another field manager then changes,
/// must not end `done`; verify must fail the same field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_value_changed_after_the_apply_stops_the_window_and_fails_verify() {
    let mut s = live::pool("10.250.3.0/24");
    s.operator.peer_retry_ms = 3000;
    let l = start(ACME, s).await;
    let r = l
        .vpnmig(&["cutover", "acme", "--yes", "--timeout-tunnel", "1s"])
        .await;
    assert_eq!(r.code, 6, "{}", r.stderr);
    assert_eq!(phase(&l, "tenant-acme", "acme").as_deref(), Some("ready"));
    // Another team's tool moves the exposure's virtual IP (server-side apply, forced).
    let rt =
        l.sb.store
            .resource("vpn.bnerd.net", "v1alpha1", "vpngateways")
            .unwrap();
    let ops = json!({
        "apiVersion": "vpn.bnerd.net/v1alpha1", "kind": "VPNGateway",
        "metadata": {"name": "acme", "namespace": "tenant-acme"},
        "spec": {"exposures": [{"name": "crm", "protocol": "TCP",
            "target": {"address": "crm.tenant-acme.svc", "port": 443}, "virtualIP": "10.250.3.77"}]}
    });
    l.sb.store
        .apply(
            &rt,
            "tenant-acme",
            "acme",
            ops,
            "ops",
            true,
            false,
            &Default::default(),
        )
        .unwrap();

    let r = l.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 5, "{}", r.stderr);
    assert!(
        r.says("a pinned value differs from the journal, so the window cannot be done: VPNGateway tenant-acme/acme spec.exposures[crm].virtualIP: 10.250.3.77, the journal pins 10.250.3.10; last written by field manager ops"),
        "{}",
        r.stderr
    );
    assert_ne!(phase(&l, "tenant-acme", "acme").as_deref(), Some("done"));

    let r = l.vpnmig(&["verify", "acme"]).await;
    assert_eq!(r.code, 5, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(
            "10.250.3.77, the journal pins 10.250.3.10; last written by field manager ops"
        ),
        "{}",
        r.stdout
    );
}

/// Issue 9 item 3: a GitOps controller's self-heal re-creates the deleted IPsecGateway
/// while the cutover waits. The wait stops at once (not after its timeout) naming who
/// wrote it, the hint never says "deleted", and the advised rollback works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_gateway_recreated_during_the_window_stops_the_wait_at_once() {
    let mut s = live::pool("10.250.3.0/24");
    s.operator.peer_retry_ms = 4000;
    let l = start(ACME, s).await;
    let rt =
        l.sb.store
            .resource("ipsec.bnerd.net", "v1alpha1", "ipsecgateways")
            .unwrap();
    let mut in_git = l.sb.store.get(&rt, "tenant-acme", "acme").unwrap();
    in_git["metadata"] = json!({
        "name": "acme", "namespace": "tenant-acme",
        "labels": {"client": "acme", "app.kubernetes.io/instance": "tenants"},
        "annotations": {"argocd.argoproj.io/tracking-id": "tenants:ipsec.bnerd.net/IPsecGateway:tenant-acme/acme"}
    });
    in_git.as_object_mut().unwrap().remove("status");
    let started = std::time::Instant::now();
    let child = l.spawn(&["cutover", "acme", "--yes"]);
    live::eventually(30, "the delete to finish", || {
        phase(&l, "tenant-acme", "acme")
            .is_some_and(|p| p == "applied" || p == "attached" || p == "ready")
    })
    .await;
    // The self-heal: the gateway as it is in Git, applied by Argo CD's field manager.
    l.sb.store
        .apply(
            &rt,
            "tenant-acme",
            "acme",
            in_git,
            "argocd-controller",
            true,
            false,
            &Default::default(),
        )
        .unwrap();
    let r = live::finish(child).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "stopped long before the 5 minute tunnel timeout"
    );
    assert!(
        r.says("ipsecgateway/acme -n tenant-acme was re-created during the window"),
        "{}",
        r.stderr
    );
    assert!(r.says("field manager argocd-controller"), "{}", r.stderr);
    assert!(r.says("app.kubernetes.io/instance=tenants"), "{}", r.stderr);
    // Who wrote it, from its managedFields (attack A7).
    assert!(
        r.says("make sure nothing syncs it first: it was written by a GitOps controller's sync (field manager argocd-controller)"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("the IPsecGateway is deleted"),
        "{}",
        r.stderr
    );
    assert!(
        r.says("VPNGateway acme, VPNPeer acme (applied by this window) contend with it for the floating IP 198.51.100.23: `vpnmig rollback acme -n tenant-acme --yes` deletes them and keeps the re-created IPsecGateway"),
        "{}",
        r.stderr
    );

    // The advice works: the rollback keeps the re-created gateway and removes the new ones.
    let r = l.vpnmig(&["rollback", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(objects(&l, "vpn.bnerd.net", "vpngateways", "tenant-acme").is_empty());
    assert_eq!(
        names(&objects(
            &l,
            "ipsec.bnerd.net",
            "ipsecgateways",
            "tenant-acme"
        )),
        ["acme"]
    );
    assert!(l.sb.operator.floating_ips().released.is_empty());
}

/// Issue 9 item 7: `globex` (tunnel `east`) and `globex-east` (one tunnel) both derive
/// VPNPeer `globex-east`. The name's owner (the single-tunnel gateway named like it) is
/// READY; the other is blocked before either window with a way out that works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colliding_peer_names_block_the_later_gateway_with_a_way_out() {
    let s = live::pool("10.250.61.0/24");
    let l = start(GLOBEX, s).await;
    let r = l.vpnmig(&["status", "-n", "tenant-globex"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let line = |name: &str| {
        r.stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        line("globex").ends_with("peer-names-unique"),
        "{}",
        r.stdout
    );
    assert!(line("globex-east").ends_with("none"), "{}", r.stdout);

    let r = l.vpnmig(&["plan", "globex", "-n", "tenant-globex"]).await;
    assert_eq!(r.code, 4, "{}", r.stdout);
    assert!(
        live::flat(&r.stdout).contains("IPsecGateway tenant-globex/globex-east will create VPNPeer globex-east for its tunnel main and owns that name"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("never delete the other gateway's peer"),
        "{}",
        r.stdout
    );
    let owner = l
        .vpnmig(&["plan", "globex-east", "-n", "tenant-globex"])
        .await;
    assert_eq!(owner.code, 0, "{}", owner.stdout);
    assert!(
        owner.stdout.contains("peer-names-shared"),
        "{}",
        owner.stdout
    );

    // The way out: the advised --peer-name, recorded in the bundle and used by the cutover.
    let start = r.stdout.find("`vpnmig plan globex").unwrap();
    let advised = &r.stdout[start + 1..];
    let advised: Vec<&str> = advised[..advised.find('`').unwrap()]
        .split_whitespace()
        .skip(1)
        .collect();
    assert_eq!(
        advised,
        [
            "plan",
            "globex",
            "-n",
            "tenant-globex",
            "--peer-name",
            "east=globex-east-2"
        ]
    );
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("globex");
    let mut args = advised.clone();
    args.extend(["--out", bundle.to_str().unwrap()]);
    let r = l.vpnmig(&args).await;
    assert_eq!(r.code, 0, "{}", r.stdout);
    let r = l
        .vpnmig(&[
            "cutover",
            "globex",
            "-n",
            "tenant-globex",
            "--plan",
            bundle.to_str().unwrap(),
            "--yes",
        ])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = l
        .vpnmig(&["cutover", "globex-east", "-n", "tenant-globex", "--yes"])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let peers = objects(&l, "vpn.bnerd.net", "vpnpeers", "tenant-globex");
    let owners: Vec<(String, String)> = peers
        .iter()
        .map(|p| {
            (
                p["metadata"]["name"].as_str().unwrap().to_string(),
                p["spec"]["gatewayRef"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    let mut owners = owners;
    owners.sort();
    assert_eq!(
        owners,
        [
            ("globex-east".to_string(), "globex-east".to_string()),
            ("globex-east-2".to_string(), "globex".to_string()),
            ("globex-main".to_string(), "globex".to_string()),
        ]
    );
    assert!(l.sb.operator.floating_ips().released.is_empty());
}
