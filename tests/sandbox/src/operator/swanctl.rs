//! `swanctl --list-sas` in the gateway pod (DESIGN.md §1 `vpnmig verify`: "conditions +
//! pinned values + `swanctl --list-sas` in the gateway pod"; runbook step 3), printed the
//! way strongSwan's swanctl prints it (`src/swanctl/commands/list_sas.c`; compare
//! ../shared/samples/swanctl/), and `--raw` as the vici message dump of sample 15.
//!
//! The gateway is the responder (the client peer initiates), so the responder SPI carries
//! the `*`. It is reached on its floating IP with MOBIKE, hence port 4500 without UDP
//! encapsulation (`TUNNEL`, like the documentation example, sample 08).

use std::fmt::Write;
use std::net::IpAddr;

use ipnet::IpNet;

use tokio::time::Instant;

use super::peers::{Daemon, IkeSa};

/// Negotiated algorithms, as strongSwan names them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Algs {
    pub encr: Option<(String, Option<u32>)>,
    pub integ: Option<String>,
    pub prf: Option<String>,
    pub dh: Option<String>,
}

fn integrity(t: &str) -> Option<&'static str> {
    Some(match t {
        "md5" => "HMAC_MD5_96",
        "sha" | "sha1" => "HMAC_SHA1_96",
        "sha256" | "sha2_256" => "HMAC_SHA2_256_128",
        "sha256_96" | "sha2_256_96" => "HMAC_SHA2_256_96",
        "sha384" | "sha2_384" => "HMAC_SHA2_384_192",
        "sha512" | "sha2_512" => "HMAC_SHA2_512_256",
        "aesxcbc" => "AES_XCBC_96",
        "aescmac" => "AES_CMAC_96",
        _ => return None,
    })
}

fn prf_of_integrity(integ: &str) -> Option<&'static str> {
    Some(match integ {
        "HMAC_MD5_96" => "PRF_HMAC_MD5",
        "HMAC_SHA1_96" => "PRF_HMAC_SHA1",
        "HMAC_SHA2_256_128" | "HMAC_SHA2_256_96" => "PRF_HMAC_SHA2_256",
        "HMAC_SHA2_384_192" => "PRF_HMAC_SHA2_384",
        "HMAC_SHA2_512_256" => "PRF_HMAC_SHA2_512",
        "AES_XCBC_96" => "PRF_AES128_XCBC",
        "AES_CMAC_96" => "PRF_AES128_CMAC",
        _ => return None,
    })
}

fn prf(t: &str) -> Option<&'static str> {
    Some(match t {
        "prfmd5" => "PRF_HMAC_MD5",
        "prfsha1" => "PRF_HMAC_SHA1",
        "prfsha256" => "PRF_HMAC_SHA2_256",
        "prfsha384" => "PRF_HMAC_SHA2_384",
        "prfsha512" => "PRF_HMAC_SHA2_512",
        "prfaesxcbc" => "PRF_AES128_XCBC",
        "prfaescmac" => "PRF_AES128_CMAC",
        _ => return None,
    })
}

fn dh(t: &str) -> Option<String> {
    Some(match t {
        "curve25519" | "x25519" => "CURVE_25519".into(),
        "curve448" | "x448" => "CURVE_448".into(),
        "modp1024s160" => "MODP_1024_160".into(),
        "modp2048s224" => "MODP_2048_224".into(),
        "modp2048s256" => "MODP_2048_256".into(),
        _ => {
            if let Some(n) = t.strip_prefix("modp") {
                format!("MODP_{}", n.parse::<u32>().ok()?)
            } else if let Some(n) = t.strip_prefix("mlkem") {
                format!("ML_KEM_{}", n.parse::<u32>().ok()?)
            } else if let Some(rest) = t.strip_prefix("ecp") {
                match rest.strip_suffix("bp") {
                    Some(n) => format!("ECP_{}_BP", n.parse::<u32>().ok()?),
                    None => format!("ECP_{}", rest.parse::<u32>().ok()?),
                }
            } else {
                return None;
            }
        }
    })
}

fn encryption(t: &str) -> Option<(String, Option<u32>)> {
    if t == "chacha20poly1305" {
        return Some(("CHACHA20_POLY1305".into(), Some(256)));
    }
    if t == "3des" {
        return Some(("3DES_CBC".into(), None));
    }
    if t == "null" {
        return Some(("NULL".into(), None));
    }
    for (prefix, cbc) in [("aes", "AES"), ("camellia", "CAMELLIA")] {
        let Some(rest) = t.strip_prefix(prefix) else {
            continue;
        };
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let mode = &rest[digits.len()..];
        let size = if digits.is_empty() {
            128
        } else {
            digits.parse().ok()?
        };
        let name = match mode {
            "" => format!("{cbc}_CBC"),
            "ctr" => format!("{cbc}_CTR"),
            "gcm8" | "gcm64" => format!("{cbc}_GCM_8"),
            "gcm12" | "gcm96" => format!("{cbc}_GCM_12"),
            "gcm" | "gcm16" | "gcm128" => format!("{cbc}_GCM_16"),
            "ccm8" | "ccm64" => format!("{cbc}_CCM_8"),
            "ccm12" | "ccm96" => format!("{cbc}_CCM_12"),
            "ccm" | "ccm16" | "ccm128" => format!("{cbc}_CCM_16"),
            _ => return None,
        };
        return Some((name, Some(size)));
    }
    None
}

impl Algs {
    /// The algorithms of a strongSwan proposal. For ESP (a CHILD SA created with
    /// IKE_AUTH) no DH group and no PRF are negotiated.
    pub fn of(proposal: &str, ike: bool) -> Algs {
        let proposal = match (proposal, ike) {
            ("default", true) => "aes128-sha256-x25519",
            ("default", false) => "aes128gcm16",
            (p, _) => p,
        };
        let mut a = Algs::default();
        for t in proposal.split('-') {
            if let Some(i) = integrity(t) {
                a.integ.get_or_insert(i.into());
            } else if let Some(p) = prf(t) {
                a.prf.get_or_insert(p.into());
            } else if let Some(d) = dh(t) {
                a.dh.get_or_insert(d);
            } else if let Some(e) = encryption(t) {
                a.encr.get_or_insert(e);
            }
        }
        if ike {
            if a.prf.is_none() {
                a.prf = a
                    .integ
                    .as_deref()
                    .and_then(prf_of_integrity)
                    .map(str::to_string);
            }
        } else {
            a.prf = None;
            a.dh = None;
        }
        a
    }

    /// `AES_CBC-256/HMAC_SHA2_256_128/PRF_HMAC_SHA2_256/MODP_2048`.
    pub fn human(&self) -> String {
        let mut parts = Vec::new();
        if let Some((e, size)) = &self.encr {
            parts.push(match size {
                Some(s) => format!("{e}-{s}"),
                None => e.clone(),
            });
        }
        parts.extend(
            self.integ
                .iter()
                .chain(self.prf.iter())
                .chain(self.dh.iter())
                .cloned(),
        );
        parts.join("/")
    }

    /// `encr-alg=AES_CBC encr-keysize=256 integ-alg=… prf-alg=… dh-group=…`.
    fn raw(&self) -> String {
        let mut out = Vec::new();
        if let Some((e, size)) = &self.encr {
            out.push(format!("encr-alg={e}"));
            if let Some(s) = size {
                out.push(format!("encr-keysize={s}"));
            }
        }
        if let Some(i) = &self.integ {
            out.push(format!("integ-alg={i}"));
        }
        if let Some(p) = &self.prf {
            out.push(format!("prf-alg={p}"));
        }
        if let Some(d) = &self.dh {
            out.push(format!("dh-group={d}"));
        }
        out.join(" ")
    }
}

/// An address as strongSwan prints it (`%H`): parsed, then printed canonically (RFC 5952
/// for IPv6, through `std::net::Ipv6Addr`'s Display), whatever spelling the spec used
/// (issue 9 item 4: `2001:DB8:5:0::10` is printed `2001:db8:5::10`). A DNS name, which
/// charon would have resolved, is printed as configured.
pub fn host(s: &str) -> String {
    match s.trim().parse::<IpAddr>() {
        Ok(ip) => ip.to_string(),
        Err(_) => s.to_string(),
    }
}

/// An IKE identity as strongSwan prints it (`%Y`): one that parses as an IP address is an
/// `ID_IPV4_ADDR`/`ID_IPV6_ADDR` and printed canonically; FQDNs, user@FQDNs and DNs as
/// configured.
pub fn identity(s: &str) -> String {
    match s.trim().parse::<IpAddr>() {
        Ok(ip) => ip.to_string(),
        Err(_) => s.to_string(),
    }
}

/// A traffic selector as strongSwan prints it (`%R`): the network address and prefix,
/// canonical (host bits cleared, IPv6 in RFC 5952 form); a bare address is its /32 or
/// /128.
pub fn selector(s: &str) -> String {
    let t = s.trim();
    match t.parse::<IpNet>() {
        Ok(n) => n.trunc().to_string(),
        Err(_) => match t.parse::<IpAddr>() {
            Ok(ip) => IpNet::from(ip).to_string(),
            Err(_) => s.to_string(),
        },
    }
}

fn secs(since: Instant, now: Instant) -> u64 {
    now.saturating_duration_since(since).as_secs()
}

/// The traffic of a CHILD SA installed `inst` seconds ago, each way: the simulated client
/// is alive for as long as its SA is up and sends a probe through it ten times a second,
/// so its last packet is always `0s ago` (the real data plane shows a dead one).
fn traffic(inst: u64) -> (u64, u64) {
    let packets = 1 + inst * 10;
    (packets * 84, packets)
}

/// strongSwan rekeys before the lifetime ends: at 90 % of it here.
fn rekey(life_s: u64) -> u64 {
    life_s * 9 / 10
}

fn selected<'a>(daemon: &'a Daemon, ike: Option<&str>) -> Vec<&'a IkeSa> {
    daemon
        .listed()
        .into_iter()
        .filter(|sa| ike.is_none_or(|n| sa.conn == n))
        .collect()
}

/// `swanctl --list-sas` in swanctl's human format. No SAs: no output at all.
pub fn list_sas(daemon: &Daemon, ike: Option<&str>, now: Instant) -> String {
    let mut o = String::new();
    for sa in selected(daemon, ike) {
        let est = secs(sa.established, now);
        // The local SPI carries the `*`: the responder's, unless the gateway initiated.
        let (i, r) = if sa.gateway_initiated {
            ("*", "")
        } else {
            ("", "*")
        };
        let _ = writeln!(
            o,
            "{}: #{}, ESTABLISHED, IKEv{}, {}_i{i} {}_r{r}",
            sa.conn, sa.uid, sa.version, sa.spi_i, sa.spi_r
        );
        let _ = writeln!(
            o,
            "  local  '{}' @ {}[4500]",
            identity(&sa.local_id),
            host(&sa.local_host)
        );
        let _ = writeln!(
            o,
            "  remote '{}' @ {}[4500]",
            identity(&sa.remote_id),
            host(&sa.remote_host)
        );
        let _ = writeln!(o, "  {}", Algs::of(&sa.proposal, true).human());
        let _ = writeln!(
            o,
            "  established {est}s ago, rekeying in {}s",
            rekey(sa.life_s).saturating_sub(est)
        );
        for c in &sa.children {
            let inst = secs(c.installed, now);
            let _ = writeln!(
                o,
                "  {}: #{}, reqid {}, INSTALLED, TUNNEL, ESP:{}",
                c.name,
                c.uid,
                c.reqid,
                Algs::of(&c.proposal, false).human()
            );
            let _ = writeln!(
                o,
                "    installed {inst}s ago, rekeying in {}s, expires in {}s",
                rekey(c.life_s).saturating_sub(inst),
                c.life_s.saturating_sub(inst)
            );
            let (bytes, packets) = traffic(inst);
            let _ = writeln!(
                o,
                "    in  {}, {bytes:>6} bytes, {packets:>5} packets,     0s ago",
                c.spi_in
            );
            let _ = writeln!(
                o,
                "    out {}, {bytes:>6} bytes, {packets:>5} packets,     0s ago",
                c.spi_out
            );
            let _ = writeln!(o, "    local  {}", selector(&c.local_ts));
            let _ = writeln!(o, "    remote {}", selector(&c.remote_ts));
        }
    }
    o
}

/// `swanctl --list-sas --raw`: one `list-sa event` per IKE SA, then the reply.
pub fn list_sas_raw(daemon: &Daemon, ike: Option<&str>, now: Instant) -> String {
    let mut o = String::new();
    for sa in selected(daemon, ike) {
        let est = secs(sa.established, now);
        let children: Vec<String> = sa
            .children
            .iter()
            .map(|c| {
                let inst = secs(c.installed, now);
                let (bytes, packets) = traffic(inst);
                format!(
                    "{}-{} {{name={} uniqueid={} reqid={} state=INSTALLED mode=TUNNEL protocol=ESP spi-in={} spi-out={} {} bytes-in={bytes} packets-in={packets} use-in=0 bytes-out={bytes} packets-out={packets} use-out=0 rekey-time={} life-time={} install-time={inst} local-ts=[{}] remote-ts=[{}]}}",
                    c.name,
                    c.uid,
                    c.name,
                    c.uid,
                    c.reqid,
                    c.spi_in,
                    c.spi_out,
                    Algs::of(&c.proposal, false).raw(),
                    rekey(c.life_s).saturating_sub(inst),
                    c.life_s.saturating_sub(inst),
                    selector(&c.local_ts),
                    selector(&c.remote_ts)
                )
            })
            .collect();
        let _ = writeln!(
            o,
            "list-sa event {{{} {{uniqueid={} version={} state=ESTABLISHED local-host={} local-port=4500 local-id={} remote-host={} remote-port=4500 remote-id={} initiator-spi={} responder-spi={} {} established={est} rekey-time={} child-sas {{{}}}}}}}",
            sa.conn,
            sa.uid,
            sa.version,
            host(&sa.local_host),
            identity(&sa.local_id),
            host(&sa.remote_host),
            identity(&sa.remote_id),
            sa.spi_i,
            sa.spi_r,
            Algs::of(&sa.proposal, true).raw(),
            rekey(sa.life_s).saturating_sub(est),
            children.join(" ")
        );
    }
    o.push_str("list-sas reply {}\n");
    o
}

/// `swanctl --list-conns`: the connections charon has loaded, as `list_conns.c` prints
/// them (pre-shared key authentication both ways).
pub fn list_conns(daemon: &Daemon) -> String {
    let mut o = String::new();
    for c in &daemon.conns {
        let _ = writeln!(
            o,
            "{}: IKEv{}, no reauthentication, rekeying every {}s",
            c.name,
            c.version,
            rekey(c.ike_life_s)
        );
        let _ = writeln!(o, "  local:  {}", host(&c.local));
        let _ = writeln!(o, "  remote: {}", host(&c.remote));
        let _ = writeln!(o, "  local pre-shared key authentication:");
        let _ = writeln!(o, "    id: {}", identity(&c.local));
        let _ = writeln!(o, "  remote pre-shared key authentication:");
        let _ = writeln!(o, "    id: {}", identity(&c.remote_id));
        for (name, local, remote, life) in &c.children {
            let _ = writeln!(o, "  {name}: TUNNEL, rekeying every {}s", rekey(*life));
            let _ = writeln!(o, "    local:  {}", selector(local));
            let _ = writeln!(o, "    remote: {}", selector(remote));
        }
    }
    o
}

/// What `swanctl --initiate` was asked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InitiateArgs {
    pub child: Option<String>,
    pub ike: Option<String>,
    pub timeout_s: Option<u64>,
}

/// Read the arguments of `swanctl --initiate`: `Ok(None)` when it is not an initiation,
/// `Err((stderr, code))` for a usage error.
pub fn initiate_args(args: &[String]) -> Result<Option<InitiateArgs>, (String, i32)> {
    if !args.iter().any(|a| a == "--initiate") {
        return Ok(None);
    }
    let mut out = InitiateArgs::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next().cloned().ok_or_else(|| {
                (
                    format!("swanctl: option '{a}' requires an argument\n{USAGE}"),
                    1,
                )
            })
        };
        match a.as_str() {
            "--initiate" => {}
            "--child" | "-c" => out.child = Some(value()?),
            "--ike" | "-i" => out.ike = Some(value()?),
            "--timeout" | "-t" => {
                let v = value()?;
                out.timeout_s = Some(
                    v.parse()
                        .map_err(|_| (format!("swanctl: invalid timeout '{v}'\n{USAGE}"), 1))?,
                );
            }
            other => {
                return Err((
                    format!("swanctl: unrecognized option '{other}'\n{USAGE}"),
                    1,
                ));
            }
        }
    }
    if out.child.is_none() && out.ike.is_none() {
        return Err(("initiate failed: missing CHILD_SA name\n".into(), 1));
    }
    Ok(Some(out))
}

/// What `swanctl --initiate --child CHILD` prints once the pass has run: success when the
/// CHILD SA is installed, else strongSwan's log lines for `reason` (the peer's
/// `Established` reason) and `initiate failed: …` on stderr, exit 1.
pub fn initiated(
    daemon: &Daemon,
    conn: &super::peers::Conn,
    child: &str,
    reason: &str,
) -> (String, String, i32) {
    let mut o = String::new();
    let sa = daemon.sas.get(&conn.key);
    let installed = sa.and_then(|sa| {
        sa.children
            .iter()
            .find(|c| c.name == child)
            .map(|c| (sa, c))
    });
    let _ = writeln!(
        o,
        "[IKE] initiating IKE_SA {}[{}] to {}",
        conn.name,
        sa.map(|s| s.uid).unwrap_or(0),
        host(&conn.remote)
    );
    if let Some((sa, c)) = installed {
        let _ = writeln!(
            o,
            "[IKE] IKE_SA {}[{}] established between {}[{}]...{}[{}]",
            sa.conn,
            sa.uid,
            host(&sa.local_host),
            identity(&sa.local_id),
            host(&sa.remote_host),
            identity(&sa.remote_id)
        );
        let _ = writeln!(
            o,
            "[IKE] CHILD_SA {}{{{}}} established with SPIs {}_i {}_o and TS {} === {}",
            c.name,
            c.uid,
            c.spi_in,
            c.spi_out,
            selector(&c.local_ts),
            selector(&c.remote_ts)
        );
        o.push_str("initiate completed successfully\n");
        return (o, String::new(), 0);
    }
    let line = match reason {
        "NoProposalChosen" => "[IKE] received NO_PROPOSAL_CHOSEN notify error",
        "AuthenticationFailed" => "[IKE] received AUTHENTICATION_FAILED notify error",
        "TSUnacceptable" => "[IKE] received TS_UNACCEPTABLE notify, no CHILD_SA built",
        "SecretNotFound" => "[IKE] no shared key found",
        _ => {
            "[IKE] giving up after 5 retransmits\n[IKE] establishing IKE_SA failed, peer not responding"
        }
    };
    let _ = writeln!(o, "{line}");
    (
        o,
        format!("initiate failed: establishing CHILD_SA '{child}' failed\n"),
        1,
    )
}

const USAGE: &str = "strongSwan 6.0.1 swanctl (vpnmig-sandbox: --list-sas, --list-conns and --initiate are simulated)
usage:
  swanctl --list-sas         (-l)  list currently active IKE_SAs
    [--ike <name>|-i <name>] [--raw|-r] [--pretty|-P]
  swanctl --list-conns       (-L)  list loaded configurations
  swanctl --initiate               initiate a connection
    --child <name>|-c <name> [--ike <name>] [--timeout <s>|-t <s>]
  swanctl --version          (-v)  show version information
  swanctl --help             (-h)  show usage information
";

/// Run `swanctl ARGS` against the daemon: (stdout, stderr, exit code).
pub fn run(args: &[String], daemon: &Daemon, now: Instant) -> (String, String, i32) {
    let mut list = false;
    let mut raw = false;
    let mut ike = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--list-sas" | "-l" => list = true,
            "--list-conns" | "-L" => return (list_conns(daemon), String::new(), 0),
            "--raw" | "-r" | "--pretty" | "-P" => raw = true,
            "--noblock" | "-N" => {}
            "--ike" | "-i" => match it.next() {
                Some(n) => ike = Some(n.clone()),
                None => {
                    return (
                        String::new(),
                        format!("swanctl: option '{a}' requires an argument\n{USAGE}"),
                        1,
                    );
                }
            },
            "--version" | "-v" if !list => {
                return ("strongSwan swanctl 6.0.1\n".into(), String::new(), 0);
            }
            "--help" | "-h" => return (USAGE.into(), String::new(), 0),
            other => {
                return (
                    String::new(),
                    format!("swanctl: unrecognized option '{other}'\n{USAGE}"),
                    1,
                );
            }
        }
    }
    if !list {
        return (String::new(), USAGE.into(), 1);
    }
    let out = if raw {
        list_sas_raw(daemon, ike.as_deref(), now)
    } else {
        list_sas(daemon, ike.as_deref(), now)
    };
    (out, String::new(), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithm_names_follow_strongswan() {
        assert_eq!(
            Algs::of("aes256-sha256-modp2048", true).human(),
            "AES_CBC-256/HMAC_SHA2_256_128/PRF_HMAC_SHA2_256/MODP_2048"
        );
        assert_eq!(
            Algs::of("aes256gcm16-prfsha384-ecp384", true).human(),
            "AES_GCM_16-256/PRF_HMAC_SHA2_384/ECP_384"
        );
        assert_eq!(
            Algs::of("aes256gcm16-modp2048", false).human(),
            "AES_GCM_16-256"
        );
        assert_eq!(
            Algs::of("aes256-sha256", false).human(),
            "AES_CBC-256/HMAC_SHA2_256_128"
        );
        assert_eq!(
            Algs::of("chacha20poly1305-prfsha256-curve25519", true).human(),
            "CHACHA20_POLY1305-256/PRF_HMAC_SHA2_256/CURVE_25519"
        );
        assert_eq!(
            Algs::of("aes128-sha256-ecp256bp", true).raw(),
            "encr-alg=AES_CBC encr-keysize=128 integ-alg=HMAC_SHA2_256_128 prf-alg=PRF_HMAC_SHA2_256 dh-group=ECP_256_BP"
        );
    }

    #[test]
    fn addresses_are_printed_as_strongswan_prints_them() {
        assert_eq!(host("2001:DB8:5:0::10"), "2001:db8:5::10");
        assert_eq!(
            host("2001:0db8:0000:0000:0000:0000:0000:0001"),
            "2001:db8::1"
        );
        assert_eq!(host("203.0.113.10"), "203.0.113.10");
        assert_eq!(host("vpn.acme.example"), "vpn.acme.example");
        assert_eq!(identity("2001:DB8::A"), "2001:db8::a");
        assert_eq!(identity("FW.acme.example"), "FW.acme.example");
        assert_eq!(selector("2001:DB8:20::/48"), "2001:db8:20::/48");
        assert_eq!(selector("10.20.0.1/16"), "10.20.0.0/16");
        assert_eq!(selector("10.1.0.5"), "10.1.0.5/32");
    }

    #[test]
    fn usage_and_empty_listing() {
        let d = Daemon::new("ns", "pod", "uid");
        let now = Instant::now();
        assert_eq!(
            run(&["--list-sas".into()], &d, now),
            (String::new(), String::new(), 0)
        );
        assert_eq!(
            run(&["-l".into(), "--raw".into()], &d, now).0,
            "list-sas reply {}\n"
        );
        let (_, err, code) = run(&["--load-all".into()], &d, now);
        assert_eq!(code, 1);
        assert!(err.contains("usage:"));
        assert_eq!(run(&[], &d, now).2, 1);
    }
}
