//! kubectl's cluster flags, shared by every command that talks to a cluster, and the
//! duration syntax used everywhere (`90s`, `5m`, `1h30m`).

use std::path::PathBuf;
use std::time::Duration;

use crate::cluster::ClusterOptions;

/// `--kubeconfig`, `--context`, `--cluster`, `--user`, `-n/--namespace`, `--as`,
/// `--as-group`, `--request-timeout`: defined once, on
/// the top-level command, and global, so that they go before or after the subcommand as
/// with kubectl (`vpnmig -n tenant-acme status`; issue 10 item 8).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ClusterArgs {
    /// Path to the kubeconfig file (default: KUBECONFIG, which may list several files, or
    /// ~/.kube/config; in a pod, its service account).
    #[arg(
        long,
        value_name = "FILE",
        global = true,
        help_heading = "Cluster options (kubectl's)"
    )]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current context).
    #[arg(
        long,
        value_name = "NAME",
        global = true,
        help_heading = "Cluster options (kubectl's)"
    )]
    pub context: Option<String>,
    /// The kubeconfig cluster to use (default: the context's).
    #[arg(
        long,
        value_name = "NAME",
        global = true,
        help_heading = "Cluster options (kubectl's)"
    )]
    pub cluster: Option<String>,
    /// The kubeconfig user to use (default: the context's).
    #[arg(
        long,
        value_name = "NAME",
        global = true,
        help_heading = "Cluster options (kubectl's)"
    )]
    pub user: Option<String>,
    /// The namespace (default: the context's namespace).
    #[arg(
        short = 'n',
        long,
        value_name = "NS",
        global = true,
        help_heading = "Cluster options (kubectl's)"
    )]
    pub namespace: Option<String>,
    /// Act as this user (impersonation; your own user needs RBAC's `impersonate` verb).
    #[arg(
        long = "as",
        value_name = "USER",
        global = true,
        help_heading = "Cluster options (kubectl's)"
    )]
    pub as_user: Option<String>,
    /// Act as a member of this group (repeat for several; needs --as, as in kubectl).
    #[arg(
        long = "as-group",
        value_name = "GROUP",
        global = true,
        requires = "as_user",
        help_heading = "Cluster options (kubectl's)"
    )]
    pub as_group: Vec<String>,
    /// Give up on a request after this long, e.g. `30s`, `2m` (0: no timeout).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, global = true, help_heading = "Cluster options (kubectl's)")]
    pub request_timeout: Option<Duration>,
}

impl ClusterArgs {
    pub fn options(&self) -> ClusterOptions {
        ClusterOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
            cluster: self.cluster.clone(),
            user: self.user.clone(),
            namespace: self.namespace.clone(),
            impersonate: self.as_user.clone(),
            impersonate_groups: self.as_group.clone(),
            // kubectl's habit: 0 means no timeout.
            request_timeout: self.request_timeout.filter(|t| !t.is_zero()),
            notices: crate::output::cluster::notices(),
        }
    }
}

/// Parse `90s`, `5m`, `1h30m` (a bare number is seconds).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let d: jiff::SignedDuration = s
        .parse()
        .map_err(|_| format!("`{s}` is not a duration; write it like 90s, 5m or 1h30m"))?;
    Duration::try_from(d).map_err(|_| format!("`{s}` is negative"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::duration::{Rounding, format};

    #[test]
    fn durations_read_and_write_alike() {
        for (text, secs) in [("90s", 90), ("5m", 300), ("1h30m", 5400), ("45", 45)] {
            assert_eq!(
                parse_duration(text),
                Ok(Duration::from_secs(secs)),
                "{text}"
            );
        }
        assert!(parse_duration("soon").is_err());
        assert_eq!(format(Duration::from_secs(5400), Rounding::Down), "1h30m");
        assert_eq!(format(Duration::from_secs(90), Rounding::Down), "1m30s");
        assert_eq!(format(Duration::from_millis(250), Rounding::Down), "250ms");
    }
}
