//! Browser sessions: an API token exchanged for a random cookie value,
//! stored as its SHA-256 and good until it expires, the user signs out, the
//! token is revoked ([`crate::tokens::revoke`] ends its sessions) or, for
//! `DATAJUMP_API_TOKEN`, the token is replaced: such a session keeps the
//! token's hash and ends when the API's token is another.

use chrono::{DateTime, Duration, Utc};
use rand::RngCore;
use sea_orm::{ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter};

use datajump_shared::access::{Reach, Role};
use datajump_shared::entities::api_session::{self, Model};

use crate::tokens::{hash, hex};

/// How long a sign-in lasts.
pub const LIFETIME: Duration = Duration::hours(12);

/// What a session signed in with.
#[derive(Debug, Clone, Copy)]
pub enum SignedInWith<'a> {
    /// The named token of this id.
    Named(i64),
    /// `DATAJUMP_API_TOKEN`, this value of it.
    EnvironmentToken(&'a str),
}

/// Starts a session for the token `name`, signed in `with` it, with `role`
/// and `reach`; returns the cookie's value and the session.
pub async fn create(
    db: &DatabaseConnection,
    with: SignedInWith<'_>,
    name: &str,
    role: Role,
    reach: Reach,
    now: DateTime<Utc>,
) -> Result<(String, Model), DbErr> {
    let (token_id, env_token_hash) = match with {
        SignedInWith::Named(id) => (Some(id), None),
        SignedInWith::EnvironmentToken(token) => (None, Some(hash(token))),
    };
    let mut secret = [0u8; 32];
    rand::rng().fill_bytes(&mut secret);
    let value = hex(&secret);
    let row = api_session::Entity::insert(api_session::ActiveModel {
        session_hash: Set(hash(&value)),
        token_id: Set(token_id),
        name: Set(name.to_owned()),
        role: Set(role),
        project_id: Set(reach.project_id()),
        created_at: Set(now),
        expires_at: Set(now + LIFETIME),
        env_token_hash: Set(env_token_hash),
        ..Default::default()
    })
    .exec_with_returning(db)
    .await?;
    Ok((value, row))
}

/// The live session whose cookie value is `value`; an expired one, or one
/// signed in with a `DATAJUMP_API_TOKEN` other than `env_token` (the API's
/// now, if it has one), is removed and not returned.
pub async fn find(
    db: &DatabaseConnection,
    value: &str,
    env_token: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Option<Model>, DbErr> {
    let Some(row) = api_session::Entity::find()
        .filter(api_session::Column::SessionHash.eq(hash(value)))
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    // A hash, not the token: comparing it in variable time tells nothing.
    let replaced = row.token_id.is_none()
        && row
            .env_token_hash
            .as_deref()
            .is_none_or(|signed_in| env_token.is_none_or(|current| signed_in != hash(current)));
    if row.expires_at <= now || replaced {
        api_session::Entity::delete_by_id(row.id).exec(db).await?;
        return Ok(None);
    }
    Ok(Some(row))
}

/// Ends the session whose cookie value is `value`, if there is one.
pub async fn end(db: &DatabaseConnection, value: &str) -> Result<(), DbErr> {
    api_session::Entity::delete_many()
        .filter(api_session::Column::SessionHash.eq(hash(value)))
        .exec(db)
        .await?;
    Ok(())
}

/// Ends every session signed in with the named token `token_id`.
pub async fn end_all_of(db: &DatabaseConnection, token_id: i64) -> Result<(), DbErr> {
    api_session::Entity::delete_many()
        .filter(api_session::Column::TokenId.eq(token_id))
        .exec(db)
        .await?;
    Ok(())
}

/// Ends every session, whatever it signed in with; returns how many ended.
pub async fn end_every(db: &DatabaseConnection) -> Result<u64, DbErr> {
    Ok(api_session::Entity::delete_many()
        .exec(db)
        .await?
        .rows_affected)
}
