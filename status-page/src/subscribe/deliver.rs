//! What subscribers are told, as a pure machine: the news (each public incident update,
//! postmortem, and each announced maintenance's announcement, start and end) computed from
//! what the page shows, and the [`Ledger`], told the time, the subscribers and what became of
//! each sending, that answers the deliveries due. Never news older than the subscriber's
//! confirmation or than a day, and of an incident only its newest update (its state now);
//! a subscriber whose sending failed waits out a backoff.
//! [`teller`](super::teller) drives it.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, Utc};
use status_history::Subscriber;
use tokio::time::Instant;

use crate::{Maintenance, PublicIncident};

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
    /// A maintenance announced, started, ended or called off.
    Maintenance { id: String, phase: &'static str },
}

/// What the page shows, as things to tell, at `now`; and of each maintenance `called_off`,
/// that it was (not whether it started or ended after).
pub(super) fn events(
    incidents: &[PublicIncident],
    maintenances: &[Maintenance],
    called_off: &[Maintenance],
    now: DateTime<Utc>,
) -> Vec<Event> {
    let ms = |t: i64| DateTime::from_timestamp_millis(t).unwrap_or_default();
    let mut out = Vec::new();
    for i in incidents {
        let components: Vec<String> = i.components.iter().map(|(id, _)| id.clone()).collect();
        // Only its newest update is told: an older one not yet told (a retry, a message
        // claimed by another instance of a fleet, two updates within a round) is superseded,
        // so that the last message a subscriber gets of an incident is its state now, never
        // a "resolved" after its reopening.
        if let Some(u) = i.updates.iter().max_by_key(|u| (u.at, u.id)) {
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
    for m in maintenances.iter().chain(called_off) {
        let components: Vec<String> = m.components.iter().map(|(id, _)| id.clone()).collect();
        // What happened before it was called off is told as it happened; nothing after.
        let before = |at: DateTime<Utc>| m.cancelled.is_none_or(|c| at <= c);
        for (phase, at) in [
            ("announced", Some(m.set_at)),
            ("started", (m.start <= now).then_some(m.start.max(m.set_at))),
            ("ended", (m.until <= now).then_some(m.until)),
            ("cancelled", m.cancelled),
        ] {
            let at = at.filter(|at| phase == "cancelled" || before(*at));
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

/// The teller's memory between rounds: the deliveries known done (sent here, or claimed by
/// another instance), and the subscribers failing, with their tries and when they may be
/// tried again.
#[derive(Debug, Default)]
pub(super) struct Ledger {
    /// By event key, the subscribers known told.
    told: HashMap<String, HashSet<i64>>,
    failing: HashMap<i64, (u32, Instant)>,
}

impl Ledger {
    /// Forgets the deliveries of news no longer told (older than a day, or gone).
    pub(super) fn keep(&mut self, events: &[Event]) {
        let live: HashSet<&str> = events.iter().map(|e| e.key.as_str()).collect();
        self.told.retain(|key, _| live.contains(key.as_str()));
    }

    /// The ids of the `subscribers` `event` is due to at `clock`: those who want it, not
    /// known told, and not waiting out a failure.
    pub(super) fn due(
        &self,
        event: &Event,
        subscribers: &[Subscriber],
        clock: Instant,
    ) -> Vec<i64> {
        let told = self.told.get(&event.key);
        subscribers
            .iter()
            .filter(|s| wants(s, event))
            .filter(|s| told.is_none_or(|told| !told.contains(&s.id)))
            .filter(|s| {
                self.failing
                    .get(&s.id)
                    .is_none_or(|(_, next)| *next <= clock)
            })
            .map(|s| s.id)
            .collect()
    }

    /// The deliveries of `event` to `asked` were claimed, those to `claimed` here: the
    /// others are another instance's to send.
    pub(super) fn claimed(&mut self, event: &Event, asked: &[i64], claimed: &[i64]) {
        let here: HashSet<i64> = claimed.iter().copied().collect();
        self.told_of(event)
            .extend(asked.iter().filter(|id| !here.contains(id)));
    }

    /// `event` reached `subscriber`.
    pub(super) fn sent(&mut self, event: &Event, subscriber: i64) {
        self.failing.remove(&subscriber);
        self.told_of(event).insert(subscriber);
    }

    /// A sending to `subscriber` failed at `clock`: how long it waits before its next try
    /// (2 s, doubling, at most an hour).
    pub(super) fn failed(&mut self, subscriber: i64, clock: Instant) -> Duration {
        let (n, _) = self.failing.get(&subscriber).copied().unwrap_or((0, clock));
        let wait = Duration::from_secs(2u64.saturating_pow(n + 1)).min(MAX_BACKOFF);
        self.failing.insert(subscriber, (n + 1, clock + wait));
        wait
    }

    /// The subscribers known told `event`; its key copied only the first time.
    fn told_of(&mut self, event: &Event) -> &mut HashSet<i64> {
        if !self.told.contains_key(&event.key) {
            self.told.insert(event.key.clone(), HashSet::new());
        }
        self.told
            .get_mut(&event.key)
            .unwrap_or_else(|| unreachable!("inserted above"))
    }

    /// How many sendings to `subscriber` failed in a row.
    pub(super) fn failures(&self, subscriber: i64) -> u32 {
        self.failing.get(&subscriber).map_or(0, |(n, _)| *n)
    }

    /// Forgets `subscriber` (removed).
    pub(super) fn forget(&mut self, subscriber: i64) {
        self.failing.remove(&subscriber);
        for told in self.told.values_mut() {
            told.remove(&subscriber);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use status_history::SubscriberKind;

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

    #[test]
    fn of_an_incident_only_its_newest_update_is_told() {
        use crate::model::PublicUpdate;
        use status_history::incident::{UpdateKind, UpdateStatus};
        let update = |id: i64, at: i64, status: UpdateStatus, kind: UpdateKind| PublicUpdate {
            id,
            at,
            status,
            body: String::new(),
            kind,
        };
        let incident = PublicIncident {
            id: 7,
            name: "Outage of Checkout".into(),
            status: UpdateStatus::Investigating,
            impact: "critical",
            started: 1_000,
            updated: 3_000,
            resolved: None,
            monitoring: None,
            components: vec![("group-core".into(), "major_outage".into())],
            what: vec!["Checkout".into()],
            updates: vec![
                update(1, 1_000, UpdateStatus::Investigating, UpdateKind::Opened),
                update(2, 2_000, UpdateStatus::Resolved, UpdateKind::Resolved),
                update(3, 3_000, UpdateStatus::Investigating, UpdateKind::Reopened),
            ],
            postmortem: None,
        };
        let now = DateTime::from_timestamp_millis(4_000).unwrap();
        let keys: Vec<String> = events(&[incident], &[], &[], now)
            .into_iter()
            .map(|e| e.key)
            .collect();
        assert_eq!(
            keys,
            ["incident-7-update-3"],
            "the resolved one is superseded"
        );
    }

    #[test]
    fn a_maintenance_called_off_is_told_so_and_nothing_after() {
        let at = |min: i64| DateTime::from_timestamp(1_800_000_000 + min * 60, 0).unwrap();
        let maintenance = |cancelled: Option<DateTime<Utc>>| Maintenance {
            id: "maintenance-7".into(),
            name: "Database upgrade".into(),
            body: String::new(),
            start: at(10),
            until: at(40),
            set_at: at(0),
            active: false,
            completed: false,
            components: Vec::new(),
            cancelled,
        };
        let phases = |shown: &[Maintenance], off: &[Maintenance], now: i64| -> Vec<String> {
            events(&[], shown, off, at(now))
                .into_iter()
                .map(|e| e.key)
                .collect()
        };
        // Shown: announced, started, ended as they come.
        assert_eq!(
            phases(&[maintenance(None)], &[], 50),
            [
                "maintenance-7-announced",
                "maintenance-7-started",
                "maintenance-7-ended"
            ]
        );
        // Called off before it started: announced, then called off, never started or ended.
        assert_eq!(
            phases(&[], &[maintenance(Some(at(5)))], 50),
            ["maintenance-7-announced", "maintenance-7-cancelled"]
        );
        // Called off while in force: started, then called off; no end after it.
        assert_eq!(
            phases(&[], &[maintenance(Some(at(20)))], 50),
            [
                "maintenance-7-announced",
                "maintenance-7-started",
                "maintenance-7-cancelled"
            ]
        );
    }

    fn update() -> Event {
        Event {
            key: "incident-1-update-1".into(),
            at: DateTime::from_timestamp_millis(1_000).unwrap(),
            components: Vec::new(),
            what: What::Update {
                incident: 1,
                update: 1,
            },
        }
    }

    fn many(n: i64) -> Vec<Subscriber> {
        (1..=n)
            .map(|id| Subscriber {
                id,
                ..subscriber(Some(500), &[])
            })
            .collect()
    }

    #[test]
    fn every_subscriber_is_due_once_and_those_claimed_elsewhere_are_not_asked_again() {
        let (event, subscribers) = (update(), many(1_000));
        let clock = Instant::now();
        let mut ledger = Ledger::default();
        let due = ledger.due(&event, &subscribers, clock);
        assert_eq!(due.len(), 1_000, "one claim asks for all of them");
        // This instance won half; the others went to another instance.
        let here: Vec<i64> = due.iter().copied().filter(|id| id % 2 == 0).collect();
        ledger.claimed(&event, &due, &here);
        assert_eq!(ledger.due(&event, &subscribers, clock), here);
        for id in &here {
            ledger.sent(&event, *id);
        }
        assert!(ledger.due(&event, &subscribers, clock).is_empty());
        // News no longer shown is forgotten.
        ledger.keep(&[]);
        assert_eq!(ledger.due(&event, &subscribers, clock).len(), 1_000);
    }

    #[test]
    fn a_failing_subscriber_waits_out_a_doubling_backoff() {
        let (event, subscribers) = (update(), many(2));
        let clock = Instant::now();
        let mut ledger = Ledger::default();
        assert_eq!(ledger.failed(1, clock), Duration::from_secs(2));
        assert_eq!(ledger.due(&event, &subscribers, clock), vec![2]);
        let later = clock + Duration::from_secs(2);
        assert_eq!(ledger.due(&event, &subscribers, later), vec![1, 2]);
        assert_eq!(ledger.failed(1, later), Duration::from_secs(4));
        for _ in 0..20 {
            ledger.failed(1, later);
        }
        assert_eq!(ledger.failed(1, later), MAX_BACKOFF, "at most an hour");
        ledger.sent(&event, 1);
        assert_eq!(
            ledger.failed(1, later),
            Duration::from_secs(2),
            "a success starts over"
        );
    }
}
