//! The one presentation path: every route and the dashboard show reports, results and
//! histories through [`Presentation`], so the public view and the application name are
//! applied the same way everywhere.

use std::sync::Arc;

use status_core::{CheckResult, CheckStatus, HistorySnapshot, SystemReport};

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
        if self.public && report.results.iter().any(|r| withholds(r)) {
            let public = Arc::make_mut(&mut report);
            public.results = public.results.iter().map(|r| self.result(r)).collect();
        }
        if let Some(appname) = self.appname.as_ref().filter(|a| **a != report.appname) {
            Arc::make_mut(&mut report).appname.clone_from(appname);
        }
        report
    }

    /// A result as shown.
    pub(crate) fn result(&self, result: &Arc<CheckResult>) -> Arc<CheckResult> {
        if !self.public || !withholds(result) {
            return Arc::clone(result);
        }
        let mut public = (**result).clone();
        public.thrown = None;
        if public.status != CheckStatus::Ok {
            public.message = public.status.to_string();
        }
        Arc::new(public)
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

/// Whether the public view hides anything of `result`.
fn withholds(result: &CheckResult) -> bool {
    result.thrown.is_some() || result.status != CheckStatus::Ok
}
