//! Timeouts, panics, concurrency and coalescing.

use std::time::Duration;

use futures::future::join_all;
use status_core::{check, CheckStatus, Dependency, TIMED_OUT};
use tokio::time::Instant;

use crate::support::{registry, Mode, Steered};

#[tokio::test(start_paused = true)]
async fn a_check_that_never_returns_times_out_and_others_finish_on_time() {
    let registry = registry();
    let hang = Steered::new(Mode::Hang);
    let fast = Steered::new(Mode::Slow(Duration::from_millis(100), CheckStatus::Ok));
    hang.register(&registry, "hangs", |d| d);
    fast.register(&registry, "fast", |d| d);

    let started = Instant::now();
    let report = registry.refresh_all().await;
    // The whole evaluation takes the timeout, not more.
    assert_eq!(started.elapsed(), Duration::from_secs(2));

    let hangs = report.result("hangs").unwrap();
    assert_eq!(hangs.status(), CheckStatus::Outage);
    assert_eq!(hangs.message(), TIMED_OUT);
    assert_eq!(hangs.duration(), Duration::from_secs(2));

    let fast = report.result("fast").unwrap();
    assert_eq!(fast.status(), CheckStatus::Ok);
    assert_eq!(fast.duration(), Duration::from_millis(100));
}

#[tokio::test(start_paused = true)]
async fn a_panicking_check_is_an_outage_and_the_engine_goes_on() {
    let registry = registry();
    let panics = Steered::new(Mode::Panic("boom"));
    let fine = Steered::ok();
    panics.register(&registry, "panics", |d| d);
    fine.register(&registry, "fine", |d| d);

    let report = registry.refresh_all().await;
    let result = report.result("panics").unwrap();
    assert_eq!(result.status(), CheckStatus::Outage);
    assert_eq!(result.message(), "Check panicked: boom");
    assert_eq!(report.result("fine").unwrap().status(), CheckStatus::Ok);

    panics.set_status(CheckStatus::Ok);
    let result = registry.refresh("panics").await.unwrap();
    assert_eq!(result.status(), CheckStatus::Ok);
    assert_eq!(panics.runs(), 2);
}

#[tokio::test(start_paused = true)]
async fn concurrent_refreshes_of_one_dependency_run_its_check_once() {
    let registry = registry();
    let slow = Steered::new(Mode::Slow(Duration::from_secs(1), CheckStatus::Ok));
    slow.register(&registry, "slow", |d| d);
    registry.refresh("slow").await.unwrap(); // joins the first, background check
    assert_eq!(slow.runs(), 1);

    let refreshes = (0..1000).map(|_| registry.refresh("slow"));
    let results = join_all(refreshes).await;
    assert_eq!(slow.runs(), 2, "1,000 refreshes ran the check once");
    let first = results[0].as_ref().unwrap();
    assert!(results
        .iter()
        .all(|r| r.as_ref().unwrap().timestamp() == first.timestamp()));
}

#[tokio::test(start_paused = true)]
async fn evaluation_is_concurrent() {
    let registry = registry();
    for i in 0..200 {
        let check = Steered::new(Mode::Slow(Duration::from_millis(50), CheckStatus::Ok));
        check.register(&registry, &format!("dep-{i}"), |d| d);
    }
    let started = Instant::now();
    let report = registry.refresh_all().await;
    assert_eq!(started.elapsed(), Duration::from_millis(50));
    assert_eq!(report.results().len(), 200);
    assert!(report
        .results()
        .iter()
        .all(|r| r.status() == CheckStatus::Ok));
}

#[tokio::test(start_paused = true)]
async fn checks_run_every_period_in_the_background() {
    let registry = registry();
    let check = Steered::ok();
    check.register(&registry, "periodic", |d| d.period(Duration::from_secs(10)));
    tokio::time::sleep(Duration::from_millis(100_500)).await;
    // At 0 s, 10 s, …, 100 s.
    assert_eq!(check.runs(), 11);
}

#[tokio::test(start_paused = true)]
async fn jitter_spreads_periods_within_bounds() {
    let registry = status_core::Registry::builder().jitter(0.2).build();
    let check = Steered::ok();
    check.register(&registry, "jittered", |d| d.period(Duration::from_secs(10)));
    tokio::time::sleep(Duration::from_secs(1000)).await;
    let started = check.started();
    let gaps: Vec<Duration> = started.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.len() >= 80, "{} runs", started.len());
    assert!(
        gaps.iter()
            .all(|g| (Duration::from_secs(8)..=Duration::from_secs(12)).contains(g)),
        "{gaps:?}"
    );
    let distinct: std::collections::HashSet<_> = gaps.iter().collect();
    assert!(
        distinct.len() > gaps.len() / 2,
        "periods were not spread: {gaps:?}"
    );
}

#[test]
fn blocking_checks_report_on_time_and_do_not_pile_up() {
    // Tokio does not advance paused time while a blocking task runs, so this one runs on a
    // real multi-threaded runtime with a short timeout.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let wait = std::sync::Mutex::new(wait);
        let registry = status_core::Registry::new();
        let dependency = Dependency::builder(
            "legacy-driver",
            check::blocking(move || {
                wait.lock().unwrap().recv().ok();
                CheckStatus::Ok
            }),
        )
        .timeout(Duration::from_millis(200))
        .period(Duration::from_secs(3600))
        .build()
        .unwrap();
        registry.add(dependency).unwrap();
        let first = registry.refresh("legacy-driver").await.unwrap();
        assert_eq!(first.status(), CheckStatus::Outage);
        assert_eq!(first.message(), TIMED_OUT);
        let second = registry.refresh("legacy-driver").await.unwrap();
        assert!(
            second.message().contains("has not returned"),
            "{}",
            second.message()
        );
        release.send(()).unwrap();
    });
}

#[test]
fn a_check_that_blocks_its_thread_still_times_out_on_time() {
    // A check that (wrongly) blocks its worker thread: the timeout is enforced from another
    // task, so the result comes at the timeout, not when the thread is given back. Real
    // multi-threaded runtime: paused time cannot show a blocked thread.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let registry = status_core::Registry::new();
        let given_back = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&given_back);
        let blocks = Dependency::builder(
            "blocks-its-thread",
            check::tiered(move || {
                let flag = std::sync::Arc::clone(&flag);
                async move {
                    std::thread::sleep(Duration::from_secs(3));
                    flag.store(true, std::sync::atomic::Ordering::SeqCst);
                    CheckStatus::Ok
                }
            }),
        )
        .timeout(Duration::from_millis(200))
        .period(Duration::from_secs(3600))
        .build()
        .unwrap();
        let fine = Dependency::builder("fine", check::tiered(|| async { CheckStatus::Ok }))
            .period(Duration::from_secs(3600))
            .build()
            .unwrap();
        registry.add(blocks).unwrap();
        registry.add(fine).unwrap();
        let result = registry.refresh("blocks-its-thread").await.unwrap();
        assert_eq!(result.message(), TIMED_OUT);
        assert!(
            !given_back.load(std::sync::atomic::Ordering::SeqCst),
            "the result came only when the blocked thread was given back"
        );
        assert_eq!(
            registry.refresh("fine").await.unwrap().status(),
            CheckStatus::Ok
        );
    });
}
