//! The whole plan, as `vpnmig plan` shows it and a window approves it: the plan
//! (`core::plan::assemble`: translation, field report, checks) and the one check that
//! needs the journal the window would start with, `api-limits` (issue 14 item 8): the
//! journal's names and its size as its first write would be. Above both the plan and the
//! journal, because the journal is made from the plan. Pure.
//!
//! Layer 4 (journal, records and views): imports only from layers 0 to 4; see docs/architecture.md.

use std::collections::BTreeMap;

use crate::core::allowlist::Allowlist;
use crate::core::input::Source;
use crate::core::journal::Journal;
use crate::core::limits;
use crate::core::plan::{self, Plan, clean_old_manifest};

/// Translate, report and check `source` against `allowlist`.
pub fn build(source: &Source, allowlist: &Allowlist) -> Plan {
    build_named(source, allowlist, &BTreeMap::new())
}

/// [`build`] with peer names chosen for some tunnels (`core::translate::translate_named`).
pub fn build_named(
    source: &Source,
    allowlist: &Allowlist,
    peer_names: &BTreeMap<String, String>,
) -> Plan {
    let mut plan = plan::assemble(source, allowlist, peer_names);
    // The limits a real API server applies to what the window writes (issue 14 item 8):
    // the journal is estimated as its first write would be, the old manifest counted
    // twice (in journal.json and as old-ipsecgateway.yaml, which is never larger).
    let old_manifest = clean_old_manifest(&source.raw);
    let journal = Journal::new(&plan, old_manifest.clone(), String::new(), "", "");
    let bytes = pretty_len(&journal) + pretty_len(&old_manifest);
    let limits = limits::check(
        plan.source.namespace.as_deref().unwrap_or_default(),
        &plan.source.name,
        &plan.targets.objects(),
        bytes,
    );
    if limits.blocks() {
        plan.summary.blockers += 1;
        plan.blocked = true;
    }
    plan.checks.push(limits);
    plan
}

/// The length of `serde_json::to_string_pretty(value)` (0 if it fails), counted without
/// building the text: a status row makes this estimate for every gateway of a fleet.
fn pretty_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer_pretty(&mut count, value).map_or(0, |()| count.0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn pretty_len_counts_what_to_string_pretty_writes() {
        let v = serde_json::json!({"a": [1, "zwei", {"c": null}], "é": "ü\n\"x\""});
        assert_eq!(
            super::pretty_len(&v),
            serde_json::to_string_pretty(&v).unwrap().len()
        );
    }
}
