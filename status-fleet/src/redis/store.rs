//! The voice lease, and [`RedisFleet`] as a [`FleetStore`].

#[allow(clippy::wildcard_imports)]
use super::*;

impl RedisFleet {
    /// The voice lease of `dependency` in `datacenter`: see [`FleetStore::voice`].
    ///
    /// # Errors
    ///
    /// Redis unreachable, or an answer this client cannot read.
    pub async fn voice(
        &self,
        datacenter: &str,
        dependency: &str,
        holder: &str,
        ask: VoiceAsk,
        ttl: Duration,
    ) -> Result<VoiceAnswer, Error> {
        let op = match ask {
            VoiceAsk::Claim => "claim",
            VoiceAsk::TakeOver => "takeover",
            VoiceAsk::Resolve => "resolve",
            VoiceAsk::Peek => "peek",
        };
        let mut connection = self
            .connection()
            .await
            .map_err(|e| Error::unavailable(e.to_string()))?;
        let answer: Result<Vec<String>, _> = self
            .voice
            .key(&self.voice_key)
            .arg(op)
            // A tab is in no data center's name.
            .arg(format!("{datacenter}\t{dependency}"))
            .arg(holder)
            .arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1))
            .invoke_async(&mut connection)
            .await;
        let answer = match answer {
            Ok(answer) => answer,
            Err(e) => {
                self.reset().await;
                return Err(Error::unavailable(format!("the fleet store failed: {e}")));
            }
        };
        let [state, who, forged] = answer.as_slice() else {
            return Err(Error::unavailable("an answer this client cannot read"));
        };
        let lease = match state.as_str() {
            "free" => VoiceLease::Free,
            "open" => VoiceLease::Open(who.clone()),
            "resolved" => VoiceLease::Resolved(who.clone()),
            _ => return Err(Error::unavailable("an answer this client cannot read")),
        };
        Ok(VoiceAnswer {
            lease,
            forged: forged == "1",
        })
    }
}

impl FleetStore for RedisFleet {
    fn voice<'a>(
        &'a self,
        datacenter: &'a str,
        dependency: &'a str,
        holder: &'a str,
        ask: VoiceAsk,
        ttl: Duration,
    ) -> Boxed<'a, Result<VoiceAnswer, Error>> {
        Box::pin(RedisFleet::voice(
            self, datacenter, dependency, holder, ask, ttl,
        ))
    }

    fn ttl(&self) -> Duration {
        self.ttl
    }

    fn beat<'a>(&'a self, me: &'a InstanceSummary) -> Boxed<'a, Result<Beat, BeatError>> {
        Box::pin(RedisFleet::beat(self, me))
    }

    fn instances<'a>(&'a self, query: &'a InstanceQuery) -> Boxed<'a, Result<InstancePage, Error>> {
        Box::pin(RedisFleet::instances(self, query))
    }

    fn reset(&self) -> Boxed<'_, ()> {
        Box::pin(RedisFleet::reset(self))
    }

    fn describe(&self) -> String {
        RedisFleet::describe(self).to_owned()
    }

    fn look(&self) {
        RedisFleet::look(self);
    }
}
