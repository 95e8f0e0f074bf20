use chrono::{TimeZone, Utc};
use status_core::CheckStatus;

use super::*;

fn spent(ok: u64, major: u64, outage: u64) -> Spent {
    Spent {
        ok,
        minor: 0,
        major,
        outage,
        muted: 0,
    }
}

#[test]
fn an_objective_is_read_from_the_flag_and_refuses_what_is_not_one() {
    let o: Objective = "db=dependency:primary-db@99.9/30d".parse().unwrap();
    assert_eq!(o.name(), "db");
    assert_eq!(o.target(), &Series::Dependency("primary-db".into()));
    assert_eq!(o.objective(), 0.999, "as 0.999 reads, to the bit");
    assert_eq!(
        "x=system@99.95/1d"
            .parse::<Objective>()
            .unwrap()
            .objective(),
        0.9995
    );
    assert_eq!(
        "x=system@90/1d".parse::<Objective>().unwrap().objective(),
        0.9
    );
    assert_eq!(o.window(), Duration::days(30));
    assert_eq!(o.bad_level(), CheckStatus::Major);
    assert_eq!(o.to_string(), "db=dependency:primary-db@99.9/30d");
    let g: Objective = "api=group:api@99/1h".parse().unwrap();
    assert_eq!(g.target(), &Series::Group("api".into()));
    assert_eq!(
        "all=system@95/400d".parse::<Objective>().unwrap().target(),
        &Series::System
    );
    for (bad, says) in [
        ("db=dependency:primary-db@100/30d", "between 0 and 100"),
        ("db=dependency:primary-db@0/30d", "between 0 and 100"),
        ("db=dependency:primary-db@NaN/30d", "percentage"),
        ("db=dependency:primary-db@-5/30d", "percentage"),
        ("db=dependency:primary-db@9e1/30d", "percentage"),
        ("db=dependency:primary-db@.5/30d", "percentage"),
        ("db=dependency:primary-db@abc/30d", "percentage"),
        ("db=dependency:primary-db@99/30m", "from 1h"),
        ("db=dependency:primary-db@99/401d", "30d"),
        ("db=dependency:primary-db@99/1w", "30d"),
        ("db=database:primary-db@99/1d", "a target is"),
        ("db=dependency:@99/1d", "a target is"),
        ("DB=system@99/1d", "lowercase"),
        ("=system@99/1d", "lowercase"),
        ("db system@99/1d", "no `=`"),
        ("db=system/99", "no `@`"),
        ("db=system@99", "no `/`"),
    ] {
        let e = bad.parse::<Objective>().unwrap_err();
        assert!(e.is_invalid() && e.to_string().contains(says), "{bad}: {e}");
    }
    assert!(o.clone().bad_from(CheckStatus::Ok).is_err());
}

#[test]
fn bad_time_counts_from_its_level_and_never_muted_time() {
    let o: Objective = "db=system@99/1d".parse().unwrap();
    let s = Spent {
        ok: 1,
        minor: 10,
        major: 100,
        outage: 1000,
        muted: 10_000,
    };
    assert_eq!(o.bad(&s), 1100);
    assert_eq!(
        o.clone().bad_from(CheckStatus::Minor).unwrap().bad(&s),
        1110
    );
    assert_eq!(o.bad_from(CheckStatus::Outage).unwrap().bad(&s), 1000);
}

#[test]
fn the_budget_and_burn_rates_follow_the_bad_share() {
    let o: Objective = "db=system@99/30d".parse().unwrap();
    let at = Utc.timestamp_opt(1_800_000_000, 0).unwrap();
    // 0.5 % bad over the window: half the budget; 20 % bad in the last hour and 5 minutes.
    let burns = [
        spent(4, 1, 0),     // 5m: 20 %, burn 20
        spent(24, 6, 0),    // 30m: 20 %
        spent(48, 0, 12),   // 1h: 20 %
        spent(360, 0, 0),   // 6h: 0
        spent(1_000, 0, 0), // 1d
        spent(0, 0, 0),     // 3d: nothing observed
    ];
    let r = SloReport::of(&o, at, &spent(995, 0, 5), &burns);
    assert_eq!((r.observed_ms, r.bad_ms), (1000, 5));
    assert_eq!(r.budget.allowed_ms, 10);
    assert!((r.budget.remaining - 0.5).abs() < 1e-9);
    assert!((r.burn_rate("5m").unwrap() - 20.0).abs() < 1e-9);
    assert_eq!(r.burn_rate("6h"), Some(0.0));
    assert_eq!(r.burn_rate("3d"), None, "nothing observed is no rate");
    let firing: Vec<bool> = r.alerts.iter().map(|a| a.firing).collect();
    assert_eq!(firing, [true, false, false], "the fast page alone");
    assert!(r.firing(Severity::Page) && !r.firing(Severity::Ticket));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["target"], "system");
    assert_eq!(json["badFrom"], "MAJOR");
    assert_eq!(json["burnRates"]["3d"], serde_json::Value::Null);
    assert_eq!(json["alerts"][0]["severity"], "page");
    assert_eq!(json["budget"]["spentMs"], 5);
    // Overspent: remaining goes below zero.
    let r = SloReport::of(&o, at, &spent(970, 0, 30), &burns);
    assert!((r.budget.remaining + 2.0).abs() < 1e-9);
}

#[test]
fn an_alarm_tells_its_start_and_end_once_and_keeps_its_start() {
    let o: Objective = "db=system@99/30d".parse().unwrap();
    let t = |s: i64| Utc.timestamp_opt(1_800_000_000 + s, 0).unwrap();
    let hot = [spent(0, 0, 10); 6];
    let cold = [spent(10, 0, 0); 6];
    let mut alarms = Alarms::new();
    let mut r = SloReport::of(&o, t(0), &spent(10, 0, 0), &hot);
    let started = alarms.tell(&mut r);
    assert_eq!(started.len(), 3, "every rule fires");
    assert!(started.iter().all(|c| c.firing && c.since == t(0)));
    assert!((started[0].burn_rate.unwrap() - 100.0).abs() < 1e-9);
    let mut again = SloReport::of(&o, t(30), &spent(10, 0, 0), &hot);
    assert!(alarms.tell(&mut again).is_empty(), "told once");
    assert_eq!(again.alerts[0].since, Some(t(0)));
    // A reader late with an older report changes nothing.
    let mut late = SloReport::of(&o, t(10), &spent(10, 0, 0), &cold);
    assert!(alarms.tell(&mut late).is_empty());
    assert!(alarms.is_firing("db", Severity::Page));
    // Kept across a restart.
    let mut restarted = Alarms::from_kept(&alarms.to_kept());
    let mut r = SloReport::of(&o, t(60), &spent(10, 0, 0), &hot);
    assert!(
        restarted.tell(&mut r).is_empty(),
        "not told again after a restart"
    );
    assert_eq!(r.alerts[2].since, Some(t(0)));
    let mut r = SloReport::of(&o, t(90), &spent(10, 0, 0), &cold);
    let ended = restarted.tell(&mut r);
    assert_eq!(ended.len(), 3);
    assert!(ended
        .iter()
        .all(|c| !c.firing && c.since == t(0) && c.at == t(90)));
    assert!(r.alerts.iter().all(|a| a.since.is_none()));
    assert!(Alarms::from_kept("db 9 1\nnonsense\n").to_kept().is_empty());
}
