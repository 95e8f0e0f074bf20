//! What one run of a check says.

use std::error::Error as StdError;

use serde::Serialize;

use crate::CheckStatus;

/// A boxed error, what [`ping`](super::ping) and [`threshold`](super::threshold) closures may
/// fail with (anything that converts into it: `std::io::Error`, `String`, `anyhow::Error`, …).
pub type BoxError = Box<dyn StdError + Send + Sync>;

/// A value measured, with its unit when said.
pub(crate) type Measured = (f64, Option<super::Unit>);

/// The most causes kept from an error's `source()` chain.
const MAX_CAUSES: usize = 8;

/// The result of running a check once: a status, a message, and the error if one was raised.
///
/// # Example
///
/// ```
/// use status_core::check::CheckOutcome;
/// use status_core::CheckStatus;
///
/// let outcome: CheckOutcome = (CheckStatus::Minor, "replica 30s behind").into();
/// assert_eq!(outcome.status(), CheckStatus::Minor);
/// assert_eq!(outcome.message(), "replica 30s behind");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOutcome {
    status: CheckStatus,
    message: String,
    error: Option<ErrorChain>,
    value: Option<f64>,
    unit: Option<super::Unit>,
    settled: bool,
}

impl CheckOutcome {
    /// OK, with no message.
    #[must_use]
    pub fn ok() -> Self {
        Self::new(CheckStatus::Ok, "")
    }

    /// A status with a message.
    #[must_use]
    pub fn new(status: CheckStatus, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            error: None,
            value: None,
            unit: None,
            settled: false,
        }
    }

    /// OUTAGE, with the error's message and chain.
    #[must_use]
    pub fn from_error<E: Into<BoxError>>(error: E) -> Self {
        let kind = error_type_name::<E>();
        let error: BoxError = error.into();
        let chain = ErrorChain::from_error(kind, &*error);
        Self {
            status: CheckStatus::Outage,
            message: chain.message.clone(),
            error: Some(chain),
            value: None,
            unit: None,
            settled: false,
        }
    }

    /// The same outcome, with the value that was measured (a latency, a ratio, a size), in
    /// no unit said: exported as it is (OpenTelemetry's `status.dependency.value`). Say the
    /// unit with [`with_value_in`](Self::with_value_in) when there is one.
    #[must_use]
    pub fn with_value(mut self, value: f64) -> Self {
        self.value = Some(value);
        self.unit = None;
        self
    }

    /// The same outcome, with the value that was measured and its unit: exporters then name
    /// it by what it measures and convert it to their canonical unit (a latency in seconds).
    #[must_use]
    pub fn with_value_in(mut self, value: f64, unit: super::Unit) -> Self {
        self.value = Some(value);
        self.unit = Some(unit);
        self
    }

    /// The same outcome, reported as it is at once: hysteresis gives a dependency that was OK
    /// a grace of `failures_before_outage` failures, reported MINOR meanwhile, because one
    /// failed check may be noise. A settled outcome is a fact rather than a measurement (an
    /// instance that culled itself is culled, however many looks it took), so it skips the
    /// grace and counts as the last failure of it.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), status_core::Error> {
    /// use status_core::check::CheckOutcome;
    /// use status_core::{CheckStatus, Dependency, Registry};
    ///
    /// let registry = Registry::new();
    /// let culler = registry.add_passive(Dependency::passive("culler").build_info()?)?;
    /// culler.record(CheckStatus::Ok);
    /// let culled = CheckOutcome::new(CheckStatus::Major, "culled").settled();
    /// assert_eq!(culler.record(culled).unwrap().status(), CheckStatus::Major);
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn settled(mut self) -> Self {
        self.settled = true;
        self
    }

    /// Whether the outcome is [settled](Self::settled).
    #[must_use]
    pub fn is_settled(&self) -> bool {
        self.settled
    }

    /// The same outcome, with another status.
    #[must_use]
    pub fn with_status(mut self, status: CheckStatus) -> Self {
        self.status = status;
        self
    }

    /// The status the check reported.
    #[must_use]
    pub fn status(&self) -> CheckStatus {
        self.status
    }

    /// The message the check reported (empty when it had nothing to say).
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The error raised, if any.
    #[must_use]
    pub fn error(&self) -> Option<&ErrorChain> {
        self.error.as_ref()
    }

    /// The value measured, if any.
    #[must_use]
    pub fn value(&self) -> Option<f64> {
        self.value
    }

    /// The unit of the value measured, when said.
    #[must_use]
    pub fn unit(&self) -> Option<super::Unit> {
        self.value.and(self.unit)
    }

    pub(crate) fn into_parts(self) -> (CheckStatus, String, Option<ErrorChain>, Option<Measured>) {
        let measured = self.value.map(|v| (v, self.unit));
        (self.status, self.message, self.error, measured)
    }
}

impl From<CheckStatus> for CheckOutcome {
    fn from(status: CheckStatus) -> Self {
        Self::new(status, "")
    }
}

impl<S: Into<String>> From<(CheckStatus, S)> for CheckOutcome {
    fn from((status, message): (CheckStatus, S)) -> Self {
        Self::new(status, message)
    }
}

/// An error raised by a check: its type, its message and the messages of its causes.
///
/// Serialized as `{"type": …, "message": …, "causes": […]}`; at most 8 causes are kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorChain {
    #[serde(rename = "type")]
    kind: String,
    message: String,
    causes: Vec<String>,
}

impl ErrorChain {
    /// The same chain with credentials masked in every message.
    pub(crate) fn masked(self) -> Self {
        Self {
            kind: self.kind,
            message: crate::mask::masked(self.message),
            causes: self.causes.into_iter().map(crate::mask::masked).collect(),
        }
    }

    /// The chain of `error`, named `kind`.
    #[must_use]
    pub fn from_error(kind: impl Into<String>, error: &(dyn StdError + 'static)) -> Self {
        let mut causes = Vec::new();
        let mut source = error.source();
        while let Some(cause) = source {
            if causes.len() == MAX_CAUSES {
                break;
            }
            causes.push(cause.to_string());
            source = cause.source();
        }
        Self {
            kind: kind.into(),
            message: error.to_string(),
            causes,
        }
    }

    /// The error's type, as Rust names it (`std::io::error::Error`).
    #[must_use]
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The error's own message.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The messages of its causes, outermost first.
    #[must_use]
    pub fn causes(&self) -> &[String] {
        &self.causes
    }

    /// The root of the chain: its innermost cause's message (`Connection refused` under
    /// `error sending request for url`), or its own when it has none.
    #[must_use]
    pub fn root(&self) -> &str {
        self.causes.last().map_or(&self.message, String::as_str)
    }
}

/// The name of `E`, or `"Error"` where `E` is already a boxed trait object (its concrete type
/// is unknown by then).
fn error_type_name<E>() -> &'static str {
    let name = std::any::type_name::<E>();
    if name.starts_with("alloc::boxed::Box<dyn") {
        "Error"
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt;

    #[derive(Debug)]
    struct Outer(std::io::Error);

    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("query failed")
        }
    }

    impl StdError for Outer {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn keeps_the_chain() {
        let outcome = CheckOutcome::from_error(Outer(std::io::Error::other("socket closed")));
        assert_eq!(outcome.status(), CheckStatus::Outage);
        assert_eq!(outcome.message(), "query failed");
        let chain = outcome.error().unwrap();
        assert!(chain.kind().ends_with("Outer"), "{}", chain.kind());
        assert_eq!(chain.causes(), ["socket closed"]);
    }

    #[test]
    fn strings_become_errors() {
        let outcome = CheckOutcome::from_error("no route to host");
        assert_eq!(outcome.message(), "no route to host");
        assert_eq!(outcome.error().unwrap().kind(), "&str");
    }
}
