//! Who made an admin call, as its handler read it from the body: what status-http's audit
//! trail records beside the call.

use axum::response::Response;

/// Who made a call and why, as its handler read it from the body: a response extension
/// status-http's `AuditLayer` records.
#[derive(Debug, Clone)]
pub struct AuditSaid {
    /// Who made the call, if it said.
    pub actor: Option<String>,
    /// Why, if it said.
    pub reason: Option<String>,
}

/// `response`, telling the audit trail who made the call and why, if the call said.
#[must_use]
pub fn with_actor(
    mut response: Response,
    actor: Option<String>,
    reason: Option<String>,
) -> Response {
    if actor.is_some() || reason.is_some() {
        response
            .extensions_mut()
            .insert(AuditSaid { actor, reason });
    }
    response
}
