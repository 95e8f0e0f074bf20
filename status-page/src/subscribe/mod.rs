//! The status page's subscribers (feature `subscribers`): a visitor asks to be told, by mail
//! or webhook, of the components they choose, and is told each public incident's opening,
//! updates, resolution and postmortem, and each announced maintenance. A door without a
//! token, so: mail is double opt-in, a confirmation is not re-sent within a cooldown, the
//! door is bounded in rate and in total, a webhook may not reach a private address, tokens
//! are kept hashed, and the subscribers are kept in the history (a fleet sends each message
//! once).
//!
//! | route | what |
//! |---|---|
//! | `POST /status/page/subscriptions` | JSON or a form: `email` or `webhook`, maybe `components` |
//! | `GET /status/page/subscriptions/confirm?token=` | a page whose button confirms a mail address |
//! | `POST /status/page/subscriptions/confirm?token=` | confirms it |
//! | `GET /status/page/subscriptions/unsubscribe?token=` | a page whose button unsubscribes |
//! | `POST /status/page/subscriptions/unsubscribe?token=` | unsubscribes at once (the button, RFC 8058's one click) |

pub(crate) mod admin;
mod challenge;
mod deliver;
pub(crate) mod guard;
pub(crate) mod links;
mod mailer;
pub(crate) mod routes;
mod send;
mod teller;

use std::sync::{Arc, Mutex};
use std::time::Duration;

pub(crate) use self::links::{confirm, confirm_post, unsubscribe, unsubscribe_post};
pub(crate) use self::routes::subscribe;
pub(crate) use self::teller::{start, teller};

/// The longest one message may take to reach its subscriber (a mail server's whole
/// exchange, a webhook's answer): past it, it failed, and is tried again after a backoff.
pub(crate) const SEND_DEADLINE: Duration = Duration::from_secs(30);

/// How the status page takes and tells subscribers ([`Settings::subscriptions`], or
/// status-http's `Routes::subscriptions`): where mail goes out (SMTP), who it is from, and
/// the bounds of the door.
///
/// [`Settings::subscriptions`]: crate::Settings::subscriptions
#[derive(Debug, Clone)]
pub struct Subscriptions {
    pub(crate) smtp: Option<String>,
    pub(crate) from: Option<String>,
    pub(crate) allow_private_webhooks: bool,
    pub(crate) confirm_cooldown: Duration,
    pub(crate) max_subscribers: usize,
    pub(crate) burst: u32,
    pub(crate) per_minute: u32,
    pub(crate) address_burst: u32,
    pub(crate) address_per_minute: u32,
    pub(crate) every: Duration,
    pub(crate) concurrency: usize,
    pub(crate) secret: Option<Vec<u8>>,
}

impl Default for Subscriptions {
    fn default() -> Self {
        Self::new()
    }
}

impl Subscriptions {
    /// Webhooks only (no mail) until [`smtp`](Self::smtp) and
    /// [`mail_from`](Self::mail_from) are given; at most 10,000 subscribers; 30 new
    /// subscriptions at once, 30 a minute after, of which 5 at once and 5 a minute from one
    /// client address; a confirmation at most every 10 minutes
    /// per address; webhooks to public addresses only; looks for news every 2 s; sends 8
    /// messages at once.
    #[must_use]
    pub fn new() -> Self {
        Self {
            smtp: None,
            from: None,
            allow_private_webhooks: false,
            confirm_cooldown: Duration::from_secs(600),
            max_subscribers: 10_000,
            burst: 30,
            per_minute: 30,
            address_burst: 5,
            address_per_minute: 5,
            every: Duration::from_secs(2),
            concurrency: 8,
            secret: None,
        }
    }

    /// Sends mail through the SMTP server at `url`: `smtp://host:port` (STARTTLS where
    /// the server offers it), `smtps://host:port` (TLS from the start), with
    /// `user:password@` when it asks for them.
    #[must_use]
    pub fn smtp(mut self, url: impl Into<String>) -> Self {
        self.smtp = Some(url.into());
        self
    }

    /// The address mail is from: `status@shop.example`, or `Shop status <status@shop.example>`.
    #[must_use]
    pub fn mail_from(mut self, address: impl Into<String>) -> Self {
        self.from = Some(address.into());
        self
    }

    /// Lets webhooks reach loopback, private and link-local addresses: for tests and
    /// closed networks; never on a page the internet can reach.
    #[must_use]
    pub fn allow_private_webhooks(mut self, allow: bool) -> Self {
        self.allow_private_webhooks = allow;
        self
    }

    /// How long before a confirmation is sent again to one address.
    #[must_use]
    pub fn confirm_cooldown(mut self, cooldown: Duration) -> Self {
        self.confirm_cooldown = cooldown;
        self
    }

    /// The most subscribers kept, confirmed or not.
    #[must_use]
    pub fn max_subscribers(mut self, max: usize) -> Self {
        self.max_subscribers = max;
        self
    }

    /// How many subscriptions may come in at once (`burst`) and a minute after.
    #[must_use]
    pub fn rate(mut self, burst: u32, per_minute: u32) -> Self {
        self.burst = burst;
        self.per_minute = per_minute;
        self
    }

    /// How many subscriptions one client address (an IPv6 /64) may ask for at once
    /// (`burst`) and a minute after, taken before the door's own [`rate`](Self::rate): one
    /// client spends its own share, never every visitor's. Applies where the server records
    /// the client's address (`status_http::serve`, axum's `into_make_service_with_connect_info`).
    #[must_use]
    pub fn rate_per_address(mut self, burst: u32, per_minute: u32) -> Self {
        self.address_burst = burst;
        self.address_per_minute = per_minute;
        self
    }

    /// The secret the subscribers' tokens are made from (at least 32 bytes): the same for
    /// every instance of a fleet and across restarts, so that every link sent keeps working.
    /// Without one, each process makes its own, and says so: the links of mails sent
    /// before a restart (or by another instance) no longer work.
    #[must_use]
    pub fn secret(mut self, secret: impl Into<Vec<u8>>) -> Self {
        self.secret = Some(secret.into());
        self
    }

    /// How many messages are sent at once (at least one): an SMTP server or a webhook's host
    /// slow to answer delays the others no more than this allows.
    #[must_use]
    pub fn concurrency(mut self, sends: usize) -> Self {
        self.concurrency = sends.max(1);
        self
    }

    /// Whether the mail settings can work, to refuse a mistyped one at startup rather than
    /// find out at the first message: the SMTP URL's scheme, host and port, and the sender's
    /// address. Webhooks only (no SMTP URL) is fine.
    ///
    /// # Errors
    ///
    /// What is wrong, in words for the operator.
    pub fn check(&self) -> Result<(), String> {
        if let Some(url) = &self.smtp {
            mailer::Mailer::new(url).map_err(|e| format!("the SMTP URL {url:?}: {e}"))?;
            let from = self
                .from
                .as_deref()
                .ok_or("mail needs a sender's address (Subscriptions::mail_from)")?;
            from.parse::<lettre::message::Mailbox>()
                .map_err(|e| format!("the sender's address {from:?}: {e}"))?;
        }
        Ok(())
    }

    /// How often the page looks for news to tell.
    #[must_use]
    pub fn every(mut self, every: Duration) -> Self {
        self.every = every;
        self
    }
}

/// What the routes and the teller share.
pub(crate) struct Door {
    pub(crate) config: Subscriptions,
    pub(crate) bucket: Mutex<guard::Bucket>,
    pub(crate) per_address: Mutex<guard::Buckets>,
    key: Vec<u8>,
}

impl std::fmt::Debug for Door {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Door").finish_non_exhaustive()
    }
}

impl Door {
    pub(crate) fn new(config: Subscriptions) -> Arc<Self> {
        let bucket = guard::Bucket::new(config.burst, config.per_minute, std::time::Instant::now());
        // A secret shorter than 32 bytes is refused before this (`Settings::check`).
        let key = match config.secret.clone().filter(|s| s.len() >= 32) {
            Some(key) => key,
            None => {
                tracing::warn!(
                    "the subscriptions have no secret (Subscriptions::secret): this process makes \
                     its own, and the links of mails sent before a restart, or by another \
                     instance, will not work"
                );
                let mut key = vec![0u8; 32];
                let _ = getrandom::fill(&mut key);
                key
            }
        };
        let per_address = guard::Buckets::new(config.address_burst, config.address_per_minute);
        Arc::new(Self {
            config,
            bucket: Mutex::new(bucket),
            per_address: Mutex::new(per_address),
            key,
        })
    }

    /// The secret token of the subscriber of `kind` at `address` (it confirms and
    /// unsubscribes), and its hash as kept: made again from the page's secret whenever a
    /// message needs it, never stored.
    pub(crate) fn token(
        &self,
        kind: status_history::SubscriberKind,
        address: &str,
    ) -> (String, String) {
        use hmac::Mac;
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        mac.update(kind.as_str().as_bytes());
        mac.update(b"\n");
        mac.update(address.as_bytes());
        let token = hex(&mac.finalize().into_bytes());
        let hash = hash(&token);
        (token, hash)
    }
}

/// A token's hash, as kept: the token itself is never stored.
pub(crate) fn hash(token: &str) -> String {
    use sha2::Digest;
    hex(&sha2::Sha256::digest(token.as_bytes()))
}

pub(super) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::Subscriptions;

    #[test]
    fn mistyped_mail_settings_are_found_before_the_first_message() {
        assert!(Subscriptions::new().check().is_ok(), "webhooks only");
        let mail = |url: &str, from: &str| Subscriptions::new().smtp(url).mail_from(from).check();
        assert!(mail("smtp://mail.example.com:587", "Shop <status@shop.example>").is_ok());
        assert!(mail("smtps://user:pw@mail.example.com", "status@shop.example").is_ok());
        for (url, from) in [
            ("mail.example.com:587", "status@shop.example"),
            ("smtpx://mail.example.com", "status@shop.example"),
            ("smtp://mail.example.com:port", "status@shop.example"),
            ("smtp://mail.example.com:587", "not an address"),
        ] {
            let e = mail(url, from).unwrap_err();
            assert!(e.contains(url) || e.contains(from), "{url} {from}: {e}");
        }
        let e = Subscriptions::new().smtp("smtp://mail.example.com").check();
        assert!(e.unwrap_err().contains("mail_from"));
    }
}
