//! `datajump logs TASK_INSTANCE|run:RUN [--attempt N] [--follow]`.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use crate::Global;
use crate::client::Client;

/// Arguments of `logs`.
#[derive(Args)]
pub struct LogsArgs {
    /// A task instance id (as `datajump runs` shows), or `run:ID` for every task of a run.
    target: String,
    /// Which attempt (0 = the first); default the latest.
    #[arg(long)]
    attempt: Option<i32>,
    /// Keep printing as the task writes, until it ends (waits for it to start).
    #[arg(long, short = 'f')]
    follow: bool,
}

enum Target {
    Instance(i64),
    Run(i64),
}

fn parse_target(text: &str) -> Result<Target> {
    let parsed = match text.strip_prefix("run:") {
        Some(run) => run.parse().map(Target::Run),
        None => text.parse().map(Target::Instance),
    };
    match parsed {
        Ok(target) => Ok(target),
        Err(_) => {
            bail!("'{text}': expected a task instance id (e.g. 42) or run:RUN_ID (e.g. run:7)")
        }
    }
}

/// Runs `logs`.
pub async fn run(global: &Global, args: LogsArgs) -> Result<ExitCode> {
    let client = Client::connect(global).await?;
    let mut out = std::io::stdout();
    match parse_target(&args.target)? {
        Target::Instance(id) => {
            let exec = client.execution(id, args.attempt, args.follow).await?;
            if args.follow {
                client.follow(&exec, &mut out).await?;
            } else {
                print!("{}", client.full_log(&exec).await?);
            }
        }
        Target::Run(run_id) => {
            if args.follow {
                bail!("--follow takes a task instance id; `datajump runs DAG` lists them");
            }
            for instance in client.run_instances(run_id).await? {
                println!(
                    "##### {} (task instance {}, {})",
                    instance.task_name, instance.id, instance.status
                );
                match client.execution(instance.id, args.attempt, false).await {
                    Ok(exec) => print!("{}", client.full_log(&exec).await?),
                    Err(e) => println!("({e})"),
                }
                println!();
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
