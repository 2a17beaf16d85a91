//! What keeps a web page the operator happens to visit from driving the API
//! through the operator's browser.
//!
//! A local API without a token is reachable by every page the browser
//! opens: a page may send a "simple" cross-origin request (a form post, a
//! `text/plain` fetch) without a CORS preflight, and a hostile DNS name
//! that resolves to 127.0.0.1 (DNS rebinding) makes the page same-origin
//! with the API, so it can read the answers too. Three rules close both,
//! and a plain JSON client (curl, the CLI) meets them without
//! configuration, since it sends no `Origin` and names the address it
//! dials as its `Host`:
//!
//! - on a loopback listener the `Host` must be `localhost`, `127.0.0.1` or
//!   `[::1]` (or a name given with `--allowed-hosts`, or `--public-url`'s);
//! - a change (POST, PUT, PATCH, DELETE) that carries an `Origin` must come
//!   from the API's own origin: the `Origin`'s host and port equal the
//!   request's `Host`, or the origin is listed (`--allowed-origins`,
//!   `--public-url`);
//! - a change with a body must say `Content-Type: application/json`, which a
//!   browser cannot send cross-origin without a preflight this API never
//!   answers.
//!
//! The rules are parsed once into [`BrowserRules`]; the checks return the
//! error to answer, if any.

use std::collections::BTreeSet;

use axum::http::{HeaderMap, Method, Uri, header};
use thiserror::Error;

use crate::error::Error;

/// The host names a loopback listener always answers to.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// A `--allowed-origins` or `--public-url` value that is not an origin.
#[derive(Debug, Error)]
#[error(
    "invalid origin '{given}': {reason} (expected scheme://host[:port], such as https://datajump.example.com)"
)]
pub struct InvalidOrigin {
    /// The text as given.
    pub given: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// The names and origins allowed beyond the API's own, validated.
#[derive(Debug, Clone, Default)]
pub struct BrowserRules {
    /// Extra `Host` names for a loopback listener, lower case, no port.
    hosts: BTreeSet<String>,
    /// Extra origins, as `scheme://host[:port]` in lower case, default
    /// ports left out (as browsers send them).
    origins: BTreeSet<String>,
    /// Whether users reach the API over HTTPS (`--public-url https://…`),
    /// so session cookies are marked `Secure`.
    https: bool,
}

impl BrowserRules {
    /// Rules allowing `hosts` (names, with or without a port) on a loopback
    /// listener and `origins` beyond the API's own; `public_url` (the URL
    /// users reach the API at through a proxy or tunnel) adds both its
    /// origin and its host.
    ///
    /// # Errors
    ///
    /// [`InvalidOrigin`] for an origin or URL without a scheme of `http`
    /// or `https` and a host.
    pub fn new(
        hosts: &[String],
        origins: &[String],
        public_url: Option<&str>,
    ) -> Result<BrowserRules, InvalidOrigin> {
        let mut rules = BrowserRules {
            hosts: hosts
                .iter()
                .map(|h| h.trim())
                .filter(|h| !h.is_empty())
                .map(|h| host_name(h).to_ascii_lowercase())
                .collect(),
            origins: BTreeSet::new(),
            https: false,
        };
        for origin in origins.iter().map(|o| o.trim()).filter(|o| !o.is_empty()) {
            rules.origins.insert(parse_origin(origin, false)?);
        }
        if let Some(url) = public_url.map(str::trim).filter(|u| !u.is_empty()) {
            let origin = parse_origin(url, true)?;
            let authority = origin.split_once("://").map_or("", |(_, a)| a);
            rules
                .hosts
                .insert(host_name(authority).to_ascii_lowercase());
            rules.https = origin.starts_with("https://");
            rules.origins.insert(origin);
        }
        Ok(rules)
    }

    /// Whether session cookies must be `Secure` (sent over HTTPS only).
    pub fn secure_cookies(&self) -> bool {
        self.https
    }

    /// Why a request with this `Host` may not be answered by a loopback
    /// listener, if it may not.
    pub fn host_problem(&self, host: Option<&str>) -> Option<Error> {
        // HTTP/1.0 clients may send no Host; browsers always send one.
        let host = host?;
        let name = host_name(host).to_ascii_lowercase();
        if LOOPBACK_HOSTS.contains(&name.as_str()) || self.hosts.contains(&name) {
            return None;
        }
        Some(Error::Forbidden(format!(
            "this API listens on a loopback address and does not answer to the name '{}' \
             (a guard against DNS rebinding): use localhost or 127.0.0.1, or allow the name \
             with --allowed-hosts / DATAJUMP_ALLOWED_HOSTS",
            printable(host)
        )))
    }

    /// Why a change with this `Origin` is refused, if it is: it must be the
    /// API's own (its host and port are the request's `Host`) or listed.
    pub fn origin_problem(
        &self,
        method: &Method,
        origin: Option<&str>,
        host: Option<&str>,
    ) -> Option<Error> {
        if !is_change(method) {
            return None;
        }
        self.foreign_origin(origin, host)
    }

    /// Why a request with this `Origin` is refused whatever its method, if
    /// it is: the rule for requests a session cookie authenticates.
    pub fn foreign_origin(&self, origin: Option<&str>, host: Option<&str>) -> Option<Error> {
        let origin = origin?;
        if let Ok(normalized) = parse_origin(origin, false) {
            let authority = normalized.split_once("://").map_or("", |(_, a)| a);
            let same_origin = host
                .is_some_and(|host| authority.eq_ignore_ascii_case(&default_port_dropped(host)));
            if same_origin || self.origins.contains(&normalized) {
                return None;
            }
        }
        Some(Error::Forbidden(format!(
            "cross-origin request refused: a page from '{}' may not use this API; \
             pages the API serves itself may, and so may origins listed with \
             --allowed-origins / --public-url",
            printable(origin)
        )))
    }
}

/// Why a change's body is refused for its content type, if it is: a body
/// must be declared `application/json`.
pub fn content_type_problem(method: &Method, headers: &HeaderMap) -> Option<Error> {
    if !is_change(method) || !has_body(headers) {
        return None;
    }
    let given = headers
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let essence = given
        .as_deref()
        .and_then(|t| t.split(';').next())
        .map(str::trim);
    if essence.is_some_and(|e| e.eq_ignore_ascii_case("application/json")) {
        return None;
    }
    Some(Error::UnsupportedMediaType(format!(
        "request bodies must be JSON: send `Content-Type: application/json` (got {})",
        given.map_or("no Content-Type".to_owned(), |t| format!(
            "'{}'",
            printable(&t)
        ))
    )))
}

/// POST, PUT, PATCH and DELETE: the methods that may change something.
fn is_change(method: &Method) -> bool {
    !matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    )
}

/// Whether the request carries a body (a non-zero length or a chunked one).
fn has_body(headers: &HeaderMap) -> bool {
    if headers.contains_key(header::TRANSFER_ENCODING) {
        return true;
    }
    headers
        .get(header::CONTENT_LENGTH)
        .is_some_and(|length| length.to_str().map_or(true, |l| l.trim() != "0"))
}

/// `host[:port]` without its port; an IPv6 literal keeps its brackets.
fn host_name(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority
            .find(']')
            .map_or(authority, |end| &authority[..=end]);
    }
    match authority.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => authority,
    }
}

/// `host:80` as `host` (and `:443`): browsers leave default ports out of
/// `Origin`, clients put them in `Host` only when not default, but a proxy
/// may add them.
fn default_port_dropped(authority: &str) -> String {
    let name = host_name(authority);
    match &authority[name.len()..] {
        ":80" | ":443" => name.to_owned(),
        _ => authority.to_owned(),
    }
}

/// `scheme://host[:port]` in lower case with the default port left out;
/// a URL with a path is accepted only for `--public-url`.
fn parse_origin(text: &str, path_allowed: bool) -> Result<String, InvalidOrigin> {
    let invalid = |reason| InvalidOrigin {
        given: text.to_owned(),
        reason,
    };
    let uri: Uri = text.parse().map_err(|_| invalid("not a URL"))?;
    let scheme = uri
        .scheme_str()
        .map(str::to_ascii_lowercase)
        .ok_or_else(|| invalid("no scheme"))?;
    let default_port = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return Err(invalid("the scheme must be http or https")),
    };
    let authority = uri.authority().ok_or_else(|| invalid("no host"))?;
    if authority.as_str().contains('@') {
        return Err(invalid("an origin has no user name or password"));
    }
    if !path_allowed && uri.path_and_query().is_some_and(|p| p.as_str() != "/") {
        return Err(invalid("an origin has no path"));
    }
    let host = authority.host().to_ascii_lowercase();
    Ok(match authority.port_u16() {
        Some(port) if port != default_port => format!("{scheme}://{host}:{port}"),
        _ => format!("{scheme}://{host}"),
    })
}

/// `text` with control characters escaped, for error messages that quote
/// what a client sent.
fn printable(text: &str) -> String {
    text.chars().flat_map(char::escape_debug).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> BrowserRules {
        BrowserRules::new(
            &["dj.internal".to_owned()],
            &["https://ui.example.com:443".to_owned()],
            Some("https://proxy.example.com/datajump"),
        )
        .expect("valid rules")
    }

    #[test]
    fn loopback_hosts_and_listed_names_only() {
        let rules = rules();
        for ok in [
            "127.0.0.1:8080",
            "localhost",
            "LOCALHOST:1",
            "[::1]:8080",
            "dj.internal:9",
            "proxy.example.com",
        ] {
            assert!(rules.host_problem(Some(ok)).is_none(), "{ok} refused");
        }
        for bad in ["evil.example:8080", "127.0.0.1.evil.example", "[::2]:80"] {
            assert!(rules.host_problem(Some(bad)).is_some(), "{bad} allowed");
        }
        assert!(rules.host_problem(None).is_none());
    }

    #[test]
    fn changes_from_other_origins_are_refused() {
        let rules = rules();
        let post = Method::POST;
        let host = Some("127.0.0.1:8080");
        assert!(rules.origin_problem(&post, None, host).is_none());
        assert!(
            rules
                .origin_problem(&post, Some("http://127.0.0.1:8080"), host)
                .is_none()
        );
        assert!(
            rules
                .origin_problem(&post, Some("https://ui.example.com"), host)
                .is_none()
        );
        assert!(
            rules
                .origin_problem(&post, Some("https://proxy.example.com"), host)
                .is_none()
        );
        for bad in [
            "https://evil.example",
            "null",
            "http://127.0.0.1:9999",
            "http://127.0.0.1:8080/x",
        ] {
            assert!(
                rules.origin_problem(&post, Some(bad), host).is_some(),
                "{bad} allowed"
            );
        }
        assert!(
            rules
                .origin_problem(&Method::GET, Some("https://evil.example"), host)
                .is_none()
        );
        assert!(
            rules
                .origin_problem(&post, Some("http://dj.example"), Some("dj.example:80"))
                .is_none()
        );
    }

    #[test]
    fn invalid_origins_are_named() {
        for bad in ["ftp://x", "example.com", "https://u:p@x", "https://x/path"] {
            let error = BrowserRules::new(&[], &[bad.to_owned()], None).expect_err(bad);
            assert!(error.to_string().contains(bad), "{error}");
        }
    }

    #[test]
    fn bodies_must_be_json() {
        let headers = |pairs: &[(header::HeaderName, &str)]| {
            let mut map = HeaderMap::new();
            for (name, value) in pairs {
                map.insert(name.clone(), value.parse().expect("header value"));
            }
            map
        };
        let json = headers(&[
            (header::CONTENT_LENGTH, "2"),
            (header::CONTENT_TYPE, "Application/JSON; charset=utf-8"),
        ]);
        assert!(content_type_problem(&Method::POST, &json).is_none());
        let text = headers(&[
            (header::CONTENT_LENGTH, "2"),
            (header::CONTENT_TYPE, "text/plain"),
        ]);
        assert!(content_type_problem(&Method::POST, &text).is_some());
        let chunked = headers(&[(header::TRANSFER_ENCODING, "chunked")]);
        assert!(content_type_problem(&Method::PUT, &chunked).is_some());
        let empty = headers(&[(header::CONTENT_LENGTH, "0")]);
        assert!(content_type_problem(&Method::POST, &empty).is_none());
        assert!(content_type_problem(&Method::POST, &HeaderMap::new()).is_none());
        assert!(content_type_problem(&Method::GET, &text).is_none());
    }
}
