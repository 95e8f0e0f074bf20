//! The fleet through a real store, `redis-server` and etcd: several registries in two data
//! centers, the same verdicts whatever the store.

use std::time::Duration;

use status_core::{check, CheckStatus, Dependency, HoldSource, Registry, Urgency};
use status_fleet::{
    EtcdFleet, Fleet, FleetStore, FleetView, HealthRule, InstanceQuery, Member, RedisFleet,
};
use tokio::time::Instant;

use crate::etcd_server::EtcdCluster;
use crate::servers::{RedisServer, Restartable};

impl Restartable for EtcdCluster {
    fn stop(&mut self) {
        self.stop_all();
    }
    fn restart(&mut self) {
        self.restart_all();
        self.wait_healthy();
    }
}

/// An instance of `dc` with one Required dependency whose status `status` sets.
struct Instance {
    registry: Registry,
    fleet: Fleet,
    status: std::sync::Arc<std::sync::Mutex<CheckStatus>>,
}

async fn instance(store: impl FleetStore, id: &str, dc: &str) -> Instance {
    let registry = Registry::new();
    let status = std::sync::Arc::new(std::sync::Mutex::new(CheckStatus::Ok));
    let read = std::sync::Arc::clone(&status);
    registry
        .add(
            Dependency::builder(
                "db",
                check::tiered(move || {
                    let s = *read.lock().unwrap();
                    async move { (s, "db") }
                }),
            )
            .urgency(Urgency::Required)
            .period(Duration::from_millis(50))
            .build()
            .unwrap(),
        )
        .unwrap();
    registry.refresh_all().await;
    let member = Member {
        instance_id: id.to_owned(),
        datacenter: dc.to_owned(),
        version: "1.0".to_owned(),
        url: String::new(),
    };
    let fleet = Fleet::start(&registry, store, member, HealthRule::default());
    Instance {
        registry,
        fleet,
        status,
    }
}

impl Instance {
    async fn set(&self, status: CheckStatus) {
        *self.status.lock().unwrap() = status;
        // Past the hysteresis of three failures.
        for _ in 0..3 {
            self.registry.refresh_all().await;
        }
    }
}

/// Polls `fleet`'s view until `ok` holds, for at most 10 s.
async fn until(
    fleet: &Fleet,
    what: &str,
    ok: impl Fn(&FleetView) -> bool,
) -> std::sync::Arc<FleetView> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let view = fleet.view();
        if ok(&view) {
            return view;
        }
        assert!(Instant::now() < deadline, "{what}: {view:#?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn healthy(view: &FleetView, dc: &str) -> Option<bool> {
    view.datacenter(dc).map(|d| d.healthy)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datacenters_degrade_fail_open_and_recover_in_redis() {
    let mut redis = RedisServer::start();
    let url = redis.url();
    let ttl = Duration::from_millis(600);
    let store = || RedisFleet::new(&url, "fleet-test", ttl).unwrap();
    degrade_fail_open_and_recover(&mut redis, store, ttl, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datacenters_degrade_fail_open_and_recover_in_etcd() {
    let mut etcd = EtcdCluster::start(1);
    let urls = etcd.urls();
    // etcd's shortest lease is about 2 s.
    let ttl = Duration::from_secs(2);
    let store = || EtcdFleet::new(&urls, "fleet-test", ttl).unwrap();
    degrade_fail_open_and_recover(&mut etcd, store, ttl, false).await;
}

/// Two data centers of two instances each: one degrades, then both (every one fails open),
/// they recover, an instance stops publishing, the store is lost (stale, then failing open
/// after three TTLs, the probes never waiting) and comes back. `lists_stale`: whether the
/// store still lists an instance that stopped (Redis does, marked stale; in etcd its key
/// went with its lease).
async fn degrade_fail_open_and_recover<S: FleetStore>(
    server: &mut dyn Restartable,
    store: impl Fn() -> S,
    ttl: Duration,
    lists_stale: bool,
) {
    let east = [
        instance(store(), "e1", "east").await,
        instance(store(), "e2", "east").await,
    ];
    let west = [
        instance(store(), "w1", "west").await,
        instance(store(), "w2", "west").await,
    ];
    let probe = &east[0].fleet;
    until(probe, "all healthy", |v| {
        v.datacenters.len() == 2
            && healthy(v, "east") == Some(true)
            && healthy(v, "west") == Some(true)
    })
    .await;

    // West degrades: both its instances OUTAGE.
    for i in &west {
        i.set(CheckStatus::Outage).await;
    }
    let view = until(probe, "west unhealthy", |v| {
        healthy(v, "west") == Some(false)
    })
    .await;
    assert!(!view.fail_open);
    assert!(!view.datacenter("west").unwrap().answers_healthy());
    assert!(view.datacenter("east").unwrap().answers_healthy());

    // East too (one out of rotation, one OUTAGE): every data center fails open.
    east[0]
        .registry
        .hold(HoldSource::Operator, "deploy", None, None)
        .unwrap();
    east[1].set(CheckStatus::Outage).await;
    let view = until(probe, "fail open", |v| v.fail_open).await;
    assert!(view
        .datacenters
        .iter()
        .all(|d| !d.healthy && d.answers_healthy()));

    // Recovery.
    east[0].registry.release(HoldSource::Operator);
    for i in east.iter().chain(&west) {
        i.set(CheckStatus::Ok).await;
    }
    until(probe, "recovered", |v| {
        !v.fail_open && healthy(v, "east") == Some(true) && healthy(v, "west") == Some(true)
    })
    .await;

    // An instance that stops publishing turns stale once its TTL passes; the instances are
    // listed from the store, a page at a time.
    let [w1, w2] = west;
    drop(w1);
    let view = until(probe, "w1 gone", |v| {
        v.datacenter("west").is_some_and(|d| d.fresh == 1)
    })
    .await;
    assert_eq!(view.datacenter("west").unwrap().serving, 1);
    let mut listed = Vec::new();
    let mut cursor = None;
    loop {
        let page = probe
            .instances(InstanceQuery {
                datacenter: Some("west".into()),
                cursor: cursor.clone(),
                limit: 1,
                worst_first: false,
            })
            .await
            .unwrap();
        assert!(page.instances.len() <= 1);
        listed.extend(page.instances);
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(
        listed
            .iter()
            .any(|i| i.summary.instance_id == "w1" && i.stale),
        lists_stale,
        "{listed:?}"
    );
    assert!(listed
        .iter()
        .all(|i| i.summary.instance_id != "w1" || i.stale));
    assert!(listed
        .iter()
        .any(|i| i.summary.instance_id == "w2" && !i.stale));
    assert!(listed.iter().all(|i| i.summary.datacenter == "west"));

    // The store killed: the view goes stale, keeps the last answer, then fails open; the
    // probes never wait on it.
    server.stop();
    let started = Instant::now();
    let view = until(probe, "stale", |v| v.stale).await;
    assert!(
        healthy(&view, "east") == Some(true),
        "the last known answer"
    );
    for _ in 0..20 {
        let asked = Instant::now();
        let _ = w2.registry.readiness();
        let _ = w2.registry.report();
        assert!(
            asked.elapsed() < Duration::from_millis(20),
            "a probe waited on the store"
        );
    }
    until(probe, "fail open without news", |v| v.fail_open && v.stale).await;
    assert!(
        started.elapsed() >= ttl * 2,
        "not before three TTLs without news"
    );
    server.restart();
    until(probe, "fresh again", |v| !v.stale && !v.fail_open).await;
}
