//! SHELL: a script run by bash from a temporary file, in its own process group.

use std::process::Stdio;

use futures::future::BoxFuture;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use super::{ExecContext, ExecOutcome, Executor, LogSink};

/// Runs `content.command` or `content.script` with `bash`.
pub struct Shell;

impl Executor for Shell {
    fn execute<'a>(
        &'a self,
        ctx: &'a ExecContext,
        log: &'a mut LogSink,
    ) -> BoxFuture<'a, ExecOutcome> {
        Box::pin(run_script(ctx, log))
    }
}

fn failed(message: String) -> ExecOutcome {
    ExecOutcome::Failed {
        exit_code: None,
        message,
    }
}

async fn run_script(ctx: &ExecContext, log: &mut LogSink) -> ExecOutcome {
    let Some(body) = ctx.content["command"]
        .as_str()
        .or_else(|| ctx.content["script"].as_str())
    else {
        return failed("SHELL task has neither 'command' nor 'script'".to_owned());
    };
    // The temporary file is removed when `script` drops, whatever happens.
    let script = match write_script(body) {
        Ok(script) => script,
        Err(e) => return failed(format!("cannot write the script file: {e}")),
    };
    let (reader, writer) = match std::io::pipe() {
        Ok(pair) => pair,
        Err(e) => return failed(format!("cannot create a pipe: {e}")),
    };
    let stderr = match writer.try_clone() {
        Ok(w) => w,
        Err(e) => return failed(format!("cannot create a pipe: {e}")),
    };
    let mut command = Command::new("bash");
    command
        .arg(script.path())
        .envs(&ctx.env)
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(stderr))
        .process_group(0)
        .kill_on_drop(true);
    // SAFETY: the closure runs in the forked child before exec and only calls
    // prctl, which is async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)
        });
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return failed(format!("cannot start bash: {e}")),
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
    };

    let receiver = match tokio::net::unix::pipe::Receiver::from_owned_fd(reader.into()) {
        Ok(r) => r,
        Err(e) => {
            kill_group();
            return failed(format!("cannot read the script's output: {e}"));
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
    let outcome = loop {
        tokio::select! {
            line = lines.next_line(), if output_open => match line {
                Ok(Some(line)) => log.line(&line),
                Ok(None) | Err(_) => output_open = false,
            },
            exit = child.wait(), if status.is_none() => {
                // Background children of the script die with it.
                kill_group();
                status = Some(exit);
            },
            () = &mut timeout, if status.is_none() => {
                kill_group();
                let _ = child.wait().await;
                break ExecOutcome::TimedOut;
            },
            () = ctx.cancel.cancelled(), if status.is_none() => {
                kill_group();
                let _ = child.wait().await;
                break ExecOutcome::Cancelled;
            },
        }
        if !output_open && let Some(exit) = &status {
            break match exit {
                Ok(exit) if exit.success() => ExecOutcome::Success,
                Ok(exit) => ExecOutcome::Failed {
                    exit_code: exit.code(),
                    message: match exit.code() {
                        Some(code) => format!("exit code {code}"),
                        None => "killed by a signal".to_owned(),
                    },
                },
                Err(e) => failed(format!("cannot wait for bash: {e}")),
            };
        }
    };
    // Drain what was written before the kill.
    while let Ok(Some(line)) = lines.next_line().await {
        log.line(&line);
    }
    outcome
}

fn write_script(body: &str) -> std::io::Result<tempfile::NamedTempFile> {
    use std::io::Write;
    let mut file = tempfile::Builder::new()
        .prefix("datajump-")
        .suffix(".sh")
        .tempfile()?;
    file.write_all(body.as_bytes())?;
    if !body.ends_with('\n') {
        file.write_all(b"\n")?;
    }
    file.flush()?;
    Ok(file)
}
