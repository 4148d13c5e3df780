//! Bearer-token authentication (401) and a per-token allowlist of verbs and resources
//! (403), so RBAC failures can be tested. Also answers SelfSubjectAccessReviews, and
//! impersonation (`Impersonate-User`, `Impersonate-Group`: kubectl's `--as`,
//! `--as-group`) as kube-apiserver does it.

use serde::{Deserialize, Serialize};

use crate::status::{ApiError, qualified};

/// One allow rule: verbs × resources (`plural` or `plural/subresource`, `*` for any), in
/// the listed namespaces (empty: all).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    pub verbs: Vec<String>,
    pub resources: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
}

/// A user: a name, its bearer token and what it may do.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct User {
    pub name: String,
    pub token: String,
    pub rules: Vec<Rule>,
    /// Not covered by the `system:basic-user` binding that lets every authenticated user
    /// create SelfSubjectAccessReviews (a hardened cluster can remove it): such a user
    /// needs a rule for them like for anything else.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub without_basic_user: bool,
}

impl Rule {
    /// `verbs` × `resources` in every namespace.
    pub fn new(verbs: &[&str], resources: &[&str]) -> Rule {
        Rule {
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
            resources: resources.iter().map(|r| r.to_string()).collect(),
            namespaces: Vec::new(),
        }
    }
}

impl User {
    /// A user `name` with token `<name>-token` and `rules` (context `vpnmig-sandbox-<name>`).
    pub fn with_rules(name: &str, rules: Vec<Rule>) -> User {
        User {
            name: name.into(),
            token: format!("{name}-token"),
            rules,
            without_basic_user: false,
        }
    }

    /// A user allowed everything.
    pub fn admin(token: &str) -> Self {
        User {
            name: "sandbox-admin".into(),
            token: token.into(),
            rules: vec![Rule {
                verbs: vec!["*".into()],
                resources: vec!["*".into()],
                namespaces: vec![],
            }],
            without_basic_user: false,
        }
    }

    /// Whether this user may `verb` the `resource` (plural or plural/sub) in `ns`.
    pub fn allows(&self, verb: &str, resource: &str, ns: Option<&str>) -> bool {
        let any = |list: &[String], x: &str| list.iter().any(|v| v == "*" || v == x);
        self.rules.iter().any(|r| {
            any(&r.verbs, verb)
                && (any(&r.resources, resource)
                    || resource
                        .split_once('/')
                        .is_some_and(|(p, _)| r.resources.iter().any(|v| v == &format!("{p}/*"))))
                && (r.namespaces.is_empty()
                    || ns.is_some_and(|n| r.namespaces.iter().any(|v| v == n)))
        })
    }
}

/// A group's rules, for requests that impersonate a member (`Impersonate-Group`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Group {
    pub name: String,
    pub rules: Vec<Rule>,
}

/// What a request asks for, as kube-apiserver's `RequestInfoFactory` names it for its
/// authorizer: a resource request (verb, group, plural, subresource, name, namespace) or a
/// path (discovery, `/version`) with the method as its verb.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attributes {
    pub verb: String,
    pub path: String,
    pub resource: Option<ResourceAttributes>,
}

/// The resource part of [`Attributes`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceAttributes {
    pub group: String,
    pub plural: String,
    pub sub: Option<String>,
    pub name: Option<String>,
    pub ns: Option<String>,
}

impl Attributes {
    /// The attributes of `method path?query`, as `RequestInfoFactory.NewRequestInfo`
    /// derives them: fewer than three path segments (or fewer than four under `/apis`) is a
    /// path; a GET without a name is `list`, or `watch` with `watch` set (other than
    /// `false`/`0`), named by an exact `metadata.name` field selector; a DELETE without a
    /// name is `deletecollection`; under `namespaces/NS/` the next segment is the resource
    /// unless it is the namespace's `status` or `finalize`.
    pub fn of(method: &str, path: &str, query: Option<&str>) -> Attributes {
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        let plain = Attributes {
            verb: method.to_ascii_lowercase(),
            path: path.to_string(),
            resource: None,
        };
        let (group, rest) = match parts.as_slice() {
            ["api", _, _, ..] => ("", &parts[2..]),
            ["apis", g, _, _, ..] => (*g, &parts[3..]),
            _ => return plain,
        };
        let mut verb = match method {
            "POST" => "create",
            "GET" | "HEAD" => "get",
            "PUT" => "update",
            "PATCH" => "patch",
            "DELETE" => "delete",
            _ => "",
        }
        .to_string();
        let mut rest = rest;
        if rest.len() >= 2 && matches!(rest[0], "watch" | "proxy") {
            verb = rest[0].to_string();
            rest = &rest[1..];
        }
        let mut ns = None;
        if rest.first() == Some(&"namespaces") && rest.len() > 1 {
            ns = Some(rest[1].to_string());
            if rest.len() > 2 && !matches!(rest[2], "status" | "finalize") {
                rest = &rest[2..];
            }
        }
        let mut name = rest.get(1).map(|n| n.to_string());
        let sub = rest.get(2).map(|s| s.to_string());
        let query: Vec<(String, String)> =
            serde_urlencoded::from_str(query.unwrap_or("")).unwrap_or_default();
        let param = |k: &str| query.iter().find(|(q, _)| q == k).map(|(_, v)| v.as_str());
        if name.is_none() && verb == "get" {
            verb = match param("watch").map(str::to_ascii_lowercase).as_deref() {
                None | Some("false" | "0") => "list",
                Some(_) => "watch",
            }
            .into();
        }
        if name.is_none() && matches!(verb.as_str(), "list" | "watch") {
            name = param("fieldSelector")
                .and_then(|f| f.strip_prefix("metadata.name="))
                .filter(|n| !n.is_empty() && !n.contains([',', '/']))
                .map(str::to_string);
        }
        if name.is_none() && verb == "delete" {
            verb = "deletecollection".into();
        }
        Attributes {
            verb,
            path: path.to_string(),
            resource: Some(ResourceAttributes {
                group: group.to_string(),
                plural: rest.first().map(|p| p.to_string()).unwrap_or_default(),
                sub,
                name,
                ns,
            }),
        }
    }

    /// Whether `user`'s rules allow `verb` on what these attributes name (the emulator's
    /// rules name no paths: a path is never allowed).
    fn allowed(&self, user: &User, verb: &str) -> bool {
        self.resource.as_ref().is_some_and(|r| {
            let resource = match &r.sub {
                Some(s) => format!("{}/{s}", r.plural),
                None => r.plural.clone(),
            };
            user.allows(verb, &resource, r.ns.as_deref())
        })
    }

    /// kube-apiserver's 403 for `user` asking `verb` on what these attributes name
    /// (`responsewriters.ForbiddenStatusError`).
    fn forbidden(&self, user: &User, verb: &str) -> ApiError {
        match &self.resource {
            Some(r) => forbidden(
                user,
                verb,
                &r.plural,
                r.sub.as_deref(),
                &r.group,
                r.name.as_deref(),
                r.ns.as_deref(),
            ),
            None => {
                let mut e = ApiError::new(
                    403,
                    "Forbidden",
                    format!(
                        "forbidden: User \"{}\" cannot {verb} path \"{}\"",
                        user.name, self.path
                    ),
                );
                e.details = Some(Box::default());
                e
            }
        }
    }
}

/// `system:serviceaccount:NS:NAME` as (NS, NAME).
fn service_account(name: &str) -> Option<(&str, &str)> {
    let (ns, sa) = name
        .strip_prefix("system:serviceaccount:")?
        .split_once(':')?;
    (crate::limits::dns1123_subdomain(ns).is_empty()
        && !ns.is_empty()
        && !sa.is_empty()
        && !sa.contains(':')
        && crate::limits::dns1123_subdomain(sa).is_empty())
    .then_some((ns, sa))
}

/// `system:node:NAME` as NAME.
fn node(name: &str) -> Option<&str> {
    name.strip_prefix("system:node:")
        .filter(|n| !n.is_empty() && crate::limits::dns1123_subdomain(n).is_empty())
}

/// The constrained impersonation mode (KEP-5284, on by default since Kubernetes v1.36)
/// that fits impersonating `name` in `groups`: a node or a service account alone (the
/// associated-node mode needs a service account bound to that node, which the emulator's
/// users are not), or any other user (`user-info`); none for a node or service account
/// with groups, which only the legacy `impersonate` verb covers.
fn constrained_mode(name: &str, groups: &[&str]) -> Option<&'static str> {
    match (node(name), service_account(name)) {
        (Some(_), _) => groups.is_empty().then_some("arbitrary-node"),
        (_, Some(_)) => groups.is_empty().then_some("serviceaccount"),
        _ => Some("user-info"),
    }
}

/// Who a request acts as: the authenticated `user`, or, when it carries
/// `Impersonate-User` (and `Impersonate-Group` headers), that user with those groups,
/// provided `user` may impersonate them, as kube-apiserver v1.37 checks it: first the
/// constrained impersonation mode that fits ([`constrained_mode`]: `impersonate-on:<mode>:<verb>`
/// on the request itself, then `impersonate:<mode>` on the user (`users`, `nodes` or
/// `serviceaccounts` of `authentication.k8s.io`) and each group), then the legacy
/// `impersonate` verb on `users` (a service account's `serviceaccounts` in its namespace)
/// and `groups`. When both refuse, the mode's refusal is the answer (the legacy one where no
/// mode fits). The impersonated identity has the rules of the configured user of that name
/// (none if there is none) and of each named group.
pub fn impersonate(
    user: &User,
    users: &[User],
    groups: &[Group],
    as_user: Option<&str>,
    as_groups: &[&str],
    on: &Attributes,
) -> Result<User, ApiError> {
    let Some(name) = as_user else {
        if as_groups.is_empty() {
            return Ok(user.clone());
        }
        return Err(ApiError::new(
            500,
            "InternalError",
            format!("requested groups {as_groups:?} without impersonating a user"),
        ));
    };
    const AUTHN: &str = "authentication.k8s.io";
    let constrained = constrained_mode(name, as_groups).map(|mode| {
        let on_verb = format!("impersonate-on:{mode}:{}", on.verb);
        if !on.allowed(user, &on_verb) {
            return Err(on.forbidden(user, &on_verb));
        }
        let verb = format!("impersonate:{mode}");
        let (plural, who, ns) = match (node(name), service_account(name)) {
            (Some(n), _) => ("nodes", n, None),
            (_, Some((ns, sa))) => ("serviceaccounts", sa, Some(ns)),
            _ => ("users", name, None),
        };
        if !user.allows(&verb, plural, ns) {
            return Err(forbidden(user, &verb, plural, None, AUTHN, Some(who), ns));
        }
        match as_groups
            .iter()
            .find(|_| !user.allows(&verb, "groups", None))
        {
            Some(g) => Err(forbidden(user, &verb, "groups", None, AUTHN, Some(g), None)),
            None => Ok(()),
        }
    });
    let legacy = || {
        let (plural, who, ns) = match service_account(name) {
            Some((ns, sa)) => ("serviceaccounts", sa, Some(ns)),
            None => ("users", name, None),
        };
        if !user.allows("impersonate", plural, ns) {
            return Err(forbidden(
                user,
                "impersonate",
                plural,
                None,
                "",
                Some(who),
                ns,
            ));
        }
        match as_groups
            .iter()
            .find(|_| !user.allows("impersonate", "groups", None))
        {
            Some(g) => Err(forbidden(
                user,
                "impersonate",
                "groups",
                None,
                "",
                Some(g),
                None,
            )),
            None => Ok(()),
        }
    };
    match (constrained, legacy()) {
        (Some(Ok(())), _) | (_, Ok(())) => {}
        (Some(Err(e)), Err(_)) | (None, Err(e)) => return Err(e),
    }
    let mut rules: Vec<Rule> = users
        .iter()
        .filter(|u| u.name == name)
        .flat_map(|u| u.rules.clone())
        .collect();
    for g in as_groups {
        rules.extend(
            groups
                .iter()
                .filter(|x| x.name == *g)
                .flat_map(|x| x.rules.clone()),
        );
    }
    Ok(User {
        name: name.to_string(),
        token: String::new(),
        rules,
        // The impersonated user keeps system:basic-user unless it is a user the
        // settings took it from.
        without_basic_user: users.iter().any(|u| u.name == name && u.without_basic_user),
    })
}

/// Who a request acts as: [`authenticate`] its `Authorization`, then [`impersonate`] what
/// its `Impersonate-User` and `Impersonate-Group` headers ask for (`on`: the request's
/// [`Attributes`], which a refusal names).
pub fn identify(
    users: &[User],
    groups: &[Group],
    headers: &axum::http::HeaderMap,
    on: &Attributes,
) -> Result<User, ApiError> {
    let user = authenticate(
        users,
        headers.get("authorization").and_then(|h| h.to_str().ok()),
    )?;
    let as_groups: Vec<&str> = headers
        .get_all("impersonate-group")
        .iter()
        .filter_map(|h| h.to_str().ok())
        .collect();
    let as_user = headers
        .get("impersonate-user")
        .and_then(|h| h.to_str().ok());
    impersonate(user, users, groups, as_user, &as_groups, on)
}

/// The user a request's `Authorization` header authenticates, or 401.
pub fn authenticate<'a>(users: &'a [User], header: Option<&str>) -> Result<&'a User, ApiError> {
    let token = header
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::trim);
    token
        .filter(|t| !t.is_empty())
        .and_then(|t| users.iter().find(|u| u.token == t))
        .ok_or_else(|| ApiError::new(401, "Unauthorized", "Unauthorized"))
}

/// The 403 the real server gives, e.g. `vpngateways.vpn.bnerd.net "acme" is forbidden:
/// User "alice" cannot delete resource "vpngateways" in API group "vpn.bnerd.net" in the
/// namespace "tenant-acme"`.
pub fn forbidden(
    user: &User,
    verb: &str,
    plural: &str,
    sub: Option<&str>,
    group: &str,
    name: Option<&str>,
    ns: Option<&str>,
) -> ApiError {
    let what = qualified(plural, group);
    let subject = match name {
        Some(n) => format!("{what} \"{n}\""),
        None => what,
    };
    let resource = match sub {
        Some(s) => format!("{plural}/{s}"),
        None => plural.to_string(),
    };
    let scope = ns
        .map(|n| format!(" in the namespace \"{n}\""))
        .unwrap_or_else(|| " at the cluster scope".into());
    let mut e = ApiError::new(
        403,
        "Forbidden",
        format!(
            "{subject} is forbidden: User \"{}\" cannot {verb} resource \"{resource}\" in API group \"{group}\"{scope}",
            user.name
        ),
    );
    e.details = Some(Box::new((
        name.unwrap_or_default().to_string(),
        group.to_string(),
        plural.to_string(),
    )));
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_verbs_resources_and_namespaces() {
        let u = User {
            name: "ro".into(),
            token: "t".into(),
            rules: vec![Rule {
                verbs: vec!["get".into(), "list".into()],
                resources: vec!["ipsecgateways".into(), "pods/*".into()],
                namespaces: vec!["a".into()],
            }],
            without_basic_user: false,
        };
        assert!(u.allows("get", "ipsecgateways", Some("a")));
        assert!(!u.allows("delete", "ipsecgateways", Some("a")));
        assert!(!u.allows("get", "ipsecgateways", Some("b")));
        assert!(u.allows("get", "pods/exec", Some("a")));
        assert!(User::admin("x").allows("delete", "anything", None));
    }

    #[test]
    fn impersonation_needs_the_verb_and_takes_the_target_rules() {
        let admin = User::admin("x");
        let ro = User::with_rules("ro", vec![Rule::new(&["get"], &["ipsecgateways"])]);
        let ops = Group {
            name: "ops".into(),
            rules: vec![Rule::new(&["delete"], &["ipsecgateways"])],
        };
        let users = [admin.clone(), ro.clone()];
        let groups = [ops];
        let on = Attributes::of(
            "GET",
            "/apis/ipsec.bnerd.net/v1alpha1/namespaces/a/ipsecgateways",
            None,
        );
        let imp = |who: &User, name: Option<&str>, g: &[&str]| {
            impersonate(who, &users, &groups, name, g, &on)
        };
        // No headers: the authenticated user.
        assert_eq!(imp(&ro, None, &[]).unwrap(), ro);
        // As ro: ro's rules, not the admin's.
        let as_ro = imp(&admin, Some("ro"), &[]).unwrap();
        assert_eq!(as_ro.name, "ro");
        assert!(as_ro.allows("get", "ipsecgateways", Some("a")));
        assert!(!as_ro.allows("delete", "ipsecgateways", Some("a")));
        // As ro in group ops: both.
        let as_ops = imp(&admin, Some("ro"), &["ops"]).unwrap();
        assert!(as_ops.allows("delete", "ipsecgateways", Some("a")));
        // An unknown user may do nothing.
        let nobody = imp(&admin, Some("nobody"), &[]).unwrap();
        assert!(!nobody.allows("get", "ipsecgateways", Some("a")));
        // ro may not impersonate: kube-apiserver v1.37 names the constrained mode's check
        // of the request itself (the user-info mode, for a plain user).
        let e = imp(&ro, Some("admin"), &[]).unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "ipsecgateways.ipsec.bnerd.net is forbidden: User \"ro\" cannot impersonate-on:user-info:list resource \"ipsecgateways\" in API group \"ipsec.bnerd.net\" in the namespace \"a\""
        );
        // A service account alone: the serviceaccount mode; with groups no mode fits, and
        // the legacy check names the service account in its namespace.
        let e = imp(&ro, Some("system:serviceaccount:ns1:bot"), &[]).unwrap_err();
        assert!(
            e.message
                .contains("cannot impersonate-on:serviceaccount:list resource"),
            "{}",
            e.message
        );
        let e = imp(&ro, Some("system:serviceaccount:ns1:bot"), &["ops"]).unwrap_err();
        assert_eq!(
            e.message,
            "serviceaccounts \"bot\" is forbidden: User \"ro\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"ns1\""
        );
        // Allowed on the request but not the user: the mode's own check on the user.
        let on_only = User::with_rules(
            "on-only",
            vec![Rule::new(
                &["impersonate-on:user-info:list"],
                &["ipsecgateways"],
            )],
        );
        let e = imp(&on_only, Some("ro"), &[]).unwrap_err();
        assert_eq!(
            e.message,
            "users.authentication.k8s.io \"ro\" is forbidden: User \"on-only\" cannot impersonate:user-info resource \"users\" in API group \"authentication.k8s.io\" at the cluster scope"
        );
        // Constrained impersonation alone is enough.
        let constrained = User::with_rules(
            "constrained",
            vec![
                Rule::new(&["impersonate-on:user-info:list"], &["ipsecgateways"]),
                Rule::new(&["impersonate:user-info"], &["users"]),
            ],
        );
        assert_eq!(imp(&constrained, Some("ro"), &[]).unwrap().name, "ro");
        // A discovery path: the path is named.
        let e = impersonate(
            &ro,
            &users,
            &groups,
            Some("admin"),
            &[],
            &Attributes::of("GET", "/apis", None),
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "forbidden: User \"ro\" cannot impersonate-on:user-info:get path \"/apis\""
        );
    }

    #[test]
    fn attributes_are_derived_as_kube_apiserver_derives_them() {
        let of = |m: &str, p: &str, q: Option<&str>| {
            let a = Attributes::of(m, p, q);
            let r = a.resource.unwrap_or(ResourceAttributes {
                group: "-".into(),
                plural: "-".into(),
                sub: None,
                name: None,
                ns: None,
            });
            (a.verb, r.group, r.plural, r.sub, r.name, r.ns)
        };
        let s = |x: &str| Some(x.to_string());
        assert_eq!(of("GET", "/api/v1", None).0, "get");
        assert_eq!(of("GET", "/apis/vpn.bnerd.net/v1alpha1", None).2, "-");
        assert_eq!(
            of("GET", "/api/v1/namespaces/a/pods", Some("watch=true")),
            ("watch".into(), "".into(), "pods".into(), None, None, s("a"))
        );
        assert_eq!(
            of(
                "GET",
                "/apis/vpn.bnerd.net/v1alpha1/namespaces/a/vpngateways",
                Some("fieldSelector=metadata.name%3Dacme&watch=1")
            ),
            (
                "watch".into(),
                "vpn.bnerd.net".into(),
                "vpngateways".into(),
                None,
                s("acme"),
                s("a")
            )
        );
        assert_eq!(
            of("GET", "/api/v1/namespaces/a/pods/p/exec", None),
            (
                "get".into(),
                "".into(),
                "pods".into(),
                s("exec"),
                s("p"),
                s("a")
            )
        );
        assert_eq!(
            of("DELETE", "/api/v1/namespaces/a/configmaps", None).0,
            "deletecollection"
        );
        // A Namespace is in its own namespace; its status is its subresource.
        assert_eq!(
            of("PUT", "/api/v1/namespaces/a/status", None),
            (
                "update".into(),
                "".into(),
                "namespaces".into(),
                s("status"),
                s("a"),
                s("a")
            )
        );
    }

    #[test]
    fn forbidden_reads_like_the_real_server() {
        let u = User::admin("x");
        let e = forbidden(
            &User {
                name: "alice".into(),
                ..u
            },
            "delete",
            "vpngateways",
            None,
            "vpn.bnerd.net",
            Some("acme"),
            Some("tenant-acme"),
        );
        assert_eq!(
            e.message,
            "vpngateways.vpn.bnerd.net \"acme\" is forbidden: User \"alice\" cannot delete resource \"vpngateways\" in API group \"vpn.bnerd.net\" in the namespace \"tenant-acme\""
        );
    }
}
