//! What the operator reads and writes, behind one trait: the emulator's in-memory
//! [`Store`] (the sandbox's own API server), or a Kubernetes API server through
//! `kube::Client` ([`super::kube::KubeApi`]: the real control plane, or a user's kind or
//! k3d cluster). The reconcile logic is the same for both.

use serde_json::Value;

use crate::resources::ResourceType;
use crate::status::ApiError;
use crate::store::{DeleteOptions, Store};

/// A read-modify-write: given the object as read, the object to write (or an error that
/// ends the write). Called again with a fresh read when the write lost a race (409).
pub type Edit<'a> = &'a dyn Fn(&Value) -> Result<Value, ApiError>;

/// The operator's access to the cluster. Every write goes with the field manager
/// [`super::FIELD_MANAGER`].
pub trait OperatorApi: Send + Sync {
    /// The served resource type of `group/version/plural`, if it is served.
    fn resource(&self, group: &str, version: &str, plural: &str) -> Option<ResourceType>;
    fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<Value, ApiError>;
    /// The objects of a type in one namespace (`Some`) or all (`None`), sorted by
    /// namespace and name. `Err` when they could not be read: never an empty list then.
    fn list(&self, rt: &ResourceType, ns: Option<&str>) -> Result<Vec<Value>, ApiError>;
    fn create(&self, rt: &ResourceType, ns: &str, obj: Value) -> Result<Value, ApiError>;
    /// Read, edit and write back one object (its status through the status subresource
    /// when `status`), retrying a bounded number of times on a conflict.
    fn modify(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        status: bool,
        edit: Edit<'_>,
    ) -> Result<Value, ApiError>;
    /// Delete one object (background propagation: its dependents go after it).
    fn delete(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<(), ApiError>;
    /// Whether Pods and Deployments are run by a cluster's own controllers and kubelet
    /// (the real control plane, kind, k3d): the operator then creates the Deployment
    /// only and reads the Pod the ReplicaSet made; in the emulator it runs them itself.
    fn real_workloads(&self) -> bool {
        false
    }
    /// The node a gateway pod is put on where no scheduler runs (the real control
    /// plane's kwok node); `None`: the cluster's scheduler places it.
    fn pod_node(&self) -> Option<String> {
        None
    }
    /// The operator saw the gateway pod `ns/pod` (uid `uid`) running: where pod exec is
    /// answered by a local command (kwok), say which pod it is answering for.
    fn pod_running(&self, _ns: &str, _pod: &str, _uid: &str) {}
}

impl OperatorApi for Store {
    fn resource(&self, group: &str, version: &str, plural: &str) -> Option<ResourceType> {
        Store::resource(self, group, version, plural)
    }
    fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<Value, ApiError> {
        Store::get(self, rt, ns, name)
    }
    fn list(&self, rt: &ResourceType, ns: Option<&str>) -> Result<Vec<Value>, ApiError> {
        Ok(Store::list(self, rt, ns).0)
    }
    fn create(&self, rt: &ResourceType, ns: &str, obj: Value) -> Result<Value, ApiError> {
        Store::create(self, rt, ns, obj, &super::writes())
    }
    fn modify(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        status: bool,
        edit: Edit<'_>,
    ) -> Result<Value, ApiError> {
        // The store writes under its lock: no race to lose.
        Store::modify(self, rt, ns, name, status, &super::writes(), edit)
    }
    fn delete(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<(), ApiError> {
        Store::delete(self, rt, ns, name, &DeleteOptions::default()).map(|_| ())
    }
}
