//! Telling subscribers: what happened (each public incident update, postmortem, and each
//! announced maintenance's announcement, start and end), computed from what the page shows;
//! each message claimed in the store before it is sent (a fleet sends it once), released
//! when sending fails (tried again later, with a backoff), never sent for news older than
//! the subscriber's confirmation or than a day.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use lettre::message::header::ContentType;
use lettre::message::{Mailbox, Message};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use serde_json::json;
use status_history::{Subscriber, SubscriberKind};

use super::{guard, Door};
use crate::statuspage::i18n::{self, Locale};
use crate::statuspage::{Maintenance, PublicIncident, Snapshot, StatusPageState};

/// News older than this is not told: a subscriber is told what happens, not history.
const FRESH: chrono::Duration = chrono::Duration::days(1);
/// The longest a failing subscriber waits before its next try.
const MAX_BACKOFF: Duration = Duration::from_secs(3600);

/// One thing to tell.
#[derive(Debug, Clone)]
struct Event {
    /// Stable across instances and restarts: what a delivery is claimed by.
    key: String,
    at: DateTime<Utc>,
    /// The component ids it touches (empty: all).
    components: Vec<String>,
    what: What,
}

#[derive(Debug, Clone)]
enum What {
    /// An incident's update (its opening, an operator's word, its resolution).
    Update { incident: i64, update: i64 },
    /// An incident's postmortem.
    Postmortem { incident: i64 },
    /// A maintenance announced, started or ended.
    Maintenance { id: String, phase: &'static str },
}

/// What the page shows, as things to tell, at `now`.
fn events(
    incidents: &[PublicIncident],
    maintenances: &[Maintenance],
    now: DateTime<Utc>,
) -> Vec<Event> {
    let ms = |t: i64| DateTime::from_timestamp_millis(t).unwrap_or_default();
    let mut out = Vec::new();
    for i in incidents {
        let components: Vec<String> = i.components.iter().map(|(id, _)| id.clone()).collect();
        for u in &i.updates {
            out.push(Event {
                key: format!("incident-{}-update-{}", i.id, u.id),
                at: ms(u.at),
                components: components.clone(),
                what: What::Update {
                    incident: i.id,
                    update: u.id,
                },
            });
        }
        if let Some((_, at)) = &i.postmortem {
            out.push(Event {
                key: format!("incident-{}-postmortem-{at}", i.id),
                at: ms(*at),
                components: components.clone(),
                what: What::Postmortem { incident: i.id },
            });
        }
    }
    for m in maintenances {
        let components: Vec<String> = m.components.iter().map(|(id, _)| id.clone()).collect();
        for (phase, at) in [
            ("announced", Some(m.set_at)),
            ("started", (m.start <= now).then_some(m.start.max(m.set_at))),
            ("ended", (m.until <= now).then_some(m.until)),
        ] {
            if let Some(at) = at {
                out.push(Event {
                    key: format!("{}-{phase}", m.id),
                    at,
                    components: components.clone(),
                    what: What::Maintenance {
                        id: m.id.clone(),
                        phase,
                    },
                });
            }
        }
    }
    out.retain(|e| e.at <= now && now - e.at <= FRESH);
    out
}

/// Whether `subscriber` is told `event`: confirmed before it happened, and caring about a
/// component it touches.
fn wants(subscriber: &Subscriber, event: &Event) -> bool {
    subscriber.confirmed.is_some_and(|c| c <= event.at)
        && (subscriber.components.is_empty()
            || event.components.is_empty()
            || subscriber
                .components
                .iter()
                .any(|c| event.components.contains(c)))
}

/// Starts telling subscribers, in a task on the current runtime (none: a warning, and no
/// one is told).
pub(crate) fn start(state: &Arc<StatusPageState>) {
    let (Some(door), Some(_)) = (state.door.clone(), state.history.as_ref()) else {
        return;
    };
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::warn!("the status page's subscribers are not told: no Tokio runtime at build");
        return;
    };
    let state = Arc::downgrade(state);
    runtime.spawn(async move {
        let mut teller = Teller::new(&door);
        let mut every = tokio::time::interval(door.config.every);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            // The routes gone, the teller goes.
            let Some(state) = state.upgrade() else { return };
            teller.round(&state, &door).await;
        }
    });
}

/// What one instance keeps between rounds: what it knows to be told, and who fails.
struct Teller {
    mail: Option<AsyncSmtpTransport<Tokio1Executor>>,
    web: Option<reqwest::Client>,
    told: HashSet<(String, i64)>,
    failing: HashMap<i64, (u32, tokio::time::Instant)>,
}

impl Teller {
    fn new(door: &Door) -> Self {
        let mail = door
            .config
            .smtp
            .as_deref()
            .and_then(|url| match transport(url) {
                Ok(t) => Some(t),
                Err(e) => {
                    tracing::warn!("the status page sends no mail: {e}");
                    None
                }
            });
        let web = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(5))
            .dns_resolver(Arc::new(Resolver {
                allow_private: door.config.allow_private_webhooks,
            }))
            .build()
            .map_err(|e| tracing::warn!("the status page posts no webhooks: {e}"))
            .ok();
        Self {
            mail,
            web,
            told: HashSet::new(),
            failing: HashMap::new(),
        }
    }

    async fn round(&mut self, state: &StatusPageState, door: &Door) {
        let Some(history) = state.history.as_ref() else {
            return;
        };
        let snapshot = state.snapshot().await;
        let kept = state.feed_incidents().await;
        let incidents: Vec<PublicIncident> = kept
            .iter()
            .map(|i| PublicIncident::of(i, &snapshot.components))
            .collect();
        let now = history.now();
        let events = events(&incidents, &snapshot.maintenances, now);
        let live: HashSet<&str> = events.iter().map(|e| e.key.as_str()).collect();
        self.told.retain(|(key, _)| live.contains(key.as_str()));
        if events.is_empty() {
            return;
        }
        let subscribers = match history.subscribers().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("the status page's subscribers cannot be read: {e}");
                return;
            }
        };
        let clock = tokio::time::Instant::now();
        for s in &subscribers {
            if self
                .failing
                .get(&s.id)
                .is_some_and(|(_, next)| *next > clock)
            {
                continue;
            }
            for e in events.iter().filter(|e| wants(s, e)) {
                let pair = (e.key.clone(), s.id);
                if self.told.contains(&pair) {
                    continue;
                }
                match history.claim_delivery(&e.key, s.id, now).await {
                    Ok(true) => {}
                    Ok(false) => {
                        self.told.insert(pair);
                        continue;
                    }
                    Err(err) => {
                        tracing::warn!("a delivery to a subscriber cannot be claimed: {err}");
                        return;
                    }
                }
                match self.send(state, door, &snapshot, &incidents, s, e).await {
                    Ok(()) => {
                        self.failing.remove(&s.id);
                        self.told.insert(pair);
                    }
                    Err(why) => {
                        let (n, _) = self.failing.get(&s.id).copied().unwrap_or((0, clock));
                        let wait = Duration::from_secs(2u64.saturating_pow(n + 1)).min(MAX_BACKOFF);
                        self.failing.insert(s.id, (n + 1, clock + wait));
                        tracing::warn!(
                            subscriber = s.id,
                            kind = s.kind.as_str(),
                            "a message to a subscriber failed, tried again in {wait:?}: {why}"
                        );
                        let _ = history.release_delivery(&e.key, s.id).await;
                        break;
                    }
                }
            }
        }
    }

    async fn send(
        &self,
        state: &StatusPageState,
        door: &Door,
        snapshot: &Snapshot,
        incidents: &[PublicIncident],
        s: &Subscriber,
        e: &Event,
    ) -> Result<(), String> {
        let l = i18n::negotiate(Some(&s.lang), None);
        let (subject, text, incident) = words(state, snapshot, incidents, e, l);
        match s.kind {
            SubscriberKind::Email => {
                let mail = self.mail.as_ref().ok_or("no SMTP server is set")?;
                let link = unsubscribe_link(state, door, s);
                let body = format!(
                    "{text}\n\n{}\n{}\n",
                    l.text("mail-see-page", &[("url", page_url(state).into())]),
                    l.text("mail-unsubscribe", &[("url", link.clone().into())]),
                );
                let message = mail_message(door, &s.address, &subject, body, Some(&link))?;
                mail.send(message)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
            SubscriberKind::Webhook => {
                let web = self.web.as_ref().ok_or("no HTTP client")?;
                let link = unsubscribe_link(state, door, s);
                let (indicator, description) = crate::statuspage::indicator(snapshot.condition);
                let mut payload = json!({
                    "meta": {
                        "unsubscribe": link,
                        "documentation": "https://support.atlassian.com/statuspage/docs/enable-webhook-notifications/",
                    },
                    "page": {
                        "id": state.name,
                        "status_indicator": indicator,
                        "status_description": description,
                    },
                });
                payload["incident"] = incident;
                let answer = web
                    .post(&s.address)
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(serde_json::to_vec(&payload).unwrap_or_default())
                    .send()
                    .await
                    .map_err(|e| e.to_string())?;
                if answer.status().is_success() {
                    Ok(())
                } else {
                    Err(format!("the webhook answered {}", answer.status()))
                }
            }
        }
    }
}

/// The subject, the text and the Statuspage JSON of `e`, in `l`'s words.
fn words(
    state: &StatusPageState,
    snapshot: &Snapshot,
    incidents: &[PublicIncident],
    e: &Event,
    l: &Locale,
) -> (String, String, serde_json::Value) {
    let render = crate::statuspage::json::Render::new(state, snapshot);
    let (incident, update) = match &e.what {
        What::Update { incident, update } => (*incident, Some(*update)),
        What::Postmortem { incident } => (*incident, None),
        What::Maintenance { id, phase } => {
            let Some(m) = snapshot.maintenances.iter().find(|m| &m.id == id) else {
                return (String::new(), String::new(), json!(null));
            };
            let title = l.text(
                &format!("maintenance-{phase}"),
                &[("title", m.name.clone().into())],
            );
            let window = l.text(
                "maintenance-window",
                &[
                    ("start", m.start.format("%Y-%m-%d %H:%M").to_string().into()),
                    ("until", m.until.format("%Y-%m-%d %H:%M").to_string().into()),
                ],
            );
            return (
                format!("[{}] {title}", state.name),
                format!("{window}\n\n{}", m.body),
                serde_json::to_value(render.maintenance(m)).unwrap_or_default(),
            );
        }
    };
    let Some(i) = incidents.iter().find(|i| i.id == incident) else {
        return (String::new(), String::new(), json!(null));
    };
    let view = crate::statuspage::page::view(i, l);
    let text = match update {
        Some(update) => i
            .updates
            .iter()
            .position(|u| u.id == update)
            .and_then(|n| view.updates.get(n))
            .map(|u| format!("{} ({} UTC)\n\n{}", u.status, u.at, u.body))
            .unwrap_or_default(),
        None => i
            .postmortem
            .as_ref()
            .map(|(body, _)| format!("{}\n\n{body}", view.postmortem_label))
            .unwrap_or_default(),
    };
    (
        format!("[{}] {}: {}", state.name, view.name, view.status),
        text,
        serde_json::to_value(render.incident(i)).unwrap_or_default(),
    )
}

fn page_url(state: &StatusPageState) -> String {
    format!("{}/status/page", state.url.as_deref().unwrap_or_default())
}

/// The unsubscribe link of `s`, its token made again from the page's secret.
fn unsubscribe_link(state: &StatusPageState, door: &Door, s: &Subscriber) -> String {
    let (secret, _) = door.token(s.kind, &s.address);
    format!(
        "{}/status/page/subscriptions/unsubscribe?token={secret}",
        state.url.as_deref().unwrap_or_default()
    )
}

/// Sends the confirmation mail of a new subscriber: a link with its token, nothing else.
pub(crate) async fn confirmation(
    state: &StatusPageState,
    door: &Door,
    s: &Subscriber,
    secret: &str,
    l: &Locale,
) {
    let Some(url) = door.config.smtp.as_deref() else {
        return;
    };
    let base = state.url.as_deref().unwrap_or_default();
    let link = format!(
        "{base}/status/page/subscriptions/confirm?token={secret}&lang={}",
        l.tag()
    );
    let body = format!(
        "{}\n\n{link}\n\n{}\n",
        l.text("mail-confirm-body", &[("name", state.name.clone().into())]),
        l.text("mail-confirm-ignore", &[]),
    );
    let subject = l.text(
        "mail-confirm-subject",
        &[("name", state.name.clone().into())],
    );
    let sent = match (
        transport(url),
        mail_message(door, &s.address, &subject, body, None),
    ) {
        (Ok(t), Ok(m)) => t.send(m).await.map(|_| ()).map_err(|e| e.to_string()),
        (Err(e), _) | (_, Err(e)) => Err(e),
    };
    if let Err(e) = sent {
        tracing::warn!(
            subscriber = s.id,
            "a confirmation mail could not be sent: {e}"
        );
    }
}

/// A mail to `to`, with RFC 8058's one-click unsubscription when `unsubscribe` is given.
fn mail_message(
    door: &Door,
    to: &str,
    subject: &str,
    body: String,
    unsubscribe: Option<&str>,
) -> Result<Message, String> {
    let from: Mailbox = door
        .config
        .from
        .as_deref()
        .ok_or("no sender is set")?
        .parse()
        .map_err(|e| format!("the sender: {e}"))?;
    let to: Mailbox = to.parse().map_err(|e| format!("the address: {e}"))?;
    let mut builder = Message::builder().from(from).to(to).subject(subject);
    if let Some(link) = unsubscribe {
        builder = builder
            .raw_header(lettre::message::header::HeaderValue::new(
                lettre::message::header::HeaderName::new_from_ascii_str("List-Unsubscribe"),
                format!("<{link}>"),
            ))
            .raw_header(lettre::message::header::HeaderValue::new(
                lettre::message::header::HeaderName::new_from_ascii_str("List-Unsubscribe-Post"),
                "List-Unsubscribe=One-Click".to_owned(),
            ));
    }
    builder
        .header(ContentType::TEXT_PLAIN)
        .body(body)
        .map_err(|e| e.to_string())
}

/// The SMTP transport of `url`: `smtp://[user:password@]host[:port]` with STARTTLS where
/// offered, `smtps://…` with TLS from the start.
fn transport(url: &str) -> Result<AsyncSmtpTransport<Tokio1Executor>, String> {
    let (scheme, rest) = url.split_once("://").ok_or("the SMTP URL has no scheme")?;
    let (credentials, hostport) = match rest.trim_end_matches('/').rsplit_once('@') {
        Some((user, hostport)) => {
            let (name, password) = user.split_once(':').unwrap_or((user, ""));
            (
                Some(Credentials::new(name.to_owned(), password.to_owned())),
                hostport,
            )
        }
        None => (None, rest.trim_end_matches('/')),
    };
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse::<u16>()
                .map_err(|_| "the SMTP port is not a number")?,
        ),
        None => (hostport, if scheme == "smtps" { 465 } else { 587 }),
    };
    let tls = TlsParameters::new(host.to_owned()).map_err(|e| e.to_string())?;
    let tls = match scheme {
        "smtp" => Tls::Opportunistic(tls),
        "smtps" => Tls::Wrapper(tls),
        other => {
            return Err(format!(
                "the SMTP URL's scheme is {other:?}, not smtp or smtps"
            ))
        }
    };
    let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host)
        .port(port)
        .tls(tls)
        .timeout(Some(Duration::from_secs(10)));
    if let Some(c) = credentials {
        builder = builder.credentials(c);
    }
    Ok(builder.build())
}

/// Resolves a webhook's host, leaving out the addresses a webhook may not reach (checked
/// again at each sending: a name that resolved to a public address when subscribed may not
/// point inside later).
struct Resolver {
    allow_private: bool,
}

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow_private = self.allow_private;
        Box::pin(async move {
            let found: Vec<std::net::SocketAddr> = tokio::net::lookup_host((name.as_str(), 0))
                .await?
                .filter(|a| allow_private || guard::reachable(a.ip()))
                .collect();
            if found.is_empty() {
                return Err("the webhook's host resolves to no address it may reach".into());
            }
            let addrs: reqwest::dns::Addrs = Box::new(found.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subscriber(confirmed: Option<i64>, components: &[&str]) -> Subscriber {
        Subscriber {
            id: 1,
            kind: SubscriberKind::Email,
            address: "ana@example.com".into(),
            components: components.iter().map(|c| (*c).to_owned()).collect(),
            lang: "en".into(),
            token: String::new(),
            created: DateTime::default(),
            confirmed: confirmed.and_then(DateTime::from_timestamp_millis),
            confirm_sent: None,
        }
    }

    #[test]
    fn a_subscriber_is_told_only_news_after_its_confirmation_of_what_it_chose() {
        let event = Event {
            key: "incident-1-update-1".into(),
            at: DateTime::from_timestamp_millis(1_000).unwrap(),
            components: vec!["group-ready".into()],
            what: What::Update {
                incident: 1,
                update: 1,
            },
        };
        assert!(wants(&subscriber(Some(500), &[]), &event));
        assert!(wants(&subscriber(Some(500), &["group-ready"]), &event));
        assert!(!wants(
            &subscriber(Some(500), &["dependency-search"]),
            &event
        ));
        assert!(
            !wants(&subscriber(Some(1_500), &[]), &event),
            "news before it"
        );
        assert!(!wants(&subscriber(None, &[]), &event), "unconfirmed");
    }
}
