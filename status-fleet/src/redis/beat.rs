//! One beat: the whole way through the beat's script, or at rest by its own.

use super::parse::{
    self, at_rest, attach, condition_digit, failing_lines, parse_beat, parse_failing,
};
use super::script::{summary_digest, KEPT_BEATS, KEPT_INSTANCES};
use super::RedisFleet;
use crate::sync::lock;
use crate::{Beat, BeatError, DatacenterCounts, InstanceSummary, Rejection};

/// The counts with what fails attached, and when the store made each: `(counted, failing)`.
pub(super) type Attached = ((u64, u64), Vec<DatacenterCounts>);

/// The counts a client holds: when they last changed, the counts, and the server's time of
/// the answer that brought them.
pub(super) type HeldCounts = (u64, std::sync::Arc<Vec<DatacenterCounts>>, u64);

/// What fails across the fleet, a row a data center, dependency and level.
pub(super) type FailingRows = std::sync::Arc<Vec<(String, crate::DependencyCount)>>;

/// An instance's last beat the store took, as its holder's field keeps it: the beat's
/// number, the server's time of it, and its data center's index.
pub(super) type LastTaken = (u64, u64, u64);

/// What one instance's beats remember: the digest of the summary its store was last sent,
/// how many beats left it out since, and its last beat taken (what its next beat names to be
/// answered at rest).
pub(super) type Written = (u64, u32, Option<LastTaken>);

/// The token of the fleet's field an answer handed out (what a beat at rest names), with
/// what the answer said beside it: when the counts and what fails last changed, whether the
/// beat asked for the whole list of what fails, whether it was sent its own rows only,
/// whether the store was settling (its mark is in the token), and the server's time of the
/// answer.
#[derive(Debug, Clone)]
pub(super) struct AtRest {
    token: String,
    counted_ms: u64,
    failing_at: u64,
    looked: bool,
    partial: bool,
    settling: bool,
    heard: u64,
}

/// What a beat was answered.
pub(super) enum Answered {
    /// Everything a beat tells (the whole way through the script).
    Whole(Vec<redis::Value>),
    /// The server's time alone: a beat at rest, told nothing new; with its own rows when it
    /// fails something and is sent only those.
    AtRest(u64, Option<String>),
}

impl RedisFleet {
    /// One beat of `me`: publishes it and reads every data center's counts, in one script of
    /// constant work per instance.
    ///
    /// # Errors
    ///
    /// [`BeatError::Rejected`] for a summary the store refuses (too large, a bad id);
    /// [`BeatError::Store`] when Redis cannot be reached or answers garbage (the connection is
    /// then dropped).
    pub async fn beat(&self, me: &InstanceSummary) -> Result<Beat, BeatError> {
        let json = crate::store::admit(me)?;
        let digest = summary_digest(me, &json);
        let failing = failing_lines(me);
        // Sent only when the store may not have it: changed, not written yet, or left out
        // for `KEPT_BEATS` beats. (The store checks the digest: a summary it lost is asked
        // for again, `resend`.)
        let (mut send_summary, last_taken) = {
            let mut written = lock(&self.written);
            match written.get_mut(&me.instance_id) {
                Some((held, kept, last)) if *held == digest && *kept < KEPT_BEATS => {
                    *kept += 1;
                    (false, *last)
                }
                _ => (true, None),
            }
        };
        let digest_hex = format!("{digest:016x}");
        // The counts held as this beat leaves: what a nil answer refers to, whatever other
        // beats in flight meanwhile bring back.
        let held = lock(&self.last).clone();
        let (held_at, knows_me) = held.as_ref().map_or((0, false), |(at, counts, _)| {
            (*at, counts.iter().any(|c| c.datacenter == me.datacenter))
        });
        let held_failing = lock(&self.last_failing).clone();
        let held_failing_at = held_failing
            .as_ref()
            .map_or_else(String::new, |(at, _)| at.to_string());
        let looked = self.looked();
        // A beat at rest names its last beat and the fleet's token, when what the token was
        // handed out with is what this beat holds: the same counts, the same list of what
        // fails (or its own rows only), asked for the same way. Answered by the server's time
        // alone, it is told that nothing changed.
        let held_rest = lock(&self.at_rest).clone().filter(|rest| {
            rest.counted_ms == held_at
                && rest.looked == looked
                && (rest.partial
                    || held_failing
                        .as_ref()
                        .is_some_and(|(at, _)| *at == rest.failing_at))
        });
        let named = match (&held_rest, last_taken) {
            (Some(rest), Some(last)) if !send_summary && knows_me => Some((last, &rest.token)),
            _ => None,
        };
        let mut connection = self.connection().await?;
        // Sent again, once, if the server said it came too late by a clock this process had
        // wrong (another server, after a failover): its answer set the clock right. Not when
        // it took half its span or more to be answered: the store was slow (a queue), and
        // the same beat again would only lengthen the queue (at 100,000 instances, a store
        // that fell behind was sent every late beat twice).
        let mut tries = 0;
        let mut resent = false;
        // A beat named at rest that the store did not take so (something changed since, or
        // an upkeep is due) goes the whole way at once.
        let mut missed = false;
        let mut healed = 0;
        let mut number;
        let answer = loop {
            let asked = std::time::Instant::now();
            number = self
                .sequence
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1;
            // (Not once the store asked for the summary: that beat goes the whole way.)
            let naming = named.filter(|_| !send_summary && !missed);
            let deadline = self.clock.deadline(self.ttl / 3);
            let invocation = match naming {
                Some(((last, beat, index), token)) => {
                    // Its failing members and their counts only when it fails something.
                    let keys = if failing.is_empty() {
                        &self.keys[..2]
                    } else {
                        &self.keys[..]
                    };
                    let mut invocation = self.rest.key(keys);
                    invocation
                        .arg(&me.instance_id)
                        .arg(&me.datacenter)
                        .arg(condition_digit(me.condition))
                        .arg(u8::from(me.serving()))
                        .arg(&self.owner)
                        .arg(number)
                        .arg(deadline)
                        .arg(index)
                        .arg(last)
                        .arg(beat)
                        .arg(&digest_hex)
                        .arg(token);
                    if !failing.is_empty() {
                        invocation.arg(&failing).arg(u8::from(looked));
                    }
                    invocation
                }
                None => {
                    let mut invocation = self.beat.key(&self.keys[..]);
                    invocation
                        .arg(&me.instance_id)
                        .arg(&me.datacenter)
                        .arg(condition_digit(me.condition))
                        .arg(u8::from(me.serving()))
                        .arg(if send_summary { json.as_str() } else { "" })
                        .arg(held_at)
                        .arg(u8::from(knows_me))
                        .arg(&self.owner)
                        .arg(&failing)
                        .arg(&held_failing_at)
                        .arg(number)
                        .arg(deadline)
                        .arg(u8::from(looked))
                        .arg(&digest_hex);
                    invocation
                }
            };
            let answer = match invocation
                .invoke_async::<redis::Value>(&mut connection)
                .await
            {
                Ok(redis::Value::Int(now)) if naming.is_some() => match u64::try_from(now) {
                    Ok(now) => break Answered::AtRest(now, None),
                    Err(_) => Vec::new(),
                },
                // Not at rest: the whole way, at once.
                Ok(redis::Value::Nil) if naming.is_some() => {
                    missed = true;
                    continue;
                }
                // At rest, failing past the budget: its time and its own rows.
                Ok(redis::Value::Array(answer))
                    if naming.is_some() && matches!(answer.first(), Some(redis::Value::Int(_))) =>
                {
                    match parse::at_rest_rows(&answer) {
                        Some((now, rows)) => break Answered::AtRest(now, Some(rows)),
                        None => Vec::new(),
                    }
                }
                Ok(redis::Value::Array(answer)) => answer,
                // (Garbage: `parse_beat` says so.)
                Ok(_) => Vec::new(),
                Err(e) => {
                    self.reset().await;
                    return Err(BeatError::Store(e.to_string()));
                }
            };
            // The store does not hold this summary: sent again at once, with it (once).
            if let Some(healed_then) = parse::resend(&answer).filter(|_| !resent) {
                healed = healed_then;
                send_summary = true;
                resent = true;
                continue;
            }
            match parse::late_at(&answer) {
                Some(now) if tries == 0 && asked.elapsed() < self.ttl / 6 => {
                    self.clock.heard(now);
                    tries += 1;
                }
                Some(now) => {
                    self.clock.heard(now);
                    break Answered::Whole(answer);
                }
                None => break Answered::Whole(answer),
            }
        };
        let (mut beat, sent, (failing_at, failing_text, own), index) = match answer {
            Answered::Whole(answer) => {
                let (beat, sent, failing_answer) = parse_beat(&answer)?;
                let (index, token) = at_rest(&answer);
                if let Some(token) = token {
                    let mut rest = lock(&self.at_rest);
                    if rest.as_ref().is_none_or(|r| r.heard <= beat.now_ms) {
                        *rest = Some(AtRest {
                            token,
                            counted_ms: beat.counted_ms,
                            failing_at: failing_answer.0,
                            looked,
                            partial: failing_answer.2.is_some(),
                            settling: beat.settling,
                            heard: beat.now_ms,
                        });
                    }
                }
                (beat, sent, failing_answer, index)
            }
            Answered::AtRest(now_ms, rows) => {
                // (Answered so only when it named them.)
                let (Some(rest), Some((_, _, index))) = (held_rest, last_taken) else {
                    return Err(BeatError::Store("an answer this client cannot read".into()));
                };
                let beat = Beat {
                    now_ms,
                    healed: 0,
                    retired: 0,
                    counted_ms: rest.counted_ms,
                    datacenters: Vec::new(),
                    settling: rest.settling,
                    skipped: [0; crate::REJECTIONS.len()],
                    failing_partial: false,
                };
                // (Its own rows come when it fails something past the budget; none when it
                // fails nothing.)
                let own = rows.or_else(|| rest.partial.then(String::new));
                (beat, false, (rest.failing_at, None, own), Some(index))
            }
        };
        beat.healed += healed;
        // Its holder's field as the store wrote it: what its next beat names.
        let taken = index.map(|index| (number, beat.now_ms, index));
        {
            let mut written = lock(&self.written);
            if send_summary {
                if written.len() >= KEPT_INSTANCES {
                    written.clear();
                }
                written.insert(me.instance_id.clone(), (digest, 0, taken));
            } else if let Some(entry) = written.get_mut(&me.instance_id) {
                entry.2 = taken;
            }
        }
        self.clock.heard(beat.now_ms);
        let counts = if sent {
            let counts = std::sync::Arc::new(std::mem::take(&mut beat.datacenters));
            let mut last = lock(&self.last);
            if last
                .as_ref()
                .is_none_or(|(_, _, heard)| *heard <= beat.now_ms)
            {
                *last = Some((beat.counted_ms, std::sync::Arc::clone(&counts), beat.now_ms));
            }
            counts
        } else {
            match held {
                Some((at, counts, _)) if at == beat.counted_ms => counts,
                _ => return Err(BeatError::Store("counts neither sent nor held".into())),
            }
        };
        let forged_at = Rejection::ForgedCount.index();
        // Only the rows this instance is judged by (the list is past the budget): its own
        // failing dependencies in its own data center, fresh at every beat.
        if let Some(own) = own {
            let (rows, forged) = parse_failing(&own);
            beat.skipped[forged_at] += forged;
            beat.datacenters = (*counts).clone();
            // (Its own data center may not be counted yet: a row of it then waits.)
            attach(&mut beat.datacenters, &rows);
            beat.failing_partial = true;
            return Ok(beat);
        }
        // What fails, as sent, unless another beat in flight already brought the same (every
        // beat that left before the first answer of a change gets it: thousands, when a
        // process beats for many instances and the store is slow).
        let failing = failing_text.filter(|_| {
            lock(&self.last_failing)
                .as_ref()
                .is_none_or(|(at, _)| *at != failing_at)
        });
        let fresh_rows = failing.is_some();
        let rows = match failing {
            Some(text) => {
                let (rows, mut forged) = parse_failing(&text);
                let rows: FailingRows = std::sync::Arc::new(rows);
                let mut datacenters = (*counts).clone();
                forged += attach(&mut datacenters, &rows);
                // Said once, when it comes: rows no upkeep could have written.
                beat.skipped[forged_at] += forged;
                let mut last = lock(&self.last_failing);
                if last.as_ref().is_none_or(|(at, _)| *at <= failing_at) {
                    *last = Some((failing_at, std::sync::Arc::clone(&rows)));
                }
                rows
            }
            None => {
                let last = lock(&self.last_failing).clone();
                match [last, held_failing]
                    .into_iter()
                    .flatten()
                    .find(|(at, _)| *at == failing_at)
                {
                    Some((_, rows)) => rows,
                    None => {
                        return Err(BeatError::Store("what fails neither sent nor held".into()))
                    }
                }
            }
        };
        // The counts with what fails attached: made once for each pair of them, then copied.
        let key = (beat.counted_ms, failing_at);
        if !sent && !fresh_rows {
            if let Some((made_for, made)) = lock(&self.attached).as_ref() {
                if *made_for == key {
                    beat.datacenters.clone_from(made);
                    return Ok(beat);
                }
            }
        }
        beat.datacenters = (*counts).clone();
        attach(&mut beat.datacenters, &rows);
        *lock(&self.attached) = Some((key, beat.datacenters.clone()));
        Ok(beat)
    }
}
