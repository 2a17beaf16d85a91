//! `datajump down` and `datajump reset`: stopping what `up` started, and
//! dropping an installation to start over.
//!
//! `up` writes its process id to `up.pid` in the data folder while it
//! runs ([`PidFile`]); `down` signals that process (SIGTERM, the graceful
//! shutdown every role has) and waits for it to go. A pid file whose
//! process is gone, or is not a `datajump` any more, is stale and removed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use datajump_migrations::{Migrator, MigratorTrait};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::Global;
use crate::commands::roles::{IfMissing, open_database};
use crate::output::out;

/// How long `down` waits for `up` to stop.
const STOP_WAIT: Duration = Duration::from_secs(60);

/// The file naming the running `up`, removed when it stops.
pub struct PidFile {
    path: PathBuf,
}

impl PidFile {
    fn path_in(data_dir: &Path) -> PathBuf {
        data_dir.join("up.pid")
    }

    /// Records this process as the data folder's running `up`; refuses
    /// when another one is running on the same folder.
    pub fn create(data_dir: &Path) -> Result<PidFile> {
        let path = PidFile::path_in(data_dir);
        if let Some(pid) = running_up(data_dir) {
            bail!(
                "`datajump up` is already running on {} (pid {pid}): stop it with `datajump down`",
                data_dir.display()
            );
        }
        std::fs::write(&path, format!("{}\n", std::process::id()))
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(PidFile { path })
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The pid of the `up` running on `data_dir`, if one is; a stale pid file
/// is removed.
fn running_up(data_dir: &Path) -> Option<i32> {
    let path = PidFile::path_in(data_dir);
    let pid: i32 = std::fs::read_to_string(&path).ok()?.trim().parse().ok()?;
    let alive = is_running(pid);
    // A reused pid is some other program: only a datajump counts.
    let is_datajump = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|cmdline| String::from_utf8_lossy(&cmdline).contains("datajump"))
        .unwrap_or(false);
    if alive && is_datajump {
        Some(pid)
    } else {
        let _ = std::fs::remove_file(&path);
        None
    }
}

/// Whether process `pid` is running: it exists and has not exited (a
/// zombie, which only waits for its parent to collect it, has).
fn is_running(pid: i32) -> bool {
    if kill(Pid::from_raw(pid), None).is_err() {
        return false;
    }
    // `/proc/PID/stat` is `PID (COMMAND) STATE …`; the command may hold
    // spaces and parentheses, so the state follows the last `)`.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after = stat.rsplit_once(')')?.1;
            after.split_whitespace().next().map(|state| state != "Z")
        })
        .unwrap_or(true)
}

/// Runs `down`.
pub async fn down(global: &Global) -> Result<ExitCode> {
    let Some(pid) = running_up(&global.data_dir) else {
        out!(
            "no `datajump up` is running on {} (nothing to stop)",
            global.data_dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    };
    kill(Pid::from_raw(pid), Signal::SIGTERM)
        .with_context(|| format!("cannot signal `datajump up` (pid {pid})"))?;
    out!("stopping `datajump up` (pid {pid}): running tasks get its drain timeout to finish");
    let deadline = tokio::time::Instant::now() + STOP_WAIT;
    while is_running(pid) {
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "`datajump up` (pid {pid}) is still running after {}s",
                STOP_WAIT.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    out!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `reset`.
#[derive(Args)]
pub struct ResetArgs {
    /// Drop everything without asking (needed off a terminal).
    #[arg(long, short = 'y')]
    yes: bool,
}

/// Runs `reset`: the database's tables (or SQLite file) and DataJump's
/// streams and buckets go; the secret key and the DAG files stay.
pub async fn reset(global: &Global, args: ResetArgs) -> Result<ExitCode> {
    if let Some(pid) = running_up(&global.data_dir) {
        bail!("`datajump up` is running (pid {pid}): stop it first with `datajump down`");
    }
    let url = global.database_url()?;
    let started_nats = global.data_dir.join("nats");
    let question = format!(
        "drop every DAG, run, log, secret and token in {url}, and DataJump's streams and \
         buckets on {}? This cannot be undone. [y/N] ",
        global.nats_url
    );
    if !args.yes && !crate::commands::confirmed(&question)? {
        eprintln!("nothing dropped");
        return Ok(ExitCode::FAILURE);
    }
    match tokio::time::timeout(
        Duration::from_secs(5),
        datajump_nats::connect_with(&global.nats_url, "datajump-reset", &global.nats_auth()),
    )
    .await
    {
        Ok(Ok(client)) => {
            let js = async_nats::jetstream::new(client);
            for name in datajump_nats::remove_topology(&js, &global.nats_prefix).await? {
                out!("dropped {name}");
            }
        }
        _ if started_nats.exists() => {
            // The nats-server `up` started is stopped with it; its storage
            // is this folder.
            std::fs::remove_dir_all(&started_nats)
                .with_context(|| format!("cannot remove {}", started_nats.display()))?;
            out!("dropped the NATS storage {}", started_nats.display());
        }
        _ => eprintln!(
            "warning: NATS at {} does not answer: its streams are left as they are",
            global.nats_url
        ),
    }
    match url.sqlite_file() {
        Some(file) => {
            for suffix in ["", "-wal", "-shm"] {
                let path = PathBuf::from(format!("{}{suffix}", file.display()));
                if path.exists() {
                    std::fs::remove_file(&path)
                        .with_context(|| format!("cannot remove {}", path.display()))?;
                }
            }
            out!("dropped the database {}", file.display());
        }
        None => {
            let (db, _) = open_database(global, IfMissing::Refuse).await?;
            Migrator::reset(&db)
                .await
                .with_context(|| format!("cannot drop the tables of {url}"))?;
            out!("dropped every table of {url}");
        }
    }
    out!("reset: `datajump up` starts afresh (a new installation identity)");
    Ok(ExitCode::SUCCESS)
}
