//! `datajump token create|list|revoke|end-sessions`: the named API tokens,
//! their roles, and the browser sessions signed in with them.
//!
//! The shaping decision: **a token is shown once and stored as a hash**,
//! so `create` prints it and nothing can print it again; a lost token is
//! revoked and replaced. These commands write the database directly, as
//! `secret` does: whoever runs them already holds the database's
//! credentials, the one thing every token's rights derive from.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Subcommand;
use datajump_shared::access::{Reach, Role};

use crate::Global;
use crate::client::Client;
use crate::output::{out, table};

/// Token subcommands.
#[derive(Subcommand)]
pub enum TokenCommand {
    /// Create a token and print it (once: only its hash is stored).
    ///
    /// Roles, each allowed what the one before it is:
    ///   viewer    reads DAGs, runs, logs, schedules, alerts, runners
    ///   operator  also triggers, kills, reruns, backfills, clears and marks
    ///             tasks, publishes events, puts DAGs and schedules online/offline
    ///   admin     also creates, changes and deletes DAGs and schedules, and
    ///             reads the audit log
    ///
    /// Once any token exists, every API route but /healthz and /readyz needs
    /// one (DATAJUMP_API_TOKEN keeps working as an admin token).
    ///
    /// With --project, the token sees and acts on that project's DAGs, runs
    /// and tokens only (others answer 404), and cannot reach what covers
    /// every project: the audit log, /metrics, events. An admin token of a
    /// project creates tokens of its project only (POST /api/v1/tokens).
    ///
    /// Examples:
    ///   datajump token create grafana --role viewer
    ///   datajump token create ci --role operator
    ///   datajump token create analytics-lead --role admin --project analytics
    ///   DATAJUMP_API_TOKEN=dj_… datajump trigger nightly_orders
    #[command(verbatim_doc_comment)]
    Create {
        /// A name for the audit log: letters, digits, '_', '-' and '.'.
        name: String,
        /// viewer, operator or admin.
        #[arg(long, value_parser = parse_role)]
        role: Role,
        /// Limit it to one project, by id or name (default: every project).
        #[arg(long)]
        project: Option<String>,
    },
    /// List tokens: names, roles, projects, who created them and when last used.
    List,
    /// Revoke a token: requests carrying it are refused from now on.
    Revoke {
        /// The token's name.
        name: String,
    },
    /// End every browser session: everyone must sign in to the web UI again.
    ///
    /// Whatever token a session signed in with, it ends. For after a token may have leaked. Revoking a named token already ends
    /// its sessions, and sessions signed in with DATAJUMP_API_TOKEN end by
    /// themselves once the API runs with another value of it.
    ///
    /// Example:
    ///   datajump token end-sessions
    #[command(verbatim_doc_comment)]
    EndSessions,
}

fn parse_role(text: &str) -> Result<Role, String> {
    Role::parse(text)
        .ok_or_else(|| format!("unknown role '{text}': expected viewer, operator or admin"))
}

/// Runs a token subcommand.
pub async fn run(global: &Global, command: TokenCommand) -> Result<ExitCode> {
    let client = Client::connect(global).await?;
    match command {
        TokenCommand::Create {
            name,
            role,
            project,
        } => {
            let reach = match project {
                Some(given) => Reach::Project(client.resolve_project(&given).await?.id),
                None => Reach::Everything,
            };
            let created = client.create_token(&name, role, reach).await?;
            out!("{}", created.token);
            eprintln!(
                "token '{name}' ({role}, {reach}) created. It is shown only now: keep it in a secret \
                 store, and send it as `Authorization: Bearer <token>` (the CLI reads DATAJUMP_API_TOKEN)."
            );
        }
        TokenCommand::List => {
            let rows: Vec<Vec<String>> = client
                .tokens()
                .await?
                .into_iter()
                .map(|t| {
                    vec![
                        t.name,
                        t.role.to_string(),
                        t.project_id
                            .map_or_else(|| "all".to_owned(), |id| id.to_string()),
                        t.created_by,
                        t.created_at.format("%Y-%m-%d %H:%M UTC").to_string(),
                        t.last_used_at.map_or_else(
                            || "never".to_owned(),
                            |at| at.format("%Y-%m-%d %H:%M UTC").to_string(),
                        ),
                    ]
                })
                .collect();
            if rows.is_empty() {
                out!("no tokens: the API is open to whoever can reach it (loopback only)");
            } else {
                table(
                    &[
                        "NAME",
                        "ROLE",
                        "PROJECT",
                        "CREATED BY",
                        "CREATED",
                        "LAST USED",
                    ],
                    &rows,
                );
            }
        }
        TokenCommand::Revoke { name } => {
            if name.is_empty() {
                bail!("give the name of the token to revoke (datajump token list)");
            }
            client.revoke_token(&name).await?;
            out!("token '{name}' revoked");
        }
        TokenCommand::EndSessions => {
            let ended = client.end_sessions().await?;
            out!("{ended} browser session(s) ended: signing in again is needed");
        }
    }
    Ok(ExitCode::SUCCESS)
}
