//! Grading a measured value.

use super::CheckOutcome;
use crate::{CheckStatus, Error};

/// Limits that grade a measured value into a status.
///
/// Either an upper bound for each status ([`at_most`](Self::at_most): latency, queue depth,
/// use of a pool) or a lower bound ([`at_least`](Self::at_least): free disk space, healthy
/// nodes). A value past the MAJOR limit is OUTAGE; a NaN is OUTAGE.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Threshold {
    limits: [f64; 3],
    higher_is_worse: bool,
}

impl Threshold {
    /// OK up to `max_ok`, MINOR up to `max_minor`, MAJOR up to `max_major`, OUTAGE above.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] unless `max_ok <= max_minor <= max_major`, all finite.
    pub fn at_most(max_ok: f64, max_minor: f64, max_major: f64) -> Result<Self, Error> {
        Self::new([max_ok, max_minor, max_major], true)
    }

    /// OK down to `min_ok`, MINOR down to `min_minor`, MAJOR down to `min_major`, OUTAGE below.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] unless `min_ok >= min_minor >= min_major`, all finite.
    pub fn at_least(min_ok: f64, min_minor: f64, min_major: f64) -> Result<Self, Error> {
        Self::new([min_ok, min_minor, min_major], false)
    }

    fn new(limits: [f64; 3], higher_is_worse: bool) -> Result<Self, Error> {
        let ordered = if higher_is_worse {
            limits[0] <= limits[1] && limits[1] <= limits[2]
        } else {
            limits[0] >= limits[1] && limits[1] >= limits[2]
        };
        if !limits.iter().all(|l| l.is_finite()) || !ordered {
            return Err(Error::invalid(format!(
                "threshold limits {limits:?} must be finite and ordered from OK to MAJOR"
            )));
        }
        Ok(Self {
            limits,
            higher_is_worse,
        })
    }

    /// The status of `value`.
    #[must_use]
    pub fn status_of(&self, value: f64) -> CheckStatus {
        if value.is_nan() {
            return CheckStatus::Outage;
        }
        let within = |limit: f64| {
            if self.higher_is_worse {
                value <= limit
            } else {
                value >= limit
            }
        };
        [CheckStatus::Ok, CheckStatus::Minor, CheckStatus::Major]
            .into_iter()
            .zip(self.limits)
            .find(|&(_, limit)| within(limit))
            .map_or(CheckStatus::Outage, |(status, _)| status)
    }

    /// An outcome for `value`: its status, a message naming the limit, and the value.
    #[must_use]
    pub fn grade(&self, value: f64) -> CheckOutcome {
        let status = self.status_of(value);
        let (op, [ok, minor, major]) = if self.higher_is_worse {
            ("<=", self.limits)
        } else {
            (">=", self.limits)
        };
        let message =
            format!("value {value} (OK {op} {ok}, MINOR {op} {minor}, MAJOR {op} {major})");
        CheckOutcome::new(status, message).with_value(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CheckStatus::{Major, Minor, Ok, Outage};

    #[test]
    fn upper_bounds_are_inclusive() {
        let t = Threshold::at_most(10.0, 20.0, 30.0).unwrap();
        let graded: Vec<_> = [0.0, 10.0, 10.5, 20.0, 30.0, 30.1, f64::NAN]
            .into_iter()
            .map(|v| t.status_of(v))
            .collect();
        assert_eq!(graded, [Ok, Ok, Minor, Minor, Major, Outage, Outage]);
    }

    #[test]
    fn lower_bounds_grade_the_other_way() {
        let t = Threshold::at_least(10.0, 5.0, 1.0).unwrap();
        let graded: Vec<_> = [50.0, 10.0, 7.0, 1.0, 0.5]
            .into_iter()
            .map(|v| t.status_of(v))
            .collect();
        assert_eq!(graded, [Ok, Ok, Minor, Major, Outage]);
        assert!(t.grade(0.5).message().contains("OK >= 10"));
    }

    #[test]
    fn rejects_unordered_or_infinite_limits() {
        assert!(Threshold::at_most(3.0, 2.0, 1.0).unwrap_err().is_invalid());
        assert!(Threshold::at_least(1.0, 2.0, 3.0).is_err());
        assert!(Threshold::at_most(1.0, 2.0, f64::INFINITY).is_err());
    }
}
