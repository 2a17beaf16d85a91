//! Process-wide metrics and their Prometheus text exposition (format 0.0.4).
//!
//! Roles record what they see through the functions here
//! ([`task_dispatched`], [`attempt_ended`], [`run_finished`], …); whoever
//! serves `/metrics` renders them with [`render`] into an [`Exposition`], to
//! which it may add figures it reads when scraped (the API adds gauges from
//! the database and JetStream). `docs/METRICS.md` lists every metric.
//!
//! The shaping decision: **a fixed set of static metrics, each label over a
//! closed set of values known at compile time**, so recording is one or two
//! relaxed atomic additions — no lock, no allocation, no map lookup on the
//! hot path (issue #6 measures per-task cost). Label values that are data
//! (queue names) only appear in figures computed at scrape time. Kept here,
//! not in a role, because the endpoint (`datajump-api`, or `datajump up`
//! serving every role) may not depend on a role's crate; a tiny registry
//! rather than a metrics crate because a dozen metrics need no more.
//!
//! Being process-wide, the figures of roles sharing a process (`datajump up`,
//! the end-to-end tests) add up.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};

use crate::subjects::{DONE_STREAM, EVENT_STREAM, FIRE_STREAM, WORK_STREAM};
use crate::{RunStatus, TaskStatus};

/// A monotonic count.
struct Counter(AtomicU64);

impl Counter {
    const fn new() -> Counter {
        Counter(AtomicU64::new(0))
    }

    fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Counters of one metric, one per value of its single label.
struct LabeledCounters<const N: usize> {
    values: [&'static str; N],
    counters: [Counter; N],
}

impl<const N: usize> LabeledCounters<N> {
    const fn new(values: [&'static str; N]) -> LabeledCounters<N> {
        LabeledCounters {
            values,
            counters: [const { Counter::new() }; N],
        }
    }

    /// Counts one for `value`; a value outside the set is not a series of
    /// this metric (callers pass only values of the set).
    fn inc(&self, value: &str) {
        if let Some(i) = self.values.iter().position(|v| *v == value) {
            self.counters[i].inc();
        }
    }

    fn render(&self, out: &mut Exposition, name: &str, label: &str) {
        for (value, counter) in self.values.iter().zip(&self.counters) {
            out.sample(name, &[(label, value)], counter.get() as f64);
        }
    }
}

/// Upper bounds, in seconds, of the latency histograms' buckets: from a
/// millisecond (an edge in a fast run) to a minute (a misfire grace).
const LATENCY_BUCKETS: [f64; 15] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// A histogram of durations over fixed bucket bounds (seconds).
///
/// Buckets are stored non-cumulative and the count is their total, so an
/// observation is two atomic additions and a scrape never shows a count
/// that disagrees with its buckets.
struct Histogram<const N: usize> {
    bounds: [f64; N],
    /// `buckets[i]`: observations in `(bounds[i-1], bounds[i]]`.
    buckets: [AtomicU64; N],
    /// Observations above the last bound.
    overflow: AtomicU64,
    /// Sum of observations in nanoseconds (584 years before it wraps).
    sum_nanos: AtomicU64,
}

impl<const N: usize> Histogram<N> {
    /// An empty histogram over ascending `bounds`.
    const fn new(bounds: [f64; N]) -> Histogram<N> {
        Histogram {
            bounds,
            buckets: [const { AtomicU64::new(0) }; N],
            overflow: AtomicU64::new(0),
            sum_nanos: AtomicU64::new(0),
        }
    }

    /// Records the time from `from` to `to`; a negative span (clocks of two
    /// hosts disagreeing) counts as zero.
    fn observe_between(&self, from: DateTime<Utc>, to: DateTime<Utc>) {
        let span = (to - from).to_std().unwrap_or_default();
        self.observe(span);
    }

    /// Records one duration.
    fn observe(&self, span: std::time::Duration) {
        let seconds = span.as_secs_f64();
        let slot = self
            .bounds
            .iter()
            .position(|bound| seconds <= *bound)
            .map_or(&self.overflow, |i| &self.buckets[i]);
        slot.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(span.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// The histogram as of now.
    fn snapshot(&self) -> HistogramSnapshot {
        let mut cumulative = 0;
        let mut buckets = Vec::with_capacity(N + 1);
        for (bound, bucket) in self.bounds.iter().zip(&self.buckets) {
            cumulative += bucket.load(Ordering::Relaxed);
            buckets.push((*bound, cumulative));
        }
        cumulative += self.overflow.load(Ordering::Relaxed);
        buckets.push((f64::INFINITY, cumulative));
        HistogramSnapshot {
            buckets,
            sum: self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9,
        }
    }
}

/// A histogram's figures at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    /// `(upper bound, observations ≤ bound)`, ascending, ending with `+Inf`
    /// whose count is the total.
    pub buckets: Vec<(f64, u64)>,
    /// Sum of observations, in seconds.
    pub sum: f64,
}

impl HistogramSnapshot {
    /// Number of observations.
    pub fn count(&self) -> u64 {
        self.buckets.last().map_or(0, |(_, count)| *count)
    }
}

/// A metric's type, as its `# TYPE` line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up.
    Counter,
    /// Goes up and down.
    Gauge,
    /// Buckets, sum and count.
    Histogram,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// The `Content-Type` of [`Exposition::into_text`].
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A page of the Prometheus text format being written: call
/// [`Exposition::family`] once per metric, then its samples.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
}

impl Exposition {
    /// An empty page.
    pub fn new() -> Exposition {
        Exposition::default()
    }

    /// Starts metric `name`: its `# HELP` and `# TYPE` lines.
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let help = help.replace('\\', r"\\").replace('\n', r"\n");
        let _ = writeln!(self.text, "# HELP {name} {help}");
        let _ = writeln!(self.text, "# TYPE {name} {}", kind.as_str());
    }

    /// One sample line: `name{labels} value`.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.text.push_str(name);
        self.labels(labels, None);
        let _ = writeln!(self.text, " {}", format_value(value));
    }

    /// The lines of one histogram series: cumulative `_bucket`s ending with
    /// `le="+Inf"`, then `_sum` and `_count`.
    pub fn histogram(
        &mut self,
        name: &str,
        labels: &[(&str, &str)],
        histogram: &HistogramSnapshot,
    ) {
        for (bound, count) in &histogram.buckets {
            let _ = write!(self.text, "{name}_bucket");
            self.labels(labels, Some(*bound));
            let _ = writeln!(self.text, " {count}");
        }
        self.sample(&format!("{name}_sum"), labels, histogram.sum);
        self.sample(&format!("{name}_count"), labels, histogram.count() as f64);
    }

    /// The page.
    pub fn into_text(self) -> String {
        self.text
    }

    fn labels(&mut self, labels: &[(&str, &str)], le: Option<f64>) {
        if labels.is_empty() && le.is_none() {
            return;
        }
        self.text.push('{');
        let le = le.map(format_value);
        let all = labels
            .iter()
            .copied()
            .chain(le.as_deref().map(|le| ("le", le)));
        for (i, (label, value)) in all.enumerate() {
            if i > 0 {
                self.text.push(',');
            }
            let _ = write!(self.text, "{label}=\"");
            for c in value.chars() {
                match c {
                    '\\' => self.text.push_str(r"\\"),
                    '"' => self.text.push_str("\\\""),
                    '\n' => self.text.push_str(r"\n"),
                    c => self.text.push(c),
                }
            }
            self.text.push('"');
        }
        self.text.push('}');
    }
}

/// A sample value as Prometheus reads it (`+Inf`, `-Inf`, `NaN` spelled its way).
fn format_value(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value == f64::INFINITY {
        "+Inf".to_owned()
    } else if value == f64::NEG_INFINITY {
        "-Inf".to_owned()
    } else {
        value.to_string()
    }
}

/// Attempt ends the runner records, by the instance's state after them.
static TASK_ATTEMPTS: LabeledCounters<5> = LabeledCounters::new([
    TaskStatus::Success.as_str(),
    TaskStatus::Failed.as_str(),
    TaskStatus::Timeout.as_str(),
    TaskStatus::Killed.as_str(),
    TaskStatus::UpForRetry.as_str(),
]);
/// Retries started, by cause.
static TASK_RETRIES: LabeledCounters<2> = LabeledCounters::new([
    RetryCause::Failure.as_str(),
    RetryCause::RunnerLost.as_str(),
]);
/// Runs finished, by final status.
static RUNS_FINISHED: LabeledCounters<3> = LabeledCounters::new([
    RunStatus::Success.as_str(),
    RunStatus::Failed.as_str(),
    RunStatus::Killed.as_str(),
]);
/// Messages terminated as undecodable or naming impossible ids, by stream.
static POISON_MESSAGES: LabeledCounters<4> =
    LabeledCounters::new([FIRE_STREAM, EVENT_STREAM, WORK_STREAM, DONE_STREAM]);
/// QUEUED → attempt started.
static DISPATCH_LATENCY: Histogram<15> = Histogram::new(LATENCY_BUCKETS);
/// Parent's end → child QUEUED by the propagation of that end.
static EDGE_RELEASE_LATENCY: Histogram<15> = Histogram::new(LATENCY_BUCKETS);
/// Scheduled fire time → fire published.
static FIRE_LAG: Histogram<15> = Histogram::new(LATENCY_BUCKETS);
/// Tasks waiting QUEUED per queue that no live runner serves, as of the
/// ticker's last check.
static UNSERVED_QUEUES: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());

/// Why a task is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryCause {
    /// A failed attempt's retry came due (the task's retry policy).
    Failure,
    /// The runner of the attempt died and another took the task over.
    RunnerLost,
}

impl RetryCause {
    const fn as_str(self) -> &'static str {
        match self {
            RetryCause::Failure => "failure",
            RetryCause::RunnerLost => "runner_lost",
        }
    }
}

/// A runner started an attempt at `started` of an instance QUEUED at `queued`.
pub fn task_dispatched(queued: DateTime<Utc>, started: DateTime<Utc>) {
    DISPATCH_LATENCY.observe_between(queued, started);
}

/// A runner recorded the end of an attempt, leaving its instance in `status`
/// (terminal, or UP_FOR_RETRY).
pub fn attempt_ended(status: TaskStatus) {
    TASK_ATTEMPTS.inc(status.as_str());
}

/// A task was put back in its queue for another attempt.
pub fn task_retried(cause: RetryCause) {
    TASK_RETRIES.inc(cause.as_str());
}

/// A run finished with `status`.
pub fn run_finished(status: RunStatus) {
    RUNS_FINISHED.inc(status.as_str());
}

/// A parent that ended at `parent_end` released a child, QUEUED at `queued`.
pub fn edge_released(parent_end: DateTime<Utc>, queued: DateTime<Utc>) {
    EDGE_RELEASE_LATENCY.observe_between(parent_end, queued);
}

/// The ticker published the fire scheduled for `scheduled` at `published`.
pub fn fire_published(scheduled: DateTime<Utc>, published: DateTime<Utc>) {
    FIRE_LAG.observe_between(scheduled, published);
}

/// A message of `stream` was terminated as poison.
pub fn poison_message(stream: &str) {
    POISON_MESSAGES.inc(stream);
}

/// Records the ticker's latest check: waiting tasks per unserved queue.
pub fn set_unserved_queues(waiting: BTreeMap<String, u64>) {
    *UNSERVED_QUEUES.lock().unwrap_or_else(|p| p.into_inner()) = waiting;
}

/// Waiting tasks per queue that no live runner serves (empty when every
/// queue with waiting work has a runner).
pub fn unserved_queues() -> BTreeMap<String, u64> {
    UNSERVED_QUEUES
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

fn counter_family<const N: usize>(
    out: &mut Exposition,
    name: &str,
    help: &str,
    label: &str,
    counters: &LabeledCounters<N>,
) {
    out.family(name, Kind::Counter, help);
    counters.render(out, name, label);
}

/// Writes every metric this process recorded.
pub fn render(out: &mut Exposition) {
    counter_family(
        out,
        "datajump_task_attempts_total",
        "Task attempts whose end a runner recorded, by the state it left the task in (UP_FOR_RETRY: failed, retry scheduled).",
        "status",
        &TASK_ATTEMPTS,
    );
    counter_family(
        out,
        "datajump_task_retries_total",
        "Tasks queued again for another attempt: a retry that came due (failure) or a takeover from a dead runner (runner_lost).",
        "cause",
        &TASK_RETRIES,
    );
    counter_family(
        out,
        "datajump_dag_runs_finished_total",
        "DAG runs finished by a resolver or ticker of this process, by final status.",
        "status",
        &RUNS_FINISHED,
    );
    counter_family(
        out,
        "datajump_poison_messages_total",
        "Messages terminated, never redelivered, because they could not be decoded or named ids that cannot exist, by stream.",
        "stream",
        &POISON_MESSAGES,
    );
    let histograms = [
        (
            "datajump_dispatch_latency_seconds",
            "Time from a task becoming QUEUED to a runner starting its attempt.",
            &DISPATCH_LATENCY,
        ),
        (
            "datajump_edge_release_latency_seconds",
            "Time from a parent task's end to its child becoming QUEUED (the first half of an edge; dispatch latency is the second).",
            &EDGE_RELEASE_LATENCY,
        ),
        (
            "datajump_fire_lag_seconds",
            "Time from a cron fire's scheduled instant to the ticker publishing it.",
            &FIRE_LAG,
        ),
    ];
    for (name, help, histogram) in histograms {
        out.family(name, Kind::Histogram, help);
        out.histogram(name, &[], &histogram.snapshot());
    }
    let name = "datajump_unserved_queue_tasks";
    out.family(
        name,
        Kind::Gauge,
        "Tasks QUEUED for over 10 s on a queue no live runner serves, per queue, as of this process's ticker's last check.",
    );
    for (queue, waiting) in unserved_queues() {
        out.sample(name, &[("queue", &queue)], waiting as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        let mut out = Exposition::new();
        out.family("m", Kind::Gauge, "a \\ help\nline");
        out.sample("m", &[("queue", "a\"b\\c\nd"), ("band", "high")], 2.0);
        out.sample("m", &[], 0.5);
        assert_eq!(
            out.into_text(),
            "# HELP m a \\\\ help\\nline\n# TYPE m gauge\n\
             m{queue=\"a\\\"b\\\\c\\nd\",band=\"high\"} 2\n\
             m 0.5\n"
        );
    }

    #[test]
    fn histogram_buckets_are_cumulative_and_end_with_inf() {
        let histogram = Histogram::new([0.1, 1.0]);
        for millis in [50, 100, 700, 3_000] {
            histogram.observe(std::time::Duration::from_millis(millis));
        }
        let snapshot = histogram.snapshot();
        assert_eq!(snapshot.count(), 4);
        let mut out = Exposition::new();
        out.histogram("h_seconds", &[("q", "x")], &snapshot);
        assert_eq!(
            out.into_text(),
            "h_seconds_bucket{q=\"x\",le=\"0.1\"} 2\n\
             h_seconds_bucket{q=\"x\",le=\"1\"} 3\n\
             h_seconds_bucket{q=\"x\",le=\"+Inf\"} 4\n\
             h_seconds_sum{q=\"x\"} 3.85\n\
             h_seconds_count{q=\"x\"} 4\n"
        );
    }

    #[test]
    fn negative_spans_count_as_zero() {
        let histogram = Histogram::new([0.001]);
        let now = Utc::now();
        histogram.observe_between(now, now - chrono::Duration::seconds(5));
        let snapshot = histogram.snapshot();
        assert_eq!(snapshot.buckets, vec![(0.001, 1), (f64::INFINITY, 1)]);
        assert_eq!(snapshot.sum, 0.0);
    }

    #[test]
    fn special_values_are_spelled_the_prometheus_way() {
        assert_eq!(format_value(f64::INFINITY), "+Inf");
        assert_eq!(format_value(f64::NEG_INFINITY), "-Inf");
        assert_eq!(format_value(f64::NAN), "NaN");
        assert_eq!(format_value(3.0), "3");
        assert_eq!(format_value(0.0025), "0.0025");
    }

    #[test]
    fn every_metric_has_help_and_type_and_a_zero_series_from_the_start() {
        let mut out = Exposition::new();
        render(&mut out);
        let text = out.into_text();
        for name in [
            "datajump_task_attempts_total",
            "datajump_task_retries_total",
            "datajump_dag_runs_finished_total",
            "datajump_poison_messages_total",
            "datajump_dispatch_latency_seconds",
            "datajump_edge_release_latency_seconds",
            "datajump_fire_lag_seconds",
            "datajump_unserved_queue_tasks",
        ] {
            assert!(text.contains(&format!("# HELP {name} ")), "{name}");
            assert!(text.contains(&format!("# TYPE {name} ")), "{name}");
        }
        assert!(text.contains("datajump_task_attempts_total{status=\"UP_FOR_RETRY\"} "));
        assert!(text.contains("datajump_poison_messages_total{stream=\"DJ_WORK\"} "));
        assert!(text.contains("datajump_fire_lag_seconds_bucket{le=\"+Inf\"} "));
    }
}
