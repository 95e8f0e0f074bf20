//! One voice for the fleet: when a failure is shared by most of a data center, one instance
//! tells it for all, with the fleet's figures, and the others stay silent about it (still
//! telling their own failures). The [`Chorus`] decides (status-fleet's `FleetChorus` keeps a
//! lease in the fleet's store, taken by whoever sees the failure first and handed over if
//! that instance goes); the driver asks it before sending a dependency's change, and every
//! tick for the fleet's recoveries it tells.

use std::collections::HashMap;

use futures::future::BoxFuture;
use serde::Serialize;
use status_core::{CheckStatus, DependencyId};

use crate::Notice;

/// What a notice told for the fleet says of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FleetVoice {
    /// The fleet's figures: `primary-db OUTAGE on 47 of 50 in dc-1`.
    pub figures: String,
    /// The instance that speaks for the fleet.
    pub speaker: String,
    /// The data center it speaks for, when the voice is one data center's: the notice's
    /// sentence then names it (`primary-db is OK again in dc-1 (was OUTAGE)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub datacenter: Option<String>,
}

impl FleetVoice {
    /// `speaker` tells `figures` for the fleet.
    #[must_use]
    pub fn new(figures: impl Into<String>, speaker: impl Into<String>) -> Self {
        Self {
            figures: figures.into(),
            speaker: speaker.into(),
            datacenter: None,
        }
    }

    /// Speaks for data center `datacenter` only.
    #[must_use]
    pub fn in_datacenter(mut self, datacenter: impl Into<String>) -> Self {
        self.datacenter = Some(datacenter.into());
        self
    }
}

/// Who tells a dependency's change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Voice {
    /// This instance, as usual: the failure is its own, or nothing could say (no fleet, its
    /// store unreachable: better told twice than never).
    Mine,
    /// This instance, for the fleet that shares the failure.
    Fleet(FleetVoice),
    /// Another instance tells it for the fleet: not sent from here, nor its recovery (the
    /// chorus tells that when the fleet recovers).
    Silent,
}

/// A recovery the chorus tells for the fleet: the dependency, the level last told of it,
/// and the figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// The dependency.
    pub id: DependencyId,
    /// The level the fleet was told.
    pub from: CheckStatus,
    /// What is said of the fleet.
    pub voice: FleetVoice,
}

/// Decides who tells a failure the fleet shares.
pub trait Chorus: Send + Sync + 'static {
    /// Who tells that dependency `id` holds `level` (not OK) now, on this instance.
    fn changed<'a>(&'a self, id: &'a DependencyId, level: CheckStatus) -> BoxFuture<'a, Voice>;

    /// The fleet's recoveries this instance tells now, asked every tick.
    fn recovered(&self) -> BoxFuture<'_, Vec<Recovered>>;
}

/// The dependencies whose changes the chorus voiced (for the fleet, or silenced), and the
/// level: their own "resolved" is the chorus's to tell, not this instance's. Pure: the
/// driver asks the chorus beside its tick and hands the answers here.
#[derive(Debug, Default)]
pub(crate) struct Voiced(HashMap<DependencyId, CheckStatus>);

/// What becomes of a notice before the chorus has answered.
#[derive(Debug, PartialEq)]
pub(crate) enum Judgement {
    /// Sent as it is.
    Send(Notice),
    /// The chorus must say who tells this change (`Notice::Changed`).
    Ask(Notice),
    /// Not sent: the fleet's recovery is the chorus's to tell.
    Drop,
}

impl Voiced {
    /// What becomes of `notice`, without asking anything.
    pub(crate) fn judge(&self, notice: Notice) -> Judgement {
        match &notice {
            Notice::Changed { .. } => Judgement::Ask(notice),
            Notice::Resolved { id, .. } if self.0.contains_key(id) => Judgement::Drop,
            _ => Judgement::Send(notice),
        }
    }

    /// `notice` (a change) once the chorus said `voice`: sent (with the fleet's voice, if it
    /// speaks for it) or not.
    pub(crate) fn voiced(
        &mut self,
        notice: Notice,
        voice: Voice,
    ) -> Option<(Notice, Option<FleetVoice>)> {
        let Notice::Changed { id, to, .. } = &notice else {
            return Some((notice, None));
        };
        match voice {
            Voice::Mine => {
                self.0.remove(id);
                Some((notice, None))
            }
            Voice::Fleet(voice) => {
                self.0.insert(id.clone(), *to);
                Some((notice, Some(voice)))
            }
            Voice::Silent => {
                self.0.insert(id.clone(), *to);
                None
            }
        }
    }

    /// The fleet's recoveries the chorus answered, as notices with their voice; each
    /// forgotten here.
    pub(crate) fn recovered(&mut self, recovered: Vec<Recovered>) -> Vec<(Notice, FleetVoice)> {
        recovered
            .into_iter()
            .map(|r| {
                self.0.remove(&r.id);
                (
                    Notice::Resolved {
                        id: r.id,
                        from: r.from,
                    },
                    r.voice,
                )
            })
            .collect()
    }
}
