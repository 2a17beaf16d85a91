//! The bench's report: one row per (workload, task type, metric) with its
//! summary, the targets judged pass/miss, and the ratio to the
//! competitor anchor it is compared with; printed as a text table and
//! written as a Markdown section per database.
//!
//! `--write` replaces only the section of the database it measured (between
//! `<!-- bench:<db>:start -->` and `<!-- bench:<db>:end -->`), so SQLite and
//! PostgreSQL runs can be recorded one after the other in one file and
//! anything written by hand outside those markers survives a rerun.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context as _, Result};

use super::stats::{Better, Summary};
use super::workloads::TaskKind;

/// A metric's unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds.
    Ms,
    /// Seconds.
    S,
    /// Tasks per second.
    PerS,
    /// A count.
    Count,
    /// A dimensionless ratio.
    Ratio,
    /// Mebibytes.
    MiB,
}

impl Unit {
    /// `value` with its unit, rounded for reading.
    pub fn format(self, value: f64) -> String {
        if value.is_nan() {
            return "–".to_owned();
        }
        match self {
            Unit::Ms => format!("{} ms", sig(value)),
            Unit::S => format!("{} s", sig(value)),
            Unit::PerS => format!("{}/s", sig(value)),
            Unit::Count => format!("{value:.0}"),
            Unit::Ratio => format!("{value:.2}×"),
            Unit::MiB => format!("{} MiB", sig(value)),
        }
    }
}

/// Three significant digits or whole numbers, whichever is longer.
fn sig(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 100.0 {
        format!("{value:.0}")
    } else if magnitude >= 10.0 {
        format!("{value:.1}")
    } else if magnitude >= 1.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}

/// Which statistic a target is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stat {
    /// The median.
    Median,
    /// The 99th percentile on the bad side.
    Tail,
    /// The worst sample.
    Worst,
}

/// A target: the statistic must be at most (lower-is-better metrics) or at
/// least (higher-is-better) `value`.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    stat: Stat,
    value: f64,
    /// Set by the bench, not by the issue.
    own: bool,
}

impl Target {
    /// A target on the median.
    pub fn median(value: f64) -> Target {
        Target {
            stat: Stat::Median,
            value,
            own: false,
        }
    }

    /// A target on the p99 (bad side).
    pub fn tail(value: f64) -> Target {
        Target {
            stat: Stat::Tail,
            value,
            own: false,
        }
    }

    /// A target on the worst sample.
    pub fn worst(value: f64) -> Target {
        Target {
            stat: Stat::Worst,
            value,
            own: false,
        }
    }

    /// Marks a criterion the bench sets itself (shown with a `†`).
    pub fn bench_criterion(mut self) -> Target {
        self.own = true;
        self
    }

    fn text(&self, unit: Unit, better: Better) -> String {
        let stat = match (self.stat, better) {
            (Stat::Median, _) => "p50",
            (Stat::Tail, Better::Lower) => "p99",
            (Stat::Tail, Better::Higher) => "p1",
            (Stat::Worst, Better::Lower) => "max",
            (Stat::Worst, Better::Higher) => "min",
        };
        let op = match better {
            Better::Lower => "≤",
            Better::Higher => "≥",
        };
        let own = if self.own { " †" } else { "" };
        format!("{stat} {op} {}{own}", unit.format(self.value))
    }

    fn met(&self, summary: &Summary, better: Better) -> bool {
        let value = match self.stat {
            Stat::Median => summary.median,
            Stat::Tail => summary.tail,
            Stat::Worst => summary.worst,
        };
        match better {
            Better::Lower => value <= self.value,
            Better::Higher => value >= self.value,
        }
    }
}

/// A competitor's figure for the same metric, in the same unit.
#[derive(Clone, Copy, Debug)]
pub struct Anchor {
    name: &'static str,
    value: f64,
}

impl Anchor {
    /// `name`'s figure `value`.
    pub fn new(name: &'static str, value: f64) -> Anchor {
        Anchor { name, value }
    }
}

/// One line of the report.
#[derive(Clone, Debug)]
pub struct Row {
    workload: String,
    task: &'static str,
    metric: String,
    unit: Unit,
    better: Better,
    summary: Option<Summary>,
    targets: Vec<Target>,
    anchor: Option<Anchor>,
}

impl Row {
    /// A row summarising `samples`.
    pub fn new(
        workload: &str,
        task: TaskKind,
        metric: &str,
        unit: Unit,
        better: Better,
        samples: &[f64],
    ) -> Row {
        Row {
            workload: workload.to_owned(),
            task: task.label(),
            metric: metric.to_owned(),
            unit,
            better,
            summary: Summary::of(samples, better),
            targets: Vec::new(),
            anchor: None,
        }
    }

    /// The workload it reports on (with its size when changed).
    pub fn workload(&self) -> &str {
        &self.workload
    }

    /// Adds a target.
    pub fn target(mut self, target: Target) -> Row {
        self.targets.push(target);
        self
    }

    /// Adds targets.
    pub fn targets(mut self, targets: Vec<Target>) -> Row {
        self.targets.extend(targets);
        self
    }

    /// Sets the anchor it is compared with.
    pub fn anchor(mut self, anchor: Anchor) -> Row {
        self.anchor = Some(anchor);
        self
    }

    /// The median, if there were samples.
    pub fn median(&self) -> Option<f64> {
        self.summary.map(|s| s.median)
    }

    /// `Some(true)` if every target is met, `None` without targets or samples.
    pub fn verdict(&self) -> Option<bool> {
        if self.targets.is_empty() {
            return None;
        }
        let summary = self.summary?;
        Some(self.targets.iter().all(|t| t.met(&summary, self.better)))
    }

    fn target_text(&self) -> String {
        self.targets
            .iter()
            .map(|t| t.text(self.unit, self.better))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn anchor_text(&self) -> String {
        let (Some(anchor), Some(median)) = (self.anchor, self.median()) else {
            return String::new();
        };
        // How many times better we are, worded for the metric's direction.
        let (ratio, better, worse) = match self.better {
            Better::Lower => (anchor.value / median, "faster", "slower"),
            Better::Higher => (median / anchor.value, "higher", "lower"),
        };
        let verdict = if ratio >= 1.0 {
            format!("{} {better}", ratio_text(ratio))
        } else {
            format!("{} {worse}", ratio_text(1.0 / ratio))
        };
        format!(
            "{} {}: {verdict}",
            anchor.name,
            self.unit.format(anchor.value)
        )
    }

    fn cells(&self) -> Vec<String> {
        let stat = |f: fn(&Summary) -> f64| {
            self.summary
                .map_or_else(|| "–".to_owned(), |s| self.unit.format(f(&s)))
        };
        vec![
            self.workload.clone(),
            self.task.to_owned(),
            self.metric.clone(),
            stat(|s| s.median),
            stat(|s| s.tail),
            stat(|s| s.worst),
            self.summary.map_or(0, |s| s.n).to_string(),
            self.target_text(),
            match self.verdict() {
                Some(true) => "pass".to_owned(),
                Some(false) => "MISS".to_owned(),
                None => String::new(),
            },
            self.anchor_text(),
        ]
    }
}

fn ratio_text(ratio: f64) -> String {
    if ratio >= 100.0 {
        format!("{ratio:.0}×")
    } else if ratio >= 10.0 {
        format!("{ratio:.1}×")
    } else {
        format!("{ratio:.2}×")
    }
}

const HEADERS: [&str; 10] = [
    "workload",
    "task",
    "metric",
    "median",
    "p99*",
    "worst",
    "n",
    "target",
    "",
    "vs anchor",
];

/// The rows as an aligned text table.
pub fn text_table(rows: &[Row]) -> String {
    let cells: Vec<Vec<String>> = rows.iter().map(Row::cells).collect();
    let mut widths: Vec<usize> = HEADERS.iter().map(|h| h.chars().count()).collect();
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut out = String::new();
        for (i, (cell, width)) in cells.iter().zip(&widths).enumerate() {
            let pad = width - cell.chars().count();
            // Numbers right-aligned, text left-aligned.
            if (3..=6).contains(&i) {
                out.push_str(&" ".repeat(pad));
                out.push_str(cell);
            } else {
                out.push_str(cell);
                out.push_str(&" ".repeat(pad));
            }
            out.push_str("  ");
        }
        out.trim_end().to_owned()
    };
    let mut out = line(&HEADERS.map(str::to_owned));
    out.push('\n');
    for row in &cells {
        out.push_str(&line(row));
        out.push('\n');
    }
    out
}

/// The rows as a Markdown table.
pub fn markdown_table(rows: &[Row]) -> String {
    let mut out = format!("| {} |\n", HEADERS.join(" | "));
    out.push_str("|---|---|---|--:|--:|--:|--:|---|---|---|\n");
    for row in rows {
        let cells = row.cells();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

/// Where and how a bench ran.
#[derive(Clone)]
pub struct Environment {
    /// The section's heading: the database and its version, and the
    /// workload when it has a section of its own.
    pub title: String,
    /// UTC date and time of the start.
    pub date: String,
    /// `git rev-parse --short HEAD`, with a note if the tree was modified.
    pub commit: String,
    /// Cores, memory, CPU model.
    pub machine: String,
    /// Database server and version.
    pub database: String,
    /// nats-server version.
    pub nats: String,
    /// Runner set-up, repetitions and the like.
    pub setup: String,
    /// Wall-clock time of the whole bench.
    pub duration: String,
    /// Size reductions, failures and other remarks.
    pub notes: Vec<String>,
}

/// The Markdown section of one database's run.
pub fn markdown_section(env: &Environment, rows: &[Row]) -> String {
    let judged: Vec<bool> = rows.iter().filter_map(Row::verdict).collect();
    let met = judged.iter().filter(|v| **v).count();
    let mut out = String::new();
    let _ = writeln!(out, "## {}\n", env.title);
    let _ = writeln!(out, "- date: {}", env.date);
    let _ = writeln!(out, "- commit: {}", env.commit);
    let _ = writeln!(out, "- machine: {}", env.machine);
    let _ = writeln!(out, "- database: {}", env.database);
    let _ = writeln!(out, "- nats-server: {}", env.nats);
    let _ = writeln!(out, "- set-up: {}", env.setup);
    let _ = writeln!(out, "- bench duration: {}", env.duration);
    let _ = writeln!(out, "- targets met: {met} of {} rows\n", judged.len());
    out.push_str(&markdown_table(rows));
    out.push_str(
        "\n\\* p99 on the bad side: the slow end for times and counts, p1 (the low end) for \
         rates. worst = max for times, min for rates. † = the bench's own criterion, not the \
         issue's. Ratios compare our median with the anchor.\n",
    );
    if !env.notes.is_empty() {
        out.push_str("\nNotes:\n\n");
        for note in &env.notes {
            let _ = writeln!(out, "- {note}");
        }
    }
    out
}

/// What a new report file starts with.
const PREAMBLE: &str = "# DataJump benchmarks

Generated by `datajump-bench` (the `bench/` crate). Build it and the
`datajump` binary its role processes run with
`cargo build --release -p datajump -p datajump-bench`, then rerun with
`./target/release/datajump-bench --db sqlite --write docs/BENCHMARKS.md` and
`./target/release/datajump-bench --db postgres --write docs/BENCHMARKS.md`.
Each run replaces only its own database's section; text outside the
generated sections is kept.

Method: every repetition starts a new system — a nats-server on a free port
with an empty store, an empty database, migrations, the ticker, the resolver
and the runners — applies the workload's DAG, runs a one-task warm-up run, then
triggers the measured run with a manual fire. Figures are read from the
timestamps the roles write: edge latency is a child's `execution.start_time`
minus its parent's `execution.end_time`; totals run from the instant the fire
is published to `dag_run.finished_at`; cron lags are `dag_run.created_at` (and
the task's start) minus the schedule's `logical_time`, plus the instant a core
NATS subscriber sees the ticker's fire. Medians and tails are over all
repetitions (latency samples pooled; totals and rates one per repetition).

Anchors (issue 6): Airflow 2.10.5 on this machine kind — chain10 10.9 s, median
0.89 s between a task's end and its successor's start, fanout50 21.2 s,
wide200 71 s (2.8 tasks/s), a cron fire's first task 0.69 s after the schedule;
Hatchet 31 ms per sequential task (40 × 10 ms tasks in 1.22 s, so it includes
10 ms of work per task that NOOP and `true` do not have).
";

/// Writes `section` for database `key` into the file at `path`, replacing
/// the previous section of that database and keeping everything else.
pub fn write_section(path: &Path, key: &str, section: &str) -> Result<()> {
    let start = format!("<!-- bench:{key}:start -->");
    let end = format!("<!-- bench:{key}:end -->");
    let block = format!("{start}\n{section}{end}\n");
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => PREAMBLE.to_owned(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let text = match (existing.find(&start), existing.find(&end)) {
        (Some(from), Some(to)) if to > from => {
            let after = existing[to + end.len()..]
                .strip_prefix('\n')
                .unwrap_or(&existing[to + end.len()..]);
            format!("{}{block}{after}", &existing[..from])
        }
        _ => {
            let mut text = existing;
            if !text.ends_with("\n\n") {
                text.push('\n');
            }
            text.push_str(&block);
            text
        }
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(samples: &[f64], better: Better) -> Row {
        Row::new("w", TaskKind::Noop, "m", Unit::Ms, better, samples)
    }

    #[test]
    fn targets_are_judged_on_the_right_side() {
        let fast = row(&[1.0, 2.0, 3.0], Better::Lower)
            .target(Target::median(5.0))
            .target(Target::tail(25.0));
        assert_eq!(fast.verdict(), Some(true));
        let slow_tail = row(&[1.0, 2.0, 300.0], Better::Lower).target(Target::tail(25.0));
        assert_eq!(slow_tail.verdict(), Some(false));
        let rate = row(&[900.0, 1100.0, 1200.0], Better::Higher).target(Target::median(1000.0));
        assert_eq!(rate.verdict(), Some(true));
        assert_eq!(row(&[1.0], Better::Lower).verdict(), None);
        assert_eq!(
            row(&[], Better::Lower)
                .target(Target::median(1.0))
                .verdict(),
            None
        );
    }

    #[test]
    fn anchor_ratio_reads_as_faster_or_slower() {
        let r = row(&[10.0], Better::Lower).anchor(Anchor::new("Airflow", 890.0));
        assert_eq!(r.anchor_text(), "Airflow 890 ms: 89.0× faster");
        let r = row(&[40.0], Better::Lower).anchor(Anchor::new("Hatchet", 31.0));
        assert_eq!(r.anchor_text(), "Hatchet 31.0 ms: 1.29× slower");
    }

    #[test]
    fn sections_are_replaced_in_place() {
        let dir = std::env::temp_dir().join(format!("dj-bench-test-{}", uuid::Uuid::new_v4()));
        let path = dir.join("B.md");
        let ok = write_section(&path, "sqlite", "one\n")
            .and_then(|()| write_section(&path, "postgres", "two\n"))
            .and_then(|()| write_section(&path, "sqlite", "three\n"));
        assert!(ok.is_ok(), "{ok:?}");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(text.starts_with("# DataJump benchmarks"));
        assert!(text.contains("<!-- bench:sqlite:start -->\nthree\n<!-- bench:sqlite:end -->"));
        assert!(text.contains("two\n"));
        assert!(!text.contains("one\n"));
        assert!(text.find("three").unwrap_or(0) < text.find("two").unwrap_or(0));
    }

    /// `--write docs/BENCHMARKS.md` finds every generated section of the
    /// repository's report and touches nothing outside the one it replaces.
    #[test]
    fn the_repository_report_keeps_its_sections() {
        let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/BENCHMARKS.md");
        let original = std::fs::read_to_string(&doc).unwrap_or_default();
        // Its title and how to run the bench are the preamble's.
        let header = PREAMBLE
            .split("\n\n")
            .take(2)
            .collect::<Vec<_>>()
            .join("\n\n");
        assert!(
            original.starts_with(&header),
            "docs/BENCHMARKS.md does not open with the preamble the bench writes:\n{header}"
        );
        let dir = std::env::temp_dir().join(format!("dj-bench-test-{}", uuid::Uuid::new_v4()));
        let copy = dir.join("BENCHMARKS.md");
        for key in [
            "sqlite",
            "postgres",
            "sqlite-schedules1m",
            "postgres-schedules1m",
        ] {
            let (start, end) = (
                format!("<!-- bench:{key}:start -->"),
                format!("<!-- bench:{key}:end -->"),
            );
            let (Some(from), Some(to)) = (original.find(&start), original.find(&end)) else {
                panic!("docs/BENCHMARKS.md has no section {key}");
            };
            assert!(from < to, "section {key} ends before it starts");
            let written = std::fs::create_dir_all(&dir)
                .map_err(anyhow::Error::from)
                .and_then(|()| std::fs::write(&copy, &original).map_err(anyhow::Error::from))
                .and_then(|()| write_section(&copy, key, "new\n"));
            assert!(written.is_ok(), "{written:?}");
            let text = std::fs::read_to_string(&copy).unwrap_or_default();
            let after = &original[to + end.len()..];
            let expected = format!("{}{start}\nnew\n{end}{after}", &original[..from]);
            assert!(text == expected, "section {key} was not replaced in place");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
