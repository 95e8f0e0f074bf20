use std::time::Duration;

use status_checks::system::{disk_space, process_memory};
use status_core::check::Threshold;
use status_core::CheckStatus;

use crate::{refresh, registry_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_space_is_graded() {
    let any = registry_with(
        disk_space("/", Threshold::at_least(0.0, 0.0, 0.0).unwrap()),
        Duration::from_secs(5),
    )
    .await;
    let result = refresh(&any).await;
    assert_eq!(result.status(), CheckStatus::Ok, "{}", result.message());
    let percent = result.observed_value().unwrap();
    assert!((0.0..=100.0).contains(&percent), "{percent}");

    // No file system is 100 % free: below every limit.
    let impossible = registry_with(
        disk_space("/", Threshold::at_least(100.0, 100.0, 100.0).unwrap()),
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(refresh(&impossible).await.status(), CheckStatus::Outage);

    let missing = registry_with(
        disk_space("/no/such/path", Threshold::at_least(0.0, 0.0, 0.0).unwrap()),
        Duration::from_secs(5),
    )
    .await;
    let result = refresh(&missing).await;
    assert_eq!(result.status(), CheckStatus::Outage);
    assert!(result.thrown().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn process_memory_is_graded() {
    let generous = registry_with(
        process_memory(Threshold::at_most(1e9, 1e9, 1e9).unwrap()),
        Duration::from_secs(5),
    )
    .await;
    let result = refresh(&generous).await;
    assert_eq!(result.status(), CheckStatus::Ok, "{}", result.message());
    assert!(result.observed_value().unwrap() > 0.0);

    let tiny = registry_with(
        process_memory(Threshold::at_most(0.0, 0.0, 0.0).unwrap()),
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(refresh(&tiny).await.status(), CheckStatus::Outage);
}
