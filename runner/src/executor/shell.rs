//! SHELL: a script run by bash from a temporary file.

use std::path::Path;

use datajump_shared::content::ShellContent;
use datajump_shared::params::ScriptLang;

use super::{ExecContext, ExecOutcome, LogSink, process};

/// Runs the command line or the script with `bash`.
pub(super) async fn run(content: &ShellContent, ctx: &ExecContext, log: &LogSink) -> ExecOutcome {
    let body = match ctx.script(content.body(), ScriptLang::Shell) {
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
    process::run_script(Path::new("bash"), script.path(), &[], ctx, log).await
}
