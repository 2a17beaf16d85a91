//! What recording a metric costs: each recording function of
//! `datajump_shared::metrics` called a few million times, in nanoseconds per
//! call, on one thread and then on two threads at once (the same series, so
//! the two contend for its cache line as runners on two cores would).
//!
//! ```text
//! cargo run --release -p datajump-shared --example metrics_cost
//! ```
//!
//! A histogram call includes computing the span from two timestamps, as the
//! roles' calls do. Take the median of a few runs: one run on a busy machine
//! varies by a few nanoseconds.

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::Instant;

use chrono::{DateTime, TimeDelta, Utc};
use datajump_shared::metrics::{self, RetryCause};
use datajump_shared::subjects::Stream;
use datajump_shared::{RunStatus, TaskStatus};

/// Calls per measurement and thread.
const CALLS: u32 = 5_000_000;

/// A call measured: its name, and the call, given the call's number.
type Case = (&'static str, fn(u32));

/// Nanoseconds per call of `record`, called [`CALLS`] times on each of
/// `threads` threads at once.
fn per_call(threads: u32, record: fn(u32)) -> f64 {
    let start = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                for i in 0..CALLS {
                    record(black_box(i));
                }
            });
        }
    });
    start.elapsed().as_nanos() as f64 / f64::from(CALLS)
}

/// A span of the `i`-th call: from 0.5 ms to about 65 s, over every bucket.
fn at(i: u32) -> (DateTime<Utc>, DateTime<Utc>) {
    static SPANS: OnceLock<Vec<(DateTime<Utc>, DateTime<Utc>)>> = OnceLock::new();
    let spans = SPANS.get_or_init(|| {
        let from = Utc::now();
        (0..17)
            .map(|shift| (from, from + TimeDelta::microseconds(500 << shift)))
            .collect()
    });
    spans[i as usize % spans.len()]
}

fn main() {
    let cases: [Case; 8] = [
        ("(a span, nothing recorded)", |i| {
            black_box(at(i));
        }),
        ("attempt_ended(SUCCESS)", |_| {
            metrics::attempt_ended(TaskStatus::Success)
        }),
        ("task_retried(failure)", |_| {
            metrics::task_retried(RetryCause::Failure)
        }),
        ("run_finished(SUCCESS)", |_| {
            metrics::run_finished(RunStatus::Success)
        }),
        ("poison_message(DJ_WORK)", |_| {
            metrics::poison_message(Stream::Work)
        }),
        ("task_dispatched", |i| {
            let (from, to) = at(i);
            metrics::task_dispatched(from, to)
        }),
        ("edge_released", |i| {
            let (from, to) = at(i);
            metrics::edge_released(from, to)
        }),
        ("fire_published", |i| {
            let (from, to) = at(i);
            metrics::fire_published(from, to)
        }),
    ];
    // Warm up: first touches, lazy statics, CPU frequency.
    for (_, record) in cases {
        per_call(1, record);
    }
    println!("{:<26} {:>10} {:>12}", "call", "1 thread", "2 threads");
    for (name, record) in cases {
        println!(
            "{name:<26} {:>7.1} ns {:>9.1} ns",
            per_call(1, record),
            per_call(2, record),
        );
    }
}
