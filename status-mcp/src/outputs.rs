//! Each tool's output schema (MCP structured output, 2025-06-18): the JSON Schema of its
//! `structuredContent`, derived from the types its answers are made of, so that the schema
//! cannot drift from what is sent. An answer's objects from status-history (an uptime report,
//! an objective's report) are described by their fields' names and kinds here.

use std::sync::Arc;

use rmcp::handler::server::common::schema_for_output;
use rmcp::model::JsonObject;
use serde_json::json;

/// A schema written here, as an object.
fn object(schema: serde_json::Value) -> Arc<JsonObject> {
    match schema {
        serde_json::Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// `summary`'s.
pub(crate) fn summary() -> Arc<JsonObject> {
    schema_for_output::<crate::diagnose::Summary>()
}

/// `why`'s.
pub(crate) fn why() -> Arc<JsonObject> {
    schema_for_output::<crate::why::Why>()
}

/// `incidents`'.
pub(crate) fn incidents() -> Arc<JsonObject> {
    #[cfg(feature = "history")]
    return schema_for_output::<crate::read::IncidentsAnswer>();
    #[cfg(not(feature = "history"))]
    object(json!({ "type": "object" }))
}

/// `fleet`'s.
pub(crate) fn fleet() -> Arc<JsonObject> {
    #[cfg(feature = "fleet")]
    return schema_for_output::<crate::read::FleetAnswer>();
    #[cfg(not(feature = "fleet"))]
    object(json!({ "type": "object" }))
}

/// `maintenances`'.
pub(crate) fn maintenances() -> Arc<JsonObject> {
    schema_for_output::<crate::maintenances::MaintenancesAnswer>()
}

/// `uptime`'s: status-history's uptime report.
pub(crate) fn uptime() -> Arc<JsonObject> {
    let share = json!({ "type": ["number", "null"], "minimum": 0, "maximum": 1 });
    let ms = json!({ "type": "integer", "minimum": 0 });
    object(json!({
        "type": "object",
        "required": [
            "kind", "name", "from", "to", "resolution", "observedMs", "spentMs", "uptime",
            "sla", "weights", "checks", "failures"
        ],
        "properties": {
            "kind": { "enum": ["dependency", "group", "system"] },
            "name": { "type": "string" },
            "from": { "type": "string", "format": "date-time" },
            "to": { "type": "string", "format": "date-time" },
            "resolution": { "type": "string" },
            "observedMs": ms,
            "spentMs": {
                "type": "object",
                "required": ["ok", "minor", "major", "outage"],
                "properties": { "ok": ms, "minor": ms, "major": ms, "outage": ms },
            },
            "uptime": share,
            "sla": share,
            "weights": { "type": "object" },
            "checks": ms,
            "failures": ms,
            "durationMs": { "type": ["object", "null"] },
        },
    }))
}

/// `slos`': status-history's objective reports, as `/healthcheck/slos` says them.
pub(crate) fn slos() -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "required": ["slos"],
        "properties": {
            "slos": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name", "target", "objective", "window", "budget", "burnRates", "alerts"],
                    "properties": {
                        "name": { "type": "string" },
                        "target": { "type": "string" },
                        "objective": { "type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1 },
                        "window": { "type": "string" },
                        "budget": {
                            "type": "object",
                            "required": ["allowedMs", "spentMs", "remaining"],
                        },
                        "burnRates": { "type": "object" },
                        "alerts": { "type": "array", "items": { "type": "object" } },
                    },
                },
            },
        },
    }))
}
