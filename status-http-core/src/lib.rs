//! What every router of status shares, below them as axum-core sits under axum: bodies
//! served as shared bytes with a strong `ETag` and conditional answers ([`render`]), the
//! contract's JSON error ([`error`]), the query extractor ([`query`]), bounded admin bodies
//! ([`body`]), the admin token guard ([`auth`]), fair event streams ([`streams`]), who made
//! an admin call ([`audit`]), and the pages' content security policy ([`CSP`]).
//!
//! status-http, status-page and status-mcp build on it; none of them reads another's
//! internals. An application uses status-http, which re-exports what it needs of this.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod audit;
pub mod auth;
pub mod body;
pub mod error;
#[cfg(feature = "history")]
#[cfg_attr(docsrs, doc(cfg(feature = "history")))]
pub mod history;
pub mod query;
pub mod render;
pub mod respond;
#[cfg(feature = "openapi")]
#[cfg_attr(docsrs, doc(cfg(feature = "openapi")))]
pub mod schema;
pub mod streams;
pub mod sync;
#[cfg(feature = "history")]
#[cfg_attr(docsrs, doc(cfg(feature = "history")))]
pub mod tiles;

/// The pages' content security policy: nothing but this server.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
