//! The fleet's voice leases in etcd: a key per data center and failing dependency,
//! `{prefix}v/{dc}\0{dependency}`, holding `open \n holder` or `resolved \n holder` under
//! an etcd lease of the voice's TTL, so that a holder that stops renewing it loses it with its
//! lease. Every change is a transaction on the revision read: two instances never both take
//! it. A key no instance could have written (a value none writes, no etcd lease, or one
//! granted for longer than twice the TTL) is free, and said to be forged.

use std::time::Duration;

use etcd_client::{Client, Compare, CompareOp, PutOptions, Txn, TxnOp};
use status_core::Error;

use super::EtcdFleet;
use crate::sync::lock;
use crate::{VoiceAnswer, VoiceAsk, VoiceLease};

/// The most etcd leases whose granted TTL is remembered (a lease's grant never changes).
const MAX_GRANTS: usize = 1024;

/// What a voice key holds, and what a transaction compares against.
struct Held {
    lease: VoiceLease,
    /// Its etcd lease, renewed by its holder.
    etcd_lease: i64,
    /// Its modification revision (0: no key).
    revision: i64,
    /// What it holds no instance could have written: taken as free.
    forged: bool,
}

/// A voice key's value; what no holder wrote is `None`.
fn parse(value: &[u8]) -> Option<VoiceLease> {
    let text = std::str::from_utf8(value).ok()?;
    match text.split_once('\n') {
        Some(("open", holder)) if !holder.is_empty() => Some(VoiceLease::Open(holder.to_owned())),
        Some(("resolved", holder)) => Some(VoiceLease::Resolved(holder.to_owned())),
        _ => None,
    }
}

impl EtcdFleet {
    /// The voice lease of `dependency` in `datacenter`: see
    /// [`FleetStore::voice`](crate::FleetStore::voice).
    ///
    /// # Errors
    ///
    /// etcd unreachable, or a name that is not a dependency id.
    pub async fn voice(
        &self,
        datacenter: &str,
        dependency: &str,
        holder: &str,
        ask: VoiceAsk,
        ttl: Duration,
    ) -> Result<VoiceAnswer, Error> {
        status_core::DependencyId::new(dependency)?;
        let failed = |e: etcd_client::Error| {
            self.inner.store.failed();
            Error::unavailable(format!("the fleet's etcd failed: {e}"))
        };
        let mut client = self.inner.store.client().await.map_err(failed)?;
        let mut key = self.inner.prefix.clone();
        key.extend_from_slice(b"v/");
        key.extend_from_slice(datacenter.as_bytes());
        key.push(0);
        key.extend_from_slice(dependency.as_bytes());
        let seconds = i64::try_from(ttl.as_secs().max(2)).unwrap_or(i64::MAX);
        let held = self
            .held(&mut client, &key, holder, seconds)
            .await
            .map_err(failed)?;
        let forged = held.forged;
        let mine = matches!(&held.lease, VoiceLease::Open(who) if who == holder);
        let state = match (ask, &held.lease) {
            (VoiceAsk::Claim, VoiceLease::Free | VoiceLease::Resolved(_))
            | (VoiceAsk::TakeOver, VoiceLease::Free) => "open",
            (VoiceAsk::Resolve, _) if mine => "resolved",
            (VoiceAsk::Claim | VoiceAsk::TakeOver, _) if mine => {
                // Renewed: one keepalive of its etcd lease.
                let (mut keeper, mut stream) = client
                    .lease_keep_alive(held.etcd_lease)
                    .await
                    .map_err(failed)?;
                let left = super::lease::keep_alive(&mut keeper, &mut stream)
                    .await
                    .map_err(failed)?;
                let lease = if left > 0 {
                    held.lease
                } else {
                    VoiceLease::Free
                };
                return Ok(VoiceAnswer { lease, forged });
            }
            _ => {
                return Ok(VoiceAnswer {
                    lease: held.lease,
                    forged,
                })
            }
        };
        let lease = client
            .lease_grant(seconds, None)
            .await
            .map_err(failed)?
            .id();
        let value = format!("{state}\n{holder}");
        let answer = client
            .txn(
                Txn::new()
                    .when([Compare::mod_revision(
                        key.clone(),
                        CompareOp::Equal,
                        held.revision,
                    )])
                    .and_then([TxnOp::put(
                        key,
                        value,
                        Some(PutOptions::new().with_lease(lease)),
                    )]),
            )
            .await
            .map_err(failed)?;
        if !answer.succeeded() {
            // Another instance moved it first: its answer is the lease's state now.
            let _ = client.lease_revoke(lease).await;
            let now = Box::pin(self.voice(datacenter, dependency, holder, VoiceAsk::Peek, ttl));
            return now.await.map(|now| VoiceAnswer {
                forged: forged || now.forged,
                ..now
            });
        }
        let lease = if state == "open" {
            VoiceLease::Open(holder.to_owned())
        } else {
            VoiceLease::Resolved(holder.to_owned())
        };
        Ok(VoiceAnswer { lease, forged })
    }

    /// What the voice key `key` holds for `holder`, whose leases last `seconds`: another's
    /// lease is believed only under an etcd lease granted for at most twice that.
    async fn held(
        &self,
        client: &mut Client,
        key: &[u8],
        holder: &str,
        seconds: i64,
    ) -> Result<Held, etcd_client::Error> {
        let read = client.get(key, None).await?;
        let Some(kv) = read.kvs().first() else {
            return Ok(Held {
                lease: VoiceLease::Free,
                etcd_lease: 0,
                revision: 0,
                forged: false,
            });
        };
        let mut held = Held {
            lease: VoiceLease::Free,
            etcd_lease: kv.lease(),
            revision: kv.mod_revision(),
            forged: true,
        };
        let Some(lease) = parse(kv.value()) else {
            return Ok(held);
        };
        if kv.lease() == 0 {
            return Ok(held);
        }
        let ours =
            matches!(&lease, VoiceLease::Open(who) | VoiceLease::Resolved(who) if who == holder);
        if !ours {
            let granted = lock(&self.inner.voice_grants).get(&kv.lease()).copied();
            let granted = match granted {
                Some(granted) => granted,
                None => {
                    let granted = client
                        .lease_time_to_live(kv.lease(), None)
                        .await?
                        .granted_ttl();
                    let mut grants = lock(&self.inner.voice_grants);
                    if grants.len() >= MAX_GRANTS {
                        grants.clear();
                    }
                    grants.insert(kv.lease(), granted);
                    granted
                }
            };
            if granted > seconds.saturating_mul(2) {
                return Ok(held);
            }
        }
        held.lease = lease;
        held.forged = false;
        Ok(held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_no_holder_wrote_is_none() {
        assert_eq!(
            parse(b"open\nweb-1"),
            Some(VoiceLease::Open("web-1".into()))
        );
        assert_eq!(
            parse(b"resolved\nweb-1"),
            Some(VoiceLease::Resolved("web-1".into()))
        );
        assert_eq!(parse(b"open\n"), None);
        assert_eq!(parse(b"garbage"), None);
        assert_eq!(parse(&[0xff, b'\n']), None);
    }
}
