//! The fleet in Redis, at a constant cost per instance.
//!
//! One beat of one instance is one script of four commands of O(log N) whatever the fleet's size N
//! (the clock; one read of its own field and the fleet's; its member moved; one write of its
//! holder's field, and of its record when its summary came), plus one for each failing dependency
//! that comes or goes, and the counts read when the client does not hold the latest; no beat reads
//! another instance's summary. A summary unchanged since the client had it written is left out of
//! the beat: the client names it by a digest, which the store checks against the one it keeps
//! (`resend` when they differ). A beat *at rest* (the same summary and failing dependencies as
//! its last, the counts and what fails as its client holds them) names the holder's field its
//! last beat left and the fleet's field but for its time (the token the last answer handed out):
//! it is sent to a script of its own, with only what that needs (12 arguments and 2 keys, where
//! the whole beat takes 14 and 5). When both are what the store holds and no upkeep is due, that
//! script compares them, moves the member (and its failing members), writes the field and
//! answers the server's time alone (with its own rows, when it fails something past the budget),
//! parsing neither field; otherwise it answers nil and the beat goes the whole way at once. What
//! every instance needs back, each data center's fresh instances by condition and its serving ones,
//! is counted at most every thirtieth of the TTL by whichever beat comes first (O(D log N) for D
//! data centers) and cached for the others. The keys, all under one hash tag so that a Redis
//! Cluster keeps them in one slot (and every key a script touches is passed in `KEYS`, but for the
//! keys of the versions before, below); `v2` since the members of
//! `{K}:v2:live` are scored:
//!
//! | key | type | what |
//! |---|---|---|
//! | `{K}:v2:inst` | hash | instance id → `dc \n condition \n serving \n written \n summary JSON`, written by a beat that brings its summary (`written`: when, in milliseconds); `id \0own` → `owner \t sequence \t dc \t index \t beat \t digest`, then `\n dependency \t level` for each dependency that beat failed: the token of the process that holds it, its last beat's number, data center (and that data center's index) and beat, the digest of the summary its record holds (the client's: up to 16 hex digits; none from a version before), and what it failed (one field, so that a beat looks up one field of its own in a hash of every instance); and what every beat reads of the fleet, written by each upkeep: `\0fleet` → `at \t failing_at \t settling \t past \t bridged \t counts_at`, when the counts were made, when what fails last changed, since when the store settles (empty when it does not), `1` while what fails is past the budget to hand to every instance, `1` while the keys of a version before are counted too (below), when the counts last changed (what names them to the clients) |
//! | `{K}:v2:live` | sorted set, by score | instance id, scored `group × 2^42 + beat` (the beat in milliseconds; the group `(index × 4 + condition) × 2 + serving`, the data center's index below [`MAX_DATACENTERS`]): one member an instance, moved by one `ZADD`, and each group's fresh members one range of scores |
//! | `{K}:v2:dcs` | hash | each data center → its index (the smallest free when it first beats; freed when it has no member left); the cached counts; what fails, and when it moved and was read out |
//! | `{K}:v2:fail` | sorted set, by beat | `dc \0 dependency \0 level \0 id`: one member a failing dependency of an instance, scored by its last beat |
//! | `{K}:v2:fcount` | hash | `dc \t dependency \t level` → how many members of `{K}:v2:fail` it has |
//! | `{K}:voice` | hash | `datacenter \t dependency` → its voice lease, `state \n holder \n expiry` ([`FleetStore::voice`](crate::FleetStore::voice)) |
//!
//! **A rolling upgrade.** The versions before kept the same keys without `v2:` (`{K}:live`
//! ordered by lex, one member `dc \0 condition serving \0 beat \0 id` an instance). While
//! `{K}:live` exists, each upkeep counts its fresh members into the counts it hands out, adds
//! their failing rows (`{K}:fcount`) to what fails, and counts down their failing members not
//! beaten for a TTL as their own upkeep did (the last of them may have stopped); the keys are
//! named from `KEYS[1]`, under the same hash tag, so in the same slot. So an instance of this
//! version judges its own failures among every instance of its data center, old and new: a
//! new version failing on its own three instances beside four old ones is three of seven, not
//! a failure the data center shares. The instances of a version before see only their own.
//! An instance restarted from the version before into this one counts twice for up to a TTL,
//! and one id held by processes of both versions is not refused. Ten TTLs after the last old
//! instance stopped, its keys expire, and this ends.
//!
//! **What fails.** A beat moves the scores of its instance's failing members (at most
//! [`MAX_FAILING`](crate::MAX_FAILING), ids validated by the script) to its beat, O(log N)
//! each; a member that comes or goes (a new failure, a recovery, a move to another data
//! center) moves `{K}:fcount` in the same script, so the counts cannot drift. The upkeep
//! retires members not beaten for a TTL, counting them down, and reads the counts out only
//! when they moved: O(F) for F failing (data center, dependency, level), whatever the number
//! of instances; at most [`MAX_FAILING_ROWS`](crate::MAX_FAILING_ROWS) of them. What fails is
//! sent to an instance only when it changed since the copy it holds, and a change is handed
//! out at once only when it says something new (a row that comes or goes, a count moved by
//! more than an eighth); counts drifting by less wait until the copy is a TTL old. When the
//! fleet's fresh instances times the list's size pass a budget
//! ([`RedisFleet::failing_budget`]), each instance is sent only the rows it is judged by (its
//! own failing dependencies in its data center), and the whole list only while someone looks
//! at the fleet through it ([`FleetStore::look`](crate::FleetStore::look)): the store's
//! egress stays bounded by what instances need, not by the fleet's size times the list's.
//!
//! **One id, one process.** Each [`RedisFleet`] draws a random token; the first process to
//! beat under an id holds it, and a beat under that id with another token is refused
//! (`id_taken`) for as long as the holder's record is fresh: two processes given one id (the
//! pod `web-0` with pid 1 in two data centers) can never overwrite each other's record, and
//! the one refused says so (its `fleet` dependency MAJOR). A holder that stops beating loses
//! the id a TTL later, so a restarted instance takes its id back within a TTL.
//!
//! Counts are `ZCOUNT`s over the members whose beat is younger than the TTL, a range of
//! scores for each group: no instance keeps them up to date, so none can drift. The upkeep
//! also retires a bounded number of instances not heard of for ten TTLs (and any member
//! stamped in the future), and forgets data centers with no instance left.
//!
//! What the store holds is not trusted: an instance's id and data center are its member's, not
//! what its summary says; heartbeats come from the server's clock only; a summary is at most
//! 4 KiB, and a record larger than that is never sent on; a key of the wrong type is deleted
//! (and the instances rebuild it at their next beat) instead of failing every beat of the
//! fleet, and a store found empty, or not reached for half a TTL (a replica just promoted),
//! is *settling* for a TTL: its counts are not the fleet's until every instance has had time
//! to beat. The script says what it healed; the client
//! counts it.

use crate::Rejection;
use std::time::Duration;

use status_checks::store::{Connection, RedisStore};

use crate::{
    Beat, BeatError, Boxed, DatacenterCounts, FleetStore, InstancePage, InstanceQuery,
    InstanceSummary, VoiceAnswer, VoiceAsk, VoiceLease, MAX_PAGE, MAX_SUMMARY,
};
mod clock;
mod parse;
mod store;

/// The parsers of what Redis hands back, for the fuzz targets (feature `fuzzing`, or `cargo fuzz`).
#[cfg(any(fuzzing, feature = "fuzzing"))]
pub(crate) mod fuzzing {
    use std::time::Duration;

    use crate::{DependencyCount, InstancePage};

    pub(crate) fn page(
        answer: &[Vec<u8>],
        ttl: Duration,
        limit: usize,
        forward: bool,
    ) -> InstancePage {
        super::parse::parse_page(answer, ttl, limit, forward)
    }

    pub(crate) fn failing(text: &str) -> (Vec<(String, DependencyCount)>, u64) {
        super::parse::parse_failing(text)
    }
}

use self::parse::{
    at_rest, attach, condition_digit, failing_lines, page_cursor, parse_beat, parse_failing,
    parse_page,
};

/// The counts with what fails attached, and when the store made each: `(counted, failing)`.
type Attached = ((u64, u64), Vec<DatacenterCounts>);

/// The counts a client holds: when they last changed, the counts, and the server's time of
/// the answer that brought them.
type HeldCounts = (u64, std::sync::Arc<Vec<DatacenterCounts>>, u64);

/// What fails across the fleet, a row a data center, dependency and level.
type FailingRows = std::sync::Arc<Vec<(String, crate::DependencyCount)>>;

/// An instance's last beat the store took, as its holder's field keeps it: the beat's
/// number, the server's time of it, and its data center's index.
type LastTaken = (u64, u64, u64);

/// What one instance's beats remember: the digest of the summary its store was last sent,
/// how many beats left it out since, and its last beat taken (what its next beat names to be
/// answered at rest).
type Written = (u64, u32, Option<LastTaken>);

/// The token of the fleet's field an answer handed out (what a beat at rest names), with
/// what the answer said beside it: when the counts and what fails last changed, whether the
/// beat asked for the whole list of what fails, whether it was sent its own rows only,
/// whether the store was settling (its mark is in the token), and the server's time of the
/// answer.
#[derive(Debug, Clone)]
struct AtRest {
    token: String,
    counted_ms: u64,
    failing_at: u64,
    looked: bool,
    partial: bool,
    settling: bool,
    heard: u64,
}

/// What a beat was answered.
enum Answered {
    /// Everything a beat tells (the whole way through the script).
    Whole(Vec<redis::Value>),
    /// The server's time alone: a beat at rest, told nothing new; with its own rows when it
    /// fails something and is sent only those.
    AtRest(u64, Option<String>),
}
use crate::sync::lock;
use status_core::Error;

/// The most instances one upkeep retires (ten upkeeps a second with a TTL of 3 s).
const RETIRE: u32 = 64;

/// How many beats in a row may leave an unchanged summary out: the next sends it again, so a
/// record lost or altered by hand comes back within that many beats.
const KEPT_BEATS: u32 = 60;

/// The most instances whose written summary one [`RedisFleet`] remembers (a process beats
/// for one; a load tool for thousands): past it, it forgets them all and each sends its
/// summary at its next beat. About 13 MiB at most.
const KEPT_INSTANCES: usize = 1 << 17;

/// The most data centers a fleet in Redis accepts, by default.
pub const DEFAULT_MAX_DATACENTERS: usize = 64;

/// The most data centers a fleet in Redis can hold: a member's score keeps its data center's
/// index in 8 bits (above 3 of condition and serving and 42 of its beat, below 2^53).
pub const MAX_DATACENTERS: usize = 256;

/// What one change of what fails across the fleet may cost the store, by default, when it is
/// handed to every instance: 16 MiB (1,000 instances and a list of 16 KiB; 100,000 and one
/// of 160 bytes). Past it, each instance is sent only its own rows, unless someone looks
/// at the fleet through it ([`RedisFleet::failing_budget`]).
pub const DEFAULT_FAILING_BUDGET: usize = 16 << 20;

/// How long an instance is sent what fails across the fleet after someone looked at the
/// fleet through it ([`FleetStore::look`]).
const LOOKED_FOR: Duration = Duration::from_secs(60);

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
const BEAT: &str = include_str!("beat.lua");

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
const REST: &str = include_str!("rest.lua");

/// The rows a failing instance is judged by, put in both scripts where they say
/// `--[[ rows.lua ]]`.
const OWN_ROWS: &str = include_str!("rows.lua");

/// The server's clock, and a beat past its deadline answered `late`: put in both scripts
/// where they say `--[[ clock.lua ]]`.
const CLOCK: &str = include_str!("clock.lua");

/// A script for a store's settings (its TTL, so how often the fleet is counted, the most data
/// centers it takes, and what fails may cost), before its body.
fn with_settings(
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
fn beat_scripts(
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
const LIST: &str = include_str!("list.lua");

/// A voice lease asked (claim, takeover, resolve, peek): the state after, its holder, and
/// whether what it held was forged.
const VOICE: &str = include_str!("voice.lua");

/// How often a fleet of this TTL is counted: a thirtieth of it, from 10 ms to a second.
fn counted_every(ttl: Duration) -> Duration {
    (ttl / 30).clamp(Duration::from_millis(10), Duration::from_secs(1))
}

/// What a beat names its summary by when it leaves it out: a digest of what the store
/// keeps of it (its condition and serving flag with the JSON, which holds the id and the
/// data center).
fn summary_digest(me: &InstanceSummary, json: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    (condition_digit(me.condition), me.serving(), json).hash(&mut hasher);
    hasher.finish()
}

/// A duration in whole milliseconds, as the scripts take it.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A fleet kept in Redis (one server, or a cluster: every key under one hash tag).
#[derive(Debug)]
pub struct RedisFleet {
    store: RedisStore,
    /// The last counts read, when they last changed (what names them: sent again only when
    /// the store's differ), and the server's time of the answer that brought them (the
    /// latest answer's counts are held, whatever their stamp: a replica promoted may hold
    /// counts stamped before those of the store it replaced, and a beat's data center is
    /// indexed without a lookup only while the counts held name it).
    last: std::sync::Mutex<Option<HeldCounts>>,
    /// The last counts handed out with what fails attached, and the times of both: most
    /// beats hand out the same again.
    attached: std::sync::Mutex<Option<Attached>>,
    /// What fails across the fleet, as last read, and when the store last changed it: sent
    /// again only when it changes.
    last_failing: std::sync::Mutex<Option<(u64, FailingRows)>>,
    /// The summary each instance this process beats for last had written, by its digest,
    /// and how many beats have left it out since: a beat whose summary is unchanged sends
    /// only the digest. With it, the instance's last beat taken, which a beat at rest names.
    written: std::sync::Mutex<std::collections::HashMap<String, Written>>,
    /// The token of the fleet's field the latest answer handed out: a beat names it (with its
    /// instance's last beat) to be answered at rest, by the server's time alone, when nothing
    /// changed since.
    at_rest: std::sync::Mutex<Option<AtRest>>,
    keys: [String; 5],
    voice_key: String,
    /// This process's token: the id it beats under is its own while it beats.
    owner: String,
    /// The last beat's number: the store ignores a beat older than one it took (delivered
    /// late, after its connection was given up).
    sequence: std::sync::atomic::AtomicU64,
    /// The server's clock, for each beat's deadline: one delivered later is ignored.
    clock: clock::ServerClock,
    /// The most data centers the fleet accepts.
    max_datacenters: usize,
    /// What one change of what fails may cost, handed to every instance.
    failing_budget: usize,
    /// Until when this instance is sent what fails across the fleet, whatever its size:
    /// someone looks at the fleet through it.
    looked_until: std::sync::Mutex<Option<std::time::Instant>>,
    ttl: Duration,
    // Sent by their SHA1 (EVALSHA), the body only when the server does not have it.
    beat: redis::Script,
    rest: redis::Script,
    list: redis::Script,
    voice: redis::Script,
}

impl RedisFleet {
    /// The fleet under `key` at `url` (one URL, or a cluster's seed nodes separated by
    /// commas; see [`RedisStore::open`]); an instance is stale `ttl` after its last
    /// heartbeat.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] if `url` is not a Redis URL, or `key` is empty or holds `{`,
    /// `}` or a control character.
    pub fn new(url: &str, key: impl Into<String>, ttl: Duration) -> Result<Self, Error> {
        let store = RedisStore::open(url)?;
        let key = key.into();
        let keys = [
            RedisStore::tagged(&key, "v2:inst")?,
            RedisStore::tagged(&key, "v2:live")?,
            RedisStore::tagged(&key, "v2:dcs")?,
            RedisStore::tagged(&key, "v2:fail")?,
            RedisStore::tagged(&key, "v2:fcount")?,
        ];
        let voice_key = RedisStore::tagged(&key, "voice")?;
        let (beat, rest) = beat_scripts(ttl, DEFAULT_MAX_DATACENTERS, DEFAULT_FAILING_BUDGET);
        Ok(Self {
            store,
            last: std::sync::Mutex::new(None),
            attached: std::sync::Mutex::new(None),
            last_failing: std::sync::Mutex::new(None),
            written: std::sync::Mutex::new(std::collections::HashMap::new()),
            at_rest: std::sync::Mutex::new(None),
            keys,
            voice_key,
            owner: super::owner_token(),
            sequence: std::sync::atomic::AtomicU64::new(0),
            clock: clock::ServerClock::default(),
            max_datacenters: DEFAULT_MAX_DATACENTERS,
            failing_budget: DEFAULT_FAILING_BUDGET,
            looked_until: std::sync::Mutex::new(None),
            ttl,
            beat,
            rest,
            list: redis::Script::new(LIST),
            voice: redis::Script::new(VOICE),
        })
    }

    /// The most data centers the fleet accepts (default [`DEFAULT_MAX_DATACENTERS`], at
    /// least 1, at most [`MAX_DATACENTERS`]): a beat from one more is refused
    /// (`too_many_datacenters`, counted), so that counting them, which every upkeep does,
    /// stays bounded. Give every instance the same.
    #[must_use]
    pub fn max_datacenters(mut self, max: usize) -> Self {
        self.max_datacenters = max.clamp(1, MAX_DATACENTERS);
        (self.beat, self.rest) = beat_scripts(self.ttl, self.max_datacenters, self.failing_budget);
        self
    }

    /// What one change of what fails across the fleet may cost the store when it is handed
    /// to every instance, in bytes: the fleet's fresh instances times the list's size
    /// (default [`DEFAULT_FAILING_BUDGET`]). Past it, the store sends each instance only the
    /// rows it is judged by (its own failing dependencies in its data center, every level),
    /// fresh at every beat, and the whole list only to an instance someone looks at the fleet
    /// through ([`FleetStore::look`]) for a minute after: 100,000 instances handed a list of
    /// 10 KiB at every change would be a gigabyte out of the store each time. Give every
    /// instance the same.
    #[must_use]
    pub fn failing_budget(mut self, bytes: usize) -> Self {
        self.failing_budget = bytes;
        (self.beat, self.rest) = beat_scripts(self.ttl, self.max_datacenters, self.failing_budget);
        self
    }

    /// Someone looks at what fails across the fleet through this instance: for a minute,
    /// every beat is sent the whole list, whatever the fleet's size.
    pub fn look(&self) {
        *lock(&self.looked_until) = Some(std::time::Instant::now() + LOOKED_FOR);
    }

    /// Whether this instance is asking for the whole list of what fails.
    fn looked(&self) -> bool {
        lock(&self.looked_until).is_some_and(|until| std::time::Instant::now() < until)
    }

    /// How often the data centers are counted, fleet-wide: a thirtieth of the TTL (100 ms
    /// for 3 s), between 10 ms and a second. The counts a beat hands out are at most that
    /// old.
    #[must_use]
    pub fn counted_every(&self) -> Duration {
        counted_every(self.ttl)
    }

    /// The TTL: an instance is stale this long after its last heartbeat.
    #[must_use]
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    async fn connection(&self) -> Result<Connection, BeatError> {
        self.store
            .connection()
            .await
            .map_err(|e| BeatError::Store(e.to_string()))
    }

    /// Drops the connection: the next call makes a new one. For a call that failed or timed
    /// out, so that a connection still reading a late answer is never reused.
    pub async fn reset(&self) {
        self.store.reset().await;
    }

    /// Where the store is, without credentials.
    #[must_use]
    pub fn describe(&self) -> &str {
        self.store.describe()
    }

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

    /// A page of instances: of `query.datacenter` (or all), after `query.cursor`, at most
    /// `query.limit` (at most [`MAX_PAGE`]); each with its age and whether it is stale.
    ///
    /// # Errors
    ///
    /// Redis unreachable, or a cursor this store did not hand out.
    pub async fn instances(&self, query: &InstanceQuery) -> Result<InstancePage, Error> {
        let cursor = page_cursor(query)?;
        let limit = query.limit.clamp(1, MAX_PAGE);
        let mut connection = self
            .connection()
            .await
            .map_err(|e| Error::unavailable(e.to_string()))?;
        let answer: Result<Vec<Vec<u8>>, _> = self
            .list
            .key(&self.keys[1])
            .key(&self.keys[0])
            .key(&self.keys[2])
            .arg(query.datacenter.as_deref().unwrap_or(""))
            .arg(cursor)
            .arg(limit)
            .arg(MAX_SUMMARY + 256)
            .arg(if query.worst_first { "rev" } else { "fwd" })
            .invoke_async(&mut connection)
            .await;
        let answer = match answer {
            Ok(answer) => answer,
            Err(e) => {
                self.reset().await;
                return Err(Error::unavailable(format!("the fleet store failed: {e}")));
            }
        };
        Ok(parse_page(&answer, self.ttl, limit, !query.worst_first))
    }
}
