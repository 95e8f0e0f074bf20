//! The registry's inside: registering an entry, running and recording its checks, the
//! report, the schedulers and the watchdog's sweep.

// The registry's parts, as engine/mod.rs names them.
#[allow(clippy::wildcard_imports)]
use super::*;

impl Inner {
    /// Adds a dependency to the table, announces it, and starts the watchdog.
    pub(super) fn register(
        self: &Arc<Self>,
        info: Arc<DependencyInfo>,
        check: Option<Arc<dyn DynCheck>>,
    ) -> Result<Arc<Entry>, Error> {
        let entry = Arc::new(Entry::new(
            info,
            check,
            self.clock.now(),
            self.clock.wall(),
            self.config.transitions_kept,
        ));
        self.deps.insert(&entry)?;
        self.bus.emit(&Event::Added(Arc::clone(&entry.info)));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            self.ensure_watchdog(&runtime);
        }
        self.reevaluate_features();
        Ok(entry)
    }

    /// Starts a check of `entry`, or joins the one in flight; `None` for a passive one.
    pub(super) fn start_run(self: &Arc<Self>, entry: &Arc<Entry>) -> Option<RunFuture> {
        let check = Arc::clone(entry.check.as_ref()?);
        let mut slot = lock(&entry.inflight);
        if let Some(running) = slot.as_ref() {
            return Some(running.clone());
        }
        let weak = Arc::downgrade(self);
        let clock = self.clock.clone();
        let task_entry = Arc::clone(entry);
        let task = tokio::spawn(async move {
            let executed = run::execute(&clock, &task_entry.info, check).await;
            let recorded = weak
                .upgrade()
                .and_then(|inner| inner.record(&task_entry, executed));
            *lock(&task_entry.inflight) = None;
            recorded
        });
        let run = async move { task.await.ok().flatten() }.boxed().shared();
        *slot = Some(run.clone());
        Some(run)
    }

    /// Records a result, polled or pushed; `None` if the dependency was removed meanwhile.
    pub(super) fn record(
        &self,
        entry: &Arc<Entry>,
        executed: run::Executed,
    ) -> Option<Arc<CheckResult>> {
        let kind = executed.kind;
        let wall = self.clock.wall_at(executed.finished);
        let recorded = self.deps.record(entry, executed, wall, self.config.entry)?;
        self.bus.emit(&Event::Checked {
            result: Arc::clone(&recorded.result),
            outcome: kind,
        });
        if recorded.significant {
            let current = self.current(entry);
            log_change(recorded.previous, &current);
            self.bus.emit(&Event::Changed {
                previous: recorded.previous,
                current,
            });
            self.reevaluate_features();
        }
        Some(recorded.result)
    }

    /// The result of `entry` as reported now: staleness applied, causes from the cached report.
    pub(super) fn current(&self, entry: &Entry) -> Arc<CheckResult> {
        let now = self.clock.now();
        let mut view = lock(&entry.state).view(&entry.info, now);
        if let Some(mute) = self.mutes.in_force(&entry.info.id, now) {
            Arc::make_mut(&mut view).mute = Some(mute);
        }
        if view.status == CheckStatus::Ok || entry.info.parents.is_empty() {
            return view;
        }
        // From the ancestors' entries: recording one result never rebuilds the report.
        let blocked_by = graph::causes(&entry.info.parents, &|id: &crate::DependencyId| {
            let parent = self.deps.get(id.as_str())?;
            let status = lock(&parent.state).reported_status(&parent.info, now);
            Some((status, parent.info.parents.clone()))
        });
        if blocked_by.is_empty() {
            return view;
        }
        Arc::make_mut(&mut view).blocked_by = blocked_by;
        view
    }

    pub(super) fn report(&self, force: bool) -> Arc<SystemReport> {
        let now = self.clock.now();
        let (status_gen, check_gen) = self.deps.generations();
        let want = Wanted {
            now,
            status_gen,
            check_gen,
            max_age: (!force).then_some(self.config.report_max_age),
        };
        self.cache.get(want, || self.build_report(want))
    }

    pub(super) fn build_report(&self, want: Wanted) -> Cached {
        let Wanted {
            now,
            status_gen,
            check_gen,
            ..
        } = want;
        let entries = self.deps.all();
        // Rebuild at least hourly, so stale messages keep telling the right age.
        let mut valid_until = now + Duration::from_secs(3600);
        let mut results = Vec::with_capacity(entries.len());
        let mut parents = Vec::with_capacity(entries.len());
        for entry in &entries {
            let info = entry.info();
            let state = lock(&entry.state);
            let ages_at = state.ages_at(info);
            if ages_at > now {
                valid_until = valid_until.min(ages_at);
            }
            let mut view = state.view(info, now);
            if let Some(mute) = self.mutes.in_force(&info.id, now) {
                Arc::make_mut(&mut view).mute = Some(mute);
            }
            results.push(view);
            parents.push(info.parents.as_slice());
        }
        if let Some(edge) = self.mutes.next_edge(now) {
            valid_until = valid_until.min(edge);
        }
        graph::attribute_causes(&mut results, &parents);
        let report = SystemReport::new(
            self.config.hostname.clone(),
            self.config.appname.clone(),
            self.clock.wall_at(now),
            results,
        );
        Cached {
            report: Arc::new(report),
            status_gen,
            check_gen,
            built_at: now,
            valid_until,
        }
    }

    pub(super) fn start_scheduler(
        self: &Arc<Self>,
        runtime: &tokio::runtime::Handle,
        entry: &Arc<Entry>,
    ) {
        let rng = self.rng.derive(&format!("jitter/{}", entry.info.id));
        let task = runtime.spawn(schedule(
            Arc::downgrade(self),
            Arc::clone(entry),
            Jitter::new(rng, self.config.jitter),
        ));
        *lock(&entry.scheduler) = Some(task.abort_handle());
    }

    pub(super) fn ensure_watchdog(self: &Arc<Self>, runtime: &tokio::runtime::Handle) {
        let mut watchdog = lock(&self.watchdog);
        if watchdog.is_none() {
            let task = runtime.spawn(watch(Arc::downgrade(self), self.config.watchdog_interval));
            *watchdog = Some(task.abort_handle());
        }
    }

    /// Marks results that turned stale or idle, ends holds that ran out, and restarts a
    /// scheduler that died.
    pub(super) fn sweep(self: &Arc<Self>) {
        self.expire_holds(); // drops and announces a hold that ran out
        self.sweep_mutes(); // and a window that started or ended
        let now = self.clock.now();
        for entry in self.deps.all() {
            let dead = lock(&entry.scheduler)
                .as_ref()
                .is_some_and(AbortHandle::is_finished);
            if dead && self.deps.is_registered(&entry) {
                tracing::error!(dependency = %entry.info.id, "scheduler stopped; restarting it");
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    self.start_scheduler(&runtime, &entry);
                }
            }
        }
        let changed = self.deps.sweep_aged(now);
        if changed.is_empty() {
            return;
        }
        for (entry, previous) in changed {
            let current = self.current(&entry);
            log_change(Some(previous), &current);
            self.bus.emit(&Event::Changed {
                previous: Some(previous),
                current,
            });
        }
        self.reevaluate_features();
    }
}

/// One line in the application's log for a dependency's change of level, with its cause:
/// INFO for a recovery, WARN for MINOR and MAJOR, ERROR for OUTAGE. A first result that is
/// OK is no change worth a line.
fn log_change(previous: Option<CheckStatus>, current: &CheckResult) {
    let to = current.status();
    if previous == Some(to) || (previous.is_none() && to == CheckStatus::Ok) {
        return;
    }
    let id = current.id();
    let was = previous.map_or("unchecked", CheckStatus::as_str);
    let cause = current.message_with_cause();
    let stale = if current.stale { " (stale)" } else { "" };
    let muted = if current.mute().is_some() {
        " (muted)"
    } else {
        ""
    };
    match to {
        CheckStatus::Ok => {
            tracing::info!(dependency = %id, from = was, "{id} is OK again (was {was})");
        }
        CheckStatus::Minor | CheckStatus::Major => tracing::warn!(
            dependency = %id,
            from = was,
            to = %to,
            "{id} is {to} (was {was}){stale}{muted}: {cause}"
        ),
        CheckStatus::Outage => tracing::error!(
            dependency = %id,
            from = was,
            "{id} is OUTAGE (was {was}){stale}{muted}: {cause}"
        ),
    }
}
