//! A node of the quickstart's pool fails, then recovers, under steady open-loop load over
//! real sockets; each node's share of the answers and the share of successes, second by
//! second, as a table and an SVG chart, and how long the failed nodes took to get a fair
//! share back.
//!
//! `cargo run --release -p node-pool` (75 s: node 1 fails for 35 s; `--failing-s` and
//! `--after-s` change it). Every node failing together, for 3 s:
//! `cargo run --release -p node-pool -- --failing all --failing-s 3 --chart docs/node-pool-all.svg`.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use quickstart::{app, Config, Demo};
use tokio::task::JoinSet;
use tokio::time::Instant;

#[derive(Debug, Parser)]
#[command(about = "A node of the quickstart's pool fails and recovers under load")]
struct Args {
    /// Requests per second, evenly spaced.
    #[arg(long, default_value_t = 200)]
    rate: u32,
    /// Seconds of health before node 1 fails.
    #[arg(long, default_value_t = 10)]
    before_s: u64,
    /// Which nodes fail: one node's index, or `all`.
    #[arg(long, default_value = "1")]
    failing: String,
    /// Seconds they fail.
    #[arg(long, default_value_t = 35)]
    failing_s: u64,
    /// Seconds after it recovers.
    #[arg(long, default_value_t = 30)]
    after_s: u64,
    /// Where the chart goes.
    #[arg(long, default_value = "docs/node-pool.svg")]
    chart: PathBuf,
}

const TOKEN: &str = "node-pool-example";
const NODES: usize = 3;

/// One answer: when it was sent (s from the start), its code, the node named in it.
type Answer = (f64, u16, Option<usize>);

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let failing: Vec<usize> = match args.failing.as_str() {
        "all" => (0..NODES).collect(),
        one => match one.parse::<usize>() {
            Ok(node) if node < NODES => vec![node],
            _ => anyhow::bail!("--failing takes a node's index below {NODES}, or `all`"),
        },
    };
    let demo = Demo::start(Config {
        admin_token: TOKEN.to_owned(),
        pool_nodes: NODES,
        ..Config::default()
    })?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let router = app(&demo);
    let server = tokio::spawn(async move { status_http::serve(listener, router).await });
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(256)
        .build_http();
    let admin: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let set = |mode: &'static str| {
        let admin = admin.clone();
        let failing = failing.clone();
        async move {
            for node in failing {
                let request = hyper::Request::put(format!("http://{addr}/demo/pool/nodes/{node}"))
                    .header("authorization", format!("Bearer {TOKEN}"))
                    .body(Full::new(Bytes::from(format!(r#"{{"mode":"{mode}"}}"#))))
                    .expect("a request");
                let status = admin.request(request).await.map(|r| r.status().as_u16());
                anyhow::ensure!(
                    matches!(status, Ok(200)),
                    "PUT node {node} {mode}: {status:?}"
                );
            }
            Ok(())
        }
    };
    let who = if failing.len() == NODES {
        "every node".to_owned()
    } else {
        format!("node {}", failing[0])
    };

    let (fail_at, recover_at) = (args.before_s, args.before_s + args.failing_s);
    let length = recover_at + args.after_s;
    let gap = Duration::from_secs(1) / args.rate;
    let start = Instant::now();
    let mut answers = JoinSet::new();
    let (mut failed, mut recovered) = (false, false);
    let mut at = Duration::ZERO;
    eprintln!(
        "{length} s at {} requests/s; {who} fails from {fail_at} s to {recover_at} s",
        args.rate
    );
    while at < Duration::from_secs(length) {
        tokio::time::sleep_until(start + at).await;
        if !failed && at >= Duration::from_secs(fail_at) {
            set("error").await?;
            failed = true;
        }
        if !recovered && at >= Duration::from_secs(recover_at) {
            set("ok").await?;
            recovered = true;
        }
        let client = client.clone();
        let uri = format!("http://{addr}/demo/pool");
        let sent = start.elapsed().as_secs_f64();
        answers.spawn(async move {
            let answer = async {
                let response = client.get(uri.parse().ok()?).await.ok()?;
                let code = response.status().as_u16();
                let body = response.into_body().collect().await.ok()?.to_bytes();
                let node = serde_json::from_slice::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v["node"].as_u64())
                    .and_then(|n| usize::try_from(n).ok());
                Some((code, node))
            };
            let (code, node) = tokio::time::timeout(Duration::from_secs(10), answer)
                .await
                .ok()
                .flatten()
                .unwrap_or((0, None));
            (sent, code, node)
        });
        at += gap;
    }
    let answers: Vec<Answer> = answers.join_all().await;
    server.abort();

    let seconds = usize::try_from(length).expect("a short run");
    let mut per_second = vec![([0u32; NODES], 0u32, 0u32); seconds];
    for &(sent, code, node) in &answers {
        let Some(slot) = per_second.get_mut(sent as usize) else {
            continue;
        };
        if let Some(node) = node.filter(|&n| n < NODES) {
            slot.0[node] += 1;
        }
        slot.1 += 1;
        slot.2 += u32::from(code == 200);
    }
    let shares: Vec<[f64; NODES + 1]> = per_second
        .iter()
        .map(|(nodes, all, ok)| {
            let all = f64::from((*all).max(1));
            let mut row = [0.0; NODES + 1];
            for (i, n) in nodes.iter().enumerate() {
                row[i] = f64::from(*n) / all;
            }
            row[NODES] = f64::from(*ok) / all;
            row
        })
        .collect();

    println!("| seconds | node 0 | node 1 | node 2 | answered 200 |");
    println!("|---|---|---|---|---|");
    for from in (0..seconds).step_by(5) {
        let to = (from + 5).min(seconds);
        let window = &per_second[from..to];
        let all: u32 = window.iter().map(|w| w.1).sum::<u32>().max(1);
        let node = |i: usize| {
            100.0 * f64::from(window.iter().map(|w| w.0[i]).sum::<u32>()) / f64::from(all)
        };
        let ok = 100.0 * f64::from(window.iter().map(|w| w.2).sum::<u32>()) / f64::from(all);
        let mark = if (fail_at as usize..recover_at as usize).contains(&from) {
            format!(" ({who} failing)")
        } else {
            String::new()
        };
        println!(
            "| {from}–{to}{mark} | {:.1} % | {:.1} % | {:.1} % | {ok:.1} % |",
            node(0),
            node(1),
            node(2)
        );
    }
    // The first second after recovery from which every failed node serves a fair share:
    // at least 30 % of the answers of the `span` seconds that follow (a third, less the noise
    // of a few hundred calls). The pool fills idle nodes in an order that turns by one node
    // every 5 s: a fair share shows over a whole turn, 15 s with three nodes.
    let span = 5 * NODES;
    let fair = |from: usize| {
        let window = &per_second[from..from + span];
        let all = f64::from(window.iter().map(|w| w.1).sum::<u32>().max(1));
        failing
            .iter()
            .all(|&n| f64::from(window.iter().map(|w| w.0[n]).sum::<u32>()) / all >= 0.3)
    };
    let recover = usize::try_from(recover_at).expect("a short run");
    let back = (recover..seconds.saturating_sub(span))
        .find(|&s| fair(s))
        .map(|s| s - recover);
    // And the first second in which each failed node answered again.
    let serving = failing
        .iter()
        .map(|&n| (recover..seconds).find(|&s| per_second[s].0[n] > 0))
        .collect::<Option<Vec<_>>>()
        .and_then(|firsts| firsts.into_iter().max())
        .map(|s| s - recover);
    match serving {
        Some(s) => println!("\n{who} serving again {s} s after recovering."),
        None => println!("\n{who} not serving again within {} s.", args.after_s),
    }
    match back {
        Some(back) => println!(
            "{who} back to a fair share (30 % or more of the answers of the next {span} seconds, a turn of the fill order) {back} s after recovering."
        ),
        None => println!("{who} not back to a fair share within {} s.", args.after_s),
    }
    let chart = chart(&shares, &failing, &who, fail_at, recover_at, args.rate);
    std::fs::write(&args.chart, chart).with_context(|| format!("{}", args.chart.display()))?;
    println!();
    println!("Chart: `{}`", args.chart.display());
    Ok(())
}

/// Lines of each node's share and of successes, per second, on 0–100 %.
fn chart(
    shares: &[[f64; NODES + 1]],
    failing: &[usize],
    who: &str,
    fail_at: u64,
    recover_at: u64,
    rate: u32,
) -> String {
    const W: f64 = 960.0;
    const H: f64 = 400.0;
    const LEFT: f64 = 60.0;
    const RIGHT: f64 = 930.0;
    const TOP: f64 = 70.0;
    const BOTTOM: f64 = 330.0;
    let n = shares.len().max(1) as f64;
    let title = if failing.len() == NODES {
        "Every node of three fails, then recovers".to_owned()
    } else {
        format!("Node {} of three fails, then recovers", failing[0])
    };
    let x = |s: f64| LEFT + (RIGHT - LEFT) * s / n;
    let y = |v: f64| BOTTOM - (BOTTOM - TOP) * v;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" font-family="system-ui, sans-serif" font-size="12">
<rect width="100%" height="100%" fill="#ffffff"/>
<text x="{LEFT}" y="24" font-size="16" font-weight="600">{title}: each node's share of the answers, per second</text>
<text x="{LEFT}" y="42" fill="#4b5563">GET /demo/pool at {rate} requests/s over loopback; {who} answers errors while shaded. No retries: a call sent to a failing node fails.</text>
<rect x="{:.1}" y="{TOP}" width="{:.1}" height="{:.1}" fill="#fee2e2" fill-opacity="0.6"/>"##,
        x(fail_at as f64),
        x(recover_at as f64) - x(fail_at as f64),
        BOTTOM - TOP
    );
    for tick in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{0:.1}" x2="{RIGHT}" y2="{0:.1}" stroke="#e5e7eb"/><text x="{1}" y="{2:.1}" text-anchor="end" fill="#4b5563">{3:.0} %</text>"##,
            y(tick),
            LEFT - 6.0,
            y(tick) + 4.0,
            tick * 100.0
        );
    }
    let mut t = 0;
    while t as f64 <= n {
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{}" text-anchor="middle" fill="#4b5563">{t} s</text>"##,
            x(f64::from(t)),
            BOTTOM + 16.0
        );
        t += 5;
    }
    let name = |node: usize| {
        if failing.contains(&node) && failing.len() < NODES {
            format!("node {node} (fails)")
        } else {
            format!("node {node}")
        }
    };
    let series = [
        (name(0), "#2563eb", ""),
        (name(1), "#b91c1c", ""),
        (name(2), "#7c3aed", ""),
        (
            "answered 200".to_owned(),
            "#15803d",
            r#" stroke-dasharray="6 3""#,
        ),
    ];
    for (i, (_, colour, dash)) in series.iter().enumerate() {
        let points: Vec<String> = shares
            .iter()
            .enumerate()
            .map(|(s, row)| format!("{:.1},{:.1}", x(s as f64 + 0.5), y(row[i])))
            .collect();
        let _ = writeln!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="{}"/>"#,
            points.join(" ")
        );
    }
    let mut at = LEFT;
    for (name, colour, dash) in series {
        let _ = writeln!(
            svg,
            r#"<line x1="{at}" y1="366" x2="{}" y2="366" stroke="{colour}" stroke-width="3"{dash}/><text x="{}" y="370">{name}</text>"#,
            at + 22.0,
            at + 28.0
        );
        at += 60.0 + 7.0 * name.len() as f64;
    }
    svg.push_str("</svg>\n");
    svg
}
