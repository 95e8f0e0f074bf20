//! Shutdown budgets against a real `redis-server` (installed by `scripts/test`), started on a
//! free loopback port for each test. Real time: the windows are the server's.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use status_traffic::cull::{Budget, BudgetError, BudgetWindow, Grant, RedisBudget};

use servers::RedisServer;

/// Each test's own `redis-server` (`DEBUG SLEEP` stands for a Redis that stalls).
fn start_redis() -> RedisServer {
    RedisServer::start_with(&["--enable-debug-command", "yes"])
}

async fn connection(redis: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

async fn budgets(
    redis: &RedisServer,
    n: usize,
    capacity: u64,
    window: Duration,
    kind: BudgetWindow,
) -> Vec<Arc<RedisBudget>> {
    budgets_named(redis, "cull-budget", n, capacity, window, kind).await
}

/// `n` instances' budgets under `key`, each asking for at most 250 ms, vouched for (the
/// store is new: it forgot nothing).
async fn budgets_named(
    redis: &RedisServer,
    key: &str,
    n: usize,
    capacity: u64,
    window: Duration,
    kind: BudgetWindow,
) -> Vec<Arc<RedisBudget>> {
    let fleet: Vec<Arc<RedisBudget>> = (0..n)
        .map(|i| {
            Arc::new(
                RedisBudget::new(&redis.url(), key, capacity, window, kind, format!("i{i}"))
                    .unwrap()
                    .timeout(Duration::from_millis(250)),
            )
        })
        .collect();
    fleet[0].vouch().await.unwrap();
    fleet
}

/// Sleeps until `offset` into the next window of `window` (the server's clock is this
/// machine's).
async fn into_next_window(window: Duration, offset: Duration) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let w = window.as_millis();
    let wait = w - now % w + offset.as_millis();
    tokio::time::sleep(Duration::from_millis(u64::try_from(wait).unwrap())).await;
}

async fn ask_all(budgets: &[Arc<RedisBudget>]) -> Vec<Result<Grant, BudgetError>> {
    let asks: Vec<_> = budgets
        .iter()
        .map(|b| {
            let b = Arc::clone(b);
            tokio::spawn(async move { b.take().await })
        })
        .collect();
    let mut answers = Vec::new();
    for ask in asks {
        answers.push(ask.await.unwrap());
    }
    answers
}

fn tokens(answers: &[Result<Grant, BudgetError>]) -> usize {
    answers
        .iter()
        .filter(|a| matches!(a, Ok(Grant::Token { .. })))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_instances_share_a_fixed_window() {
    let redis = start_redis();
    let window = Duration::from_secs(2);
    let fleet = budgets(&redis, 20, 10, window, BudgetWindow::Fixed).await;
    into_next_window(window, Duration::from_millis(100)).await;
    let first = ask_all(&fleet).await;
    assert_eq!(tokens(&first), 10, "{first:?}");
    assert!(first.iter().all(Result::is_ok));
    // Nothing more in this window, however often asked.
    assert_eq!(tokens(&ask_all(&fleet).await), 0);
    // The next window has its own ten.
    into_next_window(window, Duration::from_millis(100)).await;
    assert_eq!(tokens(&ask_all(&fleet).await), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_sliding_window_never_passes_capacity_in_any_span() {
    let redis = start_redis();
    let window = Duration::from_millis(1000);
    let fleet = budgets(&redis, 5, 3, window, BudgetWindow::Sliding).await;
    let started = Instant::now();
    let mut granted: Vec<Duration> = Vec::new();
    while started.elapsed() < Duration::from_millis(3500) {
        for answer in ask_all(&fleet).await {
            if let Ok(Grant::Token { .. }) = answer {
                granted.push(started.elapsed());
            }
        }
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    assert!(granted.len() >= 9, "{granted:?}");
    // Grant times are read here, a few milliseconds after the server's: a span a little
    // shorter than the window is the strict test.
    for (i, t) in granted.iter().enumerate() {
        let within = granted[i..]
            .iter()
            .take_while(|u| **u - *t < Duration::from_millis(950))
            .count();
        assert!(
            within <= 3,
            "{within} grants within a window from {t:?}: {granted:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_expires_even_one_written_without_expiry() {
    let redis = start_redis();
    let window = Duration::from_secs(10);
    let fixed = budgets(&redis, 1, 2, window, BudgetWindow::Fixed)
        .await
        .remove(0);
    let sliding = RedisBudget::new(
        &redis.url(),
        "cull-sliding",
        2,
        window,
        BudgetWindow::Sliding,
        "a",
    )
    .unwrap();
    sliding.vouch().await.unwrap();
    // Every ask in one window of the fixed budget: one key (and one each of when the store
    // learnt the budget, kept a week).
    into_next_window(window, Duration::from_millis(100)).await;
    for _ in 0..3 {
        fixed.take().await.unwrap();
        sliding.take().await.unwrap();
    }
    let mut connection = connection(&redis).await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("{cull-*")
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(keys.len(), 4, "{keys:?}");
    for key in &keys {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut connection)
            .await
            .unwrap();
        let most = if key.ends_with(":known") {
            7 * 24 * 3_600_000
        } else {
            11_000
        };
        assert!(ttl > 0 && ttl <= most, "{key}: {ttl}");
    }
    // A key left without expiry (by a write whose EXPIRE never came) is given one.
    let fixed_key = keys
        .iter()
        .find(|k| k.starts_with("{cull-budget}:") && !k.ends_with(":known"))
        .unwrap();
    let _: () = redis::cmd("PERSIST")
        .arg(fixed_key)
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(fixed.take().await, Ok(Grant::Spent { used: 2 }));
    let ttl: i64 = redis::cmd("PTTL")
        .arg(fixed_key)
        .query_async(&mut connection)
        .await
        .unwrap();
    assert!(ttl > 0, "{ttl}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_redis_there_is_no_token_and_back_empty_a_window_counts_as_spent() {
    let mut redis = start_redis();
    let budget = RedisBudget::new(
        &redis.url(),
        "cull-budget",
        10,
        Duration::from_secs(60),
        BudgetWindow::Fixed,
        "a",
    )
    .unwrap()
    .timeout(Duration::from_millis(200));
    budget.vouch().await.unwrap();
    assert!(matches!(budget.take().await, Ok(Grant::Token { used: 1 })));
    redis.stop();
    for _ in 0..3 {
        let started = Instant::now();
        let answer = budget.take().await;
        assert!(
            matches!(
                answer,
                Err(BudgetError::Unreachable(_) | BudgetError::TimedOut(_))
            ),
            "{answer:?}"
        );
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "refused within the timeout"
        );
    }
    redis.restart();
    // A new server, empty: it forgot the grant, so the window from now counts as spent.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match budget.take().await {
            Ok(Grant::Unknown { left }) => {
                assert!(left > Duration::from_secs(50) && left <= Duration::from_secs(60));
                break;
            }
            Ok(grant) => panic!("granted by a store that forgot its grants: {grant:?}"),
            Err(_) => {}
        }
        assert!(Instant::now() < deadline, "no answer after Redis came back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for _ in 0..3 {
        assert!(matches!(budget.take().await, Ok(Grant::Unknown { .. })));
    }
}

/// Capacity 2 a 3-s window: two grants, Redis restarted empty, and every ask for a window
/// after it is refused, so that the grants it forgot still count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_restarted_empty_grants_nothing_for_a_window() {
    for kind in [BudgetWindow::Fixed, BudgetWindow::Sliding] {
        let mut redis = start_redis();
        let window = Duration::from_secs(3);
        let budget = RedisBudget::new(&redis.url(), "restarted", 2, window, kind, "a").unwrap();
        // New, and not vouched for: nothing for a window.
        let Ok(Grant::Unknown { left }) = budget.take().await else {
            panic!("a new budget granted at once")
        };
        assert_eq!(left, window);
        budget.vouch().await.unwrap();
        let mut grants = Vec::new();
        while grants.len() < 2 {
            if let Ok(Grant::Token { .. }) = budget.take().await {
                grants.push(Instant::now());
            }
        }
        redis.stop();
        redis.restart();
        let restarted = Instant::now();
        let mut unknown = 0;
        while Instant::now() < restarted + window * 2 {
            match budget.take().await {
                Ok(Grant::Token { .. }) => grants.push(Instant::now()),
                Ok(Grant::Unknown { .. }) => unknown += 1,
                _ => {}
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(unknown > 10, "{kind:?}: {unknown} asks counted spent");
        assert!(grants.len() > 2, "{kind:?}: grants again after the window");
        // The first grant after the restart comes a window after it (the grants before it
        // were all within the window before), so none holds more than the capacity across it.
        assert!(grants[2] >= restarted + window - Duration::from_millis(300));
        if kind == BudgetWindow::Sliding {
            for (i, at) in grants.iter().enumerate() {
                let within = grants[i..].iter().filter(|t| **t - *at < window).count();
                assert!(within <= 2, "{kind:?}: {within} grants within a window");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_cullers_cull_capacity_per_window() {
    use status_traffic::count::Failures;
    use status_traffic::cull::Culler;

    let redis = start_redis();
    let window = Duration::from_secs(3);
    let fleet = budgets(&redis, 20, 10, window, BudgetWindow::Fixed).await;
    into_next_window(window, Duration::from_millis(100)).await;
    let cullers: Vec<_> = fleet
        .into_iter()
        .enumerate()
        .map(|(i, budget)| {
            let registry = status_core::Registry::builder().seed(i as u64).build();
            let failures = Failures::new(Duration::from_secs(60));
            for _ in 0..20 {
                failures.record(true);
            }
            let handle = Culler::new(&registry, failures, budget)
                .threshold(10)
                .interval(Duration::from_millis(200))
                .start();
            (registry, handle)
        })
        .collect();
    let culled = || {
        cullers
            .iter()
            .filter(|(r, _)| r.cull_hold().is_some())
            .count()
    };
    // Every culler has looked several times within this window: exactly ten got a token.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(culled(), 10);
    let spent: u64 = cullers.iter().map(|(_, h)| h.state().denied_spent).sum();
    assert!(spent >= 10, "{spent}");
    // The next window has ten more for the ten left.
    into_next_window(window, Duration::from_millis(1000)).await;
    assert_eq!(culled(), 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_redis_a_culler_never_culls_and_resumes_when_it_is_back() {
    use status_traffic::count::Failures;
    use status_traffic::cull::Culler;

    let mut redis = start_redis();
    let budget = Arc::new(
        RedisBudget::new(
            &redis.url(),
            "cull-budget",
            10,
            Duration::from_secs(600),
            BudgetWindow::Fixed,
            "a",
        )
        .unwrap()
        .timeout(Duration::from_millis(100)),
    );
    redis.stop();
    let registry = status_core::Registry::builder().seed(3).build();
    let failures = Failures::new(Duration::from_secs(60));
    for _ in 0..20 {
        failures.record(true);
    }
    let handle = Culler::new(&registry, failures, budget.clone())
        .threshold(10)
        .interval(Duration::from_millis(100))
        .start();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(registry.cull_hold().is_none(), "never without coordination");
    let denied = handle.state().denied_unreachable;
    assert!(denied >= 3, "{denied} denials counted");
    redis.restart();
    // Back empty: it grants only once an operator vouches that it forgot nothing.
    budget.vouch().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), handle.culled())
        .await
        .expect("culls once Redis is back");
    assert!(registry.cull_hold().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asks_cut_off_mid_call_leave_no_key_without_expiry() {
    let redis = start_redis();
    let window = Duration::from_secs(60);
    // Clients that give up at once: their calls are dropped in flight, some before Redis
    // read them, some while it runs them, some after.
    for (i, kind) in [BudgetWindow::Fixed, BudgetWindow::Sliding]
        .into_iter()
        .enumerate()
    {
        for timeout_us in [1, 50, 200, 1_000, 5_000] {
            let budget =
                RedisBudget::new(&redis.url(), format!("cut-{i}"), 1_000, window, kind, "a")
                    .unwrap()
                    .timeout(Duration::from_micros(timeout_us));
            for _ in 0..20 {
                let _ = budget.take().await;
            }
        }
    }
    let mut connection = connection(&redis).await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("{cut-*")
        .query_async(&mut connection)
        .await
        .unwrap();
    assert!(!keys.is_empty(), "some asks went through");
    for key in &keys {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut connection)
            .await
            .unwrap();
        assert!(ttl > 0, "{key} has no expiry ({ttl})");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_redis_spends_nothing_while_no_instance_culls() {
    let redis = start_redis();
    let window = Duration::from_secs(600);
    // Seven tokens; each instance takes one first (it learns the server's clock), three left.
    let fleet = budgets_named(&redis, "stalled", 4, 7, window, BudgetWindow::Sliding).await;
    for budget in &fleet {
        assert!(matches!(budget.take().await, Ok(Grant::Token { .. })));
    }
    // The adversarial report's repro: DEBUG SLEEP 1 in a loop, the asks giving up after
    // 250 ms while their scripts still run once Redis wakes.
    let stall = {
        let url = redis.url();
        tokio::spawn(async move {
            let mut c = redis::Client::open(url)
                .unwrap()
                .get_multiplexed_async_connection()
                .await
                .unwrap();
            for _ in 0..4 {
                let _: Result<(), _> = redis::cmd("DEBUG")
                    .arg("SLEEP")
                    .arg(1)
                    .query_async(&mut c)
                    .await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    // Every grant an instance hears of is one it may use; none may be spent unheard of.
    let mut heard = 4;
    let mut refused_late = 0;
    for _ in 0..3 {
        for budget in &fleet {
            match budget.take().await {
                Ok(Grant::Token { .. }) => heard += 1,
                Ok(Grant::Spent { .. } | Grant::Unknown { .. }) => {}
                Err(BudgetError::TimedOut(_) | BudgetError::Unreachable(_)) => refused_late += 1,
            }
        }
    }
    stall.await.unwrap();
    assert!(
        refused_late >= 4,
        "the stall made asks late: {refused_late}"
    );
    // After the stall, the tokens nobody heard of are still there to take.
    for budget in &fleet {
        if let Ok(Grant::Token { .. }) = budget.take().await {
            heard += 1;
        }
    }
    assert_eq!(heard, 7, "the stall spent tokens nobody used");
    let mut c = connection(&redis).await;
    let used: u64 = redis::cmd("ZCARD")
        .arg("{stalled}:sliding")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(used, 7, "every grant in the store was heard of");
}

#[allow(dead_code, unreachable_pub)]
#[path = "../../status-checks/tests/components/servers.rs"]
mod servers;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_redis_cluster_a_failover_never_grants_past_capacity() {
    let mut cluster = servers::RedisCluster::start();
    let window = Duration::from_secs(600);
    let capacity = 4;
    let fleet: Vec<_> = (0..5)
        .map(|i| {
            Arc::new(
                RedisBudget::new(
                    &cluster.urls(),
                    "cluster-budget",
                    capacity,
                    window,
                    BudgetWindow::Sliding,
                    format!("i{i}"),
                )
                .unwrap()
                .timeout(Duration::from_secs(1)),
            )
        })
        .collect();
    fleet[0].vouch().await.unwrap();
    // Two grants before the failover, heard and replicated.
    let mut heard = 0;
    for budget in &fleet[..2] {
        let answer = budget.take().await;
        assert!(matches!(answer, Ok(Grant::Token { .. })), "{answer:?}");
        heard += 1;
    }
    // The master holding the budget's slot dies while every instance keeps asking.
    let master = cluster.master_of("{cluster-budget}:sliding");
    cluster.kill(master);
    let killed = Instant::now();
    let mut refused = 0;
    while killed.elapsed() < Duration::from_secs(8) {
        for budget in &fleet {
            match budget.take().await {
                Ok(Grant::Token { .. }) => heard += 1,
                Ok(Grant::Spent { .. } | Grant::Unknown { .. }) => {}
                Err(_) => refused += 1,
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(refused > 0, "the failover was felt");
    assert!(
        heard <= capacity,
        "{heard} grants heard, capacity {capacity}"
    );
    // After it, the replica holds the budget: every grant heard, and no more than capacity.
    let answers: Vec<_> = futures_answers(&fleet).await;
    assert!(
        answers.iter().all(|a| matches!(a, Ok(Grant::Spent { .. }))),
        "{answers:?}"
    );
}

async fn futures_answers(fleet: &[Arc<RedisBudget>]) -> Vec<Result<Grant, BudgetError>> {
    let mut answers = Vec::new();
    for budget in fleet {
        answers.push(budget.take().await);
    }
    answers
}
