//! `/api/v1/tokens`: an admin lists, creates and revokes API tokens
//! through the API as `datajump token` does on the database.
//!
//! The rule that shapes it: **no token is made wider than the one making
//! it.** A token limited to a project creates tokens of that project only
//! and sees and revokes only those; a role above the creator's is refused.
//! The token itself is in the answer to its creation and nowhere else.

use axum::Json as AxumJson;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use datajump_shared::access::Reach;
use datajump_shared::entities::api_token;
use datajump_store::tokens::{self, TokenError};

use self::dto::{CreatedToken, NewToken, TokenDto};
use super::shared::{CallerOf, paging};
use crate::AppState;
use crate::auth::Caller;
use crate::dto::{Page, PageQuery};
use crate::error::{Error, Result};
use crate::extract::{Json, Path, Query};

pub mod dto;

fn within(caller: &Caller, row: &api_token::Model) -> bool {
    caller.reach.covers(Reach::from_column(row.project_id))
}

/// `GET /api/v1/tokens?page=&pageSize=`: the tokens within reach, by name.
pub async fn list(
    State(state): State<AppState>,
    Extension(CallerOf(caller)): Extension<CallerOf>,
    Query(query): Query<PageQuery>,
) -> Result<AxumJson<Page<TokenDto>>> {
    let caller = crate::reach::caller(caller)?;
    let (page, page_size) = paging(query.page, query.page_size, "pageSize")?;
    let rows: Vec<TokenDto> = tokens::list(&state.db)
        .await?
        .into_iter()
        .filter(|row| within(&caller, row))
        .map(TokenDto::from)
        .collect();
    Ok(AxumJson(Page::of_all(rows, page, page_size)))
}

/// `POST /api/v1/tokens`: creates a token (201) no wider than the
/// caller's own, in role and in reach (403 otherwise).
pub async fn create(
    State(state): State<AppState>,
    Extension(CallerOf(caller)): Extension<CallerOf>,
    Json(body): Json<NewToken>,
) -> Result<Response> {
    let caller = crate::reach::caller(caller)?;
    let reach = body.project_id.map_or(caller.reach, Reach::Project);
    if !caller.reach.covers(reach) {
        return Err(Error::Forbidden(format!(
            "the token '{}' is limited to {}; it cannot create a token for {reach}",
            caller.name, caller.reach
        )));
    }
    if !caller.role.allows(body.role) {
        return Err(Error::Forbidden(format!(
            "the token '{}' has the role {}; it cannot create a token with the role {}",
            caller.name, caller.role, body.role
        )));
    }
    if let Reach::Project(id) = reach
        && datajump_store::projects::find(&state.db, id)
            .await?
            .is_none()
    {
        return Err(Error::bad_request(format!(
            "invalid field `projectId`: no project with id {id} (GET /api/v1/projects lists them)"
        )));
    }
    let created = match tokens::create(&state.db, &body.name, body.role, reach, &caller.name).await
    {
        Ok(created) => created,
        Err(TokenError::Db(e)) => return Err(Error::Db(e)),
        Err(e @ TokenError::Exists(_)) => return Err(taken(&state, &caller, &body.name, e).await),
        Err(e @ TokenError::InvalidName(_)) => return Err(Error::bad_request(e.to_string())),
        Err(e @ TokenError::NotFound(_)) => return Err(Error::not_found(e.to_string())),
    };
    let answer = CreatedToken {
        token: created.token,
        info: TokenDto::from(created.row),
    };
    Ok((StatusCode::CREATED, AxumJson(answer)).into_response())
}

/// The 409 for a token name already taken. Names are unique in the
/// installation, so the name cannot be had whoever holds it; but a token
/// beyond the caller's reach is not described to it, nor offered for
/// revoking (docs/SECURITY.md, "Projects").
async fn taken(state: &AppState, caller: &Caller, name: &str, exists: TokenError) -> Error {
    let visible = match tokens::list(&state.db).await {
        Ok(rows) => rows
            .iter()
            .any(|row| row.name == name && within(caller, row)),
        Err(e) => return Error::Db(e),
    };
    if visible {
        Error::conflict(exists.to_string())
    } else {
        Error::conflict(format!(
            "the token name '{name}' cannot be used: token names are unique in the installation; choose another"
        ))
    }
}

/// `DELETE /api/v1/tokens/{name}`: revokes a token within reach (204); its
/// browser sessions end with it.
pub async fn revoke(
    State(state): State<AppState>,
    Extension(CallerOf(caller)): Extension<CallerOf>,
    Path(name): Path<String>,
) -> Result<StatusCode> {
    let caller = crate::reach::caller(caller)?;
    let missing = || Error::not_found(format!("no token named '{name}'"));
    let row = tokens::list(&state.db)
        .await?
        .into_iter()
        .find(|row| row.name == name)
        .ok_or_else(missing)?;
    if !within(&caller, &row) {
        return Err(missing());
    }
    tokens::revoke(&state.db, &name)
        .await
        .map_err(|e| match e {
            TokenError::Db(e) => Error::Db(e),
            _ => missing(),
        })?;
    Ok(StatusCode::NO_CONTENT)
}
