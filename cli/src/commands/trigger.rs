//! `datajump trigger DAG [--param k=v]… [--wait]`.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};
use chrono::NaiveDate;
use clap::Args;
use datajump_shared::plan::Params;

use crate::Global;
use crate::client::Client;
use crate::commands::runs::print_run;

/// Arguments of `trigger`.
#[derive(Args)]
pub struct TriggerArgs {
    /// The DAG's name.
    dag: String,
    /// A run parameter `NAME=VALUE` (repeatable); overrides DAG and task params.
    #[arg(long = "param", short = 'p', value_name = "NAME=VALUE")]
    params: Vec<String>,
    /// Business date of the run (default: yesterday in DATAJUMP_TIMEZONE).
    #[arg(long)]
    biz_date: Option<NaiveDate>,
    /// Wait for the run to finish; exit 0 only if it ends SUCCESS.
    #[arg(long)]
    wait: bool,
    /// With --wait: give up after this many seconds.
    #[arg(long, default_value_t = 3600)]
    timeout: u64,
}

fn parse_params(raw: &[String]) -> Result<Params> {
    let mut params = Params::new();
    for item in raw {
        let Some((name, value)) = item.split_once('=') else {
            bail!("--param '{item}': expected NAME=VALUE");
        };
        if name.is_empty() {
            bail!("--param '{item}': the name is empty");
        }
        params.insert(name.to_owned(), value.to_owned());
    }
    Ok(params)
}

/// Runs `trigger`.
pub async fn run(global: &Global, args: TriggerArgs) -> Result<ExitCode> {
    let params = parse_params(&args.params)?;
    let client = Client::connect(global).await?;
    let key = client.trigger(&args.dag, params, args.biz_date).await?;
    println!("triggered {} (run key {key})", args.dag);
    if !args.wait {
        return Ok(ExitCode::SUCCESS);
    }
    let view = client.wait(&key, Duration::from_secs(args.timeout)).await?;
    print_run(&view);
    Ok(if view.run.status == "SUCCESS" {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params() {
        let p = parse_params(&["a=1".into(), "b=x=y".into()]).unwrap();
        assert_eq!(p["a"], "1");
        assert_eq!(p["b"], "x=y");
        assert!(parse_params(&["novalue".into()]).is_err());
        assert!(parse_params(&["=v".into()]).is_err());
    }
}
