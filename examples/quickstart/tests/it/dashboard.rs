//! The dashboard in a real headless Chromium, driven over WebDriver (Debian's `chromium` and
//! `chromium-driver`, installed by `scripts/test`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use quickstart::{app, Config, Demo};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::time::Instant;

use crate::common;
use crate::processes;

const TOKEN: &str = "dashboard-test-token";

/// A chromedriver on a free port and the profile of its browser, both gone when dropped.
struct Driver {
    child: Child,
    port: u16,
    profile: PathBuf,
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
        // The browser outlives a killed chromedriver (its processes go to init, a run left
        // thirty of them): stopped by its profile, which is this driver's alone.
        Command::new("pkill")
            .args(["-KILL", "-f"])
            .arg(format!("user-data-dir={}( |$)", self.profile.display()))
            .status()
            .ok();
        std::fs::remove_dir_all(&self.profile).ok();
    }
}

async fn browser() -> (Driver, Client) {
    // Installed by scripts/test (chromium-driver).
    let (child, port) = processes::on_a_free_port("chromedriver", |port| {
        let mut command = Command::new("chromedriver");
        command
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    });
    let profile =
        std::env::temp_dir().join(format!("status-chromium-{}-{port}", std::process::id()));
    let driver = Driver {
        child,
        port,
        profile: profile.clone(),
    };
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": "/usr/bin/chromium",
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-extensions",
                "--window-size=1280,2200",
                format!("--user-data-dir={}", profile.display()),
            ],
        }),
    );
    capabilities.insert("goog:loggingPrefs".into(), json!({ "browser": "ALL" }));
    // Plain HTTP to the local chromedriver: no TLS stack needed.
    // A chromedriver that listens may still reset its first session request while it
    // starts (seen with six browsers starting at once on two cores): asked again.
    let mut attempt = 0;
    let client = loop {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        match ClientBuilder::new(connector)
            .capabilities(capabilities.clone())
            .connect(&format!("http://127.0.0.1:{}", driver.port))
            .await
        {
            Ok(client) => break client,
            Err(e) if attempt < 5 => {
                attempt += 1;
                eprintln!("a Chromium session, attempt {attempt}: {e}");
                tokio::time::sleep(Duration::from_millis(500 * attempt)).await;
            }
            Err(e) => panic!("a Chromium session: {e}"),
        }
    };
    (driver, client)
}

/// Chromedriver's browser log (`/se/log`): the console's messages.
#[derive(Debug)]
struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(r#"{"type":"browser"}"#.to_owned()))
    }
}

async fn console_errors(client: &Client) -> Vec<String> {
    let log = client.issue_cmd(BrowserLog).await.expect("the browser log");
    log.as_array()
        .into_iter()
        .flatten()
        .filter(|entry| entry["level"] == "SEVERE")
        .map(|entry| entry["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn js(client: &Client, script: &str) -> Value {
    client.execute(script, vec![]).await.expect(script)
}

/// Polls `script` in the page until it returns `true`, for at most 20 s.
async fn until(client: &Client, what: &str, script: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while js(client, script).await != Value::Bool(true) {
        assert!(Instant::now() < deadline, "{what}: `{script}` never held");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The element at `css`.
async fn element(client: &Client, css: &str) -> fantoccini::elements::Element {
    client.find(Locator::Css(css)).await.unwrap()
}

/// Opens the dashboard and waits for its live stream.
async fn open(client: &Client, addr: SocketAddr) {
    client.goto(&format!("http://{addr}/status")).await.unwrap();
    until(
        client,
        "connected",
        "return document.getElementById('connection').textContent === 'live'",
    )
    .await;
}

/// Clicks `css`, finding it again if a live update replaced it in between.
async fn click_retrying(client: &Client, css: &str) {
    for _ in 0..20 {
        let clicked = match client.find(Locator::Css(css)).await {
            Ok(element) => element.click().await.is_ok(),
            Err(_) => false,
        };
        if clicked {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("could not click {css}");
}

async fn serve(router: axum::Router) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    addr
}

async fn demo() -> (Demo, SocketAddr) {
    let demo = Demo::start(Config {
        period: Duration::from_millis(100),
        timeout: Duration::from_millis(500),
        admin_token: TOKEN.to_owned(),
        ..Config::default()
    })
    .unwrap();
    demo.registry.refresh_all().await;
    let addr = serve(app(&demo)).await;
    (demo, addr)
}

/// The demo checked every 100 ms with a history in a fresh directory named `name`, the rest
/// of `config` as given; every dependency checked once.
async fn demo_with_history(name: &str, config: Config) -> Demo {
    let dir = common::fresh_dir(name);
    let demo = Demo::start(Config {
        period: Duration::from_millis(100),
        timeout: Duration::from_millis(500),
        admin_token: TOKEN.to_owned(),
        history: Some(quickstart::HistoryTarget::Sqlite(dir.join("history.db"))),
        ..config
    })
    .unwrap();
    demo.registry.refresh_all().await;
    demo
}

async fn http(method: &str, addr: SocketAddr, path: &str, body: &str) -> (u16, Value) {
    let (code, body) = common::request(addr, method, path, Some(TOKEN), body).await;
    (code, serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn screenshot_path() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    std::fs::create_dir_all(&target).unwrap();
    target.join("dashboard-degraded.png")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_is_clean_and_follows_chaos_without_a_reload() {
    let (_demo, addr) = demo().await;
    let (_driver, client) = browser().await;
    open(&client, addr).await;

    // Every resource came from this server.
    let origins = js(
        &client,
        "return performance.getEntriesByType('resource').map(e => new URL(e.name).origin)",
    )
    .await;
    let here = format!("http://{addr}");
    let origins: Vec<&str> = origins
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    assert!(!origins.is_empty());
    assert!(
        origins.iter().all(|o| *o == here),
        "outside requests: {origins:?}"
    );
    assert_eq!(console_errors(&client).await, Vec::<String>::new());

    // Break things through the chaos API; the page follows without reloading.
    js(&client, "window.__notReloaded = true; return true").await;
    for (id, mode) in [
        ("primary-db", "outage"),
        ("payments-api", "outage"),
        ("cache", "error"),
    ] {
        let (code, _) = http(
            "PUT",
            addr,
            &format!("/demo/chaos/{id}"),
            &format!(r#"{{"mode":"{mode}"}}"#),
        )
        .await;
        assert_eq!(code, 200);
    }
    until(
        &client,
        "banner turns OUTAGE",
        "return document.getElementById('banner').dataset.condition === 'OUTAGE'",
    )
    .await;
    until(
        &client,
        "primary-db row turns OUTAGE",
        "const d = document.getElementById('dep-primary-db'); return d !== null && d.dataset.status === 'OUTAGE'",
    )
    .await;
    until(
        &client,
        "checkout turns off",
        "return document.getElementById('feature-checkout').dataset.enabled === 'false'",
    )
    .await;
    assert_eq!(
        js(&client, "return window.__notReloaded === true").await,
        Value::Bool(true)
    );
    let banner = element(&client, "#banner .why").await.text().await.unwrap();
    assert!(
        banner.contains("primary-db (REQUIRED) is OUTAGE"),
        "{banner}"
    );

    // Let the cache's hysteresis run out too, then keep a picture of the degraded page.
    until(
        &client,
        "cache turns OUTAGE",
        "const d = document.getElementById('dep-cache'); return d !== null && d.dataset.status === 'OUTAGE'",
    )
    .await;
    let png = client.screenshot().await.unwrap();
    std::fs::write(screenshot_path(), png).unwrap();

    // Filters apply in place.
    element(&client, "#filter-q")
        .await
        .send_keys("payments")
        .await
        .unwrap();
    until(
        &client,
        "filter hides the others",
        "return document.getElementById('dep-primary-db').hidden && !document.getElementById('dep-payments-api').hidden",
    )
    .await;
    assert_eq!(console_errors(&client).await, Vec::<String>::new());

    // On a phone-sized screen nothing overflows sideways.
    client.set_window_size(390, 844).await.unwrap();
    until(
        &client,
        "no horizontal scroll at 390 px",
        "return document.documentElement.scrollWidth <= window.innerWidth",
    )
    .await;
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shedding_panel_follows_a_burst_without_a_reload() {
    let demo = Demo::start(Config {
        period: Duration::from_millis(100),
        admin_token: TOKEN.to_owned(),
        shed: quickstart::Shed {
            limit: quickstart::LimitChoice::Fixed(1),
            queue: 0,
            ..quickstart::Shed::default()
        },
        ..Config::default()
    })
    .unwrap();
    demo.registry.refresh_all().await;
    let addr = serve(app(&demo)).await;
    let (_driver, client) = browser().await;
    open(&client, addr).await;
    // The panel's count of requests refused for a full queue.
    const REFUSED: &str = "[...document.querySelectorAll('[data-panel] .facts div')]
        .find(d => d.querySelector('dt').textContent === 'Refused, queue full')
        .querySelector('dd').textContent";
    assert_eq!(js(&client, &format!("return {REFUSED}")).await, json!("0"));
    js(&client, "window.__notReloaded = true; return true").await;

    // A burst: one request works for a second, the other nine are refused at once.
    let burst: Vec<_> = (0..10)
        .map(|_| tokio::spawn(common::request(addr, "GET", "/demo/work?ms=1000", None, "")))
        .collect();
    let mut codes = Vec::new();
    for request in burst {
        codes.push(request.await.unwrap().0);
    }
    codes.sort_unstable();
    assert_eq!(codes, [200, 429, 429, 429, 429, 429, 429, 429, 429, 429]);

    until(
        &client,
        "the panel counts the refusals",
        &format!("return {REFUSED} === '9'"),
    )
    .await;
    until(
        &client,
        "the chart of refusals rises above its axis",
        r#"const line = [...document.querySelectorAll('[data-panel] figure')]
            .find(f => f.querySelector('figcaption').textContent.startsWith('Refused per second'))
            .querySelector('polyline');
        return line.points.length > 0 && [...line.points].some(p => p.y < 78)"#,
    )
    .await;
    // Drawn at a readable size, and the page was updated in place.
    let width = js(
        &client,
        "return document.querySelector('[data-panel] svg').getBoundingClientRect().width",
    )
    .await;
    assert!(width.as_f64().unwrap() > 200.0, "{width}");
    assert_eq!(
        js(&client, "return window.__notReloaded === true").await,
        Value::Bool(true)
    );
    assert_eq!(console_errors(&client).await, Vec::<String>::new());
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_override_made_on_the_page_shows_on_features() {
    let (_demo, addr) = demo().await;
    let (_driver, client) = browser().await;
    open(&client, addr).await;

    element(&client, "#token")
        .await
        .send_keys(TOKEN)
        .await
        .unwrap();
    element(&client, "#token-form button[type=submit]")
        .await
        .click()
        .await
        .unwrap();
    until(
        &client,
        "token kept",
        "return document.body.classList.contains('has-token')",
    )
    .await;

    let form = "#feature-search-box form.override-form";
    // Once focus is in the form, live updates wait for the operator to leave it; until then
    // an update may replace the form under the driver's reference.
    click_retrying(&client, &format!("{form} input[name=reason]")).await;
    element(&client, &format!("{form} select[name=enabled]"))
        .await
        .select_by_value("false")
        .await
        .unwrap();
    element(&client, &format!("{form} input[name=reason]"))
        .await
        .send_keys("reindexing, from the page")
        .await
        .unwrap();
    element(&client, &format!("{form} button[type=submit]"))
        .await
        .click()
        .await
        .unwrap();
    until(
        &client,
        "the page confirms",
        "return document.getElementById('action-result').textContent.startsWith('Override set')",
    )
    .await;

    let (code, feature) = http("GET", addr, "/features/search-box", "").await;
    assert_eq!(code, 200);
    assert_eq!(feature["enabled"], false);
    assert_eq!(feature["override"]["reason"], "reindexing, from the page");
    let (_, all) = http("GET", addr, "/features", "").await;
    let listed = all["features"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "search-box")
        .unwrap()
        .clone();
    assert_eq!(listed["override"]["enabled"], false);
    until(
        &client,
        "the page shows the override",
        "return document.querySelector('#feature-search-box .override') !== null",
    )
    .await;
    // The token stays in this tab only.
    assert_eq!(js(&client, "return localStorage.length").await, json!(0));
    assert_eq!(console_errors(&client).await, Vec::<String>::new());
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mute_made_on_the_page_shows_with_the_audit_trail() {
    let (_demo, addr) = demo().await;
    let (_driver, client) = browser().await;
    open(&client, addr).await;
    assert_eq!(
        js(
            &client,
            "return getComputedStyle(document.getElementById('audit')).display"
        )
        .await,
        json!("none"),
        "no token, no audit trail"
    );
    element(&client, "#token")
        .await
        .send_keys(TOKEN)
        .await
        .unwrap();
    element(&client, "#token-form button[type=submit]")
        .await
        .click()
        .await
        .unwrap();

    let form = "#dep-cache form.mute-form";
    click_retrying(&client, &format!("{form} input[name=reason]")).await;
    element(&client, &format!("{form} input[name=reason]"))
        .await
        .send_keys("cache upgrade, from the page")
        .await
        .unwrap();
    element(&client, &format!("{form} button[type=submit]"))
        .await
        .click()
        .await
        .unwrap();
    until(
        &client,
        "the page confirms",
        "return document.getElementById('action-result').textContent.startsWith('Muted cache')",
    )
    .await;
    let (code, mutes) = http("GET", addr, "/admin/mutes", "").await;
    assert_eq!(code, 200);
    assert_eq!(mutes["mutes"][0]["dependency"], "cache");
    assert_eq!(mutes["mutes"][0]["reason"], "cache upgrade, from the page");
    until(
        &client,
        "the dependency shows its mute",
        "const p = document.querySelector('#dep-cache .mute'); return p !== null && p.textContent.includes('cache upgrade, from the page')",
    )
    .await;
    until(
        &client,
        "the audit trail shows the call",
        "return [...document.querySelectorAll('#audit-rows td')].some((td) => td.textContent === 'PUT /admin/mutes/cache')",
    )
    .await;

    click_retrying(&client, "#dep-cache button[data-action=unmute]").await;
    until(
        &client,
        "the mute is gone",
        "return document.querySelector('#dep-cache .mute') === null",
    )
    .await;
    let (_, mutes) = http("GET", addr, "/admin/mutes", "").await;
    assert_eq!(mutes["mutes"], json!([]));
    assert_eq!(console_errors(&client).await, Vec::<String>::new());
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_names_and_messages_stay_text() {
    use status_core::{check, CheckStatus, Dependency, Feature, Registry};
    const HOSTILE: &str =
        r#"<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">"#;
    let registry = Registry::builder().appname("<b>app</b>").build();
    registry
        .add(
            Dependency::builder(
                "hostile",
                check::tiered(|| async { (CheckStatus::Major, HOSTILE) }),
            )
            .description(HOSTILE)
            .kind(HOSTILE)
            .tag(HOSTILE)
            .documentation_url("javascript:window.__pwned=3")
            .build()
            .unwrap(),
        )
        .unwrap();
    registry
        .add_feature(
            Feature::builder("f")
                .description(HOSTILE)
                .requires("hostile", CheckStatus::Ok)
                .build()
                .unwrap(),
        )
        .unwrap();
    registry.refresh_all().await;
    let addr = serve(status_http::routes(&registry)).await;
    let (_driver, client) = browser().await;
    open(&client, addr).await;
    assert_eq!(
        js(&client, "return typeof window.__pwned").await,
        json!("undefined")
    );
    let description = element(&client, "#dep-hostile .description")
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(description, HOSTILE);
    let message = element(&client, "#dep-hostile .message")
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(message, HOSTILE);
    assert_eq!(
        js(
            &client,
            "return document.querySelectorAll('#live img, #live script').length"
        )
        .await,
        json!(0)
    );
    assert_eq!(
        js(
            &client,
            "return document.querySelectorAll('a[href^=\"javascript:\"]').length"
        )
        .await,
        json!(0),
        "only http(s) documentation links are rendered"
    );
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_page_shows_tiles_and_with_a_token_the_audit_trail() {
    let demo = demo_with_history(
        "status-dashboard-history",
        Config {
            slos: vec!["pay=dependency:payments-api@99/30d".parse().unwrap()],
            // The token is carol's: the trail names her, whatever a body claims.
            admin_auth: Some(status_http::AdminAuth::parse(&format!("carol:{TOKEN}")).unwrap()),
            ..Config::default()
        },
    )
    .await;
    let addr = serve(app(&demo)).await;
    let (code, _) = http(
        "PUT",
        addr,
        "/demo/chaos/payments-api",
        r#"{"mode":"outage"}"#,
    )
    .await;
    assert_eq!(code, 200);
    let (code, _) = http(
        "PUT",
        addr,
        "/admin/mutes/search",
        r#"{"ttlSeconds":600,"reason":"reindex","actor":"mallory"}"#,
    )
    .await;
    assert_eq!(code, 200);
    tokio::time::sleep(Duration::from_millis(500)).await;
    demo.history.as_ref().unwrap().flush().await;

    let (_driver, client) = browser().await;
    open(&client, addr).await;
    // The objective on the dashboard: its page alert and a bar per burn window.
    until(
        &client,
        "the objective on the dashboard",
        "const o = document.querySelector('#objectives-live li[data-slo=\"pay\"]');
         return o !== null && !document.getElementById('objectives-live').hidden
           && o.querySelector('.alert.page') !== null && o.querySelectorAll('svg.burn rect').length === 6",
    )
    .await;
    element(&client, "#history-link")
        .await
        .click()
        .await
        .unwrap();
    until(
        &client,
        "the history page",
        "return location.pathname === '/status/history'",
    )
    .await;
    // Without the token: tiles, no audit.
    let today = js(
        &client,
        "const row = document.querySelector('[data-series=\"dependency:payments-api\"]');
         const tiles = row.querySelectorAll('ol.tiles li');
         return [tiles.length, tiles[tiles.length - 1].className, tiles[tiles.length - 1].title]",
    )
    .await;
    assert_eq!(today[0], json!(90), "{today}");
    assert_eq!(today[1], json!("outage"), "{today}");
    assert!(today[2].as_str().unwrap().contains("% up"), "{today}");
    // The objective on the history page, drawn by the server: its meter and six bars.
    let objective = js(
        &client,
        "const o = document.querySelector('figure.objective[data-slo=\"pay\"]');
         return [o.querySelectorAll('svg.burn rect').length, o.querySelector('meter') !== null, o.querySelector('.alert') && o.querySelector('.alert').textContent]",
    )
    .await;
    assert_eq!(objective, json!([6, true, "page"]), "{objective}");
    assert_eq!(
        js(
            &client,
            "return document.getElementById('audit-table').hidden"
        )
        .await,
        json!(true)
    );
    // The tiles fit a row at a readable size.
    let width = js(
        &client,
        "return document.querySelector('[data-series=\"system:system\"] ol.tiles').getBoundingClientRect().width",
    )
    .await;
    assert!(width.as_f64().unwrap() > 300.0, "{width}");

    // With the token (kept for the tab on the dashboard), the audit trail fills in.
    client.goto(&format!("http://{addr}/status")).await.unwrap();
    element(&client, "#token")
        .await
        .send_keys(TOKEN)
        .await
        .unwrap();
    element(&client, "#token-form button[type=submit]")
        .await
        .click()
        .await
        .unwrap();
    until(
        &client,
        "token kept",
        "return document.body.classList.contains('has-token')",
    )
    .await;
    client
        .goto(&format!("http://{addr}/status/history"))
        .await
        .unwrap();
    until(
        &client,
        "the audit trail with the mute",
        "const t = document.getElementById('audit-table');
         return !t.hidden && [...t.tBodies[0].rows].some(r => r.textContent.includes('/admin/mutes/search') && r.textContent.includes('carol') && r.textContent.includes('reindex'))",
    )
    .await;
    // One dependency's page: tiles, chart, transitions.
    element(&client, "a[href='history/payments-api']")
        .await
        .click()
        .await
        .unwrap();
    until(
        &client,
        "the dependency's page",
        "return document.querySelectorAll('#tiles li').length === 90 && document.querySelectorAll('#transitions tbody tr').length > 0",
    )
    .await;
    assert_eq!(console_errors(&client).await, Vec::<String>::new());
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_public_status_page_shows_an_incident_and_its_recovery_without_a_reload() {
    let demo = demo_with_history(
        "status-page-chromium",
        Config {
            incident_quiet: Duration::from_secs(2),
            ..Config::default()
        },
    )
    .await;
    let addr = serve(app(&demo)).await;
    let history = demo.history.clone().unwrap();
    let (code, _) = http(
        "PUT",
        addr,
        "/demo/chaos/primary-db",
        r#"{"mode":"outage"}"#,
    )
    .await;
    assert_eq!(code, 200);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    history.flush().await;
    let (code, incidents) = http("GET", addr, "/admin/incidents", "").await;
    assert_eq!(code, 200);
    let id = incidents["incidents"][0]["id"]
        .as_i64()
        .expect("an incident");
    let (code, _) = http(
        "POST",
        addr,
        &format!("/admin/incidents/{id}/updates"),
        r#"{"status":"identified","message":"The primary database lost its disk; failing over."}"#,
    )
    .await;
    assert_eq!(code, 201);
    tokio::time::sleep(Duration::from_millis(1100)).await;

    let (_driver, client) = browser().await;
    client
        .goto(&format!("http://{addr}/status/page"))
        .await
        .unwrap();
    until(
        &client,
        "the outage on the page",
        "return document.getElementById('indicator').dataset.indicator === 'critical'",
    )
    .await;
    let open = js(
        &client,
        "return document.getElementById('open-incidents').textContent",
    )
    .await;
    let open = open.as_str().unwrap();
    assert!(open.contains("Outage of"), "{open}");
    assert!(
        open.contains("The primary database lost its disk"),
        "{open}"
    );
    assert!(
        !open.contains("primary-db"),
        "no dependency id on the public page: {open}"
    );
    let tiles = js(
        &client,
        "return [...document.querySelectorAll('#components ol.tiles')].map(o => o.children.length)",
    )
    .await;
    assert!(
        tiles.as_array().unwrap().iter().all(|n| *n == json!(90)),
        "{tiles}"
    );
    let origins = js(
        &client,
        "return performance.getEntriesByType('resource').map(e => new URL(e.name).origin)",
    )
    .await;
    let here = format!("http://{addr}");
    assert!(
        origins
            .as_array()
            .unwrap()
            .iter()
            .all(|o| *o == json!(here)),
        "outside requests: {origins}"
    );
    assert_eq!(console_errors(&client).await, Vec::<String>::new());
    client.set_window_size(1100, 720).await.unwrap();
    let png = client.screenshot().await.unwrap();
    let shot = screenshot_path().with_file_name("status-page.png");
    std::fs::write(&shot, png).unwrap();

    // The same page in German, as a reader who asks for it sees it.
    client
        .goto(&format!("http://{addr}/status/page?lang=de"))
        .await
        .unwrap();
    until(
        &client,
        "the page in German",
        "return document.documentElement.lang === 'de'
           && document.getElementById('open-incidents').textContent.includes('Ausfall')",
    )
    .await;
    let png = client.screenshot().await.unwrap();
    std::fs::write(shot.with_file_name("status-page-de.png"), png).unwrap();
    client
        .goto(&format!("http://{addr}/status/page"))
        .await
        .unwrap();

    // Recovery and the quiet time: the page follows without reloading.
    js(&client, "window.__notReloaded = true; return true").await;
    let (code, _) = http("PUT", addr, "/demo/chaos/primary-db", r#"{"mode":"ok"}"#).await;
    assert_eq!(code, 200);
    until(
        &client,
        "the incident resolved, past",
        "return document.getElementById('indicator').dataset.indicator === 'none'
           && !document.getElementById('open-incidents')
           && document.getElementById('past-incidents').textContent.includes('Outage of')",
    )
    .await;
    assert_eq!(
        js(&client, "return window.__notReloaded === true").await,
        json!(true)
    );
    assert_eq!(console_errors(&client).await, Vec::<String>::new());
}

/// A fleet of three data centers as an operator meets it during an incident: dc-1 mostly
/// down for `primary-db` (shared), one instance of dc-0 failing its own `disk`, dc-2 healthy.
fn incident_fleet() -> status_fleet::FleetView {
    use status_core::CheckStatus;
    use status_fleet::{FailingDependency, FleetView, HealthRule, InstanceSummary};
    let mut summaries = Vec::new();
    let mut add = |id: String, dc: &str, condition, failing: Vec<FailingDependency>| {
        summaries.push((
            InstanceSummary::new(id, dc, condition, Vec::new(), "1.4.2").with_failing(failing),
            Duration::from_millis(400),
        ));
    };
    for i in 0..12 {
        let down = i < 9;
        let (condition, failing) = if down {
            (
                CheckStatus::Outage,
                vec![FailingDependency::new("primary-db", CheckStatus::Outage)],
            )
        } else {
            (CheckStatus::Ok, Vec::new())
        };
        add(format!("web-1-{i:02}"), "dc-1", condition, failing);
    }
    for i in 0..10 {
        let (condition, failing) = if i == 3 {
            (
                CheckStatus::Outage,
                vec![FailingDependency::new("disk", CheckStatus::Outage)],
            )
        } else {
            (CheckStatus::Ok, Vec::new())
        };
        add(format!("web-0-{i:02}"), "dc-0", condition, failing);
    }
    for i in 0..10 {
        add(format!("web-2-{i:02}"), "dc-2", CheckStatus::Ok, Vec::new());
    }
    FleetView::new(summaries, Duration::from_secs(3), HealthRule::default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fleet_page_leads_with_what_fails() {
    let registry = status_core::Registry::new();
    let view = std::sync::Arc::new(incident_fleet());
    let router = status_http::Routes::new(&registry)
        .fleet(move || std::sync::Arc::clone(&view))
        .build();
    let addr = serve(router).await;
    let (_driver, client) = browser().await;
    client.set_window_size(1100, 900).await.unwrap();
    client
        .goto(&format!("http://{addr}/status/fleet"))
        .await
        .unwrap();
    // What fails first: dc-1's shared outage, then dc-0's own disk.
    let first = js(
        &client,
        "return [...document.querySelectorAll('#fleet-failing li')].map(l => l.textContent.trim())",
    )
    .await;
    let first = first.as_array().unwrap();
    assert!(
        first[0]
            .as_str()
            .unwrap()
            .contains("primary-db OUTAGE on 9 of 12 in dc-1, shared"),
        "{first:?}"
    );
    assert!(first[1]
        .as_str()
        .unwrap()
        .contains("disk OUTAGE on 1 of 10 in dc-0"));
    // The data centers, the worst first; the healthy one a count and a link.
    let order = js(
        &client,
        "return [...document.querySelectorAll('section.fleet-dc')].map(s => s.id)",
    )
    .await;
    assert_eq!(order, json!(["dc-dc-1", "dc-dc-0", "dc-dc-2"]));
    let healthy = element(&client, "#dc-dc-2 .fleet-unlisted-dc").await;
    assert!(healthy.text().await.unwrap().contains("10 fresh instances"));
    // dc-1's troubled instances listed, its healthy three collapsed.
    let troubled = js(
        &client,
        "return document.querySelectorAll('#dc-dc-1 table.panel-table tbody tr[data-instance]').length",
    )
    .await;
    assert!(troubled.as_u64().unwrap() >= 9, "{troubled}");
    let collapsed = element(&client, "#dc-dc-1 details.fleet-healthy").await;
    assert_eq!(
        collapsed.attr("data-count").await.unwrap().as_deref(),
        Some("3")
    );
    assert_eq!(console_errors(&client).await, Vec::<String>::new());
    let png = client.screenshot().await.unwrap();
    let shot = screenshot_path().with_file_name("fleet-page.png");
    std::fs::write(&shot, png).unwrap();
}

/// Holds an event stream of `path` open from this machine's address: the request sent and
/// the answer's head read, the connection kept.
async fn hold_stream(addr: SocketAddr, path: &str) -> tokio::net::TcpStream {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = [0u8; 64];
    let n = stream.read(&mut head).await.unwrap();
    let head = String::from_utf8_lossy(&head[..n]);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    stream
}

/// When one address holds its share of event streams, a page it opens is refused a stream
/// (429) and falls back to refreshing every minute: it says so, and is never stuck on what
/// it showed at load nor retrying every two seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_refused_its_stream_falls_back_to_refreshing() {
    let demo = demo_with_history("refused-streams", Config::default()).await;
    // Served with each connection's address, as status_http::serve does.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = app(&demo).into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let mut held = Vec::new();
    for _ in 0..8 {
        held.push(hold_stream(addr, "/status/page/events").await);
        held.push(hold_stream(addr, "/status/events").await);
    }
    let (_driver, client) = browser().await;
    client
        .goto(&format!("http://{addr}/status/page"))
        .await
        .unwrap();
    until(
        &client,
        "the page polls",
        "return document.documentElement.dataset.updates === 'polling'",
    )
    .await;
    client.goto(&format!("http://{addr}/status")).await.unwrap();
    until(
        &client,
        "the dashboard says it refreshes every minute",
        "return document.getElementById('connection').textContent.includes('every minute')",
    )
    .await;
    let (_, metrics) = common::request(addr, "GET", "/metrics", None, "").await;
    for stream in ["page", "dashboard"] {
        let line = format!(
            r#"status_http_event_streams_refused_total{{stream="{stream}",reason="address"}}"#
        );
        let refused: f64 = metrics
            .lines()
            .find(|l| l.starts_with(&line))
            .and_then(|l| l.split_whitespace().last())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0.0);
        assert!(refused >= 1.0, "{stream}: {metrics}");
    }
    drop(held);
}

/// The embed renders in a cross-origin frame on an origin the application names, and on no
/// other: two parent pages on two origins (two ports), the same `<iframe>` in each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embed_renders_in_a_frame_only_where_the_application_allows() {
    let allowed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let other = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (allowed_addr, other_addr) = (allowed.local_addr().unwrap(), other.local_addr().unwrap());
    let demo = Demo::start(Config {
        period: Duration::from_millis(100),
        timeout: Duration::from_millis(500),
        admin_token: TOKEN.to_owned(),
        embed_origins: vec![format!("http://{allowed_addr}")],
        ..Config::default()
    })
    .unwrap();
    demo.registry.refresh_all().await;
    let addr = serve(app(&demo)).await;
    let parent = axum::Router::new().route(
        "/",
        axum::routing::get(move || async move {
            axum::response::Html(format!(
                "<!doctype html><title>shop</title><iframe src=\"http://{addr}/status/embed\" \
                 width=\"400\" height=\"300\"></iframe>"
            ))
        }),
    );
    for listener in [allowed, other] {
        let parent = parent.clone();
        tokio::spawn(async move { axum::serve(listener, parent).await.unwrap() });
    }
    let (_driver, client) = browser().await;
    let framed = |at: SocketAddr| {
        let client = client.clone();
        async move {
            client.goto(&format!("http://{at}/")).await.unwrap();
            // The frame's document, once it has loaded (or failed to).
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                client.enter_frame(0).await.unwrap();
                let state = js(
                    &client,
                    "return [document.readyState, document.URL, \
                     (document.querySelector('.word') || {}).textContent || null]",
                )
                .await;
                client.enter_parent_frame().await.unwrap();
                // A frame starts as about:blank, already complete: wait for its navigation.
                let loaded = state[0] == "complete" && state[1] != "about:blank";
                assert!(
                    loaded || Instant::now() < deadline,
                    "the frame never loaded: {state}"
                );
                if loaded {
                    return (state[1].to_string(), state[2].as_str().map(str::to_owned));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    let (url, shown) = framed(allowed_addr).await;
    assert_eq!(shown.as_deref(), Some("All Systems Operational"), "{url}");
    let (url, shown) = framed(other_addr).await;
    assert_eq!(
        shown, None,
        "an origin the application did not name framed the embed ({url})"
    );
}
