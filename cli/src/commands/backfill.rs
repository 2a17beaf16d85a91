//! `datajump backfill DAG --from DATE --to DATE [--parallel N]`.

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};
use chrono::NaiveDate;
use clap::Args;

use datajump_shared::backfill::Planned;
use datajump_shared::messages::FireMsg;

use crate::Global;
use crate::client::Client;

/// Arguments of `backfill`.
#[derive(Args)]
pub struct BackfillArgs {
    /// The DAG's name.
    dag: String,
    /// First business date (inclusive), YYYY-MM-DD.
    #[arg(long)]
    from: NaiveDate,
    /// Last business date (inclusive), YYYY-MM-DD.
    #[arg(long)]
    to: NaiveDate,
    /// Runs at once.
    #[arg(long, default_value_t = 1)]
    parallel: usize,
    /// Give up waiting for a run after this many seconds.
    #[arg(long, default_value_t = 24 * 3600)]
    timeout: u64,
}

/// Runs `backfill`: one BACKFILL run per business date, with the run key a
/// scheduled fire of that date has, so dates that already ran are skipped.
pub async fn run(global: &Global, args: BackfillArgs) -> Result<ExitCode> {
    if args.to < args.from {
        bail!("--to {} is before --from {}", args.to, args.from);
    }
    if args.parallel == 0 {
        bail!("--parallel must be at least 1");
    }
    let client = Client::connect(global).await?;
    let mut queue: VecDeque<FireMsg> = VecDeque::new();
    for planned in client.backfill_plan(&args.dag, args.from, args.to).await? {
        match planned {
            Planned::Fire(fire) => queue.push_back(fire),
            Planned::NoFire { date, schedule } => eprintln!(
                "{date}: schedule '{schedule}' does not fire for this business date; skipped"
            ),
        }
    }
    let total = queue.len();
    let mut running: Vec<FireMsg> = Vec::new();
    let mut progress = Progress::new(total, std::io::stderr().is_terminal());
    let mut existed = 0usize;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(args.timeout);
    eprintln!(
        "backfilling {} for {total} business dates, {} at a time",
        args.dag, args.parallel
    );
    while !queue.is_empty() || !running.is_empty() {
        while running.len() < args.parallel
            && let Some(fire) = queue.pop_front()
        {
            if let Some(status) = client.run_status(&fire.dedup_key).await? {
                existed += 1;
                progress.finished(
                    &format!("{} already ran ({status}); skipped", fire.biz_date),
                    false,
                );
                continue;
            }
            client.publish_fire(&fire).await?;
            running.push(fire);
        }
        let mut still = Vec::new();
        for fire in running.drain(..) {
            match client.run_status(&fire.dedup_key).await? {
                Some(status) if !matches!(status.as_str(), "RUNNING" | "QUEUED") => {
                    progress.finished(&format!("{} {status}", fire.biz_date), status != "SUCCESS");
                }
                _ => still.push(fire),
            }
        }
        running = still;
        progress.draw(running.len());
        if tokio::time::Instant::now() > deadline {
            progress.end();
            bail!(
                "gave up after {}s with {} runs unfinished",
                args.timeout,
                running.len() + queue.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    progress.end();
    let failed = progress.failed;
    println!(
        "backfill of {}: {total} dates, {} ran, {existed} already existed, {failed} did not succeed",
        args.dag,
        total - existed
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Backfill progress on stderr. On a terminal: one line redrawn in place,
/// `[#####.....] 12/31 runs, 2 running, 1 failed`, with runs that did not
/// succeed printed above it. Otherwise (a log, a pipe): a line per finished
/// run, which reads well in a file.
struct Progress {
    total: usize,
    done: usize,
    failed: usize,
    running: usize,
    tty: bool,
    /// The bar as last drawn, so an unchanged bar is not redrawn.
    drawn: String,
}

impl Progress {
    /// Width of the bar in characters.
    const WIDTH: usize = 30;

    fn new(total: usize, tty: bool) -> Progress {
        Progress {
            total,
            done: 0,
            failed: 0,
            running: 0,
            tty,
            drawn: String::new(),
        }
    }

    /// Counts a finished (or skipped) date; `what` says which and how.
    fn finished(&mut self, what: &str, failed: bool) {
        self.done += 1;
        self.failed += usize::from(failed);
        if !self.tty {
            eprintln!("[{}/{}] {what}", self.done, self.total);
        } else if failed {
            // Above the bar, so it stays on screen.
            eprintln!("\r\x1b[K{what}");
            self.drawn.clear();
        }
    }

    /// Redraws the bar on a terminal when it changed.
    fn draw(&mut self, running: usize) {
        self.running = running;
        if !self.tty {
            return;
        }
        let bar = self.bar();
        if bar != self.drawn {
            eprint!("\r{bar}\x1b[K");
            let _ = std::io::stderr().flush();
            self.drawn = bar;
        }
    }

    /// Ends the bar's line.
    fn end(&self) {
        if self.tty && !self.drawn.is_empty() {
            eprintln!();
        }
    }

    fn bar(&self) -> String {
        let filled = (self.done * Self::WIDTH)
            .checked_div(self.total)
            .unwrap_or(Self::WIDTH)
            .min(Self::WIDTH);
        format!(
            "[{}{}] {}/{} runs, {} running, {} failed",
            "#".repeat(filled),
            ".".repeat(Self::WIDTH - filled),
            self.done,
            self.total,
            self.running,
            self.failed
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Progress;

    #[test]
    fn bar_shows_done_running_and_failed() {
        let mut progress = Progress::new(31, false);
        for n in 0..12 {
            progress.finished("a date", n == 0);
        }
        progress.draw(2);
        assert_eq!(
            progress.bar(),
            format!(
                "[{}{}] 12/31 runs, 2 running, 1 failed",
                "#".repeat(11),
                ".".repeat(19)
            )
        );
        let empty = Progress::new(0, false);
        assert!(empty.bar().starts_with(&format!("[{}]", "#".repeat(30))));
    }
}
