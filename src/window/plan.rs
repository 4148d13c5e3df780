//! The cutover's re-plan (DESIGN.md §4.4, §4.7): the live IPsecGateway read, translated,
//! checked with the live facts, exactly as `vpnmig plan NAME` does (which calls it too).

use crate::cluster::{Cluster, facts};
use crate::core::allowlist::Allowlist;
use crate::core::{full_plan, input, live, plan};
use crate::window::error::Error;

/// The `--peer-name` choices as a map, each naming a tunnel `gateway` has.
pub fn peer_names(
    chosen: &[(String, String)],
    gateway: &crate::core::model::IPsecGateway,
) -> Result<std::collections::BTreeMap<String, String>, Error> {
    let tunnels: Vec<&str> = gateway
        .spec
        .tunnels
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    for (t, _) in chosen {
        if !tunnels.contains(&t.as_str()) {
            return Err(Error::Stop {
                code: crate::exit::USAGE,
                message: format!(
                    "--peer-name {t}=…: IPsecGateway {} has no tunnel {t} (its tunnels: {})",
                    gateway.metadata.name.as_deref().unwrap_or("?"),
                    tunnels.join(", ")
                ),
                hint: None,
            });
        }
    }
    Ok(chosen.iter().cloned().collect())
}

/// The live plan of `name`: the source, the plan with the live checks, and the targets
/// that already exist (cleaned). Shared by `plan NAME` and `cutover`.
pub async fn live_plan(
    cluster: &Cluster,
    name: &str,
    allowlist: &Allowlist,
    server_dry_run: bool,
    chosen_names: &[(String, String)],
) -> Result<(input::Source, plan::Plan, Vec<(String, serde_json::Value)>), Error> {
    let source = facts::source(cluster, name).await.map_err(|e| match e {
        facts::SourceError::Kube(k) => Error::Cluster(k),
        facts::SourceError::Input(i) => Error::Input(i),
    })?;
    let names = peer_names(chosen_names, &source.gateway)?;
    let mut plan = full_plan::build_named(&source, allowlist, &names);
    let found = facts::facts(cluster, &plan, server_dry_run).await?;
    let tunnels: Vec<String> = source
        .gateway
        .spec
        .tunnels
        .iter()
        .map(|t| t.name.clone())
        .collect();
    let migrated = live::judge(&mut plan, &tunnels, &found);
    super::gitops::describe_owners(cluster, &mut plan, &source).await;
    plan.already_migrated = migrated == live::Migrated::Already;
    Ok((source, plan, found.existing))
}
