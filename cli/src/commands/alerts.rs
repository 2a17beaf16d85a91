//! `datajump alerts test|list DAG`: check a DAG's webhooks and see what was
//! sent. The webhooks themselves are configured in the DAG file's `alerts:`
//! block (docs/DAG_FORMAT.md "Alerts").

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use datajump_shared::entities::alert;
use datajump_shared::kinds::AlertState;
use datajump_shared::network::Caller;

use crate::Global;
use crate::client::Client;
use crate::commands::roles::NetworkArgs;
use crate::output::{out, table};

/// Alert subcommands.
#[derive(Subcommand)]
pub enum AlertsCommand {
    /// Send a test alert to each of a DAG's webhooks now and say how each went.
    ///
    /// Exits non-zero when a webhook did not accept it (a ticker keeps
    /// retrying it with backoff, as it would a real alert). Webhooks follow
    /// the ticker's rule: no link-local or cloud-metadata address and not
    /// the DataJump API itself (--api / DATAJUMP_API_URL), unless
    /// --http-allow names them.
    ///
    /// Example:
    ///   datajump alerts test nightly_orders
    #[command(verbatim_doc_comment)]
    Test {
        /// The DAG's name.
        dag: String,
        /// Where webhooks may connect beyond the rule.
        #[command(flatten)]
        network: NetworkArgs,
    },
    /// List a DAG's most recent alerts and their delivery.
    List {
        /// The DAG's name.
        dag: String,
        /// How many.
        #[arg(long, default_value_t = 20)]
        limit: u64,
    },
}

/// Runs an alerts subcommand.
pub async fn run(global: &Global, command: AlertsCommand) -> Result<ExitCode> {
    let client = Client::connect(global).await?;
    match command {
        AlertsCommand::Test { dag, network } => {
            let network = network.policy(Some(&global.api_url), Caller::Webhook)?;
            let ended = client.test_alerts(&dag, &network).await?;
            let mut all_sent = true;
            for alert in &ended {
                all_sent &= alert.status == AlertState::Sent;
                out!(
                    "{}: {}{}",
                    target_url(alert),
                    alert.status,
                    match (&alert.response_status, &alert.last_error) {
                        (_, Some(error)) if alert.status != AlertState::Sent =>
                            format!(" ({error})"),
                        (Some(code), _) => format!(" (HTTP {code})"),
                        _ => String::new(),
                    }
                );
            }
            Ok(if all_sent {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        AlertsCommand::List { dag, limit } => {
            let rows: Vec<Vec<String>> = client
                .alerts(&dag, limit)
                .await?
                .into_iter()
                .map(|a| {
                    vec![
                        a.id.to_string(),
                        a.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                        a.kind.to_string(),
                        a.dag_run_id.map(|id| id.to_string()).unwrap_or_default(),
                        target_url(&a),
                        a.status.to_string(),
                        a.attempts.to_string(),
                        a.last_error.clone().unwrap_or_default(),
                    ]
                })
                .collect();
            table(
                &[
                    "ID", "NOTICED", "KIND", "RUN", "WEBHOOK", "STATUS", "ATTEMPTS", "ERROR",
                ],
                &rows,
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn target_url(alert: &alert::Model) -> String {
    alert.target["url"].as_str().unwrap_or("?").to_owned()
}
