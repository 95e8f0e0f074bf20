//! Dependency health over HTTP: the probe endpoints, admin API, middleware and metrics of
//! `status`, as an axum [`Router`](axum::Router) to mount anywhere.
//!
//! ```no_run
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use status_core::{check, Dependency, Registry, Urgency};
//!
//! let registry = Registry::builder().appname("shop").build();
//! registry.add(
//!     Dependency::builder("primary-db", check::ping(|| async { Ok::<_, std::io::Error>(()) }))
//!         .urgency(Urgency::Required)
//!         .build()?,
//! )?;
//! let app = status_http::Routes::new(&registry)
//!     .admin_token(std::env::var("STATUS_ADMIN_TOKEN")?)
//!     .build();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(listener, app)
//!     .with_graceful_shutdown(status_http::shutdown::graceful(&registry, Duration::from_secs(5)))
//!     .await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Routes
//!
#![doc = include_str!("docs/routes.md")]
//!
//! Probes read cached results only: a probe storm never runs a check. The detailed report
//! (every format), the summary and liveness are serialized once per report generation and
//! served as shared bytes with a strong `ETag` (`If-None-Match` answers 304); readiness is
//! [`Registry::readiness`](status_core::Registry::readiness), rendered. Every route and the
//! dashboard show reports through one presentation path (public view, app name), and the
//! core masks credentials in every message. While any rotation hold is in force (an
//! operator's drain, a graceful shutdown, a cull), readiness and summary answer 503;
//! `/admin/drain` only ever touches the operator's hold. Codes: a level the registry's
//! [`ServePolicy`](status_core::ServePolicy) serves answers a success code, one it fails an
//! error code (by default OK, MINOR and MAJOR answer 200, OUTAGE 503); [`CodeMap`] only picks
//! which. What every area shows (membership, maintenance, the verdict) it reads from the
//! registry's [`Facts`](status_core::Facts). Admin calls need `Authorization: Bearer
//! <token>`: without a configured token they answer 403, with a missing or wrong one 401.
//! Rejections answer `{"error": …}` and change nothing.
//!
//! # The rooms
//!
//! | module | what |
//! |---|---|
//! | `routes` | [`Routes`]: the builder, the state assembled once (`routes/state.rs`), each area's router merged, the admin actions behind the audit layer |
//! | `probes` | the probe routes, liveness and the summaries as one hand-written service; readiness, groups, startup |
//! | `codes` | [`CodeMap`]: which code answers which level, under the registry's serve policy |
//! | `admin`, `mutes`, `trail`, `audit` | the admin API: features and overrides, drains, refreshes, mutes; the audit trail ([`AuditLog`]) and its one route |
//! | `auth`, `body`, `query`, `error` | the token, bounded JSON bodies, query strings, errors as JSON (status-http-core's, shared with status-page) |
//! | `present`, `render`, `respond` | one presentation path (public view, app name), bodies made once per report generation (status-http-core's ETagged bodies) |
//! | `dashboard`, `panel`, `live` | `/status` and its events; panels; metrics read when scraped |
//! | `history` | uptime, transitions, history pages |
//! | `routes/page.rs` | the public page (the status-page crate, mounted): its components (public groups), JSON, feeds, badges, languages (Fluent), incidents' admin routes, announced maintenances, postmortems, subscribers |
//! | `fleet`, `traffic`, `notify`, `otel`, `metrics` | the satellites' routes, answers and metrics |
//! | [`serve`](mod@serve), [`shutdown`], [`middleware`] | the bounded HTTP/1 server (status-serve's), the graceful end, the gates |
//! | `openapi`, `schema` | `GET /openapi.json` and the bodies it describes |
//!
//! # Features
//!
//! Every feature but `notify`, `otel`, `subscribers` and `mcp` is on by default (so no SMTP
//! client nor webhook sender by default). With none, the crate still serves every probe
//! route, the admin API and the gates, without askama, utoipa, prometheus-client, hyper's
//! server, flate2, zstd, status-traffic, SQLite or the page. On docs.rs each gated item names
//! the feature it needs.
//!
//! | feature | what it adds |
//! |---|---|
//! | `dashboard` | `GET /status`, its events and assets, and [`panel`]s (askama) |
//! | `openapi` | `GET /openapi.json` (utoipa) |
//! | `compression` | zstd and gzip for probe bodies of a kilobyte or more (flate2, zstd) |
//! | `metrics` | `GET /metrics` and [`Routes::register_metrics`] (prometheus-client) |
//! | `serve` | [`serve()`]: slow-client timeouts, a connection cap, a shutdown that ends (hyper) |
//! | `traffic` | [`traffic`]: status-traffic's refusals as answers, panels and metrics |
//! | `fleet` | `GET /fleet`, `/fleet/datacenters/{dc}`, `/fleet/dependencies`, `/status/fleet`, fleet-aware readiness (brings status-fleet) |
//! | `notify` (off by default) | [`notify_metrics`]: each notification sink's deliveries, failures, drops and queue in `/metrics` (brings `metrics`, and status-notify with its HTTP client) |
//! | `history` | uptime, transitions and the kept audit trail (`/healthcheck/uptime`, `/healthcheck/report`, `…/transitions`, `/admin/history/audit`) and the history pages (brings status-history with SQLite) |
//! | `page` | the public status page (status-page): Statuspage v2 JSON, feeds, badges, incidents (`/admin/incidents`, postmortems), announced maintenances (`/admin/maintenances`), with `dashboard` the page itself (`/status/page`); [`StatusPage`], [`Routes::status_page`] (brings `history`) |
//! | `subscribers` (off by default) | the page's subscribers: mail (lettre, SMTP) and webhooks (reqwest), [`Subscriptions`], told by [`StatusPage::teller`], which the application spawns (brings `page` and `dashboard`) |
//! | `mcp` (off by default) | `POST /mcp`: the read-only MCP server (status-mcp) for agents, [`Mcp`], [`Routes::mcp`] |
//! | `otel` (off by default) | [`otel_metrics`]: the OTLP export's requests, failures, drops and queue in `/metrics` (brings `metrics`, and status-otel with OpenTelemetry's SDK) |
#![cfg_attr(docsrs, feature(doc_cfg))]

mod admin;
mod audit;
mod codes;
#[cfg(feature = "dashboard")]
mod dashboard;
#[cfg(feature = "fleet")]
mod fleet;
#[cfg(feature = "history")]
mod history;
#[cfg(all(
    feature = "metrics",
    any(
        feature = "traffic",
        feature = "fleet",
        feature = "notify",
        feature = "otel",
        feature = "history",
        feature = "dashboard"
    )
))]
mod live;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "metrics")]
mod metrics;
mod mutes;
#[cfg(feature = "notify")]
mod notify;
#[cfg(feature = "openapi")]
mod openapi;
#[cfg(feature = "otel")]
mod otel;
mod present;
mod probes;
mod query;
mod render;
mod routes;
#[cfg(feature = "openapi")]
mod schema;
#[cfg(feature = "dashboard")]
mod streams;
mod trail;

use status_http_core::{auth, body, error, respond, sync};

pub mod middleware;
#[cfg(feature = "dashboard")]
pub mod panel;
#[cfg(feature = "serve")]
pub mod serve;
pub mod shutdown;
#[cfg(feature = "traffic")]
pub mod traffic;

pub use self::audit::{
    AuditFuture, AuditLayer, AuditLog, AuditRecord, Audited, ReadCount, AUDIT_KEPT, REFUSALS_KEPT,
};
pub use self::auth::{Admin, AdminAuth, AdminToken, Operator};
pub use self::body::{BodyTimeout, BODY_LIMIT};
pub use self::codes::CodeMap;
pub use self::error::ApiError;
#[cfg(feature = "notify")]
pub use self::notify::notify_metrics;
#[cfg(feature = "otel")]
pub use self::otel::otel_metrics;
pub use self::routes::Routes;
#[cfg(feature = "serve")]
pub use self::serve::serve;
#[cfg(feature = "mcp")]
pub use status_mcp::{Mcp, McpStats};
#[cfg(feature = "subscribers")]
#[cfg_attr(docsrs, doc(cfg(feature = "subscribers")))]
pub use status_page::Subscriptions;
#[cfg(feature = "page")]
#[cfg_attr(docsrs, doc(cfg(feature = "page")))]
pub use status_page::{
    is_origin, PublicGroup, Publication, Settings as StatusPageSettings, StatusPage,
    DEFAULT_PUBLIC_AFTER, PUBLIC_TAG,
};

/// The metrics library `/metrics` is written with, for [`Routes::register_metrics`].
#[cfg(feature = "metrics")]
pub use prometheus_client;

/// The router of the HTTP contract for `registry`, with default options: no admin token
/// (admin calls answer 403), default codes, detailed view.
pub fn routes(registry: &status_core::Registry) -> axum::Router {
    Routes::new(registry).build()
}
