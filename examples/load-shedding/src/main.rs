//! Runs the load-shedding experiments over real sockets against a fresh quickstart app for
//! each route, writes a chart per experiment and the raw answers, and prints the figures as
//! Markdown.
//!
//! `cargo run --release -p load-shedding` (about 3 minutes; `--scale 0.5` halves it).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use load_shedding::{csv, drive, svg, Experiment, Record, Summary};
use quickstart::{app, Config, Cull, Demo, LimitChoice, Shed};

#[derive(Debug, Parser)]
#[command(about = "The load-shedding article's experiments, against the quickstart's routes")]
struct Args {
    /// Multiplies every phase's length (1.0: the full experiments, about 3 minutes in all).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// `burst`, `slowdown` or `both`.
    #[arg(long, default_value = "both")]
    experiment: String,
    /// Where the charts go.
    #[arg(long, default_value = "docs")]
    charts: PathBuf,
    /// Where the answers go, as CSV.
    #[arg(long, default_value = "target/load-shedding")]
    data: PathBuf,
    /// The layer's limit: fixed:N, aimd, gradient2 or vegas.
    #[arg(long, default_value = "gradient2")]
    shed_limit: LimitChoice,
    /// Requests that may wait beyond the limit: the workers' capacity over the queue timeout
    /// (8 / 0.3 s × 1 s ≈ 26), a little less.
    #[arg(long, default_value_t = 24)]
    shed_queue: usize,
    /// How long a request may wait, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    shed_queue_timeout_ms: u64,
    /// How long a request may take in all, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    shed_deadline_ms: u64,
    /// Newest first once the oldest has waited this long, in milliseconds (0: first come,
    /// first served).
    #[arg(long, default_value_t = 250)]
    shed_lifo_after_ms: u64,
    /// How long the client waits for an answer before it gives up, in milliseconds.
    #[arg(long, default_value_t = 60_000)]
    client_timeout_ms: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.scale > 0.0, "--scale must be positive");
    let experiments = match args.experiment.as_str() {
        "burst" => vec![Experiment::burst(args.scale)],
        "slowdown" => vec![Experiment::slowdown(args.scale)],
        "both" => vec![
            Experiment::burst(args.scale),
            Experiment::slowdown(args.scale),
        ],
        other => anyhow::bail!("--experiment {other:?}: use burst, slowdown or both"),
    };
    let shed = Shed {
        limit: args.shed_limit,
        queue: args.shed_queue,
        queue_timeout: Duration::from_millis(args.shed_queue_timeout_ms),
        deadline: Duration::from_millis(args.shed_deadline_ms),
        lifo_after: (args.shed_lifo_after_ms > 0)
            .then(|| Duration::from_millis(args.shed_lifo_after_ms)),
    };
    std::fs::create_dir_all(&args.charts)?;
    std::fs::create_dir_all(&args.data)?;
    let protected_label = format!(
        "/demo/work, behind the layer: {}, queue {}, queue timeout {} ms, deadline {} ms, {}",
        shed.limit,
        shed.queue,
        args.shed_queue_timeout_ms,
        args.shed_deadline_ms,
        shed.lifo_after.map_or_else(
            || "first come first served".to_owned(),
            |d| format!("newest first after {} ms", d.as_millis())
        )
    );
    println!(
        "Load-shedding experiments, scale {}; {} CPUs; each route against a fresh quickstart app over loopback.",
        args.scale,
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    for experiment in &experiments {
        eprintln!("{}: /demo/work…", experiment.name);
        let (protected, culling) = run(experiment, "/demo/work", shed, &args).await?;
        eprintln!("{}: /demo/work-unprotected…", experiment.name);
        let (bare, _) = run(experiment, "/demo/work-unprotected", shed, &args).await?;
        let (p, b) = (
            Summary::of(experiment, &protected),
            Summary::of(experiment, &bare),
        );
        for (route, records) in [("protected", &protected), ("unprotected", &bare)] {
            let file = args.data.join(format!("{}-{route}.csv", experiment.name));
            std::fs::write(&file, csv(records)).with_context(|| format!("{}", file.display()))?;
        }
        let chart = svg::chart(
            experiment,
            &[
                svg::Run {
                    label: &protected_label,
                    records: &protected,
                    summary: &p,
                    deadline: Some(shed.deadline),
                },
                svg::Run {
                    label:
                        "/demo/work-unprotected: the same handler and workers, without the layer",
                    records: &bare,
                    summary: &b,
                    deadline: None,
                },
            ],
        );
        let file = args
            .charts
            .join(format!("load-shedding-{}.svg", experiment.name));
        std::fs::write(&file, chart).with_context(|| format!("{}", file.display()))?;
        println!();
        println!("### {}", experiment.title);
        println!();
        println!("Chart: `{}`", file.display());
        println!();
        table(
            experiment,
            &[("`/demo/work`", &p), ("`/demo/work-unprotected`", &b)],
        );
        let refused: usize = p
            .codes
            .iter()
            .filter(|(code, _)| matches!(code, 429 | 503))
            .map(|(_, n)| n)
            .sum();
        println!();
        println!(
            "Self-culling on `/demo/work` (threshold {}, no minimum uptime): {} failures counted of {refused} refusals; {}.",
            culling.threshold,
            culling.failures,
            if culling.culled { "**culled**" } else { "not culled" }
        );
    }
    Ok(())
}

fn table(experiment: &Experiment, rows: &[(&str, &Summary)]) {
    let secs = |d: Duration| format!("{:.2} s", d.as_secs_f64());
    println!(
        "| route | slowest 200 | disturbance p50 / p99 | goodput during it (capacity {:.1}/s) | first 200 sent after it | normal again after | p50, last quarter | answers |",
        experiment.capacity()
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (route, s) in rows {
        let codes: Vec<String> = s.codes.iter().map(|(c, n)| format!("{c}: {n}")).collect();
        println!(
            "| {route} | {} | {} / {} | {:.1}/s ({:.0} %) | {} | {} | {} | {} |",
            secs(s.slowest_ok),
            secs(s.disturbed_p50),
            secs(s.disturbed_p99),
            s.goodput,
            s.goodput_share * 100.0,
            s.first_ok_after.map_or_else(|| "never".to_owned(), secs),
            secs(s.normal_after),
            secs(s.tail_p50),
            codes.join(", ")
        );
    }
}

/// What the culler made of a run: a burst is overload, not failure, so it must count none.
struct Culling {
    threshold: u64,
    failures: u64,
    culled: bool,
}

/// Plays `experiment` against `route` of a fresh quickstart app served on loopback, its culler
/// free to cull from the start.
async fn run(
    experiment: &Experiment,
    route: &str,
    shed: Shed,
    args: &Args,
) -> anyhow::Result<(Vec<Record>, Culling)> {
    let demo = Demo::start(Config {
        demo_workers: experiment.workers,
        shed,
        cull: Cull {
            min_uptime: Duration::ZERO,
            ..Cull::default()
        },
        ..Config::default()
    })?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let router = app(&demo);
    let server = tokio::spawn(async move { status_http::serve(listener, router).await });
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(1024)
        .build_http();
    let timeout = Duration::from_millis(args.client_timeout_ms);
    let records = drive(experiment, route, |path| {
        let client = client.clone();
        let uri = format!("http://{addr}{path}");
        async move {
            let answer = async {
                let response = client.get(uri.parse().ok()?).await.ok()?;
                let code = response.status().as_u16();
                response.into_body().collect().await.ok()?;
                Some(code)
            };
            tokio::time::timeout(timeout, answer)
                .await
                .ok()
                .flatten()
                .unwrap_or(0)
        }
    })
    .await;
    // One more look of the culler after the run.
    tokio::time::sleep(demo.config.cull.interval.mul_f64(1.3)).await;
    server.abort();
    let culling = Culling {
        threshold: demo.config.cull.threshold,
        failures: demo.failures.count().0,
        culled: demo.culler.state().culled,
    };
    Ok((records, culling))
}
