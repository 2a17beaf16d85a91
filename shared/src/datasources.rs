//! The catalog of datasources: the named database connections SQL tasks run
//! against (`datajump datasource add/list/remove`, the SQL executor).
//!
//! The shaping decision: **a datasource's password is a secret that only two
//! places ever see in the clear**, the `datasource` row and the connection
//! the SQL executor opens when a task starts. Tasks name a datasource; the
//! runner reads the row by that name, so no password travels in a message.
//! Every type here that holds one ([`NewDatasource`], [`ConnectionUrl`],
//! the entity's `Model`) prints `***` in its place, and [`redact`] masks it in
//! any text (a driver's error message) that might echo it back.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use percent_encoding::{AsciiSet, CONTROLS, NON_ALPHANUMERIC, utf8_percent_encode};
use sea_orm::DbErr;
use thiserror::Error;

use crate::entities::datasource::Model;
use crate::kinds::DatasourceKind;
use crate::params::SqlDialect;

/// What a masked secret looks like wherever it would have been printed.
pub const MASK: &str = "***";

/// The longest datasource name.
pub const MAX_NAME_LEN: usize = 128;

// How a kind connects and quotes is the catalog's; its stored names are
// `crate::kinds`'s, which `entities` imports.
impl DatasourceKind {
    /// The quoting rules of parameters substituted into this kind's SQL.
    pub fn dialect(self) -> SqlDialect {
        match self {
            DatasourceKind::Postgresql => SqlDialect::Postgres,
            DatasourceKind::Mysql => SqlDialect::MySql,
            DatasourceKind::Sqlite => SqlDialect::Sqlite,
        }
    }

    fn scheme(self) -> &'static str {
        match self {
            DatasourceKind::Postgresql => "postgres",
            DatasourceKind::Mysql => "mysql",
            DatasourceKind::Sqlite => "sqlite",
        }
    }
}

impl FromStr for DatasourceKind {
    type Err = DatasourceError;

    /// Any case; `postgres` and `mariadb` are accepted as aliases.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.to_ascii_uppercase().as_str() {
            "POSTGRESQL" | "POSTGRES" => Ok(DatasourceKind::Postgresql),
            "MYSQL" | "MARIADB" => Ok(DatasourceKind::Mysql),
            "SQLITE" => Ok(DatasourceKind::Sqlite),
            _ => Err(DatasourceError::UnknownKind(text.to_owned())),
        }
    }
}

/// Why a datasource could not be stored, found or used.
#[derive(Debug, Error)]
pub enum DatasourceError {
    /// The database failed.
    #[error("database error: {0}")]
    Db(#[from] DbErr),
    /// `add` with a name that is taken.
    #[error("a datasource named '{0}' already exists (remove it first to replace it)")]
    Exists(String),
    /// No datasource has that name.
    #[error("no datasource named '{0}'")]
    NotFound(String),
    /// A name outside `[A-Za-z0-9_.-]{1,128}`.
    #[error(
        "invalid datasource name '{0}': use 1-128 characters from letters, digits, '_', '-' and '.'"
    )]
    InvalidName(String),
    /// A kind other than POSTGRESQL, MYSQL or SQLITE.
    #[error("unknown datasource kind '{0}': expected POSTGRESQL, MYSQL or SQLITE")]
    UnknownKind(String),
    /// A setting that does not fit the kind (a port for SQLite, no host).
    #[error("invalid datasource '{name}': {reason}")]
    Invalid {
        /// The datasource's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
}

/// A datasource to be added. Its `Debug` shows `***` for the password.
#[derive(Clone, PartialEq)]
pub struct NewDatasource {
    /// Unique name tasks refer to: `[A-Za-z0-9_.-]{1,128}`.
    pub name: String,
    /// The database product.
    pub kind: DatasourceKind,
    /// Host name or address; for SQLite, the database file's path.
    pub host: String,
    /// Port; the product's default when `None`. Not for SQLite.
    pub port: Option<u16>,
    /// Database name. Not for SQLite.
    pub database: Option<String>,
    /// User name. Not for SQLite.
    pub username: Option<String>,
    /// Password (secret). Not for SQLite.
    pub password: Option<String>,
    /// Extra connection parameters appended to the URL's query, e.g.
    /// `sslmode=require`; for SQLite `mode=ro` opens the file read-only.
    pub params: BTreeMap<String, String>,
}

impl fmt::Debug for NewDatasource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewDatasource")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("database", &self.database)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| MASK))
            .field("params", &self.params)
            .finish()
    }
}

fn is_valid_name(name: &str) -> bool {
    (1..=MAX_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

impl NewDatasource {
    /// The row this would be stored as, its password in clear, for
    /// trying the connection before anything is stored.
    pub fn trial_model(&self, project_id: i64) -> Model {
        let now = chrono::Utc::now();
        Model {
            id: 0,
            name: self.name.clone(),
            kind: self.kind,
            host: self.host.clone(),
            port: self.port.map(i32::from),
            database: self.database.clone(),
            username: self.username.clone(),
            password: self.password.clone(),
            params: serde_json::Value::Object(
                self.params
                    .iter()
                    .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                    .collect(),
            ),
            created_at: now,
            updated_at: now,
            project_id,
        }
    }

    /// Checks the settings against the kind.
    pub fn validate(&self) -> Result<(), DatasourceError> {
        if !is_valid_name(&self.name) {
            return Err(DatasourceError::InvalidName(self.name.clone()));
        }
        let invalid = |reason: &str| DatasourceError::Invalid {
            name: self.name.clone(),
            reason: reason.to_owned(),
        };
        if self.host.trim().is_empty() {
            return Err(invalid(match self.kind {
                DatasourceKind::Sqlite => {
                    "a SQLite datasource needs the database file's path as its host"
                }
                _ => "a host is required",
            }));
        }
        if self.kind == DatasourceKind::Sqlite
            && (self.port.is_some()
                || self.database.is_some()
                || self.username.is_some()
                || self.password.is_some())
        {
            return Err(invalid(
                "a SQLite datasource is a file path (its host) and takes no port, database, user or password",
            ));
        }
        if self.params.keys().any(|k| k.is_empty()) {
            return Err(invalid("a connection parameter needs a name"));
        }
        Ok(())
    }
}

/// A connection URL with a password in it. `Display` and `Debug` show
/// `***` for the password; [`ConnectionUrl::expose`] gives the real URL,
/// for the driver only.
#[derive(Clone, PartialEq, Eq)]
pub struct ConnectionUrl {
    url: String,
    masked: String,
}

impl ConnectionUrl {
    /// The URL with its password, to hand to the driver and nowhere else.
    pub fn expose(&self) -> &str {
        &self.url
    }
}

impl fmt::Display for ConnectionUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.masked)
    }
}

impl fmt::Debug for ConnectionUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ConnectionUrl").field(&self.masked).finish()
    }
}

/// Percent-encoding for a user, password, database or parameter: all but
/// RFC 3986's unreserved characters.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encoding for a SQLite file path: what the driver decodes or
/// splits on.
const PATH: &AsciiSet = &CONTROLS.add(b'%').add(b'?').add(b'#');

/// The URL that connects to `model`: `postgres://user:pass@host:port/db`,
/// `mysql://…` or `sqlite://path?mode=rw`, with user, password, database and
/// parameters percent-encoded and the stored params as the query. A SQLite
/// file is opened read-write but never created (a mistyped path fails
/// instead of making an empty database); `params.mode = "ro"` makes it
/// read-only.
pub fn connection_url(model: &Model) -> Result<ConnectionUrl, DatasourceError> {
    let kind = model.kind;
    let enc = |text: &str| utf8_percent_encode(text, COMPONENT).to_string();
    let mut query: Vec<(String, String)> = match &model.params {
        serde_json::Value::Object(map) => map
            .iter()
            .map(|(k, v)| {
                let value = match v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), value)
            })
            .collect(),
        _ => Vec::new(),
    };
    if kind == DatasourceKind::Sqlite && !query.iter().any(|(k, _)| k == "mode") {
        query.insert(0, ("mode".to_owned(), "rw".to_owned()));
    }
    let build = |password: Option<&str>| -> String {
        let mut url = format!("{}://", kind.scheme());
        if kind == DatasourceKind::Sqlite {
            url.push_str(&utf8_percent_encode(&model.host, PATH).to_string());
        } else {
            if let Some(user) = model.username.as_deref().filter(|u| !u.is_empty()) {
                url.push_str(&enc(user));
                if let Some(password) = password {
                    url.push(':');
                    url.push_str(password);
                }
                url.push('@');
            }
            // An IPv6 address needs brackets in a URL.
            if model.host.contains(':') && !model.host.starts_with('[') {
                url.push('[');
                url.push_str(&model.host);
                url.push(']');
            } else {
                url.push_str(&model.host);
            }
            if let Some(port) = model.port {
                url.push_str(&format!(":{port}"));
            }
            if let Some(database) = model.database.as_deref().filter(|d| !d.is_empty()) {
                url.push('/');
                url.push_str(&enc(database));
            }
        }
        if !query.is_empty() {
            let pairs: Vec<String> = query
                .iter()
                .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
                .collect();
            url.push('?');
            url.push_str(&pairs.join("&"));
        }
        url
    };
    let password = model
        .password
        .as_deref()
        .filter(|p| !p.is_empty() && kind != DatasourceKind::Sqlite);
    Ok(ConnectionUrl {
        url: build(password.map(enc).as_deref()),
        masked: build(password.map(|_| MASK)),
    })
}

/// `text` with `model`'s password (as written and percent-encoded) replaced
/// by `***`: for driver messages passed on to logs and users.
pub fn redact(model: &Model, text: &str) -> String {
    let Some(password) = model.password.as_deref().filter(|p| !p.is_empty()) else {
        return text.to_owned();
    };
    let encoded = utf8_percent_encode(password, COMPONENT).to_string();
    let mut out = text.replace(password, MASK);
    if encoded != password {
        out = out.replace(&encoded, MASK);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(kind: &str, host: &str) -> Model {
        let kind = kind.parse().expect("a kind");
        Model {
            id: 1,
            name: "ds".to_owned(),
            kind,
            host: host.to_owned(),
            port: None,
            database: None,
            username: None,
            password: None,
            params: serde_json::json!({}),
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
            project_id: crate::dag_file::DEFAULT_PROJECT,
        }
    }

    #[test]
    fn postgres_url_encodes_user_and_password_and_masks_display() {
        let mut m = model("POSTGRESQL", "db.example");
        m.port = Some(5432);
        m.database = Some("ware_house 1".to_owned());
        m.username = Some("etl@corp".to_owned());
        m.password = Some("p@ss:w/rd%".to_owned());
        m.params = serde_json::json!({"sslmode": "require"});
        let url = connection_url(&m).unwrap();
        assert_eq!(
            url.expose(),
            "postgres://etl%40corp:p%40ss%3Aw%2Frd%25@db.example:5432/ware_house%201?sslmode=require"
        );
        assert_eq!(
            url.to_string(),
            "postgres://etl%40corp:***@db.example:5432/ware_house%201?sslmode=require"
        );
        assert!(!format!("{url:?}").contains("p%40ss"));
    }

    #[test]
    fn mysql_url_without_password_or_port() {
        let mut m = model("MYSQL", "127.0.0.1");
        m.username = Some("root".to_owned());
        m.database = Some("test".to_owned());
        assert_eq!(
            connection_url(&m).unwrap().expose(),
            "mysql://root@127.0.0.1/test"
        );
    }

    #[test]
    fn ipv6_host_is_bracketed() {
        let mut m = model("POSTGRESQL", "::1");
        m.port = Some(5433);
        assert_eq!(
            connection_url(&m).unwrap().expose(),
            "postgres://[::1]:5433"
        );
    }

    #[test]
    fn sqlite_url_is_read_write_unless_told_and_escapes_the_path() {
        let m = model("SQLITE", "/data/a?b#c%.db");
        assert_eq!(
            connection_url(&m).unwrap().expose(),
            "sqlite:///data/a%3Fb%23c%25.db?mode=rw"
        );
        let mut ro = model("SQLITE", "/data/x.db");
        ro.params = serde_json::json!({"mode": "ro"});
        assert_eq!(
            connection_url(&ro).unwrap().expose(),
            "sqlite:///data/x.db?mode=ro"
        );
    }

    #[test]
    fn kinds_parse_in_any_case_with_aliases() {
        assert_eq!(
            "postgresql".parse::<DatasourceKind>().unwrap(),
            DatasourceKind::Postgresql
        );
        assert_eq!(
            "Postgres".parse::<DatasourceKind>().unwrap(),
            DatasourceKind::Postgresql
        );
        assert_eq!(
            "mariadb".parse::<DatasourceKind>().unwrap(),
            DatasourceKind::Mysql
        );
        assert_eq!(
            "SQLite".parse::<DatasourceKind>().unwrap(),
            DatasourceKind::Sqlite
        );
        assert!("oracle".parse::<DatasourceKind>().is_err());
        for kind in DatasourceKind::ALL {
            assert_eq!(kind.as_str().parse::<DatasourceKind>().unwrap(), kind);
        }
    }

    fn new(kind: DatasourceKind) -> NewDatasource {
        NewDatasource {
            name: "warehouse".to_owned(),
            kind,
            host: "localhost".to_owned(),
            port: None,
            database: None,
            username: None,
            password: None,
            params: BTreeMap::new(),
        }
    }

    #[test]
    fn validation() {
        assert!(new(DatasourceKind::Postgresql).validate().is_ok());
        for bad in ["", "a b", "a/b", &"x".repeat(129)] {
            let mut n = new(DatasourceKind::Mysql);
            n.name = bad.to_owned();
            assert!(
                matches!(n.validate(), Err(DatasourceError::InvalidName(_))),
                "{bad:?}"
            );
        }
        let mut no_host = new(DatasourceKind::Postgresql);
        no_host.host = " ".to_owned();
        assert!(no_host.validate().is_err());
        let mut sqlite_port = new(DatasourceKind::Sqlite);
        sqlite_port.port = Some(1);
        assert!(sqlite_port.validate().is_err());
    }

    #[test]
    fn debug_never_shows_the_password() {
        let mut n = new(DatasourceKind::Postgresql);
        n.password = Some("hunter2".to_owned());
        let text = format!("{n:?}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains(MASK));
    }

    #[test]
    fn redact_masks_plain_and_encoded_password() {
        let mut m = model("POSTGRESQL", "h");
        m.password = Some("s3cr:t".to_owned());
        assert_eq!(
            redact(&m, "failed for s3cr:t at postgres://u:s3cr%3At@h"),
            "failed for *** at postgres://u:***@h"
        );
        m.password = None;
        assert_eq!(redact(&m, "as is"), "as is");
    }
}
