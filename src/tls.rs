//! TLS with rustls (ring provider): clients to the proxy (`acceptor`) and the proxy to the
//! backend (`backend_tls`).

use std::path::Path;
use std::sync::Arc;

use tokio_rustls::TlsAcceptor;

use crate::config::ConfigError;

pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, ConfigError> {
    let bad = |m: String| ConfigError::Invalid(m);
    let (certs, key) = read_pair(cert, key)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(format!("tls: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| bad(format!("tls: certificate and key do not match: {e}")))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// How the proxy talks TLS to the backend (`[backend.tls]`).
#[derive(Clone)]
pub struct BackendTls {
    pub mode: crate::config::BackendTlsMode,
    pub connector: tokio_rustls::TlsConnector,
    pub server_name: rustls::pki_types::ServerName<'static>,
}

impl BackendTls {
    /// Whether this login should use TLS, given whether the client used TLS to the proxy and
    /// whether the backend offers it. Err: TLS is required and not offered.
    pub fn wanted(
        mode: crate::config::BackendTlsMode,
        client_tls: bool,
        offered: bool,
    ) -> Result<bool, &'static str> {
        use crate::config::BackendTlsMode::*;
        match mode {
            Off => Ok(false),
            Auto => Ok(client_tls && offered),
            Preferred => Ok(offered),
            Required if offered => Ok(true),
            Required => Err("backend.tls.mode = \"required\", but the backend does not offer TLS"),
        }
    }
}

/// The backend-side TLS client from the configuration. With a CA file the backend's certificate
/// chain and name are verified; without one the link is encrypted but the certificate is not
/// checked (like the MySQL clients' ssl-mode=REQUIRED), which the docs say plainly.
pub fn backend_tls(cfg: &crate::config::Config) -> Result<BackendTls, ConfigError> {
    let bad = |m: String| ConfigError::Invalid(m);
    let t = &cfg.backend.tls;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(format!("backend.tls: {e}")))?;
    let builder = match &t.ca {
        Some(ca) => {
            let pem = std::fs::read(ca)
                .map_err(|e| bad(format!("backend.tls.ca: cannot read {}: {e}", ca.display())))?;
            let mut roots = rustls::RootCertStore::empty();
            for c in rustls_pemfile::certs(&mut pem.as_slice()) {
                let c = c.map_err(|e| bad(format!("backend.tls.ca: bad certificate: {e}")))?;
                roots
                    .add(c)
                    .map_err(|e| bad(format!("backend.tls.ca: unusable certificate: {e}")))?;
            }
            if roots.is_empty() {
                return Err(bad(format!(
                    "backend.tls.ca: no certificate in {}",
                    ca.display()
                )));
            }
            builder.with_root_certificates(roots)
        }
        None => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(EncryptOnly(provider))),
    };
    let config = match (&t.cert, &t.key) {
        (Some(cert), Some(key)) => {
            let (certs, key) = read_pair(cert, key)?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| bad(format!("backend.tls: client certificate and key: {e}")))?
        }
        _ => builder.with_no_client_auth(),
    };
    let host = match &t.server_name {
        Some(n) => n.clone(),
        None => cfg
            .backend
            .address
            .rsplit_once(':')
            .map_or(cfg.backend.address.as_str(), |(h, _)| h)
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
    };
    let server_name = rustls::pki_types::ServerName::try_from(host.clone()).map_err(|_| {
        bad(format!(
            "backend.tls: {host:?} is not a host name or IP address"
        ))
    })?;
    Ok(BackendTls {
        mode: t.mode,
        connector: tokio_rustls::TlsConnector::from(Arc::new(config)),
        server_name,
    })
}

type CertsAndKey = (
    Vec<rustls::pki_types::CertificateDer<'static>>,
    rustls::pki_types::PrivateKeyDer<'static>,
);

fn read_pair(cert: &Path, key: &Path) -> Result<CertsAndKey, ConfigError> {
    let bad = |m: String| ConfigError::Invalid(m);
    let read = |p: &Path| {
        std::fs::read(p).map_err(|e| bad(format!("tls: cannot read {}: {e}", p.display())))
    };
    let cert_pem = read(cert)?;
    let key_pem = read(key)?;
    let certs = rustls_pemfile::certs(&mut cert_pem.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("tls: bad certificate {}: {e}", cert.display())))?;
    if certs.is_empty() {
        return Err(bad(format!("tls: no certificate in {}", cert.display())));
    }
    let key = rustls_pemfile::private_key(&mut key_pem.as_slice())
        .map_err(|e| bad(format!("tls: bad key {}: {e}", key.display())))?
        .ok_or_else(|| bad(format!("tls: no private key in {}", key.display())))?;
    Ok((certs, key))
}

/// Accepts any backend certificate (still checking the handshake signatures): encryption
/// without authentication, used only when no `backend.tls.ca` is configured.
#[derive(Debug)]
struct EncryptOnly(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
