//! What every handler shares.

use status_core::Registry;

use crate::auth::AdminToken;
use crate::metrics::Metrics;
use crate::CodeMap;

#[derive(Debug)]
pub(crate) struct AppState {
    pub(crate) registry: Registry,
    pub(crate) admin_token: Option<AdminToken>,
    pub(crate) codes: CodeMap,
    pub(crate) public_view: bool,
    pub(crate) appname: Option<String>,
    /// The dashboard's shared live renders.
    pub(crate) live: std::sync::Arc<crate::dashboard::LiveFeed>,
    /// Dashboard event streams open now.
    pub(crate) event_streams: std::sync::atomic::AtomicUsize,
    pub(crate) metrics: Metrics,
}
