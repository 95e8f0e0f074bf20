//! The fleet and the cull budgets in a real etcd (Debian's `etcd-server`, installed by
//! `scripts/test`): one member for the budgets' own rules, three for failures (the leader
//! lost, a minority lost, quorum lost, a watch cut past a compaction). Real time: leases and
//! elections are the cluster's.

#[path = "../../status-fleet/tests/stores/etcd_server.rs"]
mod etcd_server;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use status_core::{CheckStatus, Registry};
use status_fleet::{
    DatacenterCounts, EtcdFleet, Fleet, FleetStore, FleetView, HealthRule, InstanceSummary, Member,
};
use status_traffic::cull::{Budget, BudgetWindow, EtcdBudget, Grant};

use etcd_server::EtcdCluster;

/// `n` instances' budgets under `key`, vouched for (the cluster is new: it forgot nothing).
async fn budgets(
    urls: &str,
    key: &str,
    n: usize,
    capacity: u64,
    window: Duration,
    kind: BudgetWindow,
) -> Vec<Arc<EtcdBudget>> {
    let fleet: Vec<Arc<EtcdBudget>> = (0..n)
        .map(|i| {
            Arc::new(
                EtcdBudget::new(urls, key, capacity, window, kind, format!("i{i}"))
                    .unwrap()
                    .timeout(Duration::from_secs(1)),
            )
        })
        .collect();
    // A member may be down: the next one is asked.
    let mut vouched = fleet[0].vouch().await;
    for _ in 0..3 {
        if vouched.is_ok() {
            break;
        }
        vouched = fleet[0].vouch().await;
    }
    vouched.unwrap();
    fleet
}

/// Every budget asks `asks` times at once; the tokens granted.
async fn tokens(budgets: &[Arc<EtcdBudget>], asks: usize) -> (usize, usize) {
    let mut tasks = Vec::new();
    for budget in budgets {
        let budget = Arc::clone(budget);
        tasks.push(tokio::spawn(async move {
            let (mut granted, mut refused) = (0, 0);
            for _ in 0..asks {
                match budget.take().await {
                    Ok(Grant::Token { .. }) => granted += 1,
                    Ok(Grant::Spent { .. } | Grant::Unknown { .. }) => {}
                    Err(_) => refused += 1,
                }
            }
            (granted, refused)
        }));
    }
    let mut sum = (0, 0);
    for task in tasks {
        let (g, r) = task.await.unwrap();
        sum.0 += g;
        sum.1 += r;
    }
    sum
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_instances_asking_at_once_get_exactly_the_capacity() {
    let etcd = EtcdCluster::start(1);
    let window = Duration::from_secs(60);
    let sliding = budgets(
        &etcd.urls(),
        "contended",
        8,
        3,
        window,
        BudgetWindow::Sliding,
    )
    .await;
    let (granted, refused) = tokens(&sliding, 4).await;
    assert_eq!((granted, refused), (3, 0));
    assert_eq!(
        sliding[0].take().await,
        Ok(Grant::Spent { used: 3 }),
        "the spent window says how many"
    );

    // The fixed window is the cluster's (a lease), not a calendar's: exactly the capacity,
    // whatever the instances' clocks say.
    let fixed = budgets(&etcd.urls(), "contended", 8, 3, window, BudgetWindow::Fixed).await;
    let (granted, refused) = tokens(&fixed, 4).await;
    assert_eq!((granted, refused), (3, 0));
    assert_eq!(fixed[5].take().await, Ok(Grant::Spent { used: 3 }));
    assert!(sliding[0]
        .describe()
        .starts_with("sliding window in etcd (contended at http://127.0.0.1:"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sliding_grant_frees_its_slot_a_window_later_never_sooner() {
    let etcd = EtcdCluster::start(1);
    let window = Duration::from_secs(2);
    let budget = &budgets(&etcd.urls(), "sliding", 1, 1, window, BudgetWindow::Sliding).await[0];
    let granted = Instant::now();
    assert_eq!(budget.take().await, Ok(Grant::Token { used: 1 }));
    loop {
        let answer = budget.take().await.unwrap();
        if let Grant::Token { .. } = answer {
            assert!(
                granted.elapsed() >= window,
                "freed after {:?}",
                granted.elapsed()
            );
            break;
        }
        assert!(granted.elapsed() < Duration::from_secs(10), "never freed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A fixed window begins with the first ask after the last one ended, and its grants all
/// end with it: never sooner than a window after it began, whatever any clock says. A window
/// key written by hand without a lease (it would never end) is healed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_window_is_the_clusters_and_its_grants_end_together() {
    let etcd = EtcdCluster::start(1);
    let window = Duration::from_secs(2);
    let asked = budgets(&etcd.urls(), "fixed", 3, 2, window, BudgetWindow::Fixed).await;
    let begun = Instant::now();
    assert_eq!(asked[0].take().await, Ok(Grant::Token { used: 1 }));
    assert_eq!(asked[1].take().await, Ok(Grant::Token { used: 2 }));
    assert_eq!(asked[2].take().await, Ok(Grant::Spent { used: 2 }));
    loop {
        match asked[2].take().await.unwrap() {
            Grant::Token { used } => {
                assert!(
                    begun.elapsed() >= window,
                    "freed after {:?}",
                    begun.elapsed()
                );
                assert_eq!(used, 1, "both of the last window's grants ended with it");
                break;
            }
            Grant::Spent { .. } | Grant::Unknown { .. } => {
                assert!(begun.elapsed() < Duration::from_secs(10), "never freed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    etcd.ctl(&["put", "handmade/fixed/window", "by hand"])
        .unwrap();
    let healed = &budgets(&etcd.urls(), "handmade", 1, 1, window, BudgetWindow::Fixed).await[0];
    assert_eq!(healed.take().await, Ok(Grant::Token { used: 1 }));
    assert_eq!(healed.healed(), 1);
}

/// One ask of each budget: the tokens granted.
async fn grants(fleet: &[EtcdBudget]) -> usize {
    let mut n = 0;
    for budget in fleet {
        if let Ok(Grant::Token { .. }) = budget.take().await {
            n += 1;
        }
    }
    n
}

/// A budget the cluster does not know (new, or its data lost: every key of it gone) counts as
/// spent for a window from when it learnt it, so that the grants it forgot still count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_the_cluster_does_not_know_grants_nothing_for_a_window() {
    let etcd = EtcdCluster::start(1);
    let window = Duration::from_secs(3);
    for kind in [BudgetWindow::Fixed, BudgetWindow::Sliding] {
        let key = format!("forgot-{}", kind.name());
        let fleet: Vec<EtcdBudget> = (0..3)
            .map(|i| EtcdBudget::new(&etcd.urls(), &key, 2, window, kind, format!("i{i}")).unwrap())
            .collect();
        // New: every instance is refused for a window, whoever asks first.
        let learnt = Instant::now();
        for budget in &fleet {
            let answer = budget.take().await;
            assert!(matches!(answer, Ok(Grant::Unknown { .. })), "{answer:?}");
        }
        let mut first = None;
        while first.is_none() {
            if grants(&fleet).await > 0 {
                first = Some(learnt.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let first = first.unwrap();
        assert!(
            first >= window - Duration::from_millis(200),
            "{kind:?}: granted after {first:?}"
        );
        assert!(first < window * 3, "{kind:?}: granted after {first:?}");

        // Its data lost: every key of the budget gone. A window counted spent again.
        etcd.ctl(&["del", "--prefix", &format!("{key}/")]).unwrap();
        let lost = Instant::now();
        let mut after = 0;
        while lost.elapsed() < window - Duration::from_millis(500) {
            after += grants(&fleet).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(
            after, 0,
            "{kind:?}: granted by a cluster that forgot its grants"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_without_a_lease_is_healed_and_strangers_are_ignored() {
    let etcd = EtcdCluster::start(1);
    etcd.ctl(&["put", "garbage/sliding/0", "by hand"]).unwrap();
    etcd.ctl(&["put", "garbage/sliding/not-a-slot", "x"])
        .unwrap();
    etcd.ctl(&["put", "garbage/sliding/7", "past the capacity"])
        .unwrap();
    let budget = &budgets(
        &etcd.urls(),
        "garbage",
        1,
        1,
        Duration::from_secs(60),
        BudgetWindow::Sliding,
    )
    .await[0];
    assert_eq!(budget.take().await, Ok(Grant::Token { used: 1 }));
    assert_eq!(budget.healed(), 1);
    assert_eq!(budget.take().await, Ok(Grant::Spent { used: 1 }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_etcd_stopped_or_never_there_is_a_refusal_in_time() {
    let mut etcd = EtcdCluster::start(1);
    let budget = &budgets(
        &etcd.urls(),
        "lost",
        1,
        5,
        Duration::from_secs(60),
        BudgetWindow::Sliding,
    )
    .await[0];
    assert!(matches!(budget.take().await, Ok(Grant::Token { .. })));
    etcd.stop(0);
    let asked = Instant::now();
    assert!(budget.take().await.is_err(), "no token without etcd");
    assert!(
        asked.elapsed() < Duration::from_millis(1500),
        "{:?}",
        asked.elapsed()
    );
    let nowhere = EtcdBudget::new(
        "http://127.0.0.1:9",
        "x",
        1,
        Duration::from_secs(1),
        BudgetWindow::Fixed,
        "i",
    )
    .unwrap();
    assert!(nowhere.take().await.is_err());
}

// Failures of a three-member cluster.

/// Three-member clusters one at a time: their elections and leases are real time, and a
/// two-core machine running several at once would test its scheduler, not the code.
static THREE_MEMBERS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const TTL: Duration = Duration::from_secs(2);

fn summary(id: &str, dc: &str) -> InstanceSummary {
    InstanceSummary::new(id, dc, CheckStatus::Ok, Vec::new(), "1")
}

fn fresh(counts: &[DatacenterCounts]) -> usize {
    counts.iter().map(|c| c.conditions.total()).sum()
}

/// Beats `store` as `me` until it answers, for at most `within`; the counts it answers.
async fn beat_until_ok(
    store: &EtcdFleet,
    me: &InstanceSummary,
    within: Duration,
) -> Result<Vec<DatacenterCounts>, String> {
    let started = Instant::now();
    loop {
        match tokio::time::timeout(TTL / 3, store.beat(me)).await {
            Ok(Ok(beat)) => return Ok(beat.datacenters),
            Ok(Err(e)) if started.elapsed() > within => return Err(e.to_string()),
            Err(_) if started.elapsed() > within => return Err("timed out".into()),
            _ => {
                store.reset().await;
                tokio::time::sleep(TTL / 6).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_lost_mid_run_grants_nothing_twice_and_views_resume_within_two_ttls() {
    let _one_at_a_time = THREE_MEMBERS.lock().await;
    let mut etcd = EtcdCluster::start(3);
    let urls = etcd.urls();
    let stores: Arc<Vec<EtcdFleet>> = Arc::new(
        (0..3)
            .map(|_| EtcdFleet::new(&urls, "fleet", TTL).unwrap())
            .collect(),
    );
    let me: Vec<InstanceSummary> = (0..3).map(|i| summary(&format!("a{i}"), "east")).collect();
    for (store, me) in stores.iter().zip(&me) {
        beat_until_ok(store, me, TTL * 5).await.unwrap();
    }
    // The watch delivers the others' first writes as it can (a loaded machine runs several
    // clusters at once).
    let deadline = Instant::now() + TTL * 5;
    loop {
        let counts = beat_until_ok(&stores[0], &me[0], TTL).await.unwrap();
        if fresh(&counts) == 3 {
            break;
        }
        for (store, me) in stores.iter().zip(&me).skip(1) {
            beat_until_ok(store, me, TTL).await.unwrap();
        }
        assert!(Instant::now() < deadline, "{counts:?}");
        tokio::time::sleep(TTL / 6).await;
    }
    // a0 and a1 beat on throughout, as their Fleets would; a2 stops with the leader.
    let beating = {
        let (stores, me) = (Arc::clone(&stores), me.clone());
        tokio::spawn(async move {
            loop {
                for i in 0..2 {
                    if tokio::time::timeout(TTL / 3, stores[i].beat(&me[i]))
                        .await
                        .is_err()
                    {
                        stores[i].reset().await;
                    }
                }
                tokio::time::sleep(TTL / 6).await;
            }
        })
    };

    // Budgets ask throughout, from six instances, while the leader is killed.
    let capacity = 40;
    let budgets = budgets(
        &urls,
        "failover",
        6,
        capacity,
        Duration::from_secs(120),
        BudgetWindow::Sliding,
    )
    .await;
    let asking = {
        let budgets = budgets.clone();
        tokio::spawn(async move {
            let (mut granted, mut refused) = (0, 0);
            let until = Instant::now() + Duration::from_secs(6);
            while Instant::now() < until {
                let (g, r) = tokens(&budgets, 1).await;
                granted += g;
                refused += r;
                tokio::time::sleep(Duration::from_millis(400)).await;
            }
            (granted, refused)
        })
    };
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let leader = etcd.leader().expect("a leader");
    etcd.stop(leader);
    let stopped = Instant::now();
    // a2 stops beating with the leader: its lease must end, and it must leave every view.
    // The two others beat on, each view back within two TTLs.
    let resumed = |i: usize| {
        let (store, me) = (&stores[i], &me[i]);
        async move {
            beat_until_ok(store, me, TTL * 2)
                .await
                .expect("the view resumes within two TTLs");
            stopped.elapsed()
        }
    };
    let (first, second) = tokio::join!(resumed(0), resumed(1));
    assert!(
        first.max(second) <= TTL * 2 + TTL / 6,
        "{first:?}, {second:?}"
    );
    let (mut granted, refused) = asking.await.unwrap();
    assert!(
        granted > 0 && refused > 0,
        "grants before and after, refusals during: {granted}, {refused}"
    );
    let used = loop {
        match budgets[0].take().await {
            Ok(Grant::Token { .. }) => granted += 1,
            Ok(Grant::Spent { used }) => break used,
            Ok(Grant::Unknown { left }) => panic!("the cluster forgot the budget ({left:?})"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    assert_eq!(used, capacity, "the store counts every slot once");
    assert!(
        granted as u64 <= capacity,
        "granted {granted} of {capacity} across the failover"
    );
    // A grant whose answer was lost in the failover is spent, never free.
    assert!(
        granted + refused >= capacity as usize,
        "{granted} + {refused}"
    );

    // a2's lease (extended by the new leader, never shortened) ends: its key goes, and both
    // views drop it at their next beat, for good.
    let deadline = Instant::now() + TTL * 6;
    loop {
        let first = beat_until_ok(&stores[0], &me[0], TTL).await.unwrap();
        let second = beat_until_ok(&stores[1], &me[1], TTL).await.unwrap();
        if fresh(&first) == 2 && fresh(&second) == 2 {
            break;
        }
        assert!(
            fresh(&first) >= 2 && fresh(&second) >= 2,
            "{first:?} {second:?}"
        );
        assert!(Instant::now() < deadline, "a2 never expired");
        tokio::time::sleep(TTL / 6).await;
    }
    for _ in 0..6 {
        for i in 0..2 {
            let counts = beat_until_ok(&stores[i], &me[i], TTL).await.unwrap();
            assert_eq!(fresh(&counts), 2, "a2 came back: {counts:?}");
        }
        tokio::time::sleep(TTL / 6).await;
    }
    beating.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minority_lost_changes_nothing() {
    let _one_at_a_time = THREE_MEMBERS.lock().await;
    let mut etcd = EtcdCluster::start(3);
    let urls = etcd.urls();
    let store = EtcdFleet::new(&urls, "fleet", TTL).unwrap();
    let me = summary("a0", "east");
    beat_until_ok(&store, &me, TTL * 5).await.unwrap();
    let follower = (0..3).find(|i| Some(*i) != etcd.leader()).unwrap();
    etcd.stop(follower);
    let budget = &budgets(
        &urls,
        "minority",
        1,
        2,
        Duration::from_secs(60),
        BudgetWindow::Sliding,
    )
    .await[0];
    let mut failed = 0;
    for _ in 0..10 {
        if tokio::time::timeout(TTL / 3, store.beat(&me))
            .await
            .map_or(true, |b| b.is_err())
        {
            failed += 1;
            store.reset().await;
        }
        tokio::time::sleep(TTL / 6).await;
    }
    // A call may go to the dead member before the client marks it down: at most one.
    assert!(
        failed <= 1,
        "{failed} beats of 10 failed with a minority lost"
    );
    let mut granted = 0;
    for _ in 0..3 {
        if let Ok(Grant::Token { .. }) = budget.take().await {
            granted += 1;
        }
    }
    assert_eq!(granted, 2);
}

/// Polls `fleet`'s view until `ok` holds, for at most `within`; when it did.
async fn until(
    fleet: &Fleet,
    what: &str,
    ok: &dyn Fn(&FleetView) -> bool,
    within: Duration,
) -> Instant {
    let deadline = Instant::now() + within;
    loop {
        let view = fleet.view();
        if ok(&view) {
            return Instant::now();
        }
        assert!(Instant::now() < deadline, "{what}: {view:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quorum_lost_views_go_stale_then_fail_open_budgets_refuse_and_all_resumes() {
    let _one_at_a_time = THREE_MEMBERS.lock().await;
    let mut etcd = EtcdCluster::start(3);
    let urls = etcd.urls();
    let registry = Registry::new();
    let fleet = Fleet::start(
        &registry,
        EtcdFleet::new(&urls, "fleet", TTL).unwrap(),
        Member {
            instance_id: "a0".into(),
            datacenter: "east".into(),
            version: "1".into(),
            url: String::new(),
        },
        HealthRule::default(),
    );
    until(
        &fleet,
        "fresh",
        &|v| !v.stale && v.datacenter("east").is_some_and(|d| d.healthy),
        TTL * 5,
    )
    .await;
    let budget = &budgets(
        &urls,
        "quorum",
        1,
        5,
        Duration::from_secs(60),
        BudgetWindow::Sliding,
    )
    .await[0];
    assert!(matches!(budget.take().await, Ok(Grant::Token { .. })));

    let leader = etcd.leader().unwrap();
    let others: Vec<usize> = (0..3).filter(|i| *i != leader).collect();
    etcd.stop(others[0]);
    etcd.stop(leader);
    let lost = Instant::now();
    let stale = until(&fleet, "stale", &|v| v.stale && !v.fail_open, TTL * 3).await;
    for _ in 0..3 {
        assert!(budget.take().await.is_err(), "no token without quorum");
    }
    let open = until(&fleet, "fail open", &|v| v.stale && v.fail_open, TTL * 6).await;
    assert!(
        open.duration_since(lost) >= TTL * 3 - TTL / 3,
        "failed open after {:?}",
        open.duration_since(lost)
    );
    assert!(stale <= open);
    assert_eq!(
        registry.condition(),
        CheckStatus::Ok,
        "the instance's own probes are untouched"
    );

    etcd.restart(leader);
    etcd.restart(others[0]);
    etcd.wait_healthy();
    until(
        &fleet,
        "fresh again",
        &|v| !v.stale && !v.fail_open,
        TTL * 10,
    )
    .await;
    let mut granted = false;
    for _ in 0..20 {
        if let Ok(Grant::Token { .. }) = budget.take().await {
            granted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(granted, "the budget grants again with quorum back");
}

/// A TCP proxy in front of an etcd member, to cut a client off it (fault injection): cut, it
/// drops every connection and refuses new ones until opened again.
struct Proxy {
    port: u16,
    open: Arc<std::sync::atomic::AtomicBool>,
    links: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    accepting: tokio::task::JoinHandle<()>,
}

impl Proxy {
    async fn start(target: String) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let open = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let links: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let accepting = tokio::spawn({
            let (open, links) = (Arc::clone(&open), Arc::clone(&links));
            async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    if !open.load(std::sync::atomic::Ordering::SeqCst) {
                        continue;
                    }
                    let target = target.clone();
                    links.lock().unwrap().push(tokio::spawn(async move {
                        if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    }));
                }
            }
        });
        Self {
            port,
            open,
            links,
            accepting,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn cut(&self) {
        self.open.store(false, std::sync::atomic::Ordering::SeqCst);
        for link in self.links.lock().unwrap().drain(..) {
            link.abort();
        }
    }

    fn reopen(&self) {
        self.open.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
        self.accepting.abort();
    }
}

/// What each writer of [`beat_in_background`] beats as: `None`, it has stopped.
type States = Arc<Mutex<Vec<Option<InstanceSummary>>>>;

/// A writer for each of `states`, straight to `etcd`, beating what its state says every
/// quarter of the TTL until the task is aborted.
fn beat_in_background(etcd: &EtcdCluster, states: &States) -> tokio::task::JoinHandle<()> {
    let writers: Vec<EtcdFleet> = (0..states.lock().unwrap().len())
        .map(|_| EtcdFleet::new(&etcd.urls(), "fleet", TTL).unwrap())
        .collect();
    let states = Arc::clone(states);
    tokio::spawn(async move {
        loop {
            let now = states.lock().unwrap().clone();
            for (writer, me) in writers.iter().zip(&now) {
                let Some(me) = me else { continue };
                if tokio::time::timeout(TTL / 3, writer.beat(me))
                    .await
                    .is_err()
                {
                    writer.reset().await;
                }
            }
            tokio::time::sleep(TTL / 4).await;
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_cut_past_a_compaction_reads_again_and_matches_a_full_read() {
    let etcd = EtcdCluster::start(1);
    // The watcher reaches etcd through a proxy that the test cuts; the writers directly, and
    // they keep beating.
    let proxy = Proxy::start(etcd.url(0).trim_start_matches("http://").to_owned()).await;
    let watcher = EtcdFleet::new(&proxy.url(), "fleet", TTL).unwrap();
    let me = summary("w", "east");
    beat_until_ok(&watcher, &me, TTL * 5).await.unwrap();
    let states: States = Arc::new(Mutex::new(
        (0..4)
            .map(|i| Some(summary(&format!("x{i}"), "west")))
            .collect(),
    ));
    let beating = beat_in_background(&etcd, &states);
    let deadline = Instant::now() + TTL * 5;
    while beat_until_ok(&watcher, &me, TTL).await.map(|c| fresh(&c)) != Ok(5) {
        assert!(Instant::now() < deadline, "the writers never showed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let reads = watcher.resyncs();

    proxy.cut();
    // Meanwhile: one instance fails, one moves to another data center, and the history is
    // compacted past the watcher's revision.
    {
        let mut states = states.lock().unwrap();
        states[0].as_mut().unwrap().condition = CheckStatus::Outage;
        states[1] = Some(summary("x1", "north"));
    }
    tokio::time::sleep(TTL).await;
    let status = etcd.ctl(&["endpoint", "status", "-w", "fields"]).unwrap();
    let revision = status
        .lines()
        .find(|l| l.starts_with("\"Revision\""))
        .and_then(|l| l.split(':').nth(1))
        .unwrap()
        .trim()
        .to_owned();
    etcd.ctl(&["compact", &revision]).expect("compacted");
    assert!(
        watcher.beat(&me).await.is_err(),
        "cut off, the watcher's beat fails"
    );
    proxy.reopen();

    let deadline = Instant::now() + TTL * 10;
    loop {
        if let Ok(counts) = beat_until_ok(&watcher, &me, TTL).await {
            if watcher.resyncs() > reads {
                // A new store's full read (as the watcher itself: the same key, the same
                // summary), against the watcher's counts.
                let full = EtcdFleet::new(&etcd.urls(), "fleet", TTL).unwrap();
                let read = beat_until_ok(&full, &me, TTL * 3).await.unwrap();
                // The two reads are moments apart: a record that ages past the TTL between
                // them (x1's last one in east) is counted by the first only. Read both again
                // until they agree (the deadline below says if they never do).
                if counts != read {
                    assert!(
                        Instant::now() < deadline,
                        "the watcher's counts never matched a full read: {counts:?} vs {read:?}"
                    );
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
                let west = counts.iter().find(|c| c.datacenter == "west").unwrap();
                assert_eq!(
                    (west.conditions.ok, west.conditions.outage, west.serving),
                    (2, 1, 2),
                    "{counts:?}"
                );
                assert_eq!(
                    counts
                        .iter()
                        .find(|c| c.datacenter == "north")
                        .map(|c| c.conditions.ok),
                    Some(1)
                );
                beating.abort();
                return;
            }
        }
        assert!(Instant::now() < deadline, "the watcher never read again");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A watch cut for longer than a TTL is read again in full: no answer after it holds the
/// counts from before the cut. (A resumed watch's first answer, its creation, comes before
/// the events it replays, and said "caught up" too early.) Found by `scripts/partition`: a
/// view fresh just after a partition healed, counting an instance gone for five seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_cut_for_longer_than_a_ttl_never_answers_the_counts_from_before() {
    let etcd = EtcdCluster::start(1);
    let proxy = Proxy::start(etcd.url(0).trim_start_matches("http://").to_owned()).await;
    let watcher = EtcdFleet::new(&proxy.url(), "fleet", TTL).unwrap();
    let me = summary("w", "east");
    beat_until_ok(&watcher, &me, TTL * 5).await.unwrap();
    // Two instances in west, beating directly; one leaves while the watcher is cut, the
    // other fails.
    let states: States = Arc::new(Mutex::new(vec![
        Some(summary("leaves", "west")),
        Some(summary("fails", "west")),
    ]));
    let beating = beat_in_background(&etcd, &states);
    let deadline = Instant::now() + TTL * 5;
    while beat_until_ok(&watcher, &me, TTL).await.map(|c| fresh(&c)) != Ok(3) {
        assert!(Instant::now() < deadline, "the writers never showed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    proxy.cut();
    {
        let mut states = states.lock().unwrap();
        states[0] = None;
        states[1].as_mut().unwrap().condition = CheckStatus::Outage;
    }
    // The one that left: its lease (the TTL) ends, and etcd's check of leases runs.
    tokio::time::sleep(TTL * 3).await;
    proxy.reopen();

    // From the first answer on, west is one instance, failing.
    let mut answers = 0;
    let deadline = Instant::now() + TTL * 10;
    while answers < 5 {
        match watcher.beat(&me).await {
            Ok(beat) => {
                let west = beat.datacenters.iter().find(|c| c.datacenter == "west");
                assert_eq!(
                    west.map(|w| (w.conditions.total(), w.conditions.outage)),
                    Some((1, 1)),
                    "answer {answers} after the cut: {:?}",
                    beat.datacenters
                );
                answers += 1;
            }
            Err(_) => watcher.reset().await,
        }
        assert!(
            Instant::now() < deadline,
            "the watcher never answered again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    beating.abort();
}

/// A registry of `dc` with one Required dependency whose status the returned cell sets.
async fn registry_with_db() -> (Registry, Arc<Mutex<CheckStatus>>) {
    let registry = Registry::new();
    let status = Arc::new(Mutex::new(CheckStatus::Ok));
    let read = Arc::clone(&status);
    registry
        .add(
            status_core::Dependency::builder(
                "db",
                status_core::check::tiered(move || {
                    let s = *read.lock().unwrap();
                    async move { (s, "db") }
                }),
            )
            .urgency(status_core::Urgency::Required)
            .period(Duration::from_secs(3600))
            .build()
            .unwrap(),
        )
        .unwrap();
    registry.refresh_all().await;
    (registry, status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_reaches_the_other_instances_views_between_their_beats() {
    let etcd = EtcdCluster::start(1);
    // A long TTL: beats every 10 s. A change must not wait for them.
    let ttl = Duration::from_secs(30);
    let member = |id: &str| Member {
        instance_id: id.into(),
        datacenter: "east".into(),
        version: "1".into(),
        url: String::new(),
    };
    let (a, a_db) = registry_with_db().await;
    let (b, _) = registry_with_db().await;
    let _a_fleet = Fleet::start(
        &a,
        EtcdFleet::new(&etcd.urls(), "fleet", ttl).unwrap(),
        member("a"),
        HealthRule::default(),
    );
    let b_fleet = Fleet::start(
        &b,
        EtcdFleet::new(&etcd.urls(), "fleet", ttl).unwrap(),
        member("b"),
        HealthRule::default(),
    );
    let east = |fleet: &Fleet| {
        fleet
            .view()
            .datacenter("east")
            .map(|d| (d.fresh, d.conditions.outage))
    };
    until(
        &b_fleet,
        "both instances seen",
        &|v| v.datacenter("east").is_some_and(|d| d.fresh == 2),
        Duration::from_secs(10),
    )
    .await;

    *a_db.lock().unwrap() = CheckStatus::Outage;
    let changed = Instant::now();
    for _ in 0..3 {
        a.refresh_all().await;
    }
    assert_eq!(a.condition(), CheckStatus::Outage);
    until(
        &b_fleet,
        "a's outage in b's view",
        &|v| {
            v.datacenter("east")
                .is_some_and(|d| d.conditions.outage == 1)
        },
        Duration::from_secs(5),
    )
    .await;
    assert!(
        changed.elapsed() < ttl / 6,
        "{:?}: it waited for a beat",
        changed.elapsed()
    );
    assert_eq!(east(&b_fleet), Some((2, 1)));
    assert!(!b_fleet.view().stale);
}

/// `EtcdFleet` grants its lease under an id of its own, so that a grant whose answer was lost
/// is found again: this is what etcd answers a second grant of one id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_grant_of_one_lease_id_says_it_exists() {
    let etcd = EtcdCluster::start(1);
    let mut client = etcd_client::Client::connect([etcd.url(0)], None)
        .await
        .unwrap();
    let options = || Some(etcd_client::LeaseGrantOptions::new().with_id(4242));
    assert_eq!(client.lease_grant(5, options()).await.unwrap().id(), 4242);
    match client.lease_grant(5, options()).await {
        Err(etcd_client::Error::GRpcStatus(status)) => {
            assert!(
                status.message().contains("lease already exists"),
                "{status:?}"
            );
        }
        other => panic!("{other:?}"),
    }
}
