//! The simulated gateway operator (DESIGN.md §2): a controller that drives the store the
//! way the real operator drives a cluster. See the module docs of each part.
//!
//! INTERFACE (used by the HTTP layer and tests; keep these signatures):
//! - `Operator::start(store, settings) -> Arc<Operator>`: spawns the controller task on the
//!   current tokio runtime; it reacts to store events (Store::subscribe/events_after) and
//!   to its own timers.
//! - `Operator::settings()`: the live settings, changeable by tests at run time.
//! - `Operator::exec(ns, pod, container, command) -> ExecOutput`: answers a command run in
//!   a pod (used by pods/exec).
//! - `Operator::shutdown()`: stops the controller task.

use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};

use crate::store::Store;

/// What a command run in a pod printed and how it exited.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecOutput {
    pub stdout: String,
    pub stderr: String,
    pub exit_code: i32,
}

/// Operator settings (`--operator-settings FILE`, YAML). Placeholder until filled in.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {}

/// The running operator.
pub struct Operator {
    store: Arc<Store>,
    settings: RwLock<Settings>,
}

impl Operator {
    pub fn start(store: Arc<Store>, settings: Settings) -> Arc<Operator> {
        Arc::new(Operator { store, settings: RwLock::new(settings) })
    }

    pub fn settings(&self) -> &RwLock<Settings> {
        &self.settings
    }

    pub fn exec(&self, _ns: &str, _pod: &str, _container: &str, command: &[String]) -> ExecOutput {
        let _ = &self.store;
        ExecOutput { stdout: String::new(), stderr: format!("{}: command not found\n", command.first().cloned().unwrap_or_default()), exit_code: 127 }
    }

    pub fn shutdown(&self) {}
}
