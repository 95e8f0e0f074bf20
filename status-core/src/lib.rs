//! Dependency health for Rust services: the model and the evaluation engine.
//!
//! Register a check for each dependency your application needs, each with an
//! [`Urgency`]; the [`Registry`] runs them in the background with timeouts and hysteresis,
//! folds their results into a system [`CheckStatus`], gates [`Feature`]s on them and reports
//! it all. This crate knows nothing of HTTP; `status-http` serves what it reports.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), status_core::Error> {
//! use std::time::Duration;
//! use status_core::{check, CheckStatus, Dependency, Feature, Registry, Urgency};
//!
//! let registry = Registry::builder().appname("shop").build();
//!
//! registry.add(
//!     Dependency::builder("payments-api", check::ping(|| async {
//!         // e.g. an HTTP call to the payments service
//!         Ok::<_, std::io::Error>(())
//!     }))
//!     .urgency(Urgency::Strong)
//!     .timeout(Duration::from_secs(2))
//!     .period(Duration::from_secs(10))
//!     .build()?,
//! )?;
//! let checkout = registry.add_feature(
//!     Feature::builder("checkout")
//!         .requires("payments-api", CheckStatus::Minor)
//!         .build()?,
//! )?;
//!
//! let report = registry.refresh_all().await;
//! assert_eq!(report.condition(), CheckStatus::Ok);
//! if checkout.is_enabled() {
//!     // show the checkout button
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # The model
//!
//! | urgency \ dependency | OUTAGE | MAJOR | MINOR | OK |
//! |---|---|---|---|---|
//! | Required | OUTAGE | MAJOR | MINOR | OK |
//! | Strong | MAJOR | MAJOR | MINOR | OK |
//! | Weak | MINOR | MINOR | MINOR | OK |
//! | None | OK | OK | OK | OK |
//!
//! The system status is the fold of [`Urgency::downgrade_with`] over every result, starting
//! from OK ([`system_status`]).
//!
//! # The engine
//!
//! - Checks run in their own tasks, concurrently, at most one per dependency at a time; a
//!   [`Registry::refresh`] joins the one in flight.
//! - A check past its timeout is cancelled and reported OUTAGE, [`TIMED_OUT`]; a check that
//!   panics is reported OUTAGE, `Check panicked: …`.
//! - Hysteresis: after a success, the first failures report MINOR and the real status comes
//!   with the third consecutive one (configurable per dependency); recovery after one success
//!   (configurable too). Dependencies that change state too often are marked `flapping`.
//! - A result older than three periods plus the timeout is `stale` and no better than MAJOR;
//!   a dependency not checked yet reports MAJOR, `Not checked yet`.
//! - A failing dependency whose declared parents fail names them as `blockedBy`.
//! - Everything reads time through one [`Clock`], so tests run on Tokio's paused time.
//!   Virtual time means exactly that: Tokio's paused time (`start_paused = true`,
//!   `tokio::time::advance`). A custom [`TimeSource`] changes what is read, not how the
//!   engine waits: waits are Tokio's timers, so a source must advance with Tokio's clock.
//! - Every random choice (the jitter of periods included) comes from one seed:
//!   [`RegistryBuilder::seed`], and [`Registry::rng`] for the mechanisms built on it.
//! - Out of rotation is a set of holds, one per [`HoldSource`]: an operator's drain, a
//!   graceful shutdown, a cull. Clearing one leaves the others; [`Registry::readiness`]
//!   answers what a readiness probe asks.
//! - Passive dependencies ([`Registry::add_passive`]) take results pushed from live traffic
//!   through a [`Reporter`], with the same hysteresis, history and features.
//! - Credentials in messages (the userinfo of URLs, `password=` pairs) are masked when
//!   recorded, in every view ([`mask_credentials`]).
//!
//! # The rest of the house
//!
//! - [`Probes`]: liveness, readiness (a bound group, the fleet's excuse) and startup,
//!   composed once for every transport (status-http's routes, status-grpc's services).
//! - [`Facts`]: what is true of the registry, computed once per report generation
//!   ([`Registry::facts`]) and read by every consumer: levels, impact, mutes, root-aware
//!   maintenance, group membership, the serving verdict under the registry's [`ServePolicy`];
//!   [`Registry::observe`] hands each change over with them.
//! - Probe groups ([`Group`], [`Registry::add_group`]): several health views of one
//!   application, each with its own rule, folded as the system is.
//! - Mutes and maintenance windows ([`Registry::mute`], [`MuteWindow`]): a dependency still
//!   checked and shown, but never told.
//! - [`check`]: what a check is, checks from closures and a failure ratio; checks of real
//!   components (Redis, PostgreSQL, HTTP, TCP, DNS, disk, memory, TLS, …) are the satellite
//!   crate `status-checks`'s.
//! - [`Excuse`]: what may excuse a readiness failing on the condition alone; the fleet's is
//!   one.
//!
//! Satellite crates build on this one, as tracing-subscriber builds on tracing-core:
//! **status-checks** (checks of real components and the Redis and etcd clients the stores
//! share), **status-fleet** (each instance's summary in a shared store, data-center verdicts
//! for GSLB, fleet-aware readiness) and **status-notify** (the notification policy and its
//! delivery to signed webhooks and Slack). An application that only answers probes compiles
//! none of them.
//!
//! # Cargo features
//!
//! | feature | what |
//! |---|---|
//! | `macros` | [`dependency`], [`feature!`] and [`group!`]: declare dependencies, features and probe groups in a line, validated at compile time |
//!
//! No feature is on by default. On docs.rs each gated item names the feature it needs.
//!
//! The core itself needs only Tokio, `futures`, `serde`, `serde_json`, `chrono` and `tracing`.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod audit;
mod clock;
mod dependency;
mod engine;
mod error;
mod event;
mod facts;
mod feature;
mod group;
mod history;
mod id;
mod mask;
mod mute;
mod probes;
mod rand;
mod readiness;
mod report;
mod result;
mod rotation;
mod status;
mod sync;
pub mod text;
mod urgency;

pub mod check;

/// Declares a dependency on an `async fn`; see the attribute's documentation in
/// `status-macros`.
///
/// ```
/// use status_core::CheckStatus;
///
/// /// The orders database.
/// #[status_core::dependency(id = "primary-db", urgency = "required", timeout = "2s", period = "10s")]
/// async fn primary_db() -> Result<(), std::io::Error> {
///     Ok(())
/// }
///
/// #[status_core::dependency(urgency = "weak", tags = ["cache"])]
/// async fn cache() -> (CheckStatus, String) {
///     (CheckStatus::Ok, "warm".to_owned())
/// }
///
/// let db = primary_db();
/// assert_eq!(db.info().id().as_str(), "primary-db");
/// assert_eq!(db.info().timeout(), std::time::Duration::from_secs(2));
/// assert_eq!(cache().info().id().as_str(), "cache");
/// ```
#[cfg(feature = "macros")]
pub use status_macros::dependency;

/// Declares a feature and its requirements, validated at compile time.
///
/// ```
/// let checkout = status_core::feature! {
///     name = "checkout",
///     description = "Pay for the cart",
///     requires = { "payments-api": MINOR },
///     requires_system = MAJOR,
/// };
/// assert_eq!(checkout.name().as_str(), "checkout");
/// assert_eq!(checkout.requirements().len(), 2);
/// ```
#[cfg(feature = "macros")]
pub use status_macros::feature;

/// Declares a probe group, validated at compile time (see [`Group`]).
///
/// ```
/// let cache = status_core::group! {
///     name = "cache",
///     tags = ["cache"],
///     dependencies = ["session-store"],
///     fails_on = MINOR,
///     rotation = false,
/// };
/// assert_eq!(cache.name().as_str(), "cache");
/// assert_eq!(cache.fails_on(), status_core::CheckStatus::Minor);
/// assert!(!cache.rotation() && cache.startup());
/// ```
#[cfg(feature = "macros")]
pub use status_macros::group;

pub use self::audit::AuditRecord;
pub use self::clock::{Clock, TimeSource};
pub use self::dependency::{
    Dependency, DependencyBuilder, DependencyInfo, DEFAULT_FAILURES_BEFORE_OUTAGE, DEFAULT_PERIOD,
    DEFAULT_SUCCESSES_BEFORE_RECOVERY, DEFAULT_TIMEOUT,
};
pub use self::engine::{
    FeatureHandle, Observed, Observer, Registry, RegistryBuilder, Reporter, WeakRegistry, TIMED_OUT,
};
pub use self::error::Error;
pub use self::event::{Event, Listener, RunOutcome, LISTENER_QUEUE};
pub use self::facts::{DependencyFacts, Facts, GroupFacts, ServePolicy};
pub use self::feature::{
    validate_ttl_and_reason, ActiveOverride, Feature, FeatureBuilder, FeatureFlip, FeatureOverride,
    FeatureState, FlipCause, Requirement, RequirementState, FLIPS_KEPT, MAX_OVERRIDE_TTL,
};
pub use self::group::{Group, GroupBuilder, GroupState};
pub use self::history::{HistorySnapshot, MinuteRecord, Transition, Uptime, MINUTES_KEPT};
pub use self::id::{DependencyId, FeatureName, GroupName, MAX_ID_LEN};
pub use self::mask::{mask_credentials, MASK};
pub use self::mute::{Mute, MuteWindow, MAX_MUTES, MAX_MUTE_AHEAD};
pub use self::probes::{Excuse, Probes, WeakProbes};
pub use self::rand::Rng;
pub use self::readiness::{Readiness, ReadinessRule, Startup};
pub use self::report::{
    system_status, HealthJson, Summary, SummaryHealthJson, SystemReport, Verdict,
};
pub use self::result::CheckResult;
pub use self::rotation::{DrainState, HoldSource, RotationHold};
pub use self::status::{CheckStatus, ParseEnumError};
pub use self::text::MAX_REASON_LEN;
pub use self::urgency::Urgency;
