//! The binary: one output per seed, byte for byte, and clear errors.

use std::process::Command;

fn sim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_status-sim"))
        .args(args)
        .output()
        .expect("status-sim runs")
}

/// The JSON lines without `wallMs`, the one field a seed does not fix.
fn without_wall(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| {
            let mut row: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            let wall = row
                .as_object_mut()
                .expect("an object")
                .remove("wallMs")
                .expect("wallMs");
            assert!(wall.as_f64().expect("a number") >= 0.0);
            row
        })
        .collect()
}

#[test]
fn a_seed_gives_one_output() {
    let args = [
        "timelike",
        "--seed",
        "3",
        "--requests",
        "8000",
        "--format",
        "json",
    ];
    let first = sim(&args);
    let second = sim(&args);
    assert!(first.status.success(), "{first:?}");
    let rows = without_wall(&first.stdout);
    assert_eq!(rows, without_wall(&second.stdout));
    assert_eq!(rows.len(), status_sim::scenario::all().len());
    // The fields, in the contract's order.
    let line = String::from_utf8_lossy(&first.stdout)
        .lines()
        .next()
        .unwrap()
        .to_owned();
    let keys = [
        "\"scenario\"",
        "\"seed\"",
        "\"total\"",
        "\"selected\"",
        "\"success\"",
        "\"requestRate\"",
        "\"responseRate\"",
        "\"latency\"",
        "\"min\"",
        "\"p50\"",
        "\"p95\"",
        "\"p99\"",
        "\"max\"",
        "\"wallMs\"",
    ];
    let at: Vec<usize> = keys.iter().map(|k| line.find(k).expect(k)).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{line}");
    assert_eq!(rows[0]["total"], 8000);
    assert_eq!(rows[0]["selected"], 4000);

    let other = sim(&[
        "timelike",
        "--seed",
        "4",
        "--requests",
        "8000",
        "--format",
        "json",
    ]);
    assert_ne!(rows, without_wall(&other.stdout));
}

#[test]
fn the_table_is_the_same_bytes_for_the_same_seed() {
    let args = ["timelike", "--seed", "2,5", "--requests", "6000"];
    let first = sim(&args);
    let second = sim(&args);
    assert!(first.status.success());
    assert!(!first.stdout.is_empty());
    assert_eq!(first.stdout, second.stdout);
    // The wall time goes to stderr.
    assert!(String::from_utf8_lossy(&first.stderr).contains(" runs in "));
    let markdown = [
        "timelike",
        "--seed",
        "1,2",
        "--requests",
        "6000",
        "--format",
        "markdown",
    ];
    assert_eq!(sim(&markdown).stdout, sim(&markdown).stdout);
}

#[test]
fn one_scenario_a_table_and_a_chart() {
    let dir = std::env::temp_dir().join(format!("status-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("chart.svg");
    let out = sim(&[
        "timelike",
        "--scenario",
        "faulty-min-conn,faulty-min-conn-hold",
        "--requests",
        "4000",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let table = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    assert!(lines[0].starts_with("scenario"));
    assert!(lines[1].starts_with("faulty-min-conn "));
    assert!(lines[2].starts_with("faulty-min-conn-hold "));
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(chart.starts_with("<svg"));
    assert_eq!(chart.matches("<polyline").count(), 2);
    assert!(chart.contains("faulty-min-conn-hold ("));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_arguments_are_refused_with_a_reason() {
    let out = sim(&["timelike", "--scenario", "no-such-thing"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown scenario \"no-such-thing\""));
    assert!(out.stdout.is_empty());

    let out = sim(&["timelike", "--requests", "2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--requests"));

    let out = sim(&["timelike", "--requests", "999999999999"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("between 4"));

    let out = sim(&["timelike", "--seed", "x"]);
    assert_eq!(out.status.code(), Some(2));

    let list = sim(&["list"]);
    assert!(list.status.success());
    assert_eq!(
        String::from_utf8_lossy(&list.stdout).lines().count(),
        status_sim::scenario::all().len()
    );
}

#[test]
fn a_written_topology_runs_as_the_scenario_it_spells() {
    let spelled = sim(&[
        "run",
        "--topology",
        "lb-min-conn 250 x (cable 2 > faulty 20000 1000 > queue-exclusive > delay-fixed 20 > \
         delay-exponential 100 > server)",
        "--requests",
        "8000",
        "--name",
        "faulty-min-conn",
        "--seed",
        "1,2",
        "--format",
        "json",
    ]);
    assert!(spelled.status.success(), "{spelled:?}");
    let scenario = sim(&[
        "timelike",
        "--scenario",
        "faulty-min-conn",
        "--requests",
        "8000",
        "--seed",
        "1,2",
        "--format",
        "json",
    ]);
    let rows = without_wall(&spelled.stdout);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows, without_wall(&scenario.stdout));
}

#[test]
fn a_bad_topology_is_refused_before_anything_runs() {
    let out = sim(&[
        "run",
        "--topology",
        "retry 3 > lb-min-conn hold=1s 3 x (server)",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "status-sim: --topology: at word 5 (\"hold=1s\"): hold= takes a whole number of ms"
    );
    assert!(out.stdout.is_empty());

    let out = sim(&["run", "--topology", "server", "--gap=-1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--gap"));
}

#[test]
fn alternatives_run_side_by_side() {
    let out = sim(&[
        "run",
        "--topology",
        "lb-min-conn hold={0,1000} 50 x (cable 2 > faulty 2000 500 > queue-exclusive > \
         delay-exponential 20 > server)",
        "--requests",
        "6000",
        "--gap",
        "2",
        "--name",
        "sweep",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let rows = without_wall(&out.stdout);
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["scenario"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sweep hold=0", "sweep hold=1000"]);
    // The hold wins back what fast failures take.
    let success = |i: usize| rows[i]["success"].as_f64().unwrap();
    assert!(success(1) > success(0) + 0.05, "{rows:?}");

    let out = sim(&["run", "--topology", "retry {2,0} > server"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "status-sim: --topology (0): at word 2 (\"0\"): retry takes a whole number of at least 1"
    );
}

#[test]
fn a_topology_too_deep_to_follow_is_refused_not_crashed_on() {
    let nested = format!("{}server{}", "lb-random 1 x (".repeat(300), ")".repeat(300));
    let out = sim(&["run", "--topology", &nested]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nested more than 256 deep"));
}
