//! JSON paths as kubectl and the API server print them: `spec.tunnels[0].peer.address`,
//! with keys that are not plain identifiers bracket-quoted:
//! `metadata.labels["app.kubernetes.io/name"]`.
//!
//! Layer 0 (model, addresses, paths, parsers, YAML): imports nothing above it; see docs/architecture.md.

use std::fmt;

use serde::{Serialize, Serializer};
use serde_json::Value;

/// One step of a path: an object key or an array index.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// A path into a JSON document.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct JsonPath(pub Vec<Seg>);

impl JsonPath {
    /// Parse the dotted form used in this crate's rule tables (`spec.ike.proposals[0]`).
    /// Only plain keys and indices; not a general JSONPath parser.
    pub fn parse(s: &str) -> Self {
        let mut segs = Vec::new();
        for part in s.split('.').filter(|p| !p.is_empty()) {
            let (key, rest) = part.split_once('[').map_or((part, ""), |(k, r)| (k, r));
            if !key.is_empty() {
                segs.push(Seg::Key(key.to_string()));
            }
            for idx in rest
                .split('[')
                .map(|i| i.trim_end_matches(']'))
                .filter(|i| !i.is_empty())
            {
                segs.push(Seg::Index(
                    idx.parse().expect("rule table paths hold numeric indices"),
                ));
            }
        }
        JsonPath(segs)
    }

    /// This path with one more key.
    pub fn key(&self, k: &str) -> Self {
        let mut p = self.clone();
        p.0.push(Seg::Key(k.to_string()));
        p
    }

    /// This path with one more index.
    pub fn index(&self, i: usize) -> Self {
        let mut p = self.clone();
        p.0.push(Seg::Index(i));
        p
    }

    /// The value at this path, if every step exists.
    pub fn get<'a>(&self, mut v: &'a Value) -> Option<&'a Value> {
        for seg in &self.0 {
            v = match seg {
                Seg::Key(k) => v.get(k)?,
                Seg::Index(i) => v.get(*i)?,
            };
        }
        Some(v)
    }
}

fn plain(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(k) if plain(k) => {
                    if n > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                Seg::Key(k) => write!(f, "[{k:?}]")?,
                Seg::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

impl Serialize for JsonPath {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_kubectl() {
        let p = JsonPath::parse("spec.tunnels[0].remoteSubnets[2]");
        assert_eq!(p.to_string(), "spec.tunnels[0].remoteSubnets[2]");
        let l = JsonPath::parse("metadata.labels").key("app.kubernetes.io/name");
        assert_eq!(
            l.to_string(),
            r#"metadata.labels["app.kubernetes.io/name"]"#
        );
    }

    #[test]
    fn gets_nested_values() {
        let v = serde_json::json!({"spec": {"tunnels": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(
            JsonPath::parse("spec.tunnels[1].name").get(&v),
            Some(&serde_json::json!("b"))
        );
        assert_eq!(JsonPath::parse("spec.tunnels[2].name").get(&v), None);
    }
}
