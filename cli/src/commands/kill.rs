//! `datajump kill TASK_INSTANCE` and `datajump kill --run RUN`.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use crate::Global;
use crate::client::Client;

/// Arguments of `kill`.
#[derive(Args)]
pub struct KillArgs {
    /// The task instance to kill (ids as `datajump runs` shows).
    #[arg(required_unless_present = "run", conflicts_with = "run")]
    task_instance: Option<i64>,
    /// Kill a whole run instead: every live task in it, and the run ends KILLED.
    #[arg(long)]
    run: Option<i64>,
}

/// Runs `kill`.
pub async fn run(global: &Global, args: KillArgs) -> Result<ExitCode> {
    let client = Client::connect(global).await?;
    match (args.task_instance, args.run) {
        (Some(id), None) => match client.kill_instance(id).await? {
            Some(row) => println!(
                "killed task instance {id} ({}); its children follow their strategies",
                row.task_name
            ),
            None => println!("task instance {id} had already ended; nothing to kill"),
        },
        (None, Some(run)) => match client.kill_run(run).await? {
            Some(killed) => {
                println!(
                    "killed run {run} ({} live tasks stopped)",
                    killed.killed.len()
                );
                if let Some(started) = killed.released.started_run {
                    println!("waiting run {started} of the same DAG started in the freed slot");
                }
            }
            None => println!("run {run} had already ended; nothing to kill"),
        },
        _ => bail!("give a task instance id or --run RUN"),
    }
    Ok(ExitCode::SUCCESS)
}
