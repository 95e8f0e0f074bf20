use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use tower::{BoxError, Layer, ServiceExt};

use super::{Elapsed, QueueFull, QueueTimeout, ShedLayer};
use crate::limit::{Fixed, Limiter};

const MS: Duration = Duration::from_millis(1);

/// A request: its priority, how long its work takes, its name.
type Job = (u8, Duration, char);

/// A service that sleeps for the job's time, recording which jobs it started and finished,
/// and which were dropped unfinished.
#[derive(Clone, Default)]
struct Worker {
    started: Arc<Mutex<Vec<char>>>,
    dropped: Arc<AtomicUsize>,
}

struct DropFlag(Arc<AtomicUsize>, bool);

impl Drop for DropFlag {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Worker {
    fn service(
        &self,
    ) -> impl tower::Service<Job, Response = char, Error = Infallible, Future: Send>
           + Clone
           + Send
           + 'static {
        let this = self.clone();
        tower::service_fn(move |(_, work, name): Job| {
            let this = this.clone();
            async move {
                this.started.lock().unwrap().push(name);
                let mut flag = DropFlag(Arc::clone(&this.dropped), false);
                tokio::time::sleep(work).await;
                flag.1 = true;
                Ok::<_, Infallible>(name)
            }
        })
    }

    fn started(&self) -> Vec<char> {
        self.started.lock().unwrap().clone()
    }
}

fn layer(limit: usize, queue: usize) -> ShedLayer<Job> {
    ShedLayer::new(Limiter::new(Fixed::new(limit)))
        .queue(queue)
        .queue_timeout(Duration::from_secs(5))
        .deadline(Duration::from_secs(10))
        .priority(|job: &Job| job.0)
}

type Outcome = Result<char, BoxError>;

fn spawn<S>(service: &S, job: Job) -> tokio::task::JoinHandle<Outcome>
where
    S: tower::Service<Job, Response = char, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send,
{
    let service = service.clone();
    tokio::spawn(async move { service.oneshot(job).await })
}

#[tokio::test(start_paused = true)]
async fn a_full_queue_refuses_at_once() {
    let worker = Worker::default();
    let layer = layer(1, 1);
    let shed = layer.layer(worker.service());
    let a = spawn(&shed, (0, 100 * MS, 'a'));
    tokio::task::yield_now().await;
    let b = spawn(&shed, (0, 100 * MS, 'b'));
    tokio::task::yield_now().await;
    let refused_at = Instant::now();
    let c = shed.clone().oneshot((0, 100 * MS, 'c')).await;
    assert!(c.unwrap_err().is::<QueueFull>());
    assert_eq!(refused_at.elapsed(), Duration::ZERO, "at once");
    assert_eq!(a.await.unwrap().unwrap(), 'a');
    assert_eq!(
        b.await.unwrap().unwrap(),
        'b',
        "the queued one ran when a finished"
    );
    assert_eq!(worker.started(), ['a', 'b']);
    assert_eq!(layer.state().queue_full, 1);
}

#[tokio::test(start_paused = true)]
async fn a_request_that_waited_too_long_is_never_processed() {
    let worker = Worker::default();
    let layer = layer(1, 4).queue_timeout(100 * MS);
    let shed = layer.layer(worker.service());
    let a = spawn(&shed, (0, Duration::from_secs(1), 'a'));
    tokio::task::yield_now().await;
    let queued = Instant::now();
    let b = shed.clone().oneshot((0, 10 * MS, 'b')).await;
    assert!(b.unwrap_err().is::<QueueTimeout>());
    assert_eq!(queued.elapsed(), 100 * MS);
    a.await.unwrap().unwrap();
    assert_eq!(worker.started(), ['a'], "b never reached the service");
    assert_eq!(layer.state().queue_timeout, 1);
}

#[tokio::test(start_paused = true)]
async fn past_the_deadline_the_work_is_dropped_and_the_limit_freed() {
    let worker = Worker::default();
    let layer = layer(2, 4).deadline(200 * MS);
    let shed = layer.layer(worker.service());
    let started = Instant::now();
    let a = shed.clone().oneshot((0, Duration::from_secs(5), 'a')).await;
    assert!(a.unwrap_err().is::<Elapsed>());
    assert_eq!(started.elapsed(), 200 * MS);
    assert_eq!(
        worker.dropped.load(Ordering::SeqCst),
        1,
        "the work was cancelled"
    );
    let state = layer.state();
    assert_eq!((state.in_flight, state.elapsed), (0, 1));
}

#[tokio::test(start_paused = true)]
async fn the_lowest_priority_is_shed_first_and_the_highest_served_first() {
    let worker = Worker::default();
    let layer = layer(1, 2);
    let shed = layer.layer(worker.service());
    let a = spawn(&shed, (0, 100 * MS, 'a'));
    tokio::task::yield_now().await;
    let low1 = spawn(&shed, (0, 10 * MS, 'l'));
    let low2 = spawn(&shed, (0, 10 * MS, 'm'));
    tokio::task::yield_now().await;
    let high = spawn(&shed, (5, 10 * MS, 'h'));
    tokio::task::yield_now().await;
    // The queue was full: the newest of the lowest gave its place up.
    assert!(low2.await.unwrap().unwrap_err().is::<QueueFull>());
    // The queue holds `h` and `l`: a higher one takes the place of `l`, the lowest.
    let top = spawn(&shed, (9, 10 * MS, 't'));
    tokio::task::yield_now().await;
    assert!(low1.await.unwrap().unwrap_err().is::<QueueFull>());
    a.await.unwrap().unwrap();
    high.await.unwrap().unwrap();
    top.await.unwrap().unwrap();
    assert_eq!(worker.started(), ['a', 't', 'h']);
    // `x` runs, `y` and `z` fill the queue: one of their rank finds no place to take.
    let _x = spawn(&shed, (0, Duration::from_secs(1), 'x'));
    tokio::task::yield_now().await;
    let _y = spawn(&shed, (5, Duration::from_secs(1), 'y'));
    let _z = spawn(&shed, (5, Duration::from_secs(1), 'z'));
    tokio::task::yield_now().await;
    let refused = shed.clone().oneshot((5, 10 * MS, 'w')).await;
    assert!(
        refused.unwrap_err().is::<QueueFull>(),
        "equal rank: no place taken"
    );
}

#[tokio::test(start_paused = true)]
async fn the_layer_reports_minor_while_it_sheds_and_ok_after() {
    use status_core::{CheckStatus, Dependency, Registry, Urgency};

    let registry = Registry::new();
    let reporter = registry
        .add_passive(
            Dependency::passive("shedding")
                .urgency(Urgency::None)
                .build_info()
                .unwrap(),
        )
        .unwrap();
    let worker = Worker::default();
    let layer = layer(1, 0);
    let _task = layer.report_to(reporter, Duration::from_secs(1));
    let shed = layer.layer(worker.service());
    let busy = spawn(&shed, (0, 500 * MS, 'a'));
    tokio::task::yield_now().await;
    assert!(shed.clone().oneshot((0, MS, 'b')).await.is_err());
    busy.await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let result = registry.result("shedding").unwrap();
    assert_eq!(result.status(), CheckStatus::Minor, "{}", result.message());
    assert!(
        result.message().contains("1 queue full"),
        "{}",
        result.message()
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let result = registry.result("shedding").unwrap();
    assert_eq!(result.status(), CheckStatus::Ok, "{}", result.message());
    assert_eq!(registry.condition(), CheckStatus::Ok, "urgency None");
    // A sample per period: the refusal in the first, none in the second.
    let history = layer.history();
    let refused: Vec<u64> = history.iter().map(|s| s.refused).collect();
    assert_eq!(refused, [1, 0], "{history:?}");
    assert!(history.iter().all(|s| s.limit == 1 && s.queued == 0));
    assert_eq!(history[1].at - history[0].at, Duration::from_secs(1));
}

/// The way in skips the queue's lock while nobody waits; a lease ending just as the first
/// waiter arrives must still reach it. On real threads, in rounds of two requests under a
/// limit of one whose work ends at once, a waiter stranded by that race would wait out its
/// queue timeout and fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_waiter_is_stranded_when_a_lease_ends_as_it_queues() {
    let layer = ShedLayer::new(Limiter::new(Fixed::new(1)))
        .queue(10)
        .queue_timeout(Duration::from_secs(2))
        .deadline(Duration::from_secs(10));
    let service = layer.layer(tower::service_fn(|(): ()| async {
        Ok::<_, Infallible>(())
    }));
    for round in 0..20_000 {
        let tasks: Vec<_> = (0..3)
            .map(|_| {
                let service = service.clone();
                tokio::spawn(async move { service.oneshot(()).await })
            })
            .collect();
        for task in tasks {
            if let Err(e) = task.await.unwrap() {
                panic!("round {round}: {e}");
            }
        }
    }
    let state = layer.state();
    assert_eq!((state.in_flight, state.queued), (0, 0));
}

#[test]
fn the_history_keeps_the_last_ten_minutes() {
    let layer = layer(1, 0);
    for second in 0..700 {
        layer.record(super::ShedSample {
            at: Duration::from_secs(second),
            limit: 1,
            in_flight: 0,
            queued: 0,
            refused: second,
            period: Duration::from_secs(1),
        });
    }
    let history = layer.history();
    assert_eq!(history.len(), 600);
    assert_eq!(
        history[0].at,
        Duration::from_secs(100),
        "oldest forgotten first"
    );
    assert_eq!(history[599].refused, 699);
}

/// Three requests under a limit of one: `a` works for `first`, `b` and `c` wait; the order
/// the worker started them in.
async fn order_after(first: Duration, lifo_after: Option<Duration>) -> Vec<char> {
    let worker = Worker::default();
    let shed = layer(1, 10).lifo_after(lifo_after).layer(worker.service());
    let a = spawn(&shed, (0, first, 'a'));
    tokio::task::yield_now().await;
    let b = spawn(&shed, (0, 10 * MS, 'b'));
    tokio::task::yield_now().await;
    let c = spawn(&shed, (0, 10 * MS, 'c'));
    for task in [a, b, c] {
        task.await.unwrap().unwrap();
    }
    worker.started()
}

#[tokio::test(start_paused = true)]
async fn a_standing_queue_serves_its_newest_first() {
    let lifo = Some(250 * MS);
    assert_eq!(
        order_after(100 * MS, lifo).await,
        ['a', 'b', 'c'],
        "no queue stood"
    );
    assert_eq!(
        order_after(Duration::from_secs(1), lifo).await,
        ['a', 'c', 'b']
    );
    assert_eq!(
        order_after(Duration::from_secs(1), None).await,
        ['a', 'b', 'c'],
        "FIFO"
    );
}

#[tokio::test(start_paused = true)]
async fn a_deadline_sooner_than_the_queue_timeout_ends_the_wait() {
    let worker = Worker::default();
    let layer = layer(1, 1)
        .queue_timeout(Duration::from_secs(5))
        .deadline(200 * MS);
    let shed = layer.layer(worker.service());
    let a = spawn(&shed, (0, Duration::from_secs(1), 'a'));
    tokio::task::yield_now().await;
    let started = Instant::now();
    let b = shed.clone().oneshot((0, 10 * MS, 'b')).await;
    assert!(b.unwrap_err().is::<Elapsed>());
    assert_eq!(started.elapsed(), 200 * MS);
    assert!(a.await.unwrap().unwrap_err().is::<Elapsed>());
    assert_eq!(worker.started(), ['a'], "b was never processed");
    let state = layer.state();
    assert_eq!(
        (state.elapsed, state.queue_timeout, state.in_flight),
        (2, 0, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn a_client_that_goes_away_frees_its_place() {
    let worker = Worker::default();
    let layer = layer(1, 4);
    let shed = layer.layer(worker.service());
    let a = spawn(&shed, (0, Duration::from_secs(10), 'a'));
    tokio::task::yield_now().await;
    let b = spawn(&shed, (0, 10 * MS, 'b'));
    tokio::task::yield_now().await;
    assert_eq!((layer.state().in_flight, layer.state().queued), (1, 1));
    // The running one's client goes away: its work is dropped and the waiting one runs.
    a.abort();
    assert_eq!(b.await.unwrap().unwrap(), 'b');
    assert_eq!(worker.dropped.load(Ordering::SeqCst), 1);
    assert_eq!((layer.state().in_flight, layer.state().queued), (0, 0));
}
