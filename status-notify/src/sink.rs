//! Where notices go: a message with an id receivers can deduplicate by, and the sinks that
//! deliver it. A sink's address and secret never appear in a report, a page or a log.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;

use super::Notice;
use status_core::Error;

/// The version of the webhook's JSON schema: a receiver checks it.
pub const SCHEMA_VERSION: u32 = 1;

/// One notice as delivered: the webhook's JSON body (schema [`SCHEMA_VERSION`]).
///
/// ```json
/// {"version": 1, "id": "3f2a…-7", "at": "2026-11-25T03:20:00.000Z",
///  "appname": "shop", "hostname": "web-1",
///  "text": "primary-db is OUTAGE (was OK); also affected: orders-api",
///  "notice": {"kind": "changed", "id": "primary-db", "from": "OK", "to": "OUTAGE",
///             "alsoAffected": ["orders-api"]}}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message {
    /// The schema's version.
    pub version: u32,
    /// Unique per message: the same message retried keeps its id.
    pub id: String,
    /// When the notice was made.
    #[serde(serialize_with = "serialize_iso")]
    pub at: DateTime<Utc>,
    /// The application's name.
    pub appname: String,
    /// The host it runs on.
    pub hostname: String,
    /// The notice in one sentence.
    pub text: String,
    /// The notice.
    pub notice: Notice,
    /// The incident it belongs to, when the application keeps incidents
    /// ([`NotificationsBuilder::incidents`](crate::NotificationsBuilder::incidents)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incident: Option<IncidentLink>,
    /// When this instance tells the notice for the fleet that shares the failure
    /// ([`NotificationsBuilder::chorus`](crate::NotificationsBuilder::chorus)): the figures
    /// and who speaks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fleet: Option<crate::FleetVoice>,
}

/// The incident a message belongs to: its id, and where people read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IncidentLink {
    /// The incident's id (as the status page's JSON gives it).
    pub id: String,
    /// Where it is read (the public status page), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// Why a delivery failed (it is retried).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkError(pub String);

impl fmt::Display for SinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SinkError {}

/// Where messages go. Delivery is retried by the caller on error, with backoff, until the
/// message is too old; a sink only makes one attempt, within `timeout`.
pub trait Sink: Send + Sync + 'static {
    /// Its name in stats and logs (never its address).
    fn name(&self) -> &str;

    /// One attempt to deliver `message`.
    fn deliver<'a>(
        &'a self,
        message: &'a Message,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<(), SinkError>>;
}

/// An HTTP endpoint's URL, checked: `http` or `https`, with a host.
pub(crate) fn endpoint(url: &str) -> Result<reqwest::Url, Error> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| Error::invalid(format!("a notification URL does not parse: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(Error::invalid(
            "a notification URL is http:// or https://, with a host",
        ));
    }
    Ok(parsed)
}

/// The most of a receiver's answer body read; a longer answer is a failed attempt.
pub const MAX_ANSWER: usize = 64 * 1024;

/// The client every sink uses: it follows no redirect (a receiver's `Location` could send
/// the signed body anywhere), and connects within a few seconds.
pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(5))
        .user_agent(concat!("status-notify/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("a client with rustls and no redirects builds")
}

/// POSTs `body` as JSON to `url`, with `signature` if given. Delivered means a 2xx from
/// `url` itself, its answer read whole within `timeout` and at most [`MAX_ANSWER`] bytes:
/// a redirect is a failed attempt (never followed, its `Location` never logged), and so is
/// an answer that drips, never ends, or is too long.
pub(crate) async fn post(
    client: &reqwest::Client,
    url: &reqwest::Url,
    body: Vec<u8>,
    signature: Option<String>,
    timeout: Duration,
) -> Result<(), SinkError> {
    let mut request = client
        .post(url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json");
    if let Some(signature) = signature {
        request = request.header("X-Status-Signature", signature);
    }
    // One deadline for the whole attempt, the answer's body included.
    let attempt = async {
        // Errors are said without the URL: reqwest's own messages name it.
        let answer = request
            .body(body)
            .send()
            .await
            .map_err(|e| SinkError(describe(&e)))?;
        let status = answer.status();
        if status.is_redirection() {
            return Err(SinkError(format!(
                "answered {status}: redirects are not followed"
            )));
        }
        drain(answer).await?;
        if status.is_success() {
            Ok(())
        } else {
            Err(SinkError(format!("answered {status}")))
        }
    };
    tokio::time::timeout(timeout, attempt)
        .await
        .unwrap_or_else(|_| Err(SinkError("timed out".to_owned())))
}

/// Reads an answer's body to its end, refusing one over [`MAX_ANSWER`] bytes (said or
/// found), so that the connection is left clean and a receiver cannot feed us without end.
async fn drain(mut answer: reqwest::Response) -> Result<(), SinkError> {
    let too_long = || SinkError(format!("the answer is over {MAX_ANSWER} bytes"));
    if answer
        .content_length()
        .is_some_and(|n| n > MAX_ANSWER as u64)
    {
        return Err(too_long());
    }
    let mut read = 0;
    while let Some(chunk) = answer.chunk().await.map_err(|e| SinkError(describe(&e)))? {
        read += chunk.len();
        if read > MAX_ANSWER {
            return Err(too_long());
        }
    }
    Ok(())
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_connect() {
        "cannot connect".to_owned()
    } else {
        "request failed".to_owned()
    }
}

/// A JSON webhook: each [`Message`] POSTed as it serializes, optionally signed with
/// `X-Status-Signature: sha256=<hex HMAC-SHA256 of the body>` so the receiver can reject
/// forgeries.
pub struct Webhook {
    url: reqwest::Url,
    secret: Option<Vec<u8>>,
    client: reqwest::Client,
}

impl fmt::Debug for Webhook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Webhook")
            .field("signed", &self.secret.is_some())
            .finish_non_exhaustive()
    }
}

impl Webhook {
    /// A webhook to `url`.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] for a URL that does not parse, or is not http(s).
    pub fn new(url: &str) -> Result<Self, Error> {
        Ok(Self {
            url: endpoint(url)?,
            secret: None,
            client: client(),
        })
    }

    /// Signs every body with `secret` (blank: unsigned).
    #[must_use]
    pub fn secret(mut self, secret: &str) -> Self {
        self.secret = (!secret.is_empty()).then(|| secret.as_bytes().to_vec());
        self
    }
}

/// `sha256=<hex>` of the HMAC-SHA256 of `body` under `secret`: what a receiver recomputes.
#[must_use]
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let mut hex = String::with_capacity(7 + 64);
    hex.push_str("sha256=");
    for byte in digest {
        hex.push_str(&format!("{byte:02x}"));
    }
    hex
}

impl Sink for Webhook {
    fn name(&self) -> &str {
        "webhook"
    }

    fn deliver<'a>(
        &'a self,
        message: &'a Message,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        Box::pin(async move {
            let body = serde_json::to_vec(message).map_err(|e| SinkError(e.to_string()))?;
            let signed = self.secret.as_deref().map(|s| signature(s, &body));
            post(&self.client, &self.url, body, signed, timeout).await
        })
    }
}

/// A Slack incoming webhook (or any that takes `{"text": …}`): the message's sentence, with
/// the application and host.
pub struct Slack {
    url: reqwest::Url,
    client: reqwest::Client,
}

impl fmt::Debug for Slack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Slack").finish_non_exhaustive()
    }
}

impl Slack {
    /// A Slack incoming webhook at `url`.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] for a URL that does not parse, or is not http(s).
    pub fn new(url: &str) -> Result<Self, Error> {
        Ok(Self {
            url: endpoint(url)?,
            client: client(),
        })
    }
}

impl Sink for Slack {
    fn name(&self) -> &str {
        "slack"
    }

    fn deliver<'a>(
        &'a self,
        message: &'a Message,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        Box::pin(async move {
            let mut text = format!(
                "*{}* on {}: {}",
                slack_escape(&message.appname),
                slack_escape(&message.hostname),
                slack_escape(&message.text)
            );
            if let Some(fleet) = &message.fleet {
                text.push_str(&format!(
                    " (for the fleet: {})",
                    slack_escape(&fleet.figures)
                ));
            }
            if let Some(incident) = &message.incident {
                text.push_str(&format!(" (incident {}", slack_escape(&incident.id)));
                if let Some(url) = &incident.url {
                    text.push_str(&format!(": {}", slack_escape(url)));
                }
                text.push(')');
            }
            let body = serde_json::to_vec(&serde_json::json!({ "text": text }))
                .map_err(|e| SinkError(e.to_string()))?;
            post(&self.client, &self.url, body, None, timeout).await
        })
    }
}

/// Text as Slack's `mrkdwn` shows it literally: `&`, `<` and `>` escaped, so that a name or
/// a reason cannot ping a channel (`<!channel>`) or forge a link.
fn slack_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// `t` as RFC 3339 with milliseconds, UTC (`2026-11-26T04:49:47.123Z`): the timestamps of
/// every other body status writes.
fn serialize_iso<S: serde::Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

#[cfg(test)]
mod tests {
    use super::slack_escape;

    #[test]
    fn slack_text_cannot_mention_or_link() {
        assert_eq!(
            slack_escape("db <!channel> & <https://x|y>"),
            "db &lt;!channel&gt; &amp; &lt;https://x|y&gt;"
        );
    }
}
