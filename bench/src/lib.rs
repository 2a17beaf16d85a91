//! `datajump-bench`: measures dispatch latency, throughput, cron accuracy
//! and scale of a whole DataJump system, and compares the figures with the
//! targets and competitor anchors of issue 6.
//!
//! The decision that shapes it: every repetition starts its own system from
//! nothing (a child nats-server on a free port, a fresh SQLite file or
//! PostgreSQL database, migrations, ticker, resolver and runners) and every
//! figure is read back from the timestamps the roles themselves write into
//! the database (`execution.start_time`/`end_time`, `dag_run.created_at`/
//! `finished_at`/`logical_time`), never from the bench's clock around a wait
//! loop. Repetitions are independent, nothing carries over from one workload
//! to the next, and how often the bench polls cannot bias a figure.
//!
//! It is a crate and a binary of its own, not a subcommand of `datajump`, so
//! the product binary carries none of it. It uses the product as parts: the
//! role crates run inside this process (ticker, resolver, and runners unless
//! `--processes`), and runner and ticker processes run the real `datajump`
//! binary (`--datajump`, by default the one next to this executable).
//!
//! The roles log every task at `info`; the bench re-runs itself with
//! `DATAJUMP_LOG=warn` unless `DATAJUMP_LOG` is set, so tens of thousands of
//! log lines neither flood the output nor cost time during the measurement.

mod procfs;
mod report;
mod stats;
mod system;
mod workloads;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context as _, Result};
use clap::{Parser, ValueEnum};
use datajump::commands::shutdown_on_signal;

use report::{Environment, Row};
use system::{Backend, DbKind, RunnerSetup};
use workloads::load::{LoadPlan, Offer, Shape};
use workloads::soak::{ISSUE_SOAK_RETENTION_SECS, ISSUE_SOAK_TASKS, SoakPlan};
use workloads::{Appendix, Bench, TaskKind, Workload, schedules};

/// Which task types to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TaskChoice {
    /// In-process `NOOP` tasks: the engine alone.
    Noop,
    /// `SHELL` tasks running `true`: one bash process per task.
    Shell,
    /// Both, one after the other.
    Both,
}

/// The issue's size of `wide10k`.
const ISSUE_WIDE_TASKS: u64 = 10_000;
/// Default size of `scale`'s DAG (see `--scale-tasks`): 8 s of work for 8
/// runners of 8 slots, so that the fixed trigger-and-wait cost (a few
/// hundred ms) is under 5 % of the run at the highest count.
const DEFAULT_SCALE_TASKS: u64 = 2_560;

/// Measure latency, throughput, cron accuracy and scale of DataJump on fresh
/// systems.
///
/// Every repetition starts its own system (a nats-server on a free port, an
/// empty database, migrations, the ticker, the resolver and the runners), and
/// every figure is read from the timestamps the roles write into the
/// database. The report gives medians, p99s and worst cases over the
/// repetitions, judged against issue 6's targets and compared with Airflow's
/// and Hatchet's figures; `--write` records it in a Markdown file.
///
/// Role processes (`scale`, `schedules1m`, `load`, `burst`, `soak`, `--processes`)
/// run the `datajump` binary next to this one (or `--datajump`): build both with
/// `cargo build --release -p datajump -p datajump-bench`.
#[derive(Parser)]
#[command(
    name = "datajump-bench",
    version,
    about,
    long_about,
    after_help = "Examples:
  datajump-bench --db sqlite --write docs/BENCHMARKS.md
  datajump-bench chain10 fanout50 --repeat 5 --task noop
  datajump-bench schedules1m --db postgres --write docs/BENCHMARKS.md
  datajump-bench load --load-offers cron --load-shapes one --repeat 2 --write docs/BENCHMARKS.md
  datajump-bench soak --soak-tasks 90000 --soak-retention 60   # a 3-minute rehearsal of the 33-minute soak"
)]
pub struct BenchArgs {
    /// Workloads to run, in order (default: chain10 fanout50 wide200
    /// chain1000 wide10k scale cron ui; schedules1m, load, burst and soak
    /// run only when named).
    #[arg(value_enum)]
    workloads: Vec<Workload>,
    /// Database of the systems the bench starts.
    #[arg(long, value_enum, default_value_t = DbKind::Sqlite)]
    db: DbKind,
    /// PostgreSQL server for `--db postgres`: a database of it the user may
    /// create databases from. Each repetition creates `dj_bench_<uuid>`
    /// there and drops it afterwards, connecting with this URL's query
    /// string. The default turns TLS off: the server is on this machine,
    /// where encrypting every round trip buys nothing and cost about a
    /// quarter of the edge latency (docs/BENCHMARKS.md); drop
    /// `sslmode=disable` to measure with it.
    #[arg(
        long,
        default_value = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
    )]
    postgres_url: String,
    /// Runners of every workload but `scale` (which uses 1, 2, 4 and 8 of 8 slots).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    runners: u32,
    /// Slots (tasks at once) of each runner.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1024))]
    slots: u32,
    /// Run the runners of every workload as `datajump runner` child
    /// processes (`scale` always does) instead of inside the bench process.
    #[arg(long)]
    processes: bool,
    /// The `datajump` binary that role processes run (`scale`,
    /// `schedules1m`, `load`, `burst`, `soak`, `--processes`); by default the `datajump` next to this
    /// executable, as `cargo build -p datajump -p datajump-bench` leaves it.
    #[arg(long, env = "DATAJUMP_BENCH_DATAJUMP", value_name = "PATH")]
    datajump: Option<PathBuf>,
    /// Repetitions of every measurement, each on a fresh system.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(2..))]
    repeat: u32,
    /// Task types to measure (`cron` always uses NOOP, as the issue specifies).
    #[arg(long, value_enum, default_value_t = TaskChoice::Both)]
    task: TaskChoice,
    /// Length of the `cron` measuring window, in seconds.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(5..=3600))]
    cron_seconds: u64,
    /// Schedules (each on its own one-task DAG) of the `cron` workload.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    cron_schedules: u64,
    /// Tasks of the `wide10k` DAG.
    #[arg(long, default_value_t = ISSUE_WIDE_TASKS, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    wide_tasks: u64,
    /// Tasks (`sleep 0.2`) of the `scale` DAG: at the default, one runner
    /// of 8 slots takes about 64 s and eight about 8 s.
    #[arg(long, default_value_t = DEFAULT_SCALE_TASKS, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    scale_tasks: u64,
    /// Schedules of `schedules1m` (the issue's 1,000,000; fewer for a quick run).
    #[arg(long, default_value_t = schedules::ISSUE_SCHEDULES as u64, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    schedules1m_count: u64,
    /// Length of the `schedules1m` measuring window, in seconds. Halfway
    /// through it the bench announces a schedule change, so the window also
    /// measures firing during one full reload.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(5..=3600))]
    schedules1m_seconds: u64,
    /// Offered rates (runs a second) `load` sweeps, in increasing order.
    #[arg(long, value_delimiter = ',', default_values_t = [100, 250, 500, 1000, 2000], value_parser = clap::value_parser!(u32).range(1..=100_000))]
    load_rates: Vec<u32>,
    /// Length of each `load` rate's window, in seconds.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(5..=3600))]
    load_seconds: u64,
    /// Who offers `load`'s runs: the ticker (`cron`: every run of a second
    /// due at once) or events the bench publishes (`event`: evenly spread).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Offer::Cron, Offer::Event])]
    load_offers: Vec<Offer>,
    /// What `load`'s runs are: one NOOP task, or ten in a line.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Shape::One, Shape::Chain10])]
    load_shapes: Vec<Shape>,
    /// One-task DAGs of `burst`, all due in the same second.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    burst_runs: u64,
    /// Runs `soak` offers in all (the issue's million by default). One
    /// repetition, whatever `--repeat` says: it is long.
    #[arg(long, default_value_t = ISSUE_SOAK_TASKS, value_parser = clap::value_parser!(u64).range(1_000..=100_000_000))]
    soak_tasks: u64,
    /// Runs `soak` offers each second, each a one-task DAG firing every
    /// second (the issue's 500 by default).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    soak_rate: u32,
    /// Seconds `soak`'s `datajump up` keeps finished runs (`--retention`;
    /// the issue's 600 by default; shorter for a rehearsal of the cleanup).
    #[arg(long, default_value_t = ISSUE_SOAK_RETENTION_SECS, value_parser = clap::value_parser!(u32).range(10..))]
    soak_retention: u32,
    /// Also write the report into this Markdown file (its section for this
    /// database is replaced — `schedules1m` has a section of its own, so
    /// running it alone keeps the other workloads' figures; the rest of the
    /// file is kept).
    #[arg(long, value_name = "PATH")]
    write: Option<PathBuf>,
}

/// Runs the bench `args` describe; its exit code fails when a workload
/// failed.
pub async fn run(args: BenchArgs) -> Result<ExitCode> {
    let workloads = if args.workloads.is_empty() {
        Workload::ALL.to_vec()
    } else {
        args.workloads.clone()
    };
    let datajump = match &args.datajump {
        Some(path) => path.clone(),
        None => system::datajump_next_to_bench()?,
    };
    if args.processes
        || workloads.iter().any(|w| {
            matches!(
                w,
                Workload::Scale
                    | Workload::Schedules1m
                    | Workload::Load
                    | Workload::Burst
                    | Workload::Soak
            )
        })
    {
        system::check_datajump(&datajump)?;
    }
    if std::env::var_os("DATAJUMP_LOG").is_none() {
        return rerun_quietly().await;
    }
    let started = Instant::now();
    let date = chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string();
    let backend = Backend::new(args.db, &args.postgres_url).await?;
    let runners = RunnerSetup {
        count: args.runners as usize,
        slots: args.slots as usize,
        processes: args.processes,
    };
    let bench = Bench {
        backend: &backend,
        datajump: &datajump,
        repeat: args.repeat,
        runners,
        cron_seconds: args.cron_seconds,
        cron_schedules: usize::try_from(args.cron_schedules).unwrap_or(1000),
        wide_tasks: usize::try_from(args.wide_tasks).unwrap_or(10_000),
        scale_tasks: usize::try_from(args.scale_tasks).unwrap_or(10_000),
        schedules1m_count: usize::try_from(args.schedules1m_count)
            .unwrap_or(schedules::ISSUE_SCHEDULES),
        schedules1m_seconds: args.schedules1m_seconds,
        load: LoadPlan {
            rates: {
                let mut rates = args.load_rates.clone();
                rates.sort_unstable();
                rates.dedup();
                rates
            },
            seconds: args.load_seconds,
            offers: args.load_offers.clone(),
            shapes: args.load_shapes.clone(),
        },
        burst_runs: usize::try_from(args.burst_runs).unwrap_or(10_000),
        soak: SoakPlan {
            tasks: args.soak_tasks,
            rate: args.soak_rate,
            retention_secs: args.soak_retention,
        },
    };
    let kinds: &[TaskKind] = match args.task {
        TaskChoice::Noop => &[TaskKind::Noop],
        TaskChoice::Shell => &[TaskKind::Shell],
        TaskChoice::Both => &[TaskKind::Noop, TaskKind::Shell],
    };

    let shutdown = shutdown_on_signal();
    let measured = tokio::select! {
        measured = measure_all(&bench, &workloads, kinds) => Some(measured),
        () = shutdown.cancelled() => None,
    };
    let Some((rows, mut notes, appendices)) = measured else {
        // The abandoned system's children were killed and its folder
        // removed as it was dropped; a PostgreSQL database needs a word.
        backend.drop_leftovers().await;
        eprintln!("bench interrupted; nothing written");
        return Ok(ExitCode::FAILURE);
    };
    if args.wide_tasks != ISSUE_WIDE_TASKS && workloads.contains(&Workload::Wide10k) {
        notes.push(format!(
            "wide10k ran {}-task DAGs, not the issue's 10,000; `--wide-tasks 10000` \
             restores the issue's size.",
            args.wide_tasks
        ));
    }
    if workloads.contains(&Workload::Cron) && (args.cron_seconds, args.cron_schedules) != (60, 1000)
    {
        notes.push(format!(
            "cron ran {} schedules for {} s (the issue asks for 1,000 for 60 s).",
            args.cron_schedules, args.cron_seconds
        ));
    }

    if workloads.contains(&Workload::Schedules1m)
        && args.schedules1m_count != schedules::ISSUE_SCHEDULES as u64
    {
        notes.push(format!(
            "schedules1m ran {} schedules (the issue asks for 1,000,000).",
            args.schedules1m_count
        ));
    }

    let elapsed = started.elapsed();
    println!("\n{}", report::text_table(&rows));
    println!(
        "* p99 on the bad side (p1 for rates); worst = max for times, min for rates; † = the bench's own criterion."
    );
    for (workload, appendix) in &appendices {
        println!("\n{}:\n{}", workload.name(), appendix.text);
        notes.extend(appendix.notes.iter().cloned());
    }
    for note in &notes {
        println!("note: {note}");
    }
    let duration = format!("{:.1} min", elapsed.as_secs_f64() / 60.0);
    println!("bench took {duration}");

    if let Some(path) = &args.write {
        let database = backend.version().await;
        let env = Environment {
            title: database.clone(),
            date,
            commit: git_commit().await,
            machine: machine(),
            database,
            nats: system::nats_server_version().await,
            setup: format!(
                "{} runner{} × {} slots ({}), `scale` 1/2/4 runner processes; {} repetitions; \
                 cron {} schedules × {} s; `DATAJUMP_LOG={}`",
                runners.count,
                if runners.count == 1 { "" } else { "s" },
                runners.slots,
                if runners.processes {
                    "child processes"
                } else {
                    "in the bench process, each with its own NATS connection and pool"
                },
                args.repeat,
                args.cron_schedules,
                args.cron_seconds,
                std::env::var("DATAJUMP_LOG").unwrap_or_default()
            ),
            duration,
            notes: notes.clone(),
        };
        // These have their own sections, so a run of one alone leaves the
        // other workloads' figures in place (and the other way round).
        let mut rows = rows;
        let mut notes = env.notes.clone();
        for own in [
            Workload::Schedules1m,
            Workload::Ui,
            Workload::Scale,
            Workload::Load,
            Workload::Burst,
            Workload::Soak,
            Workload::Map10k,
        ] {
            let mine = |text: &str| text.starts_with(own.name());
            let (own_rows, rest): (Vec<Row>, Vec<Row>) =
                rows.into_iter().partition(|r| mine(r.workload()));
            rows = rest;
            let (own_notes, rest): (Vec<String>, Vec<String>) =
                notes.into_iter().partition(|n| mine(n));
            notes = rest;
            if !workloads.contains(&own) {
                continue;
            }
            let setup = match own {
                Workload::Schedules1m => format!(
                    "{} schedules, a {} s window per repetition with a schedule-change \
                     notice (a full reload) halfway; the ticker alone as a \
                     `datajump ticker` process (no resolver, no runners: the fire is the \
                     measured event); {} repetitions",
                    args.schedules1m_count, args.schedules1m_seconds, args.repeat
                ),
                Workload::Soak => format!(
                    "one `datajump up` process (runner of {} slots, `--retention {}`) offered \
                     {} one-task NOOP runs a second by the ticker (one DAG per run a second) \
                     until {} were due, sampled every 10 s; one repetition",
                    runners.slots, args.soak_retention, args.soak_rate, args.soak_tasks
                ),
                Workload::Burst => format!(
                    "{} one-task NOOP DAGs on one cron, `0 * * * * ?`, and one whose task has \
                     priority 10 on `1 * * * * ?`, run by one `datajump up` process (runner of {} \
                     slots); {} repetitions",
                    args.burst_runs, runners.slots, args.repeat
                ),
                Workload::Load => format!(
                    "one `datajump up` process (runner of {} slots) on a fresh system per rate \
                     and repetition, offered {} runs a second for {} s by {}, of {}; {} \
                     repetitions",
                    runners.slots,
                    bench
                        .load
                        .rates
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                    args.load_seconds,
                    bench
                        .load
                        .offers
                        .iter()
                        .map(|o| o.describe())
                        .collect::<Vec<_>>()
                        .join(" and "),
                    bench
                        .load
                        .shapes
                        .iter()
                        .map(|s| s.describe())
                        .collect::<Vec<_>>()
                        .join(" and "),
                    args.repeat
                ),
                Workload::Map10k => format!(
                    "a SHELL task writes a JSON array of 10,000 table names to \
                     `$DJ_OUTPUT_JSON/tables.json`, and a NOOP task mapped over it \
                     (`max_parallel` 1,000) runs each, by {} runner{} × {} slots with a \
                     resolver, on a fresh system per repetition; {} repetitions",
                    runners.count,
                    if runners.count == 1 { "" } else { "s" },
                    runners.slots,
                    args.repeat
                ),
                Workload::Scale => format!(
                    "{} independent `sleep 0.2` SHELL tasks run by 1, 2, 4 and 8 `datajump \
                     runner` processes of {} slots each, every count on a fresh system; \
                     {} repetitions",
                    args.scale_tasks,
                    workloads::SCALE_SLOTS,
                    args.repeat
                ),
                _ => format!(
                    "a 50-task NOOP DAG run 1,000 times by {} runner{} × {} slots, then the \
                     API in the bench process, read over loopback HTTP asking for gzip as a \
                     browser does; {} repetitions",
                    runners.count,
                    if runners.count == 1 { "" } else { "s" },
                    runners.slots,
                    args.repeat
                ),
            };
            let env = Environment {
                title: format!("{}: {}", env.title, own.name()),
                setup,
                notes: own_notes,
                ..env.clone()
            };
            let mut section = report::markdown_section(&env, &own_rows);
            let appendix = appendices.iter().find(|(w, _)| *w == own).map(|(_, a)| a);
            if let Some(appendix) = appendix {
                section.push('\n');
                section.push_str(&appendix.markdown);
            }
            let key = format!("{}-{}", backend.kind.key(), own.name());
            report::write_section(path, &key, &section)?;
            if let Some((name, svg)) = appendix.and_then(|a| a.svg.as_ref()) {
                let file = path.with_file_name(name);
                std::fs::write(&file, svg)
                    .with_context(|| format!("cannot write {}", file.display()))?;
                println!("wrote {}", file.display());
            }
        }
        if workloads.iter().any(|w| {
            !matches!(
                w,
                Workload::Schedules1m
                    | Workload::Ui
                    | Workload::Scale
                    | Workload::Load
                    | Workload::Burst
                    | Workload::Soak
                    | Workload::Map10k
            )
        }) {
            let env = Environment {
                notes,
                ..env.clone()
            };
            let section = report::markdown_section(&env, &rows);
            report::write_section(path, backend.kind.key(), &section)?;
        }
        println!("wrote {} ({})", path.display(), backend.kind.label());
    }
    Ok(if notes.iter().any(|n| n.contains("failed")) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs every (workload, task type); a failure becomes a note and the rest
/// still runs, so one broken workload does not lose an hour of figures.
async fn measure_all(
    bench: &Bench<'_>,
    workloads: &[Workload],
    kinds: &[TaskKind],
) -> (Vec<Row>, Vec<String>, Vec<(Workload, Appendix)>) {
    let mut rows: Vec<Row> = Vec::new();
    let mut notes = Vec::new();
    let mut appendices = Vec::new();
    // The soak is long enough to run once.
    let repetitions = if workloads.iter().all(|w| *w == Workload::Soak) {
        1
    } else {
        bench.repeat
    };
    eprintln!(
        "datajump-bench on {}: {} × {repetitions} repetition{}",
        bench.backend.kind.label(),
        workloads
            .iter()
            .map(|w| w.name())
            .collect::<Vec<_>>()
            .join(", "),
        if repetitions == 1 { "" } else { "s" }
    );
    for workload in workloads {
        let kinds: &[TaskKind] = match workload {
            Workload::Cron
            | Workload::Schedules1m
            | Workload::Ui
            | Workload::Load
            | Workload::Burst
            | Workload::Map10k
            | Workload::Soak => &[TaskKind::Noop],
            Workload::Scale => &[TaskKind::Sleep],
            _ => kinds,
        };
        for kind in kinds {
            let began = Instant::now();
            eprintln!("{} {} …", workload.name(), kind.label());
            match workloads::run(bench, *workload, *kind).await {
                Ok(measured) => {
                    eprintln!(
                        "{} {} done in {:.1} s",
                        workload.name(),
                        kind.label(),
                        began.elapsed().as_secs_f64()
                    );
                    rows.extend(measured.rows);
                    appendices.extend(measured.appendix.map(|a| (*workload, a)));
                }
                Err(e) => {
                    let note = format!("{} {} failed: {e:#}", workload.name(), kind.label());
                    eprintln!("error: {note}");
                    notes.push(note);
                }
            }
        }
    }
    (rows, notes, appendices)
}

/// Runs this same bench again with `DATAJUMP_LOG=warn`: the subscriber of
/// this process was set up before any command ran and cannot be changed.
async fn rerun_quietly() -> Result<ExitCode> {
    let exe = std::env::current_exe().context("cannot find the datajump-bench executable")?;
    let mut child = tokio::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env("DATAJUMP_LOG", "warn")
        .spawn()
        .context("cannot run the bench")?;
    let shutdown = shutdown_on_signal();
    let status = tokio::select! {
        status = child.wait() => status?,
        () = shutdown.cancelled() => {
            // Pass the signal on, so the bench can stop its systems.
            if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGTERM,
                );
            }
            child.wait().await?
        }
    };
    Ok(match status.code().and_then(|c| u8::try_from(c).ok()) {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(code),
        None => ExitCode::FAILURE,
    })
}

/// `git rev-parse --short HEAD`, marked when the working tree differs.
async fn git_commit() -> String {
    let output = |args: &'static [&'static str]| async move {
        tokio::process::Command::new("git")
            .args(args)
            .output()
            .await
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let Some(commit) = output(&["rev-parse", "--short", "HEAD"]).await else {
        return "unknown (not a git checkout)".to_owned();
    };
    match output(&["status", "--porcelain", "--untracked-files=no"]).await {
        Some(changes) if !changes.is_empty() => {
            format!("{commit} (with uncommitted changes in the working tree)")
        }
        _ => commit,
    }
}

/// Cores, memory and CPU model of this machine.
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or_else(
            || "memory unknown".to_owned(),
            |kb| format!("{:.1} GiB", kb / 1024.0 / 1024.0),
        );
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|v| v.trim_start_matches([' ', '\t', ':']).trim().to_owned())
        .unwrap_or_else(|| "CPU model unknown".to_owned());
    format!(
        "{cores} core{} ({model}), {memory}, {}",
        if cores == 1 { "" } else { "s" },
        std::env::consts::ARCH
    )
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        BenchArgs::command().debug_assert();
        let help = BenchArgs::command().render_long_help().to_string();
        assert!(help.contains("datajump-bench"), "{help}");
        assert!(!help.contains("datajump bench"), "{help}");
    }
}
