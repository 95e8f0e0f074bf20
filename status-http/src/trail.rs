//! `GET /admin/audit` (and, with a history, `GET /admin/history/audit`, the same answer):
//! the audit trail, newest first, a page at a time; from the history when one is kept, so
//! that it survives restarts, else from the process. Every act in one shape.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use status_core::AuditRecord;

use crate::audit::{AuditLog, ReadCount};
use crate::auth::Admin;
use crate::error::ApiError;
use crate::query::Params;
use crate::respond::{json_response, JSON};

/// The most acts one page lists, and how many when not asked: everything the process keeps.
const MAX_PAGE: usize = crate::audit::AUDIT_KEPT;

/// `?before=&limit=`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PageQuery {
    before: Option<i64>,
    limit: Option<i64>,
}

/// An act as the trail answers it: the record, its id and, for a call, its method, path,
/// status and whether it was refused.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Shown<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<i64>,
    #[serde(flatten)]
    record: &'a AuditRecord,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
    refused: bool,
}

impl<'a> Shown<'a> {
    fn of(id: Option<i64>, record: &'a AuditRecord) -> Self {
        let status = record.status();
        let call = status.and_then(|_| record.action.split_once(' '));
        Self {
            id,
            record,
            method: call.map(|(method, _)| method),
            path: call.map(|_| record.target.as_str()),
            status,
            refused: record.refused(),
        }
    }
}

/// The trail's answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Trail<'a> {
    /// Acts, newest first.
    entries: Vec<Shown<'a>>,
    /// The `before` of the next page; `None` on the last.
    next_before: Option<i64>,
    /// Calls refused for their credentials, the last kept in the process.
    refusals: Vec<Shown<'a>>,
    refused_total: u64,
    /// Reads made with the token, counted per route and caller.
    reads: Vec<ReadCount>,
    /// Where the acts are read from: `history` (kept across restarts) or `process`.
    kept: &'static str,
    /// Why the history was not read, when it is kept and failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    history_error: Option<String>,
}

/// GET `/admin/audit`: the audit trail, newest first, a page at a time (`before` the id of
/// the last act seen, `limit` at most 1,000). While a history kept cannot be read, the
/// process's own trail, saying so (`kept`, `historyError`).
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/admin/audit", tag = "admin", security(("bearer" = [])),
    params(crate::schema::AuditPageParams),
    responses(
        (status = 200, description = "A page of the audit trail, newest first (the process's own while the history store cannot be read, with `historyError`)", body = crate::schema::AuditList),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn audit(
    _: Admin,
    State(log): State<AuditLog>,
    Params(query): Params<PageQuery>,
) -> Result<Response, ApiError> {
    let positive = |name: &str, v: Option<i64>| match v {
        Some(n) if n < 1 => Err(ApiError::bad_request(format!(
            "{name} must be a positive integer, not {n}"
        ))),
        v => Ok(v),
    };
    let before = positive("before", query.before)?;
    let limit = positive("limit", query.limit)?
        .map_or(MAX_PAGE, |n| usize::try_from(n).unwrap_or(MAX_PAGE))
        .min(MAX_PAGE);
    // A history that cannot be read now leaves the operator the process's own trail, and
    // says why.
    let (page, kept, history_error) = match log.durable() {
        Some(durable) => match durable(before, limit).await {
            Ok(page) => (page, "history", None),
            Err(e) => (
                log.page(before, limit),
                "process",
                Some(e.message().to_owned()),
            ),
        },
        None => (log.page(before, limit), "process", None),
    };
    let refusals = log.refusals();
    let next_before = (page.len() == limit)
        .then(|| page.last().map(|(id, _)| *id))
        .flatten();
    let body = Trail {
        entries: page.iter().map(|(id, r)| Shown::of(Some(*id), r)).collect(),
        next_before,
        refusals: refusals.iter().map(|r| Shown::of(None, r)).collect(),
        refused_total: log.refused_total(),
        reads: log.reads(),
        kept,
        history_error,
    };
    Ok(json_response(StatusCode::OK, JSON, &body))
}

/// GET `/admin/history/audit`: the same answer as `/admin/audit`, where a history is kept.
#[cfg(feature = "history")]
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/admin/history/audit", tag = "admin", security(("bearer" = [])),
    params(crate::schema::AuditPageParams),
    responses(
        (status = 200, description = "A page of the audit trail kept across restarts (the same answer as /admin/audit)", body = crate::schema::AuditList),
        (status = 404, description = "No history kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 401, 403, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn history_audit(
    admin: Admin,
    State(log): State<AuditLog>,
    Params(query): Params<PageQuery>,
) -> Result<Response, ApiError> {
    if log.durable().is_none() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "no history is kept here (see status_http::Routes::history)",
        ));
    }
    audit(admin, State(log), Params(query)).await
}
