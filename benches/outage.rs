//! The outage of a cutover with and without `--initiate` (issue 12 item 3), in one run,
//! on realistic sandbox settings: the operator's finalizer unwind 300 ms, its OpenStack
//! part 500 ms, and a client that re-initiates 30 s after the gateway is reachable (a
//! firewall's retry timer). Printed, never asserted: the outage and its parts (unwind,
//! attach, ready, tunnel) as the report gives them, and who brought the tunnel up.
//!
//! One sandbox, three windows: cutover (the client's 30 s are waited for), rollback
//! --initiate, cutover --initiate (target: the tunnel part under 1 s, so the outage is
//! the operator's unwind plus attach). About 40 s. Run: `cargo bench --bench outage`.

use serde_json::Value;
use vpnmig_sandbox::SettingsFile;

#[path = "../tests/live/mod.rs"]
mod live;

const FINALIZER_MS: u64 = 300;
const OPENSTACK_MS: u64 = 500;
const CLIENT_RETRY_MS: u64 = 30_000;

fn part(o: &Value, k: &str) -> String {
    o[k].as_u64()
        .map(|ms| format!("{:.2}s", ms as f64 / 1000.0))
        .unwrap_or_else(|| "-".into())
}

fn line(what: &str, report: &Value) -> String {
    let o = &report["outage"];
    let by: Vec<&str> = o["tunnels"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["cameUpBy"].as_str()).collect())
        .unwrap_or_default();
    format!(
        "{what:<22} {:>8} {:>8} {:>8} {:>8} {:>8}  {}",
        part(o, "totalMs"),
        part(o, "unwindMs"),
        part(o, "attachMs"),
        part(o, "readyMs"),
        part(o, "tunnelMs"),
        by.join(", ")
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut settings = SettingsFile::default();
    settings.operator.service_cidr_pool = "10.250.3.0/24".into();
    settings.operator.finalizer_delay_ms = FINALIZER_MS;
    settings.operator.openstack_delay_ms = OPENSTACK_MS;
    settings.operator.peer_retry_ms = CLIENT_RETRY_MS;
    let l = live::start(live::ACME, settings).await;
    println!(
        "outage of one acme window, operator finalizer {FINALIZER_MS} ms + OpenStack {OPENSTACK_MS} ms, client retry {CLIENT_RETRY_MS} ms"
    );
    println!(
        "{:<22} {:>8} {:>8} {:>8} {:>8} {:>8}  came up by",
        "", "total", "unwind", "attach", "ready", "tunnel"
    );
    for (what, args) in [
        ("cutover", &["cutover", "acme", "--yes", "-o", "json"][..]),
        (
            "rollback --initiate",
            &["rollback", "acme", "--yes", "--initiate", "-o", "json"][..],
        ),
        (
            "cutover --initiate",
            &["cutover", "acme", "--yes", "--initiate", "-o", "json"][..],
        ),
    ] {
        let r = l.vpnmig(args).await;
        if r.code != 0 {
            println!("{what}: exit {}\n{}", r.code, r.stderr);
            return;
        }
        let report: Value = serde_json::from_str(&r.stdout).expect("a JSON report");
        println!("{}", line(what, &report));
    }
    println!(
        "(rollback: unwind = the VPNGateway's, attach = the IPsecGateway's apply, FIP and Ready)"
    );
    real_plane().await;
}

/// The same windows on the real data plane (root and Debian's strongSwan packages), with
/// fixtures/clusters/settings-realistic.yaml: the outage the client's probe saw (last
/// answer of the old gateway to the first of the new one), and the memory of the charons.
async fn real_plane() {
    if let Err(why) = vpnmig_sandbox::dataplane::netns::available() {
        println!("\nreal data plane: DID NOT RUN ({why})");
        return;
    }
    let realistic: SettingsFile =
        serde_saphyr::from_str(include_str!("../fixtures/clusters/settings-realistic.yaml"))
            .expect("settings-realistic.yaml reads");
    let o = &realistic.operator;
    println!(
        "\nreal data plane (strongSwan {}), settings-realistic.yaml: finalizer {} ms, OpenStack {} ms, client DPD {} ms, client retransmit {} ms",
        std::process::Command::new("dpkg-query")
            .args(["-W", "-f=${Version}", "strongswan-swanctl"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default(),
        o.finalizer_delay_ms,
        o.openstack_delay_ms,
        o.client_dpd_ms,
        o.client_retransmit_ms
    );
    println!(
        "{:<34} {:>10} {:>8}  {:>10}",
        "", "outage", "failed", "window"
    );
    for (what, initiate, rollback) in [
        ("cutover", false, false),
        ("cutover --initiate", true, false),
        ("rollback --initiate (after one)", true, true),
    ] {
        let l = live::start_on(live::ACME, realistic.clone(), true).await;
        if wait_answer(&l, "IPsecGateway", 0, 60).await.is_none() {
            println!("{what}: the client never got an answer from acme");
            return;
        }
        let mut args = vec!["cutover", "acme", "--yes"];
        if initiate {
            args.push("--initiate");
        }
        let t = std::time::Instant::now();
        let r = l.vpnmig(&args).await;
        let mut took = t.elapsed();
        if r.code != 0 {
            println!("{what}: cutover exit {}\n{}", r.code, r.stderr);
            return;
        }
        let (before, after, mark) = if rollback {
            if wait_answer(&l, "VPNGateway", 0, 120).await.is_none() {
                println!("{what}: no answer from the VPNGateway");
                return;
            }
            let mark = live::plane::probes(&l).len();
            let t = std::time::Instant::now();
            let r = l.vpnmig(&["rollback", "acme", "--yes", "--initiate"]).await;
            took = t.elapsed();
            if r.code != 0 {
                println!("{what}: rollback exit {}\n{}", r.code, r.stderr);
                return;
            }
            ("VPNGateway", "IPsecGateway", mark)
        } else {
            ("IPsecGateway", "VPNGateway", 0)
        };
        if wait_answer(&l, after, mark, 120).await.is_none() {
            println!("{what}: no answer from the {after} within 120 s");
            return;
        }
        // From the old side's last answer before the window.
        let all = live::plane::probes(&l);
        let from = all[..mark]
            .iter()
            .rposition(live::plane::answered_by(before))
            .unwrap_or(0);
        let (gap, failed) = live::plane::outage(&all[from..], before, after);
        println!(
            "{what:<34} {:>9.2}s {:>8}  {:>9.2}s",
            gap.as_secs_f64(),
            failed,
            took.as_secs_f64()
        );
        if what == "cutover" {
            let dir = l.sb.data_plane.as_ref().unwrap().dir.clone();
            println!("  memory: {}", charon_memory(&dir));
        }
        l.sb.shutdown().await;
    }
}

/// Wait (at most `secs`) for the client to be answered by `kind` after probe `from`.
async fn wait_answer(l: &live::Live, kind: &str, from: usize, secs: u64) -> Option<()> {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < until {
        if live::plane::probes(l)
            .iter()
            .skip(from)
            .any(live::plane::answered_by(kind))
        {
            return Some(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    None
}

/// The resident memory of each charon the data plane runs (from sites.json's namespaces).
fn charon_memory(dir: &std::path::Path) -> String {
    let Ok(text) = std::fs::read_to_string(dir.join("sites.json")) else {
        return "sites.json unreadable".into();
    };
    let doc: Value = serde_json::from_str(&text).unwrap_or_default();
    let mut out = Vec::new();
    for (what, list) in [
        ("gateway pod", &doc["gateways"]),
        ("client site", &doc["sites"]),
    ] {
        for n in list.as_array().into_iter().flatten() {
            let ns = n["netns"].as_str().unwrap_or_default();
            let pids = std::process::Command::new("ip")
                .args(["netns", "pids", ns])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            let kib: u64 = pids
                .split_whitespace()
                .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/status")).ok())
                .filter_map(|s| {
                    s.lines()
                        .find(|l| l.starts_with("VmRSS:"))
                        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                })
                .sum();
            out.push(format!("{what} charon {:.1} MiB RSS", kib as f64 / 1024.0));
        }
    }
    out.join(", ")
}
