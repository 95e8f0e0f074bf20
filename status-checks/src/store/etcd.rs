//! An etcd the fleet shares: one cluster, named by its members' URLs. Calls go to one member
//! at a time (a client a member, made when first needed); a call that fails moves the next
//! ones to the next member, so a member lost, or cut off from the majority, is left within a
//! call. Every call has a deadline; a member that loses its leader refuses
//! (`require_leader`), so that a minority never answers from a frozen state; HTTP/2 pings find
//! a dead connection within seconds.

use std::time::Duration;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use etcd_client::{Client, ConnectOptions};
use tokio::sync::OnceCell;

use status_core::Error;

/// Where an etcd cluster is, and a client a member, made when first needed. Clones share the
/// clients (their connections) and the member calls go to.
#[derive(Clone)]
pub struct EtcdStore {
    endpoints: Arc<[String]>,
    timeout: Duration,
    /// A client a member, made when first needed.
    clients: Arc<[OnceCell<Client>]>,
    /// The member calls go to.
    current: Arc<AtomicUsize>,
    described: String,
}

impl std::fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStore")
            .field("at", &self.described)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// One etcd member's URL, `http://host:port` or `https://…`, without a trailing slash.
///
/// # Errors
///
/// [`Error::is_invalid`] for another scheme, credentials in the URL, or no host and port.
pub(crate) fn endpoint(raw: &str) -> Result<String, Error> {
    let rest = raw
        .strip_prefix("http://")
        .or_else(|| raw.strip_prefix("https://"))
        .ok_or_else(|| {
            Error::invalid(format!(
                "not an etcd URL (http://host:port): {}",
                status_core::mask_credentials(raw)
            ))
        })?;
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.contains('@') {
        return Err(Error::invalid(
            "etcd URLs carry no credentials: etcd's own authentication is not supported yet",
        ));
    }
    let port_ok = authority
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    if !port_ok {
        return Err(Error::invalid(format!(
            "an etcd URL needs a host and a port: {raw}"
        )));
    }
    Ok(raw.trim_end_matches('/').to_owned())
}

impl EtcdStore {
    /// The etcd whose members are at `urls` (`http://host:2379`, several separated by
    /// commas); each call answers within `timeout` or fails.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] if `urls` is empty or one is not an `http://` or `https://` URL
    /// with a host and a port.
    pub fn open(urls: &str, timeout: Duration) -> Result<Self, Error> {
        let mut endpoints = Vec::new();
        let mut described = Vec::new();
        for raw in urls.split(',').map(str::trim).filter(|u| !u.is_empty()) {
            let endpoint = endpoint(raw)?;
            described.push(endpoint.clone());
            endpoints.push(endpoint);
        }
        if endpoints.is_empty() {
            return Err(Error::invalid("no etcd URL"));
        }
        Ok(Self {
            clients: endpoints.iter().map(|_| OnceCell::new()).collect(),
            current: Arc::new(AtomicUsize::new(0)),
            endpoints: endpoints.into(),
            timeout,
            described: described.join(","),
        })
    }

    /// The client of the member calls go to now, made at its first call (it connects lazily:
    /// a member that cannot be reached fails the calls, not this).
    ///
    /// # Errors
    ///
    /// What etcd-client refuses of the endpoint.
    pub async fn client(&self) -> Result<Client, etcd_client::Error> {
        let at = self.current.load(Ordering::Relaxed) % self.endpoints.len();
        self.clients[at]
            .get_or_try_init(|| async {
                let options = ConnectOptions::new()
                    .with_timeout(self.timeout)
                    .with_connect_timeout(self.timeout)
                    .with_keep_alive(
                        Duration::from_secs(1),
                        self.timeout.max(Duration::from_millis(500)),
                    )
                    .with_keep_alive_while_idle(true)
                    .with_require_leader(true);
                Client::connect([&self.endpoints[at]], Some(options)).await
            })
            .await
            .cloned()
    }

    /// A call failed: the next ones go to the next member.
    pub fn failed(&self) {
        if self.endpoints.len() > 1 {
            self.current.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The same store with each call's deadline `timeout` (before the first call).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// `key` checked as a prefix of this crate's keys (1 to 128 bytes, no control character),
    /// ending with `/`.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] when it is not one.
    pub fn prefix(key: &str) -> Result<Vec<u8>, Error> {
        let key = key.trim();
        if key.is_empty() || key.len() > 128 || key.chars().any(char::is_control) {
            return Err(Error::invalid(
                "an etcd prefix is 1 to 128 bytes without control characters",
            ));
        }
        let mut prefix = key.as_bytes().to_vec();
        if !prefix.ends_with(b"/") {
            prefix.push(b'/');
        }
        Ok(prefix)
    }

    /// Where the store is.
    #[must_use]
    pub fn describe(&self) -> &str {
        &self.described
    }
}

/// The smallest key after every key that starts with `prefix`: the end of a prefix range.
#[must_use]
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_described() {
        let store = EtcdStore::open(
            "http://127.0.0.1:2379, http://127.0.0.1:2381/",
            Duration::from_secs(1),
        )
        .unwrap();
        assert_eq!(
            store.describe(),
            "http://127.0.0.1:2379,http://127.0.0.1:2381"
        );
        for bad in ["", "redis://a:1", "http://a", "http://:1", "http://u:p@a:1"] {
            let e = EtcdStore::open(bad, Duration::from_secs(1)).unwrap_err();
            assert!(e.is_invalid(), "{bad}");
            assert!(!e.to_string().contains("u:p"), "{e}");
        }
        assert_eq!(prefix_end(b"a/"), b"a0");
        assert_eq!(prefix_end(b"a\xff"), b"b");
    }
}
