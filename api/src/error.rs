//! The errors a request can end with, and how they look on the wire.
//!
//! Every failure is answered with JSON `{ "error": CODE, "message": TEXT }`
//! (plus `details` when there are several problems, such as an invalid DAG,
//! with `detailProblems` beside them, and `code` and `params` when the
//! problem has a stable name a UI can say in its own words: [`Problem`]) and the matching status: 400 `BAD_REQUEST` for bad input (the message
//! names the field), 401 `UNAUTHORIZED`, 403 `FORBIDDEN` (a browser's
//! cross-origin change, an unknown `Host`), 404 `NOT_FOUND`, 405
//! `METHOD_NOT_ALLOWED`, 409 `CONFLICT`, 413 `PAYLOAD_TOO_LARGE`, 415
//! `UNSUPPORTED_MEDIA_TYPE`, 503 `UNAVAILABLE` when the database
//! or NATS cannot be reached, and 500 `INTERNAL` for anything else (logged,
//! with the detail kept out of the answer).

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use datajump_shared::problem::Problem;
use sea_orm::{DbErr, SqlErr};
use serde::Serialize;
use thiserror::Error;
use tracing::error;

/// Why a request failed.
#[derive(Debug, Error)]
pub enum Error {
    /// The request is malformed or breaks a rule; `message` names the field.
    #[error("{message}")]
    BadRequest {
        /// What is wrong.
        message: String,
        /// Every problem, when there are several.
        details: Vec<String>,
        /// The stable name and values of each of `details`, index for
        /// index, where it has them (empty when none has).
        detail_problems: Vec<Option<Problem>>,
        /// Its stable name and values, when it has them.
        problem: Option<Problem>,
    },
    /// A bearer token is required and was missing or wrong.
    #[error("{0}")]
    Unauthorized(String),
    /// The request may not be answered as sent: a browser's cross-origin
    /// change, or a `Host` a loopback listener does not answer to.
    #[error("{0}")]
    Forbidden(String),
    /// The id or name does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The body is larger than the API accepts.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// A body that is not declared JSON.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The request conflicts with the current state.
    #[error("{0}")]
    Conflict(String),
    /// The database failed.
    #[error("database error: {0}")]
    Db(#[from] DbErr),
    /// NATS failed.
    #[error("NATS error: {0}")]
    Nats(String),
    /// Anything else that is the server's fault.
    #[error("{0}")]
    Internal(String),
}

/// The result of a handler.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A 400 with one message.
    pub fn bad_request(message: impl Into<String>) -> Error {
        Error::BadRequest {
            message: message.into(),
            details: Vec::new(),
            detail_problems: Vec::new(),
            problem: None,
        }
    }

    /// A 400 with a message and the problem's stable name and values.
    pub fn bad_request_coded(message: impl Into<String>, problem: Problem) -> Error {
        Error::BadRequest {
            message: message.into(),
            details: Vec::new(),
            detail_problems: Vec::new(),
            problem: Some(problem),
        }
    }

    /// A 404 with a message.
    pub fn not_found(message: impl Into<String>) -> Error {
        Error::NotFound(message.into())
    }

    /// A 409 with a message.
    pub fn conflict(message: impl Into<String>) -> Error {
        Error::Conflict(message.into())
    }

    /// The status and the machine-readable code of this error.
    pub fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            Error::BadRequest { .. } => (StatusCode::BAD_REQUEST, "BAD_REQUEST"),
            Error::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "UNAUTHORIZED"),
            Error::Forbidden(_) => (StatusCode::FORBIDDEN, "FORBIDDEN"),
            Error::NotFound(_) => (StatusCode::NOT_FOUND, "NOT_FOUND"),
            Error::PayloadTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE"),
            Error::UnsupportedMediaType(_) => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "UNSUPPORTED_MEDIA_TYPE")
            }
            Error::Conflict(_) => (StatusCode::CONFLICT, "CONFLICT"),
            Error::Db(e) if matches!(e.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {
                (StatusCode::CONFLICT, "CONFLICT")
            }
            Error::Db(e) if datajump_store::db::is_transient(e) => {
                (StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE")
            }
            Error::Nats(_) => (StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE"),
            Error::Db(_) | Error::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL"),
        }
    }
}

impl From<datajump_nats::NatsError> for Error {
    fn from(e: datajump_nats::NatsError) -> Error {
        Error::Nats(e.to_string())
    }
}

/// The JSON body of every error answer.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ErrorBody {
    /// Machine-readable code: `BAD_REQUEST`, `NOT_FOUND`, `CONFLICT`, …
    pub error: &'static str,
    /// What went wrong, for people.
    pub message: String,
    /// Every problem, when there are several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
    /// The stable name and values of each of `details`, index for index
    /// (`null` where one has none), when any has them: a UI says those in
    /// its own words.
    #[serde(rename = "detailProblems", skip_serializing_if = "Vec::is_empty")]
    pub detail_problems: Vec<Option<Problem>>,
    /// The problem's stable name (`cron.out_of_range`, …) and the values
    /// `message` names, when it has them: a UI says it in its own words.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub problem: Option<Problem>,
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        let message = match &self {
            Error::Db(_) if status == StatusCode::CONFLICT => {
                "conflict: a row with the same unique key already exists".to_owned()
            }
            _ if status.is_server_error() => {
                error!(error = %self, "request failed");
                match &self {
                    Error::Nats(_) => "NATS is unreachable or failed; try again".to_owned(),
                    Error::Db(_) if status == StatusCode::SERVICE_UNAVAILABLE => {
                        "the database is unreachable; try again".to_owned()
                    }
                    _ => "internal error; see the API server's log".to_owned(),
                }
            }
            _ => self.to_string(),
        };
        let (details, detail_problems, problem) = match self {
            Error::BadRequest {
                details,
                detail_problems,
                problem,
                ..
            } => {
                // Left out when it would say nothing.
                let coded = detail_problems.iter().any(Option::is_some);
                (
                    details,
                    if coded { detail_problems } else { Vec::new() },
                    problem,
                )
            }
            _ => (Vec::new(), Vec::new(), None),
        };
        let mut response = (
            status,
            Json(ErrorBody {
                error: code,
                message,
                details,
                detail_problems,
                problem,
            }),
        )
            .into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"datajump\""),
            );
        }
        response
    }
}

/// Answers a request no route matches.
pub async fn no_route(method: axum::http::Method, uri: axum::http::Uri) -> Error {
    Error::not_found(format!("no endpoint {method} {}", uri.path()))
}

/// Answers a path no route serves: a page of the web UI for a browser's
/// `GET` outside `/api/` ([`datajump_ui::serve`]), or the API's 404.
pub async fn ui_or_no_route(
    method: axum::http::Method,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
) -> Response {
    let path = uri.path();
    let api = path == "/api" || path.starts_with("/api/");
    if !api && (method == axum::http::Method::GET || method == axum::http::Method::HEAD) {
        return datajump_ui::serve(path, &headers);
    }
    no_route(method, uri).await.into_response()
}

/// Answers a request whose path exists but not with that method.
pub async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> Response {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        Json(ErrorBody {
            error: "METHOD_NOT_ALLOWED",
            message: format!("{} does not accept {method}", uri.path()),
            details: Vec::new(),
            detail_problems: Vec::new(),
            problem: None,
        }),
    )
        .into_response()
}
