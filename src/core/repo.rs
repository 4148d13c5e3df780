//! The manifests in a GitOps repository (issue 11 item 4), as text: which document of a
//! YAML file defines an object, and that file with the document replaced by the new
//! manifests, every other byte kept (other documents, comments, separators). Also what
//! a `kustomization.yaml` says about its resources and namespace, and which files are
//! Helm templates (reported, never edited). Pure: text in, text out; the walk of the
//! working tree and `git` are `crate::gitops_repo`'s.

use std::ops::Range;

use serde_json::Value;

/// What a document must define: `apiVersion` (any version of the group), kind,
/// namespace and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectId {
    /// The API group (`ipsec.bnerd.net`); any version matches.
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl ObjectId {
    /// The old gateway `namespace/name`.
    pub fn ipsec_gateway(namespace: &str, name: &str) -> ObjectId {
        ObjectId {
            group: "ipsec.bnerd.net".into(),
            kind: "IPsecGateway".into(),
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The new gateway of the same name and namespace.
    pub fn vpn_gateway(namespace: &str, name: &str) -> ObjectId {
        ObjectId {
            group: "vpn.bnerd.net".into(),
            kind: "VPNGateway".into(),
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl std::fmt::Display for ObjectId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// One document of a YAML stream: its whole text between separators (`whole`) and the
/// part from its first to its last line that is neither blank nor a comment
/// (`content`; empty for a document of only comments). Byte ranges into the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    pub whole: Range<usize>,
    pub content: Range<usize>,
}

/// Whether `line` (without its newline) is a document separator: `---` alone or
/// followed by a space, a tab or a comment.
fn is_separator(line: &str) -> bool {
    let line = line.trim_end_matches('\r');
    line == "---" || line.starts_with("--- ") || line.starts_with("---\t")
}

fn is_filler(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// The documents of `text`, in order. Separator lines belong to no document.
pub fn documents(text: &str) -> Vec<Document> {
    let mut docs = Vec::new();
    let mut start = 0;
    let mut content: Option<Range<usize>> = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let end = at + line.len();
        let bare = line.trim_end_matches('\n');
        if is_separator(bare) {
            docs.push(Document {
                whole: start..at,
                content: content.take().unwrap_or(at..at),
            });
            start = end;
        } else if !is_filler(bare) {
            let line_end = at + bare.trim_end_matches('\r').len();
            content = Some(match content {
                Some(c) => c.start..line_end,
                None => at..line_end,
            });
        }
        at = end;
    }
    docs.push(Document {
        whole: start..text.len(),
        content: content.unwrap_or(text.len()..text.len()),
    });
    // A stream that starts with `---` has no document before it.
    if docs.first().is_some_and(|d| d.whole.is_empty()) {
        docs.remove(0);
    }
    docs
}

/// Whether `doc` is the object `id`. A document without a namespace takes `inherited`
/// (a kustomization's `namespace:`), which also overrides its own, as kustomize does;
/// without either it is taken to be in `id`'s namespace (Argo CD's destination or
/// Flux's targetNamespace puts it there). An `id` without a namespace (an offline plan
/// of a file that names none) matches any.
pub fn defines(doc: &Value, id: &ObjectId, inherited: Option<&str>) -> bool {
    let s = |p: &str| doc.pointer(p).and_then(Value::as_str);
    let group_matches = s("/apiVersion")
        .and_then(|a| a.rsplit_once('/'))
        .is_some_and(|(g, _)| g == id.group);
    let ns = inherited.or(s("/metadata/namespace"));
    group_matches
        && s("/kind") == Some(id.kind.as_str())
        && s("/metadata/name") == Some(id.name.as_str())
        && ns.is_none_or(|ns| id.namespace.is_empty() || ns == id.namespace)
}

/// A document that does not parse (what a file under Helm's `templates/` usually is).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("document {doc} (line {line}) is not valid YAML: {message}")]
pub struct NotYaml {
    pub doc: usize,
    pub line: usize,
    pub message: String,
}

/// The documents of `text` that define `id`, as indexes into [`documents`]. A document
/// that is not valid YAML is an error only if nothing else could be read; one that does
/// not mention `id`'s kind is skipped without parsing.
pub fn find(text: &str, id: &ObjectId, inherited: Option<&str>) -> Result<Vec<usize>, NotYaml> {
    let docs = documents(text);
    let mut found = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        let body = &text[d.whole.clone()];
        if !body.contains(id.kind.as_str()) || !body.contains(id.name.as_str()) {
            continue;
        }
        let value: Value = serde_saphyr::from_str(body).map_err(|e| NotYaml {
            doc: i + 1,
            line: text[..d.whole.start].matches('\n').count() + 1,
            message: e.to_string().lines().next().unwrap_or_default().to_string(),
        })?;
        if defines(&value, id, inherited) {
            found.push(i);
        }
    }
    Ok(found)
}

/// Whether the document has `metadata.namespace` (the replacement keeps that choice).
pub fn has_namespace(text: &str, doc: &Document) -> bool {
    serde_saphyr::from_str::<Value>(&text[doc.whole.clone()])
        .ok()
        .and_then(|v| v.pointer("/metadata/namespace").cloned())
        .is_some()
}

/// The new objects as YAML documents to put in a document's place: `---` between them,
/// `metadata.namespace` left out when `namespaced` is false (the original had none: the
/// kustomization or the GitOps destination supplies it).
pub fn render(objects: &[Value], namespaced: bool) -> String {
    objects
        .iter()
        .map(|o| {
            let mut o = o.clone();
            if !namespaced && let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("namespace");
            }
            crate::core::yaml::to_yaml(&o)
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

/// `text` with the content of document `doc` replaced by `rendered`: the comments and
/// blank lines before and after it, the separators and every other document stay byte
/// for byte.
pub fn replace(text: &str, doc: &Document, rendered: &str) -> String {
    let c = &doc.content;
    // A file with CRLF line endings keeps them in the replaced document too.
    let crlf = text.contains("\r\n");
    let rendered = rendered.trim_end_matches('\n');
    let rendered = if crlf {
        rendered.replace("\r\n", "\n").replace('\n', "\r\n")
    } else {
        rendered.to_string()
    };
    let rendered = rendered.as_str();
    let mut out = String::with_capacity(text.len() + rendered.len());
    out.push_str(&text[..c.start]);
    out.push_str(rendered);
    let rest = &text[c.end..];
    // The original's line ending after its content (or one, when it ended the file).
    if !rest.starts_with('\n') && !rest.starts_with("\r\n") {
        out.push_str(if crlf { "\r\n" } else { "\n" });
    }
    out.push_str(rest);
    out
}

/// What a `kustomization.yaml` says that matters here.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kustomization {
    /// `namespace:`: set on every resource (kustomize overrides theirs).
    pub namespace: Option<String>,
    /// `resources:` (and the older `bases:`): files or directories, relative to the
    /// kustomization; remote ones (URLs) are left out.
    pub resources: Vec<String>,
}

/// Parse a kustomization file.
pub fn kustomization(text: &str) -> Result<Kustomization, String> {
    let v: Value = serde_saphyr::from_str(text)
        .map_err(|e| e.to_string().lines().next().unwrap_or_default().to_string())?;
    let list = |k: &str| -> Vec<String> {
        v.get(k)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|r| !r.contains("://") && !r.starts_with("github.com/"))
            .map(str::to_string)
            .collect()
    };
    let mut resources = list("resources");
    resources.extend(list("bases"));
    Ok(Kustomization {
        namespace: v
            .get("namespace")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .map(str::to_string),
        resources,
    })
}

/// The names kustomize reads a kustomization from.
pub const KUSTOMIZATION_FILES: &[&str] =
    &["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// Whether a file is a Helm template: under a `templates/` directory and holding
/// template actions (`{{`). `components` are the path's components, in order.
pub fn is_helm_template(components: &[&str], text: &str) -> bool {
    components.iter().rev().skip(1).any(|c| *c == "templates") && text.contains("{{")
}

/// Whether a template could define `id`: it has a `kind:` line naming `id`'s kind (its
/// name is usually rendered from values, so it is not looked for).
pub fn template_mentions(text: &str, id: &ObjectId) -> bool {
    text.lines().any(|l| {
        let l = l.trim();
        l.strip_prefix("kind:").is_some_and(|k| k.trim() == id.kind)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_split_on_separator_lines_only() {
        let text = "# head\na: 1\n---\n--- # c\nb: '---'\n  # tail\n";
        let docs = documents(text);
        assert_eq!(docs.len(), 3);
        assert_eq!(&text[docs[0].content.clone()], "a: 1");
        assert!(docs[1].content.is_empty());
        assert_eq!(&text[docs[2].content.clone()], "b: '---'");
    }

    #[test]
    fn a_leading_separator_opens_the_first_document() {
        let docs = documents("---\na: 1\n");
        assert_eq!(docs.len(), 1);
    }

    #[test]
    fn namespace_rules() {
        let id = ObjectId::ipsec_gateway("tenant-acme", "acme");
        let doc = |ns: Option<&str>| {
            let mut v = serde_json::json!({"apiVersion": "ipsec.bnerd.net/v1alpha1", "kind": "IPsecGateway", "metadata": {"name": "acme"}});
            if let Some(ns) = ns {
                v["metadata"]["namespace"] = ns.into();
            }
            v
        };
        for (own, inherited, want) in [
            (Some("tenant-acme"), None, true),
            (Some("other"), None, false),
            (None, None, true),
            (None, Some("tenant-acme"), true),
            (None, Some("other"), false),
            (Some("other"), Some("tenant-acme"), true),
        ] {
            assert_eq!(
                defines(&doc(own), &id, inherited),
                want,
                "{own:?} {inherited:?}"
            );
        }
    }

    #[test]
    fn a_crlf_file_keeps_crlf_in_the_replaced_document() {
        let text = "# keep\r\napiVersion: v1\r\nkind: ConfigMap\r\n---\r\napiVersion: ipsec.bnerd.net/v1alpha1\r\nkind: IPsecGateway\r\nmetadata: {name: acme}\r\n";
        let docs = documents(text);
        let out = replace(text, &docs[1], "kind: VPNGateway\nmetadata: {name: acme}\n");
        assert_eq!(
            out,
            "# keep\r\napiVersion: v1\r\nkind: ConfigMap\r\n---\r\nkind: VPNGateway\r\nmetadata: {name: acme}\r\n"
        );
    }

    #[test]
    fn replace_keeps_comments_around_the_content() {
        let text = "a: 1\n---\n# about acme\nkind: X\nname: acme\n# trailing\n---\nb: 2\n";
        let docs = documents(text);
        let out = replace(text, &docs[1], "kind: Y\n");
        assert_eq!(
            out,
            "a: 1\n---\n# about acme\nkind: Y\n# trailing\n---\nb: 2\n"
        );
    }

    #[test]
    fn kustomization_resources_and_namespace() {
        let k = kustomization(
            "namespace: tenant-acme\nresources:\n- gateway.yaml\n- ../base\n- https://example.com/x.yaml\n",
        )
        .unwrap();
        assert_eq!(k.namespace.as_deref(), Some("tenant-acme"));
        assert_eq!(k.resources, ["gateway.yaml", "../base"]);
    }

    #[test]
    fn helm_templates_are_recognised() {
        assert!(is_helm_template(
            &["chart", "templates", "gw.yaml"],
            "name: {{ .Values.name }}"
        ));
        assert!(!is_helm_template(
            &["chart", "templates", "gw.yaml"],
            "name: x"
        ));
        assert!(!is_helm_template(&["templates"], "{{"));
    }
}
