//! What the public routes serve now: a snapshot of what the page shows, and every body made
//! of it, each at most once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use chrono::{DateTime, Utc};
use status_core::CheckStatus;

use super::{Component, Maintenance, PublicIncident};

/// What one render sees: the components, the incidents, the maintenance windows.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub(crate) components: Vec<Component>,
    pub(crate) incidents: Vec<PublicIncident>,
    pub(crate) maintenances: Vec<Maintenance>,
    /// Maintenances called off: not shown, told to their subscribers.
    #[cfg_attr(not(feature = "subscribers"), allow(dead_code))]
    pub(crate) called_off: Vec<Maintenance>,
    pub(crate) condition: CheckStatus,
    pub(crate) now: DateTime<Utc>,
    /// Changes when anything shown changes.
    pub(crate) fingerprint: u64,
}

/// The Statuspage v2 documents and the widget's, each made at most once of a snapshot.
pub(crate) const DOCUMENTS: usize = 9;

/// Where the embed's page is kept, after the documents.
pub(crate) const EMBED: usize = DOCUMENTS;
/// Where the maintenances' calendar is kept (feature `calendar`).
#[cfg_attr(not(feature = "calendar"), allow(dead_code))]
pub(crate) const CALENDAR: usize = DOCUMENTS + 1;

/// What the public routes serve now: a snapshot, and the bodies made of it, each once, with
/// its entity tag and its compressed forms (made once, the first time a client accepts them).
#[derive(Debug)]
pub(crate) struct Published {
    pub(crate) snapshot: Arc<Snapshot>,
    /// The v2 documents and the widget's, by their index, then the embed's page and the
    /// calendar.
    documents: [OnceLock<crate::render::Body>; DOCUMENTS + 2],
    /// The page, by language.
    pages: Mutex<HashMap<&'static str, crate::render::Body>>,
    /// Held while a request makes a page of this snapshot: the crowd that arrives as what
    /// is published changes waits for that page, rather than each making its own (each a
    /// read of every component's tiles from the history, on a blocking thread).
    #[cfg_attr(not(feature = "html"), allow(dead_code))]
    pub(super) making: tokio::sync::Mutex<()>,
    /// The level badges, by component (only names that are a component's).
    badges: Mutex<HashMap<Box<str>, crate::render::Body>>,
}

impl Published {
    pub(super) fn new(snapshot: Arc<Snapshot>) -> Self {
        Self {
            snapshot,
            documents: Default::default(),
            pages: Mutex::default(),
            making: tokio::sync::Mutex::new(()),
            badges: Mutex::default(),
        }
    }

    /// Document `index`, made by `make` the first time.
    pub(crate) fn document(
        &self,
        index: usize,
        make: impl FnOnce(&Snapshot) -> crate::render::Body,
    ) -> crate::render::Body {
        self.documents[index]
            .get_or_init(|| make(&self.snapshot))
            .clone()
    }

    /// The page in language `lang`, if it was made.
    #[cfg_attr(not(feature = "html"), allow(dead_code))]
    pub(crate) fn page(&self, lang: &'static str) -> Option<crate::render::Body> {
        let pages = crate::sync::lock(&self.pages);
        pages.get(lang).cloned()
    }

    /// Keeps the page in `lang` (the first kept is served).
    #[cfg_attr(not(feature = "html"), allow(dead_code))]
    pub(crate) fn keep_page(
        &self,
        lang: &'static str,
        page: crate::render::Body,
    ) -> crate::render::Body {
        let mut pages = crate::sync::lock(&self.pages);
        pages.entry(lang).or_insert(page).clone()
    }

    /// The badge of component `name`, made by `make` the first time (`None`: no such
    /// component, and nothing kept).
    pub(crate) fn badge(
        &self,
        name: &str,
        make: impl FnOnce(&Snapshot) -> Option<crate::render::Body>,
    ) -> Option<crate::render::Body> {
        if let Some(body) = crate::sync::lock(&self.badges).get(name) {
            return Some(body.clone());
        }
        let body = make(&self.snapshot)?;
        let mut badges = crate::sync::lock(&self.badges);
        Some(badges.entry(name.into()).or_insert(body).clone())
    }
}
