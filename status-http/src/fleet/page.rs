//! `GET /status/fleet`: the fleet on the dashboard.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use status_core::CheckStatus;
use status_fleet::{DatacenterView, InstanceQuery, InstanceView};

use super::{list, FleetQuery};
use crate::error::ApiError;
use crate::query::Params;

/// The fleet page's view: computed here, printed (and escaped) by the template.
#[derive(askama::Template)]
#[template(path = "fleet.html")]
struct FleetPage {
    hostname: String,
    stale: bool,
    /// What fails holds this instance's own rows only, the whole list on its way.
    failing_partial: bool,
    fail_open: bool,
    /// Why the instances could not be listed, if they could not.
    unlisted: Option<String>,
    /// The next page's query string.
    next: Option<String>,
    /// What fails across the fleet, shared first, then the worst (at most [`FAILING_SHOWN`]).
    failing: Vec<FailingRow>,
    /// How many more failing rows there are.
    failing_more: usize,
    /// The data centers, worst first.
    datacenters: Vec<DcRow>,
}

/// The most rows of what fails shown, fleet-wide and per data center.
const FAILING_SHOWN: usize = 12;

struct DcRow {
    name: String,
    healthy: bool,
    class: &'static str,
    label: &'static str,
    serving: usize,
    fresh: usize,
    failing: Vec<FailingRow>,
    failing_more: usize,
    /// Instances in trouble (not OK, held, or stale), listed.
    troubled: Vec<InstanceRow>,
    /// Healthy instances on this page (OK, in rotation, fresh), collapsed to a count.
    healthy_rows: Vec<InstanceRow>,
    /// Whether its instances were listed on this page (the landing page lists only the data
    /// centers in trouble).
    listed: bool,
    /// The link to more of its instances, when there are.
    more: Option<String>,
    /// The link to its instances.
    list: String,
}

struct FailingRow {
    text: String,
    class: &'static str,
    dependency: String,
    level: &'static str,
    shared: bool,
}

impl FailingRow {
    fn of(failure: &status_fleet::DependencyFailure, with_datacenter: bool) -> Self {
        let mut text = if with_datacenter {
            failure.to_string()
        } else {
            let shared = if failure.shared { ", shared" } else { "" };
            format!(
                "{} {} on {} of {}{shared}",
                failure.dependency, failure.level, failure.instances, failure.fresh
            )
        };
        if let Some(first) = failure.since {
            text += &super::wall(first).format(", since %H:%M UTC").to_string();
        }
        Self {
            text,
            class: match failure.level {
                CheckStatus::Ok => "ok",
                CheckStatus::Minor => "minor",
                CheckStatus::Major => "major",
                CheckStatus::Outage => "outage",
            },
            dependency: failure.dependency.clone(),
            level: failure.level.as_str(),
            shared: failure.shared,
        }
    }
}

struct InstanceRow {
    id: String,
    url: String,
    condition: &'static str,
    /// Its failing dependencies (the first few), as it published them.
    failing: String,
    holds: String,
    version: String,
    age: String,
    stale: bool,
}

/// GET `/status/fleet`: the fleet on the dashboard: data centers (from memory) and a page of
/// their instances (from the store: `?datacenter=`, `?cursor=`, `?limit=`), holds, stale ones
/// marked, links to each instance's dashboard and to the next page. With the store down the
/// page still shows the data centers, and says why the instances are missing.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/status/fleet", tag = "fleet",
    params(FleetQuery),
    responses(
        (status = 200, description = "The fleet page", content_type = "text/html", body = String),
        (status = 400, description = "A limit out of range, or a cursor the store did not hand out", body = crate::schema::Error),
        (status = 404, description = "This instance has no fleet view: a page that says what to configure", content_type = "text/html", body = String),
        (status = "default", description = "A rejected request (400, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn page(
    State(state): State<Arc<super::FleetState>>,
    Params(query): Params<FleetQuery>,
) -> Result<Response, ApiError> {
    use askama::Template;

    let Some(fleet) = state.fleet.as_ref() else {
        // A person at a browser: a page that says what is missing, not a JSON error.
        let mut response = (StatusCode::NOT_FOUND, axum::response::Html(NO_FLEET)).into_response();
        response.headers_mut().insert(
            axum::http::header::CONTENT_SECURITY_POLICY,
            axum::http::HeaderValue::from_static(crate::dashboard::CSP),
        );
        return Ok(response);
    };
    let mut query = query.query()?;
    let view = fleet.looked_at();
    // The landing page lists the data centers in trouble, each a page of its instances worst
    // first; a data center asked for by name is listed worst first, a page at a time; a cursor
    // over every data center pages through them all, in the store's order.
    let landing = query.datacenter.is_none() && query.cursor.is_none();
    query.worst_first = query.datacenter.is_some();
    let mut instances = Vec::new();
    let mut next = None;
    let mut unlisted = None;
    // The data centers listed, each with the link to more of its instances.
    let mut listed: std::collections::BTreeMap<String, Option<String>> = Default::default();
    let queries: Vec<InstanceQuery> = if landing {
        let mut troubled: Vec<&DatacenterView> =
            view.datacenters.iter().filter(|d| in_trouble(d)).collect();
        troubled.sort_by(|a, b| severity(a).cmp(&severity(b)));
        troubled
            .into_iter()
            .take(LISTED_DATACENTERS)
            .map(|d| InstanceQuery {
                datacenter: Some(d.datacenter.clone()),
                cursor: None,
                limit: query.limit.min(LISTED_PER_DATACENTER),
                worst_first: true,
            })
            .collect()
    } else {
        vec![query.clone()]
    };
    for asked in queries {
        match list(fleet, asked.clone()).await {
            Ok(page) => {
                instances.extend(page.instances);
                let link = page.next_cursor.map(|cursor| {
                    let mut link = format!("?cursor={}&limit={}", encode(&cursor), query.limit);
                    if let Some(dc) = &asked.datacenter {
                        link += &format!("&datacenter={}", encode(dc));
                    }
                    link
                });
                match (&asked.datacenter, landing) {
                    // The landing page: more of that data center is its own page.
                    (Some(dc), true) => {
                        listed.insert(dc.clone(), link);
                    }
                    _ => next = link,
                }
            }
            Err(e) if e.status() == StatusCode::BAD_REQUEST => return Err(e),
            Err(e) => {
                unlisted = Some(e.message().to_owned());
                break;
            }
        }
    }
    if !landing {
        listed = view
            .datacenters
            .iter()
            .map(|d| (d.datacenter.clone(), None))
            .collect();
    }
    let all_failing = view.what_fails();
    let mut datacenters: Vec<&DatacenterView> = view
        .datacenters
        .iter()
        .filter(|dc| query.wants(&dc.datacenter))
        .collect();
    datacenters.sort_by(|a, b| severity(a).cmp(&severity(b)));
    let page = FleetPage {
        hostname: state.hostname.clone(),
        stale: view.stale,
        failing_partial: view.failing_partial,
        fail_open: view.fail_open,
        unlisted,
        next,
        failing_more: all_failing.len().saturating_sub(FAILING_SHOWN),
        failing: all_failing
            .iter()
            .take(FAILING_SHOWN)
            .map(|f| FailingRow::of(f, true))
            .collect(),
        datacenters: datacenters
            .into_iter()
            .map(|dc| {
                let mut row = datacenter_row(dc, &instances);
                row.listed = listed.contains_key(&dc.datacenter);
                row.more = listed.get(&dc.datacenter).cloned().flatten();
                row
            })
            .collect(),
    };
    let html = page.render().map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot render the fleet page: {e}"),
        )
    })?;
    let mut response = axum::response::Html(html).into_response();
    response.headers_mut().insert(
        axum::http::header::CONTENT_SECURITY_POLICY,
        axum::http::HeaderValue::from_static(crate::dashboard::CSP),
    );
    Ok(response)
}

/// Data centers whose instances the landing page lists, at most.
const LISTED_DATACENTERS: usize = 8;
/// Instances of each the landing page lists, at most.
const LISTED_PER_DATACENTER: usize = 50;

/// Whether a data center has anything an operator should see: an instance not OK or not
/// serving, or a failing dependency.
fn in_trouble(dc: &DatacenterView) -> bool {
    dc.conditions.ok < dc.fresh || dc.serving < dc.fresh || !dc.failing.is_empty() || !dc.healthy
}

/// The worst first: unhealthy, then failing open, then healthy; within each, the least share
/// serving, then the most failing rows, then by name.
fn severity(dc: &DatacenterView) -> impl Ord + '_ {
    let share = (dc.serving * 1000).checked_div(dc.fresh).unwrap_or(0);
    (
        dc.healthy,
        !dc.fail_open,
        share,
        std::cmp::Reverse(dc.failing.len()),
        dc.datacenter.as_str(),
    )
}

/// A data center's panel: its verdict, what fails across it, its instances on this page in
/// trouble listed first, its healthy ones collapsed.
fn datacenter_row(dc: &DatacenterView, instances: &[InstanceView]) -> DcRow {
    let (class, label) = match (dc.healthy, dc.fail_open) {
        (true, _) => ("ok", "✔ healthy"),
        (false, true) => ("minor", "▲ failing open"),
        (false, false) => ("outage", "✖ unhealthy"),
    };
    let mut mine: Vec<&InstanceView> = instances
        .iter()
        .filter(|i| i.summary.datacenter == dc.datacenter)
        .collect();
    // The worst condition first, then held, then stale, then by id.
    mine.sort_by(|a, b| {
        let rank = |i: &InstanceView| {
            (
                std::cmp::Reverse(i.summary.condition),
                i.summary.holds.is_empty(),
                !i.stale,
            )
        };
        rank(a)
            .cmp(&rank(b))
            .then_with(|| a.summary.instance_id.cmp(&b.summary.instance_id))
    });
    let (healthy, troubled): (Vec<&InstanceView>, Vec<&InstanceView>) =
        mine.into_iter().partition(|i| {
            !i.stale && i.summary.holds.is_empty() && i.summary.condition == CheckStatus::Ok
        });
    DcRow {
        name: dc.datacenter.clone(),
        healthy: dc.healthy,
        class,
        label,
        serving: dc.serving,
        fresh: dc.fresh,
        failing_more: dc.failing.len().saturating_sub(FAILING_SHOWN),
        failing: dc
            .failing
            .iter()
            .take(FAILING_SHOWN)
            .map(|f| FailingRow::of(f, false))
            .collect(),
        troubled: troubled.into_iter().map(instance_row).collect(),
        healthy_rows: healthy.into_iter().map(instance_row).collect(),
        listed: false,
        more: None,
        list: format!("?datacenter={}", encode(&dc.datacenter)),
    }
}

fn instance_row(i: &InstanceView) -> InstanceRow {
    let failing: Vec<String> = i
        .summary
        .failing
        .iter()
        .take(4)
        .map(|f| format!("{} {}", f.id, f.level))
        .collect();
    InstanceRow {
        id: i.summary.instance_id.clone(),
        url: i.summary.url.clone(),
        condition: i.summary.condition.as_str(),
        failing: failing.join(", "),
        holds: if i.summary.holds.is_empty() {
            "in rotation".to_owned()
        } else {
            i.summary.holds.join(", ")
        },
        version: i.summary.version.clone(),
        age: format!("{:.1} s ago", i.age_ms as f64 / 1000.0),
        stale: i.stale,
    }
}

/// The fleet page of an instance without a fleet view: what to configure.
const NO_FLEET: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>No fleet view</title><link rel=\"stylesheet\" href=\"assets/dashboard.css\"></head>\
<body><main><h1>No fleet view</h1><p>This instance publishes to no fleet, so it has no \
data centers or instances to show.</p><p>To see the fleet here, start a \
<code>status_fleet::Fleet</code> over a shared store (Redis, Redis Cluster or etcd) \
and give it to <code>Routes::fleet</code>; with the quickstart, \
<code>--fleet-redis URL --datacenter NAME</code> (or <code>--fleet-etcd</code>).</p>\
<p><a href=\"../status\">Back to the dashboard</a></p></main></body></html>\n";

/// `text` for a query string: every byte but letters, digits, `-`, `.`, `_` and `~` escaped.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
