//! Bearer-token authentication of admin calls: named operators, each token kept as its
//! hash and compared in constant time.

use std::fmt;
use std::sync::{Arc, RwLock};

use axum::extract::{FromRef, FromRequestParts};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::ApiError;

/// An admin bearer token, for applications that guard routes of their own the way the admin
/// API is guarded. Its `Debug` never shows it.
///
/// # Example
///
/// ```
/// use axum::http::{header::AUTHORIZATION, HeaderMap, StatusCode};
/// use status_http_core::auth::AdminToken;
///
/// let token = AdminToken::new("s3cret").unwrap();
/// let mut headers = HeaderMap::new();
/// assert_eq!(token.authorize(&headers).unwrap_err().status(), StatusCode::UNAUTHORIZED);
/// headers.insert(AUTHORIZATION, "Bearer s3cret".parse().unwrap());
/// assert!(token.authorize(&headers).is_ok());
/// ```
#[derive(Clone)]
pub struct AdminToken(Arc<[u8]>);

impl AdminToken {
    /// The token, or `None` if it is blank.
    #[must_use]
    pub fn new(token: &str) -> Option<Self> {
        let token = token.trim();
        (!token.is_empty()).then(|| Self(Arc::from(token.as_bytes())))
    }

    /// Whether `headers` carry `Authorization: Bearer <this token>`.
    ///
    /// # Errors
    ///
    /// A 401 [`ApiError`] (answered with `WWW-Authenticate: Bearer`) when they do not.
    pub fn authorize(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let presented = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(status_core::text::bearer);
        match presented {
            Some(candidate) if self.matches(candidate.as_bytes()) => Ok(()),
            _ => Err(ApiError::unauthorized()),
        }
    }

    /// Whether `candidate` is the token, in time that depends only on their lengths.
    fn matches(&self, candidate: &[u8]) -> bool {
        candidate.len() == self.0.len() && bool::from(candidate.ct_eq(&self.0))
    }
}

impl fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AdminToken(..)")
    }
}

/// One operator who may call admin routes: a name, and a token kept only as its SHA-256
/// hash. Its `Debug` shows the name, never the token.
#[derive(Clone)]
pub struct Operator {
    name: Arc<str>,
    hash: [u8; 32],
    read_only: bool,
}

impl Operator {
    /// `name` (1 to 64 of `A-Z a-z 0-9 . _ -`), holding `token` (not blank).
    ///
    /// # Errors
    ///
    /// [`status_core::Error::is_invalid`] for a name or a token that is not one.
    pub fn new(name: &str, token: &str) -> Result<Self, status_core::Error> {
        let fine = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        if name.is_empty() || name.len() > 64 || !name.chars().all(fine) {
            return Err(status_core::Error::invalid(format!(
                "operator name {name:?}: 1 to 64 of A-Z a-z 0-9 . _ -"
            )));
        }
        let token = token.trim();
        if token.is_empty() {
            return Err(status_core::Error::invalid(format!(
                "operator {name}: a blank token"
            )));
        }
        Ok(Self {
            name: Arc::from(name),
            hash: hash(token.as_bytes()),
            read_only: false,
        })
    }

    /// The operators written as `name:token`, comma-separated, each optionally followed by
    /// `:read-only` (`alice:T1,bob:T2:read-only`).
    ///
    /// # Errors
    ///
    /// [`status_core::Error::is_invalid`] for an entry that is not one, naming the entry by
    /// its place and name, never its token.
    pub fn list(spec: &str) -> Result<Vec<Self>, status_core::Error> {
        let mut operators = Vec::new();
        for (i, entry) in spec.split(',').map(str::trim).enumerate() {
            if entry.is_empty() {
                continue;
            }
            let mut parts = entry.split(':');
            let (name, token) = (parts.next().unwrap_or_default(), parts.next());
            let malformed = || {
                status_core::Error::invalid(format!(
                    "operator {} ({name}): name:token, or name:token:read-only",
                    i + 1
                ))
            };
            let read_only = match parts.next() {
                None => false,
                Some("read-only") if parts.next().is_none() => true,
                Some(_) => return Err(malformed()),
            };
            let token = token.ok_or_else(malformed)?;
            let operator = Self::new(name, token)?;
            operators.push(if read_only {
                operator.read_only()
            } else {
                operator
            });
        }
        Ok(operators)
    }

    /// May read (`GET`, `HEAD`) and do nothing else: any other call answers 403.
    #[must_use]
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// The operator's name: the audit trail's actor for each of their calls.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the operator may only read.
    #[must_use]
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }
}

impl fmt::Debug for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Operator")
            .field("name", &self.name)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

fn hash(token: &[u8]) -> [u8; 32] {
    Sha256::digest(token).into()
}

/// Who may call admin routes: named operators, each with a token of their own (kept hashed,
/// revocable, optionally read-only), or nobody (every admin call then answers 403). Put it
/// in your router's state and implement [`FromRef`] for it, and the [`Admin`] extractor
/// guards your own routes exactly as the admin API is guarded, naming the operator.
///
/// Cheap to clone: every clone is the same set, and a revocation holds in all of them.
#[derive(Debug, Clone, Default)]
pub struct AdminAuth {
    operators: Option<Arc<RwLock<Vec<Operator>>>>,
}

impl AdminAuth {
    /// Admin calls carrying `token`, as one operator named `admin`; a blank token turns them
    /// all away with 403.
    #[must_use]
    pub fn new(token: &str) -> Self {
        match Operator::new("admin", token) {
            Ok(admin) => Self::from_operators(vec![admin]),
            Err(_) => Self::default(),
        }
    }

    /// Admin calls carrying any of `operators`' tokens, each named; none turns them all away.
    ///
    /// # Errors
    ///
    /// [`status_core::Error::is_invalid`] when two operators share a name or a token: the
    /// trail could not say who acted.
    pub fn operators(
        operators: impl IntoIterator<Item = Operator>,
    ) -> Result<Self, status_core::Error> {
        let operators: Vec<Operator> = operators.into_iter().collect();
        for (i, a) in operators.iter().enumerate() {
            for b in &operators[..i] {
                if a.name == b.name {
                    return Err(status_core::Error::invalid(format!(
                        "operator {} is named twice",
                        a.name
                    )));
                }
                if bool::from(a.hash.ct_eq(&b.hash)) {
                    return Err(status_core::Error::invalid(format!(
                        "operators {} and {} hold the same token",
                        b.name, a.name
                    )));
                }
            }
        }
        Ok(Self::from_operators(operators))
    }

    /// The operators written as `name:token`, comma-separated, each optionally followed by
    /// `:read-only` (`alice:T1,bob:T2:read-only`), as `STATUS_ADMIN_TOKENS` holds them.
    ///
    /// # Errors
    ///
    /// As [`Operator::list`] and [`operators`](Self::operators).
    pub fn parse(spec: &str) -> Result<Self, status_core::Error> {
        Self::operators(Operator::list(spec)?)
    }

    fn from_operators(operators: Vec<Operator>) -> Self {
        Self {
            operators: (!operators.is_empty()).then(|| Arc::new(RwLock::new(operators))),
        }
    }

    /// Takes `name`'s token back: their next call answers 401, in every clone. Whether they
    /// held one.
    pub fn revoke(&self, name: &str) -> bool {
        let Some(operators) = &self.operators else {
            return false;
        };
        let mut operators = crate::sync::write(operators);
        let before = operators.len();
        operators.retain(|o| &*o.name != name);
        operators.len() != before
    }

    /// The operators' names, in the order given.
    #[must_use]
    pub fn names(&self) -> Vec<String> {
        self.operators.as_ref().map_or_else(Vec::new, |operators| {
            let operators = crate::sync::read(operators);
            operators.iter().map(|o| o.name.to_string()).collect()
        })
    }

    /// The operator whose token `headers` carry, whatever the call.
    ///
    /// # Errors
    ///
    /// 403 when no operator is configured; 401 (with `WWW-Authenticate: Bearer`) when the
    /// token is missing or no operator's.
    pub fn operator(&self, headers: &HeaderMap) -> Result<Operator, ApiError> {
        let Some(operators) = &self.operators else {
            return Err(ApiError::admin_disabled());
        };
        let presented = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(status_core::text::bearer)
            .ok_or_else(ApiError::unauthorized)?;
        let presented = hash(presented.as_bytes());
        let operators = crate::sync::read(operators);
        // Every hash compared, in constant time: which one matched takes no longer to find.
        let mut found = None;
        for operator in operators.iter() {
            if bool::from(operator.hash.ct_eq(&presented)) {
                found = Some(operator.clone());
            }
        }
        found.ok_or_else(ApiError::unauthorized)
    }

    /// Checks `headers` for a call with `method`: the operator it names, as [`Admin`].
    ///
    /// # Errors
    ///
    /// As [`operator`](Self::operator), and 403 for a read-only operator's call that is not
    /// a `GET` or `HEAD`.
    pub fn admit(&self, method: &Method, headers: &HeaderMap) -> Result<Admin, ApiError> {
        let operator = self.operator(headers)?;
        if operator.read_only && !matches!(*method, Method::GET | Method::HEAD) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                format!("operator {} may only read", operator.name),
            ));
        }
        Ok(Admin {
            operator: operator.name,
        })
    }

    /// Checks `headers`: any operator's token.
    ///
    /// # Errors
    ///
    /// 403 when no token is configured; 401 (with `WWW-Authenticate: Bearer`) when the
    /// token is missing or wrong.
    pub fn authorize(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        self.operator(headers).map(drop)
    }
}

/// Proof that the request carries an operator's token, and whose: the audit trail's actor.
/// Put it first among a handler's arguments, so that nothing else of the request is looked
/// at (not even the path) before the caller is authenticated. A read-only operator gets
/// past it on `GET` and `HEAD` only.
///
/// # Example
///
/// ```
/// use axum::extract::FromRef;
/// use axum::{routing::post, Router};
/// use status_http_core::auth::{Admin, AdminAuth};
///
/// #[derive(Clone)]
/// struct AppState {
///     auth: AdminAuth,
/// }
///
/// impl FromRef<AppState> for AdminAuth {
///     fn from_ref(state: &AppState) -> Self {
///         state.auth.clone()
///     }
/// }
///
/// async fn purge(admin: Admin) -> String {
///     format!("purged by {}", admin.operator())
/// }
///
/// let app: Router = Router::new()
///     .route("/purge", post(purge))
///     .with_state(AppState { auth: AdminAuth::parse("alice:s3cret").unwrap() });
/// ```
#[derive(Debug, Clone)]
pub struct Admin {
    operator: Arc<str>,
}

impl Admin {
    /// The operator's name.
    #[must_use]
    pub fn operator(&self) -> &str {
        &self.operator
    }
}

impl<S> FromRequestParts<S> for Admin
where
    S: Send + Sync,
    AdminAuth: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        AdminAuth::from_ref(state).admit(&parts.method, &parts.headers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bearer(token: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
        headers
    }

    #[test]
    fn each_operator_is_named_by_their_own_token() {
        let auth = AdminAuth::parse("alice:a-token, bob:b-token:read-only").unwrap();
        assert_eq!(auth.names(), ["alice", "bob"]);
        let alice = auth.admit(&Method::POST, &bearer("a-token")).unwrap();
        assert_eq!(alice.operator(), "alice");
        let bob = auth.admit(&Method::GET, &bearer("b-token")).unwrap();
        assert_eq!(bob.operator(), "bob");
        let refused = auth.admit(&Method::POST, &bearer("b-token")).unwrap_err();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        assert!(refused.message().contains("bob may only read"));
        for wrong in ["", "a-token2", "alice"] {
            let e = auth.admit(&Method::GET, &bearer(wrong)).unwrap_err();
            assert_eq!(e.status(), StatusCode::UNAUTHORIZED, "{wrong:?}");
        }
        // Revoked: 401 at once, in every clone.
        let clone = auth.clone();
        assert!(auth.revoke("alice"));
        assert!(!auth.revoke("alice"));
        let e = clone.admit(&Method::GET, &bearer("a-token")).unwrap_err();
        assert_eq!(e.status(), StatusCode::UNAUTHORIZED);
    }

    #[test]
    fn a_mistake_in_the_operators_is_refused_without_showing_a_token() {
        for (spec, says) in [
            ("alice", "name:token"),
            ("alice:SECRETX:admin", "name:token"),
            ("alice:SECRETX,alice:SECRETY", "named twice"),
            ("alice:SECRETX,bob:SECRETX", "the same token"),
            ("al ice:SECRETX", "operator name"),
            ("alice:   ", "blank token"),
        ] {
            let e = AdminAuth::parse(spec).unwrap_err();
            assert!(
                e.is_invalid() && e.to_string().contains(says),
                "{spec}: {e}"
            );
            assert!(!e.to_string().contains("SECRET"), "{spec}: {e}");
        }
        assert_eq!(
            AdminAuth::new("")
                .admit(&Method::GET, &bearer("x"))
                .unwrap_err()
                .status(),
            StatusCode::FORBIDDEN
        );
        let one = AdminAuth::new("s3cret");
        assert_eq!(one.names(), ["admin"]);
        assert!(format!("{one:?}").contains("admin") && !format!("{one:?}").contains("s3cret"));
    }
}
