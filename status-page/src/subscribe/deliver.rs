//! Telling subscribers: what happened (each public incident update, postmortem, and each
//! announced maintenance's announcement, start and end), computed from what the page shows;
//! each message claimed in the store before it is sent (a fleet sends it once), released
//! when sending fails (tried again later, with a backoff), never sent for news older than
//! the subscriber's confirmation or than a day.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use serde_json::json;
use status_history::{Subscriber, SubscriberKind};

use super::send::{mail_message, page_url, transport, unsubscribe_link, words, Resolver};
use super::Door;
use crate::i18n;
use crate::{Maintenance, PublicIncident, Snapshot, StatusPageState};

/// News older than this is not told: a subscriber is told what happens, not history.
const FRESH: chrono::Duration = chrono::Duration::days(1);
/// The longest a failing subscriber waits before its next try.
const MAX_BACKOFF: Duration = Duration::from_secs(3600);

/// One thing to tell.
#[derive(Debug, Clone)]
pub(super) struct Event {
    /// Stable across instances and restarts: what a delivery is claimed by.
    pub(super) key: String,
    pub(super) at: DateTime<Utc>,
    /// The component ids it touches (empty: all).
    pub(super) components: Vec<String>,
    pub(super) what: What,
}

#[derive(Debug, Clone)]
pub(super) enum What {
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
                let (indicator, description) = crate::indicator(snapshot.condition);
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
