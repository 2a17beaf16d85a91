//! Named secrets: the credentials HTTP tasks send in headers
//! (`Authorization: Bearer ${secret:api_token}`) and SPARK and FLINK tasks
//! set as configuration properties (`spark.hadoop.fs.s3a.secret.key:
//! ${secret:s3_key}`), managed with `datajump secret set/list/remove`.
//!
//! The shaping decision: **a secret's value lives in one row and is read by
//! the runner when the attempt starts.** A DAG names the secret, so the value
//! is not in the DAG file, the catalog's task rows, a run's plan, the work
//! message on `dj.work.*` or the trigger's params; the runner resolves the
//! names it finds in header values just before sending, marks those headers
//! sensitive and masks the values wherever the log could echo them. The same
//! rule keeps datasource passwords out of messages ([`crate::datasources`]).
//! Values are stored encrypted under the installation's secret key
//! (`datajump_store::sealing`), as datasource passwords are.

use std::collections::BTreeSet;

use sea_orm::DbErr;
use thiserror::Error;

/// The longest secret name.
pub const MAX_NAME_LEN: usize = 128;

/// Header names that always carry credentials: in a DAG their values must
/// come from `${secret:…}`, and the log prints them as `***`.
pub const CREDENTIAL_HEADERS: [&str; 5] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
];

/// Words that make a configuration property a credential
/// (`spark.hadoop.fs.s3a.secret.key`, `…password`): such a property never
/// goes on a command line, and the log shows its value as `***`.
const CREDENTIAL_WORDS: [&str; 5] = ["secret", "password", "token", "credential", "key"];

/// Why a secret could not be stored, found or used.
#[derive(Debug, Error)]
pub enum SecretError {
    /// The database failed.
    #[error("database error: {0}")]
    Db(#[from] DbErr),
    /// No secret has that name.
    #[error("no secret named '{0}' (create it with `datajump secret set {0}`)")]
    NotFound(String),
    /// A task asked for a secret its project does not have (it may exist
    /// in another project, which the task may not use).
    #[error(
        "no secret named '{name}' in project {project}, the task's project \
         (create it with `datajump secret set {name} --project {project}`)"
    )]
    NotInProject {
        /// The secret's name.
        name: String,
        /// The task's project.
        project: i64,
    },
    /// `set` of a name another project's secret has: names are unique in
    /// an installation.
    #[error(
        "the secret '{name}' belongs to project {project}; remove it there first \
         (`datajump secret remove {name}`) to set it for another project"
    )]
    OtherProject {
        /// The secret's name.
        name: String,
        /// The project it belongs to.
        project: i64,
    },
    /// A name that cannot be written inside `${secret:…}`.
    #[error(
        "invalid secret name '{0}': use 1-128 characters from letters, digits, '_' and '.', \
         starting with a letter or '_'"
    )]
    InvalidName(String),
    /// An empty value.
    #[error("secret '{0}' has an empty value")]
    EmptyValue(String),
    /// A stored value that cannot be decrypted here.
    #[error("secret '{name}': {reason}")]
    Unreadable {
        /// The secret's name.
        name: String,
        /// Why (no key, or another key).
        reason: String,
    },
}

/// Whether `name` can be a secret's name: what `${secret:NAME}` accepts.
pub fn is_valid_name(name: &str) -> bool {
    name.len() <= MAX_NAME_LEN && crate::params::is_name(name)
}

/// Whether a header (any case) carries a credential: one of
/// [`CREDENTIAL_HEADERS`] or one the task lists in `secret_headers`.
pub fn is_credential_header(name: &str, listed: &BTreeSet<String>) -> bool {
    let name = name.to_ascii_lowercase();
    CREDENTIAL_HEADERS.contains(&name.as_str()) || listed.contains(&name)
}

/// Whether a configuration property named `key` (any case) holds a
/// credential: its name has one of [`CREDENTIAL_WORDS`].
pub fn is_credential_property(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    CREDENTIAL_WORDS.iter().any(|word| key.contains(word))
}

/// Whether a property's value becomes options on a JVM's command line
/// (Spark's `spark.driver.extraJavaOptions` and the like, Flink's
/// `env.java.opts.*`), which every user of the host can read: no secret may
/// go there.
pub fn is_jvm_options_property(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.ends_with("javaoptions") || key.starts_with("env.java.")
}

/// The problem of a SPARK or FLINK `conf` value as far as credentials go:
/// a `${secret:…}` that does not parse or names no valid secret, or one in
/// a property that becomes JVM command-line options
/// ([`is_jvm_options_property`]).
pub fn conf_value_problem(key: &str, value: &str) -> Option<String> {
    let names = match crate::params::secret_names(value) {
        Ok(names) => names,
        Err(e) => return Some(format!("'conf': '{key}': {e}")),
    };
    if let Some(bad) = names.iter().find(|n| !is_valid_name(n)) {
        return Some(format!(
            "'conf': '{key}': {}",
            SecretError::InvalidName(bad.clone())
        ));
    }
    (!names.is_empty() && is_jvm_options_property(key)).then(|| {
        format!(
            "'conf': '{key}' becomes options on the JVM's command line, which every user of the \
             host can read, so it may not name a secret: set the credential as a property of its \
             own (e.g. spark.hadoop.fs.s3a.secret.key: \"${{secret:NAME}}\")"
        )
    })
}

/// The problems of an HTTP task's `content` as far as credentials go: those
/// of [`header_problems`] (a literal credential would be stored in the
/// catalog and sent in every work message), or `secret_headers` that is not
/// a list of names.
pub fn credential_problems(content: &serde_json::Map<String, serde_json::Value>) -> Vec<String> {
    let mut problems = Vec::new();
    let listed: BTreeSet<String> = match content
        .get("secret_headers")
        .or_else(|| content.get("secretHeaders"))
    {
        None | Some(serde_json::Value::Null) => BTreeSet::new(),
        Some(serde_json::Value::Array(names)) if names.iter().all(|n| n.is_string()) => names
            .iter()
            .filter_map(serde_json::Value::as_str)
            .map(str::to_ascii_lowercase)
            .collect(),
        Some(_) => {
            problems.push("'content.secret_headers' must be a list of header names".to_owned());
            BTreeSet::new()
        }
    };
    if let Some(serde_json::Value::Object(headers)) = content.get("headers") {
        let headers = headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()));
        problems.extend(header_problems(headers, &listed));
    }
    if let Some(url) = content.get("url").and_then(serde_json::Value::as_str)
        && url_has_password(url)
    {
        problems.push(
            "'content.url' carries a password (scheme://user:PASSWORD@host): it would be stored \
             in the DAG and sent in every work message; store it with `datajump secret set NAME` \
             and send it in a header instead, e.g. Authorization: \"Basic ${secret:NAME}\""
                .to_owned(),
        );
    }
    problems
}

/// Whether `url` has a password in its authority (`scheme://user:pw@host`).
fn url_has_password(url: &str) -> bool {
    let Some((_, rest)) = url.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    authority
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.contains(':'))
}

/// The problems of `(name, value)` headers (`None` for a value that is not
/// text) as far as credentials go: a credential header (one of
/// [`CREDENTIAL_HEADERS`] or `listed`) whose value names no secret, or a
/// `${secret:…}` that does not parse.
pub fn header_problems<'a>(
    headers: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    listed: &BTreeSet<String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (name, value) in headers {
        let names = match value.map(crate::params::secret_names) {
            Some(Ok(names)) => names,
            Some(Err(e)) => {
                problems.push(format!("header '{name}': {e}"));
                continue;
            }
            None => BTreeSet::new(),
        };
        if let Some(bad) = names.iter().find(|n| !is_valid_name(n)) {
            problems.push(format!(
                "header '{name}': {}",
                SecretError::InvalidName(bad.clone())
            ));
        } else if names.is_empty() && is_credential_header(name, listed) {
            problems.push(format!(
                "header '{name}' carries a credential, so its value must come from a secret: \
                 store it with `datajump secret set NAME` and write e.g. \
                 \"Bearer ${{secret:NAME}}\" (a literal or a parameter would be stored in the \
                 DAG and sent in every work message)"
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_headers_in_either_spelling() {
        for key in ["secret_headers", "secretHeaders"] {
            let content = match serde_json::json!({
                "url": "https://api.example/x",
                key: ["X-Token"],
                "headers": { "X-Token": "abc" },
            }) {
                serde_json::Value::Object(map) => map,
                _ => unreachable!(),
            };
            let problems = credential_problems(&content);
            assert_eq!(problems.len(), 1, "{key}: {problems:?}");
            assert!(problems[0].contains("X-Token"), "{problems:?}");
        }
    }

    #[test]
    fn passwords_in_urls_are_refused() {
        let content = |url: &str| match serde_json::json!({ "url": url }) {
            serde_json::Value::Object(map) => map,
            _ => unreachable!(),
        };
        assert_eq!(
            credential_problems(&content("https://u:pw@api.example/x")).len(),
            1
        );
        assert!(credential_problems(&content("https://u@api.example/x")).is_empty());
        assert!(credential_problems(&content("https://api.example/a:b@c")).is_empty());
        assert!(credential_problems(&content("https://api.example/x?u=a:b@c")).is_empty());
    }

    #[test]
    fn names() {
        for good in ["api_token", "A.b_2", "_x"] {
            assert!(is_valid_name(good), "{good} refused");
        }
        for bad in ["", "2fa", "a-b", "a b", "a}", &"x".repeat(129)] {
            assert!(!is_valid_name(bad), "{bad:?} accepted");
        }
    }

    #[test]
    fn credential_headers_must_name_a_secret() {
        let content = |headers: serde_json::Value| match serde_json::json!({
            "url": "http://x", "headers": headers, "secret_headers": ["X-Token"]
        }) {
            serde_json::Value::Object(map) => map,
            _ => unreachable!(),
        };
        let ok = content(serde_json::json!({
            "Authorization": "Bearer ${secret:api_token}",
            "Cookie": "lang=en; sid=${secret:sid}",
            "X-Token": "${secret:t}",
            "Accept": "text/plain",
        }));
        assert_eq!(credential_problems(&ok), Vec::<String>::new());
        for (header, value) in [
            ("Authorization", "Bearer abc"),
            ("authorization", "Bearer ${token}"),
            ("x-token", "plain"),
            ("X-Api-Key", "$${secret:escaped}"),
        ] {
            let problems = credential_problems(&content(serde_json::json!({ header: value })));
            assert_eq!(problems.len(), 1, "{header}: {value}");
            assert!(
                problems[0].contains("must come from a secret"),
                "{problems:?}"
            );
        }
        let bad = content(serde_json::json!({ "Authorization": "${secret:a-b}" }));
        assert!(
            credential_problems(&bad)[0].contains("invalid secret name 'a-b'"),
            "{:?}",
            credential_problems(&bad)
        );
    }

    #[test]
    fn credential_properties() {
        for key in [
            "spark.hadoop.fs.s3a.secret.key",
            "spark.hadoop.fs.s3a.access.key",
            "s3.secret-key",
            "spark.jdbc.Password",
            "security.ssl.rest.keystore-password",
            "fs.azure.account.oauth2.client.credential",
        ] {
            assert!(is_credential_property(key), "{key}");
        }
        assert!(!is_credential_property("spark.sql.shuffle.partitions"));
        for key in ["spark.driver.extraJavaOptions", "env.java.opts.all"] {
            assert!(is_jvm_options_property(key), "{key}");
            assert!(
                conf_value_problem(key, "-Dpw=${secret:pw}")
                    .is_some_and(|p| p.contains("JVM's command line")),
                "{key}"
            );
            assert_eq!(conf_value_problem(key, "-Xss4m"), None);
        }
        assert_eq!(conf_value_problem("s3.secret-key", "${secret:s3}"), None);
        assert!(
            conf_value_problem("k", "${secret:a-b}")
                .is_some_and(|p| p.contains("invalid secret name 'a-b'"))
        );
        assert!(conf_value_problem("k", "${secret:s3").is_some());
    }

    #[test]
    fn credential_headers_in_any_case() {
        let listed: BTreeSet<String> = ["x-my-token".to_owned()].into();
        for name in ["Authorization", "COOKIE", "x-api-key", "X-My-Token"] {
            assert!(is_credential_header(name, &listed), "{name}");
        }
        assert!(!is_credential_header("accept", &listed));
    }
}
