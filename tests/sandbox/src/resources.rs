//! The resource types the emulator serves: a fixed set of built-ins and whatever CRDs are
//! created (creating a CRD serves its kind, deleting it stops serving it).

use serde_json::{Value, json};

/// Group, version and plural: how a resource is addressed in a URL.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gvr {
    pub group: String,
    pub version: String,
    pub plural: String,
}

impl Gvr {
    pub fn new(group: &str, version: &str, plural: &str) -> Self {
        Gvr {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
        }
    }
}

/// Everything the server knows about one resource.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub namespaced: bool,
    /// Has a `/status` subresource: status is ignored on the main resource.
    pub status_subresource: bool,
    /// Other subresources (`exec` for pods).
    pub subresources: Vec<&'static str>,
    pub verbs: Vec<&'static str>,
    /// `openAPIV3Schema` of a CRD: validated and pruned against.
    pub schema: Option<Value>,
    /// `additionalPrinterColumns` of a CRD.
    pub printer_columns: Vec<Value>,
    /// Served because a CRD says so.
    pub from_crd: bool,
}

impl ResourceType {
    /// Whether kube-apiserver keeps `metadata.generation` for this kind: every custom
    /// resource, and the built-in kinds whose strategy sets it (those with a spec and a
    /// status: Deployments, Pods, CRDs), but not Namespaces, ConfigMaps, Secrets, Events
    /// or Leases (seen on the real control plane: tests/sandbox/tests/fidelity.rs).
    pub fn has_generation(&self) -> bool {
        self.from_crd || (self.status_subresource && self.plural != "namespaces")
    }
}

const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

impl ResourceType {
    pub fn gvr(&self) -> Gvr {
        Gvr::new(&self.group, &self.version, &self.plural)
    }

    /// `v1` or `group/version`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    fn builtin(
        group: &str,
        version: &str,
        kind: &str,
        plural: &str,
        namespaced: bool,
        status: bool,
    ) -> Self {
        ResourceType {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            singular: kind.to_lowercase(),
            short_names: Vec::new(),
            namespaced,
            status_subresource: status,
            subresources: Vec::new(),
            verbs: ALL_VERBS.to_vec(),
            schema: None,
            printer_columns: Vec::new(),
            from_crd: false,
        }
    }

    /// The type a CRD object defines (its storage version, else its first served one).
    pub fn from_crd(crd: &Value) -> Option<Self> {
        let spec = crd.get("spec")?;
        let versions = spec.get("versions")?.as_array()?;
        let version = versions
            .iter()
            .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
            .or_else(|| versions.first())?;
        let names = spec.get("names")?;
        let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let kind = s(names, "kind")?;
        Some(ResourceType {
            group: s(spec, "group")?,
            version: s(version, "name")?,
            plural: s(names, "plural")?,
            singular: s(names, "singular").unwrap_or_else(|| kind.to_lowercase()),
            kind,
            short_names: names
                .get("shortNames")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            namespaced: s(spec, "scope").as_deref() != Some("Cluster"),
            status_subresource: version.pointer("/subresources/status").is_some(),
            subresources: Vec::new(),
            verbs: ALL_VERBS.to_vec(),
            schema: version.pointer("/schema/openAPIV3Schema").cloned(),
            printer_columns: version
                .get("additionalPrinterColumns")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            from_crd: true,
        })
    }

    /// One entry of an `APIResourceList`, plus entries for its subresources.
    pub fn discovery_entries(&self) -> Vec<Value> {
        let mut main = json!({
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": self.verbs,
        });
        if !self.short_names.is_empty() {
            main["shortNames"] = json!(self.short_names);
        }
        let mut out = vec![main];
        if self.status_subresource {
            out.push(json!({"name": format!("{}/status", self.plural), "singularName": "", "namespaced": self.namespaced, "kind": self.kind, "verbs": ["get", "patch", "update"]}));
        }
        for sub in &self.subresources {
            out.push(json!({"name": format!("{}/{sub}", self.plural), "singularName": "", "namespaced": self.namespaced, "kind": "PodExecOptions", "verbs": ["create", "get"]}));
        }
        out
    }
}

/// The built-in resources the emulator serves.
pub fn builtins() -> Vec<ResourceType> {
    let mut pods = ResourceType::builtin("", "v1", "Pod", "pods", true, true);
    pods.short_names = vec!["po".into()];
    pods.subresources = vec!["exec"];
    let mut ns = ResourceType::builtin("", "v1", "Namespace", "namespaces", false, true);
    ns.short_names = vec!["ns".into()];
    let mut cm = ResourceType::builtin("", "v1", "ConfigMap", "configmaps", true, false);
    cm.short_names = vec!["cm".into()];
    let mut ev = ResourceType::builtin("", "v1", "Event", "events", true, false);
    ev.short_names = vec!["ev".into()];
    let mut deploy = ResourceType::builtin("apps", "v1", "Deployment", "deployments", true, true);
    deploy.short_names = vec!["deploy".into()];
    let mut crd = ResourceType::builtin(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
        true,
    );
    crd.short_names = vec!["crd".into(), "crds".into()];
    let mut ssar = ResourceType::builtin(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        false,
        false,
    );
    ssar.verbs = vec!["create"];
    vec![
        ns,
        ResourceType::builtin("", "v1", "Secret", "secrets", true, false),
        cm,
        pods,
        ev,
        deploy,
        ResourceType::builtin("coordination.k8s.io", "v1", "Lease", "leases", true, false),
        crd,
        ssar,
    ]
}
