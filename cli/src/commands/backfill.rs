//! `datajump backfill DAG --from DATE --to DATE [--parallel N]`.

use std::collections::VecDeque;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};
use chrono::NaiveDate;
use clap::Args;

use crate::Global;
use crate::client::{BackfillItem, Client};

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
    let plan = client.backfill_plan(&args.dag, args.from, args.to).await?;
    let total = plan.len();
    let mut queue: VecDeque<BackfillItem> = plan.into();
    let mut running: Vec<BackfillItem> = Vec::new();
    let (mut done, mut failed, mut existed) = (0usize, 0usize, 0usize);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(args.timeout);
    eprintln!(
        "backfilling {} for {total} business dates, {} at a time",
        args.dag, args.parallel
    );
    while !queue.is_empty() || !running.is_empty() {
        while running.len() < args.parallel
            && let Some(item) = queue.pop_front()
        {
            if let Some(status) = client.run_status(&item.fire.dedup_key).await? {
                done += 1;
                existed += 1;
                eprintln!(
                    "[{done}/{total}] {} already ran ({status}); skipped",
                    item.fire.biz_date
                );
                continue;
            }
            client.publish_fire(&item.fire).await?;
            running.push(item);
        }
        let mut still = Vec::new();
        for item in running.drain(..) {
            match client.run_status(&item.fire.dedup_key).await? {
                Some(status) if !matches!(status.as_str(), "RUNNING" | "QUEUED") => {
                    done += 1;
                    failed += usize::from(status != "SUCCESS");
                    eprintln!("[{done}/{total}] {} {status}", item.fire.biz_date);
                }
                _ => still.push(item),
            }
        }
        running = still;
        if tokio::time::Instant::now() > deadline {
            bail!(
                "gave up after {}s with {} runs unfinished",
                args.timeout,
                running.len() + queue.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
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
