//! A seed gives one schedule.

use std::time::Duration;

use status_core::{Clock, Registry};
use tokio::time::Instant;

use crate::support::{epoch, Steered};

async fn check_instants(seed: u64) -> Vec<Vec<Duration>> {
    let start = Instant::now();
    let registry = Registry::builder()
        .clock(Clock::tokio_starting_at(epoch()))
        .jitter(0.5)
        .seed(seed)
        .build();
    let checks: Vec<Steered> = (0..4).map(|_| Steered::ok()).collect();
    for (i, check) in checks.iter().enumerate() {
        check.register(&registry, &format!("dep-{i}"), |d| {
            d.period(Duration::from_secs(10))
        });
    }
    tokio::time::sleep(Duration::from_secs(120)).await;
    drop(registry);
    checks
        .iter()
        .map(|c| c.started().iter().map(|t| *t - start).collect())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn two_registries_with_one_seed_check_at_the_same_instants() {
    let a = check_instants(7).await;
    let b = check_instants(7).await;
    let c = check_instants(8).await;
    assert!(a.iter().all(|runs| runs.len() >= 8), "{a:?}");
    assert_eq!(a, b);
    assert_ne!(a, c, "another seed, another schedule");
    // The jitter spreads each dependency differently.
    assert_ne!(a[0], a[1]);
}
