//! A certificate authority generated per sandbox and a server certificate for 127.0.0.1
//! and localhost, so clients verify TLS as they would against a real cluster.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose, SanType};
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;

/// The generated CA (PEM, for the kubeconfig) and the server's TLS configuration.
pub struct Tls {
    pub ca_pem: String,
    pub server: Arc<ServerConfig>,
}

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot generate certificates")]
    Cert(#[from] rcgen::Error),
    #[error("cannot configure TLS")]
    Rustls(#[from] rustls::Error),
    #[error("cannot read the client CA: {0}")]
    Pem(String),
}

/// Generate a CA and a server certificate signed by it.
pub fn generate() -> Result<Tls, TlsError> {
    generate_for_clients(None)
}

/// [`generate`], and when `client_ca_pem` is given, ask each client for a certificate and
/// accept one signed by that CA (a client without one is accepted too: it may send a
/// bearer token). The fault proxy in front of kube-apiserver (`crate::proxy`) reads the
/// certificate to speak to kube-apiserver as the same user.
pub fn generate_for_clients(client_ca_pem: Option<&str>) -> Result<Tls, TlsError> {
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "vpnmig-sandbox-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = rcgen::Issuer::new(ca_params, ca_key);

    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(vec!["localhost".to_string()])?;
    params
        .subject_alt_names
        .push(SanType::IpAddress(std::net::IpAddr::from([127, 0, 0, 1])));
    params
        .distinguished_name
        .push(DnType::CommonName, "vpnmig-sandbox");
    let cert = params.signed_by(&key, &issuer)?;

    let chain = vec![
        CertificateDer::from(cert.der().to_vec()),
        CertificateDer::from(ca_cert.der().to_vec()),
    ];
    let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions");
    let builder = match client_ca_pem {
        None => builder.with_no_client_auth(),
        Some(pem) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                roots.add(c.map_err(|e| TlsError::Pem(e.to_string()))?)?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|e| TlsError::Pem(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut server = builder.with_single_cert(chain, private)?;
    server.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Tls {
        ca_pem: ca_cert.pem(),
        server: Arc::new(server),
    })
}
