//! `datajump audit`: who changed what, when and from where, newest first,
//! from the API (`GET /api/v1/audit`, an admin token's right).

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde_json::Value;

use crate::Global;
use crate::api::Api;
use crate::output::{out, table};

/// Arguments of `audit`.
#[derive(Args)]
pub struct AuditArgs {
    /// How many entries, newest first (at most 500).
    #[arg(long, default_value_t = 50)]
    limit: u64,
    /// Print the API's JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `audit`.
pub async fn run(global: &Global, args: AuditArgs) -> Result<ExitCode> {
    let api = Api::new(&global.api_url)?;
    let page = api
        .get(&["audit"], &[("pageSize", args.limit.to_string())])
        .await?;
    if args.json {
        out!("{}", serde_json::to_string_pretty(&page)?);
        return Ok(ExitCode::SUCCESS);
    }
    let text = |entry: &Value, field: &str| match &entry[field] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let rows: Vec<Vec<String>> = page["items"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|entry| {
            vec![
                text(entry, "at"),
                text(entry, "actor"),
                text(entry, "role"),
                text(entry, "action"),
                text(entry, "target"),
                text(entry, "status"),
                text(entry, "origin"),
            ]
        })
        .collect();
    table(
        &["AT", "WHO", "ROLE", "WHAT", "ON", "STATUS", "FROM"],
        &rows,
    );
    Ok(ExitCode::SUCCESS)
}
