//! Runs every case of `tests/data/cron_vectors.jsonl` (the rules in `docs/CRON.md`) against
//! the cron crate, and checks a few descriptions.

use chrono::{DateTime, SecondsFormat};
use datajump_cron::{CronExpr, parse_time_zone};
use serde_json::Value;

const VECTORS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/cron_vectors.jsonl"
));

/// Checks one case; `Err` describes how it failed.
fn check(case: &Value) -> Result<(), String> {
    let input = case["input"].as_str().ok_or("no input")?;
    let parsed = CronExpr::parse(input);
    let expect = &case["expect"];
    if expect.as_str() == Some("error") {
        return match parsed {
            Err(_) => Ok(()),
            Ok(expr) => Err(format!(
                "expected a parse error, got {:?} firing first at {:?}",
                expr.dialect(),
                expr.next_after(&chrono::Utc::now())
            )),
        };
    }
    let expected: Vec<&str> = expect
        .as_array()
        .ok_or("expect is neither \"error\" nor a list")?
        .iter()
        .map(|v| v.as_str().unwrap_or("<not a string>"))
        .collect();
    let expr = parsed.map_err(|e| format!("expected {expected:?}, got error: {e}"))?;
    let tz = parse_time_zone(case["tz"].as_str().ok_or("no tz")?).map_err(|e| e.to_string())?;
    let after = case["after"]
        .as_str()
        .ok_or("a case with fire times needs 'after'")?;
    let after = DateTime::parse_from_rfc3339(after)
        .map_err(|e| format!("bad 'after' {after}: {e}"))?
        .with_timezone(&tz);
    let n = case["n"].as_u64().ok_or("no n")?;
    let n = usize::try_from(n).map_err(|e| e.to_string())?;
    let got: Vec<String> = expr
        .iter_after(&after)
        .take(n)
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, false))
        .collect();
    if got == expected {
        Ok(())
    } else {
        Err(format!("expected {expected:?}\n      got      {got:?}"))
    }
}

#[test]
fn all_cron_vectors_pass() {
    let mut total = 0;
    let mut failures = Vec::new();
    for (number, line) in VECTORS.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        total += 1;
        let case: Value = match serde_json::from_str(line) {
            Ok(case) => case,
            Err(e) => {
                failures.push(format!("line {}: not JSON: {e}", number + 1));
                continue;
            }
        };
        if let Err(problem) = check(&case) {
            failures.push(format!(
                "{} ({:?}): {problem}",
                case["id"].as_str().unwrap_or("?"),
                case["input"].as_str().unwrap_or("?")
            ));
        }
    }
    assert!(total > 0, "no vectors found");
    println!("{}/{total} cron vectors pass", total - failures.len());
    assert!(
        failures.is_empty(),
        "{} of {total} cron vectors failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn descriptions() {
    let cases = [
        (
            "0 0 12 LW * ?",
            "At 12:00, on the last weekday of the month",
        ),
        (
            "0 0 10 ? * 6#3",
            "At 10:00, on the third Friday of the month",
        ),
        ("0 30 8 ? * MON-FRI", "At 08:30, Monday through Friday"),
        ("30 8 * * 1-5", "At 08:30, Monday through Friday"),
        (
            "0 15 10 ? * 6L",
            "At 10:15, on the last Friday of the month",
        ),
        (
            "0 0 12 L-3 * ?",
            "At 12:00, 3 days before the last day of the month",
        ),
        (
            "0 0 12 15W * ?",
            "At 12:00, on the weekday nearest to day 15 of the month",
        ),
        ("0 0 2 * * ? *", "At 02:00, every day"),
        ("0 0/15 * * * ?", "Every 15 minutes"),
        (
            "0 0 12 1 1 ? 2025-2027",
            "At 12:00, on January 1, only in 2025-2027",
        ),
    ];
    let mut failures = Vec::new();
    for (input, expected) in cases {
        match CronExpr::parse(input) {
            Ok(expr) if expr.describe() == expected => {}
            Ok(expr) => failures.push(format!(
                "{input}: expected {expected:?}, got {:?}",
                expr.describe()
            )),
            Err(e) => failures.push(format!("{input}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
