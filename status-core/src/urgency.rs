//! How much a dependency matters to the system.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::status::ParseEnumError;
use crate::CheckStatus;

/// How much the failure of one dependency degrades the whole system.
///
/// Ordered from the most to the least important (`Required < Strong < Weak < None`), the
/// order in which a dashboard lists them.
///
/// # Example
///
/// ```
/// use status_core::{CheckStatus, Urgency};
///
/// // A strong dependency in outage makes the system MAJOR, not OUTAGE.
/// let system = Urgency::Strong.downgrade_with(CheckStatus::Ok, CheckStatus::Outage);
/// assert_eq!(system, CheckStatus::Major);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Urgency {
    /// The system cannot work without it: its status becomes the system's.
    Required,
    /// The system loses a major part without it: at worst MAJOR.
    Strong,
    /// The system loses a minor part without it: at worst MINOR.
    Weak,
    /// Reported, never affects the system status.
    None,
}

impl Urgency {
    /// Every urgency, from the most to the least important.
    pub const ALL: [Urgency; 4] = [Self::Required, Self::Strong, Self::Weak, Self::None];

    /// The system status once a dependency of this urgency reports `dependency`, starting from
    /// `system`.
    ///
    /// | dependency | Required | Strong | Weak | None |
    /// |---|---|---|---|---|
    /// | OUTAGE | OUTAGE | MAJOR | MINOR | OK |
    /// | MAJOR | MAJOR | MAJOR | MINOR | OK |
    /// | MINOR | MINOR | MINOR | MINOR | OK |
    /// | OK | OK | OK | OK | OK |
    ///
    /// (the table assumes `system` is OK; the result is never better than `system`).
    #[must_use]
    pub fn downgrade_with(self, system: CheckStatus, dependency: CheckStatus) -> CheckStatus {
        system.no_better_than(self.cap(dependency))
    }

    /// The worst status a dependency of this urgency can give the system when it reports
    /// `dependency`.
    #[must_use]
    pub fn cap(self, dependency: CheckStatus) -> CheckStatus {
        match self {
            Self::Required => dependency,
            Self::Strong => dependency.no_worse_than(CheckStatus::Major),
            Self::Weak => dependency.no_worse_than(CheckStatus::Minor),
            Self::None => CheckStatus::Ok,
        }
    }

    /// The upper-case name used on the wire: `"REQUIRED"`, `"STRONG"`, `"WEAK"`, `"NONE"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Required => "REQUIRED",
            Self::Strong => "STRONG",
            Self::Weak => "WEAK",
            Self::None => "NONE",
        }
    }
}

impl Default for Urgency {
    /// [`Urgency::Required`]: a dependency matters until said otherwise.
    fn default() -> Self {
        Self::Required
    }
}

impl fmt::Display for Urgency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Urgency {
    type Err = ParseEnumError;

    /// Parses the wire names, ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Urgency::ALL
            .into_iter()
            .find(|u| u.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| ParseEnumError {
                what: "urgency",
                input: s.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CheckStatus::{Major, Minor, Ok, Outage};

    #[test]
    fn matches_the_design_table() {
        // Rows: dependency status; columns: Required, Strong, Weak, None.
        let table = [
            (Outage, [Outage, Major, Minor, Ok]),
            (Major, [Major, Major, Minor, Ok]),
            (Minor, [Minor, Minor, Minor, Ok]),
            (Ok, [Ok, Ok, Ok, Ok]),
        ];
        for (dependency, row) in table {
            for (urgency, expected) in Urgency::ALL.into_iter().zip(row) {
                assert_eq!(
                    urgency.downgrade_with(Ok, dependency),
                    expected,
                    "{urgency} with {dependency}"
                );
            }
        }
    }

    #[test]
    fn never_improves_the_system() {
        assert_eq!(Urgency::None.downgrade_with(Outage, Ok), Outage);
        assert_eq!(Urgency::Weak.downgrade_with(Major, Outage), Major);
    }

    #[test]
    fn wire_names() {
        assert_eq!(
            serde_json::to_string(&Urgency::Strong).unwrap(),
            "\"STRONG\""
        );
        assert_eq!("weak".parse::<Urgency>(), Result::Ok(Urgency::Weak));
        assert!("critical".parse::<Urgency>().is_err());
    }
}
