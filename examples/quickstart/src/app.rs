//! The demo's router: the HTTP contract, chaos controls, and a few application routes.

use std::time::Duration;

use axum::body::Bytes;
use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{FromRef, Path, Query, State};
use axum::http::header::CACHE_CONTROL;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use status_http::middleware::{FeatureGateLayer, HealthGateLayer, RequestGuardLayer};
use status_http::{Admin, AdminAuth, ApiError};
use status_notify::Notice;
use status_traffic::count::CountLayer;
use tokio::sync::Semaphore;
use tower_http::set_header::SetResponseHeaderLayer;

use crate::chaos::{Chaos, Setting};
use crate::{pool, Demo};

#[derive(Clone)]
struct DemoState {
    chaos: Chaos,
    auth: AdminAuth,
}

impl FromRef<DemoState> for AdminAuth {
    fn from_ref(state: &DemoState) -> Self {
        state.auth.clone()
    }
}

/// The demo's router: the HTTP contract at `/`, chaos controls under `/demo`, and a few
/// application routes (`/hello` bare, `/gated/hello` behind the health gate,
/// `/feature-gated/hello` behind the `search-box` feature, `/checkout` behind the `checkout`
/// feature).
///
/// # Panics
///
/// When the routes cannot be built of the demo's settings: see [`try_app`].
pub fn app(demo: &Demo) -> Router {
    try_app(demo).unwrap_or_else(|e| panic!("the status routes: {e}"))
}

/// [`app`], or why the status routes cannot be built of the demo's settings (an unknown
/// readiness group, a subscriptions' secret shorter than 32 bytes, a malformed SMTP URL, an
/// embed origin that is not one).
///
/// # Errors
///
/// The status routes' builder's error.
pub fn try_app(demo: &Demo) -> Result<Router, status_core::Error> {
    // One set of operators for the contract's admin routes and the demo's own.
    let auth = demo
        .config
        .admin_auth
        .clone()
        .unwrap_or_else(|| AdminAuth::new(&demo.config.admin_token));
    let alive_tasks = demo.alive_tasks.clone();
    let shed = demo.shed.clone();
    // The probes' verdicts, composed once: HTTP renders them here, gRPC in `demo.grpc`.
    let mut status = status_http::Routes::new(&demo.registry).probes(demo.probes.clone());
    if let Some(fleet) = demo.fleet.clone() {
        status = status.fleet(fleet);
    }
    if let Some(history) = demo.history.clone() {
        status = status.history(history);
    }
    // The public page: the shop under a name for customers, its public dependencies (search,
    // payments) nested under it; `cache` and the code name `ready` stay internal. Its
    // subscribers are told by its teller, which the application runs.
    let mut page = status_http::StatusPageSettings::default();
    page.url = demo
        .config
        .public_url
        .as_ref()
        .map(|url| url.trim_end_matches('/').to_owned());
    page.publication = status_http::Publication::After(demo.config.incident_public_after);
    page.embed_origins.clone_from(&demo.config.embed_origins);
    page.public.push(
        status_http::PublicGroup::new("ready", "Online shop")
            .description("Browsing the catalogue, search and checkout"),
    );
    let mut subscriptions = status_http::Subscriptions::new()
        .allow_private_webhooks(demo.config.subscriptions.allow_private_webhooks);
    if let Some(smtp) = &demo.config.subscriptions.smtp {
        subscriptions = subscriptions
            .smtp(smtp.clone())
            .mail_from(demo.config.subscriptions.mail_from.clone());
    }
    if let Some(secret) = &demo.config.subscriptions.secret {
        subscriptions = subscriptions.secret(secret.clone().into_bytes());
    }
    page.subscriptions = Some(subscriptions);
    let page = status_http::StatusPage::try_new(
        demo.registry.clone(),
        demo.history.clone(),
        demo.registry.appname(),
        page,
    )?;
    if let Some(teller) = page.teller() {
        tokio::spawn(teller);
    }
    status = status.status_page(page);
    // Agents read at /mcp with the admin token, or a read-only one when configured.
    let mut mcp = status_http::Mcp::new(&demo.registry);
    if let Some(token) = &demo.config.mcp_read_token {
        mcp = mcp.read_token(token);
    }
    status = status.mcp(mcp);
    // One audit trail for the contract's admin calls and the demo's own token-checked ones.
    let audit = status_http::AuditLog::new();
    let status = match &demo.notifications {
        Some(notifications) => status.register_metrics(status_http::notify_metrics(notifications)),
        None => status,
    };
    let status = match &demo.otlp {
        Some(otlp) => status.register_metrics(status_http::otel_metrics(otlp)),
        None => status,
    };
    if let (Some(notifications), true) = (demo.notifications.clone(), demo.config.notify.audit) {
        audit.on_record(move |record| {
            notifications.tell(Notice::Audit {
                action: record.action.clone(),
                status: record.status().unwrap_or_default(),
                refused: record.refused(),
                actor: record.actor.clone(),
                address: record.address.clone(),
            });
        });
    }
    let status = status
        .admin_token(demo.config.admin_token.clone())
        .admin_auth(auth.clone())
        .audit(audit.clone())
        .register_metrics(status_http::traffic::shed_metrics("demo-work", &shed))
        .panel(status_http::traffic::shed_panel(
            "Load shedding: /demo/work",
            &shed,
        ))
        .register_metrics(status_http::traffic::pool_metrics("demo", &demo.pool.pool))
        .register_metrics(status_http::traffic::cull_metrics(&demo.culler))
        .panel(status_http::traffic::cull_panel(
            "Self-culling: failures of /demo/work",
            &demo.culler,
        ))
        .panel(status_http::traffic::pool_panel(
            "Node pool: /demo/pool",
            &demo.pool.pool,
        ))
        .register_metrics(status_grpc::metrics(
            &demo.grpc,
            Some(Arc::clone(&demo.grpc_stats)),
        ))
        .register_metrics(move |metrics| {
            metrics.register(
                "quickstart_runtime_alive_tasks",
                "Tasks alive on the Tokio runtime",
                alive_tasks,
            );
        })
        .try_build()?;
    let state = DemoState {
        chaos: demo.chaos.clone(),
        auth: auth.clone(),
    };
    let feature = |name: &str| {
        demo.registry
            .feature(name)
            .expect("the demo registers its features")
    };
    let workers = Workers(Arc::new(Semaphore::new(demo.config.demo_workers.max(1))));
    let work = Router::new()
        .route(
            "/demo/work",
            // The failure counter inside the shedding layer: it sees only the work that ran, so a
            // burst the layer refuses is never counted as the instance failing (the refusals
            // also carry the `Overload` mark that `server_errors` skips, in either order).
            get(work)
                .layer::<_, Infallible>(CountLayer::new(
                    demo.failures.clone(),
                    status_http::traffic::server_errors::<Infallible>,
                ))
                .layer(status_http::traffic::shedding(shed)),
        )
        .route("/demo/work-unprotected", get(work))
        .with_state(workers);
    let demo_routes = Router::new()
        .route("/demo/chaos", get(chaos_list).route_layer(audit.layer()))
        .route(
            "/demo/chaos/{id}",
            axum::routing::put(chaos_set).route_layer(audit.layer()),
        )
        .layer(axum::extract::DefaultBodyLimit::max(
            status_http::BODY_LIMIT,
        ))
        .with_state(state);
    Ok(Router::new()
        .route("/", get(index))
        .route("/hello", get(hello))
        .route(
            "/gated/hello",
            get(hello).layer(HealthGateLayer::new(&demo.registry)),
        )
        .route(
            "/feature-gated/hello",
            get(hello).layer(FeatureGateLayer::new(feature("search-box"))),
        )
        .route(
            "/checkout",
            axum::routing::post(|| async { Json(serde_json::json!({ "paid": true })) })
                .layer(FeatureGateLayer::new(feature("checkout"))),
        )
        .merge(demo_routes)
        .merge(work)
        .merge(pool::routes(&demo.pool, auth, &audit))
        // The contract's routes have these already; the demo's own get them here, and so does
        // the 404 of an unknown path.
        .layer(RequestGuardLayer::new())
        .layer(SetResponseHeaderLayer::if_not_present(
            CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        ))
        .merge(status))
}

/// The slots of `/demo/work`.
#[derive(Clone)]
struct Workers(Arc<Semaphore>);

#[derive(serde::Deserialize)]
struct WorkQuery {
    #[serde(default = "default_work_ms")]
    ms: u64,
    #[serde(default)]
    fail: bool,
}

fn default_work_ms() -> u64 {
    100
}

/// GET `/demo/work?ms=N&fail=BOOL`: takes a slot, holds it `ms` (at most 60 s), answers 200,
/// or 500 when `fail`.
async fn work(
    State(Workers(slots)): State<Workers>,
    query: Result<Query<WorkQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    if query.ms > 60_000 {
        return Err(ApiError::bad_request("ms must be at most 60000"));
    }
    let _slot = slots
        .acquire()
        .await
        .map_err(|_| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "stopping"))?;
    // `ms=0` answers at once (a zero sleep would still wait for the timer's next tick).
    if query.ms > 0 {
        tokio::time::sleep(Duration::from_millis(query.ms)).await;
    }
    if query.fail {
        return Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the work failed (asked for)",
        ));
    }
    Ok(Json(serde_json::json!({ "worked": query.ms })).into_response())
}

async fn hello() -> &'static str {
    "Hello, World!"
}

async fn index() -> Html<&'static str> {
    Html(include_str!("index.html"))
}

/// GET `/demo/chaos` (admin).
async fn chaos_list(_: Admin, State(state): State<DemoState>) -> Response {
    Json(state.chaos.all()).into_response()
}

/// A body that could not be read, as an answer: 413 past the limit, 400 otherwise.
#[allow(clippy::needless_pass_by_value)] // for `map_err`
pub(crate) fn body_error(rejection: axum::extract::rejection::BytesRejection) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::too_large(status_http::BODY_LIMIT)
    } else {
        ApiError::bad_request(rejection.body_text())
    }
}

/// PUT `/demo/chaos/{id}` (admin) with `{"mode": …, "delayMs": n}`. The token is checked
/// before anything else of the request, the path included.
async fn chaos_set(
    _: Admin,
    State(state): State<DemoState>,
    Path(id): Path<String>,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(body_error)?;
    if !state.chaos.all().contains_key(&id) {
        return Err(ApiError::not_found("dependency", &id));
    }
    let setting: Setting = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))?;
    if setting.delay_ms > 600_000 {
        return Err(ApiError::bad_request("delayMs must be at most 600000"));
    }
    state.chaos.set(&id, setting);
    tracing::info!(dependency = %id, ?setting, "chaos set");
    Ok(
        Json(serde_json::json!({ "id": id, "mode": setting.mode, "delayMs": setting.delay_ms }))
            .into_response(),
    )
}
