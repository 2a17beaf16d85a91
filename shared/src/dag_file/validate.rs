//! The rules a parsed DAG file must keep, checked whole before anything is
//! stored: every problem is reported, each naming where it is.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::problem::{DagProblem, Place, Rule};
use super::{DagFile, DependencyFile, DependencyParts, TaskFile};
use crate::content::{SwitchContent, TaskContent, TaskType};
use crate::kinds::Strategy;
use crate::naming::{
    MAX_CRON_CHARS, MAX_NAME_CHARS, MAX_OWNER_CHARS, fits, printable, shortened, validate_event,
    validate_queue,
};
use datajump_cron::{CronExpr, parse_time_zone};

impl DagFile {
    /// Notes, not errors, on the tasks that paste a parameter bare into a
    /// script or SQL: a value a trigger or an event gives it will be refused
    /// (`crate::params`), and each note says the form that takes any value.
    pub fn untrusted_param_notes(&self) -> Vec<String> {
        self.tasks
            .iter()
            .flat_map(TaskFile::untrusted_param_notes)
            .collect()
    }

    /// Notes, not errors, on SPARK and FLINK properties that look like
    /// credentials but are written in the DAG: each is stored in the
    /// catalog and sent in every work message, so each note says how to
    /// name a secret instead.
    pub fn credential_notes(&self) -> Vec<String> {
        self.tasks
            .iter()
            .flat_map(TaskFile::credential_notes)
            .collect()
    }

    pub(super) fn problems(&self) -> Vec<DagProblem> {
        let mut problems = Vec::new();
        let dag = |words: String| DagProblem::said(Place::Dag, words);
        if !is_name(&self.name) {
            problems.push(DagProblem::new(
                Place::Dag,
                Rule::Name {
                    name: printable(&shortened(&self.name)).into_owned(),
                },
            ));
        }
        if let Some(owner) = &self.owner
            && !fits(owner, MAX_OWNER_CHARS)
        {
            problems.push(dag(too_long("`owner`", owner, MAX_OWNER_CHARS)));
        }
        if let Some(given) = self.priority
            && !(1..=10).contains(&given)
        {
            problems.push(DagProblem::new(Place::Dag, Rule::Priority { given }));
        }
        if self.max_active_runs < 1 {
            problems.push(dag(format!(
                "max_active_runs: must be at least 1, got {}",
                self.max_active_runs
            )));
        }
        for (field, value) in [
            ("queue_timeout", self.queue_timeout),
            ("run_timeout", self.run_timeout),
        ] {
            if value.is_some_and(|secs| secs < 0) {
                problems.push(dag(format!(
                    "{field}: must not be negative (0 or absent = none)"
                )));
            }
        }
        // A parameter must not fill a task output's variable
        // (docs/SECURITY.md, "Values between tasks").
        problems.extend(
            self.params
                .keys()
                .filter(|name| crate::outputs::looks_like_output(name))
                .map(|name| {
                    dag(format!(
                        "params: {}",
                        crate::outputs::output_like_problem(name)
                    ))
                }),
        );
        for task in &self.tasks {
            problems.extend(
                task.params
                    .keys()
                    .filter(|name| crate::outputs::looks_like_output(name))
                    .map(|name| {
                        DagProblem::said(
                            Place::Task(printable(&shortened(&task.name)).into_owned()),
                            format!("params: {}", crate::outputs::output_like_problem(name)),
                        )
                    }),
            );
        }
        self.schedule_problems(&mut problems);
        self.task_problems(&mut problems);
        self.output_problems(&mut problems);
        self.switch_problems(&mut problems);
        self.map_problems(&mut problems);
        problems
    }

    /// Each task's same-run parents, by name.
    fn same_run_parents(&self) -> HashMap<&str, Vec<&str>> {
        self.tasks
            .iter()
            .map(|task| {
                let same_run = task
                    .depends_on
                    .iter()
                    .map(DependencyFile::parts)
                    .filter(|p| p.dag.is_none() && p.offset_day == 0 && !p.previous_run)
                    .map(|p| p.task)
                    .collect();
                (task.name.as_str(), same_run)
            })
            .collect()
    }

    /// A `${task.output.name}` must name a task this one runs after in the
    /// same run (directly or through others): otherwise it may not have
    /// finished, and the value would depend on timing.
    fn output_problems(&self, problems: &mut Vec<DagProblem>) {
        let parents = self.same_run_parents();
        for task in &self.tasks {
            let at = || Place::Task(crate::naming::printable(&task.name).into_owned());
            problems.extend(task.bare_outputs_in_script().into_iter().map(|(name, form)| {
                DagProblem::said(at(), format!(
                    "${{{name}}} is {}, made at run time, so it cannot be pasted into a script as written: {form}",
                    if name == crate::map::ITEM_PARAM { "a map item" } else { "a task output" }
                ))
            }));
            let text = task.content_json().to_string();
            let before = ancestors(&parents, &task.name);
            for read in crate::outputs::tasks_read(&text) {
                if let Some(words) = unordered_read(&parents, &before, read, "the output of") {
                    problems.push(DagProblem::said(at(), words));
                }
            }
        }
    }

    /// A SWITCH's branches are its children, all of them; its conditions
    /// read tasks it runs after; and it writes no dataset.
    fn switch_problems(&self, problems: &mut Vec<DagProblem>) {
        let parents = self.same_run_parents();
        for (task, switch) in self.switches() {
            let at = || Place::Task(printable(&shortened(&task.name)).into_owned());
            let said = |words: String| DagProblem::said(at(), words);
            let children: Vec<&str> = parents
                .iter()
                .filter(|(_, of)| of.contains(&task.name.as_str()))
                .map(|(child, _)| *child)
                .collect();
            let named = switch.branches();
            for (i, case) in switch.cases.iter().enumerate() {
                for name in &case.then {
                    if !children.contains(&name.as_str()) {
                        problems.push(said(format!(
                            "cases[{i}].then: '{}' {}",
                            printable(&shortened(name)),
                            not_a_child(&task.name)
                        )));
                    }
                }
            }
            for name in &switch.default {
                if !children.contains(&name.as_str()) {
                    problems.push(said(format!(
                        "default: '{}' {}",
                        printable(&shortened(name)),
                        not_a_child(&task.name)
                    )));
                }
            }
            let mut unnamed: Vec<&str> = children
                .iter()
                .copied()
                .filter(|child| !named.contains(child))
                .collect();
            unnamed.sort_unstable();
            for child in unnamed {
                problems.push(said(format!(
                    "'{child}' depends on it, but no case and not 'default' names it: add it to a 'then' or to 'default'"
                )));
            }
            let before = ancestors(&parents, &task.name);
            for (i, condition) in switch_conditions(switch) {
                for read in condition.reads().tasks.keys() {
                    if let Some(words) = unordered_read(&parents, &before, read, "") {
                        problems.push(said(format!("cases[{i}].when {words}")));
                    }
                }
            }
            if !task.outputs.is_empty() {
                problems.push(said(
                    "outputs: a SWITCH writes no dataset; declare it on the tasks it chooses"
                        .to_owned(),
                ));
            }
        }
    }

    /// A mapped task's `map` reads (docs/DAG_FORMAT.md, "Map"): its list is
    /// an output of a task it runs after or a parameter the DAG declares,
    /// it is not a SWITCH, and no task reads its outputs (each item has its
    /// own). `${map.item}` and `${map.index}` are only a mapped task's.
    fn map_problems(&self, problems: &mut Vec<DagProblem>) {
        let parents = self.same_run_parents();
        let mapped: BTreeSet<&str> = self
            .tasks
            .iter()
            .filter(|task| task.map.is_some())
            .map(|task| task.name.as_str())
            .collect();
        for task in &self.tasks {
            let at = || Place::Task(printable(&shortened(&task.name)).into_owned());
            let said = |words: String| DagProblem::said(at(), words);
            let text = task.content_json().to_string();
            for read in crate::outputs::tasks_read(&text) {
                if mapped.contains(read) {
                    problems.push(said(format!(
                        "reads an output of '{}', a mapped task: each of its items has its own \
                         outputs, which no task reads for now",
                        printable(&shortened(read))
                    )));
                }
            }
            if let Some(TaskContent::Switch(switch)) = task.parsed_content() {
                for (i, condition) in switch_conditions(switch) {
                    for (read, what) in &condition.reads().tasks {
                        if !what.outputs.is_empty() && mapped.contains(read.as_str()) {
                            problems.push(said(format!(
                                "cases[{i}].when reads the outputs of '{}', a mapped task: each of \
                                 its items has its own, which no condition reads for now",
                                printable(&shortened(read))
                            )));
                        }
                    }
                }
            }
            let Some(map) = &task.map else {
                if let Some(name) = [crate::map::ITEM_PARAM, crate::map::INDEX_PARAM]
                    .into_iter()
                    .find(|name| {
                        text.contains(&format!("${{{name}}}"))
                            || text.contains(&format!("${{{name}:"))
                    })
                {
                    problems.push(said(format!(
                        "${{{name}}} is the item of a mapped task, and this task has no map"
                    )));
                }
                continue;
            };
            if task.task_type() == Some(TaskType::Switch) {
                problems.push(said(
                    "map: a SWITCH cannot be mapped; map the tasks it chooses".to_owned(),
                ));
            }
            let spec = match map.spec() {
                Ok(spec) => spec,
                Err(refused) => {
                    problems.extend(
                        refused
                            .into_iter()
                            .map(|words| said(format!("map: {words}"))),
                    );
                    continue;
                }
            };
            match &spec.over {
                crate::map::MapSource::Output { task: read, .. } => {
                    let before = ancestors(&parents, &task.name);
                    if let Some(words) = unordered_read(&parents, &before, read, "the output of") {
                        problems.push(said(format!("map: over {words}")));
                    } else if mapped.contains(read.as_str()) {
                        problems.push(said(format!(
                            "map: over reads an output of '{}', a mapped task, whose items each \
                             have their own",
                            printable(&shortened(read))
                        )));
                    }
                }
                crate::map::MapSource::Param { name } => {
                    if !self.params.contains_key(name) && !task.params.contains_key(name) {
                        problems.push(said(format!(
                            "map: over reads parameter '{}', which neither the DAG's nor the \
                             task's params declare: declare it with a default (a trigger may \
                             give another value)",
                            printable(&shortened(name))
                        )));
                    }
                }
                crate::map::MapSource::Literal { .. } => {}
            }
        }
    }

    /// Notes, not errors, on SWITCH conditions that read a task's status
    /// under a strategy that never runs the SWITCH after that task failed:
    /// they can only ever read SUCCESS.
    pub fn switch_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for (task, switch) in self.switches() {
            if !matches!(task.strategy, Strategy::AllSuccess | Strategy::NoneFailed) {
                continue;
            }
            for (i, condition) in switch_conditions(switch) {
                for (read, what) in &condition.reads().tasks {
                    if what.status {
                        notes.push(format!(
                            "task '{}': cases[{i}].when reads tasks.{read}.status, but with strategy {} it runs only when no parent failed, so it never sees '{read}' fail; write strategy: ALL_DONE to route on how '{read}' ended (DolphinScheduler's conditions task)",
                            task.name,
                            task.strategy.as_str()
                        ));
                    }
                }
            }
        }
        notes
    }

    /// The SWITCH tasks whose content reads, with it.
    fn switches(&self) -> impl Iterator<Item = (&TaskFile, SwitchContent)> {
        self.tasks
            .iter()
            .filter_map(|task| match task.parsed_content() {
                Some(TaskContent::Switch(switch)) => Some((task, switch)),
                _ => None,
            })
    }

    fn schedule_problems(&self, problems: &mut Vec<DagProblem>) {
        let mut seen = BTreeSet::new();
        for (schedule, name) in self.schedules.iter().zip(self.schedule_names()) {
            let shown = printable(&shortened(&name)).into_owned();
            let at = || Place::Schedule(shown.clone());
            let said = |words: String| DagProblem::said(at(), words);
            if !is_name(&name) {
                problems.push(DagProblem::new(
                    at(),
                    Rule::Name {
                        name: shown.clone(),
                    },
                ));
            }
            if !seen.insert(name.clone()) {
                problems.push(said("duplicate schedule name".to_owned()));
            }
            if schedule.on.is_none() && !schedule.on_update.is_ignore() {
                problems.push(said(
                    "on_update is for data schedules (with 'on')".to_owned(),
                ));
            }
            match (&schedule.cron, &schedule.event, &schedule.after) {
                (None, None, None) if schedule.on.is_some() => {
                    let condition = schedule.on.as_ref().map(|on| on.problems());
                    for e in condition.into_iter().flatten() {
                        problems.push(said(format!("on: {e}")));
                    }
                }
                _ if schedule.on.is_some() => problems.push(said(
                    "give exactly one of 'cron', 'event', 'after' or 'on'".to_owned(),
                )),
                (None, None, Some(upstream)) => {
                    if !is_name(upstream) {
                        problems.push(said(format!(
                            "after '{}': {NAME_RULE}",
                            printable(&shortened(upstream))
                        )));
                    } else if *upstream == self.name {
                        problems.push(said(format!(
                            "after '{upstream}' is this DAG: a run would start the next for ever"
                        )));
                    }
                }
                (Some(cron), None, None) if !fits(cron, MAX_CRON_CHARS) => {
                    problems.push(said(too_long("`cron`", cron, MAX_CRON_CHARS)));
                }
                (Some(cron), None, None) => match CronExpr::parse(cron) {
                    Err(e) => problems.push(DagProblem::new(at(), Rule::Cron(e))),
                    // Any zone will do: a day that does not exist (Feb 30)
                    // or a year gone by does not come in any.
                    Ok(expr) if expr.next_after(&chrono::Utc::now()).is_none() => {
                        problems.push(DagProblem::new(
                            at(),
                            Rule::NeverFires { cron: cron.clone() },
                        ));
                    }
                    Ok(_) => {}
                },
                (None, Some(event), None) => {
                    if let Err(e) = validate_event(event) {
                        problems.push(said(e.to_string()));
                    }
                }
                _ => problems.push(said(
                    "give exactly one of 'cron', 'event', 'after' or 'on'".to_owned(),
                )),
            }
            if let Some(zone) = &schedule.timezone
                && let Err(e) = parse_time_zone(zone)
            {
                problems.push(DagProblem::new(at(), Rule::Cron(e)));
            }
            if let (Some(start), Some(end)) = (schedule.start_date, schedule.end_date)
                && end < start
            {
                problems.push(said(format!("end_date {end} is before start_date {start}")));
            }
            if schedule.catchup_limit < 0 || schedule.misfire_grace < 0 {
                problems.push(said(
                    "catchup_limit and misfire_grace must not be negative".to_owned(),
                ));
            }
            if schedule.timeout.is_some_and(|secs| secs < 0) {
                problems.push(said(
                    "timeout must not be negative (0 = none; absent = the DAG's run_timeout)"
                        .to_owned(),
                ));
            }
        }
    }

    fn task_problems(&self, problems: &mut Vec<DagProblem>) {
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for task in &self.tasks {
            *seen.entry(task.name.as_str()).or_default() += 1;
        }
        for (name, count) in &seen {
            if *count > 1 {
                problems.push(DagProblem::new(
                    Place::Task((*name).to_owned()),
                    Rule::DefinedTwice { count: *count },
                ));
            }
        }
        if let Some(alerts) = &self.alerts {
            problems.extend(
                alerts
                    .problems()
                    .into_iter()
                    .map(|words| DagProblem::said(Place::Dag, words)),
            );
        }
        for task in &self.tasks {
            let shown = printable(&shortened(&task.name)).into_owned();
            let at = || Place::Task(shown.clone());
            let said = |words: String| DagProblem::said(at(), words);
            if !is_name(&task.name) {
                problems.push(DagProblem::new(
                    at(),
                    Rule::Name {
                        name: shown.clone(),
                    },
                ));
            }
            match task.task_type() {
                None => problems.push(DagProblem::new(
                    at(),
                    Rule::UnknownType {
                        given: task.task_type.clone(),
                    },
                )),
                Some(task_type) => problems.extend(
                    task.content_problems(task_type)
                        .into_iter()
                        .chain(task.misplaced_quoting_forms())
                        .map(said),
                ),
            }
            if !(1..=10).contains(&task.priority) {
                problems.push(DagProblem::new(
                    at(),
                    Rule::Priority {
                        given: task.priority,
                    },
                ));
            }
            if task.retry.max < 0 || task.retry.interval < 0 {
                problems.push(said(
                    "retry max and interval must not be negative".to_owned(),
                ));
            }
            if let Some(cap) = task.retry.max_interval
                && cap < task.retry.interval
            {
                problems.push(said(format!(
                    "retry max_interval {cap} is below its interval {}",
                    task.retry.interval
                )));
            }
            if !(0.0..=1.0).contains(&task.retry.jitter) {
                problems.push(said(format!(
                    "retry jitter must be a fraction from 0 to 1, got {}",
                    task.retry.jitter
                )));
            }
            if task.strategy.needs_a_failure()
                && !task
                    .depends_on
                    .iter()
                    .any(|dep| dep.parts().dep_type == crate::kinds::DepType::Strong)
            {
                problems.push(said(format!(
                    "strategy {} runs it after a parent fails, so it needs a STRONG dependency",
                    task.strategy.as_str()
                )));
            }
            if task.wait_timeout < 1 {
                problems.push(said("wait_timeout must be at least 1 second".to_owned()));
            }
            if task.timeout < 0 {
                problems.push(said("timeout must not be negative (0 = none)".to_owned()));
            }
            if task.queue_timeout.is_some_and(|secs| secs < 0) {
                problems.push(said(
                    "queue_timeout must not be negative (0 or absent = none)".to_owned(),
                ));
            }
            if let Err(e) = validate_queue(&task.queue) {
                problems.push(said(e.to_string()));
            }
            let mut written = BTreeSet::new();
            for output in &task.outputs {
                match crate::datasets::OutputDecl::parse(output) {
                    Err(e) => problems.push(said(format!("outputs: {e}"))),
                    Ok(decl) if !written.insert(decl.dataset) => problems.push(said(format!(
                        "outputs: '{}' is listed more than once; a task writes one partition of a dataset per run",
                        decl.dataset
                    ))),
                    Ok(_) => {}
                }
            }
            let mut awaited = BTreeSet::new();
            for dep in &task.depends_on {
                let DependencyParts {
                    dag,
                    task: parent,
                    offset_day,
                    previous_run,
                    ..
                } = dep.parts();
                // One edge per awaited instance: a second, maybe of another
                // type, would be counted twice or contradict the first.
                if !awaited.insert((dag, parent, offset_day, previous_run)) {
                    let reference =
                        dag.map_or_else(|| parent.to_owned(), |d| format!("{d}/{parent}"));
                    problems.push(said(format!(
                        "depends on '{reference}' more than once; list each dependency once (with its type)"
                    )));
                }
                if previous_run && offset_day != 0 {
                    problems.push(said(format!(
                        "dependency on '{parent}' gives both previous_run and offset_day: \
                         previous_run is the latest earlier run, whatever its date; use one"
                    )));
                }
                match dag {
                    Some(dag) if dag.is_empty() || parent.is_empty() => {
                        problems.push(said(format!(
                            "dependency '{}/{}' must be 'other_dag/task'",
                            printable(&shortened(dag)),
                            printable(&shortened(parent))
                        )))
                    }
                    Some(dag) if !is_name(dag) || !is_name(parent) => problems.push(said(format!(
                        "dependency '{}/{}': a DAG or task name {NAME_RULE}",
                        printable(&shortened(dag)),
                        printable(&shortened(parent))
                    ))),
                    Some(_) => {}
                    None if !seen.contains_key(parent) => problems.push(DagProblem::new(
                        at(),
                        Rule::UnknownDependency {
                            parent: printable(&shortened(parent)).into_owned(),
                        },
                    )),
                    None if parent == task.name && offset_day == 0 && !previous_run => {
                        problems.push(DagProblem::new(at(), Rule::DependsOnItself))
                    }
                    None => {}
                }
            }
        }
        let names_ok = seen.values().all(|&c| c == 1);
        if names_ok
            && !problems.iter().any(|p| p.rule == Rule::DependsOnItself)
            && let Err(cycle) = self.topological_order()
        {
            problems.push(DagProblem::new(Place::Dag, Rule::Cycle { tasks: cycle }));
        }
    }
}

/// The tasks `task` runs after in the same run, directly or through others.
fn ancestors<'a>(parents: &HashMap<&'a str, Vec<&'a str>>, task: &str) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut frontier = parents.get(task).cloned().unwrap_or_default();
    while let Some(parent) = frontier.pop() {
        if seen.insert(parent) {
            frontier.extend(parents.get(parent).into_iter().flatten().copied());
        }
    }
    seen
}

/// Why a task may not read `read` (`what` of it): not a task of the DAG,
/// or not among `before`, the tasks it runs after; `None` when it may.
fn unordered_read(
    parents: &HashMap<&str, Vec<&str>>,
    before: &BTreeSet<&str>,
    read: &str,
    what: &str,
) -> Option<String> {
    let shortened = shortened(read);
    let shown = printable(&shortened);
    let what = if what.is_empty() {
        String::new()
    } else {
        format!("{what} ")
    };
    if !parents.contains_key(read) {
        return Some(format!(
            "reads {what}'{shown}', which is not a task of this DAG"
        ));
    }
    (!before.contains(read)).then(|| format!(
        "reads {what}'{shown}' but does not run after it: add '{shown}' to its depends_on (directly or through a task that does)"
    ))
}

/// Why a branch name is refused.
fn not_a_child(switch: &str) -> String {
    format!(
        "is not a child of '{switch}': a branch must be a task with '{switch}' in its depends_on"
    )
}

/// The conditions of `switch` that parse, with their case numbers (one
/// that does not is the content's problem, reported apart).
fn switch_conditions(switch: SwitchContent) -> Vec<(usize, datajump_conditions::Condition)> {
    switch
        .cases
        .iter()
        .enumerate()
        .filter_map(|(i, case)| Some((i, datajump_conditions::Condition::parse(&case.when).ok()?)))
        .collect()
}

impl TaskFile {
    /// What is wrong with the task's content for its type: a required
    /// field missing, a key the type does not take, a value of the wrong
    /// shape, a credential written in clear.
    fn content_problems(&self, task_type: TaskType) -> Vec<String> {
        let missing = match task_type {
            TaskType::Shell if self.command.is_none() && self.script.is_none() => {
                Some("a SHELL task needs 'command' or 'script'")
            }
            TaskType::Python if self.script.is_none() => Some("a PYTHON task needs 'script'"),
            TaskType::Sql
                if self.sql.is_none()
                    || (self.datasource.is_none() && !self.content.contains_key("engine")) =>
            {
                Some("a SQL task needs 'sql' and 'datasource' (or 'content.engine: spark')")
            }
            TaskType::Http if !self.content.contains_key("url") => {
                Some("an HTTP task needs 'content.url'")
            }
            _ => None,
        };
        let mut problems: Vec<String> = match missing {
            Some(missing) => vec![missing.to_owned()],
            None => TaskContent::parse(task_type, &self.content_json())
                .err()
                .map(|e| format!("content: {e}"))
                .into_iter()
                .collect(),
        };
        if task_type == TaskType::Http {
            problems.extend(crate::secrets::credential_problems(&self.content));
        }
        problems
    }

    /// The task's content as its type reads it; `None` when it does not
    /// read, which [`Self::content_problems`] reports, so the checks that
    /// look inside a script have nothing to add.
    pub(crate) fn parsed_content(&self) -> Option<TaskContent> {
        self.task_type()
            .and_then(|t| TaskContent::parse(t, &self.content_json()).ok())
    }

    /// Notes on parameters this task pastes bare into its script or SQL:
    /// a value a trigger or an event gives one of them is refused
    /// (`crate::params`), so each note says the form that takes any value.
    fn untrusted_param_notes(&self) -> Vec<String> {
        let Some(content) = self.parsed_content() else {
            return Vec::new();
        };
        use crate::params::{Mode, ScriptLang};
        // A SPARK or FLINK argument of its own that a parameter begins: a
        // value that would begin it with `-` is refused, as the submitter
        // would read it as an option.
        let mut notes: Vec<String> = content
            .arguments()
            .into_iter()
            .flat_map(|(field, text)| {
                crate::params::leading_params(text)
                    .into_iter()
                    .map(move |name| (field.clone(), name))
            })
            .map(|(field, name)| {
                format!(
                    "task '{}': '{field}' begins with ${{{name}}}, so a value for '{name}' from a \
                     trigger, an event or a task output that begins with '-' will be refused: \
                     spark-submit, spark-sql and flink would read it as an option",
                    self.name
                )
            })
            .collect();
        let Some((text, mode)) = content.code() else {
            return notes;
        };
        let form = match mode {
            Mode::Script(ScriptLang::Shell) => "read \"$<ENV>\" or write ${<NAME>:shell}",
            Mode::Script(ScriptLang::Python) => {
                "read os.environ[\"<ENV>\"] or write ${<NAME>:python}"
            }
            Mode::Sql(_) | Mode::Text | Mode::Path => {
                "only a number or a date goes in bare; write ${<NAME>:literal} or ${<NAME>:ident} for any value"
            }
        };
        notes.extend(
            crate::params::bare_params(text)
                .into_iter()
                // A task output pasted into a script is refused outright
                // (`output_problems`); in SQL it may be a number or a date.
                .filter(|name| {
                    matches!(mode, Mode::Sql(_))
                        || !(name.contains(".output.") || name == crate::map::ITEM_PARAM)
                })
                .map(|name| {
                    let env = crate::params::env_name(&name);
                    let form = form.replace("<NAME>", &name).replace("<ENV>", &env);
                    format!(
                        "task '{}': ${{{name}}} is pasted in as written, so a value for '{name}' from a \
                         trigger or an event will be refused: {form}",
                        self.name
                    )
                }),
        );
        notes
    }

    /// Notes on its `conf` properties whose names look like credentials
    /// ([`crate::secrets::is_credential_property`]) and whose values are
    /// text naming no secret.
    fn credential_notes(&self) -> Vec<String> {
        let Some(content) = self
            .task_type()
            .and_then(|t| TaskContent::parse(t, &self.content_json()).ok())
        else {
            return Vec::new();
        };
        let Some(conf) = content.conf() else {
            return Vec::new();
        };
        conf.iter()
            // A number or a boolean is a setting (`spark.io.encryption.keySizeBits`).
            .filter(|(key, value)| {
                crate::secrets::is_credential_property(key)
                    && matches!(value, crate::content::ScalarText::Text(_))
                    && !value.names_a_secret()
            })
            .map(|(key, _)| {
                format!(
                    "task '{}': conf '{key}' looks like a credential and is written in the DAG, \
                     so it is stored in the catalog and sent in every work message: store it with \
                     `datajump secret set NAME` and write \"${{secret:NAME}}\"",
                    self.name
                )
            })
            .collect()
    }

    /// The quoting forms (`${name:shell}`, `${name:python}`) its script
    /// places inside a string, a comment or a here-document, where the
    /// quotes they write would close the ones around them and the value
    /// would be code (docs/SECURITY.md, "Parameters from outside the DAG
    /// file"). The runner refuses them too, for DAGs stored before this rule.
    fn misplaced_quoting_forms(&self) -> Vec<String> {
        use crate::params::Mode;
        let Some(content) = self.parsed_content() else {
            return Vec::new();
        };
        let Some((text, Mode::Script(lang))) = content.code() else {
            return Vec::new();
        };
        crate::params::misplaced_forms(text, lang)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// The task outputs (`${task.output.name}`) and map items
    /// (`${map.item}`) its script pastes in bare, each with the form that
    /// takes any value.
    fn bare_outputs_in_script(&self) -> Vec<(String, String)> {
        use crate::params::{Mode, ScriptLang};
        let Some(content) = self.parsed_content() else {
            return Vec::new();
        };
        let Some((text, Mode::Script(lang))) = content.code() else {
            return Vec::new();
        };
        crate::params::bare_params(text)
            .into_iter()
            .filter(|name| name.contains(".output.") || name == crate::map::ITEM_PARAM)
            .map(|name| {
                let env = if name == crate::map::ITEM_PARAM {
                    crate::map::ITEM_ENV.to_owned()
                } else {
                    crate::params::env_name(&name)
                };
                let form = match lang {
                    ScriptLang::Shell => format!("read \"${env}\" or write ${{{name}:shell}}"),
                    ScriptLang::Python => {
                        format!("read os.environ[\"{env}\"] or write ${{{name}:python}}")
                    }
                };
                (name, form)
            })
            .collect()
    }
}

/// What a DAG, task or schedule name may be, as the error says it.
pub(super) const NAME_RULE: &str = "must be 1-128 characters (not bytes), not only digits, without spaces at \
     either end, '/', control characters or direction overrides";

/// Whether `name` may name a DAG, a task or a schedule: it is printed in
/// terminals, logs and the UI, is part of paths, and is stored in a
/// `varchar(128)` column ([`MAX_NAME_CHARS`] characters). A name of digits
/// only is refused: it reads as an id (`/api/v1/dags/42`, `--project 42`
/// take ids), so `42` would name two things; a name with spaces at either
/// end, or only spaces, looks like another name or none (docs/DAG_FORMAT.md,
/// "Rules").
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && fits(name, MAX_NAME_CHARS)
        && name.trim() == name
        && !name.bytes().all(|b| b.is_ascii_digit())
        && !name.contains('/')
        && !name.chars().any(crate::naming::is_unprintable)
}

/// "`field` is N characters; at most MAX are stored".
fn too_long(field: &str, value: &str, max: usize) -> String {
    format!(
        "{field} is {} characters; at most {max} are stored",
        value.chars().count()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag_file::DagFileError;

    #[test]
    fn duplicate_dependencies_and_crons_that_never_fire_are_refused() {
        let text = "name: z\nschedules:\n  - { name: feb30, cron: '0 0 0 30 2 ?' }\n  - { name: gone, cron: '0 0 0 1 1 ? 2020' }\n  - { name: daily, cron: '0 0 2 * * ?' }\ntasks:\n  - { name: a, command: 'true' }\n  - name: b\n    command: 'true'\n    depends_on: [a, { task: a, type: WEAK }, { task: a, offset_day: -1 }]\n";
        let Err(DagFileError::Invalid { problems, .. }) = DagFile::parse(text) else {
            panic!("invalid");
        };
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            problems,
            [
                "schedule 'feb30': '0 0 0 30 2 ?' never fires (a date that does not exist, or a year gone by)",
                "schedule 'gone': '0 0 0 1 1 ? 2020' never fires (a date that does not exist, or a year gone by)",
                "task 'b': depends on 'a' more than once; list each dependency once (with its type)",
            ],
            "the offset edge is another instance, and the daily schedule fires"
        );
    }

    #[test]
    fn names_are_counted_in_characters_and_may_not_be_blank_or_digits() {
        assert!(NAME_RULE.starts_with(&format!("must be 1-{MAX_NAME_CHARS} characters")));
        let quoted = |name: &str| serde_json::Value::from(name).to_string();
        let dag = |name: &str| format!("name: {}\ntasks: []\n", quoted(name));
        let problems = |text: &str| match DagFile::parse(text) {
            Err(DagFileError::Invalid { problems, .. }) => {
                problems.iter().map(ToString::to_string).collect::<Vec<_>>()
            }
            other => panic!("not invalid: {other:?}"),
        };
        // 128 characters of three bytes each (384 bytes) fit; 129 do not.
        assert!(DagFile::parse(&dag(&"夜".repeat(128))).is_ok());
        assert!(problems(&dag(&"夜".repeat(129)))[0].ends_with(NAME_RULE));
        for bad in ["   ", "\u{3000}", " etl", "etl ", "42", "007"] {
            let found = problems(&dag(bad));
            assert_eq!(found.len(), 1, "{bad:?}: {found:?}");
            assert!(found[0].ends_with(NAME_RULE), "{bad:?}: {found:?}");
        }
        for good in ["etl 2", "42x", "v1.2", "夜间 汇总"] {
            assert!(DagFile::parse(&dag(good)).is_ok(), "{good:?} refused");
        }
        let task = |name: &str| {
            format!(
                "name: d\ntasks:\n  - {{ name: {}, command: 'true' }}\n",
                quoted(name)
            )
        };
        assert!(DagFile::parse(&task(&"é".repeat(128))).is_ok());
        assert!(problems(&task("1"))[0].starts_with("task '1': name must be"));
        assert!(problems(&task(" "))[0].starts_with("task ' ': name must be"));
    }

    #[test]
    fn sizes_past_their_columns_are_refused_at_parse() {
        let cron = format!("0 0 2 * * ?{}", " ".repeat(200));
        let text = format!(
            "name: d\nowner: {owner}\nschedules:\n  - {{ name: {sched}, cron: '{cron}' }}\n  - {{ event: {event} }}\n  - {{ name: ok, after: {after} }}\ntasks:\n  - {{ name: a, command: 'true', depends_on: ['{dep}/t'] }}\n",
            owner = "o".repeat(65),
            sched = "s".repeat(129),
            event = vec!["e".repeat(64); 4].join("."),
            after = "u".repeat(129),
            dep = "x".repeat(129),
        );
        let Err(DagFileError::Invalid { problems, .. }) = DagFile::parse(&text) else {
            panic!("invalid");
        };
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        let all = problems.join("\n");
        for needle in [
            "`owner` is 65 characters; at most 64 are stored",
            &format!(
                "schedule '{}…': name must be 1-128 characters",
                "s".repeat(64)
            ),
            "`cron` is 211 characters; at most 128 are stored",
            "at most 255 characters in all",
            &format!("after '{}…': must be 1-128", "u".repeat(64)),
            &format!(
                "dependency '{}…/t': a DAG or task name must be 1-128",
                "x".repeat(64)
            ),
        ] {
            assert!(all.contains(needle), "no {needle:?} in:\n{all}");
        }
        assert_eq!(problems.len(), 6, "{all}");
        // At the bounds, all is stored.
        let fits = format!(
            "name: d\nowner: {}\nschedules:\n  - {{ name: {}, cron: '0 0 2 * * ?' }}\ntasks:\n  - {{ name: a, command: 'true', depends_on: ['{}/{}'] }}\n",
            "ö".repeat(64),
            "s".repeat(128),
            "x".repeat(128),
            "t".repeat(128)
        );
        DagFile::parse(&fits).expect("every size at its bound");
    }

    #[test]
    fn a_failure_handler_needs_a_strong_parent_and_none_is_all_done() {
        let text = "name: x\ntasks:\n  - { name: a, command: 'true' }\n  - { name: h, command: 'true', strategy: ONE_FAILED, depends_on: [{ task: a, type: WEAK }] }\n  - { name: lone, command: 'true', strategy: ALL_FAILED }\n";
        let Err(DagFileError::Invalid { problems, .. }) = DagFile::parse(text) else {
            panic!("invalid");
        };
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            problems,
            [
                "task 'h': strategy ONE_FAILED runs it after a parent fails, so it needs a STRONG dependency",
                "task 'lone': strategy ALL_FAILED runs it after a parent fails, so it needs a STRONG dependency",
            ]
        );
        let old = DagFile::parse(
            "name: x\ntasks:\n  - { name: a, command: 'true' }\n  - { name: b, command: 'true', strategy: NONE, depends_on: [a] }\n",
        )
        .expect("NONE is still read");
        assert_eq!(old.tasks[1].strategy, crate::kinds::Strategy::AllDone);
    }

    #[test]
    fn a_switch_names_its_children_only_and_all_of_them_and_reads_what_runs_before_it() {
        let text = r#"
name: routed
tasks:
  - { name: count, command: 'true' }
  - { name: later, command: 'true', depends_on: [route] }
  - name: route
    type: SWITCH
    depends_on: [count]
    outputs: [dw.routes]
    cases:
      - when: "int(tasks.count.output.rows) > 0 && tasks.later.status == 'SUCCESS'"
        then: [load, count]
      - when: "tasks.ghost.status == 'FAILED'"
        then: [load]
    default: [nowhere]
  - { name: load, command: 'true', depends_on: [route] }
  - { name: forgotten, command: 'true', depends_on: [{ task: route, type: WEAK }] }
"#;
        let Err(DagFileError::Invalid { problems, .. }) = DagFile::parse(text) else {
            panic!("invalid");
        };
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            problems,
            [
                "task 'route': cases[0].then: 'count' is not a child of 'route': a branch must be a task with 'route' in its depends_on",
                "task 'route': default: 'nowhere' is not a child of 'route': a branch must be a task with 'route' in its depends_on",
                "task 'route': 'forgotten' depends on it, but no case and not 'default' names it: add it to a 'then' or to 'default'",
                "task 'route': 'later' depends on it, but no case and not 'default' names it: add it to a 'then' or to 'default'",
                "task 'route': cases[0].when reads 'later' but does not run after it: add 'later' to its depends_on (directly or through a task that does)",
                "task 'route': cases[1].when reads 'ghost', which is not a task of this DAG",
                "task 'route': outputs: a SWITCH writes no dataset; declare it on the tasks it chooses",
            ]
        );
    }

    #[test]
    fn a_switch_condition_that_does_not_compile_is_refused_with_its_position() {
        let text = "name: x\ntasks:\n  - { name: a, command: 'true' }\n  - { name: s, type: SWITCH, depends_on: [a], cases: [{ when: 'tasks.a.status ==', then: [b] }, { when: 'env.HOME != \"\"', then: [b] }] }\n  - { name: b, command: 'true', depends_on: [s] }\n  - { name: empty, type: SWITCH }\n";
        let Err(DagFileError::Invalid { problems, .. }) = DagFile::parse(text) else {
            panic!("invalid");
        };
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(problems.len(), 2, "{problems:#?}");
        assert!(
            problems[0].starts_with("task 's': content: cases[0].when does not parse at line 1, column 18: mismatched input '<EOF>'"),
            "{problems:#?}"
        );
        assert_eq!(
            problems[1],
            "task 'empty': content: a SWITCH needs 'cases' (each a 'when' and a 'then'), a 'default', or both"
        );
        let text = "name: x\ntasks:\n  - { name: a, command: 'true' }\n  - { name: s, type: SWITCH, depends_on: [a], cases: [{ when: 'env.HOME != \"\"', then: [b] }] }\n  - { name: b, command: 'true', depends_on: [s] }\n";
        let Err(DagFileError::Invalid { problems, .. }) = DagFile::parse(text) else {
            panic!("invalid");
        };
        assert_eq!(
            problems[0].to_string(),
            "task 's': content: cases[0].when reads 'env' at column 1, which is not a value a condition may read: write params.<name>, biz_date, tasks.<task>.output.<key> or tasks.<task>.status"
        );
    }

    #[test]
    fn a_switch_reading_a_status_it_can_only_see_succeed_is_noted() {
        let text = "name: x\ntasks:\n  - { name: a, command: 'true' }\n  - { name: s, type: SWITCH, depends_on: [a], cases: [{ when: \"tasks.a.status == 'FAILED'\", then: [b] }] }\n  - { name: b, command: 'true', depends_on: [s] }\n";
        let dag = DagFile::parse(text).expect("valid");
        assert_eq!(
            dag.switch_notes(),
            [
                "task 's': cases[0].when reads tasks.a.status, but with strategy ALL_SUCCESS it runs only when no parent failed, so it never sees 'a' fail; write strategy: ALL_DONE to route on how 'a' ended (DolphinScheduler's conditions task)"
            ]
        );
        let all_done =
            DagFile::parse(&text.replace("type: SWITCH,", "type: SWITCH, strategy: ALL_DONE,"))
                .expect("valid");
        assert!(all_done.switch_notes().is_empty());
    }

    #[test]
    fn cycle_is_named() {
        let text = r#"
name: cyc
tasks:
  - { name: a, command: "true" }
  - { name: b, command: "true", depends_on: [a, d] }
  - { name: c, command: "true", depends_on: [b] }
  - { name: d, command: "true", depends_on: [c] }
"#;
        let err = DagFile::parse(text).unwrap_err().to_string();
        assert!(err.contains("cycle: "), "{err}");
        for name in ["b", "c", "d"] {
            assert!(err.contains(name), "{err}");
        }
        assert!(!err.contains("-> a"), "{err}");
    }

    #[test]
    fn every_problem_is_reported() {
        let text = r#"
name: bad
schedules:
  - cron: "0 60 * * * ?"
  - event: "Bad Event"
    name: ev
tasks:
  - { name: a, type: SHELL, command: "true", queue: "no.dots" }
  - { name: a, type: COBOL }
  - { name: b, command: "true", depends_on: [ghost] }
"#;
        let err = DagFile::parse(text).unwrap_err().to_string();
        for needle in [
            "schedule 'default'",
            "schedule 'ev'",
            "invalid queue name 'no.dots'",
            "task 'a': defined 2 times",
            "unknown type 'COBOL'",
            "unknown task 'ghost'",
        ] {
            assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
        }
    }

    #[test]
    fn names_that_would_rewrite_a_terminal_are_refused() {
        let text = "name: \"ok\\nDataJump is up.\"\ntasks:\n  - { name: \"t\\u001b[2J\", command: \"true\" }\n";
        let err = DagFile::parse(text).unwrap_err().to_string();
        assert!(err.contains("name 'ok\\nDataJump is up.'"), "{err}");
        assert!(err.contains("task 't\\u{1b}[2J'"), "{err}");
        assert!(!err.contains("\nDataJump"), "{err}");
        assert!(DagFile::parse("name: 夜间汇总\ntasks: []\n").is_ok());
    }

    #[test]
    fn bare_parameters_in_scripts_and_sql_are_noted() {
        let dag = DagFile::parse(
            r#"
name: notes
params: { region: eu, p: "1" }
tasks:
  - { name: sh, command: "echo ${region} ${bizdate} ${region:shell} $$DJ_PARAM_X" }
  - { name: py, type: PYTHON, script: "print('${p}')" }
  - { name: q, type: SQL, datasource: dw, sql: "select ${p}, ${p:literal}" }
  - { name: ok, command: "echo \"$DJ_PARAM_REGION\"" }
"#,
        )
        .expect("a valid DAG");
        let notes = dag.untrusted_param_notes();
        assert_eq!(notes.len(), 3, "{notes:#?}");
        assert!(notes[0].contains("task 'sh': ${region}") && notes[0].contains("${region:shell}"));
        assert!(notes[0].contains("\"$DJ_PARAM_REGION\""), "{}", notes[0]);
        assert!(notes[1].contains("task 'py'") && notes[1].contains("${p:python}"));
        assert!(notes[2].contains("task 'q'") && notes[2].contains("${p:literal}"));
    }

    #[test]
    fn parameters_that_begin_a_spark_or_flink_argument_are_noted() {
        let dag = DagFile::parse(
            r#"
name: submit
params: { jar: /jobs/etl.jar }
tasks:
  - name: spark
    type: SPARK
    content: { jar: "${jar}", main_class: "com.acme.Etl", app_args: ["--day=${day}", "${day}", "${bizdate}"] }
  - name: flink
    type: FLINK
    content: { py_file: "/jobs/${name}.py", app_args: ["${first}${second}"] }
"#,
        )
        .expect("a valid DAG");
        let notes = dag.untrusted_param_notes();
        assert_eq!(notes.len(), 4, "{notes:#?}");
        assert!(
            notes[0].starts_with("task 'spark': 'jar' begins with ${jar}")
                && notes[0].contains("that begins with '-' will be refused"),
            "{}",
            notes[0]
        );
        assert!(notes[1].starts_with("task 'spark': 'app_args[1]' begins with ${day}"));
        assert!(notes[2].starts_with("task 'flink': 'app_args[0]' begins with ${first}"));
        assert!(notes[3].starts_with("task 'flink': 'app_args[0]' begins with ${second}"));
    }

    #[test]
    fn credentials_written_in_a_spark_or_flink_conf_are_noted() {
        let dag = DagFile::parse(
            r#"
name: creds
tasks:
  - name: spark
    type: SPARK
    content:
      py_file: /jobs/etl.py
      conf:
        spark.hadoop.fs.s3a.access.key: AKIA123
        spark.hadoop.fs.s3a.secret.key: "${secret:s3_key}"
        spark.io.encryption.keySizeBits: 128
        spark.sql.shuffle.partitions: 8
  - name: flink
    type: FLINK
    content: { jar: /jobs/s.jar, conf: { s3.secret-key: "${password}" } }
"#,
        )
        .expect("a valid DAG");
        let notes = dag.credential_notes();
        assert_eq!(notes.len(), 2, "{notes:#?}");
        assert!(
            notes[0].starts_with("task 'spark': conf 'spark.hadoop.fs.s3a.access.key' looks like")
                && notes[0].contains("datajump secret set NAME")
                && notes[0].contains("\"${secret:NAME}\""),
            "{}",
            notes[0]
        );
        assert!(notes[1].starts_with("task 'flink': conf 's3.secret-key'"));
    }

    #[test]
    fn secrets_in_jvm_options_or_malformed_are_refused() {
        let Err(DagFileError::Invalid { problems, .. }) = DagFile::parse(
            r#"
name: creds
tasks:
  - name: spark
    type: SPARK
    content:
      py_file: /jobs/etl.py
      conf: { spark.driver.extraJavaOptions: "-Dpw=${secret:pw}" }
  - name: flink
    type: FLINK
    content: { jar: /jobs/s.jar, conf: { s3.secret-key: "${secret:a-b}" } }
"#,
        ) else {
            panic!("invalid");
        };
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(problems.len(), 2, "{problems:#?}");
        assert!(
            problems[0].contains(
                "'spark.driver.extraJavaOptions' becomes options on the JVM's command line"
            ),
            "{}",
            problems[0]
        );
        assert!(
            problems[1].contains("'s3.secret-key': invalid secret name 'a-b'"),
            "{}",
            problems[1]
        );
    }

    #[test]
    fn output_like_parameters_are_refused() {
        let Err(DagFileError::Invalid { problems, .. }) = DagFile::parse(
            "name: p\nparams: { a.output.b: '1', ok: '2' }\ntasks:\n  - { name: t, command: 'true', params: { T_OUTPUT_N: '3' } }\n",
        ) else {
            panic!("invalid");
        };
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(problems.len(), 2, "{problems:#?}");
        assert!(
            problems[0].starts_with("params: parameter 'a.output.b' is reserved")
                && problems[0].contains("$DJ_PARAM_A_OUTPUT_B"),
            "{}",
            problems[0]
        );
        assert!(
            problems[1].starts_with("task 't': params: parameter 'T_OUTPUT_N' is reserved"),
            "{}",
            problems[1]
        );
    }

    #[test]
    fn a_map_reads_a_task_before_it_or_a_declared_parameter_and_its_item_is_untrusted() {
        let valid = r#"
name: maps
params: { tables: '["a"]' }
tasks:
  - { name: list, command: "echo '##dj-output t=[1]'" }
  - name: by_output
    depends_on: [list]
    map: { over: "${list.output.t}", max_parallel: 4 }
    command: 'load "$DJ_MAP_ITEM" ${map.item:shell} ${map.index}'
  - { name: by_param, map: { over: "${tables}" }, command: 'echo "$DJ_MAP_ITEM"' }
  - { name: literal, map: { over: [a, 1, true] }, type: NOOP }
  - { name: report, type: NOOP, depends_on: [by_output, by_param] }
"#;
        let file = DagFile::parse(valid).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            file.tasks[1]
                .map
                .as_ref()
                .map(|m| m.spec().map(|s| s.max_parallel)),
            Some(Ok(4))
        );
        let refused = r#"
name: maps
tasks:
  - { name: list, command: "echo '##dj-output t=[1]'" }
  - { name: unordered, map: { over: "${list.output.t}" }, command: 'echo "$DJ_MAP_ITEM"' }
  - { name: undeclared, map: { over: "${tables}" }, command: 'echo "$DJ_MAP_ITEM"' }
  - { name: bare, map: { over: [a] }, command: 'echo ${map.item}' }
  - { name: nested, map: { over: [a, [b]], max_parallel: 0 }, type: NOOP }
  - { name: reads_mapped, command: 'echo ${bare.output.x:shell}', depends_on: [bare] }
  - { name: unmapped, command: 'echo ${map.index}' }
  - name: route
    type: SWITCH
    map: { over: [a] }
    depends_on: [list]
    cases: [{ when: "true", then: [after] }]
  - { name: after, type: NOOP, depends_on: [route] }
"#;
        let Err(DagFileError::Invalid { problems, .. }) = DagFile::parse(refused) else {
            panic!("invalid");
        };
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        for (task, said) in [
            (
                "unordered",
                "map: over reads the output of 'list' but does not run after it",
            ),
            (
                "undeclared",
                "map: over reads parameter 'tables', which neither the DAG's nor the task's params declare",
            ),
            (
                "bare",
                "${map.item} is a map item, made at run time, so it cannot be pasted into a script as written: read \"$DJ_MAP_ITEM\" or write ${map.item:shell}",
            ),
            ("nested", "map: over: the list item 1: is an array"),
            ("nested", "map: max_parallel must be 1 to 1000, got 0"),
            ("reads_mapped", "reads an output of 'bare', a mapped task"),
            (
                "unmapped",
                "${map.index} is the item of a mapped task, and this task has no map",
            ),
            ("route", "map: a SWITCH cannot be mapped"),
        ] {
            let prefix = format!("task '{task}': {said}");
            assert!(
                problems.iter().any(|p| p.starts_with(&prefix)),
                "{prefix}\n{problems:#?}"
            );
        }
        assert_eq!(problems.len(), 8, "{problems:#?}");
    }

    #[test]
    fn quoting_forms_inside_strings_are_refused() {
        let text = r#"
name: quoting
params: { p: "1" }
tasks:
  - { name: sh, command: "echo \"value=[${p:shell}]\"" }
  - { name: py, type: PYTHON, script: "x = 1\nprint('v=${p:python}')" }
  - { name: out, command: "echo '${sh.output.v:shell}'", depends_on: [sh] }
  - { name: ok, command: "echo \"value=[\"${p:shell}\"]\" ${sh.output.v:shell}", depends_on: [sh] }
  - { name: okpy, type: PYTHON, script: "print('v=' + ${p:python})" }
"#;
        let Err(DagFileError::Invalid { problems, .. }) = DagFile::parse(text) else {
            panic!("invalid");
        };
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(problems.len(), 3, "{problems:#?}");
        assert!(
            problems[0].starts_with(
                "task 'sh': ${p:shell} stands inside a double-quoted string \"…\" (line 1); a \
                 quoting form must stand alone in the script's code, outside quotes, comments \
                 and here-documents"
            ),
            "{}",
            problems[0]
        );
        assert!(
            problems[0].contains("\"value=[\"${p:shell}\"]\"")
                && problems[0].contains("$DJ_PARAM_P"),
            "{}",
            problems[0]
        );
        assert!(
            problems[1]
                .starts_with("task 'py': ${p:python} stands inside a string literal (line 2)")
                && problems[1].contains("'v=' + ${p:python}")
                && problems[1].contains("os.environ[\"DJ_PARAM_P\"]"),
            "{}",
            problems[1]
        );
        assert!(
            problems[2].starts_with(
                "task 'out': ${sh.output.v:shell} stands inside a single-quoted string"
            ) && problems[2].contains("$DJ_PARAM_SH_OUTPUT_V"),
            "{}",
            problems[2]
        );
    }

    #[test]
    fn content_keys_a_type_does_not_take_are_rejected() {
        let text = r#"
name: typo
tasks:
  - name: call
    type: http
    content: { url: "https://example.com", secretHeader: [X-Api-Key] }
  - { name: run, command: "true", content: { env: { A: "1" } } }
  - name: ok
    type: HTTP
    content: { url: "https://example.com", secret_headers: [X-Api-Key], success_codes: [200, 204] }
"#;
        let err = DagFile::parse(text).unwrap_err().to_string();
        assert!(
            err.contains("task 'call': content: ") && err.contains("secretHeader"),
            "{err}"
        );
        assert!(
            err.contains("task 'run': content: ") && err.contains("env"),
            "{err}"
        );
        assert!(!err.contains("task 'ok'"), "{err}");
    }

    #[test]
    fn cross_dag_and_offset_dependencies_are_not_cycles() {
        let text = r#"
name: daily
tasks:
  - name: report
    command: "true"
    depends_on:
      - { task: report, offset_day: -1 }
      - other/load
"#;
        DagFile::parse(text).unwrap();
    }
}
