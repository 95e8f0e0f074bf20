//! The links a subscriber follows: confirm, and unsubscribe (a GET from the mail's text, or
//! RFC 8058's one-click POST). Each answers a small page in the subscriber's language.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};

use super::hash;
use super::routes::{escape, locale, page, DoorQuery, Refusal, UP_TWO};
use crate::i18n::Locale;
use crate::query::Params;
use crate::StatusPageState;

/// GET `/status/page/subscriptions/confirm?token=`: confirms a mail address.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/status/page/subscriptions/confirm", tag = "status page",
    params(("token" = String, Query, description = "The token of the confirmation mail")),
    responses(
        (status = 200, description = "Confirmed", content_type = "text/html", body = String),
        (status = 400, description = "No token", content_type = "text/html", body = String),
        (status = 404, description = "No subscription has this token", content_type = "text/html", body = String),
        (status = "default", description = "A rejected request (400, 404, 405, 408, 413, 414, 431, 503)", body = crate::schema::Error))))]
pub(crate) async fn confirm(
    State(state): State<Arc<StatusPageState>>,
    Params(query): Params<DoorQuery>,
    headers: HeaderMap,
) -> Response {
    let l = locale(&query, &headers);
    by_token(&state, &query, l, true).await
}

/// GET `/status/page/subscriptions/unsubscribe?token=`: unsubscribes at once (the link in
/// every message's text).
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/status/page/subscriptions/unsubscribe", tag = "status page",
    params(("token" = String, Query, description = "The token of the subscription")),
    responses(
        (status = 200, description = "Unsubscribed", content_type = "text/html", body = String),
        (status = 400, description = "No token", content_type = "text/html", body = String),
        (status = 404, description = "No subscription has this token", content_type = "text/html", body = String),
        (status = "default", description = "A rejected request (400, 404, 405, 408, 413, 414, 431, 503)", body = crate::schema::Error))))]
pub(crate) async fn unsubscribe(
    State(state): State<Arc<StatusPageState>>,
    Params(query): Params<DoorQuery>,
    headers: HeaderMap,
) -> Response {
    let l = locale(&query, &headers);
    by_token(&state, &query, l, false).await
}

/// POST `/status/page/subscriptions/unsubscribe?token=`: RFC 8058's one-click
/// unsubscription (`List-Unsubscribe=One-Click`), at once.
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/status/page/subscriptions/unsubscribe", tag = "status page",
    params(("token" = String, Query, description = "The token of the subscription")),
    responses(
        (status = 200, description = "Unsubscribed", content_type = "text/html", body = String),
        (status = 400, description = "No token", content_type = "text/html", body = String),
        (status = 404, description = "No subscription has this token", content_type = "text/html", body = String),
        (status = "default", description = "A rejected request (400, 404, 405, 408, 413, 414, 431, 503)", body = crate::schema::Error))))]
pub(crate) async fn unsubscribe_post(
    State(state): State<Arc<StatusPageState>>,
    Params(query): Params<DoorQuery>,
    headers: HeaderMap,
) -> Response {
    let l = locale(&query, &headers);
    by_token(&state, &query, l, false).await
}

async fn by_token(
    state: &StatusPageState,
    query: &DoorQuery,
    l: &Locale,
    confirm: bool,
) -> Response {
    let Some(history) = state.history.as_ref().filter(|_| state.door.is_some()) else {
        return Refusal::new(
            StatusCode::NOT_FOUND,
            "this status page takes no subscriptions",
        )
        .answer(true);
    };
    let Some(token) = query
        .token
        .as_deref()
        .filter(|t| !t.is_empty() && t.len() <= 128)
    else {
        return (
            StatusCode::BAD_REQUEST,
            Html(page(
                l.tag(),
                &escape(&l.text("subscription-unknown", &[])),
                UP_TWO,
            )),
        )
            .into_response();
    };
    let hashed = hash(token);
    let answer = if confirm {
        history.confirm_subscriber(&hashed).await
    } else {
        history.unsubscribe(&hashed).await
    };
    match answer {
        Ok(_) => {
            let words = l.text(
                if confirm {
                    "subscribed-confirmed"
                } else {
                    "unsubscribed"
                },
                &[],
            );
            (StatusCode::OK, Html(page(l.tag(), &escape(&words), UP_TWO))).into_response()
        }
        Err(e) if e.is_not_found() => (
            StatusCode::NOT_FOUND,
            Html(page(
                l.tag(),
                &escape(&l.text("subscription-unknown", &[])),
                UP_TWO,
            )),
        )
            .into_response(),
        Err(e) => Refusal {
            up: UP_TWO,
            ..Refusal::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the history store is not available: {e}"),
            )
        }
        .answer(true),
    }
}
