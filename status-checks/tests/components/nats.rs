use status_checks::nats::NatsCheck;
use status_core::check::{Check, Threshold};
use status_core::CheckStatus;

use crate::servers::{hostile, nats, Process, Silent};
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

/// Credentials in the URL log in, a user and password or a token; wrong ones are refused,
/// and the server's words said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_in_the_url_log_in_and_wrong_ones_are_refused() {
    let users = Process::start(
        "nats-server",
        &[
            "-a",
            "127.0.0.1",
            "-p",
            "{port}",
            "--user",
            "app",
            "--pass",
            "s3cr%t",
        ],
    );
    let ok = NatsCheck::new(&format!("nats://app:s3cr%25t@127.0.0.1:{}", users.port))
        .unwrap()
        .check()
        .await;
    assert_eq!(ok.status(), CheckStatus::Ok, "{}", ok.message());
    let wrong = NatsCheck::new(&format!("nats://app:nope@127.0.0.1:{}", users.port))
        .unwrap()
        .check()
        .await;
    assert_eq!(wrong.status(), CheckStatus::Outage);
    assert!(
        wrong.message().contains("Authorization Violation"),
        "{}",
        wrong.message()
    );
    assert!(!wrong.message().contains("nope"), "{}", wrong.message());

    let token = Process::start(
        "nats-server",
        &["-a", "127.0.0.1", "-p", "{port}", "--auth", "t0ken"],
    );
    let ok = NatsCheck::new(&format!("nats://t0ken@127.0.0.1:{}", token.port))
        .unwrap()
        .check()
        .await;
    assert_eq!(ok.status(), CheckStatus::Ok, "{}", ok.message());
    let none = NatsCheck::new(&format!("nats://127.0.0.1:{}", token.port))
        .unwrap()
        .check()
        .await;
    assert_eq!(none.status(), CheckStatus::Outage, "{}", none.message());
}

/// A server that greets as NATS does and then streams a line without end, or announces a
/// message of 2 GiB, is read 64 KiB at most: the run fails at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_its_greeting_a_line_without_end_is_read_64_kib_at_most() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    for (what, after) in [
        ("without ending a line", b"-ERR '".as_slice()),
        ("announced a message", b"MSG a 1 2147483647\r\n".as_slice()),
    ] {
        let port = hostile(move |mut peer| async move {
            let _ = peer
                .write_all(b"INFO {\"server_id\":\"x\",\"version\":\"2.10.0\"}\r\n")
                .await;
            let mut connect = [0u8; 256];
            let _ = peer.read(&mut connect).await;
            if peer.write_all(after).await.is_err() {
                return;
            }
            let junk = vec![b'x'; 1 << 20];
            for _ in 0..200 {
                if peer.write_all(&junk).await.is_err() {
                    return;
                }
            }
        })
        .await;
        let check = NatsCheck::new(&format!("nats://127.0.0.1:{port}")).unwrap();
        let outcome = tokio::time::timeout(std::time::Duration::from_secs(5), check.check())
            .await
            .expect("the check answers at once");
        assert_eq!(outcome.status(), CheckStatus::Outage);
        assert!(outcome.message().contains(what), "{}", outcome.message());
    }
}
