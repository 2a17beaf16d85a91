//! Browser sessions: an API token exchanged for a random cookie value,
//! stored as its SHA-256 and good until it expires, the user signs out or
//! the token is revoked ([`crate::tokens::revoke`] ends its sessions).

use chrono::{DateTime, Duration, Utc};
use rand::RngCore;
use sea_orm::{ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter};

use datajump_shared::access::{Reach, Role};
use datajump_shared::entities::api_session::{self, Model};

use crate::tokens::{hash, hex};

/// How long a sign-in lasts.
pub const LIFETIME: Duration = Duration::hours(12);

/// Starts a session for the token `name` (`token_id` when it is a named
/// one) with `role` and `reach`; returns the cookie's value and the
/// session.
pub async fn create(
    db: &DatabaseConnection,
    token_id: Option<i64>,
    name: &str,
    role: Role,
    reach: Reach,
    now: DateTime<Utc>,
) -> Result<(String, Model), DbErr> {
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
        ..Default::default()
    })
    .exec_with_returning(db)
    .await?;
    Ok((value, row))
}

/// The live session whose cookie value is `value`; an expired one is
/// removed and not returned.
pub async fn find(
    db: &DatabaseConnection,
    value: &str,
    now: DateTime<Utc>,
) -> Result<Option<Model>, DbErr> {
    let Some(row) = api_session::Entity::find()
        .filter(api_session::Column::SessionHash.eq(hash(value)))
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    if row.expires_at <= now {
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
