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

/// Who a request acts as: the authenticated `user`, or, when it carries
/// `Impersonate-User` (and `Impersonate-Group` headers), that user with those groups,
/// provided `user` may `impersonate` `users` (and `groups`), as kube-apiserver checks it.
/// The impersonated identity has the rules of the configured user of that name (none if
/// there is none) and of each named group.
pub fn impersonate(
    user: &User,
    users: &[User],
    groups: &[Group],
    as_user: Option<&str>,
    as_groups: &[&str],
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
    if !user.allows("impersonate", "users", None) {
        return Err(forbidden(
            user,
            "impersonate",
            "users",
            None,
            "",
            Some(name),
            None,
        ));
    }
    let mut rules: Vec<Rule> = users
        .iter()
        .filter(|u| u.name == name)
        .flat_map(|u| u.rules.clone())
        .collect();
    for g in as_groups {
        if !user.allows("impersonate", "groups", None) {
            return Err(forbidden(
                user,
                "impersonate",
                "groups",
                None,
                "",
                Some(g),
                None,
            ));
        }
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
/// its `Impersonate-User` and `Impersonate-Group` headers ask for.
pub fn identify(
    users: &[User],
    groups: &[Group],
    headers: &axum::http::HeaderMap,
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
    impersonate(user, users, groups, as_user, &as_groups)
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
        // No headers: the authenticated user.
        assert_eq!(impersonate(&ro, &users, &groups, None, &[]).unwrap(), ro);
        // As ro: ro's rules, not the admin's.
        let as_ro = impersonate(&admin, &users, &groups, Some("ro"), &[]).unwrap();
        assert_eq!(as_ro.name, "ro");
        assert!(as_ro.allows("get", "ipsecgateways", Some("a")));
        assert!(!as_ro.allows("delete", "ipsecgateways", Some("a")));
        // As ro in group ops: both.
        let as_ops = impersonate(&admin, &users, &groups, Some("ro"), &["ops"]).unwrap();
        assert!(as_ops.allows("delete", "ipsecgateways", Some("a")));
        // An unknown user may do nothing.
        let nobody = impersonate(&admin, &users, &groups, Some("nobody"), &[]).unwrap();
        assert!(!nobody.allows("get", "ipsecgateways", Some("a")));
        // ro may not impersonate.
        let e = impersonate(&ro, &users, &groups, Some("admin"), &[]).unwrap_err();
        assert_eq!(e.code, 403);
        assert!(
            e.message
                .contains("User \"ro\" cannot impersonate resource \"users\""),
            "{}",
            e.message
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
