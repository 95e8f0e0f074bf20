//! The engine at scale: `cargo bench -p status-core --bench scale`.
//!
//! 10,000 dependencies checked every second, on a multi-threaded runtime with the machine's
//! cores, for 20 seconds of real time. Reports the CPU the scheduler and checks take, the
//! resident memory per dependency, and the time to rebuild and to serialize the detailed
//! report.

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use status_core::{check, CheckStatus, Dependency, Registry, Urgency};

const DEPENDENCIES: usize = 10_000;
const WINDOW: Duration = Duration::from_secs(20);

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("Linux /proc");
    statm
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 4096
}

/// CPU seconds this process used, user and system.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Fields after the command name (which is in parentheses): utime is 14th, stime 15th.
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let hz: f64 = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0);
    #[allow(clippy::cast_precision_loss)]
    let seconds = ticks as f64 / hz;
    seconds
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

#[allow(clippy::cast_precision_loss)]
fn main() {
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let checks = Arc::new(AtomicU64::new(0));
        let before = resident_bytes();
        let registry = Registry::builder().appname("scale").build();
        for i in 0..DEPENDENCIES {
            let checks = Arc::clone(&checks);
            registry
                .add(
                    Dependency::builder(
                        format!("dependency-{i:05}"),
                        check::tiered(move || {
                            checks.fetch_add(1, Ordering::Relaxed);
                            async { (CheckStatus::Ok, "fine") }
                        }),
                    )
                    .urgency(Urgency::ALL[i % 4])
                    .period(Duration::from_secs(1))
                    .timeout(Duration::from_secs(2))
                    .build()
                    .unwrap(),
                )
                .unwrap();
        }
        // Warm up: every dependency checked a few times, jitter spread out.
        tokio::time::sleep(Duration::from_secs(5)).await;
        let registered = resident_bytes();

        let (cpu0, checks0, wall0) = (cpu_seconds(), checks.load(Ordering::Relaxed), Instant::now());
        tokio::time::sleep(WINDOW).await;
        let (cpu1, checks1, wall) = (cpu_seconds(), checks.load(Ordering::Relaxed), wall0.elapsed());
        let cpu = cpu1 - cpu0;
        let ran = checks1 - checks0;

        let mut rebuild = Vec::new();
        let mut serialize = Vec::new();
        for _ in 0..10 {
            // Past report_max_age (1 s) with checks running, the next read rebuilds.
            tokio::time::sleep(Duration::from_millis(1100)).await;
            let t = Instant::now();
            let report = registry.report();
            rebuild.push(t.elapsed());
            let t = Instant::now();
            let bytes = serde_json::to_vec(&*report).unwrap();
            serialize.push(t.elapsed());
            assert!(bytes.len() > DEPENDENCIES * 100);
        }
        let t = Instant::now();
        for _ in 0..1000 {
            std::hint::black_box(registry.report());
        }
        let cached = t.elapsed() / 1000;

        println!("machine: {cores} cores; {DEPENDENCIES} dependencies, period 1 s, window {} s", WINDOW.as_secs());
        println!(
            "checks run: {ran} ({:.0}/s, {:.2} per dependency per second)",
            ran as f64 / wall.as_secs_f64(),
            ran as f64 / wall.as_secs_f64() / DEPENDENCIES as f64
        );
        println!(
            "CPU: {:.1}% of one core ({:.1}% of the machine), {:.1} µs per check",
            cpu / wall.as_secs_f64() * 100.0,
            cpu / wall.as_secs_f64() * 100.0 / cores as f64,
            cpu / ran as f64 * 1e6
        );
        println!(
            "memory: {:.1} KiB resident per dependency (after 5 s of checks)",
            registered.saturating_sub(before) as f64 / DEPENDENCIES as f64 / 1024.0
        );
        println!(
            "detailed report: rebuild {:.2} ms, serialize to JSON {:.2} ms (medians of 10); cached read {:?}",
            median(rebuild).as_secs_f64() * 1e3,
            median(serialize).as_secs_f64() * 1e3,
            cached
        );
    });
}
