use std::time::Duration;

use status_checks::net::{DnsCheck, TcpCheck};
use status_core::CheckStatus;

use crate::servers::free_port;
use crate::{refresh, registry_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_connects_or_fails() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let open = registry_with(
        TcpCheck::new(format!("127.0.0.1:{port}")),
        Duration::from_secs(1),
    )
    .await;
    let result = refresh(&open).await;
    assert_eq!(result.status(), CheckStatus::Ok, "{}", result.message());
    assert!(result.observed_value().is_some());

    let closed = registry_with(
        TcpCheck::new(format!("127.0.0.1:{}", free_port())),
        Duration::from_secs(1),
    )
    .await;
    let result = refresh(&closed).await;
    assert_eq!(result.status(), CheckStatus::Outage);
    assert!(result.thrown().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_resolves_or_fails() {
    let localhost = registry_with(DnsCheck::new("localhost"), Duration::from_secs(5)).await;
    let result = refresh(&localhost).await;
    assert_eq!(result.status(), CheckStatus::Ok, "{}", result.message());
    assert!(result.message().contains("localhost resolved to"));

    // .invalid never resolves (RFC 6761).
    let invalid = registry_with(
        DnsCheck::new("no-such-host.invalid"),
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(refresh(&invalid).await.status(), CheckStatus::Outage);
}
