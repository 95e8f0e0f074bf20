//! The admin API's bodies from outside: whatever is sent to a mute, a drain or an override,
//! with the token or without, the answer is never a 5xx; a refusal is a JSON error and
//! changes nothing (the mutes, the holds and the features read the same after).

use crate::common;

use axum::body::Body;
use http_body_util::BodyExt;
use status_core::Registry;
use tower::ServiceExt;

const TOKEN: &str = "fuzz-token";

fn state(registry: &Registry) -> String {
    format!(
        "{:?}|{}|{:?}",
        registry.mutes(),
        registry.holds().len(),
        registry.features()
    )
}

/// One input (see the module).
pub fn admin_json(input: (u8, bool, &[u8])) {
    let (route, with_token, body) = input;
    let (method, path) = match route % 5 {
        0 => ("PUT", "/admin/mutes/db"),
        1 => ("PUT", "/admin/drain"),
        2 => ("PUT", "/features/writes/override"),
        3 => ("DELETE", "/admin/drain"),
        _ => ("PUT", "/admin/mutes/unknown"),
    };
    common::runtime().block_on(async {
        let registry = common::registry_with_writes();
        let app = status_http::Routes::new(&registry)
            .admin_token(TOKEN)
            .build();
        let before = state(&registry);
        let mut request = axum::http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json");
        if with_token {
            request = request.header("authorization", format!("Bearer {TOKEN}"));
        }
        let answer = app
            .oneshot(request.body(Body::from(body.to_vec())).expect("a request"))
            .await
            .expect("infallible");
        let status = answer.status();
        let bytes = answer
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        assert!(
            !status.is_server_error(),
            "{method} {path} {body:?}: {status} {}",
            String::from_utf8_lossy(&bytes)
        );
        if status.is_client_error() {
            let json: serde_json::Value =
                serde_json::from_slice(&bytes).expect("a refusal is JSON");
            assert!(json["error"].is_string(), "{json}");
            assert_eq!(state(&registry), before, "a refusal changed something");
        }
    });
}
