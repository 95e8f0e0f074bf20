//! HTTP and gRPC asked the same questions of one quickstart: every service gRPC `List`s,
//! against the HTTP route that answers it.

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
    found
}
