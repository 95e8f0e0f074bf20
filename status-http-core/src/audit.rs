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

/// Checks the `actor` a body claims, which is not read (the actor of an act is the operator
/// whose token made it): text an operator writes, refused as such when it holds control
/// characters, so that a malformed body is a 400 and changes nothing. Blank is as absent.
///
/// # Errors
///
/// A 400 [`ApiError`](crate::error::ApiError) saying what is wrong.
pub fn claimed(actor: Option<&str>) -> Result<(), crate::error::ApiError> {
    match actor.filter(|a| !status_core::text::is_blank(a)) {
        Some(actor) => status_core::text::printable("actor", actor)
            .map(drop)
            .map_err(|e| crate::error::ApiError::bad_request(e.to_string())),
        None => Ok(()),
    }
}
