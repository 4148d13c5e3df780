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
}
