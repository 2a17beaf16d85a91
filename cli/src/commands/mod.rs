//! One module per subcommand. Public for `datajump-bench`, which starts
//! runners exactly as `datajump runner` does ([`roles::runner_config`]) and
//! stops on the same signals ([`shutdown_on_signal`]).

pub mod alerts;
pub mod audit;
pub mod backfill;
pub mod cron;
pub mod dag;
pub mod dataset;
pub mod datasource;
pub mod events;
pub mod kill;
pub mod lifecycle;
pub mod logs;
pub mod project;
pub mod rerun;
pub mod roles;
pub mod runs;
pub mod schedule;
pub mod secret;
pub mod token;
pub mod topology;
pub mod trigger;
pub mod up;

use tokio_util::sync::CancellationToken;

/// A token cancelled on the first SIGINT or SIGTERM, for graceful shutdown.
pub fn shutdown_on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        let mut term = match tokio::signal::unix::signal(
            tokio::signal::unix::SignalKind::terminate(),
        ) {
            Ok(term) => term,
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch SIGTERM; only Ctrl-C stops this process");
                let _ = tokio::signal::ctrl_c().await;
                cancel.cancel();
                return;
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {},
            _ = term.recv() => {},
        }
        tracing::info!("shutting down (signal received)");
        cancel.cancel();
    });
    token
}

/// Asks `question` on the terminal; true for `y`/`yes`. Off a terminal
/// there is nobody to ask: that is an error naming `--yes`.
pub fn confirmed(question: &str) -> anyhow::Result<bool> {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        anyhow::bail!("not on a terminal, so nobody can confirm: pass --yes");
    }
    eprint!("{question}");
    std::io::stderr().flush().ok();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| anyhow::anyhow!("cannot read the answer: {e}"))?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}
