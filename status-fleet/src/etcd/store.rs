//! [`EtcdFleet`] as a [`FleetStore`].

#[allow(clippy::wildcard_imports)]
use super::*;

impl FleetStore for EtcdFleet {
    fn ttl(&self) -> Duration {
        self.inner.ttl
    }

    fn beat<'a>(&'a self, me: &'a InstanceSummary) -> Boxed<'a, Result<Beat, BeatError>> {
        Box::pin(self.beat_once(me))
    }

    fn instances<'a>(&'a self, query: &'a InstanceQuery) -> Boxed<'a, Result<InstancePage, Error>> {
        Box::pin(self.page(query))
    }

    fn reset(&self) -> Boxed<'_, ()> {
        Box::pin(self.forget_keeper())
    }

    fn describe(&self) -> String {
        EtcdFleet::describe(self)
    }

    fn subscribe(&self) -> Option<tokio::sync::watch::Receiver<()>> {
        self.watching.then(|| self.inner.moved.subscribe())
    }

    fn counts(&self) -> Option<Vec<DatacenterCounts>> {
        self.inner.vouched().ok()
    }

    fn voice<'a>(
        &'a self,
        datacenter: &'a str,
        dependency: &'a str,
        holder: &'a str,
        ask: crate::VoiceAsk,
        ttl: Duration,
    ) -> Boxed<'a, Result<crate::VoiceAnswer, Error>> {
        Box::pin(EtcdFleet::voice(
            self, datacenter, dependency, holder, ask, ttl,
        ))
    }
}
