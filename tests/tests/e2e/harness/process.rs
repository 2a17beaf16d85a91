//! Roles as real `datajump` processes (the CLI built as
//! `datajump-under-test`, see `tests/src/bin`), for tests that kill them with
//! SIGKILL, and what such tests watch: a runner's heartbeat, a process (group)
//! in `/proc`, a file the tasks append to.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::TestEnv;

/// The real `datajump` CLI.
pub const DATAJUMP: &str = env!("CARGO_BIN_EXE_datajump-under-test");
/// Role log filter: the roles' info lines (one per transition), not the libraries'.
const ROLE_LOG: &str = "info,sqlx=warn,async_nats=warn,sea_orm=warn";

/// A role running as its own `datajump` process. Killed (SIGKILL) on drop;
/// stdout and stderr go to `<name>.log` in the test's scratch directory,
/// whose end is printed if the test is failing.
pub struct Process {
    name: String,
    child: Child,
    log: PathBuf,
    exit: Option<ExitStatus>,
}

impl Process {
    /// Starts `datajump <args>` against the test's database and NATS server,
    /// with `extra_env` added to its environment.
    pub fn start(env: &TestEnv, name: &str, args: &[&str], extra_env: &[(&str, &str)]) -> Process {
        let log = env.path(&format!("{name}.log"));
        let out = std::fs::File::create(&log).expect("process log file");
        let err = out.try_clone().expect("process log file");
        let child = Command::new(DATAJUMP)
            .args(args)
            .env("DATAJUMP_DATABASE_URL", &env.db_url)
            .env("DATAJUMP_NATS_URL", env.nats_url())
            .env("DATAJUMP_DATA_DIR", env.path("data"))
            .env("DATAJUMP_LOG", ROLE_LOG)
            .env("NO_COLOR", "1")
            .env_remove("DATAJUMP_FAULT_EXIT_AFTER_COMMIT")
            .envs(extra_env.iter().copied())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {DATAJUMP}: {e}"));
        Process {
            name: name.to_owned(),
            child,
            log,
            exit: None,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `kill -9`, then reaps the process.
    pub fn kill9(&mut self) {
        if self.exit.is_none() {
            let _ = self.child.kill();
            self.exit = self.child.wait().ok();
        }
    }

    /// Sends SIGTERM: a role stops gracefully (a runner drains).
    pub fn terminate(&self) {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.pid()).expect("pid"));
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    }

    /// The exit status, once the process has exited.
    fn exited(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none() {
            self.exit = self.child.try_wait().ok().flatten();
        }
        self.exit
    }

    /// Waits up to `timeout` for the process to exit on its own.
    pub async fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.exited() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "{} still running after {timeout:?}",
                self.name
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Panics (with the log) if the process has exited.
    pub fn assert_running(&mut self) {
        if let Some(status) = self.exited() {
            panic!(
                "{} exited with {status}; its log:\n{}",
                self.name,
                self.log_text()
            );
        }
    }

    /// Its output so far, without terminal colour codes.
    pub fn log_text(&self) -> String {
        strip_ansi(&std::fs::read_to_string(&self.log).unwrap_or_default())
    }

    /// Waits until a line of its output contains `needle`.
    pub async fn wait_log(&mut self, needle: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.log_text().contains(needle) {
            self.assert_running();
            assert!(
                Instant::now() < deadline,
                "{} did not log {needle:?} within {timeout:?}:\n{}",
                self.name,
                self.log_text()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill9();
        if std::thread::panicking() {
            let text = self.log_text();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(300)..];
            eprintln!(
                "----- {} ({}, last {} lines) -----\n{}",
                self.name,
                self.log.display(),
                tail.len(),
                tail.join("\n")
            );
        }
    }
}

/// Removes ANSI escape sequences (`ESC [ … letter`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Runs the real `datajump` CLI with `args` on the test's database, NATS and
/// a data folder of its own, with `extra_env` and none of the caller's
/// token or secret-key settings; returns (success, stdout, stderr).
pub async fn run_cli(
    env: &TestEnv,
    args: &[&str],
    extra_env: &[(&str, &str)],
) -> (bool, String, String) {
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(DATAJUMP)
            .args(args)
            .env("DATAJUMP_DATABASE_URL", &env.db_url)
            .env("DATAJUMP_NATS_URL", env.nats_url())
            .env("DATAJUMP_DATA_DIR", env.path("data"))
            .env("DATAJUMP_LOG", "warn")
            .env_remove("DATAJUMP_API_TOKEN")
            .env_remove("DATAJUMP_SECRET_KEY")
            .env_remove("DATAJUMP_SECRET_KEY_FILE")
            .envs(extra_env.iter().copied())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap_or_else(|_| panic!("datajump {args:?} did not finish in time"))
    .expect("run datajump");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Starts a resolver process and waits until it consumes.
pub async fn start_resolver(env: &TestEnv, name: &str) -> Process {
    start_resolver_with(env, name, &[]).await
}

/// [`start_resolver`] with `extra_env` (such as `DATAJUMP_METRICS_ADDR`).
pub async fn start_resolver_with(env: &TestEnv, name: &str, extra_env: &[(&str, &str)]) -> Process {
    let mut resolver = Process::start(env, name, &["resolver", "--concurrency", "8"], extra_env);
    resolver
        .wait_log("resolver started", Duration::from_secs(60))
        .await;
    resolver
}

/// Starts a ticker process and waits until it has loaded the schedules.
pub async fn start_ticker(env: &TestEnv, name: &str) -> Process {
    start_ticker_with(env, name, &[]).await
}

/// [`start_ticker`] with `extra_env` (such as `DATAJUMP_METRICS_ADDR`).
pub async fn start_ticker_with(env: &TestEnv, name: &str, extra_env: &[(&str, &str)]) -> Process {
    let mut ticker = Process::start(env, name, &["ticker", "--retention-days", "0"], extra_env);
    ticker
        .wait_log("schedules loaded", Duration::from_secs(60))
        .await;
    ticker
}

/// Starts a runner process with `slots` slots on the default queue and waits
/// until its heartbeat is in `dj_runners`.
pub async fn start_runner(
    env: &TestEnv,
    name: &str,
    slots: usize,
    extra_env: &[(&str, &str)],
) -> Process {
    let slots = slots.to_string();
    let mut runner = Process::start(
        env,
        name,
        &["runner", "--slots", &slots, "--drain-timeout", "5"],
        extra_env,
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while runner_key(env, runner.pid()).await.is_none() {
        runner.assert_running();
        assert!(
            Instant::now() < deadline,
            "{name} wrote no heartbeat within 60 s:\n{}",
            runner.log_text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    runner
}

/// The `dj_runners` key (the runner id, `host-<pid>-xxxx`) of the runner
/// process `pid`, while its heartbeat is there.
pub async fn runner_key(env: &TestEnv, pid: u32) -> Option<String> {
    let kv = datajump_nats::key_value(env.bus.js(), "dj_runners")
        .await
        .ok()?;
    let mut keys = kv.keys().await.ok()?;
    let marker = format!("-{pid}-");
    while let Some(key) = keys.next().await {
        if let Ok(key) = key
            && key.contains(&marker)
        {
            return Some(key);
        }
    }
    None
}

/// True if runner id `worker` belongs to the runner process `pid`.
pub fn is_worker_of(worker: &str, pid: u32) -> bool {
    worker.contains(&format!("-{pid}-"))
}

/// Waits until `pid` is gone (or a zombie, which runs nothing).
pub async fn wait_process_gone(pid: u32, what: &str, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                let after_name = stat.rsplit_once(')')?.1;
                after_name.split_whitespace().next().map(str::to_owned)
            });
        match state.as_deref() {
            None | Some("Z") => return,
            Some(state) => assert!(
                Instant::now() < deadline,
                "{what} (pid {pid}) still alive (state {state}) after {timeout:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Pids of live (non-zombie) processes in process group `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after "(comm)": state ppid pgrp …
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string() {
            members.push(pid);
        }
    }
    members
}

/// Waits until the file `path` has at least `lines` lines; returns them.
pub async fn wait_file_lines(path: &Path, lines: usize, timeout: Duration) -> Vec<String> {
    let deadline = Instant::now() + timeout;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let found: Vec<String> = text.lines().map(str::to_owned).collect();
        if found.len() >= lines {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "{} has {} of {lines} lines after {timeout:?}",
            path.display(),
            found.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
