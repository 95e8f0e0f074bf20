//! The verifier of a remote check: as the web PKI verifies, recording what it saw.

use std::fmt;
use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::Presented;
use status_core::check::CheckOutcome;
use status_core::CheckStatus;

pub(super) fn verifier(
    roots: &Arc<RootCertStore>,
) -> Result<Arc<WebPkiServerVerifier>, CheckOutcome> {
    WebPkiServerVerifier::builder_with_provider(
        Arc::clone(roots),
        Arc::new(rustls::crypto::ring::default_provider()),
    )
    .build()
    .map_err(|e| CheckOutcome::new(CheckStatus::Outage, format!("no verifier: {e}")))
}

/// Verifies as the web PKI does, records the chain and the verdict, and lets the handshake
/// finish either way: the check grades what it saw, it never trusts the connection.
#[derive(Debug)]
pub(super) struct Recording {
    inner: Arc<WebPkiServerVerifier>,
    pub(super) presented: Mutex<Option<Presented>>,
}

impl fmt::Debug for Presented {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Presented")
            .field("verified", &self.verified)
            .finish_non_exhaustive()
    }
}

impl Recording {
    pub(super) fn new(roots: &Arc<RootCertStore>) -> Result<Self, CheckOutcome> {
        Ok(Self {
            inner: verifier(roots)?,
            presented: Mutex::new(None),
        })
    }
}

impl ServerCertVerifier for Recording {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified = self
            .inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            .map(|_| ())
            .map_err(|e| e.to_string());
        if let Ok(mut presented) = self.presented.lock() {
            *presented = Some(Presented {
                leaf: end_entity.clone().into_owned(),
                verified,
            });
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
