//! `/demo/pool`: a dependency of several in-process nodes behind a node pool, each node
//! switchable to failing, slow or hanging through `PUT /demo/pool/nodes/{i}` (admin).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{FromRef, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use status_core::check::Threshold;
use status_core::{Dependency, Registry, Urgency};
use status_http::{Admin, AdminAuth, ApiError};
use status_traffic::limit::{Gradient2, Limiter, Outcome};
use status_traffic::pool::Pool;
use tower::util::BoxCloneSyncService;
use tower::ServiceExt;

/// How long a node may take before the pool counts the call as dropped.
pub const NODE_TIMEOUT: Duration = Duration::from_secs(1);

/// What a node does with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Answers at once.
    #[default]
    Ok,
    /// Fails at once.
    Error,
    /// Answers after `delayMs`.
    Slow,
    /// Never answers (the pool's timeout drops the call).
    Hang,
}

/// A node's setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeSetting {
    /// What it does.
    pub mode: Mode,
    /// How long `slow` takes, in milliseconds.
    #[serde(default)]
    pub delay_ms: u64,
}

/// Why a node's call failed.
#[derive(Debug, Clone, Copy)]
pub struct NodeFailed {
    /// Which node.
    pub node: usize,
    /// Whether it timed out (a drop, for the pool) rather than failed (an ignore).
    pub timed_out: bool,
}

impl std::fmt::Display for NodeFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.timed_out {
            write!(f, "node {} timed out", self.node)
        } else {
            write!(f, "node {} failed", self.node)
        }
    }
}

impl std::error::Error for NodeFailed {}

type NodeService = BoxCloneSyncService<(), usize, NodeFailed>;

/// The demo's pool and its nodes' settings.
#[derive(Debug, Clone)]
pub struct DemoPool {
    /// The pool of `/demo/pool`.
    pub pool: Pool<NodeService, ()>,
    settings: Arc<Vec<Mutex<NodeSetting>>>,
}

impl DemoPool {
    /// `nodes` healthy nodes, the pool's shuffles seeded from `registry`, and the pool as the
    /// passive dependency `pool` (urgency Weak): OK with every node healthy, MINOR with at
    /// least half, MAJOR with fewer, OUTAGE with none.
    ///
    /// # Errors
    ///
    /// If the dependency cannot be registered.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn start(registry: &Registry, nodes: usize) -> Result<Self, status_core::Error> {
        let pool = Pool::builder(registry.rng("demo-pool"))
            .clock(registry.clock().clone())
            .limiter(|| Limiter::new(Gradient2::default()))
            .classify(|result: &Result<usize, NodeFailed>| match result {
                Ok(_) => Outcome::Success,
                Err(failed) if failed.timed_out => Outcome::Drop,
                Err(_) => Outcome::Ignore,
            })
            .build();
        let settings: Arc<Vec<Mutex<NodeSetting>>> =
            Arc::new((0..nodes).map(|_| Mutex::default()).collect());
        for node in 0..nodes {
            pool.add(
                format!("node-{node}"),
                node_service(node, Arc::clone(&settings)),
            );
        }
        let reporter = registry.add_passive(
            Dependency::passive("pool")
                .urgency(Urgency::Weak)
                .kind("pool")
                .description("The nodes behind /demo/pool: share of healthy nodes")
                .build_info()?,
        )?;
        let threshold = Threshold::at_least(0.999, 0.5, 0.001).expect("ordered limits");
        pool.report_to(reporter, Duration::from_secs(1), threshold);
        Ok(Self { pool, settings })
    }

    fn set(&self, node: usize, setting: NodeSetting) -> bool {
        let Some(slot) = self.settings.get(node) else {
            return false;
        };
        *slot.lock().unwrap_or_else(PoisonError::into_inner) = setting;
        true
    }
}

fn node_service(node: usize, settings: Arc<Vec<Mutex<NodeSetting>>>) -> NodeService {
    BoxCloneSyncService::new(tower::service_fn(move |()| {
        let setting = *settings[node]
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        async move {
            let work = async {
                match setting.mode {
                    Mode::Ok => Ok(node),
                    Mode::Error => Err(NodeFailed {
                        node,
                        timed_out: false,
                    }),
                    Mode::Slow => {
                        tokio::time::sleep(Duration::from_millis(setting.delay_ms)).await;
                        Ok(node)
                    }
                    Mode::Hang => std::future::pending().await,
                }
            };
            tokio::time::timeout(NODE_TIMEOUT, work)
                .await
                .unwrap_or(Err(NodeFailed {
                    node,
                    timed_out: true,
                }))
        }
    }))
}

#[derive(Clone)]
struct PoolState {
    pool: DemoPool,
    auth: AdminAuth,
}

impl FromRef<PoolState> for AdminAuth {
    fn from_ref(state: &PoolState) -> Self {
        state.auth.clone()
    }
}

/// `GET /demo/pool` and `PUT /demo/pool/nodes/{i}`; the second, which checks the admin
/// token, recorded in `audit`.
pub fn routes(pool: &DemoPool, auth: AdminAuth, audit: &status_http::AuditLog) -> Router {
    Router::new()
        .route("/demo/pool", get(call))
        .route(
            "/demo/pool/nodes/{node}",
            put(set_node).route_layer(audit.layer()),
        )
        .layer(axum::extract::DefaultBodyLimit::max(
            status_http::BODY_LIMIT,
        ))
        .with_state(PoolState {
            pool: pool.clone(),
            auth,
        })
}

/// GET `/demo/pool`: a call through the pool: 200 `{"node": i}`, 502 when the node failed,
/// 504 when it timed out, 503 (`Retry-After`) when no node had capacity.
async fn call(State(state): State<PoolState>) -> Response {
    match state.pool.pool.oneshot(()).await {
        Ok(node) => Json(serde_json::json!({ "node": node })).into_response(),
        Err(error) => match error.downcast_ref::<NodeFailed>() {
            Some(failed) => {
                let status = if failed.timed_out {
                    StatusCode::GATEWAY_TIMEOUT
                } else {
                    StatusCode::BAD_GATEWAY
                };
                (
                    status,
                    Json(serde_json::json!({ "error": failed.to_string(), "node": failed.node })),
                )
                    .into_response()
            }
            None => status_http::traffic::overloaded(error).await,
        },
    }
}

/// PUT `/demo/pool/nodes/{i}` (admin) with `{"mode": "ok"|"error"|"slow"|"hang", "delayMs": n}`.
async fn set_node(
    _: Admin,
    State(state): State<PoolState>,
    Path(node): Path<String>,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(crate::app::body_error)?;
    let index = node
        .parse::<usize>()
        .ok()
        .filter(|&i| i < state.pool.settings.len())
        .ok_or_else(|| ApiError::not_found("node", &node))?;
    let setting: NodeSetting = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))?;
    if setting.delay_ms > 60_000 {
        return Err(ApiError::bad_request("delayMs must be at most 60000"));
    }
    state.pool.set(index, setting);
    tracing::info!(node = index, ?setting, "pool node set");
    Ok(Json(serde_json::json!({
        "node": index,
        "mode": setting.mode,
        "delayMs": setting.delay_ms,
    }))
    .into_response())
}
