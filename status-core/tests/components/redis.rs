use std::time::Duration;

use status_core::check::redis::RedisCheck;
use status_core::check::Threshold;
use status_core::{CheckStatus, TIMED_OUT};

use crate::servers::{RedisServer, Silent};
use crate::{alive_tasks, refresh, refresh_until, registry_with, tasks_settle_to};

const TIMEOUT: Duration = Duration::from_secs(1);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthy_stopped_and_restarted() {
    let mut server = RedisServer::start();
    let check = RedisCheck::new(&server.url())
        .unwrap()
        .latency(Threshold::at_most(1_000.0, 2_000.0, 5_000.0).unwrap());
    let registry = registry_with(check, TIMEOUT).await;

    let healthy = refresh(&registry).await;
    assert_eq!(healthy.status, CheckStatus::Ok, "{}", healthy.message);
    assert!(
        healthy.message.starts_with("PONG in"),
        "{}",
        healthy.message
    );
    assert!(healthy.observed_value.is_some_and(|ms| ms >= 0.0));

    server.stop();
    let stopped = refresh(&registry).await;
    assert_eq!(stopped.status, CheckStatus::Outage);
    assert!(stopped.duration <= TIMEOUT, "{:?}", stopped.duration);
    assert!(stopped.thrown.is_some(), "the error chain is kept");

    server.restart();
    let recovered = refresh_until(&registry, 20, |r| r.status == CheckStatus::Ok).await;
    assert_eq!(recovered.status, CheckStatus::Ok, "{}", recovered.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out_without_leaks() {
    let silent = Silent::start().await;
    let check = RedisCheck::new(&format!("redis://127.0.0.1:{}/", silent.port)).unwrap();
    let registry = registry_with(check, Duration::from_millis(300)).await;
    assert!(silent.all_closed().await, "the first connection was closed");
    let baseline = alive_tasks();
    for _ in 0..3 {
        let result = refresh(&registry).await;
        assert_eq!(result.status, CheckStatus::Outage);
        assert_eq!(result.message, TIMED_OUT);
    }
    assert!(
        silent.all_closed().await,
        "every connection was closed after its timeout"
    );
    assert!(
        tasks_settle_to(baseline).await,
        "no task outlived its check: {} alive, {baseline} before",
        alive_tasks()
    );
}
