use status_checks::redis::RedisCheck;
use status_core::check::Threshold;

use crate::servers::{RedisServer, Silent};
use crate::{healthy_stopped_and_restarted, never_answers_without_leaks};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthy_stopped_and_restarted_server() {
    let mut server = RedisServer::start();
    let check = RedisCheck::new(&server.url())
        .unwrap()
        .latency(Threshold::at_most(1_000.0, 2_000.0, 5_000.0).unwrap());
    healthy_stopped_and_restarted(&mut server, check, "PONG in").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out_without_leaks() {
    let silent = Silent::start().await;
    let check = RedisCheck::new(&format!("redis://127.0.0.1:{}/", silent.port)).unwrap();
    never_answers_without_leaks(&silent, check).await;
}
