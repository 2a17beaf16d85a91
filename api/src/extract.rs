//! Request extractors that fail with this API's error shape.
//!
//! axum's own `Json`, `Path` and `Query` answer bad input with plain text;
//! these wrappers answer `400 { "error": "BAD_REQUEST", "message": … }`
//! instead, naming the offending field (the JSON path, from
//! `serde_path_to_error`, or the query/path parameter).

use axum::body::Bytes;
use axum::extract::path::ErrorKind;
use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};

/// A JSON request body (required).
#[derive(Debug)]
pub struct Json<T>(pub T);

/// A JSON request body that may be left out: an empty body reads as `T::default()`.
#[derive(Debug)]
pub struct JsonOrEmpty<T>(pub T);

/// Path parameters.
#[derive(Debug)]
pub struct Path<T>(pub T);

/// Query-string parameters.
#[derive(Debug)]
pub struct Query<T>(pub T);

async fn body_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes> {
    Bytes::from_request(req, state).await.map_err(|e| {
        if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            Error::PayloadTooLarge(format!("the request body is too large: {}", e.body_text()))
        } else {
            Error::bad_request(format!("cannot read the request body: {}", e.body_text()))
        }
    })
}

/// Removes serde_json's " at line L column C", meaningless to a client.
fn strip_location(message: &str) -> &str {
    match message.rfind(" at line ") {
        Some(at)
            if message[at + 9..]
                .split(" column ")
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) =>
        {
            &message[..at]
        }
        _ => message,
    }
}

/// Whether a JSON text holds a NUL character: JSON can write one only as
/// the escape `\u0000`, which counts when an odd number of backslashes
/// (itself included) comes before the `u`.
fn has_nul_escape(bytes: &[u8]) -> bool {
    bytes.windows(6).enumerate().any(|(at, window)| {
        window == b"\\u0000"
            && bytes[..at]
                .iter()
                .rev()
                .take_while(|&&b| b == b'\\')
                .count()
                % 2
                == 0
    })
}

/// Parses a JSON body into `T`; the error names the field that is wrong.
/// A NUL anywhere in it is refused on every database alike: PostgreSQL
/// cannot store one in text, and no name, parameter or script needs one.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    if has_nul_escape(bytes) {
        return Err(Error::bad_request(
            "the request body holds a NUL character (\\u0000): DataJump stores no text with one",
        ));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = strip_location(&inner.to_string()).to_owned();
        if inner.is_syntax() || inner.is_eof() {
            Error::bad_request(format!("the request body is not valid JSON: {message}"))
        } else if path.is_empty() || path == "." {
            Error::bad_request(format!("invalid request body: {message}"))
        } else {
            Error::bad_request(format!("invalid field `{path}`: {message}"))
        }
    })?;
    deserializer.end().map_err(|e| {
        Error::bad_request(format!(
            "the request body is not valid JSON: {}",
            strip_location(&e.to_string())
        ))
    })?;
    Ok(value)
}

/// A 400 naming the path parameter that could not be read.
async fn path_error<S: Send + Sync>(
    parts: &mut Parts,
    state: &S,
    rejection: PathRejection,
) -> Error {
    let PathRejection::FailedToDeserializePathParams(failed) = &rejection else {
        return Error::bad_request(rejection.body_text());
    };
    let (key, value, expected) = match failed.kind() {
        ErrorKind::ParseErrorAtKey {
            key,
            value,
            expected_type,
        } => (Some(key.clone()), value.clone(), *expected_type),
        ErrorKind::ParseError {
            value,
            expected_type,
        }
        | ErrorKind::ParseErrorAtIndex {
            value,
            expected_type,
            ..
        } => {
            // A single-value `Path`: find the parameter's name by its value.
            let key = RawPathParams::from_request_parts(parts, state)
                .await
                .ok()
                .and_then(|raw| {
                    raw.iter()
                        .find(|(_, v)| *v == value.as_str())
                        .map(|(k, _)| k.to_owned())
                });
            (key, value.clone(), *expected_type)
        }
        _ => return Error::bad_request(rejection.body_text()),
    };
    let expected = if expected.starts_with('i') || expected.starts_with('u') {
        "an integer id"
    } else {
        expected
    };
    match key {
        Some(key) => Error::bad_request(format!(
            "invalid path parameter `{key}`: '{value}' is not {expected}"
        )),
        None => Error::bad_request(format!(
            "invalid path parameter: '{value}' is not {expected}"
        )),
    }
}

/// A 400 naming the query parameter that could not be read.
fn query_error(text: &str) -> Error {
    let detail = text
        .strip_prefix("Failed to deserialize query string: ")
        .unwrap_or(text);
    match detail.split_once(": ") {
        Some((key, problem)) if !key.contains(' ') && key != "." => {
            Error::bad_request(format!("invalid query parameter `{key}`: {problem}"))
        }
        _ => Error::bad_request(format!(
            "invalid query string: {}",
            detail.trim_start_matches(".: ")
        )),
    }
}

impl<S, T> FromRequest<S> for Json<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = Error;

    async fn from_request(req: Request, state: &S) -> Result<Self> {
        let bytes = body_bytes(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(Error::bad_request(
                "the request body is empty: send a JSON object",
            ));
        }
        parse_json(&bytes).map(Json)
    }
}

impl<S, T> FromRequest<S> for JsonOrEmpty<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Default,
{
    type Rejection = Error;

    async fn from_request(req: Request, state: &S) -> Result<Self> {
        let bytes = body_bytes(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(JsonOrEmpty(T::default()));
        }
        parse_json(&bytes).map(JsonOrEmpty)
    }
}

impl<S, T> FromRequestParts<S> for Path<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Send,
{
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(Path(value)),
            Err(rejection) => Err(path_error(parts, state, rejection).await),
        }
    }
}

impl<S, T> FromRequestParts<S> for Query<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self> {
        if parts.uri.query().is_some_and(|query| query.contains("%00")) {
            return Err(Error::bad_request(
                "a query parameter holds a NUL character (%00): DataJump stores no text with one",
            ));
        }
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(value)| Query(value))
            .map_err(|e| query_error(&e.body_text()))
    }
}

/// Refuses a request whose path holds a NUL (`%00`) with 400, before any
/// route, scope check or extractor reads a parameter from it: no name, key
/// or id has one, PostgreSQL cannot compare text holding one (it answers
/// an error, which was a 500), and SQLite would look up something else.
/// One layer for every route, so no handler has to remember it
/// (docs/SECURITY.md, "Sizes and dates").
pub async fn refuse_nul_in_path(
    request: Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if request.uri().path().contains("%00") {
        return axum::response::IntoResponse::into_response(Error::bad_request(
            "the request's path holds a NUL character (%00): no name, key or id has one",
        ));
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Probe {
        #[allow(dead_code)]
        count: Option<u32>,
    }

    fn message(body: &str) -> String {
        match parse_json::<Probe>(body.as_bytes()) {
            Ok(probe) => panic!("{body} parsed as {probe:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn errors_name_the_field_without_locations() {
        let unknown = message(r#"{"cuont": 1}"#);
        assert!(unknown.contains("unknown field `cuont`"), "{unknown}");
        assert!(!unknown.contains("line 1"), "{unknown}");
        let wrong = message(r#"{"count": "x"}"#);
        assert!(wrong.contains("`count`"), "{wrong}");
        let syntax = message("{");
        assert!(syntax.contains("not valid JSON"), "{syntax}");
        let trailing = message("{} x");
        assert!(trailing.contains("not valid JSON"), "{trailing}");
    }

    #[test]
    fn nul_escapes_are_found_exactly() {
        assert!(has_nul_escape(br#"{"a":"x\u0000y"}"#));
        assert!(has_nul_escape(br#"{"\u0000":1}"#));
        assert!(has_nul_escape(br#"{"a":"\\\u0000"}"#));
        assert!(
            !has_nul_escape(br#"{"a":"\\u0000"}"#),
            "an escaped backslash, then text"
        );
        assert!(!has_nul_escape(br#"{"a":"u0000"}"#));
        let refused = parse_json::<serde_json::Value>(br#"{"params":{"p":"a\u0000"}}"#);
        assert!(matches!(refused, Err(Error::BadRequest { .. })));
    }
}
