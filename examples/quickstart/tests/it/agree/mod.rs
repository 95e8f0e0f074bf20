//! HTTP, gRPC, MCP and the public page asked the same questions of one quickstart: every
//! service gRPC `List`s, against the HTTP route that answers it, and what MCP's `summary`
//! says of readiness, serving and each group against the HTTP routes that answer them, and
//! of the condition against the public page's banner (Statuspage's indicator).

use std::net::SocketAddr;
use std::time::Duration;

use status_grpc::pb::health_client::HealthClient;
use status_grpc::pb::{HealthCheckRequest, HealthListRequest};
use status_grpc::ServingStatus;
use tonic::transport::Channel;

use crate::common;

/// A gRPC health client of the quickstart's `port`.
pub(crate) async fn grpc_client(port: u16) -> HealthClient<Channel> {
    HealthClient::connect(format!("http://127.0.0.1:{port}"))
        .await
        .unwrap()
}

/// Every service gRPC lists, sorted.
pub(crate) async fn services(client: &mut HealthClient<Channel>) -> Vec<String> {
    let mut names: Vec<String> = client
        .list(HealthListRequest {})
        .await
        .unwrap()
        .into_inner()
        .statuses
        .into_keys()
        .collect();
    names.sort();
    names
}

/// What gRPC `Check` answers for `service`.
pub(crate) async fn check(client: &mut HealthClient<Channel>, service: &str) -> ServingStatus {
    client
        .check(HealthCheckRequest {
            service: service.as_bytes().to_vec(),
        })
        .await
        .unwrap()
        .into_inner()
        .status()
}

/// The HTTP route answering what `service` answers, and whether it says yes.
async fn http_says(addr: SocketAddr, service: &str) -> bool {
    let path = match service {
        "" => "/healthcheck/summary".to_owned(),
        "probe/live" => "/healthcheck/live".to_owned(),
        "probe/ready" => "/healthcheck/ready".to_owned(),
        "probe/startup" => "/healthcheck/startup".to_owned(),
        feature if feature.starts_with("feature/") => {
            let name = &feature["feature/".len()..];
            let (code, body) =
                common::request(addr, "GET", &format!("/features/{name}"), None, "").await;
            assert_eq!(code, 200, "{body}");
            let feature: serde_json::Value = serde_json::from_str(&body).unwrap();
            return feature["enabled"] == true;
        }
        group => format!("/healthcheck/groups/{group}/summary"),
    };
    common::request(addr, "GET", &path, None, "").await.0 == 200
}

/// Where gRPC and HTTP disagree on `services`, each as `"{when}: {service} gRPC …, HTTP …"`.
/// The two are asked a moment apart: a check landing in between may move the answer, so a
/// disagreement counts only if it lasts (five asks, 200 ms apart).
pub(crate) async fn disagreements(
    addr: SocketAddr,
    client: &mut HealthClient<Channel>,
    services: &[String],
    when: &str,
) -> Vec<String> {
    let mut found = Vec::new();
    for service in services {
        let mut last = None;
        for _ in 0..5 {
            let grpc = check(client, service).await == ServingStatus::Serving;
            let http = http_says(addr, service).await;
            if grpc == http {
                last = None;
                break;
            }
            last = Some((grpc, http));
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        if let Some((grpc, http)) = last {
            found.push(format!("{when}: {service:?} gRPC {grpc}, HTTP {http}"));
        }
    }
    let groups = groups(services);
    let mut last = None;
    for _ in 0..5 {
        let mcp = mcp_says(addr, &groups).await;
        let mut http = Vec::new();
        for (question, _) in &mcp {
            http.push((question.clone(), http_answers(addr, question).await));
        }
        if mcp == http {
            last = None;
            break;
        }
        last = Some((mcp, http));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    if let Some((mcp, http)) = last {
        found.push(format!("{when}: MCP {mcp:?}, HTTP {http:?}"));
    }
    found
}

/// MCP's `summary` (with the admin token `t`), as yes-or-no answers: `ready`, `serving`, and
/// `group/{name}` for each of `groups` (ready unless listed among `groupsFailing` as not).
async fn mcp_says(addr: SocketAddr, groups: &[&str]) -> Vec<(String, String)> {
    let answer = mcp_call(addr).await;
    let summary = &answer["result"]["structuredContent"];
    assert!(summary.is_object(), "{answer}");
    let failing: Vec<&str> = summary["groupsFailing"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["ready"] == false)
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    let yes = |b: bool| if b { "yes" } else { "no" }.to_owned();
    let mut said = vec![
        (
            "ready".to_owned(),
            yes(summary["readiness"]["ready"] == true),
        ),
        ("serving".to_owned(), yes(summary["serving"] == true)),
        // The public page's banner tells the same condition (Statuspage's indicator). (The
        // summary route's body is no witness of it: a drain or a shutdown answers OUTAGE
        // there, for the balancers, whatever the dependencies.)
        (
            "page".to_owned(),
            summary["condition"].as_str().unwrap().to_owned(),
        ),
    ];
    // The line a client reading only text gets: its "groups failing: …" is the same list.
    let line = answer["result"]["content"][0]["text"].as_str().unwrap();
    let in_line: Vec<&str> = line
        .split("; ")
        .find_map(|part| part.strip_prefix("groups failing: "))
        .map(|names| names.split(", ").collect())
        .unwrap_or_default();
    for group in groups {
        said.push((format!("group/{group}"), yes(!failing.contains(group))));
        said.push((format!("said group/{group}"), yes(!in_line.contains(group))));
    }
    said
}

/// What the HTTP route answering `question` says: `yes` or `no` (200 or not), or the
/// condition the public page's banner tells.
async fn http_answers(addr: SocketAddr, question: &str) -> String {
    let yes = |code: u16| if code == 200 { "yes" } else { "no" }.to_owned();
    match question {
        "page" => {
            let (_, body) = common::get_json(addr, "/api/v2/status.json").await;
            match body["status"]["indicator"].as_str().unwrap_or_default() {
                "none" => "OK",
                "minor" => "MINOR",
                "major" => "MAJOR",
                "critical" => "OUTAGE",
                other => other,
            }
            .to_owned()
        }
        "ready" => yes(common::request(addr, "GET", "/healthcheck/ready", None, "")
            .await
            .0),
        "serving" => yes(
            common::request(addr, "GET", "/healthcheck/summary", None, "")
                .await
                .0,
        ),
        group => {
            let group = group.strip_prefix("said ").unwrap_or(group);
            let path = format!("/healthcheck/groups/{}/summary", &group["group/".len()..]);
            yes(common::request(addr, "GET", &path, None, "").await.0)
        }
    }
}

/// Where OTLP (what the quickstart exports to `collector`) and MCP's `summary` disagree on the
/// system's level and each group's, each as `"{when}: …"`, counted only if it lasts (ten
/// asks, 300 ms apart: exports come every 200 ms, later on a busy machine).
pub(crate) async fn otlp_disagreements(
    addr: SocketAddr,
    collector: &crate::collector::Collector,
    groups: &[&str],
    when: &str,
) -> Vec<String> {
    let mut last = None;
    for _ in 0..10 {
        let (mcp, otlp) = (
            mcp_levels(addr, groups).await,
            otlp_levels(collector, groups),
        );
        if mcp == otlp {
            return Vec::new();
        }
        last = Some((mcp, otlp));
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let (mcp, otlp) = last.unwrap_or_default();
    vec![format!("{when}: MCP {mcp:?}, OTLP {otlp:?}")]
}

/// The system's level and each group's, as MCP's `summary` says them (a group it does not
/// list is OK).
async fn mcp_levels(addr: SocketAddr, groups: &[&str]) -> Vec<(String, String)> {
    let summary = mcp_summary(addr).await;
    let mut levels = vec![(
        "system".to_owned(),
        summary["condition"].as_str().unwrap().to_owned(),
    )];
    for group in groups {
        let level = summary["groupsFailing"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == *group)
            .map_or("OK", |g| g["level"].as_str().unwrap());
        levels.push((format!("group/{group}"), level.to_owned()));
    }
    levels
}

/// The same, as the latest OTLP export's state sets say them (the state at 1).
fn otlp_levels(collector: &crate::collector::Collector, groups: &[&str]) -> Vec<(String, String)> {
    let current = |states: Vec<(String, i64)>| {
        states
            .into_iter()
            .find(|(_, v)| *v == 1)
            .map_or_else(|| "none".to_owned(), |(s, _)| s.to_uppercase())
    };
    let mut levels = vec![(
        "system".to_owned(),
        current(collector.states(status_otel::names::SYSTEM_STATE, &[])),
    )];
    for group in groups {
        levels.push((
            format!("group/{group}"),
            current(collector.states(
                status_otel::names::GROUP_STATE,
                &[(status_otel::names::GROUP_NAME, group)],
            )),
        ));
    }
    levels
}

/// MCP's `summary` tool called with the admin token `t`: the JSON-RPC answer.
async fn mcp_call(addr: SocketAddr) -> serde_json::Value {
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"summary","arguments":{}}}"#;
    let (code, body) = common::request_with(
        addr,
        "POST",
        "/mcp",
        Some("t"),
        call,
        &[("accept", "application/json, text/event-stream")],
    )
    .await;
    assert_eq!(code, 200, "{body}");
    // JSON, or one server-sent event carrying it.
    let json = body
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or(&body);
    serde_json::from_str(json).unwrap()
}

/// Its structured answer.
async fn mcp_summary(addr: SocketAddr) -> serde_json::Value {
    mcp_call(addr).await["result"]["structuredContent"].clone()
}

/// The probe groups among gRPC's `services` (neither `""`, `probe/…` nor `feature/…`).
pub(crate) fn groups(services: &[String]) -> Vec<&str> {
    services
        .iter()
        .map(String::as_str)
        .filter(|s| !s.is_empty() && !s.starts_with("probe/") && !s.starts_with("feature/"))
        .collect()
}

/// The environment that has a quickstart export its metrics every 200 ms to `endpoint` (a
/// collector's), and nothing else.
pub(crate) fn otlp_env(endpoint: &str) -> [(&'static str, &str); 4] {
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
        ("OTEL_METRIC_EXPORT_INTERVAL", "200"),
        ("OTEL_LOGS_EXPORTER", "none"),
        ("OTEL_TRACES_EXPORTER", "none"),
    ]
}
