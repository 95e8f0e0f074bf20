//! HTTP: a URL's status code, body and latency; or another `status` instance's summary.

use std::fmt;
use std::ops::RangeInclusive;

use tokio::time::Instant;

use crate::latency::graded;
use status_core::check::{Check, CheckOutcome, Threshold};
use status_core::{CheckStatus, Error};

/// The largest body read for a body match or a summary: 1 MiB.
const MAX_BODY: usize = 1 << 20;

#[derive(Debug, Clone)]
enum Expect {
    /// Codes in a range, optionally a substring of the body.
    Response {
        codes: RangeInclusive<u16>,
        body_contains: Option<String>,
    },
    /// A `status` summary: its `condition` is this check's status.
    Summary,
}

/// GETs a URL and judges the answer: its status code (2xx by default), optionally a text its
/// body must contain, optionally its latency.
///
/// Requests go through a pooled `reqwest` client; a run cut off by the timeout drops its
/// request, and with it the connection it was using. No redirect is followed: a 3xx is
/// judged as it is (a failure, unless [`expect_status`](Self::expect_status) accepts it),
/// and the check never sends a request to an address its URL does not name. At most
/// 1 MiB of a body is read.
///
/// # Example
///
/// ```
/// use status_checks::http::HttpCheck;
/// use status_core::check::Threshold;
///
/// let api = HttpCheck::new("https://payments.example.com/health")
///     .unwrap()
///     .expect_status(200..=204)
///     .body_contains("\"ok\"")
///     .latency(Threshold::at_most(200.0, 500.0, 2000.0).unwrap());
///
/// // Another service built on status: its condition becomes this check's status.
/// let upstream = HttpCheck::status_summary("http://10.0.0.7:8080/healthcheck/summary").unwrap();
/// # let _ = (api, upstream);
/// ```
pub struct HttpCheck {
    client: reqwest::Client,
    url: reqwest::Url,
    expect: Expect,
    latency: Option<Threshold>,
}

impl HttpCheck {
    /// A check of `url`, expecting a 2xx answer.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] for a URL that does not parse or is not `http`/`https`, or when
    /// the HTTP client cannot be built.
    pub fn new(url: &str) -> Result<Self, Error> {
        let url = reqwest::Url::parse(url)
            .map_err(|e| Error::invalid(format!("invalid URL {url:?}: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Error::invalid(format!("not an http(s) URL: {url}")));
        }
        // No redirect is followed: the check judges the answer of the URL it was given (a
        // 3xx fails the default `expect_status`), and never sends a request elsewhere.
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("status-check/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::invalid(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            client,
            url,
            expect: Expect::Response {
                codes: 200..=299,
                body_contains: None,
            },
            latency: None,
        })
    }

    /// A check of another `status` instance's `/healthcheck/summary` at `url`: its
    /// `condition` becomes this check's status, whatever the HTTP code (a summary answers 503
    /// in OUTAGE).
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn status_summary(url: &str) -> Result<Self, Error> {
        let mut check = Self::new(url)?;
        check.expect = Expect::Summary;
        Ok(check)
    }

    /// Accepts these status codes (default `200..=299`).
    #[must_use]
    pub fn expect_status(mut self, codes: RangeInclusive<u16>) -> Self {
        if let Expect::Response { codes: c, .. } = &mut self.expect {
            *c = codes;
        }
        self
    }

    /// Requires the body to contain `text`.
    #[must_use]
    pub fn body_contains(mut self, text: impl Into<String>) -> Self {
        if let Expect::Response { body_contains, .. } = &mut self.expect {
            *body_contains = Some(text.into());
        }
        self
    }

    /// Grades the answer's latency, in milliseconds (OK whatever it is by default).
    #[must_use]
    pub fn latency(mut self, threshold: Threshold) -> Self {
        self.latency = Some(threshold);
        self
    }
}

async fn read_body(mut response: reqwest::Response) -> Result<String, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = MAX_BODY.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if room <= chunk.len() {
            break;
        }
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

impl Check for HttpCheck {
    async fn check(&self) -> CheckOutcome {
        let started = Instant::now();
        let response = match self.client.get(self.url.clone()).send().await {
            Ok(response) => response,
            Err(e) => return CheckOutcome::from_error(e),
        };
        let code = response.status().as_u16();
        match &self.expect {
            Expect::Summary => {
                let body = match read_body(response).await {
                    Ok(body) => body,
                    Err(e) => return CheckOutcome::from_error(e),
                };
                let condition = serde_json::from_str::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v.get("condition")?.as_str()?.parse::<CheckStatus>().ok());
                match condition {
                    Some(status) => {
                        let ms = started.elapsed().as_secs_f64() * 1000.0;
                        CheckOutcome::new(
                            status,
                            format!("remote condition {status} (HTTP {code})"),
                        )
                        .with_value_in(ms, status_core::check::Unit::Milliseconds)
                    }
                    None => CheckOutcome::new(
                        CheckStatus::Outage,
                        format!("HTTP {code} without a status summary"),
                    ),
                }
            }
            Expect::Response {
                codes,
                body_contains,
            } => {
                if !codes.contains(&code) {
                    return CheckOutcome::new(
                        CheckStatus::Outage,
                        format!("HTTP {code}, expected {}..={}", codes.start(), codes.end()),
                    );
                }
                if let Some(text) = body_contains {
                    match read_body(response).await {
                        Ok(body) if body.contains(text.as_str()) => {}
                        Ok(_) => {
                            return CheckOutcome::new(
                                CheckStatus::Outage,
                                format!("HTTP {code} but the body lacks {text:?}"),
                            )
                        }
                        Err(e) => return CheckOutcome::from_error(e),
                    }
                }
                graded(
                    started.elapsed(),
                    self.latency.as_ref(),
                    &format!("HTTP {code}"),
                )
            }
        }
    }
}

impl fmt::Debug for HttpCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpCheck")
            .field("url", &self.url.as_str())
            .field("expect", &self.expect)
            .field("latency", &self.latency)
            .finish_non_exhaustive()
    }
}
