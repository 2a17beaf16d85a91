//! Named API tokens: created with a role, shown once, stored as their
//! SHA-256, revoked by deleting the row (the audit log keeps the history).
//!
//! A token is `dj_` and 64 hex digits (256 random bits), so a hash of it
//! cannot be reversed and needs no salt; looking a token up is one indexed
//! query by hash.

use chrono::{DateTime, Duration, Utc};
use rand::RngCore;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, SqlErr,
};
use sha2::{Digest, Sha256};
use thiserror::Error;

use datajump_shared::access::{Reach, Role};
use datajump_shared::entities::api_token::{self, Model};

/// What every token starts with, so a leaked one is recognisable.
pub const PREFIX: &str = "dj_";

/// How stale `last_used_at` may be before a use updates it.
const TOUCH_EVERY: Duration = Duration::minutes(1);

/// Why a token could not be created or removed.
#[derive(Debug, Error)]
pub enum TokenError {
    /// The database failed.
    #[error("database error: {0}")]
    Db(#[from] DbErr),
    /// `create` with a name that is taken.
    #[error("a token named '{0}' already exists (revoke it first to replace it)")]
    Exists(String),
    /// No token has that name.
    #[error("no token named '{0}'")]
    NotFound(String),
    /// A name outside `[A-Za-z0-9_.-]{1,64}`.
    #[error("invalid token name '{0}': use 1-64 characters from letters, digits, '_', '-' and '.'")]
    InvalidName(String),
}

/// A token just created: its row and the token itself, which is not stored
/// and cannot be shown again.
#[derive(Clone)]
pub struct Created {
    /// The stored row.
    pub row: Model,
    /// The token, for the one who asked for it.
    pub token: String,
}

impl std::fmt::Debug for Created {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Created")
            .field("row", &self.row)
            .field("token", &"***")
            .finish()
    }
}

/// The stored form of `token`: lower-case hex SHA-256.
pub fn hash(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// `bytes` as lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Whether `name` is a valid token (or project) name.
pub(crate) fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Creates a token `name` with `role` reaching `reach`, recorded as made
/// by `created_by`. Whether its creator may give it that much is the
/// caller's to check ([`Reach::covers`], [`Role::allows`]).
pub async fn create(
    db: &DatabaseConnection,
    name: &str,
    role: Role,
    reach: Reach,
    created_by: &str,
) -> Result<Created, TokenError> {
    if !is_valid_name(name) {
        return Err(TokenError::InvalidName(name.to_owned()));
    }
    let mut secret = [0u8; 32];
    rand::rng().fill_bytes(&mut secret);
    let token = format!("{PREFIX}{}", hex(&secret));
    let row = api_token::ActiveModel {
        name: Set(name.to_owned()),
        role: Set(role),
        project_id: Set(reach.project_id()),
        token_hash: Set(hash(&token)),
        created_by: Set(created_by.to_owned()),
        created_at: Set(Utc::now()),
        last_used_at: Set(None),
        ..Default::default()
    };
    match api_token::Entity::insert(row).exec_with_returning(db).await {
        Ok(row) => Ok(Created { row, token }),
        Err(e) if matches!(e.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {
            Err(TokenError::Exists(name.to_owned()))
        }
        Err(e) => Err(e.into()),
    }
}

/// Every token, by name.
pub async fn list(db: &DatabaseConnection) -> Result<Vec<Model>, DbErr> {
    api_token::Entity::find()
        .order_by_asc(api_token::Column::Name)
        .all(db)
        .await
}

/// Revokes the token `name`: it stops working at once, and so do the
/// browser sessions signed in with it.
pub async fn revoke(db: &DatabaseConnection, name: &str) -> Result<Model, TokenError> {
    let row = api_token::Entity::find()
        .filter(api_token::Column::Name.eq(name))
        .one(db)
        .await?
        .ok_or_else(|| TokenError::NotFound(name.to_owned()))?;
    api_token::Entity::delete_by_id(row.id).exec(db).await?;
    crate::sessions::end_all_of(db, row.id).await?;
    Ok(row)
}

/// The token whose text is `token`, if it exists.
pub async fn find(db: &DatabaseConnection, token: &str) -> Result<Option<Model>, DbErr> {
    if !token.starts_with(PREFIX) {
        return Ok(None);
    }
    api_token::Entity::find()
        .filter(api_token::Column::TokenHash.eq(hash(token)))
        .one(db)
        .await
}

/// Whether any token exists: then every route but the probes needs one.
pub async fn any(db: &DatabaseConnection) -> Result<bool, DbErr> {
    Ok(api_token::Entity::find()
        .select_only()
        .column(api_token::Column::Id)
        .limit(1)
        .into_tuple::<i64>()
        .one(db)
        .await?
        .is_some())
}

/// Notes a use of `row` at `now`, when its last noted use is older than a
/// minute (so a busy client does not write on every request).
pub async fn touch(db: &DatabaseConnection, row: &Model, now: DateTime<Utc>) -> Result<(), DbErr> {
    if row.last_used_at.is_some_and(|at| now - at < TOUCH_EVERY) {
        return Ok(());
    }
    api_token::Entity::update_many()
        .col_expr(api_token::Column::LastUsedAt, now.into())
        .filter(api_token::Column::Id.eq(row.id))
        .exec(db)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_hashes() {
        assert!(is_valid_name("ci-bot.prod_1"));
        for bad in ["", "a b", "x/y", &"n".repeat(65)] {
            assert!(!is_valid_name(bad), "{bad:?}");
        }
        assert_eq!(
            hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
