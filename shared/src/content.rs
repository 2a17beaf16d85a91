//! Task types and what each one runs: its `content`, parsed once, when a DAG
//! is applied, into a type per task type.
//!
//! The stored form stays what it was (`task.task_type` the upper-case name,
//! `task.content` a flat JSON object), so nothing is migrated; what changes
//! is that the object is read through [`TaskContent::parse`], which knows
//! every key each type takes and refuses any other. A key the executor would
//! silently ignore (`secretHeader` for `secret_headers`) is the error a user
//! needs at `dag apply`, not a credential found in a log later. Multi-word
//! keys are read in the API's camelCase as well (`secretHeaders`). Executors
//! read the same types back from the spec, so they never look keys up by
//! hand.

use std::collections::BTreeMap;

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::params::{Mode, ScriptLang, SqlDialect};

/// What a task runs as.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    EnumIter,
    DeriveActiveEnum,
    Serialize,
    Deserialize,
    Default,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
#[serde(rename_all = "UPPERCASE")]
pub enum TaskType {
    /// A command line or a bash script.
    #[default]
    #[sea_orm(string_value = "SHELL")]
    Shell,
    /// A Python script.
    #[sea_orm(string_value = "PYTHON")]
    Python,
    /// SQL statements against a datasource.
    #[sea_orm(string_value = "SQL")]
    Sql,
    /// One HTTP request.
    #[sea_orm(string_value = "HTTP")]
    Http,
    /// Nothing: succeeds at once (for benchmarks and placeholders).
    #[sea_orm(string_value = "NOOP")]
    Noop,
}

impl TaskType {
    /// Every type, in the order help texts list them.
    pub const ALL: [TaskType; 5] = [
        TaskType::Shell,
        TaskType::Python,
        TaskType::Sql,
        TaskType::Http,
        TaskType::Noop,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskType::Shell => "SHELL",
            TaskType::Python => "PYTHON",
            TaskType::Sql => "SQL",
            TaskType::Http => "HTTP",
            TaskType::Noop => "NOOP",
        }
    }

    /// Reads a type as a DAG file may write it (any case).
    pub fn parse(name: &str) -> Option<TaskType> {
        TaskType::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(name))
    }

    /// The known names, for error messages.
    pub fn names() -> String {
        TaskType::ALL.map(TaskType::as_str).join(", ")
    }
}

/// A SHELL task: a command line, or a script body (one of the two).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellContent {
    /// Command line(s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Script body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
}

impl ShellContent {
    /// What runs: the command line if there is one, else the script.
    pub fn body(&self) -> &str {
        self.command
            .as_deref()
            .or(self.script.as_deref())
            .unwrap_or_default()
    }
}

/// A PYTHON task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PythonContent {
    /// Script body.
    pub script: String,
}

/// A SQL task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqlContent {
    /// The statements.
    pub sql: String,
    /// The datasource's name (`datajump datasource add`).
    pub datasource: String,
    /// Run every statement in one transaction: all of them take effect, or
    /// none (`content: { transaction: true }`; default false, each
    /// statement on its own).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub transaction: bool,
}

/// An HTTP task (docs/DAG_FORMAT.md, "HTTP").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpContent {
    /// The URL, parameters substituted.
    pub url: String,
    /// The method (default GET).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Header names to values; a value may name secrets (`${secret:NAME}`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, HeaderText>,
    /// Text, or a JSON object or array sent as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// The statuses that mean success (default any 2xx). Also read as
    /// `successCodes`, the API's spelling.
    #[serde(
        default,
        alias = "successCodes",
        skip_serializing_if = "Option::is_none"
    )]
    pub success_codes: Option<Vec<u16>>,
    /// Seconds (default the task's timeout; 0 = none). Also
    /// `requestTimeout`.
    #[serde(
        default,
        alias = "requestTimeout",
        skip_serializing_if = "Option::is_none"
    )]
    pub request_timeout: Option<f64>,
    /// Headers to mask in logs besides the well-known credential headers.
    /// Also `secretHeaders`.
    #[serde(
        default,
        alias = "secretHeaders",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub secret_headers: Vec<String>,
}

/// A header value as a DAG may write it: text, or a number or a boolean
/// written as text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, expecting = "a header value: text, a number or true/false")]
pub enum HeaderText {
    /// Text (parameters and secrets substituted).
    Text(String),
    /// A number, sent as written.
    Number(serde_json::Number),
    /// A boolean, sent as `true` / `false`.
    Bool(bool),
}

/// A NOOP task takes no content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct NoopContent {}

/// What a task runs, by type.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskContent {
    /// SHELL.
    Shell(ShellContent),
    /// PYTHON.
    Python(PythonContent),
    /// SQL.
    Sql(SqlContent),
    /// HTTP.
    Http(HttpContent),
    /// NOOP.
    Noop(NoopContent),
}

/// Why a task's content does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ContentError(String);

impl TaskContent {
    /// The text this task runs as code once parameters are substituted (a
    /// script or SQL) and the substitution mode it takes; `None` for a type
    /// whose texts are data (HTTP) or that has none (NOOP). SQL reports
    /// PostgreSQL's dialect: the bare rule, the one that differs between
    /// trusted and untrusted values, is the same in every dialect.
    pub fn code(&self) -> Option<(&str, Mode)> {
        match self {
            TaskContent::Shell(shell) => Some((shell.body(), Mode::Script(ScriptLang::Shell))),
            TaskContent::Python(python) => {
                Some((python.script.as_str(), Mode::Script(ScriptLang::Python)))
            }
            TaskContent::Sql(sql) => Some((sql.sql.as_str(), Mode::Sql(SqlDialect::Postgres))),
            TaskContent::Http(_) | TaskContent::Noop(_) => None,
        }
    }

    /// Reads the content of a task of `task_type`, refusing keys the type
    /// does not take and values of the wrong shape, and checking what serde
    /// cannot (a SHELL task has a command or a script, an HTTP method is a
    /// method, success codes are HTTP statuses).
    pub fn parse(task_type: TaskType, content: &Value) -> Result<TaskContent, ContentError> {
        let parsed = match task_type {
            TaskType::Shell => TaskContent::Shell(read(content)?),
            TaskType::Python => TaskContent::Python(read(content)?),
            TaskType::Sql => TaskContent::Sql(read(content)?),
            TaskType::Http => TaskContent::Http(read(content)?),
            TaskType::Noop => TaskContent::Noop(read(content)?),
        };
        parsed.check()?;
        Ok(parsed)
    }

    /// The task type this content is for.
    pub fn task_type(&self) -> TaskType {
        match self {
            TaskContent::Shell(_) => TaskType::Shell,
            TaskContent::Python(_) => TaskType::Python,
            TaskContent::Sql(_) => TaskType::Sql,
            TaskContent::Http(_) => TaskType::Http,
            TaskContent::Noop(_) => TaskType::Noop,
        }
    }

    /// The stored form: the flat JSON object.
    pub fn to_json(&self) -> Value {
        let value = match self {
            TaskContent::Shell(c) => serde_json::to_value(c),
            TaskContent::Python(c) => serde_json::to_value(c),
            TaskContent::Sql(c) => serde_json::to_value(c),
            TaskContent::Http(c) => serde_json::to_value(c),
            TaskContent::Noop(c) => serde_json::to_value(c),
        };
        value.unwrap_or_else(|_| Value::Object(serde_json::Map::new()))
    }

    fn check(&self) -> Result<(), ContentError> {
        let problem = |text: String| Err(ContentError(text));
        match self {
            TaskContent::Shell(c) if c.command.is_none() && c.script.is_none() => {
                problem("a SHELL task needs 'command' or 'script'".to_owned())
            }
            TaskContent::Http(c) => {
                if let Some(method) = &c.method
                    && (method.is_empty()
                        || !method.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-'))
                {
                    return problem(format!("invalid method '{method}'"));
                }
                match &c.success_codes {
                    Some(codes) if codes.is_empty() => problem(
                        "'success_codes' is empty: list the statuses that mean success, or leave it out for any 2xx".to_owned(),
                    ),
                    Some(codes) => match codes.iter().find(|c| !(100..=599).contains(*c)) {
                        Some(code) => problem(format!(
                            "'success_codes': {code} is not an HTTP status (100-599)"
                        )),
                        None => Ok(()),
                    },
                    None => Ok(()),
                }?;
                match c.request_timeout {
                    Some(secs) if !(secs.is_finite() && secs >= 0.0) => {
                        problem("'request_timeout' must be a number of seconds".to_owned())
                    }
                    _ => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }
}

/// Deserializes one type's content, naming the key at fault.
fn read<T: serde::de::DeserializeOwned>(content: &Value) -> Result<T, ContentError> {
    let content = match content {
        Value::Null => Value::Object(serde_json::Map::new()),
        other => other.clone(),
    };
    serde_path_to_error::deserialize(content).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        ContentError(if path == "." {
            inner
        } else {
            format!("'{path}': {inner}")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_keys_are_errors() {
        let e = TaskContent::parse(
            TaskType::Http,
            &json!({ "url": "http://x", "secretHeader": ["X-Key"] }),
        )
        .expect_err("misspelt key");
        assert!(e.to_string().contains("secretHeader"), "{e}");
        assert!(
            e.to_string().contains("secret_headers"),
            "names what it takes: {e}"
        );
        let camel = TaskContent::parse(
            TaskType::Http,
            &json!({ "url": "http://x", "secretHeaders": ["X-Key"], "successCodes": [204] }),
        )
        .expect("camelCase keys");
        let TaskContent::Http(http) = camel else {
            panic!("an HTTP content")
        };
        assert_eq!(http.secret_headers, ["X-Key"]);
        assert_eq!(http.success_codes, Some(vec![204]));
        assert!(TaskContent::parse(TaskType::Noop, &json!({ "x": 1 })).is_err());
    }

    #[test]
    fn each_type_reads_its_content_and_writes_it_back() {
        for (task_type, content) in [
            (TaskType::Shell, json!({ "command": "true" })),
            (TaskType::Python, json!({ "script": "print(1)" })),
            (
                TaskType::Sql,
                json!({ "sql": "select 1", "datasource": "dw" }),
            ),
            (
                TaskType::Http,
                json!({ "url": "http://x", "method": "post", "headers": { "X-N": 1, "X-T": "a" },
                        "body": { "a": 1 }, "success_codes": [200], "request_timeout": 2.5,
                        "secret_headers": ["X-T"] }),
            ),
            (TaskType::Noop, json!({})),
        ] {
            let parsed = TaskContent::parse(task_type, &content).expect("reads");
            assert_eq!(parsed.task_type(), task_type);
            assert_eq!(parsed.to_json(), content, "{task_type}");
        }
    }

    #[test]
    fn shapes_serde_cannot_check() {
        for (task_type, content, expected) in [
            (TaskType::Shell, json!({}), "needs 'command' or 'script'"),
            (TaskType::Sql, json!({ "sql": "x" }), "datasource"),
            (
                TaskType::Http,
                json!({ "url": "u", "success_codes": [] }),
                "is empty",
            ),
            (
                TaskType::Http,
                json!({ "url": "u", "success_codes": [42] }),
                "not an HTTP status",
            ),
            (
                TaskType::Http,
                json!({ "url": "u", "method": "GE T" }),
                "invalid method",
            ),
            (
                TaskType::Http,
                json!({ "url": "u", "headers": { "h": [1] } }),
                "headers",
            ),
        ] {
            let e = TaskContent::parse(task_type, &content).expect_err("refused");
            assert!(e.to_string().contains(expected), "{e}");
        }
    }

    #[test]
    fn types_read_in_any_case() {
        assert_eq!(TaskType::parse("shell"), Some(TaskType::Shell));
        assert_eq!(TaskType::parse("Http"), Some(TaskType::Http));
        assert_eq!(TaskType::parse("SPARK"), None);
    }
}
