//! Listeners see everything and cannot hurt the engine.

use std::sync::mpsc;
use std::sync::Mutex;
use std::time::Duration;

use status_core::{CheckResult, CheckStatus, DependencyInfo, Listener, RunOutcome};

use crate::support::{registry, Steered};

#[derive(Debug)]
struct Panics;

impl Listener for Panics {
    fn on_checked(&self, _: &CheckResult, _: RunOutcome) {
        panic!("listener bug");
    }
}

#[derive(Debug)]
struct Slow;

impl Listener for Slow {
    fn on_checked(&self, _: &CheckResult, _: RunOutcome) {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

#[derive(Debug)]
struct Records(Mutex<mpsc::Sender<String>>);

impl Listener for Records {
    fn on_added(&self, info: &DependencyInfo) {
        self.send(format!("added {}", info.id()));
    }
    fn on_checked(&self, result: &CheckResult, outcome: RunOutcome) {
        self.send(format!("checked {} {outcome}", result.id()));
    }
    fn on_changed(&self, previous: Option<CheckStatus>, current: &CheckResult) {
        self.send(format!(
            "changed {} {previous:?} -> {}",
            current.id(),
            current.status()
        ));
    }
}

impl Records {
    fn send(&self, line: String) {
        self.0.lock().unwrap().send(line).ok();
    }
}

#[tokio::test(start_paused = true)]
async fn panicking_and_slow_listeners_do_not_affect_checks() {
    let registry = registry();
    let (tx, rx) = mpsc::channel();
    registry.add_listener(Panics).unwrap();
    registry.add_listener(Slow).unwrap();
    registry.add_listener(Records(Mutex::new(tx))).unwrap();
    let check = Steered::ok();
    check.register(&registry, "db", |d| d.failures_before_outage(1));
    registry.refresh("db").await.unwrap();
    check.set_status(CheckStatus::Outage);
    for _ in 0..10 {
        registry.refresh("db").await.unwrap();
    }
    assert_eq!(check.runs(), 11);
    assert_eq!(registry.result("db").unwrap().status(), CheckStatus::Outage);

    // The good listener saw every event, in order, though the others panicked or stalled.
    let seen: Vec<String> = (0..14)
        .map(|_| rx.recv_timeout(Duration::from_secs(30)).unwrap())
        .collect();
    assert_eq!(seen[0], "added db");
    assert_eq!(seen[1], "checked db ok");
    assert_eq!(seen[2], "changed db None -> OK");
    assert_eq!(seen[3], "checked db outage");
    assert_eq!(seen[4], "changed db Some(Ok) -> OUTAGE");
    assert_eq!(seen.iter().filter(|l| l.starts_with("checked")).count(), 11);
}

#[tokio::test(start_paused = true)]
async fn outcomes_tell_timeouts_and_panics_apart() {
    let registry = registry();
    let (tx, rx) = mpsc::channel();
    registry.add_listener(Records(Mutex::new(tx))).unwrap();
    let hang = Steered::new(crate::support::Mode::Hang);
    let boom = Steered::new(crate::support::Mode::Panic("boom"));
    hang.register(&registry, "hang", |d| d);
    boom.register(&registry, "boom", |d| d);
    registry.refresh_all().await;
    let lines: Vec<String> = (0..6)
        .map(|_| rx.recv_timeout(Duration::from_secs(30)).unwrap())
        .collect();
    assert!(
        lines.contains(&"checked hang timeout".to_owned()),
        "{lines:?}"
    );
    assert!(
        lines.contains(&"checked boom panic".to_owned()),
        "{lines:?}"
    );
}

/// Blocks on its first event until the test lets it go.
#[derive(Debug)]
struct Stuck(Mutex<mpsc::Receiver<()>>);

impl Listener for Stuck {
    fn on_checked(&self, _: &CheckResult, _: RunOutcome) {
        self.0.lock().unwrap().recv().ok();
    }
}

#[tokio::test(start_paused = true)]
async fn a_stuck_listener_loses_events_instead_of_holding_checks() {
    let registry = registry();
    let (release, stuck) = mpsc::channel();
    registry.add_listener(Stuck(Mutex::new(stuck))).unwrap();
    let check = Steered::ok();
    check.register(&registry, "db", |d| d);
    let runs = status_core::LISTENER_QUEUE + 100;
    for _ in 0..runs {
        registry.refresh("db").await.unwrap();
    }
    // Every check ran and was recorded; the listener's queue overflowed instead.
    assert_eq!(
        check.runs(),
        runs,
        "the first refresh joined the first check"
    );
    assert!(registry.dropped_listener_events() > 0);
    release.send(()).unwrap();
}
