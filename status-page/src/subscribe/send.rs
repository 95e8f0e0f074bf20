//! How a message is made and sent: its words in the subscriber's language, a mail over SMTP
//! (with RFC 8058's headers), a webhook's resolver that reaches public addresses only.

use std::time::Duration;

use lettre::message::header::ContentType;
use lettre::message::{Mailbox, Message};
use serde_json::json;
use status_history::Subscriber;

use super::deliver::{Event, What};
use super::{guard, Door};
use crate::i18n::Locale;
use crate::{PublicIncident, Snapshot, StatusPageState};

/// The subject, the text and the Statuspage JSON of `e`, in `l`'s words.
pub(super) fn words(
    state: &StatusPageState,
    snapshot: &Snapshot,
    incidents: &[PublicIncident],
    e: &Event,
    l: &Locale,
) -> (String, String, serde_json::Value) {
    let render = crate::json::Render::new(state, snapshot);
    let (incident, update) = match &e.what {
        What::Update { incident, update } => (*incident, Some(*update)),
        What::Postmortem { incident } => (*incident, None),
        What::Maintenance { id, phase } => {
            let Some(m) = snapshot
                .maintenances
                .iter()
                .chain(&snapshot.called_off)
                .find(|m| &m.id == id)
            else {
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
    let view = crate::page::view(i, l);
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

pub(super) fn page_url(state: &StatusPageState) -> String {
    format!("{}/status/page", state.url.as_deref().unwrap_or_default())
}

/// The unsubscribe link of `s`, its token made again from the page's secret.
pub(super) fn unsubscribe_link(state: &StatusPageState, door: &Door, s: &Subscriber) -> String {
    let (secret, _) = door.token(s.kind, &s.address);
    format!(
        "{}/status/page/subscriptions/unsubscribe?token={secret}",
        state.url.as_deref().unwrap_or_default()
    )
}

/// Sends the confirmation mail of a new subscriber: a link with its token, nothing else.
pub(super) async fn confirmation(
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
    let (transport, message) = match (
        super::mailer::Mailer::new(url),
        mail_message(door, &s.address, &subject, body, None),
    ) {
        (Ok(t), Ok(m)) => (t, m),
        (Err(e), _) | (_, Err(e)) => {
            tracing::warn!(subscriber = s.id, "a confirmation mail cannot be made: {e}");
            return;
        }
    };
    // A mail server that fails is tried again, after 5 s then 30 s, each try under the
    // deadline.
    let mut why = String::new();
    for wait in CONFIRMATION_RETRIES {
        tokio::time::sleep(wait).await;
        match tokio::time::timeout(super::SEND_DEADLINE, transport.send(message.clone())).await {
            Ok(Ok(_)) => return,
            Ok(Err(e)) => why = e,
            Err(_) => why = format!("no answer within {}s", super::SEND_DEADLINE.as_secs()),
        }
    }
    tracing::warn!(
        subscriber = s.id,
        "a confirmation mail could not be sent, three tries: {why}; the address may ask again at once"
    );
    // Never accepted: the cooldown of a mail that was sent does not hold the visitor back.
    if let Some(history) = state.history.as_ref() {
        let unsent = Subscriber {
            confirm_sent: None,
            ..s.clone()
        };
        if let Err(e) = history.subscribe(&unsent).await {
            tracing::warn!(subscriber = s.id, "its cooldown cannot be lifted: {e}");
        }
    }
}

/// The waits before each try of a confirmation mail.
const CONFIRMATION_RETRIES: [std::time::Duration; 3] = [
    std::time::Duration::ZERO,
    std::time::Duration::from_secs(5),
    std::time::Duration::from_secs(30),
];

/// A mail to `to`, with RFC 8058's one-click unsubscription when `unsubscribe` is given.
pub(super) fn mail_message(
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
    // Each mail its own Message-ID, at the sender's domain: many receivers score a mail
    // without one as spam, and threads and bounces refer to it.
    let mut nonce = [0u8; 16];
    let _ = getrandom::fill(&mut nonce);
    let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
    let id = format!("<{nonce}@{}>", from.email.domain());
    let mut builder = Message::builder()
        .from(from)
        .to(to)
        .subject(subject)
        .message_id(Some(id));
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

/// The client webhooks are posted with: no proxy, whatever the environment says
/// (`HTTP_PROXY`: through one, the rules on the addresses a webhook may reach would never
/// run), no redirect followed, 5 s for an answer, and a resolver that leaves out the
/// addresses a webhook may not reach (unless `allow_private`).
pub(super) fn web_client(allow_private: bool) -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(5))
        .dns_resolver(std::sync::Arc::new(Resolver { allow_private }))
        .build()
}

/// `Err` when the webhook `url`'s host is an address (not a name) a webhook may not reach.
pub(super) fn literal_reachable(url: &str) -> Result<(), String> {
    let url = reqwest::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
    let host = url.host_str().unwrap_or_default();
    let Ok(ip) = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<std::net::IpAddr>()
    else {
        return Ok(());
    };
    if super::guard::reachable(ip) {
        Ok(())
    } else {
        Err(format!(
            "the webhook's address {ip} is not one a webhook may reach"
        ))
    }
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

    #[test]
    fn each_mail_has_a_message_id_of_its_own_at_the_senders_domain() {
        let door = Door::new(
            crate::Subscriptions::new()
                .smtp("smtp://127.0.0.1:2525")
                .mail_from("Shop status <status@shop.example>")
                .secret([1u8; 32]),
        );
        let made = |to: &str| {
            let m = mail_message(&door, to, "Subject", "Body".into(), None).unwrap();
            String::from_utf8(m.formatted()).unwrap()
        };
        let id = |mail: &str| {
            mail.lines()
                .find_map(|l| l.strip_prefix("Message-ID: "))
                .map(str::to_owned)
                .unwrap_or_else(|| panic!("no Message-ID in {mail}"))
        };
        let (a, b) = (made("a@example.com"), made("a@example.com"));
        assert!(id(&a).ends_with("@shop.example>"), "{a}");
        assert_ne!(id(&a), id(&b), "one per mail");
    }
}
