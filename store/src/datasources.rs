//! Datasources in the database: adding, listing, removing and finding the
//! rows [`datajump_shared::datasources`] validates and turns into
//! connection URLs.

use chrono::Utc;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait,
    QueryFilter, QueryOrder, SqlErr,
};

use datajump_shared::datasources::{DatasourceError, NewDatasource};
use datajump_shared::entities::datasource::{self, Model};

/// Stores a new datasource for the tasks of `project_id`. Names are unique
/// in an installation.
pub async fn add(
    db: &DatabaseConnection,
    project_id: i64,
    new: NewDatasource,
) -> Result<Model, DatasourceError> {
    new.validate()?;
    if by_name(db, &new.name).await?.is_some() {
        return Err(DatasourceError::Exists(new.name));
    }
    let now = Utc::now();
    let params = serde_json::Value::Object(
        new.params
            .into_iter()
            .map(|(k, v)| (k, serde_json::Value::String(v)))
            .collect(),
    );
    let row = datasource::ActiveModel {
        project_id: Set(project_id),
        name: Set(new.name.clone()),
        kind: Set(new.kind),
        host: Set(new.host),
        port: Set(new.port.map(i32::from)),
        database: Set(new.database),
        username: Set(new.username),
        password: Set(new.password.as_deref().map(crate::sealing::seal)),
        params: Set(params),
        created_at: Set(now),
        updated_at: Set(now),
        ..Default::default()
    }
    .insert(db)
    .await;
    match row {
        Ok(row) => Ok(row),
        // Another `add` of the same name got there between our check and insert.
        Err(e) if matches!(e.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {
            Err(DatasourceError::Exists(new.name))
        }
        Err(e) => Err(e.into()),
    }
}

/// The datasource `name` with its password opened, for connecting to it
/// from a task of `project_id` (the runner only); `None` when that project
/// has no datasource of that name, whatever other projects have.
pub async fn for_connection(
    db: &DatabaseConnection,
    project_id: i64,
    name: &str,
) -> Result<Option<Model>, DatasourceError> {
    let Some(mut row) = by_name(db, name)
        .await?
        .filter(|row| row.project_id == project_id)
    else {
        return Ok(None);
    };
    if let Some(stored) = &row.password {
        row.password =
            Some(
                crate::sealing::open(stored).map_err(|e| DatasourceError::Invalid {
                    name: name.to_owned(),
                    reason: format!("its password: {e}"),
                })?,
            );
    }
    Ok(Some(row))
}

/// Every datasource, by name.
pub async fn list(db: &DatabaseConnection) -> Result<Vec<Model>, DbErr> {
    datasource::Entity::find()
        .order_by_asc(datasource::Column::Name)
        .all(db)
        .await
}

/// Removes the datasource named `name`.
pub async fn remove(db: &DatabaseConnection, name: &str) -> Result<(), DatasourceError> {
    let result = datasource::Entity::delete_many()
        .filter(datasource::Column::Name.eq(name))
        .exec(db)
        .await?;
    if result.rows_affected == 0 {
        return Err(DatasourceError::NotFound(name.to_owned()));
    }
    Ok(())
}

/// The datasource named `name`, if any.
pub async fn by_name(db: &DatabaseConnection, name: &str) -> Result<Option<Model>, DbErr> {
    datasource::Entity::find()
        .filter(datasource::Column::Name.eq(name))
        .one(db)
        .await
}
