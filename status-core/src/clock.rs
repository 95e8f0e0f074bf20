//! The one source of time for the engine.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::time::Instant;

/// A source of time: a monotonic instant and the wall-clock time that goes with it.
///
/// The engine's schedules, timeouts and debounces run on Tokio's timer, so a source must
/// advance with Tokio's instant: it can place the wall clock elsewhere (reproducible
/// timestamps, a clock read from a time server), not run time at its own pace. The default,
/// [`Clock::tokio`], is right for applications, and for tests on Tokio's paused time, which is
/// how the engine runs faster than real time. A simulator does not drive the engine: it
/// drives the pure state machines of status-traffic, told the time directly.
pub trait TimeSource: Send + Sync + fmt::Debug + 'static {
    /// The current monotonic instant.
    fn now(&self) -> Instant;
    /// The wall-clock time at `instant`.
    fn wall_at(&self, instant: Instant) -> DateTime<Utc>;
}

/// The clock every time-dependent part of the engine reads. Cheap to clone.
///
/// # Example
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use status_core::Clock;
///
/// let clock = Clock::tokio();
/// let (t0, w0) = (clock.now(), clock.wall());
/// tokio::time::sleep(Duration::from_secs(90)).await; // instant under paused time
/// assert_eq!(clock.now() - t0, Duration::from_secs(90));
/// assert_eq!((clock.wall() - w0).num_seconds(), 90);
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Clock {
    source: Arc<dyn TimeSource>,
    /// The instant it was made: the origin of [`elapsed`](Self::elapsed).
    origin: Instant,
}

impl Clock {
    /// Tokio's clock, with the wall-clock time read once at creation and advanced with Tokio's
    /// instant from then on.
    ///
    /// Timestamps therefore agree with measured durations, never go backwards when the system
    /// clock is stepped, and follow Tokio's paused time in tests.
    #[must_use]
    pub fn tokio() -> Self {
        Self::tokio_starting_at(Utc::now())
    }

    /// Tokio's clock, reading `wall` now: for tests and simulations that want reproducible
    /// timestamps.
    #[must_use]
    pub fn tokio_starting_at(wall: DateTime<Utc>) -> Self {
        Self::from_source(TokioTime {
            anchor: Instant::now(),
            wall,
        })
    }

    /// A clock reading `source`.
    #[must_use]
    pub fn from_source(source: impl TimeSource) -> Self {
        let origin = source.now();
        Self {
            source: Arc::new(source),
            origin,
        }
    }

    /// The time since this clock was made: the one time axis the state machines driven
    /// beside a registry are told (the traffic mechanisms' included, when built with
    /// [`Registry::clock`](crate::Registry::clock)), so that their histories line up.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use status_core::Registry;
    ///
    /// let registry = Registry::new();
    /// tokio::time::sleep(Duration::from_secs(30)).await;
    /// // A mechanism made now, on the registry's clock, is 30 s into the same axis.
    /// let clock = registry.clock().clone();
    /// assert_eq!(clock.elapsed(), Duration::from_secs(30));
    /// assert_eq!(clock.offset(clock.now()), clock.elapsed());
    /// # }
    /// ```
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        self.since(self.origin)
    }

    /// `instant` on the axis of [`elapsed`](Self::elapsed) (zero if before its origin).
    #[must_use]
    pub fn offset(&self, instant: Instant) -> Duration {
        instant.saturating_duration_since(self.origin)
    }

    /// The current monotonic instant.
    #[must_use]
    pub fn now(&self) -> Instant {
        self.source.now()
    }

    /// The current wall-clock time.
    #[must_use]
    pub fn wall(&self) -> DateTime<Utc> {
        self.source.wall_at(self.now())
    }

    /// The wall-clock time at `instant`.
    #[must_use]
    pub fn wall_at(&self, instant: Instant) -> DateTime<Utc> {
        self.source.wall_at(instant)
    }

    /// Sleeps until this clock reads `deadline`, on Tokio's timer (for a clock that does not
    /// follow Tokio's, as long as the two agree on the length of a second).
    pub(crate) async fn sleep_until(&self, deadline: Instant) {
        tokio::time::sleep(deadline.saturating_duration_since(self.now())).await;
    }

    /// How long ago `instant` was (zero if it is in the future).
    pub(crate) fn since(&self, instant: Instant) -> Duration {
        self.now().saturating_duration_since(instant)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::tokio()
    }
}

#[derive(Debug)]
struct TokioTime {
    anchor: Instant,
    wall: DateTime<Utc>,
}

impl TimeSource for TokioTime {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn wall_at(&self, instant: Instant) -> DateTime<Utc> {
        if instant >= self.anchor {
            self.wall + (instant - self.anchor)
        } else {
            self.wall - (self.anchor - instant)
        }
    }
}
