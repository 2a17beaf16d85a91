//! Who may reach a route: the browser rules ([`crate::browser`]), who the
//! caller is, what the route's role allows, and the audit row each change
//! leaves.
//!
//! The caller is found once per request by [`guard`], in front of every
//! route: a bearer token is either `DATAJUMP_API_TOKEN` (an admin, named
//! `DATAJUMP_API_TOKEN` in the audit log) or a named token of
//! `datajump token create`. While no token exists at all (the local trial
//! `datajump up` starts), every caller is `anonymous` with every right, as
//! the API has always been on loopback. Once one exists, every route but
//! the probes needs a token whose role allows the route's
//! ([`crate::routes::table::Access`]); [`authorize`], layered on each route
//! with its access, checks that and writes the audit row of a change.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request, State};
use axum::extract::{FromRequestParts, RawPathParams};
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use datajump_shared::access::{Reach, Role};
use datajump_store::{audit, tokens};
use tracing::warn;

use crate::AppState;
use crate::error::Error;
use crate::routes::shared::CallerOf;
use crate::routes::table::{Access, Scope};

/// Who is calling, once authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The token's name, or `anonymous` when the API has no tokens.
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// The named token's id (`None` for `DATAJUMP_API_TOKEN` and
    /// anonymous callers).
    pub token_id: Option<i64>,
    /// The projects it reaches ([`crate::reach`]).
    pub reach: Reach,
}

/// The cookie a browser session rides on.
pub const SESSION_COOKIE: &str = "dj_session";

/// Who a sign-in (`POST /api/v1/session`) let in, on its answer: the
/// request itself carried no credentials the guard could read, so
/// [`authorize`] audits the sign-in as this caller rather than as
/// `anonymous` (docs/SECURITY.md, "Tokens, roles and the audit log").
#[derive(Debug, Clone)]
pub struct SignedIn(pub Caller);

/// Compares in time independent of where the strings differ.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    let mut difference = given.len() ^ expected.len();
    for (i, &b) in expected.iter().enumerate() {
        difference |= usize::from(b ^ given.get(i).copied().unwrap_or(0));
    }
    difference == 0
}

/// The token of an `Authorization` header, or why it is malformed.
fn bearer(authorization: &str) -> Result<&str, Error> {
    authorization
        .strip_prefix("Bearer ")
        .or_else(|| authorization.strip_prefix("bearer "))
        .map(str::trim)
        .ok_or_else(|| {
            Error::Unauthorized("the Authorization header must be `Bearer <token>`".to_owned())
        })
}

/// Whether this API requires a token: `DATAJUMP_API_TOKEN` is set or a
/// named token exists.
pub async fn tokens_required(state: &AppState) -> Result<bool, Error> {
    Ok(state.token.is_some() || tokens::any(&state.db).await?)
}

/// The caller an API without tokens sees everyone as.
fn anonymous() -> Caller {
    Caller {
        name: "anonymous".to_owned(),
        role: Role::Admin,
        token_id: None,
        reach: Reach::Everything,
    }
}

/// The owner of the API token `given`, or 401.
pub async fn caller_of_token(state: &AppState, given: &str) -> Result<Caller, Error> {
    if let Some(expected) = &state.token
        && same_secret(given.as_bytes(), expected.as_bytes())
    {
        return Ok(Caller {
            name: "DATAJUMP_API_TOKEN".to_owned(),
            role: Role::Admin,
            token_id: None,
            reach: Reach::Everything,
        });
    }
    match tokens::find(&state.db, given).await? {
        Some(row) => {
            if let Err(e) = tokens::touch(&state.db, &row, Utc::now()).await {
                warn!(error = %e, token = %row.name, "cannot note a token's use");
            }
            Ok(Caller {
                name: row.name,
                role: row.role,
                token_id: Some(row.id),
                reach: Reach::from_column(row.project_id),
            })
        }
        None => Err(Error::Unauthorized(
            "invalid token (revoked, mistyped, or from another installation)".to_owned(),
        )),
    }
}

/// The value of the session cookie among `Cookie` headers, if sent.
pub fn session_cookie(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value.trim().to_owned())
}

/// How a request identified itself.
enum Credentials {
    Bearer(String),
    Session(String),
    None,
}

/// Finds the caller: the owner of the bearer token or the session,
/// anonymous on an API without tokens, or `None` (nothing sent where a
/// token is required).
async fn authenticate(state: &AppState, credentials: Credentials) -> Result<Option<Caller>, Error> {
    match credentials {
        Credentials::Bearer(token) => caller_of_token(state, &token).await.map(Some),
        Credentials::Session(value) => {
            match datajump_store::sessions::find(
                &state.db,
                &value,
                state.token.as_deref(),
                Utc::now(),
            )
            .await?
            {
                Some(session) => Ok(Some(Caller {
                    name: session.name,
                    role: session.role,
                    token_id: session.token_id,
                    reach: Reach::from_column(session.project_id),
                })),
                // An ended session (signed out, expired, its token revoked
                // or replaced)
                // is as good as none: the route's rule decides, and signing
                // in again stays possible.
                None => Ok((!tokens_required(state).await?).then(anonymous)),
            }
        }
        Credentials::None => Ok((!tokens_required(state).await?).then(anonymous)),
    }
}

/// Whether `caller` may call a route with `access`, or the error to answer.
pub fn check(access: Access, caller: Option<&Caller>) -> Option<Error> {
    let Access::Role(needed) = access else {
        return None;
    };
    match caller {
        None => Some(Error::Unauthorized(
            "this API requires a token: send `Authorization: Bearer <token>` \
             (an admin creates one with `datajump token create NAME --role viewer|operator|admin`)"
                .to_owned(),
        )),
        Some(caller) if !caller.role.allows(needed) => Some(Error::Forbidden(format!(
            "the token '{}' has the role {}; this needs {needed} or above",
            caller.name, caller.role
        ))),
        Some(_) => None,
    }
}

/// Middleware in front of every route. In this order, so that the answer
/// names the first rule broken: a `Host` a loopback listener does not
/// answer to (403), a cross-origin change (403), a malformed or unknown
/// token (401), a body not declared JSON (415). The caller found is left
/// for [`authorize`].
pub async fn guard(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let headers = request.headers();
    let text = |name| {
        headers
            .get(name)
            .map(|v: &HeaderValue| v.to_str().unwrap_or(""))
    };
    let host = text(header::HOST);
    let refused = state
        .loopback
        .then(|| state.browser.host_problem(host))
        .flatten()
        .or_else(|| {
            state
                .browser
                .origin_problem(request.method(), text(header::ORIGIN), host)
        });
    if let Some(error) = refused {
        return error.into_response();
    }
    let credentials = match text(header::AUTHORIZATION) {
        Some(authorization) => match bearer(authorization) {
            Ok(token) => Credentials::Bearer(token.to_owned()),
            Err(error) => return error.into_response(),
        },
        None => session_cookie(request.headers()).map_or(Credentials::None, Credentials::Session),
    };
    // A cookie rides along on any request the browser sends, so every
    // request it authenticates, reads included, must come from a page of
    // the API's own origin.
    if matches!(credentials, Credentials::Session(_))
        && let Some(error) = state
            .browser
            .foreign_origin(text(header::ORIGIN), text(header::HOST))
    {
        return error.into_response();
    }
    let caller = match authenticate(&state, credentials).await {
        Ok(caller) => caller,
        Err(error) => return error.into_response(),
    };
    if let Some(error) = crate::browser::content_type_problem(request.method(), request.headers()) {
        return error.into_response();
    }
    request.extensions_mut().insert(CallerOf(caller));
    next.run(request).await
}

/// What a route requires of its caller: a role, and what of which project
/// it touches.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// The role.
    pub access: Access,
    /// The project.
    pub scope: Scope,
    /// The route as the table names it (`/api/v1/dags/{dagId}/trigger`).
    pub route: &'static str,
}

/// The answer to a caller beyond `rule`: a role too weak, or something of
/// a project beyond its token's reach ([`crate::reach::problem`]).
async fn refusal(
    state: &AppState,
    rule: Rule,
    caller: Option<&Caller>,
    request: Request,
) -> (Option<Error>, Request) {
    if let Some(error) = check(rule.access, caller) {
        return (Some(error), request);
    }
    let Some(caller) = caller.filter(|c| c.reach != Reach::Everything) else {
        return (None, request);
    };
    let (mut parts, body) = request.into_parts();
    let params = RawPathParams::from_request_parts(&mut parts, state).await;
    let request = Request::from_parts(parts, body);
    let problem = match params {
        Ok(params) => crate::reach::problem(state, rule.scope, caller, &params)
            .await
            .unwrap_or_else(Some),
        Err(_) => None,
    };
    (problem, request)
}

/// Middleware of one route: refuses a caller `rule` does not allow, and
/// writes the audit row of a change (or of a refused attempt at one) once
/// it is answered.
pub async fn authorize(state: AppState, rule: Rule, request: Request, next: Next) -> Response {
    let route = rule.route;
    let caller = request
        .extensions()
        .get::<CallerOf>()
        .and_then(|a| a.0.clone());
    let (refused, request) = refusal(&state, rule, caller.as_ref(), request).await;
    let method = request.method().clone();
    if matches!(method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return match refused {
            Some(error) => error.into_response(),
            None => next.run(request).await,
        };
    }
    let target = request.uri().path().to_owned();
    let origin = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or_else(|| "unknown".to_owned(), |info| info.0.to_string());
    let response = match refused {
        Some(error) => error.into_response(),
        None => next.run(request).await,
    };
    let signed_in = response.extensions().get::<SignedIn>().map(|s| s.0.clone());
    let (actor, role) = signed_in.or(caller).map_or_else(
        || ("anonymous".to_owned(), "none".to_owned()),
        |c| (c.name, c.role.as_str().to_owned()),
    );
    let entry = audit::Entry {
        actor,
        role,
        action: format!("{method} {route}"),
        target,
        status: response.status().as_u16(),
        origin,
    };
    if let Err(e) = audit::record(&state.db, entry).await {
        warn!(error = %e, "cannot write the audit log");
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(role: Role) -> Caller {
        Caller {
            name: "t".to_owned(),
            role,
            token_id: None,
            reach: Reach::Everything,
        }
    }

    #[test]
    fn roles_gate_routes() {
        let operator = Access::Role(Role::Operator);
        assert!(check(Access::Public, None).is_none());
        assert!(matches!(
            check(operator, None),
            Some(Error::Unauthorized(_))
        ));
        assert!(matches!(
            check(operator, Some(&caller(Role::Viewer))),
            Some(Error::Forbidden(_))
        ));
        assert!(check(operator, Some(&caller(Role::Operator))).is_none());
        assert!(check(operator, Some(&caller(Role::Admin))).is_none());
        assert!(bearer("Basic abc").is_err());
        assert_eq!(bearer("Bearer  abc ").ok(), Some("abc"));
        assert!(same_secret(b"s3cret", b"s3cret"));
        assert!(!same_secret(b"s3cre", b"s3cret"));
    }
}
