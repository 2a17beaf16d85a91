//! `transition-coverage LOG`: checks the transition log of a test run
//! (written under `DATAJUMP_TRANSITION_LOG`, see `datajump_engine::transitions`)
//! against the engine's table of transitions. Prints how often the engine
//! tests (`engine/tests/`) and the end-to-end suite each applied every
//! `(transition, from, to)` of the table, and exits non-zero when one was
//! never applied by either, when one that only real processes make was
//! never applied end to end ([`END_TO_END_ONLY`]), or when the log holds
//! one the table does not.

use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

use datajump_engine::transitions::{RunTransition, TaskTransition};
use sea_orm::Iterable;

/// The programs of the engine's own tests (`engine/tests/*.rs` and its unit
/// tests); every other program (the `datajump` roles, the end-to-end test
/// binary) is the end-to-end suite.
const ENGINE_TESTS: &[&str] = &["model", "rules", "maps", "concurrency", "datajump_engine"];

/// Transitions whose cause lives outside the engine — a runner's drain
/// timeout, a heartbeat that expires, a queue no runner serves while the
/// ticker's deadline scan runs — so an engine test that calls the entry
/// point directly says nothing about whether the roles ever make them:
/// each must also be applied end to end.
const END_TO_END_ONLY: &[TaskTransition] = &[
    TaskTransition::RequeueOnDrain,
    TaskTransition::TakeOver,
    TaskTransition::TakeOverLostTooOften,
    TaskTransition::QueueTimeout,
];

/// How often each suite applied one row of the table.
#[derive(Default, Clone, Copy)]
struct Applied {
    engine: u64,
    end_to_end: u64,
}

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
    let mut applied: BTreeMap<String, Applied> = BTreeMap::new();
    for line in log.lines().filter(|line| !line.trim().is_empty()) {
        let (program, transition) = line.split_once('\t').unwrap_or(("", line));
        let counts = applied.entry(transition.trim().to_owned()).or_default();
        if ENGINE_TESTS.contains(&program) {
            counts.engine += 1;
        } else {
            counts.end_to_end += 1;
        }
    }
    let end_to_end_only: BTreeSet<String> = END_TO_END_ONLY
        .iter()
        .flat_map(|t| {
            t.from().iter().flat_map(move |from| {
                t.to()
                    .iter()
                    .map(move |to| format!("task {t:?} {from} {to}"))
            })
        })
        .collect();
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
    let (mut never, mut not_end_to_end) = (Vec::new(), Vec::new());
    let (mut by_engine, mut by_end_to_end) = (0, 0);
    println!("{:>8} {:>8}  transition from to", "engine", "e2e");
    for row in &table {
        let counts = applied.remove(row).unwrap_or_default();
        let must_be_end_to_end = end_to_end_only.contains(row);
        by_engine += usize::from(counts.engine > 0);
        by_end_to_end += usize::from(counts.end_to_end > 0);
        println!(
            "{:>8} {:>8}  {row}{}",
            counts.engine,
            counts.end_to_end,
            if must_be_end_to_end {
                "   (end to end required)"
            } else {
                ""
            }
        );
        if counts.engine + counts.end_to_end == 0 {
            never.push(row);
        } else if must_be_end_to_end && counts.end_to_end == 0 {
            not_end_to_end.push(row);
        }
    }
    let unknown: Vec<&String> = applied.keys().collect();
    for row in &unknown {
        let counts = applied[*row];
        println!(
            "{:>8} {:>8}  {row}   <- not in the table",
            counts.engine, counts.end_to_end
        );
    }
    println!(
        "{} of {} transitions applied: {by_engine} by the engine tests, {by_end_to_end} end to end",
        table.len() - never.len(),
        table.len()
    );
    if never.is_empty() && not_end_to_end.is_empty() && unknown.is_empty() {
        return ExitCode::SUCCESS;
    }
    for row in &never {
        eprintln!("never applied by any test: {row}");
    }
    for row in &not_end_to_end {
        eprintln!("only real processes make it, but no end-to-end test did: {row}");
    }
    for row in &unknown {
        eprintln!("applied but not in the engine's table: {row}");
    }
    ExitCode::FAILURE
}
