//! `/api/v1/session`: a browser signs in by exchanging an API token for an
//! HttpOnly, `SameSite=Strict` session cookie, so the token never sits in
//! page script or a URL; the cookie then authenticates every request the
//! page makes, reads and the live stream included, under the origin rule
//! of [`crate::auth::guard`].

use axum::Json as AxumJson;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use datajump_store::sessions::{self, SignedInWith};

use self::dto::{SessionDto, SignIn};
use super::shared::CallerOf;
use crate::AppState;
use crate::auth::{SESSION_COOKIE, SignedIn, caller_of_token, session_cookie, tokens_required};
use crate::error::{Error, Result};
use crate::extract::Json;

pub mod dto;

fn cookie(value: &str, max_age: i64, secure: bool) -> Result<HeaderValue> {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{SESSION_COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
    ))
    .map_err(|e| Error::Internal(format!("session cookie: {e}")))
}

/// `POST /api/v1/session`: signs in with a token; sets the session cookie.
pub async fn create(State(state): State<AppState>, Json(body): Json<SignIn>) -> Result<Response> {
    let token = body.token.trim();
    let caller = caller_of_token(&state, token).await?;
    let with = match caller.token_id {
        Some(id) => SignedInWith::Named(id),
        None => SignedInWith::EnvironmentToken(token),
    };
    let (value, session) = sessions::create(
        &state.db,
        with,
        &caller.name,
        caller.role,
        caller.reach,
        Utc::now(),
    )
    .await?;
    let answer = SessionDto {
        name: session.name,
        role: session.role,
        project_id: session.project_id,
        tokens_required: true,
        expires_at: Some(session.expires_at),
    };
    let max_age = sessions::LIFETIME.num_seconds();
    let mut response = (StatusCode::CREATED, AxumJson(answer)).into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        cookie(&value, max_age, state.browser.secure_cookies())?,
    );
    response.extensions_mut().insert(SignedIn(caller));
    Ok(response)
}

/// `GET /api/v1/session`: who the caller is (401 when a token is required
/// and none was sent).
pub async fn show(
    State(state): State<AppState>,
    headers: HeaderMap,
    Extension(CallerOf(caller)): Extension<CallerOf>,
) -> Result<AxumJson<SessionDto>> {
    let required = tokens_required(&state).await?;
    let Some(caller) = caller else {
        return Err(Error::Unauthorized(
            "not signed in: POST /api/v1/session with { \"token\": … }, or send a bearer token"
                .to_owned(),
        ));
    };
    let expires_at = match session_cookie(&headers) {
        Some(value) => sessions::find(&state.db, &value, state.token.as_deref(), Utc::now())
            .await?
            .map(|s| s.expires_at),
        None => None,
    };
    Ok(AxumJson(SessionDto {
        name: caller.name,
        role: caller.role,
        project_id: caller.reach.project_id(),
        tokens_required: required,
        expires_at,
    }))
}

/// `DELETE /api/v1/session`: signs out; the cookie is cleared.
pub async fn delete(State(state): State<AppState>, headers: HeaderMap) -> Result<Response> {
    if let Some(value) = session_cookie(&headers) {
        sessions::end(&state.db, &value).await?;
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        cookie("", 0, state.browser.secure_cookies())?,
    );
    Ok(response)
}
