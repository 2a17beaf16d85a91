//! SWITCH conditions: expressions in the Common Expression Language (CEL)
//! that choose a SWITCH task's branch (docs/DAG_FORMAT.md, "SWITCH").
//!
//! The shaping decision: a condition is written by a DAG's author but
//! evaluated inside the engine, in a process every run shares, so nothing
//! about it may be unbounded.
//! - Its length ([`MAX_BYTES`]) and bracket nesting ([`MAX_NESTING`]) are
//!   checked on the text, before any parser sees it: the CEL parser recurses
//!   once per level and its stack grows with it.
//! - It is compiled and evaluated on a thread of its own whose stack is
//!   known ([`STACK_BYTES`]), many times what the longest condition those
//!   limits allow needs, not on whatever thread the caller runs on.
//! - A macro that loops (`all`, `exists`, `exists_one`, `map`, `filter`)
//!   may not run inside another, so evaluation costs at most the
//!   condition's length times the length of one list, and `json()` refuses
//!   documents nested deeper than [`MAX_JSON_DEPTH`].
//!
//! What a condition may read is fixed when it is parsed: `params.<name>`,
//! `biz_date`, `tasks.<task>.output.<key>` and `tasks.<task>.status`.
//! [`Condition::reads`] lists them, so a DAG's checks can refuse a task that
//! does not run before the SWITCH, and the engine loads only what is read.
//! Outputs are text: `int()` and `json()` convert them, explicitly. A key
//! that is not there is an evaluation error, never an empty string.

mod reads;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use cel::{Context, ExecutionError, Program, Value};

pub use reads::{Reads, TaskReads};

/// Longest condition, in bytes.
pub const MAX_BYTES: usize = 1024;

/// Deepest nesting of brackets (`(`, `[`, `{`) in a condition.
pub const MAX_NESTING: usize = 16;

/// Deepest nesting of arrays and objects in a document `json()` reads.
pub const MAX_JSON_DEPTH: usize = 32;

/// Stack of the thread a condition is compiled and evaluated on. A
/// condition of [`MAX_BYTES`] needs under 1 MiB in the worst shapes (a
/// chain of 500 additions, 16 nested lists), optimized or not.
pub const STACK_BYTES: usize = 16 << 20;

/// Why a condition is refused before it runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConditionError {
    /// Longer than [`MAX_BYTES`].
    #[error("is {bytes} bytes long; a condition may be at most {MAX_BYTES}")]
    TooLong {
        /// Its length.
        bytes: usize,
    },
    /// Brackets nested deeper than [`MAX_NESTING`].
    #[error(
        "nests brackets {depth} deep at column {column}; a condition may nest at most {MAX_NESTING}"
    )]
    TooDeep {
        /// How deep, where it went past the limit.
        depth: usize,
        /// 1-based column of the bracket that went past it.
        column: usize,
    },
    /// Not CEL.
    #[error("does not parse at line {line}, column {column}: {message}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's words.
        message: String,
    },
    /// Reads a name that is none of the values a condition may read.
    #[error(
        "reads '{name}' at column {column}, which is not a value a condition may read: write params.<name>, biz_date, tasks.<task>.output.<key> or tasks.<task>.status"
    )]
    UnknownName {
        /// The name.
        name: String,
        /// 1-based column.
        column: usize,
    },
    /// Reads a task other than through its output or status.
    #[error(
        "reads tasks.{task} at column {column} as {what}: write tasks.{task}.output.<key> or tasks.{task}.status"
    )]
    TaskRead {
        /// The task.
        task: String,
        /// What it read (`a whole`, `.retries`).
        what: String,
        /// 1-based column.
        column: usize,
    },
    /// Reads `tasks` other than by a task's name.
    #[error(
        "reads tasks at column {column} without naming a task: write tasks.<task>.output.<key>, or tasks['<task>'] for a name with a '-'"
    )]
    TasksWhole {
        /// 1-based column.
        column: usize,
    },
    /// A looping macro inside another.
    #[error(
        "runs '{name}' inside another macro at column {column}: a condition's loops may not nest"
    )]
    NestedLoop {
        /// The inner macro.
        name: String,
        /// 1-based column.
        column: usize,
    },
    /// The thread it is compiled on could not start or stopped.
    #[error("could not be checked: {0}")]
    Thread(String),
}

/// Why a condition that parsed could not say true or false.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// It reads a key, or a task, that is not there.
    #[error("reads '{key}', which is not there (test with has() first if it may be missing)")]
    Missing {
        /// The key.
        key: String,
    },
    /// CEL's own error (a conversion, an operator on the wrong types).
    #[error("{0}")]
    Failed(String),
    /// It gave a value other than true or false.
    #[error("gave {found}, not true or false")]
    NotBool {
        /// The value, as CEL writes its type.
        found: String,
    },
    /// It no longer parses (stored before a rule it breaks).
    #[error("{0}")]
    Refused(ConditionError),
}

/// A condition that passed every check: it parses, reads only what a
/// condition may, and nests no loop in another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    text: String,
    reads: Reads,
}

impl Condition {
    /// Checks `text` and compiles it on a thread of [`STACK_BYTES`].
    pub fn parse(text: &str) -> Result<Condition, ConditionError> {
        check_size(text)?;
        let owned = text.to_owned();
        let reads = on_bounded_thread(move || compile(&owned).map(|(_, reads)| reads))?;
        Ok(Condition {
            text: text.to_owned(),
            reads,
        })
    }

    /// Checks each of `texts` as [`Condition::parse`] does, all on one
    /// thread.
    pub fn parse_all(texts: &[&str]) -> Vec<Result<Condition, ConditionError>> {
        let owned: Vec<String> = texts.iter().map(|t| (*t).to_owned()).collect();
        let count = owned.len();
        let parsed = on_bounded_thread(move || {
            Ok(owned
                .into_iter()
                .map(|text| {
                    check_size(&text)?;
                    let (_, reads) = compile(&text)?;
                    Ok(Condition { text, reads })
                })
                .collect())
        });
        parsed.unwrap_or_else(|e| vec![Err(e); count])
    }

    /// The condition as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// What it reads.
    pub fn reads(&self) -> &Reads {
        &self.reads
    }
}

/// The values a condition reads: given by the engine for one decision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inputs {
    /// The run's parameters (DAG, task and trigger, merged).
    pub params: BTreeMap<String, String>,
    /// The run's business date, `YYYY-MM-DD`.
    pub biz_date: String,
    /// The tasks read, by name.
    pub tasks: BTreeMap<String, TaskValues>,
}

/// What a condition may read of one task.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskValues {
    /// Its status (`SUCCESS`, `FAILED`, …).
    pub status: String,
    /// What its last attempt declared.
    pub outputs: BTreeMap<String, String>,
}

/// Evaluates `conditions` in order, on one thread of [`STACK_BYTES`],
/// until one is true or cannot be evaluated: the first true one wins. The
/// outcomes returned are those evaluated, one per condition up to that one.
pub fn first_true(conditions: &[&str], inputs: &Inputs) -> Vec<Result<bool, EvalError>> {
    let conditions: Vec<String> = conditions.iter().map(|c| (*c).to_owned()).collect();
    let inputs = inputs.clone();
    let evaluated = on_bounded_thread(move || {
        let context = context(&inputs);
        let mut outcomes = Vec::new();
        for text in &conditions {
            let outcome = evaluate(text, &context);
            let done = !matches!(outcome, Ok(false));
            outcomes.push(outcome);
            if done {
                break;
            }
        }
        Ok(outcomes)
    });
    evaluated.unwrap_or_else(|e| vec![Err(EvalError::Refused(e))])
}

fn evaluate(text: &str, context: &Context<'_, '_>) -> Result<bool, EvalError> {
    check_size(text).map_err(EvalError::Refused)?;
    let (program, _) = compile(text).map_err(EvalError::Refused)?;
    match program.execute(context) {
        Ok(Value::Bool(verdict)) => Ok(verdict),
        Ok(other) => Err(EvalError::NotBool {
            found: other.type_of().to_string(),
        }),
        Err(ExecutionError::NoSuchKey(key)) => Err(EvalError::Missing {
            key: key.to_string(),
        }),
        Err(e) => Err(EvalError::Failed(e.to_string())),
    }
}

/// The length and bracket nesting of `text`, outside string literals.
fn check_size(text: &str) -> Result<(), ConditionError> {
    if text.len() > MAX_BYTES {
        return Err(ConditionError::TooLong { bytes: text.len() });
    }
    match nesting(text, MAX_NESTING) {
        Some((depth, column)) => Err(ConditionError::TooDeep { depth, column }),
        None => Ok(()),
    }
}

/// Where brackets in `text`, outside quotes, first nest deeper than
/// `limit`: `(depth, 1-based column)`. Quotes are `'` and `"` with `\`
/// escapes, as CEL and JSON write them (raw and triple-quoted CEL strings
/// are read as ordinary ones, which can only count more brackets).
fn nesting(text: &str, limit: usize) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (column, c) in text.chars().enumerate() {
        match quote {
            Some(_) if escaped => escaped = false,
            Some(_) if c == '\\' => escaped = true,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '\'' | '"' => quote = Some(c),
                '(' | '[' | '{' => {
                    depth += 1;
                    if depth > limit {
                        return Some((depth, column + 1));
                    }
                }
                ')' | ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
    }
    None
}

/// Parses and checks `text`; for the bounded thread only.
fn compile(text: &str) -> Result<(Program, Reads), ConditionError> {
    let program = Program::compile(text).map_err(|errors| {
        let first = errors.errors.first();
        ConditionError::Syntax {
            line: first.map_or(1, |e| usize::try_from(e.pos.0).unwrap_or(1).max(1)),
            // The parser counts columns from 1.
            column: first.map_or(1, |e| usize::try_from(e.pos.1).unwrap_or(1).max(1)),
            message: first.map_or_else(
                || errors.to_string(),
                |e| e.msg.trim_start_matches("Syntax error: ").to_owned(),
            ),
        }
    })?;
    let reads = reads::of(&program, text)?;
    Ok((program, reads))
}

/// Runs `work` on a thread of [`STACK_BYTES`] and waits for it.
fn on_bounded_thread<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ConditionError> + Send + 'static,
) -> Result<T, ConditionError> {
    std::thread::Builder::new()
        .name("condition".to_owned())
        .stack_size(STACK_BYTES)
        .spawn(work)
        .map_err(|e| ConditionError::Thread(e.to_string()))?
        .join()
        .map_err(|_| ConditionError::Thread("its thread panicked".to_owned()))?
}

/// The context a condition is evaluated in: the values it may read, and
/// `json()`.
fn context(inputs: &Inputs) -> Context<'static, 'static> {
    let mut context = Context::default();
    let params: HashMap<String, Value> = inputs
        .params
        .iter()
        .map(|(k, v)| (k.clone(), Value::from(v.clone())))
        .collect();
    let tasks: HashMap<String, Value> = inputs
        .tasks
        .iter()
        .map(|(name, task)| {
            let outputs: HashMap<String, Value> = task
                .outputs
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(v.clone())))
                .collect();
            let fields = HashMap::from([
                ("status".to_owned(), Value::from(task.status.clone())),
                ("output".to_owned(), Value::from(outputs)),
            ]);
            (name.clone(), Value::from(fields))
        })
        .collect();
    context.add_variable_from_value("params", params);
    context.add_variable_from_value("biz_date", inputs.biz_date.clone());
    context.add_variable_from_value("tasks", tasks);
    // `json` is not a standard function, so it cannot clash with one.
    let _ = context.add_function("json", json);
    context
}

/// `json(text)`: the JSON document `text` as CEL values; numbers that are
/// whole and fit in 64 bits are ints, others doubles.
fn json(text: Arc<String>) -> Result<Value, ExecutionError> {
    if let Some((depth, _)) = nesting(&text, MAX_JSON_DEPTH) {
        return Err(ExecutionError::function_error(
            "json",
            format!("the document nests {depth} deep; at most {MAX_JSON_DEPTH}"),
        ));
    }
    let document: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| ExecutionError::function_error("json", e.to_string()))?;
    Ok(to_value(document))
}

fn to_value(document: serde_json::Value) -> Value {
    use serde_json::Value as J;
    match document {
        J::Null => Value::Null,
        J::Bool(b) => Value::Bool(b),
        J::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::Int(i),
            (None, Some(u)) => Value::UInt(u),
            (None, None) => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        J::String(s) => Value::from(s),
        J::Array(items) => Value::List(Arc::new(items.into_iter().map(to_value).collect())),
        J::Object(fields) => Value::from(
            fields
                .into_iter()
                .map(|(k, v)| (k, to_value(v)))
                .collect::<HashMap<String, Value>>(),
        ),
    }
}

#[cfg(test)]
mod tests;
