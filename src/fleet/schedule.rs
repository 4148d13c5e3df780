//! Fleet windows run by the cluster itself (issue 25 item 2): for each gateway with a
//! window ahead, a CronJob that starts `vpnmig cutover` at the window's start under a
//! least-privilege ServiceAccount of its namespace; per namespace the account, its Role
//! (exactly the verbs the preflight checks, `core::live::NEEDS`) and RoleBinding, the
//! binding to the one ClusterRole of cluster-scoped reads, and a ResourceQuota that caps
//! how many windows run at once there; once for the cluster a PriorityClass that marks
//! window pods (what the quota counts). Manifests only: `cli::schedule` prints or
//! applies them. Pure.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::core::gitops::OwnerRef;
use crate::core::live::{NEEDS, Need, gitops_cluster_needs, owner_needs};
use crate::core::maintenance::{self, Interval, Next, WindowsFile};
use crate::core::model::IPsecGateway;

/// The name of the ServiceAccount, Role and RoleBinding in each tenant namespace.
pub const ACCOUNT: &str = "vpnmig-window";
/// The PriorityClass of window pods, which the namespaces' quotas count.
pub const PRIORITY_CLASS: &str = "vpnmig-window";
/// The ClusterRole of the cluster-scoped reads a window makes.
pub const CLUSTER_ROLE: &str = "vpnmig-window-read";
/// The prefix of the roles a window with `--gitops` gets (`vpnmig-window-gitops:TENANT`).
pub const GITOPS_ROLE: &str = "vpnmig-window-gitops";
/// The ResourceQuota in each tenant namespace.
pub const QUOTA: &str = "vpnmig-windows";
/// The label every object `schedule` writes carries (`managed-by=vpnmig`) and the one
/// naming a CronJob's gateway.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "vpnmig");
pub const GATEWAY_LABEL: &str = "vpnmig.bnerd.net/gateway";
/// The extended resource a window pod requests when a fleet-wide limit is set: the
/// scheduler runs no more window pods than the nodes advertise.
pub const FLEET_SLOT: &str = "vpnmig.bnerd.net/window-slot";
/// A CronJob's name is at most 52 characters (its Jobs' names add 11).
const CRONJOB_NAME_MAX: usize = 52;

/// What `schedule` was asked for, beyond the gateways.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub image: String,
    /// Windows of one namespace that may run at once (its ResourceQuota).
    pub per_namespace: u32,
    /// With a fleet-wide limit, each window pod requests one [`FLEET_SLOT`].
    pub fleet_slots: bool,
    /// Flags passed on to each cutover (`--initiate`, `--rollback-on-failure`,
    /// `--gitops=…`).
    pub cutover_flags: Vec<String>,
    /// With `--gitops`: what each namespace's windows ask of GitOps owners and of the
    /// other windows' journals and locks; `None` without it.
    pub gitops: Option<GitopsGrants>,
}

/// What the windows of the fleet ask for beyond [`role_rules`] when they run with
/// `--gitops` (docs/fleet.md, "The account a window runs as").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GitopsGrants {
    /// `--gitops pause` or `resume`: the windows suspend and restore their owners
    /// (`patch`); `ignore` alone: they only read them.
    pub suspends: bool,
    /// Per tenant namespace, the owners of its scheduled gateways (and of their PSK
    /// Secrets) as their markers name them, each with the namespace the cluster has it in
    /// (`None`: not found when scheduling; its window's preflight names what it lacks).
    pub owners: BTreeMap<String, Vec<(OwnerRef, Option<String>)>>,
}

impl GitopsGrants {
    /// Everything the windows of `tenant` ask beyond [`role_rules`]: the cluster-wide
    /// reads of [`crate::core::live::GITOPS_CLUSTER_READS`], and per owner what
    /// [`crate::core::live::owner_needs`] says (the same function the window's preflight
    /// asks with, so the two cannot drift apart).
    pub fn needs(&self, tenant: &str) -> Vec<Need> {
        let mut out = gitops_cluster_needs();
        for (owner, found) in self.owners.get(tenant).into_iter().flatten() {
            out.extend(owner_needs(owner, false));
            if self.suspends
                && let Some(ns) = found
            {
                let mut at = owner.clone();
                at.namespace = Some(ns.clone());
                out.extend(
                    owner_needs(&at, true)
                        .into_iter()
                        .filter(|n| n.verb == "patch"),
                );
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

/// Rules granting `needs` (all of one scope): one per (group, resource, verb), with the
/// object names when every need of it names one.
fn rules_of(needs: &[&Need]) -> Vec<Value> {
    let mut by: BTreeMap<(&str, &str, &str), (bool, BTreeSet<&str>)> = BTreeMap::new();
    for n in needs {
        let e = by
            .entry((n.group.as_str(), n.resource.as_str(), n.verb))
            .or_insert((true, BTreeSet::new()));
        match &n.name {
            Some(name) => {
                e.1.insert(name);
            }
            None => e.0 = false,
        }
    }
    by.into_iter()
        .map(|((group, resource, verb), (named, names))| {
            let mut r = json!({"apiGroups": [group], "resources": [resource], "verbs": [verb]});
            if named {
                r["resourceNames"] = json!(names);
            }
            r
        })
        .collect()
}

/// The objects granting the windows of `tenant` what `--gitops` asks (only with it): a
/// ClusterRole and ClusterRoleBinding `vpnmig-window-gitops:TENANT` for the reads in every
/// namespace, and in each owner's namespace a Role and RoleBinding of the same name for
/// that tenant's owners only (by name).
pub fn gitops_objects(tenant: &str, grants: &GitopsGrants) -> Vec<Value> {
    let name = format!("{GITOPS_ROLE}:{tenant}");
    let subjects = json!([{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": tenant}]);
    let needs = grants.needs(tenant);
    let everywhere: Vec<&Need> = needs.iter().filter(|n| n.namespace.is_none()).collect();
    let mut out = vec![
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name, "labels": labels(&[])},
            "rules": rules_of(&everywhere),
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": labels(&[])},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": subjects,
        }),
    ];
    let namespaces: BTreeSet<&str> = needs
        .iter()
        .filter_map(|n| n.namespace.as_deref())
        .collect();
    for ns in namespaces {
        let here: Vec<&Need> = needs
            .iter()
            .filter(|n| n.namespace.as_deref() == Some(ns))
            .collect();
        out.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name, "namespace": ns, "labels": labels(&[])},
            "rules": rules_of(&here),
        }));
        out.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": ns, "labels": labels(&[])},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": subjects,
        }));
    }
    out
}

/// A gateway and its next window, as `plan` and `status` name it.
#[derive(Clone, Debug, PartialEq)]
pub struct Scheduled {
    pub namespace: String,
    pub name: String,
    pub next: Next,
}

/// The next window of each gateway, in namespace/name order.
pub fn next_windows(
    gateways: &[IPsecGateway],
    file: Option<&WindowsFile>,
    now: jiff::Timestamp,
) -> Vec<Scheduled> {
    let mut out: Vec<Scheduled> = gateways
        .iter()
        .filter_map(|g| {
            let ns = g.metadata.namespace.clone()?;
            let name = g.metadata.name.clone()?;
            let labels = g.metadata.labels.clone().unwrap_or_default();
            let annotation = g
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(maintenance::ANNOTATION))
                .map(String::as_str);
            let next = maintenance::resolve(&ns, &name, &labels, annotation, file, now);
            Some(Scheduled {
                namespace: ns,
                name,
                next,
            })
        })
        .collect();
    out.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    out
}

/// The CronJob's name for gateway `name`: `vpnmig-window-NAME`, or when that is too long
/// its first characters and a hash of the whole (stable, DNS-1123).
pub fn cronjob_name(name: &str) -> String {
    let full = format!("vpnmig-window-{name}");
    if full.len() <= CRONJOB_NAME_MAX {
        return full;
    }
    use sha2::Digest;
    let hash: String = sha2::Sha256::digest(name.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let keep = CRONJOB_NAME_MAX - 9;
    format!("{}-{}", full[..keep].trim_end_matches('-'), &hash[..8])
}

fn labels(extra: &[(&str, &str)]) -> Value {
    let mut m = serde_json::Map::new();
    m.insert(MANAGED_BY.0.into(), MANAGED_BY.1.into());
    for (k, v) in extra {
        m.insert((*k).into(), (*v).into());
    }
    Value::Object(m)
}

/// The Role's rules: every (group, resource) of the preflight's checks with exactly its
/// verbs, in the order the preflight asks.
pub fn role_rules() -> Vec<Value> {
    let mut order: Vec<(&str, String)> = Vec::new();
    let mut verbs: BTreeMap<(&str, String), Vec<&str>> = BTreeMap::new();
    for (verb, group, resource, sub) in NEEDS {
        let res = if sub.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}/{sub}")
        };
        let key = (*group, res);
        if !verbs.contains_key(&key) {
            order.push(key.clone());
        }
        verbs.entry(key).or_default().push(verb);
    }
    order
        .into_iter()
        .map(|k| {
            let v = &verbs[&k];
            json!({"apiGroups": [k.0], "resources": [k.1], "verbs": v})
        })
        .collect()
}

/// The objects every namespace with a scheduled window gets.
pub fn namespace_objects(namespace: &str, opts: &Options) -> Vec<Value> {
    vec![
        json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": ACCOUNT, "namespace": namespace, "labels": labels(&[])},
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": ACCOUNT, "namespace": namespace, "labels": labels(&[])},
            "rules": role_rules(),
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": ACCOUNT, "namespace": namespace, "labels": labels(&[])},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ACCOUNT},
            "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": namespace}],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": format!("{CLUSTER_ROLE}:{namespace}"), "labels": labels(&[])},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": CLUSTER_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": namespace}],
        }),
        json!({
            "apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": QUOTA, "namespace": namespace, "labels": labels(&[])},
            "spec": {
                "hard": {"pods": opts.per_namespace.to_string()},
                "scopeSelector": {"matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "In", "values": [PRIORITY_CLASS]}
                ]},
            },
        }),
    ]
}

/// The cluster-scoped objects, once for the fleet: the PriorityClass window pods carry
/// (value 0, never preempting: it only marks them for the quotas), and the ClusterRole
/// of the reads a window makes outside its namespace: every IPsecGateway and VPNGateway
/// (the floating-IP and serviceCIDR collision checks of the re-plan), the three CRDs
/// (the target schemas, the operator's presence), and namespace kube-system (the
/// cluster's identity in the change record).
pub fn cluster_objects() -> Vec<Value> {
    vec![
        json!({
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": PRIORITY_CLASS, "labels": labels(&[])},
            "value": 0, "preemptionPolicy": "Never", "globalDefault": false,
            "description": "vpnmig maintenance-window pods; counted by each namespace's ResourceQuota vpnmig-windows",
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": CLUSTER_ROLE, "labels": labels(&[])},
            "rules": [
                {"apiGroups": ["ipsec.bnerd.net"], "resources": ["ipsecgateways"], "verbs": ["list"]},
                {"apiGroups": ["vpn.bnerd.net"], "resources": ["vpngateways"], "verbs": ["list"]},
                {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get"],
                 "resourceNames": ["ipsecgateways.ipsec.bnerd.net", "vpngateways.vpn.bnerd.net", "vpnpeers.vpn.bnerd.net"]},
                {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"], "resourceNames": ["kube-system"]},
            ],
        }),
    ]
}

/// The command a window's pod runs.
pub fn command(namespace: &str, name: &str, window: &Interval, opts: &Options) -> Vec<String> {
    let mut c: Vec<String> = [
        "vpnmig",
        "cutover",
        name,
        "-n",
        namespace,
        "--window-end",
        &window.end_rfc3339(),
        "--yes",
        "-o",
        "json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    c.extend(opts.cutover_flags.iter().cloned());
    c
}

/// Exit codes after which a window is not tried again (docs/exit-codes.md): invalid
/// input, blocked by checks, verify failed, timeout, refused (the window guard, a lock
/// held, a missing permission). A crash or an interrupted run (1, 130, a kill) is tried
/// again up to the backoff limit and resumes from the journal.
pub const FINAL_EXIT_CODES: [i32; 5] = [3, 4, 5, 6, 7];

/// The CronJob that starts gateway `namespace/name`'s window.
pub fn cronjob(namespace: &str, name: &str, window: &Interval, opts: &Options) -> Value {
    let (schedule, zone) = maintenance::cron(&window.start);
    let length = window.length().as_secs().max(60);
    let mut resources = json!({
        "requests": {"cpu": "50m", "memory": "64Mi"},
        "limits": {"memory": "256Mi"},
    });
    if opts.fleet_slots {
        resources["requests"][FLEET_SLOT] = json!("1");
        resources["limits"][FLEET_SLOT] = json!("1");
    }
    let pod_labels = labels(&[(GATEWAY_LABEL, name)]);
    json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {
            "name": cronjob_name(name), "namespace": namespace,
            "labels": labels(&[(GATEWAY_LABEL, name)]),
            "annotations": {
                maintenance::ANNOTATION: window.given,
                "vpnmig.bnerd.net/window-start": window.start.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string(),
                "vpnmig.bnerd.net/window-end": window.end_rfc3339(),
            },
        },
        "spec": {
            "schedule": schedule,
            "timeZone": zone,
            // Started late (the controller was down) but inside the window: still run;
            // the cutover's own guard judges whether what is left suffices.
            "startingDeadlineSeconds": length,
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 1,
            "jobTemplate": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "backoffLimit": 2,
                    // A pod that never started in the window (a quota full all night) ends
                    // an hour after it; one that started runs under its own timeouts.
                    "activeDeadlineSeconds": length + 3600,
                    "podFailurePolicy": {"rules": [
                        {"action": "FailJob", "onExitCodes": {"containerName": "vpnmig", "operator": "In", "values": FINAL_EXIT_CODES}},
                        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
                    ]},
                    "template": {
                        "metadata": {"labels": pod_labels},
                        "spec": {
                            "serviceAccountName": ACCOUNT,
                            "priorityClassName": PRIORITY_CLASS,
                            "restartPolicy": "Never",
                            "securityContext": {
                                "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
                                "seccompProfile": {"type": "RuntimeDefault"},
                            },
                            "containers": [{
                                "name": "vpnmig",
                                "image": opts.image,
                                "args": command(namespace, name, window, opts)[1..],
                                "env": [
                                    {"name": "HOME", "value": "/tmp"},
                                    {"name": "VPNMIG_STATE_DIR", "value": "/tmp/vpnmig"},
                                    {"name": "NO_COLOR", "value": "1"},
                                ],
                                "resources": resources,
                                "securityContext": {
                                    "allowPrivilegeEscalation": false,
                                    "readOnlyRootFilesystem": true,
                                    "capabilities": {"drop": ["ALL"]},
                                },
                                "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                            }],
                            "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}],
                        },
                    },
                },
            },
        },
    })
}

/// Every manifest for `scheduled` (those with a window ahead get a CronJob), cluster
/// objects first, then each namespace's account, Role, bindings and quota, then the
/// CronJobs: the order `--apply` follows.
pub fn manifests(scheduled: &[Scheduled], opts: &Options) -> Vec<Value> {
    let ahead: Vec<(&Scheduled, &Interval)> = scheduled
        .iter()
        .filter_map(|s| s.next.ahead().map(|i| (s, i)))
        .collect();
    if ahead.is_empty() {
        return Vec::new();
    }
    let mut out = cluster_objects();
    let namespaces: BTreeSet<&str> = ahead.iter().map(|(s, _)| s.namespace.as_str()).collect();
    for ns in namespaces {
        out.extend(namespace_objects(ns, opts));
        if let Some(g) = &opts.gitops {
            out.extend(gitops_objects(ns, g));
        }
    }
    for (s, i) in ahead {
        out.push(cronjob(&s.namespace, &s.name, i, opts));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Options {
        Options {
            image: "registry.example/vpnmig:0.1.0".into(),
            per_namespace: 1,
            fleet_slots: false,
            cutover_flags: vec!["--rollback-on-failure".into()],
            gitops: None,
        }
    }

    #[test]
    fn the_role_holds_exactly_the_verbs_the_preflight_checks() {
        let rules = role_rules();
        let mut granted: Vec<(String, String, String)> = Vec::new();
        for r in &rules {
            for v in r["verbs"].as_array().unwrap() {
                granted.push((
                    v.as_str().unwrap().into(),
                    r["apiGroups"][0].as_str().unwrap().into(),
                    r["resources"][0].as_str().unwrap().into(),
                ));
            }
        }
        let needed: Vec<(String, String, String)> = NEEDS
            .iter()
            .map(|(v, g, r, s)| {
                let res = if s.is_empty() {
                    r.to_string()
                } else {
                    format!("{r}/{s}")
                };
                (v.to_string(), g.to_string(), res)
            })
            .collect();
        let (mut a, mut b) = (granted.clone(), needed.clone());
        a.sort();
        b.sort();
        assert_eq!(a, b);
        // Server-side apply creates: `create` is there for both new kinds.
        assert!(granted.contains(&(
            "create".into(),
            "vpn.bnerd.net".into(),
            "vpngateways".into()
        )));
        assert!(granted.contains(&("create".into(), "".into(), "pods/exec".into())));
    }

    fn flux_and_argo() -> GitopsGrants {
        let flux = OwnerRef {
            api_version: "kustomize.toolkit.fluxcd.io/v1".into(),
            kind: "Kustomization".into(),
            namespace: Some("flux-system".into()),
            name: "acme".into(),
        };
        let argo = OwnerRef {
            api_version: "argoproj.io/v1alpha1".into(),
            kind: "Application".into(),
            namespace: None,
            name: "tenants".into(),
        };
        GitopsGrants {
            suspends: true,
            owners: [(
                "tenant-acme".to_string(),
                vec![
                    (flux, Some("flux-system".into())),
                    (argo, Some("argocd".into())),
                ],
            )]
            .into_iter()
            .collect(),
        }
    }

    #[test]
    fn with_gitops_the_windows_get_the_owners_and_the_other_windows_journals_and_locks() {
        let g = flux_and_argo();
        let needs: Vec<String> = g.needs("tenant-acme").iter().map(Need::display).collect();
        assert_eq!(
            needs,
            [
                "get kustomizations named acme in namespace flux-system",
                "list configmaps in all namespaces",
                "list applications in all namespaces",
                "list applications named tenants in all namespaces",
                "list leases in all namespaces",
                "list kustomizations in all namespaces",
                "patch applications named tenants in namespace argocd",
                "patch kustomizations named acme in namespace flux-system",
            ]
        );
        // `ignore` only reads the owners.
        let read_only = GitopsGrants {
            suspends: false,
            ..g.clone()
        };
        assert!(
            read_only
                .needs("tenant-acme")
                .iter()
                .all(|n| n.verb != "patch")
        );
        // A tenant without owners still reads the other windows' journals and locks.
        let mut cluster_wide = gitops_cluster_needs();
        cluster_wide.sort();
        assert_eq!(g.needs("tenant-other"), cluster_wide);
        let objects = gitops_objects("tenant-acme", &g);
        let names: Vec<String> = objects
            .iter()
            .map(|o| {
                format!(
                    "{}/{} {}",
                    o["kind"].as_str().unwrap(),
                    o["metadata"]["name"].as_str().unwrap(),
                    o["metadata"]["namespace"].as_str().unwrap_or("-")
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                "ClusterRole/vpnmig-window-gitops:tenant-acme -",
                "ClusterRoleBinding/vpnmig-window-gitops:tenant-acme -",
                "Role/vpnmig-window-gitops:tenant-acme argocd",
                "RoleBinding/vpnmig-window-gitops:tenant-acme argocd",
                "Role/vpnmig-window-gitops:tenant-acme flux-system",
                "RoleBinding/vpnmig-window-gitops:tenant-acme flux-system",
            ]
        );
        insta::assert_yaml_snapshot!(objects);
    }

    #[test]
    fn without_gitops_no_gitops_objects() {
        let m = manifests(
            &[Scheduled {
                namespace: "tenant-acme".into(),
                name: "acme".into(),
                next: Next::Window {
                    interval: maintenance::parse_interval("2026-12-09T03:00:00-05:00/PT2H", None)
                        .unwrap(),
                    source: maintenance::Source::Annotation,
                    open: false,
                },
            }],
            &opts(),
        );
        assert!(m.iter().all(|o| {
            !o["metadata"]["name"]
                .as_str()
                .unwrap()
                .starts_with(GITOPS_ROLE)
        }));
        let with = manifests(
            &[Scheduled {
                namespace: "tenant-acme".into(),
                name: "acme".into(),
                next: Next::Window {
                    interval: maintenance::parse_interval("2026-12-09T03:00:00-05:00/PT2H", None)
                        .unwrap(),
                    source: maintenance::Source::Annotation,
                    open: false,
                },
            }],
            &Options {
                gitops: Some(flux_and_argo()),
                ..opts()
            },
        );
        // Only additions: the same objects, and the gitops ones after the namespace's.
        assert_eq!(with.len(), m.len() + 6);
        assert!(m.iter().all(|o| with.contains(o)));
    }

    #[test]
    fn a_long_gateway_name_gives_a_cronjob_name_that_fits() {
        assert_eq!(cronjob_name("acme"), "vpnmig-window-acme");
        let long = "a".repeat(60);
        let n = cronjob_name(&long);
        assert_eq!(n.len(), 52);
        assert_ne!(cronjob_name(&"a".repeat(61)), n);
        assert!(n.starts_with("vpnmig-window-aaaa"));
    }

    #[test]
    fn manifests_for_two_namespaces_snapshot() {
        let file = maintenance::parse_file(
            "windows:\n  - gateway: tenant-acme/acme\n    window: 2026-12-08T02:00/PT1H\n    timeZone: Europe/Berlin\n",
        )
        .unwrap();
        let i = file.entries[0].interval.clone();
        let other = maintenance::parse_interval("2026-12-09T03:00:00-05:00/PT2H", None).unwrap();
        let s = vec![
            Scheduled {
                namespace: "tenant-acme".into(),
                name: "acme".into(),
                next: Next::Window {
                    interval: i,
                    source: maintenance::Source::Annotation,
                    open: false,
                },
            },
            Scheduled {
                namespace: "tenant-ny".into(),
                name: "ny1".into(),
                next: Next::Window {
                    interval: other,
                    source: maintenance::Source::Annotation,
                    open: false,
                },
            },
            Scheduled {
                namespace: "tenant-ny".into(),
                name: "ny2".into(),
                next: Next::None,
            },
        ];
        let m = manifests(&s, &opts());
        let kinds: Vec<String> = m
            .iter()
            .map(|o| {
                format!(
                    "{}/{}",
                    o["kind"].as_str().unwrap(),
                    o["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "PriorityClass/vpnmig-window",
                "ClusterRole/vpnmig-window-read",
                "ServiceAccount/vpnmig-window",
                "Role/vpnmig-window",
                "RoleBinding/vpnmig-window",
                "ClusterRoleBinding/vpnmig-window-read:tenant-acme",
                "ResourceQuota/vpnmig-windows",
                "ServiceAccount/vpnmig-window",
                "Role/vpnmig-window",
                "RoleBinding/vpnmig-window",
                "ClusterRoleBinding/vpnmig-window-read:tenant-ny",
                "ResourceQuota/vpnmig-windows",
                "CronJob/vpnmig-window-acme",
                "CronJob/vpnmig-window-ny1",
            ]
        );
        insta::assert_yaml_snapshot!(m.last().unwrap());
        insta::assert_yaml_snapshot!(m[m.len() - 2]);
    }
}
