//! Why the store failed.

use std::fmt;

/// A store's failure, in words: what the `history` dependency and the logs say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError {
    message: String,
    pub(crate) corrupt: bool,
}

impl StoreError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            corrupt: false,
        }
    }

    pub(crate) fn corrupt(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            corrupt: true,
        }
    }

    #[allow(clippy::needless_pass_by_value)] // `map_err(StoreError::sqlite)`
    pub(crate) fn sqlite(e: rusqlite::Error) -> Self {
        let corrupt = matches!(
            e.sqlite_error_code(),
            Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt)
        );
        Self {
            message: e.to_string(),
            corrupt,
        }
    }

    /// Whether the file was found corrupt (it is then moved aside).
    #[must_use]
    pub fn is_corrupt(&self) -> bool {
        self.corrupt
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {}
