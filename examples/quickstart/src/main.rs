//! Run with `cargo run -p quickstart`.

use std::hash::{BuildHasher, RandomState};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use quickstart::{Config, Demo};

/// What `--help` says of the OpenTelemetry export, configured as every SDK is.
const OTEL_HELP: &str = "\
OpenTelemetry (OTLP/HTTP protobuf), when OTEL_EXPORTER_OTLP_ENDPOINT is set:
  OTEL_EXPORTER_OTLP_ENDPOINT       the collector, e.g. http://127.0.0.1:4318
  OTEL_EXPORTER_OTLP_{METRICS,LOGS,TRACES}_ENDPOINT   one signal's full URL
  OTEL_EXPORTER_OTLP_HEADERS        key=value,... sent with each request
  OTEL_EXPORTER_OTLP_TIMEOUT        each request's deadline in ms (10000)
  OTEL_EXPORTER_OTLP_COMPRESSION    gzip, or none
  OTEL_METRIC_EXPORT_INTERVAL       ms between metric exports (60000)
  OTEL_{METRICS,LOGS,TRACES}_EXPORTER  otlp, or none to leave a signal out
  OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_SDK_DISABLED=true
Exported: state sets status.{system,dependency,group,feature}.state (UpDownCounters), the
measured values status.dependency.{latency,timestamp,count,ratio,size} in their units, the
histogram status.check.duration, the counter status.dependency.transitions, a log record per
transition; nothing per probe. Its health: the dependency otlp-export.";

/// The status demo: five dependencies, three features, chaos controls.
#[derive(Debug, Parser)]
#[command(version, about, after_help = OTEL_HELP)]
struct Args {
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    bind: std::net::IpAddr,
    /// Port to listen on.
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Time between two checks of a dependency, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    period_ms: u64,
    /// How long a check may take, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    timeout_ms: u64,
    /// A Redis server to check too, e.g. redis://127.0.0.1:6379/
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
    /// A PostgreSQL server to check too, e.g. postgres://postgres@127.0.0.1/postgres
    #[arg(long, value_name = "URL")]
    postgres: Option<String>,
    /// A real component to check too, as a WEAK dependency named by its kind; repeatable.
    /// KIND=TARGET: mysql=mysql://user:pass@host:3306/db, amqp=amqp://user:pass@host:5672/%2f,
    /// nats=nats://host:4222 (nats-js=… with JetStream), memcached=host:11211,
    /// etcd=http://host:2379, tls=host:443 (its certificate's lifetime left),
    /// tls-file=PATH@NAME, tcp=host:port
    #[arg(long = "check", value_name = "KIND=TARGET")]
    checks: Vec<String>,
    /// Extra dependencies to register (urgency None), for benchmarks at scale.
    #[arg(long, default_value_t = 0)]
    extra_dependencies: usize,
    /// How long each extra dependency's check takes, in milliseconds.
    #[arg(long, default_value_t = 0)]
    extra_delay_ms: u64,
    /// How long readiness fails before the server stops, on SIGTERM or Ctrl-C.
    #[arg(long, default_value_t = 2000)]
    shutdown_delay_ms: u64,
    /// How long requests still in progress after the shutdown delay may run before they are
    /// dropped.
    #[arg(long, default_value_t = 3000)]
    shutdown_grace_ms: u64,
    /// Connections open at once; past it the longest idle one is closed for a new one.
    #[arg(long, default_value_t = 1024)]
    max_connections: usize,
    /// Slots of `/demo/work` (a semaphore standing for a thread or connection pool).
    #[arg(long, default_value_t = 8)]
    demo_workers: usize,
    /// The limit of the shedding layer in front of `/demo/work`: fixed:N, aimd, gradient2 or
    /// vegas.
    #[arg(long, default_value = "gradient2")]
    shed_limit: quickstart::LimitChoice,
    /// Requests that may wait beyond the limit.
    #[arg(long, default_value_t = 64)]
    shed_queue: usize,
    /// How long a request may wait in the queue, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    shed_queue_timeout_ms: u64,
    /// How long a request may take in all, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    shed_deadline_ms: u64,
    /// Nodes behind `/demo/pool`.
    #[arg(long, default_value_t = 3)]
    pool_nodes: usize,
    /// A Redis shared by the fleet for the culling budget (else a budget in this process):
    /// one URL, or a Redis Cluster's seed nodes separated by commas. A Redis restarted
    /// without persistence forgets the window's grants.
    #[arg(long, conflicts_with = "cull_etcd")]
    cull_redis: Option<String>,
    /// An etcd shared by the fleet for the culling budget: its members' URLs separated by
    /// commas (http://host:2379,...). Each grant is one transaction: never past the capacity,
    /// even across a leader change.
    #[arg(long)]
    cull_etcd: Option<String>,
    /// Failures of /demo/work in the window at which the instance culls itself.
    #[arg(long, default_value_t = 100)]
    cull_threshold: u64,
    /// The failure window, in seconds.
    #[arg(long, default_value_t = 60)]
    cull_window_s: u64,
    /// How often the culler looks, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    cull_interval_ms: u64,
    /// Culls per budget window, fleet-wide.
    #[arg(long, default_value_t = 10)]
    cull_capacity: u64,
    /// The budget's window, in seconds.
    #[arg(long, default_value_t = 600)]
    cull_budget_window_s: u64,
    /// How the budget counts. sliding: at most the capacity in any window-long span (its
    /// worst case is the capacity); fixed: at most the capacity per calendar window (its worst
    /// case is twice the capacity within moments, around a window's edge).
    #[arg(long, value_enum, default_value_t = CullBudget::Sliding)]
    cull_budget: CullBudget,
    /// How long the instance must have run before it may cull itself, in seconds.
    #[arg(long, default_value_t = 30)]
    cull_min_uptime_s: u64,
    /// Vouch that the budget's store (`--cull-redis`, `--cull-etcd`) forgot no grant (a
    /// fleet and a store both new): it grants at once, rather than counting its first window
    /// as spent. Never in a start script: a store restarted empty would then forget grants.
    #[arg(long)]
    cull_vouch: bool,
    /// Once culled, exit after this many milliseconds (default: stay, failing the probes).
    #[arg(long)]
    cull_exit_after_ms: Option<u64>,
    /// A Redis the fleet shares (one URL, or a Redis Cluster's seed nodes separated by
    /// commas): publishes this instance's summary there and serves the fleet at /fleet and
    /// /fleet/datacenters/{dc}. Needs --datacenter: an instance without
    /// one would form a data center of its own, healthy, and no real one could fail open.
    #[arg(long, requires = "datacenter", conflicts_with = "fleet_etcd")]
    fleet_redis: Option<String>,
    /// An etcd the fleet shares (its members' URLs separated by commas, http://host:2379,...),
    /// as --fleet-redis: a lease an instance, a watch for the view. Needs --datacenter.
    #[arg(long, requires = "datacenter")]
    fleet_etcd: Option<String>,
    /// The fleet's key in the store (several processes, or fleet-load, share a fleet by it).
    #[arg(long, default_value = "status:quickstart:fleet")]
    fleet_key: String,
    /// This instance's data center (letters, digits, `.`, `_`, `-`; required with
    /// --fleet-redis).
    #[arg(long, value_parser = datacenter_name)]
    datacenter: Option<String>,
    /// An instance is stale this long after its last heartbeat, in milliseconds.
    #[arg(long, default_value_t = 3000)]
    fleet_ttl_ms: u64,
    /// Fleet-aware readiness: a failure most of this data center shares leaves the instance
    /// ready, and the data-center endpoint decides.
    #[arg(long)]
    fleet_aware_readiness: bool,
    /// A data center is removed from GSLB below this share of its fresh instances serving.
    #[arg(long, default_value_t = 0.5)]
    fleet_healthy_share: f64,
    /// ... or below this many serving instances.
    #[arg(long, default_value_t = 1)]
    fleet_min_serving: usize,
    /// Below this share of a data center's fresh instances serving, every instance of it
    /// stays ready (readiness fails open; with --fleet-aware-readiness). At or below
    /// --fleet-healthy-share. Default 0: never.
    #[arg(long, default_value_t = 0.0)]
    ready_fail_open_share: f64,
    /// A dependency failing on more than this share of a data center's other instances is
    /// shared there.
    #[arg(long, default_value_t = 0.5)]
    fleet_shared_share: f64,
    /// ... and on at least this many of them.
    #[arg(long, default_value_t = 2)]
    fleet_shared_min: usize,
    /// Readiness by this probe group (`ready` or `cache`) instead of the system's condition,
    /// over HTTP and gRPC alike.
    #[arg(long)]
    readiness_group: Option<String>,
    /// The best system level that fails the summary and gRPC's `""` alike: MINOR, MAJOR or
    /// OUTAGE.
    #[arg(long, default_value = "OUTAGE", value_parser = parse_level)]
    serve_fails_from: status_core::CheckStatus,
    /// This instance's name in the fleet (default: host name, process id and a random part).
    /// The fleet's store refuses a second process under an id another one holds.
    #[arg(long)]
    instance_id: Option<String>,
    /// Serve the newest waiting request first once the oldest has waited this long, in
    /// milliseconds (0: first come, first served).
    #[arg(long, default_value_t = 250)]
    shed_lifo_after_ms: u64,
    /// Send notices of changes to this JSON webhook (signed with --notify-secret).
    #[arg(long, value_name = "URL")]
    notify_webhook: Option<String>,
    /// Send notices of changes to this Slack incoming webhook.
    #[arg(long, value_name = "URL")]
    notify_slack: Option<String>,
    /// Send notices of changes to this Microsoft Teams Workflows URL, as Adaptive Cards.
    #[arg(long, value_name = "URL")]
    notify_teams: Option<String>,
    /// Send notices of changes to this Discord webhook, as embeds.
    #[arg(long, value_name = "URL")]
    notify_discord: Option<String>,
    /// How long a new level must hold before it is told, in seconds.
    #[arg(long, default_value_t = 30)]
    notify_hold_s: u64,
    /// Sign the webhook's bodies with this secret (X-Status-Signature: sha256=…).
    #[arg(long, value_name = "SECRET")]
    notify_secret: Option<String>,
    /// Send the audit trail to the notification sinks too: each admin call, refused ones
    /// included, through the same digest.
    #[arg(long)]
    notify_audit: bool,
    /// Serve gRPC health checking (`grpc.health.v1.Health`) on this port too: the instance as
    /// `""`, the groups `ready` and `cache`, and `feature/{name}` for each feature.
    #[arg(long, value_name = "PORT")]
    grpc_port: Option<u16>,
    /// gRPC connections open at once before the longest idle one is closed for a new one
    /// (default: 256, at most a quarter of the file-descriptor limit).
    #[arg(long)]
    grpc_max_connections: Option<usize>,
    /// Where history is kept across restarts: a SQLite file (created if missing), or a
    /// PostgreSQL URL (postgres://…) a fleet shares. Uptime, transitions, the audit trail,
    /// mutes, overrides and what was notified survive a restart (with PostgreSQL, give a
    /// stable --instance-id: an instance gets back its own mutes, overrides and notices).
    #[arg(
        long,
        value_name = "PATH|URL",
        default_value = "status-history.db",
        conflicts_with = "no_history"
    )]
    history: String,
    /// A service level objective over the history, repeatable: NAME=TARGET@OBJECTIVE/WINDOW,
    /// TARGET `dependency:ID`, `group:NAME` or `system`, OBJECTIVE a percentage, WINDOW 1h to
    /// 400d (`db=dependency:primary-db@99.9/30d`). Served at /healthcheck/slos; its burn-rate
    /// alerts go to the notification sinks.
    #[arg(long = "slo", value_name = "NAME=TARGET@OBJECTIVE/WINDOW", value_parser = parse_slo)]
    slos: Vec<status_history::objective::Objective>,
    /// Keep no history: everything lives in memory and a restart forgets it.
    #[arg(long)]
    no_history: bool,
    /// How long everything an incident covers must stay healthy before it resolves.
    #[arg(long, default_value_t = 300)]
    incident_quiet_secs: u64,
    /// How long an incident lasts before the public page, its JSON and its feeds show it (0:
    /// at once); an operator's update publishes it sooner.
    #[arg(long, default_value_t = 120)]
    incident_public_after_secs: u64,
    /// Where the demo is read from outside (https://status.example.com): the status page's
    /// JSON and the notifications' incident links say it.
    #[arg(long, value_name = "URL")]
    public_url: Option<String>,
    /// An origin (https://shop.example) whose pages may frame the status page's embed,
    /// /status/embed (repeatable; none by default).
    #[arg(long = "embed-origin", value_name = "ORIGIN", value_parser = origin)]
    embed_origins: Vec<String>,
    /// Mail for the status page's subscribers goes out through this SMTP server
    /// (smtp://host:port, STARTTLS where offered; smtps://host:port): visitors may then
    /// subscribe by mail (double opt-in). Webhook subscribers are taken without it.
    #[arg(long, value_name = "URL")]
    smtp: Option<String>,
    /// Who the subscribers' mail is from.
    #[arg(
        long,
        value_name = "ADDRESS",
        default_value = "status@quickstart.example"
    )]
    mail_from: String,
    /// Lets subscribers' webhooks reach loopback and private addresses (for tests only).
    #[arg(long)]
    subscriber_webhooks_allow_private: bool,
    /// The server: `status` (`status_http::serve`) or `axum` (`axum::serve`: no timeouts, no
    /// connection cap, a shutdown that waits for every connection), for comparisons.
    #[arg(long, value_enum, default_value_t = Server::Status)]
    server: Server,
}

/// Which server runs the router.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Server {
    /// `status_http::serve`.
    Status,
    /// `axum::serve`.
    Axum,
}

/// 128 random bits, from the randomly keyed hasher of the standard library.
fn random_token() -> String {
    let a = RandomState::new().hash_one(std::process::id());
    let b = RandomState::new().hash_one(std::time::SystemTime::now());
    format!("{a:016x}{b:016x}")
}

/// A listener on `addr` with a backlog of 1,024 (the standard library's is 128): a burst of
/// connections waits in the kernel instead of being dropped and retried a second later.
fn listen(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// How the culling budget counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum CullBudget {
    /// At most the capacity per calendar window.
    Fixed,
    /// At most the capacity in any window-long span.
    Sliding,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                // rmcp logs each MCP request at INFO: its warnings are enough here.
                .unwrap_or_else(|_| "info,tower_http=warn,rmcp=warn".into()),
        )
        .init();
    let args = Args::parse();
    anyhow::ensure!(
        args.period_ms > 0 && args.timeout_ms > 0,
        "periods and timeouts must be positive"
    );
    anyhow::ensure!(
        args.cull_window_s > 0 && args.cull_interval_ms > 0 && args.cull_budget_window_s > 0,
        "the culling windows and interval must be positive"
    );
    let configured = std::env::var("STATUS_ADMIN_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty());
    // Named operators, each with a token of their own: the audit's actor is the token's
    // name. STATUS_ADMIN_TOKEN, when set too, is one more, named `admin`.
    let operators = std::env::var("STATUS_ADMIN_TOKENS")
        .ok()
        .filter(|t| !t.trim().is_empty());
    let generated = configured.is_none() && operators.is_none();
    let admin_auth = match &operators {
        Some(spec) => {
            let mut operators = status_http::Operator::list(spec)
                .map_err(|e| anyhow::anyhow!("STATUS_ADMIN_TOKENS: {e}"))?;
            if let Some(token) = &configured {
                let admin = status_http::Operator::new("admin", token)
                    .map_err(|e| anyhow::anyhow!("STATUS_ADMIN_TOKEN: {e}"))?;
                operators.insert(0, admin);
            }
            Some(
                status_http::AdminAuth::operators(operators)
                    .map_err(|e| anyhow::anyhow!("STATUS_ADMIN_TOKEN, STATUS_ADMIN_TOKENS: {e}"))?,
            )
        }
        None => None,
    };
    let admin_token = match (configured, &operators) {
        (Some(token), _) => token,
        (None, Some(_)) => String::new(),
        (None, None) => random_token(),
    };
    let rule = status_fleet::HealthRule {
        healthy_share: args.fleet_healthy_share,
        min_serving: args.fleet_min_serving,
        ready_fail_open_share: args.ready_fail_open_share,
        shared_share: args.fleet_shared_share,
        shared_min: args.fleet_shared_min,
    };
    rule.check().context("the fleet's rule")?;
    // A mistyped mail setting is refused here, not found at the first message.
    if let Some(smtp) = &args.smtp {
        status_http::Subscriptions::new()
            .smtp(smtp.clone())
            .mail_from(args.mail_from.clone())
            .check()
            .map_err(|e| anyhow::anyhow!("--smtp, --mail-from: {e}"))?;
    }
    let fleet_store = args
        .fleet_redis
        .clone()
        .map(quickstart::Store::Redis)
        .or(args.fleet_etcd.clone().map(quickstart::Store::Etcd));
    let config = Config {
        period: Duration::from_millis(args.period_ms),
        timeout: Duration::from_millis(args.timeout_ms),
        admin_token: admin_token.clone(),
        admin_auth: admin_auth.clone(),
        mcp_read_token: std::env::var("STATUS_MCP_TOKEN")
            .ok()
            .filter(|t| !t.trim().is_empty()),
        redis: args.redis,
        postgres: args.postgres,
        checks: args.checks,
        extra_dependencies: args.extra_dependencies,
        extra_delay: Duration::from_millis(args.extra_delay_ms),
        demo_workers: args.demo_workers,
        pool_nodes: args.pool_nodes,
        cull: quickstart::Cull {
            store: args
                .cull_redis
                .map(quickstart::Store::Redis)
                .or(args.cull_etcd.map(quickstart::Store::Etcd)),
            threshold: args.cull_threshold,
            window: Duration::from_secs(args.cull_window_s),
            interval: Duration::from_millis(args.cull_interval_ms),
            capacity: args.cull_capacity,
            budget_window: Duration::from_secs(args.cull_budget_window_s),
            sliding: args.cull_budget == CullBudget::Sliding,
            min_uptime: Duration::from_secs(args.cull_min_uptime_s),
            vouch: args.cull_vouch,
        },
        fleet: fleet_store.map(|store| quickstart::FleetConfig {
            store,
            key: args.fleet_key.clone(),
            datacenter: args.datacenter.clone().unwrap_or_default(),
            ttl: Duration::from_millis(args.fleet_ttl_ms.max(300)),
            url: format!("http://{}/status", SocketAddr::new(args.bind, args.port)),
            aware_readiness: args.fleet_aware_readiness,
            rule,
        }),
        // Host name and pid alone collide across data centers (every StatefulSet's `web-0`
        // runs as pid 1): a random part makes the default unique. The store refuses a second
        // process under an id held by another either way.
        instance_id: args.instance_id.unwrap_or_else(|| {
            format!(
                "{}-{}-{}",
                gethostname::gethostname().to_string_lossy(),
                std::process::id(),
                &random_token()[..8]
            )
        }),
        readiness_group: args.readiness_group.clone(),
        serve_fails_from: args.serve_fails_from,
        history: (!args.no_history).then(|| quickstart::HistoryTarget::parse(&args.history)),
        slos: args.slos.clone(),
        incident_quiet: Duration::from_secs(args.incident_quiet_secs),
        incident_public_after: Duration::from_secs(args.incident_public_after_secs),
        // With mail, the links in it need an address: this one, unless told another.
        embed_origins: args.embed_origins.clone(),
        public_url: args.public_url.clone().or_else(|| {
            args.smtp
                .as_ref()
                .map(|_| format!("http://{}", SocketAddr::new(args.bind, args.port)))
        }),
        subscriptions: quickstart::SubscriptionsConfig {
            smtp: args.smtp.clone(),
            mail_from: args.mail_from.clone(),
            allow_private_webhooks: args.subscriber_webhooks_allow_private,
            // The demo makes one per run rather than warn at every start (the banner says
            // its links last until a restart); an application sets one that lasts.
            secret: Some(
                std::env::var("STATUS_SUBSCRIPTIONS_SECRET")
                    .unwrap_or_else(|_| format!("{}{}", random_token(), random_token())),
            ),
        },
        notify: quickstart::NotifyConfig {
            webhook: args.notify_webhook,
            slack: args.notify_slack,
            teams: args.notify_teams,
            discord: args.notify_discord,
            hold: Duration::from_secs(args.notify_hold_s),
            secret: args.notify_secret,
            audit: args.notify_audit,
        },
        shed: quickstart::Shed {
            limit: args.shed_limit,
            queue: args.shed_queue,
            queue_timeout: Duration::from_millis(args.shed_queue_timeout_ms),
            deadline: Duration::from_millis(args.shed_deadline_ms),
            lifo_after: (args.shed_lifo_after_ms > 0)
                .then(|| Duration::from_millis(args.shed_lifo_after_ms)),
        },
    };
    if let Some(fleet) = &config.fleet {
        fleet.verify().await.context("--fleet-etcd")?;
    }
    let mut demo = Demo::start(config)?;
    demo.grpc = status_grpc::HealthService::new(&demo.registry)
        .probes(demo.probes.clone())
        .shutdown_grace(Duration::from_millis(args.shutdown_delay_ms));
    // A mistake in what the routes are built of (an unknown readiness group, a short
    // subscriptions' secret) ends the start here, with its message.
    let router = quickstart::try_app(&demo).context("the status routes")?;
    let addr = SocketAddr::new(args.bind, args.port);
    let listener = listen(addr).with_context(|| format!("cannot listen on {addr}"))?;
    println!("status quickstart on http://{addr}/");
    println!("  dashboard: http://{addr}/status   status page: http://{addr}/status/page");
    println!(
        "  dashboard data: http://{addr}/healthcheck   summary: http://{addr}/healthcheck/summary"
    );
    if demo.otlp.is_some() {
        println!("  OpenTelemetry: exporting over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT)");
    }
    if std::env::var_os("STATUS_SUBSCRIPTIONS_SECRET").is_none() {
        println!(
            "  subscriptions: links in mails last until a restart (STATUS_SUBSCRIPTIONS_SECRET keeps them)"
        );
    }
    // A token from the environment is the operator's secret: never echo it.
    let shown = if generated {
        println!("  admin token: {admin_token}");
        admin_token.as_str()
    } else if let Some(auth) = &admin_auth {
        println!(
            "  admin tokens: from STATUS_ADMIN_TOKENS (not shown), operators {}",
            auth.names().join(", ")
        );
        "$TOKEN"
    } else {
        println!("  admin token: from STATUS_ADMIN_TOKEN (not shown)");
        "$STATUS_ADMIN_TOKEN"
    };
    println!(
        "  agents (MCP, streamable HTTP): http://{addr}/mcp with the admin token{}",
        if demo.config.mcp_read_token.is_some() {
            " or STATUS_MCP_TOKEN (read-only)"
        } else {
            ""
        }
    );
    println!(
        "  break something: curl -X PUT -H \"Authorization: Bearer {shown}\" -d '{{\"mode\":\"outage\"}}' http://{addr}/demo/chaos/primary-db"
    );
    if let Some(port) = args.grpc_port {
        let addr = SocketAddr::new(args.bind, port);
        let listener = listen(addr).with_context(|| format!("cannot listen on {addr} for gRPC"))?;
        println!("  gRPC health: {addr} (grpc.health.v1.Health)");
        // Bounded in connections, streams, idle time and log volume: the gRPC port cannot
        // starve the HTTP probes (status_grpc::serve's docs).
        let mut server = status_grpc::serve(
            listener,
            tonic::service::Routes::new(demo.grpc.clone().into_server()),
        )
        .with_stats(Arc::clone(&demo.grpc_stats))
        .grace(Duration::from_millis(args.shutdown_grace_ms));
        if let Some(max) = args.grpc_max_connections {
            server = server.max_connections(max);
        }
        tokio::spawn(async move {
            if let Err(e) = server.await {
                tracing::error!("gRPC health server: {e}");
            }
        });
    }
    let signal = status_http::shutdown::graceful(
        &demo.registry,
        Duration::from_millis(args.shutdown_delay_ms),
    );
    // Culled, the process exits after `--cull-exit-after-ms` if given (requests in flight
    // get the shutdown's grace); else it stays, failing its probes, for its orchestrator.
    let culled = {
        let culler = demo.culler.clone();
        let exit_after = args.cull_exit_after_ms.map(Duration::from_millis);
        async move {
            match exit_after {
                Some(delay) => {
                    culler.culled().await;
                    tracing::warn!("culled: exiting in {delay:?}");
                    tokio::time::sleep(delay).await;
                }
                None => std::future::pending().await,
            }
        }
    };
    let shutdown = async move {
        tokio::select! {
            () = signal => {}
            () = culled => {}
        }
    };
    match args.server {
        Server::Status => {
            status_http::serve(listener, router)
                .with_graceful_shutdown(shutdown)
                .grace(Duration::from_millis(args.shutdown_grace_ms))
                .max_connections(args.max_connections)
                .await?;
        }
        Server::Axum => {
            axum::serve(listener, router)
                .with_graceful_shutdown(shutdown)
                .await?;
        }
    }
    if let Some(history) = &demo.history {
        // What the last second recorded, written before the process ends, and the file let
        // go for whoever starts next.
        history.close().await;
    }
    if let Some(otlp) = demo.otlp.clone() {
        // The last log records and the metrics once more, each bounded by the export timeout.
        tokio::task::spawn_blocking(move || otlp.shutdown())
            .await
            .ok();
    }
    tracing::info!("stopped");
    Ok(())
}

/// A data center's name: 1 to 64 of letters, digits, `.`, `_` and `-`.
fn datacenter_name(name: &str) -> Result<String, String> {
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if valid {
        Ok(name.to_owned())
    } else {
        Err("1 to 64 of letters, digits, '.', '_' and '-'".to_owned())
    }
}

/// A level as `--serve-fails-from` takes it: `MINOR`, `MAJOR` or `OUTAGE`, any case.
fn parse_slo(spec: &str) -> Result<status_history::objective::Objective, String> {
    spec.parse()
        .map_err(|e: status_history::Error| e.to_string())
}

fn parse_level(level: &str) -> Result<status_core::CheckStatus, String> {
    match level.parse::<status_core::CheckStatus>() {
        Ok(status_core::CheckStatus::Ok) | Err(_) => Err(format!(
            "{level:?}: MINOR, MAJOR or OUTAGE (the best level that fails)"
        )),
        Ok(level) => Ok(level),
    }
}

/// An origin a page may be framed by: `scheme://host[:port]`, nothing more.
fn origin(s: &str) -> Result<String, String> {
    if status_http::is_origin(s) {
        Ok(s.to_owned())
    } else {
        Err("an origin is http(s)://host[:port], without a path, a wildcard or a space".into())
    }
}
