use status_checks::memcached::MemcachedCheck;
use status_core::check::{Check, Threshold};
use status_core::CheckStatus;
use tokio::io::AsyncWriteExt;

use crate::servers::{memcached, Silent};
use crate::{healthy_stopped_and_restarted, never_answers_without_leaks};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthy_stopped_and_restarted_server() {
    let mut server = memcached();
    let check = MemcachedCheck::new(format!("127.0.0.1:{}", server.port))
        .latency(Threshold::at_most(1_000.0, 2_000.0, 5_000.0).unwrap());
    healthy_stopped_and_restarted(&mut server, check, "memcached 1.").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out_without_leaks() {
    let silent = Silent::start().await;
    let check = MemcachedCheck::new(format!("127.0.0.1:{}", silent.port));
    never_answers_without_leaks(&silent, check).await;
}

#[tokio::test]
async fn a_peer_that_is_not_memcached_is_an_outage_and_its_flood_is_not_read() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        // First an HTTP server's answer; then a megabyte with no newline.
        let mut first = true;
        while let Ok((mut socket, _)) = listener.accept().await {
            if first {
                let _ = socket.write_all(b"HTTP/1.1 400 Bad Request\r\n").await;
                first = false;
            } else {
                let _ = socket.write_all(&vec![b'x'; 1 << 20]).await;
            }
        }
    });
    let check = MemcachedCheck::new(format!("127.0.0.1:{port}"));
    let outcome = check.check().await;
    assert_eq!(outcome.status(), CheckStatus::Outage);
    assert!(
        outcome.message().contains("unexpected answer"),
        "{}",
        outcome.message()
    );
    let outcome = check.check().await;
    assert_eq!(outcome.status(), CheckStatus::Outage);
    assert!(
        outcome.message().contains("no answer line within"),
        "{}",
        outcome.message()
    );
}
