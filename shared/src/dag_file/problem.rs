//! One rule a DAG file breaks: where, and what, in the English words every
//! client gets and, for the rules people meet most, as a [`Problem`] a UI
//! says in its own words (docs/ARCHITECTURE.md, "Two languages"). A rule
//! met rarely, or one whose words come from elsewhere (a task type's own
//! checks), is [`Rule::Said`]: English only.

use std::fmt;

use datajump_cron::CronError;

use crate::problem::Problem;

/// Where in a DAG file a rule is broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// The DAG as a whole.
    Dag,
    /// A field by its path in the file (`tasks[0].retry`).
    Field(String),
    /// A task, by its name as it is shown.
    Task(String),
    /// A schedule, by its name as it is shown.
    Schedule(String),
}

/// What rule is broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// A name that breaks [`super::validate::NAME_RULE`]: the DAG's (named
    /// here, as shown), a task's or a schedule's (named by the place).
    Name {
        /// The name as shown.
        name: String,
    },
    /// A field the file's format does not have.
    UnknownField {
        /// The field as written.
        field: String,
        /// The nearest allowed name, when one is near.
        suggestion: Option<String>,
        /// Every allowed name, when none is near.
        allowed: Vec<String>,
    },
    /// A task name given to more than one task.
    DefinedTwice {
        /// How many tasks have it.
        count: usize,
    },
    /// A task type that does not exist.
    UnknownType {
        /// The type as written.
        given: String,
    },
    /// A same-run dependency on a task the DAG does not have.
    UnknownDependency {
        /// The awaited task, as shown.
        parent: String,
    },
    /// A task awaiting itself in the same run.
    DependsOnItself,
    /// Tasks that await each other in a circle.
    Cycle {
        /// The tasks in order, the first repeated at the end.
        tasks: Vec<String>,
    },
    /// A cron expression or time zone that does not read.
    Cron(CronError),
    /// A cron expression that reads but never fires.
    NeverFires {
        /// The expression.
        cron: String,
    },
    /// A priority outside 1-10.
    Priority {
        /// The priority given.
        given: i32,
    },
    /// Said in English only: the words after the place.
    Said(String),
}

/// One rule a DAG file breaks, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DagProblem {
    /// Where.
    pub place: Place,
    /// What.
    pub rule: Rule,
}

impl DagProblem {
    /// `rule` broken at `place`.
    pub fn new(place: Place, rule: Rule) -> DagProblem {
        DagProblem { place, rule }
    }

    /// `words`, English only, at `place`.
    pub fn said(place: Place, words: impl Into<String>) -> DagProblem {
        DagProblem::new(place, Rule::Said(words.into()))
    }

    /// The code and values a UI says this in its own words from; `None`
    /// for a rule said in English only.
    pub fn problem(&self) -> Option<Problem> {
        let (code, mut params): (&str, Vec<(&str, String)>) = match &self.rule {
            Rule::Said(_) => return None,
            Rule::Name { name } => (
                "dag.name",
                vec![
                    ("name", name.clone()),
                    ("max", crate::naming::MAX_NAME_CHARS.to_string()),
                ],
            ),
            Rule::UnknownField {
                field,
                suggestion: Some(suggestion),
                ..
            } => (
                "dag.unknown_field_near",
                vec![("field", field.clone()), ("suggestion", suggestion.clone())],
            ),
            Rule::UnknownField {
                field,
                suggestion: None,
                allowed,
            } => (
                "dag.unknown_field",
                vec![("field", field.clone()), ("allowed", allowed.join(", "))],
            ),
            Rule::DefinedTwice { count } => {
                ("dag.defined_twice", vec![("count", count.to_string())])
            }
            Rule::UnknownType { given } => (
                "dag.unknown_type",
                vec![
                    ("type", given.clone()),
                    ("known", crate::content::TaskType::names()),
                ],
            ),
            Rule::UnknownDependency { parent } => {
                ("dag.unknown_dependency", vec![("parent", parent.clone())])
            }
            Rule::DependsOnItself => ("dag.depends_on_itself", Vec::new()),
            Rule::Cycle { tasks } => ("dag.cycle", vec![("cycle", tasks.join(" → "))]),
            Rule::Cron(error) => (error.code(), error.params()),
            Rule::NeverFires { cron } => ("dag.never_fires", vec![("cron", cron.clone())]),
            Rule::Priority { given } => ("dag.priority", vec![("value", given.to_string())]),
        };
        match &self.place {
            Place::Dag => {}
            Place::Field(path) => params.push(("path", path.clone())),
            Place::Task(name) => params.push(("task", name.clone())),
            Place::Schedule(name) => params.push(("schedule", name.clone())),
        }
        Some(Problem::new(code, params))
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Dag => Ok(()),
            Place::Field(path) => write!(f, "{path}"),
            Place::Task(name) => write!(f, "task '{name}'"),
            Place::Schedule(name) => write!(f, "schedule '{name}'"),
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use super::validate::NAME_RULE;
        match self {
            Rule::Name { .. } => write!(f, "name {NAME_RULE}"),
            Rule::UnknownField {
                field,
                suggestion: Some(suggestion),
                ..
            } => write!(f, "unknown field `{field}`: did you mean `{suggestion}`?"),
            Rule::UnknownField { field, allowed, .. } => write!(
                f,
                "unknown field `{field}` (allowed: {})",
                allowed.join(", ")
            ),
            Rule::DefinedTwice { count } => write!(f, "defined {count} times"),
            Rule::UnknownType { given } => write!(
                f,
                "unknown type '{given}' (known: {})",
                crate::content::TaskType::names()
            ),
            Rule::UnknownDependency { parent } => write!(f, "depends on unknown task '{parent}'"),
            Rule::DependsOnItself => f.write_str("depends on itself"),
            Rule::Cycle { tasks } => write!(f, "cycle: {}", tasks.join(" -> ")),
            Rule::Cron(error) => write!(f, "{error}"),
            Rule::NeverFires { cron } => write!(
                f,
                "'{cron}' never fires (a date that does not exist, or a year gone by)"
            ),
            Rule::Priority { given } => write!(f, "priority must be 1-10, got {given}"),
            Rule::Said(words) => f.write_str(words),
        }
    }
}

impl fmt::Display for DagProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.place, &self.rule) {
            (Place::Dag, Rule::Name { name }) => {
                write!(f, "name '{name}': {}", super::validate::NAME_RULE)
            }
            (Place::Dag, rule) => write!(f, "{rule}"),
            (place, rule) => write!(f, "{place}: {rule}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_coded_rule_names_its_place_in_its_params_and_its_words() {
        let problem = DagProblem::new(
            Place::Task("load".to_owned()),
            Rule::UnknownDependency {
                parent: "extract".to_owned(),
            },
        );
        assert_eq!(
            problem.to_string(),
            "task 'load': depends on unknown task 'extract'"
        );
        assert_eq!(
            problem.problem(),
            Some(Problem::new(
                "dag.unknown_dependency",
                [
                    ("parent", "extract".to_owned()),
                    ("task", "load".to_owned())
                ]
            ))
        );
        let said = DagProblem::said(Place::Schedule("nightly".to_owned()), "odd");
        assert_eq!(said.to_string(), "schedule 'nightly': odd");
        assert_eq!(said.problem(), None);
    }

    #[test]
    fn a_cron_problem_keeps_the_cron_code_with_its_schedule() {
        let error = datajump_cron::CronExpr::parse("0 60 * * * ?").expect_err("minute 60");
        let problem = DagProblem::new(Place::Schedule("nightly".to_owned()), Rule::Cron(error));
        let coded = problem.problem().expect("a code");
        assert_eq!(coded.code, "cron.out_of_range");
        assert_eq!(coded.params["schedule"], "nightly");
        assert!(problem.to_string().starts_with("schedule 'nightly': "));
    }
}
