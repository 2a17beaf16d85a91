//! `datajump backfill DAG --from DATE --to DATE [--parallel N]
//! [--max-active-runs N]`, through the API.

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};
use chrono::NaiveDate;
use clap::Args;
use datajump_api::routes::dags::dto::{BackfillResponse, BackfillRun};
use datajump_api::routes::runs::dto::RunStatusDto;
use serde_json::json;

use crate::Global;
use crate::api::{Api, print_json, read};
use crate::output::{out, printable};

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
    /// Let this backfill's runs start while fewer than N of the DAG's runs
    /// are active, in place of the DAG's max_active_runs (for these runs
    /// only: the DAG is not changed, and its scheduled runs keep its limit).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(1..=1000))]
    max_active_runs: Option<i32>,
    /// Dates that already ran (manually, on schedule or in a backfill) are
    /// skipped; `failed` runs the failed tasks of dates whose run failed or
    /// was killed again, in place; `all` runs every finished date again.
    /// A date whose run has not finished is always left to it.
    #[arg(long, value_parser = ["none", "failed", "all"], default_value = "none")]
    reprocess: String,
    /// Give up waiting for a run after this many seconds.
    #[arg(long, default_value_t = 24 * 3600)]
    timeout: u64,
    /// At the end, print the API's answers merged into one (the runs
    /// started and the dates skipped) as JSON on stdout.
    #[arg(long)]
    json: bool,
}

/// Runs `backfill`: one BACKFILL run per business date, with the run key a
/// scheduled fire of that date has, so dates that already ran are skipped.
///
/// Each date is its own `POST /api/v1/dags/{dagId}/backfill` with `from` =
/// `to` = that date, sent when a slot of `--parallel` is free: the endpoint
/// given the whole range would start every date at once and leave the pace
/// to the DAG's `maxActiveRuns`. Finished runs are seen by polling their
/// status through the API.
pub async fn run(global: &Global, args: BackfillArgs) -> Result<ExitCode> {
    if args.to < args.from {
        bail!("--to {} is before --from {}", args.to, args.from);
    }
    if args.parallel == 0 {
        bail!("--parallel must be at least 1");
    }
    let api = Api::new(&global.api_url)?;
    let dag = api.dag(&args.dag).await?;
    let dag_id = dag["id"].to_string();
    // Runs beyond the limit wait QUEUED, so --parallel above it changes
    // nothing but the number of runs waiting.
    let own_limit = args.max_active_runs.and_then(|n| u64::try_from(n).ok());
    if let Some(limit) = own_limit.or_else(|| dag["maxActiveRuns"].as_u64())
        && dag["overlap"] != "parallel"
        && u64::try_from(args.parallel).unwrap_or(u64::MAX) > limit
    {
        let (why, fix) = if own_limit.is_some() {
            ("--max-active-runs", "")
        } else {
            (
                "its max_active_runs",
                "; --max-active-runs N lets this backfill's runs go up to N without changing the DAG",
            )
        };
        eprintln!(
            "note: {} allows {limit} active run(s) ({why}), so at most {limit} of the {} \
             parallel backfill runs proceed at a time; the others wait QUEUED{fix}",
            printable(&args.dag),
            args.parallel
        );
    }
    let mut queue: VecDeque<NaiveDate> = args
        .from
        .iter_days()
        .take_while(|d| *d <= args.to)
        .collect();
    let total = queue.len();
    let mut answers = BackfillResponse {
        dag_id: 0,
        dry_run: false,
        runs: Vec::new(),
        skipped: Vec::new(),
    };
    let mut running: Vec<BackfillRun> = Vec::new();
    let mut progress = Progress::new(total, std::io::stderr().is_terminal());
    let mut existed = 0usize;
    let mut unscheduled = 0usize;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(args.timeout);
    eprintln!(
        "backfilling {} for {total} business dates, {} at a time",
        args.dag, args.parallel
    );
    while !queue.is_empty() || !running.is_empty() {
        while running.len() < args.parallel
            && let Some(date) = queue.pop_front()
        {
            let answer: BackfillResponse = read(
                api.post(
                    &["dags", &dag_id, "backfill"],
                    Some(&json!({
                        "from": date,
                        "to": date,
                        "maxActiveRuns": args.max_active_runs,
                        "reprocess": args.reprocess,
                    })),
                )
                .await?,
            )?;
            answers.dag_id = answer.dag_id;
            for skip in answer.skipped {
                match skip.run_id {
                    Some(run_id) => {
                        existed += 1;
                        let status: RunStatusDto = read(
                            api.get(&["dags", "instances", &run_id.to_string(), "status"], &[])
                                .await?,
                        )?;
                        let hint = if status.status.is_unsuccessful() && args.reprocess == "none" {
                            " (--reprocess failed runs it again)"
                        } else {
                            ""
                        };
                        progress.finished(
                            &format!(
                                "{} already ran ({}); skipped{hint}",
                                skip.biz_date, status.status
                            ),
                            false,
                        );
                    }
                    None => {
                        unscheduled += 1;
                        progress.finished(
                            &format!("{}: {}; skipped", skip.biz_date, skip.reason),
                            false,
                        );
                    }
                }
                answers.skipped.push(skip);
            }
            running.extend(answer.runs);
        }
        let mut still = Vec::new();
        for started in running.drain(..) {
            match api
                .get(&["dags", "instances", "by-key", &started.run_key], &[])
                .await
            {
                Ok(run) => {
                    let status = run["status"].as_str().unwrap_or_default();
                    if matches!(status, "RUNNING" | "QUEUED") {
                        still.push(started);
                    } else {
                        progress.finished(
                            &format!("{} {status}", started.biz_date),
                            status != "SUCCESS",
                        );
                        answers.runs.push(started);
                    }
                }
                // Not created yet: a resolver has not taken the fire.
                Err(e) if e.is_not_found() => still.push(started),
                Err(e) => return Err(e.into()),
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
    if args.json {
        answers.runs.sort_by_key(|r| r.biz_date);
        print_json(&serde_json::to_value(&answers)?);
    } else {
        let not_scheduled = if unscheduled > 0 {
            format!(", {unscheduled} not scheduled")
        } else {
            String::new()
        };
        out!(
            "backfill of {}: {total} dates, {} ran, {existed} already existed{not_scheduled}, {failed} did not succeed",
            args.dag,
            answers.runs.len(),
        );
    }
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
