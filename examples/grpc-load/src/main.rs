//! The gRPC health service under load, against a server of its own in a child process:
//!
//! 1. `Check` against `Say`, a hello-world unary method of the same tonic server: ten
//!    alternated pairs, the ratio of calls a second (median), as the target asks.
//! 2. Thousands of `Watch` streams open at once: the server's resident memory each (from
//!    `/proc`), and how long one change takes to reach them all.
//!
//! Run with `cargo run --release -p grpc-load -- [--watches N]`.

use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use status_core::{check, CheckStatus, Dependency, Registry, Urgency};
use status_grpc::pb::health_client::HealthClient;
use status_grpc::pb::HealthCheckRequest;
use status_grpc::HealthService;
use tokio::io::{AsyncBufReadExt, BufReader};
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};

mod bench {
    #![allow(missing_docs, unreachable_pub, clippy::pedantic, clippy::all)]
    tonic::include_proto!("bench");
}

use bench::hello_client::HelloClient;
use bench::hello_server::{Hello, HelloServer};
use bench::Empty;

#[derive(Parser)]
struct Args {
    /// Serve (the child process): the health service and Hello on this port.
    #[arg(long)]
    serve: Option<u16>,
    /// Seconds per side of each pair.
    #[arg(long, default_value_t = 2)]
    seconds: u64,
    /// Alternated pairs of Check and Say.
    #[arg(long, default_value_t = 10)]
    pairs: usize,
    /// Calls in flight at once.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Watch streams to open.
    #[arg(long, default_value_t = 10_000)]
    watches: usize,
    /// Watch streams per connection.
    #[arg(long, default_value_t = 100)]
    per_connection: usize,
}

/// Hello: `Say` answers at once; `Flip` flips the dependency `db`.
struct Bench {
    registry: Registry,
    db: Arc<Mutex<CheckStatus>>,
}

#[tonic::async_trait]
impl Hello for Bench {
    async fn say(&self, _: Request<Empty>) -> Result<Response<Empty>, Status> {
        Ok(Response::new(Empty {}))
    }

    async fn flip(&self, _: Request<Empty>) -> Result<Response<Empty>, Status> {
        {
            let mut db = self.db.lock().unwrap();
            *db = if *db == CheckStatus::Ok {
                CheckStatus::Outage
            } else {
                CheckStatus::Ok
            };
        }
        self.registry.refresh_all().await;
        Ok(Response::new(Empty {}))
    }
}

async fn serve(port: u16) -> anyhow::Result<()> {
    let registry = Registry::builder().jitter(0.0).build();
    let db = Arc::new(Mutex::new(CheckStatus::Ok));
    let status = Arc::clone(&db);
    registry.add(
        Dependency::builder(
            "db",
            check::tiered(move || {
                let status = *status.lock().unwrap();
                async move { status }
            }),
        )
        .urgency(Urgency::Required)
        .failures_before_outage(1)
        .period(Duration::from_secs(3600))
        .build()?,
    )?;
    registry.refresh_all().await;
    // Every stream of this load comes from one address over a few connections: the caps that
    // keep one client from taking every slot would refuse it, so they are lifted here.
    let health = HealthService::new(&registry)
        .max_watches(1_000_000)
        .max_watches_per_connection(10_000)
        .max_watches_per_peer(1_000_000);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("ready");
    tonic::transport::Server::builder()
        .add_service(health.into_server())
        .add_service(HelloServer::new(Bench { registry, db }))
        .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
        .await?;
    Ok(())
}

/// Calls made in `seconds` by `concurrency` tasks over `channels`, a second.
async fn rate(channels: &[Channel], concurrency: usize, seconds: u64, health: bool) -> f64 {
    let calls = Arc::new(AtomicU64::new(0));
    let end = Instant::now() + Duration::from_secs(seconds);
    let tasks: Vec<_> = (0..concurrency)
        .map(|i| {
            let channel = channels[i % channels.len()].clone();
            let calls = Arc::clone(&calls);
            tokio::spawn(async move {
                let mut check = HealthClient::new(channel.clone());
                let mut say = HelloClient::new(channel);
                while Instant::now() < end {
                    let ok = if health {
                        check
                            .check(HealthCheckRequest {
                                service: Vec::new(),
                            })
                            .await
                            .is_ok()
                    } else {
                        say.say(Empty {}).await.is_ok()
                    };
                    if ok {
                        calls.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
    calls.load(Ordering::Relaxed) as f64 / seconds as f64
}

/// The resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .context("no VmRSS")
}

async fn connect(address: &str) -> anyhow::Result<Channel> {
    Ok(Endpoint::from_shared(address.to_owned())?.connect().await?)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(port) = args.serve {
        return serve(port).await;
    }
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0")?;
        probe.local_addr()?.port()
    };
    let mut child = tokio::process::Command::new(std::env::current_exe()?)
        .args(["--serve", &port.to_string()])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id().context("the server's pid")?;
    let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
    anyhow::ensure!(
        lines.next_line().await?.as_deref() == Some("ready"),
        "the server did not start"
    );
    let address = format!("http://127.0.0.1:{port}");

    // 1. Check against Say, alternated.
    let channels: Vec<Channel> =
        futures::future::try_join_all((0..4).map(|_| connect(&address))).await?;
    rate(&channels, args.concurrency, 1, false).await; // warm-up
    let (mut ratios, mut checks, mut says) = (Vec::new(), Vec::new(), Vec::new());
    for pair in 0..args.pairs {
        let (check, say) = if pair % 2 == 0 {
            let say = rate(&channels, args.concurrency, args.seconds, false).await;
            (
                rate(&channels, args.concurrency, args.seconds, true).await,
                say,
            )
        } else {
            let check = rate(&channels, args.concurrency, args.seconds, true).await;
            (
                check,
                rate(&channels, args.concurrency, args.seconds, false).await,
            )
        };
        ratios.push(check / say);
        checks.push(check);
        says.push(say);
    }
    println!("| call | calls/s (median) |");
    println!("|---|---|");
    println!("| `Say` (hello world) | {:.0} |", median(says));
    println!("| `Check` (\"\") | {:.0} |", median(checks));
    println!();
    println!(
        "Check ÷ Say, median of {} alternated pairs of {} s ({} calls in flight over 4 connections): **{:.3}**",
        args.pairs,
        args.seconds,
        args.concurrency,
        median(ratios)
    );
    println!();

    // 2. Watches: memory each, and one change to them all.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = rss_kib(pid)?;
    let connections = args.watches.div_ceil(args.per_connection);
    let watch_channels: Vec<Channel> =
        futures::future::try_join_all((0..connections).map(|_| connect(&address))).await?;
    let (arrived_tx, mut arrived) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let opened = Arc::new(AtomicU64::new(0));
    let mut readers = Vec::with_capacity(args.watches);
    for i in 0..args.watches {
        let mut client = HealthClient::new(watch_channels[i / args.per_connection].clone());
        let arrived = arrived_tx.clone();
        let opened = Arc::clone(&opened);
        readers.push(tokio::spawn(async move {
            let mut stream = client
                .watch(HealthCheckRequest {
                    service: Vec::new(),
                })
                .await
                .expect("a watch")
                .into_inner();
            let first = stream.message().await.expect("a first message");
            assert!(first.is_some());
            opened.fetch_add(1, Ordering::Relaxed);
            if let Ok(Some(_)) = stream.message().await {
                let _ = arrived.send(Instant::now());
            }
            // Keep the stream open until the end.
            let _ = stream.message().await;
        }));
    }
    while opened.load(Ordering::Relaxed) < args.watches as u64 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = rss_kib(pid)?;
    let per_stream = (after.saturating_sub(before)) as f64 * 1024.0 / args.watches as f64;
    let mut hello = HelloClient::new(channels[0].clone());
    let flipped = Instant::now();
    hello.flip(Empty {}).await?;
    let mut last = flipped;
    for _ in 0..args.watches {
        let at = tokio::time::timeout(Duration::from_secs(30), arrived.recv())
            .await
            .context("every watcher hears of the change within 30 s")?
            .context("a watcher")?;
        last = last.max(at);
    }
    println!("| open Watch streams | server memory before | after | each | one change reaches them all in |");
    println!("|---|---|---|---|---|");
    println!(
        "| {} ({} connections) | {:.1} MiB | {:.1} MiB | {:.0} B | {:.1} ms |",
        args.watches,
        connections,
        before as f64 / 1024.0,
        after as f64 / 1024.0,
        per_stream,
        (last - flipped).as_secs_f64() * 1000.0
    );
    for reader in readers {
        reader.abort();
    }
    child.kill().await?;
    Ok(())
}
