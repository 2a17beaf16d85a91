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
    /// Report what is missing or differs (a stream with fewer copies than
    /// --nats-replicas wants included), changing nothing; exits 1 if
    /// anything does.
    Check(CheckArgs),
}

/// Queues whose work consumers to create or check besides `default`.
#[derive(Args)]
pub struct CheckArgs {
    /// Runner queues (comma-separated) besides `default`.
    #[arg(long, value_delimiter = ',', value_name = "QUEUES")]
    pub queues: Vec<String>,
}

/// What `topology apply` creates, and the copies it scales to.
#[derive(Args)]
pub struct ApplyArgs {
    /// Queues whose work consumers to create besides `default`.
    #[command(flatten)]
    pub check: CheckArgs,
    /// Scale every existing stream and bucket to this many copies (`auto`: 3 on a cluster, 1
    /// on a single server), and create missing ones so. Without it nothing existing changes:
    /// a stream created on one server stays at one copy on a grown cluster until an operator
    /// runs `topology apply --replicas 3`. JetStream copies the data while streams stay in
    /// use; their consumers follow.
    #[arg(long, value_name = "auto|1-5")]
    pub replicas: Option<datajump_nats::Replicas>,
}

/// Runs a `topology` subcommand.
pub async fn run(global: &Global, command: TopologyCommand) -> Result<ExitCode> {
    let (args, apply, scale) = match &command {
        TopologyCommand::Apply(args) => (&args.check, true, args.replicas),
        TopologyCommand::Check(args) => (args, false, None),
    };
    for queue in &args.queues {
        validate_queue(queue)?;
    }
    let client = nats(global, "datajump-topology").await?;
    let js = async_nats::jetstream::new(client);
    let names = &global.nats_prefix;
    let replicas = scale.unwrap_or(global.nats_replicas);
    if let Some(replicas) = scale {
        let scaled = datajump_nats::scale_topology(&js, names, replicas).await?;
        for stream in &scaled {
            out!(
                "scaled stream {} from {} to {} replicas",
                stream.stream,
                stream.from,
                stream.to
            );
        }
        if scaled.is_empty() {
            out!("every existing stream already has the replicas asked for");
        }
    }
    let mut drift = if apply {
        datajump_nats::ensure_topology(&js, names, replicas).await?
    } else {
        datajump_nats::check_topology(&js, names, replicas).await?
    };
    for queue in &args.queues {
        drift.extend(if apply {
            datajump_nats::ensure_queue(&js, names, queue).await?
        } else {
            datajump_nats::check_queue(&js, names, queue).await?
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
            "created what was missing; the differences above were left as they are (DataJump never updates an existing stream or consumer unless told to: `topology apply --replicas N` scales streams)"
        );
        Ok(ExitCode::SUCCESS)
    } else {
        Ok(ExitCode::FAILURE)
    }
}
