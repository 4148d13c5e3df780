//! Narrow terminals on stderr too (issue 10 item 5): a whole window, as a log or a ticket
//! keeps it (no terminal: 100 columns) and at 60 columns, every line of stdout and stderr
//! within the width, and the advice still whole to copy. The initech scenario has the
//! longest lines: two tunnels, exposures, an owned PSK Secret.

mod live;

use live::{INITECH, Run, run_vpnmig_at, start};

/// Lines of `r` (stdout and stderr) wider than `width`.
fn too_wide(r: &Run, width: usize) -> Vec<String> {
    r.stdout
        .lines()
        .chain(r.stderr.lines())
        .filter(|l| l.chars().count() > width)
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_line_of_a_window_fits_100_columns_and_60() {
    let settings = live::pool("10.250.41.0/24");
    let l = start(INITECH, settings).await;
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
            let r = run_vpnmig_at(&l.kubeconfig, columns, args).await;
            assert_eq!(r.code, code, "{args:?}: {}\n{}", r.stdout, r.stderr);
            let wide = too_wide(&r, width);
            assert!(wide.is_empty(), "{args:?} at {width}: {wide:#?}");
            if code == 1 {
                // The advice reads whole, wherever it was wrapped.
                let hint = r.hint().expect("a hint");
                assert_eq!(
                    live::advised(&hint)[0],
                    ["verify", "initech", "-n", ns],
                    "{}",
                    r.stderr
                );
            }
        }
    }
}
