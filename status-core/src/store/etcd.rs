//! An etcd the fleet shares: one cluster, named by its members' URLs, behind one client made
//! when first needed. Every call has a deadline; a member that loses its leader refuses
//! (`require_leader`), so that a minority never answers from a frozen state; HTTP/2 pings find
//! a dead connection within seconds.

use std::time::Duration;

use etcd_client::{Client, ConnectOptions};
use tokio::sync::OnceCell;

use crate::Error;

/// Where an etcd cluster is, and the client to it, made when first needed.
pub struct EtcdStore {
    endpoints: Vec<String>,
    timeout: Duration,
    client: OnceCell<Client>,
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
            let rest = raw
                .strip_prefix("http://")
                .or_else(|| raw.strip_prefix("https://"))
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "not an etcd URL (http://host:port): {}",
                        crate::mask_credentials(raw)
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
            endpoints.push(raw.trim_end_matches('/').to_owned());
            described.push(raw.trim_end_matches('/').to_owned());
        }
        if endpoints.is_empty() {
            return Err(Error::invalid("no etcd URL"));
        }
        Ok(Self {
            endpoints,
            timeout,
            client: OnceCell::new(),
            described: described.join(","),
        })
    }

    /// The client, made at the first call (it connects lazily: an etcd that cannot be
    /// reached fails the calls, not this).
    ///
    /// # Errors
    ///
    /// What etcd-client refuses of the endpoints.
    pub async fn client(&self) -> Result<Client, etcd_client::Error> {
        self.client
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
                Client::connect(&self.endpoints, Some(options)).await
            })
            .await
            .cloned()
    }

    /// Each call's deadline.
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
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
