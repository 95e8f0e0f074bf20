use status_core::check::etcd::EtcdCheck;
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
