//! History across restarts, in a SQLite file and in a real PostgreSQL: the real quickstart
//! binary, killed mid-run or stopped, restarted on the same store, eleven times in a row. Its uptime over 1 h, 24 h and 30 d
//! then agrees with a brute-force replay of the transitions in the store (read here with
//! SQLite or tokio-postgres directly, not through status-history), the mute and override set
//! before the kill are back, and a real webhook receiver gets no notice twice and every
//! "resolved".

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use chrono::{DateTime, DurationRound, Utc};
use rusqlite::Connection;
use serde_json::Value;
use tokio::time::Instant;

use crate::common;
use crate::servers;

const TOKEN: &str = "t";

/// The quickstart keeping history in `history`, with `args` more, answering.
async fn launch(history: &str, args: &[&str]) -> (Child, SocketAddr) {
    let (child, port) = servers::listener::on_a_free_port("the quickstart", |port| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_quickstart"));
        command
            .args(["--port", &port.to_string(), "--period-ms", "100"])
            .args(["--history", history])
            .args(args)
            .env("STATUS_ADMIN_TOKEN", TOKEN)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    });
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(20);
    while !(tokio::net::TcpStream::connect(addr).await.is_ok()
        && common::request(addr, "GET", "/healthcheck/live", None, "")
            .await
            .0
            == 200)
    {
        assert!(Instant::now() < deadline, "the quickstart never answered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (child, addr)
}

async fn start(db: &Db) -> (Child, SocketAddr) {
    launch(&db.target(), &["--instance-id", "q-1"]).await
}

async fn call(addr: SocketAddr, method: &str, path: &str, body: &str) -> Value {
    let (code, body) = common::request(addr, method, path, Some(TOKEN), body).await;
    assert_eq!(code, 200, "{method} {path}: {body}");
    serde_json::from_str(&body).unwrap()
}

/// Where the quickstart keeps its history, read here directly (not through status-history).
enum Db {
    Sqlite(PathBuf),
    Postgres(servers::PostgresServer),
}

impl Db {
    fn target(&self) -> String {
        match self {
            Self::Sqlite(path) => path.display().to_string(),
            Self::Postgres(pg) => format!("postgres://postgres@127.0.0.1:{}/postgres", pg.port),
        }
    }

    /// Rows of `sql` (SQLite's dialect and PostgreSQL's agree on these), as integers.
    async fn rows(&self, sql: &str, dependency: &str) -> Vec<Vec<i64>> {
        match self {
            Self::Sqlite(path) => {
                let conn = Connection::open(path).unwrap();
                let mut stmt = conn
                    .prepare(&sql.replace("$1", "?1").replace("sh_", ""))
                    .unwrap();
                let n = stmt.column_count();
                stmt.query_map([dependency], |r| {
                    (0..n).map(|i| r.get::<_, i64>(i)).collect()
                })
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
            }
            Self::Postgres(pg) => {
                let (client, connection) =
                    tokio_postgres::connect(&pg.config(), tokio_postgres::NoTls)
                        .await
                        .unwrap();
                tokio::spawn(connection);
                client
                    .query(sql, &[&dependency])
                    .await
                    .unwrap()
                    .iter()
                    .map(|r| (0..r.len()).map(|i| r.get::<_, i64>(i)).collect())
                    .collect()
            }
        }
    }

    /// Milliseconds of `dependency` in OK, MINOR, MAJOR, OUTAGE between `from` and `to`
    /// (ms), replayed from the transitions of each run up to where that run's time was
    /// accounted (`covered_until`).
    async fn replay(&self, dependency: &str, from: i64, to: i64) -> [u64; 4] {
        let runs = self
            .rows(
                "SELECT id, covered_until FROM sh_runs WHERE $1 = $1 ORDER BY id",
                dependency,
            )
            .await;
        let changes = self
            .rows(
                "SELECT t.run, t.at, CAST(t.to_level AS BIGINT) FROM sh_transitions t JOIN sh_series s ON s.id = t.series
                 WHERE s.kind = 'dependency' AND s.name = $1 ORDER BY t.run, t.at, t.id",
                dependency,
            )
            .await;
        let mut out = [0u64; 4];
        for run in runs {
            let (id, covered) = (run[0], run[1]);
            let mine: Vec<&Vec<i64>> = changes.iter().filter(|c| c[0] == id).collect();
            for (i, change) in mine.iter().enumerate() {
                let end = mine.get(i + 1).map_or(covered, |next| next[1]).min(covered);
                let (a, b) = (change[1].max(from), end.min(to));
                if b > a {
                    out[usize::try_from(change[2]).unwrap()] += (b - a) as u64;
                }
            }
        }
        out
    }

    /// The outage of `dependency` summed over the buckets of `tier`.
    async fn outage_in(&self, dependency: &str, tier: i64) -> u64 {
        let sql = format!(
            "SELECT CAST(coalesce(sum(b.outage), 0) AS BIGINT) FROM sh_buckets b JOIN sh_series s ON s.id = b.series
             WHERE s.kind = 'dependency' AND s.name = $1 AND b.tier = {tier}"
        );
        self.rows(&sql, dependency).await[0][0] as u64
    }
}

fn spent(answer: &Value) -> [u64; 4] {
    let s = &answer["spentMs"];
    ["ok", "minor", "major", "outage"].map(|l| s[l].as_u64().unwrap())
}

fn ms(answer: &Value, field: &str) -> i64 {
    DateTime::parse_from_rfc3339(answer[field].as_str().unwrap())
        .unwrap()
        .with_timezone(&Utc)
        .timestamp_millis()
}

/// A history file of its own for each test (one file is one process's).
fn temp() -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = common::fresh_dir(&format!("quickstart-history-{n}"));
    dir.join("history.db")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkill_loses_nothing_reported_in_sqlite() {
    a_sigkill_loses_nothing_reported(Db::Sqlite(temp())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkill_loses_nothing_reported_in_postgres() {
    a_sigkill_loses_nothing_reported(Db::Postgres(servers::PostgresServer::start())).await;
}

/// Kills the quickstart keeping history in `db` mid-run, restarts it on the same store:
/// nothing reported is lost, and what was in force is back.
async fn a_sigkill_loses_nothing_reported(db: Db) {
    let (mut child, addr) = start(&db).await;
    // An outage of the primary database, a mute of search for an hour, checkout forced off
    // for ten minutes: each durable within a second.
    call(
        addr,
        "PUT",
        "/demo/chaos/primary-db",
        r#"{"mode":"outage"}"#,
    )
    .await;
    call(
        addr,
        "PUT",
        "/admin/mutes/search",
        r#"{"ttlSeconds":3600,"reason":"reindex","actor":"alice"}"#,
    )
    .await;
    call(
        addr,
        "PUT",
        "/features/checkout/override",
        r#"{"enabled":false,"ttlSeconds":600,"reason":"vendor down","actor":"bob"}"#,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    call(addr, "PUT", "/demo/chaos/primary-db", r#"{"mode":"ok"}"#).await;
    // Time in each level is written every second: the kill lands with time recorded and
    // some not yet written.
    tokio::time::sleep(Duration::from_millis(11_500)).await;
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let killed = db.replay("primary-db", 0, i64::MAX).await;
    assert!(
        (1_000..=2_500).contains(&killed[3]),
        "the outage was recorded before the kill: {killed:?}"
    );
    assert!(killed[0] > 8_000, "{killed:?}");

    let (mut child, addr) = start(&db).await;
    // The mute and override set before the kill come back once the store is open.
    let deadline = Instant::now() + Duration::from_secs(10);
    let search = loop {
        let mutes = call(addr, "GET", "/admin/mutes", "").await;
        let search = mutes["mutes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["dependency"] == "search")
            .cloned();
        if let Some(search) = search {
            break search;
        }
        assert!(
            Instant::now() < deadline,
            "search is not muted again: {mutes}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        (search["reason"].as_str(), search["actor"].as_str()),
        // The token's operator (STATUS_ADMIN_TOKEN: `admin`), not the body's claim.
        (Some("reindex"), Some("admin"))
    );
    let checkout = call(addr, "GET", "/features/checkout", "").await;
    assert_eq!(checkout["enabled"], false, "{checkout}");
    assert_eq!(checkout["override"]["reason"], "vendor down", "{checkout}");
    // The admin calls before the kill are in the trail, read from the history by both
    // routes alike.
    let audit = call(addr, "GET", "/admin/audit", "").await;
    assert_eq!(
        audit["entries"],
        call(addr, "GET", "/admin/history/audit", "").await["entries"]
    );
    let actions: Vec<&str> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["action"].as_str().unwrap())
        .collect();
    assert!(
        actions.contains(&"PUT /admin/mutes/search")
            && actions.contains(&"PUT /features/checkout/override"),
        "{actions:?}"
    );

    // Over 1 h, 24 h and 30 d, the restarted instance answers what a replay of the store
    // gives: no more than the replay just after the question and the second this run has
    // not written yet (reads include it), and never less than the killed run accounted.
    for hours in [1, 24, 30 * 24] {
        let from = (Utc::now() - chrono::Duration::hours(hours))
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let path = format!("/healthcheck/dependencies/primary-db/uptime?from={from}");
        let answer = call(addr, "GET", &path, "").await;
        let got = spent(&answer);
        let high = db
            .replay("primary-db", ms(&answer, "from"), ms(&answer, "to"))
            .await;
        for level in 0..4 {
            assert!(
                got[level] <= high[level] + 1_000,
                "{hours} h: {got:?} > replay {high:?}"
            );
            assert!(
                got[level] >= killed[level],
                "{hours} h: {got:?} lost some of {killed:?}"
            );
        }
        assert!(
            answer["uptime"].as_f64().unwrap() < 1.0,
            "{hours} h: {answer}"
        );
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // Stopped, every tier replays to exactly the transitions.
    let replayed = db.replay("primary-db", 0, i64::MAX).await;
    for tier in 0..3 {
        assert_eq!(
            db.outage_in("primary-db", tier).await,
            replayed[3],
            "tier {tier}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_of_restarts_keeps_every_run_s_time_in_sqlite() {
    a_schedule_of_restarts_keeps_every_run_s_time(Db::Sqlite(temp())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_of_restarts_keeps_every_run_s_time_in_postgres() {
    a_schedule_of_restarts_keeps_every_run_s_time(Db::Postgres(servers::PostgresServer::start()))
        .await;
}

/// Stops `child` with a SIGKILL or a SIGTERM, and waits for it to exit.
async fn stop(mut child: Child, kill: bool) {
    if kill {
        child.kill().unwrap();
    } else {
        let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::Term).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the quickstart did not stop");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `primary-db`'s time in each level over the window from `from`, as the route answers.
async fn uptime_from(addr: SocketAddr, from: DateTime<Utc>) -> Value {
    let from = from.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let path = format!("/healthcheck/dependencies/primary-db/uptime?from={from}");
    call(addr, "GET", &path, "").await
}

/// An outage of `primary-db` for `ms`, then recovered (seen OK by its route).
async fn outage(addr: SocketAddr, ms: u64) {
    call(
        addr,
        "PUT",
        "/demo/chaos/primary-db",
        r#"{"mode":"outage"}"#,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(ms)).await;
    call(addr, "PUT", "/demo/chaos/primary-db", r#"{"mode":"ok"}"#).await;
    common::until(addr, "primary-db recovers", async || {
        common::get_json(addr, "/healthcheck/dependencies/primary-db")
            .await
            .1["status"]
            == "OK"
    })
    .await;
}

/// Restarts the quickstart on one store eleven times: an outage then a SIGTERM, an outage
/// then a SIGKILL, a crash loop of eight runs of about a second (SIGKILL and SIGTERM in
/// turn, an outage in every third), then a last run. Each run shows at least the OUTAGE
/// the one before showed as it stopped (to the millisecond: each stopped over a second
/// after its outage ended), and the last run's every window equals a replay of the durable
/// transitions, bounded by each run's last durable write, to within a second a run.
async fn a_schedule_of_restarts_keeps_every_run_s_time(db: Db) {
    let args = [
        "--instance-id",
        "q-1",
        "--shutdown-delay-ms",
        "0",
        "--shutdown-grace-ms",
        "100",
    ];
    let began = Utc::now() - chrono::Duration::seconds(1);
    let mut schedule = vec![(2_500, false), (2_000, true)];
    schedule.extend((0..8).map(|i| (if i % 3 == 0 { 700 } else { 0 }, i % 2 == 0)));
    let mut shown = 0u64;
    let mut mid_run = None;
    for (run, (outage_ms, kill)) in schedule.iter().enumerate() {
        let (child, addr) = launch(&db.target(), &args).await;
        let seen = spent(&uptime_from(addr, began).await);
        assert_eq!(
            seen[3], shown,
            "run {run}: the OUTAGE the run before showed as it stopped is not all here"
        );
        if *outage_ms > 0 {
            outage(addr, *outage_ms).await;
        }
        if run == 2 {
            mid_run = Some(Utc::now());
        }
        // Past a durable write after the recovery, so that a kill loses only OK time.
        tokio::time::sleep(Duration::from_millis(1_200)).await;
        shown = spent(&uptime_from(addr, began).await)[3];
        stop(child, *kill).await;
    }
    assert!(shown >= 4_000, "three outages were recorded: {shown} ms");

    let runs = schedule.len() as u64 + 1;
    let (child, addr) = launch(&db.target(), &args).await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let windows = [
        Utc::now() - chrono::Duration::hours(1),
        Utc::now() - chrono::Duration::hours(24),
        Utc::now() - chrono::Duration::days(30),
        mid_run.unwrap(),
    ];
    for from in windows {
        let answer = uptime_from(addr, from).await;
        let got = spent(&answer);
        let want = db
            .replay("primary-db", ms(&answer, "from"), ms(&answer, "to"))
            .await;
        assert_eq!(
            got[3], want[3],
            "from {from}: OUTAGE {got:?} against {want:?}"
        );
        for level in 0..4 {
            assert!(
                got[level].abs_diff(want[level]) <= 1_000 * runs,
                "from {from}: {got:?} against the replay {want:?}"
            );
        }
    }
    stop(child, false).await;
    // Stopped, every tier holds exactly what the transitions replay to.
    let replayed = db.replay("primary-db", 0, i64::MAX).await;
    for tier in 0..3 {
        assert_eq!(
            db.outage_in("primary-db", tier).await,
            replayed[3],
            "tier {tier}"
        );
    }
}

/// Two quickstarts on one file (a deploy that starts the new process before the old one
/// exits): the second says who holds the file and writes nothing until it is let go, then
/// takes over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_on_one_file_is_refused_says_who_and_takes_over_when_let_go() {
    let db = Db::Sqlite(temp());
    let args = ["--shutdown-delay-ms", "0", "--shutdown-grace-ms", "100"];
    let (first, _) = launch(&db.target(), &args).await;
    let (second, addr) = launch(&db.target(), &args).await;
    let pid = format!("pid {}", first.id());
    common::until(addr, "the second says the file is held", async || {
        let (_, body) = common::get_json(addr, "/healthcheck/dependencies/history").await;
        body["status"] != "OK"
            && body["errorMessage"]
                .as_str()
                .is_some_and(|m| m.contains("in use by another process") && m.contains(&pid))
    })
    .await;
    let runs = || async {
        db.rows("SELECT count(*) FROM sh_runs WHERE $1 = $1", "")
            .await[0][0]
    };
    assert_eq!(runs().await, 1, "the second started no run");
    stop(first, false).await;
    common::until(addr, "the second takes the file over", async || {
        common::get_json(addr, "/healthcheck/dependencies/history")
            .await
            .1["status"]
            == "OK"
    })
    .await;
    assert_eq!(runs().await, 2);
    stop(second, false).await;
}

/// Every notice a receiver got, digests opened, as `kind:id`.
type Received = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

async fn receiver() -> (String, Received) {
    let got: Received = Received::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let store = got.clone();
    let hook = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::body::Bytes| async move {
            let message: Value = serde_json::from_slice(&body).unwrap();
            let notice = &message["notice"];
            let notices = match notice["kind"].as_str() {
                Some("digest") => notice["notices"].as_array().unwrap().clone(),
                _ => vec![notice.clone()],
            };
            let mut got = store.lock().unwrap();
            for n in notices {
                got.push(format!(
                    "{}:{}",
                    n["kind"].as_str().unwrap(),
                    n["id"].as_str().unwrap_or("")
                ));
            }
            axum::http::StatusCode::NO_CONTENT
        }),
    );
    tokio::spawn(async move { axum::serve(listener, hook).await });
    (url, got)
}

fn count(got: &Received, what: &str) -> usize {
    got.lock().unwrap().iter().filter(|n| *n == what).count()
}

async fn until_received(got: &Received, what: &str) {
    for _ in 0..300 {
        if count(got, what) > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} never received: {:?}", got.lock().unwrap());
}

async fn start_notifying(history: &Path, hook: &str) -> (Child, SocketAddr) {
    // A Redis nobody listens for: failing before the kill and after it.
    let args = ["--notify-hold-s", "0", "--redis", "redis://127.0.0.1:1/"];
    let history = history.display().to_string();
    launch(&history, &[&args[..], &["--notify-webhook", hook]].concat()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_notifier_neither_repeats_a_notice_nor_loses_a_resolved() {
    let db = temp().with_file_name("notify.db");
    let _ = std::fs::remove_file(&db);
    let (hook, got) = receiver().await;
    let (mut child, addr) = start_notifying(&db, &hook).await;
    until_received(&got, "changed:redis").await;
    call(
        addr,
        "PUT",
        "/demo/chaos/payments-api",
        r#"{"mode":"outage"}"#,
    )
    .await;
    until_received(&got, "changed:payments-api").await;
    // What was told is kept within a second of the tick that told it.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    child.kill().unwrap(); // SIGKILL, payments-api told failing
    child.wait().unwrap();

    // Restarted, payments-api is OK (chaos lives in the process) and Redis still fails.
    let (mut child, _) = start_notifying(&db, &hook).await;
    until_received(&got, "resolved:payments-api").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    child.kill().unwrap();
    child.wait().unwrap();
    let seen = got.lock().unwrap().clone();
    assert_eq!(
        count(&got, "changed:redis"),
        1,
        "Redis told again after the restart: {seen:?}"
    );
    assert_eq!(count(&got, "changed:payments-api"), 1, "{seen:?}");
    assert_eq!(count(&got, "resolved:payments-api"), 1, "{seen:?}");
}

/// Every `slo` notice the receiver got, digests opened: (long window, firing).
fn slo_notices(got: &common::Received) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for m in got.lock().unwrap().iter() {
        let n = &m["notice"];
        let all = n["notices"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| vec![n.clone()]);
        for n in all {
            if n["kind"] == "slo" && n["slo"] == "db" {
                out.push((
                    n["long"].as_str().unwrap().to_owned(),
                    n["firing"].as_bool().unwrap(),
                ));
            }
        }
    }
    out
}

/// An objective on the real quickstart: an outage pages once to a real webhook receiver; its
/// bad time equals the replay of the transitions in the file, across a SIGTERM and a SIGKILL
/// (the page not told again); an exclusion takes the outage out; and the SLA report's CSV is
/// read back by Python's own `csv` module.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_objective_pages_once_keeps_its_figures_across_restarts_and_an_exclusion_removes_them() {
    let db = Db::Sqlite(temp());
    let (url, got) = common::receiver().await;
    let args = [
        "--instance-id",
        "q-1",
        "--shutdown-delay-ms",
        "0",
        "--shutdown-grace-ms",
        "100",
        "--slo",
        "db=dependency:primary-db@99/30d",
        "--notify-webhook",
        &url,
        "--notify-hold-s",
        "0",
    ];
    let began = Utc::now() - chrono::Duration::seconds(1);
    let (mut child, mut addr) = launch(&db.target(), &args).await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    outage(addr, 3_000).await;
    let recovered = Utc::now();
    // A read tells the alarms at once (the beat would within 15 s).
    let report = call(addr, "GET", "/healthcheck/slos/db", "").await;
    assert_eq!(report["alerts"][0]["firing"], true, "{report}");
    common::until(addr, "the page reaches the webhook", async || {
        slo_notices(&got).contains(&("1h".to_owned(), true))
    })
    .await;
    // Bad time is MAJOR and OUTAGE, exactly as the transitions replay them (past a durable
    // write after the recovery).
    let bad_of = |r: [u64; 4]| r[2] + r[3];
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let report = call(addr, "GET", "/healthcheck/slos/db", "").await;
    let want = bad_of(db.replay("primary-db", 0, i64::MAX).await);
    assert!(want >= 2_500, "{want}");
    assert_eq!(report["badMs"], want, "{report}");
    let since = report["alerts"][0]["since"].clone();

    // Stopped (SIGTERM), then killed (SIGKILL): the figures are back, the page still fires
    // since when it started, and it is not told again.
    let told = slo_notices(&got).len();
    for kill in [false, true] {
        stop(child, kill).await;
        (child, addr) = launch(&db.target(), &args).await;
        let report = call(addr, "GET", "/healthcheck/slos/db", "").await;
        let want = bad_of(db.replay("primary-db", 0, i64::MAX).await);
        assert_eq!(
            report["badMs"], want,
            "after a stop (kill: {kill}): {report}"
        );
        assert_eq!(report["alerts"][0]["since"], since, "{report}");
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(
            slo_notices(&got).len(),
            told,
            "told again: {:?}",
            slo_notices(&got)
        );
    }

    // An exclusion from before the start to now, once the minute of the outage's end is
    // over (an exclusion is whole minutes, its end rounded down): no bad time is left.
    let recovered = recovered
        .duration_trunc(chrono::Duration::minutes(1))
        .unwrap();
    while Utc::now() < recovered + chrono::Duration::minutes(1) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let now = Utc::now();
    let body = format!(
        r#"{{"dependency": "primary-db", "from": "{}", "to": "{}", "reason": "planned failover"}}"#,
        (began - chrono::Duration::minutes(1)).to_rfc3339(),
        now.to_rfc3339()
    );
    let (code, made) = common::request(addr, "POST", "/admin/exclusions", Some(TOKEN), &body).await;
    assert_eq!(code, 201, "{made}");
    let made: Value = serde_json::from_str(&made).unwrap();
    let report = call(addr, "GET", "/healthcheck/slos/db", "").await;
    let left = bad_of(db.replay("primary-db", ms(&made, "to"), i64::MAX).await);
    assert_eq!(report["badMs"], left, "{report}");
    assert_eq!(left, 0, "the outage is excluded: {report}");
    assert!(report["observedMs"].as_u64().unwrap() < 60_000, "{report}");

    // The SLA report as CSV, read by Python's csv module, agrees with the JSON.
    // Over a window that is over (to the exclusion's end), so that both reads agree.
    let path = format!(
        "/admin/reports/sla?from={}&to={}",
        (began - chrono::Duration::minutes(2)).format("%Y-%m-%dT%H:%M:%SZ"),
        made["to"].as_str().unwrap()
    );
    let json = call(addr, "GET", &path, "").await;
    let (code, csv) =
        common::request(addr, "GET", &format!("{path}&format=csv"), Some(TOKEN), "").await;
    assert_eq!(code, 200);
    let mut python = Command::new("python3")
        .args([
            "-c",
            "import csv, json, sys\nrows = list(csv.DictReader(sys.stdin, strict=True))\nprint(json.dumps(rows))",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    std::io::Write::write_all(python.stdin.as_mut().unwrap(), csv.as_bytes()).unwrap();
    let out = python.wait_with_output().unwrap();
    assert!(out.status.success());
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mine = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), mine.len(), "{rows:?}");
    for (theirs, ours) in rows.iter().zip(mine) {
        assert_eq!(theirs["kind"], ours["kind"]);
        assert_eq!(theirs["name"], ours["name"]);
        for field in ["observedMs", "badMs", "incidentsOpened", "excludedMs"] {
            assert_eq!(
                theirs[field].as_str().unwrap().parse::<u64>().unwrap(),
                ours[field].as_u64().unwrap(),
                "{field} of {}",
                ours["name"]
            );
        }
    }
    let objective = rows.iter().find(|r| r["kind"] == "objective").unwrap();
    assert_eq!(objective["target"], "dependency:primary-db");
    assert_eq!(objective["objective"], "0.99");
    stop(child, false).await;
}

/// Whether `addr` mutes `dependency` now, and with what reason.
async fn muted(addr: SocketAddr, dependency: &str) -> Option<String> {
    let mutes = call(addr, "GET", "/admin/mutes", "").await;
    mutes["mutes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["dependency"] == dependency)
        .map(|m| m["reason"].as_str().unwrap_or_default().to_owned())
}

/// Waits, up to 15 s (three of the fleet's beats), for `addr`'s mute of `dependency` to be
/// `want`.
async fn until_muted(addr: SocketAddr, dependency: &str, want: Option<&str>, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let now = muted(addr, dependency).await;
        if now.as_deref() == want {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {now:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Two quickstarts on one PostgreSQL history: a maintenance announced through either mutes
/// its dependency on both, and calling it off through the other lifts it on both; an
/// operator's mute and its end hold on both alike. An act is the fleet's, not the instance's
/// that took the request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_one_postgres_honour_acts_taken_through_either() {
    let db = Db::Postgres(servers::PostgresServer::start());
    let (mut one, a) = launch(&db.target(), &["--instance-id", "q-1"]).await;
    let (mut two, b) = launch(&db.target(), &["--instance-id", "q-2"]).await;
    let now = Utc::now();
    let iso = |t: DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let maintenance = serde_json::json!({
        "title": "Database upgrade",
        "message": "Checkout may be slow.",
        "dependencies": ["primary-db"],
        "start": iso(now),
        "end": iso(now + chrono::Duration::minutes(30)),
    });
    let (code, body) = common::request(
        a,
        "POST",
        "/admin/maintenances",
        Some(TOKEN),
        &maintenance.to_string(),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let announced: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        muted(a, "primary-db").await.as_deref(),
        Some("Database upgrade")
    );
    until_muted(
        b,
        "primary-db",
        Some("Database upgrade"),
        "the other instance muted",
    )
    .await;
    // Called off through the other: lifted on both.
    let id = announced["id"].as_i64().unwrap();
    call(b, "DELETE", &format!("/admin/maintenances/{id}"), "").await;
    assert_eq!(muted(b, "primary-db").await, None);
    until_muted(
        a,
        "primary-db",
        None,
        "called off on the instance that announced it",
    )
    .await;

    // An operator's mute through the second, ended through the first.
    call(
        b,
        "PUT",
        "/admin/mutes/search",
        r#"{"ttlSeconds":3600,"reason":"reindex"}"#,
    )
    .await;
    until_muted(a, "search", Some("reindex"), "muted on the other").await;
    call(a, "DELETE", "/admin/mutes/search", "").await;
    until_muted(b, "search", None, "unmuted on the other").await;
    // It stays ended: neither takes the other's copy back.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(muted(a, "search").await, None);
    assert_eq!(muted(b, "search").await, None);
    for child in [&mut one, &mut two] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
