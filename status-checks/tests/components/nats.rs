use status_checks::nats::NatsCheck;
use status_core::check::{Check, Threshold};
use status_core::CheckStatus;

use crate::servers::{nats, Silent};
use crate::{healthy_stopped_and_restarted, never_answers_without_leaks};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthy_stopped_and_restarted_server() {
    let mut server = nats(true);
    let check = NatsCheck::new(&format!("nats://127.0.0.1:{}", server.port))
        .unwrap()
        .jetstream(true)
        .latency(Threshold::at_most(1_000.0, 2_000.0, 5_000.0).unwrap());
    healthy_stopped_and_restarted(&mut server, check, "nats-server 2.").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_asked_for_and_missing_is_major_while_core_nats_is_ok() {
    let server = nats(false);
    let url = format!("nats://127.0.0.1:{}", server.port);
    let core = NatsCheck::new(&url).unwrap().check().await;
    assert_eq!(core.status(), CheckStatus::Ok, "{}", core.message());
    let with_jetstream = NatsCheck::new(&url).unwrap().jetstream(true).check().await;
    assert_eq!(
        with_jetstream.status(),
        CheckStatus::Major,
        "{}",
        with_jetstream.message()
    );
    assert!(
        with_jetstream
            .message()
            .starts_with("JetStream is not available"),
        "{}",
        with_jetstream.message()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out_without_leaks() {
    let silent = Silent::start().await;
    let check = NatsCheck::new(&format!("nats://127.0.0.1:{}", silent.port)).unwrap();
    never_answers_without_leaks(&silent, check).await;
}

#[test]
fn urls_that_are_not_nats_are_refused() {
    assert!(NatsCheck::new("http://127.0.0.1:4222").is_err());
    assert!(NatsCheck::new("nats://").is_err());
    assert!(NatsCheck::new("nats://:4222").is_err());
}
