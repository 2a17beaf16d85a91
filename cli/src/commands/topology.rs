//! `datajump topology`: the JetStream streams, consumers and buckets
//! DataJump needs, created or checked from an operator's shell. On a locked
//! down NATS only an admin user may create them (`nats/config/roles.conf`);
//! the roles' own users then only check at start.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use datajump_shared::naming::validate_queue;

use crate::Global;
use crate::commands::roles::nats;
use crate::output::{out, table};

/// What to do with the topology.
#[derive(Subcommand)]
pub enum TopologyCommand {
    /// Create what is missing (streams, consumers, buckets, and the work
    /// consumers of each --queues), and report what differs. Needs a NATS
    /// user that may create streams; run it before starting roles whose
    /// users may not.
    Apply(ApplyArgs),
    /// Report what is missing or differs, changing nothing; exits 1 if
    /// anything does.
    Check(ApplyArgs),
}

/// Queues whose work consumers to create or check besides `default`.
#[derive(Args)]
pub struct ApplyArgs {
    /// Runner queues (comma-separated) besides `default`.
    #[arg(long, value_delimiter = ',', value_name = "QUEUES")]
    pub queues: Vec<String>,
}

/// Runs a `topology` subcommand.
pub async fn run(global: &Global, command: TopologyCommand) -> Result<ExitCode> {
    let (args, apply) = match &command {
        TopologyCommand::Apply(args) => (args, true),
        TopologyCommand::Check(args) => (args, false),
    };
    for queue in &args.queues {
        validate_queue(queue)?;
    }
    let client = nats(global, "datajump-topology").await?;
    let js = async_nats::jetstream::new(client);
    let mut drift = if apply {
        datajump_nats::ensure_topology(&js, &global.nats_prefix).await?
    } else {
        datajump_nats::check_topology(&js, &global.nats_prefix).await?
    };
    for queue in &args.queues {
        drift.extend(if apply {
            datajump_nats::ensure_queue(&js, &global.nats_prefix, queue).await?
        } else {
            datajump_nats::check_queue(&js, &global.nats_prefix, queue).await?
        });
    }
    let rows: Vec<Vec<String>> = drift
        .iter()
        .map(|d| vec![d.object.clone(), d.detail.clone()])
        .collect();
    if rows.is_empty() {
        out!(
            "JetStream topology {}: every stream, consumer and bucket is as DataJump expects",
            if apply { "applied" } else { "checked" }
        );
        return Ok(ExitCode::SUCCESS);
    }
    table(&["OBJECT", "DIFFERENCE"], &rows);
    if apply {
        out!(
            "created what was missing; the differences above were left as they are (DataJump never updates an existing stream or consumer)"
        );
        Ok(ExitCode::SUCCESS)
    } else {
        Ok(ExitCode::FAILURE)
    }
}
