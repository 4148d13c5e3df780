//! Comparing addresses, networks and IKE identities the way the network compares them,
//! never as text (issue 9 item 4). `2001:DB8:5:0::10`, `2001:db8:5::10` and
//! `2001:0db8:0005:0000:0000:0000:0000:0010` are one address; strongSwan prints the
//! RFC 5952 form whatever the spec says, so a text comparison fails for a tunnel that is
//! up. Every comparison of an IP address, a network or an identity in the pure core goes
//! through this module.
//!
//! Rules:
//! - An address is parsed with `std::net` and compared within its family only
//!   ([`same_in_family`] says why): an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) is an
//!   IPv6 address, never equal to `192.0.2.1`, whether it is a peer address, a local
//!   address, an identity or a traffic selector (issue 21 item 6).
//! - A host network (`/32`, `/128`) is the address where an address is expected
//!   ([`same_addr`]); a bare address is the host network where a network is expected
//!   ([`net`]).
//! - Networks are compared as `(network, prefix)` after parsing ([`same_net`]); host bits
//!   are not silently dropped (`10.0.0.1/24` is not `10.0.0.0/24`).
//! - Text that is not an address (a DNS name as peer address) compares
//!   case-insensitively, without a trailing dot: DNS names are case-insensitive.
//! - Identities follow strongSwan's `identification_t` matching ([`same_identity`]).
//!
//! Layer 0 (model, addresses, paths, parsers, YAML): imports nothing above it; see docs/architecture.md.

use std::net::IpAddr;

use ipnet::IpNet;

/// `s` as an IP address: IPv4, or IPv6 in any RFC 4291 spelling (case, zero
/// compression), or a host network (`/32`, `/128`) of one. The family is kept: an
/// IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) stays IPv6 ([`same_in_family`]). `None`
/// for anything else.
pub fn addr(s: &str) -> Option<IpAddr> {
    let s = s.trim();
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(ip);
    }
    let n = s.parse::<IpNet>().ok()?;
    (n.prefix_len() == n.max_prefix_len()).then(|| n.addr())
}

/// `s` as a network: a CIDR (`10.20.0.0/16`, `2001:DB8::/32`) or a bare address as its
/// host network. The family is kept: `::ffff:10.20.0.0/112` is an IPv6 network, which a
/// traffic selector of IPv4 does not match ([`same_in_family`]). `None` for anything else.
pub fn net(s: &str) -> Option<IpNet> {
    let s = s.trim();
    match s.parse::<IpNet>() {
        Ok(n) => Some(n),
        Err(_) => Some(IpNet::from(s.parse::<IpAddr>().ok()?)),
    }
}

/// Whether two pinned strings are the same address or network in any spelling of *one*
/// family (`2001:DB8::A` is `2001:db8::a`), never across families: `::ffff:203.0.113.66`
/// is an IPv6 address to strongSwan and the kernel, not `203.0.113.66`, and a traffic
/// selector of one family does not match the other. Text that is neither compares as
/// given (trimmed). Used for values that must stay byte-for-byte (the floating IP, pinned
/// fields against the journal).
///
/// This is the one rule for addresses in the core: [`addr`], [`net`], [`same_addr`],
/// [`same_net`], [`same_identity`] and [`selector_key`] all keep the family, so no
/// comparison anywhere makes `::ffff:192.0.2.1` equal to `192.0.2.1` (issue 21 item 6).
pub fn same_in_family(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim(), b.trim());
    if let (Ok(p), Ok(q)) = (a.parse::<IpAddr>(), b.parse::<IpAddr>()) {
        return p == q;
    }
    if let (Ok(p), Ok(q)) = (a.parse::<IpNet>(), b.parse::<IpNet>()) {
        return p == q;
    }
    a == b
}

/// A traffic selector as printed (`10.0.0.0/24`, `192.0.2.1/32[udp]`,
/// `2001:DB8::/32[tcp/443]`) in one spelling, for comparing selectors as sets: the
/// network parsed in its own family ([`net`]: `::ffff:10.1.0.0/112` stays IPv6), the
/// protocol/port restriction lowercased. Text that is not a network stays as given,
/// lowercased.
pub fn selector_key(ts: &str) -> String {
    let ts = ts.trim();
    let (n, rest) = ts.split_once('[').unwrap_or((ts, ""));
    let rest = rest.to_ascii_lowercase();
    let restriction = rest.strip_suffix(']').unwrap_or(&rest);
    let n = net(n).map_or_else(|| n.to_ascii_lowercase(), |n| n.to_string());
    if restriction.is_empty() {
        n
    } else {
        format!("{n}[{restriction}]")
    }
}

/// Whether `a` and `b` are the same address. Both parse as addresses: compared as
/// addresses ([`addr`]). One parses and the other does not: different. Neither parses
/// (DNS names): compared case-insensitively, ignoring a trailing dot.
pub fn same_addr(a: &str, b: &str) -> bool {
    match (addr(a), addr(b)) {
        (Some(x), Some(y)) => x == y,
        (None, None) => same_dns_name(a, b),
        _ => false,
    }
}

/// Whether `a` and `b` are the same network ([`net`]); text that is not a network
/// compares as given (trimmed).
pub fn same_net(a: &str, b: &str) -> bool {
    match (net(a), net(b)) {
        (Some(x), Some(y)) => x == y,
        (None, None) => a.trim() == b.trim(),
        _ => false,
    }
}

/// Whether two networks share at least one address.
pub fn overlaps(a: &IpNet, b: &IpNet) -> bool {
    a.contains(&b.network()) || b.contains(&a.network())
}

fn same_dns_name(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.trim().trim_end_matches('.').to_ascii_lowercase();
    norm(a) == norm(b)
}

/// An IKE identity as strongSwan types it (`identification_create_from_string`).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Identity {
    Ip(IpAddr),
    /// FQDN or user@FQDN, lowercased (strongSwan compares them with `strncasecmp`).
    Name(String),
    /// A distinguished name or anything else: compared as given.
    Other(String),
}

fn identity(s: &str) -> Identity {
    let s = s.trim();
    // Explicit type prefixes (`fqdn:`, `email:`, `ipv4:` …) as swanctl.conf allows.
    let (kind, value) = match s.split_once(':') {
        Some((k, v))
            if ["ipv4", "ipv6", "fqdn", "email", "rfc822", "userfqdn", "dns"]
                .contains(&k.to_ascii_lowercase().as_str()) =>
        {
            (Some(k.to_ascii_lowercase()), v.trim())
        }
        _ => (None, s),
    };
    match kind.as_deref() {
        Some("ipv4" | "ipv6") => addr(value)
            .map(Identity::Ip)
            .unwrap_or_else(|| Identity::Other(value.to_string())),
        Some(_) => Identity::Name(value.to_ascii_lowercase()),
        None => {
            if let Some(ip) = addr(value) {
                return Identity::Ip(ip);
            }
            // `@name` forces an FQDN (`@@` user FQDN); `@#` is a binary key id.
            if let Some(forced) = value.strip_prefix('@').filter(|v| !v.starts_with('#')) {
                return Identity::Name(forced.trim_start_matches('@').to_ascii_lowercase());
            }
            if value.contains('=') {
                Identity::Other(value.to_string())
            } else {
                Identity::Name(value.to_ascii_lowercase())
            }
        }
    }
}

/// Whether IKE identities `a` and `b` match as strongSwan matches them: an identity that
/// parses as an IP address compares as that address (strongSwan types it `ID_IPV4_ADDR` /
/// `ID_IPV6_ADDR` and prints it canonically); FQDN and user@FQDN identities compare
/// case-insensitively (`@fw.example` is the FQDN `fw.example`); distinguished names and
/// anything else compare as given (issue 9 item 4).
pub fn same_identity(a: &str, b: &str) -> bool {
    identity(a) == identity(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_spellings_are_one_address() {
        for spelled in [
            "2001:DB8:5:0::10",
            "2001:db8:5::10",
            "2001:0db8:0005:0000:0000:0000:0000:0010",
            " 2001:db8:5:0:0:0:0:10 ",
            "2001:db8:5::10/128",
        ] {
            assert!(same_addr(spelled, "2001:db8:5::10"), "{spelled}");
        }
        assert!(!same_addr("2001:db8:5::11", "2001:db8:5::10"));
    }

    /// An IPv4-mapped IPv6 value is IPv6 to strongSwan and the kernel (`ID_IPV6_ADDR`, an
    /// IPv6 traffic selector): never equal to the IPv4 one, whichever comparison is used
    /// (issue 21 item 6). Rows: (a, b, the same?).
    #[test]
    fn an_ipv4_mapped_ipv6_value_is_never_the_ipv4_one() {
        let table = [
            ("::ffff:203.0.113.10", "203.0.113.10", false),
            ("::FFFF:cb00:710a", "203.0.113.10", false),
            ("::ffff:203.0.113.10/128", "203.0.113.10/32", false),
            ("::ffff:10.20.0.0/112", "10.20.0.0/16", false),
            ("::ffff:10.20.0.0/120", "10.20.0.0/24", false),
            // The mapped address in two IPv6 spellings is one IPv6 address.
            ("::FFFF:cb00:710a", "::ffff:203.0.113.10", true),
            ("0:0:0:0:0:ffff:203.0.113.10", "::ffff:203.0.113.10", true),
            // IPv4-compatible (deprecated) is not IPv4 either.
            ("::203.0.113.10", "203.0.113.10", false),
        ];
        for (a, b, same) in table {
            assert_eq!(same_in_family(a, b), same, "same_in_family {a} {b}");
            assert_eq!(same_addr(a, b), same, "same_addr {a} {b}");
            assert_eq!(same_net(a, b), same, "same_net {a} {b}");
            assert_eq!(same_identity(a, b), same, "same_identity {a} {b}");
            assert_eq!(selector_key(a) == selector_key(b), same, "selector {a} {b}");
        }
        // Identities with a type prefix, and selectors with a restriction.
        assert!(!same_identity("ipv6:::ffff:192.0.2.31", "ipv4:192.0.2.31"));
        assert!(!same_identity("::ffff:192.0.2.31", "ipv4:192.0.2.31"));
        assert_ne!(
            selector_key("::ffff:192.0.2.1/128[udp]"),
            selector_key("192.0.2.1/32[udp]")
        );
        // An IPv4 selector does not cover the mapped network, nor overlap it.
        assert!(!overlaps(
            &net("10.20.0.0/16").unwrap(),
            &net("::ffff:10.20.0.0/112").unwrap()
        ));
        assert_eq!(addr("::ffff:203.0.113.10").map(|a| a.is_ipv6()), Some(true));
    }

    #[test]
    fn selectors_compare_parsed_with_their_restriction() {
        assert_eq!(
            selector_key("2001:DB8:0::/32[TCP/443]"),
            selector_key("2001:db8::/32[tcp/443]")
        );
        assert_eq!(selector_key("10.1.0.0/16"), "10.1.0.0/16");
        assert_ne!(
            selector_key("10.1.0.0/16"),
            selector_key("10.1.0.0/16[udp]")
        );
        assert_ne!(selector_key("10.1.0.0/16"), selector_key("10.1.0.0/24"));
        assert_eq!(selector_key("dynamic"), "dynamic");
    }

    #[test]
    fn a_host_network_is_its_address_and_back() {
        assert!(same_addr("203.0.113.10/32", "203.0.113.10"));
        assert!(!same_addr("203.0.113.0/24", "203.0.113.0"));
        assert!(same_net("203.0.113.10", "203.0.113.10/32"));
        assert!(!same_net("10.0.0.1/24", "10.0.0.0/24"));
        assert!(same_net("2001:DB8::/32", "2001:db8::/32"));
    }

    #[test]
    fn names_compare_without_case_and_never_equal_an_address() {
        assert!(same_addr("VPN.Acme.Example.", "vpn.acme.example"));
        assert!(!same_addr("vpn.acme.example", "203.0.113.10"));
        assert!(!same_addr("", "203.0.113.10"));
    }

    #[test]
    fn overlap_is_either_containing_the_other() {
        let n = |s: &str| net(s).unwrap();
        assert!(overlaps(&n("10.250.0.0/16"), &n("10.250.3.0/24")));
        assert!(overlaps(&n("10.250.3.0/24"), &n("10.250.3.0/24")));
        assert!(!overlaps(&n("10.250.3.0/24"), &n("10.250.4.0/24")));
        assert!(!overlaps(&n("10.250.3.0/24"), &n("2001:db8::/32")));
    }

    #[test]
    fn identities_match_as_strongswan_matches_them() {
        assert!(same_identity("2001:DB8:5:0::10", "2001:db8:5::10"));
        assert!(same_identity("ipv4:203.0.113.10", "203.0.113.10"));
        assert!(same_identity("FW.Acme.Example", "fw.acme.example"));
        assert!(same_identity("@fw.acme.example", "fw.acme.example"));
        assert!(same_identity("fqdn:fw.acme.example", "fw.acme.example"));
        assert!(same_identity("VPN@Acme.Example", "vpn@acme.example"));
        assert!(same_identity("email:vpn@acme.example", "vpn@acme.example"));
        // Distinguished names compare as given.
        assert!(same_identity(
            "C=CH, O=strongSwan, CN=moon",
            "C=CH, O=strongSwan, CN=moon"
        ));
        assert!(!same_identity(
            "C=CH, O=strongSwan, CN=moon",
            "c=ch, o=strongswan, cn=moon"
        ));
        // An address is never a name that happens to spell it.
        assert!(!same_identity("fw.acme.example", "203.0.113.10"));
    }
}
