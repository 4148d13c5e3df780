//! The manifests in a GitOps repository (issue 11 item 4), as text: which document of a
//! YAML file defines an object, and that file with the document replaced by the new
//! manifests, every other byte kept (other documents, comments, separators). Also what
//! a `kustomization.yaml` says about its resources and namespace, and which files are
//! Helm templates (reported, never edited). Pure: text in, text out; the walk of the
//! working tree and `git` are `crate::gitops_repo`'s.
//!
//! Layer 2 (rules): imports only from layers 0 to 2; see docs/architecture.md.

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

/// What a kustomization file says that matters here: which paths it builds from (and
/// how), its namespace, the patches it applies and what renames its resources.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kustomization {
    /// `namespace:`: set on every resource (kustomize overrides theirs).
    pub namespace: Option<String>,
    /// `kind: Component`: never built alone, only by the kustomizations that list it
    /// under `components:`.
    pub component: bool,
    /// `resources:` (and the older `bases:`): files or directories, relative to the
    /// kustomization; remote ones (URLs) are left out.
    pub resources: Vec<String>,
    /// `components:`: directories of `kind: Component` kustomizations.
    pub components: Vec<String>,
    /// `patches`, `patchesStrategicMerge`, `patchesJson6902`, in that order.
    pub patches: Vec<Patch>,
    /// Files read for something other than a resource: generator inputs
    /// (`configMapGenerator` / `secretGenerator` `files`, `envs`, `env`), `crds`,
    /// `configurations`, `openapi.path`, `replacements[].path`, and the files of
    /// `transformers`, `generators` and `validators`. None of them defines an object.
    pub inputs: Vec<String>,
    /// `namePrefix` and `nameSuffix`: the built name is not the file's.
    pub name_prefix: Option<String>,
    pub name_suffix: Option<String>,
    /// `replacements` and `vars`, which read or write fields of resources chosen by kind
    /// and name: `(field, inline text)` or `(field, file)` for `replacements[].path`.
    pub references: Vec<Reference>,
}

/// A `replacements` or `vars` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reference {
    Inline { field: String, text: String },
    File { field: String, path: String },
}

/// One patch of a kustomization: where it is, its text when inline, and its target
/// selector when it has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Patch {
    /// `patches[0]`, `patchesStrategicMerge[1]`, …
    pub field: String,
    /// The patch file, relative to the kustomization.
    pub path: Option<String>,
    /// The inline patch.
    pub inline: Option<String>,
    /// `target:` (group, version, kind, name, namespace, labelSelector, …).
    pub target: Option<Value>,
}

fn is_remote(r: &str) -> bool {
    r.contains("://") || r.starts_with("github.com/") || r.starts_with("git@")
}

/// Parse a kustomization file.
pub fn kustomization(text: &str) -> Result<Kustomization, String> {
    let v: Value = serde_saphyr::from_str(text)
        .map_err(|e| e.to_string().lines().next().unwrap_or_default().to_string())?;
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|r| !is_remote(r))
            .map(str::to_string)
            .collect()
    };
    let mut resources = strings(v.get("resources"));
    resources.extend(strings(v.get("bases")));
    let mut patches = Vec::new();
    for field in ["patches", "patchesJson6902"] {
        for (i, p) in v
            .get(field)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            patches.push(Patch {
                field: format!("{field}[{i}]"),
                path: p.get("path").and_then(Value::as_str).map(str::to_string),
                inline: p.get("patch").and_then(Value::as_str).map(str::to_string),
                target: p.get("target").cloned(),
            });
        }
    }
    for (i, p) in v
        .get("patchesStrategicMerge")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some(p) = p.as_str() else { continue };
        // An entry is a file, or the patch itself (several lines, or a mapping).
        let inline = p.contains('\n') || p.trim_start().starts_with('{');
        patches.push(Patch {
            field: format!("patchesStrategicMerge[{i}]"),
            path: (!inline).then(|| p.to_string()),
            inline: inline.then(|| p.to_string()),
            target: None,
        });
    }
    let mut inputs = Vec::new();
    for generator in ["configMapGenerator", "secretGenerator"] {
        for g in v
            .get(generator)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for f in strings(g.get("files")) {
                // `key=path` names the key.
                inputs.push(f.split_once('=').map_or(f.clone(), |(_, p)| p.to_string()));
            }
            inputs.extend(strings(g.get("envs")));
            inputs.extend(g.get("env").and_then(Value::as_str).map(str::to_string));
        }
    }
    for field in [
        "crds",
        "configurations",
        "transformers",
        "generators",
        "validators",
    ] {
        // Inline entries (YAML text) are not files.
        inputs.extend(
            strings(v.get(field))
                .into_iter()
                .filter(|f| !f.contains('\n')),
        );
    }
    inputs.extend(
        v.pointer("/openapi/path")
            .and_then(Value::as_str)
            .map(str::to_string),
    );
    let mut references = Vec::new();
    for (i, r) in v
        .get("replacements")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let field = format!("replacements[{i}]");
        references.push(match r.get("path").and_then(Value::as_str) {
            Some(p) => {
                inputs.push(p.to_string());
                Reference::File {
                    field,
                    path: p.to_string(),
                }
            }
            None => Reference::Inline {
                field,
                text: r.to_string(),
            },
        });
    }
    for (i, r) in v
        .get("vars")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        references.push(Reference::Inline {
            field: format!("vars[{i}]"),
            text: r.to_string(),
        });
    }
    let string = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .map(str::to_string)
    };
    Ok(Kustomization {
        namespace: string("namespace"),
        name_prefix: string("namePrefix"),
        name_suffix: string("nameSuffix"),
        component: v.get("kind").and_then(Value::as_str) == Some("Component"),
        resources,
        components: strings(v.get("components")),
        patches,
        inputs,
        references,
    })
}

/// Whether a kustomize target selector's field (a regular expression kustomize anchors
/// at both ends) can select `value`. One that does not compile is taken to select it.
fn selects(pattern: &str, value: &str) -> bool {
    regex::Regex::new(&format!("^(?:{pattern})$")).map_or(true, |r| r.is_match(value))
}

/// Whether `patch` (with `body`, the text of its file or its inline text) can change
/// `id`: a `target:` whose group, kind and name select it (a label or annotation
/// selector is not evaluated: it may), or, without a target, a document of the patch
/// with `id`'s kind and name (a strategic-merge patch names what it patches).
pub fn patch_targets(patch: &Patch, body: Option<&str>, id: &ObjectId) -> bool {
    if let Some(t) = &patch.target {
        let field = |k: &str| t.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
        return field("kind").is_none_or(|k| selects(k, &id.kind))
            && field("name").is_none_or(|n| selects(n, &id.name))
            && field("group").is_none_or(|g| selects(g, &id.group));
    }
    let Some(body) = body else { return false };
    documents(body).iter().any(|d| {
        let text = &body[d.whole.clone()];
        if !text.contains(id.kind.as_str()) {
            return false;
        }
        serde_saphyr::from_str::<Value>(text).is_ok_and(|v| {
            v.get("kind").and_then(Value::as_str) == Some(id.kind.as_str())
                && v.pointer("/metadata/name").and_then(Value::as_str) == Some(id.name.as_str())
        })
    })
}

/// A folder of the repository that a GitOps object builds on its own: a Flux
/// `Kustomization`'s `spec.path`, an Argo CD `Application`'s `spec.source.path` (and each
/// of `spec.sources[]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclaredBuild {
    /// "Flux Kustomization flux-system/apps", "Argo CD Application argocd/acme".
    pub who: String,
    /// Relative to the repository's top (a leading `./` or `/` removed; "" for the top).
    pub path: String,
    /// A plain folder's sub-folders are applied too (Flux; Argo CD with
    /// `directory.recurse`).
    pub recurse: bool,
    /// Components the object adds to the build (Flux `spec.components`, Argo CD
    /// `kustomize.components`), relative to `path` as written.
    pub components: Vec<String>,
}

/// `https://host/org/repo.git`, `git@host:org/repo`, `ssh://git@host/org/repo` → `host/org/repo`.
pub fn repo_url_key(url: &str) -> String {
    let u = url.trim().trim_end_matches('/');
    let u = u.strip_suffix(".git").unwrap_or(u);
    let u = u.split_once("://").map_or(u, |(_, rest)| rest);
    let u = u.rsplit_once('@').map_or(u, |(_, rest)| rest);
    // scp-like `host:org/repo`; a `host:port/` keeps its path.
    let u = match u.split_once(':') {
        Some((host, rest)) if !host.contains('/') => {
            let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
            format!("{host}/{}", rest.trim_start_matches('/'))
        }
        _ => u.to_string(),
    };
    u.to_ascii_lowercase()
}

/// The builds a document declares (none for any other kind). An Argo CD source whose
/// `repoURL` is none of `remotes` (this working tree's, any form) is another
/// repository's; without remotes every source counts.
pub fn declared_builds(doc: &Value, remotes: &[String]) -> Vec<DeclaredBuild> {
    let s = |p: &str| doc.pointer(p).and_then(Value::as_str);
    let group = s("/apiVersion")
        .and_then(|a| a.rsplit_once('/'))
        .map(|(g, _)| g);
    let who = |kind: &str| {
        format!(
            "{kind} {}/{}",
            s("/metadata/namespace").unwrap_or("-"),
            s("/metadata/name").unwrap_or("-")
        )
    };
    let clean = |p: &str| p.trim_start_matches("./").trim_matches('/').to_string();
    let clean = |p: &str| if p == "." { String::new() } else { clean(p) };
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    match (group, s("/kind")) {
        (Some("kustomize.toolkit.fluxcd.io"), Some("Kustomization")) => vec![DeclaredBuild {
            who: who("Flux Kustomization"),
            path: clean(s("/spec/path").unwrap_or("")),
            recurse: true,
            components: strings(doc.pointer("/spec/components")),
        }],
        (Some("argoproj.io"), Some("Application")) => {
            let keys: Vec<String> = remotes.iter().map(|r| repo_url_key(r)).collect();
            let mut sources: Vec<&Value> = doc.pointer("/spec/source").into_iter().collect();
            sources.extend(
                doc.pointer("/spec/sources")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten(),
            );
            sources
                .into_iter()
                .filter(|src| {
                    let url = src.get("repoURL").and_then(Value::as_str);
                    keys.is_empty() || url.is_none_or(|u| keys.contains(&repo_url_key(u)))
                })
                .filter_map(|src| {
                    let path = src.get("path").and_then(Value::as_str)?;
                    Some(DeclaredBuild {
                        who: who("Argo CD Application"),
                        path: clean(path),
                        recurse: src.pointer("/directory/recurse").and_then(Value::as_bool)
                            == Some(true),
                        components: strings(src.pointer("/kustomize/components")),
                    })
                })
                .collect()
        }
        _ => Vec::new(),
    }
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
    fn kustomization_fields_that_build_and_fields_that_only_read() {
        let k = kustomization(
            "kind: Component\nnamePrefix: prod-\nresources: [gw.yaml]\nbases: [../base]\ncomponents: [../../components/vpn]\n\
             patches:\n- path: fip.yaml\n- target: {kind: IPsecGateway}\n  patch: '[]'\n\
             patchesStrategicMerge:\n- smp.yaml\n- |\n  kind: IPsecGateway\n  metadata: {name: acme}\n\
             patchesJson6902:\n- target: {kind: X, name: y}\n  path: j.json\n\
             configMapGenerator:\n- name: c\n  files: [key=old/gw.yaml, other.txt]\n  envs: [a.env]\n\
             secretGenerator:\n- name: s\n  env: b.env\n\
             replacements:\n- path: r.yaml\n- source: {kind: IPsecGateway}\n",
        )
        .unwrap();
        assert!(k.component);
        assert_eq!(k.name_prefix.as_deref(), Some("prod-"));
        assert_eq!(k.resources, ["gw.yaml", "../base"]);
        assert_eq!(k.components, ["../../components/vpn"]);
        let fields: Vec<_> = k.patches.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "patches[0]",
                "patches[1]",
                "patchesJson6902[0]",
                "patchesStrategicMerge[0]",
                "patchesStrategicMerge[1]"
            ]
        );
        assert_eq!(k.patches[3].path.as_deref(), Some("smp.yaml"));
        assert!(k.patches[4].path.is_none() && k.patches[4].inline.is_some());
        assert_eq!(
            k.inputs,
            ["old/gw.yaml", "other.txt", "a.env", "b.env", "r.yaml"]
        );
        assert_eq!(k.references.len(), 2);
    }

    #[test]
    fn which_patches_aim_at_the_gateway() {
        let id = ObjectId::ipsec_gateway("tenant-acme", "acme");
        let target = |t: &str| Patch {
            field: "patches[0]".into(),
            path: None,
            inline: None,
            target: Some(serde_saphyr::from_str(t).unwrap()),
        };
        for (t, want) in [
            ("{kind: IPsecGateway, name: acme}", true),
            ("{kind: IPsecGateway}", true),
            ("{kind: 'IPsec.*', name: 'ac.*'}", true),
            ("{labelSelector: client=acme}", true),
            (
                "{group: ipsec.bnerd.net, kind: IPsecGateway, name: globex}",
                false,
            ),
            ("{kind: IPsec}", false),
            ("{kind: Deployment}", false),
            ("{group: apps, name: acme}", false),
        ] {
            assert_eq!(patch_targets(&target(t), None, &id), want, "{t}");
        }
        let smp = Patch {
            field: "patchesStrategicMerge[0]".into(),
            path: Some("p.yaml".into()),
            inline: None,
            target: None,
        };
        for (body, want) in [
            (
                "kind: ConfigMap\nmetadata: {name: x}\n---\nkind: IPsecGateway\nmetadata: {name: acme}\n",
                true,
            ),
            ("kind: IPsecGateway\nmetadata: {name: globex}\n", false),
            ("kind: Deployment\nmetadata: {name: acme}\n", false),
        ] {
            assert_eq!(patch_targets(&smp, Some(body), &id), want, "{body}");
        }
        assert!(!patch_targets(&smp, None, &id));
    }

    #[test]
    fn flux_and_argo_cd_declare_builds_of_this_repository_only() {
        let doc = |y: &str| serde_saphyr::from_str::<Value>(y).unwrap();
        let remotes = ["git@git.example.org:platform/fleet.git".to_string()];
        let flux = doc(
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\nspec: {path: ./tenants/acme}\n",
        );
        assert_eq!(
            declared_builds(&flux, &remotes),
            [DeclaredBuild {
                who: "Flux Kustomization flux-system/apps".into(),
                path: "tenants/acme".into(),
                recurse: true,
                components: Vec::new(),
            }]
        );
        let argo = doc(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: acme, namespace: argocd}\nspec:\n  sources:\n  - {repoURL: 'https://git.example.org/platform/fleet', path: base}\n  - {repoURL: 'https://git.example.org/other/charts.git', path: base}\n  - {repoURL: 'ssh://git@git.example.org:22/platform/fleet.git', path: ./}\n",
        );
        let paths: Vec<_> = declared_builds(&argo, &remotes)
            .into_iter()
            .map(|b| b.path)
            .collect();
        assert_eq!(paths, ["base", ""]);
        assert_eq!(declared_builds(&argo, &[]).len(), 3);
        assert!(
            declared_builds(&doc("kind: Kustomization\nresources: [a]\n"), &remotes).is_empty()
        );
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
