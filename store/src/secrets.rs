//! Secrets in the database: `datajump secret set/list/remove`, and the
//! values the runner reads when an attempt starts. Why a value lives in one
//! row and nowhere else is described on [`datajump_shared::secrets`].

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait,
    FromQueryResult, QueryFilter, QueryOrder, QuerySelect, SqlErr,
};

use datajump_shared::entities::{dag, datasource, secret};

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
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct SecretInfo {
    /// Its name.
    pub name: String,
    /// The project whose tasks may use it.
    pub project_id: i64,
    /// What it is for.
    pub description: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When its value last changed.
    pub updated_at: DateTime<Utc>,
}

/// Creates the secret `name` for the tasks of `project_id`, or replaces
/// its value (and its description, when one is given). Names are unique in
/// an installation: a name another project's secret has is refused.
pub async fn set(
    db: &DatabaseConnection,
    project_id: i64,
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
        .filter(secret::Column::ProjectId.eq(project_id))
        .exec(db)
        .await?;
    if updated.rows_affected > 0 {
        return Ok(SetOutcome::Updated);
    }
    let elsewhere: Option<i64> = secret::Entity::find()
        .select_only()
        .column(secret::Column::ProjectId)
        .filter(secret::Column::Name.eq(name))
        .into_tuple()
        .one(db)
        .await?;
    if let Some(project) = elsewhere {
        return Err(SecretError::OtherProject {
            name: name.to_owned(),
            project,
        });
    }
    let inserted = secret::ActiveModel {
        project_id: Set(project_id),
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
            Box::pin(set(db, project_id, name, value, description)).await
        }
        Err(e) => Err(e.into()),
    }
}

/// Every secret without its value, by name.
pub async fn list(db: &DatabaseConnection) -> Result<Vec<SecretInfo>, DbErr> {
    secret::Entity::find()
        .select_only()
        .columns([
            secret::Column::Name,
            secret::Column::ProjectId,
            secret::Column::Description,
            secret::Column::CreatedAt,
            secret::Column::UpdatedAt,
        ])
        .order_by_asc(secret::Column::Name)
        .into_model::<SecretInfo>()
        .all(db)
        .await
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

/// The values of `names` for a task of `project_id`, for the runner only;
/// the first name its project has no secret of is an error.
pub async fn values(
    db: &DatabaseConnection,
    project_id: i64,
    names: &BTreeSet<String>,
) -> Result<BTreeMap<String, String>, SecretError> {
    if names.is_empty() {
        return Ok(BTreeMap::new());
    }
    let found: BTreeMap<String, String> = secret::Entity::find()
        .select_only()
        .columns([secret::Column::Name, secret::Column::Value])
        .filter(secret::Column::Name.is_in(names.iter().cloned()))
        .filter(secret::Column::ProjectId.eq(project_id))
        .into_tuple::<(String, String)>()
        .all(db)
        .await?
        .into_iter()
        .collect();
    if let Some(missing) = names.iter().find(|name| !found.contains_key(*name)) {
        return Err(SecretError::NotInProject {
            name: missing.clone(),
            project: project_id,
        });
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

/// The values of `names` for what the DAG `dag_id` sends (its alerts'
/// webhooks): those of the DAG's project, as its tasks get.
pub async fn values_for_dag(
    db: &DatabaseConnection,
    dag_id: i64,
    names: &BTreeSet<String>,
) -> Result<BTreeMap<String, String>, SecretError> {
    if names.is_empty() {
        return Ok(BTreeMap::new());
    }
    let project: Option<i64> = dag::Entity::find_by_id(dag_id)
        .select_only()
        .column(dag::Column::ProjectId)
        .into_tuple()
        .one(db)
        .await?;
    let project = project.ok_or_else(|| DbErr::RecordNotFound(format!("DAG {dag_id}")))?;
    values(db, project, names).await
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
