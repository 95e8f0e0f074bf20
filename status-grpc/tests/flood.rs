//! Floods of streams from one address, over real sockets: Checks whose requests never end
//! and watches held open, each on a connection of its own. Another address's Check is
//! answered within a second, the flood's own newest too, and a Check that never ends is cut
//! at the request deadline. A binary of its own: its sockets and its time are its own.

use std::future::IntoFuture;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use status_core::Registry;
use status_grpc::pb::health_client::HealthClient;
use status_grpc::pb::{HealthCheckRequest, HealthCheckResponse};
use status_grpc::{HealthService, ServerStats};
use tokio::net::TcpListener;
use tonic::transport::{Channel, Endpoint};
use tonic::Code;

const FLOOD: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const OTHER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

async fn start(
    server: impl FnOnce(
        status_grpc::serve::Serve<std::future::Pending<()>>,
    ) -> status_grpc::serve::Serve<std::future::Pending<()>>,
) -> (SocketAddr, Arc<ServerStats>) {
    let registry = Registry::new();
    let health = HealthService::new(&registry);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let serve = server(status_grpc::serve(
        listener,
        tonic::service::Routes::new(health.into_server()),
    ));
    let stats = serve.stats();
    tokio::spawn(async move {
        let _registry = registry;
        serve.into_future().await
    });
    (address, stats)
}

async fn channel(address: SocketAddr, from: IpAddr) -> Channel {
    Endpoint::from_shared(format!("http://{address}"))
        .unwrap()
        .local_address(Some(from))
        .connect()
        .await
        .unwrap()
}

/// A Check whose request never ends: its headers sent, no message, no end of stream.
async fn endless_check(channel: Channel) -> Result<HealthCheckResponse, tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unknown(e.to_string()))?;
    let never = futures::stream::pending::<HealthCheckRequest>();
    grpc.client_streaming(
        tonic::Request::new(never),
        tonic::codegen::http::uri::PathAndQuery::from_static("/grpc.health.v1.Health/Check"),
        tonic_prost::ProstCodec::default(),
    )
    .await
    .map(tonic::Response::into_inner)
}

/// How long a Check from `from`, on a new connection, takes to be answered SERVING.
async fn probe(address: SocketAddr, from: IpAddr) -> Duration {
    let started = Instant::now();
    let answered = tokio::time::timeout(Duration::from_secs(5), async {
        let mut client = HealthClient::new(channel(address, from).await);
        client.check(HealthCheckRequest::default()).await
    })
    .await
    .expect("a Check answered within 5 s");
    assert_eq!(answered.unwrap().into_inner().status, 1, "SERVING");
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_endless_checks_and_watches_from_one_address_leaves_another_answered() {
    let (address, stats) = start(|s| s.max_connections(64)).await;
    let mut held = Vec::new();
    // 96 connections from one address, each holding one stream: half Checks that never
    // end, half watches kept open. Its share is 32.
    for i in 0..96 {
        let channel = channel(address, FLOOD).await;
        if i % 2 == 0 {
            held.push(tokio::spawn(async move {
                let _ = endless_check(channel).await;
            }));
        } else {
            let mut client = HealthClient::new(channel);
            let Ok(stream) = client.watch(HealthCheckRequest::default()).await else {
                continue;
            };
            held.push(tokio::spawn(async move {
                let mut stream = stream.into_inner();
                while let Ok(Some(_)) = stream.message().await {}
            }));
        }
    }
    assert!(stats.connections() <= 32, "{}", stats.connections());
    // Each past its share took the place of its own cheapest: idle when its stream had
    // not begun yet, else the one longest in a stream.
    assert!(stats.shed() >= 96 - 32, "{}", stats.shed());
    assert!(stats.shed_busy() > 0, "streams in progress made room too");
    for _ in 0..5 {
        let took = probe(address, OTHER).await;
        assert!(took < Duration::from_secs(1), "another address: {took:?}");
    }
    let took = probe(address, FLOOD).await;
    assert!(
        took < Duration::from_secs(1),
        "the flood's own newest: {took:?}"
    );
    for task in held {
        task.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_whose_request_never_ends_is_cut_at_the_request_deadline() {
    let (address, _) = start(|s| s.request_timeout(Duration::from_millis(300))).await;
    let started = Instant::now();
    let status = tokio::time::timeout(
        Duration::from_secs(5),
        endless_check(channel(address, FLOOD).await),
    )
    .await
    .expect("answered")
    .unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    // A watch outlives the deadline: only its request is bound by it.
    let mut client = HealthClient::new(channel(address, FLOOD).await);
    let mut stream = client
        .watch(HealthCheckRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(stream.message().await.unwrap().is_some());
    let next = tokio::time::timeout(Duration::from_millis(600), stream.message()).await;
    assert!(next.is_err(), "still open past the deadline: {next:?}");
}
