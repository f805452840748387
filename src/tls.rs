//! Client-side TLS (rustls, ring provider).

use std::path::Path;
use std::sync::Arc;

use tokio_rustls::TlsAcceptor;

use crate::config::ConfigError;

pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, ConfigError> {
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
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(format!("tls: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| bad(format!("tls: certificate and key do not match: {e}")))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}
