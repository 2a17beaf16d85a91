//! Process-wide metrics, and the page that shows them to Prometheus.
//!
//! Roles record what they see through the functions here
//! ([`task_dispatched`], [`attempt_ended`], [`run_finished`], …); whoever
//! serves `/metrics` writes them with [`render`], then may add figures it
//! reads when scraped, with [`encode`] (the API adds gauges from the
//! database and JetStream, as a [`Collector`]). `docs/METRICS.md` lists every
//! metric: their names, types, labels and buckets are public interface.
//!
//! The registry and the text encoder are the Prometheus project's Rust
//! client, `prometheus-client`: one encoder for the whole page, writing the
//! Prometheus text format 0.0.4 ([`CONTENT_TYPE`]), which every Prometheus
//! scrapes and whose lines are those this page always had (no `# EOF`, no
//! `# UNIT`). The library adds `_total` to a counter's name itself, so
//! counters are registered without it. Kept here, not in a role, because the
//! endpoint (`datajump-api`, or `datajump up` serving every role) may not
//! depend on a role's crate.
//!
//! The shaping decision: **a fixed set of metrics, each label over a closed
//! set of values known at compile time, every series resolved once** when
//! the registry is built, so recording is one or two relaxed atomic
//! additions — no lock, no allocation, no hash of a label set on the hot
//! path, which every task's dispatch and end cross. A labelled counter is a [`Family`]
//! whose series are all created up front (each is exported at 0 from the
//! start), their handles kept beside their keys: recording finds its key
//! among a handful and makes one atomic addition. A latency histogram is an
//! `AtomicHistogram` of this module, which the library's encoder writes: two
//! atomic additions per observation, where the library's own histogram takes
//! a mutex on every one, and so contends between threads recording at once. Label values that are data (queue
//! names) only appear in figures read at scrape time, by a [`Collector`].
//! `shared/examples/metrics_cost.rs` measures what each recording costs.
//!
//! Being process-wide, the figures of roles sharing a process (`datajump up`,
//! the end-to-end tests) add up.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

use chrono::{DateTime, Utc};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeGaugeValue, EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet,
    prometheus_text,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Metric, Registry};

use crate::subjects::Stream;
use crate::{RunStatus, TaskStatus};

/// The `Content-Type` of the page [`render`] and [`encode`] write: the
/// Prometheus text format, version 0.0.4.
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// Upper bounds, in seconds, of the latency histograms' buckets: from a
/// millisecond (an edge in a fast run) to a minute (a misfire grace).
const LATENCY_BUCKETS: [f64; 15] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// The series of a counter with one label, each created when registered and
/// found again by its key (a status, a cause, a stream) among a few.
struct LabeledCounters<K, const N: usize> {
    series: [(K, Counter); N],
}

impl<K: Copy, const N: usize> LabeledCounters<K, N> {
    /// Registers counter `name` (without its `_total`, which the encoder
    /// adds) with one series per key, labelled `label="value_of(key)"`.
    fn register(
        registry: &mut Registry,
        name: &str,
        help: &str,
        label: &'static str,
        keys: [K; N],
        value_of: fn(K) -> &'static str,
    ) -> LabeledCounters<K, N> {
        let family = Family::<[(&'static str, &'static str); 1], Counter>::default();
        let series = keys.map(|key| (key, family.get_or_create_owned(&[(label, value_of(key))])));
        register(registry, name, help, family);
        LabeledCounters { series }
    }

    /// Counts one for `key`; a key outside the set is not a series of this
    /// metric (callers pass only keys of the set).
    fn inc<Q>(&self, key: Q)
    where
        K: PartialEq<Q>,
    {
        if let Some((_, counter)) = self.series.iter().find(|(k, _)| *k == key) {
            counter.inc();
        }
    }
}

/// A histogram of durations over fixed bucket bounds (seconds), lock-free,
/// that the library's encoder writes.
///
/// Buckets are stored non-cumulative, as the encoder wants them, and the
/// count is their total, so an observation is two atomic additions and a
/// scrape never shows a count that disagrees with its buckets.
#[derive(Debug)]
struct AtomicHistogram<const N: usize> {
    bounds: [f64; N],
    /// `buckets[i]`: observations in `(bounds[i-1], bounds[i]]`.
    buckets: [AtomicU64; N],
    /// Observations above the last bound.
    overflow: AtomicU64,
    /// Sum of observations in nanoseconds (584 years before it wraps).
    sum_nanos: AtomicU64,
}

impl<const N: usize> AtomicHistogram<N> {
    /// An empty histogram over ascending, finite `bounds`.
    const fn new(bounds: [f64; N]) -> AtomicHistogram<N> {
        AtomicHistogram {
            bounds,
            buckets: [const { AtomicU64::new(0) }; N],
            overflow: AtomicU64::new(0),
            sum_nanos: AtomicU64::new(0),
        }
    }

    /// Records the time from `from` to `to`; a negative span (clocks of two
    /// hosts disagreeing) counts as zero.
    fn observe_between(&self, from: DateTime<Utc>, to: DateTime<Utc>) {
        self.observe((to - from).to_std().unwrap_or_default());
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
}

/// The registry holds the histograms, which live in statics, by reference.
impl<const N: usize> EncodeMetric for &'static AtomicHistogram<N> {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let buckets: Vec<(f64, u64)> = self
            .bounds
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(self.buckets.iter().chain([&self.overflow]))
            .map(|(bound, n)| (bound, n.load(Ordering::Relaxed)))
            .collect();
        let count = buckets.iter().map(|(_, n)| n).sum();
        let sum = self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

/// QUEUED → attempt started.
static DISPATCH_LATENCY: AtomicHistogram<15> = AtomicHistogram::new(LATENCY_BUCKETS);
/// Parent's end → child QUEUED by the propagation of that end.
static EDGE_RELEASE_LATENCY: AtomicHistogram<15> = AtomicHistogram::new(LATENCY_BUCKETS);
/// Scheduled fire time → fire published.
static FIRE_LAG: AtomicHistogram<15> = AtomicHistogram::new(LATENCY_BUCKETS);
/// Tasks waiting QUEUED per queue that no live runner serves, as of the
/// ticker's last check.
static UNSERVED_QUEUES: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());

/// Writes [`UNSERVED_QUEUES`] when scraped: its series are data (queue names)
/// and come and go as a whole at each check.
#[derive(Debug)]
struct UnservedQueues;

impl Collector for UnservedQueues {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        encode_gauges(
            &mut encoder,
            "datajump_unserved_queue_tasks",
            "Tasks QUEUED for over 10 s on a queue no live runner serves, per queue, as of this process's ticker's last check.",
            unserved_queues()
                .into_iter()
                .map(|(queue, waiting)| ([("queue", queue)], waiting)),
        )
    }
}

/// Writes gauge `name` with one sample per `(labels, value)` of `series`
/// (its `# HELP` and `# TYPE` even when there is none): for a [`Collector`]'s
/// figures read at scrape time. `help` is written as given.
///
/// # Errors
///
/// When `encoder` fails to write.
pub fn encode_gauges<L, V>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (L, V)>,
) -> Result<(), std::fmt::Error>
where
    L: EncodeLabelSet,
    V: EncodeGaugeValue,
{
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in series {
        ConstGauge::new(value).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

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

/// A typed JSON column whose stored value did not read
/// (`crate::entities::StoredJson`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredField {
    /// `task_instance.spec`: the instance was quarantined (FAILED).
    InstanceSpec,
    /// `task_instance.children`: its children were not counted.
    InstanceChildren,
    /// `task_instance.outputs`: read as no outputs.
    InstanceOutputs,
}

impl StoredField {
    const ALL: [StoredField; 3] = [
        StoredField::InstanceSpec,
        StoredField::InstanceChildren,
        StoredField::InstanceOutputs,
    ];

    /// `table.column`.
    pub const fn as_str(self) -> &'static str {
        match self {
            StoredField::InstanceSpec => "task_instance.spec",
            StoredField::InstanceChildren => "task_instance.children",
            StoredField::InstanceOutputs => "task_instance.outputs",
        }
    }
}

/// The registry of every metric this process records, and the counters'
/// series in it.
struct Metrics {
    registry: Registry,
    /// Attempt ends the runner records, by the instance's state after them.
    task_attempts: LabeledCounters<TaskStatus, 7>,
    /// Retries started, by cause.
    task_retries: LabeledCounters<RetryCause, 2>,
    /// Runs finished, by final status.
    runs_finished: LabeledCounters<RunStatus, 4>,
    /// Messages terminated as undecodable or naming impossible ids, by stream.
    poison_messages: LabeledCounters<Stream, 5>,
    /// Publishes dropped as duplicates, by stream.
    duplicate_publishes: LabeledCounters<Stream, 5>,
    /// Stored JSON values that did not read, by column.
    unreadable_stored_json: LabeledCounters<StoredField, 3>,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

/// Registers `metric` under `name`, with `help` as the page shows it (the
/// registry adds the final period itself).
fn register(registry: &mut Registry, name: &str, help: &str, metric: impl Metric) {
    registry.register(name, help.strip_suffix('.').unwrap_or(help), metric);
}

impl Metrics {
    /// The registry, in the order of the page: counters, histograms, gauge.
    fn new() -> Metrics {
        let mut registry = Registry::default();
        let task_attempts = LabeledCounters::register(
            &mut registry,
            "datajump_task_attempts",
            "Task attempts whose end a runner recorded, by the state it left the task in (UP_FOR_RETRY: failed, retry scheduled; UP_FOR_RESCHEDULE: a sensor's check found nothing yet; SKIPPED: a soft-failing sensor out of time).",
            "status",
            [
                TaskStatus::Success,
                TaskStatus::Failed,
                TaskStatus::Timeout,
                TaskStatus::Killed,
                TaskStatus::UpForRetry,
                TaskStatus::UpForReschedule,
                TaskStatus::Skipped,
            ],
            TaskStatus::as_str,
        );
        let task_retries = LabeledCounters::register(
            &mut registry,
            "datajump_task_retries",
            "Tasks queued again for another attempt: a retry that came due (failure) or a takeover from a dead runner (runner_lost).",
            "cause",
            [RetryCause::Failure, RetryCause::RunnerLost],
            RetryCause::as_str,
        );
        let runs_finished = LabeledCounters::register(
            &mut registry,
            "datajump_dag_runs_finished",
            "DAG runs finished by a resolver or ticker of this process, by final status.",
            "status",
            [
                RunStatus::Success,
                RunStatus::Failed,
                RunStatus::Killed,
                RunStatus::Timeout,
            ],
            RunStatus::as_str,
        );
        let poison_messages = LabeledCounters::register(
            &mut registry,
            "datajump_poison_messages",
            "Messages terminated, never redelivered, because they could not be decoded or named ids that cannot exist, by stream.",
            "stream",
            Stream::ALL,
            Stream::as_str,
        );
        let duplicate_publishes = LabeledCounters::register(
            &mut registry,
            "datajump_duplicate_publishes",
            "Publishes JetStream dropped as duplicates of a message already in its duplicate window, by stream. Fires: usually a second ticker's copy. Work and completions: republished under a fresh id at once, and worth a look (something else published the id first).",
            "stream",
            Stream::ALL,
            Stream::as_str,
        );
        let unreadable_stored_json = LabeledCounters::register(
            &mut registry,
            "datajump_unreadable_stored_json",
            "Stored JSON values a role could not read as their column's type (written by another release, or edited by hand), by column (table.column). task_instance.spec: the instance was ended FAILED with a reason naming the row; task_instance.children: a finished instance's children could not be counted, and its run waits for its timeout or an operator; task_instance.outputs: read as no outputs. Any is worth a look.",
            "column",
            StoredField::ALL,
            StoredField::as_str,
        );
        for (name, help, histogram) in [
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
        ] {
            register(&mut registry, name, help, histogram);
        }
        registry.register_collector(Box::new(UnservedQueues));
        Metrics {
            registry,
            task_attempts,
            task_retries,
            runs_finished,
            poison_messages,
            duplicate_publishes,
            unreadable_stored_json,
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
    METRICS.task_attempts.inc(status);
}

/// A task was put back in its queue for another attempt.
pub fn task_retried(cause: RetryCause) {
    METRICS.task_retries.inc(cause);
}

/// A run finished with `status`.
pub fn run_finished(status: RunStatus) {
    METRICS.runs_finished.inc(status);
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
pub fn poison_message(stream: Stream) {
    METRICS.poison_messages.inc(stream);
}

/// JetStream dropped a publish to `stream` as a duplicate.
pub fn duplicate_publish(stream: Stream) {
    METRICS.duplicate_publishes.inc(stream);
}

/// A stored JSON value of `field` did not read as its type.
pub fn unreadable_stored_json(field: StoredField) {
    METRICS.unreadable_stored_json.inc(field);
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

/// Appends every metric this process recorded to `out`, in the Prometheus
/// text format ([`CONTENT_TYPE`]).
pub fn render(out: &mut String) {
    encode(out, &METRICS.registry);
}

/// Appends the metrics of `registry` to `out` as [`render`] does: for a page
/// that adds figures read when scraped to this process's.
pub fn encode(out: &mut String, registry: &Registry) {
    // Writing to a `String` does not fail, nor does encoding these metrics
    // (only a native-only histogram, which this crate has not, cannot be
    // written in this format).
    let written = prometheus_text::encode(out, registry);
    debug_assert!(written.is_ok(), "encoding metrics failed");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> String {
        let mut out = String::new();
        render(&mut out);
        out
    }

    fn encoded(registry: &Registry) -> String {
        let mut out = String::new();
        encode(&mut out, registry);
        out
    }

    /// The value of the sample line that starts with `series` and a space.
    fn sample(page: &str, series: &str) -> Option<f64> {
        page.lines()
            .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
            .map(|value| value.parse().expect("a sample value"))
    }

    #[test]
    fn every_metric_has_help_and_type_and_a_zero_series_from_the_start() {
        let text = page();
        for (name, kind) in [
            ("datajump_task_attempts_total", "counter"),
            ("datajump_task_retries_total", "counter"),
            ("datajump_dag_runs_finished_total", "counter"),
            ("datajump_poison_messages_total", "counter"),
            ("datajump_dispatch_latency_seconds", "histogram"),
            ("datajump_edge_release_latency_seconds", "histogram"),
            ("datajump_fire_lag_seconds", "histogram"),
            ("datajump_unserved_queue_tasks", "gauge"),
        ] {
            assert!(text.contains(&format!("# HELP {name} ")), "{name}");
            assert!(text.contains(&format!("# TYPE {name} {kind}\n")), "{name}");
        }
        for series in [
            r#"datajump_task_attempts_total{status="UP_FOR_RETRY"}"#,
            r#"datajump_task_retries_total{cause="runner_lost"}"#,
            r#"datajump_dag_runs_finished_total{status="KILLED"}"#,
            r#"datajump_poison_messages_total{stream="work"}"#,
            r#"datajump_fire_lag_seconds_bucket{le="+Inf"}"#,
        ] {
            assert!(sample(&text, series).is_some(), "{series}");
        }
        // Only the lines of the 0.0.4 format, and HELP texts as written.
        for line in text.lines().filter(|line| line.starts_with('#')) {
            assert!(
                line.starts_with("# HELP ") || line.starts_with("# TYPE "),
                "{line}"
            );
            assert!(!line.ends_with(".."), "{line}");
        }
        assert!(text.contains(
            "# HELP datajump_dag_runs_finished_total DAG runs finished by a resolver or ticker of this process, by final status.\n"
        ));
    }

    #[test]
    fn recording_counts_in_its_series_only() {
        let series = r#"datajump_task_attempts_total{status="SUCCESS"}"#;
        let other = r#"datajump_task_attempts_total{status="FAILED"}"#;
        let poison = r#"datajump_poison_messages_total{stream="done"}"#;
        let before = page();
        attempt_ended(TaskStatus::Success);
        attempt_ended(TaskStatus::Success);
        // Not a status an attempt ends in: no series, nothing counted.
        attempt_ended(TaskStatus::Running);
        poison_message(Stream::Done);
        let after = page();
        let delta = |series| sample(&after, series).unwrap() - sample(&before, series).unwrap();
        // Tests of this crate are threads of one process: at least ours.
        assert!(delta(series) >= 2.0);
        assert!(delta(poison) >= 1.0);
        assert!(!after.contains("RUNNING"));
        assert!(!after.contains("NOT_A_STREAM"));
        assert!(sample(&after, other).is_some());
    }

    #[test]
    fn histogram_buckets_are_cumulative_and_end_with_inf() {
        static HISTOGRAM: AtomicHistogram<2> = AtomicHistogram::new([0.1, 1.0]);
        for millis in [50, 100, 700, 3_000] {
            HISTOGRAM.observe(std::time::Duration::from_millis(millis));
        }
        let mut registry = Registry::default();
        register(&mut registry, "h_seconds", "A histogram.", &HISTOGRAM);
        assert_eq!(
            encoded(&registry),
            "# HELP h_seconds A histogram.\n\
             # TYPE h_seconds histogram\n\
             h_seconds_bucket{le=\"0.1\"} 2\n\
             h_seconds_bucket{le=\"1\"} 3\n\
             h_seconds_bucket{le=\"+Inf\"} 4\n\
             h_seconds_sum 3.85\n\
             h_seconds_count 4\n"
        );
    }

    #[test]
    fn latency_buckets_are_spelled_as_documented() {
        let text = page();
        let bounds: Vec<&str> = text
            .lines()
            .filter_map(|line| line.strip_prefix("datajump_dispatch_latency_seconds_bucket{le=\""))
            .map(|rest| rest.split('"').next().unwrap())
            .collect();
        assert_eq!(
            bounds,
            [
                "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1",
                "2.5", "5", "10", "30", "60", "+Inf"
            ]
        );
    }

    #[test]
    fn negative_spans_count_as_zero() {
        static HISTOGRAM: AtomicHistogram<1> = AtomicHistogram::new([0.001]);
        let now = Utc::now();
        HISTOGRAM.observe_between(now, now - chrono::Duration::seconds(5));
        let mut registry = Registry::default();
        register(&mut registry, "h", "H.", &HISTOGRAM);
        let text = encoded(&registry);
        assert_eq!(sample(&text, r#"h_bucket{le="0.001"}"#), Some(1.0));
        assert_eq!(sample(&text, r#"h_bucket{le="+Inf"}"#), Some(1.0));
        assert_eq!(sample(&text, "h_sum"), Some(0.0));
    }

    #[test]
    fn unserved_queues_are_exported_as_set_with_labels_escaped() {
        set_unserved_queues(BTreeMap::from([
            ("etl".to_owned(), 3),
            ("a\"b\\c\nd".to_owned(), 1),
        ]));
        let text = page();
        assert_eq!(
            sample(&text, r#"datajump_unserved_queue_tasks{queue="etl"}"#),
            Some(3.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"datajump_unserved_queue_tasks{queue="a\"b\\c\nd"}"#
            ),
            Some(1.0)
        );
        set_unserved_queues(BTreeMap::new());
        let text = page();
        assert!(text.contains("# TYPE datajump_unserved_queue_tasks gauge\n"));
        assert!(!text.contains("datajump_unserved_queue_tasks{"));
    }

    #[test]
    fn collected_gauges_are_written_as_given() {
        #[derive(Debug)]
        struct Gauges;
        impl Collector for Gauges {
            fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
                let none: [(&str, &str); 0] = [];
                encode_gauges(&mut encoder, "g", "A gauge.", [(none, 5_u64)])?;
                encode_gauges(
                    &mut encoder,
                    "q",
                    "Per queue.",
                    [([("queue", "a"), ("band", "high")], -2_i64)],
                )?;
                let empty: [([(&str, &str); 1], i64); 0] = [];
                encode_gauges(&mut encoder, "e", "Empty.", empty)
            }
        }
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Gauges));
        assert_eq!(
            encoded(&registry),
            "# HELP g A gauge.\n# TYPE g gauge\ng 5\n\
             # HELP q Per queue.\n# TYPE q gauge\nq{queue=\"a\",band=\"high\"} -2\n\
             # HELP e Empty.\n# TYPE e gauge\n"
        );
    }
}
