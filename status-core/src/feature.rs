//! Features gated on dependency health, with operator overrides.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;

use crate::text::iso;
use crate::{CheckStatus, DependencyId, Error, FeatureName};

/// The longest override accepted: 7 days.
pub const MAX_OVERRIDE_TTL: Duration = Duration::from_secs(604_800);
/// Flips kept per feature.
pub const FLIPS_KEPT: usize = 64;

/// A feature of the application that needs some dependencies, or the system, to be healthy
/// enough.
///
/// # Example
///
/// ```
/// use status_core::{CheckStatus, Feature};
///
/// let checkout = Feature::builder("checkout")
///     .description("Pay for the cart")
///     .requires("payments-api", CheckStatus::Minor)
///     .build()
///     .unwrap();
/// assert_eq!(checkout.name().as_str(), "checkout");
/// ```
#[derive(Debug, Clone)]
pub struct Feature {
    name: FeatureName,
    description: String,
    requirements: Vec<Requirement>,
}

/// What a feature needs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Requirement {
    /// A dependency reporting `no_worse_than` or better.
    Dependency {
        /// The dependency.
        id: DependencyId,
        /// The worst status the feature tolerates.
        no_worse_than: CheckStatus,
    },
    /// The system status being `no_worse_than` or better.
    System {
        /// The worst status the feature tolerates.
        no_worse_than: CheckStatus,
    },
}

impl Feature {
    /// Starts describing the feature `name` (same alphabet as dependency ids).
    pub fn builder(name: impl Into<String>) -> FeatureBuilder {
        FeatureBuilder {
            name: name.into(),
            description: String::new(),
            requirements: Vec::new(),
        }
    }

    /// Its name.
    #[must_use]
    pub fn name(&self) -> &FeatureName {
        &self.name
    }

    /// What it is, for people.
    #[must_use]
    pub fn description(&self) -> &str {
        &self.description
    }

    /// What it needs.
    #[must_use]
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }
}

/// Builds a [`Feature`]; see [`Feature::builder`].
#[derive(Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct FeatureBuilder {
    name: String,
    description: String,
    requirements: Vec<(Option<String>, CheckStatus)>,
}

impl FeatureBuilder {
    /// What it is, for people.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Needs dependency `id` to report `no_worse_than` or better.
    pub fn requires(mut self, id: impl Into<String>, no_worse_than: CheckStatus) -> Self {
        self.requirements.push((Some(id.into()), no_worse_than));
        self
    }

    /// Needs the system status to be `no_worse_than` or better.
    pub fn requires_system(mut self, no_worse_than: CheckStatus) -> Self {
        self.requirements.push((None, no_worse_than));
        self
    }

    /// The feature.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid_id`] for a bad name or dependency id.
    pub fn build(self) -> Result<Feature, Error> {
        let name = FeatureName::new(&self.name)?;
        let requirements = self
            .requirements
            .into_iter()
            .map(|(id, no_worse_than)| match id {
                Some(id) => Ok(Requirement::Dependency {
                    id: DependencyId::new(&id)?,
                    no_worse_than,
                }),
                None => Ok(Requirement::System { no_worse_than }),
            })
            .collect::<Result<_, Error>>()?;
        Ok(Feature {
            name,
            description: self.description,
            requirements,
        })
    }
}

/// An operator's decision to force a feature on or off for a while.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use status_core::FeatureOverride;
///
/// let force_on = FeatureOverride::new(true, Duration::from_secs(600), "vendor confirmed it works")
///     .unwrap()
///     .actor("alice");
/// assert!(FeatureOverride::new(true, Duration::ZERO, "oops").is_err());
/// # let _ = force_on;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureOverride {
    pub(crate) enabled: bool,
    pub(crate) ttl: Duration,
    pub(crate) reason: String,
    pub(crate) actor: Option<String>,
}

impl FeatureOverride {
    /// Forces the feature `enabled` for `ttl`, because of `reason`.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] when `ttl` is under a second or over 7 days, or `reason` is blank
    /// (invisible characters only count as blank), holds control characters, or is longer
    /// than 1024 characters.
    pub fn new(enabled: bool, ttl: Duration, reason: impl Into<String>) -> Result<Self, Error> {
        let reason = reason.into();
        validate_ttl_and_reason(ttl, &reason)?;
        Ok(Self {
            enabled,
            ttl,
            reason: reason.trim().to_owned(),
            actor: None,
        })
    }

    /// Says who decided it: cut to 128 characters; a blank actor is none. One holding
    /// control characters makes [`Registry::override_feature`](crate::Registry::override_feature)
    /// refuse the override.
    #[must_use]
    pub fn actor(mut self, actor: impl Into<String>) -> Self {
        let actor: String = actor.into();
        self.actor = (!crate::text::is_blank(&actor)).then(|| {
            actor
                .trim()
                .chars()
                .take(crate::text::MAX_ACTOR_CHARS)
                .collect()
        });
        self
    }
}

/// Checks an operator's TTL (1 s to 7 days) and reason (not blank to the eye, no control
/// characters, at most 1024 characters).
///
/// # Errors
///
/// [`Error::is_invalid`] with a message saying which.
pub fn validate_ttl_and_reason(ttl: Duration, reason: &str) -> Result<(), Error> {
    if ttl < Duration::from_secs(1) || ttl > MAX_OVERRIDE_TTL {
        return Err(Error::invalid(
            "the time to live must be between 1 second and 7 days (604800 seconds)",
        ));
    }
    crate::text::reason(reason)
}

/// An override in force.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ActiveOverride {
    /// The state it forces.
    pub enabled: bool,
    /// Why.
    pub reason: String,
    /// Who, if said.
    pub actor: Option<String>,
    /// When it was set.
    pub set_at: DateTime<Utc>,
    /// When it ends.
    pub expires_at: DateTime<Utc>,
}

impl Serialize for ActiveOverride {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("ActiveOverride", 5)?;
        s.serialize_field("enabled", &self.enabled)?;
        s.serialize_field("reason", &self.reason)?;
        s.serialize_field("actor", &self.actor)?;
        s.serialize_field("setAt", &iso(self.set_at))?;
        s.serialize_field("expiresAt", &iso(self.expires_at))?;
        s.end()
    }
}

/// Where a requirement stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RequirementState {
    /// The dependency, or `None` for the system.
    pub dependency: Option<DependencyId>,
    /// The worst status tolerated.
    pub no_worse_than: CheckStatus,
    /// The status now; `None` when the dependency is not registered.
    pub status: Option<CheckStatus>,
    /// Whether it is met.
    pub satisfied: bool,
}

/// Why a feature flipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum FlipCause {
    /// Its requirements changed.
    Automatic,
    /// An operator forced it.
    Override,
    /// An operator cleared an override.
    OverrideCleared,
    /// An override ran out.
    OverrideExpired,
}

/// One change of a feature's state.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FeatureFlip {
    /// The feature.
    pub feature: FeatureName,
    /// When.
    pub at: DateTime<Utc>,
    /// The new state.
    pub enabled: bool,
    /// Why it changed.
    pub cause: FlipCause,
    /// In words.
    pub reason: String,
}

impl Serialize for FeatureFlip {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("FeatureFlip", 5)?;
        s.serialize_field("feature", &self.feature)?;
        s.serialize_field("date", &iso(self.at))?;
        s.serialize_field("enabled", &self.enabled)?;
        s.serialize_field("cause", &self.cause)?;
        s.serialize_field("reason", &self.reason)?;
        s.end()
    }
}

/// A feature's state.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FeatureState {
    /// The feature's name.
    pub name: FeatureName,
    /// Its description.
    pub description: String,
    /// Whether it is on, override included.
    pub enabled: bool,
    /// Whether its requirements alone would have it on.
    pub automatic: bool,
    /// Why it is in this state, in words.
    pub reason: String,
    /// Each requirement and where it stands.
    pub requirements: Vec<RequirementState>,
    /// The override in force, if any.
    pub override_: Option<ActiveOverride>,
    /// Since when it has been in this state.
    pub since: DateTime<Utc>,
}

impl Serialize for FeatureState {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("FeatureState", 8)?;
        s.serialize_field("name", &self.name)?;
        s.serialize_field("description", &self.description)?;
        s.serialize_field("enabled", &self.enabled)?;
        s.serialize_field("automatic", &self.automatic)?;
        s.serialize_field("reason", &self.reason)?;
        s.serialize_field("requirements", &self.requirements)?;
        s.serialize_field("override", &self.override_)?;
        s.serialize_field("since", &iso(self.since))?;
        s.end()
    }
}

/// Whether requirements are all met, and why not.
pub(crate) fn judge(requirements: &[RequirementState]) -> (bool, String) {
    let unmet: Vec<String> = requirements
        .iter()
        .filter(|r| !r.satisfied)
        .map(|r| {
            let who = r
                .dependency
                .as_ref()
                .map_or_else(|| "the system".to_owned(), ToString::to_string);
            match r.status {
                Some(status) => format!("{who} is {status}, needs {} or better", r.no_worse_than),
                None => format!("{who} is not registered"),
            }
        })
        .collect();
    if unmet.is_empty() {
        (true, "all requirements met".to_owned())
    } else {
        (false, unmet.join("; "))
    }
}

/// Where `requirements` stand, given dependency statuses and a lazily computed system status.
pub(crate) fn evaluate(
    requirements: &[Requirement],
    mut status_of: impl FnMut(&DependencyId) -> Option<CheckStatus>,
    mut system: impl FnMut() -> CheckStatus,
) -> Vec<RequirementState> {
    requirements
        .iter()
        .map(|r| {
            let (dependency, no_worse_than, status) = match r {
                Requirement::Dependency { id, no_worse_than } => {
                    (Some(id.clone()), *no_worse_than, status_of(id))
                }
                Requirement::System { no_worse_than } => (None, *no_worse_than, Some(system())),
            };
            RequirementState {
                dependency,
                no_worse_than,
                status,
                satisfied: status.is_some_and(|s| !s.is_worse_than(no_worse_than)),
            }
        })
        .collect()
}
