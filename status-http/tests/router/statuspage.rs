//! The public status page, Statuspage v2 JSON, badges and the incidents' admin API: an
//! outage opens one incident, an operator's word shows at once, recovery resolves it after
//! the quiet time, and nothing internal reaches the public routes.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use status_core::{CheckStatus, Dependency, Group};
use status_history::History;
use status_http::{PublicGroup, Publication};

use crate::support::{admin, call, fixture, get, gunzip, raw, Fixture, TOKEN};

async fn app(f: &Fixture) -> (axum::Router, History) {
    f.registry
        .add_group(Group::builder("core").dependency("db").build().unwrap())
        .unwrap();
    f.registry
        .add_group(
            Group::builder("search")
                .dependency("search")
                .build()
                .unwrap(),
        )
        .unwrap();
    let history = History::in_memory()
        .incident_quiet(Duration::from_secs(60))
        .open();
    history.attach(&f.registry);
    let app = status_http::Routes::new(&f.registry)
        .admin_token(TOKEN)
        .history(history.clone())
        .status_page_url("https://status.shop.example")
        .public_group(PublicGroup::new("core", "core"))
        .public_group(PublicGroup::new("search", "search"))
        .incident_publication(Publication::After(Duration::ZERO))
        .build();
    (app, history)
}

/// The routes (admin token [`TOKEN`]) serving a page the test built with `settings`, once
/// the history's store is open.
async fn with_page(
    f: &Fixture,
    history: &History,
    settings: status_http::StatusPageSettings,
) -> axum::Router {
    let page =
        status_http::StatusPage::new(f.registry.clone(), Some(history.clone()), "shop", settings);
    let app = status_http::Routes::new(&f.registry)
        .admin_token(TOKEN)
        .history(history.clone())
        .status_page(page)
        .build();
    while history.subscribers().await.is_err() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    app
}

/// Lets the history see what the registry says, and the page's incidents go stale.
async fn settle(history: &History) {
    tokio::time::sleep(Duration::from_secs(2)).await;
    history.flush().await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
}

#[tokio::test(start_paused = true)]
async fn an_outage_is_one_incident_an_update_shows_at_once_and_recovery_resolves_it() {
    let f = fixture().await;
    let (app, history) = app(&f).await;
    settle(&history).await;
    let a = get(&app, "/api/v2/status.json").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.json()["status"]["indicator"], "none");
    assert_eq!(a.json()["status"]["description"], "All Systems Operational");
    assert_eq!(a.json()["page"]["url"], "https://status.shop.example");
    assert_eq!(a.headers["access-control-allow-origin"], "*");
    let a = get(&app, "/api/v2/components.json").await;
    let components = a.json()["components"].clone();
    let names: Vec<_> = components
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_owned(), c["status"].clone()))
        .collect();
    assert_eq!(
        names,
        [
            ("core".to_owned(), "operational".into()),
            ("search".to_owned(), "operational".into())
        ]
    );
    assert_eq!(
        get(&app, "/api/v2/incidents.json").await.json()["incidents"],
        serde_json::json!([])
    );

    f.set(&f.db, CheckStatus::Outage).await;
    settle(&history).await;
    let a = get(&app, "/api/v2/summary.json").await;
    let summary = a.json();
    assert_eq!(summary["status"]["indicator"], "critical", "{summary}");
    assert_eq!(summary["components"][0]["status"], "major_outage");
    assert_eq!(summary["components"][1]["status"], "operational");
    let incidents = summary["incidents"].as_array().unwrap();
    assert_eq!(incidents.len(), 1, "{summary}");
    let incident = &incidents[0];
    assert_eq!(incident["name"], "Outage of core");
    assert_eq!(incident["status"], "investigating");
    assert_eq!(incident["impact"], "critical");
    assert_eq!(incident["components"][0]["name"], "core");
    assert!(incident["shortlink"]
        .as_str()
        .unwrap()
        .starts_with("https://status.shop.example/status/page#incident-"));
    // The public view: no dependency id, no check message.
    assert!(
        !a.body.contains("\"db\"") && !a.body.contains("says"),
        "{}",
        a.body
    );
    let id = incident["id"].as_str().unwrap().to_owned();

    // Operators see the internals.
    let a = admin(
        &app,
        Method::GET,
        "/admin/incidents",
        Some(TOKEN),
        Body::empty(),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.json()["incidents"][0]["roots"], serde_json::json!(["db"]));
    assert_eq!(a.json()["incidents"][0]["affected"]["db"], "OUTAGE");

    // Malformed updates change nothing.
    let uri = format!("/admin/incidents/{id}/updates");
    for (body, code) in [
        ("{", StatusCode::BAD_REQUEST),
        (
            r#"{"status":"fixed","message":"x"}"#,
            StatusCode::BAD_REQUEST,
        ),
        (
            r#"{"status":"identified","message":"   "}"#,
            StatusCode::BAD_REQUEST,
        ),
        (
            r#"{"status":"identified","message":"two\nlines"}"#,
            StatusCode::BAD_REQUEST,
        ),
        (r#"{"status":"identified"}"#, StatusCode::BAD_REQUEST),
    ] {
        let a = admin(&app, Method::POST, &uri, Some(TOKEN), body).await;
        assert_eq!(a.status, code, "{body}: {}", a.body);
        assert!(a.json()["error"].is_string(), "{}", a.body);
    }
    let ok = r#"{"status":"identified","message":"The primary lost its disk.","actor":"ana"}"#;
    let a = admin(&app, Method::POST, &uri, None, ok).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    let a = admin(
        &app,
        Method::POST,
        "/admin/incidents/999/updates",
        Some(TOKEN),
        ok,
    )
    .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "{}", a.body);
    let a = admin(
        &app,
        Method::POST,
        "/admin/incidents/x/updates",
        Some(TOKEN),
        ok,
    )
    .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.body);
    let a = history
        .incident(id.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(a.updates.len(), 1, "nothing was added: {a:?}");

    let a = admin(&app, Method::POST, &uri, Some(TOKEN), ok).await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    assert_eq!(a.json()["actor"], "admin");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let a = get(&app, "/api/v2/incidents/unresolved.json").await;
    let incident = &a.json()["incidents"][0];
    assert_eq!(incident["status"], "identified");
    assert_eq!(
        incident["incident_updates"][0]["body"],
        "The primary lost its disk."
    );
    assert_eq!(incident["incident_updates"].as_array().unwrap().len(), 2);
    let audit = admin(
        &app,
        Method::GET,
        "/admin/audit",
        Some(TOKEN),
        Body::empty(),
    )
    .await;
    assert!(
        audit
            .body
            .contains("identified: The primary lost its disk."),
        "{}",
        audit.body
    );

    // A postmortem follows the resolution: refused while open, and nothing kept.
    let postmortem = format!("/admin/incidents/{id}/postmortem");
    let written = r#"{"body":"The disk filled.\n\nWe now alert at 80 %.","actor":"ana"}"#;
    let a = admin(&app, Method::PUT, &postmortem, Some(TOKEN), written).await;
    assert_eq!(a.status, StatusCode::CONFLICT, "{}", a.body);
    assert!(a.json()["error"].as_str().unwrap().contains("not resolved"));

    // Recovery, then the quiet time: resolved, and past.
    f.set(&f.db, CheckStatus::Ok).await;
    settle(&history).await;
    assert_eq!(
        get(&app, "/api/v2/incidents/unresolved.json").await.json()["incidents"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "still open within the quiet time"
    );
    tokio::time::sleep(Duration::from_secs(61)).await;
    settle(&history).await;
    let a = get(&app, "/api/v2/incidents/unresolved.json").await;
    assert_eq!(a.json()["incidents"], serde_json::json!([]), "{}", a.body);
    let a = get(&app, "/api/v2/incidents.json").await;
    let incident = &a.json()["incidents"][0];
    assert_eq!(incident["status"], "resolved");
    assert!(incident["resolved_at"].is_string());
    assert_eq!(incident["postmortem_body"], serde_json::Value::Null);
    assert_eq!(
        get(&app, "/api/v2/status.json").await.json()["status"]["indicator"],
        "none"
    );

    // The page, without JavaScript: the incident, past, in outsiders' words.
    let a = get(&app, "/status/page").await;
    assert_eq!(a.status, StatusCode::OK);
    assert!(a.body.contains("Outage of core"), "{}", a.body);
    assert!(a.body.contains("The primary lost its disk."));
    assert!(a.body.contains("All Systems Operational"));
    assert!(!a.body.contains("says"), "no check message");
    assert!(a.headers["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("default-src 'none'"));

    // The postmortem: refused when malformed or unauthenticated, kept and shown when not.
    for (body, code) in [
        ("{", StatusCode::BAD_REQUEST),
        (r#"{"body":"  \n  "}"#, StatusCode::BAD_REQUEST),
        (r#"{"body":"tab\there"}"#, StatusCode::BAD_REQUEST),
        (r#"{"text":"x"}"#, StatusCode::BAD_REQUEST),
    ] {
        let a = admin(&app, Method::PUT, &postmortem, Some(TOKEN), body).await;
        assert_eq!(a.status, code, "{body}: {}", a.body);
    }
    let long = format!(r#"{{"body":"{}"}}"#, "x".repeat(10_001));
    let a = admin(&app, Method::PUT, &postmortem, Some(TOKEN), long).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.body);
    let a = admin(&app, Method::PUT, &postmortem, None, written).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    let a = admin(
        &app,
        Method::PUT,
        "/admin/incidents/999/postmortem",
        Some(TOKEN),
        written,
    )
    .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "{}", a.body);
    let kept = history
        .incident(id.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(kept.postmortem, None, "nothing was kept");

    let a = admin(&app, Method::PUT, &postmortem, Some(TOKEN), written).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(
        a.json()["body"],
        "The disk filled.\n\nWe now alert at 80 %."
    );
    assert_eq!(a.json()["actor"], "admin");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let incident = &get(&app, "/api/v2/incidents.json").await.json()["incidents"][0];
    assert_eq!(incident["status"], "postmortem");
    assert_eq!(
        incident["postmortem_body"],
        "The disk filled.\n\nWe now alert at 80 %."
    );
    assert!(incident["postmortem_published_at"].is_string());
    let page = get(&app, "/status/page").await.body;
    assert!(page.contains("<p>We now alert at 80 %.</p>"), "{page}");
    let feed: atom_syndication::Feed = get(&app, "/history.atom").await.body.parse().unwrap();
    let html = feed.entries[0]
        .content
        .as_ref()
        .unwrap()
        .value
        .clone()
        .unwrap();
    assert!(html.starts_with("<p><strong>Postmortem</strong>"), "{html}");
    let audit = admin(
        &app,
        Method::GET,
        "/admin/audit",
        Some(TOKEN),
        Body::empty(),
    )
    .await;
    assert!(
        audit.body.contains("postmortem of incident"),
        "{}",
        audit.body
    );
    // Written again, replaced.
    let again = r#"{"body":"The disk filled; the alert was too late."}"#;
    let a = admin(&app, Method::PUT, &postmortem, Some(TOKEN), again).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.json()["actor"], "admin");
    let kept = history
        .incident(id.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        kept.postmortem.unwrap().body,
        "The disk filled; the alert was too late."
    );
}

/// The threads named `name` in this process: a runtime's, its blocking pool's included.
fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name))
        .count()
}

/// Runs `test` on a runtime of its own with paused time, whose threads are named `name`.
fn on_named_runtime(name: &str, test: impl std::future::Future<Output = ()>) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .thread_name(name)
        .build()
        .unwrap()
        .block_on(test);
}

/// 32 requests of `path` at once on `app`: their answers, each 200.
async fn crowd(app: &axum::Router, path: &'static str) -> Vec<crate::support::Answer> {
    let requests: Vec<_> = (0..32)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move { get(&app, path).await })
        })
        .collect();
    let mut answers = Vec::new();
    for request in requests {
        let answer = request.await.unwrap();
        assert_eq!(answer.status, StatusCode::OK, "{path}: {}", answer.body);
        answers.push(answer);
    }
    answers
}

/// A crowd that arrives as what is published changes waits for one page: one request makes
/// it, reading each component's tiles from the history on a blocking thread, and the others
/// are served what it made. Each making its own, 32 requests held up to 32 blocking threads
/// at once, each waiting for the one store (a quickstart with a history grew from 7 threads
/// to 55 under `wrk`).
#[test]
fn a_crowd_at_a_change_waits_for_one_page() {
    on_named_runtime("page-crowd", async {
        let f = fixture().await;
        let (app, history) = app(&f).await;
        settle(&history).await;
        let before = threads_named("page-crowd");
        let pages: std::collections::HashSet<String> = crowd(&app, "/status/page")
            .await
            .iter()
            .map(|a| a.headers["etag"].to_str().unwrap().to_owned())
            .collect();
        assert_eq!(pages.len(), 1, "one page for the crowd: {pages:?}");
        let after = threads_named("page-crowd");
        assert!(
            after <= before + 2,
            "blocking threads grew with the crowd: {before} before, {after} after"
        );
    });
}

/// An uptime badge is read from the history at most once a minute per component and window
/// (as written: `24h` and `1d` are two), one at a time: a crowd of them is served the first,
/// and a minute later the figure is read again.
#[tokio::test(start_paused = true)]
async fn an_uptime_badge_is_read_once_a_minute_whatever_the_crowd() {
    let f = fixture().await;
    let (app, history) = app(&f).await;
    settle(&history).await;
    let badges: std::collections::HashSet<String> = crowd(&app, "/badge/core/uptime.svg?window=1d")
        .await
        .into_iter()
        .map(|a| a.body)
        .collect();
    assert_eq!(badges.len(), 1, "one badge for the crowd: {badges:?}");
    let first = badges.into_iter().next().unwrap();
    assert!(first.contains("uptime 1d: 100%"), "{first}");

    // An outage: within the minute the badge says what it said; past it, the outage.
    f.set(&f.db, CheckStatus::Outage).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    history.flush().await;
    let within = get(&app, "/badge/core/uptime.svg?window=1d").await.body;
    assert_eq!(within, first, "the same badge within its minute");
    let other = get(&app, "/badge/core/uptime.svg?window=24h").await.body;
    assert!(
        other.contains("uptime 24h: ") && !other.contains("uptime 24h: 100%"),
        "another window is another badge: {other}"
    );
    tokio::time::sleep(Duration::from_secs(31)).await;
    history.flush().await;
    let past = get(&app, "/badge/core/uptime.svg?window=1d").await.body;
    assert!(
        past.contains("uptime 1d: ") && !past.contains("uptime 1d: 100%"),
        "read again past its minute: {past}"
    );
}

#[tokio::test(start_paused = true)]
async fn badges_say_a_level_or_an_uptime_carry_an_etag_and_only_components_have_one() {
    let f = fixture().await;
    let (app, history) = app(&f).await;
    f.set(&f.db, CheckStatus::Outage).await;
    settle(&history).await;
    let a = get(&app, "/badge/core.svg").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.headers["content-type"], "image/svg+xml");
    assert!(
        a.body.starts_with("<svg") && a.body.contains("major outage"),
        "{}",
        a.body
    );
    let etag = a.headers["etag"].clone();
    let again = call(
        &app,
        Request::get("/badge/core.svg")
            .header("if-none-match", etag.clone())
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert!(again.body.is_empty());
    f.set(&f.db, CheckStatus::Ok).await;
    let changed = call(
        &app,
        Request::get("/badge/core.svg")
            .header("if-none-match", etag)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(changed.status, StatusCode::OK, "a change, a new body");
    assert!(changed.body.contains("operational"));

    assert!(get(&app, "/badge/system.svg")
        .await
        .body
        .contains("operational"));
    for path in ["/badge/db.svg", "/badge/core", "/badge/nope.svg"] {
        let a = get(&app, path).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND, "{path}: {}", a.body);
        assert!(a.json()["error"].is_string());
    }
    tokio::time::sleep(Duration::from_secs(30)).await;
    history.flush().await;
    let a = get(&app, "/badge/core/uptime.svg?window=1d").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert!(
        a.body.contains("uptime 1d") && a.body.contains('%'),
        "{}",
        a.body
    );
    // The longest window documented is a window (it once came out a moment too old).
    let a = get(&app, "/badge/core/uptime.svg?window=400d").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert!(a.body.contains("uptime 400d"), "{}", a.body);
    for bad in ["window=0d", "window=401d", "window=1w", "other=1"] {
        let a = get(&app, &format!("/badge/core/uptime.svg?{bad}")).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{bad}: {}", a.body);
        assert!(a.json()["error"].is_string());
    }
}

#[tokio::test(start_paused = true)]
async fn without_groups_or_public_dependencies_the_system_is_the_one_component() {
    let f = fixture().await;
    let history = History::in_memory().open();
    history.attach(&f.registry);
    let app = status_http::Routes::new(&f.registry)
        .history(history.clone())
        .build();
    let a = get(&app, "/api/v2/components.json").await;
    let components = a.json()["components"].as_array().unwrap().clone();
    assert_eq!(components.len(), 1, "{}", a.body);
    assert_eq!(components[0]["id"], "system");
    // A scheduled maintenance of no component is not shown (a mute is internal).
    assert_eq!(
        get(&app, "/api/v2/scheduled-maintenances.json")
            .await
            .json()["scheduled_maintenances"],
        serde_json::json!([])
    );
}

/// The feeds: each incident one entry, with its updates newest first and what an operator
/// wrote escaped as text; its id the same in both feeds and across changes; valid as the
/// rust-syndication readers parse them (`scripts/feeds` has feedparser read the quickstart's).
#[tokio::test(start_paused = true)]
async fn the_feeds_carry_each_incident_with_its_updates_under_one_stable_id() {
    let f = fixture().await;
    let (app, history) = app(&f).await;
    settle(&history).await;
    for (route, mime) in [
        ("/history.atom", "application/atom+xml"),
        ("/history.rss", "application/rss+xml"),
    ] {
        let a = get(&app, route).await;
        assert_eq!(a.status, StatusCode::OK, "{route}: {}", a.body);
        assert!(a.header("content-type").starts_with(mime), "{route}");
    }
    let calm: atom_syndication::Feed = get(&app, "/history.atom").await.body.parse().unwrap();
    assert!(calm.entries.is_empty(), "{calm:?}");
    assert_eq!(calm.title.value, "test-app status");

    f.set(&f.db, CheckStatus::Outage).await;
    settle(&history).await;
    let feed: atom_syndication::Feed = get(&app, "/history.atom").await.body.parse().unwrap();
    assert_eq!(feed.entries.len(), 1, "{feed:?}");
    let opened = feed.entries[0].clone();
    assert!(opened
        .id
        .starts_with("https://status.shop.example/status/page#incident-"));
    assert_eq!(opened.title.value, "Outage of core (Investigating)");

    let id = opened.id.rsplit('-').next().unwrap().to_owned();
    let said = r#"{"status":"identified","message":"Failing over: <script>x</script> & more","actor":"ana"}"#;
    let uri = format!("/admin/incidents/{id}/updates");
    let a = admin(&app, Method::POST, &uri, Some(TOKEN), said).await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    tokio::time::sleep(Duration::from_millis(1100)).await;

    let raw = get(&app, "/history.atom").await.body;
    assert!(!raw.contains("<script>"), "{raw}");
    let feed: atom_syndication::Feed = raw.parse().unwrap();
    let entry = &feed.entries[0];
    assert_eq!(entry.id, opened.id, "the id is stable");
    assert_eq!(entry.title.value, "Outage of core (Identified)");
    let html = entry.content.as_ref().unwrap().value.clone().unwrap();
    // The operator's markup is text in the entry's HTML, and the newest update comes first.
    assert!(
        html.contains("Failing over: &lt;script&gt;x&lt;/script&gt; &amp; more"),
        "{html}"
    );
    assert!(html.find("Identified").unwrap() < html.find("Investigating").unwrap());
    assert!(html.contains(" UTC)"), "times name their zone: {html}");

    let channel: rss::Channel = get(&app, "/history.rss").await.body.parse().unwrap();
    assert_eq!(channel.items.len(), 1);
    let item = &channel.items[0];
    assert_eq!(item.guid.as_ref().unwrap().value, opened.id);
    assert_eq!(item.description.as_deref(), Some(html.as_str()));
    assert!(chrono::DateTime::parse_from_rfc2822(item.pub_date.as_deref().unwrap()).is_ok());

    // Not a door for writes.
    let a = call(
        &app,
        axum::http::Request::post("/history.atom")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED);
}

/// Groups are public only when the application says so, under names for customers; the
/// public dependencies among a public group's members are nested under it, on the page and in
/// the v2 JSON (`group_id`, the group's `components`); `created_at` stays, `updated_at` moves
/// with the level.
#[tokio::test(start_paused = true)]
async fn public_groups_have_names_for_customers_and_nest_their_public_dependencies() {
    let f = fixture().await;
    let payments = crate::support::Switch::default();
    let status = std::sync::Arc::clone(&payments.0);
    f.registry
        .add(
            Dependency::builder(
                "payments",
                status_core::check::tiered(move || {
                    let status = *status.lock().unwrap();
                    async move { (status, "says".to_owned()) }
                }),
            )
            .description("Payments")
            .urgency(status_core::Urgency::Required)
            .failures_before_outage(1)
            .tag(status_http::PUBLIC_TAG)
            .period(Duration::from_secs(3600))
            .build()
            .unwrap(),
        )
        .unwrap();
    for (name, members) in [
        ("core", &["db", "payments"][..]),
        ("internal", &["cache"][..]),
    ] {
        let mut group = Group::builder(name);
        for m in members {
            group = group.dependency(*m);
        }
        f.registry.add_group(group.build().unwrap()).unwrap();
    }
    let history = History::in_memory().open();
    history.attach(&f.registry);
    let app = status_http::Routes::new(&f.registry)
        .history(history.clone())
        .incident_publication(Publication::After(Duration::ZERO))
        .public_group(PublicGroup::new("core", "Checkout").description("Paying for an order"))
        .public_group(PublicGroup::new("core", "named twice"))
        .public_group(PublicGroup::new("not-yet", "Not a group yet"))
        .build();
    f.registry.refresh_all().await;
    settle(&history).await;

    let first = get(&app, "/api/v2/components.json").await.json();
    let components = first["components"].as_array().unwrap();
    let ids: Vec<&str> = components
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["group-core", "dependency-payments"], "{first}");
    let (group, child) = (&components[0], &components[1]);
    assert_eq!(group["name"], "Checkout");
    assert_eq!(group["description"], "Paying for an order");
    assert_eq!(group["group"], true);
    assert_eq!(
        group["components"],
        serde_json::json!(["dependency-payments"])
    );
    assert_eq!(group["group_id"], serde_json::Value::Null);
    assert_eq!(child["group_id"], "group-core");
    assert_eq!(child["group"], false);
    assert!(child.get("components").is_none(), "{child}");
    assert_eq!(child["position"], 2);
    // The internal group has no badge either.
    assert_eq!(
        get(&app, "/badge/internal.svg").await.status,
        StatusCode::NOT_FOUND
    );
    // A badge reads as the page does: the group's name for customers, never its code name.
    let badge = get(&app, "/badge/core.svg").await.body;
    assert!(
        badge.contains("<title>Checkout: operational</title>") && !badge.contains(">core<"),
        "{badge}"
    );

    // Times stay put across reads, and `updated_at` follows a change of level.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let again = get(&app, "/api/v2/components.json").await.json();
    assert_eq!(again["components"], first["components"], "nothing changed");
    payments.set(CheckStatus::Outage);
    f.registry.refresh_all().await;
    settle(&history).await;
    let after = get(&app, "/api/v2/components.json").await.json();
    let child = &after["components"][1];
    assert_eq!(child["status"], "major_outage");
    assert_eq!(child["created_at"], first["components"][1]["created_at"]);
    assert_ne!(child["updated_at"], first["components"][1]["updated_at"]);

    // The incident is named by the top-level component: the group, not the nested one too.
    let incidents = get(&app, "/api/v2/incidents.json").await.json();
    assert_eq!(
        incidents["incidents"][0]["name"], "Outage of Checkout",
        "{incidents}"
    );

    let page = get(&app, "/status/page").await.body;
    assert!(
        page.contains(r#"<tr data-component="dependency-payments" class="nested">"#),
        "{page}"
    );
    assert!(page.contains("Paying for an order"), "{page}");
    assert!(
        !page.contains("internal") && !page.contains(">core<"),
        "{page}"
    );
}

/// Publishing is an act: a blip shorter than the wait never reaches the page, a failure that
/// lasts does; under `Approved`, only an operator's update publishes. Operators see every
/// incident on `/admin/incidents` all along.
#[tokio::test(start_paused = true)]
async fn an_incident_is_public_once_it_lasts_or_an_operator_speaks() {
    let open = |app: axum::Router| async move {
        get(&app, "/api/v2/incidents.json").await.json()["incidents"]
            .as_array()
            .unwrap()
            .len()
    };
    let f = fixture().await;
    let history = History::in_memory()
        .incident_quiet(Duration::from_secs(5))
        .open();
    history.attach(&f.registry);
    f.registry
        .add_group(Group::builder("core").dependency("db").build().unwrap())
        .unwrap();
    let routes = || {
        status_http::Routes::new(&f.registry)
            .admin_token(TOKEN)
            .history(history.clone())
            .public_group(PublicGroup::new("core", "Checkout"))
    };
    let app = routes().build();
    let approved = routes().incident_publication(Publication::Approved).build();

    // A blip of 30 s: an incident for operators, none for the public, before or after.
    f.set(&f.db, CheckStatus::Outage).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    settle(&history).await;
    assert_eq!(open(app.clone()).await, 0);
    let kept = admin(
        &app,
        Method::GET,
        "/admin/incidents",
        Some(TOKEN),
        Body::empty(),
    )
    .await;
    assert_eq!(
        kept.json()["incidents"].as_array().unwrap().len(),
        1,
        "{}",
        kept.body
    );
    f.set(&f.db, CheckStatus::Ok).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    settle(&history).await;
    tokio::time::sleep(Duration::from_secs(200)).await;
    settle(&history).await;
    assert_eq!(open(app.clone()).await, 0, "a resolved blip stays internal");
    assert!(!get(&app, "/history.atom").await.body.contains("<entry>"));
    // A postmortem of it would show nowhere: refused, said why, nothing kept.
    let kept = admin(
        &app,
        Method::GET,
        "/admin/incidents",
        Some(TOKEN),
        Body::empty(),
    )
    .await;
    let blip = kept.json()["incidents"][0]["id"].to_string();
    let a = admin(
        &app,
        Method::PUT,
        &format!("/admin/incidents/{blip}/postmortem"),
        Some(TOKEN),
        r#"{"body":"It was nothing."}"#,
    )
    .await;
    assert_eq!(a.status, StatusCode::CONFLICT, "{}", a.body);
    assert!(
        a.json()["error"].as_str().unwrap().contains("not public"),
        "{}",
        a.body
    );
    let blip: i64 = blip.parse().unwrap();
    assert_eq!(
        history.incident(blip).await.unwrap().unwrap().postmortem,
        None
    );

    // An outage that lasts: public after two minutes, not before.
    f.set(&f.db, CheckStatus::Outage).await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    settle(&history).await;
    assert_eq!(open(app.clone()).await, 0, "public before two minutes");
    tokio::time::sleep(Duration::from_secs(60)).await;
    settle(&history).await;
    assert_eq!(open(app.clone()).await, 1, "not public after two minutes");
    assert!(get(&app, "/status/page")
        .await
        .body
        .contains("Outage of Checkout"));
    // Approval: nothing until an operator speaks, then at once.
    assert_eq!(open(approved.clone()).await, 0);
    let kept = admin(
        &app,
        Method::GET,
        "/admin/incidents",
        Some(TOKEN),
        Body::empty(),
    )
    .await;
    let id = kept.json()["incidents"][0]["id"].to_string();
    let said = r#"{"status":"identified","message":"The database lost its disk."}"#;
    let uri = format!("/admin/incidents/{id}/updates");
    let a = admin(&approved, Method::POST, &uri, Some(TOKEN), said).await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(open(approved).await, 1);
}

/// A mute silences and publishes nothing; an announcement publishes a maintenance (page,
/// JSON, feeds) and mutes what it covers for its window; calling it off lifts both. A
/// malformed announcement keeps and mutes nothing.
#[tokio::test(start_paused = true)]
async fn a_maintenance_is_public_only_when_announced_and_mutes_its_window() {
    let f = fixture().await;
    let (app, history) = app(&f).await;
    settle(&history).await;
    let maintenances = |app: axum::Router, path: &'static str| async move {
        get(&app, path).await.json()["scheduled_maintenances"]
            .as_array()
            .unwrap()
            .clone()
    };

    // An ad-hoc mute: silence, not a publication.
    let a = admin(
        &app,
        Method::PUT,
        "/admin/mutes/db",
        Some(TOKEN),
        r#"{"ttlSeconds":600,"reason":"vendor is noisy"}"#,
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(
        maintenances(app.clone(), "/api/v2/scheduled-maintenances.json")
            .await
            .is_empty()
    );
    assert!(!get(&app, "/status/page")
        .await
        .body
        .contains("vendor is noisy"));
    let a = admin(
        &app,
        Method::DELETE,
        "/admin/mutes/db",
        Some(TOKEN),
        Body::empty(),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);

    let now = history.now();
    let time = |minutes: i64| (now + chrono::Duration::minutes(minutes)).to_rfc3339();
    let announced = |title: &str, deps: &str, start: &str, end: &str| {
        format!(
            r#"{{"title":"{title}","message":"We upgrade the database.\n\nCheckout may be slow.","dependencies":{deps},"start":"{start}","end":"{end}","actor":"ana"}}"#
        )
    };
    for (body, code) in [
        (announced("Upgrade", r#"["nope"]"#, &time(10), &time(70)), StatusCode::NOT_FOUND),
        (announced("Upgrade", r#"["db"]"#, &time(70), &time(10)), StatusCode::BAD_REQUEST),
        (announced("  ", r#"["db"]"#, &time(10), &time(70)), StatusCode::BAD_REQUEST),
        (announced("Up\tgrade", r#"["db"]"#, &time(10), &time(70)), StatusCode::BAD_REQUEST),
        (announced("Upgrade", "[]", &time(10), &time(70)), StatusCode::BAD_REQUEST),
        (announced("Upgrade", r#"["db"]"#, &time(-70), &time(-10)), StatusCode::BAD_REQUEST),
        (announced("Upgrade", r#"["db"]"#, &time(10), &time(60 * 24 * 40)), StatusCode::BAD_REQUEST),
        (announced("Upgrade", r#"["db"]"#, "soon", &time(70)), StatusCode::BAD_REQUEST),
        (r#"{"title":"x","message":"y","dependencies":["db"],"end":"2099-01-01T00:00:00Z","extra":1}"#.to_owned(), StatusCode::BAD_REQUEST),
    ] {
        let a = admin(&app, Method::POST, "/admin/maintenances", Some(TOKEN), body.clone()).await;
        assert_eq!(a.status, code, "{body}: {}", a.body);
        assert!(a.json()["error"].is_string(), "{}", a.body);
    }
    // A mute in force that a later window would end: the maintenance is refused whole,
    // nothing kept or published, the operator's mute left as it was.
    let a = admin(
        &app,
        Method::PUT,
        "/admin/mutes/db",
        Some(TOKEN),
        r#"{"ttlSeconds":600,"reason":"vendor is noisy"}"#,
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let later = announced("Upgrade", r#"["db"]"#, &time(20), &time(70));
    let a = admin(
        &app,
        Method::POST,
        "/admin/maintenances",
        Some(TOKEN),
        later,
    )
    .await;
    assert_eq!(a.status, StatusCode::CONFLICT, "{}", a.body);
    assert!(
        a.json()["error"]
            .as_str()
            .unwrap()
            .contains("vendor is noisy"),
        "{}",
        a.body
    );
    assert!(history
        .announcements(now - chrono::Duration::days(1))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(f.registry.muted("db").unwrap().reason, "vendor is noisy");
    let a = admin(
        &app,
        Method::DELETE,
        "/admin/mutes/db",
        Some(TOKEN),
        Body::empty(),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let good = announced("Database upgrade", r#"["db"]"#, &time(10), &time(70));
    let a = admin(
        &app,
        Method::POST,
        "/admin/maintenances",
        None,
        good.clone(),
    )
    .await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    let a = admin(
        &app,
        Method::GET,
        "/admin/maintenances",
        Some(TOKEN),
        Body::empty(),
    )
    .await;
    assert_eq!(
        a.json()["maintenances"],
        serde_json::json!([]),
        "nothing kept"
    );
    assert!(f.registry.mutes().is_empty(), "nothing muted");

    let a = admin(&app, Method::POST, "/admin/maintenances", Some(TOKEN), good).await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    let id = a.json()["id"].as_i64().unwrap();
    assert_eq!(a.json()["notMuted"], serde_json::json!([]));
    let mute = f.registry.muted("db");
    assert!(mute.is_none(), "not in force before its window: {mute:?}");
    assert_eq!(f.registry.mutes().len(), 1, "scheduled");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let upcoming = maintenances(app.clone(), "/api/v2/scheduled-maintenances/upcoming.json").await;
    assert_eq!(upcoming.len(), 1, "{upcoming:?}");
    assert_eq!(upcoming[0]["name"], "Database upgrade");
    assert_eq!(upcoming[0]["status"], "scheduled");
    assert_eq!(upcoming[0]["components"][0]["name"], "core");
    assert_eq!(
        upcoming[0]["incident_updates"][0]["body"],
        "We upgrade the database.\n\nCheckout may be slow."
    );
    let page = get(&app, "/status/page").await.body;
    assert!(
        page.contains("Database upgrade") && page.contains("Checkout may be slow."),
        "{page}"
    );
    assert!(get(&app, "/history.atom")
        .await
        .body
        .contains("Database upgrade (Scheduled)"));

    // In its window: in progress, and the database muted.
    tokio::time::sleep(Duration::from_secs(11 * 60)).await;
    settle(&history).await;
    let active = maintenances(app.clone(), "/api/v2/scheduled-maintenances/active.json").await;
    assert_eq!(active.len(), 1);
    assert_eq!(active[0]["status"], "in_progress");
    assert!(f.registry.muted("db").is_some());

    // Called off: off the page, the mute it set lifted, kept as called off.
    let uri = format!("/admin/maintenances/{id}");
    let a = admin(&app, Method::DELETE, &uri, Some(TOKEN), Body::empty()).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert!(a.json()["cancelled"].is_string());
    assert!(f.registry.muted("db").is_none());
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(
        maintenances(app.clone(), "/api/v2/scheduled-maintenances.json")
            .await
            .is_empty()
    );
    for (uri, code) in [
        ("/admin/maintenances/999", StatusCode::NOT_FOUND),
        ("/admin/maintenances/x", StatusCode::BAD_REQUEST),
    ] {
        let a = admin(&app, Method::DELETE, uri, Some(TOKEN), Body::empty()).await;
        assert_eq!(a.status, code, "{uri}: {}", a.body);
    }
}

/// The page speaks the reader's language: `?lang=`, else `Accept-Language`, else English;
/// the engine's words are said anew, an operator's are shown as written.
#[tokio::test(start_paused = true)]
async fn the_page_follows_the_readers_language() {
    let f = fixture().await;
    let (app, history) = app(&f).await;
    f.set(&f.db, CheckStatus::Outage).await;
    settle(&history).await;
    let page = |lang: Option<&'static str>, accept: Option<&'static str>| {
        let app = app.clone();
        async move {
            let uri = lang.map_or("/status/page".to_owned(), |l| {
                format!("/status/page?lang={l}")
            });
            let mut request = axum::http::Request::get(uri);
            if let Some(accept) = accept {
                request = request.header("accept-language", accept);
            }
            call(&app, request.body(Body::empty()).unwrap()).await
        }
    };
    let de = page(None, Some("de-CH, de;q=0.9, en;q=0.5")).await;
    assert_eq!(de.status, StatusCode::OK);
    assert_eq!(de.header("content-language"), "de");
    // By language, and by coding: the page goes compressed to a client that accepts it.
    assert_eq!(de.header("vary"), "accept-encoding, accept-language");
    assert!(de.body.contains(r#"<html lang="de">"#), "{}", de.body);
    assert!(de.body.contains("Schwerer Ausfall"), "{}", de.body);
    assert!(de.body.contains("Ausfall: core"), "{}", de.body);
    assert!(
        de.body
            .contains("Wir untersuchen ein Problem, das core betrifft."),
        "{}",
        de.body
    );
    assert!(de.body.contains("Offene Störungen"));
    assert!(!de.body.contains("Open incidents"));

    let en = page(Some("en"), Some("de")).await;
    assert_eq!(en.header("content-language"), "en");
    assert!(en.body.contains("Outage of core") && en.body.contains("Open incidents"));
    let unknown = page(None, Some("fr-FR, fr;q=0.9")).await;
    assert_eq!(unknown.header("content-language"), "en");
    let busted = page(Some("de"), None).await;
    assert!(busted
        .body
        .contains(r#"<strong lang="de">Deutsch</strong>"#));
    assert!(busted
        .body
        .contains(r#"<a href="?lang=en" lang="en" hreflang="en">English</a>"#));
    // A cache buster is no error on a public page.
    let a = get(&app, "/status/page?utm_source=mail").await;
    assert_eq!(a.status, StatusCode::OK);
}

/// The subscribers' door refuses what it must, with a clear word, and keeps nothing then: no
/// subscriptions without them enabled, a private webhook, an unknown component, neither or
/// both of mail and webhook, mail where none is sent, a body that is neither JSON nor a form,
/// a body too large, and a burst past its bound (429, Retry-After).
#[tokio::test]
async fn the_subscribers_door_refuses_what_it_must_and_keeps_nothing() {
    let f = fixture().await;
    let (plain, _) = app(&f).await;
    let post = |app: axum::Router, body: String, content_type: &'static str| async move {
        call(
            &app,
            axum::http::Request::post("/status/page/subscriptions")
                .header("content-type", content_type)
                .body(Body::from(body))
                .unwrap(),
        )
        .await
    };
    let json = "application/json";
    let a = post(
        plain.clone(),
        r#"{"webhook":"https://example.com/hook"}"#.into(),
        json,
    )
    .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "{}", a.body);

    let history = History::in_memory().open();
    history.attach(&f.registry);
    let mut settings = status_http::StatusPageSettings::default();
    settings.url = Some("https://status.shop.example".into());
    settings.public.push(PublicGroup::new("core", "Checkout"));
    settings.subscriptions = Some(status_http::Subscriptions::new().rate(8, 1));
    let page =
        status_http::StatusPage::new(f.registry.clone(), Some(history.clone()), "shop", settings);
    assert!(
        page.teller().is_some(),
        "a page with subscribers and a history tells them"
    );
    // Building the router starts nothing: the teller is the application's to spawn.
    let runtime = tokio::runtime::Handle::current().metrics();
    let tasks = runtime.num_alive_tasks();
    let app = status_http::Routes::new(&f.registry)
        .history(history.clone())
        .status_page(page)
        .build();
    assert_eq!(
        runtime.num_alive_tasks(),
        tasks,
        "Routes::build spawned a task"
    );
    // The store opens beside the routes: until it has, the door answers 503 and keeps nothing.
    while history.subscribers().await.is_err() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for (body, content_type, code) in [
        (
            r#"{"webhook":"http://127.0.0.1:9/hook"}"#,
            json,
            StatusCode::BAD_REQUEST,
        ),
        (
            r#"{"webhook":"http://169.254.169.254/latest"}"#,
            json,
            StatusCode::BAD_REQUEST,
        ),
        (
            r#"{"webhook":"ftp://example.com/"}"#,
            json,
            StatusCode::BAD_REQUEST,
        ),
        (
            r#"{"email":"ana@example.com"}"#,
            json,
            StatusCode::BAD_REQUEST,
        ),
        (r#"{}"#, json, StatusCode::BAD_REQUEST),
        (
            r#"{"webhook":"http://localhost/","email":"a@b.co"}"#,
            json,
            StatusCode::BAD_REQUEST,
        ),
        (
            r#"{"webhook":"http://[::1]/","components":["group-core"]}"#,
            json,
            StatusCode::BAD_REQUEST,
        ),
        (
            "webhook=x",
            "text/plain",
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
    ] {
        let a = post(app.clone(), body.into(), content_type).await;
        assert_eq!(a.status, code, "{body}: {}", a.body);
        assert!(a.json()["error"].is_string(), "{}", a.body);
    }
    let big = format!(
        r#"{{"webhook":"https://example.com/{}"}}"#,
        "x".repeat(5000)
    );
    let a = post(app.clone(), big, json).await;
    assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", a.body);
    assert!(
        history.subscribers().await.unwrap().is_empty(),
        "nothing kept"
    );

    // A refused request spends no visitor's share: twelve more malformed ones are each
    // refused for what they are, never with a 429.
    for _ in 0..12 {
        let a = post(
            app.clone(),
            r#"{"webhook":"http://127.0.0.1:9/"}"#.into(),
            json,
        )
        .await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.body);
    }
    assert!(history.subscribers().await.unwrap().is_empty());
    // Past the bucket's eight subscriptions: 429 with Retry-After, nothing more kept.
    let mut refused = 0;
    for i in 0..12 {
        let a = post(
            app.clone(),
            format!(r#"{{"webhook":"https://93.184.216.34/hook-{i}"}}"#),
            json,
        )
        .await;
        if a.status == StatusCode::TOO_MANY_REQUESTS {
            assert!(a.header("retry-after").parse::<u64>().unwrap() >= 1);
            refused += 1;
        } else {
            assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);
        }
    }
    assert!(refused >= 4, "{refused} refused of 12 past a bucket of 8");
    assert_eq!(history.subscribers().await.unwrap().len(), 12 - refused);

    // Confirm and unsubscribe with what is not a token: 400, a page; with a token of no
    // one, a link's page asks, and its button's POST is a 404.
    let forged = "ab".repeat(32);
    for what in ["confirm", "unsubscribe"] {
        let uri = format!("/status/page/subscriptions/{what}?token=nope");
        let a = get(&app, &uri).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{uri}");
        assert!(a.body.contains("<html"), "{}", a.body);
        let uri = format!("/status/page/subscriptions/{what}?token={forged}");
        assert_eq!(get(&app, &uri).await.status, StatusCode::OK, "{uri}");
        let a = call(&app, Request::post(&uri).body(Body::empty()).unwrap()).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND, "{uri}");
        assert!(a.body.contains("<html"), "{}", a.body);
    }
}

/// On the wall clock (not paused): the badge's window and the history's check of it once
/// read the clock twice, so the longest window documented, 400 days, came out a moment older
/// than kept and was refused.
#[tokio::test]
async fn the_longest_badge_window_is_served_on_a_running_clock() {
    let f = fixture().await;
    let history = f.core_with(History::in_memory());
    let _ = history.restored().await;
    let app = status_http::Routes::new(&f.registry)
        .history(history.clone())
        .public_group(status_http::PublicGroup::new("core", "Core"))
        .build();
    for _ in 0..20 {
        let a = get(&app, "/badge/core/uptime.svg?window=400d").await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    }
}

/// The public routes serve bodies made once per change of what they show: the same bytes and
/// the same tag until something shown changes (a client holding the tag gets a 304), a new
/// tag after; each compressed once for the clients that accept it, under a tag of its own.
#[tokio::test(start_paused = true)]
async fn public_bodies_are_made_once_per_change_and_carry_their_tag_and_codings() {
    let f = fixture().await;
    let (app, history) = app(&f).await;
    settle(&history).await;
    let routes = [
        "/api/v2/summary.json",
        "/api/v2/status.json",
        "/api/v2/components.json",
        "/status/page",
        "/badge/core.svg",
    ];
    let mut tags = Vec::new();
    for route in routes {
        let (status, headers, first) = raw(&app, route, &[]).await;
        assert_eq!(status, StatusCode::OK, "{route}");
        let tag = headers["etag"].to_str().unwrap().to_owned();
        let (_, again_headers, again) = raw(&app, route, &[]).await;
        assert_eq!(again, first, "{route}: the same body until a change");
        assert_eq!(again_headers["etag"], tag.as_str(), "{route}");
        let (status, held, body) = raw(&app, route, &[("if-none-match", &tag)]).await;
        assert_eq!(status, StatusCode::NOT_MODIFIED, "{route}");
        assert!(body.is_empty(), "{route}");
        assert_eq!(held["etag"], tag.as_str(), "{route}");
        tags.push(tag);
    }
    // The feeds too: a reader polling with the tag it holds gets a 304.
    for feed in ["/history.atom", "/history.rss"] {
        let (status, headers, _) = raw(&app, feed, &[]).await;
        assert_eq!(status, StatusCode::OK, "{feed}");
        let tag = headers["etag"].to_str().unwrap().to_owned();
        let (status, _, body) = raw(&app, feed, &[("if-none-match", &tag)]).await;
        assert_eq!(status, StatusCode::NOT_MODIFIED, "{feed}");
        assert!(body.is_empty(), "{feed}");
    }
    // The page is large enough to gain: gzip for a client that accepts only it, the same
    // representation under a tag of its own.
    let (_, plain_headers, plain) = raw(&app, "/status/page", &[]).await;
    assert!(plain.len() >= 1024, "the page is {} bytes", plain.len());
    let gzip = [("accept-encoding", "gzip")];
    let (status, headers, gzipped) = raw(&app, "/status/page", &gzip).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-encoding"], "gzip");
    assert_eq!(headers["content-language"], "en");
    assert!(gzipped.len() < plain.len());
    assert_eq!(gunzip(&gzipped), plain, "the same page, compressed");
    assert_ne!(
        headers["etag"], plain_headers["etag"],
        "one tag a representation"
    );
    let (_, again, _) = raw(&app, "/status/page", &gzip).await;
    assert_eq!(again["etag"], headers["etag"], "compressed once, then kept");
    // Another language, asked for by the header (once made, answered from what is published)
    // or by the query (the handler's way, which checks it): the same page, in German.
    let german = [("accept-language", "de-DE,de;q=0.9")];
    let (status, first_headers, first) = raw(&app, "/status/page", &german).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(first_headers["content-language"], "de");
    let (_, again_headers, again) = raw(&app, "/status/page", &german).await;
    assert_eq!(
        (again, &again_headers["etag"]),
        (first.clone(), &first_headers["etag"])
    );
    assert_eq!(again_headers["vary"], "accept-encoding, accept-language");
    let (_, by_query_headers, by_query) = raw(&app, "/status/page?lang=de", &[]).await;
    assert_eq!(by_query, first, "one German page");
    assert_eq!(by_query_headers["content-language"], "de");
    assert_ne!(first, plain, "not the English one");
    let (_, headers, _) = raw(&app, "/status/page?lang=de", &[("accept-language", "en")]).await;
    assert_eq!(
        headers["content-language"], "de",
        "the query wins over the header"
    );

    // A change of what is shown: every body is made again, under a new tag; a client holding
    // the old one gets the new body.
    f.set(&f.db, CheckStatus::Outage).await;
    for (route, tag) in routes.into_iter().zip(tags) {
        let (status, headers, body) = raw(&app, route, &[("if-none-match", &tag)]).await;
        assert_eq!(status, StatusCode::OK, "{route}: a change, a new body");
        assert_ne!(headers["etag"], tag.as_str(), "{route}");
        assert!(!body.is_empty(), "{route}");
    }
    let (_, _, status) = raw(&app, "/api/v2/status.json", &[]).await;
    let status: serde_json::Value = serde_json::from_slice(&status).unwrap();
    assert_ne!(status["status"]["indicator"], "none", "{status}");
}

/// The deprecated way, subscriptions given to the builder, still tells subscribers: `build`
/// starts the teller then (and only then).
#[tokio::test]
#[allow(deprecated)]
async fn subscriptions_given_to_the_builder_still_start_a_teller_at_build() {
    let f = fixture().await;
    let history = History::in_memory().open();
    history.attach(&f.registry);
    let runtime = tokio::runtime::Handle::current().metrics();
    let tasks = runtime.num_alive_tasks();
    let _app = status_http::Routes::new(&f.registry)
        .history(history.clone())
        .subscriptions(status_http::Subscriptions::new())
        .build();
    assert_eq!(runtime.num_alive_tasks(), tasks + 1, "the teller");
    let tasks = runtime.num_alive_tasks();
    let _plain = status_http::Routes::new(&f.registry)
        .history(history)
        .build();
    assert_eq!(runtime.num_alive_tasks(), tasks, "no subscribers, no task");
}

/// One client spends its own share of the subscribers' door, not every visitor's: past its
/// address's bucket it is refused (429, Retry-After) while another address still subscribes.
#[tokio::test]
async fn one_client_cannot_empty_the_door_for_every_visitor() {
    let f = fixture().await;
    let history = History::in_memory().open();
    history.attach(&f.registry);
    let mut settings = status_http::StatusPageSettings::default();
    settings.subscriptions = Some(status_http::Subscriptions::new().rate_per_address(2, 1));
    let app = with_page(&f, &history, settings).await;
    let from = |address: &str, n: usize| {
        let mut request = Request::post("/status/page/subscriptions")
            .header("content-type", "application/json")
            .body(Body::from(format!(
                r#"{{"webhook":"https://93.184.216.34/{address}/{n}"}}"#
            )))
            .unwrap();
        let peer: std::net::SocketAddr = format!("{address}:40000").parse().unwrap();
        request
            .extensions_mut()
            .insert(axum::extract::ConnectInfo(peer));
        request
    };
    for n in 0..2 {
        assert_eq!(
            call(&app, from("203.0.113.7", n)).await.status,
            StatusCode::ACCEPTED
        );
    }
    let a = call(&app, from("203.0.113.7", 2)).await;
    assert_eq!(a.status, StatusCode::TOO_MANY_REQUESTS, "{}", a.body);
    assert!(a.header("retry-after").parse::<u64>().unwrap() >= 1);
    let a = call(&app, from("198.51.100.9", 0)).await;
    assert_eq!(
        a.status,
        StatusCode::ACCEPTED,
        "another visitor: {}",
        a.body
    );
    assert_eq!(history.subscribers().await.unwrap().len(), 3);
}

/// Operators see who is subscribed (never a token) and remove one, behind the token and in
/// the audit trail; a bad id is a 400, an unknown one a 404, and nothing changes then.
#[tokio::test]
async fn operators_list_and_remove_subscribers() {
    let f = fixture().await;
    let history = History::in_memory().open();
    history.attach(&f.registry);
    let mut settings = status_http::StatusPageSettings::default();
    settings.subscriptions = Some(status_http::Subscriptions::new());
    let app = with_page(&f, &history, settings).await;
    let a = call(
        &app,
        Request::post("/status/page/subscriptions")
            .header("content-type", "application/json")
            .body(Body::from(r#"{"webhook":"https://93.184.216.34/hook"}"#))
            .unwrap(),
    )
    .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);

    let list = |token: Option<&'static str>| {
        let app = app.clone();
        async move {
            admin(
                &app,
                Method::GET,
                "/admin/subscribers",
                token,
                Body::empty(),
            )
            .await
        }
    };
    assert_eq!(list(None).await.status, StatusCode::UNAUTHORIZED);
    let a = list(Some(TOKEN)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let subscribers = a.json()["subscribers"].as_array().unwrap().clone();
    assert_eq!(subscribers.len(), 1, "{}", a.body);
    assert_eq!(subscribers[0]["address"], "https://93.184.216.34/hook");
    assert_eq!(subscribers[0]["kind"], "webhook");
    assert!(
        subscribers[0]["confirmed"].is_null(),
        "pending its challenge"
    );
    assert!(!a.body.contains("token"), "{}", a.body);
    let id = subscribers[0]["id"].as_i64().unwrap();

    for (uri, code) in [
        ("/admin/subscribers/x".to_owned(), StatusCode::BAD_REQUEST),
        ("/admin/subscribers/0".to_owned(), StatusCode::BAD_REQUEST),
        ("/admin/subscribers/999".to_owned(), StatusCode::NOT_FOUND),
    ] {
        let a = admin(&app, Method::DELETE, &uri, Some(TOKEN), Body::empty()).await;
        assert_eq!(a.status, code, "{uri}: {}", a.body);
        assert!(a.json()["error"].is_string());
    }
    assert_eq!(
        history.subscribers().await.unwrap().len(),
        1,
        "nothing removed"
    );
    let uri = format!("/admin/subscribers/{id}");
    let a = admin(&app, Method::DELETE, &uri, None, Body::empty()).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    let a = admin(&app, Method::DELETE, &uri, Some(TOKEN), Body::empty()).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.json()["id"], id);
    assert!(history.subscribers().await.unwrap().is_empty());
    let trail = admin(
        &app,
        Method::GET,
        "/admin/audit",
        Some(TOKEN),
        Body::empty(),
    )
    .await;
    assert!(trail.body.contains(&uri), "{}", trail.body);
}

/// A confirmation mail the mail server never accepted is tried again, and then does not
/// hold the visitor back: the cooldown is for a mail that was sent.
#[tokio::test(start_paused = true)]
async fn a_confirmation_never_accepted_does_not_lock_the_visitor_out() {
    let f = fixture().await;
    let history = History::in_memory().open();
    history.attach(&f.registry);
    // Nothing listens on port 1: every try is refused.
    let mut settings = status_http::StatusPageSettings::default();
    settings.url = Some("https://status.shop.example".into());
    settings.subscriptions = Some(
        status_http::Subscriptions::new()
            .smtp("smtp://127.0.0.1:1")
            .mail_from("status@shop.example"),
    );
    let app = with_page(&f, &history, settings).await;
    let ask = || {
        call(
            &app,
            Request::post("/status/page/subscriptions")
                .header("content-type", "application/json")
                .body(Body::from(r#"{"email":"ana@example.com"}"#))
                .unwrap(),
        )
    };
    let first = ask().await;
    assert_eq!(first.status, StatusCode::ACCEPTED);
    let sent = |history: History| async move {
        history
            .subscriber(status_history::SubscriberKind::Email, "ana@example.com")
            .await
            .unwrap()
            .unwrap()
            .confirm_sent
    };
    let asked = sent(history.clone()).await;
    assert!(asked.is_some());
    // While its mail is on its way, asking again is the cooldown's: the same answer, and
    // nothing sent again.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let a = ask().await;
    assert_eq!((a.status, &a.body), (first.status, &first.body));
    assert_eq!(sent(history.clone()).await, asked, "nothing sent again");
    // Three tries over 35 s, then the cooldown is lifted.
    let mut lifted = false;
    for _ in 0..300 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let s = history
            .subscriber(status_history::SubscriberKind::Email, "ana@example.com")
            .await
            .unwrap()
            .unwrap();
        if s.confirm_sent.is_none() {
            lifted = true;
            break;
        }
    }
    assert!(lifted, "the cooldown of a mail never sent was kept");
    let a = ask().await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);
}

/// An incident takes at most 100 updates (the page, its JSON and its feeds show them all):
/// past it an operator's update is a 409 and nothing is kept, but the word that resolves it
/// is always taken.
#[tokio::test(start_paused = true)]
async fn an_incident_takes_at_most_a_hundred_updates_but_always_its_resolution() {
    let f = fixture().await;
    let (app, history) = app(&f).await;
    settle(&history).await;
    f.set(&f.db, CheckStatus::Outage).await;
    settle(&history).await;
    let incidents = get(&app, "/api/v2/incidents.json").await.json();
    let id = incidents["incidents"][0]["id"].as_str().unwrap().to_owned();
    let uri = format!("/admin/incidents/{id}/updates");
    let said = r#"{"status":"monitoring","message":"Still looking."}"#;
    let number: i64 = id.parse().unwrap();
    let kept = |history: History| async move {
        history
            .incident(number)
            .await
            .unwrap()
            .unwrap()
            .updates
            .len()
    };
    while kept(history.clone()).await < 100 {
        let a = admin(&app, Method::POST, &uri, Some(TOKEN), said).await;
        assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    }
    let a = admin(&app, Method::POST, &uri, Some(TOKEN), said).await;
    assert_eq!(a.status, StatusCode::CONFLICT, "{}", a.body);
    assert_eq!(kept(history.clone()).await, 100, "nothing kept");
    let resolved = r#"{"status":"resolved","message":"Fixed."}"#;
    let a = admin(&app, Method::POST, &uri, Some(TOKEN), resolved).await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    assert_eq!(kept(history).await, 101);
}

/// The page tells one story: before the engine's incident is public (two minutes), the red
/// banner stands over an incident being investigated, never over "No incidents"; once the
/// service is back and the incident stays open (its quiet period), the banner says it is
/// being watched, never "All Systems Operational" over an open incident.
#[tokio::test(start_paused = true)]
async fn the_banner_and_the_incidents_never_contradict_each_other() {
    let f = fixture().await;
    let history = f.core_with(History::in_memory().incident_quiet(Duration::from_secs(60)));
    let mut settings = status_http::StatusPageSettings::default();
    settings.public.push(PublicGroup::new("core", "Checkout"));
    settings.publication = Publication::After(Duration::from_secs(120));
    let app = with_page(&f, &history, settings).await;
    let banner = |page: &str| {
        let at = page.find("id=\"indicator\"").expect("a banner");
        page[at..page[at..].find("</p>").unwrap() + at].to_owned()
    };
    let open = |page: &str| page.contains("id=\"open-incidents\"");

    settle(&history).await;
    let calm = get(&app, "/status/page").await.body;
    assert!(
        banner(&calm).contains("All Systems Operational"),
        "{}",
        banner(&calm)
    );
    assert!(!open(&calm));

    f.set(&f.db, CheckStatus::Outage).await;
    settle(&history).await;
    let early = get(&app, "/status/page").await.body;
    assert!(
        banner(&early).contains("data-indicator=\"critical\""),
        "{}",
        banner(&early)
    );
    assert!(open(&early), "a red banner over no open incident: {early}");
    assert!(
        early.contains("Outage of Checkout") && early.contains("investigating"),
        "{early}"
    );
    let json = get(&app, "/api/v2/incidents/unresolved.json").await.json();
    assert_eq!(
        json["incidents"].as_array().unwrap().len(),
        0,
        "not public yet: {json}"
    );

    // Public after two minutes: the incident itself, once.
    tokio::time::sleep(Duration::from_secs(125)).await;
    settle(&history).await;
    let public = get(&app, "/status/page").await.body;
    assert_eq!(public.matches("class=\"incident ").count(), 1, "{public}");

    // Back, the incident open for its quiet minute: watched, not "All Systems Operational".
    f.set(&f.db, CheckStatus::Ok).await;
    settle(&history).await;
    let back = get(&app, "/status/page").await.body;
    assert!(open(&back), "{back}");
    assert!(
        banner(&back).contains("the open incident is being watched")
            && !banner(&back).contains("All Systems Operational"),
        "{}",
        banner(&back)
    );
    // Resolved: operational again, nothing open.
    tokio::time::sleep(Duration::from_secs(65)).await;
    settle(&history).await;
    let after = get(&app, "/status/page").await.body;
    assert!(
        banner(&after).contains("All Systems Operational"),
        "{}",
        banner(&after)
    );
    assert!(!open(&after), "{after}");
}

/// Mounted under a prefix (`/ops`), with the page's address given with it: the feed's and
/// the JSON's links carry the prefix.
#[tokio::test(start_paused = true)]
async fn mount_prefix() {
    let f = fixture().await;
    let history = f.core_with(History::in_memory());
    let routes = status_http::Routes::new(&f.registry)
        .history(history.clone())
        .status_page_url("https://shop.example/ops")
        .public_group(PublicGroup::new("core", "Checkout"))
        .build();
    let app = axum::Router::new().nest("/ops", routes);
    settle(&history).await;
    let feed = get(&app, "/ops/history.atom").await;
    assert_eq!(feed.status, StatusCode::OK, "{}", feed.body);
    let feed: atom_syndication::Feed = feed.body.parse().unwrap();
    assert!(
        feed.links()
            .iter()
            .any(|l| l.href() == "https://shop.example/ops/status/page"),
        "{:?}",
        feed.links()
    );
    let page = get(&app, "/ops/api/v2/summary.json").await.json();
    assert_eq!(page["page"]["url"], "https://shop.example/ops", "{page}");
    assert_eq!(get(&app, "/ops/status/page").await.status, StatusCode::OK);
}
