//! Running a program, the way every process-based executor does (a script
//! file with its interpreter, or an argument list such as `spark-submit`'s):
//! its own process group (so a timeout or kill takes
//! background children too) and, where the runner may create one, its own
//! control group (so they also take what left the process group: see
//! [`super::cgroup`]), stdout and stderr through one pipe so their order
//! is kept, and nothing left behind if the runner dies.
//!
//! A parent-death signal reaches only the direct child, not what the script
//! starts in the background, so the direct child is a small guard: it gets
//! SIGTERM when the runner dies (even by `kill -9`) and answers by killing
//! its whole process group. The guard is POSIX `sh`, not bash: it is started
//! for every task, and dash (Debian's `sh`) starts in a third of bash's
//! time — 200 guarded `true` scripts took 0.54 s under `sh`, 0.80 s under
//! bash.
//!
//! The environment is built, never inherited whole: see [`super::task_process`].
//!
//! The parent-death signal is set by util-linux `setpriv --pdeathsig`, which
//! then executes the guard, rather than by a `pre_exec` hook: any hook makes
//! the standard library fork, and forking copies the runner's page tables —
//! a third of all CPU in a 3,000-task SHELL bench, growing with the
//! process's memory. Without one it uses `posix_spawn`, which shares them.

use datajump_shared::problem::Reason;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use super::cgroup::{AttemptCgroup, Cgroups};
use super::task_process::TaskProcess;
use super::{ExecContext, ExecOutcome, LogSink};

fn failed(message: String) -> ExecOutcome {
    ExecOutcome::Failed {
        exit_code: None,
        reason: Reason::Said(message),
    }
}

/// The guard between the runner and the program: `$0` is a file of ours
/// to remove (or empty), `$1` the attempt's `cgroup.procs` to join before
/// anything starts (or empty), the rest the program and its arguments. On
/// SIGTERM (the runner died) it removes the file and the attempt's
/// `$DJ_OUTPUT_JSON` folder (the runner's, set in the guard's environment
/// by the runner alone), which the runner can no longer remove, and kills
/// its process group. It exits 125 without starting anything when it
/// cannot join the group.
const GUARD: &str = r#"trap '[ -z "$0" ] || rm -f -- "$0"; [ -z "$DJ_OUTPUT_JSON" ] || rm -rf -- "$DJ_OUTPUT_JSON"; kill -KILL 0' TERM; [ -z "$1" ] || { echo $$ > "$1"; } 2>/dev/null || { echo "[datajump] cannot join the attempt's control group $1" >&2; exit 125; }; shift; "$@" & wait $!; exit $?"#;

/// How long the output is read after the task's process has exited and
/// its process and control groups were killed: without a control group, a
/// process that left the process group (`setsid`, a daemon) and still holds
/// the output does not keep the task RUNNING.
const OUTPUT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// What [`run`] starts.
pub struct Program<'a> {
    /// The executable: a path, or a name looked up on the task's `PATH`.
    pub executable: &'a Path,
    /// Its arguments, one each: no shell splits or expands them.
    pub args: &'a [OsString],
    /// A temporary file of ours the program reads (a script): handed to
    /// the task user, and removed by the guard if the runner dies.
    pub owned_file: Option<&'a Path>,
    /// Variables set over the attempt's environment.
    pub env: &'a [(&'a str, &'a str)],
}

/// Writes `body` to a temporary file with `suffix`; it is removed on drop.
pub fn script_file(body: &str, suffix: &str) -> std::io::Result<tempfile::NamedTempFile> {
    use std::io::Write;
    let mut file = tempfile::Builder::new()
        .prefix(&crate::leftovers::prefix())
        .suffix(suffix)
        .tempfile()?;
    file.write_all(body.as_bytes())?;
    if !body.ends_with('\n') {
        file.write_all(b"\n")?;
    }
    file.flush()?;
    Ok(file)
}

/// Runs `interpreter script` until it exits, times out or is cancelled.
pub async fn run_script(
    interpreter: &Path,
    script: &Path,
    env: &[(&str, &str)],
    ctx: &ExecContext,
    log: &LogSink,
) -> ExecOutcome {
    let args = [script.as_os_str().to_owned()];
    let program = Program {
        executable: interpreter,
        args: &args,
        owned_file: Some(script),
        env,
    };
    run(program, ctx, log, &mut |_| {}).await
}

/// The first file named one of `names` in the directories of `path` (a
/// `PATH` value), every directory searched for the first name before any
/// is searched for the next.
pub fn on_path(path: &OsStr, names: &[&str]) -> Option<PathBuf> {
    names.iter().find_map(|name| {
        std::env::split_paths(path)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    })
}

/// The value of `name` in a task process's environment: the attempt's own
/// variables over what it inherits from the runner.
pub fn task_var(ctx: &ExecContext, name: &str) -> Option<OsString> {
    ctx.env.get(name).map(OsString::from).or_else(|| {
        ctx.process
            .inherited()
            .find(|(inherited, _)| *inherited == name)
            .map(|(_, value)| value.clone())
    })
}

/// The `PATH` a task process gets.
pub fn task_path(ctx: &ExecContext) -> OsString {
    task_var(ctx, "PATH").unwrap_or_default()
}

/// Makes `file` the task user's, where tasks run as one: a script file
/// is created readable by the runner's user alone.
fn hand_to_task_user(process: &TaskProcess, file: &Path) -> nix::Result<()> {
    match process.user() {
        Some(user) => nix::unistd::chown(
            file,
            Some(nix::unistd::Uid::from_raw(user.uid())),
            Some(nix::unistd::Gid::from_raw(user.gid())),
        ),
        None => Ok(()),
    }
}

/// The command every task process starts through: `setpriv` (the
/// parent-death signal, and the task user) → the guard (joining `cgroup`)
/// → the program, in a process group of its own, with the inherited
/// environment only; the caller adds the attempt's variables and output.
fn guarded_command(
    process: &TaskProcess,
    cgroup: Option<&AttemptCgroup<'_>>,
    program: &Program<'_>,
) -> Command {
    let mut command = Command::new(process.setpriv());
    match cgroup {
        // The guard joins the group as the runner's user (only it may move
        // a process there), then starts the program as the task user.
        Some(group) => {
            command
                .args(["--pdeathsig", "TERM", "--", "sh", "-c", GUARD])
                .arg(program.owned_file.unwrap_or(Path::new("")))
                .arg(group.procs_file());
            if process.user().is_some() {
                command
                    .arg(process.setpriv())
                    .args(process.setpriv_args())
                    .arg("--");
            }
        }
        None => {
            command
                .args(process.setpriv_args())
                .args(["--pdeathsig", "TERM", "--", "sh", "-c", GUARD])
                .arg(program.owned_file.unwrap_or(Path::new("")))
                .arg("");
        }
    }
    command
        .arg(program.executable)
        .args(program.args)
        .env_clear()
        .envs(process.inherited())
        .stdin(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    command
}

/// Runs a script of `body` with `bash` the way a SHELL task's process
/// runs — the same file, guard, process group and (where `cgroups` is
/// given) control group — and reads its output to the end, without
/// anything else an attempt has (claim, log, lease, timeout, records):
/// the spawn floor `datajump-bench` compares SHELL throughput with.
///
/// # Errors
///
/// The file, pipe, group or process cannot be made, or not waited for.
pub async fn run_bare_script(
    process: &TaskProcess,
    cgroups: Option<&Cgroups>,
    body: &str,
) -> std::io::Result<std::process::ExitStatus> {
    use tokio::io::AsyncReadExt;
    let script = script_file(body, ".sh")?;
    hand_to_task_user(process, script.path())?;
    let cgroup = cgroups.map(Cgroups::attempt).transpose()?;
    let args = [script.path().as_os_str().to_owned()];
    let program = Program {
        executable: Path::new("bash"),
        args: &args,
        owned_file: Some(script.path()),
        env: &[],
    };
    let (reader, writer) = std::io::pipe()?;
    let stderr = writer.try_clone()?;
    let mut command = guarded_command(process, cgroup.as_ref(), &program);
    command
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(stderr));
    let mut child = command.spawn()?;
    drop(command);
    let group = child.id().and_then(|id| i32::try_from(id).ok());
    let mut output = Vec::new();
    tokio::net::unix::pipe::Receiver::from_owned_fd(reader.into())?
        .read_to_end(&mut output)
        .await?;
    let status = child.wait().await?;
    if let Some(group) = group {
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    }
    Ok(status)
}

/// Runs `program` until it exits, times out or is cancelled, handing each
/// output line to `watch` as well as to the log.
pub async fn run(
    program: Program<'_>,
    ctx: &ExecContext,
    log: &LogSink,
    watch: &mut (dyn FnMut(&str) + Send),
) -> ExecOutcome {
    let (reader, writer) = match std::io::pipe() {
        Ok(pair) => pair,
        Err(e) => return failed(format!("cannot create a pipe: {e}")),
    };
    let stderr = match writer.try_clone() {
        Ok(w) => w,
        Err(e) => return failed(format!("cannot create a pipe: {e}")),
    };
    if let Some(file) = program.owned_file
        && let Err(e) = hand_to_task_user(&ctx.process, file)
    {
        return failed(format!("cannot hand the script file to the task user: {e}"));
    }
    let cgroup = match ctx.cgroups.as_deref().map(super::Cgroups::attempt) {
        None => None,
        Some(Ok(group)) => Some(group),
        Some(Err(e)) => return failed(format!("cannot create the attempt's control group: {e}")),
    };
    let mut command = guarded_command(&ctx.process, cgroup.as_ref(), &program);
    command
        .envs(&ctx.env)
        .envs(program.env.iter().copied())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(stderr));
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            return failed(format!(
                "cannot start {} (through setpriv and sh): {e}",
                program.executable.display()
            ));
        }
    };
    // Our copies of the pipe's write end live in `command`; drop them so the
    // reader sees end-of-file once the process group is gone.
    drop(command);
    let group = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    let kill_group = || {
        if let Some(group) = group {
            let _ = killpg(group, Signal::SIGKILL);
        }
        if let Some(cgroup) = &cgroup {
            cgroup.kill();
        }
    };
    let _fenced_with_the_lease = group.map(|group| {
        ctx.lease.register(
            group,
            cgroup.as_ref().map(super::cgroup::AttemptCgroup::kill_file),
        )
    });

    let receiver = match tokio::net::unix::pipe::Receiver::from_owned_fd(reader.into()) {
        Ok(r) => r,
        Err(e) => {
            kill_group();
            return failed(format!("cannot read the process output: {e}"));
        }
    };
    let mut lines = BufReader::new(receiver).lines();
    let deadline = (!ctx.timeout.is_zero()).then(|| tokio::time::Instant::now() + ctx.timeout);
    let timeout = async {
        match deadline {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(timeout);

    let mut status = None;
    let mut output_open = true;
    let mut output_held = false;
    // Armed when the process exits: the output gets OUTPUT_GRACE to end.
    let grace = tokio::time::sleep(std::time::Duration::MAX);
    tokio::pin!(grace);
    let outcome = loop {
        tokio::select! {
            line = lines.next_line(), if output_open => match line {
                Ok(Some(line)) => {
                    watch(&line);
                    log.line(&line);
                }
                Ok(None) | Err(_) => output_open = false,
            },
            exit = child.wait(), if status.is_none() => {
                // Background children of the script die with it.
                kill_group();
                status = Some(exit);
                grace.as_mut().reset(tokio::time::Instant::now() + OUTPUT_GRACE);
            },
            () = &mut grace, if status.is_some() && output_open => {
                log.line(&format!(
                    "[datajump] the task's process exited, but a process that left its process \
                     group (setsid, a daemon) still holds its output: stopped reading after {}s",
                    OUTPUT_GRACE.as_secs()
                ));
                output_open = false;
                output_held = true;
            },
            () = &mut timeout, if status.is_none() => {
                kill_group();
                let _ = child.wait().await;
                log.line(&format!("[datajump] timed out after {}s: process group killed", ctx.timeout.as_secs()));
                break ExecOutcome::TimedOut;
            },
            () = ctx.cancel.cancelled(), if status.is_none() => {
                kill_group();
                let _ = child.wait().await;
                log.line("[datajump] stopped: process group killed");
                break ExecOutcome::Cancelled;
            },
        }
        if !output_open && let Some(exit) = &status {
            break match exit {
                Ok(exit) if exit.code().is_none() && ctx.lease.fenced() => {
                    log.line(&format!(
                        "[datajump] killed: this runner renewed no heartbeat for {}s, so it \
                         stopped its tasks before another runner could take them over",
                        crate::lease::FENCE_AFTER.as_secs()
                    ));
                    ExecOutcome::Fenced
                }
                Ok(exit) if exit.success() => ExecOutcome::Success,
                Ok(exit) => ExecOutcome::Failed {
                    exit_code: exit.code(),
                    reason: match exit.code() {
                        Some(code) => Reason::ExitCode { code },
                        None => Reason::Signalled,
                    },
                },
                Err(e) => failed(format!("cannot wait for the process: {e}")),
            };
        }
    };
    // Keep what was written before the kill (unless something outside the
    // group still writes: that could go on for ever).
    while !output_held
        && let Ok(Ok(Some(line))) =
            tokio::time::timeout(std::time::Duration::from_millis(200), lines.next_line()).await
    {
        watch(&line);
        log.line(&line);
    }
    outcome
}
