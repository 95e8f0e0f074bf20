//! The beat: what this instance publishes, when, and what it says of what the store answered.

#[allow(clippy::wildcard_imports)]
use super::*;

/// What wakes the beat loop.
pub(super) enum Wake {
    /// Its period: a beat.
    Tick,
    /// The registry's condition or holds may have changed: a beat, if they did.
    Registry,
    /// The store's counts moved: taken at once, no beat.
    Store,
    /// The registry is gone.
    Stop,
}

/// What the store is told of this instance.
pub(super) fn published(registry: &Registry) -> Published {
    let holds = registry
        .holds()
        .iter()
        .map(|h| h.source.as_str().to_owned())
        .collect();
    // Levels and weights as the registry's facts hold them.
    let facts = registry.facts();
    let mut failing: Vec<OwnFailure> = facts
        .dependencies()
        .iter()
        .filter(|d| d.impact() != CheckStatus::Ok)
        .map(|d| OwnFailure {
            dependency: FailingDependency::new(d.id().as_str(), d.level()),
            impact: d.impact(),
        })
        .collect();
    // The worst first: what weighs most on the condition, then the worst level, then by id.
    failing.sort_by(|a, b| {
        (b.impact, b.dependency.level)
            .cmp(&(a.impact, a.dependency.level))
            .then_with(|| a.dependency.id.cmp(&b.dependency.id))
    });
    Published {
        condition: registry.condition(),
        holds,
        failing,
    }
}

/// The store's next change, or never (a store without changes, or one whose sender is gone).
pub(super) async fn moved(changes: &mut Option<tokio::sync::watch::Receiver<()>>) {
    match changes {
        Some(receiver) => {
            if receiver.changed().await.is_err() {
                *changes = None;
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending().await,
    }
}

/// Beats every third of the TTL; between beats, publishes when this instance's condition or
/// holds change (when the tracker says), and takes the store's counts at once when it says
/// they moved. The rules are the tracker's; this only waits, calls the store and tells.
pub(super) async fn beat(
    fleet: Fleet,
    weak: status_core::WeakRegistry,
    mut events: tokio::sync::broadcast::Receiver<status_core::Event>,
    reporter: Option<Reporter>,
) {
    use tokio::sync::broadcast::error::RecvError;
    let ttl = fleet.ttl;
    let mut tick = tokio::time::interval(ttl / 3);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut changes = fleet.store.subscribe();
    loop {
        let wake = tokio::select! {
            _ = tick.tick() => Wake::Tick,
            event = events.recv() => match event {
                Ok(status_core::Event::Changed { .. } | status_core::Event::Drain(_)) | Err(RecvError::Lagged(_)) => Wake::Registry,
                Ok(_) => continue,
                Err(RecvError::Closed) => Wake::Stop,
            },
            () = moved(&mut changes) => Wake::Store,
        };
        let Some(registry) = weak.upgrade() else {
            return;
        };
        match wake {
            Wake::Stop => return,
            Wake::Store => {
                if let Some(counts) = fleet.store.counts() {
                    write(&fleet.tracker).counts_moved(Instant::now().into_std(), counts);
                    fleet.viewed.notify_waiters();
                }
                continue;
            }
            Wake::Registry => {
                let state = published(&registry);
                drop(registry);
                let at = read(&fleet.tracker).publish_at(Instant::now().into_std(), &state);
                let Some(at) = at else { continue };
                tokio::time::sleep_until(Instant::from_std(at)).await;
                // The periodic beat counts from this one.
                tick.reset();
            }
            Wake::Tick => drop(registry),
        }
        let Some(registry) = weak.upgrade() else {
            return;
        };
        let state = published(&registry);
        drop(registry);
        let me = write(&fleet.tracker).beating(Instant::now().into_std(), state);
        let started = Instant::now();
        let answer = match tokio::time::timeout(ttl / 3, fleet.store.beat(&me)).await {
            Ok(answer) => {
                if answer.is_ok() {
                    fleet.stats.beat(started.elapsed());
                }
                Answer::Answered(answer)
            }
            Err(_) => {
                // A late answer must not be read by the next beat: a new connection.
                fleet.store.reset().await;
                Answer::Late
            }
        };
        let told = write(&fleet.tracker).answered(Instant::now().into_std(), answer);
        fleet.viewed.notify_waiters();
        for note in &told.notes {
            say(&fleet, &me.instance_id, &me.datacenter, note);
        }
        if let Some(reporter) = &reporter {
            if reporter.record(told.outcome).is_none() {
                return;
            }
        }
    }
}

/// Logs and counts what the tracker noted: each run of trouble said once, counted always.
pub(super) fn say(fleet: &Fleet, instance: &str, datacenter: &str, note: &Note) {
    match note {
        Note::Skipped { reason, entries } => {
            fleet.stats.reject(*reason, *entries);
            tracing::warn!(
                %reason,
                entries,
                "the fleet store holds entries no instance wrote: skipped"
            );
        }
        Note::Healed(keys) => {
            fleet.stats.reject(Rejection::WrongType, *keys);
            tracing::warn!(
                keys,
                "the fleet store held keys of the wrong type: deleted, rebuilt by the next beats"
            );
        }
        // Counts of a store that lost its keys hold only the instances that beat since:
        // not the fleet. The last view goes stale meanwhile.
        Note::Settling => tracing::debug!("the fleet store is settling"),
        Note::StoreBack => tracing::info!("the fleet store answers again"),
        Note::IdBack => tracing::info!("this instance holds its id in the fleet again"),
        Note::IdTaken { error, first } => {
            fleet.stats.reject(Rejection::IdTaken, 1);
            // Said when it starts, not every beat: the dependency and the metric carry it.
            if *first {
                tracing::error!(instance, datacenter, "{error}");
            }
        }
        Note::Rejected(reason) => {
            fleet.stats.reject(*reason, 1);
            tracing::warn!(%reason, "the fleet store refused this instance's beat");
        }
        Note::StoreFailed { cause, first } => {
            fleet.stats.failures.fetch_add(1, Ordering::Relaxed);
            match cause {
                _ if !first => {}
                Some(e) => tracing::warn!("the fleet store failed: {e}"),
                None => tracing::warn!(
                    timeout_ms = (fleet.ttl / 3).as_millis(),
                    "the fleet store did not answer in time"
                ),
            }
        }
    }
}
