//! Windows that cannot hurt a bystander (issue 14 items 1–4; DESIGN.md §4.8), end to end
//! on the emulator and the real control plane (tests/live/bed.rs rows, one run per
//! backend): no path deletes a gateway that does not pin the journal's floating IP, acts on
//! an object that differs from what the journal recorded, or deletes a VPNPeer it cannot
//! prove is the window's.

mod live;

use live::bed::{Bed, IPSECGATEWAY, Row, Scenario, VPNGATEWAY, VPNPEER, eventually};
use live::{ACME, Run};
use serde_json::{Value, json};
use vpnmig_sandbox::SettingsFile;

const GLOBEX: &str = include_str!("../fixtures/clusters/globex-peer-names.yaml");

fn names(objs: &[Value]) -> Vec<String> {
    let mut n: Vec<String> = objs
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    n.sort();
    n
}

fn acme() -> Scenario {
    Scenario::new(ACME, SettingsFile::default())
}

/// acme, in a serviceCIDR pool that hands its /24 back to a rollback's IPsecGateway.
fn acme_in_its_pool() -> Scenario {
    Scenario::new(ACME, live::pool("10.250.3.0/24"))
}

/// The same, with the operator retrying a peer's tunnel only every `ms` milliseconds.
fn acme_in_its_pool_slow_peers(ms: u64) -> Scenario {
    let mut s = live::pool("10.250.3.0/24");
    s.operator.peer_retry_ms = ms;
    Scenario::new(ACME, s)
}

/// globex (tunnels main, east) and globex-east (one tunnel) both name a peer
/// globex-east, in a pool of one /24 (`cidr`).
fn globex(cidr: &str) -> Scenario {
    Scenario::new(GLOBEX, live::pool(cidr))
}

/// `vpnmig ARGS` ends with `code`.
async fn ends(b: &Bed, args: &[&str], code: i32) -> Run {
    let r = b.vpnmig(args).await;
    assert_eq!(
        r.code, code,
        "vpnmig {args:?} on the {}: {}\n{}",
        b.backend, r.stdout, r.stderr
    );
    r
}

/// A cutover of acme, then a rollback that loses the serviceCIDR (the default pool hands
/// out another /24): the journal is at old-applied, where `cutover --forward` applies.
async fn acme_rolled_back_with_lost_addresses(b: &Bed) {
    ends(b, &["cutover", "acme", "--yes"], 0).await;
    ends(b, &["rollback", "acme", "--yes"], 5).await;
    assert_eq!(
        b.phase("tenant-acme", "acme").await.as_deref(),
        Some("old-applied"),
        "{}",
        b.backend
    );
}

/// What must hold after a refused `--forward`: the re-created IPsecGateway is still
/// there, nothing of the new kinds exists, the floating IP was never released.
async fn forward_refused_nothing_changed(b: &Bed, fip: &str) {
    let on = b.backend;
    let fips = b.operator.floating_ips();
    assert!(fips.released.is_empty(), "{on}: FIP released: {fips:?}");
    assert_eq!(
        names(&b.objects(IPSECGATEWAY, "tenant-acme").await),
        ["acme"],
        "{on}"
    );
    assert!(
        b.objects(VPNGATEWAY, "tenant-acme").await.is_empty(),
        "{on}"
    );
    assert!(!fips.free.contains(&fip.to_string()), "{on}: {fips:?}");
    assert_eq!(
        b.phase("tenant-acme", "acme").await.as_deref(),
        Some("old-applied"),
        "{on}"
    );
}

crate::rows! {
    forward_never_deletes_a_recreated_gateway_whose_fip_was_unpinned: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(forward_never_deletes_a_recreated_gateway_whose_fip_was_unpinned(b)),
    },
    forward_never_drops_an_edit_of_the_recreated_gateway: Row {
        scenario: acme,
        only: None,
        after: None,
        steps: |b| Box::pin(forward_never_drops_an_edit_of_the_recreated_gateway(b)),
    },
    rollback_from_a_bundle_never_deletes_another_gateways_peer: Row {
        scenario: || globex("10.250.62.0/24"),
        only: None,
        after: None,
        steps: |b| Box::pin(rollback_from_a_bundle_never_deletes_another_gateways_peer(b)),
    },
    rollback_refuses_over_a_peer_it_did_not_create_and_deletes_it_only_when_asked: Row {
        scenario: acme_in_its_pool,
        only: None,
        after: None,
        steps: |b| Box::pin(rollback_refuses_over_a_peer_it_did_not_create_and_deletes_it_only_when_asked(b)),
    },
    the_journal_records_the_uids_of_what_the_window_applied: Row {
        scenario: acme_in_its_pool,
        only: None,
        after: None,
        steps: |b| Box::pin(the_journal_records_the_uids_of_what_the_window_applied(b)),
    },
    /// Issue 9 item 1: the reference is the journal, never the live object. A window
    /// interrupted after the apply, whose VPNGateway another field manager then changes,
    /// must not end `done`; verify must fail the same field.
    a_pinned_value_changed_after_the_apply_stops_the_window_and_fails_verify: Row {
        scenario: || acme_in_its_pool_slow_peers(3000),
        only: None,
        after: None,
        steps: |b| Box::pin(a_pinned_value_changed_after_the_apply_stops_the_window_and_fails_verify(b)),
    },
    /// Issue 9 item 3: a GitOps controller's self-heal re-creates the deleted IPsecGateway
    /// while the cutover waits. The wait stops at once (not after its timeout) naming who
    /// wrote it, the hint never says "deleted", and the advised rollback works.
    an_old_gateway_recreated_during_the_window_stops_the_wait_at_once: Row {
        scenario: || acme_in_its_pool_slow_peers(4000),
        only: None,
        after: None,
        steps: |b| Box::pin(an_old_gateway_recreated_during_the_window_stops_the_wait_at_once(b)),
    },
    /// Issue 9 item 7: `globex` (tunnel `east`) and `globex-east` (one tunnel) both derive
    /// VPNPeer `globex-east`. The name's owner (the single-tunnel gateway named like it) is
    /// READY; the other is blocked before either window with a way out that works.
    colliding_peer_names_block_the_later_gateway_with_a_way_out: Row {
        scenario: || globex("10.250.61.0/24"),
        only: None,
        after: None,
        steps: |b| Box::pin(colliding_peer_names_block_the_later_gateway_with_a_way_out(b)),
    },
}

/// globex-east migrated, and a bundle of globex planned from an export of it (in the bed's
/// directory): the bundle's path.
async fn globex_east_migrated_and_a_globex_bundle(b: &Bed) -> std::path::PathBuf {
    let dir = b.cwd().join("globex-export");
    std::fs::create_dir_all(&dir).unwrap();
    let export = dir.join("globex.json");
    let old = b
        .get(IPSECGATEWAY, "tenant-globex", "globex")
        .await
        .unwrap();
    std::fs::write(&export, serde_json::to_string(&old).unwrap()).unwrap();
    let bundle = dir.join("globex");
    ends(
        b,
        &[
            "plan",
            "-f",
            export.to_str().unwrap(),
            "--out",
            bundle.to_str().unwrap(),
        ],
        0,
    )
    .await;
    ends(
        b,
        &["cutover", "globex-east", "-n", "tenant-globex", "--yes"],
        0,
    )
    .await;
    bundle
}

async fn forward_never_deletes_a_recreated_gateway_whose_fip_was_unpinned(b: &Bed) {
    acme_rolled_back_with_lost_addresses(b).await;
    b.edit(IPSECGATEWAY, "tenant-acme", "acme", |g| {
        g["spec"]["endpoint"]
            .as_object_mut()
            .unwrap()
            .remove("floatingIP");
    })
    .await;
    let r = b.vpnmig(&["cutover", "acme", "--forward", "--yes"]).await;
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(
        r.says("--forward: ipsecgateway/acme -n tenant-acme is not the one the journal recorded (1 field(s) differ, above)"),
        "{}",
        r.stderr
    );
    assert!(r.says("spec.endpoint.floatingIP"), "{}", r.stderr);
    assert!(r.says("198.51.100.23"), "{}", r.stderr);
    forward_refused_nothing_changed(b, "198.51.100.23").await;
}

async fn forward_never_drops_an_edit_of_the_recreated_gateway(b: &Bed) {
    acme_rolled_back_with_lost_addresses(b).await;
    // An exposure added to the re-created gateway (a tunnel added is the same kind:
    // `core::scope` unit tests; here its client could never connect).
    b.edit(IPSECGATEWAY, "tenant-acme", "acme", |g| {
        g["spec"]["exposures"].as_array_mut().unwrap().push(json!({
            "name": "erp", "protocol": "TCP",
            "target": {"address": "erp.tenant-acme.svc", "port": 8443}
        }));
    })
    .await;
    let r = b.vpnmig(&["cutover", "acme", "--forward", "--yes"]).await;
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(r.says("spec.exposures[1]"), "{}", r.stderr);
    assert!(r.says("erp.tenant-acme.svc"), "{}", r.stderr);
    assert!(
        r.says("close the journal with `vpnmig rollback acme -n tenant-acme --accept-new-addresses --yes`, then plan the edited gateway"),
        "{}",
        r.stderr
    );
    forward_refused_nothing_changed(b, "198.51.100.23").await;
    // The advice works from here: the rollback closes the journal and keeps the edited
    // gateway (nothing of the new kinds to delete), and a new plan is of the edit.
    let r = b
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
        b.phase("tenant-acme", "acme").await.as_deref(),
        Some("rolled-back"),
        "{}",
        r.stderr
    );
    let gw = &b.objects(IPSECGATEWAY, "tenant-acme").await[0];
    assert_eq!(gw["spec"]["exposures"][1]["name"], "erp");
    let r = b.vpnmig(&["plan", "acme", "-o", "json"]).await;
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    let exposures = &plan["targets"]["gateway"]["spec"]["exposures"];
    assert_eq!(exposures[1]["name"], "erp", "{}", r.stdout);
}

async fn rollback_from_a_bundle_never_deletes_another_gateways_peer(b: &Bed) {
    let bundle = globex_east_migrated_and_a_globex_bundle(b).await;
    let before = b.objects(VPNPEER, "tenant-globex").await;
    assert_eq!(names(&before), ["globex-east"]);
    let uid = before[0]["metadata"]["uid"].clone();

    let r = b
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
    let after = b.objects(VPNPEER, "tenant-globex").await;
    assert_eq!(
        names(&after),
        ["globex-east"],
        "the bystander's peer is kept"
    );
    assert_eq!(after[0]["metadata"]["uid"], uid, "the very same object");
    assert!(b.operator.floating_ips().released.is_empty());
    let r = b
        .vpnmig(&["verify", "globex-east", "-n", "tenant-globex"])
        .await;
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
}

async fn rollback_refuses_over_a_peer_it_did_not_create_and_deletes_it_only_when_asked(b: &Bed) {
    let r = b.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    // Someone adds a second peer by hand after the window.
    let mut extra = b.get(VPNPEER, "tenant-acme", "acme").await.unwrap();
    extra["metadata"] = json!({"name": "acme-lab", "namespace": "tenant-acme"});
    extra["spec"]["ipsec"]["peer"]["address"] = json!("203.0.113.77");
    b.put(VPNPEER, "tenant-acme", extra).await;

    let r = b.vpnmig(&["rollback", "acme", "--yes"]).await;
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(
        r.says("1 VPNPeer(s) reference gateway acme -n tenant-acme but were not created by its cutover: acme-lab"),
        "{}",
        r.stderr
    );
    assert!(r.says("nothing was changed"), "{}", r.stderr);
    assert!(r.says("--delete-extra-peers"), "{}", r.stderr);
    assert_eq!(
        b.phase("tenant-acme", "acme").await.as_deref(),
        Some("done")
    );
    assert_eq!(
        names(&b.objects(VPNPEER, "tenant-acme").await),
        ["acme", "acme-lab"]
    );

    // The advised command works.
    let r = b
        .vpnmig(&["rollback", "acme", "--yes", "--delete-extra-peers"])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(b.objects(VPNPEER, "tenant-acme").await.is_empty());
    assert_eq!(
        b.phase("tenant-acme", "acme").await.as_deref(),
        Some("rolled-back")
    );
    assert!(b.operator.floating_ips().released.is_empty());
}

async fn the_journal_records_the_uids_of_what_the_window_applied(b: &Bed) {
    let r = b.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j = b.journal("tenant-acme", "acme").await.unwrap();
    let gw = &b.objects(VPNGATEWAY, "tenant-acme").await[0];
    let peer = &b.objects(VPNPEER, "tenant-acme").await[0];
    assert_eq!(
        j["targetUids"],
        json!([gw["metadata"]["uid"], peer["metadata"]["uid"]])
    );
}

async fn a_pinned_value_changed_after_the_apply_stops_the_window_and_fails_verify(b: &Bed) {
    let r = b
        .vpnmig(&["cutover", "acme", "--yes", "--timeout-tunnel", "1s"])
        .await;
    assert_eq!(r.code, 6, "{}", r.stderr);
    assert_eq!(
        b.phase("tenant-acme", "acme").await.as_deref(),
        Some("ready")
    );
    // Another team's tool moves the exposure's virtual IP (server-side apply, forced).
    let ops = json!({
        "apiVersion": "vpn.bnerd.net/v1alpha1", "kind": "VPNGateway",
        "metadata": {"name": "acme", "namespace": "tenant-acme"},
        "spec": {"exposures": [{"name": "crm", "protocol": "TCP",
            "target": {"address": "crm.tenant-acme.svc", "port": 443}, "virtualIP": "10.250.3.77"}]}
    });
    b.apply_as(VPNGATEWAY, "tenant-acme", "ops", ops).await;

    let r = b.vpnmig(&["cutover", "acme", "--yes"]).await;
    assert_eq!(r.code, 5, "{}", r.stderr);
    assert!(
        r.says("a pinned value differs from the journal, so the window cannot be done: VPNGateway tenant-acme/acme spec.exposures[crm].virtualIP: 10.250.3.77, the journal pins 10.250.3.10; last written by field manager ops"),
        "{}",
        r.stderr
    );
    assert_ne!(
        b.phase("tenant-acme", "acme").await.as_deref(),
        Some("done")
    );

    let r = b.vpnmig(&["verify", "acme"]).await;
    assert_eq!(r.code, 5, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(
            "10.250.3.77, the journal pins 10.250.3.10; last written by field manager ops"
        ),
        "{}",
        r.stdout
    );
}

async fn an_old_gateway_recreated_during_the_window_stops_the_wait_at_once(b: &Bed) {
    let mut in_git = b.get(IPSECGATEWAY, "tenant-acme", "acme").await.unwrap();
    in_git["metadata"] = json!({
        "name": "acme", "namespace": "tenant-acme",
        "labels": {"client": "acme", "app.kubernetes.io/instance": "tenants"},
        "annotations": {"argocd.argoproj.io/tracking-id": "tenants:ipsec.bnerd.net/IPsecGateway:tenant-acme/acme"}
    });
    in_git.as_object_mut().unwrap().remove("status");
    let started = std::time::Instant::now();
    let child = b.spawn(&["cutover", "acme", "--yes"]);
    eventually(30, "the delete to finish", || async {
        b.phase("tenant-acme", "acme")
            .await
            .is_some_and(|p| p == "applied" || p == "attached" || p == "ready")
    })
    .await;
    // The self-heal: the gateway as it is in Git, applied by Argo CD's field manager.
    b.apply_as(IPSECGATEWAY, "tenant-acme", "argocd-controller", in_git)
        .await;
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
    let r = b.vpnmig(&["rollback", "acme", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(b.objects(VPNGATEWAY, "tenant-acme").await.is_empty());
    assert_eq!(
        names(&b.objects(IPSECGATEWAY, "tenant-acme").await),
        ["acme"]
    );
    assert!(b.operator.floating_ips().released.is_empty());
}

async fn colliding_peer_names_block_the_later_gateway_with_a_way_out(b: &Bed) {
    let r = b.vpnmig(&["status", "-n", "tenant-globex"]).await;
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

    let r = b.vpnmig(&["plan", "globex", "-n", "tenant-globex"]).await;
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
    let owner = b
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
    let r = b.vpnmig(&args).await;
    assert_eq!(r.code, 0, "{}", r.stdout);
    let r = b
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
    let r = b
        .vpnmig(&["cutover", "globex-east", "-n", "tenant-globex", "--yes"])
        .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let peers = b.objects(VPNPEER, "tenant-globex").await;
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
    assert!(b.operator.floating_ips().released.is_empty());
}
