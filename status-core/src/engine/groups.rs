//! The registry's probe groups: registered once the dependencies they name are, each with
//! its condition kept as the system's is.

use std::sync::Arc;

use super::folds::GroupEntry;
use super::Registry;
use crate::{CheckStatus, Error, Group, GroupState, Readiness, SystemReport};

impl Registry {
    /// Registers `group`. Its condition is kept from now on as the system's is: refolded on
    /// every change, one atomic load to read ([`group_condition`](Self::group_condition)).
    ///
    /// # Errors
    ///
    /// [`Error::is_not_found`] for an id no dependency has; [`Error::is_invalid`] for a tag
    /// no registered dependency carries, or a 65th group; [`Error::is_duplicate`] for a name
    /// taken. Nothing changes on error.
    ///
    /// A member whose urgency caps it better than the status the group fails on (a Strong
    /// member gives MAJOR at worst, Weak MINOR, None OK) can never fail the group by its
    /// status: the group is added, and a warning names those members (only strict
    /// readiness, holds and startup fail a group none of whose members can).
    ///
    /// # Example
    ///
    /// ```
    /// use status_core::{check, CheckStatus, Dependency, Group, Registry};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), status_core::Error> {
    /// let registry = Registry::new();
    /// let ok = || check::ping(|| async { Ok::<_, std::io::Error>(()) });
    /// registry.add(Dependency::builder("sessions", ok()).tag("cache").build()?)?;
    /// registry.add(Dependency::builder("db", ok()).build()?)?;
    /// registry.add_group(Group::builder("cache").tag("cache").build()?)?;
    /// assert!(registry.add_group(Group::builder("nope").tag("queue").build()?).is_err());
    /// assert_eq!(registry.group("cache").unwrap().members(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_group(&self, group: Group) -> Result<(), Error> {
        self.inner.deps.add_group(group).map(drop)
    }

    /// The group `name` as it stands now.
    #[must_use]
    pub fn group(&self, name: &str) -> Option<GroupState> {
        self.inner.deps.group(name).map(|g| state(&g))
    }

    /// Every group as it stands now, in the order registered.
    #[must_use]
    pub fn groups(&self) -> Vec<GroupState> {
        self.inner.deps.groups().iter().map(|g| state(g)).collect()
    }

    /// The condition of the group `name`: one atomic load.
    #[must_use]
    pub fn group_condition(&self, name: &str) -> Option<CheckStatus> {
        self.inner.deps.group(name).map(|g| g.condition())
    }

    /// Whether the group `name` passes by its rule: its condition below the status it fails
    /// on (with `strict`, OK), and, as it says, no rotation hold and startup complete among
    /// its members. The reasons name its failing members.
    #[must_use]
    pub fn group_readiness(&self, name: &str, strict: bool) -> Option<Readiness> {
        let entry = self.inner.deps.group(name)?;
        let group = &entry.group;
        let condition = entry.condition();
        let (fails, fails_from) = if strict {
            (condition != CheckStatus::Ok, CheckStatus::Minor)
        } else {
            (group.fails(condition), group.fails_on())
        };
        Some(Readiness::judge_with(
            || format!("group {name}"),
            condition,
            (fails, fails_from),
            !group.startup() || entry.startup_complete(),
            group.rotation().then(|| self.drain_state()).flatten(),
            || self.group_report_of(&entry).culprit_sentences().collect(),
        ))
    }

    /// The report of the group `name`: its members' results, its condition folded from them.
    #[must_use]
    pub fn group_report(&self, name: &str) -> Option<Arc<SystemReport>> {
        let entry = self.inner.deps.group(name)?;
        Some(Arc::new(self.group_report_of(&entry)))
    }

    fn group_report_of(&self, entry: &GroupEntry) -> SystemReport {
        self.report().only(|r| entry.group.selects(r.info()))
    }
}

fn state(entry: &GroupEntry) -> GroupState {
    GroupState::new(
        entry.group.clone(),
        entry.condition(),
        entry.startup_complete(),
        entry.members(),
    )
}
