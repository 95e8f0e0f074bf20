//! `status-sim`: runs the routing study's scenarios and ours, seeded, in virtual time.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use serde::Serialize;
use status_sim::scenario::{self, Run, Scenario, REQUESTS};
use status_sim::{latency_chart, Latency};

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
        /// Seeds to run, e.g. `--seed 1` or `--seed 1,2,3,4,5`.
        #[arg(long, value_delimiter = ',', default_value = "1")]
        seed: Vec<u64>,
        /// Requests per run of the study's scenarios (the burst scenarios keep their shape).
        #[arg(long, default_value_t = REQUESTS)]
        requests: u64,
        /// Only these scenarios (repeat or separate with commas); `status-sim list` names them.
        #[arg(long, value_delimiter = ',')]
        scenario: Vec<String>,
        /// How to print the rows.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Also writes an SVG chart of the latency distributions of the first seed's runs.
        #[arg(long)]
        svg: Option<PathBuf>,
        /// The chart's title (default: "Latency distributions, seed S").
        #[arg(long)]
        title: Option<String>,
    },
    /// Lists the scenarios.
    List,
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
    wall_ms: f64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::List => {
            for s in scenario::all() {
                println!("{:<28} {}", s.name, s.about);
            }
            ExitCode::SUCCESS
        }
        Command::Timelike {
            seed,
            requests,
            scenario: names,
            format,
            svg,
            title,
        } => {
            let scenarios = match pick(&names) {
                Ok(s) => s,
                Err(unknown) => {
                    eprintln!(
                        "status-sim: unknown scenario {unknown:?}; `status-sim list` names them"
                    );
                    return ExitCode::from(2);
                }
            };
            if !(4..=MAX_REQUESTS).contains(&requests) {
                eprintln!(
                    "status-sim: --requests must be between 4 (a middle half to measure) and {MAX_REQUESTS} (memory: under 100 bytes a request)"
                );
                return ExitCode::from(2);
            }
            let mut runs = Vec::new();
            let mut out = std::io::stdout().lock();
            if format == Format::Table {
                let _ = writeln!(out, "{}", table_header());
            }
            for &s in &seed {
                for scenario in &scenarios {
                    let run = scenario.run(s, requests);
                    let line = match format {
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
            if format == Format::Markdown {
                let _ = write!(out, "{}", markdown(&scenarios, &seed, &runs));
            }
            // The wall time is the one thing a seed does not fix: on stderr, so that the
            // table and the Markdown are the same bytes for the same seed.
            if format != Format::Json {
                let total: f64 = runs.iter().map(wall_ms).sum();
                let plural = if runs.len() == 1 { "" } else { "s" };
                eprintln!("status-sim: {} run{plural} in {total:.0} ms", runs.len());
            }
            if let Some(path) = svg {
                let first: Vec<Run> = runs.iter().filter(|r| r.seed == seed[0]).cloned().collect();
                let title =
                    title.unwrap_or_else(|| format!("Latency distributions, seed {}", seed[0]));
                if let Err(e) = std::fs::write(&path, latency_chart(&first, &title)) {
                    eprintln!("status-sim: cannot write {}: {e}", path.display());
                    return ExitCode::FAILURE;
                }
            }
            ExitCode::SUCCESS
        }
    }
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
        scenario: run.scenario,
        seed: run.seed,
        total: s.total,
        selected: s.selected,
        success: s.success,
        request_rate: s.request_rate,
        response_rate: s.response_rate,
        latency: s.latency,
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
fn markdown(scenarios: &[Scenario], seeds: &[u64], runs: &[Run]) -> String {
    let mut md = String::new();
    let seeds_label = seeds
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(
        md,
        "| scenario | success, seeds {seeds_label} | median ms | p99 ms |"
    );
    md.push_str("|---|---|---|---|\n");
    for scenario in scenarios {
        let mine: Vec<&Run> = runs
            .iter()
            .filter(|r| r.scenario == scenario.name)
            .collect();
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
        let _ = writeln!(
            md,
            "| `{}` | {success} | {} | {} |",
            scenario.name,
            range(|r| r.summary.latency.p50),
            range(|r| r.summary.latency.p99),
        );
    }
    md
}
