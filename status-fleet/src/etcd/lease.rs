//! Leases and time: a lease id of this instance's own, one keepalive, the wall clock.

use etcd_client::{LeaseKeepAliveStream, LeaseKeeper};

/// A lease id of this instance's own: random, positive.
pub(super) fn lease_id() -> i64 {
    let random = status_core::Rng::from_entropy().next_u64() >> 1;
    i64::try_from(random).unwrap_or(1).max(1)
}

/// One keepalive on an open stream: the lease's TTL left (0: it expired).
pub(super) async fn keep_alive(
    keeper: &mut LeaseKeeper,
    stream: &mut LeaseKeepAliveStream,
) -> Result<i64, etcd_client::Error> {
    keeper.keep_alive().await?;
    match stream.message().await? {
        Some(answer) => Ok(answer.ttl()),
        None => Err(etcd_client::Error::LeaseKeepAliveError(
            "the keepalive stream ended".to_owned(),
        )),
    }
}

/// Now, in ms since the epoch.
pub(super) fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
