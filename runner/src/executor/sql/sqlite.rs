//! What a SQLite datasource may not do.
//!
//! SQLite is a library: a SQL task or sensor on a SQLite datasource runs
//! inside the runner process, with the runner's rights over every file the
//! runner can open, not the task user's. So before it connects, the runner
//! checks what it is about to open (docs/SECURITY.md, "Datasources"):
//!
//! - **Only the datasource's own file.** SQLite is built with
//!   `SQLITE_MAX_ATTACHED=0` (`.cargo/config.toml`), so `ATTACH` fails in
//!   SQLite itself, however the statement is spelled; a runner built
//!   without it refuses SQLite datasources ([`attach_is_disabled`]) rather
//!   than run them open. The statements that reach other files without
//!   `ATTACH` (`VACUUM INTO`, `load_extension`, the directory pragmas) are
//!   refused by name ([`refusal`]).
//! - **Not DataJump's own database**, however the path reaches it (a
//!   symbolic or hard link, another spelling): the file is compared by
//!   device and inode with the scheduler's database file.
//! - **Only what the task user could open.** With `--task-user`, the task
//!   user must be able to read the file (and write it, unless the
//!   datasource is read-only), as the kernel answers for that user.

use std::path::{Path, PathBuf};

use datajump_shared::entities::datasource;
use datajump_shared::params::SqlDialect;
use sea_orm::{ConnectionTrait, DatabaseBackend, DatabaseConnection, Statement};
use tokio::sync::OnceCell;

use super::split::names;
use crate::executor::task_process::{Access, TaskProcess};

/// Why a statement may not run on a SQLite datasource, if it may not.
pub(super) fn refusal(statement: &str) -> Option<&'static str> {
    let names = names(statement, SqlDialect::Sqlite);
    let is = |name: &str, keyword: &str| name.eq_ignore_ascii_case(keyword);
    if names.iter().any(|name| is(name, "load_extension")) {
        return Some(
            "load_extension() is not allowed on a SQLite datasource: it would load code into \
             the runner",
        );
    }
    // `EXPLAIN` and `EXPLAIN QUERY PLAN` only describe the statement, but
    // a description of a refused one is refused too, to keep the rule short.
    let mut words = names
        .iter()
        .skip_while(|name| is(name, "EXPLAIN") || is(name, "QUERY") || is(name, "PLAN"));
    let first = words.next()?;
    if is(first, "ATTACH") || is(first, "DETACH") {
        return Some(
            "ATTACH and DETACH are not allowed on a SQLite datasource: a task works on its \
             datasource's file only (add another datasource for another file)",
        );
    }
    if is(first, "VACUUM") && words.clone().any(|name| is(name, "INTO")) {
        return Some(
            "VACUUM INTO is not allowed on a SQLite datasource: it writes a file other than the \
             datasource's (plain VACUUM is allowed)",
        );
    }
    if is(first, "PRAGMA")
        && words.any(|name| {
            name.rsplit('.').next().is_some_and(|pragma| {
                is(pragma, "temp_store_directory") || is(pragma, "data_store_directory")
            })
        })
    {
        return Some(
            "PRAGMA temp_store_directory and data_store_directory are not allowed on a SQLite \
             datasource: they point SQLite at other folders",
        );
    }
    None
}

/// Whether this build's SQLite refuses `ATTACH` (see the module's docs),
/// asked once per process of an in-memory database.
pub(super) async fn attach_is_disabled() -> bool {
    static DISABLED: OnceCell<bool> = OnceCell::const_new();
    *DISABLED
        .get_or_init(|| async {
            use sea_orm::sqlx::{Connection, Executor, SqliteConnection};
            let Ok(mut probe) = SqliteConnection::connect("sqlite::memory:").await else {
                return false;
            };
            let attached = probe.execute("ATTACH DATABASE ':memory:' AS probe").await;
            let _ = probe.close().await;
            attached.is_err()
        })
        .await
}

/// Why the runner may not open the SQLite datasource `source` for a task
/// whose scheduler database is `own` and whose processes start as
/// `process` says, if it may not.
pub(super) async fn file_problem(
    source: &datasource::Model,
    own: &DatabaseConnection,
    process: &TaskProcess,
) -> Option<String> {
    let name = &source.name;
    if !attach_is_disabled().await {
        return Some(format!(
            "datasource '{name}': this runner's SQLite allows ATTACH, so a SQLite task could open \
             any file the runner can (build DataJump from its repository, whose .cargo/config.toml \
             sets SQLITE_MAX_ATTACHED=0)"
        ));
    }
    let path = Path::new(&source.host);
    let Ok(found) = std::fs::metadata(path) else {
        // Nothing there: SQLite fails to open it (or, with `mode=rwc`,
        // creates it, which needs the folder's write access below).
        return creatable_problem(source, path, process).await;
    };
    if let Some(own_file) = own_database_file(own).await
        && let Ok(own_found) = std::fs::metadata(&own_file)
        && same_file(&found, &own_found)
    {
        return Some(format!(
            "datasource '{name}' is DataJump's own database ({}): a task may not open it",
            own_file.display()
        ));
    }
    let access = if read_only(source) {
        Access::Read
    } else {
        Access::ReadWrite
    };
    user_problem(name, path, access, process).await
}

/// The task user's access to the folder a `mode=rwc` datasource would be
/// created in.
async fn creatable_problem(
    source: &datasource::Model,
    path: &Path,
    process: &TaskProcess,
) -> Option<String> {
    let creates = source
        .params
        .get("mode")
        .and_then(|mode| mode.as_str())
        .is_some_and(|mode| mode == "rwc");
    if !creates {
        return None;
    }
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    user_problem(&source.name, &folder, Access::ReadWrite, process).await
}

async fn user_problem(
    name: &str,
    path: &Path,
    access: Access,
    process: &TaskProcess,
) -> Option<String> {
    let user = process.user()?;
    match process.user_may(access, path).await {
        Ok(true) => None,
        Ok(false) => Some(format!(
            "datasource '{name}': the task user '{}' may not {} {}, and a SQL task may open only \
             what its task user could",
            user.name(),
            access.verb(),
            path.display()
        )),
        Err(e) => Some(format!(
            "datasource '{name}': cannot check the task user's access to {}: {e}",
            path.display()
        )),
    }
}

fn read_only(source: &datasource::Model) -> bool {
    let param = |key: &str| source.params.get(key).and_then(|value| value.as_str());
    param("mode") == Some("ro") || param("immutable").is_some_and(|v| v == "1" || v == "true")
}

/// The file of the scheduler's own database, when it is SQLite.
async fn own_database_file(db: &DatabaseConnection) -> Option<PathBuf> {
    if db.get_database_backend() != DatabaseBackend::Sqlite {
        return None;
    }
    let rows = db
        .query_all_raw(Statement::from_string(
            DatabaseBackend::Sqlite,
            "PRAGMA database_list",
        ))
        .await
        .ok()?;
    rows.iter()
        .find(|row| row.try_get::<String>("", "name").is_ok_and(|n| n == "main"))
        .and_then(|row| row.try_get::<String>("", "file").ok())
        .filter(|file| !file.is_empty())
        .map(PathBuf::from)
}

fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(test)]
mod tests {
    use super::refusal;

    #[test]
    fn statements_that_reach_other_files_are_refused_however_written() {
        for sql in [
            "ATTACH DATABASE '/var/lib/datajump/datajump.db' AS dj",
            "attach '/x.db' as x",
            "  /* c */ Attach 'x' AS y",
            "DETACH dj",
            "EXPLAIN QUERY PLAN ATTACH 'x' AS y",
            "VACUUM INTO '/tmp/copy.db'",
            "vacuum main into '/tmp/copy.db'",
            "SELECT load_extension('/tmp/evil.so')",
            "SELECT \"load_extension\"('/tmp/evil.so')",
            "select [load_extension]('/tmp/evil.so')",
            "PRAGMA temp_store_directory = '/tmp'",
            "PRAGMA main.data_store_directory = '/tmp'",
        ] {
            assert!(refusal(sql).is_some(), "{sql} must be refused");
        }
    }

    #[test]
    fn ordinary_statements_pass() {
        for sql in [
            "SELECT 'ATTACH' AS word, attached FROM t",
            "VACUUM",
            "PRAGMA foreign_keys = ON",
            "PRAGMA table_info(orders)",
            "CREATE TABLE into_x (a)",
            "INSERT INTO t SELECT * FROM u",
            "UPDATE t SET note = 'load_extension is off'",
        ] {
            assert_eq!(refusal(sql), None, "{sql} must pass");
        }
    }
}
