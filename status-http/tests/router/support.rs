//! A small registry with switchable checks, and helpers to call the router.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use axum::Router;
use chrono::{TimeZone, Utc};
use http_body_util::BodyExt;
use serde_json::Value;
use status_core::{check, CheckStatus, Clock, Dependency, Feature, Registry, Urgency};
use tower::ServiceExt;

pub(crate) const TOKEN: &str = "test-token";

/// A check's status, set by the test.
#[derive(Debug, Clone)]
pub(crate) struct Switch(pub(crate) Arc<Mutex<CheckStatus>>);

impl Default for Switch {
    fn default() -> Self {
        Self(Arc::new(Mutex::new(CheckStatus::Ok)))
    }
}

impl Switch {
    pub(crate) fn set(&self, status: CheckStatus) {
        *self.0.lock().unwrap() = status;
    }
}

pub(crate) struct Fixture {
    pub(crate) registry: Registry,
    pub(crate) db: Switch,
    pub(crate) cache: Switch,
    pub(crate) search: Switch,
}

fn dependency(id: &str, urgency: Urgency, switch: &Switch) -> Dependency {
    let status = Arc::clone(&switch.0);
    Dependency::builder(
        id,
        check::tiered(move || {
            let status = *status.lock().unwrap();
            async move { (status, format!("says {status}")) }
        }),
    )
    .urgency(urgency)
    .kind("test")
    .period(Duration::from_secs(3600))
    .timeout(Duration::from_secs(2))
    .failures_before_outage(1)
    .build()
    .unwrap()
}

/// Registers `db` (Required), `search` (Strong) and `cache` (Weak), all OK, and features
/// `writes` (db no worse than MINOR) and `search-box` (search no worse than MAJOR); does not
/// check them yet.
pub(crate) fn unchecked() -> Fixture {
    let registry = Registry::builder()
        .clock(Clock::tokio_starting_at(
            Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap(),
        ))
        .hostname("test-host")
        .appname("test-app")
        .jitter(0.0)
        .build();
    let switch = || Switch(Arc::new(Mutex::new(CheckStatus::Ok)));
    let (db, cache, search) = (switch(), switch(), switch());
    registry
        .add(dependency("db", Urgency::Required, &db))
        .unwrap();
    registry
        .add(dependency("search", Urgency::Strong, &search))
        .unwrap();
    registry
        .add(dependency("cache", Urgency::Weak, &cache))
        .unwrap();
    for (name, dep, worst) in [
        ("writes", "db", CheckStatus::Minor),
        ("search-box", "search", CheckStatus::Major),
    ] {
        registry
            .add_feature(Feature::builder(name).requires(dep, worst).build().unwrap())
            .unwrap();
    }
    Fixture {
        registry,
        db,
        cache,
        search,
    }
}

/// [`unchecked`], every dependency checked once.
pub(crate) async fn fixture() -> Fixture {
    let fixture = unchecked();
    fixture.registry.refresh_all().await;
    fixture
}

impl Fixture {
    /// The probe group `core` (of `db`) added, and `history` opened and attached: the page's
    /// usual setting.
    pub(crate) fn core_with(
        &self,
        history: status_history::HistoryBuilder,
    ) -> status_history::History {
        self.registry
            .add_group(
                status_core::Group::builder("core")
                    .dependency("db")
                    .build()
                    .unwrap(),
            )
            .unwrap();
        let history = history.open();
        history.attach(&self.registry);
        history
    }

    /// The router with the admin token [`TOKEN`].
    pub(crate) fn app(&self) -> Router {
        status_http::Routes::new(&self.registry)
            .admin_token(TOKEN)
            .build()
    }

    /// Sets `switch` and re-checks everything.
    pub(crate) async fn set(&self, switch: &Switch, status: CheckStatus) {
        switch.set(status);
        self.registry.refresh_all().await;
    }
}

/// A response, read whole.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: String,
}

impl Answer {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", |v| v.to_str().unwrap())
    }
}

pub(crate) async fn call(app: &Router, request: Request<Body>) -> Answer {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        headers,
        body: String::from_utf8(bytes.to_vec()).unwrap(),
    }
}

pub(crate) async fn get(app: &Router, uri: &str) -> Answer {
    call(app, Request::get(uri).body(Body::empty()).unwrap()).await
}

/// An admin call with `token` (none when `None`) and a body.
pub(crate) async fn admin(
    app: &Router,
    method: Method,
    uri: &str,
    token: Option<&str>,
    body: impl Into<Body>,
) -> Answer {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    call(app, request.body(body.into()).unwrap()).await
}

/// A GET of `route` with `headers`: its status, headers and body as bytes (a compressed body
/// is not text).
pub(crate) async fn raw(
    app: &axum::Router,
    route: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, HeaderMap, Vec<u8>) {
    let mut request = Request::get(route);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes().to_vec();
    (parts.status, parts.headers, bytes)
}

/// `gzipped`, decompressed.
pub(crate) fn gunzip(gzipped: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut unzipped = Vec::new();
    flate2::read::GzDecoder::new(gzipped)
        .read_to_end(&mut unzipped)
        .unwrap();
    unzipped
}
