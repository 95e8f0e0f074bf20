//! Probe groups: several health views of one application (Spring Boot's health groups,
//! ASP.NET's tagged checks, MicroProfile's liveness, readiness and startup sets).

use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;

use crate::{CheckStatus, DependencyId, DependencyInfo, Error, GroupName};

/// A named set of dependencies, chosen by id and by tag, with its own rule: which statuses
/// fail it, whether a rotation hold and startup count. The system status is the implicit group
/// of everything, failing on OUTAGE, with holds and startup.
///
/// Register it with [`Registry::add_group`](crate::Registry::add_group) once the dependencies
/// it names are registered; its condition is then kept as the system's is, refolded on every
/// change, one atomic load to read. A dependency registered later that carries one of its
/// tags joins it.
///
/// # Example
///
/// ```
/// use status_core::{CheckStatus, Group};
///
/// let cache = Group::builder("cache")
///     .tag("cache")
///     .dependency("session-store")
///     .fails_on(CheckStatus::Major)
///     .rotation(false)
///     .build()
///     .unwrap();
/// assert_eq!(cache.name().as_str(), "cache");
/// assert!(cache.fails(CheckStatus::Major) && !cache.fails(CheckStatus::Minor));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    name: GroupName,
    ids: Vec<DependencyId>,
    tags: Vec<String>,
    fails_on: CheckStatus,
    rotation: bool,
    startup: bool,
}

impl Group {
    /// Starts describing the group `name` (same alphabet as dependency ids).
    pub fn builder(name: impl Into<String>) -> GroupBuilder {
        GroupBuilder {
            name: name.into(),
            ids: Vec::new(),
            tags: Vec::new(),
            fails_on: CheckStatus::Outage,
            rotation: true,
            startup: true,
        }
    }

    /// Its name.
    #[must_use]
    pub fn name(&self) -> &GroupName {
        &self.name
    }

    /// The dependencies it names by id.
    #[must_use]
    pub fn ids(&self) -> &[DependencyId] {
        &self.ids
    }

    /// The tags whose dependencies it holds.
    #[must_use]
    pub fn tags(&self) -> &[String] {
        &self.tags
    }

    /// The least status that fails it.
    #[must_use]
    pub fn fails_on(&self) -> CheckStatus {
        self.fails_on
    }

    /// Whether a rotation hold (a drain, a shutdown, a cull) fails it.
    #[must_use]
    pub fn rotation(&self) -> bool {
        self.rotation
    }

    /// Whether it fails until its dependencies have all been checked once.
    #[must_use]
    pub fn startup(&self) -> bool {
        self.startup
    }

    /// Whether the dependency `info` is in it: named by id, or carrying one of its tags.
    #[must_use]
    pub fn selects(&self, info: &DependencyInfo) -> bool {
        self.ids.contains(info.id()) || info.tags().iter().any(|t| self.tags.contains(t))
    }

    /// Whether `condition` fails it.
    #[must_use]
    pub fn fails(&self, condition: CheckStatus) -> bool {
        condition >= self.fails_on
    }
}

/// `{"name", "dependencies", "tags", "failsOn", "rotation", "startup"}`.
impl Serialize for Group {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Group", 6)?;
        s.serialize_field("name", &self.name)?;
        s.serialize_field("dependencies", &self.ids)?;
        s.serialize_field("tags", &self.tags)?;
        s.serialize_field("failsOn", &self.fails_on)?;
        s.serialize_field("rotation", &self.rotation)?;
        s.serialize_field("startup", &self.startup)?;
        s.end()
    }
}

/// Builds a [`Group`]; see [`Group::builder`].
#[derive(Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct GroupBuilder {
    name: String,
    ids: Vec<String>,
    tags: Vec<String>,
    fails_on: CheckStatus,
    rotation: bool,
    startup: bool,
}

impl GroupBuilder {
    /// Holds the dependency `id`.
    pub fn dependency(mut self, id: impl Into<String>) -> Self {
        self.ids.push(id.into());
        self
    }

    /// Holds every dependency tagged `tag`, registered now or later.
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }

    /// The least status that fails it. Default: OUTAGE.
    ///
    /// A member's urgency caps what it gives the group, as it does the system: a Strong
    /// member gives MAJOR at worst, Weak MINOR, None OK. A member capped better than this
    /// status can never fail the group by its status; `Registry::add_group` warns about such
    /// members (a group of Strong members failing on OUTAGE fails only by holds, startup, or
    /// strict readiness).
    pub fn fails_on(mut self, status: CheckStatus) -> Self {
        self.fails_on = status;
        self
    }

    /// Whether a rotation hold fails it. Default: yes.
    pub fn rotation(mut self, counts: bool) -> Self {
        self.rotation = counts;
        self
    }

    /// Whether it fails until its dependencies have all been checked once. Default: yes.
    pub fn startup(mut self, counts: bool) -> Self {
        self.startup = counts;
        self
    }

    /// The group.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid_id`] for a bad name or id; [`Error::is_invalid`] for a group that
    /// names nothing, fails on OK (it would never pass), or names an id or a tag twice.
    pub fn build(self) -> Result<Group, Error> {
        let name = GroupName::new(&self.name)?;
        if self.ids.is_empty() && self.tags.is_empty() {
            return Err(Error::invalid(format!(
                "group {name} names no dependency and no tag"
            )));
        }
        if self.fails_on == CheckStatus::Ok {
            return Err(Error::invalid(format!(
                "group {name} fails on OK: it would never pass"
            )));
        }
        let ids = self
            .ids
            .iter()
            .map(|id| DependencyId::new(id))
            .collect::<Result<Vec<_>, _>>()?;
        for (i, id) in ids.iter().enumerate() {
            if ids[..i].contains(id) {
                return Err(Error::invalid(format!("group {name} names {id} twice")));
            }
        }
        for (i, tag) in self.tags.iter().enumerate() {
            if tag.trim().is_empty() {
                return Err(Error::invalid(format!("group {name} names a blank tag")));
            }
            if self.tags[..i].contains(tag) {
                return Err(Error::invalid(format!(
                    "group {name} names the tag {tag:?} twice"
                )));
            }
        }
        Ok(Group {
            name,
            ids,
            tags: self.tags,
            fails_on: self.fails_on,
            rotation: self.rotation,
            startup: self.startup,
        })
    }
}

/// A group as it stands: its definition, its condition, whether its members have all been
/// checked once, and how many it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupState {
    group: Group,
    condition: CheckStatus,
    startup_complete: bool,
    members: usize,
}

impl GroupState {
    pub(crate) fn new(
        group: Group,
        condition: CheckStatus,
        startup_complete: bool,
        members: usize,
    ) -> Self {
        Self {
            group,
            condition,
            startup_complete,
            members,
        }
    }

    /// Its definition.
    #[must_use]
    pub fn group(&self) -> &Group {
        &self.group
    }

    /// Its condition: the worst capped status of its members, as the system's is folded.
    #[must_use]
    pub fn condition(&self) -> CheckStatus {
        self.condition
    }

    /// Whether its condition fails it, by its rule.
    #[must_use]
    pub fn failing(&self) -> bool {
        self.group.fails(self.condition)
    }

    /// Whether each of its polled members has been checked once.
    #[must_use]
    pub fn startup_complete(&self) -> bool {
        self.startup_complete
    }

    /// How many dependencies it holds.
    #[must_use]
    pub fn members(&self) -> usize {
        self.members
    }
}

/// The group's fields, then `condition`, `failing`, `startupComplete`, `members`.
impl Serialize for GroupState {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let g = &self.group;
        let mut s = serializer.serialize_struct("GroupState", 10)?;
        s.serialize_field("name", &g.name)?;
        s.serialize_field("dependencies", &g.ids)?;
        s.serialize_field("tags", &g.tags)?;
        s.serialize_field("failsOn", &g.fails_on)?;
        s.serialize_field("rotation", &g.rotation)?;
        s.serialize_field("startup", &g.startup)?;
        s.serialize_field("condition", &self.condition)?;
        s.serialize_field("failing", &self.failing())?;
        s.serialize_field("startupComplete", &self.startup_complete)?;
        s.serialize_field("members", &self.members)?;
        s.end()
    }
}
