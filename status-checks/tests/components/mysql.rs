use std::time::Duration;

use status_checks::mysql::MysqlCheck;
use status_core::check::Threshold;

use crate::servers::{mariadb, Silent};
use crate::{
    alive_tasks, healthy_stopped_and_restarted, never_answers_without_leaks, registry_with,
    tasks_settle_to, three_timeouts,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthy_stopped_and_restarted_server() {
    let mut server = mariadb();
    let check = MysqlCheck::new(&format!("mysql://root@127.0.0.1:{}/mysql", server.port))
        .unwrap()
        .latency(Threshold::at_most(1_000.0, 2_000.0, 5_000.0).unwrap());
    healthy_stopped_and_restarted(&mut server, check, "server 1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out_without_leaks() {
    let silent = Silent::start().await;
    let check = MysqlCheck::new(&format!("mysql://root@127.0.0.1:{}/", silent.port)).unwrap();
    never_answers_without_leaks(&silent, check).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_that_hangs_times_out_and_leaves_no_task() {
    let server = mariadb();
    let check = MysqlCheck::new(&format!("mysql://root@127.0.0.1:{}/mysql", server.port))
        .unwrap()
        .query("SELECT SLEEP(30)");
    let registry = registry_with(check, Duration::from_millis(300)).await;
    assert!(tasks_settle_to(alive_tasks()).await);
    let baseline = alive_tasks();
    three_timeouts(&registry).await;
    assert!(
        tasks_settle_to(baseline).await,
        "a connection outlived its check: {} tasks alive, {baseline} before",
        alive_tasks()
    );
}

#[test]
fn a_url_that_does_not_parse_is_refused_without_its_password() {
    let error = MysqlCheck::new("mysql://app:hunter2@[::1/db").unwrap_err();
    assert!(!error.to_string().contains("hunter2"), "{error}");
    assert!(MysqlCheck::new("postgres://127.0.0.1/").is_err());
}
