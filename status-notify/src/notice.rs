//! What the policy tells: a notice, its sentence, and the bounds on what waits.

use serde::Serialize;

use status_core::{CheckStatus, DependencyId};

/// What the policy tells. Serialized with a `kind` (`changed`, `resolved`, `flapping`,
/// `system`, `audit`, `refused`, `slo`, `digest`) and camel-case fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum Notice {
    /// A dependency holds a new level (not OK).
    Changed {
        /// The dependency.
        id: DependencyId,
        /// The level last told (OK at first).
        from: CheckStatus,
        /// The level it holds now.
        to: CheckStatus,
        /// Failing dependencies whose failure is attributed to this one.
        also_affected: Vec<DependencyId>,
    },
    /// A dependency told failing is OK again.
    Resolved {
        /// The dependency.
        id: DependencyId,
        /// The level last told.
        from: CheckStatus,
    },
    /// A dependency changes too often to tell each change: silence until it is stable.
    Flapping {
        /// The dependency.
        id: DependencyId,
    },
    /// The system condition holds a new level.
    System {
        /// The level last told.
        from: CheckStatus,
        /// The level it holds now.
        to: CheckStatus,
    },
    /// An operator's action, from an audit trail ([`Notifier::tell`](crate::Notifier::tell)).
    Audit {
        /// What was called: method and path.
        action: String,
        /// How it was answered.
        status: u16,
        /// Whether it was refused.
        refused: bool,
        /// Who made it, if said.
        #[serde(skip_serializing_if = "Option::is_none")]
        actor: Option<String>,
        /// The caller's address, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        address: Option<String>,
    },
    /// Refused calls to one action since the last time they were told, counted rather than
    /// listed: a flood of calls without a token is one notice, whatever its size.
    Refused {
        /// What was called: method and path.
        action: String,
        /// How many calls were refused.
        calls: u64,
        /// How many different addresses they came from (counted up to
        /// [`MAX_REFUSED_ADDRESSES`]; past it, at least that many).
        addresses: usize,
        /// A few of those addresses.
        some_addresses: Vec<String>,
    },
    /// A service level objective's burn-rate alert started or ended (status-history's
    /// objectives; [`NotificationsBuilder::history`](crate::NotificationsBuilder) tells them).
    Slo(Box<SloAlert>),
    /// Many notices due at once, as one.
    Digest {
        /// The notices it stands for, as many as fit in a message (see [`MAX_DIGEST_BYTES`]).
        notices: Vec<Notice>,
        /// How many more were due and are not listed.
        #[serde(skip_serializing_if = "is_zero")]
        omitted: u64,
    },
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's signature
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// An objective's burn-rate alert that started or ended: [`Notice::Slo`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SloAlert {
    /// The objective's name.
    pub slo: String,
    /// What it is about, as written: `dependency:primary-db`, `group:api`, `system`.
    pub target: String,
    /// `page` or `ticket`.
    pub severity: String,
    /// The alert's long window (`1h`).
    pub long: String,
    /// Its short window (`5m`).
    pub short: String,
    /// The burn rate both windows were over.
    pub factor: f64,
    /// The burn rate over the long window when it changed; `None` with nothing observed.
    pub burn_rate: Option<f64>,
    /// What was left of the error budget (1 untouched, below 0 overspent).
    pub budget_remaining: f64,
    /// Whether it started (`true`) or ended.
    pub firing: bool,
    /// Since when it fired (RFC 3339).
    pub since: String,
}

/// The most notices waiting for the next tick or the next digest; past it, they are counted
/// in the digest's `omitted`, never kept.
pub const MAX_PENDING: usize = 1_000;

/// The most bytes a digest's notices take in JSON; the rest are counted in `omitted`.
pub const MAX_DIGEST_BYTES: usize = 60 * 1024;

/// The most actions whose refused calls are counted apart; calls to others are counted
/// under `"other"`.
pub const MAX_REFUSED_ACTIONS: usize = 64;

/// The most addresses counted per refused action.
pub const MAX_REFUSED_ADDRESSES: usize = 1_024;

/// How many addresses a [`Notice::Refused`] names.
pub(crate) const NAMED_ADDRESSES: usize = 5;

impl Notice {
    /// The notice in one sentence, told for data center `datacenter` of a fleet: a
    /// dependency's change or recovery names it (`primary-db is OK again in dc-1 (was
    /// OUTAGE)`), so that one data center's recovery never reads as the dependency's.
    #[must_use]
    pub fn text_in(&self, datacenter: &str) -> String {
        self.sentence(Some(datacenter))
    }

    /// The notice in one sentence, for people.
    #[must_use]
    pub fn text(&self) -> String {
        self.sentence(None)
    }

    /// The sentence, naming data center `dc` in a dependency's change or recovery.
    fn sentence(&self, dc: Option<&str>) -> String {
        let place = dc.map(|dc| format!(" in {dc}")).unwrap_or_default();
        match self {
            Self::Changed {
                id,
                from,
                to,
                also_affected,
            } => {
                let mut text = format!("{id} is {to}{place} (was {from})");
                if !also_affected.is_empty() {
                    let names: Vec<&str> = also_affected.iter().map(DependencyId::as_str).collect();
                    text += &format!("; also affected: {}", names.join(", "));
                }
                text
            }
            Self::Resolved { id, from } => format!("{id} is OK again{place} (was {from})"),
            Self::Flapping { id } => {
                format!("{id} is flapping: its changes are not told until it is stable")
            }
            Self::System { from, to } => format!("the system is {to} (was {from})"),
            Self::Audit {
                action,
                status,
                refused,
                actor,
                address,
            } => {
                let by = actor.as_deref().unwrap_or("someone unnamed");
                let how = if *refused { "refused" } else { "done" };
                match address {
                    Some(address) => format!("{action} by {by} from {address}: {how} ({status})"),
                    None => format!("{action} by {by}: {how} ({status})"),
                }
            }
            Self::Refused {
                action,
                calls,
                addresses,
                ..
            } => {
                let calls_word = if *calls == 1 { "call" } else { "calls" };
                let at_least = if *addresses >= MAX_REFUSED_ADDRESSES {
                    "at least "
                } else {
                    ""
                };
                let from = match addresses {
                    0 => String::new(),
                    1 => " from 1 address".to_owned(),
                    n => format!(" from {at_least}{n} addresses"),
                };
                format!("{calls} refused {calls_word} to {action}{from}")
            }
            Self::Slo(alert) => {
                let SloAlert {
                    slo,
                    target,
                    severity,
                    long,
                    short,
                    factor,
                    burn_rate,
                    budget_remaining,
                    firing,
                    since,
                } = &**alert;
                let left = format!("{:.0} % of its error budget left", budget_remaining * 100.0);
                if *firing {
                    let rate = burn_rate.map_or_else(|| "?".to_owned(), |r| format!("{r:.1}"));
                    format!(
                        "objective {slo} ({target}) burns its error budget {rate}× over {long}                          (over {factor} in {long} and {short}): {severity}; {left}"
                    )
                } else {
                    format!(
                        "objective {slo} ({target}) no longer burns over {long} and {short}: the                          {severity} firing since {since} has ended; {left}"
                    )
                }
            }
            Self::Digest { notices, omitted } => {
                // A sentence people read: the first few, then how many more (the JSON lists all).
                let each: Vec<String> = notices
                    .iter()
                    .take(DIGEST_TEXT_ITEMS)
                    .map(Self::text)
                    .collect();
                let total = notices.len() as u64 + omitted;
                let more = total.saturating_sub(each.len() as u64);
                let tail = if more > 0 {
                    format!("; and {more} more")
                } else {
                    String::new()
                };
                let noun = if total == 1 { "change" } else { "changes" };
                format!("{total} {noun}: {}{tail}", each.join("; "))
            }
        }
    }
}

/// How many of a digest's notices its sentence names; the rest are counted.
const DIGEST_TEXT_ITEMS: usize = 20;
