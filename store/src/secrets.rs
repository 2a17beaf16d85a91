//! Secrets in the database: `datajump secret set/list/remove`, and the
//! values the runner reads when an attempt starts. Why a value lives in one
//! row and nowhere else is described on [`datajump_shared::secrets`].

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect, SqlErr,
};

use datajump_shared::entities::secret;
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
    let mut update = secret::Entity::update_many()
        .col_expr(secret::Column::Value, value.into())
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
        value: Set(value.to_owned()),
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
    match names.iter().find(|name| !found.contains_key(*name)) {
        Some(missing) => Err(SecretError::NotFound(missing.clone())),
        None => Ok(found),
    }
}
