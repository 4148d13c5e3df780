//! strongSwan proposal syntax (swanctl.conf `proposals` / `esp_proposals`).
//!
//! A proposal is algorithm keywords joined by `-`, e.g. `aes256-sha256-modp2048` or
//! `aes256gcm16-prfsha384-ecp384`. The rules checked here are strongSwan's own
//! (strongSwan docs, "IKEv2 Cipher Suites" and "proposals"):
//! - at least one encryption algorithm; AEAD (GCM, CCM, ChaCha20-Poly1305) and classic
//!   ciphers are not mixed;
//! - a classic cipher needs an integrity algorithm; an AEAD cipher takes none;
//! - IKE needs a key exchange (DH) group and may name PRFs; ESP may name a DH group
//!   (PFS) and `esn`/`noesn`, never a PRF;
//! - `default` alone stands for strongSwan's compiled-in defaults.
//!
//! Layer 0 (model, addresses, paths, parsers, YAML): imports nothing above it; see docs/architecture.md.

use std::fmt;

/// Which SA a proposal is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SaKind {
    Ike,
    Esp,
}

impl fmt::Display for SaKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SaKind::Ike => "IKE",
            SaKind::Esp => "ESP",
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Cipher,
    Aead,
    Integrity,
    Prf,
    Dh,
    Esn,
}

/// Why a proposal is not valid strongSwan syntax. `Display` is one lowercase sentence.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProposalError {
    #[error("proposal is empty")]
    Empty,
    #[error("unknown algorithm keyword `{0}`")]
    UnknownKeyword(String),
    #[error("no encryption algorithm")]
    NoCipher,
    #[error("AEAD and non-AEAD encryption algorithms are mixed")]
    MixedAead,
    #[error("encryption `{0}` needs an integrity algorithm")]
    NoIntegrity(String),
    #[error("AEAD encryption `{0}` takes no integrity algorithm")]
    IntegrityWithAead(String),
    #[error("IKE proposal needs a key exchange (DH) group")]
    NoDhGroup,
    #[error("`{0}` is not allowed in an {1} proposal")]
    WrongSa(String, SaKind),
}

fn classify(token: &str) -> Option<Class> {
    const CIPHERS: &[&str] = &[
        "aes",
        "aes128",
        "aes192",
        "aes256",
        "aes128ctr",
        "aes192ctr",
        "aes256ctr",
        "3des",
        "des",
        "cast128",
        "blowfish",
        "blowfish128",
        "blowfish192",
        "blowfish256",
        "camellia",
        "camellia128",
        "camellia192",
        "camellia256",
        "camellia128ctr",
        "camellia192ctr",
        "camellia256ctr",
        "null",
    ];
    const INTEGRITY: &[&str] = &[
        "md5",
        "md5_128",
        "sha",
        "sha1",
        "sha1_160",
        "sha256",
        "sha2_256",
        "sha256_96",
        "sha2_256_96",
        "sha384",
        "sha2_384",
        "sha512",
        "sha2_512",
        "aesxcbc",
        "aescmac",
        "aes128gmac",
        "aes192gmac",
        "aes256gmac",
    ];
    const PRF: &[&str] = &[
        "prfmd5",
        "prfsha1",
        "prfaesxcbc",
        "prfaescmac",
        "prfsha256",
        "prfsha384",
        "prfsha512",
    ];
    const DH: &[&str] = &[
        "modp768",
        "modp1024",
        "modp1536",
        "modp2048",
        "modp3072",
        "modp4096",
        "modp6144",
        "modp8192",
        "modp1024s160",
        "modp2048s224",
        "modp2048s256",
        "ecp192",
        "ecp224",
        "ecp256",
        "ecp384",
        "ecp521",
        "ecp224bp",
        "ecp256bp",
        "ecp384bp",
        "ecp512bp",
        "curve25519",
        "x25519",
        "curve448",
        "x448",
        "mlkem512",
        "mlkem768",
        "mlkem1024",
    ];
    if CIPHERS.contains(&token) {
        return Some(Class::Cipher);
    }
    if INTEGRITY.contains(&token) {
        return Some(Class::Integrity);
    }
    if PRF.contains(&token) {
        return Some(Class::Prf);
    }
    if DH.contains(&token) {
        return Some(Class::Dh);
    }
    if token == "esn" || token == "noesn" {
        return Some(Class::Esn);
    }
    if token == "chacha20poly1305" || is_aead_mode(token) {
        return Some(Class::Aead);
    }
    None
}

/// `aes{128,192,256}{gcm,ccm}{8,12,16,64,96,128}` and `camellia…ccm…`.
fn is_aead_mode(token: &str) -> bool {
    let rest = [
        "aes128",
        "aes192",
        "aes256",
        "aes",
        "camellia128",
        "camellia192",
        "camellia256",
    ]
    .iter()
    .find_map(|p| token.strip_prefix(p));
    let Some(rest) = rest else { return false };
    let icv = rest
        .strip_prefix("gcm")
        .or_else(|| rest.strip_prefix("ccm"));
    matches!(icv, Some("8" | "12" | "16" | "64" | "96" | "128"))
        && !(token.starts_with("camellia") && rest.starts_with("gcm"))
}

/// Check one proposal's syntax for the given SA type.
///
/// Errors: the first rule the proposal breaks, as a [`ProposalError`].
pub fn validate(proposal: &str, sa: SaKind) -> Result<(), ProposalError> {
    let p = proposal.trim().to_ascii_lowercase();
    if p.is_empty() {
        return Err(ProposalError::Empty);
    }
    if p == "default" {
        return Ok(());
    }
    let mut classes = Vec::new();
    for token in p.split('-') {
        let class =
            classify(token).ok_or_else(|| ProposalError::UnknownKeyword(token.to_string()))?;
        match (class, sa) {
            (Class::Prf, SaKind::Esp) | (Class::Esn, SaKind::Ike) => {
                return Err(ProposalError::WrongSa(token.to_string(), sa));
            }
            _ => classes.push((class, token)),
        }
    }
    let first = |c: Class| {
        classes
            .iter()
            .find(|(k, _)| *k == c)
            .map(|(_, t)| t.to_string())
    };
    let (cipher, aead, integrity) = (
        first(Class::Cipher),
        first(Class::Aead),
        first(Class::Integrity),
    );
    match (cipher, aead, integrity) {
        (None, None, _) => Err(ProposalError::NoCipher),
        (Some(_), Some(_), _) => Err(ProposalError::MixedAead),
        (Some(c), None, None) => Err(ProposalError::NoIntegrity(c)),
        (None, Some(a), Some(_)) => Err(ProposalError::IntegrityWithAead(a)),
        _ if sa == SaKind::Ike && first(Class::Dh).is_none() => Err(ProposalError::NoDhGroup),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use SaKind::*;

    #[test]
    fn accepts_real_proposals() {
        for p in [
            "aes256-sha256-modp2048",
            "aes256gcm16-prfsha384-ecp384",
            "aes128-sha1-modp1024",
            "3des-md5-modp1024",
            "chacha20poly1305-prfsha256-curve25519",
            "default",
            "AES256-SHA256-MODP2048",
        ] {
            assert_eq!(validate(p, Ike), Ok(()), "{p}");
        }
        for p in [
            "aes256gcm16",
            "aes256gcm16-modp2048",
            "aes256-sha256",
            "aes128gcm16-ecp256-esn",
        ] {
            assert_eq!(validate(p, Esp), Ok(()), "{p}");
        }
    }

    #[test]
    fn names_the_broken_rule() {
        assert_eq!(validate("", Ike), Err(ProposalError::Empty));
        assert_eq!(
            validate("aes256-foo512-modp2048", Ike),
            Err(ProposalError::UnknownKeyword("foo512".into()))
        );
        assert_eq!(
            validate("sha256-modp2048", Ike),
            Err(ProposalError::NoCipher)
        );
        assert_eq!(
            validate("aes256-aes256gcm16-modp2048", Ike),
            Err(ProposalError::MixedAead)
        );
        assert_eq!(
            validate("aes256-modp2048", Ike),
            Err(ProposalError::NoIntegrity("aes256".into()))
        );
        assert_eq!(
            validate("aes256gcm16-sha256", Esp),
            Err(ProposalError::IntegrityWithAead("aes256gcm16".into()))
        );
        assert_eq!(
            validate("aes256-sha256", Ike),
            Err(ProposalError::NoDhGroup)
        );
        assert_eq!(
            validate("aes256-sha256-prfsha256", Esp),
            Err(ProposalError::WrongSa("prfsha256".into(), Esp))
        );
        assert_eq!(
            validate("aes256-sha256-modp2048-esn", Ike),
            Err(ProposalError::WrongSa("esn".into(), Ike))
        );
        assert_eq!(
            validate("camellia256gcm16", Esp),
            Err(ProposalError::UnknownKeyword("camellia256gcm16".into()))
        );
    }
}
