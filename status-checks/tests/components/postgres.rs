use std::time::Duration;

use status_checks::postgres::PostgresCheck;
use status_core::check::Threshold;

use crate::servers::{PostgresServer, Silent};
use crate::{
    alive_tasks, healthy_stopped_and_restarted, never_answers_without_leaks, registry_with,
    tasks_settle_to, three_timeouts,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthy_stopped_and_restarted_server() {
    let mut server = PostgresServer::start();
    let check = PostgresCheck::new(&server.config())
        .unwrap()
        .latency(Threshold::at_most(1_000.0, 2_000.0, 5_000.0).unwrap());
    healthy_stopped_and_restarted(&mut server, check, "query answered in").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out_without_leaks() {
    let silent = Silent::start().await;
    let check = PostgresCheck::new(&format!(
        "host=127.0.0.1 port={} user=postgres",
        silent.port
    ))
    .unwrap();
    never_answers_without_leaks(&silent, check).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_that_hangs_times_out_and_closes_its_connection() {
    let server = PostgresServer::start();
    let check = PostgresCheck::new(&server.config())
        .unwrap()
        .query("SELECT pg_sleep(30)");
    let registry = registry_with(check, Duration::from_millis(300)).await;
    assert!(tasks_settle_to(alive_tasks()).await);
    let baseline = alive_tasks();
    three_timeouts(&registry).await;
    // Without closing the connection, each run would leave its socket's task waiting 30 s for
    // pg_sleep to answer.
    assert!(
        tasks_settle_to(baseline).await,
        "a connection outlived its check: {} tasks alive, {baseline} before",
        alive_tasks()
    );
}
