//! The architecture, checked (issue 24 items 1 and 3; docs/architecture.md).
//!
//! - `src/core/` is layers with one direction: each module says its layer in its opening
//!   comment (`//! Layer N (…)`), no module refers to a module of a higher layer, and the
//!   modules of one layer refer to each other without a circle. `src/core/` refers to
//!   nothing else of the crate (`crate::cluster`, `crate::window`, `crate::cli`,
//!   `crate::output`, …): the core is pure.
//! - Below `cli/` and `output/`, nothing writes to a terminal: no `println!`/`eprintln!`/
//!   `print!`/`eprint!`/`dbg!`, no `output::` and no `std::io::stdout()`/`stderr()` in
//!   `src/core/`, `src/cluster/` or `src/window/`. They emit events; `output/` renders.
//! - The engine never reads the process's command line (issue 24 item 4): no
//!   `std::env::args`, no `crate::error::` (the CLI's error and its `again()`) and no
//!   `again(…)` call in `src/core/` or `src/window/`. A hint names its next action as
//!   data (`window::error::Next`); `cli/` renders it as a command line.
//!
//! References are read from the code with comments and string literals blanked out:
//! `use` trees (grouped ones expanded), paths in expressions and types (`crate::core::x::…`,
//! `super::x::…`, `self::…`), resolved against the module they are written in (inline
//! `mod tests { … }` included). There is no allow-list.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use regex::Regex;

/// A module of `src/core/` as the checker sees it.
struct Module {
    /// `checks`, or for a file under a directory the directory's module (`x` of `x/y.rs`).
    name: String,
    /// The file (`src/core/checks.rs`), for messages.
    file: String,
    /// Its path below the crate root: `["core", "checks"]`, `["core", "x", "y"]`.
    path: Vec<String>,
    text: String,
}

/// One reference to another module, where it is written.
#[derive(Clone, Debug)]
struct Ref {
    /// The resolved path below the crate root (`["core", "plan", "Plan"]`).
    target: Vec<String>,
    line: usize,
}

/// `text` with every comment and the contents of every string and char literal replaced by
/// spaces (newlines kept), so that offsets and line numbers stay those of the file.
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out: Vec<char> = b.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for c in out.iter_mut().take(to).skip(from) {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            let end = (i..b.len()).find(|&j| b[j] == '\n').unwrap_or(b.len());
            blank(&mut out, i, end);
            i = end;
        } else if c == '/' && next == Some('*') {
            let (mut depth, mut j) = (1, i + 2);
            while j < b.len() && depth > 0 {
                if b[j] == '/' && b.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if b[j] == '*' && b.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && (i == 0 || !ident(b[i - 1]) || b[i - 1] == 'b')
        {
            // A raw string r"…" or r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                i += 1;
                continue;
            }
            let start = j + 1;
            let mut k = start;
            loop {
                if k >= b.len() {
                    break;
                }
                if b[k] == '"' && (0..hashes).all(|h| b.get(k + 1 + h) == Some(&'#')) {
                    break;
                }
                k += 1;
            }
            blank(&mut out, start, k);
            i = k + 1 + hashes;
        } else if c == '"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != '"' {
                j += if b[j] == '\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j.min(b.len()));
            i = j + 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '"'), else a lifetime or a label.
            if next == Some('\\') {
                let end = (i + 2..b.len()).find(|&j| b[j] == '\'').unwrap_or(b.len());
                blank(&mut out, i + 1, end);
                i = end + 1;
            } else if b.get(i + 2) == Some(&'\'') {
                blank(&mut out, i + 1, i + 2);
                i += 3;
            } else {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out.into_iter().collect()
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

/// For each byte offset of `code`, the names of the inline modules (`mod tests { … }`)
/// around it, found by brace matching.
fn inline_modules(code: &str) -> Vec<(usize, usize, String)> {
    let opener = Regex::new(r"\bmod\s+(\w+)\s*$").unwrap();
    let mut stack: Vec<(usize, Option<String>)> = Vec::new();
    let mut spans = Vec::new();
    for (i, c) in code.char_indices() {
        match c {
            '{' => {
                let name = opener.captures(&code[..i]).map(|m| m[1].to_string());
                stack.push((i, name));
            }
            '}' => {
                if let Some((start, Some(name))) = stack.pop() {
                    spans.push((start, i, name));
                }
            }
            _ => {}
        }
    }
    spans
}

/// The module path at `offset`: the file's, then each inline module around it.
fn scope_at(module: &[String], spans: &[(usize, usize, String)], offset: usize) -> Vec<String> {
    let mut around: Vec<&(usize, usize, String)> = spans
        .iter()
        .filter(|(s, e, _)| *s < offset && offset < *e)
        .collect();
    around.sort_by_key(|(s, ..)| *s);
    let mut path = module.to_vec();
    path.extend(around.into_iter().map(|(.., n)| n.clone()));
    path
}

/// `crate::…`, `super::…` or `self::…` written in `scope`, as a path below the crate root;
/// `None` for anything else (std, other crates, local names).
fn resolve(scope: &[String], segments: &[String]) -> Option<Vec<String>> {
    match segments.first()?.as_str() {
        "crate" => Some(segments[1..].to_vec()),
        "self" => {
            let mut p = scope.to_vec();
            p.extend(segments[1..].iter().cloned());
            Some(p)
        }
        "super" => {
            let ups = segments.iter().take_while(|s| *s == "super").count();
            let mut p = scope.to_vec();
            for _ in 0..ups {
                p.pop()?;
            }
            p.extend(segments[ups..].iter().cloned());
            Some(p)
        }
        _ => None,
    }
}

/// The leaves of a `use` tree (`crate::core::{a, b::{c, d}}`), each with the offset of
/// its last segment in `code` (`start` is the tree's offset).
fn use_leaves(start: usize, tree: &str) -> Vec<(Vec<String>, usize)> {
    let token = Regex::new(r"::|[{},*]|\w+").unwrap();
    let tokens: Vec<(usize, &str)> = token
        .find_iter(tree)
        .map(|m| (start + m.start(), m.as_str()))
        .collect();
    let mut out = Vec::new();
    fn walk(
        tokens: &[(usize, &str)],
        i: &mut usize,
        prefix: Vec<String>,
        out: &mut Vec<(Vec<String>, usize)>,
    ) {
        let mut path = prefix;
        let mut at = tokens.get(*i).map_or(0, |t| t.0);
        while *i < tokens.len() {
            let (off, t) = tokens[*i];
            match t {
                "::" => *i += 1,
                "{" => {
                    *i += 1;
                    loop {
                        walk(tokens, i, path.clone(), out);
                        match tokens.get(*i).map(|t| t.1) {
                            Some(",") => {
                                *i += 1;
                                if tokens.get(*i).map(|t| t.1) == Some("}") {
                                    *i += 1;
                                    return;
                                }
                            }
                            Some("}") => {
                                *i += 1;
                                return;
                            }
                            _ => return,
                        }
                    }
                }
                "," | "}" => break,
                "as" => {
                    // `x as y`: the name after `as` is local.
                    *i += 2;
                }
                "*" => {
                    *i += 1;
                }
                "self" if !path.is_empty() => {
                    at = off;
                    *i += 1;
                }
                seg => {
                    path.push(seg.to_string());
                    at = off;
                    *i += 1;
                }
            }
        }
        out.push((path, at));
    }
    let mut i = 0;
    walk(&tokens, &mut i, Vec::new(), &mut out);
    out
}

/// Every reference `text` (the file of `module`) makes to a path of the crate.
fn references(module: &[String], text: &str) -> Vec<Ref> {
    let mut code = code_only(text);
    let spans = inline_modules(&code);
    let mut refs = Vec::new();
    // `use` trees first (their groups need expanding), then blanked so that the path
    // scan below does not see them again.
    let uses = Regex::new(r"\buse\s+([^;]+);").unwrap();
    let found: Vec<(usize, usize, usize, String)> = uses
        .captures_iter(&code)
        .map(|c| {
            let whole = c.get(0).unwrap();
            let tree = c.get(1).unwrap();
            (
                whole.start(),
                whole.end(),
                tree.start(),
                tree.as_str().to_string(),
            )
        })
        .collect();
    for (s, e, tree_at, tree) in found {
        for (segments, at) in use_leaves(tree_at, &tree) {
            let scope = scope_at(module, &spans, at);
            if let Some(target) = resolve(&scope, &segments) {
                refs.push(Ref {
                    target,
                    line: line_of(&code, at),
                });
            }
        }
        let blanked: String = code[s..e]
            .chars()
            .map(|c| match c {
                '\n' => "\n".to_string(),
                c => " ".repeat(c.len_utf8()),
            })
            .collect();
        code.replace_range(s..e, &blanked);
    }
    let paths = Regex::new(r"\b(?:crate|super|self)(?:\s*::\s*\w+)+").unwrap();
    for m in paths.find_iter(&code) {
        let segments: Vec<String> = m
            .as_str()
            .split("::")
            .map(|s| s.trim().to_string())
            .collect();
        let scope = scope_at(module, &spans, m.start());
        if let Some(target) = resolve(&scope, &segments) {
            refs.push(Ref {
                target,
                line: line_of(&code, m.start()),
            });
        }
    }
    refs
}

/// The layer a module's opening comment states: `//! Layer N (…)`.
fn stated_layer(text: &str) -> Option<u8> {
    let marker = Regex::new(r"^//! Layer (\d+)\b").unwrap();
    text.lines()
        .take_while(|l| l.starts_with("//!"))
        .find_map(|l| marker.captures(l).and_then(|c| c[1].parse().ok()))
}

/// Every rule of the layering, broken: one message per offending reference (`file:line`)
/// or circle. Empty when the core is layered.
fn layering_errors(modules: &[Module]) -> Vec<String> {
    let mut errors = Vec::new();
    let mut layer: BTreeMap<&str, u8> = BTreeMap::new();
    for m in modules {
        let root = m.path.len() == 2 || m.file.ends_with("/mod.rs");
        if !root {
            continue;
        }
        match stated_layer(&m.text) {
            Some(n) => {
                layer.insert(m.name.as_str(), n);
            }
            None => errors.push(format!(
                "{}: its opening //! comment does not say its layer (a line `//! Layer N (…)`)",
                m.file
            )),
        }
    }
    // Same-layer edges, with where each is first written.
    let mut edges: BTreeMap<(String, String), String> = BTreeMap::new();
    for m in modules {
        let lines: Vec<&str> = m.text.lines().collect();
        let at = |line: usize| format!("{}:{line}: `{}`", m.file, lines[line - 1].trim());
        for r in references(&m.path, &m.text) {
            let Some(top) = r.target.first() else {
                continue;
            };
            if top != "core" {
                errors.push(format!(
                    "{} imports crate::{}: src/core/ is pure and imports nothing of the crate outside crate::core (no cluster, window, cli, output)",
                    at(r.line),
                    r.target.join("::")
                ));
                continue;
            }
            let Some(to) = r.target.get(1) else { continue };
            if *to == m.name {
                continue;
            }
            let (Some(&from_layer), to_layer) =
                (layer.get(m.name.as_str()), layer.get(to.as_str()))
            else {
                continue;
            };
            let Some(&to_layer) = to_layer else {
                errors.push(format!(
                    "{} refers to crate::core::{to}, which is not a module of src/core/ with a stated layer",
                    at(r.line)
                ));
                continue;
            };
            if to_layer > from_layer {
                errors.push(format!(
                    "{} imports core::{to} (layer {to_layer}) from core::{} (layer {from_layer}): a module may import only its own layer or lower ones; move the item down instead",
                    at(r.line),
                    m.name
                ));
            } else if to_layer == from_layer {
                edges
                    .entry((m.name.clone(), to.clone()))
                    .or_insert_with(|| at(r.line));
            }
        }
    }
    // Circles among the modules of one layer: every strongly connected set of two or more.
    let nodes: BTreeSet<&str> = edges
        .keys()
        .flat_map(|(a, b)| [a.as_str(), b.as_str()])
        .collect();
    let reach = |from: &str| {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(n) = todo.pop() {
            for (a, b) in edges.keys() {
                if *a == n && seen.insert(b.as_str()) {
                    todo.push(b.clone());
                }
            }
        }
        seen
    };
    let mut reported: BTreeSet<BTreeSet<&str>> = BTreeSet::new();
    for n in &nodes {
        let from_n = reach(n);
        if !from_n.contains(n) {
            continue;
        }
        let circle: BTreeSet<&str> = from_n
            .iter()
            .copied()
            .filter(|m| reach(m).contains(n))
            .collect();
        if reported.insert(circle.clone()) {
            let lines: Vec<String> = edges
                .iter()
                .filter(|((a, b), _)| circle.contains(a.as_str()) && circle.contains(b.as_str()))
                .map(|((a, b), at)| format!("  core::{a} -> core::{b} at {at}"))
                .collect();
            errors.push(format!(
                "a circle among modules of layer {}: {}\n{}",
                layer[n],
                circle.iter().copied().collect::<Vec<_>>().join(", "),
                lines.join("\n")
            ));
        }
    }
    // One message per offending line and target (a grouped use may name a module twice).
    let mut unique = Vec::new();
    for e in errors {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    unique
}

/// Every way a file of a layer below `cli/` and `output/` could write to a terminal.
fn printing_errors(file: &str, text: &str) -> Vec<String> {
    let forbidden = Regex::new(
        r"\b(?:print|println|eprint|eprintln|dbg)!|\boutput::|\bio::(?:stdout|stderr)\b|\banstream::",
    )
    .unwrap();
    let code = code_only(text);
    let lines: Vec<&str> = text.lines().collect();
    forbidden
        .find_iter(&code)
        .map(|m| {
            let line = line_of(&code, m.start());
            format!(
                "{file}:{line}: `{}` writes to a terminal (or reaches for output::) below cli/ and output/: emit an event and render it in output/",
                lines[line - 1].trim()
            )
        })
        .collect()
}

/// Every way a file of the engine (`src/core/`, `src/window/`) could read argv or
/// render a command line from it.
fn argv_errors(file: &str, text: &str) -> Vec<String> {
    let forbidden =
        Regex::new(r"\benv::args(?:_os)?\b|\bcrate::error::|(?:^|[^:.\w])again(?:_without)?\(")
            .unwrap();
    let code = code_only(text);
    let lines: Vec<&str> = text.lines().collect();
    forbidden
        .find_iter(&code)
        .filter(|m| !code[..m.start() + 1].trim_end().ends_with("fn"))
        .map(|m| {
            let line = line_of(&code, m.start());
            format!(
                "{file}:{line}: `{}` reads the process's command line (or the CLI's error) below cli/: name the next action as data (window::error::Next) and let cli/ render it",
                lines[line - 1].trim()
            )
        })
        .collect()
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The modules of `src/core/` (its `mod.rs` declares them and is no layer of its own).
fn core_modules() -> Vec<Module> {
    let core = root().join("src/core");
    rust_files(&core)
        .into_iter()
        .filter(|p| p != &core.join("mod.rs"))
        .map(|p| {
            let rel = p.strip_prefix(&core).unwrap();
            let mut path = vec!["core".to_string()];
            for c in rel.components() {
                let s = c.as_os_str().to_string_lossy();
                path.push(s.trim_end_matches(".rs").to_string());
            }
            if path.last().is_some_and(|l| l == "mod") {
                path.pop();
            }
            Module {
                name: path[1].clone(),
                file: p.strip_prefix(root()).unwrap().display().to_string(),
                path,
                text: std::fs::read_to_string(&p).unwrap(),
            }
        })
        .collect()
}

#[test]
fn the_core_is_layers_with_one_direction() {
    let modules = core_modules();
    assert!(
        modules.len() > 20,
        "src/core/ read: {} modules",
        modules.len()
    );
    let errors = layering_errors(&modules);
    assert!(
        errors.is_empty(),
        "src/core/ breaks its layering (docs/architecture.md):\n{}",
        errors.join("\n")
    );
}

#[test]
fn nothing_below_cli_and_output_writes_to_a_terminal() {
    let mut errors = Vec::new();
    let mut read = 0;
    for dir in ["src/core", "src/cluster", "src/window"] {
        for p in rust_files(&root().join(dir)) {
            let text = std::fs::read_to_string(&p).unwrap();
            let file = p.strip_prefix(root()).unwrap().display().to_string();
            errors.extend(printing_errors(&file, &text));
            read += 1;
        }
    }
    assert!(read > 40, "{read} files read");
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn the_engine_never_reads_argv() {
    let mut errors = Vec::new();
    let mut read = 0;
    for dir in ["src/core", "src/window"] {
        for p in rust_files(&root().join(dir)) {
            let text = std::fs::read_to_string(&p).unwrap();
            let file = p.strip_prefix(root()).unwrap().display().to_string();
            errors.extend(argv_errors(&file, &text));
            read += 1;
        }
    }
    assert!(read > 40, "{read} files read");
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    // The checker itself: each of these is refused with its line, the data form is not.
    for bad in [
        "fn f() { let a: Vec<String> = std::env::args().collect(); }",
        "fn f() -> String { crate::error::again(&[]) }",
        "use crate::error::again;\nfn f() -> String { again(&[\"--yes\"]) }",
        "fn f() -> String { again_without(\"--gitops\", &[]) }",
    ] {
        let found = argv_errors("src/window/x.rs", bad);
        assert!(
            !found.is_empty() && found[0].starts_with("src/window/x.rs:"),
            "{bad}: {found:?}"
        );
    }
    for good in [
        "fn f() -> Next { Next::again(&[]) }",
        "fn again(&self) -> String { String::new() }\nfn g(i: &I) -> String { i.again() }",
    ] {
        assert_eq!(
            argv_errors("src/window/x.rs", good),
            Vec::<String>::new(),
            "{good}"
        );
    }
}

/// The checker itself, on made-up modules: each row is a file that must be refused (with
/// its `file:line`) or accepted.
#[test]
fn the_checker_finds_each_kind_of_upward_import_and_circle() {
    let module = |name: &str, layer: u8, body: &str| Module {
        name: name.into(),
        file: format!("src/core/{name}.rs"),
        path: vec!["core".into(), name.into()],
        text: format!("//! The {name} module.\n//!\n//! Layer {layer} (test).\n\n{body}"),
    };
    let base = || {
        vec![
            module("model", 0, "pub struct M;\n"),
            module("translate", 1, "use crate::core::model::M;\n"),
        ]
    };
    // (what, extra modules, what the errors say: each error contains one of these and each
    // of these is in an error)
    let rows: Vec<(&str, Vec<Module>, Vec<&str>)> = vec![
        ("none", vec![], vec![]),
        (
            "a use upward",
            vec![module("addr", 0, "use crate::core::translate::T;\n")],
            vec![
                "src/core/addr.rs:5: `use crate::core::translate::T;` imports core::translate (layer 1) from core::addr (layer 0)",
            ],
        ),
        (
            "a grouped use, the upward one on its own line",
            vec![module(
                "path",
                0,
                "use crate::core::{\n    model::M,\n    translate::{self, T},\n};\n",
            )],
            vec!["src/core/path.rs:7: `translate::{self, T},` imports core::translate (layer 1)"],
        ),
        (
            "a path in an expression",
            vec![module(
                "yaml",
                0,
                "fn f() {\n    let _ = crate::core::translate::go();\n}\n",
            )],
            vec![
                "src/core/yaml.rs:6: `let _ = crate::core::translate::go();` imports core::translate (layer 1)",
            ],
        ),
        (
            "super:: from the file is the core",
            vec![module("input", 0, "use super::translate::T;\n")],
            vec!["src/core/input.rs:5: `use super::translate::T;` imports core::translate"],
        ),
        (
            "super:: in the tests module is the file itself; super::super:: the core",
            vec![module(
                "swanctl",
                0,
                "#[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::translate::T;\n}\n",
            )],
            vec![
                "src/core/swanctl.rs:8: `use super::super::translate::T;` imports core::translate",
            ],
        ),
        (
            "comments and strings are not imports",
            vec![module(
                "selector",
                0,
                "// crate::core::translate::T\n/// [`crate::core::translate`]\nconst S: &str = \"crate::core::translate\";\nconst C: char = '\"'; // crate::cluster\n",
            )],
            vec![],
        ),
        (
            "the core imports nothing of the crate outside it",
            vec![
                module("lock", 0, "use crate::cluster::Cluster;\n"),
                module("proposal", 0, "fn f() { crate::output::say(\"x\"); }\n"),
            ],
            vec![
                "src/core/lock.rs:5: `use crate::cluster::Cluster;` imports crate::cluster::Cluster",
                "src/core/proposal.rs:5: `fn f() { crate::output::say(\"x\"); }` imports crate::output::say",
            ],
        ),
        (
            "a circle in one layer",
            vec![
                module("checks", 2, "use crate::core::limits::MAX;\n"),
                module("limits", 2, "use crate::core::checks::Finding;\n"),
            ],
            vec![
                "a circle among modules of layer 2: checks, limits",
                "core::checks -> core::limits at src/core/checks.rs:5",
                "core::limits -> core::checks at src/core/limits.rs:5",
            ],
        ),
        (
            "one direction in one layer is fine",
            vec![
                module("checks", 2, "use crate::core::limits::MAX;\n"),
                module("limits", 2, "use crate::core::model::M;\n"),
            ],
            vec![],
        ),
        (
            "no stated layer",
            vec![Module {
                name: "guard".into(),
                file: "src/core/guard.rs".into(),
                path: vec!["core".into(), "guard".into()],
                text: "//! The guard.\n".into(),
            }],
            vec!["src/core/guard.rs: its opening //! comment does not say its layer"],
        ),
    ];
    for (what, extra, expected) in rows {
        let mut modules = base();
        modules.extend(extra);
        let errors = layering_errors(&modules);
        for e in &errors {
            assert!(
                expected.iter().any(|x| e.contains(x)),
                "{what}: unexpected error {e:?} (expected {expected:?})"
            );
        }
        for x in expected {
            assert!(
                errors.iter().any(|e| e.contains(x)),
                "{what}: no error contains {x:?}: {errors:#?}"
            );
        }
    }
}

#[test]
fn the_checker_finds_each_way_to_print() {
    // (line, whether it is refused)
    let rows = [
        ("eprintln!(\"x\");", true),
        ("println!(\"{x}\");", true),
        ("print!(\"x\");", true),
        ("eprint!(\"x\");", true),
        ("dbg!(x);", true),
        ("crate::output::say(&line);", true),
        ("use crate::output::duration::format_duration;", true),
        ("let _ = writeln!(std::io::stderr(), \"x\");", true),
        ("let _ = anstream::stderr();", true),
        ("// eprintln! in a comment", false),
        ("let s = \"println!\";", false),
        ("let out = proc.stdout();", false),
        ("let text = format!(\"{x}\");", false),
    ];
    for (line, refused) in rows {
        let errors = printing_errors("src/cluster/x.rs", &format!("fn f() {{\n    {line}\n}}\n"));
        assert_eq!(!errors.is_empty(), refused, "{line}: {errors:?}");
        if refused {
            assert!(
                errors[0].starts_with(&format!("src/cluster/x.rs:2: `{line}`")),
                "{errors:?}"
            );
        }
    }
}
