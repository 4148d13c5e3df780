//! Golden tests of what cutover and rollback print around their steps: the summaries
//! shown before the confirmation, the drift that refuses a cutover, the blockers, and the
//! final report. Built from a fixture offline (the live runs are in live_cutover.rs).
//! Review changes with `cargo insta review`.

mod common;

use std::time::Duration;

use common::root;
use serde_json::json;
use vpnmig::core::allowlist::Allowlist;
use vpnmig::core::journal::{self, Journal, Phase};
use vpnmig::core::verify::{Row, Verdict};
use vpnmig::output::window::{self as render, Format, Waits};

const WAITS: Waits = Waits {
    delete: Duration::from_secs(300),
    attach: Duration::from_secs(120),
    tunnel: Duration::from_secs(600),
};

/// As the terminal-less user sees it (the renderers paint; anstream strips on output).
fn plain(s: String) -> String {
    anstream::adapter::strip_str(&s).to_string()
}

fn planned(file: &str) -> (vpnmig::core::input::Source, vpnmig::core::plan::Plan) {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    let source = vpnmig::core::input::load(&text, file, None).unwrap();
    let plan = vpnmig::core::full_plan::build(&source, &Allowlist::default());
    (source, plan)
}

fn journal_of(file: &str) -> Journal {
    let (source, plan) = planned(file);
    let old = vpnmig::core::plan::clean_old_manifest(&source.raw);
    let fip = source
        .gateway
        .spec
        .endpoint
        .pinned_fip()
        .unwrap()
        .to_string();
    let mut j = Journal::new(
        &plan,
        old,
        fip,
        "2026-11-29T02:00:00.000Z",
        "alice@bastion pid 4242",
    );
    j.advance(
        Phase::PskDetached,
        "2026-11-29T02:00:01.000Z",
        "alice@bastion pid 4242",
    );
    j.advance(
        Phase::Deleting,
        "2026-11-29T02:00:01.200Z",
        "alice@bastion pid 4242",
    );
    j
}

#[test]
fn the_cutover_summary_shows_what_goes_and_what_is_pinned() {
    let (_, plan) = planned("fixtures/gateways/02-two-tunnels.yaml");
    insta::assert_snapshot!(plain(render::cutover_summary(
        "prod-eu1",
        &plan,
        Some(1),
        std::path::Path::new("plans/initech"),
        &WAITS
    )));
}

#[test]
fn resume_forward_and_rollback_summaries() {
    let mut j = journal_of("fixtures/gateways/01-single-tunnel.yaml");
    j.last_error = Some("timed out after 5m waiting for IPsecGateway tenant-acme/acme to be deleted: IPsecGateway acme still present, being deleted; finalizers: ipsec.bnerd.net/cleanup".into());
    insta::assert_snapshot!(
        "resume",
        plain(render::resume_summary("prod-eu1", &j, &WAITS))
    );
    insta::assert_snapshot!(
        "rollback",
        plain(render::rollback_summary(
            "prod-eu1",
            &j,
            Some(&j.peer_names()),
            &WAITS
        ))
    );
    j.advance(
        Phase::OldApplied,
        "2026-11-29T02:20:00.000Z",
        "bob@laptop pid 7",
    );
    j.last_error = Some("IPsecGateway tenant-acme/acme is back with its floating IP, but the operator allocated other addresses: serviceCIDR 10.250.3.0/24 → 10.250.0.0/24".into());
    j.old_uid = Some("7e80f90f-f1c0-4225-8d3a-831758c388bf".into());
    insta::assert_snapshot!(
        "forward",
        plain(render::forward_summary("prod-eu1", &j, &WAITS))
    );
}

#[test]
fn drift_and_blockers_refuse_with_the_values() {
    let (_, plan) = planned("fixtures/gateways/01-single-tunnel.yaml");
    let mut saved = serde_json::to_value(&plan).unwrap();
    saved["source"]["generation"] = json!(3);
    saved["targets"]["peers"][0]["spec"]["ipsec"]["remoteSubnets"] =
        json!(["10.20.0.0/16", "10.21.0.0/16"]);
    insta::assert_snapshot!(
        "drift",
        plain(render::drift(&journal::drift(&saved, &plan)))
    );
    let (_, blocked) = planned("fixtures/gateways/07-unpinned-fip.yaml");
    insta::assert_snapshot!("blockers", plain(render::blockers(&blocked).concat()));
}

#[test]
fn the_final_report_as_text_and_json() {
    let mut j = journal_of("fixtures/gateways/01-single-tunnel.yaml");
    j.advance(
        Phase::Done,
        "2026-11-29T02:00:12.000Z",
        "alice@bastion pid 4242",
    );
    j.outage_ms = Some(10_480);
    let rows = vec![
        Row {
            check: "condition",
            object: "VPNGateway tenant-acme/acme".into(),
            what: "FIPAttached".into(),
            verdict: Verdict::Ok,
            detail: "Associated".into(),
        },
        Row {
            check: "tunnel",
            object: "peer acme".into(),
            what: "IKE SA with fw.acme.example".into(),
            verdict: Verdict::Ok,
            detail: "IKE SA #1 ESTABLISHED, CHILD SAs cover 10.20.0.0/16".into(),
        },
    ];
    insta::assert_snapshot!(
        "report_text",
        plain(render::report_width(
            "cutover",
            &j,
            &rows,
            Format::Text,
            100
        ))
    );
    insta::assert_snapshot!(
        "report_json",
        plain(render::report_width(
            "cutover",
            &j,
            &rows,
            Format::Json,
            100
        ))
    );
}

/// Issue 12: the outage in parts and per tunnel, and the data-plane table (wide: one row
/// per fact; narrow: grouped per tunnel and CHILD SA), in the text report and in JSON.
#[test]
fn the_final_report_with_the_outage_and_the_data_plane() {
    use vpnmig::core::dataplane::{self, Baseline, CameUpBy, Outage, TunnelOutage};
    let sample = include_str!("../fixtures/swanctl/08-strongswan-docs-home-net-initiator.txt");
    let read = |text: &str, at: &str, source: &str| {
        Baseline::from_sas(&vpnmig::core::swanctl::parse(text).unwrap(), at, source)
    };
    let before = read(
        sample,
        "2026-11-29T02:00:01.000Z",
        "IPsecGateway tenant-acme/acme",
    );
    let after = read(
        &sample
            .replace("remote 10.1.0.0/16", "remote 10.1.0.0/24")
            .replace("net: #1", "acme: #2")
            .replace("c8931e89", "c0ffee01"),
        "2026-11-29T02:00:12.500Z",
        "VPNGateway tenant-acme/acme",
    );
    let mut j = journal_of("fixtures/gateways/01-single-tunnel.yaml");
    j.advance(
        Phase::Done,
        "2026-11-29T02:00:12.000Z",
        "alice@bastion pid 4242",
    );
    j.outage_ms = Some(1_020);
    j.outage = Some(Outage {
        total_ms: Some(1_020),
        unwind_ms: Some(840),
        attach_ms: Some(70),
        ready_ms: Some(20),
        tunnel_ms: Some(90),
        initiate: true,
        tunnels: vec![TunnelOutage {
            peer: "acme".into(),
            outage_ms: Some(1_020),
            came_up_by: CameUpBy::Initiation,
            initiation: Some("acme: initiate completed successfully".into()),
        }],
    });
    j.data_plane = Some(dataplane::compare(&before, &after));
    let rows = vec![Row {
        check: "tunnel",
        object: "peer acme".into(),
        what: "IKE SA with fw.acme.example".into(),
        verdict: Verdict::Ok,
        detail: "IKE SA #1 ESTABLISHED, CHILD SAs cover 10.20.0.0/16".into(),
    }];
    let report = |format, width| plain(render::report_width("cutover", &j, &rows, format, width));
    insta::assert_snapshot!("report_data_plane_wide", report(Format::Text, 240));
    insta::assert_snapshot!("report_data_plane_narrow", report(Format::Text, 72));
    insta::assert_snapshot!("report_data_plane_json", report(Format::Json, 100));
}
