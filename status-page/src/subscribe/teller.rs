//! The teller's driver: each round reads what the page shows and the subscribers, asks the
//! [`Ledger`] what is due, claims each event's deliveries at once in the store (a fleet sends
//! each message once) and sends them concurrently, at most [`Subscriptions::concurrency`]
//! at a time; a sending that fails is released (tried again after its backoff).
//!
//! [`Subscriptions::concurrency`]: super::Subscriptions::concurrency

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use futures::StreamExt as _;
use serde_json::json;
use status_history::{History, Subscriber, SubscriberKind};

use super::deliver::{events, Event, Ledger};
use super::send::{literal_reachable, mail_message, page_url, unsubscribe_link, web_client, words};
use super::{Door, SEND_DEADLINE};
use crate::i18n;
use crate::{PublicIncident, Snapshot, StatusPageState};

/// The teller of `state`'s page, for the application to spawn: `None` when the page takes
/// no subscribers or keeps no history. It looks for news every
/// [`Subscriptions::every`](super::Subscriptions::every), and ends when the page is dropped.
pub(crate) fn teller(
    state: &Arc<StatusPageState>,
) -> Option<impl Future<Output = ()> + Send + 'static> {
    let (Some(door), Some(_)) = (state.door.clone(), state.history.as_ref()) else {
        return None;
    };
    let state = Arc::downgrade(state);
    Some(async move {
        let transports = Transports::new(&door);
        let mut ledger = Ledger::default();
        let mut every = tokio::time::interval(door.config.every);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            // The page gone, the teller goes.
            let Some(state) = state.upgrade() else { return };
            round(&mut ledger, &transports, &state, &door).await;
        }
    })
}

/// Starts the teller in a task on the current runtime (none: a warning, and no one is told).
pub(crate) fn start(state: &Arc<StatusPageState>) {
    let Some(teller) = teller(state) else { return };
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => drop(runtime.spawn(teller)),
        Err(_) => {
            tracing::warn!("the status page's subscribers are not told: no Tokio runtime at build");
        }
    }
}

/// How messages leave: mail over SMTP, webhooks over HTTP; either may be missing (and says
/// why once).
struct Transports {
    mail: Option<super::mailer::Mailer>,
    web: Option<reqwest::Client>,
}

impl Transports {
    fn new(door: &Door) -> Self {
        let mail =
            door.config
                .smtp
                .as_deref()
                .and_then(|url| match super::mailer::Mailer::new(url) {
                    Ok(t) => Some(t),
                    Err(e) => {
                        tracing::warn!("the status page sends no mail: {e}");
                        None
                    }
                });
        let web = web_client(door.config.allow_private_webhooks)
            .map_err(|e| tracing::warn!("the status page posts no webhooks: {e}"))
            .ok();
        Self { mail, web }
    }
}

/// One round: what the page shows now, as news, told to whom it is due.
async fn round(ledger: &mut Ledger, transports: &Transports, state: &StatusPageState, door: &Door) {
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
    let events = events(
        &incidents,
        &snapshot.maintenances,
        &snapshot.called_off,
        now,
    );
    ledger.keep(&events);
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
    let messenger = Messenger {
        transports,
        state,
        door,
        snapshot: &snapshot,
        incidents: &incidents,
    };
    let bound = door.config.concurrency;
    tell(
        ledger,
        history,
        &events,
        &subscribers,
        &messenger,
        bound,
        (now, tokio::time::Instant::now()),
    )
    .await;
}

/// How one message reaches one subscriber.
pub(super) trait Deliver: Sync {
    /// Sends `event` to `subscriber`: `Err` says why it did not arrive.
    fn deliver<'a>(
        &'a self,
        subscriber: &'a Subscriber,
        event: &'a Event,
    ) -> BoxFuture<'a, Result<(), String>>;
}

/// Tells `events` to the `subscribers` they are due to, at `now` (the store's time) and
/// `clock` (the backoffs'): each event's deliveries claimed at once, then sent at most `bound`
/// mails and `bound` webhooks at a time, each under [`SEND_DEADLINE`]; those that fail are
/// released and wait out their backoff. A store that fails ends the round (better late, from
/// the next, than twice).
pub(super) async fn tell(
    ledger: &mut Ledger,
    history: &History,
    events: &[Event],
    subscribers: &[Subscriber],
    deliver: &impl Deliver,
    bound: usize,
    (now, clock): (DateTime<Utc>, tokio::time::Instant),
) {
    let by_id: HashMap<i64, &Subscriber> = subscribers.iter().map(|s| (s.id, s)).collect();
    for e in events {
        let due = ledger.due(e, subscribers, clock);
        if due.is_empty() {
            continue;
        }
        let claimed = match history.claim_deliveries(&e.key, &due, now).await {
            Ok(claimed) => claimed,
            Err(err) => {
                tracing::warn!("deliveries to subscribers cannot be claimed: {err}");
                return;
            }
        };
        ledger.claimed(e, &due, &claimed);
        // Mail and webhooks each in a pool of their own: a mail server that stops answering
        // holds no webhook back. Each sending under a deadline. Made before the first await:
        // a stream holding the closures that make them would not be `Send` (their lifetimes
        // are not general enough for the compiler).
        let (mut mail, mut web): (Vec<Sending<'_>>, Vec<Sending<'_>>) = (Vec::new(), Vec::new());
        for s in claimed.iter().filter_map(|id| by_id.get(id).copied()) {
            let send: Sending<'_> = Box::pin(async move {
                let sent = tokio::time::timeout(SEND_DEADLINE, deliver.deliver(s, e))
                    .await
                    .unwrap_or_else(|_| {
                        Err(format!("no answer within {}s", SEND_DEADLINE.as_secs()))
                    });
                (s, sent)
            });
            match s.kind {
                SubscriberKind::Email => mail.push(send),
                SubscriberKind::Webhook => web.push(send),
            }
        }
        let (mail, web) = futures::join!(pool(mail, bound), pool(web, bound));
        for (s, result) in mail.into_iter().chain(web) {
            match result {
                Ok(()) => ledger.sent(e, s.id),
                Err(why) => {
                    let wait = ledger.failed(s.id, clock);
                    if let Err(err) = history.release_delivery(&e.key, s.id).await {
                        tracing::warn!("a failed delivery cannot be released: {err}");
                    }
                    let failures = ledger.failures(s.id);
                    // A webhook that has failed for about half a day wants nothing more
                    // (mail failing is the mail server's doing, not the subscriber's).
                    if s.kind == SubscriberKind::Webhook && failures >= WEBHOOK_GIVE_UP {
                        tracing::warn!(
                            subscriber = s.id,
                            "a webhook failed {failures} times in a row, the last: {why}; removed"
                        );
                        match history.remove_subscriber(s.id).await {
                            Ok(_) => ledger.forget(s.id),
                            Err(err) => tracing::warn!("a webhook cannot be removed: {err}"),
                        }
                        continue;
                    }
                    tracing::warn!(
                        subscriber = s.id,
                        kind = s.kind.as_str(),
                        "a message to a subscriber failed, tried again in {wait:?}: {why}"
                    );
                }
            }
        }
    }
}

/// Failures in a row after which a webhook is removed: with the backoff (2 s doubling, at
/// most an hour), about thirteen hours of failing.
const WEBHOOK_GIVE_UP: u32 = 24;

/// One sending under way, and the subscriber it is to.
type Sending<'a> = BoxFuture<'a, (&'a Subscriber, Result<(), String>)>;

/// `sends`, at most `bound` at a time; what became of each.
async fn pool(sends: Vec<Sending<'_>>, bound: usize) -> Vec<(&Subscriber, Result<(), String>)> {
    futures::stream::iter(sends)
        .buffer_unordered(bound.max(1))
        .collect()
        .await
}

/// What a round's messages are made of: the page as it is, and the transports.
struct Messenger<'r> {
    transports: &'r Transports,
    state: &'r StatusPageState,
    door: &'r Door,
    snapshot: &'r Snapshot,
    incidents: &'r [PublicIncident],
}

impl Deliver for Messenger<'_> {
    fn deliver<'a>(&'a self, s: &'a Subscriber, e: &'a Event) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let l = i18n::negotiate(Some(&s.lang), None);
            let (subject, text, incident) = words(self.state, self.snapshot, self.incidents, e, l);
            match s.kind {
                SubscriberKind::Email => {
                    let mail = self
                        .transports
                        .mail
                        .as_ref()
                        .ok_or("no SMTP server is set")?;
                    let link = unsubscribe_link(self.state, self.door, s);
                    let body = format!(
                        "{text}\n\n{}\n{}\n",
                        l.text("mail-see-page", &[("url", page_url(self.state).into())]),
                        l.text("mail-unsubscribe", &[("url", link.clone().into())]),
                    );
                    let message = mail_message(self.door, &s.address, &subject, body, Some(&link))?;
                    mail.send(message).await
                }
                SubscriberKind::Webhook => {
                    let web = self.transports.web.as_ref().ok_or("no HTTP client")?;
                    // A name is checked by the resolver at each sending; an address written
                    // in the URL is never resolved, so it is checked here, again.
                    if !self.door.config.allow_private_webhooks {
                        literal_reachable(&s.address)?;
                    }
                    let link = unsubscribe_link(self.state, self.door, s);
                    let (indicator, description) = crate::indicator(self.snapshot.condition);
                    let mut payload = json!({
                        "meta": {
                            "unsubscribe": link,
                            "documentation": "https://support.atlassian.com/statuspage/docs/enable-webhook-notifications/",
                        },
                        "page": {
                            "id": self.state.name,
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
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    use super::super::deliver::What;
    use super::*;
    use std::time::Duration;

    /// Each message waits once before it arrives (its answer not in yet); counts how many
    /// are in flight at once.
    #[derive(Default)]
    struct Slow {
        flying: AtomicUsize,
        most: AtomicUsize,
        sent: AtomicUsize,
    }

    impl Deliver for Slow {
        fn deliver<'a>(
            &'a self,
            _: &'a Subscriber,
            _: &'a Event,
        ) -> BoxFuture<'a, Result<(), String>> {
            Box::pin(async move {
                let flying = self.flying.fetch_add(1, SeqCst) + 1;
                self.most.fetch_max(flying, SeqCst);
                tokio::task::yield_now().await;
                self.flying.fetch_sub(1, SeqCst);
                self.sent.fetch_add(1, SeqCst);
                Ok(())
            })
        }
    }

    fn subscribers(n: i64) -> Vec<Subscriber> {
        (1..=n)
            .map(|id| Subscriber {
                id,
                kind: SubscriberKind::Webhook,
                address: format!("https://hooks.example/{id}"),
                components: Vec::new(),
                lang: "en".into(),
                token: String::new(),
                created: DateTime::default(),
                confirmed: DateTime::from_timestamp_millis(1),
                confirm_sent: None,
            })
            .collect()
    }

    /// Update `update` of incident `incident`, a second after the epoch.
    fn update(incident: i64, update: i64) -> Event {
        Event {
            key: format!("incident-{incident}-update-{update}"),
            at: DateTime::from_timestamp_millis(1_000).unwrap(),
            components: Vec::new(),
            what: What::Update { incident, update },
        }
    }

    /// A history in memory, open while the registry it is attached to lives.
    async fn opened() -> (status_core::Registry, History) {
        let registry = status_core::Registry::builder().appname("shop").build();
        let history = History::in_memory().open();
        history.attach(&registry);
        history.restored().await;
        (registry, history)
    }

    #[tokio::test]
    async fn a_thousand_subscribers_of_one_event_are_sent_to_concurrently_up_to_the_bound() {
        let (_registry, history) = opened().await;
        let subscribers = subscribers(1_000);
        let event = update(1, 1);
        let events = std::slice::from_ref(&event);
        let clock = tokio::time::Instant::now();
        let slow = Slow::default();
        let mut ledger = Ledger::default();
        tell(
            &mut ledger,
            &history,
            events,
            &subscribers,
            &slow,
            16,
            (history.now(), clock),
        )
        .await;
        assert_eq!(slow.sent.load(SeqCst), 1_000, "every subscriber told");
        assert_eq!(
            slow.most.load(SeqCst),
            16,
            "never more than the bound, and up to it"
        );
        // Told once: not again by this instance, nor by another reading the same store.
        tell(
            &mut ledger,
            &history,
            events,
            &subscribers,
            &slow,
            16,
            (history.now(), clock),
        )
        .await;
        let mut other = Ledger::default();
        tell(
            &mut other,
            &history,
            events,
            &subscribers,
            &slow,
            16,
            (history.now(), clock),
        )
        .await;
        assert_eq!(slow.sent.load(SeqCst), 1_000);
        history.close().await;
    }

    #[tokio::test]
    async fn a_failed_send_is_released_and_tried_again_after_its_backoff() {
        struct Down(AtomicUsize);
        impl Deliver for Down {
            fn deliver<'a>(
                &'a self,
                _: &'a Subscriber,
                _: &'a Event,
            ) -> BoxFuture<'a, Result<(), String>> {
                Box::pin(async move {
                    self.0.fetch_add(1, SeqCst);
                    Err("connection refused".to_owned())
                })
            }
        }
        let (_registry, history) = opened().await;
        let subscribers = subscribers(3);
        let event = update(2, 1);
        let events = std::slice::from_ref(&event);
        let mut clock = tokio::time::Instant::now();
        let down = Down(AtomicUsize::new(0));
        let mut ledger = Ledger::default();
        tell(
            &mut ledger,
            &history,
            events,
            &subscribers,
            &down,
            8,
            (history.now(), clock),
        )
        .await;
        assert_eq!(down.0.load(SeqCst), 3);
        // Waiting out the backoff: not tried.
        tell(
            &mut ledger,
            &history,
            events,
            &subscribers,
            &down,
            8,
            (history.now(), clock),
        )
        .await;
        assert_eq!(down.0.load(SeqCst), 3);
        // After it, tried again: the claims were released.
        clock += Duration::from_secs(2);
        let slow = Slow::default();
        tell(
            &mut ledger,
            &history,
            events,
            &subscribers,
            &slow,
            8,
            (history.now(), clock),
        )
        .await;
        assert_eq!(slow.sent.load(SeqCst), 3);
        history.close().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_mail_server_holds_no_webhook_back_and_is_cut_at_the_deadline() {
        /// A mail server that never answers; webhooks that answer at once, when.
        #[derive(Default)]
        struct Silent(std::sync::Mutex<Vec<tokio::time::Instant>>);
        impl Deliver for Silent {
            fn deliver<'a>(
                &'a self,
                s: &'a Subscriber,
                _: &'a Event,
            ) -> BoxFuture<'a, Result<(), String>> {
                Box::pin(async move {
                    if s.kind == SubscriberKind::Email {
                        std::future::pending::<()>().await;
                    }
                    self.0.lock().unwrap().push(tokio::time::Instant::now());
                    Ok(())
                })
            }
        }
        let (_registry, history) = opened().await;
        let mut subscribers = subscribers(25);
        for s in &mut subscribers[..20] {
            s.kind = SubscriberKind::Email;
        }
        let event = update(3, 1);
        let silent = Silent::default();
        let mut ledger = Ledger::default();
        let clock = tokio::time::Instant::now();
        let round = tell(
            &mut ledger,
            &history,
            std::slice::from_ref(&event),
            &subscribers,
            &silent,
            8,
            (history.now(), clock),
        );
        tokio::time::timeout(Duration::from_secs(3_600), round)
            .await
            .expect("the round ends: every sending is under a deadline");
        let told = silent.0.lock().unwrap().clone();
        assert_eq!(told.len(), 5, "every webhook told");
        assert!(
            told.iter().all(|t| *t - clock < SEND_DEADLINE),
            "no webhook waited for the mail server"
        );
        assert!(
            clock.elapsed() >= 3 * SEND_DEADLINE,
            "20 silent mails, 8 at a time: three deadlines"
        );
        // The mails failed: released for a later try, after a backoff.
        let mails: Vec<i64> = (1..=20).collect();
        assert!(ledger.due(&event, &subscribers, clock).is_empty());
        assert_eq!(
            history
                .claim_deliveries(&event.key, &mails, history.now())
                .await
                .unwrap(),
            mails
        );
        history.close().await;
    }

    #[test]
    fn an_address_written_in_a_webhook_url_is_checked_at_sending() {
        assert!(literal_reachable("http://127.0.0.1:9/hook").is_err());
        assert!(literal_reachable("http://[::1]/hook").is_err());
        assert!(literal_reachable("https://[64:ff9b::a9fe:a9fe]/latest").is_err());
        assert!(literal_reachable("https://169.254.169.254/latest").is_err());
        assert!(literal_reachable("https://93.184.216.34/hook").is_ok());
        assert!(
            literal_reachable("https://hooks.example/hook").is_ok(),
            "names: resolver"
        );
    }

    #[tokio::test]
    async fn a_webhook_that_keeps_failing_is_removed_and_mail_is_not() {
        struct Down;
        impl Deliver for Down {
            fn deliver<'a>(
                &'a self,
                _: &'a Subscriber,
                _: &'a Event,
            ) -> BoxFuture<'a, Result<(), String>> {
                Box::pin(async { Err("connection refused".to_owned()) })
            }
        }
        let (_registry, history) = opened().await;
        let mut kept = Vec::new();
        for (i, kind) in [SubscriberKind::Webhook, SubscriberKind::Email]
            .into_iter()
            .enumerate()
        {
            let mut s = subscribers(1).remove(0);
            s.kind = kind;
            s.address = format!("https://hooks.example/{i}");
            s.token = format!("hash-{i}");
            kept.push(history.subscribe(&s).await.unwrap());
        }
        let mut clock = tokio::time::Instant::now();
        let mut ledger = Ledger::default();
        for n in 0..WEBHOOK_GIVE_UP {
            let event = update(4, i64::from(n));
            let subscribers = history.subscribers().await.unwrap();
            let events = std::slice::from_ref(&event);
            tell(
                &mut ledger,
                &history,
                events,
                &subscribers,
                &Down,
                8,
                (history.now(), clock),
            )
            .await;
            clock += MAX_BACKOFF_FOR_TESTS;
            let left = history.subscribers().await.unwrap();
            assert_eq!(
                left.len(),
                if n + 1 < WEBHOOK_GIVE_UP { 2 } else { 1 },
                "after {} failures",
                n + 1
            );
        }
        let left = history.subscribers().await.unwrap();
        assert_eq!(
            left[0].kind,
            SubscriberKind::Email,
            "mail failing is the server's doing"
        );
        history.close().await;
    }

    /// Past any backoff.
    const MAX_BACKOFF_FOR_TESTS: Duration = Duration::from_secs(3_601);
}
