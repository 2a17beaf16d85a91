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

/// The folder a SHELL or PYTHON task may write its one large output to,
/// as `$DJ_OUTPUT_JSON/<name>.json` (a JSON array a map's `over` reads:
/// docs/PARAMETERS.md, "Values between tasks"). Created per attempt,
/// mode 0700 and the task user's; read back under the rules of
/// [`OutputFile`] — only a regular file of one link owned by the task's
/// user, opened without following a link or blocking, at most
/// [`outputs::MAX_LARGE_BYTES`] — then removed with whatever is in it.
pub(crate) struct LargeOutputFolder(std::path::PathBuf);

impl LargeOutputFolder {
    /// Creates the folder of execution `execution_id`, handed to the task
    /// user `owner` (`(uid, gid)`) where tasks run as one.
    pub(crate) fn create(
        execution_id: i64,
        owner: Option<(u32, u32)>,
    ) -> std::io::Result<LargeOutputFolder> {
        use std::os::unix::fs::DirBuilderExt;
        let path = crate::leftovers::scratch_folder().join(format!(
            "{}output-json-{execution_id}-{:016x}",
            crate::leftovers::prefix(),
            rand::random::<u64>()
        ));
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        let folder = LargeOutputFolder(path);
        if let Some((uid, gid)) = owner {
            nix::unistd::chown(
                &folder.0,
                Some(nix::unistd::Uid::from_raw(uid)),
                Some(nix::unistd::Gid::from_raw(gid)),
            )?;
        }
        Ok(folder)
    }

    pub(crate) fn path_text(&self) -> String {
        self.0.to_string_lossy().into_owned()
    }

    /// The large output the task wrote, if it wrote one that keeps; the
    /// folder is removed either way. Read on a blocking thread.
    pub(crate) async fn collect(
        self,
        log: &LogSink,
        uid: Option<u32>,
    ) -> Option<outputs::LargeOutput> {
        // Most tasks write none: removing an empty folder opens nothing the
        // task made, and spares them the thread hop.
        if std::fs::remove_dir(&self.0).is_ok() {
            return None;
        }
        let log = log.clone();
        tokio::task::spawn_blocking(move || {
            let kept = self.read(&log, uid);
            let _ = std::fs::remove_dir_all(&self.0);
            kept
        })
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "reading the task's large output failed");
            None
        })
    }

    fn read(&self, log: &LogSink, uid: Option<u32>) -> Option<outputs::LargeOutput> {
        use std::io::Read;
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let env = outputs::LARGE_FOLDER_ENV;
        let mut written: Vec<std::path::PathBuf> = std::fs::read_dir(&self.0)
            .ok()?
            .flatten()
            .map(|entry| entry.path())
            .collect();
        let (json, other): (Vec<_>, Vec<_>) = written
            .drain(..)
            .partition(|path| path.extension().is_some_and(|ext| ext == "json"));
        for path in other {
            log.line(&format!(
                "[datajump] ${env}/{}: not read: a large output is <name>.json",
                file_name(&path)
            ));
        }
        let [path] = json.as_slice() else {
            if json.len() > 1 {
                log.line(&format!(
                    "[datajump] ${env}: not read: an attempt keeps one large output, and it wrote {}",
                    json.len()
                ));
            }
            return None;
        };
        let shown = file_name(path);
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags((nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK).bits())
            .open(path);
        let mut file = match opened {
            Ok(file) => file,
            Err(e) => {
                log.line(&format!("[datajump] ${env}/{shown}: not read: {e}"));
                return None;
            }
        };
        let owner = uid.unwrap_or_else(|| nix::unistd::geteuid().as_raw());
        if !file
            .metadata()
            .is_ok_and(|m| m.is_file() && m.nlink() == 1 && m.uid() == owner)
        {
            log.line(&format!(
                "[datajump] ${env}/{shown}: not read: not a regular file of the task's own"
            ));
            return None;
        }
        let mut bytes = Vec::new();
        let limit = u64::try_from(outputs::MAX_LARGE_BYTES).unwrap_or(u64::MAX) + 1;
        if let Err(e) = file.by_ref().take(limit).read_to_end(&mut bytes) {
            log.line(&format!("[datajump] ${env}/{shown}: not read: {e}"));
            return None;
        }
        let name = shown.strip_suffix(".json").unwrap_or(&shown);
        match outputs::LargeOutput::read(name, &bytes) {
            Ok(large) => Some(large),
            Err(e) => {
                log.line(&format!("[datajump] ${env}/{shown}: not kept: {e}"));
                None
            }
        }
    }
}

/// A path's file name as a log line shows it.
fn file_name(path: &std::path::Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}
