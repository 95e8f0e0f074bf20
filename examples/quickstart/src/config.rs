//! How the demo runs: its dependencies, and the settings of each mechanism.

use std::time::Duration;

use status_core::Urgency;
use status_traffic::limit::LimitChoice;

/// The demo's dependencies: id, urgency, type, description.
pub const DEPENDENCIES: [(&str, Urgency, &str, &str); 5] = [
    (
        "primary-db",
        Urgency::Required,
        "postgres",
        "Orders and accounts database",
    ),
    (
        "search",
        Urgency::Strong,
        "elasticsearch",
        "Product search cluster",
    ),
    (
        "payments-api",
        Urgency::Strong,
        "http",
        "Payment provider API",
    ),
    ("cache", Urgency::Weak, "redis", "Page and session cache"),
    (
        "recommendations",
        Urgency::None,
        "http",
        "Recommendation service",
    ),
];

/// How the status page takes subscribers: webhooks always, mail with an SMTP server.
#[derive(Debug, Clone, Default)]
pub struct SubscriptionsConfig {
    /// The SMTP server mail goes out through (`smtp://host:port`); none: no mail.
    pub smtp: Option<String>,
    /// Who mail is from.
    pub mail_from: String,
    /// Whether webhooks may reach loopback and private addresses (tests only).
    pub allow_private_webhooks: bool,
    /// The secret tokens are made from (`STATUS_SUBSCRIPTIONS_SECRET`); none: one per run.
    pub secret: Option<String>,
}

/// How the demo runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Time between two checks of a dependency.
    pub period: Duration,
    /// How long a check may take.
    pub timeout: Duration,
    /// The admin token (the operator `admin`; blank for none).
    pub admin_token: String,
    /// Named operators (`STATUS_ADMIN_TOKENS`), in place of the admin token alone for the
    /// admin API; the audit's actor is the token's name.
    pub admin_auth: Option<status_http::AdminAuth>,
    /// A read-only token for agents at `/mcp` (`STATUS_MCP_TOKEN`), beside the admin token.
    pub mcp_read_token: Option<String>,
    /// A Redis server to check as `redis` (Weak), e.g. `redis://127.0.0.1:6379/`.
    pub redis: Option<String>,
    /// A PostgreSQL server to check as `postgres` (Required), e.g.
    /// `postgres://user@127.0.0.1/db` or `host=… user=…`.
    pub postgres: Option<String>,
    /// Real components to check too, each `KIND=TARGET` (see `checks::KINDS`).
    pub checks: Vec<String>,
    /// Extra dependencies `extra-00001`… (urgency None), for benchmarks at scale.
    pub extra_dependencies: usize,
    /// How long each extra dependency's check takes.
    pub extra_delay: Duration,
    /// Slots of `/demo/work`: a semaphore standing for a thread or connection pool.
    pub demo_workers: usize,
    /// The shedding layer of `/demo/work`.
    pub shed: Shed,
    /// Nodes behind `/demo/pool`.
    pub pool_nodes: usize,
    /// Self-culling on the failures of `/demo/work`.
    pub cull: Cull,
    /// This instance's name in the fleet (the culling budget's sliding window, the fleet
    /// view).
    pub instance_id: String,
    /// The fleet view through Redis, if any.
    pub fleet: Option<FleetConfig>,
    /// Where notices of changes go, if anywhere.
    pub notify: NotifyConfig,
    /// Readiness by this probe group (`ready` or `cache`) instead of the system's condition,
    /// over HTTP and gRPC alike.
    pub readiness_group: Option<String>,
    /// The best system level that fails `/healthcheck/summary` and gRPC's `""` alike
    /// (default OUTAGE): the registry's [`ServePolicy`](status_core::ServePolicy).
    pub serve_fails_from: status_core::CheckStatus,
    /// Where history is kept across restarts; `None` keeps none (the default here; the
    /// binary keeps it in `status-history.db`).
    pub history: Option<HistoryTarget>,
    /// How long an incident's dependencies stay healthy before it resolves (5 minutes).
    pub incident_quiet: Duration,
    /// How long an incident lasts before the public page shows it (two minutes; zero: at
    /// once); an operator's update publishes it sooner.
    pub incident_public_after: Duration,
    /// Where the demo is read from outside (`https://status.example.com`): the status
    /// page's JSON and the notifications' incident links say it.
    pub public_url: Option<String>,
    /// The origins whose pages may frame `/status/embed` (`--embed-origin`).
    pub embed_origins: Vec<String>,
    /// The status page's subscribers.
    pub subscriptions: SubscriptionsConfig,
    /// Service level objectives over the history (`--slo`); their targets must be
    /// registered, and they need a history.
    pub slos: Vec<status_history::objective::Objective>,
}

/// Where history is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryTarget {
    /// A SQLite file.
    Sqlite(std::path::PathBuf),
    /// A PostgreSQL database a fleet shares.
    Postgres(String),
}

impl HistoryTarget {
    /// A `postgres://` or `postgresql://` URL, else a file's path.
    #[must_use]
    pub fn parse(target: &str) -> Self {
        if target.starts_with("postgres://") || target.starts_with("postgresql://") {
            Self::Postgres(target.to_owned())
        } else {
            Self::Sqlite(target.into())
        }
    }
}

/// Where notices go: a JSON webhook, a Slack incoming webhook, Teams, Discord, any of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotifyConfig {
    /// A JSON webhook.
    pub webhook: Option<String>,
    /// A Slack incoming webhook.
    pub slack: Option<String>,
    /// A Microsoft Teams Workflows URL (Adaptive Cards).
    pub teams: Option<String>,
    /// A Discord webhook (embeds).
    pub discord: Option<String>,
    /// How long a level holds before it is told.
    pub hold: Duration,
    /// The webhook's signing secret.
    pub secret: Option<String>,
    /// Send the audit trail too: each admin call, through the same digest.
    pub audit: bool,
}

/// A store a fleet shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Store {
    /// Redis: one URL, or a Redis Cluster's seed nodes separated by commas.
    Redis(String),
    /// etcd: its members' URLs, separated by commas.
    Etcd(String),
}

impl FleetConfig {
    /// Checks the store before start-up where it can: an etcd prefix that holds something
    /// else is an error; an etcd not reached yet is a warning (the beats will tell).
    ///
    /// # Errors
    ///
    /// The store's settings are invalid, or its etcd prefix is not a fleet's.
    pub async fn verify(&self) -> anyhow::Result<()> {
        if let Store::Etcd(urls) = &self.store {
            let store = status_fleet::EtcdFleet::new(urls, &self.key, self.ttl)?;
            if !store.verify().await? {
                tracing::warn!(
                    "the fleet's etcd ({}) did not answer at start-up: the fleet view is stale until it does",
                    store.describe()
                );
            }
        }
        Ok(())
    }
}

/// The fleet view: where this instance publishes its summary and reads the others'.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetConfig {
    /// The store the fleet shares.
    pub store: Store,
    /// The fleet's key in the store.
    pub key: String,
    /// This instance's data center.
    pub datacenter: String,
    /// An instance is stale this long after its last heartbeat.
    pub ttl: Duration,
    /// This instance's dashboard, for links from the fleet page.
    pub url: String,
    /// Fleet-aware readiness: a failure most of the data center shares leaves this instance
    /// ready, the data-center endpoint deciding.
    pub aware_readiness: bool,
    /// When a data center is healthy, when readiness fails open in it, when a failure is
    /// shared.
    pub rule: status_fleet::HealthRule,
}

/// Self-culling: the culler's settings and its budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cull {
    /// A store shared by the fleet, e.g. `Store::Redis("redis://127.0.0.1:6379/")`; `None`: a
    /// budget in this process.
    pub store: Option<Store>,
    /// Failures of `/demo/work` in the window at which the instance counts as broken.
    pub threshold: u64,
    /// The failure window.
    pub window: Duration,
    /// How often the culler looks.
    pub interval: Duration,
    /// Culls per budget window, fleet-wide.
    pub capacity: u64,
    /// The budget's window.
    pub budget_window: Duration,
    /// A sliding budget window rather than a fixed one.
    pub sliding: bool,
    /// How long the instance must have run before it may cull itself.
    pub min_uptime: Duration,
    /// Vouch at start that the budget's store forgot no grant (a fleet and a store both
    /// new): it grants at once, rather than counting its first window as spent. Never in a
    /// start script: a store restarted empty would then forget grants unnoticed.
    pub vouch: bool,
}

impl Default for Cull {
    fn default() -> Self {
        Self {
            store: None,
            threshold: 100,
            window: Duration::from_secs(60),
            interval: Duration::from_secs(10),
            capacity: 10,
            budget_window: Duration::from_secs(600),
            sliding: true,
            min_uptime: Duration::from_secs(30),
            vouch: false,
        }
    }
}

/// The shedding layer in front of `/demo/work`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shed {
    /// The limit algorithm.
    pub limit: LimitChoice,
    /// Requests that may wait beyond the limit.
    pub queue: usize,
    /// How long one may wait.
    pub queue_timeout: Duration,
    /// How long one may take in all.
    pub deadline: Duration,
    /// Newest first once the oldest has waited this long (`None`: first come, first served).
    pub lifo_after: Option<Duration>,
}

impl Default for Shed {
    fn default() -> Self {
        Self {
            limit: LimitChoice::Gradient2,
            queue: 64,
            queue_timeout: Duration::from_secs(1),
            deadline: Duration::from_secs(2),
            lifo_after: Some(Duration::from_millis(250)),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            period: Duration::from_secs(1),
            timeout: Duration::from_secs(2),
            admin_token: String::new(),
            admin_auth: None,
            mcp_read_token: None,
            redis: None,
            postgres: None,
            checks: Vec::new(),
            extra_dependencies: 0,
            extra_delay: Duration::ZERO,
            demo_workers: 8,
            shed: Shed::default(),
            pool_nodes: 3,
            cull: Cull::default(),
            instance_id: "quickstart".to_owned(),
            fleet: None,
            notify: NotifyConfig::default(),
            readiness_group: None,
            serve_fails_from: status_core::CheckStatus::Outage,
            history: None,
            slos: Vec::new(),
            incident_quiet: status_history::incident::DEFAULT_QUIET,
            incident_public_after: status_http::DEFAULT_PUBLIC_AFTER,
            public_url: None,
            embed_origins: Vec::new(),
            subscriptions: SubscriptionsConfig::default(),
        }
    }
}
