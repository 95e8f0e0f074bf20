//! Which HTTP status answers which system status.

use axum::http::StatusCode;
use status_core::{CheckStatus, ServePolicy};

/// The HTTP status of each [`CheckStatus`] on the probe endpoints: codes only. Whether a
/// level serves is the registry's [`ServePolicy`] (what gRPC's `""` answers by too), so a
/// level the policy serves answers its code here when that is a success code, else 200; a
/// level the policy fails answers its code when that is an error code, else 503.
///
/// The default answers 200 for each level the policy serves and 503 for each it fails: with
/// the default policy, OK, MINOR and MAJOR answer 200 and OUTAGE 503. `?strict=true`
/// answers 503 for anything but OK whatever the map and the policy say.
///
/// # Example
///
/// ```
/// use axum::http::StatusCode;
/// use status_core::{CheckStatus, ServePolicy};
/// use status_http::CodeMap;
///
/// // Indeed's convention: a distinct 512 for OUTAGE.
/// let codes = CodeMap::default().with(CheckStatus::Outage, StatusCode::from_u16(512).unwrap());
/// assert_eq!(codes.code(CheckStatus::Outage, false).as_u16(), 512);
/// assert_eq!(codes.code(CheckStatus::Minor, true), StatusCode::SERVICE_UNAVAILABLE);
/// // Under a policy that fails from MAJOR, MAJOR answers 503: the policy decides, the map
/// // only picks the code.
/// let policy = ServePolicy::failing_from(CheckStatus::Major);
/// assert_eq!(codes.answer(CheckStatus::Major, policy, false), StatusCode::SERVICE_UNAVAILABLE);
/// assert_eq!(codes.answer(CheckStatus::Outage, policy, false).as_u16(), 512);
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
    /// The same map, answering `code` for `status` (when the policy agrees: see the type).
    #[must_use]
    pub fn with(mut self, status: CheckStatus, code: StatusCode) -> Self {
        self.codes[usize::from(status.severity())] = code;
        self
    }

    /// The code for `status` under the default [`ServePolicy`]; with `strict`, 200 for OK
    /// and 503 for anything else.
    #[must_use]
    pub fn code(&self, status: CheckStatus, strict: bool) -> StatusCode {
        self.answer(status, ServePolicy::default(), strict)
    }

    /// The code for `status` under `policy`: a success code exactly when the policy serves
    /// `status` (with `strict`, exactly at OK).
    #[must_use]
    pub fn answer(&self, status: CheckStatus, policy: ServePolicy, strict: bool) -> StatusCode {
        if strict {
            return if status == CheckStatus::Ok {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
        }
        let code = self.codes[usize::from(status.severity())];
        match (policy.serves(status), code.is_success()) {
            (true, true) | (false, false) => code,
            (true, false) => StatusCode::OK,
            (false, true) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The levels `policy` serves that this map gives an error code (which it then answers
    /// 200 for): a map written before [`ServePolicy`], meant to fail them.
    #[must_use]
    pub fn disagreements(&self, policy: ServePolicy) -> Vec<CheckStatus> {
        CheckStatus::ALL
            .into_iter()
            .filter(|&s| policy.serves(s) && !self.codes[usize::from(s.severity())].is_success())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_decides_and_the_map_picks_the_code() {
        let teapot = StatusCode::IM_A_TEAPOT;
        let map = CodeMap::default()
            .with(
                CheckStatus::Minor,
                StatusCode::NON_AUTHORITATIVE_INFORMATION,
            )
            .with(CheckStatus::Major, teapot);
        let default = ServePolicy::default();
        // MAJOR serves by default: the map's error code cannot fail it.
        assert_eq!(
            map.answer(CheckStatus::Major, default, false),
            StatusCode::OK
        );
        assert_eq!(map.disagreements(default), vec![CheckStatus::Major]);
        let strict = ServePolicy::failing_from(CheckStatus::Minor);
        assert_eq!(map.answer(CheckStatus::Major, strict, false), teapot);
        assert_eq!(
            map.answer(CheckStatus::Minor, strict, false),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            map.answer(CheckStatus::Minor, default, false),
            StatusCode::NON_AUTHORITATIVE_INFORMATION
        );
        assert!(map.disagreements(strict).is_empty());
    }
}
