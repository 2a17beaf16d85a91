//! `load`: dispatch latency against offered load. For each offered rate
//! (runs a second), a fresh system running as one `datajump up` process, as
//! a user runs it, is offered that many runs a second for `--load-seconds`,
//! of one-task DAGs or ten-task chains, and by one of two offerers:
//!
//! - `cron`: the product's own ticker. `rate` DAGs each fire every second,
//!   so each second's runs are all due at its first instant, as thousands of
//!   daily DAGs are at 02:00.
//! - `event`: `rate` events a second spread evenly over the second, each
//!   starting one run of one of [`EVENT_DAGS`] DAGs, as external systems
//!   send them. The bench publishes the events (they are the product's
//!   input, not fires); the resolver turns each into a fire.
//!
//! Per rate it reports the lag from the fire's due instant (the schedule's
//! second, or the event's publication) to the first task's start, the edges
//! inside chains, the rate first tasks started at, the runs still waiting
//! for their first task when the window closed, and the CPU the system and
//! the bench process used. The knee is the highest rate whose p99 stays
//! under a second. A rate far past the knee only measures how long the
//! backlog is, so the sweep of an (offerer, shape) stops after the first
//! rate that leaves runs unstarted or whose p99 passes [`STOP_P99_MS`].

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use chrono::{DateTime, Utc};
use clap::ValueEnum;
use datajump_shared::entities::{dag_run, task_instance};
use datajump_shared::{RunStatus, TriggerType};
use futures::stream::FuturesUnordered;
use futures::{FutureExt as _, StreamExt as _};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QuerySelect};

use super::{Appendix, Bench, Measured, TaskKind, apply, chain, dag_yaml, ms};
use crate::procfs;
use crate::report::{Row, Target, Unit};
use crate::stats::{Better, Summary};
use crate::system::System;

/// Who offers the runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Offer {
    /// The ticker: `rate` schedules firing every second.
    Cron,
    /// `rate` events a second from the bench, evenly spread.
    Event,
}

impl Offer {
    fn name(self) -> &'static str {
        match self {
            Offer::Cron => "cron",
            Offer::Event => "event",
        }
    }

    /// How the report's set-up line says it.
    pub fn describe(self) -> &'static str {
        match self {
            Offer::Cron => "the ticker (one DAG per run a second, each firing every second)",
            Offer::Event => "events the bench publishes evenly over each second (100 DAGs)",
        }
    }
}

/// What each run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Shape {
    /// One NOOP task.
    #[value(name = "one")]
    One,
    /// Ten NOOP tasks in a line.
    #[value(name = "chain10")]
    Chain10,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::One => "1 task",
            Shape::Chain10 => "chain10",
        }
    }

    /// How the report's set-up line says it.
    pub fn describe(self) -> &'static str {
        match self {
            Shape::One => "one-task DAGs",
            Shape::Chain10 => "ten-task chains",
        }
    }

    fn tasks(self) -> usize {
        match self {
            Shape::One => 1,
            Shape::Chain10 => 10,
        }
    }
}

/// What `load` sweeps.
#[derive(Clone, Debug)]
pub struct LoadPlan {
    /// Offered rates, runs a second, in increasing order.
    pub rates: Vec<u32>,
    /// Length of each rate's window.
    pub seconds: u64,
    /// Offerers, each swept on its own.
    pub offers: Vec<Offer>,
    /// Run shapes, each swept on its own.
    pub shapes: Vec<Shape>,
}

/// DAGs the `event` offerer spreads its events over: enough that no DAG's
/// own row is what runs wait for.
const EVENT_DAGS: u32 = 100;
/// The latency the knee is defined by.
const KNEE_P99_MS: f64 = 1000.0;
/// Past this p99 a higher rate teaches nothing new.
const STOP_P99_MS: f64 = 5000.0;
/// Seconds between the system's start and the window: the ticker's first
/// load and the pools' warm-up stay outside.
const SETTLE_SECS: i64 = 4;
/// The target for p99 at 500 runs a second, and the rate it holds at.
const TARGET_RATE: u32 = 500;
const TARGET_P99_MS: f64 = 100.0;
/// The target for the knee.
const TARGET_KNEE: f64 = 2000.0;

/// One offered rate of one (offerer, shape), all repetitions pooled.
struct Point {
    offer: Offer,
    shape: Shape,
    rate: u32,
    /// Due instant → first task started, one sample per due run; a run
    /// whose first task never started counts with the time it had waited
    /// when the bench stopped looking (a lower bound).
    first_task_ms: Vec<f64>,
    /// Due instant → run created, for the runs that were.
    created_ms: Vec<f64>,
    /// Inside chains: a task's end → its successor's start.
    edge_ms: Vec<f64>,
    /// First tasks started per second during the window, one per repetition.
    started_per_s: Vec<f64>,
    /// Due runs whose first task had not started when the window closed.
    backlog: Vec<f64>,
    /// Due runs whose first task had not started when the bench stopped.
    unstarted: f64,
    /// CPU time over the window, in cores (1.0 = one core busy): the
    /// `datajump up` process, the nats-server and the bench.
    system_cores: Vec<f64>,
    nats_cores: Vec<f64>,
    bench_cores: Vec<f64>,
}

impl Point {
    fn p99(&self) -> Option<f64> {
        Summary::of(&self.first_task_ms, Better::Lower).map(|s| s.tail)
    }

    fn past_the_knee(&self) -> bool {
        self.unstarted > 0.0 || self.p99().is_none_or(|p99| p99 > STOP_P99_MS)
    }
}

/// What one repetition saw.
#[derive(Default)]
struct Rep {
    first_task_ms: Vec<f64>,
    created_ms: Vec<f64>,
    edge_ms: Vec<f64>,
    started_per_s: f64,
    backlog: f64,
    unstarted: f64,
    system_cores: f64,
    nats_cores: f64,
    bench_cores: f64,
}

/// Runs the sweep `bench.load` describes: the report rows, and the curve as
/// a table and a plot.
pub(super) async fn run(bench: &Bench<'_>) -> Result<Measured> {
    let plan = &bench.load;
    let mut points = Vec::new();
    let mut notes = Vec::new();
    for &offer in &plan.offers {
        for &shape in &plan.shapes {
            for &rate in &plan.rates {
                let point = measure_point(bench, offer, shape, rate).await?;
                let stop = point.past_the_knee();
                points.push(point);
                if stop {
                    notes.push(format!(
                        "load {} {}: stopped at {rate}/s, past the knee",
                        offer.name(),
                        shape.name()
                    ));
                    break;
                }
            }
        }
    }
    let svg_name = format!("bench-load-{}.svg", bench.backend.kind.key());
    Ok(Measured {
        rows: rows(&points),
        appendix: Some(Appendix {
            text: curve_table(&points, false),
            markdown: format!(
                "{}\n![p99 of fire → first task against offered rate]({svg_name})\n",
                curve_table(&points, true)
            ),
            svg: Some((svg_name, plot(&points, bench.backend.kind.label())?)),
            notes,
        }),
    })
}

async fn measure_point(bench: &Bench<'_>, offer: Offer, shape: Shape, rate: u32) -> Result<Point> {
    let mut point = Point {
        offer,
        shape,
        rate,
        first_task_ms: Vec::new(),
        created_ms: Vec::new(),
        edge_ms: Vec::new(),
        started_per_s: Vec::new(),
        backlog: Vec::new(),
        unstarted: 0.0,
        system_cores: Vec::new(),
        nats_cores: Vec::new(),
        bench_cores: Vec::new(),
    };
    for rep in 1..=bench.repeat {
        let began = Instant::now();
        let mut system = System::start(bench.backend, bench.datajump).await?;
        let result = measure_rep(bench, &mut system, offer, shape, rate).await;
        system.stop().await;
        let one = result.with_context(|| {
            format!(
                "load {} {} at {rate}/s, repetition {rep}",
                offer.name(),
                shape.name()
            )
        })?;
        let p99 = Summary::of(&one.first_task_ms, Better::Lower).map_or(f64::NAN, |s| s.tail);
        eprintln!(
            "  load [{}] {} {} {rate}/s rep {rep}/{}: first task p99 {p99:.1} ms, {:.0} started/s, backlog {}, unstarted {}, cores: system {:.2}, NATS {:.2}, bench {:.2} ({:.0} s)",
            bench.backend.kind.key(),
            offer.name(),
            shape.name(),
            bench.repeat,
            one.started_per_s,
            one.backlog,
            one.unstarted,
            one.system_cores,
            one.nats_cores,
            one.bench_cores,
            began.elapsed().as_secs_f64()
        );
        point.first_task_ms.extend(one.first_task_ms);
        point.created_ms.extend(one.created_ms);
        point.edge_ms.extend(one.edge_ms);
        point.started_per_s.push(one.started_per_s);
        point.backlog.push(one.backlog);
        point.unstarted += one.unstarted;
        point.system_cores.push(one.system_cores);
        point.nats_cores.push(one.nats_cores);
        point.bench_cores.push(one.bench_cores);
    }
    Ok(point)
}

/// The YAML of the `index`th DAG of a sweep.
fn dag(offer: Offer, shape: Shape, index: u32) -> String {
    let trigger = match offer {
        Offer::Cron => {
            "  - cron: \"* * * * * ?\"\n    timezone: UTC\n    catchup: none\n".to_owned()
        }
        Offer::Event => format!("  - event: {}\n", event_name(index)),
    };
    // Parallel and roomy: a run never waits for another run of its DAG, so
    // what is measured is dispatch, not the DAG's own limit.
    let header = format!("max_active_runs: 1000\noverlap: parallel\nschedules:\n{trigger}");
    dag_yaml(
        &format!("load_{index:05}"),
        TaskKind::Noop,
        &chain::tasks(shape.tasks()),
        &header,
    )
}

fn event_name(index: u32) -> String {
    format!("load_{index}")
}

async fn measure_rep(
    bench: &Bench<'_>,
    system: &mut System<'_>,
    offer: Offer,
    shape: Shape,
    rate: u32,
) -> Result<Rep> {
    let dags = match offer {
        Offer::Cron => rate,
        Offer::Event => rate.min(EVENT_DAGS),
    };
    let applying = Instant::now();
    for index in 0..dags {
        apply(system, &dag(offer, shape, index)).await?;
    }
    eprintln!(
        "  load: {dags} DAGs applied in {:.1} s",
        applying.elapsed().as_secs_f64()
    );
    let up = system.start_up_process(bench.runners.slots).await?;
    let nats = system.nats_server_pid();
    let cpu = || {
        (
            procfs::cpu_seconds(up),
            nats.and_then(procfs::cpu_seconds),
            procfs::cpu_seconds(std::process::id()),
        )
    };
    let started = Utc::now();
    let window_start = started.timestamp() + SETTLE_SECS + 1;
    let seconds = i64::try_from(bench.load.seconds).unwrap_or(i64::MAX / 4);
    let from = DateTime::from_timestamp(window_start, 0).context("bad window")?;
    let to = DateTime::from_timestamp(window_start + seconds, 0).context("bad window")?;

    sleep_until(from).await;
    let cpu_before = cpu();
    let events = match offer {
        Offer::Cron => None,
        Offer::Event => Some(tokio::spawn(publish_events(
            system.bus.clone(),
            dags,
            rate,
            to,
        ))),
    };
    while Utc::now() < to {
        system.check_alive()?;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let cpu_after = cpu();
    let window = bench.load.seconds as f64;
    let cores = |before: Option<f64>, after: Option<f64>| match (before, after) {
        (Some(before), Some(after)) => (after - before) / window,
        _ => f64::NAN,
    };
    let published: Option<HashMap<u64, DateTime<Utc>>> = match events {
        Some(task) => Some(task.await.context("event publisher")??),
        None => None,
    };

    // Due runs: the cron offerer's are known by their logical time, the
    // event offerer's by the events published.
    let expected = match &published {
        None => u64::from(rate) * bench.load.seconds,
        Some(events) => events.len() as u64,
    };
    let due_runs = || {
        let runs = dag_run::Entity::find();
        match offer {
            Offer::Cron => runs
                .filter(dag_run::Column::ScheduleId.is_not_null())
                .filter(dag_run::Column::LogicalTime.gte(from))
                .filter(dag_run::Column::LogicalTime.lt(to)),
            Offer::Event => runs.filter(dag_run::Column::TriggerType.eq(TriggerType::Event)),
        }
    };
    // Long enough for a system that keeps up to finish, and for one that
    // fell behind to show how far.
    let drain = Duration::from_secs(bench.load.seconds.max(30));
    let draining = Instant::now();
    loop {
        let done = due_runs()
            .filter(dag_run::Column::Status.eq(RunStatus::Success))
            .count(&system.db)
            .await?;
        if done >= expected || draining.elapsed() > drain {
            break;
        }
        system.check_alive()?;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let stopped_looking = Utc::now();

    let runs: Vec<(i64, DateTime<Utc>, String, DateTime<Utc>)> = due_runs()
        .select_only()
        .column(dag_run::Column::Id)
        .column(dag_run::Column::LogicalTime)
        .column(dag_run::Column::DedupKey)
        .column(dag_run::Column::CreatedAt)
        .into_tuple()
        .all(&system.db)
        .await?;
    let tasks: Vec<TaskRow> = task_instance::Entity::find()
        .select_only()
        .column(task_instance::Column::DagRunId)
        .column(task_instance::Column::TaskName)
        .column(task_instance::Column::StartedAt)
        .column(task_instance::Column::FinishedAt)
        .into_tuple()
        .all(&system.db)
        .await?;
    let mut by_run: HashMap<i64, HashMap<String, Moments>> = HashMap::new();
    for (run, name, start, end) in tasks {
        by_run.entry(run).or_default().insert(name, (start, end));
    }

    let mut rep = Rep {
        system_cores: cores(cpu_before.0, cpu_after.0),
        nats_cores: cores(cpu_before.1, cpu_after.1),
        bench_cores: cores(cpu_before.2, cpu_after.2),
        ..Rep::default()
    };
    let mut first_starts = 0.0;
    let mut with_run = 0_u64;
    let mut events_without_run = published.clone().unwrap_or_default();
    for (run, logical, dedup_key, created) in &runs {
        let due = match &published {
            None => *logical,
            Some(_) => {
                let Some(at) =
                    event_sequence(dedup_key).and_then(|seq| events_without_run.remove(&seq))
                else {
                    continue;
                };
                at
            }
        };
        with_run += 1;
        rep.created_ms.push(ms(*created - due));
        let instances = by_run.get(run);
        let start_of = |name: &str| instances.and_then(|i| i.get(name)).and_then(|t| t.0);
        match start_of("t0") {
            Some(start) => {
                rep.first_task_ms.push(ms(start - due));
                if start >= to {
                    rep.backlog += 1.0;
                }
            }
            None => {
                rep.first_task_ms.push(ms(stopped_looking - due));
                rep.backlog += 1.0;
                rep.unstarted += 1.0;
            }
        }
        for i in 1..shape.tasks() {
            let parent_end = instances
                .and_then(|t| t.get(&format!("t{}", i - 1)))
                .and_then(|t| t.1);
            if let (Some(end), Some(start)) = (parent_end, start_of(&format!("t{i}"))) {
                rep.edge_ms.push(ms(start - end));
            }
        }
    }
    // Fires that never became runs waited the whole time too: an event
    // since it was published, a scheduled second since at least the
    // window's end.
    let never_ran: Vec<DateTime<Utc>> = match &published {
        Some(_) => events_without_run.into_values().collect(),
        None => (with_run..expected).map(|_| to).collect(),
    };
    for due in never_ran {
        rep.first_task_ms.push(ms(stopped_looking - due));
        rep.backlog += 1.0;
        rep.unstarted += 1.0;
    }
    for instances in by_run.values() {
        if let Some((Some(start), _)) = instances.get("t0")
            && (from..to).contains(start)
        {
            first_starts += 1.0;
        }
    }
    rep.started_per_s = first_starts / window;
    Ok(rep)
}

/// When a task instance started and finished, if it did.
type Moments = (Option<DateTime<Utc>>, Option<DateTime<Utc>>);
/// A task instance's run, name and [`Moments`], as read back.
type TaskRow = (i64, String, Option<DateTime<Utc>>, Option<DateTime<Utc>>);

/// The stream sequence in an event run's key (`event:<schedule>:<sequence>`).
fn event_sequence(dedup_key: &str) -> Option<u64> {
    dedup_key
        .strip_prefix("event:")?
        .split_once(':')?
        .1
        .parse()
        .ok()
}

async fn sleep_until(at: DateTime<Utc>) {
    if let Ok(wait) = (at - Utc::now()).to_std() {
        tokio::time::sleep(wait).await;
    }
}

/// Publishes `rate` events a second until `until`, evenly spaced and
/// spread round-robin over the events of `dags` DAGs; returns when each
/// was published, by its stream sequence.
async fn publish_events(
    bus: datajump_nats::Bus,
    dags: u32,
    rate: u32,
    until: DateTime<Utc>,
) -> Result<HashMap<u64, DateTime<Utc>>> {
    let subjects: Vec<String> = (0..dags)
        .map(|i| {
            bus.names()
                .event(datajump_shared::dag_file::DEFAULT_PROJECT, &event_name(i))
        })
        .collect();
    let began = Instant::now();
    let mut sent: u64 = 0;
    let mut acks = FuturesUnordered::new();
    let mut published = HashMap::new();
    while Utc::now() < until {
        // Catch up on every event due by now, then wait for the next tick:
        // the timer's millisecond is coarser than 2,000 events a second.
        let due = (began.elapsed().as_secs_f64() * f64::from(rate)) as u64;
        while sent < due {
            let subject = subjects[(sent % u64::from(dags)) as usize].clone();
            let at = Utc::now();
            let ack = bus
                .js()
                .publish(subject, Vec::new().into())
                .await
                .context("cannot publish an event")?;
            acks.push(async move { (ack.await, at) });
            sent += 1;
        }
        while let Some(Some((ack, at))) = acks.next().now_or_never() {
            let ack = ack.context("an event was not stored")?;
            published.insert(ack.sequence, at);
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    while let Some((ack, at)) = acks.next().await {
        let ack = ack.context("an event was not stored")?;
        published.insert(ack.sequence, at);
    }
    Ok(published)
}

fn label(point: &Point) -> String {
    format!("load {} {}", point.offer.name(), point.shape.name())
}

/// The report rows: the first-task lag at every rate, the targets at
/// [`TARGET_RATE`], and each curve's knee.
fn rows(points: &[Point]) -> Vec<Row> {
    let mut rows = Vec::new();
    for point in points {
        let mut row = Row::new(
            &label(point),
            TaskKind::Noop,
            &format!("{}/s offered: due → first task started", point.rate),
            Unit::Ms,
            Better::Lower,
            &point.first_task_ms,
        );
        if point.rate == TARGET_RATE && point.shape == Shape::One {
            row = row.target(Target::tail(TARGET_P99_MS));
        }
        rows.push(row);
    }
    let mut curves: Vec<(Offer, Shape)> = points.iter().map(|p| (p.offer, p.shape)).collect();
    curves.dedup();
    for (offer, shape) in curves {
        let curve: Vec<&Point> = points
            .iter()
            .filter(|p| (p.offer, p.shape) == (offer, shape))
            .collect();
        let knee = knee(&curve);
        let mut row = Row::new(
            &label(curve[0]),
            TaskKind::Noop,
            "knee: highest offered rate with p99 ≤ 1 s",
            Unit::PerS,
            Better::Higher,
            &knee.map(f64::from).into_iter().collect::<Vec<_>>(),
        );
        if shape == Shape::One {
            row = row.target(Target::worst(TARGET_KNEE));
        }
        rows.push(row);
    }
    rows
}

/// The highest rate of a curve (in increasing rate order) whose p99 is
/// under a second with every run started, before the first that is not.
fn knee(curve: &[&Point]) -> Option<u32> {
    curve
        .iter()
        .take_while(|p| p.unstarted == 0.0 && p.p99().is_some_and(|p99| p99 <= KNEE_P99_MS))
        .map(|p| p.rate)
        .last()
}

/// The curve as a table: Markdown, or aligned text for the terminal.
fn curve_table(points: &[Point], markdown: bool) -> String {
    let headers = [
        "offer",
        "runs",
        "offered/s",
        "started/s",
        "run created p50",
        "p99",
        "first task p50",
        "p99",
        "max",
        "edge p50",
        "edge p99",
        "backlog",
        "system CPU",
        "NATS CPU",
        "bench CPU",
    ];
    let median = |samples: &[f64]| Summary::of(samples, Better::Lower).map(|s| s.median);
    let cells: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            let lag = Summary::of(&p.first_task_ms, Better::Lower);
            let created = Summary::of(&p.created_ms, Better::Lower);
            let edge = Summary::of(&p.edge_ms, Better::Lower);
            let time = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| Unit::Ms.format(v));
            let cores = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.2}"));
            vec![
                p.offer.name().to_owned(),
                p.shape.name().to_owned(),
                p.rate.to_string(),
                median(&p.started_per_s).map_or_else(|| "–".to_owned(), |v| format!("{v:.0}")),
                time(created.map(|s| s.median)),
                time(created.map(|s| s.tail)),
                time(lag.map(|s| s.median)),
                time(lag.map(|s| s.tail)),
                time(lag.map(|s| s.worst)),
                time(edge.map(|s| s.median)),
                time(edge.map(|s| s.tail)),
                median(&p.backlog).map_or_else(|| "–".to_owned(), |v| format!("{v:.0}")),
                cores(median(&p.system_cores)),
                cores(median(&p.nats_cores)),
                cores(median(&p.bench_cores)),
            ]
        })
        .collect();
    let mut out = String::new();
    if markdown {
        let _ = writeln!(out, "| {} |", headers.join(" | "));
        let _ = writeln!(out, "|---|---|{}", "--:|".repeat(headers.len() - 2));
        for row in &cells {
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
    } else {
        let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
        for row in &cells {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let line = |row: Vec<String>| {
            row.iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:>width$}"))
                .collect::<Vec<_>>()
                .join("  ")
        };
        let _ = writeln!(out, "{}", line(headers.map(str::to_owned).to_vec()));
        for row in cells {
            let _ = writeln!(out, "{}", line(row));
        }
    }
    let _ = write!(
        out,
        "\nfirst task: due instant (the schedule's second, or the event's publication) → the \
         first task's start; a run never started counts with the wait when the bench stopped \
         looking. run created: the due instant → the run's row. edge: a chain task's end → its successor's start. started/s: first tasks \
         started during the window. backlog: due runs whose first task had not started when \
         the window closed. CPU: cores busy over the window (1.00 = one core): the `datajump \
         up` process, the nats-server and the bench process apart.\n"
    );
    out
}

/// The curves as an SVG plot: p99 of due → first task against the offered
/// rate, both on log scales, with the 100 ms and 1 s lines.
fn plot(points: &[Point], database: &str) -> Result<String> {
    use plotters::prelude::*;

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let max_rate = points.iter().map(|p| p.rate).max().unwrap_or(1000);
        let max_ms = points
            .iter()
            .filter_map(Point::p99)
            .fold(2000.0_f64, f64::max);
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("DataJump under load ({database}): p99 of due → first task"),
                ("sans-serif", 20),
            )
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(
                (50.0_f64..f64::from(max_rate) * 1.5)
                    .log_scale()
                    .with_key_points(points.iter().map(|p| f64::from(p.rate)).collect()),
                (1.0_f64..max_ms * 2.0).log_scale(),
            )
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .x_labels(8)
            .y_labels(8)
            .bold_line_style(RGBColor(210, 210, 210))
            .light_line_style(RGBColor(240, 240, 240))
            .x_desc("offered runs per second")
            .y_desc("p99 (ms)")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(plot_error)?;
        let guide = RGBColor(90, 90, 90);
        for (limit, text) in [
            (TARGET_P99_MS, "target at 500/s: 100 ms"),
            (KNEE_P99_MS, "knee: 1 s"),
        ] {
            chart
                .draw_series(DashedLineSeries::new(
                    [(50.0, limit), (f64::from(max_rate) * 1.5, limit)],
                    6,
                    4,
                    guide.stroke_width(1),
                ))
                .map_err(plot_error)?
                .label(text)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], guide));
        }
        let mut curves: Vec<(Offer, Shape)> = points.iter().map(|p| (p.offer, p.shape)).collect();
        curves.dedup();
        for (index, (offer, shape)) in curves.into_iter().enumerate() {
            let color = CURVE_COLORS[index % CURVE_COLORS.len()];
            let line: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| (p.offer, p.shape) == (offer, shape))
                .filter_map(|p| Some((f64::from(p.rate), p.p99()?.max(1.0))))
                .collect();
            chart
                .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
                .map_err(plot_error)?
                .label(format!("{} {}", offer.name(), shape.name()))
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2))
                });
            chart
                .draw_series(
                    line.into_iter()
                        .map(|xy| Circle::new(xy, 3, color.filled())),
                )
                .map_err(plot_error)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

/// Colours told apart in print and by most colour-blind readers.
const CURVE_COLORS: [plotters::style::RGBColor; 4] = [
    plotters::style::RGBColor(0, 114, 178),
    plotters::style::RGBColor(213, 94, 0),
    plotters::style::RGBColor(0, 158, 115),
    plotters::style::RGBColor(204, 121, 167),
];

fn plot_error<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("cannot draw the load plot: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(rate: u32, lags: &[f64], unstarted: f64) -> Point {
        Point {
            offer: Offer::Cron,
            shape: Shape::One,
            rate,
            first_task_ms: lags.to_vec(),
            created_ms: lags.to_vec(),
            edge_ms: Vec::new(),
            started_per_s: vec![f64::from(rate)],
            backlog: vec![0.0],
            unstarted,
            system_cores: vec![1.0],
            nats_cores: vec![0.2],
            bench_cores: vec![0.01],
        }
    }

    #[test]
    fn the_knee_is_the_last_rate_under_a_second_before_one_that_is_not() {
        let points = [
            point(100, &[5.0, 8.0], 0.0),
            point(250, &[50.0, 900.0], 0.0),
            point(500, &[50.0, 1500.0], 0.0),
            point(1000, &[50.0, 60.0], 3.0),
        ];
        let curve: Vec<&Point> = points.iter().collect();
        assert_eq!(knee(&curve), Some(250));
        assert_eq!(knee(&curve[2..]), None);
    }

    #[test]
    fn event_runs_name_their_stream_sequence() {
        assert_eq!(event_sequence("event:12:3456"), Some(3456));
        assert_eq!(event_sequence("sched:12:3456"), None);
    }

    #[test]
    fn the_plot_is_an_svg_with_every_curve() {
        let points = [point(100, &[5.0], 0.0), point(500, &[80.0], 0.0)];
        let svg = plot(&points, "SQLite").expect("plot");
        assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
        assert!(svg.contains("cron 1 task"), "the legend names the curve");
        assert!(svg.contains("offered runs per second"));
    }

    #[test]
    fn sweep_dags_are_valid() {
        for offer in [Offer::Cron, Offer::Event] {
            for shape in [Shape::One, Shape::Chain10] {
                datajump_shared::dag_file::DagFile::parse(&dag(offer, shape, 7))
                    .unwrap_or_else(|e| panic!("{offer:?} {shape:?}: {e}"));
            }
        }
    }
}
