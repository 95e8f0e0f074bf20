//! The culler: every interval, the policy's decision on the failure window; over the
//! threshold, a token from the budget, then the `Cull` rotation hold.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use status_core::check::CheckOutcome;
use status_core::{CheckStatus, HoldSource, Registry, Reporter};
use tokio::sync::watch;
use tokio::time::Instant;

use super::budget::Budget;
use super::policy::{next_look, CullPolicy, Look};
use crate::count::Failures;
use crate::sync::lock;

/// What the culler did and knows, for the dashboard and the metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CullerState {
    /// Failures in the window at the last look.
    pub failures: u64,
    /// The policy's threshold.
    pub threshold: u64,
    /// The window, in seconds.
    pub window_s: u64,
    /// The budget, described.
    pub budget: String,
    /// Whether this instance culled itself.
    pub culled: bool,
    /// Asks refused because the budget was spent (or counted spent: its store did not know
    /// it).
    pub denied_spent: u64,
    /// Asks that could not reach the budget (a refusal too).
    pub denied_unreachable: u64,
    /// Looks over the threshold that did not ask the budget because the failure was shared
    /// ([`Culler::shared`]).
    pub excused_shared: u64,
    /// The last decision and why, with its time.
    pub last: Option<(DateTime<Utc>, String)>,
}

/// A running culler; dropping it does not stop it (it stops with the registry).
#[derive(Debug, Clone)]
pub struct CullerHandle {
    state: Arc<Mutex<CullerState>>,
    culled: watch::Receiver<bool>,
}

impl CullerHandle {
    /// What it did and knows now.
    #[must_use]
    pub fn state(&self) -> CullerState {
        lock(&self.state).clone()
    }

    /// Resolves once the instance culled itself: for an application that exits after a
    /// delay (in-flight requests finish meanwhile).
    pub async fn culled(&self) {
        let mut culled = self.culled.clone();
        let _ = culled.wait_for(|c| *c).await;
    }
}

/// Configures and starts a culler.
#[derive(Debug)]
#[must_use = "a culler does nothing until started"]
pub struct Culler {
    registry: Registry,
    failures: Failures,
    budget: Arc<dyn Budget>,
    policy: CullPolicy,
    interval: Duration,
    reporter: Option<Reporter>,
    shared: Option<Shared>,
}

/// Whether the instance's failures are a failure its data center shares, and which.
#[derive(Clone)]
struct Shared(Arc<dyn Fn() -> Option<String> + Send + Sync>);

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Shared")
    }
}

impl Culler {
    /// A culler of `registry`'s instance, judging by `failures`, asking `budget`. Defaults:
    /// threshold 50 failures, no minimum uptime, every 10 s (±20 %, from the registry's seed).
    pub fn new(registry: &Registry, failures: Failures, budget: Arc<dyn Budget>) -> Self {
        Self {
            registry: registry.clone(),
            failures,
            budget,
            policy: CullPolicy {
                threshold: 50,
                min_uptime: Duration::ZERO,
            },
            interval: Duration::from_secs(10),
            reporter: None,
            shared: None,
        }
    }

    /// Attributes the failures before the budget is asked: while `shared` names a failure
    /// the instance's data center shares (status-fleet's `Fleet::shared_failure`: a
    /// dependency its traffic depends on, failing on most of the others too), the culler
    /// does not ask the budget and says why on its dependency (MINOR): a restart would not
    /// mend it, and `capacity` healthy instances would restart for nothing. An instance
    /// failing alone is culled as before. Asked from memory at each look over the threshold.
    pub fn shared(mut self, shared: impl Fn() -> Option<String> + Send + Sync + 'static) -> Self {
        self.shared = Some(Shared(Arc::new(shared)));
        self
    }

    /// Failures in the window at which the instance counts as broken.
    pub fn threshold(mut self, threshold: u64) -> Self {
        self.policy.threshold = threshold;
        self
    }

    /// How long after the culler starts the instance may cull itself.
    pub fn min_uptime(mut self, min_uptime: Duration) -> Self {
        self.policy.min_uptime = min_uptime;
        self
    }

    /// How often it looks (each wait jittered by ±20 %).
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Reports to `reporter` (the passive dependency `culler`) at every look: OK under the
    /// threshold, MINOR over it without a cull (and why), MAJOR once culled: at once, past
    /// the dependency's hysteresis ([`CheckOutcome::settled`]), and for good. A cull is also
    /// logged at WARN with its reason.
    pub fn report_to(mut self, reporter: Reporter) -> Self {
        self.reporter = Some(reporter);
        self
    }

    /// Starts it on the current Tokio runtime.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn start(self) -> CullerHandle {
        let state = Arc::new(Mutex::new(CullerState {
            failures: 0,
            threshold: self.policy.threshold,
            window_s: self.failures.window().as_secs(),
            budget: self.budget.describe(),
            culled: false,
            denied_spent: 0,
            denied_unreachable: 0,
            excused_shared: 0,
            last: None,
        }));
        let (tx, rx) = watch::channel(false);
        let handle = CullerHandle {
            state: Arc::clone(&state),
            culled: rx,
        };
        tokio::spawn(self.run(state, tx));
        handle
    }

    /// Looks every interval until the registry is gone (it holds only a weak one) or the
    /// instance culled itself.
    async fn run(self, state: Arc<Mutex<CullerState>>, culled: watch::Sender<bool>) {
        let started = Instant::now();
        let mut rng = self.registry.rng("culler");
        let weak = self.registry.downgrade();
        let Self {
            registry,
            failures,
            budget,
            policy,
            interval,
            reporter,
            shared,
        } = self;
        drop(registry);
        let set = |f: &dyn Fn(&mut CullerState)| {
            f(&mut lock(&state));
        };
        loop {
            tokio::time::sleep(next_look(interval, &mut rng)).await;
            let Some(registry) = weak.upgrade() else {
                return;
            };
            let (seen_failures, _) = failures.count();
            let leaving = !registry.holds().is_empty();
            let decision = policy.decide(seen_failures, started.elapsed(), leaving);
            let threshold = policy.threshold;
            let window = failures.window().as_secs();
            let seen = format!("{seen_failures} failures in {window} s (threshold {threshold})");
            let look = match Look::of(decision) {
                Some(look) => look,
                None => match shared.as_ref().and_then(|shared| (shared.0)()) {
                    Some(why) => Look::Shared(why),
                    None => Look::granted(budget.take().await),
                },
            };
            let mut why = look.message(&seen);
            let mut status = look.status();
            match look {
                Look::Cull { used } => {
                    match registry.hold(HoldSource::Cull, &why, None, Some("culler")) {
                        Ok(_) => {
                            tracing::warn!(
                                failures = seen_failures,
                                threshold,
                                budget_token = used,
                                "{why}: out of rotation, liveness fails"
                            );
                            set(&|s| s.culled = true);
                            let _ = culled.send(true);
                        }
                        Err(e) => {
                            status = CheckStatus::Minor;
                            why = format!("{seen}; cannot hold: {e}");
                        }
                    }
                }
                Look::Spent { .. } | Look::Unknown { .. } => set(&|s| s.denied_spent += 1),
                Look::Unreachable(_) => set(&|s| s.denied_unreachable += 1),
                Look::Shared(_) => set(&|s| s.excused_shared += 1),
                Look::Healthy | Look::Leaving | Look::TooYoung => {}
            }
            let at = registry.clock().wall();
            set(&|s| {
                s.failures = seen_failures;
                s.last = Some((at, why.clone()));
            });
            if let Some(reporter) = &reporter {
                let mut outcome =
                    CheckOutcome::new(status, why.clone()).with_value(seen_failures as f64);
                if *culled.borrow() {
                    // A cull is a fact, not a failure to debounce: MAJOR at once.
                    outcome = outcome.settled();
                }
                if reporter.record(outcome).is_none() {
                    return;
                }
            }
            if *culled.borrow() {
                // Culled for good: the hold stays until the process goes.
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cull::{Asking, BudgetError, InProcessBudget};

    const S: Duration = Duration::from_secs(1);

    /// A budget that cannot be reached: fault injection.
    #[derive(Debug)]
    struct Down;

    impl Budget for Down {
        fn take(&self) -> Asking<'_> {
            Box::pin(async { Err(BudgetError::Unreachable("connection refused".into())) })
        }
        fn describe(&self) -> String {
            "down".into()
        }
    }

    fn instance(
        budget: &Arc<dyn Budget>,
        min_uptime: Duration,
    ) -> (Registry, Failures, CullerHandle) {
        let registry = Registry::builder().seed(7).build();
        let failures = Failures::new(60 * S);
        let handle = Culler::new(&registry, failures.clone(), Arc::clone(budget))
            .threshold(10)
            .min_uptime(min_uptime)
            .interval(10 * S)
            .start();
        (registry, failures, handle)
    }

    fn fail(failures: &Failures, n: usize) {
        for _ in 0..n {
            failures.record(true);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_shared_budget_lets_only_its_capacity_cull() {
        let budget: Arc<dyn Budget> = Arc::new(InProcessBudget::new(2, 600 * S));
        let fleet: Vec<_> = (0..5).map(|_| instance(&budget, Duration::ZERO)).collect();
        for (_, failures, _) in &fleet {
            fail(failures, 20);
        }
        tokio::time::sleep(13 * S).await; // every culler looked once (8 to 12 s)
        let culled: Vec<bool> = fleet.iter().map(|(_, _, h)| h.state().culled).collect();
        assert_eq!(culled.iter().filter(|c| **c).count(), 2, "{culled:?}");
        for (registry, _, handle) in &fleet {
            let state = handle.state();
            assert_eq!(registry.cull_hold().is_some(), state.culled);
            if !state.culled {
                assert_eq!(state.denied_spent, 1);
                assert!(state.last.unwrap().1.contains("the budget is spent"));
            }
        }
    }

    /// A budget that counts its asks, and grants every one.
    #[derive(Debug, Default)]
    struct Counting(std::sync::atomic::AtomicU64);

    impl Budget for Counting {
        fn take(&self) -> Asking<'_> {
            let used = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            Box::pin(async move { Ok(super::super::Grant::Token { used }) })
        }
        fn describe(&self) -> String {
            "counting".into()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_shared_failure_never_asks_the_budget_and_a_lone_one_is_culled() {
        let budget = Arc::new(Counting::default());
        let shared = Arc::new(std::sync::Mutex::new(Some(
            "primary-db OUTAGE is shared: 8 of the 9 other instances of dc-1 fail it too"
                .to_owned(),
        )));
        let registry = Registry::builder().seed(7).build();
        let failures = Failures::new(60 * S);
        let handle = Culler::new(&registry, failures.clone(), budget.clone())
            .threshold(10)
            .interval(10 * S)
            .shared({
                let shared = Arc::clone(&shared);
                move || shared.lock().unwrap().clone()
            })
            .start();
        fail(&failures, 20);
        tokio::time::sleep(40 * S).await; // three looks at least
        let state = handle.state();
        assert!(!state.culled && registry.cull_hold().is_none());
        assert!(state.excused_shared >= 3, "{state:?}");
        assert_eq!(budget.0.load(std::sync::atomic::Ordering::SeqCst), 0);
        assert!(state
            .last
            .unwrap()
            .1
            .contains("not culling, the failure is shared: primary-db OUTAGE"));
        // The failure is this instance's alone now: culled at the next look.
        *shared.lock().unwrap() = None;
        tokio::time::sleep(13 * S).await;
        assert!(handle.state().culled && registry.cull_hold().is_some());
        assert_eq!(budget.0.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn no_cull_when_young_leaving_healthy_or_uncoordinated() {
        let budget: Arc<dyn Budget> = Arc::new(InProcessBudget::new(10, 600 * S));
        let (young, failures, handle) = instance(&budget, 60 * S);
        fail(&failures, 20);
        tokio::time::sleep(13 * S).await;
        assert!(young.cull_hold().is_none());
        assert!(handle.state().last.unwrap().1.contains("minimum uptime"));

        let (draining, failures, handle) = instance(&budget, Duration::ZERO);
        draining.drain("deploy", None, None).unwrap();
        fail(&failures, 20);
        tokio::time::sleep(13 * S).await;
        assert!(draining.cull_hold().is_none());
        assert!(handle
            .state()
            .last
            .unwrap()
            .1
            .contains("already out of rotation"));

        let (healthy, failures, handle) = instance(&budget, Duration::ZERO);
        fail(&failures, 9);
        tokio::time::sleep(13 * S).await;
        assert!(healthy.cull_hold().is_none());
        assert_eq!(handle.state().failures, 9);

        let down: Arc<dyn Budget> = Arc::new(Down);
        let (alone, failures, handle) = instance(&down, Duration::ZERO);
        fail(&failures, 20);
        tokio::time::sleep(25 * S).await;
        assert!(alone.cull_hold().is_none(), "never without coordination");
        assert_eq!(handle.state().denied_unreachable, 2);
    }

    #[tokio::test(start_paused = true)]
    async fn the_culler_holds_no_registry_alive() {
        let budget: Arc<dyn Budget> = Arc::new(InProcessBudget::new(1, 600 * S));
        let (registry, _failures, _handle) = instance(&budget, Duration::ZERO);
        let weak = registry.downgrade();
        tokio::time::sleep(25 * S).await; // it looked, twice or more
        drop(registry);
        tokio::time::sleep(15 * S).await; // one more look finds it gone
        assert!(
            weak.upgrade().is_none(),
            "the culler kept the registry alive"
        );
    }

    #[test]
    fn the_look_is_the_same_step_for_every_driver() {
        let mut a = status_core::Rng::new(9);
        let mut b = status_core::Rng::new(9);
        for _ in 0..100 {
            let wait = next_look(10 * S, &mut a);
            assert!(wait >= 8 * S && wait <= 12 * S, "{wait:?}");
            assert_eq!(wait, next_look(10 * S, &mut b), "one seed, one schedule");
        }
        assert_eq!(
            Look::of(crate::cull::Decision::AskBudget { failures: 9 }),
            None
        );
        let culled = Look::granted(Ok(crate::cull::Grant::Token { used: 2 }));
        assert_eq!(culled.status(), CheckStatus::Major);
        assert_eq!(
            culled.message("9 failures"),
            "culled: 9 failures; budget token 2"
        );
        let down = Look::granted(Err(crate::cull::BudgetError::Unreachable("refused".into())));
        assert_eq!(down.status(), CheckStatus::Minor);
        assert!(down.message("9 failures").contains("not culling"));
    }

    #[tokio::test(start_paused = true)]
    async fn culling_holds_the_instance_and_says_so() {
        let registry = Registry::builder().seed(1).build();
        let reporter = registry
            .add_passive(
                status_core::Dependency::passive("culler")
                    .urgency(status_core::Urgency::None)
                    .build_info()
                    .unwrap(),
            )
            .unwrap();
        let failures = Failures::new(60 * S);
        let budget: Arc<dyn Budget> = Arc::new(InProcessBudget::new(1, 600 * S));
        let handle = Culler::new(&registry, failures.clone(), budget)
            .threshold(5)
            .report_to(reporter)
            .start();
        tokio::time::sleep(13 * S).await;
        assert_eq!(registry.result("culler").unwrap().status(), CheckStatus::Ok);
        fail(&failures, 5);
        tokio::time::timeout(30 * S, handle.culled()).await.unwrap();
        let hold = registry.cull_hold().unwrap();
        assert!(
            hold.reason.starts_with("culled: 5 failures in 60 s"),
            "{}",
            hold.reason
        );
        assert_eq!(hold.actor.as_deref(), Some("culler"));
        assert!(!registry.readiness().ready());
        let result = registry.result("culler").unwrap();
        assert_eq!(result.observed_value(), Some(5.0));
        assert!(
            result.message().starts_with("culled"),
            "{}",
            result.message()
        );
        assert_eq!(
            result.status(),
            CheckStatus::Major,
            "at once, past the grace"
        );
        tokio::time::sleep(600 * S).await;
        assert_eq!(
            registry.result("culler").unwrap().status(),
            CheckStatus::Major
        );
    }
}
