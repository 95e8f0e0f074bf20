//! The fleet's Lua scripts with a store's settings put in, and the bounds the client keeps.

use std::time::Duration;

use super::parse::condition_digit;
use crate::{InstanceSummary, MAX_SUMMARY};

/// The most instances one upkeep retires (ten upkeeps a second with a TTL of 3 s).
pub(super) const RETIRE: u32 = 64;

/// How many beats in a row may leave an unchanged summary out: the next sends it again, so a
/// record lost or altered by hand comes back within that many beats.
pub(super) const KEPT_BEATS: u32 = 60;

/// The most instances whose written summary one [`RedisFleet`] remembers (a process beats
/// for one; a load tool for thousands): past it, it forgets them all and each sends its
/// summary at its next beat. About 13 MiB at most.
pub(super) const KEPT_INSTANCES: usize = 1 << 17;

/// The most data centers a fleet in Redis accepts, by default.
pub const DEFAULT_MAX_DATACENTERS: usize = 64;

/// The most data centers a fleet in Redis can hold: a member's score keeps its data center's
/// index in 8 bits (above 3 of condition and serving and 42 of its beat, below 2^53).
pub const MAX_DATACENTERS: usize = 256;

/// What one change of what fails across the fleet may cost the store, by default, when it is
/// handed to every instance: 16 MiB (1,000 instances and a list of 16 KiB; 100,000 and one
/// of 160 bytes). Past it, each instance is sent only its own rows, unless someone looks
/// at the fleet through it ([`RedisFleet::failing_budget`](super::RedisFleet::failing_budget)).
pub const DEFAULT_FAILING_BUDGET: usize = 16 << 20;

/// How long an instance is sent what fails across the fleet after someone looked at the
/// fleet through it ([`FleetStore::look`](crate::FleetStore::look)).
pub(super) const LOOKED_FOR: Duration = Duration::from_secs(60);

/// One beat. Always, in O(log N): this instance's record and member moved to the new beat. At most
/// every `every` ms, fleet-wide (the first beat after that does it), the upkeep in O(D log N): keys
/// of the wrong type healed (all go), an empty store marked settling for a TTL, at most `retire`
/// members a data center retired (unheard of for ten TTLs, or stamped in the future), data centers
/// with no member forgotten, expiries renewed, and every data center counted into a cache the other
/// beats hand out. Answers `ok` (or `settling`), the server's time, what it healed and retired,
/// when the counts last changed, and the counts: one line a data center, `dc \t ok \t minor \t
/// major \t outage \t serving`; nil instead of counts the client says it holds (`ARGV[6]`: when
/// they last changed, as the answer names them: an upkeep that counts the same keeps their stamp,
/// so a fleet at rest sends none). A beat numbered (`ARGV[11]`) at or below the last one this
/// process had taken answers `late` and changes nothing: delivered after a newer one, it would
/// write a past condition as fresh. So does one run after its deadline on the server's clock
/// (`ARGV[12]`, 0: none), answering `late` and the server's time. What fails across the fleet comes
/// when it changed since the copy the client holds (`ARGV[10]`), unless handing it to every
/// instance is past the budget and the client does not ask for it (`ARGV[13]`, `1`: someone looks):
/// then only this instance's own rows come, last. A summary (`ARGV[5]`) left out (`''`) keeps the
/// one the record holds if the holder's field names it by the beat's digest (`ARGV[14]`); otherwise
/// the beat changes nothing but what it healed and answers `resend`, the server's time and what it
/// healed. Every answer that goes the whole way ends with the data center's index and the token
/// of the fleet's field (`\0fleet` but for its first field), which a beat at rest names
/// ([`REST`]). The store's settings come first, in the script's text ([`with_settings`]): Redis
/// parses them once, not at every beat.
pub(super) const BEAT: &str = include_str!("beat.lua");

/// A beat at rest: its last beat taken (`ARGV[8]` its data center's index, `ARGV[9]` its
/// number, `ARGV[10]` its time), its summary's digest (`ARGV[11]`) and the token (`ARGV[12]`),
/// besides its id, data center, condition, serving flag, owner, number and deadline
/// (`ARGV[1]`–`ARGV[7]`), and its failing lines and whether someone looks through it
/// (`ARGV[13]`, `ARGV[14]`) when it fails something. When they are what the store holds, and no
/// upkeep is due, it is answered by the server's time alone, an integer (or, failing something
/// past the budget, the time and its own rows); otherwise nil, and the beat goes the whole way
/// ([`BEAT`]), or `late` and the server's time after its deadline. Its own script, so that the
/// beats most of a fleet sends at rest carry 12 arguments and 2 keys, not 18 and 5: each is
/// made a string for Lua at every run.
pub(super) const REST: &str = include_str!("rest.lua");

/// The rows a failing instance is judged by, put in both scripts where they say
/// `--[[ rows.lua ]]`.
pub(super) const OWN_ROWS: &str = include_str!("rows.lua");

/// The server's clock, and a beat past its deadline answered `late`: put in both scripts
/// where they say `--[[ clock.lua ]]`.
pub(super) const CLOCK: &str = include_str!("clock.lua");

/// A script for a store's settings (its TTL, so how often the fleet is counted, the most data
/// centers it takes, and what fails may cost), before its body.
pub(super) fn with_settings(
    body: &str,
    ttl: Duration,
    max_datacenters: usize,
    wide_budget: usize,
) -> redis::Script {
    let (ttl_ms, every_ms) = (millis(ttl), millis(counted_every(ttl)));
    redis::Script::new(&format!(
        "local ttl, every, retire, limit, max_datacenters, max_rows, wide_budget = {ttl_ms}, \
         {every_ms}, {RETIRE}, {MAX_SUMMARY}, {max_datacenters}, {}, {wide_budget}\n{}",
        crate::MAX_FAILING_ROWS,
        body.replacen("--[[ rows.lua ]]\n", OWN_ROWS, 1)
            .replacen("--[[ clock.lua ]]\n", CLOCK, 1)
    ))
}

/// The beat's script ([`BEAT`]) and the beat at rest's ([`REST`]), for a store's settings.
pub(super) fn beat_scripts(
    ttl: Duration,
    max_datacenters: usize,
    wide_budget: usize,
) -> (redis::Script, redis::Script) {
    (
        with_settings(BEAT, ttl, max_datacenters, wide_budget),
        with_settings(REST, ttl, max_datacenters, wide_budget),
    )
}

/// One page of instances in the order of `{K}:v2:live` (data center by index, condition,
/// serving, beat, id) after the cursor: the server's time, then each member as
/// `dc \0 condition serving \0 beat \0 id` and its record (empty when missing, or larger
/// than `ARGV[4]`).
pub(super) const LIST: &str = include_str!("list.lua");

/// A voice lease asked (claim, takeover, resolve, peek): the state after, its holder, and
/// whether what it held was forged.
pub(super) const VOICE: &str = include_str!("voice.lua");

/// How often a fleet of this TTL is counted: a thirtieth of it, from 10 ms to a second.
pub(super) fn counted_every(ttl: Duration) -> Duration {
    (ttl / 30).clamp(Duration::from_millis(10), Duration::from_secs(1))
}

/// What a beat names its summary by when it leaves it out: a digest of what the store
/// keeps of it (its condition and serving flag with the JSON, which holds the id and the
/// data center).
pub(super) fn summary_digest(me: &InstanceSummary, json: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    (condition_digit(me.condition), me.serving(), json).hash(&mut hasher);
    hasher.finish()
}

/// A duration in whole milliseconds, as the scripts take it.
pub(super) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
