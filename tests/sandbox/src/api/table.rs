//! `meta.k8s.io/v1` Tables, which kubectl asks for when it prints `kubectl get`: a Name
//! column, a CRD's `additionalPrinterColumns` (evaluated as the API server does, dates
//! shown as ages) or Age for built-ins.

use serde_json::{Value, json};

use crate::resources::ResourceType;

/// Whether the client asked for a Table.
pub fn wanted(accept: &str) -> bool {
    accept
        .split(',')
        .next()
        .is_some_and(|first| first.contains("as=Table"))
}

/// The printer-column subset of JSONPath: `.a.b`, `.a[0]`, `.a[?(@.k=="v")].b`.
pub fn eval(path: &str, obj: &Value) -> Option<Value> {
    let mut cur = vec![obj.clone()];
    let mut rest = path
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim_start_matches('.');
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let inner = &after[..end];
            rest = after[end + 1..].trim_start_matches('.');
            cur = if let Some(filter) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')'))
            {
                let (k, v) = filter.split_once("==")?;
                let want = v.trim().trim_matches(|c| c == '"' || c == '\'');
                cur.iter()
                    .filter_map(Value::as_array)
                    .flatten()
                    .filter(|e| e.get(k.trim()).and_then(Value::as_str) == Some(want))
                    .cloned()
                    .collect()
            } else {
                let i: usize = inner.parse().ok()?;
                cur.iter().filter_map(|v| v.get(i)).cloned().collect()
            };
            continue;
        }
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        let key = &rest[..end];
        rest = rest[end..].trim_start_matches('.');
        cur = cur.iter().filter_map(|v| v.get(key)).cloned().collect();
    }
    cur.into_iter().next()
}

/// A duration the way kubectl shows ages: `45s`, `12m`, `5h`, `3d`.
pub fn age(since: &str) -> String {
    let Ok(t) = since.parse::<jiff::Timestamp>() else {
        return "<unknown>".into();
    };
    let secs = (jiff::Timestamp::now().as_second() - t.as_second()).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 3600 * 2 => format!("{}m", s / 60),
        s if s < 86400 * 2 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

fn columns(rt: &ResourceType) -> Vec<(String, String, String)> {
    let mut cols = vec![(
        "Name".to_string(),
        "string".to_string(),
        ".metadata.name".to_string(),
    )];
    if rt.printer_columns.is_empty() {
        cols.push((
            "Age".into(),
            "date".into(),
            ".metadata.creationTimestamp".into(),
        ));
    }
    for c in &rt.printer_columns {
        let s = |k: &str| {
            c.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        cols.push((s("name"), s("type"), s("jsonPath")));
    }
    cols
}

/// The Table for `objects` of type `rt`.
pub fn table(rt: &ResourceType, objects: &[Value], rv: u64) -> Value {
    let cols = columns(rt);
    let defs: Vec<Value> = cols
        .iter()
        .map(|(name, ty, _)| {
            let (ty, format) = match ty.as_str() {
                "date" => ("string", ""),
                t => (t, if name == "Name" { "name" } else { "" }),
            };
            json!({"name": name, "type": ty, "format": format, "description": "", "priority": 0})
        })
        .collect();
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let cells: Vec<Value> = cols
                .iter()
                .map(|(_, ty, path)| match (ty.as_str(), eval(path, o)) {
                    ("date", Some(Value::String(t))) => json!(age(&t)),
                    (_, Some(v)) => v,
                    (_, None) => Value::Null,
                })
                .collect();
            json!({"cells": cells, "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o.get("metadata")}})
        })
        .collect();
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": rv.to_string()}, "columnDefinitions": defs, "rows": rows})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printer_column_paths() {
        let o = json!({"metadata": {"name": "acme"}, "status": {"conditions": [{"type": "FIPAttached", "status": "False"}, {"type": "Ready", "status": "True"}]}, "spec": {"a": [1, 2]}});
        assert_eq!(
            eval(".status.conditions[?(@.type==\"Ready\")].status", &o),
            Some(json!("True"))
        );
        assert_eq!(eval(".spec.a[1]", &o), Some(json!(2)));
        assert_eq!(eval(".metadata.name", &o), Some(json!("acme")));
        assert_eq!(eval(".status.missing", &o), None);
    }
}
