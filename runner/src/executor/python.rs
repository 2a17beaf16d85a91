//! PYTHON: a script run by `python3` (or `python`) from a temporary file.

use std::path::PathBuf;

use futures::future::BoxFuture;

use super::{ExecContext, ExecOutcome, Executor, LogSink, process};

/// Runs `content.script` with the first of `python3`, `python` on PATH.
pub struct Python;

fn interpreter() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["python3", "python"].into_iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    })
}

impl Executor for Python {
    fn execute<'a>(&'a self, ctx: &'a ExecContext, log: &'a LogSink) -> BoxFuture<'a, ExecOutcome> {
        Box::pin(async move {
            let Some(body) = ctx.content["script"].as_str() else {
                return ExecOutcome::Invalid("PYTHON task has no 'script'".to_owned());
            };
            let body = match ctx.text(body) {
                Ok(body) => body,
                Err(e) => return ExecOutcome::Invalid(e.to_string()),
            };
            let Some(python) = interpreter() else {
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
            process::run(&python, script.path(), &utf8, ctx, log).await
        })
    }
}
