//! The fleet's voice as one instance follows it, pure: told the time, the fleet's view and
//! what the store answered of its voice leases; it answers what to ask the store and who
//! tells each change. No clock, no I/O, no task: [`FleetChorus`](crate::FleetChorus) drives
//! it on Tokio, a test or a simulator drives many in virtual time.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use status_core::{CheckStatus, DependencyId, Error};
use status_notify::{FleetVoice, Recovered, Voice};

use crate::{FleetView, VoiceAsk, VoiceLease};

/// A change's question to the chorus ([`ChorusTracker::changed`]), answered by a
/// [`ChorusStep::Answer`] carrying the same ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChangeTicket(u64);

/// Why a lease call was made: handed back with its answer ([`ChorusTracker::answered`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseCall {
    datacenter: String,
    id: DependencyId,
    why: Why,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Why {
    /// A change shared by the fleet asks for the voice: its ticket, level and figures.
    Claim(ChangeTicket, CheckStatus, String),
    /// The speaker renews its lease.
    Renew,
    /// The speaker told the recovery.
    Resolve,
    /// A silent instance looks whether the speaker is still there.
    Peek,
    /// The speaker went: a silent instance takes over.
    TakeOver,
}

/// What the driver does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChorusStep {
    /// Ask `ask` of the voice lease of `call`'s dependency in its data center in the store,
    /// and hand the answer (or a timeout, as an error) to [`ChorusTracker::answered`] with
    /// `call`.
    Lease {
        /// What is asked of the lease.
        ask: VoiceAsk,
        /// Handed back with the answer.
        call: LeaseCall,
    },
    /// Who tells the change asked with `ticket`.
    Answer {
        /// The change's ticket.
        ticket: ChangeTicket,
        /// Who tells it.
        voice: Voice,
    },
    /// A recovery to tell for the fleet.
    Recovered(Recovered),
    /// The voice lease of a shared failure could not be taken (the store keeps none, or did
    /// not answer): this instance tells it itself. Worth a warning.
    LeaseRefused(DependencyId),
}

impl LeaseCall {
    /// The dependency whose lease is asked.
    #[must_use]
    pub fn dependency(&self) -> &DependencyId {
        &self.id
    }

    /// The data center whose lease is asked: the instance's own.
    #[must_use]
    pub fn datacenter(&self) -> &str {
        &self.datacenter
    }
}

/// A change waiting for the fleet to share it.
#[derive(Debug)]
struct Waiting {
    ticket: ChangeTicket,
    id: DependencyId,
    level: CheckStatus,
    until: Instant,
}

/// One instance's part in the fleet's voice (see [`FleetChorus`](crate::FleetChorus) for
/// the rules): each change is told by this instance, for its data center, or by another of
/// it; the speaker renews its lease each tick and tells the recovery in its data center once
/// the failure is no longer shared there and its own dependency is OK; a silent instance
/// takes over from a speaker whose lease lapsed. Each data center has its own lease, so its
/// failure and its recovery are told once, naming it. Fails toward telling: a change not
/// shared by its deadline, or a lease the store would not give, is this instance's own.
#[derive(Debug)]
pub struct ChorusTracker {
    me: String,
    datacenter: String,
    wait: Duration,
    next_ticket: u64,
    waiting: Vec<Waiting>,
    speaking: HashMap<DependencyId, CheckStatus>,
    silent: HashMap<DependencyId, CheckStatus>,
    /// Dependencies with a renew, resolve, peek or take-over in flight: one at a time each,
    /// so that a slow store is not asked again and again.
    busy: HashSet<DependencyId>,
    steps: Vec<ChorusStep>,
}

impl ChorusTracker {
    /// The part of instance `me` of `datacenter`, waiting up to `wait` for its data center
    /// to share a change (two beat periods: the others' failures reach the counts at one of
    /// the next beats).
    #[must_use]
    pub fn new(me: impl Into<String>, datacenter: impl Into<String>, wait: Duration) -> Self {
        Self {
            me: me.into(),
            datacenter: datacenter.into(),
            wait,
            next_ticket: 0,
            waiting: Vec::new(),
            speaking: HashMap::new(),
            silent: HashMap::new(),
            busy: HashSet::new(),
            steps: Vec::new(),
        }
    }

    /// Dependency `id` holds `level` (not OK) on this instance now: who tells it is
    /// answered by a [`ChorusStep::Answer`] with the ticket returned, at once when `view`
    /// already shares it (after its lease call), or when a later view does, or at the
    /// deadline.
    pub fn changed(
        &mut self,
        id: DependencyId,
        level: CheckStatus,
        now: Instant,
        view: &FleetView,
    ) -> ChangeTicket {
        let ticket = ChangeTicket(self.next_ticket);
        self.next_ticket += 1;
        self.waiting.push(Waiting {
            ticket,
            id,
            level,
            until: now + self.wait,
        });
        self.advance(now, view);
        ticket
    }

    /// The time or the view moved: each waiting change the view shares claims the voice;
    /// each past its deadline and still not shared is this instance's own.
    pub fn advance(&mut self, now: Instant, view: &FleetView) {
        let waiting = std::mem::take(&mut self.waiting);
        for w in waiting {
            if let Some(figures) = shared(view, &self.datacenter, &w.id, w.level) {
                self.forget(&w.id);
                self.lease(
                    &w.id,
                    VoiceAsk::Claim,
                    Why::Claim(w.ticket, w.level, figures),
                );
            } else if now >= w.until {
                self.forget(&w.id);
                self.steps.push(ChorusStep::Answer {
                    ticket: w.ticket,
                    voice: Voice::Mine,
                });
            } else {
                self.waiting.push(w);
            }
        }
    }

    /// The next deadline of a waiting change, for the driver's timer.
    #[must_use]
    pub fn deadline(&self) -> Option<Instant> {
        self.waiting.iter().map(|w| w.until).min()
    }

    /// The notifier's tick: the speaker renews each lease whose failure is still here or
    /// across the data center (or when the view is stale: no information), and tells each
    /// other's recovery; a silent instance looks whether its speaker is still there.
    pub fn tick(&mut self, view: &FleetView) {
        let speaking: Vec<(DependencyId, CheckStatus)> = self
            .speaking
            .iter()
            .filter(|(id, _)| !self.busy.contains(*id))
            .map(|(id, level)| (id.clone(), *level))
            .collect();
        for (id, from) in speaking {
            let own_failing = view.own.as_ref().is_some_and(|own| {
                own.failing
                    .iter()
                    .any(|f| f.dependency.id == id.as_str() && f.impact != CheckStatus::Ok)
            });
            let still_shared = shared(view, &self.datacenter, &id, CheckStatus::Minor).is_some();
            if view.stale || own_failing || still_shared {
                self.lease(&id, VoiceAsk::Claim, Why::Renew);
                continue;
            }
            self.speaking.remove(&id);
            self.lease(&id, VoiceAsk::Resolve, Why::Resolve);
            let figures = recovery(view, &self.datacenter, &id);
            let voice =
                FleetVoice::new(figures, self.me.clone()).in_datacenter(self.datacenter.clone());
            self.steps
                .push(ChorusStep::Recovered(Recovered { id, from, voice }));
        }
        let silent: Vec<DependencyId> = self
            .silent
            .keys()
            .filter(|id| !self.busy.contains(*id))
            .cloned()
            .collect();
        for id in silent {
            self.lease(&id, VoiceAsk::Peek, Why::Peek);
        }
    }

    /// The store's answer to `call` (a timeout is an error: whatever failed, the lease is
    /// as good as not held).
    pub fn answered(&mut self, call: LeaseCall, answer: Result<VoiceLease, Error>) {
        let LeaseCall { id, why, .. } = call;
        let answer = answer.ok();
        let mine = matches!(&answer, Some(VoiceLease::Open(holder)) if *holder == self.me);
        match why {
            Why::Claim(ticket, level, figures) => {
                let voice = match answer {
                    Some(VoiceLease::Open(_)) if mine => {
                        self.forget(&id);
                        self.speaking.insert(id, level);
                        Voice::Fleet(
                            FleetVoice::new(figures, self.me.clone())
                                .in_datacenter(self.datacenter.clone()),
                        )
                    }
                    Some(VoiceLease::Open(_)) => {
                        self.forget(&id);
                        self.silent.insert(id, level);
                        Voice::Silent
                    }
                    Some(_) | None => {
                        self.steps.push(ChorusStep::LeaseRefused(id));
                        Voice::Mine
                    }
                };
                self.steps.push(ChorusStep::Answer { ticket, voice });
                return;
            }
            Why::Renew | Why::Resolve => {}
            Why::Peek => match answer {
                // The speaker told the recovery: nothing more to wait for.
                Some(VoiceLease::Resolved(_)) => {
                    self.silent.remove(&id);
                }
                // The speaker went: this instance takes over, and tells the recovery when
                // the fleet recovers.
                Some(VoiceLease::Free) if self.silent.contains_key(&id) => {
                    self.lease(&id, VoiceAsk::TakeOver, Why::TakeOver);
                    return;
                }
                _ => {}
            },
            Why::TakeOver => {
                if mine {
                    if let Some(level) = self.silent.remove(&id) {
                        self.speaking.insert(id.clone(), level);
                    }
                }
            }
        }
        self.busy.remove(&id);
    }

    /// What to do, in order, since last asked.
    pub fn steps(&mut self) -> std::vec::Drain<'_, ChorusStep> {
        self.steps.drain(..)
    }

    /// Whether this instance speaks for the fleet about `id` now.
    #[must_use]
    pub fn speaks_for(&self, id: &DependencyId) -> bool {
        self.speaking.contains_key(id)
    }

    /// Whether this instance speaks for the fleet about any dependency now.
    #[must_use]
    pub fn speaking(&self) -> bool {
        !self.speaking.is_empty()
    }

    /// Whether this instance keeps silent about `id`, another speaking for the fleet.
    #[must_use]
    pub fn silent_about(&self, id: &DependencyId) -> bool {
        self.silent.contains_key(id)
    }

    /// The dependency's earlier part (speaker or silent) is over: a new change decides.
    fn forget(&mut self, id: &DependencyId) {
        self.speaking.remove(id);
        self.silent.remove(id);
    }

    fn lease(&mut self, id: &DependencyId, ask: VoiceAsk, why: Why) {
        if !matches!(why, Why::Claim(..)) {
            self.busy.insert(id.clone());
        }
        self.steps.push(ChorusStep::Lease {
            ask,
            call: LeaseCall {
                datacenter: self.datacenter.clone(),
                id: id.clone(),
                why,
            },
        });
    }
}

/// The figures of `id` at `level` across data center `dc` (this instance's), if it is
/// shared there now.
fn shared(view: &FleetView, dc: &str, id: &DependencyId, level: CheckStatus) -> Option<String> {
    view.shared(dc, "", id.as_str(), level)?;
    Some(figures(view, dc, id, level))
}

/// `primary-db recovered in east (0 of 20 failing); still failing in west: OUTAGE on 2 of
/// 2`: a data center's recovery, never worded as the dependency's while another fails it.
fn recovery(view: &FleetView, dc: &str, id: &DependencyId) -> String {
    let (failing, fresh) = view.datacenter(dc).map_or((0, 0), |d| {
        (d.failing_at_least(id.as_str(), CheckStatus::Minor), d.fresh)
    });
    let mut text = format!("{id} recovered in {dc} ({failing} of {fresh} failing)");
    let elsewhere: Vec<String> = view
        .datacenters
        .iter()
        .filter(|d| d.datacenter != dc)
        .filter_map(|d| {
            let failing = d.failing_at_least(id.as_str(), CheckStatus::Minor);
            let worst = d
                .counted
                .iter()
                .filter(|c| c.dependency == id.as_str() && c.instances > 0)
                .map(|c| c.level)
                .max()?;
            (failing > 0).then(|| format!("{}: {worst} on {failing} of {}", d.datacenter, d.fresh))
        })
        .collect();
    if !elsewhere.is_empty() {
        text += &format!("; still failing in {}", elsewhere.join(", "));
    }
    text
}

/// `primary-db OUTAGE on 47 of 50 in dc-1`.
fn figures(view: &FleetView, dc: &str, id: &DependencyId, level: CheckStatus) -> String {
    let (failing, fresh) = view.datacenter(dc).map_or((0, 0), |d| {
        (d.failing_at_least(id.as_str(), level), d.fresh)
    });
    format!("{id} {level} on {failing} of {fresh} in {dc}")
}

#[cfg(test)]
mod tests {
    //! A fleet of trackers in virtual time, over a lease table kept by the rules of
    //! `voice.lua` (and etcd's transactions): what the store says, not a mock of a driver.

    use super::*;
    use crate::{
        Conditions, DatacenterCounts, DependencyCount, FailingDependency, HealthRule, Own,
        OwnFailure,
    };

    const WAIT: Duration = Duration::from_secs(2);
    const LEASE: Duration = Duration::from_secs(9);

    fn db() -> DependencyId {
        DependencyId::new("db").unwrap()
    }

    /// The fleet's view from one instance of `n` in `east`, `failing` of which (this one
    /// among them when `mine`) fail `db` at OUTAGE.
    fn view(n: usize, failing: usize, mine: bool) -> FleetView {
        view_in("east", mine, &[("east", n, failing)])
    }

    /// The fleet's view from one instance of `me_in` (failing `db` when its data center
    /// does), over east and west of `n` instances each, `east` and `west` of which fail `db`.
    fn two(me_in: &str, n: usize, east: usize, west: usize) -> FleetView {
        let mine = if me_in == "east" { east } else { west } > 0;
        view_in(me_in, mine, &[("east", n, east), ("west", n, west)])
    }

    /// The fleet's view from one instance of `me_in` (failing `db` at OUTAGE when `mine`),
    /// over data centers of `(name, instances, failing db at OUTAGE)`.
    fn view_in(me_in: &str, mine: bool, datacenters: &[(&str, usize, usize)]) -> FleetView {
        let counts = datacenters
            .iter()
            .map(|&(dc, n, failing)| {
                let conditions = Conditions {
                    ok: n - failing,
                    outage: failing,
                    ..Conditions::default()
                };
                let mut counts = DatacenterCounts::new(dc, conditions, n);
                if failing > 0 {
                    counts.failing = vec![DependencyCount {
                        dependency: "db".into(),
                        level: CheckStatus::Outage,
                        instances: failing,
                    }];
                }
                counts
            })
            .collect();
        let mut view = FleetView::from_counts(counts, HealthRule::default());
        view.own = Some(Own {
            datacenter: me_in.into(),
            condition: if mine {
                CheckStatus::Outage
            } else {
                CheckStatus::Ok
            },
            failing: if mine {
                vec![OwnFailure {
                    dependency: FailingDependency::new("db", CheckStatus::Outage),
                    impact: CheckStatus::Outage,
                }]
            } else {
                Vec::new()
            },
        });
        view
    }

    /// The leases as the store keeps them: state, holder, expiry.
    #[derive(Default)]
    struct Leases(HashMap<String, (&'static str, String, Instant)>);

    impl Leases {
        fn ask(
            &mut self,
            call: &LeaseCall,
            holder: &str,
            ask: VoiceAsk,
            now: Instant,
        ) -> VoiceLease {
            let id = format!("{}\t{}", call.datacenter(), call.dependency());
            let (state, who) = match self.0.get(&id) {
                Some((s, w, until)) if *until > now => (*s, w.clone()),
                _ => ("free", String::new()),
            };
            let take = match ask {
                VoiceAsk::Claim => state != "open" || who == holder,
                VoiceAsk::TakeOver => state == "free" || (state == "open" && who == holder),
                VoiceAsk::Resolve => state == "open" && who == holder,
                VoiceAsk::Peek => false,
            };
            let (state, who) = if take {
                let state = if ask == VoiceAsk::Resolve {
                    "resolved"
                } else {
                    "open"
                };
                self.0.insert(id, (state, holder.into(), now + LEASE));
                (state, holder.to_owned())
            } else {
                (state, who)
            };
            match state {
                "open" => VoiceLease::Open(who),
                "resolved" => VoiceLease::Resolved(who),
                _ => VoiceLease::Free,
            }
        }
    }

    /// One instance: its tracker and what it told.
    struct Member {
        name: String,
        tracker: ChorusTracker,
        voices: Vec<Voice>,
        recovered: usize,
        /// The recoveries told, in full.
        told: Vec<Recovered>,
        refused: usize,
    }

    /// Carries out each member's steps against `leases` (`None`: the store is down) until
    /// none is left; lease calls answer at once.
    fn settle(members: &mut [Member], leases: Option<&mut Leases>, now: Instant) {
        let mut leases = leases;
        for m in members.iter_mut() {
            loop {
                let steps: Vec<ChorusStep> = m.tracker.steps().collect();
                if steps.is_empty() {
                    break;
                }
                for step in steps {
                    match step {
                        ChorusStep::Lease { ask, call } => {
                            let answer = match leases.as_deref_mut() {
                                Some(l) => Ok(l.ask(&call, &m.name, ask, now)),
                                None => Err(Error::unavailable("down")),
                            };
                            m.tracker.answered(call, answer);
                        }
                        ChorusStep::Answer { voice, .. } => m.voices.push(voice),
                        ChorusStep::Recovered(r) => {
                            m.recovered += 1;
                            m.told.push(r);
                        }
                        ChorusStep::LeaseRefused(_) => m.refused += 1,
                    }
                }
            }
        }
    }

    fn fleet(n: usize) -> Vec<Member> {
        (0..n)
            .map(|i| Member {
                name: format!("i{i}"),
                tracker: ChorusTracker::new(format!("i{i}"), "east", WAIT),
                voices: Vec::new(),
                recovered: 0,
                told: Vec::new(),
                refused: 0,
            })
            .collect()
    }

    fn count(members: &[Member], f: impl Fn(&Voice) -> bool) -> usize {
        members
            .iter()
            .flat_map(|m| &m.voices)
            .filter(|v| f(v))
            .count()
    }

    #[test]
    fn a_shared_failure_has_one_voice_and_one_recovery() {
        let (t0, mut leases, mut members) = (Instant::now(), Leases::default(), fleet(10));
        for m in &mut members {
            m.tracker
                .changed(db(), CheckStatus::Outage, t0, &view(10, 10, true));
        }
        settle(&mut members, Some(&mut leases), t0);
        assert_eq!(count(&members, |v| matches!(v, Voice::Fleet(_))), 1);
        assert_eq!(count(&members, |v| *v == Voice::Silent), 9);
        let Some(Voice::Fleet(voice)) = members[0].voices.first() else {
            panic!("the first to ask speaks: {:?}", members[0].voices)
        };
        assert_eq!(voice.figures, "db OUTAGE on 10 of 10 in east");
        assert!(members[0].tracker.speaks_for(&db()));
        assert!(members[1].tracker.silent_about(&db()));

        // Still failing: renewed, nothing told.
        for m in &mut members {
            m.tracker.tick(&view(10, 10, true));
        }
        settle(&mut members, Some(&mut leases), t0);
        assert_eq!(members.iter().map(|m| m.recovered).sum::<usize>(), 0);

        // The fleet recovered: one recovery, from the speaker; the others see it resolved.
        for m in &mut members {
            m.tracker.tick(&view(10, 0, false));
        }
        settle(&mut members, Some(&mut leases), t0);
        assert_eq!(members[0].recovered, 1);
        assert_eq!(members.iter().map(|m| m.recovered).sum::<usize>(), 1);
        for m in &mut members {
            m.tracker.tick(&view(10, 0, false));
        }
        settle(&mut members, Some(&mut leases), t0);
        assert!(members.iter().all(|m| !m.tracker.silent_about(&db())));
        assert_eq!(members.iter().map(|m| m.recovered).sum::<usize>(), 1);
    }

    #[test]
    fn each_data_center_tells_its_own_failure_and_recovery() {
        let (t0, mut leases) = (Instant::now(), Leases::default());
        let member = |i: usize, dc: &str| Member {
            name: format!("{dc}{i}"),
            tracker: ChorusTracker::new(format!("{dc}{i}"), dc, WAIT),
            voices: Vec::new(),
            recovered: 0,
            told: Vec::new(),
            refused: 0,
        };
        let mut east: Vec<Member> = (0..3).map(|i| member(i, "east")).collect();
        let mut west: Vec<Member> = (0..3).map(|i| member(i, "west")).collect();
        for m in &mut east {
            m.tracker
                .changed(db(), CheckStatus::Outage, t0, &two("east", 3, 3, 3));
        }
        for m in &mut west {
            m.tracker
                .changed(db(), CheckStatus::Outage, t0, &two("west", 3, 3, 3));
        }
        settle(&mut east, Some(&mut leases), t0);
        settle(&mut west, Some(&mut leases), t0);
        // One voice in each data center, each with its own figures.
        for (members, dc) in [(&east, "east"), (&west, "west")] {
            assert_eq!(count(members, |v| matches!(v, Voice::Fleet(_))), 1, "{dc}");
            assert_eq!(count(members, |v| *v == Voice::Silent), 2, "{dc}");
            let Some(Voice::Fleet(voice)) = members[0].voices.first() else {
                panic!("{dc}: {:?}", members[0].voices)
            };
            assert_eq!(voice.figures, format!("db OUTAGE on 3 of 3 in {dc}"));
            assert_eq!(voice.datacenter.as_deref(), Some(dc));
        }

        // East recovers while west still fails: east's recovery, worded as east's.
        let tick = |members: &mut Vec<Member>, dc: &str, e: usize, w: usize| {
            for m in members.iter_mut() {
                m.tracker.tick(&two(dc, 3, e, w));
            }
        };
        for _ in 0..2 {
            tick(&mut east, "east", 0, 3);
            settle(&mut east, Some(&mut leases), t0);
            tick(&mut west, "west", 0, 3);
            settle(&mut west, Some(&mut leases), t0);
        }
        let told: Vec<&Recovered> = east.iter().flat_map(|m| &m.told).collect();
        assert_eq!(told.len(), 1, "{told:?}");
        assert_eq!(told[0].voice.datacenter.as_deref(), Some("east"));
        assert_eq!(
            told[0].voice.figures,
            "db recovered in east (0 of 3 failing); still failing in west: OUTAGE on 3 of 3"
        );
        assert_eq!(west.iter().map(|m| m.recovered).sum::<usize>(), 0);
        assert!(west[0].tracker.speaks_for(&db()));

        // West recovers: its own recovery, once.
        for _ in 0..2 {
            tick(&mut west, "west", 0, 0);
            settle(&mut west, Some(&mut leases), t0);
        }
        assert_eq!(west.iter().map(|m| m.recovered).sum::<usize>(), 1);
        assert_eq!(west[0].recovered, 1);
    }

    #[test]
    fn a_failure_of_its_own_is_told_at_the_deadline_not_before() {
        let (t0, mut leases, mut members) = (Instant::now(), Leases::default(), fleet(1));
        let ticket = members[0]
            .tracker
            .changed(db(), CheckStatus::Outage, t0, &view(10, 1, true));
        settle(&mut members, Some(&mut leases), t0);
        assert!(members[0].voices.is_empty(), "answered before the deadline");
        assert_eq!(members[0].tracker.deadline(), Some(t0 + WAIT));
        members[0]
            .tracker
            .advance(t0 + WAIT - Duration::from_millis(1), &view(10, 1, true));
        assert!(members[0].tracker.steps().next().is_none());
        members[0].tracker.advance(t0 + WAIT, &view(10, 1, true));
        let steps: Vec<_> = members[0].tracker.steps().collect();
        assert_eq!(
            steps,
            vec![ChorusStep::Answer {
                ticket,
                voice: Voice::Mine
            }]
        );
        assert!(
            leases.0.is_empty(),
            "no lease taken for a failure of its own"
        );
    }

    #[test]
    fn a_failure_the_fleet_shares_later_is_voiced_when_the_view_says_so() {
        let (t0, mut leases, mut members) = (Instant::now(), Leases::default(), fleet(1));
        members[0]
            .tracker
            .changed(db(), CheckStatus::Outage, t0, &view(10, 1, true));
        members[0]
            .tracker
            .advance(t0 + WAIT / 2, &view(10, 8, true));
        settle(&mut members, Some(&mut leases), t0);
        assert!(matches!(members[0].voices[..], [Voice::Fleet(_)]));
        assert_eq!(members[0].tracker.deadline(), None);
    }

    #[test]
    fn a_store_that_keeps_no_lease_leaves_each_instance_telling_its_own() {
        let (t0, mut members) = (Instant::now(), fleet(3));
        for m in &mut members {
            m.tracker
                .changed(db(), CheckStatus::Outage, t0, &view(3, 3, true));
        }
        settle(&mut members, None, t0);
        assert_eq!(count(&members, |v| *v == Voice::Mine), 3);
        assert_eq!(members.iter().map(|m| m.refused).sum::<usize>(), 3);
    }

    #[test]
    fn a_silent_instance_takes_over_from_a_speaker_that_went() {
        let (t0, mut leases, mut members) = (Instant::now(), Leases::default(), fleet(3));
        for m in &mut members {
            m.tracker
                .changed(db(), CheckStatus::Outage, t0, &view(3, 3, true));
        }
        settle(&mut members, Some(&mut leases), t0);
        assert!(members[0].tracker.speaks_for(&db()));
        // The speaker goes; its lease runs out; the others look at each tick.
        let mut rest = members.split_off(1);
        let mut now = t0;
        while !rest.iter().any(|m| m.tracker.speaks_for(&db())) {
            now += Duration::from_secs(1);
            assert!(now < t0 + LEASE * 2, "no one took over");
            for m in &mut rest {
                m.tracker.tick(&view(3, 3, true));
            }
            settle(&mut rest, Some(&mut leases), now);
        }
        assert!(now >= t0 + LEASE, "taken over at {:?}", now - t0);
        assert_eq!(
            rest.iter().filter(|m| m.tracker.speaks_for(&db())).count(),
            1
        );
        // The new speaker tells the recovery, once.
        for _ in 0..2 {
            for m in &mut rest {
                m.tracker.tick(&view(3, 0, false));
            }
            settle(&mut rest, Some(&mut leases), now);
        }
        assert_eq!(rest.iter().map(|m| m.recovered).sum::<usize>(), 1);
    }

    #[test]
    fn a_slow_store_is_asked_once_per_lease_at_a_time() {
        let t0 = Instant::now();
        let mut tracker = ChorusTracker::new("i0", "east", WAIT);
        tracker.changed(db(), CheckStatus::Outage, t0, &view(3, 3, true));
        let Some(ChorusStep::Lease { call, .. }) = tracker.steps().next() else {
            panic!("no claim asked")
        };
        tracker.answered(call, Ok(VoiceLease::Open("i0".into())));
        let _ = tracker.steps().count();
        tracker.tick(&view(3, 3, true));
        let renew: Vec<_> = tracker.steps().collect();
        assert!(matches!(
            renew[..],
            [ChorusStep::Lease {
                ask: VoiceAsk::Claim,
                ..
            }]
        ));
        // The renewal has not come back: the next ticks ask nothing more.
        tracker.tick(&view(3, 3, true));
        tracker.tick(&view(3, 3, true));
        assert!(tracker.steps().next().is_none());
        let [ChorusStep::Lease { call, .. }] = &renew[..] else {
            unreachable!()
        };
        tracker.answered(call.clone(), Err(Error::unavailable("late")));
        tracker.tick(&view(3, 3, true));
        assert_eq!(tracker.steps().count(), 1);
    }
}
