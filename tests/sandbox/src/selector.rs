//! Label and field selectors (`?labelSelector=`, `?fieldSelector=`), with the syntax of
//! k8s.io/apimachinery: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`;
//! field selectors take `path=value` and `path!=value` on any dotted path.

use serde_json::Value;

use crate::status::ApiError;

#[derive(Clone, Debug, PartialEq)]
enum Req {
    Eq(String, String),
    Ne(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LabelSelector(Vec<Req>);

/// Split on commas that are not inside parentheses.
fn terms(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0);
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out.into_iter()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

fn set(values: &str) -> Result<Vec<String>, ApiError> {
    let inner = values
        .trim()
        .strip_prefix('(')
        .and_then(|v| v.strip_suffix(')'));
    let inner = inner.ok_or_else(|| {
        ApiError::bad_request(format!(
            "unable to parse requirement: expected a set in parentheses, found {values:?}"
        ))
    })?;
    Ok(inner
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect())
}

/// A label key (`prefix/name`) or value as the API server accepts them.
fn valid_label(k: &str, key: bool) -> bool {
    let name = if key {
        k.rsplit_once('/').map_or(k, |(_, n)| n)
    } else {
        k
    };
    if !key && name.is_empty() {
        return true;
    }
    !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let reqs = Self::parse_terms(s)?;
        for r in &reqs {
            let (k, vs): (&str, Vec<&str>) = match r {
                Req::Eq(k, v) | Req::Ne(k, v) => (k, vec![v.as_str()]),
                Req::In(k, vs) | Req::NotIn(k, vs) => (k, vs.iter().map(String::as_str).collect()),
                Req::Exists(k) | Req::NotExists(k) => (k, vec![]),
            };
            if !valid_label(k, true) || !vs.iter().all(|v| valid_label(v, false)) {
                return Err(ApiError::bad_request(format!(
                    "unable to parse requirement: invalid label selector {s:?}"
                )));
            }
        }
        Ok(LabelSelector(reqs))
    }

    fn parse_terms(s: &str) -> Result<Vec<Req>, ApiError> {
        let mut reqs = Vec::new();
        for t in terms(s) {
            let req = if let Some((k, v)) = t.split_once("!=") {
                Req::Ne(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = t.split_once("==") {
                Req::Eq(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = t.split_once('=') {
                Req::Eq(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = t.split_once(" notin ") {
                Req::NotIn(k.trim().into(), set(v)?)
            } else if let Some((k, v)) = t.split_once(" in ") {
                Req::In(k.trim().into(), set(v)?)
            } else if let Some(k) = t.strip_prefix('!') {
                Req::NotExists(k.trim().into())
            } else {
                Req::Exists(t.trim().into())
            };
            reqs.push(req);
        }
        Ok(reqs)
    }

    /// Whether an object's `metadata.labels` match.
    pub fn matches(&self, obj: &Value) -> bool {
        // No selector: every object, without looking it up (a list pages through every
        // object of its type for each page).
        if self.0.is_empty() {
            return true;
        }
        let labels = obj.pointer("/metadata/labels");
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Req::Eq(k, v) => get(k) == Some(v),
            Req::Ne(k, v) => get(k) != Some(v),
            Req::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Req::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            Req::Exists(k) => get(k).is_some(),
            Req::NotExists(k) => get(k).is_none(),
        })
    }
}

/// A parsed field selector.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        for t in terms(s) {
            let (path, eq, value) = if let Some((k, v)) = t.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = t.split_once("==").or_else(|| t.split_once('=')) {
                (k, true, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid field selector: {t:?}"
                )));
            };
            reqs.push((path.trim().to_string(), eq, value.trim().to_string()));
        }
        Ok(FieldSelector(reqs))
    }

    /// The field paths it names.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(p, _, _)| p.as_str())
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(path, eq, want)| {
            let pointer = format!("/{}", path.replace('.', "/"));
            let got = match obj.pointer(&pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(v) => v.to_string(),
            };
            (got == *want) == *eq
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors() {
        let o = json!({"metadata": {"labels": {"app": "vpn", "tier": "gold"}}});
        for (s, want) in [
            ("app=vpn", true),
            ("app==vpn,tier=gold", true),
            ("app!=vpn", false),
            ("tier in (gold, silver)", true),
            ("tier notin (gold)", false),
            ("app", true),
            ("!missing", true),
            ("missing", false),
            ("", true),
        ] {
            assert_eq!(LabelSelector::parse(s).unwrap().matches(&o), want, "{s}");
        }
    }

    #[test]
    fn field_selectors() {
        let o =
            json!({"metadata": {"name": "acme", "namespace": "t"}, "status": {"phase": "Running"}});
        assert!(
            FieldSelector::parse("metadata.name=acme")
                .unwrap()
                .matches(&o)
        );
        assert!(
            FieldSelector::parse("metadata.name=acme,status.phase!=Pending")
                .unwrap()
                .matches(&o)
        );
        assert!(
            !FieldSelector::parse("metadata.namespace=other")
                .unwrap()
                .matches(&o)
        );
        assert!(FieldSelector::parse("nonsense").is_err());
    }
}
