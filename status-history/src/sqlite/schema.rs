//! The schema, as numbered migrations: a file is at the version of the last one applied
//! (`PRAGMA user_version`), and opening it applies the rest, each in one transaction.

/// Each migration, in order: version `i + 1` is `MIGRATIONS[i]` applied.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: timelines. A series is a dependency, the system or a group; a bucket is its time in
    // each level (ms) over a minute, an hour or a day (tier 0, 1, 2), its checks and their
    // durations (µs). A run is one life of the process: time is accounted up to
    // `covered_until`, so that a replay of the transitions knows where each life ended.
    "CREATE TABLE series (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        UNIQUE (kind, name)
    );
    CREATE TABLE buckets (
        series INTEGER NOT NULL REFERENCES series(id),
        tier INTEGER NOT NULL,
        start INTEGER NOT NULL,
        ok INTEGER NOT NULL, minor INTEGER NOT NULL, major INTEGER NOT NULL,
        outage INTEGER NOT NULL, muted INTEGER NOT NULL,
        checks INTEGER NOT NULL, failures INTEGER NOT NULL,
        dmin INTEGER NOT NULL, dsum INTEGER NOT NULL, dmax INTEGER NOT NULL,
        PRIMARY KEY (series, tier, start)
    ) WITHOUT ROWID;
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        started INTEGER NOT NULL,
        covered_until INTEGER NOT NULL
    );
    CREATE TABLE transitions (
        id INTEGER PRIMARY KEY,
        series INTEGER NOT NULL REFERENCES series(id),
        run INTEGER NOT NULL,
        at INTEGER NOT NULL,
        from_level INTEGER,
        to_level INTEGER NOT NULL,
        message TEXT NOT NULL,
        blocked_by TEXT NOT NULL
    );
    CREATE INDEX transitions_by_series ON transitions (series, at);",
    // 2: what operators said: the audit trail, mutes and maintenance windows, overrides.
    "CREATE TABLE audit (
        id INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        actor TEXT,
        action TEXT NOT NULL,
        target TEXT NOT NULL,
        reason TEXT,
        address TEXT,
        outcome TEXT NOT NULL
    );
    CREATE INDEX audit_by_time ON audit (at);
    CREATE TABLE mutes (
        dependency TEXT PRIMARY KEY,
        reason TEXT NOT NULL,
        actor TEXT,
        set_at INTEGER NOT NULL,
        start INTEGER NOT NULL,
        until INTEGER NOT NULL
    );
    CREATE TABLE overrides (
        feature TEXT PRIMARY KEY,
        enabled INTEGER NOT NULL,
        reason TEXT NOT NULL,
        actor TEXT,
        set_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
    );",
    // 3: state kept for others (the notifier's last-told), by key, as JSON.
    "CREATE TABLE state (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated INTEGER NOT NULL
    );",
    // 4: incidents, keyed by their root causes (JSON lists), with the instances that joined
    // each (JSON: instance to when it saw it resolve), and their updates.
    "CREATE TABLE incidents (
        id INTEGER PRIMARY KEY,
        title TEXT NOT NULL,
        roots TEXT NOT NULL,
        affected TEXT NOT NULL,
        impact TEXT NOT NULL,
        started INTEGER NOT NULL,
        resolved INTEGER,
        updated INTEGER NOT NULL,
        members TEXT NOT NULL
    );
    CREATE INDEX incidents_by_resolution ON incidents (resolved);
    CREATE TABLE incident_updates (
        id INTEGER PRIMARY KEY,
        incident INTEGER NOT NULL REFERENCES incidents(id),
        at INTEGER NOT NULL,
        status TEXT NOT NULL,
        message TEXT NOT NULL,
        actor TEXT
    );
    CREATE INDEX incident_updates_by_incident ON incident_updates (incident, at);",
    // 5: what each incident update is, a field (the page never searches the engine's
    // words); older updates are told apart once, here, by who said them and how.
    "ALTER TABLE incident_updates ADD COLUMN kind TEXT NOT NULL DEFAULT 'opened';
    UPDATE incident_updates SET kind = CASE
        WHEN actor IS NOT NULL THEN 'operator'
        WHEN message LIKE '%reopened%' THEN 'reopened'
        WHEN status = 'resolved' THEN 'resolved'
        ELSE 'opened' END;",
    // 6: an incident's postmortem, once resolved: one an incident, replaced when rewritten;
    // maintenances announced to the public, with the dependencies they cover (a JSON list);
    // the page's subscribers (their secret token kept hashed) and what each was sent, so
    // that a fleet sends each message once.
    "CREATE TABLE incident_postmortems (
        incident INTEGER PRIMARY KEY REFERENCES incidents(id),
        body TEXT NOT NULL,
        at INTEGER NOT NULL,
        actor TEXT
    );
    CREATE TABLE maintenances (
        id INTEGER PRIMARY KEY,
        title TEXT NOT NULL,
        body TEXT NOT NULL,
        dependencies TEXT NOT NULL,
        start INTEGER NOT NULL,
        until INTEGER NOT NULL,
        created INTEGER NOT NULL,
        actor TEXT,
        cancelled INTEGER
    );
    CREATE INDEX maintenances_by_end ON maintenances (until);
    CREATE TABLE subscribers (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        address TEXT NOT NULL,
        components TEXT NOT NULL,
        lang TEXT NOT NULL,
        token TEXT NOT NULL UNIQUE,
        created INTEGER NOT NULL,
        confirmed INTEGER,
        confirm_sent INTEGER,
        UNIQUE (kind, address)
    );
    CREATE TABLE deliveries (
        event TEXT NOT NULL,
        subscriber INTEGER NOT NULL,
        at INTEGER NOT NULL,
        PRIMARY KEY (event, subscriber)
    );",
    // 7: past windows excluded from uptime and objectives (planned maintenance said after
    // the fact), with what each bucket had in them when they were made (a JSON list).
    "CREATE TABLE exclusions (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        start INTEGER NOT NULL,
        until INTEGER NOT NULL,
        reason TEXT NOT NULL,
        actor TEXT,
        created INTEGER NOT NULL,
        amounts TEXT NOT NULL
    );",
];

/// The version a file is at once migrated.
#[allow(clippy::cast_possible_wrap, clippy::cast_possible_truncation)] // a handful
pub(crate) const VERSION: i64 = MIGRATIONS.len() as i64;
