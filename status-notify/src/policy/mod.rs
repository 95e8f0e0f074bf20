//! The policy: which changes are told, and when.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use status_core::{CheckResult, CheckStatus, DependencyId, Facts};

mod track;

use self::track::Track;
use crate::notice::NAMED_ADDRESSES;
use crate::{Notice, MAX_DIGEST_BYTES, MAX_PENDING, MAX_REFUSED_ACTIONS, MAX_REFUSED_ADDRESSES};

/// The policy's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoticePolicy {
    /// How long a level must hold before it is told (zero: at once).
    pub hold: Duration,
    /// More notices than this due at once go out as one digest.
    pub digest_above: usize,
    /// After a digest, what falls due within this long waits for the next one: at most one
    /// digest a period.
    pub digest_every: Duration,
}

impl Default for NoticePolicy {
    /// A 30 s hold; a digest above 5 notices at once, at most one a minute.
    fn default() -> Self {
        Self {
            hold: Duration::from_secs(30),
            digest_above: 5,
            digest_every: Duration::from_secs(60),
        }
    }
}

/// What was last told: the system's level and every dependency's told worse than OK. Kept
/// across a restart ([`NotificationsBuilder::remember`](crate::NotificationsBuilder::remember)),
/// it is what makes a restarted notifier neither repeat a notice already told nor lose the
/// "resolved" of an outage told before the restart.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Told {
    /// The system's level last told.
    pub system: Option<CheckStatus>,
    /// Each dependency's level last told, when worse than OK.
    pub dependencies: BTreeMap<String, CheckStatus>,
}

/// The notification policy's state: see the [module docs](super).
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use status_notify::{Notice, NoticePolicy, Notifier};
/// use status_core::CheckStatus;
///
/// let s = Duration::from_secs;
/// let mut notifier = Notifier::new(NoticePolicy { hold: s(30), ..NoticePolicy::default() });
/// notifier.see_system(CheckStatus::Outage, s(0));
/// assert!(notifier.tick(s(10)).is_empty(), "not held long enough");
/// assert_eq!(
///     notifier.tick(s(30)),
///     [Notice::System { from: CheckStatus::Ok, to: CheckStatus::Outage }]
/// );
/// assert!(notifier.tick(s(60)).is_empty(), "never twice");
/// ```
#[derive(Debug, Clone)]
pub struct Notifier {
    policy: NoticePolicy,
    dependencies: BTreeMap<DependencyId, Track>,
    system: Track,
    /// Whether the system is under maintenance, as the registry's facts say.
    maintenance: bool,
    /// When the last digest went out.
    last_digest: Option<Duration>,
    /// Notices due since then, for the next digest (at most [`MAX_PENDING`]).
    held: Vec<Notice>,
    /// Notices told from outside (an audit trail), for the next tick (at most
    /// [`MAX_PENDING`]).
    told: Vec<Notice>,
    /// Refused calls told from outside, counted by action until they are told.
    refused: BTreeMap<String, Refusals>,
    /// Notices due and not kept for lack of room, for the next digest to count.
    omitted: u64,
}

/// Refused calls to one action, counted.
#[derive(Debug, Clone, Default)]
struct Refusals {
    calls: u64,
    addresses: BTreeSet<String>,
}

impl Notifier {
    /// A notifier with nothing seen yet: every dependency, and the system, taken as OK.
    #[must_use]
    pub fn new(policy: NoticePolicy) -> Self {
        Self {
            policy,
            dependencies: BTreeMap::new(),
            system: Track::new(CheckStatus::Ok, Duration::ZERO),
            maintenance: false,
            last_digest: None,
            held: Vec::new(),
            told: Vec::new(),
            refused: BTreeMap::new(),
            omitted: 0,
        }
    }

    /// What was last told.
    #[must_use]
    pub fn told(&self) -> Told {
        Told {
            system: Some(self.system.told),
            dependencies: self
                .dependencies
                .iter()
                .filter(|(_, t)| t.told != CheckStatus::Ok)
                .map(|(id, t)| (id.as_str().to_owned(), t.told))
                .collect(),
        }
    }

    /// Takes `told` as what was told before a restart, at `now`: a dependency told OUTAGE
    /// and still failing is not told again; one that recovered meanwhile is told resolved
    /// once its level holds. Ids that are not valid are skipped.
    pub fn restore(&mut self, told: &Told, now: Duration) {
        if let Some(system) = told.system {
            self.system.told = system;
            if self.system.level == CheckStatus::Ok {
                self.system.level = system;
                self.system.since = now;
            }
        }
        for (id, level) in &told.dependencies {
            let Ok(id) = DependencyId::new(id) else {
                continue;
            };
            let track = self
                .dependencies
                .entry(id)
                .or_insert_with(|| Track::new(*level, now));
            track.told = *level;
        }
    }

    /// Sees a dependency's latest result at `now` (time on any monotonic axis).
    pub fn see(&mut self, result: &CheckResult, now: Duration) {
        let track = self
            .dependencies
            .entry(result.id().clone())
            .or_insert_with(|| Track::new(CheckStatus::Ok, now));
        // Failure k of n, reported MINOR on the way to its real status.
        let failures = result.consecutive_failures();
        let ramping = failures > 0 && failures < result.info().failures_before_outage();
        track.see(result.status(), ramping, now);
        track.flapping = result.flapping();
        track.blocked_by = result.blocked_by().to_vec();
        // What one result says alone; the facts say more (see `see_facts`).
        track.maintenance = result.mute().is_some();
    }

    /// Forgets a dependency that was removed.
    pub fn forget(&mut self, id: &str) {
        self.dependencies.remove(id);
    }

    /// Sees what the registry's facts say at `now`: every dependency, the system's level
    /// and whether the system is under maintenance. What the driver feeds it.
    pub fn see_facts(&mut self, facts: &Facts, now: Duration) {
        for dependency in facts.dependencies() {
            self.see(dependency.result(), now);
            if let Some(track) = self.dependencies.get_mut(dependency.id()) {
                track.maintenance = dependency.maintenance();
            }
        }
        self.see_system(facts.level(), now);
        self.see_maintenance(facts.maintenance());
    }

    /// Sees whether the system is under maintenance ([`Facts::maintenance`]: it fails, and
    /// each dependency failing is muted or fails only through muted roots): its failure is
    /// then not told.
    pub fn see_maintenance(&mut self, maintenance: bool) {
        self.maintenance = maintenance;
    }

    /// Sees the system condition at `now`.
    pub fn see_system(&mut self, condition: CheckStatus, now: Duration) {
        // The system is ramping while MINOR only because a dependency is.
        let ramping = self.dependencies.values().any(|t| t.ramping);
        self.system.see(condition, ramping, now);
    }

    /// Tells `notice` at the next tick, as the others: alone while few, in a digest when
    /// many. For what the policy does not see itself, such as an operator's action.
    ///
    /// Memory stays bounded whatever the rate: a refused [`Notice::Audit`] is counted by
    /// action and address into one [`Notice::Refused`], told at most once a digest period;
    /// past [`MAX_PENDING`] waiting notices, more are counted in the next digest's
    /// `omitted`.
    pub fn tell(&mut self, notice: Notice) {
        match notice {
            Notice::Audit {
                action,
                refused: true,
                address,
                ..
            } => {
                let key = if self.refused.len() < MAX_REFUSED_ACTIONS
                    || self.refused.contains_key(&action)
                {
                    action
                } else {
                    "other".to_owned()
                };
                let counted = self.refused.entry(key).or_default();
                counted.calls += 1;
                if let Some(address) = address {
                    if counted.addresses.len() < MAX_REFUSED_ADDRESSES {
                        counted.addresses.insert(address);
                    }
                }
            }
            notice if self.told.len() < MAX_PENDING => self.told.push(notice),
            _ => self.omitted += 1,
        }
    }

    /// The notices due at `now`, each told once.
    pub fn tick(&mut self, now: Duration) -> Vec<Notice> {
        let hold = self.policy.hold;
        let mut notices = std::mem::take(&mut self.told);
        // Flapping: told once, then silence while it lasts; a stable level after it is told
        // as any other (its hold starts again).
        for (id, track) in &mut self.dependencies {
            if track.maintenance {
                continue;
            }
            if track.flapping && !track.flapping_told {
                track.flapping_told = true;
                notices.push(Notice::Flapping { id: id.clone() });
            } else if !track.flapping && track.flapping_told {
                track.flapping_told = false;
                track.since = now;
            }
        }
        let due: BTreeSet<DependencyId> = self
            .dependencies
            .iter()
            .filter(|(_, t)| !t.maintenance && !t.flapping_told && t.due(hold, now))
            .map(|(id, _)| id.clone())
            .collect();
        // A failure blocked by another failing dependency goes with its roots' notices: it is
        // named by each root told now, whether its own hold is over or not (its failure came
        // with the root's, a moment apart), and marked told; never told alone.
        let mut affected: BTreeMap<DependencyId, Vec<DependencyId>> = BTreeMap::new();
        for (id, track) in &self.dependencies {
            let unsaid = track.level != CheckStatus::Ok && track.level != track.told;
            if unsaid && !track.maintenance && !track.flapping_told && !track.blocked_by.is_empty()
            {
                for root in track.blocked_by.iter().filter(|r| due.contains(*r)) {
                    affected.entry(root.clone()).or_default().push(id.clone());
                }
            }
        }
        let named: Vec<DependencyId> = affected.values().flatten().cloned().collect();
        for id in &due {
            let track = self.dependencies.get_mut(id).expect("due from the map");
            let from = std::mem::replace(&mut track.told, track.level);
            if track.level == CheckStatus::Ok {
                notices.push(Notice::Resolved {
                    id: id.clone(),
                    from,
                });
            } else if track.blocked_by.is_empty() {
                let also_affected = affected.remove(id).unwrap_or_default();
                notices.push(Notice::Changed {
                    id: id.clone(),
                    from,
                    to: track.level,
                    also_affected,
                });
            }
        }
        // The dependents named were told with their root.
        for id in named {
            if let Some(track) = self.dependencies.get_mut(&id) {
                track.told = track.level;
            }
        }
        // A system failing only through muted dependencies (a maintenance, as the registry's
        // facts judge it) is not told.
        let maintenance = self.maintenance;
        if self.system.due(hold, now) && !(maintenance && self.system.level != CheckStatus::Ok) {
            let from = std::mem::replace(&mut self.system.told, self.system.level);
            notices.push(Notice::System {
                from,
                to: self.system.level,
            });
        }
        self.digest(notices, now)
    }

    /// `notices` as they go out: alone while few; as one digest when many; and within a
    /// digest period of the last digest, held for the next one.
    ///
    /// Refused calls wait for a quiet moment as a digest does, so that a flood of them is
    /// one notice a digest period; what does not fit is counted, never kept.
    fn digest(&mut self, notices: Vec<Notice>, now: Duration) -> Vec<Notice> {
        let quiet = self
            .last_digest
            .is_none_or(|at| now.saturating_sub(at) >= self.policy.digest_every);
        if !quiet {
            let room = MAX_PENDING.saturating_sub(self.held.len());
            self.omitted += notices.len().saturating_sub(room) as u64;
            self.held.extend(notices.into_iter().take(room));
            return Vec::new();
        }
        let mut due = std::mem::take(&mut self.held);
        due.extend(notices);
        let refusals = !self.refused.is_empty();
        due.extend(
            std::mem::take(&mut self.refused)
                .into_iter()
                .map(|(action, r)| Notice::Refused {
                    action,
                    calls: r.calls,
                    addresses: r.addresses.len(),
                    some_addresses: r.addresses.into_iter().take(NAMED_ADDRESSES).collect(),
                }),
        );
        let omitted = std::mem::take(&mut self.omitted);
        if due.len() > self.policy.digest_above
            || omitted > 0
            || (self.last_digest.is_some() && !due.is_empty())
        {
            // Many at once, or what waited for the period's end: one digest, and a new period.
            self.last_digest = Some(now);
            return vec![Self::bounded_digest(due, omitted)];
        }
        if refusals {
            // The next refusals wait a period: a flood is one notice a period.
            self.last_digest = Some(now);
        } else if due.is_empty() {
            // A whole period without notices: the next few go out alone again.
            self.last_digest = None;
        }
        due
    }

    /// A digest of `due` that fits in [`MAX_DIGEST_BYTES`]: the first notices that fit, the
    /// rest counted with `omitted`.
    fn bounded_digest(due: Vec<Notice>, omitted: u64) -> Notice {
        let mut size = 0;
        let mut notices = Vec::with_capacity(due.len().min(MAX_PENDING));
        let mut omitted = omitted;
        for notice in due {
            let bytes = serde_json::to_vec(&notice).map_or(usize::MAX, |b| b.len() + 1);
            if size + bytes <= MAX_DIGEST_BYTES && bytes != usize::MAX {
                size += bytes;
                notices.push(notice);
            } else {
                omitted += 1;
            }
        }
        Notice::Digest { notices, omitted }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use status_core::check::CheckOutcome;
    use status_core::{Dependency, Registry};
    use CheckStatus::{Major, Ok, Outage};

    const S: Duration = Duration::from_secs(1);

    /// A result of `id` at `status`, as the registry reports it, with `blocked_by`.
    fn result(id: &str, status: CheckStatus, flapping: bool, blocked_by: &[&str]) -> CheckResult {
        let registry = Registry::new();
        let info = Dependency::passive(id).build_info().unwrap();
        let reporter = registry.add_passive(info).unwrap();
        reporter.record(CheckOutcome::new(status, "x"));
        (*registry.result(id).unwrap())
            .clone()
            .with_status(status)
            .with_flapping(flapping)
            .with_blocked_by(
                blocked_by
                    .iter()
                    .map(|b| DependencyId::new(b).unwrap())
                    .collect(),
            )
    }

    fn notifier(hold: u64) -> Notifier {
        Notifier::new(NoticePolicy {
            hold: S * u32::try_from(hold).unwrap(),
            digest_above: 5,
            digest_every: S * 60,
        })
    }

    fn id(s: &str) -> DependencyId {
        DependencyId::new(s).unwrap()
    }

    #[test]
    fn a_restart_with_what_was_told_neither_repeats_nor_loses_a_resolved() {
        // Before: db told OUTAGE, the system told OUTAGE.
        let mut before = notifier(0);
        before.see(&result("db", Outage, false, &[]), S);
        before.see_system(Outage, S);
        assert_eq!(before.tick(S).len(), 2);
        let told = before.told();
        assert_eq!(told.dependencies.get("db"), Some(&Outage));
        let kept: Told = serde_json::from_str(&serde_json::to_string(&told).unwrap()).unwrap();
        assert_eq!(kept, told);

        // Restarted while db still fails: nothing is told again.
        let mut still = notifier(0);
        still.restore(&kept, Duration::ZERO);
        still.see(&result("db", Outage, false, &[]), S);
        still.see_system(Outage, S);
        assert!(still.tick(S * 2).is_empty());

        // Restarted after db recovered: its resolved, and the system's, are told once.
        let mut recovered = notifier(0);
        recovered.restore(&kept, Duration::ZERO);
        recovered.see(&result("db", Ok, false, &[]), S);
        recovered.see_system(Ok, S);
        let notices = recovered.tick(S * 2);
        assert!(
            notices.contains(&Notice::Resolved {
                id: id("db"),
                from: Outage
            }),
            "{notices:?}"
        );
        assert!(
            notices.contains(&Notice::System {
                from: Outage,
                to: Ok
            }),
            "{notices:?}"
        );
        assert!(recovered.tick(S * 3).is_empty());
        assert_eq!(
            recovered.told(),
            Told {
                system: Some(Ok),
                ..Told::default()
            }
        );
    }

    #[test]
    fn a_level_is_told_once_it_held_and_once_more_when_resolved() {
        let mut n = notifier(30);
        n.see(&result("db", Outage, false, &[]), Duration::ZERO);
        assert!(n.tick(29 * S).is_empty());
        let told = n.tick(30 * S);
        assert_eq!(
            told,
            [Notice::Changed {
                id: id("db"),
                from: Ok,
                to: Outage,
                also_affected: vec![]
            }]
        );
        assert!(n.tick(31 * S).is_empty(), "never twice for one level");
        // A short blip back to OK and down again is not told.
        n.see(&result("db", Ok, false, &[]), 40 * S);
        n.see(&result("db", Outage, false, &[]), 50 * S);
        assert!(n.tick(90 * S).is_empty());
        n.see(&result("db", Ok, false, &[]), 100 * S);
        assert!(n.tick(129 * S).is_empty());
        assert_eq!(
            n.tick(130 * S),
            [Notice::Resolved {
                id: id("db"),
                from: Outage
            }]
        );
    }

    #[test]
    fn a_zero_hold_tells_at_once_and_a_new_level_is_a_new_notice() {
        let mut n = notifier(0);
        n.see(&result("db", Major, false, &[]), Duration::ZERO);
        assert_eq!(n.tick(Duration::ZERO).len(), 1);
        n.see(&result("db", Outage, false, &[]), S);
        let told = n.tick(S);
        assert!(matches!(
            &told[..],
            [Notice::Changed {
                from: Major,
                to: Outage,
                ..
            }]
        ));
    }

    #[test]
    fn flapping_is_told_once_then_silence_until_stable() {
        let mut n = notifier(0);
        for i in 0..10 {
            let status = if i % 2 == 0 { Outage } else { Ok };
            n.see(&result("db", status, i >= 3, &[]), i * S);
            let told = n.tick(i * S);
            match i {
                0..=2 => assert_eq!(told.len(), 1, "{i}: each change told before"),
                3 => assert_eq!(told, [Notice::Flapping { id: id("db") }]),
                _ => assert!(told.is_empty(), "{i}: silence while it flaps"),
            }
        }
        // Stable again: the level last told (step 2) was OUTAGE. Stable at OUTAGE, nothing to
        // tell; stable at OK, it is resolved.
        n.see(&result("db", Outage, false, &[]), 20 * S);
        assert!(n.tick(20 * S).is_empty(), "the same level as told");
        n.see(&result("db", Ok, false, &[]), 30 * S);
        assert_eq!(
            n.tick(30 * S),
            [Notice::Resolved {
                id: id("db"),
                from: Outage
            }]
        );
    }

    #[test]
    fn dependents_are_folded_into_their_roots_notice() {
        let mut n = notifier(10);
        n.see(&result("primary-db", Outage, false, &[]), Duration::ZERO);
        n.see(
            &result("orders-api", Outage, false, &["primary-db"]),
            Duration::ZERO,
        );
        n.see(&result("search", Major, false, &["primary-db"]), S);
        assert_eq!(
            n.tick(10 * S),
            [Notice::Changed {
                id: id("primary-db"),
                from: Ok,
                to: Outage,
                also_affected: vec![id("orders-api"), id("search")]
            }],
            "search failed a second later, its hold not over: named with its root all the same"
        );
        assert!(n.tick(11 * S).is_empty(), "never told again, nor alone");
        assert!(
            n.tick(60 * S).is_empty(),
            "nothing sent alone for a dependent"
        );
    }

    #[test]
    fn the_system_condition_is_told_on_its_own() {
        let mut n = notifier(5);
        n.see_system(Major, Duration::ZERO);
        n.see_system(Ok, 2 * S);
        assert!(n.tick(10 * S).is_empty(), "back to what was told: nothing");
        n.see_system(Outage, 10 * S);
        assert_eq!(
            n.tick(15 * S),
            [Notice::System {
                from: Ok,
                to: Outage
            }]
        );
    }

    /// `result`, muted.
    fn muted(result: CheckResult) -> CheckResult {
        let registry = Registry::new();
        let info = Dependency::passive(result.id().as_str())
            .build_info()
            .unwrap();
        registry.add_passive(info).unwrap();
        let mute = registry
            .mute(
                result.id().as_str(),
                status_core::MuteWindow::For(S * 600),
                "maintenance",
                None,
            )
            .unwrap();
        result.with_mute(Some(mute))
    }

    #[test]
    fn a_muted_dependency_is_followed_silently_and_told_on_unmute_if_it_moved() {
        let mut n = notifier(10);
        // Muted while it fails and recovers and fails again: nothing.
        n.see(&muted(result("db", Outage, false, &[])), Duration::ZERO);
        n.see(&result("api", Outage, false, &["db"]), Duration::ZERO);
        n.see_system(Outage, Duration::ZERO);
        n.see_maintenance(true);
        assert!(
            n.tick(60 * S).is_empty(),
            "muted: no notice, not even the system's"
        );
        n.see(&muted(result("db", Major, true, &[])), 70 * S);
        assert!(n.tick(90 * S).is_empty(), "not even flapping");
        // Unmuted at MAJOR: where it stands differs from what was told (OK): one notice, at
        // once since it held that level long enough while muted.
        n.see(&result("db", Major, false, &[]), 100 * S);
        n.see_maintenance(false);
        let told = n.tick(100 * S);
        assert!(
            told.contains(&Notice::Changed {
                id: id("db"),
                from: Ok,
                to: Major,
                also_affected: vec![]
            }),
            "{told:?}"
        );
        assert!(
            told.contains(&Notice::System {
                from: Ok,
                to: Outage
            }),
            "the system's failure has an unmuted cause now: {told:?}"
        );
        // Muted, recovered, unmuted at the level told before the mute: nothing.
        n.see(&muted(result("db", Ok, false, &[])), 110 * S);
        n.see(&muted(result("db", Major, false, &[])), 120 * S);
        assert!(n.tick(200 * S).is_empty());
        n.see(&result("db", Major, false, &[]), 210 * S);
        assert!(n.tick(300 * S).is_empty(), "stands where it was told");
    }

    fn audit(i: u16, refused: bool, address: Option<&str>) -> Notice {
        Notice::Audit {
            action: "PUT /admin/drain".into(),
            status: if refused { 401 } else { 200 + i },
            refused,
            actor: None,
            address: address.map(str::to_owned),
        }
    }

    #[test]
    fn told_notices_go_out_at_the_next_tick_and_a_flood_is_one_digest() {
        let mut n = notifier(0);
        n.tell(audit(0, false, None));
        assert_eq!(n.tick(S), [audit(0, false, None)]);
        assert!(n.tick(2 * S).is_empty(), "told once");
        for i in 0..50 {
            n.tell(audit(i, false, None));
        }
        let told = n.tick(3 * S);
        assert!(
            matches!(&told[..], [Notice::Digest { notices, omitted: 0 }] if notices.len() == 50),
            "{told:?}"
        );
        assert_eq!(
            audit(1, true, Some("10.0.0.7")).text(),
            "PUT /admin/drain by someone unnamed from 10.0.0.7: refused (401)"
        );
    }

    #[test]
    fn refused_calls_are_counted_never_kept_and_told_once_a_period() {
        let mut n = notifier(0);
        // Two million refused calls from three addresses: one notice, its size fixed.
        for i in 0..2_000_000u32 {
            let address = format!("10.0.0.{}", i % 3);
            n.tell(audit(0, true, Some(&address)));
        }
        assert!(n.told.is_empty() && n.held.is_empty(), "nothing kept");
        let told = n.tick(S);
        assert_eq!(
            told,
            [Notice::Refused {
                action: "PUT /admin/drain".into(),
                calls: 2_000_000,
                addresses: 3,
                some_addresses: vec!["10.0.0.0".into(), "10.0.0.1".into(), "10.0.0.2".into()],
            }]
        );
        assert_eq!(
            told[0].text(),
            "2000000 refused calls to PUT /admin/drain from 3 addresses"
        );
        // More within the period wait for its end, then go as one digest.
        for second in 2..60u32 {
            n.tell(audit(0, true, Some("10.0.0.9")));
            assert!(n.tick(S * second).is_empty(), "{second}: within the period");
        }
        let told = n.tick(61 * S);
        let [Notice::Digest {
            notices,
            omitted: 0,
        }] = &told[..]
        else {
            panic!("{told:?}")
        };
        assert!(
            matches!(
                &notices[..],
                [Notice::Refused {
                    calls: 58,
                    addresses: 1,
                    ..
                }]
            ),
            "{notices:?}"
        );
        // Addresses stop being kept past their bound; past the actions counted apart, the
        // rest are "other".
        for i in 0..5_000u32 {
            n.tell(audit(0, true, Some(&format!("a{i}"))));
        }
        assert_eq!(
            n.refused["PUT /admin/drain"].addresses.len(),
            MAX_REFUSED_ADDRESSES
        );
        assert!(n.tick(62 * S).is_empty(), "within the period");
        assert_eq!(
            n.tick(130 * S)[0].text(),
            "1 change: 5000 refused calls to PUT /admin/drain from at least 1024 addresses"
        );
        for i in 0..(MAX_REFUSED_ACTIONS + 10) {
            n.tell(Notice::Audit {
                action: format!("PUT /admin/x{i}"),
                status: 401,
                refused: true,
                actor: None,
                address: None,
            });
        }
        assert_eq!(n.refused.len(), MAX_REFUSED_ACTIONS + 1);
        assert_eq!(n.refused["other"].calls, 10);
    }

    #[test]
    fn what_waits_is_bounded_and_a_digest_fits_its_budget() {
        let mut n = notifier(0);
        // Accepted actions beyond what may wait are counted.
        for i in 0..(MAX_PENDING as u16 + 500) {
            n.tell(audit(i, false, Some("10.0.0.1")));
        }
        assert_eq!(n.told.len(), MAX_PENDING);
        let told = n.tick(S);
        let [Notice::Digest { notices, omitted }] = &told[..] else {
            panic!("{told:?}")
        };
        assert_eq!(notices.len() as u64 + omitted, MAX_PENDING as u64 + 500);
        let bytes = serde_json::to_vec(&told[0]).unwrap().len();
        assert!(bytes <= MAX_DIGEST_BYTES + 64, "{bytes}");
        assert!(
            told[0].text().starts_with("1500 changes: "),
            "{}",
            told[0].text()
        );
        assert!(
            told[0].text().ends_with("; and 1480 more"),
            "{}",
            told[0].text()
        );
        // Held within a period: bounded too.
        for second in 2..50u32 {
            for i in 0..100 {
                n.tell(audit(i, false, None));
            }
            assert!(n.tick(S * second).is_empty());
            assert!(n.held.len() <= MAX_PENDING);
        }
        let told = n.tick(61 * S);
        let [Notice::Digest { notices, omitted }] = &told[..] else {
            panic!("{told:?}")
        };
        assert_eq!(notices.len() as u64 + omitted, 4_800);
    }

    #[test]
    fn many_at_once_are_one_digest() {
        let mut n = notifier(0);
        for i in 0..8 {
            n.see(
                &result(&format!("d{i}"), Outage, false, &[]),
                Duration::ZERO,
            );
        }
        let told = n.tick(Duration::ZERO);
        assert_eq!(told.len(), 1);
        let Notice::Digest { notices, .. } = &told[0] else {
            panic!("{told:?}")
        };
        assert_eq!(notices.len(), 8);
        assert!(told[0]
            .text()
            .starts_with("8 changes: d0 is OUTAGE (was OK); d1"));
        let long = Notice::Digest {
            notices: vec![notices[0].clone(); 25],
            omitted: 0,
        };
        assert!(long.text().ends_with("; and 5 more"), "{}", long.text());
        assert_eq!(long.text().matches("is OUTAGE").count(), 20);
        assert!(n.tick(S).is_empty());
    }

    #[test]
    fn a_mass_outage_is_one_digest_a_minute() {
        let mut n = notifier(0);
        let mut told = Vec::new();
        // 1,000 dependencies failing over ten seconds, a hundred a second.
        for second in 0..10u32 {
            for i in 0..100 {
                let name = format!("d{}", second * 100 + i);
                n.see(&result(&name, Outage, false, &[]), S * second);
            }
            told.extend(
                n.tick(S * second)
                    .into_iter()
                    .map(|notice| (second, notice)),
            );
        }
        for second in 10..=130u32 {
            told.extend(
                n.tick(S * second)
                    .into_iter()
                    .map(|notice| (second, notice)),
            );
        }
        let digests: Vec<(u32, usize)> = told
            .iter()
            .map(|(at, notice)| match notice {
                Notice::Digest { notices, omitted } => (*at, notices.len() + *omitted as usize),
                other => panic!("alone: {other:?}"),
            })
            .collect();
        assert_eq!(
            digests,
            [(0, 100), (60, 900)],
            "all of them, at most one a minute"
        );
        // After a quiet period, a single change goes out alone again.
        n.see(&result("d1", Ok, false, &[]), S * 200);
        let alone = n.tick(S * 200);
        assert!(matches!(&alone[..], [Notice::Resolved { .. }]), "{alone:?}");
    }
}
