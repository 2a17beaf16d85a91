//! Projects: created and listed by `datajump project`, read by the API
//! (`GET /api/v1/projects`) and by the catalog, which refuses a DAG whose
//! project does not exist.
//!
//! A project's id is the next after the highest, chosen here rather than
//! by an autoincrement because the ids DAGs carried before projects were
//! rows were kept as they were (migration 000011); two creations racing
//! for one id make one of them try the next.

use chrono::Utc;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, SqlErr,
};
use thiserror::Error;

use datajump_shared::entities::project::{self, Model};

pub use datajump_shared::dag_file::DEFAULT_PROJECT;

/// Why a project could not be created or found.
#[derive(Debug, Error)]
pub enum ProjectError {
    /// The database failed.
    #[error("database error: {0}")]
    Db(#[from] DbErr),
    /// `create` with a name that is taken.
    #[error("a project named '{0}' already exists")]
    Exists(String),
    /// A name outside `[A-Za-z0-9_.-]{1,64}`, or of digits only.
    #[error(
        "invalid project name '{0}': use 1-64 characters from letters, digits, '_', '-' and '.', not only digits (`--project 3` means project id 3)"
    )]
    InvalidName(String),
    /// No project has that id or name.
    #[error("no project '{0}' (`datajump project list` shows them)")]
    NotFound(String),
}

/// How many ids `create` tries when others are creating projects at once.
const CREATE_ATTEMPTS: usize = 8;

/// Creates the project `name`.
pub async fn create(
    db: &DatabaseConnection,
    name: &str,
    description: &str,
) -> Result<Model, ProjectError> {
    if !is_project_name(name) {
        return Err(ProjectError::InvalidName(name.to_owned()));
    }
    if by_name(db, name).await?.is_some() {
        return Err(ProjectError::Exists(name.to_owned()));
    }
    let mut error = None;
    for _ in 0..CREATE_ATTEMPTS {
        let highest: Option<i64> = project::Entity::find()
            .select_only()
            .column_as(project::Column::Id.max(), "highest")
            .into_tuple()
            .one(db)
            .await?
            .flatten();
        let row = project::ActiveModel {
            id: Set(highest.unwrap_or(0) + 1),
            name: Set(name.to_owned()),
            description: Set(description.to_owned()),
            created_at: Set(Utc::now()),
        };
        match project::Entity::insert(row).exec_with_returning(db).await {
            Ok(row) => return Ok(row),
            Err(e) if matches!(e.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {
                if by_name(db, name).await?.is_some() {
                    return Err(ProjectError::Exists(name.to_owned()));
                }
                error = Some(e);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(error.map_or_else(|| ProjectError::Exists(name.to_owned()), ProjectError::Db))
}

/// Whether `name` may name a project: a token's name, and not digits only,
/// since [`resolve`] reads digits as an id (a project named `7` could not
/// be named; docs/DAG_FORMAT.md, "Rules").
fn is_project_name(name: &str) -> bool {
    crate::tokens::is_valid_name(name) && !name.bytes().all(|b| b.is_ascii_digit())
}

/// Every project, by id.
pub async fn list(db: &DatabaseConnection) -> Result<Vec<Model>, DbErr> {
    project::Entity::find()
        .order_by_asc(project::Column::Id)
        .all(db)
        .await
}

/// The project with this id, if any.
pub async fn find(db: &DatabaseConnection, id: i64) -> Result<Option<Model>, DbErr> {
    project::Entity::find_by_id(id).one(db).await
}

/// The project named `name`, if any.
pub async fn by_name(db: &DatabaseConnection, name: &str) -> Result<Option<Model>, DbErr> {
    project::Entity::find()
        .filter(project::Column::Name.eq(name))
        .one(db)
        .await
}

/// The project `given` names, by id (`3`) or by name (`analytics`): what
/// the CLI's `--project` takes.
pub async fn resolve(db: &DatabaseConnection, given: &str) -> Result<Model, ProjectError> {
    let found = match given.parse::<i64>() {
        Ok(id) => find(db, id).await?,
        Err(_) => by_name(db, given).await?,
    };
    found.ok_or_else(|| ProjectError::NotFound(given.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_name_is_not_digits_only() {
        for good in ["analytics", "team-7", "7a", "2024.q1"] {
            assert!(is_project_name(good), "{good}");
        }
        for bad in ["7", "007", "", "a b", &"x".repeat(65)] {
            assert!(!is_project_name(bad), "{bad}");
        }
    }
}
