//! Objectives read from the history: each window's buckets, the store's and the running
//! process's, summed into a report; the alarms told each report, kept across a restart, and
//! their changes broadcast (a notifier tells them); the task that reads them all on a beat.

use std::sync::Mutex;
use std::time::Duration;

use status_core::WeakRegistry;
use tokio::sync::broadcast;

use super::History;
use crate::model::Tier;
use crate::objective::{AlarmChange, Alarms, Objective, SloReport, Windows};
use crate::Error;

/// The key the alarms firing are kept under ([`History::put_state`]).
pub const ALARMS_KEY: &str = "slo.alarms";

/// How often every objective is read, so that alerts start and end with nobody asking.
pub const SLO_EVERY: Duration = Duration::from_secs(15);

/// The objectives and their alarms, shared by every clone of a history.
#[derive(Debug)]
pub(crate) struct Slos {
    pub(crate) objectives: Vec<Objective>,
    /// `None` until what the last run kept is read back: alarms told before would start
    /// anew and be told twice.
    alarms: Mutex<Option<Alarms>>,
    /// Set once the alarms the last run kept are read back, by the beat or the first read.
    restored: tokio::sync::OnceCell<()>,
    changes: broadcast::Sender<AlarmChange>,
    /// Every objective's report as last read together.
    last: Mutex<Vec<SloReport>>,
}

impl Slos {
    pub(crate) fn new(objectives: Vec<Objective>) -> Self {
        Self {
            objectives,
            alarms: Mutex::new(None),
            restored: tokio::sync::OnceCell::new(),
            changes: broadcast::channel(256).0,
            last: Mutex::new(Vec::new()),
        }
    }
}

impl History {
    /// The objectives declared ([`HistoryBuilder::objectives`](crate::HistoryBuilder::objectives)).
    #[must_use]
    pub fn objectives(&self) -> &[Objective] {
        &self.shared.slos.objectives
    }

    /// What every declared objective reports now, in the order declared, each alert's
    /// `since` filled by the alarms (what starts or ends is broadcast to
    /// [`alarms`](Self::alarms)).
    ///
    /// # Errors
    ///
    /// [`Error::is_store`] when the store fails.
    pub async fn slos(&self) -> Result<Vec<SloReport>, Error> {
        let mut reports = Vec::with_capacity(self.objectives().len());
        for objective in self.objectives() {
            reports.push(self.slo(objective).await?);
        }
        self.restore_alarms().await;
        self.tell_alarms(&mut reports);
        let mut last = crate::sync::lock(&self.shared.slos.last);
        if last
            .first()
            .is_none_or(|l| reports.first().is_none_or(|r| l.at <= r.at))
        {
            last.clone_from(&reports);
        }
        drop(last);
        Ok(reports)
    }

    /// Every objective's report as last read together ([`slos`](Self::slos), by the beat
    /// every [`SLO_EVERY`] or a reader): what a scrape shows without reading the store.
    /// Empty before the first read.
    #[must_use]
    pub fn last_slos(&self) -> Vec<SloReport> {
        crate::sync::lock(&self.shared.slos.last).clone()
    }

    /// What the objective named `name` reports now; `None` when none is declared by that
    /// name.
    ///
    /// # Errors
    ///
    /// As [`slos`](Self::slos).
    pub async fn slo_named(&self, name: &str) -> Result<Option<SloReport>, Error> {
        let Some(objective) = self.objectives().iter().find(|o| o.name() == name) else {
            return Ok(None);
        };
        let mut report = [self.slo(objective).await?];
        self.restore_alarms().await;
        self.tell_alarms(&mut report);
        let [report] = report;
        Ok(Some(report))
    }

    /// Each alert that starts or ends, once, as the objectives are read (every
    /// [`SLO_EVERY`] once [attached](Self::attach), and at every read). A receiver that lags
    /// past 256 changes misses the oldest.
    #[must_use]
    pub fn alarms(&self) -> broadcast::Receiver<AlarmChange> {
        self.shared.slos.changes.subscribe()
    }

    /// Reads back, once, the alarms the last run kept (waiting for the store at most 10 s;
    /// none kept, or a store that did not open in time, starts with none firing).
    async fn restore_alarms(&self) {
        let slos = &self.shared.slos;
        slos.restored
            .get_or_init(async || {
                let kept = self
                    .state(ALARMS_KEY, Duration::from_secs(10))
                    .await
                    .unwrap_or_default();
                *crate::sync::lock(&slos.alarms) = Some(Alarms::from_kept(&kept));
            })
            .await;
    }

    fn tell_alarms(&self, reports: &mut [SloReport]) {
        let slos = &self.shared.slos;
        let mut guard = crate::sync::lock(&slos.alarms);
        let Some(alarms) = guard.as_mut() else {
            return;
        };
        let before = alarms.to_kept();
        let changes: Vec<AlarmChange> = reports.iter_mut().flat_map(|r| alarms.tell(r)).collect();
        let after = alarms.to_kept();
        drop(guard);
        if after != before {
            self.put_state(ALARMS_KEY, after);
        }
        for change in changes {
            let _ = slos.changes.send(change);
        }
    }

    /// What `objective` reports now: bad and observed time over its window and each burn
    /// window, from the buckets kept and what this process has not written yet (a read never
    /// lags the probes), each window read from the finest tier kept at its start, as uptime
    /// is. Its alerts fire by the burn rates; `since` is left to the alarms
    /// ([`slos`](Self::slos) fills it).
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] when its window starts before what is kept; [`Error::is_store`]
    /// when the store fails.
    pub async fn slo(&self, objective: &Objective) -> Result<SloReport, Error> {
        let now = self.now();
        let windows = Windows::of(objective, now, &self.shared.builder.retention)?;
        let mut read = Vec::new();
        for (tier, from, to) in windows.reads() {
            let buckets = self
                .live_buckets(objective.target(), tier, from, to)
                .await?;
            read.push((tier, buckets));
        }
        let buckets_of = |tier: Tier| {
            read.iter()
                .find(|(t, _)| *t == tier)
                .map_or(&[][..], |(_, b)| b.as_slice())
        };
        let (spent, burns) = windows.spent(buckets_of);
        Ok(SloReport::of(objective, now, &spent, &burns))
    }
}

/// Reads back the alarms the last run kept, then reads every objective every
/// [`SLO_EVERY`] until the registry is gone.
pub(super) async fn beat(history: History, registry: WeakRegistry) {
    history.restore_alarms().await;
    let mut failing = false;
    let mut every = tokio::time::interval(SLO_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        if registry.upgrade().is_none() {
            return;
        }
        match history.slos().await {
            Ok(_) => {
                if std::mem::take(&mut failing) {
                    tracing::info!("objectives are read again");
                }
            }
            Err(e) => {
                if !std::mem::replace(&mut failing, true) {
                    tracing::warn!("objectives could not be read, their alerts wait: {e}");
                }
            }
        }
    }
}

pub(super) fn start(history: &History, registry: WeakRegistry) {
    if !history.objectives().is_empty() {
        tokio::spawn(beat(history.clone(), registry));
    }
}

/// Objectives by name, a later one replacing an earlier one of the same name.
pub(super) fn by_name(objectives: impl IntoIterator<Item = Objective>) -> Vec<Objective> {
    let mut out: Vec<Objective> = Vec::new();
    for o in objectives {
        match out.iter_mut().find(|k| k.name() == o.name()) {
            Some(kept) => *kept = o,
            None => out.push(o),
        }
    }
    out
}
