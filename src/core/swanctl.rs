//! A reader of `swanctl --list-sas` (strongSwan's human format) and of
//! `swanctl --list-sas --raw` (the vici dump). Pure: text in, [`Sas`] out.
//!
//! It keeps going over lines it does not recognise (algorithm, timing, traffic and task
//! lines, future additions) and keeps states it has not seen as text, because a support
//! ticket or a newer strongSwan must not make it fail. It reads both SPI forms
//! (`a_i* b_r` and the older `a:b`), IKEv1 and IKEv2, `EAP:`/`XAuth:` identities and
//! virtual-IP suffixes on the endpoint lines, several traffic selectors per line, and
//! `-in-UDP` modes. Duplicate IKE SAs (after a reconnect) are all kept, in order.
//! Samples: fixtures/swanctl/ (see SOURCES.md there).
//!
//! Layer 0 (model, addresses, paths, parsers, YAML): imports nothing above it; see docs/architecture.md.

use serde::Serialize;

/// Everything `--list-sas` printed.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Sas {
    pub ike_sas: Vec<IkeSa>,
}

/// One IKE SA.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct IkeSa {
    /// The connection name.
    pub name: String,
    /// strongSwan's unique id (`#2`); IKE and CHILD ids are separate number spaces.
    pub unique_id: u64,
    /// `ESTABLISHED`, `CONNECTING`, `REKEYING`, `DELETING`, … as printed.
    pub state: String,
    /// 1 or 2.
    pub ike_version: u8,
    pub local: Endpoint,
    pub remote: Endpoint,
    pub child_sas: Vec<ChildSa>,
    /// The negotiated IKE algorithms as swanctl prints them
    /// (`AES_CBC-256/HMAC_SHA2_256_128/PRF_HMAC_SHA2_256/MODP_2048`); empty when not
    /// printed (an SA still CONNECTING). Not in `parse-sas` JSON (kept stable).
    #[serde(skip)]
    pub algorithms: String,
    /// The IKE SPIs (initiator, responder), without the `*` that marks the local one.
    #[serde(skip)]
    pub spis: (String, String),
    /// NAT traversal in use: `nat-any=yes` in `--raw`; in the human form (which does not
    /// print it) any CHILD SA encapsulated in UDP.
    #[serde(skip)]
    pub nat_t: bool,
    /// Seconds since it was established (`established 19s ago`, `established=19`).
    #[serde(skip)]
    pub established_s: Option<u64>,
    /// The IKE tasks charon is running on it now (`active:  IKE_DPD`,
    /// `tasks-active=[IKE_DPD]`): an `IKE_DPD` here is a liveness check of the peer
    /// still waiting for its answer.
    #[serde(skip)]
    pub tasks_active: Vec<String>,
}

/// One side of an IKE SA.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Endpoint {
    /// The IKE identity (`'fw.acme.example'` printed, quotes removed).
    pub id: String,
    pub address: String,
    /// `None` when not printed.
    pub port: Option<u16>,
}

/// One CHILD SA.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ChildSa {
    /// The CHILD SA's name (in `--raw`, its `name=`, not the section key).
    pub name: String,
    pub unique_id: u64,
    /// `INSTALLED`, `REKEYED`, `DELETING`, … as printed.
    pub state: String,
    /// `TUNNEL`, `TRANSPORT` or `BEET`.
    pub mode: String,
    /// The `-in-UDP` forms: ESP in UDP (NAT traversal).
    pub udp_encap: bool,
    /// Traffic selectors as printed, e.g. `10.0.0.0/24` or `192.0.2.1/32[udp]`.
    pub local_ts: Vec<String>,
    pub remote_ts: Vec<String>,
    /// `ESP` or `AH` (the part before `:` in `ESP:AES_GCM_16-256`).
    #[serde(skip)]
    pub protocol: String,
    /// The negotiated algorithms (`AES_GCM_16-256`, `AES_CBC-128/HMAC_SHA2_256_128`).
    #[serde(skip)]
    pub algorithms: String,
    /// The SPIs (inbound, outbound) as printed.
    #[serde(skip)]
    pub spis: (String, String),
    /// Inbound traffic: what the peer sent through it (`in  c1234567,  3792 bytes,
    /// 70 packets,  181s ago`; `bytes-in`, `packets-in`, `use-in` in `--raw`). `None`
    /// when not printed.
    #[serde(skip)]
    pub in_bytes: Option<u64>,
    #[serde(skip)]
    pub in_packets: Option<u64>,
    /// Seconds since the last inbound packet; swanctl prints it only once a packet came.
    #[serde(skip)]
    pub in_idle_s: Option<u64>,
    /// Seconds since it was installed (`installed 62s ago`, `install-time=62`).
    #[serde(skip)]
    pub installed_s: Option<u64>,
}

impl ChildSa {
    /// Seconds since the peer last sent anything through this CHILD SA: since the last
    /// inbound packet, or since it was installed when none came yet. `None` when swanctl
    /// did not print enough to tell (no counters, or packets without their age).
    pub fn inbound_idle_s(&self) -> Option<u64> {
        match self.in_packets? {
            0 => self.installed_s,
            _ => self.in_idle_s,
        }
    }
}

/// `Ns ago` (or `N s ago`) → N.
fn ago(text: &str) -> Option<u64> {
    let t = text
        .trim()
        .strip_suffix("ago")?
        .trim()
        .strip_suffix('s')?
        .trim();
    t.parse().ok()
}

/// The counters of an `in`/`out` line after its SPI: `(bytes, packets, seconds ago)`.
fn counters(rest: &str) -> (Option<u64>, Option<u64>, Option<u64>) {
    let mut out = (None, None, None);
    for f in rest.split(',').map(str::trim) {
        if let Some(b) = f.strip_suffix(" bytes") {
            out.0 = b.trim().parse().ok();
        } else if let Some(p) = f.strip_suffix(" packets") {
            out.1 = p.trim().parse().ok();
        } else if f.ends_with("ago") {
            out.2 = ago(f);
        }
    }
    out
}

/// Why the text could not be read. Structure that cannot be recovered from is an error,
/// and so is text in which nothing is swanctl's: an error message is not "no SAs"
/// (issue 9 item 10). Unknown lines among recognised ones are skipped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SwanctlError {
    #[error("line {line}: a CHILD SA or selector before any IKE SA: {text:?}")]
    Orphan { line: usize, text: String },
    #[error("raw output: unbalanced braces")]
    Unbalanced,
    /// A line at the left margin that is not an IKE SA: swanctl indents everything else,
    /// so the text lost its indentation (copied through a ticket or a chat) and cannot be
    /// read safely.
    #[error(
        "line {line} is not an IKE SA line but starts at the left margin: the indentation swanctl prints is missing, so which SA each line belongs to is unknown: {text:?}"
    )]
    Unindented { line: usize, text: String },
    /// An error line of kubectl or the container runtime after or among swanctl's lines:
    /// the output was cut short (a killed exec) or mixed with stderr, so it may be
    /// incomplete.
    #[error(
        "swanctl's output is cut short or mixed with an error from kubectl or the container runtime at line {line}: {text:?}; the SAs before it may be incomplete"
    )]
    Interrupted { line: usize, text: String },
    /// swanctl's own error when it cannot reach the daemon
    /// (`connecting to 'unix:///var/run/charon.vici' failed: …`).
    #[error(
        "charon is not running / the VICI socket is not reachable: swanctl printed {line:?}, not a list of SAs"
    )]
    CharonDown { line: String },
    /// kubectl's or the container runtime's error instead of swanctl's output.
    #[error(
        "not swanctl --list-sas output: an error from kubectl or the container runtime (the command did not reach swanctl): {line:?}"
    )]
    ExecError { line: String },
    /// Text in which no line is an IKE SA, CHILD SA or selector line.
    #[error(
        "not swanctl --list-sas output: no IKE SA, CHILD SA or selector line in {lines} non-empty line(s); the first is {first:?}"
    )]
    NotSwanctl { lines: usize, first: String },
}

impl SwanctlError {
    /// The error as a sentence that says what the text is: the structural errors get
    /// "not swanctl --list-sas output: " in front, the others name themselves.
    pub fn described(&self) -> String {
        match self {
            SwanctlError::Orphan { .. }
            | SwanctlError::Unbalanced
            | SwanctlError::Unindented { .. }
            | SwanctlError::Interrupted { .. } => {
                format!("not swanctl --list-sas output: {self}")
            }
            _ => self.to_string(),
        }
    }

    /// What would change the outcome, rendered after the error.
    pub fn hint(&self) -> String {
        match self {
            SwanctlError::CharonDown { .. } => "start charon (strongSwan's IKE daemon) in the gateway pod, or find why it stopped: `kubectl logs deploy/GATEWAY -c strongswan`; when no SA exists swanctl prints nothing, never this".into(),
            SwanctlError::ExecError { .. } | SwanctlError::Interrupted { .. } => "check the pod and container (`-c strongswan`) the exec went to, and pass only swanctl's standard output (no `2>&1`)".into(),
            _ => "pass the output of `swanctl --list-sas` (or `--list-sas --raw`) as printed; when no SA exists swanctl prints nothing (an empty input reads as no SAs)".into(),
        }
    }
}

/// Read either format (the `--raw` form is recognised by its `list-sa` event lines).
///
/// Empty input (zero bytes or whitespace only) is no SAs: swanctl prints nothing when
/// none exists. Non-empty input in which no IKE SA is recognised is an error that names
/// what the text was: charon not running, a kubectl/exec error, or something else with
/// its first line (issue 9 item 10), so that no caller turns an error into "nothing is
/// up".
pub fn parse(text: &str) -> Result<Sas, SwanctlError> {
    if text.trim().is_empty() {
        return Ok(Sas::default());
    }
    if text.lines().any(|l| {
        l.trim_start().starts_with("list-sa event") || l.trim_start().starts_with("list-sas reply")
    }) {
        return parse_raw(text);
    }
    let sas = parse_human(text)?;
    if sas.ike_sas.is_empty() {
        return Err(classify(text));
    }
    Ok(sas)
}

/// Why `swanctl` failed, from what it printed on standard error: charon not running
/// (the VICI socket not reachable) is named as such (issue 9 item 10); anything else is
/// given as printed.
pub fn failure(stderr: &str) -> String {
    match classify(stderr) {
        e @ SwanctlError::CharonDown { .. } => e.to_string(),
        _ => stderr.trim().to_string(),
    }
}

/// What an exit code of `swanctl` in a gateway pod means, with what it printed on
/// standard error (F2): charon not answering on its VICI socket (swanctl exits with
/// `ECONNREFUSED`, 111, or `ENOENT`, 2, and says `connecting to … failed`), swanctl
/// missing from the container (126, 127), the command killed (137), else swanctl's own
/// first line.
pub fn exit_meaning(code: i32, stderr: &str) -> String {
    let first = stderr
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let quoted = |l: &str| -> String {
        let mut s: String = l.chars().take(200).collect();
        if s.len() < l.len() {
            s.push('…');
        }
        s
    };
    if let SwanctlError::CharonDown { line } = classify(stderr) {
        return format!(
            "the pod's strongSwan daemon (charon) does not answer on its VICI socket (swanctl: {line})"
        );
    }
    match code {
        111 => "the pod's strongSwan daemon (charon) does not answer on its VICI socket (connection refused)".into(),
        126 | 127 => format!(
            "swanctl could not be run in the container (not found or not executable){}",
            if first.is_empty() { String::new() } else { format!(": {}", quoted(first)) }
        ),
        137 => "swanctl was killed (SIGKILL: out of memory, or the pod is stopping)".into(),
        _ if first.is_empty() => "swanctl failed and printed nothing on standard error".into(),
        _ => format!("swanctl failed: {}", quoted(first)),
    }
}

/// What a non-empty text without any IKE SA is.
fn classify(text: &str) -> SwanctlError {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let shown = |l: &str| -> String {
        let mut s: String = l.chars().take(160).collect();
        if s.len() < l.len() {
            s.push('…');
        }
        s
    };
    let charon = |l: &str| {
        l.contains("charon.vici")
            || (l.contains("connecting to '") && l.contains("failed"))
            || l.contains("connecting to 'default' URI failed")
    };
    if let Some(l) = lines.iter().find(|l| charon(l)) {
        return SwanctlError::CharonDown { line: shown(l) };
    }
    if let Some(l) = lines.iter().find(|l| exec_error(l)) {
        return SwanctlError::ExecError { line: shown(l) };
    }
    SwanctlError::NotSwanctl {
        lines: lines.len(),
        first: shown(lines.first().copied().unwrap_or_default()),
    }
}

/// A line kubectl or the container runtime prints instead of (or after) the command's
/// output.
fn exec_error(line: &str) -> bool {
    [
        "error: ",
        "Error from server",
        "Unable to connect to the server",
        "The connection to the server",
        "OCI runtime exec failed",
        "command terminated with exit code",
        "error executing command",
    ]
    .iter()
    .any(|p| line.trim_start().starts_with(p))
}

/// The states charon's `ike_sa_state_names` prints for an IKE SA.
const IKE_STATES: [&str; 8] = [
    "CREATED",
    "CONNECTING",
    "ESTABLISHED",
    "PASSIVE",
    "REKEYING",
    "REKEYED",
    "DELETING",
    "DESTROYING",
];

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// `name: #12, rest` → (`name`, 12, `rest`).
fn head(line: &str) -> Option<(&str, u64, &str)> {
    let (name, rest) = line.trim().split_once(": #")?;
    let (id, rest) = rest.split_once(',').unwrap_or((rest, ""));
    Some((name, id.trim().parse().ok()?, rest.trim()))
}

/// `'id' @ address[port] EAP: 'x' [vip]` (the id quoted or not).
fn endpoint(rest: &str) -> Endpoint {
    let rest = rest.trim();
    let (id, after) = match rest.strip_prefix('\'') {
        // A DN may hold an apostrophe (`O=Dunne's Stores`): the id ends at the last
        // `' @ `, not at the first quote.
        Some(r) => match r.rsplit_once("' @ ") {
            Some((id, a)) => (id.to_string(), a),
            None => r
                .split_once('\'')
                .map(|(id, a)| (id.to_string(), a))
                .unwrap_or((r.to_string(), "")),
        },
        None => rest
            .split_once(" @ ")
            .map(|(id, a)| (id.trim().to_string(), a))
            .unwrap_or((rest.to_string(), "")),
    };
    let after = after
        .trim_start()
        .strip_prefix('@')
        .unwrap_or(after)
        .trim_start();
    let addr_port = after.split_whitespace().next().unwrap_or("");
    let (address, port) = match addr_port.split_once('[') {
        Some((a, p)) => (a.to_string(), p.trim_end_matches(']').parse().ok()),
        None => (addr_port.to_string(), None),
    };
    Endpoint { id, address, port }
}

/// `5ec3b2110cf79245_i* 7cfb30548a970e64_r` (or the older `a:b`) → (initiator, responder).
fn ike_spis(field: &str) -> Option<(String, String)> {
    let clean = |s: &str| {
        s.trim()
            .trim_end_matches('*')
            .trim_end_matches("_i")
            .trim_end_matches("_r")
            .to_string()
    };
    if let Some((i, r)) = field.split_once(' ')
        && i.trim_end_matches('*').ends_with("_i")
    {
        return Some((clean(i), clean(r)));
    }
    let (i, r) = field.split_once(':')?;
    let hex = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit());
    (hex(i.trim()) && hex(r.trim())).then(|| (i.trim().to_string(), r.trim().to_string()))
}

/// The IKE algorithm line: `AES_GCM_16-256/PRF_HMAC_SHA2_384/ECP_384` (one word of
/// strongSwan's upper-case algorithm names), not a task or timing line.
fn is_algorithms(line: &str) -> bool {
    line.starts_with(|c: char| c.is_ascii_uppercase())
        && line
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || "_-/".contains(c))
}

/// The algorithms of a `--raw` section as the human form prints them.
fn raw_algorithms(s: &Section) -> String {
    let mut parts = Vec::new();
    if let Some(e) = s.get("encr-alg") {
        parts.push(match s.get("encr-keysize") {
            Some(k) => format!("{e}-{k}"),
            None => e.to_string(),
        });
    }
    for k in ["integ-alg", "prf-alg", "dh-group"] {
        if let Some(v) = s.get(k) {
            parts.push(v.to_string());
        }
    }
    parts.join("/")
}

fn parse_human(text: &str) -> Result<Sas, SwanctlError> {
    let mut sas = Sas::default();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let depth = indent(line);
        let trimmed = line.trim();
        let orphan = || SwanctlError::Orphan {
            line: n + 1,
            text: line.to_string(),
        };
        // Once swanctl has printed an SA, an error line of kubectl or the runtime means
        // the listing was cut short or mixed with stderr: never read it as complete.
        if !sas.ike_sas.is_empty() && exec_error(line) {
            return Err(SwanctlError::Interrupted {
                line: n + 1,
                text: trimmed.to_string(),
            });
        }
        match depth {
            0 => {
                let head = head(line).filter(|(_, _, rest)| {
                    IKE_STATES.contains(&rest.split(',').next().unwrap_or_default().trim())
                });
                let Some((name, id, rest)) = head else {
                    if sas.ike_sas.is_empty() {
                        continue;
                    }
                    return Err(SwanctlError::Unindented {
                        line: n + 1,
                        text: trimmed.to_string(),
                    });
                };
                let fields: Vec<&str> = rest.split(',').map(str::trim).collect();
                let state = fields.first().copied().unwrap_or_default().to_string();
                let ike_version = fields
                    .iter()
                    .find_map(|f| f.strip_prefix("IKEv"))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                sas.ike_sas.push(IkeSa {
                    name: name.to_string(),
                    unique_id: id,
                    state,
                    ike_version,
                    spis: fields.iter().find_map(|f| ike_spis(f)).unwrap_or_default(),
                    ..IkeSa::default()
                });
            }
            _ => {
                let Some(ike) = sas.ike_sas.last_mut() else {
                    if trimmed.starts_with("local")
                        || trimmed.starts_with("remote")
                        || head(line).is_some()
                    {
                        return Err(orphan());
                    }
                    continue;
                };
                let child_depth = depth > 2;
                if let Some(rest) = trimmed
                    .strip_prefix("local ")
                    .or_else(|| trimmed.strip_prefix("local\t"))
                {
                    if child_depth {
                        let Some(child) = ike.child_sas.last_mut() else {
                            return Err(orphan());
                        };
                        child
                            .local_ts
                            .extend(rest.split_whitespace().map(str::to_string));
                    } else {
                        ike.local = endpoint(rest);
                    }
                } else if let Some(rest) = trimmed
                    .strip_prefix("remote ")
                    .or_else(|| trimmed.strip_prefix("remote\t"))
                {
                    if child_depth {
                        let Some(child) = ike.child_sas.last_mut() else {
                            return Err(orphan());
                        };
                        child
                            .remote_ts
                            .extend(rest.split_whitespace().map(str::to_string));
                    } else {
                        ike.remote = endpoint(rest);
                    }
                } else if child_depth
                    && let Some(rest) = trimmed
                        .strip_prefix("in ")
                        .or_else(|| trimmed.strip_prefix("out "))
                {
                    if let Some(child) = ike.child_sas.last_mut() {
                        let spi = rest
                            .split([',', ' ', '('])
                            .find(|t| !t.is_empty())
                            .unwrap_or_default()
                            .to_string();
                        if trimmed.starts_with("in ") {
                            child.spis.0 = spi;
                            let after = rest.split_once(',').map(|(_, a)| a).unwrap_or("");
                            (child.in_bytes, child.in_packets, child.in_idle_s) = counters(after);
                        } else {
                            child.spis.1 = spi;
                        }
                    }
                } else if !child_depth && is_algorithms(trimmed) {
                    ike.algorithms = trimmed.to_string();
                } else if let Some(rest) = trimmed
                    .strip_prefix("established ")
                    .filter(|_| !child_depth)
                {
                    ike.established_s = ago(rest.split(',').next().unwrap_or_default());
                } else if let Some(rest) = trimmed.strip_prefix("installed ") {
                    if let (true, Some(child)) = (child_depth, ike.child_sas.last_mut()) {
                        child.installed_s = ago(rest.split(',').next().unwrap_or_default());
                    }
                } else if let Some(rest) = trimmed.strip_prefix("active:") {
                    if !child_depth {
                        ike.tasks_active
                            .extend(rest.split_whitespace().map(str::to_string));
                    }
                } else if let Some((name, id, rest)) = head(line).filter(|_| !child_depth) {
                    // `reqid N, STATE, MODE[-in-UDP], PROTO:ALGS`
                    let fields: Vec<&str> = rest
                        .split(',')
                        .map(str::trim)
                        .filter(|f| !f.starts_with("reqid"))
                        .collect();
                    let state = fields.first().copied().unwrap_or_default().to_string();
                    let mode_field = fields.get(1).copied().unwrap_or_default();
                    let (mode, udp_encap) = match mode_field.strip_suffix("-in-UDP") {
                        Some(m) => (m.to_string(), true),
                        None => (mode_field.to_string(), false),
                    };
                    let (protocol, algorithms) = fields
                        .iter()
                        .skip(2)
                        .find_map(|f| {
                            f.split_once(':')
                                .filter(|(p, _)| matches!(*p, "ESP" | "AH"))
                        })
                        .map(|(p, a)| (p.to_string(), a.to_string()))
                        .unwrap_or_default();
                    ike.nat_t |= udp_encap;
                    ike.child_sas.push(ChildSa {
                        name: name.to_string(),
                        unique_id: id,
                        state,
                        mode,
                        udp_encap,
                        protocol,
                        algorithms,
                        ..ChildSa::default()
                    });
                }
            }
        }
    }
    Ok(sas)
}

/// A vici raw dump as nested sections of key/value pairs.
#[derive(Debug, Default)]
struct Section {
    values: Vec<(String, String)>,
    lists: Vec<(String, Vec<String>)>,
    sections: Vec<(String, Section)>,
}

impl Section {
    fn get(&self, k: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    }
    fn list(&self, k: &str) -> Vec<String> {
        self.lists
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }
    fn section(&self, k: &str) -> Option<&Section> {
        self.sections
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, s)| s)
    }
}

/// Tokens: `{`, `}`, `[ … ]` as one, and words.
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_list = false;
    for c in text.chars() {
        match c {
            '[' if cur.ends_with('=') => {
                in_list = true;
                cur.push(c);
            }
            ']' if in_list => {
                in_list = false;
                cur.push(c);
            }
            '{' | '}' if !in_list => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                out.push(c.to_string());
            }
            c if c.is_whitespace() && !in_list => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// vici keys are lowercase words with dashes; `O=strongSwan,` inside a DN is not one.
fn is_vici_key(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn section(tokens: &[String], pos: &mut usize) -> Result<Section, SwanctlError> {
    let mut s = Section::default();
    while *pos < tokens.len() {
        let t = &tokens[*pos];
        *pos += 1;
        if t == "}" {
            return Ok(s);
        }
        if tokens.get(*pos).is_some_and(|n| n == "{") {
            *pos += 1;
            let inner = section(tokens, pos)?;
            s.sections.push((t.clone(), inner));
        } else if let Some((k, v)) = t.split_once('=').filter(|(k, _)| is_vici_key(k)) {
            match v.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
                Some(items) => s.lists.push((
                    k.to_string(),
                    items.split_whitespace().map(str::to_string).collect(),
                )),
                None => s.values.push((k.to_string(), v.to_string())),
            }
        } else if let Some(last) = s.values.last_mut() {
            // A value with spaces (a DN such as `C=CH, O=strongSwan, CN=moon`).
            last.1.push(' ');
            last.1.push_str(t);
        }
    }
    Err(SwanctlError::Unbalanced)
}

fn parse_raw(text: &str) -> Result<Sas, SwanctlError> {
    let mut sas = Sas::default();
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("list-sa event"))
    {
        let toks = tokens(line.trim_start_matches("list-sa event").trim());
        let mut pos = 0;
        if toks.first().map(String::as_str) != Some("{") {
            continue;
        }
        pos += 1;
        let event = section(&toks, &mut pos)?;
        for (name, ike) in &event.sections {
            let port = |k: &str| ike.get(k).and_then(|p| p.parse().ok());
            let mut sa = IkeSa {
                name: name.clone(),
                unique_id: ike
                    .get("uniqueid")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
                state: ike.get("state").unwrap_or_default().to_string(),
                ike_version: ike.get("version").and_then(|v| v.parse().ok()).unwrap_or(0),
                local: Endpoint {
                    id: ike.get("local-id").unwrap_or_default().to_string(),
                    address: ike.get("local-host").unwrap_or_default().to_string(),
                    port: port("local-port"),
                },
                remote: Endpoint {
                    id: ike.get("remote-id").unwrap_or_default().to_string(),
                    address: ike.get("remote-host").unwrap_or_default().to_string(),
                    port: port("remote-port"),
                },
                child_sas: Vec::new(),
                algorithms: raw_algorithms(ike),
                spis: (
                    ike.get("initiator-spi").unwrap_or_default().to_string(),
                    ike.get("responder-spi").unwrap_or_default().to_string(),
                ),
                nat_t: ike.get("nat-any") == Some("yes"),
                established_s: ike.get("established").and_then(|v| v.parse().ok()),
                tasks_active: ike.list("tasks-active"),
            };
            for (key, child) in ike
                .section("child-sas")
                .map(|c| c.sections.as_slice())
                .unwrap_or_default()
            {
                let number = |k: &str| child.get(k).and_then(|v| v.parse::<u64>().ok());
                sa.child_sas.push(ChildSa {
                    name: child.get("name").unwrap_or(key).to_string(),
                    unique_id: child
                        .get("uniqueid")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0),
                    state: child.get("state").unwrap_or_default().to_string(),
                    mode: child.get("mode").unwrap_or_default().to_string(),
                    udp_encap: child.get("encap") == Some("yes"),
                    local_ts: child.list("local-ts"),
                    remote_ts: child.list("remote-ts"),
                    protocol: child.get("protocol").unwrap_or_default().to_string(),
                    algorithms: raw_algorithms(child),
                    spis: (
                        child.get("spi-in").unwrap_or_default().to_string(),
                        child.get("spi-out").unwrap_or_default().to_string(),
                    ),
                    in_bytes: number("bytes-in"),
                    in_packets: number("packets-in"),
                    in_idle_s: number("use-in"),
                    installed_s: number("install-time"),
                });
            }
            sa.nat_t |= sa.child_sas.iter().any(|c| c.udp_encap);
            sas.ike_sas.push(sa);
        }
    }
    Ok(sas)
}

/// One connection of `swanctl --list-conns`: what the operator configured in charon.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conn {
    pub name: String,
    /// The `remote:` addresses of the IKE part (`%any` when any).
    pub remote_addrs: Vec<String>,
    /// The CHILD SA names: what `swanctl --initiate --child NAME` takes.
    pub children: Vec<String>,
}

/// Read `swanctl --list-conns` (strongSwan's `list_conns.c` format):
///
/// ```text
/// acme: IKEv2, no reauthentication, rekeying every 86400s
///   local:  198.51.100.23
///   remote: 203.0.113.10
///   acme: TUNNEL, rekeying every 3600s
///     local:  10.250.3.0/24
///     remote: 10.20.0.0/16
/// ```
///
/// Lines it does not know are skipped; text without any connection line is no
/// connections.
pub fn list_conns(text: &str) -> Vec<Conn> {
    let mut conns: Vec<Conn> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        let Some((name, rest)) = trimmed.split_once(": ") else {
            continue;
        };
        let first = rest.split([',', ' ']).next().unwrap_or_default();
        match indent(line) {
            0 if first.starts_with("IKEv") => conns.push(Conn {
                name: name.to_string(),
                ..Conn::default()
            }),
            2 if name == "remote" => {
                if let Some(c) = conns.last_mut() {
                    c.remote_addrs = rest
                        .split(',')
                        .map(|a| a.trim().to_string())
                        .filter(|a| !a.is_empty())
                        .collect();
                }
            }
            2 if matches!(first, "TUNNEL" | "TRANSPORT" | "BEET" | "PASS" | "DROP") => {
                if let Some(c) = conns.last_mut() {
                    c.children.push(name.to_string());
                }
            }
            _ => {}
        }
    }
    conns
}

#[cfg(test)]
mod conns_tests {
    use super::*;

    #[test]
    fn an_identity_with_an_apostrophe_is_read_whole() {
        let e = endpoint("'C=IE, O=Dunne's Stores, CN=fw.example' @ 203.0.113.10[4500]");
        assert_eq!(e.id, "C=IE, O=Dunne's Stores, CN=fw.example");
        assert_eq!((e.address.as_str(), e.port), ("203.0.113.10", Some(4500)));
        let e = endpoint("'fw.acme.example' @ 203.0.113.10[500] EAP: 'x'");
        assert_eq!(
            (e.id.as_str(), e.address.as_str()),
            ("fw.acme.example", "203.0.113.10")
        );
    }

    #[test]
    fn list_conns_names_children_and_remote_addresses() {
        let text = "acme: IKEv2, no reauthentication, rekeying every 86400s
  local:  198.51.100.23
  remote: 203.0.113.10, 203.0.113.11
  local pre-shared key authentication:
    id: 198.51.100.23
  remote pre-shared key authentication:
    id: fw.acme.example
  acme-1: TUNNEL, rekeying every 3600s
    local:  10.250.3.0/24
    remote: 10.20.0.0/16
  acme-2: TUNNEL, rekeying every 3600s
    local:  10.250.3.0/24
    remote: 10.30.0.0/16
road: IKEv1/2, reauthentication every 3600s
  local:  %any
  remote: %any
  l2tp: TRANSPORT, rekeying every 1200s
";
        assert_eq!(
            list_conns(text),
            [
                Conn {
                    name: "acme".into(),
                    remote_addrs: vec!["203.0.113.10".into(), "203.0.113.11".into()],
                    children: vec!["acme-1".into(), "acme-2".into()],
                },
                Conn {
                    name: "road".into(),
                    remote_addrs: vec!["%any".into()],
                    children: vec!["l2tp".into()],
                },
            ]
        );
        assert!(list_conns("").is_empty());
        assert!(list_conns("Error: connecting to 'default' URI failed").is_empty());
    }
}

#[cfg(test)]
mod traffic_tests {
    use super::*;

    /// F1: what the peer last sent, read from both forms, as real charon prints it.
    #[test]
    fn inbound_counters_and_their_age_are_read_from_both_forms() {
        let human = "main: #2, ESTABLISHED, IKEv2, 5e2b14d6e80392ba_i de37fdc421708f2a_r*
  local  '198.51.100.23' @ 198.51.100.23[4500]
  remote 'fw.acme.example' @ 203.0.113.10[4500]
  AES_CBC-256/HMAC_SHA2_256_128/PRF_HMAC_SHA2_256/MODP_2048
  established 62s ago, rekeying in 78814s
  active:  IKE_DPD
  main: #1, reqid 1, INSTALLED, TUNNEL-in-UDP, ESP:AES_GCM_16-256
    installed 62s ago, rekeying in 3213s, expires in 3898s
    in  010d4640,  72716 bytes,  1349 packets,    31s ago
    out 5d91767b,  81114 bytes,  1248 packets,    31s ago
    local  10.250.3.0/24
    remote 10.20.0.0/16
  main: #3, reqid 1, INSTALLED, TUNNEL-in-UDP, ESP:AES_GCM_16-256
    installed 4s ago, rekeying in 3213s, expires in 3898s
    in  c9fac8fc,      0 bytes,     0 packets
    out cf3383e4,      0 bytes,     0 packets
    local  10.250.3.0/24
    remote 10.20.0.0/16
  main: #4, reqid 1, INSTALLED, TUNNEL-in-UDP, ESP:AES_GCM_16-256
    in  c9fac8fd,    500 bytes,     5 packets
    local  10.250.3.0/24
    remote 10.20.0.0/16
";
        let sas = parse(human).unwrap();
        let ike = &sas.ike_sas[0];
        assert_eq!(ike.established_s, Some(62));
        assert_eq!(ike.tasks_active, ["IKE_DPD"]);
        let rows: Vec<_> = ike
            .child_sas
            .iter()
            .map(|c| {
                (
                    c.in_bytes,
                    c.in_packets,
                    c.in_idle_s,
                    c.installed_s,
                    c.inbound_idle_s(),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                // Packets came; the last 31 s ago.
                (Some(72716), Some(1349), Some(31), Some(62), Some(31)),
                // None came yet: idle since it was installed.
                (Some(0), Some(0), None, Some(4), Some(4)),
                // Packets without their age, nor the install time: cannot tell.
                (Some(500), Some(5), None, None, None),
            ]
        );
        assert_eq!(ike.child_sas[0].spis.0, "010d4640");
        let raw = "list-sa event {main {uniqueid=1 version=2 state=ESTABLISHED local-host=198.51.100.23 local-port=4500 local-id=198.51.100.23 remote-host=203.0.113.10 remote-port=4500 remote-id=fw.acme.example initiator-spi=5e2b14d6e80392ba responder-spi=de37fdc421708f2a nat-any=yes established=19 rekey-time=78857 tasks-active=[IKE_DPD] child-sas {main-1 {name=main uniqueid=1 reqid=1 state=INSTALLED mode=TUNNEL protocol=ESP encap=yes spi-in=010d4640 spi-out=5d91767b bytes-in=44196 packets-in=820 use-in=181 bytes-out=49155 packets-out=756 use-out=0 install-time=190 local-ts=[10.250.3.0/24] remote-ts=[10.20.0.0/16]}}}}
list-sas reply {}
";
        let ike = &parse(raw).unwrap().ike_sas[0];
        assert_eq!(
            (ike.established_s, ike.tasks_active.clone()),
            (Some(19), vec!["IKE_DPD".to_string()])
        );
        let c = &ike.child_sas[0];
        assert_eq!(
            (
                c.in_bytes,
                c.in_packets,
                c.in_idle_s,
                c.installed_s,
                c.inbound_idle_s()
            ),
            (Some(44196), Some(820), Some(181), Some(190), Some(181))
        );
        // A listing without counters (an older or trimmed output) tells nothing.
        let bare = human
            .lines()
            .filter(|l| !l.trim_start().starts_with("in ") && !l.trim_start().starts_with("out "))
            .collect::<Vec<_>>()
            .join("\n");
        let sas = parse(&bare).unwrap();
        assert!(
            sas.ike_sas[0]
                .child_sas
                .iter()
                .all(|c| c.inbound_idle_s().is_none())
        );
    }

    /// F2: an exit code of swanctl in the gateway pod said as what it means.
    #[test]
    fn swanctl_exit_codes_are_said_as_what_they_mean() {
        let refused = "connecting to 'unix:///var/run/charon.vici' failed: Connection refused\nError: connecting to 'unix:///var/run/charon.vici' URI failed: Connection refused\nstrongSwan 5.9.8 swanctl\nusage:\n";
        let rows = [
            (
                111,
                refused,
                "the pod's strongSwan daemon (charon) does not answer on its VICI socket (swanctl: connecting to 'unix:///var/run/charon.vici' failed: Connection refused)",
            ),
            (
                2,
                "connecting to 'unix:///var/run/charon.vici' failed: No such file or directory\n",
                "the pod's strongSwan daemon (charon) does not answer on its VICI socket (swanctl: connecting to 'unix:///var/run/charon.vici' failed: No such file or directory)",
            ),
            (
                111,
                "",
                "the pod's strongSwan daemon (charon) does not answer on its VICI socket (connection refused)",
            ),
            (
                127,
                "exec: \"swanctl\": executable file not found in $PATH\n",
                "swanctl could not be run in the container (not found or not executable): exec: \"swanctl\": executable file not found in $PATH",
            ),
            (
                137,
                "",
                "swanctl was killed (SIGKILL: out of memory, or the pod is stopping)",
            ),
            (
                1,
                "initiate failed: establishing CHILD_SA 'main' failed\n",
                "swanctl failed: initiate failed: establishing CHILD_SA 'main' failed",
            ),
            (
                1,
                "",
                "swanctl failed and printed nothing on standard error",
            ),
        ];
        for (code, stderr, want) in rows {
            assert_eq!(exit_meaning(code, stderr), want, "{code} {stderr:?}");
        }
    }
}
