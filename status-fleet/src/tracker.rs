//! The fleet's rules as one instance follows them, pure: told the time, what this instance is
//! and what the store answered; no clock, no I/O, no task. [`Fleet`](crate::Fleet) drives it
//! on Tokio; status-sim drives a thousand of them in virtual time.

use crate::Rejection;
use std::sync::Arc;
use std::time::{Duration, Instant};

use status_core::check::CheckOutcome;
use status_core::CheckStatus;

use crate::{
    Beat, BeatError, DatacenterCounts, FleetView, HealthRule, InstanceSummary, Member, Own,
    OwnFailure, MAX_FAILING,
};

/// What an instance tells the store of itself: its condition, the sources of its rotation
/// holds (`operator`, `shutdown`, `cull`), and its failing dependencies (the worst first; the
/// first [`MAX_FAILING`] are published).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// Its system condition.
    pub condition: CheckStatus,
    /// The sources of the holds in force.
    pub holds: Vec<String>,
    /// Its failing dependencies that weigh on its condition, the worst first.
    pub failing: Vec<OwnFailure>,
}

impl Published {
    /// A state with no failing dependency.
    #[must_use]
    pub fn new(condition: CheckStatus, holds: Vec<String>) -> Self {
        Self {
            condition,
            holds,
            failing: Vec::new(),
        }
    }

    /// What the store is told of the failing dependencies: the first [`MAX_FAILING`].
    fn published_failing(&self) -> Vec<crate::FailingDependency> {
        self.failing
            .iter()
            .take(MAX_FAILING)
            .map(|f| f.dependency.clone())
            .collect()
    }

    /// This instance as the store will count it.
    fn own(&self, datacenter: &str) -> Own {
        Own {
            datacenter: datacenter.to_owned(),
            condition: self.condition,
            // What the store does not hold is never counted, here either: past the cap, a
            // failure is this instance's own.
            failing: self
                .failing
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let mut f = f.clone();
                    if i >= MAX_FAILING {
                        f.dependency.level = CheckStatus::Ok;
                    }
                    f
                })
                .collect(),
        }
    }
}

/// What the store made of a beat, as the driver saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The store answered.
    Answered(Result<Beat, BeatError>),
    /// The store did not answer within a third of the TTL (its connection is to be dropped).
    Late,
}

/// Something worth a log line or a count, from one answer. `first` is true when it starts a
/// run of the same trouble: say it then, count it always.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// The store held entries no instance could have written, skipped (`reason` as in
    /// [`REJECTIONS`](crate::REJECTIONS)).
    Skipped {
        /// Why they were skipped.
        reason: Rejection,
        /// How many.
        entries: u64,
    },
    /// Keys of the wrong type, deleted.
    Healed(u64),
    /// The store lost its keys lately: its counts are not the fleet's, the last view ages.
    Settling,
    /// The store answered after failing.
    StoreBack,
    /// This instance holds its id again.
    IdBack,
    /// Another process beats under this instance's id.
    IdTaken {
        /// What to say.
        error: String,
        /// Whether this starts the run.
        first: bool,
    },
    /// The store refused this instance's beat.
    Rejected(Rejection),
    /// The store failed, or did not answer in time.
    StoreFailed {
        /// Why it failed; `None` when it was late (its connection is to be dropped).
        cause: Option<String>,
        /// Whether this starts the run.
        first: bool,
    },
}

/// What one answer amounts to: the `fleet` dependency's outcome, and what to say.
#[derive(Debug, Clone, PartialEq)]
pub struct Told {
    /// The outcome of the passive dependency `fleet`.
    pub outcome: CheckOutcome,
    /// What to log and count, in order.
    pub notes: Vec<Note>,
}

/// The fleet as one instance follows it, pure. The rules, once each:
/// - **publish**: a change of condition or holds is published at once, but not within a
///   thirtieth of the TTL of the last beat ([`publish_at`](Self::publish_at)); the driver
///   beats every third of the TTL besides.
/// - **read**: each answer's counts become the view, unless the store is **settling** (it
///   lost its keys: its counts hold only the instances that beat since); then the last view
///   ages.
/// - **until the first read**: this instance's own data center, judged on its own summary,
///   marked stale.
/// - **stale** once the store has not been read for a TTL, and **failing open** (every data
///   center healthy, `failOpen`) once not for three TTLs ([`view`](Self::view)).
#[derive(Debug, Clone)]
pub struct FleetTracker {
    member: Member,
    rule: HealthRule,
    ttl: Duration,
    started: Instant,
    view: Arc<FleetView>,
    read_at: Option<Instant>,
    last: Option<(Instant, Published)>,
    failing: bool,
    id_taken: bool,
    /// When each failing (data center, dependency, level) was first read, while it lasts.
    since: std::collections::HashMap<(String, String, CheckStatus), Instant>,
}

impl FleetTracker {
    /// `member`, starting at `now` in condition `condition`, in a store whose records live
    /// `ttl`, judging data centers by `rule`.
    #[must_use]
    pub fn new(
        member: Member,
        rule: HealthRule,
        ttl: Duration,
        now: Instant,
        condition: CheckStatus,
    ) -> Self {
        let own = Published::new(condition, Vec::new());
        let view = Arc::new(own_view(&member, &own, rule));
        Self {
            member,
            rule,
            ttl,
            started: now,
            view,
            read_at: None,
            last: None,
            failing: false,
            id_taken: false,
            since: std::collections::HashMap::new(),
        }
    }

    /// When `now_state` should be published: `None` when it is what was published last;
    /// `now` when nothing was published yet or the last beat is a thirtieth of the TTL old;
    /// else when it will be (a flapping dependency cannot flood the store).
    #[must_use]
    pub fn publish_at(&self, now: Instant, state: &Published) -> Option<Instant> {
        match &self.last {
            Some((_, last)) if last == state => None,
            Some((at, _)) => Some((*at + self.ttl / 30).max(now)),
            None => Some(now),
        }
    }

    /// A beat of `state` starts at `now`: the summary to send.
    pub fn beating(&mut self, now: Instant, state: Published) -> InstanceSummary {
        let mut me = InstanceSummary::new(
            &self.member.instance_id,
            &self.member.datacenter,
            state.condition,
            state.holds.clone(),
            &self.member.version,
        );
        me.url.clone_from(&self.member.url);
        me.failing = state.published_failing();
        self.last = Some((now, state));
        me
    }

    /// The store's answer to the last beat, at `now`.
    pub fn answered(&mut self, now: Instant, answer: Answer) -> Told {
        let mut notes = Vec::new();
        let outcome = match answer {
            Answer::Answered(Ok(beat)) => self.read(now, beat, &mut notes),
            Answer::Answered(Err(e @ BeatError::IdTaken { .. })) => {
                notes.push(Note::IdTaken {
                    error: e.to_string(),
                    first: !self.id_taken,
                });
                self.id_taken = true;
                CheckOutcome::new(CheckStatus::Major, e.to_string())
            }
            Answer::Answered(Err(BeatError::Rejected(reason))) => {
                notes.push(Note::Rejected(reason));
                CheckOutcome::new(
                    CheckStatus::Major,
                    format!("the store refused this instance's beat: {reason}"),
                )
            }
            Answer::Answered(Err(BeatError::Store(e))) => {
                let message = format!("the store failed: {e}");
                self.failed(message, Some(e), &mut notes)
            }
            Answer::Late => {
                let within = (self.ttl / 3).as_millis();
                let message = format!("the store did not answer within {within} ms");
                self.failed(message, None, &mut notes)
            }
        };
        if self.read_at.is_none() {
            // Nothing from the store yet: this data center as this instance sees itself.
            if let Some((_, published)) = &self.last {
                self.view = Arc::new(own_view(&self.member, published, self.rule));
            }
        }
        Told { outcome, notes }
    }

    /// The store says its counts moved, at `now`: they are the view, no beat needed.
    pub fn counts_moved(&mut self, now: Instant, counts: Vec<DatacenterCounts>) {
        // A store that keeps its counts as they change counts each summary's failing
        // dependencies through `counted_failing`: nothing here to forge.
        let _ = self.set(now, counts, false);
    }

    /// The fleet at `now`: the last view read while younger than the TTL (the same `Arc`,
    /// so that renderings can be cached by it); older, the same marked stale; not read for
    /// three TTLs (or never, three TTLs after the start), every data center failing open.
    #[must_use]
    pub fn view(&self, now: Instant) -> Arc<FleetView> {
        let age = now.saturating_duration_since(self.read_at.unwrap_or(self.started));
        if self.read_at.is_some() && age <= self.ttl {
            return Arc::clone(&self.view);
        }
        let stale = FleetView::clone(&self.view).into_stale();
        if age > 3 * self.ttl {
            return Arc::new(stale.into_failed_open());
        }
        Arc::new(stale)
    }

    /// This instance in the fleet.
    #[must_use]
    pub fn member(&self) -> &Member {
        &self.member
    }

    /// When the store was last read.
    #[must_use]
    pub fn read_at(&self) -> Option<Instant> {
        self.read_at
    }

    fn read(&mut self, now: Instant, beat: Beat, notes: &mut Vec<Note>) -> CheckOutcome {
        for (reason, entries) in Rejection::ALL.into_iter().zip(beat.skipped) {
            if entries > 0 {
                notes.push(Note::Skipped { reason, entries });
            }
        }
        if beat.healed > 0 {
            notes.push(Note::Healed(beat.healed));
        }
        let datacenters = beat.datacenters.len();
        if beat.settling {
            notes.push(Note::Settling);
        } else {
            let forged = self.set(now, beat.datacenters, beat.failing_partial);
            if forged > 0 {
                notes.push(Note::Skipped {
                    reason: Rejection::ForgedCount,
                    entries: forged,
                });
            }
        }
        if std::mem::take(&mut self.failing) {
            notes.push(Note::StoreBack);
        }
        if std::mem::take(&mut self.id_taken) {
            notes.push(Note::IdBack);
        }
        let took = self
            .last
            .as_ref()
            .map_or(Duration::ZERO, |(at, _)| now.saturating_duration_since(*at));
        CheckOutcome::new(
            CheckStatus::Ok,
            format!(
                "{datacenters} data centers; beat in {:.1} ms",
                took.as_secs_f64() * 1e3
            ),
        )
        .with_value(took.as_secs_f64())
    }

    fn failed(
        &mut self,
        message: String,
        cause: Option<String>,
        notes: &mut Vec<Note>,
    ) -> CheckOutcome {
        notes.push(Note::StoreFailed {
            cause,
            first: !self.failing,
        });
        self.failing = true;
        CheckOutcome::new(CheckStatus::Outage, message)
    }

    /// The counts become the view, less what no store could have counted; answers how many
    /// rows went. `partial`: what fails holds this instance's own rows only.
    fn set(&mut self, now: Instant, mut counts: Vec<DatacenterCounts>, partial: bool) -> u64 {
        let forged = counts.iter_mut().map(DatacenterCounts::sanitize).sum();
        let own = self.last.as_ref().map_or_else(
            || Published::new(CheckStatus::Ok, Vec::new()),
            |(_, p)| p.clone(),
        );
        let mut view = FleetView::from_counts(counts, self.rule);
        view.own = Some(own.own(&self.member.datacenter));
        view.failing_partial = partial;
        // Each failing row's first sight, kept while the row lasts.
        let mut since = std::collections::HashMap::new();
        for dc in &mut view.datacenters {
            for row in &mut dc.failing {
                let key = (row.datacenter.clone(), row.dependency.clone(), row.level);
                let first = self.since.get(&key).copied().unwrap_or(now);
                row.since = Some(first);
                since.insert(key, first);
            }
        }
        self.since = since;
        self.view = Arc::new(view);
        self.read_at = Some(now);
        forged
    }
}

/// A view of this instance's own data center alone, judged on its own summary, stale: what
/// an instance knows before the store first answers.
fn own_view(member: &Member, own: &Published, rule: HealthRule) -> FleetView {
    let me = InstanceSummary::new(
        &member.instance_id,
        &member.datacenter,
        own.condition,
        own.holds.clone(),
        &member.version,
    );
    let mut conditions = crate::Conditions::default();
    conditions.add(own.condition);
    let mut view = FleetView::from_counts(
        vec![DatacenterCounts::new(
            member.datacenter.clone(),
            conditions,
            usize::from(me.serving()),
        )],
        rule,
    );
    view.own = Some(own.own(&member.datacenter));
    view.into_stale()
}
