//! SHELL: a script run by bash from a temporary file.

use std::path::Path;

use futures::future::BoxFuture;

use super::{ExecContext, ExecOutcome, Executor, LogSink, process};

/// Runs `content.command` or `content.script` with `bash`.
pub struct Shell;

impl Executor for Shell {
    fn execute<'a>(&'a self, ctx: &'a ExecContext, log: &'a LogSink) -> BoxFuture<'a, ExecOutcome> {
        Box::pin(async move {
            let Some(body) = ctx.content["command"]
                .as_str()
                .or_else(|| ctx.content["script"].as_str())
            else {
                return ExecOutcome::Invalid(
                    "SHELL task has neither 'command' nor 'script'".to_owned(),
                );
            };
            let body = match ctx.text(body) {
                Ok(body) => body,
                Err(e) => return ExecOutcome::Invalid(e.to_string()),
            };
            // Removed when `script` drops, whatever happens.
            let script = match process::script_file(&body, ".sh") {
                Ok(script) => script,
                Err(e) => {
                    return ExecOutcome::Invalid(format!("cannot write the script file: {e}"));
                }
            };
            process::run(Path::new("bash"), script.path(), &[], ctx, log).await
        })
    }
}
