//! Narrow terminals on stderr too (issue 10 item 5): a whole window, as a log or a ticket
//! keeps it (no terminal: 100 columns) and at 60 columns, every line of stdout and stderr
//! within the width, and the advice still whole to copy. The initech scenario has the
//! longest lines: two tunnels, exposures, an owned PSK Secret. On the emulator and the
//! real control plane (tests/live/bed.rs rows, one run per backend).

mod live;

use live::bed::{Bed, Row, Scenario};
use live::{INITECH, Run, run_vpnmig_at};

/// Lines of `r` (stdout and stderr) wider than `width`.
fn too_wide(r: &Run, width: usize) -> Vec<String> {
    r.stdout
        .lines()
        .chain(r.stderr.lines())
        .filter(|l| l.chars().count() > width)
        .map(str::to_string)
        .collect()
}

/// initech, in a serviceCIDR pool that hands its /24 back to a rollback's IPsecGateway.
fn initech_in_its_pool() -> Scenario {
    Scenario::new(INITECH, live::pool("10.250.41.0/24"))
}

crate::rows! {
    every_line_of_a_window_fits_100_columns_and_60: Row {
        scenario: initech_in_its_pool,
        only: None,
        after: None,
        steps: |b| Box::pin(every_line_of_a_window_fits_100_columns_and_60(b)),
    },
}

async fn every_line_of_a_window_fits_100_columns_and_60(b: &Bed) {
    let on = b.backend;
    let ns = "tenant-initech";
    for columns in [None, Some(60)] {
        let width = columns.unwrap_or(100);
        let steps: [(&[&str], i32); 6] = [
            (&["status", "-n", ns], 0),
            (
                &[
                    "plan",
                    "initech",
                    "-n",
                    ns,
                    "--out",
                    "plans/initech",
                    "--force",
                ],
                0,
            ),
            (&["cutover", "initech", "-n", ns, "--yes"], 0),
            // Already migrated: an error and a hint, each wrapped.
            (&["plan", "initech", "-n", ns], 1),
            (&["verify", "initech", "-n", ns], 0),
            (&["rollback", "initech", "-n", ns, "--yes"], 0),
        ];
        for (args, code) in steps {
            // `status` is kubectl's table: one row per line whatever the terminal (scripts
            // read it with awk); it fits 100 columns, not 60.
            if args[0] == "status" && columns.is_some() {
                continue;
            }
            let r = run_vpnmig_at(&b.kubeconfig, columns, args).await;
            assert_eq!(r.code, code, "{on}: {args:?}: {}\n{}", r.stdout, r.stderr);
            let wide = too_wide(&r, width);
            assert!(wide.is_empty(), "{on}: {args:?} at {width}: {wide:#?}");
            if code == 1 {
                // The advice reads whole, wherever it was wrapped.
                let hint = r.hint().expect("a hint");
                assert_eq!(
                    live::advised(&hint)[0],
                    ["verify", "initech", "-n", ns],
                    "{on}: {}",
                    r.stderr
                );
            }
        }
    }
}
