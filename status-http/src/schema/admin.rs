//! The admin API's bodies: the audit trail and mutes.

#![allow(dead_code)]

use utoipa::{IntoParams, ToSchema};

#[allow(unused_imports)]
use super::*;

/// A page of the audit trail.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct AuditPageParams {
    /// Acts before this id (the previous page's `nextBefore`).
    #[param(nullable = false, minimum = 1)]
    before: Option<i64>,
    /// At most this many (1,000 when not given, at most 1,000).
    #[param(nullable = false, minimum = 1)]
    limit: Option<i64>,
}

/// One act in the audit trail: the same record whether kept in the process or in a history.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AuditEntry {
    /// Its id, to page on (absent for refusals).
    #[schema(nullable = false)]
    id: Option<i64>,
    /// When (RFC 3339, milliseconds, UTC).
    #[schema(format = DateTime)]
    at: String,
    /// Who: the operator whose token made the call (`admin` for the one admin token),
    /// `code` for the application itself; null for a call no operator's token made.
    actor: Option<String>,
    /// What: the method and path of a call, or `hold`.
    action: String,
    /// On what: the path, or a hold's source.
    target: String,
    /// Why, when said.
    reason: Option<String>,
    /// The address it came from, when known.
    address: Option<String>,
    /// The HTTP status, or `taken` / `released`.
    outcome: String,
    /// For a call: its method.
    #[schema(nullable = false)]
    method: Option<String>,
    /// For a call: its path (no query string).
    #[schema(nullable = false)]
    path: Option<String>,
    /// For a call: the status it was answered.
    #[schema(nullable = false)]
    status: Option<u16>,
    /// Whether it was refused (a call answered anything but a 2xx).
    refused: bool,
}

/// Reads made with the token by one caller on one route.
#[derive(ToSchema)]
pub(crate) struct ReadCount {
    /// The method and the route.
    route: String,
    /// The caller's address.
    caller: String,
    count: u64,
}

/// The audit trail, newest first.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AuditList {
    /// Acts made with the token (whatever their outcome), and holds taken and released.
    entries: Vec<AuditEntry>,
    /// The `before` of the next page; null on the last.
    next_before: Option<i64>,
    /// The last calls refused for their credentials (401, 403), newest first.
    refusals: Vec<AuditEntry>,
    /// Calls refused for their credentials since start.
    refused_total: u64,
    /// Reads made with the token since start, counted, not recorded.
    reads: Vec<ReadCount>,
    /// `history` (kept across restarts) or `process`.
    kept: String,
    /// Why the history was not read, when one is kept and it failed (the process's own
    /// trail is answered meanwhile).
    #[schema(nullable = false)]
    history_error: Option<String>,
}

/// `PUT /admin/mutes/{dependency}`: for a while, or a maintenance window.
#[derive(ToSchema)]
#[serde(untagged)]
pub(crate) enum MuteRequest {
    /// From now, for a while.
    For(MuteFor),
    /// From `start` to `end`.
    Window(MuteBetween),
}

/// A mute from now.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MuteFor {
    /// 1 to 2592000 (30 days).
    #[schema(minimum = 1, maximum = 2_592_000)]
    ttl_seconds: i64,
    #[serde(flatten)]
    why: OperatorText,
}

/// A maintenance window: it ends after it starts, in the future, within 30 days.
#[derive(ToSchema)]
pub(crate) struct MuteBetween {
    /// RFC 3339; a start already past starts now.
    #[schema(format = DateTime)]
    start: String,
    /// RFC 3339.
    #[schema(format = DateTime)]
    end: String,
    #[serde(flatten)]
    why: OperatorText,
}

/// A mute, in force (`active`) or scheduled.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Mute {
    dependency: String,
    reason: String,
    actor: Option<String>,
    set_at: String,
    start: String,
    until: String,
    active: bool,
}

/// Every mute kept.
#[derive(ToSchema)]
pub(crate) struct MuteList {
    mutes: Vec<Mute>,
    /// How many may be kept at once.
    max: u32,
}

/// `DELETE /admin/mutes/{dependency}`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Unmuted {
    dependency: String,
    was_muted: bool,
    /// The mute that ended, if any.
    mute: Option<Mute>,
}
