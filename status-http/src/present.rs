//! The one presentation path: every route and the dashboard show reports, results and
//! histories through [`Presentation`], so the public view and the application name are
//! applied the same way everywhere.

use std::sync::Arc;

use status_core::{CheckResult, HistorySnapshot, SystemReport};

/// How this router shows what the registry reports.
#[derive(Debug, Clone, Default)]
pub(crate) struct Presentation {
    /// The public view: no error chains, failures' messages replaced by their status, no
    /// transition messages.
    pub(crate) public: bool,
    /// The application name shown instead of the registry's.
    pub(crate) appname: Option<String>,
}

impl Presentation {
    /// `report` as shown: the public view and the application name applied.
    pub(crate) fn report(&self, mut report: Arc<SystemReport>) -> Arc<SystemReport> {
        if self.public {
            report = report.public();
        }
        if let Some(appname) = &self.appname {
            report = report.with_appname(appname);
        }
        report
    }

    /// A result as shown.
    pub(crate) fn result(&self, result: &Arc<CheckResult>) -> Arc<CheckResult> {
        if self.public {
            result.public()
        } else {
            Arc::clone(result)
        }
    }

    /// A history as shown: in the public view, transitions keep their times and statuses
    /// but not the messages of the failures they recorded.
    pub(crate) fn history(&self, mut history: HistorySnapshot) -> HistorySnapshot {
        if self.public {
            for transition in &mut history.transitions {
                transition.message = transition.to.to_string();
            }
        }
        history
    }
}
