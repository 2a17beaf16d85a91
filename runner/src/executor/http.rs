//! HTTP: one request; its status decides the task's result.
//!
//! `content` is `{ "url", "method" (GET), "headers": {…}, "body",
//! "success_codes" (any 2xx), "request_timeout" (seconds; default the task
//! timeout), "secret_headers": [names] }`. Parameters are substituted in the
//! URL, header values and body. A `body` that is a JSON object or array is
//! sent as JSON (parameters substituted in its strings), with
//! `Content-Type: application/json` unless a header sets one. Header values
//! may name secrets, `Bearer ${secret:api_token}`: they are read from the
//! database here, when the attempt starts (see `datajump_shared::secrets`).
//!
//! The shaping decision: **the log shows the exchange as `curl -v` would,
//! with credentials masked.** Request line and headers (`>`), status line
//! and headers (`<`), then the first [`MAX_BODY`] bytes of the response
//! body, which is all that is read. Credential headers (`Authorization`,
//! `Proxy-Authorization`, `Cookie`, `Set-Cookie`, `X-Api-Key`, any in
//! `secret_headers` and any holding a secret) and a password in the URL print
//! as `***`, and a secret's value echoed back by the server is masked too;
//! the request body is not logged, only its size, since it may carry
//! credentials as well.
//! A status outside `success_codes` fails the attempt with the status as its
//! exit code, so retry-on-exit-codes can tell a 503 from a 400.

use datajump_shared::problem::Reason;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use datajump_shared::content::{HttpContent, ScalarText};
use datajump_shared::network::Guard;
use datajump_shared::params::secret_names;
use datajump_shared::secrets::is_credential_header;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode, Url};

use super::{ExecContext, ExecOutcome, LogSink};

/// Response bytes kept in the log; the rest is not read.
pub const MAX_BODY: usize = 64 * 1024;

const MASK: &str = "***";

/// Sends the request.
pub(super) async fn run(content: &HttpContent, ctx: &ExecContext, log: &LogSink) -> ExecOutcome {
    let secrets = match read_secrets(content, ctx).await {
        Ok(secrets) => secrets,
        Err(outcome) => return outcome,
    };
    let guard = ctx.network.guard().await;
    let request = match Request::from_content(content, ctx, &secrets, guard) {
        Ok(request) => request,
        Err(why) => return ExecOutcome::Invalid(why),
    };
    let deadline = (!ctx.timeout.is_zero()).then(|| tokio::time::Instant::now() + ctx.timeout);
    let timeout = async {
        match deadline {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        outcome = request.send(log) => outcome,
        () = timeout => {
            log.line(&format!("[datajump] timed out after {}s", ctx.timeout.as_secs()));
            ExecOutcome::TimedOut
        }
        () = ctx.cancel.cancelled() => {
            log.line("[datajump] stopped");
            ExecOutcome::Cancelled
        }
    }
}

/// A request ready to send, built from a task's content.
struct Request {
    method: Method,
    url: Url,
    headers: HeaderMap,
    body: Option<String>,
    success: Option<BTreeSet<u16>>,
    timeout: Option<Duration>,
    secret: BTreeSet<String>,
    /// Where it and its redirects may connect.
    guard: std::sync::Arc<Guard>,
    /// Values of the secrets in the headers, in every form a server could
    /// echo them (as sent, JSON-escaped, percent-encoded, base64), longest
    /// first: masked wherever the log could show them.
    secret_values: Vec<String>,
}

/// `secret` and the encodings a server could echo it in, longest first.
fn echo_forms(secret: &str) -> Vec<String> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    if secret.is_empty() {
        return Vec::new();
    }
    let json = serde_json::Value::String(secret.to_owned()).to_string();
    let mut forms = vec![
        secret.to_owned(),
        json[1..json.len() - 1].to_owned(),
        percent_encoding::utf8_percent_encode(secret, percent_encoding::NON_ALPHANUMERIC)
            .to_string(),
        STANDARD.encode(secret),
        STANDARD.encode(secret).trim_end_matches('=').to_owned(),
        URL_SAFE_NO_PAD.encode(secret),
    ];
    forms.sort_by_key(|form| std::cmp::Reverse(form.len()));
    forms.dedup();
    forms
}

/// The secrets the task's header values name, read from the database.
async fn read_secrets(
    content: &HttpContent,
    ctx: &ExecContext,
) -> Result<BTreeMap<String, String>, ExecOutcome> {
    ctx.secrets(content.headers.values()).await
}

impl Request {
    /// Substitutes the content's parameters and secrets into a request;
    /// the error says what is wrong.
    fn from_content(
        content: &HttpContent,
        ctx: &ExecContext,
        secrets: &BTreeMap<String, String>,
        guard: std::sync::Arc<Guard>,
    ) -> Result<Request, String> {
        let text = |value: &str| ctx.text(value).map_err(|e| e.to_string());
        let url_text = text(&content.url)?;
        let url = Url::parse(&url_text).map_err(|e| format!("invalid url: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "invalid url: scheme '{}' (use http or https)",
                url.scheme()
            ));
        }
        if let Some(why) = guard.url_problem(&url) {
            return Err(why.to_string());
        }
        let method = match &content.method {
            None => Method::GET,
            Some(m) => Method::from_bytes(m.to_ascii_uppercase().as_bytes())
                .map_err(|_| format!("invalid method '{m}'"))?,
        };
        let secret: BTreeSet<String> = content
            .secret_headers
            .iter()
            .map(|name| name.to_ascii_lowercase())
            .collect();
        let mut headers = HeaderMap::new();
        for (name, value) in &content.headers {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("invalid header name '{name}'"))?;
            let (value, names_secret) = match value {
                ScalarText::Text(v) => (
                    ctx.params
                        .substitute_with_secrets(v, secrets)
                        .map_err(|e| e.to_string())?,
                    secret_names(v).is_ok_and(|names| !names.is_empty()),
                ),
                ScalarText::Number(n) => (n.to_string(), false),
                ScalarText::Bool(b) => (b.to_string(), false),
            };
            let mut value = HeaderValue::from_str(&value)
                .map_err(|_| format!("header '{name}' has a value that is not valid in HTTP"))?;
            if names_secret || is_credential_header(header.as_str(), &secret) {
                value.set_sensitive(true);
            }
            headers.append(header, value);
        }
        let body = match &content.body {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(body)) => {
                if !headers.contains_key(CONTENT_TYPE) {
                    headers.insert(
                        CONTENT_TYPE,
                        HeaderValue::from_static("text/plain; charset=utf-8"),
                    );
                }
                Some(text(body)?)
            }
            Some(json @ (serde_json::Value::Object(_) | serde_json::Value::Array(_))) => {
                if !headers.contains_key(CONTENT_TYPE) {
                    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                }
                Some(substitute_json(json, &text)?.to_string())
            }
            Some(other) => {
                if !headers.contains_key(CONTENT_TYPE) {
                    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                }
                Some(other.to_string())
            }
        };
        // The content's checks made these HTTP statuses, and not an empty list.
        let success = content
            .success_codes
            .as_ref()
            .map(|codes| codes.iter().copied().collect::<BTreeSet<u16>>());
        let timeout = match content.request_timeout {
            None => (!ctx.timeout.is_zero()).then_some(ctx.timeout),
            Some(0.0) => None,
            Some(secs) => Some(
                Duration::try_from_secs_f64(secs)
                    .map_err(|_| "'request_timeout' must be a number of seconds".to_owned())?,
            ),
        };
        Ok(Request {
            method,
            url,
            headers,
            body,
            success,
            timeout,
            secret,
            guard,
            secret_values: {
                let mut forms: Vec<String> = secrets.values().flat_map(|s| echo_forms(s)).collect();
                forms.sort_by_key(|form| std::cmp::Reverse(form.len()));
                forms.dedup();
                forms
            },
        })
    }

    fn is_success(&self, status: StatusCode) -> bool {
        match &self.success {
            Some(codes) => codes.contains(&status.as_u16()),
            None => status.is_success(),
        }
    }

    /// Sends the request and logs the exchange.
    async fn send(&self, log: &LogSink) -> ExecOutcome {
        let carries_credentials = self.headers.values().any(HeaderValue::is_sensitive);
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("datajump/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(30))
            .dns_resolver(self.guard.resolver())
            .redirect(self.guard.redirect_policy(&self.url, carries_credentials));
        if let Some(timeout) = self.timeout {
            builder = builder.timeout(timeout);
        }
        let client = match builder.build() {
            Ok(client) => client,
            Err(e) => {
                return failed(format!(
                    "cannot create the HTTP client: {}",
                    e.without_url()
                ));
            }
        };
        log.line(&format!("> {} {}", self.method, masked_url(&self.url)));
        for (name, value) in &self.headers {
            log.line(&format!("> {}", header_line(name, value, &self.secret)));
        }
        if let Some(body) = &self.body {
            log.line(&format!("> ({} byte body)", body.len()));
        }
        let mut request = client
            .request(self.method.clone(), self.url.clone())
            .headers(self.headers.clone());
        if let Some(body) = &self.body {
            request = request.body(body.clone());
        }
        let mut response = match request.send().await {
            Ok(response) => response,
            Err(e) => return self.request_error(&e, log),
        };
        let status = response.status();
        if response.url() != &self.url {
            log.line(&format!("< (redirected to {})", masked_url(response.url())));
        }
        if carries_credentials && status.is_redirection() {
            log.line(
                "[datajump] a redirect to another origin (scheme, host or port) was not \
                 followed: the request carries credentials, which go only to the origin the \
                 task names",
            );
        }
        log.line(&format!(
            "< {:?} {} {}",
            response.version(),
            status.as_u16(),
            status.canonical_reason().unwrap_or("")
        ));
        for (name, value) in response.headers() {
            let line = header_line(name, value, &self.secret);
            log.line(&format!("< {}", self.mask_secrets(&line)));
        }
        log.line("");
        // Read before the body: afterwards reqwest reports what is left.
        let length = response.content_length();
        let mut body = Vec::new();
        let mut cut = false;
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let room = MAX_BODY - body.len();
                    if chunk.len() > room {
                        body.extend_from_slice(&chunk[..room]);
                        cut = true;
                        break;
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => {
                    self.write_body(&body, log);
                    return self.request_error(&e, log);
                }
            }
        }
        self.write_body(&body, log);
        if cut {
            let total = length.map(|n| format!(" of {n}")).unwrap_or_default();
            log.line(&format!(
                "[datajump] response body cut: first {MAX_BODY} bytes{total} shown, the rest not read"
            ));
        }
        if self.is_success(status) {
            ExecOutcome::Success
        } else {
            let message = format!(
                "HTTP {} {}",
                status.as_u16(),
                status.canonical_reason().unwrap_or("")
            )
            .trim_end()
            .to_owned();
            log.line(&format!("[datajump] {message}: not a success status"));
            ExecOutcome::Failed {
                exit_code: Some(i32::from(status.as_u16())),
                reason: Reason::Said(message),
            }
        }
    }

    /// `text` with every secret value replaced by `***`.
    fn mask_secrets(&self, text: &str) -> String {
        self.secret_values
            .iter()
            .fold(text.to_owned(), |text, secret| text.replace(secret, MASK))
    }

    /// The response body as text lines (invalid UTF-8 shown as U+FFFD), with
    /// secrets the server echoed masked.
    fn write_body(&self, body: &[u8], log: &LogSink) {
        for line in String::from_utf8_lossy(body).lines() {
            log.line(&self.mask_secrets(line));
        }
    }

    fn request_error(&self, error: &reqwest::Error, log: &LogSink) -> ExecOutcome {
        if error.is_timeout() {
            let after = self
                .timeout
                .map(|t| format!(" after {}s", t.as_secs_f64()))
                .unwrap_or_default();
            log.line(&format!("[datajump] request timed out{after}"));
            return ExecOutcome::TimedOut;
        }
        let message = format!(
            "{} {} failed: {}",
            self.method,
            masked_url(&self.url),
            error_chain(error)
        );
        log.line(&format!("[datajump] {message}"));
        failed(message)
    }
}

fn failed(message: String) -> ExecOutcome {
    ExecOutcome::Failed {
        exit_code: None,
        reason: Reason::Said(message),
    }
}

/// An error with its causes (`error sending request: connection refused`),
/// without the URL, which may hold a password.
fn error_chain(error: &reqwest::Error) -> String {
    use std::error::Error;
    let mut text = error.to_string();
    if let Some(url) = error.url() {
        text = text.replace(&format!(" for url ({url})"), "");
    }
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// `Name: value`, or `Name: ***` for a credential.
fn header_line(name: &HeaderName, value: &HeaderValue, secret: &BTreeSet<String>) -> String {
    if is_credential_header(name.as_str(), secret) || value.is_sensitive() {
        format!("{name}: {MASK}")
    } else {
        format!("{name}: {}", String::from_utf8_lossy(value.as_bytes()))
    }
}

/// The URL with any password replaced by `***`.
fn masked_url(url: &Url) -> String {
    let mut shown = url.clone();
    if shown.password().is_some() {
        let _ = shown.set_password(Some(MASK));
    }
    shown.to_string()
}

/// `value` with parameters substituted in every string inside it.
fn substitute_json(
    value: &serde_json::Value,
    text: &impl Fn(&str) -> Result<String, String>,
) -> Result<serde_json::Value, String> {
    Ok(match value {
        serde_json::Value::String(s) => serde_json::Value::String(text(s)?),
        serde_json::Value::Array(items) => serde_json::Value::Array(
            items
                .iter()
                .map(|item| substitute_json(item, text))
                .collect::<Result<_, _>>()?,
        ),
        serde_json::Value::Object(map) => serde_json::Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), substitute_json(v, text)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_headers_are_masked_in_any_case() {
        let secret: BTreeSet<String> = ["x-my-token".to_owned()].into();
        let value = HeaderValue::from_static("s3cret");
        for name in [
            "authorization",
            "Proxy-Authorization",
            "cookie",
            "x-api-key",
            "X-My-Token",
        ] {
            let name = HeaderName::from_bytes(name.as_bytes()).unwrap();
            let line = header_line(&name, &value, &secret);
            assert!(!line.contains("s3cret"), "{line}");
            assert!(line.ends_with(": ***"), "{line}");
        }
        let plain = HeaderName::from_static("accept");
        assert_eq!(header_line(&plain, &value, &secret), "accept: s3cret");
    }

    #[test]
    fn url_passwords_are_masked() {
        let url = Url::parse("https://user:pa55@example.com/x?y=1").unwrap();
        assert_eq!(masked_url(&url), "https://user:***@example.com/x?y=1");
        let url = Url::parse("http://example.com/").unwrap();
        assert_eq!(masked_url(&url), "http://example.com/");
    }

    #[test]
    fn json_bodies_substitute_strings_only() {
        let body = serde_json::json!({"day": "${d}", "n": 1, "list": ["${d}", true]});
        let out = substitute_json(&body, &|s: &str| Ok(s.replace("${d}", "2024-01-02"))).unwrap();
        assert_eq!(
            out,
            serde_json::json!({"day": "2024-01-02", "n": 1, "list": ["2024-01-02", true]})
        );
    }
}
