//! Optional TLS for the HTTP service (rustls): loading a certificate chain and key from PEM files
//! into a server configuration.
//!
//! dexd serves plain HTTP unless `--tls-cert` and `--tls-key` are given. This module only builds
//! the configuration; the accept loop in the crate root performs the handshakes.

use std::path::Path;
use std::sync::Arc;

use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};

/// Why the TLS files could not be used. Never carries key material.
#[derive(Debug)]
pub struct TlsError(String);

impl std::fmt::Display for TlsError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl std::error::Error for TlsError {}

/// Reads a PEM certificate chain and a PEM private key (PKCS#8, PKCS#1 or SEC1) into a rustls
/// server configuration offering HTTP/1.1.
pub fn load_server_config(certificate_path: &Path, key_path: &Path) -> Result<Arc<ServerConfig>, TlsError> {
    let certificates = read_certificates(certificate_path)?;
    let key = read_key(key_path)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| TlsError(format!("TLS setup failed: {error}")))?
        .with_no_client_auth()
        .with_single_cert(certificates, key)
        .map_err(|error| {
            TlsError(format!(
                "the TLS certificate and key do not form a usable pair: {error}"
            ))
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = std::fs::read(path).map_err(|error| TlsError(format!("cannot read {}: {error}", path.display())))?;
    let certificates: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut bytes.as_slice())
        .collect::<Result<_, _>>()
        .map_err(|error| TlsError(format!("{} is not a PEM certificate chain: {error}", path.display())))?;
    if certificates.is_empty() {
        return Err(TlsError(format!("{} holds no PEM certificate", path.display())));
    }
    Ok(certificates)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = zeroize::Zeroizing::new(
        std::fs::read(path).map_err(|error| TlsError(format!("cannot read {}: {error}", path.display())))?,
    );
    rustls_pemfile::private_key(&mut bytes.as_slice())
        .map_err(|_| TlsError(format!("{} is not a PEM private key", path.display())))?
        .ok_or_else(|| TlsError(format!("{} holds no PEM private key", path.display())))
}
