//! Memory per registered dependency with a full 24 h history:
//! `cargo bench -p status-core --bench memory`.
//!
//! Registers dependencies checked every minute, runs 24 hours of Tokio's paused time so each
//! keeps a full per-minute record and its full ring of transitions, and reports the growth of
//! the process's resident memory per dependency, against the same count registered with no
//! history yet.

use std::time::Duration;

use status_core::check::CheckOutcome;
use status_core::{check, CheckStatus, Dependency, Registry};

const DEPENDENCIES: usize = 1_000;

fn resident_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("Linux /proc");
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

fn main() {
    // `cargo bench` passes `--bench`; ignore arguments.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let before = resident_bytes();
        let registry = Registry::builder().jitter(0.0).build();
        for i in 0..DEPENDENCIES {
            let runs = std::sync::atomic::AtomicU64::new(0);
            let dependency =
                Dependency::builder(
                    format!("dependency-{i:05}"),
                    check::tiered(move || {
                        // Worst case for transitions: change status every 5th check, with a message.
                        let n = runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let status = if (n / 5).is_multiple_of(2) {
                            CheckStatus::Ok
                        } else {
                            CheckStatus::Minor
                        };
                        async move {
                            CheckOutcome::new(status, format!("check number {n} said {status}"))
                        }
                    }),
                )
                .description("a dependency of the memory benchmark")
                .period(Duration::from_secs(60))
                .timeout(Duration::from_secs(5))
                .build()
                .unwrap();
            registry.add(dependency).unwrap();
        }
        registry.refresh_all().await;
        let registered = resident_bytes();
        tokio::time::sleep(Duration::from_secs(24 * 3600)).await;
        let _ = registry.report();
        let full = resident_bytes();

        let history = registry.history("dependency-00000").unwrap();
        assert_eq!(history.uptime.last_day, Some(1.0));
        println!("dependencies: {DEPENDENCIES}");
        println!(
            "per dependency: {} transitions kept, {} minutes in the last hour's record",
            history.transitions.len(),
            history.last_hour.len()
        );
        println!(
            "registered, checked once: {:.1} KiB per dependency",
            per_dependency(registered.saturating_sub(before))
        );
        println!(
            "with a full 24 h history: {:.1} KiB per dependency",
            per_dependency(full.saturating_sub(before))
        );
    });
}

#[allow(clippy::cast_precision_loss)]
fn per_dependency(bytes: usize) -> f64 {
    bytes as f64 / DEPENDENCIES as f64 / 1024.0
}
