//! etcd: a member's health, as `etcdctl endpoint status` and `alarm list` tell it.

use std::fmt;
use std::time::Duration;

use etcd_client::{AlarmAction, AlarmType, Client, ConnectOptions};
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::latency::graded;
use status_core::check::{Check, CheckOutcome, Threshold};
use status_core::{CheckStatus, Error};

/// Asks an etcd member its status and the cluster's alarms, over a client kept between runs:
///
/// - OUTAGE when the member cannot be reached, or has no leader (it refuses every write and
///   every linearizable read);
/// - MAJOR when an alarm is raised (`NOSPACE`: the cluster refuses writes; `CORRUPT`), or the
///   member reports errors;
/// - else OK, graded by latency when asked, with the member, its leader and its version in
///   the message.
///
/// # Example
///
/// ```
/// use status_checks::etcd::EtcdCheck;
/// use status_core::Dependency;
///
/// let check = EtcdCheck::new("http://127.0.0.1:2379").unwrap();
/// let config = Dependency::builder("etcd", check).kind("etcd").build().unwrap();
/// # let _ = config;
/// ```
pub struct EtcdCheck {
    url: String,
    client: Mutex<Option<Client>>,
    latency: Option<Threshold>,
}

impl EtcdCheck {
    /// A check of the member at `url` (`http://host:2379`).
    ///
    /// The client is kept between runs; a run that fails or is cut off by the timeout drops
    /// it (closing its connection), and the next run connects again.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] unless `url` is `http://` or `https://` with a host and a port.
    pub fn new(url: &str) -> Result<Self, Error> {
        let url = url.trim();
        if url.contains(',') {
            return Err(Error::invalid(format!(
                "one etcd member's URL, not a list: {}",
                status_core::mask_credentials(url)
            )));
        }
        let url = crate::store::etcd_endpoint(url)?;
        Ok(Self {
            url,
            client: Mutex::new(None),
            latency: None,
        })
    }

    /// Grades the status call's latency, in milliseconds (OK whatever it is by default).
    #[must_use]
    pub fn latency(mut self, threshold: Threshold) -> Self {
        self.latency = Some(threshold);
        self
    }

    async fn ask(&self, client: &mut Client) -> Result<CheckOutcome, etcd_client::Error> {
        let started = Instant::now();
        let status = client.status().await?;
        let elapsed = started.elapsed();
        let member = status
            .header()
            .map_or(0, etcd_client::ResponseHeader::member_id);
        if status.leader() == 0 {
            return Ok(CheckOutcome::new(
                CheckStatus::Outage,
                format!("member {member:x} has no leader"),
            ));
        }
        let alarms = client
            .alarm(AlarmAction::Get, AlarmType::None, None)
            .await?;
        let raised: Vec<String> = alarms
            .alarms()
            .iter()
            .map(|a| format!("{:?} on {:x}", a.alarm(), a.member_id()))
            .collect();
        if !raised.is_empty() {
            return Ok(CheckOutcome::new(
                CheckStatus::Major,
                format!("alarm raised: {}", raised.join(", ")),
            ));
        }
        if !status.errors().is_empty() {
            return Ok(CheckOutcome::new(
                CheckStatus::Major,
                format!("member {member:x} reports: {}", status.errors().join("; ")),
            ));
        }
        Ok(graded(
            elapsed,
            self.latency.as_ref(),
            &format!(
                "member {member:x} (etcd {}), leader {:x}, status",
                status.version(),
                status.leader()
            ),
        ))
    }
}

impl Check for EtcdCheck {
    async fn check(&self) -> CheckOutcome {
        let mut slot = self.client.lock().await;
        // Taken out: if this run is cancelled, the client (its connection) is dropped with it.
        let mut client = match slot.take() {
            Some(client) => client,
            None => {
                // The dependency's timeout cuts a run; the client's own deadlines are a backstop.
                let options = ConnectOptions::new()
                    .with_connect_timeout(Duration::from_secs(5))
                    .with_timeout(Duration::from_secs(5));
                match Client::connect([&self.url], Some(options)).await {
                    Ok(client) => client,
                    Err(e) => return CheckOutcome::from_error(e),
                }
            }
        };
        match self.ask(&mut client).await {
            Ok(outcome) => {
                *slot = Some(client);
                outcome
            }
            Err(e) => CheckOutcome::from_error(e),
        }
    }
}

impl fmt::Debug for EtcdCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdCheck")
            .field("url", &self.url)
            .field("latency", &self.latency)
            .finish()
    }
}
