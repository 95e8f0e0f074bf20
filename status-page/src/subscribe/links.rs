//! The links a subscriber follows: confirm, and unsubscribe. A link (a GET) only shows a page
//! with a button; the button's POST acts, as does RFC 8058's one-click POST. A mail's link
//! scanner, which opens every link, confirms and unsubscribes no one. Each answers a small
//! page in the subscriber's language.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};

use super::hash;
use super::routes::{escape, locale, page, DoorQuery, Refusal, UP_TWO};
use crate::i18n::Locale;
use crate::query::Params;
use crate::StatusPageState;

/// GET `/status/page/subscriptions/confirm?token=`: a page with a button that confirms (a
/// POST). A mail's link scanner that opens every link confirms no one.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/status/page/subscriptions/confirm", tag = "status page",
    params(("token" = String, Query, description = "The token of the confirmation mail")),
    responses(
        (status = 200, description = "A page with the button that confirms: nothing is changed yet", content_type = "text/html", body = String),
        (status = 400, description = "No token, or not one this page makes", content_type = "text/html", body = String),
        (status = "default", description = "A rejected request (400, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn confirm(
    State(state): State<Arc<StatusPageState>>,
    Params(query): Params<DoorQuery>,
    headers: HeaderMap,
) -> Response {
    let l = locale(&query, &headers);
    ask(&state, &query, l, "confirm-ask", "confirm-button")
}

/// POST `/status/page/subscriptions/confirm?token=`: confirms a mail address (the button of
/// the confirmation page).
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/status/page/subscriptions/confirm", tag = "status page",
    params(("token" = String, Query, description = "The token of the confirmation mail")),
    responses(
        (status = 200, description = "Confirmed", content_type = "text/html", body = String),
        (status = 400, description = "No token, or not one this page makes", content_type = "text/html", body = String),
        (status = 404, description = "No subscription has this token", content_type = "text/html", body = String),
        (status = "default", description = "A rejected request (400, 404, 405, 408, 413, 414, 431, 503)", body = crate::schema::Error))))]
pub(crate) async fn confirm_post(
    State(state): State<Arc<StatusPageState>>,
    Params(query): Params<DoorQuery>,
    headers: HeaderMap,
) -> Response {
    let l = locale(&query, &headers);
    by_token(&state, &query, l, true).await
}

/// GET `/status/page/subscriptions/unsubscribe?token=`: a page with a button that
/// unsubscribes (a POST): the link in every message's text. A link scanner unsubscribes no
/// one.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/status/page/subscriptions/unsubscribe", tag = "status page",
    params(("token" = String, Query, description = "The token of the subscription")),
    responses(
        (status = 200, description = "A page with the button that unsubscribes: nothing is changed yet", content_type = "text/html", body = String),
        (status = 400, description = "No token, or not one this page makes", content_type = "text/html", body = String),
        (status = "default", description = "A rejected request (400, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn unsubscribe(
    State(state): State<Arc<StatusPageState>>,
    Params(query): Params<DoorQuery>,
    headers: HeaderMap,
) -> Response {
    let l = locale(&query, &headers);
    ask(&state, &query, l, "unsubscribe-ask", "unsubscribe-button")
}

/// POST `/status/page/subscriptions/unsubscribe?token=`: unsubscribes at once: the
/// unsubscription page's button, and RFC 8058's one-click unsubscription
/// (`List-Unsubscribe=One-Click`).
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/status/page/subscriptions/unsubscribe", tag = "status page",
    params(("token" = String, Query, description = "The token of the subscription")),
    responses(
        (status = 200, description = "Unsubscribed", content_type = "text/html", body = String),
        (status = 400, description = "No token, or not one this page makes", content_type = "text/html", body = String),
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

/// The token of a link, when it is one this page makes (64 hexadecimal digits): anything
/// else is refused before the store is asked.
fn token(query: &DoorQuery) -> Option<&str> {
    query
        .token
        .as_deref()
        .filter(|t| t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn unknown(l: &Locale, status: StatusCode) -> Response {
    let words = escape(&l.text("subscription-unknown", &[]));
    (status, Html(page(l.tag(), &words, UP_TWO))).into_response()
}

fn no_door() -> Response {
    Refusal::new(
        StatusCode::NOT_FOUND,
        "this status page takes no subscriptions",
    )
    .answer(true)
}

/// The page a link opens: a question and a button that posts it back. Nothing is read or
/// changed: a GET acts on no one.
fn ask(
    state: &StatusPageState,
    query: &DoorQuery,
    l: &Locale,
    question: &str,
    button: &str,
) -> Response {
    if state.history.is_none() || state.door.is_none() {
        return no_door();
    }
    let Some(token) = token(query) else {
        return unknown(l, StatusCode::BAD_REQUEST);
    };
    let form = format!(
        "<form method=\"post\" action=\"?token={token}&amp;lang={}\"><button \
         type=\"submit\">{}</button></form>",
        l.tag(),
        escape(&l.text(button, &[])),
    );
    let body = page(l.tag(), &escape(&l.text(question, &[])), UP_TWO)
        .replace("</main>", &format!("{form}</main>"));
    let mut response = (StatusCode::OK, Html(body)).into_response();
    // The token is in the address: no referrer carries it away, no cache keeps it.
    let headers = response.headers_mut();
    headers.insert(
        axum::http::header::REFERRER_POLICY,
        axum::http::HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    response
}

async fn by_token(
    state: &StatusPageState,
    query: &DoorQuery,
    l: &Locale,
    confirm: bool,
) -> Response {
    let Some(history) = state.history.as_ref().filter(|_| state.door.is_some()) else {
        return no_door();
    };
    let Some(token) = token(query) else {
        return unknown(l, StatusCode::BAD_REQUEST);
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
        Err(e) if e.is_not_found() => unknown(l, StatusCode::NOT_FOUND),
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
