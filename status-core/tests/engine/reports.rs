//! The shapes of the documents, as snapshots.

use std::time::Duration;

use status_core::{CheckStatus, SystemReport, Urgency};

use crate::support::{registry, Mode, Steered};

async fn degraded() -> (status_core::Registry, std::sync::Arc<SystemReport>) {
    let registry = registry();
    let deps = [
        (
            "primary-db",
            Urgency::Required,
            Mode::Slow(Duration::from_millis(12), CheckStatus::Ok),
        ),
        ("search", Urgency::Strong, Mode::Status(CheckStatus::Major)),
        ("cache", Urgency::Weak, Mode::Hang),
        (
            "recommendations",
            Urgency::None,
            Mode::Panic("index out of bounds"),
        ),
    ];
    for (id, urgency, mode) in deps {
        let check = Steered::new(mode);
        let builder = check
            .dependency(id)
            .urgency(urgency)
            .kind("demo")
            .documentation_url(format!("https://runbooks.example/{id}"));
        let builder = if id == "cache" {
            builder.depends_on("search")
        } else {
            builder
        };
        registry.add(builder.build().unwrap()).unwrap();
    }
    let report = registry.refresh_all().await;
    (registry, report)
}

#[tokio::test(start_paused = true)]
async fn detailed_report() {
    let (_registry, report) = degraded().await;
    assert_eq!(report.condition(), CheckStatus::Major);
    insta::assert_snapshot!(serde_json::to_string_pretty(&*report).unwrap());
}

#[tokio::test(start_paused = true)]
async fn summary_puts_condition_first() {
    let (_registry, report) = degraded().await;
    let json = serde_json::to_string(&report.summary()).unwrap();
    assert!(json.starts_with("{\"condition\":\"MAJOR\""), "{json}");
    insta::assert_snapshot!(json);
}

#[tokio::test(start_paused = true)]
async fn health_json_view() {
    let (_registry, report) = degraded().await;
    assert_eq!(report.health_json().status(), "warn");
    insta::assert_snapshot!(serde_json::to_string_pretty(&report.health_json()).unwrap());
}

#[tokio::test(start_paused = true)]
async fn verbose_view() {
    let (_registry, report) = degraded().await;
    insta::assert_snapshot!(report.verbose());
}

#[tokio::test(start_paused = true)]
async fn excluding_refolds_the_condition() {
    let (_registry, report) = degraded().await;
    let without_search = report.excluding(&["search"]);
    assert_eq!(without_search.condition(), CheckStatus::Minor);
    assert!(without_search.result("search").is_none());
    assert_eq!(without_search.results().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn results_are_keyed_by_status_worst_first() {
    let (_registry, report) = degraded().await;
    let json = serde_json::to_value(&*report).unwrap();
    let keys: Vec<_> = json["results"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    // serde_json's map keeps keys sorted unless preserve_order; compare with the text.
    let text = serde_json::to_string(&*report).unwrap();
    let outage = text.find("\"OUTAGE\":[").unwrap();
    let major = text.find("\"MAJOR\":[").unwrap();
    let ok = text.find("\"OK\":[").unwrap();
    assert!(outage < major && major < ok, "{text}");
    assert_eq!(keys.len(), 3, "only the statuses present: {keys:?}");
}
