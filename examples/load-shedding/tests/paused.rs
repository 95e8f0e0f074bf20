//! Both experiments at full length on Tokio's paused time, through the quickstart's router
//! without sockets: the shape of the figures BENCHMARKS.md reports, exactly and in
//! milliseconds of real time.

use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use load_shedding::{drive, Experiment, Record, Summary};
use quickstart::{app, Config, Demo, Shed};
use tower::ServiceExt;

const WORK: Duration = Duration::from_millis(300);

/// The example's settings: the quickstart's defaults but a queue the workers can serve within
/// the queue timeout.
fn shed() -> Shed {
    Shed {
        queue: 24,
        ..Shed::default()
    }
}

async fn run(experiment: &Experiment, route: &str) -> (Vec<Record>, Summary) {
    let demo = Demo::start(Config {
        demo_workers: experiment.workers,
        shed: shed(),
        ..Config::default()
    })
    .unwrap();
    let router = app(&demo);
    let records = drive(experiment, route, |path| {
        let router = router.clone();
        async move {
            let request = Request::get(path).body(Body::empty()).unwrap();
            router.oneshot(request).await.unwrap().status().as_u16()
        }
    })
    .await;
    let summary = Summary::of(experiment, &records);
    (records, summary)
}

#[tokio::test(start_paused = true)]
async fn a_burst_is_shed_at_once_and_forgotten_at_once() {
    let burst = Experiment::burst(1.0);
    let (records, protected) = run(&burst, "/demo/work").await;
    let (_, bare) = run(&burst, "/demo/work-unprotected").await;
    let deadline = shed().deadline;

    assert_eq!(
        records.len(),
        burst.schedule().len(),
        "every request answered"
    );
    assert!(protected.slowest <= deadline, "{protected:?}");
    assert!(
        protected.codes[&429] > 100,
        "the burst was shed: {protected:?}"
    );
    assert!(protected.goodput_share >= 0.9, "{protected:?}");
    assert!(
        protected.first_ok_after.unwrap() <= Duration::from_secs(1),
        "{protected:?}"
    );
    assert!(
        protected.tail_p50 <= WORK + Duration::from_millis(10),
        "{protected:?}"
    );

    // Without the layer, every request waits its turn: the answers climb far above the work
    // and stay high long after the burst.
    assert_eq!(bare.codes.keys().copied().collect::<Vec<_>>(), [200]);
    assert!(bare.slowest >= 10 * WORK, "{bare:?}");
    assert!(
        bare.normal_after >= 4 * protected.normal_after.max(WORK),
        "{bare:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn slower_work_is_shed_instead_of_queued() {
    let slowdown = Experiment::slowdown(1.0);
    let (_, protected) = run(&slowdown, "/demo/work").await;
    let (_, bare) = run(&slowdown, "/demo/work-unprotected").await;
    let deadline = shed().deadline;

    assert!(protected.slowest <= deadline, "{protected:?}");
    assert!(protected.goodput_share >= 0.9, "{protected:?}");
    assert!(
        protected.codes.get(&429).copied().unwrap_or(0)
            + protected.codes.get(&503).copied().unwrap_or(0)
            > 0,
        "the excess was refused: {protected:?}"
    );
    assert!(bare.slowest >= 2 * deadline, "{bare:?}");
    assert!(
        bare.disturbed_p99 >= 2 * protected.disturbed_p99,
        "{bare:?}"
    );
}
