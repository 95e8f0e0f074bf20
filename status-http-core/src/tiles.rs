//! Day tiles as HTML, and what keeps the overview fast at 1,000 dependencies: the past days'
//! tiles never change (but for a late write), so those of the default span are kept for a
//! few minutes, and only today's tile is read and drawn on each request.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Datelike;
use status_core::CheckStatus;
use status_history::{DayTile, History, Tier};

/// How long the past days' tiles are kept before they are read again (a late write, such
/// as a backlog written after a store came back, shows within it).
const KEPT_FOR: Duration = Duration::from_secs(300);

/// The class of a tile (and a badge) for a day's worst level.
pub fn class(level: Option<CheckStatus>) -> &'static str {
    match level {
        Some(CheckStatus::Ok) => "ok",
        Some(CheckStatus::Minor) => "minor",
        Some(CheckStatus::Major) => "major",
        Some(CheckStatus::Outage) => "outage",
        None => "none",
    }
}

/// A share as a percentage with three decimals, or "no data".
pub fn percent(share: Option<f64>) -> String {
    share.map_or_else(|| "no data".to_owned(), |s| format!("{:.3} %", s * 100.0))
}

/// Tiles as HTML, written here rather than by the template: 90 tiles for each of 1,000
/// dependencies is 90,000 elements, and a template's per-element work would take most of
/// the page's time. What it writes is only fixed class names, dates and numbers: nothing
/// from outside needs escaping.
pub fn tiles(days: &[DayTile]) -> String {
    let mut html = String::with_capacity(days.len() * 64);
    for d in days {
        let day = d.day.date_naive();
        let (y, m, dd) = (day.year(), day.month(), day.day());
        // Muted time is maintenance (a mute, an announced window, or an exclusion said after
        // the fact): the tile says how long, and is marked.
        let (mark, said) = if d.muted_ms > 0 {
            (
                " maintenance",
                format!(", {} in maintenance", lasted(d.muted_ms)),
            )
        } else {
            ("", String::new())
        };
        let _ = match (d.worst, d.uptime) {
            (Some(worst), Some(up)) => {
                // Thousandths of a percent, in integers: no float formatting per tile.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let milli = (up * 100_000.0).round() as u64;
                write!(
                    html,
                    r#"<li class="{}{mark}" title="{y:04}-{m:02}-{dd:02}: {}.{:03} % up, {worst} at worst{said}"></li>"#,
                    class(Some(worst)),
                    milli / 1000,
                    milli % 1000
                )
            }
            _ if d.muted_ms > 0 => write!(
                html,
                r#"<li class="maintenance" title="{y:04}-{m:02}-{dd:02}: in maintenance ({})"></li>"#,
                lasted(d.muted_ms)
            ),
            _ => write!(
                html,
                r#"<li class="none" title="{y:04}-{m:02}-{dd:02}: no data"></li>"#
            ),
        };
    }
    html
}

/// The uptime over the days, weighted by the time observed in each (a day observed for 20 s
/// weighs 20 s, not a day), and what it covers: `99.950 % · observed 20 s of 90 days`.
pub fn overall(days: &[DayTile]) -> String {
    sums(days).words(days.len())
}

/// The uptime over the days, weighted by the time observed in each, and the time observed
/// (ms): `None` with nothing observed.
pub fn coverage(days: &[DayTile]) -> (Option<f64>, u64) {
    let s = sums(days);
    #[allow(clippy::cast_precision_loss)]
    let share = (s.observed > 0).then(|| s.up / s.observed as f64);
    (share, s.observed)
}

/// Up and observed time over some days, in milliseconds.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    up: f64,
    observed: u64,
}

impl Sums {
    fn add(&mut self, day: &DayTile) {
        if let Some(up) = day.uptime {
            #[allow(clippy::cast_precision_loss)]
            let observed = day.observed_ms as f64;
            self.up += up * observed;
            self.observed += day.observed_ms;
        }
    }

    /// The uptime in words, and the time it covers of `span` days when less than all.
    fn words(self, span: usize) -> String {
        if self.observed == 0 {
            return "no data".to_owned();
        }
        #[allow(clippy::cast_precision_loss)]
        let uptime = percent(Some(self.up / self.observed as f64));
        let whole = u64::try_from(span).unwrap_or(u64::MAX) * 86_400_000;
        // A day's edges (the write of the last minute) are not a gap worth saying.
        if self.observed + 60_000 >= whole {
            return uptime;
        }
        let days = if span == 1 {
            "1 day".to_owned()
        } else {
            format!("{span} days")
        };
        format!("{uptime} · observed {} of {days}", lasted(self.observed))
    }
}

/// A length of time in words, to its two largest units: `20 s`, `5 min`, `3 h 20 min`,
/// `12 d 4 h`.
pub fn lasted(ms: u64) -> String {
    let s = ms / 1000;
    let (d, h, m) = (s / 86_400, s / 3600 % 24, s / 60 % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s} s"),
        (0, 0, m) => format!("{m} min"),
        (0, h, 0) => format!("{h} h"),
        (0, h, m) => format!("{h} h {m} min"),
        (d, 0, _) => format!("{d} d"),
        (d, h, _) => format!("{d} d {h} h"),
    }
}

fn sums(days: &[DayTile]) -> Sums {
    let mut sums = Sums::default();
    for d in days {
        sums.add(d);
    }
    sums
}

/// A series' days before today: drawn, and summed for its uptime.
struct Past {
    html: String,
    sums: Sums,
}

struct Kept {
    today: i64,
    made: Instant,
    rows: HashMap<String, Past>,
    /// The drawing of a series with no data before today.
    blank: Past,
}

/// The past days' tiles of the default span, by kind of series.
#[derive(Default)]
pub struct TileCache {
    kinds: Mutex<HashMap<&'static str, Arc<Kept>>>,
}

impl std::fmt::Debug for TileCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TileCache").finish_non_exhaustive()
    }
}

impl TileCache {
    /// The tiles (HTML) and uptime (words) of each of `names`, series of `kind`, over the
    /// last `days` days. The default span (`kept`) reads the past days at most every five
    /// minutes and today's on every call; any other span is read whole.
    pub async fn rows(
        &self,
        history: &History,
        kind: &'static str,
        days: u32,
        kept: u32,
        names: &[String],
    ) -> Result<Vec<(String, String)>, status_history::Error> {
        let today = Tier::Day.floor(history.now()).timestamp();
        let fresh = |k: &Kept| k.today == today && k.made.elapsed() < KEPT_FOR;
        // A cache only: one poisoned by a panic elsewhere is still a cache.
        let cache = || crate::sync::lock(&self.kinds);
        let cached = (days == kept)
            .then(|| cache().get(kind).filter(|k| fresh(k)).cloned())
            .flatten();
        let kept = if let Some(kept) = cached {
            kept
        } else {
            let mut read: HashMap<String, Vec<DayTile>> = history
                .days_of(kind, days)
                .await?
                .into_iter()
                .map(|(s, d)| (s.name().to_owned(), d))
                .collect();
            let blank_days = blank(history, days);
            if days != kept {
                return Ok(names
                    .iter()
                    .map(|name| {
                        let d = read.get(name).unwrap_or(&blank_days);
                        (tiles(d), overall(d))
                    })
                    .collect());
            }
            let past = |d: &[DayTile]| {
                let before = &d[..d.len().saturating_sub(1)];
                Past {
                    html: tiles(before),
                    sums: sums(before),
                }
            };
            let rows = read
                .iter_mut()
                .map(|(name, d)| (name.clone(), past(d)))
                .collect();
            let made = Arc::new(Kept {
                today,
                made: Instant::now(),
                rows,
                blank: past(&blank_days),
            });
            cache().insert(kind, Arc::clone(&made));
            made
        };
        let now: HashMap<String, DayTile> = history
            .days_of(kind, 1)
            .await?
            .into_iter()
            .filter_map(|(s, mut d)| Some((s.name().to_owned(), d.pop()?)))
            .collect();
        let blank_today = blank(history, 1).pop();
        Ok(names
            .iter()
            .map(|name| {
                let past = kept.rows.get(name).unwrap_or(&kept.blank);
                let today = now.get(name).or(blank_today.as_ref());
                let mut html = past.html.clone();
                let mut sums = past.sums;
                if let Some(t) = today {
                    html.push_str(&tiles(std::slice::from_ref(t)));
                    sums.add(t);
                }
                (html, sums.words(days as usize))
            })
            .collect())
    }
}

/// `days` tiles with nothing observed, ending today.
pub fn blank(history: &History, days: u32) -> Vec<DayTile> {
    let today = Tier::Day.floor(history.now());
    (0..days)
        .rev()
        .map(|back| DayTile {
            day: today - chrono::Duration::days(i64::from(back)),
            worst: None,
            uptime: None,
            muted_ms: 0,
            observed_ms: 0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use status_core::CheckStatus;
    use status_history::DayTile;

    use super::tiles;

    fn day(worst: Option<CheckStatus>, observed_ms: u64, muted_ms: u64) -> DayTile {
        DayTile {
            day: Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap(),
            worst,
            uptime: (observed_ms > 0).then_some(1.0),
            muted_ms,
            observed_ms,
        }
    }

    #[test]
    fn a_day_with_time_in_maintenance_is_marked_and_says_how_long() {
        assert_eq!(
            tiles(&[day(Some(CheckStatus::Ok), 60_000, 240_000)]),
            r#"<li class="ok maintenance" title="2026-12-01: 100.000 % up, OK at worst, 4 min in maintenance"></li>"#
        );
        assert_eq!(
            tiles(&[day(None, 0, 3_600_000)]),
            r#"<li class="maintenance" title="2026-12-01: in maintenance (1 h)"></li>"#
        );
        assert_eq!(
            tiles(&[day(None, 0, 0)]),
            r#"<li class="none" title="2026-12-01: no data"></li>"#
        );
    }
}
