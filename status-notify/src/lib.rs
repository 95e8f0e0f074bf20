//! The notification policy: which changes are worth telling an operator, and when, so that
//! nobody is spammed. Pure: told each dependency's latest result, the system's condition and
//! the time; no clock, no I/O. Delivering its notices is a driver's job.
//!
//! - A dependency is noticed once its reported status has held a new level for the hold
//!   time (default 30 s; zero: at once), and once more, "resolved", when it is OK again.
//!   Never two notices for the same level.
//! - **Hysteresis and notices.** A dependency that fails after succeeding reports MINOR for
//!   its first failures (failure k of `failures_before_outage`) and its real status after.
//!   That MINOR is a ramp, not a level: it is never told on its own; the level the ramp
//!   reaches is told once, its hold counted from the first failure, so a database that stops
//!   is one "OUTAGE (was OK)", not a MINOR then an OUTAGE; a blip shorter than the ramp is not
//!   told at all. (A dependency whose real status is MINOR is told once its ramp ends.) The
//!   system condition, MINOR only because a dependency ramps, waits the same way.
//! - A flapping dependency: one "flapping" notice, then silence until it is stable again.
//! - A failure attributed to another failing dependency (`blockedBy`) is folded into its
//!   root's notice ("primary-db OUTAGE; also affected: orders-api, search"), not sent alone.
//! - The system condition's changes are notices of their own, with the same hold.
//! - A muted dependency ([`Registry::mute`](status_core::Registry::mute)) is followed but never
//!   told; on unmute, one notice says where it stands if that differs from the last one told.
//!   A system condition failing only through muted dependencies (and their dependents) is not
//!   told either.
//! - When more than a handful are due at once (a fleet-wide cause), they go out as one digest,
//!   and at most one digest a minute: what falls due meanwhile waits for the next.
//!
//! [`Notifications`] drives the policy from a registry's events
//! and delivers its notices to [`Sink`]s: a JSON webhook ([`Webhook`]), a Slack incoming
//! webhook ([`Slack`]), a Microsoft Teams Workflows URL ([`Teams`], an Adaptive Card), a
//! Discord webhook ([`Discord`], an embed), or one of your own.
//!
//! # The rooms
//!
//! | module | what |
//! |---|---|
//! | `notice` | [`Notice`]: what is told, its sentence, and the bounds on what waits ([`MAX_PENDING`], [`MAX_DIGEST_BYTES`]) |
//! | `policy` | [`Notifier`] and [`NoticePolicy`]: the rules above, pure |
//! | `run` | [`Notifications`]: the builder, and what it starts |
//! | `queue` | each sink's bounded queue and its worker, retried, counted ([`SinkStats`]); the hooks the driver is handed |
//! | `chat` | [`Teams`] and [`Discord`]: a notice in a chat's own shape |
//! | `drive` | the driver: the registry's changes (`Registry::observe`) into the policy, its notices out; its tick never awaits I/O (the chorus and incident links run beside it) |
//! | `chorus` | [`Chorus`]: one instance tells a failure the fleet shares, for all ([`Voice`], [`FleetVoice`]) |
//! | `sink` | [`Sink`], [`Webhook`] (signed, [`signature`]), [`Slack`]; no redirect followed, answers bounded ([`MAX_ANSWER`]) |
//!
//! | `kept` | with the feature `history`: [`NotificationsBuilder::history`], the notifier's memory and incident links kept in a `status_history::History`, in one call |
//!
//! Adding the crate is asking for delivery (it brings an HTTP client). Its one feature,
//! `history`, brings status-history.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod chat;
mod chorus;
mod drive;
#[cfg(feature = "history")]
mod kept;
mod notice;
mod policy;
mod queue;
mod run;
mod sink;
mod sync;

pub use self::chat::{discord_limits, Discord, Teams};
pub use self::chorus::{Chorus, FleetVoice, Recovered, Voice};
#[cfg(feature = "history")]
#[cfg_attr(docsrs, doc(cfg(feature = "history")))]
pub use self::kept::TOLD_KEY;
pub use self::notice::{
    Notice, SloAlert, MAX_DIGEST_BYTES, MAX_PENDING, MAX_REFUSED_ACTIONS, MAX_REFUSED_ADDRESSES,
};
pub use self::policy::{NoticePolicy, Notifier, Told};
pub use self::queue::SinkStats;
pub use self::run::{Notifications, NotificationsBuilder};
pub use self::sink::{
    signature, IncidentLink, Message, Sink, SinkError, Slack, Webhook, MAX_ANSWER, SCHEMA_VERSION,
};
