//! Connecting to the database, the same way in every role.
//!
//! SQLite needs three settings SeaORM does not make (deps.md §4): WAL, a real
//! pool (SeaORM defaults SQLite to one connection) and IMMEDIATE write
//! transactions, because a deferred transaction that reads and then writes
//! fails at once with "database is locked" when another writer got there
//! first. [`begin_write`] is the one way to open a write transaction.

use std::time::Duration;

use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
use sea_orm::{
    ConnectOptions, Database, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr,
    SqliteTransactionMode, TransactionOptions, TransactionTrait,
};

/// Default database: a SQLite file in the working directory.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://datajump.db?mode=rwc";

/// Connects to `url` (`sqlite://…` or `postgres://…`) with DataJump's pool settings.
pub async fn connect(url: &str) -> Result<DatabaseConnection, DbErr> {
    let mut options = ConnectOptions::new(url.to_owned());
    options
        .max_connections(if url.starts_with("sqlite") { 8 } else { 16 })
        .min_connections(1)
        .acquire_timeout(Duration::from_secs(30))
        .sqlx_logging(false)
        .map_sqlx_sqlite_opts(|o| {
            o.journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(Duration::from_secs(30))
        });
    Database::connect(options).await
}

/// Opens a transaction that will write: IMMEDIATE on SQLite, the default
/// (READ COMMITTED) on PostgreSQL.
pub async fn begin_write(db: &DatabaseConnection) -> Result<DatabaseTransaction, DbErr> {
    let sqlite_transaction_mode = (db.get_database_backend() == DbBackend::Sqlite)
        .then_some(SqliteTransactionMode::Immediate);
    db.begin_with_options(TransactionOptions {
        sqlite_transaction_mode,
        ..Default::default()
    })
    .await
}

/// Tells a transient database error (worth a retry or NAK) from one that
/// will fail again however often it is retried.
pub fn is_transient(err: &DbErr) -> bool {
    matches!(err, DbErr::Conn(_) | DbErr::ConnectionAcquire(_))
}
