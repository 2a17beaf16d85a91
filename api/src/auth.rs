//! Who may reach a route: the browser rules ([`crate::browser`]) and the
//! bearer token. When `DATAJUMP_API_TOKEN` is set, every mutating request
//! (POST, PUT, PATCH, DELETE) must carry `Authorization: Bearer <token>`;
//! reads stay open so probes and dashboards need no secret.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::error::Error;

/// Compares in time independent of where the strings differ.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    let mut difference = given.len() ^ expected.len();
    for (i, &b) in expected.iter().enumerate() {
        difference |= usize::from(b ^ given.get(i).copied().unwrap_or(0));
    }
    difference == 0
}

/// Why a request is not authorized, if it is not.
pub fn check(token: Option<&str>, method: &Method, authorization: Option<&str>) -> Option<Error> {
    let expected = token?;
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return None;
    }
    match authorization {
        None => Some(Error::Unauthorized(
            "this API requires a token for changes: send `Authorization: Bearer <token>`"
                .to_owned(),
        )),
        Some(value) => {
            let given = value
                .strip_prefix("Bearer ")
                .or_else(|| value.strip_prefix("bearer "))
                .map(str::trim);
            match given {
                Some(given) if same_secret(given.as_bytes(), expected.as_bytes()) => None,
                Some(_) => Some(Error::Unauthorized("invalid bearer token".to_owned())),
                None => Some(Error::Unauthorized(
                    "the Authorization header must be `Bearer <token>`".to_owned(),
                )),
            }
        }
    }
}

/// Middleware in front of every route. In this order, so that the answer
/// names the first rule broken: a `Host` a loopback listener does not
/// answer to (403), a cross-origin change (403), a missing or wrong token
/// (401), a body not declared JSON (415).
pub async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let text = |name| {
        headers
            .get(name)
            .map(|v: &HeaderValue| v.to_str().unwrap_or(""))
    };
    let host = text(header::HOST);
    let problem = state
        .loopback
        .then(|| state.browser.host_problem(host))
        .flatten()
        .or_else(|| {
            state
                .browser
                .origin_problem(request.method(), text(header::ORIGIN), host)
        })
        .or_else(|| {
            check(
                state.token.as_deref(),
                request.method(),
                text(header::AUTHORIZATION),
            )
        })
        .or_else(|| crate::browser::content_type_problem(request.method(), headers));
    match problem {
        Some(error) => error.into_response(),
        None => next.run(request).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changes_need_the_token() {
        assert!(check(None, &Method::POST, None).is_none());
        assert!(check(Some("s3cret"), &Method::GET, None).is_none());
        assert!(check(Some("s3cret"), &Method::POST, None).is_some());
        assert!(check(Some("s3cret"), &Method::DELETE, Some("Bearer nope")).is_some());
        assert!(check(Some("s3cret"), &Method::PUT, Some("Basic s3cret")).is_some());
        assert!(check(Some("s3cret"), &Method::PUT, Some("Bearer s3cre")).is_some());
        assert!(check(Some("s3cret"), &Method::PUT, Some("Bearer s3cret")).is_none());
    }
}
