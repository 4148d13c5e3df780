//! `vpnmig version`: what was built and which operator APIs it speaks (issue 13 item 3).

use serde::Serialize;

use crate::cli::Error;
use crate::core::model::{IPsecGateway, VPNGateway, VPNPeer};
use crate::exit;

/// Print the version, its git commit and the operator APIs it speaks.
///
/// The operator APIs are those vpnmig reads (IPsecGateway) and writes (VPNGateway,
/// VPNPeer), as group/version.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  vpnmig version
  vpnmig version -o json | jq -r .gitCommit")]
pub struct VersionArgs {
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = VersionFormat::Text)]
    output: VersionFormat,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum VersionFormat {
    /// Lines for people.
    Text,
    /// One JSON object (docs/version-json.md).
    Json,
    /// The same as YAML.
    Yaml,
}

/// `vpnmig version -o json` (docs/version-json.md).
#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Version {
    /// The crate version, e.g. `0.1.0`.
    pub version: &'static str,
    /// The git commit the binary was built from (`unknown` outside a git checkout).
    pub git_commit: &'static str,
    /// The operator APIs vpnmig reads (`source`) and writes (`target`).
    pub operator_apis: Vec<OperatorApi>,
}

#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OperatorApi {
    /// `source`: the frozen API migrated from; `target`: the API migrated to.
    pub role: &'static str,
    /// `group/version`.
    pub api_version: String,
    pub kinds: Vec<String>,
}

/// The git commit recorded by build.rs.
pub const GIT_COMMIT: &str = env!("VPNMIG_GIT_COMMIT");

impl Version {
    pub fn current() -> Version {
        use kube::Resource;
        Version {
            version: env!("CARGO_PKG_VERSION"),
            git_commit: GIT_COMMIT,
            operator_apis: vec![
                OperatorApi {
                    role: "source",
                    api_version: IPsecGateway::api_version(&()).into_owned(),
                    kinds: vec![IPsecGateway::kind(&()).into_owned()],
                },
                OperatorApi {
                    role: "target",
                    api_version: VPNGateway::api_version(&()).into_owned(),
                    kinds: vec![
                        VPNGateway::kind(&()).into_owned(),
                        VPNPeer::kind(&()).into_owned(),
                    ],
                },
            ],
        }
    }

    fn text(&self) -> String {
        let mut out = format!("vpnmig {} (commit {})\n", self.version, self.git_commit);
        for api in &self.operator_apis {
            let what = if api.role == "source" {
                "migrates from"
            } else {
                "migrates to"
            };
            out.push_str(&format!(
                "{what}: {} ({})\n",
                api.api_version,
                api.kinds.join(", ")
            ));
        }
        out
    }
}

pub fn run(args: &VersionArgs) -> Result<i32, Error> {
    let v = Version::current();
    let doc = match args.output {
        VersionFormat::Text => v.text(),
        VersionFormat::Json => serde_json::to_string_pretty(&v).expect("serializes") + "\n",
        VersionFormat::Yaml => serde_saphyr::to_string(&v).expect("serializes"),
    };
    crate::cli::write_stdout(&doc)?;
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::{NEW_GROUP, OLD_GROUP, VERSION};

    #[test]
    fn the_apis_are_the_models_own() {
        let v = Version::current();
        assert_eq!(
            v.operator_apis[0].api_version,
            format!("{OLD_GROUP}/{VERSION}")
        );
        assert_eq!(
            v.operator_apis[1].api_version,
            format!("{NEW_GROUP}/{VERSION}")
        );
        assert_eq!(v.operator_apis[1].kinds, ["VPNGateway", "VPNPeer"]);
    }
}
