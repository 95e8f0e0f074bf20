//! The hedge layer over real tower services, on paused time: a slow call gets a second copy
//! after its delay, the first answer wins and the loser is dropped, and the budget holds.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use status_core::Rng;
use status_traffic::hedge::{HedgeDelay, HedgeLayer, HedgeSettings};
use status_traffic::limit::{Fixed, Limiter};
use status_traffic::pool::Pool;
use tower::{service_fn, BoxError, Layer, ServiceExt};

const MS: Duration = Duration::from_millis(1);

/// Counts the calls dropped before they answered.
struct Unfinished(Arc<AtomicU64>, bool);

impl Drop for Unfinished {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

type Node = tower::util::BoxCloneSyncService<u32, &'static str, BoxError>;

/// A node answering its name after `delay`, counting the calls cut off.
fn node(name: &'static str, delay: Duration, cut: &Arc<AtomicU64>) -> Node {
    let cut = Arc::clone(cut);
    tower::util::BoxCloneSyncService::new(service_fn(move |_: u32| {
        let cut = Arc::clone(&cut);
        async move {
            let mut guard = Unfinished(cut, false);
            tokio::time::sleep(delay).await;
            guard.1 = true;
            Ok::<_, BoxError>(name)
        }
    }))
}

#[tokio::test(start_paused = true)]
async fn a_slow_call_is_hedged_to_another_node_and_the_loser_is_cut() {
    let cut = Arc::new(AtomicU64::new(0));
    // Idle nodes are filled in order: the first call goes to the front node; make whichever
    // that is slow by giving both the same pool and checking the answer.
    let pool = Pool::builder(Rng::new(1))
        .limiter(|| Limiter::new(Fixed::new(10)))
        .hold(Duration::ZERO, 0.5)
        .build();
    pool.add("slow", node("slow", MS * 500, &cut));
    pool.add("fast", node("fast", MS * 20, &cut));
    let layer = HedgeLayer::new(HedgeSettings {
        delay: HedgeDelay::Fixed(MS * 50),
        ..HedgeSettings::default()
    });
    let hedged = layer.layer(pool.clone());
    let mut slow_calls = 0;
    // Over 10 s: two nodes take turns at the front of the fill order every 5 s period.
    for _ in 0..100 {
        tokio::time::sleep(MS * 80).await;
        let started = tokio::time::Instant::now();
        let answer = hedged.clone().oneshot(1).await.unwrap();
        assert_eq!(answer, "fast", "the fast copy wins");
        let took = started.elapsed();
        if took > MS * 20 {
            // The first copy went to the slow node: hedged at 50 ms, answered at 70 ms.
            assert_eq!(took, MS * 70);
            slow_calls += 1;
        }
    }
    assert!(slow_calls > 0, "the slow node took some first copies");
    let stats = layer.stats();
    assert_eq!(stats.calls, 100);
    assert_eq!(stats.hedges, slow_calls);
    assert_eq!(stats.hedge_wins, slow_calls);
    // Each losing copy was dropped, which cut the slow node's call short.
    assert_eq!(cut.load(Ordering::SeqCst), slow_calls);
}

#[tokio::test(start_paused = true)]
async fn the_first_answer_wins_and_the_budget_caps_the_extra_load() {
    let cut = Arc::new(AtomicU64::new(0));
    let slow = node("slow", MS * 100, &cut);
    let layer = HedgeLayer::new(HedgeSettings {
        delay: HedgeDelay::Fixed(MS * 10),
        budget: 0.1,
        burst: 2.0,
        ..HedgeSettings::default()
    });
    let hedged = layer.layer(slow);
    // Every call slow, one at a time: both copies take 100 ms, the first (sent first) wins.
    for _ in 0..100 {
        let started = tokio::time::Instant::now();
        assert_eq!(hedged.clone().oneshot(1).await.unwrap(), "slow");
        assert_eq!(started.elapsed(), MS * 100);
    }
    let stats = layer.stats();
    // The burst of two, then one call in ten.
    assert!(stats.hedges <= 2 + 10, "{stats:?}");
    assert!(stats.hedges >= 10, "{stats:?}");
    assert_eq!(
        stats.hedge_wins, 0,
        "the first copy answered first each time"
    );
    assert_eq!(stats.hedges + stats.refused, 100);
    assert_eq!(cut.load(Ordering::SeqCst), stats.hedges, "each hedge cut");
}

#[tokio::test(start_paused = true)]
async fn a_percentile_delay_hedges_only_the_slowest() {
    let cut = Arc::new(AtomicU64::new(0));
    // Nineteen calls in twenty take 10 ms, one 1 s.
    let calls = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&calls);
    let cut2 = Arc::clone(&cut);
    let service = service_fn(move |_: u32| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        let cut = Arc::clone(&cut2);
        async move {
            let mut guard = Unfinished(cut, false);
            let delay = if n % 20 == 19 { MS * 1000 } else { MS * 10 };
            tokio::time::sleep(delay).await;
            guard.1 = true;
            Ok::<_, BoxError>(n)
        }
    });
    let layer = HedgeLayer::new(HedgeSettings {
        // The 95th percentile is 10 ms; hedging at 15 ms leaves the usual calls alone.
        delay: HedgeDelay::Percentile {
            percentile: 0.95,
            min: MS * 15,
        },
        budget: 0.5,
        ..HedgeSettings::default()
    });
    let hedged = layer.layer(service);
    let mut slowest = Duration::ZERO;
    for i in 0..400 {
        let started = tokio::time::Instant::now();
        hedged.clone().oneshot(1).await.unwrap();
        if i >= 100 {
            slowest = slowest.max(started.elapsed());
        }
    }
    // Once the percentile is known, a 1 s call is hedged at 15 ms and its copy, a fast call,
    // answers 10 ms later; no usual call is hedged.
    assert!(slowest <= MS * 25, "{slowest:?}");
    let stats = layer.stats();
    assert!(stats.hedge_wins >= 15, "{stats:?}");
    assert_eq!(
        stats.hedges, stats.hedge_wins,
        "only the slow ones: {stats:?}"
    );
    assert_eq!(cut.load(Ordering::SeqCst), stats.hedges);
}

/// Setting the clock of a layer already cloned never panics: the layer returned has a policy
/// of its own, started from the same state, and the clone keeps working.
#[tokio::test(start_paused = true)]
async fn a_clock_set_after_a_clone_gives_a_layer_of_its_own() {
    let layer = HedgeLayer::new(HedgeSettings::default());
    let clone = layer.clone();
    let own = layer.clock(status_core::Clock::tokio());
    let service = clone.layer(tower::service_fn(|x: u32| async move {
        Ok::<_, std::io::Error>(x)
    }));
    assert_eq!(service.oneshot(1).await.unwrap(), 1);
    assert_eq!(clone.stats().calls, 1);
    assert_eq!(
        own.stats().calls,
        0,
        "not shared with the clone made before"
    );
}
