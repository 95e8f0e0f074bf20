//! The one error type of the core.

use std::fmt;

/// An error from the registry, a builder or a validation.
///
/// Opaque on purpose: ask what happened with the `is_*` methods, print it with `Display`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ErrorKind {
    InvalidId { id: String, reason: &'static str },
    Duplicate { what: &'static str, id: String },
    UnknownDependency(String),
    UnknownFeature(String),
    UnknownGroup(String),
    Cycle(String),
    Invalid(String),
    Conflict(String),
    Unavailable(String),
    NoRuntime,
}

impl Error {
    /// An id or name that breaks its rule ([`is_invalid_id`](Self::is_invalid_id)).
    #[must_use]
    pub fn invalid_id(id: &str, reason: &'static str) -> Self {
        Self::new(ErrorKind::InvalidId {
            id: id.to_owned(),
            reason,
        })
    }

    pub(crate) fn duplicate(what: &'static str, id: &str) -> Self {
        Self::new(ErrorKind::Duplicate {
            what,
            id: id.to_owned(),
        })
    }

    pub(crate) fn unknown_dependency(id: &str) -> Self {
        Self::new(ErrorKind::UnknownDependency(id.to_owned()))
    }

    pub(crate) fn unknown_feature(name: &str) -> Self {
        Self::new(ErrorKind::UnknownFeature(name.to_owned()))
    }

    pub(crate) fn unknown_group(name: &str) -> Self {
        Self::new(ErrorKind::UnknownGroup(name.to_owned()))
    }

    pub(crate) fn cycle(id: &str) -> Self {
        Self::new(ErrorKind::Cycle(id.to_owned()))
    }

    /// A value out of its range, or input that cannot be read ([`is_invalid`](Self::is_invalid)).
    #[must_use]
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Invalid(message.into()))
    }

    /// A call that would silently replace something in force ([`is_conflict`](Self::is_conflict)).
    #[must_use]
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conflict(message.into()))
    }

    /// Something a call needs (a store) could not be reached or did not answer in time:
    /// what a fleet source or a store of your own answers then
    /// ([`is_unavailable`](Self::is_unavailable)).
    #[must_use]
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unavailable(message.into()))
    }

    /// Called outside a Tokio runtime ([`is_no_runtime`](Self::is_no_runtime)).
    #[must_use]
    pub fn no_runtime() -> Self {
        Self::new(ErrorKind::NoRuntime)
    }

    fn new(kind: ErrorKind) -> Self {
        Self { kind }
    }

    /// An id or feature name that does not match `[a-z0-9][a-z0-9._-]*`.
    #[must_use]
    pub fn is_invalid_id(&self) -> bool {
        matches!(self.kind, ErrorKind::InvalidId { .. })
    }

    /// A dependency or feature registered twice under the same name.
    #[must_use]
    pub fn is_duplicate(&self) -> bool {
        matches!(self.kind, ErrorKind::Duplicate { .. })
    }

    /// A dependency or feature that is not registered.
    #[must_use]
    pub fn is_not_found(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::UnknownDependency(_)
                | ErrorKind::UnknownFeature(_)
                | ErrorKind::UnknownGroup(_)
        )
    }

    /// Declared parents that would make a dependency depend on itself.
    #[must_use]
    pub fn is_cycle(&self) -> bool {
        matches!(self.kind, ErrorKind::Cycle(_))
    }

    /// Whether something the call needs (a store) could not be reached or did not answer in
    /// time: the caller may try again, and an HTTP answer is a 503.
    #[must_use]
    pub fn is_unavailable(&self) -> bool {
        matches!(self.kind, ErrorKind::Unavailable(_))
    }

    /// Whether the call would undo something in force that it must not silently replace
    /// (a scheduled maintenance window over a mute in force).
    #[must_use]
    pub fn is_conflict(&self) -> bool {
        matches!(self.kind, ErrorKind::Conflict(_))
    }

    /// A value out of its allowed range: a zero timeout, an empty override reason, thresholds
    /// out of order, and so on.
    #[must_use]
    pub fn is_invalid(&self) -> bool {
        matches!(self.kind, ErrorKind::Invalid(_))
    }

    /// The registry was used outside a Tokio runtime, where it cannot schedule checks.
    #[must_use]
    pub fn is_no_runtime(&self) -> bool {
        matches!(self.kind, ErrorKind::NoRuntime)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::InvalidId { id, reason } => write!(f, "invalid id {id:?}: {reason}"),
            ErrorKind::Duplicate { what, id } => write!(f, "{what} {id:?} is already registered"),
            ErrorKind::UnknownDependency(id) => write!(f, "no dependency named {id:?}"),
            ErrorKind::UnknownFeature(name) => write!(f, "no feature named {name:?}"),
            ErrorKind::UnknownGroup(name) => write!(f, "no probe group named {name:?}"),
            ErrorKind::Cycle(id) => write!(f, "dependency {id:?} would depend on itself"),
            ErrorKind::Invalid(message)
            | ErrorKind::Conflict(message)
            | ErrorKind::Unavailable(message) => f.write_str(message),
            ErrorKind::NoRuntime => f.write_str("no Tokio runtime to run checks on"),
        }
    }
}

impl std::error::Error for Error {}
