//! What a condition reads, found in its syntax tree: the names a condition
//! may read are fixed, and each read is a path of field names from one of
//! them (`tasks.load.output.rows`, or `tasks['load-2'].status`).

use std::collections::{BTreeMap, BTreeSet};

use cel::common::ast::{EntryExpr, Expr, IdedEntryExpr, LiteralValue};
use cel::{IdedExpr, Program};

use crate::ConditionError;

/// The macros that loop over a list or a map.
const LOOPS: [&str; 5] = ["all", "exists", "exists_one", "map", "filter"];

/// Everything one condition reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reads {
    /// `params.<name>` read by name.
    pub params: BTreeSet<String>,
    /// `params` read whole (`'x' in params`).
    pub all_params: bool,
    /// `biz_date`.
    pub biz_date: bool,
    /// The tasks read, by name.
    pub tasks: BTreeMap<String, TaskReads>,
}

/// What a condition reads of one task.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskReads {
    /// `tasks.<task>.status`.
    pub status: bool,
    /// `tasks.<task>.output.<key>` read by key.
    pub outputs: BTreeSet<String>,
    /// `tasks.<task>.output` read whole (`'rows' in tasks.x.output`).
    pub all_outputs: bool,
}

impl Reads {
    /// Each value read, as the condition writes it (`tasks.t.output` for
    /// a task's outputs read whole).
    pub fn paths(&self) -> Vec<String> {
        let mut paths = Vec::new();
        if self.biz_date {
            paths.push("biz_date".to_owned());
        }
        if self.all_params {
            paths.push("params".to_owned());
        }
        paths.extend(self.params.iter().map(|k| format!("params.{k}")));
        for (task, read) in &self.tasks {
            if read.status {
                paths.push(format!("tasks.{task}.status"));
            }
            if read.all_outputs {
                paths.push(format!("tasks.{task}.output"));
            }
            paths.extend(
                read.outputs
                    .iter()
                    .map(|k| format!("tasks.{task}.output.{k}")),
            );
        }
        paths
    }

    /// Each value read, as the condition writes it, with its value in
    /// `inputs` (`None`: not there).
    pub fn values(&self, inputs: &crate::Inputs) -> Vec<(String, Option<String>)> {
        let mut values = Vec::new();
        if self.biz_date {
            values.push(("biz_date".to_owned(), Some(inputs.biz_date.clone())));
        }
        if self.all_params {
            values.extend(
                inputs
                    .params
                    .iter()
                    .map(|(k, v)| (format!("params.{k}"), Some(v.clone()))),
            );
        } else {
            values.extend(
                self.params
                    .iter()
                    .map(|k| (format!("params.{k}"), inputs.params.get(k).cloned())),
            );
        }
        for (task, read) in &self.tasks {
            let found = inputs.tasks.get(task);
            if read.status {
                values.push((
                    format!("tasks.{task}.status"),
                    found.map(|t| t.status.clone()),
                ));
            }
            let keys: Vec<&String> = match (read.all_outputs, found) {
                (true, Some(t)) => t.outputs.keys().chain(&read.outputs).collect(),
                _ => read.outputs.iter().collect(),
            };
            let mut keys = keys;
            keys.sort();
            keys.dedup();
            values.extend(keys.into_iter().map(|k| {
                (
                    format!("tasks.{task}.output.{k}"),
                    found.and_then(|t| t.outputs.get(k).cloned()),
                )
            }));
        }
        values
    }
}

/// The reads of a compiled condition, or why it may not run.
pub(crate) fn of(program: &Program, text: &str) -> Result<Reads, ConditionError> {
    let mut walk = Walk {
        program,
        text,
        bound: Vec::new(),
        loops: 0,
        reads: Reads::default(),
    };
    walk.expr(program.expression())?;
    Ok(walk.reads)
}

struct Walk<'a> {
    program: &'a Program,
    text: &'a str,
    /// Variables a macro binds where the walk is.
    bound: Vec<&'a str>,
    /// Looping macros the walk is inside.
    loops: usize,
    reads: Reads,
}

impl<'a> Walk<'a> {
    fn expr(&mut self, expr: &'a IdedExpr) -> Result<(), ConditionError> {
        if let Some((root, path, at)) = self.path(expr)
            && !self.bound.contains(&root)
        {
            return self.read(root, &path, at);
        }
        match &expr.expr {
            Expr::Ident(name) if self.bound.contains(&name.as_str()) => Ok(()),
            Expr::Ident(name) => self.read(name, &[], expr),
            Expr::Call(call) => {
                if let Some(target) = &call.target {
                    self.expr(target)?;
                }
                call.args.iter().try_for_each(|arg| self.expr(arg))
            }
            Expr::Comprehension(comprehension) => {
                if self.loops > 0 {
                    return Err(ConditionError::NestedLoop {
                        name: self.loop_name(expr),
                        column: self.column(expr),
                    });
                }
                self.expr(&comprehension.iter_range)?;
                self.expr(&comprehension.accu_init)?;
                let bound = self.bound.len();
                self.bound.push(&comprehension.iter_var);
                if let Some(second) = &comprehension.iter_var2 {
                    self.bound.push(second);
                }
                self.bound.push(&comprehension.accu_var);
                self.loops += 1;
                for part in [
                    &comprehension.loop_cond,
                    &comprehension.loop_step,
                    &comprehension.result,
                ] {
                    self.expr(part)?;
                }
                self.loops -= 1;
                self.bound.truncate(bound);
                Ok(())
            }
            Expr::List(list) => list.elements.iter().try_for_each(|e| self.expr(e)),
            Expr::Map(map) => self.entries(&map.entries),
            Expr::Struct(fields) => self.entries(&fields.entries),
            Expr::Select(select) => self.expr(&select.operand),
            Expr::Literal(_) | Expr::Unspecified => Ok(()),
        }
    }

    fn entries(&mut self, entries: &'a [IdedEntryExpr]) -> Result<(), ConditionError> {
        entries.iter().try_for_each(|entry| match &entry.expr {
            EntryExpr::MapEntry(e) => {
                self.expr(&e.key)?;
                self.expr(&e.value)
            }
            EntryExpr::StructField(f) => self.expr(&f.value),
        })
    }

    /// `expr` as a root name, the field names after it and the root's
    /// node, when it is a chain of `.field` and `['field']`.
    fn path(&self, expr: &'a IdedExpr) -> Option<(&'a str, Vec<&'a str>, &'a IdedExpr)> {
        let mut fields = Vec::new();
        let mut at = expr;
        loop {
            match &at.expr {
                Expr::Ident(root) => {
                    fields.reverse();
                    return Some((root, fields, at));
                }
                Expr::Select(select) => {
                    fields.push(select.field.as_str());
                    at = &select.operand;
                }
                Expr::Call(call) if call.func_name == "_[_]" && call.target.is_none() => {
                    let [operand, key] = call.args.as_slice() else {
                        return None;
                    };
                    let Expr::Literal(LiteralValue::String(key)) = &key.expr else {
                        return None;
                    };
                    fields.push(key.inner());
                    at = operand;
                }
                _ => return None,
            }
        }
    }

    fn read(&mut self, root: &str, path: &[&str], at: &IdedExpr) -> Result<(), ConditionError> {
        let column = self.column(at);
        match (root, path) {
            ("biz_date", []) => self.reads.biz_date = true,
            ("params", []) => self.reads.all_params = true,
            ("params", [name, ..]) => {
                self.reads.params.insert((*name).to_owned());
            }
            ("tasks", []) => return Err(ConditionError::TasksWhole { column }),
            ("tasks", [task, rest @ ..]) => {
                let read = self.reads.tasks.entry((*task).to_owned()).or_default();
                match rest {
                    ["status", ..] => read.status = true,
                    ["output"] => read.all_outputs = true,
                    ["output", key, ..] => {
                        read.outputs.insert((*key).to_owned());
                    }
                    [] => {
                        return Err(ConditionError::TaskRead {
                            task: (*task).to_owned(),
                            what: "a whole".to_owned(),
                            column,
                        });
                    }
                    [other, ..] => {
                        return Err(ConditionError::TaskRead {
                            task: (*task).to_owned(),
                            what: format!(".{other}"),
                            column,
                        });
                    }
                }
            }
            (name, _) => {
                return Err(ConditionError::UnknownName {
                    name: name.to_owned(),
                    column,
                });
            }
        }
        Ok(())
    }

    /// The 1-based column where `expr` begins.
    fn column(&self, expr: &IdedExpr) -> usize {
        let offset = self
            .program
            .source_info()
            .offset_for(expr.id)
            .map_or(0, |(start, _)| start as usize);
        let line_start = self.text[..offset.min(self.text.len())]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        self.text
            .get(line_start..offset)
            .map_or(1, |before| before.chars().count() + 1)
    }

    /// The name a looping macro was written with, found in the text at its
    /// position (the tree keeps only its expansion).
    fn loop_name(&self, expr: &IdedExpr) -> String {
        let offset = self
            .program
            .source_info()
            .offset_for(expr.id)
            .map_or(0, |(start, _)| start as usize);
        let after = self.text.get(offset..).unwrap_or_default();
        LOOPS
            .iter()
            .filter_map(|name| after.find(&format!("{name}(")).map(|at| (at, *name)))
            .min()
            .map_or_else(|| "a loop".to_owned(), |(_, name)| name.to_owned())
    }
}
