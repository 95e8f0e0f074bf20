use status_checks::nats::NatsCheck;
use status_core::check::{Check, Threshold};
use status_core::CheckStatus;

use crate::servers::{hostile, nats, Silent};
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

/// A peer that streams a greeting without end, or sends no NATS greeting at all, is read
/// at most 64 KiB: the check fails at once and the process's memory stays flat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_greeting_without_end_is_read_64_kib_at_most() {
    use tokio::io::AsyncWriteExt;
    let port = hostile(|mut peer| async move {
        let _ = peer.write_all(b"INFO {\"server_id\":\"").await;
        let junk = vec![b'x'; 1 << 20];
        // 200 MB, as the adversarial pass sent; the check stops reading long before.
        for _ in 0..200 {
            if peer.write_all(&junk).await.is_err() {
                return;
            }
        }
    })
    .await;
    let resident = || {
        std::fs::read_to_string("/proc/self/statm")
            .ok()
            .and_then(|s| {
                s.split_whitespace()
                    .nth(1)
                    .and_then(|p| p.parse::<u64>().ok())
            })
            .unwrap_or(0)
            * 4096
    };
    let check = NatsCheck::new(&format!("nats://127.0.0.1:{port}")).unwrap();
    let first = check.check().await;
    assert_eq!(first.status(), CheckStatus::Outage, "{}", first.message());
    let before = resident();
    for _ in 0..20 {
        let outcome = check.check().await;
        assert_eq!(outcome.status(), CheckStatus::Outage);
        assert!(
            outcome.message().contains("without ending its greeting"),
            "{}",
            outcome.message()
        );
    }
    let grown = resident().saturating_sub(before);
    assert!(
        grown < 32 << 20,
        "resident memory grew {grown} bytes over 20 runs"
    );
}
