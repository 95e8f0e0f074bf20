//! "Mine or shared", per dependency, against real stores: what fails is counted by data
//! center, dependency and level; fleet-aware readiness excuses exactly the failures the data
//! center shares, whatever the others' conditions; counts no store could have made excuse no
//! one.

use std::time::Duration;

use status_core::check::CheckOutcome;
use status_core::{CheckStatus, Dependency, Probes, Registry, Reporter, Urgency};
use status_fleet::{
    DependencyCount, EtcdFleet, Fleet, FleetExcuse, FleetStore, HealthRule, Member, RedisFleet,
    REJECTIONS,
};
use tokio::time::Instant;

use crate::etcd_server::EtcdCluster;
use crate::servers::RedisServer;

/// One instance: its registry with two Required dependencies, `db` and `disk`, reported
/// passively (no hysteresis), its fleet and its probes with fleet-aware readiness.
struct Node {
    _registry: Registry,
    db: Reporter,
    disk: Reporter,
    fleet: Fleet,
    probes: Probes,
}

impl Node {
    fn start(store: impl FleetStore, id: &str, dc: &str) -> Self {
        let registry = Registry::new();
        let (db, disk) = (required(&registry, "db"), required(&registry, "disk"));
        let member = Member {
            instance_id: id.to_owned(),
            datacenter: dc.to_owned(),
            version: "1".to_owned(),
            url: String::new(),
        };
        let fleet = Fleet::start(&registry, store, member, HealthRule::default());
        let probes =
            Probes::new(&registry).excuse(FleetExcuse::new(fleet.clone(), id.to_owned(), dc));
        Self {
            _registry: registry,
            db,
            disk,
            fleet,
            probes,
        }
    }

    fn set(&self, which: &str, status: CheckStatus) {
        let reporter = if which == "db" { &self.db } else { &self.disk };
        reporter.record(CheckOutcome::new(status, "set by the test"));
    }

    /// Readiness, its rule and its first reason.
    fn ready(&self) -> (bool, String, String) {
        let readiness = self.probes.ready(false);
        let rule = readiness
            .rule()
            .map(ToString::to_string)
            .unwrap_or_default();
        let why = match readiness.rule() {
            Some(status_core::ReadinessRule::Fleet(why)) => why.clone(),
            _ => readiness.reasons().join("; "),
        };
        (readiness.ready(), rule, why)
    }
}

async fn until(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !ok() {
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A Required dependency `id` of `registry`, reported passively without hysteresis, OK.
pub(crate) fn required(registry: &Registry, id: &str) -> Reporter {
    let reporter = registry
        .add_passive(
            Dependency::passive(id)
                .urgency(Urgency::Required)
                .failures_before_outage(1)
                .successes_before_recovery(1)
                .build_info()
                .unwrap(),
        )
        .unwrap();
    reporter.record(CheckOutcome::new(CheckStatus::Ok, "up"));
    reporter
}

/// Four instances of `east` and one of `west`: a failure on three of east's is shared there
/// (each of the three stays ready, saying so with the counts), one on a single instance is its
/// own (not ready), even while the others are OUTAGE for something else.
async fn mine_or_shared<S: FleetStore>(store: impl Fn() -> S, ttl: Duration) -> Vec<Node> {
    let east: Vec<Node> = (1..=4)
        .map(|i| Node::start(store(), &format!("e{i}"), "east"))
        .collect();
    let west = Node::start(store(), "w1", "west");
    let within = ttl * 10;
    until("every instance seen", within, || {
        east.iter().all(|n| {
            n.fleet
                .view()
                .datacenter("east")
                .is_some_and(|d| d.fresh == 4)
        })
    })
    .await;
    for node in &east[..3] {
        node.set("db", CheckStatus::Outage);
    }
    // Every instance's view, not one's: each reads the store on its own beat, and the one
    // read below may lag the first to see it.
    until("db counted as failing on 3 of east", within, || {
        east.iter().all(|n| {
            let view = n.fleet.view();
            view.datacenter("east").is_some_and(|d| {
                d.counted
                    == [DependencyCount {
                        dependency: "db".into(),
                        level: CheckStatus::Outage,
                        instances: 3,
                    }]
            }) && !view.stale
        })
    })
    .await;
    // What fails across east, said as an operator reads it.
    let view = east[3].fleet.view();
    let east_view = view.datacenter("east").unwrap();
    assert_eq!(
        east_view.failing[0].to_string(),
        "db OUTAGE on 3 of 4 in east, shared"
    );
    assert!(view.datacenter("west").unwrap().failing.is_empty());
    // Each of the three: ready by the fleet's rule, which names the dependency and the count.
    for node in &east[..3] {
        until("ready by the fleet's rule", within, || node.ready().0).await;
        let (_, rule, why) = node.ready();
        assert_eq!(rule, "fleet");
        assert!(
            why.contains("db OUTAGE is shared: 2 of the 3 other instances of east fail it too"),
            "{why}"
        );
    }
    // The fourth fails its disk alone, while most of east is OUTAGE (for db): its own.
    east[3].set("disk", CheckStatus::Outage);
    until("e4's disk published", within, || {
        east[0]
            .fleet
            .view()
            .datacenter("east")
            .is_some_and(|d| d.failing_at_least("disk", CheckStatus::Outage) == 1)
    })
    .await;
    let (ready, rule, why) = east[3].ready();
    assert!(!ready, "a failure of its own: {why}");
    assert_eq!(rule, "instance");
    assert!(why.contains("disk is OUTAGE"), "{why}");
    // One of the three fails its disk too: a failure of its own beside the shared one.
    east[0].set("disk", CheckStatus::Outage);
    until("e1 not ready", within, || !east[0].ready().0).await;
    assert_eq!(east[0].ready().1, "instance");
    // West, alone in its data center, is never excused: no quorum of one.
    west.set("db", CheckStatus::Outage);
    until("w1 published", within, || {
        west.fleet
            .view()
            .datacenter("west")
            .is_some_and(|d| d.failing_at_least("db", CheckStatus::Outage) == 1)
    })
    .await;
    assert!(!west.ready().0);
    // Recovery: the excuse ends with the failure; the instance is ready by its own rule.
    for node in &east[..3] {
        node.set("db", CheckStatus::Ok);
    }
    east[0].set("disk", CheckStatus::Ok);
    until("e2 ready by its own rule", within, || {
        east[1].ready() == (true, "instance".into(), String::new())
    })
    .await;
    drop(west);
    east
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_excuses_exactly_what_east_shares_in_redis() {
    let redis = RedisServer::start();
    let url = redis.url();
    let ttl = Duration::from_millis(600);
    let east = mine_or_shared(|| RedisFleet::new(&url, "shared", ttl).unwrap(), ttl).await;

    // Forged: a count no beat made (twenty instances failing e4's disk), read out at the
    // next upkeep. Past the fresh instances, the counts are not trusted: dropped and
    // counted, and e4's own disk failure (forged as everyone's) is never excused.
    let mut c = redis::Client::open(url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let now: (u64, u64) = redis::cmd("TIME").query_async(&mut c).await.unwrap();
    let ms = now.0 * 1000 + now.1 / 1000 + 100;
    let _: () = redis::cmd("HINCRBY")
        .arg("{shared}:v2:fcount")
        .arg("east\tdisk\t3")
        .arg(20)
        .query_async(&mut c)
        .await
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg("{shared}:v2:dcs")
        .arg("\0failing_moved")
        .arg(ms)
        .query_async(&mut c)
        .await
        .unwrap();
    let forged = REJECTIONS
        .iter()
        .position(|r| *r == "forged_count")
        .unwrap();
    until("forged rows counted", ttl * 10, || {
        east[3].fleet.stats().rejected[forged] > 0
    })
    .await;
    assert!(!east[3].ready().0, "a forged count never excuses");
    let view = east[3].fleet.view();
    assert_eq!(
        view.datacenter("east")
            .unwrap()
            .failing_at_least("disk", CheckStatus::Minor),
        0,
        "{view:?}"
    );
    // A member no beat could have written (scored long ago) is retired by the next upkeep.
    let _: () = redis::cmd("ZADD")
        .arg("{shared}:v2:fail")
        .arg(0)
        .arg("garbage")
        .query_async(&mut c)
        .await
        .unwrap();
    let mut gone = false;
    for _ in 0..100 {
        let score: Option<f64> = redis::cmd("ZSCORE")
            .arg("{shared}:v2:fail")
            .arg("garbage")
            .query_async(&mut c)
            .await
            .unwrap();
        if score.is_none() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone, "garbage in the failing set is retired");
    drop(east);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_excuses_exactly_what_east_shares_in_etcd() {
    let etcd = EtcdCluster::start(1);
    let urls = etcd.urls();
    let ttl = Duration::from_secs(2);
    let east = mine_or_shared(|| EtcdFleet::new(&urls, "shared", ttl).unwrap(), ttl).await;
    drop(east);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_in_trouble_are_listed_first_in_redis() {
    let redis = RedisServer::start();
    let store = RedisFleet::new(&redis.url(), "worst", Duration::from_secs(3)).unwrap();
    let conditions = [
        CheckStatus::Ok,
        CheckStatus::Outage,
        CheckStatus::Minor,
        CheckStatus::Ok,
        CheckStatus::Major,
        CheckStatus::Outage,
        CheckStatus::Ok,
    ];
    for (i, condition) in conditions.iter().enumerate() {
        let me = status_fleet::InstanceSummary::new(
            format!("e{i}"),
            "east",
            *condition,
            Vec::new(),
            "1",
        );
        store.beat(&me).await.unwrap();
    }
    let other =
        status_fleet::InstanceSummary::new("w0", "west", CheckStatus::Outage, Vec::new(), "1");
    store.beat(&other).await.unwrap();
    // East, the worst first, three at a time: every instance once, in order of condition.
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .instances(&status_fleet::InstanceQuery {
                datacenter: Some("east".into()),
                cursor: cursor.clone(),
                limit: 3,
                worst_first: true,
            })
            .await
            .unwrap();
        seen.extend(
            page.instances
                .iter()
                .map(|i| (i.summary.condition, i.summary.instance_id.clone())),
        );
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let levels: Vec<CheckStatus> = seen.iter().map(|(c, _)| *c).collect();
    let mut sorted = levels.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(levels, sorted, "{seen:?}");
    assert_eq!(seen.len(), conditions.len(), "{seen:?}");
    assert!(seen.iter().all(|(_, id)| id.starts_with('e')), "{seen:?}");
    // A cursor of another data center is refused, worst first as in order.
    let bad = store
        .instances(&status_fleet::InstanceQuery {
            datacenter: Some("west".into()),
            cursor: cursor.or(Some("6561737400".into())),
            limit: 3,
            worst_first: true,
        })
        .await;
    assert!(bad.unwrap_err().is_invalid());
}
