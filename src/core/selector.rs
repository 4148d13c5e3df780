//! Label selectors (`-l tier=bronze,region in (fra1,fra2),!legacy`) read as the API
//! server reads them, and matched against labels that are not on a live object: a wave's
//! journals carry the old gateway's labels in its saved manifest (issue 15 item 3, "the
//! same wave command re-run resumes" after the IPsecGateway is gone).
//!
//! Only the parsing is vpnmig's; the expressions and their matching are kube's
//! ([`kube::core::Expression`], [`kube::core::SelectorExt`]).
//!
//! Layer 0 (model, addresses, paths, parsers, YAML): imports nothing above it; see docs/architecture.md.

use std::collections::{BTreeMap, BTreeSet};

use kube::core::{Expression, Selector, SelectorExt};

/// A parsed label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelSelector {
    text: String,
    selector: Selector,
}

impl LabelSelector {
    /// Parse `text` with kubectl's syntax: requirements separated by commas, each `k=v`,
    /// `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` or `!k`. `Err` says which
    /// requirement is not one.
    pub fn parse(text: &str) -> Result<LabelSelector, String> {
        let mut exprs = Vec::new();
        for req in split_requirements(text) {
            let req = req.trim();
            if req.is_empty() {
                continue;
            }
            exprs.push(requirement(req).ok_or_else(|| {
                format!("`{req}` is not a label requirement (k=v, k!=v, k in (a,b), k notin (a,b), k, !k)")
            })?);
        }
        Ok(LabelSelector {
            text: text.to_string(),
            selector: exprs.into_iter().collect(),
        })
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.selector.matches(labels)
    }

    /// As the user wrote it.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// Split at the commas that are not inside `( … )`.
fn split_requirements(text: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
}

fn valid_value(v: &str) -> bool {
    v.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

fn requirement(req: &str) -> Option<Expression> {
    if let Some(k) = req.strip_prefix('!') {
        let k = k.trim();
        return valid_key(k).then(|| Expression::DoesNotExist(k.into()));
    }
    for (op, not) in [("!=", true), ("==", false), ("=", false)] {
        if let Some((k, v)) = req.split_once(op) {
            let (k, v) = (k.trim(), v.trim());
            if !valid_key(k) || !valid_value(v) {
                return None;
            }
            return Some(if not {
                Expression::NotEqual(k.into(), v.into())
            } else {
                Expression::Equal(k.into(), v.into())
            });
        }
    }
    let words: Vec<&str> = req.splitn(2, char::is_whitespace).collect();
    match words.as_slice() {
        [k] => valid_key(k).then(|| Expression::Exists(k.to_string())),
        [k, rest] => {
            let rest = rest.trim();
            let (not, set) = if let Some(s) = rest.strip_prefix("notin") {
                (true, s)
            } else if let Some(s) = rest.strip_prefix("in") {
                (false, s)
            } else {
                return None;
            };
            let inner = set.trim().strip_prefix('(')?.strip_suffix(')')?;
            let values: BTreeSet<String> = inner
                .split(',')
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .collect();
            if !valid_key(k) || values.is_empty() || !values.iter().all(|v| valid_value(v)) {
                return None;
            }
            Some(if not {
                Expression::NotIn(k.to_string(), values)
            } else {
                Expression::In(k.to_string(), values)
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn selectors_match_as_the_api_server_matches() {
        let gold = labels(&[("tier", "gold"), ("region", "fra1")]);
        let bronze = labels(&[("tier", "bronze")]);
        for (sel, on_gold, on_bronze) in [
            ("tier=gold", true, false),
            ("tier==gold", true, false),
            ("tier!=gold", false, true),
            ("tier in (gold, silver)", true, false),
            ("tier notin (gold)", false, true),
            ("region", true, false),
            ("!region", false, true),
            ("tier in (gold,bronze),region", true, false),
            ("", true, true),
        ] {
            let s = LabelSelector::parse(sel).unwrap();
            assert_eq!(s.matches(&gold), on_gold, "{sel} on gold");
            assert_eq!(s.matches(&bronze), on_bronze, "{sel} on bronze");
        }
        for bad in ["tier in gold", "=x", "a b c", "tier=(x)"] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad}");
        }
    }
}
