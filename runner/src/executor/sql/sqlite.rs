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
//! - **Not DataJump's own database or data folder**, however the path
//!   reaches them (a symbolic or hard link, another spelling): the path is
//!   resolved, compared with the data folder (whose `datasources` folder
//!   alone may hold datasources), and the file compared by device and inode
//!   with the scheduler's database and its journal files. SQLite is given
//!   the resolved path, and the file it opened is compared with the checked
//!   one again before any statement runs, so a link swapped in between the
//!   check and the open is caught ([`CheckedFile`]).
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

/// A SQLite datasource's file as checked: its path with every link
/// resolved (what SQLite is given to open, so a link swapped in after the
/// check is not followed), which file it was when it existed, and the
/// guard to check it against again once opened.
pub(super) struct CheckedFile {
    path: PathBuf,
    identity: Option<(u64, u64)>,
    guard: Guard,
}

impl CheckedFile {
    /// `source` with its path pinned to the checked one.
    pub(super) fn pin(&self, source: &datasource::Model) -> Result<datasource::Model, String> {
        let host = self.path.to_str().ok_or_else(|| {
            format!(
                "datasource '{}': its file resolves to a path that is not UTF-8 ({})",
                source.name,
                self.path.display()
            )
        })?;
        Ok(datasource::Model {
            host: host.to_owned(),
            ..source.clone()
        })
    }

    /// Why the file now at the pinned path may not stay open, if it may
    /// not: asked once SQLite has opened it, so a folder on the way that
    /// was swapped between the check and the open is caught after all.
    pub(super) fn opened_problem(&self, name: &str) -> Option<String> {
        let now = std::fs::metadata(&self.path).ok();
        match (self.identity, now.as_ref().map(identity)) {
            (Some(checked), Some(opened)) if checked == opened => None,
            (Some(_), _) => Some(format!(
                "datasource '{name}': its file {} changed between the check and the open",
                self.path.display()
            )),
            // Created by the open (`mode=rwc`): checked as a file now.
            (None, _) => self.guard.protected_problem(name, &self.path, now.as_ref()),
        }
    }
}

/// What no SQLite datasource may open: DataJump's database (with its
/// journal files) and its data folder, by whatever path reaches them.
pub(super) struct Guard {
    own_database: Option<PathBuf>,
    data_folder: Option<PathBuf>,
}

/// The one folder of the data folder where datasources may live (`up`
/// keeps its example database there).
pub const DATASOURCES_FOLDER: &str = "datasources";

impl Guard {
    /// The guard for a runner whose scheduler database is `own` and whose
    /// data folder is `data_folder`.
    pub(super) async fn new(own: &DatabaseConnection, data_folder: Option<&Path>) -> Guard {
        Guard {
            own_database: own_database_file(own)
                .await
                .and_then(|file| std::fs::canonicalize(file).ok()),
            data_folder: data_folder.and_then(|folder| std::fs::canonicalize(folder).ok()),
        }
    }

    /// Why `path` (links resolved; `found` when it exists) is one of
    /// DataJump's files, if it is.
    fn protected_problem(
        &self,
        name: &str,
        path: &Path,
        found: Option<&std::fs::Metadata>,
    ) -> Option<String> {
        if let Some(folder) = &self.data_folder
            && path.starts_with(folder)
            && !path.starts_with(folder.join(DATASOURCES_FOLDER))
        {
            return Some(format!(
                "datasource '{name}' is inside DataJump's data folder ({}): a task may not open \
                 DataJump's files (only its '{DATASOURCES_FOLDER}' folder may hold datasources)",
                folder.display()
            ));
        }
        let own = self.own_database.as_ref()?;
        let companions = ["", "-wal", "-shm", "-journal"].map(|suffix| {
            let mut file = own.clone().into_os_string();
            file.push(suffix);
            PathBuf::from(file)
        });
        let same = |companion: &PathBuf| {
            companion == path
                || found.is_some_and(|found| {
                    std::fs::metadata(companion)
                        .is_ok_and(|theirs| identity(&theirs) == identity(found))
                })
        };
        companions.iter().any(same).then(|| {
            format!(
                "datasource '{name}' is DataJump's own database ({}): a task may not open it",
                own.display()
            )
        })
    }
}

/// Checks the SQLite datasource `source` before the runner opens it for a
/// task whose processes start as `process` says: what to open, or why not.
pub(super) async fn check_file(
    source: &datasource::Model,
    guard: Guard,
    process: &TaskProcess,
) -> Result<CheckedFile, String> {
    let name = &source.name;
    if !attach_is_disabled().await {
        return Err(format!(
            "datasource '{name}': this runner's SQLite allows ATTACH, so a SQLite task could open \
             any file the runner can (build DataJump from its repository, whose .cargo/config.toml \
             sets SQLITE_MAX_ATTACHED=0)"
        ));
    }
    let path = Path::new(&source.host);
    let Ok(resolved) = std::fs::canonicalize(path) else {
        // Nothing there: SQLite fails to open it or, with `mode=rwc`,
        // creates it in its folder, which is checked instead.
        let folder = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let resolved = match (std::fs::canonicalize(folder), path.file_name()) {
            (Ok(folder), Some(file)) => folder.join(file),
            _ => path.to_path_buf(),
        };
        if let Some(problem) = guard.protected_problem(name, &resolved, None) {
            return Err(problem);
        }
        if let Some(problem) = creatable_problem(source, &resolved, process).await {
            return Err(problem);
        }
        return Ok(CheckedFile {
            path: resolved,
            identity: None,
            guard,
        });
    };
    let found = std::fs::metadata(&resolved).map_err(|e| {
        format!(
            "datasource '{name}': cannot read {}: {e}",
            resolved.display()
        )
    })?;
    if let Some(problem) = guard.protected_problem(name, &resolved, Some(&found)) {
        return Err(problem);
    }
    let access = if read_only(source) {
        Access::Read
    } else {
        Access::ReadWrite
    };
    if let Some(problem) = user_problem(name, &resolved, access, process).await {
        return Err(problem);
    }
    Ok(CheckedFile {
        path: resolved,
        identity: Some(identity(&found)),
        guard,
    })
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

/// A file's device and inode: the same for every path that reaches it.
fn identity(found: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (found.dev(), found.ino())
}

#[cfg(test)]
mod tests {
    use super::{Guard, check_file, refusal};
    use crate::executor::task_process::TaskProcess;
    use datajump_shared::entities::datasource;

    /// A file swapped in at the checked path after the check, as a task
    /// user who can write the folder might between the check and SQLite's
    /// open, is caught by the second look.
    #[tokio::test]
    async fn a_file_swapped_in_after_the_check_is_caught() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("data.db");
        std::fs::write(&path, b"").expect("the datasource file");
        let source = datasource::Model {
            id: 1,
            name: "lite".to_owned(),
            kind: datajump_shared::kinds::DatasourceKind::Sqlite,
            host: path.display().to_string(),
            port: None,
            database: None,
            username: None,
            password: None,
            params: serde_json::json!({}),
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
            project_id: 1,
        };
        let guard = Guard {
            own_database: None,
            data_folder: None,
        };
        let checked = check_file(&source, guard, &TaskProcess::default())
            .await
            .expect("an ordinary file passes");
        assert_eq!(checked.opened_problem("lite"), None);
        let other = dir.path().join("other.db");
        std::fs::write(&other, b"").expect("another file");
        std::fs::rename(&other, &path).expect("swap");
        assert!(
            checked
                .opened_problem("lite")
                .is_some_and(|why| why.contains("changed between the check and the open")),
        );
    }

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
