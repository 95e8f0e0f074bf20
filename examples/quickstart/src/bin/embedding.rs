//! The README's embedding example, as it is written there (a test keeps the two the same):
//! a service with one dependency, a SQLite history and a webhook, on `LISTEN`.

use std::time::Duration;

use status_core::{check, CheckStatus, Dependency, Registry};
use status_history::History;
use status_notify::{Notifications, Webhook};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::new();
    registry.add(
        Dependency::builder(
            "primary-db",
            check::tiered(|| async { (CheckStatus::Ok, "up") }),
        )
        .build()?,
    )?;
    // After the dependencies, features and groups: what it puts back must exist.
    let history = History::sqlite("status-history.db").open();
    history.attach(&registry);
    // The notifier's last-told and each notice's incident link, kept in it: one call
    // (status-notify's feature `history`).
    let _notifications = Notifications::builder(&registry)
        .history(&history, Some("https://status.example.com/status/page"))
        .sink(Webhook::new("https://ops.example.com/status-hook")?)
        .start()?;
    // Uptime, transitions, reports, incidents and the audit trail, read from it.
    let app = status_http::Routes::new(&registry)
        .history(history.clone())
        .build();
    // Bind first: the probes answer whatever the store does. Mutes and overrides come back
    // in the background as soon as it opens (at once for a file); a file another process
    // holds or a directory that cannot be written is said by the dependency `history`, and
    // never keeps the port closed.
    let listener = tokio::net::TcpListener::bind(
        std::env::var("LISTEN").unwrap_or_else(|_| "127.0.0.1:8080".into()),
    )
    .await?;
    let restoring = history.clone();
    tokio::spawn(async move {
        let restored = restoring.restored().await;
        println!(
            "{} mutes and {} overrides restored",
            restored.mutes, restored.overrides
        );
    });
    status_http::serve(listener, app)
        .with_graceful_shutdown(status_http::shutdown::graceful(
            &registry,
            Duration::from_secs(5),
        ))
        .await?;
    // The one call to make at shutdown: the last second written, the file let go.
    history.close().await;
    Ok(())
}
