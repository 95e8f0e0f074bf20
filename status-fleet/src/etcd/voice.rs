//! The fleet's voice leases in etcd: a key a failing dependency, `{prefix}v/{dependency}`,
//! holding `open \n holder` or `resolved \n holder` under an etcd lease of the voice's TTL, so
//! that a holder that stops renewing it loses it with its lease. Every change is a
//! transaction on the revision read: two instances never both take it.

use std::time::Duration;

use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use status_core::Error;

use super::EtcdFleet;
use crate::{VoiceAsk, VoiceLease};

/// What a voice key holds, and what a transaction compares against.
struct Held {
    lease: VoiceLease,
    /// Its etcd lease, renewed by its holder.
    etcd_lease: i64,
    /// Its modification revision (0: no key).
    revision: i64,
}

/// A voice key's value; what no holder wrote is free.
fn parse(value: &[u8]) -> VoiceLease {
    let text = String::from_utf8_lossy(value);
    match text.split_once('\n') {
        Some(("open", holder)) if !holder.is_empty() => VoiceLease::Open(holder.to_owned()),
        Some(("resolved", holder)) => VoiceLease::Resolved(holder.to_owned()),
        _ => VoiceLease::Free,
    }
}

impl EtcdFleet {
    /// The voice lease `name`: see [`FleetStore::voice`](crate::FleetStore::voice).
    ///
    /// # Errors
    ///
    /// etcd unreachable, or a name that is not a dependency id.
    pub async fn voice(
        &self,
        name: &str,
        holder: &str,
        ask: VoiceAsk,
        ttl: Duration,
    ) -> Result<VoiceLease, Error> {
        status_core::DependencyId::new(name)?;
        let failed = |e: etcd_client::Error| {
            self.inner.store.failed();
            Error::unavailable(format!("the fleet's etcd failed: {e}"))
        };
        let mut client = self.inner.store.client().await.map_err(failed)?;
        let mut key = self.inner.prefix.clone();
        key.extend_from_slice(b"v/");
        key.extend_from_slice(name.as_bytes());
        let read = client.get(key.clone(), None).await.map_err(failed)?;
        let held = read.kvs().first().map_or(
            Held {
                lease: VoiceLease::Free,
                etcd_lease: 0,
                revision: 0,
            },
            |kv| Held {
                lease: parse(kv.value()),
                etcd_lease: kv.lease(),
                revision: kv.mod_revision(),
            },
        );
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
                return Ok(if left > 0 {
                    held.lease
                } else {
                    VoiceLease::Free
                });
            }
            _ => return Ok(held.lease),
        };
        let seconds = i64::try_from(ttl.as_secs().max(2)).unwrap_or(i64::MAX);
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
            return Box::pin(self.voice(name, holder, VoiceAsk::Peek, ttl)).await;
        }
        Ok(if state == "open" {
            VoiceLease::Open(holder.to_owned())
        } else {
            VoiceLease::Resolved(holder.to_owned())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_no_holder_wrote_is_free() {
        assert_eq!(parse(b"open\nweb-1"), VoiceLease::Open("web-1".into()));
        assert_eq!(
            parse(b"resolved\nweb-1"),
            VoiceLease::Resolved("web-1".into())
        );
        assert_eq!(parse(b"open\n"), VoiceLease::Free);
        assert_eq!(parse(b"garbage"), VoiceLease::Free);
        assert_eq!(parse(&[0xff, b'\n']), VoiceLease::Free);
    }
}
