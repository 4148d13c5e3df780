//! vpnmig moves a client's site-to-site VPN from the operator's frozen `IPsecGateway` API
//! to `VPNGateway` + `VPNPeer`, keeping every value the client's firewall depends on.
//!
//! Layout: [`core`] is pure (model, translation, checks, parsers); [`cluster`] talks to
//! Kubernetes; [`window`] drives one gateway's cutover or rollback through its phases and
//! reports events; [`output`] renders plain structs and events as text, YAML or JSON;
//! [`bundle`] reads and writes plan bundles on disk; [`gitops_repo`] puts the new
//! manifests into a GitOps repository's working tree; [`cli`] composes them into commands.
//! The binary only calls [`cli::run`].

// Errors carry the object, path, seen and wanted values a user needs; they are built once
// per run, so their size does not matter.
#![allow(clippy::result_large_err)]

pub mod bundle;
pub mod cli;
pub mod cluster;
pub mod core;
pub mod error;
pub mod exit;
pub mod fleet;
pub mod gitops_repo;
pub mod output;
pub mod state;
pub mod window;
