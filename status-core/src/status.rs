//! The four statuses of a check and of the system.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How healthy a dependency, or the whole system, is.
///
/// The variants go from best to worst, and `Ord` follows *severity*: `Ok < Minor < Major <
/// Outage`. So `max` of two statuses is the worse one and `min` the better one, which is what
/// [`no_better_than`](Self::no_better_than) and [`no_worse_than`](Self::no_worse_than) return.
///
/// Serialized as `"OK"`, `"MINOR"`, `"MAJOR"`, `"OUTAGE"`, as Indeed's library does.
///
/// # Example
///
/// ```
/// use status_core::CheckStatus;
///
/// assert!(CheckStatus::Ok.is_better_than(CheckStatus::Minor));
/// assert_eq!(CheckStatus::Minor.no_better_than(CheckStatus::Major), CheckStatus::Major);
/// assert_eq!(CheckStatus::Minor.no_worse_than(CheckStatus::Ok), CheckStatus::Ok);
/// assert_eq!("OUTAGE".parse::<CheckStatus>().unwrap(), CheckStatus::Outage);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum CheckStatus {
    /// Working as expected.
    Ok,
    /// Degraded in a way users hardly notice.
    Minor,
    /// Degraded in a way users notice; some functionality is lost.
    Major,
    /// Not usable.
    Outage,
}

impl CheckStatus {
    /// Every status, from best to worst.
    pub const ALL: [CheckStatus; 4] = [Self::Ok, Self::Minor, Self::Major, Self::Outage];

    /// Whether `self` is strictly better than `other`.
    #[must_use]
    pub fn is_better_than(self, other: CheckStatus) -> bool {
        self < other
    }

    /// Whether `self` is strictly worse than `other`.
    #[must_use]
    pub fn is_worse_than(self, other: CheckStatus) -> bool {
        self > other
    }

    /// The worse of `self` and `other`.
    #[must_use]
    pub fn no_better_than(self, other: CheckStatus) -> CheckStatus {
        self.max(other)
    }

    /// The better of `self` and `other`.
    #[must_use]
    pub fn no_worse_than(self, other: CheckStatus) -> CheckStatus {
        self.min(other)
    }

    /// 0 for OK up to 3 for OUTAGE, as exported in metrics.
    #[must_use]
    pub const fn severity(self) -> u8 {
        self as u8
    }

    /// The status of a severity, if it is one (0..=3).
    #[must_use]
    pub const fn from_severity(severity: u8) -> Option<CheckStatus> {
        match severity {
            0 => Some(Self::Ok),
            1 => Some(Self::Minor),
            2 => Some(Self::Major),
            3 => Some(Self::Outage),
            _ => None,
        }
    }

    /// The upper-case name used on the wire: `"OK"`, `"MINOR"`, `"MAJOR"`, `"OUTAGE"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "OK",
            Self::Minor => "MINOR",
            Self::Major => "MAJOR",
            Self::Outage => "OUTAGE",
        }
    }
}

impl fmt::Display for CheckStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing a [`CheckStatus`] or an [`Urgency`](crate::Urgency) from text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseEnumError {
    pub(crate) what: &'static str,
    pub(crate) input: String,
}

impl fmt::Display for ParseEnumError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown {}: {:?}", self.what, self.input)
    }
}

impl std::error::Error for ParseEnumError {}

impl FromStr for CheckStatus {
    type Err = ParseEnumError;

    /// Parses the wire names, ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CheckStatus::ALL
            .into_iter()
            .find(|status| status.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| ParseEnumError {
                what: "status",
                input: s.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_as_indeed_names() {
        let json: Vec<String> = CheckStatus::ALL
            .iter()
            .map(|s| serde_json::to_string(s).unwrap())
            .collect();
        assert_eq!(json, ["\"OK\"", "\"MINOR\"", "\"MAJOR\"", "\"OUTAGE\""]);
        assert_eq!(
            serde_json::from_str::<CheckStatus>("\"MAJOR\"").unwrap(),
            CheckStatus::Major
        );
    }

    #[test]
    fn parses_case_insensitively_and_rejects_unknown() {
        assert_eq!("minor".parse::<CheckStatus>(), Ok(CheckStatus::Minor));
        let err = "down".parse::<CheckStatus>().unwrap_err();
        assert_eq!(err.to_string(), "unknown status: \"down\"");
    }

    #[test]
    fn severity_round_trips() {
        for status in CheckStatus::ALL {
            assert_eq!(CheckStatus::from_severity(status.severity()), Some(status));
        }
        assert_eq!(CheckStatus::from_severity(4), None);
    }
}
