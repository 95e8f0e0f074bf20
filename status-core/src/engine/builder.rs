//! Configuring a [`Registry`].

use std::time::Duration;

use super::entry::EntryConfig;
use super::{Config, Registry};
use crate::{Clock, Rng};

/// Configures a [`Registry`]; see [`Registry::builder`].
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use status_core::Registry;
///
/// let registry = Registry::builder()
///     .appname("orders")
///     .jitter(0.2)
///     .flapping(20, 6)
///     .build();
/// assert_eq!(registry.appname(), "orders");
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct RegistryBuilder {
    clock: Option<Clock>,
    hostname: Option<String>,
    appname: String,
    jitter: f64,
    flap_window: usize,
    flap_threshold: usize,
    transitions_kept: usize,
    watchdog_interval: Duration,
    report_max_age: Duration,
    event_capacity: usize,
    seed: Option<u64>,
    serve_policy: crate::ServePolicy,
}

impl Default for RegistryBuilder {
    fn default() -> Self {
        Self {
            clock: None,
            hostname: None,
            appname: String::new(),
            jitter: 0.1,
            flap_window: 20,
            flap_threshold: 6,
            transitions_kept: 100,
            watchdog_interval: Duration::from_secs(1),
            report_max_age: Duration::from_secs(1),
            event_capacity: 1024,
            seed: None,
            serve_policy: crate::ServePolicy::default(),
        }
    }
}

impl RegistryBuilder {
    /// The clock to read (default [`Clock::tokio`]).
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// The host name reports carry (default: the machine's).
    pub fn hostname(mut self, hostname: impl Into<String>) -> Self {
        self.hostname = Some(hostname.into());
        self
    }

    /// The application name reports carry (default empty).
    pub fn appname(mut self, appname: impl Into<String>) -> Self {
        self.appname = appname.into();
        self
    }

    /// Spreads each period by ± this fraction, from 0.0 (none) to 0.5 (default 0.1).
    pub fn jitter(mut self, fraction: f64) -> Self {
        self.jitter = if fraction.is_nan() {
            0.0
        } else {
            fraction.clamp(0.0, 0.5)
        };
        self
    }

    /// A dependency is flapping when its last `window` reported statuses hold `threshold`
    /// changes or more (default 20 and 6); it stops when they hold half as many. A threshold
    /// of 0 turns detection off.
    pub fn flapping(mut self, window: usize, threshold: usize) -> Self {
        self.flap_window = window;
        self.flap_threshold = threshold;
        self
    }

    /// Transitions kept per dependency (default 100).
    pub fn transitions_kept(mut self, n: usize) -> Self {
        self.transitions_kept = n;
        self
    }

    /// How often results are swept for staleness (default 1 s).
    pub fn watchdog_interval(mut self, interval: Duration) -> Self {
        self.watchdog_interval = interval.max(Duration::from_millis(10));
        self
    }

    /// How old the cached report may get, while no status changed, before a read rebuilds it
    /// to show newer timestamps and durations (default 1 s). Status changes always show at
    /// once.
    pub fn report_max_age(mut self, age: Duration) -> Self {
        self.report_max_age = age;
        self
    }

    /// Events a [`subscribe`](Registry::subscribe)r may fall behind by (default 1024).
    pub fn event_capacity(mut self, capacity: usize) -> Self {
        self.event_capacity = capacity;
        self
    }

    /// Seeds every random choice of the registry — the jitter of each dependency's period
    /// included — and of what draws from [`Registry::rng`]: two registries built with the
    /// same seed, on the same (paused) time, schedule their checks at the same instants.
    /// Without a seed, each process draws its own.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Which system levels serve traffic (default: all but OUTAGE): what
    /// `/healthcheck/summary` and gRPC's `""` both answer by, and what [`Facts`] judge the
    /// verdict under.
    ///
    /// [`Facts`]: crate::Facts
    pub fn serve_policy(mut self, policy: crate::ServePolicy) -> Self {
        self.serve_policy = policy;
        self
    }

    /// The registry.
    pub fn build(self) -> Registry {
        let hostname = self
            .hostname
            .unwrap_or_else(|| gethostname::gethostname().to_string_lossy().into_owned());
        let config = Config {
            hostname,
            appname: self.appname,
            jitter: self.jitter,
            entry: EntryConfig {
                flap_window: self.flap_window,
                flap_threshold: self.flap_threshold,
            },
            transitions_kept: self.transitions_kept,
            watchdog_interval: self.watchdog_interval,
            report_max_age: self.report_max_age,
            serve_policy: self.serve_policy,
        };
        let rng = self.seed.map_or_else(Rng::from_entropy, Rng::new);
        Registry::from_parts(
            self.clock.unwrap_or_default(),
            config,
            self.event_capacity,
            rng,
        )
    }
}
