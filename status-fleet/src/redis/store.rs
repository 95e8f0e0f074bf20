//! The voice lease, and [`RedisFleet`] as a [`FleetStore`].

#[allow(clippy::wildcard_imports)]
use super::*;

impl RedisFleet {
    /// The voice lease `name`: see [`FleetStore::voice`].
    ///
    /// # Errors
    ///
    /// Redis unreachable, or an answer this client cannot read.
    pub async fn voice(
        &self,
        name: &str,
        holder: &str,
        ask: VoiceAsk,
        ttl: Duration,
    ) -> Result<VoiceLease, Error> {
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
            .arg(name)
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
        match answer.as_slice() {
            [state, _] if state == "free" => Ok(VoiceLease::Free),
            [state, who] if state == "open" => Ok(VoiceLease::Open(who.clone())),
            [state, who] if state == "resolved" => Ok(VoiceLease::Resolved(who.clone())),
            _ => Err(Error::unavailable("an answer this client cannot read")),
        }
    }
}

impl FleetStore for RedisFleet {
    fn voice<'a>(
        &'a self,
        name: &'a str,
        holder: &'a str,
        ask: VoiceAsk,
        ttl: Duration,
    ) -> Boxed<'a, Result<VoiceLease, Error>> {
        Box::pin(RedisFleet::voice(self, name, holder, ask, ttl))
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
}
