//! The fleet's store against a real `redis-server`: counts that always equal a full recount,
//! and a store full of garbage that neither breaks the fleet nor is trusted.

use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use proptest::prelude::*;
use status_core::{CheckStatus, HoldSource, Registry};
use status_fleet::{
    FailingDependency, Fleet, FleetView, HealthRule, InstanceQuery, InstanceSummary, Member,
    RedisFleet, DEFAULT_FAILING_BUDGET, MAX_SUMMARY,
};
use tokio::time::Instant;

use crate::servers::RedisServer;

/// Counts every data center's fresh instances by condition, and its serving ones, twice at
/// the same instant: from the records (a full recount) and as the beat counts them (ranges
/// of the scored set), and checks that every member is scored as its record says. Answers the
/// mismatches.
const RECOUNT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
local full, bad = {}, {}
-- The records only: the hash also holds each instance's holder and failing lines, and the
-- fleet's hot fields, all named with a NUL.
-- Each record as of its last beat: the record keeps when its summary was written (a beat
-- whose summary is unchanged leaves it out), its holder's field the last beat.
local all, records, record_of = redis.call('HGETALL', KEYS[1]), {}, {}
for i = 1, #all, 2 do
  if not string.find(all[i], '%z') then
    local own = redis.call('HGET', KEYS[1], all[i] .. '\0own') or ''
    local beat = string.match(own, '^[^\t]*\t%d+\t[^\t\n]*\t%d+\t(%d+)')
    local head, written, tail = string.match(all[i + 1], '^([^\n]*\n[0-3]\n[01]\n)(%d+)(\n.*)$')
    if not beat or not head or tonumber(written) > tonumber(beat) then
      table.insert(bad, all[i] .. ': written ' .. tostring(written) .. ', its holder ' .. own)
    else
      record_of[all[i]] = head .. beat .. tail
      table.insert(records, all[i])
      table.insert(records, record_of[all[i]])
    end
  end
end
for i = 1, #records, 2 do
  local dc, cond, serv, beat = string.match(records[i + 1], '^([^\n]*)\n([0-3])\n([01])\n(%d+)\n')
  beat = tonumber(beat)
  if beat > now - ttl and beat <= now + ttl then
    full[dc] = full[dc] or {0, 0, 0, 0, 0}
    full[dc][tonumber(cond) + 1] = full[dc][tonumber(cond) + 1] + 1
    if serv == '1' then full[dc][5] = full[dc][5] + 1 end
  end
end
local span = 4398046511104
local function num(x) return string.format('%d', x) end
local index_of = {}
local dcs = redis.call('HGETALL', KEYS[3])
for i = 1, #dcs, 2 do
  if string.byte(dcs[i], 1) ~= 0 then
    full[dcs[i]] = full[dcs[i]] or {0, 0, 0, 0, 0}
    index_of[dcs[i]] = tonumber(dcs[i + 1])
  end
end
-- Every member is its record's: scored by its data center's index, condition, serving and beat.
for i = 1, #records, 2 do
  local dc, cond, serv, beat = string.match(records[i + 1], '^([^\n]*)\n([0-3])\n([01])\n(%d+)\n')
  local x = index_of[dc]
  local score = tonumber(redis.call('ZSCORE', KEYS[2], records[i]))
  if not x or score ~= ((x * 4 + cond) * 2 + serv) * span + tonumber(beat) then
    table.insert(bad, records[i] .. ': scored ' .. tostring(score) .. ', its record ' .. dc .. ' ' .. cond .. serv .. ' ' .. beat)
  end
end
for dc, want in pairs(full) do
  local serving = 0
  local x = index_of[dc]
  for c = 0, 3 do
    local got = 0
    for s = 0, 1 do
      local n = 0
      if x then
        local base = ((x * 4 + c) * 2 + s) * span
        n = redis.call('ZCOUNT', KEYS[2], num(base + now - ttl + 1), num(base + now + ttl))
      end
      got = got + n
      if s == 1 then serving = serving + n end
    end
    if got ~= want[c + 1] then table.insert(bad, dc .. ' ' .. c .. ': ' .. got .. ' counted, ' .. want[c + 1] .. ' recounted') end
  end
  if serving ~= want[5] then table.insert(bad, dc .. ' serving: ' .. serving .. ' counted, ' .. want[5] .. ' recounted') end
end
-- What fails. Each fresh record's failing entries are members scored by its beat; every
-- member is its record's, at its beat; and the counts are the members, grouped.
local levels = {MINOR = '1', MAJOR = '2', OUTAGE = '3'}
for i = 1, #records, 2 do
  local dc, beat, json = string.match(records[i + 1], '^([^\n]*)\n[0-3]\n[01]\n(%d+)\n(.*)$')
  if tonumber(beat) > now - ttl and tonumber(beat) <= now + ttl then
    local summary = cjson.decode(json)
    if type(summary.failing) == 'table' then
      for _, f in ipairs(summary.failing) do
        local m = dc .. '\0' .. f.id .. '\0' .. levels[f.level] .. '\0' .. records[i]
        local score = redis.call('ZSCORE', KEYS[4], m)
        if tonumber(score) ~= tonumber(beat) then
          table.insert(bad, records[i] .. ' ' .. f.id .. ': member scored ' .. tostring(score) .. ', beat ' .. beat)
        end
      end
    end
  end
end
local grouped = {}
local members = redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES')
for i = 1, #members, 2 do
  local dc, dep, lvl, id = string.match(members[i], '^([^%z]*)%z([^%z]+)%z([1-3])%z(.*)$')
  local key = dc .. '\t' .. dep .. '\t' .. lvl
  grouped[key] = (grouped[key] or 0) + 1
  local record = record_of[id]
  local rdc, rbeat, json = string.match(record or '', '^([^\n]*)\n[0-3]\n[01]\n(%d+)\n(.*)$')
  local listed = false
  if rdc == dc and tonumber(rbeat) == tonumber(members[i + 1]) then
    for _, f in ipairs(cjson.decode(json).failing or {}) do
      if f.id == dep and levels[f.level] == lvl then listed = true end
    end
  end
  if not listed then table.insert(bad, 'member ' .. string.gsub(members[i], '%z', '/') .. ' is no record\'s') end
end
local counted = redis.call('HGETALL', KEYS[5])
local seen = {}
for i = 1, #counted, 2 do
  seen[counted[i]] = true
  if tonumber(counted[i + 1]) ~= grouped[counted[i]] then
    table.insert(bad, counted[i] .. ': ' .. counted[i + 1] .. ' counted, ' .. tostring(grouped[counted[i]]) .. ' members')
  end
end
for key, n in pairs(grouped) do
  if not seen[key] then table.insert(bad, key .. ': not counted, ' .. n .. ' members') end
end
return bad
";

fn keys(key: &str) -> Vec<String> {
    ["v2:inst", "v2:live", "v2:dcs", "v2:fail", "v2:fcount"]
        .iter()
        .map(|k| format!("{{{key}}}:{k}"))
        .collect()
}

/// One field of one of the store's hashes, as it is in Redis.
/// A script of the Redis store (`beat.lua`, `rest.lua`) with its snippets put in, after the
/// store's settings (`every`: how often the fleet is counted, in ms), as the store builds it.
fn assembled(body: &str, ttl: Duration, every: u64) -> redis::Script {
    redis::Script::new(&format!(
        "local ttl, every, retire, limit, max_datacenters, max_rows, wide_budget = {}, {every}, 64, {MAX_SUMMARY}, 64, 1024, {DEFAULT_FAILING_BUDGET}\n{}",
        ttl.as_millis(),
        body.replacen("--[[ rows.lua ]]\n", include_str!("../../src/redis/rows.lua"), 1)
            .replacen("--[[ clock.lua ]]\n", include_str!("../../src/redis/clock.lua"), 1)
    ))
}

async fn hget(
    conn: &mut redis::aio::MultiplexedConnection,
    key: &str,
    field: &str,
) -> Option<String> {
    redis::cmd("HGET")
        .arg(key)
        .arg(field)
        .query_async(conn)
        .await
        .unwrap()
}

/// The summaries of the first page of the store's instances (ten at most).
async fn first_page(store: &RedisFleet) -> Vec<InstanceSummary> {
    let all = InstanceQuery {
        limit: 10,
        ..InstanceQuery::default()
    };
    let page = store.instances(&all).await.unwrap();
    page.instances.into_iter().map(|i| i.summary).collect()
}

async fn connection(redis: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// What happens to one instance of the fleet.
#[derive(Debug, Clone)]
enum Step {
    /// Instance `i` beats from data center `dc` with `condition`, held or not, failing
    /// the dependencies of `failing` (a bit each).
    Beat {
        i: usize,
        dc: usize,
        condition: usize,
        held: bool,
        failing: u8,
    },
    /// Time passes (the store's own clock).
    Wait(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..6usize, 0..3usize, 0..4usize, any::<bool>(), 0..16u8)
            .prop_map(|(i, dc, condition, held, failing)| Step::Beat { i, dc, condition, held, failing }),
        1 => (5..40u64).prop_map(Step::Wait),
    ]
}

/// The failing dependencies of a bit set: `db` (bit 0 MAJOR, or with bit 1 OUTAGE), `cache`
/// (bit 2, MINOR), `search` (bit 3, OUTAGE).
fn failing_of(bits: u8) -> Vec<FailingDependency> {
    let mut failing = Vec::new();
    if bits & 1 != 0 {
        let level = if bits & 2 != 0 {
            CheckStatus::Outage
        } else {
            CheckStatus::Major
        };
        failing.push(FailingDependency::new("db", level));
    }
    if bits & 4 != 0 {
        failing.push(FailingDependency::new("cache", CheckStatus::Minor));
    }
    if bits & 8 != 0 {
        failing.push(FailingDependency::new("search", CheckStatus::Outage));
    }
    failing
}

const CONDITIONS: [CheckStatus; 4] = [
    CheckStatus::Ok,
    CheckStatus::Minor,
    CheckStatus::Major,
    CheckStatus::Outage,
];

#[test]
fn the_counts_always_equal_a_full_recount() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let redis = RedisServer::start();
    let fleets = AtomicU16::new(0);
    // A TTL of 20 ms: instances go stale, are retired (after 200 ms) and come back (a
    // restart, in the same or another data center) within a case.
    let ttl = Duration::from_millis(20);
    proptest!(ProptestConfig::with_cases(24), |(steps in prop::collection::vec(step(), 1..40))| {
        runtime.block_on(async {
            let key = format!("prop-{}", fleets.fetch_add(1, Ordering::Relaxed));
            let store = RedisFleet::new(&redis.url(), key.clone(), ttl).unwrap();
            let mut redis_connection = connection(&redis).await;
            for step in &steps {
                match step {
                    Step::Beat { i, dc, condition, held, failing } => {
                        let holds = if *held { vec!["operator".to_owned()] } else { Vec::new() };
                        let me = InstanceSummary::new(format!("i{i}"), format!("dc{dc}"), CONDITIONS[*condition], holds, "1")
                            .with_failing(failing_of(*failing));
                        let beat = store.beat(&me).await.unwrap();
                        prop_assert_eq!(beat.healed, 0);
                    }
                    Step::Wait(ms) => tokio::time::sleep(Duration::from_millis(*ms)).await,
                }
                let bad: Vec<String> = redis::cmd("EVAL")
                    .arg(RECOUNT)
                    .arg(5)
                    .arg(keys(&key))
                    .arg(ttl.as_millis() as u64)
                    .query_async(&mut redis_connection)
                    .await
                    .unwrap();
                prop_assert!(bad.is_empty(), "after {:?}: {:?}", step, bad);
            }
            Ok(())
        })?;
    });
}

/// A fleet of `id` in `dc` over `store`, its registry OK.
async fn member(store: RedisFleet, id: &str, dc: &str) -> (Registry, Fleet) {
    let registry = Registry::new();
    let fleet = Fleet::start(
        &registry,
        store,
        Member {
            instance_id: id.to_owned(),
            datacenter: dc.to_owned(),
            version: "1".to_owned(),
            url: String::new(),
        },
        HealthRule::default(),
    );
    (registry, fleet)
}

async fn until<T>(what: &str, mut ok: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(value) = ok() {
            return value;
        }
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

const TTL: Duration = Duration::from_millis(300);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_of_the_wrong_type_is_healed_and_said() {
    let redis = RedisServer::start();
    let (_east, fleet) = member(
        RedisFleet::new(&redis.url(), "bad", TTL).unwrap(),
        "e1",
        "east",
    )
    .await;
    until("healthy", || {
        fleet
            .view()
            .datacenter("east")
            .filter(|d| d.healthy && !fleet.view().stale)
            .map(|_| ())
    })
    .await;
    // The adversarial report's repro, on the new keys: a value of the wrong type.
    let mut c = connection(&redis).await;
    let _: () = redis::cmd("DEL")
        .arg("{bad}:v2:live")
        .query_async(&mut c)
        .await
        .unwrap();
    let _: () = redis::cmd("LPUSH")
        .arg("{bad}:v2:live")
        .arg("x")
        .query_async(&mut c)
        .await
        .unwrap();
    until("healed and counted", || {
        (fleet.stats().rejected[0] >= 1).then_some(())
    })
    .await;
    // Never failing open meanwhile, never wrong: east stays healthy (stale at worst), and
    // fresh again once the store settles.
    let deadline = Instant::now() + TTL * 6;
    while Instant::now() < deadline {
        let view = fleet.view();
        assert!(
            view.datacenter("east").is_some_and(|d| d.healthy),
            "{view:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!fleet.view().stale);
    assert_eq!(fleet.stats().failures, 0, "no beat failed");
}

/// The beat script of the version before the keys became `v2` (as of commit ddb9194), kept
/// to play the instances not yet upgraded in a rolling upgrade.
const BEAT_BEFORE_V2: &str = include_str!("beat_before_v2.lua");

/// A rolling upgrade: instances of the version before beat into its keys (`{K}:live`, …)
/// while this version's beat into `{K}:v2:…`. This version counts both, so that three new
/// instances failing `db` on their own, beside four old ones that do not, are three of seven,
/// not a failure the data center shares (which would keep them ready, and the rollout
/// going). What an old instance fails is counted too, in the whole list and in the rows an
/// instance is judged by past the budget; once the old ones stop, they leave the counts
/// within a TTL, and what they failed is counted down though none of them runs the upkeep
/// that used to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_upgrade_counts_the_instances_of_both_versions() {
    let redis = RedisServer::start();
    let mut c = connection(&redis).await;
    for past_budget in [false, true] {
        let key = if past_budget {
            "upgrade-own"
        } else {
            "upgrade"
        };
        let mut store = RedisFleet::new(&redis.url(), key, TTL).unwrap();
        if past_budget {
            store = store.failing_budget(1);
        }
        rolling_upgrade(&store, &mut c, key, past_budget).await;
    }
}

/// The same on a Redis Cluster: the keys before are named by the script, not passed, and a
/// cluster node lets a script touch only keys of its own slot. The hash tag keeps them there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_redis_cluster_a_rolling_upgrade_counts_the_instances_of_both_versions() {
    let cluster = crate::servers::RedisCluster::start();
    let store = RedisFleet::new(&cluster.urls(), "upgrade", TTL).unwrap();
    // The old version's beats go straight to the master of the fleet's slot.
    let master = cluster.ports[cluster.master_of("{upgrade}:v2:inst")];
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{master}/"))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    rolling_upgrade(&store, &mut c, "upgrade", false).await;
}

/// One rolling upgrade under `key`: `past_budget`, each instance sent only the rows it is
/// judged by.
async fn rolling_upgrade(
    store: &RedisFleet,
    c: &mut redis::aio::MultiplexedConnection,
    key: &str,
    past_budget: bool,
) {
    let before = redis::Script::new(&format!(
        "local ttl, every, retire, limit, max_datacenters, max_rows, wide_budget = {}, 10, 64, {MAX_SUMMARY}, 64, 1024, {DEFAULT_FAILING_BUDGET}\n{BEAT_BEFORE_V2}",
        TTL.as_millis()
    ));
    let old_keys: Vec<String> = ["inst", "live", "dcs", "fail", "fcount"]
        .iter()
        .map(|k| format!("{{{key}}}:{k}"))
        .collect();
    let mut old_sequence = 0u64;
    // Four old instances; o4 fails `db` at MINOR.
    let mut old_beat = async |c: &mut redis::aio::MultiplexedConnection| {
        for i in 1..=4 {
            old_sequence += 1;
            let id = format!("o{i}");
            let (condition, failing) = if i == 4 { ("1", "db\t1") } else { ("0", "") };
            let me = InstanceSummary::new(
                &id,
                "east",
                CONDITIONS[usize::from(i == 4)],
                Vec::new(),
                "0",
            );
            let answer: Vec<redis::Value> = before
                .key(old_keys.clone())
                .arg(&id)
                .arg("east")
                .arg(condition)
                .arg("1")
                .arg(serde_json::to_string(&me).unwrap())
                .arg(0)
                .arg(0)
                .arg(format!("old-{i}"))
                .arg(failing)
                .arg("")
                .arg(old_sequence)
                .arg(0)
                .arg(0)
                .invoke_async(c)
                .await
                .unwrap();
            let status: String = redis::from_redis_value(&answer[0]).unwrap();
            assert!(status == "ok" || status == "settling", "{status}");
        }
    };
    // Three new ones, failing `db` at OUTAGE.
    let new: Vec<InstanceSummary> = (1..=3)
        .map(|i| {
            InstanceSummary::new(
                format!("n{i}"),
                "east",
                CheckStatus::Outage,
                Vec::new(),
                "1",
            )
            .with_failing(vec![FailingDependency::new("db", CheckStatus::Outage)])
        })
        .collect();
    let east = |beat: &status_fleet::Beat| {
        beat.datacenters
            .iter()
            .find(|d| d.datacenter == "east")
            .cloned()
            .unwrap()
    };
    let db = |d: &status_fleet::DatacenterCounts, level: CheckStatus| {
        d.failing
            .iter()
            .find(|f| f.dependency == "db" && f.level == level)
            .map_or(0, |f| f.instances)
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let seen = loop {
        old_beat(c).await;
        let mut last = None;
        for me in &new {
            last = Some(store.beat(me).await.unwrap());
        }
        let last = last.unwrap();
        assert_eq!(last.failing_partial, past_budget, "{key}");
        let d = east(&last);
        if d.conditions.total() == 7
            && db(&d, CheckStatus::Outage) == 3
            && db(&d, CheckStatus::Minor) == 1
        {
            break d;
        }
        assert!(Instant::now() < deadline, "{key}: {d:?}");
        tokio::time::sleep(store.counted_every()).await;
    };
    assert_eq!(
        (
            seen.conditions.ok,
            seen.conditions.minor,
            seen.conditions.outage,
            seen.serving
        ),
        (3, 1, 3, 4),
        "{key}"
    );
    let fleet = hget(c, &format!("{{{key}}}:v2:inst"), "\0fleet")
        .await
        .unwrap();
    assert_eq!(
        fleet.split('\t').nth(4),
        Some("1"),
        "{key}: bridged, {fleet:?}"
    );
    // Judged among the six others: two of six fail `db` at OUTAGE as well; not the data
    // center's. (Among the new ones alone it would be: two of two.)
    let rule = HealthRule::default();
    assert!(!rule.shared(2, 6) && rule.shared(2, 2));

    // The old instances stop: within a TTL and a count, only the new ones are left, and
    // o4's `db` is counted down in the old keys, by this version's upkeep.
    let stopped = Instant::now();
    let d = loop {
        let mut last = None;
        for me in &new {
            last = Some(store.beat(me).await.unwrap());
        }
        let d = east(&last.unwrap());
        if d.conditions.total() == 3 && db(&d, CheckStatus::Minor) == 0 {
            break d;
        }
        assert!(
            Instant::now() < stopped + Duration::from_secs(10),
            "{key}: {d:?}"
        );
        tokio::time::sleep(store.counted_every()).await;
    };
    assert_eq!(
        (d.conditions.outage, db(&d, CheckStatus::Outage)),
        (3, 3),
        "{key}"
    );
    assert!(stopped.elapsed() >= TTL - Duration::from_millis(50));
    let minor = hget(c, &format!("{{{key}}}:fcount"), "east\tdb\t1").await;
    assert_eq!(minor, None, "{key}: counted down");
}

/// A data center lost from `{K}:v2:dcs` (deleted by hand, a partial restore) is missing from
/// the next counts; its instances, no longer named in the counts they hold, look their data
/// center up at their next beat, find it gone and index it again: the counts recover within
/// a few beats, every member scored as its record says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_center_lost_from_the_store_is_indexed_again() {
    let redis = RedisServer::start();
    let store = RedisFleet::new(&redis.url(), "lost", TTL).unwrap();
    let east = InstanceSummary::new("e1", "east", CheckStatus::Ok, Vec::new(), "1");
    let west = InstanceSummary::new("w1", "west", CheckStatus::Minor, Vec::new(), "1");
    let counted = |beat: &status_fleet::Beat| {
        let mut names: Vec<(String, usize)> = beat
            .datacenters
            .iter()
            .map(|d| (d.datacenter.clone(), d.conditions.total()))
            .collect();
        names.sort();
        names
    };
    let both = vec![("east".to_owned(), 1), ("west".to_owned(), 1)];
    let mut c = connection(&redis).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        store.beat(&east).await.unwrap();
        if counted(&store.beat(&west).await.unwrap()) == both {
            break;
        }
        assert!(Instant::now() < deadline, "never counted");
        tokio::time::sleep(store.counted_every()).await;
    }
    let _: () = redis::cmd("HDEL")
        .arg("{lost}:v2:dcs")
        .arg("east")
        .query_async(&mut c)
        .await
        .unwrap();
    let mut missed = false;
    loop {
        store.beat(&east).await.unwrap();
        let beat = store.beat(&west).await.unwrap();
        if counted(&beat) == both && missed {
            break;
        }
        missed |= counted(&beat) == [("west".to_owned(), 1)];
        assert!(
            Instant::now() < deadline + Duration::from_secs(5),
            "{beat:?}"
        );
        tokio::time::sleep(store.counted_every()).await;
    }
    assert!(hget(&mut c, "{lost}:v2:dcs", "east").await.is_some());
    let bad: Vec<String> = redis::cmd("EVAL")
        .arg(RECOUNT)
        .arg(5)
        .arg(keys("lost"))
        .arg(TTL.as_millis() as u64)
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(bad.is_empty(), "{bad:?}");
}

/// Instances that beat in the same millisecond share a score: a page that ends among them
/// goes on with the others, each listed once, forward and the worst first; across data
/// centers, in the order the store first saw them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_goes_on_among_instances_of_one_score() {
    let redis = RedisServer::start();
    let store = RedisFleet::new(&redis.url(), "ties", TTL).unwrap();
    let first = InstanceSummary::new("t0", "east", CheckStatus::Ok, Vec::new(), "1");
    store.beat(&first).await.unwrap();
    let mut c = connection(&redis).await;
    let score = hget(&mut c, "{ties}:v2:inst", "t0\0own").await.unwrap();
    // (`owner \t sequence \t dc \t index \t beat`: t0's beat, which the others share.)
    let beat: u64 = score.split('\t').nth(4).unwrap().parse().unwrap();
    let ids = ["t1", "t2", "t3", "t4", "t5"];
    for id in ids {
        let _: () = redis::cmd("HSET")
            .arg("{ties}:v2:inst")
            .arg(id)
            .arg(format!(
                "east\n0\n1\n{beat}\n{}",
                serde_json::to_string(&InstanceSummary::new(
                    id,
                    "east",
                    CheckStatus::Ok,
                    Vec::new(),
                    "1"
                ))
                .unwrap()
            ))
            .query_async(&mut c)
            .await
            .unwrap();
        let _: () = redis::cmd("ZADD")
            .arg("{ties}:v2:live")
            .arg((1u64 << 42) + beat)
            .arg(id)
            .query_async(&mut c)
            .await
            .unwrap();
    }
    // West, the second data center the store sees: after east, its OK instance before its
    // OUTAGE one.
    for (id, condition) in [("w1", CheckStatus::Outage), ("w2", CheckStatus::Ok)] {
        let me = InstanceSummary::new(id, "west", condition, Vec::new(), "1");
        store.beat(&me).await.unwrap();
    }
    for datacenter in [Some("east"), None] {
        for worst_first in [false, true] {
            let mut seen = Vec::new();
            let mut cursor = None;
            loop {
                let page = store
                    .instances(&InstanceQuery {
                        datacenter: datacenter.map(str::to_owned),
                        cursor: cursor.clone(),
                        limit: 2,
                        worst_first,
                    })
                    .await
                    .unwrap();
                seen.extend(page.instances.iter().map(|i| i.summary.instance_id.clone()));
                match page.next_cursor {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
            let mut want = vec!["t0", "t1", "t2", "t3", "t4", "t5"];
            if datacenter.is_none() {
                want.extend(["w2", "w1"]);
            }
            if worst_first {
                want.reverse();
            }
            assert_eq!(seen, want, "{datacenter:?}, worst first: {worst_first}");
        }
    }
}

/// Garbage in the scored keys: data centers with an index no beat writes (not a number, a
/// float, negative), members scored below zero, past every group, or between beats of
/// nothing. No beat fails, nothing of it is counted or listed, the upkeep forgets the bad
/// data centers, and a real instance of one of them is indexed afresh.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_in_the_scored_keys_is_neither_counted_nor_listed() {
    let redis = RedisServer::start();
    let store = RedisFleet::new(&redis.url(), "junk", TTL).unwrap();
    let a1 = InstanceSummary::new("a1", "east", CheckStatus::Ok, Vec::new(), "1");
    store.beat(&a1).await.unwrap();
    let mut c = connection(&redis).await;
    for (dc, index) in [
        ("west", "abc"),
        ("north", "1e3"),
        ("south", "-1"),
        // (0.125 would put the first group of "half" on east's OK and serving one, a1's:
        // counted twice, were it trusted.)
        ("half", "0.125"),
    ] {
        let _: () = redis::cmd("HSET")
            .arg("{junk}:v2:dcs")
            .arg(dc)
            .arg(index)
            .query_async(&mut c)
            .await
            .unwrap();
    }
    for (member, score) in [
        ("neg", "-5"),
        ("past", "1e18"),
        ("frac", "1.5"),
        ("inf", "+inf"),
    ] {
        let _: () = redis::cmd("ZADD")
            .arg("{junk}:v2:live")
            .arg(score)
            .arg(member)
            .query_async(&mut c)
            .await
            .unwrap();
    }
    tokio::time::sleep(store.counted_every() * 2).await;
    let beat = store.beat(&a1).await.unwrap();
    let names: Vec<(&str, usize)> = beat
        .datacenters
        .iter()
        .map(|d| (d.datacenter.as_str(), d.conditions.total()))
        .collect();
    assert_eq!(names, [("east", 1)], "{beat:?}");
    for dc in ["west", "north", "south", "half"] {
        assert_eq!(
            hget(&mut c, "{junk}:v2:dcs", dc).await,
            None,
            "{dc} forgotten"
        );
    }
    let page = store
        .instances(&InstanceQuery {
            limit: 500,
            ..InstanceQuery::default()
        })
        .await
        .unwrap();
    let listed: Vec<&str> = page
        .instances
        .iter()
        .map(|i| i.summary.instance_id.as_str())
        .collect();
    assert_eq!(listed, ["a1"]);
    // A real instance of a forgotten one: indexed afresh, counted.
    let w1 = InstanceSummary::new("w1", "west", CheckStatus::Ok, Vec::new(), "1");
    store.beat(&w1).await.unwrap();
    let index = hget(&mut c, "{junk}:v2:dcs", "west").await.unwrap();
    assert!(index.parse::<u8>().is_ok(), "{index:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let beat = store.beat(&w1).await.unwrap();
        if beat
            .datacenters
            .iter()
            .any(|d| d.datacenter == "west" && d.conditions.total() == 1)
        {
            break;
        }
        assert!(Instant::now() < deadline, "{beat:?}");
        tokio::time::sleep(store.counted_every()).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_store_holds_is_never_trusted_as_written() {
    let redis = RedisServer::start();
    let store = RedisFleet::new(&redis.url(), "forged", TTL).unwrap();
    // A summary over the cap is refused by the client; one that claims another id is listed
    // under the id it beat as.
    let mut big = InstanceSummary::new("a1", "east", CheckStatus::Ok, Vec::new(), "1");
    big.version = "x".repeat(MAX_SUMMARY);
    assert!(store.beat(&big).await.is_err());
    let mut liar = InstanceSummary::new("a1", "east", CheckStatus::Outage, Vec::new(), "1");
    liar.instance_id = "a1".into();
    store.beat(&liar).await.unwrap();
    let mut c = connection(&redis).await;
    // Forged by hand: a 30 MB record, and an instance stamped in the year 3000 in a forged
    // data center that would be healthy forever.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let huge = format!("east\n0\n1\n{now}\n{}", "x".repeat(30 << 20));
    let _: () = redis::cmd("HSET")
        .arg("{forged}:v2:inst")
        .arg("huge")
        .arg(huge)
        .query_async(&mut c)
        .await
        .unwrap();
    // Its member stamped after the 30 MB are written, which takes a while on a loaded
    // machine: the test is about its size, not its age.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    // (A member's score: `((index * 4 + condition) * 2 + serving) * 2^42 + beat`; east, the
    // first data center the store saw, has index 0.)
    let east_index = hget(&mut c, "{forged}:v2:dcs", "east").await;
    assert_eq!(east_index.as_deref(), Some("0"));
    let score = |index: u64, condition: u64, serving: u64, beat: u64| {
        ((index * 4 + condition) * 2 + serving) * (1 << 42) + beat
    };
    let _: () = redis::cmd("ZADD")
        .arg("{forged}:v2:live")
        .arg(score(0, 0, 1, u64::try_from(now).unwrap()))
        .arg("huge")
        .query_async(&mut c)
        .await
        .unwrap();
    // Three years ahead: healthy for as long, were it trusted.
    let future = u64::try_from(now).unwrap() + 100_000_000_000;
    let _: () = redis::cmd("ZADD")
        .arg("{forged}:v2:live")
        .arg(score(1, 0, 1, future))
        .arg("ghost")
        .query_async(&mut c)
        .await
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg("{forged}:v2:inst")
        .arg("ghost")
        .arg(format!("north\n0\n1\n{future}\n{{}}"))
        .query_async(&mut c)
        .await
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg("{forged}:v2:dcs")
        .arg("north")
        .arg("1")
        .query_async(&mut c)
        .await
        .unwrap();
    // The counts are made at most every 100 ms: the next upkeep sees the forgeries.
    tokio::time::sleep(store.counted_every() * 2).await;
    let beat = store.beat(&liar).await.unwrap();
    assert!(
        beat.datacenters.iter().all(|d| d.datacenter != "north"),
        "a data center stamped in the future is dropped: {beat:?}"
    );
    let east = beat
        .datacenters
        .iter()
        .find(|d| d.datacenter == "east")
        .unwrap();
    // The liar counts as what it beat as (OUTAGE, under its own id); the forged record, well
    // formed and stamped now, counts as one more instance (a writer of the store can always
    // add instances), but its 30 MB never leave Redis.
    assert_eq!(
        (east.conditions.outage, east.conditions.ok, east.serving),
        (1, 1, 1),
        "{east:?}"
    );
    let page = store
        .instances(&InstanceQuery {
            datacenter: None,
            cursor: None,
            limit: 500,
            worst_first: false,
        })
        .await
        .unwrap();
    // What no beat could have written is not listed (30 MB are never sent on), as etcd
    // skips it too.
    assert!(page
        .instances
        .iter()
        .all(|i| i.summary.instance_id != "huge"));
    assert!(page
        .instances
        .iter()
        .all(|i| i.summary.instance_id != "ghost" || i.stale));
    // The member stamped in the future was retired by the upkeep, and its data center with it.
    let score: Option<f64> = redis::cmd("ZSCORE")
        .arg("{forged}:v2:live")
        .arg("ghost")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(score, None, "retired");
    let north: bool = redis::cmd("HEXISTS")
        .arg("{forged}:v2:dcs")
        .arg("north")
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(!north, "a data center with no instance left is forgotten");
    // A bad cursor is refused, not trusted.
    let bad = store
        .instances(&InstanceQuery {
            datacenter: None,
            cursor: Some("zz".into()),
            limit: 5,
            worst_first: false,
        })
        .await;
    assert!(bad.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn started_without_a_store_its_own_datacenter_answers_by_its_own_readiness() {
    // Nothing listens on this port.
    let port = crate::servers::free_port();
    let store = RedisFleet::new(&format!("redis://127.0.0.1:{port}/"), "down", TTL).unwrap();
    let (registry, fleet) = member(store, "e1", "east").await;
    let view = fleet.view();
    let east = view
        .datacenter("east")
        .expect("its own data center, never a 404");
    assert!(east.healthy && view.stale && !view.fail_open, "{view:?}");
    // Out of rotation: its own data center is unhealthy, then every data center it knows
    // fails open, after three TTLs without news.
    registry
        .hold(HoldSource::Operator, "deploy", None, None)
        .unwrap();
    until("unhealthy by its own readiness", || {
        let view = fleet.view();
        view.datacenter("east").filter(|d| !d.healthy).map(|_| ())
    })
    .await;
    until("failing open without news", || {
        fleet.view().fail_open.then_some(())
    })
    .await;
    // And the store is a dependency that says so.
    let result = registry.result("fleet").unwrap();
    assert_eq!(
        result.raw_status(),
        CheckStatus::Outage,
        "{}",
        result.message()
    );
    assert!(fleet.stats().failures > 0);
    assert!(fleet
        .instances(InstanceQuery {
            limit: 10,
            ..InstanceQuery::default()
        })
        .await
        .is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_redis_cluster_a_master_lost_leaves_views_stale_at_worst_never_wrong() {
    let mut cluster = crate::servers::RedisCluster::start();
    // A TTL long enough that the replica's takeover (a node timeout of 1 s) comes before
    // three TTLs without news, when views would fail open by rule.
    let ttl = Duration::from_secs(3);
    let mut fleet = Vec::new();
    for (id, dc) in [
        ("e1", "east"),
        ("e2", "east"),
        ("w1", "west"),
        ("w2", "west"),
    ] {
        let store = RedisFleet::new(&cluster.urls(), "cluster-test", ttl).unwrap();
        fleet.push(member(store, id, dc).await);
    }
    let (_, probe) = &fleet[0];
    let healthy_both = |view: &status_fleet::FleetView| {
        ["east", "west"].iter().all(|dc| {
            view.datacenter(dc)
                .is_some_and(|d| d.healthy && d.fresh == 2)
        })
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !healthy_both(&probe.view()) || probe.view().stale {
        assert!(Instant::now() < deadline, "never fresh: {:?}", probe.view());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // West degrades, seen through the cluster.
    fleet[2]
        .0
        .hold(HoldSource::Operator, "deploy", None, None)
        .unwrap();
    fleet[3]
        .0
        .hold(HoldSource::Operator, "deploy", None, None)
        .unwrap();
    until("west unhealthy", || {
        probe
            .view()
            .datacenter("west")
            .filter(|d| !d.healthy)
            .map(|_| ())
    })
    .await;

    // The master holding the fleet's slot dies.
    let master = cluster.master_of("{cluster-test}:v2:inst");
    cluster.kill(master);
    let killed = Instant::now();
    // For six seconds, through the takeover: never wrong (east healthy, west unhealthy, no
    // failing open), stale at worst.
    while killed.elapsed() < Duration::from_secs(6) {
        let view = probe.view();
        assert!(
            view.datacenter("east").is_some_and(|d| d.healthy),
            "{view:?}"
        );
        assert!(
            view.datacenter("west").is_some_and(|d| !d.healthy),
            "{view:?}"
        );
        assert!(!view.fail_open, "{view:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Then fresh again, through the replica, and beating.
    until("fresh again after the takeover", || {
        (!probe.view().stale).then_some(())
    })
    .await;
    let before = probe.stats().beats;
    tokio::time::sleep(ttl).await;
    assert!(probe.stats().beats > before, "beating again");
    let view = probe.view();
    assert!(
        view.datacenter("east")
            .is_some_and(|d| d.healthy && d.fresh == 2),
        "{view:?}"
    );
}

/// Garbage under an etcd fleet's prefix: keys no instance could have written are skipped and
/// counted by reason, a value that names another instance is counted as its key says, and a
/// fleet whose prefix holds something else is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_etcd_holds_is_never_trusted_as_written() {
    use status_fleet::{EtcdFleet, FleetStore, REJECTIONS};

    let etcd = crate::etcd_server::EtcdCluster::start(1);
    let mut client = etcd_client::Client::connect([etcd.url(0)], None)
        .await
        .unwrap();
    let summary = |id: &str, dc: &str, condition: &str| {
        format!(
            r#"{{"instanceId":"{id}","datacenter":"{dc}","condition":"{condition}","holds":[],"version":"1"}}"#
        )
    };
    let garbage: [(&[u8], Vec<u8>); 5] = [
        (b"forged/i/east", summary("x", "east", "OK").into_bytes()),
        (b"forged/i/\0noid", summary("x", "east", "OK").into_bytes()),
        (b"forged/i/east\0big", vec![b' '; MAX_SUMMARY + 1]),
        (b"forged/i/east\0json", b"{not json".to_vec()),
        // Says it is someone else, elsewhere, failing: counted as its key says.
        (
            b"forged/i/west\0w1",
            summary("impostor", "north", "OUTAGE").into_bytes(),
        ),
    ];
    for (key, value) in &garbage {
        client.put(key.to_vec(), value.clone(), None).await.unwrap();
    }
    let store = EtcdFleet::new(&etcd.urls(), "forged", Duration::from_secs(2)).unwrap();
    assert!(store.verify().await.unwrap());
    let me = InstanceSummary::new("e1", "east", CheckStatus::Ok, Vec::new(), "1");
    let deadline = Instant::now() + Duration::from_secs(10);
    // Skipped entries are told once, by the beat after the read that met them: summed over
    // the beats until this instance's own write is counted.
    let mut skipped_in_all = [0; REJECTIONS.len()];
    let beat = loop {
        if let Ok(beat) = store.beat(&me).await {
            for (sum, n) in skipped_in_all.iter_mut().zip(beat.skipped) {
                *sum += n;
            }
            if beat.datacenters.iter().any(|d| d.datacenter == "east") {
                break beat;
            }
        }
        assert!(Instant::now() < deadline, "never counted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let names: Vec<(&str, usize, usize)> = beat
        .datacenters
        .iter()
        .map(|d| {
            (
                d.datacenter.as_str(),
                d.conditions.total(),
                d.conditions.outage,
            )
        })
        .collect();
    assert_eq!(names, [("east", 1, 0), ("west", 1, 1)]);
    let skipped =
        |reason: &str| skipped_in_all[REJECTIONS.iter().position(|r| *r == reason).unwrap()];
    assert_eq!(
        (
            skipped("bad_id"),
            skipped("bad_datacenter"),
            skipped("too_large"),
            skipped("bad_state")
        ),
        (1, 1, 1, 1),
        "{skipped_in_all:?}"
    );

    // Listed by key too.
    let page = store
        .instances(&InstanceQuery {
            datacenter: Some("west".into()),
            cursor: None,
            limit: 10,
            worst_first: false,
        })
        .await
        .unwrap();
    assert_eq!(page.instances.len(), 1);
    assert_eq!(page.instances[0].summary.instance_id, "w1");
    assert_eq!(page.instances[0].summary.datacenter, "west");
    assert!(store
        .instances(&InstanceQuery {
            datacenter: None,
            cursor: Some("zz".into()),
            limit: 10,
            worst_first: false,
        })
        .await
        .unwrap_err()
        .is_invalid());

    // A prefix that holds something else.
    client
        .put("config/database", "postgres://…", None)
        .await
        .unwrap();
    let foreign = EtcdFleet::new(&etcd.urls(), "config", Duration::from_secs(2)).unwrap();
    let refused = foreign.verify().await.unwrap_err();
    assert!(
        refused.is_invalid() && refused.to_string().contains("holds something else"),
        "{refused}"
    );
    let e = loop {
        match foreign.beat(&me).await {
            Err(e) if e.to_string().contains("holds something else") => break e,
            _ => {}
        }
        assert!(
            Instant::now() < deadline + Duration::from_secs(5),
            "beats never said why"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(matches!(e, status_fleet::BeatError::Store(_)));
    let written = client
        .get(
            "config/",
            Some(
                etcd_client::GetOptions::new()
                    .with_prefix()
                    .with_keys_only(),
            ),
        )
        .await
        .unwrap();
    let keys: Vec<&[u8]> = written
        .kvs()
        .iter()
        .map(etcd_client::KeyValue::key)
        .collect();
    assert_eq!(
        keys,
        [b"config/database".as_slice()],
        "nothing written in someone else's prefix"
    );
}

/// The adversarial report's repro: `--instance-id dup` in `east` and in `west` on one Redis.
/// The first process holds the id; the second is refused and says so (its `fleet` dependency
/// MAJOR, `id_taken` counted), never overwrites the first's record, and the counts equal the
/// listing throughout. Once the holder stops, the id is free a TTL later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_given_one_id_never_overwrite_each_other() {
    use status_fleet::{BeatError, REJECTIONS};

    let redis = RedisServer::start();
    let first = RedisFleet::new(&redis.url(), "dup", TTL).unwrap();
    let second = RedisFleet::new(&redis.url(), "dup", TTL).unwrap();
    let east = InstanceSummary::new("dup", "east", CheckStatus::Ok, Vec::new(), "1");
    let west = InstanceSummary::new("dup", "west", CheckStatus::Outage, Vec::new(), "1");
    first.beat(&east).await.unwrap();
    for _ in 0..5 {
        let refused = second.beat(&west).await.unwrap_err();
        assert!(
            matches!(&refused, BeatError::IdTaken { datacenter } if datacenter == "east"),
            "{refused:?}"
        );
        let beat = first.beat(&east).await.unwrap();
        let counted: Vec<(String, usize)> = beat
            .datacenters
            .iter()
            .map(|d| (d.datacenter.clone(), d.conditions.ok + d.conditions.outage))
            .collect();
        assert_eq!(counted, [("east".to_owned(), 1)]);
        let all = InstanceQuery {
            limit: 100,
            ..InstanceQuery::default()
        };
        let listed = first.instances(&all).await.unwrap();
        let listed: Vec<(String, String, CheckStatus)> = listed
            .instances
            .iter()
            .map(|i| {
                (
                    i.summary.instance_id.clone(),
                    i.summary.datacenter.clone(),
                    i.summary.condition,
                )
            })
            .collect();
        assert_eq!(
            listed,
            [("dup".to_owned(), "east".to_owned(), CheckStatus::Ok)],
            "the first one's record, untouched"
        );
    }

    // Through a Fleet: the refused one says so.
    let (registry, fleet) = member(second, "dup", "west").await;
    let message = until("the fleet dependency says the id is taken", || {
        let result = registry.result("fleet")?;
        (result.status() == CheckStatus::Major).then(|| result.message().to_string())
    })
    .await;
    assert!(message.contains("another process"), "{message}");
    let at = REJECTIONS.iter().position(|r| *r == "id_taken").unwrap();
    assert!(fleet.stats().rejected[at] >= 1);

    // The holder stops: a TTL later the id is the other's.
    drop(first);
    until("the id passes to the one left", || {
        let result = registry.result("fleet")?;
        (result.status() == CheckStatus::Ok).then_some(())
    })
    .await;
}

/// On etcd, an instance is keyed by data center and id: a second process given the same id
/// in the same data center is refused and never replaces the first's summary; it takes the
/// id once the holder's lease ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_etcd_one_id_is_one_process() {
    use status_fleet::{BeatError, EtcdFleet, FleetStore};

    let etcd = crate::etcd_server::EtcdCluster::start(1);
    let ttl = Duration::from_secs(2);
    let first = EtcdFleet::new(&etcd.urls(), "dup", ttl).unwrap();
    let second = EtcdFleet::new(&etcd.urls(), "dup", ttl).unwrap();
    assert!(first.verify().await.unwrap());
    let ok = InstanceSummary::new("dup", "east", CheckStatus::Ok, Vec::new(), "1");
    let failing = InstanceSummary::new("dup", "east", CheckStatus::Outage, Vec::new(), "1");
    first.beat(&ok).await.unwrap();
    let refused = second.beat(&failing).await.unwrap_err();
    assert!(matches!(refused, BeatError::IdTaken { .. }), "{refused:?}");
    let listed = until_listed(&first, 1).await;
    assert_eq!(listed[0].summary.condition, CheckStatus::Ok, "untouched");
    // The holder stops beating: its lease ends, and the id passes.
    drop(first);
    let deadline = Instant::now() + ttl * 4;
    loop {
        match second.beat(&failing).await {
            Ok(_) => break,
            Err(BeatError::IdTaken { .. }) => {
                assert!(Instant::now() < deadline, "the id never passed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    let listed = until_listed(&second, 1).await;
    assert_eq!(listed[0].summary.condition, CheckStatus::Outage);

    async fn until_listed(store: &EtcdFleet, n: usize) -> Vec<status_fleet::InstanceView> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let all = InstanceQuery {
                limit: 100,
                ..InstanceQuery::default()
            };
            let page = store.instances(&all).await.unwrap();
            if page.instances.len() == n {
                return page.instances;
            }
            assert!(Instant::now() < deadline, "{page:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The adversarial report's repro, small: instances in ever new data-center names. Past the
/// cap a new one is refused and counted, the known ones beat on, and the upkeep counts no
/// more than the cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_centers_past_the_cap_are_refused() {
    use status_fleet::BeatError;

    let redis = RedisServer::start();
    let store = RedisFleet::new(&redis.url(), "many", Duration::from_secs(3))
        .unwrap()
        .max_datacenters(3);
    for dc in 0..3 {
        let me = InstanceSummary::new(
            format!("i{dc}"),
            format!("dc{dc}"),
            CheckStatus::Ok,
            Vec::new(),
            "1",
        );
        store.beat(&me).await.unwrap();
    }
    for dc in 3..20 {
        let me = InstanceSummary::new(
            format!("i{dc}"),
            format!("dc{dc}"),
            CheckStatus::Ok,
            Vec::new(),
            "1",
        );
        let refused = store.beat(&me).await.unwrap_err();
        assert!(
            matches!(
                refused,
                BeatError::Rejected(status_fleet::Rejection::TooManyDatacenters)
            ),
            "{refused:?}"
        );
    }
    // A known data center takes more instances; the counts (made at most every thirtieth
    // of the TTL) know the three only.
    tokio::time::sleep(store.counted_every() * 2).await;
    let more = InstanceSummary::new("j0", "dc0", CheckStatus::Ok, Vec::new(), "1");
    let beat = store.beat(&more).await.unwrap();
    let names: Vec<&str> = beat
        .datacenters
        .iter()
        .map(|d| d.datacenter.as_str())
        .collect();
    assert_eq!(names, ["dc0", "dc1", "dc2"]);
    let all = InstanceQuery {
        limit: 100,
        ..InstanceQuery::default()
    };
    let listed = store.instances(&all).await.unwrap();
    assert_eq!(
        listed.instances.len(),
        4,
        "nothing of the refused ones kept"
    );
}

/// What fails across the fleet, handed to every instance, costs the store its size once per
/// instance at each change. Past the budget, each instance is sent only the rows it is judged
/// by (its own failing dependencies in its data center, at every level), enough to judge
/// them mine or shared; the whole list goes to an instance someone looks through. Within
/// it, every instance holds the whole list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_budget_each_instance_is_sent_what_it_is_judged_by() {
    let redis = RedisServer::start();
    let ttl = Duration::from_secs(3);
    let summary = |id: &str, dc: &str, failing: Vec<FailingDependency>| {
        InstanceSummary::new(id, dc, CheckStatus::Ok, Vec::new(), "1").with_failing(failing)
    };
    let db = || vec![FailingDependency::new("db", CheckStatus::Outage)];
    let disk = || vec![FailingDependency::new("disk", CheckStatus::Minor)];
    let fleet = [
        summary("a1", "east", db()),
        summary("a2", "east", db()),
        summary("a3", "east", db()),
        summary("a4", "east", Vec::new()),
        summary("w1", "west", disk()),
    ];
    let mut c = connection(&redis).await;
    for (key, budget, wide) in [("small", DEFAULT_FAILING_BUDGET, true), ("large", 0, false)] {
        // Each instance its own process (its own copy of the list).
        let stores: Vec<RedisFleet> = fleet
            .iter()
            .map(|_| {
                RedisFleet::new(&redis.url(), key, ttl)
                    .unwrap()
                    .failing_budget(budget)
            })
            .collect();
        let beat_all = || async {
            let mut beats = Vec::new();
            for (store, me) in stores.iter().zip(&fleet) {
                beats.push(store.beat(me).await.unwrap());
            }
            beats
        };
        beat_all().await;
        // Past an upkeep: what fails counted and read out.
        tokio::time::sleep(stores[0].counted_every() * 3).await;
        let beats = beat_all().await;
        let view =
            |i: usize| FleetView::from_counts(beats[i].datacenters.clone(), HealthRule::default());
        let said = |i: usize, dc: &str| -> Vec<String> {
            view(i)
                .datacenter(dc)
                .unwrap()
                .failing
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        // a1 fails db with two others of east: shared, in either mode.
        assert_eq!(
            said(0, "east"),
            ["db OUTAGE on 3 of 4 in east, shared"],
            "{key}"
        );
        assert_eq!(said(4, "west"), ["disk MINOR on 1 of 1 in west"], "{key}");
        // The fleet's field (`at \t failing_at \t settling \t past \t bridged \t counts_at`)
        // says whether what fails is past the budget.
        let upkept = hget(&mut c, &format!("{{{key}}}:v2:inst"), "\0fleet")
            .await
            .unwrap();
        let past = upkept.split('\t').nth(3) == Some("1");
        assert_eq!(past, !wide, "{key}: {upkept:?}");
        assert!(beats.iter().all(|b| b.failing_partial != wide), "{key}");
        if wide {
            // Every instance holds the whole list.
            assert_eq!(said(3, "east"), ["db OUTAGE on 3 of 4 in east, shared"]);
            assert_eq!(said(0, "west"), ["disk MINOR on 1 of 1 in west"]);
            continue;
        }
        // Past the budget: a1 knows nothing of west's disk, a4 (failing nothing) nothing at
        // all, however often they beat.
        assert!(said(0, "west").is_empty(), "{:?}", said(0, "west"));
        assert!(said(3, "east").is_empty() && said(3, "west").is_empty());
        // Someone looks at the fleet through a4: its next beat brings the whole list.
        stores[3].look();
        let looked = stores[3].beat(&fleet[3]).await.unwrap();
        assert!(!looked.failing_partial);
        let view = FleetView::from_counts(looked.datacenters, HealthRule::default());
        let rows: Vec<String> = view.what_fails().iter().map(ToString::to_string).collect();
        assert_eq!(
            rows,
            [
                "db OUTAGE on 3 of 4 in east, shared",
                "disk MINOR on 1 of 1 in west"
            ]
        );
    }
}

/// A change of what fails goes to every instance holding the list, so it is handed out at
/// once only when it says something new: a row that comes or goes, a count moved by more
/// than an eighth. A count drifting by less waits until the copy is a TTL old.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_fails_is_handed_out_at_once_only_when_it_says_something_new() {
    let redis = RedisServer::start();
    let ttl = Duration::from_secs(2);
    let beaters = RedisFleet::new(&redis.url(), "drift", ttl).unwrap();
    let viewer = RedisFleet::new(&redis.url(), "drift", ttl).unwrap();
    let me = InstanceSummary::new("viewer", "east", CheckStatus::Ok, Vec::new(), "1");
    let failing = |i: usize, dc: &str, dep: &str| {
        InstanceSummary::new(format!("i{i}"), dc, CheckStatus::Ok, Vec::new(), "1")
            .with_failing(vec![FailingDependency::new(dep, CheckStatus::Outage)])
    };
    let mut fleet: Vec<InstanceSummary> = (0..16).map(|i| failing(i, "east", "db")).collect();
    let seen = || async {
        tokio::time::sleep(viewer.counted_every() * 3).await;
        let beat = viewer.beat(&me).await.unwrap();
        let view = FleetView::from_counts(beat.datacenters, HealthRule::default());
        let rows: Vec<String> = view.what_fails().iter().map(ToString::to_string).collect();
        rows
    };
    let beat_all = |fleet: &[InstanceSummary]| {
        let fleet = fleet.to_vec();
        let beaters = &beaters;
        async move {
            for me in &fleet {
                beaters.beat(me).await.unwrap();
            }
        }
    };
    beat_all(&fleet).await;
    viewer.beat(&me).await.unwrap();
    let published = Instant::now();
    assert_eq!(seen().await, ["db OUTAGE on 16 of 17 in east, shared"]);
    // One more of 16: a sixteenth, held back.
    fleet.push(failing(16, "east", "db"));
    beat_all(&fleet).await;
    assert_eq!(seen().await, ["db OUTAGE on 16 of 18 in east, shared"]);
    // Three more (19 of 16): more than an eighth, handed out at once.
    fleet.extend((17..19).map(|i| failing(i, "east", "db")));
    beat_all(&fleet).await;
    assert_eq!(seen().await, ["db OUTAGE on 19 of 20 in east, shared"]);
    assert!(published.elapsed() < ttl, "the test ran too slowly to tell");
    // One more again, held back; a new row (west's disk) says something new: the whole
    // list, with the drift, at once.
    fleet.push(failing(19, "east", "db"));
    beat_all(&fleet).await;
    assert_eq!(seen().await, ["db OUTAGE on 19 of 21 in east, shared"]);
    fleet.push(failing(20, "west", "disk"));
    beat_all(&fleet).await;
    assert_eq!(
        seen().await,
        [
            "db OUTAGE on 20 of 21 in east, shared",
            "disk OUTAGE on 1 of 1 in west"
        ]
    );
    // A drift held back goes out once the copy is a TTL old.
    fleet.push(failing(21, "east", "db"));
    beat_all(&fleet).await;
    assert_eq!(seen().await[0], "db OUTAGE on 20 of 22 in east, shared");
    let since = Instant::now();
    while since.elapsed() < ttl + viewer.counted_every() * 2 {
        beat_all(&fleet).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    beat_all(&fleet).await;
    assert_eq!(seen().await[0], "db OUTAGE on 21 of 22 in east, shared");
}

/// A beat the store answers late because it was busy (its queue, not this process's clock)
/// is not sent again: at 100,000 instances, a store that fell behind was sent every late beat
/// twice, and fell further behind. The next beat, a third of the TTL later, goes as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_beat_late_because_the_store_was_busy_is_not_sent_again() {
    use status_fleet::{BeatError, Rejection};

    let redis = RedisServer::start();
    let ttl = Duration::from_millis(600);
    let store = RedisFleet::new(&redis.url(), "busy", ttl).unwrap();
    let me = InstanceSummary::new("i1", "dc-1", CheckStatus::Ok, Vec::new(), "1");
    store.beat(&me).await.unwrap();
    // Redis busy for 400 ms (a script that spins), twice the beat's span of a third of the TTL.
    let mut busy = connection(&redis).await;
    let spin = tokio::spawn(async move {
        let _: () = redis::cmd("EVAL")
            .arg(
                "local t = redis.call('TIME') local until_us = t[1] * 1e6 + t[2] + 400000 \
                 repeat t = redis.call('TIME') until t[1] * 1e6 + t[2] >= until_us",
            )
            .arg(0)
            .query_async(&mut busy)
            .await
            .unwrap();
    });
    tokio::time::sleep(Duration::from_millis(30)).await;
    let late = store.beat(&me).await.unwrap_err();
    assert!(
        matches!(late, BeatError::Rejected(Rejection::Late)),
        "{late:?}"
    );
    spin.await.unwrap();
    let mut c = connection(&redis).await;
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut c)
        .await
        .unwrap();
    // Run to the end: calls less the one refused before the script was loaded.
    let line = stats
        .lines()
        .find(|l| l.starts_with("cmdstat_evalsha:"))
        .unwrap();
    let field = |name: &str| -> u64 {
        line.split([':', ','])
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
            .and_then(|n| n.parse().ok())
            .unwrap()
    };
    assert_eq!(
        field("calls") - field("failed_calls"),
        2,
        "the late beat went once: {line}"
    );
    store.beat(&me).await.unwrap();
}

/// A store that cannot be reached is an error of its own kind (`is_unavailable`, a 503 over
/// HTTP), never mistaken for the client's bad cursor (`is_invalid`, a 400).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_out_of_reach_is_unavailable_and_a_bad_cursor_invalid() {
    let nowhere = format!("redis://127.0.0.1:{}/", crate::servers::free_port());
    let store = RedisFleet::new(&nowhere, "gone", TTL).unwrap();
    let err = store
        .instances(&InstanceQuery {
            limit: 10,
            ..InstanceQuery::default()
        })
        .await
        .unwrap_err();
    assert!(err.is_unavailable() && !err.is_invalid(), "{err}");
    let redis = RedisServer::start();
    let store = RedisFleet::new(&redis.url(), "here", TTL).unwrap();
    let err = store
        .instances(&InstanceQuery {
            cursor: Some("zz".to_owned()),
            limit: 10,
            ..InstanceQuery::default()
        })
        .await
        .unwrap_err();
    assert!(err.is_invalid() && !err.is_unavailable(), "{err}");
}

/// A beat delivered late (sent, given up as the answer did not come in time, its connection
/// dropped, then delivered by a retransmitting network after a newer beat) changes nothing:
/// it would write a past condition, stamped fresh by the server. Found by
/// `scripts/partition`: with 30 % loss on the store's host, a record 89 ms old said OK of an
/// instance MAJOR for a second (a beat overtaken by a newer one); across a partition, a beat
/// sent before it was written when it healed, six seconds later. Replayed here by sending
/// the script itself with the numbers and deadline a late beat carries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_beat_delivered_late_changes_nothing() {
    const BEAT: &str = include_str!("../../src/redis/beat.lua");
    let redis = RedisServer::start();
    let store = RedisFleet::new(&redis.url(), "late", TTL).unwrap();
    let outage = InstanceSummary::new("i1", "dc-1", CheckStatus::Outage, Vec::new(), "1");
    store.beat(&outage).await.unwrap();
    store.beat(&outage).await.unwrap();
    let mut conn = connection(&redis).await;
    let own = hget(&mut conn, "{late}:v2:inst", "i1\0own").await.unwrap();
    // `owner \t sequence \t dc \t index \t beat \t digest`.
    let fields: Vec<&str> = own.split('\t').collect();
    let [owner, last, dc, index, beat, digest] = fields[..] else {
        panic!("{own:?}")
    };
    assert_eq!((last, dc, index), ("2", "dc-1", "0"), "{own:?}");
    assert!(beat.parse::<u64>().is_ok(), "{own:?}");
    assert!(
        digest.len() == 16 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
        "{own:?}"
    );
    let ok = InstanceSummary::new("i1", "dc-1", CheckStatus::Ok, Vec::new(), "1");
    let json = serde_json::to_string(&ok).unwrap();
    // The store's settings come first, in the script's text.
    let script = assembled(BEAT, TTL, 10);
    let mut send = async |sequence: u64, deadline: u64| -> String {
        let answer: Vec<redis::Value> = script
            .key(
                ["v2:inst", "v2:live", "v2:dcs", "v2:fail", "v2:fcount"]
                    .map(|k| format!("{{late}}:{k}"))
                    .to_vec(),
            )
            .arg("i1")
            .arg("dc-1")
            .arg("0")
            .arg("1")
            .arg(&json)
            .arg(0)
            .arg(0)
            .arg(owner)
            .arg("")
            .arg("")
            .arg(sequence)
            .arg(deadline)
            .invoke_async(&mut conn)
            .await
            .unwrap();
        redis::from_redis_value(&answer[0]).unwrap()
    };
    let listed = async || {
        first_page(&store)
            .await
            .iter()
            .map(|s| s.condition)
            .collect::<Vec<_>>()
    };
    // The first beat, and the second again: both older than what the store holds.
    assert_eq!(send(1, 0).await, "late");
    assert_eq!(send(2, 0).await, "late");
    // A newer one, but past its deadline on the server's clock (1 ms after the epoch).
    assert_eq!(send(3, 1).await, "late");
    assert_eq!(
        listed().await,
        [CheckStatus::Outage],
        "the late beats changed nothing"
    );
    // A newer one in time is taken (the store, new, is still settling).
    let taken = send(3, 0).await;
    assert!(taken == "ok" || taken == "settling", "{taken}");
    assert_eq!(listed().await, [CheckStatus::Ok]);
    // Compared as numbers, not as text: 10 comes after 3, 9 before 10.
    let taken = send(10, 0).await;
    assert!(taken == "ok" || taken == "settling", "{taken}");
    assert_eq!(send(9, 0).await, "late");
    // A deadline of more digits than the server's clock is in the future.
    let taken = send(11, u64::MAX).await;
    assert!(taken == "ok" || taken == "settling", "{taken}");
}

/// Counts that say the same keep their stamp: an upkeep that counts what the last one did
/// does not name them anew, so the instances holding them are not sent them again (in a
/// fleet whose instances each beat once for ten upkeeps, every beat was). A change names
/// them anew.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_that_say_the_same_are_not_sent_again() {
    let redis = RedisServer::start();
    let ttl = Duration::from_secs(3);
    let a = RedisFleet::new(&redis.url(), "rest", ttl).unwrap();
    let b = RedisFleet::new(&redis.url(), "rest", ttl).unwrap();
    let me_a = InstanceSummary::new("a", "east", CheckStatus::Ok, Vec::new(), "1");
    let mut me_b = InstanceSummary::new("b", "east", CheckStatus::Ok, Vec::new(), "1");
    let east = |beat: &status_fleet::Beat| {
        beat.datacenters
            .iter()
            .find(|d| d.datacenter == "east")
            .map(|d| (d.conditions.ok, d.conditions.minor))
    };
    // Both counted: one upkeep after both beat.
    a.beat(&me_a).await.unwrap();
    b.beat(&me_b).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let stamp = loop {
        tokio::time::sleep(a.counted_every() + Duration::from_millis(20)).await;
        b.beat(&me_b).await.unwrap();
        let beat = a.beat(&me_a).await.unwrap();
        if east(&beat) == Some((2, 0)) {
            break beat.counted_ms;
        }
        assert!(Instant::now() < deadline, "never counted: {beat:?}");
    };
    let mut c = connection(&redis).await;
    let fleet_field = async |c: &mut redis::aio::MultiplexedConnection| {
        hget(c, "{rest}:v2:inst", "\0fleet").await.unwrap()
    };
    let made_before = fleet_field(&mut c).await;
    for _ in 0..4 {
        tokio::time::sleep(a.counted_every() + Duration::from_millis(20)).await;
        b.beat(&me_b).await.unwrap();
        let beat = a.beat(&me_a).await.unwrap();
        assert_eq!(east(&beat), Some((2, 0)));
        assert_eq!(beat.counted_ms, stamp, "the same counts, the same stamp");
    }
    // Upkeeps ran meanwhile (`at`, the first field, moved), and kept the counts' stamp (the
    // last).
    let made_after = fleet_field(&mut c).await;
    assert_ne!(
        made_after.split('\t').next(),
        made_before.split('\t').next()
    );
    assert_eq!(
        made_after.split('\t').nth(5),
        Some(stamp.to_string().as_str())
    );
    // A change is stamped anew, and sent.
    me_b.condition = CheckStatus::Minor;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        b.beat(&me_b).await.unwrap();
        tokio::time::sleep(a.counted_every() + Duration::from_millis(20)).await;
        b.beat(&me_b).await.unwrap();
        let beat = a.beat(&me_a).await.unwrap();
        if east(&beat) == Some((1, 1)) {
            assert!(beat.counted_ms > stamp, "{beat:?}");
            break;
        }
        assert_eq!(beat.counted_ms, stamp, "{beat:?}");
        assert!(Instant::now() < deadline, "never counted: {beat:?}");
    }
}

/// A beat whose summary is unchanged leaves it out: the record stays as written, the
/// holder's field moves to the beat. A change, a store that lost the record (flushed), a
/// record another process wrote meanwhile and a digest altered by hand each bring the summary
/// again, without a failed beat; and so does every sixtieth beat, whatever else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unchanged_summary_is_left_out_and_sent_when_the_store_lacks_it() {
    let redis = RedisServer::start();
    let store = RedisFleet::new(&redis.url(), "kept", TTL).unwrap();
    let mut c = connection(&redis).await;
    // (The record: `dc \n condition \n serving \n written \n JSON`; the holder's field:
    // `owner \t sequence \t dc \t index \t beat \t digest`.)
    let written = async |c: &mut redis::aio::MultiplexedConnection| -> u64 {
        let record = hget(c, "{kept}:v2:inst", "i1").await.unwrap();
        record.split('\n').nth(3).unwrap().parse().unwrap()
    };
    let last_beat = async |c: &mut redis::aio::MultiplexedConnection| -> u64 {
        let own = hget(c, "{kept}:v2:inst", "i1\0own").await.unwrap();
        own.split('\t').nth(4).unwrap().parse().unwrap()
    };
    let listed = async || {
        first_page(&store)
            .await
            .into_iter()
            .map(|s| (s.condition, s.version))
            .collect::<Vec<_>>()
    };
    let mut me = InstanceSummary::new("i1", "dc-1", CheckStatus::Ok, Vec::new(), "a");
    store.beat(&me).await.unwrap();
    let first = written(&mut c).await;
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(5)).await;
        store.beat(&me).await.unwrap();
    }
    assert_eq!(
        written(&mut c).await,
        first,
        "the record is not written again"
    );
    assert!(last_beat(&mut c).await > first, "the beat moves");
    assert_eq!(listed().await, [(CheckStatus::Ok, "a".to_owned())]);

    // A change is written at once.
    me.condition = CheckStatus::Minor;
    me.version = "b".into();
    tokio::time::sleep(Duration::from_millis(5)).await;
    store.beat(&me).await.unwrap();
    assert!(written(&mut c).await > first);
    assert_eq!(listed().await, [(CheckStatus::Minor, "b".to_owned())]);

    // The store flushed: the next beat is asked for the summary, and brings it.
    let _: () = redis::cmd("FLUSHALL").query_async(&mut c).await.unwrap();
    store.beat(&me).await.unwrap();
    assert_eq!(listed().await, [(CheckStatus::Minor, "b".to_owned())]);

    // The digest altered by hand: asked for again, rewritten.
    let own = hget(&mut c, "{kept}:v2:inst", "i1\0own").await.unwrap();
    let (head, digest) = own.rsplit_once('\t').unwrap();
    assert_eq!(digest.len(), 16, "{own:?}");
    let _: () = redis::cmd("HSET")
        .arg("{kept}:v2:inst")
        .arg("i1\0own")
        .arg(format!("{head}\t0123456789abcdef"))
        .query_async(&mut c)
        .await
        .unwrap();
    let before = written(&mut c).await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    store.beat(&me).await.unwrap();
    assert!(written(&mut c).await > before, "rewritten");
    assert_eq!(
        hget(&mut c, "{kept}:v2:inst", "i1\0own")
            .await
            .unwrap()
            .rsplit_once('\t')
            .unwrap()
            .1,
        digest
    );

    // Another process takes the id once this one is a TTL silent, then stops: this one's
    // next beat writes its own summary again, not keeping the other's.
    tokio::time::sleep(TTL + Duration::from_millis(50)).await;
    let other = RedisFleet::new(&redis.url(), "kept", TTL).unwrap();
    let theirs = InstanceSummary::new("i1", "dc-1", CheckStatus::Ok, Vec::new(), "theirs");
    other.beat(&theirs).await.unwrap();
    assert_eq!(listed().await, [(CheckStatus::Ok, "theirs".to_owned())]);
    tokio::time::sleep(TTL + Duration::from_millis(50)).await;
    store.beat(&me).await.unwrap();
    assert_eq!(listed().await, [(CheckStatus::Minor, "b".to_owned())]);

    // However long it stays the same, the summary is sent again every sixtieth beat.
    let since = written(&mut c).await;
    let mut rewritten = None;
    for n in 1..=61 {
        tokio::time::sleep(Duration::from_millis(2)).await;
        store.beat(&me).await.unwrap();
        if written(&mut c).await > since {
            rewritten = Some(n);
            break;
        }
    }
    assert_eq!(
        rewritten,
        Some(61),
        "rewritten after sixty beats left it out"
    );
}

/// What Redis has written to its clients so far, in bytes.
async fn bytes_out(c: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("stats")
        .query_async(c)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("total_net_output_bytes:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap()
}

/// A beat at rest (the same summary as its last, nothing failing, the counts and what
/// fails as its client holds them, no upkeep due) is answered by the server's time alone:
/// a few bytes, not the counts' stamps and the token. What the instance is told is what a
/// beat that went the whole way would have told it, and the store moves its beat the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_beat_at_rest_is_answered_by_its_time_alone() {
    let redis = RedisServer::start();
    // (Counted every 100 ms: a burst of beats finds no upkeep due, or one.)
    let ttl = Duration::from_secs(3);
    let store = RedisFleet::new(&redis.url(), "calm", ttl).unwrap();
    let other = RedisFleet::new(&redis.url(), "calm", ttl).unwrap();
    let me = InstanceSummary::new("i1", "east", CheckStatus::Ok, Vec::new(), "1");
    let mut c = connection(&redis).await;
    // Its first beats go the whole way (the summary, then the counts naming its data center).
    other
        .beat(&InstanceSummary::new(
            "o1",
            "west",
            CheckStatus::Major,
            Vec::new(),
            "1",
        ))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let whole = loop {
        let beat = store.beat(&me).await.unwrap();
        if beat.datacenters.len() == 2 {
            break beat;
        }
        assert!(Instant::now() < deadline, "never counted: {beat:?}");
        tokio::time::sleep(store.counted_every()).await;
    };
    store.beat(&me).await.unwrap();
    // Twenty beats: the bytes Redis sent, less those of the second `INFO`'s answer.
    let before = bytes_out(&mut c).await;
    let info = bytes_out(&mut c).await - before;
    let mut beats = Vec::new();
    for _ in 0..20 {
        beats.push(store.beat(&me).await.unwrap());
    }
    let sent = bytes_out(&mut c).await - before - 2 * info;
    // At rest, `:` and 13 digits a beat, 16 bytes; a whole answer is 90 or more (the whole
    // of one, for an upkeep due, fits under the bound).
    assert!(sent <= 20 * 16 + 120, "{sent} bytes for 20 beats");
    for beat in &beats {
        assert_eq!(beat.datacenters, whole.datacenters, "{beat:?}");
        assert_eq!(
            (beat.counted_ms, beat.settling, beat.healed),
            (whole.counted_ms, whole.settling, 0)
        );
        assert!(!beat.failing_partial);
    }
    assert!(beats.windows(2).all(|w| w[0].now_ms <= w[1].now_ms));
    // The holder's field names the last beat, as a beat that went the whole way writes it:
    // `owner \t sequence \t dc \t index \t beat \t digest`.
    let own = hget(&mut c, "{calm}:v2:inst", "i1\0own").await.unwrap();
    let fields: Vec<&str> = own.split('\t').collect();
    assert_eq!(fields.len(), 6, "{own:?}");
    assert_eq!(fields[2], "east");
    assert_eq!(fields[4], beats[19].now_ms.to_string(), "{own:?}");
    // Its member, scored by its group above that beat.
    let score: f64 = redis::cmd("ZSCORE")
        .arg("{calm}:v2:live")
        .arg("i1")
        .query_async(&mut c)
        .await
        .unwrap();
    let index: u64 = fields[3].parse().unwrap();
    assert_eq!(
        score as u64,
        ((index * 4) * 2 + 1) * (1 << 42) + beats[19].now_ms
    );
    // Its scripts flushed (the store restarted, or a replica promoted that never ran them):
    // the client loads them again, and the beat at rest is taken, told the same.
    let () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut c)
        .await
        .unwrap();
    let after = store.beat(&me).await.unwrap();
    assert_eq!(after.datacenters, whole.datacenters);
    let own = hget(&mut c, "{calm}:v2:inst", "i1\0own").await.unwrap();
    assert_eq!(own.split('\t').nth(4), Some(&*after.now_ms.to_string()));

    // A change goes the whole way, and is counted at the next upkeep.
    let minor = InstanceSummary::new("i1", "east", CheckStatus::Minor, Vec::new(), "1");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let beat = store.beat(&minor).await.unwrap();
        let east = beat.datacenters.iter().find(|d| d.datacenter == "east");
        if east.is_some_and(|d| d.conditions.minor == 1) {
            assert!(beat.counted_ms > whole.counted_ms);
            break;
        }
        assert!(Instant::now() < deadline, "never counted: {beat:?}");
        tokio::time::sleep(store.counted_every()).await;
    }
}

/// A failing instance at rest (failing what its last beat failed) moves its failing
/// members to its beat too, and is told what a beat that went the whole way would have told
/// it: past the budget, its own rows with its time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_beat_at_rest_moves_its_failing_members() {
    let redis = RedisServer::start();
    let ttl = Duration::from_secs(3);
    let mut c = connection(&redis).await;
    let db = || vec![FailingDependency::new("db", CheckStatus::Outage)];
    let me_a =
        InstanceSummary::new("a1", "east", CheckStatus::Ok, Vec::new(), "1").with_failing(db());
    let me_b =
        InstanceSummary::new("b1", "east", CheckStatus::Ok, Vec::new(), "1").with_failing(db());
    let said = |beat: &status_fleet::Beat| -> Vec<String> {
        FleetView::from_counts(beat.datacenters.clone(), HealthRule::default())
            .datacenter("east")
            .map(|d| d.failing.iter().map(ToString::to_string).collect())
            .unwrap_or_default()
    };
    let shared = ["db OUTAGE on 2 of 2 in east, shared"];
    for (key, budget) in [("small", DEFAULT_FAILING_BUDGET), ("large", 0)] {
        let open = || {
            RedisFleet::new(&redis.url(), key, ttl)
                .unwrap()
                .failing_budget(budget)
        };
        let (a, b) = (open(), open());
        // Until both are counted and what fails is read out.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            b.beat(&me_b).await.unwrap();
            let beat = a.beat(&me_a).await.unwrap();
            if said(&beat) == shared {
                break;
            }
            assert!(Instant::now() < deadline, "{key}: never said: {beat:?}");
            tokio::time::sleep(a.counted_every()).await;
        }
        a.beat(&me_a).await.unwrap();
        let before = bytes_out(&mut c).await;
        let info = bytes_out(&mut c).await - before;
        let mut beats = Vec::new();
        for _ in 0..10 {
            beats.push(a.beat(&me_a).await.unwrap());
        }
        let sent = bytes_out(&mut c).await - before - 2 * info;
        for beat in &beats {
            assert_eq!(said(beat), shared, "{key}: {beat:?}");
            assert_eq!(beat.failing_partial, budget == 0, "{key}");
        }
        // At rest, 16 bytes a beat within the budget; past it, its time and its row (about
        // 40). A whole answer is 150 or more: one, for an upkeep due, fits under the bound.
        let at_rest = if budget == 0 { 48 } else { 16 };
        assert!(
            sent <= 10 * at_rest + 200,
            "{key}: {sent} bytes for 10 beats"
        );
        // Its failing member moved to its last beat, and counted once.
        let score: f64 = redis::cmd("ZSCORE")
            .arg(format!("{{{key}}}:v2:fail"))
            .arg("east\u{0}db\u{0}3\u{0}a1")
            .query_async(&mut c)
            .await
            .unwrap();
        assert_eq!(score as u64, beats[9].now_ms, "{key}");
        let counted = hget(&mut c, &format!("{{{key}}}:v2:fcount"), "east\tdb\t3").await;
        assert_eq!(counted.as_deref(), Some("2"), "{key}");
    }
}

/// A beat at rest names the holder's field its last beat left and the fleet's field but
/// for its time: a beat delivered after a newer one, naming a field the store no longer
/// holds, or coming when an upkeep is due, is answered nil and changes nothing (the client
/// then sends it the whole way, where it is judged); one past its deadline is `late`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_beat_at_rest_names_what_it_replaces() {
    const REST: &str = include_str!("../../src/redis/rest.lua");
    let redis = RedisServer::start();
    let ttl = Duration::from_secs(3);
    let store = RedisFleet::new(&redis.url(), "named", ttl).unwrap();
    let me = InstanceSummary::new("i1", "east", CheckStatus::Ok, Vec::new(), "1");
    // Twice: the second beat's counts name its data center.
    store.beat(&me).await.unwrap();
    store.beat(&me).await.unwrap();
    let mut c = connection(&redis).await;
    let own = hget(&mut c, "{named}:v2:inst", "i1\0own").await.unwrap();
    let fields: Vec<&str> = own.split('\t').collect();
    let [owner, last, dc, index, beat, digest] = fields[..] else {
        panic!("{own:?}")
    };
    let fleet = hget(&mut c, "{named}:v2:inst", "\0fleet").await.unwrap();
    let (_, token) = fleet.split_once('\t').unwrap();
    let script = assembled(REST, ttl, 100);
    let mut send = async |sequence: u64, last: &str, beat: &str, token: &str, deadline: u64| {
        script
            .key(&keys("named")[..2])
            .arg("i1")
            .arg(dc)
            .arg("0")
            .arg("1")
            .arg(owner)
            .arg(sequence)
            .arg(deadline)
            .arg(index)
            .arg(last)
            .arg(beat)
            .arg(digest)
            .arg(token)
            .invoke_async::<redis::Value>(&mut c)
            .await
            .unwrap()
    };
    let next: u64 = last.parse::<u64>().unwrap() + 1;
    // Named as it is: at rest, answered by the time alone.
    let redis::Value::Int(now) = send(next, last, beat, token, 0).await else {
        panic!("not at rest")
    };
    let mut c2 = connection(&redis).await;
    let taken = format!("{owner}\t{next}\t{dc}\t{index}\t{now}\t{digest}");
    let own = hget(&mut c2, "{named}:v2:inst", "i1\0own").await.unwrap();
    assert_eq!(own, taken);
    let now = now.to_string();
    let not_taken = [
        // The same again (delivered twice): it names a field no longer there.
        (next, last.to_owned(), beat, token),
        // A newer beat naming its last but for a token not the store's.
        (next + 1, next.to_string(), now.as_str(), "0\t\t\t\t0"),
        // Naming a number not above its last.
        (next + 1, (next + 1).to_string(), now.as_str(), token),
    ];
    for (sequence, last, beat, token) in not_taken {
        let answer = send(sequence, &last, beat, token, 0).await;
        assert_eq!(
            answer,
            redis::Value::Nil,
            "{sequence} {last} {beat} {token:?}"
        );
        let own = hget(&mut c2, "{named}:v2:inst", "i1\0own").await.unwrap();
        assert_eq!(own, taken, "nothing changed");
    }
    // Past its deadline: late, with the server's time.
    let late = send(next + 1, &next.to_string(), &now, token, 1).await;
    let late: (String, u64) = redis::from_redis_value(&late).unwrap();
    assert_eq!(late.0, "late");
    assert!(late.1 >= now.parse().unwrap(), "{late:?}");
    // The fleet's field as an upkeep made `ago` ms before the server's time, this token.
    let mut made = async |ago: u64| {
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut c2).await.unwrap();
        let _: i64 = redis::cmd("HSET")
            .arg("{named}:v2:inst")
            .arg("\0fleet")
            .arg(format!("{}\t{token}", secs * 1_000 + micros / 1_000 - ago))
            .query_async(&mut c2)
            .await
            .unwrap();
    };
    // An upkeep due (the counts made longer ago than `every`): not at rest.
    made(1_000).await;
    let due = send(next + 1, &next.to_string(), &now, token, 0).await;
    assert_eq!(due, redis::Value::Nil);
    // Named right with the counts fresh again: at rest.
    made(0).await;
    let again = send(next + 1, &next.to_string(), &now, token, 0).await;
    assert!(matches!(again, redis::Value::Int(_)), "{again:?}");
}

/// A store found empty is settling for a TTL, then not; flushed, it settles again. The mark
/// lives in the fleet's field (`\0fleet`), written with the counts, and every beat reads it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_store_settles_for_a_ttl_then_again_when_flushed() {
    let redis = RedisServer::start();
    let store = RedisFleet::new(&redis.url(), "settle", TTL).unwrap();
    let me = InstanceSummary::new("i1", "dc-1", CheckStatus::Ok, Vec::new(), "1");
    assert!(store.beat(&me).await.unwrap().settling, "new: settling");
    // Within the TTL it still is, on the fresh path too (the counts made a moment ago).
    assert!(store.beat(&me).await.unwrap().settling, "still settling");
    let started = Instant::now();
    let settled = loop {
        tokio::time::sleep(TTL / 6).await;
        let beat = store.beat(&me).await.unwrap();
        if !beat.settling {
            break started.elapsed();
        }
        assert!(started.elapsed() < TTL * 10, "never settled");
    };
    assert!(
        settled >= TTL * 2 / 3,
        "settled after {settled:?}, a TTL is {TTL:?}"
    );
    let mut conn = connection(&redis).await;
    let fleet = hget(&mut conn, "{settle}:v2:inst", "\0fleet")
        .await
        .unwrap();
    let fields: Vec<&str> = fleet.split('\t').collect();
    assert_eq!(fields.len(), 6, "{fleet:?}");
    assert_eq!(fields[2], "", "no settling mark once settled: {fleet:?}");
    assert_eq!(fields[4], "", "no version before to count: {fleet:?}");
    // The counts stamped when they last changed: since the store settled, no later.
    let (at, counts_at): (u64, u64) = (fields[0].parse().unwrap(), fields[5].parse().unwrap());
    assert!(counts_at <= at, "{fleet:?}");
    let () = redis::cmd("FLUSHALL").query_async(&mut conn).await.unwrap();
    assert!(
        store.beat(&me).await.unwrap().settling,
        "flushed: settling again"
    );
    // Garbage in the fleet's field is an upkeep's to rewrite, not a failed beat.
    let _: i64 = redis::cmd("HSET")
        .arg("{settle}:v2:inst")
        .arg("\0fleet")
        .arg("not\tthe\tformat")
        .query_async(&mut conn)
        .await
        .unwrap();
    store.beat(&me).await.unwrap();
    let fleet = hget(&mut conn, "{settle}:v2:inst", "\0fleet")
        .await
        .unwrap();
    assert!(
        fleet
            .split('\t')
            .next()
            .is_some_and(|at| at.parse::<u64>().is_ok()),
        "{fleet:?}"
    );
}
