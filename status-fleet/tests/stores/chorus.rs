//! One notification per shared failure: twenty instances (logical ones, through the library)
//! share one real `redis-server`, or one real etcd, each with its notifier and a real webhook sink to one
//! receiver. One shared outage is one notice, from one instance, with the fleet's figures,
//! and one recovery; a failure of one instance's own is still told by it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::routing::post;
use status_core::check::CheckOutcome;
use status_core::{CheckStatus, Registry, Reporter};
use status_fleet::{EtcdFleet, Fleet, FleetChorus, FleetStore, HealthRule, Member, RedisFleet};
use status_notify::{NoticePolicy, Notifications, Webhook};
use tokio::time::Instant;

use crate::etcd_server::EtcdCluster;
use crate::servers::RedisServer;
use crate::shared::required;

/// Every message the receiver got, as JSON.
type Received = Arc<Mutex<Vec<serde_json::Value>>>;

async fn receiver() -> (String, Received) {
    let received: Received = Arc::default();
    let app = axum::Router::new().route(
        "/hook",
        post({
            let received = Arc::clone(&received);
            move |body: axum::body::Bytes| async move {
                received
                    .lock()
                    .unwrap()
                    .push(serde_json::from_slice(&body).unwrap());
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, received)
}

struct Instance {
    _registry: Registry,
    db: Reporter,
    disk: Reporter,
    fleet: Fleet,
    _notifications: Notifications,
}

fn instance(store: impl FleetStore, hook: &str, id: usize) -> Instance {
    instance_in(store, hook, id, "east")
}

fn instance_in(store: impl FleetStore, hook: &str, id: usize, datacenter: &str) -> Instance {
    let registry = Registry::new();
    let (db, disk) = (required(&registry, "db"), required(&registry, "disk"));
    let fleet = Fleet::start(
        &registry,
        store,
        Member {
            instance_id: format!("i{id:02}"),
            datacenter: datacenter.into(),
            version: "1".into(),
            url: String::new(),
        },
        HealthRule::default(),
    );
    let notifications = Notifications::builder(&registry)
        .policy(NoticePolicy {
            hold: Duration::ZERO,
            ..NoticePolicy::default()
        })
        .tick(Duration::from_millis(100))
        .sink(Webhook::new(hook).unwrap())
        .chorus(FleetChorus::new(fleet.clone()))
        .start()
        .unwrap();
    Instance {
        _registry: registry,
        db,
        disk,
        fleet,
        _notifications: notifications,
    }
}

/// The messages about `dependency` of `kind` received so far.
fn about(received: &Received, dependency: &str, kind: &str) -> Vec<serde_json::Value> {
    received
        .lock()
        .unwrap()
        .iter()
        .filter(|m| m["notice"]["id"] == dependency && m["notice"]["kind"] == kind)
        .cloned()
        .collect()
}

async fn settle(what: &str, received: &Received, ok: impl Fn(&Received) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ok(received) {
        assert!(
            Instant::now() < deadline,
            "never: {what}: {:#?}",
            received.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Whatever else would come comes within a few ticks and beats.
    tokio::time::sleep(Duration::from_millis(2500)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shared_outage_is_one_notice_and_one_recovery_in_redis() {
    let redis = RedisServer::start();
    let url = redis.url();
    let ttl = Duration::from_millis(900);
    one_voice(|| RedisFleet::new(&url, "chorus", ttl).unwrap(), ttl).await;
}

/// The same past the store's failing budget: each instance is sent only its own rows, and a
/// speaker asks for the whole list (its recovery names the other data centers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_voice_past_the_failing_budget_in_redis() {
    let redis = RedisServer::start();
    let url = redis.url();
    let ttl = Duration::from_millis(900);
    let store = || {
        RedisFleet::new(&url, "chorus", ttl)
            .unwrap()
            .failing_budget(0)
    };
    one_voice(store, ttl).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_data_center_tells_its_recovery_past_the_failing_budget_in_redis() {
    let redis = RedisServer::start();
    let url = redis.url();
    let ttl = Duration::from_millis(900);
    forge_a_year_long_lease(&url).await;
    per_datacenter(
        || {
            RedisFleet::new(&url, "chorus", ttl)
                .unwrap()
                .failing_budget(0)
        },
        ttl,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shared_outage_is_one_notice_and_one_recovery_in_etcd() {
    let etcd = EtcdCluster::start(1);
    let urls = etcd.urls();
    // etcd's shortest lease is about 2 s.
    let ttl = Duration::from_secs(2);
    one_voice(|| EtcdFleet::new(&urls, "chorus", ttl).unwrap(), ttl).await;
}

/// Twenty instances over `store`: one shared outage, one instance's own failure, the speaker
/// gone mid-outage, the recovery.
async fn one_voice<S: FleetStore>(store: impl Fn() -> S, ttl: Duration) {
    let (hook, received) = receiver().await;
    let mut fleet: Vec<Instance> = (0..20).map(|i| instance(store(), &hook, i)).collect();
    tokio::time::sleep(ttl).await;

    // The database fails for every instance: one notice, for the fleet.
    for instance in &fleet {
        instance
            .db
            .record(CheckOutcome::new(CheckStatus::Outage, "down"));
    }
    settle("the outage told", &received, |r| {
        !about(r, "db", "changed").is_empty()
    })
    .await;
    let told = about(&received, "db", "changed");
    assert_eq!(told.len(), 1, "{told:#?}");
    let figures = told[0]["fleet"]["figures"].as_str().unwrap().to_owned();
    assert!(
        figures.starts_with("db OUTAGE on ") && figures.ends_with(" of 20 in east"),
        "{figures}"
    );
    let speaker = told[0]["fleet"]["speaker"].as_str().unwrap().to_owned();
    assert!(speaker.starts_with('i'), "{speaker}");

    // One instance's own disk: told by it, as its own.
    fleet[7]
        .disk
        .record(CheckOutcome::new(CheckStatus::Outage, "full"));
    settle("the disk told", &received, |r| {
        !about(r, "disk", "changed").is_empty()
    })
    .await;
    let disk = about(&received, "disk", "changed");
    assert_eq!(disk.len(), 1, "{disk:#?}");
    assert!(disk[0].get("fleet").is_none(), "{disk:#?}");

    // The speaker goes mid-outage: its lease lapses (three TTLs), a silent one takes over.
    let at: usize = speaker[1..].parse().unwrap();
    drop(fleet.remove(at));
    tokio::time::sleep(ttl * 4).await;
    assert_eq!(
        about(&received, "db", "changed").len(),
        1,
        "no second notice"
    );

    // The database recovers everywhere: one recovery, from the new speaker.
    for instance in &fleet {
        instance.db.record(CheckOutcome::new(CheckStatus::Ok, "up"));
    }
    settle("the recovery told", &received, |r| {
        !about(r, "db", "resolved").is_empty()
    })
    .await;
    let resolved = about(&received, "db", "resolved");
    assert_eq!(resolved.len(), 1, "{resolved:#?}");
    let new_speaker = resolved[0]["fleet"]["speaker"].as_str().unwrap();
    assert_ne!(new_speaker, speaker, "{resolved:#?}");
    // Told once the failure is no longer shared in east (a few may still be on their way).
    let figures = resolved[0]["fleet"]["figures"].as_str().unwrap();
    assert!(
        figures.starts_with("db recovered in east (") && figures.ends_with(" failing)"),
        "{resolved:#?}"
    );
    assert_eq!(about(&received, "db", "changed").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_data_center_tells_its_failure_and_recovery_in_redis() {
    let redis = RedisServer::start();
    let url = redis.url();
    let ttl = Duration::from_millis(900);
    forge_a_year_long_lease(&url).await;
    per_datacenter(|| RedisFleet::new(&url, "chorus", ttl).unwrap(), ttl).await;
}

/// West's lease of `db`, forged to last a year: it silences no one (free, counted).
async fn forge_a_year_long_lease(url: &str) {
    let mut forger = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let year = 365 * 24 * 3600 * 1000_u64;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let _: () = redis::cmd("HSET")
        .arg("{chorus}:voice")
        .arg("west\tdb")
        .arg(format!("open\nforger\n{}", now + year))
        .query_async(&mut forger)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_data_center_tells_its_failure_and_recovery_in_etcd() {
    let etcd = EtcdCluster::start(1);
    let urls = etcd.urls();
    let ttl = Duration::from_secs(2);
    // A lease forged under an etcd lease of a year silences no one: free, counted.
    let mut client = etcd_client::Client::connect([urls.as_str()], None)
        .await
        .unwrap();
    client
        .put("chorus/mark", status_fleet::FLEET_MARK, None)
        .await
        .unwrap();
    let year = client
        .lease_grant(365 * 24 * 3600, None)
        .await
        .unwrap()
        .id();
    client
        .put(
            b"chorus/v/west\0db".to_vec(),
            "open\nforger",
            Some(etcd_client::PutOptions::new().with_lease(year)),
        )
        .await
        .unwrap();
    per_datacenter(|| EtcdFleet::new(&urls, "chorus", ttl).unwrap(), ttl).await;
}

/// Three instances in east and three in west over `store`, where west's lease of `db` was
/// forged to last a year: both fail `db`, each data center tells it once; east recovers
/// first, told as east's, naming west; then west, told once.
async fn per_datacenter<S: FleetStore>(store: impl Fn() -> S, ttl: Duration) {
    let (hook, received) = receiver().await;
    let east: Vec<Instance> = (0..3)
        .map(|i| instance_in(store(), &hook, i, "east"))
        .collect();
    let west: Vec<Instance> = (3..6)
        .map(|i| instance_in(store(), &hook, i, "west"))
        .collect();
    tokio::time::sleep(ttl).await;
    for instance in east.iter().chain(&west) {
        instance
            .db
            .record(CheckOutcome::new(CheckStatus::Outage, "down"));
    }
    settle("both told", &received, |r| {
        about(r, "db", "changed").len() >= 2
    })
    .await;
    let told = about(&received, "db", "changed");
    assert_eq!(told.len(), 2, "{told:#?}");
    let mut places: Vec<&str> = told
        .iter()
        .map(|m| m["fleet"]["datacenter"].as_str().unwrap())
        .collect();
    places.sort_unstable();
    assert_eq!(places, ["east", "west"], "{told:#?}");
    for m in &told {
        let dc = m["fleet"]["datacenter"].as_str().unwrap();
        assert_eq!(m["text"], format!("db is OUTAGE in {dc} (was OK)"), "{m:#}");
        assert!(
            m["fleet"]["figures"]
                .as_str()
                .unwrap()
                .ends_with(&format!(" of 3 in {dc}")),
            "{m:#}"
        );
        assert_ne!(m["fleet"]["speaker"], "forger");
    }
    let forged = status_fleet::Rejection::ForgedLease.index();
    assert!(
        west.iter().any(|i| i.fleet.stats().rejected[forged] > 0),
        "the forged lease was not counted"
    );

    // East recovers; west still fails: east's recovery, worded as east's.
    for instance in &east {
        instance.db.record(CheckOutcome::new(CheckStatus::Ok, "up"));
    }
    settle("east's recovery", &received, |r| {
        !about(r, "db", "resolved").is_empty()
    })
    .await;
    let resolved = about(&received, "db", "resolved");
    assert_eq!(resolved.len(), 1, "{resolved:#?}");
    assert_eq!(resolved[0]["text"], "db is OK again in east (was OUTAGE)");
    // The speaker tells it once east no longer shares it (one may still be on its way).
    let figures = resolved[0]["fleet"]["figures"].as_str().unwrap();
    assert!(
        figures.starts_with("db recovered in east (")
            && figures.ends_with(" of 3 failing); still failing in west: OUTAGE on 3 of 3"),
        "{figures}"
    );

    // West recovers: its own recovery, once.
    for instance in &west {
        instance.db.record(CheckOutcome::new(CheckStatus::Ok, "up"));
    }
    settle("west's recovery", &received, |r| {
        about(r, "db", "resolved").len() >= 2
    })
    .await;
    let resolved = about(&received, "db", "resolved");
    assert_eq!(resolved.len(), 2, "{resolved:#?}");
    assert_eq!(resolved[1]["text"], "db is OK again in west (was OUTAGE)");
    let figures = resolved[1]["fleet"]["figures"].as_str().unwrap();
    assert!(
        figures.starts_with("db recovered in west (") && figures.ends_with(" of 3 failing)"),
        "{figures}"
    );
    assert_eq!(about(&received, "db", "changed").len(), 2);
}
