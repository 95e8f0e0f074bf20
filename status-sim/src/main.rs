//! `status-sim`: runs the routing study's scenarios and ours, seeded, in virtual time.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use serde::Serialize;
use status_sim::scenario::{self, Run, Scenario, REQUESTS};
use status_sim::topology::{self, Topology};
use status_sim::{latency_chart, Latency, Load};

#[derive(Debug, Parser)]
#[command(
    name = "status-sim",
    version,
    about = "A seeded discrete-event simulator of request routing that runs status-traffic's real mechanisms"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Runs the routing study's scenarios and ours: one row per scenario and seed.
    Timelike {
        /// Requests per run of the study's scenarios (the burst scenarios keep their shape).
        #[arg(long, default_value_t = REQUESTS)]
        requests: u64,
        /// Only these scenarios (repeat or separate with commas); `status-sim list` names them.
        #[arg(long, value_delimiter = ',')]
        scenario: Vec<String>,
        #[command(flatten)]
        output: Output,
    },
    /// Runs a topology written as text, e.g.
    /// `retry 3 > lb-min-conn hold=1000 250 x (cable 2 > faulty 20000 1000 > queue-exclusive >
    /// delay-fixed 20 > delay-exponential 100 > server)`; the stages and their options are in
    /// status-sim's README. Alternatives written `{a,b,c}` run one topology per combination
    /// (at most 64), side by side: `hold={0,250,1000}`.
    Run {
        /// The topology, from the client down.
        #[arg(long)]
        topology: String,
        /// Requests in the run.
        #[arg(long, default_value_t = REQUESTS)]
        requests: u64,
        /// The mean gap between requests, in ms (exponential gaps: a Poisson load).
        #[arg(long, default_value_t = scenario::MEAN_GAP)]
        gap: f64,
        /// The name its rows carry.
        #[arg(long, default_value = "custom")]
        name: String,
        #[command(flatten)]
        output: Output,
    },
    /// A fleet of instances following status-fleet's real tracker, beating into a modelled
    /// store: the store lost for a while (back empty), a data center failing. Prints when
    /// the instances' views went stale, failed open, were fresh again, and took the data
    /// center out and back.
    Fleet {
        /// Instances, spread evenly over the data centers (1 to 100,000).
        #[arg(long, default_value_t = 1_000)]
        instances: usize,
        /// Data centers (2 to 64; `dc-1` is the one that fails).
        #[arg(long, default_value_t = 3)]
        datacenters: usize,
        /// The store's TTL, in ms (300 to 600,000).
        #[arg(long, default_value_t = 3_000)]
        ttl: u64,
        /// How long the store is lost, in ms, from 20 s in (0: never).
        #[arg(long, default_value_t = 10_000)]
        store_lost: u64,
        /// The seed of the beats' phases.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Also writes the SVG chart of the run.
        #[arg(long)]
        svg: Option<PathBuf>,
    },
    /// Lists the scenarios.
    List,
}

/// What to run with, and how to print it.
#[derive(Debug, clap::Args)]
struct Output {
    /// Seeds to run, e.g. `--seed 1` or `--seed 1,2,3,4,5`.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    seed: Vec<u64>,
    /// How to print the rows.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Also writes an SVG chart of the latency distributions of the first seed's runs.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// The chart's title (default: "Latency distributions, seed S").
    #[arg(long)]
    title: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// Aligned columns for a terminal.
    Table,
    /// One JSON object per line.
    Json,
    /// A Markdown table with one row per scenario and the seeds side by side.
    Markdown,
}

/// The most requests a run may issue.
const MAX_REQUESTS: u64 = 20_000_000;

/// A JSON line; the fields in this order.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Row<'a> {
    scenario: &'a str,
    seed: u64,
    total: usize,
    selected: usize,
    success: f64,
    request_rate: f64,
    response_rate: f64,
    latency: Latency,
    #[serde(skip_serializing_if = "is_zero")]
    extra_load: f64,
    wall_ms: f64,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's signature
fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// A refusal of the command line: said on stderr, exit status 2.
fn usage(message: &str) -> ExitCode {
    eprintln!("status-sim: {message}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Fleet {
            instances,
            datacenters,
            ttl,
            store_lost,
            seed,
            svg,
        } => fleet(instances, datacenters, ttl, store_lost, seed, svg.as_ref()),
        Command::List => {
            for s in scenario::all() {
                println!("{:<28} {}", s.name, s.about);
            }
            ExitCode::SUCCESS
        }
        Command::Timelike {
            requests,
            scenario: names,
            output,
        } => {
            let scenarios = match pick(&names) {
                Ok(s) => s,
                Err(unknown) => {
                    return usage(&format!(
                        "unknown scenario {unknown:?}; `status-sim list` names them"
                    ))
                }
            };
            if let Err(message) = check_requests(requests) {
                return usage(&message);
            }
            let names: Vec<&str> = scenarios.iter().map(|s| s.name).collect();
            report(&output, &names, |seed, i| scenarios[i].run(seed, requests))
        }
        Command::Run {
            topology,
            requests,
            gap,
            name,
            output,
        } => {
            if let Err(message) = check_requests(requests) {
                return usage(&message);
            }
            if !(gap.is_finite() && gap >= 0.0) {
                return usage("--gap must be a number of ms, finite and not negative");
            }
            let variants = match topology::variants(&topology) {
                Ok(variants) => variants,
                Err(e) => return usage(&format!("--topology: {e}")),
            };
            // Each read once, up front: a bad topology is refused before anything runs.
            let mut named: Vec<(String, Topology)> = Vec::with_capacity(variants.len());
            for (label, text) in &variants {
                let topology = match Topology::parse(text) {
                    Ok(topology) => topology,
                    Err(e) if label.is_empty() => return usage(&format!("--topology: {e}")),
                    Err(e) => return usage(&format!("--topology ({label}): {e}")),
                };
                let name = if label.is_empty() {
                    name.clone()
                } else {
                    format!("{name} {label}")
                };
                named.push((name, topology));
            }
            let names: Vec<&str> = named.iter().map(|(name, _)| name.as_str()).collect();
            let load = Load::poisson(requests, gap);
            report(&output, &names, |seed, i| {
                let (name, topology) = &named[i];
                scenario::measure(name, seed, &load, |sim| topology.build(sim))
            })
        }
    }
}

/// `status-sim fleet`: runs the scenario, prints its figures, writes its chart.
fn fleet(
    instances: usize,
    datacenters: usize,
    ttl: u64,
    store_lost: u64,
    seed: u64,
    svg: Option<&PathBuf>,
) -> ExitCode {
    use status_sim::fleet::{self, FleetScenario};
    if !(1..=100_000).contains(&instances) {
        return usage("--instances must be between 1 and 100000");
    }
    if !(2..=64).contains(&datacenters) {
        return usage("--datacenters must be between 2 and 64");
    }
    if !(300..=600_000).contains(&ttl) {
        return usage("--ttl must be between 300 and 600000 ms");
    }
    if store_lost > 600_000 {
        return usage("--store-lost must be at most 600000 ms");
    }
    let lost_at = 20_000;
    let back = lost_at + store_lost;
    let fails = back + 5 * ttl;
    let scenario = FleetScenario {
        instances,
        datacenters,
        ttl,
        store_lost: (store_lost > 0).then_some((lost_at, back)),
        datacenter_fails: Some((fails, fails + 10_000)),
        duration: fails + 10_000 + 5 * ttl,
        seed,
        ..FleetScenario::default()
    };
    let started = std::time::Instant::now();
    let samples = fleet::run(&scenario);
    let figures = fleet::figures(&scenario, &samples);
    let secs = |ms: u64| format!("{:.1} s", ms as f64 / 1e3);
    let pair = |p: Option<(u64, u64)>| {
        p.map_or_else(
            || "never".to_owned(),
            |(first, last)| format!("first after {}, all after {}", secs(first), secs(last)),
        )
    };
    let one = |p: Option<u64>| p.map_or_else(|| "never".to_owned(), secs);
    println!(
        "{instances} instances, {datacenters} data centers, TTL {}, beats every {}",
        secs(ttl),
        secs(ttl / 3)
    );
    if let Some((from, to)) = scenario.store_lost {
        println!(
            "store lost at {}, back (empty) at {}:",
            secs(from),
            secs(to)
        );
        println!("  views stale:        {}", pair(figures.stale));
        println!("  views failing open: {}", pair(figures.fail_open));
        println!(
            "  all fresh again:    {} after it came back",
            one(figures.fresh_again)
        );
    }
    if let Some((from, to)) = scenario.datacenter_fails {
        println!("dc-1 OUTAGE at {}, recovered at {}:", secs(from), secs(to));
        println!("  taken out:          {}", pair(figures.dc1_out));
        println!(
            "  back for all:       {} after it recovered",
            one(figures.dc1_back)
        );
    }
    eprintln!(
        "status-sim: {} samples in {:.0} ms",
        samples.len(),
        started.elapsed().as_secs_f64() * 1e3
    );
    if let Some(path) = svg {
        if let Err(e) = std::fs::write(path, fleet::chart(&scenario, &samples)) {
            eprintln!("status-sim: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn check_requests(requests: u64) -> Result<(), String> {
    if (4..=MAX_REQUESTS).contains(&requests) {
        Ok(())
    } else {
        Err(format!(
            "--requests must be between 4 (a middle half to measure) and {MAX_REQUESTS} (memory: under 100 bytes a request)"
        ))
    }
}

/// Runs each of `names` with each seed (`run` is given the seed and the name's index),
/// printing the rows as `output` says.
fn report(output: &Output, names: &[&str], run: impl Fn(u64, usize) -> Run) -> ExitCode {
    let mut runs = Vec::new();
    let mut out = std::io::stdout().lock();
    if output.format == Format::Table {
        let _ = writeln!(out, "{}", table_header());
    }
    for &seed in &output.seed {
        for i in 0..names.len() {
            let run = run(seed, i);
            let line = match output.format {
                Format::Table => table_row(&run),
                Format::Json => json_row(&run),
                Format::Markdown => String::new(),
            };
            if !line.is_empty() {
                let _ = writeln!(out, "{line}");
            }
            runs.push(run);
        }
    }
    if output.format == Format::Markdown {
        let _ = write!(out, "{}", markdown(names, &output.seed, &runs));
    }
    // The wall time is the one thing a seed does not fix: on stderr, so that the table and
    // the Markdown are the same bytes for the same seed.
    if output.format != Format::Json {
        let total: f64 = runs.iter().map(wall_ms).sum();
        let plural = if runs.len() == 1 { "" } else { "s" };
        eprintln!("status-sim: {} run{plural} in {total:.0} ms", runs.len());
    }
    if let Some(path) = &output.svg {
        let first_seed = output.seed[0];
        let first: Vec<Run> = runs
            .iter()
            .filter(|r| r.seed == first_seed)
            .cloned()
            .collect();
        let title = output
            .title
            .clone()
            .unwrap_or_else(|| format!("Latency distributions, seed {first_seed}"));
        if let Err(e) = std::fs::write(path, latency_chart(&first, &title)) {
            eprintln!("status-sim: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// The scenarios named (all when none is); the first unknown name as the error.
fn pick(names: &[String]) -> Result<Vec<Scenario>, String> {
    if names.is_empty() {
        return Ok(scenario::all());
    }
    names
        .iter()
        .map(|n| scenario::find(n).ok_or_else(|| n.clone()))
        .collect()
}

fn wall_ms(run: &Run) -> f64 {
    run.wall.as_secs_f64() * 1000.0
}

fn json_row(run: &Run) -> String {
    let s = &run.summary;
    serde_json::to_string(&Row {
        scenario: &run.scenario,
        seed: run.seed,
        total: s.total,
        selected: s.selected,
        success: s.success,
        request_rate: s.request_rate,
        response_rate: s.response_rate,
        latency: s.latency,
        extra_load: run.extra_load,
        wall_ms: wall_ms(run),
    })
    .expect("a row serializes")
}

fn table_header() -> String {
    format!(
        "{:<28} {:>4} {:>8} {:>8} {:>8} {:>6} {:>8} {:>8} {:>8} {:>8}",
        "scenario", "seed", "success", "req/s", "resp/s", "min", "p50", "p95", "p99", "max",
    )
}

fn table_row(run: &Run) -> String {
    let s = &run.summary;
    let l = &s.latency;
    format!(
        "{:<28} {:>4} {:>7.2}% {:>8.1} {:>8.1} {:>6.0} {:>8.1} {:>8.1} {:>8.1} {:>8.0}",
        run.scenario,
        run.seed,
        s.success * 100.0,
        s.request_rate,
        s.response_rate,
        l.min,
        l.p50,
        l.p95,
        l.p99,
        l.max,
    )
}

/// One row per scenario: success per seed, then the range over seeds of the median and 99th
/// percentile latencies.
fn markdown(names: &[&str], seeds: &[u64], runs: &[Run]) -> String {
    let mut md = String::new();
    let seeds_label = seeds
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(
        md,
        "| scenario | success, seeds {seeds_label} | median ms | p99 ms | extra load |"
    );
    md.push_str("|---|---|---|---|---|\n");
    for name in names {
        let mine: Vec<&Run> = runs.iter().filter(|r| r.scenario == *name).collect();
        let success = mine
            .iter()
            .map(|r| format!("{:.2} %", r.summary.success * 100.0))
            .collect::<Vec<_>>()
            .join(" · ");
        let range = |f: fn(&Run) -> f64| {
            let (lo, hi) = mine
                .iter()
                .map(|r| f(r))
                .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
            if (hi - lo).abs() < 0.05 {
                format!("{lo:.0}")
            } else {
                format!("{lo:.0}–{hi:.0}")
            }
        };
        let extra = if mine.iter().all(|r| r.extra_load == 0.0) {
            "—".to_owned()
        } else {
            let (lo, hi) = mine.iter().fold((f64::MAX, f64::MIN), |(a, b), r| {
                (a.min(r.extra_load), b.max(r.extra_load))
            });
            format!("{:.1}–{:.1} %", lo * 100.0, hi * 100.0)
        };
        let _ = writeln!(
            md,
            "| `{name}` | {success} | {} | {} | {extra} |",
            range(|r| r.summary.latency.p50),
            range(|r| r.summary.latency.p99),
        );
    }
    md
}
