//! Connecting to the database, the same way in every role.
//!
//! SQLite needs three settings SeaORM does not make: WAL, a real
//! pool (SeaORM defaults SQLite to one connection) and IMMEDIATE write
//! transactions, because a deferred transaction that reads and then writes
//! fails at once with "database is locked" when another writer got there
//! first. [`begin_write`] is the one way to open a write transaction; on
//! SQLite it also queues the process's writers on one lock, so they never
//! poll SQLite's lock with sleeps, and runs them all on one connection of
//! their own, whose page cache and prepared statements stay warm.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use sea_orm::sea_query::{CaseStatement, Expr, Value};
use sea_orm::sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};
use sea_orm::{
    ColumnTrait, ConnectOptions, ConnectionTrait, Database, DatabaseConnection,
    DatabaseTransaction, DbBackend, DbErr, ExecResult, QueryResult, SqliteTransactionMode,
    SqlxSqliteConnector, Statement, TransactionOptions, TransactionTrait,
};

/// The SQLite file a data folder holds when no database URL is given.
pub const DEFAULT_SQLITE_FILE: &str = "datajump.db";

/// A URL DataJump can keep its own state at, parsed once: a SQLite file
/// (`sqlite://FILE?mode=rwc`, `sqlite::memory:`) or a PostgreSQL database
/// (`postgres://USER[:PASSWORD]@HOST[:PORT]/DB`).
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl {
    url: String,
    sqlite_file: Option<PathBuf>,
}

/// Why a database URL cannot hold DataJump's state.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DatabaseUrlError {
    /// A scheme other than sqlite and postgres.
    #[error(
        "'{scheme}://' cannot hold DataJump's own state: use sqlite://FILE?mode=rwc or \
         postgres://USER@HOST/DB (MySQL and MariaDB are for SQL tasks' datasources: \
         `datajump datasource add`)"
    )]
    Unsupported {
        /// The scheme given.
        scheme: String,
    },
    /// Not a URL at all.
    #[error("'{0}' is not a database URL: use sqlite://FILE?mode=rwc or postgres://USER@HOST/DB")]
    NotAUrl(String),
}

impl DatabaseUrl {
    /// Checks `text`.
    pub fn parse(text: &str) -> Result<DatabaseUrl, DatabaseUrlError> {
        let text = text.trim();
        let Some((scheme, rest)) = text.split_once(':') else {
            return Err(DatabaseUrlError::NotAUrl(text.to_owned()));
        };
        match scheme {
            "sqlite" => {
                let path = rest.trim_start_matches("//");
                let path = path.split_once('?').map_or(path, |(path, _)| path);
                let sqlite_file =
                    (!path.is_empty() && path != ":memory:").then(|| PathBuf::from(path));
                Ok(DatabaseUrl {
                    url: text.to_owned(),
                    sqlite_file,
                })
            }
            "postgres" | "postgresql" => Ok(DatabaseUrl {
                url: text.to_owned(),
                sqlite_file: None,
            }),
            _ if rest.starts_with("//") => Err(DatabaseUrlError::Unsupported {
                scheme: scheme.to_owned(),
            }),
            _ => Err(DatabaseUrlError::NotAUrl(text.to_owned())),
        }
    }

    /// The SQLite file `dir` holds by default, created when first opened.
    pub fn default_in(dir: &Path) -> DatabaseUrl {
        let file = dir.join(DEFAULT_SQLITE_FILE);
        DatabaseUrl {
            url: format!("sqlite://{}?mode=rwc", file.display()),
            sqlite_file: Some(file),
        }
    }

    /// The URL as given, for connecting.
    pub fn as_str(&self) -> &str {
        &self.url
    }

    /// The SQLite file, if it is one (not an in-memory database).
    pub fn sqlite_file(&self) -> Option<&Path> {
        self.sqlite_file.as_deref()
    }

    /// The URL with its password, if any, written `***`: for messages.
    pub fn redacted(&self) -> String {
        let Some((scheme, rest)) = self.url.split_once("://") else {
            return self.url.clone();
        };
        let authority_end = rest.find('/').unwrap_or(rest.len());
        match rest[..authority_end].rfind('@') {
            Some(at) => match rest[..at].split_once(':') {
                Some((user, _password)) => format!("{scheme}://{user}:***{}", &rest[at..]),
                None => self.url.clone(),
            },
            None => self.url.clone(),
        }
    }
}

impl std::fmt::Display for DatabaseUrl {
    /// The redacted form: a URL is printed only that way.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DatabaseUrl({})", self.redacted())
    }
}

/// What every SQLite connection of DataJump's is opened with: WAL, so
/// readers never wait for the writer; `NORMAL` sync, which in WAL mode
/// keeps every commit through a crash of the process and never corrupts
/// the file (only a power cut may lose the last commits); and a busy wait
/// long enough to cover another process's write transaction.
fn sqlite_settings(options: SqliteConnectOptions) -> SqliteConnectOptions {
    options
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(30))
}

/// Connects to `url` (`sqlite://…` or `postgres://…`) with DataJump's pool settings.
pub async fn connect(url: &str) -> Result<DatabaseConnection, DbErr> {
    let mut options = ConnectOptions::new(url.to_owned());
    options
        .max_connections(if url.starts_with("sqlite") { 8 } else { 16 })
        // Opened at start, not when load first needs them: a PostgreSQL
        // connection to a database no backend has used yet takes ~100 ms
        // (its catalog cache is built), which a task edge would otherwise pay.
        .min_connections(4)
        .acquire_timeout(Duration::from_secs(30))
        .sqlx_logging(false)
        .map_sqlx_sqlite_opts(sqlite_settings);
    Database::connect(options).await
}

/// One connection to the database at `url`, with [`connect`]'s settings and
/// no pool to warm: for work that must see no other connection of this
/// process, such as migrating. A pool's connections opened while another
/// connection altered the schema can read a column the migration added as
/// NULL on SQLite, so migrations run on this one, closed before the pool
/// opens ([`connect_migrated`]).
async fn connect_one(url: &str) -> Result<DatabaseConnection, DbErr> {
    let mut options = ConnectOptions::new(url.to_owned());
    options
        .max_connections(1)
        .min_connections(0)
        // A database that does not answer is reported within this.
        .connect_timeout(Duration::from_secs(10))
        .acquire_timeout(Duration::from_secs(10))
        .sqlx_logging(false)
        .map_sqlx_sqlite_opts(sqlite_settings);
    Database::connect(options).await
}

/// The database at `url` after `migrate` ran on a connection of its own,
/// closed before the pool opens, and what `migrate` returned. A pool
/// warms its connections in the background; one opened while a migration
/// altered a table can read a column the migration added as NULL (seen on
/// SQLite in about one start in fifty under load), so no pooled
/// connection may exist before the schema is final.
pub async fn connect_migrated<T>(
    url: &str,
    migrate: impl AsyncFnOnce(&DatabaseConnection) -> Result<T, DbErr>,
) -> Result<(DatabaseConnection, T), DbErr> {
    let one = connect_one(url).await?;
    let migrated = migrate(&one).await;
    one.close().await?;
    let migrated = migrated?;
    Ok((connect(url).await?, migrated))
}

/// Serializes this process's SQLite write transactions. SQLite lets one
/// writer in at a time and makes the others poll with sleeps of 1, 2, 5,
/// 10 … ms (its busy handler), so a dozen concurrent writers spent more time
/// asleep than writing: strace of a wide200 bench counted thousands of
/// those sleeps. Queued on this lock instead, the next writer starts the
/// moment the last one commits. Every role of `datajump up` (and of the
/// bench) runs in one process, so one lock covers all of them; writers in
/// other processes still meet SQLite's busy handler.
static SQLITE_WRITE_GATE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A write transaction from [`begin_write`]. On SQLite it holds the
/// process's write gate until it commits, rolls back or is dropped.
pub struct WriteTxn {
    // Declared before the gate, so a dropped transaction rolls back first.
    txn: DatabaseTransaction,
    _gate: Option<tokio::sync::MutexGuard<'static, ()>>,
}

impl WriteTxn {
    /// Commits, then lets the next writer in.
    pub async fn commit(self) -> Result<(), DbErr> {
        self.txn.commit().await
    }

    /// Rolls back, then lets the next writer in.
    pub async fn rollback(self) -> Result<(), DbErr> {
        self.txn.rollback().await
    }
}

impl std::ops::Deref for WriteTxn {
    type Target = DatabaseTransaction;

    fn deref(&self) -> &DatabaseTransaction {
        &self.txn
    }
}

#[async_trait::async_trait]
impl ConnectionTrait for WriteTxn {
    fn get_database_backend(&self) -> DbBackend {
        self.txn.get_database_backend()
    }

    async fn execute_raw(&self, stmt: Statement) -> Result<ExecResult, DbErr> {
        self.txn.execute_raw(stmt).await
    }

    async fn execute_unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        self.txn.execute_unprepared(sql).await
    }

    async fn query_one_raw(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr> {
        self.txn.query_one_raw(stmt).await
    }

    async fn query_all_raw(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        self.txn.query_all_raw(stmt).await
    }
}

/// Opens a transaction that will write: on SQLite IMMEDIATE, behind the
/// process's write gate and on the file's [`sqlite_writer`]; on PostgreSQL
/// the default (READ COMMITTED) on a pooled connection.
pub async fn begin_write(db: &DatabaseConnection) -> Result<WriteTxn, DbErr> {
    if db.get_database_backend() != DbBackend::Sqlite {
        let txn = db.begin().await?;
        return Ok(WriteTxn { txn, _gate: None });
    }
    let gate = SQLITE_WRITE_GATE.lock().await;
    let txn = sqlite_writer(db)
        .begin_with_options(TransactionOptions {
            sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
            ..Default::default()
        })
        .await?;
    Ok(WriteTxn {
        txn,
        _gate: Some(gate),
    })
}

/// How long the writer's connection stays open with nothing to write.
const SQLITE_WRITER_IDLE: Duration = Duration::from_secs(60);

/// The connection this process writes the SQLite file of `db` on: a pool
/// of one with `db`'s settings, opened when first needed and closed after
/// [`SQLITE_WRITER_IDLE`] without writes. SQLite has one writer at a time
/// anyway, and on one connection the writer's work stays warm: a connection
/// that another one wrote after must reread the pages it had cached, and
/// each connection prepares each statement for itself, so write
/// transactions spread over the pool paid both again and again (a third of
/// a runner's statement time under load, docs/BENCHMARKS.md). One writer
/// per pool, found by the pool's connect options and never used once they
/// are gone (dropped when the next writer is made), so a file deleted and
/// created again is never written through a connection to the old one.
fn sqlite_writer(db: &DatabaseConnection) -> DatabaseConnection {
    type Writers = BTreeMap<usize, (Weak<SqliteConnectOptions>, DatabaseConnection)>;
    static WRITERS: std::sync::Mutex<Writers> = std::sync::Mutex::new(BTreeMap::new());
    let options = db.get_sqlite_connection_pool().connect_options();
    let key = Arc::as_ptr(&options) as usize;
    let mut writers = WRITERS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // A live owner at this address is this pool's options: an address is
    // reused only once its allocation is gone.
    if let Some((owner, writer)) = writers.get(&key)
        && owner.strong_count() > 0
    {
        return writer.clone();
    }
    writers.retain(|_, (owner, _)| owner.strong_count() > 0);
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .min_connections(0)
        .idle_timeout(SQLITE_WRITER_IDLE)
        // Only the gate's holder asks, so nobody ever waits here; and a
        // ping would be one more round trip to the connection's thread in
        // every transaction.
        .test_before_acquire(false)
        .acquire_timeout(Duration::from_secs(30))
        .connect_lazy_with((*options).clone());
    let writer = SqlxSqliteConnector::from_sqlx_sqlite_pool(pool);
    writers.insert(key, (Arc::downgrade(&options), writer.clone()));
    writer
}

/// A column's new value per row in a set-based UPDATE, keyed by `key`:
/// `CASE WHEN key = k1 THEN v1 … ELSE otherwise END`. `values` must not be
/// empty. With `otherwise` set to `None` the caller promises `values` names
/// every row the statement changes; then one value shared by all of them
/// (the common case) is written as itself, a shorter statement.
pub fn per_row<K, V>(key: K, mut values: Vec<(i64, V)>, otherwise: Option<Expr>) -> Expr
where
    K: ColumnTrait,
    V: Into<Value> + PartialEq,
{
    if otherwise.is_none()
        && values.windows(2).all(|pair| pair[0].1 == pair[1].1)
        && let Some((_, shared)) = values.pop()
    {
        return Expr::value(shared);
    }
    let case = values
        .into_iter()
        .fold(CaseStatement::new(), |case, (k, v)| {
            case.case(key.eq(k), Expr::value(v))
        });
    match otherwise {
        Some(otherwise) => case.finally(otherwise).into(),
        None => case.into(),
    }
}

/// Tells a transient database error (worth a retry or NAK) from one that
/// will fail again however often it is retried.
pub fn is_transient(err: &DbErr) -> bool {
    matches!(err, DbErr::Conn(_) | DbErr::ConnectionAcquire(_))
}

/// Whether PostgreSQL rolled the transaction back as a deadlock's victim
/// (SQLSTATE 40P01): it changed nothing, and running it again may succeed.
pub fn is_deadlock(err: &DbErr) -> bool {
    match err {
        DbErr::Query(sea_orm::RuntimeErr::SqlxError(e))
        | DbErr::Exec(sea_orm::RuntimeErr::SqlxError(e)) => e
            .as_database_error()
            .and_then(|db| db.code())
            .is_some_and(|code| code == "40P01"),
        _ => false,
    }
}

/// Whether the database refused the values a statement carries rather
/// than the statement's moment: a date it cannot store, text longer than
/// its column, a value it cannot read (PostgreSQL's SQLSTATE class 22,
/// "data exception"; SQLite's TOOBIG, MISMATCH and RANGE), or a value the
/// driver could not encode. The same statement fails again however often
/// it is retried, so a message that leads to one ends instead of coming
/// back (docs/SECURITY.md, "Sizes and dates").
pub fn is_data_error(err: &DbErr) -> bool {
    match err {
        DbErr::Query(sea_orm::RuntimeErr::SqlxError(e))
        | DbErr::Exec(sea_orm::RuntimeErr::SqlxError(e)) => {
            matches!(**e, sea_orm::SqlxError::Encode(_))
                || e.as_database_error()
                    .and_then(|db| db.code())
                    // A SQLSTATE is five characters; SQLite's codes are
                    // numbers, the primary ones below 256.
                    .is_some_and(|code| {
                        if code.len() == 5 {
                            code.starts_with("22")
                        } else {
                            matches!(code.as_ref(), "18" | "20" | "25")
                        }
                    })
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_urls_are_checked_and_printed_without_passwords() {
        let lite = DatabaseUrl::parse("sqlite://data/dj.db?mode=rwc").expect("sqlite");
        assert_eq!(lite.sqlite_file(), Some(Path::new("data/dj.db")));
        assert_eq!(
            DatabaseUrl::parse("sqlite:///var/dj.db")
                .expect("absolute")
                .sqlite_file(),
            Some(Path::new("/var/dj.db"))
        );
        assert_eq!(
            DatabaseUrl::parse("sqlite::memory:")
                .expect("memory")
                .sqlite_file(),
            None
        );
        let pg = DatabaseUrl::parse("postgres://etl:hunter2@db1:5432/dj").expect("postgres");
        assert_eq!(pg.to_string(), "postgres://etl:***@db1:5432/dj");
        assert_eq!(
            DatabaseUrl::parse("postgres://etl@db1/dj")
                .expect("no password")
                .to_string(),
            "postgres://etl@db1/dj"
        );
        assert!(matches!(
            DatabaseUrl::parse("mysql://root@127.0.0.1/dj"),
            Err(DatabaseUrlError::Unsupported { scheme }) if scheme == "mysql"
        ));
        assert!(DatabaseUrl::parse("datajump.db").is_err());
    }
}
