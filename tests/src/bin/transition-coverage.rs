//! `transition-coverage LOG`: checks the end-to-end suite's transition log
//! (written under `DATAJUMP_TRANSITION_LOG`, see `datajump_engine::transitions`)
//! against the engine's table of transitions. Prints how often each
//! `(transition, from, to)` of the table was applied and exits non-zero when
//! one never was, or when the log holds one the table does not.

use std::collections::BTreeMap;
use std::process::ExitCode;

use datajump_engine::transitions::{RunTransition, TaskTransition};
use sea_orm::Iterable;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: transition-coverage LOG (the file DATAJUMP_TRANSITION_LOG named)");
        return ExitCode::from(2);
    };
    let log = match std::fs::read_to_string(&path) {
        Ok(log) => log,
        Err(e) => {
            eprintln!("cannot read the transition log {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut applied: BTreeMap<String, u64> = BTreeMap::new();
    for line in log.lines().filter(|line| !line.trim().is_empty()) {
        *applied.entry(line.trim().to_owned()).or_default() += 1;
    }
    let mut table = Vec::new();
    for t in TaskTransition::iter() {
        for from in t.from() {
            for to in t.to() {
                table.push(format!("task {t:?} {from} {to}"));
            }
        }
    }
    for t in RunTransition::iter() {
        for from in t.from() {
            for to in t.to() {
                table.push(format!("run {t:?} {from} {to}"));
            }
        }
    }
    let mut missing = Vec::new();
    println!("{:>8}  transition from to", "applied");
    for row in &table {
        let count = applied.remove(row).unwrap_or(0);
        println!("{count:>8}  {row}");
        if count == 0 {
            missing.push(row);
        }
    }
    let unknown: Vec<&String> = applied.keys().collect();
    for row in &unknown {
        println!("{:>8}  {row}   <- not in the table", applied[*row]);
    }
    println!(
        "{} of {} transitions applied",
        table.len() - missing.len(),
        table.len()
    );
    if missing.is_empty() && unknown.is_empty() {
        return ExitCode::SUCCESS;
    }
    for row in &missing {
        eprintln!("never applied by the end-to-end suite: {row}");
    }
    for row in &unknown {
        eprintln!("applied but not in the engine's table: {row}");
    }
    ExitCode::FAILURE
}
