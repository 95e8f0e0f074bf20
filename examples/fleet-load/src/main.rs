//! Runs N logical instances of one fleet in this process, each beating into a real Redis
//! through status-core's own store (`RedisFleet::beat`) on its own jittered schedule, and
//! prints what a beat costs: its latency (p50, p99) and the Redis CPU spent per second and per
//! beat, read from `INFO`.
//!
//! ```sh
//! cargo run --release -p fleet-load -- --redis redis://127.0.0.1:6379/ --key load \
//!     --instances 10000 --datacenters 10 --outage dc-1=0.6 --seconds 20
//! ```
//!
//! `--failing SHARE` makes that share of the instances fail one to three dependencies (of an
//! application's 20, at MINOR, MAJOR or OUTAGE; the instances in `--outage` fail `primary-db`), so
//! that the store keeps per-dependency counts; halfway through the measured span, 60 % of
//! `dc-0` start failing `payments-api` at once (each publishing at once, as `Fleet` does), and
//! the run says how long until another instance's view (an observer beating as `Fleet` does,
//! or with etcd a watcher's counts) finds it shared. The observer looks at the fleet, as a
//! person at its page would (`RedisFleet::look`): past the store's failing budget
//! (`--failing-budget BYTES` to set it), the other instances are sent only their own rows.
//!
//! `--baseline` measures, in the same run and against the same server, what the beat is
//! compared with: the bare write of the same record at the same rate under the same key shape
//! (a script of `HSET` and `PEXPIRE`; with etcd, a put of the summary with a lease), then the
//! store, in turn, `--rounds` times; it prints the ratio of their CPU per beat, the median of
//! the pairs:
//!
//! ```sh
//! cargo run --release -p fleet-load -- --redis redis://127.0.0.1:6379/ --key load \
//!     --instances 10000 --outage dc-1=0.6 --failing 0.05 --no-shared --baseline --rounds 3
//! ```
//!
//! `--store exchange` runs the fleet's previous design instead, the baseline: one script that
//! publishes a summary and reads every summary back, so that each exchange costs O(N).
//!
//! `--etcd URL[,URL...]` runs the same load through `EtcdFleet`: each logical instance holds
//! its lease (a keepalive a beat, on its own keepalive stream; the instances share
//! `--connections` clients) and writes its summary when it changes; `--watchers` full
//! instances keep the view by a watch. It prints the beat's latency, the etcd member's CPU
//! and memory (from its own `/metrics`), and how long a change of one instance takes to reach
//! a watcher's data-center counts.
//!
//! ```sh
//! cargo run --release -p fleet-load -- --etcd http://127.0.0.1:2379 --instances 10000 \
//!     --datacenters 10 --change-every-s 30 --seconds 20
//! ```

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use status_checks::store::RedisStore;
use status_core::CheckStatus;
use status_fleet::{
    EtcdFleet, FailingDependency, FleetStore, FleetView, HealthRule, InstanceSummary, RedisFleet,
};
use tokio::time::Instant;

#[derive(Debug, Parser)]
#[command(about = "N logical instances of a fleet beating into Redis: latency and Redis CPU")]
struct Args {
    /// The Redis the fleet shares.
    #[arg(long, required_unless_present = "etcd", conflicts_with = "etcd")]
    redis: Option<String>,
    /// The etcd the fleet shares: its members' URLs, separated by commas.
    #[arg(long)]
    etcd: Option<String>,
    /// With --etcd: full instances keeping the view by a watch (the others only publish).
    #[arg(long, default_value_t = 4)]
    watchers: usize,
    /// Each instance changes its condition (OK and MINOR, both serving) every this many
    /// seconds on average; 0: never.
    #[arg(long, default_value_t = 0)]
    change_every_s: u64,
    /// The fleet's key.
    #[arg(long, default_value = "fleet-load")]
    key: String,
    /// Logical instances.
    #[arg(long, default_value_t = 1000)]
    instances: usize,
    /// Data centers, named `dc-0` to `dc-{D-1}`.
    #[arg(long, default_value_t = 10)]
    datacenters: usize,
    /// `DC=SHARE`: that share of the data center's instances report OUTAGE (repeatable).
    #[arg(long, value_parser = outage)]
    outage: Vec<(String, f64)>,
    /// Seconds measured, after one period of warm-up.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// The TTL in milliseconds: each instance beats every third of it.
    #[arg(long, default_value_t = 3000)]
    ttl_ms: u64,
    /// `beat` (the store as it is), `exchange` (the previous design) or `bare` (the bare
    /// write `--baseline` measures, alone).
    #[arg(long, default_value = "beat")]
    store: String,
    /// Connections to the store (Redis, or each etcd member), shared by the instances.
    #[arg(long, default_value_t = 8)]
    connections: usize,
    /// That share of the instances fail one to three dependencies; and, halfway through, a
    /// failure shared by 60 % of dc-0 (timed until another instance sees it shared).
    #[arg(long, default_value_t = 0.0)]
    failing: f64,
    /// With --failing: no shared failure halfway through (the steady cost alone).
    #[arg(long)]
    no_shared: bool,
    /// Redis: what one change of what fails may cost handed to every instance, in bytes
    /// (`RedisFleet::failing_budget`; by default the store's).
    #[arg(long)]
    failing_budget: Option<usize>,
    /// Measure the baseline in the same run: the bare write (Redis: a script of `HSET` and
    /// `PEXPIRE` of the same record under the same key shape; etcd: a put of the summary with
    /// a lease) at the same rate, then the store, in turn, `--rounds` times; prints the ratio.
    #[arg(long)]
    baseline: bool,
    /// With --baseline: pairs of runs (bare, then the store).
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// Each summary's JSON made at least this many bytes by its dashboard's URL (a query
    /// string), as instances that publish more say more; 0: as small as it is.
    #[arg(long, default_value_t = 0)]
    summary_bytes: usize,
}

/// A cheap hash of an instance's index, in 0..1.
fn unit(i: usize, salt: u64) -> f64 {
    let mut x =
        (i as u64 ^ salt.wrapping_mul(0xD6E8_FEB8_6659_FD93)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// What instance `i` fails: `primary-db` in an outage; with `--failing`, one to three of an
/// application's 20 dependencies for that share of the others.
fn failing_of(i: usize, outage: bool, share: f64) -> Vec<FailingDependency> {
    if outage {
        return vec![FailingDependency::new("primary-db", CheckStatus::Outage)];
    }
    if unit(i, 1) >= share {
        return Vec::new();
    }
    let levels = [CheckStatus::Minor, CheckStatus::Major, CheckStatus::Outage];
    let n = 1 + (unit(i, 2) * 3.0) as usize % 3;
    let first = (unit(i, 3) * 20.0) as usize % 20;
    (0..n)
        .map(|k| {
            let level = levels[(unit(i, 10 + k as u64) * 3.0) as usize % 3];
            FailingDependency::new(format!("dep-{:02}", (first + 7 * k) % 20), level)
        })
        .collect()
}

fn outage(text: &str) -> Result<(String, f64), String> {
    let (dc, share) = text.split_once('=').ok_or("DC=SHARE")?;
    let share: f64 = share.parse().map_err(|_| "SHARE is a number")?;
    if !(0.0..=1.0).contains(&share) {
        return Err("SHARE is between 0 and 1".into());
    }
    Ok((dc.to_owned(), share))
}

/// The previous design's exchange, kept as the baseline: set this instance's summary, then
/// read every summary still kept (O(N) per exchange, O(N²) for the fleet).
const EXCHANGE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local keep = tonumber(ARGV[3]) * 10
redis.call('SET', KEYS[1] .. ':' .. ARGV[1], now .. '|' .. ARGV[2], 'PX', keep)
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], keep)
local out = {tostring(now)}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local v = redis.call('GET', KEYS[1] .. ':' .. id)
  if v then table.insert(out, v) else redis.call('SREM', KEYS[1], id) end
end
return out
";

/// Redis's CPU seconds (user + system) and bytes sent so far.
async fn usage(redis: &mut redis::aio::MultiplexedConnection) -> anyhow::Result<(f64, u64)> {
    let info: String = redis::cmd("INFO").arg("all").query_async(redis).await?;
    let field = |name: &str| -> Option<&str> {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    let cpu = ["used_cpu_user", "used_cpu_sys"]
        .iter()
        .map(|f| field(f).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0))
        .sum();
    let out = field("total_net_output_bytes")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Ok((cpu, out))
}

/// The etcd member's CPU seconds and resident bytes, from its `/metrics`.
async fn etcd_usage(url: &str) -> anyhow::Result<(f64, f64)> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let authority = url
        .trim_start_matches("http://")
        .split(['/', ','])
        .next()
        .unwrap_or_default();
    let mut stream = tokio::net::TcpStream::connect(authority).await?;
    stream
        .write_all(format!("GET /metrics HTTP/1.0\r\nHost: {authority}\r\n\r\n").as_bytes())
        .await?;
    let mut body = String::new();
    stream.read_to_string(&mut body).await?;
    let metric = |name: &str| {
        body.lines()
            .find_map(|l| {
                l.strip_prefix(name)?
                    .strip_prefix(' ')?
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
            .unwrap_or(0.0)
    };
    Ok((
        metric("process_cpu_seconds_total"),
        metric("process_resident_memory_bytes"),
    ))
}

enum Store {
    Beat(Vec<RedisFleet>),
    /// One publisher a logical instance, and the watchers.
    Etcd(Vec<EtcdFleet>, Vec<EtcdFleet>),
    Exchange(Vec<redis::aio::MultiplexedConnection>, redis::Script),
    /// The baseline: a bare scripted write of the record a beat writes, under `{K-bare}:inst`.
    Bare(Vec<RedisStore>, String, redis::Script),
    /// The baseline with etcd: a bare put of the summary with a lease, under this prefix.
    EtcdBare(Vec<etcd_client::Client>, String),
}

impl Store {
    /// Its name in the table.
    fn label<'a>(&self, store: &'a str) -> &'a str {
        match self {
            Self::Etcd(..) => "etcd",
            Self::EtcdBare(..) => "etcd: bare put with a lease",
            Self::Bare(..) => "bare: HSET+PEXPIRE script",
            _ => store,
        }
    }
}

/// The baseline's write: the record a beat writes, under the same key shape (a hash field an
/// instance), and the key's expiry renewed, as a script, as the beat is.
const BARE: &str = r"
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
";

/// Where the store's CPU is read: every Redis server named (a cluster's masters), or the etcd
/// member.
enum Meter {
    Redis(Vec<redis::aio::MultiplexedConnection>),
    Etcd(String),
}

impl Meter {
    async fn open(args: &Args) -> anyhow::Result<Self> {
        if let Some(urls) = &args.etcd {
            return Ok(Self::Etcd(urls.clone()));
        }
        let mut all = Vec::new();
        for url in args.redis.as_deref().unwrap_or_default().split(',') {
            let client = redis::Client::open(url.trim()).context("--redis")?;
            all.push(client.get_multiplexed_async_connection().await?);
        }
        Ok(Self::Redis(all))
    }

    /// CPU seconds so far, bytes sent so far (Redis), and resident bytes (etcd).
    async fn read(&mut self) -> anyhow::Result<(f64, u64, f64)> {
        match self {
            Self::Redis(all) => {
                let (mut cpu, mut out) = (0.0, 0);
                for server in all {
                    let (c, o) = usage(server).await?;
                    cpu += c;
                    out += o;
                }
                Ok((cpu, out, 0.0))
            }
            Self::Etcd(urls) => {
                let (cpu, memory) = etcd_usage(urls).await?;
                Ok((cpu, 0, memory))
            }
        }
    }
}

/// The load tool shares this machine's cores with the store it measures, and its own work is
/// mostly allocation (a hundred thousand tasks' requests and answers): with glibc's allocator
/// it took a core at 100,000 instances, and the store fell behind for want of the other.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(
        args.instances > 0 && args.datacenters > 0,
        "at least one of each"
    );
    let mut meter = Meter::open(&args).await?;
    if !args.baseline {
        let store = open(&args, false).await?;
        phase(&args, store, &mut meter).await?;
        return Ok(());
    }
    // The bare write and the store, in turn, against the same server: the ratio of their CPU
    // per beat in each pair, and the median of those ratios. A pair in which either run lost
    // beats measured a load that fell behind: shown, left out of the median.
    let (mut ratios, mut behind) = (Vec::new(), Vec::new());
    for _ in 0..args.rounds.max(1) {
        let bare = phase(&args, open(&args, true).await?, &mut meter).await?;
        let store = phase(&args, open(&args, false).await?, &mut meter).await?;
        let ratio = store.cpu_per_beat / bare.cpu_per_beat.max(1e-9);
        if bare.failed + store.failed > 0 {
            behind.push(ratio);
        } else {
            ratios.push(ratio);
        }
    }
    let list = |ratios: &[f64]| {
        ratios
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    ratios.sort_by(f64::total_cmp);
    let left_out = if behind.is_empty() {
        String::new()
    } else {
        format!("; left out, beats lost: {}", list(&behind))
    };
    let Some(median) = ratios.get(ratios.len() / 2) else {
        println!("ratio: none (every pair lost beats{left_out})");
        anyhow::bail!("every pair lost beats: the load fell behind");
    };
    println!(
        "ratio: {median:.2} (the store's CPU per beat over the bare write's; each pair: {}{left_out})",
        list(&ratios)
    );
    Ok(())
}

/// The store a phase runs: the fleet's (`--store`, or etcd), or with `bare` the baseline, a
/// bare write of the same size under the same key shape.
async fn open(args: &Args, bare: bool) -> anyhow::Result<Arc<Store>> {
    let ttl = Duration::from_millis(args.ttl_ms.max(30));
    let period = ttl / 3;
    let connections = args.connections.max(1);
    let redis_url = args.redis.clone().unwrap_or_default();
    let store = match (&args.etcd, args.store.as_str()) {
        (Some(urls), _) if bare => {
            let mut clients = Vec::new();
            for _ in 0..connections {
                let endpoints: Vec<&str> = urls.split(',').collect();
                clients.push(etcd_client::Client::connect(endpoints, None).await?);
            }
            Store::EtcdBare(
                clients,
                format!("{}-bare/i/", args.key.trim_end_matches('/')),
            )
        }
        (Some(urls), _) => {
            // The logical instances share `--connections` clients, as a machine's instances
            // would not: one process cannot hold 10,000 connections and measure etcd too.
            let shared = (0..connections)
                .map(|_| status_checks::store::EtcdStore::open(urls, period))
                .collect::<Result<Vec<_>, _>>()?;
            let publishers = (0..args.instances)
                .map(|i| {
                    EtcdFleet::on(shared[i % connections].clone(), &args.key, ttl)
                        .map(EtcdFleet::publish_only)
                })
                .collect::<Result<_, _>>()?;
            let watchers = (0..args.watchers.max(1))
                .map(|_| EtcdFleet::new(urls, &args.key, ttl))
                .collect::<Result<Vec<_>, _>>()?;
            anyhow::ensure!(watchers[0].verify().await?, "etcd at {urls} did not answer");
            Store::Etcd(publishers, watchers)
        }
        (None, store) if bare || store == "bare" => {
            let key = RedisStore::tagged(&format!("{}-bare", args.key), "inst")?;
            let stores = (0..connections)
                .map(|_| RedisStore::open(&redis_url))
                .collect::<Result<_, _>>()?;
            Store::Bare(stores, key, redis::Script::new(BARE))
        }
        (None, "beat") => Store::Beat(
            (0..connections)
                .map(|_| {
                    RedisFleet::new(&redis_url, args.key.clone(), ttl).map(|f| {
                        f.failing_budget(
                            args.failing_budget
                                .unwrap_or(status_fleet::DEFAULT_FAILING_BUDGET),
                        )
                    })
                })
                .collect::<Result<_, _>>()?,
        ),
        (None, "exchange") => {
            let client = redis::Client::open(redis_url.as_str()).context("--redis")?;
            let mut all = Vec::new();
            for _ in 0..connections {
                all.push(client.get_multiplexed_async_connection().await?);
            }
            Store::Exchange(all, redis::Script::new(EXCHANGE))
        }
        (None, other) => anyhow::bail!("--store {other:?}: beat, exchange or bare"),
    };
    Ok(Arc::new(store))
}

/// What one phase measured.
struct Outcome {
    /// The store's CPU seconds per beat answered.
    cpu_per_beat: f64,
    /// Beats that failed or went unanswered: the load fell behind (this machine busy with
    /// something else, or the store saturated), and the run measured that, not a beat.
    failed: usize,
}

/// One run of the load against `store`: its table row on stdout, what it saw on stderr.
async fn phase(args: &Args, store: Arc<Store>, meter: &mut Meter) -> anyhow::Result<Outcome> {
    let ttl = Duration::from_millis(args.ttl_ms.max(30));
    let period = ttl / 3;
    let redis_url = args.redis.clone().unwrap_or_default();
    let change =
        (args.change_every_s > 0).then(|| period.as_secs_f64() / args.change_every_s as f64);
    let outages: HashMap<String, f64> = args.outage.iter().cloned().collect();
    let per_dc = args.instances.div_ceil(args.datacenters);
    let start = Instant::now() + Duration::from_millis(100);
    let measure_from = start + period;
    let end = measure_from + Duration::from_secs(args.seconds);
    eprintln!(
        "{} instances in {} data centers, a beat every {} ms each, {} s measured ({})",
        args.instances,
        args.datacenters,
        period.as_millis(),
        args.seconds,
        args.store
    );

    // Each answered beat's latency (µs; u32::MAX when it failed), as it comes, so that beats
    // still unanswered when the run is cut off are counted as such.
    let (answers, mut answered) = tokio::sync::mpsc::unbounded_channel::<u32>();
    let started = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut tasks = Vec::with_capacity(args.instances);
    for i in 0..args.instances {
        let dc = format!("dc-{}", i % args.datacenters);
        let rank = i / args.datacenters;
        let outage = outages
            .get(&dc)
            .is_some_and(|share| (rank as f64) < share * per_dc as f64);
        let condition = if outage {
            CheckStatus::Outage
        } else {
            CheckStatus::Ok
        };
        let shared_member = args.failing > 0.0
            && !args.no_shared
            && dc == "dc-0"
            && (rank as f64) < 0.6 * per_dc as f64;
        let mut me = InstanceSummary::new(format!("i-{i}"), dc, condition, Vec::new(), "1.0")
            .with_failing(failing_of(i, outage, args.failing));
        let size = serde_json::to_string(&me).map_or(0, |json| json.len());
        if args.summary_bytes > size {
            // (`,"url":"…"` is 9 bytes besides the URL.)
            let url = format!("https://i-{i}.internal/status?");
            let pad = args.summary_bytes.saturating_sub(size + 9 + url.len());
            me.url = format!("{url}{}", "p".repeat(pad));
        }
        let shared_at = measure_from + Duration::from_secs(args.seconds) / 2;
        let store = Arc::clone(&store);
        let key = args.key.clone();
        let ttl_ms = ttl.as_millis().to_string();
        let seconds = args.seconds;
        let answers = answers.clone();
        let started = Arc::clone(&started);
        tasks.push(tokio::spawn(async move {
            // Its own phase and, at each beat, ±10 % of jitter, from a cheap hash of its index.
            let mut state = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut next_random = move || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 11) as f64 / (1u64 << 53) as f64
            };
            let mut at = start + period.mul_f64(next_random());
            let json = serde_json::to_string(&me).expect("a summary serializes");
            let mut joined = false;
            let mut lease = None;
            while at < end {
                // A member of the shared failure publishes it the moment it starts.
                if shared_member && !joined && at > shared_at {
                    at = shared_at;
                }
                tokio::time::sleep_until(at).await;
                if shared_member && !joined && Instant::now() >= shared_at {
                    joined = true;
                    me.failing.insert(
                        0,
                        FailingDependency::new("payments-api", CheckStatus::Outage),
                    );
                    me.failing.truncate(status_fleet::MAX_FAILING);
                    // When it changed, for the watch-delivery latency.
                    me.version = format!("t={}", epoch_ms());
                }
                let began = Instant::now();
                let measured = began >= measure_from && began < end;
                if measured {
                    started.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                if change.is_some_and(|p| next_random() < p) && me.condition != CheckStatus::Outage
                {
                    me.condition = if me.condition == CheckStatus::Ok {
                        CheckStatus::Minor
                    } else {
                        CheckStatus::Ok
                    };
                    // When it changed, for the watch-delivery latency.
                    me.version = format!("t={}", epoch_ms());
                }
                let ok = match &*store {
                    Store::Beat(fleets) => fleets[i % fleets.len()].beat(&me).await.is_ok(),
                    Store::Etcd(publishers, _) => publishers[i].beat_timed(&me, period).await,
                    Store::Exchange(connections, script) => {
                        let mut c = connections[i % connections.len()].clone();
                        let answer: Result<Vec<String>, _> = script
                            .key(&key)
                            .arg(&me.instance_id)
                            .arg(&json)
                            .arg(&ttl_ms)
                            .invoke_async(&mut c)
                            .await;
                        answer.is_ok()
                    }
                    Store::Bare(stores, key, script) => {
                        let record = format!(
                            "{}\n{}\n1\n{}\n{json}",
                            me.datacenter,
                            u8::from(me.condition != CheckStatus::Ok),
                            epoch_ms()
                        );
                        match stores[i % stores.len()].connection().await {
                            Ok(mut c) => script
                                .key(key)
                                .arg(&me.instance_id)
                                .arg(record)
                                .arg(u64::try_from(10 * ttl.as_millis()).unwrap_or(u64::MAX))
                                .invoke_async::<i64>(&mut c)
                                .await
                                .is_ok(),
                            Err(_) => false,
                        }
                    }
                    Store::EtcdBare(clients, prefix) => {
                        let mut client = clients[i % clients.len()].clone();
                        if lease.is_none() {
                            // One lease an instance, long enough for the run: the put is
                            // what is measured, not keeping the lease.
                            let life =
                                i64::try_from(ttl.as_secs() + seconds + 60).unwrap_or(i64::MAX);
                            lease = client.lease_grant(life, None).await.ok().map(|l| l.id());
                        }
                        match lease {
                            Some(id) => client
                                .put(
                                    format!("{prefix}{}", me.instance_id),
                                    json.as_str(),
                                    Some(etcd_client::PutOptions::new().with_lease(id)),
                                )
                                .await
                                .is_ok(),
                            None => false,
                        }
                    }
                };
                if measured {
                    let micros = u32::try_from(began.elapsed().as_micros()).unwrap_or(u32::MAX - 1);
                    let _ = answers.send(if ok { micros } else { u32::MAX });
                }
                // The next beat on schedule, or at once if this one was late.
                at = (at + period.mul_f64(0.9 + 0.2 * next_random())).max(Instant::now());
            }
        }));
    }
    drop(answers);
    // Another instance of dc-0, watching for the shared failure halfway through: with Redis it
    // beats every period as `Fleet` does (its counts come with its beats); with etcd it reads
    // a watcher's counts as they move.
    let shared_at = measure_from + Duration::from_secs(args.seconds) / 2;
    let observer = (args.failing > 0.0 && !args.no_shared).then(|| {
        let store = Arc::clone(&store);
        let redis_url = redis_url.clone();
        let key = args.key.clone();
        tokio::spawn(async move {
            let shared = |counts: Vec<status_fleet::DatacenterCounts>| {
                FleetView::from_counts(counts, HealthRule::default())
                    .datacenter("dc-0")
                    .is_some_and(|d| {
                        d.failing
                            .iter()
                            .any(|f| f.dependency == "payments-api" && f.shared)
                    })
            };
            let me =
                InstanceSummary::new("shared-observer", "dc-0", CheckStatus::Ok, Vec::new(), "1");
            match &*store {
                Store::Etcd(_, watchers) => loop {
                    if Instant::now() >= shared_at && watchers[0].counts().is_some_and(shared) {
                        return Some(Instant::now() - shared_at);
                    }
                    if Instant::now() > end + Duration::from_secs(5) {
                        return None;
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                },
                _ => {
                    let fleet = RedisFleet::new(&redis_url, key, ttl).ok()?;
                    let mut tick = tokio::time::interval(period);
                    loop {
                        tick.tick().await;
                        // Watching what fails across the fleet, as a person at its page.
                        fleet.look();
                        let counts = fleet.beat(&me).await.ok()?.datacenters;
                        if Instant::now() >= shared_at && shared(counts) {
                            return Some(Instant::now() - shared_at);
                        }
                        if Instant::now() > end + Duration::from_secs(5) {
                            return None;
                        }
                    }
                }
            }
        })
    });
    // Watchers beat on their own schedule, as instances of the fleet would.
    let watching = if let Store::Etcd(_, _) = &*store {
        let store = Arc::clone(&store);
        Some(tokio::spawn(async move {
            let Store::Etcd(_, watchers) = &*store else {
                return;
            };
            loop {
                for (w, watcher) in watchers.iter().enumerate() {
                    let me = InstanceSummary::new(
                        format!("watcher-{w}"),
                        "watchers",
                        CheckStatus::Ok,
                        Vec::new(),
                        "1",
                    );
                    watcher.beat_timed(&me, period).await;
                }
                tokio::time::sleep(period).await;
            }
        }))
    } else {
        None
    };
    // A plain etcd watch over the instances' keys: how long each change takes from its write
    // to a watcher, over the measured span.
    let delivered = Arc::new(std::sync::Mutex::new(Vec::<u64>::new()));
    let delivery = match &args.etcd {
        Some(urls) if matches!(*store, Store::Etcd(..)) => {
            let url = urls.split(',').next().unwrap_or_default().to_owned();
            let prefix = format!("{}/i/", args.key.trim_end_matches('/'));
            let delivered = Arc::clone(&delivered);
            Some(tokio::spawn(async move {
                let Ok(mut client) = etcd_client::Client::connect([url], None).await else {
                    return;
                };
                let options = etcd_client::WatchOptions::new().with_prefix();
                let Ok(mut stream) = client.watch(prefix, Some(options)).await else {
                    return;
                };
                while let Ok(Some(answer)) = stream.message().await {
                    let now = epoch_ms();
                    for event in answer.events() {
                        let sent = event
                            .kv()
                            .and_then(|kv| {
                                serde_json::from_slice::<serde_json::Value>(kv.value()).ok()
                            })
                            .and_then(|v| {
                                v["version"]
                                    .as_str()?
                                    .strip_prefix("t=")?
                                    .parse::<u64>()
                                    .ok()
                            });
                        if let Some(sent) = sent {
                            if Instant::now() >= measure_from && Instant::now() < end {
                                delivered.lock().unwrap().push(now.saturating_sub(sent));
                            }
                        }
                    }
                }
            }))
        }
        _ => None,
    };
    tokio::time::sleep_until(measure_from).await;
    let (cpu_before, out_before, _) = meter.read().await?;
    tokio::time::sleep_until(end).await;
    let (cpu_after, out_after, etcd_memory) = meter.read().await?;
    // Beats still unanswered five seconds after the end are cut off, and counted.
    let cut = tokio::time::timeout(Duration::from_secs(5), async {
        for task in &mut tasks {
            let _ = task.await;
        }
    })
    .await
    .is_err();
    for task in &tasks {
        task.abort();
    }
    let mut latencies = Vec::new();
    while let Ok(latency) = answered.try_recv() {
        latencies.push(latency);
    }
    let started = usize::try_from(started.load(std::sync::atomic::Ordering::Relaxed)).unwrap_or(0);
    let unanswered = started.saturating_sub(latencies.len());
    if cut {
        eprintln!("{unanswered} beats unanswered 5 s after the end: cut off");
    }
    let failed = latencies.iter().filter(|l| **l == u32::MAX).count() + unanswered;
    latencies.retain(|l| *l != u32::MAX);
    latencies.sort_unstable();
    let pick = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
            .map_or(0.0, |us| f64::from(*us) / 1000.0)
    };
    // Beats answered in the measured span, per second.
    let beats = latencies.len() + failed - unanswered;
    let seconds = args.seconds as f64;
    let cpu = cpu_after - cpu_before;
    let out = (out_after - out_before) as f64;
    println!(
        "| {} | {} | {} | {:.0} | {:.2} ms | {:.2} ms | {:.3} | {:.1} µs | {} | {failed} |",
        store.label(&args.store),
        args.instances,
        args.datacenters,
        latencies.len() as f64 / seconds,
        pick(0.5),
        pick(0.99),
        cpu / seconds,
        cpu / beats.max(1) as f64 * 1e6,
        if args.etcd.is_some() {
            format!("RSS {:.0} MiB", etcd_memory / (1 << 20) as f64)
        } else {
            format!("{:.2} MiB/s", out / seconds / (1 << 20) as f64)
        },
    );
    if let Some(observer) = observer {
        match observer.await.ok().flatten() {
            Some(took) => eprintln!(
                "a shared failure reached another instance's view in {:.0} ms (a beat every {} ms)",
                took.as_secs_f64() * 1e3,
                period.as_millis()
            ),
            None => eprintln!("a shared failure never reached another instance's view"),
        }
    }
    if let Some(delivery) = delivery {
        delivery.abort();
        let mut delays = delivered.lock().unwrap().clone();
        delays.sort_unstable();
        let at = |q: f64| {
            delays
                .get(((delays.len() as f64 * q) as usize).min(delays.len().saturating_sub(1)))
                .copied()
                .unwrap_or(0)
        };
        eprintln!(
            "watch delivery: {} changes, p50 {} ms, p99 {} ms, max {} ms",
            delays.len(),
            at(0.5),
            at(0.99),
            delays.last().copied().unwrap_or(0)
        );
    }
    if let Store::Etcd(publishers, watchers) = &*store {
        // A change of one instance, until a watcher's counts show it: five times.
        let mut me = InstanceSummary::new("i-0", "dc-0", CheckStatus::Ok, Vec::new(), "1.0");
        let observer =
            InstanceSummary::new("watcher-0", "watchers", CheckStatus::Ok, Vec::new(), "1");
        let mut reached = Vec::new();
        for round in 0..5 {
            me.condition = if round % 2 == 0 {
                CheckStatus::Outage
            } else {
                CheckStatus::Ok
            };
            let want_outage = usize::from(round % 2 == 0);
            let changed = Instant::now();
            publishers[0].beat_timed(&me, period).await;
            loop {
                if let Ok(beat) = watchers[0].beat(&observer).await {
                    let outage = beat
                        .datacenters
                        .iter()
                        .find(|d| d.datacenter == "dc-0")
                        .map_or(0, |d| d.conditions.outage);
                    let base = outages
                        .get("dc-0")
                        .map_or(0, |s| (s * per_dc as f64).ceil() as usize);
                    if outage == base + want_outage {
                        break;
                    }
                }
                anyhow::ensure!(
                    changed.elapsed() < Duration::from_secs(10),
                    "a change never reached the watcher"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            reached.push(changed.elapsed().as_secs_f64() * 1e3);
        }
        reached.sort_by(f64::total_cmp);
        eprintln!(
            "a change reached a watcher's counts in {:.1} ms (median of 5), {:.1} ms at most",
            reached[2], reached[4]
        );
    }
    if let Some(watching) = watching {
        watching.abort();
    }
    if let Store::Beat(fleets) = &*store {
        // What a real instance of this fleet would see now (with etcd, the watchers' counts
        // above).
        let observer = InstanceSummary::new("observer", "dc-0", CheckStatus::Ok, Vec::new(), "1");
        let beat = fleets[0].beat(&observer).await?;
        let view = FleetView::from_counts(beat.datacenters, HealthRule::default());
        let verdicts: Vec<String> = view
            .datacenters
            .iter()
            .map(|d| {
                format!(
                    "{} {} ({} of {} serving)",
                    d.datacenter,
                    if d.healthy { "healthy" } else { "UNHEALTHY" },
                    d.serving,
                    d.fresh
                )
            })
            .collect();
        eprintln!("verdicts: {}", verdicts.join(", "));
    }
    Ok(Outcome {
        cpu_per_beat: cpu / beats.max(1) as f64,
        failed,
    })
}

/// A beat within `within`, as `Fleet` gives it: whether it was answered.
trait Timed {
    async fn beat_timed(&self, me: &InstanceSummary, within: Duration) -> bool;
}

impl Timed for EtcdFleet {
    async fn beat_timed(&self, me: &InstanceSummary, within: Duration) -> bool {
        match tokio::time::timeout(within, FleetStore::beat(self, me)).await {
            Ok(answer) => answer.is_ok(),
            Err(_) => {
                FleetStore::reset(self).await;
                false
            }
        }
    }
}

/// This machine's clock, in ms since the epoch.
fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
