//! Trust roots for the checks that speak TLS themselves: the web's (Mozilla's, from
//! `webpki-roots`), or a private CA's given as PEM.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::RootCertStore;
use status_core::Error;

/// The web's roots.
pub(crate) fn web() -> RootCertStore {
    RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    }
}

/// The certificates in `pem`, as roots.
#[cfg(any(feature = "tls", feature = "amqp"))]
///
/// # Errors
///
/// [`Error::is_invalid`] when `pem` holds no certificate rustls accepts as a root.
pub(crate) fn from_pem(pem: &[u8]) -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|e| Error::invalid(format!("invalid PEM: {e}")))?;
        roots
            .add(cert)
            .map_err(|e| Error::invalid(format!("not a root certificate: {e}")))?;
    }
    if roots.is_empty() {
        return Err(Error::invalid("no certificate in the roots' PEM"));
    }
    Ok(roots)
}
