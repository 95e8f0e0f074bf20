//! The door: subscribe, confirm, unsubscribe. Every refusal is a 4xx with a clear word,
//! and changes nothing.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{FromRequest, Request, State};
use axum::http::header::{ACCEPT_LANGUAGE, CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::{Form, Json};
use serde::Deserialize;
use serde_json::json;
use status_history::{Subscriber, SubscriberKind};

use super::{guard, Door};
use crate::error::ApiError;
use crate::i18n::{self, Locale};
use crate::query::Params;
use crate::StatusPageState;

/// The longest webhook URL taken.
const MAX_URL: usize = 2048;

/// What a subscription asks for.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SubscribeJson {
    #[serde(default, deserialize_with = "status_http_core::body::present")]
    email: Option<String>,
    #[serde(default, deserialize_with = "status_http_core::body::present")]
    webhook: Option<String>,
    #[serde(default, deserialize_with = "status_http_core::body::present")]
    components: Option<Vec<String>>,
}

/// The same, from the page's form: components apart by commas.
#[derive(Debug, Default, Deserialize)]
struct SubscribeForm {
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    webhook: Option<String>,
    #[serde(default)]
    components: Option<String>,
}

/// `?lang=` (and, for confirm and unsubscribe, `?token=`).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct DoorQuery {
    #[serde(default)]
    lang: Option<String>,
    #[serde(default)]
    pub(super) token: Option<String>,
}

/// A refusal, as JSON for an API call or as a page for the form.
pub(super) struct Refusal {
    pub(super) status: StatusCode,
    pub(super) message: String,
    pub(super) retry_after: Option<Duration>,
    pub(super) up: &'static str,
}

impl Refusal {
    pub(super) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            retry_after: None,
            up: UP_ONE,
        }
    }

    pub(super) fn answer(self, html: bool) -> Response {
        let mut response = if html {
            (self.status, Html(page("", &escape(&self.message), self.up))).into_response()
        } else {
            ApiError::new(self.status, self.message).into_response()
        };
        if let Some(wait) = self.retry_after {
            if let Ok(v) = HeaderValue::from_str(&wait.as_secs().max(1).to_string()) {
                response.headers_mut().insert(RETRY_AFTER, v);
            }
        }
        response
    }
}

pub(super) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A small page of the door's own: a word and a way back (`up` leads from where it is
/// served to `/status/`).
pub(super) fn page(lang: &str, words: &str, up: &str) -> String {
    format!(
        "<!doctype html><html lang=\"{}\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" \
         content=\"width=device-width, initial-scale=1\"><title>{words}</title><link \
         rel=\"stylesheet\" href=\"{up}assets/dashboard.css\"></head><body \
         class=\"statuspage\"><main><p class=\"banner\">{words}</p><p><a \
         href=\"{up}page\">←</a></p></main></body></html>",
        if lang.is_empty() { "en" } else { lang }
    )
}

/// From `/status/page/subscriptions` up to `/status/`.
const UP_ONE: &str = "../";
/// From `/status/page/subscriptions/confirm` (and `unsubscribe`) up to `/status/`.
pub(super) const UP_TWO: &str = "../../";

fn door(state: &StatusPageState) -> Result<&Arc<Door>, Refusal> {
    state.door.as_ref().ok_or_else(|| {
        Refusal::new(
            StatusCode::NOT_FOUND,
            "this status page takes no subscriptions (see status_http::Routes::subscriptions)",
        )
    })
}

pub(super) fn locale(query: &DoorQuery, headers: &HeaderMap) -> &'static Locale {
    let accept = headers.get(ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok());
    i18n::negotiate(query.lang.as_deref(), accept)
}

/// POST `/status/page/subscriptions`: asks to be told, by mail (`email`, confirmed by the
/// button its link opens) or webhook (`webhook`, confirmed when it answers a challenge), of
/// `components` (all when none).
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/status/page/subscriptions", tag = "status page",
    request_body(content = crate::schema::SubscribeRequest, content_type = "application/json"),
    responses(
        (status = 202, description = "Asked: a confirmation mail, or a webhook's challenge, is on its way. The same answer for an address or URL already subscribed or asked lately, which is left as it is (and sent nothing more): a stranger learns nothing", body = crate::schema::Subscribed),
        (status = 400, description = "Not an address or URL, a webhook to a private address, an unknown component: nothing kept", body = crate::schema::Error),
        (status = 404, description = "This page takes no subscriptions, or no history is kept", body = crate::schema::Error),
        (status = 413, description = "A body over 4 KiB", body = crate::schema::Error),
        (status = 415, description = "Neither JSON nor a form", body = crate::schema::Error),
        (status = 429, description = "Too many subscriptions now from this address or in all, or the page takes no more subscribers (Retry-After)", body = crate::schema::Error),
        (status = 503, description = "The history store is not available: nothing kept", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn subscribe(
    State(state): State<Arc<StatusPageState>>,
    Params(query): Params<DoorQuery>,
    peer: crate::streams::Peer,
    request: Request,
) -> Response {
    let headers = request.headers().clone();
    let form = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    let from = crate::streams::address(peer);
    match subscribe_inner(&state, &query, &headers, request, form, from).await {
        Ok(response) => response,
        Err(refusal) => refusal.answer(form),
    }
}

async fn subscribe_inner(
    state: &Arc<StatusPageState>,
    query: &DoorQuery,
    headers: &HeaderMap,
    request: Request,
    form: bool,
    from: Option<std::net::IpAddr>,
) -> Result<Response, Refusal> {
    let door = door(state)?;
    let too_many = |wait| Refusal {
        retry_after: Some(wait),
        ..Refusal::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too many subscriptions just now: try again later",
        )
    };
    // This client's share first: what it spends, refused or not, is its own.
    if let Some(from) = from {
        crate::sync::lock(&door.per_address)
            .take(from, std::time::Instant::now())
            .map_err(too_many)?;
    }
    let history = state
        .history
        .as_ref()
        .ok_or_else(|| Refusal::new(StatusCode::NOT_FOUND, "no history is kept here"))?;
    let l = locale(query, headers);
    let asked = if form {
        let Form(f) = Form::<SubscribeForm>::from_request(request, &())
            .await
            .map_err(|e| Refusal::new(malformed(e.status()), e.body_text()))?;
        SubscribeJson {
            email: f.email.filter(|e| !e.trim().is_empty()),
            webhook: f.webhook.filter(|w| !w.trim().is_empty()),
            components: f.components.map(|c| {
                c.split(',')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned)
                    .collect()
            }),
        }
    } else {
        let Json(j) = Json::<SubscribeJson>::from_request(request, &())
            .await
            .map_err(|e| Refusal::new(malformed(e.status()), e.body_text()))?;
        j
    };
    let (kind, address) = match (&asked.email, &asked.webhook) {
        (Some(email), None) => {
            if door.config.smtp.is_none() || door.config.from.is_none() {
                return Err(Refusal::new(
                    StatusCode::BAD_REQUEST,
                    "this page sends no mail: subscribe a webhook",
                ));
            }
            let address = guard::mail_address(email).ok_or_else(|| {
                Refusal::new(StatusCode::BAD_REQUEST, "email is not a mail address")
            })?;
            (SubscriberKind::Email, address)
        }
        (None, Some(url)) => (
            SubscriberKind::Webhook,
            webhook_url(url, door.config.allow_private_webhooks).await?,
        ),
        _ => {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "give either email or webhook",
            ))
        }
    };
    let snapshot = state.snapshot().await;
    let components = asked.components.unwrap_or_default();
    if components.len() > 64 {
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            "at most 64 components",
        ));
    }
    for c in &components {
        if !snapshot.components.iter().any(|k| &k.id == c) {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                format!("no component {c:?} on this page"),
            ));
        }
    }
    // The door's own rate once the request is one: what follows reads the store and may
    // send mail; a malformed request spends no visitor's share.
    crate::sync::lock(&door.bucket)
        .take(std::time::Instant::now())
        .map_err(too_many)?;
    let store = |e: status_history::Error| {
        Refusal::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the history store is not available: {e}"),
        )
    };
    let now = history.now();
    // One answer, whether the address or URL is known or not, asked lately or not: a
    // stranger learns nothing from it. Only a full page says so, to everyone alike.
    let pending = json!({
        "status": "pending",
        "message": l.text(
            match kind {
                SubscriberKind::Email => "subscribed-pending",
                SubscriberKind::Webhook => "webhook-pending",
            },
            &[],
        ),
    });
    let same_answer = || Ok(answered(form, l, StatusCode::ACCEPTED, &pending));
    if history.subscribers().await.map_err(store)?.len() >= door.config.max_subscribers {
        return Err(Refusal {
            retry_after: Some(Duration::from_secs(3600)),
            ..Refusal::new(
                StatusCode::TOO_MANY_REQUESTS,
                "this page takes no more subscribers",
            )
        });
    }
    if let Some(s) = history.subscriber(kind, &address).await.map_err(store)? {
        // Confirmed: left as it is, a stranger who knows it changes nothing.
        if s.confirmed.is_some() {
            return same_answer();
        }
        // Asked lately: its mail or challenge is on its way; nothing more is sent.
        let since = s
            .confirm_sent
            .map(|sent| (now - sent).to_std().unwrap_or_default());
        if since.is_some_and(|since| since < door.config.confirm_cooldown) {
            tracing::debug!(
                subscriber = s.id,
                "asked again within the cooldown: nothing sent"
            );
            return same_answer();
        }
    }
    let (secret, hashed) = door.token(kind, &address);
    let kept = history
        .subscribe(&Subscriber {
            id: 0,
            kind,
            address: address.clone(),
            components,
            lang: l.tag().to_owned(),
            token: hashed,
            created: now,
            // Confirmed by its link (mail) or its answer to a challenge (webhook).
            confirmed: None,
            confirm_sent: Some(now),
        })
        .await
        .map_err(store)?;
    // Sent beside the answer: a slow mail server or webhook does not hold the door (the
    // buckets bound how many are on their way).
    let (state, door) = (Arc::clone(state), Arc::clone(door));
    tokio::spawn(async move {
        match kept.kind {
            SubscriberKind::Email => {
                super::send::confirmation(&state, &door, &kept, &secret, l).await;
            }
            SubscriberKind::Webhook => {
                super::challenge::webhook(&state, &door, &kept, &secret).await;
            }
        }
    });
    same_answer()
}

/// A body refused as axum words it, but a body of the wrong shape is a 400 here (as on
/// every route of this crate), not a 422.
fn malformed(status: StatusCode) -> StatusCode {
    if status == StatusCode::UNPROCESSABLE_ENTITY {
        StatusCode::BAD_REQUEST
    } else {
        status
    }
}

/// The answer to a subscription: its JSON, or a page for the form.
fn answered(form: bool, l: &Locale, status: StatusCode, body: &serde_json::Value) -> Response {
    if form {
        let words = body["message"]
            .as_str()
            .map_or_else(|| l.text("subscribed-confirmed", &[]), str::to_owned);
        (status, Html(page(l.tag(), &escape(&words), UP_ONE))).into_response()
    } else {
        (status, Json(body.clone())).into_response()
    }
}

/// A webhook URL, checked: `http` or `https`, no credentials, at most 2,048 bytes, and every
/// address its host resolves to public (unless `allow_private`).
async fn webhook_url(url: &str, allow_private: bool) -> Result<String, Refusal> {
    let bad = |why: &str| Refusal::new(StatusCode::BAD_REQUEST, format!("webhook: {why}"));
    let url = url.trim();
    if url.len() > MAX_URL {
        return Err(bad("the URL is longer than 2,048 bytes"));
    }
    let parsed: axum::http::Uri = url.parse().map_err(|_| bad("not a URL"))?;
    if !matches!(parsed.scheme_str(), Some("http" | "https")) {
        return Err(bad("only http and https URLs"));
    }
    let authority = parsed.authority().ok_or_else(|| bad("no host"))?;
    if authority.as_str().contains('@') {
        return Err(bad("no credentials in the URL"));
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = authority
        .port_u16()
        .unwrap_or(if parsed.scheme_str() == Some("https") {
            443
        } else {
            80
        });
    let addresses: Vec<SocketAddr> = tokio::time::timeout(
        Duration::from_secs(3),
        tokio::net::lookup_host((host, port)),
    )
    .await
    .map_err(|_| bad("its host did not resolve in time"))?
    .map_err(|_| bad("its host does not resolve"))?
    .collect();
    if addresses.is_empty() {
        return Err(bad("its host does not resolve"));
    }
    if !allow_private && addresses.iter().any(|a| !guard::reachable(a.ip())) {
        return Err(bad(
            "its host is a loopback, private, link-local or metadata address",
        ));
    }
    Ok(url.to_owned())
}
