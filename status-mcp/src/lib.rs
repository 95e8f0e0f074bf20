//! A read-only [Model Context Protocol](https://modelcontextprotocol.io) server for `status`:
//! agents ask "what is down and why" and are answered from the core's facts, in-process,
//! where they are richest.
//!
//! Tools, every one read-only (no tool that changes anything is registered):
//! - `summary`: the system's condition, what fails, each failure's root causes and what each
//!   takes down (dependencies, features off, groups failing), readiness, mutes and maintenance;
//! - `why`: one dependency: its level since when, its check's message (in full for the admin
//!   token, as the public view shows it for the read-only token), its failing ancestors up to
//!   the root causes, its dependents, its recent transitions, and the fleet's word on it;
//! - `uptime`: a dependency, a group or the system over a window (the history's figures);
//! - `incidents`: open and recent incidents with their updates;
//! - `fleet`: what fails where across data centers.
//!
//! Resources: `status://summary`, and `status://dependencies/{id}` for each dependency.
//! Every answer is a line for a model to read first, then compact JSON; lists are capped
//! (20 entries) and what was left out is counted (`omitted`, and "and N more").
//!
//! The transport is streamable HTTP, stateless (every request stands alone: no session to
//! keep, nothing to exhaust), answered in JSON. The door: a bearer token (the admin token or a
//! read-only one), 401 without; at most [`Mcp::max_in_flight`] requests at once (429 beyond);
//! bodies at most [`Mcp::max_body_bytes`] (413 beyond); malformed JSON-RPC is answered with a
//! JSON-RPC error and changes nothing (there is nothing to change).
//!
//! # Example
//!
//! ```
//! use status_core::Registry;
//! use status_mcp::Mcp;
//!
//! let registry = Registry::builder().appname("shop").build();
//! let app: axum::Router = Mcp::new(&registry)
//!     .admin_token("s3cret")
//!     .read_token("for-agents")
//!     .router(); // serves POST /mcp
//! ```
//!
//! With status-http (feature `mcp`), `Routes::mcp` mounts it at `/mcp` beside the contract,
//! with the routes' admin token, probes, history and fleet.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod answer;
mod diagnose;
mod guard;
mod line;
mod maintenances;
mod outputs;
mod params;
mod prompts;
mod read;
mod slos;
mod tools;
mod why;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use status_core::{Probes, Registry};

pub use guard::McpService;

use crate::guard::{Counters, Guarded, Token};
use crate::params::Sources;
use crate::tools::Server;

/// Requests answered at once by default; more are refused with 429.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 16;

/// The largest request body by default (64 KiB): a tool call is a few hundred bytes.
pub const DEFAULT_MAX_BODY_BYTES: usize = 64 * 1024;

/// Builds the MCP server over a registry: what it reads, who may ask, and its bounds.
#[must_use = "a builder does nothing until `service` or `router` is called"]
pub struct Mcp {
    registry: Registry,
    probes: Option<Probes>,
    #[cfg(feature = "history")]
    history: Option<status_history::History>,
    #[cfg(feature = "fleet")]
    fleet: Option<FleetWatch>,
    admin: Option<Token>,
    read: Option<Token>,
    max_in_flight: usize,
    max_body_bytes: usize,
    allowed_hosts: Vec<String>,
    counters: Arc<Counters>,
}

impl std::fmt::Debug for Mcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mcp")
            .field("registry", &self.registry)
            .field("admin_token", &self.admin.is_some())
            .field("read_token", &self.read.is_some())
            .field("max_in_flight", &self.max_in_flight)
            .field("max_body_bytes", &self.max_body_bytes)
            .finish_non_exhaustive()
    }
}

impl Mcp {
    /// A server reading `registry`: no token yet (every call answers 403 until one is set),
    /// readiness by the registry's own probes, no history, no fleet.
    pub fn new(registry: &Registry) -> Self {
        Self {
            registry: registry.clone(),
            probes: None,
            #[cfg(feature = "history")]
            history: None,
            #[cfg(feature = "fleet")]
            fleet: None,
            admin: None,
            read: None,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            allowed_hosts: Vec::new(),
            counters: Arc::default(),
        }
    }

    /// The admin token: its callers read check messages in full. Blank sets none.
    pub fn admin_token(mut self, token: &str) -> Self {
        self.admin = Token::new(token);
        self
    }

    /// The admin token, when none was set: how a framework mounting the server hands it
    /// its own (status-http's `Routes::mcp`).
    pub fn or_admin_token(self, token: &str) -> Self {
        if self.admin.is_some() {
            self
        } else {
            self.admin_token(token)
        }
    }

    /// A read-only token for agents: its callers read messages as the public view shows
    /// them (a failure's message replaced by its level). Blank sets none.
    pub fn read_token(mut self, token: &str) -> Self {
        self.read = Token::new(token);
        self
    }

    /// Readiness as `probes` answer it (the same composition the HTTP and gRPC probes use),
    /// instead of the registry's own.
    pub fn probes(mut self, probes: Probes) -> Self {
        self.probes = Some(probes);
        self
    }

    /// `probes`, when none were set.
    pub fn or_probes(self, probes: Probes) -> Self {
        if self.probes.is_some() {
            self
        } else {
            self.probes(probes)
        }
    }

    /// Reads `history` (attached to the same registry): `uptime`, `incidents`, and durable
    /// transitions in `why`. Without it those tools say no history is kept.
    #[cfg(feature = "history")]
    pub fn history(mut self, history: status_history::History) -> Self {
        self.history = Some(history);
        self
    }

    /// `history`, when none was set.
    #[cfg(feature = "history")]
    pub fn or_history(self, history: status_history::History) -> Self {
        if self.history.is_some() {
            self
        } else {
            self.history(history)
        }
    }

    /// Reads the fleet from `source` (a running `status_fleet::Fleet`, or a closure handing
    /// out views): the `fleet` tool, and the fleet's word on a dependency in `why`.
    #[cfg(feature = "fleet")]
    pub fn fleet(mut self, source: impl status_fleet::FleetSource) -> Self {
        self.fleet = Some(FleetWatch {
            source: Arc::new(source),
        });
        self
    }

    /// The fleet from a shared `source`, when none was set.
    #[cfg(feature = "fleet")]
    pub fn or_fleet(mut self, source: Arc<dyn status_fleet::FleetSource>) -> Self {
        if self.fleet.is_none() {
            self.fleet = Some(FleetWatch { source });
        }
        self
    }

    /// At most `n` requests answered at once for each token (at least 1): the read-only
    /// token's callers never take the admin's places; more are refused with 429 and
    /// `Retry-After: 1`. A request's body must arrive whole within 10 s (408 past it).
    /// [`DEFAULT_MAX_IN_FLIGHT`] by default.
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self
    }

    /// The largest request body, in bytes; larger are refused with 413.
    /// [`DEFAULT_MAX_BODY_BYTES`] by default.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes.max(1024);
        self
    }

    /// Accepts only these `Host` values (`name` or `name:port`), against DNS rebinding. Any
    /// host by default: every call carries a bearer token, which a rebinding page does not
    /// have.
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// A handle on what the server answered and refused, for metrics.
    pub fn stats(&self) -> McpStats {
        McpStats {
            counters: Arc::clone(&self.counters),
        }
    }

    /// The guarded endpoint, to mount at a path of your choice
    /// (`Router::route_service("/mcp", ..)`).
    pub fn service(self) -> McpService {
        let sources = Arc::new(Sources {
            probes: self.probes.unwrap_or_else(|| Probes::new(&self.registry)),
            registry: self.registry,
            #[cfg(feature = "history")]
            history: self.history,
            #[cfg(feature = "fleet")]
            fleet: self.fleet,
        });
        let server = Server::new(sources);
        let mut config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .with_max_request_body_bytes(self.max_body_bytes);
        config = if self.allowed_hosts.is_empty() {
            config.disable_allowed_hosts()
        } else {
            config.with_allowed_hosts(self.allowed_hosts)
        };
        let transport = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(NeverSessionManager::default()),
            config,
        );
        McpService {
            inner: Arc::new(Guarded {
                admin: self.admin,
                read: self.read,
                admin_permits: Arc::new(tokio::sync::Semaphore::new(self.max_in_flight)),
                read_permits: Arc::new(tokio::sync::Semaphore::new(self.max_in_flight)),
                max_body: self.max_body_bytes,
                transport,
                counters: self.counters,
            }),
        }
    }

    /// A router serving the endpoint at `/mcp`.
    pub fn router<S: Clone + Send + Sync + 'static>(self) -> axum::Router<S> {
        axum::Router::new().route_service("/mcp", self.service())
    }
}

/// What the MCP endpoint answered and refused since it started.
#[derive(Debug, Clone)]
pub struct McpStats {
    counters: Arc<Counters>,
}

impl McpStats {
    /// Requests that reached the protocol (answered, JSON-RPC errors included).
    #[must_use]
    pub fn answered(&self) -> u64 {
        self.counters.answered.load(Ordering::Relaxed)
    }

    /// Requests refused for their credentials (401), or because no token is set (403).
    #[must_use]
    pub fn unauthorized(&self) -> u64 {
        self.counters.unauthorized.load(Ordering::Relaxed)
    }

    /// Requests refused because too many were in flight (429).
    #[must_use]
    pub fn busy(&self) -> u64 {
        self.counters.busy.load(Ordering::Relaxed)
    }
}

/// The fleet, as the tools read it.
#[cfg(feature = "fleet")]
#[derive(Clone)]
pub(crate) struct FleetWatch {
    pub(crate) source: Arc<dyn status_fleet::FleetSource>,
}

#[cfg(feature = "fleet")]
impl FleetWatch {
    /// A row of what fails, as answers show it.
    pub(crate) fn row(failure: &status_fleet::DependencyFailure) -> why::FleetRow {
        why::FleetRow {
            dependency: failure.dependency.clone(),
            datacenter: failure.datacenter.clone(),
            level: failure.level,
            instances: failure.instances,
            fresh: failure.fresh,
            shared: failure.shared,
        }
    }

    /// The fleet's word on `id`, which this instance sees at `mine`.
    pub(crate) fn word(&self, id: &str, mine: status_core::CheckStatus) -> why::FleetWord {
        self.source.look();
        let view = self.source.view();
        let datacenters: Vec<why::FleetRow> = view
            .what_fails()
            .into_iter()
            .filter(|f| f.dependency == id)
            .map(Self::row)
            .collect();
        let verdict = if datacenters.iter().any(|r| r.shared) {
            "shared"
        } else if mine != status_core::CheckStatus::Ok {
            "mine"
        } else if datacenters.is_empty() {
            "none"
        } else {
            "others"
        };
        why::FleetWord {
            verdict,
            datacenters,
            stale: view.stale,
        }
    }
}
