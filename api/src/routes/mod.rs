//! The routes, one module per resource, and the router that serves them.
//! Each resource's module keeps its request and response bodies in its
//! `dto` submodule; the helpers several modules share are in [`shared`].
//!
//! | module | paths |
//! | --- | --- |
//! | [`dags`] | `/api/v1/dags`, `/api/v1/dags/{dagId}` (and `by-name/{name}`) and its `tasks`, `online`, `offline`, `validate`, `trigger`, `backfill` |
//! | [`runs`] | `/api/v1/dags/{dagId}/instances`, `…/executions`, `/api/v1/dags/instances/…` (kill, rerun), `/api/v1/dags/task-instances/…`, kills, clears and marks of `/api/v1/task-instances/…` |
//! | [`schedules`] | `/api/v1/dags/{dagId}/schedule…`, `/api/v1/dags/{dagId}/schedules…`, `/api/v1/dags/schedule/validate-cron` |
//! | [`canvas`] | `/api/v1/dags/{dagId}/canvas` |
//! | [`events`] | `/api/v1/events/{name}` |
//! | [`datasets`] | `/api/v1/datasets`, `/api/v1/datasets/{name}` and its `events` |
//! | [`runners`] | `/api/v1/runners` |
//! | [`projects`] | `/api/v1/projects` |
//! | [`tokens`] | `/api/v1/tokens`, `/api/v1/tokens/{name}` |
//! | [`session`] | `/api/v1/session` |
//! | [`audit`] | `/api/v1/audit` |
//! | [`alerts`] | `/api/v1/dags/{dagId}/alerts` |
//! | [`views`] | `/api/v1/dags/{dagId}/grid`, `/api/v1/dags/{dagId}/graph`, `/api/v1/dags/instances/{instanceId}/gantt` |
//! | [`stream`] | `/api/v1/stream`, `/api/v1/dags/task-instances/{taskInstanceId}/log/stream` (Server-Sent Events) |
//! | [`health`] | `/healthz`, `/readyz` |
//! | [`openapi`] | `/api/v1/openapi.json` |
//!
//! Routes are added to [`table::endpoints`], never to the router directly:
//! the router and the OpenAPI document are both built from that one table,
//! so whatever is served is documented. A table was chosen over `utoipa`'s
//! derives and path macros because it keeps the dependency list as it is
//! and says each route once instead of twice (a macro per handler beside
//! the router).

use axum::Router;
use axum::extract::State;
use axum::middleware;

use crate::AppState;

pub mod alerts;
pub mod audit;
pub mod canvas;
pub mod dags;
pub mod datasets;
pub mod events;
pub mod health;
pub mod openapi;
pub mod projects;
pub mod runners;
pub mod runs;
pub mod schedules;
pub mod session;
pub mod shared;
pub mod stream;
pub mod table;
pub mod tokens;
pub mod views;

/// Every route of the API, from the route table ([`table::endpoints`]).
pub fn router(state: AppState) -> Router {
    let mut router = Router::new();
    for endpoint in table::endpoints() {
        let rule = crate::auth::Rule {
            access: endpoint.access,
            scope: endpoint.scope,
            route: endpoint.path,
        };
        let mut handler = endpoint.handler;
        if endpoint.whole_dag {
            handler = handler.layer(middleware::from_fn_with_state(
                state.clone(),
                one_of_a_few_whole_dag_reads,
            ));
        }
        let handler = handler.layer(middleware::from_fn_with_state(
            state.clone(),
            move |State(state): State<AppState>, request, next| {
                crate::auth::authorize(state, rule, request, next)
            },
        ));
        router = router.route(endpoint.path, handler);
    }
    router
        .fallback(crate::error::ui_or_no_route)
        .method_not_allowed_fallback(crate::error::method_not_allowed)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::auth::guard,
        ))
        .with_state(state)
}

/// Serves a route whose answer grows with a whole DAG once one of
/// [`table::WHOLE_DAG_READS`] permits is free: readers beyond them wait
/// their turn rather than each building a DAG's answer in memory at once.
///
/// The permit is held until the answer has been sent, not only built: an
/// answer waiting in memory for its reader to take it costs as much as one
/// being built, so forty readers that take their answers at once would
/// otherwise hold forty. A reader slower than [`table::WHOLE_DAG_TURN`]
/// gives its turn up, so one stalled connection does not stop the others.
async fn one_of_a_few_whole_dag_reads(
    State(state): State<AppState>,
    request: axum::extract::Request,
    next: middleware::Next,
) -> axum::response::Response {
    let permit = match state.whole_dag_reads.clone().acquire_owned().await {
        Ok(permit) => permit,
        // The semaphore is never closed.
        Err(e) => {
            return axum::response::IntoResponse::into_response(crate::error::Error::Internal(
                e.to_string(),
            ));
        }
    };
    let response = next.run(request).await;
    let (sent, turn_over) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _permit = permit;
        // Ends when the answer's body is dropped: sent, or its reader gone.
        let _ = tokio::time::timeout(table::WHOLE_DAG_TURN, turn_over).await;
    });
    let (parts, body) = response.into_parts();
    let body = futures::StreamExt::map(body.into_data_stream(), move |chunk| {
        let _turn = &sent;
        chunk
    });
    axum::response::Response::from_parts(parts, axum::body::Body::from_stream(body))
}

/// `router` (a router of its own state, such as `/metrics`'s) behind the
/// rules every route of the table is behind: the browser rules and a
/// caller `rule` allows, checked on each of its routes.
pub fn behind_rules(state: AppState, rule: crate::auth::Rule, router: Router) -> Router {
    router
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            move |State(state): State<AppState>, request, next| {
                crate::auth::authorize(state, rule, request, next)
            },
        ))
        .layer(middleware::from_fn_with_state(state, crate::auth::guard))
}
