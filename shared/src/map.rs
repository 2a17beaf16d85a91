//! Tasks mapped over a list (docs/DAG_FORMAT.md, "Map"): one instance per
//! item, at most `max_parallel` of them queued or running at once.
//!
//! The shaping decision: **the list is read when the task may run, and
//! checked here once.** Where the list comes from is fixed when the DAG is
//! applied ([`MapSource`]); the engine reads it in the transaction that
//! would have released the task, turns it into [`MapValue`]s with
//! [`items_of`] (or fails the task saying which item broke which rule), and
//! every item's instance carries its [`MapItem`] in its spec, which runners
//! trust. An item was made by whatever an upstream task read, so it is
//! **untrusted** as an output is (`crate::params`): scripts read it from
//! `$DJ_MAP_ITEM` or as `${map.item:shell}`.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The parameter an item's value is substituted as: `${map.item}`.
pub const ITEM_PARAM: &str = "map.item";
/// The parameter an item's 0-based index is substituted as: `${map.index}`.
pub const INDEX_PARAM: &str = "map.index";
/// The environment variable holding an item's value.
pub const ITEM_ENV: &str = "DJ_MAP_ITEM";
/// The environment variable holding an item's 0-based index.
pub const INDEX_ENV: &str = "DJ_MAP_INDEX";

/// Items queued or running at once when the file does not say.
pub const DEFAULT_MAX_PARALLEL: u32 = 16;
/// The most a file may set `max_parallel` to.
pub const MAX_PARALLEL_CEILING: u32 = 1_000;
/// Items a list may have when the file does not say.
pub const DEFAULT_MAX_ITEMS: u32 = 1_000;
/// The most items a list may have, whatever the file says.
pub const MAX_ITEMS_CEILING: u32 = 10_000;
/// The longest item, in bytes (as long as an output's value).
pub const MAX_ITEM_BYTES: usize = crate::outputs::MAX_VALUE_BYTES;

/// Where a mapped task's list comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum MapSource {
    /// Output `name` of `task`, a task it runs after in the same run: a
    /// JSON array as text (`${list_tables.output.tables}`).
    Output {
        /// The task that declared it.
        task: String,
        /// The output's name.
        name: String,
    },
    /// A parameter of the run: a JSON array as text (`${tables}`).
    Param {
        /// The parameter's name.
        name: String,
    },
    /// Written in the DAG file.
    Literal {
        /// The items.
        items: Vec<MapValue>,
    },
}

impl MapSource {
    /// How the file writes it, for messages and the editor.
    pub fn written(&self) -> String {
        match self {
            MapSource::Output { task, name } => {
                format!("${{{}}}", crate::outputs::param_name(task, name))
            }
            MapSource::Param { name } => format!("${{{name}}}"),
            MapSource::Literal { items } => {
                format!("a list of {} written in the file", items.len())
            }
        }
    }
}

/// A task's `map`, as applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapSpec {
    /// Where the list comes from.
    pub over: MapSource,
    /// Items queued or running at once (1..=[`MAX_PARALLEL_CEILING`]).
    pub max_parallel: u32,
    /// The most items the list may have (1..=[`MAX_ITEMS_CEILING`]).
    pub max_items: u32,
}

/// One item of a list: a string, a number or a boolean.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MapValue {
    /// `true` or `false`.
    Bool(bool),
    /// A JSON number, kept as written.
    Number(serde_json::Number),
    /// A string.
    Text(String),
}

impl MapValue {
    /// The value as a parameter and an environment variable hold it: a
    /// string as it is, a number as JSON writes it, `true` / `false`.
    pub fn as_param(&self) -> String {
        match self {
            MapValue::Bool(b) => b.to_string(),
            MapValue::Number(n) => n.to_string(),
            MapValue::Text(s) => s.clone(),
        }
    }
}

/// The item one instance of a mapped task runs for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapItem {
    /// Its 0-based place in the list.
    pub index: i32,
    /// Its value.
    pub value: MapValue,
}

/// Why a list cannot be mapped over.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ListError {
    /// The text is not JSON.
    #[error("is not a JSON array: {0}")]
    NotJson(String),
    /// JSON, but not an array.
    #[error("is not a JSON array but {0}")]
    NotAnArray(&'static str),
    /// More items than the task allows.
    #[error("has {count} items, more than the {max} its map allows (max_items)")]
    TooMany {
        /// Items in the list.
        count: usize,
        /// The task's `max_items`.
        max: u32,
    },
    /// An item that is not a string, number or boolean, or breaks a rule.
    #[error("item {index}: {problem}")]
    BadItem {
        /// Its 0-based index.
        index: usize,
        /// What is wrong with it.
        problem: ItemProblem,
    },
}

/// What is wrong with one item.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ItemProblem {
    /// Not a string, number or boolean.
    #[error("is {0}; an item is a string, a number or a boolean")]
    NotScalar(&'static str),
    /// Too long.
    #[error("is {0} bytes, over the {MAX_ITEM_BYTES}-byte limit")]
    TooLong(usize),
    /// A NUL or another control character.
    #[error("holds a control character (U+{0:04X})")]
    ControlCharacter(u32),
}

/// What kind of JSON value `value` is, as a message says it.
fn kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// The items of `value`, a JSON array of at most `max_items` strings,
/// numbers or booleans of at most [`MAX_ITEM_BYTES`] each, without control
/// characters; the first rule broken otherwise.
pub fn items_of(value: &serde_json::Value, max_items: u32) -> Result<Vec<MapValue>, ListError> {
    let serde_json::Value::Array(items) = value else {
        return Err(ListError::NotAnArray(kind(value)));
    };
    if items.len() > max_items as usize {
        return Err(ListError::TooMany {
            count: items.len(),
            max: max_items,
        });
    }
    items
        .iter()
        .enumerate()
        .map(|(index, item)| item_of(item).map_err(|problem| ListError::BadItem { index, problem }))
        .collect()
}

/// [`items_of`] of `text`, which must be JSON.
pub fn items_of_text(text: &str, max_items: u32) -> Result<Vec<MapValue>, ListError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| ListError::NotJson(e.to_string()))?;
    items_of(&value, max_items)
}

fn item_of(item: &serde_json::Value) -> Result<MapValue, ItemProblem> {
    let value = match item {
        serde_json::Value::Bool(b) => MapValue::Bool(*b),
        serde_json::Value::Number(n) => MapValue::Number(n.clone()),
        serde_json::Value::String(s) => {
            if let Some(c) = s.chars().find(|c| c.is_control()) {
                return Err(ItemProblem::ControlCharacter(u32::from(c)));
            }
            MapValue::Text(s.clone())
        }
        other => return Err(ItemProblem::NotScalar(kind(other))),
    };
    let len = value.as_param().len();
    if len > MAX_ITEM_BYTES {
        return Err(ItemProblem::TooLong(len));
    }
    Ok(value)
}

/// A task's `map` as the DAG file writes it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MapFile {
    /// `"${task.output.name}"` (a task it runs after), `"${param}"`, or
    /// the list itself.
    pub over: OverFile,
    /// Items queued or running at once (default 16, at most 1,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_parallel: Option<u32>,
    /// The most items the list may have (default 1,000, at most 10,000);
    /// a longer list fails the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u32>,
}

/// `over` as written: a reference, or the items.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum OverFile {
    /// `${task.output.name}` or `${param}`.
    Reference(String),
    /// The items themselves.
    Items(Vec<serde_json::Value>),
}

impl MapFile {
    /// The spec it writes, or every rule it breaks.
    pub fn spec(&self) -> Result<MapSpec, Vec<String>> {
        let mut problems = Vec::new();
        let max_parallel = self.max_parallel.unwrap_or(DEFAULT_MAX_PARALLEL);
        if !(1..=MAX_PARALLEL_CEILING).contains(&max_parallel) {
            problems.push(format!(
                "max_parallel must be 1 to {MAX_PARALLEL_CEILING}, got {max_parallel}"
            ));
        }
        let max_items = self.max_items.unwrap_or(DEFAULT_MAX_ITEMS);
        if !(1..=MAX_ITEMS_CEILING).contains(&max_items) {
            problems.push(format!(
                "max_items must be 1 to {MAX_ITEMS_CEILING}, got {max_items}"
            ));
        }
        let over = match &self.over {
            OverFile::Reference(written) => source_of_reference(written).map_err(|e| e.to_string()),
            OverFile::Items(items) => items_of(&serde_json::Value::Array(items.clone()), max_items)
                .map(|items| MapSource::Literal { items })
                .map_err(|e| format!("over: the list {e}")),
        };
        match over {
            Ok(over) if problems.is_empty() => Ok(MapSpec {
                over,
                max_parallel,
                max_items,
            }),
            Ok(_) => Err(problems),
            Err(e) => {
                problems.insert(0, e);
                Err(problems)
            }
        }
    }
}

impl MapSpec {
    /// The file form that applies as this spec.
    pub fn file(&self) -> MapFile {
        let over = match &self.over {
            MapSource::Literal { items } => OverFile::Items(
                items
                    .iter()
                    .map(|item| serde_json::to_value(item).unwrap_or_default())
                    .collect(),
            ),
            reference => OverFile::Reference(reference.written()),
        };
        MapFile {
            over,
            max_parallel: Some(self.max_parallel),
            max_items: Some(self.max_items),
        }
    }
}

/// Why a written `over` names no list.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OverError {
    /// Not one `${…}`.
    #[error(
        "over must be one ${{task.output.name}} or ${{param}}, or a list written in the file; got {0:?}"
    )]
    NotAReference(String),
}

/// The source a written `over` string names: `${task.output.name}` or
/// `${param}`, with nothing around it.
pub fn source_of_reference(written: &str) -> Result<MapSource, OverError> {
    let refused = || OverError::NotAReference(written.to_owned());
    let inner = written
        .trim()
        .strip_prefix("${")
        .and_then(|rest| rest.strip_suffix('}'))
        .ok_or_else(refused)?;
    if let Some((task, name)) = crate::outputs::split_param_name(inner) {
        return Ok(MapSource::Output {
            task: task.to_owned(),
            name: name.to_owned(),
        });
    }
    let is_param = !inner.is_empty()
        && inner
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if is_param && !inner.starts_with("map.") {
        Ok(MapSource::Param {
            name: inner.to_owned(),
        })
    } else {
        Err(refused())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_list_of_scalars_reads_and_each_kind_keeps_its_text() {
        let items = items_of(&json!(["orders", 42, 1.5, true]), 10).expect("items");
        let texts: Vec<String> = items.iter().map(MapValue::as_param).collect();
        assert_eq!(texts, ["orders", "42", "1.5", "true"]);
        assert_eq!(items_of(&json!([]), 10), Ok(vec![]));
    }

    #[test]
    fn a_list_that_breaks_a_rule_names_the_item() {
        assert_eq!(
            items_of(&json!({"a": 1}), 10),
            Err(ListError::NotAnArray("an object"))
        );
        assert_eq!(
            items_of(&json!([1, 2, 3]), 2),
            Err(ListError::TooMany { count: 3, max: 2 })
        );
        let nested = items_of(&json!(["a", ["b"]]), 10).expect_err("nested");
        assert_eq!(
            nested.to_string(),
            "item 1: is an array; an item is a string, a number or a boolean"
        );
        assert_eq!(
            items_of(&json!(["a", null]), 10),
            Err(ListError::BadItem {
                index: 1,
                problem: ItemProblem::NotScalar("null")
            })
        );
        assert_eq!(
            items_of(&json!(["ok", "a\u{0}b"]), 10),
            Err(ListError::BadItem {
                index: 1,
                problem: ItemProblem::ControlCharacter(0)
            })
        );
        assert_eq!(
            items_of(&json!(["x".repeat(MAX_ITEM_BYTES + 1)]), 10),
            Err(ListError::BadItem {
                index: 0,
                problem: ItemProblem::TooLong(MAX_ITEM_BYTES + 1)
            })
        );
        assert!(matches!(
            items_of_text("[1,", 10),
            Err(ListError::NotJson(_))
        ));
        assert_eq!(
            items_of_text("\"a\"", 10),
            Err(ListError::NotAnArray("a string"))
        );
    }

    #[test]
    fn over_names_an_output_or_a_parameter() {
        assert_eq!(
            source_of_reference("${list_tables.output.tables}"),
            Ok(MapSource::Output {
                task: "list_tables".into(),
                name: "tables".into()
            })
        );
        assert_eq!(
            source_of_reference(" ${tables} "),
            Ok(MapSource::Param {
                name: "tables".into()
            })
        );
        for refused in [
            "tables",
            "${a} ${b}",
            "x${tables}",
            "${}",
            "${map.item}",
            "$[yyyyMMdd]",
        ] {
            assert!(source_of_reference(refused).is_err(), "{refused}");
        }
    }

    #[test]
    fn a_file_form_applies_as_its_spec_and_back() {
        let file: MapFile =
            serde_json::from_value(json!({"over": "${list.output.tables}", "max_parallel": 8}))
                .expect("a map");
        let spec = file.spec().expect("valid");
        assert_eq!(spec.max_parallel, 8);
        assert_eq!(spec.max_items, DEFAULT_MAX_ITEMS);
        assert_eq!(spec.file().spec(), Ok(spec));
        let literal: MapFile =
            serde_json::from_value(json!({"over": ["a", 1, false]})).expect("a map");
        let spec = literal.spec().expect("valid");
        assert_eq!(spec.file().spec(), Ok(spec));
        let bad: MapFile =
            serde_json::from_value(json!({"over": ["a", {"b": 1}], "max_parallel": 0}))
                .expect("a map");
        let problems = bad.spec().expect_err("refused");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("item 1"), "{problems:?}");
        assert!(problems[1].contains("max_parallel"), "{problems:?}");
    }

    #[test]
    fn a_stored_spec_reads_back() {
        let spec = MapSpec {
            over: MapSource::Literal {
                items: vec![MapValue::Text("a".into()), MapValue::Number(3.into())],
            },
            max_parallel: 2,
            max_items: 10,
        };
        let stored = serde_json::to_value(&spec).expect("json");
        assert_eq!(stored["over"]["from"], "literal");
        assert_eq!(
            serde_json::from_value::<MapSpec>(stored).expect("reads"),
            spec
        );
    }
}
