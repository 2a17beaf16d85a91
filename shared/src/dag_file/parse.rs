//! Tolerant parsing: a file with unknown fields is read past them, so every
//! one is reported at once, each with where it is and the nearest allowed
//! name ("did you mean"), and serde's Rust type names are said as a user
//! would.

use super::{DagFile, DagFileError, DagProblem, Place, Rule};

impl DagFile {
    /// Parses and validates a DAG file's text.
    pub fn parse(text: &str) -> Result<DagFile, DagFileError> {
        let (dag, mut problems) = match serde_yaml_ng::from_str::<DagFile>(text) {
            Ok(dag) => (dag, Vec::new()),
            Err(e) if unknown_field(&e.to_string()).is_some() => {
                match parse_past_unknown_fields(text)? {
                    (Some(dag), unknown) => (dag, unknown),
                    (None, problems) => {
                        return Err(DagFileError::Invalid {
                            dag: dag_name_in(text),
                            problems,
                        });
                    }
                }
            }
            Err(e) => return Err(e.into()),
        };
        problems.extend(dag.problems());
        if problems.is_empty() {
            Ok(dag)
        } else {
            Err(DagFileError::Invalid {
                dag: dag.name,
                problems,
            })
        }
    }
}

impl From<serde_yaml_ng::Error> for DagFileError {
    fn from(error: serde_yaml_ng::Error) -> DagFileError {
        DagFileError::Syntax(plain_types(&error.to_string()))
    }
}

/// `message` with the Rust type names serde puts in "expected …" said as
/// a user would: `expected i32` is `expected a whole number`.
fn plain_types(message: &str) -> String {
    const NAMES: [(&str, &str); 12] = [
        ("expected i32", "expected a whole number"),
        ("expected i64", "expected a whole number"),
        ("expected u16", "expected a whole number from 0 to 65535"),
        ("expected u32", "expected a whole number of 0 or more"),
        ("expected u64", "expected a whole number of 0 or more"),
        ("expected usize", "expected a whole number of 0 or more"),
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
        ("expected a boolean", "expected true or false"),
        ("expected a sequence", "expected a list"),
        ("expected a map", "expected a mapping (key: value)"),
        ("expected struct ", "expected a mapping for "),
    ];
    NAMES
        .iter()
        .fold(message.to_owned(), |text, (rust, plain)| {
            text.replace(rust, plain)
        })
}

/// How many unknown fields [`parse_past_unknown_fields`] reports at most.
const MAX_UNKNOWN_FIELDS: usize = 50;

/// The field and the expected ones of serde's "unknown field `x`,
/// expected one of `a`, `b`" (or "expected `a`"), if `message` is one.
fn unknown_field(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.split_once("unknown field `")?.1;
    let (field, rest) = rest.split_once('`')?;
    let expected = rest
        .split_once("expected")
        .map(|(_, list)| {
            list.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Some((field.to_owned(), expected))
}

/// The near miss among `expected` that `field` was meant to be, if one is.
fn nearest<'a>(field: &str, expected: &'a [String]) -> Option<&'a String> {
    expected
        .iter()
        .map(|name| (strsim::damerau_levenshtein(field, name), name))
        .filter(|(distance, name)| *distance <= 2.max(name.len() / 3))
        .min()
        .map(|(_, name)| name)
}

/// Parses a file that has unknown fields, reporting every one of them (a
/// serde error stops at the first): each is named with its path and the
/// nearest allowed name, removed, and the file parsed again. Returns the
/// file once nothing else is wrong with its shape, with the unknown
/// fields as problems; or `None` and the problems, the last being the
/// first error that is not an unknown field.
fn parse_past_unknown_fields(
    text: &str,
) -> Result<(Option<DagFile>, Vec<DagProblem>), DagFileError> {
    let mut value: serde_yaml_ng::Value = serde_yaml_ng::from_str(text)?;
    let mut problems = Vec::new();
    while problems.len() < MAX_UNKNOWN_FIELDS {
        let error = match serde_path_to_error::deserialize::<_, DagFile>(value.clone()) {
            Ok(dag) => return Ok((Some(dag), problems)),
            Err(error) => error,
        };
        let path = error.path().clone();
        let message = error.into_inner().to_string();
        let Some((field, expected)) = unknown_field(&message) else {
            problems.push(DagProblem::said(place(&path), plain_types(&message)));
            return Ok((None, problems));
        };
        let suggestion = nearest(&field, &expected).cloned();
        let rule = Rule::UnknownField {
            allowed: if suggestion.is_some() {
                Vec::new()
            } else {
                expected
            },
            suggestion,
            field: field.clone(),
        };
        problems.push(DagProblem::new(place(&path), rule));
        if !remove_at(&mut value, &path, &field) {
            return Ok((None, problems));
        }
    }
    Ok((None, problems))
}

/// Where a problem at `path` applies (`tasks[0].retry`): the field that
/// holds the one at fault, or the DAG at the top.
fn place(path: &serde_path_to_error::Path) -> Place {
    let shown = path.to_string();
    // The path of an unknown field ends with the field itself.
    let shown = shown
        .rsplit_once('.')
        .map_or(String::new(), |(parent, _)| parent.to_owned());
    if shown.is_empty() || shown == "." {
        Place::Dag
    } else {
        Place::Field(shown)
    }
}

/// Removes `field` from the mapping `path` leads to (the path of an
/// unknown field ends with the field itself); false when it cannot be
/// found, so the caller stops instead of looping.
fn remove_at(
    value: &mut serde_yaml_ng::Value,
    path: &serde_path_to_error::Path,
    field: &str,
) -> bool {
    use serde_path_to_error::Segment;
    let segments: Vec<&Segment> = path.iter().collect();
    let mut here = value;
    for segment in segments.iter().take(segments.len().saturating_sub(1)) {
        let next = match segment {
            Segment::Seq { index } => here.get_mut(*index),
            Segment::Map { key } => here.get_mut(key.as_str()),
            Segment::Enum { .. } | Segment::Unknown => Some(here),
        };
        match next {
            Some(next) => here = next,
            None => return false,
        }
    }
    here.as_mapping_mut()
        .is_some_and(|map| map.remove(field).is_some())
}

/// The `name:` of a file whose shape is wrong, for its error.
fn dag_name_in(text: &str) -> String {
    serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text)
        .ok()
        .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(str::to_owned))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unknown_field_is_reported_at_once_with_a_suggestion() {
        let text = "name: x\nshedules: []\ntasks:\n  - name: a\n    comand: 'true'\n    priorty: 3\n    retry: { maxx: 2 }\n  - name: b\n    command: 'true'\n    priority: high\n";
        let Err(DagFileError::Invalid { dag, problems }) = DagFile::parse(text) else {
            panic!("a file with unknown fields is invalid");
        };
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(dag, "x");
        let all = problems.join("\n");
        for expected in [
            "unknown field `shedules`",
            "did you mean `schedules`?",
            "tasks[1]: invalid type: string \"high\", expected a whole number",
            "tasks[0]: unknown field `comand`",
            "did you mean `command`?",
            "tasks[0]: unknown field `priorty`",
            "did you mean `priority`?",
            "tasks[0].retry: unknown field `maxx`",
            "did you mean `max`?",
        ] {
            assert!(all.contains(expected), "no {expected:?} in:\n{all}");
        }
        assert!(!all.contains("i32"), "{all}");
        // With the unknown fields set aside, the rules are checked too.
        let Err(DagFileError::Invalid { problems, .. }) =
            DagFile::parse("name: y\ntasks:\n  - name: a\n    comand: 'true'\n")
        else {
            panic!("invalid");
        };
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            problems,
            [
                "tasks[0]: unknown field `comand`: did you mean `command`?",
                "task 'a': a SHELL task needs 'command' or 'script'"
            ]
        );
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let err = DagFile::parse("name: x\ntasks: []\nschedule: oops\n").unwrap_err();
        assert!(
            err.to_string().contains("unknown field `schedule`"),
            "{err}"
        );
    }
}
