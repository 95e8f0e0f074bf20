//! The health service over a real socket, driven by tonic's generated client.

use std::future::IntoFuture;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use status_core::{check, CheckStatus, Dependency, Feature, Group, HoldSource, Registry, Urgency};
use status_grpc::pb::health_client::HealthClient;
use status_grpc::pb::{HealthCheckRequest, HealthCheckResponse, HealthListRequest};
use status_grpc::{HealthService, ServingStatus};
use tokio::net::TcpListener;
use tonic::transport::Channel;
use tonic::{Code, Streaming};

/// A dependency whose status the test sets.
#[derive(Clone)]
struct Switch(Arc<Mutex<CheckStatus>>);

impl Switch {
    fn new() -> Self {
        Self(Arc::new(Mutex::new(CheckStatus::Ok)))
    }

    async fn set(&self, registry: &Registry, status: CheckStatus) {
        *self.0.lock().unwrap() = status;
        registry.refresh_all().await;
    }

    fn dependency(&self, id: &str, urgency: Urgency) -> Dependency {
        let status = Arc::clone(&self.0);
        Dependency::builder(
            id,
            check::tiered(move || {
                let status = *status.lock().unwrap();
                async move { (status, format!("says {status}")) }
            }),
        )
        .urgency(urgency)
        .period(Duration::from_secs(3600))
        .failures_before_outage(1)
        .build()
        .unwrap()
    }
}

struct Fixture {
    registry: Registry,
    address: String,
    db: Switch,
    cache: Switch,
    client: HealthClient<Channel>,
}

/// `db` (Required) and `cache` (Weak, tagged `cache`), checked; the group `cache` (fails on
/// MINOR) and the feature `orders` (db no worse than MINOR); the service on a loopback port.
async fn serve(service: impl FnOnce(HealthService) -> HealthService) -> Fixture {
    let registry = Registry::builder().jitter(0.0).build();
    let (db, cache) = (Switch::new(), Switch::new());
    registry
        .add(db.dependency("db", Urgency::Required))
        .unwrap();
    let mut tagged = cache.dependency("cache", Urgency::Weak).into_builder();
    tagged = tagged.tag("cache");
    registry.add(tagged.build().unwrap()).unwrap();
    registry
        .add_group(
            Group::builder("cache")
                .tag("cache")
                .fails_on(CheckStatus::Minor)
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .add_feature(
            Feature::builder("orders")
                .requires("db", CheckStatus::Minor)
                .build()
                .unwrap(),
        )
        .unwrap();
    registry.refresh_all().await;
    let health = service(HealthService::new(&registry));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(
        status_grpc::serve(listener, tonic::service::Routes::new(health.into_server()))
            .into_future(),
    );
    let address = format!("http://{address}");
    let client = HealthClient::connect(address.clone()).await.unwrap();
    Fixture {
        registry,
        address,
        db,
        cache,
        client,
    }
}

fn ask(service: &str) -> HealthCheckRequest {
    HealthCheckRequest {
        service: service.as_bytes().to_vec(),
    }
}

async fn check(client: &mut HealthClient<Channel>, service: &str) -> Result<ServingStatus, Code> {
    client
        .check(ask(service))
        .await
        .map(|r| r.into_inner().status())
        .map_err(|s| s.code())
}

/// The next message of `stream`, or `None` once it ended; a guard against hanging, not a
/// timing assertion.
async fn next(stream: &mut Streaming<HealthCheckResponse>) -> Option<ServingStatus> {
    tokio::time::timeout(Duration::from_secs(10), stream.message())
        .await
        .expect("a message or the end within 10 s")
        .unwrap()
        .map(|r| r.status())
}

#[tokio::test]
async fn check_answers_every_kind_of_service() {
    let mut f = serve(|s| s).await;
    let c = &mut f.client;
    assert_eq!(check(c, "").await, Ok(ServingStatus::Serving));
    assert_eq!(check(c, "cache").await, Ok(ServingStatus::Serving));
    assert_eq!(check(c, "feature/orders").await, Ok(ServingStatus::Serving));
    assert_eq!(check(c, "nope").await, Err(Code::NotFound));
    assert_eq!(check(c, "feature/nope").await, Err(Code::NotFound));

    f.cache.set(&f.registry, CheckStatus::Outage).await;
    assert_eq!(
        check(c, "cache").await,
        Ok(ServingStatus::NotServing),
        "fails on MINOR"
    );
    assert_eq!(
        check(c, "").await,
        Ok(ServingStatus::Serving),
        "a Weak cache"
    );
    f.db.set(&f.registry, CheckStatus::Outage).await;
    assert_eq!(check(c, "").await, Ok(ServingStatus::NotServing));
    assert_eq!(
        check(c, "feature/orders").await,
        Ok(ServingStatus::NotServing)
    );
    f.db.set(&f.registry, CheckStatus::Ok).await;
    // An operator's drain: the instance is out; a group that counts holds too.
    f.registry.drain("deploy", None, None).unwrap();
    assert_eq!(check(c, "").await, Ok(ServingStatus::NotServing));
    assert!(f.registry.undrain());
    assert_eq!(check(c, "").await, Ok(ServingStatus::Serving));
}

#[tokio::test]
async fn bad_names_are_invalid_arguments_and_change_nothing() {
    let mut f = serve(|s| s).await;
    let long = "a".repeat(257);
    assert_eq!(
        check(&mut f.client, &long).await,
        Err(Code::InvalidArgument)
    );
    let not_utf8 = HealthCheckRequest {
        service: vec![0xff, 0xfe],
    };
    let answer = f.client.check(not_utf8.clone()).await.unwrap_err();
    assert_eq!(answer.code(), Code::InvalidArgument);
    let watch = f.client.watch(not_utf8).await.unwrap_err();
    assert_eq!(watch.code(), Code::InvalidArgument);
    assert_eq!(check(&mut f.client, "").await, Ok(ServingStatus::Serving));
}

#[tokio::test]
async fn watch_sends_now_then_each_change_and_waits_for_unknown_services() {
    let mut f = serve(|s| s).await;
    let mut system = f.client.watch(ask("")).await.unwrap().into_inner();
    assert_eq!(next(&mut system).await, Some(ServingStatus::Serving));
    f.db.set(&f.registry, CheckStatus::Outage).await;
    assert_eq!(next(&mut system).await, Some(ServingStatus::NotServing));
    f.db.set(&f.registry, CheckStatus::Ok).await;
    assert_eq!(next(&mut system).await, Some(ServingStatus::Serving));

    // Unknown: one SERVICE_UNKNOWN, the stream stays open, the real status follows.
    let mut later = f.client.watch(ask("later")).await.unwrap().into_inner();
    assert_eq!(next(&mut later).await, Some(ServingStatus::ServiceUnknown));
    f.registry
        .add_group(Group::builder("later").dependency("db").build().unwrap())
        .unwrap();
    assert_eq!(next(&mut later).await, Some(ServingStatus::Serving));
}

#[tokio::test]
async fn a_slow_reader_gets_the_latest_status_not_a_backlog() {
    let f = serve(|s| s).await;
    // A reader whose flow-control window holds two messages: once it stops reading, the
    // server cannot send more, and what changes meanwhile must not pile up.
    let channel = tonic::transport::Endpoint::from_shared(f.address.clone())
        .unwrap()
        .initial_stream_window_size(14)
        .connect()
        .await
        .unwrap();
    let mut slow = HealthClient::new(channel);
    let mut stream = slow.watch(ask("cache")).await.unwrap().into_inner();
    assert_eq!(next(&mut stream).await, Some(ServingStatus::Serving));
    // Forty changes while the client reads nothing, ending on OUTAGE.
    for i in 0..40 {
        let status = if i % 2 == 0 {
            CheckStatus::Outage
        } else {
            CheckStatus::Ok
        };
        f.cache.set(&f.registry, status).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    f.cache.set(&f.registry, CheckStatus::Outage).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut received = Vec::new();
    while let Ok(message) = tokio::time::timeout(Duration::from_millis(300), stream.message()).await
    {
        received.push(message.unwrap().unwrap().status());
    }
    assert_eq!(
        received.last(),
        Some(&ServingStatus::NotServing),
        "{received:?}"
    );
    assert!(
        received.len() <= 4,
        "what the window held, then the latest; not forty: {received:?}"
    );
}

#[tokio::test]
async fn list_names_every_service() {
    let mut f = serve(|s| s).await;
    f.cache.set(&f.registry, CheckStatus::Outage).await;
    let list = f
        .client
        .list(HealthListRequest {})
        .await
        .unwrap()
        .into_inner();
    let mut names: Vec<(&str, ServingStatus)> = list
        .statuses
        .iter()
        .map(|(name, r)| (name.as_str(), r.status()))
        .collect();
    names.sort_by_key(|(name, _)| *name);
    assert_eq!(
        names,
        [
            ("", ServingStatus::Serving),
            ("cache", ServingStatus::NotServing),
            ("feature/orders", ServingStatus::Serving),
            ("probe/live", ServingStatus::Serving),
            ("probe/ready", ServingStatus::Serving),
            ("probe/startup", ServingStatus::Serving),
        ]
    );
}

#[tokio::test]
async fn watches_beyond_the_most_are_refused_and_counted() {
    let mut f = serve(|s| s.max_watches(2)).await;
    let first = f.client.watch(ask("")).await.unwrap().into_inner();
    let _second = f.client.watch(ask("cache")).await.unwrap().into_inner();
    let refused = f.client.watch(ask("")).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted);
    drop(first);
    // The slot comes back once the server sees the stream gone.
    let mut again = None;
    for _ in 0..100 {
        match f.client.watch(ask("")).await {
            Ok(stream) => {
                again = Some(stream.into_inner());
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    assert!(again.is_some(), "a closed stream gives its place back");
}

/// Through a shutdown, every service answers as its HTTP route does: the instance, readiness
/// and the groups that count holds fail; liveness, startup, a group that ignores holds and
/// the features answer as before. Every stream ends at the end of the grace.
#[tokio::test]
async fn a_shutdown_fails_what_its_hold_fails_then_ends_the_streams() {
    let mut f = serve(|s| s.shutdown_grace(Duration::from_millis(300))).await;
    f.registry
        .add_group(
            Group::builder("edge")
                .tag("cache")
                .fails_on(CheckStatus::Minor)
                .rotation(false)
                .build()
                .unwrap(),
        )
        .unwrap();
    let mut streams = Vec::new();
    for service in ["", "cache", "edge", "feature/orders"] {
        let mut stream = f.client.watch(ask(service)).await.unwrap().into_inner();
        assert_eq!(
            next(&mut stream).await,
            Some(ServingStatus::Serving),
            "{service}"
        );
        streams.push((service, stream));
    }
    f.registry
        .hold(HoldSource::Shutdown, "shutting down", None, None)
        .unwrap();
    for (service, stream) in &mut streams {
        if ["", "cache"].contains(service) {
            assert_eq!(
                next(stream).await,
                Some(ServingStatus::NotServing),
                "{service}"
            );
        }
        assert_eq!(
            next(stream).await,
            None,
            "{service} ended at the end of the grace"
        );
    }
    let c = &mut f.client;
    assert_eq!(check(c, "").await, Ok(ServingStatus::NotServing));
    assert_eq!(check(c, "cache").await, Ok(ServingStatus::NotServing));
    assert_eq!(check(c, "edge").await, Ok(ServingStatus::Serving));
    assert_eq!(check(c, "feature/orders").await, Ok(ServingStatus::Serving));
    assert_eq!(check(c, "probe/live").await, Ok(ServingStatus::Serving));
    assert_eq!(check(c, "probe/startup").await, Ok(ServingStatus::Serving));
    assert_eq!(check(c, "probe/ready").await, Ok(ServingStatus::NotServing));
}

/// `src/pb.rs` is generated from the `.proto` checked in (its header names the file's hash):
/// a change to the protocol without `scripts/grpc-codegen` fails here.
#[test]
fn the_generated_code_is_of_the_proto_checked_in() {
    let root = env!("CARGO_MANIFEST_DIR");
    let proto = std::fs::read(format!("{root}/proto/grpc/health/v1/health.proto")).unwrap();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in proto {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let generated = std::fs::read_to_string(format!("{root}/src/pb.rs")).unwrap();
    let header = generated.lines().next().unwrap();
    assert!(
        header.contains(&format!("(FNV-1a 64: {hash:016x})")),
        "src/pb.rs is not generated from the .proto checked in: run scripts/grpc-codegen ({header})"
    );
}

/// `GrpcHealthCheck` against this crate's own service over a real socket: SERVING is OK,
/// NOT_SERVING OUTAGE, an unknown service MAJOR; a server that is not there is OUTAGE, and a
/// URI that is not one is refused when the check is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grpc_health_check_reads_a_downstream_as_the_protocol_says() {
    use status_core::check::Check;
    use status_grpc::check::GrpcHealthCheck;

    let fixture = serve(|s| s).await;
    let of = |service: &str| GrpcHealthCheck::new(&fixture.address, service).unwrap();
    let (server, orders, unknown) = (of(""), of("feature/orders"), of("no-such-service"));
    let outcome = server.check().await;
    assert_eq!(outcome.status(), CheckStatus::Ok, "{}", outcome.message());
    assert!(
        outcome.message().contains("SERVING"),
        "{}",
        outcome.message()
    );
    assert!(outcome.value().is_some_and(|ms| ms >= 0.0));
    assert_eq!(orders.check().await.status(), CheckStatus::Ok);
    let outcome = unknown.check().await;
    assert_eq!(
        outcome.status(),
        CheckStatus::Major,
        "{}",
        outcome.message()
    );
    assert!(
        outcome.message().contains("NotFound"),
        "{}",
        outcome.message()
    );

    // The downstream's db fails: the server and the feature are NOT_SERVING.
    fixture.db.set(&fixture.registry, CheckStatus::Outage).await;
    for check in [&server, &orders] {
        let outcome = check.check().await;
        assert_eq!(
            outcome.status(),
            CheckStatus::Outage,
            "{}",
            outcome.message()
        );
        assert!(
            outcome.message().contains("NOT_SERVING"),
            "{}",
            outcome.message()
        );
    }
    // And back: the same connection answers again.
    fixture.db.set(&fixture.registry, CheckStatus::Ok).await;
    assert_eq!(server.check().await.status(), CheckStatus::Ok);

    // Nobody listening: OUTAGE, within the connect timeout.
    let vacant = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", vacant.local_addr().unwrap());
    drop(vacant);
    let gone = GrpcHealthCheck::new(&address, "").unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(5), gone.check())
        .await
        .expect("answered within the connect timeout");
    assert_eq!(
        outcome.status(),
        CheckStatus::Outage,
        "{}",
        outcome.message()
    );

    assert!(GrpcHealthCheck::new("not a uri", "")
        .unwrap_err()
        .is_invalid());
}

/// A downstream that accepts connections and never answers: the check is cut off by the
/// engine's timeout (OUTAGE, the call cancelled), never waits past it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grpc_health_check_of_a_silent_downstream_ends_at_the_timeout() {
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", silent.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            open.push(stream);
        }
    });
    let registry = Registry::builder().jitter(0.0).build();
    registry
        .add(
            Dependency::builder(
                "payments",
                status_grpc::check::GrpcHealthCheck::new(&address, "payments.v1").unwrap(),
            )
            .timeout(Duration::from_millis(300))
            .period(Duration::from_secs(3600))
            .failures_before_outage(1)
            .build()
            .unwrap(),
        )
        .unwrap();
    let started = std::time::Instant::now();
    registry.refresh_all().await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let result = registry.result("payments").unwrap();
    assert_eq!(result.status(), CheckStatus::Outage, "{}", result.message());
    held.abort();
}
