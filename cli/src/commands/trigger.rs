//! `datajump trigger DAG [--param k=v]… [--wait]`, through the API.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};
use chrono::NaiveDate;
use clap::Args;
use datajump_api::dto::{RunDetail, TriggerResponse};
use serde_json::{Map, Value, json};

use crate::Global;
use crate::api::{Api, print_json, read};
use crate::commands::runs::print_run;

/// Arguments of `trigger`.
#[derive(Args)]
pub struct TriggerArgs {
    /// The DAG's name.
    dag: String,
    /// A run parameter `NAME=VALUE` (repeatable); overrides DAG and task params.
    #[arg(long = "param", short = 'p', value_name = "NAME=VALUE")]
    params: Vec<String>,
    /// Business date of the run (default: yesterday in the API's time zone).
    #[arg(long)]
    biz_date: Option<NaiveDate>,
    /// Wait for the run to finish; exit 0 only if it ends SUCCESS.
    #[arg(long)]
    wait: bool,
    /// With --wait: give up after this many seconds.
    #[arg(long, default_value_t = 3600)]
    timeout: u64,
    /// Print the API's JSON: the trigger's answer, or with --wait the finished run.
    #[arg(long)]
    json: bool,
}

fn parse_params(raw: &[String]) -> Result<Map<String, Value>> {
    let mut params = Map::new();
    for item in raw {
        let Some((name, value)) = item.split_once('=') else {
            bail!("--param '{item}': expected NAME=VALUE");
        };
        if name.is_empty() {
            bail!("--param '{item}': the name is empty");
        }
        params.insert(name.to_owned(), json!(value));
    }
    Ok(params)
}

/// Runs `trigger`.
pub async fn run(global: &Global, args: TriggerArgs) -> Result<ExitCode> {
    let params = parse_params(&args.params)?;
    let api = Api::new(&global.api_url)?;
    let dag_id = api.dag_id(&args.dag).await?;
    let mut body = json!({ "params": params });
    if let Some(date) = args.biz_date {
        body["bizDate"] = json!(date);
    }
    let answer = api
        .post(&["dags", &dag_id.to_string(), "trigger"], Some(&body))
        .await?;
    let triggered: TriggerResponse = read(answer.clone())?;
    if !args.wait {
        if args.json {
            print_json(&answer);
        } else {
            println!(
                "triggered {} (run key {}, biz date {})",
                args.dag, triggered.run_key, triggered.biz_date
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !args.json {
        println!("triggered {} (run key {})", args.dag, triggered.run_key);
    }
    let finished = wait(&api, &triggered.run_key, Duration::from_secs(args.timeout)).await?;
    let run: RunDetail = read(finished.clone())?;
    if args.json {
        print_json(&finished);
    } else {
        print_run(&run);
    }
    Ok(if run.run.status == datajump_shared::RunStatus::Success {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Waits until the run with key `run_key` has finished; returns the API's
/// answer for it (the run with its task instances).
async fn wait(api: &Api, run_key: &str, timeout: Duration) -> Result<Value> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut created = false;
    loop {
        match api
            .get(&["dags", "instances", "by-key", run_key], &[])
            .await
        {
            Ok(answer) => {
                created = true;
                let status = answer["status"].as_str().unwrap_or_default();
                if !matches!(status, "RUNNING" | "QUEUED") {
                    return Ok(answer);
                }
            }
            // 404 until a resolver has taken the fire and created the run.
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
        if tokio::time::Instant::now() >= deadline {
            if created {
                bail!("the run did not finish within {}s", timeout.as_secs());
            }
            bail!(
                "no resolver created the run within {}s: is `datajump up` (or a resolver) running?",
                timeout.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
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
