//! Keeping a token limited to a project within it.
//!
//! Every route has a [`Scope`] in the route table. For a caller whose
//! token reaches every project nothing is looked up. For one limited to a
//! project, [`problem`] finds the project of what the path names (one
//! indexed query) before the handler runs: a DAG, run or task instance of
//! another project is answered 404 with the handler's own words, as if it
//! did not exist, so a limited token cannot even learn which ids are
//! taken; a route over every project is 403. Routes that list or create
//! ([`Scope::Handler`]) keep to the reach in their handler, through
//! [`Caller::may_use_project`] and [`Caller::reach`].

use axum::extract::RawPathParams;
use datajump_shared::access::Reach;
use datajump_shared::entities::{dag, dag_run, task_instance};
use sea_orm::sea_query::{Query, SelectStatement};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QuerySelect};

use crate::AppState;
use crate::auth::Caller;
use crate::error::{Error, Result};
use crate::routes::table::Scope;

impl Caller {
    /// Refuses (403) to put something into `project_id` beyond the
    /// caller's reach: a DAG created or moved there.
    pub fn may_use_project(&self, project_id: i64) -> Result<()> {
        if self.reach.includes(project_id) {
            Ok(())
        } else {
            Err(Error::Forbidden(format!(
                "the token '{}' is limited to {}; it cannot act in project {project_id}",
                self.name, self.reach
            )))
        }
    }
}

/// The caller a route of [`Scope::Handler`] found, which the guard put
/// there for every route but the public ones.
pub fn caller(found: Option<Caller>) -> Result<Caller> {
    found.ok_or_else(|| Error::Unauthorized("this route needs a token".to_owned()))
}

/// What the request's path names that lies beyond `caller`'s reach on a
/// route of `scope`, as the error to answer; `None` when all is within it
/// or the path names nothing that exists (the handler answers that).
pub async fn problem(
    state: &AppState,
    scope: Scope,
    caller: &Caller,
    params: &RawPathParams,
) -> Result<Option<Error>> {
    let Reach::Project(own) = caller.reach else {
        return Ok(None);
    };
    let param = |name: &str| {
        params
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.to_owned())
    };
    let id = |name: &str| param(name).and_then(|value| value.parse::<i64>().ok());
    let (project, missing) = match scope {
        Scope::Unscoped | Scope::Handler => return Ok(None),
        Scope::Installation => {
            return Ok(Some(Error::Forbidden(format!(
                "this route covers every project; the token '{}' is limited to project {own}",
                caller.name
            ))));
        }
        Scope::Dag => {
            let Some(dag_id) = id("dagId") else {
                return Ok(None);
            };
            (
                project_of_dags(state, dag::Column::Id.eq(dag_id)).await?,
                format!("no DAG with id {dag_id}"),
            )
        }
        Scope::DagName => {
            let Some(name) = param("name") else {
                return Ok(None);
            };
            (
                project_of_dags(state, dag::Column::Name.eq(name.as_str())).await?,
                format!("no DAG named '{name}'"),
            )
        }
        Scope::Run => {
            let Some(run_id) = id("instanceId") else {
                return Ok(None);
            };
            let runs = dag_of_run()
                .and_where(dag_run::Column::Id.eq(run_id))
                .to_owned();
            (
                project_of_dags(state, dag::Column::Id.in_subquery(runs)).await?,
                format!("no DAG instance (run) with id {run_id}"),
            )
        }
        Scope::RunKey => {
            let Some(key) = param("runKey") else {
                return Ok(None);
            };
            let runs = dag_of_run()
                .and_where(dag_run::Column::DedupKey.eq(key.as_str()))
                .to_owned();
            (
                project_of_dags(state, dag::Column::Id.in_subquery(runs)).await?,
                format!(
                    "no run with key '{key}' (yet: a resolver creates it when it takes the fire)"
                ),
            )
        }
        Scope::TaskInstance => {
            let Some(instance_id) = id("taskInstanceId") else {
                return Ok(None);
            };
            let instances = Query::select()
                .column(task_instance::Column::DagId)
                .from(task_instance::Entity)
                .and_where(task_instance::Column::Id.eq(instance_id))
                .to_owned();
            (
                project_of_dags(state, dag::Column::Id.in_subquery(instances)).await?,
                format!("no task instance with id {instance_id}"),
            )
        }
    };
    Ok(project
        .filter(|project| *project != own)
        .map(|_| Error::not_found(missing)))
}

/// `SELECT dag_id FROM dag_run`, to be narrowed to a run.
fn dag_of_run() -> SelectStatement {
    Query::select()
        .column(dag_run::Column::DagId)
        .from(dag_run::Entity)
        .to_owned()
}

/// The project of the DAG `condition` selects, if one does.
async fn project_of_dags(
    state: &AppState,
    condition: sea_orm::sea_query::SimpleExpr,
) -> Result<Option<i64>> {
    Ok(dag::Entity::find()
        .select_only()
        .column(dag::Column::ProjectId)
        .filter(condition)
        .into_tuple::<i64>()
        .one(&state.db)
        .await?)
}
