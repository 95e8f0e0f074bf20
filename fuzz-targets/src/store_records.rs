//! What Redis and etcd hand back, as raw bytes: a record either validates or is skipped with
//! a reason the metrics count; nothing listed has an id or data center no store would write;
//! a page's cursor is its last member; every line of what fails is a row or counted forged.

use std::time::Duration;

use status_fleet::fuzzing::{etcd_entry, redis_failing, redis_page, refusal, unhex};
use status_fleet::{MAX_SUMMARY, REJECTIONS};

const TTL: Duration = Duration::from_secs(3);

/// A list script's answer, a page's limit and direction, an etcd key and value, and a
/// what-fails text.
pub type StoreRecordsInput<'a> = (Vec<Vec<u8>>, u8, bool, &'a [u8], &'a [u8], &'a str);

/// One input (see the module).
pub fn store_records(input: StoreRecordsInput<'_>) {
    let (answer, limit, forward, key, value, failing) = input;

    // Redis's list script: the server's time, then members and records in pairs.
    let limit = usize::from(limit).max(1);
    let page = redis_page(&answer, TTL, limit, forward);
    let pairs = answer.len().saturating_sub(1) / 2;
    assert!(page.instances.len() <= pairs);
    for listed in &page.instances {
        let summary = &listed.summary;
        assert_eq!(refusal(&summary.instance_id, &summary.datacenter), None);
        // The id and data center come from a member, never from the JSON.
        let suffix = [b"\0".as_slice(), summary.instance_id.as_bytes()].concat();
        let prefix = [summary.datacenter.as_bytes(), b"\0"].concat();
        assert!(
            answer[1..]
                .chunks(2)
                .any(|pair| pair[0].ends_with(&suffix) && pair[0].starts_with(&prefix)),
            "{} listed from no member",
            summary.instance_id
        );
        if listed.age_ms >= TTL.as_millis() as u64 {
            assert!(listed.stale, "{} ms old and fresh", listed.age_ms);
        }
    }
    if let Some(cursor) = &page.next_cursor {
        assert!(pairs >= limit, "a next page after a short one");
        let last = answer[1..]
            .chunks(2)
            .rfind(|p| p.len() == 2)
            .map(|p| p[0].clone())
            .expect("a full page has a last member");
        // The store takes its cursor back, and the next page goes on from the last member:
        // the member itself, or past (before, backward) a member too long for a cursor.
        let decoded = unhex(cursor).expect("a cursor this store takes back");
        if decoded != last {
            assert!(last.len() > 512, "a cursor not the last member");
            assert_eq!(
                decoded > last,
                forward,
                "the next page does not go on past it"
            );
        }
    }

    // What fails, as the upkeep keeps it: each line a row, or counted forged.
    let (rows, forged) = redis_failing(failing);
    let lines = failing.lines().filter(|l| !l.is_empty()).count();
    assert_eq!(rows.len() + forged as usize, lines);
    for (dc, row) in &rows {
        assert!(!dc.contains(['\t', '\n']) && !row.dependency.contains(['\t', '\n']));
    }

    // etcd: a key (after the prefix: `dc \0 id`) and its value.
    match etcd_entry(key, value) {
        Ok(summary) => {
            assert_eq!(refusal(&summary.instance_id, &summary.datacenter), None);
            assert!(value.len() <= MAX_SUMMARY);
            let named = [
                summary.datacenter.as_bytes(),
                b"\0",
                summary.instance_id.as_bytes(),
            ]
            .concat();
            assert_eq!(named, key, "named by its key");
        }
        Err(reason) => assert!(REJECTIONS.contains(&reason), "{reason} is not counted"),
    }
}
