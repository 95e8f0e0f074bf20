//! Events of the registry and the listeners that react to them (the engine's `bus` delivers
//! them).

use std::fmt;
use std::sync::Arc;

use crate::feature::{FeatureFlip, FeatureState};
use crate::{CheckResult, CheckStatus, DependencyId, DependencyInfo, DrainState};

/// Events queued for one listener before new ones are dropped.
pub const LISTENER_QUEUE: usize = 4096;

/// Something that happened in the registry.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Event {
    /// A dependency was registered.
    Added(Arc<DependencyInfo>),
    /// A dependency was removed.
    Removed(DependencyId),
    /// A check finished.
    Checked {
        /// The recorded result.
        result: Arc<CheckResult>,
        /// How the check ended.
        outcome: RunOutcome,
    },
    /// A dependency's reported status, or its staleness, changed.
    Changed {
        /// The status before; `None` for the first check.
        previous: Option<CheckStatus>,
        /// The result now.
        current: Arc<CheckResult>,
    },
    /// A feature's state or override changed.
    Feature {
        /// The state now.
        state: Arc<FeatureState>,
        /// The flip, when it was switched on or off.
        flip: Option<FeatureFlip>,
    },
    /// The instance started or stopped draining.
    Drain(Option<DrainState>),
    /// A hold was released by someone ([`Registry::release_by`](crate::Registry::release_by)),
    /// just before the [`Drain`](Self::Drain) event that shows it gone. A hold that runs out
    /// is released by no one, and says nothing here.
    Released {
        /// Whose hold it was.
        source: crate::HoldSource,
        /// Who released it, when said.
        actor: Option<String>,
    },
    /// A mute was set or ended, or a maintenance window started or ended; see
    /// [`Registry::mutes`](crate::Registry::mutes).
    Mutes,
}

/// Reacts to the registry's events.
///
/// Each listener runs on a thread of its own, fed by a bounded queue: a slow listener only
/// falls behind (and loses events past [`LISTENER_QUEUE`]), a panicking one is logged and
/// kept; neither delays a check.
///
/// # Example
///
/// ```
/// use status_core::{CheckResult, CheckStatus, Listener};
///
/// #[derive(Debug)]
/// struct Pager;
///
/// impl Listener for Pager {
///     fn on_changed(&self, previous: Option<CheckStatus>, current: &CheckResult) {
///         if current.status() == CheckStatus::Outage {
///             eprintln!("page: {} is down (was {previous:?})", current.id());
///         }
///     }
/// }
/// ```
pub trait Listener: Send + Sync + fmt::Debug + 'static {
    /// A dependency was registered.
    fn on_added(&self, _info: &DependencyInfo) {}
    /// A dependency was removed.
    fn on_removed(&self, _id: &DependencyId) {}
    /// A check finished.
    fn on_checked(&self, _result: &CheckResult, _outcome: RunOutcome) {}
    /// A dependency's reported status or staleness changed.
    fn on_changed(&self, _previous: Option<CheckStatus>, _current: &CheckResult) {}
    /// A feature changed.
    fn on_feature(&self, _state: &FeatureState, _flip: Option<&FeatureFlip>) {}
    /// The instance started (`Some`) or stopped (`None`) draining.
    fn on_drain(&self, _drain: Option<&DrainState>) {}
    /// A mute was set or ended, or a maintenance window started or ended.
    fn on_mutes(&self) {}
}

/// How a check ended, as counted in metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunOutcome {
    /// It returned OK.
    Ok,
    /// It returned MINOR.
    Minor,
    /// It returned MAJOR.
    Major,
    /// It returned OUTAGE (or failed).
    Outage,
    /// It ran past its timeout and was cancelled.
    Timeout,
    /// It panicked.
    Panic,
}

impl RunOutcome {
    /// Every outcome.
    pub const ALL: [RunOutcome; 6] = [
        Self::Ok,
        Self::Minor,
        Self::Major,
        Self::Outage,
        Self::Timeout,
        Self::Panic,
    ];

    /// The label used in metrics: `ok`, `minor`, `major`, `outage`, `timeout`, `panic`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Minor => "minor",
            Self::Major => "major",
            Self::Outage => "outage",
            Self::Timeout => "timeout",
            Self::Panic => "panic",
        }
    }

    pub(crate) fn of(status: CheckStatus) -> Self {
        match status {
            CheckStatus::Ok => Self::Ok,
            CheckStatus::Minor => Self::Minor,
            CheckStatus::Major => Self::Major,
            CheckStatus::Outage => Self::Outage,
        }
    }
}

impl fmt::Display for RunOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
