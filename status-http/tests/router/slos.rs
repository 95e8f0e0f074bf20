//! Service level objectives over HTTP: `/healthcheck/slos`, one by name, a JSON 404 for an
//! unknown one, the public view's selection, and their gauges in `/metrics`.

use std::time::Duration;

use axum::http::{Method, StatusCode};
use status_core::{CheckStatus, Group};
use status_history::History;

use crate::support::{admin, fixture, get, Fixture, TOKEN};

fn history(f: &Fixture) -> History {
    f.registry
        .add_group(Group::builder("core").dependency("db").build().unwrap())
        .unwrap();
    let objectives = [
        "db=dependency:db@99/30d",
        "core=group:core@99.9/1d",
        "all=system@95/1d",
    ]
    .map(|o| o.parse().unwrap());
    status_history::objective::check(&objectives, &f.registry).unwrap();
    let history = History::in_memory().objectives(objectives).open();
    history.attach(&f.registry);
    history
}

/// Ten minutes OK, then `down` of OUTAGE, checked every second.
async fn outage(f: &Fixture, down: u64) {
    for _ in 0..600 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        f.registry.refresh_all().await;
    }
    f.set(&f.db, CheckStatus::Outage).await;
    for _ in 0..down {
        tokio::time::sleep(Duration::from_secs(1)).await;
        f.registry.refresh_all().await;
    }
}

#[tokio::test(start_paused = true)]
async fn each_objective_reports_its_budget_burn_rates_and_alerts() {
    let f = fixture().await;
    let history = history(&f);
    history.restored().await;
    let app = status_http::Routes::new(&f.registry)
        .admin_token(TOKEN)
        .history(history.clone())
        .build();
    outage(&f, 120).await;

    let a = get(&app, "/healthcheck/slos").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let all = a.json()["slos"].as_array().unwrap().clone();
    let names: Vec<&str> = all.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["db", "core", "all"]);

    let a = get(&app, "/healthcheck/slos/db").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let db = a.json();
    assert_eq!(db["target"], "dependency:db");
    assert_eq!(db["objective"], 0.99);
    assert_eq!(db["window"], "30d");
    assert_eq!(db["badFrom"], "MAJOR");
    // Two minutes of outage in about twelve observed.
    assert_eq!(db["badMs"], 120_000, "{db}");
    let observed = db["observedMs"].as_u64().unwrap();
    assert!((719_000..=721_000).contains(&observed), "{db}");
    assert_eq!(db["budget"]["spentMs"], 120_000);
    assert_eq!(db["budget"]["allowedMs"], observed / 100);
    let remaining = db["budget"]["remaining"].as_f64().unwrap();
    assert!(remaining < -15.0, "overspent: {db}");
    // 5m: two of five minutes bad, over 1 %: a burn of 40.
    let five = db["burnRates"]["5m"].as_f64().unwrap();
    assert!((five - 40.0).abs() < 0.1, "{db}");
    let alerts = db["alerts"].as_array().unwrap();
    assert_eq!(alerts.len(), 3);
    assert_eq!(
        (
            &alerts[0]["severity"],
            &alerts[0]["long"],
            &alerts[0]["short"]
        ),
        (&"page".into(), &"1h".into(), &"5m".into())
    );
    assert_eq!(alerts[0]["factor"], 14.4);
    assert_eq!(alerts[0]["firing"], true, "{db}");
    assert!(alerts[0]["since"].as_str().unwrap().ends_with('Z'));
    assert_eq!(alerts[2]["severity"], "ticket");

    let a = get(&app, "/healthcheck/slos/nope").await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert!(
        a.json()["error"].as_str().unwrap().contains("nope"),
        "{}",
        a.body
    );

    // The gauges, from the last reports read.
    let m = get(&app, "/metrics").await.body;
    let sample = |series: &str| -> f64 {
        let line = m
            .lines()
            .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
            .unwrap_or_else(|| panic!("no {series} in\n{m}"));
        line[series.len()..].trim().parse().unwrap()
    };
    assert!((sample("status_slo_burn_rate{slo=\"db\",window=\"5m\"}") - 40.0).abs() < 0.1);
    assert_eq!(
        sample("status_slo_alert_firing{slo=\"db\",severity=\"page\"}"),
        1.0
    );
    assert_eq!(
        sample("status_slo_alert_firing{slo=\"all\",severity=\"page\"}"),
        0.0
    );
    assert!(sample("status_slo_error_budget_remaining_ratio{slo=\"core\"}") < 0.0);
}

#[tokio::test(start_paused = true)]
async fn the_public_view_lists_only_objectives_on_public_targets() {
    let f = fixture().await;
    let history = history(&f);
    history.restored().await;
    let app = status_http::Routes::new(&f.registry)
        .history(history)
        .public_view(true)
        .build();
    let a = get(&app, "/healthcheck/slos").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let names: Vec<String> = a.json()["slos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        names,
        ["all"],
        "db is not tagged public, core not on the page"
    );
    assert_eq!(
        get(&app, "/healthcheck/slos/db").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get(&app, "/healthcheck/slos/all").await.status,
        StatusCode::OK
    );
}

#[tokio::test(start_paused = true)]
async fn without_a_history_the_objectives_are_a_json_404() {
    let f = fixture().await;
    let a = get(&f.app(), "/healthcheck/slos").await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert!(a.json()["error"].is_string(), "{}", a.body);
}

#[tokio::test(start_paused = true)]
async fn an_exclusion_is_made_listed_and_removed_by_an_operator_and_refusals_keep_nothing() {
    let f = fixture().await;
    let history = history(&f);
    history.restored().await;
    let app = status_http::Routes::new(&f.registry)
        .admin_token(TOKEN)
        .history(history.clone())
        .build();
    outage(&f, 120).await;
    let start = history.now() - chrono::Duration::minutes(3);
    let end = history.now();
    let iso = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339();
    let body = |target: &str, from: &str, to: &str| {
        format!(
            r#"{{{target}, "from": "{from}", "to": "{to}", "reason": "planned failover", "actor": "alice"}}"#
        )
    };
    let post = async |b: String, token: Option<&str>| {
        admin(&app, Method::POST, "/admin/exclusions", token, b).await
    };
    let ok = body(r#""dependency": "db""#, &iso(start), &iso(end));

    // Refusals first: each a JSON error, and nothing kept.
    for (b, token, code) in [
        (ok.clone(), None, StatusCode::UNAUTHORIZED),
        (
            body(r#""dependency": "nope""#, &iso(start), &iso(end)),
            Some(TOKEN),
            StatusCode::NOT_FOUND,
        ),
        (
            body(r#""group": "nope""#, &iso(start), &iso(end)),
            Some(TOKEN),
            StatusCode::NOT_FOUND,
        ),
        (
            body(
                r#""dependency": "db", "group": "core""#,
                &iso(start),
                &iso(end),
            ),
            Some(TOKEN),
            StatusCode::BAD_REQUEST,
        ),
        (
            body(r#""dependency": "db""#, &iso(end), &iso(start)),
            Some(TOKEN),
            StatusCode::BAD_REQUEST,
        ),
        (
            body(
                r#""dependency": "db""#,
                &iso(start),
                &iso(history.now() + chrono::Duration::hours(1)),
            ),
            Some(TOKEN),
            StatusCode::BAD_REQUEST,
        ),
        (
            body(
                r#""dependency": "db""#,
                "2020-01-01T00:00:00Z",
                "2020-01-02T00:00:00Z",
            ),
            Some(TOKEN),
            StatusCode::BAD_REQUEST,
        ),
        (
            body(r#""dependency": "db""#, "yesterday", &iso(end)),
            Some(TOKEN),
            StatusCode::BAD_REQUEST,
        ),
        (
            "{\"dependency\": \"db\"".to_owned(),
            Some(TOKEN),
            StatusCode::BAD_REQUEST,
        ),
        (
            ok.replace("alice", "alice\", \"extra\": \"1"),
            Some(TOKEN),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let a = post(b.clone(), token).await;
        assert_eq!(a.status, code, "{b}: {}", a.body);
        assert!(a.json()["error"].is_string(), "{}", a.body);
    }
    assert!(
        history.exclusions().await.unwrap().is_empty(),
        "nothing kept"
    );

    let a = post(ok.clone(), Some(TOKEN)).await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    let made = a.json();
    assert_eq!(made["dependency"], "db");
    assert_eq!(made["actor"], "admin");
    // Whole minutes: the last three, the outage's two among them.
    assert!(made["from"].as_str().unwrap().ends_with(":00Z"), "{made}");
    assert_eq!(made["excludedMs"], 180_000, "{made}");
    let id = made["id"].as_i64().unwrap();
    let db = get(&app, "/healthcheck/slos/db").await.json();
    assert_eq!(db["badMs"], 0, "{db}");

    let again = post(ok, Some(TOKEN)).await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.body);

    let list = admin(&app, Method::GET, "/admin/exclusions", Some(TOKEN), "").await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(list.json()["exclusions"][0]["id"], id);
    assert_eq!(
        admin(&app, Method::GET, "/admin/exclusions", None, "")
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );

    let path = format!("/admin/exclusions/{id}");
    let gone = admin(&app, Method::DELETE, &path, Some(TOKEN), "").await;
    assert_eq!(gone.status, StatusCode::OK, "{}", gone.body);
    assert_eq!(
        admin(&app, Method::DELETE, &path, Some(TOKEN), "")
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        admin(&app, Method::DELETE, "/admin/exclusions/x", Some(TOKEN), "")
            .await
            .status,
        StatusCode::BAD_REQUEST
    );
    let db = get(&app, "/healthcheck/slos/db").await.json();
    assert_eq!(db["badMs"], 120_000, "counted again: {db}");

    // Both acts are in the audit trail, with who and what.
    let trail = admin(&app, Method::GET, "/admin/audit", Some(TOKEN), "")
        .await
        .body;
    assert!(
        trail.contains("POST /admin/exclusions") && trail.contains(r#""actor":"admin""#),
        "{trail}"
    );
    assert!(
        trail.contains(&format!("DELETE /admin/exclusions/{id}")),
        "{trail}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_sla_report_has_a_row_per_dependency_group_and_objective_as_json_or_csv() {
    let f = fixture().await;
    let history = history(&f);
    history.restored().await;
    let app = status_http::Routes::new(&f.registry)
        .admin_token(TOKEN)
        .history(history.clone())
        .build();
    outage(&f, 120).await;
    let a = admin(&app, Method::GET, "/admin/reports/sla", Some(TOKEN), "").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let rows = a.json()["rows"].as_array().unwrap().clone();
    let row = |kind: &str, name: &str| {
        rows.iter()
            .find(|r| r["kind"] == kind && r["name"] == name)
            .unwrap_or_else(|| panic!("no {kind} {name} in {rows:?}"))
            .clone()
    };
    let db = row("dependency", "db");
    assert_eq!(db["badMs"], 120_000, "{db}");
    let observed = db["observedMs"].as_u64().unwrap();
    assert!((719_000..=721_000).contains(&observed), "{db}");
    let good = db["goodShare"].as_f64().unwrap();
    assert!((good - (observed - 120_000) as f64 / observed as f64).abs() < 1e-12);
    assert_eq!(row("group", "core")["badMs"], 120_000);
    let objective = row("objective", "db");
    assert_eq!(objective["target"], "dependency:db");
    assert_eq!(objective["met"], false, "{objective}");
    assert_eq!(row("objective", "all")["target"], "system");
    assert_eq!(row("dependency", "cache")["badMs"], 0);

    let csv = admin(
        &app,
        Method::GET,
        "/admin/reports/sla?format=csv",
        Some(TOKEN),
        "",
    )
    .await;
    assert_eq!(csv.status, StatusCode::OK);
    assert!(csv.header("content-type").starts_with("text/csv"));
    assert!(csv
        .header("content-disposition")
        .starts_with("attachment; filename=\"sla-"));
    let lines: Vec<&str> = csv.body.split("\r\n").collect();
    assert!(lines[0].starts_with("kind,name,target,objective,from,to,observedMs,badMs"));
    assert_eq!(
        lines.len(),
        rows.len() + 2,
        "a header, a line a row, a last CRLF"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("objective,db,dependency:db,0.99,")),
        "{}",
        csv.body
    );

    for bad in [
        "/admin/reports/sla?format=xml",
        "/admin/reports/sla?from=yesterday",
        "/admin/reports/sla?from=2030-01-01T00:00:00Z",
        "/admin/reports/sla?window=1d",
    ] {
        let a = admin(&app, Method::GET, bad, Some(TOKEN), "").await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{bad}: {}", a.body);
    }
    assert_eq!(
        admin(&app, Method::GET, "/admin/reports/sla", None, "")
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test(start_paused = true)]
async fn the_history_page_shows_each_objective_s_budget_and_burn_and_the_sla_report_prints() {
    let f = fixture().await;
    let history = history(&f);
    history.restored().await;
    let app = status_http::Routes::new(&f.registry)
        .admin_token(TOKEN)
        .history(history.clone())
        .build();
    outage(&f, 120).await;
    let page = get(&app, "/status/history").await;
    assert_eq!(page.status, StatusCode::OK);
    let body = page.body;
    assert!(body.contains("data-slo=\"db\""), "{body}");
    assert!(body.contains("dependency:db · 99 % over 30d"), "{body}");
    assert!(
        body.contains("<span class=\"alert page\">page</span>"),
        "{body}"
    );
    // Overspent: the meter at 0, the figure said.
    assert!(
        body.contains(
            "<meter min=\"0\" max=\"1\" low=\"0.25\" high=\"0.75\" optimum=\"1\" value=\"0\">"
        ),
        "{body}"
    );
    // A bar per window, the 5m one titled with its rate (two of five minutes bad: 40).
    assert_eq!(body.matches("<rect class=\"bar").count(), 3 * 6, "{body}");
    assert!(body.contains("<title>5m: 40.00</title>"), "{body}");

    let sla = get(&app, "/status/sla").await;
    assert_eq!(sla.status, StatusCode::OK, "{}", sla.body);
    assert!(sla.header("content-type").starts_with("text/html"));
    assert!(
        sla.body.contains("href=\"assets/dashboard.css\""),
        "{}",
        sla.body
    );
    assert!(body.contains("<a href=\"sla\">SLA report"), "{body}");
    let css = get(&app, "/status/assets/dashboard.css").await;
    assert_eq!(css.status, StatusCode::OK);
    assert!(css.body.contains("@media print"));
    assert!(
        sla.body
            .contains("<td>objective</td><td>db</td><td>dependency:db</td><td>99 %</td>"),
        "{}",
        sla.body
    );
    assert!(sla.body.contains("<td>missed</td>"), "{}", sla.body);
    assert_eq!(
        get(&app, "/status/sla?from=nope").await.status,
        StatusCode::BAD_REQUEST
    );
}
