//! What the scripts answer, read: beats, pages, members and records. Pure.

use crate::Rejection;
use std::time::Duration;

use status_core::{CheckStatus, Error};

use crate::{
    unhex, Beat, BeatError, Conditions, DatacenterCounts, DependencyCount, InstancePage,
    InstanceQuery, InstanceSummary, InstanceView, REJECTIONS,
};

/// A condition as the digit the store keeps: 0 OK … 3 OUTAGE.
pub(super) fn condition_digit(condition: CheckStatus) -> u8 {
    match condition {
        CheckStatus::Ok => 0,
        CheckStatus::Minor => 1,
        CheckStatus::Major => 2,
        CheckStatus::Outage => 3,
    }
}

fn condition_of(digit: u8) -> Option<CheckStatus> {
    Some(match digit {
        b'0' => CheckStatus::Ok,
        b'1' => CheckStatus::Minor,
        b'2' => CheckStatus::Major,
        b'3' => CheckStatus::Outage,
        _ => return None,
    })
}

/// `me`'s failing dependencies as the beat script takes them: `dependency \t level` a line
/// (1 MINOR … 3 OUTAGE), the valid ones, at most [`MAX_FAILING`](crate::MAX_FAILING).
pub(super) fn failing_lines(me: &InstanceSummary) -> String {
    crate::counted_failing(&me.failing)
        .0
        .iter()
        .map(|f| format!("{}\t{}", f.id, condition_digit(f.level)))
        .collect::<Vec<_>>()
        .join("\n")
}

pub(super) fn integer(value: &redis::Value) -> Option<u64> {
    match value {
        redis::Value::Int(n) => u64::try_from(*n).ok(),
        redis::Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.parse().ok(),
        redis::Value::SimpleString(s) => s.parse().ok(),
        _ => None,
    }
}

fn text(value: &redis::Value) -> Option<String> {
    match value {
        redis::Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
        redis::Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

/// What fails across the fleet as the store last counted it: when that changed, the text
/// when it came with the answer (it does not when the client holds it, nor when the store
/// hands each instance only its own rows), and those rows when it does.
pub(super) type FailingAnswer = (u64, Option<String>, Option<String>);

/// When the store asks for the summary the beat left out (`resend`: it does not hold it),
/// how many keys it healed meanwhile.
pub(super) fn resend(answer: &[redis::Value]) -> Option<u64> {
    (answer.first().and_then(text)? == "resend")
        .then(|| answer.get(2).and_then(integer).unwrap_or(0))
}

/// The server's time, if the answer says the beat came after its deadline (`late`).
pub(super) fn late_at(answer: &[redis::Value]) -> Option<u64> {
    (answer.first().and_then(text)? == "late")
        .then(|| answer.get(1).and_then(integer))
        .flatten()
}

/// The beat (its data centers' failing rows not attached), whether the counts came with it
/// (they do not when the client holds them), and what fails.
pub(super) fn parse_beat(
    answer: &[redis::Value],
) -> Result<(Beat, bool, FailingAnswer), BeatError> {
    let garbage = || BeatError::Store("an answer this client cannot read".to_owned());
    let status = answer.first().and_then(text).ok_or_else(garbage)?;
    if status == "id_taken" {
        return Err(BeatError::IdTaken {
            datacenter: answer.get(2).and_then(text).unwrap_or_default(),
        });
    }
    let settling = status == "settling";
    if status != "ok" && !settling {
        return Err(BeatError::Rejected(
            Rejection::parse(&status).ok_or_else(garbage)?,
        ));
    }
    let number = |i: usize| answer.get(i).and_then(integer).ok_or_else(garbage);
    let (now_ms, healed, retired, counted_ms) = (number(1)?, number(2)?, number(3)?, number(4)?);
    let counts = answer.get(5).and_then(text);
    let sent = counts.is_some();
    let counts = counts.unwrap_or_default();
    let mut datacenters = Vec::new();
    for line in counts.lines().filter(|l| !l.is_empty()) {
        let fields: Vec<&str> = line.split('\t').collect();
        let [name, ok, minor, major, outage, serving] = fields[..] else {
            return Err(garbage());
        };
        let count = |v: &str| v.parse::<usize>().map_err(|_| garbage());
        let conditions = Conditions {
            ok: count(ok)?,
            minor: count(minor)?,
            major: count(major)?,
            outage: count(outage)?,
        };
        datacenters.push(DatacenterCounts::new(name, conditions, count(serving)?));
    }
    datacenters.sort_by(|a, b| a.datacenter.cmp(&b.datacenter));
    let failing = answer.get(6).and_then(text);
    let failing_at = answer.get(7).and_then(integer).unwrap_or(0);
    let own = answer.get(8).and_then(text);
    Ok((
        Beat {
            now_ms,
            healed,
            retired,
            counted_ms,
            datacenters,
            settling,
            skipped: [0; REJECTIONS.len()],
            failing_partial: false,
        },
        sent,
        (failing_at, failing, own),
    ))
}

/// What an answer that went the whole way ends with: this instance's data center's index, and
/// the token a beat at rest names the fleet's field by (none while the store settles).
pub(super) fn at_rest(answer: &[redis::Value]) -> (Option<u64>, Option<String>) {
    (
        answer.get(9).and_then(integer),
        answer.get(10).and_then(text).filter(|t| !t.is_empty()),
    )
}

/// A beat at rest answered by its time and its own rows (it fails something, and the store
/// sends each instance only the rows it is judged by).
pub(super) fn at_rest_rows(answer: &[redis::Value]) -> Option<(u64, String)> {
    match answer {
        [now, rows] => Some((integer(now)?, text(rows)?)),
        _ => None,
    }
}

/// The rows of what fails (`dc \t dependency \t level \t instances` a line), and how many
/// lines no upkeep could have written.
pub(super) fn parse_failing(text: &str) -> (Vec<(String, DependencyCount)>, u64) {
    let mut rows = Vec::new();
    let mut forged = 0;
    for line in text.lines().filter(|l| !l.is_empty()) {
        let row = match line.split('\t').collect::<Vec<_>>()[..] {
            [dc, dependency, level, instances] => level
                .bytes()
                .next()
                .and_then(condition_of)
                .zip(instances.parse::<usize>().ok())
                .map(|(level, instances)| {
                    (
                        dc.to_owned(),
                        DependencyCount {
                            dependency: dependency.to_owned(),
                            level,
                            instances,
                        },
                    )
                }),
            _ => None,
        };
        match row {
            Some(row) => rows.push(row),
            None => forged += 1,
        }
    }
    (rows, forged)
}

/// Attaches `rows` to their data centers (sorted by name); answers how many name a data
/// center with no fresh instance counted, and so are not trusted.
pub(super) fn attach(
    datacenters: &mut [DatacenterCounts],
    rows: &[(String, DependencyCount)],
) -> u64 {
    let mut forged = 0;
    for (dc, row) in rows {
        match datacenters.binary_search_by(|c| c.datacenter.as_str().cmp(dc)) {
            Ok(at) => datacenters[at].failing.push(row.clone()),
            Err(_) => forged += 1,
        }
    }
    forged
}

/// The cursor of a page as the list script takes it: the member it goes on after (empty for
/// the first page); refused when it is not hex, or another data center's than the page's.
pub(super) fn page_cursor(query: &InstanceQuery) -> Result<Vec<u8>, Error> {
    let Some(cursor) = &query.cursor else {
        return Ok(Vec::new());
    };
    let member = unhex(cursor).ok_or_else(|| Error::invalid("invalid cursor"))?;
    if let Some(dc) = &query.datacenter {
        if member.get(..dc.len()) != Some(dc.as_bytes()) || member.get(dc.len()) != Some(&0) {
            return Err(Error::invalid("invalid cursor: another data center's"));
        }
    }
    Ok(member)
}

pub(super) fn parse_page(
    answer: &[Vec<u8>],
    ttl: Duration,
    limit: usize,
    forward: bool,
) -> InstancePage {
    let now: u64 = answer
        .first()
        .and_then(|n| std::str::from_utf8(n).ok()?.parse().ok())
        .unwrap_or(0);
    let mut instances = Vec::new();
    let mut last = None;
    for pair in answer[1.min(answer.len())..].chunks(2) {
        let [member, record] = pair else { break };
        last = Some(member.clone());
        if let Some(view) = instance_of(member, record, now, ttl) {
            instances.push(view);
        }
    }
    let full = answer.len().saturating_sub(1) / 2 >= limit;
    InstancePage {
        instances,
        next_cursor: last
            .filter(|_| full)
            .and_then(|m| crate::store::cursor_after(&m, forward)),
    }
}

/// An instance from its member (`dc \0 condition serving \0 beat \0 id`) and its record;
/// `None` when the member does not parse. The id and data center come from the member, never from the JSON.
fn instance_of(member: &[u8], record: &[u8], now: u64, ttl: Duration) -> Option<InstanceView> {
    let mut parts = member.splitn(4, |b| *b == 0);
    let dc = std::str::from_utf8(parts.next()?).ok()?;
    let condition = condition_of(*parts.next()?.first()?)?;
    let beat: u64 = std::str::from_utf8(parts.next()?).ok()?.parse().ok()?;
    let id = std::str::from_utf8(parts.next()?).ok()?;
    let json = std::str::from_utf8(record)
        .ok()?
        .splitn(5, '\n')
        .nth(4)
        .unwrap_or("");
    if crate::store::refusal(id, dc).is_some() {
        return None;
    }
    // A record no beat could have written (not a summary, too large): not listed, as every
    // store skips what no instance wrote.
    let mut summary = serde_json::from_str::<InstanceSummary>(json).ok()?;
    id.clone_into(&mut summary.instance_id);
    dc.clone_into(&mut summary.datacenter);
    summary.condition = condition;
    let age = now.saturating_sub(beat);
    Some(InstanceView {
        summary,
        age_ms: age,
        stale: u128::from(age) >= ttl.as_millis() || beat > now + 1_000,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hex;

    #[test]
    fn a_page_ending_on_a_member_too_long_for_a_cursor_goes_on_past_it() {
        // Garbage only: no instance writes a member this long. Found by the store_records
        // fuzz target (its input is kept in fuzz/regressions/): the page's cursor was one
        // this store refused, so the listing stopped there with a 400.
        let long = [b"dc\x0001\x00".as_slice(), &[0x99; 600]].concat();
        let answer = vec![b"1".to_vec(), long.clone(), b"x".to_vec()];
        let ttl = Duration::from_secs(3);
        let forward = parse_page(&answer, ttl, 1, true).next_cursor;
        let backward = parse_page(&answer, ttl, 1, false).next_cursor;
        let after = unhex(forward.as_deref().unwrap()).unwrap();
        let before = unhex(backward.as_deref().unwrap()).unwrap();
        assert!(after.as_slice() > long.as_slice() && before.as_slice() < long.as_slice());
        // The store takes both back, each its way.
        for (cursor, worst_first) in [(forward, false), (backward, true)] {
            let query = InstanceQuery {
                cursor,
                limit: 10,
                worst_first,
                ..InstanceQuery::default()
            };
            assert!(page_cursor(&query).is_ok());
        }
        // A member within the bound is its own cursor.
        let short = b"dc\x0001\x00000000000000001\x00a".to_vec();
        let answer = vec![b"1".to_vec(), short.clone(), b"x".to_vec()];
        let cursor = parse_page(&answer, ttl, 1, true).next_cursor.unwrap();
        assert_eq!(unhex(&cursor), Some(short));
    }

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let member = b"east\x0001\x00000001700000000\x00a1".to_vec();
        assert_eq!(unhex(&hex(&member)), Some(member));
        assert_eq!(unhex("0g"), None);
        assert_eq!(unhex("abc"), None);
        let query = InstanceQuery {
            datacenter: Some("west".into()),
            cursor: Some(hex(b"east\x00")),
            limit: 10,
            worst_first: false,
        };
        assert!(page_cursor(&query).is_err());
    }

    #[test]
    fn an_instance_is_named_by_its_key_not_by_what_it_says() {
        let member = b"east\x0030\x00000000000001000\x00a1";
        let record = b"east\n3\n0\n1000\n{\"instanceId\":\"impostor\",\"datacenter\":\"west\",\"condition\":\"OK\",\"holds\":[],\"version\":\"1\"}";
        let view = instance_of(member, record, 1500, Duration::from_secs(3)).unwrap();
        assert_eq!(view.summary.instance_id, "a1");
        assert_eq!(view.summary.datacenter, "east");
        assert_eq!(view.summary.condition, CheckStatus::Outage);
        assert_eq!(view.age_ms, 500);
        // Garbage in the record, or an id no beat could have written: not listed.
        assert!(instance_of(member, b"x", 1500, Duration::from_secs(3)).is_none());
        let newline = b"east\x0030\x00000000000001000\x00a\n1";
        assert!(instance_of(newline, record, 1500, Duration::from_secs(3)).is_none());
        // Stamped in the future (past a second of clock skew): stale.
        let future = b"east\x0030\x00000000000009000\x00a1";
        let view = instance_of(future, record, 1500, Duration::from_secs(3)).unwrap();
        assert!(view.stale);
    }
}
