//! Run with `cargo run -p quickstart`.
//!
//! The status demo: five dependencies of a small shop, three features gated on them, chaos
//! controls to break any dependency, and every route of the HTTP contract. [`app`] builds the
//! whole router, so tests call it without a socket.

pub mod chaos;
pub mod pool;

use std::time::Duration;

use axum::body::Bytes;
use std::convert::Infallible;
use std::sync::Arc;

use anyhow::Context as _;
use axum::extract::{FromRef, Path, Query, State};
use axum::http::header::CACHE_CONTROL;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use status_core::notify::{Notice, NoticePolicy, Notifications, Slack, Webhook};
use status_core::{CheckStatus, Dependency, Feature, Group, Registry, Urgency};
use status_http::middleware::{FeatureGateLayer, HealthGateLayer, RequestGuardLayer};
use status_http::prometheus_client::metrics::gauge::Gauge;
use status_http::{Admin, AdminAuth, ApiError};
use status_traffic::count::{CountLayer, Failures};
use status_traffic::cull::{
    Budget, BudgetWindow, Culler, CullerHandle, EtcdBudget, InProcessBudget, RedisBudget,
};
pub use status_traffic::limit::LimitChoice;
use status_traffic::shed::ShedLayer;
use tokio::sync::Semaphore;
use tower_http::set_header::SetResponseHeaderLayer;

use crate::chaos::{Chaos, Setting};

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

/// How the demo runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Time between two checks of a dependency.
    pub period: Duration,
    /// How long a check may take.
    pub timeout: Duration,
    /// The admin token.
    pub admin_token: String,
    /// A Redis server to check as `redis` (Weak), e.g. `redis://127.0.0.1:6379/`.
    pub redis: Option<String>,
    /// A PostgreSQL server to check as `postgres` (Required), e.g.
    /// `postgres://user@127.0.0.1/db` or `host=… user=…`.
    pub postgres: Option<String>,
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
}

/// Where notices go: a JSON webhook, a Slack incoming webhook, or both.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotifyConfig {
    /// A JSON webhook.
    pub webhook: Option<String>,
    /// A Slack incoming webhook.
    pub slack: Option<String>,
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
            let store = status_core::fleet::EtcdFleet::new(urls, &self.key, self.ttl)?;
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
#[derive(Debug, Clone, PartialEq, Eq)]
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
            redis: None,
            postgres: None,
            extra_dependencies: 0,
            extra_delay: Duration::ZERO,
            demo_workers: 8,
            shed: Shed::default(),
            pool_nodes: 3,
            cull: Cull::default(),
            instance_id: "quickstart".to_owned(),
            fleet: None,
            notify: NotifyConfig::default(),
        }
    }
}

/// The running demo: its registry and its chaos controls.
#[derive(Debug, Clone)]
pub struct Demo {
    /// The registry of the demo's dependencies and features.
    pub registry: Registry,
    /// The chaos settings.
    pub chaos: Chaos,
    /// How it runs.
    pub config: Config,
    /// Tasks alive on the runtime, sampled every second: `/metrics` serves it as
    /// `quickstart_runtime_alive_tasks`, which the soak (`scripts/soak`) watches for leaks.
    pub alive_tasks: Gauge,
    /// The shedding layer in front of `/demo/work`; it reports as the passive dependency
    /// `shedding` (urgency None: MINOR while it sheds).
    pub shed: ShedLayer<axum::extract::Request>,
    /// The node pool behind `/demo/pool`; it reports as the passive dependency `pool`.
    pub pool: pool::DemoPool,
    /// Failures of `/demo/work` (5xx and errors), over the culler's window; their rate is
    /// the passive dependency `work-errors`.
    pub failures: Failures,
    /// The culler; it reports as the passive dependency `culler`.
    pub culler: CullerHandle,
    /// The fleet view, when `Config::fleet` is set.
    pub fleet: Option<status_core::fleet::Fleet>,
    /// Notices of changes, when `Config::notify` names a sink.
    pub notifications: Option<Notifications>,
    /// Liveness, readiness (fleet-aware when configured) and startup, composed once: the HTTP
    /// routes and gRPC's `probe/*` services answer by it.
    pub probes: status_core::Probes,
    /// gRPC health checking (`grpc.health.v1.Health`), served when `--grpc-port` is given;
    /// its counts are in `/metrics` either way.
    pub grpc: status_grpc::HealthService,
    /// What the bounded gRPC server counts (`status_grpc::serve`).
    pub grpc_stats: Arc<status_grpc::ServerStats>,
}

impl Demo {
    /// Registers the demo's dependencies and features; they start being checked at once.
    ///
    /// # Errors
    ///
    /// If called outside a Tokio runtime, or with a Redis or PostgreSQL URL that does not
    /// parse.
    pub fn start(config: Config) -> anyhow::Result<Self> {
        let registry = Registry::builder().appname("quickstart").build();
        let chaos = Chaos::default();
        for (id, urgency, kind, description) in DEPENDENCIES {
            chaos.declare(id);
            if id == "recommendations" {
                // Declared with the macro; the period and timeout come from the command line.
                registry.add(
                    recommendations(chaos.check(id))
                        .into_builder()
                        .period(config.period)
                        .timeout(config.timeout)
                        .build()?,
                )?;
                continue;
            }
            let mut dependency = Dependency::builder(id, chaos.check(id))
                .urgency(urgency)
                .kind(kind)
                .description(description)
                .documentation_url(format!("https://runbooks.example.com/{id}"))
                .tag("demo");
            if id == "cache" {
                dependency = dependency.tag("cache");
            }
            registry.add(
                dependency
                    .period(config.period)
                    .timeout(config.timeout)
                    .build()?,
            )?;
        }
        if let Some(url) = &config.redis {
            registry.add(
                Dependency::builder("redis", status_core::check::redis::RedisCheck::new(url)?)
                    .urgency(Urgency::Weak)
                    .kind("redis")
                    .description(format!("Redis at {url}"))
                    .period(config.period)
                    .timeout(config.timeout)
                    .build()?,
            )?;
        }
        if let Some(url) = &config.postgres {
            registry.add(
                Dependency::builder(
                    "postgres",
                    status_core::check::postgres::PostgresCheck::new(url)?,
                )
                .urgency(Urgency::Required)
                .kind("postgres")
                .description("PostgreSQL given with --postgres")
                .period(config.period)
                .timeout(config.timeout)
                .build()?,
            )?;
        }
        for i in 1..=config.extra_dependencies {
            let delay = config.extra_delay;
            registry.add(
                Dependency::builder(
                    format!("extra-{i:05}"),
                    status_core::check::tiered(move || async move {
                        if !delay.is_zero() {
                            tokio::time::sleep(delay).await;
                        }
                        CheckStatus::Ok
                    }),
                )
                .urgency(Urgency::None)
                .tag("extra")
                .period(config.period)
                .timeout(config.timeout)
                .build()?,
            )?;
        }
        let features = [
            (
                "checkout",
                "Pay for the cart",
                "payments-api",
                CheckStatus::Minor,
            ),
            (
                "recommendations-widget",
                "Show recommended products",
                "recommendations",
                CheckStatus::Minor,
            ),
            (
                "search-box",
                "Search the catalogue",
                "search",
                CheckStatus::Major,
            ),
        ];
        for (name, description, dependency, worst) in features {
            registry.add_feature(
                Feature::builder(name)
                    .description(description)
                    .requires(dependency, worst)
                    .build()?,
            )?;
        }
        // Probe groups: `ready`, the dependencies the instance cannot serve without (its
        // readiness, seen alone); `cache`, whatever is tagged so. The cache is Weak, which caps
        // its failures at MINOR, in a group as in the system: that group fails on MINOR.
        registry.add_group(
            Group::builder("ready")
                .dependency("primary-db")
                .dependency("search")
                .dependency("payments-api")
                .build()?,
        )?;
        registry.add_group(
            Group::builder("cache")
                .tag("cache")
                .fails_on(CheckStatus::Minor)
                .rotation(false)
                .build()?,
        )?;
        let shed = ShedLayer::new(config.shed.limit.limiter())
            .clock(registry.clock().clone())
            .queue(config.shed.queue)
            .queue_timeout(config.shed.queue_timeout)
            .deadline(config.shed.deadline)
            .lifo_after(config.shed.lifo_after);
        let shedding = registry.add_passive(
            Dependency::passive("shedding")
                .urgency(Urgency::None)
                .kind("shedding")
                .description("Load shedding in front of /demo/work")
                .build_info()?,
        )?;
        shed.report_to(shedding, Duration::from_secs(1));
        let pool = pool::DemoPool::start(&registry, config.pool_nodes.max(1))?;
        let (failures, culler) = start_culler(&registry, &config)?;
        let fleet = match &config.fleet {
            Some(f) => {
                let member = status_core::fleet::Member {
                    instance_id: config.instance_id.clone(),
                    datacenter: f.datacenter.clone(),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                    url: f.url.clone(),
                };
                let rule = status_core::fleet::HealthRule::default();
                Some(match &f.store {
                    Store::Redis(url) => status_core::fleet::Fleet::start(
                        &registry,
                        status_core::fleet::RedisFleet::new(url, f.key.clone(), f.ttl)?,
                        member,
                        rule,
                    ),
                    Store::Etcd(urls) => status_core::fleet::Fleet::start(
                        &registry,
                        status_core::fleet::EtcdFleet::new(urls, &f.key, f.ttl)?,
                        member,
                        rule,
                    ),
                })
            }
            None => None,
        };
        let alive_tasks = Gauge::default();
        tokio::spawn({
            let gauge = alive_tasks.clone();
            let runtime = tokio::runtime::Handle::current();
            async move {
                let mut tick = tokio::time::interval(Duration::from_secs(1));
                loop {
                    tick.tick().await;
                    let alive = runtime.metrics().num_alive_tasks();
                    gauge.set(i64::try_from(alive).unwrap_or(i64::MAX));
                }
            }
        });
        let notifications = notifications(&registry, &config.notify)?;
        let mut probes = status_core::Probes::new(&registry);
        if let (Some(fleet), Some(fleet_config)) = (&fleet, &config.fleet) {
            if fleet_config.aware_readiness {
                probes = probes.fleet_aware(
                    Arc::new(fleet.clone()),
                    config.instance_id.clone(),
                    fleet_config.datacenter.clone(),
                );
            }
        }
        Ok(Self {
            grpc: status_grpc::HealthService::new(&registry).probes(probes.clone()),
            probes,
            grpc_stats: Arc::default(),
            registry,
            chaos,
            config,
            notifications,
            alive_tasks,
            shed,
            pool,
            failures,
            culler,
            fleet,
        })
    }
}

/// Notices of the registry's changes to the sinks `config` names; `None` without any.
fn notifications(
    registry: &Registry,
    config: &NotifyConfig,
) -> anyhow::Result<Option<Notifications>> {
    if config.webhook.is_none() && config.slack.is_none() {
        return Ok(None);
    }
    let mut builder = Notifications::builder(registry).policy(NoticePolicy {
        hold: config.hold,
        ..NoticePolicy::default()
    });
    if let Some(url) = &config.webhook {
        let hook = Webhook::new(url).context("--notify-webhook")?;
        builder = builder.sink(hook.secret(config.secret.as_deref().unwrap_or_default()));
    }
    if let Some(url) = &config.slack {
        builder = builder.sink(Slack::new(url).context("--notify-slack")?);
    }
    Ok(Some(builder.start()?))
}

/// The failure counter of `/demo/work` and the culler judging by it, with its budget.
fn start_culler(registry: &Registry, config: &Config) -> anyhow::Result<(Failures, CullerHandle)> {
    let cull = &config.cull;
    let failures = Failures::new(cull.window).clock(registry.clock().clone());
    let errors = registry.add_passive(
        Dependency::passive("work-errors")
            .urgency(Urgency::None)
            .kind("traffic")
            .description("Error rate of /demo/work over the culler's window")
            .build_info()?,
    )?;
    failures.report_to(
        errors,
        Duration::from_secs(1),
        status_core::check::Threshold::at_most(0.01, 0.1, 0.5).expect("ordered limits"),
    );
    let window = if cull.sliding {
        BudgetWindow::Sliding
    } else {
        BudgetWindow::Fixed
    };
    let budget: Arc<dyn Budget> = match &cull.store {
        Some(Store::Etcd(urls)) => Arc::new(
            EtcdBudget::new(
                urls,
                "status/quickstart/cull",
                cull.capacity,
                cull.budget_window,
                window,
                &config.instance_id,
            )
            .map_err(|e| anyhow::anyhow!("--cull-etcd {urls:?}: {e}"))?,
        ),
        Some(Store::Redis(url)) => Arc::new(
            RedisBudget::new(
                url,
                "status:quickstart:cull",
                cull.capacity,
                cull.budget_window,
                window,
                &config.instance_id,
            )
            .map_err(|e| anyhow::anyhow!("--cull-redis {url:?}: {e}"))?,
        ),
        None => Arc::new(
            InProcessBudget::new(cull.capacity, cull.budget_window).clock(registry.clock().clone()),
        ),
    };
    let reporter = registry.add_passive(
        Dependency::passive("culler")
            .urgency(Urgency::None)
            .kind("culler")
            .description("Self-culling on the failures of /demo/work, within the fleet's budget")
            .build_info()?,
    )?;
    let culler = Culler::new(registry, failures.clone(), budget)
        .threshold(cull.threshold)
        .interval(cull.interval)
        .min_uptime(cull.min_uptime)
        .report_to(reporter)
        .start();
    Ok((failures, culler))
}

/// The recommendation service, declared with the macro: its id, urgency and description are
/// checked at compile time.
#[status_core::dependency(
    id = "recommendations",
    urgency = "none",
    kind = "http",
    description = "Recommendation service",
    documentation_url = "https://runbooks.example.com/recommendations",
    tags = ["demo"]
)]
async fn recommendations(check: chaos::ChaosCheck) -> status_core::check::CheckOutcome {
    status_core::check::Check::check(&check).await
}

#[derive(Clone)]
struct DemoState {
    chaos: Chaos,
    auth: AdminAuth,
}

impl FromRef<DemoState> for AdminAuth {
    fn from_ref(state: &DemoState) -> Self {
        state.auth.clone()
    }
}

/// The demo's router: the HTTP contract at `/`, chaos controls under `/demo`, and a few
/// application routes (`/hello` bare, `/gated/hello` behind the health gate,
/// `/feature-gated/hello` behind the `search-box` feature, `/checkout` behind the `checkout`
/// feature).
pub fn app(demo: &Demo) -> Router {
    let alive_tasks = demo.alive_tasks.clone();
    let shed = demo.shed.clone();
    // The probes' verdicts, composed once: HTTP renders them here, gRPC in `demo.grpc`.
    let mut status = status_http::Routes::new(&demo.registry).probes(demo.probes.clone());
    if let Some(fleet) = demo.fleet.clone() {
        status = status.fleet(fleet);
    }
    // One audit trail for the contract's admin calls and the demo's own token-checked ones.
    let audit = status_http::AuditLog::new();
    let status = match &demo.notifications {
        Some(notifications) => status.register_metrics(status_http::notify_metrics(notifications)),
        None => status,
    };
    if let (Some(notifications), true) = (demo.notifications.clone(), demo.config.notify.audit) {
        audit.on_record(move |entry| {
            notifications.tell(Notice::Audit {
                action: format!("{} {}", entry.method, entry.path),
                status: entry.status,
                refused: entry.refused,
                actor: entry.actor.clone(),
                address: entry.address.clone(),
            });
        });
    }
    let status = status
        .admin_token(demo.config.admin_token.clone())
        .audit(audit.clone())
        .register_metrics(status_http::traffic::shed_metrics("demo-work", &shed))
        .panel(status_http::traffic::shed_panel(
            "Load shedding: /demo/work",
            &shed,
        ))
        .register_metrics(status_http::traffic::pool_metrics("demo", &demo.pool.pool))
        .register_metrics(status_http::traffic::cull_metrics(&demo.culler))
        .panel(status_http::traffic::cull_panel(
            "Self-culling: failures of /demo/work",
            &demo.culler,
        ))
        .panel(status_http::traffic::pool_panel(
            "Node pool: /demo/pool",
            &demo.pool.pool,
        ))
        .register_metrics(status_grpc::metrics(
            &demo.grpc,
            Some(Arc::clone(&demo.grpc_stats)),
        ))
        .register_metrics(move |metrics| {
            metrics.register(
                "quickstart_runtime_alive_tasks",
                "Tasks alive on the Tokio runtime",
                alive_tasks,
            );
        })
        .build();
    let state = DemoState {
        chaos: demo.chaos.clone(),
        auth: AdminAuth::new(&demo.config.admin_token),
    };
    let feature = |name: &str| {
        demo.registry
            .feature(name)
            .expect("the demo registers its features")
    };
    let workers = Workers(Arc::new(Semaphore::new(demo.config.demo_workers.max(1))));
    let work = Router::new()
        .route(
            "/demo/work",
            // The failure counter inside the shedding layer: it sees only the work that ran, so a
            // burst the layer refuses is never counted as the instance failing (the refusals
            // also carry the `Overload` mark that `server_errors` skips, in either order).
            get(work)
                .layer::<_, Infallible>(CountLayer::new(
                    demo.failures.clone(),
                    status_http::traffic::server_errors::<Infallible>,
                ))
                .layer(status_http::traffic::shedding(shed)),
        )
        .route("/demo/work-unprotected", get(work))
        .with_state(workers);
    let demo_routes = Router::new()
        .route("/demo/chaos", get(chaos_list).route_layer(audit.layer()))
        .route(
            "/demo/chaos/{id}",
            axum::routing::put(chaos_set).route_layer(audit.layer()),
        )
        .layer(axum::extract::DefaultBodyLimit::max(
            status_http::BODY_LIMIT,
        ))
        .with_state(state);
    Router::new()
        .route("/", get(index))
        .route("/hello", get(hello))
        .route(
            "/gated/hello",
            get(hello).layer(HealthGateLayer::new(&demo.registry)),
        )
        .route(
            "/feature-gated/hello",
            get(hello).layer(FeatureGateLayer::new(feature("search-box"))),
        )
        .route(
            "/checkout",
            axum::routing::post(|| async { Json(serde_json::json!({ "paid": true })) })
                .layer(FeatureGateLayer::new(feature("checkout"))),
        )
        .merge(demo_routes)
        .merge(work)
        .merge(pool::routes(
            &demo.pool,
            AdminAuth::new(&demo.config.admin_token),
            &audit,
        ))
        // The contract's routes have these already; the demo's own get them here, and so does
        // the 404 of an unknown path.
        .layer(RequestGuardLayer::new())
        .layer(SetResponseHeaderLayer::if_not_present(
            CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        ))
        .merge(status)
}

/// The slots of `/demo/work`.
#[derive(Clone)]
struct Workers(Arc<Semaphore>);

#[derive(serde::Deserialize)]
struct WorkQuery {
    #[serde(default = "default_work_ms")]
    ms: u64,
    #[serde(default)]
    fail: bool,
}

fn default_work_ms() -> u64 {
    100
}

/// GET `/demo/work?ms=N&fail=BOOL`: takes a slot, holds it `ms` (at most 60 s), answers 200,
/// or 500 when `fail`.
async fn work(
    State(Workers(slots)): State<Workers>,
    query: Result<Query<WorkQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    if query.ms > 60_000 {
        return Err(ApiError::bad_request("ms must be at most 60000"));
    }
    let _slot = slots
        .acquire()
        .await
        .map_err(|_| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "stopping"))?;
    // `ms=0` answers at once (a zero sleep would still wait for the timer's next tick).
    if query.ms > 0 {
        tokio::time::sleep(Duration::from_millis(query.ms)).await;
    }
    if query.fail {
        return Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the work failed (asked for)",
        ));
    }
    Ok(Json(serde_json::json!({ "worked": query.ms })).into_response())
}

async fn hello() -> &'static str {
    "Hello, World!"
}

async fn index() -> Html<&'static str> {
    Html(include_str!("index.html"))
}

/// GET `/demo/chaos` (admin).
async fn chaos_list(_: Admin, State(state): State<DemoState>) -> Response {
    Json(state.chaos.all()).into_response()
}

/// A body that could not be read, as an answer: 413 past the limit, 400 otherwise.
#[allow(clippy::needless_pass_by_value)] // for `map_err`
pub(crate) fn body_error(rejection: axum::extract::rejection::BytesRejection) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::too_large(status_http::BODY_LIMIT)
    } else {
        ApiError::bad_request(rejection.body_text())
    }
}

/// PUT `/demo/chaos/{id}` (admin) with `{"mode": …, "delayMs": n}`. The token is checked
/// before anything else of the request, the path included.
async fn chaos_set(
    _: Admin,
    State(state): State<DemoState>,
    Path(id): Path<String>,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(body_error)?;
    if !state.chaos.all().contains_key(&id) {
        return Err(ApiError::not_found("dependency", &id));
    }
    let setting: Setting = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))?;
    if setting.delay_ms > 600_000 {
        return Err(ApiError::bad_request("delayMs must be at most 600000"));
    }
    state.chaos.set(&id, setting);
    tracing::info!(dependency = %id, ?setting, "chaos set");
    Ok(
        Json(serde_json::json!({ "id": id, "mode": setting.mode, "delayMs": setting.delay_ms }))
            .into_response(),
    )
}
