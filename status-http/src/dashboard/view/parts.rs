//! The rows of the dashboard's view: a dependency with its timeline, a feature.

// The view's types and helpers, as view/mod.rs names them.
#[allow(clippy::wildcard_imports)]
use super::*;

/// The last 60 minutes, oldest first, as runs of the same worst status.
fn timeline(now: DateTime<Utc>, minutes: &[MinuteRecord]) -> Vec<Segment> {
    let current = now.timestamp().div_euclid(60);
    // `minutes` is oldest first: walk it once alongside the 60 minutes.
    let mut records = minutes.iter().peekable();
    let mut segments: Vec<(Option<CheckStatus>, usize, u32, u32, i64)> = Vec::new();
    for ago in (0..60).rev() {
        let minute = current - ago;
        while records
            .peek()
            .is_some_and(|m| m.start.timestamp().div_euclid(60) < minute)
        {
            records.next();
        }
        let record = records.next_if(|m| m.start.timestamp().div_euclid(60) == minute);
        let worst = record.map(|m| m.worst);
        let (up, checks) = record.map_or((0, 0), |m| (m.up, m.checks));
        match segments.last_mut() {
            Some(last) if last.0 == worst => {
                last.1 += 1;
                last.2 += up;
                last.3 += checks;
            }
            _ => segments.push((worst, 1, up, checks, minute)),
        }
    }
    segments
        .into_iter()
        .map(|(worst, span, up, checks, first)| {
            let from = DateTime::from_timestamp(first * 60, 0).unwrap_or(now);
            let to = from + chrono::Duration::minutes(i64::try_from(span).unwrap_or(60) - 1);
            let when = format!("{}–{}", from.format("%H:%M"), to.format("%H:%M"));
            match worst {
                Some(worst) => Segment {
                    class: badge(worst).class,
                    span,
                    title: format!("{when}: worst {worst}, {up} of {checks} checks up"),
                },
                None => Segment {
                    class: "none",
                    span,
                    title: format!("{when}: no check"),
                },
            }
        })
        .collect()
}

pub(super) fn dependency(
    registry: &Registry,
    present: &Presentation,
    now: DateTime<Utc>,
    r: &CheckResult,
    facts: &status_core::Facts,
) -> DependencyView {
    let history = registry
        .history(r.id().as_str())
        .ok()
        .map(|h| present.history(h));
    let (hour, day, minutes, transitions) = match &history {
        Some(h) => (
            h.uptime.last_hour,
            h.uptime.last_day,
            h.last_hour.as_slice(),
            h.transitions.as_slice(),
        ),
        None => (None, None, &[][..], &[][..]),
    };
    let thrown = r.thrown();
    DependencyView {
        id: r.id().to_string(),
        description: r.description().to_string(),
        badge: badge(r.status()),
        urgency: r.urgency().as_str(),
        kind: r.kind().to_string(),
        message: r.message().to_string(),
        last_checked: if r.checked() {
            format!("{} ago", human(now - r.timestamp()))
        } else {
            "never".to_owned()
        },
        last_checked_iso: r.timestamp().to_rfc3339(),
        duration: format!("{} ms", r.duration().as_millis()),
        in_state: human(now - r.since()),
        timeline: timeline(now, minutes),
        uptime_hour: percent(hour),
        uptime_day: percent(day),
        flapping: r.flapping(),
        stale: r.stale(),
        blocked_by: r.blocked_by().iter().map(ToString::to_string).collect(),
        tags: r.tags().to_vec(),
        tags_joined: r.tags().join(" "),
        probe_groups: facts
            .dependency(r.id().as_str())
            .map(|d| {
                facts
                    .groups_of(d)
                    .map(status_core::GroupFacts::name)
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
            .join(" "),
        search: search_text(r),
        transitions: transitions
            .iter()
            .rev()
            .take(20)
            .map(|t| TransitionView {
                date: clock(t.at),
                from: t.from.map_or("—", CheckStatus::as_str),
                to: t.to.as_str(),
                message: t.message.clone(),
            })
            .collect(),
        mute: r.mute().map(|m| {
            let by = m.actor.as_deref().unwrap_or("an operator");
            format!("Muted until {} by {by}: {}", clock(m.until), m.reason)
        }),
        error_kind: thrown.map(|t| t.kind().to_owned()).unwrap_or_default(),
        error_causes: thrown.map(|t| t.causes().to_vec()).unwrap_or_default(),
        // Only web links: a `javascript:` URL in a dependency's description must not become a
        // link an operator clicks.
        documentation_url: if r.documentation_url().starts_with("https://")
            || r.documentation_url().starts_with("http://")
        {
            r.documentation_url().to_string()
        } else {
            String::new()
        },
        consecutive_failures: r.consecutive_failures(),
    }
}

pub(super) fn feature(now: DateTime<Utc>, f: &FeatureState) -> FeatureView {
    let requirements = f
        .requirements
        .iter()
        .map(|r| {
            let who = r
                .dependency
                .as_ref()
                .map_or_else(|| "system".to_owned(), ToString::to_string);
            let mark = if r.satisfied { "✔" } else { "✖" };
            format!("{mark} {who} ≤ {}", r.no_worse_than)
        })
        .collect::<Vec<_>>()
        .join(", ");
    FeatureView {
        name: f.name.to_string(),
        description: f.description.clone(),
        enabled: f.enabled,
        reason: f.reason.clone(),
        requirements,
        over: f.override_.as_ref().map(|o| OverrideView {
            state: if o.enabled { "ON" } else { "OFF" },
            actor: o.actor.clone().unwrap_or_else(|| "an operator".to_owned()),
            reason: o.reason.clone(),
            until: format!("{} (in {})", clock(o.expires_at), human(o.expires_at - now)),
        }),
        since: human(now - f.since),
    }
}
