//! Why the history refused or failed: one error type, its kind asked with `is_*`, its words
//! for the `history` dependency, an API's answer and the logs.

use std::fmt;

/// What kind of failure: private, asked with the `is_*` methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Not reachable or not openable now: a directory missing or unwritable, a server
    /// down, a call that timed out. Tried again.
    Unavailable,
    /// The file is not a database, or fails its check: moved aside.
    Corrupt,
    /// The disk, or the file's page cap, is full.
    Full,
    /// Another process holds the store (its lock, or the same instance id).
    Locked,
    /// Not a store of ours, or one written by a newer version: left untouched.
    Foreign,
    /// What was asked is not valid: a window that is not one, a blank or oversized message.
    Invalid,
    /// What was asked for does not exist: no such incident.
    NotFound,
    /// What was asked does not fit what is kept now: a postmortem of an open incident.
    Conflict,
    /// Anything else the store said.
    Other,
}

/// Why the history refused a request or its store failed: what the `history` dependency, an
/// API's answer and the logs say, and what kind it is (a request refused
/// [`is_invalid`](Self::is_invalid) or [`is_not_found`](Self::is_not_found); any other kind
/// is the store's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
    kind: Kind,
}

impl Error {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self::of(Kind::Other, message)
    }

    pub(crate) fn of(kind: Kind, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            kind,
        }
    }

    pub(crate) fn corrupt(message: impl Into<String>) -> Self {
        Self::of(Kind::Corrupt, message)
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::of(Kind::Invalid, message)
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self::of(Kind::NotFound, message)
    }

    pub(crate) fn conflict(message: impl Into<String>) -> Self {
        Self::of(Kind::Conflict, message)
    }

    #[allow(clippy::needless_pass_by_value)] // `map_err(Error::sqlite)`
    pub(crate) fn sqlite(e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode;
        let kind = match e.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => Kind::Corrupt,
            Some(ErrorCode::DiskFull) => Kind::Full,
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Kind::Locked,
            Some(
                ErrorCode::CannotOpen
                | ErrorCode::ReadOnly
                | ErrorCode::PermissionDenied
                | ErrorCode::SystemIoFailure,
            ) => Kind::Unavailable,
            _ => Kind::Other,
        };
        Self::of(kind, e.to_string())
    }

    /// Whether the store cannot be reached or opened now (a missing or unwritable
    /// directory, a server down, a call past its deadline): it is tried again.
    #[must_use]
    pub fn is_unavailable(&self) -> bool {
        self.kind == Kind::Unavailable
    }

    /// Whether the file was found corrupt (it is then moved aside).
    #[must_use]
    pub fn is_corrupt(&self) -> bool {
        self.kind == Kind::Corrupt
    }

    /// Whether the disk, or the file's page cap, is full.
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.kind == Kind::Full
    }

    /// Whether another process holds the store: the file's lock, the same instance id, or
    /// a transaction that kept it busy past the wait.
    #[must_use]
    pub fn is_locked(&self) -> bool {
        self.kind == Kind::Locked
    }

    /// Whether the store is not one of ours, or was written by a newer version: it is
    /// left untouched.
    #[must_use]
    pub fn is_foreign(&self) -> bool {
        self.kind == Kind::Foreign
    }

    /// Whether what was asked is not valid (a window that is not one, a blank or oversized
    /// message): the request's fault, answered 400 by an API. Nothing was changed.
    #[must_use]
    pub fn is_invalid(&self) -> bool {
        self.kind == Kind::Invalid
    }

    /// Whether what was asked for does not exist (no such incident): a 404.
    #[must_use]
    pub fn is_not_found(&self) -> bool {
        self.kind == Kind::NotFound
    }

    /// Whether what was asked does not fit what is kept now (a postmortem of an incident not
    /// resolved): a 409. Nothing was changed.
    #[must_use]
    pub fn is_conflict(&self) -> bool {
        self.kind == Kind::Conflict
    }

    /// Whether the store failed, whatever its kind: not a request refused
    /// ([`is_invalid`](Self::is_invalid), [`is_not_found`](Self::is_not_found),
    /// [`is_conflict`](Self::is_conflict)), so the request's answer is a 503.
    #[must_use]
    pub fn is_store(&self) -> bool {
        !matches!(self.kind, Kind::Invalid | Kind::NotFound | Kind::Conflict)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_told_apart() {
        let full = Error::sqlite(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            None,
        ));
        assert!(full.is_full() && !full.is_corrupt());
        let busy = Error::sqlite(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            None,
        ));
        assert!(busy.is_locked());
        assert!(Error::corrupt("x").is_corrupt());
        assert!(Error::of(Kind::Foreign, "x").is_foreign());
        let invalid = Error::invalid("`to` must be after `from`");
        assert!(invalid.is_invalid() && !invalid.is_store() && !invalid.is_not_found());
        assert!(Error::not_found("no such incident").is_not_found());
        let open = Error::conflict("the incident is not resolved");
        assert!(open.is_conflict() && !open.is_store());
        assert!(full.is_store() && busy.is_store());
    }
}
