//! What the application says is public: the groups shown under names for customers, and
//! when an incident the engine opened reaches the page.

use status_history::incident::{Incident, UpdateKind};

/// A group the public status page shows, under a name for customers
/// ([`Settings::public`](crate::Settings::public), or status-http's
/// `Routes::public_group`): only the groups named so are on
/// the page, and the dependencies tagged `public` among their members are nested under them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PublicGroup {
    pub(super) group: String,
    pub(super) name: String,
    pub(super) description: Option<String>,
}

impl PublicGroup {
    /// The probe group `group` (its code name), shown as `name`.
    #[must_use]
    pub fn new(group: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            name: name.into(),
            description: None,
        }
    }

    /// What it is, in a sentence for customers (Statuspage's `description`).
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The probe group it shows.
    #[must_use]
    pub fn group(&self) -> &str {
        &self.group
    }

    /// The name customers read.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// When an incident the engine opened is shown to the public: an incident is internal (on
/// `/admin/incidents`, told to operators) until then. An operator's update publishes it at
/// once, whatever the rule: what an operator writes on an incident is written for the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Publication {
    /// Once it has lasted this long (open, or from its start to its resolution): a blip
    /// shorter than that never reaches the page. `After(Duration::ZERO)` publishes at once.
    After(std::time::Duration),
    /// Only once an operator posts an update to it (their approval).
    Approved,
}

/// How long an incident lasts before it is public by default: two minutes.
pub const DEFAULT_PUBLIC_AFTER: std::time::Duration = std::time::Duration::from_secs(120);

impl Default for Publication {
    fn default() -> Self {
        Self::After(DEFAULT_PUBLIC_AFTER)
    }
}

impl Publication {
    /// Whether `incident` is public at `now_ms`.
    pub(crate) fn shows(self, incident: &Incident, now_ms: i64) -> bool {
        if incident
            .updates
            .iter()
            .any(|u| u.kind == UpdateKind::Operator)
        {
            return true;
        }
        match self {
            Self::Approved => false,
            Self::After(wait) => {
                let lasted = incident.resolved.unwrap_or(now_ms) - incident.started;
                u128::try_from(lasted).is_ok_and(|ms| ms >= wait.as_millis())
            }
        }
    }
}
