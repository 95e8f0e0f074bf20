//! The SQLite file: migrated from every earlier version, moved aside when corrupt, refused
//! when newer, and what it keeps read back as written.

use std::path::PathBuf;

use chrono::{TimeZone, Utc};
use rusqlite::Connection;
use status_core::CheckStatus;
use status_history::{
    migrations, AuditRecord, MuteRecord, OverrideRecord, Recorder, Retention, Series, SqliteStore,
    Tier, Writes,
};

const NOW: i64 = 1_772_323_200_000;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("status-history-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("history.db")
}

fn version(path: &PathBuf) -> i64 {
    Connection::open(path)
        .unwrap()
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap()
}

#[test]
fn every_earlier_version_migrates_and_keeps_its_rows() {
    let latest = migrations().len() as i64;
    for at in 0..latest {
        let path = temp(&format!("v{at}"));
        {
            let conn = Connection::open(&path).unwrap();
            for (i, sql) in migrations().iter().take(at as usize).enumerate() {
                conn.execute_batch(sql).unwrap();
                conn.pragma_update(None, "user_version", i as i64 + 1)
                    .unwrap();
            }
            if at >= 1 {
                conn.execute(
                    "INSERT INTO series (kind, name) VALUES ('dependency', 'db')",
                    [],
                )
                .unwrap();
                conn.execute(
                    "INSERT INTO transitions (series, run, at, from_level, to_level, message, blocked_by)
                     VALUES (1, 1, 5, NULL, 3, 'down', '[]')",
                    [],
                )
                .unwrap();
            }
            if at >= 2 {
                conn.execute(
                    "INSERT INTO audit (at, action, target, outcome) VALUES (7, 'PUT /admin/drain', '/admin/drain', '200')",
                    [],
                )
                .unwrap();
            }
        }
        let opened = SqliteStore::open(&path, NOW).unwrap();
        assert!(opened.moved_aside.is_none());
        let store = opened.store;
        drop(store);
        assert_eq!(version(&path), latest, "from version {at}");
        let store = SqliteStore::open(&path, NOW).unwrap().store;
        let db = Series::Dependency("db".into());
        let kept = store.transitions(&db, 0, i64::MAX, 10).unwrap();
        assert_eq!(kept.len(), usize::from(at >= 1), "from version {at}");
        if at >= 1 {
            assert_eq!(kept[0].to, CheckStatus::Outage);
        }
        assert_eq!(store.audit(None, 10).unwrap().len(), usize::from(at >= 2));
    }
}

#[test]
fn a_file_from_a_newer_version_is_refused_and_left_alone() {
    let path = temp("newer");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE mine (x); PRAGMA user_version = 99;")
            .unwrap();
    }
    let err = SqliteStore::open(&path, NOW).unwrap_err();
    // Its tables are not ours either: refused as not a history file, untouched.
    assert!(err.is_foreign(), "{err}");
    assert_eq!(version(&path), 99);
}

#[test]
fn a_corrupt_file_is_moved_aside_and_a_fresh_one_started() {
    let path = temp("corrupt");
    std::fs::write(&path, vec![0x5a; 64 * 1024]).unwrap();
    let opened = SqliteStore::open(&path, NOW).unwrap();
    let aside = opened.moved_aside.expect("moved aside");
    assert_eq!(std::fs::read(&aside).unwrap(), vec![0x5a; 64 * 1024]);
    assert_eq!(version(&path), migrations().len() as i64);
}

#[test]
fn a_directory_that_does_not_exist_is_an_error_not_a_panic() {
    let err = SqliteStore::open(&PathBuf::from("/nonexistent/dir/history.db"), NOW).unwrap_err();
    assert!(!err.is_corrupt());
}

#[test]
fn mutes_overrides_audit_and_state_read_back_as_written() {
    let path = temp("records");
    let at = |ms: i64| Utc.timestamp_millis_opt(ms).unwrap();
    let mute = MuteRecord {
        dependency: "db".into(),
        reason: "maintenance".into(),
        actor: Some("alice".into()),
        set_at: at(NOW),
        start: at(NOW),
        until: at(NOW + 3_600_000),
    };
    let over = OverrideRecord {
        feature: "checkout".into(),
        enabled: false,
        reason: "vendor down".into(),
        actor: None,
        set_at: at(NOW),
        expires_at: at(NOW + 600_000),
    };
    let audit = AuditRecord {
        at: chrono::DateTime::from_timestamp_millis(NOW).unwrap(),
        actor: Some("bob".into()),
        action: "PUT /admin/drain".into(),
        target: "/admin/drain".into(),
        reason: Some("deploy".into()),
        address: Some("10.0.0.7:5555".into()),
        outcome: "200".into(),
    };
    {
        let mut store = SqliteStore::open(&path, NOW).unwrap().store;
        store
            .write(&Writes {
                audit: vec![audit.clone()],
                mutes: Some(vec![mute.clone()]),
                overrides: Some(vec![over.clone()]),
                state: vec![("notify".into(), "{\"told\":1}".into())],
                ..Writes::default()
            })
            .unwrap();
    }
    let mut store = SqliteStore::open(&path, NOW + 1).unwrap().store;
    assert_eq!(store.mutes().unwrap(), vec![mute]);
    assert_eq!(store.overrides().unwrap(), vec![over]);
    assert_eq!(store.audit(None, 5).unwrap()[0].1, audit);
    assert_eq!(
        store.state("notify").unwrap().as_deref(),
        Some("{\"told\":1}")
    );
    // A later write without mutes leaves them; an empty list clears them.
    store.write(&Writes::default()).unwrap();
    assert_eq!(store.mutes().unwrap().len(), 1);
    store
        .write(&Writes {
            mutes: Some(vec![]),
            ..Writes::default()
        })
        .unwrap();
    assert!(store.mutes().unwrap().is_empty());
}

#[test]
fn prune_keeps_each_tier_for_its_retention() {
    let mut store = SqliteStore::in_memory(NOW).unwrap();
    let mut recorder = Recorder::new();
    let db = Series::Dependency("db".into());
    // Three days of OK, an hour of steps at a time.
    let start = NOW - 3 * 86_400_000;
    recorder.changed(&db, start, CheckStatus::Ok, "", vec![]);
    let mut t = start;
    while t < NOW {
        t += 3_600_000;
        let batch = recorder.flush(t, true);
        store
            .write(&Writes {
                batch,
                ..Writes::default()
            })
            .unwrap();
    }
    let count =
        |store: &SqliteStore, tier: Tier| store.buckets(&db, tier, 0, i64::MAX).unwrap().len();
    assert!(count(&store, Tier::Minute) > 3 * 24 * 60 - 2);
    let retention = Retention {
        minutes: std::time::Duration::from_secs(3600),
        hours: std::time::Duration::from_secs(86_400),
        ..Retention::default()
    };
    let deleted = store.prune(NOW, &retention).unwrap();
    assert!(deleted > 0);
    assert!(count(&store, Tier::Minute) <= 61);
    assert!(count(&store, Tier::Hour) <= 25);
    // NOW is midnight: exactly three days.
    assert_eq!(count(&store, Tier::Day), 3);
    // The days still sum all three days of OK.
    let days = store.buckets(&db, Tier::Day, 0, i64::MAX).unwrap();
    let ok: u64 = days.iter().map(|b| b.spent.ok).sum();
    assert_eq!(ok, 3 * 86_400_000);
}

#[test]
fn past_its_size_bound_the_oldest_transitions_and_audit_records_go_first() {
    let mut store = SqliteStore::in_memory(NOW).unwrap();
    let db = Series::Dependency("db".into());
    let mut writes = Writes::default();
    for i in 0..20_000 {
        writes
            .batch
            .transitions
            .push(status_history::TransitionRecord {
                series: db.clone(),
                at: NOW + i,
                from: Some(CheckStatus::Ok),
                to: CheckStatus::Major,
                message: format!(
                    "{i:05} a message long enough to fill pages quickly, as real ones do"
                ),
                blocked_by: vec![],
            });
        writes.audit.push(AuditRecord {
            at: chrono::DateTime::from_timestamp_millis(NOW + i).unwrap(),
            actor: None,
            action: "hold".into(),
            target: "cull".into(),
            reason: Some(format!("{i:05}")),
            address: None,
            outcome: "taken".into(),
        });
    }
    store.write(&writes).unwrap();
    let before = store.size().unwrap();
    let bound = Retention {
        max_bytes: before / 2,
        ..Retention::default()
    };
    assert!(store.prune(NOW + 30_000, &bound).unwrap() > 0);
    assert!(
        store.size().unwrap() <= before / 2,
        "{} > {}",
        store.size().unwrap(),
        before / 2
    );
    let kept = store.transitions(&db, 0, i64::MAX, 100_000).unwrap();
    assert!(kept.len() < 20_000 && !kept.is_empty());
    // The newest stay, the oldest went.
    assert!(kept.last().unwrap().message.starts_with("19999"));
    assert!(!kept[0].message.starts_with("00000"));
    let audit = store.audit(None, 100_000).unwrap();
    assert!(audit.len() < 20_000);
    assert_eq!(audit[0].1.reason.as_deref(), Some("19999"));
}

/// Version 5 made what an incident update is a field: a version-4 file's updates get their
/// kinds once, from who said them and how; the status page never searches words again.
#[test]
fn incident_updates_of_a_version_4_file_get_their_kinds() {
    use status_history::incident::UpdateKind;
    let path = temp("kinds");
    {
        let conn = Connection::open(&path).unwrap();
        for (i, sql) in migrations().iter().take(4).enumerate() {
            conn.execute_batch(sql).unwrap();
            conn.pragma_update(None, "user_version", i as i64 + 1)
                .unwrap();
        }
        conn.execute_batch(
            "INSERT INTO incidents (title, roots, affected, impact, started, resolved, updated, members)
               VALUES ('db', '[\"db\"]', '{\"db\":\"OUTAGE\"}', 'critical', 1, NULL, 4, '{}');
             INSERT INTO incident_updates (incident, at, status, message, actor) VALUES
               (1, 1, 'investigating', 'Opened: db is OUTAGE.', NULL),
               (1, 2, 'resolved', 'Everything it covers has been healthy for the quiet time.', NULL),
               (1, 3, 'investigating', 'It failed again within the quiet time: reopened.', NULL),
               (1, 4, 'identified', 'The disk filled up; it was reopened by hand.', 'ops');",
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path, NOW).unwrap().store;
    let incident = store.incident(1).unwrap().expect("kept");
    let kinds: Vec<UpdateKind> = incident.updates.iter().map(|u| u.kind).collect();
    assert_eq!(
        kinds,
        [
            UpdateKind::Opened,
            UpdateKind::Resolved,
            UpdateKind::Reopened,
            UpdateKind::Operator
        ],
        "an operator's words are an operator's, whatever they say"
    );
}

/// The page's subscribers: kept across a reopening, confirmed once, each delivery claimed by
/// one, an unsubscription taking its deliveries with it, and subscribing again keeping the
/// confirmation but not the old token.
#[test]
fn subscribers_are_kept_confirmed_claimed_once_and_removed_whole() {
    use status_history::{Subscriber, SubscriberKind};
    let path = temp("subscribers");
    let at = |ms: i64| Utc.timestamp_millis_opt(ms).unwrap();
    let ana = Subscriber {
        id: 0,
        kind: SubscriberKind::Email,
        address: "ana@example.com".into(),
        components: vec!["group-ready".into()],
        lang: "de".into(),
        token: "hash-1".into(),
        created: at(NOW),
        confirmed: None,
        confirm_sent: Some(at(NOW)),
    };
    let id = {
        let mut store = SqliteStore::open(&path, NOW).unwrap().store;
        let kept = store.subscribe(&ana).unwrap();
        assert_eq!(
            (kept.address.as_str(), kept.confirmed),
            ("ana@example.com", None)
        );
        kept.id
    };
    let mut store = SqliteStore::open(&path, NOW + 1).unwrap().store;
    let kept = store
        .subscriber(SubscriberKind::Email, "ana@example.com")
        .unwrap()
        .unwrap();
    assert_eq!(
        (kept.id, kept.components.clone(), kept.lang.as_str()),
        (id, vec!["group-ready".to_owned()], "de")
    );
    assert!(store.confirm_subscriber("no-such", NOW).unwrap().is_none());
    let confirmed = store
        .confirm_subscriber("hash-1", NOW + 5)
        .unwrap()
        .unwrap();
    assert_eq!(confirmed.confirmed, Some(at(NOW + 5)));
    let again = store
        .confirm_subscriber("hash-1", NOW + 9)
        .unwrap()
        .unwrap();
    assert_eq!(
        again.confirmed,
        Some(at(NOW + 5)),
        "the first confirmation stays"
    );

    assert!(store
        .claim_delivery("incident-1-update-1", id, NOW)
        .unwrap());
    assert!(
        !store
            .claim_delivery("incident-1-update-1", id, NOW + 1)
            .unwrap(),
        "once"
    );
    store.release_delivery("incident-1-update-1", id).unwrap();
    assert!(
        store
            .claim_delivery("incident-1-update-1", id, NOW + 2)
            .unwrap(),
        "after a failure"
    );
    // Many at once, in one transaction: each claimed once, whichever way it is asked.
    assert_eq!(
        store
            .claim_deliveries("incident-1-update-2", &[id, 9_001, 9_002], NOW + 2)
            .unwrap(),
        vec![id, 9_001, 9_002]
    );
    assert_eq!(
        store
            .claim_deliveries("incident-1-update-2", &[9_002, 9_003], NOW + 2)
            .unwrap(),
        vec![9_003],
        "the ones claimed already are left out"
    );
    assert!(!store
        .claim_delivery("incident-1-update-2", id, NOW + 2)
        .unwrap());

    // Subscribing again: a new token, the same confirmation.
    let renewed = store
        .subscribe(&Subscriber {
            token: "hash-2".into(),
            components: Vec::new(),
            ..ana.clone()
        })
        .unwrap();
    assert_eq!((renewed.id, renewed.token.as_str()), (id, "hash-2"));
    assert_eq!(renewed.confirmed, Some(at(NOW + 5)));
    assert!(
        store.unsubscribe("hash-1").unwrap().is_none(),
        "the old token is void"
    );
    // An operator's removal by id: once.
    let removed = store.subscribe(&ana).unwrap();
    assert_eq!(
        store.remove_subscriber(removed.id).unwrap().map(|s| s.id),
        Some(removed.id)
    );
    assert_eq!(store.remove_subscriber(removed.id).unwrap(), None);
    let renewed = store
        .subscribe(&Subscriber {
            token: "hash-2".into(),
            components: Vec::new(),
            ..ana.clone()
        })
        .unwrap();
    let id = renewed.id;
    assert_eq!(store.unsubscribe("hash-2").unwrap().unwrap().id, id);
    assert!(store.subscribers().unwrap().is_empty());
    assert!(
        store
            .claim_delivery("incident-1-update-1", id, NOW + 3)
            .unwrap(),
        "its deliveries went with it"
    );

    // Pruned after two days: what was sent, and addresses never confirmed; not the confirmed,
    // nor the newly asked.
    let day = 86_400_000;
    let with = |address: &str, token: &str, created: i64| Subscriber {
        address: address.into(),
        token: token.into(),
        created: at(created),
        ..ana.clone()
    };
    let bob = store
        .subscribe(&with("bob@example.com", "hash-3", NOW))
        .unwrap();
    store
        .subscribe(&with("carl@example.com", "hash-4", NOW))
        .unwrap();
    store
        .subscribe(&with("eve@example.com", "hash-5", NOW + 2 * day))
        .unwrap();
    store
        .confirm_subscriber("hash-3", NOW + 10)
        .unwrap()
        .unwrap();
    assert!(store
        .claim_delivery("maintenance-1-announced", bob.id, NOW + 10)
        .unwrap());
    store
        .prune(NOW + 2 * day + 20, &status_history::Retention::default())
        .unwrap();
    let kept: Vec<String> = store
        .subscribers()
        .unwrap()
        .into_iter()
        .map(|s| s.address)
        .collect();
    assert_eq!(
        kept,
        ["bob@example.com", "eve@example.com"],
        "carl never confirmed"
    );
    assert!(
        store
            .claim_delivery("maintenance-1-announced", bob.id, NOW + 2 * day + 30)
            .unwrap(),
        "its old delivery pruned"
    );
}
