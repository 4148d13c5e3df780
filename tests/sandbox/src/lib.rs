//! vpnmig-sandbox: an in-memory Kubernetes API server on 127.0.0.1 with a simulated
//! gateway operator (DESIGN.md §2 and §6) and a simulated Argo CD and Flux ([`gitops`]).
//! vpnmig's end-to-end tests start it in-process on port 0; `vpnmig-sandbox --scenario
//! FILE` serves it for rehearsing a cutover.

pub mod api;
pub mod controlplane;
pub mod dataplane;
pub mod exec;
pub mod gitops;
pub mod limits;
pub mod operator;
pub mod proxy;
pub mod resources;
pub mod scenario;
pub mod selector;
pub mod server;
pub mod status;
pub mod store;
pub mod tls;

pub use server::{Config, GcSettings, Sandbox, SettingsFile, StartError};
