//! `--check KIND=TARGET`: a real component checked beside the demo's dependencies.

use anyhow::{bail, Context};
use status_checks::{amqp, etcd, memcached, mysql, nats, net, tls};
use status_core::{Dependency, DependencyBuilder, Urgency};

/// The kinds `--check` takes, with what TARGET is, for `--help` and errors.
pub const KINDS: &str = "\
mysql=mysql://user:pass@host:3306/db, amqp=amqp://user:pass@host:5672/%2f, \
nats=nats://host:4222 (nats-js=… with JetStream), memcached=host:11211, \
etcd=http://host:2379, tls=host:443 (its certificate), tls-file=PATH@NAME, tcp=host:port";

/// A dependency for `--check KIND=TARGET`, urgency WEAK, its id the kind (then `-2`, `-3`…
/// for the `n`th of a kind).
pub fn extra(spec: &str, n: usize) -> anyhow::Result<DependencyBuilder> {
    let (kind, target) = spec
        .split_once('=')
        .with_context(|| format!("--check takes KIND=TARGET: {spec:?}; kinds: {KINDS}"))?;
    let id = if n <= 1 {
        kind.to_owned()
    } else {
        format!("{kind}-{n}")
    };
    let builder = match kind {
        "mysql" => Dependency::builder(id, mysql::MysqlCheck::new(target)?),
        "amqp" => Dependency::builder(id, amqp::AmqpCheck::new(target)?),
        "nats" => Dependency::builder(id, nats::NatsCheck::new(target)?),
        "nats-js" => Dependency::builder(id, nats::NatsCheck::new(target)?.jetstream(true)),
        "memcached" => Dependency::builder(id, memcached::MemcachedCheck::new(target)),
        "etcd" => Dependency::builder(id, etcd::EtcdCheck::new(target)?),
        "tls" => Dependency::builder(id, tls::TlsCheck::remote(target)?),
        "tls-file" => {
            let (path, name) = target
                .rsplit_once('@')
                .context("tls-file=PATH@NAME: the file, and the name it is served for")?;
            Dependency::builder(id, tls::TlsCheck::file(path, name)?)
        }
        "tcp" => Dependency::builder(id, net::TcpCheck::new(target)),
        other => bail!("--check: unknown kind {other:?}; kinds: {KINDS}"),
    };
    Ok(builder
        .urgency(Urgency::Weak)
        .kind(kind.trim_end_matches("-js").trim_end_matches("-file"))
        .description(format!(
            "{kind} given with --check ({})",
            status_core::mask_credentials(target)
        )))
}
