//! The pure core: the API model, the translation, the field report, the checks and the
//! parsers. Nothing here touches the network or the file system; it turns values into
//! values, so every rule is testable without a cluster.
//!
//! The modules are layers with one direction (docs/architecture.md): a module imports
//! only modules of its own layer (without a circle) or of lower ones, and nothing of the
//! crate outside `core`. Each module's opening comment states its layer; `tests/layers.rs`
//! checks every reference.
//!
//! | layer | what | modules |
//! |---|---|---|
//! | 0 | model, addresses, paths, parsers, YAML | `addr`, `allowlist`, `duration`, `input`, `model`, `path`, `proposal`, `selector`, `swanctl`, `yaml` |
//! | 1 | translation and fingerprints | `fingerprint`, `psk`, `report` (the field report), `translate` |
//! | 2 | rules | `checks`, `dataplane`, `finding`, `gitops`, `limits`, `lock`, `operator`, `reference`, `repo`, `schema`, `scope`, `verify`, `wait` |
//! | 3 | the plan | `plan`, `live` (a plan judged with what the cluster said) |
//! | 4 | journal, records and views | `journal`, `full_plan`, `holders`, `guard`, `record` (the change record), `status`, `fleet` |

pub mod addr;
pub mod allowlist;
pub mod checks;
pub mod dataplane;
pub mod duration;
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
pub mod maintenance;
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
