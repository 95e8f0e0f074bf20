//! Chaos controls: make any demo dependency fail in any way, over HTTP.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use status_core::check::{Check, CheckOutcome};
use status_core::CheckStatus;

/// What a demo dependency's check does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// OK.
    Ok,
    /// MINOR.
    Minor,
    /// MAJOR.
    Major,
    /// OUTAGE, with a message.
    Outage,
    /// Fails with an error (OUTAGE, with the error chain).
    Error,
    /// Never returns: the timeout cuts it off.
    Hang,
    /// Panics.
    Panic,
    /// OK after `delayMs`.
    Slow,
}

/// One dependency's chaos setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Setting {
    /// What the check does.
    pub mode: Mode,
    /// How long it takes (for `slow`; a small base latency otherwise).
    #[serde(default)]
    pub delay_ms: u64,
}

impl Default for Setting {
    fn default() -> Self {
        Self {
            mode: Mode::Ok,
            delay_ms: 0,
        }
    }
}

/// The chaos settings of every demo dependency. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Chaos {
    settings: Arc<RwLock<BTreeMap<String, Setting>>>,
}

impl Chaos {
    /// Declares `id`, initially OK.
    pub fn declare(&self, id: &str) {
        self.write().insert(id.to_owned(), Setting::default());
    }

    /// Every setting.
    #[must_use]
    pub fn all(&self) -> BTreeMap<String, Setting> {
        self.read().clone()
    }

    /// Sets `id`'s chaos; `false` if `id` is not a demo dependency.
    pub fn set(&self, id: &str, setting: Setting) -> bool {
        match self.write().get_mut(id) {
            Some(slot) => {
                *slot = setting;
                true
            }
            None => false,
        }
    }

    /// `id`'s setting.
    #[must_use]
    pub fn get(&self, id: &str) -> Setting {
        self.read().get(id).copied().unwrap_or_default()
    }

    /// A check of `id` that does what its setting says.
    #[must_use]
    pub fn check(&self, id: &str) -> ChaosCheck {
        ChaosCheck {
            chaos: self.clone(),
            id: id.to_owned(),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Setting>> {
        self.settings
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Setting>> {
        self.settings
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The check of one demo dependency.
#[derive(Debug, Clone)]
pub struct ChaosCheck {
    chaos: Chaos,
    id: String,
}

/// The error a demo dependency fails with in `error` mode.
#[derive(Debug)]
pub struct DemoError {
    id: String,
    source: std::io::Error,
}

impl fmt::Display for DemoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} query failed", self.id)
    }
}

impl std::error::Error for DemoError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl Check for ChaosCheck {
    async fn check(&self) -> CheckOutcome {
        let setting = self.chaos.get(&self.id);
        let delay = Duration::from_millis(setting.delay_ms);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        match setting.mode {
            Mode::Ok | Mode::Slow => CheckOutcome::new(CheckStatus::Ok, "responding"),
            Mode::Minor => CheckOutcome::new(CheckStatus::Minor, "responding slowly (chaos)"),
            Mode::Major => {
                CheckOutcome::new(CheckStatus::Major, "half of the replicas down (chaos)")
            }
            Mode::Outage => CheckOutcome::new(CheckStatus::Outage, "unreachable (chaos)"),
            Mode::Error => CheckOutcome::from_error(DemoError {
                id: self.id.clone(),
                source: std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "connection reset by peer (chaos)",
                ),
            }),
            Mode::Hang => std::future::pending().await,
            Mode::Panic => panic!("{} check panicked (chaos)", self.id),
        }
    }
}
