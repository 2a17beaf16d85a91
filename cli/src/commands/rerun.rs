//! `datajump rerun RUN [--failed-only]` and `datajump task clear|mark-success|mark-failed`.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use datajump_shared::TaskStatus;
use datajump_shared::state::ResetScope;

use crate::Global;
use crate::client::Client;

/// Arguments of `rerun`.
#[derive(Args)]
pub struct RerunArgs {
    /// The finished run to run again, in place (same run id, same business date).
    run: i64,
    /// Only FAILED, TIMEOUT, KILLED and UPSTREAM_FAILED tasks and their downstream.
    #[arg(long)]
    failed_only: bool,
}

/// Task subcommands.
#[derive(Subcommand)]
pub enum TaskCommand {
    /// Put a finished task (and with --downstream everything below it) back to PENDING.
    Clear {
        /// The task instance.
        task_instance: i64,
        /// Also clear every task downstream of it.
        #[arg(long)]
        downstream: bool,
    },
    /// Mark a task SUCCESS by hand; its downstream runs again accordingly.
    MarkSuccess {
        /// The task instance.
        task_instance: i64,
    },
    /// Mark a task FAILED by hand; its downstream follows its strategies.
    MarkFailed {
        /// The task instance.
        task_instance: i64,
    },
}

fn report(what: &str, released: &[datajump_shared::entities::task_instance::Model]) {
    let names: Vec<&str> = released.iter().map(|r| r.task_name.as_str()).collect();
    if names.is_empty() {
        println!("{what}");
    } else {
        println!("{what}; queued now: {}", names.join(", "));
    }
}

/// Runs `rerun`.
pub async fn rerun(global: &Global, args: RerunArgs) -> Result<ExitCode> {
    let client = Client::connect(global).await?;
    let scope = if args.failed_only {
        ResetScope::FailedOnly
    } else {
        ResetScope::All
    };
    let released = client.reset(args.run, scope).await?;
    report(&format!("run {} is running again", args.run), &released);
    Ok(ExitCode::SUCCESS)
}

/// Runs a task subcommand.
pub async fn task(global: &Global, command: TaskCommand) -> Result<ExitCode> {
    let client = Client::connect(global).await?;
    match command {
        TaskCommand::Clear {
            task_instance,
            downstream,
        } => {
            let row = client.instance(task_instance).await?;
            let scope = ResetScope::Task {
                task_id: row.task_id,
                downstream,
            };
            let released = client.reset(row.dag_run_id, scope).await?;
            report(
                &format!("cleared {} in run {}", row.task_name, row.dag_run_id),
                &released,
            );
        }
        TaskCommand::MarkSuccess { task_instance } => {
            let released = client.mark(task_instance, TaskStatus::Success).await?;
            report(
                &format!("task instance {task_instance} marked SUCCESS"),
                &released,
            );
        }
        TaskCommand::MarkFailed { task_instance } => {
            let released = client.mark(task_instance, TaskStatus::Failed).await?;
            report(
                &format!("task instance {task_instance} marked FAILED"),
                &released,
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
