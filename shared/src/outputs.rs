//! Values a task hands to the tasks after it (DolphinScheduler's OUT
//! parameters, Airflow's XCom), kept small on purpose: they are strings in
//! the scheduler's database, not a data channel.
//!
//! A task declares one by printing a line `##dj-output name=value`, or by
//! writing `name=value` lines to the file `$DJ_OUTPUT` names. Its last
//! attempt's outputs are stored on its instance, and a task downstream of
//! it in the same run reads one as the parameter `${task.output.name}` (or
//! `$DJ_PARAM_TASK_OUTPUT_NAME`). Their values were made at run time by
//! whatever the task read, so they are **untrusted** under
//! [`crate::params`]' rules: quoted (`${extract.output.rows:shell}`) or read
//! from the environment in scripts, bare in SQL only as a number or date.

use std::collections::BTreeMap;

use thiserror::Error;

/// The prefix of an output line on a task's stdout.
pub const LINE_PREFIX: &str = "##dj-output ";
/// The environment variable naming the file a task may write outputs to.
pub const FILE_ENV: &str = "DJ_OUTPUT";
/// Most outputs one attempt keeps.
pub const MAX_OUTPUTS: usize = 64;
/// Longest value, in bytes.
pub const MAX_VALUE_BYTES: usize = 4096;
/// Longest name.
const MAX_NAME_LEN: usize = 64;
/// What joins a task's name and an output's name in a parameter.
const INFIX: &str = ".output.";

/// A task's outputs by name.
pub type Outputs = BTreeMap<String, String>;

/// The environment variable naming the folder a task may write its one
/// large output to, as `<name>.json`.
pub const LARGE_FOLDER_ENV: &str = "DJ_OUTPUT_JSON";
/// The largest large output, in bytes.
pub const MAX_LARGE_BYTES: usize = 1024 * 1024;
/// The most items a large output's array may have.
pub const MAX_LARGE_ITEMS: usize = 10_000;

/// The one large value an attempt may write: a JSON array, read by a
/// map's `over` as `${task.output.<name>}` (docs/PARAMETERS.md, "Values
/// between tasks"). Checked when it is read, so the engine trusts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LargeOutput {
    name: String,
    value: String,
}

impl LargeOutput {
    /// The large output `name` whose file held `bytes`: a JSON array of
    /// at most [`MAX_LARGE_ITEMS`] items and [`MAX_LARGE_BYTES`] bytes.
    pub fn read(name: &str, bytes: &[u8]) -> Result<LargeOutput, LargeOutputError> {
        if !is_output_name(name) {
            return Err(LargeOutputError::BadName(name.to_owned()));
        }
        if bytes.len() > MAX_LARGE_BYTES {
            return Err(LargeOutputError::TooLarge);
        }
        let value: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|e| LargeOutputError::NotAnArray(e.to_string()))?;
        match &value {
            serde_json::Value::Array(items) if items.len() > MAX_LARGE_ITEMS => {
                Err(LargeOutputError::TooManyItems(items.len()))
            }
            serde_json::Value::Array(_) => Ok(LargeOutput {
                name: name.to_owned(),
                value: value.to_string(),
            }),
            _ => Err(LargeOutputError::NotAnArray("not an array".to_owned())),
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The array, as compact JSON text.
    pub fn value(&self) -> &str {
        &self.value
    }
}

/// Why a large output was not kept.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LargeOutputError {
    /// The file's name (less `.json`) breaks the output name rule.
    #[error("{0:?} is not an output name: [A-Za-z_][A-Za-z0-9_]{{0,63}}.json")]
    BadName(String),
    /// Over [`MAX_LARGE_BYTES`] (a reader stops one byte past it).
    #[error("over the {MAX_LARGE_BYTES}-byte limit")]
    TooLarge,
    /// Not a JSON array.
    #[error("not a JSON array: {0}")]
    NotAnArray(String),
    /// Over [`MAX_LARGE_ITEMS`].
    #[error("{0} items, over the {MAX_LARGE_ITEMS}-item limit")]
    TooManyItems(usize),
}

/// Why an output was not kept.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OutputError {
    /// Not `name=value`.
    #[error("an output is written name=value, got {0:?}")]
    Malformed(String),
    /// The name breaks the rule.
    #[error("output name {0:?} must match [A-Za-z_][A-Za-z0-9_]{{0,63}}")]
    BadName(String),
    /// The value is too long.
    #[error(
        "output {name} is {len} bytes, over the {MAX_VALUE_BYTES}-byte limit (outputs are small values, not data)"
    )]
    TooLong {
        /// The output.
        name: String,
        /// Its length.
        len: usize,
    },
    /// One output too many.
    #[error("more than {MAX_OUTPUTS} outputs: {0} is not kept")]
    TooMany(String),
}

/// Whether `name` is a valid output name.
fn is_output_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= MAX_NAME_LEN
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Adds the output `name=value` (as written after [`LINE_PREFIX`], or as a
/// line of the `$DJ_OUTPUT` file) to `outputs`; a later value of a name
/// replaces an earlier one.
pub fn add(outputs: &mut Outputs, written: &str) -> Result<(), OutputError> {
    let written = written.trim_end_matches(['\r', '\n']);
    let Some((name, value)) = written.split_once('=') else {
        return Err(OutputError::Malformed(written.to_owned()));
    };
    let name = name.trim();
    if !is_output_name(name) {
        return Err(OutputError::BadName(name.to_owned()));
    }
    if value.len() > MAX_VALUE_BYTES {
        return Err(OutputError::TooLong {
            name: name.to_owned(),
            len: value.len(),
        });
    }
    if outputs.len() >= MAX_OUTPUTS && !outputs.contains_key(name) {
        return Err(OutputError::TooMany(name.to_owned()));
    }
    outputs.insert(name.to_owned(), value.to_owned());
    Ok(())
}

/// The parameter a task downstream reads output `name` of `task` as.
pub fn param_name(task: &str, name: &str) -> String {
    format!("{task}{INFIX}{name}")
}

/// The task and output a parameter name `task.output.name` reads, if it
/// is one ([`param_name`] read back).
pub fn split_param_name(param: &str) -> Option<(&str, &str)> {
    let (task, output) = param.split_once(INFIX)?;
    (!task.is_empty() && is_output_name(output)).then_some((task, output))
}

/// What an output's environment variable has between its task and its
/// name: `DJ_PARAM_<TASK>_OUTPUT_<NAME>` ([`crate::params::env_name`] of
/// [`param_name`]).
const ENV_INFIX: &str = "_OUTPUT_";

/// Whether a parameter named `name` could stand for a task output: its
/// environment variable has `_OUTPUT_` in it, so it is, or after some
/// apply could be, `DJ_PARAM_<TASK>_OUTPUT_<NAME>` of a task. The rule
/// reads the variable, not the name, since [`crate::params::env_name`]
/// maps many names to one (`a.output.b`, `a_output_b` and `A-Output-B`
/// are all `DJ_PARAM_A_OUTPUT_B`), and it names no task, since tasks come
/// and go with each apply and the variable must stay an output's
/// (docs/SECURITY.md, "Values between tasks").
pub fn looks_like_output(name: &str) -> bool {
    crate::params::env_name(name)
        .strip_prefix(crate::params::ENV_PREFIX)
        .is_some_and(|rest| rest.contains(ENV_INFIX))
}

/// Why a parameter named `name` is refused ([`looks_like_output`]).
pub fn output_like_problem(name: &str) -> String {
    format!(
        "parameter '{}' is reserved: its variable ${} has the form of a task output's \
         ($DJ_PARAM_<TASK>_OUTPUT_<NAME>), which a task reads as the value of a task before it; \
         rename it so that its variable has no _OUTPUT_ in it (upper-cased, with every \
         character other than a letter or digit as _)",
        crate::naming::printable(&crate::naming::shortened(name)),
        crate::params::env_name(&crate::naming::shortened(name)),
    )
}

/// The tasks whose outputs `text` reads: the `task` of every
/// `${task.output.name}` placeholder (with or without a `:modifier`).
pub fn tasks_read(text: &str) -> Vec<&str> {
    let mut tasks = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let body = &rest[start + 2..];
        let Some(end) = body.find('}') else { break };
        let name = body[..end].split(':').next().unwrap_or_default();
        if let Some((task, _)) = split_param_name(name)
            && !tasks.contains(&task)
        {
            tasks.push(task);
        }
        rest = &body[end..];
    }
    tasks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_names_and_values() {
        let mut outputs = Outputs::new();
        add(&mut outputs, "rows=42\n").unwrap();
        add(&mut outputs, "path=/data/x=1").unwrap();
        add(&mut outputs, "rows=43").unwrap();
        assert_eq!(
            outputs["rows"], "43",
            "a later value replaces an earlier one"
        );
        assert_eq!(
            outputs["path"], "/data/x=1",
            "the value is everything after the first '='"
        );
        assert!(matches!(
            add(&mut outputs, "no equals"),
            Err(OutputError::Malformed(_))
        ));
        assert!(matches!(
            add(&mut outputs, "9lives=1"),
            Err(OutputError::BadName(_))
        ));
        assert!(matches!(
            add(&mut outputs, "a.b=1"),
            Err(OutputError::BadName(_))
        ));
        let long = format!("big={}", "x".repeat(MAX_VALUE_BYTES + 1));
        assert!(matches!(
            add(&mut outputs, &long),
            Err(OutputError::TooLong { .. })
        ));
    }

    #[test]
    fn a_large_output_is_a_json_array_within_its_bounds() {
        let read = LargeOutput::read("tables", br#"[ "a", 1 ]"#).expect("an array");
        assert_eq!((read.name(), read.value()), ("tables", r#"["a",1]"#));
        assert!(matches!(
            LargeOutput::read("a.b", b"[]"),
            Err(LargeOutputError::BadName(_))
        ));
        assert!(matches!(
            LargeOutput::read("t", b"{}"),
            Err(LargeOutputError::NotAnArray(_))
        ));
        assert!(matches!(
            LargeOutput::read("t", b"[1,"),
            Err(LargeOutputError::NotAnArray(_))
        ));
        let many = format!("[{}]", vec!["1"; MAX_LARGE_ITEMS + 1].join(","));
        assert_eq!(
            LargeOutput::read("t", many.as_bytes()),
            Err(LargeOutputError::TooManyItems(MAX_LARGE_ITEMS + 1))
        );
        let big = format!("[\"{}\"]", "x".repeat(MAX_LARGE_BYTES));
        assert_eq!(
            LargeOutput::read("t", big.as_bytes()),
            Err(LargeOutputError::TooLarge)
        );
    }

    #[test]
    fn at_most_so_many() {
        let mut outputs = Outputs::new();
        for i in 0..MAX_OUTPUTS {
            add(&mut outputs, &format!("o{i}=1")).unwrap();
        }
        assert!(matches!(
            add(&mut outputs, "one_more=1"),
            Err(OutputError::TooMany(_))
        ));
        add(&mut outputs, "o0=2").unwrap();
    }

    #[test]
    fn references_name_their_tasks() {
        let text =
            "echo ${extract.output.rows:shell} ${bizdate} ${extract.output.path} ${load.output.n}";
        assert_eq!(tasks_read(text), ["extract", "load"]);
        assert!(tasks_read("${a.output.}").is_empty());
        assert_eq!(param_name("extract", "rows"), "extract.output.rows");
    }

    #[test]
    fn names_whose_variable_is_an_outputs_are_output_like() {
        for name in [
            "extract.output.rows",
            "extract_output_rows",
            "Extract-Output-Rows",
            "a b.OUTPUT.c",
            "x.output.",
            "my_output_dir",
        ] {
            assert!(looks_like_output(name), "{name}");
        }
        for name in [
            "output",
            "output_dir",
            "outputs",
            "extract.outputs.rows",
            "rows",
        ] {
            assert!(!looks_like_output(name), "{name}");
        }
        let problem = output_like_problem("extract_output_rows");
        assert!(
            problem.contains("$DJ_PARAM_EXTRACT_OUTPUT_ROWS"),
            "{problem}"
        );
    }
}
