use status_core::check::CheckOutcome;
use status_core::{CheckStatus, Urgency};

/// A ping.
#[status_core::dependency(
    id = "primary-db",
    urgency = "required",
    description = "Orders database",
    kind = "postgres",
    service_pool = "db-eu",
    documentation_url = "https://runbooks.example/db",
    timeout = "250ms",
    period = "1m",
    tags = ["db", "critical"],
    depends_on = ["network"],
    failures_before_outage = 5,
    successes_before_recovery = 2,
)]
pub async fn primary_db() -> Result<(), std::io::Error> {
    Ok(())
}

#[status_core::dependency(urgency = "Weak")]
async fn search_cluster() -> (CheckStatus, String) {
    (CheckStatus::Minor, "yellow".to_owned())
}

#[status_core::dependency(urgency = "none", period = "2h")]
async fn recommendations() -> CheckOutcome {
    CheckOutcome::ok()
}

#[status_core::dependency]
async fn cache() -> CheckStatus {
    CheckStatus::Ok
}

#[status_core::dependency(id = "api.v2_eu", urgency = "strong")]
async fn anyhow_style() -> std::io::Result<u32> {
    Ok(1)
}

/// Arguments are cloned into every run.
#[status_core::dependency(id = "with-client")]
async fn with_client(client: std::sync::Arc<String>, port: u16) -> Result<(), std::io::Error> {
    let _ = (client.len(), port);
    Ok(())
}

fn main() {
    let with_client = with_client(std::sync::Arc::new("client".to_owned()), 5432);
    assert_eq!(with_client.info().id().as_str(), "with-client");

    let db = primary_db();
    let info = db.info();
    assert_eq!(info.id().as_str(), "primary-db");
    assert_eq!(info.urgency(), Urgency::Required);
    assert_eq!(info.kind(), "postgres");
    assert_eq!(info.service_pool(), "db-eu");
    assert_eq!(info.timeout(), std::time::Duration::from_millis(250));
    assert_eq!(info.period(), std::time::Duration::from_secs(60));
    assert_eq!(info.tags(), ["db", "critical"]);
    assert_eq!(info.parents()[0].as_str(), "network");
    assert_eq!(info.failures_before_outage(), 5);
    assert_eq!(info.successes_before_recovery(), 2);

    assert_eq!(search_cluster().info().id().as_str(), "search-cluster");
    assert_eq!(search_cluster().info().urgency(), Urgency::Weak);
    assert_eq!(recommendations().info().period(), std::time::Duration::from_secs(7200));
    assert_eq!(cache().info().urgency(), Urgency::Required);
    assert_eq!(anyhow_style().info().id().as_str(), "api.v2_eu");
}
