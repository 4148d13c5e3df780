//! Reading an exported IPsecGateway from manifest text: one object, several documents, or
//! a `kind: List` as `kubectl get -o yaml` writes it. Pure: text in, [`Source`] out.
//!
//! Every error names the file, the document (1-based, and `items[i]` inside a List) and,
//! for a bad field, its JSON path; see [`InputError`].
//!
//! Layer 0 (model, addresses, paths, parsers, YAML): imports nothing above it; see docs/architecture.md.

use std::collections::HashMap;
use std::fmt;

use serde_json::Value;

use crate::core::model::{IPsecGateway, OLD_GROUP, VERSION};

/// Where in the input an object came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The file as the user named it (`-` for standard input).
    pub file: String,
    /// 1-based document number in a multi-document file.
    pub document: usize,
    /// Index inside a `kind: List` document.
    pub item: Option<usize>,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.document == 0 {
            // A live object: `file` says where from.
            return f.write_str(&self.file);
        }
        // `-f -`: say where it came from in words (issue 10 item 6).
        let file = if self.file == "-" {
            "standard input"
        } else {
            self.file.as_str()
        };
        write!(f, "{file} document {}", self.document)?;
        if let Some(i) = self.item {
            write!(f, " items[{i}]")?;
        }
        Ok(())
    }
}

/// The gateway chosen from the input: verbatim and typed.
#[derive(Clone, Debug)]
pub struct Source {
    /// The object exactly as read (unknown fields included): what the old manifest and
    /// the spec fingerprint are made from, and what the field report walks.
    pub raw: Value,
    /// The same object through the model of `core::model`.
    pub gateway: IPsecGateway,
    pub origin: Origin,
    /// Secrets found in the same input (a `kubectl get ipsecgateway,secret -o yaml`
    /// export): the PSK Secret's ownership and key can then be checked offline. Their
    /// values are only ever fingerprinted, never shown.
    pub secrets: Vec<Value>,
    /// Live only: why the PSK Secret could not be read (e.g. 403), if so.
    pub secret_error: Option<String>,
}

impl Source {
    /// Whether it was read from a cluster rather than a file.
    pub fn is_live(&self) -> bool {
        self.origin.document == 0
    }

    /// A gateway read from a cluster as raw JSON, through the same validation as a file
    /// (types, duplicate names); `from` says where, e.g. `context prod`.
    pub fn from_live(raw: Value, from: &str, secrets: Vec<Value>) -> Result<Source, InputError> {
        typed(
            raw,
            Origin {
                file: from.to_string(),
                document: 0,
                item: None,
            },
            secrets,
        )
    }

    /// A gateway from a cluster-wide listing (`vpnmig status`): judged like a file, since
    /// its Secret was not read; `from` says where, e.g. `context prod`.
    pub fn listed(gateway: IPsecGateway, from: &str) -> Source {
        let raw = serde_json::to_value(&gateway).expect("gateways serialize");
        Source {
            raw,
            gateway,
            origin: Origin {
                file: from.to_string(),
                document: 1,
                item: None,
            },
            secrets: Vec::new(),
            secret_error: None,
        }
    }
}

/// Why the input holds no usable IPsecGateway.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{file}: not valid YAML or JSON: {message}")]
    Syntax { file: String, message: String },
    /// The bytes are not text in the encoding found (issue 9 item 11).
    #[error("{file}: {message} (encoding found: {encoding})")]
    Encoding {
        file: String,
        /// The encoding found: `UTF-16 LE (BOM)`, `UTF-16 LE without a BOM`, `UTF-8`, …
        encoding: &'static str,
        message: String,
    },
    #[error("{file}: the file holds no documents")]
    Empty { file: String },
    /// Beyond [`LIMITS`]: the input is refused before or while it is parsed, never read
    /// without bound (issue 15 item 4).
    #[error("{file}: too large for vpnmig's input limit ({limit}): {seen}")]
    TooLarge {
        file: String,
        /// The limit exceeded, in words.
        limit: String,
        /// What was seen when it was exceeded.
        seen: String,
    },
    #[error("{file}: no IPsecGateway found ({seen})")]
    NoGateway { file: String, seen: String },
    #[error("{file}: {count} IPsecGateways found ({names}); choose one with --name")]
    Ambiguous {
        file: String,
        count: usize,
        names: String,
    },
    #[error("{file}: IPsecGateway {name} appears {count} times ({places})")]
    Repeated {
        file: String,
        name: String,
        places: String,
        count: usize,
    },
    #[error("{file}: no IPsecGateway named `{name}` (found: {names})")]
    NotFound {
        file: String,
        name: String,
        names: String,
    },
    #[error("{origin}: apiVersion is `{seen}`, wanted `{OLD_GROUP}/{VERSION}`")]
    ApiVersion { origin: Origin, seen: String },
    #[error("{origin}: IPsecGateway {name}: field `{path}`: {message}")]
    Field {
        origin: Origin,
        name: String,
        path: String,
        message: String,
    },
    #[error(
        "{origin}: IPsecGateway {name}: duplicate {what} name `{value}` at `{first}` and `{second}`"
    )]
    Duplicate {
        origin: Origin,
        name: String,
        what: &'static str,
        value: String,
        first: String,
        second: String,
    },
}

impl InputError {
    /// A follow-up sentence telling the user what to do, shown after the error.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            InputError::NoGateway { seen, .. } if seen.contains("already the new API") => {
                "the file holds VPNGateway/VPNPeer objects: this gateway looks migrated already; plan from the IPsecGateway export instead".into()
            }
            InputError::Encoding { file, encoding, .. } => {
                // iconv's name for what was found: with a BOM iconv reads the byte order
                // from it; without one it must be told (issue 9 item 11).
                let from = match *encoding {
                    e if e.ends_with("(BOM)") && e.starts_with("UTF-32") => "UTF-32",
                    e if e.ends_with("(BOM)") && e.starts_with("UTF-16") => "UTF-16",
                    e if e.starts_with("UTF-") && e.contains(" without a BOM") => {
                        &e[..e.find(" without").unwrap_or(e.len())]
                    }
                    _ => "WINDOWS-1252",
                }
                .replace(" ", "");
                if file == "-" || file == "standard input" {
                    format!(
                        "convert it on the way in: `… | iconv -f {from} -t UTF-8 | vpnmig plan -f -`; from Windows PowerShell, export with `| Out-File -Encoding utf8 NAME.yaml` and plan from that file"
                    )
                } else {
                    format!(
                        "convert it to UTF-8 and plan from the copy: `iconv -f {from} -t UTF-8 {file} > gateway.utf8.yaml`{}; from Windows PowerShell, export with `| Out-File -Encoding utf8 NAME.yaml` rather than `> NAME.yaml`",
                        // Get-Content reads a BOM; without one it would guess wrong.
                        if !encoding.contains("without a BOM") {
                            format!(" (or in PowerShell: `Get-Content {file} | Set-Content -Encoding utf8 gateway.utf8.yaml`)")
                        } else {
                            String::new()
                        }
                    )
                }
            }
            InputError::Syntax { .. } | InputError::Empty { .. } | InputError::NoGateway { .. } => {
                "export the gateway with `kubectl get ipsecgateway NAME -n NAMESPACE -o yaml > NAME.yaml`".into()
            }
            InputError::TooLarge { .. } => format!(
                "split the export, e.g. one file per namespace (`kubectl get ipsecgateways -n NAMESPACE -o yaml`), or plan from the cluster with `vpnmig plan -A --out DIR`; the limits are {LIMITS_TEXT}"
            ),
            InputError::Repeated { .. } => "keep one copy of the gateway in the file (export it again with kubectl)".into(),
            InputError::Ambiguous { .. } | InputError::NotFound { .. } => {
                "pass `--name NAME` with one of the names listed".into()
            }
            InputError::ApiVersion { .. } => format!(
                "vpnmig migrates `{OLD_GROUP}/{VERSION}` IPsecGateways; export the object again with kubectl from a cluster running operator v0.3.0"
            ),
            // An object without a name cannot be edited in a cluster: only the file can
            // be wrong (issue 10 item 6).
            InputError::Field { name, .. } if name.ends_with(NO_NAME) => {
                "give the object its metadata.name in the file (as `kubectl get ipsecgateway NAME -o yaml` writes it), then plan again".into()
            }
            InputError::Field { name, .. } => format!(
                "fix the field in the cluster (`{}`) or in the file, then export and plan again",
                edit_command(name)
            ),
            InputError::Duplicate { name, .. } => format!(
                "names must be unique: each tunnel becomes a VPNPeer and exposures are granted by name; rename one (`{}`), then plan again",
                edit_command(name)
            ),
        })
    }
}

/// The text of a file read as bytes, as kubectl reads it (issue 9 item 11): UTF-8 with or
/// without a BOM, and UTF-16 LE/BE and UTF-32 LE/BE recognised by their byte-order
/// mark (Windows PowerShell 5's `>` writes UTF-16 LE with a BOM) and decoded. Bytes that
/// are not text in the encoding found are an [`InputError::Encoding`] naming that
/// encoding and the offset; UTF-16 without a BOM is recognised by its zero bytes and
/// named, not guessed at.
pub fn decode(bytes: &[u8], file: &str) -> Result<String, InputError> {
    let err = |encoding: &'static str, message: String| InputError::Encoding {
        file: file.to_string(),
        encoding,
        message,
    };
    // UTF-32 first: its LE mark begins with UTF-16 LE's.
    let boms: [(&[u8], &'static str); 5] = [
        (&[0xFF, 0xFE, 0x00, 0x00], "UTF-32 LE (BOM)"),
        (&[0x00, 0x00, 0xFE, 0xFF], "UTF-32 BE (BOM)"),
        (&[0xEF, 0xBB, 0xBF], "UTF-8 (BOM)"),
        (&[0xFF, 0xFE], "UTF-16 LE (BOM)"),
        (&[0xFE, 0xFF], "UTF-16 BE (BOM)"),
    ];
    let Some((bom, encoding)) = boms.iter().find(|(b, _)| bytes.starts_with(b)) else {
        // ASCII in UTF-16 or UTF-32 is valid UTF-8 full of NULs: name it, with the byte
        // order its zero bytes show, rather than guess at the text.
        if let Some((encoding, how)) = without_bom(bytes) {
            return Err(err(
                encoding,
                format!("not UTF-8 text: {how}, so {encoding}"),
            ));
        }
        return String::from_utf8(bytes.to_vec()).map_err(|e| {
            err(
                "no BOM, not UTF-8 (perhaps Latin-1 or Windows-1252)",
                format!(
                    "not UTF-8 text (invalid byte at offset {})",
                    e.utf8_error().valid_up_to()
                ),
            )
        });
    };
    let body = &bytes[bom.len()..];
    let at = |i: usize| i + bom.len();
    match *encoding {
        "UTF-8 (BOM)" => String::from_utf8(body.to_vec()).map_err(|e| {
            err(
                encoding,
                format!(
                    "not UTF-8 text after its UTF-8 BOM (invalid byte at offset {})",
                    at(e.utf8_error().valid_up_to())
                ),
            )
        }),
        "UTF-16 LE (BOM)" | "UTF-16 BE (BOM)" => {
            if !body.len().is_multiple_of(2) {
                return Err(err(
                    encoding,
                    format!(
                        "not UTF-16 text: an odd number of bytes ({}), the file is cut short",
                        bytes.len()
                    ),
                ));
            }
            let le = encoding.contains("LE");
            let units = body.chunks_exact(2).map(|c| {
                if le {
                    u16::from_le_bytes([c[0], c[1]])
                } else {
                    u16::from_be_bytes([c[0], c[1]])
                }
            });
            let mut out = String::with_capacity(body.len() / 2);
            let mut offset = 0;
            for c in char::decode_utf16(units) {
                match c {
                    Ok(c) => {
                        offset += c.len_utf16() * 2;
                        out.push(c);
                    }
                    Err(e) => {
                        return Err(err(
                            encoding,
                            format!(
                                "not UTF-16 text: unpaired surrogate {:#06x} at byte offset {}",
                                e.unpaired_surrogate(),
                                at(offset)
                            ),
                        ));
                    }
                }
            }
            Ok(out)
        }
        _ => {
            if !body.len().is_multiple_of(4) {
                return Err(err(
                    encoding,
                    format!(
                        "not UTF-32 text: {} bytes, not a multiple of 4, the file is cut short",
                        bytes.len()
                    ),
                ));
            }
            let le = encoding.contains("LE");
            body.chunks_exact(4)
                .enumerate()
                .map(|(i, c)| {
                    let v = if le {
                        u32::from_le_bytes([c[0], c[1], c[2], c[3]])
                    } else {
                        u32::from_be_bytes([c[0], c[1], c[2], c[3]])
                    };
                    char::from_u32(v).ok_or_else(|| {
                        err(
                            encoding,
                            format!(
                                "not UTF-32 text: {v:#x} at byte offset {} is not a character",
                                at(i * 4)
                            ),
                        )
                    })
                })
                .collect()
        }
    }
}

/// Whether bytes without a BOM look like UTF-16: ASCII text in UTF-16 has a zero byte
/// in every other position.
/// UTF-32 or UTF-16 without a byte-order mark, told by where the zero bytes of mostly
/// ASCII text fall (at least 80 % of the first 512 bytes' units): `(encoding, how)`.
/// UTF-32 first, since its units also look like UTF-16 ones.
fn without_bom(bytes: &[u8]) -> Option<(&'static str, &'static str)> {
    let sample = &bytes[..bytes.len().min(512)];
    let share = |width: usize, zero: &dyn Fn(&[u8]) -> bool| {
        let units = sample.len() / width;
        units >= 2 && sample.chunks_exact(width).filter(|c| zero(c)).count() * 10 >= units * 8
    };
    if share(4, &|c| c[1] == 0 && c[2] == 0 && c[3] == 0) {
        Some((
            "UTF-32 LE without a BOM",
            "three zero bytes after every character",
        ))
    } else if share(4, &|c| c[0] == 0 && c[1] == 0 && c[2] == 0) {
        Some((
            "UTF-32 BE without a BOM",
            "three zero bytes before every character",
        ))
    } else if share(2, &|c| c[1] == 0) {
        Some((
            "UTF-16 LE without a BOM",
            "a zero byte after every character",
        ))
    } else if share(2, &|c| c[0] == 0) {
        Some((
            "UTF-16 BE without a BOM",
            "a zero byte before every character",
        ))
    } else {
        None
    }
}

/// A YAML parser error as one line for users: the parser's first line only (its later
/// lines quote the input, which may hold a Secret), without its advice to programmers.
pub fn yaml_message(e: &serde_saphyr::Error) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or_default();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    first
        .split(", set DuplicateKeyPolicy")
        .next()
        .unwrap_or_default()
        .to_string()
}

/// The largest input vpnmig reads, in bytes: a `kubectl get ipsecgateways -A -o yaml`
/// export of 20,000 gateways is about 19 MiB.
pub const MAX_INPUT_BYTES: usize = 64 * 1024 * 1024;
/// The most YAML documents one input may hold (one gateway a document is 100,000 gateways).
pub const MAX_DOCUMENTS: usize = 100_000;
/// The most YAML nodes (mappings, sequences, scalars) one input may hold: a gateway as
/// kubectl exports it is about 80 to 150 nodes, so 20,000 gateways are about 3 million.
pub const MAX_NODES: usize = 10_000_000;

/// The limits, in words, for errors and docs.
pub const LIMITS_TEXT: &str =
    "64 MiB, 100,000 YAML documents, 10,000,000 YAML nodes, nesting 64 deep";

/// The YAML parser's budget for inputs the size of fleet exports (issue 15 item 4): the
/// defaults of serde-saphyr (250,000 nodes, 1,024 documents) stop at about 3,000 gateways.
/// Parsing is linear in the input; memory is bounded by the limits (the documents are
/// held as JSON values, a few times the input's size).
pub fn yaml_options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_reader_input_bytes = Some(MAX_INPUT_BYTES);
    budget.max_documents = MAX_DOCUMENTS;
    budget.max_nodes = MAX_NODES;
    budget.max_events = 2 * MAX_NODES + 2 * MAX_DOCUMENTS + 16;
    budget.max_total_scalar_bytes = MAX_INPUT_BYTES;
    budget.max_depth = 64;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options
}

/// Every YAML document of `text` as a JSON value, within [`LIMITS_TEXT`]; `file` names
/// the input in errors.
pub fn parse_documents(text: &str, file: &str) -> Result<Vec<Value>, InputError> {
    let too_large = |seen: String| InputError::TooLarge {
        file: file.to_string(),
        limit: LIMITS_TEXT.to_string(),
        seen,
    };
    if text.len() > MAX_INPUT_BYTES {
        return Err(too_large(format!("{} bytes", text.len())));
    }
    serde_saphyr::from_multiple_with_options(text, yaml_options()).map_err(|e| {
        match e.without_snippet() {
            serde_saphyr::Error::Budget { breach, .. } => too_large(breach_words(breach)),
            _ => InputError::Syntax {
                file: file.to_string(),
                message: yaml_message(&e),
            },
        }
    })
}

/// A budget breach as words (`more than 100,000 documents`).
fn breach_words(breach: &serde_saphyr::budget::BudgetBreach) -> String {
    use serde_saphyr::budget::BudgetBreach as B;
    match breach {
        B::Documents { .. } => format!("more than {MAX_DOCUMENTS} YAML documents"),
        B::Nodes { .. } => format!("more than {MAX_NODES} YAML nodes"),
        B::Events { .. } => "more YAML events than the node limit allows".into(),
        B::Depth { .. } => "YAML nested more than 64 deep".into(),
        other => format!("{other:?}"),
    }
}

/// How an object without `metadata.name` is shown.
const NO_NAME: &str = "<no name>";

/// `kubectl edit` for a `namespace/name` (or bare name) as shown in errors.
fn edit_command(qualified: &str) -> String {
    match qualified.split_once('/') {
        Some((ns, name)) => format!("kubectl edit ipsecgateway {name} -n {ns}"),
        None => format!("kubectl edit ipsecgateway {qualified}"),
    }
}

/// What an input holds: its IPsecGateways (raw, with where each was found), a word on
/// every other object, and its Secrets.
struct Collected {
    gateways: Vec<(Value, Origin)>,
    others: Vec<String>,
    secrets: Vec<Value>,
}

fn collect(text: &str, file: &str) -> Result<Collected, InputError> {
    let docs: Vec<Value> = parse_documents(text, file)?;
    let docs: Vec<Value> = docs.into_iter().filter(|d| !d.is_null()).collect();
    if docs.is_empty() {
        return Err(InputError::Empty {
            file: file.to_string(),
        });
    }
    let mut gateways = Vec::new();
    let mut others = Vec::new();
    let mut secrets = Vec::new();
    for (i, doc) in docs.into_iter().enumerate() {
        let origin = Origin {
            file: file.to_string(),
            document: i + 1,
            item: None,
        };
        match doc.get("items").and_then(Value::as_array) {
            Some(items) if kind_of(&doc).ends_with("List") && items.is_empty() => {
                others.push(format!("document {} is a List with no items: was the export run in the right namespace and context?", i + 1));
            }
            Some(items) if kind_of(&doc).ends_with("List") => {
                for (j, item) in items.iter().enumerate() {
                    let origin = Origin {
                        item: Some(j),
                        ..origin.clone()
                    };
                    sort(
                        item.clone(),
                        origin,
                        &mut gateways,
                        &mut others,
                        &mut secrets,
                    );
                }
            }
            _ => sort(doc, origin, &mut gateways, &mut others, &mut secrets),
        }
    }

    Ok(Collected {
        gateways,
        others,
        secrets,
    })
}

/// Every IPsecGateway of the input, each with the Secrets of its namespace (`plan -f FILE`
/// without `--name`: the fleet plan of a file). A gateway that is invalid, or appears
/// twice, makes the whole input invalid: nothing is planned from a file that is wrong.
pub fn load_all(text: &str, file: &str) -> Result<Vec<Source>, InputError> {
    let Collected {
        gateways,
        others,
        secrets,
    } = collect(text, file)?;
    if gateways.is_empty() {
        return Err(no_gateway(file, &others));
    }
    let mut seen: std::collections::HashMap<String, &Origin> = std::collections::HashMap::new();
    for (g, origin) in &gateways {
        let label = qualified_name(g);
        if let Some(first) = seen.insert(label.clone(), origin) {
            return Err(InputError::Repeated {
                file: file.to_string(),
                name: label,
                places: format!("{first}, {origin}"),
                count: 2,
            });
        }
    }
    let mut by_ns: std::collections::HashMap<&str, Vec<Value>> = std::collections::HashMap::new();
    for s in &secrets {
        by_ns
            .entry(str_at(s, "/metadata/namespace").unwrap_or(""))
            .or_default()
            .push(s.clone());
    }
    gateways
        .iter()
        .map(|(raw, origin)| {
            let ns = str_at(raw, "/metadata/namespace").unwrap_or("");
            let mine = by_ns.get(ns).cloned().unwrap_or_default();
            typed(raw.clone(), origin.clone(), mine)
        })
        .collect()
}

/// Parse manifest text and pick the IPsecGateway to migrate.
///
/// `file` is only used in messages. With several gateways in the input, `name` (or
/// `namespace/name`) chooses one. Errors: [`InputError`], never a panic.
pub fn load(text: &str, file: &str, name: Option<&str>) -> Result<Source, InputError> {
    let Collected {
        gateways,
        others,
        secrets,
    } = collect(text, file)?;
    let label = |(v, _): &(Value, Origin)| qualified_name(v);
    let chosen = match name {
        Some(wanted) => {
            let matching: Vec<_> = gateways
                .iter()
                .filter(|g| label(g) == wanted || str_at(&g.0, "/metadata/name") == Some(wanted))
                .cloned()
                .collect();
            match matching.len() {
                0 if gateways.is_empty() => return Err(no_gateway(file, &others)),
                0 => {
                    return Err(InputError::NotFound {
                        file: file.to_string(),
                        name: wanted.to_string(),
                        names: gateways.iter().map(label).collect::<Vec<_>>().join(", "),
                    });
                }
                1 => matching.into_iter().next(),
                n if matching.iter().all(|g| label(g) == label(&matching[0])) => {
                    return Err(InputError::Repeated {
                        file: file.to_string(),
                        name: label(&matching[0]),
                        places: matching
                            .iter()
                            .map(|(_, o)| o.to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                        count: n,
                    });
                }
                n => {
                    return Err(InputError::Ambiguous {
                        file: file.to_string(),
                        count: n,
                        names: matching.iter().map(label).collect::<Vec<_>>().join(", "),
                    });
                }
            }
        }
        None if gateways.len() > 1 && gateways.iter().all(|g| label(g) == label(&gateways[0])) => {
            return Err(InputError::Repeated {
                file: file.to_string(),
                name: label(&gateways[0]),
                places: gateways
                    .iter()
                    .map(|(_, o)| o.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                count: gateways.len(),
            });
        }
        None if gateways.len() > 1 => {
            return Err(InputError::Ambiguous {
                file: file.to_string(),
                count: gateways.len(),
                names: gateways.iter().map(label).collect::<Vec<_>>().join(", "),
            });
        }
        None => gateways.into_iter().next(),
    };
    let Some((raw, origin)) = chosen else {
        return Err(no_gateway(file, &others));
    };
    typed(raw, origin, secrets)
}

fn kind_of(v: &Value) -> &str {
    v.get("kind").and_then(Value::as_str).unwrap_or("")
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// `namespace/name`, or `name` when the object has no namespace.
fn qualified_name(v: &Value) -> String {
    let name = str_at(v, "/metadata/name").unwrap_or(NO_NAME);
    match str_at(v, "/metadata/namespace") {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

fn sort(
    doc: Value,
    origin: Origin,
    gateways: &mut Vec<(Value, Origin)>,
    others: &mut Vec<String>,
    secrets: &mut Vec<Value>,
) {
    if kind_of(&doc) == "IPsecGateway" {
        gateways.push((doc, origin));
        return;
    }
    if kind_of(&doc) == "Secret" {
        secrets.push(doc.clone());
    }
    // Only kind and name are ever shown: the document may be a Secret.
    let what = match (kind_of(&doc), doc.get("apiVersion").and_then(Value::as_str)) {
        ("", _) => "not a Kubernetes object (no `kind`)".to_string(),
        ("VPNGateway" | "VPNPeer", _) => {
            format!(
                "a {} {} (already the new API)",
                kind_of(&doc),
                qualified_name(&doc)
            )
        }
        (kind, Some(api)) => format!("a {kind} {} ({api})", qualified_name(&doc)),
        (kind, None) => format!("a {kind} {}", qualified_name(&doc)),
    };
    let item = origin
        .item
        .map(|i| format!(" items[{i}]"))
        .unwrap_or_default();
    others.push(format!("document {}{item} is {what}", origin.document));
}

fn no_gateway(file: &str, others: &[String]) -> InputError {
    InputError::NoGateway {
        file: file.to_string(),
        seen: others.join("; "),
    }
}

fn typed(raw: Value, origin: Origin, secrets: Vec<Value>) -> Result<Source, InputError> {
    let api = raw.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if api != format!("{OLD_GROUP}/{VERSION}") {
        return Err(InputError::ApiVersion {
            origin,
            seen: api.to_string(),
        });
    }
    let name = qualified_name(&raw);
    let field = |path: String, message: String| InputError::Field {
        origin: origin.clone(),
        name: name.clone(),
        path,
        message,
    };
    if raw
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(field(
            "metadata.name".into(),
            "missing: every object needs a name".into(),
        ));
    }
    if raw.get("spec").is_none_or(Value::is_null) {
        return Err(field(
            "spec".into(),
            "missing: an IPsecGateway without a spec has nothing to migrate".into(),
        ));
    }
    let gateway: IPsecGateway = serde_path_to_error::deserialize(raw.clone())
        .map_err(|e| field(e.path().to_string(), plain_message(&e.inner().to_string())))?;

    let dup = |what, value: &str, first: String, second: String| InputError::Duplicate {
        origin: origin.clone(),
        name: name.clone(),
        what,
        value: value.to_string(),
        first,
        second,
    };
    let spec = &gateway.spec;
    let tunnels = spec.tunnels.iter().map(|t| t.name.as_str());
    if let Some((v, a, b)) = first_duplicate(tunnels) {
        return Err(dup(
            "tunnel",
            v,
            format!("spec.tunnels[{a}].name"),
            format!("spec.tunnels[{b}].name"),
        ));
    }
    let exposures = spec.exposures.iter().map(|e| e.name.as_str());
    if let Some((v, a, b)) = first_duplicate(exposures) {
        return Err(dup(
            "exposure",
            v,
            format!("spec.exposures[{a}].name"),
            format!("spec.exposures[{b}].name"),
        ));
    }
    let reverse = spec.reverse_exposures.iter().map(|e| e.name.as_str());
    if let Some((v, a, b)) = first_duplicate(reverse) {
        return Err(dup(
            "reverse exposure",
            v,
            format!("spec.reverseExposures[{a}].name"),
            format!("spec.reverseExposures[{b}].name"),
        ));
    }
    Ok(Source {
        raw,
        gateway,
        origin,
        secrets,
        secret_error: None,
    })
}

/// serde's messages name Rust types ("expected struct IPsecGatewaySpec with 6 elements");
/// say "a mapping" instead.
fn plain_message(m: &str) -> String {
    match m.split_once("expected struct ") {
        Some((head, _)) => format!("{head}expected a mapping"),
        None => m
            .replace("expected u16", "expected an integer from 1 to 65535")
            .replace("expected u8", "expected an integer from 0 to 255"),
    }
}

fn first_duplicate<'a>(names: impl Iterator<Item = &'a str>) -> Option<(&'a str, usize, usize)> {
    let mut seen = HashMap::new();
    for (i, n) in names.enumerate() {
        if let Some(first) = seen.insert(n, i) {
            return Some((n, first, i));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16(text: &str, le: bool) -> Vec<u8> {
        let mut out = if le {
            vec![0xFF, 0xFE]
        } else {
            vec![0xFE, 0xFF]
        };
        for u in text.encode_utf16() {
            out.extend(if le { u.to_le_bytes() } else { u.to_be_bytes() });
        }
        out
    }

    fn utf32(text: &str, le: bool) -> Vec<u8> {
        let mut out = if le {
            vec![0xFF, 0xFE, 0, 0]
        } else {
            vec![0, 0, 0xFE, 0xFF]
        };
        for c in text.chars() {
            let v = c as u32;
            out.extend(if le { v.to_le_bytes() } else { v.to_be_bytes() });
        }
        out
    }

    /// Issue 9 item 11: every BOM kubectl reads is read, and the BOM is not text.
    #[test]
    fn boms_are_recognised_and_decoded() {
        let text = "apiVersion: ipsec.bnerd.net/v1alpha1\r\nkind: IPsecGateway # Zürich 🔐\n";
        assert_eq!(decode(text.as_bytes(), "f").unwrap(), text);
        let mut bom8 = vec![0xEF, 0xBB, 0xBF];
        bom8.extend(text.as_bytes());
        assert_eq!(decode(&bom8, "f").unwrap(), text);
        for le in [true, false] {
            assert_eq!(
                decode(&utf16(text, le), "f").unwrap(),
                text,
                "utf16 le={le}"
            );
            assert_eq!(
                decode(&utf32(text, le), "f").unwrap(),
                text,
                "utf32 le={le}"
            );
        }
    }

    #[test]
    fn bytes_that_are_not_text_name_the_encoding_found() {
        let msg = |b: &[u8]| decode(b, "g.yaml").unwrap_err().to_string();
        let mut cut = utf16("kind: IPsecGateway", true);
        cut.pop();
        assert_eq!(
            msg(&cut),
            "g.yaml: not UTF-16 text: an odd number of bytes (37), the file is cut short (encoding found: UTF-16 LE (BOM))"
        );
        let mut lone = utf16("ab", false);
        lone.extend([0xD8, 0x00, 0x00, 0x61]);
        assert_eq!(
            msg(&lone),
            "g.yaml: not UTF-16 text: unpaired surrogate 0xd800 at byte offset 6 (encoding found: UTF-16 BE (BOM))"
        );
        let no_bom: Vec<u8> = utf16("apiVersion: v1\n", true)[2..].to_vec();
        assert_eq!(
            msg(&no_bom),
            "g.yaml: not UTF-8 text: a zero byte after every character, so UTF-16 LE without a BOM (encoding found: UTF-16 LE without a BOM)"
        );
        assert_eq!(
            msg(b"apiVersion: v1\n\xe9t\xe9\n"),
            "g.yaml: not UTF-8 text (invalid byte at offset 15) (encoding found: no BOM, not UTF-8 (perhaps Latin-1 or Windows-1252))"
        );
        let mut bad32 = utf32("a", true);
        bad32.extend(0x0011_0000u32.to_le_bytes());
        assert_eq!(
            msg(&bad32),
            "g.yaml: not UTF-32 text: 0x110000 at byte offset 8 is not a character (encoding found: UTF-32 LE (BOM))"
        );
    }

    /// The hint converts from the encoding found and never repeats the command that
    /// wrote the file.
    #[test]
    fn the_encoding_hint_converts_from_what_was_found() {
        let e = decode(&[0xFF, 0xFE, 0x61], "acme.yaml").unwrap_err();
        let hint = e.hint().unwrap();
        assert!(
            hint.contains("`iconv -f UTF-16 -t UTF-8 acme.yaml > gateway.utf8.yaml`"),
            "{hint}"
        );
        assert!(hint.contains("Out-File -Encoding utf8"), "{hint}");
        assert!(!hint.contains("kubectl get ipsecgateway"), "{hint}");
    }

    /// Attack finding: every BOM-less UTF-16/UTF-32 file got `iconv -f UTF-16LE`, which
    /// garbles big-endian and UTF-32 input. The byte order and width its zero bytes show
    /// are named, and iconv is told exactly that; standard input gets a pipe.
    #[test]
    fn a_file_without_a_bom_is_converted_from_its_own_byte_order() {
        let text = "apiVersion: ipsec.bnerd.net/v1alpha1\nkind: IPsecGateway\n";
        let units = |width: usize, big: bool| -> Vec<u8> {
            text.chars()
                .flat_map(|c| {
                    let mut unit = vec![0u8; width];
                    unit[if big { width - 1 } else { 0 }] = c as u8;
                    unit
                })
                .collect()
        };
        for (width, big, from) in [
            (2, false, "UTF-16LE"),
            (2, true, "UTF-16BE"),
            (4, false, "UTF-32LE"),
            (4, true, "UTF-32BE"),
        ] {
            let e = decode(&units(width, big), "g.yaml").unwrap_err();
            let hint = e.hint().unwrap();
            assert!(
                hint.contains(&format!(
                    "`iconv -f {from} -t UTF-8 g.yaml > gateway.utf8.yaml`"
                )),
                "{from}: {hint}"
            );
            let e = decode(&units(width, big), "-").unwrap_err();
            assert!(
                e.hint().unwrap().contains(&format!(
                    "`… | iconv -f {from} -t UTF-8 | vpnmig plan -f -`"
                )),
                "{from} from standard input: {}",
                e.hint().unwrap()
            );
        }
    }
}
