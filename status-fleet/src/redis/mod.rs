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

use std::time::Duration;

use status_checks::store::{Connection, RedisStore};

use crate::{
    Beat, BeatError, Boxed, FleetStore, InstancePage, InstanceQuery, InstanceSummary, VoiceAnswer,
    VoiceAsk, VoiceLease, MAX_PAGE, MAX_SUMMARY,
};
mod beat;
mod clock;
mod parse;
mod script;
mod store;

use self::beat::{AtRest, Attached, FailingRows, HeldCounts, Written};
use self::script::{beat_scripts, counted_every, LIST, LOOKED_FOR, VOICE};
pub use self::script::{DEFAULT_FAILING_BUDGET, DEFAULT_MAX_DATACENTERS, MAX_DATACENTERS};

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

use self::parse::{page_cursor, parse_page};

use crate::sync::lock;
use status_core::Error;

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
