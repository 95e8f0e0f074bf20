//! Each component check's cost per run against a bare client round trip to the same server,
//! in the same run: what the check adds (its bookkeeping, its grading, its outcome) to the
//! round trip it cannot avoid. The servers are started here on loopback, as the tests start
//! them (memcached, nats-server, MariaDB, RabbitMQ, etcd; a TLS server of rustls with a
//! certificate rcgen makes).
//!
//! `cargo bench -p status-core --all-features --bench checks`
// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

#[path = "../tests/components/servers.rs"]
#[allow(dead_code, unreachable_pub)]
mod servers;

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use lapin::{Connection, ConnectionProperties};
use mysql_async::prelude::Queryable;
use rcgen::{CertificateParams, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use status_checks::amqp::AmqpCheck;
use status_checks::etcd::EtcdCheck;
use status_checks::memcached::MemcachedCheck;
use status_checks::mysql::MysqlCheck;
use status_checks::nats::NatsCheck;
use status_checks::tls::TlsCheck;
use status_core::check::Check;
use status_core::CheckStatus;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::runtime::Runtime;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// Benchmarks `bare` and `check` under `name`, after asserting the check is OK.
fn pair<B, BF, C>(c: &mut Criterion, rt: &Runtime, name: &str, bare: B, check: &C)
where
    B: Fn() -> BF,
    BF: std::future::Future<Output = ()>,
    C: Check,
{
    let outcome = rt.block_on(check.check());
    assert_eq!(
        outcome.status(),
        CheckStatus::Ok,
        "{name}: {}",
        outcome.message()
    );
    let mut group = c.benchmark_group(name);
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(3));
    group.bench_function("bare client", |b| b.to_async(rt).iter(&bare));
    group.bench_function("check", |b| b.to_async(rt).iter(|| check.check()));
    group.finish();
}

fn memcached(c: &mut Criterion) {
    let rt = runtime();
    let server = servers::memcached();
    let address = format!("127.0.0.1:{}", server.port);
    let socket = rt.block_on(async {
        tokio::sync::Mutex::new(BufReader::new(
            tokio::net::TcpStream::connect(&address).await.unwrap(),
        ))
    });
    let bare = || async {
        let mut socket = socket.lock().await;
        socket.get_mut().write_all(b"version\r\n").await.unwrap();
        let mut line = String::new();
        socket.read_line(&mut line).await.unwrap();
    };
    pair(
        c,
        &rt,
        "memcached version",
        bare,
        &MemcachedCheck::new(address.clone()),
    );
}

fn nats(c: &mut Criterion) {
    let rt = runtime();
    let server = servers::nats(false);
    let url = format!("nats://127.0.0.1:{}", server.port);
    // A round trip to the server: PING, PONG on a raw socket (async-nats's `flush` only
    // empties the client's own buffer, the server never asked).
    let socket = rt.block_on(async {
        let mut socket = BufReader::new(
            tokio::net::TcpStream::connect(format!("127.0.0.1:{}", server.port))
                .await
                .unwrap(),
        );
        let mut info = String::new();
        socket.read_line(&mut info).await.unwrap();
        socket
            .get_mut()
            .write_all(b"CONNECT {\"verbose\":false}\r\n")
            .await
            .unwrap();
        tokio::sync::Mutex::new(socket)
    });
    let bare = || async {
        let mut socket = socket.lock().await;
        socket.get_mut().write_all(b"PING\r\n").await.unwrap();
        let mut line = String::new();
        while line != "PONG\r\n" {
            line.clear();
            socket.read_line(&mut line).await.unwrap();
        }
    };
    pair(
        c,
        &rt,
        "nats round trip",
        bare,
        &NatsCheck::new(&url).unwrap(),
    );
}

fn mysql(c: &mut Criterion) {
    let rt = runtime();
    let server = servers::mariadb();
    let url = format!("mysql://root@127.0.0.1:{}/mysql", server.port);
    let conn = rt
        .block_on(mysql_async::Conn::from_url(url.as_str()))
        .unwrap();
    let conn = tokio::sync::Mutex::new(conn);
    let bare = || async { conn.lock().await.query_drop("SELECT 1").await.unwrap() };
    pair(
        c,
        &rt,
        "mysql SELECT 1",
        bare,
        &MysqlCheck::new(&url).unwrap(),
    );
}

fn amqp(c: &mut Criterion) {
    let rt = runtime();
    let server = servers::rabbitmq();
    let url = format!("amqp://guest:guest@127.0.0.1:{}/%2f", server.port);
    let connection = rt
        .block_on(Connection::connect(&url, ConnectionProperties::default()))
        .unwrap();
    let bare = || async {
        let channel = connection.create_channel().await.unwrap();
        channel.close(200, "bench".into()).await.unwrap();
    };
    pair(c, &rt, "amqp channel", bare, &AmqpCheck::new(&url).unwrap());
}

fn etcd(c: &mut Criterion) {
    let rt = runtime();
    let server = servers::etcd();
    let url = format!("http://127.0.0.1:{}", server.port);
    let client = rt
        .block_on(etcd_client::Client::connect([url.as_str()], None))
        .unwrap();
    let bare = || {
        let mut client = client.clone();
        async move {
            client.status().await.unwrap();
            client
                .alarm(
                    etcd_client::AlarmAction::Get,
                    etcd_client::AlarmType::None,
                    None,
                )
                .await
                .unwrap();
        }
    };
    pair(
        c,
        &rt,
        "etcd status and alarms",
        bare,
        &EtcdCheck::new(&url).unwrap(),
    );
}

fn tls(c: &mut Criterion) {
    let rt = runtime();
    let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    params.is_ca = rcgen::IsCa::ExplicitNoCa;
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let pem = cert.pem();
    let chain: Vec<_> = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server_config = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            chain.clone(),
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server_config));
    let port = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let _ = acceptor.accept(tcp).await;
                });
            }
        });
        port
    });
    let mut roots = rustls::RootCertStore::empty();
    roots.add(chain[0].clone()).unwrap();
    let client_config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client_config));
    let bare = || async {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        connector
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .unwrap();
    };
    let check = TlsCheck::remote(&format!("127.0.0.1:{port}"))
        .unwrap()
        .server_name("localhost")
        .unwrap()
        .roots_pem(pem.as_bytes())
        .unwrap();
    pair(c, &rt, "tls handshake", bare, &check);
}

criterion_group!(benches, memcached, nats, mysql, amqp, etcd, tls);
criterion_main!(benches);
