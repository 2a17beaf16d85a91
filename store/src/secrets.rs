//! Secrets in the database: `datajump secret set/list/remove`, and the
//! values the runner reads when an attempt starts. Why a value lives in one
//! row and nowhere else is described on [`datajump_shared::secrets`].

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect, SqlErr,
};

use datajump_shared::entities::{datasource, secret};

use crate::sealing::{SealError, SecretKey, open_with};
use datajump_shared::secrets::{SecretError, is_valid_name};

/// What `set` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOutcome {
    /// A new secret.
    Created,
    /// The value (and description) of an existing one replaced.
    Updated,
}

/// A secret as it may be shown: everything but the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretInfo {
    /// Its name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When its value last changed.
    pub updated_at: DateTime<Utc>,
}

/// Creates the secret `name`, or replaces its value (and its description,
/// when one is given).
pub async fn set(
    db: &DatabaseConnection,
    name: &str,
    value: &str,
    description: Option<&str>,
) -> Result<SetOutcome, SecretError> {
    if !is_valid_name(name) {
        return Err(SecretError::InvalidName(name.to_owned()));
    }
    if value.is_empty() {
        return Err(SecretError::EmptyValue(name.to_owned()));
    }
    let now = Utc::now();
    let stored = crate::sealing::seal(value);
    let mut update = secret::Entity::update_many()
        .col_expr(secret::Column::Value, stored.clone().into())
        .col_expr(secret::Column::UpdatedAt, now.into());
    if let Some(description) = description {
        update = update.col_expr(secret::Column::Description, description.into());
    }
    let updated = update
        .filter(secret::Column::Name.eq(name))
        .exec(db)
        .await?;
    if updated.rows_affected > 0 {
        return Ok(SetOutcome::Updated);
    }
    let inserted = secret::ActiveModel {
        name: Set(name.to_owned()),
        value: Set(stored),
        description: Set(description.unwrap_or_default().to_owned()),
        created_at: Set(now),
        updated_at: Set(now),
        ..Default::default()
    }
    .insert(db)
    .await;
    match inserted {
        Ok(_) => Ok(SetOutcome::Created),
        // A concurrent `set` of the same name inserted first: ours replaces it.
        Err(e) if matches!(e.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {
            Box::pin(set(db, name, value, description)).await
        }
        Err(e) => Err(e.into()),
    }
}

/// Every secret without its value, by name.
pub async fn list(db: &DatabaseConnection) -> Result<Vec<SecretInfo>, DbErr> {
    let rows: Vec<(String, String, DateTime<Utc>, DateTime<Utc>)> = secret::Entity::find()
        .select_only()
        .columns([
            secret::Column::Name,
            secret::Column::Description,
            secret::Column::CreatedAt,
            secret::Column::UpdatedAt,
        ])
        .order_by_asc(secret::Column::Name)
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(name, description, created_at, updated_at)| SecretInfo {
            name,
            description,
            created_at,
            updated_at,
        })
        .collect())
}

/// Removes the secret named `name`.
pub async fn remove(db: &DatabaseConnection, name: &str) -> Result<(), SecretError> {
    let result = secret::Entity::delete_many()
        .filter(secret::Column::Name.eq(name))
        .exec(db)
        .await?;
    if result.rows_affected == 0 {
        return Err(SecretError::NotFound(name.to_owned()));
    }
    Ok(())
}

/// The values of `names`, for the runner only; the first missing name is
/// an error.
pub async fn values(
    db: &DatabaseConnection,
    names: &BTreeSet<String>,
) -> Result<BTreeMap<String, String>, SecretError> {
    if names.is_empty() {
        return Ok(BTreeMap::new());
    }
    let found: BTreeMap<String, String> = secret::Entity::find()
        .select_only()
        .columns([secret::Column::Name, secret::Column::Value])
        .filter(secret::Column::Name.is_in(names.iter().cloned()))
        .into_tuple::<(String, String)>()
        .all(db)
        .await?
        .into_iter()
        .collect();
    if let Some(missing) = names.iter().find(|name| !found.contains_key(*name)) {
        return Err(SecretError::NotFound(missing.clone()));
    }
    found
        .into_iter()
        .map(|(name, stored)| match crate::sealing::open(&stored) {
            Ok(value) => Ok((name, value)),
            Err(e) => Err(SecretError::Unreadable {
                name,
                reason: e.to_string(),
            }),
        })
        .collect()
}

/// What [`rotate_key`] re-sealed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resealed {
    /// Secret values.
    pub secrets: usize,
    /// Datasource passwords.
    pub passwords: usize,
}

/// Re-seals every secret value and datasource password under `new`,
/// opening each with `old` (plain ones as they are), in one transaction:
/// either every value moves to the new key or none does.
pub async fn rotate_key(
    db: &DatabaseConnection,
    old: Option<&SecretKey>,
    new: &SecretKey,
) -> Result<Resealed, RotateError> {
    let txn = crate::db::begin_write(db).await?;
    let mut resealed = Resealed {
        secrets: 0,
        passwords: 0,
    };
    for row in secret::Entity::find().all(&*txn).await? {
        let value = open_with(old, &row.value).map_err(|source| RotateError::Open {
            what: format!("secret '{}'", row.name),
            source,
        })?;
        secret::Entity::update_many()
            .col_expr(secret::Column::Value, new.seal(&value).into())
            .filter(secret::Column::Id.eq(row.id))
            .exec(&*txn)
            .await?;
        resealed.secrets += 1;
    }
    for row in datasource::Entity::find().all(&*txn).await? {
        let Some(stored) = &row.password else {
            continue;
        };
        let password = open_with(old, stored).map_err(|source| RotateError::Open {
            what: format!("datasource '{}'", row.name),
            source,
        })?;
        datasource::Entity::update_many()
            .col_expr(datasource::Column::Password, new.seal(&password).into())
            .filter(datasource::Column::Id.eq(row.id))
            .exec(&*txn)
            .await?;
        resealed.passwords += 1;
    }
    txn.commit().await?;
    Ok(resealed)
}

/// Why [`rotate_key`] changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum RotateError {
    /// The database failed.
    #[error("database error: {0}")]
    Db(#[from] DbErr),
    /// A value could not be opened with the current key.
    #[error("{what}: {source}")]
    Open {
        /// Which value.
        what: String,
        /// Why.
        source: SealError,
    },
}
