//! Every check against a server that means harm, in a process of its own (so that threads and
//! descriptors counted are the checks' alone): a peer that stays silent, one that streams a
//! line without end, one that declares a huge frame (in the check's own protocol) and then
//! waits, and one that drips a byte every 50 ms. Each check runs twenty times against each,
//! bounded by a timeout as the registry bounds it; then the process's threads, descriptors
//! and resident memory are where they were after a warm-up, and every run failed rather than
//! hung; and while they run, resident memory never rises past 64 MiB (sampled every 2 ms).
//! (The TCP check only connects: any peer that accepts passes it. The TLS file check's FIFO,
//! `/dev/zero` and hung mounts are `components::tls`'s.)
#![cfg(all(
    feature = "redis",
    feature = "etcd",
    feature = "postgres",
    feature = "http",
    feature = "net",
    feature = "tls",
    feature = "memcached",
    feature = "nats",
    feature = "mysql",
    feature = "amqp"
))]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use status_core::check::{Check, CheckOutcome};
use status_core::CheckStatus;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The registry's bound on one run, as a dependency's timeout.
const TIMEOUT: Duration = Duration::from_millis(250);
/// Runs against each peer.
const RUNS: usize = 20;
/// Runs at once (the registry runs one at a time per dependency; a fleet of dependencies
/// several).
const AT_ONCE: usize = 20;

/// How a hostile peer behaves once connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    /// Reads whatever comes, never writes.
    Silent,
    /// Writes the protocol's opening, then bytes without a line's end, without end.
    Endless,
    /// Writes a frame or length header declaring gigabytes, then only reads.
    Huge,
    /// Writes the protocol's opening a byte every 50 ms.
    Drip,
}

const PEERS: [Peer; 4] = [Peer::Silent, Peer::Endless, Peer::Huge, Peer::Drip];

/// What each protocol's server says first (or in answer), to be endless, and its declared
/// huge frame.
struct Protocol {
    opening: &'static [u8],
    huge: &'static [u8],
}

/// Serves `peer` speaking `protocol` on a free port.
async fn serve(peer: Peer, protocol: &'static Protocol) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(behave(stream, peer, protocol));
        }
    });
    port
}

async fn behave(mut stream: TcpStream, peer: Peer, protocol: &'static Protocol) {
    let (mut reader, mut writer) = stream.split();
    let drain = async {
        let mut buffer = [0u8; 4096];
        while matches!(reader.read(&mut buffer).await, Ok(n) if n > 0) {}
    };
    let talk = async {
        match peer {
            Peer::Silent => std::future::pending::<()>().await,
            Peer::Endless => {
                if writer.write_all(protocol.opening).await.is_err() {
                    return;
                }
                let junk = vec![b'x'; 64 << 10];
                // Up to 256 MiB: far past any bound, and the peer gives up first.
                for _ in 0..4096 {
                    if writer.write_all(&junk).await.is_err() {
                        return;
                    }
                }
            }
            Peer::Huge => {
                let _ = writer.write_all(protocol.huge).await;
                std::future::pending::<()>().await;
            }
            Peer::Drip => {
                for byte in protocol.opening.iter().cycle() {
                    if writer.write_all(&[*byte]).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    };
    // Ends when the check hangs up (its reads end) or a write fails.
    tokio::select! {
        () = drain => {}
        () = talk => {}
    }
}

/// The process's threads, descriptors and resident bytes.
fn footprint() -> (usize, usize, u64) {
    let count = |dir: &str| std::fs::read_dir(dir).map_or(0, Iterator::count);
    let resident = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0)
        * 4096;
    (count("/proc/self/task"), count("/proc/self/fd"), resident)
}

/// Runs `check` `runs` times, at most [`AT_ONCE`] at a time, each bounded by [`TIMEOUT`]: how many
/// failed (timed out, or said so); none may be OK.
async fn run<C: Check>(check: &Arc<C>, runs: usize) -> usize {
    let mut failed = 0;
    let at_once = runs.min(AT_ONCE);
    for _ in 0..runs.div_ceil(at_once) {
        let batch: Vec<_> = (0..at_once)
            .map(|_| {
                let check = Arc::clone(check);
                tokio::spawn(async move { tokio::time::timeout(TIMEOUT, check.check()).await })
            })
            .collect();
        for outcome in batch {
            match outcome.await.unwrap() {
                Err(_) => failed += 1,
                Ok(outcome) => {
                    let outcome: CheckOutcome = outcome;
                    assert_ne!(
                        outcome.status(),
                        CheckStatus::Ok,
                        "a hostile peer passed: {}",
                        outcome.message()
                    );
                    failed += 1;
                }
            }
        }
    }
    failed
}

/// `name`'s check, made by `make` for a port, against every hostile peer: a warm-up, then
/// [`RUNS`] runs each, and the footprint where the warm-up left it. What went wrong, if
/// anything.
async fn suite<C, F>(name: &str, protocol: &'static Protocol, make: F) -> Vec<String>
where
    C: Check,
    F: Fn(u16) -> C,
{
    let mut checks = Vec::new();
    for peer in PEERS {
        let port = serve(peer, protocol).await;
        let check = Arc::new(make(port));
        // The warm-up: pools, resolvers and the runtime's threads as they will stay.
        run(&check, 5).await;
        checks.push((peer, check));
    }
    settle().await;
    let (threads, fds, resident) = footprint();
    let mut peaks = Vec::new();
    for (peer, check) in &checks {
        let sampler = Sampler::start();
        assert_eq!(run(check, RUNS).await, RUNS, "{name} against {peer:?}");
        peaks.push((*peer, sampler.peak().saturating_sub(resident)));
    }
    settle().await;
    let (threads_after, fds_after, resident_after) = footprint();
    let grown = resident_after.saturating_sub(resident);
    eprintln!(
        "{name}: threads {threads} → {threads_after}, descriptors {fds} → {fds_after}, \
         resident +{} KiB; at most +{:?} MiB during the runs",
        grown >> 10,
        peaks.iter().map(|(p, b)| (*p, b >> 20)).collect::<Vec<_>>()
    );
    let mut wrong = Vec::new();
    if threads_after > threads + 2 {
        wrong.push(format!(
            "{name}: threads {threads} → {threads_after} after {RUNS} runs against each peer"
        ));
    }
    if fds_after > fds + 4 {
        wrong.push(format!(
            "{name}: descriptors {fds} → {fds_after} after {RUNS} runs against each peer"
        ));
    }
    if grown >= 64 << 20 {
        wrong.push(format!(
            "{name}: resident memory grew {} MiB over {RUNS} runs against each peer",
            grown >> 20
        ));
    }
    for (peer, peak) in peaks {
        if peak >= 64 << 20 {
            wrong.push(format!(
                "{name} against {peer:?}: resident memory rose {} MiB during {RUNS} runs at once",
                peak >> 20
            ));
        }
    }
    wrong
}

/// Samples the resident memory every 2 ms on a thread of its own (the runtime's may be
/// busy), until asked for the highest it saw.
struct Sampler {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<u64>,
}

impl Sampler {
    fn start() -> Self {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let thread = std::thread::spawn({
            let stop = Arc::clone(&stop);
            move || {
                let mut peak = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    peak = peak.max(footprint().2);
                    std::thread::sleep(Duration::from_millis(2));
                }
                peak
            }
        });
        Self { stop, thread }
    }

    fn peak(self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

/// Lets hung-up peers' tasks end and descriptors close.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}

fn on_runtime<F: Future<Output = ()>>(test: F) {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(test);
}

#[test]
fn every_check_is_bounded_whatever_its_server_sends() {
    use status_checks::amqp::AmqpCheck;
    use status_checks::etcd::EtcdCheck;
    use status_checks::http::HttpCheck;
    use status_checks::memcached::MemcachedCheck;
    use status_checks::mysql::MysqlCheck;
    use status_checks::nats::NatsCheck;
    use status_checks::postgres::PostgresCheck;
    use status_checks::redis::RedisCheck;
    use status_checks::tls::TlsCheck;

    static REDIS: Protocol = Protocol {
        opening: b"+",
        huge: b"$2147483647\r\n",
    };
    // An authentication request whose length says 2 GiB.
    static POSTGRES: Protocol = Protocol {
        opening: b"R\x00\x00\x00\x08\x00\x00\x00\x00E",
        huge: b"R\x7f\xff\xff\xff",
    };
    // A greeting packet of 16 MiB less one, continued without end.
    static MYSQL: Protocol = Protocol {
        opening: b"\xff\xff\xff\x00\x0a",
        huge: b"\xff\xff\xff\x00",
    };
    static MEMCACHED: Protocol = Protocol {
        opening: b"VERSION ",
        huge: b"VALUE k 0 2147483647\r\n",
    };
    static NATS: Protocol = Protocol {
        opening: b"INFO {\"server_id\":\"",
        huge: b"INFO {}\r\nMSG a 1 2147483647\r\n",
    };
    // A greeting as a server's, then the same after the client's CONNECT.
    static NATS_AFTER: Protocol = Protocol {
        opening: b"INFO {\"server_id\":\"x\"}\r\n-ERR '",
        huge: b"INFO {\"server_id\":\"x\"}\r\nMSG a 1 2147483647\r\n",
    };
    // A method frame on channel 0 of 2 GiB.
    static AMQP: Protocol = Protocol {
        opening: b"\x01\x00\x00\x00\x10\x00\x00",
        huge: b"\x01\x00\x00\x80\x00\x00\x00",
    };
    // An HTTP/2 frame header of 16 MiB (the largest length a frame can declare).
    static H2: Protocol = Protocol {
        opening: b"\x00\x00\x00\x04\x00\x00\x00\x00\x00",
        huge: b"\xff\xff\xff\x00\x00\x00\x00\x00\x00",
    };
    static HTTP: Protocol = Protocol {
        opening: b"HTTP/1.1 200 OK\r\nX-Endless: ",
        huge: b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\nok",
    };
    // A TLS handshake record of the largest length a record can declare.
    static TLS: Protocol = Protocol {
        opening: b"\x16\x03\x03\x40\x00\x02",
        huge: b"\x16\x03\x03\xff\xff",
    };

    on_runtime(async {
        let mut wrong = Vec::new();
        wrong.extend(
            suite("redis", &REDIS, |port| {
                RedisCheck::new(&format!("redis://127.0.0.1:{port}/")).unwrap()
            })
            .await,
        );
        wrong.extend(
            suite("postgres", &POSTGRES, |port| {
                PostgresCheck::new(&format!(
                    "host=127.0.0.1 port={port} user=app dbname=app connect_timeout=5"
                ))
                .unwrap()
            })
            .await,
        );
        wrong.extend(
            suite("mysql", &MYSQL, |port| {
                MysqlCheck::new(&format!("mysql://app:pw@127.0.0.1:{port}/app")).unwrap()
            })
            .await,
        );
        wrong.extend(
            suite("memcached", &MEMCACHED, |port| {
                MemcachedCheck::new(format!("127.0.0.1:{port}"))
            })
            .await,
        );
        wrong.extend(
            suite("nats", &NATS, |port| {
                NatsCheck::new(&format!("nats://127.0.0.1:{port}")).unwrap()
            })
            .await,
        );
        wrong.extend(
            suite("nats after its greeting", &NATS_AFTER, |port| {
                NatsCheck::new(&format!("nats://127.0.0.1:{port}")).unwrap()
            })
            .await,
        );
        wrong.extend(
            suite("amqp", &AMQP, |port| {
                AmqpCheck::new(&format!("amqp://guest:guest@127.0.0.1:{port}/%2f")).unwrap()
            })
            .await,
        );
        wrong.extend(
            suite("etcd", &H2, |port| {
                EtcdCheck::new(&format!("http://127.0.0.1:{port}")).unwrap()
            })
            .await,
        );
        wrong.extend(
            suite("http", &HTTP, |port| {
                HttpCheck::new(&format!("http://127.0.0.1:{port}/"))
                    .unwrap()
                    .body_contains("ok")
            })
            .await,
        );
        wrong.extend(
            suite("tls", &TLS, |port| {
                TlsCheck::remote(&format!("127.0.0.1:{port}"))
                    .unwrap()
                    .server_name("example.com")
                    .unwrap()
            })
            .await,
        );
        assert!(wrong.is_empty(), "{wrong:#?}");
    });
}
