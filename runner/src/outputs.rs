//! The file a task may write `name=value` outputs to (`$DJ_OUTPUT`), and
//! how the runner reads it back without trusting it.

use datajump_shared::outputs;

use crate::executor::LogSink;

/// The file a task may write `name=value` outputs to (`$DJ_OUTPUT`). It is
/// not created for the task: most tasks write none, and a file created and
/// removed per attempt costs every task. Read back only if it is a regular
/// file of one link owned by the task's user, opened without following a
/// symbolic link: otherwise a task could have the runner read, and store
/// as outputs, a file only the runner may read. It is opened without
/// blocking and read off the async runtime: a task that leaves a FIFO
/// there must not freeze the runner (docs/SECURITY.md, "Task processes").
pub(crate) struct OutputFile(std::path::PathBuf);

/// The most bytes of a `$DJ_OUTPUT` file read.
const MAX_OUTPUT_FILE_BYTES: u64 = 256 * 1024;

impl OutputFile {
    pub(crate) fn for_execution(execution_id: i64) -> OutputFile {
        OutputFile(std::env::temp_dir().join(format!(
            "{}output-{execution_id}-{:016x}",
            crate::leftovers::prefix(),
            rand::random::<u64>()
        )))
    }

    pub(crate) fn path_text(&self) -> String {
        self.0.to_string_lossy().into_owned()
    }

    /// Declares the outputs the task wrote, then removes the file, on a
    /// blocking thread. `uid`: the task user's, `None` when tasks run as
    /// the runner's own.
    pub(crate) async fn collect(self, log: &LogSink, uid: Option<u32>) {
        // Most tasks write no outputs: a stat, which opens nothing and so
        // cannot block on what the task left, spares them the thread hop.
        if let Err(e) = std::fs::symlink_metadata(&self.0)
            && e.kind() == std::io::ErrorKind::NotFound
        {
            return;
        }
        let log = log.clone();
        let read = tokio::task::spawn_blocking(move || self.collect_blocking(&log, uid));
        if let Err(e) = read.await {
            tracing::warn!(error = %e, "reading the task's output file failed");
        }
    }

    fn collect_blocking(self, log: &LogSink, uid: Option<u32>) {
        use std::io::Read;
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags((nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK).bits())
            .open(&self.0);
        let mut file = match opened {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                log.line(&format!("[datajump] ${}: not read: {e}", outputs::FILE_ENV));
                let _ = std::fs::remove_file(&self.0);
                return;
            }
        };
        let owner = uid.unwrap_or_else(|| nix::unistd::geteuid().as_raw());
        let trusted = file
            .metadata()
            .is_ok_and(|m| m.is_file() && m.nlink() == 1 && m.uid() == owner);
        let mut text = Vec::new();
        if trusted {
            let _ = file
                .by_ref()
                .take(MAX_OUTPUT_FILE_BYTES)
                .read_to_end(&mut text);
        } else {
            log.line(&format!(
                "[datajump] ${}: not read: not a regular file of the task's own",
                outputs::FILE_ENV
            ));
        }
        let _ = std::fs::remove_file(&self.0);
        for line in String::from_utf8_lossy(&text)
            .lines()
            .filter(|l| !l.trim().is_empty())
        {
            log.output(line);
        }
    }
}
