//! `soak`: a long, steady load on one `datajump up` process with a short
//! retention, to show that nothing grows. `--soak-rate` one-task NOOP DAGs
//! fire every second (the ticker offers the load, as in `load`) until
//! `--soak-tasks` runs were due (the issue's 1,000,000 by default: 33 minutes
//! at 500 a second); `up` keeps finished runs ten minutes (`--retention`;
//! `--soak-retention` for a rehearsal), so from minute ten on its cleanup
//! removes every minute what the load adds.
//!
//! Every [`SAMPLE_EVERY`] it samples the resident memory of `datajump up`
//! (every role is in it) and of the nats-server, the database's size and its
//! run and instance rows, and the lag of the runs due in the window before
//! last (due second → first task started; one not started yet counts with
//! its wait so far). The report compares the last quarter of the samples
//! with the second (the first holds the warm-up and the database filling
//! towards its retention), and, once the database is full, dispatch of the
//! runs whose wait overlapped a cleanup (read from `up`'s log) with that of
//! the runs between cleanups. One repetition: it is long.

use std::time::Instant;

use anyhow::{Context as _, Result};
use chrono::{DateTime, Utc};
use datajump_shared::entities::{dag_run, task_instance};
use sea_orm::{
    ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter, QuerySelect, Statement,
};

use super::{Appendix, Bench, Measured, TaskKind, apply, chain, dag_yaml, ms};
use crate::procfs;
use crate::report::{Row, Target, Unit};
use crate::stats::{Better, Summary};
use crate::system::{DbKind, System};

/// The issue's soak: a million tasks.
pub const ISSUE_SOAK_TASKS: u64 = 1_000_000;
/// How often the soak samples.
const SAMPLE_EVERY: i64 = 10;
/// What `up` keeps finished runs for unless `--soak-retention` says:
/// the issue's ten minutes.
pub const ISSUE_SOAK_RETENTION_SECS: u32 = 600;
/// Seconds between the system's start and the first due second.
const SETTLE_SECS: i64 = 6;
/// The issue's bound on memory growth: the last quarter's median within
/// 10 % of the second quarter's. The bench holds dispatch and the
/// database to the same.
const FLAT: f64 = 1.10;

/// What the soak offers.
#[derive(Clone, Copy, Debug)]
pub struct SoakPlan {
    /// Runs due in all.
    pub tasks: u64,
    /// Runs due each second.
    pub rate: u32,
    /// What `up` keeps finished runs for, in seconds (`--retention`).
    pub retention_secs: u32,
}

/// One run's wait: its due second, and how long until its first task
/// started.
#[derive(Clone, Copy, Debug)]
struct Lag {
    due: DateTime<Utc>,
    ms: f64,
}

/// When one cleanup ran.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Cleanup {
    start: DateTime<Utc>,
    end: DateTime<Utc>,
}

impl Cleanup {
    /// Whether `lag`'s wait overlapped it.
    fn overlaps(&self, lag: &Lag) -> bool {
        let started = lag.due + chrono::Duration::milliseconds(lag.ms as i64);
        lag.due <= self.end && started >= self.start
    }
}

/// The cleanups `up` logged: each ends with a line `<time> INFO history
/// past its retention removed … took_ms=<ms>`.
fn cleanups(log: &str) -> Vec<Cleanup> {
    log.lines()
        .filter(|line| line.contains("history past its retention removed"))
        .filter_map(|line| {
            let end = DateTime::parse_from_rfc3339(line.split_whitespace().next()?).ok()?;
            let took: i64 = line.rsplit_once("took_ms=")?.1.trim().parse().ok()?;
            let end = end.with_timezone(&Utc);
            Some(Cleanup {
                start: end - chrono::Duration::milliseconds(took),
                end,
            })
        })
        .collect()
}

/// One sample.
struct Sample {
    /// Seconds since the first due second.
    elapsed_s: f64,
    up_rss_mib: f64,
    nats_rss_mib: f64,
    db_mib: f64,
    run_rows: u64,
    instance_rows: u64,
    /// Lags of the runs due in the window before last.
    lags: Vec<Lag>,
}

impl Sample {
    fn lag_ms(&self) -> Vec<f64> {
        self.lags.iter().map(|lag| lag.ms).collect()
    }

    fn p99(&self) -> f64 {
        Summary::of(&self.lag_ms(), Better::Lower).map_or(f64::NAN, |s| s.tail)
    }
}

/// Runs `soak`: its rows, and a table of its samples a minute apart.
pub(super) async fn run(bench: &Bench<'_>) -> Result<Measured> {
    let plan = bench.soak;
    let began = Instant::now();
    let mut system = System::start(bench.backend, bench.datajump).await?;
    let result = measure(bench, &mut system, plan).await;
    let log = std::fs::read_to_string(system.up_log()).unwrap_or_default();
    system.stop().await;
    let samples = result.context("soak")?;
    let cleanups = cleanups(&log);
    eprintln!(
        "  soak [{}]: {} samples in {:.1} min",
        bench.backend.kind.key(),
        samples.len(),
        began.elapsed().as_secs_f64() / 60.0
    );
    let name = format!("soak (n={}, {}/s)", plan.tasks, plan.rate);
    let row = |metric: &str, unit: Unit, samples: &[f64]| {
        Row::new(&name, TaskKind::Noop, metric, unit, Better::Lower, samples)
    };
    let second = quarter(&samples, 1);
    let last = quarter(&samples, 3);
    let ratio = |value: fn(&Sample) -> f64| median(last, value) / median(second, value);
    let retention = f64::from(plan.retention_secs);
    let filling: Vec<f64> = samples
        .iter()
        .filter(|s| s.elapsed_s >= 60.0_f64.min(retention / 2.0) && s.elapsed_s < retention)
        .flat_map(Sample::lag_ms)
        .collect();
    let full: Vec<Lag> = samples
        .iter()
        .filter(|s| s.elapsed_s >= retention * 1.1)
        .flat_map(|s| s.lags.iter().copied())
        .collect();
    let (while_cleaning, between_cleanups): (Vec<Lag>, Vec<Lag>) = full
        .iter()
        .partition(|lag| cleanups.iter().any(|cleanup| cleanup.overlaps(lag)));
    let waits = |lags: &[Lag]| lags.iter().map(|lag| lag.ms).collect::<Vec<f64>>();
    let p99 = |lags: &[f64]| Summary::of(lags, Better::Lower).map_or(f64::NAN, |s| s.tail);
    let all_lags: Vec<f64> = samples.iter().flat_map(Sample::lag_ms).collect();
    let took: Vec<f64> = cleanups
        .iter()
        .map(|cleanup| (cleanup.end - cleanup.start).num_milliseconds() as f64 / 1000.0)
        .collect();
    let rows = vec![
        row(
            "`datajump up` RSS, last quarter's median ÷ second quarter's",
            Unit::Ratio,
            &[ratio(|s| s.up_rss_mib)],
        )
        .target(Target::worst(FLAT)),
        row(
            "nats-server RSS, last quarter's median ÷ second quarter's",
            Unit::Ratio,
            &[ratio(|s| s.nats_rss_mib)],
        ),
        row(
            "first task p99 per window, last quarter's median ÷ second quarter's",
            Unit::Ratio,
            &[ratio(Sample::p99)],
        )
        .target(Target::worst(FLAT).bench_criterion()),
        row(
            "database size, last quarter's median ÷ second quarter's",
            Unit::Ratio,
            &[ratio(|s| s.db_mib)],
        )
        .target(Target::worst(FLAT).bench_criterion()),
        row(
            "first task p99, waits overlapping a cleanup ÷ between cleanups",
            Unit::Ratio,
            &[p99(&waits(&while_cleaning)) / p99(&waits(&between_cleanups))],
        )
        .target(Target::worst(FLAT)),
        row(
            "first task p99, the database full ÷ still filling",
            Unit::Ratio,
            &[p99(&waits(&full)) / p99(&filling)],
        ),
        row("one cleanup, start to end", Unit::S, &took),
        row("due → first task started", Unit::Ms, &all_lags),
        row(
            "`datajump up` RSS, last quarter",
            Unit::MiB,
            &last.iter().map(|s| s.up_rss_mib).collect::<Vec<_>>(),
        ),
        row(
            "database size, last quarter",
            Unit::MiB,
            &last.iter().map(|s| s.db_mib).collect::<Vec<_>>(),
        ),
    ];
    Ok(Measured {
        rows,
        appendix: Some(Appendix {
            text: sample_table(&samples, false),
            markdown: sample_table(&samples, true),
            svg: None,
            notes: vec![format!(
                "{} cleanups; of the {} runs due once the database was full, {} waited while one ran",
                cleanups.len(),
                full.len(),
                while_cleaning.len()
            )],
        }),
    })
}

/// The `index`th quarter (0-based) of the samples, by time.
fn quarter(samples: &[Sample], index: usize) -> &[Sample] {
    let len = samples.len();
    &samples[len * index / 4..len * (index + 1) / 4]
}

fn median(samples: &[Sample], value: fn(&Sample) -> f64) -> f64 {
    let values: Vec<f64> = samples.iter().map(value).filter(|v| !v.is_nan()).collect();
    Summary::of(&values, Better::Lower).map_or(f64::NAN, |s| s.median)
}

fn dag(index: u32) -> String {
    let header = "max_active_runs: 1000\noverlap: parallel\nschedules:\n  - cron: \"* * * * * ?\"\n    timezone: UTC\n    catchup: none\n";
    dag_yaml(
        &format!("soak_{index:05}"),
        TaskKind::Noop,
        &chain::tasks(1),
        header,
    )
}

async fn measure(
    bench: &Bench<'_>,
    system: &mut System<'_>,
    plan: SoakPlan,
) -> Result<Vec<Sample>> {
    for index in 0..plan.rate {
        apply(system, &dag(index)).await?;
    }
    let retention = plan.retention_secs.to_string();
    let up = system
        .start_up_process_with(
            bench.runners.slots,
            &["--retention", &retention],
            "warn,datajump_ticker::cleanup=info",
        )
        .await?;
    let nats = system.nats_server_pid();
    let first_due =
        DateTime::from_timestamp(Utc::now().timestamp() + SETTLE_SECS, 0).context("bad start")?;
    let seconds = i64::try_from(plan.tasks.div_ceil(u64::from(plan.rate))).unwrap_or(i64::MAX);
    eprintln!(
        "  soak: {} runs due from {first_due}, {} a second for {:.1} min; `up` keeps runs {} s",
        plan.tasks,
        plan.rate,
        seconds as f64 / 60.0,
        plan.retention_secs
    );
    let mut samples = Vec::new();
    // Sample k looks at the runs due in [first_due + (k-2)·10 s, +10 s):
    // each has had at least ten seconds to start.
    let mut k = 2;
    loop {
        let window_start = first_due + chrono::Duration::seconds((k - 2) * SAMPLE_EVERY);
        if window_start >= first_due + chrono::Duration::seconds(seconds) {
            break;
        }
        let at = first_due + chrono::Duration::seconds(k * SAMPLE_EVERY);
        if let Ok(wait) = (at - Utc::now()).to_std() {
            tokio::time::sleep(wait).await;
        }
        system.check_alive()?;
        let window = window_start..window_start + chrono::Duration::seconds(SAMPLE_EVERY);
        let sample = Sample {
            elapsed_s: (Utc::now() - first_due).num_milliseconds() as f64 / 1000.0,
            up_rss_mib: procfs::memory_mib(up, "VmRSS").unwrap_or(f64::NAN),
            nats_rss_mib: nats
                .and_then(|pid| procfs::memory_mib(pid, "VmRSS"))
                .unwrap_or(f64::NAN),
            db_mib: database_mib(system, bench.backend.kind).await?,
            run_rows: dag_run::Entity::find().count(&system.db).await?,
            instance_rows: task_instance::Entity::find().count(&system.db).await?,
            lags: lags(system, window, plan.rate).await?,
        };
        if k % 6 == 0 {
            eprintln!(
                "  soak: {:.0} s, p99 {:.0} ms, up {:.0} MiB, nats {:.0} MiB, db {:.1} MiB, {} runs kept",
                sample.elapsed_s,
                sample.p99(),
                sample.up_rss_mib,
                sample.nats_rss_mib,
                sample.db_mib,
                sample.run_rows
            );
        }
        samples.push(sample);
        k += 1;
    }
    Ok(samples)
}

/// Due second → first task started of each run due in `window`; a due run
/// without a start (or without a row) counts with its wait until now.
async fn lags(
    system: &System<'_>,
    window: std::ops::Range<DateTime<Utc>>,
    rate: u32,
) -> Result<Vec<Lag>> {
    let now = Utc::now();
    let runs: Vec<(i64, DateTime<Utc>)> = dag_run::Entity::find()
        .select_only()
        .column(dag_run::Column::Id)
        .column(dag_run::Column::LogicalTime)
        .filter(dag_run::Column::LogicalTime.gte(window.start))
        .filter(dag_run::Column::LogicalTime.lt(window.end))
        .into_tuple()
        .all(&system.db)
        .await?;
    let starts: std::collections::HashMap<i64, Option<DateTime<Utc>>> =
        task_instance::Entity::find()
            .select_only()
            .column(task_instance::Column::DagRunId)
            .column(task_instance::Column::StartedAt)
            .filter(task_instance::Column::DagRunId.is_in(runs.iter().map(|(id, _)| *id)))
            .into_tuple::<(i64, Option<DateTime<Utc>>)>()
            .all(&system.db)
            .await?
            .into_iter()
            .collect();
    let mut lags: Vec<Lag> = runs
        .iter()
        .map(|(id, due)| Lag {
            due: *due,
            ms: ms(starts.get(id).copied().flatten().unwrap_or(now) - *due),
        })
        .collect();
    // Fires of the window that made no run yet waited since its end at
    // least.
    let due = usize::try_from(i64::from(rate) * SAMPLE_EVERY).unwrap_or(usize::MAX);
    let missing = due.saturating_sub(lags.len());
    let unmade = Lag {
        due: window.end,
        ms: ms(now - window.end),
    };
    lags.extend(std::iter::repeat_n(unmade, missing));
    Ok(lags)
}

/// The database's size in MiB: SQLite's pages (free ones included: the
/// file does not shrink, it reuses them), PostgreSQL's
/// `pg_database_size`.
async fn database_mib(system: &System<'_>, kind: DbKind) -> Result<f64> {
    let sql = match kind {
        DbKind::Sqlite => {
            "SELECT (SELECT page_count FROM pragma_page_count()) * (SELECT page_size FROM pragma_page_size()) AS bytes"
        }
        DbKind::Postgres => "SELECT pg_database_size(current_database()) AS bytes",
    };
    let row = system
        .db
        .query_one_raw(Statement::from_string(
            system.db.get_database_backend(),
            sql,
        ))
        .await?
        .context("the database's size")?;
    let bytes: i64 = row.try_get("", "bytes")?;
    Ok(bytes as f64 / (1024.0 * 1024.0))
}

/// The samples a minute apart, as a table.
fn sample_table(samples: &[Sample], markdown: bool) -> String {
    let per_minute = usize::try_from(60 / SAMPLE_EVERY).unwrap_or(1);
    let header = [
        "minute",
        "first task p50",
        "p99",
        "`up` RSS",
        "nats-server RSS",
        "database",
        "runs kept",
        "instances kept",
    ];
    let mut out = String::new();
    if markdown {
        out.push_str(&format!("| {} |\n", header.join(" | ")));
        out.push_str("|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    } else {
        out.push_str(&header.join("\t"));
        out.push('\n');
    }
    for sample in samples.iter().step_by(per_minute) {
        let p50 = Summary::of(&sample.lag_ms(), Better::Lower).map_or(f64::NAN, |s| s.median);
        let cells = [
            format!("{:.0}", sample.elapsed_s / 60.0),
            Unit::Ms.format(p50),
            Unit::Ms.format(sample.p99()),
            Unit::MiB.format(sample.up_rss_mib),
            Unit::MiB.format(sample.nats_rss_mib),
            Unit::MiB.format(sample.db_mib),
            sample.run_rows.to_string(),
            sample.instance_rows.to_string(),
        ];
        if markdown {
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        } else {
            out.push_str(&cells.join("\t"));
            out.push('\n');
        }
    }
    if markdown {
        out.push_str(
            "\nminute: since the first due second. first task: due second → first task started, \
             of the runs due in the window sampled then. RSS: resident memory. database: \
             its pages (SQLite; free pages included) or `pg_database_size`. kept: rows \
             in `dag_run` and `task_instance`.\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(elapsed_s: f64, up_rss_mib: f64) -> Sample {
        Sample {
            elapsed_s,
            up_rss_mib,
            nats_rss_mib: 1.0,
            db_mib: 1.0,
            run_rows: 0,
            instance_rows: 0,
            lags: vec![Lag {
                due: DateTime::UNIX_EPOCH,
                ms: 10.0,
            }],
        }
    }

    #[test]
    fn cleanups_are_read_from_the_log_and_overlap_the_waits_they_touch() {
        let log = "2026-12-07T05:11:21.500000Z  INFO history past its retention removed removed=Removed { runs: 9000 } took_ms=6500\n\
                   2026-12-07T05:11:22.000000Z  WARN something else took_ms=1\n";
        let found = cleanups(log);
        let at = |text: &str| {
            DateTime::parse_from_rfc3339(text)
                .expect("a time")
                .with_timezone(&Utc)
        };
        assert_eq!(
            found,
            [Cleanup {
                start: at("2026-12-07T05:11:15Z"),
                end: at("2026-12-07T05:11:21.5Z"),
            }]
        );
        let lag = |due: &str, ms: f64| Lag { due: at(due), ms };
        assert!(found[0].overlaps(&lag("2026-12-07T05:11:10Z", 6000.0)));
        assert!(found[0].overlaps(&lag("2026-12-07T05:11:21Z", 100.0)));
        assert!(!found[0].overlaps(&lag("2026-12-07T05:11:10Z", 4000.0)));
        assert!(!found[0].overlaps(&lag("2026-12-07T05:11:22Z", 100.0)));
    }

    #[test]
    fn quarters_split_the_samples_by_time() {
        let samples: Vec<Sample> = (0..8).map(|i| sample(f64::from(i), f64::from(i))).collect();
        let rss = |part: &[Sample]| part.iter().map(|s| s.up_rss_mib).collect::<Vec<_>>();
        assert_eq!(rss(quarter(&samples, 1)), [2.0, 3.0]);
        assert_eq!(rss(quarter(&samples, 3)), [6.0, 7.0]);
        assert_eq!(median(quarter(&samples, 3), |s| s.up_rss_mib), 6.5);
    }

    #[test]
    fn soak_dags_fire_every_second() {
        let file = datajump_shared::dag_file::DagFile::parse(&dag(3)).expect("valid");
        assert_eq!(file.name, "soak_00003");
        assert!(dag(3).contains("cron: \"* * * * * ?\""));
    }
}
