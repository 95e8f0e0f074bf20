//! What the OTLP listener adds to each check run, in CPU time: 1,000 dependencies refreshed 50
//! times on a registry with the export attached and on one without, alternately, the CPU time
//! of the whole process (every thread's, from `/proc/self/task/*/schedstat`) compared once
//! the listener has caught up. The export's own sending is kept out (its interval is an
//! hour): this is the recording, on the listener thread, of a histogram point per run.
//!
//! `cargo bench -p status-otel --bench recording`
// A measurement of its own, not criterion: it counts CPU time, not wall time.
#![allow(missing_docs)]

use std::time::Duration;

use status_core::{check, CheckStatus, Dependency, Registry};
use status_otel::Otlp;

const DEPENDENCIES: usize = 1_000;
const ROUNDS: usize = 50;

/// CPU time of every thread of this process so far, in nanoseconds.
fn cpu_ns() -> u64 {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| {
            let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
            stat.split_whitespace().next()?.parse::<u64>().ok()
        })
        .sum()
}

fn registry() -> Registry {
    let registry = Registry::builder().jitter(0.0).build();
    for i in 0..DEPENDENCIES {
        registry
            .add(
                Dependency::builder(
                    format!("dep-{i:04}"),
                    check::tiered(|| async { (CheckStatus::Ok, "fine") }),
                )
                .period(Duration::from_secs(3600))
                .build()
                .unwrap(),
            )
            .unwrap();
    }
    registry
}

/// CPU nanoseconds per check run for `ROUNDS` refreshes of every dependency of `registry`,
/// listeners included (waited for).
async fn per_run(registry: &Registry) -> f64 {
    let before = cpu_ns();
    for _ in 0..ROUNDS {
        registry.refresh_all().await;
    }
    // The listener thread records what it was sent; a second is more than it needs, and
    // sleeping costs no CPU.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        registry.dropped_listener_events(),
        0,
        "the listener kept up"
    );
    (cpu_ns() - before) as f64 / (ROUNDS * DEPENDENCIES) as f64
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let bare = registry();
        let exported = registry();
        let otlp = Otlp::builder()
            .endpoint("http://127.0.0.1:9")
            .interval(Duration::from_secs(3600))
            .dependency(false)
            .start(&exported)
            .unwrap();
        // Warm both: allocations, the histogram's series.
        per_run(&bare).await;
        per_run(&exported).await;
        let (mut without, mut with) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            without.push(per_run(&bare).await);
            with.push(per_run(&exported).await);
        }
        without.sort_by(f64::total_cmp);
        with.sort_by(f64::total_cmp);
        let (a, b) = (without[2], with[2]);
        println!("CPU per check run, median of 5 × {ROUNDS} × {DEPENDENCIES} runs:");
        println!("  without the export: {a:>8.0} ns");
        println!("  with the export:    {:>8.0} ns  ({:.2}x)", b, b / a);
        println!(
            "  added: {:.0} ns a run; 1,000 dependencies every 10 s: {:.4} % of a core",
            b - a,
            (b - a) * 100.0 / 1e9 * 100.0
        );
        tokio::task::spawn_blocking(move || otlp.shutdown())
            .await
            .unwrap();
    });
}
