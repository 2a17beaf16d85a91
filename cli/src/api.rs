//! The HTTP client every user command goes through.
//!
//! User commands (`dag …`, `trigger`, `runs`, `logs`, `kill`, `rerun`,
//! `task …`, `backfill`, `schedule …`, `events publish`) talk to the REST
//! API only, so they work from any machine that reaches it and obey its
//! token, validation and answers exactly as any other client does. The
//! address is `--api URL` (`DATAJUMP_API_URL`, default where `datajump up`
//! and `datajump api` listen); the bearer token, when the API requires one,
//! comes from `DATAJUMP_API_TOKEN` (never a flag, so it stays out of `ps`
//! and shell history).
//!
//! Answers are read as JSON values, printed as they are with `--json`, and
//! read into the API's own answer types (each route module's `dto`, and
//! [`datajump_api::dto`] for the shared ones) for tables.

use std::time::Duration;

use crate::output::out;
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode, Url};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Default API address: where `datajump up` and `datajump api` listen.
pub const DEFAULT_API_URL: &str = "http://127.0.0.1:8080";

/// Items asked per page when a command lists everything (the API's most).
const PAGE_SIZE: u64 = 500;

/// The environment variable holding the API's bearer token.
const TOKEN_VAR: &str = "DATAJUMP_API_TOKEN";

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Nothing answers at the API's address.
    #[error("cannot reach the API at {url} (is `datajump up` or `datajump api` running?)")]
    Unreachable {
        /// The API's base URL.
        url: String,
    },
    /// The API answered with an error: its message, as the user's error.
    #[error("{message}")]
    Status {
        /// The HTTP status.
        status: StatusCode,
        /// The API's code (`NOT_FOUND`, `CONFLICT`, …).
        code: String,
        /// The API's message.
        message: String,
    },
    /// The request failed midway, or the answer is not what the API sends.
    #[error("API request {what}: {detail}")]
    Broken {
        /// Which request.
        what: String,
        /// What went wrong.
        detail: String,
    },
}

impl ApiError {
    /// Whether the API answered 404 (an unknown id or name, or a run not
    /// created yet).
    pub fn is_not_found(&self) -> bool {
        matches!(self, ApiError::Status { status, .. } if *status == StatusCode::NOT_FOUND)
    }
}

/// The result of a request.
pub type ApiResult<T> = Result<T, ApiError>;

/// A client of one API server.
pub struct Api {
    base: Url,
    http: reqwest::Client,
    token: Option<String>,
}

impl Api {
    /// A client of the API at `base` (`http://HOST:PORT`), with the token of
    /// `DATAJUMP_API_TOKEN` when it is set.
    pub fn new(base: &str) -> ApiResult<Api> {
        let broken = |detail: String| ApiError::Broken {
            what: format!("to {base}"),
            detail,
        };
        let base = Url::parse(base).map_err(|e| broken(format!("invalid --api URL: {e}")))?;
        if base.cannot_be_a_base() || !matches!(base.scheme(), "http" | "https") {
            return Err(broken(
                "--api must be an http:// or https:// URL".to_owned(),
            ));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(|e| broken(e.to_string()))?;
        let token = std::env::var(TOKEN_VAR).ok().filter(|t| !t.is_empty());
        Ok(Api { base, http, token })
    }

    /// The URL of `/api/v1/<segments…>`, each segment percent-encoded (DAG
    /// names, run keys and event names are user text).
    fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            // `new` refused URLs that cannot be a base, so this always runs.
            path.pop_if_empty().extend(["api", "v1"]).extend(segments);
        }
        url
    }

    /// Sends a request and returns the answer when it is a success.
    async fn send(
        &self,
        method: Method,
        segments: &[&str],
        query: &[(&str, String)],
        body: Option<&Value>,
    ) -> ApiResult<reqwest::Response> {
        let url = self.url(segments);
        let what = format!("{method} {}", url.path());
        let mut request = self.http.request(method, url).query(query);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|e| {
            if e.is_connect() {
                ApiError::Unreachable {
                    url: self.base.as_str().trim_end_matches('/').to_owned(),
                }
            } else {
                ApiError::Broken {
                    what: what.clone(),
                    detail: e.to_string(),
                }
            }
        })?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        // Every API error is `{ error, message }`; anything else (a proxy's
        // page) is shown as the status with the start of its text.
        let text = response.text().await.unwrap_or_default();
        let (code, message) = match serde_json::from_str::<Value>(&text) {
            Ok(body) => match (body["error"].as_str(), body["message"].as_str()) {
                (Some(code), Some(message)) => (code.to_owned(), message.to_owned()),
                _ => (status.to_string(), text),
            },
            Err(_) => (
                status.to_string(),
                format!(
                    "{what}: HTTP {status}: {}",
                    text.chars().take(200).collect::<String>()
                ),
            ),
        };
        Err(ApiError::Status {
            status,
            code,
            message,
        })
    }

    /// Sends a request and reads its JSON answer (`Null` for 204).
    pub(crate) async fn json(
        &self,
        method: Method,
        segments: &[&str],
        query: &[(&str, String)],
        body: Option<&Value>,
    ) -> ApiResult<Value> {
        let what = format!("{method} {}", self.url(segments).path());
        let response = self.send(method, segments, query, body).await?;
        if response.status() == StatusCode::NO_CONTENT {
            return Ok(Value::Null);
        }
        response.json().await.map_err(|e| ApiError::Broken {
            what,
            detail: format!("the answer is not JSON: {e}"),
        })
    }

    /// `GET /api/v1/<segments>?<query>`.
    pub async fn get(&self, segments: &[&str], query: &[(&str, String)]) -> ApiResult<Value> {
        self.json(Method::GET, segments, query, None).await
    }

    /// `POST /api/v1/<segments>` with an optional JSON body.
    pub async fn post(&self, segments: &[&str], body: Option<&Value>) -> ApiResult<Value> {
        self.post_query(segments, &[], body).await
    }

    /// `POST /api/v1/<segments>?<query>` with an optional JSON body.
    pub async fn post_query(
        &self,
        segments: &[&str],
        query: &[(&str, String)],
        body: Option<&Value>,
    ) -> ApiResult<Value> {
        self.json(Method::POST, segments, query, body).await
    }

    /// `PUT /api/v1/<segments>` with a JSON body.
    pub async fn put(&self, segments: &[&str], body: &Value) -> ApiResult<Value> {
        self.json(Method::PUT, segments, &[], Some(body)).await
    }

    /// `DELETE /api/v1/<segments>`.
    pub async fn delete(&self, segments: &[&str]) -> ApiResult<()> {
        self.json(Method::DELETE, segments, &[], None).await?;
        Ok(())
    }

    /// `GET /api/v1/<segments>?<query>` answered with text (a log), with
    /// the answer's headers.
    pub async fn text(
        &self,
        segments: &[&str],
        query: &[(&str, String)],
    ) -> ApiResult<(String, HeaderMap)> {
        let what = format!("GET {}", self.url(segments).path());
        let response = self.send(Method::GET, segments, query, None).await?;
        let headers = response.headers().clone();
        let text = response.text().await.map_err(|e| ApiError::Broken {
            what,
            detail: e.to_string(),
        })?;
        Ok((text, headers))
    }

    /// The DAG named `name` with its definition (`GET
    /// /api/v1/dags/by-name/{name}`).
    pub async fn dag(&self, name: &str) -> ApiResult<Value> {
        self.get(&["dags", "by-name", name], &[]).await
    }

    /// The id of the DAG named `name`.
    pub async fn dag_id(&self, name: &str) -> ApiResult<i64> {
        let dag = self.dag(name).await?;
        dag["id"].as_i64().ok_or_else(|| ApiError::Broken {
            what: format!("GET /api/v1/dags/by-name/{name}"),
            detail: "the answer has no `id`".to_owned(),
        })
    }

    /// Every item of a list paginated by `page` and `pageSize`, page by
    /// page, with `query` on each request.
    pub async fn all(&self, segments: &[&str], query: &[(&str, String)]) -> ApiResult<Vec<Value>> {
        let mut items = Vec::new();
        for page in 1u64.. {
            let mut page_query = query.to_vec();
            page_query.push(("page", page.to_string()));
            page_query.push(("pageSize", PAGE_SIZE.to_string()));
            let got: datajump_api::dto::Page<Value> = read(self.get(segments, &page_query).await?)?;
            let done = got.items.is_empty() || page * PAGE_SIZE >= got.total;
            items.extend(got.items);
            if done {
                break;
            }
        }
        Ok(items)
    }
}

/// An answer read into one of the API's answer types.
pub fn read<T: DeserializeOwned>(answer: Value) -> ApiResult<T> {
    serde_json::from_value(answer).map_err(|e| ApiError::Broken {
        what: "answer".to_owned(),
        detail: format!("unexpected shape ({e}); is the API the same version as this CLI?"),
    })
}

/// Prints an answer as indented JSON (`--json`).
pub fn print_json(answer: &Value) {
    out!(
        "{}",
        serde_json::to_string_pretty(answer).unwrap_or_else(|_| answer.to_string())
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_encode_user_text_and_keep_a_base_path() {
        let api = Api::new("http://127.0.0.1:8080").expect("client");
        assert_eq!(
            api.url(&["dags", "by-name", "a b/c"]).as_str(),
            "http://127.0.0.1:8080/api/v1/dags/by-name/a%20b%2Fc"
        );
        let behind_proxy = Api::new("https://host/datajump/").expect("client");
        assert_eq!(
            behind_proxy.url(&["dags"]).as_str(),
            "https://host/datajump/api/v1/dags"
        );
        assert!(Api::new("not a url").is_err());
        assert!(Api::new("mailto:x@y").is_err());
    }
}
