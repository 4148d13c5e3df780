//! The pure core: the API model, the translation, the field report, the checks and the
//! parsers. Nothing here touches the network or the file system; it turns values into
//! values, so every rule is testable without a cluster.

pub mod addr;
pub mod allowlist;
pub mod checks;
pub mod dataplane;
pub mod finding;
pub mod fingerprint;
pub mod fleet;
pub mod full_plan;
pub mod gitops;
pub mod guard;
pub mod holders;
pub mod input;
pub mod journal;
pub mod limits;
pub mod live;
pub mod lock;
pub mod model;
pub mod operator;
pub mod path;
pub mod plan;
pub mod proposal;
pub mod psk;
pub mod record;
pub mod reference;
pub mod repo;
pub mod report;
pub mod schema;
pub mod scope;
pub mod selector;
pub mod status;
pub mod swanctl;
pub mod translate;
pub mod verify;
pub mod wait;
pub mod yaml;
