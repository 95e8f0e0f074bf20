use status_checks::etcd::EtcdCheck;
use status_core::check::Threshold;

use crate::servers::{etcd, Silent};
use crate::{healthy_stopped_and_restarted, never_answers_without_leaks};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthy_stopped_and_restarted_member() {
    let mut server = etcd();
    let check = EtcdCheck::new(&format!("http://127.0.0.1:{}", server.port))
        .unwrap()
        .latency(Threshold::at_most(1_000.0, 2_000.0, 5_000.0).unwrap());
    healthy_stopped_and_restarted(&mut server, check, "member ").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_never_answers_times_out() {
    let silent = Silent::start().await;
    let check = EtcdCheck::new(&format!("http://127.0.0.1:{}", silent.port)).unwrap();
    never_answers_without_leaks(&silent, check).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raised_alarm_is_major() {
    // A member with a 1 MiB quota, filled until it raises NOSPACE and refuses writes.
    let server = crate::servers::etcd_with(&["--quota-backend-bytes", "1048576"]);
    let url = format!("http://127.0.0.1:{}", server.port);
    let mut client = etcd_client::Client::connect([url.as_str()], None)
        .await
        .unwrap();
    let value = vec![b'x'; 256 * 1024];
    let mut refused = false;
    for i in 0..64 {
        if client
            .put(format!("fill-{i}"), value.clone(), None)
            .await
            .is_err()
        {
            refused = true;
            break;
        }
    }
    assert!(refused, "the quota was never reached");
    let outcome = status_core::check::Check::check(&EtcdCheck::new(&url).unwrap()).await;
    assert_eq!(
        outcome.status(),
        status_core::CheckStatus::Major,
        "{}",
        outcome.message()
    );
    assert!(
        outcome.message().contains("Nospace"),
        "{}",
        outcome.message()
    );
}
