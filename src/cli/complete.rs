//! Shell completion from the clap definitions (issue 13 item 1): `vpnmig completions
//! SHELL` prints the registration script of clap_complete's dynamic engine; the shell then
//! asks the binary itself (`VPNMIG_COMPLETE=SHELL vpnmig -- WORDS…`) for candidates, so
//! flags and subcommands are always those of the installed version, and gateway names and
//! namespaces come from the cluster of the current context, within [`BUDGET`].

use std::ffi::OsString;
use std::time::Duration;

use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};
use clap_complete::env::Shells;

use crate::cli::Error;
use crate::cluster::{Cluster, ClusterOptions};
use crate::exit;

/// The environment variable that turns a run into a completion request.
pub const VAR: &str = "VPNMIG_COMPLETE";

/// The longest a completion may wait for the cluster: a dead or slow cluster gives no
/// candidates, never a hung shell.
pub const BUDGET: Duration = Duration::from_secs(2);

/// Print the shell completion script (bash, zsh, fish, powershell, elvish).
///
/// Install it once; at each TAB it calls `vpnmig` (or `kubectl-vpnmig`) from PATH. The script is small and stable: the candidates are computed by the binary at each
/// TAB, so it need not be regenerated after an upgrade. Gateway names (after `plan`,
/// `cutover`, `verify`, `rollback`) and namespaces (after `-n`) are read from the cluster
/// of the current context (or of `--context`/`--kubeconfig` on the line) within 2 s;
/// without an answer there are no candidates.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  vpnmig completions bash > ~/.local/share/bash-completion/completions/vpnmig
  vpnmig completions zsh > \"${fpath[1]}/_vpnmig\"
  vpnmig completions fish > ~/.config/fish/completions/vpnmig.fish
  vpnmig completions powershell >> $PROFILE
  vpnmig completions elvish >> ~/.config/elvish/rc.elv")]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    shell: Shell,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Shell {
    Bash,
    Zsh,
    Fish,
    Powershell,
    Elvish,
}

impl Shell {
    fn name(self) -> &'static str {
        match self {
            Shell::Bash => "bash",
            Shell::Zsh => "zsh",
            Shell::Fish => "fish",
            Shell::Powershell => "powershell",
            Shell::Elvish => "elvish",
        }
    }
}

/// `vpnmig completions SHELL`.
pub fn run(args: &CompletionsArgs, bin: &str) -> Result<i32, Error> {
    let shells = Shells::builtins();
    let shell = shells
        .completer(args.shell.name())
        .expect("clap_complete knows every shell of the enum");
    let mut script = Vec::new();
    shell
        .write_registration(VAR, "vpnmig", bin, bin, &mut script)
        .map_err(|source| Error::Write { source })?;
    crate::cli::write_stdout(&String::from_utf8_lossy(&script))?;
    Ok(exit::OK)
}

/// Answer a completion request and exit, when this run is one (the registration script
/// sets [`VAR`]); otherwise return and let the command run.
pub fn handle_request(plugin: bool) {
    clap_complete::CompleteEnv::with_factory(move || crate::cli::command(plugin))
        .var(VAR)
        .complete();
}

/// kubectl's own completion of plugins (kubectl 1.26+): at `kubectl vpnmig <TAB>` kubectl
/// runs `kubectl_complete-vpnmig WORDS…` from PATH and reads cobra's `__complete` answer
/// (one `candidate\tdescription` a line, then `:DIRECTIVE`). Installed as a link named
/// `kubectl_complete-vpnmig` (or called as `vpnmig __complete WORDS…`), vpnmig answers
/// from the same engine and completers as the shells' scripts, and exits.
pub fn handle_kubectl_request() {
    let Some(words) = kubectl_words() else {
        return;
    };
    let mut line: Vec<OsString> = vec!["kubectl-vpnmig".into()];
    line.extend(words);
    if line.len() == 1 {
        line.push(OsString::new());
    }
    let index = line.len() - 1;
    let current_dir = std::env::current_dir().ok();
    let mut cmd = crate::cli::command(true);
    let candidates = clap_complete::engine::complete(&mut cmd, line, index, current_dir.as_deref())
        .unwrap_or_default();
    let mut out = String::new();
    for c in candidates.iter().filter(|c| !c.is_hide_set()) {
        out.push_str(&c.get_value().to_string_lossy());
        if let Some(help) = c.get_help() {
            let help = help.to_string();
            out.push('\t');
            out.push_str(help.lines().next().unwrap_or_default());
        }
        out.push('\n');
    }
    // ShellCompDirectiveNoFileComp: no file names when nothing matches.
    out.push_str(":4\n");
    let _ = crate::cli::write_stdout(&out);
    std::process::exit(0);
}

/// The words after the plugin's name when this run is a kubectl completion request.
fn kubectl_words() -> Option<Vec<OsString>> {
    let args: Vec<OsString> = std::env::args_os().collect();
    let argv0 = args.first().map(std::path::Path::new)?.file_name()?;
    if argv0 == "kubectl_complete-vpnmig" {
        return Some(args[1..].to_vec());
    }
    (args.get(1)? == "__complete").then(|| args[2..].to_vec())
}

/// What the objects' names are read from.
#[derive(Clone, Copy)]
enum Kinds {
    /// IPsecGateways: what `plan` and `cutover` take.
    Old,
    /// IPsecGateways and VPNGateways: what `verify` and `rollback` take.
    Both,
}

/// Candidates for a gateway-name argument.
pub(crate) fn gateway_names(old_only: bool) -> ArgValueCandidates {
    let kinds = if old_only { Kinds::Old } else { Kinds::Both };
    ArgValueCandidates::new(move || from_cluster(|c| names(c, kinds)))
}

/// Candidates for `-n/--namespace`.
pub(crate) fn namespaces() -> ArgValueCandidates {
    ArgValueCandidates::new(|| from_cluster(namespace_names))
}

/// Candidates for `--context`, `--cluster` and `--user`: the names in the kubeconfig of
/// the line being completed (`--kubeconfig`, else KUBECONFIG, else ~/.kube/config). No
/// cluster is asked.
pub(crate) fn kubeconfig_names(what: KubeconfigNames) -> ArgValueCandidates {
    ArgValueCandidates::new(move || {
        let opts = options_from_words(&words_being_completed());
        let kc = match &opts.kubeconfig {
            Some(path) => kube::config::Kubeconfig::read_from(path).ok(),
            None => kube::config::Kubeconfig::read().ok(),
        };
        let Some(kc) = kc else {
            return Vec::new();
        };
        let mut names: Vec<String> = match what {
            KubeconfigNames::Contexts => kc.contexts.into_iter().map(|c| c.name).collect(),
            KubeconfigNames::Clusters => kc.clusters.into_iter().map(|c| c.name).collect(),
            KubeconfigNames::Users => kc.auth_infos.into_iter().map(|u| u.name).collect(),
        };
        names.sort();
        names.dedup();
        names.into_iter().map(CompletionCandidate::new).collect()
    })
}

/// Which names of the kubeconfig [`kubeconfig_names`] offers.
#[derive(Clone, Copy)]
pub(crate) enum KubeconfigNames {
    Contexts,
    Clusters,
    Users,
}

/// Run `f` against the cluster named by the command line being completed, within
/// [`BUDGET`]; any failure (no kubeconfig, no answer, forbidden) is no candidates. Nothing
/// is printed: stderr would land in the middle of the user's prompt.
fn from_cluster<F, Fut>(f: F) -> Vec<CompletionCandidate>
where
    F: FnOnce(Cluster) -> Fut,
    Fut: std::future::Future<Output = Option<Vec<String>>>,
{
    let mut opts = options_from_words(&words_being_completed());
    opts.request_timeout = Some(BUDGET);
    let Ok(rt) = crate::cli::runtime() else {
        return Vec::new();
    };
    let names = rt.block_on(async {
        tokio::time::timeout(BUDGET, async {
            let cluster = Cluster::connect(&opts).await.ok()?;
            f(cluster).await
        })
        .await
        .ok()
        .flatten()
    });
    let mut names = names.unwrap_or_default();
    names.sort();
    names.dedup();
    names.into_iter().map(CompletionCandidate::new).collect()
}

/// The gateways' names in the namespace, one list request per kind (no retries: the
/// budget is short and the user is waiting).
async fn names(cluster: Cluster, kinds: Kinds) -> Option<Vec<String>> {
    use crate::core::model::{IPsecGateway, VPNGateway};
    use kube::api::{Api, ListParams};
    let lp = ListParams::default().limit(crate::cluster::list::PAGE);
    let old: Api<IPsecGateway> = Api::namespaced(cluster.client.clone(), &cluster.namespace);
    let mut out: Vec<String> = old
        .list_metadata(&lp)
        .await
        .ok()?
        .items
        .into_iter()
        .filter_map(|o| o.metadata.name)
        .collect();
    if let Kinds::Both = kinds {
        let new: Api<VPNGateway> = Api::namespaced(cluster.client.clone(), &cluster.namespace);
        if let Ok(list) = new.list_metadata(&lp).await {
            out.extend(list.items.into_iter().filter_map(|o| o.metadata.name));
        }
    }
    Some(out)
}

async fn namespace_names(cluster: Cluster) -> Option<Vec<String>> {
    use k8s_openapi::api::core::v1::Namespace;
    use kube::api::{Api, ListParams};
    let api: Api<Namespace> = Api::all(cluster.client.clone());
    let list = api.list_metadata(&ListParams::default()).await.ok()?;
    Some(
        list.items
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect(),
    )
}

/// The words of the command line being completed: the engine is run as
/// `vpnmig -- vpnmig WORDS…` (or kubectl's `kubectl_complete-vpnmig WORDS…`), and a value completer is told only the word under the
/// cursor, so the cluster flags already typed are read from here.
fn words_being_completed() -> Vec<OsString> {
    if let Some(words) = kubectl_words() {
        return words;
    }
    let args: Vec<OsString> = std::env::args_os().collect();
    match args.iter().position(|a| a == "--") {
        Some(i) => args[i + 1..].to_vec(),
        None => Vec::new(),
    }
}

/// kubectl's cluster flags as typed so far (`--context X`, `--context=X`, `-n X`, `-nX`,
/// …); anything else is ignored, a malformed line is no reason to fail a completion.
pub(crate) fn options_from_words(words: &[OsString]) -> ClusterOptions {
    let mut opts = ClusterOptions {
        notices: crate::output::cluster::notices(),
        ..ClusterOptions::default()
    };
    let words: Vec<String> = words
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        let (flag, inline) = match w.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ if w.starts_with("-n") && w.len() > 2 && !w.starts_with("--") => {
                ("-n".to_string(), Some(w[2..].to_string()))
            }
            _ => (w.clone(), None),
        };
        let takes = matches!(
            flag.as_str(),
            "--kubeconfig" | "--context" | "--cluster" | "--user" | "-n" | "--namespace" | "--as"
        );
        if !takes {
            i += 1;
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                match words.get(i) {
                    Some(v) => v.clone(),
                    None => break,
                }
            }
        };
        match flag.as_str() {
            "--kubeconfig" => opts.kubeconfig = Some(value.into()),
            "--context" => opts.context = Some(value),
            "--cluster" => opts.cluster = Some(value),
            "--user" => opts.user = Some(value),
            "--as" => opts.impersonate = Some(value),
            _ => opts.namespace = Some(value),
        }
        i += 1;
    }
    opts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<OsString> {
        line.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn cluster_flags_are_read_from_the_line_being_completed() {
        let o = options_from_words(&words(
            "vpnmig --context=prod -n tenant-acme cutover --kubeconfig /k --as bob a",
        ));
        assert_eq!(o.context.as_deref(), Some("prod"));
        assert_eq!(o.namespace.as_deref(), Some("tenant-acme"));
        assert_eq!(o.kubeconfig, Some("/k".into()));
        assert_eq!(o.impersonate.as_deref(), Some("bob"));
        let o = options_from_words(&words("vpnmig verify -ntenant-x --namespace"));
        assert_eq!(o.namespace.as_deref(), Some("tenant-x"));
        let o = options_from_words(&words("vpnmig status --no-headers -o wide"));
        assert!(o.namespace.is_none() && o.context.is_none());
    }
}
