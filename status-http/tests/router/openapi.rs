//! `/openapi.json` describes every route of the router, and the probes answer within it.

use axum::http::StatusCode;
use serde_json::Value;

use crate::support::{fixture, get};

const ROUTES: [(&str, &str); 75] = [
    ("get", "/healthcheck"),
    ("get", "/healthcheck/groups/{name}"),
    ("get", "/healthcheck/groups/{name}/summary"),
    ("get", "/healthcheck/summary"),
    ("get", "/healthcheck/live"),
    ("get", "/healthcheck/ready"),
    ("get", "/healthcheck/startup"),
    ("get", "/healthcheck/dependencies/{id}"),
    ("post", "/healthcheck/dependencies/{id}/refresh"),
    ("get", "/features"),
    ("get", "/features/{name}"),
    ("put", "/features/{name}/override"),
    ("delete", "/features/{name}/override"),
    ("put", "/admin/drain"),
    ("delete", "/admin/drain"),
    ("get", "/admin/audit"),
    ("get", "/admin/mutes"),
    ("put", "/admin/mutes/{dependency}"),
    ("delete", "/admin/mutes/{dependency}"),
    ("get", "/metrics"),
    ("get", "/status"),
    ("get", "/status/events"),
    ("get", "/status/assets/{file}"),
    ("get", "/openapi.json"),
    ("get", "/fleet"),
    ("get", "/fleet/datacenters/{dc}"),
    ("get", "/fleet/dependencies"),
    ("get", "/status/fleet"),
    ("get", "/healthcheck/uptime"),
    ("get", "/healthcheck/dependencies/{id}/uptime"),
    ("get", "/healthcheck/groups/{name}/uptime"),
    ("get", "/healthcheck/report"),
    ("get", "/healthcheck/slos"),
    ("get", "/healthcheck/slos/{name}"),
    ("get", "/admin/exclusions"),
    ("post", "/admin/exclusions"),
    ("delete", "/admin/exclusions/{id}"),
    ("get", "/admin/reports/sla"),
    ("get", "/status/sla"),
    ("get", "/admin/history/audit"),
    ("get", "/healthcheck/transitions"),
    ("get", "/healthcheck/dependencies/{id}/transitions"),
    ("get", "/healthcheck/groups/{name}/transitions"),
    ("get", "/status/history"),
    ("get", "/status/history/{id}"),
    ("get", "/api/v2/status.json"),
    ("get", "/api/v2/summary.json"),
    ("get", "/api/v2/components.json"),
    ("get", "/api/v2/incidents.json"),
    ("get", "/api/v2/incidents/unresolved.json"),
    ("get", "/api/v2/scheduled-maintenances.json"),
    ("get", "/api/v2/scheduled-maintenances/upcoming.json"),
    ("get", "/api/v2/scheduled-maintenances/active.json"),
    ("get", "/badge/{file}"),
    ("get", "/badge/{name}/uptime.svg"),
    ("get", "/history.atom"),
    ("get", "/history.rss"),
    ("get", "/status/page"),
    ("get", "/status/widget.json"),
    ("get", "/status/embed"),
    ("get", "/status/maintenances.ics"),
    ("get", "/status/page/events"),
    ("get", "/admin/incidents"),
    ("post", "/admin/incidents/{id}/updates"),
    ("put", "/admin/incidents/{id}/postmortem"),
    ("get", "/admin/maintenances"),
    ("post", "/admin/maintenances"),
    ("delete", "/admin/maintenances/{id}"),
    ("post", "/status/page/subscriptions"),
    ("get", "/status/page/subscriptions/confirm"),
    ("post", "/status/page/subscriptions/confirm"),
    ("get", "/status/page/subscriptions/unsubscribe"),
    ("post", "/status/page/subscriptions/unsubscribe"),
    ("get", "/admin/subscribers"),
    ("delete", "/admin/subscribers/{id}"),
];

#[tokio::test(start_paused = true)]
async fn every_route_is_described_and_answers_within_the_description() {
    let f = fixture().await;
    let app = f.app();
    let answer = get(&app, "/openapi.json").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.header("content-type"), "application/json");
    let doc: Value = answer.json();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    let described: usize = paths.values().map(|p| p.as_object().unwrap().len()).sum();
    assert_eq!(described, ROUTES.len(), "{:?}", paths.keys());
    for (method, path) in ROUTES {
        let operation = &doc["paths"][path][method];
        assert!(operation.is_object(), "{method} {path} is not described");
        // The status page's subscriptions are the one door open without a token.
        let public_post = path.starts_with("/status/page/subscriptions");
        let admin = path.starts_with("/admin") || (method != "get" && !public_post);
        assert_eq!(
            operation.get("security").is_some(),
            admin,
            "{method} {path}: bearer token required exactly on admin calls"
        );
        if method == "get" && !path.contains('{') && !path.ends_with("/events") {
            let answer = get(&app, path).await;
            let responses = operation["responses"].as_object().unwrap();
            // A rejection (an admin route asked without its token) is the `default` answer.
            let rejected = answer.status.is_client_error() && responses.contains_key("default");
            assert!(
                responses.contains_key(answer.status.as_str()) || rejected,
                "{path} answered {} outside {:?}",
                answer.status,
                responses.keys()
            );
        }
    }
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for name in [
        "Report",
        "Summary",
        "HealthJson",
        "Error",
        "Drain",
        "Feature",
    ] {
        assert!(schemas.contains_key(name), "no schema {name}");
    }
}

/// The codes each route can answer besides the rejections every route shares (the
/// `default` response: 400, 401, 403, 404, 405, 408, 413, 414, 431), read from its handler:
/// the documentation must name exactly these, not only those a fixture happens to produce.
const CODES: [(&str, &str, &[&str]); 52] = [
    // A report's condition (503 on OUTAGE), or 304 on a matching ETag.
    ("get", "/healthcheck", &["200", "304", "503"]),
    ("get", "/healthcheck/summary", &["200", "304", "503"]),
    // 503 only once the instance culled itself.
    ("get", "/healthcheck/live", &["200", "304", "503"]),
    ("get", "/healthcheck/ready", &["200", "503"]),
    ("get", "/healthcheck/startup", &["200", "503"]),
    // A group's rule (503), an unknown group (404), or 304 on a matching ETag.
    (
        "get",
        "/healthcheck/groups/{name}",
        &["200", "304", "404", "503"],
    ),
    (
        "get",
        "/healthcheck/groups/{name}/summary",
        &["200", "304", "404", "503"],
    ),
    ("get", "/healthcheck/dependencies/{id}", &["200", "503"]),
    ("post", "/healthcheck/dependencies/{id}/refresh", &["200"]),
    ("get", "/features", &["200"]),
    ("get", "/features/{name}", &["200"]),
    ("put", "/features/{name}/override", &["200"]),
    ("delete", "/features/{name}/override", &["200"]),
    ("put", "/admin/drain", &["200"]),
    ("delete", "/admin/drain", &["200"]),
    // With a history, the trail is read from it (the process's own while it cannot be).
    ("get", "/admin/audit", &["200"]),
    ("get", "/metrics", &["200"]),
    ("get", "/status", &["200"]),
    ("get", "/status/events", &["200", "429", "503"]),
    ("get", "/status/assets/{file}", &["200"]),
    ("get", "/openapi.json", &["200"]),
    // A bad page (400), no fleet view (404), a store that cannot list (503).
    ("get", "/fleet", &["200", "400", "404"]),
    ("get", "/fleet/datacenters/{dc}", &["200", "404", "503"]),
    ("get", "/fleet/dependencies", &["200", "404"]),
    ("get", "/status/fleet", &["200", "400", "404"]),
    // A window that is not one (400), an unknown name or no history kept (404), the store
    // not available (503).
    ("get", "/healthcheck/uptime", &["200", "400", "404", "503"]),
    (
        "get",
        "/healthcheck/dependencies/{id}/uptime",
        &["200", "400", "404", "503"],
    ),
    (
        "get",
        "/healthcheck/groups/{name}/uptime",
        &["200", "400", "404", "503"],
    ),
    ("get", "/healthcheck/report", &["200", "400", "404", "503"]),
    ("get", "/admin/history/audit", &["200", "404", "503"]),
    (
        "get",
        "/healthcheck/transitions",
        &["200", "400", "404", "503"],
    ),
    (
        "get",
        "/healthcheck/dependencies/{id}/transitions",
        &["200", "400", "404", "503"],
    ),
    (
        "get",
        "/healthcheck/groups/{name}/transitions",
        &["200", "400", "404", "503"],
    ),
    ("get", "/status/history", &["200", "400", "404"]),
    ("get", "/status/history/{id}", &["200", "400", "404"]),
    // Statuspage's JSON and the public page answer whatever the store does (incidents
    // last read are served while it fails).
    ("get", "/api/v2/status.json", &["200"]),
    ("get", "/api/v2/summary.json", &["200"]),
    ("get", "/api/v2/components.json", &["200"]),
    ("get", "/api/v2/incidents.json", &["200"]),
    ("get", "/api/v2/incidents/unresolved.json", &["200"]),
    ("get", "/api/v2/scheduled-maintenances.json", &["200"]),
    (
        "get",
        "/api/v2/scheduled-maintenances/upcoming.json",
        &["200"],
    ),
    (
        "get",
        "/api/v2/scheduled-maintenances/active.json",
        &["200"],
    ),
    ("get", "/badge/{file}", &["200", "304", "404"]),
    (
        "get",
        "/badge/{name}/uptime.svg",
        &["200", "304", "400", "404", "503"],
    ),
    ("get", "/status/page", &["200"]),
    ("get", "/status/widget.json", &["200"]),
    ("get", "/status/embed", &["200"]),
    ("get", "/status/maintenances.ics", &["200"]),
    ("get", "/status/page/events", &["200", "429", "503"]),
    ("get", "/admin/incidents", &["200", "400", "404", "503"]),
    (
        "post",
        "/admin/incidents/{id}/updates",
        &["201", "400", "404", "409", "503"],
    ),
];

#[tokio::test(start_paused = true)]
async fn every_route_documents_exactly_the_codes_it_can_answer() {
    let f = fixture().await;
    let doc: Value = get(&f.app(), "/openapi.json").await.json();
    for (method, path, codes) in CODES {
        let mut documented: Vec<String> = doc["paths"][path][method]["responses"]
            .as_object()
            .unwrap_or_else(|| panic!("{method} {path} is not described"))
            .keys()
            .filter(|code| *code != "default")
            .cloned()
            .collect();
        documented.sort();
        assert_eq!(documented, codes, "{method} {path}");
    }
    // The cull's 503 is liveness's (not the detailed report's, whose 503 is OUTAGE's), and the
    // route answers it.
    let app = f.app();
    assert_eq!(get(&app, "/healthcheck/live").await.status, StatusCode::OK);
    f.registry
        .hold(
            status_core::HoldSource::Cull,
            "culled: test",
            None,
            Some("culler"),
        )
        .unwrap();
    assert_eq!(
        get(&app, "/healthcheck/live").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    let live = &doc["paths"]["/healthcheck/live"]["get"]["responses"]["503"]["description"];
    assert!(live.as_str().unwrap().contains("culled"), "{live}");
    let detailed = &doc["paths"]["/healthcheck"]["get"]["responses"]["503"]["description"];
    assert!(detailed.as_str().unwrap().contains("OUTAGE"), "{detailed}");
}
