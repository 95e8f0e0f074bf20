use lapin::options::{BasicPublishOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Connection, ConnectionProperties};
use status_checks::amqp::AmqpCheck;
use status_core::check::{Check, Threshold};
use status_core::CheckStatus;

use crate::servers::{hostile, rabbitmq, Silent};
use crate::{healthy_stopped_and_restarted, never_answers_without_leaks};

/// One RabbitMQ for the whole file: it takes seconds to start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_healthy_stopped_restarted_and_a_queue_graded_by_its_depth() {
    let mut server = rabbitmq();
    let url = format!("amqp://guest:guest@127.0.0.1:{}/%2f", server.port);

    // Five messages waiting in `orders`, published by a client of the test's own.
    let publisher = Connection::connect(&url, ConnectionProperties::default())
        .await
        .unwrap();
    let channel = publisher.create_channel().await.unwrap();
    channel
        .queue_declare(
            "orders".into(),
            QueueDeclareOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    for i in 0..5 {
        channel
            .basic_publish(
                "".into(),
                "orders".into(),
                BasicPublishOptions::default(),
                format!("order {i}").as_bytes(),
                BasicProperties::default(),
            )
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let depth = AmqpCheck::new(&url)
        .unwrap()
        .queue_depth("orders", Threshold::at_most(3.0, 10.0, 100.0).unwrap());
    let outcome = depth.check().await;
    assert_eq!(
        outcome.status(),
        CheckStatus::Minor,
        "{}",
        outcome.message()
    );
    assert_eq!(outcome.value(), Some(5.0));
    assert!(
        outcome.message().contains("5 messages ready in orders"),
        "{}",
        outcome.message()
    );
    // The connection survives a missing queue: the next run reads again.
    let missing = AmqpCheck::new(&url).unwrap().queue_depth(
        "no-such-queue",
        Threshold::at_most(3.0, 10.0, 100.0).unwrap(),
    );
    for _ in 0..2 {
        let outcome = missing.check().await;
        assert_eq!(
            outcome.status(),
            CheckStatus::Major,
            "{}",
            outcome.message()
        );
        assert!(
            outcome.message().contains("no-such-queue"),
            "{}",
            outcome.message()
        );
    }
    drop(publisher);

    let check = AmqpCheck::new(&url)
        .unwrap()
        .latency(Threshold::at_most(1_000.0, 2_000.0, 5_000.0).unwrap());
    healthy_stopped_and_restarted(&mut server, check, "channel opened").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_that_never_answers_times_out_without_leaks() {
    let silent = Silent::start().await;
    let check =
        AmqpCheck::new(&format!("amqp://guest:guest@127.0.0.1:{}/%2f", silent.port)).unwrap();
    never_answers_without_leaks(&silent, check).await;
}

#[test]
fn urls_that_are_not_amqp_are_refused_without_their_password() {
    let error = AmqpCheck::new("http://app:hunter2@127.0.0.1:5672/").unwrap_err();
    assert!(!error.to_string().contains("hunter2"), "{error}");
}

/// A peer that answers the protocol header by declaring a 2 GiB frame is refused before the
/// client believes it: twenty runs leave no thread and no descriptor behind (each run left a
/// `lapin-io-loop` thread, a socket and two descriptors).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_declaring_a_huge_frame_leaves_nothing_behind() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let port = hostile(|mut peer| async move {
        let mut header = [0u8; 8];
        if peer.read_exact(&mut header).await.is_err() {
            return;
        }
        // A method frame on channel 0 of 2 GiB, then nothing.
        let _ = peer.write_all(&[1, 0, 0, 0x80, 0, 0, 0]).await;
        let mut rest = Vec::new();
        let _ = peer.read_to_end(&mut rest).await;
    })
    .await;
    let check = AmqpCheck::new(&format!("amqp://guest:guest@127.0.0.1:{port}/%2f")).unwrap();
    twenty_refusals_leave_nothing_behind(&check).await;
}

/// The first run, then twenty more, each refused for the frame it declared; after them, no
/// thread and no descriptor more than after the first.
async fn twenty_refusals_leave_nothing_behind(check: &AmqpCheck) {
    let count = |dir: &str| std::fs::read_dir(dir).unwrap().count();
    let first = tokio::time::timeout(std::time::Duration::from_secs(5), check.check())
        .await
        .expect("the check answers");
    assert_eq!(first.status(), CheckStatus::Outage, "{}", first.message());
    assert!(
        first.message().contains("declared a first frame"),
        "{}",
        first.message()
    );
    let (threads, fds) = (count("/proc/self/task"), count("/proc/self/fd"));
    for _ in 0..20 {
        let outcome = tokio::time::timeout(std::time::Duration::from_secs(5), check.check())
            .await
            .expect("the check answers");
        assert_eq!(outcome.status(), CheckStatus::Outage);
        assert!(
            outcome.message().contains("declared a first frame"),
            "{}",
            outcome.message()
        );
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(
        count("/proc/self/task") <= threads + 1,
        "threads {threads} → {}",
        count("/proc/self/task")
    );
    assert!(
        count("/proc/self/fd") <= fds + 2,
        "descriptors {fds} → {}",
        count("/proc/self/fd")
    );
}

/// The same over `amqps://`: the broker's first frame is read after the TLS handshake (the
/// broker verified by a private CA, as lapin then verifies it), bounded: twenty runs against
/// a peer declaring a 2 GiB frame leave nothing behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_a_peer_declaring_a_huge_frame_leaves_nothing_behind() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let ca = crate::tls::Ca::new();
    let (cert, key) = ca.leaf(-1, 30);
    let acceptor = crate::tls::acceptor(&cert, &key);
    let port = hostile(move |peer| {
        let acceptor = acceptor.clone();
        async move {
            let Ok(mut peer) = acceptor.accept(peer).await else {
                return;
            };
            let mut header = [0u8; 8];
            if peer.read_exact(&mut header).await.is_err() {
                return;
            }
            let _ = peer.write_all(&[1, 0, 0, 0x80, 0, 0, 0]).await;
            let _ = peer.flush().await;
            let mut rest = Vec::new();
            let _ = peer.read_to_end(&mut rest).await;
        }
    })
    .await;
    let check = AmqpCheck::new(&format!("amqps://guest:guest@localhost:{port}/%2f"))
        .unwrap()
        .roots_pem(ca.pem().as_bytes())
        .unwrap();
    twenty_refusals_leave_nothing_behind(&check).await;

    // Untrusted (the web's roots, not this CA): refused at the handshake, said.
    let untrusted = AmqpCheck::new(&format!("amqps://guest:guest@localhost:{port}/%2f")).unwrap();
    let outcome = untrusted.check().await;
    assert_eq!(outcome.status(), CheckStatus::Outage);
    assert!(outcome.message().contains("TLS"), "{}", outcome.message());
}

#[test]
fn roots_that_are_not_pem_certificates_are_refused() {
    let check = AmqpCheck::new("amqps://guest:guest@localhost:5671/%2f").unwrap();
    assert!(check
        .roots_pem(b"not a certificate")
        .unwrap_err()
        .is_invalid());
}
