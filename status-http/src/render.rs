//! Probe bodies serialized once per report generation and served as shared bytes (each a
//! [`Body`] with a strong `ETag`, compressed once when large), rendered lazily per format.

use std::sync::{Arc, OnceLock, RwLock};

use status_core::{DrainState, SystemReport};
pub(crate) use status_http_core::render::{Body, Conditional};

use crate::error::ApiError;
use crate::sync::{read, write};

/// The bodies of one report generation, each serialized on first use.
#[derive(Debug)]
pub(crate) struct Rendered {
    /// The registry's report it was made from.
    source: Arc<SystemReport>,
    /// That report as this router presents it.
    pub(crate) report: Arc<SystemReport>,
    /// The holds in force when it was made.
    pub(crate) drain: Option<DrainState>,
    rotation: u64,
    pub(crate) detailed: [OnceLock<Result<Body, ApiError>>; 3],
    pub(crate) summary: [OnceLock<Result<Body, ApiError>>; 3],
}

/// The latest [`Rendered`], shared by every request.
#[derive(Debug, Default)]
pub(crate) struct RenderCache {
    latest: RwLock<Option<Arc<Rendered>>>,
}

impl RenderCache {
    /// The bodies of the registry's `report` under rotation generation `rotation`: the
    /// cached ones when they match, else a new empty set (rendered lazily) of the report as
    /// `present` shows it. Never waits on a render.
    pub(crate) fn get(
        &self,
        report: Arc<SystemReport>,
        rotation: u64,
        present: impl FnOnce(Arc<SystemReport>) -> (Arc<SystemReport>, Option<DrainState>),
    ) -> Arc<Rendered> {
        let latest = read(&self.latest).clone();
        if let Some(latest) =
            latest.filter(|l| Arc::ptr_eq(&l.source, &report) && l.rotation == rotation)
        {
            return latest;
        }
        let (presented, drain) = present(Arc::clone(&report));
        let fresh = Arc::new(Rendered {
            source: report,
            report: presented,
            drain,
            rotation,
            detailed: Default::default(),
            summary: Default::default(),
        });
        *write(&self.latest) = Some(Arc::clone(&fresh));
        fresh
    }
}
