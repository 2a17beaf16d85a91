//! Property tests for the DAG-file parser (`datajump_shared::dag_file`): no text makes
//! [`DagFile::parse`] panic, whether built from YAML's tokens or by breaking the example
//! files in `dags/`; a generated valid DAG parses to what was written; and a parsed file,
//! written back out as YAML or JSON, parses to the same value.

use datajump_shared::dag_file::{DagFile, DependencyFile};
use proptest::prelude::*;
use proptest::test_runner::Config;

/// A failure prints its minimal case; nothing is written into the repository.
fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

macro_rules! examples {
    ($($file:literal),* $(,)?) => {
        [$(($file, include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../dags/", $file)))),*]
    };
}

/// The example DAG files shipped with DataJump.
const EXAMPLES: [(&str, &str); 12] = examples![
    "example_cross_dag.yaml",
    "example_diamond.yaml",
    "example_event.yaml",
    "example_http.yaml",
    "example_python.yaml",
    "example_retries.yaml",
    "example_sql.yaml",
    "example_warehouse.yaml",
    "example_warehouse_dwd.yaml",
    "example_warehouse_dws.yaml",
    "example_warehouse_ods.yaml",
    "example_weekday.yaml",
];

/// YAML's punctuation, the format's keys and values that are nearly right.
const TOKENS: &[&str] = &[
    "name: ",
    "tasks:",
    "\n",
    "\n  ",
    "\n    ",
    "  - ",
    "- ",
    "depends_on: ",
    "[",
    "]",
    "{",
    "}",
    ": ",
    ",",
    "type: ",
    "SHELL",
    "SQL",
    "PYTHON",
    "HTTP",
    "command: ",
    "retry:",
    "max: ",
    "interval: ",
    "strategy: ",
    "EXPONENTIAL",
    "ONE_SUCCESS",
    "jitter: ",
    "-1",
    "1.5",
    ".nan",
    "1e400",
    "99999999999999999999",
    "0",
    "null",
    "~",
    "true",
    "&a ",
    "*a",
    "!!str ",
    "!!binary ",
    "<<: ",
    "'",
    "\"",
    "|",
    ">-",
    "# ",
    "schedules:",
    "cron: ",
    "\"0 0 2 * * ?\"",
    "\"61 * * * *\"",
    "timezone: ",
    "Mars/X",
    "outputs: ",
    "params: ",
    "${a.output.b}",
    "${x:shell}",
    "timeout: ",
    "1h",
    "-5s",
    "99999999d",
    "queue: ",
    "offset_day: ",
    "previous_run: ",
    "task: ",
    "a",
    "b",
    "a/b",
    "é",
    "\t",
    "---\n",
    "...\n",
];

fn yaml_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..40).prop_map(|t| t.concat())
}

/// One way to break a file, at a position given as a fraction of its length.
#[derive(Debug, Clone)]
enum Mutation {
    Delete { at: f64, len: usize },
    Insert { at: f64, token: &'static str },
    DuplicateLine { at: f64 },
    SwapLines { a: f64, b: f64 },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = 0.0f64..1.0;
    prop_oneof![
        (at.clone(), 1usize..20).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (at.clone(), prop::sample::select(TOKENS))
            .prop_map(|(at, token)| Mutation::Insert { at, token }),
        at.clone().prop_map(|at| Mutation::DuplicateLine { at }),
        (at.clone(), at).prop_map(|(a, b)| Mutation::SwapLines { a, b }),
    ]
}

fn index(at: f64, len: usize) -> usize {
    ((at * len as f64) as usize).min(len.saturating_sub(1))
}

fn mutate(text: &str, mutations: &[Mutation]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for mutation in mutations {
        match *mutation {
            Mutation::Delete { at, len } => {
                let start = index(at, chars.len());
                let end = (start + len).min(chars.len());
                chars.drain(start..end);
            }
            Mutation::Insert { at, token } => {
                let at = index(at, chars.len() + 1);
                chars.splice(at..at, token.chars());
            }
            Mutation::DuplicateLine { at } | Mutation::SwapLines { a: at, .. } => {
                let text: String = chars.iter().collect();
                let mut lines: Vec<&str> = text.split('\n').collect();
                let i = index(at, lines.len());
                match *mutation {
                    Mutation::SwapLines { b, .. } => {
                        let j = index(b, lines.len());
                        lines.swap(i, j);
                    }
                    _ => lines.insert(i, lines[i]),
                }
                chars = lines.join("\n").chars().collect();
            }
        }
    }
    chars.into_iter().collect()
}

/// The value a file parses to, as JSON, for comparing two parses (the types have no `Eq`).
fn as_json(dag: &DagFile) -> serde_json::Value {
    serde_json::to_value(dag).expect("a parsed DAG serializes")
}

/// Parses `text`, writes the result back as YAML and as JSON, and checks each parses to
/// the same value.
fn check_round_trip(text: &str) -> Result<(), TestCaseError> {
    let Ok(dag) = DagFile::parse(text) else {
        return Ok(());
    };
    let yaml = serde_yaml_ng::to_string(&dag).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let json = serde_json::to_string(&dag).map_err(|e| TestCaseError::fail(e.to_string()))?;
    for (form, written) in [("YAML", yaml), ("JSON", json)] {
        match DagFile::parse(&written) {
            Ok(again) => prop_assert_eq!(
                as_json(&again),
                as_json(&dag),
                "{} form:\n{}",
                form,
                written
            ),
            Err(e) => prop_assert!(
                false,
                "the {} form of a valid DAG does not parse: {}\n{}",
                form,
                e,
                written
            ),
        }
    }
    Ok(())
}

/// A name the format accepts: not only digits, no `/`, no spaces at either end.
fn name() -> impl Strategy<Value = String> {
    "[A-Za-z_é日][A-Za-z0-9_ .é日-]{0,10}[A-Za-z0-9_]"
}

/// A generated task: its name, and for each earlier task whether and how it depends on it.
#[derive(Debug, Clone)]
struct GenTask {
    name: String,
    depends: Vec<Option<bool>>,
    retry: Option<(i32, i32, &'static str)>,
    strategy: &'static str,
    priority: i32,
}

fn dag(min_tasks: usize) -> impl Strategy<Value = (String, Vec<GenTask>, bool)> {
    let task = |earlier: usize| {
        (
            name(),
            prop::collection::vec(prop::option::of(any::<bool>()), earlier),
            prop::option::of((
                0i32..10,
                0i32..3600,
                prop::sample::select(vec!["FIXED", "EXPONENTIAL"]),
            )),
            prop::sample::select(vec![
                "ALL_SUCCESS",
                "ONE_SUCCESS",
                "NONE_FAILED",
                "ALL_DONE",
                "NONE",
            ]),
            1i32..=10,
        )
            .prop_map(|(name, depends, retry, strategy, priority)| GenTask {
                name,
                depends,
                retry,
                strategy,
                priority,
            })
    };
    (name(), min_tasks..8, any::<bool>()).prop_flat_map(move |(dag_name, count, scheduled)| {
        let tasks: Vec<_> = (0..count).map(task).collect();
        (Just(dag_name), tasks, Just(scheduled))
    })
}

/// JSON's quoting is YAML's double-quoted style: any name goes in safely.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

/// The generated tasks with names made unique (the format refuses duplicates).
fn unique(tasks: &[GenTask]) -> Vec<String> {
    tasks
        .iter()
        .enumerate()
        .map(|(i, task)| format!("{}{i}", task.name))
        .collect()
}

fn render(dag_name: &str, tasks: &[GenTask], scheduled: bool) -> String {
    let names = unique(tasks);
    let mut out = format!("name: {}\n", quoted(dag_name));
    if scheduled {
        out.push_str("schedules:\n  - cron: \"0 30 2 * * ?\"\n    timezone: Europe/Berlin\n");
    }
    out.push_str("tasks:\n");
    for (i, task) in tasks.iter().enumerate() {
        out.push_str(&format!(
            "  - name: {}\n    type: SHELL\n    command: echo {i}\n    strategy: {}\n    priority: {}\n",
            quoted(&names[i]),
            task.strategy,
            task.priority
        ));
        if let Some((max, interval, strategy)) = task.retry {
            out.push_str(&format!(
                "    retry:\n      max: {max}\n      interval: {interval}\n      strategy: {strategy}\n"
            ));
        }
        let depends: Vec<String> = task
            .depends
            .iter()
            .enumerate()
            .filter_map(|(j, how)| {
                how.map(|full| {
                    if full {
                        format!("{{ task: {}, type: WEAK }}", quoted(&names[j]))
                    } else {
                        quoted(&names[j])
                    }
                })
            })
            .collect();
        if !depends.is_empty() {
            out.push_str(&format!("    depends_on: [{}]\n", depends.join(", ")));
        }
    }
    out
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn parse_never_panics_on_yaml_tokens(text in yaml_soup()) {
        let _ = DagFile::parse(&text);
        check_round_trip(&text)?;
    }

    #[test]
    fn parse_never_panics_on_any_text(text in any::<String>()) {
        let _ = DagFile::parse(&text);
    }
}

proptest! {
    #![proptest_config(config(192))]

    #[test]
    fn parse_never_panics_on_broken_example_files(
        example in 0..EXAMPLES.len(),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let text = mutate(EXAMPLES[example].1, &mutations);
        let _ = DagFile::parse(&text);
        check_round_trip(&text)?;
    }

    #[test]
    fn a_generated_dag_parses_to_what_it_says((dag_name, tasks, scheduled) in dag(1)) {
        let text = render(&dag_name, &tasks, scheduled);
        let dag = DagFile::parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(&dag.name, &dag_name);
        prop_assert_eq!(dag.schedules.len(), usize::from(scheduled));
        let names = unique(&tasks);
        prop_assert_eq!(dag.tasks.iter().map(|t| t.name.clone()).collect::<Vec<_>>(), names.clone());
        for (task, generated) in dag.tasks.iter().zip(&tasks) {
            let expected: Vec<(&str, bool)> = generated
                .depends
                .iter()
                .enumerate()
                .filter_map(|(j, how)| how.map(|full| (names[j].as_str(), full)))
                .collect();
            let got: Vec<(&str, bool)> = task
                .depends_on
                .iter()
                .map(|d| (d.parts().task, matches!(d, DependencyFile::Full { .. })))
                .collect();
            prop_assert_eq!(got, expected);
            prop_assert_eq!(task.priority, generated.priority);
            prop_assert_eq!(task.retry.max, generated.retry.map_or(task.retry.max, |r| r.0));
        }
        // Dependencies only point back, so some order runs every task after its parents.
        let order = dag.topological_order().map_err(|cycle| TestCaseError::fail(format!("{cycle:?}")))?;
        prop_assert_eq!(order.len(), tasks.len());
        check_round_trip(&text)?;
    }

    #[test]
    fn a_dependency_cycle_is_refused((dag_name, tasks, scheduled) in dag(2)) {
        // The first task also waits for the last: a cycle through every chain to it.
        let mut tasks = tasks;
        let last = tasks.len() - 1;
        tasks[last].depends[0] = Some(false);
        let names = unique(&tasks);
        let text = render(&dag_name, &tasks, scheduled).replacen(
            "    command: echo 0\n",
            &format!("    command: echo 0\n    depends_on: [{}]\n", quoted(&names[last])),
            1,
        );
        let result = DagFile::parse(&text);
        prop_assert!(result.is_err(), "a cycle was accepted:\n{}", text);
        let message = result.err().map(|e| e.to_string()).unwrap_or_default();
        prop_assert!(message.contains("cycle"), "{}", message);
    }
}

#[test]
fn every_example_file_round_trips() {
    for (file, text) in EXAMPLES {
        assert!(DagFile::parse(text).is_ok(), "{file} does not parse");
        if let Err(e) = check_round_trip(text) {
            panic!("{file}: {e}");
        }
    }
}
