//! A fleet of instances, each following status-fleet's real [`FleetTracker`], beating into a
//! modelled store in virtual time: how long views stay stale when the store is lost, when
//! they fail open, and how fast a data center's failure reaches every instance.
//!
//! The store is a model, not Redis: it keeps each instance's last summary and answers a beat
//! with every data center's fresh instances counted (fresh: a beat younger than the TTL).
//! Lost, it never answers (each beat is late, a third of the TTL later); back, it is empty
//! and settling for a TTL (its counts hold only the instances that beat since), as a Redis
//! that restarted without persistence tells the tracker.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::time::{Duration, Instant};

use status_core::{CheckStatus, Rng};
use status_fleet::{
    Answer, Beat, Conditions, DatacenterCounts, FleetTracker, HealthRule, Member, Published,
    REJECTIONS,
};

use crate::Ms;

/// What happens to the fleet, and when.
#[derive(Debug, Clone)]
pub struct FleetScenario {
    /// Instances, spread evenly over the data centers.
    pub instances: usize,
    /// Data centers, `dc-0`, `dc-1`, …
    pub datacenters: usize,
    /// How long a record lives in the store.
    pub ttl: Ms,
    /// How long the store takes to answer a beat.
    pub latency: Ms,
    /// When the store is lost, and when it comes back (empty, settling for a TTL).
    pub store_lost: Option<(Ms, Ms)>,
    /// When every instance of `dc-1` goes OUTAGE, and when it recovers.
    pub datacenter_fails: Option<(Ms, Ms)>,
    /// How long the run lasts.
    pub duration: Ms,
    /// Every how long the instances' views are sampled.
    pub sample_every: Ms,
    /// The seed of the beats' phases.
    pub seed: u64,
}

impl Default for FleetScenario {
    /// 1,000 instances in three data centers, a TTL of 3 s; the store lost from 20 s to 30 s;
    /// `dc-1` failing from 45 s to 55 s; 70 s in all.
    fn default() -> Self {
        Self {
            instances: 1_000,
            datacenters: 3,
            ttl: 3_000,
            latency: 2,
            store_lost: Some((20_000, 30_000)),
            datacenter_fails: Some((45_000, 55_000)),
            duration: 70_000,
            sample_every: 100,
            seed: 1,
        }
    }
}

/// The instances' views at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sample {
    /// Virtual time.
    pub at: Ms,
    /// Instances whose view is fresh.
    pub fresh: usize,
    /// Instances whose view is stale (failing open or not).
    pub stale: usize,
    /// Instances whose view fails open.
    pub fail_open: usize,
    /// Instances whose view says `dc-1` should not get traffic.
    pub dc1_out: usize,
}

/// One beat or its answer, in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    /// Instance `i` beats, if `generation` is still its schedule's.
    Beat { i: usize, generation: u64 },
    /// The store's answer to instance `i`'s beat reaches it.
    Answer { i: usize },
}

/// The modelled store.
#[derive(Debug, Default)]
struct Store {
    /// Each instance's last beat: when, its data center, condition and whether serving.
    records: BTreeMap<usize, (Ms, usize, CheckStatus, bool)>,
    /// Until when it is settling.
    settling_until: Ms,
}

impl Store {
    fn counts(&self, now: Ms, ttl: Ms, datacenters: usize) -> Vec<DatacenterCounts> {
        let mut counts: Vec<DatacenterCounts> = (0..datacenters)
            .map(|dc| DatacenterCounts::new(format!("dc-{dc}"), Conditions::default(), 0))
            .collect();
        for &(at, dc, condition, serving) in self.records.values() {
            if now.saturating_sub(at) < ttl {
                counts[dc].conditions.add(condition);
                counts[dc].serving += usize::from(serving);
            }
        }
        counts.retain(|c| c.conditions.total() > 0);
        counts
    }
}

/// Runs `scenario`: the instances' views, sampled every `sample_every`.
#[must_use]
pub fn run(scenario: &FleetScenario) -> Vec<Sample> {
    let s = scenario;
    let base = Instant::now();
    let at = |ms: Ms| base + Duration::from_millis(ms);
    let ttl = Duration::from_millis(s.ttl);
    let dc_of = |i: usize| i % s.datacenters.max(1);
    let mut trackers: Vec<FleetTracker> = (0..s.instances)
        .map(|i| {
            let member = Member {
                instance_id: format!("i-{i}"),
                datacenter: format!("dc-{}", dc_of(i)),
                version: "1".into(),
                url: String::new(),
            };
            FleetTracker::new(member, HealthRule::default(), ttl, at(0), CheckStatus::Ok)
        })
        .collect();
    let mut generation = vec![0u64; s.instances];
    let mut pending: Vec<Option<Answer>> = vec![None; s.instances];
    let mut queue: BinaryHeap<Reverse<(Ms, u64, Due)>> = BinaryHeap::new();
    let mut order = 0u64;
    let mut push = |queue: &mut BinaryHeap<_>, t: Ms, due: Due| {
        order += 1;
        queue.push(Reverse((t, order, due)));
    };
    let mut rng = Rng::new(s.seed).derive("fleet phases");
    for i in 0..s.instances {
        push(
            &mut queue,
            rng.below(s.ttl / 3),
            Due::Beat { i, generation: 0 },
        );
    }
    let condition = |i: usize, t: Ms| match s.datacenter_fails {
        Some((from, to)) if dc_of(i) == 1 && (from..to).contains(&t) => CheckStatus::Outage,
        _ => CheckStatus::Ok,
    };
    let lost = |t: Ms| {
        s.store_lost
            .is_some_and(|(from, to)| (from..to).contains(&t))
    };
    // The moments an instance's condition changes: it publishes then, as the tracker says.
    let mut changes: Vec<Ms> = s
        .datacenter_fails
        .map(|(from, to)| vec![from, to])
        .unwrap_or_default();
    changes.sort_unstable();
    let mut store = Store::default();
    let mut samples = Vec::new();
    let mut next_sample = 0;
    let mut next_change = changes.into_iter().peekable();
    loop {
        let due_at = queue.peek().map_or(Ms::MAX, |Reverse((t, _, _))| *t);
        let change_at = next_change.peek().copied().unwrap_or(Ms::MAX);
        let now = due_at.min(next_sample).min(change_at);
        if now > s.duration {
            break;
        }
        if now == next_sample {
            samples.push(sample(&trackers, at(now), now));
            next_sample += s.sample_every.max(1);
            continue;
        }
        if now == change_at {
            next_change.next();
            for i in (0..s.instances).filter(|&i| dc_of(i) == 1) {
                let state = published(condition(i, now));
                if let Some(when) = trackers[i].publish_at(at(now), &state) {
                    generation[i] += 1;
                    let t = now + (when - at(now)).as_millis() as Ms;
                    let g = generation[i];
                    push(&mut queue, t, Due::Beat { i, generation: g });
                }
            }
            continue;
        }
        let Some(Reverse((_, _, due))) = queue.pop() else {
            break;
        };
        match due {
            Due::Beat { i, generation: g } if g == generation[i] => {
                let c = condition(i, now);
                trackers[i].beating(at(now), published(c));
                let (answer, after) = if lost(now) {
                    (Answer::Late, s.ttl / 3)
                } else {
                    if let Some((_, back)) = s.store_lost {
                        if now >= back && store.settling_until == 0 {
                            // Back, and empty: settling for a TTL.
                            store.records.clear();
                            store.settling_until = back + s.ttl;
                        }
                    }
                    store
                        .records
                        .insert(i, (now, dc_of(i), c, c != CheckStatus::Outage));
                    let mut beat = Beat::kept(
                        now,
                        store.counts(now, s.ttl, s.datacenters),
                        [0; REJECTIONS.len()],
                    );
                    beat.settling = now < store.settling_until;
                    (Answer::Answered(Ok(beat)), s.latency)
                };
                pending[i] = Some(answer);
                push(&mut queue, now + after, Due::Answer { i });
                generation[i] += 1;
                let g = generation[i];
                push(&mut queue, now + s.ttl / 3, Due::Beat { i, generation: g });
            }
            Due::Beat { .. } => {}
            Due::Answer { i } => {
                if let Some(answer) = pending[i].take() {
                    let _ = trackers[i].answered(at(now), answer);
                }
            }
        }
    }
    samples
}

fn published(condition: CheckStatus) -> Published {
    Published::new(condition, Vec::new())
}

fn sample(trackers: &[FleetTracker], now: Instant, at: Ms) -> Sample {
    let mut sample = Sample {
        at,
        ..Sample::default()
    };
    for tracker in trackers {
        let view = tracker.view(now);
        if view.stale {
            sample.stale += 1;
        } else {
            sample.fresh += 1;
        }
        sample.fail_open += usize::from(view.fail_open);
        let out = view
            .datacenter("dc-1")
            .is_some_and(|dc| !dc.answers_healthy());
        sample.dc1_out += usize::from(out);
    }
    sample
}

/// The figures a reader looks for in a run: when the first and the last instance saw each
/// thing, relative to its cause.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Figures {
    /// After the store was lost: the first and the last instance with a stale view.
    pub stale: Option<(Ms, Ms)>,
    /// After the store was lost: the first and the last instance failing open.
    pub fail_open: Option<(Ms, Ms)>,
    /// After the store came back: when every view was fresh again.
    pub fresh_again: Option<Ms>,
    /// After `dc-1` failed: the first and the last instance to take it out.
    pub dc1_out: Option<(Ms, Ms)>,
    /// After `dc-1` recovered: when every instance sent it traffic again.
    pub dc1_back: Option<Ms>,
}

/// What `samples` of `scenario` amount to (each time relative to its cause).
#[must_use]
pub fn figures(scenario: &FleetScenario, samples: &[Sample]) -> Figures {
    let n = scenario.instances;
    let first_last = |from: Ms, to: Ms, count: &dyn Fn(&Sample) -> usize| {
        let window = samples.iter().filter(|s| (from..to).contains(&s.at));
        let first = window.clone().find(|s| count(s) > 0)?.at - from;
        let last = window.clone().find(|s| count(s) == n)?.at - from;
        Some((first, last))
    };
    let all_after = |from: Ms, ok: &dyn Fn(&Sample) -> bool| {
        samples
            .iter()
            .find(|s| s.at >= from && ok(s))
            .map(|s| s.at - from)
    };
    let mut figures = Figures::default();
    if let Some((lost, back)) = scenario.store_lost {
        figures.stale = first_last(lost, back + scenario.ttl * 2, &|s| s.stale);
        figures.fail_open = first_last(lost, back + scenario.ttl * 2, &|s| s.fail_open);
        figures.fresh_again = all_after(back, &|s| s.fresh == n);
    }
    if let Some((fails, recovers)) = scenario.datacenter_fails {
        figures.dc1_out = first_last(fails, recovers, &|s| s.dc1_out);
        figures.dc1_back = all_after(recovers, &|s| s.dc1_out == 0);
    }
    figures
}

/// The run as an SVG chart: the share of instances whose view is fresh, stale, failing open,
/// and that take `dc-1` out, over time, with the store's loss and `dc-1`'s failure shaded.
#[must_use]
pub fn chart(scenario: &FleetScenario, samples: &[Sample]) -> String {
    #[allow(clippy::cast_precision_loss)]
    let n = scenario.instances.max(1) as f64;
    #[allow(clippy::cast_precision_loss)]
    let line = |name: &str, count: &dyn Fn(&Sample) -> usize| crate::Series {
        name: name.to_owned(),
        points: samples
            .iter()
            .map(|s| (s.at as f64 / 1e3, count(s) as f64 / n))
            .collect(),
    };
    let series = [
        line("view fresh", &|s| s.fresh),
        line("view stale", &|s| s.stale),
        line("view failing open", &|s| s.fail_open),
        line("dc-1 taken out", &|s| s.dc1_out),
    ];
    #[allow(clippy::cast_precision_loss)]
    let span = |name: &str, (from, to): (Ms, Ms)| crate::Span {
        name: name.to_owned(),
        from: from as f64 / 1e3,
        to: to as f64 / 1e3,
    };
    let mut spans = Vec::new();
    if let Some(lost) = scenario.store_lost {
        spans.push(span("store lost", lost));
    }
    if let Some(fails) = scenario.datacenter_fails {
        spans.push(span("dc-1 OUTAGE", fails));
    }
    crate::time_chart(
        &format!(
            "{} instances, {} data centers, TTL {} s: what their fleet views say",
            scenario.instances,
            scenario.datacenters,
            scenario.ttl as f64 / 1e3
        ),
        "share of instances, by virtual time",
        &series,
        &spans,
    )
}
