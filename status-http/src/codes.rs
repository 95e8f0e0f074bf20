//! Which HTTP status answers which system status.

use axum::http::StatusCode;
use status_core::CheckStatus;

/// The HTTP status of each [`CheckStatus`] on the probe endpoints.
///
/// The default is what load balancers expect: OK, MINOR and MAJOR answer 200, OUTAGE answers
/// 503. `?strict=true` answers 503 for anything but OK whatever the map says.
///
/// # Example
///
/// ```
/// use axum::http::StatusCode;
/// use status_core::CheckStatus;
/// use status_http::CodeMap;
///
/// // Indeed's convention: a distinct 512 for OUTAGE.
/// let codes = CodeMap::default().with(CheckStatus::Outage, StatusCode::from_u16(512).unwrap());
/// assert_eq!(codes.code(CheckStatus::Outage, false).as_u16(), 512);
/// assert_eq!(codes.code(CheckStatus::Minor, true), StatusCode::SERVICE_UNAVAILABLE);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeMap {
    codes: [StatusCode; 4],
}

impl Default for CodeMap {
    fn default() -> Self {
        Self {
            codes: [
                StatusCode::OK,
                StatusCode::OK,
                StatusCode::OK,
                StatusCode::SERVICE_UNAVAILABLE,
            ],
        }
    }
}

impl CodeMap {
    /// The same map, answering `code` for `status`.
    #[must_use]
    pub fn with(mut self, status: CheckStatus, code: StatusCode) -> Self {
        self.codes[usize::from(status.severity())] = code;
        self
    }

    /// The code for `status`; with `strict`, 200 for OK and 503 for anything else.
    #[must_use]
    pub fn code(&self, status: CheckStatus, strict: bool) -> StatusCode {
        if strict {
            if status == CheckStatus::Ok {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            }
        } else {
            self.codes[usize::from(status.severity())]
        }
    }
}
