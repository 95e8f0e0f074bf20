//! The history routes: uptime over a window for a dependency, a group and the system, the
//! monthly report, and the persistent audit trail; each bad window a JSON 400.

use std::time::Duration;

use axum::http::{Method, StatusCode};
use status_core::{CheckStatus, Group};
use status_history::History;

use crate::support::{admin, fixture, get, Fixture, TOKEN};

async fn app_with_history(f: &Fixture) -> (axum::Router, History) {
    f.registry
        .add_group(Group::builder("core").dependency("db").build().unwrap())
        .unwrap();
    let history = History::in_memory().open();
    history.attach(&f.registry);
    let app = status_http::Routes::new(&f.registry)
        .admin_token(TOKEN)
        .history(history.clone())
        .build();
    (app, history)
}

#[tokio::test(start_paused = true)]
async fn uptime_of_a_dependency_a_group_and_the_system_over_a_window() {
    let f = fixture().await;
    let (app, history) = app_with_history(&f).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    f.set(&f.db, CheckStatus::Outage).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    f.set(&f.db, CheckStatus::Ok).await;
    tokio::time::sleep(Duration::from_secs(20)).await;
    history.flush().await;

    let a = get(&app, "/healthcheck/dependencies/db/uptime").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let body = a.json();
    assert_eq!(body["kind"], "dependency");
    assert_eq!(body["resolution"], "minute");
    assert_eq!(body["spentMs"]["outage"], 10_000, "{body}");
    assert_eq!(body["observedMs"], 60_000, "{body}");
    let uptime = body["uptime"].as_f64().unwrap();
    assert!((uptime - 50.0 / 60.0).abs() < 1e-9, "{uptime}");
    assert_eq!(body["weights"]["major"], 0.5);

    for (path, kind) in [
        ("/healthcheck/groups/core/uptime", "group"),
        ("/healthcheck/uptime", "system"),
    ] {
        let a = get(&app, path).await;
        assert_eq!(a.status, StatusCode::OK, "{path}: {}", a.body);
        assert_eq!(a.json()["kind"], kind);
        assert_eq!(a.json()["spentMs"]["outage"], 10_000, "{path}: {}", a.body);
    }

    // A window asked for explicitly, read from minutes.
    let a = get(
        &app,
        "/healthcheck/dependencies/db/uptime?from=2026-01-01T00:00:00Z&to=2026-01-01T00:00:30Z",
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.json()["from"], "2026-01-01T00:00:00Z");
    assert_eq!(a.json()["to"], "2026-01-01T00:01:00Z");

    let month = get(&app, "/healthcheck/report?month=2026-01").await;
    assert_eq!(month.status, StatusCode::OK, "{}", month.body);
    let series = month.json()["series"].as_array().unwrap().clone();
    let names: Vec<_> = series
        .iter()
        .map(|s| {
            format!(
                "{}:{}",
                s["kind"].as_str().unwrap(),
                s["name"].as_str().unwrap()
            )
        })
        .collect();
    assert!(
        names.contains(&"system:".to_owned())
            && names.contains(&"group:core".to_owned())
            && names.contains(&"dependency:db".to_owned()),
        "{names:?}"
    );
    assert_eq!(series[0]["resolution"], "day");
}

#[tokio::test(start_paused = true)]
async fn a_bad_window_is_a_json_400_and_an_unknown_name_a_404() {
    let f = fixture().await;
    let (app, _history) = app_with_history(&f).await;
    for query in [
        "from=yesterday",
        "from=2026-01-01T00:00:10Z&to=2026-01-01T00:00:00Z",
        "from=2027-01-01T00:00:00Z",
        "from=2020-01-01T00:00:00Z",
        "since=2026-01-01T00:00:00Z",
        "from=2026-01-01T00:00:00Z&from=2026-01-01T00:00:00Z",
        "from=%FF",
    ] {
        let a = get(
            &app,
            &format!("/healthcheck/dependencies/db/uptime?{query}"),
        )
        .await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{query}: {}", a.body);
        assert!(a.json()["error"].as_str().is_some(), "{query}: {}", a.body);
    }
    for month in ["2026-13", "26-01", "2026-1", "2027-01", "2020-01", "x"] {
        let a = get(&app, &format!("/healthcheck/report?month={month}")).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{month}: {}", a.body);
    }
    assert_eq!(
        get(&app, "/healthcheck/dependencies/nope/uptime")
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get(&app, "/healthcheck/groups/nope/uptime").await.status,
        StatusCode::NOT_FOUND
    );
    // Without a history, the routes say so.
    let bare = f.app();
    let a = get(&bare, "/healthcheck/uptime").await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert!(a.body.contains("no history"), "{}", a.body);
}

#[tokio::test(start_paused = true)]
async fn admin_calls_are_kept_with_who_and_why_and_refusals_are_not() {
    let f = fixture().await;
    let (app, history) = app_with_history(&f).await;
    let drain = r#"{"ttlSeconds": 60, "reason": "deploy 42", "actor": "alice"}"#;
    assert_eq!(
        admin(&app, Method::PUT, "/admin/drain", Some(TOKEN), drain)
            .await
            .status,
        StatusCode::OK
    );
    for _ in 0..20 {
        let a = admin(&app, Method::PUT, "/admin/drain", Some("wrong"), drain).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    }
    history.flush().await;
    assert_eq!(
        admin(&app, Method::GET, "/admin/history/audit", None, "")
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    let page = admin(
        &app,
        Method::GET,
        "/admin/history/audit?limit=50",
        Some(TOKEN),
        "",
    )
    .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let records = page.json()["entries"].as_array().unwrap().clone();
    let calls: Vec<_> = records
        .iter()
        .filter(|r| r["action"] == "PUT /admin/drain")
        .collect();
    assert_eq!(calls.len(), 1, "{records:?}");
    let call = calls[0];
    assert_eq!(
        (
            call["actor"].as_str(),
            call["reason"].as_str(),
            call["outcome"].as_str()
        ),
        (Some("admin"), Some("deploy 42"), Some("200"))
    );
    // The drain is a hold, audited from the registry too.
    assert!(
        records
            .iter()
            .any(|r| r["action"] == "hold" && r["outcome"] == "taken"),
        "{records:?}"
    );
    // The two routes answer the same trail, and reading it adds nothing to it.
    let again = admin(&app, Method::GET, "/admin/audit?limit=50", Some(TOKEN), "").await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
    assert_eq!(again.json()["entries"], page.json()["entries"]);
    assert_eq!(again.json()["kept"], "history");
    let bad = admin(
        &app,
        Method::GET,
        "/admin/history/audit?limit=0",
        Some(TOKEN),
        "",
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}

/// One trail across a restart: what was done before it is at `/admin/audit` after it, in
/// the shape the process's own trail has; reads are counted, never recorded; an operator's
/// release of a drain names the operator.
#[tokio::test(start_paused = true)]
async fn the_audit_trail_survives_a_restart_and_records_acts_not_reads() {
    let dir = std::env::temp_dir().join(format!("status-http-audit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("history.db");
    let drain = r#"{"ttlSeconds": 60, "reason": "deploy 42", "actor": "alice"}"#;
    {
        let f = fixture().await;
        let history = History::sqlite(&path).open();
        history.attach(&f.registry);
        let app = status_http::Routes::new(&f.registry)
            .admin_token(TOKEN)
            .history(history.clone())
            .build();
        admin(&app, Method::PUT, "/admin/drain", Some(TOKEN), drain).await;
        let undrain = admin(
            &app,
            Method::DELETE,
            "/admin/drain",
            Some(TOKEN),
            r#"{"actor":"bob"}"#,
        )
        .await;
        assert_eq!(undrain.status, StatusCode::OK, "{}", undrain.body);
        for _ in 0..3 {
            let read = admin(&app, Method::GET, "/admin/audit", Some(TOKEN), "").await;
            assert_eq!(read.status, StatusCode::OK);
        }
        let trail = admin(&app, Method::GET, "/admin/audit", Some(TOKEN), "")
            .await
            .json();
        let actions: Vec<&str> = trail["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["action"].as_str().unwrap())
            .collect();
        assert!(
            !actions.contains(&"GET /admin/audit"),
            "reads are not acts: {actions:?}"
        );
        let reads = trail["reads"].as_array().unwrap();
        assert_eq!(reads[0]["route"], "GET /admin/audit", "{reads:?}");
        assert_eq!(
            reads[0]["count"], 3,
            "the fourth read is this one: {reads:?}"
        );
        let release = trail["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["action"] == "hold" && e["outcome"] == "released")
            .cloned()
            .unwrap_or_else(|| panic!("no release in {trail}"));
        assert_eq!(release["actor"], "admin", "{release}");
        history.flush().await;
    }
    // A new process on the same file.
    let f = fixture().await;
    let history = History::sqlite(&path).open();
    history.attach(&f.registry);
    let _ = history.restored().await;
    let app = status_http::Routes::new(&f.registry)
        .admin_token(TOKEN)
        .history(history.clone())
        .build();
    let trail = admin(&app, Method::GET, "/admin/audit", Some(TOKEN), "")
        .await
        .json();
    let entries = trail["entries"].as_array().unwrap();
    let first = entries
        .iter()
        .find(|e| e["action"] == "PUT /admin/drain")
        .unwrap_or_else(|| panic!("the drain before the restart is gone: {trail}"));
    assert_eq!(
        (
            first["actor"].as_str(),
            first["method"].as_str(),
            first["status"].as_u64()
        ),
        (Some("admin"), Some("PUT"), Some(200))
    );
    assert!(first["at"].as_str().unwrap().ends_with('Z'), "{first}");
    assert!(first["id"].as_i64().is_some(), "{first}");
    // The same shape as the trail of a process without history.
    let bare = f.app();
    admin(&bare, Method::PUT, "/admin/drain", Some(TOKEN), drain).await;
    let kept = admin(&bare, Method::GET, "/admin/audit", Some(TOKEN), "")
        .await
        .json();
    assert_eq!(kept["kept"], "process");
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&kept["entries"][0]), keys(first));
    assert_eq!(keys(&kept), keys(&trail));
}

#[tokio::test(start_paused = true)]
async fn the_history_pages_render_tiles_a_chart_and_transitions_without_javascript() {
    let f = fixture().await;
    let (app, history) = app_with_history(&f).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    f.set(&f.db, CheckStatus::Outage).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    f.set(&f.db, CheckStatus::Ok).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    history.flush().await;

    let page = get(&app, "/status/history").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page
        .header("content-security-policy")
        .contains("default-src 'none'"));
    for series in [
        "system:system",
        "group:core",
        "dependency:db",
        "dependency:search",
        "dependency:cache",
    ] {
        assert!(
            page.body.contains(&format!("data-series=\"{series}\"")),
            "{series}"
        );
    }
    // 90 tiles a row; today's for db and the system is an outage, search's OK.
    let row = |series: &str| {
        let at = page
            .body
            .find(&format!("data-series=\"{series}\""))
            .unwrap();
        let rest = &page.body[at..];
        rest[..rest.find("</tr>").unwrap()].to_owned()
    };
    for (series, today) in [
        ("dependency:db", "outage"),
        ("system:system", "outage"),
        ("dependency:search", "ok"),
    ] {
        let r = row(series);
        assert_eq!(r.matches("<li ").count(), 90, "{series}");
        let last = &r[r.rfind("<li ").unwrap()..];
        assert!(
            last.contains(&format!("class=\"{today}\"")),
            "{series}: {last}"
        );
        assert!(last.contains("2026-01-01: "), "{last}");
    }
    assert!(row("dependency:db").contains("history/db"));
    // The past days are kept between two views; today's tile is read every time.
    f.set(&f.search, CheckStatus::Outage).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    history.flush().await;
    let again = get(&app, "/status/history").await;
    let at = again
        .body
        .find("data-series=\"dependency:search\"")
        .unwrap();
    let search = &again.body[at..];
    let search = &search[..search.find("</tr>").unwrap()];
    let last = &search[search.rfind("<li ").unwrap()..];
    assert!(last.contains("class=\"outage\""), "{last}");
    assert_eq!(
        get(&app, "/status/history?days=0").await.status,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        get(&app, "/status/history?limit=5000").await.status,
        StatusCode::BAD_REQUEST
    );
    let one = get(&app, "/status/history?limit=1&days=7").await;
    assert_eq!(one.body.matches("data-series=\"dependency:").count(), 1);
    assert!(one.body.contains("id=\"history-next\""), "a next page");

    let dep = get(&app, "/status/history/db").await;
    assert_eq!(dep.status, StatusCode::OK, "{}", dep.body);
    assert!(dep.body.contains("says OUTAGE"), "the transition's message");
    assert!(
        dep.body.contains("<polyline class=\"series-0\" points=\""),
        "the duration chart"
    );
    assert!(dep.body.contains("Uptime 1 h"));
    assert_eq!(
        get(&app, "/status/history/nope").await.status,
        StatusCode::NOT_FOUND
    );

    // The public view shows no message.
    let public = status_http::Routes::new(&f.registry)
        .public_view(true)
        .history(history.clone())
        .build();
    let dep = get(&public, "/status/history/db").await;
    assert_eq!(dep.status, StatusCode::OK);
    assert!(!dep.body.contains("says OUTAGE"), "{}", dep.body);
    // The dashboard links to it.
    assert!(get(&app, "/status")
        .await
        .body
        .contains("id=\"history-link\""));
    assert!(!get(&f.app(), "/status")
        .await
        .body
        .contains("id=\"history-link\""));
}

#[tokio::test(start_paused = true)]
async fn metrics_count_what_the_store_wrote_dropped_and_holds_back() {
    let f = fixture().await;
    let (app, history) = app_with_history(&f).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    history.flush().await;
    let metrics = get(&app, "/metrics").await;
    assert_eq!(metrics.status, StatusCode::OK);
    let value = |name: &str| -> f64 {
        let line = metrics
            .body
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} missing:\n{}", metrics.body));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert!(value("status_history_rows_written_total") > 0.0);
    assert_eq!(value("status_history_dropped_total"), 0.0);
    assert_eq!(value("status_history_write_failures_total"), 0.0);
    assert_eq!(value("status_history_backlog_rows"), 0.0);
    // Without a history there are none.
    assert!(!get(&f.app(), "/metrics")
        .await
        .body
        .contains("status_history_"));
}

#[tokio::test(start_paused = true)]
async fn reads_include_what_is_recorded_and_not_yet_written() {
    let f = fixture().await;
    // A history that writes once an hour: everything below is read from the running
    // process, not from the store.
    let history = History::in_memory()
        .flush_every(Duration::from_secs(3600))
        .aggregate_every(Duration::from_secs(3600))
        .open();
    history.attach(&f.registry);
    let app = status_http::Routes::new(&f.registry)
        .history(history.clone())
        .build();
    tokio::time::sleep(Duration::from_secs(5)).await;
    f.set(&f.db, CheckStatus::Outage).await;
    tokio::time::sleep(Duration::from_secs(9)).await;

    let a = get(&app, "/healthcheck/dependencies/db/uptime").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.json()["spentMs"]["outage"], 9_000, "{}", a.body);
    let t = get(&app, "/healthcheck/dependencies/db/transitions").await;
    assert_eq!(t.status, StatusCode::OK, "{}", t.body);
    let list = t.json()["transitions"].as_array().unwrap().clone();
    assert_eq!(list.len(), 2, "{}", t.body);
    assert_eq!(
        (list[0]["from"].as_str(), list[0]["to"].as_str()),
        (Some("OK"), Some("OUTAGE"))
    );
    assert_eq!(history.stats().written, 0, "nothing was written yet");
}

#[tokio::test(start_paused = true)]
async fn transitions_are_data_newest_first_paged_and_public_where_asked() {
    let f = fixture().await;
    let (app, history) = app_with_history(&f).await;
    // Seven changes of db, a second apart: OK, then OUTAGE and OK in turn.
    for i in 0..6 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let level = if i % 2 == 0 {
            CheckStatus::Outage
        } else {
            CheckStatus::Ok
        };
        f.set(&f.db, level).await;
    }
    history.flush().await;

    let a = get(&app, "/healthcheck/dependencies/db/transitions").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let body = a.json();
    assert_eq!(
        (body["kind"].as_str(), body["name"].as_str()),
        (Some("dependency"), Some("db"))
    );
    let all = body["transitions"].as_array().unwrap().clone();
    assert_eq!(all.len(), 7, "{body}");
    assert_eq!(body["nextTo"], serde_json::Value::Null);
    assert_eq!(
        all[6]["from"],
        serde_json::Value::Null,
        "the first of the run"
    );
    assert_eq!(all[0]["to"], "OK");
    assert_eq!(all[1]["to"], "OUTAGE");
    assert_eq!(all[1]["message"], "says OUTAGE");
    let times: Vec<&str> = all.iter().map(|t| t["at"].as_str().unwrap()).collect();
    assert!(
        times.windows(2).all(|w| w[0] > w[1]),
        "newest first: {times:?}"
    );
    assert!(
        times[0].ends_with('Z') && times[0].contains('.'),
        "{}",
        times[0]
    );

    // Pages of three, followed by nextTo, give the same seven once each.
    let mut paged = Vec::new();
    let mut path = "/healthcheck/dependencies/db/transitions?limit=3".to_owned();
    loop {
        let page = get(&app, &path).await.json();
        paged.extend(page["transitions"].as_array().unwrap().clone());
        match page["nextTo"].as_str() {
            Some(next) => {
                path = format!("/healthcheck/dependencies/db/transitions?limit=3&to={next}");
            }
            None => break,
        }
    }
    assert_eq!(paged, all);

    // The system and the group follow db (Required, in the group).
    for path in [
        "/healthcheck/transitions",
        "/healthcheck/groups/core/transitions",
    ] {
        let a = get(&app, path).await;
        assert_eq!(a.status, StatusCode::OK, "{path}: {}", a.body);
        assert_eq!(a.json()["transitions"][0]["to"], "OK", "{path}: {}", a.body);
        assert_eq!(
            a.json()["transitions"][1]["to"],
            "OUTAGE",
            "{path}: {}",
            a.body
        );
    }

    // The public view shows a failure's level, not its message.
    let public = status_http::Routes::new(&f.registry)
        .public_view(true)
        .history(history.clone())
        .build();
    let a = get(&public, "/healthcheck/dependencies/db/transitions").await;
    assert_eq!(
        a.json()["transitions"][1]["message"],
        "OUTAGE",
        "{}",
        a.body
    );

    for query in [
        "from=yesterday",
        "from=2026-01-01T00:00:10Z&to=2026-01-01T00:00:00Z",
        "from=2099-01-01T00:00:00Z",
        "limit=0",
        "limit=501",
        "limit=x",
        "since=2026-01-01T00:00:00Z",
    ] {
        let a = get(
            &app,
            &format!("/healthcheck/dependencies/db/transitions?{query}"),
        )
        .await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{query}: {}", a.body);
        assert!(a.json()["error"].as_str().is_some(), "{query}: {}", a.body);
    }
    for path in [
        "/healthcheck/dependencies/nope/transitions",
        "/healthcheck/groups/nope/transitions",
    ] {
        assert_eq!(
            get(&app, path).await.status,
            StatusCode::NOT_FOUND,
            "{path}"
        );
    }
}

/// A history that cannot be read leaves the operator the process's own trail, said so.
#[tokio::test(start_paused = true)]
async fn the_trail_falls_back_to_the_process_while_the_history_cannot_be_read() {
    let f = fixture().await;
    let history = History::sqlite("/nonexistent/status-http-test/history.db").open();
    history.attach(&f.registry);
    let app = status_http::Routes::new(&f.registry)
        .admin_token(TOKEN)
        .history(history)
        .build();
    let drain = r#"{"ttlSeconds": 60, "reason": "deploy", "actor": "alice"}"#;
    admin(&app, Method::PUT, "/admin/drain", Some(TOKEN), drain).await;
    let trail = admin(&app, Method::GET, "/admin/audit", Some(TOKEN), "").await;
    assert_eq!(trail.status, StatusCode::OK, "{}", trail.body);
    let body = trail.json();
    assert_eq!(body["kept"], "process", "{body}");
    assert!(
        body["historyError"].as_str().is_some_and(|e| !e.is_empty()),
        "{body}"
    );
    assert_eq!(body["entries"][0]["actor"], "admin", "{body}");
}

#[tokio::test(start_paused = true)]
async fn an_optional_field_given_as_null_is_refused_and_nothing_is_announced() {
    let f = fixture().await;
    let (app, history) = app_with_history(&f).await;
    let _ = history.restored().await;
    for field in ["actor", "start"] {
        let mut body = serde_json::json!({
            "title": "Database upgrade",
            "message": "Writes pause for a minute.",
            "dependencies": ["db"],
            "end": (chrono::Utc::now() + chrono::Duration::hours(2)).to_rfc3339(),
        });
        body[field] = serde_json::Value::Null;
        let refused = admin(
            &app,
            Method::POST,
            "/admin/maintenances",
            Some(TOKEN),
            body.to_string(),
        )
        .await;
        assert!(
            refused.status.is_client_error(),
            "{field}: {} {}",
            refused.status,
            refused.body
        );
        assert!(
            refused.body.contains(field) || refused.body.contains("null"),
            "{}",
            refused.body
        );
    }
    let listed = admin(&app, Method::GET, "/admin/maintenances", Some(TOKEN), "").await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    assert!(!listed.body.contains("Database upgrade"), "{}", listed.body);
    assert!(
        f.registry.result("db").unwrap().mute().is_none(),
        "nothing muted"
    );
}
