//! PYTHON: a script run by `python3` (or `python`) from a temporary file.

use std::ffi::OsStr;
use std::path::PathBuf;

use datajump_shared::content::PythonContent;
use datajump_shared::params::ScriptLang;

use super::{ExecContext, ExecOutcome, LogSink, process};

/// The first of `python3`, `python` in the directories of `path` (a
/// `PATH` value): every directory is searched for `python3` before any is
/// searched for `python`, so a `python` that is Python 2 is only a fallback.
fn interpreter(path: &OsStr) -> Option<PathBuf> {
    process::on_path(path, &["python3", "python"])
}

/// Runs the script with the first of `python3`, `python` on PATH.
pub(super) async fn run(content: &PythonContent, ctx: &ExecContext, log: &LogSink) -> ExecOutcome {
    let body = match ctx.script(&content.script, ScriptLang::Python) {
        Ok(body) => body,
        Err(e) => return ExecOutcome::Invalid(e.to_string()),
    };
    let Some(python) = interpreter(&process::task_path(ctx)) else {
        return ExecOutcome::Invalid(
            "neither python3 nor python is on this runner's PATH".to_owned(),
        );
    };
    let script = match process::script_file(&body, ".py") {
        Ok(script) => script,
        Err(e) => {
            return ExecOutcome::Invalid(format!("cannot write the script file: {e}"));
        }
    };
    log.line(&format!("[datajump] interpreter: {}", python.display()));
    let utf8 = [
        ("PYTHONIOENCODING", "utf-8"),
        ("PYTHONUNBUFFERED", "1"),
        ("PYTHONUTF8", "1"),
    ];
    process::run_script(&python, script.path(), &utf8, ctx, log).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python3_first_then_python_then_none() {
        let only_python = tempfile::tempdir().unwrap();
        let both = tempfile::tempdir().unwrap();
        let empty = tempfile::tempdir().unwrap();
        std::fs::write(only_python.path().join("python"), "").unwrap();
        std::fs::write(both.path().join("python"), "").unwrap();
        std::fs::write(both.path().join("python3"), "").unwrap();
        let path = |dirs: &[&tempfile::TempDir]| {
            std::env::join_paths(dirs.iter().map(|d| d.path())).unwrap()
        };
        assert_eq!(
            interpreter(&path(&[&only_python, &both])),
            Some(both.path().join("python3")),
            "python3 anywhere wins over python earlier on PATH"
        );
        assert_eq!(
            interpreter(&path(&[&empty, &only_python])),
            Some(only_python.path().join("python"))
        );
        assert_eq!(interpreter(&path(&[&empty])), None);
    }
}
