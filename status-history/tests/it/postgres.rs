//! PostgreSQL for a fleet, against a real server started by the test: what one instance
//! writes reads back as a replay says, instances merge, every earlier schema migrates, ten
//! instances open and write at once, and a server stopped mid-run is said by `history` and
//! written through once it is back.
#![cfg(feature = "postgres")]

use crate::schedule;

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::servers::PostgresServer;
use chrono::{DateTime, Utc};
use status_core::{check, CheckStatus, Dependency, MuteWindow, Registry};
use status_history::{
    postgres_migrations, History, HistoryStore, PostgresHistory, Recorder, Series, Tier, Writes,
    HISTORY_ID,
};

const T0: i64 = 1_772_323_200_000;

/// `ms` milliseconds since the Unix epoch as a time.
fn at(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap()
}

fn store(pg: &PostgresServer, instance: &str) -> PostgresHistory {
    PostgresHistory::new(&pg.config(), instance, "dc-1").unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_merge_and_each_reads_back_what_it_wrote() {
    let pg = PostgresServer::start();
    let db = Series::Dependency("db".into());
    let (a, b) = (store(&pg, "a"), store(&pg, "b"));
    a.open(at(T0)).await.unwrap();
    b.open(at(T0)).await.unwrap();
    // a: 90 s OK then 30 s OUTAGE; b: 120 s MAJOR.
    let mut ra = Recorder::new();
    ra.changed(&db, T0, CheckStatus::Ok, "up", vec![]);
    ra.checked(&db, T0, false, 2_000, false);
    ra.changed(
        &db,
        T0 + 90_000,
        CheckStatus::Outage,
        "down",
        vec!["net".into()],
    );
    ra.checked(&db, T0 + 90_000, true, 8_000, false);
    let mut rb = Recorder::new();
    rb.changed(&db, T0, CheckStatus::Major, "slow", vec![]);
    for (store, recorder) in [(&a, &mut ra), (&b, &mut rb)] {
        let batch = recorder.flush(T0 + 120_000, true);
        store
            .write(&Writes {
                batch,
                ..Writes::default()
            })
            .await
            .unwrap();
    }
    let minutes = a
        .buckets(
            &db,
            Tier::Minute,
            DateTime::UNIX_EPOCH,
            DateTime::<Utc>::MAX_UTC,
        )
        .await
        .unwrap();
    let total = async |tier| {
        let b = a
            .buckets(&db, tier, DateTime::UNIX_EPOCH, DateTime::<Utc>::MAX_UTC)
            .await
            .unwrap();
        b.iter().fold((0, 0, 0, 0), |acc, b| {
            (
                acc.0 + b.spent.ok,
                acc.1 + b.spent.major,
                acc.2 + b.spent.outage,
                acc.3 + b.checks,
            )
        })
    };
    assert_eq!(minutes.len(), 2);
    for tier in Tier::ALL {
        // Merged: both instances' time, whatever the tier.
        assert_eq!(total(tier).await, (90_000, 120_000, 30_000, 2), "{tier:?}");
    }
    let merged = &minutes[1];
    assert_eq!(
        (merged.duration_min_us, merged.duration_max_us),
        (8_000, 8_000)
    );
    let transitions = b
        .transitions(&db, DateTime::UNIX_EPOCH, DateTime::<Utc>::MAX_UTC, 10)
        .await
        .unwrap();
    assert_eq!(transitions.len(), 3);
    assert_eq!(transitions.last().unwrap().blocked_by, ["net"]);
    let days = a
        .days_of("dependency", DateTime::UNIX_EPOCH, DateTime::<Utc>::MAX_UTC)
        .await
        .unwrap();
    assert_eq!(days.len(), 1);
    assert_eq!(days[0].1.len(), 1);
    assert_eq!(days[0].1[0].spent.outage, 30_000);
    // A second flush at the same time has gained nothing, and adds nothing.
    let batch = ra.flush(T0 + 120_000, true);
    a.write(&Writes {
        batch,
        ..Writes::default()
    })
    .await
    .unwrap();
    assert_eq!(total(Tier::Day).await, (90_000, 120_000, 30_000, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_restarted_three_times_in_one_minute_keeps_every_run_s_time() {
    let pg = PostgresServer::start();
    let db = Series::Dependency("db".into());
    // Three runs of instance `a` in one minute, each 10 s in OUTAGE then stopped: gracefully,
    // killed 4 s after its last write, gracefully. Each new run is a new store, as a new
    // process is.
    let mut runs: Vec<PostgresHistory> = Vec::new();
    for (i, kill) in [(0i64, false), (1, true), (2, false)] {
        let start = T0 + i * 15_000;
        // The run before is over: its process (and its connection) is gone.
        if let Some(before) = runs.last() {
            before.close().await.unwrap();
        }
        let s = store(&pg, "a");
        s.open(at(start)).await.unwrap();
        let mut r = Recorder::new();
        r.changed(&db, start, CheckStatus::Outage, "down", vec![]);
        r.checked(&db, start, true, 1_000, false);
        let batch = r.flush(start + 10_000, true);
        s.write(&Writes {
            batch,
            ..Writes::default()
        })
        .await
        .unwrap();
        if kill {
            // Recorded after the last write, then killed: lost, as the replay says.
            let _ = r.unwritten(&db, start + 14_000);
        } else {
            let batch = r.flush(start + 12_000, true);
            s.write(&Writes {
                batch,
                ..Writes::default()
            })
            .await
            .unwrap();
        }
        runs.push(s);
    }
    let reader = runs.last().unwrap();
    for tier in Tier::ALL {
        let buckets = reader
            .buckets(&db, tier, DateTime::UNIX_EPOCH, DateTime::<Utc>::MAX_UTC)
            .await
            .unwrap();
        let outage: u64 = buckets.iter().map(|b| b.spent.outage).sum();
        let checks: u64 = buckets.iter().map(|b| b.checks).sum();
        // 12 s + 10 s + 12 s: every run's durable time, summed, whatever the tier.
        assert_eq!((outage, checks), (34_000, 3), "{tier:?}");
    }
    let covered: Vec<i64> = reader
        .with_client(async |c| {
            c.query(
                "SELECT covered_until FROM sh_runs WHERE instance = 'a' ORDER BY id",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get::<_, i64>(0))
            .collect()
        })
        .await
        .unwrap();
    assert_eq!(covered, [T0 + 12_000, T0 + 25_000, T0 + 42_000]);
}

/// The property test of `replay.rs`, on PostgreSQL: random schedules of levels, checks,
/// flushes and restarts (graceful or killed, each a new store of the same instance, as a new
/// process is), and every window's time in each level against a replay of what happened,
/// bounded by each run's last durable write. Fewer cases than on SQLite: each is a few
/// hundred round trips to a real server.
#[test]
fn uptime_and_objectives_equal_a_replay_across_restarts_in_postgres() {
    use proptest::test_runner::{Config, TestRunner};
    use schedule::{replay, retention, Step};
    use status_history::{UptimeReport, Weights, Window};

    let pg = PostgresServer::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let case = std::sync::atomic::AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config::with_cases(24));
    let strategy = (
        schedule::steps(),
        schedule::windows(),
        schedule::objectives(),
        schedule::windows(),
    );
    runner
        .run(
            &strategy,
            |((steps, end), windows, objectives, excluded)| {
                // A series of its own per case: the database is shared by every case.
                let n = case.fetch_add(1, Ordering::Relaxed);
                let db = Series::Dependency(format!("db-{n}"));
                runtime.block_on(async {
                    let mut s = store(&pg, "prop");
                    s.open(at(schedule::T0)).await.unwrap();
                    let mut recorder = Recorder::new();
                    let write = async |s: &PostgresHistory, batch| {
                        s.write(&Writes {
                            batch,
                            ..Writes::default()
                        })
                        .await
                        .unwrap();
                    };
                    for (t, step) in &steps {
                        match step {
                            Step::Restart { kill } => {
                                if !kill {
                                    write(&s, recorder.flush(*t, true)).await;
                                }
                                recorder = Recorder::new();
                                s.close().await.unwrap();
                                s = store(&pg, "prop");
                                s.open(at(*t)).await.unwrap();
                            }
                            Step::Level(l) => recorder.changed(&db, *t, *l, "m", vec![]),
                            Step::Check { muted, us } => {
                                recorder.checked(&db, *t, false, *us, *muted);
                            }
                            Step::Flush(aggregates) => {
                                write(&s, recorder.flush(*t, *aggregates)).await;
                            }
                        }
                    }
                    write(&s, recorder.flush(end, true)).await;
                    for (back, len) in &windows {
                        let from = at(end - back);
                        let to = from + chrono::Duration::milliseconds(*len);
                        let Ok(window) = Window::new(from, to, at(end), &retention()) else {
                            continue;
                        };
                        let buckets = s
                            .buckets(&db, window.tier, window.from, window.to)
                            .await
                            .unwrap();
                        let got =
                            UptimeReport::of(db.clone(), window, &buckets, Weights::DEFAULT).spent;
                        let want = replay(
                            &steps,
                            end,
                            window.from.timestamp_millis(),
                            window.to.timestamp_millis(),
                        );
                        assert_eq!(
                            [got.ok, got.minor, got.major, got.outage, got.muted],
                            want,
                            "window {window:?}"
                        );
                    }
                    // Exclusions made at the end, from the buckets of every tier, read once.
                    let mut all = Vec::new();
                    for tier in status_history::Tier::ALL {
                        let (a, z) = (tier.floor(at(schedule::T0)), tier.ceil(at(end)));
                        all.push((tier, s.buckets(&db, tier, a, z).await.unwrap()));
                    }
                    let read = |tier, a: DateTime<Utc>, z: DateTime<Utc>| {
                        let (a, z) = (a.timestamp(), z.timestamp());
                        all.iter()
                            .find(|(t, _)| *t == tier)
                            .map(|(_, b)| {
                                b.iter()
                                    .filter(|b| b.start >= a && b.start < z)
                                    .copied()
                                    .collect()
                            })
                            .unwrap_or_default()
                    };
                    let exclusions = schedule::exclusions(&db, end, &excluded, read);
                    for (back, len) in &windows {
                        let from = at(end - back);
                        let to = from + chrono::Duration::milliseconds(*len);
                        let Ok(window) = Window::new(from, to, at(end), &retention()) else {
                            continue;
                        };
                        let mut buckets = s
                            .buckets(&db, window.tier, window.from, window.to)
                            .await
                            .unwrap();
                        for e in &exclusions {
                            e.apply(&db, window.tier, &mut buckets);
                        }
                        let got =
                            UptimeReport::of(db.clone(), window, &buckets, Weights::DEFAULT).spent;
                        let (a, z) = (window.from.timestamp_millis(), window.to.timestamp_millis());
                        assert_eq!(
                            [got.ok, got.minor, got.major, got.outage, got.muted],
                            schedule::replay_excluded(&steps, end, a, z, &exclusions),
                            "window {window:?} with exclusions"
                        );
                    }
                    // Every objective on the same schedule, read as `History::slo` reads it.
                    for objective in &objectives {
                        let objective = status_history::objective::Objective::new(
                            "db",
                            db.clone(),
                            objective.objective(),
                            objective.window_text(),
                        )
                        .unwrap()
                        .bad_from(objective.bad_level())
                        .unwrap();
                        let windows = status_history::objective::Windows::of(
                            &objective,
                            at(end),
                            &retention(),
                        )
                        .unwrap();
                        let mut read = Vec::new();
                        for (tier, from, to) in windows.reads() {
                            read.push((tier, s.buckets(&db, tier, from, to).await.unwrap()));
                        }
                        schedule::assert_objective_replays(
                            &objective, &steps, end, &windows, &read,
                        );
                    }
                    s.close().await.unwrap();
                });
                Ok(())
            },
        )
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_claiming_one_instance_id_are_refused_but_the_first() {
    let pg = PostgresServer::start();
    let first = store(&pg, "q-1");
    first.open(at(T0)).await.unwrap();
    let second = store(&pg, "q-1");
    let err = second.open(at(T0)).await.unwrap_err();
    assert!(err.is_locked(), "{err}");
    assert!(err.to_string().contains("\"q-1\" is in use"), "{err}");
    assert!(
        err.to_string().contains("server process"),
        "says who: {err}"
    );
    // Another id is welcome; the first one's, once it let go.
    store(&pg, "q-2").open(at(T0)).await.unwrap();
    first.close().await.unwrap();
    second.open(at(T0)).await.unwrap();
    let runs: i64 = second
        .with_client(async |c| {
            c.query_one("SELECT count(*) FROM sh_runs WHERE instance = 'q-1'", &[])
                .await
                .unwrap()
                .get(0)
        })
        .await
        .unwrap();
    assert_eq!(runs, 2, "the refused open started no run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_earlier_schema_migrates_and_a_newer_one_is_refused() {
    let pg = PostgresServer::start();
    let admin = store(&pg, "admin");
    admin.open(at(T0)).await.unwrap();
    let latest = postgres_migrations().len();
    for version in 0..latest {
        let name = format!("v{version}");
        admin
            .with_client(async |c| {
                c.batch_execute(&format!("CREATE DATABASE {name}"))
                    .await
                    .unwrap();
            })
            .await
            .unwrap();
        let config = format!(
            "{} dbname={name}",
            pg.config().replace("dbname=postgres", "")
        );
        {
            let (client, connection) = tokio_postgres::connect(&config, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            client
                .batch_execute("CREATE TABLE sh_schema (version INTEGER NOT NULL)")
                .await
                .unwrap();
            for sql in &postgres_migrations()[..version] {
                client.batch_execute(sql).await.unwrap();
            }
            client
                .execute("INSERT INTO sh_schema VALUES ($1)", &[&(version as i32)])
                .await
                .unwrap();
            if version >= 1 {
                client
                    .batch_execute(
                        "INSERT INTO sh_series (kind, name) VALUES ('dependency', 'kept')",
                    )
                    .await
                    .unwrap();
            }
        }
        let s = PostgresHistory::new(&config, "x", "dc").unwrap();
        s.open(at(T0))
            .await
            .unwrap_or_else(|e| panic!("from version {version}: {e}"));
        let kept = s.series("dependency").await.unwrap();
        assert_eq!(
            kept.len(),
            usize::from(version >= 1),
            "from version {version}"
        );
        assert!(s.mutes().await.unwrap().is_empty());
    }
    admin
        .with_client(async |c| {
            c.batch_execute("UPDATE sh_schema SET version = 99")
                .await
                .unwrap();
        })
        .await
        .unwrap();
    let newer = store(&pg, "late");
    let err = newer.open(at(T0)).await.unwrap_err();
    assert!(err.to_string().contains("newer"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_instances_open_and_write_at_once() {
    let pg = PostgresServer::start();
    let db = Series::Dependency("db".into());
    let mut tasks = Vec::new();
    for i in 0..10 {
        let s = store(&pg, &format!("i{i}"));
        tasks.push(tokio::spawn(async move {
            s.open(at(T0)).await.unwrap();
            let mut r = Recorder::new();
            r.changed(
                &Series::Dependency("db".into()),
                T0,
                CheckStatus::Ok,
                "",
                vec![],
            );
            for step in 1..=30 {
                let batch = r.flush(T0 + step * 2_000, true);
                s.write(&Writes {
                    batch,
                    ..Writes::default()
                })
                .await
                .unwrap();
            }
            s
        }));
    }
    let mut stores = Vec::new();
    for t in tasks {
        stores.push(t.await.unwrap());
    }
    let days = stores[0]
        .buckets(
            &db,
            Tier::Day,
            DateTime::UNIX_EPOCH,
            DateTime::<Utc>::MAX_UTC,
        )
        .await
        .unwrap();
    assert_eq!(days.len(), 1);
    assert_eq!(days[0].spent.ok, 10 * 60_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stopped_mid_run_is_said_and_written_through_when_it_is_back() {
    let mut pg = PostgresServer::start();
    let registry = Registry::builder().jitter(0.0).build();
    let level = Arc::new(AtomicU8::new(0));
    let l = level.clone();
    registry
        .add(
            Dependency::builder(
                "db",
                check::tiered(move || {
                    let status = CheckStatus::from_severity(l.load(Ordering::SeqCst)).unwrap();
                    async move { (status, "db".to_owned()) }
                }),
            )
            .period(Duration::from_millis(100))
            .build()
            .unwrap(),
        )
        .unwrap();
    let history = History::builder(store(&pg, "me"))
        .flush_every(Duration::from_millis(200))
        .aggregate_every(Duration::from_millis(200))
        .open();
    history.attach(&registry);
    registry
        .mute(
            "db",
            MuteWindow::For(Duration::from_secs(600)),
            "migration",
            None,
        )
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let said = || {
        registry
            .result(HISTORY_ID)
            .map(|r| (r.status(), r.message().to_owned()))
    };
    assert_eq!(said().unwrap().0, CheckStatus::Ok, "{:?}", said());

    pg.stop();
    level.store(3, Ordering::SeqCst);
    let stopped = std::time::Instant::now();
    let mut seen = None;
    while stopped.elapsed() < Duration::from_secs(15) {
        let asked = std::time::Instant::now();
        let _ = registry.report();
        assert!(
            asked.elapsed() < Duration::from_millis(100),
            "the report waited on the store"
        );
        if let Some((level, message)) = said() {
            if level != CheckStatus::Ok {
                seen = Some(message);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let message = seen.expect("history said the store was down");
    assert!(
        message.contains("writes failing") || message.contains("cannot open"),
        "{message}"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    level.store(0, Ordering::SeqCst);
    pg.restart();
    // Reconnected within the ten-second retry, the backlog written, OK again.
    let back = std::time::Instant::now();
    while said().unwrap().0 != CheckStatus::Ok {
        assert!(
            back.elapsed() < Duration::from_secs(20),
            "not back: {:?}",
            said()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    history.flush().await;
    assert_eq!(history.stats().backlog, 0);
    let now = registry.clock().wall();
    let report = history
        .uptime(
            Series::Dependency("db".into()),
            now - chrono::Duration::minutes(10),
            now,
        )
        .await
        .unwrap();
    // Muted the whole time: the outage while the server was down was recorded, muted.
    assert!(report.spent.muted >= 2_000, "{:?}", report.spent);
    let transitions = history
        .transitions(Series::Dependency("db".into()), 10)
        .await
        .unwrap();
    assert!(
        transitions.iter().any(|t| t.to == CheckStatus::Outage),
        "{transitions:?}"
    );
    // The mute is kept for this instance (read once this process has let it go).
    history.close().await;
    let again = store(&pg, "me");
    again.open(at(0)).await.unwrap();
    assert_eq!(again.mutes().await.unwrap().len(), 1);
}

fn fact(
    roots: &[&str],
    at: i64,
    phase: status_history::incident::Phase,
) -> status_history::incident::IncidentFact {
    status_history::incident::IncidentFact {
        roots: roots.iter().map(|s| (*s).to_owned()).collect(),
        affected: roots
            .iter()
            .map(|s| ((*s).to_owned(), CheckStatus::Outage))
            .collect(),
        impact: status_history::incident::Impact::Critical,
        started: at,
        at,
        phase,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_instances_failing_for_one_root_at_once_share_one_incident_until_all_recover() {
    use status_history::incident::{Phase, UpdateStatus};
    let pg = PostgresServer::start();
    let quiet = 300_000;
    let stores: Vec<_> = (0..10)
        .map(|i| Arc::new(store(&pg, &format!("i-{i}"))))
        .collect();
    for s in &stores {
        s.open(at(T0)).await.unwrap();
    }
    let write = move |s: &Arc<PostgresHistory>, f| write_fact(Arc::clone(s), f, quiet);
    // All at once: the advisory lock makes one incident of them.
    let opened = stores
        .iter()
        .enumerate()
        .map(|(i, s)| write(s, fact(&["db"], T0 + i as i64, Phase::Open)));
    futures_join_all(opened).await;
    let open = stores[0]
        .incidents(DateTime::<Utc>::MAX_UTC, 10)
        .await
        .unwrap();
    assert_eq!(open.len(), 1, "{open:#?}");
    let id = open[0].id;
    assert_eq!(open[0].started, T0, "the first to see it");

    // Nine recover: the one still failing keeps it open.
    for (i, s) in stores.iter().enumerate().take(9) {
        let at = T0 + 200_000;
        write(
            s,
            fact(
                &["db"],
                at,
                Phase::Resolved {
                    at: T0 + 100_000 + i as i64,
                },
            ),
        )
        .await;
    }
    assert_eq!(
        stores[3].incident(id).await.unwrap().unwrap().resolved,
        None
    );
    // An operator's word, seen by every instance.
    stores[5]
        .post_update(&status_history::incident::NewUpdate {
            incident: id,
            at: T0 + 210_000,
            status: UpdateStatus::Monitoring,
            message: "failover done".into(),
            actor: Some("ana".into()),
        })
        .await
        .unwrap()
        .unwrap();
    write(
        &stores[9],
        fact(&["db"], T0 + 280_000, Phase::Resolved { at: T0 + 250_000 }),
    )
    .await;
    let incident = stores[0].incident(id).await.unwrap().unwrap();
    assert_eq!(
        incident.resolved,
        Some(T0 + 250_000),
        "dated by the last to recover"
    );
    let words: Vec<_> = incident.updates.iter().map(|u| u.status).collect();
    assert_eq!(
        words,
        [
            UpdateStatus::Investigating,
            UpdateStatus::Monitoring,
            UpdateStatus::Resolved
        ]
    );

    // A postmortem written on one instance is read on every other, and replaced in place.
    let postmortem = |body: &str, at: i64| status_history::incident::NewPostmortem {
        incident: id,
        postmortem: status_history::incident::Postmortem {
            body: body.into(),
            at,
            actor: Some("ana".into()),
        },
    };
    let kept = stores[2]
        .set_postmortem(&postmortem("The disk filled.", T0 + 300_000))
        .await
        .unwrap();
    assert_eq!(kept.unwrap().body, "The disk filled.");
    stores[4]
        .set_postmortem(&postmortem("The disk filled; alert sooner.", T0 + 310_000))
        .await
        .unwrap()
        .unwrap();
    let read = stores[7]
        .incident(id)
        .await
        .unwrap()
        .unwrap()
        .postmortem
        .unwrap();
    assert_eq!(
        (read.body.as_str(), read.at),
        ("The disk filled; alert sooner.", T0 + 310_000)
    );
    assert_eq!(
        stores[7].incidents(at(T0), 10).await.unwrap()[0].postmortem,
        Some(read)
    );
    assert!(stores[1]
        .set_postmortem(&status_history::incident::NewPostmortem {
            incident: id + 1000,
            ..postmortem("x", T0)
        })
        .await
        .unwrap()
        .is_none());
    // Pruned with its incident once the audit trail no longer speaks of it.
    let later = at(T0) + chrono::Duration::days(4000);
    stores[0]
        .prune(later, &status_history::Retention::default())
        .await
        .unwrap();
    assert_eq!(stores[0].incident(id).await.unwrap(), None);
}

async fn write_fact(
    s: Arc<PostgresHistory>,
    f: status_history::incident::IncidentFact,
    quiet: i64,
) {
    let writes = Writes {
        incidents: vec![f],
        incident_quiet: quiet,
        ..Writes::default()
    };
    s.write(&writes).await.unwrap();
}

async fn futures_join_all<F: std::future::Future<Output = ()> + Send + 'static>(
    futures: impl Iterator<Item = F>,
) {
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    for h in handles {
        h.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_that_dies_mid_incident_does_not_hold_it_open() {
    use status_history::incident::{Phase, UpdateStatus, GONE_AFTER};
    let pg = PostgresServer::start();
    let (a, b) = (Arc::new(store(&pg, "a")), Arc::new(store(&pg, "b")));
    a.open(at(T0)).await.unwrap();
    b.open(at(T0)).await.unwrap();
    write_fact(Arc::clone(&a), fact(&["cache"], T0, Phase::Open), 300_000).await;
    write_fact(
        Arc::clone(&b),
        fact(&["cache"], T0 + 1, Phase::Open),
        300_000,
    )
    .await;
    // b dies; a recovers, and goes on writing (nothing more to say of the incident).
    write_fact(
        Arc::clone(&a),
        fact(
            &["cache"],
            T0 + 120_000,
            Phase::Resolved { at: T0 + 60_000 },
        ),
        300_000,
    )
    .await;
    let id = a.incidents(at(T0 - 1), 10).await.unwrap()[0].id;
    assert_eq!(a.incident(id).await.unwrap().unwrap().resolved, None);
    let later = |now| Writes {
        incident_quiet: 300_000,
        now,
        ..Writes::default()
    };
    a.write(&later(T0 + 200_000)).await.unwrap();
    assert_eq!(
        a.incident(id).await.unwrap().unwrap().resolved,
        None,
        "b may be slow"
    );
    a.write(&later(T0 + 1 + GONE_AFTER.as_millis() as i64))
        .await
        .unwrap();
    let incident = a.incident(id).await.unwrap().unwrap();
    assert_eq!(
        incident.resolved,
        Some(T0 + 60_000),
        "dated by the one that recovered"
    );
    assert_eq!(
        incident.updates.last().unwrap().status,
        UpdateStatus::Resolved
    );
}

/// Ten instances claim the same message for one subscriber at once: one sends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_instances_claiming_one_delivery_send_it_once() {
    use status_history::{Subscriber, SubscriberKind};
    let pg = PostgresServer::start();
    let stores: Vec<_> = (0..10)
        .map(|i| Arc::new(store(&pg, &format!("i-{i}"))))
        .collect();
    for s in &stores {
        s.open(at(T0)).await.unwrap();
    }
    let kept = stores[0]
        .subscribe(&Subscriber {
            id: 0,
            kind: SubscriberKind::Webhook,
            address: "https://hooks.example.com/status".into(),
            components: Vec::new(),
            lang: "en".into(),
            token: "hash".into(),
            created: at(T0),
            confirmed: Some(at(T0)),
            confirm_sent: None,
        })
        .await
        .unwrap();
    assert_eq!(stores[3].subscribers().await.unwrap(), vec![kept.clone()]);
    let claims: Vec<_> = stores
        .iter()
        .map(|s| {
            let s = Arc::clone(s);
            tokio::spawn(async move {
                s.claim_delivery("incident-7-update-9", kept.id, at(T0 + 1))
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut won = 0;
    for c in claims {
        won += usize::from(c.await.unwrap());
    }
    assert_eq!(won, 1);
    // A hundred subscribers claimed at once by every instance: each sent by exactly one.
    let ids: Arc<Vec<i64>> = Arc::new((1_000..1_100).collect());
    let batches: Vec<_> = stores
        .iter()
        .map(|s| {
            let (s, ids) = (Arc::clone(s), Arc::clone(&ids));
            tokio::spawn(async move {
                s.claim_deliveries("incident-7-update-10", &ids, at(T0 + 2))
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut claimed = Vec::new();
    for b in batches {
        claimed.extend(b.await.unwrap());
    }
    claimed.sort_unstable();
    assert_eq!(claimed, *ids, "every one claimed, none twice");
    assert_eq!(
        stores[5].unsubscribe("hash").await.unwrap().map(|s| s.id),
        Some(kept.id)
    );
    assert!(stores[6].subscribers().await.unwrap().is_empty());
    // An operator removes one by its id, through any instance, with what it was sent.
    let again = stores[0]
        .subscribe(&Subscriber {
            token: "hash-2".into(),
            ..kept.clone()
        })
        .await
        .unwrap();
    assert!(stores[1]
        .claim_delivery("incident-7-update-11", again.id, at(T0 + 3))
        .await
        .unwrap());
    assert_eq!(
        stores[8]
            .remove_subscriber(again.id)
            .await
            .unwrap()
            .map(|s| s.id),
        Some(again.id)
    );
    assert_eq!(stores[9].remove_subscriber(again.id).await.unwrap(), None);
    assert!(stores[2].subscribers().await.unwrap().is_empty());
    assert!(
        stores[3]
            .claim_delivery("incident-7-update-11", again.id, at(T0 + 4))
            .await
            .unwrap(),
        "its deliveries went with it"
    );
}
