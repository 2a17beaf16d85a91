//! `datajump cron next|describe`: check an expression before scheduling it.

use std::process::ExitCode;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use clap::Subcommand;
use datajump_cron::{CronExpr, parse_time_zone};

use crate::Global;
use crate::output::out;

/// Cron subcommands.
#[derive(Subcommand)]
pub enum CronCommand {
    /// Print the next fire times, one RFC 3339 timestamp per line.
    ///
    /// Examples:
    ///   datajump cron next '0 0 2 * * ? *'
    ///   datajump cron next '0 30 8 ? * MON-FRI' --tz Europe/London -n 10
    ///   datajump cron next '@daily' --after 2024-03-09T00:00:00Z
    #[command(verbatim_doc_comment)]
    Next {
        /// Quartz (7 or 6 fields with `?`), Spring (6), Unix (5) or `@daily`-style.
        expr: String,
        /// Start after this instant (RFC 3339); default now.
        #[arg(long)]
        after: Option<DateTime<Utc>>,
        /// How many fire times.
        #[arg(short = 'n', long = "count", default_value_t = 5)]
        n: usize,
    },
    /// Describe an expression in English.
    Describe {
        /// The expression.
        expr: String,
    },
}

/// Runs a cron subcommand.
pub fn run(global: &Global, command: CronCommand) -> Result<ExitCode> {
    match command {
        CronCommand::Next { expr, after, n } => {
            let cron = CronExpr::parse(&expr)?;
            // Read in --timezone (--tz), as schedules that name no zone are.
            let zone = parse_time_zone(&global.timezone)?;
            let after = after.unwrap_or_else(Utc::now).with_timezone(&zone);
            let mut printed = 0;
            for at in cron.iter_after(&after).take(n) {
                out!("{}", at.to_rfc3339());
                printed += 1;
            }
            if printed == 0 {
                eprintln!("'{expr}' never fires after {}", after.to_rfc3339());
            }
            Ok(ExitCode::SUCCESS)
        }
        CronCommand::Describe { expr } => {
            let cron = CronExpr::parse(&expr).with_context(|| "cannot describe it")?;
            out!("{}", cron.describe());
            Ok(ExitCode::SUCCESS)
        }
    }
}
