//! What the people who depend on the service read: a public status page, Statuspage v2
//! JSON, Atom and RSS feeds, shields-style badges; and the incidents' admin API for
//! operators.
//!
//! The public routes render the public view whatever the router's: components are the
//! registry's groups and the dependencies tagged `public` (the system alone when there are
//! none); incidents are named by the components they affect, and the engine's own updates
//! are said in words made for outsiders, never with dependency ids or messages.
//!
//! | level | component `status` | page `indicator` |
//! |---|---|---|
//! | OK | `operational` | `none` |
//! | MINOR | `degraded_performance` | `minor` |
//! | MAJOR | `partial_outage` | `major` |
//! | OUTAGE | `major_outage` | `critical` |
//! | a dependency muted (maintenance) | `under_maintenance` | |
//!
//! An application rarely uses this crate alone: status-http's feature `page` (on by default)
//! builds a [`StatusPage`] from its `Routes` settings and mounts its routers, the public ones
//! beside the probes and the admin ones among the audited admin actions.
#![cfg_attr(docsrs, feature(doc_cfg))]

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use status_core::{Facts, Registry};
use status_history::incident::Incident;
use status_history::{Announcement, History};
use tokio::time::Instant;

mod admin;
mod announce;
mod badge;
#[cfg(feature = "calendar")]
mod calendar;
mod feed;
mod hot;
#[cfg(feature = "html")]
mod html;
#[cfg(feature = "html")]
mod i18n;
mod json;
mod model;
mod mount;
#[cfg(feature = "openapi")]
mod openapi;
#[cfg(feature = "html")]
mod page;
mod public;
mod published;
mod read;
mod routes;
#[cfg(feature = "openapi")]
mod schema;
#[cfg(feature = "html")]
mod served;
#[cfg(feature = "html")]
mod story;
#[cfg(feature = "subscribers")]
mod subscribe;
mod text;
mod widget;
mod wire;

// What the page shares with the other routers, under the names it reads them by.
#[cfg(feature = "html")]
use status_http_core::streams;
use status_http_core::{auth, body, error, query, render, respond, sync};

use self::model::{components_of, maintenances};
pub(crate) use self::model::{indicator, Component, Maintenance, PublicIncident};
pub use self::mount::{Settings, StatusPage};
#[cfg(feature = "openapi")]
#[cfg_attr(docsrs, doc(cfg(feature = "openapi")))]
pub use self::openapi::openapi;
pub use self::public::{PublicGroup, Publication, DEFAULT_PUBLIC_AFTER};
pub(crate) use self::published::{Published, Snapshot, DOCUMENTS};
#[cfg(feature = "subscribers")]
#[cfg_attr(docsrs, doc(cfg(feature = "subscribers")))]
pub use self::subscribe::Subscriptions;
pub use self::widget::is_origin;

/// The tag that makes a dependency a component of the public page.
pub const PUBLIC_TAG: &str = "public";

/// How long past incidents stay on the page and in `incidents.json`: 14 days.
const PAST: chrono::Duration = chrono::Duration::days(14);
/// The most incidents read for the page.
const MAX_INCIDENTS: usize = 100;
/// How long incidents read from the store are served before they are read again.
const INCIDENTS_FRESH: Duration = Duration::from_secs(1);

/// How long an uptime badge is served before its figure is read again.
const UPTIME_FRESH: Duration = Duration::from_secs(60);
/// The most uptime badges kept at once (a window is any of thousands a client may name).
const UPTIMES_KEPT: usize = 256;

/// Uptime badges by component and window (as the query writes it), with when each was made.
type Uptimes = Mutex<HashMap<(String, String), (Instant, crate::render::Body)>>;

/// Incidents read from the store, and when.
type Kept = tokio::sync::Mutex<Option<(Instant, Arc<Vec<Incident>>)>>;

/// Maintenances announced, read from the store, and when.
type Announced = tokio::sync::Mutex<Option<(Instant, Arc<Vec<Announcement>>)>>;

/// A snapshot, with the report, incidents and announcements it was made of, and the minute
/// (maintenances start and end with the clock).
type Made = (
    Arc<Facts>,
    Arc<Vec<Incident>>,
    Arc<Vec<Announcement>>,
    i64,
    Arc<Snapshot>,
);

/// The published snapshot, the facts and minute it was checked against, and when.
#[derive(Debug, Clone)]
struct Current {
    facts: Arc<Facts>,
    minute: i64,
    checked: Instant,
    published: Arc<Published>,
}

/// The routes' state: the registry, the history, and the bodies cached per change.
#[derive(Debug)]
pub(crate) struct StatusPageState {
    pub(crate) registry: Registry,
    pub(crate) history: Option<History>,
    pub(crate) name: String,
    pub(crate) url: Option<String>,
    /// The groups shown, under their names for customers.
    public: Vec<PublicGroup>,
    /// When an incident is public.
    publication: Publication,
    /// The door to subscribers, when the page takes them.
    #[cfg(feature = "subscribers")]
    pub(crate) door: Option<Arc<subscribe::Door>>,
    /// When this page first showed each component.
    created: Mutex<HashMap<String, DateTime<Utc>>>,
    incidents: Kept,
    /// The incidents of the feeds: 90 days.
    feed: Kept,
    /// The maintenances announced, in force, ahead or of the last 90 days.
    announced: Announced,
    /// The list of no announcement.
    unannounced: Arc<Vec<Announcement>>,
    /// The incidents of a router without a history, or before the first read.
    none: Arc<Vec<Incident>>,
    /// The last snapshot, and the report and incidents it was made of.
    last: Mutex<Option<Made>>,
    bodies: Mutex<HashMap<&'static str, (u64, crate::render::Body)>>,
    /// The uptime badges of the last minute.
    uptimes: Uptimes,
    /// Held while an uptime badge is made: those not kept wait here, one read of the store
    /// at a time, not each on a blocking thread of its own; those kept are served meanwhile.
    making_uptime: tokio::sync::Mutex<()>,
    /// What the public routes serve now.
    current: RwLock<Option<Current>>,
    /// The page's event streams: 256 at most, 8 from one address.
    #[cfg(feature = "html")]
    pub(crate) streams: Arc<crate::streams::StreamLimits>,
    /// The origins that may frame `/status/embed`.
    pub(crate) embed_origins: Vec<String>,
}

impl StatusPageState {
    pub(crate) fn new(
        registry: Registry,
        history: Option<History>,
        name: String,
        settings: Settings,
    ) -> Self {
        Self {
            registry,
            history,
            name,
            url: settings.url,
            public: settings.public,
            publication: settings.publication,
            #[cfg(feature = "subscribers")]
            door: settings.subscriptions.map(subscribe::Door::new),
            created: Mutex::new(HashMap::new()),
            incidents: tokio::sync::Mutex::new(None),
            feed: tokio::sync::Mutex::new(None),
            announced: tokio::sync::Mutex::new(None),
            unannounced: Arc::default(),
            none: Arc::default(),
            last: Mutex::new(None),
            bodies: Mutex::new(HashMap::new()),
            uptimes: Mutex::new(HashMap::new()),
            making_uptime: tokio::sync::Mutex::new(()),
            current: RwLock::new(None),
            #[cfg(feature = "html")]
            streams: crate::streams::StreamLimits::new("page", 256, 8),
            // Each an origin: `Settings::check` refused the page otherwise.
            embed_origins: settings.embed_origins,
        }
    }

    /// What the page shows now: made again only when the registry's report (a new one at
    /// most a second apart, or on a change), the incidents or the announcements read are
    /// new, or the minute turns, as the probes' bodies are.
    pub(crate) async fn snapshot(&self) -> Arc<Snapshot> {
        let kept = self.incidents().await;
        let announced = self.announcements().await;
        let facts = self.registry.facts();
        let minute = self.now().timestamp() / 60;
        if let Some((f, i, a, m, snapshot)) = &*crate::sync::lock(&self.last) {
            if Arc::ptr_eq(f, &facts)
                && Arc::ptr_eq(i, &kept)
                && Arc::ptr_eq(a, &announced)
                && *m == minute
            {
                return Arc::clone(snapshot);
            }
        }
        let snapshot = Arc::new(self.make(&facts, &kept, &announced));
        *crate::sync::lock(&self.last) =
            Some((facts, kept, announced, minute, Arc::clone(&snapshot)));
        snapshot
    }

    /// What the public routes serve: the last snapshot and its bodies while the registry's
    /// facts and the minute are the same and the incidents were read less than a second ago
    /// (a read lock and two pointer comparisons); else [`snapshot`](Self::snapshot), and its
    /// bodies kept as long as it is the same.
    pub(crate) async fn published(&self) -> Arc<Published> {
        if let Some(published) = self.published_now() {
            return published;
        }
        let (checked, minute) = self.minute();
        let facts = self.registry.facts();
        let snapshot = self.snapshot().await;
        let mut current = crate::sync::write(&self.current);
        let published = match &*current {
            Some(c) if Arc::ptr_eq(&c.published.snapshot, &snapshot) => Arc::clone(&c.published),
            _ => Arc::new(Published::new(snapshot)),
        };
        *current = Some(Current {
            facts,
            minute,
            checked,
            published: Arc::clone(&published),
        });
        published
    }

    /// What is published, if it still holds (the same facts and minute, incidents read less
    /// than a second ago): no waiting, no store read.
    pub(crate) fn published_now(&self) -> Option<Arc<Published>> {
        let (now, minute) = self.minute();
        let current = crate::sync::read(&self.current);
        let c = current.as_ref()?;
        (now.saturating_duration_since(c.checked) < INCIDENTS_FRESH
            && c.minute == minute
            && Arc::ptr_eq(&c.facts, &self.registry.facts()))
        .then(|| Arc::clone(&c.published))
    }

    /// Now on the registry's clock, and the minute it is in: one reading of the clock.
    fn minute(&self) -> (Instant, i64) {
        let clock = self.registry.clock();
        let now = clock.now();
        (now, clock.wall_at(now).timestamp() / 60)
    }

    /// The time the page says: the history's clock, or the registry's.
    fn now(&self) -> DateTime<Utc> {
        self.history
            .as_ref()
            .map_or_else(|| self.registry.clock().wall(), History::now)
    }

    fn make(&self, facts: &Facts, kept: &[Incident], announced: &[Announcement]) -> Snapshot {
        let now = self.now();
        let mut components = components_of(self.registry.appname(), facts, &self.public);
        for c in &mut components {
            c.created = self.created(&c.id, now);
        }
        let incidents: Vec<PublicIncident> = kept
            .iter()
            .map(|i| PublicIncident::of(i, &components))
            .collect();
        let (maintenances, called_off) = maintenances(announced, &components, now);
        let condition = facts.level();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (&components, &incidents, &maintenances, condition).hash(&mut h);
        Snapshot {
            components,
            incidents,
            maintenances,
            called_off,
            condition,
            now,
            fingerprint: h.finish(),
        }
    }

    /// Whether visitors may subscribe by mail here.
    #[cfg_attr(not(feature = "html"), allow(dead_code))]
    pub(crate) fn takes_mail(&self) -> bool {
        #[cfg(feature = "subscribers")]
        {
            self.door
                .as_ref()
                .is_some_and(|d| d.config.smtp.is_some() && d.config.from.is_some())
        }
        #[cfg(not(feature = "subscribers"))]
        false
    }

    /// When this page first showed component `id` (now, the first time it is asked).
    pub(crate) fn created(&self, id: &str, now: DateTime<Utc>) -> DateTime<Utc> {
        *crate::sync::lock(&self.created)
            .entry(id.to_owned())
            .or_insert(now)
    }

    /// The body of `kind` (of type `content_type`) for what has this fingerprint: the one
    /// kept, or the one `render` makes (once per change of what it shows), with its ETag and
    /// its compressed forms.
    pub(crate) fn cached(
        &self,
        kind: &'static str,
        fingerprint: u64,
        content_type: &'static str,
        render: impl FnOnce() -> String,
    ) -> crate::render::Body {
        let kept = crate::sync::lock(&self.bodies)
            .get(kind)
            .filter(|(f, _)| *f == fingerprint)
            .map(|(_, body)| body.clone());
        if let Some(body) = kept {
            return body;
        }
        // Rendered outside the lock: another request may render the same; one is kept.
        let body = crate::render::Body::new(render(), content_type);
        crate::sync::lock(&self.bodies).insert(kind, (fingerprint, body.clone()));
        body
    }
}
