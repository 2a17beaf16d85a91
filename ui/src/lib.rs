//! DataJump's web UI: the front end's built files (`web/dist`, made by
//! `npm run build` in `web/`), embedded in the binary and served by the API
//! at `/` on its own address.
//!
//! The decision that shapes it: the UI is a single-page app whose files are
//! compiled into the binary (`rust-embed`), so one binary stays the whole
//! system and a page never loads anything from another host. Files under
//! `/assets/` carry a content hash in their names, so they are cached for a
//! year; every other path is a page of the app (`/dags/3`, `/runs/12`), so
//! it gets `index.html`, never cached, and the app's router draws the page.
//! A binary built before the front end serves a page saying how to build it
//! instead (see `build.rs`).

use std::borrow::Cow;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

#[derive(rust_embed::Embed)]
#[folder = "../web/dist"]
#[allow_missing = true]
struct Assets;

/// What a page of the UI may load and talk to: only its own origin. Inline
/// styles are allowed because the graph library positions nodes with them;
/// inline scripts are not.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
     font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

/// Shown in place of the UI by a binary built without it.
const NOT_BUILT: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>DataJump: web UI not built</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:46rem;margin:4rem auto;padding:0 1rem;color:#1f2937}
code,pre{font-family:ui-monospace,monospace;background:#f3f4f6;border-radius:4px}pre{padding:.75rem 1rem}</style>
</head><body>
<h1>The web UI is not built into this binary</h1>
<p>This <code>datajump</code> was compiled before the front end was built, so it carries no UI.
The API works as usual under <code>/api/v1</code>.</p>
<p>Build the front end, then the binary (it embeds <code>web/dist</code> when it is compiled):</p>
<pre>npm --prefix web ci && npm --prefix web run build
cargo build --release -p datajump</pre>
<p><code>scripts/up.sh</code> does both and starts DataJump.</p>
</body></html>"#;

/// Whether the front end was built into this binary.
pub fn is_built() -> bool {
    Assets::get("index.html").is_some()
}

/// The answer to `GET path` (a path outside the API): the file itself for
/// a built asset, `index.html` for any page of the app, or the page saying
/// how to build the UI.
pub fn serve(path: &str, request_headers: &HeaderMap) -> Response {
    let path = path.trim_start_matches('/');
    if let Some(file) = Assets::get(path).filter(|_| !path.is_empty()) {
        let hashed = path.starts_with("assets/");
        return file_response(
            file,
            None,
            if hashed {
                "public, max-age=31536000, immutable"
            } else {
                "no-cache"
            },
            request_headers,
        );
    }
    // An asset that is not there is a 404, not the app: a stale page asking
    // for last build's bundle must fail visibly rather than parse HTML as
    // JavaScript.
    if path.starts_with("assets/") {
        return (StatusCode::NOT_FOUND, "no such asset").into_response();
    }
    match Assets::get("index.html") {
        Some(index) => file_response(
            index,
            Some("text/html; charset=utf-8"),
            "no-cache",
            request_headers,
        ),
        None => (
            StatusCode::NOT_FOUND,
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            NOT_BUILT,
        )
            .into_response(),
    }
}

/// `file` with its caching headers, or 304 when the browser holds this
/// version already; its type is `content_type`, or guessed from its name.
fn file_response(
    file: rust_embed::EmbeddedFile,
    content_type: Option<&'static str>,
    cache_control: &'static str,
    request_headers: &HeaderMap,
) -> Response {
    let etag = format!("\"{}\"", hex(&file.metadata.sha256_hash()[..16]));
    let headers = [
        (
            header::CONTENT_TYPE,
            content_type.map_or_else(
                || {
                    HeaderValue::from_str(file.metadata.mimetype())
                        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"))
                },
                HeaderValue::from_static,
            ),
        ),
        (
            header::CACHE_CONTROL,
            HeaderValue::from_static(cache_control),
        ),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("same-origin"),
        ),
    ];
    let fresh = request_headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|tag| tag.trim() == etag));
    let etag = HeaderValue::from_str(&etag).unwrap_or_else(|_| HeaderValue::from_static("\"\""));
    if fresh {
        return (StatusCode::NOT_MODIFIED, headers, [(header::ETAG, etag)]).into_response();
    }
    let body = match file.data {
        Cow::Borrowed(bytes) => axum::body::Body::from(bytes),
        Cow::Owned(bytes) => axum::body::Body::from(bytes),
    };
    (headers, [(header::ETAG, etag)], body).into_response()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_of_the_app_is_its_index_or_the_build_hint() {
        let response = serve("/dags/3", &HeaderMap::new());
        let content_type = response.headers().get(header::CONTENT_TYPE);
        assert_eq!(
            content_type.and_then(|v| v.to_str().ok()),
            Some("text/html; charset=utf-8")
        );
        let expected = if is_built() {
            StatusCode::OK
        } else {
            StatusCode::NOT_FOUND
        };
        assert_eq!(response.status(), expected);
    }

    #[test]
    fn a_missing_asset_is_not_found_rather_than_the_app() {
        let response = serve("/assets/index-0000.js", &HeaderMap::new());
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
    }
}
