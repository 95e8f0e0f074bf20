//! Run with `cargo run -p quickstart`.
//!
//! The status demo: five dependencies of a small shop, three features gated on them, chaos
//! controls to break any dependency, and every route of the HTTP contract. [`app`] builds the
//! whole router, so tests call it without a socket.

mod app;
pub mod chaos;
pub mod checks;
mod config;
pub mod pool;

pub use self::app::{app, try_app};
pub use self::config::*;

use std::time::Duration;

use std::sync::Arc;

use anyhow::Context as _;
use status_core::{CheckStatus, Dependency, Feature, Group, Registry, Urgency};
use status_http::prometheus_client::metrics::gauge::Gauge;
use status_notify::{NoticePolicy, Notifications, Slack, Webhook};
use status_traffic::count::Failures;
use status_traffic::cull::{
    Budget, BudgetWindow, Culler, CullerHandle, EtcdBudget, InProcessBudget, RedisBudget,
};
pub use status_traffic::limit::LimitChoice;
use status_traffic::shed::ShedLayer;

use crate::chaos::Chaos;

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
    pub fleet: Option<status_fleet::Fleet>,
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
    /// History kept across restarts, when `Config::history` is set.
    pub history: Option<status_history::History>,
    /// The OTLP export, when the `OTEL_*` variables ask for one.
    pub otlp: Option<status_otel::Otlp>,
}

impl Demo {
    /// Registers the demo's dependencies and features; they start being checked at once.
    ///
    /// # Errors
    ///
    /// If called outside a Tokio runtime, or with a Redis or PostgreSQL URL that does not
    /// parse.
    pub fn start(config: Config) -> anyhow::Result<Self> {
        let registry = Registry::builder()
            .appname("quickstart")
            .serve_policy(status_core::ServePolicy::failing_from(
                config.serve_fails_from,
            ))
            .build();
        let chaos = Chaos::default();
        for (id, urgency, kind, description) in DEPENDENCIES {
            chaos.declare(id);
            if id == "recommendations" {
                // Declared with the macro; the period and timeout come from the command line.
                registry.add(
                    recommendations(chaos.check(id))
                        .into_builder()
                        // Recommendations are searches: a failing search is their cause.
                        .depends_on("search")
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
            // The catalogue is indexed from the primary database: when both fail, the
            // database is the root cause the dashboard, the status page and incidents name.
            if id == "search" {
                dependency = dependency.depends_on("primary-db");
            }
            // What the public status page shows beside the groups.
            if matches!(id, "search" | "payments-api") {
                dependency = dependency.tag(status_http::PUBLIC_TAG);
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
                Dependency::builder("redis", status_checks::redis::RedisCheck::new(url)?)
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
                    status_checks::postgres::PostgresCheck::new(url)?,
                )
                .urgency(Urgency::Required)
                .kind("postgres")
                .description("PostgreSQL given with --postgres")
                .period(config.period)
                .timeout(config.timeout)
                .build()?,
            )?;
        }
        let mut kinds = std::collections::HashMap::<&str, usize>::new();
        for spec in &config.checks {
            let kind = spec.split_once('=').map_or(spec.as_str(), |(k, _)| k);
            let n = kinds.entry(kind).or_default();
            *n += 1;
            registry.add(
                checks::extra(spec, *n)?
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
        let mut ready = Group::builder("ready");
        for dependency in WORK_NEEDS {
            ready = ready.dependency(dependency);
        }
        registry.add_group(ready.build()?)?;
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
        let fleet = match &config.fleet {
            Some(f) => {
                let member = status_fleet::Member {
                    instance_id: config.instance_id.clone(),
                    datacenter: f.datacenter.clone(),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                    url: f.url.clone(),
                };
                let rule = f.rule;
                Some(match &f.store {
                    Store::Redis(url) => status_fleet::Fleet::start(
                        &registry,
                        status_fleet::RedisFleet::new(url, f.key.clone(), f.ttl)?,
                        member,
                        rule,
                    ),
                    Store::Etcd(urls) => status_fleet::Fleet::start(
                        &registry,
                        status_fleet::EtcdFleet::new(urls, &f.key, f.ttl)?,
                        member,
                        rule,
                    ),
                })
            }
            None => None,
        };
        let (failures, culler) = start_culler(&registry, &config, fleet.as_ref())?;
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
        // An objective on a name nobody reports would report nothing, for ever.
        status_history::objective::check(&config.slos, &registry).context("--slo")?;
        anyhow::ensure!(
            config.slos.is_empty() || config.history.is_some(),
            "--slo: objectives are read from the history: drop --no-history"
        );
        let history = match &config.history {
            Some(HistoryTarget::Sqlite(path)) => Some(
                status_history::History::sqlite(path)
                    .incident_quiet(config.incident_quiet)
                    .objectives(config.slos.clone())
                    .open(),
            ),
            Some(HistoryTarget::Postgres(url)) => {
                let datacenter = config
                    .fleet
                    .as_ref()
                    .map_or("default", |f| f.datacenter.as_str());
                let store =
                    status_history::PostgresHistory::new(url, &config.instance_id, datacenter)
                        .context("--history")?;
                Some(
                    status_history::History::builder(store)
                        .incident_quiet(config.incident_quiet)
                        .objectives(config.slos.clone())
                        .open(),
                )
            }
            None => None,
        };
        let notifications = notifications(&registry, &config, history.as_ref(), fleet.as_ref())?;
        // OTLP export, as every OpenTelemetry SDK does it: when OTEL_EXPORTER_OTLP_ENDPOINT
        // (or a signal's own) is set; with it the dependency `otlp-export`.
        // The objectives' gauges go with it.
        let otlp = status_otel::Otlp::from_env()
            .map(|otlp| match &history {
                Some(history) => otlp.objectives(history),
                None => otlp,
            })
            .map(|otlp| otlp.start(&registry))
            .transpose()
            .context("the OpenTelemetry export (OTEL_* variables)")?;
        let mut probes = status_core::Probes::new(&registry);
        if let Some(group) = &config.readiness_group {
            probes = probes.readiness_group(group.clone());
        }
        if let (Some(fleet), Some(fleet_config)) = (&fleet, &config.fleet) {
            if fleet_config.aware_readiness {
                probes = probes.excuse(status_fleet::FleetExcuse::new(
                    fleet.clone(),
                    config.instance_id.clone(),
                    fleet_config.datacenter.clone(),
                ));
            }
        }
        if let Some(history) = &history {
            // After every dependency, feature and group: what is restored must exist.
            history.attach(&registry);
        }
        Ok(Self {
            history,
            otlp,
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
    whole: &Config,
    history: Option<&status_history::History>,
    fleet: Option<&status_fleet::Fleet>,
) -> anyhow::Result<Option<Notifications>> {
    let config = &whole.notify;
    if config.webhook.is_none()
        && config.slack.is_none()
        && config.teams.is_none()
        && config.discord.is_none()
    {
        return Ok(None);
    }
    let mut builder = Notifications::builder(registry).policy(NoticePolicy {
        hold: config.hold,
        ..NoticePolicy::default()
    });
    if let Some(history) = history {
        // What was told survives a restart (no notice repeated, no "resolved" lost), and
        // each notice says the incident it belongs to, and where the page tells it.
        let page = whole
            .public_url
            .as_ref()
            .map(|url| format!("{}/status/page", url.trim_end_matches('/')));
        builder = builder.history(history, page.as_deref());
    }
    if let Some(url) = &config.webhook {
        let hook = Webhook::new(url).context("--notify-webhook")?;
        builder = builder.sink(hook.secret(config.secret.as_deref().unwrap_or_default()));
    }
    if let Some(url) = &config.slack {
        builder = builder.sink(Slack::new(url).context("--notify-slack")?);
    }
    if let Some(url) = &config.teams {
        builder = builder.sink(status_notify::Teams::new(url).context("--notify-teams")?);
    }
    if let Some(url) = &config.discord {
        builder = builder.sink(status_notify::Discord::new(url).context("--notify-discord")?);
    }
    if let Some(fleet) = fleet {
        // One notice per shared failure: whoever takes the fleet's voice lease first tells
        // it for all (a lease in the fleet's store, Redis or etcd).
        builder = builder.chorus(status_fleet::FleetChorus::new(fleet.clone()));
    }
    Ok(Some(builder.start()?))
}

/// What `/demo/work` stands for depends on: the `ready` group's dependencies.
const WORK_NEEDS: [&str; 3] = ["primary-db", "search", "payments-api"];

/// Says how vouching for the cull budget went (`--cull-vouch`).
fn vouched(answer: Result<(), status_traffic::cull::BudgetError>) {
    match answer {
        Ok(()) => tracing::warn!(
            "vouched that the cull budget's store forgot no grant: it grants from now"
        ),
        Err(e) => tracing::warn!("could not vouch for the cull budget: {e}"),
    }
}

/// The failure counter of `/demo/work` and the culler judging by it, with its budget; with
/// a fleet, a failure the data center shares culls no one.
fn start_culler(
    registry: &Registry,
    config: &Config,
    fleet: Option<&status_fleet::Fleet>,
) -> anyhow::Result<(Failures, CullerHandle)> {
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
    if cull.vouch {
        let budget = Arc::clone(&budget);
        tokio::spawn(async move { vouched(budget.vouch().await) });
    }
    let reporter = registry.add_passive(
        Dependency::passive("culler")
            .urgency(Urgency::None)
            .kind("culler")
            .description("Self-culling on the failures of /demo/work, within the fleet's budget")
            .build_info()?,
    )?;
    let mut culler = Culler::new(registry, failures.clone(), budget)
        .threshold(cull.threshold)
        .interval(cull.interval)
        .min_uptime(cull.min_uptime)
        .report_to(reporter);
    if let Some(fleet) = fleet {
        // The failures of /demo/work are attributed first: while a dependency the work
        // depends on (those of the `ready` group) fails for most of the data center too, a
        // restart would mend nothing, and no one asks the budget.
        let fleet = fleet.clone();
        let work_needs = WORK_NEEDS.map(str::to_owned);
        culler = culler.shared(move || fleet.shared_failure(&work_needs));
    }
    let culler = culler.start();
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

/// The README's complete examples, compiled as doc tests (its fragments are marked
/// `ignore`).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
